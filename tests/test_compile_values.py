"""tapegrad.compile replays ops whose context depends on tensor values (issue 19/20): embedding (padding_idx),
nll_loss / cross_entropy targets (class indices, ignore_index, weight, 2-D and N-D), a gather's adjoint
(split/chunk), BatchNorm's running statistics in training mode, dropout's mask. Each: the compiled function
equals eager and torch (values and gradients, float32/float64) over calls with new index values, wherever the
index comes from (an argument, a closure read afresh, computed inside), and traces again when a shape changes."""
import numpy as np
import pytest
import torch

import tapegrad as tg

DTYPES = [np.float32, np.float64]


def _close(a, b, dtype):
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)


def _grads(lib, fn, params, *args):
    out = fn(*args)
    return [out] + list(lib.autograd.grad(out, params))


def _check(make, calls, dtype, retraces=1):
    """make(lib) -> (fn(*args) -> scalar loss, params, to_args(lib, arrays) -> args); calls: the arrays per call.
    The compiled fn, the eager fn and torch's agree at each call (the loss and its gradients)."""
    fn_t, params_t, args_t = make(torch)
    fn_e, params_e, args_e = make(tg)
    compiled = tg.compile(lambda *a: _grads(tg, fn_e, params_e, *a), fullgraph=True)
    for arrays in calls:
        want = _grads(torch, fn_t, params_t, *args_t(torch, arrays))
        eager = _grads(tg, fn_e, params_e, *args_e(tg, arrays))
        got = compiled(*args_e(tg, arrays))
        for g, e, w in zip(got, eager, want):
            # compiled: the eager values (a gradient's summands may be added in another order: an ulp)
            np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-6 if dtype == np.float32
                                       else 1e-14, atol=1e-6 if dtype == np.float32 else 1e-14)
            _close(g.detach().numpy(), w.detach().numpy(), dtype)
    assert compiled.traces == retraces
    return compiled


def _weight(lib, shape, dtype, seed=0):
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype), requires_grad=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_indices_are_read_at_each_call(dtype, padding_idx):
    def make(lib):
        w = _weight(lib, (7, 3), dtype)
        return (lambda idx: (lib.nn.functional.embedding(idx, w, padding_idx=padding_idx) ** 2).sum(), [w],
                lambda lib, a: [lib.tensor(a)])
    r = np.random.default_rng(1)
    calls = [r.integers(0, 7, (4, 5)) for _ in range(3)] + [np.full((4, 5), 2), r.integers(0, 7, (2, 3))]
    _check(make, calls, dtype, retraces=2)  # (a new shape: a second trace)


def test_embedding_index_out_of_range_at_replay_raises_torchs_error():
    w = tg.randn(5, 2, requires_grad=True)
    f = tg.compile(lambda idx: tg.autograd.grad(tg.nn.functional.embedding(idx, w).sum(), [w]), fullgraph=True)
    f(tg.tensor([1, 2]))
    f(tg.tensor([3, 4]))
    with pytest.raises(IndexError, match="index out of range in self"):
        f(tg.tensor([0, 5]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", [{}, {"ignore_index": 1}, {"reduction": "sum"}, {"reduction": "none"},
                                {"weight": True}])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_class_targets_are_read_at_each_call(dtype, kw, loss):
    def make(lib):
        x = _weight(lib, (6, 4), dtype)
        args = dict(kw)
        if args.pop("weight", False):
            args["weight"] = lib.tensor(np.array([0.5, 1.0, 2.0, 1.5], dtype))
        F = lib.nn.functional

        def fn(t):
            inp = F.log_softmax(x, 1) if loss == "nll_loss" else x
            return getattr(F, loss)(inp * 1.5, t, **args).sum()
        return fn, [x], lambda lib, a: [lib.tensor(a)]
    r = np.random.default_rng(2)
    _check(make, [r.integers(0, 4, 6) for _ in range(3)] + [np.full(6, 2)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_nd_class_targets(dtype, reduction, loss):
    def make(lib):
        x = _weight(lib, (2, 3, 4, 5), dtype)
        F = lib.nn.functional

        def fn(t):
            inp = F.log_softmax(x, 1) if loss == "nll_loss" else x
            return (getattr(F, loss)(inp, t, ignore_index=0, reduction=reduction) ** 2).sum()
        return fn, [x], lambda lib, a: [lib.tensor(a)]
    r = np.random.default_rng(3)
    _check(make, [r.integers(0, 3, (2, 4, 5)) for _ in range(3)], dtype)


def test_targets_from_a_closure_and_computed_inside():
    """A target read from the compiled function's closure (a new tensor there is read at each call) and one
    sliced from an argument inside the function."""
    F = tg.nn.functional
    w = _weight(tg, (10, 4), np.float64)
    wt = _weight(torch, (10, 4), np.float64)
    target = None

    def step(tokens):
        emb = F.embedding(tokens[:-1], w)  # the inputs: all but the last token
        loss = F.cross_entropy(emb, tokens[1:]) + F.nll_loss(F.log_softmax(emb, 1), target)
        return loss, *tg.autograd.grad(loss, [w])
    compiled = tg.compile(step, fullgraph=True)
    r = np.random.default_rng(4)
    for _ in range(3):
        a = r.integers(0, 4, 9)
        target = tg.tensor(r.integers(0, 4, 8))
        got = compiled(tg.tensor(a))
        want = step(tg.tensor(a))
        t, tt = torch.tensor(a), torch.tensor(target.numpy())
        e = torch.nn.functional.embedding(t[:-1], wt)
        loss = torch.nn.functional.cross_entropy(e, t[1:]) + torch.nn.functional.nll_loss(
            torch.log_softmax(e, 1), tt)
        for g, e_, o in zip(got, want, [loss, *torch.autograd.grad(loss, [wt])]):
            np.testing.assert_array_equal(g.detach().numpy(), e_.detach().numpy())
            _close(g.detach().numpy(), o.detach().numpy(), np.float64)
    assert compiled.traces == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_split_and_chunk_adjoints_replay(dtype):
    def make(lib):
        w = _weight(lib, (5, 6), dtype)

        def fn(x):
            q, k, v = (x @ w).split(2, dim=1)
            a, b = (x @ w).chunk(2, dim=0)
            return (q * k.tanh() + v).sum() + (a * 2).sum() - b.sum()
        return fn, [w], lambda lib, a: [lib.tensor(a)]
    r = np.random.default_rng(5)
    _check(make, [r.standard_normal((4, 5)).astype(dtype) for _ in range(3)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batchnorm_training_updates_running_statistics_at_each_replay(dtype):
    r = np.random.default_rng(6)
    mods = [lib.nn.BatchNorm2d(3, momentum=0.2).to(getattr(lib, "float64" if dtype == np.float64 else "float32"))
            for lib in (tg, tg, torch)]
    opts = [lib.optim.SGD(m.parameters(), lr=0.1) for lib, m in zip((tg, tg, torch), mods)]

    def step(m, opt):
        def f(x):
            opt.zero_grad()
            loss = (m(x) ** 3).mean()
            loss.backward()
            opt.step()
            return loss
        return f
    compiled = tg.compile(step(mods[0], opts[0]), fullgraph=True)
    steps = [compiled, step(mods[1], opts[1]), step(mods[2], opts[2])]
    for _ in range(4):
        x = r.standard_normal((4, 3, 2, 2)).astype(dtype)
        losses = [f(lib.tensor(x)).item() for f, lib in zip(steps, (tg, tg, torch))]
        _close(losses[0], losses[1], dtype)  # (the traced gradient's rows round as eagerly within an ulp)
        _close(losses[0], losses[2], dtype)
        for name in ("running_mean", "running_var", "num_batches_tracked", "weight", "bias"):
            a, b, c = (getattr(m, name).detach().numpy() for m in mods)
            _close(a, b, dtype)
            _close(a, c, dtype)
    assert compiled.traces == 1
    mods[0].eval(), mods[1].eval()  # eval mode: a guard, and the statistics are read
    x = tg.tensor(r.standard_normal((4, 3, 2, 2)).astype(dtype))
    _close(compiled(x).item(), steps[1](x).item(), dtype)
    assert compiled.traces == 2


def test_batchnorm_with_cumulative_average_is_a_named_break():
    m = tg.nn.BatchNorm1d(3, momentum=None)
    f = tg.compile(lambda x: m(x).sum(), fullgraph=True)
    with pytest.raises(RuntimeError, match="momentum=None"):
        f(tg.randn(4, 3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_mask_is_drawn_at_each_replay_as_eagerly(dtype):
    w = tg.tensor(np.linspace(-1, 1, 12).reshape(3, 4).astype(dtype), requires_grad=True)

    def fn(x):
        y = tg.nn.functional.dropout(x @ w, 0.4, training=True)
        return y.sum(), *tg.autograd.grad((y * y).sum(), [w])
    compiled = tg.compile(fn, fullgraph=True)
    x = tg.tensor(np.ones((5, 3), dtype))
    for seed in range(4):
        tg.manual_seed(seed)
        got = compiled(x)
        after = tg.rand(1).item()  # (the generator advanced as eagerly)
        tg.manual_seed(seed)
        want = fn(x)
        assert tg.rand(1).item() == after
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert compiled.traces == 1


def _indexing(lib, w, i, j, m):
    """Every value-dependent gather at once: advanced indexing, index_select, gather, max/min(dim), sort, topk,
    argmax, masked_fill (with an argument's mask and a computed one)."""
    v, k = w.max(1)
    u, _ = w.min(0)
    s, si = w.sort(0, descending=True)
    t, ti = w.topk(2, 1)
    am = w.argmax(0)
    filled = w.masked_fill(m, 0.5) + w.masked_fill(w > 0.3, -1.0)
    parts = [w[i], w[:, j], w[i, j], w[i[0]], w.index_select(0, i), w.gather(1, j.view(1, -1).expand(3, -1)),
             v * 3, u, s * si, t * ti, w[am, 0], w[k, 0], filled]
    return builtins_sum((p * p).sum() for p in parts)


def builtins_sum(items):
    total = None
    for x in items:
        total = x if total is None else total + x
    return total


@pytest.mark.parametrize("dtype", DTYPES)
def test_indexing_sorting_and_masks_read_their_indices_at_each_call(dtype):
    def make(lib):
        w = _weight(lib, (3, 5), dtype)
        return (lambda i, j, m: _indexing(lib, w, i, j, m), [w],
                lambda lib, a: [lib.tensor(a[0]), lib.tensor(a[1]), lib.tensor(a[2])])
    r = np.random.default_rng(7)
    calls = [(r.integers(0, 3, 4), r.integers(0, 5, 4), r.random((3, 5)) < 0.5) for _ in range(3)]
    calls.append((r.integers(0, 3, 2), r.integers(0, 5, 2), r.random((3, 5)) < 0.5))  # new shapes: traced again
    _check(make, calls, dtype, retraces=2)


def test_sort_and_max_follow_new_input_values():
    """The indices (a row recomputed from the input) and the values at them, for new inputs."""
    def fn(x):
        return (*x.sort(1), *x.max(0), x.argmin(), *x.topk(2))
    f = tg.compile(fn, fullgraph=True)
    r = np.random.default_rng(8)
    for _ in range(3):
        a = r.standard_normal((3, 4))
        got = f(tg.tensor(a, requires_grad=True))
        for g, w in zip(got, fn(torch.tensor(a))):
            np.testing.assert_array_equal(g.detach().numpy(), w.numpy())
    assert f.traces == 1


@pytest.mark.parametrize("fn, error, message", [
    (lambda w, i: w[i].sum(), IndexError, "index 9 is out of bounds for dimension 0 with size 3"),
    (lambda w, i: w.index_select(0, i).sum(), IndexError, "index out of range in self"),
    (lambda w, i: w.gather(0, i.view(-1, 1)).sum(), RuntimeError, "index 9 is out of bounds for dimension 0"),
    (lambda w, i: tg.nn.functional.cross_entropy(w, i), IndexError, "Target 9 is out of bounds"),
    (lambda w, i: tg.nn.functional.nll_loss(w, i), IndexError, "Target 9 is out of bounds"),
    (lambda w, i: tg.nn.functional.cross_entropy(w.view(1, 3, 3), i.view(1, 3)), IndexError, "out of bounds"),
])
def test_an_index_out_of_range_at_replay_raises_torchs_error(fn, error, message):
    w = tg.randn(3, 3, requires_grad=True)
    f = tg.compile(lambda i: (fn(w, i), *tg.autograd.grad(fn(w, i), [w])), fullgraph=True)
    f(tg.tensor([0, 1, 2]))
    f(tg.tensor([2, 1, 0]))
    with pytest.raises(error, match=message):
        f(tg.tensor([0, 9, 1]))
    assert f.traces == 1


@pytest.mark.parametrize("fn, reason", [
    (lambda x, m: x[m].sum(), "index has no replay rule"),      # a boolean mask: the result's shape is the values'
    (lambda x, m: x.view(2, 2)[m.view(2, 2)[0]].sum(), "index has no replay rule"),  # (a mask computed inside)
])
def test_shapes_that_depend_on_values_stay_named_breaks(fn, reason):
    f = tg.compile(fn, fullgraph=True)
    with pytest.raises(RuntimeError, match=reason):
        f(tg.randn(4, requires_grad=True), tg.tensor([True, False, True, True]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool_indices_are_replayed_rows(dtype):
    """max_pool1d/2d and adaptive_max_pool1d/2d with return_indices: the indices (and values weighted by them)
    for new inputs, against eager and torch."""
    def make(lib):
        w = _weight(lib, (3, 3), dtype)
        F = lib.nn.functional

        def fn(x):
            y = (x @ w).view(1, 2, 4, 3)
            pools = [F.max_pool2d(y, 2, return_indices=True), F.adaptive_max_pool2d(y, (2, 2), return_indices=True),
                     F.max_pool1d(y.view(2, 4, 3), 2, return_indices=True),
                     F.adaptive_max_pool1d(y.view(2, 4, 3), 2, return_indices=True)]
            return builtins_sum((v * i.to(v.dtype)).sum() for v, i in pools)
        return fn, [w], lambda lib, a: [lib.tensor(a)]
    r = np.random.default_rng(9)
    _check(make, [r.standard_normal((8, 3)).astype(dtype) for _ in range(3)], dtype)


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequences_guard_their_lengths(enforce_sorted):
    """pack_padded_sequence reads its lengths as values: each is a guard, so new lengths trace again (the packed
    layout depends on them), and equal ones replay. Against eager and torch."""
    def make(lib):
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(3, 4, 2)
        if lib is tg:
            with tg.no_grad():
                for p, q in zip(lstm.parameters(), make.torch_lstm.parameters()):
                    p.copy_(tg.tensor(q.detach().numpy()))
        else:
            make.torch_lstm = lstm
        rnn = lib.nn.utils.rnn

        def fn(x, lengths):
            out, _ = lstm(rnn.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted))
            y, _ = rnn.pad_packed_sequence(out)
            return (y * y).sum()
        return fn, list(lstm.parameters()), lambda lib, a: [lib.tensor(a[0]), lib.tensor(a[1])]
    r = np.random.default_rng(10)
    lengths = [np.array([5, 3, 2]), np.array([5, 3, 2]), np.array([4, 4, 1])]
    if not enforce_sorted:
        lengths = [a[::-1].copy() for a in lengths]
    compiled = _check(make, [(r.standard_normal((5, 3, 3)).astype(np.float32), n) for n in lengths], np.float32,
                      retraces=2)
    assert "changed" in compiled.guard_failures[-1]
