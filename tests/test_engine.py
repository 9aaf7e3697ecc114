"""The engine: tape recording, compiled replay, retain_graph, interleaved graphs, versions, hooks, errors.

Where behaviour is PyTorch's, the same program runs on both libraries (`lib` fixture) and must agree.
"""
import gc
import importlib
import pathlib
import re
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
import torch

import tapegrad
from tapegrad import tape as tape_mod


@pytest.fixture(params=["tapegrad", "torch"])
def lib(request):
    return importlib.import_module(request.param)


def grad_of(t):
    return None if t.grad is None else t.grad.detach().numpy().copy()


@pytest.fixture
def python_rows(monkeypatch):
    """The names of the ops whose rows Python ran in backward (replay._python_row), in order: which side of a
    compiled rule's limits (runtime._rule_here) a row fell on."""
    from tapegrad import replay
    ran = []
    python_row = replay._python_row
    monkeypatch.setattr(replay, "_python_row", lambda tape, row, *a: ran.append(
        tapegrad.registry.OPS[tape.op[row]].name) or python_row(tape, row, *a))
    return ran


def raises_like_torch(fn_tg, fn_torch):
    """Both raise the same exception type with the same message."""
    with pytest.raises(Exception) as torch_err:
        fn_torch()
    with pytest.raises(type(torch_err.value)) as tg_err:
        fn_tg()
    assert str(tg_err.value) == str(torch_err.value)


# -- tape ---------------------------------------------------------------------------------------------
def test_backward_truncates_the_tape_to_its_length_before_the_graph():
    tape = tape_mod.current()
    x = tapegrad.ones(3, requires_grad=True)
    (x * 2).sum().backward()  # registers x's leaf row
    n0 = tape.n
    y = (x.exp() * x).tanh().sum()
    assert tape.n == n0 + 4
    y.backward()
    assert tape.n == n0


def test_retain_graph_keeps_rows_and_k_backwards_accumulate_k_times(lib):
    x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = (x.sin() * x).sum()
    for _ in range(3):
        y.backward(retain_graph=True)
    x1 = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (x1.sin() * x1).sum().backward()
    np.testing.assert_allclose(grad_of(x), 3 * grad_of(x1), rtol=1e-6)


def test_second_backward_without_retain_graph_raises_torchs_message():
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        y.backward()
        return lambda: y.backward()
    raises_like_torch(program(tapegrad), program(torch))


def test_interleaved_independent_graphs_backward_in_any_order():
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        xs = [tapegrad.tensor([1.0 + i, 2.0], requires_grad=True) for i in range(3)]
        ys = [xs[0] * 1.0, xs[1] * 1.0, xs[2] * 1.0]
        for step in range(3):  # interleave: each graph's rows alternate on the one tape
            ys = [(y * (i + 2)).sin() for i, y in enumerate(ys)]
        losses = [y.sum() for y in ys]
        for i in order:
            losses[i].backward()
        for i, x in enumerate(xs):
            tx = torch.tensor([1.0 + i, 2.0], requires_grad=True)
            ty = tx * 1.0
            for step in range(3):
                ty = (ty * (i + 2)).sin()
            ty.sum().backward()
            np.testing.assert_allclose(grad_of(x), grad_of(tx), rtol=1e-5)


def test_evaluation_without_no_grad_does_not_grow_the_tape():
    tape = tape_mod.current()
    w = tapegrad.randn(8, 8, requires_grad=True)
    x = tapegrad.randn(4, 8)
    for _ in range(3 * tape.sweep_at // 3 + 100):
        (x @ w).tanh().sum()
    assert tape.n < tape.sweep_at


def test_a_sweep_keeps_what_live_tensors_reach():
    w = tapegrad.tensor([1.0, 2.0], requires_grad=True)
    kept = (w * 3).exp().sum()
    tape_mod.current().sweep()
    kept.backward()
    np.testing.assert_allclose(grad_of(w), 3 * np.exp([3.0, 6.0]), rtol=1e-6)


def test_float32_stays_float32_and_float64_stays_float64(lib):
    for dt in (lib.float32, lib.float64):
        x = lib.tensor([0.3, 0.7], dtype=dt, requires_grad=True)
        (x.tanh() * x).sum().backward()
        assert x.grad.dtype == dt


def test_mixed_dtypes_promote_and_cast_the_gradient_back(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], dtype=lib.float64, requires_grad=True)
    y = a * b
    assert y.dtype == lib.float64
    y.sum().backward()
    assert a.grad.dtype == lib.float32 and b.grad.dtype == lib.float64
    np.testing.assert_allclose(grad_of(a), [3.0, 4.0])


def test_broadcasting_gradients_sum_back_to_each_input(lib):
    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal((3, 1, 4)), rng.standard_normal((2, 1))
    a = lib.tensor(a0, requires_grad=True)
    b = lib.tensor(b0, requires_grad=True)
    ((a * b + a / (b * b + 1)) ** 2).mean().backward()
    ta, tb = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    ((ta * tb + ta / (tb * tb + 1)) ** 2).mean().backward()
    np.testing.assert_allclose(grad_of(a), grad_of(ta), rtol=1e-10)
    np.testing.assert_allclose(grad_of(b), grad_of(tb), rtol=1e-10)


@pytest.mark.parametrize("shapes", [((5, 4), (4,)), ((5, 4), (5, 1)), ((5, 1), (1, 4)), ((2, 3, 4), ()),
                                    ((1, 3, 1), (2, 3, 4)), ((3, 1, 4), (3, 2, 4)), ((2, 1, 4, 1), (3, 1, 5))],
                         ids=["bias", "column", "outer", "scalar", "middle", "index-map", "index-map-4d"])
def test_every_broadcast_pattern_gives_torchs_gradients(shapes):
    """The compiled binary adjoint pairs elements by two strides per input where one split of the output's
    dimensions allows it (a bias, a column, an outer product), else by index maps: both against torch."""
    rng = np.random.default_rng(1)
    a0, b0 = rng.uniform(0.5, 1.5, shapes[0]), rng.uniform(0.5, 1.5, shapes[1])
    grads = []
    for L in (tapegrad, torch):
        a, b = L.tensor(a0, requires_grad=True), L.tensor(b0, requires_grad=True)
        ((a * b - a / b) ** 2 + (b - a)).sum().backward()
        grads.append((grad_of(a), grad_of(b)))
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", [((203,), ()), ((4, 37), (4, 1)), ((3, 5, 16), (3, 5, 1)), ((2, 40), (1, 1)),
                                    ((7, 24), (24,)), ((16,), (1,))],
                         ids=["scalar", "column", "last-axis", "both-ends", "bias (not summed)", "exactly 16"])
def test_an_input_broadcast_along_the_inner_part_is_summed_as_torch(shapes, dtype):
    """An input broadcast along the whole inner part of the split (a 0-d parameter, a column) gets each outer
    index's terms added by runtime.lane_sum, with a tail past the last eight: against torch, both inputs needing
    gradients and one, and expand's adjoint of the same pattern."""
    rng = np.random.default_rng(11)
    a0, b0 = rng.uniform(0.5, 1.5, shapes[0]).astype(dtype), rng.uniform(0.5, 1.5, shapes[1]).astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for need_a in (True, False):
        grads = []
        for L in (tapegrad, torch):
            a, b = L.tensor(a0, requires_grad=need_a), L.tensor(b0, requires_grad=True)
            ((a * b - a / b) ** 2 + (b - a) + b.expand(a.shape) * 0.5).sum().backward()
            grads.append((grad_of(a), grad_of(b)))
        for mine, theirs in zip(*grads):
            if theirs is None:
                assert mine is None
            else:
                assert mine.dtype == theirs.dtype
                np.testing.assert_allclose(mine, theirs, rtol=rtol)


@pytest.fixture(params=["gemm", "no-gemm"])
def gemm(request, monkeypatch):
    """Whether the compiled replay has BLAS's gemm to call (NumPy's OpenBLAS, kernels/blas.py), or none (a NumPy
    built on another BLAS): larger products then return to Python."""
    from tapegrad.kernels import runtime
    if request.param == "gemm":
        assert runtime.BLAS.all(), "NumPy's bundled OpenBLAS was not found: the replay cannot call gemm"
    else:
        monkeypatch.setattr(runtime, "BLAS", np.zeros(2, np.int64))
    return request.param == "gemm"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("sizes", [(37, 5, 3), (1, 4, 128), (2000, 3, 1), (32, 32, 32), (64, 64, 16)],
                         ids=["small", "one-row", "tall", "at-the-limit", "blas"])
@pytest.mark.parametrize("inputs", ["x-w-b", "w-b", "x-w", "w-twice"])
def test_a_linear_rows_rule_runs_in_the_replay_as_torchs(sizes, dtype, inputs, gemm, python_rows):
    """linear/addmm rows are differentiated by gemm called from the compiled replay (K_LINEAR), or without one, those
    of at most runtime.LINEAR_HERE_MAX multiply-adds by the replay's loops and larger ones by Python's BLAS rule:
    against torch, and which one ran."""
    from tapegrad.kernels import runtime
    n, k, m = sizes
    rng = np.random.default_rng(12)
    x0, w0, b0, c0 = (rng.standard_normal(s).astype(dtype) for s in ((n, k), (m, k), (m,), (n, m)))
    grads, ran = [], []
    for L, anomaly in ((tapegrad, False), (tapegrad, True), (torch, False)):
        python_rows.clear()
        x = L.tensor(x0, requires_grad=inputs != "w-b")
        w, b = L.tensor(w0, requires_grad=True), L.tensor(b0, requires_grad=True)
        F = L.nn.functional
        y = F.linear(x, w) if inputs == "x-w" else F.linear(x, w, b)
        if inputs == "w-twice":  # (the weight's adjoint from two rows: never handed over as one row's array)
            y = y + F.linear(x * 0.5, w)
        with tapegrad.autograd.set_detect_anomaly(anomaly, check_nan=False):  # (anomaly: each row's rule in Python)
            (y.tanh() * L.tensor(c0)).sum().backward()
        grads.append([None if t.grad is None else t.grad.numpy() for t in (x, w, b)])
        ran.append("addmm" in python_rows or "linear" in python_rows)
    here = gemm or n * k * m <= runtime.LINEAR_HERE_MAX
    assert ran[:2] == [not here, True]
    rtol = 2e-5 if dtype == "float32" else 1e-12
    for mine, rule, theirs in zip(*grads):
        assert (mine is None) == (theirs is None) == (rule is None)
        if theirs is not None:
            assert mine.dtype == theirs.dtype
            np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=rtol)
            # the array rule's bits where both ran the same loops; by gemm, the rule's within rounding (OpenBLAS's
            # kernels with beta 1 and 0 agree on this machine, but that is the library's choice, per CPU)
            if gemm and n * k * m > runtime.LINEAR_HERE_MAX or gemm and m > 1:
                np.testing.assert_allclose(mine, rule, rtol=64 * np.finfo(dtype).eps,
                                           atol=64 * np.finfo(dtype).eps * np.abs(rule).max())
            else:
                np.testing.assert_array_equal(mine, rule)


_MATMUL_CASES = {  # a's and b's shapes, how b is made from its array, and whether the replay can run the row itself
    "square": ((32, 32), (32, 32), "as is", True),
    "mlp": ((16, 64), (64, 128), "as is", True),
    "b-transposed": ((20, 30), (30, 7), "t()", True),
    "a-transposed": ((9, 40), (40, 3), "a.t()", True),
    "x-at-x": ((12, 12), (12, 12), "a", True),               # one tensor both sides: both adjoints into one block
    "one-column": ((50, 8), (8, 1), "as is", True),
    "folded": ((3, 6, 10), (10, 4), "as is", True),          # matmul_fold: a's leading dimensions folded, as torch
    "batched": ((3, 6, 10), (3, 10, 4), "as is", False),     # bmm: Python's rule
    "vector": ((6, 10), (10,), "as is", False),               # mv: Python's rule
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("wanted", ["a", "b", "both"])
@pytest.mark.parametrize("case", list(_MATMUL_CASES))
def test_a_matmul_rows_rule_runs_in_the_replay_as_torchs(case, wanted, dtype, gemm, python_rows):
    """matmul rows of a 2-d b (C-contiguous operands) are differentiated by gemm called from the compiled replay
    (runtime._matmul_rule), any other (or any, without a gemm) by Python's rule: against torch, bit for bit
    against the array rule (anomaly mode runs each row's rule in Python), and which one ran."""
    a_shape, b_shape, make_b, here = _MATMUL_CASES[case]
    rng = np.random.default_rng(5)
    a0 = rng.standard_normal(a_shape).astype(dtype)
    b0 = rng.standard_normal(b_shape[::-1] if make_b == "t()" else b_shape).astype(dtype)
    results = []
    for L, anomaly in ((tapegrad, False), (tapegrad, True), (torch, False)):
        python_rows.clear()
        a = L.tensor(a0.T.copy() if make_b == "a.t()" else a0, requires_grad=wanted != "b" or make_b == "a")
        b = L.tensor(b0, requires_grad=wanted != "a")
        left = a.t() if make_b == "a.t()" else a
        right = b.t() if make_b == "t()" else left if make_b == "a" else b
        out = (L.tanh(left @ right) * 1.5).sum()
        if anomaly:
            with tapegrad.autograd.set_detect_anomaly(True, check_nan=False):
                out.backward()
        else:
            out.backward()
        results.append(([grad_of(a), grad_of(b)], bool({"matmul", "matmul_fold", "mv"} & set(python_rows))))
    (replayed, python_ran), (by_rule, rule_ran), (theirs, _) = results
    assert python_ran == (not (here and gemm)) and rule_ran
    rtol = 2e-5 if dtype == "float32" else 1e-12
    for mine, rule, ref in zip(replayed, by_rule, theirs):
        assert (mine is None) == (ref is None) == (rule is None)
        if ref is not None:
            assert mine.dtype == ref.dtype
            np.testing.assert_allclose(mine, ref, rtol=rtol, atol=rtol)
            # the array rule's within rounding where the replay called gemm (NumPy: gemm with beta 0, or gemv for a
            # dimension of 1; x @ x adds two products into one block in another order), its bits where Python ran
            if python_ran:
                np.testing.assert_array_equal(mine, rule)
            else:
                np.testing.assert_allclose(mine, rule, rtol=64 * np.finfo(dtype).eps,
                                           atol=64 * np.finfo(dtype).eps * np.abs(rule).max())


_POINTWISE_LOSSES = [("mse_loss", {}), ("smooth_l1_loss", {"beta": 0.7}), ("huber_loss", {"delta": 0.6})]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("wanted", ["input", "target", "both"])
@pytest.mark.parametrize("loss", _POINTWISE_LOSSES, ids=[name for name, _ in _POINTWISE_LOSSES])
def test_a_pointwise_loss_rows_rule_runs_in_the_replay_with_the_array_rules_bits(loss, reduction, wanted, dtype,
                                                                                  python_rows):
    """mse/smooth_l1/huber rows of one shape are differentiated by the compiled replay (kinds from K_RULE up):
    against torch, and bit for bit against the op's array rule (anomaly mode runs each row's rule in Python).
    Terms on both sides of beta/delta, a NaN and a zero difference included."""
    name, kw = loss
    rng = np.random.default_rng(7)
    x0, t0, g0 = (rng.standard_normal((6, 9)).astype(dtype) for _ in range(3))
    x0[0, :3] = t0[0, :3] + np.array([np.nan, 0.0, 0.6], dtype)  # (NaN; zero; beta/delta's rounding)
    results = []
    for L, anomaly in ((tapegrad, False), (tapegrad, True), (torch, False)):
        x = L.tensor(x0, requires_grad=wanted != "target")
        t = L.tensor(t0, requires_grad=wanted != "input")
        python_rows.clear()
        out = getattr(L.nn.functional, name)(x, t, reduction=reduction, **kw)
        out = (out * L.tensor(g0)).sum() if reduction == "none" else out * 3.0
        if anomaly:
            with tapegrad.autograd.set_detect_anomaly(True, check_nan=False):
                out.backward()
        else:
            out.backward()
        results.append(([grad_of(x), grad_of(t)], bool(python_rows)))
    (replayed, python_ran), (by_rule, rule_ran), (theirs, _) = results
    assert not python_ran and rule_ran
    rtol = 2e-6 if dtype == "float32" else 1e-13
    for mine, rule, ref in zip(replayed, by_rule, theirs):
        assert (mine is None) == (ref is None) == (rule is None)
        if ref is not None:
            assert mine.dtype == ref.dtype
            nan = np.isnan(rule)  # (equal bits but for a NaN's sign, which LLVM need not keep: `0 - NaN`)
            np.testing.assert_array_equal(np.isnan(mine), nan)
            np.testing.assert_array_equal(mine[~nan].view(f"u{mine.itemsize}"), rule[~nan].view(f"u{rule.itemsize}"))
            np.testing.assert_allclose(mine, ref, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("case", ["broadcast target", "float16"])
def test_a_pointwise_loss_row_the_replay_cannot_pair_runs_its_array_rule(case, python_rows):
    """Shapes that differ or a dtype the replay lacks: Python runs the rule."""
    rng = np.random.default_rng(8)
    x0, t0 = rng.standard_normal((4, 5)), rng.standard_normal((4, 5) if case != "broadcast target" else (5,))
    dt = "float16" if case == "float16" else "float64"
    grads = []
    for L in (tapegrad, torch):
        x = L.tensor(x0, dtype=getattr(L, dt), requires_grad=True)
        t = L.tensor(t0, dtype=getattr(L, dt))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # (torch's broadcast warning)
            L.nn.functional.mse_loss(x, t).backward()
        grads.append(grad_of(x).astype(np.float64))
    assert "mse_loss" in python_rows
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-3 if dt == "float16" else 1e-12)


def test_the_replays_rule_kinds_and_reductions_follow_the_registry_and_the_losses():
    """runtime's K_LINEAR.. and R_NONE.. are the registry's COMPILED_RULES and ops/loss.py's reductions, in order."""
    from tapegrad import registry
    from tapegrad.kernels import runtime
    from tapegrad.ops import loss
    kinds = [runtime.K_LINEAR, runtime.K_MSE, runtime.K_SMOOTH_L1, runtime.K_HUBER, runtime.K_MATMUL,
             runtime.K_SOFTMAX, runtime.K_LOG_SOFTMAX, runtime.K_LSTM_C, runtime.K_LSTM_H]
    assert kinds == [registry.K_RULE + j for j in range(len(registry.COMPILED_RULES))] and runtime.K_RULE == kinds[0]
    assert registry.COMPILED_RULES == ("linear", "mse", "smooth_l1", "huber", "matmul", "softmax", "log_softmax",
                                       "lstm_c", "lstm_h")
    from tapegrad.kernels import softmax
    from tapegrad.ops import reduce
    assert softmax.MAX_SIZE == reduce._SOFTMAX_KERNEL_MAX  # (the replay's rule and the array rule: one kernel)
    assert [loss._code(r) for r in ("none", "mean", "sum")] == [runtime.R_NONE, runtime.R_MEAN, runtime.R_SUM]
    table = registry.tables()[0]
    for name, rule in (("linear", "linear"), ("addmm", "linear"), ("mse_loss", "mse"),
                       ("smooth_l1_loss", "smooth_l1"), ("huber_loss", "huber"), ("softmax", "softmax"),
                       ("log_softmax", "log_softmax"), ("lstm_cell_c", "lstm_c"), ("lstm_cell_h", "lstm_h")):
        assert table[registry.BY_NAME[name].code] == registry.K_RULE + registry.COMPILED_RULES.index(rule)


def test_a_small_linear_row_under_anomaly_mode_names_its_nan():
    """Anomaly mode runs every row by itself: a NaN from a small linear row is reported as torch names it."""
    w = tapegrad.tensor([[1.0, float("nan")]], requires_grad=True)
    x = tapegrad.ones(3, 2, requires_grad=True)
    with pytest.warns(UserWarning, match="Error detected in MmBackward0"), tapegrad.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="^Function 'MmBackward0' returned nan values in its 0th output.$"):
            tapegrad.nn.functional.linear(x, w).sum().backward()


@pytest.mark.parametrize("case", [((4, 5), (0,)), ((4, 5), (1,)), ((2, 3, 4), (0, 1)), ((2, 3, 4), (2,)),
                                  ((2, 3, 4), (1,)), ((2, 3, 4), (0, 2)), ((2, 1, 4), (0,))],
                         ids=["rows", "columns", "outer", "inner", "middle (map)", "ends (map)", "size-1 axis"])
def test_every_reduction_pattern_gives_torchs_gradients(case):
    """A sum's adjoint spreads over the reduced axes by two strides where one split allows it, else by a map."""
    shape, dims = case
    x0 = np.random.default_rng(2).standard_normal(shape)
    w0 = np.random.default_rng(3).standard_normal(np.sum(x0, axis=dims, keepdims=True).shape)
    grads = []
    for L in (tapegrad, torch):
        x = L.tensor(x0, requires_grad=True)
        (x.sum(dim=dims, keepdim=True) * L.tensor(w0)).sum().backward()
        grads.append(grad_of(x))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


@pytest.mark.parametrize("case", [((3, 1), (3, 4)), ((1, 4), (3, 4)), ((4,), (2, 3, 4)), ((3, 1, 4), (3, 2, 4)),
                                  ((1, 3, 1), (2, 3, 4))],
                         ids=["columns", "rows", "leading", "middle (map)", "ends (map)"])
def test_every_expand_pattern_gives_torchs_gradients(case):
    src, dst = case
    x0 = np.random.default_rng(4).standard_normal(src)
    w0 = np.random.default_rng(5).standard_normal(dst)
    grads = []
    for L in (tapegrad, torch):
        x = L.tensor(x0, requires_grad=True)
        (x.expand(*dst) * L.tensor(w0)).sum().backward()
        grads.append(grad_of(x))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_zero_dim_tensors(lib):
    x = lib.tensor(2.0, requires_grad=True)
    y = x * x * x + x.sin()
    y.backward()
    np.testing.assert_allclose(grad_of(x), 12.0 + np.cos(2.0), rtol=1e-6)


def test_matmul_between_compiled_segments(lib):
    rng = np.random.default_rng(1)
    w0, x0 = rng.standard_normal((5, 3)), rng.standard_normal((4, 5))
    out = {}
    for name in ("tapegrad", "torch"):
        m = importlib.import_module(name)
        w = m.tensor(w0, requires_grad=True)
        x = m.tensor(x0, requires_grad=True)
        ((x.tanh() @ w).sigmoid() @ w.t()).exp().sum().backward()
        out[name] = grad_of(w), grad_of(x)
    for a, b in zip(out["tapegrad"], out["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-10)




def test_a_weight_gradient_from_a_python_row_accumulates_and_keeps_its_hooks(lib, monkeypatch):
    """A leaf whose one adjoint comes from a Python row takes that array as its .grad (no copy): it must
    still run the leaf's hooks, accumulate over backwards, and not share memory with anything else."""
    from tapegrad.kernels import runtime
    monkeypatch.setattr(runtime, "BLAS", np.zeros(2, np.int64))  # (no gemm for the replay: matmul is a Python row)
    rng = np.random.default_rng(2)
    a = lib.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    b = lib.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    x = lib.tensor(rng.standard_normal((2, 4)))
    seen = []
    b.register_hook(lambda g: seen.append(g.detach().numpy().copy()) or g * 2)
    ((x @ a) @ b).sum().backward()
    first_a, first_b = grad_of(a), grad_of(b)
    ((x @ a) @ b).sum().backward()
    np.testing.assert_allclose(grad_of(a), 2 * first_a)
    np.testing.assert_allclose(grad_of(b), 2 * first_b)
    np.testing.assert_allclose(first_b, 2 * seen[0])
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    y = (a @ b).sum()
    ga, gb = (t.numpy() for t in lib.autograd.grad(y, (a, b)))  # targets: copies, .grad untouched
    np.testing.assert_allclose(grad_of(a), 2 * first_a)
    np.testing.assert_allclose(ga, np.ones((4, 5)) @ b.detach().numpy().T)


def test_a_weight_gradient_from_the_replays_gemm_is_a_view_of_the_owned_buffer(gemm):
    """A leaf whose one adjoint comes from a linear or matmul row the replay runs (OWN_BLOCK) gets its block in the
    owned buffers, which hold only such gradients: its .grad is a view of them (no copy, and no view of the adjoint
    buffer, which would keep every activation's adjoint alive). Against torch: values, a hook's result, two
    backwards accumulating, in-place changes to one .grad leaving the others alone; a weight used twice is not
    owned and has a buffer of its own. Without a gemm, matmul's Python row hands over the array BLAS returned."""
    rng = np.random.default_rng(4)
    x0, w0, v0, b0, u0 = (rng.standard_normal(s) for s in ((16, 64), (64, 32), (8, 32), (8,), (8, 8)))
    results = []
    for L in (tapegrad, torch):
        x = L.tensor(x0)
        w, v, b, u = (L.tensor(a, requires_grad=True) for a in (w0, v0, b0, u0))
        seen = []
        u.register_hook(lambda g: seen.append(g.detach().numpy().copy()) or g * 2)
        for _ in range(2):
            h = L.nn.functional.linear(L.tanh(x @ w), v, b)
            (L.tanh(h @ u) + h @ u * 0.5).sum().backward()  # (u used twice: not owned)
        if L is tapegrad:
            base = w.grad.numpy().base
            owned = [t.grad.numpy() for t in (w, v, b)]
            if gemm:
                assert base is not None and all(g.base is base for g in owned)
                assert base.size == sum(g.size for g in owned)  # only the owned gradients
                assert u.grad.numpy().base is None or u.grad.numpy().base.size == u.grad.numpy().size
            else:  # (matmul's Python row: the array BLAS returned; linear's loops here: the owned buffer)
                assert owned[0].base is None and owned[1].base is owned[2].base
                assert owned[1].base.size == owned[1].size + owned[2].size
            w.grad.add_(1.0)
            np.testing.assert_array_equal(v.grad.numpy(), owned[1])
            w.grad.sub_(1.0)
        results.append([t.grad.numpy().copy() for t in (w, v, b, u)] + [seen[0]])
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_a_gradient_the_backward_also_holds_is_not_handed_to_a_leaf(lib):
    """A custom backward returning an array it keeps (or one array for two inputs) is added, not adopted:
    changing .grad in place must not change the kept array or the other leaf's .grad."""
    class Keep(lib.autograd.Function):
        @staticmethod
        def forward(ctx, p, q):
            ctx.kept = lib.ones(3, dtype=lib.float64)
            return p * q

        @staticmethod
        def backward(ctx, g):
            return ctx.kept, ctx.kept

    p = lib.zeros(3, dtype=lib.float64, requires_grad=True)
    q = lib.zeros(3, dtype=lib.float64, requires_grad=True)
    out = Keep.apply(p, q)
    out.sum().backward()
    p.grad.add_(10.0)
    np.testing.assert_array_equal(out.grad_fn.kept.numpy(), np.ones(3))
    np.testing.assert_array_equal(q.grad.numpy(), np.ones(3))

    class Same(lib.autograd.Function):
        @staticmethod
        def forward(ctx, p, q):
            return p * q

        @staticmethod
        def backward(ctx, g):
            both = g * 3
            return both, both

    p.grad = q.grad = None
    Same.apply(p, q).sum().backward()
    p.grad.add_(1.0)
    np.testing.assert_array_equal(q.grad.numpy(), np.full(3, 3.0))
# -- versions and in-place ----------------------------------------------------------------------------------
def test_modifying_a_saved_value_in_place_raises_torchs_error():
    def program(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        z = (y * y).sum()
        y.add_(1)
        return lambda: z.backward()
    raises_like_torch(program(tapegrad), program(torch))


def test_modifying_a_value_not_saved_is_allowed(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = (y + 1).sum()  # add saves nothing
    y.mul_(3)
    z.backward()
    np.testing.assert_allclose(grad_of(x), [2.0, 2.0, 2.0])


def test_in_place_op_on_a_non_leaf_is_differentiated(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.mul_(x)
    y.sum().backward()
    np.testing.assert_allclose(grad_of(x), [2.0, 4.0])
    assert y._version == 1 if lib is tapegrad else True


def test_version_cells_cut_from_blocks_are_zeroed_distinct_and_know_their_address():
    """new_version_cell cuts cells from shared blocks: across block boundaries and from two threads at once, every
    cell starts at 0, has an address of its own (the one the compiled backward reads), and a bump moves only it."""
    taken = []
    def take(n):
        taken.extend(tape_mod.new_version_cell() for _ in range(n))
    threads = [threading.Thread(target=take, args=(700,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    take(3 * tape_mod._CellBlock.SIZE)
    assert len({c._address[1] for c in taken}) == len(taken)
    for c in taken:
        assert c.shape == (1,) and c[0] == 0 and c._address == (id(c), c.ctypes.data)
    taken[5][0] += 1
    assert [c[0] for c in taken[4:7]] == [0, 1, 0]


def test_in_place_on_a_leaf_that_requires_grad_raises():
    def program(lib):
        x = lib.tensor([1.0], requires_grad=True)
        return lambda: x.add_(1)
    raises_like_torch(program(tapegrad), program(torch))


def test_optimizer_style_update_under_no_grad_then_stale_graph_raises():
    def program(lib):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        loss = (w * w).sum()
        loss.backward(retain_graph=True)
        with lib.no_grad():
            w -= 0.1 * w.grad
        return lambda: loss.backward()
    raises_like_torch(program(tapegrad), program(torch))


IN_PLACE_ARITHMETIC = {  # the unrecorded ones write straight into the storage; the others go through _inplace
    "no_grad sub of a scaled gradient": lambda L, w, b: _no_grad(L, lambda: w.sub_(0.5 * b)),
    "no_grad -= int": lambda L, w, b: _no_grad(L, lambda: w.__isub__(2)),
    "+= a plain tensor with grad on": lambda L, w, b: w.__iadd__(b.detach()),
    "*= a tensor that requires grad (recorded)": lambda L, w, b: w.__imul__(b),
    "+= a broadcast row": lambda L, w, b: w.__iadd__(b.detach()[0]),
    "+= a float64 tensor": lambda L, w, b: w.__iadd__(b.detach().double()),
    "+= through a view": lambda L, w, b: w.view(3, 2).__iadd__(3.0),  # (indexing copies: architecture.md)
    "int tensor += 1": lambda L, w, b: w.long().__iadd__(1),
    "int tensor += 1.5": lambda L, w, b: w.long().__iadd__(1.5),
    "+= a larger shape": lambda L, w, b: w[0].__iadd__(b.detach()),
}


def _no_grad(L, fn):
    with L.no_grad():
        return fn()


@pytest.mark.parametrize("case", list(IN_PLACE_ARITHMETIC))
def test_in_place_arithmetic_matches_torch_with_and_without_recording(case):
    def program(L):
        w = L.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
        b = L.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        out = IN_PLACE_ARITHMETIC[case](L, w, b)
        if out.requires_grad:
            out.sum().backward()
        return out, w, b.grad
    try:
        want = program(torch)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=re.escape(str(e).split(".")[0])):
            program(tapegrad)
        return
    got = program(tapegrad)
    for g, t in zip(got, want):
        if t is None:
            assert g is None
            continue
        np.testing.assert_array_equal(g.detach().numpy(), t.detach().numpy())
        assert str(g.dtype) == str(t.dtype) and g.requires_grad == t.requires_grad
    assert got[1]._version == want[1]._version


def test_grad_data_zero_clears_the_gradient(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    x.grad.data.zero_()
    (x * 3).sum().backward()
    np.testing.assert_allclose(grad_of(x), [3.0, 3.0])


# -- hooks, retain_grad, grad_fn ------------------------------------------------------------------------------
def test_hooks_and_retain_grad(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.detach().numpy().copy()) or g * 2)
    x.register_hook(lambda g: g + 1)
    (y * y).sum().backward()
    np.testing.assert_allclose(seen[0], [6.0, 12.0])
    np.testing.assert_allclose(grad_of(y), [12.0, 24.0])  # retain_grad sees the hooked gradient
    np.testing.assert_allclose(grad_of(x), [37.0, 73.0])


@pytest.mark.parametrize("create_graph", [False, True])
def test_hooks_run_in_the_backwards_grad_mode(lib, create_graph):
    # torch runs them with grad mode = create_graph: a plain backward's hook records nothing
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([0.5, 0.5], requires_grad=True)
    seen = []
    y = x * 2.0
    y.register_hook(lambda g: seen.append((lib.is_grad_enabled(), (w * g).requires_grad)))
    x.register_hook(lambda g: seen.append((lib.is_grad_enabled(), (w * g).requires_grad)))
    y.sum().backward(create_graph=create_graph)
    assert seen == [(create_graph, create_graph)] * 2
    x.grad = None  # (create_graph: breaks the cycle torch warns about)


def test_post_accumulate_grad_hook(lib):
    # torch's own example: an SGD step in the hook, which sees the accumulated .grad, under no_grad
    v = lib.tensor([0.0, 0.0, 0.0], requires_grad=True)
    handle = v.register_post_accumulate_grad_hook(lambda p: p.add_(p.grad, alpha=-0.01))
    v.backward(lib.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(v.detach().numpy(), [-0.01, -0.02, -0.03], rtol=1e-6)
    handle.remove()
    v.backward(lib.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(v.detach().numpy(), [-0.01, -0.02, -0.03], rtol=1e-6)
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    w.register_hook(lambda g: g * 10)  # a gradient hook runs first; the post-accumulate hook sees its result
    w.register_post_accumulate_grad_hook(lambda p: seen.append((p.grad.tolist(), lib.is_grad_enabled())))
    (w * 3).sum().backward()
    (w * 3).sum().backward()
    assert seen == [([30.0, 30.0], False), ([60.0, 60.0], False)]
    lib.autograd.grad((w * 3).sum(), w)  # no .grad accumulated: no call
    assert len(seen) == 2
    (w * w).sum().backward(create_graph=True)
    assert seen[-1][1] is True and w.grad.requires_grad
    w.grad = None


def test_post_accumulate_grad_hook_errors():
    def run(lib, hook):
        w = lib.ones(2, requires_grad=True)
        w.register_post_accumulate_grad_hook(hook)
        (w * 2).sum().backward()
        return w.grad.tolist()
    for hook in (lambda p: p, lambda p: None):
        assert run(tapegrad, hook) == run(torch, hook) == [2.0, 2.0]
    for hook in (lambda p: p.grad, lambda p: p.detach(), lambda p: "x", lambda p: 0):
        got = []
        for lib in (tapegrad, torch):
            with pytest.raises((RuntimeError, TypeError)) as e:
                run(lib, hook)
            got.append((e.type, str(e.value)))
        assert got[0] == got[1]
    for make in (lambda lib: lib.ones(2, requires_grad=True) * 2, lambda lib: lib.ones(2)):
        got = []
        for lib in (tapegrad, torch):
            with pytest.raises(RuntimeError) as e:
                make(lib).register_post_accumulate_grad_hook(print)
            got.append(str(e.value))
        assert got[0] == got[1]


def test_what_a_hook_records_under_enable_grad_outlives_the_backward(lib):
    # the backward frees its own rows only: the row the hook recorded while it ran stays usable
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([0.5, 0.25], requires_grad=True)
    kept = []

    def hook(g):
        with lib.enable_grad():
            kept.append((w * g).sum())
    y = x * 2.0
    y.register_hook(hook)
    y.sum().backward()
    kept[0].backward()
    np.testing.assert_allclose(grad_of(w), [1.0, 1.0])
    np.testing.assert_allclose(grad_of(x), [2.0, 2.0])


def test_grad_fn_names_and_next_functions(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    c = lib.tensor([3.0, 4.0])
    y = x * c + x.exp()
    assert type(y.grad_fn).__name__ == "AddBackward0"
    names = [type(f).__name__ for f, _ in y.grad_fn.next_functions]
    assert names == ["MulBackward0", "ExpBackward0"]
    mul_next = y.grad_fn.next_functions[0][0].next_functions
    assert type(mul_next[0][0]).__name__ == "AccumulateGrad" and mul_next[0][0].variable is x
    assert mul_next[1][0] is None
    assert x.grad_fn is None and x.is_leaf and not y.is_leaf


def test_no_grad_and_set_grad_enabled(lib):
    x = lib.ones(2, requires_grad=True)
    with lib.no_grad():
        assert not (x * 2).requires_grad
        with lib.enable_grad():
            assert (x * 2).requires_grad
    lib.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        lib.set_grad_enabled(True)

    @lib.no_grad()
    def f():
        return x * 2
    assert not f().requires_grad


def _decorated_modes(L):
    """Grad modes as decorators: a generator function's body runs under the mode between its yields (the caller's
    mode outside), `@no_grad` / `@inference_mode` without parentheses, set_grad_enabled(False) as a decorator gives
    the mode back at once, a decorated class (torch's FutureWarning), and set_grad_enabled's repr."""
    import warnings
    w = L.ones(2, requires_grad=True)
    seen = []

    @L.no_grad()
    def steps():
        for _ in range(2):
            got = yield (w * 2).requires_grad, L.is_grad_enabled()
            seen.append((got, L.is_grad_enabled()))
    g = steps()
    seen += [next(g), L.is_grad_enabled(), g.send("sent"), L.is_grad_enabled()]

    @L.inference_mode
    def infer():
        yield L.is_inference_mode_enabled()
    seen += [list(infer()), L.is_inference_mode_enabled()]

    @L.set_grad_enabled(False)
    def off():
        return L.is_grad_enabled()
    seen += [L.is_grad_enabled(), off(), L.is_grad_enabled(), repr(L.set_grad_enabled(True))]

    @L.enable_grad
    def on():
        return L.is_grad_enabled()
    with L.no_grad():
        seen.append(on())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @L.no_grad()
        class Made:
            def __init__(self):
                self.grad = L.is_grad_enabled()
        seen += [Made().grad, [(w.category, str(w.message)) for w in caught]]
    return seen


def test_grad_modes_as_decorators_as_torchs():
    assert _decorated_modes(tapegrad) == _decorated_modes(torch)


def _inference_program(L):
    x = L.ones(2)
    r = [L.is_inference_mode_enabled()]
    with L.inference_mode():
        r += [L.is_inference_mode_enabled(), L.is_grad_enabled()]
        d, y = L.ones(2), x * 2
        z = d[0]
        with L.inference_mode(False):
            r += [L.is_inference_mode_enabled(), L.is_grad_enabled(), (x * 3).is_inference()]
        r.append(L.is_inference_mode_enabled())
    with L.no_grad():
        with L.inference_mode(False):
            r.append(L.is_grad_enabled())
    r += [L.is_inference_mode_enabled(), x.is_inference(), d.is_inference(), y.is_inference(), z.is_inference(),
          (x + 1).is_inference()]

    @L.inference_mode()
    def f(a):
        return a * 2, L.is_inference_mode_enabled()
    o, e = f(x)
    return r + [o.is_inference(), e, o.requires_grad, L.is_grad_enabled()]


def test_inference_mode_and_inference_tensors_are_torchs():
    """inference_mode turns grad mode off and marks the tensors made under it (is_inference); inference_mode(False)
    turns grad mode on, even under no_grad, as torch's InferenceMode(false) (the autograd tutorial's cells)."""
    assert _inference_program(tapegrad) == _inference_program(torch)


INFERENCE_WRITES = {
    "add_": lambda L, t: t.add_(1), "mul_scalar": lambda L, t: t.mul_(2), "sub_tensor": lambda L, t: t.sub_(L.ones(3)),
    "copy_": lambda L, t: t.copy_(L.zeros(3)), "zero_": lambda L, t: t.zero_(), "fill_": lambda L, t: t.fill_(2),
    "setitem": lambda L, t: t.__setitem__(0, 5.0), "clamp_": lambda L, t: t.clamp_(0, 1),
    "init": lambda L, t: L.nn.init.zeros_(t), "out": lambda L, t: L.add(L.ones(3), 1, out=t),
    "view_add_": lambda L, t: t[1:].add_(1), "requires_grad_": lambda L, t: t.requires_grad_(),
    "clone_add_": lambda L, t: t.clone().add_(1), "detach_add_": lambda L, t: t.detach().add_(1),
}


@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_false", "inference"])
@pytest.mark.parametrize("case", sorted(INFERENCE_WRITES))
def test_writes_into_inference_tensors_raise_as_torchs(case, mode):
    """An in-place write into an inference tensor (or requires_grad_) outside inference_mode raises torch's
    RuntimeError, whatever the grad mode; inside inference_mode it is allowed. (torch has written the data when it
    raises; tapegrad raises before writing: nothing is changed.)"""
    seen = []
    for lib in (torch, tapegrad):
        with lib.inference_mode():
            t = lib.ones(3) * 3
        modes = {"grad": lib.enable_grad, "no_grad": lib.no_grad, "inference_false": lambda: lib.inference_mode(False),
                 "inference": lib.inference_mode}
        with modes[mode]():
            try:
                INFERENCE_WRITES[case](lib, t)
                seen.append(None)
            except RuntimeError as e:
                seen.append(str(e))
    assert seen[1] == seen[0]


def test_grad_mode_is_per_thread():
    seen = {}

    def worker():
        seen["thread"] = tapegrad.is_grad_enabled()
    with tapegrad.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen["thread"] is True


def test_gradient_not_kept_across_tapes_without_reference():
    x = tapegrad.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad.grad_fn is None and x.grad._tape is None


# -- errors, in torch's words ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    "implicit_nonscalar", "int_requires_grad", "no_grad_fn", "gradient_shape", "op_shape", "matmul_shape",
    "dot_shape", "item_many", "bool_many", "requires_grad_nonleaf", "dim_range",
])
def test_errors_match_torch(case):
    def program(lib):
        if case == "implicit_nonscalar":
            x = lib.ones(3, requires_grad=True)
            return lambda: (x * 2).backward()
        if case == "int_requires_grad":
            return lambda: lib.tensor([1, 2]).requires_grad_()
        if case == "no_grad_fn":
            return lambda: lib.ones(2).sum().backward()
        if case == "gradient_shape":
            x = lib.ones(3, requires_grad=True)
            return lambda: (x * 2).backward(lib.ones(2))
        if case == "op_shape":
            return lambda: lib.ones(3) + lib.ones(4)
        if case == "matmul_shape":
            return lambda: lib.ones(2, 3) @ lib.ones(4, 5)
        if case == "dot_shape":
            return lambda: lib.dot(lib.ones(3), lib.ones(4))
        if case == "item_many":
            return lambda: lib.ones(2).item()
        if case == "bool_many":
            return lambda: bool(lib.ones(2))
        if case == "requires_grad_nonleaf":
            x = lib.ones(2, requires_grad=True)
            y = x * 2

            def set_it():
                y.requires_grad = False
            return set_it
        if case == "dim_range":
            return lambda: lib.ones(2, 3).sum(dim=2)
    raises_like_torch(program(tapegrad), program(torch))


def test_bad_input_leaves_the_tape_usable():
    x = tapegrad.ones(3, requires_grad=True)
    n = tape_mod.current().n
    with pytest.raises(RuntimeError):
        x * tapegrad.ones(4)
    with pytest.raises(RuntimeError):
        (x * 2).backward(tapegrad.ones(2))
    (x * 2).sum().backward()
    np.testing.assert_allclose(grad_of(x), [2.0, 2.0, 2.0])
    assert tape_mod.current().n <= n + 2  # x's leaf row and the failed backward's (x * 2): no partial state


def test_nan_and_inf_propagate_like_torch(lib):
    x = lib.tensor([0.0, 1.0, -1.0, float("inf")], requires_grad=True)
    (x.sqrt() + x.log()).sum().backward()
    tx = torch.tensor([0.0, 1.0, -1.0, float("inf")], requires_grad=True)
    (tx.sqrt() + tx.log()).sum().backward()
    np.testing.assert_array_equal(np.isnan(grad_of(x)), np.isnan(grad_of(tx)))
    np.testing.assert_array_equal(grad_of(x)[~np.isnan(grad_of(x))], grad_of(tx)[~np.isnan(grad_of(tx))])


# -- import and compilation -------------------------------------------------------------------------------------------
def test_import_compiles_nothing_and_does_not_import_numba():
    code = "import sys, tapegrad; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cache_directory_falls_back_when_the_package_is_read_only(tmp_path, monkeypatch):
    from tapegrad import kernels
    # a copy of the environment for the test (_choose_cache_dir sets variables that monkeypatch.delenv of an
    # unset one would not restore: they leaked NUMBA_DISABLE_CACHING into later tests' subprocesses)
    monkeypatch.setattr(kernels.os, "environ", {k: v for k, v in kernels.os.environ.items()
                                                if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_CACHING")})
    monkeypatch.setattr(kernels, "_writable", lambda p: str(p).startswith(str(tmp_path)))
    kernels.os.environ["XDG_CACHE_HOME"] = str(tmp_path)
    kernels._choose_cache_dir()
    assert kernels.os.environ["NUMBA_CACHE_DIR"].startswith(str(tmp_path))
    del kernels.os.environ["NUMBA_CACHE_DIR"]
    monkeypatch.setattr(kernels, "_writable", lambda p: False)
    kernels._choose_cache_dir()
    assert kernels.os.environ["NUMBA_DISABLE_CACHING"] == "1"


def test_a_change_to_any_kernel_source_clears_every_cached_kernel(tmp_path):
    """Numba checks only a cached function's own file: a change in a kernel it calls from another file
    (elementwise.py's opcodes, renumbered when an op is added) left runtime.py's cached replay running the old
    codes (a wrong jvp, found by the suite after such a merge). The stamp covers every kernel file."""
    from tapegrad import kernels
    sources = tmp_path / "kernels"
    sources.mkdir()
    (sources / "runtime.py").write_text("def replay(): pass\n")
    (sources / "elementwise.py").write_text("CODES = {'tanh': 3}\n")
    stamp = kernels.sources_stamp(sources)
    cache = tmp_path / "cache"
    cache.mkdir()
    cached = [cache / "runtime.replay-470.py311.nbi", cache / "runtime.replay-470.py311.1.nbc",
              cache / "elementwise.tanh-9.py311.nbi"]
    for path in cached:
        path.write_bytes(b"compiled")
    (cache / "runtime.cpython-311.pyc").write_bytes(b"python's")
    kernels._clear_stale_cache(cache, stamp)  # no stamp recorded yet (a cache from before stamps): cleared
    assert not any(p.exists() for p in cached) and (cache / "runtime.cpython-311.pyc").exists()
    for path in cached:
        path.write_bytes(b"compiled")
    kernels._clear_stale_cache(cache, kernels.sources_stamp(sources))  # the same sources: kept
    assert all(p.exists() for p in cached)
    (sources / "elementwise.py").write_text("CODES = {'tanh': 4}\n")  # runtime.py itself unchanged
    assert kernels.sources_stamp(sources) != stamp
    kernels._clear_stale_cache(cache, kernels.sources_stamp(sources))
    assert not any(p.exists() for p in cached)
    assert (cache / "tapegrad-kernels.stamp").read_text() == kernels.sources_stamp(sources)


def test_the_kernel_cache_in_use_is_stamped_with_these_sources():
    from tapegrad import kernels
    folder = pathlib.Path(kernels.load().plan._cache._cache_path)
    assert (folder / "tapegrad-kernels.stamp").read_text() == kernels.sources_stamp()


def test_generated_kernels_are_up_to_date():
    from tapegrad.kernels import codegen
    assert codegen.TARGET.read_text() == codegen.source(), "run: python -m tapegrad.kernels.codegen"


def test_numpy_array_layout_check():
    from tapegrad import kernels
    kernels.load()  # verifies the array struct offsets against ndarray.ctypes on this NumPy


def test_dead_tensors_release_their_memory():
    x = tapegrad.ones(1000, requires_grad=True)
    y = (x * 2).exp()
    import weakref
    ref = weakref.ref(y._data)
    y.sum().backward()
    del y
    gc.collect()
    assert ref() is None


def test_domain_errors_are_silent_like_torch_without_silencing_numpy():
    code = ("import numpy as np, tapegrad as t\n"
            "x = t.tensor([0.0, -1.0], requires_grad=True)\n"
            "(x.sqrt() + x.log()).sum().backward()\n"
            "np.log(np.zeros(1))\n")
    out = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr.count("RuntimeWarning") == 1  # only the user's own np.log


def test_writing_through_a_view_is_caught_by_the_version_check():
    def program(lib):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 1
        z = (y * y).sum()
        v = y.view(2, 2)
        v.add_(1)
        return lambda: z.backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        program(torch)()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        program(tapegrad)()


def test_views_share_storage_with_their_base(lib):
    x = lib.zeros(4)
    v = x.view(2, 2)
    v.add_(1)
    np.testing.assert_array_equal(x.numpy(), [1.0, 1.0, 1.0, 1.0])


def test_tensor_of_a_tensor_warns_as_torch():
    """torch.tensor(t) copies with torch's UserWarning (the neural style tutorial's Normalization triggers it);
    tensors inside a list, as_tensor and arrays do not warn."""
    import warnings
    caught = []
    for lib in (torch, tapegrad):
        m = lib.tensor([0.485])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = lib.tensor(m)
            lib.tensor([m[0], m[0]]), lib.as_tensor(m), lib.tensor(m.numpy())
        caught.append([(x.category, str(x.message)) for x in w])
        assert t.tolist() == m.tolist()
    assert caught[1] == caught[0] and len(caught[0]) == 1


@pytest.mark.parametrize("method", ["register_hook", "register_prehook"])
def test_hooks_on_autograd_nodes_run_as_torchs(method):
    """grad_fn.register_hook / register_prehook run as torch's (tests/autograd/test_node_hooks.py has the rest)."""
    def program(lib):
        seen = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.sin()
        getattr(y.grad_fn, method)(lambda *a: seen.append([g.tolist() for g in a[-1]]))
        y.sum().backward()
        return seen, x.grad.tolist()
    got, want = program(tapegrad), program(torch)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def test_grad_fn_nodes_are_one_object_per_operation_as_torchs():
    """A row's node is the same object however it is reached (grad_fn, next_functions), and a leaf's AccumulateGrad
    too, while something holds them: graph walkers that key on id() see torch's graph."""
    def program(lib):
        a = lib.linspace(0., 6.28, 5, requires_grad=True)
        b = lib.sin(a)
        c = 2 * b
        d = c + 1
        e = b * b
        n1, n2 = e.grad_fn.next_functions
        return [c.grad_fn.next_functions[0][0] is b.grad_fn, d.grad_fn.next_functions[0][0] is c.grad_fn,
                b.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0],
                b.grad_fn.next_functions[0][0].variable is a, n1[0] is n2[0], n1[0] is b.grad_fn]
    assert program(tapegrad) == program(torch) == [True] * 6


def test_backward_inputs_of_a_retained_non_leaf_accumulate_once():
    """backward(inputs=[h]) of a non-leaf h: its .grad once (it was twice where h also retained its grad), and no
    non-leaf warning for a .grad it defined, as torch's."""
    def program(lib):
        out = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for retain, inputs in ((True, "h"), (False, "h"), (True, "ah")):
                a = lib.tensor([1., 2.], requires_grad=True)
                h = a * 3
                if retain:
                    h.retain_grad()
                (h * h).sum().backward(inputs=[a, h] if inputs == "ah" else [h])
                out.append((h.grad.tolist(), None if a.grad is None else a.grad.tolist()))
        return out, len(caught)
    assert program(tapegrad) == program(torch)


def test_hardswish_gradient_at_minus_and_plus_three_as_torch():
    def program(lib):
        x = lib.tensor([-3., 3., -4., 4., 0., 2.9, -2.9], requires_grad=True)
        lib.nn.functional.hardswish(x).sum().backward()
        y = lib.tensor([-3., 3., 0.5], requires_grad=True)
        g, = lib.autograd.grad(lib.nn.functional.hardswish(y).sum(), y, create_graph=True)
        return x.grad.tolist(), g.tolist()
    assert program(tapegrad) == program(torch)


@pytest.mark.parametrize("nd", [1, 2])
def test_conv_transpose_input_gradient_under_create_graph_is_contiguous(nd):
    """WGAN-GP's `g.view(g.size(0), -1)` of a ConvTranspose's input gradient taken with create_graph: contiguous, as
    torch's (tapegrad's had the permuted strides of its composition, so view raised)."""
    def program(lib):
        gen = np.random.default_rng(0)
        x = lib.tensor(gen.standard_normal((2, 4) + (4,) * nd), requires_grad=True)
        w = lib.tensor(gen.standard_normal((4, 3) + (3,) * nd))
        conv = getattr(lib.nn.functional, f"conv_transpose{nd}d")
        g, = lib.autograd.grad(conv(x, w, stride=2, padding=1).sum(), x, create_graph=True)
        return g.stride(), g.is_contiguous(), g.view(g.size(0), -1).shape, np.round(g.detach().numpy(), 6).tolist()
    assert program(tapegrad) == program(torch)


def test_prelu_second_derivative_reaches_its_input_as_zeros():
    """PReLU's input gradient is piecewise constant in the input: its second derivative there is zeros (torch's),
    not None (which left optimizers skipping the parameters before it)."""
    def program(lib):
        gen = np.random.default_rng(0)
        x = lib.tensor(gen.standard_normal((2, 3, 4)), requires_grad=True)
        b = lib.tensor(gen.standard_normal((3, 4)), requires_grad=True)
        a = lib.tensor([0.25, 0.1, -0.3], dtype=lib.float64, requires_grad=True)
        g, = lib.autograd.grad(lib.nn.functional.prelu(x + b, a).sum(), x, create_graph=True)
        (g ** 2).sum().backward()
        return x.grad.tolist(), b.grad.tolist(), a.grad.tolist()
    assert program(tapegrad) == program(torch)


def test_python_scalars_and_numpy_of_tensors_refused_as_torch():
    """int()/float() of several elements is torch's ValueError (a common `int(labels)` mistake), and NumPy's
    conversion of a tensor that requires grad raises as .numpy() does."""
    seen = []
    for L in (tapegrad, torch):
        row = []
        for convert in (int, float, complex, lambda t: "%d" % t, np.asarray,
                        lambda t: np.array(L.ones(2, requires_grad=True) * 2)):
            try:
                convert(L.tensor([1.0, 2.0]))
                row.append(None)
            except Exception as e:  # noqa: BLE001
                row.append((type(e).__name__, str(e)))
        seen.append(row)
    assert seen[0] == seen[1]


def test_in_place_on_a_view_of_a_quotient_as_torch():
    """Division's gradients read its operands, as torch's (-g * ((a / b) / b)), not its result: an in-place op on a
    view of the quotient (FisherSnedecor's rsample clamps one) leaves its backward valid, as in torch."""
    seen = []
    for L in (tapegrad, torch):
        a = L.tensor([1.0, 3.0], requires_grad=True)
        b = L.tensor([2.0, 5.0], requires_grad=True)
        y = (a / b).view(2)
        y.clamp_(min=0.4)
        y.sum().backward()
        seen.append((a.grad.tolist(), b.grad.tolist()))
    assert seen[0] == seen[1]


def test_size_slices_and_sums_are_sizes_as_torch():
    seen = []
    for L in (tapegrad, torch):
        s = L.Size([2, 3, 4])
        seen.append([repr(v) for v in (s[:-1], s[1], s + (5,), (1,) + s, s * 2, s[::2], s + s, L.Size(L.tensor([2, 3])),
                                        L.Size([L.tensor(2), 3]), L.zeros(2, 3).shape[1:])])
    assert seen[0] == seen[1]
