"""Scalar functions that derivative expressions may use, compiled (the Tensor versions are in ops)."""
import math

from numba import njit

from .memory import JIT


@njit(inline="always", **JIT)
def where(cond, a, b):
    return a if cond else b


@njit(inline="always", **JIT)
def _select(cond, a, b):
    """where(), for a condition that may be a constant's (`c == 0`): on Tensors that picks a branch in Python
    instead of recording a constant condition (which tapegrad.compile cannot replay)."""
    return a if cond else b


@njit(inline="always", **JIT)
def sign(x):
    return (x > 0) - (x < 0)  # sign(nan) is nan in torch; the derivative that uses it is 0 there anyway


@njit(inline="always", **JIT)
def sigmoid(x):
    """1 / (1 + exp(-x)) to full relative precision for negative x too (e / (1 + e), e = exp(x)): the tanh form
    cancelled, so the softplus and silu gradients of x < -15 lost their digits (float32: 0 below -10)."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(inline="always", **JIT)
def erf(x):
    return math.erf(x)


@njit(inline="always", **JIT)
def power(x, e):
    """x ** e, with the exponents 1, 2 and 3 as products, as torch computes them: libm's pow takes about 17 ns
    an element for a runtime exponent (a second backward replays the rule of t ** 2.0: power(t, 1.0))."""
    if e == 2.0:
        return x * x
    if e == 1.0:
        return x
    if e == 3.0:
        return x * x * x
    if e == -0.5:
        return 1.0 / math.sqrt(x)  # torch's rsqrt: -inf at -0.0 (x ** -0.5 is +inf there)
    return x ** e


@njit(inline="always", **JIT)
def _with_input(v, x):
    """v. On Tensors (create_graph), v recorded as a function of x with a zero derivative, as torch's
    threshold_backward depends on its input: a gradient through relu then requires grad, and its own
    gradient is zeros (a Hessian of a ReLU network)."""
    return v
