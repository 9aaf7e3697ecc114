"""softmax and log_softmax over the last dimension of C-contiguous float32 / float64 rows, each way one compiled
pass per row instead of four or five NumPy passes and their temporaries (a (1, 2) policy's softmax: 4.3 us
through NumPy's ufuncs, torch 0.9). Rows are flat arrays of R rows of n elements. The exponentials are
vecmath's (in the rows' dtype, vectorised); a row's sum is in float64 (_total). The
backward adds into gx, so that the replay's compiled rule (runtime._softmax_rule) and the array rule
(ops/reduce.py, into zeros) give the same bits. In its own module so that only softmax compiles it.
"""
import math

import numpy as np
from numba import njit

from .memory import JIT
from .vecmath import exp

# The kernels take arrays of at most this many elements (ops/reduce.py, runtime._softmax_here): there they cost
# less than NumPy's passes and a backward's return to Python (about 10 us a row). Per element they cost more
# (4,096 x 64 float32, one thread: softmax forward 0.80 ms against NumPy's 0.55, log_softmax 1.78 against 0.54),
# so larger arrays keep NumPy's vectorised passes and their rows the array rule.
MAX_SIZE = 1024


# A row's sums are four interleaved float64 partial sums, in an order the code fixes: a reassociated loop
# (fastmath "reassoc") vectorised them too, but its rounding then followed the arrays' alignment in memory (one
# array's softmax differed in its last bit between two copies of it), where the rule and the array rule must agree.
@njit(inline="always", **JIT)
def _total(v, lo, n, m, kind, w):
    """The float64 sum over k in [lo, lo + n) of v[k] (kind 0), exp(v[k] - m) (kind 1) or v[k] w[k] (kind 2)."""
    s0 = s1 = s2 = s3 = 0.0
    end = lo + n - n % 4
    for k in range(lo, end, 4):
        s0 += _term(v, w, k, m, kind)
        s1 += _term(v, w, k + 1, m, kind)
        s2 += _term(v, w, k + 2, m, kind)
        s3 += _term(v, w, k + 3, m, kind)
    for k in range(end, lo + n):
        s0 += _term(v, w, k, m, kind)
    return (s0 + s1) + (s2 + s3)


@njit(inline="always", **JIT)
def _term(v, w, k, m, kind):
    if kind == 1:
        return np.float64(exp(v[k] - m))
    if kind == 2:
        return np.float64(v[k]) * np.float64(w[k])
    return np.float64(v[k])


@njit(**JIT)
def forward(x, out, R, n, log):
    """out = softmax (log: log_softmax) of each row of x: e^(x - max) / sum, or (x - max) - log(sum). A row with
    a NaN is NaN, as the max is then NaN (NumPy's maximum and torch's kernel propagate it)."""
    one = x.dtype.type
    for r in range(R):
        lo = r * n
        m = x[lo]
        for k in range(lo + 1, lo + n):
            v = x[k]
            if v > m or v != v:
                m = v
        if log:
            c = one(math.log(_total(x, lo, n, m, 1, x)))
            for k in range(lo, lo + n):
                out[k] = (x[k] - m) - c
        else:
            for k in range(lo, lo + n):
                out[k] = exp(x[k] - m)
            c = one(_total(out, lo, n, m, 0, out))
            for k in range(lo, lo + n):
                out[k] = out[k] / c


@njit(**JIT)
def backward(g, y, gx, R, n, log):
    """gx += y (g - sum(g y)) per row (softmax, y its output), or g - e^y sum(g) (log_softmax)."""
    one = y.dtype.type
    for r in range(R):
        lo = r * n
        if log:
            c = one(_total(g, lo, n, 0.0, 0, g))
            for k in range(lo, lo + n):
                gx[k] += g[k] - exp(y[k]) * c
        else:
            c = one(_total(g, lo, n, 0.0, 2, y))
            for k in range(lo, lo + n):
                gx[k] += y[k] * (g[k] - c)
