"""max_pool2d's forward (the maximum and torch's flat index per window), adaptive max pooling's, and their
adjoint, per (H, W) plane.

A running maximum over the taps in NumPy makes k*k passes over the output and allocates a mask per tap; here
it is one pass. In its own module so that only max pooling compiles it.
"""
import numpy as np
from numba import njit

from .memory import JIT


@njit(**JIT)
def max_pool2d_planes(x, kh, kw, sh, sw, ph, pw, dh, dw, out, index):
    """x (P, H, W); out, index (P, oh, ow). torch's rule: the window starts at its first in-bounds tap, with
    maximum -inf there; a later tap wins when it is greater or NaN. Padding is never read."""
    P, H, W = x.shape
    oh, ow = out.shape[1], out.shape[2]
    for p in range(P):
        for i in range(oh):
            h0 = i * sh - ph
            hs = h0
            while hs < 0:
                hs += dh
            he = min(h0 + (kh - 1) * dh + 1, H)
            for j in range(ow):
                w0 = j * sw - pw
                ws = w0
                while ws < 0:
                    ws += dw
                we = min(w0 + (kw - 1) * dw + 1, W)
                best = -np.inf
                at = hs * W + ws
                for h in range(hs, he, dh):
                    for w in range(ws, we, dw):
                        v = x[p, h, w]
                        if v > best or np.isnan(v):
                            best = v
                            at = h * W + w
                out[p, i, j] = best
                index[p, i, j] = at


@njit(**JIT)
def max_pool2d_adjoint(g, index, gx):
    """gx (P, H*W) += g (P, L) at index (P, L)."""
    P, L = g.shape
    for p in range(P):
        for o in range(L):
            gx[p, index[p, o]] += g[p, o]


@njit(**JIT)
def adaptive_max_pool2d_planes(x, out, index):
    """x (P, H, W); out, index (P, oh, ow). Window (i, j) spans rows floor(i*H/oh) to ceil((i+1)*H/oh), columns
    likewise (torch's start_index/end_index); the first maximum wins, a NaN wins (torch's rule)."""
    P, H, W = x.shape
    oh, ow = out.shape[1], out.shape[2]
    for p in range(P):
        for i in range(oh):
            hs = (i * H) // oh
            he = ((i + 1) * H + oh - 1) // oh
            for j in range(ow):
                ws = (j * W) // ow
                we = ((j + 1) * W + ow - 1) // ow
                best = -np.inf
                at = hs * W + ws
                for h in range(hs, he):
                    for w in range(ws, we):
                        v = x[p, h, w]
                        if v > best or np.isnan(v):
                            best = v
                            at = h * W + w
                out[p, i, j] = best
                index[p, i, j] = at
