"""Compiled transforms of torch's CPU generator (see tapegrad/random.py): raw MT19937 draws to uniforms and
normals, bit for bit as ATen computes them.

torch's float32 AVX2 normal kernel and its `a * b + c` (compiled with FMA contraction) need a fused
multiply-add: LLVM's `llvm.fma` intrinsic, which is correctly rounded by definition (one FMA instruction on
any x86-64 CPU since Haswell; elsewhere libm's fmaf / fma, also exact). No fastmath anywhere: contraction or
reassociation would change the results.
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .memory import JIT


def _bitcast(src, dst, width):
    @intrinsic
    def cast(typingctx, x):
        def codegen(context, builder, signature, args):
            to = ir.IntType(width) if isinstance(dst, types.Integer) else (
                ir.FloatType() if width == 32 else ir.DoubleType())
            return builder.bitcast(args[0], to)
        return dst(src), codegen
    return cast


_f32_bits = _bitcast(types.float32, types.int32, 32)
_bits_f32 = _bitcast(types.int32, types.float32, 32)


def _fused_multiply_add(fty, irty):
    @intrinsic
    def fma(typingctx, a, b, c):
        def codegen(context, builder, signature, args):
            fn = builder.module.declare_intrinsic("llvm.fma", [irty], ir.FunctionType(irty, [irty] * 3))
            return builder.call(fn, args)
        return fty(fty, fty, fty), codegen
    return fma


_fma_f32 = _fused_multiply_add(types.float32, ir.FloatType())
_fma_f64 = _fused_multiply_add(types.float64, ir.DoubleType())


@njit(inline="always", **JIT)
def fma32(a, b, c):
    """float32 fma(a, b, c), rounded once."""
    return _fma_f32(np.float32(a), np.float32(b), np.float32(c))


@njit(inline="always", **JIT)
def fma64(a, b, c):
    """float64 fma(a, b, c), rounded once."""
    return _fma_f64(np.float64(a), np.float64(b), np.float64(c))


@njit(inline="always", **JIT)
def _u24(raw):
    return np.float32(raw & np.uint64(0xFFFFFF)) * np.float32(2.0 ** -24)


@njit(inline="always", **JIT)
def _u53(hi, lo):
    return np.float64(((hi << np.uint64(32)) | lo) & np.uint64((1 << 53) - 1)) * (2.0 ** -53)


@njit(**JIT)
def uniform_f32(raw, low, high, fused):
    """torch.rand's float32 values from one draw each: u * (high - low) + low (fused or not), without the
    final clamp to [low, high). low and high are float32."""
    out = np.empty(raw.size, np.float32)
    span = high - low
    for i in range(raw.size):
        u = _u24(raw[i])
        out[i] = fma32(u, span, low) if fused else u * span + low
    return out


@njit(**JIT)
def uniform_f64(raw, low, high, fused):
    """The float64 values from two draws each (the first the high word), clamped to [low, high)."""
    n = raw.size // 2
    out = np.empty(n, np.float64)
    span = high - low
    for i in range(n):
        u = _u53(raw[2 * i], raw[2 * i + 1])
        v = fma64(u, span, low) if fused else u * span + low
        out[i] = low if v >= high else v
    return out


@njit(**JIT)
def u24(raw):
    out = np.empty(raw.size, np.float32)
    for i in range(raw.size):
        out[i] = _u24(raw[i])
    return out


@njit(**JIT)
def u53(raw):
    n = raw.size // 2
    out = np.empty(n, np.float64)
    for i in range(n):
        out[i] = _u53(raw[2 * i], raw[2 * i + 1])
    return out


# avx_mathfun.h's log256_ps and sincos256_ps (Cephes) as GCC compiles them with FMA contraction.


@njit(inline="always", **JIT)
def _log256(x):
    one = np.float32(1.0)
    x = max(x, np.float32(1.1754943508222875e-38))
    bits = np.int64(_f32_bits(x))
    e = np.float32(np.float32((bits >> 23) - 127) + one)
    x = _bits_f32(np.int32((bits & ~0x7F800000) | 0x3F000000))   # mantissa in [0.5, 1)
    small = x < np.float32(0.707106781186547524)
    tmp = x if small else np.float32(0.0)
    x = x - one
    if small:
        e = e - one
    x = x + tmp
    z = x * x
    y = np.float32(7.0376836292E-2)
    y = fma32(y, x, np.float32(-1.1514610310E-1))
    y = fma32(y, x, np.float32(1.1676998740E-1))
    y = fma32(y, x, np.float32(-1.2420140846E-1))
    y = fma32(y, x, np.float32(1.4249322787E-1))
    y = fma32(y, x, np.float32(-1.6668057665E-1))
    y = fma32(y, x, np.float32(2.0000714765E-1))
    y = fma32(y, x, np.float32(-2.4999993993E-1))
    y = fma32(y, x, np.float32(3.3333331174E-1))
    y = y * x
    y = fma32(y, z, e * np.float32(-2.12194440e-4))
    y = fma32(-z, np.float32(0.5), y)
    x = x + y
    return fma32(e, np.float32(0.693359375), x)


@njit(inline="always", **JIT)
def _sincos256(x):
    negative = _f32_bits(x) < 0
    x = abs(x)
    j = np.int64(np.int32(x * np.float32(1.27323954473516)))   # truncation, as cvttps
    j = (j + 1) & ~1
    y = np.float32(j)
    flip_sin = negative != ((j & 4) != 0)
    flip_cos = (~(j - 2) & 4) != 0
    x = fma32(y, np.float32(-0.78515625), x)
    x = fma32(y, np.float32(-2.4187564849853515625e-4), x)
    x = fma32(y, np.float32(-3.77489497744594108e-8), x)
    z = x * x
    yc = fma32(np.float32(2.443315711809948E-005), z, np.float32(-1.388731625493765E-003))
    yc = fma32(yc, z, np.float32(4.166664568298827E-002))
    yc = yc * z
    yc = fma32(yc, z, -(z * np.float32(0.5)))
    yc = yc + np.float32(1.0)
    ys = fma32(np.float32(-1.9515295891E-4), z, np.float32(8.3321608736E-3))
    ys = fma32(ys, z, np.float32(-1.6666654611E-1))
    ys = ys * z
    ys = fma32(ys, x, x)
    if (j & 2) == 0:
        s, c = ys, yc
    else:
        s, c = yc, ys
    return (-s if flip_sin else s), (-c if flip_cos else c)   # negation flips the sign bit, as the xor


@njit(inline="always", **JIT)
def _box16_avx2(u, mean, std, out, o):
    """normal_fill_16_AVX2 of 16 float32 uniforms u (8 pairs: k and k + 8) into out[o: o + 16]; mean, std float32."""
    two_pi = np.float32(2.0 * math.pi)
    for k in range(8):
        radius = np.float32(math.sqrt(np.float64(np.float32(-2.0) * _log256(np.float32(1.0) - u[k]))))
        s, c = _sincos256(two_pi * u[k + 8])
        out[o + k] = fma32(radius * c, std, mean)
        out[o + k + 8] = fma32(radius * s, std, mean)


@njit(inline="always", **JIT)
def _box16_f64(u, mean, std, out, o):
    """normal_fill_16<double> of 16 float64 uniforms (libm log, cos, sin; mean and std applied with an FMA)."""
    two_pi = 2.0 * math.pi
    for k in range(8):
        radius = math.sqrt(-2.0 * math.log(1.0 - u[k]))
        theta = two_pi * u[k + 8]
        out[o + k] = fma64(radius * math.cos(theta), std, mean)
        out[o + k + 8] = fma64(radius * math.sin(theta), std, mean)


@njit(**JIT)
def box_muller16_avx2(d, mean, std):
    """normal_fill_16_AVX2 over rows of 16 float32 uniforms (8 pairs: j and j + 8); mean, std float32."""
    out = np.empty_like(d)
    for r in range(d.shape[0]):
        _box16_avx2(d[r], mean, std, out[r], 0)
    return out


# torch's normal_fill for n >= 16 elements, from raw draws to values in one call (randn(32) took five compiled
# calls and their slicing: 4.1 us, against torch's 1.0): the draws of n elements and, when n % 16, of 16 more,
# from which torch transforms the last 16 elements again.
@njit(**JIT)
def normal_avx2(raw, n, mean, std):
    """float32 (normal_fill_16_AVX2); one draw an element."""
    out = np.empty(n, np.float32)
    u = np.empty(16, np.float32)
    for r in range(-(-n // 16)):
        src, dst = (r * 16, r * 16) if r < n // 16 else (n, n - 16)
        for k in range(16):
            u[k] = _u24(raw[src + k])
        _box16_avx2(u, mean, std, out, dst)
    return out


@njit(**JIT)
def normal_f64(raw, n, mean, std):
    """float64 (normal_fill_16<double>); two draws an element, the first the high word."""
    out = np.empty(n, np.float64)
    u = np.empty(16, np.float64)
    for r in range(-(-n // 16)):
        src, dst = (r * 16, r * 16) if r < n // 16 else (n, n - 16)
        for k in range(16):
            u[k] = _u53(raw[2 * (src + k)], raw[2 * (src + k) + 1])
        _box16_f64(u, mean, std, out, dst)
    return out
