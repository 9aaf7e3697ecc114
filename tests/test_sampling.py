"""Random draws on torch's CPU streams against torch 2.13: the Tensor fills (exponential_, random_, log_normal_,
cauchy_, geometric_), torch.normal's overloads, poisson, randint_like, rrelu, the alpha / feature dropouts,
dropout3d and gumbel_softmax. Values are compared bit for bit (and the generators' states after the draw),
except where torch computes with vectorised libm-like code (gumbel_softmax's log), compared to an ulp or so."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad
import tapegrad.nn.functional as TF
import torch.nn.functional as F
from tapegrad import random as R

SEEDS = [0, 7, 2 ** 40 + 3]


def arr(t):
    t = t.detach()
    return t.float().numpy() if t.dtype == torch.bfloat16 else np.asarray(t.numpy())


def tarr(t):
    t = t.detach()
    return np.asarray(t._data).astype(np.float32) if t._data.dtype.name == "bfloat16" else np.asarray(t._data)


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if got.dtype.kind == "f":
        got, want = got.reshape(-1).view(f"u{got.itemsize}"), want.reshape(-1).view(f"u{want.itemsize}")
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} of {got.size} differ, first at {bad[:5]}"


def same_values(got, want):
    """Equal values (0.0 == -0.0): tapegrad's backward of a product by zero may give +0.0 where torch's gives -0.0."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def same_state():
    same_bits(np.asarray(tapegrad.get_rng_state()._data), torch.get_rng_state().numpy())


def seed_both(seed):
    torch.manual_seed(seed)
    tapegrad.manual_seed(seed)


def outcome(fn):
    """(value or (exception type name, message), warnings' messages)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
        except Exception as e:  # noqa: BLE001  (compared with torch's)
            value = (type(e).__name__, str(e))
    return value, [str(w.message).split(" (Triggered internally")[0] for w in caught]


def same_outcome(torch_fn, tg_fn, seed=0):
    torch.manual_seed(seed)
    want, want_w = outcome(torch_fn)
    tapegrad.manual_seed(seed)
    got, got_w = outcome(tg_fn)
    assert got_w == want_w
    if isinstance(want, tuple) or isinstance(got, tuple):
        assert got == want
    else:
        same_bits(tarr(got), arr(want))
        assert str(got.dtype) == str(want.dtype)
    same_state()


# ------------------------------------------------------------------------------ the in-place fills

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "int16", "int8", "uint8", "bool"]
FILLS = [("exponential_", (), {}), ("exponential_", (2.5,), {}), ("exponential_", (), {"lambd": 0.1}),
         ("exponential_", (-1.0,), {}), ("exponential_", (0.0,), {}), ("exponential_", (float("nan"),), {}),
         ("exponential_", (float("inf"),), {}),
         ("cauchy_", (), {}), ("cauchy_", (1.5, 2.0), {}), ("cauchy_", (), {"median": -3.0, "sigma": 0.25}),
         ("cauchy_", (0.0, 0.0), {}),
         ("log_normal_", (), {}), ("log_normal_", (0.3, 0.7), {}), ("log_normal_", (0.0, -1.0), {}),
         ("geometric_", (0.3,), {}), ("geometric_", (), {"p": 0.9}), ("geometric_", (1.0,), {}),
         ("geometric_", (0.0,), {}),
         ("random_", (), {}), ("random_", (5,), {}), ("random_", (-3, 4), {}), ("random_", (-3, None), {}),
         ("random_", (300,), {}), ("random_", (-2 ** 63, None), {}), ("random_", (2 ** 40,), {}),
         ("random_", (0, 2 ** 40), {}), ("random_", (3, 3), {}), ("random_", (0, -1), {}),
         ("random_", (2 ** 53 + 1,), {}), ("random_", (2 ** 24 + 1,), {}), ("random_", (-5, 2 ** 24 + 3), {}),
         ("random_", (2 ** 60, None), {}), ("random_", (0, 2 ** 29), {}), ("random_", (-2 ** 31, 2 ** 31 - 1), {}),
         ("random_", (), {"to": 7}), ("random_", (), {"from": 2, "to": 9}), ("random_", (1,), {"to": 2 ** 30})]


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("name, args, kwargs", FILLS, ids=[f"{n}{a}{k}" for n, a, k in FILLS])
def test_fill_matches_torch(name, args, kwargs, dtype):
    def run(lib):
        big = getattr(lib.zeros(2000, dtype=getattr(lib, dtype)), name)(*args, **kwargs)
        small = getattr(lib.zeros(3, 5, dtype=getattr(lib, dtype)), name)(*args, **kwargs)
        return lib.cat([big.reshape(-1), small.reshape(-1)])
    same_outcome(lambda: run(torch), lambda: run(tapegrad), seed=11)


@pytest.mark.parametrize("name, args", [("exponential_", ()), ("cauchy_", ()), ("log_normal_", ()),
                                        ("geometric_", (0.4,)), ("random_", ()), ("random_", (10,))])
def test_fill_generator_and_grad_rules(name, args):
    g1, g2 = torch.Generator().manual_seed(5), tapegrad.Generator().manual_seed(5)
    want = getattr(torch.empty(40), name)(*args, generator=g1)
    got = getattr(tapegrad.empty(40), name)(*args, generator=g2)
    same_bits(tarr(got), arr(want))
    same_bits(np.asarray(g2.get_state()._data), g1.get_state().numpy())
    for lib in (torch, tapegrad):   # a leaf that requires grad is refused; a non-leaf gets a zero gradient
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            getattr(lib.zeros(3, requires_grad=True), name)(*args)
    x, tx = tapegrad.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    y, ty = x * 2, tx * 2
    getattr(y, name)(*args)
    getattr(ty, name)(*args)
    (y * 3).sum().backward()
    (ty * 3).sum().backward()
    same_bits(tarr(x.grad), arr(tx.grad))


def test_random_rejects_non_integers():
    for lib in (torch, tapegrad):
        with pytest.raises(TypeError):
            lib.zeros(3).random_(2.5)


@pytest.mark.parametrize("low, high, dtype", [(0, 2 ** 30, "int64"), (-5, 2 ** 29, "int32"), (0, 2 ** 28, "int64"),
                                              (0, 2 ** 28 - 1, "int64"), (3, 2 ** 31, "float64")])
def test_randint_draws_random64_from_2_to_28(low, high, dtype):
    same_outcome(lambda: torch.randint(low, high, (50,), dtype=getattr(torch, dtype)),
                 lambda: tapegrad.randint(low, high, (50,), dtype=getattr(tapegrad, dtype)), seed=3)


# ------------------------------------------------------------------------------ torch.normal


def _pair(shape_m, shape_s, dtype="float32", neg=False):
    rng = np.random.default_rng(0)
    m = rng.standard_normal(shape_m).astype(dtype)
    s = np.abs(rng.standard_normal(shape_s)).astype(dtype) * (-1 if neg else 1)
    return m, s


NORMAL_CASES = ["tt", "tt_broadcast", "tt_mixed", "tf", "ft", "ff", "ff64", "tf_neg", "tt_neg", "ff_neg", "int",
                "tt_bad_shape", "tf_large", "tt64"]


@pytest.mark.parametrize("case", NORMAL_CASES)
@pytest.mark.parametrize("seed", SEEDS)
def test_normal_overloads_match_torch(case, seed):
    m, s = _pair((5, 4), (5, 4))
    calls = {
        "tt": lambda L: L.normal(L.tensor(m), L.tensor(s)),
        "tt_broadcast": lambda L: L.normal(L.tensor(m[:, :1]), L.tensor(s[0])),
        "tt_mixed": lambda L: L.normal(L.tensor(m), L.tensor(s.astype(np.float64))),
        "tt64": lambda L: L.normal(L.tensor(m.astype(np.float64)), L.tensor(s)),
        "tf": lambda L: L.normal(L.tensor(m), 2.5),
        "tf_large": lambda L: L.normal(L.tensor(np.tile(m, (10, 1))), 0.5),
        "ft": lambda L: L.normal(-1.5, L.tensor(s)),
        "ff": lambda L: L.normal(1.0, 2.0, (3, 7)),
        "ff64": lambda L: L.normal(1.0, 2.0, size=(40,), dtype=L.float64),
        "tf_neg": lambda L: L.normal(L.tensor(m), -1.0),
        "tt_neg": lambda L: L.normal(L.tensor(m), L.tensor(-s)),
        "ff_neg": lambda L: L.normal(0.0, -2.0, (2,)),
        "int": lambda L: L.normal(L.zeros(3, dtype=L.int64), 1.0),
        "tt_bad_shape": lambda L: L.normal(L.zeros(4), L.ones(2, 2)),
    }
    same_outcome(lambda: calls[case](torch), lambda: calls[case](tapegrad), seed=seed)


def test_normal_out_generator_and_gradients():
    m, s = _pair((6,), (6,))
    g1, g2 = torch.Generator().manual_seed(9), tapegrad.Generator().manual_seed(9)
    o1, o2 = torch.empty(6, dtype=torch.float64), tapegrad.empty(6, dtype=tapegrad.float64)
    r1 = torch.normal(torch.tensor(m), torch.tensor(s), generator=g1, out=o1)
    r2 = tapegrad.normal(tapegrad.tensor(m), tapegrad.tensor(s), generator=g2, out=o2)
    assert r2 is o2 and r1 is o1
    same_bits(tarr(o2), arr(o1))
    for overload in ("tt", "tf", "ft"):
        tm, ts = torch.tensor(m, requires_grad=True), torch.tensor(s, requires_grad=True)
        gm, gs = tapegrad.tensor(m, requires_grad=True), tapegrad.tensor(s, requires_grad=True)
        args = {"tt": ((tm, ts), (gm, gs)), "tf": ((tm, 2.0), (gm, 2.0)), "ft": ((1.0, ts), (1.0, gs))}[overload]
        seed_both(1)
        want, got = torch.normal(*args[0]), tapegrad.normal(*args[1])
        same_bits(tarr(got), arr(want))
        assert got.requires_grad == want.requires_grad
        (want * 3).sum().backward()
        (got * 3).sum().backward()
        for a, b in ((tm, gm), (ts, gs)):
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                same_bits(tarr(b.grad), arr(a.grad))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        tapegrad.normal(tapegrad.zeros(2, requires_grad=True), 1.0, out=tapegrad.empty(2))


# ------------------------------------------------------------------------------ poisson, randint_like


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_poisson_matches_torch(dtype):
    rates = np.array([0.0, 0.5, 3.0, 9.99, 10.0, 15.5, 100.0, 1e4, 6e4] * 20, dtype)
    same_outcome(lambda: torch.poisson(torch.tensor(rates)), lambda: tapegrad.poisson(tapegrad.tensor(rates)), 4)
    g1, g2 = torch.Generator().manual_seed(2), tapegrad.Generator().manual_seed(2)
    same_bits(tarr(tapegrad.poisson(tapegrad.tensor(rates).reshape(9, 20), g2)),
              arr(torch.poisson(torch.tensor(rates).reshape(9, 20), g1)))


def test_poisson_errors_and_gradient():
    for bad in (lambda L: L.poisson(L.tensor([1.0, -1.0])), lambda L: L.poisson(L.tensor([1, 2]))):
        same_outcome(lambda: bad(torch), lambda: bad(tapegrad))
    r1, r2 = torch.tensor([1.0, 20.0], requires_grad=True), tapegrad.tensor([1.0, 20.0], requires_grad=True)
    torch.poisson(r1).sum().backward()
    tapegrad.poisson(r2).sum().backward()
    same_bits(tarr(r2.grad), arr(r1.grad))


@pytest.mark.parametrize("args, kwargs", [((5,), {}), ((2, 5), {}), ((-3, 3), {"dtype": "int32"}),
                                          ((2 ** 30,), {"dtype": "int64"}), ((5, 3), {}), ((7,), {"dtype": "uint8"}),
                                          ((3,), {"dtype": "float64"})])
def test_randint_like_matches_torch(args, kwargs):
    def call(L):
        kw = {k: getattr(L, v) for k, v in kwargs.items()}
        return L.randint_like(L.zeros(4, 6), *args, **kw)
    same_outcome(lambda: call(torch), lambda: call(tapegrad), seed=8)
    g1, g2 = torch.Generator().manual_seed(3), tapegrad.Generator().manual_seed(3)
    same_bits(tarr(tapegrad.randint_like(tapegrad.zeros(9, dtype=tapegrad.int64), 1, 100, generator=g2)),
              arr(torch.randint_like(torch.zeros(9, dtype=torch.int64), 1, 100, generator=g1)))
    t = tapegrad.randint_like(tapegrad.zeros(3), 4, requires_grad=True)
    assert t.requires_grad and t.is_leaf


# ------------------------------------------------------------------------------ rrelu


def _inputs(shape=(6, 7), dtype=np.float32, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    x.reshape(-1)[::5] = 0.0
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("bounds", [(1 / 8, 1 / 3), (0.1, 0.3), (0.2, 0.2), (-0.5, 0.2)])
def test_rrelu_matches_torch(bounds, training, dtype):
    x = _inputs(dtype=dtype)
    xt, xg = torch.tensor(x, requires_grad=True), tapegrad.tensor(x, requires_grad=True)
    seed_both(3)
    want, got = torch.rrelu(xt, *bounds, training), tapegrad.rrelu(xg, *bounds, training)
    same_bits(tarr(got), arr(want))
    same_state()
    w = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    (want * torch.tensor(w)).sum().backward()
    (got * tapegrad.tensor(w)).sum().backward()
    same_values(tarr(xg.grad), arr(xt.grad))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("training", [True, False])
def test_rrelu_reduced_floats(dtype, training):
    """Computed in float and rounded once (torch's opmath); float16 has no training kernel in torch."""
    x = _inputs()
    same_outcome(lambda: torch.rrelu(torch.tensor(x).to(getattr(torch, dtype)), 0.1, 0.3, training),
                 lambda: tapegrad.rrelu(tapegrad.tensor(x).to(getattr(tapegrad, dtype)), 0.1, 0.3, training), seed=3)
    if not training:
        xt = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
        xg = tapegrad.tensor(x).to(getattr(tapegrad, dtype)).requires_grad_()
        w = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
        (torch.rrelu(xt, 0.1, 0.3) * torch.tensor(w).to(xt.dtype)).sum().backward()
        (tapegrad.rrelu(xg, 0.1, 0.3) * tapegrad.tensor(w).to(xg.dtype)).sum().backward()
        same_values(tarr(xg.grad), arr(xt.grad))


def test_rrelu_forms_modules_and_errors():
    x = _inputs()
    for training in (True, False):
        seed_both(5)
        a, b = torch.tensor(x), tapegrad.tensor(x)
        ra, rb = F.rrelu(a, 0.1, 0.4, training, inplace=True), TF.rrelu(b, 0.1, 0.4, training, inplace=True)
        assert ra is a and rb is b
        same_bits(tarr(b), arr(a))
        seed_both(5)
        a, b = torch.tensor(x), tapegrad.tensor(x)
        torch.rrelu_(a, 0.1, 0.4, training)
        tapegrad.rrelu_(b, 0.1, 0.4, training)
        F.rrelu_(a)
        TF.rrelu_(b)
        same_bits(tarr(b), arr(a))
        same_state()
    g1, g2 = torch.Generator().manual_seed(4), tapegrad.Generator().manual_seed(4)
    same_bits(tarr(tapegrad.rrelu(tapegrad.tensor(x), 0.1, 0.3, True, g2)),
              arr(torch.rrelu(torch.tensor(x), 0.1, 0.3, True, g1)))
    m1, m2 = torch.nn.RReLU(0.1, 0.3, True), tapegrad.nn.RReLU(0.1, 0.3, True)
    assert repr(m2) == repr(m1) and repr(tapegrad.nn.RReLU()) == repr(torch.nn.RReLU())
    for mode in ("train", "eval"):
        getattr(m1, mode)()
        getattr(m2, mode)()
        seed_both(6)
        same_bits(tarr(m2(tapegrad.tensor(x))), arr(m1(torch.tensor(x))))
    assert m2.state_dict().keys() == m1.state_dict().keys()
    for bad in (lambda L: L.rrelu(L.zeros(3), 0.5, 0.2, True), lambda L: L.rrelu(L.zeros(3), 0.5, 0.2, False),
                lambda L: L.rrelu(L.zeros(3, dtype=L.int64), 0.1, 0.2, True),
                lambda L: L.rrelu(L.zeros(3, dtype=L.int64), 0.1, 0.2, False)):
        same_outcome(lambda: bad(torch), lambda: bad(tapegrad))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        TF.rrelu(tapegrad.zeros(3, requires_grad=True), training=True, inplace=True)


# ------------------------------------------------------------------------------ dropouts


DROPS = [("alpha_dropout", 0.3, True), ("alpha_dropout", 0.5, True), ("alpha_dropout", 0.3, False),
         ("alpha_dropout", 0.0, True), ("alpha_dropout", 1.0, True), ("feature_alpha_dropout", 0.4, True),
         ("feature_alpha_dropout", 1.0, True), ("feature_dropout", 0.25, True), ("feature_dropout", 1.0, True),
         ("feature_dropout", 0.25, False), ("alpha_dropout", 1.5, True), ("feature_dropout", -0.1, True)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, p, train", DROPS)
def test_aten_dropouts_match_torch(name, p, train, dtype):
    x = _inputs((4, 3, 5), dtype)
    xt, xg = torch.tensor(x, requires_grad=True), tapegrad.tensor(x, requires_grad=True)
    torch.manual_seed(2)
    want, _ = outcome(lambda: getattr(torch, name)(xt, p, train))
    tapegrad.manual_seed(2)
    got, _ = outcome(lambda: getattr(tapegrad, name)(xg, p, train))
    same_state()
    if isinstance(want, tuple):
        assert got == want
        return
    same_bits(tarr(got), arr(want))
    w = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    (want * torch.tensor(w)).sum().backward()
    (got * tapegrad.tensor(w)).sum().backward()
    same_values(tarr(xg.grad), arr(xt.grad))
    # the in-place forms write the same values into the input
    a, b = torch.tensor(x), tapegrad.tensor(x)
    seed_both(2)
    ra, rb = getattr(torch, name + "_")(a, p, train), getattr(tapegrad, name + "_")(b, p, train)
    assert (ra is a) and (rb is b)
    same_bits(tarr(b), arr(a))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout", "feature_dropout"])
def test_aten_dropouts_reduced_floats(name, dtype):
    x = _inputs((4, 3, 5))
    same_outcome(lambda: getattr(torch, name)(torch.tensor(x).to(getattr(torch, dtype)), 0.3, True),
                 lambda: getattr(tapegrad, name)(tapegrad.tensor(x).to(getattr(tapegrad, dtype)), 0.3, True), seed=3)


def test_feature_dropout_needs_two_dims():
    for name in ("feature_dropout", "feature_alpha_dropout"):
        same_outcome(lambda: getattr(torch, name)(torch.ones(5), 0.5, True),
                     lambda: getattr(tapegrad, name)(tapegrad.ones(5), 0.5, True))


@pytest.mark.parametrize("shape", [(2, 3, 2, 2, 2), (3, 2, 2, 2), (2, 3, 4), (2, 3, 2, 2, 2, 2)])
@pytest.mark.parametrize("inplace", [False, True])
def test_dropout3d_matches_torch(shape, inplace):
    x = _inputs(shape)
    same_outcome(lambda: F.dropout3d(torch.tensor(x), 0.4, True, inplace),
                 lambda: TF.dropout3d(tapegrad.tensor(x), 0.4, True, inplace), seed=1)
    same_outcome(lambda: F.dropout3d(torch.tensor(x), 0.4, False, inplace),
                 lambda: TF.dropout3d(tapegrad.tensor(x), 0.4, False, inplace), seed=1)


@pytest.mark.parametrize("fname", ["alpha_dropout", "feature_alpha_dropout", "dropout3d"])
def test_functional_dropouts_and_modules(fname):
    x = _inputs((2, 3, 2, 2, 2))
    for p, training, inplace in ((0.3, True, False), (0.3, False, False), (0.3, True, True), (1.2, True, False)):
        same_outcome(lambda: getattr(F, fname)(torch.tensor(x), p, training, inplace),
                     lambda: getattr(TF, fname)(tapegrad.tensor(x), p, training, inplace), seed=4)
    mod = {"alpha_dropout": "AlphaDropout", "feature_alpha_dropout": "FeatureAlphaDropout",
           "dropout3d": "Dropout3d"}[fname]
    m1, m2 = getattr(torch.nn, mod)(0.2), getattr(tapegrad.nn, mod)(0.2)
    assert repr(m2) == repr(m1)
    assert repr(getattr(tapegrad.nn, mod)(inplace=True)) == repr(getattr(torch.nn, mod)(inplace=True))
    same_outcome(lambda: m1(torch.tensor(x)), lambda: m2(tapegrad.tensor(x)), seed=5)
    m1.eval()
    m2.eval()
    same_outcome(lambda: m1(torch.tensor(x)), lambda: m2(tapegrad.tensor(x)), seed=5)
    for bad in (-0.1, 1.1):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            getattr(tapegrad.nn, mod)(bad)


# ------------------------------------------------------------------------------ gumbel_softmax


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("dim", [-1, 0])
def test_gumbel_softmax_matches_torch(hard, dim, dtype):
    logits = np.random.default_rng(0).standard_normal((5, 6)).astype(dtype)
    lt, lg = torch.tensor(logits, requires_grad=True), tapegrad.tensor(logits, requires_grad=True)
    seed_both(12)
    want = F.gumbel_softmax(lt, tau=0.7, hard=hard, dim=dim)
    got = TF.gumbel_softmax(lg, tau=0.7, hard=hard, dim=dim)
    same_state()
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(tarr(got), arr(want), rtol=tol, atol=tol)
    if hard:
        same_bits(tarr(got), arr(want))  # exactly one-hot, the same index
    w = np.random.default_rng(2).standard_normal(logits.shape).astype(dtype)
    (want * torch.tensor(w)).sum().backward()
    (got * tapegrad.tensor(w)).sum().backward()
    np.testing.assert_allclose(tarr(lg.grad), arr(lt.grad), rtol=tol * 10, atol=tol * 10)


def test_gumbel_softmax_eps_warning():
    for fn, lib in ((F.gumbel_softmax, torch), (TF.gumbel_softmax, tapegrad)):
        with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
            fn(lib.zeros(2, 3), eps=1e-5)


def test_sampling_draws_keep_generator_state_in_step():
    """An interleaving of the new draws with the old ones leaves both generators alike."""
    seed_both(21)
    for lib in (torch, tapegrad):
        lib.empty(5).exponential_()
        lib.randn(3)
        lib.empty(4, dtype=lib.float64).log_normal_()
        lib.rand(2)
        lib.poisson(lib.tensor([3.0, 30.0]))
        lib.empty(3).random_()
        lib.rrelu(lib.tensor([-1.0, 2.0]), 0.1, 0.3, True)
        lib.alpha_dropout(lib.ones(4, 4), 0.2, True)
    same_state()
    assert R.default_generator is tapegrad.random.default_generator


# ------------------------------------------------------------------------------ binomial


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binomial_matches_torch(dtype):
    rng = np.random.default_rng(0)
    count = np.concatenate([rng.integers(0, 50, 150), rng.integers(50, 5000, 150), [0, 1, 3, 1e6, 2 ** 20 + 1]])
    prob = np.concatenate([rng.random(300), [0.5, 0.0, 1.0, 0.3, 0.99]])
    prob[::7] = np.round(prob[::7], 1)
    count, prob = count.astype(dtype), prob.astype(dtype)
    same_outcome(lambda: torch.binomial(torch.tensor(count), torch.tensor(prob)),
                 lambda: tapegrad.binomial(tapegrad.tensor(count), tapegrad.tensor(prob)), seed=1)
    g1, g2 = torch.Generator().manual_seed(6), tapegrad.Generator().manual_seed(6)
    same_bits(tarr(tapegrad.binomial(tapegrad.tensor(count[:40]).reshape(5, 8), tapegrad.tensor(prob[:8]), g2)),
              arr(torch.binomial(torch.tensor(count[:40]).reshape(5, 8), torch.tensor(prob[:8]), g1)))


def test_binomial_errors_and_gradient():
    bad = [lambda L: L.binomial(L.tensor([5.0]), L.tensor([0.5], dtype=L.float64)),
           lambda L: L.binomial(L.tensor([5]), L.tensor([0.5])),
           lambda L: L.binomial(L.tensor([5.0]), L.tensor([1])),
           lambda L: L.binomial(L.tensor([5.0], dtype=L.float16), L.tensor([0.5], dtype=L.float16)),
           lambda L: L.binomial(L.tensor([5.0]), 0.5),
           lambda L: L.binomial(L.tensor([5.0]), L.tensor([0.5, 0.2]))]
    for fn in bad:
        same_outcome(lambda: fn(torch), lambda: fn(tapegrad))
    for lib in (torch, tapegrad):
        c = lib.tensor([5.0, 7.0], requires_grad=True)
        y = lib.binomial(c, lib.tensor([0.5, 0.25]))
        assert y.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
            y.sum().backward()
