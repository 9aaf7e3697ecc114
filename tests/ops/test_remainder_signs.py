"""torch.remainder of floats against torch 2.13, bit for bit: ATen computes fmod and adds the divisor where their
signs differ, so a zero result keeps the dividend's sign (`remainder(-3., 3.)` is -0.), where NumPy's gives it the
divisor's. Every form: tensor % tensor, tensor % number, number % tensor, in place, and the gradient."""
import numpy as np
import pytest
import torch

import tapegrad as tg

VALUES = np.array([-0.0, 0.0, -3.0, 3.0, 1.5, -1.5, 4.5, -4.5, 7.25, -7.25, np.nan, np.inf, -np.inf], np.float32)
DIVISORS = [3.0, -3.0, 1.5, -1.5, 0.0, -0.0]


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8)) or (
        np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(a[~np.isnan(a)].view(np.uint8),
                                                                    b[~np.isnan(b)].view(np.uint8))), (a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("divisor", DIVISORS)
def test_remainder_zero_keeps_the_dividends_sign(dtype, divisor):
    forms = [lambda L, x: x % divisor, lambda L, x: L.remainder(x, L.tensor(divisor, dtype=x.dtype)),
             lambda L, x: L.remainder(divisor, x), lambda L, x: x.clone().remainder_(divisor),
             lambda L, x: L.remainder(x, L.full_like(x, divisor))]
    for form in forms:
        got = form(tg, tg.tensor(VALUES.astype(dtype))).numpy()
        want = form(torch, torch.tensor(VALUES.astype(dtype))).numpy()
        _same_bits(got, want)


def test_remainder_gradient_and_integers_unchanged():
    x, tx = tg.tensor([-3.0, 1.0, 4.5], requires_grad=True), torch.tensor([-3.0, 1.0, 4.5], requires_grad=True)
    y, ty = tg.remainder(x, 3.0), torch.remainder(tx, 3.0)
    y.sum().backward()
    ty.sum().backward()
    _same_bits(y.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    ints = [-7, -3, 0, 3, 7]
    for d in (3, -3):
        np.testing.assert_array_equal((tg.tensor(ints) % d).numpy(), (torch.tensor(ints) % d).numpy())
