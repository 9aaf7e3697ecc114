"""Reading NumPy arrays by address inside compiled code.

The tape stores `id(ndarray)`; in CPython that is the address of NumPy's public PyArrayObject struct
(numpy/ndarraytypes.h: PyObject_HEAD, char *data, int nd, npy_intp *dimensions, npy_intp *strides,
PyObject *base, PyArray_Descr *descr, ...), whose layout has not changed since NumPy 1.7; the descr's
type_num sits after PyObject_HEAD, typeobj and four chars in NumPy 1 and 2 alike. `check_layout()`
verifies both on the running NumPy before the first replay.

Every view takes its length and dtype from the array itself (`view`), never from what the tape believes
about the row: a value whose dtype is not the one the kernel reads raises, and with NUMBA_BOUNDSCHECK=1 an
index past the array's own length raises too.
"""
import numba
import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_DATA, _NDIM, _DIMS, _DESCR, _FLAGS = 16, 24, 32, 56, 64  # byte offsets in PyArrayObject on 64-bit CPython
_TYPE_NUM = 28  # byte offset of type_num in PyArray_Descr
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
def typenum(obj):
    return numba.carray(_voidptr(load_i64(obj + _DESCR) + _TYPE_NUM), 1, np.int32)[0]


@njit(inline="always", **JIT)
def c_contiguous(obj):
    return (numba.carray(_voidptr(obj + _FLAGS), 1, np.int32)[0] & 1) != 0  # NPY_ARRAY_C_CONTIGUOUS


@njit(inline="always", **JIT)
def data(obj):
    """The address of the array's first element."""
    return load_i64(obj + _DATA)


@njit(inline="always", **JIT)
def view(obj, num, dt):
    """The C-contiguous data of the array whose id is obj, as a flat array of all its elements, which
    must be of dtype dt (NumPy type number num)."""
    if typenum(obj) != num:
        raise TypeError("tapegrad: a tape row's value does not have the dtype its row records")
    return numba.carray(_voidptr(data(obj)), size(obj), dt)


@njit(**JIT)
def _probe(obj):
    shape = np.empty(ndim(obj), np.int64)
    for d in range(shape.size):
        shape[d] = dim(obj, d)
    return data(obj), shape, typenum(obj), c_contiguous(obj)


def check_layout():
    ok = True
    for dt in (np.float32, np.float64, np.int64, np.float16):
        a = np.zeros((3, 5, 7), dt)
        address, shape, num, contiguous = _probe(id(a))
        ok = ok and address == a.ctypes.data and tuple(shape) == a.shape and num == a.dtype.num and contiguous
        ok = ok and not _probe(id(a.transpose(1, 0, 2)))[3]
    if not ok:
        raise RuntimeError(f"tapegrad: NumPy {np.__version__} lays out its array struct differently than "
                           "tapegrad expects; please report this with your NumPy version.")
