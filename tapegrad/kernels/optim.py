"""Optimizer updates as one compiled pass over a parameter group (torch's foreach= / fused=).

Each kernel takes the group's arrays by address, a row of `table` per parameter (`memory.view`: C-contiguous,
of the dtype `like` has; the caller checks shapes and layouts, and holds the arrays, before the call), and
applies, element by element, the same operations in the same order as torch's single-tensor update
(torch.optim.sgd._single_tensor_sgd, adam._single_tensor_adam, rmsprop._single_tensor_rmsprop), rounding
to the parameter's dtype after each, so float32 stays float32. Results differ from torch's only where torch's
vectorised loops fuse a multiply-add. Hyper-parameters arrive as Python floats and are cast to the
parameter's dtype where torch casts them (a Scalar argument of a tensor op); bias corrections are computed
in float64 from each parameter's own step, as torch computes them in Python. Version cells (0: none) are
bumped here too, as torch's in-place updates bump a parameter's version.

In its own module so that only a compiled optimizer step imports and compiles it.
"""
import math

import numpy as np
from numba import njit

from .memory import JIT, view

_INT64 = np.dtype(np.int64).num
# The entry points keep the GIL: the arrays they write are held only through Python objects (parameters, state
# dicts) that another thread could drop or replace during the call.
HOLD_GIL = dict(JIT, nogil=False)


@njit(inline="always", **JIT)
def _bump(cell):
    if cell != 0:
        view(cell, _INT64, np.int64)[0] += 1


@njit(inline="always", **JIT)
def _lerp(a, end, w, one):
    """torch's lerp: from a for a small weight, from end for a large one."""
    if abs(w) < 0.5:
        return a + w * (end - a)
    return end - (end - a) * (one - w)


@njit(inline="always", **JIT)
def _grad(g, p, i, wd_t, weight_decay, maximize):
    """grad (negated to maximize) plus weight_decay * param (torch: grad.add(param, alpha=weight_decay))."""
    gi = -g[i] if maximize else g[i]
    return gi + wd_t * p[i] if weight_decay != 0 else gi


# Each loop below stores to every array it is given, unconditionally: a store under a flag (the momentum
# buffer when momentum == 0) kept LLVM from vectorising the whole loop, 3x slower than NumPy on 512 x 512.

@njit(**JIT)
def _sgd_loop(p, g, lr_t, wd_t, weight_decay, maximize):
    for i in range(p.size):
        p[i] = p[i] + lr_t * _grad(g, p, i, wd_t, weight_decay, maximize)


@njit(**JIT)
def _sgd_momentum_loop(p, g, b, first, lr_t, m_t, damp_t, wd_t, weight_decay, nesterov, maximize):
    for i in range(p.size):
        gi = _grad(g, p, i, wd_t, weight_decay, maximize)
        bi = gi if first else b[i] * m_t + damp_t * gi  # (damp_t is exactly 1 without dampening)
        b[i] = bi
        p[i] = p[i] + lr_t * (gi + m_t * bi if nesterov else bi)


@njit(**HOLD_GIL)
def sgd(table, like, num, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """table columns: param, grad, momentum buffer (unread when momentum == 0), version cell, 1 where the buffer
    is new (torch clones the gradient into it)."""
    t = like.dtype.type
    lr_t, m_t, damp_t, wd_t = t(-lr), t(momentum), t(1.0 - dampening), t(weight_decay)
    for j in range(table.shape[0]):
        p = view(table[j, 0], num, like.dtype)
        g = view(table[j, 1], num, like.dtype)
        if momentum == 0:
            _sgd_loop(p, g, lr_t, wd_t, weight_decay, maximize)
        else:
            _sgd_momentum_loop(p, g, view(table[j, 2], num, like.dtype), table[j, 4] != 0, lr_t, m_t, damp_t, wd_t,
                               weight_decay, nesterov, maximize)
        _bump(table[j, 3])


@njit(inline="always", **JIT)
def _adam_moments(g, p, m, v, i, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize, decoupled):
    """(param after decoupled decay, new exp_avg, new exp_avg_sq) at i; writes the two moments."""
    pi = p[i]
    if decoupled:
        gi = -g[i] if maximize else g[i]
        pi = pi * decay if weight_decay != 0 else pi
    else:
        gi = _grad(g, p, i, wd_t, weight_decay, maximize)
    mi = _lerp(m[i], gi, w1, one)
    vi = v[i] * b2 + (omb2 * gi) * gi
    m[i] = mi
    v[i] = vi
    return pi, mi, vi


@njit(**JIT)
def _adam_loop(p, g, m, v, step_size, bc2_sqrt, eps_t, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize,
               decoupled):
    for i in range(p.size):
        pi, mi, vi = _adam_moments(g, p, m, v, i, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize, decoupled)
        p[i] = pi + (step_size * mi) / (math.sqrt(vi) / bc2_sqrt + eps_t)


@njit(**JIT)
def _adam_amsgrad_loop(p, g, m, v, vmax, step_size, bc2_sqrt, eps_t, w1, one, b2, omb2, decay, wd_t, weight_decay,
                       maximize, decoupled):
    for i in range(p.size):
        pi, mi, vi = _adam_moments(g, p, m, v, i, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize, decoupled)
        vm = vmax[i]
        vm = vi if vi > vm or vi != vi else vm  # torch.maximum: NaN wins
        vmax[i] = vm
        p[i] = pi + (step_size * mi) / (math.sqrt(vm) / bc2_sqrt + eps_t)


@njit(**HOLD_GIL)
def adam(table, like, num, step_like, step_num, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled):
    """table columns: param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq (unread without amsgrad), the 0-d step
    (of step_like's dtype; incremented here), version cell."""
    t = like.dtype.type
    one = t(1.0)
    w1, b2, omb2, eps_t, wd_t = t(1.0 - beta1), t(beta2), t(1.0 - beta2), t(eps), t(weight_decay)
    decay = t(1.0 - lr * weight_decay)
    for j in range(table.shape[0]):
        p = view(table[j, 0], num, like.dtype)
        g = view(table[j, 1], num, like.dtype)
        m = view(table[j, 2], num, like.dtype)
        v = view(table[j, 3], num, like.dtype)
        s = view(table[j, 5], step_num, step_like.dtype)
        s[0] += 1
        step = float(s[0])
        step_size = t(-(lr / (1.0 - beta1 ** step)))
        bc2_sqrt = t((1.0 - beta2 ** step) ** 0.5)
        if amsgrad:
            _adam_amsgrad_loop(p, g, m, v, view(table[j, 4], num, like.dtype), step_size, bc2_sqrt, eps_t, w1, one,
                               b2, omb2, decay, wd_t, weight_decay, maximize, decoupled)
        else:
            _adam_loop(p, g, m, v, step_size, bc2_sqrt, eps_t, w1, one, b2, omb2, decay, wd_t, weight_decay,
                       maximize, decoupled)
        _bump(table[j, 6])


@njit(inline="always", **JIT)
def _rmsprop_avg(g, p, sq, i, a_t, oma, wd_t, weight_decay, maximize):
    """(grad, new square_avg) at i; writes square_avg."""
    gi = -g[i] if maximize else g[i]
    gi = gi + p[i] * wd_t if weight_decay != 0 else gi  # torch: grad.add(param, alpha=weight_decay)
    si = sq[i] * a_t + (oma * gi) * gi
    sq[i] = si
    return gi, si


@njit(**JIT)
def _rmsprop_loop(p, g, sq, lr_t, a_t, oma, eps_t, wd_t, weight_decay, maximize):
    for i in range(p.size):
        gi, si = _rmsprop_avg(g, p, sq, i, a_t, oma, wd_t, weight_decay, maximize)
        p[i] = p[i] + (lr_t * gi) / (math.sqrt(si) + eps_t)


@njit(**JIT)
def _rmsprop_full_loop(p, g, sq, ga, b, lr_t, a_t, oma, one, eps_t, wd_t, m_t, weight_decay, momentum, centered,
                       maximize):
    """centered (grad_avg) and/or momentum (its buffer): the arrays a flag leaves out are p, never stored to."""
    for i in range(p.size):
        gi, si = _rmsprop_avg(g, p, sq, i, a_t, oma, wd_t, weight_decay, maximize)
        if centered:
            gai = _lerp(ga[i], gi, oma, one)
            ga[i] = gai
            avg = math.sqrt(si + (-gai) * gai) + eps_t
        else:
            avg = math.sqrt(si) + eps_t
        if momentum > 0:
            bi = b[i] * m_t + gi / avg
            b[i] = bi
            p[i] = p[i] + bi * lr_t
        else:
            p[i] = p[i] + (lr_t * gi) / avg


@njit(**HOLD_GIL)
def rmsprop(table, like, num, step_like, step_num, lr, alpha, eps, weight_decay, momentum, centered, maximize):
    """table columns: param, grad, square_avg, grad_avg (unread unless centered), momentum buffer (unread without
    momentum), the 0-d step (of step_like's dtype; incremented here), version cell."""
    t = like.dtype.type
    one = t(1.0)
    lr_t, a_t, oma, eps_t, wd_t, m_t = t(-lr), t(alpha), t(1.0 - alpha), t(eps), t(weight_decay), t(momentum)
    for j in range(table.shape[0]):
        p = view(table[j, 0], num, like.dtype)
        g = view(table[j, 1], num, like.dtype)
        sq = view(table[j, 2], num, like.dtype)
        view(table[j, 5], step_num, step_like.dtype)[0] += 1
        if centered or momentum > 0:
            ga = view(table[j, 3], num, like.dtype) if centered else p
            b = view(table[j, 4], num, like.dtype) if momentum > 0 else p
            _rmsprop_full_loop(p, g, sq, ga, b, lr_t, a_t, oma, one, eps_t, wd_t, m_t, weight_decay, momentum,
                               centered, maximize)
        else:
            _rmsprop_loop(p, g, sq, lr_t, a_t, oma, eps_t, wd_t, weight_decay, maximize)
        _bump(table[j, 6])
