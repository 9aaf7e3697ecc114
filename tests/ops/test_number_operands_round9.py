"""Python numbers as operands of torch's two-operand functions, against torch itself: torch's argument parser takes a
number only where one of the function's signatures has a `Number` (the function form's first argument must be a
Tensor unless a signature has `Number self`), while Tensor methods and operators take numbers where torch's do. Each
case compares the outcome: the result's dtype and values, or the exception's type and message (torch's words)."""
import math

import numpy as np
import pytest

import tapegrad

import torch  # noqa: E402  (the oracle: CI requires it)

# the functions of two operands (torch namespace, torch.special) whose number operands these tests compare
FUNCTIONS = [
    "atan2", "arctan2", "maximum", "minimum", "fmax", "fmin", "pow", "float_power", "eq", "ne", "lt", "le", "gt", "ge",
    "greater", "less", "greater_equal", "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "clamp", "clip",
    "clamp_min", "clamp_max", "fmod", "remainder", "hypot", "logaddexp", "logaddexp2", "copysign", "floor_divide",
    "heaviside", "ldexp", "nextafter", "gcd", "lcm", "xlogy", "max", "min", "rsub", "add", "sub", "mul", "div",
    "true_divide", "gcd_", "lcm_", "ldexp_", "clamp_", "clip_", "clamp_min_", "clamp_max_", "xlogy_",
    "special.xlogy", "special.xlog1py", "special.zeta",
]
# Tensor methods (self a Tensor): torch's take a number where a Number signature has it, else refuse at position 1
METHODS = ["atan2", "arctan2", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or", "logical_xor",
           "hypot", "logaddexp", "logaddexp2", "heaviside", "ldexp", "nextafter", "gcd", "lcm", "eq", "ne", "lt", "ge",
           "greater", "pow", "fmod", "remainder", "copysign", "bitwise_and", "clamp_min", "clamp_max", "xlogy",
           "float_power", "floor_divide", "bitwise_left_shift"]


def _tensors(lib):
    return {"i": lambda: lib.tensor([1, 2, 3]), "f": lambda: lib.tensor([1.5, -2.0, 3.0])}


CASES = {  # name: operands, T the tensor
    "T,int": lambda T: (T(), 2), "T,float": lambda T: (T(), 2.5), "T,bool": lambda T: (T(), True),
    "int,T": lambda T: (2, T()), "float,T": lambda T: (2.5, T()), "bool,T": lambda T: (True, T()),
    "int,int": lambda T: (2, 3), "float,int": lambda T: (2.5, 3),
}


def _fn(lib, name):
    obj = lib
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _outcome(call):
    try:
        r = call()
    except Exception as e:  # noqa: BLE001 (the outcome compared)
        return ("raise", type(e).__name__, str(e))
    if isinstance(r, tuple):
        r = r[0]
    values = r.detach().numpy() if hasattr(r, "detach") else np.asarray(r)
    return ("ok", str(r.dtype).split(".")[-1], values)


def _same(a, b):
    if a[0] != b[0] or a[1] != b[1]:
        return False
    if a[0] == "raise":
        return a[2] == b[2]
    x, y = np.asarray(a[2], np.float64), np.asarray(b[2], np.float64)
    return x.shape == y.shape and np.allclose(x, y, rtol=1e-6, atol=0, equal_nan=True)


def _check(name, t_call, g_call):
    a, b = _outcome(t_call), _outcome(g_call)
    assert _same(a, b), f"{name}: torch {a!r} tapegrad {b!r}"


def _function_cases():
    """(name, dtype, case), but one dtype where no operand is a tensor; the in-place clamps of an integer tensor by a
    float fail in torch's kernel (its message names C++ types: "long int"), not in the argument parser: a known
    difference in the message's words, expected to fail."""
    for name in FUNCTIONS:
        for dt in ("i", "f"):
            for case in CASES:
                if case in ("int,int", "float,int") and dt == "f":
                    continue
                marks = ()
                if name in ("clamp_", "clip_", "clamp_min_", "clamp_max_") and (dt, case) == ("i", "T,float"):
                    marks = pytest.mark.xfail(strict=True, reason="torch's kernel names the C++ type 'long int'")
                yield pytest.param(name, dt, case, marks=marks, id=f"{name}-{dt}-{case}")


@pytest.mark.parametrize("name,dt,case", list(_function_cases()))
def test_function_number_operands_as_torch(name, dt, case):
    tf, gf = _fn(torch, name), _fn(tapegrad, name)
    targs, gargs = CASES[case](_tensors(torch)[dt]), CASES[case](_tensors(tapegrad)[dt])
    _check(name, lambda: tf(*targs), lambda: gf(*gargs))


@pytest.mark.parametrize("case", ["T,int", "T,float", "T,bool"])
@pytest.mark.parametrize("dt", ["i", "f"])
@pytest.mark.parametrize("name", METHODS)
def test_method_number_operands_as_torch(name, dt, case):
    targs, gargs = CASES[case](_tensors(torch)[dt]), CASES[case](_tensors(tapegrad)[dt])
    _check(name, lambda: getattr(targs[0], name)(targs[1]), lambda: getattr(gargs[0], name)(gargs[1]))


OPERATORS = {
    "t + n": lambda t, n: t + n, "n + t": lambda t, n: n + t, "t - n": lambda t, n: t - n, "n - t": lambda t, n: n - t,
    "t * n": lambda t, n: t * n, "n * t": lambda t, n: n * t, "t / n": lambda t, n: t / n, "n / t": lambda t, n: n / t,
    "t ** n": lambda t, n: t ** n, "n ** t": lambda t, n: n ** t, "t // n": lambda t, n: t // n,
    "n // t": lambda t, n: n // t, "t % n": lambda t, n: t % n, "n % t": lambda t, n: n % t,
    "t == n": lambda t, n: t == n, "n == t": lambda t, n: n == t, "t != n": lambda t, n: t != n,
    "t < n": lambda t, n: t < n, "n < t": lambda t, n: n < t, "t >= n": lambda t, n: t >= n,
    "n >= t": lambda t, n: n >= t, "t & n": lambda t, n: t & n, "n | t": lambda t, n: n | t,
    "n ^ t": lambda t, n: n ^ t, "t << n": lambda t, n: t << n, "n >> t": lambda t, n: n >> t,
}


@pytest.mark.parametrize("number", [2, 2.5, True])
@pytest.mark.parametrize("dt", ["i", "f"])
@pytest.mark.parametrize("op", list(OPERATORS))
def test_operators_take_numbers_as_torch(op, dt, number):
    f = OPERATORS[op]
    _check(op, lambda: f(_tensors(torch)[dt](), number), lambda: f(_tensors(tapegrad)[dt](), number))


def test_refusing_a_number_keeps_tensor_pairs_and_gradients():
    """A function that refuses a number still computes tensor op tensor, with its gradients (atan2, maximum)."""
    for name in ("atan2", "maximum", "hypot", "fmax"):
        tx = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
        ty = torch.tensor([1.5, -2.0, 0.25], dtype=torch.float64, requires_grad=True)
        gx = tapegrad.tensor([0.5, -1.0, 2.0], dtype=tapegrad.float64, requires_grad=True)
        gy = tapegrad.tensor([1.5, -2.0, 0.25], dtype=tapegrad.float64, requires_grad=True)
        getattr(torch, name)(tx, ty).sum().backward()
        getattr(tapegrad, name)(gx, gy).sum().backward()
        for t, g in ((tx, gx), (ty, gy)):
            np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    assert math.isclose(tapegrad.pow(tapegrad.tensor(2.0), 3).item(), 8.0)
