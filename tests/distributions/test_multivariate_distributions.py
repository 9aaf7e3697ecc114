"""torch.distributions parity with torch 2.13 for OneHotCategorical(StraightThrough), Multinomial,
MixtureSameFamily, LowRankMultivariateNormal, Wishart and LKJCholesky: values, shapes, random streams,
gradients, validation errors, warnings and reprs, each computed by both libraries on the same inputs."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg
from parity import D, TD, DTYPES, DT_IDS, arr, close, same, tol



RNG = np.random.default_rng(4321)
CAT = RNG.uniform(0.1, 1.0, size=(2, 3, 5))
MIX_LOC = RNG.normal(size=(2, 3, 5))
MIX_SCALE = RNG.uniform(0.5, 2.0, size=(2, 3, 5))
IND_LOC = RNG.normal(size=(2, 5, 4))
IND_SCALE = RNG.uniform(0.5, 2.0, size=(2, 5, 4))
_A = RNG.normal(size=(4, 2, 2))
MVN_COV = _A @ _A.transpose(0, 2, 1) + np.eye(2)
MVN_LOC = RNG.normal(size=(4, 2))
LR_LOC = RNG.normal(size=(2, 3))
LR_W = RNG.normal(size=(2, 3, 2))
LR_DIAG = RNG.uniform(0.5, 2.0, size=(3,))
_B = RNG.normal(size=(2, 3, 3))
W_COV = _B @ _B.transpose(0, 2, 1) + np.eye(3)
W_DF = np.array([4.0, 6.5])
LKJ_CONC = np.array([0.5, 2.0])


def _corr_cholesky(shape, dim):
    L = np.tril(RNG.normal(size=shape + (dim, dim)))
    d = np.arange(dim)
    L[..., d, d] = np.abs(L[..., d, d]) + 0.1
    return L / np.linalg.norm(L, axis=-1, keepdims=True)


def pair(name, npdt, tdt, gdt, grad=False):
    """The same distribution built by torch and by tapegrad (parameters as leaves when grad)."""
    def both(*arrays):
        return ([torch.tensor(np.asarray(a).astype(npdt), dtype=tdt, requires_grad=grad) for a in arrays],
                [tg.tensor(np.asarray(a).astype(npdt), dtype=gdt, requires_grad=grad) for a in arrays])
    if name in ("OneHotCategorical", "OneHotCategoricalStraightThrough"):
        (a,), (c,) = both(CAT)
        return getattr(TD, name)(a), getattr(D, name)(c), (a,), (c,)
    if name == "OneHotCategoricalLogits":
        (a,), (c,) = both(np.log(CAT))
        return TD.OneHotCategorical(logits=a), D.OneHotCategorical(logits=c), (a,), (c,)
    if name == "Multinomial":
        (a,), (c,) = both(CAT)
        return TD.Multinomial(6, a), D.Multinomial(6, c), (a,), (c,)
    if name == "MultinomialLogits":
        (a,), (c,) = both(np.log(CAT))
        return TD.Multinomial(4, logits=a), D.Multinomial(4, logits=c), (a,), (c,)
    if name == "MixtureNormal":
        (p, m, s), (q, n, t) = both(CAT, MIX_LOC, MIX_SCALE)
        return (TD.MixtureSameFamily(TD.Categorical(p), TD.Normal(m, s)),
                D.MixtureSameFamily(D.Categorical(q), D.Normal(n, t)), (p, m, s), (q, n, t))
    if name == "MixtureNormalSharedWeights":   # a mixture batch_shape () under components of batch (2, 3)
        (p, m, s), (q, n, t) = both(CAT[0, 0], MIX_LOC, MIX_SCALE)
        return (TD.MixtureSameFamily(TD.Categorical(logits=p), TD.Normal(m, s)),
                D.MixtureSameFamily(D.Categorical(logits=q), D.Normal(n, t)), (p, m, s), (q, n, t))
    if name == "MixtureNormalPartialWeights":   # a mixture batch_shape (3,) under components of batch (2, 3)
        (p, m, s), (q, n, t) = both(CAT[1], MIX_LOC, MIX_SCALE)
        return (TD.MixtureSameFamily(TD.Categorical(p), TD.Normal(m, s)),
                D.MixtureSameFamily(D.Categorical(q), D.Normal(n, t)), (p, m, s), (q, n, t))
    if name == "MixtureIndependentNormal":
        (p, m, s), (q, n, t) = both(np.log(CAT[:, 0]), IND_LOC, IND_SCALE)
        return (TD.MixtureSameFamily(TD.Categorical(logits=p), TD.Independent(TD.Normal(m, s), 1)),
                D.MixtureSameFamily(D.Categorical(logits=q), D.Independent(D.Normal(n, t), 1)),
                (p, m, s), (q, n, t))
    if name == "MixtureMultivariateNormal":
        (p, m, s), (q, n, t) = both(CAT[0, 0, :4], MVN_LOC, MVN_COV)
        return (TD.MixtureSameFamily(TD.Categorical(p), TD.MultivariateNormal(m, s)),
                D.MixtureSameFamily(D.Categorical(q), D.MultivariateNormal(n, t)), (p, m, s), (q, n, t))
    if name == "LowRankMultivariateNormal":
        (a, b, c), (d, e, f) = both(LR_LOC, LR_W, LR_DIAG)
        return (TD.LowRankMultivariateNormal(a, b, c), D.LowRankMultivariateNormal(d, e, f), (a, b, c),
                (d, e, f))
    if name in ("Wishart", "WishartPrecision"):
        key = "covariance_matrix" if name == "Wishart" else "precision_matrix"
        (a, b), (c, d) = both(W_DF, W_COV)
        return TD.Wishart(a, **{key: b}), D.Wishart(c, **{key: d}), (a, b), (c, d)
    if name == "WishartTril":
        (a, b), (c, d) = both(W_DF, np.linalg.cholesky(W_COV))
        return TD.Wishart(a, scale_tril=b), D.Wishart(c, scale_tril=d), (a, b), (c, d)
    if name == "WishartScalarDf":
        (b,), (d,) = both(W_COV)
        return TD.Wishart(5.0, b), D.Wishart(5.0, d), (b,), (d,)
    if name == "LKJCholesky":
        (a,), (c,) = both(LKJ_CONC)
        return TD.LKJCholesky(3, a), D.LKJCholesky(3, c), (a,), (c,)
    raise KeyError(name)


def value_for(name, npdt):
    if name.startswith("OneHotCategorical"):
        return np.eye(5)[RNG.integers(0, 5, size=(4, 2, 3))].astype(npdt)
    if name.startswith("Multinomial"):
        n = 6 if name == "Multinomial" else 4
        return RNG.multinomial(n, [0.1, 0.3, 0.2, 0.25, 0.15], size=(4, 2, 3)).astype(npdt)
    if name.startswith("MixtureNormal"):
        return RNG.normal(size=(4, 2, 3)).astype(npdt)
    if name == "MixtureIndependentNormal":
        return RNG.normal(size=(3, 2, 4)).astype(npdt)
    if name == "MixtureMultivariateNormal":
        return RNG.normal(size=(3, 2)).astype(npdt)
    if name == "LowRankMultivariateNormal":
        return RNG.normal(size=(4, 2, 3)).astype(npdt)
    if name.startswith("Wishart"):
        B = RNG.normal(size=(4, 2, 3, 5))
        return (B @ B.transpose(0, 1, 3, 2) + 0.5 * np.eye(3)).astype(npdt)
    if name == "LKJCholesky":
        return _corr_cholesky((4, 2), 3).astype(npdt)
    raise KeyError(name)


NAMES = ["OneHotCategorical", "OneHotCategoricalLogits", "OneHotCategoricalStraightThrough", "Multinomial",
         "MultinomialLogits", "MixtureNormal", "MixtureNormalSharedWeights", "MixtureNormalPartialWeights",
         "MixtureIndependentNormal",
         "MixtureMultivariateNormal", "LowRankMultivariateNormal", "Wishart", "WishartPrecision", "WishartTril",
         "WishartScalarDf", "LKJCholesky"]
# torch's own formulas through a matrix factorisation: agreement to the factorisation's rounding
LOOSE = {"MixtureMultivariateNormal": 50, "LowRankMultivariateNormal": 50, "Wishart": 50, "WishartPrecision": 50,
         "WishartTril": 50, "WishartScalarDf": 50}


def _props(d, props=("mean", "variance", "stddev", "mode", "entropy")):
    out = {}
    for prop in props:
        try:
            out[prop] = d.entropy() if prop == "entropy" else getattr(d, prop)
        except NotImplementedError:
            out[prop] = None
        except RuntimeError as e:   # (torch's scalar-df Wishart over a batch of matrices: view fails)
            out[prop] = e
    return out


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", NAMES)
def test_values_and_shapes(name, npdt, tdt, gdt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b, _, _ = pair(name, npdt, tdt, gdt)
    assert type(b).__name__ == type(a).__name__
    assert repr(b.batch_shape) == repr(a.batch_shape) and repr(b.event_shape) == repr(a.event_shape)
    assert repr(b._extended_shape((2,))) == repr(a._extended_shape((2,)))
    assert b.has_rsample == a.has_rsample and b.has_enumerate_support == a.has_enumerate_support
    v = value_for(name, npdt)
    t = tol(npdt) * LOOSE.get(name, 1)
    close(a.log_prob(torch.tensor(v, dtype=tdt)), b.log_prob(tg.tensor(v, dtype=gdt)), t)
    pa, pb = _props(a), _props(b)
    for prop, va in pa.items():
        if va is None:
            assert pb[prop] is None, prop
        elif isinstance(va, Exception):
            assert type(pb[prop]) is type(va) and str(pb[prop]) == str(va), (prop, pb[prop], va)
        else:
            close(va, pb[prop], t)
    if a.has_enumerate_support:
        same(a.enumerate_support(), b.enumerate_support())
        same(a.enumerate_support(expand=False), b.enumerate_support(expand=False))
    for attr in ("probs", "logits", "param_shape", "total_count", "scale_tril", "covariance_matrix",
                 "precision_matrix", "cov_factor", "cov_diag", "loc", "df", "concentration"):
        if hasattr(a, attr):
            va, vb = getattr(a, attr), getattr(b, attr)
            if isinstance(va, torch.Tensor):
                close(va, vb, t)
            else:
                assert repr(vb) == repr(va), attr


@pytest.mark.parametrize("name", NAMES)
def test_expand(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b, _, _ = pair(name, np.float64, torch.float64, tg.float64)
    shape = (5,) + tuple(a.batch_shape)
    ea, eb = a.expand(shape), b.expand(shape)
    assert type(eb) is type(b) and repr(eb.batch_shape) == repr(ea.batch_shape)
    assert repr(eb.event_shape) == repr(ea.event_shape) and eb._validate_args == ea._validate_args
    t = 1e-10
    props = ("mean", "variance") + (() if name.startswith("Multinomial") else ("entropy",))
    pa, pb = _props(ea, props), _props(eb, props)   # (torch's expanded Multinomial has no entropy: below)
    for prop in props:
        if pa[prop] is None:
            assert pb[prop] is None
        elif isinstance(pa[prop], torch.Tensor):
            close(pa[prop], pb[prop], t)
    v = value_for(name, np.float64)[:, None]   # (4, 1, batch..., event...) against the (5, batch...) batch
    close(ea.log_prob(torch.tensor(v)), eb.log_prob(tg.tensor(v)), t * 100)
    torch.manual_seed(3)
    tg.manual_seed(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(lambda: ea.sample((2,)), lambda: eb.sample((2,)), lambda x, y: close(x, y, 1e-12))


def both(fa, fb, check):
    """fa() and fb() agree (by check), or raise the same exception with the same message."""
    try:
        ra = fa()
    except Exception as e:
        with pytest.raises(type(e)) as eb:
            fb()
        assert str(eb.value) == str(e)
        return None
    check(ra, fb())
    return ra


def test_multinomial_expanded_entropy():
    """torch leaves an expanded Multinomial without its Binomial (entropy raises AttributeError); tapegrad's
    keeps it: the entropy is the unexpanded one's, broadcast."""
    a, b, _, _ = pair("Multinomial", np.float64, torch.float64, tg.float64)
    with pytest.raises(AttributeError):
        a.expand((5, 2, 3)).entropy()
    close(a.entropy().expand(5, 2, 3), b.expand((5, 2, 3)).entropy(), 1e-12)


STREAM_NAMES = ["OneHotCategorical", "OneHotCategoricalLogits", "OneHotCategoricalStraightThrough", "Multinomial",
                "MultinomialLogits", "MixtureNormal", "MixtureNormalSharedWeights", "MixtureNormalPartialWeights",
                "MixtureIndependentNormal",
                "MixtureMultivariateNormal", "LowRankMultivariateNormal", "Wishart", "WishartTril", "WishartScalarDf",
                "LKJCholesky"]


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", STREAM_NAMES)
@pytest.mark.parametrize("sample_shape", [(), (2,), (3, 1)])
def test_sample_streams_equal_torch(name, npdt, tdt, gdt, sample_shape):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b, _, _ = pair(name, npdt, tdt, gdt)
    torch.manual_seed(11)
    tg.manual_seed(11)
    # the same draws; matrix products (BLAS) and torch's vectorised norm round their own way: close values
    exact = name.startswith(("OneHot", "Multinomial", "MixtureNormal", "MixtureIndependent"))
    check = same if exact else (lambda x, y: close(x, y, tol(npdt) * 20))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):   # twice: the streams stay in step across calls
            xa = both(lambda: a.sample(sample_shape), lambda: b.sample(sample_shape), check)
            if xa is None:   # (torch's MixtureSameFamily cannot gather under a mixture of smaller batch_shape)
                assert name in ("MixtureNormalSharedWeights", "MixtureNormalPartialWeights")
                return
            if a.has_rsample:
                check(a.rsample(sample_shape), b.rsample(sample_shape))
    same(torch.rand(3, dtype=torch.float64), tg.rand(3, dtype=tg.float64))   # the generator is in the same state
    same(torch.randn(3, dtype=torch.float64), tg.randn(3, dtype=tg.float64))   # and the Box-Muller cache


def test_multinomial_counts_and_one_hot_samples_are_valid():
    a, b, _, _ = pair("Multinomial", np.float32, torch.float32, tg.float32)
    tg.manual_seed(0)
    x = arr(b.sample((7,)))
    assert x.shape == (7, 2, 3, 5) and (x.sum(-1) == 6).all() and x.dtype == np.float32
    x = arr(D.OneHotCategorical(tg.tensor(CAT)).sample((7,)))
    assert x.shape == (7, 2, 3, 5) and (x.sum(-1) == 1).all() and set(np.unique(x)) <= {0.0, 1.0}


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", ["LowRankMultivariateNormal", "Wishart", "WishartTril", "WishartPrecision",
                                  "OneHotCategoricalStraightThrough"])
def test_rsample_gradients(name, npdt, tdt, gdt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b, ta, ga = pair(name, npdt, tdt, gdt, grad=True)
        torch.manual_seed(5)
        tg.manual_seed(5)
        # (torch's Wishart redraws every sample once, and its backward then fails: test_wishart_rsample_backward)
        kw = {"max_try_correction": 0} if name.startswith("Wishart") else {}
        xa, xb = a.rsample((2,), **kw), b.rsample((2,), **kw)
    t = tol(npdt) * (1 if name.startswith("OneHot") else 200)
    close(xa, xb, t)
    w = RNG.normal(size=tuple(xa.shape)).astype(npdt)
    (xa * torch.tensor(w, dtype=tdt)).sum().backward()
    (xb * tg.tensor(w, dtype=gdt)).sum().backward()
    for p, q in zip(ta, ga):
        assert q.grad is not None
        close(p.grad, q.grad, t * 10)


def test_wishart_rsample_backward():
    """torch 2.13's Wishart.rsample redraws the valid samples in place (sample[is_singular] = sample_new), then
    changes the mask in place. Unbatched, both libraries backpropagate through the redraw. Batched, torch's
    backward fails on the mask's version counter; tapegrad's index_put keeps the mask it was given and returns
    the gradient of the redraw (checked against torch's gradient of the same second draw)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b, ta, ga = pair("WishartScalarDf", np.float64, torch.float64, tg.float64, grad=True)
        a, b = TD.Wishart(5.0, ta[0][0]), D.Wishart(5.0, ga[0][0])   # batch_shape ()
        torch.manual_seed(5)
        tg.manual_seed(5)
        xa, xb = a.rsample(), b.rsample()
        close(xa, xb, 1e-10)
        xa.sum().backward()
        xb.sum().backward()
        close(ta[0].grad, ga[0].grad, 1e-10)

        a, b, ta, ga = pair("Wishart", np.float64, torch.float64, tg.float64, grad=True)
        torch.manual_seed(5)
        tg.manual_seed(5)
        xa, xb = a.rsample((2,)), b.rsample((2,))
        close(xa, xb, 1e-10)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            xa.sum().backward()
        xb.sum().backward()
        a, _, ta, _ = pair("Wishart", np.float64, torch.float64, tg.float64, grad=True)
        torch.manual_seed(5)
        with torch.no_grad():
            a._bartlett_sampling((2,))   # the first draw, replaced
        a._bartlett_sampling((2,)).sum().backward()
        for p, q in zip(ta, ga):
            close(p.grad, q.grad, 1e-10)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_log_prob_and_entropy_gradients(name, npdt, tdt, gdt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b, ta, ga = pair(name, npdt, tdt, gdt, grad=True)
    v = value_for(name, npdt)
    continuous = not name.startswith(("OneHot", "Multinomial"))
    va, vb = torch.tensor(v, dtype=tdt, requires_grad=continuous), tg.tensor(v, dtype=gdt, requires_grad=continuous)
    la = a.log_prob(va).sum()
    lb = b.log_prob(vb).sum()
    for prop in ("precision_matrix", "scale_tril", "covariance_matrix"):
        if hasattr(a, prop):
            la = la + (getattr(a, prop) * torch.tensor(W_COV[0, :1], dtype=tdt)).sum()
            lb = lb + (getattr(b, prop) * tg.tensor(W_COV[0, :1], dtype=gdt)).sum()
    pa, pb = _props(a), _props(b)
    for prop in ("entropy", "mean", "variance"):
        if isinstance(pa[prop], torch.Tensor) and torch.isfinite(pa[prop]).all():
            la = la + pa[prop].sum()
            lb = lb + pb[prop].sum()
    la.backward()
    lb.backward()
    t = tol(npdt) * 10 * LOOSE.get(name, 1)
    for p, q in zip(ta + (va,), ga + (vb,)):
        if p.grad is None:
            assert q.grad is None
        else:
            close(p.grad, q.grad, t)


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_mixture_cdf(npdt, tdt, gdt):
    for name in ("MixtureNormal", "MixtureNormalSharedWeights", "MixtureNormalPartialWeights"):
        a, b, ta, ga = pair(name, npdt, tdt, gdt, grad=True)
        v = value_for(name, npdt)
        ca, cb = a.cdf(torch.tensor(v, dtype=tdt)), b.cdf(tg.tensor(v, dtype=gdt))
        close(ca, cb, tol(npdt) * 10)
        ca.sum().backward()
        cb.sum().backward()
        for p, q in zip(ta, ga):
            close(p.grad, q.grad, tol(npdt) * 10)


def test_mixture_density_network():
    """An MDN: a linear layer gives mixture logits, means and log-scales of 2-D Independent Normals; train a few
    SGD steps on -log_prob, then draw from it, as torch."""
    rng = np.random.default_rng(7)
    k, dim = 3, 2
    X = rng.normal(size=(16, 4)).astype(np.float32)
    Y = rng.normal(size=(16, dim)).astype(np.float32)
    W0 = (0.3 * rng.normal(size=(4, k * (1 + 2 * dim)))).astype(np.float32)
    results = []
    for lib, M in ((torch, TD), (tg, D)):
        lib.manual_seed(0)
        W = lib.tensor(W0, requires_grad=True)
        opt = lib.optim.SGD([W], lr=0.05)
        losses = []
        for _ in range(4):
            out = lib.tensor(X) @ W
            logits = out[:, :k]
            mu = out[:, k:k + k * dim].reshape(-1, k, dim)
            sigma = out[:, k + k * dim:].reshape(-1, k, dim).exp()
            gmm = M.MixtureSameFamily(M.Categorical(logits=logits), M.Independent(M.Normal(mu, sigma), 1))
            loss = -gmm.log_prob(lib.tensor(Y)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        results.append((losses, arr(W), arr(gmm.sample((3,))), arr(gmm.mean), arr(gmm.variance)))
    (la, wa, sa, ma, va), (lb, wb, sb, mb, vb) = results
    np.testing.assert_allclose(lb, la, rtol=1e-5)
    np.testing.assert_allclose(wb, wa, rtol=1e-5, atol=1e-6)
    assert sa.shape == sb.shape == (3, 16, dim)
    np.testing.assert_allclose(sb, sa, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mb, ma, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vb, va, rtol=1e-5, atol=1e-6)


def test_straight_through_gradient_reaches_probs():
    p = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    grads = []
    for lib, M in ((torch, TD), (tg, D)):
        lib.manual_seed(2)
        probs = lib.tensor(p, requires_grad=True)
        x = M.OneHotCategoricalStraightThrough(probs).rsample((4,))
        (x * lib.tensor(np.arange(3.0))).sum().backward()
        grads.append((arr(x), arr(probs.grad)))
    same(torch.tensor(grads[0][0]), tg.tensor(grads[1][0]))
    close(torch.tensor(grads[0][1]), tg.tensor(grads[1][1]), 1e-12)


def test_multinomial_log_prob_edge_cases():
    # -inf logits where the count is 0 contribute nothing (torch zeroes them in a clone)
    lg = np.array([[0.0, -np.inf, 1.0], [0.5, 0.2, -np.inf]])
    v = np.array([[2.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    a = TD.Multinomial(3, logits=torch.tensor(lg), validate_args=False)
    b = D.Multinomial(3, logits=tg.tensor(lg), validate_args=False)
    close(a.log_prob(torch.tensor(v)), b.log_prob(tg.tensor(v)), 1e-12)
    # log_prob broadcasts one parameter set against a batch of values; total_count is read from the value
    a, b = TD.Multinomial(2, torch.tensor([0.2, 0.3, 0.5])), D.Multinomial(2, tg.tensor([0.2, 0.3, 0.5]))
    v = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    close(a.log_prob(torch.tensor(v, dtype=torch.float32)), b.log_prob(tg.tensor(v, dtype=tg.float32)), 1e-6)
    close(a.entropy(), b.entropy(), 1e-6)
    assert repr(a.support) == repr(b.support) and b.support.is_discrete and b.support.event_dim == 1


def _messages(fn_t, fn_g, exc=ValueError):
    with pytest.raises(exc) as et:
        fn_t()
    with pytest.raises(exc) as eg:
        fn_g()
    assert type(eg.value) is type(et.value)
    assert str(eg.value) == str(et.value)


@pytest.mark.parametrize("make,exc", [
    (lambda M, t: M.OneHotCategorical(t([0.2, -0.1])), ValueError),
    (lambda M, t: M.OneHotCategorical(), ValueError),
    (lambda M, t: M.OneHotCategorical(t(1.0)), ValueError),
    (lambda M, t: M.OneHotCategoricalStraightThrough(logits=t(1.0)), ValueError),
    (lambda M, t: M.Multinomial(2.0, t([0.5, 0.5])), NotImplementedError),
    (lambda M, t: M.Multinomial(2, t([0.5, -0.5])), ValueError),
    (lambda M, t: M.Multinomial(2), ValueError),
    (lambda M, t: M.MixtureSameFamily(M.Normal(t([0.0]), t([1.0])), M.Normal(t([0.0]), t([1.0]))), ValueError),
    (lambda M, t: M.MixtureSameFamily(M.Categorical(t([0.5, 0.5])), "normal"), ValueError),
    (lambda M, t: M.MixtureSameFamily(M.Categorical(t([0.5, 0.5])), M.Normal(t([0.0] * 3), t([1.0] * 3))),
     ValueError),
    (lambda M, t: M.MixtureSameFamily(M.Categorical(t([[0.5, 0.5]] * 2)), M.Normal(t([[0.0] * 2] * 3),
                                                                                   t([[1.0] * 2] * 3))), ValueError),
    (lambda M, t: M.LowRankMultivariateNormal(t(0.0), t([[1.0]]), t([1.0])), ValueError),
    (lambda M, t: M.LowRankMultivariateNormal(t([0.0]), t([1.0]), t([1.0])), ValueError),
    (lambda M, t: M.LowRankMultivariateNormal(t([0.0, 0.0]), t([[1.0]]), t([1.0, 1.0])), ValueError),
    (lambda M, t: M.LowRankMultivariateNormal(t([0.0, 0.0]), t([[1.0], [1.0]]), t([1.0])), ValueError),
    (lambda M, t: M.LowRankMultivariateNormal(t([[0.0, 0.0]] * 2), t([[[1.0], [1.0]]] * 3), t([1.0, 1.0])),
     ValueError),
    (lambda M, t: M.LowRankMultivariateNormal(t([0.0, 0.0]), t([[1.0], [1.0]]), t([1.0, -1.0])), ValueError),
    (lambda M, t: M.LowRankMultivariateNormal(t([0.0, float("nan")]), t([[1.0], [1.0]]), t([1.0, 1.0])),
     ValueError),
    (lambda M, t: M.Wishart(t(3.0)), AssertionError),
    (lambda M, t: M.Wishart(t(3.0), t([[1.0, 0.0], [0.0, 1.0]]), scale_tril=t([[1.0, 0.0], [0.0, 1.0]])),
     AssertionError),
    (lambda M, t: M.Wishart(t(3.0), t([1.0])), ValueError),
    (lambda M, t: M.Wishart(t([3.0, 0.5]), t([[1.0, 0.0], [0.0, 1.0]])), ValueError),
    (lambda M, t: M.Wishart(1.0, t([[1.0, 0.0], [0.0, 1.0]])), ValueError),
    (lambda M, t: M.Wishart(t(3.0), t([[1.0, 2.0], [2.0, 1.0]])), ValueError),
    (lambda M, t: M.Wishart(t(3.0), precision_matrix=t([[1.0, 0.5], [0.0, 1.0]])), ValueError),
    (lambda M, t: M.Wishart(t(3.0), scale_tril=t([[1.0, 0.5], [0.0, 1.0]])), ValueError),
    (lambda M, t: M.LKJCholesky(1, t(1.0)), ValueError),
    (lambda M, t: M.LKJCholesky(3, t([1.0, -1.0])), ValueError),
    (lambda M, t: M.LKJCholesky(3, 0.0), ValueError),
])
def test_parameter_validation_errors(make, exc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _messages(lambda: make(TD, lambda x: torch.tensor(x)), lambda: make(D, lambda x: tg.tensor(x)), exc)


def _mix(M, t):
    return M.MixtureSameFamily(M.Categorical(t([0.3, 0.7])), M.Gamma(t([1.0, 2.0]), t([1.0, 1.0])))


@pytest.mark.parametrize("make,value", [
    (lambda M, t: M.OneHotCategorical(t([0.2, 0.3, 0.5])), [0.0, 1.0, 1.0]),
    (lambda M, t: M.OneHotCategorical(t([0.2, 0.3, 0.5])), [0.0, 0.5, 0.5]),
    (lambda M, t: M.OneHotCategorical(t([0.2, 0.3, 0.5])), [0.0, 1.0]),
    (lambda M, t: M.Multinomial(3, t([0.2, 0.3, 0.5])), [1.0, 2.0, 1.0]),
    (lambda M, t: M.Multinomial(3, t([0.2, 0.3, 0.5])), [1.0, -1.0, 1.0]),
    (lambda M, t: _mix(M, t), [[0.5], [-1.0]]),
    (lambda M, t: M.MixtureSameFamily(M.Categorical(t([0.3, 0.7])),
                                      M.Independent(M.Normal(t([[0.0, 1.0]] * 2), t([[1.0, 1.0]] * 2)), 1)),
     [0.5, 1.0, 2.0]),
    (lambda M, t: M.LowRankMultivariateNormal(t([0.0, 0.0]), t([[1.0], [1.0]]), t([1.0, 1.0])),
     [0.0, 1.0, 2.0]),
    (lambda M, t: M.Wishart(t(3.0), t([[1.0, 0.0], [0.0, 1.0]])), [[1.0, 0.5], [0.2, 1.0]]),
    (lambda M, t: M.Wishart(t(3.0), t([[1.0, 0.0], [0.0, 1.0]])), [[1.0, 2.0], [2.0, 1.0]]),
    (lambda M, t: M.LKJCholesky(2, t(1.0)), [[1.0, 0.0], [0.5, 0.5]]),
    (lambda M, t: M.LKJCholesky(2, t(1.0)), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
])
def test_sample_validation_errors(make, value):
    _messages(lambda: make(TD, lambda x: torch.tensor(x)).log_prob(torch.tensor(value)),
              lambda: make(D, lambda x: tg.tensor(x)).log_prob(tg.tensor(value)))


@pytest.mark.filterwarnings("ignore:invalid value encountered in log:RuntimeWarning")   # (Normal's log(-1))
def test_mixture_gamma_support_and_validate_args_off():
    a, b = _mix(TD, torch.tensor), _mix(D, tg.tensor)
    assert repr(b.support) == repr(a.support)
    v = [[0.5], [3.0]]
    close(a.log_prob(torch.tensor(v)), b.log_prob(tg.tensor(v)), 1e-6)
    _messages(lambda: TD.MixtureSameFamily(TD.Categorical(torch.tensor([0.3, 0.7])),   # components validate
                                           TD.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, -1.0])),
                                           validate_args=False),
              lambda: D.MixtureSameFamily(D.Categorical(tg.tensor([0.3, 0.7])),
                                          D.Normal(tg.tensor([0.0, 1.0]), tg.tensor([1.0, -1.0])),
                                          validate_args=False))
    b = D.MixtureSameFamily(D.Categorical(tg.tensor([0.3, 0.7])), D.Normal(tg.tensor([0.0, 1.0]),
                            tg.tensor([1.0, -1.0]), validate_args=False), validate_args=False)
    a = TD.MixtureSameFamily(TD.Categorical(torch.tensor([0.3, 0.7])), TD.Normal(torch.tensor([0.0, 1.0]),
                             torch.tensor([1.0, -1.0]), validate_args=False), validate_args=False)
    close(a.log_prob(torch.tensor([0.5])), b.log_prob(tg.tensor([0.5])), 1e-6)


def _caught(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [(str(x.message), x.category) for x in w]


def test_wishart_warnings():
    eye = np.eye(3)
    # ndim - 1 < df < ndim: torch's low-df warning at construction
    (_, wa), (_, wb) = (_caught(lambda: TD.Wishart(torch.tensor([2.5, 4.0]), torch.tensor(eye))),
                        _caught(lambda: D.Wishart(tg.tensor([2.5, 4.0]), tg.tensor(eye))))
    assert wb == wa and len(wa) == 1
    # torch 2.13's rsample marks every sample that passes the support check as singular: it warns, and draws a
    # replacement for each (the stream moves on twice)
    for df, shape in [(5.0, ()), (torch.tensor([4.0, 6.0]), (3,))]:
        a = TD.Wishart(df, torch.tensor(eye))
        b = D.Wishart(df if isinstance(df, float) else tg.tensor(df.numpy()), tg.tensor(eye))
        torch.manual_seed(9)
        tg.manual_seed(9)
        (xa, wa), (xb, wb) = _caught(lambda: a.rsample(shape)), _caught(lambda: b.rsample(shape))
        assert wb == wa and wa == [("Singular sample detected.", UserWarning)]
        close(xa, xb, 1e-12)
        same(torch.rand(2, dtype=torch.float64), tg.rand(2, dtype=tg.float64))
        torch.manual_seed(9)
        tg.manual_seed(9)
        (xa, wa), (xb, wb) = (_caught(lambda: a.rsample(shape, max_try_correction=0)),
                              _caught(lambda: b.rsample(shape, max_try_correction=0)))
        assert wb == wa
        close(xa, xb, 1e-12)
        same(torch.rand(2, dtype=torch.float64), tg.rand(2, dtype=tg.float64))


def test_wishart_mode_nan_and_natural_params():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = TD.Wishart(torch.tensor([2.5, 6.0]), torch.tensor(W_COV), validate_args=False)
        b = D.Wishart(tg.tensor([2.5, 6.0]), tg.tensor(W_COV), validate_args=False)
    close(a.mode, b.mode, 1e-12)
    assert np.isnan(arr(b.mode)[0]).all()
    for x, y in zip(a._natural_params, b._natural_params):
        close(x, y, 1e-12)
    close(a._log_normalizer(*a._natural_params), b._log_normalizer(*b._natural_params), 1e-10)
    _messages(lambda: TD.wishart._mvdigamma(torch.tensor([0.5]), 3),
              lambda: D.wishart._mvdigamma(tg.tensor([0.5]), 3), AssertionError)
    close(TD.wishart._mvdigamma(torch.tensor([1.5, 4.0]), 3), D.wishart._mvdigamma(tg.tensor([1.5, 4.0]), 3),
          1e-6)


def test_lowrank_helpers_match_torch():
    from tapegrad.distributions import lowrank_multivariate_normal as g
    from torch.distributions import lowrank_multivariate_normal as t
    W, Dg = RNG.normal(size=(2, 4, 2)), RNG.uniform(0.5, 2, size=(2, 4))
    x = RNG.normal(size=(3, 2, 4))
    ct, cg = t._batch_capacitance_tril(torch.tensor(W), torch.tensor(Dg)), \
        g._batch_capacitance_tril(tg.tensor(W), tg.tensor(Dg))
    close(ct, cg, 1e-12)
    close(t._batch_lowrank_logdet(torch.tensor(W), torch.tensor(Dg), ct),
          g._batch_lowrank_logdet(tg.tensor(W), tg.tensor(Dg), cg), 1e-12)
    close(t._batch_lowrank_mahalanobis(torch.tensor(W), torch.tensor(Dg), torch.tensor(x), ct),
          g._batch_lowrank_mahalanobis(tg.tensor(W), tg.tensor(Dg), tg.tensor(x), cg), 1e-12)
    # the low-rank normal is the full-covariance one
    a = D.LowRankMultivariateNormal(tg.tensor(LR_LOC), tg.tensor(LR_W), tg.tensor(LR_DIAG))
    m = D.MultivariateNormal(tg.tensor(LR_LOC), a.covariance_matrix)
    v = tg.tensor(value_for("LowRankMultivariateNormal", np.float64))
    close(m.log_prob(v), a.log_prob(v), 1e-12)
    close(m.entropy(), a.entropy(), 1e-12)


def test_lkj_scalar_and_dims():
    for dim, conc in [(2, 1.0), (4, 0.3), (5, 3.0)]:
        a, b = TD.LKJCholesky(dim, conc), D.LKJCholesky(dim, conc)
        assert b.concentration.dtype == tg.float32 and repr(b.batch_shape) == repr(a.batch_shape)
        torch.manual_seed(1)
        tg.manual_seed(1)
        xa, xb = a.sample((6,)), b.sample((6,))
        close(xa, xb, 2e-6)
        assert D.constraints.corr_cholesky.check(xb).all()
        close(a.log_prob(xa), b.log_prob(tg.tensor(xa.numpy())), 2e-5)
        assert repr(b) == repr(a)
        assert b.has_rsample is False and a.has_rsample is False


def test_reprs_and_constraints():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in NAMES:
            a, b, _, _ = pair(name, np.float32, torch.float32, tg.float32)
            assert repr(b) == repr(a), name
            a, b, _, _ = pair(name, np.float64, torch.float64, tg.float64)
            assert repr(b.support) == repr(a.support), name
            assert b.support.event_dim == a.support.event_dim, name
            assert b.support.is_discrete == a.support.is_discrete, name
            assert sorted(b.arg_constraints) == sorted(a.arg_constraints), name
            for k, c in a.arg_constraints.items():
                assert repr(b.arg_constraints[k]) == repr(c), (name, k)
    assert repr(D.Multinomial(3, tg.tensor([0.5, 0.5])).support) == \
        repr(TD.Multinomial(3, torch.tensor([0.5, 0.5])).support)
    a = TD.MixtureSameFamily(TD.Categorical(torch.tensor([0.5, 0.5])), TD.Normal(torch.tensor([0.0, 1.0]), 1.0))
    b = D.MixtureSameFamily(D.Categorical(tg.tensor([0.5, 0.5])), D.Normal(tg.tensor([0.0, 1.0]), 1.0))
    assert repr(b) == repr(a)
    assert b.mixture_distribution.__class__ is D.Categorical and b.component_distribution.__class__ is D.Normal
    assert b.has_rsample is False


def test_module_paths():
    from tapegrad.distributions.lkj_cholesky import LKJCholesky  # noqa: F401  (torch's module paths)
    from tapegrad.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal  # noqa: F401
    from tapegrad.distributions.mixture_same_family import MixtureSameFamily  # noqa: F401
    from tapegrad.distributions.multinomial import Multinomial  # noqa: F401
    from tapegrad.distributions.one_hot_categorical import (OneHotCategorical,  # noqa: F401
                                                            OneHotCategoricalStraightThrough)
    from tapegrad.distributions.wishart import Wishart  # noqa: F401
    for cls in (LKJCholesky, LowRankMultivariateNormal, MixtureSameFamily, Multinomial, OneHotCategorical,
                OneHotCategoricalStraightThrough, Wishart):
        assert getattr(D, cls.__name__) is cls and cls.__module__ == getattr(TD, cls.__name__).__module__.replace(
            "torch", "tapegrad")
    assert issubclass(D.OneHotCategoricalStraightThrough, D.OneHotCategorical)
    assert issubclass(D.Wishart, D.ExponentialFamily)
