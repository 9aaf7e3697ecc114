"""A custom torch.autograd.Function under tapegrad.compile (issue 20), as torch.compile traces through one: its
forward's ops are recomputed by each replay from that call's inputs, and its gradient is the user's backward
(recorded when the function takes a gradient; run on that call's values by a backward outside the call). Each
compiled call is compared with the eager tapegrad call and with torch, over several calls with new inputs, so
that a value frozen when traced would fail. What cannot be replayed soundly breaks the graph, naming its cause."""
import functools

import numpy as np
import pytest
import torch

import tapegrad as tg

DTYPES = ["float32", "float64"]


def _tol(dtype):
    return dict(rtol=2e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)


def _close(a, b, dtype):
    a, b = (np.asarray(v.detach().numpy() if hasattr(v, "detach") else v, np.float64) for v in (a, b))
    scale = max(1.0, float(np.abs(b).max(initial=0.0)))
    tol = _tol(dtype)
    np.testing.assert_allclose(a, b, rtol=tol["rtol"], atol=tol["atol"] * scale)


@functools.lru_cache(maxsize=None)
def _functions(lib):
    """The same Functions, written once for tapegrad and for torch."""
    F = lib.autograd.Function
    once = lib.autograd.function.once_differentiable

    class LegendreP3(F):  # pytorch's tutorial polynomial_custom_function
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x ** 3 - 3 * x)

        @staticmethod
        def backward(ctx, grad_output):
            x, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * x ** 2 - 1)

    class Exp(F):  # saves its output
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    class ScaledMul(F):  # a Python argument kept on ctx, a tensor as a ctx attribute, needs_input_grad
        seen = []

        @staticmethod
        def forward(ctx, x, w, scale):
            ctx.scale = scale
            ctx.w = w
            ctx.save_for_backward(x)
            return x * w * scale + w

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            ScaledMul.seen.append(tuple(ctx.needs_input_grad))
            gx = g * ctx.w * ctx.scale if ctx.needs_input_grad[0] else None
            gw = (g * x * ctx.scale + g).sum(0) if ctx.needs_input_grad[1] else None
            return gx, gw, None

    class SinCos(F):  # two outputs
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, gs, gc):
            x, = ctx.saved_tensors
            return gs * x.cos() - gc * x.sin()

    class Lazy(F):  # set_materialize_grads(False): an unused output's gradient is None
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x * x, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            x, = ctx.saved_tensors
            out = 0
            if g1 is not None:
                out = out + g1 * 2 * x
            if g2 is not None:
                out = out + g2 * 3
            return out

    class Masked(F):  # a non-differentiable output, computed from the values
        @staticmethod
        def forward(ctx, x):
            mask = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(mask)
            return x * mask * 2, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            mask, = ctx.saved_tensors
            return g * mask * 2

    class Square(F):  # @once_differentiable
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x

    class Cube(F):  # setup_context: forward without ctx
        @staticmethod
        def forward(x, k):
            return x ** 3 * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.k = k
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x ** 2 * ctx.k, None

    class Slope(F):  # saves a value its forward computed: under no_grad there, so it carries no gradient
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x * x * 3)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            slope, = ctx.saved_tensors
            return g * slope

    class Branchy(F):  # a branch on the values inside forward: a guard
        @staticmethod
        def forward(ctx, x):
            ctx.positive = bool(x.sum() > 0)
            return x * 2 if ctx.positive else x * -3

        @staticmethod
        def backward(ctx, g):
            return g * 2 if ctx.positive else g * -3

    return dict(LegendreP3=LegendreP3, Exp=Exp, ScaledMul=ScaledMul, SinCos=SinCos, Lazy=Lazy, Masked=Masked,
                Square=Square, Cube=Cube, Slope=Slope, Branchy=Branchy)


def _params(lib, dtype, r, *shapes):
    return [lib.tensor(r.standard_normal(s).astype(dtype) * 0.5, requires_grad=True) for s in shapes]


def _compare(make, dtype, inputs, calls=4):
    """make(lib, params) -> a function of tensors that returns tensors; called compiled (tapegrad), eagerly
    (tapegrad) and on torch with the same inputs, `calls` times with new values. Returns the compiled function."""
    r = np.random.default_rng(0)
    shapes = [(3,), (3,)]
    runs = []
    for lib in (tg, tg, torch):
        ps = _params(lib, dtype, np.random.default_rng(1), *shapes)
        runs.append((lib, ps, make(lib, ps)))
    compiled = tg.compile(runs[0][2], fullgraph=True)
    for _ in range(calls):
        arrays = inputs(r)
        outs = []
        for k, (lib, ps, fn) in enumerate(runs):
            args = [lib.tensor(a.astype(dtype)) for a in arrays]
            got = (compiled if k == 0 else fn)(*args)
            outs.append(got if isinstance(got, tuple) else (got,))
        for other in outs[1:]:
            assert len(other) == len(outs[0])
            for a, b in zip(outs[0], other):
                _close(a, b, dtype)
    return compiled


def _points(r):
    return [r.uniform(-2, 2, 40), r.uniform(-1, 1, 40)]


# -- values and gradients taken inside the compiled function ----------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_tutorial_function_replays_its_forward_and_backward(dtype):
    def make(lib, ps):
        P3 = _functions(lib)["LegendreP3"]
        a, b = ps

        def step(x, y):
            pred = a[0] + a[1] * P3.apply(a[2] + b[0] * x)
            loss = (pred - y).pow(2).sum()
            return (loss, *lib.autograd.grad(loss, (a, b)))
        return step
    compiled = _compare(make, dtype, _points)
    assert compiled.traces == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_function_used_twice_and_one_that_saves_its_output(dtype):
    def make(lib, ps):
        fns = _functions(lib)
        P3, Exp = fns["LegendreP3"], fns["Exp"]
        a, b = ps

        def step(x, y):
            h = P3.apply(P3.apply(a[0] * x + a[1]) * b[0])
            loss = (Exp.apply(h * 0.1) * y).sum() + P3.apply(y * b[1]).sum()
            return (loss, h, *lib.autograd.grad(loss, (a, b)))
        return step
    assert _compare(make, dtype, _points).traces == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_two_outputs_and_an_unused_output(dtype):
    def make(lib, ps):
        fns = _functions(lib)
        a, b = ps

        def step(x, y):
            s, c = fns["SinCos"].apply(x * a[0] + b[1])
            sq, _ = fns["Lazy"].apply(x * a[1])
            only_sin, _ = fns["SinCos"].apply(y * b[0])
            loss = (s * c * y).sum() + sq.sum() + only_sin.sum()
            return (loss, *lib.autograd.grad(loss, (a, b)))
        return step
    assert _compare(make, dtype, _points).traces == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_non_differentiable_output_is_recomputed_and_needs_no_grad(dtype):
    def make(lib, ps):
        Masked = _functions(lib)["Masked"]
        a, b = ps

        def step(x, y):
            out, mask = Masked.apply(x * a[0] - b[0])
            assert not mask.requires_grad
            loss = (out * y).sum() + (mask * y).sum()
            return (loss, mask, *lib.autograd.grad(loss, (a, b)))
        return step
    _compare(make, dtype, _points)


@pytest.mark.parametrize("dtype", DTYPES)
def test_once_differentiable_and_setup_context(dtype):
    def make(lib, ps):
        fns = _functions(lib)
        a, b = ps

        def step(x, y):
            loss = (fns["Square"].apply(x * a[0]) * y).sum() + fns["Cube"].apply(y * b[0], 0.5).sum()
            return (loss, *lib.autograd.grad(loss, (a, b)))
        return step
    _compare(make, dtype, _points)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_second_derivative_through_the_users_backward(dtype):
    """create_graph=True: the backward's ops are differentiated again, through the saved input (the tutorial's
    Function) but not through a value its forward computed (no gradient flows through a forward's ops)."""
    def make(lib, ps):
        fns = _functions(lib)
        a, b = ps

        def step(x, y):
            loss = (fns["LegendreP3"].apply(x * a[0]) * y).sum() + (fns["Slope"].apply(x * b[0]) * y).sum()
            ga, gb = lib.autograd.grad(loss, (a, b), create_graph=True)
            second = lib.autograd.grad((ga * ga).sum() + (gb * gb).sum(), (a, b), allow_unused=True)
            assert second[1] is None  # (b's gradient reaches b only through the forward's ops)
            return loss, ga, gb, second[0]
        return step
    _compare(make, dtype, _points)


@pytest.mark.parametrize("dtype", DTYPES)
def test_needs_input_grad_is_the_callers(dtype):
    """Every float argument is a leaf of the trace; needs_input_grad says which require grad in the call."""
    seen = {}
    for lib in (tg, torch):
        ScaledMul = _functions(lib)["ScaledMul"]
        ScaledMul.seen.clear()
        w = lib.tensor(np.array([0.5, -1.0, 2.0], dtype), requires_grad=True)

        def f(x):
            return ScaledMul.apply(x, w, 1.5).sum()
        f = tg.compile(f, fullgraph=True) if lib is tg else f
        r = np.random.default_rng(2)
        got = []
        for requires in (False, False, True, True):
            x = lib.tensor(r.standard_normal((4, 3)).astype(dtype), requires_grad=requires)
            w.grad = None
            f(x).backward()
            got.append((w.grad.numpy().copy(), x.grad.numpy().copy() if requires else None))
        seen[lib] = (list(ScaledMul.seen), got)
    # compiled: the backward runs in Python at each call's backward (outside the call), with that call's values
    assert seen[tg][0] == seen[torch][0] == [(False, True, False)] * 2 + [(True, True, False)] * 2
    for (gw, gx), (tw, tx) in zip(seen[tg][1], seen[torch][1]):
        _close(gw, tw, dtype)
        assert (gx is None) == (tx is None)
        if gx is not None:
            _close(gx, tx, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_backward_outside_the_compiled_call_sees_that_calls_values(dtype):
    """The compiled forward's output differentiated by the caller: the Function's backward runs in Python on the
    values of the call it belongs to (also after a later call has replaced them), saved inputs and outputs,
    a ctx attribute."""
    results = {}
    r = np.random.default_rng(3)
    xs = [r.uniform(-1, 1, (5, 3)).astype(dtype) for _ in range(3)]
    for lib in (tg, torch):
        fns = _functions(lib)
        w = lib.tensor(np.array([0.5, -1.0, 2.0], dtype), requires_grad=True)

        def f(x):
            return fns["Exp"].apply(fns["LegendreP3"].apply(x) * 0.3) + fns["ScaledMul"].apply(x, w, 2.0)
        f = tg.compile(f, fullgraph=True) if lib is tg else f
        xt = [lib.tensor(x, requires_grad=True) for x in xs]
        outs = [f(x) for x in xt]
        for out in reversed(outs):  # the earlier calls' backward after the later calls
            out.sum().backward()
        results[lib] = [o.detach().numpy() for o in outs] + [x.grad.numpy() for x in xt] + [w.grad.numpy()]
    for a, b in zip(results[tg], results[torch]):
        _close(a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_branch_in_forward_is_a_guard(dtype):
    def make(lib, ps):
        Branchy = _functions(lib)["Branchy"]
        a, _ = ps

        def step(x, y):
            loss = (Branchy.apply(x + y) * a[0]).sum()
            return (loss, *lib.autograd.grad(loss, a))
        return step
    r = np.random.default_rng(5)
    signs = iter([1, 1, -1, -1, 1])
    compiled = _compare(make, dtype, lambda _: [np.abs(r.uniform(0.1, 1, 6)) * next(signs), np.zeros(6)], calls=5)
    assert compiled.traces == 2


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_closure_tensor_read_in_forward_is_read_at_each_call(dtype):
    results = {}
    for lib in (tg, torch):
        shift = lib.tensor(np.array([1.0, 2.0, 3.0], dtype))

        class Shift(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x + shift

            @staticmethod
            def backward(ctx, g):
                return g

        def f(x):
            return Shift.apply(x * 2)
        f = tg.compile(f, fullgraph=True) if lib is tg else f
        got = []
        for k in range(3):
            shift.mul_(2)  # (in place, between calls: read afresh by each)
            x = lib.tensor(np.full(3, float(k), dtype), requires_grad=True)
            out = f(x)
            out.sum().backward()
            got += [out.detach().numpy(), x.grad.numpy()]
        results[lib] = got
    for a, b in zip(results[tg], results[torch]):
        _close(a, b, dtype)


# -- a training step -------------------------------------------------------------------------------------------
def _training(lib, dtype):
    P3 = _functions(lib)["LegendreP3"]

    class Model(lib.nn.Module):
        def __init__(self):
            super().__init__()
            for name, v in zip("abcd", (0.0, -1.0, 0.0, 0.3)):
                setattr(self, name, lib.nn.Parameter(lib.tensor(v, dtype=getattr(lib, dtype))))

        def forward(self, x):
            return self.a + self.b * P3.apply(self.c + self.d * x)

    model = Model()
    opt = lib.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = (model(x) - y).pow(2).sum()
        loss.backward()
        opt.step()
        return loss
    return model, step


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_training_step_with_loss_backward_and_an_optimizer(dtype):
    runs = [_training(lib, dtype) for lib in (tg, tg, torch)]
    compiled = tg.compile(runs[0][1], fullgraph=True)
    r = np.random.default_rng(4)
    for _ in range(5):
        x = r.uniform(-np.pi, np.pi, 200).astype(dtype)
        losses = [(compiled if k == 0 else step)(lib.tensor(x), lib.tensor(np.sin(x)))
                  for k, ((_, step), lib) in enumerate(zip(runs, (tg, tg, torch)))]
        for loss in losses[1:]:
            _close(losses[0], loss, dtype)
        for ps in zip(*(m.parameters() for m, _ in runs)):
            for p in ps[1:]:
                _close(ps[0], p, dtype)
                _close(ps[0].grad, p.grad, dtype)
    assert compiled.traces == 1


# -- what breaks the graph ---------------------------------------------------------------------------------------
def _breaking(kind):
    class Breaks(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if kind == "numpy":
                return tg.tensor(np.tanh(x.detach().numpy()))
            if kind == "in_place":
                x = x.detach()
                x.mul_(2)
                ctx.mark_dirty(x)
                return x
            if kind == "no_grad":
                with tg.no_grad():
                    return x * 2
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            if kind == "numpy_in_backward":
                return tg.tensor(g.numpy() * 2)
            return g * 2
    return Breaks


@pytest.mark.parametrize("kind, cause", [
    ("numpy", "a value read into Python"),
    ("numpy_in_backward", "a value read into Python"),
    ("in_place", "an in-place op"),
    ("no_grad", r"ran unrecorded \(under no_grad\)"),
    ("once_create_graph", "@once_differentiable backward under create_graph=True"),
])
def test_what_cannot_be_replayed_breaks_the_graph_naming_its_cause(kind, cause):
    Breaks = _breaking(kind)
    Square = _functions(tg)["Square"]
    w = tg.tensor([0.5, -1.0, 2.0], requires_grad=True)

    def f(x):
        if kind == "once_create_graph":
            g, = tg.autograd.grad(Square.apply(x * w).sum(), w, create_graph=True)
            return g
        return tg.autograd.grad((Breaks.apply(x * w) * x).sum(), w)[0]
    with pytest.raises(RuntimeError, match=cause):
        tg.compile(f, fullgraph=True)(tg.tensor([1.0, 2.0, 3.0]))
    # without fullgraph, the signature runs eagerly: equal to the eager call
    lenient = tg.compile(f)
    for k in range(2):
        x = tg.tensor([1.0, 2.0, 3.0]) * (k + 1)
        np.testing.assert_array_equal(lenient(x).detach().numpy(), f(x).detach().numpy())


def test_mark_dirty_breaks_the_graph():
    """Marked dirty without an in-place op that the trace sees (a write through NumPy is a break of its own)."""
    class Dirty(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    def f(x):
        return Dirty.apply(x.clone() * 2)
    with pytest.raises(RuntimeError, match="mark_dirty"):
        tg.compile(f, fullgraph=True)(tg.tensor([1.0, 2.0], requires_grad=True))


def test_the_tutorial_relu_replays_its_forward_and_breaks_where_its_backward_writes_in_place():
    """pytorch's two_layer_net_custom_function's MyReLU: its backward writes into a clone (`grad_input[input < 0]
    = 0`). Taken outside the compiled call, it runs eagerly on each call's values; taken inside, the in-place op
    breaks the graph."""
    results = {}
    r = np.random.default_rng(6)
    xs = [r.standard_normal((4, 3)) for _ in range(3)]
    for lib in (tg, torch):
        class MyReLU(lib.autograd.Function):
            @staticmethod
            def forward(ctx, input):
                ctx.save_for_backward(input)
                return input.clamp(min=0)

            @staticmethod
            def backward(ctx, grad_output):
                input, = ctx.saved_tensors
                grad_input = grad_output.clone()
                grad_input[input < 0] = 0
                return grad_input
        w = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)

        def f(x):
            return MyReLU.apply(x * w)
        f = tg.compile(f, fullgraph=True) if lib is tg else f
        got = []
        for x in xs:
            w.grad = None
            out = f(lib.tensor(x))
            out.sum().backward()
            got += [out.detach().numpy(), w.grad.numpy().copy()]
        results[lib] = got
        if lib is tg:
            assert f.traces == 1
            with pytest.raises(RuntimeError, match="an in-place op"):
                tg.compile(lambda x: tg.autograd.grad(MyReLU.apply(x * w).sum(), w)[0], fullgraph=True)(tg.tensor(x))
    for a, b in zip(results[tg], results[torch]):
        _close(a, b, "float64")


def test_a_ctx_that_keeps_a_value_no_recorded_op_computed_breaks_the_graph():
    """unique has no gradient and is not recorded: kept on ctx, its traced value would be reused by every replay.
    A detached input, a constant made in forward and a tensor the forward reads are recomputed, kept or read."""
    outside = tg.tensor([1.0, 2.0, 3.0])

    class Keeps(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x, kind):
            ctx.kept = {"unique": lambda: tg.unique(x.detach()), "detached": lambda: x.detach(),
                        "made": lambda: tg.ones(3), "read": lambda: outside}[kind]()
            return x * 2 + outside

        @staticmethod
        def backward(ctx, g):
            return g * 2 + ctx.kept.sum() * 0, None

    def f(x, kind):
        return Keeps.apply(x, kind)
    x = tg.tensor([1.0, 0.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Keeps's ctx keeps a tensor that no recorded op computed"):
        tg.compile(f, fullgraph=True)(x, "unique")
    compiled = tg.compile(f, fullgraph=True)
    for kind in ("detached", "made", "read"):
        for k in range(2):
            xk = tg.tensor([1.0, 0.0, 3.0]) * (k + 1)
            xk.requires_grad = True
            out = compiled(xk, kind)
            out.sum().backward()
            np.testing.assert_array_equal(out.detach().numpy(), (xk * 2 + outside).detach().numpy())
            np.testing.assert_array_equal(xk.grad.numpy(), [2.0, 2.0, 2.0])
    assert compiled.traces == 3


def test_an_integer_argument_kept_on_ctx_is_each_calls():
    """An index passed as an argument and saved without the forward reading it: bound at each call; the same index
    computed by an op that is not recorded breaks the graph."""
    class Pick(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x, idx):
            ctx.save_for_backward(idx)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            idx, = ctx.saved_tensors
            return g * 2 * (idx.to(g.dtype) + 1), None

    compiled = tg.compile(lambda x, idx: Pick.apply(x, idx), fullgraph=True)
    for k in range(3):
        x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        idx = tg.tensor([k, 0, 2 * k])
        compiled(x, idx).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), 2.0 * (idx.numpy() + 1))
    assert compiled.traces == 1
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    inside = tg.compile(lambda x, idx: tg.autograd.grad(Pick.apply(x * w, idx).sum(), w)[0], fullgraph=True)
    for k in range(3):
        x, idx = tg.tensor([1.0, 2.0, 3.0]) * k, tg.tensor([k, 0, 2 * k])
        np.testing.assert_array_equal(inside(x, idx).numpy(), 2.0 * (idx.numpy() + 1) * x.numpy())
    assert inside.traces == 1
    with pytest.raises(RuntimeError, match="Pick's ctx keeps a tensor that no recorded op computed"):
        tg.compile(lambda x, y: Pick.apply(x, tg.unique(y)), fullgraph=True)(x, tg.tensor([2, 1, 2]))


def test_a_number_read_in_forward_and_kept_on_ctx_is_guarded():
    """ctx.top = x.max().item() used by the backward only, which runs outside the call: its value is guarded, so a
    call where it differs traces again instead of reusing the traced number."""
    class Scaled(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.top = x.detach().max().item()
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * ctx.top

    compiled = tg.compile(lambda x: Scaled.apply(x), fullgraph=True)
    for top, traces in ((3.0, 1), (3.0, 1), (5.0, 2), (3.0, 2)):
        x = tg.tensor([1.0, top, 2.0], requires_grad=True)
        compiled(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [top] * 3)
        assert compiled.traces == traces
