"""torch.distributions parity with torch 2.13 for the scalar (event_shape ()) distributions: Exponential, Cauchy,
Laplace, Poisson, Geometric, Binomial, NegativeBinomial, Chi2, StudentT, FisherSnedecor, ContinuousBernoulli,
VonMises, GeneralizedPareto, InverseGamma. Each test builds the same distribution in both libraries from the
same NumPy arrays and compares what they compute: values, shapes, random streams, gradients, errors, reprs."""
import math

import numpy as np
import pytest
import torch

import tapegrad as tg

D, TD = tg.distributions, torch.distributions
DTYPES = [(np.float32, torch.float32, tg.float32), (np.float64, torch.float64, tg.float64)]
DT_IDS = ["float32", "float64"]


def T(x, dt=torch.float64, grad=False):
    return torch.tensor(np.asarray(x), dtype=dt, requires_grad=grad)


def G(x, dt=tg.float64, grad=False):
    return tg.tensor(np.asarray(x), dtype=dt, requires_grad=grad)


def arr(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x.detach()._data)


def close(a, b, tol, atol=None):
    a, b = arr(a), arr(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol if atol is None else atol, equal_nan=True)


def same(a, b):
    a, b = arr(a), arr(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_array_equal(b, a)


def tol(npdt):
    return 2e-5 if npdt == np.float32 else 1e-12


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

    def __init__(self, params, make, value, sample_rtol=(0, 0), icdf=True, discrete=False):
        self.params, self.make, self.value = params, make, value
        self.sample_rtol, self.icdf, self.discrete = sample_rtol, icdf, discrete


def _real(rng):
    return rng.normal(size=(2,) + BATCH) * 2


def _pos(rng):
    return rng.uniform(0.05, 5.0, size=(2,) + BATCH)


SPECS = {
    "Exponential": Spec([POS], lambda M, r: M.Exponential(r), _pos),
    "Cauchy": Spec([LOC, POS2], lambda M, a, b: M.Cauchy(a, b), _real, sample_rtol=(2e-6, 1e-14)),
    "Laplace": Spec([LOC, POS2], lambda M, a, b: M.Laplace(a, b), _real, sample_rtol=(5e-7, 1e-15)),
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


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", NAMES)
def test_values(name, npdt, tdt, gdt):
    a, b, _, _ = build(name, npdt, tdt, gdt)
    tv, gv = values(name, npdt, tdt, gdt)
    t = tol(npdt)
    close(a.log_prob(tv), b.log_prob(gv), t)
    for prop in ("mean", "mode", "variance", "stddev"):
        agree(outcome(lambda: getattr(a, prop)), outcome(lambda: getattr(b, prop)), t)
    agree(outcome(a.entropy), outcome(b.entropy), t)
    agree(outcome(a.perplexity), outcome(b.perplexity), t * 10)
    agree(outcome(lambda: a.cdf(tv)), outcome(lambda: b.cdf(gv)), t)
    q = np.random.default_rng(1).uniform(0.02, 0.98, size=(2,) + BATCH).astype(npdt)
    agree(outcome(lambda: a.icdf(T(q, tdt))), outcome(lambda: b.icdf(G(q, gdt))), t * 10)
    assert b.has_rsample == a.has_rsample and b.has_enumerate_support == a.has_enumerate_support
    if a.has_enumerate_support:
        same(a.enumerate_support(), b.enumerate_support())
        same(a.enumerate_support(expand=False), b.enumerate_support(expand=False))


@pytest.mark.parametrize("name", NAMES)
def test_shapes_and_expand(name):
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
@pytest.mark.parametrize("name", [n for n in NAMES if TD.__dict__.get(n, getattr(TD, n)).has_rsample])
def test_rsample_gradients(name, npdt, tdt, gdt):
    a, b, ta, ga = build(name, npdt, tdt, gdt, grad=True)
    torch.manual_seed(5)
    tg.manual_seed(5)
    xa, xb = a.rsample((2,)), b.rsample((2,))
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
def test_log_prob_and_entropy_gradients(name, npdt, tdt, gdt):
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
@pytest.mark.parametrize("name", [n for n in NAMES if n in ("Exponential", "Cauchy", "Laplace")])
def test_cdf_icdf_gradients(name, npdt, tdt, gdt):
    a, b, ta, ga = build(name, npdt, tdt, gdt, grad=True)
    tv, gv = values(name, npdt, tdt, gdt)
    q = np.random.default_rng(1).uniform(0.02, 0.98, size=(2,) + BATCH).astype(npdt)
    (a.cdf(tv).sum() + a.icdf(T(q, tdt)).sum()).backward()
    (b.cdf(gv).sum() + b.icdf(G(q, gdt)).sum()).backward()
    for p, r in zip(ta, ga):
        close(p.grad, r.grad, tol(npdt) * 10)


def _messages(fn_t, fn_g, exc=ValueError):
    with pytest.raises(exc) as et:
        fn_t()
    with pytest.raises(exc) as eg:
        fn_g()
    assert str(eg.value) == str(et.value)


PARAM_ERRORS = [
    lambda M, t: M.Exponential(t([1.0, 0.0])),
    lambda M, t: M.Exponential(t([1.0, float("nan")])),
    lambda M, t: M.Cauchy(t([0.0, 1.0]), t([1.0, -1.0])),
    lambda M, t: M.Cauchy(t([float("nan"), 1.0]), t([1.0, 1.0])),
    lambda M, t: M.Laplace(t([0.0, 1.0]), t([0.0, 1.0])),
    lambda M, t: M.Laplace(t([0.0, float("nan")]), t([1.0, 1.0])),
]


@pytest.mark.parametrize("make", PARAM_ERRORS)
def test_parameter_validation_errors(make):
    _messages(lambda: make(TD, lambda x: torch.tensor(x)), lambda: make(D, lambda x: tg.tensor(x)))


SAMPLE_ERRORS = [
    (lambda M, t: M.Exponential(t([1.0, 2.0])), [1.0, -1.0]),
    (lambda M, t: M.Exponential(t([1.0, 2.0])), [[1.0, 1.0, 1.0]]),
    (lambda M, t: M.Cauchy(t([0.0, 1.0]), t([1.0, 1.0])), [0.0, float("nan")]),
    (lambda M, t: M.Laplace(t([0.0, 1.0]), t([1.0, 1.0])), [float("nan"), 1.0]),
]


@pytest.mark.parametrize("make,value", SAMPLE_ERRORS)
def test_sample_validation_errors(make, value):
    _messages(lambda: make(TD, lambda x: torch.tensor(x)).log_prob(torch.tensor(value)),
              lambda: make(D, lambda x: tg.tensor(x)).log_prob(tg.tensor(value)))


def test_sample_validation_needs_a_tensor():
    _messages(lambda: TD.Exponential(torch.tensor([1.0])).log_prob(1.0),
              lambda: D.Exponential(tg.tensor([1.0])).log_prob(1.0))


SCALAR_ARGS = [
    ("Exponential", (1.5,)),
    ("Cauchy", (0.5, 2.0)),
    ("Laplace", (-0.5, 2.0)),
]


@pytest.mark.parametrize("name,args", SCALAR_ARGS)
def test_scalar_parameters_and_reprs(name, args):
    a, b = getattr(TD, name)(*args), getattr(D, name)(*args)
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
    assert tuple(xb.shape) == tuple(xa.shape) == ()
    v = arr(xa)
    close(a.log_prob(torch.tensor(v)), b.log_prob(tg.tensor(v)), 2e-6)
    # a one-element tensor parameter prints in full, a larger one as its size
    pa, pb = build(name, np.float64, torch.float64, tg.float64)[:2]
    assert repr(pb) == repr(pa)


@pytest.mark.parametrize("name", NAMES)
def test_support_and_constraints(name):
    a, b, _, _ = build(name, np.float64, torch.float64, tg.float64)
    assert repr(b.support) == repr(a.support)
    assert b.support.is_discrete == a.support.is_discrete and b.support.event_dim == a.support.event_dim
    assert set(b.arg_constraints) == set(a.arg_constraints)
    for k in a.arg_constraints:
        assert repr(b.arg_constraints[k]) == repr(a.arg_constraints[k])
    tv, gv = values(name, np.float64, torch.float64, tg.float64)
    same(a.support.check(tv), b.support.check(gv))


def test_module_paths():
    from tapegrad.distributions.cauchy import Cauchy
    from tapegrad.distributions.exponential import Exponential
    from tapegrad.distributions.laplace import Laplace
    assert (Cauchy, Exponential, Laplace) == (D.Cauchy, D.Exponential, D.Laplace)
    assert issubclass(Exponential, D.ExponentialFamily) and not issubclass(Cauchy, D.ExponentialFamily)
