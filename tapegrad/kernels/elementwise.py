"""Adjoints of the elementwise ops. GENERATED from tapegrad/registry.py by
`python -m tapegrad.kernels.codegen`: do not edit by hand."""
from math import cos, cosh, exp, log, sin, sinh, sqrt  # noqa: F401

from numba import njit

from .memory import JIT
from .scalar import _select, _with_input, erf, power, sigmoid, sign, where  # noqa: F401


@njit(**JIT)
def unary(op, X, Y, G, GX, c, c2):
    n = G.size
    if op == 3:  # neg
        for i in range(n):
            g = G[i]
            GX[i] += -g
    elif op == 4:  # exp
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * y
    elif op == 5:  # log
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g / x
    elif op == 6:  # sqrt
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g / (2 * y)
    elif op == 7:  # sin
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * cos(x)
    elif op == 8:  # cos
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += -g * sin(x)
    elif op == 9:  # tan
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * (1 + y * y)
    elif op == 10:  # tanh
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * (1 - y * y)
    elif op == 11:  # sigmoid
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * y * (1 - y)
    elif op == 12:  # relu
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += _with_input(where(y <= 0, 0 * g, g), y)
    elif op == 13:  # abs
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * sign(x)
    elif op == 14:  # reciprocal
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += -g * y * y
    elif op == 15:  # square
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += 2 * g * x
    elif op == 16:  # rsqrt
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += -0.5 * g * y * y * y
    elif op == 17:  # log1p
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g / (1 + x)
    elif op == 18:  # expm1
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * (y + 1)
    elif op == 19:  # log2
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g / (x * 0.6931471805599453)
    elif op == 20:  # exp2
        for i in range(n):
            y = Y[i]
            g = G[i]
            GX[i] += g * y * 0.6931471805599453
    elif op == 21:  # asin
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g / sqrt(1 - x * x)
    elif op == 22:  # acos
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += -g / sqrt(1 - x * x)
    elif op == 23:  # atan
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g / (1 + x * x)
    elif op == 24:  # sinh
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * cosh(x)
    elif op == 25:  # cosh
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * sinh(x)
    elif op == 26:  # erf
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * 1.1283791670955126 * exp(-x * x)
    elif op == 27:  # sign
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 28:  # floor
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 29:  # ceil
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 30:  # round
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 31:  # trunc
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 32:  # gelu
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * (0.5 * (1 + erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x))
    elif op == 33:  # silu
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * sigmoid(x) * (1 + x * (1 - sigmoid(x)))
    elif op == 34:  # softplus
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x * c > c2, g, g * sigmoid(c * x))
    elif op == 35:  # leaky_relu
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += _with_input(where(x > 0, g, g * c), x)
    elif op == 36:  # elu
        for i in range(n):
            x = X[i]
            y = Y[i]
            g = G[i]
            GX[i] += where(x > 0, g, g * (y + c))
    elif op == 37:  # hardtanh
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where((x <= c) | (x >= c2), 0 * g, g + 0 * x)
    elif op == 38:  # clamp
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where((x >= c) & (x <= c2), g, 0 * g)
    elif op == 39:  # copy
        for i in range(n):
            g = G[i]
            GX[i] += g
    elif op == 41:  # add_ts
        for i in range(n):
            g = G[i]
            GX[i] += g
    elif op == 42:  # add_st
        for i in range(n):
            g = G[i]
            GX[i] += g
    elif op == 44:  # sub_ts
        for i in range(n):
            g = G[i]
            GX[i] += g
    elif op == 45:  # sub_st
        for i in range(n):
            g = G[i]
            GX[i] += -g
    elif op == 47:  # mul_ts
        for i in range(n):
            g = G[i]
            GX[i] += g * c
    elif op == 48:  # mul_st
        for i in range(n):
            g = G[i]
            GX[i] += g * c
    elif op == 50:  # div_ts
        for i in range(n):
            g = G[i]
            GX[i] += g / c
    elif op == 51:  # div_st
        for i in range(n):
            x = X[i]
            y = Y[i]
            g = G[i]
            GX[i] += -g * y / x
    elif op == 53:  # pow_ts
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * _select(c == 0, 0 * c, c * power(x, c - 1))
    elif op == 54:  # pow_st
        for i in range(n):
            x = X[i]
            y = Y[i]
            g = G[i]
            GX[i] += where((c == 0) & (x >= 0), 0 * g, g * y * log(c))
    elif op == 56:  # maximum_ts
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x < c, 0 * g, where(x == c, 0.5 * g, g))
    elif op == 57:  # maximum_st
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x < c, 0 * g, where(c == x, 0.5 * g, g))
    elif op == 59:  # minimum_ts
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x > c, 0 * g, where(x == c, 0.5 * g, g))
    elif op == 60:  # minimum_st
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x > c, 0 * g, where(c == x, 0.5 * g, g))
    elif op == 62:  # atan2_ts
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where((x == 0) & (c == 0), 0 * g, g * c / (x * x + c * c))
    elif op == 63:  # atan2_st
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where((c == 0) & (x == 0), 0 * g, -g * c / (c * c + x * x))
    elif op == 81:  # gelu_tanh
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * (sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x)) * (1 + x * (1 - sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))) * 1.5957691216057308 * (1 + 0.134145 * x * x)))
    elif op == 82:  # clamp_min
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x >= c, g, 0 * g)
    elif op == 83:  # clamp_max
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += where(x <= c, g, 0 * g)
    elif op == 84:  # round_decimals
        for i in range(n):
            g = G[i]
            GX[i] += 0 * g
    elif op == 85:  # log_sigmoid
        for i in range(n):
            x = X[i]
            g = G[i]
            GX[i] += g * sigmoid(-x)
    elif op == 86:  # _div_scalar
        for i in range(n):
            g = G[i]
            GX[i] += g / c
    elif op == 87:  # _mul_scalar
        for i in range(n):
            g = G[i]
            GX[i] += g * c


@njit(**JIT)
def binary(op, A, B, Y, G, GA, GB, IA, IB, outer, inner, ao, aj, bo, bj, need_a, need_b):
    mapped = IA.size > 0
    if op == 40:  # add
        for o in range(outer):
            for j in range(inner):
                k = o * inner + j
                ia = IA[k] if mapped else o * ao + j * aj
                ib = IB[k] if mapped else o * bo + j * bj
                g = G[k]
                if need_a:
                    GA[ia] += g
                if need_b:
                    GB[ib] += g
    elif op == 43:  # sub
        for o in range(outer):
            for j in range(inner):
                k = o * inner + j
                ia = IA[k] if mapped else o * ao + j * aj
                ib = IB[k] if mapped else o * bo + j * bj
                g = G[k]
                if need_a:
                    GA[ia] += g
                if need_b:
                    GB[ib] += -g
    elif op == 46:  # mul
        for o in range(outer):
            for j in range(inner):
                k = o * inner + j
                ia = IA[k] if mapped else o * ao + j * aj
                ib = IB[k] if mapped else o * bo + j * bj
                a = A[ia]
                b = B[ib]
                g = G[k]
                if need_a:
                    GA[ia] += g * b
                if need_b:
                    GB[ib] += g * a
    elif op == 49:  # div
        for o in range(outer):
            for j in range(inner):
                k = o * inner + j
                ia = IA[k] if mapped else o * ao + j * aj
                ib = IB[k] if mapped else o * bo + j * bj
                b = B[ib]
                y = Y[k]
                g = G[k]
                if need_a:
                    GA[ia] += g / b
                if need_b:
                    GB[ib] += -g * y / b
    elif op == 52:  # pow
        for o in range(outer):
            for j in range(inner):
                k = o * inner + j
                ia = IA[k] if mapped else o * ao + j * aj
                ib = IB[k] if mapped else o * bo + j * bj
                a = A[ia]
                b = B[ib]
                y = Y[k]
                g = G[k]
                if need_a:
                    GA[ia] += g * _select(b == 0, 0 * b, b * power(a, b - 1))
                if need_b:
                    GB[ib] += where((a == 0) & (b >= 0), 0 * g, g * y * log(a))
    elif op == 55:  # maximum
        for o in range(outer):
            for j in range(inner):
                k = o * inner + j
                ia = IA[k] if mapped else o * ao + j * aj
                ib = IB[k] if mapped else o * bo + j * bj
                a = A[ia]
                b = B[ib]
                g = G[k]
                if need_a:
                    GA[ia] += where(a < b, 0 * g, where(a == b, 0.5 * g, g))
                if need_b:
                    GB[ib] += where(b < a, 0 * g, where(a == b, 0.5 * g, g))
    elif op == 58:  # minimum
        for o in range(outer):
            for j in range(inner):
                k = o * inner + j
                ia = IA[k] if mapped else o * ao + j * aj
                ib = IB[k] if mapped else o * bo + j * bj
                a = A[ia]
                b = B[ib]
                g = G[k]
                if need_a:
                    GA[ia] += where(a > b, 0 * g, where(a == b, 0.5 * g, g))
                if need_b:
                    GB[ib] += where(b > a, 0 * g, where(a == b, 0.5 * g, g))
    elif op == 61:  # atan2
        for o in range(outer):
            for j in range(inner):
                k = o * inner + j
                ia = IA[k] if mapped else o * ao + j * aj
                ib = IB[k] if mapped else o * bo + j * bj
                a = A[ia]
                b = B[ib]
                g = G[k]
                if need_a:
                    GA[ia] += where((a == 0) & (b == 0), 0 * g, g * b / (a * a + b * b))
                if need_b:
                    GB[ib] += where((a == 0) & (b == 0), 0 * g, -g * a / (a * a + b * b))
