"""Convolution, pooling and normalization: torch.nn.functional's conv1d/2d, max/avg/adaptive pooling, batch_norm,
layer_norm, dropout1d/2d.

Each layer is one tape row (or two matmuls with constant matrices, for the linear pools). A row's plain backward
is its NumPy array rule (im2col + one BLAS matmul each way for convolution); its create_graph rule is written in
tapegrad ops (gather, matmul, scatter_flat), so second order works. Every argument check runs before any kernel,
with torch's message. 1-d ops are the 2-d ones on an (N, C, 1, L) view.
"""
import builtins
import math
import numbers
import warnings

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import _dtype, _meta, creation, kernels, random, registry
from ..tensor import _new
from ..tape import _local as _tape_local, traced_value
from ._common import OPS, _autocast_lower, _record, _tensor, _to_dtype, autocast_state
from .elementwise import mul
from .nn import _dropout_draw
from .._runtime import get_num_threads
from .._warnings import user_stacklevel

# torch.X has these with these signatures; the rest are torch.nn.functional's only (nn/functional.py)
__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool1d", "max_pool2d",
           "max_pool1d_with_indices", "avg_pool1d",
           "adaptive_avg_pool1d", "layer_norm"]


class Ctx:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _pair(v, n, name="value"):
    if isinstance(v, (tuple, list)):
        v = tuple(int(a) for a in v)
        if len(v) == 1:
            v = v * n
        return v
    return (int(v),) * n


# -- windows: the one data-movement helper -------------------------------------------------------------------------
def _out_size(size, k, s, p, d, ceil_mode):
    """torch's pooling output size (pooling_output_shape)."""
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _windows(x4, k, s, d, pads, out_hw, fill=0):
    """The (N, C, oh, ow, kh, kw) strided view of x4 padded by pads (top, bottom, left, right) with `fill`, and
    more at the bottom/right where the last window reaches past it (ceil_mode)."""
    N, C, H, W = x4.shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pb, pl, pr), (oh, ow) = k, s, d, pads, out_hw
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    Hp, Wp = builtins.max(H + pt + pb, (oh - 1) * sh + eh), builtins.max(W + pl + pr, (ow - 1) * sw + ew)
    if (Hp, Wp) != (H, W):
        xp = np.full((N, C, Hp, Wp), fill, x4.dtype)
        xp[:, :, pt:pt + H, pl:pl + W] = x4
    else:
        xp = x4
    win = sliding_window_view(xp, (eh, ew), axis=(2, 3))
    return win[:, :, :(oh - 1) * sh + 1:sh, :(ow - 1) * sw + 1:sw, ::dh, ::dw]


def _col2im(gcols, xshape, k, s, d, pads, out_hw):
    """The adjoint of _windows (fill 0): gcols (N, C, kh, kw, oh, ow) added back onto an x of xshape."""
    N, C, H, W = xshape
    (kh, kw), (sh, sw), (dh, dw), (pt, pb, pl, pr), (oh, ow) = k, s, d, pads, out_hw
    Hp, Wp = builtins.max(H + pt + pb, (oh - 1) * sh + (kh - 1) * dh + 1), \
        builtins.max(W + pl + pr, (ow - 1) * sw + (kw - 1) * dw + 1)
    gxp = np.zeros((N, C, Hp, Wp), gcols.dtype)
    for i in range(kh):
        for j in range(kw):
            gxp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw] += gcols[:, :, i, j]
    return gxp[:, :, pt:pt + H, pl:pl + W]


def _index_windows(xshape, k, s, d, pads, out_hw):
    """_windows of the flat index of every element of x, padding reading index x.numel() (one zero appended)."""
    n = math.prod(xshape)
    return _windows(np.arange(n, dtype=np.int64).reshape(xshape), k, s, d, pads, out_hw, fill=n)


# -- convolution ---------------------------------------------------------------------------------------------------
def _cols(ctx, win):
    """im2col: (G, N*oh*ow, Cg*kh*kw), copied once from the window view."""
    N, C = win.shape[:2]
    G = ctx.groups
    oh, ow, kh, kw = win.shape[2:]
    w7 = win.reshape(N, G, C // G, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6)
    return w7.reshape(G, N * oh * ow, (C // G) * kh * kw)


def _padded(x4, k, s, d, pads, out_hw, fill=0):
    """x4 padded by pads (top, bottom, left, right) with `fill`, and more at the bottom/right where the last window
    reaches past it (ceil_mode)."""
    N, C, H, W = x4.shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pb, pl, pr), (oh, ow) = k, s, d, pads, out_hw
    Hp, Wp = builtins.max(H + pt + pb, (oh - 1) * sh + (kh - 1) * dh + 1), \
        builtins.max(W + pl + pr, (ow - 1) * sw + (kw - 1) * dw + 1)
    if (Hp, Wp) == (H, W):
        return x4
    xp = np.full((N, C, Hp, Wp), fill, x4.dtype)
    xp[:, :, pt:pt + H, pl:pl + W] = x4
    return xp


def _taps(k, s, d, out_hw):
    """The (row, column) slices of the padded input that kernel tap (i, j) reads, tap by tap."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = k, s, d, out_hw
    return [(i, j, slice(i * dh, i * dh + (oh - 1) * sh + 1, sh), slice(j * dw, j * dw + (ow - 1) * sw + 1, sw))
            for i in range(kh) for j in range(kw)]


# im2col columns made at a time: a few samples', reused (not one array for the batch). The backward holds
# two such buffers (the columns and their gradient) on top of the adjoints: at 8 MB, LeNet-5's step peaked
# at 17.3 MB (torch: 8.8-9.5 MB), 8.6 MB of it conv2's two buffers; at 1 MB, BLAS still gets whole samples.
_COLUMN_BYTES = 1 << 20


def _column_chunk(ctx, dt):
    """Samples whose columns fit in _COLUMN_BYTES (at least one)."""
    C = ctx.xshape4[1]
    (kh, kw), (oh, ow) = ctx.k, ctx.out_hw
    return builtins.max(1, _COLUMN_BYTES // builtins.max(1, C * kh * kw * oh * ow * np.dtype(dt).itemsize))


# From this many input channels (and one group) the columns are made as rows, (oh*ow, kh*kw*C) per sample
# (kernels.conv.im2row): OpenBLAS multiplies rows (1,024 x 576) by the weight's transpose in 350 us where it
# took 490 for the weight (64 x 576) by columns, and the weight's gradient g @ rows in 360 where g @ columns'
# transpose took 520 (Conv2d 64->64 3x3 on 32x32, one sample, one thread). A run of fewer channels is too short
# a copy.
_ROW_CHANNELS = 16


def _as_rows(ctx, dt):
    return ctx.groups == 1 and ctx.xshape4[1] >= _ROW_CHANNELS and dt in (np.float32, np.float64)


def _geometry(ctx):
    """The compiled im2col/im2row/col2im kernels' arguments after the array: kernel, stride, dilation, top and
    left padding."""
    return (*ctx.k, *ctx.s, *ctx.d, ctx.pads[0], ctx.pads[2])


def _column_maker(ctx, x4, m, as_rows):
    """One buffer for m samples' columns, and the function that fills it from samples n0:n1 of x4 (C-contiguous)
    and returns it: im2row's rows (n, oh, ow, kh, kw, C) or im2col's columns (n, C, kh, kw, oh, ow)."""
    N, C, H, W = x4.shape
    (kh, kw), (oh, ow) = ctx.k, ctx.out_hw
    k = _conv_kernels()
    geometry = _geometry(ctx)
    if as_rows:
        cols, xhwc = np.empty((m, oh, ow, kh, kw, C), x4.dtype), np.empty((m, H, W, C), x4.dtype)

        def make(n0, n1):
            k.im2row(x4[n0:n1], *geometry, xhwc[:n1 - n0], cols[:n1 - n0])
            return cols[:n1 - n0]
    else:
        cols = np.empty((m, C, kh, kw, oh, ow), x4.dtype)

        def make(n0, n1):
            k.im2col(x4[n0:n1], *geometry, cols[:n1 - n0])
            return cols[:n1 - n0]
    return make


def _by_taps(ctx, dt):
    """Stride 1, one group, fewer output channels than input ones (float32/64): computed kernel tap by kernel tap
    on the padded input, never as im2col columns. Each tap's window of the padded input, flattened, is a strided
    matrix (C, (oh-1)*Wp + ow) that BLAS reads in place; the output is made on the padded width and cropped.
    The columns are C*kh*kw times the output's size, written and read once each way: for a 9x9 kernel from 32
    channels to 3 on 72x72 (fast_neural_style's last layer) 53 MB for one sample, 3.3x torch's forward + backward
    (0.8x by taps). On maps of 8x8 and less the taps' many small products lose (256 -> 128 channels, 3x3 on 8x8,
    batch 2: 6.6 ms against the columns' 4.9; 12x12 and up they win; one thread, benchmarks.layers L7 and L8)."""
    return (ctx.groups == 1 and ctx.s == (1, 1) and ctx.wshape4[0] < ctx.xshape4[1]
            and ctx.out_hw[0] * ctx.out_hw[1] >= _TAPS_MIN_POSITIONS and dt in (np.float32, np.float64))


_TAPS_MIN_POSITIONS = 100


def _tap_windows(ctx, x4):
    """The padded input flattened per channel (N, C, Hp*Wp), the span M each tap reads, and each tap's offset."""
    (kh, kw), (dh, dw), (oh, ow) = ctx.k, ctx.d, ctx.out_hw
    xp = np.ascontiguousarray(_padded(x4, ctx.k, ctx.s, ctx.d, ctx.pads, ctx.out_hw))
    Wp = xp.shape[3]
    offsets = [i * dh * Wp + j * dw for i in range(kh) for j in range(kw)]
    return xp.reshape(xp.shape[0], xp.shape[1], -1), (oh - 1) * Wp + ow, Wp, offsets


def _tap_sums(wt, src, M, offsets, width):
    """(N, O, width): for each sample n, the sum over taps t of wt[t] (O, C) @ src[n, :, off_t:off_t + M] (C, M), the
    columns from M on zero. src (N, C, L) and wt (taps, O, C) C-contiguous, of one dtype. BLAS's gemm adds each tap's
    product into the output in place (beta = 1); NumPy's matmul, where NumPy has no bundled OpenBLAS, makes each
    product apart and adds it: a pass over the output per tap (L8 of benchmarks.layers: forward 4.1 -> 3.5 ms)."""
    N, C, L = src.shape
    O = wt.shape[1]
    out = np.zeros((N, O, width), src.dtype)
    gemm = kernels.module("blas").gemm(src.dtype) if N and C else None
    if gemm is None:
        acc, part = out[:, :, :M], np.empty((N, O, M), src.dtype)
        for t, off in enumerate(offsets):
            acc += np.matmul(wt[t], src[:, :, off:off + M], out=part)
        return out
    # (every address below stays inside its array: these extents are what gemm reads and writes)
    if not (builtins.max(offsets) + M <= L and M <= width and wt.shape == (len(offsets), O, C)
            and wt.dtype == src.dtype and wt.flags.c_contiguous and src.flags.c_contiguous):
        raise AssertionError("tapegrad: convolution taps outside their arrays")
    item, no = src.itemsize, kernels.module("blas").NO_TRANS
    w0, s0, o0 = wt.ctypes.data, src.ctypes.data, out.ctypes.data
    for n in range(N):
        for t, off in enumerate(offsets):
            gemm(no, no, O, M, C, w0 + t * O * C * item, C, s0 + (n * C * L + off) * item, L, 1.0,
                 o0 + n * O * width * item, width)
    return out


def _conv_taps_forward(ctx, x4, w4, b):
    """out = sum over taps of W[:, :, i, j] (O, C) @ the tap's window (C, M), on the padded width (_by_taps)."""
    N, O = x4.shape[0], w4.shape[0]
    (kh, kw), (oh, ow) = ctx.k, ctx.out_hw
    xf, M, Wp, offsets = _tap_windows(ctx, x4)
    wt = np.ascontiguousarray(w4.transpose(2, 3, 0, 1)).reshape(kh * kw, O, -1)
    out = _tap_sums(wt, xf, M, offsets, oh * Wp).reshape(N, O, oh, Wp)[:, :, :, :ow]
    return out + b.reshape(O, 1, 1) if b is not None else np.ascontiguousarray(out)


# The weight's gradient made with g laid at every tap's offset at once, while this buffer is at most this size
_SHIFTED_BYTES = 8 << 20


def _tap_weight_grad(gwide, xf, M, offsets):
    """(taps, O, C): per tap, the sum over samples of g (O, M) @ the tap's window of x (C, M) transposed. Each
    sample's g is laid at every tap's offset in one (taps * O, L) buffer (zeros around), so all taps are one
    product with x's (C, L): a product per tap and sample (O rows, C columns and a long inner dimension, which
    OpenBLAS runs at half speed) took 6.5 ms of L8's 17 where this takes 3.7."""
    N, O, _ = gwide.shape
    C, L = xf.shape[1:]
    T = len(offsets)
    if T * O * L * xf.itemsize > _SHIFTED_BYTES:
        return np.stack([np.matmul(gwide[:, :, :M], xf[:, :, off:off + M].transpose(0, 2, 1)).sum(axis=0)
                         for off in offsets])
    shifted = np.zeros((T, O, L), xf.dtype)
    gw = np.zeros((T * O, C), xf.dtype)
    for n in range(N):
        for t, off in enumerate(offsets):
            shifted[t, :, off:off + M] = gwide[n, :, :M]
        gw += np.matmul(shifted.reshape(T * O, L), xf[n].T)
    return gw.reshape(T, O, C)


def _conv_taps_arrays(ctx, g, x, w, wanted):
    """_by_taps's adjoint. The weight's: per tap, g on the padded width (zeros past ow) against the tap's window
    (_tap_weight_grad). The input's: the stride-1 convolution of g, padded by the kernel's reach, with the flipped,
    transposed weight, by taps too (_tap_sums: im2col's columns of g would be O*kh*kw times x's size)."""
    N, C, H, W = ctx.xshape4
    O = ctx.wshape4[0]
    (kh, kw), (dh, dw), (pt, _, pl, _), (oh, ow) = ctx.k, ctx.d, ctx.pads, ctx.out_hw
    dt = g.dtype
    g4 = g.reshape(N, O, oh, ow)
    gx = gw = None
    if wanted[1]:
        xf, M, Wp, offsets = _tap_windows(ctx, np.ascontiguousarray(x, dt).reshape(ctx.xshape4))
        gwide = np.zeros((N, O, oh, Wp), dt)
        gwide[:, :, :, :ow] = g4
        gw = _tap_weight_grad(gwide.reshape(N, O, -1), xf, M, offsets)
        gw = np.ascontiguousarray(gw.reshape(kh, kw, O, C).transpose(2, 3, 0, 1)).reshape(w.shape)
    if wanted[0]:
        eh, ew = (kh - 1) * dh, (kw - 1) * dw
        Hg, Wg = H + eh, W + ew
        gp = np.zeros((N, O, Hg, Wg), dt)
        top, left = eh - pt, ew - pl  # where g's first row/column lands; negative: cut off
        y0, z0 = builtins.max(0, -top), builtins.max(0, -left)
        y1, z1 = builtins.min(oh, Hg - top), builtins.min(ow, Wg - left)
        gp[:, :, top + y0:top + y1, left + z0:left + z1] = g4[:, :, y0:y1, z0:z1]
        wf = np.ascontiguousarray(w.reshape(ctx.wshape4)[:, :, ::-1, ::-1].transpose(2, 3, 1, 0), dt)
        offsets = [i * dh * Wg + j * dw for i in range(kh) for j in range(kw)]
        gx = _tap_sums(wf.reshape(kh * kw, C, O), gp.reshape(N, O, -1), (H - 1) * Wg + W, offsets, H * Wg)
        gx = np.ascontiguousarray(gx.reshape(N, C, H, Wg)[:, :, :, :W]).reshape(x.shape)
    return gx, gw


def _conv_forward(ctx, x4, w4, b):
    """im2col (one compiled pass, padding read as zeros) into (N, C, kh, kw, oh, ow), then W (G, Og, Cg*kh*kw) @
    columns (G, Cg*kh*kw, oh*ow) per sample: the result is already in torch's (N, O, oh, ow) layout; or, as rows
    (_as_rows), rows (oh*ow, kh*kw*C) @ the weight's transpose, transposed back. float32/64
    make the columns a few samples at a time into one reused buffer and keep none (the backward makes them
    again from x): a batch's columns are kh*kw times x, and a fresh array of that size each step cost more
    in page faults than im2col itself (Conv2d 64->64 3x3 on 32x32, batch 32: 75 MB)."""
    if _meta.is_meta(x4) or _meta.is_meta(w4):  # (the meta device: the output's shape and dtype, as torch's)
        ctx.cols = None
        return _meta.make((x4.shape[0], w4.shape[0]) + tuple(ctx.out_hw), np.result_type(x4.dtype, w4.dtype))
    if _by_taps(ctx, x4.dtype) and w4.dtype == x4.dtype:
        ctx.cols = None
        return _conv_taps_forward(ctx, x4, w4, b)
    N, C = x4.shape[:2]
    O, G = w4.shape[0], ctx.groups
    (kh, kw), (oh, ow) = ctx.k, ctx.out_hw
    wg = w4.reshape(G, O // G, -1)
    if x4.dtype in (np.float32, np.float64):
        x4 = np.asanyarray(x4, order="C")
        chunk = _column_chunk(ctx, x4.dtype)
        as_rows = _as_rows(ctx, x4.dtype) and w4.dtype == x4.dtype
        make = _column_maker(ctx, x4, builtins.min(chunk, N), as_rows)
        if as_rows:
            wk = np.ascontiguousarray(w4.transpose(0, 2, 3, 1)).reshape(O, kh * kw * C)  # (the rows' order)
            out = np.empty((N, O, oh * ow), x4.dtype)
        else:
            out = np.empty((N, G, O // G, oh * ow), np.result_type(x4.dtype, w4.dtype))
        for n0 in range(0, N, chunk):
            n1 = builtins.min(N, n0 + chunk)
            c = make(n0, n1)
            if as_rows:
                out[n0:n1] = np.matmul(c.reshape((n1 - n0) * oh * ow, kh * kw * C), wk.T).reshape(
                    n1 - n0, oh * ow, O).transpose(0, 2, 1)  # (one product for the chunk: a sample's alone is short)
            else:
                np.matmul(wg, c.reshape(n1 - n0, G, (C // G) * kh * kw, oh * ow), out=out[n0:n1])
        ctx.cols = None
    else:
        cols = np.empty((N, C, kh, kw, oh, ow), x4.dtype)
        xp = _padded(x4, ctx.k, ctx.s, ctx.d, ctx.pads, ctx.out_hw)
        for i, j, rows, cs in _taps(ctx.k, ctx.s, ctx.d, ctx.out_hw):
            cols[:, :, i, j] = xp[:, :, rows, cs]
        cols = cols.reshape(N, G, (C // G) * kh * kw, oh * ow)
        out = np.matmul(wg, cols)  # (N, G, Og, L); bfloat16: float32 sums (ml_dtypes)
        ctx.cols = cols
    if b is not None:
        out += b.reshape(G, O // G, 1)
    return out.reshape(N, O, oh, ow).astype(x4.dtype, copy=False)


def _conv_arrays(ctx, g, inputs, out, wanted):
    """im2col's adjoint: g against the columns (weight), against the weight then col2im (input). float32/64 go
    a few samples at a time, the columns made again from x (see _conv_forward)."""
    if getattr(ctx, "transposed", False):
        return _conv_t_arrays(ctx, g, inputs, out, wanted)
    x, w = inputs[0], inputs[1]
    N, C, H, W = ctx.xshape4
    O, G = ctx.wshape4[0], ctx.groups
    (kh, kw), (oh, ow) = ctx.k, ctx.out_hw
    K = (C // G) * kh * kw
    g = np.ascontiguousarray(g)  # (a broadcast adjoint, as sum's, would keep matmul off BLAS)
    g4 = g.reshape(N, G, O // G, oh * ow)
    gx = gw = gb = None
    wt = w.reshape(G, O // G, -1).transpose(0, 2, 1)
    if ctx.cols is None and _by_taps(ctx, g.dtype):
        gx, gw = _conv_taps_arrays(ctx, g, x, w, wanted)
    elif ctx.cols is None:  # float32/64: chunks of samples, one buffer each for the columns and their gradient
        dt = g.dtype
        x4 = np.ascontiguousarray(x, dt).reshape(ctx.xshape4)
        chunk = _column_chunk(ctx, dt)
        m = builtins.min(chunk, N)
        k = _conv_kernels()
        as_rows = _as_rows(ctx, dt)
        make = _column_maker(ctx, x4, m, as_rows) if wanted[1] else None
        gcols = np.empty((m, G, K, oh * ow), dt) if wanted[0] else None
        gw = np.zeros((G, O // G, K), dt) if wanted[1] else None
        gx = np.zeros(ctx.xshape4, dt) if wanted[0] else None
        for n0 in range(0, N, chunk):
            n1 = builtins.min(N, n0 + chunk)
            gc = g4[n0:n1]
            if wanted[1]:
                c = make(n0, n1)
                if as_rows:  # (kh, kw, C) order: permuted to the weight's after the loop. One product over the
                    # chunk's samples and positions: per-sample products summed made an (n, O, K) temporary
                    # (600 MB and 6x torch's time for 512 channels on 2x2 maps)
                    gw[0] += np.ascontiguousarray(gc.reshape(n1 - n0, O, oh * ow).transpose(1, 0, 2)).reshape(
                        O, -1) @ c.reshape(-1, K)
                else:
                    gw += np.matmul(gc, c.reshape(n1 - n0, G, K, oh * ow).transpose(0, 1, 3, 2)).sum(axis=0)
            if wanted[0]:
                gcc = np.matmul(wt, gc, out=gcols[:n1 - n0])
                k.col2im(gcc.reshape(n1 - n0, C, kh, kw, oh, ow), *_geometry(ctx), gx[n0:n1])
        if gw is not None and as_rows:
            gw = np.ascontiguousarray(gw.reshape(O, kh, kw, C).transpose(0, 3, 1, 2))
        gw = None if gw is None else gw.reshape(w.shape)
        gx = None if gx is None else gx.reshape(x.shape)
    else:
        if wanted[1]:
            # per sample (Og, L) @ (L, Cg*kh*kw) on transposed views (BLAS reads them as they are), summed over N
            gw = np.matmul(g4, ctx.cols.transpose(0, 1, 3, 2)).sum(axis=0)
            gw = gw.reshape(w.shape)
        if wanted[0]:
            gcols = np.matmul(wt, g4)  # (N, G, Cg*kh*kw, L)
            gcols = gcols.reshape(N, C, kh, kw, oh, ow)
            xs = ctx.xshape4
            Hp, Wp = _padded_size(ctx)
            gxp = np.zeros((N, C, Hp, Wp), gcols.dtype)
            for i, j, rows, cs in _taps(ctx.k, ctx.s, ctx.d, ctx.out_hw):
                gxp[:, :, rows, cs] += gcols[:, :, i, j]
            pt, pl = ctx.pads[0], ctx.pads[2]
            gx = gxp[:, :, pt:pt + xs[2], pl:pl + xs[3]].reshape(x.shape)
    if len(inputs) > 2 and wanted[2]:
        gb = g.reshape(N, O, oh * ow).sum(axis=(0, 2))
    return (gx, gw) if len(inputs) == 2 else (gx, gw, gb)




def _conv_kernels():
    return kernels.module("conv")


def _padded_size(ctx):
    (N, C, H, W), (kh, kw), (sh, sw), (dh, dw), (pt, pb, pl, pr), (oh, ow) = \
        ctx.xshape4, ctx.k, ctx.s, ctx.d, ctx.pads, ctx.out_hw
    return (builtins.max(H + pt + pb, (oh - 1) * sh + (kh - 1) * dh + 1),
            builtins.max(W + pl + pr, (ow - 1) * sw + (kw - 1) * dw + 1))


def _vjp_conv(ctx, g, inputs, out):
    """Gathered columns of x (padding reads an appended zero), matmuls with g, and the scatter back."""
    if getattr(ctx, "transposed", False):
        return _vjp_conv_t(ctx, g, inputs, out)
    from . import cat, _gather, scatter_flat, matmul
    x, w = inputs[0], inputs[1]
    N, C, H, W = ctx.xshape4
    O, G = ctx.wshape4[0], ctx.groups
    oh, ow = ctx.out_hw
    idx = np.ascontiguousarray(_cols(ctx, _index_windows(ctx.xshape4, ctx.k, ctx.s, ctx.d, ctx.pads, ctx.out_hw)))
    g2 = g.reshape(N, G, O // G, oh, ow).permute(1, 0, 3, 4, 2).reshape(G, N * oh * ow, O // G)
    n = N * C * H * W
    xe = cat([x.reshape(-1), _new(np.zeros(1, x._data.dtype))])
    cols = _gather(xe, idx)
    gw = matmul(g2.transpose(1, 2), cols).reshape(w.shape)
    gcols = matmul(g2, w.reshape(G, O // G, -1))
    gx = scatter_flat(gcols, idx, (n + 1,))[:n].reshape(x.shape)
    if len(inputs) == 2:
        return gx, gw
    return gx, gw, g.reshape(N, O, oh * ow).sum((0, 2))


def _conv(nd, input, weight, bias, stride, padding, dilation, groups):
    x, w = _tensor(input), _tensor(weight)
    if autocast_state.dtype is not None:
        x, w, bias = _autocast_lower(x, w, None if bias is None else _tensor(bias))
    empty, xs, k, s, d, pads, b = _conv_checks(nd, x, w, bias, stride, padding, dilation, groups)
    if empty and (xs[1] == 0 or w._data.dtype != x._data.dtype or builtins.min(k) <= 0 or builtins.min(d) <= 0):
        return _conv_empty(nd, x, w, b, xs, k, s, d, pads)
    batched = x.ndim == nd + 2
    O, Cg = w.shape[0], w.shape[1]
    if nd == 1:
        pads, k, s, d = [(0, 0)] + pads, (1,) + k, (1,) + s, (1,) + d
        xs4 = xs[:2] + (1,) + xs[2:]
    else:
        xs4 = xs
    out_hw = tuple((xs4[2 + i] + pads[i][0] + pads[i][1] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))
    ctx = Ctx(k=k, s=s, d=d, pads=(pads[0][0], pads[0][1], pads[1][0], pads[1][1]), out_hw=out_hw, groups=groups,
              xshape4=xs4, wshape4=(O, Cg) + k)
    value = _conv_forward(ctx, x._data.reshape(xs4), w._data.reshape(ctx.wshape4),
                          None if bias is None else b._data)
    oshape = (xs4[0], O) + (out_hw if nd == 2 else out_hw[1:])
    value = value.reshape(oshape)
    inputs = (x if batched else x.unsqueeze(0), w) + ((b,) if bias is not None else ())
    if not w._requires_grad and ctx.cols is not None and not any(t._requires_grad for t in inputs):
        ctx.cols = None
    out = _record(OPS["conv"], value, inputs, aux=ctx)
    return out if batched else out.squeeze(0)  # (torch's unbatched convolution, so its SqueezeBackward1)


_TENSOR_TYPE_NAMES = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "float16": "torch.HalfTensor",
                      "bfloat16": "CPUBFloat16Type", "int64": "torch.LongTensor", "int32": "torch.IntTensor",
                      "int16": "torch.ShortTensor", "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
                      "bool": "CPUBoolType"}


def _int_list(v, n):
    """torch's IntArrayRef[n] argument: an int is n of it, a sequence is itself."""
    return tuple(int(a) for a in v) if isinstance(v, (tuple, list)) else (int(v),) * n


def _uses_onednn(x, xv, kv, s, d, groups):
    """torch's ConvParams::use_mkldnn on a CPU with oneDNN: bfloat16 input; float32 input by its heuristic (xv and
    kv the input's and kernel's sizes as the backend sees them, 1-d as 2-d)."""
    dt = x._data.dtype
    if str(dt) == "bfloat16":
        return True
    if dt != np.float32:
        return False
    N, C = xv[0], xv[1]
    return ((builtins.max(s) > 1 or builtins.max(d) != 1 or builtins.min(d) != 1 or N >= 16 or kv[-1] != 1
             or kv[-2] != 1 or get_num_threads() > 1)
            and (groups > 1 or (kv[-1] > 3 and kv[-2] > 3) or N > 1 or N * C * xv[2] * xv[3] > 20480))


def _check_weight_shape(w, xs, groups):
    """ATen's check_shape_forward, shared by convolutions and transposed ones: the input's rank (xs: the batched
    shape) against the weight's, and the weight's dimension 0 against groups."""
    if w.ndim != len(xs):
        raise RuntimeError(f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight {list(w.shape)}, but "
                           f"got {len(xs)}-dimensional input of size {list(xs)} instead")
    if w.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(w.shape)} instead")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(w.shape)}] instead")


def _conv_checks(nd, x, w, bias, stride, padding, dilation, groups):
    """torch's checks of conv1d/2d/3d's arguments, in its order and with its messages: the front end's (the bias's
    dtype, the input's rank; padding='same' and 'valid'), at::_convolution's (the weight's rank, groups, the
    parameters' lengths against the weight's rank), check_shape_forward's (signs, ranks, groups, channels, bias,
    kernel against the padded input), the backend's choice (an empty batch or channel dimension: the Empty
    backend; bfloat16 input: oneDNN's dtype check) and the CPU kernel's (the kernel's size, dilation, the
    weight's dtype). Returns whether it is the Empty backend, the batched input's shape, the kernel, stride,
    dilation and (before, after) padding of each spatial dimension (nd long), and the bias as a Tensor."""
    name = f"conv{nd}d"
    b = None if bias is None else _tensor(bias)
    if b is not None and b._data.dtype != x._data.dtype:
        raise RuntimeError(f"Input type ({_dtype.cpp_type_name(x._data.dtype)}) and bias type "
                           f"({_dtype.cpp_type_name(b._data.dtype)}) should be the same")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                           f"of size: {list(x.shape)}")
    xs = tuple(x.shape) if x.ndim == nd + 2 else (1,) + tuple(x.shape)
    s, d = _int_list(stride, nd), _int_list(dilation, nd)
    shift = None  # (padding='same' of two unequal sides: torch pads the input by their difference first)
    if isinstance(padding, str):
        if padding == "same":
            if w.ndim < 3:
                raise RuntimeError("weight should have at least three dimensions")
            if groups <= 0:
                raise RuntimeError("non-positive groups is not supported")
            if w.ndim != len(xs):
                raise RuntimeError(f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight"
                                   f"{list(w.shape)}, but got {len(xs)}-dimensional input of size {list(xs)} instead")
            dim = w.ndim - 2
            for what, v in (("stride", s), ("dilation", d)):
                if len(v) not in (dim, 1):
                    raise RuntimeError(f"{what} cannot broadcast to {dim} dimensions")
            if any(v != 1 for v in s):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            left, right = [], []
            for i in range(dim):
                total = (d[0] if len(d) == 1 else d[i]) * (w.shape[2 + i] - 1)
                left.append(int(total / 2))  # (C++'s division: toward zero)
                right.append(total - left[-1])
            shift = [(0, r - lo) if r > lo else (r - lo, 0) for lo, r in zip(left, right)]
            if any(a or c for a, c in shift):
                _warn_asymmetric_same(list(zip(left, right)))
                xs = xs[:2] + tuple(n + a + c for n, (a, c) in zip(xs[2:], shift))
            p = tuple(lo if r > lo else r for lo, r in zip(left, right))
        elif padding == "valid":
            p = (0,)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        p = _int_list(padding, nd)
    if w.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dim = w.ndim - 2
    params = []
    for what, v in (("stride", s), ("padding", p), ("dilation", d)):
        if len(v) != dim and len(v) != 1:
            raise RuntimeError(f"expected {what} to be a single integer value or a list of {dim} values to match the "
                               f"convolution dimensions, but got {what}={list(v)}")
        params.append(v * dim if len(v) == 1 else v)
    s, p, d = params
    if builtins.min(p) < 0:
        raise RuntimeError("negative padding is not supported")
    if builtins.min(s) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if builtins.min(d) < 0:
        raise RuntimeError("dilation should be greater than zero")
    _check_weight_shape(w, xs, groups)
    O, Cg = w.shape[0], w.shape[1]
    if xs[1] != Cg * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected input{list(xs)} to have "
                           f"{Cg * groups} channels, but got {xs[1]} channels instead")
    if b is not None and (b.ndim != 1 or b.shape[0] != O):
        raise RuntimeError(f"Given weight of size {list(w.shape)}, expected bias to be 1-dimensional with {O} "
                           f"elements, but got bias of size {list(b.shape)} instead")
    k = tuple(w.shape[2:])
    padded = [n + 2 * q for n, q in zip(xs[2:], p)]
    eff = [dd * (kk - 1) + 1 for kk, dd in zip(k, d)]
    if any(e > q for e, q in zip(eff, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual input size")
    if shift is not None:  # (the computation pads each side: torch's two steps together)
        pads = [(q + a, q + c) for q, (a, c) in zip(p, shift)]
        xs = tuple(x.shape) if x.ndim == nd + 2 else (1,) + tuple(x.shape)
    else:
        pads = [(q, q) for q in p]
    # the backend: 1-d as 2-d of unit height
    kv, dv, xv = ((1,) + k, (1,) + d, xs[:2] + (1,) + xs[2:]) if nd == 1 else (k, d, xs)
    if xs[0] == 0 or xs[1] == 0:
        return True, xs, k, s, d, pads, b
    if 0 in xs:
        raise RuntimeError(f"Only zero batch or zero channel inputs are supported, but got input shape: {list(xv)}")
    dt, wt = x._data.dtype, w._data.dtype
    if _uses_onednn(x, xv, kv, s, d, groups):  # (its checks: the weight's dtype, dilation, the kernel's size)
        if wt != dt:
            raise RuntimeError(f"Input type ({_TENSOR_TYPE_NAMES.get(str(dt), dt)}) and weight type "
                               f"({_TENSOR_TYPE_NAMES.get(str(wt), wt)}) should be the same or input should be a "
                               f"MKLDNN tensor and weight is a dense tensor")
        if builtins.min(d) <= 0:
            raise RuntimeError("non-positive dilation is not supported")
        if builtins.min(k) <= 0:
            raise RuntimeError("could not create a primitive descriptor for the convolution forward propagation "
                               "primitive. Run workload with environment variable ONEDNN_VERBOSE=all to get "
                               "additional diagnostic information.")
    if builtins.max(dv) != 1 or builtins.min(dv) != 1:  # (slow_conv_dilated's shape check)
        if builtins.min(kv) <= 0:
            raise RuntimeError(f"kernel size should be greater than zero, but got {list(kv)}")
        if builtins.min(dv) <= 0:
            raise RuntimeError(f"dilation should be greater than zero, but got {list(dv)}")
        kernel = "slow_conv_dilated<>"
    elif nd == 3:
        if builtins.min(kv) <= 0:
            raise RuntimeError(f"kernel size should be greater than zero, but got: {' x '.join(map(str, kv))} (TxHxW)")
        kernel = "compute_columns3d"
    else:
        if builtins.min(kv) <= 0:
            raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kv[0]} "
                               f"kernel_width: {kv[1]}")
        kernel = "slow_conv2d_cpu"
    if dt == np.bool_ or (kernel == "slow_conv_dilated<>" and dt.kind in "iu" and dt != np.int64):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype.scalar_type_name(dt)}'")
    if wt != dt:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(dt)} but found {_dtype.scalar_type_name(wt)}")
    return False, xs, k, s, d, pads, b


def _conv_empty(nd, x, w, b, xs, k, s, d, pads):
    """torch's Empty backend (no batch or no channels): the input (flattened, when it has no channels) times the
    weight's first element (its elements), plus the bias's first, viewed as the output; no channels in, none out."""
    size = [(n + lo + hi - dd * (kk - 1) - 1) // ss + 1 for n, kk, ss, dd, (lo, hi) in zip(xs[2:], k, s, d, pads)]
    oshape = (xs[0], 0 if xs[1] == 0 else w.shape[0]) + tuple(size)
    wv = w.reshape(-1)
    out = x.reshape(-1) * wv if xs[1] == 0 else x * wv[0]
    if b is not None:
        out = out + b[0]
    return out.reshape(oshape if x.ndim == nd + 2 else oshape[1:])


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


# -- transposed convolution: the adjoint of convolution, on the same row -------------------------------------------
# torch's one convolution op takes a `transposed` flag, and so does tapegrad's "conv" row (ctx.transposed): the
# forward is convolution's input adjoint (weight^T @ x, then col2im), the backward its forward (im2col of g, then
# the two matmuls). Both reuse kernels/conv.py.
def _per_group(a, b, transpose_a=False, transpose_b=False):
    """a[g] @ b[g] for each group g: one BLAS GEMM per group over the whole batch (a batched matmul per sample
    is several times slower at these shapes)."""
    out = []
    for ag, bg in zip(a, b):
        out.append((ag.T if transpose_a else ag) @ (bg.T if transpose_b else bg))
    return np.stack(out) if len(out) > 1 else out[0][None]


def _conv_t_forward(ctx, x4, w4, b):
    """y (N, Cout, Ho, Wo) = col2im(W^T (Cog*kh*kw, Cig) @ x (Cig, N*H*W)) per group, + bias. The columns are laid
    out (Cout, kh, kw, N, H, W), so col2im reads them through a transposed view."""
    N, Cin, H, W = x4.shape
    G, Cog = ctx.groups, ctx.wshape4[1]
    kh, kw = ctx.k
    dt = x4.dtype
    work = dt if dt in (np.float32, np.float64) else np.dtype(np.float64)
    xg = np.ascontiguousarray(x4.astype(work, copy=False).reshape(N, G, Cin // G, H * W).transpose(1, 2, 0, 3))
    xg = xg.reshape(G, Cin // G, N * H * W)
    cols = _per_group(w4.astype(work, copy=False).reshape(G, Cin // G, Cog * kh * kw), xg, transpose_a=True)
    out = np.zeros(ctx.yshape4, work)
    _conv_kernels().col2im(cols.reshape(G * Cog, kh, kw, N, H, W).transpose(3, 0, 1, 2, 4, 5), kh, kw, *ctx.s,
                           *ctx.d, ctx.pads[0], ctx.pads[2], out)
    if b is not None:
        out += b.astype(work, copy=False).reshape(1, -1, 1, 1)
    ctx.x = xg if ctx.keep_x else None  # (the weight's gradient reads x: this copy, as x may change in place)
    return out.astype(dt, copy=False)


def _conv_t_arrays(ctx, g, inputs, out, wanted):
    """im2col of g (the convolution's forward) into (Cout, kh, kw, N, H, W), then one GEMM per group with the
    weight (input) and with x (weight)."""
    x, w = inputs[0], inputs[1]
    N, Cin, H, W = ctx.xshape4
    G, Cog = ctx.groups, ctx.wshape4[1]
    kh, kw = ctx.k
    g4 = np.ascontiguousarray(g).reshape(ctx.yshape4)
    if g4.dtype not in (np.float32, np.float64):
        return None
    cols = np.empty((G * Cog, kh, kw, N, H, W), g4.dtype)
    _conv_kernels().im2col(g4, *_geometry(ctx), cols.transpose(3, 0, 1, 2, 4, 5))
    cols = cols.reshape(G, Cog * kh * kw, N * H * W)
    gx = gw = gb = None
    if wanted[0]:
        gx = _per_group(w.reshape(G, Cin // G, Cog * kh * kw), cols)  # (G, Cig, N*H*W)
        gx = np.ascontiguousarray(gx.reshape(Cin, N, H * W).transpose(1, 0, 2)).reshape(x.shape)
    if wanted[1]:
        gw = _per_group(ctx.x, cols, transpose_b=True).reshape(w.shape)
    if len(inputs) > 2 and wanted[2]:
        gb = g4.sum(axis=(0, 2, 3))
    return (gx, gw) if len(inputs) == 2 else (gx, gw, gb)


def _vjp_conv_t(ctx, g, inputs, out):
    """Gathered columns of g (padding reads an appended zero), matmuls with x and the weight."""
    from . import cat, _gather, matmul
    x, w = inputs[0], inputs[1]
    N, Cin, H, W = ctx.xshape4
    G, Cog = ctx.groups, ctx.wshape4[1]
    win = _index_windows(ctx.yshape4, ctx.k, ctx.s, ctx.d, ctx.pads, (H, W))
    idx = np.ascontiguousarray(_cols(ctx, win))  # (G, N*H*W, Cog*kh*kw)
    ge = cat([g.reshape(-1), _new(np.zeros(1, g._data.dtype))])
    cols = _gather(ge, idx)
    x2 = x.reshape(N, G, Cin // G, H * W).permute(1, 0, 3, 2).reshape(G, N * H * W, Cin // G)
    gw = matmul(x2.transpose(1, 2), cols).reshape(w.shape)
    gx2 = matmul(cols, w.reshape(G, Cin // G, -1).transpose(1, 2))  # (G, N*H*W, Cig)
    # (contiguous, as torch's kernel gives it: the reshape is a view of the permutation, which `.view` refuses)
    gx = gx2.reshape(G, N, H * W, Cin // G).permute(1, 0, 3, 2).reshape(x.shape).contiguous()
    if len(inputs) == 2:
        return gx, gw
    return gx, gw, g.reshape(N, G * Cog, -1).sum((0, 2))


def _conv_transpose_checks(nd, x, w, bias, stride, padding, output_padding, groups, dilation):
    """torch's checks of a transposed convolution's arguments, in its order and with its messages, for
    conv_transpose1d/2d (one row) and conv_transpose3d (composed of conv3d): the front end's, then at::convolution's
    and check_shape_forward's (the parameters' lengths against the weight's rank, signs, groups, channels, bias), then
    the slow kernel's shape check (1-d as 2-d of unit height; 3-d's names its depth, and checks the weight's size
    where 2-d checks the kernel's). Returns the batched input's shape, stride, padding, output_padding and dilation
    (each nd long), the kernel's size, the output's spatial size, and the bias as a Tensor of the input's dtype."""
    name = f"conv_transpose{nd}d"
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                           f"of size: {list(x.shape)}")
    if w.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dim = w.ndim - 2  # (torch sizes the parameters by the weight: an int is nd of them, one value any number)
    params = []
    for what, v in (("stride", stride), ("padding", padding), ("dilation", dilation),
                    ("output_padding", output_padding)):
        v = tuple(int(a) for a in v) if isinstance(v, (tuple, list)) else (int(v),) * nd
        if len(v) != dim and len(v) != 1:
            raise RuntimeError(f"expected {what} to be a single integer value or a list of {dim} values to match the "
                               f"convolution dimensions, but got {what}={list(v)}")
        params.append(v * dim if len(v) == 1 else v)
    s, p, d, op = params
    if builtins.min(p) < 0:
        raise RuntimeError("negative padding is not supported")
    if builtins.min(op) < 0:
        raise RuntimeError("negative output_padding is not supported")
    if builtins.min(s) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if builtins.min(d) < 0:
        raise RuntimeError("dilation should be greater than zero")
    xs = tuple(x.shape) if x.ndim == nd + 2 else (1,) + tuple(x.shape)
    _check_weight_shape(w, xs, groups)
    Cin, Cog = w.shape[0], w.shape[1]
    if xs[1] != Cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected input{list(xs)} to have {Cin} "
                           f"channels, but got {xs[1]} channels instead")
    b = None
    if bias is not None:
        b = _tensor(bias)
        if b.ndim != 1 or b.shape[0] != Cog * groups:
            raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected bias to be 1-dimensional "
                               f"with {Cog * groups} elements, but got bias of size {list(b.shape)} instead")
    k = tuple(w.shape[2:])
    # the kernel's view: 1-d is 2-d of unit height
    kv, sv, pv, opv, dv, xv = ((1,) + k, (1,) + s, (0,) + p, (0,) + op, (1,) + d, xs[:2] + (1,) + xs[2:]) if nd == 1 \
        else (k, s, p, op, d, xs)
    if xs[0] and not builtins.min(xs[2:]):
        raise RuntimeError(f"Only zero batch or zero channel inputs are supported, but got input shape: {list(xv)}")
    axes = ("depth", "height", "width")[-len(kv):]
    if nd < 3 and builtins.min(kv) <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got "
                           + " ".join(f"kernel_{a}: {v}" for a, v in zip(axes, kv)))
    if builtins.min(dv) <= 0:
        raise RuntimeError("dilation should be greater than zero, but got "
                           + ", ".join(f"dilation_{a}: {v}" for a, v in zip(axes, dv)))
    if not all(o < ss or o < dd for o, ss, dd in zip(opv, sv, dv)):
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                           + " ".join(f"{what}_{a}: {v}" for what, vs in (("output_padding", opv), ("stride", sv),
                                                                           ("dilation", dv))
                                      for a, v in zip(axes, vs)))
    if nd == 3 and w._data.size == 0:
        raise RuntimeError("non-empty 5D (n_output_plane x n_input_plane x kernel_depth x kernel_height x "
                           f"kernel_width) tensor expected for weight, but got: {list(w.shape)}")
    out = tuple((n - 1) * ss - 2 * pp + dd * (kk - 1) + o + 1 for n, ss, pp, dd, kk, o in zip(xv[2:], sv, pv, dv, kv, opv))
    if builtins.min(out) < 1:
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, xv[2:]))}). Calculated output size "
                           f"per channel: ({' x '.join(map(str, out))}). Output size is too small")
    dt = x._data.dtype
    if w._data.dtype != dt:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(dt)} but found "
                           f"{_dtype.scalar_type_name(w._data.dtype)}")
    if b is not None and b._data.dtype != dt:
        if nd == 3:  # (3-d's kernel takes none of another type)
            raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(dt)} but found "
                               f"{_dtype.scalar_type_name(b._data.dtype)}")
        b = _to_dtype(b, dt)  # (1-d and 2-d's kernel takes a bias of another type, cast)
    return xs, s, p, op, d, k, out[-nd:], b


def _conv_transpose(nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    x, w = _tensor(input), _tensor(weight)
    if autocast_state.dtype is not None:
        x, w, bias = _autocast_lower(x, w, None if bias is None else _tensor(bias))
    xs, s, p, op, d, k, out_hw, b = _conv_transpose_checks(nd, x, w, bias, stride, padding, output_padding, groups,
                                                           dilation)
    batched = x.ndim == nd + 2
    Cin, Cog = w.shape[0], w.shape[1]
    if nd == 1:  # the 2-d kernels' view: a unit height
        k, s, p, op, d, out_hw = (1,) + k, (1,) + s, (0,) + p, (0,) + op, (1,) + d, (1,) + out_hw
        xs4 = xs[:2] + (1,) + xs[2:]
    else:
        xs4 = xs
    ctx = Ctx(transposed=True, k=k, s=s, d=d, pads=(p[0], p[0], p[1], p[1]), groups=groups, xshape4=xs4,
              wshape4=(Cin, Cog) + k, yshape4=(xs4[0], Cog * groups) + out_hw, keep_x=w._requires_grad)
    value = _conv_t_forward(ctx, x._data.reshape(xs4), w._data.reshape(ctx.wshape4),
                            None if bias is None else b._data)
    oshape = (xs4[0], Cog * groups) + (out_hw if nd == 2 else out_hw[1:])
    value = value.reshape(oshape)
    inputs = (x if batched else x.unsqueeze(0), w) + ((b,) if bias is not None else ())
    out = _record(OPS["conv"], value, inputs, aux=ctx)
    return out if batched else out.squeeze(0)  # (torch's unbatched convolution, so its SqueezeBackward1)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """conv3d's adjoint, composed of differentiable ops: the input spread `stride` apart into zeros, then conv3d with
    the weight's in/out channels swapped per group and its taps flipped, padded by dilation * (k - 1) - padding (a
    negative one crops)."""
    x, w = _tensor(input), _tensor(weight)
    if autocast_state.dtype is not None:
        x, w, bias = _autocast_lower(x, w, None if bias is None else _tensor(bias))
    xs, s, p, op, d, k, out, bias = _conv_transpose_checks(3, x, w, bias, stride, padding, output_padding, groups,
                                                           dilation)
    batched = x.ndim == 5
    if not batched:
        x = x.unsqueeze(0)
    cin, cog = w.shape[0], w.shape[1]
    spatial = xs[2:]
    spread = x
    if builtins.max(s) > 1 or builtins.max(op) > 0:
        spread = creation.zeros(x.shape[:2] + tuple((n - 1) * s[i] + 1 + op[i] for i, n in enumerate(spatial)),
                                dtype=x.dtype)
        spread[(slice(None), slice(None)) + tuple(slice(0, (n - 1) * s[i] + 1, s[i]) for i, n in enumerate(spatial))] = x
    margins = [d[i] * (k[i] - 1) - p[i] for i in range(3)]
    if builtins.min(margins) < 0:  # (more padding than the kernel reaches: the spread input's edges cut off)
        spread = spread[(slice(None), slice(None)) + tuple(slice(-m, spread.shape[2 + i] + m) if m < 0 else
                                                           slice(None) for i, m in enumerate(margins))]
    flipped = w.reshape((groups, cin // groups, cog) + k).transpose(1, 2).reshape((groups * cog, cin // groups) + k)
    y = conv3d(spread, flipped.flip(2, 3, 4), bias, 1, tuple(builtins.max(m, 0) for m in margins), d, groups)
    return y if batched else y.squeeze(0)


# -- 3-d convolution: one row (torch's ConvolutionBackward0): im2col, one matmul per group, col2im back ----------
def _conv3d_taps(ctx):
    """Each kernel tap's (kd, kh, kw) index and the strided slices of the padded input it reads."""
    Do, Ho, Wo = ctx.ys5[2:]
    (s0, s1, s2), (d0, d1, d2) = ctx.s, ctx.d
    for a in range(ctx.k[0]):
        for b in range(ctx.k[1]):
            for c in range(ctx.k[2]):
                yield (a, b, c), (slice(a * d0, a * d0 + (Do - 1) * s0 + 1, s0),
                                  slice(b * d1, b * d1 + (Ho - 1) * s1 + 1, s1),
                                  slice(c * d2, c * d2 + (Wo - 1) * s2 + 1, s2))


def _conv3d_cols(ctx, x5):
    """(N, G, Cg * K, L): every sample's input columns, grouped: one strided copy per kernel tap."""
    N, C = x5.shape[:2]
    xp = np.pad(x5, ((0, 0), (0, 0)) + tuple(ctx.pads)) if any(map(any, ctx.pads)) else x5
    cols = np.empty((N, C) + tuple(ctx.k) + tuple(ctx.ys5[2:]), x5.dtype)
    for tap, where in _conv3d_taps(ctx):
        cols[(slice(None), slice(None)) + tap] = xp[(slice(None), slice(None)) + where]
    return cols.reshape(N, ctx.groups, C // ctx.groups * math.prod(ctx.k), math.prod(ctx.ys5[2:]))  # (N may be 0)


def _conv3d_index(ctx):
    """For create_graph: each (channel, tap) row and output column's flat position in one sample (C*D*H*W values,
    then a zero appended, which the taps that fall in the padding read): (C * kd * kh * kw, Do * Ho * Wo)."""
    xs5, k, s, d, pads, out = ctx.xs5, ctx.k, ctx.s, ctx.d, ctx.pads, ctx.ys5[2:]
    C, size = xs5[1], xs5[2:]
    axes = []
    for a in range(3):  # the source coordinate of tap t at output o along axis a, and whether it is inside
        z = (np.arange(out[a]) * s[a])[None, :] - pads[a][0] + (np.arange(k[a]) * d[a])[:, None]
        axes.append((z, (z >= 0) & (z < size[a])))
    (zd, vd), (zh, vh), (zw, vw) = axes
    flat = ((np.arange(C).reshape(C, 1, 1, 1, 1, 1, 1) * size[0] + zd[:, None, None, :, None, None]) * size[1]
            + zh[None, :, None, None, :, None]) * size[2] + zw[None, None, :, None, None, :]
    inside = vd[:, None, None, :, None, None] & vh[None, :, None, None, :, None] & vw[None, None, :, None, None, :]
    flat = np.where(inside[None], flat, C * math.prod(size))
    return flat.reshape(C * math.prod(k), math.prod(out))


def _conv3d_forward(ctx, x, w, b=None):
    x5 = x.reshape(ctx.xs5)
    G = ctx.groups
    y = np.matmul(w.reshape(G, w.shape[0] // G, -1), _conv3d_cols(ctx, x5))  # (N, G, Og, L)
    y = y.reshape(ctx.ys5)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1, 1).astype(y.dtype, copy=False)
    return y.reshape(ctx.oshape).astype(x.dtype, copy=False)  # (bfloat16: float32 sums, rounded once)


def _conv3d_arrays(ctx, g, inputs, out, wanted):
    x, w = inputs[0], inputs[1]
    N, G, O = ctx.xs5[0], ctx.groups, w.shape[0]
    L = math.prod(ctx.ys5[2:])  # (sizes spelled out, not -1: N may be 0)
    g4 = np.ascontiguousarray(g).reshape(N, G, O // G, L)
    gx = gw = gb = None
    if wanted[1]:
        cols = _conv3d_cols(ctx, x.reshape(ctx.xs5))
        gw = np.matmul(g4, cols.transpose(0, 1, 3, 2)).sum(0).reshape(w.shape).astype(w.dtype, copy=False)
    if wanted[0]:  # the columns' gradient added back, one strided add per kernel tap, then the padding cut
        gcols = np.matmul(w.reshape(G, O // G, -1).transpose(0, 2, 1), g4)  # (N, G, Cg * K, L)
        gcols = gcols.reshape((N, ctx.xs5[1]) + tuple(ctx.k) + tuple(ctx.ys5[2:]))
        gxp = np.zeros((N, ctx.xs5[1]) + tuple(n + lo + hi for n, (lo, hi) in zip(ctx.xs5[2:], ctx.pads)), g.dtype)
        for tap, where in _conv3d_taps(ctx):
            gxp[(slice(None), slice(None)) + where] += gcols[(slice(None), slice(None)) + tap]
        crop = tuple(slice(lo, lo + n) for n, (lo, hi) in zip(ctx.xs5[2:], ctx.pads))
        gx = gxp[(slice(None), slice(None)) + crop].astype(x.dtype, copy=False).reshape(x.shape)
    if len(inputs) > 2 and wanted[2]:
        gb = g.reshape(N, O, L).sum((0, 2)).astype(inputs[2].dtype, copy=False)
    return (gx, gw) if len(inputs) == 2 else (gx, gw, gb)


def _vjp_conv3d(ctx, g, inputs, out):
    """In tapegrad ops, for create_graph: the columns as a gather of the input (a zero appended), then matmuls;
    the input's gradient scattered back from the columns' (scatter_flat), so every order works."""
    from . import cat, matmul, scatter_flat
    x, w = inputs[0], inputs[1]
    N, G, O = ctx.xs5[0], ctx.groups, w.shape[0]
    size = math.prod(ctx.xs5[1:]) + 1
    index = _conv3d_index(ctx)
    L = index.shape[1]  # (sizes spelled out, not -1: N may be 0)
    xe = cat([x.reshape(N, size - 1), _new(np.zeros((N, 1), x._data.dtype))], 1)
    cols = xe[:, _new(index)].reshape(N, G, index.shape[0] // G, L)
    g4 = g.reshape(N, G, O // G, L)
    gw = matmul(g4, cols.transpose(2, 3)).sum(0).reshape(tuple(w.shape))
    gcols = matmul(w.reshape(G, O // G, -1).transpose(1, 2), g4)
    where = index[None] + (np.arange(N) * size).reshape(N, 1, 1)
    gx = scatter_flat(gcols.reshape(N, index.shape[0], L), where, (N, size))[:, :size - 1].reshape(tuple(x.shape))
    if len(inputs) == 2:
        return gx, gw
    return gx, gw, g.reshape(N, O, L).sum((0, 2))


registry.python("conv3d", "ConvolutionBackward0", _conv3d_forward, _vjp_conv3d, array_vjp=_conv3d_arrays)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """One row: the input's columns (one strided copy per kernel tap of the padded input), then one matmul per
    group; the plain backward adds the columns' gradient back tap by tap; the create_graph rule is the same as a
    gather and matmuls in tapegrad ops."""
    x, w = _tensor(input), _tensor(weight)
    if autocast_state.dtype is not None:
        x, w, bias = _autocast_lower(x, w, None if bias is None else _tensor(bias))
    empty, xs, k, s, d, pads, b = _conv_checks(3, x, w, bias, stride, padding, dilation, groups)
    if empty and (xs[1] == 0 or w._data.dtype != x._data.dtype or builtins.min(k) <= 0 or builtins.min(d) <= 0):
        return _conv_empty(3, x, w, b, xs, k, s, d, pads)
    batched = x.ndim == 5
    O = w.shape[0]
    padded = [xs[2 + i] + pads[i][0] + pads[i][1] for i in range(3)]
    eff = [d[i] * (k[i] - 1) + 1 for i in range(3)]
    out_size = tuple((padded[i] - eff[i]) // s[i] + 1 for i in range(3))
    ctx = Ctx(k=k, s=s, d=d, pads=tuple(pads), groups=groups, xs5=xs, ys5=(xs[0], O) + out_size,
              oshape=(xs[0], O) + out_size)
    inputs = (x if batched else x.unsqueeze(0), w) + ((b,) if bias is not None else ())
    out = _record(OPS["conv3d"], _conv3d_forward(ctx, *(t._data for t in inputs)), inputs, aux=ctx)
    return out if batched else out.squeeze(0)  # (torch's unbatched convolution, so its SqueezeBackward1)


# -- max pooling ---------------------------------------------------------------------------------------------------
def _vjp_max_pool(ctx, g, inputs, out):
    """g scattered to the argmax of each window."""
    from . import scatter_flat
    flat = ctx.local.reshape(ctx.planes, -1) + (np.arange(ctx.planes) * ctx.plane).reshape(-1, 1)
    return (scatter_flat(g, flat.reshape(g.shape), inputs[0].shape),)


def _max_pool_arrays(ctx, g, inputs, out, wanted):
    x = inputs[0]
    if g.dtype not in (np.float32, np.float64):
        return None
    gx = np.zeros((ctx.planes, ctx.plane), g.dtype)
    _pool_kernels().max_pool2d_adjoint(np.ascontiguousarray(g).reshape(ctx.planes, -1),
                                       ctx.local.reshape(ctx.planes, -1), gx)
    return (gx.reshape(x.shape),)


def _pool_kernels():
    return kernels.module("pool")


def _ints(v):
    return [int(a) for a in v] if isinstance(v, (tuple, list)) else [int(v)]


def _half(v):
    return int(v / 2)  # (C++'s division: toward zero)


def _pool_checks(nd, kind, x, kernel_size, stride, padding, dilation=1, ceil_mode=False, divisor_override=None,
                 indices=False):
    """torch's checks of avg_pool1d/2d's and max_pool1d/2d's arguments, in its order and with its messages:
    max_pool1d's own (at::max_pool1d and check_max_pool1d; with indices, max_pool1d_with_indices's), the 1-d
    wrappers' (rank, one int each), then the 2-d meta functions' (the lists' lengths, the divisor, the rank), the
    output size of each dimension (pooling_output_shape's stride and padding checks) and pool2d_shape_check, and
    the kernels' dtypes. Returns the (N, C, H, W) view the kernels read (1-d: a unit height), the kernel, stride,
    padding and dilation (two each) and the output's height and width."""
    name = f"{kind}_pool{nd}d"
    ks, ss, ps, ds = _ints(kernel_size), [] if stride is None else _ints(stride), _ints(padding), _ints(dilation)
    dt = x._data.dtype
    if nd == 1 and kind == "max" and not indices:
        n = x.shape
        if not ((x.ndim == 2 and n[0] and n[1]) or (x.ndim == 3 and n[1] and n[2])):
            raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                               f"input, but got:{list(n)}")
        for what, v, ok, words in (("kernel_size", ks, (1,), "an int, list of ints or tuple of ints"),
                                   ("stride", ss, (0, 1), "None, an int, list of ints, or tuple of ints"),
                                   ("padding", ps, (1,), "an int, list of ints, or tuple of ints"),
                                   ("dilation", ds, (1,), "an int, list of ints or tuple of ints")):
            if len(v) not in ok:
                raise RuntimeError(f"max_pool1d() {what} must be {words} of size 1 but got size {len(v)}")
        k, s, p, d = ks[0], (ss or ks)[0], ps[0], ds[0]
        if k <= 0:
            raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
        if s <= 0:
            raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
        if p < 0:
            raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
        if p > k // 2:
            raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                               f"kernel_size={k}")
        if d <= 0:
            raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
        ow = _out_size(n[-1], k, s, p, d, ceil_mode)
        if ow <= 0:
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {ow}")
        if not _dtype.is_float(dt):
            raise NotImplementedError(f"\"max_pool1d_impl\" not implemented for '{_dtype.scalar_type_name(dt)}'")
        xs = tuple(n) if x.ndim == 3 else (1,) + tuple(n)
        return xs[:2] + (1,) + xs[2:], (1, k), (1, s), (0, p), (1, d), 1, ow
    v = tuple(x.shape)
    if nd == 1:
        if x.ndim not in (2, 3):
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 "
                               f"'self' (while checking arguments for {name})")
        ss = ss or ks
        for what, lst in (("kernel_size", ks), ("stride", ss), ("padding", ps)) + ((("dilation", ds),)
                                                                                     if kind == "max" else ()):
            if len(lst) != 1:
                raise RuntimeError(f"{name}() argument '{what}' should contain one int (got {len(lst)})")
        ks, ss, ps, ds = [1] + ks, [1] + ss, [0] + ps, [1] + ds
        v = v[:-1] + (1,) + v[-1:]  # (x.unsqueeze(-2))
    two = f"{kind}_pool2d"
    if len(ks) not in (1, 2):
        raise RuntimeError(f"{two}: kernel_size must either be a single int, or a tuple of two ints")
    kH, kW = ks[0], ks[-1]
    if len(ss) not in (0, 1, 2):
        raise RuntimeError(f"{two}: stride must either be omitted, a single int, or a tuple of two ints")
    dH, dW = (ss[0], ss[-1]) if ss else (kH, kW)
    if len(ps) not in (1, 2):
        raise RuntimeError(f"{two}: padding must either be a single int, or a tuple of two ints")
    pH, pW = ps[0], ps[-1]
    if kind == "max":
        if len(ds) not in (1, 2):
            raise RuntimeError("max_pool2d: dilation must be either a single int, or a tuple of two ints")
        if len(v) not in (3, 4):
            raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    elif divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    lH, lW = (ds[0], ds[-1]) if kind == "max" else (1, 1)
    if len(v) < 3:
        raise IndexError("Dimension specified as -3 but tensor has no dimensions" if not v else
                         f"Dimension out of range (expected to be in range of [{-len(v)}, {len(v) - 1}], but got -3)")
    C, H, W = v[-3:]
    outs = []
    for size, kk, pp, st, dd in ((H, kH, pH, dH, lH), (W, kW, pW, dW, lW)):  # (pooling_output_shape)
        if st == 0:
            raise RuntimeError("stride should not be zero")
        if pp < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {pp}")
        if pp > _half((kk - 1) * dd + 1):
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={dd}")
        outs.append(_out_size(size, kk, st, pp, dd, ceil_mode))
    oh, ow = outs
    if kW <= 0 or kH <= 0:  # (pool2d_shape_check)
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kH} kW: {kW}")
    if dW <= 0 or dH <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {dH} dW: {dW}")
    if lH <= 0 or lW <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {lH} dilationW: {lW}")
    if not ((len(v) == 3 and v[0] and v[1] and v[2]) or (len(v) == 4 and v[1] and v[2] and v[3])):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{list(v)}")
    if not (_half(kW) >= pW and _half(kH) >= pH):
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = {pW}, "
                           f"padH = {pH}, kW = {kW}, kH = {kH}")
    if ow < 1 or oh < 1:
        raise RuntimeError(f"Given input size: ({C}x{H}x{W}). Calculated output size: ({C}x{oh}x{ow}). Output size "
                           f"is too small")
    if dt == np.bool_:
        raise NotImplementedError(f"\"{two}\" not implemented for 'Bool'")
    xs4 = v if len(v) == 4 else (1,) + v
    return xs4, (kH, kW), (dH, dW), (pH, pW), (lH, lW), oh, ow


def _max_pool_planes(ctx, xd):
    """The compiled pass: the maxima (N*C, oh, ow) in x's dtype, and torch's indices (kept in ctx.local)."""
    (N, C, H, W), k, s, p, d, (oh, ow) = ctx.xs4, ctx.k, ctx.s, ctx.p, ctx.d, ctx.out_hw
    if _meta.is_meta(xd):  # (the meta device: shapes only)
        ctx.local = _meta.make((N * C, oh, ow), np.int64)
        return _meta.make((N * C, oh, ow), xd.dtype), ctx.local
    dt = xd.dtype
    if dt not in (np.float32, np.float64):
        xd = xd.astype(np.float64)
    value = np.empty((N * C, oh, ow), xd.dtype)
    local = np.empty((N * C, oh, ow), np.int64)
    _pool_kernels().max_pool2d_planes(np.asanyarray(xd, order="C").reshape(N * C, H, W), k[0], k[1], s[0], s[1], p[0],
                                      p[1], d[0], d[1], value, local)
    ctx.local = local
    return value.astype(dt, copy=False), local


def _max_pool(nd, input, kernel_size, stride, padding, dilation, ceil_mode, indices=False):
    x = _tensor(input)
    xs4, k, s, p, d, oh, ow = _pool_checks(nd, "max", x, kernel_size, stride, padding, dilation, ceil_mode,
                                           indices=indices)
    N, C, H, W = xs4
    ctx = Ctx(planes=N * C, plane=H * W, xs4=xs4, k=k, s=s, p=p, d=d, out_hw=(oh, ow))
    value, local = _max_pool_planes(ctx, x._data)
    oshape = (N, C, oh, ow)
    batched = x.ndim == nd + 2
    if nd == 1:  # the 2-d row on x.unsqueeze(-2), then squeezed, as torch (its grad_fn: SqueezeBackward1)
        x = x.unsqueeze(-2)
    value = value.reshape(oshape if batched else oshape[1:])
    row = out = _record(OPS["max_pool"], np.asanyarray(value, order="C"), (x,), aux=ctx)
    if nd == 1:
        out = out.squeeze(-2)
    return out, (local, ctx, row)


def _pool_indices(out, pooled):
    """max_pool's indices (return_indices); while tapegrad.compile traces, a row that a replay reads from the
    pooling row's context (its kernel wrote them)."""
    local, ctx, row = pooled
    shape = out.shape
    return traced_value(_new(local.reshape(shape).astype(np.int64)),
                        lambda _: ctx.local.reshape(shape).astype(np.int64), row)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    out, pooled = _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode)
    return out, _pool_indices(out, pooled)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    out, pooled = _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, indices=True)
    return out, _pool_indices(out, pooled)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out, pooled = _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, _pool_indices(out, pooled)) if return_indices else out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out, pooled = _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, indices=return_indices)
    return (out, _pool_indices(out, pooled)) if return_indices else out


# -- average pooling: separable, so two matmuls with constant (out, in) matrices -----------------------------------
def _avg_matrix(size, k, s, p, out, ceil_mode, count_include_pad, override, dt):
    """A (out, size) matrix: row i averages window i along one axis (torch's divisor, split per axis)."""
    m = np.zeros((out, size), np.float64)
    for i in range(out):
        start = i * s - p
        end = builtins.min(start + k, size + p)
        pool = end - start
        lo, hi = builtins.max(start, 0), builtins.min(end, size)
        div = pool if count_include_pad else hi - lo
        m[i, lo:hi] = 1.0 / div if override is None else 1.0
    return m.astype(dt)


def windows_confined(apply, x, mats):
    """apply(x): a pooling average (each output a window's, by weights > 0 on the windows' elements and 0 elsewhere),
    with NaN and inf reaching only the outputs whose windows hold them, as torch's loops (a matmul carries them, times
    a zero weight, into every output of their row: 0 * inf is NaN). apply(mask, members) counts each output's flagged
    elements through `members`, the matrices' nonzero patterns."""
    bad = ~np.isfinite(x)
    if not bad.any():
        return apply(x, mats)
    out = apply(np.where(bad, 0, x), mats)
    members = [(m != 0).astype(np.float64) for m in mats]
    nan, pinf, ninf = (apply(mask.astype(np.float64), members) > 0
                       for mask in (np.isnan(x), x == np.inf, x == -np.inf))
    out = np.where(pinf, np.inf, np.where(ninf, -np.inf, out))
    return np.where(nan | (pinf & ninf), np.nan, out).astype(x.dtype, copy=False)


def _rows_then_columns(x4, mats):
    return np.matmul(np.matmul(mats[0], x4), mats[1])


def _separable_forward(ctx, x):
    out = windows_confined(_rows_then_columns, x.reshape(ctx.xs4), (ctx.mh, ctx.mwT))
    return out.reshape(ctx.oshape).astype(x.dtype, copy=False)  # (bfloat16: float32 sums, rounded once)


def _separable_arrays(ctx, g, inputs, out, wanted):
    g4 = np.asanyarray(g).reshape(ctx.xs4[:2] + (ctx.mh.shape[0], ctx.mwT.shape[1]))
    gx = windows_confined(_rows_then_columns, g4, (ctx.mh.T, ctx.mwT.T))
    return (gx.reshape(inputs[0].shape).astype(g.dtype, copy=False),)


def _vjp_separable(ctx, g, inputs, out):
    """mh^T @ g @ mw: two matmuls with constants."""
    from . import matmul
    g4 = g.reshape(ctx.xs4[:2] + (ctx.mh.shape[0], ctx.mwT.shape[1]))
    gx = matmul(matmul(_new(np.ascontiguousarray(ctx.mh.T)), g4), _new(np.ascontiguousarray(ctx.mwT.T)))
    return (gx.reshape(tuple(inputs[0].shape)),)


registry.python("avg_pool2d", "AvgPool2DBackward0", _separable_forward, _vjp_separable,
                array_vjp=_separable_arrays)
registry.python("adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0", _separable_forward, _vjp_separable,
                array_vjp=_separable_arrays)


def _separable(x, xs4, mh, mw, oshape, name="avg_pool2d"):
    """out = mh @ x @ mw.T on the (H, W) planes: one row with constant matrices. A 1-d pool is the 2-d row on
    x.unsqueeze(-2), then squeezed, as torch computes it (so its grad_fn is torch's SqueezeBackward1)."""
    one_d = name.endswith("1d")
    if one_d:
        x = x.unsqueeze(-2)
        oshape = tuple(oshape[:-1]) + (1, oshape[-1])
    ctx = Ctx(mh=mh, mwT=np.ascontiguousarray(mw.T), xs4=xs4, oshape=tuple(oshape))
    out = _record(OPS[name.replace("1d", "2d")], _separable_forward(ctx, x._data), (x,), aux=ctx)
    return out.squeeze(-2) if one_d else out


def _avg_pool(nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x = _tensor(input)
    xs4, k, s, p, _, oh, ow = _pool_checks(nd, "avg", x, kernel_size, stride, padding, 1, ceil_mode, divisor_override)
    N, C, H, W = xs4
    dt = x._data.dtype
    oshape = (N, C) + ((oh, ow) if nd == 2 else (ow,))
    oshape = oshape if x.ndim == nd + 2 else oshape[1:]
    if not _dtype.is_float(dt):  # (integers: the exact window sum over the divisor, truncated, as torch's kernel)
        mh, mw = (_avg_matrix(n, k[i], s[i], p[i], o, ceil_mode, count_include_pad, None, np.float64)
                  for i, (n, o) in enumerate(((H, oh), (W, ow))))
        sums = np.einsum("ih,nchw,jw->ncij", (mh != 0).astype(np.int64), x._data.reshape(xs4).astype(np.int64),
                         (mw != 0).astype(np.int64))
        if divisor_override is not None:
            divisors = np.int64(divisor_override)
        else:  # (each axis's divisor, the reciprocal of its window's weight; their product is torch's pool size)
            divisors = np.rint(np.outer(1 / mh.max(axis=1), 1 / mw.max(axis=1))).astype(np.int64)
        q = np.abs(sums) // np.abs(divisors)  # (C's division: toward zero)
        return _new((np.sign(sums) * np.sign(divisors) * q).astype(dt).reshape(oshape))
    mh = _avg_matrix(H, k[0], s[0], p[0], oh, ceil_mode, count_include_pad, divisor_override, dt)
    mw = _avg_matrix(W, k[1], s[1], p[1], ow, ceil_mode, count_include_pad, divisor_override, dt)
    if divisor_override is not None:
        mh = mh / dt.type(divisor_override)
    return _separable(x, xs4, mh, mw, oshape, f"avg_pool{nd}d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def _adaptive_matrix(size, out, dt):
    m = np.zeros((out, size), np.float64)
    for i in range(out):
        lo, hi = (i * size) // out, -((-(i + 1) * size) // out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m.astype(dt)


def _one_output_size(name, output_size):
    """A 1-d adaptive pool's output_size (an int, or a sequence of one) as torch's argument parser and kernel check it."""
    if not isinstance(output_size, (tuple, list, numbers.Integral)):
        raise TypeError(f"{name}(): argument 'output_size' (position 2) must be tuple of ints, not "
                        f"{type(output_size).__name__}")
    o = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size]
    for i, v in enumerate(o):
        if not isinstance(v, numbers.Integral):
            raise TypeError(f"{name}(): argument 'output_size' (position 2) must be tuple of ints, but found "
                            f"element of type {type(v).__name__} at pos {i}")
    if len(o) != 1:
        raise RuntimeError(f"{name}() argument 'output_size' should contain one int (got {len(o)})")
    return int(o[0])


def _adaptive_avg(nd, input, output_size):
    """torch's checks in its order: adaptive_avg_pool1d's (rank, one int), F.adaptive_avg_pool2d's
    _list_with_default (None: the input's size), at::adaptive_avg_pool2d's (two sizes, none negative; 1 x 1 is a
    mean), then its kernel's (non-empty planes, rank, a floating dtype)."""
    x = _tensor(input)
    name = f"adaptive_avg_pool{nd}d"
    if nd == 1:
        if x.ndim not in (2, 3):
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 "
                               f"'self' (while checking arguments for {name})")
        o, v = [1, _one_output_size(name, output_size)], tuple(x.shape[:-1]) + (1,) + tuple(x.shape[-1:])
    else:
        v = tuple(x.shape)
        if isinstance(output_size, (tuple, list)):
            if x.ndim <= len(output_size):
                raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
            o = [d if a is None else int(a) for a, d in zip(output_size, v[len(v) - len(output_size):])]
        else:
            o = [int(output_size)] * 2
        if len(o) != 2:
            raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    if o[0] < 0 or o[1] < 0:
        raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                           f"received {{{o[0]}, {o[1]}}}")
    dt = x._data.dtype
    if o == [1, 1] and (len(v) not in (3, 4) or 0 in v[-2:] or not _dtype.is_float(dt)):  # (torch's mean)
        out = (x.unsqueeze(-2) if nd == 1 else x).mean((-1, -2), keepdim=True)
        return out.squeeze(-2) if nd == 1 else out
    if len(v) not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(v)}")
    for i in (-2, -1):
        if v[i] <= 0:
            raise RuntimeError(f"adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(v)} with dimension {i + len(v)} being empty")
    if not _dtype.is_float(dt):
        raise NotImplementedError(f"\"adaptive_avg_pool2d\" not implemented for '{_dtype.scalar_type_name(dt)}'")
    xs4 = v if len(v) == 4 else (1,) + v
    N, C, H, W = xs4
    oh, ow = o
    oshape = (N, C) + ((oh, ow) if nd == 2 else (ow,))
    return _separable(x, xs4, _adaptive_matrix(H, oh, dt), _adaptive_matrix(W, ow, dt),
                      oshape if x.ndim == nd + 2 else oshape[1:], name)


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg(2, input, output_size)


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg(1, input, output_size)


# -- normalization: one fused row each way -------------------------------------------------------------------------
def _norm_shape(ctx, shape):
    """The compiled kernels' view of x: rows (R, D) for layer_norm, channels (N, C, S) for batch_norm."""
    if ctx.layout == "rows":
        k = len(ctx.axes)
        return (math.prod(shape[:len(shape) - k]), math.prod(shape[len(shape) - k:]))
    return (shape[0], shape[1], math.prod(shape[2:]))


def _norm_fast(ctx, xd):
    """Whether the compiled kernels (kernels/norm.py) run this row: training statistics of float32/64."""
    return (ctx.training and getattr(ctx, "layout", None) is not None and xd.dtype in (np.float32, np.float64)
            and xd.size > 0 and (ctx.layout == "rows" or xd.ndim >= 2))


def _norm_fast_forward(ctx, xd, wd, bd):
    dt = xd.dtype
    shape3 = _norm_shape(ctx, xd.shape)
    x3 = np.asanyarray(xd, order="C").reshape(shape3)
    empty = np.empty(0, dt)
    w = empty if wd is None else np.ascontiguousarray(wd, dt).reshape(-1)
    b = empty if bd is None else np.ascontiguousarray(bd, dt).reshape(-1)
    n = shape3[0] if ctx.layout == "rows" else shape3[1]
    out, mean, var = np.empty(shape3, dt), np.empty(n, np.float64), np.empty(n, np.float64)
    k = kernels.module("norm")
    (k.rows_forward if ctx.layout == "rows" else k.channels_forward)(x3, w, b, ctx.eps, out, mean, var)
    ctx.fast, ctx.stats = True, (mean, var)
    if ctx.layout == "channels":  # (batch_norm's running statistics)
        ctx.mean, ctx.var = mean.astype(dt).reshape(ctx.pshape), var.astype(dt).reshape(ctx.pshape)
    return out.reshape(xd.shape)


def _norm_fast_arrays(ctx, g, inputs, out, wanted):
    x = inputs[0]
    dt = x.dtype
    shape3 = _norm_shape(ctx, x.shape)
    x3 = np.ascontiguousarray(x).reshape(shape3)
    g3 = np.ascontiguousarray(g, dt).reshape(shape3)
    w = np.ascontiguousarray(inputs[1], dt).reshape(-1) if ctx.has_w else np.empty(0, dt)
    n = shape3[-1] if ctx.layout == "rows" else shape3[1]
    none = np.empty(0, np.float64)
    want_w, want_b = ctx.has_w and wanted[1], ctx.has_b and wanted[-1]
    # (x's own shape: an array that is no view becomes a leaf's .grad as it is, with no copy; replay._python_row)
    gx = np.empty(x.shape, dt) if wanted[0] else np.empty(0, dt)
    gw = np.zeros(n, np.float64) if want_w else none
    gb = np.zeros(n, np.float64) if want_b else none
    k = kernels.module("norm")
    (k.rows_backward if ctx.layout == "rows" else k.channels_backward)(
        g3, x3, w, *ctx.stats, ctx.eps, gx.reshape(shape3 if wanted[0] else (0,) * len(shape3)), gw, gb)
    grads = [gx if wanted[0] else None]  # (reshaped, then cast: arrays that are no views, handed to the leaves)
    if ctx.has_w:
        grads.append(gw.reshape(inputs[1].shape).astype(dt) if want_w else None)
    if ctx.has_b:
        grads.append(gb.reshape(inputs[-1].shape).astype(dt) if want_b else None)
    return tuple(grads)


def _norm_arrays(ctx, g, inputs, out, wanted):
    """d/dx = invstd * (gh - mean(gh) - xhat * mean(gh * xhat)), gh = g * weight; the affine's sums."""
    if getattr(ctx, "fast", False):
        return _norm_fast_arrays(ctx, g, inputs, out, wanted)
    axes, xhat, invstd = ctx.axes, ctx.xhat, ctx.invstd
    w = inputs[1] if ctx.has_w else None
    gh = g if w is None else g * w.reshape(ctx.pshape)
    grads = []
    if wanted[0]:
        if ctx.training:
            m1 = gh.mean(axis=axes, keepdims=True)
            m2 = (gh * xhat).mean(axis=axes, keepdims=True)
            grads.append((gh - m1 - xhat * m2) * invstd)
        else:
            grads.append(gh * invstd)
    else:
        grads.append(None)
    if ctx.has_w:
        grads.append((g * xhat).sum(axis=ctx.paxes).reshape(inputs[1].shape) if wanted[1] else None)
    if ctx.has_b:
        grads.append(g.sum(axis=ctx.paxes).reshape(inputs[-1].shape) if wanted[len(grads)] else None)
    return tuple(grads)


def _vjp_norm(ctx, g, inputs, out):
    """The same rule in tapegrad ops, with the statistics recomputed from x (so x's second derivative flows)."""
    x = inputs[0]
    if ctx.training:
        mean = x.mean(ctx.axes, keepdim=True)
        xc = x - mean
        invstd = ((xc * xc).mean(ctx.axes, keepdim=True) + ctx.eps).rsqrt()
    else:
        xc = x - _new(ctx.mean)
        invstd = _new(ctx.invstd)
    xhat = xc * invstd
    w = inputs[1] if ctx.has_w else None
    gh = g if w is None else g * w.reshape(ctx.pshape)
    if ctx.training:
        gx = (gh - gh.mean(ctx.axes, keepdim=True) - xhat * (gh * xhat).mean(ctx.axes, keepdim=True)) * invstd
    else:
        gx = gh * invstd
    res = [gx]
    # (no parameter axes: layer_norm over every dim; a Tensor's sum over dim=() would reduce them all, as torch's)
    over = (lambda t: t.sum(ctx.paxes)) if ctx.paxes else (lambda t: t)
    if ctx.has_w:
        res.append(over(g * xhat).reshape(inputs[1].shape))
    if ctx.has_b:
        res.append(over(g).reshape(inputs[-1].shape))
    return tuple(res)


def _normalized(ctx, xd, wd, bd):
    """The forward on arrays; keeps xhat and invstd in ctx for the backward (the compiled kernels: the statistics)."""
    if xd.dtype.itemsize == 2:  # float16, bfloat16: in float32 (ATen's accumulate type), the result rounded once
        f32 = (None if a is None else a.astype(np.float32) for a in (wd, bd))
        return _normalized(ctx, xd.astype(np.float32), *f32).astype(xd.dtype)
    if _norm_fast(ctx, xd):
        return _norm_fast_forward(ctx, xd, wd, bd)
    if ctx.training:
        mean = xd.mean(axis=ctx.axes, keepdims=True)
        xc = xd - mean
        var = np.mean(xc * xc, axis=ctx.axes, keepdims=True)
        ctx.mean, ctx.var = mean, var
    else:
        xc = xd - ctx.mean
        var = ctx.var
    invstd = (1.0 / np.sqrt(var + ctx.eps)).astype(xd.dtype, copy=False)
    xhat = xc * invstd
    value = xhat if wd is None else xhat * wd.reshape(ctx.pshape)
    if bd is not None:
        value = value + bd.reshape(ctx.pshape)
    ctx.xhat, ctx.invstd = xhat, invstd
    return np.asanyarray(value, xd.dtype, order="C")


def _affine(t, dt):
    """A norm's weight or bias for an input of dtype dt: in dt, but a float32 one for a float16 / bfloat16 input
    (ATen's mixed-type norms, as under autocast: its gradient is float32's, not rounded to the input's dtype)."""
    if t is None:
        return None
    t = _tensor(t)
    return t if dt.itemsize == 2 and t._data.dtype == np.float32 else _to_dtype(t, dt)


def _normalize(op, x, w, b, ctx):
    ctx.has_w, ctx.has_b = w is not None, b is not None
    value = _normalized(ctx, x._data, None if w is None else w._data, None if b is None else b._data)
    inputs = (x,) + ((w,) if w is not None else ()) + ((b,) if b is not None else ())
    return _record(OPS[op], value, inputs, aux=ctx)


_warned_same = [False]


def _warn_asymmetric_same(pads):
    """torch's TORCH_WARN_ONCE for padding='same' whose two sides differ (an even kernel, odd dilation)."""
    if not _warned_same[0] and any(a != b for a, b in pads):
        _warned_same[0] = True
        warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy "
                      "of the input be created", UserWarning, stacklevel=user_stacklevel())


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """F.batch_norm: its own checks of the batch and of eps, then torch.batch_norm's (_batch_norm)."""
    x = _tensor(input)
    if training and x.ndim and x._data.size // builtins.max(x.shape[1] if x.ndim > 1 else 1, 1) == 1 and \
            x._data.size:  # (torch's _verify_batch_size: one value per channel)
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {_size(x)}")
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return _batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)


def _batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    x = _tensor(input)
    if x._data.size == 0:  # (torch's empty input, before any check: a copy scaled by the first weight and bias,
        out = x.clone()    # running stats untouched)
        if weight is not None:
            out = out * _tensor(weight)[0]
        if bias is not None:
            out = out + _tensor(bias)[0]
        return out
    C = x.shape[1] if x.ndim > 1 else 1
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and _tensor(t).numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {_tensor(t).numel()}")
    axes = (0,) + tuple(range(2, x.ndim))
    pshape = (1, C) + (1,) * (x.ndim - 2)
    ctx = Ctx(axes=axes, paxes=axes, pshape=pshape, eps=float(eps), training=bool(training), layout="channels")
    dt = x._data.dtype
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        if _tape_local.tracing is not None:  # tapegrad.compile: the statistics as inputs, read at each call
            rm, rv = (_to_dtype(_tensor(t), dt).reshape(pshape) for t in (running_mean, running_var))
            y = (x - rm) * (rv + float(eps)).rsqrt()
            y = y if weight is None else y * _to_dtype(_tensor(weight), dt).reshape(pshape)
            return y if bias is None else y + _to_dtype(_tensor(bias), dt).reshape(pshape)
        stats = dt if dt.itemsize != 2 else np.float32  # (float16, bfloat16 inputs: in float32, see _normalized)
        ctx.mean = _tensor(running_mean)._data.astype(stats).reshape(pshape)
        ctx.var = _tensor(running_var)._data.astype(stats).reshape(pshape)
    w, b = _affine(weight, dt), _affine(bias, dt)
    out = _normalize("batch_norm", x, w, b, ctx)
    if training and running_mean is not None:
        args = (ctx, _tensor(running_mean), _tensor(running_var), float(momentum), x._data.size // builtins.max(C, 1))
        if _tape_local.tracing is not None:  # tapegrad.compile: each replay updates them after its rows
            _tape_local.tape.defer("call", _update_running_stats, args, [])
        else:
            _update_running_stats(*args)
    return out


def _update_running_stats(ctx, rm, rv, m, n):
    """batch_norm in training mode: the running statistics moved toward the batch's (ctx.mean, ctx.var)."""
    mean, var = ctx.mean.reshape(-1), ctx.var.reshape(-1) * (n / (n - 1))
    rm._data[...] = (1 - m) * rm._data + m * mean.astype(rm._data.dtype)
    rv._data[...] = (1 - m) * rv._data + m * var.astype(rv._data.dtype)
    rm._bump_version(), rv._bump_version()


def _size(x):
    return "torch.Size([" + ", ".join(str(s) for s in x.shape) + "])"


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    x = _tensor(input)
    ns = (int(normalized_shape),) if isinstance(normalized_shape, numbers.Integral) else tuple(
        int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(str(s) for s in ns)}], but got input of size{list(x.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(_tensor(t).shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(_tensor(t).shape)} and normalized_shape = {list(ns)}")
    axes = tuple(range(x.ndim - k, x.ndim))
    dt = x._data.dtype
    ctx = Ctx(axes=axes, paxes=tuple(range(x.ndim - k)), pshape=ns, eps=float(eps), training=True, layout="rows")
    w, b = _affine(weight, dt), _affine(bias, dt)
    return _normalize("layer_norm", x, w, b, ctx)


# -- channel dropout -----------------------------------------------------------------------------------------------
def _feature_dropout(input, p, training, inplace, batched):
    x = _tensor(input)
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return x
    lead = 2 if batched else 1
    shape = tuple(x.shape[:lead]) + (1,) * (x.ndim - lead)
    dt = x._data.dtype if _dtype.is_float(x._data.dtype) else np.dtype(np.float32)
    if p == 1:
        mask = np.zeros(shape, dt)
    elif _tape_local.tracing is not None and not inplace:  # tapegrad.compile: a mask each replay draws again
        return mul(x, _tape_local.tape.record_draw(_dropout_draw, (shape, p, dt), False))
    else:  # torch's _dropout_impl(feature): bernoulli_(1 - p) of (N, C, 1, ...), / (1 - p)
        mask = _dropout_draw(shape, p, dt)
    if inplace:
        return x.mul_(_new(mask))
    return mul(x, _new(mask))


def dropout1d(input, p=0.5, training=True, inplace=False):
    x = _tensor(input)
    if x.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D input. Note that dropout1d "
                           f"exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           f"dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(x, p, training, inplace, x.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    x = _tensor(input)
    if x.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {x.ndim}-D input to dropout2d, which is deprecated and will result in "
                      f"an error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      f"inputs).")
    if x.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.")
    return _feature_dropout(x, p, training, inplace, True)  # torch's feature_dropout: dims 0 and 1


# -- tapegrad.compile: each row recomputed from new arrays of the traced shapes, its saved context refreshed ---------
def _conv_replay(ctx, x, w, b=None):
    if getattr(ctx, "transposed", False):
        return _conv_t_forward(ctx, x.reshape(ctx.xshape4), w.reshape(ctx.wshape4), b)
    return _conv_forward(ctx, x.reshape(ctx.xshape4), w.reshape(ctx.wshape4), b)


def _max_pool_replay(ctx, x):
    return _max_pool_planes(ctx, x)[0]


def _norm_replay(ctx, x, *affine):
    w = affine[0] if ctx.has_w else None
    b = affine[-1] if ctx.has_b else None
    return _normalized(ctx, x, w, b)


registry.python("conv", "ConvolutionBackward0", _conv_replay, _vjp_conv, array_vjp=_conv_arrays)
registry.python("max_pool", "MaxPool2DWithIndicesBackward0", _max_pool_replay, _vjp_max_pool,
                array_vjp=_max_pool_arrays)
# (in training mode, tapegrad.compile replays its running statistics' update as an effect after the rows)
registry.python("batch_norm", "NativeBatchNormBackward0", _norm_replay, _vjp_norm, array_vjp=_norm_arrays)
registry.python("layer_norm", "NativeLayerNormBackward0", _norm_replay, _vjp_norm, array_vjp=_norm_arrays)
