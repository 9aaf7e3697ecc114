"""Optimizer updates as one compiled pass over a parameter group (torch's foreach= / fused=).

Each kernel takes the group's arrays by address (`memory.view`: C-contiguous, of the dtype `like` has) and
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


@njit(inline="always", **JIT)
def _bump(cells, j):
    if cells[j] != 0:
        view(cells[j], _INT64, np.int64)[0] += 1


@njit(inline="always", **JIT)
def _lerp(a, end, w, one):
    """torch's lerp: from a for a small weight, from end for a large one."""
    if abs(w) < 0.5:
        return a + w * (end - a)
    return end - (end - a) * (one - w)


@njit(**JIT)
def sgd(params, grads, bufs, cells, like, num, fresh, lr, momentum, dampening, weight_decay, nesterov,
        maximize):
    """bufs: momentum buffers (ignored when momentum == 0); fresh[j]: buffer j is new (torch clones the grad)."""
    t = like.dtype.type
    lr_t, m_t, damp_t, wd_t = t(-lr), t(momentum), t(1.0 - dampening), t(weight_decay)
    for j in range(params.size):
        p = view(params[j], num, like.dtype)
        g = view(grads[j], num, like.dtype)
        b = view(bufs[j], num, like.dtype) if momentum != 0 else p
        for i in range(p.size):
            gi = -g[i] if maximize else g[i]
            if weight_decay != 0:
                gi = gi + wd_t * p[i]
            if momentum != 0:
                if fresh[j]:
                    bi = gi
                elif dampening == 0:
                    bi = b[i] * m_t + gi
                else:
                    bi = b[i] * m_t + damp_t * gi
                b[i] = bi
                gi = gi + m_t * bi if nesterov else bi
            p[i] = p[i] + lr_t * gi
        _bump(cells, j)


@njit(**JIT)
def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, cells, like, num, step_like, step_num,
         lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled):
    """steps: each parameter's 0-d step tensor (dtype of step_like), incremented here."""
    t = like.dtype.type
    one = t(1.0)
    w1, b2, omb2, eps_t, wd_t = t(1.0 - beta1), t(beta2), t(1.0 - beta2), t(eps), t(weight_decay)
    decay = t(1.0 - lr * weight_decay)
    for j in range(params.size):
        p = view(params[j], num, like.dtype)
        g = view(grads[j], num, like.dtype)
        m = view(exp_avgs[j], num, like.dtype)
        v = view(exp_avg_sqs[j], num, like.dtype)
        vmax = view(max_exp_avg_sqs[j], num, like.dtype) if amsgrad else v
        s = view(steps[j], step_num, step_like.dtype)
        s[0] += 1
        step = float(s[0])
        step_size = t(-(lr / (1.0 - beta1 ** step)))
        bias_correction2_sqrt = t((1.0 - beta2 ** step) ** 0.5)
        for i in range(p.size):
            gi = -g[i] if maximize else g[i]
            pi = p[i]
            if weight_decay != 0:
                if decoupled:
                    pi = pi * decay
                else:
                    gi = gi + wd_t * pi
            mi = _lerp(m[i], gi, w1, one)
            m[i] = mi
            vi = v[i] * b2 + (omb2 * gi) * gi
            v[i] = vi
            if amsgrad:
                if vi > vmax[i] or vi != vi:  # torch.maximum: NaN wins
                    vmax[i] = vi
                vi = vmax[i]
            denom = math.sqrt(vi) / bias_correction2_sqrt + eps_t
            p[i] = pi + (step_size * mi) / denom
        _bump(cells, j)


@njit(**JIT)
def rmsprop(params, grads, square_avgs, grad_avgs, bufs, steps, cells, like, num, step_like, step_num, lr, alpha,
            eps, weight_decay, momentum, centered, maximize):
    t = like.dtype.type
    one = t(1.0)
    lr_t, a_t, oma, eps_t, wd_t, m_t = t(-lr), t(alpha), t(1.0 - alpha), t(eps), t(weight_decay), t(momentum)
    for j in range(params.size):
        p = view(params[j], num, like.dtype)
        g = view(grads[j], num, like.dtype)
        sq = view(square_avgs[j], num, like.dtype)
        ga = view(grad_avgs[j], num, like.dtype) if centered else p
        b = view(bufs[j], num, like.dtype) if momentum > 0 else p
        view(steps[j], step_num, step_like.dtype)[0] += 1
        for i in range(p.size):
            gi = -g[i] if maximize else g[i]
            if weight_decay != 0:
                gi = gi + p[i] * wd_t
            si = sq[i] * a_t + (oma * gi) * gi
            sq[i] = si
            if centered:
                gai = _lerp(ga[i], gi, oma, one)
                ga[i] = gai
                avg = math.sqrt(si + (-gai) * gai)
            else:
                avg = math.sqrt(si)
            avg = avg + eps_t
            if momentum > 0:
                bi = b[i] * m_t + gi / avg
                b[i] = bi
                p[i] = p[i] + bi * lr_t
            else:
                p[i] = p[i] + (lr_t * gi) / avg
        _bump(cells, j)
