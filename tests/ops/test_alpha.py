"""add and sub's alpha= (input + alpha * other), as functions, methods and in place, against torch 2.13."""
import numpy as np
import pytest
import torch

import tapegrad

CASES = [  # (input, other, alpha)
    ([1.0, 2.0, 3.0], [0.5, -1.0, 2.0], 3),
    ([1.0, 2.0, 3.0], [0.5, -1.0, 2.0], -0.25),
    ([1.0, 2.0, 3.0], 4.0, 2),
    ([1, 2, 3], [4, 5, 6], 2),
    ([1, 2, 3], 3.5, 2),
    ([True, False], [True, True], True),
]


def _both(fn, *args):
    def run(lib):
        try:
            return fn(lib, *args)
        except Exception as e:  # noqa: BLE001  (the exception is the result compared)
            return type(e).__name__, str(e)
    return run(torch), run(tapegrad)


def _same(want, got):
    if isinstance(want, tuple):
        assert got == want
    else:
        assert str(got.dtype) == str(want.dtype)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())


@pytest.mark.parametrize("a, b, alpha", CASES)
@pytest.mark.parametrize("name", ["add", "sub"])
def test_values_dtypes_and_errors(name, a, b, alpha):
    def as_lib(lib, v):
        return lib.tensor(v) if isinstance(v, list) else v
    for form in ("function", "method", "inplace"):
        def call(lib):
            x, y = as_lib(lib, a), as_lib(lib, b)
            if form == "function":
                return getattr(lib, name)(x, y, alpha=alpha)
            if form == "method":
                return getattr(x, name)(y, alpha=alpha)
            getattr(x, name + "_")(y, alpha=alpha)
            return x
        _same(*_both(call))


@pytest.mark.parametrize("alpha", [0.5, True, 2.5])
def test_alpha_errors(alpha):
    _same(*_both(lambda lib: lib.tensor([1, 2]).add(lib.tensor([3, 4]), alpha=alpha)))
    _same(*_both(lambda lib: lib.tensor([1.0, 2.0]).sub(lib.tensor([3.0, 4.0]), alpha=alpha)))


def test_gradients_and_the_parameter_update_scripts_write():
    def run(lib):
        x = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
        y = lib.tensor([3.0, 4.0, -1.0], requires_grad=True)
        z = lib.sub(x.add(y, alpha=2), x * y, alpha=0.5)
        z.sum().backward()
        with lib.no_grad():
            x.data.add_(x.grad, alpha=-0.1)  # word_language_model's SGD step
        return z, x, y.grad
    for want, got in zip(*_both(run)):
        _same(want, got)
