"""tapegrad.autograd.grad: torch's semantics and errors; it leaves .grad alone and replays only the rows
on a path from the outputs to the inputs."""
import importlib

import numpy as np
import pytest
import torch

import tapegrad


@pytest.fixture(params=["tapegrad", "torch"])
def lib(request):
    return importlib.import_module(request.param)


def values(t):
    return None if t is None else t.detach().numpy().astype(np.float64).copy()


def raises_like_torch(program):
    with pytest.raises(Exception) as theirs:
        program(torch)
    with pytest.raises(type(theirs.value)) as ours:
        program(tapegrad)
    assert str(ours.value) == str(theirs.value)


def setup(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    z = lib.tensor([3.0, -1.0], requires_grad=True)
    return x, z, (x * x).sum()


@pytest.mark.parametrize("case", ["unused", "no_grad_input", "no_grad_output", "count", "empty", "shape",
                                  "implicit", "materialize_vs_allow_unused", "second_time", "unused_second"])
def test_errors_are_torchs(case):
    def program(lib):
        x, z, y = setup(lib)
        c = lib.tensor([1.0, 2.0])
        if case == "unused":
            lib.autograd.grad(y, [x, z])
        elif case == "unused_second":
            lib.autograd.grad(y, [z, x])
        elif case == "no_grad_input":
            lib.autograd.grad(y, [x, c])
        elif case == "no_grad_output":
            lib.autograd.grad(c.sum(), [x])
        elif case == "count":
            lib.autograd.grad([y, y], [x], [lib.tensor(1.0)])
        elif case == "empty":
            lib.autograd.grad(y, [])
        elif case == "shape":
            lib.autograd.grad(y, x, lib.ones(3))
        elif case == "implicit":
            lib.autograd.grad(x * 2, x)
        elif case == "materialize_vs_allow_unused":
            lib.autograd.grad(y, [x, z], allow_unused=False, materialize_grads=True)
        elif case == "second_time":
            lib.autograd.grad(y, x)
            lib.autograd.grad(y, x)
    raises_like_torch(program)


def test_allow_unused_and_materialize_grads(lib):
    x, z, y = setup(lib)
    gx, gz = lib.autograd.grad(y, [x, z], retain_graph=True, allow_unused=True)
    assert gz is None
    np.testing.assert_allclose(values(gx), [2.0, 4.0])
    gx, gz = lib.autograd.grad(y, [x, z], materialize_grads=True)
    np.testing.assert_allclose(values(gz), [0.0, 0.0])


def test_grad_does_not_touch_dot_grad(lib):
    x, z, y = setup(lib)
    x.grad = lib.tensor([10.0, 10.0])
    g, = lib.autograd.grad(y + (z * x).sum(), x)
    np.testing.assert_allclose(values(x.grad), [10.0, 10.0])
    assert z.grad is None
    np.testing.assert_allclose(values(g), [5.0, 3.0])


def test_grad_of_several_outputs_with_grad_outputs_and_a_single_input(lib):
    x = lib.tensor([0.5, -2.0], dtype=lib.float64, requires_grad=True)
    a, b = x.exp(), (x * x).sum()
    result = lib.autograd.grad([a, b], x, [lib.tensor([1.0, 3.0], dtype=lib.float64), None])
    assert isinstance(result, tuple) and len(result) == 1
    np.testing.assert_allclose(values(result[0]), np.exp([0.5, -2.0]) * [1, 3] + 2 * np.array([0.5, -2.0]))


def test_grad_with_respect_to_an_intermediate_tensor(lib):
    x = lib.tensor([0.5, -2.0], dtype=lib.float64, requires_grad=True)
    h = x.sin()
    y = (h * h * x).sum()
    gh, gx = lib.autograd.grad(y, [h, x])
    np.testing.assert_allclose(values(gh), 2 * np.sin([0.5, -2.0]) * [0.5, -2.0])
    s, c = np.sin([0.5, -2.0]), np.cos([0.5, -2.0])
    np.testing.assert_allclose(values(gx), s * s + 2 * s * c * [0.5, -2.0])


def test_grad_of_a_tensor_whose_own_graph_was_already_freed(lib):
    x = lib.tensor([0.5, -2.0], requires_grad=True)
    b = x * 3
    b.sum().backward()  # frees b's history
    g, = lib.autograd.grad((b * b).sum(), b)  # only the new rows are replayed: b's history is not needed
    np.testing.assert_allclose(values(g), [3.0, -12.0])


def test_is_grads_batched(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    z = lib.tensor([1.0, 2.0], requires_grad=True)
    gx, gz = lib.autograd.grad([x * 2, x * x], [x, z], [lib.ones(3, 2), lib.arange(6.0).reshape(3, 2)],
                               is_grads_batched=True, allow_unused=True)
    assert gz is None
    np.testing.assert_allclose(values(gx), [[2, 6], [6, 14], [10, 22]])


class _Counting:
    """A custom Function that counts its backward calls (it is on a path only if it runs)."""

    @staticmethod
    def make(lib, calls):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t * 2

            @staticmethod
            def backward(ctx, g):
                calls.append(1)
                return g * 2
        return Scale


def test_only_rows_on_a_path_from_outputs_to_inputs_run(lib):
    calls, hooks = [], []
    Scale = _Counting.make(lib, calls)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    z = lib.tensor([3.0], requires_grad=True)
    off_path = Scale.apply(z)  # reaches the output, but not from x
    h = z * 5
    h.register_hook(lambda g: hooks.append(1))
    out = (x * x).sum() + off_path.sum() + h.sum()
    g, = lib.autograd.grad(out, x, retain_graph=True)
    np.testing.assert_allclose(values(g), [2.0, 4.0])
    assert calls == [] and hooks == []
    gz, = lib.autograd.grad(out, z)  # and they do run when they are on the path
    assert calls == [1] and hooks == [1]
    np.testing.assert_allclose(values(gz), [7.0])


def test_the_plan_marks_only_path_rows():
    """White-box: the rows the replay runs are exactly those between the outputs and the inputs."""
    from tapegrad import kernels, registry, tape as tape_mod
    tape = tape_mod.current()
    x = tapegrad.tensor([1.0, 2.0], requires_grad=True)
    z = tapegrad.tensor([3.0, 4.0], requires_grad=True)
    a = x.exp()            # on the path
    b = z.sin()            # reaches the output, not from x
    c = (a * b).sum()      # on the path
    unrelated = (x * 7).sum()  # from x, but does not reach the output
    kinds, saves = registry.tables()
    rows = np.array([tape.slot(t) for t in (a, b, c, unrelated)])
    rt = kernels.load()
    need = rt.plan(tape.n, np.array([tape.slot(c)]), np.array([tape.slot(x)]), tape.flags, tape.op, kinds, saves,
                   tape.argptr, tape.args, tape.argver, tape.obj, tape.vaddr, tape.outver, tape.dtype, tape.iattr, 1,
                   rt.BLAS)[0]
    assert need[rows].tolist() == [True, False, True, False]
    assert need[tape.slot(x)] and not need[tape.slot(z)]
    del unrelated


def test_retain_graph_defaults_to_create_graph(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    g, = lib.autograd.grad(y, x, create_graph=True)
    g2, = lib.autograd.grad(y, x)  # the graph was retained by create_graph
    np.testing.assert_allclose(values(g), values(g2))
