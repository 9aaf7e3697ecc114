"""Linear algebra: matmul in its torch cases (dot, mv, mm, batched), norm."""

import numpy as np

from .. import _dtype, registry
from ._common import OPS, _float, _new, _record, _tensor, broadcast_shape
from .elementwise import abs, pow, sqrt
from .reduce import sum


def matmul(input, other):
    a, b = _tensor(input), _tensor(other)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_dtype.from_numpy_dtype(a._data.dtype).name} != "
                           f"{_dtype.from_numpy_dtype(b._data.dtype).name}")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        if a.ndim == 1 and b.ndim == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same "
                               f"number of elements, but got {ka} and {kb} elements respectively")
        sa = "x".join(map(str, a.shape if a.ndim > 1 else (1,) + a.shape))
        sb = "x".join(map(str, b.shape if b.ndim > 1 else b.shape + (1,)))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
    if a.ndim > 2 or b.ndim > 2:
        broadcast_shape(a.shape[:-2], b.shape[:-2] if b.ndim > 1 else ())
    if a._data.dtype.kind != "f":
        return _new(np.asarray(np.matmul(a._data, b._data)))
    name = ("dot" if a.ndim == 1 and b.ndim == 1 else "mv" if a.ndim == 2 and b.ndim == 1
            else "matmul" if a.ndim <= 2 and b.ndim <= 2 else "bmm")
    return _record(OPS[name], np.matmul(a._data, b._data), (a, b))


def dot(input, other):
    a, b = _tensor(input), _tensor(other)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    return matmul(a, b)


def mm(input, mat2):
    a, b = _tensor(input), _tensor(mat2)
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(a, b)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    x = _float(_tensor(input))
    if p in ("fro", 2, 2.0) and dim is None and not keepdim:
        return _record(OPS["norm"], np.asarray(registry._norm_forward(x._data)), (x,))
    if p in ("fro", 2, 2.0):
        return sqrt(sum(x * x, dim=dim, keepdim=keepdim))
    if p == 1:
        return sum(abs(x), dim=dim, keepdim=keepdim)
    return pow(sum(pow(abs(x), float(p)), dim=dim, keepdim=keepdim), 1.0 / p)


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]
