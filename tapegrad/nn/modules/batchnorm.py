"""torch.nn.modules.batchnorm: the path torch keeps its batch norms at (defined in normalization.py)."""
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm  # noqa: F401
from .normalization import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d  # noqa: F401
from .normalization import _BatchNorm, _NormBase  # noqa: F401  (torch's base classes live here too)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]
