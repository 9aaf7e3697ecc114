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
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1  # the window's extent
    dense = dh == 1 and dw == 1
    for p in range(P):
        for i in range(oh):
            h0 = i * sh - ph
            for j in range(ow):
                w0 = j * sw - pw
                best = x.dtype.type(-np.inf)
                at = 0
                rest = not (dense and h0 >= 0 and h0 + eh <= H and w0 >= 0 and w0 + ew <= W)
                if not rest:
                    # A window of adjacent taps inside the plane (every pooling without dilation, but at padded
                    # borders): selects, not branches, as which tap of random data wins is unpredictable and
                    # mispredicted branches took half the time (384 planes of 28 x 28, 2 x 2: 690 -> 330 us).
                    # NaN is left out here; a window that has one runs again below, where it wins.
                    at = h0 * W + w0
                    for a in range(kh):
                        for b in range(kw):
                            v = x[p, h0 + a, w0 + b]
                            t = np.int64(v > best)
                            at += t * ((h0 + a) * W + w0 + b - at)
                            best = v if v > best else best
                            rest |= v != v
                if rest:
                    hs, ws = h0, w0
                    while hs < 0:
                        hs += dh
                    while ws < 0:
                        ws += dw
                    best = x.dtype.type(-np.inf)
                    at = hs * W + ws
                    for h in range(hs, min(h0 + eh, H), dh):
                        for w in range(ws, min(w0 + ew, W), dw):
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
