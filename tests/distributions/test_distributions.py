"""torch.distributions parity with torch 2.13: values, shapes, random streams, reparameterized gradients,
validation errors and KL divergences, each computed by both libraries on the same inputs."""
import math

import numpy as np
import pytest
import torch

import tapegrad as tg
from parity import D, TD, DTYPES, DT_IDS, T, G, arr, close, same, tol, messages



RNG = np.random.default_rng(1234)
LOC = RNG.normal(size=(3, 4))
SCALE = RNG.uniform(0.5, 2.0, size=(4,))
X = RNG.normal(size=(2, 3, 4))
PROBS = RNG.uniform(0.05, 0.95, size=(3, 4))
CONC = RNG.uniform(0.3, 4.0, size=(3, 4))
RATE = RNG.uniform(0.5, 2.0, size=(3, 4))
CAT = RNG.uniform(0.1, 1.0, size=(2, 3, 5))
DIR = RNG.uniform(0.4, 3.0, size=(2, 3))
_A = RNG.normal(size=(2, 3, 3))
COV = _A @ _A.transpose(0, 2, 1) + np.eye(3)
MVN_LOC = RNG.normal(size=(2, 3))


def pair(name, npdt, tdt, gdt, grad=False):
    """The same distribution built by torch and by tapegrad (parameters as leaves when grad)."""
    def both(*arrays):
        return [T(a.astype(npdt), tdt, grad) for a in arrays], [G(a.astype(npdt), gdt, grad) for a in arrays]
    if name == "Normal":
        (a, b), (c, d) = both(LOC, SCALE)
        return TD.Normal(a, b), D.Normal(c, d), (a, b), (c, d)
    if name == "Uniform":
        (a, b), (c, d) = both(LOC, LOC + SCALE)
        return TD.Uniform(a, b), D.Uniform(c, d), (a, b), (c, d)
    if name == "Bernoulli":
        (a,), (c,) = both(PROBS)
        return TD.Bernoulli(a), D.Bernoulli(c), (a,), (c,)
    if name == "BernoulliLogits":
        (a,), (c,) = both(LOC)
        return TD.Bernoulli(logits=a), D.Bernoulli(logits=c), (a,), (c,)
    if name == "Categorical":
        (a,), (c,) = both(CAT)
        return TD.Categorical(a), D.Categorical(c), (a,), (c,)
    if name == "CategoricalLogits":
        (a,), (c,) = both(np.log(CAT))
        return TD.Categorical(logits=a), D.Categorical(logits=c), (a,), (c,)
    if name == "Gamma":
        (a, b), (c, d) = both(CONC, RATE)
        return TD.Gamma(a, b), D.Gamma(c, d), (a, b), (c, d)
    if name == "Beta":
        (a, b), (c, d) = both(CONC, RATE)
        return TD.Beta(a, b), D.Beta(c, d), (a, b), (c, d)
    if name == "Dirichlet":
        (a,), (c,) = both(DIR)
        return TD.Dirichlet(a), D.Dirichlet(c), (a,), (c,)
    if name == "MultivariateNormal":
        (a, b), (c, d) = both(MVN_LOC, COV)
        return TD.MultivariateNormal(a, b), D.MultivariateNormal(c, d), (a, b), (c, d)
    if name == "MultivariateNormalTril":
        L = np.linalg.cholesky(COV)
        (a, b), (c, d) = both(MVN_LOC, L)
        return TD.MultivariateNormal(a, scale_tril=b), D.MultivariateNormal(c, scale_tril=d), (a, b), (c, d)
    if name == "MultivariateNormalPrecision":
        (a, b), (c, d) = both(MVN_LOC, COV)
        return (TD.MultivariateNormal(a, precision_matrix=b), D.MultivariateNormal(c, precision_matrix=d),
                (a, b), (c, d))
    raise KeyError(name)


def value_for(name, npdt):
    if name in ("Normal", "Uniform"):
        lo, hi = LOC, LOC + SCALE
        return (lo + (hi - lo) * RNG.uniform(0.05, 0.95, size=(2, 3, 4))).astype(npdt)
    if name.startswith("Bernoulli"):
        return (RNG.uniform(size=(2, 3, 4)) < 0.5).astype(npdt)
    if name.startswith("Categorical"):
        return RNG.integers(0, 5, size=(4, 2, 3))
    if name == "Gamma":
        return RNG.uniform(0.05, 5.0, size=(2, 3, 4)).astype(npdt)
    if name == "Beta":
        return RNG.uniform(0.02, 0.98, size=(2, 3, 4)).astype(npdt)
    if name == "Dirichlet":
        return RNG.dirichlet([1.0, 2.0, 0.5], size=(4, 2)).astype(npdt)
    return RNG.normal(size=(4, 2, 3)).astype(npdt)


NAMES = ["Normal", "Uniform", "Bernoulli", "BernoulliLogits", "Categorical", "CategoricalLogits", "Gamma", "Beta",
         "Dirichlet", "MultivariateNormal", "MultivariateNormalTril", "MultivariateNormalPrecision"]


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", NAMES)
def test_values_and_shapes(name, npdt, tdt, gdt):
    a, b, _, _ = pair(name, npdt, tdt, gdt)
    assert repr(b.batch_shape) == repr(a.batch_shape) and repr(b.event_shape) == repr(a.event_shape)
    assert repr(b._extended_shape((2,))) == repr(a._extended_shape((2,)))
    assert b.has_rsample == a.has_rsample and b.has_enumerate_support == a.has_enumerate_support
    v = value_for(name, npdt)
    tv = torch.tensor(v) if v.dtype == np.int64 else T(v, tdt)
    gv = tg.tensor(v) if v.dtype == np.int64 else G(v, gdt)
    t = tol(npdt) * (50 if name.startswith("MultivariateNormal") else 1)
    close(a.log_prob(tv), b.log_prob(gv), t)
    close(a.entropy(), b.entropy(), t)
    for prop in ("mean", "variance", "stddev"):
        close(getattr(a, prop), getattr(b, prop), t)
    try:
        mode = a.mode
    except NotImplementedError:
        mode = None
    if mode is not None:
        close(mode, b.mode, t)
    close(a.perplexity(), b.perplexity(), t * 10)
    if a.has_enumerate_support:
        same(a.enumerate_support(), b.enumerate_support())
        same(a.enumerate_support(expand=False), b.enumerate_support(expand=False))


@pytest.mark.parametrize("name", NAMES)
def test_expand(name):
    a, b, _, _ = pair(name, np.float64, torch.float64, tg.float64)
    shape = (5,) + tuple(a.batch_shape)
    ea, eb = a.expand(shape), b.expand(shape)
    assert type(eb) is type(b) and repr(eb.batch_shape) == repr(ea.batch_shape)
    assert eb._validate_args == ea._validate_args
    assert tuple(eb.event_shape) == tuple(ea.event_shape)
    close(ea.entropy(), eb.entropy(), 1e-10)
    close(ea.mean, eb.mean, 1e-10)


def _seeded(fn, seed=7):
    torch.manual_seed(seed)
    tg.manual_seed(seed)
    return fn()


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", ["Normal", "Uniform", "Bernoulli", "BernoulliLogits", "Categorical",
                                  "CategoricalLogits", "Gamma", "Beta", "Dirichlet", "MultivariateNormal"])
@pytest.mark.parametrize("sample_shape", [(), (2,), (3, 1)])
def test_sample_streams_equal_torch(name, npdt, tdt, gdt, sample_shape):
    # float32 normal draws of 16 or more elements take a SIMD kernel in torch (CPU-dependent): kept below 16
    if npdt == np.float32 and name == "Normal":
        a = TD.Normal(T([0.5, -1.0], tdt), T([1.0, 2.0], tdt))
        b = D.Normal(G([0.5, -1.0], gdt), G([1.0, 2.0], gdt))
    else:
        a, b, _, _ = pair(name, npdt, tdt, gdt)
    n = int(np.prod(sample_shape + tuple(a.batch_shape) + tuple(a.event_shape)))
    if npdt == np.float32 and name == "MultivariateNormal" and n >= 16:
        pytest.skip("torch's float32 normal of >= 16 elements depends on the CPU's SIMD kernel")
    torch.manual_seed(11)
    tg.manual_seed(11)
    # MultivariateNormal's loc + L @ eps goes through BLAS, whose rounding is its own: equal draws, close values
    check = same if name != "MultivariateNormal" else (lambda x, y: close(x, y, tol(npdt)))
    for _ in range(2):   # twice: the streams stay in step across calls
        check(a.sample(sample_shape), b.sample(sample_shape))
        if a.has_rsample:
            check(a.rsample(sample_shape), b.rsample(sample_shape))
    same(torch.rand(3, dtype=torch.float64), tg.rand(3, dtype=tg.float64))   # the generator is in the same state


def test_categorical_sample_probs_not_normalised_and_1d():
    p = np.array([0.0, 3.0, 1.0, 0.5])
    for shape in [(), (7,), (2, 3)]:
        _seeded(lambda: same(TD.Categorical(T(p)).sample(shape), D.Categorical(G(p)).sample(shape)))
    probs = RNG.uniform(size=(4, 6)).astype(np.float32)
    probs[1, 2] = 0
    _seeded(lambda: same(TD.Categorical(T(probs, torch.float32)).sample((50,)),
                         D.Categorical(G(probs, tg.float32)).sample((50,))))


@pytest.mark.parametrize("alpha", [0.05, 0.5, 1.0, 3.7, 40.0])
@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_gamma_stream_small_and_large_concentration(alpha, npdt, tdt, gdt):
    c = np.full((3, 5), alpha, npdt)
    a, b = TD.Gamma(T(c, tdt), T(np.ones_like(c), tdt)), D.Gamma(G(c, gdt), G(np.ones_like(c), gdt))
    torch.manual_seed(3)
    tg.manual_seed(3)
    same(a.sample((4,)), b.sample((4,)))
    same(a.rsample(), b.rsample())
    ba, bb = TD.Beta(T(c, tdt), T(c[::-1].copy(), tdt)), D.Beta(G(c, gdt), G(c[::-1].copy(), gdt))
    same(ba.sample((2,)), bb.sample((2,)))


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Gamma", "Beta", "Dirichlet", "MultivariateNormal",
                                  "MultivariateNormalTril", "MultivariateNormalPrecision"])
@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_rsample_gradients(name, npdt, tdt, gdt):
    a, b, ta, ga = pair(name, npdt, tdt, gdt, grad=True)   # (2 samples of MVN: 12 normals, the scalar path)
    torch.manual_seed(5)
    tg.manual_seed(5)
    xa, xb = a.rsample((2,)), b.rsample((2,))
    t = tol(npdt) * (100 if name.startswith("MultivariateNormal") else 10)
    close(xa, xb, t)
    w = RNG.normal(size=tuple(xa.shape)).astype(npdt)
    (xa * T(w, tdt)).sum().backward()
    (xb * G(w, gdt)).sum().backward()
    for p, q in zip(ta, ga):
        close(p.grad, q.grad, t * 10)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_log_prob_and_entropy_gradients(name, npdt, tdt, gdt):
    a, b, ta, ga = pair(name, npdt, tdt, gdt, grad=True)
    v = value_for(name, npdt)
    tv = torch.tensor(v) if v.dtype == np.int64 else T(v, tdt)
    gv = tg.tensor(v) if v.dtype == np.int64 else G(v, gdt)
    (a.log_prob(tv).sum() + a.entropy().sum()).backward()
    (b.log_prob(gv).sum() + b.entropy().sum()).backward()
    t = tol(npdt) * (100 if name.startswith("MultivariateNormal") else 10)
    for p, q in zip(ta, ga):
        close(p.grad, q.grad, t)


KL_PAIRS = [("Bernoulli", "Bernoulli"), ("Beta", "Beta"), ("Categorical", "Categorical"), ("Dirichlet", "Dirichlet"),
            ("Gamma", "Gamma"), ("MultivariateNormal", "MultivariateNormal"), ("Normal", "Normal"),
            ("Uniform", "Uniform"), ("Beta", "Gamma"), ("Beta", "Normal"), ("Beta", "Uniform"), ("Gamma", "Beta"),
            ("Gamma", "Uniform"), ("Gamma", "Normal"), ("Normal", "Beta"), ("Normal", "Gamma"),
            ("Normal", "Uniform"), ("Uniform", "Beta"), ("Uniform", "Gamma"), ("Uniform", "Normal")]


def kl_pair(name, which, npdt, tdt, gdt):
    """Distributions for the KL tests (q's parameters differ from p's; Uniform overlaps others' supports)."""
    r = np.random.default_rng(100 + which)
    if name == "Bernoulli":
        p = r.uniform(0.05, 0.95, size=(3, 4))
        p[0, 0] = 0.0 if which == 0 else 0.3   # an exact 0 (torch's t1[p.probs == 0] = 0 branch)
        p[1, 1] = 1.0 if which == 1 else 0.6   # and q == 1 (infinite)
        return TD.Bernoulli(T(p.astype(npdt), tdt)), D.Bernoulli(G(p.astype(npdt), gdt))
    if name == "Categorical":
        p = r.uniform(0.1, 1.0, size=(3, 5))
        p[0, which] = 0.0
        return TD.Categorical(T(p.astype(npdt), tdt)), D.Categorical(G(p.astype(npdt), gdt))
    if name == "Uniform":
        lo = r.uniform(0.05, 0.3, size=(3, 4)) if which == 0 else r.uniform(-0.5, 0.1, size=(3, 4))
        hi = lo + r.uniform(0.2, 0.6, size=(3, 4))
        lo, hi = lo.astype(npdt), hi.astype(npdt)
        return TD.Uniform(T(lo, tdt), T(hi, tdt)), D.Uniform(G(lo, gdt), G(hi, gdt))
    if name == "Normal":
        m, s = r.normal(size=(3, 4)).astype(npdt), r.uniform(0.5, 2, size=(3, 4)).astype(npdt)
        return TD.Normal(T(m, tdt), T(s, tdt)), D.Normal(G(m, gdt), G(s, gdt))
    if name in ("Gamma", "Beta"):
        c, k = r.uniform(0.5, 3, size=(3, 4)).astype(npdt), r.uniform(0.5, 3, size=(3, 4)).astype(npdt)
        cls_t, cls_g = getattr(TD, name), getattr(D, name)
        return cls_t(T(c, tdt), T(k, tdt)), cls_g(G(c, gdt), G(k, gdt))
    if name == "Dirichlet":
        c = r.uniform(0.5, 3, size=(2, 4)).astype(npdt)
        return TD.Dirichlet(T(c, tdt)), D.Dirichlet(G(c, gdt))
    A = r.normal(size=(2, 3, 3))
    S = (A @ A.transpose(0, 2, 1) + np.eye(3)).astype(npdt)
    m = r.normal(size=(2, 3)).astype(npdt)
    return TD.MultivariateNormal(T(m, tdt), T(S, tdt)), D.MultivariateNormal(G(m, gdt), G(S, gdt))


@pytest.mark.parametrize("p_name,q_name", KL_PAIRS)
@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_kl_divergence(p_name, q_name, npdt, tdt, gdt):
    pa, pb = kl_pair(p_name, 0, npdt, tdt, gdt)
    qa, qb = kl_pair(q_name, 1, npdt, tdt, gdt)
    t = tol(npdt) * (100 if p_name == "MultivariateNormal" else 10)
    close(TD.kl_divergence(pa, qa), D.kl_divergence(pb, qb), t)
    close(TD.kl.kl_divergence(pa, qa), D.kl.kl_divergence(pb, qb), t)


def test_kl_gradients():
    for name in ["Normal", "Gamma", "Beta", "Dirichlet", "MultivariateNormal", "Categorical", "Bernoulli"]:
        pa, pb = kl_pair(name, 0, np.float64, torch.float64, tg.float64)
        qa, qb = kl_pair(name, 1, np.float64, torch.float64, tg.float64)
        params = {"Normal": ("loc", "scale"), "Gamma": ("concentration", "rate"), "Beta": ("_dirichlet",),
                  "Dirichlet": ("concentration",), "MultivariateNormal": ("loc", "_unbroadcasted_scale_tril"),
                  "Categorical": ("logits",), "Bernoulli": ("logits",)}[name]
        if name == "Beta":
            pa, pb = pa._dirichlet, pb._dirichlet
            qa, qb = qa._dirichlet, qb._dirichlet
            params = ("concentration",)
        leaves_a, leaves_b = [], []
        for attr in params:
            la = getattr(pa, attr).detach().requires_grad_()
            lb = getattr(pb, attr).detach().requires_grad_()
            setattr(pa, attr, la)
            setattr(pb, attr, lb)
            leaves_a.append(la)
            leaves_b.append(lb)
        if name in ("Categorical", "Bernoulli"):
            for d in (pa, pb):
                d.__dict__.pop("probs", None)
        ka, kb = TD.kl_divergence(pa, qa), D.kl_divergence(pb, qb)
        finite = np.isfinite(arr(ka))
        (ka[T(finite, torch.bool)]).sum().backward()
        (kb * G(finite.astype(np.float64))).sum().backward() if not finite.all() else kb.sum().backward()
        for la, lb in zip(leaves_a, leaves_b):
            close(la.grad, lb.grad, 1e-9)


def test_kl_registry():
    class MyNormal(D.Normal):
        pass

    assert D.kl_divergence(MyNormal(G([0.0]), G([1.0])), D.Normal(G([1.0]), G([2.0]))).shape == (1,)

    with pytest.raises(NotImplementedError) as e:
        D.kl_divergence(D.Categorical(G([0.5, 0.5])), D.Normal(0.0, 1.0))
    with pytest.raises(NotImplementedError) as et:
        TD.kl_divergence(TD.Categorical(T([0.5, 0.5])), TD.Normal(0.0, 1.0))
    assert str(e.value) == str(et.value)

    @D.register_kl(MyNormal, MyNormal)
    def _kl(p, q):
        return p.loc * 0 + 42.0

    same(torch.tensor([42.0], dtype=torch.float64),
         D.kl.kl_divergence(MyNormal(G([0.0]), G([1.0])), MyNormal(G([1.0]), G([2.0]))))


@pytest.mark.parametrize("make", [
    lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, -1.0])),
    lambda M, t: M.Normal(t([0.0, float("nan")]), t([1.0, 1.0])),
    lambda M, t: M.Bernoulli(t([0.2, 1.5])),
    lambda M, t: M.Bernoulli(probs=t([0.2]), logits=t([0.1])),
    lambda M, t: M.Bernoulli(),
    lambda M, t: M.Categorical(t([[0.2, -0.1]])),
    lambda M, t: M.Categorical(t(1.0)),
    lambda M, t: M.Categorical(logits=t(1.0)),
    lambda M, t: M.Uniform(t([0.0, 2.0]), t([1.0, 1.0])),
    lambda M, t: M.Gamma(t([1.0, 0.0]), t([1.0, 1.0])),
    lambda M, t: M.Gamma(t([1.0]), t([-2.0])),
    lambda M, t: M.Beta(t([1.0, -0.5]), t([1.0, 1.0])),
    lambda M, t: M.Dirichlet(t([[1.0, 0.0, 2.0]])),
    lambda M, t: M.Dirichlet(t(1.0)),
    lambda M, t: M.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 2.0], [2.0, 1.0]])),
    lambda M, t: M.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 0.5], [0.0, 1.0]])),
    lambda M, t: M.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([[1.0, 0.5], [0.0, 1.0]])),
    lambda M, t: M.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([[-1.0, 0.0], [0.0, 1.0]])),
    lambda M, t: M.MultivariateNormal(t([0.0, 0.0])),
    lambda M, t: M.MultivariateNormal(t(0.0), t([[1.0]])),
    lambda M, t: M.MultivariateNormal(t([0.0]), scale_tril=t([1.0])),
])
def test_parameter_validation_errors(make):
    messages(lambda: make(TD, lambda x: torch.tensor(x)), lambda: make(D, lambda x: tg.tensor(x)))


@pytest.mark.parametrize("make,value", [
    (lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, 1.0])), [0.0, float("nan")]),
    (lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, 1.0])), [[0.0, 1.0, 2.0]]),
    (lambda M, t: M.Bernoulli(t([0.2, 0.5])), [0.0, 0.5]),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [0, 2]),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [0.5, 1.0]),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [[0, 1, 1]]),
    (lambda M, t: M.Uniform(t([0.0, 0.0]), t([1.0, 2.0])), [0.5, 2.5]),
    (lambda M, t: M.Uniform(t([0.0, 0.0]), t([1.0, 2.0])), [-0.5, 1.0]),
    (lambda M, t: M.Gamma(t([1.0, 2.0]), t([1.0, 1.0])), [1.0, -1.0]),
    (lambda M, t: M.Beta(t([1.0, 2.0]), t([1.0, 1.0])), [0.5, 1.5]),
    (lambda M, t: M.Dirichlet(t([1.0, 2.0, 3.0])), [0.5, 0.6, 0.1]),
    (lambda M, t: M.Dirichlet(t([1.0, 2.0, 3.0])), [0.5, 0.5]),
    (lambda M, t: M.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 0.0], [0.0, 1.0]])), [0.0, 1.0, 2.0]),
])
def test_sample_validation_errors(make, value):
    messages(lambda: make(TD, lambda x: torch.tensor(x)).log_prob(torch.tensor(value)),
              lambda: make(D, lambda x: tg.tensor(x)).log_prob(tg.tensor(value)))


def test_validate_args_switches():
    # validate_args=False accepts what validation rejects, and computes what torch computes
    a = TD.Normal(torch.tensor([0.0]), torch.tensor([-1.0]), validate_args=False)
    b = D.Normal(tg.tensor([0.0]), tg.tensor([-1.0]), validate_args=False)
    close(a.log_prob(torch.tensor([0.5])), b.log_prob(tg.tensor([0.5])), 1e-6)
    assert TD.Distribution._validate_args is True and D.Distribution._validate_args is True
    try:
        D.Distribution.set_default_validate_args(False)
        D.Normal(tg.tensor([0.0]), tg.tensor([-1.0]))
        D.Bernoulli(tg.tensor([0.5])).log_prob(tg.tensor([0.3]))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(tg.tensor([0.0]), tg.tensor([-1.0]))
    messages(lambda: TD.Distribution.set_default_validate_args(2), lambda: D.Distribution.set_default_validate_args(2))


def test_reprs_and_constraints():
    assert repr(D.Normal(tg.tensor([0.0, 1.0]), tg.tensor([1.0, 2.0]))) == \
        repr(TD.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0])))
    assert repr(D.Normal(0.0, 1.0)) == repr(TD.Normal(0.0, 1.0))
    assert repr(D.Categorical(tg.tensor([0.5, 0.5]))) == repr(TD.Categorical(torch.tensor([0.5, 0.5])))
    for name in ["positive", "nonnegative", "real", "real_vector", "simplex", "unit_interval", "boolean",
                 "lower_cholesky", "positive_definite", "nonnegative_integer", "positive_integer"]:
        assert repr(getattr(D.constraints, name)) == repr(getattr(TD.constraints, name)), name
    for ctor, args in [("greater_than", (1.5,)), ("greater_than_eq", (0,)), ("less_than", (2.0,)),
                       ("interval", (0.0, 3.0)), ("half_open_interval", (-1, 1)), ("integer_interval", (0, 4))]:
        assert repr(getattr(D.constraints, ctor)(*args)) == repr(getattr(TD.constraints, ctor)(*args))
    assert repr(D.constraints.independent(D.constraints.positive, 1)) == \
        repr(TD.constraints.independent(TD.constraints.positive, 1))
    v = np.array([[-1.0, 0.0, 0.5, 1.0, 2.0, float("nan")]])
    for name in ["positive", "nonnegative", "real", "unit_interval", "boolean", "nonnegative_integer"]:
        same(getattr(TD.constraints, name).check(torch.tensor(v)), getattr(D.constraints, name).check(tg.tensor(v)))
    same(TD.constraints.simplex.check(torch.tensor([[0.5, 0.5], [0.5, 0.6]])),
         D.constraints.simplex.check(tg.tensor([[0.5, 0.5], [0.5, 0.6]])))
    assert D.constraints.is_dependent(D.Uniform(0.0, 1.0).arg_constraints["low"]) is False
    assert D.constraints.is_dependent(D.constraints.dependent)
    assert isinstance(D.Uniform.support, D.constraints.Constraint)
    assert D.Categorical.support.is_discrete and D.Categorical.support.event_dim == 0
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        D.constraints.dependent.check(tg.tensor([1.0]))
    assert D.Normal.arg_constraints["scale"] is D.constraints.positive
    assert D.Gamma(1.0, 1.0).support.lower_bound == 0.0


def test_scalar_parameters_and_module_paths():
    from tapegrad.distributions.categorical import Categorical  # noqa: F401  (torch's module paths)
    from tapegrad.distributions.kl import kl_divergence, register_kl  # noqa: F401
    from tapegrad.distributions.normal import Normal
    from tapegrad.distributions.utils import logits_to_probs, probs_to_logits  # noqa: F401
    a, b = TD.Normal(0.5, 2.0), Normal(0.5, 2.0)
    assert tuple(b.batch_shape) == () and b.loc.dtype == tg.float32
    close(a.log_prob(torch.tensor(0.25)), b.log_prob(tg.tensor(0.25)), 1e-6)
    close(a.entropy(), b.entropy(), 1e-6)
    _seeded(lambda: same(a.sample((3,)), b.sample((3,))))
    a, b = TD.Beta(2.0, 3.0), D.Beta(2.0, 3.0)
    close(a.log_prob(torch.tensor(0.25)), b.log_prob(tg.tensor(0.25)), 1e-6)
    a, b = TD.Gamma(torch.tensor([2.0, 3.0]), 2.0), D.Gamma(tg.tensor([2.0, 3.0]), 2.0)
    close(a.log_prob(torch.tensor([0.5, 1.0])), b.log_prob(tg.tensor([0.5, 1.0])), 1e-6)
    assert math.isclose(float(D.Uniform(0.0, 2.0).entropy()), math.log(2.0), rel_tol=1e-6)


def test_reinforce_pattern():
    """The policy-gradient idiom: sample an action, keep log_prob, backpropagate -log_prob * R."""
    w = np.random.default_rng(0).normal(size=(4, 2)).astype(np.float32)
    losses, grads = [], []
    for lib, M in ((torch, TD), (tg, D)):
        lib.manual_seed(543)
        W = lib.tensor(w, requires_grad=True)
        log_probs, actions = [], []
        for step in range(5):
            state = lib.tensor(np.full((1, 4), 0.1 * step, np.float32))
            probs = lib.nn.functional.softmax(state @ W, dim=1)
            m = M.Categorical(probs)
            action = m.sample()
            actions.append(action.item())
            log_probs.append(m.log_prob(action))
        loss = (lib.cat([-lp * r for lp, r in zip(log_probs, [1.0, 0.5, -0.2, 0.3, 2.0])])).sum()
        loss.backward()
        losses.append((actions, float(loss)))
        grads.append(arr(W.grad))
    assert losses[0][0] == losses[1][0]
    assert math.isclose(losses[0][1], losses[1][1], rel_tol=1e-6)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_cdf_icdf(npdt, tdt, gdt):
    for name in ("Normal", "Uniform"):
        a, b, _, _ = pair(name, npdt, tdt, gdt)
        v = value_for(name, npdt)
        close(a.cdf(T(v, tdt)), b.cdf(G(v, gdt)), tol(npdt) * 10)
    q = RNG.uniform(size=(3, 4)).astype(npdt)
    for name in ("Normal", "Uniform"):
        a, b, _, _ = pair(name, npdt, tdt, gdt)
        close(a.icdf(T(q, tdt)), b.icdf(G(q, gdt)), tol(npdt) * 10)


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_long_gamma_and_dirichlet_streams(npdt, tdt, gdt):
    """Enough draws that Marsaglia-Tsang's rejection branches and the alpha < 1 boost all run."""
    c = np.geomspace(0.02, 30.0, 40).astype(npdt)
    torch.manual_seed(21)
    tg.manual_seed(21)
    same(TD.Gamma(T(c, tdt), T(np.ones_like(c), tdt)).sample((25,)),
         D.Gamma(G(c, gdt), G(np.ones_like(c), gdt)).sample((25,)))
    k = c.reshape(8, 5)
    # the same gamma draws; torch normalises 5 or more categories with a vectorised sum (its rounding depends
    # on the CPU), tapegrad sums in order: agreement to an ulp. Up to 3 categories both sum in order (above).
    close(TD.Dirichlet(T(k, tdt)).sample((10,)), D.Dirichlet(G(k, gdt)).sample((10,)), 1e-6 if npdt == np.float32 else 1e-15)
    k = c.reshape(-1, 2)   # Beta's and small Dirichlets: bit for bit
    same(TD.Dirichlet(T(k, tdt)).sample((3,)), D.Dirichlet(G(k, gdt)).sample((3,)))
    same(torch.randn(3, dtype=torch.float64), tg.randn(3, dtype=tg.float64))   # the Box-Muller cache too


def test_exponential_family_generic_entropy_and_kl():
    """A user's ExponentialFamily subclass gets torch's Bregman entropy and KL; different families raise."""
    def make(M, base):
        class Exp(base):   # an exponential distribution written only through its natural parameters
            arg_constraints = {}
            _mean_carrier_measure = 0

            def __init__(self, rate):
                self.rate = rate
                super().__init__(tuple(rate.shape), validate_args=False)

            @property
            def _natural_params(self):
                return (-self.rate,)

            def _log_normalizer(self, x):
                return -(-x).log()
        return Exp

    for rates in ([0.5, 2.0, 3.0], [1.5, 1.0, 0.25]):
        ta = make(TD, TD.ExponentialFamily)(T(rates))
        tb = make(D, D.ExponentialFamily)(G(rates))
        close(ta.entropy(), tb.entropy(), 1e-12)
    TE, GE = make(TD, TD.ExponentialFamily), make(D, D.ExponentialFamily)
    close(TD.kl_divergence(TE(T([0.5, 2.0])), TE(T([1.5, 1.0]))),
          D.kl_divergence(GE(G([0.5, 2.0])), GE(G([1.5, 1.0]))), 1e-12)
    messages(lambda: TD.kl_divergence(TD.Bernoulli(T([0.3])), TD.Gamma(T([1.0]), T([1.0]))),
              lambda: D.kl_divergence(D.Bernoulli(G([0.3])), D.Gamma(G([1.0]), G([1.0]))), NotImplementedError)
    messages(lambda: TD.kl_divergence(TD.MultivariateNormal(torch.zeros(2), torch.eye(2)),
                                       TD.MultivariateNormal(torch.zeros(3), torch.eye(3))),
              lambda: D.kl_divergence(D.MultivariateNormal(tg.zeros(2), tg.eye(2)),
                                      D.MultivariateNormal(tg.zeros(3), tg.eye(3))))
