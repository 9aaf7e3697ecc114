"""F.gelu's compiled row (kernels/activation.py, float32/float64 tensors of at least ops.nn._GELU_ROW_MIN
elements) against torch 2.13: values and gradients (float32 erf as torch's vectorised kernel: A&S 7.1.26),
the special values, second and third order through create_graph, and tapegrad.compile's replay."""
import numpy as np
import pytest
import torch

import tapegrad as tg
from tapegrad.ops import nn as ops_nn

SHAPE = (4, 8, 64)  # 2,048 elements: the compiled row


def _data(dtype, seed, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(SHAPE) * scale).astype(dtype)


def test_large_inputs_take_the_row_small_ones_the_elementwise_op():
    assert np.prod(SHAPE) >= ops_nn._GELU_ROW_MIN
    big = tg.nn.functional.gelu(tg.tensor(_data(np.float32, 0), requires_grad=True))
    small = tg.nn.functional.gelu(tg.randn(3, requires_grad=True))
    assert type(big.grad_fn).__name__ == type(small.grad_fn).__name__ == "GeluBackward0"
    assert big._op == ops_nn.OPS["gelu_compiled"].code
    assert small._op != ops_nn.OPS["gelu_compiled"].code


@pytest.mark.parametrize("dtype, tol", [(np.float32, 3e-6), (np.float64, 1e-13)])
def test_values_and_gradients(dtype, tol):
    a, g = _data(dtype, 1), _data(dtype, 2, 1.0)
    a.reshape(-1)[:7] = [0.0, -0.0, 1e-30, -1e-30, 30.0, -30.0, np.nan]
    results = []
    for lib in (tg, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.nn.functional.gelu(x)
        y.backward(lib.tensor(g))
        assert y.dtype == x.dtype and x.grad.dtype == x.dtype
        results.append((y.detach().numpy(), x.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def test_module_and_no_grad():
    a = _data(np.float32, 3)
    with tg.no_grad():
        y = tg.nn.GELU()(tg.tensor(a))
    np.testing.assert_allclose(y.numpy(), torch.nn.GELU()(torch.tensor(a)).numpy(), rtol=3e-6, atol=3e-6)
    assert y.grad_fn is None


def test_second_and_third_order():
    a = _data(np.float64, 4)
    results = []
    for lib in (tg, torch):
        x = lib.tensor(a, requires_grad=True)
        (g1,) = lib.autograd.grad(lib.nn.functional.gelu(x).sum(), x, create_graph=True)
        (g2,) = lib.autograd.grad((g1 * g1).sum(), x, create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), x)
        results.append([t.detach().numpy() for t in (g1, g2, g3)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_compile_replays_the_row():
    def loss(x, w):
        return (tg.nn.functional.gelu(x * w) * x).sum()

    compiled = tg.compile(loss, fullgraph=True)
    for seed in range(3):
        a, b = _data(np.float32, 10 + seed), _data(np.float32, 20 + seed, 1.0)
        results = []
        for f in (loss, compiled):
            x, w = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
            value = f(x, w)
            value.backward()
            results.append([value.detach().numpy(), x.grad.numpy(), w.grad.numpy()])
        for ours, theirs in zip(*results):
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-4)
