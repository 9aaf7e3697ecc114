"""torch.nn (the training issue fills this in; functional holds the ops the seeds use)."""
from . import functional  # noqa: F401
