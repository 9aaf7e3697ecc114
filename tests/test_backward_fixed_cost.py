"""The usual backward's one-call path (replay.run_pass, then free_cut): one root of one element, against torch,
and the cases that leave it (several roots, hooks, retain_grad, guards, float16) beside it."""
import numpy as np
import pytest
import torch

import tapegrad
from tapegrad import tape as tape_mod


def _both(fn):
    """fn(lib) -> list of tensors (or None), for torch and tapegrad; compared as arrays."""
    want, got = fn(torch), fn(tapegrad)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        if w is None:
            assert g is None
        else:
            assert g is not None
            assert g.dtype.__repr__().split(".")[-1] == w.dtype.__repr__().split(".")[-1]
            assert tuple(g.shape) == tuple(w.shape)
            np.testing.assert_allclose(g.detach().numpy().astype(np.float64),
                                       w.detach().numpy().astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scalar_leaves(dtype):
    def f(lib):
        dt = getattr(lib, dtype)
        a, b, c = (lib.tensor(v, dtype=dt, requires_grad=True) for v in (0.5, -1.25, 2.0))
        x = lib.tensor(3.0, dtype=dt)
        for _ in range(3):  # (accumulates into .grad)
            ((a * x + b) * c).backward()
        return [a.grad, b.grad, c.grad]
    _both(f)


@pytest.mark.parametrize("seed_shape", [(), (1,), (1, 1)])
def test_explicit_seed_of_one_element(seed_shape):
    def f(lib):
        w = lib.tensor(np.full(seed_shape, 1.5, np.float32), requires_grad=True)
        y = (w * w).tanh()
        y.backward(lib.tensor(np.full(seed_shape, -0.75, np.float32)))
        return [w.grad]
    _both(f)


def test_root_is_a_leaf_and_unreached_leaf():
    def f(lib):
        a = lib.tensor(2.0, requires_grad=True)
        b = lib.tensor(4.0, requires_grad=True)
        a.backward()
        return [a.grad, b.grad]
    _both(f)


def test_grad_and_backward_inputs():
    def f(lib):
        a = lib.tensor(2.0, requires_grad=True)
        b = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (a * b).sum()
        ga, gb = lib.autograd.grad(y, (a, b), retain_graph=True)
        y.backward(inputs=[b])
        return [ga, gb, a.grad, b.grad]
    _both(f)


def test_hooks_retain_grad_and_python_rows():
    def f(lib):
        a = lib.tensor(1.5, requires_grad=True)
        w = lib.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        a.register_hook(lambda g: g * 2)
        h = a * 3
        h.retain_grad()
        y = (lib.ones(2, 2) * h) @ w
        y.sum().backward()
        return [a.grad, h.grad, w.grad]
    _both(f)


def test_custom_function_leaves_its_other_input_unset_not_another_rows_adjoint():
    """A 0-d leaf that only a Python row reaches gets no slot in the buffers: its gradient must not be read
    from them (element 0 is another row's adjoint)."""
    class F(tapegrad.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, None

    a = tapegrad.tensor(2.0, requires_grad=True)
    b = tapegrad.tensor(3.0, requires_grad=True)
    c = tapegrad.tensor(5.0, requires_grad=True)
    (F.apply(a, b) * c).backward()
    assert a.grad.item() == 15.0 and c.grad.item() == 6.0
    assert b.grad is None or b.grad.item() == 0.0  # (torch leaves it None)


def test_float16_leaf():
    def f(lib):
        a = lib.tensor(1.5, dtype=lib.float16, requires_grad=True)
        b = lib.tensor(0.25, dtype=lib.float16, requires_grad=True)
        (a * b + a).backward()
        return [a.grad, b.grad]
    _both(f)


def test_second_backward_raises_and_retain_graph_does_not():
    for lib in (torch, tapegrad):
        a = lib.tensor(2.0, requires_grad=True)
        y = (a * a).exp()
        y.backward(retain_graph=True)
        y.backward()
        assert a.grad.item() == pytest.approx(2 * 4 * np.exp(4.0), rel=1e-6)
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            y.backward()


def test_tape_does_not_grow_over_steps():
    """free_cut cuts each step's rows and its constants, as the two separate calls did."""
    a, b = (tapegrad.tensor(v, requires_grad=True) for v in (0.5, 1.5))
    sizes = []
    for k in range(50):
        x = tapegrad.tensor(float(k))
        ((a * x + b) * x).backward()
        sizes.append(tape_mod.current().n)
    assert len(set(sizes[5:])) == 1
    assert a.grad.item() == pytest.approx(sum(float(k) ** 2 for k in range(50)))
    assert b.grad.item() == pytest.approx(sum(float(k) for k in range(50)))


def test_in_place_change_is_reported():
    for lib in (torch, tapegrad):
        a = lib.tensor(2.0, requires_grad=True)
        h = a * 1.0
        y = h * h  # (mul saves its inputs)
        h.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


@pytest.mark.parametrize("how", ["index", "target"])
def test_a_guard_is_checked_on_the_one_call_path(how):
    """An index or a class target written in place after the forward: torch's error, though the one-call path has
    replayed the compiled rows above the guarded row first (into its own buffers: no gradient is changed); and
    with the guard's tensor untouched, torch's gradients."""
    g = np.random.default_rng(4)
    x0, t0 = g.standard_normal((16, 10)), g.integers(0, 10, 16)
    results = []
    for lib in (torch, tapegrad):
        for modify in (True, False):
            x, t = lib.tensor(x0, requires_grad=True), lib.tensor(t0)
            if how == "index":
                loss = (x[t].tanh() * 2).sum()  # the gather's index map, then compiled rows to the root
            else:
                loss = lib.nn.functional.cross_entropy(x.tanh(), t) * 3  # a compiled root above the loss's row
            if modify:
                t.mul_(1)  # (the same values: torch counts the write)
                with pytest.raises(RuntimeError, match="modified by an inplace operation") as e:
                    loss.backward()
                results.append(str(e.value).split(";")[0].split("]")[-1])
                assert x.grad is None
            else:
                loss.backward()
                results.append(x.grad.numpy())
    assert results[0] == results[2]
    np.testing.assert_allclose(results[3], results[1], rtol=1e-12, atol=1e-15)
