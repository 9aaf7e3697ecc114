"""Shape and data movement: reshape and views, and the gather mechanism (index map forward, scatter-add
adjoint) that transpose, permute and indexing share."""
import builtins
import math

import numpy as np

from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor, _new
from ._common import OPS, _dim, _dims, _record, _sizes, _tensor


def reshape(input, *shape):
    x = _tensor(input)
    shape = _sizes(shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or x.numel() % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {x.numel()}")
        shape = tuple(x.numel() // known if s == -1 else s for s in shape)
    if math.prod(shape) != x.numel() or builtins.any(s < 0 for s in shape):
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {x.numel()}")
    if shape == x.shape:
        return _record(OPS["reshape"], x._data.view(), (x,)) if x._requires_grad else x
    out = x._data.reshape(shape)
    return _record(OPS["reshape"], out, (x,))


def flatten(input, start_dim=0, end_dim=-1):
    x = _tensor(input)
    if x.ndim == 0:
        return reshape(x, 1)
    s, e = _dim(start_dim, x.ndim), _dim(end_dim, x.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    return reshape(x, x.shape[:s] + (-1,) + x.shape[e + 1:])


def squeeze(input, dim=None):
    x = _tensor(input)
    if dim is None:
        return reshape(x, tuple(s for s in x.shape if s != 1))
    dims = _dims(dim, x.ndim)
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if not (i in dims and s == 1)))


def unsqueeze(input, dim):
    x = _tensor(input)
    d = _dim(dim, x.ndim + 1)
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def _gather(x, index_map):
    """out = x.flat[index_map] with the adjoint scatter-add: the one mechanism for data movement."""
    index_map = np.ascontiguousarray(index_map, dtype=np.int64)
    out = np.ascontiguousarray(x._data.reshape(-1)[index_map.reshape(-1)].reshape(index_map.shape))
    if not (x._requires_grad and is_grad_enabled()):
        return _new(out)
    return _record(OPS["gather_flat"], out, (x,), 0.0, 0.0, id(index_map), index_map)


def _index_map(x):
    return np.arange(x.numel(), dtype=np.int64).reshape(x.shape)


def scatter_flat(g, index_map, shape):
    """The adjoint of a gather: zeros of `shape` with g added at index_map (differentiable)."""
    g = _tensor(g)
    out = np.zeros(math.prod(shape), g._data.dtype)
    np.add.at(out, index_map.reshape(-1), g._data.reshape(-1))
    return _record(OPS["scatter_flat"], out.reshape(shape), (g,), aux=index_map)


def transpose(input, dim0, dim1):
    x = _tensor(input)
    if x.ndim == 0:
        _dim(dim0, 0), _dim(dim1, 0)
        return x
    d0, d1 = _dim(dim0, x.ndim), _dim(dim1, x.ndim)
    if d0 == d1:
        return x
    return _gather(x, np.swapaxes(_index_map(x), d0, d1))


def t(input):
    x = _tensor(input)
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return transpose(x, 0, 1) if x.ndim == 2 else x


def permute(input, *dims):
    x = _tensor(input)
    dims = _sizes(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {x.ndim} is not "
                           f"equal to len(dims) = {len(dims)}")
    return _gather(x, np.transpose(_index_map(x), _dims(dims, x.ndim)))


def getitem(x, key):
    key = _index_key(key, x)
    try:
        index_map = _index_map(x)[key]
    except IndexError as e:
        raise IndexError(_index_error(str(e), x)) from None
    return _gather(x, index_map)


def _index_key(key, x):
    def conv(k):
        if isinstance(k, Tensor):
            if k._data.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            return k._data
        return k
    if isinstance(key, tuple):
        return tuple(conv(k) for k in key)
    if isinstance(key, list):
        return conv(_new(np.asarray(key)))
    return conv(key)


def _index_error(msg, x):
    import re
    m = re.match(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)", msg)
    if m:
        return f"index {m.group(1)} is out of bounds for dimension {m.group(2)} with size {m.group(3)}"
    if "too many indices" in msg:
        return f"too many indices for tensor of dimension {x.ndim}"
    return msg


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]
