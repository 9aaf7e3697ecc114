"""tapegrad.compile on the code users write (issue 20): constants made in the function, tensors read from
closures, globals and modules (guarded: read afresh, or traced again), branches on values as guards that each
replay checks, and recompilation made visible (a counter, a log switch, error_on_recompile). Every result is
compared with the eager call and with torch."""
import copy
import logging

import numpy as np
import pytest
import torch

import tapegrad as tg
from tapegrad import tracing as trace

rng = np.random.default_rng(0)
TARGET = None  # a global the compiled function reads (set by a test)


def _arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _both(fn_of_lib, *arrays, grad=True):
    """fn under tapegrad.compile(fullgraph=True), eagerly, and in torch: the values and the first input's gradient."""
    out = []
    for lib, wrap in ((tg, lambda f: tg.compile(f, fullgraph=True)), (tg, lambda f: f), (torch, lambda f: f)):
        xs = [lib.tensor(a, requires_grad=grad and k == 0) for k, a in enumerate(arrays)]
        y = wrap(fn_of_lib(lib))(*xs)
        g = None
        if grad:
            y.sum().backward()
            g = xs[0].grad.detach().numpy()
        out.append((y.detach().numpy(), g))
    return out


def _assert_close(results):
    (yc, gc), (ye, ge), (yt, gt) = results
    np.testing.assert_array_equal(yc, ye)
    np.testing.assert_allclose(yc, yt, rtol=1e-5, atol=1e-6)
    if gc is not None:
        np.testing.assert_array_equal(gc, ge)
        np.testing.assert_allclose(gc, gt, rtol=1e-5, atol=1e-6)


# -- constants made inside the function ------------------------------------------------------------------------
def _rnn(lib):
    def f(x, w):
        h = lib.zeros(x.shape[1], 4)              # a constant made in the function
        loss = lib.tensor(0.0)
        steps = lib.arange(x.shape[0]) * 0.5      # an op on constants only: folded
        for t in range(x.shape[0]):
            h = lib.tanh(x[t] @ w + h + steps[t])
            loss = loss + (h * h).mean()
        return loss
    return f


def test_constants_made_inside_replay_as_eager_and_torch():
    for _ in range(3):
        _assert_close(_both(_rnn, _arr(5, 3, 2), _arr(2, 4)))
    f = tg.compile(_rnn(tg), fullgraph=True)
    for _ in range(3):
        f(tg.tensor(_arr(5, 3, 2)), tg.tensor(_arr(2, 4), requires_grad=True))
    assert f.traces == 1 and f.recompiles == 0


def test_a_detached_value_is_recomputed_not_frozen():
    f = tg.compile(lambda x: x * x.detach().exp() + x.data, fullgraph=True)
    for _ in range(3):
        a = _arr(4)
        x = tg.tensor(a, requires_grad=True)
        y = f(x)
        y.sum().backward()
        xt = torch.tensor(a, requires_grad=True)
        yt = xt * xt.detach().exp() + xt.data
        yt.sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_a_mask_from_a_comparison_is_recomputed():
    _assert_close(_both(lambda lib: lambda x: x * (x > 0).float() + lib.where(x < -0.5, x, 0.0), _arr(6)))
    f = tg.compile(lambda x: x * (x > 0).float(), fullgraph=True)
    for _ in range(3):
        a = _arr(6)
        np.testing.assert_array_equal(f(tg.tensor(a)).numpy(), a * (a > 0))


@pytest.mark.parametrize("generator", [False, True])
def test_random_draws_advance_the_generator_as_eager_calls_do(generator):
    def f_of(lib, g):
        def f(x):
            noise = lib.randn(3, generator=g) * 0.1 + lib.rand(3, generator=g)
            idx = lib.randperm(3, generator=g)
            return (x + noise) * idx * lib.randint(1, 4, (3,), generator=g)
        return f
    g_c = tg.Generator().manual_seed(5) if generator else None
    g_e = tg.Generator().manual_seed(5) if generator else None
    g_t = torch.Generator().manual_seed(5) if generator else None
    f = tg.compile(f_of(tg, g_c), fullgraph=True)
    tg.manual_seed(7)
    torch.manual_seed(7)
    got = [f(tg.tensor(np.arange(3.0, dtype=np.float32))).numpy() for _ in range(4)]
    tg.manual_seed(7)
    want = [f_of(tg, g_e)(tg.tensor(np.arange(3.0, dtype=np.float32))).numpy() for _ in range(4)]
    ref = [f_of(torch, g_t)(torch.tensor(np.arange(3.0, dtype=np.float32))).numpy() for _ in range(4)]
    for a, b, c in zip(got, want, ref):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=1e-6)
    assert not np.array_equal(got[0], got[1]) and f.traces == 1
    np.testing.assert_array_equal(tg.randn(2).numpy(), torch.randn(2).numpy())  # both streams where eager's are


def test_a_random_draw_inside_an_op_is_refused_with_its_reason():
    def f(x):
        return x * tg.multinomial(x.softmax(0), 3, replacement=True)
    with pytest.raises(RuntimeError, match="a random draw"):
        tg.compile(f, fullgraph=True)(tg.tensor(_arr(3)))
    tg.manual_seed(3)
    got = tg.compile(f)(tg.tensor(np.ones(3, np.float32)))  # eagerly: the same stream
    tg.manual_seed(3)
    np.testing.assert_array_equal(got.numpy(), f(tg.tensor(np.ones(3, np.float32))).numpy())


@pytest.mark.parametrize("module", ["Dropout", "Dropout1d", "Dropout2d"])
def test_dropout_in_train_mode_draws_its_mask_at_each_replay(module):
    m = getattr(tg.nn, module)(0.5)
    f = tg.compile(lambda x: m(x), fullgraph=True)
    x = tg.tensor(np.ones((2, 3, 4), np.float32))
    for seed in range(3):
        tg.manual_seed(seed)
        got = f(x)
        tg.manual_seed(seed)
        np.testing.assert_array_equal(got.numpy(), m(x).numpy())
    assert f.traces == 1


def test_an_unrecorded_op_is_refused_not_frozen():
    with pytest.raises(RuntimeError, match="does not record"):
        tg.compile(lambda x: x * tg.unique(x)[0], fullgraph=True)(tg.tensor(_arr(3), requires_grad=True))


# -- tensors read from closures, globals and modules -----------------------------------------------------------
def test_a_closure_target_changed_in_place_or_replaced_is_read_afresh():
    target = tg.tensor(_arr(4))
    f = tg.compile(lambda x: ((x - target) ** 2).mean(), fullgraph=True)
    x = tg.tensor(_arr(4), requires_grad=True)
    for step in range(4):
        if step == 1:
            target.mul_(3.0)                      # the same object, changed in place
        if step == 2:
            target = tg.tensor(_arr(4))           # a new object in the closure cell
        got = f(x)
        want = torch.nn.functional.mse_loss(torch.tensor(x.detach().numpy()), torch.tensor(target.numpy()))
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
    assert f.recompiles == 0
    target = tg.tensor(_arr(4).astype(np.float64))  # a new dtype: traced again, saying why
    np.testing.assert_allclose(f(x).item(), float(((x.detach().numpy() - target.numpy()) ** 2).mean()), rtol=1e-6)
    assert f.recompiles == 1 and "closure variable 'target' changed" in f.guard_failures[-1]


def test_a_global_target_is_read_afresh():
    global TARGET
    TARGET = tg.tensor(_arr(3))
    f = tg.compile(lambda x: (x * TARGET).sum(), fullgraph=True)
    x = tg.tensor(_arr(3))
    for _ in range(3):
        np.testing.assert_allclose(f(x).item(), float((x.numpy() * TARGET.numpy()).sum()), rtol=1e-6)
        TARGET = tg.tensor(_arr(3))
    TARGET = tg.tensor(_arr(3), requires_grad=True)   # now a parameter: traced again
    f(x).backward()
    np.testing.assert_allclose(TARGET.grad.numpy(), x.numpy())
    assert f.recompiles == 1 and "global 'TARGET' changed" in f.guard_failures[-1]


SCALE = 2.0  # a plain global the compiled functions below read (set by a test)


def _scaled(x):
    return x * SCALE  # (read by a function the compiled one calls)


def test_plain_python_values_it_reads_are_guarded():
    """A number, flag or string a trace read from a global (also through a function it calls), a closure or a
    module's attribute is a constant of the trace, as torch.compile's guards treat one: changed, it makes a new
    trace, never a stale replay (a float attribute, a flag choosing a branch; found running torch.compile's
    tutorial patterns, which replayed the old value)."""
    global SCALE
    SCALE = 2.0

    class M(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.use_relu, self.alpha = False, 1.5

        def forward(self, x):
            return (tg.relu(x) if self.use_relu else x) * self.alpha

    m = M()
    fm = tg.compile(m, fullgraph=True)
    fg = tg.compile(lambda x: _scaled(x) + 1, fullgraph=True)
    shift = 0.5
    fc = tg.compile(lambda x: x + shift, fullgraph=True)
    x = tg.tensor([-1.0, 2.0])
    assert fm(x).tolist() == [-1.5, 3.0] and fg(x).tolist() == [-1.0, 5.0] and fc(x).tolist() == [-0.5, 2.5]
    m.use_relu = True
    assert fm(x).tolist() == [0.0, 3.0]
    m.alpha = -1.0
    assert fm(x).tolist() == [-0.0, -2.0] and fm.recompiles == 2
    assert "attribute M.alpha 1.5 -> -1.0" in fm.guard_failures[-1]
    SCALE = 5.0
    assert fg(x).tolist() == [-4.0, 11.0] and fg.recompiles == 1 and "global 'SCALE'" in fg.guard_failures[-1]
    shift = 1
    assert fc(x).tolist() == [0.0, 3.0] and fc.recompiles == 1
    assert fc(x).tolist() == [0.0, 3.0] and fc.recompiles == 1  # (the new value's trace serves from then on)


def test_a_module_buffer_and_train_eval_mode_are_guarded():
    tg.manual_seed(0)
    torch.manual_seed(0)
    m_tg = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.BatchNorm1d(4), tg.nn.Dropout(0.5))
    m_t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Dropout(0.5))
    m_t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m_tg.state_dict().items()})
    for m in (m_tg, m_t):
        m[1].running_mean.fill_(0.5)
        m.eval()
    f = tg.compile(m_tg, fullgraph=True)
    for step in range(3):
        if step == 1:
            for m in (m_tg, m_t):
                m[1].running_var.mul_(2.0)   # a buffer changed in place: read afresh
        a = _arr(5, 3)
        np.testing.assert_allclose(f(tg.tensor(a)).detach().numpy(), m_t(torch.tensor(a)).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert f.recompiles == 0
    m_tg.train()  # train mode: a new signature; its BatchNorm's running statistics are updated by each replay
    twin = copy.deepcopy(m_tg)
    for seed in range(2):
        a = _arr(5, 3)
        tg.manual_seed(seed)
        got = f(tg.tensor(a)).detach().numpy()
        tg.manual_seed(seed)
        np.testing.assert_array_equal(got, twin(tg.tensor(a)).detach().numpy())
        for a, b in zip(m_tg.buffers(), twin.buffers()):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert "train/eval mode changed" in f.guard_failures[-1]
    assert f.traces == 2


# -- value guards -----------------------------------------------------------------------------------------------
def _branchy(lib, best):
    def f(x):
        loss = (x * x).sum()
        if loss.item() < best:              # a comparison: a guard
            out = loss * 2
        else:
            out = loss.exp()
        while out > 10.0:                   # a branch on a tensor: one guard per test
            out = out * 0.5
        return out
    return f


@pytest.mark.parametrize("scale", [0.2, 2.0, 0.3, 5.0, 0.1])
def test_branches_on_values_equal_eager_and_torch(scale):
    a = (np.ones(3) * scale).astype(np.float32)
    _assert_close(_both(lambda lib: _branchy(lib, 1.0), a))


def test_a_flipped_comparison_retraces_and_both_traces_are_kept():
    f = tg.compile(_branchy(tg, 1.0), fullgraph=True)
    calls = []
    for scale in (0.2, 0.3, 2.0, 0.25, 2.5, 0.1):
        x = tg.tensor(np.full(3, scale, np.float32), requires_grad=True)
        y = f(x)
        y.backward()
        xe = tg.tensor(np.full(3, scale, np.float32), requires_grad=True)
        ye = _branchy(tg, 1.0)(xe)
        ye.backward()
        np.testing.assert_array_equal(y.detach().numpy(), ye.detach().numpy())
        np.testing.assert_array_equal(x.grad.numpy(), xe.grad.numpy())
        calls.append(f.traces)
    assert calls[:3] == [1, 1, 2]     # 2.0 flips the comparison: traced again
    assert any("went the other way" in r for r in f.guard_failures)
    assert f.traces <= 4              # later calls reuse the kept traces (halvings differ: at most two more)


def test_a_value_used_as_a_number_is_guarded_on_its_value():
    f = tg.compile(lambda x: x * float(x.sum()), fullgraph=True)
    for v, traces in ((1.0, 1), (1.0, 1), (2.0, 2)):
        a = np.full(2, v, np.float32)
        np.testing.assert_array_equal(f(tg.tensor(a)).numpy(), a * a.sum())
        assert f.traces == traces
    f = tg.compile(lambda x: x[: int(x.tolist()[0])], fullgraph=True)  # tolist() in control flow
    assert f(tg.tensor([2.0, 5.0, 6.0])).tolist() == [2.0, 5.0]
    assert f(tg.tensor([1.0, 5.0, 6.0])).tolist() == [1.0] and f.traces == 2


def test_guard_caches_are_bounded_by_recompile_limit():
    f = tg.compile(lambda x: x * float(x.sum()))
    for k in range(trace.config.recompile_limit + 3):
        a = np.full(2, float(k), np.float32)
        np.testing.assert_array_equal(f(tg.tensor(a)).numpy(), a * a.sum())  # past the limit: eagerly, still right
    assert f.traces == trace.config.recompile_limit


# -- recompilation made visible ----------------------------------------------------------------------------------
def test_recompiles_are_counted_logged_and_can_raise(caplog, monkeypatch):
    f = tg.compile(lambda x: x * 2.0, fullgraph=True)
    f(tg.tensor(np.ones(2)))
    monkeypatch.setattr(trace.config, "log_recompiles", True)
    with caplog.at_level(logging.DEBUG, logger="tapegrad._dynamo"):
        f(tg.tensor(np.ones(3)))
    assert f.recompiles == 1
    assert "Recompiling function <lambda>" in caplog.text and "argument 0 changed" in caplog.text
    monkeypatch.setattr(tg._dynamo.config, "error_on_recompile", True)
    with pytest.raises(tg._dynamo.exc.RecompileError, match=r"argument 0 changed: .* -> \(\(4,\)"):
        f(tg.tensor(np.ones(4)))
    f(tg.tensor(np.ones(3)))  # a kept trace: no recompile
    assert f.recompiles == 1


def test_set_logs_and_the_environment_switch(monkeypatch):
    import subprocess
    import sys
    code = ("import tapegrad as tg\nf = tg.compile(lambda x: x * 2.0)\nf(tg.ones(2))\nf(tg.ones(3))\n"
            "print(f.recompiles)")
    env = dict(__import__("os").environ, TAPEGRAD_LOGS="recompiles")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "1" and "Recompiling function <lambda>" in out.stderr, out.stderr
    monkeypatch.setattr(trace.config, "log_recompiles", False)
    tg._logging.set_logs(recompiles=True)
    assert trace.config.log_recompiles


def test_reset_forgets_every_trace():
    f = tg.compile(lambda x: x * 2.0, fullgraph=True)
    f(tg.ones(2))
    f(tg.ones(3))
    assert f.traces == 2
    tg._dynamo.reset()
    assert f.traces == 0 and not f._cache
    np.testing.assert_array_equal(f(tg.ones(2)).numpy(), [2.0, 2.0])
    assert f.traces == 1 and f.recompiles == 0



def test_a_trace_keeps_the_rows_whose_tensors_died_while_it_ran(monkeypatch):
    """The values a traced function drops (an intermediate read into Python) stay on its private tape: that tape
    cuts no dead tail or chain, since every replay recomputes and guards those rows (with every value counted
    large, as the suite's small-thresholds run does, the cut took them and replays gave zeros)."""
    from tapegrad import tape
    monkeypatch.setattr(tape, "RELEASE_BYTES", 0)
    f = tg.compile(lambda x: x * float(x.sum()))
    for k in range(4):
        a = np.full(2, float(k), np.float32)
        np.testing.assert_array_equal(f(tg.tensor(a)).numpy(), a * a.sum())


def test_a_compiled_module_is_a_module_as_torchs():
    """torch.compile(module) is an nn.Module (torch's OptimizedModule): the original as `_orig_mod` (state_dict keys
    with its prefix), its attributes read and written through, train/eval its mode, usable in a ModuleList."""
    outputs = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        lin = lib.nn.Linear(2, 3)
        c = lib.compile(lin)
        out = [isinstance(c, lib.nn.Module), type(c).__name__, repr(c), list(c.state_dict()), c.in_features,
               c._orig_mod is lin, len(list(lib.nn.ModuleList([c]).parameters()))]
        c.eval()
        out += [lin.training, c.training]
        c.train()
        c.tag = 3
        out += ["tag" in c.__dict__, lin.tag]
        x = lib.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2))
        c(x).sum().backward()
        out.append(np.round(lin.weight.grad.numpy(), 6).tolist())
        c2 = lib.compile(lib.nn.Linear(2, 3))
        c2.load_state_dict(c.state_dict())
        out.append(lib.equal(c2.weight, lin.weight))
        out.append(len(lib.compile(lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh()))))
        outputs.append(out)
    assert outputs[1] == outputs[0]
    from tapegrad._dynamo.eval_frame import OptimizedModule
    assert isinstance(tg.compile(tg.nn.Linear(2, 2)), OptimizedModule)


def test_torch_compiler_names():
    assert not tg.compiler.is_compiling() and not tg._dynamo.is_compiling()
    seen = []

    def inside(x):
        seen.append(tg.compiler.is_compiling())
        return x * 2

    f = tg.compile(inside)
    f(tg.ones(2))
    assert seen[0] is True
    eager_calls = []

    @tg.compiler.disable
    def eager(x):
        eager_calls.append(tg.compiler.is_compiling())
        return x + 1

    g = tg.compile(lambda x: eager(x) * 3)
    np.testing.assert_array_equal(g(tg.ones(2)).numpy(), [6.0, 6.0])
    assert eager_calls == [False]  # (the trace broke before calling it; the call then ran eagerly)
    tg.compiler.reset()
    assert f.traces == 0
    assert tg.compiler.allow_in_graph(inside) is inside and tg.compiler.cudagraph_mark_step_begin() is None


def test_backend_names_and_a_callable_backend():
    for lib in (torch, tg):
        with pytest.raises(RuntimeError, match="^Invalid backend: 'foo', see `torch._dynamo.list_backends\\(\\)`"):
            lib.compile(lambda x: x + 1, backend="foo")(lib.ones(1))
    assert tg._dynamo.list_backends() == torch._dynamo.list_backends()
    for name in ("eager", "aot_eager", "inductor"):
        np.testing.assert_array_equal(tg.compile(lambda x: x + 1, backend=name)(tg.ones(2)).numpy(), [2.0, 2.0])
    with pytest.raises(NotImplementedError, match="a custom backend receives a torch.fx GraphModule"):
        tg.compile(lambda x: x + 1, backend=lambda gm, example_inputs: gm.forward)


def test_a_compiled_module_copies_pickles_and_saves(tmp_path):
    import pickle
    c = tg.compile(tg.nn.Linear(2, 3))
    x = tg.ones(4, 2)
    want = c(x).detach().numpy()
    path = tmp_path / "m.pt"
    tg.save(c, path)
    for other in (copy.deepcopy(c), pickle.loads(pickle.dumps(c)), tg.load(path, weights_only=False)):
        assert type(other).__name__ == "OptimizedModule" and other.weight is not c.weight
        assert list(other.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
        np.testing.assert_array_equal(other(x).detach().numpy(), want)
        assert other.traces == 1  # (compiled afresh: its own trace)


def _two_micro_batches(compiled):
    """Two calls of a model with dropout, then one backward through both (gradient accumulation's pattern)."""
    tg.manual_seed(0)
    m = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.Dropout(0.5), tg.nn.Linear(8, 1))
    cm = tg.compile(m) if compiled else m
    xa, xb = tg.randn(3, 4), tg.randn(3, 4)
    tg.manual_seed(1)
    la = cm(xa).pow(2).mean()
    lb = cm(xb).pow(2).mean()
    (la + lb).backward()
    return la.item(), lb.item(), m[0].weight.grad.tolist(), tg.rand(1).item()


def test_a_backward_after_a_later_call_recomputes_with_that_calls_draws():
    """A backward through an earlier call, made after a later one replaced the replay's values, recomputes the earlier
    call's rows with the draws that call made (its dropout mask), and leaves the generator where it was."""
    assert _two_micro_batches(True) == _two_micro_batches(False)


def _branch_after_a_draw(compiled):
    def f(x):
        n = tg.rand(1)
        if x.sum() > 0:
            return x + n
        return x - n
    cf = tg.compile(f) if compiled else f
    tg.manual_seed(0)
    seen = []
    for s in (1, -1, -1, -1, 1, 1):
        seen.append((cf(tg.ones(2) * s).tolist(), tg.rand(1).item()))
    return seen


def test_a_guard_that_fails_after_a_draw_gives_the_draw_back():
    """A replay whose guard fails after the function drew: the generator goes back to where the call began, so the
    eager call or the other trace that follows draws what an eager call would (the stream stays torch's)."""
    assert _branch_after_a_draw(True) == _branch_after_a_draw(False)


NET = None  # a global module a compiled function calls (test_a_replaced_module_or_parameter_traces_again)


def test_a_replaced_module_or_parameter_traces_again():
    """A submodule or a parameter replaced by another object, or a global name assigned another module, while the old
    one lives on: a new trace (the old trace bound the old object), with the replacement's values."""
    global NET
    tg.manual_seed(0)
    x = tg.randn(4, 3)
    m = tg.nn.Sequential(tg.nn.Linear(3, 3), tg.nn.Tanh(), tg.nn.Linear(3, 2))
    cm = tg.compile(m)
    cm(x)
    old = m[2]
    m[2] = tg.nn.Linear(3, 2)
    assert old is not None and np.allclose(cm(x).detach().numpy(), m(x).detach().numpy())
    kept = m[0].weight
    m[0].weight = tg.nn.Parameter(tg.zeros(3, 3))
    assert kept is not None and np.allclose(cm(x).detach().numpy(), m(x).detach().numpy())
    NET = tg.nn.Linear(3, 2)
    cf = tg.compile(lambda t: NET(t))
    cf(x)
    first = NET
    NET = tg.nn.Linear(3, 2)
    assert first is not NET and np.allclose(cf(x).detach().numpy(), NET(x).detach().numpy())
    assert cf.guard_failures == ["a module was replaced: global 'NET' (the module object)"]


def test_a_container_of_tensors_as_an_argument_runs_eagerly():
    """A tuple of tensors as an argument (an LSTM's (h, c)): its tensors are not bound by a trace, so the call runs
    eagerly with the right values (it raised comparing tensors); fullgraph=True says so."""
    def f(x, hc):
        return x + hc[0] * hc[1]
    cf = tg.compile(f)
    x = tg.ones(2)
    assert cf(x, (tg.ones(2), tg.ones(2))).tolist() == [2.0, 2.0]
    assert cf(x, (tg.ones(2), tg.ones(2) * 3)).tolist() == [4.0, 4.0]
    with pytest.raises(tg._dynamo.exc.Unsupported, match=r"a container of tensors \(a tuple \(h, c\)\)"):
        tg.compile(f, fullgraph=True)(x, (tg.ones(2), tg.ones(2)))
