"""torch.functional: the functions torch defines in Python (`import torch.functional as F` in older tutorials);
the same objects as `tapegrad.X`. stft/istft and lu are not in tapegrad."""
from ._lowrank import pca_lowrank, svd_lowrank  # noqa: F401
from .ops.arrange import (atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, cdist,  # noqa: F401
                          chain_matmul, tensordot)
from .ops.comparison import unravel_index  # noqa: F401
from .ops.composite import broadcast_shapes, broadcast_tensors, meshgrid  # noqa: F401
from .ops.linalg import einsum, norm  # noqa: F401
from .ops.shape import split  # noqa: F401
from .ops.sort import unique, unique_consecutive  # noqa: F401

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
           "block_diag", "cdist", "chain_matmul", "einsum", "norm", "meshgrid", "pca_lowrank", "split", "svd_lowrank",
           "tensordot", "unique", "unique_consecutive", "unravel_index"]
