"""Reductions (sum, mean) and their adjoints' shapes (expand, sum_to_shape)."""
import math

import numpy as np

from .. import _dtype
from ..tensor import _new
from ._common import OPS, _dims, _mask, _record, _sizes, _tensor, _to_dtype


def _reduce(name_all, name_dim, np_fn, input, dim, keepdim, dtype, scale_of):
    x = _tensor(input)
    if dtype is not None:
        x = _to_dtype(x, _dtype.to_numpy_dtype(dtype))
    elif x._data.dtype.kind in "biu" and name_all == "mean_all":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {_dtype.from_numpy_dtype(x._data.dtype).name.capitalize()}")
    elif x._data.dtype.kind in "b":
        x = _new(x._data.astype(np.int64))
    dims = _dims(dim, x.ndim)
    out = np.asarray(np_fn(x._data, axis=dims, keepdims=keepdim))
    if out.dtype != x._data.dtype:
        out = out.astype(x._data.dtype)
    n = math.prod(x._data.shape[d] for d in dims)
    op = OPS[name_all if dim is None and not keepdim else name_dim]
    return _record(op, out, (x,), scale_of(n), 0.0, _mask(dims))


def sum(input, dim=None, keepdim=False, dtype=None):
    return _reduce("sum_all", "sum", np.sum, input, dim, keepdim, dtype, lambda n: 1.0)


def mean(input, dim=None, keepdim=False, dtype=None):
    return _reduce("mean_all", "mean", np.mean, input, dim, keepdim, dtype, lambda n: 1.0 / n if n else math.nan)


def sum_to_shape(x, shape):
    """Sum x down to `shape` (undo broadcasting): the adjoint of expand."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    lead = x.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1)
    out = np.sum(x._data, axis=dims, keepdims=True).reshape(shape)
    return _record(OPS["sum_to_shape"], out, (x,), 1.0, 0.0, _mask(dims))


def expand(input, *sizes):
    x = _tensor(input)
    sizes = _sizes(sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(x.shape)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({x.ndim})")
    lead = len(sizes) - x.ndim
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    for i in range(x.ndim):
        if x.shape[i] != 1 and x.shape[i] != shape[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({shape[lead + i]}) must match the existing size "
                               f"({x.shape[i]}) at non-singleton dimension {lead + i}.  Target sizes: "
                               f"{list(sizes)}.  Tensor sizes: {list(x.shape)}")
    if shape == x.shape:
        return x
    out = np.ascontiguousarray(np.broadcast_to(x._data, shape))
    return _record(OPS["expand"], out, (x,))


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]
