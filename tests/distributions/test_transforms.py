"""torch.distributions.transforms and constraint_registry parity with torch 2.13: every transform's forward,
inverse, log |det J|, gradients, shapes, constraints, sign, caching, equality, reprs and errors, each computed by
both libraries on the same inputs."""
import math
import pickle

import numpy as np
import pytest
import torch

import tapegrad as tg
from parity import DTYPES, DT_IDS, arr, close, tol

TT, GT = torch.distributions.transforms, tg.distributions.transforms
TC, GC = torch.distributions.constraints, tg.distributions.constraints
TR, GR = torch.distributions.constraint_registry, tg.distributions.constraint_registry


RNG = np.random.default_rng(77)
REAL = RNG.normal(size=(3, 4))
POS = RNG.uniform(0.2, 3.0, size=(3, 4))
EXPO = RNG.uniform(0.3, 2.5, size=(4,))
LOC = RNG.normal(size=(3, 4))
SCALE = RNG.uniform(0.5, 2.0, size=(4,)) * np.array([1, -1, 1, -1])
MAT = RNG.normal(size=(2, 3, 3))
VEC6 = RNG.normal(size=(2, 6))
R23 = RNG.normal(size=(4, 2, 3))
WIDE = np.array([[-30.0, -21.0, -5.0, 0.0], [0.3, 5.0, 19.0, 25.0], [-0.7, 2.0, -2.0, 1.5]])


class Lib:
    """Builds the same objects from the same arrays in torch or in tapegrad."""

    def __init__(self, mod, dt):
        self.mod, self.dt = mod, dt
        self.T = mod.distributions.transforms
        self.D = mod.distributions

    def t(self, a, grad=False):
        return self.mod.tensor(np.asarray(a), dtype=self.dt, requires_grad=grad)


# name: (builder(lib, params) -> transform, param arrays (leaves with grad), input array)
SPECS = {
    "Exp": (lambda L, p: L.T.ExpTransform(), [], REAL),
    "ExpInv": (lambda L, p: L.T.ExpTransform().inv, [], POS),
    "Power": (lambda L, p: L.T.PowerTransform(p[0]), [EXPO], POS),
    "PowerNumber": (lambda L, p: L.T.PowerTransform(2.5), [], POS),
    "PowerNegative": (lambda L, p: L.T.PowerTransform(-p[0]), [EXPO], POS),
    "Sigmoid": (lambda L, p: L.T.SigmoidTransform(), [], WIDE),
    "SigmoidInv": (lambda L, p: L.T.SigmoidTransform().inv, [], 1 / (1 + np.exp(-REAL))),
    "Softplus": (lambda L, p: L.T.SoftplusTransform(), [], WIDE),
    "Tanh": (lambda L, p: L.T.TanhTransform(), [], REAL),
    "TanhInv": (lambda L, p: L.T.TanhTransform().inv, [], np.tanh(REAL)),
    "Abs": (lambda L, p: L.T.AbsTransform(), [], REAL),
    "Affine": (lambda L, p: L.T.AffineTransform(p[0], p[1]), [LOC, SCALE], REAL),
    "AffineNumbers": (lambda L, p: L.T.AffineTransform(2.0, -3.0), [], REAL),
    "AffineEvent1": (lambda L, p: L.T.AffineTransform(p[0], p[1], event_dim=1), [LOC, SCALE], REAL),
    "AffineEvent2": (lambda L, p: L.T.AffineTransform(1.0, 0.5, event_dim=2), [], R23),
    "AffineInv": (lambda L, p: L.T.AffineTransform(p[0], p[1]).inv, [LOC, SCALE], REAL),
    "Softmax": (lambda L, p: L.T.SoftmaxTransform(), [], REAL),
    "StickBreaking": (lambda L, p: L.T.StickBreakingTransform(), [], REAL),
    "LowerCholesky": (lambda L, p: L.T.LowerCholeskyTransform(), [], MAT),
    "PositiveDefinite": (lambda L, p: L.T.PositiveDefiniteTransform(), [], MAT),
    "CorrCholesky": (lambda L, p: L.T.CorrCholeskyTransform(), [], VEC6),
    "Reshape": (lambda L, p: L.T.ReshapeTransform((2, 3), (6,)), [], R23),
    "Independent": (lambda L, p: L.T.IndependentTransform(L.T.ExpTransform(), 1), [], REAL),
    "IndependentAffine": (lambda L, p: L.T.IndependentTransform(L.T.AffineTransform(p[0], p[1]), 2),
                          [LOC, SCALE], REAL),
    "Compose": (lambda L, p: L.T.ComposeTransform([L.T.ExpTransform(), L.T.AffineTransform(1.0, p[0])]),
                [SCALE], REAL),
    "ComposeStick": (lambda L, p: L.T.ComposeTransform([L.T.AffineTransform(p[0], 2.0),
                                                        L.T.StickBreakingTransform()]), [LOC], REAL),
    "ComposeMixed": (lambda L, p: L.T.ComposeTransform([L.T.ReshapeTransform((2, 3), (6,)), L.T.TanhTransform(),
                                                        L.T.AffineTransform(0.5, p[0])]),
                     [np.array([1.0, -2.0, 0.5, 3.0, 1.5, -1.0])], R23),
    "Identity": (lambda L, p: L.T.identity_transform, [], REAL),
    "Cat": (lambda L, p: L.T.CatTransform([L.T.ExpTransform(), L.T.identity_transform,
                                           L.T.AffineTransform(1.0, 2.0)], dim=1, lengths=[1, 2, 1]), [], REAL),
    "CatDim0": (lambda L, p: L.T.CatTransform([L.T.SigmoidTransform(), L.T.TanhTransform()], dim=0,
                                              lengths=[2, 1]), [], REAL),
    "CatEvent": (lambda L, p: L.T.CatTransform([L.T.IndependentTransform(L.T.ExpTransform(), 1),
                                                L.T.AffineTransform(0.5, p[0])], dim=0, lengths=[2, 1]),
                 [SCALE], REAL),
    "Stack": (lambda L, p: L.T.StackTransform([L.T.ExpTransform(), L.T.AffineTransform(1.0, p[0]),
                                               L.T.TanhTransform(), L.T.SigmoidTransform()], dim=1),
              [np.array(-1.5)], REAL),
    "CDF": (lambda L, p: L.T.CumulativeDistributionTransform(L.D.Normal(p[0], p[1].__abs__())),
            [LOC, SCALE], REAL),
}
# tapegrad's softplus gradient far below 0 is accurate absolutely, not relatively (softplus'(-30) = 9.3592e-14,
# torch 9.3576e-14), which the softplus inverse amplifies: the gradients are checked on moderate inputs
GRAD_X = {"Sigmoid": REAL, "Softplus": REAL}
# torch's pow backward computes exponent - 1 in the exponent's dtype (float32 for PowerTransform(2.5), as
# broadcast_all makes a number a default-dtype tensor); tapegrad's in the promoted float64
GRAD_TOL = {"PowerNumber": 1e-7}
HAS_LADJ = {"Abs": False, "Softmax": False, "LowerCholesky": False, "PositiveDefinite": False}
NAMES = list(SPECS)


def build(name, npdt, tdt, gdt, grad=False, x=None):
    builder, params, x0 = SPECS[name]
    x = x0 if x is None else x
    out = []
    for mod, dt in ((torch, tdt), (tg, gdt)):
        L = Lib(mod, dt)
        ps = [L.t(p.astype(npdt), grad) for p in params]
        out.append((builder(L, ps), ps, L.t(x.astype(npdt), grad)))
    return out


def _ladj(t, x, y):
    try:
        return t.log_abs_det_jacobian(x, y)
    except NotImplementedError:
        return None


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("name", NAMES)
def test_values(name, npdt, tdt, gdt):
    (ta, _, tx), (ga, _, gx) = build(name, npdt, tdt, gdt)
    t = tol(npdt) * (20 if name in ("CorrCholesky", "PositiveDefinite", "StickBreaking", "ComposeStick") else 1)
    ty, gy = ta(tx), ga(gx)
    close(ty, gy, t)
    close(ta.inv(ty), ga.inv(gy), t * 50)
    tl, gl = _ladj(ta, tx, ty), _ladj(ga, gx, gy)
    assert (tl is None) == (gl is None) and (gl is None) == (not HAS_LADJ.get(name, True))
    if tl is not None:
        close(tl, gl, t)
        tli, gli = ta.inv.log_abs_det_jacobian(ty, tx), ga.inv.log_abs_det_jacobian(gy, gx)
        close(tli, gli, t)


@pytest.mark.parametrize("name", NAMES)
def test_gradients(name):
    (ta, tp, tx), (ga, gp, gx) = build(name, np.float64, torch.float64, tg.float64, grad=True, x=GRAD_X.get(name))
    w = RNG.normal(size=tuple(ta(tx).shape))
    losses = []
    for t, x, mod in ((ta, tx, torch), (ga, gx, tg)):
        y = t(x)
        loss = (y * mod.tensor(w)).sum()
        ladj = _ladj(t, x, y)
        if ladj is not None:
            loss = loss + (ladj * 0.7).sum()
        x_back = t.inv(y)
        loss = loss + (x_back * 0.3).sum()
        loss.backward()
        losses.append(loss)
    close(losses[0], losses[1], 1e-11)
    for a, b in zip([tx] + tp, [gx] + gp):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            close(a.grad, b.grad, GRAD_TOL.get(name, 1e-10))


@pytest.mark.parametrize("name", NAMES)
def test_attributes_and_shapes(name):
    (ta, _, tx), (ga, _, gx) = build(name, np.float64, torch.float64, tg.float64)
    assert repr(ga) == repr(ta)
    assert repr(ga.inv) == repr(ta.inv)
    assert ga.inv.inv is ga and ta.inv.inv is ta
    assert ga.bijective == ta.bijective and ga.inv.bijective == ta.inv.bijective
    for attr in ("domain", "codomain"):
        for gt, tt in ((ga, ta), (ga.inv, ta.inv)):
            tc, gc = getattr(tt, attr), getattr(gt, attr)
            assert type(gc).__name__ == type(tc).__name__ and repr(gc) == repr(tc)
            assert gc.event_dim == tc.event_dim and gc.is_discrete == tc.is_discrete
    try:
        te = ta.event_dim
    except ValueError as e:
        with pytest.raises(ValueError, match=str(e)):
            ga.event_dim
    else:
        assert ga.event_dim == te
    try:
        ts = ta.sign
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ga.sign
    else:
        gs = ga.sign
        assert isinstance(gs, tg.Tensor) == isinstance(ts, torch.Tensor)
        if isinstance(ts, torch.Tensor):
            close(ts, gs, 0)
        else:
            assert gs == ts and type(gs) is type(ts)
        gsi, tsi = ga.inv.sign, ta.inv.sign
        assert (arr(gsi) == arr(tsi)).all() if isinstance(tsi, torch.Tensor) else gsi == tsi
    for shape in (tuple(tx.shape), torch.Size(tx.shape)):
        gshape = tg.Size(shape) if isinstance(shape, torch.Size) else shape
        tf, gf = ta.forward_shape(shape), ga.forward_shape(gshape)
        assert repr(gf) == repr(tf) and tuple(gf) == tuple(ta(tx).shape)
        assert repr(ga.inverse_shape(gf)) == repr(ta.inverse_shape(tf))
        assert repr(ga.inv.forward_shape(gf)) == repr(ta.inv.forward_shape(tf))
        assert repr(ga.inv.inverse_shape(gshape)) == repr(ta.inv.inverse_shape(shape))
    # torch's transforms define __eq__ and so are unhashable; so are tapegrad's
    with pytest.raises(TypeError):
        hash(ta)
    with pytest.raises(TypeError):
        hash(ga)


@pytest.mark.parametrize("name", NAMES)
def test_equality(name):
    (ta, _, _), (ga, _, _) = build(name, np.float64, torch.float64, tg.float64)
    (ta2, _, _), (ga2, _, _) = build(name, np.float64, torch.float64, tg.float64)
    assert (ga == ga2) == (ta == ta2)
    assert (ga != ga2) == (ta != ta2)
    assert (ga.inv == ga2.inv) == (ta.inv == ta2.inv)
    assert (ga == ga.inv) == (ta == ta.inv)
    assert (ga == GT.ExpTransform()) == (ta == TT.ExpTransform())
    assert ga == ga and ta == ta


@pytest.mark.parametrize("name", NAMES)
def test_cache(name):
    (ta, tp, tx), (ga, gp, gx) = build(name, np.float64, torch.float64, tg.float64)
    for t, x in ((ta, tx), (ga, gx)):
        try:
            t1 = t.with_cache(1)
        except NotImplementedError:
            continue
        y = t1(x)
        assert t1(x) is y                    # the forward of the cached x is the cached y
        assert t1.inv(y) is x                # the inverse of the cached y is the cached x
        assert t1.with_cache(1) is t1 and t.with_cache(0) is t
        if not isinstance(t, (TT.ComposeTransform, GT.ComposeTransform, TT.CatTransform, GT.CatTransform,
                              TT.StackTransform, GT.StackTransform, TT.IndependentTransform,
                              GT.IndependentTransform)):
            assert t1._cache_size == 1 and t._cache_size == 0
    # with_cache where torch refuses it: the same type and message
    for mod, T in ((torch, TT), (tg, GT)):
        class Custom(T.Transform):
            def __init__(self, a):
                super().__init__()
    with pytest.raises(NotImplementedError, match="with_cache is not implemented"):
        Custom(1).with_cache(1)


@pytest.mark.parametrize("T", [TT, GT], ids=["torch", "tapegrad"])
def test_cache_semantics(T):
    mod = torch if T is TT else tg
    x = mod.tensor([0.5, -1.0], dtype=mod.float64)
    t = T.ExpTransform()
    y = t(x)
    assert t.inv(y) is not x and t(x) is not y          # no cache
    tc = T.ExpTransform(cache_size=1)
    y = tc(x)
    assert tc.inv(y) is x and tc(x) is y
    y2 = mod.tensor([1.0], dtype=mod.float64)
    x2 = tc.inv(y2)                                    # the inverse replaces the cached pair
    assert tc(x2) is y2 and tc.inv(y) is not x
    ci = tc.inv
    assert ci.inv is tc and ci._cache_size == 1
    assert ci.with_cache(0).inv._cache_size == 0 and ci.with_cache(1) is ci
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    comp = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], cache_size=1)
    assert all(p._cache_size == 1 for p in comp.parts)
    yc = comp(x)
    assert comp.inv(yc) is x
    assert T.ComposeTransform(comp.parts).with_cache(1).parts[0] is comp.parts[0]
    # pickling drops the inverse
    t = T.ExpTransform()
    t.inv
    assert pickle.loads(pickle.dumps(t))._inv is None


def test_tanh_cache_keeps_saturated_samples():
    """A float32 tanh that rounds to 1: atanh would give inf, the cache gives back x (torch's advice)."""
    for mod, T in ((torch, TT), (tg, GT)):
        x = mod.tensor([10.0, 0.3], dtype=mod.float32)
        t = T.TanhTransform(cache_size=1)
        y = t(x)
        assert y[0].item() == 1.0
        assert t.inv(y) is x
        assert math.isinf(T.TanhTransform().inv(y)[0].item())


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_sigmoid_softplus_extremes(npdt, tdt, gdt):
    x = np.array([-200.0, -90.0, -30.0, -1e-3, 0.0, 1e-3, 15.0, 25.0, 90.0, 200.0]).astype(npdt)
    for name in ("SigmoidTransform", "SoftplusTransform", "TanhTransform"):
        ta, ga = getattr(TT, name)(), getattr(GT, name)()
        tx, gx = torch.tensor(x, dtype=tdt), tg.tensor(x, dtype=gdt)
        ty, gy = ta(tx), ga(gx)
        close(ty, gy, tol(npdt))
        close(ta.log_abs_det_jacobian(tx, ty), ga.log_abs_det_jacobian(gx, gy), tol(npdt))
        close(ta.inv(ty), ga.inv(gy), tol(npdt) * 10)


def test_errors():
    for T, mod in ((TT, torch), (GT, tg)):
        with pytest.raises(ValueError, match="in_shape, out_shape have different numbers of elements"):
            T.ReshapeTransform((2, 3), (5,))
        r = T.ReshapeTransform((2, 3), (6,))
        with pytest.raises(ValueError, match="Too few dimensions on input"):
            r.forward_shape((3,))
        with pytest.raises(ValueError, match="Too few dimensions on input"):
            r.inverse_shape(())
        for bad in (T.StickBreakingTransform(), T.SoftmaxTransform(), T.CorrCholeskyTransform()):
            with pytest.raises(ValueError, match="Too few dimensions on input"):
                bad.forward_shape(())
        with pytest.raises(ValueError, match="Input is not a flattened lower-diagonal number"):
            T.CorrCholeskyTransform().forward_shape((4,))
        with pytest.raises(ValueError, match="Input is not square"):
            T.CorrCholeskyTransform().inverse_shape((2, 3))
        with pytest.raises(ValueError, match="Too few dimensions on input"):
            T.IndependentTransform(T.ExpTransform(), 2)(mod.zeros(3))
        with pytest.raises(AssertionError, match="All elements of tseq must be Transform instances"):
            T.CatTransform([T.ExpTransform(), 3])
        with pytest.raises(AssertionError, match=r"lengths \(1\) must match transforms \(2\)"):
            T.CatTransform([T.ExpTransform(), T.ExpTransform()], lengths=[2])
        with pytest.raises(AssertionError, match=r"x.size\(0\) = 3 must equal length 2"):
            T.CatTransform([T.ExpTransform(), T.ExpTransform()])(mod.zeros(3))
        with pytest.raises(AssertionError, match="dim 2 out of range for tensor with 1 dimensions"):
            T.CatTransform([T.ExpTransform()], dim=2)(mod.zeros(3))
        with pytest.raises(AssertionError, match=r"x.size\(0\) = 3 must equal len\(transforms\) 2"):
            T.StackTransform([T.ExpTransform(), T.ExpTransform()])(mod.zeros(3))
        with pytest.raises(NotImplementedError):
            T.AbsTransform().log_abs_det_jacobian(mod.zeros(2), mod.zeros(2))
        with pytest.raises(NotImplementedError):
            T.Transform()(mod.zeros(2))
        with pytest.raises(NotImplementedError):
            T.Transform().inv(mod.zeros(2))
    # the messages quoting shapes print them as torch
    for shape in ((4, 2, 2), torch.Size((4, 2, 2))):
        gshape = tg.Size(shape) if isinstance(shape, torch.Size) else shape
        with pytest.raises(ValueError) as te:
            TT.ReshapeTransform((2, 3), (6,)).forward_shape(shape)
        with pytest.raises(ValueError) as ge:
            GT.ReshapeTransform((2, 3), (6,)).forward_shape(gshape)
        assert str(ge.value) == str(te.value)


def test_compose_shapes_and_event_dims():
    for T, C in ((TT, TC), (GT, GC)):
        c = T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform(), T.ExpTransform().inv])
        assert repr(c.domain) == "IndependentConstraint(Real(), 1)"
        assert repr(c.codomain) == "IndependentConstraint(Real(), 1)"
        assert c.event_dim == 1 and c.bijective
        assert T.identity_transform.bijective and T.identity_transform.sign == 1
        assert repr(T.identity_transform.domain) == "Real()"
        assert T.identity_transform.inv == T.identity_transform
        d = T.ComposeTransform([T.AffineTransform(0.0, 1.0, event_dim=2), T.ExpTransform()])
        assert d.domain.event_dim == 2 and d.codomain.event_dim == 2
        assert T.ComposeTransform([T.AbsTransform(), T.ExpTransform()]).bijective is False
    x = np.random.default_rng(3).normal(size=(5,))
    tz = TT.identity_transform.log_abs_det_jacobian(torch.tensor(x), torch.tensor(x))
    gz = GT.identity_transform.log_abs_det_jacobian(tg.tensor(x), tg.tensor(x))
    close(tz, gz, 0)


def test_affine_sign_and_equality():
    for T, mod in ((TT, torch), (GT, tg)):
        assert T.AffineTransform(0.0, 2.0).sign == 1 and T.AffineTransform(0.0, -2.0).sign == -1
        assert T.AffineTransform(0.0, 0.0).sign == 0
        assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
        assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
        assert T.AffineTransform(mod.tensor([1.0, 2.0]), 2.0) == T.AffineTransform(mod.tensor([1.0, 2.0]), 2.0)
        assert T.AffineTransform(mod.tensor([1.0, 2.0]), 2.0) != T.AffineTransform(mod.tensor([1.0, 3.0]), 2.0)
        assert T.PowerTransform(2.0) == T.PowerTransform(mod.tensor(2.0))
        assert T.PowerTransform(2.0) != T.PowerTransform(3.0)
        s = T.ComposeTransform([T.AffineTransform(0.0, -1.0), T.ExpTransform(), T.AffineTransform(0.0, -3.0)]).sign
        assert s == 1


# ------------------------------------------------------------------------------------- biject_to / transform_to

def constraint_table(C, mod):
    return {
        "real": C.real, "real_vector": C.real_vector, "positive": C.positive, "nonnegative": C.nonnegative,
        "greater_than": C.greater_than(mod.tensor([1.0, -2.0, 0.5], dtype=mod.float64)),
        "greater_than_eq": C.greater_than_eq(2.0), "less_than": C.less_than(-1.5),
        "interval": C.interval(-2.0, 3.0), "unit_interval": C.unit_interval,
        "half_open_interval": C.half_open_interval(0.0, 1.0),
        "interval_tensor": C.interval(mod.tensor([0.0, 1.0, 2.0], dtype=mod.float64), 4.0),
        "simplex": C.simplex, "lower_cholesky": C.lower_cholesky, "positive_definite": C.positive_definite,
        "positive_semidefinite": C.positive_semidefinite, "corr_cholesky": C.corr_cholesky,
        "independent": C.independent(C.positive, 2), "boolean": C.boolean, "lower_triangular": C.lower_triangular,
        "integer_interval": C.integer_interval(0, 3),
    }


def _input_for(name):
    rng = np.random.default_rng(5)
    if name in ("lower_cholesky", "positive_definite", "positive_semidefinite"):
        return rng.normal(size=(2, 3, 3))
    if name == "corr_cholesky":
        return rng.normal(size=(2, 3))
    return rng.normal(size=(2, 3))


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", list(constraint_table(TC, torch)))
def test_registry(registry, name):
    tcon, gcon = constraint_table(TC, torch)[name], constraint_table(GC, tg)[name]
    treg, greg = getattr(TR, registry), getattr(GR, registry)
    assert getattr(tg.distributions, registry) is greg
    try:
        tt = treg(tcon)
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError, match=str(e)):
            greg(gcon)
        return
    gt = greg(gcon)
    assert repr(gt) == repr(tt) and type(gt).__name__ == type(tt).__name__
    assert gt.bijective == tt.bijective
    x = _input_for(name)
    ty, gy = tt(torch.tensor(x)), gt(tg.tensor(x))
    close(ty, gy, 1e-12)
    assert bool(gcon.check(gy).all()) == bool(tcon.check(ty).all())
    close(tt.inv(ty), gt.inv(gy), 1e-10)
    if tt.bijective:
        close(tt.log_abs_det_jacobian(torch.tensor(x), ty), gt.log_abs_det_jacobian(tg.tensor(x), gy), 1e-12)


def test_registry_cat_stack():
    gcat = GC.cat([GC.positive, GC.real, GC.unit_interval], 1, [1, 2, 1])
    tcat = TC.cat([TC.positive, TC.real, TC.unit_interval], 1, [1, 2, 1])
    gst = GC.stack([GC.positive, GC.real], 0)
    tst = TC.stack([TC.positive, TC.real], 0)
    for gc, tc in ((gcat, tcat), (gst, tst)):
        assert gc.event_dim == tc.event_dim and gc.is_discrete == tc.is_discrete and repr(gc) == repr(tc)
    x = np.random.default_rng(9).normal(size=(2, 4))
    for reg in ("biject_to", "transform_to"):
        for gc, tc in ((gcat, tcat), (gst, tst)):
            gt, tt = getattr(GR, reg)(gc), getattr(TR, reg)(tc)
            assert type(gt).__name__ == type(tt).__name__
            close(tt(torch.tensor(x)), gt(tg.tensor(x)), 1e-12)
            close(tt.log_abs_det_jacobian(torch.tensor(x), tt(torch.tensor(x))),
                  gt.log_abs_det_jacobian(tg.tensor(x), gt(tg.tensor(x))), 1e-12)
            y = tt(torch.tensor(x)).numpy()
            same_check = (arr(gc.check(tg.tensor(y))) == arr(tc.check(torch.tensor(y)))).all()
            assert same_check
    # a CatTransform's domain and codomain
    gct = GT.CatTransform([GT.ExpTransform(), GT.StickBreakingTransform()], 0, [1, 2])
    tct = TT.CatTransform([TT.ExpTransform(), TT.StickBreakingTransform()], 0, [1, 2])
    assert gct.domain.event_dim == tct.domain.event_dim and gct.codomain.event_dim == tct.codomain.event_dim
    assert gct.event_dim == tct.event_dim and gct.length == tct.length


def test_registry_register_and_errors():
    for R, C, T in ((TR, TC, TT), (GR, GC, GT)):
        reg = R.ConstraintRegistry()
        with pytest.raises(NotImplementedError, match="Cannot transform _Real constraints"):
            reg(C.real)
        reg.register(C.real, lambda c: T.ExpTransform())
        assert isinstance(reg(C.real), T.ExpTransform)

        @reg.register(C.greater_than)
        def factory(constraint):
            return T.AffineTransform(constraint.lower_bound, 1.0)
        assert reg(C.greater_than(3.0)).loc == 3.0 and reg(C.positive).loc == 0.0
        with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance, "
                                            "but got 3"):
            reg.register(3, factory)
        with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance"):
            reg.register(int, factory)
        with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky constraints"):
            R.biject_to(C.lower_cholesky)


def test_transform_to_optimization_example():
    """torch's docstring example: an unconstrained parameter mapped onto scale's constraint."""
    results = []
    for mod in (torch, tg):
        unconstrained = mod.tensor(np.linspace(-2, 2, 5), requires_grad=True)
        D = mod.distributions
        scale = D.transform_to(D.Normal.arg_constraints["scale"])(unconstrained)
        loss = -D.Normal(mod.zeros(5, dtype=mod.float64), scale).log_prob(mod.tensor(np.arange(5.0))).sum()
        loss.backward()
        results.append((loss, unconstrained.grad))
    close(results[0][0], results[1][0], 1e-12)
    close(results[0][1], results[1][1], 1e-12)


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_stick_breaking_and_sigmoid_edges(npdt, tdt, gdt):
    """The clamps: a simplex point on an edge (y[-1] = 0, or y[:-1] summing to 1) and sigmoid's 0 and 1."""
    y = np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0], [0.0, 0.3, 0.7], [1.0, 0.0, 0.0]]).astype(npdt)
    close(TT.StickBreakingTransform().inv(torch.tensor(y, dtype=tdt)),
          GT.StickBreakingTransform().inv(tg.tensor(y, dtype=gdt)), tol(npdt))
    u = np.array([0.0, 1.0, 1e-30, 1 - 1e-9, 0.5]).astype(npdt)
    close(TT.SigmoidTransform().inv(torch.tensor(u, dtype=tdt)), GT.SigmoidTransform().inv(tg.tensor(u, dtype=gdt)),
          tol(npdt))
    x = np.array([-200.0, -80.0, 0.0, 40.0, 200.0]).astype(npdt)
    ts, gs = TT.SigmoidTransform()(torch.tensor(x, dtype=tdt)), GT.SigmoidTransform()(tg.tensor(x, dtype=gdt))
    close(ts, gs, tol(npdt))
    ends = [0, -2, -1]   # clipped to [tiny, 1 - eps]: exactly torch's
    np.testing.assert_array_equal(arr(gs)[ends], arr(ts)[ends])
    close(TT.StickBreakingTransform()(torch.tensor(x, dtype=tdt)),
          GT.StickBreakingTransform()(tg.tensor(x, dtype=gdt)), tol(npdt))
