"""3-d pooling (max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d, max_unpool3d), power-average
pooling (lp_pool1d/2d/3d) and local response normalization: torch.nn.functional's, with torch's checks and messages.

Max pooling selects: its values are NumPy's strided windows of the padded volume, reduced with torch's CPU
kernel's order (the first maximum wins, a NaN wins over numbers and the last NaN over earlier ones), its indices
flat positions in each unpadded D*H*W volume; its adjoint scatter-adds to them (max pooling's row rules, shared
with max_pool2d), so its double backward is a gather of the tangent at the indices, as torch's. Average pools are
separable: one row of a matmul with a constant (out, in) matrix per spatial axis each way (resample's rules), so
they are linear at every order. lp_pool and local_response_norm are torch's own compositions of those.
"""
import builtins
import math
import numbers

import numpy as np

from .. import _dtype, registry
from ..tensor import _new
from ..tape import traced_value
from ._common import OPS, _record, _tensor
from ..creation import rand, zeros_like
from . import elementwise
from .conv import (Ctx, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d, windows_confined, _adaptive_matrix, _avg_matrix,
                   _max_pool_arrays, _out_size, _vjp_max_pool)
from .padding import pad
from .shape import gather
from .resample import adaptive_max_pool1d_with_indices, _separable_apply, _unpool_output_size, _vjp_separable, _vjp_unpool

# torch.X has these (the rest are torch.nn.functional's only)
__all__ = ["max_pool3d", "adaptive_max_pool1d"]
INPLACE = ()


def _three(v, fn, what, words):
    """An int or a sequence of 1 or 3 ints, as torch's 3-d pools parse them (their own message otherwise)."""
    if isinstance(v, (tuple, list)):
        if len(v) not in (1, 3):
            raise RuntimeError(f"{fn}: {what} must {words}")
        v = tuple(int(a) for a in v)
        return v * 3 if len(v) == 1 else v
    return (int(v),) * 3


def _pool3d_args(fn, x, kernel_size, stride, padding, dilation):
    """torch's max_pool3d / avg_pool3d argument checks, in torch's order (the input's rank after the arguments'
    lengths, before their values)."""
    either = "either " if fn == "max_pool3d" else ""
    k = _three(kernel_size, fn, "kernel_size", f"{either}be a single int, or a tuple of three ints")
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        s = k
    else:
        s = _three(stride, fn, "stride", f"{either}be omitted, a single int, or a tuple of three ints")
    p = _three(padding, fn, "padding", f"{either}be a single int, or a tuple of three ints")
    d = _three(dilation, fn, "dilation", "be either a single int, or a tuple of three ints")
    if x.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if 0 in s:
        raise RuntimeError("stride should not be zero")
    for pp in p:
        if pp < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {pp}")
    for pp, kk, dd in zip(p, k, d):
        if pp > int(((kk - 1) * dd + 1) / 2):  # (C++'s division, toward zero, before the kernel's own check)
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={dd}")
    if builtins.min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {k[0]} kH: {k[1]} kW: {k[2]}")
    if builtins.min(s) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} dW: {s[2]}")
    if builtins.min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {d[0]} dilationH: {d[1]} "
                           f"dilationW: {d[2]}")
    return k, s, p, d


def _volume(x, fn):
    """(N, C, D, H, W) of a 4-d (unbatched) or 5-d input, with torch's messages."""
    if x.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if 0 in x.shape[x.ndim - 4:]:  # (torch's message names dimension 0 whichever it is)
        raise RuntimeError(f"{fn}: Expected input's non-batch dimensions to have positive length, but input has "
                           f"a shape of {list(x.shape)} and non-batch dimension 0 has length zero!")
    return tuple(x.shape) if x.ndim == 5 else (1,) + tuple(x.shape)


def _too_small(C, sizes, outs):
    raise RuntimeError(f"Given input size: ({C}x{'x'.join(map(str, sizes))}). Calculated output size: "
                       f"({C}x{'x'.join(map(str, outs))}). Output size is too small")


# -- max pooling: strided windows, torch's selection order ---------------------------------------------------------
def _lowest(dt):
    return -np.inf if _dtype.is_float(dt) else np.iinfo(dt).min


def _choose(win, first_valid):
    """Positions along the last axis of win (..., K) torch's max pooling picks: the first maximum; where there is a
    NaN the last NaN; where the maximum is the lowest value (-inf), the window's first element (first_valid)."""
    pos = np.argmax(win, axis=-1)
    if _dtype.is_float(win.dtype):
        nan = np.isnan(win)
        has_nan = nan.any(axis=-1)
        if has_nan.any():
            pos = np.where(has_nan, win.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1), pos)
    best = np.take_along_axis(win, pos[..., None], -1)[..., 0]
    return np.where(best == _lowest(win.dtype), first_valid, pos)


def _max_pool3d_planes(ctx, xd):
    """The maxima (N * C, od, oh, ow) in x's dtype; torch's indices kept in ctx.local (flat in each volume). One
    strided slice of the padded volume per kernel offset, in torch's loop order: an element replaces the best so
    far when it is greater or NaN; a window with none keeps its first in-bounds position, as torch's kernel."""
    D, H, W = ctx.dhw
    k, s, p, d, outs = ctx.k, ctx.s, ctx.p, ctx.d, ctx.outs
    a = np.asanyarray(xd, order="C").reshape(ctx.planes, D, H, W)
    if a.dtype.kind not in "fiu" or a.dtype.itemsize < 4 and a.dtype.kind == "f":  # (bfloat16, float16)
        a = a.astype(np.float32)
    eff = tuple((k[i] - 1) * d[i] + 1 for i in range(3))
    # padded by p before, and after by enough for every window (ceil_mode's last one may reach past p)
    after = tuple(builtins.max(p[i], (outs[i] - 1) * s[i] + eff[i] - p[i] - (D, H, W)[i]) for i in range(3))
    widths = ((0, 0),) + tuple((p[i], after[i]) for i in range(3))
    low = _lowest(a.dtype)
    xp = np.pad(a, widths, constant_values=low)
    ip = np.pad(np.arange(D * H * W, dtype=np.int64).reshape(D, H, W), widths[1:], constant_values=-1)
    best = np.full((ctx.planes,) + outs, low, a.dtype)
    local = np.full((ctx.planes,) + outs, -1, np.int64)
    first = np.full(outs, -1, np.int64)
    for offset in np.ndindex(*k):
        sl = tuple(slice(offset[i] * d[i], offset[i] * d[i] + (outs[i] - 1) * s[i] + 1, s[i]) for i in range(3))
        val, at = xp[(slice(None),) + sl], ip[sl]
        first = np.where((first < 0) & (at >= 0), at, first)
        take = val > best
        if _dtype.is_float(a.dtype):
            take |= np.isnan(val)
        best = np.where(take, val, best)
        local = np.where(take, at, local)
    ctx.local = np.asanyarray(np.where(local < 0, first, local), order="C")
    return np.asanyarray(best, order="C").astype(xd.dtype, copy=False)


def _max_pool3d_forward(ctx, xd):
    return _max_pool3d_planes(ctx, xd).reshape(ctx.oshape)


registry.python("max_pool3d", "MaxPool3DWithIndicesBackward0", _max_pool3d_forward, _vjp_max_pool,
                array_vjp=_max_pool_arrays)


def _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode):
    x = _tensor(input)
    k, s, p, d = _pool3d_args("max_pool3d", x, kernel_size, stride, padding, dilation)
    N, C, D, H, W = _volume(x, "max_pool3d_with_indices_out_cpu_template()")
    if x._data.dtype == np.bool_:
        raise NotImplementedError("\"max_pool3d\" not implemented for 'Bool'")
    outs = tuple(_out_size((D, H, W)[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3))
    if builtins.min(outs) <= 0:
        _too_small(C, (D, H, W), outs)
    oshape = ((N,) if x.ndim == 5 else ()) + (C,) + outs
    ctx = Ctx(planes=N * C, plane=D * H * W, dhw=(D, H, W), k=k, s=s, p=p, d=d, outs=outs, oshape=oshape)
    out = _record(OPS["max_pool3d"], _max_pool3d_forward(ctx, x._data), (x,), aux=ctx)
    indices = traced_value(_new(ctx.local.reshape(oshape)), lambda _: ctx.local.reshape(oshape), out)
    return out, indices


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """torch.nn.functional.max_pool3d_with_indices: (values, int64 flat indices into each D*H*W volume)."""
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool3d (and torch.max_pool3d)."""
    out, idx = _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


# -- average pooling: separable, one constant matrix per axis -------------------------------------------------------
def _pooled(mats, x, transpose=False):
    """_separable_apply, with NaN and inf reaching only the windows holding them (conv.windows_confined)."""
    return windows_confined(lambda a, ms: _separable_apply(ms, a, transpose), x, mats)


def _separable3d_forward(ctx, xd):
    return np.ascontiguousarray(_pooled(ctx.mats, xd.reshape(ctx.xshape))).reshape(ctx.out_shape)


def _separable3d_arrays(ctx, g, inputs, out, wanted):
    gx = _pooled(ctx.mats, np.asanyarray(g).reshape(ctx.oshape), True)
    return (np.ascontiguousarray(gx).reshape(inputs[0].shape),)


registry.python("avg_pool3d", "AvgPool3DBackward0", _separable3d_forward, _vjp_separable,
                array_vjp=_separable3d_arrays)


def _int_average(ctx, xd, divisors):
    """An integer input's average, as torch's kernel computes it: the exact sum over the divisor, truncated."""
    sums = _separable_apply([(m != 0).astype(np.int64) for m in ctx.mats], xd.reshape(ctx.xshape).astype(np.int64))
    q = np.abs(sums) // np.abs(divisors)  # (C's division: truncated toward zero, a negative divisor_override too)
    return (np.sign(sums) * np.sign(divisors) * q).astype(xd.dtype).reshape(ctx.out_shape)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool3d (and torch.avg_pool3d)."""
    x = _tensor(input)
    k, s, p, _ = _pool3d_args("avg_pool3d", x, kernel_size, stride, padding, 1)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    N, C, D, H, W = _volume(x, "avg_pool3d()")
    sizes = (D, H, W)
    if any(sizes[i] < k[i] for i in range(3)):
        raise RuntimeError(f"input image (T: {D} H: {H} W: {W}) smaller than kernel size (kT: {k[0]} kH: {k[1]} "
                           f"kW: {k[2]})")
    outs = tuple(_out_size(sizes[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(3))
    if builtins.min(outs) <= 0:
        _too_small(C, sizes, outs)
    xd = x._data
    dt = xd.dtype
    if dt not in (np.float32, np.float64, np.int64):
        raise NotImplementedError(f"\"avg_pool3d_out_frame\" not implemented for '{_dtype.scalar_type_name(dt)}'")
    mdt = dt if _dtype.is_float(dt) else np.dtype(np.float64)
    mats = [_avg_matrix(sizes[i], k[i], s[i], p[i], outs[i], ceil_mode, count_include_pad, divisor_override, mdt)
            for i in range(3)]
    out_shape = ((N,) if x.ndim == 5 else ()) + (C,) + outs
    ctx = Ctx(mats=mats, xshape=(N, C) + sizes, oshape=(N, C) + outs, out_shape=out_shape)
    if not _dtype.is_float(dt):  # (no gradient: an integer input's average is a plain value)
        if divisor_override is not None:
            div = np.int64(divisor_override)
        else:
            per_axis = [np.rint(1.0 / m.max(axis=1)).astype(np.int64) for m in mats]
            div = per_axis[0][:, None, None] * per_axis[1][None, :, None] * per_axis[2][None, None, :]
        return _new(_int_average(ctx, xd, div))
    if divisor_override is not None:
        ctx.mats[0] = ctx.mats[0] / dt.type(divisor_override)
    return _record(OPS["avg_pool3d"], _separable3d_forward(ctx, xd), (x,), aux=ctx)


def _output_size3(output_size, x, message):
    """torch's _list_with_default (its ValueError), then the C++ length check; None: the input's size there."""
    if isinstance(output_size, (tuple, list)):
        if x.ndim <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        o = output_size
    else:
        o = (output_size,) * 3
    if len(o) != 3:
        raise RuntimeError(message)
    return tuple(int(x.shape[x.ndim - 3 + i]) if o[i] is None else int(o[i]) for i in range(3))


def _adaptive_input(x, fn, colon):
    if x.ndim not in (4, 5):
        raise RuntimeError(f"{fn}(): Expected 4D or 5D tensor, but got{colon} {list(x.shape)}")
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               f"sizes {list(x.shape)} with dimension {i} being empty")
    return tuple(x.shape) if x.ndim == 5 else (1,) + tuple(x.shape)


def adaptive_avg_pool3d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool3d (and torch.adaptive_avg_pool3d)."""
    x = _tensor(input)
    outs = _output_size3(output_size, x, "adaptive_avg_pool3d: output_size must be 3")
    if builtins.min(outs) < 0:
        raise RuntimeError(f"adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but "
                           f"received {{{outs[0]}, {outs[1]},{outs[2]}}}")
    N, C, D, H, W = _adaptive_input(x, "adaptive_avg_pool3d", "")
    xd = x._data
    if not _dtype.is_float(xd.dtype):
        raise NotImplementedError(f"\"adaptive_avg_pool3d_cpu\" not implemented for "
                                  f"'{_dtype.scalar_type_name(xd.dtype)}'")
    if outs == (1, 1, 1):  # (torch's special case: a mean)
        return x.mean(dim=(-3, -2, -1), keepdim=True)
    mats = [_adaptive_matrix(n, o, xd.dtype) for n, o in zip((D, H, W), outs)]
    out_shape = ((N,) if x.ndim == 5 else ()) + (C,) + outs
    # (the row's rules work on (N, C, D, H, W) and reshape to its input's and output's shapes)
    ctx = Ctx(mats=mats, xshape=(N, C, D, H, W), oshape=(N, C) + outs)
    value = np.asanyarray(_separable_apply(mats, xd.reshape(ctx.xshape)), order="C").reshape(out_shape)
    return _record(OPS["adaptive_avg_pool3d"], value, (x,), aux=ctx)


# -- adaptive max pooling: torch's adaptive windows, max pooling's selection and rules -----------------------------
def _bounds(n, o):
    return [((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]


def _adaptive_max3d_planes(ctx, xd):
    D, H, W = ctx.dhw
    a = np.asanyarray(xd, order="C").reshape(ctx.planes, D, H, W)
    if str(a.dtype) == "bfloat16" or a.dtype == np.float16:
        a = a.astype(np.float32)
    idx = np.arange(D * H * W, dtype=np.int64).reshape(D, H, W)
    od, oh, ow = ctx.outs
    value = np.empty((ctx.planes, od, oh, ow), a.dtype)
    local = np.empty((ctx.planes, od, oh, ow), np.int64)
    for i, (d0, d1) in enumerate(_bounds(D, od)):
        for j, (h0, h1) in enumerate(_bounds(H, oh)):
            for m, (w0, w1) in enumerate(_bounds(W, ow)):
                win = a[:, d0:d1, h0:h1, w0:w1].reshape(ctx.planes, -1)
                pos = _choose(win, 0)
                value[:, i, j, m] = win[np.arange(ctx.planes), pos]
                local[:, i, j, m] = idx[d0:d1, h0:h1, w0:w1].reshape(-1)[pos]
    ctx.local = local
    return value.astype(xd.dtype, copy=False).reshape(ctx.oshape)


registry.python("adaptive_max_pool3d", "AdaptiveMaxPool3DBackward0", _adaptive_max3d_planes, _vjp_max_pool,
                array_vjp=_max_pool_arrays)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool3d_with_indices."""
    x = _tensor(input)
    if isinstance(output_size, (tuple, list)) and x.ndim <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
    N, C, D, H, W = _adaptive_input(x, "adaptive_max_pool3d", ":")
    outs = _output_size3(output_size, x, "adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    oshape = ((N,) if x.ndim == 5 else ()) + (C,) + outs
    if builtins.min(outs) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(outs)}: "
                           f"{list(oshape)}")
    if x._data.dtype.kind not in "fV":  # (bfloat16's kind is V)
        raise NotImplementedError(f"\"adaptive_max_pool3d_cpu\" not implemented for "
                                  f"'{_dtype.scalar_type_name(x._data.dtype)}'")
    ctx = Ctx(planes=N * C, plane=D * H * W, dhw=(D, H, W), outs=outs, oshape=oshape)
    out = _record(OPS["adaptive_max_pool3d"], _adaptive_max3d_planes(ctx, x._data), (x,), aux=ctx)
    return out, traced_value(_new(ctx.local.reshape(oshape)), lambda _: ctx.local.reshape(oshape), out)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool3d."""
    out, idx = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """torch.adaptive_max_pool1d: always (values, indices), as torch's top-level function."""
    return adaptive_max_pool1d_with_indices(input, output_size)


# -- max unpooling: a scatter to the indices, whose adjoint gathers from them ---------------------------------------
registry.python("max_unpool3d", "MaxUnpool3DBackward0", None, _vjp_unpool,
                array_vjp=lambda ctx, g, inputs, out, wanted: (np.asanyarray(g).reshape(-1)[ctx.flat],),
                unreplayable="it reads its indices, which are not one of its inputs, and a replay cannot rebind them")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool3d."""
    x, idx = _tensor(input), _tensor(indices)
    k = _three(kernel_size, "max_unpool3d", "kernel_size", "be a single int, or a tuple of three ints")
    s = k if stride is None else _three(stride, "max_unpool3d", "stride", "be a single int, or a tuple of three ints")
    p = _three(padding, "max_unpool3d", "padding", "be a single int, or a tuple of three ints")
    size = [int(v) for v in _unpool_output_size(x, k, s, p, output_size)]
    if idx._data.dtype != np.int64:
        raise RuntimeError("elements in indices should be type int64")
    if x.ndim not in (4, 5):
        raise RuntimeError(f"Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with {x.ndim} "
                           f"dimensions.")
    if tuple(idx.shape) != tuple(x.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(x.shape)}) but "
                           f"got indices tensor with shape: {list(idx.shape)}")
    volume = math.prod(size)
    flat_local = idx._data.reshape(-1)
    bad = (flat_local < 0) | (flat_local >= volume)
    if bad.any():
        last = flat_local.size - 1 - int(np.argmax(bad[::-1]))  # (torch's loop keeps the last it meets)
        raise RuntimeError(f"Found an invalid max index: {int(flat_local[last])} (output volumes are of "
                           f"size {size[0]}x{size[1]}x{size[2]})")
    batched = x.ndim == 5
    N, C = (x.shape[0], x.shape[1]) if batched else (1, x.shape[0])
    per = flat_local.size // builtins.max(N * C, 1)
    flat = (flat_local.reshape(N * C, per) + (np.arange(N * C, dtype=np.int64) * volume).reshape(-1, 1)).reshape(-1)
    out = np.zeros(N * C * volume, x._data.dtype)
    out[flat] = x._data.reshape(-1)
    oshape = ((N,) if batched else ()) + (C,) + tuple(size)
    return _record(OPS["max_unpool3d"], out.reshape(oshape), (x,), aux=Ctx(flat=flat.reshape(x.shape)))


# -- power-average pooling and local response normalization: torch's compositions ----------------------------------
def _lp_pool(nd, input, norm_type, kernel_size, stride, ceil_mode):
    max_pool = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}[nd]
    avg_pool = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[nd]
    if nd == 1:
        scale = kernel_size
    else:
        ks = kernel_size if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * nd
        if len(ks) != nd:  # (torch unpacks _pair / _triple of it)
            raise ValueError(f"too many values to unpack (expected {nd})" if len(ks) > nd else
                             f"not enough values to unpack (expected {nd}, got {len(ks)})")
        scale = math.prod(ks)
    x = _tensor(input)
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool(x.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool(-x.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool(x.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool(x.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    # torch's relu backward selects, so a zero window's inf * 0 gives 0, not NaN (threshold's does too); its sign
    # passes no gradient at all (here detached: its zero derivative times an inf would be NaN)
    magnitude = elementwise.abs(out)
    relu = elementwise.where(magnitude <= 0.0, zeros_like(magnitude), magnitude)  # (F.threshold(x, 0, 0): NaN passes)
    return (elementwise.sign(out.detach()) * relu).mul(scale).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool1d: torch's composition (avg_pool1d of x^p, its sign times relu of its
    magnitude, times the kernel size, to the 1/p)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool2d (torch's composition, as lp_pool1d)."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool3d (torch's composition, as lp_pool1d)."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """torch.nn.functional.local_response_norm: torch's composition (the squares zero-padded across channels,
    averaged by avg_pool2d / avg_pool3d with stride 1, then input / (k + alpha * avg) ** beta)."""
    x = _tensor(input)
    dim = x.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)")
    if x.numel() == 0:
        return input
    div = x.mul(x)
    if dim == 3:
        div = div.unsqueeze(1)
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        if _dtype.is_float(x._data.dtype):
            div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
        else:  # (avg_pool3d's integer average: truncated, as torch's)
            div = avg_pool3d(div.unsqueeze(-1), (size, 1, 1), stride=1).squeeze(-1).squeeze(1)
    else:
        sizes = tuple(x.shape)
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return x / div


# -- fractional max pooling ----------------------------------------------------------------------------------------
_FRACTIONAL_WORDS = {2: ("2d", "fractional_max_pool2d()", ("height", "width"), "Ints"),
                     3: ("3d", "fractional_max_pool3d_out()", ("time", "height", "width"), "three Ints")}


def _intervals(sample, size, out, pool, dt):
    """torch's generate_intervals: each window's start along one dim, from one uniform sample, in the input's
    dtype as torch's kernel computes them (alpha = (size - pool) / (out - 1); the last window ends at the edge)."""
    seq = np.zeros(out, np.int64)
    if out > 1:
        alpha = dt.type(size - pool) / dt.type(out - 1)
        i = np.arange(out - 1).astype(dt)
        seq[:-1] = ((i + sample) * alpha).astype(np.int64) - np.int64((sample * alpha).astype(np.int64))
    if out > 0:
        seq[-1] = size - pool
    return seq


def _fractional_max_pool(nd, input, kernel_size, output_size, output_ratio, _random_samples):
    """fractional_max_pool2d / 3d with their indices: each plane's windows start at torch's intervals drawn from
    that plane's samples (uniform, one per dim: torch.rand(N, C, nd) in the input's dtype where none are given,
    the same draw as torch's), the first maximum of each window (a NaN wins, the last NaN over earlier ones), as
    torch's CPU kernel. The values are a gather of the input at the indices, so their gradient is torch's."""
    x = _tensor(input)
    tag, fn, dims, words = _FRACTIONAL_WORDS[nd]
    name = f"fractional_max_pool{tag}"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if nd == 2:
            if len(output_ratio) > 2:  # (torch's len(): a float ratio raises its TypeError, as in torch)
                raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
            ratio = tuple(output_ratio) * (2 if len(output_ratio) == 1 else 1)
        else:
            ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * 3
            ratio = ratio * 3 if len(ratio) == 1 else ratio
        if x.ndim < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-builtins.max(x.ndim, 1)}, "
                             f"{builtins.max(x.ndim, 1) - 1}], but got {-nd})")
        output_size = [int(x.shape[x.ndim - nd + i] * ratio[i]) for i in range(nd)]
    if _random_samples is None:
        if x.ndim < nd + 1:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-builtins.max(x.ndim, 1)}, "
                             f"{builtins.max(x.ndim, 1) - 1}], but got {-nd - 1})")
        n_batch = 1 if x.ndim == nd + 1 else x.shape[0]
        _random_samples = rand(n_batch, x.shape[-nd - 1], nd, dtype=_dtype.from_numpy_dtype(x._data.dtype))
    samples = _tensor(_random_samples)
    k = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,)
    o = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,)
    if len(k) != nd and not isinstance(kernel_size, numbers.Integral):
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or tuple of {words}")
    if len(o) != nd and not isinstance(output_size, numbers.Integral):
        raise RuntimeError(f"{name}: output_size must either be a single Int or tuple of {words}")
    k, o = tuple(int(v) for v in k * (nd // len(k))), tuple(int(v) for v in o * (nd // len(o)))
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fn}: Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(x.shape)}")
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(f"{fn}: Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{list(x.shape)} with dimension {i} being empty.")
    batched = x.ndim == nd + 2
    N, C = (x.shape[0] if batched else 1), x.shape[-nd - 1]
    sizes = tuple(x.shape[-nd:])
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    if samples.shape[0] < N:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != C:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}.")
    if samples._data.dtype != x._data.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    for i in range(nd):
        if o[i] < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {o[i]}: "
                               f"{([N] if batched else []) + [C] + list(o)}")
        if o[i] + k[i] - 1 > sizes[i] - (nd == 3):  # (torch's 3-d check is strict: < the size, its 2-d one <=)
            raise RuntimeError(f"{fn}: pool {dims[i]} {k[i]} too large relative to input {dims[i]} {sizes[i]}")
    dt = x._data.dtype
    if dt not in (np.float32, np.float64):
        raise NotImplementedError(f"\"{name}_out_frame\" not implemented for '{_dtype.scalar_type_name(dt)}'")
    if builtins.min(k) <= 0:  # (torch's kernel reads no element then, and reports a position that may be past the end)
        raise RuntimeError(f"tapegrad: {name} with a kernel_size of zero is not supported")
    P, plane = N * C, math.prod(sizes)
    oshape = ((N,) if batched else ()) + (C,) + o
    sd = samples._data[:N].reshape(N * C, nd)
    # each plane's window starts along each dim (torch's samples: W first, then H, for 2-d; T, H, W for 3-d)
    order = (1, 0) if nd == 2 else (0, 1, 2)
    starts = [np.stack([_intervals(sd[p, order[i]], sizes[i], o[i], k[i], dt) for p in range(P)]) if P else
              np.zeros((0, o[i]), np.int64) for i in range(nd)]
    strides = [math.prod(sizes[i + 1:]) for i in range(nd)]
    flat = np.asanyarray(x._data, order="C").reshape(P, plane)
    best = np.full((P,) + o, -np.inf, dt)
    local = np.zeros((P,) + o, np.int64)
    for i in range(nd):  # (the window's start: torch's index where no element exceeds -inf)
        local += (starts[i] * strides[i]).reshape((P,) + (1,) * i + (o[i],) + (1,) * (nd - 1 - i))
    base = local.copy()
    rows = np.arange(P).reshape((P,) + (1,) * nd)
    for offset in np.ndindex(*k):  # (torch's loop order: the first maximum wins, NaN over anything)
        at = base + sum(offset[i] * strides[i] for i in range(nd))
        val = flat[rows, at]
        take = (val > best) | np.isnan(val)
        best = np.where(take, val, best)
        local = np.where(take, at, local)
    idx = _new(np.ascontiguousarray(local.reshape(P, math.prod(o))))
    out = gather(x.reshape(P, plane), 1, idx).reshape(oshape)
    return out, _new(np.ascontiguousarray(local.reshape(oshape)))


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """torch.nn.functional.fractional_max_pool2d_with_indices: (values, int64 flat indices into each H*W plane)."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """torch.nn.functional.fractional_max_pool2d."""
    out, idx = _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """torch.nn.functional.fractional_max_pool3d_with_indices: (values, int64 flat indices into each D*H*W volume)."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """torch.nn.functional.fractional_max_pool3d."""
    out, idx = _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return (out, idx) if return_indices else out
