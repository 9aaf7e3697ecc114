"""torch.nn.modules.batchnorm: the path torch keeps its batch norms at (defined in normalization.py)."""
from .normalization import BatchNorm1d, BatchNorm2d  # noqa: F401

__all__ = ["BatchNorm1d", "BatchNorm2d"]
