"""torch.utils: data loading, benchmarking, activation checkpointing."""
from . import data  # noqa: F401
from . import benchmark  # noqa: F401
from . import checkpoint  # noqa: F401
