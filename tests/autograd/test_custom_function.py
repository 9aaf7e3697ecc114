"""tapegrad.autograd.Function: torch's API and behaviour, checked by running the same programs on both
libraries; and tapegrad's recording: one tape row, named by the Function, reclaimed like any other."""
import gc
import importlib
import re

import numpy as np
import pytest
import torch

import tapegrad
from tapegrad import tape as tape_mod


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


def functions(lib):
    """A few Functions, defined against either library."""
    F = lib.autograd.Function

    class MyExp(F):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    class ScaledMul(F):
        """Non-tensor argument, saved inputs, a backward in ops (so twice differentiable)."""

        @staticmethod
        def forward(ctx, x, k, w):
            ctx.save_for_backward(x, w)
            ctx.k = k
            return (x * w).sin() * k

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            c = (x * w).cos() * ctx.k * g
            return c * w, None, c * x

    class SplitSquare(F):
        """Three outputs: two differentiable, one integer."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x, x * 3, (x > 0).long()

        @staticmethod
        def backward(ctx, g1, g2, g3):
            x, = ctx.saved_tensors
            ctx.calls = getattr(ctx, "calls", 0) + 1
            return g1 * 2 * x + g2 * 3

    return MyExp, ScaledMul, SplitSquare


def test_one_row_named_by_the_function():
    MyExp, _, _ = functions(tapegrad)
    tape = tape_mod.current()
    x = tapegrad.tensor([0.5, 1.0], requires_grad=True)
    tape.slot(x)  # registers x's leaf row
    n = tape.n
    y = MyExp.apply(x)
    assert tape.n == n + 1
    assert type(y.grad_fn).__name__ == "MyExpBackward" and y.grad_fn.name() == "MyExpBackward"
    assert repr(y).endswith("grad_fn=<MyExpBackward>)")
    assert re.fullmatch(r"<torch\.autograd\.function\.MyExpBackward object at 0x[0-9a-f]+>", repr(y.grad_fn))  # as torch
    leaf, = y.grad_fn.next_functions
    assert leaf[0].variable is x


def test_grad_fn_is_the_ctx_as_torch(lib):
    _, ScaledMul, _ = functions(lib)
    x = lib.tensor([0.5, 1.0], requires_grad=True)
    w = lib.tensor([2.0, -1.0])
    y = ScaledMul.apply(x, 3.0, w)
    assert type(y.grad_fn).__name__ == "ScaledMulBackward"
    assert y.grad_fn.needs_input_grad == (True, False, False)
    assert y.grad_fn.k == 3.0
    saved_x, saved_w = y.grad_fn.saved_tensors
    assert saved_x is x and saved_w is w


def test_gradients_and_needs_input_grad(lib):
    MyExp, ScaledMul, _ = functions(lib)
    x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([2.0, 0.3], dtype=lib.float64, requires_grad=True)
    (MyExp.apply(x) * ScaledMul.apply(x, 1.5, w)).sum().backward()
    xv, wv = np.array([0.5, -1.0]), np.array([2.0, 0.3])
    s = 1.5 * np.sin(xv * wv)
    np.testing.assert_allclose(values(x.grad), np.exp(xv) * s + np.exp(xv) * 1.5 * np.cos(xv * wv) * wv)
    np.testing.assert_allclose(values(w.grad), np.exp(xv) * 1.5 * np.cos(xv * wv) * xv)


def test_needs_input_grad_in_forward_and_backward(lib):
    seen = []

    class Probe(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, y):
            seen.append(ctx.needs_input_grad)
            return x * k + y

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return g * 2, None, None

    x = lib.tensor([1.0], requires_grad=True)
    Probe.apply(x, 2, lib.tensor([1.0])).sum().backward()
    with lib.no_grad():
        Probe.apply(x, 2, lib.tensor([1.0]))
    assert seen == [(True, False, False)] * 3  # torch's: whether each input requires grad, in any grad mode


def test_function_used_twice_in_one_graph(lib):
    MyExp, _, _ = functions(lib)
    x = lib.tensor([0.25, -0.5], dtype=lib.float64, requires_grad=True)
    y = MyExp.apply(MyExp.apply(x) * 2) + MyExp.apply(x)
    assert y.grad_fn is not None
    y.sum().backward()
    xv = np.array([0.25, -0.5])
    np.testing.assert_allclose(values(x.grad), np.exp(2 * np.exp(xv)) * 2 * np.exp(xv) + np.exp(xv))


def test_multiple_outputs_one_backward_call(lib):
    _, _, SplitSquare = functions(lib)
    x = lib.tensor([1.5, -2.0], requires_grad=True)
    a, b, c = SplitSquare.apply(x)
    assert a.grad_fn is b.grad_fn and c.grad_fn is None and not c.requires_grad
    assert type(a.grad_fn).__name__ == "SplitSquareBackward"
    (a.sum() + 10 * b.sum()).backward()
    assert a.grad_fn.calls == 1
    np.testing.assert_allclose(values(x.grad), 2 * np.array([1.5, -2.0]) + 30)


def test_multiple_outputs_materialize_zeros_for_unused_ones(lib):
    got = []

    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            got.append((values(g1), values(g2)))
            return g1 * 2 + g2 * 3

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a, b = Two.apply(x)
    b.sum().backward()
    np.testing.assert_array_equal(got[0][0], [0.0, 0.0])
    np.testing.assert_array_equal(got[0][1], [1.0, 1.0])
    np.testing.assert_allclose(values(x.grad), [3.0, 3.0])
    a, b = Two.apply(x)
    g, = lib.autograd.grad(a.sum(), x)  # and through the first output only
    np.testing.assert_allclose(values(g), [2.0, 2.0])
    np.testing.assert_array_equal(got[1][1], [0.0, 0.0])


def test_set_materialize_grads_false_passes_none(lib):
    got = []

    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            got.append(g2 is None)
            return g1 * 2 if g2 is None else g1 * 2 + g2 * 3

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a, b = Two.apply(x)
    a.sum().backward()
    assert got == [True]
    np.testing.assert_allclose(values(x.grad), [2.0, 2.0])


def test_mark_non_differentiable(lib):
    class Sorted(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            mask = x > 0
            ctx.mark_non_differentiable(mask)
            return out, mask.to(x.dtype)

        @staticmethod
        def backward(ctx, g, _):
            return g * 2

    class Flat(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return g

    x = lib.tensor([1.0, -2.0], requires_grad=True)
    out, mask = Sorted.apply(x)
    assert out.requires_grad and mask.requires_grad  # mark applies to the tensor object that was marked
    o = Flat.apply(x)
    assert not o.requires_grad and o.grad_fn is None


def test_input_returned_as_is_is_a_new_tensor(lib):
    class Same(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    z = Same.apply(x)
    assert z is not x and type(z.grad_fn).__name__ == "SameBackward"
    z.sum().backward()
    np.testing.assert_allclose(values(x.grad), [5.0, 5.0])


def test_mark_dirty_in_place(lib):
    class Double_(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    w = lib.tensor([1.0, 3.0], requires_grad=True)
    a = w * 1
    b = Double_.apply(a)
    assert b is a and a._version == 2 and type(a.grad_fn).__name__ == "Double_Backward"
    (b * b).sum().backward()
    np.testing.assert_allclose(values(w.grad), [8.0, 24.0])
    raises_like_torch(lambda L: [t for t in [L.tensor([1.0], requires_grad=True)]
                                 and [functions_dirty(L).apply(L.tensor([1.0], requires_grad=True))]])


def functions_dirty(lib):
    class D(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return D


def test_setup_context_style_with_defaults(lib):
    seen = []

    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(x, k=2.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append((len(inputs), lib.is_grad_enabled()))
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    Scale.apply(x).sum().backward()
    Scale.apply(x, k=5.0).sum().backward()
    assert seen == [(2, False), (2, False)]
    np.testing.assert_allclose(values(x.grad), [7.0, 7.0])


def test_double_backward_through_a_backward_written_in_ops(lib):
    MyExp, ScaledMul, _ = functions(lib)
    x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([2.0, 0.3], dtype=lib.float64, requires_grad=True)
    y = (MyExp.apply(x) * ScaledMul.apply(x, 1.5, w)).sum()
    gx, gw = lib.autograd.grad(y, (x, w), create_graph=True)
    hx, hw = lib.autograd.grad((gx * gx).sum() + gw.sum(), (x, w), create_graph=True)
    t, = lib.autograd.grad(hx.sum() + (hw * hw).sum(), x)
    return_values = [values(v) for v in (gx, gw, hx, hw, t)]
    ref = _reference_double_backward()
    for a, b in zip(return_values, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def _reference_double_backward():
    x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([2.0, 0.3], dtype=torch.float64, requires_grad=True)
    y = (x.exp() * (x * w).sin() * 1.5).sum()
    gx, gw = torch.autograd.grad(y, (x, w), create_graph=True)
    hx, hw = torch.autograd.grad((gx * gx).sum() + gw.sum(), (x, w), create_graph=True)
    t, = torch.autograd.grad(hx.sum() + (hw * hw).sum(), x)
    return [values(v) for v in (gx, gw, hx, hw, t)]


def test_gradgradcheck_of_a_function_with_a_backward_in_ops():
    _, ScaledMul, _ = functions(tapegrad)
    x = tapegrad.tensor([0.5, -1.0], dtype=tapegrad.float64, requires_grad=True)
    w = tapegrad.tensor([2.0, 0.3], dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda a, b: ScaledMul.apply(a, 1.5, b), (x, w))
    assert tapegrad.autograd.gradgradcheck(lambda a, b: ScaledMul.apply(a, 1.5, b), (x, w))


@pytest.mark.parametrize("case", ["too_few", "non_tensor_grad", "bad_shape", "no_backward", "no_forward",
                                  "save_int", "modified_input", "modified_output", "modified_leaf",
                                  "saved_after_free", "dirty_leaf", "once_differentiable"])
def test_errors_are_torchs(case):
    def program(lib):
        F = lib.autograd.Function
        x = lib.ones(3, requires_grad=True)

        class Few(F):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return g

        class NonTensorGrad(F):
            @staticmethod
            def forward(ctx, a, k):
                return a * k

            @staticmethod
            def backward(ctx, g):
                return g, g

        class BadShape(F):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return lib.ones(5)

        class NoBackward(F):
            @staticmethod
            def forward(ctx, a):
                return a * 2

        class SaveInt(F):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a, 3)
                return a

        class Saved(F):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a * 2

            @staticmethod
            def backward(ctx, g):
                a, = ctx.saved_tensors
                return g * a

        class SavedOut(F):
            @staticmethod
            def forward(ctx, a):
                y = a.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                y, = ctx.saved_tensors
                return g * y

        class Once(F):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a * a

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                a, = ctx.saved_tensors
                return g * 2 * a

        if case == "too_few":
            Few.apply(x, x).sum().backward()
        elif case == "non_tensor_grad":
            NonTensorGrad.apply(x, 2.0).sum().backward()
        elif case == "bad_shape":
            BadShape.apply(x).sum().backward()
        elif case == "no_backward":
            NoBackward.apply(x).sum().backward()
        elif case == "no_forward":
            F.apply(x)
        elif case == "save_int":
            SaveInt.apply(x)
        elif case == "modified_input":
            a = x * 1
            z = Saved.apply(a)
            a.mul_(2)
            z.sum().backward()
        elif case == "modified_output":
            y = SavedOut.apply(x)
            with lib.no_grad():
                y.mul_(2)
            y.sum().backward()
        elif case == "modified_leaf":
            w = lib.ones(3, requires_grad=True)
            z = Saved.apply(w)
            with lib.no_grad():
                w.mul_(2)
            z.sum().backward()
        elif case == "saved_after_free":
            y = SavedOut.apply(x)
            y.sum().backward()
            y.grad_fn.saved_tensors
        elif case == "dirty_leaf":
            functions_dirty(lib).apply(x)
        elif case == "once_differentiable":
            g, = lib.autograd.grad(Once.apply(x).sum(), x, lib.ones((), requires_grad=True), create_graph=True)
            g.sum().backward()
    raises_like_torch(program)


def test_broadcast_shaped_gradient_is_summed(lib):
    class Bcast(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return lib.ones(4, 3)

    x = lib.ones(3, requires_grad=True)
    Bcast.apply(x).sum().backward()
    np.testing.assert_allclose(values(x.grad), [4.0, 4.0, 4.0])


def test_once_differentiable_first_order_works(lib):
    class Once(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * 2 * a

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    g, = lib.autograd.grad(Once.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad
    np.testing.assert_allclose(values(g), [2.0, 4.0])


def test_no_grad_apply_records_nothing():
    MyExp, _, _ = functions(tapegrad)
    x = tapegrad.tensor([0.5], requires_grad=True)
    tape = tape_mod.current()
    tape.slot(x)
    n = tape.n
    with tapegrad.no_grad():
        y = MyExp.apply(x)
    assert tape.n == n and y.grad_fn is None and not y.requires_grad
    y = MyExp.apply(tapegrad.tensor([0.5]))
    assert tape.n == n and not y.requires_grad


def test_function_rows_are_reclaimed_when_their_outputs_die():
    """The ctx keeps saved outputs by row, not by value: a forward that nobody differentiates is freed."""
    MyExp, _, SplitSquare = functions(tapegrad)
    tape = tape_mod.current()
    gc.collect()
    tape.sweep()
    before = tape.stats()["live_entries"]  # (what earlier tests of this thread still hold)
    x = tapegrad.tensor([0.5, 1.0], requires_grad=True)
    for _ in range(3000):
        MyExp.apply(x).sum()
        SplitSquare.apply(x)
    gc.collect()
    tape.sweep()
    assert tape.stats()["live_entries"] - before < 100


def test_float32_stays_float32(lib):
    MyExp, _, _ = functions(lib)
    x = lib.tensor([0.5, 1.0], requires_grad=True)
    MyExp.apply(x).sum().backward()
    assert x.grad.dtype == lib.float32
    np.testing.assert_allclose(values(x.grad), np.exp([0.5, 1.0]), rtol=1e-6)


@pytest.mark.parametrize("which,op", [("input", "add_"), ("output 0", "mul_"), ("output 1", "add_")])
def test_a_saved_tensor_written_in_place_raises_torchs_message(which, op):
    """A Function's saved input names its current producer; a saved output names the Function and which of its
    outputs it is, whatever wrote it since (torch's SavedVariable); the version check itself stays as it was."""
    def message(L):
        class Pair(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y, z = x * 3, x * 4
                ctx.save_for_backward(x, y, z)
                return y, z

            @staticmethod
            def backward(ctx, g, h):
                x, y, z = ctx.saved_tensors
                return g * y / x + h * z / x
        a = L.tensor([1.0, 2.0, 4.0], requires_grad=True)
        x = a * 2
        y, z = Pair.apply(x)
        getattr({"input": x, "output 0": y, "output 1": z}[which], op)(2)
        with pytest.raises(RuntimeError) as err:
            (y.sum() + z.sum()).backward()
        return str(err.value)
    ours = message(tapegrad)
    assert ours == message(torch)
    assert ("Add," if which == "input" else f"{which} of Pair,") in ours
