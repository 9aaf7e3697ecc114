"""The usual custom Function (one Tensor output, no mark_dirty / mark_non_differentiable) takes a shorter path through
apply and backward (function.py's _finish_one, _check_grads' first case, the "function" row's array rule): the edges
of that path behave as torch's, checked by running the same programs on both libraries."""
import numpy as np
import pytest
import torch

import tapegrad


def values(t):
    return None if t is None else t.detach().numpy().astype(np.float64).copy()


def both(program):
    ours, theirs = program(tapegrad), program(torch)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if isinstance(b, torch.Tensor) or isinstance(a, tapegrad.Tensor):
            np.testing.assert_allclose(values(a), values(b), rtol=1e-6)
        else:
            assert a == b


def error_like_torch(program):
    with pytest.raises(Exception) as theirs:
        program(torch)
    with pytest.raises(type(theirs.value)) as ours:
        program(tapegrad)
    assert str(ours.value) == str(theirs.value)


def cube(lib, give=lambda ctx, g, x: 3 * x * x * g):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return give(ctx, g, x)
    return Cube


def test_gradient_and_grad_fn():
    def program(lib):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = cube(lib).apply(x)
        y.sum().backward()
        return [y, x.grad, type(y.grad_fn).__name__, y.requires_grad, y.is_leaf]
    both(program)


def test_called_twice_with_retain_graph():
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = cube(lib).apply(x).sum()
        y.backward(retain_graph=True)
        first = x.grad.clone()
        y.backward()
        return [first, x.grad]
    both(program)


def test_gradient_of_another_dtype_is_cast_to_the_input_dtype():
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = cube(lib, lambda ctx, g, x: (3 * x * x * g).double()).apply(x)
        y.sum().backward()
        return [x.grad, str(x.grad.dtype).replace("tapegrad", "torch")]
    both(program)


def test_broadcastable_gradient_is_summed_to_the_input_shape():
    def program(lib):
        x = lib.tensor([[1.0, 2.0]], requires_grad=True)
        y = cube(lib, lambda ctx, g, x: g.expand(3, 2)).apply(x)
        y.sum().backward()
        return [x.grad, list(x.grad.shape)]
    both(program)


@pytest.mark.parametrize("case", ["shape", "count"])
def test_wrong_gradient_errors_are_torchs(case):
    give = {"shape": lambda ctx, g, x: g.reshape(-1)[:1].expand(5),
            "count": lambda ctx, g, x: (g, g)}[case]

    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        cube(lib, give).apply(x).sum().backward()
    error_like_torch(program)


def test_none_gradient_and_an_input_that_does_not_require_grad():
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0])

        class Mul(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)
                return x * w

            @staticmethod
            def backward(ctx, g):
                x, w = ctx.saved_tensors
                return g * w, g * x  # (w's is dropped: w does not require grad)
        y = Mul.apply(x, w)
        y.sum().backward()
        return [x.grad, w.grad is None, list(Mul.apply(x, w).grad_fn.needs_input_grad)]
    both(program)


def test_input_returned_as_is():
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        c = lib.tensor([5.0, 6.0])

        class Same(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, c):
                return c  # an input that does not require grad: a new tensor that does (torch's view)

            @staticmethod
            def backward(ctx, g):
                return g * 2, None
        y = Same.apply(x, c)
        y.sum().backward()
        return [y is c, y.requires_grad, c.requires_grad, x.grad]
    both(program)


def test_integer_output_is_not_differentiable():
    def program(lib):
        x = lib.tensor([1.5, 2.5], requires_grad=True)

        class Floor(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.floor().long()

            @staticmethod
            def backward(ctx, g):
                return g
        y = Floor.apply(x)
        return [y, y.requires_grad, y.grad_fn is None]
    both(program)


def test_non_contiguous_output():
    def program(lib):
        x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)

        class T(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return (x * 2).t()

            @staticmethod
            def backward(ctx, g):
                return g.t() * 2
        y = T.apply(x)
        (y * lib.arange(6.0).reshape(3, 2)).sum().backward()
        return [y, x.grad]
    both(program)


def test_no_grad_apply_and_inputs_without_grad():
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.no_grad():
            a = cube(lib).apply(x)
        b = cube(lib).apply(x.detach())
        return [a, a.requires_grad, a.grad_fn is None, b.requires_grad]
    both(program)


def test_saved_output_and_saved_input_version_checks():
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)

        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                y, = ctx.saved_tensors
                return g * y
        y = Exp.apply(x)
        y.sum().backward()
        return [x.grad]
    both(program)

    def modified_input(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 1
        y = cube(lib).apply(h)
        h.add_(1)
        y.sum().backward()
    error_like_torch(modified_input)

    def modified_output(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)

        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                y, = ctx.saved_tensors
                return g * y
        y = Exp.apply(x)
        y.mul_(2)
        y.sum().backward()
    error_like_torch(modified_output)


def test_a_node_prehook_that_drops_the_gradient_gets_zeros():
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        seen = []
        y = cube(lib, lambda ctx, g, x: seen.append(g.clone()) or g + 1).apply(x)
        y.grad_fn.register_prehook(lambda grads: (None,))
        y.sum().backward()
        return [seen[0], x.grad]
    both(program)


def test_backward_under_grad_mode_off_and_create_graph():
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        modes = []

        def give(ctx, g, x):
            modes.append(lib.is_grad_enabled())
            return 3 * x * x * g
        y = cube(lib, give).apply(x).sum()
        gx, = lib.autograd.grad(y, x, create_graph=True)
        gx.sum().backward()
        y2 = cube(lib, give).apply(x).sum()
        y2.backward()
        return [gx, x.grad] + modes
    both(program)


def test_setup_context_with_defaults_on_each_call():
    def program(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, k=2.0, shift=0.0):
                return x * k + shift

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None, None
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        out = []
        for call in (lambda: Scale.apply(x), lambda: Scale.apply(x, 3.0), lambda: Scale.apply(x, 4.0, 1.0)):
            x.grad = None
            y = call()
            y.sum().backward()
            out += [y, x.grad]
        return out
    both(program)
