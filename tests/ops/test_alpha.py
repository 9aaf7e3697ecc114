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


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("alpha", [-0.37, 2, 1, 1.0])
@pytest.mark.parametrize("name", ["add_", "sub_"])
def test_in_place_alpha_with_nothing_to_record_is_the_composition(name, alpha, dtype):
    """`p.data.add_(g, alpha=-lr)` under no_grad writes self's storage directly (methods._unrecorded_arith): the
    same bits as the recorded composition, the version bumped, a view of it updated, as torch's."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 7)).astype(dtype), rng.standard_normal((5, 7)).astype(dtype)
    want = getattr(tapegrad.tensor(a), name[:-1])(tapegrad.tensor(b), alpha=alpha).numpy()
    seen = {}
    for lib in (torch, tapegrad):
        p, g = lib.tensor(a, requires_grad=True), lib.tensor(b)
        with lib.no_grad():
            row = p[1]
            before = p._version
            getattr(p, name)(g, alpha=alpha)
        seen[lib] = p.detach().numpy().copy(), p._version - before, row.detach().numpy().copy()
    assert np.array_equal(seen[tapegrad][0], want)
    np.testing.assert_allclose(seen[tapegrad][0], seen[torch][0], rtol=1e-6, atol=1e-6)  # (torch fuses: one rounding)
    assert seen[tapegrad][1] == seen[torch][1] == 1
    np.testing.assert_array_equal(seen[tapegrad][2], seen[tapegrad][0][1])
