"""tapegrad.compile (tapegrad/tracing.py): a traced function replayed on new inputs gives what the eager call
gives (values, gradients, torch's errors), and anything a replay could not repeat runs eagerly instead."""
import re

import numpy as np
import pytest
import torch

import tapegrad as tg
from tapegrad import tracing as trace

rng = np.random.default_rng(0)


def _mlp(lib, seed=0):
    r = np.random.default_rng(seed)
    return [lib.tensor(r.standard_normal(s).astype(np.float32) * 0.3, requires_grad=True)
            for s in ((8, 16), (16,), (16, 5), (5,))]


def _loss(lib, params):
    w1, b1, w2, b2 = params

    def loss(x, y):
        h = lib.tanh(x @ w1 + b1)
        return lib.nn.functional.cross_entropy(h @ w2 + b2, y)
    return loss


def test_training_loop_matches_eager_and_torch_and_runs_python_once():
    calls = []
    ps_c, ps_e, ps_t = _mlp(tg), _mlp(tg), _mlp(torch)
    eager, traced, ref = _loss(tg, ps_e), _loss(tg, ps_c), _loss(torch, ps_t)

    def counted(x, y):
        calls.append(1)
        return traced(x, y)
    compiled = tg.compile(counted, fullgraph=True)
    for step in range(6):
        x = rng.standard_normal((4, 8)).astype(np.float32)
        y = rng.integers(0, 5, 4)
        losses = []
        for lib, f, ps in ((tg, compiled, ps_c), (tg, eager, ps_e), (torch, ref, ps_t)):
            loss = f(lib.tensor(x), lib.tensor(y))
            loss.backward()
            with lib.no_grad():
                for p in ps:
                    p -= 0.5 * p.grad
                    p.grad = None
            losses.append(loss.item())
        assert losses[0] == losses[1]
        assert losses[0] == pytest.approx(losses[2], rel=1e-5)
    for a, b, t in zip(ps_c, ps_e, ps_t):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert len(calls) == 1  # traced once; every later step replayed the tape


def _chain(lib):
    def f(x, k):
        y = x
        for _ in range(k):
            y = lib.sigmoid(lib.exp(y * 0.5 - 1.0) / (1.0 + y * y)) + 2.0 ** y
        return (y.sum(0) * x.mean()).sum(), y.t()
    return f


def test_elementwise_reductions_and_two_outputs_match_torch():
    f = tg.compile(_chain(tg), fullgraph=True)
    for shape in ((3, 4), (3, 4), (2, 5)):  # the new shape is a new signature, traced again
        xd = rng.standard_normal(shape)
        x, tx = tg.tensor(xd, requires_grad=True), torch.tensor(xd, requires_grad=True)
        (s, yt), (ts, tyt) = f(x, 3), _chain(torch)(tx, 3)
        np.testing.assert_allclose(s.item(), ts.item(), rtol=1e-12)
        np.testing.assert_allclose(yt.detach().numpy(), tyt.detach().numpy(), rtol=1e-12)
        (s + yt.sum()).backward()
        (ts + tyt.sum()).backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
        assert type(f(x, 3)) is tuple and s.grad_fn.name() == "CompiledFunctionBackward"


def test_zero_dim_tensors_and_views_replay():
    """A ufunc of 0-d arrays returns a NumPy scalar; every row's value must stay an array (the compiled
    replay reads its struct)."""
    w = tg.tensor(np.array(0.5), requires_grad=True)
    f = tg.compile(lambda x: (w * x).tanh() + (w.reshape(1) * x.reshape(1)).sum(), fullgraph=True)
    for v in (0.3, -1.2):
        w.grad = None
        f(tg.tensor(np.array(v))).backward()
        assert w.grad.item() == pytest.approx(v * (1 - np.tanh(0.5 * v) ** 2) + v, rel=1e-12)


def _elementwise(lib, w):
    def f(x, s):  # every kind of table row: unary ufuncs, x op y, x op scalar, scalar op x, a 1-element operand
        y = lib.tanh(x * 1.0001 + 0.001) - 2.0 / (x * x + 1.0)
        y = lib.exp(-y.abs()) * w + lib.sqrt(y * y) / s + lib.maximum(y, s) - lib.atan2(y, x)
        return (y / 0.0 + y).sum(), y  # inf and nan as NumPy gives them
    return f


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elementwise_rows_replay_in_one_compiled_call_bit_for_bit(dtype):
    """Runs of elementwise rows call NumPy's own inner loops (kernels/forward.py): values equal eager ones."""
    w = tg.tensor(rng.standard_normal(6).astype(dtype), requires_grad=True)
    f = tg.compile(_elementwise(tg, w), fullgraph=True)
    for _ in range(3):
        x = tg.tensor(rng.standard_normal(6).astype(dtype) * 3, requires_grad=True)
        s = tg.tensor(np.array([rng.standard_normal()], dtype))
        (out, y), (eout, ey) = f(x, s), _elementwise(tg, w)(x, s)
        assert out.dtype == eout.dtype == y.dtype and y.shape == ey.shape
        np.testing.assert_array_equal(y.detach().numpy(), ey.detach().numpy())
        np.testing.assert_array_equal(out.detach().numpy(), eout.detach().numpy())
        grads = tg.autograd.grad(y.sum(), (x, w))
        np.testing.assert_array_equal(grads[0].numpy(), tg.autograd.grad(ey.sum(), x)[0].numpy())
    (program,), = f._cache.values()
    assert len(program.table) >= 20  # (the rows really ran in the table, not one NumPy call each)


@pytest.mark.parametrize("shape, other", [((5, 6), (6,)), ((2, 3, 4), (1, 3, 4)), ((2, 3, 4), (4,)), ((4,), (1,))])
def test_a_bias_over_a_batch_is_one_table_row_bit_for_bit(shape, other):
    """An operand of the output's last dims (a bias) is one table row: one loop call per repeat of it."""
    b = tg.tensor(rng.standard_normal(other).astype(np.float32), requires_grad=True)
    f = tg.compile(lambda x: (x + b) * b - b / x, fullgraph=True)
    for _ in range(2):
        x = tg.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
        np.testing.assert_array_equal(f(x).detach().numpy(), ((x + b) * b - b / x).detach().numpy())
    (program,), = f._cache.values()
    assert len(program.table) == 4  # (add, mul, div, sub: none fell back to a NumPy call)


def test_a_loop_that_differs_from_the_ufunc_call_falls_back_to_numpy(monkeypatch):
    """The self-check catches a wrong loop (here: add's, called for multiply) and every row runs its ufunc."""
    from tapegrad.kernels import forward
    loop = forward.ufunc_loop
    monkeypatch.setattr(forward, "ufunc_loop", lambda u, d: loop(np.add if u is np.multiply else u, d))
    monkeypatch.setattr(trace, "_LOOPS", {})
    x = tg.tensor(rng.standard_normal(5), requires_grad=True)
    f = tg.compile(lambda x: (x * 3.0).tanh(), fullgraph=True)
    np.testing.assert_array_equal(f(x).detach().numpy(), np.tanh(x.detach().numpy() * 3.0))
    (program,), = f._cache.values()
    assert program.table is None


def test_ufunc_loop_is_found_only_for_its_dtype():
    from tapegrad.kernels import forward
    assert forward.ufunc_loop(np.tanh, np.float32) != forward.ufunc_loop(np.tanh, np.float64)
    assert forward.ufunc_loop(np.tanh, np.float32) is not None
    assert forward.ufunc_loop(np.bitwise_and, np.float64) is None  # NumPy has no such loop


def test_backward_of_an_earlier_call_recomputes_its_values():
    w = tg.tensor(rng.standard_normal(5), requires_grad=True)
    f = tg.compile(lambda x: (tg.tanh(x * w) ** 2).sum(), fullgraph=True)
    x1, x2 = tg.tensor(rng.standard_normal(5)), tg.tensor(rng.standard_normal(5))
    l1, l2 = f(x1), f(x2)   # the second call replaces the private tape's values
    l1.backward()
    g1 = w.grad.clone()
    w.grad = None
    (tg.tanh(x1 * w) ** 2).sum().backward()
    np.testing.assert_array_equal(g1.numpy(), w.grad.numpy())
    w.grad = None
    l2.backward()
    g2 = w.grad.clone()
    w.grad = None
    (tg.tanh(x2 * w) ** 2).sum().backward()
    np.testing.assert_array_equal(g2.numpy(), w.grad.numpy())


def test_autograd_grad_retain_graph_and_argument_gradients():
    f = tg.compile(lambda a, b: (a * b + a.exp()).sum(), fullgraph=True)
    a = tg.tensor(rng.standard_normal(4), requires_grad=True)
    b = tg.tensor(rng.standard_normal(4))
    out = f(a, b)
    ga, = tg.autograd.grad(out, a, retain_graph=True)
    np.testing.assert_allclose(ga.numpy(), b.numpy() + np.exp(a.detach().numpy()))
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * ga.numpy())
    assert b.grad is None


def _loss_and_grads(lib, params, calls):
    loss = _loss(lib, params)

    def step(x, y):  # a training step's gradients taken inside the compiled function, as with torch.func
        calls.append(1)
        out = loss(x, y)
        return (out, *lib.autograd.grad(out, params))
    return step


def test_autograd_grad_inside_is_traced_and_replayed_with_each_calls_targets():
    calls = []
    ps_c, ps_t = _mlp(tg), _mlp(torch)
    f, ref = tg.compile(_loss_and_grads(tg, ps_c, calls), fullgraph=True), _loss_and_grads(torch, ps_t, [])
    kept = []
    for _ in range(5):
        x, y = rng.standard_normal((4, 8)).astype(np.float32), rng.integers(0, 5, 4)
        got, want = f(tg.tensor(x), tg.tensor(y)), ref(torch.tensor(x), torch.tensor(y))
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want] == [True] + [False] * 4
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
        kept.append([g.numpy().copy() for g in got[1:]] + [got[1:]])
        for lib, ps, gs in ((tg, ps_c, got[1:]), (torch, ps_t, want[1:])):
            with lib.no_grad():
                for p, g in zip(ps, gs):
                    p -= 0.5 * g
    assert len(calls) == 1  # traced once: the gradient too is replayed
    for *copies, grads in kept:  # a gradient handed out as computed is never written by a later call
        for c, g in zip(copies, grads):
            np.testing.assert_array_equal(c, g.numpy())
    (program,), = f._cache.values()
    names = [tg.registry.OPS[o].name for o in program.tape.op[: program.tape.n]]
    # the loss's, three weights' products (x's is not wanted) and tanh's, by the plain backward's own loop
    assert names.count("traced_rule") == 5
    assert "where" not in names and "mul" not in names


_UNARY_CASES = {"relu": lambda m, x: m.relu(x), "tanh": lambda m, x: m.tanh(x), "exp": lambda m, x: m.exp(x),
                "leaky_relu": lambda m, x: m.nn.functional.leaky_relu(x, 0.2),
                "clamp": lambda m, x: x.clamp(-0.5, 0.5), "pow": lambda m, x: x ** 3, "rdiv": lambda m, x: 2.0 / x}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(_UNARY_CASES))
def test_a_unary_ops_traced_gradient_is_one_row_with_the_plain_backwards_bits(name, dtype):
    """Traced, a unary elementwise row's gradient is one row running the plain backward's loop, with its constants
    (a slope, bounds, an exponent), not its derivative expression recorded op by op."""
    op = _UNARY_CASES[name]
    x = rng.standard_normal((3, 7)).astype(dtype)
    x[0, :3] = (0.0 if name != "rdiv" else 0.25, 0.5, -0.5)  # (relu's and clamp's edges)
    seed = rng.standard_normal((3, 7)).astype(dtype)

    def grad(m, xt):
        return m.autograd.grad((op(m, xt) * m.tensor(seed)).sum(), xt)[0]
    f = tg.compile(lambda xt: grad(tg, xt), fullgraph=True)
    for _ in range(2):  # (the trace, then a replay)
        got = f(tg.tensor(x, requires_grad=True))
    eager = grad(tg, tg.tensor(x, requires_grad=True))
    # (the oracle in float64: torch's float32 tanh and exp differ by an ulp between CPUs' SIMD paths, and tanh's
    # 1 - y * y magnifies that; float64 is a thousand times finer than float32's tolerance here)
    want = grad(torch, torch.tensor(x.astype(np.float64), requires_grad=True)).numpy() if dtype == np.float32 else \
        grad(torch, torch.tensor(x, requires_grad=True)).numpy()
    np.testing.assert_array_equal(got.numpy(), eager.numpy())
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-6)
    (program,), = f._cache.values()
    names = [tg.registry.OPS[o].name for o in program.tape.op[: program.tape.n]]
    assert names.count("traced_rule") == 1 and "where" not in names


def test_a_gradient_a_later_call_writes_in_place_is_handed_out_as_a_copy():
    w = tg.tensor(rng.standard_normal(5), requires_grad=True)
    f = tg.compile(lambda x: tg.autograd.grad((x * w).tanh().sum(), w)[0], fullgraph=True)
    xs = [rng.standard_normal(5) for _ in range(3)]
    got = [f(tg.tensor(x)) for x in xs]  # (each is a row of the elementwise table: written in place by every call)
    for x, g in zip(xs, got):
        np.testing.assert_allclose(g.numpy(), x * (1 - np.tanh(x * w.detach().numpy()) ** 2), rtol=1e-12)


def _second(lib):
    def f(x):
        g, = lib.autograd.grad((lib.tanh(x) ** 3).sum(), x, create_graph=True)
        h, = lib.autograd.grad(g.sum(), x, retain_graph=True)
        return g, h, g * h  # the last one differentiable through g only: h is detached
    return f


def test_create_graph_inside_gives_a_differentiable_gradient_and_a_detached_one():
    f = tg.compile(_second(tg), fullgraph=True)
    for _ in range(3):
        xd = rng.uniform(-2, 2, 7)
        x, tx = tg.tensor(xd, requires_grad=True), torch.tensor(xd, requires_grad=True)
        got, want = f(x), _second(torch)(tx)
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want] == [True, False, True]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-14)
        (got[0].sum() + got[2].sum()).backward()
        (want[0].sum() + want[2].sum()).backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_grad_outputs_is_bound_when_an_argument_and_held_when_a_constant():
    u = tg.tensor(rng.standard_normal(4))  # a constant the function reads: its current array at each call
    f = tg.compile(lambda x, v: tg.autograd.grad(x * x, x, grad_outputs=v)[0]
                   + tg.autograd.grad((x * x).sum(), x, grad_outputs=tg.full((), 2.0))[0]
                   + tg.autograd.grad(x.exp(), x, grad_outputs=u)[0], fullgraph=True)
    for _ in range(3):
        x, v = rng.standard_normal(4), rng.standard_normal(4)
        u.data = tg.tensor(rng.standard_normal(4))
        got = f(tg.tensor(x, requires_grad=True), tg.tensor(v))
        np.testing.assert_allclose(got.numpy(), 2 * x * v + 4 * x + np.exp(x) * u.numpy(), rtol=1e-12)


def test_a_second_gradient_through_a_freed_graph_raises_torchs_error():
    def twice(lib, x):
        y = (x * x).sum()
        return lib.autograd.grad(y, x)[0] + lib.autograd.grad(y, x)[0]
    message = "Trying to backward through the graph a second time"
    with pytest.raises(RuntimeError, match=message):
        twice(torch, torch.ones(3, requires_grad=True))
    with pytest.raises(RuntimeError, match=message):
        tg.compile(lambda x: twice(tg, x), fullgraph=True)(tg.ones(3, requires_grad=True))
    f = tg.compile(lambda x: twice(tg, x))  # eagerly, as torch raises it
    with pytest.raises(RuntimeError, match=message):
        f(tg.ones(3, requires_grad=True))
    def retained(x):
        y = (x * x).sum()
        return tg.autograd.grad(y, x, retain_graph=True)[0] + tg.autograd.grad(y, x)[0]
    kept = tg.compile(retained, fullgraph=True)
    np.testing.assert_allclose(kept(tg.tensor(np.arange(3.0), requires_grad=True)).numpy(), 4 * np.arange(3.0))


def test_gradients_handed_out_are_arrays_of_their_own():
    # a weight's gradient leaves the private replay as the array BLAS wrote (no copy), a 0-d parameter's as
    # one gathered element: none may alias another, or a later call's
    w, s = tg.tensor(rng.standard_normal((3, 2)), requires_grad=True), tg.tensor(np.array(0.5), requires_grad=True)
    f = tg.compile(lambda x: (x @ w * s).sum(), fullgraph=True)
    x1, x2 = tg.tensor(rng.standard_normal((4, 3))), tg.tensor(rng.standard_normal((4, 3)))
    gw1, gs1 = tg.autograd.grad(f(x1), (w, s))
    kept = gw1.numpy().copy(), gs1.numpy().copy()
    f(x2).backward()
    assert not np.shares_memory(gw1.numpy(), w.grad.numpy()) and not np.shares_memory(gs1.numpy(), s.grad.numpy())
    np.testing.assert_array_equal(gw1.numpy(), kept[0])
    np.testing.assert_array_equal(gs1.numpy(), kept[1])
    np.testing.assert_allclose(w.grad.numpy(), x2.numpy().sum(0)[:, None].repeat(2, 1) * 0.5)
    np.testing.assert_allclose(s.grad.numpy(), (x2.numpy() @ w.detach().numpy()).sum())


def test_a_parameter_modified_in_place_before_backward_raises_torchs_error():
    w = tg.tensor(rng.standard_normal(3), requires_grad=True)
    f = tg.compile(lambda x: (x * w).sum(), fullgraph=True)
    out = f(tg.tensor(np.ones(3)))
    with tg.no_grad():
        w += 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


@pytest.mark.parametrize("changed", [0, 8])
def test_any_input_modified_in_place_before_backward_raises_torchs_error(changed):
    # the row's plan checks every input's version: the argument's (0) as the eighth parameter's (8)
    x = tg.tensor(np.ones(3), requires_grad=True)
    ws = [tg.tensor(rng.standard_normal(3), requires_grad=True) for _ in range(8)]
    f = tg.compile(lambda x: sum((x * w).sum() for w in ws), fullgraph=True)
    f(x).backward()
    out = f(x)
    with tg.no_grad():
        ([x] + ws)[changed].mul_(2.0)
    with pytest.raises(RuntimeError, match=re.escape("[torch.DoubleTensor [3]] is at version 1; expected version 0 "
                                                     "instead.")):
        out.backward()


def test_double_backward_is_refused_in_torchs_words():
    x = tg.tensor(rng.standard_normal(3), requires_grad=True)
    f = tg.compile(lambda x: (x * x * x).sum(), fullgraph=True)
    g, = tg.autograd.grad(f(x), x, create_graph=False)
    np.testing.assert_allclose(g.numpy(), 3 * x.detach().numpy() ** 2)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        tg.autograd.grad(f(x), x, create_graph=True)


def test_a_bad_target_in_a_replay_raises_torchs_error():
    ps = _mlp(tg)
    f = tg.compile(_loss(tg, ps), fullgraph=True)
    x = tg.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    f(x, tg.tensor(np.array([0, 1, 2, 3])))
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        f(x, tg.tensor(np.array([0, 7, 2, 3])))
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        f(x, tg.tensor(np.array([0, 1, -3, 3])))


def test_a_parameter_that_changes_shape_or_requires_grad_is_traced_again():
    w = tg.tensor(np.ones(3), requires_grad=True)
    f = tg.compile(lambda x: (x * w).sum())
    x = tg.tensor(np.arange(3.0))
    assert f(x).item() == 3.0
    w.data = tg.tensor(np.full(3, 2.0))
    assert f(x).item() == 6.0           # the parameter's current array is read at each call
    w.data = tg.tensor(np.full(2, 2.0))
    x = tg.tensor(np.arange(2.0))
    assert f(x).item() == 2.0           # a new signature (x) and a new parameter shape: traced again
    w.requires_grad_(False)
    out = f(x)                          # traced again: w is now a constant, read afresh at each call
    assert out.item() == 2.0 and not out.requires_grad
    assert f.recompiles == 2 and "parameter 0 changed" in f.guard_failures[-1]
    w.data = tg.tensor(np.full(2, 3.0))
    assert f(x).item() == 3.0 and f.recompiles == 2


BREAKS = {
    "a value read into Python (numpy)": lambda x: x * float(x.detach().numpy().sum()),
    "a random draw": lambda x: x * tg.multinomial((x * 2.0).softmax(0), 3, replacement=True),
    "an in-place op": lambda x: x.exp().mul_(2.0),
    "under no_grad": lambda x: _under_no_grad(x),
    "does not record": lambda x: x * tg.unique(x)[0],
    "a hook or retain_grad": lambda x: _hooked(x),
    "it must return a tensor": lambda x: [x.exp(), 1.0],
    "has no replay rule": lambda x: x.scatter_add(0, tg.tensor([2, 0, 1]), x),  # (an op that declares why not)
    "a backward": lambda x: _backward_inside(x),
}


_OUTSIDE = tg.tensor(np.ones(3), requires_grad=True)
_OUTSIDE_LOSS = (_OUTSIDE * 2.0).sum()


def _backward_inside(x):
    _OUTSIDE_LOSS.backward(retain_graph=True)  # a graph recorded outside the function (its own .backward()
    return x.exp()                             # is traced: tests/test_compile_step.py)


def _under_no_grad(x):
    with tg.no_grad():
        m = x.max()
    return x - m


def _hooked(x):
    y = x.exp()
    y.retain_grad()
    return y


@pytest.mark.parametrize("reason", list(BREAKS))
def test_what_a_replay_cannot_repeat_runs_eagerly_or_raises_with_fullgraph(reason):
    fn = BREAKS[reason]
    with pytest.raises(RuntimeError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        tg.compile(fn, fullgraph=True)(tg.tensor(np.arange(3.0), requires_grad=True))
    f = tg.compile(fn)
    for _ in range(2):
        tg.manual_seed(1)
        got = f(tg.tensor(np.arange(3.0), requires_grad=True))
        tg.manual_seed(1)
        want = fn(tg.tensor(np.arange(3.0), requires_grad=True))
        if isinstance(want, list):
            got, want = got[0], want[0]
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def test_a_break_stops_the_trace_before_its_side_effect():
    """What a replay cannot repeat happens once, in the eager call, not also while tracing."""
    w = tg.tensor(np.ones(3), requires_grad=True)
    seen = []

    def f(x):
        try:
            w.register_hook(lambda g: seen.append(1))
        except Exception:  # noqa: BLE001, S110  (the break is no Exception: it stops the trace even here)
            pass
        (x * w).sum().backward()
        return x * 2
    tg.compile(f)(tg.tensor(np.arange(3.0)))
    np.testing.assert_array_equal(w.grad.numpy(), np.arange(3.0))  # accumulated once, not twice
    assert len(w._hooks) == 1 and seen == [1]


def test_signatures_past_the_cache_limit_run_eagerly():
    f = tg.compile(lambda x, k: x * k, fullgraph=False)
    x = tg.tensor(np.ones(2), requires_grad=True)
    for k in range(trace.config.recompile_limit + 3):
        assert f(x, float(k)).sum().item() == 2.0 * k
    assert sum(len(e) for e in f._cache.values()) == trace.config.recompile_limit == f.recompiles + 1


def test_compile_as_a_decorator_on_a_module_and_disable():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(4, 3), tg.nn.Tanh(), tg.nn.Linear(3, 2))
    compiled = tg.compile(model)
    assert list(compiled.parameters()) == list(model.parameters())
    x = tg.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())
    assert tg.compile(disable=True)(model) is model
    with pytest.raises(AssertionError, match="A callable function is expected, but <class 'int'> is provided."):
        tg.compile(3)
