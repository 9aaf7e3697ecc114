"""Round 9 (torch's OpInfo samples): igamma / igammac (torch.special.gammainc / gammaincc), and the tie order of
topk / kthvalue indices on CPU, against torch."""
import numpy as np
import pytest
import torch

import tapegrad


def _regimes(dtype, seed=0):
    """a and x over each of calc_igamma's branches: the series, the continued fraction, the asymptotic series near
    a ~ x (20 < a < 200 and a > 200), the boundaries (0, inf, NaN, negatives)."""
    rng = np.random.default_rng(seed)
    a = np.concatenate([rng.uniform(0, 5, 300), rng.uniform(0, 300, 300), rng.uniform(15, 400, 300),
                        [0, 0, 1, np.inf, np.inf, 2, np.nan, -1, 1e-3, 0.5, 2.0]])
    x = np.concatenate([rng.uniform(0, 5, 300), rng.uniform(0, 300, 300), np.zeros(300),
                        [0, 1, 0, 1, np.inf, np.inf, 1, 1, 1e-3, -0.5, np.nan]])
    x[600:900] = a[600:900] * rng.uniform(0.8, 1.2, 300)
    return a.astype(dtype), x.astype(dtype)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-11), (np.float32, 5e-4)])
def test_igamma_values_as_torch(name, dtype, rtol):
    a, x = _regimes(dtype)
    expected = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(x)).numpy()
    got = getattr(tapegrad, name)(tapegrad.tensor(a), tapegrad.tensor(x)).numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-30 if dtype == np.float64 else 1e-30)


@pytest.mark.parametrize("torch_fn, tg_fn", [
    (torch.special.gammainc, tapegrad.special.gammainc), (torch.special.gammaincc, tapegrad.special.gammaincc),
    (lambda a, x: a.igamma(x), lambda a, x: a.igamma(x)), (lambda a, x: a.igammac(x), lambda a, x: a.igammac(x))])
def test_igamma_aliases_broadcast(torch_fn, tg_fn):
    a = np.array([[0.5], [1.5], [3.0]])
    x = np.array([0.2, 1.0, 2.5, 7.0])
    np.testing.assert_allclose(tg_fn(tapegrad.tensor(a), tapegrad.tensor(x)).numpy(),
                               torch_fn(torch.tensor(a), torch.tensor(x)).numpy(), rtol=1e-12)


@pytest.mark.parametrize("name, sign", [("igamma", 1), ("igammac", -1)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_igamma_gradient_in_x_as_torch(name, sign, dtype):
    a = torch.tensor([[0.5, 1.0, 2.0, 4.5], [1.0, 2.0, 0.0, 3.0]], dtype=dtype)
    x = torch.tensor([0.3, 0.0, 2.0, 6.0], dtype=dtype, requires_grad=True)
    cot = torch.tensor([[1.0, -2.0, 0.5, 3.0], [0.25, 1.5, -1.0, 2.0]], dtype=dtype)
    (getattr(torch, name)(a, x) * cot).sum().backward()
    tx = tapegrad.tensor(x.detach().numpy(), requires_grad=True)
    out = getattr(tapegrad, name)(tapegrad.tensor(a.numpy()), tx)
    assert type(out.grad_fn).__name__ == name.capitalize() + "Backward0"
    (out * tapegrad.tensor(cot.numpy())).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), x.grad.numpy(), rtol=1e-5 if dtype == torch.float32 else 1e-12)
    # create_graph: the rule is differentiable (exp((a - 1) log x - x - lgamma a))
    tx2 = tapegrad.tensor([0.7, 1.3], dtype=tapegrad.float64, requires_grad=True)
    ta = tapegrad.tensor([1.5, 2.5], dtype=tapegrad.float64)
    g, = tapegrad.autograd.grad(getattr(tapegrad, name)(ta, tx2).sum(), tx2, create_graph=True)
    g.sum().backward()
    x2 = torch.tensor([0.7, 1.3], dtype=torch.float64, requires_grad=True)
    tg_, = torch.autograd.grad(getattr(torch, name)(torch.tensor([1.5, 2.5], dtype=torch.float64), x2).sum(), x2,
                               create_graph=True)
    tg_.sum().backward()
    np.testing.assert_allclose(tx2.grad.numpy(), x2.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_has_no_derivative_in_a(name):
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        x = lib.tensor([0.5, 2.0], requires_grad=True)
        getattr(lib, name)(a, x).sum().backward()
    with pytest.raises(NotImplementedError) as expected:
        run(torch)
    with pytest.raises(NotImplementedError) as got:
        run(tapegrad)
    assert str(got.value) == str(expected.value) == f"the derivative for '{name}: input' is not implemented."


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001  (the test compares torch's exception with tapegrad's)
        return type(e).__name__, str(e).split("\n")[0]
    return "ok", (str(r.dtype).replace("torch.", "").replace("tapegrad.", ""), r.detach().float().numpy().tolist())


@pytest.mark.parametrize("case", [
    lambda L: L.igamma(L.tensor([1, 2, 3]), L.tensor([1, 2, 3])),
    lambda L: L.igammac(L.tensor([True]), L.tensor([True])),
    lambda L: L.igamma(L.tensor([1, 2]), L.tensor([True, False])),
    lambda L: L.igamma(L.tensor([1, 2, 3]), L.tensor([1.0, 2.0, 3.0])),
    lambda L: L.igamma(L.tensor([1.0, 2.0]), L.tensor([3, 4])),
    lambda L: L.igamma(L.tensor([1.0]), L.tensor(2.0, dtype=L.float64)),
    lambda L: L.igamma(L.tensor([1.0]), 2.0),
    lambda L: L.igamma(2.0, L.tensor([1.0])),
    lambda L: L.special.gammainc(L.tensor([1.0]), 2.0),
    lambda L: L.igamma(L.ones(2), L.ones(3)),
    lambda L: L.igamma(L.tensor([1.0], dtype=L.float16), L.tensor([1.5], dtype=L.float16)),
    lambda L: L.igammac(L.tensor([1.0], dtype=L.bfloat16), L.tensor([1.5], dtype=L.bfloat16)),
    lambda L: L.tensor([1, 2]).igamma_(L.tensor([1.0, 2.0])),
    lambda L: L.tensor([1.0, 2.0]).igamma_(L.tensor([1, 2])),
    lambda L: L.tensor([1.0, 2.0]).igammac_(L.tensor([[1.0, 2.0]])),
    lambda L: L.igamma(L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0]), out=L.empty(2)),
    lambda L: L.special.gammaincc(L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0]), out=L.empty(2, dtype=L.float64)),
    lambda L: L.special.gammaincc(L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0]), out=L.empty(2, dtype=L.int64)),
    lambda L: L.special.gammainc(L.tensor([1.0, 2.0]), L.ones(2, requires_grad=True), out=L.empty(2)),
    lambda L: L.igamma(L.ones(0, 1, 3), L.ones(0, 10, 3)),
])
def test_igamma_dtypes_errors_out_inplace_as_torch(case):
    expected = _outcome(lambda: case(torch))
    got = _outcome(lambda: case(tapegrad))
    assert got[0] == expected[0]
    if got[0] == "ok":
        assert got[1][0] == expected[1][0]
        np.testing.assert_allclose(got[1][1], expected[1][1], rtol=1e-3)
    else:
        assert got[1] == expected[1]


# -- the tie order of topk, kthvalue, mode indices on CPU ------------------------------------------------------
def _tie_heavy(seed, count=120):
    """Rows with many equal values (int64, float32 with NaN, float64, int8, bool), of lengths on each side of the
    insertion-sort threshold (16) and of topk's partial-sort switch (k * 64 <= n)."""
    rng = np.random.default_rng(seed)
    for t in range(count):
        n = int(rng.integers(1, 300))
        a = rng.integers(0, (2, 5, 40)[t % 3], (2, n)).astype((np.int64, np.float32, np.float64, np.int8, bool)[t % 5])
        if a.dtype.kind == "f" and t % 4 == 0:
            a[0, rng.integers(0, n, 4)] = np.nan
        k = int(rng.integers(1, n + 1)) if t % 2 else int(rng.integers(1, max(2, n // 64 + 1)))
        yield a, k


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("ordered", [True, False])
def test_topk_tie_order_as_torch(largest, ordered):
    for a, k in _tie_heavy(1):
        if a.dtype == bool:
            continue
        expected = torch.topk(torch.from_numpy(a), k, largest=largest, sorted=ordered)
        got = tapegrad.topk(tapegrad.tensor(a), k, largest=largest, sorted=ordered)
        np.testing.assert_array_equal(got.indices.numpy(), expected.indices.numpy())
        np.testing.assert_array_equal(got.values.numpy(), expected.values.numpy())


def test_kthvalue_tie_order_as_torch():
    for a, k in _tie_heavy(2):
        if a.dtype == bool:
            continue
        expected = torch.kthvalue(torch.from_numpy(a), k)
        got = tapegrad.kthvalue(tapegrad.tensor(a), k)
        np.testing.assert_array_equal(got.indices.numpy(), expected.indices.numpy())


def test_mode_tie_order_as_torch():
    for a, _ in _tie_heavy(3):
        expected = torch.mode(torch.from_numpy(a))
        got = tapegrad.mode(tapegrad.tensor(a))
        np.testing.assert_array_equal(got.indices.numpy(), expected.indices.numpy())
        np.testing.assert_array_equal(got.values.numpy(), expected.values.numpy())


def test_tie_order_other_dim_and_gradient():
    a = np.array([[1.0, 3.0, 3.0, 1.0], [3.0, 1.0, 1.0, 3.0], [1.0, 1.0, 3.0, 3.0]] * 6)
    for torch_fn, tg_fn in ((lambda x: torch.topk(x, 5, dim=0), lambda x: tapegrad.topk(x, 5, dim=0)),
                            (lambda x: torch.kthvalue(x, 7, dim=0), lambda x: tapegrad.kthvalue(x, 7, dim=0)),
                            (lambda x: torch.mode(x, 0), lambda x: tapegrad.mode(x, 0))):
        tx = torch.tensor(a, requires_grad=True)
        gx = tapegrad.tensor(a, requires_grad=True)
        expected, got = torch_fn(tx), tg_fn(gx)
        np.testing.assert_array_equal(got.indices.numpy(), expected.indices.numpy())
        expected.values.sum().backward()
        got.values.sum().backward()
        np.testing.assert_array_equal(gx.grad.numpy(), tx.grad.numpy())


def test_multinomial_zero_probabilities_as_torch():
    """Without replacement, torch samples through topk: the zero-probability categories tie (0 / q)."""
    p = np.array([[0.0, 0.0, 0.5, 0.0, 0.5, 0.0, 0.0]] * 3, np.float32)
    torch.manual_seed(3)
    tapegrad.manual_seed(3)
    np.testing.assert_array_equal(tapegrad.multinomial(tapegrad.tensor(p), 6).numpy(),
                                  torch.multinomial(torch.from_numpy(p), 6).numpy())


@pytest.mark.parametrize("case", [
    lambda L: L.topk(L.tensor([True, False]), 1),
    lambda L: L.topk(L.tensor(True), 1),
    lambda L: L.kthvalue(L.tensor([True, False]), 1),
    lambda L: L.kthvalue(L.tensor(True), 1),
])
def test_bool_topk_kthvalue_as_torch(case):
    expected = _outcome(lambda: case(torch).values)
    got = _outcome(lambda: case(tapegrad).values)
    assert got == expected
