"""When a leaf's `.grad` stays None (issue 16's known differences): a leaf set not to require grad after the
graph was recorded (torch's AccumulateGrad checks `requires_grad` when it accumulates), and an op whose
derivative torch leaves undefined (norm with p=0), so that no gradient reaches its input. torch 2.13 is the
oracle, computed live in each test."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg


def _grad(t):
    return None if t.grad is None else np.asarray(t.grad.detach().numpy() if hasattr(t.grad, "detach") else t.grad)


def _outcome(fn):
    """('ok', value) or (exception type name, message)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e).__name__, str(e)


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    return np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-12, atol=0)


# -- requires_grad_(False) after recording ---------------------------------------------------------------------
def _leaf_programs():
    """Each: L -> (x, w, a function that runs a backward and returns what to compare)."""
    def plain(L):
        x = L.ones(3, requires_grad=True)
        y = (x * 2).sum()
        x.requires_grad_(False)
        y.backward()
        return [_grad(x)]

    def with_another_leaf(L):
        x, w = L.ones(3, requires_grad=True), L.full((3,), 2.0, requires_grad=True)
        y = (x * w).sum()
        x.requires_grad_(False)
        y.backward()
        return [_grad(x), _grad(w)]

    def attribute(L):
        x = L.ones(3, requires_grad=True)
        y = (x * x).sum()
        x.requires_grad = False
        y.backward()
        return [_grad(x)]

    def existing_grad_kept(L):
        x = L.ones(3, requires_grad=True)
        x.grad = L.full((3,), 5.0)
        y = (x * 2).sum()
        x.requires_grad_(False)
        y.backward()
        return [_grad(x)]

    def turned_back_on(L):
        x = L.ones(3, requires_grad=True)
        y = (x * 3).sum()
        x.requires_grad_(False)
        x.requires_grad_(True)
        y.backward()
        return [_grad(x)]

    def hook_still_runs(L):
        seen = []
        x = L.ones(3, requires_grad=True)
        x.register_hook(lambda g: seen.append(np.asarray(g.numpy()).copy()))
        y = (x * 2).sum()
        x.requires_grad_(False)
        y.backward()
        return [_grad(x), seen[0]]

    def create_graph(L):
        x, w = L.ones(3, requires_grad=True), L.ones(3, requires_grad=True)
        y = (x * x * w).sum()
        x.requires_grad_(False)
        y.backward(create_graph=True)
        return [_grad(x), _grad(w)]

    def matmul_owned_weight(L):  # (tapegrad hands a weight's BLAS gradient from a Python row, mv's, over as it is)
        x = L.ones(3)
        w = L.ones(4, 3, requires_grad=True)
        b = L.ones(4, requires_grad=True)
        y = (w @ x + b).sum()
        w.requires_grad_(False)
        y.backward()
        return [_grad(w), _grad(b)]

    def second_backward_after_turning_off(L):
        x = L.ones(3, requires_grad=True)
        y = (x * 2).sum()
        y.backward(retain_graph=True)
        x.requires_grad_(False)
        y.backward()
        return [_grad(x)]

    def autograd_grad(L):
        x = L.ones(3, requires_grad=True)
        y = (x * 2).sum()
        x.requires_grad_(False)
        return [L.autograd.grad(y, x)[0]]

    def autograd_grad_allow_unused(L):
        x, w = L.ones(3, requires_grad=True), L.ones(3, requires_grad=True)
        y = (x * w).sum()
        x.requires_grad_(False)
        return list(L.autograd.grad(y, [w, x], allow_unused=True))

    def autograd_grad_turned_back_on(L):
        x = L.ones(3, requires_grad=True)
        y = (x * 2).sum()
        x.requires_grad_(False)
        x.requires_grad_(True)
        return [L.autograd.grad(y, x)[0]]

    def backward_inputs(L):
        x, w = L.ones(3, requires_grad=True), L.ones(3, requires_grad=True)
        y = (x * w).sum()
        x.requires_grad_(False)
        y.backward(inputs=[w, x])
        return [_grad(x), _grad(w)]

    def backward_inputs_never_required(L):
        x = L.ones(3, requires_grad=True)
        y = (x * 2).sum()
        L.autograd.backward(y, inputs=[x, L.ones(3)])
        return [_grad(x)]

    return {f.__name__: f for f in (plain, with_another_leaf, attribute, existing_grad_kept, turned_back_on,
                                    hook_still_runs, create_graph, matmul_owned_weight,
                                    second_backward_after_turning_off, autograd_grad, autograd_grad_allow_unused,
                                    autograd_grad_turned_back_on, backward_inputs, backward_inputs_never_required)}


PROGRAMS = _leaf_programs()


def _compare(name, program):
    expected, got = _outcome(lambda: program(torch)), _outcome(lambda: program(tg))
    assert expected[0] == got[0], (name, expected, got)
    if expected[0] != "ok":
        assert got[1] == expected[1], (name, expected, got)
        return
    exp = [None if v is None else np.asarray(v.detach() if isinstance(v, torch.Tensor) else v) for v in expected[1]]
    out = [None if v is None else np.asarray(v.numpy() if isinstance(v, tg.Tensor) else v) for v in got[1]]
    assert len(exp) == len(out)
    for e, o in zip(exp, out):
        assert _same(e, o), (name, exp, out)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_leaf_set_not_to_require_grad_after_recording_gets_no_grad_as_in_torch(name):
    _compare(name, PROGRAMS[name])


def test_the_torch_answers_differ_from_a_leaf_that_still_requires_grad():
    """The oracle is not vacuous: torch's answer for the plain program is None, its `.grad` otherwise [2, 2, 2]."""
    assert PROGRAMS["plain"](torch) == [None]
    x = tg.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# -- derivatives torch leaves undefined ------------------------------------------------------------------------
def _undefined_programs():
    def norm0(L):
        x = L.tensor([1.0, 0.0, -2.0], requires_grad=True)
        x.norm(p=0).backward()
        return [_grad(x)]

    def norm0_requires_grad_and_grad_fn(L):
        x = L.tensor([1.0, 0.0, -2.0], requires_grad=True)
        y = x.norm(p=0)
        return [np.asarray(y.requires_grad), np.asarray(type(y.grad_fn).__name__ == "LinalgVectorNormBackward0"),
                np.asarray(y.detach().numpy())]

    def norm0_dim(L):
        x = L.tensor([[1.0, 0.0, -2.0], [0.0, 0.0, 3.0]], dtype=L.float64, requires_grad=True)
        L.norm(x, p=0, dim=1).sum().backward()
        return [_grad(x)]

    def vector_norm0_through_an_intermediate(L):
        x = L.tensor([1.0, 0.5, -2.0], requires_grad=True)
        h = x * 3
        h.retain_grad()
        (h.norm(p=0) * 2).backward()
        return [_grad(x), _grad(h)]

    def norm0_beside_another_path(L):
        x = L.tensor([1.0, 0.5, -2.0], requires_grad=True)
        (x.norm(p=0) + (x * x).sum()).backward()
        return [_grad(x)]

    def norm0_autograd_grad(L):
        x = L.tensor([1.0, 0.5, -2.0], requires_grad=True)
        return [L.autograd.grad(x.norm(p=0), x)[0]]

    def norm0_allow_unused(L):
        x = L.tensor([1.0, 0.5, -2.0], requires_grad=True)
        return [L.autograd.grad(x.norm(p=0), x, allow_unused=True)[0]]

    def norm0_materialize(L):
        x = L.tensor([1.0, 0.5, -2.0], requires_grad=True)
        return [L.autograd.grad(x.norm(p=0), x, materialize_grads=True)[0]]

    def norm0_create_graph(L):
        x = L.tensor([1.0, 0.5, -2.0], requires_grad=True)
        x.norm(p=0).backward(create_graph=True)
        return [_grad(x)]

    def pairwise_distance_p0(L):
        a = L.tensor([[1.0, 2.0], [3.0, 3.0]], requires_grad=True)
        b = L.tensor([[1.0, 0.0], [0.0, 3.0]], requires_grad=True)
        L.nn.functional.pairwise_distance(a, b, p=0).sum().backward()
        return [_grad(a), _grad(b)]

    def normalize_p0(L):  # the division's numerator still carries a gradient; the denominator's is undefined
        x = L.tensor([[1.0, 0.0, -2.0], [0.5, 0.25, 3.0]], dtype=L.float64, requires_grad=True)
        L.nn.functional.normalize(x, p=0, dim=1).pow(2).sum().backward()
        return [_grad(x)]

    def norm0_under_no_grad(L):
        x = L.tensor([1.0, 0.5, -2.0], requires_grad=True)
        with L.no_grad():
            y = x.norm(p=0)
        return [np.asarray(y.requires_grad)]

    return {f.__name__: f for f in (norm0, norm0_requires_grad_and_grad_fn, norm0_dim,
                                    vector_norm0_through_an_intermediate, norm0_beside_another_path,
                                    norm0_autograd_grad, norm0_allow_unused, norm0_materialize, norm0_create_graph,
                                    pairwise_distance_p0, normalize_p0, norm0_under_no_grad)}


UNDEFINED = _undefined_programs()


@pytest.mark.parametrize("name", list(UNDEFINED))
def test_a_derivative_torch_leaves_undefined_gives_no_gradient_as_in_torch(name):
    _compare(name, UNDEFINED[name])


def test_norm0_under_compile_runs_eagerly_with_torchs_gradient():
    """tapegrad.compile cannot replay a row without its input: a graph break, then eager (fullgraph names it)."""
    def f(x):
        return x.norm(p=0) + (x * x).sum()

    x = tg.tensor([1.0, 0.5, -2.0], requires_grad=True)
    g = tg.compile(f)
    for _ in range(2):
        x.grad = None
        g(x).backward()
        assert x.grad.tolist() == [2.0, 1.0, -4.0]
        assert g(x).item() == pytest.approx(f(x).item())
    with pytest.raises(Exception, match="p=0"):
        tg.compile(f, fullgraph=True)(x)
