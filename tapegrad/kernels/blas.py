"""BLAS's gemm called from compiled code: the OpenBLAS that NumPy's own matmul calls, by address.

A matrix product's backward is two gemm calls. Run by Python, each such row made the compiled replay return,
build Tensors-free arrays, call NumPy and come back: about 10 µs a row, more than the product itself at the
sizes of an MLP's step (docs/architecture.md). The replay calls the same gemm itself instead (runtime.py,
_matmul_rule, _linear_rule), adding into the adjoint blocks in place (beta = 1).

`addresses()` finds cblas_sgemm and cblas_dgemm in the OpenBLAS bundled with NumPy's wheels (`_openblas.py`; ILP64: 64-bit
integers, the `64_` symbol suffix; loaded already, as NumPy linked it). Where there is none (NumPy built on
MKL, Accelerate or a system BLAS), both addresses are 0 and those rows return to Python, as before. The
addresses are arguments of the compiled code, never constants in it, so the cached machine code stays valid
in every process.

`gemm(dtype)` is the same gemm for Python callers (ctypes): the convolution taps' products (ops/conv.py) accumulate
into their output (beta = 1), which NumPy's matmul cannot do without a temporary and a pass to add it.
"""
import ctypes

import numpy as np
from numba import types
from numba.extending import intrinsic
from llvmlite import ir

from .. import _openblas

# CBLAS's enums (cblas.h): row-major storage; op(X) = X or X transposed
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
_SYMBOLS = (("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_"),  # NumPy 2 (scipy-openblas64)
            ("cblas_sgemm64_", "cblas_dgemm64_"))              # NumPy 1.22-1.26 (openblas64_)


def addresses():
    """int64 array (cblas_sgemm, cblas_dgemm) of NumPy's bundled ILP64 OpenBLAS (_openblas.py), or zeros."""
    found = np.zeros(2, np.int64)
    gemms = _openblas.functions(*_SYMBOLS)
    if gemms is not None:
        found[:] = [ctypes.cast(f, ctypes.c_void_p).value for f in gemms]
    return found


_GEMMS = {}


def gemm(dtype):
    """cblas_sgemm (float32) or cblas_dgemm (float64) as `f(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc)`: c =
    op(a) @ op(b) + beta * c, row-major, a/b/c data addresses; None where NumPy has no bundled OpenBLAS. The
    caller keeps every extent inside its arrays: nothing here can check a raw address."""
    double = np.dtype(dtype) == np.float64
    if double not in _GEMMS:
        address = int(addresses()[1 if double else 0])
        real, i32, i64, ptr = (ctypes.c_double if double else ctypes.c_float), ctypes.c_int32, ctypes.c_int64, \
            ctypes.c_void_p
        call = ctypes.CFUNCTYPE(None, i32, i32, i32, i64, i64, i64, real, ptr, i64, ptr, i64, real, ptr, i64)(
            address) if address else None
        _GEMMS[double] = None if call is None else (
            lambda ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc:
            call(ROW_MAJOR, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc))
    return _GEMMS[double]


@intrinsic
def gemm_add(typingctx, address, double, ta, tb, m, n, k, a, lda, b, ldb, c, ldc):
    """cblas_?gemm(RowMajor, ta, tb, m, n, k, 1, a, lda, b, ldb, 1, c, ldc) at `address` (64-bit integers;
    a, b, c data addresses): c += op(a) @ op(b), in float64 when `double`, else float32."""
    sig = types.void(types.int64, types.boolean, types.int32, types.int32, types.int64, types.int64, types.int64,
                     types.int64, types.int64, types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        address, double, ta, tb, m, n, k, a, lda, b, ldb, c, ldc = args
        i32, i64, ptr = ir.IntType(32), ir.IntType(64), ir.IntType(8).as_pointer()
        a, b, c = (builder.inttoptr(v, ptr) for v in (a, b, c))
        with builder.if_else(double) as (then, otherwise):
            for real, branch in ((ir.DoubleType(), then), (ir.FloatType(), otherwise)):
                with branch:
                    fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, real, ptr, i64, ptr, i64,
                                                           real, ptr, i64])
                    one = ir.Constant(real, 1.0)
                    builder.call(builder.inttoptr(address, fnty.as_pointer()),
                                 [ir.Constant(i32, ROW_MAJOR), ta, tb, m, n, k, one, a, lda, b, ldb, one, c, ldc])
        return context.get_dummy_value()
    return sig, codegen

