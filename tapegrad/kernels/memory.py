"""Reading NumPy arrays by address inside compiled code.

The tape stores `id(ndarray)`; in CPython that is the address of NumPy's public PyArrayObject struct
(numpy/ndarraytypes.h: PyObject_HEAD, char *data, int nd, npy_intp *dimensions, ...), whose layout has
not changed since NumPy 1.7. `check_layout()` verifies it on the running NumPy before the first replay.
"""
import numba
import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_DATA, _NDIM, _DIMS = 16, 24, 32  # byte offsets in PyArrayObject on 64-bit CPython
JIT = dict(cache=True, error_model="numpy", nogil=True)


@intrinsic
def _voidptr(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return types.voidptr(types.int64), codegen


@njit(inline="always", **JIT)
def load_i64(addr):
    return numba.carray(_voidptr(addr), 1, np.int64)[0]


@njit(inline="always", **JIT)
def ndim(obj):
    return numba.carray(_voidptr(obj + _NDIM), 1, np.int32)[0]


@njit(inline="always", **JIT)
def dim(obj, d):
    return load_i64(load_i64(obj + _DIMS) + 8 * d)


@njit(inline="always", **JIT)
def size(obj):
    n = 1
    for d in range(ndim(obj)):
        n *= dim(obj, d)
    return n


@njit(inline="always", **JIT)
def view(obj, n, dt):
    """The C-contiguous data of the array whose id is obj, as a flat array of n elements of dtype dt."""
    return numba.carray(_voidptr(load_i64(obj + _DATA)), n, dt)


@njit(**JIT)
def _probe(obj):
    shape = np.empty(ndim(obj), np.int64)
    for d in range(shape.size):
        shape[d] = dim(obj, d)
    return load_i64(obj + _DATA), shape


def check_layout():
    a = np.zeros((3, 5, 7), np.float32)
    data, shape = _probe(id(a))
    if data != a.ctypes.data or tuple(shape) != a.shape:
        raise RuntimeError(f"tapegrad: NumPy {np.__version__} lays out its array struct differently than "
                           "tapegrad expects; please report this with your NumPy version.")
