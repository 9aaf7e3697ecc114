"""torch.utils: data loading."""
from . import data  # noqa: F401
from . import benchmark  # noqa: F401
