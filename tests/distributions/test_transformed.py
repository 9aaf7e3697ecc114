"""TransformedDistribution, Independent and the distributions built on them (LogNormal, Gumbel, HalfNormal,
HalfCauchy, LogisticNormal, Weibull, Pareto, Kumaraswamy, RelaxedBernoulli, LogitRelaxedBernoulli,
RelaxedOneHotCategorical, ExpRelaxedCategorical) against torch 2.13: random streams, values, gradients, shapes,
expand, reprs and errors, each computed by both libraries on the same inputs. The SAC tanh-squashed Gaussian and
the VAE diagonal Gaussian come first."""
import math

import numpy as np
import pytest
import torch

import tapegrad as tg
from parity import D, TD, DTYPES, DT_IDS, close, same, near, tol, seed, messages



RNG = np.random.default_rng(2024)
# float32 normal draws of 16 or more elements take a CPU-dependent SIMD kernel in torch: the Normal-based
# float32 draws below stay under 16 elements
MU = RNG.normal(size=(2, 3))
LOG_STD = RNG.uniform(-1.0, 0.5, size=(2, 3))
BIG_MU = RNG.normal(size=(5, 4))
BIG_LOG_STD = RNG.uniform(-1.0, 0.5, size=(5, 4))


# ------------------------------------------------------------------------------------------- SAC: tanh(Normal)

def _sac(mod, dt, mu, log_std, cache=1, grad=True):
    m = mod.tensor(mu, dtype=dt, requires_grad=grad)
    ls = mod.tensor(log_std, dtype=dt, requires_grad=grad)
    dist = mod.distributions.TransformedDistribution(mod.distributions.Normal(m, ls.exp()),
                                                     [mod.distributions.TanhTransform(cache_size=cache)])
    return dist, m, ls


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("sample_shape", [(), (2,)])
def test_sac_tanh_normal_rsample_log_prob_gradients(npdt, tdt, gdt, sample_shape):
    mu, log_std = (MU, LOG_STD) if npdt == np.float32 else (BIG_MU, BIG_LOG_STD)
    out = []
    for mod, dt in ((torch, tdt), (tg, gdt)):
        dist, m, ls = _sac(mod, dt, mu.astype(npdt), log_std.astype(npdt))
        seed(17)
        a = dist.rsample(sample_shape)
        logp = dist.log_prob(a).sum(-1, keepdim=True)
        # the actor loss: alpha * log pi(a|s) - Q(s, a), Q a fixed quadratic
        loss = (0.2 * logp - (a * 1.5 - a ** 2)).mean()
        loss.backward()
        out.append((a, logp, loss, m.grad, ls.grad, dist))
    (ta, tl, tloss, tgm, tgs, td), (ga, gl, gloss, ggm, ggs, gd) = out
    near(ta, ga, npdt)
    close(tl, gl, tol(npdt) * 5)
    close(tloss, gloss, tol(npdt) * 5)
    close(tgm, ggm, tol(npdt) * 5)
    close(tgs, ggs, tol(npdt) * 5)
    assert repr(gd.batch_shape) == repr(td.batch_shape) and repr(gd.event_shape) == repr(td.event_shape)
    assert repr(gd.support) == repr(td.support) and gd.has_rsample and repr(gd) == repr(td)


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_sac_log_prob_without_cache(npdt, tdt, gdt):
    """log_prob of a given action (no cached pre-image): through atanh; and the cached and uncached values
    agree."""
    v = np.tanh(RNG.normal(size=(2, 3))).astype(npdt)
    out = []
    for mod, dt in ((torch, tdt), (tg, gdt)):
        dist, m, ls = _sac(mod, dt, MU.astype(npdt), LOG_STD.astype(npdt), cache=0)
        lp = dist.log_prob(mod.tensor(v, dtype=dt))
        lp.sum().backward()
        out.append((lp, m.grad, ls.grad))
    for a, b in zip(*out):
        close(a, b, tol(npdt) * 5)
    for mod, dt in ((torch, tdt), (tg, gdt)):
        cached, _, _ = _sac(mod, dt, MU.astype(npdt), LOG_STD.astype(npdt), cache=1, grad=False)
        plain, _, _ = _sac(mod, dt, MU.astype(npdt), LOG_STD.astype(npdt), cache=0, grad=False)
        seed(5)
        a = cached.rsample()
        close(cached.log_prob(a), plain.log_prob(a), 1e-4 if npdt == np.float32 else 1e-9)


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_sac_sample_streams_and_no_grad(npdt, tdt, gdt):
    (td, _, _), (gd, _, _) = (_sac(torch, tdt, MU.astype(npdt), LOG_STD.astype(npdt)),
                              _sac(tg, gdt, MU.astype(npdt), LOG_STD.astype(npdt)))
    seed(9)
    for _ in range(2):
        ts, gs = td.sample(), gd.sample()
        near(ts, gs, npdt)
        assert not gs.requires_grad and not ts.requires_grad
        near(td.rsample((2,)), gd.rsample((2,)), npdt)
    seed(9)   # the Normal draws under the tanh: bit for bit
    scale = np.exp(LOG_STD).astype(npdt)
    same(TD.Normal(torch.tensor(MU.astype(npdt)), torch.tensor(scale)).rsample((2,)),
         D.Normal(tg.tensor(MU.astype(npdt)), tg.tensor(scale)).rsample((2,)))
    same(torch.rand(3, dtype=torch.float64), tg.rand(3, dtype=tg.float64))


def test_sac_single_transform_and_saturation():
    """A Transform, not a list; a pre-tanh sample large enough that tanh rounds to 1 in float32: the cache
    keeps log_prob finite, as torch."""
    out = []
    for mod in (torch, tg):
        m = mod.tensor([[12.0, 0.1]], requires_grad=True)
        s = mod.tensor([[0.01, 1.0]], requires_grad=True)
        dist = mod.distributions.TransformedDistribution(mod.distributions.Normal(m, s),
                                                         mod.distributions.TanhTransform(cache_size=1))
        assert len(dist.transforms) == 1
        seed(1)
        a = dist.rsample()
        assert a[0, 0].item() == 1.0
        lp = dist.log_prob(a)
        assert math.isfinite(lp[0, 0].item())
        lp.sum().backward()
        out.append((a, lp, m.grad, s.grad))
    for a, b in zip(*out):
        close(a, b, 2e-5)


def test_sac_training_steps():
    """A few Adam steps of a tiny tanh-Gaussian policy: the same parameters as torch's after each step."""
    rng = np.random.default_rng(0)
    w0, obs = rng.normal(size=(3, 4)) * 0.3, rng.normal(size=(6, 3))
    params = []
    for mod in (torch, tg):
        w = mod.tensor(w0, requires_grad=True)
        opt = mod.optim.Adam([w], lr=0.05)
        seed(21)
        hist = []
        for _ in range(4):
            h = mod.tensor(obs) @ w
            mu, log_std = h[:, :2], h[:, 2:].clamp(-5, 2)
            dist = mod.distributions.TransformedDistribution(mod.distributions.Normal(mu, log_std.exp()),
                                                             [mod.distributions.TanhTransform(cache_size=1)])
            a = dist.rsample()
            logp = dist.log_prob(a).sum(-1)
            loss = (0.1 * logp - (1 - (a - 0.3) ** 2).sum(-1)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            hist.append(w.detach().clone())
        params.append(hist)
    for a, b in zip(*params):
        close(a, b, 1e-10)


# ---------------------------------------------------------------------------------- VAE: Independent(Normal)

def _vae(mod, dt, mu, log_std, n=1):
    m = mod.tensor(mu, dtype=dt, requires_grad=True)
    ls = mod.tensor(log_std, dtype=dt, requires_grad=True)
    return mod.distributions.Independent(mod.distributions.Normal(m, ls.exp()), n), m, ls


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("n", [1, 2])
def test_vae_independent_normal(npdt, tdt, gdt, n):
    mu, log_std = (MU, LOG_STD) if npdt == np.float32 else (BIG_MU, BIG_LOG_STD)
    out = []
    for mod, dt in ((torch, tdt), (tg, gdt)):
        q, m, ls = _vae(mod, dt, mu.astype(npdt), log_std.astype(npdt), n)
        prior = mod.distributions.Independent(mod.distributions.Normal(mod.zeros_like(m), mod.ones_like(m)), n)
        seed(4)
        z = q.rsample()
        # the ELBO's Monte-Carlo KL and entropy terms
        kl_mc = q.log_prob(z) - prior.log_prob(z)
        ent = q.entropy()
        loss = (kl_mc - 0.5 * ent).sum() + (z ** 2).sum()
        loss.backward()
        out.append(dict(z=z, kl=kl_mc, ent=ent, loss=loss, gm=m.grad, gs=ls.grad, mean=q.mean, var=q.variance,
                        mode=q.mode, std=q.stddev, q=q))
    t, g = out
    same(t["z"], g["z"])
    for k in ("kl", "ent", "loss", "gm", "gs", "mean", "var", "mode", "std"):
        close(t[k], g[k], tol(npdt) * 5)
    tq, gq = t["q"], g["q"]
    for attr in ("batch_shape", "event_shape"):
        assert repr(getattr(gq, attr)) == repr(getattr(tq, attr))
    assert repr(gq._extended_shape((2,))) == repr(tq._extended_shape((2,)))
    assert repr(gq.support) == repr(tq.support) and gq.support.event_dim == tq.support.event_dim
    assert gq.has_rsample == tq.has_rsample and gq.has_enumerate_support == tq.has_enumerate_support
    assert repr(gq) == repr(tq)
    assert gq.reinterpreted_batch_ndims == n


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_independent_streams_expand_and_shapes(npdt, tdt, gdt):
    tq = TD.Independent(TD.Normal(torch.tensor(MU[0], dtype=tdt), torch.tensor(np.exp(LOG_STD[0]), dtype=tdt)), 1)
    gq = D.Independent(D.Normal(tg.tensor(MU[0], dtype=gdt), tg.tensor(np.exp(LOG_STD[0]), dtype=gdt)), 1)
    seed(2)
    for shape in [(), (2,), (1, 3)]:
        same(tq.sample(shape), gq.sample(shape))
        same(tq.rsample(shape), gq.rsample(shape))
    te, ge = tq.expand((4,)), gq.expand((4,))
    assert type(ge) is D.Independent and repr(ge.batch_shape) == repr(te.batch_shape)
    assert repr(ge.event_shape) == repr(te.event_shape) and repr(ge.base_dist) == repr(te.base_dist)
    assert ge._validate_args == te._validate_args
    close(te.entropy(), ge.entropy(), tol(npdt))
    v = RNG.normal(size=(2, 4, 3)).astype(npdt)
    close(te.log_prob(torch.tensor(v, dtype=tdt)), ge.log_prob(tg.tensor(v, dtype=gdt)), tol(npdt))
    # Independent of a distribution with an event (MultivariateNormal): a further dim reinterpreted
    cov = np.eye(3) + 0.3
    tm = TD.Independent(TD.MultivariateNormal(torch.tensor(MU, dtype=tdt), torch.tensor(cov, dtype=tdt)), 1)
    gm = D.Independent(D.MultivariateNormal(tg.tensor(MU, dtype=gdt), tg.tensor(cov, dtype=gdt)), 1)
    assert repr(gm.batch_shape) == repr(tm.batch_shape) and repr(gm.event_shape) == repr(tm.event_shape)
    v = RNG.normal(size=(4, 2, 3)).astype(npdt)
    close(tm.log_prob(torch.tensor(v, dtype=tdt)), gm.log_prob(tg.tensor(v, dtype=gdt)), tol(npdt) * 50)
    close(tm.entropy(), gm.entropy(), tol(npdt) * 50)


def test_independent_enumerate_and_errors():
    tb = TD.Bernoulli(torch.tensor([[0.2, 0.7, 0.5]]))
    gb = D.Bernoulli(tg.tensor([[0.2, 0.7, 0.5]]))
    t0, g0 = TD.Independent(tb, 0), D.Independent(gb, 0)
    assert g0.has_enumerate_support and t0.has_enumerate_support
    same(t0.enumerate_support(), g0.enumerate_support())
    same(t0.enumerate_support(expand=False), g0.enumerate_support(expand=False))
    t2, g2 = TD.Independent(tb, 2), D.Independent(gb, 2)
    assert not g2.has_enumerate_support and repr(g2.support) == repr(t2.support)
    messages(lambda: t2.enumerate_support(), lambda: g2.enumerate_support(), NotImplementedError)
    messages(lambda: TD.Independent(tb, 3), lambda: D.Independent(gb, 3))
    v = [[1.0, 0.0, 1.0]]
    close(t2.log_prob(torch.tensor(v)), g2.log_prob(tg.tensor(v)), 1e-6)
    # the base distribution validates the value
    messages(lambda: t2.log_prob(torch.tensor([[0.5, 0.0, 1.0]])), lambda: g2.log_prob(tg.tensor([[0.5, 0.0, 1.0]])))
    messages(lambda: TD.Independent(TD.Normal(0.0, 1.0), 0).mode * 0 + TD.Independent(tb, 1).cdf(torch.tensor(0.)),
              lambda: D.Independent(D.Normal(0.0, 1.0), 0).mode * 0 + D.Independent(gb, 1).cdf(tg.tensor(0.)),
              NotImplementedError)
    assert D.Independent.arg_constraints == {} and D.Independent[D.Normal] is not None
    from tapegrad.distributions.independent import Independent
    assert Independent is D.Independent


# ------------------------------------------------------------------------------- TransformedDistribution

def _td_specs():
    """name: builder(M, t) -> TransformedDistribution (M a distributions module, t makes a float64 tensor),
    and a function giving a value in the support (numpy)."""
    loc, scale = RNG.normal(size=(3, 4)), RNG.uniform(0.5, 1.5, size=(3, 4))
    big_loc = RNG.normal(size=(2, 3, 4))
    cov = np.array([[1.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.0]])
    return {
        "Exp": (lambda M, t: M.TransformedDistribution(M.Normal(t(loc), t(scale)), [M.ExpTransform()]),
                lambda: RNG.uniform(0.1, 3.0, size=(2, 3, 4))),
        "AffineBroadcast": (lambda M, t: M.TransformedDistribution(
            M.Normal(t(loc[0]), t(scale[0])), [M.AffineTransform(t(big_loc), 2.0)]),
            lambda: RNG.normal(size=(2, 3, 4))),
        "AffineNegative": (lambda M, t: M.TransformedDistribution(
            M.Normal(t(loc), t(scale)), [M.AffineTransform(1.0, -2.0), M.ExpTransform()]),
            lambda: RNG.uniform(0.1, 3.0, size=(3, 4))),
        "AffineTensorSign": (lambda M, t: M.TransformedDistribution(
            M.Normal(t(loc), t(scale)), [M.AffineTransform(0.5, t(np.array([1.0, -2.0, 3.0, -0.5])))]),
            lambda: RNG.normal(size=(3, 4))),
        "Logistic": (lambda M, t: M.TransformedDistribution(
            M.Uniform(t(np.zeros(4)), t(np.ones(4))), [M.SigmoidTransform().inv, M.AffineTransform(t(loc), 2.0)]),
            lambda: RNG.normal(size=(3, 4))),
        "StickBreaking": (lambda M, t: M.TransformedDistribution(M.Normal(t(loc), t(scale)),
                                                                 M.StickBreakingTransform()),
                          lambda: RNG.dirichlet(np.ones(5), size=(3,))),
        "Reshape": (lambda M, t: M.TransformedDistribution(M.Normal(t(loc), t(scale)),
                                                           [M.ReshapeTransform((4,), (2, 2))]),
                    lambda: RNG.normal(size=(3, 2, 2))),
        "MVNExp": (lambda M, t: M.TransformedDistribution(M.MultivariateNormal(t(loc[:, :3]), t(cov)),
                                                          [M.ExpTransform()]),
                   lambda: RNG.uniform(0.1, 3.0, size=(3, 3))),
        "IndependentTransform": (lambda M, t: M.TransformedDistribution(
            M.Normal(t(loc), t(scale)), [M.IndependentTransform(M.SigmoidTransform(), 1)]),
            lambda: RNG.uniform(0.05, 0.95, size=(3, 4))),
        "CorrCholesky": (lambda M, t: M.TransformedDistribution(M.Normal(t(loc[:, :3]), t(scale[:, :3])),
                                                                [M.CorrCholeskyTransform()]),
                         None),
        "Empty": (lambda M, t: M.TransformedDistribution(M.Normal(t(loc), t(scale)), []),
                  lambda: RNG.normal(size=(3, 4))),
        "CDF": (lambda M, t: M.TransformedDistribution(
            M.Normal(t(loc), t(scale)), [M.CumulativeDistributionTransform(M.Normal(t(loc), t(scale)))]),
            lambda: RNG.uniform(0.05, 0.95, size=(3, 4))),
    }


TD_SPECS = _td_specs()


def _build_td(name, grad=False):
    builder, _ = TD_SPECS[name]
    leaves = ([], [])
    out = []
    for k, (mod, M) in enumerate(((torch, TD), (tg, D))):
        def t(a, mod=mod, k=k):
            x = mod.tensor(np.asarray(a), dtype=mod.float64, requires_grad=grad)
            leaves[k].append(x)
            return x
        out.append(builder(M, t))
    return out[0], out[1], leaves[0], leaves[1]


@pytest.mark.parametrize("name", list(TD_SPECS))
def test_transformed_distribution(name):
    td, gd, tl, gl = _build_td(name, grad=True)
    for attr in ("batch_shape", "event_shape"):
        assert repr(getattr(gd, attr)) == repr(getattr(td, attr))
    assert repr(gd.support) == repr(td.support) and gd.support.event_dim == td.support.event_dim
    assert type(gd.base_dist).__name__ == type(td.base_dist).__name__
    assert repr(gd.base_dist.batch_shape) == repr(td.base_dist.batch_shape)
    assert gd.has_rsample == td.has_rsample and repr(gd) == repr(td)
    seed(8)
    for shape in [(), (2,)]:
        near(td.sample(shape), gd.sample(shape), np.float64)
    same(torch.rand(3, dtype=torch.float64), tg.rand(3, dtype=tg.float64))   # the generators are in step
    if name != "MVNExp":   # (MultivariateNormal's L @ eps is BLAS's)
        seed(8)
        same(td.base_dist.sample((2,)), gd.base_dist.sample((2,)))
    seed(8)
    ts, gs = td.rsample((2,)), gd.rsample((2,))
    close(ts, gs, 1e-12)
    value_fn = TD_SPECS[name][1]
    if value_fn is None:   # the log_prob of the reparameterized samples themselves
        tv, gv = ts, gs
    else:
        tv = torch.tensor(value_fn())
        gv = tg.tensor(tv.numpy())
    tlp, glp = td.log_prob(tv), gd.log_prob(gv)
    close(tlp, glp, 1e-10)
    (ts.sum() + tlp.sum()).backward()
    (gs.sum() + glp.sum()).backward()
    for a, b in zip(tl, gl):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            close(a.grad, b.grad, 1e-10)
    for method in ("cdf", "icdf"):
        arg = tv.detach() if method == "cdf" else torch.tensor(RNG.uniform(0.05, 0.95, size=tuple(tv.shape)))
        try:
            tr = getattr(td, method)(arg)
        except (NotImplementedError, ValueError, RuntimeError) as e:
            with pytest.raises(type(e)):
                getattr(gd, method)(tg.tensor(arg.numpy()))
            continue
        close(tr, getattr(gd, method)(tg.tensor(arg.numpy())), 1e-10)
    te, ge = td.expand((5,) + tuple(td.batch_shape)), gd.expand((5,) + tuple(gd.batch_shape))
    assert type(ge) is type(gd) and repr(ge.batch_shape) == repr(te.batch_shape)
    assert repr(ge.event_shape) == repr(te.event_shape) and repr(ge.base_dist.batch_shape) == repr(
        te.base_dist.batch_shape)
    assert ge._validate_args == te._validate_args and ge.transforms is gd.transforms
    seed(8)
    close(te.rsample(), ge.rsample(), 1e-12)


def test_transformed_distribution_errors():
    for M, mod in ((TD, torch), (D, tg)):
        with pytest.raises(ValueError, match="transforms must be a Transform or a list of Transforms"):
            M.TransformedDistribution(M.Normal(0.0, 1.0), [M.ExpTransform(), 3])
    messages(lambda: TD.TransformedDistribution(TD.Normal(0.0, 1.0), (TD.ExpTransform(),)),
              lambda: D.TransformedDistribution(D.Normal(0.0, 1.0), (D.ExpTransform(),)))
    messages(lambda: TD.TransformedDistribution(TD.Normal(torch.zeros(4), 1.0), TD.CorrCholeskyTransform()),
              lambda: D.TransformedDistribution(D.Normal(tg.zeros(4), 1.0), D.CorrCholeskyTransform()),
              ValueError)
    messages(lambda: TD.TransformedDistribution(TD.Normal(0.0, 1.0), TD.StickBreakingTransform()),
              lambda: D.TransformedDistribution(D.Normal(0.0, 1.0), D.StickBreakingTransform()))
    # the sample is validated against the support
    t = TD.TransformedDistribution(TD.Normal(torch.zeros(2), 1.0), [TD.ExpTransform()])
    g = D.TransformedDistribution(D.Normal(tg.zeros(2), 1.0), [D.ExpTransform()])
    messages(lambda: t.log_prob(torch.tensor([1.0, -1.0])), lambda: g.log_prob(tg.tensor([1.0, -1.0])))
    messages(lambda: t.log_prob(torch.tensor([1.0, 1.0, 1.0])), lambda: g.log_prob(tg.tensor([1.0, 1.0, 1.0])))
    # a subclass with its own __init__ needs its own expand
    for M in (TD, D):
        class Mine(M.TransformedDistribution):
            def __init__(self):
                super().__init__(M.Normal(0.0, 1.0), M.ExpTransform())
        with pytest.raises(NotImplementedError, match="Subclass Mine of TransformedDistribution that defines a "
                                                      "custom __init__ method must also define a custom .expand"):
            Mine().expand((2,))


# --------------------------------------------------------------------------------- the derived distributions

PA = RNG.uniform(0.5, 2.5, size=(2, 3))
PB = RNG.uniform(0.5, 2.5, size=(2, 3))
PLOC = RNG.normal(size=(2, 3))
PROBS = RNG.uniform(0.1, 0.9, size=(2, 3))
CAT = RNG.uniform(0.1, 1.0, size=(2, 3))
TEMP = np.array(0.7)


def pair(name, npdt, tdt, gdt, grad=False):
    """The same distribution built by torch and by tapegrad (parameters as leaves when grad)."""
    def both(*arrays):
        return ([torch.tensor(a.astype(npdt), dtype=tdt, requires_grad=grad) for a in arrays],
                [tg.tensor(a.astype(npdt), dtype=gdt, requires_grad=grad) for a in arrays])
    table = {
        "LogNormal": (lambda M, p: M.LogNormal(p[0], p[1]), (PLOC, PA)),
        "Gumbel": (lambda M, p: M.Gumbel(p[0], p[1]), (PLOC, PA)),
        "HalfNormal": (lambda M, p: M.HalfNormal(p[0]), (PA,)),
        "HalfCauchy": (lambda M, p: M.HalfCauchy(p[0]), (PA,)),
        "LogisticNormal": (lambda M, p: M.LogisticNormal(p[0], p[1]), (PLOC, PA)),
        "Weibull": (lambda M, p: M.Weibull(p[0], p[1]), (PA, PB)),
        "Pareto": (lambda M, p: M.Pareto(p[0], p[1]), (PA, PB + 1.5)),
        "Kumaraswamy": (lambda M, p: M.Kumaraswamy(p[0], p[1]), (PA, PB)),
        "RelaxedBernoulli": (lambda M, p: M.RelaxedBernoulli(p[0], probs=p[1]), (TEMP, PROBS)),
        "RelaxedBernoulliLogits": (lambda M, p: M.RelaxedBernoulli(p[0], logits=p[1]), (TEMP, PLOC)),
        "LogitRelaxedBernoulli": (lambda M, p: M.relaxed_bernoulli.LogitRelaxedBernoulli(p[0], probs=p[1]),
                                  (TEMP, PROBS)),
        "RelaxedOneHotCategorical": (lambda M, p: M.RelaxedOneHotCategorical(p[0], probs=p[1]), (TEMP, CAT)),
        "RelaxedOneHotCategoricalLogits": (lambda M, p: M.RelaxedOneHotCategorical(p[0], logits=p[1]),
                                           (TEMP, PLOC)),
        "ExpRelaxedCategorical": (lambda M, p: M.relaxed_categorical.ExpRelaxedCategorical(p[0], logits=p[1]),
                                  (TEMP, PLOC)),
    }
    builder, arrays = table[name]
    tp, gp = both(*arrays)
    return builder(TD, tp), builder(D, gp), tp, gp


def value_for(name, npdt):
    if name in ("LogNormal", "HalfNormal", "HalfCauchy", "Weibull"):
        v = RNG.uniform(0.05, 4.0, size=(4, 2, 3))
    elif name == "Pareto":
        v = PA + RNG.uniform(0.01, 3.0, size=(4, 2, 3))
    elif name == "Gumbel":
        v = RNG.normal(size=(4, 2, 3)) * 2
    elif name in ("Kumaraswamy", "RelaxedBernoulli", "RelaxedBernoulliLogits"):
        v = RNG.uniform(0.02, 0.98, size=(4, 2, 3))
    elif name == "LogitRelaxedBernoulli":
        v = RNG.normal(size=(4, 2, 3)) * 2
    elif name == "LogisticNormal":
        v = RNG.dirichlet(np.ones(4), size=(4, 2))
    elif name.startswith("RelaxedOneHot"):
        v = RNG.dirichlet(np.ones(3), size=(4, 2))
    else:   # ExpRelaxedCategorical
        v = np.log(RNG.dirichlet(np.ones(3), size=(4, 2)))
    return v.astype(npdt)


NAMES = ["LogNormal", "Gumbel", "HalfNormal", "HalfCauchy", "LogisticNormal", "Weibull", "Pareto", "Kumaraswamy",
         "RelaxedBernoulli", "RelaxedBernoulliLogits", "LogitRelaxedBernoulli", "RelaxedOneHotCategorical",
         "RelaxedOneHotCategoricalLogits", "ExpRelaxedCategorical"]


def _try(fn):
    try:
        return fn(), None
    except (NotImplementedError, ValueError, RuntimeError, TypeError, AttributeError) as e:
        return None, e


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", NAMES)
def test_values_and_shapes(name, npdt, tdt, gdt):
    a, b, _, _ = pair(name, npdt, tdt, gdt)
    assert type(b).__name__ == type(a).__name__
    for attr in ("batch_shape", "event_shape"):
        assert repr(getattr(b, attr)) == repr(getattr(a, attr))
    assert repr(b._extended_shape((2,))) == repr(a._extended_shape((2,)))
    assert b.has_rsample == a.has_rsample and b.has_enumerate_support == a.has_enumerate_support
    assert repr(b.support) == repr(a.support) and repr(b) == repr(a)
    v = value_for(name, npdt)
    tv, gv = torch.tensor(v, dtype=tdt), tg.tensor(v, dtype=gdt)
    t = tol(npdt) * (10 if npdt == np.float32 else 100)
    checks = [("log_prob", lambda d, x: d.log_prob(x)), ("entropy", lambda d, x: d.entropy()),
              ("mean", lambda d, x: d.mean), ("variance", lambda d, x: d.variance),
              ("stddev", lambda d, x: d.stddev), ("mode", lambda d, x: d.mode),
              ("cdf", lambda d, x: d.cdf(x)), ("perplexity", lambda d, x: d.perplexity())]
    for what, f in checks:
        tr, te = _try(lambda: f(a, tv))
        gr, ge = _try(lambda: f(b, gv))
        assert (te is None) == (ge is None), (what, te, ge)
        if te is not None:
            assert type(ge) is type(te), (what, te, ge)
            continue
        close(tr, gr, t * (10 if what in ("mode", "variance", "stddev") else 1))
    if name not in ("LogitRelaxedBernoulli", "ExpRelaxedCategorical", "LogisticNormal") \
            and not name.startswith("Relaxed"):
        q = RNG.uniform(0.05, 0.95, size=(4, 2, 3)).astype(npdt)
        close(a.icdf(torch.tensor(q, dtype=tdt)), b.icdf(tg.tensor(q, dtype=gdt)), t * 10)


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sample_shape", [(), (2,)])
def test_sample_streams_equal_torch(name, npdt, tdt, gdt, sample_shape):
    a, b, _, _ = pair(name, npdt, tdt, gdt)
    seed(11)
    for _ in range(2):
        near(a.sample(sample_shape), b.sample(sample_shape), npdt)
        if a.has_rsample:
            near(a.rsample(sample_shape), b.rsample(sample_shape), npdt)
    same(torch.rand(3, dtype=torch.float64), tg.rand(3, dtype=tg.float64))   # the generators are in step
    # the base distribution's draws, bit for bit (where the base draws with arithmetic only)
    if isinstance(a, TD.TransformedDistribution) and not name.startswith("Relaxed"):
        seed(11)
        same(a.base_dist.sample(sample_shape), b.base_dist.sample(sample_shape))


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", NAMES)
def test_gradients(name, npdt, tdt, gdt):
    a, b, tp, gp = pair(name, npdt, tdt, gdt, grad=True)
    v = value_for(name, npdt)
    w = RNG.normal(size=(2,) + tuple(a._extended_shape())).astype(npdt)
    for d, mod, dt in ((a, torch, tdt), (b, tg, gdt)):
        seed(6)
        loss = d.log_prob(mod.tensor(v, dtype=dt)).sum()
        if d.has_rsample:
            loss = loss + (d.rsample((2,)) * mod.tensor(w, dtype=dt)).sum()
        try:
            loss = loss + d.entropy().sum()
        except NotImplementedError:
            pass
        loss.backward()
    for x, y in zip(tp, gp):
        assert (x.grad is None) == (y.grad is None)
        if x.grad is not None:
            close(x.grad, y.grad, tol(npdt) * (50 if npdt == np.float32 else 100))


@pytest.mark.parametrize("name", NAMES)
def test_expand(name):
    a, b, _, _ = pair(name, np.float64, torch.float64, tg.float64)
    shape = (4,) + tuple(a.batch_shape)
    ea, eb = a.expand(shape), b.expand(shape)
    assert type(eb) is type(b) and repr(eb.batch_shape) == repr(ea.batch_shape)
    assert repr(eb.event_shape) == repr(ea.event_shape) and eb._validate_args == ea._validate_args
    v = value_for(name, np.float64)[:, None]
    close(ea.log_prob(torch.tensor(v)), eb.log_prob(tg.tensor(v)), 1e-10)
    seed(12)
    near(ea.sample(), eb.sample(), np.float64)
    for prop in ("mean", "variance"):
        tr, te = _try(lambda: getattr(ea, prop))
        gr, ge = _try(lambda: getattr(eb, prop))
        assert (te is None) == (ge is None)
        if te is None:
            close(tr, gr, 1e-10)


@pytest.mark.parametrize("name", ["LogNormal", "Gumbel", "HalfNormal", "HalfCauchy", "Weibull", "Pareto",
                                  "Kumaraswamy", "LogisticNormal"])
def test_scalar_parameters(name):
    args = {"LogNormal": (0.3, 1.2), "Gumbel": (0.3, 1.2), "HalfNormal": (1.2,), "HalfCauchy": (1.2,),
            "Weibull": (1.5, 0.8), "Pareto": (1.5, 2.5), "Kumaraswamy": (1.5, 0.8), "LogisticNormal": (0.3, 1.2)}
    a, b = getattr(TD, name)(*args[name]), getattr(D, name)(*args[name])
    assert repr(b.batch_shape) == repr(a.batch_shape) and repr(b.event_shape) == repr(a.event_shape)
    assert repr(b) == repr(a)
    seed(13)
    near(a.sample((3,)), b.sample((3,)), np.float32)
    x = a.sample((2,))
    close(a.log_prob(x), b.log_prob(tg.tensor(x.numpy())), 2e-6)
    tr, te = _try(lambda: a.entropy())
    if te is None:
        close(tr, b.entropy(), 2e-6)


@pytest.mark.parametrize("make", [
    lambda M, t: M.LogNormal(t([0.0, 1.0]), t([1.0, -1.0])),
    lambda M, t: M.Gumbel(t([0.0, 1.0]), t([1.0, 0.0])),
    lambda M, t: M.HalfNormal(t([1.0, -1.0])),
    lambda M, t: M.HalfCauchy(t([1.0, -1.0])),
    lambda M, t: M.LogisticNormal(t([0.0, 1.0]), t([-1.0, 1.0])),
    lambda M, t: M.Weibull(t([1.0, 1.0]), t([1.0, -1.0])),
    lambda M, t: M.Pareto(t([1.0, -1.0]), t([1.0, 1.0])),
    lambda M, t: M.Kumaraswamy(t([1.0, 1.0]), t([0.0, 1.0])),
    lambda M, t: M.RelaxedBernoulli(t(0.5), probs=t([0.2, 1.5])),
    lambda M, t: M.RelaxedBernoulli(t(0.5)),
    lambda M, t: M.RelaxedBernoulli(t(0.5), probs=t([0.5]), logits=t([0.1])),
    lambda M, t: M.RelaxedOneHotCategorical(t(0.5), probs=t([0.2, -0.1])),
    lambda M, t: M.RelaxedOneHotCategorical(t(0.5)),
])
def test_parameter_validation_errors(make):
    messages(lambda: make(TD, lambda x: torch.tensor(x)), lambda: make(D, lambda x: tg.tensor(x)))


@pytest.mark.parametrize("make,value", [
    (lambda M, t: M.LogNormal(t([0.0, 1.0]), t([1.0, 1.0])), [1.0, -1.0]),
    (lambda M, t: M.HalfNormal(t([1.0, 1.0])), [1.0, -1.0]),
    (lambda M, t: M.HalfCauchy(t([1.0, 1.0])), [-0.5, 1.0]),
    (lambda M, t: M.Pareto(t([1.0, 2.0]), t([1.0, 1.0])), [1.5, 1.5]),
    (lambda M, t: M.Kumaraswamy(t([1.0, 2.0]), t([1.0, 1.0])), [0.5, 1.5]),
    (lambda M, t: M.Weibull(t([1.0, 2.0]), t([1.0, 1.0])), [0.5, 0.0]),
    (lambda M, t: M.RelaxedBernoulli(t(0.5), probs=t([0.2, 0.5])), [0.5, 1.5]),
    (lambda M, t: M.RelaxedOneHotCategorical(t(0.5), probs=t([0.2, 0.8])), [0.5, 0.6]),
    (lambda M, t: M.LogisticNormal(t([0.0, 1.0]), t([1.0, 1.0])), [0.5, 0.5]),
    (lambda M, t: M.Gumbel(t([0.0, 1.0]), t([1.0, 1.0])), [0.5, 0.5, 0.5]),
])
def test_sample_validation_errors(make, value):
    messages(lambda: make(TD, lambda x: torch.tensor(x)).log_prob(torch.tensor(value)),
              lambda: make(D, lambda x: tg.tensor(x)).log_prob(tg.tensor(value)))


def test_attributes_and_module_paths():
    from tapegrad.distributions.gumbel import Gumbel
    from tapegrad.distributions.log_normal import LogNormal
    from tapegrad.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
    from tapegrad.distributions.relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
    from tapegrad.distributions.transformed_distribution import TransformedDistribution
    assert Gumbel is D.Gumbel and LogNormal is D.LogNormal and RelaxedBernoulli is D.RelaxedBernoulli
    assert RelaxedOneHotCategorical is D.RelaxedOneHotCategorical
    assert TransformedDistribution is D.TransformedDistribution
    for cls in (LogitRelaxedBernoulli, ExpRelaxedCategorical):
        tcls = getattr(getattr(TD, cls.__module__.rsplit(".", 1)[1]), cls.__name__)
        assert {k: repr(v) for k, v in cls.arg_constraints.items()} == \
            {k: repr(v) for k, v in tcls.arg_constraints.items()}
    t = torch.tensor(0.5)
    g = tg.tensor(0.5)
    for tdist, gdist in ((TD.RelaxedBernoulli(t, logits=torch.tensor([0.3, -1.0])),
                          D.RelaxedBernoulli(g, logits=tg.tensor([0.3, -1.0]))),
                         (TD.RelaxedOneHotCategorical(t, logits=torch.tensor([0.3, -1.0])),
                          D.RelaxedOneHotCategorical(g, logits=tg.tensor([0.3, -1.0])))):
        close(tdist.probs, gdist.probs, 1e-6)
        close(tdist.logits, gdist.logits, 1e-6)
        assert gdist.temperature is g
        assert repr(gdist.base_dist.param_shape) == repr(tdist.base_dist.param_shape)
    w = TD.Weibull(torch.tensor([1.0, 2.0]), torch.tensor([0.5, 2.0]))
    gw = D.Weibull(tg.tensor([1.0, 2.0]), tg.tensor([0.5, 2.0]))
    close(w.concentration_reciprocal, gw.concentration_reciprocal, 0)
    assert repr(D.Pareto(tg.tensor([1.0]), tg.tensor([2.0])).support) == \
        repr(TD.Pareto(torch.tensor([1.0]), torch.tensor([2.0])).support)
    assert D.LogNormal(tg.tensor([0.0]), tg.tensor([1.0])).loc is not None
    ln = D.LogisticNormal(tg.tensor([0.0, 1.0]), tg.tensor([1.0, 2.0]))
    assert type(ln.base_dist) is D.Independent and ln.loc.shape == (2,)
