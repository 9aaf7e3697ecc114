"""remainder, angle, real and imag of real tensors against torch 2.13. remainder of floats bit for bit: ATen computes
fmod and adds the divisor where their signs differ, so a zero result keeps the dividend's sign (`remainder(-3., 3.)`
is -0.), where NumPy's gives it the divisor's; every form (tensor % tensor, tensor % number, number % tensor, in
place) and both gradients. angle is in tests/ops/test_ops_table.py's unary table."""
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


@pytest.mark.parametrize("create_graph", [False, True])
def test_remainder_divisor_gradient_is_torchs_floor_division(create_graph):
    """torch's derivative for the divisor is -g * div(a, b, rounding_mode="floor"): Python's //, from fmod, which is
    249 for 0.25 // 0.001 where floor(0.25 / 0.001) is 250."""
    a = np.array([-0.25, 0.25, -1.0, 1.0, 1e20, -1e20, 7.5, 0.0], np.float64)
    b = np.array([-0.001, 0.001, -0.001, 0.001, 13437.7, -13437.7, 2.5, 3.0], np.float64)
    got = []
    for L in (torch, tg):
        x, y = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        g = L.autograd.grad(L.remainder(x, y).sum(), y, create_graph=create_graph)[0]
        got.append(g.detach().numpy())
    np.testing.assert_array_equal(got[1], got[0])


def test_remainder_of_a_number_by_a_tensor_has_torchs_missing_derivative():
    """torch.remainder(number, tensor) requires grad in torch, and its backward raises: torch has no derivative."""
    results = []
    for L in (torch, tg):
        t = L.tensor([-4.146, 3.1, 7.38], dtype=L.float64, requires_grad=True)
        row = []
        for y in (L.remainder(5.5, t), 5.5 % t):
            row.append((y.requires_grad, type(y.grad_fn).__name__, y.detach().numpy().tolist()))
            with pytest.raises(RuntimeError, match="derivative for aten::remainder is not implemented"):
                y.sum().backward()
        with L.no_grad():
            row.append(L.remainder(5.5, t).requires_grad)
        results.append(row)
    assert results[1] == results[0]


def test_real_is_the_tensor_and_imag_is_refused():
    """torch.real / Tensor.real of a real tensor is the tensor itself; imag raises torch's error."""
    for L in (torch, tg):
        x = L.tensor([1.5, -2.0])
        assert L.real(x) is x and x.real is x
        with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
            L.imag(x)
        with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
            x.imag
