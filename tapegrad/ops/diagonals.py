"""Diagonals written into tensors: torch.diag_embed (composed of diagonal_scatter, so differentiable to any
order) and Tensor.fill_diagonal_ (an in-place masked fill)."""
import numpy as np

from .. import _dtype
from ..creation import zeros
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor, _new
from ._common import _dim, _tensor
from .scatter import diagonal_scatter

__all__ = ["diag_embed"]
INPLACE = ()


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """torch.diag_embed: input's last dimension written on the diagonal (offset) of the planes (dim1, dim2) of a
    zero tensor with one more dimension."""
    x = _tensor(input)
    nd = x._data.ndim + 1
    d1, d2 = _dim(dim1, nd), _dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x._data.shape[-1] + abs(offset)
    rest = list(x._data.shape[:-1])
    shape = []
    for k in range(nd):
        shape.append(n if k in (d1, d2) else rest.pop(0))
    base = zeros(*shape, dtype=x.dtype)
    return diagonal_scatter(base, x, offset, d1, d2)


def fill_diagonal_(self, fill_value, wrap=False):
    """Tensor.fill_diagonal_: the main diagonal (all indices equal) set to fill_value, in place; a tall matrix's
    diagonal restarts every ncols + 1 rows with wrap=True (numpy.fill_diagonal's rule, as torch's)."""
    nd = self._data.ndim
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and len(set(self._data.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self._is_leaf and self._requires_grad and is_grad_enabled():  # (torch fills a diagonal view of it)
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    mask = np.zeros(self._data.shape, np.bool_)
    np.fill_diagonal(mask, True, wrap=wrap)
    if not _dtype.is_float(self._data.dtype) and self._data.dtype != np.bool_:
        fill_value = int(fill_value)  # (torch converts the number to the tensor's integer type)
    return self.masked_fill_(_new(mask), fill_value)


Tensor.diag_embed = diag_embed
Tensor.fill_diagonal_ = fill_diagonal_
