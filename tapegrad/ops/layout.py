"""roll, diag, tril_indices, triu_indices: data movement whose index map depends on shapes only."""
import numpy as np

from .. import _dtype, registry
from ..device import cpu_only as _check_device
from ..tensor import Tensor, _new
from ._common import OPS, _array_rule_dtype, _dim, _record, _tensor
from .shape import diagonal as _diagonal, _gather, _gather_forward, _index_map, _vjp_gather


def roll(input, shifts, dims=None):
    x = _tensor(input)
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    if dims is None:
        if not shifts:
            raise RuntimeError("`shifts` required")
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        flat = np.roll(np.arange(x.numel(), dtype=np.int64), int(shifts[0])).reshape(x.shape)
        return _gather(x, flat, OPS["roll"], np.roll(x._data.reshape(-1), int(shifts[0])).reshape(x.shape))
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    axes = tuple(_dim(d, x.ndim) for d in dims)
    shifts = tuple(int(s) for s in shifts)
    if x.ndim == 0:
        return _gather(x, np.zeros((), np.int64), OPS["roll"], x._data.copy())
    return _gather(x, np.roll(_index_map(x), shifts, axes), OPS["roll"], np.roll(x._data, shifts, axes))


def diag(input, diagonal=0):
    """A vector's diagonal matrix (offset `diagonal`), or a matrix's diagonal as a vector."""
    x = _tensor(input)
    k = int(diagonal)
    if x.ndim == 2:
        return _diagonal(x, k)
    if x.ndim != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")
    return _record(OPS["diag_embed"], np.diag(x._data, k), (x,), aux=k)


def _triangle_indices(lower, row, col, offset, dtype):
    name = "tril" if lower else "triu"
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    np_dtype = _dtype.to_numpy_dtype(dtype if dtype is not None else _dtype.int64)
    if np_dtype not in (np.int64, np.int32):
        raise RuntimeError(f"\"{name}_indices\" not implemented for '{_dtype.from_numpy_dtype(np_dtype).name}'")
    fn = np.tril_indices if lower else np.triu_indices
    r, c = fn(row, int(offset), col)
    return _new(np.stack([r, c]).astype(np_dtype).reshape(2, -1))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    _check_device(device, "tril_indices")
    return _triangle_indices(True, int(row), int(col), offset, dtype)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    _check_device(device, "triu_indices")
    return _triangle_indices(False, int(row), int(col), offset, dtype)


# == Declarations ===========================================================================================
def _vjp_diag_embed(ctx, g, inputs, out):
    return (g.diagonal(ctx),)          # ctx: the diagonal's offset


registry.structural("roll", registry.K_GATHER, "RollBackward0", _vjp_gather, forward=_gather_forward)
def _diag_embed_arrays(ctx, g, inputs, out, wanted):
    return (np.array(np.diagonal(g, ctx), order="C"),) if _array_rule_dtype(g) else None


registry.python("diag_embed", "DiagEmbedBackward0", lambda ctx, x: np.diag(x, ctx), _vjp_diag_embed,
                array_vjp=_diag_embed_arrays)


__all__ = ["roll", "diag", "tril_indices", "triu_indices"]


# Tensor's methods for this module's front-ends (grep `Tensor.<name> =`)
Tensor.roll = roll
Tensor.diag = diag
