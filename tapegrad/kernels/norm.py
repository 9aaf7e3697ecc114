"""Layer norm and batch norm (training statistics) forward and backward, each one compiled pass per row or
channel instead of about ten NumPy passes and temporaries (mean, centre, square, mean, invstd, scale, shift;
and the backward's five). Statistics and the backward's sums accumulate in float64 (reassociated: _sum), except
layer norm's backward's row sums (rows_backward);
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
        # One pass, shifted by the row's first element: in float64 the variance loses no more than the two-pass
        # form did (the shift is within the row's spread), and the pass it saves was a quarter of the kernel
        # (1,024 rows of 128 float32: 31 -> 23 us)
        x0 = np.float64(x[r, 0])
        d, q = _sum(x[r], x0)
        m = x0 + d / D
        v = max((q - d * d / D) / D, 0.0)
        rs = 1.0 / math.sqrt(v + eps)
        mean[r], var[r] = m, v
        # the affine in x's dtype, as torch's kernel computes it (in float64 it took half the pass's time)
        _normalized_row(x[r], x.dtype.type(m), x.dtype.type(rs), wv, bv, out[r])


@njit(inline="always", **JIT)
def _normalized_row(v, m, rs, w, b, out):
    for j in range(v.shape[0]):
        out[j] = (v[j] - m) * rs * w[j] + b[j]


# Rows a block of which add their gw, gb terms in x's dtype before the float64 totals take them: per-element
# float64 accumulation kept the row loop from vectorising (57 -> 36 us for 1,024 rows of 128 float32), and a
# block of 16 float32 terms rounds far below what a float64 total of thousands of rows then adds.
_BLOCK = 16


@njit(fastmath={"reassoc"}, **JIT)
def rows_backward(g, x, w, mean, var, eps, gx, gw, gb):
    """gx = rstd (gh - mean(gh) - xhat mean(gh xhat)), gh = g w; gw += g xhat, gb += g (float64 totals). One
    pass per row for the sums and the row's gw, gb terms, one for gx, all in x's dtype. The row sums are x's dtype
    as torch's kernel's are: in float64 they kept the pass at half the vector width (1,024 rows of 128 float32:
    134 -> 97 us, Zen 3); a float32 row's sum over its lanes rounds to about 1e-7 of the row's scale (tested
    against float64 rows in tests/nn)."""
    R, D = x.shape
    wv = w if w.size else np.ones(D, x.dtype)
    bw, bb = np.zeros(D, x.dtype), np.zeros(D, x.dtype)  # the block's gw, gb terms
    # (gx not wanted: its rows go to a scratch row; a branch on it in the loop cost 4 us of 35)
    out = gx if gx.size else np.empty((1, D), x.dtype)
    last = out.shape[0] - 1
    one = x.dtype.type
    for r in range(R):
        rs = 1.0 / math.sqrt(var[r] + eps)
        m, a = one(mean[r]), one(rs)
        gr, xr = g[r], x[r]
        s = one(0)
        q = one(0)
        for j in range(D):
            xh = (xr[j] - m) * a
            bw[j] += gr[j] * xh
            bb[j] += gr[j]
            gh = gr[j] * wv[j]
            s += gh
            q += gh * xh
        c1, c2 = one(s / D), one(q / D)
        o = out[min(r, last)]
        for j in range(D):
            o[j] = a * (gr[j] * wv[j] - c1 - (xr[j] - m) * a * c2)
        if r % _BLOCK == _BLOCK - 1 or r == R - 1:
            for j in range(D):
                if gw.size:
                    gw[j] += bw[j]
                if gb.size:
                    gb[j] += bb[j]
                bw[j] = 0
                bb[j] = 0


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
