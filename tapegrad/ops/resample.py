"""Sliding blocks and resampling: torch.nn.functional's unfold/fold, interpolate (nearest, nearest-exact, linear,
bilinear, bicubic, trilinear, area; antialias incl. lanczos), pixel_shuffle/pixel_unshuffle, adaptive_max_pool1d/2d and max_unpool1d/2d.

unfold and fold are each other's adjoints: one row each, whose forward and plain backward are the compiled
im2col/col2im of kernels/conv.py, and whose create_graph rule is the other front-end. Pixel (un)shuffle is a
permutation: one gather row (the replay scatters back in compiled code). Nearest resampling is one row of two takes,
whose adjoint sums each run of outputs that read one source (np.add.reduceat). Linear resampling
is separable: one row of two matmuls with constant (out, in) weight matrices each way; bicubic (torch's clamped
four taps), trilinear and antialiased resampling are the same with their own matrices, one per spatial axis. Adaptive max pooling is one
compiled pass (kernels/pool.py) that shares max pooling's backward. Every argument check runs before any kernel,
with torch's message.
"""
import builtins
import math
import numbers

import warnings

import numpy as np

from .. import _dtype, registry
from ..tensor import _new
from ..random import _madd
from ..tape import traced_value
from ._common import OPS, _record, _tensor
from .conv import (Ctx, _adaptive_matrix, _conv_kernels, _max_pool_arrays, _one_output_size, _pool_kernels,
                   _vjp_max_pool, adaptive_avg_pool1d, adaptive_avg_pool2d)
from .composite import grid_sample
from .linalg import matmul
from .shape import _gather, _gather_forward, _vjp_gather, scatter_flat
from .._warnings import user_stacklevel

__all__ = ["pixel_shuffle", "pixel_unshuffle",  # torch.X has these; the rest are torch.nn.functional's only
           "grid_sampler", "grid_sampler_2d", "grid_sampler_3d"]  # (and these: aten's grid_sample, by enums)


def _two(v, what="kernel_size"):
    if isinstance(v, (tuple, list)):
        v = tuple(int(a) for a in v)
        if len(v) == 1:
            v = v * 2
        if len(v) != 2:
            raise RuntimeError(f"It is expected {what} equals to 2, but got size {len(v)}")
        return v
    return (int(v),) * 2


def _as_float(a):
    """A float32/float64 array for the compiled kernels (others computed in float64 and cast back)."""
    return a if a.dtype in (np.float32, np.float64) else a.astype(np.float64)


# -- unfold / fold -------------------------------------------------------------------------------------------------
def _im2col(x4, ctx):
    N, C = x4.shape[:2]
    (kh, kw), (oh, ow) = ctx.k, ctx.out_hw
    xf = np.asanyarray(_as_float(x4), order="C")
    cols = np.empty((N, C, kh, kw, oh, ow), xf.dtype)
    _conv_kernels().im2col(xf, kh, kw, *ctx.s, *ctx.d, *ctx.p, cols)
    return cols.reshape(N, C * kh * kw, oh * ow).astype(x4.dtype, copy=False)


def _col2im(cols, ctx):
    N, C, H, W = ctx.xshape4
    (kh, kw), (oh, ow) = ctx.k, ctx.out_hw
    cf = np.asanyarray(_as_float(cols), order="C").reshape(N, C, kh, kw, oh, ow)
    out = np.zeros((N, C, H, W), cf.dtype)
    _conv_kernels().col2im(cf, kh, kw, *ctx.s, *ctx.d, *ctx.p, out)
    return out.astype(cols.dtype, copy=False)


def _vjp_unfold(ctx, g, inputs, out):
    """fold(g): the blocks added back where they were read."""
    return (fold(g, ctx.xshape4[2:], ctx.k, ctx.d, ctx.p, ctx.s),)


def _vjp_fold(ctx, g, inputs, out):
    """unfold(g): each block read where it was added."""
    return (unfold(g, ctx.k, ctx.d, ctx.p, ctx.s),)


registry.python("im2col", "Im2ColBackward0", lambda ctx, x: _im2col(x.reshape(ctx.xshape4), ctx), _vjp_unfold,
                array_vjp=lambda ctx, g, inputs, out, wanted: (_col2im(g, ctx).reshape(inputs[0].shape),))
registry.python("col2im", "Col2ImBackward0", lambda ctx, x: _col2im(x, ctx), _vjp_fold,
                array_vjp=lambda ctx, g, inputs, out, wanted: (_im2col(g.reshape(ctx.xshape4), ctx).reshape(
                    inputs[0].shape),))


_INT_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte"}  # (bool: torch's too)


def _floats_only(x, kernel):
    name = _INT_NAMES.get(str(x._data.dtype))
    if name is not None:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')


def _block_args(kernel_size, dilation, padding, stride, fold_order):
    k, d, p, s = _two(kernel_size), _two(dilation, "dilation"), _two(padding, "padding"), _two(stride, "stride")
    checks = [("kernel size should be greater than zero, but got kernel_height: {} kernel_width: {}", k, 1),
              ("dilation should be greater than zero, but got dilation_height: {} dilation_width: {}", d, 1),
              ("padding should be non-negative, but got pad_height: {} pad_width: {}", p, 0),
              ("stride should be greater than zero, but got stride_height: {} stride_width: {}", s, 1)]
    if fold_order:  # (col2im checks stride before dilation and padding)
        checks = [checks[0], checks[3], checks[1], checks[2]]
    for msg, v, least in checks:
        if builtins.min(v) < least:
            raise RuntimeError(msg.format(*v))
    return k, d, p, s


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    x = _tensor(input)
    k, d, p, s = _block_args(kernel_size, dilation, padding, stride, False)
    if x.ndim < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-builtins.max(x.ndim, 1)}, "
                         f"{builtins.max(x.ndim, 1) - 1}], but got {builtins.max(x.ndim, 1)})")
    if x.ndim > 4 or (0 in x.shape[-3:] if x.ndim == 4 else 0 in x.shape):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(x.shape)}")
    xs4 = tuple(x.shape) if x.ndim == 4 else (1,) + tuple(x.shape)
    H, W = xs4[2:]
    out_hw = tuple((n + 2 * pp - (dd * (kk - 1) + 1)) // ss + 1 for n, pp, dd, kk, ss in zip((H, W), p, d, k, s))
    _floats_only(x, "im2col_out_cpu")
    if builtins.min(out_hw) < 1:
        raise RuntimeError(f"Given input with spatial size ({H}, {W}), kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, "
                           f"{d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array of sliding blocks as "
                           f"({out_hw[0]}, {out_hw[1]}), but its components must be at least one.")
    ctx = Ctx(k=k, d=d, p=p, s=s, xshape4=xs4, out_hw=out_hw)
    value = _im2col(x._data.reshape(xs4), ctx)
    if x.ndim == 3:
        value = value[0]
    return _record(OPS["im2col"], value, (x,), aux=ctx)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    x = _tensor(input)
    o = _two(output_size, "output_size")
    k, d, p, s = _block_args(kernel_size, dilation, padding, stride, True)
    if not ((x.ndim == 2 and 0 not in x.shape) or (x.ndim == 3 and 0 not in x.shape[1:])):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(x.shape)}")
    xs3 = tuple(x.shape) if x.ndim == 3 else (1,) + tuple(x.shape)
    planes, length = xs3[1], xs3[2]
    if planes % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={planes} and kernel_size=({k[0]}, {k[1]}).")
    blocks = tuple((n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, pp, dd, kk, ss in zip(o, p, d, k, s))
    where = (f"Given output_size=({o[0]}, {o[1]}), kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, {d[1]}), "
             f"padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), ")
    if length != blocks[0] * blocks[1]:
        raise RuntimeError(where + f"expected size of input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)="
                           f"{length}.")
    if builtins.min(blocks) < 1:
        raise RuntimeError(where + f"calculated shape of the array of sliding blocks as ({blocks[0]}, {blocks[1]}), "
                           f"which is too small (non-positive)")
    _floats_only(x, "col2im_out_cpu")
    xs4 = (xs3[0], planes // (k[0] * k[1])) + o
    ctx = Ctx(k=k, d=d, p=p, s=s, xshape4=xs4, out_hw=blocks)
    value = _col2im(x._data.reshape(xs3), ctx)
    if x.ndim == 2:
        value = value[0]
    return _record(OPS["col2im"], value, (x,), aux=ctx)


# -- pixel shuffle: a permutation, so one gather ------------------------------------------------------------------
registry.structural("pixel_shuffle", registry.K_GATHER, "PixelShuffleBackward0", _vjp_gather, forward=_gather_forward)
registry.structural("pixel_unshuffle", registry.K_GATHER, "PixelUnshuffleBackward0", _vjp_gather,
                    forward=_gather_forward)


def _permuted(x, op, shape6, axes, out_shape):
    """x's elements as x.reshape(shape6).transpose(axes).reshape(out_shape): the value and its index map."""
    value = np.asanyarray(x._data.reshape(shape6).transpose(axes), order="C").reshape(out_shape)
    if not x._requires_grad:
        return _gather(x, np.zeros(0, np.int64), out=value)  # (records nothing: no index map needed)
    index = np.arange(x.numel(), dtype=np.int64).reshape(shape6).transpose(axes).reshape(out_shape)
    return _gather(x, index, OPS[op], value)


def pixel_shuffle(input, upscale_factor):
    x = _tensor(input)
    r = int(upscale_factor)
    if x.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with {x.ndim} "
                           f"dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, C, H, W = x.shape
    if C % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={C} is not divisible by {r * r}")
    B = math.prod(lead)
    return _permuted(x, "pixel_shuffle", (B, C // (r * r), r, r, H, W), (0, 1, 4, 2, 5, 3),
                     tuple(lead) + (C // (r * r), H * r, W * r))


def pixel_unshuffle(input, downscale_factor):
    x = _tensor(input)
    r = int(downscale_factor)
    if x.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{x.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, C, H, W = x.shape
    if H % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)="
                           f"{H} is not divisible by {r}")
    if W % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)="
                           f"{W} is not divisible by {r}")
    B = math.prod(lead)
    return _permuted(x, "pixel_unshuffle", (B, C, H // r, r, W // r, r), (0, 1, 3, 5, 2, 4),
                     tuple(lead) + (C * r * r, H // r, W // r))


# -- interpolate ----------------------------------------------------------------------------------------------------
def _nearest_take(ctx, x4):
    """x4 (N, C, H, W) read at the source rows ih and columns iw: two takes."""
    return np.take(np.take(x4, ctx.ih, axis=2), ctx.iw, axis=3)


def _nearest_sum(g, index, size, axis):
    """The adjoint of a take along `axis` with a non-decreasing index: each run of equal sources summed once."""
    starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
    if len(starts) == size and index.size == size * (index.size // size) and \
            (np.diff(starts) == index.size // size).all():  # (an integer scale: every source read k times in a row)
        k = index.size // size
        v = g.reshape(g.shape[:axis] + (size, k) + g.shape[axis + 1:])
        lead = (slice(None),) * (axis + 1)
        out = v[lead + (0,)].copy()
        for j in range(1, k):  # (k strided adds: NumPy's reduce over an axis of 2 or 3 is 10x slower)
            out += v[lead + (j,)]
        return out
    out_shape = list(g.shape)
    out_shape[axis] = size
    out = np.zeros(out_shape, g.dtype)
    where = [slice(None)] * g.ndim
    where[axis] = index[starts]
    out[tuple(where)] = np.add.reduceat(g, starts, axis=axis)
    return out


def _nearest_arrays(ctx, g, inputs, out, wanted):
    g4 = np.asanyarray(g).reshape(ctx.oshape4)
    gx = _nearest_sum(_nearest_sum(g4, ctx.iw, ctx.xshape4[3], 3), ctx.ih, ctx.xshape4[2], 2)
    return (gx.reshape(inputs[0].shape),)


def _vjp_nearest(ctx, g, inputs, out):
    """g scattered back to the sources (an index map built here, for create_graph only)."""
    N, C, H, W = ctx.xshape4
    index = (np.arange(N * C, dtype=np.int64).reshape(N, C, 1, 1) * (H * W)
             + (ctx.ih * W).reshape(1, 1, -1, 1) + ctx.iw.reshape(1, 1, 1, -1))
    return (scatter_flat(g.reshape(ctx.oshape4), index, inputs[0].shape),)


for _name, _grad_fn in (("upsample_nearest1d", "UpsampleNearest1DBackward0"),
                        ("upsample_nearest2d", "UpsampleNearest2DBackward0"),
                        ("_upsample_nearest_exact1d", "UpsampleNearestExact1DBackward0"),
                        ("_upsample_nearest_exact2d", "UpsampleNearestExact2DBackward0")):
    registry.python(_name, _grad_fn, lambda ctx, x: _nearest_take(ctx, x.reshape(ctx.xshape4)), _vjp_nearest,
                    array_vjp=_nearest_arrays)


def _nearest3d_take(ctx, x):
    x = x.reshape(ctx.xshape)
    for axis, index in enumerate(ctx.index):
        x = np.take(x, index, axis=2 + axis)
    return x


def _nearest3d_arrays(ctx, g, inputs, out, wanted):
    g = np.asanyarray(g).reshape(ctx.oshape)
    for axis in (2, 1, 0):
        g = _nearest_sum(g, ctx.index[axis], ctx.xshape[2 + axis], 2 + axis)
    return (g.reshape(inputs[0].shape),)


def _vjp_nearest3d(ctx, g, inputs, out):
    """g scattered back to the sources (an index map built here, for create_graph only)."""
    N, C, D, H, W = ctx.xshape
    i_d, i_h, i_w = ctx.index
    index = ((np.arange(N * C, dtype=np.int64).reshape(N, C, 1, 1, 1) * D + i_d.reshape(1, 1, -1, 1, 1)) * H
             + i_h.reshape(1, 1, 1, -1, 1)) * W + i_w.reshape(1, 1, 1, 1, -1)
    return (scatter_flat(g.reshape(ctx.oshape), index, inputs[0].shape),)


for _name, _grad_fn in (("upsample_nearest3d", "UpsampleNearest3DBackward0"),
                        ("_upsample_nearest_exact3d", "UpsampleNearestExact3DBackward0")):
    registry.python(_name, _grad_fn, _nearest3d_take, _vjp_nearest3d, array_vjp=_nearest3d_arrays)


def _nearest3d(x, output_size, scale_factors, exact):
    spatial = tuple(x.shape[2:])
    if output_size is None:
        output_size = [int(n * f) for n, f in zip(spatial, scale_factors)]
    if builtins.min(output_size) <= 0 or builtins.min(spatial) <= 0:
        ins = ", ".join(f"{n}: {v}" for n, v in zip("DHW", spatial))
        outs = ", ".join(f"{n}: {v}" for n, v in zip("DHW", output_size))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({ins}) output ({outs})")
    scales = scale_factors or [None] * 3
    ctx = Ctx(index=[_nearest_index(n, o, s, exact) for n, o, s in zip(spatial, output_size, scales)],
              xshape=tuple(x.shape), oshape=tuple(x.shape[:2]) + tuple(output_size))
    name = "_upsample_nearest_exact3d" if exact else "upsample_nearest3d"
    return _record(OPS[name], _nearest3d_take(ctx, x._data), (x,), aux=ctx)


def _scale(in_size, out_size, scale, dt):
    """torch's compute_scales_value, in the kernel's arithmetic type: 1/scale_factor when given, else in/out."""
    if scale is not None and scale > 0:
        return dt.type(1.0 / scale)
    return dt.type(in_size) / dt.type(out_size)


def _nearest_index(in_size, out_size, scale, exact):
    """torch's nearest source index for each output position (float arithmetic, as its CPU kernel)."""
    i = np.arange(out_size)
    if not exact and out_size == in_size:
        return i
    if not exact and out_size == 2 * in_size:
        return i >> 1
    sc = _scale(in_size, out_size, scale, np.dtype(np.float32))
    pos = (i.astype(np.float32) + np.float32(0.5 if exact else 0.0)) * sc
    return np.minimum(np.floor(pos).astype(np.int64), in_size - 1)


def _linear_matrix(in_size, out_size, scale, align_corners, dt):
    """The (out, in) matrix of torch's linear weights: two taps per row (area_pixel_compute_source_index)."""
    i = np.arange(out_size).astype(dt)
    if align_corners:
        sc = dt.type(in_size - 1) / dt.type(out_size - 1) if out_size > 1 else dt.type(0)
        src = sc * i
    else:
        sc = _scale(in_size, out_size, scale, dt)
        src = np.maximum(_madd(i + dt.type(0.5), sc, -0.5, dt), dt.type(0))  # (fused, as torch's build)
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    lam = np.clip(src - i0.astype(dt), 0, 1).astype(dt)
    i1 = i0 + (i0 < in_size - 1)
    m = np.zeros((out_size, in_size), dt)
    rows = np.arange(out_size)
    np.add.at(m, (rows, i0), dt.type(1) - lam)
    np.add.at(m, (rows, i1), lam)
    return m


def _linear_apply(ctx, x4, transpose=False):
    """out = Mh @ x @ Mw^T on the (H, W) planes (or the adjoint, Mh^T @ g @ Mw)."""
    out = np.matmul(x4, ctx.mw if transpose else np.ascontiguousarray(ctx.mw.T))
    if ctx.nd == 2:
        out = np.matmul(np.ascontiguousarray(ctx.mh.T) if transpose else ctx.mh, out)
    return out


def _vjp_linear(ctx, g, inputs, out):
    """Mh^T @ g @ Mw, two matmuls with constants."""
    g4 = g.reshape(ctx.oshape4)
    gx = matmul(g4, _new(ctx.mw))
    if ctx.nd == 2:
        gx = matmul(_new(np.ascontiguousarray(ctx.mh.T)), gx)
    return (gx.reshape(inputs[0].shape),)


def _linear_arrays(ctx, g, inputs, out, wanted):
    return (_linear_apply(ctx, np.asanyarray(g).reshape(ctx.oshape4), True).reshape(inputs[0].shape),)


def _linear_forward(ctx, x):
    return _linear_apply(ctx, x.reshape(ctx.oshape4[:2] + (-1,) + x.shape[-1:]))


registry.python("upsample_linear1d", "UpsampleLinear1DBackward0", _linear_forward, _vjp_linear,
                array_vjp=_linear_arrays)
registry.python("upsample_bilinear2d", "UpsampleBilinear2DBackward0", _linear_forward, _vjp_linear,
                array_vjp=_linear_arrays)



# bicubic, trilinear and antialiased resampling: separable too, one constant (out, in) matrix per spatial axis
def _cubic_weights(t, A):
    """torch's get_cubic_upsample_coefficients: the four taps' weights at fraction t (Keys' kernel, A)."""
    def near(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    one = t.dtype.type(1)
    return [far(t + one), near(t), near(one - t), far(2 * one - t)]


def _cubic_matrix(in_size, out_size, scale, align_corners, dt):
    """torch's bicubic (A = -0.75): the source index without the clamp at 0 that linear has, the four taps
    floor(src) - 1 .. floor(src) + 2 clamped into the input (so the border pixel repeats)."""
    i = np.arange(out_size).astype(dt)
    if align_corners:
        sc = dt.type(in_size - 1) / dt.type(out_size - 1) if out_size > 1 else dt.type(0)
        src = sc * i
    else:
        src = _madd(i + dt.type(0.5), _scale(in_size, out_size, scale, dt), -0.5, dt)  # (fused, as torch's)
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)  # torch's guard_index_and_lambda
    t = np.clip(src - i0.astype(dt), 0, 1).astype(dt)
    m = np.zeros((out_size, in_size), dt)
    rows = np.arange(out_size)
    for k, w in enumerate(_cubic_weights(t, dt.type(-0.75))):
        np.add.at(m, (rows, np.clip(i0 - 1 + k, 0, in_size - 1)), w.astype(dt))
    return m


def _aa_filter(x, mode):
    x = np.abs(x)
    if mode == "bilinear":
        return np.maximum(0, 1 - x)
    if mode == "lanczos":  # Lanczos-3: sinc(x) sinc(x / 3) within |x| < 3
        return np.where(x < 3, np.sinc(x) * np.sinc(x / 3), 0).astype(x.dtype)
    A = x.dtype.type(-0.5)  # the antialiased bicubic uses Keys' A = -0.5 (PIL's), as torch
    near = ((A + 2) * x - (A + 3)) * x * x + 1
    far = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return np.where(x < 1, near, np.where(x < 2, far, 0)).astype(x.dtype)


def _aa_matrix(in_size, out_size, scale, align_corners, dt, mode):
    """torch's antialiased weights (_compute_indices_min_size_weights_aa): the filter stretched by the scale when
    downsampling, each row's taps within the input and normalised to sum 1."""
    if align_corners:
        sc = dt.type(in_size - 1) / dt.type(out_size - 1) if out_size > 1 else dt.type(0)
    else:
        sc = _scale(in_size, out_size, scale, dt)
    half = dt.type({"bilinear": 1, "bicubic": 2, "lanczos": 3}[mode])  # the filter's support: interp_size / 2
    support = half * sc if sc >= 1 else half
    invscale = dt.type(1) / sc if sc >= 1 else dt.type(1)
    m = np.zeros((out_size, in_size), dt)
    for i in range(out_size):
        center = sc * (dt.type(i) + dt.type(0.5))
        lo = builtins.max(int(center - support + dt.type(0.5)), 0)
        hi = builtins.min(int(center + support + dt.type(0.5)), in_size)
        if hi <= lo:
            continue
        w = _aa_filter((np.arange(lo, hi).astype(dt) - center + dt.type(0.5)) * invscale, mode).astype(dt)
        total = w.sum(dtype=dt)
        m[i, lo:hi] = w / total if total != 0 else w
    return m


def _separable_apply(mats, x, transpose=False, mm=np.matmul, constant=lambda m: m):
    """x (N, C, *sizes) with each spatial axis k multiplied by mats[k] (out_k, in_k), or, for the adjoint, by
    mats[k]^T in reverse order. Works on arrays, or on Tensors with mm = matmul and constant = _new."""
    lead = tuple(x.shape[:2])
    order = range(len(mats) - 1, -1, -1) if transpose else range(len(mats))
    for k in order:
        m = np.ascontiguousarray(mats[k].T) if transpose else mats[k]  # (new, old)
        sizes = tuple(x.shape[2:])
        before, after = math.prod(sizes[:k]), math.prod(sizes[k + 1:])
        if after == 1:  # the last axis: a right product with m^T
            y = mm(x.reshape(lead + (before, sizes[k])), constant(np.ascontiguousarray(m.T)))
        else:
            y = mm(constant(m), x.reshape(lead + (before, sizes[k], after)))
        x = y.reshape(lead + sizes[:k] + (m.shape[0],) + sizes[k + 1:])
    return x


def _separable_forward(ctx, x):
    return _separable_apply(ctx.mats, x.reshape(ctx.xshape))


def _separable_arrays(ctx, g, inputs, out, wanted):
    return (_separable_apply(ctx.mats, np.asanyarray(g).reshape(ctx.oshape), True).reshape(inputs[0].shape),)


def _vjp_separable(ctx, g, inputs, out):
    """The adjoint as matmuls with the constant matrices' transposes (recorded, for create_graph)."""
    gx = _separable_apply(ctx.mats, g.reshape(ctx.oshape), True, matmul, _new)
    return (gx.reshape(inputs[0].shape),)


for _name, _grad_fn in (("upsample_bicubic2d", "UpsampleBicubic2DBackward0"),
                        ("upsample_trilinear3d", "UpsampleTrilinear3DBackward0"),
                        ("_upsample_bilinear2d_aa", "UpsampleBilinear2DAaBackward0"),
                        ("_upsample_bicubic2d_aa", "UpsampleBicubic2DAaBackward0"),
                        ("_upsample_lanczos2d_aa", "UpsampleLanczos2DAaBackward0"),
                        ("adaptive_avg_pool3d", "AdaptiveAvgPool3DBackward0")):
    registry.python(_name, _grad_fn, _separable_forward, _vjp_separable, array_vjp=_separable_arrays)

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _is_integer(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) or (
        hasattr(v, "dtype") and getattr(v, "ndim", 1) == 0 and "int" in str(v.dtype))


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    x = _tensor(input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = x.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(x.shape[2:])} and output size of {size}. Please "
                                 f"provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                 f"...,oK) format.")
            if not all(_is_integer(v) for v in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, "
                                f"int], but got size with types {[type(v) for v in size]}")
            output_size = [int(v) for v in size]
        else:
            output_size = [int(size)] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(x.shape[2:])} and scale_factor of shape "
                                 f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 f"scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [float(v) for v in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [int(math.floor(x.shape[i + 2] * scale_factors[i])) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and x.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    wants = {"linear": 3, "bilinear": 4, "trilinear": 5}
    if mode in wants and x.ndim in (3, 4, 5) and x.ndim != wants[mode]:
        raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {wants[mode]}D input")
    if x.ndim not in (3, 4, 5) or mode not in _MODES.split(" | "):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
                                  f"modes: {_MODES} (got {mode})")
    if mode == "lanczos" and x.ndim == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if mode in ("bicubic", "lanczos") and x.ndim != 4:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
                                  f"modes: {_MODES} (got {mode})")
    if x._data.dtype.kind in "biu":
        _refuse_integer(x, mode, antialias)
    if x.ndim == 5 and mode in ("nearest", "nearest-exact"):
        return _nearest3d(x, output_size, scale_factors, mode == "nearest-exact")
    if mode in ("bicubic", "trilinear") or antialias or (mode == "area" and x.ndim == 5):
        return _resample_separable(x, dim, output_size, scale_factors, mode, align_corners, antialias)
    if mode == "area":
        return (adaptive_avg_pool1d if dim == 1 else adaptive_avg_pool2d)(x, output_size)
    return _resample(x, dim, output_size, scale_factors, mode, align_corners)


_TORCH_DTYPE_WORDS = {"uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
                      "bool": "Bool", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}


def _refuse_integer(x, mode, antialias):
    """torch resamples integer input only as uint8 (nearest, nearest-exact, bilinear, bicubic); the others get
    its kernel's error. tapegrad's uint8 resampling is nearest's: torch's uint8 bilinear and bicubic use their
    own fixed-point kernels, which tapegrad does not reproduce."""
    uint8 = x._data.dtype == np.uint8
    if antialias:
        kernel = None if uint8 else "compute_index_ranges_weights"
    elif mode in ("nearest", "nearest-exact"):
        kernel = None if uint8 else ("upsample_nearest2d_channels_last" if x.ndim == 4
                                     else "compute_indices_weights_nearest")
    elif mode in ("bilinear", "bicubic"):
        kernel = None if uint8 else ("upsample_bilinear2d_channels_last" if mode == "bilinear"
                                     else "compute_indices_weights_cubic")
    elif mode == "area":
        kernel = "adaptive_avg_pool3d_cpu" if x.ndim == 5 else "adaptive_avg_pool2d"
    else:  # linear, trilinear
        kernel = "compute_indices_weights_linear"
    if kernel is not None:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_TORCH_DTYPE_WORDS.get(x._data.dtype.name, x._data.dtype.name)}'")
    if antialias or mode not in ("nearest", "nearest-exact"):
        raise NotImplementedError(f"tapegrad: interpolate mode '{mode}'{' with antialias' if antialias else ''} on uint8 "
                                  f"input is not supported (nearest and nearest-exact are; convert to float32 for "
                                  f"{mode})")


def _resample(x, nd, output_size, scale_factors, mode, align_corners):
    spatial = tuple(x.shape[2:])
    if output_size is None:  # torch's compute_output_size: the product truncated
        output_size = [int(n * f) for n, f in zip(spatial, scale_factors)]
    scales = scale_factors or [None] * nd
    if builtins.min(output_size) <= 0 or builtins.min(spatial) <= 0:
        names = ("W",) if nd == 1 else ("H", "W")
        ins = ", ".join(f"{n}: {v}" for n, v in zip(names, spatial))
        outs = ", ".join(f"{n}: {v}" for n, v in zip(names, output_size))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({ins}) output ({outs})")
    N, C = x.shape[:2]
    xs4 = (N, C) + ((1,) + spatial if nd == 1 else spatial)
    os4 = (N, C) + ((1,) + tuple(output_size) if nd == 1 else tuple(output_size))
    oshape = (N, C) + tuple(output_size)
    xd = x._data
    if mode in ("nearest", "nearest-exact"):
        exact = mode == "nearest-exact"
        ih = _nearest_index(xs4[2], os4[2], scales[0] if nd == 2 else None, exact) if nd == 2 else np.zeros(1, int)
        iw = _nearest_index(xs4[3], os4[3], scales[-1], exact)
        ctx = Ctx(ih=ih, iw=iw, xshape4=xs4, oshape4=os4)
        value = _nearest_take(ctx, xd.reshape(xs4)).reshape(oshape)
        name = f"{'_upsample_nearest_exact' if exact else 'upsample_nearest'}{nd}d"
        return _record(OPS[name], value, (x,), aux=ctx)
    if xd.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"tapegrad: interpolate mode '{mode}' on {xd.dtype} input is not supported (float32 "
                                  f"and float64 are)")
    dt = xd.dtype
    mh = _linear_matrix(xs4[2], os4[2], scales[0], align_corners, dt) if nd == 2 else None
    mw = _linear_matrix(xs4[3], os4[3], scales[-1], align_corners, dt)
    ctx = Ctx(nd=nd, mh=mh, mw=mw, oshape4=os4)
    value = _linear_apply(ctx, xd.reshape(xs4).astype(dt, copy=False)).reshape(oshape)
    return _record(OPS["upsample_linear1d" if nd == 1 else "upsample_bilinear2d"], value, (x,), aux=ctx)


def _resample_separable(x, nd, output_size, scale_factors, mode, align_corners, antialias):
    spatial = tuple(x.shape[2:])
    if output_size is None:
        output_size = [int(n * f) for n, f in zip(spatial, scale_factors)]
    scales = scale_factors or [None] * nd
    if builtins.min(output_size) <= 0 or builtins.min(spatial) <= 0:
        names = ("H", "W") if nd == 2 else ("D", "H", "W")
        ins = ", ".join(f"{n}: {v}" for n, v in zip(names, spatial))
        outs = ", ".join(f"{n}: {v}" for n, v in zip(names, output_size))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({ins}) output ({outs})")
    xd = x._data
    if xd.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"tapegrad: interpolate mode '{mode}' on {xd.dtype} input is not supported (float32 "
                                  f"and float64 are)")
    dt = xd.dtype
    if antialias:
        mats = [_aa_matrix(n, o, s, align_corners, dt, mode) for n, o, s in zip(spatial, output_size, scales)]
        name = f"_upsample_{mode}2d_aa"
    elif mode == "area":  # (5-D: adaptive average pooling, separable as the 2-d one)
        mats = [_adaptive_matrix(n, o, dt) for n, o in zip(spatial, output_size)]
        name = "adaptive_avg_pool3d"
    elif mode == "bicubic":
        mats = [_cubic_matrix(n, o, s, align_corners, dt) for n, o, s in zip(spatial, output_size, scales)]
        name = "upsample_bicubic2d"
    else:
        mats = [_linear_matrix(n, o, s, align_corners, dt) for n, o, s in zip(spatial, output_size, scales)]
        name = "upsample_trilinear3d"
    oshape = tuple(x.shape[:2]) + tuple(output_size)
    ctx = Ctx(mats=mats, xshape=tuple(x.shape), oshape=oshape)
    return _record(OPS[name], _separable_apply(mats, xd), (x,), aux=ctx)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- adaptive max pooling: max pooling's backward, windows of torch's adaptive bounds --------------------------------
def _adaptive_max_planes(ctx, xd):
    """The pooled values (N * C, oh, ow) and their flat positions in each plane (ctx.local, which the backward and
    the indices read)."""
    (H, W), (oh, ow) = ctx.hw, ctx.out_hw
    value = np.empty((ctx.planes, oh, ow), _as_float(xd[:0]).dtype)
    local = np.empty((ctx.planes, oh, ow), np.int64)
    _pool_kernels().adaptive_max_pool2d_planes(np.asanyarray(_as_float(xd), order="C").reshape(ctx.planes, H, W), value,
                                               local)
    ctx.local = local
    return value.astype(xd.dtype, copy=False)


registry.python("adaptive_max_pool", "AdaptiveMaxPool2DBackward0", _adaptive_max_planes, _vjp_max_pool,
                array_vjp=_max_pool_arrays)


def _adaptive_max(nd, input, output_size):
    x = _tensor(input)
    if nd == 1:
        if x.ndim not in (2, 3):
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 "
                               f"'self' (while checking arguments for adaptive_max_pool1d)")
        o = (1, _one_output_size("adaptive_max_pool1d", output_size))
    else:
        if isinstance(output_size, (tuple, list)) and x.ndim <= len(output_size):  # (F's _list_with_default)
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        if x.ndim not in (3, 4):
            raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(x.shape)}")
        o = output_size if isinstance(output_size, (tuple, list)) else (output_size, output_size)
        if len(o) != 2:
            raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    name = f"adaptive_max_pool{nd}d"
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, "
                               f"but input has sizes {list(x.shape)} with dimension {i} being empty")
    shape = tuple(x.shape) if x.ndim == nd + 2 else (1,) + tuple(x.shape)
    xs4 = shape[:2] + (1,) + shape[2:] if nd == 1 else shape
    N, C, H, W = xs4
    oh, ow = (H if o[0] is None else int(o[0])), (W if o[1] is None else int(o[1]))
    oshape = (N, C, oh, ow) if x.ndim == nd + 2 else (C, oh, ow)
    if oh < 0 or ow < 0:  # (torch's message: the output's shape, a 1-d pool's with its height of 1)
        raise RuntimeError(f"Trying to create tensor with negative dimension {oh if oh < 0 else ow}: {list(oshape)}")
    if not _dtype.is_float(x._data.dtype):
        raise NotImplementedError(f"\"adaptive_max_pool2d\" not implemented for "
                                  f"'{_dtype.scalar_type_name(x._data.dtype)}'")
    ctx = Ctx(planes=N * C, plane=H * W, out_hw=(oh, ow), hw=(H, W))
    value = _adaptive_max_planes(ctx, x._data)
    if nd == 1:  # the 2-d row on x.unsqueeze(-2), then squeezed, as torch (its grad_fn: SqueezeBackward1)
        x = x.unsqueeze(-2)
    row = _record(OPS["adaptive_max_pool"], value.reshape(oshape), (x,), aux=ctx)

    def indices(_):  # (tapegrad.compile: a row that a replay reads from the pooling row's context)
        local = ctx.local.reshape(oshape)
        return local.squeeze(-2) if nd == 1 else local
    out = row.squeeze(-2) if nd == 1 else row
    return out, traced_value(_new(indices(None)), indices, row)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(2, input, output_size)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(1, input, output_size)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out, idx = _adaptive_max(2, input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out, idx = _adaptive_max(1, input, output_size)
    return (out, idx) if return_indices else out


# -- max unpooling: a scatter to the saved indices, whose adjoint gathers from them ---------------------------------
def _vjp_unpool(ctx, g, inputs, out):
    """g gathered at the indices."""
    return (_gather(g, ctx.flat),)


registry.python("max_unpool", "MaxUnpool2DBackward0", None, _vjp_unpool,
                array_vjp=lambda ctx, g, inputs, out, wanted: (np.asanyarray(g).reshape(-1)[ctx.flat],),
                unreplayable="it reads its indices, which are not one of its inputs, and a replay cannot rebind them")


def _unpool_output_size(x, kernel_size, stride, padding, output_size):
    """torch's (nn.functional._unpool_output_size)."""
    input_size = tuple(x.shape)
    n = len(kernel_size)
    default_size = [(input_size[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default_size
    output_size = list(output_size) if not isinstance(output_size, tuple) else output_size
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a length "
                         f"of '{len(output_size)}'")
    for d in range(n):
        min_size, max_size = default_size[d] - stride[d], default_size[d] + stride[d]
        if not (min_size < output_size[d] < max_size):
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {min_size} and '
                             f'{max_size})')
    return output_size


def _max_unpool(nd, input, indices, kernel_size, stride, padding, output_size):
    x, idx = _tensor(input), _tensor(indices)
    one = (lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,)) if nd == 1 else _two
    k = one(kernel_size)
    s = one(stride) if stride is not None else k
    p = one(padding)
    size = [int(v) for v in _unpool_output_size(x, k, s, p, output_size)]
    if nd == 1:
        size = size + [1]  # (torch's 1-d unpool is the 2-d one on (N, C, L, 1))
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with "
                           f"{x.ndim + (nd == 1)} dimensions.")
    if idx._data.dtype != np.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{_dtype.scalar_type_name(idx._data.dtype)}")
    if tuple(idx.shape) != tuple(x.shape):
        shown = (lambda t: list(t.shape) + [1]) if nd == 1 else (lambda t: list(t.shape))
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({shown(x)}) but got "
                           f"indices tensor with shape: {shown(idx)}")
    oh, ow = size
    plane = oh * ow
    flat_local = idx._data.reshape(-1)
    bad = (flat_local < 0) | (flat_local >= plane)
    if bad.any():
        raise RuntimeError(f"Found an invalid max index: {int(flat_local[np.argmax(bad)])} (output volumes are of "
                           f"size {oh}x{ow})")
    batched = x.ndim == nd + 2
    N, C = (x.shape[0], x.shape[1]) if batched else (1, x.shape[0])
    per_plane = flat_local.size // builtins.max(N * C, 1)
    flat = (flat_local.reshape(N * C, per_plane) + (np.arange(N * C, dtype=np.int64) * plane).reshape(-1, 1))
    flat = flat.reshape(-1)
    out = np.zeros(N * C * plane, x._data.dtype)
    out[flat] = x._data.reshape(-1)
    oshape = (N, C) + ((oh, ow) if nd == 2 else (1, oh))
    if not batched:
        oshape = oshape[1:]
    if nd == 1:  # the 2-d row on x.unsqueeze(-2), then squeezed, as torch (its grad_fn: SqueezeBackward1)
        x = x.unsqueeze(-2)
    out = _record(OPS["max_unpool"], out.reshape(oshape), (x,), aux=Ctx(flat=flat.reshape(x.shape)))
    return out.squeeze(-2) if nd == 1 else out


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


# -- torch.grid_sampler (aten's grid_sample: the mode and padding as enums, align_corners required) ------------------
_GRID_MODES, _GRID_PADDINGS = ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection")


def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, dims=None):
    x, g = _tensor(input), _tensor(grid)
    if dims is not None and (x.ndim != dims or g.ndim != dims):
        raise RuntimeError(f"grid_sampler(): expected {dims}D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(x.shape)} and grid with sizes {list(g.shape)}")
    if not 0 <= int(interpolation_mode) < 3 or not 0 <= int(padding_mode) < 3:
        raise RuntimeError(f"grid_sampler(): interpolation_mode {interpolation_mode} or padding_mode {padding_mode} "
                           f"is not one of aten's (0, 1, 2)")
    return grid_sample(x, g, _GRID_MODES[int(interpolation_mode)], _GRID_PADDINGS[int(padding_mode)],
                       bool(align_corners))


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler: F.grid_sample with aten's enums (mode 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros,
    1 border, 2 reflection)."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_2d: grid_sampler of a 4-D input."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 4)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_3d: grid_sampler of a 5-D input."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 5)
