"""cross_entropy with class indices in one pass per sample: log-softmax, the loss, and its gradient.

In NumPy the same takes about 25 calls on small arrays: 41 µs of a 64 x 10 batch, a fifth of an MLP step's
forward (benchmarks/). In its own module so that only cross_entropy compiles it.
"""
import math

import numpy as np
from numba import njit

from .memory import JIT
from .reduce import float64_sum


@njit(**JIT)
def cross_entropy_rows(x, top, targets, class_weight, ignore_index, mean, per, dx, picked, share):
    """x (M, C) logits; targets (M,) int64; class_weight (C,), or empty for none; top: the rows' maxima, with
    exp(x - top) already in dx (NumPy's SIMD exp, for large logits: compiled code calls libm's expf once per
    element, and a language model's 700 x 1,000 logits took 2.6 ms, torch's forward and backward 0.55), or empty:
    this pass computes both.

    Writes each sample's loss -w * log_softmax(x)[target] into per, its target (0 where ignored) into
    picked, its share of the loss (w, over the weight sum for the mean; 0 where ignored) into share, and the
    loss's gradient, (softmax(x) - onehot) * share, into dx. Returns (the first sample whose target is out
    of range, or -1; the sum of per, over the weight sum for the mean). Checks every target before any
    x[i, target] is read.
    """
    m, c = x.shape
    bad, total = _weight_total(targets, class_weight, ignore_index, c)
    if bad >= 0:
        return bad, 0.0
    given = top.size > 0
    loss = 0.0
    for i in range(m):
        if given:
            high, s = np.float64(top[i]), float64_sum(dx[i])
        else:
            high, s = _exp_row(x[i], dx[i])
        loss += _finish_row(x, i, targets[i], high, s, class_weight, ignore_index, mean, total, per, dx, picked, share)
    return -1, loss / total if mean else loss  # (every sample ignored: 0 / 0, NaN as in torch)


@njit(inline="always", **JIT)
def _exp_row(v, e):
    """(the maximum of v, the float64 sum of exp(v - maximum)), the exponentials written into e."""
    top = -np.inf
    for j in range(v.size):
        top = max(top, v[j])
    s = 0.0
    for j in range(v.size):
        ej = math.exp(v[j] - top)
        e[j] = ej
        s += ej
    return top, s


@njit(inline="always", **JIT)
def _weight_total(targets, class_weight, ignore_index, c):
    """(the first sample whose target is out of range, or -1; the weight of the samples not ignored)."""
    weighted = class_weight.size > 0
    total = 0.0
    for i in range(targets.size):
        t = targets[i]
        if t == ignore_index:
            continue
        if t < 0 or t >= c:
            return i, 0.0
        total += class_weight[t] if weighted else 1.0
    return -1, total


@njit(inline="always", **JIT)
def _finish_row(x, i, t, top, s, class_weight, ignore_index, mean, total, per, dx, picked, share):
    """Row i's loss, target and share, and its gradient from dx's exp(x - top) summing to s; returns the loss."""
    if t == ignore_index:  # no loss and no gradient (torch's, also when every sample is ignored)
        picked[i], share[i], per[i] = 0, 0.0, 0.0
        dx[i, :] = 0.0
        return 0.0
    w = class_weight[t] if class_weight.size > 0 else 1.0
    scale = w / total if mean else w  # (0 / 0 when every weight is 0: NaN, as in torch)
    picked[i], share[i] = t, scale
    per[i] = -w * (x[i, t] - top - math.log(s))
    for j in range(dx.shape[1]):
        dx[i, j] = dx[i, j] / s * scale
    dx[i, t] -= scale
    return per[i]


@njit(**JIT)
def pointwise_total32(kind, x, t, c):
    """The float64 sum of a pointwise loss's float32 terms over flat float32 x and t, each term rounded as ops/loss.py's
    NumPy forward rounds it (kind 0: mse, (x - t)^2; 1: smooth_l1 with beta c; 2: huber with delta c). NumPy took 4
    to 10 calls for them (32 elements: mse 2.6 us, smooth_l1 5.6 us; 1.2-1.3 us here), and its float32 sum is less
    accurate than this float64 one."""
    f = np.float32
    half, cc, hc = f(0.5), f(c), f(0.5 * c)
    total = 0.0
    for k in range(x.size):
        d = x[k] - t[k]
        if kind == 0:
            v = d * d
        else:
            d = abs(d)
            if kind == 1:
                v = half * d * d / cc if d < cc else d - hc
            else:
                v = half * d * d if d < cc else cc * (d - hc)
        total += v
    return total
