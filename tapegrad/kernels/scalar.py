"""Scalar functions that derivative expressions may use, compiled (the Tensor versions are in ops)."""
import math

from numba import njit

from .memory import JIT


@njit(inline="always", **JIT)
def where(cond, a, b):
    return a if cond else b


@njit(inline="always", **JIT)
def sign(x):
    return (x > 0) - (x < 0)  # sign(nan) is nan in torch; the derivative that uses it is 0 there anyway


@njit(inline="always", **JIT)
def sigmoid(x):
    return 0.5 * (math.tanh(0.5 * x) + 1.0)


@njit(inline="always", **JIT)
def erf(x):
    return math.erf(x)
