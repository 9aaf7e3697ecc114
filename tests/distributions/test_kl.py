"""kl_divergence parity with torch 2.13 for every pair torch registers (values in float32 and float64 over
broadcasting batch shapes, the infinite results, gradients, the NotImplementedError / ValueError / IndexError
cases), and constraints.cat / constraints.stack."""
import warnings
import zlib

import numpy as np
import pytest
import torch

import tapegrad as tg
from parity import D, TD, DTYPES, DT_IDS, arr

GC, TC = D.constraints, TD.constraints


def close(a, b, tol):
    a, b = arr(a), arr(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol, equal_nan=True)
    # the infinite results at the same places, with the same sign
    np.testing.assert_array_equal(np.isposinf(b), np.isposinf(a))
    np.testing.assert_array_equal(np.isneginf(b), np.isneginf(a))


def _messages(fn_t, fn_g, exc):
    with pytest.raises(exc) as et:
        fn_t()
    with pytest.raises(exc) as eg:
        fn_g()
    assert type(eg.value) is type(et.value)
    assert str(eg.value) == str(et.value)


# ------------------------------------------------------------------------------------------------------------
# Parameters: role 0 is p (batch (3, 4) for the scalar distributions), role 1 is q (batch (4,): broadcasting)

def _arrays(name, role, full=False):
    """role 1 with full=True: q's parameters with p's batch shape (no broadcasting)."""
    r = np.random.default_rng(zlib.crc32(name.encode()) + role)
    big = role == 0 or full
    s = (3, 4) if big else (4,)
    u = r.uniform
    if name in ("Normal", "Laplace", "Cauchy", "Gumbel"):
        return {"loc": r.normal(size=s), "scale": u(0.5, 2.0, s)}
    if name == "HalfNormal":
        return {"scale": u(0.5, 2.0, s)}
    if name in ("Bernoulli", "Geometric", "ContinuousBernoulli"):
        return {"probs": u(0.1, 0.9, s)}
    if name == "Binomial":   # p's total_count >= q's; greater somewhere (infinite there)
        return {"total_count": r.integers(10, 13, s).astype(float) if role == 0 else np.full(s, 10.0),
                "probs": u(0.1, 0.9, s)}
    if name == "Beta":
        return {"concentration1": u(0.5, 3.0, s), "concentration0": u(0.5, 3.0, s)}
    if name == "Gamma":
        return {"concentration": u(0.5, 3.0, s), "rate": u(0.5, 2.0, s)}
    if name in ("Exponential", "Poisson"):
        return {"rate": u(0.5, 2.0, s)}
    if name == "Pareto":   # p: alpha <= 1 and <= 2 somewhere (infinite for Pareto-Exponential/Gamma/Normal)
        if role == 0:
            return {"scale": u(0.5, 2.0, s), "alpha": u(0.5, 4.0, s)}
        return {"scale": u(0.05, 1.0, s), "alpha": u(0.5, 3.0, s)}
    if name == "Uniform":  # p inside (0, 1); q around it, not always containing it
        if role == 0:
            return {"low": u(0.1, 0.3, s), "high": u(0.6, 0.9, s)}
        return {"low": u(-0.5, 0.15, s), "high": u(0.95, 1.5, s)}
    if name in ("Categorical", "OneHotCategorical"):
        return {"probs": u(0.1, 1.0, (2, 3, 5) if big else (3, 5))}
    if name == "Dirichlet":
        return {"concentration": u(0.4, 3.0, (2, 3, 4) if big else (3, 4))}
    if name == "MultivariateNormal":
        b = (2,) if big else ()
        A = r.normal(size=b + (3, 3))
        return {"loc": r.normal(size=b + (3,)), "scale_tril": np.tril(A, -1) + np.diag(u(0.5, 2.0, 3))}
    if name == "LowRankMultivariateNormal":
        b = (2,) if big else ()
        return {"loc": r.normal(size=b + (3,)), "cov_factor": r.normal(size=b + (3, 2)),
                "cov_diag": u(0.5, 2.0, b + (3,))}
    if name == "Independent":
        return {"loc": r.normal(size=(2, 3, 4) if big else (3, 4)),
                "scale": u(0.5, 2.0, (2, 3, 4) if big else (3, 4))}
    if name == "TransformedDistribution":
        return {"loc": r.normal(size=s), "scale": u(0.5, 2.0, s)}
    if name == "Wishart":
        A = r.normal(size=(2, 3, 3))
        return {"df": u(3.0, 6.0, (2,)), "covariance_matrix": A @ A.transpose(0, 2, 1) + np.eye(3)}
    raise KeyError(name)


def make(name, role, lib, npdt, grad=False, full=False):
    """The distribution `name` of library lib ("torch" / "tg") from _arrays(name, role, full), and its leaves."""
    M = TD if lib == "torch" else D
    a = _arrays(name, role, full)
    leaves = {}

    def t(key, g=grad):
        x = np.asarray(a[key], dtype=npdt)
        if lib == "torch":
            v = torch.tensor(x, requires_grad=g)
        else:
            v = tg.tensor(x, requires_grad=g)
        if g:
            leaves[key] = v
        return v

    if name == "Independent":
        d = M.Independent(M.Normal(t("loc"), t("scale")), 1)
    elif name == "TransformedDistribution":
        d = M.TransformedDistribution(M.Normal(t("loc"), t("scale")),
                                      [M.ExpTransform(), M.AffineTransform(0.5, 2.0)])
    elif name == "Binomial":
        d = M.Binomial(t("total_count", False), t("probs"))
    elif name == "Wishart":
        d = M.Wishart(t("df"), covariance_matrix=t("covariance_matrix"))
    else:
        d = getattr(M, name)(**{k: t(k) for k in a})
    return d, leaves


PAIRS = sorted((p.__name__, q.__name__) for p, q in TD.kl._KL_REGISTRY)
PAIR_IDS = [f"{p}-{q}" for p, q in PAIRS]
_STANDIN = {"ExponentialFamily": "Wishart"}   # the Bregman-divergence pair, reached by Wishart-Wishart
_INFINITE = {name for name, f in vars(TD.kl).items() if name.endswith("_infinity")}


def _pair(p_name, q_name, npdt, grad=False, full=False):
    p_name, q_name = _STANDIN.get(p_name, p_name), _STANDIN.get(q_name, q_name)
    pt, lpt = make(p_name, 0, "torch", npdt, grad)
    qt, lqt = make(q_name, 1, "torch", npdt, grad, full)
    pg, lpg = make(p_name, 0, "tg", npdt, grad)
    qg, lqg = make(q_name, 1, "tg", npdt, grad, full)
    return (pt, qt, list(lpt.values()) + list(lqt.values())), (pg, qg, list(lpg.values()) + list(lqg.values()))


def _tol(npdt, p_name):
    if npdt == np.float32:
        return 1e-4 if "Multivariate" in p_name or p_name in ("ExponentialFamily",) else 2e-5
    return 1e-10 if "Multivariate" in p_name or p_name == "ExponentialFamily" else 1e-12


def test_the_registry_is_torchs():
    def names(reg, package):   # (leaving out pairs other tests register for classes of their own)
        return sorted((p.__name__, q.__name__) for p, q in reg
                      if p.__module__.startswith(package) and q.__module__.startswith(package))
    assert names(D.kl._KL_REGISTRY, "tapegrad.") == names(TD.kl._KL_REGISTRY, "torch.")
    assert len(names(TD.kl._KL_REGISTRY, "torch.")) == 87
    # the same function names (the same formulas, one function for several pairs as torch's)
    for p, q in TD.kl._KL_REGISTRY:
        g = [f for (a, b), f in D.kl._KL_REGISTRY.items() if a.__name__ == p.__name__ and b.__name__ == q.__name__]
        assert g[0].__name__ == TD.kl._KL_REGISTRY[p, q].__name__
    assert D.kl_divergence.__doc__ == TD.kl_divergence.__doc__   # with _add_kl_info's list of the pairs
    assert D.kl.register_kl.__doc__ == TD.kl.register_kl.__doc__


def _broadcast_raises(p_name, q_name):
    """Whether torch's kl raises for p's batch (3, 4) against q's (4,) (its `t[mask] = inf` with q's mask)."""
    (pt, qt, _), _ = _pair(p_name, q_name, np.float64)
    try:
        TD.kl_divergence(pt, qt)
    except IndexError:
        return True
    return False


@pytest.mark.parametrize("shapes", ["broadcast", "same"])
@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("p_name,q_name", PAIRS, ids=PAIR_IDS)
def test_kl_values(p_name, q_name, npdt, tdt, gdt, shapes):
    (pt, qt, _), (pg, qg, _) = _pair(p_name, q_name, npdt, full=shapes == "same")
    if shapes == "broadcast" and _broadcast_raises(p_name, q_name):
        # torch's own IndexError (a mask of q's batch shape indexing the broadcast result): the same here
        _messages(lambda: TD.kl_divergence(pt, qt), lambda: D.kl_divergence(pg, qg), IndexError)
        return
    kt, kg = TD.kl_divergence(pt, qt), D.kl_divergence(pg, qg)
    assert tuple(kg.shape) == tuple(kt.shape) == tuple(np.broadcast_shapes(pt.batch_shape, qt.batch_shape))
    assert kg.dtype == gdt and kt.dtype == tdt
    close(kt, kg, _tol(npdt, p_name))
    finite = np.isfinite(arr(kt))
    if TD.kl._KL_REGISTRY[getattr(TD, p_name), getattr(TD, q_name)].__name__ in _INFINITE:
        assert not finite.any() and not kg.requires_grad
    else:
        assert finite.any()   # the closed form itself is compared somewhere
    # the module-level function as well
    close(TD.kl.kl_divergence(pt, qt), D.kl.kl_divergence(pg, qg), _tol(npdt, p_name))


# (the constant-infinity pairs have no gradient: test_kl_values asserts their results do not require grad)
_WITH_GRADIENT = [(p, q) for p, q in PAIRS if TD.kl._KL_REGISTRY[getattr(TD, p), getattr(TD, q)].__name__
                  not in _INFINITE]


@pytest.mark.parametrize("p_name,q_name", _WITH_GRADIENT, ids=[f"{p}-{q}" for p, q in _WITH_GRADIENT])
def test_kl_gradients(p_name, q_name):
    full = _broadcast_raises(p_name, q_name)
    (pt, qt, lt), (pg, qg, lg) = _pair(p_name, q_name, np.float64, grad=True, full=full)
    kt, kg = TD.kl_divergence(pt, qt), D.kl_divergence(pg, qg)
    finite = np.isfinite(arr(kt))
    kt[torch.tensor(finite)].sum().backward()
    kg[tg.tensor(finite)].sum().backward()
    assert len(lt) == len(lg) > 0
    for a, b in zip(lt, lg):
        if a.grad is None:   # p's parameters in the Bregman divergence (torch detaches them)
            assert b.grad is None and p_name == "ExponentialFamily"
        else:
            close(a.grad, b.grad, 1e-9)


TRAINING = [("Normal", "Normal"), ("Independent", "Independent"), ("Categorical", "Categorical"),
            ("OneHotCategorical", "OneHotCategorical"), ("MultivariateNormal", "MultivariateNormal"),
            ("LowRankMultivariateNormal", "LowRankMultivariateNormal"),
            ("MultivariateNormal", "LowRankMultivariateNormal"), ("LowRankMultivariateNormal", "MultivariateNormal")]


@pytest.mark.parametrize("p_name,q_name", TRAINING, ids=[f"{p}-{q}" for p, q in TRAINING])
def test_kl_gradients_float32(p_name, q_name):
    (pt, qt, lt), (pg, qg, lg) = _pair(p_name, q_name, np.float32, grad=True)
    kt, kg = TD.kl_divergence(pt, qt), D.kl_divergence(pg, qg)
    (kt * torch.arange(1, kt.numel() + 1).reshape(kt.shape)).sum().backward()
    (kg * tg.arange(1, kg.numel() + 1).reshape(kg.shape)).sum().backward()
    for a, b in zip(lt, lg):
        close(a.grad, b.grad, 2e-4)


def test_vae_pattern_and_second_order():
    """A VAE's KL(q(z|x) || N(0, I)): Independent Normals from a network's outputs, the prior expanded;
    the gradient w.r.t. the outputs, and a second derivative through it."""
    r = np.random.default_rng(7)
    mu, log_s = r.normal(size=(5, 8)), r.normal(size=(5, 8)) * 0.3
    res = []
    for M, lib in ((TD, torch), (D, tg)):
        m, ls = lib.tensor(mu, requires_grad=True), lib.tensor(log_s, requires_grad=True)
        q = M.Independent(M.Normal(m, ls.exp()), 1)
        prior = M.Independent(M.Normal(lib.zeros(8, dtype=lib.float64), lib.ones(8, dtype=lib.float64)), 1)
        prior = prior.expand((5,))
        k = M.kl_divergence(q, prior)
        assert tuple(k.shape) == (5,)
        gm, gs = lib.autograd.grad(k.mean(), [m, ls], create_graph=True)
        hs, = lib.autograd.grad((gs * gs).sum(), [ls])
        res.append((k, gm, gs, hs))
    for a, b in zip(*res):
        close(a, b, 1e-12)


# ------------------------------------------------------------------------------------------------------------
# The infinite results (torch's `t[mask] = inf`), their gradients, and the mask's IndexError

def _both(fn):
    return fn(TD, torch), fn(D, tg)


INFINITE_CASES = {
    "bernoulli": lambda M, L: (M.Bernoulli(L.tensor([0.0, 1.0, 0.3, 1.0, 0.0], requires_grad=True)),
                               M.Bernoulli(L.tensor([0.0, 1.0, 0.0, 0.5, 1.0]))),
    "categorical": lambda M, L: (M.Categorical(L.tensor([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]], requires_grad=True)),
                                 M.Categorical(L.tensor([[0.0, 0.3, 0.7], [0.0, 0.5, 0.5]]))),
    "onehot": lambda M, L: (M.OneHotCategorical(L.tensor([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])),
                            M.OneHotCategorical(L.tensor([[0.5, 0.0, 0.5], [0.1, 0.4, 0.5]]))),
    "uniform": lambda M, L: (M.Uniform(L.tensor([0.0, 0.0, -1.0]), L.tensor([1.0, 2.0, 0.5])),
                             M.Uniform(L.tensor([-1.0, 0.5, -2.0]), L.tensor([2.0, 3.0, 0.0]))),
    "pareto": lambda M, L: (M.Pareto(L.tensor([1.0, 2.0]), L.tensor([2.0, 3.0])),
                            M.Pareto(L.tensor([1.5, 1.0]), L.tensor([2.0, 3.0]))),
    "pareto-exponential": lambda M, L: (M.Pareto(L.tensor([1.0, 2.0, 1.0]), L.tensor([0.5, 1.0, 3.0])),
                                        M.Exponential(L.tensor([1.0, 2.0, 1.5]))),
    "pareto-gamma": lambda M, L: (M.Pareto(L.tensor([1.0, 2.0, 1.0]), L.tensor([0.5, 1.0, 3.0])),
                                  M.Gamma(L.tensor([1.0, 2.0, 1.5]), L.tensor([1.0, 1.0, 2.0]))),
    "pareto-normal": lambda M, L: (M.Pareto(L.tensor([1.0, 2.0, 1.0]), L.tensor([1.5, 2.0, 3.0])),
                                   M.Normal(L.tensor([0.0, 1.0, 2.0]), L.tensor([1.0, 2.0, 1.5]))),
    "binomial": lambda M, L: (M.Binomial(L.tensor([10.0, 12.0]), L.tensor([0.3, 0.4])),
                              M.Binomial(L.tensor([10.0, 10.0]), L.tensor([0.5, 0.5]))),
    "beta-uniform": lambda M, L: (M.Beta(L.tensor([2.0, 2.0, 2.0]), L.tensor([3.0, 3.0, 3.0])),
                                  M.Uniform(L.tensor([0.0, 0.1, -1.0]), L.tensor([1.0, 1.0, 0.9]))),
    "cb-uniform": lambda M, L: (M.ContinuousBernoulli(L.tensor([0.2, 0.3, 0.7])),
                                M.Uniform(L.tensor([0.0, -0.1, -1.0]), L.tensor([1.5, 1.0, 1.1]))),
    "uniform-cb": lambda M, L: (M.Uniform(L.tensor([0.0, 0.2, 0.3]), L.tensor([0.5, 1.0, 0.6])),
                                M.ContinuousBernoulli(L.tensor([0.2, 0.3, 0.7]))),
    "uniform-beta": lambda M, L: (M.Uniform(L.tensor([0.0, -0.2, 0.3]), L.tensor([0.5, 1.0, 1.6])),
                                  M.Beta(L.tensor([2.0, 2.0, 2.0]), L.tensor([3.0, 3.0, 3.0]))),
    "uniform-exponential": lambda M, L: (M.Uniform(L.tensor([0.0, -0.2]), L.tensor([0.5, 1.0])),
                                         M.Exponential(L.tensor([2.0, 2.0]))),
    "uniform-gamma": lambda M, L: (M.Uniform(L.tensor([0.0, -0.2]), L.tensor([0.5, 1.0])),
                                   M.Gamma(L.tensor([2.0, 2.0]), L.tensor([3.0, 3.0]))),
    "uniform-pareto": lambda M, L: (M.Uniform(L.tensor([1.0, 0.5]), L.tensor([2.0, 1.0])),
                                    M.Pareto(L.tensor([1.0, 1.0]), L.tensor([2.0, 2.0]))),
    "independent": lambda M, L: (M.Independent(M.Uniform(L.tensor([[0.0, 0.0], [0.0, 0.0]]),
                                                         L.tensor([[1.0, 1.0], [1.0, 1.0]])), 1),
                                 M.Independent(M.Uniform(L.tensor([[-1.0, 0.5], [-1.0, -1.0]]),
                                                         L.tensor([[2.0, 2.0], [2.0, 2.0]])), 1)),
    "halfnormal-transformed": lambda M, L: (M.HalfNormal(L.tensor([1.0, 2.0])), M.HalfNormal(L.tensor([2.0, 0.5]))),
}


@pytest.mark.parametrize("case", sorted(INFINITE_CASES))
def test_infinite_cases(case):
    (pt, qt), (pg, qg) = _both(INFINITE_CASES[case])
    kt, kg = TD.kl_divergence(pt, qt), D.kl_divergence(pg, qg)
    close(kt, kg, 1e-6)
    if case != "halfnormal-transformed":
        assert np.isinf(arr(kt)).any()
    # the gradient with the infinite entries set (torch's index_put: zero gradient there)
    leaves_t = [v for v in vars(pt).values() if isinstance(v, torch.Tensor) and v.requires_grad and v.is_leaf]
    leaves_g = [v for v in vars(pg).values() if isinstance(v, tg.Tensor) and v.requires_grad and v.is_leaf]
    assert len(leaves_t) == len(leaves_g)
    if leaves_t:
        w = np.where(np.isfinite(arr(kt)), 1.0, 0.0).astype(np.float32)
        (kt * torch.tensor(w)).sum().backward()
        (kg * tg.tensor(w)).sum().backward()
        close(leaves_t[0].grad, leaves_g[0].grad, 1e-6)


def test_the_mask_must_lead_the_result():
    """torch's `result[p.alpha <= 1] = inf` indexes the leading dims: an IndexError when q's batch is larger."""
    def fn(M, L):
        return lambda: M.kl_divergence(M.Pareto(L.tensor([1.0, 2.0, 1.0]), L.tensor([0.5, 1.0, 3.0])),
                                       M.Exponential(L.ones(2, 3)))
    _messages(fn(TD, torch), fn(D, tg), IndexError)

    def fn2(M, L):   # a 0-dim mask (p's batch ()) sets the whole result, as torch does
        return [M.kl_divergence(M.Pareto(L.tensor(1.0), L.tensor(alpha)), M.Exponential(L.tensor([1.0, 2.0, 3.0])))
                for alpha in (0.5, 3.0)]
    for a, b in zip(*_both(fn2)):
        close(a, b, 1e-6)

    def fn3(M, L):   # a mask of p's batch (3, 1) against the result's (3, 2)
        return lambda: M.kl_divergence(M.Pareto(L.ones(3, 1), L.ones(3, 1)), M.Exponential(L.ones(3, 2)))
    _messages(fn3(TD, torch), fn3(D, tg), IndexError)


# ------------------------------------------------------------------------------------------------------------
# The NotImplementedError / ValueError cases

def _n(M, L, *s):
    return M.Normal(L.zeros(*s), L.ones(*s))


ERRORS = {
    "independent-ndims": (lambda M, L: M.kl_divergence(M.Independent(_n(M, L, 2, 3, 4), 1),
                                                       M.Independent(_n(M, L, 2, 3, 4), 2)), NotImplementedError),
    "transformed-transforms": (lambda M, L: M.kl_divergence(
        M.TransformedDistribution(_n(M, L, 3), [M.ExpTransform()]),
        M.TransformedDistribution(_n(M, L, 3), [M.SigmoidTransform()])), NotImplementedError),
    "transformed-affine-params": (lambda M, L: M.kl_divergence(
        M.TransformedDistribution(_n(M, L, 3), [M.AffineTransform(0.0, 2.0)]),
        M.TransformedDistribution(_n(M, L, 3), [M.AffineTransform(0.0, 3.0)])), NotImplementedError),
    "transformed-count": (lambda M, L: M.kl_divergence(
        M.TransformedDistribution(_n(M, L, 3), [M.ExpTransform()]),
        M.TransformedDistribution(_n(M, L, 3), [M.ExpTransform(), M.ExpTransform()])), NotImplementedError),
    "transformed-event-shape": (lambda M, L: M.kl_divergence(
        M.TransformedDistribution(M.Independent(_n(M, L, 3), 1), [M.ExpTransform()]),
        M.TransformedDistribution(_n(M, L, 3), [M.ExpTransform()])), NotImplementedError),
    "lognormal-halfnormal": (lambda M, L: M.kl_divergence(M.LogNormal(0.0, 1.0), M.HalfNormal(1.0)),
                             NotImplementedError),
    "binomial-count": (lambda M, L: M.kl_divergence(M.Binomial(L.tensor([10.0, 5.0]), L.tensor([0.3, 0.4])),
                                                    M.Binomial(L.tensor([10.0, 10.0]), L.tensor([0.5, 0.5]))),
                       NotImplementedError),
    "expfamily-cross": (lambda M, L: M.kl_divergence(M.Bernoulli(L.tensor([0.3])),
                                                     M.Gamma(L.tensor([1.0]), L.tensor([1.0]))),
                        NotImplementedError),
    "expfamily-cross-2": (lambda M, L: M.kl_divergence(M.Poisson(L.tensor([1.0])), M.Geometric(L.tensor([0.5]))),
                          NotImplementedError),
    "unregistered": (lambda M, L: M.kl_divergence(M.Laplace(0.0, 1.0), M.Cauchy(0.0, 1.0)), NotImplementedError),
    "unregistered-studentt": (lambda M, L: M.kl_divergence(M.StudentT(3.0), M.Normal(0.0, 1.0)),
                              NotImplementedError),
    "unregistered-cb-gamma": (lambda M, L: M.kl_divergence(M.ContinuousBernoulli(L.tensor([0.3])),
                                                           M.Gamma(L.tensor([1.0]), L.tensor([1.0]))),
                              NotImplementedError),
    "mvn-event": (lambda M, L: M.kl_divergence(M.MultivariateNormal(L.zeros(2), L.eye(2)),
                                               M.MultivariateNormal(L.zeros(3), L.eye(3))), ValueError),
    "lowrank-event": (lambda M, L: M.kl_divergence(
        M.LowRankMultivariateNormal(L.zeros(2), L.ones(2, 1), L.ones(2)),
        M.LowRankMultivariateNormal(L.zeros(3), L.ones(3, 1), L.ones(3))), ValueError),
    "mvn-lowrank-event": (lambda M, L: M.kl_divergence(
        M.MultivariateNormal(L.zeros(2), L.eye(2)),
        M.LowRankMultivariateNormal(L.zeros(3), L.ones(3, 1), L.ones(3))), ValueError),
    "lowrank-mvn-event": (lambda M, L: M.kl_divergence(
        M.LowRankMultivariateNormal(L.zeros(3), L.ones(3, 1), L.ones(3)),
        M.MultivariateNormal(L.zeros(2), L.eye(2))), ValueError),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors(case):
    fn, exc = ERRORS[case]
    _messages(lambda: fn(TD, torch), lambda: fn(D, tg), exc)


def test_transformed_same_transforms_is_the_base_kl():
    def fn(M, L):
        loc, scale = L.tensor([0.0, 1.0, -1.0]), L.tensor([1.0, 2.0, 0.5])
        p = M.TransformedDistribution(M.Normal(loc, scale), [M.ExpTransform(), M.AffineTransform(1.0, 3.0)])
        q = M.TransformedDistribution(M.Normal(loc + 1, scale * 2), [M.ExpTransform(), M.AffineTransform(1.0, 3.0)])
        return [M.kl_divergence(p, q), M.kl_divergence(M.LogNormal(loc, scale), M.LogNormal(loc * 2, scale + 1)),
                M.kl_divergence(M.HalfNormal(scale), M.HalfNormal(scale * 3))]
    for a, b in zip(*_both(fn)):
        close(a, b, 1e-6)


def test_dispatch_most_specific_and_ambiguity():
    class N1(D.Normal):
        pass

    class N2(N1):
        pass

    class TN1(TD.Normal):
        pass

    class TN2(TN1):
        pass

    for M, A, B in ((D, N1, N2), (TD, TN1, TN2)):
        M.register_kl(A, M.Normal)(lambda p, q: p.loc * 0 + 1.0)
        M.register_kl(M.Normal, B)(lambda p, q: p.loc * 0 + 2.0)
    with warnings.catch_warnings(record=True) as wt:
        warnings.simplefilter("always")
        kt = TD.kl_divergence(TN2(torch.zeros(1), torch.ones(1)), TN2(torch.zeros(1), torch.ones(1)))
    with warnings.catch_warnings(record=True) as wg:
        warnings.simplefilter("always")
        kg = D.kl_divergence(N2(tg.zeros(1), tg.ones(1)), N2(tg.zeros(1), tg.ones(1)))
    assert arr(kt).tolist() == arr(kg).tolist() == [1.0]
    assert [str(w.message).replace("TN", "N") for w in wt] == [str(w.message) for w in wg]
    assert [w.category for w in wg] == [RuntimeWarning]
    for M, A in ((D, N1), (TD, TN1)):   # leave the registries as they were
        for key in [k for k in M.kl._KL_REGISTRY if A in k or any(issubclass(t, A) for t in k)]:
            del M.kl._KL_REGISTRY[key]
        M.kl._KL_MEMOIZE.clear()


# ------------------------------------------------------------------------------------------------------------
# constraints.cat / constraints.stack

def _cons(M):
    C = M.constraints
    return {
        "cat": C.cat([C.positive, C.real, C.unit_interval], 1, [1, 2, 1]),
        "cat-neg": C.cat([C.positive, C.integer_interval(0, 3)], -1, [2, 1]),
        "cat-default-lengths": C.cat([C.positive, C.less_than(0.0)]),
        "cat-boolean": C.cat([C.boolean, C.nonnegative_integer], 0, [1, 1]),
        "stack": C.stack([C.positive, C.real, C.unit_interval], 1),
        "stack-neg": C.stack([C.positive, C.greater_than(2.0)], -1),
        "stack-dim0": C.stack([C.boolean, C.real]),
        "stack-vec": C.stack([C.simplex, C.real_vector], 0),
        "stack-vec-neg": C.stack([C.simplex, C.real_vector], -1),
        "stack-vec-neg2": C.stack([C.simplex, C.real_vector], -2),
        "cat-vec": C.cat([C.simplex, C.real_vector], 0, [1, 1]),
        "stack-of-cat": C.stack([C.cat([C.positive, C.real], 0, [1, 1]), C.real], 1),
    }


VALUES = {
    "cat": np.array([[1.0, -2.0, 3.0, 0.5], [-1.0, 0.0, 1.0, 1.5], [2.0, np.nan, 0.0, 0.0]]),
    "cat-neg": np.array([[1.0, 2.0, 3.0], [1.0, -2.0, 4.0], [0.0, 1.0, 1.5]]),
    "cat-default-lengths": np.array([[1.0, -2.0, 3.0], [-1.0, 0.0, -1.0]]),
    "cat-boolean": np.array([[1.0, 0.0, 0.5], [3.0, -1.0, 2.0]]),
    "stack": np.array([[1.0, -2.0, 0.5], [-1.0, 0.0, 1.5], [2.0, 3.0, 0.0]]),
    "stack-neg": np.array([[1.0, 3.0], [-1.0, 2.0], [0.5, 2.5]]),
    "stack-dim0": np.array([[1.0, 0.5, 0.0], [np.nan, -3.0, 2.0]]),
    "stack-vec": np.array([[[0.25, 0.75], [0.5, 0.6]], [[1.0, 2.0], [np.nan, 1.0]]]),
    "stack-vec-neg": np.array([[[0.25, 1.0], [0.75, 2.0]], [[0.5, 1.0], [0.6, np.nan]]]),
    "stack-vec-neg2": np.array([[[0.25, 0.75], [1.0, 2.0]], [[0.5, 0.6], [np.nan, 1.0]]]),
    "cat-vec": np.array([[[0.25, 0.75], [0.5, 0.6]], [[1.0, 2.0], [np.nan, 1.0]]]),
    "stack-of-cat": np.array([[[1.0, -1.0], [0.0, 3.0]], [[-2.0, 5.0], [1.0, 1.0]]]),
}


@pytest.mark.parametrize("case", sorted(VALUES))
def test_cat_stack_constraints(case):
    ct, cg = _cons(TD)[case], _cons(D)[case]
    assert repr(cg) == repr(ct)
    assert cg.event_dim == ct.event_dim
    assert cg.is_discrete == ct.is_discrete
    assert type(cg).__name__ == type(ct).__name__ and isinstance(cg, GC.Constraint)
    for dt in (np.float32, np.float64):
        v = VALUES[case].astype(dt)
        rt, rg = ct.check(torch.tensor(v)), cg.check(tg.tensor(v))
        assert rg.dtype == tg.bool
        np.testing.assert_array_equal(arr(rg), arr(rt))


def test_cat_stack_attributes_and_errors():
    for M in (TD, D):
        C = M.constraints
        c = C.cat([C.positive, C.real], dim=-1, lengths=(2, 1))
        assert c.cseq == [C.positive, C.real] and c.lengths == [2, 1] and c.dim == -1
        assert C.cat([C.positive, C.real]).lengths == [1, 1]
        s = C.stack((C.positive, C.real), dim=2)
        assert s.cseq == [C.positive, C.real] and s.dim == 2
        assert C.cat is not None and isinstance(c, C.cat) and isinstance(s, C.stack)

    def fn(M, L, k):
        C = M.constraints
        return [lambda: C.cat([C.positive, 1.0]),
                lambda: C.cat([C.positive, C.real], 0, [1]),
                lambda: C.stack([C.positive, "real"]),
                lambda: C.cat([C.positive, C.real], 2, [1, 1]).check(L.zeros(2, 2)),
                lambda: C.cat([C.positive, C.real], -3, [1, 1]).check(L.zeros(2, 2)),
                lambda: C.stack([C.positive, C.real], 2).check(L.zeros(2, 2)),
                lambda: C.stack([C.positive, C.real], -3).check(L.zeros(2, 2))][k]
    for k in range(7):
        _messages(fn(TD, torch, k), fn(D, tg, k), AssertionError)


def test_cat_stack_constraints_with_transforms():
    """biject_to / transform_to of the constraints, and CatTransform / StackTransform's (co)domains."""
    x = np.random.default_rng(3).normal(size=(2, 4))
    res = []
    for M, L in ((TD, torch), (D, tg)):
        C = M.constraints
        c = C.cat([C.positive, C.real, C.unit_interval], 1, [1, 2, 1])
        s = C.stack([C.positive, C.interval(-1.0, 2.0)], 0)
        tc, ts = M.biject_to(c), M.transform_to(s)
        yc, ys = tc(L.tensor(x)), ts(L.tensor(x))
        res.append((yc, ys, c.check(yc), s.check(ys), tc.inv(yc), ts.inv(ys),
                    tc.log_abs_det_jacobian(L.tensor(x), yc)))
        assert repr(tc.domain) == "Cat()" and repr(ts.codomain) == "Stack()"
        assert type(tc.codomain).__name__ == "_Cat" and type(ts.codomain).__name__ == "_Stack"
        assert isinstance(M.CatTransform([M.ExpTransform()], 0, [1]).codomain, C.cat)
        assert isinstance(M.StackTransform([M.ExpTransform()], 0).domain, C.stack)
    for a, b in zip(*res):
        close(a, b, 1e-12) if a.dtype != torch.bool else np.testing.assert_array_equal(arr(b), arr(a))


AMBIGUOUS_SCRIPT = """
import torch
import torch.distributions as D
class A(D.Normal): pass
class B(D.Normal): pass
@D.register_kl(A, D.Normal)
def f(p, q): return torch.tensor(1.)
@D.register_kl(D.Normal, B)
def g(p, q): return torch.tensor(2.)
print(D.kl_divergence(A(0., 1.), B(0., 1.)), torch.log(torch.tensor([0.0, 1.0])))
"""


def test_ambiguous_kl_warns_while_numpy_floating_point_messages_stay_silent(tmp_path):
    """With Python's default filters: torch's RuntimeWarning for an ambiguous pair shows (tapegrad's filter hid every
    RuntimeWarning from its modules), NumPy's 'divide by zero' for log(0) does not (torch has none)."""
    import os
    import subprocess
    import sys
    script = tmp_path / "ambiguous.py"
    script.write_text(AMBIGUOUS_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outputs = []
    for launch in ([], ["-m", "tapegrad"]):
        r = subprocess.run([sys.executable, *launch, str(script)], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONPATH=root), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        outputs.append((r.stdout, [line for line in r.stderr.splitlines() if "Warning" in line]))
    assert [w.split(": ", 1)[1] for w in outputs[1][1]] == [w.split(": ", 1)[1] for w in outputs[0][1]]
    assert outputs[1][0] == outputs[0][0] and len(outputs[0][1]) == 1
