"""First and second derivatives of zero-size inputs (an empty batch), against torch: each gradient is an empty
array of the input's shape and dtype. The compiled replay once took a block of an input that needs no adjoint
(a broadcast constant, larger than the empty output) at its own size, past the end of a buffer that held only
the root's element: `IndexError: an adjoint block lies outside its buffer` (round 9)."""
import numpy as np
import pytest
import torch

import tapegrad


def _spd_eye(lib, x):
    return x + lib.eye(x.shape[-1], dtype=x.dtype)  # (a broadcast constant: larger than the empty batch)


CASES = {  # name -> (function of (lib, x), the input's shape)
    "mul_broadcast_constant": (lambda lib, x: x * lib.ones(5, dtype=x.dtype), (0, 5)),
    "constant_mul_broadcast": (lambda lib, x: lib.ones(5, dtype=x.dtype) * x, (0, 5)),
    "add_sub_broadcast": (lambda lib, x: (x - lib.arange(5.0, dtype=x.dtype)) * 2 + lib.ones(3, 1, 5, dtype=x.dtype)[:, :, :0].sum(), (0, 5)),
    "cholesky": (lambda lib, x: lib.linalg.cholesky(_spd_eye(lib, x)), (0, 5, 5)),
    "cholesky_upper": (lambda lib, x: lib.linalg.cholesky(_spd_eye(lib, x), upper=True), (0, 5, 5)),
    "cholesky_ex": (lambda lib, x: lib.linalg.cholesky_ex(_spd_eye(lib, x))[0], (0, 5, 5)),
    "eigh": (lambda lib, x: lib.linalg.eigh(x)[0], (0, 5, 5)),
    "qr": (lambda lib, x: lib.linalg.qr(x)[1], (0, 5, 5)),
    "slogdet": (lambda lib, x: lib.linalg.slogdet(_spd_eye(lib, x))[1], (0, 5, 5)),
    "logdet": (lambda lib, x: lib.logdet(_spd_eye(lib, x)), (0, 5, 5)),
    "inv": (lambda lib, x: lib.linalg.inv(_spd_eye(lib, x)), (0, 5, 5)),
    "matmul_constant": (lambda lib, x: x @ lib.ones(5, 3, dtype=x.dtype), (0, 5)),
    "softmax": (lambda lib, x: lib.softmax(x * lib.ones(5, dtype=x.dtype), -1), (0, 5)),
    "layer_norm": (lambda lib, x: lib.nn.functional.layer_norm(x, (5,), lib.ones(5, dtype=x.dtype),
                                                               lib.zeros(5, dtype=x.dtype)), (0, 5)),
    "tanh_pow": (lambda lib, x: lib.tanh(x) ** 3 * lib.full((4, 1), 2.0, dtype=x.dtype)[:, :, None].sum(0), (0, 5)),
}


def _derivatives(lib, fn, shape, dtype):
    x = lib.zeros(*shape, dtype=getattr(lib, dtype), requires_grad=True)
    y = fn(lib, x)
    first, = lib.autograd.grad((y * 3).sum(), x, create_graph=True)
    second = None
    if first.requires_grad:  # (torch's gradient of a linear function does not: no second derivative)
        second, = lib.autograd.grad((first * 2).sum(), x, allow_unused=True)
    # and the usual backward (the compiled replay's fast path, which plans and seeds in one call)
    x.grad = None
    fn(lib, x).sum().backward()
    return first, second, x.grad


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CASES))
def test_empty_input_first_and_second_derivatives_match_torch(name, dtype):
    fn, shape = CASES[name]
    expected = _derivatives(torch, fn, shape, dtype)
    got = _derivatives(tapegrad, fn, shape, dtype)
    for e, g in zip(expected, got):
        if e is None or g is None:  # (a zero-size second derivative, or none)
            assert (e is None or e.numel() == 0) and (g is None or g.numel() == 0)
            continue
        assert g is not None
        assert tuple(g.shape) == tuple(e.shape) == shape
        assert str(g.dtype) == str(e.dtype)


@pytest.mark.parametrize("shapes", [((5,), (0, 5)), ((1, 5), (0, 5)), ((0, 1), (5,)), ((0, 5), (3, 1, 5)),
                                    ((2, 0, 1), (1, 4))])
def test_empty_broadcast_of_two_inputs_matches_torch(shapes):
    """Both inputs need gradients, one of them empty: the other's gradient is zeros of its (non-empty) shape."""
    def run(lib):
        x = lib.ones(*shapes[0], dtype=lib.float64, requires_grad=True)
        z = lib.full(shapes[1], 2.0, dtype=lib.float64, requires_grad=True)
        y = (x * z).exp() + x / z - x.sum()
        gx, gz = lib.autograd.grad(y.sum(), (x, z), create_graph=True)
        second = lib.autograd.grad((gx * 3).sum() + (gz * 2).sum(), (x, z), allow_unused=True)
        (x - z).sum().backward()
        return (gx, gz) + tuple(second) + (x.grad, z.grad)
    for e, g in zip(run(torch), run(tapegrad)):
        assert tuple(g.shape) == tuple(e.shape)
        np.testing.assert_array_equal(g.detach().numpy(), e.detach().numpy())
