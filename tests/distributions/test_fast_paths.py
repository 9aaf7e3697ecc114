"""The distributions' fast paths for their common calls (validation computed on arrays, shapes passed through,
lazy properties under grad mode, equal-shaped parameters not broadcast) against torch, and their edges, where
the general code takes over: other dtypes, Tensor subclasses, tensor bounds, overridden checks, bad shapes."""
import numpy as np
import pytest
import torch

import tapegrad as tg
from tapegrad.distributions import constraints as tg_constraints

from parity import D, TD, DTYPES, DT_IDS, close, messages, same, seed, tol


def _pair(x, npdt, grad=False):
    a = np.asarray(x, npdt)
    return torch.tensor(a, requires_grad=grad), tg.tensor(a, requires_grad=grad)


def _grads(t_leaves, g_leaves, t_out, g_out):
    t_out.sum().backward()
    g_out.sum().backward()
    return [(a.grad, b.grad) for a, b in zip(t_leaves, g_leaves)]


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_reinforce_step_draws_values_and_gradients(npdt, tdt, gdt):
    # reinforce.py's step: Categorical(softmax(...)), sample, log_prob; then the policy loss's backward
    seed(11)
    xt, xg = _pair([[0.3, -0.2]], npdt, grad=True)
    lp_t, lp_g = [], []
    for _ in range(20):
        mt, mg = TD.Categorical(torch.softmax(xt, -1)), D.Categorical(tg.softmax(xg, -1))
        at, ag = mt.sample(), mg.sample()
        same(at, ag)
        assert tuple(ag.shape) == (1,) and ag.dtype == tg.int64
        lp_t.append(mt.log_prob(at))
        lp_g.append(mg.log_prob(ag))
        close(lp_t[-1], lp_g[-1], tol(npdt))
        assert type(lp_g[-1].grad_fn).__name__ == type(lp_t[-1].grad_fn).__name__
    torch.cat(lp_t).sum().backward()
    tg.cat(lp_g).sum().backward()
    close(xt.grad, xg.grad, tol(npdt))


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
@pytest.mark.parametrize("shape", [(1, 4), (64, 20)])
def test_normal_rsample_log_prob_entropy(npdt, tdt, gdt, shape):
    rng = np.random.default_rng(3)
    (mt, mg), (st, sg) = _pair(rng.standard_normal(shape), npdt, True), _pair(rng.random(shape) + 0.5, npdt, True)
    seed(5)
    nt, ng = TD.Normal(mt, st), D.Normal(mg, sg)
    assert ng.batch_shape == nt.batch_shape and type(ng.batch_shape) is tg.Size
    zt, zg = nt.rsample(), ng.rsample()
    close(zt, zg, tol(npdt))
    lt, lg = nt.log_prob(zt), ng.log_prob(zg)
    et, eg = nt.entropy(), ng.entropy()
    close(lt, lg, tol(npdt))
    close(et, eg, tol(npdt))
    for gt, gg in _grads([mt, st], [mg, sg], lt + et, lg + eg):
        close(gt, gg, 1e-4 if npdt == np.float32 else 1e-10)
    seed(6)
    same(nt.sample(), ng.sample())
    same(nt.sample((2,)), ng.sample((2,)))  # (sample_shape given: the expanded parameters' path)


def test_normal_sample_broadcast_parameters_and_numbers():
    seed(2)
    for make in (lambda M, L: M.Normal(L.zeros(3, 1), L.ones(4)), lambda M, L: M.Normal(0.0, L.ones(2, 2)),
                 lambda M, L: M.Normal(L.zeros(3), 2.0), lambda M, L: M.Normal(0.5, 2.0)):
        nt, ng = make(TD, torch), make(D, tg)
        assert ng.batch_shape == nt.batch_shape
        same(nt.sample(), ng.sample())
        same(nt.sample(torch.Size([2])), ng.sample(tg.Size([2])))
        same(nt.sample([1, 2]), ng.sample([1, 2]))
        same(nt.rsample(), ng.rsample())


@pytest.mark.parametrize("npdt,tdt,gdt", DTYPES, ids=DT_IDS)
def test_bernoulli_log_prob_entropy_and_draws(npdt, tdt, gdt):
    rng = np.random.default_rng(4)
    (pt, pg), (yt, yg) = _pair(rng.random((64, 20)), npdt, True), _pair(rng.random((64, 20)) > 0.5, npdt)
    bt, bg = TD.Bernoulli(pt), D.Bernoulli(pg)
    lt, lg = bt.log_prob(yt), bg.log_prob(yg)
    close(lt, lg, tol(npdt))
    close(bt.entropy(), bg.entropy(), tol(npdt))
    for gt, gg in _grads([pt], [pg], lt, lg):
        close(gt, gg, 1e-4 if npdt == np.float32 else 1e-10)
    seed(8)
    same(bt.sample(), bg.sample())
    close(TD.Bernoulli(logits=pt).log_prob(yt[0]), D.Bernoulli(logits=pg).log_prob(yg[0]), tol(npdt))


def test_categorical_entropy_and_lazy_logits():
    for npdt in (np.float32, np.float64):
        (pt, pg) = _pair([[0.2, 0.8], [0.0, 1.0]], npdt, True)
        close(TD.Categorical(pt).entropy(), D.Categorical(pg).entropy(), tol(npdt))
        close(TD.Categorical(logits=pt).entropy(), D.Categorical(logits=pg).entropy(), tol(npdt))


def test_lazy_property_under_no_grad_and_on_the_class():
    pt, pg = _pair([[0.3, 0.7]], np.float32, True)
    mt, mg = TD.Categorical(pt), D.Categorical(pg)
    with torch.no_grad():
        lt, ct = mt.logits, mt.log_prob(torch.tensor([1]))
    with tg.no_grad():
        lg, cg = mg.logits, mg.log_prob(tg.tensor([1]))
        assert not tg.is_grad_enabled()
    # (the lazy logits are computed with grad on, as torch's; the gather after them, under no_grad, is not)
    assert lg.requires_grad == lt.requires_grad is True
    assert cg.requires_grad == ct.requires_grad is False
    assert tg.is_grad_enabled()
    close(lt, lg, 1e-6)
    for cls in (D.Categorical, D.Bernoulli):
        assert isinstance(cls.logits, property) and isinstance(cls.probs, property)
        assert cls.logits.__doc__ == getattr(TD, cls.__name__).logits.__doc__


VALID_PARAMS = [
    lambda M, t: M.Categorical(t([[0.2, 0.8]])),
    lambda M, t: M.Categorical(logits=t([[0.2, -5.0]])),
    lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, 1e-30])),
    lambda M, t: M.Bernoulli(t([0.0, 1.0, 0.5])),
    lambda M, t: M.Bernoulli(logits=t([-1e30, 3.0])),
    lambda M, t: M.Uniform(t([0.0]), t([1.0])),
    lambda M, t: M.Binomial(t([3.0]), t([0.5])),
    lambda M, t: M.Exponential(t([2.0])),
]


@pytest.mark.parametrize("make", VALID_PARAMS)
def test_valid_parameters_pass(make):
    make(TD, torch.tensor)
    make(D, tg.tensor)


@pytest.mark.parametrize("make", [
    lambda M, t: M.Categorical(t([[0.2, -0.8]])),
    lambda M, t: M.Categorical(t([[0.2, 0.5]])),  # (the simplex's sum, after Categorical's normalising: passes)
    lambda M, t: M.Categorical(t([[0.2, float("nan")]])),
    lambda M, t: M.Categorical(logits=t([[0.2, float("nan")]])),
    lambda M, t: M.Categorical(logits=t([[0.2, float("inf")]])),
    lambda M, t: M.Normal(t([0.0, float("nan")]), t([1.0, 1.0])),
    lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, 0.0])),
    lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, float("nan")])),
    lambda M, t: M.Normal(t(0.0), t(-1.0)),
    lambda M, t: M.Bernoulli(t([0.2, 1.5])),
    lambda M, t: M.Bernoulli(t([0.2, -0.0001])),
    lambda M, t: M.Bernoulli(logits=t([0.2, float("nan")])),
    lambda M, t: M.Exponential(t([2.0, -1.0])),
    lambda M, t: M.Uniform(t([0.0]), t([float("nan")])),
])
def test_parameter_errors_as_torch(make):
    for dt, gdt in ((torch.float32, tg.float32), (torch.float64, tg.float64)):
        try:
            make(TD, lambda x: torch.tensor(x, dtype=dt))
        except ValueError:
            messages(lambda: make(TD, lambda x: torch.tensor(x, dtype=dt)),
                     lambda: make(D, lambda x: tg.tensor(x, dtype=gdt)))
        else:
            make(D, lambda x: tg.tensor(x, dtype=gdt))


@pytest.mark.parametrize("make,value,dtype", [
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [0, 2], "int64"),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [-1, 1], "int64"),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [0, 1], "int32"),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [0.0, 1.0], "float32"),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [0.0, 1.5], "float32"),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [0.0, float("nan")], "float64"),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [True, False], "bool"),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [[1], [0]], "int64"),  # (broadcast: valid)
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [0, 1, 1], "int64"),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [[0, 1, 1]], "int64"),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), 1, "int64"),
    (lambda M, t: M.Categorical(t([[0.2, 0.8], [0.5, 0.5]])), [], "int64"),
    (lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, 1.0])), [0.0, float("nan")], "float32"),
    (lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, 1.0])), [0.0, float("inf")], "float32"),
    (lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, 1.0])), [0, 3], "int64"),
    (lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, 1.0])), [[0.0], [1.0], [2.0]], "float32"),
    (lambda M, t: M.Normal(t([0.0, 1.0]), t([1.0, 1.0])), [0.0, 1.0, 2.0], "float32"),
    (lambda M, t: M.Bernoulli(t([0.2, 0.5])), [0.0, 0.5], "float32"),
    (lambda M, t: M.Bernoulli(t([0.2, 0.5]).double()), [1.0, 0.0], "float64"),
    (lambda M, t: M.Bernoulli(t([0.2, 0.5])), [2, 0], "int64"),
    (lambda M, t: M.Binomial(t([3.0, 2.0]), t([0.5, 0.5])), [3.0, 3.0], "float32"),  # (tensor bounds)
    (lambda M, t: M.Binomial(t([3.0, 2.0]), t([0.5, 0.5])), [3.0, 2.0], "float32"),
    (lambda M, t: M.Uniform(t([0.0, 0.0]), t([1.0, 2.0])), [0.5, 2.5], "float32"),
    (lambda M, t: M.Exponential(t([2.0, 1.0])), [1.0, -1.0], "float32"),
    (lambda M, t: M.OneHotCategorical(t([0.2, 0.8])), [[0.0, 1.0]], "float32"),  # (an event dim)
    (lambda M, t: M.OneHotCategorical(t([0.2, 0.8])), [[0.0, 1.0, 0.0]], "float32"),
])
def test_log_prob_validation_as_torch(make, value, dtype):
    dt, gdt = getattr(torch, dtype), getattr(tg, dtype)
    mt, mg = make(TD, torch.tensor), make(D, tg.tensor)
    vt, vg = torch.tensor(value, dtype=dt), tg.tensor(value, dtype=gdt)
    try:
        lt = mt.log_prob(vt)
    except ValueError:
        messages(lambda: mt.log_prob(vt), lambda: mg.log_prob(vg))
    else:
        close(lt, mg.log_prob(vg), 1e-6)


def test_sample_validation_needs_a_tensor():
    messages(lambda: TD.Categorical(torch.tensor([0.5, 0.5])).log_prob(1),
             lambda: D.Categorical(tg.tensor([0.5, 0.5])).log_prob(1))


def test_half_precision_and_bfloat16_validation():
    # (their comparisons are check()'s: a bound rounded to bfloat16 first, as torch's)
    for dt, gdt in ((torch.float16, tg.float16), (torch.bfloat16, tg.bfloat16)):
        nt, ng = TD.Normal(torch.tensor([0.0, 1.0], dtype=dt), torch.tensor([1.0, 2.0], dtype=dt)), \
            D.Normal(tg.tensor([0.0, 1.0], dtype=gdt), tg.tensor([1.0, 2.0], dtype=gdt))
        close(nt.log_prob(torch.tensor([1.0, 0.0], dtype=dt)).float(),
              ng.log_prob(tg.tensor([1.0, 0.0], dtype=gdt)).float(), 1e-2)
        messages(lambda: nt.log_prob(torch.tensor([1.0, float("nan")], dtype=dt)),
                 lambda: ng.log_prob(tg.tensor([1.0, float("nan")], dtype=gdt)))
        messages(lambda: TD.Normal(torch.tensor([0.0], dtype=dt), torch.tensor([-1.0], dtype=dt)),
                 lambda: D.Normal(tg.tensor([0.0], dtype=gdt), tg.tensor([-1.0], dtype=gdt)))
        messages(lambda: TD.Bernoulli(torch.tensor([1.5], dtype=dt)), lambda: D.Bernoulli(tg.tensor([1.5], dtype=gdt)))


def test_parameters_as_nn_parameters():
    pt, pg = torch.nn.Parameter(torch.tensor([0.0, 1.0])), tg.nn.Parameter(tg.tensor([0.0, 1.0]))
    st, sg = torch.nn.Parameter(torch.tensor([1.0, 2.0])), tg.nn.Parameter(tg.tensor([1.0, 2.0]))
    lt, lg = TD.Normal(pt, st).log_prob(torch.tensor([0.5, 0.5])), D.Normal(pg, sg).log_prob(tg.tensor([0.5, 0.5]))
    close(lt, lg, 1e-6)
    for gt, gg in _grads([pt, st], [pg, sg], lt, lg):
        close(gt, gg, 1e-6)
    messages(lambda: TD.Normal(pt, torch.nn.Parameter(torch.tensor([1.0, -2.0]))),
             lambda: D.Normal(pg, tg.nn.Parameter(tg.tensor([1.0, -2.0]))))


def _strict_scale_normal(M, C):
    """A Normal whose scale constraint is a subclass of positive's class with its own check (> 1)."""
    class Above1(type(C.positive)):
        def check(self, value):
            return value > 1.0

    class Strict(M.Normal):
        arg_constraints = {"loc": C.real, "scale": Above1(0.0)}
    return Strict


def test_overridden_check_is_used():
    St, Sg = _strict_scale_normal(TD, torch.distributions.constraints), _strict_scale_normal(D, tg_constraints)
    St(torch.tensor([0.0]), torch.tensor([2.0]))
    Sg(tg.tensor([0.0]), tg.tensor([2.0]))
    messages(lambda: St(torch.tensor([0.0]), torch.tensor([0.5])), lambda: Sg(tg.tensor([0.0]), tg.tensor([0.5])))


def test_all_valid_against_check():
    # all_valid is check(value).all(), for every constraint and dtype it has a shortcut for, and where it has not
    C = tg_constraints
    low, high = tg.tensor([0.0, 0.5]), tg.tensor([1.0, 1.0])
    cases = [C.real, C.real_vector, C.positive, C.nonnegative, C.greater_than(0.25), C.greater_than_eq(-1),
             C.less_than(0.5), C.unit_interval, C.interval(-0.5, 0.5), C.half_open_interval(0.0, 1.0),
             C.interval(low, high), C.greater_than(low), C.boolean, C.simplex, C.integer_interval(0, 1),
             C.integer_interval(0, 2), C.integer_interval(tg.tensor(0), tg.tensor(1)), C.nonnegative_integer,
             C.independent(C.positive, 1), C.independent(C.real, 2), C.independent(C.simplex, 1)]
    values = [[0.0, 1.0], [0.5, 0.5], [-1.0, 2.0], [float("nan"), 0.5], [float("inf"), 0.0], [1.0, 0.0],
              [[0.25, 0.75], [1.0, 0.0]], [[0.25, -0.75], [1.0, 0.0]], [[2, 0], [1, 1]]]
    dtypes = [tg.float32, tg.float64, tg.float16, tg.bfloat16, tg.int64, tg.int32, tg.bool]
    for c in cases:
        for v in values:
            for dt in dtypes:
                x = tg.tensor(v).to(dt)
                try:
                    expected = bool(np.all(c.check(x)._data))
                except (ValueError, TypeError, RuntimeError) as e:
                    with pytest.raises(type(e)):
                        C.all_valid(c, x)
                    continue
                assert C.all_valid(c, x) is expected, (c, v, dt)


def test_validate_args_default_and_explicit():
    assert D.Distribution._validate_args is TD.Distribution._validate_args is True
    bad = lambda M, L: M.Categorical(L.tensor([[0.5, -0.5]]))  # noqa: E731
    try:
        D.Distribution.set_default_validate_args(False)
        TD.Distribution.set_default_validate_args(False)
        bad(TD, torch), bad(D, tg)
        close(TD.Bernoulli(torch.tensor([0.5])).log_prob(torch.tensor([0.3])),
              D.Bernoulli(tg.tensor([0.5])).log_prob(tg.tensor([0.3])), 1e-6)
        messages(lambda: TD.Normal(torch.tensor([0.0]), torch.tensor([-1.0]), validate_args=True),
                 lambda: D.Normal(tg.tensor([0.0]), tg.tensor([-1.0]), validate_args=True))
    finally:
        D.Distribution.set_default_validate_args(True)
        TD.Distribution.set_default_validate_args(True)
    messages(lambda: bad(TD, torch), lambda: bad(D, tg))
    D.Categorical(tg.tensor([[0.5, -0.5]]), validate_args=False)


def test_shapes_of_samples_and_batches():
    seed(4)
    for make in (lambda M, L: M.Categorical(L.tensor([0.2, 0.3, 0.5])),
                 lambda M, L: M.Categorical(L.tensor([[0.2, 0.8], [0.6, 0.4]])),
                 lambda M, L: M.OneHotCategorical(L.tensor([[0.2, 0.8], [0.6, 0.4]])),
                 lambda M, L: M.Bernoulli(L.tensor([[0.2, 0.8]])),
                 lambda M, L: M.Normal(L.zeros(2, 3), L.ones(2, 3))):
        mt, mg = make(TD, torch), make(D, tg)
        assert mg.batch_shape == mt.batch_shape and mg.event_shape == mt.event_shape
        assert type(mg.batch_shape) is tg.Size and type(mg.event_shape) is tg.Size
        for shape in ((), (3,), [2, 1], torch.Size([2])):
            gshape = tg.Size(list(shape)) if isinstance(shape, torch.Size) else shape
            assert tuple(mg._extended_shape(gshape)) == tuple(mt._extended_shape(shape))
            assert type(mg._extended_shape(gshape)) is tg.Size
            same(mt.sample(shape), mg.sample(gshape))
    d = D.Normal(tg.zeros(2), tg.ones(2))
    assert type(d._extended_shape((tg.tensor(3),))) is tg.Size and d._extended_shape((tg.tensor(3),)) == (3, 2)
    assert D.Normal(0.0, 1.0).batch_shape == () and type(D.Normal(0.0, 1.0).batch_shape) is tg.Size


def test_expand_keeps_validation_and_shapes():
    mt = TD.Categorical(torch.tensor([0.3, 0.7])).expand([2, 3])
    mg = D.Categorical(tg.tensor([0.3, 0.7])).expand([2, 3])
    assert mg.batch_shape == mt.batch_shape
    messages(lambda: mt.log_prob(torch.tensor([2])), lambda: mg.log_prob(tg.tensor([2])))
    close(mt.log_prob(torch.ones(2, 3, dtype=torch.long)), mg.log_prob(tg.ones(2, 3, dtype=tg.long)), 1e-6)


def test_compile_trace_takes_the_general_path():
    # (a compiled step: validation runs its tensor checks; the results are what eager computes)
    def step(L, x, a):
        m = L.distributions.Categorical(L.softmax(x, -1))
        return m.log_prob(a)
    x = tg.tensor([[0.3, -0.2], [1.0, 0.5]])
    compiled = tg.compile(lambda x, a: step(tg, x, a))
    for a in ([0, 1], [1, 1], [1, 0]):
        close(step(torch, torch.tensor(x._data), torch.tensor(a)), compiled(x, tg.tensor(a)), 1e-6)


@pytest.mark.parametrize("probs,value", [
    ([[0.2, 0.8]], 1),                           # (a 0-d action: broadcast to the batch, the probs not expanded)
    ([[0.2, 0.8]], [1]),                         # (reinforce.py's: one shape, nothing expanded)
    ([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], [[0], [2], [1]]),  # (both expanded)
    ([0.2, 0.3, 0.5], [[0, 2], [1, 1]]),         # (the probs expanded only)
])
def test_categorical_log_prob_broadcasting_and_gradients(probs, value):
    pt, pg = _pair(probs, np.float32, True)
    lt = TD.Categorical(pt).log_prob(torch.tensor(value))
    lg = D.Categorical(pg).log_prob(tg.tensor(value))
    close(lt, lg, 1e-6)
    assert type(lg.grad_fn).__name__ == type(lt.grad_fn).__name__
    for gt, gg in _grads([pt], [pg], lt, lg):
        close(gt, gg, 1e-6)


@pytest.mark.parametrize("make", [
    lambda L: (L.ones(2, 3), L.zeros(2, 3)),
    lambda L: (L.ones(2, 3),),
    lambda L: (L.ones(2, 1), L.zeros(3)),
    lambda L: (L.ones(2, 3), 0.5),
    lambda L: (1, L.zeros(2, dtype=L.float64)),
    lambda L: (L.ones(3), L.zeros(3), L.ones(3)),
    lambda L: (L.ones(3), L.zeros(3), 2.0),
])
def test_broadcast_all(make):
    rt = torch.distributions.utils.broadcast_all(*make(torch))
    ins = make(tg)
    rg = tg.distributions.utils.broadcast_all(*ins)
    assert type(rg) is tuple and len(rg) == len(rt)
    for a, b in zip(rt, rg):
        same(a, b)
    if all(isinstance(v, tg.Tensor) and v.shape == ins[0].shape for v in ins):
        assert all(a is b for a, b in zip(rg, ins))  # (as torch's: the tensors themselves)


def test_broadcast_all_errors():
    messages(lambda: torch.distributions.utils.broadcast_all(torch.ones(2), "a"),
             lambda: tg.distributions.utils.broadcast_all(tg.ones(2), "a"))
    with pytest.raises(ValueError):
        tg.distributions.utils.broadcast_all(tg.ones(2), tg.ones(3))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_bernoulli_log_prob_of_reduced_floats(dtype):
    """Bernoulli's clamp epsilon is torch.finfo's (NumPy's finfo refuses ml_dtypes' bfloat16). To one step of the
    dtype: its float32 log may be rounded by another SIMD path on another CPU before the rounding to it."""
    got = []
    for L in (torch, tg):
        p = L.tensor([0.3, 0.9, 1e-4], dtype=getattr(L, dtype))
        v = L.tensor([1.0, 0.0, 1.0], dtype=getattr(L, dtype))
        got.append(L.distributions.Bernoulli(p).log_prob(v).float().numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=2.0 ** -7 if dtype == "bfloat16" else 2.0 ** -10)
