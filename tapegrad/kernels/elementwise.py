"""Adjoints of the elementwise ops. GENERATED from the op declarations (tapegrad/ops/elementwise.py) by
`python -m tapegrad.kernels.codegen`: do not edit by hand."""
from math import cos, cosh, exp, log, sin, sinh, sqrt  # noqa: F401

import numpy as np
from numba import njit
from numpy import uint64 as u64

from .memory import JIT
from .scalar import _select, _with_input, erf, power, sigmoid, sign, where  # noqa: F401


@njit(**JIT)
def unary(op, X, Y, G, GX, c, c2):
    n = G.size
    if op == 4:  # neg
        for i in range(n):
            g = G[i]
            GX[i] += -g
    elif op == 5:  # exp
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * y
    elif op == 6:  # log
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g / x
    elif op == 7:  # sqrt
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g / (2 * y)
    elif op == 8:  # sin
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * cos(x)
    elif op == 9:  # cos
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += -g * sin(x)
    elif op == 10:  # tan
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * (1 + y * y)
    elif op == 11:  # tanh
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * (1 - y * y)
    elif op == 12:  # sigmoid
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * y * (1 - y)
    elif op == 13:  # relu
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += _with_input(where(y <= 0, 0 * g, g), y)
    elif op == 14:  # abs
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * sign(x)
    elif op == 15:  # reciprocal
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += -g * y * y
    elif op == 16:  # square
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += 2 * g * x
    elif op == 17:  # rsqrt
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += -0.5 * g * y * y * y
    elif op == 18:  # log1p
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g / (1 + x)
    elif op == 19:  # expm1
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * (y + 1)
    elif op == 20:  # log2
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g / (x * 0.6931471805599453)
    elif op == 21:  # exp2
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * y * 0.6931471805599453
    elif op == 22:  # asin
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g / sqrt(1 - x * x)
    elif op == 23:  # acos
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += -g / sqrt(1 - x * x)
    elif op == 24:  # atan
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g / (1 + x * x)
    elif op == 25:  # sinh
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * cosh(x)
    elif op == 26:  # cosh
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * sinh(x)
    elif op == 27:  # erf
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * 1.1283791670955126 * exp(-x * x)
    elif op == 28:  # sign
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 29:  # floor
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 30:  # angle
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 31:  # ceil
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 32:  # round
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 33:  # trunc
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 34:  # gelu
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * (0.5 * (1 + erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x))
    elif op == 35:  # silu
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * sigmoid(x) * (1 + x * (1 - sigmoid(x)))
    elif op == 36:  # softplus
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x * c > c2, g, g * sigmoid(c * x))
    elif op == 37:  # leaky_relu
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += _with_input(where(x > 0, g, g * c), x)
    elif op == 38:  # elu
        for i in range(n):
            x = X[i]
            y = Y[i]
            g = G[i]
            GX[i] += where(x > 0, g, where(x < 0, g * (y + c), g * (c + 0 * x)))
    elif op == 39:  # hardtanh
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where((x <= c) | (x >= c2), 0 * g, g + 0 * x)
    elif op == 40:  # clamp
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where((x >= c) & (x <= c2), g, 0 * g)
    elif op == 41:  # copy
        for i in range(n):
            g = G[i]
            GX[i] += g
    elif op == 43:  # add_ts
        for i in range(n):
            g = G[i]
            GX[i] += g
    elif op == 44:  # add_st
        for i in range(n):
            g = G[i]
            GX[i] += g
    elif op == 46:  # sub_ts
        for i in range(n):
            g = G[i]
            GX[i] += g
    elif op == 47:  # sub_st
        for i in range(n):
            g = G[i]
            GX[i] += -g
    elif op == 49:  # mul_ts
        for i in range(n):
            g = G[i]
            GX[i] += g * c
    elif op == 50:  # mul_st
        for i in range(n):
            g = G[i]
            GX[i] += g * c
    elif op == 52:  # div_ts
        for i in range(n):
            g = G[i]
            GX[i] += g / c
    elif op == 53:  # div_st
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += -g * (c / x / x)
    elif op == 55:  # pow_ts
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * _select(c == 0, 0 * c, c * power(x, c - 1))
    elif op == 56:  # pow_st
        for i in range(n):
            x = X[i]
            y = Y[i]
            g = G[i]
            GX[i] += where((c == 0) & (x >= 0), 0 * g, g * y * log(c))
    elif op == 58:  # maximum_ts
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x < c, 0 * g, where(x == c, 0.5 * g, g))
    elif op == 59:  # maximum_st
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x < c, 0 * g, where(c == x, 0.5 * g, g))
    elif op == 61:  # minimum_ts
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x > c, 0 * g, where(x == c, 0.5 * g, g))
    elif op == 62:  # minimum_st
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x > c, 0 * g, where(c == x, 0.5 * g, g))
    elif op == 64:  # atan2_ts
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where((x == 0) & (c == 0), 0 * g, g * c / (x * x + c * c))
    elif op == 65:  # atan2_st
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where((c == 0) & (x == 0), 0 * g, -g * c / (c * c + x * x))
    elif op == 66:  # gelu_tanh
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * (sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x)) * (1 + x * (1 - sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))) * 1.5957691216057308 * (1 + 0.134145 * x * x)))
    elif op == 67:  # clamp_min
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x >= c, g, 0 * g)
    elif op == 68:  # clamp_max
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x <= c, g, 0 * g)
    elif op == 69:  # round_decimals
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 70:  # log_sigmoid
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * sigmoid(-x)
    elif op == 71:  # _div_scalar
        for i in range(n):
            g = G[i]
            GX[i] += g / c
    elif op == 72:  # _mul_scalar
        for i in range(n):
            g = G[i]
            GX[i] += g * c


@njit(**JIT)
def binary(op, A, B, Y, G, GA, GB, IA, IB, outer, inner, ao, aj, bo, bj, need_a, need_b, c, c2):
    if IA.size == 0:
        _strided(op, A, B, Y, G, GA, GB, outer, inner, ao, aj, bo, bj, need_a, need_b, c, c2)
        return
    # a broadcast two strides cannot say (rare): the inputs gathered by the maps, their adjoints made by the
    # strided loops and added into place in the order of the elements, as a loop through the maps adds them
    n = IA.size
    A2, B2 = np.empty(n, A.dtype), np.empty(n, B.dtype)
    for k in range(n):
        A2[k] = A[IA[k]]
        B2[k] = B[IB[k]]
    GA2, GB2 = np.zeros(n, GA.dtype), np.zeros(n, GB.dtype)
    _strided(op, A2, B2, Y, G, GA2, GB2, 1, n, 0, 1, 0, 1, need_a, need_b, c, c2)
    for k in range(n):
        if need_a:
            GA[IA[k]] += GA2[k]
        if need_b:
            GB[IB[k]] += GB2[k]


@njit(**JIT)
def _strided(op, A, B, Y, G, GA, GB, outer, inner, ao, aj, bo, bj, need_a, need_b, c, c2):
    # Each input's adjoint in a loop of its own, with unsigned positions, so that LLVM vectorizes it: a
    # signed index costs a wraparound select per access, and a loop that may write both GA and GB is
    # vectorized only where a runtime check finds their blocks apart, which an input that needs no
    # adjoint's is not (the adjoint of x * a constant ran 5x slower than NumPy's). Each element's
    # additions keep their order.
    outer, inner, ao, aj, bo, bj = u64(outer), u64(inner), u64(ao), u64(aj), u64(bo), u64(bj)
    if op == 42:  # add
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    g = G[k]
                    GA[ia] += g
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ib = o * bo + j * bj
                    g = G[k]
                    GB[ib] += g
    elif op == 45:  # sub
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    g = G[k]
                    GA[ia] += g
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ib = o * bo + j * bj
                    g = G[k]
                    GB[ib] += -g
    elif op == 48:  # mul
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * b
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    g = G[k]
                    GB[ib] += g * a
    elif op == 51:  # div
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g / b
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -g * (a / b / b)
    elif op == 54:  # pow
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * _select(b == 0, 0 * b, b * power(a, b - 1))
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    y = Y[k]
                    g = G[k]
                    GB[ib] += where((a == 0) & (b >= 0), 0 * g, g * y * log(a))
    elif op == 57:  # maximum
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GA[ia] += where(a < b, 0 * g, where(a == b, 0.5 * g, g))
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += where(b < a, 0 * g, where(a == b, 0.5 * g, g))
    elif op == 60:  # minimum
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GA[ia] += where(a > b, 0 * g, where(a == b, 0.5 * g, g))
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += where(b > a, 0 * g, where(a == b, 0.5 * g, g))
    elif op == 63:  # atan2
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GA[ia] += where((a == 0) & (b == 0), 0 * g, g * b / (a * a + b * b))
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += where((a == 0) & (b == 0), 0 * g, -g * a / (a * a + b * b))
    elif op == 74:  # exp_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * b
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    g = G[k]
                    GB[ib] += g * a
    elif op == 75:  # log_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g / b
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -g * a / (b * b)
    elif op == 76:  # sqrt_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g / (2 * b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -g * a / (2 * b * (2 * b)) * 2
    elif op == 77:  # sin_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * cos(b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * a * -sin(b)
    elif op == 78:  # cos_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += -(g * sin(b))
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * -a * cos(b)
    elif op == 79:  # tan_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * (1 + b * b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * a * b + g * a * b
    elif op == 80:  # tanh_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * (1 - b * b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -(g * a) * b + -(g * a) * b
    elif op == 81:  # sigmoid_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * (1 - b) * b
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * (1 - b) * a + -(g * (a * b))
    elif op == 82:  # relu_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += where(b <= 0, g, 0 * g) * 0 + where(b <= 0, 0 * g, g)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ib = o * bo + j * bj
                    g = G[k]
                    GB[ib] += 0 * g
    elif op == 83:  # reciprocal_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += -(g * b * b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * b * -a + g * (-a * b)
    elif op == 84:  # square_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * b * 2
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    g = G[k]
                    GB[ib] += g * (2 * a)
    elif op == 85:  # rsqrt_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * b * b * b * -0.5
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * b * b * (-0.5 * a) + g * b * (-0.5 * a * b) + g * (-0.5 * a * b * b)
    elif op == 86:  # log1p_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g / (1 + b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -g * a / ((1 + b) * (1 + b))
    elif op == 87:  # expm1_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * (b + 1)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    g = G[k]
                    GB[ib] += g * a
    elif op == 88:  # log2_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g / (b * 0.6931471805599453)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -g * a / (b * 0.6931471805599453 * (b * 0.6931471805599453)) * 0.6931471805599453
    elif op == 89:  # exp2_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * 0.6931471805599453 * b
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    g = G[k]
                    GB[ib] += g * 0.6931471805599453 * a
    elif op == 90:  # asin_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g / sqrt(1 - b * b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -(-g * a / (sqrt(1 - b * b) * sqrt(1 - b * b)) * (1 / (2 * sqrt(1 - b * b)))) * b + -(-g * a / (sqrt(1 - b * b) * sqrt(1 - b * b)) * (1 / (2 * sqrt(1 - b * b)))) * b
    elif op == 91:  # acos_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += -(g / sqrt(1 - b * b))
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -(-g * -a / (sqrt(1 - b * b) * sqrt(1 - b * b)) * (1 / (2 * sqrt(1 - b * b)))) * b + -(-g * -a / (sqrt(1 - b * b) * sqrt(1 - b * b)) * (1 / (2 * sqrt(1 - b * b)))) * b
    elif op == 92:  # atan_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g / (1 + b * b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -g * a / ((1 + b * b) * (1 + b * b)) * b + -g * a / ((1 + b * b) * (1 + b * b)) * b
    elif op == 93:  # sinh_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * cosh(b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * a * sinh(b)
    elif op == 94:  # cosh_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * sinh(b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * a * cosh(b)
    elif op == 95:  # erf_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * exp(-b * b) * 1.1283791670955126
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -(g * (a * 1.1283791670955126) * exp(-b * b) * b) + g * (a * 1.1283791670955126) * exp(-b * b) * -b
    elif op == 96:  # gelu_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * (0.5 * (1 + erf(b * 0.7071067811865476)) + b * 0.3989422804014327 * exp(-0.5 * b * b))
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * a * 0.5 * (1.1283791670955126 * exp(-(b * 0.7071067811865476 * (b * 0.7071067811865476)))) * 0.7071067811865476 + g * a * exp(-0.5 * b * b) * 0.3989422804014327 + g * a * (b * 0.3989422804014327) * exp(-0.5 * b * b) * b * -0.5 + g * a * (b * 0.3989422804014327) * exp(-0.5 * b * b) * (-0.5 * b)
    elif op == 97:  # silu_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * (1 + b * (1 - sigmoid(b))) * sigmoid(b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * (1 + b * (1 - sigmoid(b))) * a * (sigmoid(b) * (1 - sigmoid(b))) + g * (a * sigmoid(b)) * (1 - sigmoid(b)) + -(g * (a * sigmoid(b)) * b) * (sigmoid(b) * (1 - sigmoid(b)))
    elif op == 98:  # softplus_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += where(b * c > c2, g, 0 * g) + where(b * c > c2, 0 * g, g) * sigmoid(c * b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += where(b * c > c2, 0 * g, g) * a * (sigmoid(c * b) * (1 - sigmoid(c * b))) * c
    elif op == 99:  # leaky_relu_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += where(b > 0, g, 0 * g) + where(b > 0, 0 * g, g) * c
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ib = o * bo + j * bj
                    g = G[k]
                    GB[ib] += 0 * g
    elif op == 100:  # hardtanh_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += where((b <= c) | (b >= c2), g, 0 * g) * 0 + where((b <= c) | (b >= c2), 0 * g, g)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GB[ib] += where((b <= c) | (b >= c2), 0 * g, g) * 0
    elif op == 101:  # mul_backward0
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * b
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    g = G[k]
                    GB[ib] += g * a
    elif op == 102:  # mul_backward1
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * b
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    g = G[k]
                    GB[ib] += g * a
    elif op == 103:  # div_backward0
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GA[ia] += -g * b / (a * a)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    g = G[k]
                    GB[ib] += g / a
    elif op == 104:  # div_st_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += -(g * (c / b / b))
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -(g * -a / b) * c / (b * b) + -(g * -a) * (c / b) / (b * b)
    elif op == 105:  # pow_ts_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * _select(c == 0, 0 * c, c * power(b, c - 1))
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += _select(c == 0, 0 * (g * a), (g * a)) * c * ((c - 1) * power(b, c - 1 - 1))
    elif op == 106:  # atan2_ts_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += where((b == 0) & (c == 0), g, 0 * g) * 0 + where((b == 0) & (c == 0), 0 * g, g) / (b * b + c * c) * c
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -where((b == 0) & (c == 0), 0 * g, g) * (a * c) / ((b * b + c * c) * (b * b + c * c)) * b + -where((b == 0) & (c == 0), 0 * g, g) * (a * c) / ((b * b + c * c) * (b * b + c * c)) * b
    elif op == 107:  # atan2_st_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += where((c == 0) & (b == 0), g, 0 * g) * 0 + -(where((c == 0) & (b == 0), 0 * g, g) / (c * c + b * b) * c)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -where((c == 0) & (b == 0), 0 * g, g) * (-a * c) / ((c * c + b * b) * (c * c + b * b)) * b + -where((c == 0) & (b == 0), 0 * g, g) * (-a * c) / ((c * c + b * b) * (c * c + b * b)) * b
    elif op == 108:  # gelu_tanh_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * (sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 + b * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b))) * 1.5957691216057308 * (1 + 0.134145 * b * b)))
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += g * a * (1 + b * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b))) * 1.5957691216057308 * (1 + 0.134145 * b * b)) * (sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)))) * 1.5957691216057308 + g * a * (1 + b * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b))) * 1.5957691216057308 * (1 + 0.134145 * b * b)) * (sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)))) * 1.5957691216057308 * b * b * 0.044715 + g * a * (1 + b * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b))) * 1.5957691216057308 * (1 + 0.134145 * b * b)) * (sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)))) * 1.5957691216057308 * b * (0.044715 * b) + g * a * (1 + b * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b))) * 1.5957691216057308 * (1 + 0.134145 * b * b)) * (sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)))) * 1.5957691216057308 * (0.044715 * b * b) + g * a * sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 + 0.134145 * b * b) * 1.5957691216057308 * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b))) + -(g * a * sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 + 0.134145 * b * b) * 1.5957691216057308 * b) * (sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)))) * 1.5957691216057308 + -(g * a * sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 + 0.134145 * b * b) * 1.5957691216057308 * b) * (sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)))) * 1.5957691216057308 * b * b * 0.044715 + -(g * a * sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 + 0.134145 * b * b) * 1.5957691216057308 * b) * (sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)))) * 1.5957691216057308 * b * (0.044715 * b) + -(g * a * sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 + 0.134145 * b * b) * 1.5957691216057308 * b) * (sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)))) * 1.5957691216057308 * (0.044715 * b * b) + g * a * sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (b * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b))) * 1.5957691216057308) * b * 0.134145 + g * a * sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b)) * (b * (1 - sigmoid(1.5957691216057308 * (b + 0.044715 * b * b * b))) * 1.5957691216057308) * (0.134145 * b)
    elif op == 109:  # log_sigmoid_backward
        if need_a:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    b = B[ib]
                    g = G[k]
                    GA[ia] += g * sigmoid(-b)
        if need_b:
            for o in range(outer):
                for j in range(inner):
                    k = o * inner + j
                    ia = o * ao + j * aj
                    ib = o * bo + j * bj
                    a = A[ia]
                    b = B[ib]
                    g = G[k]
                    GB[ib] += -(g * a * (sigmoid(-b) * (1 - sigmoid(-b))))


# The opcodes these kernels dispatch on (they follow the order the op modules declare their ops in):
# kernels.load() checks them against the registry, so a stale file raises instead of misrouting rows.
CODES = {'neg': 4, 'exp': 5, 'log': 6, 'sqrt': 7, 'sin': 8, 'cos': 9, 'tan': 10, 'tanh': 11, 'sigmoid': 12, 'relu':
         13, 'abs': 14, 'reciprocal': 15, 'square': 16, 'rsqrt': 17, 'log1p': 18, 'expm1': 19, 'log2': 20, 'exp2':
         21, 'asin': 22, 'acos': 23, 'atan': 24, 'sinh': 25, 'cosh': 26, 'erf': 27, 'sign': 28, 'floor': 29,
         'angle': 30, 'ceil': 31, 'round': 32, 'trunc': 33, 'gelu': 34, 'silu': 35, 'softplus': 36, 'leaky_relu':
         37, 'elu': 38, 'hardtanh': 39, 'clamp': 40, 'copy': 41, 'add_ts': 43, 'add_st': 44, 'sub_ts': 46, 'sub_st':
         47, 'mul_ts': 49, 'mul_st': 50, 'div_ts': 52, 'div_st': 53, 'pow_ts': 55, 'pow_st': 56, 'maximum_ts': 58,
         'maximum_st': 59, 'minimum_ts': 61, 'minimum_st': 62, 'atan2_ts': 64, 'atan2_st': 65, 'gelu_tanh': 66,
         'clamp_min': 67, 'clamp_max': 68, 'round_decimals': 69, 'log_sigmoid': 70, '_div_scalar': 71,
         '_mul_scalar': 72, 'add': 42, 'sub': 45, 'mul': 48, 'div': 51, 'pow': 54, 'maximum': 57, 'minimum': 60,
         'atan2': 63, 'exp_backward': 74, 'log_backward': 75, 'sqrt_backward': 76, 'sin_backward': 77,
         'cos_backward': 78, 'tan_backward': 79, 'tanh_backward': 80, 'sigmoid_backward': 81, 'relu_backward': 82,
         'reciprocal_backward': 83, 'square_backward': 84, 'rsqrt_backward': 85, 'log1p_backward': 86,
         'expm1_backward': 87, 'log2_backward': 88, 'exp2_backward': 89, 'asin_backward': 90, 'acos_backward': 91,
         'atan_backward': 92, 'sinh_backward': 93, 'cosh_backward': 94, 'erf_backward': 95, 'gelu_backward': 96,
         'silu_backward': 97, 'softplus_backward': 98, 'leaky_relu_backward': 99, 'hardtanh_backward': 100,
         'mul_backward0': 101, 'mul_backward1': 102, 'div_backward0': 103, 'div_st_backward': 104,
         'pow_ts_backward': 105, 'atan2_ts_backward': 106, 'atan2_st_backward': 107, 'gelu_tanh_backward': 108,
         'log_sigmoid_backward': 109}
