"""roll, diag, tril_indices, triu_indices: data movement whose index map depends on shapes only; torch.fill,
constant_pad_nd, nonzero_static and resize_as_ (composed of other ops)."""
import numpy as np

from .. import _dtype, registry
from ..device import cpu_only as _check_device
from ..tensor import Tensor, _new
from ._common import OPS, _array_rule_dtype, _dim, _record, _tensor, _to_dtype
from .elementwise import _with_input, where
from .padding import pad as _pad
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
    if x.ndim == 0:  # (torch's error for a dim of a 0-d tensor)
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    axes = tuple(_dim(d, x.ndim) for d in dims)
    shifts = tuple(int(s) for s in shifts)
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


def fill(input, value):
    """torch.fill: a tensor of input's shape and dtype holding value (a number or a 0-d tensor, cast to input's
    dtype). Its gradient: zeros for input, the sum for a tensor value (torch's FillBackward0/1)."""
    x = _tensor(input)
    shape, dt = x._data.shape, x._data.dtype
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               f"dimensions.")
        v = value if value._data.dtype == dt else _to_dtype(value, dt)
        if v._requires_grad or x._requires_grad:
            return where(_new(np.ones(shape, np.bool_)), v, x)
        return _new(np.full(shape, v._data, dt))
    return _with_input(_new(np.full(shape, value, dt)), x)


def constant_pad_nd(input, pad, value=0):
    """torch.constant_pad_nd: F.pad's constant mode (torch's own messages for a bad pad)."""
    x = _tensor(input)
    pad = list(pad)
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) > 2 * x.ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. Pad "
                           f"length is {len(pad)}while the input has {x.ndim}dimensions.")
    return _pad(x, pad, "constant", value)


def nonzero_static(input, *, size, fill_value=-1):
    """torch.nonzero_static: nonzero's (n, ndim) int64 indices, cut to `size` rows or padded with fill_value."""
    x = _tensor(input)
    size = int(size)
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = np.argwhere(x._data.reshape(x._data.shape) if x.ndim else x._data.reshape(()))[:size].astype(np.int64)
    out = np.full((size, x.ndim), fill_value, np.int64)
    out[:found.shape[0]] = found.reshape(found.shape[0], x.ndim)
    return _new(out)


def hash_tensor(input, dim=None, *, keepdim=False, mode=0):
    raise NotImplementedError("tapegrad: hash_tensor is not supported (its result is a torch.uint64 tensor, a dtype "
                              "tapegrad does not have)")


def resize_as_(input, the_template, *, memory_format=None):
    """torch.resize_as_: input.resize_as_(the_template), in place."""
    return input.resize_as_(the_template, memory_format)


__all__ = ["roll", "diag", "tril_indices", "triu_indices", "fill", "constant_pad_nd", "nonzero_static", "hash_tensor",
           "resize_as_"]


# Tensor's methods for this module's front-ends (grep `Tensor.<name> =`)
Tensor.roll = roll
Tensor.nonzero_static = nonzero_static
Tensor.hash_tensor = hash_tensor
Tensor.diag = diag
