"""torch.distributions parity with torch 2.13 for the scalar (event_shape ()) distributions: Exponential, Cauchy,
Laplace, Poisson, Geometric, Binomial, NegativeBinomial, Chi2, StudentT, FisherSnedecor, ContinuousBernoulli,
VonMises, GeneralizedPareto, InverseGamma. Each test builds the same distribution in both libraries from the
same NumPy arrays and compares what they compute: values, shapes, random streams, gradients, errors, reprs."""
import numpy as np
import pytest
import torch

import tapegrad as tg
from parity import D, TD, DTYPES, DT_IDS, T, G, arr, close, same, tol, messages



RNG = np.random.default_rng(4321)
BATCH = (3, 4)
POS = RNG.uniform(0.5, 2.0, size=BATCH)
POS2 = RNG.uniform(0.5, 2.0, size=(4,))
LOC = RNG.normal(size=BATCH)
PROBS = RNG.uniform(0.05, 0.95, size=BATCH)


class Spec:
    """How to build one distribution in either library, and the values to evaluate it at.

    params: the arrays (float parameters, cast to the test's dtype and made leaves when gradients are tested);
    make(M, *params): the distribution from module M (torch.distributions or tapegrad.distributions);
    value(rng): values in the support, broadcastable with the batch shape (2, 3, 4);
    sample_rtol: 0 when the draws are bit for bit, else the relative tolerance of the samples (their transform
    calls log1p, log, tan, ...: torch's vectorised SLEEF and NumPy's libm round the last bit differently)."""

    def __init__(self, params, make, value, sample_rtol=(0, 0)):
        self.params, self.make, self.value = params, make, value
        self.sample_rtol = sample_rtol


DF = RNG.uniform(0.5, 6.0, size=BATCH)
DF[0, :3] = [0.7, 1.5, 2.0]   # StudentT's NaN and inf mean / variance branches, FisherSnedecor's NaN mode / mean
CB_PROBS = PROBS.copy()
CB_PROBS[0, :3] = [0.5, 0.4995, 0.5009]   # ContinuousBernoulli's Taylor region (0.499, 0.501]
KAPPA = RNG.uniform(0.2, 8.0, size=BATCH)
KAPPA[0, :2] = [1e-6, 20.0]   # VonMises: the proposal's Taylor branch, and large concentrations
GP_CONC = RNG.uniform(-0.9, 0.9, size=BATCH)
GP_CONC[0, :3] = [0.0, -1.0, 1e-10]   # GeneralizedPareto: the Exponential case (isclose to 0), the Uniform one


def _real(rng):
    return rng.normal(size=(2,) + BATCH) * 2


def _pos(rng):
    return rng.uniform(0.05, 5.0, size=(2,) + BATCH)


def _counts(high):
    def draw(rng):
        v = rng.integers(0, high + 1, size=(2,) + BATCH).astype(np.float64)
        v[:, 0, 0] = 0   # (Poisson's rate 0 and NegativeBinomial's total_count 0 sit at [0, 0])
        return v
    return draw


def _unit(rng):
    v = rng.uniform(0.0, 1.0, size=(2,) + BATCH)
    v[0, 0, :2] = [0.0, 1.0]
    return v


def _gp_values(rng):
    return LOC + POS2 * rng.uniform(0.01, 0.95, size=(2,) + BATCH)


DF_SMALL = DF.copy()
DF_SMALL[0, :2] = [0.001, 0.002]
RATE_0 = POS * 3
RATE_0[0, 0] = 0.0
LOC_0 = LOC.copy()
LOC_0[0, :2] = 0.0   # Binomial: _clamp_by_zero's gradient of 1/2 at logit 0
BINOM_N = np.full(BATCH, 10.0)
BINOM_N_MIXED = RNG.integers(0, 12, size=BATCH).astype(np.float64)
NB_N = RNG.uniform(0.5, 6.0, size=BATCH)
NB_N[0, 0] = 0.0   # total_count 0: log_prob's masked_fill of lgamma(0)

SPECS = {
    "Exponential": Spec([POS], lambda M, r: M.Exponential(r), _pos),
    "Cauchy": Spec([LOC, POS2], lambda M, a, b: M.Cauchy(a, b), _real, sample_rtol=(2e-6, 1e-14)),
    "Laplace": Spec([LOC, POS2], lambda M, a, b: M.Laplace(a, b), _real, sample_rtol=(5e-7, 1e-15)),
    "Poisson": Spec([RATE_0], lambda M, r: M.Poisson(r), _counts(8)),   # rate 0: xlogy(0, 0) = 0
    "PoissonLarge": Spec([POS * 30], lambda M, r: M.Poisson(r), _counts(60)),   # rate >= 10: the PTRS sampler
    "Geometric": Spec([PROBS], lambda M, p: M.Geometric(p), _counts(6)),
    "GeometricLogits": Spec([LOC], lambda M, q: M.Geometric(logits=q), _counts(6)),
    "Binomial": Spec([BINOM_N, PROBS], lambda M, n, p: M.Binomial(n.detach(), p), _counts(10)),
    "BinomialLarge": Spec([BINOM_N * 10, PROBS], lambda M, n, p: M.Binomial(n.detach(), p), _counts(100)),  # BTRS
    "BinomialInt": Spec([PROBS], lambda M, p: M.Binomial(7, probs=p), _counts(7)),
    "BinomialLogits": Spec([BINOM_N_MIXED, LOC_0], lambda M, n, q: M.Binomial(n.detach(), logits=q),
                           lambda rng: np.floor(BINOM_N_MIXED * rng.uniform(size=(2,) + BATCH))),
    "NegativeBinomial": Spec([NB_N, PROBS * 0.9], lambda M, n, p: M.NegativeBinomial(n, p), _counts(8)),
    "NegativeBinomialLogits": Spec([NB_N + 0.5, LOC], lambda M, n, q: M.NegativeBinomial(n, logits=q), _counts(8)),
    "Chi2": Spec([DF], lambda M, d: M.Chi2(d), _pos),
    "StudentT": Spec([DF, LOC, POS2], lambda M, d, a, b: M.StudentT(d, a, b), _real, sample_rtol=(1e-6, 1e-14)),
    "StudentTDf": Spec([DF], lambda M, d: M.StudentT(d), _real, sample_rtol=(1e-6, 1e-14)),
    "FisherSnedecor": Spec([DF, DF[::-1].copy() * 2], lambda M, a, b: M.FisherSnedecor(a, b), _pos),
    # tiny df1: Gamma draws clamped to tiny, samples near the bottom of the range
    "FisherSnedecorSmall": Spec([DF_SMALL, DF], lambda M, a, b: M.FisherSnedecor(a, b), _pos),
    "ContinuousBernoulli": Spec([CB_PROBS], lambda M, p: M.ContinuousBernoulli(p), _unit,
                                sample_rtol=(1e-5, 1e-12)),
    "ContinuousBernoulliLogits": Spec([LOC * 3], lambda M, q: M.ContinuousBernoulli(logits=q), _unit,
                                      sample_rtol=(1e-5, 1e-12)),
    "VonMises": Spec([LOC, KAPPA], lambda M, a, k: M.VonMises(a, k), _real, sample_rtol=(0, 1e-14)),
    # (1 / x as x.pow(-1 as a tensor): torch's vectorised SLEEF pow is 1 ulp off in places, tapegrad's exact)
    "InverseGamma": Spec([DF, POS2], lambda M, c, r: M.InverseGamma(c, r), _pos,
                         sample_rtol=(3e-7, 5e-16)),
    "GeneralizedPareto": Spec([LOC, POS2, GP_CONC], lambda M, a, b, c: M.GeneralizedPareto(a, b, c), _gp_values,
                              sample_rtol=(1e-5, 1e-13)),
}


def build(name, npdt, tdt, gdt, grad=False):
    spec = SPECS[name]
    ta = [T(p.astype(npdt), tdt, grad) if isinstance(p, np.ndarray) else p for p in spec.params]
    ga = [G(p.astype(npdt), gdt, grad) if isinstance(p, np.ndarray) else p for p in spec.params]
    return spec.make(TD, *ta), spec.make(D, *ga), [p for p in ta if isinstance(p, torch.Tensor)], \
        [p for p in ga if isinstance(p, tg.Tensor)]


def values(name, npdt, tdt, gdt, seed=0):
    v = SPECS[name].value(np.random.default_rng(seed)).astype(npdt)
    return T(v, tdt), G(v, gdt)


def outcome(fn):
    """fn()'s value, or the type and message of what it raised."""
    try:
        return fn()
    except (NotImplementedError, ValueError, RuntimeError, TypeError) as e:
        return type(e), str(e)


def agree(ra, rb, t, atol=None):
    if isinstance(ra, tuple):
        assert isinstance(rb, tuple) and rb[0] is ra[0], (ra, rb)
        return
    assert not isinstance(rb, tuple), rb
    close(ra, rb, t, atol)


NAMES = list(SPECS)


@pytest.fixture
def default_dtype(request):
    """Both libraries' default dtype set to the test's (torch's GeneralizedPareto compares its concentration
    with torch.tensor(0.0), of the default dtype: float64 parameters raise otherwise, see
    test_generalized_pareto_default_dtype_mismatch)."""
    def set_to(tdt, gdt):
        torch.set_default_dtype(tdt)
        tg.set_default_dtype(gdt)
    yield set_to
    torch.set_default_dtype(torch.float32)
    tg.set_default_dtype(tg.float32)


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", NAMES)
def test_values(name, npdt, tdt, gdt, default_dtype):
    default_dtype(tdt, gdt)
    a, b, _, _ = build(name, npdt, tdt, gdt)
    tv, gv = values(name, npdt, tdt, gdt)
    t = tol(npdt)
    agree(outcome(lambda: a.log_prob(tv)), outcome(lambda: b.log_prob(gv)), t)
    for prop in ("mean", "mode", "variance", "stddev"):
        agree(outcome(lambda: getattr(a, prop)), outcome(lambda: getattr(b, prop)), t)
    agree(outcome(a.entropy), outcome(b.entropy), t)
    agree(outcome(a.perplexity), outcome(b.perplexity), t * 10)
    agree(outcome(lambda: a.cdf(tv)), outcome(lambda: b.cdf(gv)), t)
    q = np.random.default_rng(1).uniform(0.02, 0.98, size=(2,) + BATCH).astype(npdt)
    agree(outcome(lambda: a.icdf(T(q, tdt))), outcome(lambda: b.icdf(G(q, gdt))), t * 10)
    assert b.has_rsample == a.has_rsample and b.has_enumerate_support == a.has_enumerate_support
    if a.has_enumerate_support:
        for expand in (True, False):
            ea, eb = outcome(lambda: a.enumerate_support(expand)), outcome(lambda: b.enumerate_support(expand))
            same(ea, eb) if not isinstance(ea, tuple) else agree(ea, eb, 0)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_and_expand(name, default_dtype):
    default_dtype(torch.float64, tg.float64)
    a, b, _, _ = build(name, np.float64, torch.float64, tg.float64)
    assert repr(b.batch_shape) == repr(a.batch_shape) and repr(b.event_shape) == repr(a.event_shape)
    for shape in [(), (2,), (3, 1)]:
        assert repr(b._extended_shape(shape)) == repr(a._extended_shape(shape))
        assert tuple(b.sample(shape).shape) == tuple(a.sample(shape).shape)
    shape = (5,) + tuple(a.batch_shape)
    ea, eb = a.expand(shape), b.expand(shape)
    assert type(eb) is type(b) and repr(eb.batch_shape) == repr(ea.batch_shape)
    assert eb._validate_args == ea._validate_args and tuple(eb.event_shape) == tuple(ea.event_shape)
    tv, gv = values(name, np.float64, torch.float64, tg.float64)
    close(ea.log_prob(tv[:1]), eb.log_prob(gv[:1]), 1e-12)
    agree(outcome(lambda: ea.mean), outcome(lambda: eb.mean), 1e-12)
    agree(outcome(ea.entropy), outcome(eb.entropy), 1e-12)
    assert tuple(eb.sample((2,)).shape) == (2,) + shape
    # expand keeps the validation setting
    assert b.expand(shape)._validate_args is True
    bb = SPECS[name].make(D, *[G(p) if isinstance(p, np.ndarray) else p for p in SPECS[name].params])
    bb._validate_args = False
    assert bb.expand(shape)._validate_args is False


@pytest.mark.parametrize("sample_shape", [(), (2,), (3, 1)])
@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", NAMES)
def test_sample_streams_equal_torch(name, npdt, tdt, gdt, sample_shape):
    a, b, _, _ = build(name, npdt, tdt, gdt)
    rtol = SPECS[name].sample_rtol[npdt == np.float64]
    torch.manual_seed(11)
    tg.manual_seed(11)
    for _ in range(2):   # twice: the streams stay in step across calls
        for method in ("sample", "rsample") if a.has_rsample else ("sample",):
            xa, xb = getattr(a, method)(sample_shape), getattr(b, method)(sample_shape)
            assert xb.requires_grad == xa.requires_grad
            if rtol:
                close(xa, xb, rtol, 0)
            else:
                same(xa, xb)
    same(torch.rand(3, dtype=torch.float64), tg.rand(3, dtype=tg.float64))   # the generator is in the same state


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", [n for n in NAMES if build(n, np.float64, torch.float64, tg.float64)[0].has_rsample])
def test_rsample_gradients(name, npdt, tdt, gdt):
    a, b, ta, ga = build(name, npdt, tdt, gdt, grad=True)
    torch.manual_seed(5)
    tg.manual_seed(5)
    xa, xb = a.rsample((2,)), b.rsample((2,))
    assert xa.requires_grad and xb.requires_grad
    assert not b.sample().requires_grad
    t = tol(npdt) * 10
    close(xa, xb, t)
    w = np.random.default_rng(2).normal(size=tuple(xa.shape)).astype(npdt)
    (xa * T(w, tdt)).sum().backward()
    (xb * G(w, gdt)).sum().backward()
    assert len(ta) == len(ga) and ta
    for p, q in zip(ta, ga):
        assert (p.grad is None) == (q.grad is None)
        if p.grad is not None:
            close(p.grad, q.grad, t * 10)


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", NAMES)
def test_log_prob_and_entropy_gradients(name, npdt, tdt, gdt, default_dtype):
    default_dtype(tdt, gdt)
    a, b, ta, ga = build(name, npdt, tdt, gdt, grad=True)
    tv, gv = values(name, npdt, tdt, gdt)
    la, lb = a.log_prob(tv).sum(), b.log_prob(gv).sum()
    ea, eb = outcome(a.entropy), outcome(b.entropy)
    if not isinstance(ea, tuple):
        la, lb = la + ea.sum(), lb + eb.sum()
    la.backward()
    lb.backward()
    t = tol(npdt) * 10
    for p, q in zip(ta, ga):
        assert (p.grad is None) == (q.grad is None)
        if p.grad is not None:
            close(p.grad, q.grad, t)


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", ["Exponential", "Cauchy", "Laplace", "ContinuousBernoulli",
                                  "ContinuousBernoulliLogits", "GeneralizedPareto"])
def test_cdf_icdf_gradients(name, npdt, tdt, gdt, default_dtype):
    default_dtype(tdt, gdt)
    a, b, ta, ga = build(name, npdt, tdt, gdt, grad=True)
    tv, gv = values(name, npdt, tdt, gdt)
    q = np.random.default_rng(1).uniform(0.02, 0.98, size=(2,) + BATCH).astype(npdt)
    (a.cdf(tv).sum() + a.icdf(T(q, tdt)).sum()).backward()
    (b.cdf(gv).sum() + b.icdf(G(q, gdt)).sum()).backward()
    for p, r in zip(ta, ga):
        close(p.grad, r.grad, tol(npdt) * 10)


def test_generalized_pareto_default_dtype_mismatch():
    # float64 parameters against the float32 torch.tensor(0.0): torch raises, and so does tapegrad
    a = TD.GeneralizedPareto(T([0.0]), T([1.0]), T([0.5]))
    b = D.GeneralizedPareto(G([0.0]), G([1.0]), G([0.5]))
    for method in ("log_prob", "cdf", "log_cdf", "log_survival_function"):
        messages(lambda: getattr(a, method)(T([0.5])), lambda: getattr(b, method)(G([0.5])), RuntimeError)
    close(a.icdf(T([0.5])), b.icdf(G([0.5])), 1e-15)   # icdf compares with zeros_like: no mismatch


PARAM_ERRORS = [
    lambda M, t: M.Exponential(t([1.0, 0.0])),
    lambda M, t: M.Exponential(t([1.0, float("nan")])),
    lambda M, t: M.Cauchy(t([0.0, 1.0]), t([1.0, -1.0])),
    lambda M, t: M.Cauchy(t([float("nan"), 1.0]), t([1.0, 1.0])),
    lambda M, t: M.Laplace(t([0.0, 1.0]), t([0.0, 1.0])),
    lambda M, t: M.Laplace(t([0.0, float("nan")]), t([1.0, 1.0])),
    lambda M, t: M.Poisson(t([1.0, -0.5])),
    lambda M, t: M.Geometric(t([0.5, 1.5])),
    lambda M, t: M.Geometric(t([0.5, 0.0])),   # Geometric's own check: probs > 0
    lambda M, t: M.Geometric(t([0.5]), t([0.1])),
    lambda M, t: M.Geometric(),
    lambda M, t: M.Binomial(t([10.0, 2.5]), t([0.5, 0.5])),
    lambda M, t: M.Binomial(t([10.0, -1.0]), t([0.5, 0.5])),
    lambda M, t: M.Binomial(10, t([0.5, 1.5])),
    lambda M, t: M.Binomial(10, t([0.5]), t([0.1])),
    lambda M, t: M.Binomial(10),
    lambda M, t: M.NegativeBinomial(t([-1.0, 2.0]), t([0.5, 0.5])),
    lambda M, t: M.NegativeBinomial(t([1.0, 2.0]), t([0.5, 1.0])),
    lambda M, t: M.NegativeBinomial(t([1.0, 2.0]), logits=t([0.5, float("nan")])),
    lambda M, t: M.NegativeBinomial(t([1.0, 2.0])),
    lambda M, t: M.Chi2(t([1.0, 0.0])),
    lambda M, t: M.StudentT(t([1.0, -2.0])),
    lambda M, t: M.StudentT(t([1.0, 2.0]), t([0.0, 0.0]), t([1.0, 0.0])),
    lambda M, t: M.FisherSnedecor(t([1.0, 2.0]), t([0.0, 1.0])),
    # an explicit validate_args (True or False) checks probs before the clamp
    lambda M, t: M.ContinuousBernoulli(t([0.2, 1.5]), validate_args=True),
    lambda M, t: M.ContinuousBernoulli(t([0.2, -0.5]), validate_args=False),
    lambda M, t: M.ContinuousBernoulli(probs=t([0.2]), logits=t([0.1])),
    lambda M, t: M.VonMises(t([0.0, 1.0]), t([1.0, -1.0])),
    lambda M, t: M.VonMises(t([0.0, 1.0]), t([1.0, 0.0])),
    lambda M, t: M.InverseGamma(t([1.0, 0.0]), t([1.0, 1.0])),
    lambda M, t: M.InverseGamma(t([1.0, 2.0]), t([1.0, -1.0])),
    lambda M, t: M.GeneralizedPareto(t([0.0, 1.0]), t([1.0, -1.0]), t([0.1, 0.2])),
    lambda M, t: M.GeneralizedPareto(t([0.0, 1.0]), t([1.0, 1.0]), t([0.1, float("nan")])),
]


@pytest.mark.parametrize("make", PARAM_ERRORS)
def test_parameter_validation_errors(make):
    messages(lambda: make(TD, lambda x: torch.tensor(x)), lambda: make(D, lambda x: tg.tensor(x)))


def test_continuous_bernoulli_default_validation_clamps():
    # validate_args left unset: out-of-range probs are clamped into [eps, 1 - eps] and then pass, as torch's
    a = TD.ContinuousBernoulli(torch.tensor([0.2, -0.5, 1.5]))
    b = D.ContinuousBernoulli(tg.tensor([0.2, -0.5, 1.5]))
    same(a.probs, b.probs)
    close(a.mean, b.mean, 1e-6)


SAMPLE_ERRORS = [
    (lambda M, t: M.Exponential(t([1.0, 2.0])), [1.0, -1.0]),
    (lambda M, t: M.Exponential(t([1.0, 2.0])), [[1.0, 1.0, 1.0]]),
    (lambda M, t: M.Cauchy(t([0.0, 1.0]), t([1.0, 1.0])), [0.0, float("nan")]),
    (lambda M, t: M.Laplace(t([0.0, 1.0]), t([1.0, 1.0])), [float("nan"), 1.0]),
    (lambda M, t: M.Poisson(t([1.0, 2.0])), [1.0, 1.5]),
    (lambda M, t: M.Poisson(t([1.0, 2.0])), [-1.0, 1.0]),
    (lambda M, t: M.Geometric(t([0.5, 0.2])), [1.0, 0.5]),
    (lambda M, t: M.Binomial(t([3.0, 5.0]), t([0.5, 0.2])), [4.0, 4.0]),   # the support depends on total_count
    (lambda M, t: M.Binomial(t([3.0, 5.0]), t([0.5, 0.2])), [1.0, 0.5]),
    (lambda M, t: M.NegativeBinomial(t([3.0, 5.0]), t([0.5, 0.2])), [1.0, -2.0]),
    (lambda M, t: M.Chi2(t([3.0, 5.0])), [1.0, -2.0]),
    (lambda M, t: M.StudentT(t([3.0, 5.0])), [1.0, float("nan")]),
    (lambda M, t: M.FisherSnedecor(t([3.0, 5.0]), t([3.0, 5.0])), [1.0, 0.0]),
    (lambda M, t: M.ContinuousBernoulli(t([0.3, 0.6])), [1.0, 1.5]),
    (lambda M, t: M.VonMises(t([0.3, 0.6]), t([1.0, 2.0])), [float("nan"), 1.0]),
    (lambda M, t: M.InverseGamma(t([3.0, 5.0]), t([3.0, 5.0])), [1.0, 0.0]),
    (lambda M, t: M.InverseGamma(t([3.0, 5.0]), t([3.0, 5.0])), [[1.0, 1.0, 1.0]]),
    (lambda M, t: M.GeneralizedPareto(t([0.0, 1.0]), t([1.0, 1.0]), t([0.5, -0.5])), [-0.5, 1.5]),
    (lambda M, t: M.GeneralizedPareto(t([0.0, 1.0]), t([1.0, 1.0]), t([0.5, -0.5])), [0.5, 3.5]),  # > 1 + 1/0.5
]


@pytest.mark.parametrize("make,value", SAMPLE_ERRORS)
def test_sample_validation_errors(make, value):
    messages(lambda: make(TD, lambda x: torch.tensor(x)).log_prob(torch.tensor(value)),
              lambda: make(D, lambda x: tg.tensor(x)).log_prob(tg.tensor(value)))


def test_sample_validation_needs_a_tensor():
    messages(lambda: TD.Exponential(torch.tensor([1.0])).log_prob(1.0),
              lambda: D.Exponential(tg.tensor([1.0])).log_prob(1.0))


SCALAR_ARGS = [
    ("Exponential", lambda M, t: M.Exponential(t(1.5))),
    ("Cauchy", lambda M, t: M.Cauchy(t(0.5), t(2.0))),
    ("Laplace", lambda M, t: M.Laplace(t(-0.5), t(2.0))),
    ("Poisson", lambda M, t: M.Poisson(t(3.5))),
    ("Geometric", lambda M, t: M.Geometric(t(0.3))),
    ("GeometricLogits", lambda M, t: M.Geometric(logits=t(-0.5))),
    ("Binomial", lambda M, t: M.Binomial(t(10.0), t(0.3))),
    ("BinomialLogits", lambda M, t: M.Binomial(t(10.0), logits=t(0.3))),
    ("NegativeBinomial", lambda M, t: M.NegativeBinomial(t(3.0), t(0.4))),
    ("NegativeBinomialLogits", lambda M, t: M.NegativeBinomial(t(3.0), logits=t(0.4))),
    ("Chi2", lambda M, t: M.Chi2(t(3.0))),
    ("StudentTDf", lambda M, t: M.StudentT(t(3.0))),
    ("StudentT", lambda M, t: M.StudentT(t(3.0), t(1.0), t(2.0))),
    ("FisherSnedecor", lambda M, t: M.FisherSnedecor(t(3.0), t(5.0))),
    ("ContinuousBernoulli", lambda M, t: M.ContinuousBernoulli(t(0.3))),
    ("ContinuousBernoulliLogits", lambda M, t: M.ContinuousBernoulli(logits=t(0.3))),
    ("VonMises", lambda M, t: M.VonMises(t(0.5), t(2.0))),
    ("GeneralizedPareto", lambda M, t: M.GeneralizedPareto(t(0.0), t(1.0), t(0.2))),
    ("InverseGamma", lambda M, t: M.InverseGamma(t(3.0), t(2.0))),
]


@pytest.mark.parametrize("kind", ["number", "0-d", "1-element"])
@pytest.mark.parametrize("name,make", SCALAR_ARGS, ids=[n for n, _ in SCALAR_ARGS])
def test_scalar_parameters_and_reprs(name, make, kind):
    """Python numbers (tensors of the default dtype, batch_shape ()), 0-d tensors (their repr prints the number)
    and one-element tensors (printed in full)."""
    conv = {"number": lambda lib: (lambda x: x), "0-d": lambda lib: lib.tensor,
            "1-element": lambda lib: (lambda x: lib.tensor([x]))}[kind]
    a, b = make(TD, conv(torch)), make(D, conv(tg))
    assert repr(b) == repr(a)
    assert repr(b.batch_shape) == repr(a.batch_shape)
    for k in a.arg_constraints:
        if k in a.__dict__:
            assert str(b.__dict__[k].dtype) == str(a.__dict__[k].dtype)
    torch.manual_seed(2)
    tg.manual_seed(2)
    xa, xb = a.sample((3,)), b.sample((3,))
    rtol = SPECS[name].sample_rtol[0]
    close(xa, xb, rtol, 0) if rtol else same(xa, xb)
    xa, xb = a.sample(), b.sample()
    assert tuple(xb.shape) == tuple(xa.shape)
    v = arr(xa)
    close(a.log_prob(torch.tensor(v)), b.log_prob(tg.tensor(v)), 2e-6)


@pytest.mark.parametrize("name", NAMES)
def test_support_constraints_and_repr(name):
    a, b, _, _ = build(name, np.float64, torch.float64, tg.float64)
    assert repr(b) == repr(a)
    assert repr(b.support) == repr(a.support)
    assert b.support.is_discrete == a.support.is_discrete and b.support.event_dim == a.support.event_dim
    assert set(b.arg_constraints) == set(a.arg_constraints)
    for k in a.arg_constraints:
        assert repr(b.arg_constraints[k]) == repr(a.arg_constraints[k])
    tv, gv = values(name, np.float64, torch.float64, tg.float64)
    same(a.support.check(tv), b.support.check(gv))
    for attr in ("param_shape", "df"):
        if hasattr(a, attr):
            pa, pb = getattr(a, attr), getattr(b, attr)
            assert repr(pb) == repr(pa) if attr == "param_shape" else close(pa, pb, 0) is None


def test_lazy_probs_and_logits():
    for name in ("Geometric", "GeometricLogits", "Binomial", "BinomialLogits", "NegativeBinomial",
                 "NegativeBinomialLogits", "ContinuousBernoulli", "ContinuousBernoulliLogits"):
        for npdt, tdt, gdt in DTYPES:
            a, b, _, _ = build(name, npdt, tdt, gdt)
            close(a.probs, b.probs, tol(npdt))
            close(a.logits, b.logits, tol(npdt))


def test_module_paths():
    from tapegrad.distributions.binomial import Binomial
    from tapegrad.distributions.cauchy import Cauchy
    from tapegrad.distributions.chi2 import Chi2
    from tapegrad.distributions.continuous_bernoulli import ContinuousBernoulli
    from tapegrad.distributions.exponential import Exponential
    from tapegrad.distributions.fishersnedecor import FisherSnedecor
    from tapegrad.distributions.generalized_pareto import GeneralizedPareto
    from tapegrad.distributions.geometric import Geometric
    from tapegrad.distributions.inverse_gamma import InverseGamma
    from tapegrad.distributions.laplace import Laplace
    from tapegrad.distributions.negative_binomial import NegativeBinomial
    from tapegrad.distributions.poisson import Poisson
    from tapegrad.distributions.studentT import StudentT
    from tapegrad.distributions.von_mises import VonMises
    classes = (Binomial, Cauchy, Chi2, ContinuousBernoulli, Exponential, FisherSnedecor, GeneralizedPareto, Geometric,
               Laplace, NegativeBinomial, Poisson, StudentT, VonMises, InverseGamma)
    assert classes == tuple(getattr(D, c.__name__) for c in classes)
    for c in classes:   # the same class hierarchy as torch's
        tc = getattr(TD, c.__name__)
        assert [k.__name__ for k in c.__mro__] == [k.__name__ for k in tc.__mro__]
