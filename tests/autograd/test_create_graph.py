"""backward(create_graph=True): .grad carries a grad_fn and differentiates to any order; without it,
.grad is a plain array that holds nothing of the tape. The same programs run on tapegrad and torch."""
import gc
import importlib
import warnings
import weakref

import numpy as np
import pytest
import torch

import tapegrad
from tapegrad import tape as tape_mod


@pytest.fixture(params=["tapegrad", "torch"])
def lib(request):
    return importlib.import_module(request.param)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using backward\\(\\) with create_graph=True")
        yield


def values(t):
    return None if t is None else t.detach().numpy().astype(np.float64).copy()


def f(lib, x):
    return (x.exp() * x.sin() + (x * x).tanh() / (1 + x * x)).sum()


def nth_derivatives_by_backward(lib, n):
    """d^k f / dx^k for k = 1..n, each by .backward(create_graph=True) through the previous .grad."""
    x = lib.tensor([0.3, -0.8, 1.1], dtype=lib.float64, requires_grad=True)
    out, current = [], f(lib, x)
    for _ in range(n):
        x.grad = None
        current.backward(create_graph=True)
        g = x.grad
        out.append(values(g))
        assert g.requires_grad and g.grad_fn is not None
        current = g.sum()
    return out


def test_grad_written_by_create_graph_differentiates_to_the_fifth_order():
    ours, theirs = nth_derivatives_by_backward(tapegrad, 5), nth_derivatives_by_backward(torch, 5)
    for k, (a, b) in enumerate(zip(ours, theirs), 1):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10, err_msg=f"derivative {k}")


def test_autograd_grad_to_the_fourth_order_equals_torch(lib):
    def derivs(lib):
        x = lib.tensor([0.4, 1.3], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([-0.6, 0.9], dtype=lib.float64, requires_grad=True)
        z = ((x * y).sin() * (x - y).exp() @ (x + 2 * y)).tanh()
        out = []
        for _ in range(4):
            gx, gy = lib.autograd.grad(z, (x, y), create_graph=True)
            out += [values(gx), values(gy)]
            z = (gx * gy).sum() + gx.sum()
        return out
    for a, b in zip(derivs(tapegrad), derivs(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_without_create_graph_grad_holds_nothing_of_the_tape():
    tape = tape_mod.current()
    x = tapegrad.tensor([0.3, -0.8, 1.1], requires_grad=True)
    (x * 2).sum().backward()  # registers x's leaf row
    n0 = tape.n
    h = x.exp() * x
    probe = weakref.ref(h._data)
    f(tapegrad, h).backward()
    assert x.grad.grad_fn is None and not x.grad.requires_grad and x.grad._tape is None
    assert tape.n == n0  # everything the backward reached is freed and truncated
    del h
    gc.collect()
    assert probe() is None  # the intermediate value is gone: .grad keeps no row alive


def test_create_graph_grad_keeps_its_graph_until_dropped():
    tape = tape_mod.current()
    x = tapegrad.tensor([0.3, -0.8], dtype=tapegrad.float64, requires_grad=True)
    (x * 2).sum().backward()
    n0 = tape.n
    f(tapegrad, x).backward(create_graph=True)
    assert tape.n > n0 and x.grad.grad_fn is not None
    x.grad.sum().backward()  # the second order frees the graph of the first
    x.grad = None
    for _ in range(3):  # and nothing of it is left once the next sweep runs
        tape.sweep()
    assert tape.stats()["live_entries"] <= n0 + 1


def test_plain_backward_after_create_graph_accumulates_in_place_as_torch(lib):
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    (x.sin() * x).sum().backward(create_graph=True)
    first = x.grad
    version = first._version
    (x * x).sum().backward()
    assert x.grad is first and x.grad.requires_grad  # in place, the grad keeps its history
    assert first._version > version
    x.grad.sum().backward()  # differentiates the history of the first .grad only, as torch
    expected = lib.tensor([1.0, 2.0], dtype=lib.float64)
    expected = (expected.sin() + expected * expected.cos()) + 2 * expected \
        + (2 * expected.cos() - expected * expected.sin())
    np.testing.assert_allclose(values(x.grad), values(expected), rtol=1e-12)


def test_create_graph_after_plain_backward_adds_out_of_place(lib):
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    (x * x).sum().backward()
    plain = x.grad
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad is not plain and x.grad.grad_fn is not None
    np.testing.assert_allclose(values(plain), [2.0, 4.0])
    np.testing.assert_allclose(values(x.grad), [5.0, 16.0])


def test_create_graph_grad_never_aliases_the_gradient_passed_in(lib):
    w = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    v = lib.tensor([1.0, 2.0], dtype=lib.float64)
    (w + 1).backward(v, create_graph=True)
    assert w.grad is not v
    with lib.no_grad():
        w.grad.mul_(10)
    np.testing.assert_allclose(values(v), [1.0, 2.0])


def test_retain_grad_and_hooks_see_differentiable_gradients(lib):
    x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    y = x * 2
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.requires_grad))
    (y.sin() * y).sum().backward(create_graph=True)
    assert seen == [True] and y.grad.requires_grad
    gx, = lib.autograd.grad(y.grad.sum(), x)
    np.testing.assert_allclose(values(gx), 2 * (2 * np.cos([1.0, -2.0]) - [1.0, -2.0] * np.sin([1.0, -2.0])))


def test_retain_grad_on_consecutive_rows(lib):
    """Two watched rows in a row: the replay stops at each and still runs both."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    a.retain_grad()
    b = a.sin()
    b.retain_grad()
    (b * 3).sum().backward()
    np.testing.assert_allclose(values(b.grad), [3.0, 3.0])
    np.testing.assert_allclose(values(a.grad), 3 * np.cos([2.0, 4.0]), rtol=1e-6)
    np.testing.assert_allclose(values(x.grad), 6 * np.cos([2.0, 4.0]), rtol=1e-6)


def test_create_graph_false_seed_with_history_is_detached(lib):
    x = lib.tensor([0.5, 2.0], requires_grad=True)
    seed = x * 3
    (x * x).backward(seed)
    assert not x.grad.requires_grad
    np.testing.assert_allclose(values(x.grad), [1.5, 24.0])


def test_double_backward_through_float32(lib):
    x = lib.tensor([0.5, 2.0], requires_grad=True)
    g, = lib.autograd.grad((x ** 3).sum(), x, create_graph=True)
    h, = lib.autograd.grad(g.sum(), x)
    assert h.dtype == lib.float32
    np.testing.assert_allclose(values(h), [3.0, 12.0])
