"""The fast paths of the factories' draws (rand, randn, rand_like, randn_like: creation.py and random.py's rand_f32 /
randn_f32) and of mse_loss / smooth_l1_loss (ops/loss.py's _pointwise_fast), issue 20's eager cost: torch's streams
bit for bit, the generator's state after them, the general path wherever the fast one must not run, and torch's
values, gradients, grad_fn, errors and warnings."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad


def _bits(t):
    return np.ascontiguousarray(t.detach().numpy()).view(np.uint8)


CALLS = ["randn(32)", "randn(32, 1)", "randn(4, 4)", "randn(17)", "randn(100, 3)", "randn((4, 5))", "randn(2, 3, 4)",
         "randn(3)", "randn(15)", "randn(0)", "rand(5)", "rand(3, 4)", "rand((2, 3))", "rand(2, 3, 4, 5)", "rand(0)",
         "rand(1)", "randn(40, generator=G)", "rand(7, generator=G)", "randn(33, generator=G)",
         "randn(20, dtype=L.float32)", "randn(20, dtype=L.float64)", "rand(20, dtype=L.float64)",
         "rand(20, requires_grad=True)", "randn(16, requires_grad=True)", "randn_like(A)", "rand_like(A)",
         "randn_like(A.t())", "rand_like(A.t())", "randn_like(B)", "rand_like(B)", "randn_like(C)", "rand_like(C)",
         "randn(size=(20,))", "rand(size=(3, 4))"]


@pytest.mark.parametrize("seed", [0, 1, 2 ** 40 + 3])
def test_draws_are_torchs_bits_and_leave_torchs_generator_state(seed):
    """All the calls in a row (fast and general paths interleaved: randn(3)'s cached Box-Muller value, an explicit
    generator, float64, *_like of contiguous, transposed, small and 3-d inputs)."""
    tapegrad.manual_seed(seed)
    torch.manual_seed(seed)
    g_g, g_t = tapegrad.Generator().manual_seed(seed + 7), torch.Generator().manual_seed(seed + 7)
    for call in CALLS:
        got = eval("L." + call, {"L": tapegrad, "G": g_g, "A": tapegrad.ones(5, 4), "B": tapegrad.ones(3),
                                 "C": tapegrad.ones(2, 3, 4)})
        want = eval("L." + call, {"L": torch, "G": g_t, "A": torch.ones(5, 4), "B": torch.ones(3),
                                  "C": torch.ones(2, 3, 4)})
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype) == str(want.dtype), call
        assert got.stride() == want.stride() and got.requires_grad == want.requires_grad, call
        assert got.is_leaf and got.grad_fn is None, call
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=call)
    np.testing.assert_array_equal(tapegrad.get_rng_state().numpy(), torch.get_rng_state().numpy())
    np.testing.assert_array_equal(g_g.get_state().numpy(), g_t.get_state().numpy())


def test_a_fresh_generators_state_after_a_fast_draw_is_torchs():
    for draw in ("randn", "rand"):
        g_g, g_t = tapegrad.Generator().manual_seed(3), torch.Generator().manual_seed(3)
        getattr(tapegrad, draw)(32, generator=g_g)
        getattr(torch, draw)(32, generator=g_t)
        np.testing.assert_array_equal(g_g.get_state().numpy(), g_t.get_state().numpy())


def test_the_default_dtype_and_device_are_honoured():
    previous = tapegrad.get_default_dtype()
    tapegrad.set_default_dtype(tapegrad.float64)
    torch_previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        tapegrad.manual_seed(4)
        torch.manual_seed(4)
        for call in ("randn(32)", "rand(32)", "randn(20, dtype=L.float32)"):
            got, want = eval("L." + call, {"L": tapegrad}), eval("L." + call, {"L": torch})
            assert str(got.dtype) == str(want.dtype), call
            np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=call)
    finally:
        tapegrad.set_default_dtype(previous)
        torch.set_default_dtype(torch_previous)
    cpu = tapegrad.ones(32)
    tapegrad.set_default_device("meta")
    try:
        for t in (tapegrad.randn(32), tapegrad.rand(32), tapegrad.randn(4, 8)):
            assert t.device.type == "meta"
        assert tapegrad.randn_like(cpu).device.type == "cpu"  # (the input's device, as torch's)
    finally:
        tapegrad.set_default_device(None)
    tapegrad.manual_seed(5)
    state = tapegrad.get_rng_state().numpy()
    tapegrad.set_default_device("meta")
    try:
        tapegrad.randn(32), tapegrad.rand(32)
    finally:
        tapegrad.set_default_device(None)
    np.testing.assert_array_equal(tapegrad.get_rng_state().numpy(), state)  # (meta draws nothing)


def test_arguments_the_fast_path_does_not_take_keep_torchs_errors():
    for lib in (tapegrad, torch):
        with pytest.raises(RuntimeError, match="negative dimension"):
            lib.randn(-1)
        with pytest.raises(NotImplementedError, match="normal_kernel_cpu"):
            lib.randn(20, dtype=lib.int64)
        with pytest.raises(TypeError):
            lib.rand(2.5)


def test_compile_records_the_fast_draws_and_replays_draw_again():
    def f_of(lib):
        return lambda x: x + lib.randn(32) * lib.rand(32)
    f = tapegrad.compile(f_of(tapegrad), fullgraph=True)
    tapegrad.manual_seed(7)
    torch.manual_seed(7)
    x = np.arange(32, dtype=np.float32)
    got = [f(tapegrad.tensor(x)).numpy() for _ in range(3)]
    want = [f_of(torch)(torch.tensor(x)).numpy() for _ in range(3)]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert f.traces == 1 and not np.array_equal(got[0], got[1])
    np.testing.assert_array_equal(tapegrad.randn(32).numpy(), torch.randn(32).numpy())


# -- mse_loss, smooth_l1_loss ------------------------------------------------------------------------------------

LOSSES = [("mse_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}), ("smooth_l1_loss", {"beta": 2}),
          ("smooth_l1_loss", {"beta": 0.0}), ("smooth_l1_loss", {"beta": float("inf")}), ("l1_loss", {})]


@pytest.mark.parametrize("shape", [(32, 1), (7,), (3, 4, 5), (1,)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,kw", LOSSES)
def test_losses_match_torch(shape, reduction, name, kw):
    rng = np.random.default_rng(abs(hash((shape, reduction, name))) % 2 ** 32)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)
    results = []
    for lib in (tapegrad, torch):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = getattr(lib.nn.functional, name)(a, b, reduction=reduction, **kw)
        out.backward(lib.ones_like(out))
        results.append((out, a.grad, b.grad))
    (out, ga, gb), (t_out, t_ga, t_gb) = results
    assert type(out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    assert str(out.dtype) == str(t_out.dtype) and tuple(out.shape) == tuple(t_out.shape)
    for got, want in ((out, t_out), (ga, t_ga), (gb, t_gb)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=2e-6, atol=0)


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss"])
def test_loss_fast_path_values_are_the_general_paths(name):
    """The fast path's row is the one the general path records: a transposed input (not contiguous) takes the
    general path, its contiguous copy the fast one; same bits, same gradients."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = rng.standard_normal((6, 5)).astype(np.float32)
    fn = getattr(tapegrad.nn.functional, name)
    for reduction in ("mean", "sum"):
        a, b = tapegrad.tensor(x.T.copy(), requires_grad=True), tapegrad.tensor(y.T.copy())
        fast = fn(a, b, reduction=reduction)
        a2 = tapegrad.tensor(x, requires_grad=True)
        slow = fn(a2.t(), tapegrad.tensor(y).t(), reduction=reduction)
        np.testing.assert_array_equal(fast.detach().numpy(), slow.detach().numpy())
        fast.backward()
        slow.backward()
        np.testing.assert_array_equal(a.grad.numpy(), a2.grad.numpy().T)
        assert fast.requires_grad and type(fast.grad_fn).__name__ == type(slow.grad_fn).__name__
    with tapegrad.no_grad():
        assert not fn(tapegrad.tensor(x, requires_grad=True), tapegrad.tensor(y)).requires_grad


def test_loss_errors_and_warnings_are_torchs():
    def outcome(call):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = call()
            except Exception as e:  # noqa: BLE001
                return type(e).__name__, str(e)
        return [str(w.message) for w in caught], float(out.detach().numpy().sum())

    calls = [lambda L, a, b: L.nn.functional.mse_loss(a, b, reduction="bad"),
             lambda L, a, b: L.nn.functional.smooth_l1_loss(a, b, reduction="bad"),
             lambda L, a, b: L.nn.functional.smooth_l1_loss(a, b, beta=-1.0),
             lambda L, a, b: L.nn.functional.mse_loss(a, b[:1]),
             lambda L, a, b: L.nn.functional.smooth_l1_loss(a, b, size_average=False),
             lambda L, a, b: L.nn.functional.mse_loss(a, b, reduce=False),
             lambda L, a, b: L.nn.functional.mse_loss(a, b, reduction="elementwise_mean"),
             lambda L, a, b: L.nn.functional.smooth_l1_loss(a, b.double()),
             lambda L, a, b: L.nn.functional.mse_loss(a, b.long())]
    x = np.array([0.5, -2.0, 3.0], np.float32)
    y = np.array([1.0, 1.0, -1.0], np.float32)
    for call in calls:
        got = outcome(lambda: call(tapegrad, tapegrad.tensor(x, requires_grad=True), tapegrad.tensor(y)))
        want = outcome(lambda: call(torch, torch.tensor(x, requires_grad=True), torch.tensor(y)))
        assert got[0] == want[0]
        if isinstance(got[1], float):
            np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
        else:
            assert got[1] == want[1]


def test_losses_under_autocast_take_the_general_path():
    x = np.array([[0.5, -2.0], [3.0, 0.25]], np.float32)
    y = np.array([[1.0, 1.0], [-1.0, 0.0]], np.float32)
    for name in ("mse_loss", "smooth_l1_loss"):
        outs = []
        for lib in (tapegrad, torch):
            with lib.autocast("cpu", dtype=lib.bfloat16):
                a = lib.tensor(x, requires_grad=True).to(lib.bfloat16)
                out = getattr(lib.nn.functional, name)(a, lib.tensor(y).to(lib.bfloat16))
            outs.append(out)
        assert str(outs[0].dtype) == str(outs[1].dtype) == "torch.float32"
        np.testing.assert_allclose(outs[0].detach().numpy(), outs[1].detach().numpy(), rtol=1e-6)
