"""Layer norm and batch norm (training statistics) forward and backward, each one compiled pass per row or
channel instead of about ten NumPy passes and temporaries (mean, centre, square, mean, invstd, scale, shift;
and the backward's five). Statistics and the backward's sums accumulate in float64 (reassociated: _sum);
layer norm's affine is computed in x's dtype, as torch's kernel computes it (in float64 it took half the
forward: 60 -> 31 us for 1,024 rows of 128 float32). x-hat is recomputed from x, mean and var instead of being
kept. In its own module so that only normalization compiles it.

Layouts: rows (R, D), normalized over D with an affine per D (layer_norm); channels (N, C, S), normalized
over N and S with an affine per C (batch_norm). An absent weight or bias is an empty array.
"""
import math

import numpy as np
from numba import njit

from .memory import JIT


# The two reductions may reassociate their sums (fastmath "reassoc" only, no other flag: NaN and infinity
# behave as without it), which lets LLVM vectorise them: 5x faster measured (65,536 float32: 33 us -> 6 us).
# A sum's rounding then depends on the machine's vector width, in float64, far below float32's resolution.
@njit(fastmath={"reassoc"}, **JIT)
def _sum(v, m):
    """(sum of v - m, sum of (v - m)^2) over a 1-d run, float64."""
    s = 0.0
    q = 0.0
    for j in range(v.shape[0]):
        d = v[j] - m
        s += d
        q += d * d
    return s, q


@njit(fastmath={"reassoc"}, **JIT)
def _grad_sums(g, v, m):
    """(sum of g, sum of g (v - m)) over 1-d runs, float64."""
    s = 0.0
    q = 0.0
    for j in range(v.shape[0]):
        s += g[j]
        q += g[j] * (v[j] - m)
    return s, q


@njit(inline="always", **JIT)
def _affine(v, scale, shift, out):
    for j in range(v.shape[0]):
        out[j] = v[j] * scale + shift


@njit(inline="always", **JIT)
def _input_grad(g, v, a, c0, c2, out):
    """out = a (g - c0 - v c2): the input's gradient, with c0 = c1 - mean c2 folded once."""
    for j in range(v.shape[0]):
        out[j] = a * (g[j] - c0 - v[j] * c2)


@njit(**JIT)
def rows_forward(x, w, b, eps, out, mean, var):
    R, D = x.shape
    # (an absent weight or bias: ones and zeros, so that one loop serves all four cases)
    wv, bv = (w if w.size else np.ones(D, x.dtype)), (b if b.size else np.zeros(D, x.dtype))
    for r in range(R):
        s, _ = _sum(x[r], 0.0)
        m = s / D
        d, q = _sum(x[r], m)  # (two-pass variance; d, the rounding of the mean, corrects it)
        v = (q - d * d / D) / D
        rs = 1.0 / math.sqrt(v + eps)
        mean[r], var[r] = m, v
        # the affine in x's dtype, as torch's kernel computes it (in float64 it took half the pass's time)
        _normalized_row(x[r], x.dtype.type(m), x.dtype.type(rs), wv, bv, out[r])


@njit(inline="always", **JIT)
def _normalized_row(v, m, rs, w, b, out):
    for j in range(v.shape[0]):
        out[j] = (v[j] - m) * rs * w[j] + b[j]


@njit(fastmath={"reassoc"}, **JIT)
def _weighted_sums(g, v, w, m):
    """(sum of g w, sum of g w (v - m)) over 1-d runs, float64."""
    s = 0.0
    q = 0.0
    for j in range(v.shape[0]):
        gh = g[j] * np.float64(w[j])
        s += gh
        q += gh * (v[j] - m)
    return s, q


@njit(**JIT)
def rows_backward(g, x, w, mean, var, eps, gx, gw, gb):
    """gx = rstd (gh - mean(gh) - xhat mean(gh xhat)), gh = g w; gw += g xhat, gb += g (float64 sums)."""
    R, D = x.shape
    wv = w if w.size else np.ones(D, x.dtype)
    for r in range(R):
        m = mean[r]
        rs = 1.0 / math.sqrt(var[r] + eps)
        gr, xr = g[r], x[r]
        if gw.size:
            for j in range(D):
                gw[j] += gr[j] * ((xr[j] - m) * rs)
        if gb.size:
            for j in range(D):
                gb[j] += gr[j]
        if gx.size:
            s1, s2 = _weighted_sums(gr, xr, wv, m)
            s1 /= D
            s2 *= rs * rs / D
            c0 = s1 - m * s2
            o = gx[r]
            for j in range(D):
                o[j] = rs * (gr[j] * np.float64(wv[j]) - c0 - xr[j] * s2)


@njit(**JIT)
def channels_forward(x, w, b, eps, out, mean, var):
    N, C, S = x.shape
    M = N * S
    for c in range(C):
        s = 0.0
        for n in range(N):
            s += _sum(x[n, c], 0.0)[0]
        m = s / M
        d = 0.0
        q = 0.0
        for n in range(N):
            dn, qn = _sum(x[n, c], m)
            d += dn
            q += qn
        v = (q - d * d / M) / M
        rs = 1.0 / math.sqrt(v + eps)
        mean[c], var[c] = m, v
        scale = rs * w[c] if w.size else rs
        shift = (b[c] if b.size else 0.0) - m * scale
        for n in range(N):
            _affine(x[n, c], scale, shift, out[n, c])


@njit(**JIT)
def channels_backward(g, x, w, mean, var, eps, gx, gw, gb):
    """Per channel: gw = sum g xhat, gb = sum g, gx = w rstd (g - gb / M - xhat gw / M)."""
    N, C, S = x.shape
    M = N * S
    for c in range(C):
        m = mean[c]
        rs = 1.0 / math.sqrt(var[c] + eps)
        sg = 0.0
        sgx = 0.0
        for n in range(N):
            a, q = _grad_sums(g[n, c], x[n, c], m)
            sg += a
            sgx += q
        sgx *= rs
        if gw.size:
            gw[c] = sgx
        if gb.size:
            gb[c] = sg
        if gx.size:
            wc = w[c] if w.size else 1.0
            a = wc * rs
            c1 = sg / M
            c2 = sgx / M * rs
            for n in range(N):
                _input_grad(g[n, c], x[n, c], a, c1 - m * c2, c2, gx[n, c])
