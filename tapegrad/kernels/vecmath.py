"""exp, sigmoid and tanh that LLVM vectorises inside compiled loops, in the argument's own precision.

A loop that calls libm's exp or tanh runs one element at a time (5-30 ns each); these are the same functions
written in arithmetic the vectoriser packs 4 doubles or 8 floats a step (AVX2): Cody-Waite reduction
x = n ln2 + r with |r| <= ln2 / 2, exp(r) by its Taylor polynomial (to r^13 in float64, r^7 in float32:
truncation below half an ulp), and 2^n built from the bits of n, as SLEEF does. The results are within 2 ulp
of the true values (tests/reliability/test_vecmath.py; torch's own, SLEEF's, within 1). NaN propagates;
sigmoid and tanh saturate to 0, 1 and +-1 as torch's do. Each is typed by its argument: a float32 argument is
computed in float32 throughout, a float64 one in float64.
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from .memory import JIT


def _bitcast(src, dst, src_ir, dst_ir):
    @intrinsic
    def cast(typingctx, x):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], dst_ir)
        return dst(src), codegen
    return cast


_bits64 = _bitcast(types.float64, types.int64, ir.DoubleType(), ir.IntType(64))
_float64 = _bitcast(types.int64, types.float64, ir.IntType(64), ir.DoubleType())
_bits32 = _bitcast(types.float32, types.int32, ir.FloatType(), ir.IntType(32))
_float32 = _bitcast(types.int32, types.float32, ir.IntType(32), ir.FloatType())

# -- float64 ------------------------------------------------------------------------------------------------
_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238  # ln 2 split so that n * _LN2_HI is exact for |n| < 2**21
_LN2_LO = 1.9082149292705877e-10
_SHIFTER = 6755399441055744.0 + 1023.0  # 1.5 * 2**52 + the exponent bias: n + bias lands in the low bits


@njit(inline="always", **JIT)
def _pow2_64(nf):
    """2.0 ** nf for an integral float nf in [-1022, 1023]."""
    return _float64((_bits64(nf + _SHIFTER) & 0xFFF) << 52)


@njit(inline="always", **JIT)
def _expm1_reduced64(r):
    """exp(r) - 1 for |r| <= ln2 / 2, without the cancellation of subtracting 1."""
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    return r + r * r * p


@njit(inline="always", **JIT)
def _exp64(x):
    xc = min(max(x, -746.0), 710.0)
    nf = np.floor(xc * _LOG2E + 0.5)
    r = (xc - nf * _LN2_HI) - nf * _LN2_LO
    half = np.floor(nf * 0.5)  # 2^n as two factors: n reaches -1076 and 1024, past one factor's range
    y = ((_expm1_reduced64(r) + 1.0) * _pow2_64(half)) * _pow2_64(nf - half)
    return y if x == x else x


@njit(inline="always", **JIT)
def _tanh64(x):
    a = min(abs(x), 20.0)  # tanh(20) rounds to 1
    nf = np.floor(-2.0 * a * _LOG2E + 0.5)
    r = (-2.0 * a - nf * _LN2_HI) - nf * _LN2_LO
    s = _pow2_64(nf)
    em = s * _expm1_reduced64(r) + (s - 1.0)  # exp(-2|x|) - 1
    return math.copysign(em / (2.0 + em), x) if x == x else x


# -- float32: the same steps, every constant a float32 so that nothing widens ------------------------------
_F = np.float32
_LOG2E_32, _LN2_HI_32, _LN2_LO_32 = _F(_LOG2E), _F(0.693359375), _F(-2.12194440e-4)  # (Cephes' split)
_SHIFTER_32 = _F(12582912.0 + 127.0)  # 1.5 * 2**23 + the exponent bias
_ONE, _TWO, _HALF = _F(1.0), _F(2.0), _F(0.5)
_C7, _C6, _C5, _C4, _C3 = _F(1 / 5040), _F(1 / 720), _F(1 / 120), _F(1 / 24), _F(1 / 6)
_LO_32, _HI_32, _TANH_SAT_32 = _F(-104.0), _F(89.0), _F(10.0)


@njit(inline="always", **JIT)
def _pow2_32(nf):
    """2.0 ** nf for an integral float32 nf in [-126, 127]."""
    return _float32((_bits32(nf + _SHIFTER_32) & np.int32(0xFF)) << np.int32(23))


@njit(inline="always", **JIT)
def _expm1_reduced32(r):
    p = _C7
    p = p * r + _C6
    p = p * r + _C5
    p = p * r + _C4
    p = p * r + _C3
    p = p * r + _HALF
    return r + r * r * p


@njit(inline="always", **JIT)
def _exp32(x):
    xc = min(max(x, _LO_32), _HI_32)
    nf = np.floor(xc * _LOG2E_32 + _HALF)
    r = (xc - nf * _LN2_HI_32) - nf * _LN2_LO_32
    half = np.floor(nf * _HALF)
    y = ((_expm1_reduced32(r) + _ONE) * _pow2_32(half)) * _pow2_32(nf - half)
    return y if x == x else x


@njit(inline="always", **JIT)
def _tanh32(x):
    a = min(abs(x), _TANH_SAT_32)
    nf = np.floor(-_TWO * a * _LOG2E_32 + _HALF)
    r = (-_TWO * a - nf * _LN2_HI_32) - nf * _LN2_LO_32
    s = _pow2_32(nf)
    em = s * _expm1_reduced32(r) + (s - _ONE)
    return math.copysign(em / (_TWO + em), x) if x == x else x


# -- the functions kernels call, typed by their argument -----------------------------------------------------
def exp(x):
    """exp(x) (compiled code only)."""
    raise TypeError("vecmath functions run inside compiled kernels")


def sigmoid(x):
    """1 / (1 + exp(-x)), as torch computes it (compiled code only)."""
    raise TypeError("vecmath functions run inside compiled kernels")


def tanh(x):
    """sign(x) (1 - e) / (1 + e) with e = exp(-2|x|), from expm1 so that small |x| keeps its precision (compiled
    code only)."""
    raise TypeError("vecmath functions run inside compiled kernels")


@overload(exp)
def _exp_typed(x):
    if x == types.float32:
        return lambda x: _exp32(x)
    return lambda x: _exp64(float(x))


@overload(sigmoid)
def _sigmoid_typed(x):
    if x == types.float32:
        return lambda x: _ONE / (_ONE + _exp32(-x))
    return lambda x: 1.0 / (1.0 + _exp64(-float(x)))


@overload(tanh)
def _tanh_typed(x):
    if x == types.float32:
        return lambda x: _tanh32(x)
    return lambda x: _tanh64(float(x))
