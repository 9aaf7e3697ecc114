"""A replayed function's elementwise rows, recomputed in one compiled call (tapegrad.compile).

Each row calls NumPy's own inner loop for its ufunc and dtype: the function pointer the ufunc object holds
(numpy/ufuncobject.h), so a replayed value equals the eager one to the bit. Numba's own tanh or exp is
libm's, which differs from NumPy's SIMD loops in the last place for a third of float32 inputs.
"""
import ctypes

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .memory import _DATA, JIT, load_i64

# PyUFuncObject: PyObject_HEAD; int nin, nout, nargs, identity; PyUFuncGenericFunction *functions;
# void **data; int ntypes, reserved1; const char *name; char *types (ntypes x nargs type numbers)
_NIN, _NOUT, _FUNCTIONS, _LOOPDATA, _NTYPES, _NAME, _TYPES = 16, 20, 32, 40, 48, 56, 64
# One row of a forward table: the output row, NumPy's loop and its data, the input rows (-1: the constant at
# that column's address; B = -2: a unary loop), elements per loop call, the byte steps of a, b and the output,
# then the loop calls (a bias over a batch: one per row) and the byte steps of a, b and the output between calls.
R, FN, DATA, A, B, N, SA, SB, SO, CA, CB, CALLS, OA, OB, OO = range(15)
WIDTH = 15


def ufunc_loop(ufunc, dtype):
    """(function, data) addresses of NumPy's inner loop of `ufunc` with every operand of `dtype`, or None.
    The struct is read only after its fields agree with what the ufunc reports through Python."""
    dtype = np.dtype(dtype)
    sig = dtype.char * ufunc.nin + "->" + dtype.char * ufunc.nout
    if sig not in ufunc.types:
        return None
    k, base, nargs = ufunc.types.index(sig), id(ufunc), ufunc.nin + ufunc.nout
    if (ctypes.c_int.from_address(base + _NIN).value != ufunc.nin
            or ctypes.c_int.from_address(base + _NOUT).value != ufunc.nout
            or ctypes.c_int.from_address(base + _NTYPES).value != ufunc.ntypes
            or ctypes.string_at(ctypes.c_void_p.from_address(base + _NAME).value) != ufunc.__name__.encode()):
        return None
    typenums = ctypes.string_at(ctypes.c_void_p.from_address(base + _TYPES).value + k * nargs, nargs)
    if any(t != dtype.num for t in typenums):
        return None
    functions = ctypes.c_void_p.from_address(base + _FUNCTIONS).value
    data = ctypes.c_void_p.from_address(base + _LOOPDATA).value
    fn = ctypes.c_void_p.from_address(functions + 8 * k).value
    return (fn, ctypes.c_void_p.from_address(data + 8 * k).value or 0) if fn else None


@intrinsic
def _call_loop(typingctx, fn, args, dims, steps, data):
    """fn(char **args, npy_intp *dimensions, npy_intp *steps, void *data): a NumPy inner loop, by address."""
    def codegen(context, builder, signature, llargs):
        bytep, intp = ir.IntType(8).as_pointer(), ir.IntType(64).as_pointer()
        loop = ir.FunctionType(ir.VoidType(), [bytep.as_pointer(), intp, intp, bytep])
        f, a, d, s, p = llargs
        builder.call(builder.inttoptr(f, loop.as_pointer()),
                     [builder.inttoptr(a, bytep.as_pointer()), builder.inttoptr(d, intp),
                      builder.inttoptr(s, intp), builder.inttoptr(p, bytep)])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64, types.int64, types.int64), codegen


@njit(**JIT)
def forward(table, start, stop, obj):
    """Run rows table[start:stop] in order: each reads its inputs' data and writes its output's in place.
    Every address, size and step was checked when the table was built; shapes are fixed by the guard."""
    args = np.empty(3, np.int64)
    dims = np.empty(1, np.int64)
    steps = np.empty(3, np.int64)
    for k in range(start, stop):
        t = table[k]
        a = load_i64(obj[t[A]] + _DATA) if t[A] >= 0 else t[CA]
        steps[0] = t[SA]
        m = 1
        b = 0
        if t[B] != -2:
            b = load_i64(obj[t[B]] + _DATA) if t[B] >= 0 else t[CB]
            steps[1] = t[SB]
            m = 2
        out = load_i64(obj[t[R]] + _DATA)
        steps[m] = t[SO]
        dims[0] = t[N]
        for i in range(t[CALLS]):
            args[0] = a + i * t[OA]
            args[1] = b + i * t[OB]
            args[m] = out + i * t[OO]
            _call_loop(t[FN], args.ctypes.data, dims.ctypes.data, steps.ctypes.data, t[DATA])
