"""Silent wrong values and dtypes (issue 16): every op's result dtype against torch's type promotion, integer
true division, create_graph through piecewise-linear ops, and the smaller value defects. torch 2.13 is the
oracle, computed live in each test."""
import itertools
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
SCALARS = {"int": 2, "float": 2.5, "bool": True}


def _make(lib, dtype, shape):
    values = [1, 2, 3, 0, 1, 2][: int(np.prod(shape))] if shape else 2
    return lib.tensor(np.reshape(values, shape).tolist(), dtype=getattr(lib, dtype))


def _outcome(fn):
    """The result's dtype name, or the exception's type name."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    if isinstance(r, tuple):
        r = r[0]
    return str(r.dtype).replace("torch.", "") if hasattr(r, "dtype") else type(r).__name__


BINARY = {
    "add": lambda L, a, b: L.add(a, b), "sub": lambda L, a, b: L.sub(a, b), "mul": lambda L, a, b: L.mul(a, b),
    "div": lambda L, a, b: L.div(a, b), "true_divide": lambda L, a, b: L.true_divide(a, b),
    "a / b": lambda L, a, b: a / b, "b / a": lambda L, a, b: b / a, "b + a": lambda L, a, b: b + a,
    "b - a": lambda L, a, b: b - a, "b * a": lambda L, a, b: b * a, "a ** b": lambda L, a, b: a ** b,
    "b ** a": lambda L, a, b: b ** a, "maximum": lambda L, a, b: L.maximum(a, b),
    "minimum": lambda L, a, b: L.minimum(a, b), "atan2": lambda L, a, b: L.atan2(a, b),
    "a == b": lambda L, a, b: a == b, "a < b": lambda L, a, b: a < b,
    "where": lambda L, a, b: L.where(L.tensor(True), a, b),
}
# (left shape, right shape): tensor-tensor, n-d with 0-d (both ways); the right operand may be a Python scalar
_PAIRS = [(da, db, sa, sb) for da, db in itertools.product(DTYPES, DTYPES + list(SCALARS))
          for sa, sb in (((3,), (3,)), ((3,), ()), ((), (3,))) if not (db in SCALARS and sb != ())]


# maximum, minimum and atan2 refuse a Python number as torch's do (the same TypeError): compared like the rest
TAKES_NUMBERS = set()


@pytest.mark.parametrize("name", list(BINARY))
def test_every_binary_op_promotes_every_pair_of_dtypes_as_torch(name):
    fn, wrong = BINARY[name], []
    for da, db, sa, sb in _PAIRS:
        if name in TAKES_NUMBERS and db in SCALARS:
            continue
        def outcome(L):
            a = _make(L, da, sa)
            b = SCALARS[db] if db in SCALARS else _make(L, db, sb)
            return _outcome(lambda: fn(L, a, b))
        want, got = outcome(torch), outcome(tg)
        if want != got:
            wrong.append(f"{da}{list(sa)} {name} {db}{list(sb)}: torch {want}, tapegrad {got}")
    assert not wrong, "\n".join(wrong)


def _functional(name):
    return lambda L, x: getattr(L.nn.functional, name)(x)


UNARY = {n: (lambda n: lambda L, x: getattr(L, n)(x))(n) for n in (
    "neg", "abs", "exp", "log", "sqrt", "sigmoid", "relu", "floor", "ceil", "round", "trunc", "sign", "square",
    "tanh", "sin", "cos", "reciprocal", "rsqrt", "erf", "log1p", "expm1", "log2", "exp2", "asin", "atan", "sinh",
    "sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "all", "any", "var", "std", "norm",
    "clone", "isnan", "logical_not", "t", "flatten")}
UNARY.update({
    "sum(0)": lambda L, x: x.sum(0), "mean(0)": lambda L, x: x.mean(0), "prod(0)": lambda L, x: x.prod(0),
    "cumsum(0)": lambda L, x: x.cumsum(0), "max(0)": lambda L, x: x.max(0), "all(0)": lambda L, x: x.all(0),
    "sum(dtype=float64)": lambda L, x: x.sum(dtype=L.float64), "prod(dtype=int32)": lambda L, x: x.prod(dtype=L.int32),
    "logsumexp(0)": lambda L, x: L.logsumexp(x, 0), "softmax(0)": lambda L, x: L.softmax(x, 0),
    "log_softmax(0)": lambda L, x: L.log_softmax(x, 0), "clamp(0, 1)": lambda L, x: L.clamp(x, 0, 1),
    "clamp(0.5, 1.5)": lambda L, x: L.clamp(x, 0.5, 1.5), "clamp(min=0.5)": lambda L, x: L.clamp(x, min=0.5),
    **{f"F.{n}": _functional(n) for n in ("gelu", "silu", "leaky_relu", "elu", "hardtanh", "softplus", "relu")},
})


@pytest.mark.parametrize("name", list(UNARY))
def test_every_unary_op_and_reduction_gives_torchs_dtype_for_every_dtype(name):
    fn, wrong = UNARY[name], []
    for dtype, shape in itertools.product(DTYPES, ((2, 3), ())):
        want = _outcome(lambda: fn(torch, _make(torch, dtype, shape)))
        got = _outcome(lambda: fn(tg, _make(tg, dtype, shape)))
        if want != got:
            wrong.append(f"{name}({dtype}{list(shape)}): torch {want}, tapegrad {got}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("case", [
    "L.tensor([1, 2, 3]) / 2", "L.tensor([1, 0, -1]) / 0", "L.tensor([1, 2, 3]) / L.tensor([2, 2, 2])",
    "L.tensor([7, -7], dtype=L.int8) / L.tensor(2, dtype=L.int8)", "3 / L.tensor([2, 0])",
    "L.tensor([True, False]) / 2", "L.div(L.tensor([5, 6]), 4)", "L.atan2(L.tensor([1, 0]), L.tensor([0, 0]))",
    "L.tensor([1, 2], dtype=L.int32).sum()", "L.tensor([100, 100], dtype=L.int8).sum()",
    "L.tensor([[100, 100]], dtype=L.uint8).sum(1)", "L.tensor([2, 3]) ** 2", "L.tensor([True, True]).sum()",
])
def test_integer_arithmetic_gives_torchs_values_and_dtype(case):
    want, got = eval(case, {"L": torch}), eval(case, {"L": tg})  # noqa: S307 - fixed expressions above
    assert str(got.dtype).replace("tapegrad.", "torch.") == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("case", [
    "L.tensor([1, 2]) ** -1", "L.tensor([True]) - L.tensor([True])", "L.tensor([True]) - 1",
    "1 - L.tensor([True])", "-L.tensor([True])",
    "L.relu(L.tensor([True]))", "L.nn.functional.gelu(L.tensor([1]))", "L.tensor([True]).argmax()",
    "L.nn.functional.hardtanh(L.tensor([1], dtype=L.uint8))", "True ** L.tensor([True])",
])
def test_integer_and_bool_errors_are_torchs(case):
    with pytest.raises(Exception) as want:
        eval(case, {"L": torch})  # noqa: S307
    with pytest.raises(type(want.value)) as got:
        eval(case, {"L": tg})  # noqa: S307
    assert str(got.value) == str(want.value)


# -- create_graph through piecewise-linear ops -----------------------------------------------------------
PIECEWISE = {
    "relu": lambda L, x: L.relu(x), "F.relu": lambda L, x: L.nn.functional.relu(x),
    "leaky_relu": lambda L, x: L.nn.functional.leaky_relu(x, 0.1),
    "hardtanh": lambda L, x: L.nn.functional.hardtanh(x), "abs": lambda L, x: L.abs(x),
    "amax": lambda L, x: x.amax(), "max": lambda L, x: x.max(), "min": lambda L, x: x.min(),
    "max(0)": lambda L, x: x.max(0)[0], "maximum": lambda L, x: L.maximum(x, L.zeros(4)),
    "minimum": lambda L, x: L.minimum(x, L.zeros(4)), "clamp": lambda L, x: x.clamp(-1, 1),
    "clamp_min": lambda L, x: x.clamp(min=0), "floor": lambda L, x: L.floor(x), "sign": lambda L, x: L.sign(x),
    "where": lambda L, x: L.where(x > 0, x, 0.0), "norm(1)": lambda L, x: x.norm(1),
    "l1_loss": lambda L, x: L.nn.functional.l1_loss(x, L.zeros(4)),
    "smooth_l1_loss": lambda L, x: L.nn.functional.smooth_l1_loss(x, L.zeros(4)),
    "relu * x": lambda L, x: L.relu(x) * x,
}


ZERO_RULES = {"floor", "sign"}  # torch's derivative is zeros_like(grad), which never requires grad


@pytest.mark.parametrize("name", list(PIECEWISE))
@pytest.mark.parametrize("weighted", [False, True])
def test_create_graph_through_piecewise_linear_ops_requires_grad_and_differentiates_as_torch(name, weighted):
    """torch's first gradient requires grad where its backward reads the input (relu's threshold_backward);
    the second gradient is then torch's (zeros for a piecewise-linear op)."""
    def run(L):
        x = L.tensor([-1.5, 0.5, 2.0, -0.25], requires_grad=True)
        w = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=weighted)
        y = PIECEWISE[name](L, x)
        (g,) = L.autograd.grad((y * (w if y.ndim else w.sum())).sum(), x, create_graph=True)
        if not g.requires_grad:
            return g.detach().numpy(), False, None
        (h,) = L.autograd.grad((g * L.tensor([1.0, -1.0, 0.5, 2.0])).sum(), x, allow_unused=True)
        return g.detach().numpy(), True, None if h is None else (h.numpy(force=True) if L is torch else h.numpy())
    want, got = run(torch), run(tg)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    if name in ZERO_RULES and weighted:  # tapegrad's `0 * g` requires grad when g does; its gradient is zeros
        assert got[1] and not np.any(got[2])
        return
    assert got[1] == want[1]
    if want[2] is not None:
        np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


def test_hessian_of_a_relu_network_is_torchs():
    rng = np.random.default_rng(0)
    w1, w2, x0 = rng.standard_normal((5, 3)), rng.standard_normal((1, 5)), rng.standard_normal(3)

    def hessian(L):
        a, b = L.tensor(w1), L.tensor(w2)

        def f(x):
            h = L.nn.functional.leaky_relu(L.relu(a @ x) - 0.1, 0.2)
            return (b @ L.nn.functional.hardtanh(h)).sum() + (x * x).sum()
        return L.autograd.functional.hessian(f, L.tensor(x0)).numpy()
    np.testing.assert_allclose(hessian(tg), hessian(torch), rtol=1e-12)
    np.testing.assert_allclose(hessian(tg), 2 * np.eye(3))


# -- smaller value defects ------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    "L.tensor([2**63])", "L.tensor([2**64])", "L.tensor(2**63)", "L.tensor([-2**63 - 1])", "L.tensor([1, 2**63])",
    "L.tensor([[1], [2**63]])", "L.tensor([2**63], dtype=L.int64)", "L.tensor([300], dtype=L.uint8)",
    "L.tensor([2**31], dtype=L.int32)",
])
def test_an_integer_outside_its_dtype_raises_torchs_overflow_error(case):
    with pytest.raises(Exception) as want:
        eval(case, {"L": torch})  # noqa: S307
    with pytest.raises(type(want.value)) as got:
        eval(case, {"L": tg})  # noqa: S307
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("case", [
    "L.tensor([2**63], dtype=L.float32)", "L.tensor([1.5, 2**63])", "L.tensor([1.5, 2**64])",
    "L.tensor([[2**70], [-1.0]])", "L.tensor([2**63 - 1, -2**63])",
    "L.tensor(1e300)", "L.tensor([float('inf'), 1])", "L.arange(2**62, 2**62 + 3)", "L.arange(2**62, 2**62 + 9, 4)",
    "L.arange(-2**60, -2**60 - 5, -2)", "L.arange(0, 10, 3)", "L.arange(5, dtype=L.int8)", "L.arange(0.5, 3)",
])
def test_large_integers_are_exact_as_torchs(case):
    want, got = eval(case, {"L": torch}), eval(case, {"L": tg})  # noqa: S307
    assert str(got.dtype).replace("tapegrad.", "torch.") == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("shape, chunks, dim", [((2, 0), 3, 1), ((0,), 2, 0), ((2, 0), 1, 1), ((2, 5), 3, 1),
                                                ((2, 0), 3, 0), ((7,), 3, 0), ((1,), 4, 0)])
def test_chunk_gives_torchs_chunks_even_of_an_empty_dim(shape, chunks, dim):
    want = [tuple(c.shape) for c in torch.zeros(shape).chunk(chunks, dim)]
    assert [tuple(c.shape) for c in tg.zeros(shape).chunk(chunks, dim)] == want


@pytest.mark.parametrize("recorded", ["none", "target", "value"])
@pytest.mark.parametrize("key", ["L.tensor([0, 0, 1])", "[2, 0, 2]", "(L.tensor([0, 0]), L.tensor([1, 1]))",
                                 "L.tensor([[1, 1], [1, 0]])"])
def test_assignment_through_duplicate_indices_is_the_last_write_never_a_sum(recorded, key):
    def run(L):
        base = L.arange(12.0).reshape(3, 4) if key.startswith("(") else L.arange(3.0)
        a = base.clone().requires_grad_(recorded == "target")
        x = a * 1
        k = eval(key, {"L": L})  # noqa: S307
        n = np.prod(np.shape(np.zeros(tuple(base.shape))[tuple(np.asarray(i) for i in k) if isinstance(k, tuple)
                                                          else np.asarray(k)]))
        v = L.arange(1.0, n + 1).reshape(np.shape(np.zeros(tuple(base.shape))[
            tuple(np.asarray(i) for i in k) if isinstance(k, tuple) else np.asarray(k)])).requires_grad_(
            recorded == "value")
        x[k] = v * 1
        return x.detach().numpy()
    np.testing.assert_array_equal(run(tg), run(torch))


# -- gradients at special points --------------------------------------------------------------------------------
SPECIAL = {  # op, the special inputs (each padded with ordinary values to lengths 1, 3, 8 and 17)
    "atan2 at (0, 0)": (lambda L, a, b: L.atan2(a, b), [0.0, 0.0], [0.0, -0.0]),
    "x ** 0 at 0 and NaN": (lambda L, a: a ** 0, [0.0, float("nan")]),
    "x ** 0.0 at -0": (lambda L, a: a ** 0.0, [-0.0, 0.0]),
    "x ** y, y = 0": (lambda L, a, b: a ** b, [0.0, float("nan")], [0.0, 0.0]),
    "x ** x at 0": (lambda L, a: a ** a, [0.0, 0.0]),
    "x ** 0.5 at -0": (lambda L, a: a ** 0.5, [-0.0, 0.0]),
    "x ** -0.5 at -0": (lambda L, a: a ** -0.5 * 0 + (a * 1) ** -0.5, [-0.0, 0.0]),
    "max() with NaN": (lambda L, a: a.max(), [float("nan"), 5.0]),
    "min() with NaN": (lambda L, a: a.min(), [float("nan"), -5.0]),
    "amax() with NaN": (lambda L, a: a.amax(), [float("nan"), 5.0]),
    "maximum with NaN": (lambda L, a, b: L.maximum(a, b), [float("nan"), 1.0, float("nan"), 2.0],
                         [1.0, float("nan"), float("nan"), 2.0]),
    "minimum with NaN": (lambda L, a, b: L.minimum(a, b), [float("nan"), 1.0, float("nan"), 2.0],
                         [1.0, float("nan"), float("nan"), 2.0]),
    "huber_loss at +-inf": (lambda L, a, b: L.nn.functional.huber_loss(a, b, reduction="sum", delta=0.5),
                            [float("inf"), -float("inf"), 1.0], [0.0, 0.0, float("inf")]),
    "smooth_l1_loss at +-inf": (lambda L, a, b: L.nn.functional.smooth_l1_loss(a, b, reduction="sum"),
                                [float("inf"), -float("inf"), 1.0], [0.0, 0.0, float("inf")]),
    "norm(inf) with NaN": (lambda L, a: a.norm(float("inf")), [float("nan"), 1.0]),
    "norm(inf, dim) rows with NaN": (lambda L, a: (a.reshape(1, -1) * L.tensor([[1.0], [-2.0]])).norm(
        float("inf"), dim=1), [float("nan"), 1.0]),
}


@pytest.mark.parametrize("name", list(SPECIAL))
@pytest.mark.parametrize("n", [1, 3, 8, 17])
def test_gradients_at_special_points_are_torchs(name, n):
    fn, *specials = SPECIAL[name]
    rng = np.random.default_rng(n)
    columns = [np.concatenate([s, rng.uniform(0.5, 2.0, n)])[:max(n, 1)] for s in specials]

    def grads(L):
        xs = [L.tensor(c, dtype=L.float64, requires_grad=True) for c in columns]
        y = fn(L, *xs)
        y.sum().backward()
        return [y.detach().numpy()] + [x.grad.numpy() for x in xs]
    for got, want in zip(grads(tg), grads(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("n", [2, 3, 8, 17, 33])
@pytest.mark.parametrize("dtype, value", [("float32", 3e37), ("float32", 3e38), ("float64", 1e200),
                                          ("float64", 1e308)])
def test_var_and_std_of_equal_large_values_are_zero(n, dtype, value):
    """torch's own answer here depends on the length (its mean rounds or overflows: inf at some lengths, 0 at
    others), so tapegrad's is the exact one: equal values have no spread. Each group is shifted by its first
    element before the two-pass formula."""
    x = tg.full((n, 2), value, dtype=getattr(tg, dtype))
    for out in (x.var(), x.std(), x.var(0), x.std(0, keepdim=True), x.var(1, correction=0)):
        assert np.all(out.numpy() == 0), out


@pytest.mark.parametrize("n", [1, 3, 8, 17])
@pytest.mark.parametrize("p", [2, 1, 3, float("inf"), 0])
def test_a_float16_norm_accumulates_in_float32_as_torch(n, p):
    values = np.full(n, 300.0)
    want = torch.tensor(values, dtype=torch.float16).norm(p)
    got = tg.tensor(values, dtype=tg.float16).norm(p)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- NumPy's exceptions do not escape where torch raises its own ------------------------------------------------
@pytest.mark.parametrize("case", [
    "L.arange(0, 1e20, 1e-5)", "L.zeros(2**62, 2**62)", "L.ones(2**40, 2**40)", "L.linspace(0, 1, -1)",
    "L.eye(-1)", "L.eye(2, -1)", "L.full((2,), 2**63)", "L.full((2,), 300, dtype=L.uint8)",
    "L.full((2,), 2**31, dtype=L.int32)", "L.full((2,), 2**40, dtype=L.int16)", "L.full((2,), 2**40, dtype=L.int8)",
    "L.zeros(-1)", "L.zeros(2, -1)", "L.ones(2, -3)", "L.empty(-1)", "L.full((-1,), 1.0)", "L.tensor([1, 2]) ** -2", "L.ones(3, dtype=L.int64).mean()",
])
def test_numpys_errors_become_torchs(case):
    with pytest.raises(Exception) as want:
        eval(case, {"L": torch})  # noqa: S307
    with pytest.raises(type(want.value)) as got:
        eval(case, {"L": tg})  # noqa: S307
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name, kw", [("mse_loss", {}), ("smooth_l1_loss", {"beta": 0.7}),
                                      ("huber_loss", {"delta": 0.3})])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("n", [1, 33, 100_000])
def test_a_float32_pointwise_loss_is_its_float32_terms_summed_exactly_then_rounded(name, kw, reduction, n):
    """A reduced pointwise loss of one-shape float32 arrays is one compiled pass (kernels/loss.py): its float32 terms
    (rounded as the NumPy forward rounds them) summed in float64, then rounded once; the oracle is those terms'
    exact sum (math.fsum), which no CPU's SIMD path changes. A NaN or an infinity propagates as in torch."""
    import math
    from tapegrad.ops import loss as L
    from tapegrad.registry import Ctx
    rng = np.random.default_rng(n)
    x, t = (rng.standard_normal(n).astype(np.float32) * 3 for _ in range(2))
    c = np.float32(kw.get("beta", kw.get("delta", 0.0)))
    d = x - t
    if name != "mse_loss":
        d = np.abs(d)
    terms = (d * d if name == "mse_loss" else
             np.where(d < c, np.float32(0.5) * d * d / c, d - np.float32(0.5) * c) if name == "smooth_l1_loss" else
             np.where(d < c, np.float32(0.5) * d * d, c * (d - np.float32(0.5) * c)))
    exact = math.fsum(terms.astype(np.float64).tolist())
    ours = getattr(tg.nn.functional, name)(tg.tensor(x), tg.tensor(t), reduction=reduction, **kw)
    assert ours.dtype == tg.float32
    want = np.float32(exact / n if reduction == "mean" else exact)
    assert abs(float(ours.item()) - float(want)) <= float(np.spacing(want))  # (float64 running sum: within 1 ulp)
    ctx = Ctx(reduction=reduction, beta=kw.get("beta"), delta=kw.get("delta"))
    assert L._pointwise_total(name[:-len("_loss")], ctx, x, t, float(c)) == ours.item()  # (the kernel's value)
    for bad in (np.nan, np.inf):
        x[n // 2] = bad
        got = getattr(tg.nn.functional, name)(tg.tensor(x), tg.tensor(t), reduction=reduction, **kw)
        want = getattr(torch.nn.functional, name)(torch.tensor(x), torch.tensor(t), reduction=reduction, **kw)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
