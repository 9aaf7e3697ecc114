"""Layer norm and batch norm (training statistics) forward and backward, each one compiled pass per row or
channel instead of about ten NumPy passes and temporaries (mean, centre, square, mean, invstd, scale, shift;
and the backward's five). Statistics and the backward's sums accumulate in float64, in eight independent
partial sums (so the loop vectorises without fastmath's reassociation, and the result does not depend on the
machine's vector width); x-hat is recomputed from x, mean and var instead of being kept. In its own module so
that only normalization compiles it.

Layouts: rows (R, D), normalized over D with an affine per D (layer_norm); channels (N, C, S), normalized
over N and S with an affine per C (batch_norm). An absent weight or bias is an empty array.
"""
import math

import numpy as np
from numba import njit

from .memory import JIT


@njit(inline="always", **JIT)
def _sum(v, m):
    """(sum of v - m, sum of (v - m)^2) over a 1-d run, float64, in eight partial sums."""
    n = v.shape[0]
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    q0 = q1 = q2 = q3 = q4 = q5 = q6 = q7 = 0.0
    j = 0
    while j + 8 <= n:
        d0, d1, d2, d3 = v[j] - m, v[j + 1] - m, v[j + 2] - m, v[j + 3] - m
        d4, d5, d6, d7 = v[j + 4] - m, v[j + 5] - m, v[j + 6] - m, v[j + 7] - m
        a0 += d0
        a1 += d1
        a2 += d2
        a3 += d3
        a4 += d4
        a5 += d5
        a6 += d6
        a7 += d7
        q0 += d0 * d0
        q1 += d1 * d1
        q2 += d2 * d2
        q3 += d3 * d3
        q4 += d4 * d4
        q5 += d5 * d5
        q6 += d6 * d6
        q7 += d7 * d7
        j += 8
    s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
    q = ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7))
    while j < n:
        d = v[j] - m
        s += d
        q += d * d
        j += 1
    return s, q


@njit(inline="always", **JIT)
def _grad_sums(g, v, m):
    """(sum of g, sum of g (v - m)) over 1-d runs, float64, in eight partial sums."""
    n = v.shape[0]
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    q0 = q1 = q2 = q3 = q4 = q5 = q6 = q7 = 0.0
    j = 0
    while j + 8 <= n:
        g0, g1, g2, g3 = 1.0 * g[j], 1.0 * g[j + 1], 1.0 * g[j + 2], 1.0 * g[j + 3]
        g4, g5, g6, g7 = 1.0 * g[j + 4], 1.0 * g[j + 5], 1.0 * g[j + 6], 1.0 * g[j + 7]
        a0 += g0
        a1 += g1
        a2 += g2
        a3 += g3
        a4 += g4
        a5 += g5
        a6 += g6
        a7 += g7
        q0 += g0 * (v[j] - m)
        q1 += g1 * (v[j + 1] - m)
        q2 += g2 * (v[j + 2] - m)
        q3 += g3 * (v[j + 3] - m)
        q4 += g4 * (v[j + 4] - m)
        q5 += g5 * (v[j + 5] - m)
        q6 += g6 * (v[j + 6] - m)
        q7 += g7 * (v[j + 7] - m)
        j += 8
    s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
    q = ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7))
    while j < n:
        s += g[j]
        q += g[j] * (v[j] - m)
        j += 1
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
    for r in range(R):
        s, _ = _sum(x[r], 0.0)
        m = s / D
        d, q = _sum(x[r], m)  # (two-pass variance; d, the rounding of the mean, corrects it)
        v = (q - d * d / D) / D
        rs = 1.0 / math.sqrt(v + eps)
        mean[r], var[r] = m, v
        for j in range(D):
            y = (x[r, j] - m) * rs
            if w.size:
                y *= w[j]
            if b.size:
                y += b[j]
            out[r, j] = y


@njit(**JIT)
def rows_backward(g, x, w, mean, var, eps, gx, gw, gb):
    """gx = rstd (gh - mean(gh) - xhat mean(gh xhat)), gh = g w; gw += g xhat, gb += g (float64 sums)."""
    R, D = x.shape
    gh = np.empty(D, np.float64)
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
            if w.size:
                for j in range(D):
                    gh[j] = gr[j] * w[j]
            else:
                for j in range(D):
                    gh[j] = gr[j]
            s1, s2 = _grad_sums(gh, xr, m)
            s1 /= D
            s2 *= rs * rs / D
            _input_grad(gh, xr, rs, s1 - m * s2, s2, gx[r])


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
