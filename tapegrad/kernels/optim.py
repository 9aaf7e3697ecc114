"""Optimizer updates as one compiled pass over a parameter group (torch's foreach= / fused=).

Each kernel takes the group's arrays by address, a row of `table` per parameter (`memory.view`: C-contiguous,
of the dtype `like` has; the caller checks shapes and layouts, and holds the arrays, before the call), and
applies, element by element, the same operations in the same order as torch's single-tensor update
(torch.optim.sgd._single_tensor_sgd, adam._single_tensor_adam, rmsprop._single_tensor_rmsprop, and adagrad,
adamax, nadam, radam, adadelta, rprop, asgd's) as tapegrad's NumPy loop writes them (foreach=False), rounding
to the parameter's dtype after each, so float32 stays float32. Results differ from torch's only where torch's
vectorised loops fuse a multiply-add. Hyper-parameters arrive as Python floats and are cast to the
parameter's dtype where torch casts them (a Scalar argument of a tensor op); bias corrections are computed
in float64 from each parameter's own step, as torch computes them in Python. Version cells (0: none) are
bumped here too, once per in-place operation torch's single-tensor update applies to the parameter.

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
def _bump(cell, times):
    """times: the in-place operations torch's single-tensor update applies to the parameter."""
    if cell != 0:
        view(cell, _INT64, np.int64)[0] += times


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
        _bump(table[j, 3], 1)


@njit(inline="always", **JIT)
def _adam_moments(g, p, m, v, i, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize, decoupled):
    """(param after decoupled decay, grad, new exp_avg, new exp_avg_sq) at i; writes the two moments (Adam,
    NAdam, RAdam)."""
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
    return pi, gi, mi, vi


@njit(**JIT)
def _adam_loop(p, g, m, v, step_size, bc2_sqrt, eps_t, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize,
               decoupled):
    for i in range(p.size):
        pi, _, mi, vi = _adam_moments(g, p, m, v, i, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize, decoupled)
        p[i] = pi + (step_size * mi) / (math.sqrt(vi) / bc2_sqrt + eps_t)


@njit(**JIT)
def _adam_amsgrad_loop(p, g, m, v, vmax, step_size, bc2_sqrt, eps_t, w1, one, b2, omb2, decay, wd_t, weight_decay,
                       maximize, decoupled):
    for i in range(p.size):
        pi, _, mi, vi = _adam_moments(g, p, m, v, i, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize, decoupled)
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
        _bump(table[j, 6], 2 if decoupled and weight_decay != 0 else 1)  # param.mul_, then addcdiv_


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
        _bump(table[j, 6], 1)


# -- Adagrad, Adamax, NAdam, RAdam, Adadelta, Rprop, ASGD: tapegrad's NumPy loop (optim/<name>.py), one element at
# a time. Each entry's table: param, grad, the state arrays, the 0-d states (of step_like's dtype), version cell.

@njit(inline="always", **JIT)
def _nan_max(a, b):
    """np.maximum / torch.maximum: a NaN on either side wins."""
    return a if a >= b or a != a else b


@njit(inline="always", **JIT)
def _sign(x, one, zero):
    """np.sign: +0 for either zero, NaN for NaN."""
    if x > 0:
        return one
    if x < 0:
        return -one
    return zero if x == 0 else x


@njit(**JIT)
def _adagrad_loop(p, g, s, clr_t, eps_t, wd_t, weight_decay, maximize):
    for i in range(p.size):
        gi = _grad(g, p, i, wd_t, weight_decay, maximize)
        si = s[i] + gi * gi
        s[i] = si
        p[i] = p[i] + (gi * clr_t) / (math.sqrt(si) + eps_t)


@njit(**HOLD_GIL)
def adagrad(table, like, num, step_like, step_num, lr, lr_decay, eps, weight_decay, maximize):
    """columns: param, grad, sum, step, version cell."""
    t = like.dtype.type
    eps_t, wd_t = t(eps), t(weight_decay)
    for j in range(table.shape[0]):
        s = view(table[j, 3], step_num, step_like.dtype)
        s[0] += 1
        clr = lr / (1.0 + (float(s[0]) - 1.0) * lr_decay)
        _adagrad_loop(view(table[j, 0], num, like.dtype), view(table[j, 1], num, like.dtype),
                      view(table[j, 2], num, like.dtype), t(-clr), eps_t, wd_t, weight_decay, maximize)
        _bump(table[j, 4], 1)


@njit(**JIT)
def _adamax_loop(p, g, m, u, clr_t, w1, one, b2, eps_t, wd_t, weight_decay, maximize):
    for i in range(p.size):
        gi = _grad(g, p, i, wd_t, weight_decay, maximize)
        mi = _lerp(m[i], gi, w1, one)
        m[i] = mi
        ui = _nan_max(u[i] * b2, abs(gi) + eps_t)
        u[i] = ui
        p[i] = p[i] + (mi * clr_t) / ui


@njit(**HOLD_GIL)
def adamax(table, like, num, step_like, step_num, lr, beta1, beta2, eps, weight_decay, maximize):
    """columns: param, grad, exp_avg, exp_inf, step, version cell."""
    t = like.dtype.type
    w1, one, b2, eps_t, wd_t = t(1.0 - beta1), t(1.0), t(beta2), t(eps), t(weight_decay)
    for j in range(table.shape[0]):
        s = view(table[j, 4], step_num, step_like.dtype)
        s[0] += 1
        clr = lr / (1.0 - beta1 ** float(s[0]))
        _adamax_loop(view(table[j, 0], num, like.dtype), view(table[j, 1], num, like.dtype),
                     view(table[j, 2], num, like.dtype), view(table[j, 3], num, like.dtype), t(-clr), w1, one, b2,
                     eps_t, wd_t, weight_decay, maximize)
        _bump(table[j, 5], 1)


@njit(**JIT)
def _nadam_loop(p, g, m, v, bc2_t, c1_t, c2_t, eps_t, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize,
                decoupled):
    for i in range(p.size):
        pi, gi, mi, vi = _adam_moments(g, p, m, v, i, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize,
                                       decoupled)
        denom = math.sqrt(vi / bc2_t) + eps_t
        pi = pi + (gi * c1_t) / denom
        p[i] = pi + (mi * c2_t) / denom


@njit(**HOLD_GIL)
def nadam(table, like, num, step_like, step_num, lr, beta1, beta2, eps, weight_decay, momentum_decay, maximize,
          decoupled):
    """columns: param, grad, exp_avg, exp_avg_sq, step, mu_product (multiplied here), version cell."""
    t, ts = like.dtype.type, step_like.dtype.type
    one = t(1.0)
    w1, b2, omb2, eps_t, wd_t = t(1.0 - beta1), t(beta2), t(1.0 - beta2), t(eps), t(weight_decay)
    decay = t(1.0 - lr * weight_decay)
    for j in range(table.shape[0]):
        s = view(table[j, 4], step_num, step_like.dtype)
        s[0] += 1
        step = float(s[0])
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product = view(table[j, 5], step_num, step_like.dtype)
        mu_product[0] = mu_product[0] * ts(mu)  # a 0-d tensor of the step's dtype, as torch keeps it
        product = float(mu_product[0])
        c1 = t(-lr * (1.0 - mu) / (1.0 - product))
        c2 = t((-lr * mu_next) / (1.0 - product * mu_next))
        _nadam_loop(view(table[j, 0], num, like.dtype), view(table[j, 1], num, like.dtype),
                    view(table[j, 2], num, like.dtype), view(table[j, 3], num, like.dtype),
                    t(1.0 - beta2 ** step), c1, c2, eps_t, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize,
                    decoupled)
        _bump(table[j, 6], 3 if decoupled and weight_decay != 0 else 2)  # [param.mul_], two addcdiv_


@njit(**JIT)
def _radam_loop(p, g, m, v, bc1_t, lr_t, bc2_sqrt, rect_t, eps_t, w1, one, b2, omb2, decay, wd_t, weight_decay,
                maximize, decoupled, rectified):
    for i in range(p.size):
        pi, gi, mi, vi = _adam_moments(g, p, m, v, i, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize,
                                       decoupled)
        u = (mi / bc1_t) * lr_t
        if rectified:
            u = (u * ((one / (math.sqrt(vi) + eps_t)) * bc2_sqrt)) * rect_t
        p[i] = pi - u


@njit(**HOLD_GIL)
def radam(table, like, num, step_like, step_num, lr, beta1, beta2, eps, weight_decay, maximize, decoupled):
    """columns: param, grad, exp_avg, exp_avg_sq, step, version cell."""
    t = like.dtype.type
    one = t(1.0)
    w1, b2, omb2, eps_t, wd_t, lr_t = t(1.0 - beta1), t(beta2), t(1.0 - beta2), t(eps), t(weight_decay), t(lr)
    decay = t(1.0 - lr * weight_decay)
    rho_inf = 2 / (1 - beta2) - 1
    for j in range(table.shape[0]):
        s = view(table[j, 4], step_num, step_like.dtype)
        s[0] += 1
        step = float(s[0])
        bc2 = 1 - beta2 ** step
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bc2
        rectified = rho_t > 5.0
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5 \
            if rectified else 1.0
        _radam_loop(view(table[j, 0], num, like.dtype), view(table[j, 1], num, like.dtype),
                    view(table[j, 2], num, like.dtype), view(table[j, 3], num, like.dtype), t(1 - beta1 ** step), lr_t,
                    t(bc2 ** 0.5), t(rect), eps_t, w1, one, b2, omb2, decay, wd_t, weight_decay, maximize, decoupled,
                    rectified)
        _bump(table[j, 5], 2 if decoupled and weight_decay != 0 else 1)


@njit(**JIT)
def _adadelta_loop(p, g, sq, acc, lr_t, rho_t, omr, eps_t, wd_t, weight_decay, maximize):
    for i in range(p.size):
        gi = _grad(g, p, i, wd_t, weight_decay, maximize)
        si = sq[i] * rho_t + (gi * omr) * gi
        sq[i] = si
        delta = (math.sqrt(acc[i] + eps_t) / math.sqrt(si + eps_t)) * gi
        acc[i] = acc[i] * rho_t + (delta * omr) * delta
        p[i] = p[i] + delta * lr_t


@njit(**HOLD_GIL)
def adadelta(table, like, num, step_like, step_num, lr, rho, eps, weight_decay, maximize):
    """columns: param, grad, square_avg, acc_delta, step, version cell."""
    t = like.dtype.type
    lr_t, rho_t, omr, eps_t, wd_t = t(-lr), t(rho), t(1.0 - rho), t(eps), t(weight_decay)
    for j in range(table.shape[0]):
        view(table[j, 4], step_num, step_like.dtype)[0] += 1
        _adadelta_loop(view(table[j, 0], num, like.dtype), view(table[j, 1], num, like.dtype),
                       view(table[j, 2], num, like.dtype), view(table[j, 3], num, like.dtype), lr_t, rho_t, omr,
                       eps_t, wd_t, weight_decay, maximize)
        _bump(table[j, 5], 1)


@njit(**JIT)
def _rprop_loop(p, g, prev, size, plus, minus, lo, hi, one, zero, maximize):
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        f = _sign(gi * prev[i], one, zero)
        f = plus if f > 0 else (minus if f < 0 else (one if f == 0 else f))
        si = size[i] * f
        si = lo if si < lo else si  # np.clip: NaN stays NaN
        si = hi if si > hi else si
        size[i] = si
        gi = zero if f == minus else gi
        prev[i] = gi
        p[i] = p[i] - _sign(gi, one, zero) * si


@njit(**HOLD_GIL)
def rprop(table, like, num, step_like, step_num, etaminus, etaplus, step_size_min, step_size_max, maximize):
    """columns: param, grad, prev, step_size, step, version cell."""
    t = like.dtype.type
    plus, minus, lo, hi = t(etaplus), t(etaminus), t(step_size_min), t(step_size_max)
    for j in range(table.shape[0]):
        view(table[j, 4], step_num, step_like.dtype)[0] += 1
        _rprop_loop(view(table[j, 0], num, like.dtype), view(table[j, 1], num, like.dtype),
                    view(table[j, 2], num, like.dtype), view(table[j, 3], num, like.dtype), plus, minus, lo, hi, t(1.0),
                    t(0.0), maximize)
        _bump(table[j, 5], 1)


@njit(**JIT)
def _asgd_loop(p, g, ax, mu, decay_t, neg_eta, wd_t, weight_decay, maximize, averaged):
    t = p.dtype.type
    for i in range(p.size):
        gi = _grad(g, p, i, wd_t, weight_decay, maximize)
        pi = (p[i] * decay_t) + gi * neg_eta
        p[i] = pi
        # (pi - ax) * mu rounds to the parameter's dtype before the sum, whatever mu's dtype (NumPy's in-place *=)
        ax[i] = ax[i] + t((pi - ax[i]) * mu) if averaged else pi


@njit(**HOLD_GIL)
def asgd(table, like, num, step_like, step_num, lr, lambd, alpha, t0, weight_decay, maximize):
    """columns: param, grad, ax, step, eta, mu (eta and mu written here from the new step), version cell."""
    t = like.dtype.type
    wd_t = t(weight_decay)
    for j in range(table.shape[0]):
        s = view(table[j, 3], step_num, step_like.dtype)
        eta = view(table[j, 4], step_num, step_like.dtype)
        mu = view(table[j, 5], step_num, step_like.dtype)
        s[0] += 1
        eta_value = float(eta[0])
        _asgd_loop(view(table[j, 0], num, like.dtype), view(table[j, 1], num, like.dtype),
                   view(table[j, 2], num, like.dtype), mu[0], t(1.0 - lambd * eta_value), t(-eta_value), wd_t,
                   weight_decay, maximize, mu[0] != 1)
        step = float(s[0])
        eta[0] = lr / ((1 + lambd * lr * step) ** alpha)
        since = step - t0
        mu[0] = 1.0 / (since if since > 1.0 else 1.0)  # Python's max(1, step - t0)
        _bump(table[j, 6], 2)  # param.mul_, param.add_
