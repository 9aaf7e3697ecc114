"""Memory: loops without backward, training loops, retain_graph loops and the `total_loss += loss` leak keep
the tape (and resident memory) bounded or warn; sweeps and compactions never change a gradient; the
tape's statistics and dump.

Resident memory is read from /proc/self/statm (Linux, where CI runs); every test also bounds the tape
itself (rows and bytes), which does not depend on the allocator.
"""
import gc
import io
import os
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import tapegrad
from tapegrad import tape as tape_mod


@pytest.fixture
def tape():
    """A fresh tape for this thread (tensors of earlier tests keep theirs)."""
    old = getattr(tape_mod._local, "tape", None)
    tape_mod._local.tape = tape_mod.Tape()
    yield tape_mod._local.tape
    tape_mod._local.tape = old


def rss_mb():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def mlp(seed=0, width=32):
    g = np.random.default_rng(seed)
    params = [g.standard_normal((width, width)) * 0.1, np.zeros(width), g.standard_normal((width, 1)) * 0.1]
    return [tapegrad.tensor(p.astype(np.float32), requires_grad=True) for p in params]


def forward(params, x):
    w1, b1, w2 = params
    return ((x @ w1 + b1).tanh() @ w2).square().mean()


def run_loop(tape, steps, step, check_every=1000):
    """Run step(i) `steps` times; return the RSS growth after the first tenth, and the largest tape seen."""
    largest = 0
    start = None
    for i in range(steps):
        step(i)
        if i % check_every == 0:
            largest = max(largest, tape.n)
        if i == steps // 10:
            start = rss_mb()
    return rss_mb() - start, largest


def test_ten_thousand_forward_passes_without_no_grad_keep_memory_flat(tape):
    params = mlp()
    x = tapegrad.randn(64, 32)
    held = {}

    def step(i):
        held["out"] = forward(params, x)  # the last output stays alive, as in an evaluation loop

    growth, largest = run_loop(tape, 10_000, step)
    # a leak keeps 6 values of 8 KiB per pass: 450 MiB over the loop
    assert growth < 16, f"resident memory grew by {growth:.1f} MiB"
    assert largest <= 2 * tape_mod.SWEEP_ROWS
    assert tape.stats()["value_bytes"] < 2 * tape_mod.SWEEP_ROWS * 8192
    held["out"].backward()  # the live output still has its graph
    assert params[0].grad is not None


def test_sweeps_come_sooner_when_values_are_large(tape, monkeypatch):
    monkeypatch.setattr(tape_mod, "CHAINS_WATCHED", 0)  # (watched chains would free these: the sweep's case alone)
    w = tapegrad.randn(256, 256, requires_grad=True)
    x = tapegrad.randn(256, 256)
    ys = []
    for _ in range(600):  # 256 KiB per value: a sweep after at most SWEEP_BYTES of them
        ys = ys[-2:] + [(x @ w).tanh()]  # (each dies two passes later, after the next chain started: the sweep's)
    y = ys[-1]
    assert tape.stats()["value_bytes"] < 2 * tape_mod.SWEEP_BYTES + 4 * y._data.nbytes
    assert tape.sweeps >= 2


def test_ten_thousand_training_steps_keep_memory_flat(tape):
    params = mlp()
    g = np.random.default_rng(1)
    batches = [tapegrad.tensor(g.standard_normal((16, 32)).astype(np.float32)) for _ in range(10)]
    losses = []

    def step(i):
        loss = forward(params, batches[i % 10])
        loss.backward()
        with tapegrad.no_grad():
            for p in params:
                p -= 0.01 * p.grad
                p.grad.zero_()
        if i % 1000 == 0:
            losses.append(loss.item())

    growth, largest = run_loop(tape, 10_000, step)
    assert growth < 16, f"resident memory grew by {growth:.1f} MiB"
    assert largest <= 2 * tape_mod.SWEEP_ROWS
    assert losses[-1] < losses[0]  # it did train


def test_retain_graph_in_a_loop_that_drops_its_tensors_stays_flat(tape):
    params = mlp()
    x = tapegrad.randn(16, 32)

    def step(i):
        loss = forward(params, x)
        loss.backward(retain_graph=True)  # the retained graph is unreachable once `loss` goes
        loss.backward(retain_graph=True)
        for p in params:
            p.grad = None

    growth, largest = run_loop(tape, 10_000, step)
    assert growth < 16, f"resident memory grew by {growth:.1f} MiB"
    assert largest <= 2 * tape_mod.SWEEP_ROWS


def _accumulate_losses(tape, steps, train, as_item):
    params = mlp()
    x = tapegrad.randn(16, 32)
    total = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(steps):
            loss = forward(params, x)
            if train:
                loss.backward()
            total += loss.item() if as_item else loss
    return [w for w in caught if issubclass(w.category, tape_mod.TapeGrowthWarning)], total


@pytest.mark.parametrize("train", [True, False], ids=["training", "evaluation"])
def test_total_loss_plus_equals_loss_warns_once_naming_item(tape, monkeypatch, train):
    monkeypatch.setattr(tape_mod, "_growth_warned", False)
    caught, total = _accumulate_losses(tape, 10_000, train, as_item=False)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "total_loss += loss.item()" in message
    assert caught[0].filename == __file__  # it names the user's line, not tapegrad's


def test_total_loss_plus_equals_item_is_flat_and_silent(tape, monkeypatch):
    monkeypatch.setattr(tape_mod, "_growth_warned", False)
    start = rss_mb()
    caught, total = _accumulate_losses(tape, 10_000, train=True, as_item=True)
    assert caught == []
    assert isinstance(total, float)
    assert tape.n <= 2 * tape_mod.SWEEP_ROWS
    assert rss_mb() - start < 16


def test_one_large_scalar_graph_does_not_warn(tape, monkeypatch):
    """An unrolled loop summed into a scalar loss, then backpropagated: legitimate, no warning."""
    monkeypatch.setattr(tape_mod, "_growth_warned", False)
    w = tapegrad.tensor([0.5, -0.25], requires_grad=True)
    h = tapegrad.zeros(2)
    loss = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", tape_mod.TapeGrowthWarning)
        for _ in range(2500):  # 4 rows a step: 10,000 live rows, reached from the 0-dim `loss`
            h = (h * w + 1).tanh()
            loss = loss + h.sum()
        loss.backward()
    assert np.isfinite(w.grad.numpy()).all()


# -- values no rule reads, adjoint blocks shared -------------------------------------------------------------
def big_layer(L, seed=0):
    """x @ w + b at 512 x 64 float32 (128 KiB per value: above tape.RELEASE_BYTES)."""
    g = np.random.default_rng(seed)
    x0, w0, b0 = (g.standard_normal(s).astype(np.float32) for s in ((512, 64), (64, 64), (64,)))
    return L.tensor(x0), L.tensor(w0, requires_grad=True), L.tensor(b0, requires_grad=True)


def test_a_value_no_rule_reads_dies_with_its_tensor_before_backward(tape):
    """As torch frees `x @ w` once `+ b` has used it: the tape keeps only its shape."""
    import weakref
    x, w, b = big_layer(tapegrad)
    h = x @ w
    ref = weakref.ref(h._data)
    y = (h + b).tanh()  # add reads neither input; tanh reads its own output
    assert h.grad_fn.name() == "MmBackward0"
    del h
    gc.collect()
    assert ref() is None
    assert tape.stats()["value_bytes"] < 2 * 512 * 64 * 4 + w.numel() * 4 + b.numel() * 4 + x.numel() * 4
    y.sum().backward()
    tx, tw, tb = big_layer(torch)
    torch.tanh(tx @ tw + tb).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_a_library_ops_output_no_rule_reads_is_released_though_it_has_a_context(tape):
    """A convolution's row has a context (its sizes, its columns) and its output is a view of the GEMM's buffer;
    the ReLU that takes it reads its own output, not its input: the convolution's value dies with its tensor, as
    torch's does, and the gradients are torch's."""
    g = np.random.default_rng(3)
    x0, w0 = g.standard_normal((16, 1, 28, 28)), g.standard_normal((6, 1, 5, 5)) / 5
    grads = []
    for L in (tapegrad, torch):
        x, w = L.tensor(x0, requires_grad=True), L.tensor(w0, requires_grad=True)
        y = L.nn.functional.relu(L.nn.functional.conv2d(x, w))
        if L is tapegrad:
            conv = [r for r in range(tape.n) if tapegrad.registry.OPS[tape.op[r]].name == "conv"]
            assert len(conv) == 1 and conv[0] in tape.released
        y.square().sum().backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_a_released_value_is_taken_back_when_a_later_rule_reads_it(tape):
    import weakref
    grads = []
    for L in (tapegrad, torch):
        x, w, b = big_layer(L)
        h = x @ w
        y = h + b                     # releases h's value: nothing so far reads it
        z = (h * y).sum()             # mul reads both: the tape takes h's value back from the tensor
        ref = weakref.ref(h._data) if L is tapegrad else None
        del h
        gc.collect()
        if L is tapegrad:
            assert ref() is not None  # held by the tape again, for mul's rule
            assert y.grad_fn.next_functions[0][0].name() == "MmBackward0"
        z.backward()
        grads.append((w.grad.numpy().copy(), b.grad.numpy().copy()))
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-3, atol=1e-2)


def test_adjoint_blocks_are_shared_by_rows_whose_adjoints_are_never_alive_together(tape):
    """A chain of 8 tanh rows needs two blocks at a time (a row's and its input's), plus the leaf's."""
    x0 = np.random.default_rng(0).standard_normal(8192)
    grads = []
    for L in (tapegrad, torch):
        x = L.tensor(x0, requires_grad=True)
        y = x
        for _ in range(8):
            y = y.tanh()
        y.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    assert tape.stats()["last_adjoint_bytes"] == 3 * 8192 * 8 + 8  # x, two shared blocks, the sum's


def test_a_smaller_adjoint_takes_part_of_a_larger_given_back_block(tape):
    """A transformer's logits are larger than any adjoint below them: once their rows have run, their blocks
    hold the smaller rows' (four 8,192 blocks in one 32,768 block), instead of the buffer growing by the
    smaller rows' own blocks."""
    x0 = np.random.default_rng(0).standard_normal(8192)
    grads = []
    for L in (tapegrad, torch):
        x = L.tensor(x0, requires_grad=True)
        y = x.tanh()
        z = L.cat([y * 1.5, y.sin(), y.cos(), y * y]).sin()  # 32,768: the cos's and sin's blocks
        z.cos().sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    # x's block, the cos's and the sin's (32,768 each), the sum's; cat's four inputs and y lie in the cos's
    assert tape.stats()["last_adjoint_bytes"] == (8192 + 2 * 32768) * 8 + 8


def _recycled_rows(tape, root):
    """The rows whose adjoint blocks the replay of a backward from `root` zeroes once they have run."""
    from tapegrad import kernels, registry, replay
    plan = replay._plan(kernels.load(), tape, tape.n, [root], replay._NO_ROWS, *registry.tables())
    return np.flatnonzero(plan[3]).tolist()


def test_given_back_blocks_are_zeroed_only_when_a_row_takes_them(tape):
    """Blocks given back side by side merge into one free block; its rows are zeroed once they have run only
    if a later row takes it: here none does (the rows below are a leaf's, which keeps its own), and
    where one does (the tanh's input, twice as large, takes the sin's and the slice's merged blocks), every
    row of the merged block is zeroed, or the gradient would carry the sin's adjoint."""
    x0 = np.random.default_rng(2).standard_normal(8192)
    x = tapegrad.tensor(x0, requires_grad=True)
    loss = (x.tanh() * 3.0).sum()
    assert _recycled_rows(tape, loss._slot) == []
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 / np.cosh(x0) ** 2, rtol=1e-12)
    grads = []
    for L in (tapegrad, torch):
        x = L.tensor(x0, requires_grad=True)
        s = L.cat([x, x * 2]).tanh()  # 16,384
        loss = s[:8192].sin().cos().sum()
        if L is tapegrad and tapegrad.replay.REUSE_MIN > 1:  # (the suite's small-thresholds run lays out all)
            # the cos's block, taken by the sin's input; the slice's and the sin's, by the tanh's; the
            # tanh's, by the product's (cat's input beside the leaf)
            assert len(_recycled_rows(tape, loss._slot)) == 4
        loss.backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_a_reshape_hands_its_block_to_an_input_it_is_the_only_consumer_of(tape):
    """`h.view(...)` of a row nothing else reads: one block for both, no copy; where the input has other
    consumers, or hooks read the view's gradient, the gradients are still torch's."""
    x0 = np.random.default_rng(1).standard_normal((64, 128))
    grads = []
    for L in (tapegrad, torch):
        x = L.tensor(x0, requires_grad=True)
        h = x.tanh()
        v = h.view(128, 64).view(8192)  # a chain of reshapes: the three share the sum's input block
        v.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    assert tape.stats()["last_adjoint_bytes"] == 2 * 8192 * 8 + 8  # x's, the reshapes' and tanh's, the sum's
    seen, got = {}, []
    for L in (tapegrad, torch):
        x = L.tensor(x0, requires_grad=True)
        h = x.tanh()
        v = h.view(8192)
        v.register_hook(lambda g, L=L: g * 3)  # the hook's result is what the shared block hands down
        r = h.reshape(128, 64)
        r.retain_grad()
        w = h.exp().view(8192)  # h has three consumers: no reshape takes its block
        loss = ((v.sin() + w) * 2).sum() + (r * r).sum()
        loss.backward(retain_graph=True)
        loss.backward()  # (a second pass through the same rows)
        seen[L] = r.grad.numpy()
        got.append(x.grad.numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-12)
    np.testing.assert_allclose(seen[tapegrad], seen[torch], rtol=1e-12)
    got = []
    for L in (tapegrad, torch):  # the view's gradient, retained, then the input's hook changes the shared block
        x = L.tensor(x0, requires_grad=True)
        h = x.tanh()
        v = h.view(8192)
        v.retain_grad()
        h.register_hook(lambda g: g * 3)
        h.retain_grad()
        (v * v).sum().backward()
        got.append([t.grad.numpy().copy() for t in (v, h, x)])
    for mine, theirs in zip(*got):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_views_and_splits_no_rule_reads_die_with_their_tensors(tape):
    """nanoGPT's attention: `q, k, v = qkv.split(C, 2)` then `q.view(...).transpose(1, 2)`. The split's and
    the view's values (tapegrad's splits are copies) are read by no rule: they die with the user's tensors, as
    torch's do, though they share a version cell with qkv; the gradients, and the in-place checks, are
    torch's."""
    import weakref
    g = np.random.default_rng(2)
    x0 = g.standard_normal((16, 64, 64)).astype(np.float32)  # q, k, v: 256 KiB each (above tape.RELEASE_BYTES)
    w0 = (g.standard_normal((64, 192)) / 8).astype(np.float32)
    grads = []
    for L in (tapegrad, torch):
        x, w = L.tensor(x0, requires_grad=True), L.tensor(w0, requires_grad=True)
        qkv = x @ w
        q, k, v = qkv.split(64, dim=2)
        refs = [weakref.ref(t._data) for t in (q, k)] if L is tapegrad else []
        q = q.view(16, 64, 4, 16).transpose(1, 2)
        k = k.view(16, 64, 4, 16).transpose(1, 2)
        y = L.nn.functional.scaled_dot_product_attention(q, k, v.view(16, 64, 4, 16).transpose(1, 2))
        del qkv, q, k, v
        gc.collect()
        assert all(r() is None for r in refs)
        y.square().sum().backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    for mine, theirs in zip(*grads):  # (w's: float32 sums of 1,024 terms up to 30, some cancelling to 0.02)
        np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-6 * np.abs(theirs).max())
    errors = []
    for L in (tapegrad, torch):  # a released view's tensor written in place: torch's version error is kept
        x = L.tensor(x0.astype(np.float64), requires_grad=True)
        h = x @ L.tensor(w0.astype(np.float64))
        a, b = h[:, :, :96], h[:, :, 96:]
        y = a.view(16, 64, 6, 16).transpose(1, 2).exp()  # exp reads its output; a's and its view's rows are free
        a.mul_(2)  # (the exp did not save a: no version error, in torch either)
        b.add_(1)
        try:
            (y.sum() + b.square().sum()).backward()
            errors.append(None)
        except RuntimeError as e:
            errors.append(type(e))
        errors.append(x.grad.numpy() if x.grad is not None else None)
    assert errors[0] == errors[2]
    if errors[1] is not None:
        np.testing.assert_allclose(errors[1], errors[3], rtol=1e-10, atol=1e-12)


def test_a_gradient_a_custom_backward_keeps_is_never_overwritten(tape):
    """A Python row's vjp gets a view of its adjoint block; a custom Function's backward may keep its
    grad_output (as torch allows), so such blocks are never handed on to another row."""
    x0 = np.random.default_rng(0).standard_normal(8192)
    kept = {}
    for L in (tapegrad, torch):
        class Keep(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 1.0

            @staticmethod
            def backward(ctx, g):
                kept[L] = g
                return g
        x = L.tensor(x0, requires_grad=True)
        y = Keep.apply(x.tanh().sin())  # two rows below: the second would take a freed block
        for _ in range(4):
            y = y.sin()
        y.sum().backward()
        kept[L] = kept[L].numpy().copy() if L is torch else kept[L]
    np.testing.assert_allclose(kept[tapegrad].numpy(), kept[torch], rtol=1e-12)


def test_the_blocks_of_library_python_rows_are_shared_too(tape):
    """A recurrent chain of matmuls (BLAS: Python rows) and tanh rows: the library's Python rules use their
    grad_output within the call, so their blocks are handed on as the compiled rows' are (an unrolled LSTM of
    1,000 steps held 792 MB of adjoints when every Python row kept its block to the end). The gradients are
    torch's."""
    g = np.random.default_rng(0)
    h0, w0 = g.standard_normal((64, 128)), g.standard_normal((128, 128)) / 12
    grads = []
    for L in (tapegrad, torch):
        h, w = L.tensor(h0, requires_grad=True), L.tensor(w0, requires_grad=True)
        y = h
        for _ in range(40):
            y = (y @ w).tanh()
        y.sum().backward()
        grads.append((h.grad.numpy(), w.grad.numpy()))
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)
    block = 64 * 128 * 8
    assert tape.stats()["last_adjoint_bytes"] <= 6 * block, tape.stats()["last_adjoint_bytes"] / block  # not 80


def test_a_gradient_a_custom_function_hands_between_its_outputs_is_never_overwritten(tape):
    """A custom Function's further outputs stash their gradients for its row (HOLDS_GRAD), below rows whose
    blocks are handed on: the backward sees them as torch's does."""
    x0 = np.random.default_rng(1).standard_normal(8192)
    got = []
    for L in (tapegrad, torch):
        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a.sin(), a.cos()

            @staticmethod
            def backward(ctx, ga, gb):
                a, = ctx.saved_tensors
                return ga * a.cos() - gb * a.sin()
        x = L.tensor(x0, requires_grad=True)
        s, c = Two.apply(x.tanh())  # x.tanh()'s block would be c's, given back, with c's stash in it
        ((s.sin() * 2).sum() + c.tanh().sum()).backward()
        got.append(x.grad.numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-9, atol=1e-12)


def test_autograd_grad_of_intermediates_keeps_their_blocks(tape):
    """Targets are read after the whole replay: their blocks are never handed on."""
    x0 = np.random.default_rng(0).standard_normal(8192)
    results = []
    for L in (tapegrad, torch):
        x = L.tensor(x0, requires_grad=True)
        hs = [x.tanh()]
        for _ in range(5):
            hs.append(hs[-1].sin() * 2)
        results.append([g.numpy() for g in L.autograd.grad(hs[-1].sum(), [hs[1], hs[3], x])])
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-14)


# -- statistics and dump ---------------------------------------------------------------------------
def test_tape_stats_count_entries_bytes_and_adjoint_buffers(tape, monkeypatch):
    # what it counts: every value held, one adjoint block per row (the suite may run with the savings on)
    monkeypatch.setattr(tape_mod, "RELEASE_BYTES", 1 << 62)
    monkeypatch.setattr(tapegrad.replay, "REUSE_MIN", tapegrad.replay.NO_REUSE)
    x = tapegrad.ones(1000, dtype=tapegrad.float64, requires_grad=True)
    y = (x.sin() * x).sum()  # sin saves x; mul saves both inputs; sum saves nothing
    s = tapegrad.autograd.tape_stats()
    assert s["entries"] == s["live_entries"] == 4 and s["leaf_entries"] == 1
    assert s["value_bytes"] == 3 * 8000 + 8  # x, sin(x), the product, the sum
    assert s["saved_bytes"] == 2 * 8000      # x and sin(x): what backward reads
    assert s["tape_bytes"] > 0 and s["capacity"] >= 4
    y.backward()
    s = tapegrad.autograd.tape_stats(y)
    # adjoints of the 4 rows the backward needed: x, sin(x), the product (1000 float64 each) and the sum
    assert s["last_adjoint_bytes"] == s["peak_adjoint_bytes"] == 3 * 8000 + 8
    assert s["entries"] == 1  # backward cut the graph; x's leaf row stays
    z = (x[:10] * 2).sum()
    z.backward()
    s = tapegrad.autograd.tape_stats()
    assert s["last_adjoint_bytes"] < s["peak_adjoint_bytes"] == 3 * 8000 + 8


def test_value_bytes_counts_each_buffer_once(tape):
    x = tapegrad.ones(100, dtype=tapegrad.float64, requires_grad=True)
    y = x.reshape(10, 10)     # a view of x: no new memory
    z = y.exp()
    s = tape.stats()
    assert s["value_bytes"] == 2 * 800 and s["entries"] == 3 and z.shape == (10, 10)


def test_dump_prints_the_wengert_list(tape):
    x = tapegrad.tensor([1.0, 2.0], requires_grad=True)
    c = tapegrad.tensor([3.0, 4.0])
    y = (x * c).exp()
    y.register_hook(lambda g: g)
    out = io.StringIO()
    text = tapegrad.autograd.dump(y, file=out)
    assert out.getvalue() == text + "\n"
    lines = text.splitlines()
    assert lines[0].split()[:7] == ["row", "op", "grad_fn", "inputs", "shape", "dtype", "flags"]
    rows = {int(line.split()[0]): line.split() for line in lines[1:]}
    assert rows[0][:2] == ["0", "leaf"] and "AccumulateGrad" in rows[0] and "REQ" in rows[0][-1]
    assert rows[1][1] == "const" and rows[1][-1] == "-"
    assert rows[2][1:4] == ["mul", "MulBackward0", "0,1"] and "(2,)" in rows[2] and "float32" in rows[2]
    assert rows[3][1:4] == ["exp", "ExpBackward0", "2"] and rows[3][-1] == "REQ|STOP"
    z = x * 5  # recorded above y's rows: backward frees them, but they stay until a sweep compacts
    y.sum().backward()
    rows = {int(line.split()[0]): line.split() for line in tape.dump(file=io.StringIO()).splitlines()[1:]}
    assert rows[2][-1] == "REQ|DEAD" and rows[3][-1] == "REQ|DEAD|STOP" and rows[2][4:6] == ["-", "-"]
    assert rows[4][1:4] == ["mul_ts", "MulBackward0", "0"] and rows[4][-1] == "c=5"
    del z


# -- sweeps and compactions never change a gradient -------------------------------------------------------
def check_invariants(tape):
    n = tape.n
    assert len(tape.values) == n
    assert (np.diff(tape.argptr[: n + 1]) >= 0).all() and tape.argptr[n] == tape.nargs
    owners = tape._owner_rows()
    assert (tape.args[: tape.nargs] < owners).all(), "an input row above its consumer"
    for r, v in enumerate(tape.values):
        dead = tape.flags[r] & tape_mod.F_DEAD
        if v is None:
            assert dead, f"row {r} has no value but is not dead"
        elif not dead:
            assert tape.obj[r] == id(v), f"row {r}: obj is not id(value)"
            assert v.dtype.isnative
            if r in tape.released:  # a placeholder: the shape of the value the tape let go of, no data
                assert not any(v.strides) and not v.flags.writeable
            else:
                assert v.flags.c_contiguous
    for table in (tape.aux, tape.watch, tape.cells, tape.released):
        assert all(0 <= r < n for r in table)


OPS = ["sin", "tanh", "mul", "add", "sub", "scale", "inplace_mul", "inplace_add", "drop", "drop", "drop",
       "detach_leaf", "sweep", "sweep", "backward", "backward_retain", "view"]


def _apply(lib, instr, xs, i, j, c):
    a, b = xs[i], xs[j]
    if instr == "sin":
        return a.sin()
    if instr == "tanh":
        return a.tanh()
    if instr == "mul":
        return a * b
    if instr == "add":
        return a + b
    if instr == "sub":
        return a - b
    if instr == "scale":
        return a * c
    if instr == "view":
        return a.reshape(3, 1).reshape(3)
    raise AssertionError(instr)


program = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 63), st.integers(0, 63),
                             st.sampled_from([0.5, -2.0, 1.5])), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=program, threshold=st.sampled_from([2, 5, 16]))
def test_sweeps_and_compactions_at_any_point_never_change_a_gradient(tape, monkeypatch, program, threshold):
    """Random programs (ops, in-place ops, dropped tensors, leaves sharing a result's storage, backward
    with and without retain_graph), run with a sweep every few rows and explicit sweeps, agree with torch."""
    for name in ("SWEEP_CHECK", "SWEEP_ROWS", "SWEEP_GAP_MIN"):
        monkeypatch.setattr(tape_mod, name, threshold)
    tape_mod._local.tape = tape = tape_mod.Tape()
    g = np.random.default_rng(len(program))
    init = [g.uniform(-1, 1, 3) for _ in range(3)]
    T = [tapegrad.tensor(v, requires_grad=True) for v in init]   # tapegrad's variables
    P = [torch.tensor(v, requires_grad=True) for v in init]      # torch's
    leaves = [(T[k], P[k]) for k in range(3)]
    nonleaf = [False] * 3
    deps = [set() for _ in range(3)]   # per variable: variables whose graph it uses (including itself)
    graph_freed = set()
    viewed = set()  # variables that are views, or have views
    for instr, i, j, c in program:
        live = [k for k in range(len(T)) if T[k] is not None]
        i, j = live[i % len(live)], live[j % len(live)]
        if instr == "drop":
            if len(live) > 1:
                T[i] = P[i] = None
        elif instr == "sweep":
            tape.sweep()
        elif instr in ("inplace_mul", "inplace_add"):
            if not nonleaf[i] or i in viewed:  # views' version counters: test_hostile.py
                continue
            op = "mul_" if instr == "inplace_mul" else "add_"
            try:
                getattr(P[i], op)(c)
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    getattr(T[i], op)(c)
                continue
            getattr(T[i], op)(c)
        elif instr == "detach_leaf":
            T.append(T[i].detach().requires_grad_())
            P.append(P[i].detach().requires_grad_())
            leaves.append((T[-1], P[-1]))
            nonleaf.append(False)
            deps.append({len(T) - 1})
        elif instr.startswith("backward"):
            if not nonleaf[i]:
                continue
            retain = instr == "backward_retain"
            if deps[i] & graph_freed:  # torch re-runs a freed node that saved nothing; tapegrad raises
                with pytest.raises(RuntimeError):
                    T[i].sum().backward(retain_graph=retain)
                continue
            before = [None if p.grad is None else p.grad.clone() for _, p in leaves]
            try:
                P[i].sum().backward(retain_graph=retain)
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    T[i].sum().backward(retain_graph=retain)
                for (_, p), g in zip(leaves, before):  # torch may have accumulated some leaves first;
                    p.grad = g                          # tapegrad's plan raises before any accumulates
                continue
            T[i].sum().backward(retain_graph=retain)
            if not retain:
                graph_freed |= {d for d in deps[i] if nonleaf[d]}
        else:
            T.append(_apply(tapegrad, instr, T, i, j, c))
            P.append(_apply(torch, instr, P, i, j, c))
            nonleaf.append(True)
            deps.append(deps[i] | (deps[j] if instr in ("mul", "add", "sub") else set()) | {len(T) - 1})
            if instr == "view":
                viewed |= {i, len(T) - 1}
        check_invariants(tape)
    for t, p in leaves:
        if p.grad is None:
            assert t.grad is None or not np.any(t.grad.numpy())
        else:
            np.testing.assert_allclose(t.grad.numpy(), p.grad.numpy(), rtol=1e-10, atol=1e-12)
    for t, p in zip(T, P):
        if t is not None:
            np.testing.assert_allclose(t.detach().numpy(), p.detach().numpy(), rtol=1e-12)


def test_compaction_never_lets_a_stale_row_number_name_another_tensors_row(tape, monkeypatch):
    """y's row is freed while y lives; a leaf sharing y's array object would land on y's old row number."""
    x = tapegrad.tensor([0.5, 1.0], requires_grad=True)
    junk = x * 1.0                 # row 1, dropped below
    y = x.sin()                    # row 2
    above = x * 3.0                # row 3: keeps y's rows below a live row
    y.sum().backward()             # frees rows 2 and 4; row 2 stays (dead) under row 3
    z = y.detach().requires_grad_()  # z's array object is y's
    w = (z * 5.0).sum()            # z's leaf row 4 would move to index 2 in a plain compaction
    del junk
    tape.sweep()
    assert tape.compactions == 1
    check_invariants(tape)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        (y * 4.0).sum().backward()  # as torch: y's graph was freed (sin saved x)
    w.backward()
    np.testing.assert_allclose(z.grad.numpy(), [5.0, 5.0])
    assert above.grad_fn.name() == "MulBackward0"


def test_tensors_and_grad_fns_find_their_rows_after_a_compaction(tape):
    def program(lib, compact):
        x = lib.tensor([0.5, 1.0, 1.5], dtype=lib.float64, requires_grad=True)
        junk = [x * float(k) for k in range(50)]
        h = x * 1.5
        h.mul_(2.0)                    # an in-place chain: two rows share h's storage
        fn = h.grad_fn
        y = h.sin()
        del junk
        compact()
        names = (type(fn.next_functions[0][0]).__name__, type(y.grad_fn.next_functions[0][0]).__name__)
        h.register_hook(lambda g: g * 10)          # found at its new row
        (y + h).sum().backward()
        return x.grad.numpy(), names

    def compact():
        tape.sweep()
        assert tape.compactions == 1 and tape.n < 10
        check_invariants(tape)

    grad, names = program(tapegrad, compact)
    expected, torch_names = program(torch, lambda: None)
    np.testing.assert_allclose(grad, expected, rtol=1e-12)
    assert names == torch_names == ("MulBackward0", "MulBackward0")


def test_rows_a_compaction_moved_are_searched_for_only_while_some_are_on_the_tape(tape):
    """A tensor's row number that no longer holds its value is searched for (Tape.find, O(rows)) only while rows a
    compaction moved are on the tape: once a backward has cut them, a stale row number is a freed row at once."""
    x = tapegrad.tensor([0.5, 1.0, 1.5], dtype=tapegrad.float64, requires_grad=True)
    junk = [x * float(k) for k in range(50)]
    h = x * 1.5
    del junk
    tape.sweep()
    assert tape.compactions == 1 and 0 < tape.moved_below <= tape.n
    assert tape.locate(h) == h._slot and tape.values[h._slot] is h._data  # (found at its new row)
    h.sum().backward()
    assert tape.moved_below <= tape.n
    c = tapegrad.tensor([2.0, 3.0, 4.0], dtype=tapegrad.float64)
    for _ in range(3):
        (x * c).sum().backward()  # c's row is cut each time: its stale row number is no search
    assert tape.moved_below == 0 and tape.find(c._data, "const") == -1
    np.testing.assert_allclose(x.grad.numpy(), [1.5 + 3 * 2.0, 1.5 + 3 * 3.0, 1.5 + 3 * 4.0])


def test_a_training_loop_of_small_chains_never_walks_or_sweeps(tape):
    """dynamic_net's forward (`a + b * x + c * x ** 2 + ...` on 0-d parameters) starts a chain of ops at every term.
    Chains whose values come to less than RELEASE_BYTES are not walked for dead rows (a fifth of the step went to
    that), and rows a later row reads are never left to the sweep as dead: a thousand steps neither walk nor sweep
    (they swept every few hundred steps, 1 ms each, and a compaction then made every stale row number a search)."""
    x = tapegrad.linspace(-3, 3, 2000)
    y = tapegrad.sin(x)
    params = [tapegrad.tensor(v, requires_grad=True) for v in (0.1, -0.2, 0.05, 0.01, 0.001)]
    walks = []
    real = tape._dead_rows
    tape._dead_rows = lambda top, low: walks.append(top - low) or real(top, low)
    for step in range(1000):
        a, b, c, d, e = params
        out = a + b * x + c * x ** 2 + d * x ** 3
        for k in range(4, 4 + step % 3):
            out = out + e * x ** k
        loss = (out - y).pow(2).sum()
        loss.backward()
        with tapegrad.no_grad():
            for p in params:
                if p.grad is not None:
                    p -= 1e-9 * p.grad
                    p.grad = None
    assert tape.sweeps == 0 and tape.compactions == 0, (tape.sweeps, tape.compactions)
    assert not [w for w in walks if w > 8], walks[:10]


def test_a_custom_functions_rows_stay_where_they_are(tape):
    class Cube(tapegrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 3 * a * a * g

    x = tapegrad.tensor([0.5, 2.0], dtype=tapegrad.float64, requires_grad=True)
    junk = [x * 2.0 for _ in range(20)]
    y = Cube.apply(x.sin())
    more = [x * 3.0 for _ in range(20)]
    del junk, more
    row = y._slot
    tape.sweep()
    check_invariants(tape)
    assert y._slot == row and tape.n < 30  # compacted below the Function's row, not above it
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.sin([0.5, 2.0]) ** 2 * np.cos([0.5, 2.0]))


def test_a_leaf_sharing_a_freed_results_storage_never_takes_its_row(tape):
    """Backward cuts y's rows; y.detach().requires_grad_(), which shares y's array object, would then be
    registered at y's old index: the tape pads the index instead (Tape._skip_stale)."""
    def program(lib):
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        y = x.sin()
        y.sum().backward()
        z = y.detach().requires_grad_()
        w = (z * 5.0).sum()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            (y * 4.0).sum().backward()  # sin saved x, now freed: not z's row
        w.backward()
        return z.grad.numpy(), x.grad.numpy()

    for a, b in zip(program(tapegrad), program(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_a_leaf_given_a_freed_results_array_object_never_takes_its_row(tape):
    """As above, with the array object itself shared (`z.data = y`)."""
    x = tapegrad.tensor([0.5, 1.0], requires_grad=True)
    y = x.sin()
    y.sum().backward()
    z = tapegrad.zeros(2)
    z.data = y
    z.requires_grad_()
    w = (z * 5.0).sum()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        (y * 4.0).sum().backward()
    w.backward()
    np.testing.assert_allclose(z.grad.numpy(), [5.0, 5.0])


def test_a_constant_registered_again_each_step_takes_its_old_index(tape):
    """A script's data (a constant) is registered again after each backward cuts its row, at the index its
    cut row had: a tensor naming that row reads the same array from the new constant row, so the tape
    does not pad past it (it padded one more row every step)."""
    p = tapegrad.tensor([1.0, 2.0], requires_grad=True)
    c = tapegrad.tensor([3.0, 4.0])
    rows = []
    for _ in range(4):
        loss = (p * c).sum()
        rows.append(tape.op[:tape.n].tolist())
        loss.backward()
    assert rows == rows[:1] * 4 and len(rows[0]) == 4  # the leaf, the constant, mul, sum
    np.testing.assert_allclose(p.grad.numpy(), [12.0, 16.0])


def test_a_leaf_sharing_a_cut_constants_array_never_takes_its_row():
    """c's constant row is cut; d = c.detach().requires_grad_() shares c's array and is registered at that
    index next: c, which still names it, would read d's leaf row as its own and send d a gradient for c.
    The tape pads past the index for a leaf (not for another constant)."""
    def program(lib):
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        c = lib.tensor([3.0, 4.0])
        (p * c).sum().backward()
        d = c.detach().requires_grad_()
        (d * 2 * c).sum().backward()
        return d.grad.numpy(), p.grad.numpy()

    for a, b in zip(program(tapegrad), program(torch)):
        np.testing.assert_allclose(a, b)


def test_reads_input_is_one_rule_for_numbers_and_arrays():
    # what the tape keeps for a row's rule (release, reacquire, stats) reads one rule off the saves byte
    from tapegrad.registry import SAVES_ALL, SAVES_OUT, reads_input
    cases = [(1 | 4, j) for j in range(8)] + [(SAVES_ALL, j) for j in range(8)] + [(SAVES_OUT, 0), (0, 5), (0, 6)]
    expected = [True, False, True, False, False, False, True, True] + [True] * 8 + [False, False, True]
    assert [reads_input(s, j) for s, j in cases] == expected
    saves = np.array([s for s, _ in cases], np.uint8)
    assert reads_input(saves, np.array([j for _, j in cases])).tolist() == expected


def test_an_evaluation_loop_that_drops_its_outputs_frees_each_graph_at_once(tape):
    """Forward passes without no_grad whose outputs die at once (issue 16's evaluation loop): the next record
    cuts the rows nothing holds any more (Tape.cut_dead_tail), as torch frees a graph with its last tensor,
    so the tape holds no pass's values while the next one runs."""
    params = mlp(width=64)
    x = tapegrad.randn(128, 64)
    lengths = []
    for _ in range(50):
        float(forward(params, x))  # the output is dropped at once
        lengths.append(tape.n)
    # the rows of one pass, and the first pass's dead rows (no values) below the leaves it registered
    assert max(lengths[1:]) == lengths[1] <= 2 * lengths[0], lengths
    assert tape.sweeps == 0
    before = tape.stats()["value_bytes"]
    float(forward(params, x))
    assert tape.stats()["value_bytes"] <= before
    out = forward(params, x)  # a kept output keeps its graph
    out.backward()
    assert params[0].grad is not None


def test_cutting_a_dead_tail_never_changes_a_gradient(tape):
    """A live graph below dropped ones, a dropped tensor with a hook, a view of a dropped result: the cut stops
    at the first row anything still holds."""
    w = tapegrad.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    live = (w * 2).tanh()
    seen = []
    dropped = w.exp()
    dropped.register_hook(lambda g: seen.append(g))
    keep_view = (w * 3).reshape(6)[:2]  # a view keeps its result's value, hence its row
    del dropped
    float((w * 5).sum())  # dropped at once: its rows are cut at the next record
    y = live.sum() + keep_view.sum()
    y.backward()
    want = 2 * (1 - np.tanh(2 * w.detach().numpy()) ** 2)
    want.reshape(-1)[:2] += 3
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)


def test_small_ops_on_a_kept_tensor_walk_only_the_rows_recorded_since(tape, monkeypatch):
    """A loss evaluated again and again on a kept output, without backward: each output dies at once, and its
    0-d value is too small to cut (the sweep takes them). Each record walks only the rows recorded since the
    last walk, not every dead row down to the kept one (that walk made each call O(tape length): 120 us
    growing to 850 us per call before a sweep). Once the dead rows hold RELEASE_BYTES, they are cut."""
    monkeypatch.setattr(tape_mod, "RELEASE_BYTES", 4096)
    walked = []
    row_held = type(tape)._row_held
    monkeypatch.setattr(type(tape), "_row_held", lambda self, r: walked.append(r) or row_held(self, r))
    w = tapegrad.tensor(np.linspace(-1, 1, 6), requires_grad=True)
    kept = w * 2
    for _ in range(200):
        ((kept - 1) ** 2).sum().item()  # three rows, each output dropped at once
    assert tape.sweeps == 0
    assert len(walked) < 3 * 200 * 4, len(walked)  # a few rows a record, not the whole dead tail
    assert tape.swept > 0 and tape.n < 200  # cut as RELEASE_BYTES of dead values built up
    (kept ** 3).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 24 * w.detach().numpy() ** 2, rtol=1e-12)


def test_a_dead_tail_walked_before_continues_below_a_row_that_died_since(tape, monkeypatch):
    """The row that stopped an earlier walk (a kept tensor) dies later: the next walk goes on below it, as a
    walk from the top would, and the whole dead tail is cut; the gradients of what is still live are torch's."""
    monkeypatch.setattr(tape_mod, "RELEASE_BYTES", 1 << 30)  # walk, and leave every dead tail to the sweep
    w = tapegrad.tensor(np.linspace(-1, 1, 64), requires_grad=True)
    live = (w * 3).sin()
    kept = w.exp() * 2
    for _ in range(5):
        kept.sum().item()
    assert tape._small_tail is not None
    del kept
    (w * 4).sum().item()
    monkeypatch.setattr(tape_mod, "RELEASE_BYTES", 1)
    (w * 5).sum().item()  # the dead tail reaches the kept rows now: all cut down to `live`
    assert tape.n == 5, tape.n  # w, w * 3, sin, and the last call's two rows: kept's and all the sums' are cut
    live.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 3 * np.cos(3 * w.detach().numpy()), rtol=1e-12)


def test_an_evaluation_loop_that_keeps_its_output_frees_each_graph_one_pass_later(tape):
    """`out = model(x)` without no_grad: each pass's output lives until the next pass reassigns it, so its graph
    lies below the live one when it dies. When the next chain of ops starts (record() sees an op that does not
    take the tape's last row), the chain before it, whose top has died, is freed (Tape.cut_dead_chain): the tape
    holds at most two passes' values, with no sweep, and the kept output still backpropagates as torch's."""
    params = mlp(width=64)
    x = tapegrad.randn(128, 64)
    held = []
    out = None
    for _ in range(50):
        out = (x @ params[0] + params[1]).tanh() @ params[2]  # kept until the next pass reassigns it
        held.append(tape.stats()["value_bytes"])
    one_pass = 3 * 128 * 64 * 4 + 128 * 4  # x @ w1 + b1, tanh, its matmul's (x and the parameters held apart)
    assert max(held[2:]) <= held[1] + one_pass, held
    assert tape.sweeps == 0 and tape.swept > 0
    out.square().mean().backward()

    def reference(L):
        p = [L.tensor(a.detach().numpy(), requires_grad=True) for a in params]
        ((L.tensor(x.numpy()) @ p[0] + p[1]).tanh() @ p[2]).square().mean().backward()
        return [a.grad.numpy() for a in p]
    for got, want in zip([p.grad.numpy() for p in params], reference(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_an_lstm_layers_dropped_output_is_cut_at_once(tape):
    """A dropped output's dead tail: the walk can stop at a row that something among the rows it frees held (an
    LSTM layer's sequence row), and the cut then looks again at the tape's new last row: each call's graph goes
    at the next call, with no sweep (the tape grew to 116 rows and swept twice in 40 calls)."""
    tapegrad.manual_seed(0)
    module = tapegrad.nn.LSTM(200, 200, 2)
    x = tapegrad.randn(35, 20, 200)
    for _ in range(20):
        module(x)[0].sum().item()
    assert tape.sweeps == 0 and tape.n < 60, (tape.sweeps, tape.n)


@pytest.mark.parametrize("layer", ["LSTM", "GRU"])
def test_a_recurrent_layer_called_without_backward_keeps_no_graph_alive(tape, layer):
    """nn.LSTM's and nn.GRU's sequence rows kept their own value (the hidden states) in their contexts, so the tape
    saw those rows held for as long as they lived, and no cut or sweep ever freed a call's graph: an evaluation
    loop without no_grad grew without bound (36,628 rows and 169 MB after 3,000 calls of a 2-layer LSTM(16, 32)).
    The rules are given them as their output (the LSTM's c_T row as an input) instead: sweeps free every call."""
    tapegrad.manual_seed(0)
    module = getattr(tapegrad.nn, layer)(16, 32, 2)
    x = tapegrad.randn(5, 8, 16)
    for _ in range(400):
        module(x)
    tape.sweep()
    tape.sweep()  # (the first frees the rows that read the sequence rows' values, the second those rows)
    assert tape.n < 64, tape.n


def test_a_recurrent_layers_output_written_in_place_is_torchs_case():
    """The hidden states an LSTM layer's backward reads are its output, as torch's (MkldnnRnnLayerBackward0 saves
    it): written in place, a backward through the output or c_T raises torch's error. torch's CPU GRU output is a
    stack no backward reads: written in place, the gradients are the unwritten output's, as torch's. (Both used the
    written values before.)"""
    def lstm(L, through_c):
        L.manual_seed(0)
        module = L.nn.LSTM(4, 3)
        out, (h, c) = module(L.randn(2, 1, 4))
        with L.no_grad():
            out.add_(1)
        with pytest.raises(RuntimeError) as info:
            (c if through_c else out).sum().backward()
        return str(info.value)
    for through_c in (False, True):
        assert lstm(tapegrad, through_c) == lstm(torch, through_c)

    def gru(L):
        L.manual_seed(0)
        module = L.nn.GRU(4, 3)
        out, h = module(L.randn(2, 1, 4))
        with L.no_grad():
            out.add_(1)
        (out * out).sum().backward()
        return [p.grad.numpy() for p in module.parameters()]
    for got, want in zip(gru(tapegrad), gru(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_lstm_cell_called_without_backward_keeps_no_graph_alive(tape, monkeypatch):
    """An LSTMCell's c' row kept h' (the h' row's value) in its context for the h' row's forward: a value the
    tape saw held, so no cut or sweep ever freed a pass's rows (an evaluation loop without no_grad grew by its
    gates every call: 770 MB after 2,000 calls of LSTMCell(1, 51) at batch 97). The sweeps free them now."""
    monkeypatch.setattr(tape_mod, "SWEEP_BYTES", 4 << 20)
    tapegrad.manual_seed(0)
    cell = tapegrad.nn.LSTMCell(1, 51).double()
    x = tapegrad.randn(97, 1, dtype=tapegrad.float64)
    h = c = tapegrad.zeros(97, 51, dtype=tapegrad.float64)
    for _ in range(150):  # (about 390 KB of values a call: 58 MB kept before)
        h1, c1 = cell(x, (h, c))
    assert tape.stats()["value_bytes"] < 3 * (4 << 20), tape.stats()["value_bytes"]
    (h1.sum() + c1.sum()).backward()  # the last call's graph is whole
    want = torch.nn.LSTMCell(1, 51).double()
    want.load_state_dict({k: torch.tensor(v.numpy()) for k, v in cell.state_dict().items()})
    th, tc = want(torch.tensor(x.numpy()), (torch.tensor(h.numpy()), torch.tensor(c.numpy())))
    (th.sum() + tc.sum()).backward()
    np.testing.assert_allclose(cell.weight_hh.grad.numpy(), want.weight_hh.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_an_evaluation_loop_of_many_chains_frees_each_graph_within_a_pass(tape):
    """`out = layer(x)` without no_grad, for a layer whose pass makes many chains of ops (a transformer encoder
    layer: q, k, v, the residuals and the feed-forward each start one, and contexts of later rows hold values of
    earlier chains). Watched chains are looked at every so often; the kept output's chain goes once `out` is
    reassigned, and the cuts then free the rest of its pass: at most about three passes' values, with no sweep (it
    held 25-55 MiB, 4-8 passes, swept by bytes), and the kept output backpropagates as torch's."""
    tapegrad.manual_seed(0)
    layer = tapegrad.nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
    x = tapegrad.randn(16, 64, 128)
    out = layer(x)
    one_pass = tape.stats()["value_bytes"]
    held = []
    for _ in range(20):
        out = layer(x)  # kept until the next pass reassigns it
        held.append(tape.stats()["value_bytes"])
    assert max(held) <= 3 * one_pass and tape.sweeps == 0, (one_pass, held, tape.sweeps)
    out.square().mean().backward()
    want = torch.nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
    want.load_state_dict({k: torch.tensor(v.numpy()) for k, v in layer.state_dict().items()})
    want(torch.tensor(x.numpy())).square().mean().backward()
    for (name, p), q in zip(layer.named_parameters(), want.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


def test_a_training_loop_after_passes_without_backward_does_not_keep_their_dead_rows(tape, monkeypatch):
    """Small passes whose outputs die without backward leave dead rows the tape cuts at the sweep (too few bytes
    to cut at once). A training loop after them keeps the tape short, so it never reaches the sweep's length,
    and each step's walks for dead rows went over them again (S3's loop: 230 us a step against torch's 60):
    once such walks have covered the tape, it sweeps. The gradients stay torch's. (The default RELEASE_BYTES:
    the suite's small-thresholds run would cut these rows at once; and no CUT_ROWS, which now cuts such a tail
    once it is long: the next test.)"""
    monkeypatch.setattr(tape_mod, "RELEASE_BYTES", 64 << 10)
    monkeypatch.setattr(tape_mod, "CUT_ROWS", 1 << 40)
    w = tapegrad.tensor(np.linspace(-1, 1, 4, dtype=np.float32).reshape(4, 1), requires_grad=True)
    x = tapegrad.tensor(np.linspace(0, 1, 32 * 4, dtype=np.float32).reshape(32, 4))
    for _ in range(2000):
        (x @ w).square().mean()  # dropped: no backward
    stale = tape.n
    assert stale > 100 and tape.stats()["value_bytes"] < tape_mod.RELEASE_BYTES
    walked = []
    real = tape._dead_rows

    def counting(top, low):
        dead, nbytes, stop = real(top, low)
        walked.append(top - stop)
        return dead, nbytes, stop
    tape._dead_rows = counting
    for _ in range(50):
        w.grad = None
        (x @ w + x.sum(1, keepdim=True)).square().mean().backward()
    assert tape.n < 10, (stale, tape.n)
    # (old: 50 walks of them; now walks until they pass the tape's length and SWEEP_WALKED, the last one whole)
    assert sum(walked) <= stale + tape_mod.SWEEP_WALKED + max(walked) + 10 * len(walked), walked
    want = torch.tensor(w.detach().numpy(), requires_grad=True)
    tx = torch.tensor(x.numpy())
    (tx @ want + tx.sum(1, keepdim=True)).square().mean().backward()
    np.testing.assert_allclose(w.grad.numpy(), want.grad.numpy(), rtol=1e-6)


def test_a_long_dead_tail_is_cut_without_a_sweep(tape, monkeypatch):
    """A dead tail of few bytes is cut once it spans CUT_ROWS rows: passes dropped without backward leave the tape
    short, and a seq2seq decoder whose last hidden state no loss reads (its row outlives the backward, so the
    backward cannot cut the sequence's freed rows above the parameters) no longer leaves each sequence's rows to a
    sweep (1 ms every few sequences). Gradients are torch's."""
    monkeypatch.setattr(tape_mod, "RELEASE_BYTES", 64 << 10)
    w = tapegrad.tensor(np.linspace(-1, 1, 4, dtype=np.float32).reshape(4, 1), requires_grad=True)
    x = tapegrad.tensor(np.linspace(0, 1, 32 * 4, dtype=np.float32).reshape(32, 4))
    for _ in range(2000):
        (x @ w).square().mean()  # dropped: no backward
    assert tape.n <= tape_mod.CUT_ROWS + 8 and tape.sweeps == 0, (tape.n, tape.sweeps)

    def decode(L, sequences):
        L.manual_seed(0)
        emb, gru, out = L.nn.Embedding(20, 16), L.nn.GRU(16, 16), L.nn.Linear(16, 20)
        for _ in range(sequences):
            h, loss, token = L.zeros(1, 1, 16), 0, L.tensor([[0]])
            for t in (3, 7, 1, 9, 4, 2):
                o, h = gru(L.relu(emb(token).view(1, 1, -1)), h)
                loss = loss + L.nn.functional.cross_entropy(out(o[0]), L.tensor([t]))
                token = L.tensor([[t]])
            loss.backward()
        return [p.grad.numpy() for p in (*emb.parameters(), *gru.parameters(), *out.parameters())]
    sweeps = tape.sweeps
    got = decode(tapegrad, 60)
    assert tape.sweeps == sweeps and tape.n < 200, (tape.sweeps, tape.n)
    for g, e in zip(got, decode(torch, 60)):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_cutting_a_dead_chain_never_changes_a_gradient(tape):
    """A dead chain top whose rows a live row above still reads (the cut is left to the sweep); a dropped tensor
    with a hook, a view of a dropped result and a retained gradient inside a dead chain: the cut stops at each
    (large values, so that every cut is tried). The gradients are torch's."""
    w0 = np.linspace(-1, 1, 20_000)

    def program(L):
        w = L.tensor(w0, requires_grad=True)
        seen = []
        u = w * 2
        t = u.exp()                # the top of a chain
        v = (w * 5).sin()          # a new chain: t is the chain top to watch
        z = u * v                  # reads u's row, below t
        del t, u                   # t dies; u's row is still read by z
        q = (w * 7).cos()          # a new chain: t's chain cannot be cut (z reads u)
        h = (w * 3).tanh()
        h.register_hook(lambda g: seen.append(float(g.sum())))
        keep_view = (h * 2).reshape(4, 5000)  # a view holds its row
        r = h * 1.5
        r.retain_grad()
        m = r * 2
        s = m.sin()
        del h, m                   # a dropped tensor with a hook; a dropped one in the chain
        p = (w * 11).exp() * 1e-3  # a new chain: s is the chain top to watch
        del s
        p2 = (w * 13).sin()        # s is dead: its chain is cut down to what is still held (r)
        loss = (z + q).sum() + keep_view.sum() + r.sum() + p.sum() + p2.sum()
        loss.backward()
        return w.grad.numpy(), r.grad.numpy(), seen

    (g, rg, seen), (tg_, trg, tseen) = program(tapegrad), program(torch)
    np.testing.assert_allclose(g, tg_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rg, trg, rtol=1e-12)
    np.testing.assert_allclose(seen, tseen, rtol=1e-10)
    assert tape.swept > 0  # (a cut happened: the test is not passing by cutting nothing)


@pytest.mark.parametrize("kept", [False, True], ids=["outputs dropped", "output kept until the next pass"])
def test_evaluation_memory_of_a_1024_wide_mlp_stays_flat_in_a_subprocess(kept):
    """Issue 16's loop: a 1024-1024 MLP at batch 512, forward passes without no_grad, outputs dropped (or the
    output kept until the next pass reassigns it). Resident memory grew by about 250 MiB over 30 passes before
    (torch: about 2 MiB dropped, 30 MiB kept); now the tape holds one pass (two, kept)."""
    import subprocess
    import sys
    import textwrap
    from pathlib import Path
    script = textwrap.dedent("""
        import gc, os, numpy as np, tapegrad as L
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
        g = np.random.default_rng(0)
        w1, w2 = (L.tensor(g.standard_normal((1024, 1024)).astype(np.float32) * 0.03, requires_grad=True)
                  for _ in range(2))
        b1, b2 = (L.zeros(1024, requires_grad=True) for _ in range(2))
        x = L.tensor(g.standard_normal((512, 1024)).astype(np.float32))
        model = lambda: ((x @ w1 + b1).relu() @ w2 + b2).tanh()
        out = None
        for _ in range(3):
            out = model() if KEPT else float(model().sum())
        gc.collect(); start = rss(); peak = start
        for _ in range(30):
            out = model() if KEPT else float(model().sum())
            peak = max(peak, rss())
        print(peak - start)
    """).replace("KEPT", str(kept))
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=repo,
                          env=dict(os.environ, PYTHONPATH=str(repo), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 16, f"resident memory grew by {float(done.stdout):.1f} MiB"


# -- the allocator: a step's freed blocks are reused, not faulted in again (tapegrad/_allocator.py) ---------------
_CHURN = """
import os, resource, sys
import numpy as np
import tapegrad
from tapegrad import _allocator
def step():  # a step's blocks: 10 x 4 MiB allocated, written, then all freed
    blocks = [np.ones(1 << 19) for _ in range(10)]
    return sum(float(b[0]) for b in blocks)
for _ in range(3):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    step()
print(_allocator.keep_freed_memory(), (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
"""


def _glibc():
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (AttributeError, ValueError, OSError):  # (no confstr, or no such name: not glibc)
        return False


@pytest.mark.skipif(not _glibc(), reason="glibc's malloc only")
def test_a_steps_freed_blocks_are_reused_without_page_faults():
    """glibc alone hands most of these 40 MiB back to the system when a step frees them, and faults them in again
    the next (about 5,100 page faults a step, measured with tapegrad's mallopt calls removed); under tapegrad the
    step reuses them. A process that chose its own malloc settings keeps them."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", _CHURN], env=env, capture_output=True, text=True, check=True).stdout
    kept, faults = out.split()
    assert kept == "True" and float(faults) < 50
    env["MALLOC_TRIM_THRESHOLD_"] = str(128 << 10)  # (glibc's default, chosen by the user)
    out = subprocess.run([sys.executable, "-c", _CHURN], env=env, capture_output=True, text=True, check=True).stdout
    kept, faults = out.split()
    assert kept == "False" and float(faults) > 1000
