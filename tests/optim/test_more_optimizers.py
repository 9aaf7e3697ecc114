"""Adadelta, Adagrad, Adamax, ASGD, NAdam, RAdam, RMSprop, Rprop, SparseAdam (and SGD, Adam, AdamW) against torch.

Parameters get the same gradients in both libraries (computed in NumPy from the current parameter values), so
the comparison measures the update rules alone: parameters agree to 1e-6 (float32) / 1e-12 (float64) relative
after K steps. State dicts cross between the libraries in both directions as plain dicts of arrays.
"""
import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = [tg, torch]
SHAPES = [(4, 3), (3,), (5,), (2, 2, 2)]
RTOL = {"float32": 1e-6, "float64": 1e-12}


def same_error(fn):
    def err(lib):
        try:
            fn(lib)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return None
    want = err(torch)
    assert want is not None
    assert err(tg) == want


def _params(lib, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(dtype))) for s in SHAPES]


def _set_grads(lib, params, rng, skip=None):
    """A gradient from the parameter values (the same in both libraries for the same values) plus noise."""
    for i, p in enumerate(params):
        a = p.detach().numpy().astype(np.float64)
        g = np.sin(3 * a) + 0.1 * a + 0.5 * rng.standard_normal(a.shape)
        p.grad = None if i == skip else lib.tensor(g.astype(p.detach().numpy().dtype))


def _steps(lib, opt, params, k, seed=1, skip_every=3):
    rng = np.random.default_rng(seed)
    for i in range(k):
        # every third step one parameter has no gradient: it must be left alone, as torch does
        _set_grads(lib, params, rng, skip=(i % len(params)) if i % skip_every == 2 else None)
        opt.step()


def _numpy(v):
    if isinstance(v, (tg.Tensor, torch.Tensor)):
        return v.detach().numpy()
    return v


def _to_lib(lib, v):
    """A state_dict value carried to `lib` through NumPy (plain dicts, lists and arrays in between)."""
    if isinstance(v, dict):
        return {k: _to_lib(lib, x) for k, x in v.items()}
    if isinstance(v, list):
        return [_to_lib(lib, x) for x in v]
    if isinstance(v, tuple):
        return tuple(_to_lib(lib, x) for x in v)
    if isinstance(v, (tg.Tensor, torch.Tensor)):
        return lib.tensor(np.array(v.detach().numpy(), copy=True))
    return v


def _assert_close(a, b, dtype, what="", rtol=None):
    a, b = np.asarray(_numpy(a)), np.asarray(_numpy(b))
    assert a.dtype == b.dtype, (what, a.dtype, b.dtype)
    rtol = rtol or RTOL[dtype]
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max(initial=0))),
                               err_msg=what)


def _assert_states_close(sa, sb, dtype):
    assert list(sa["state"]) == list(sb["state"])
    for k in sb["state"]:
        assert list(sa["state"][k]) == list(sb["state"][k])
        for key, vb in sb["state"][k].items():
            va = sa["state"][k][key]
            assert type(va).__name__ == type(vb).__name__ or isinstance(vb, torch.Tensor), (key, va, vb)
            if isinstance(vb, torch.Tensor):
                assert isinstance(va, tg.Tensor) and tuple(va.shape) == tuple(vb.shape), key
                # state such as a momentum buffer sums terms that cancel: in float32 torch's fused multiply-adds
                # (which ones depends on the CPU) show there as a few ulps of the terms, not of the sum
                _assert_close(va, vb, dtype, key, rtol=1e-5 if dtype == "float32" else None)
            else:
                assert va == vb, key
    assert sa["param_groups"] == sb["param_groups"]


OPTIMIZERS = {
    "adadelta": lambda L, p: L.optim.Adadelta(p),
    "adadelta-options": lambda L, p: L.optim.Adadelta(p, lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1,
                                                      maximize=True),
    "adafactor": lambda L, p: L.optim.Adafactor(p, lr=0.05),
    "adafactor-options": lambda L, p: L.optim.Adafactor(p, lr=0.05, beta2_decay=-0.5, eps=(1e-6, 1e-2), d=1.5,
                                                        weight_decay=0.1, maximize=True),
    "adagrad": lambda L, p: L.optim.Adagrad(p, lr=0.1),
    "adagrad-options": lambda L, p: L.optim.Adagrad(p, lr=0.1, lr_decay=0.01, weight_decay=0.1,
                                                    initial_accumulator_value=0.5, eps=1e-6, maximize=True),
    "adagrad-fused": lambda L, p: L.optim.Adagrad(p, lr=0.1, fused=True),
    "adamax": lambda L, p: L.optim.Adamax(p, lr=0.1),
    "adamax-options": lambda L, p: L.optim.Adamax(p, lr=0.1, betas=(0.3, 0.9), eps=1e-4, weight_decay=0.1,
                                                  maximize=True),
    "asgd": lambda L, p: L.optim.ASGD(p, lr=0.05),
    "asgd-averaging": lambda L, p: L.optim.ASGD(p, lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1,
                                                maximize=True),
    "nadam": lambda L, p: L.optim.NAdam(p, lr=0.05),
    "nadam-options": lambda L, p: L.optim.NAdam(p, lr=0.05, betas=(0.8, 0.99), weight_decay=0.1,
                                                momentum_decay=0.01, maximize=True),
    "nadam-decoupled": lambda L, p: L.optim.NAdam(p, lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
    "radam": lambda L, p: L.optim.RAdam(p, lr=0.05),
    "radam-rectified": lambda L, p: L.optim.RAdam(p, lr=0.05, betas=(0.5, 0.6), weight_decay=0.1, maximize=True),
    "radam-decoupled": lambda L, p: L.optim.RAdam(p, lr=0.05, betas=(0.5, 0.6), weight_decay=0.1,
                                                  decoupled_weight_decay=True),
    "rmsprop": lambda L, p: L.optim.RMSprop(p, lr=0.01),
    "rmsprop-momentum": lambda L, p: L.optim.RMSprop(p, lr=0.01, alpha=0.9, momentum=0.9, weight_decay=0.1),
    "rmsprop-centered": lambda L, p: L.optim.RMSprop(p, lr=0.01, centered=True, momentum=0.5, maximize=True),
    "rprop": lambda L, p: L.optim.Rprop(p, lr=0.05),
    "rprop-options": lambda L, p: L.optim.Rprop(p, lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1),
                                                maximize=True),
    "sgd-fused": lambda L, p: L.optim.SGD(p, lr=0.05, momentum=0.9, fused=True),
    "adam-fused": lambda L, p: L.optim.Adam(p, lr=0.05, fused=True),
    "adamw-foreach": lambda L, p: L.optim.AdamW(p, lr=0.05, foreach=True),
    "param-groups": lambda L, p: L.optim.RMSprop([{"params": p[:2], "lr": 0.02, "centered": True},
                                                  {"params": p[2:], "momentum": 0.5}], lr=0.01),
    "nadam-foreach": lambda L, p: L.optim.NAdam(p, lr=0.05, foreach=True),
    "adadelta-foreach": lambda L, p: L.optim.Adadelta(p, foreach=False),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_parameters_and_state_match_torch(name, dtype):
    pa, pb = _params(tg, dtype), _params(torch, dtype)
    oa, ob = OPTIMIZERS[name](tg, pa), OPTIMIZERS[name](torch, pb)
    _steps(tg, oa, pa, 12)
    _steps(torch, ob, pb, 12)
    start = _params(torch, dtype)
    moved = max(float((b.detach() - s.detach()).abs().max()) for b, s in zip(pb, start))
    assert moved > 1e-3                                  # the comparison is not between two unmoved points
    for a, b in zip(pa, pb):
        _assert_close(a, b, dtype, name)
    _assert_states_close(oa.state_dict(), ob.state_dict(), dtype)


def _interchange(name, dtype, source, target):
    """k steps in `source`, its state_dict carried to a fresh `target` optimizer, k more steps in both."""
    ps, pt = _params(source, dtype), _params(target, dtype)
    os_ = OPTIMIZERS[name](source, ps)
    _steps(source, os_, ps, 5)
    for a, b in zip(pt, ps):                             # the target starts from the source's parameters
        a.data = target.tensor(b.detach().numpy().copy())
    ot = OPTIMIZERS[name](target, pt)
    saved = os_.state_dict()
    ot.load_state_dict(_to_lib(target, saved))
    for key, value in saved["param_groups"][0].items():
        assert ot.param_groups[0][key] == value if key != "params" else True
    _steps(source, os_, ps, 6, seed=7)
    _steps(target, ot, pt, 6, seed=7)
    for a, b in zip(ps, pt):
        _assert_close(b, a, dtype, name)
    _assert_states_close(ot.state_dict() if target is tg else os_.state_dict(),
                         os_.state_dict() if target is tg else ot.state_dict(), dtype)


@pytest.mark.parametrize("name", ["adadelta", "adafactor-options", "adagrad-options", "adamax", "asgd-averaging",
                                  "nadam-options",
                                  "radam-rectified", "rmsprop-centered", "rprop-options", "param-groups",
                                  "adam-fused"])
@pytest.mark.parametrize("direction", ["torch-to-tapegrad", "tapegrad-to-torch"])
def test_state_dict_crosses_between_the_libraries(name, direction):
    source, target = (torch, tg) if direction == "torch-to-tapegrad" else (tg, torch)
    _interchange(name, "float32", source, target)


def test_state_dict_step_and_scalar_state_dtypes_match_torch():
    for name in ["nadam", "asgd", "adagrad", "rprop"]:
        sa = OPTIMIZERS[name](tg, _params(tg, "float64"))
        sb = OPTIMIZERS[name](torch, _params(torch, "float64"))
        _steps(tg, sa, sa.param_groups[0]["params"], 2)
        _steps(torch, sb, sb.param_groups[0]["params"], 2)
        for k, st in sb.state_dict()["state"].items():
            for key, v in st.items():
                assert str(sa.state_dict()["state"][k][key].dtype) == str(v.dtype), (name, key)


def test_repr_and_defaults_match_torch():
    for name, make in OPTIMIZERS.items():
        a, b = make(tg, _params(tg, "float32")), make(torch, _params(torch, "float32"))
        assert repr(a) == repr(b), name
        assert a.defaults == b.defaults, name


def _p(L):
    return [L.nn.Parameter(L.ones(2))]


@pytest.mark.parametrize("make", [
    lambda L: L.optim.Adafactor(_p(L), lr=-1), lambda L: L.optim.Adafactor(_p(L), beta2_decay=0.1),
    lambda L: L.optim.Adafactor(_p(L), eps=(-1, 1e-3)), lambda L: L.optim.Adafactor(_p(L), eps=(None, -1)),
    lambda L: L.optim.Adafactor(_p(L), d=0.5), lambda L: L.optim.Adafactor(_p(L), weight_decay=-1),
    lambda L: L.optim.Adadelta(_p(L), lr=-1), lambda L: L.optim.Adadelta(_p(L), rho=1.5),
    lambda L: L.optim.Adadelta(_p(L), eps=-1), lambda L: L.optim.Adadelta(_p(L), weight_decay=-1),
    lambda L: L.optim.Adadelta(_p(L), lr=L.tensor([0.1, 0.2])),
    lambda L: L.optim.Adagrad(_p(L), lr=-1), lambda L: L.optim.Adagrad(_p(L), lr_decay=-1),
    lambda L: L.optim.Adagrad(_p(L), weight_decay=-1),
    lambda L: L.optim.Adagrad(_p(L), initial_accumulator_value=-1),
    lambda L: L.optim.Adagrad(_p(L), eps=-1), lambda L: L.optim.Adagrad(_p(L), fused=True, foreach=True),
    lambda L: L.optim.Adagrad(_p(L), fused=True, differentiable=True),
    lambda L: L.optim.Adamax(_p(L), lr=-1), lambda L: L.optim.Adamax(_p(L), eps=-1),
    lambda L: L.optim.Adamax(_p(L), betas=(1.0, 0.9)), lambda L: L.optim.Adamax(_p(L), betas=(0.9, 1.0)),
    lambda L: L.optim.Adamax(_p(L), weight_decay=-1), lambda L: L.optim.Adamax(_p(L), fused=True),
    lambda L: L.optim.ASGD(_p(L), lr=-1), lambda L: L.optim.ASGD(_p(L), weight_decay=-1),
    lambda L: L.optim.NAdam(_p(L), lr=-1), lambda L: L.optim.NAdam(_p(L), eps=-1),
    lambda L: L.optim.NAdam(_p(L), betas=(-0.1, 0.9)), lambda L: L.optim.NAdam(_p(L), betas=(0.9, 1.5)),
    lambda L: L.optim.NAdam(_p(L), weight_decay=-1), lambda L: L.optim.NAdam(_p(L), momentum_decay=-1),
    lambda L: L.optim.RAdam(_p(L), lr=-1), lambda L: L.optim.RAdam(_p(L), eps=-1),
    lambda L: L.optim.RAdam(_p(L), betas=(1.0, 0.9)), lambda L: L.optim.RAdam(_p(L), betas=(0.9, 1.0)),
    lambda L: L.optim.RAdam(_p(L), weight_decay=-1),
    lambda L: L.optim.RMSprop(_p(L), lr=-1), lambda L: L.optim.RMSprop(_p(L), eps=-1),
    lambda L: L.optim.RMSprop(_p(L), momentum=-1), lambda L: L.optim.RMSprop(_p(L), weight_decay=-1),
    lambda L: L.optim.RMSprop(_p(L), alpha=-1),
    lambda L: L.optim.Rprop(_p(L), lr=-1), lambda L: L.optim.Rprop(_p(L), etas=(1.5, 2.0)),
    lambda L: L.optim.Rprop(_p(L), etas=(0.5, 0.9)), lambda L: L.optim.Rprop(_p(L), etas=(0.0, 1.2)),
    lambda L: L.optim.SparseAdam(_p(L), lr=0), lambda L: L.optim.SparseAdam(_p(L), eps=0),
    lambda L: L.optim.SparseAdam(_p(L), betas=(1.0, 0.9)), lambda L: L.optim.SparseAdam(_p(L), betas=(0.9, -1)),
    lambda L: L.optim.SGD(_p(L), fused=True, foreach=True),
    lambda L: L.optim.Adam(_p(L), fused=True, differentiable=True),
    lambda L: L.optim.LBFGS(_p(L), lr=-1),
    lambda L: L.optim.LBFGS([{"params": _p(L)}, {"params": _p(L)}]),
    lambda L: L.optim.RMSprop([L.ones(2, requires_grad=True) * 2]),
    lambda L: L.optim.Rprop([{"params": _p(L)}, {"params": _p(L)}], lr=0.1).add_param_group({"params": 1.0}),
])
def test_constructor_errors_match_torch(make):
    same_error(make)


def _one_step(L, make):
    ps = _p(L)
    opt = make(L, ps)
    ps[0].grad = L.ones(2)
    opt.step()


@pytest.mark.parametrize("make", [
    lambda L, p: L.optim.Adadelta(p, capturable=True), lambda L, p: L.optim.Adamax(p, capturable=True),
    lambda L, p: L.optim.ASGD(p, capturable=True), lambda L, p: L.optim.NAdam(p, capturable=True),
    lambda L, p: L.optim.RAdam(p, capturable=True), lambda L, p: L.optim.RMSprop(p, capturable=True),
    lambda L, p: L.optim.Rprop(p, capturable=True),
    lambda L, p: L.optim.Adadelta(p, differentiable=True), lambda L, p: L.optim.NAdam(p, differentiable=True),
    lambda L, p: L.optim.RMSprop(p, differentiable=True), lambda L, p: L.optim.Rprop(p, differentiable=True),
    lambda L, p: L.optim.SparseAdam(p),
    lambda L, p: L.optim.Adam(p, capturable=True), lambda L, p: L.optim.AdamW(p, capturable=True),
    lambda L, p: L.optim.SGD(p, differentiable=True), lambda L, p: L.optim.Adam(p, differentiable=True),
])
def test_step_errors_match_torch(make):
    """capturable=True needs an accelerator; differentiable=True on leaf parameters is an in-place error on a
    leaf; SparseAdam refuses dense gradients: torch's errors, on CPU."""
    same_error(lambda L: _one_step(L, make))


def test_differentiable_on_non_leaf_is_a_clear_not_implemented():
    w = tg.nn.Parameter(tg.ones(2))
    x = w * 2
    x.retain_grad()
    opt = tg.optim.Adamax([x], differentiable=True)
    x.grad = tg.ones(2)
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        opt.step()


def test_sparse_gradients_are_refused_by_the_dense_optimizers():
    class Sparse:
        is_sparse = True
    for name in ["Adadelta", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "ASGD"]:
        p = tg.nn.Parameter(tg.ones(2))
        opt = getattr(tg.optim, name)([p])
        p._grad = Sparse()
        with pytest.raises(RuntimeError, match=f"{name} does not support sparse gradients"):
            opt.step()


class _CooGrad:
    """The part of a sparse COO gradient SparseAdam reads (coalesce, _indices, _values), for the test only."""

    is_sparse = True

    def __init__(self, indices, values):
        self.indices, self.values = indices, values

    def coalesce(self):
        return self

    def _indices(self):
        return tg.tensor(self.indices)

    def _values(self):
        return tg.tensor(self.values)


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("maximize", [False, True])
def test_sparse_adam_matches_torch_on_embedding_style_gradients(dtype, maximize):
    rng = np.random.default_rng(3)
    init = rng.standard_normal((6, 3)).astype(dtype)
    pa, pb = tg.nn.Parameter(tg.tensor(init)), torch.nn.Parameter(torch.tensor(init))
    oa = tg.optim.SparseAdam([pa], lr=0.05, maximize=maximize)
    ob = torch.optim.SparseAdam([pb], lr=0.05, maximize=maximize)
    for step in range(8):
        rows = np.unique(rng.integers(0, 6, 3))          # coalesced: unique sorted rows
        values = rng.standard_normal((len(rows), 3)).astype(dtype)
        pa._grad = _CooGrad(rows[None, :], values)
        pb.grad = torch.sparse_coo_tensor(torch.tensor(rows[None, :]), torch.tensor(values), (6, 3))
        oa.step()
        ob.step()
    _assert_close(pa, pb, dtype)
    sa, sb = oa.state_dict(), ob.state_dict()
    assert sa["state"][0]["step"] == sb["state"][0]["step"] == 8
    _assert_close(sa["state"][0]["exp_avg_sq"], sb["state"][0]["exp_avg_sq"], dtype)
    assert sa["param_groups"] == sb["param_groups"]


# -- whole training runs through autograd ---------------------------------------------------------------

def _mlp(lib, dtype):
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    model = ref if lib is torch else tg.nn.Sequential(tg.nn.Linear(6, 8), tg.nn.Tanh(), tg.nn.Linear(8, 3))
    if lib is tg:
        model.load_state_dict({k: tg.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    return model.double() if dtype == "float64" else model


@pytest.mark.parametrize("name", ["adadelta-options", "adagrad", "adamax", "asgd", "nadam", "radam-rectified",
                                  "rmsprop-centered", "rprop"])
def test_training_losses_match_torch(name):
    def run(lib):
        model = _mlp(lib, "float64")
        opt = OPTIMIZERS[name](lib, list(model.parameters()))
        rng = np.random.default_rng(42)
        x = lib.tensor(rng.standard_normal((16, 6)))
        y = lib.tensor(rng.integers(0, 3, 16))
        losses = []
        for _ in range(10):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return np.array(losses)
    a, b = run(tg), run(torch)
    np.testing.assert_allclose(a, b, rtol=1e-10)
    assert abs(a[-1] - a[0]) > 1e-3


def test_optimizer_names_are_exported_like_torch():
    missing = {"swa_utils", "swap_in_optimizer_params_and_state"}
    for name in torch.optim.__all__:
        if name not in missing:
            assert hasattr(tg.optim, name), name


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adagrad_sparse_gradients_match_torch(dtype):
    rng = np.random.default_rng(4)
    init = rng.standard_normal((6, 3)).astype(dtype)
    pa, pb = tg.nn.Parameter(tg.tensor(init)), torch.nn.Parameter(torch.tensor(init))
    oa = tg.optim.Adagrad([pa], lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, maximize=True)
    ob = torch.optim.Adagrad([pb], lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, maximize=True)
    for step in range(8):
        rows = np.unique(rng.integers(0, 6, 3))
        values = rng.standard_normal((len(rows), 3)).astype(dtype)
        pa._grad = _CooGrad(rows[None, :], values)
        pb.grad = torch.sparse_coo_tensor(torch.tensor(rows[None, :]), torch.tensor(values), (6, 3))
        oa.step()
        ob.step()
    _assert_close(pa, pb, dtype)
    _assert_close(oa.state_dict()["state"][0]["sum"], ob.state_dict()["state"][0]["sum"], dtype)

    def with_weight_decay(L):
        p = L.nn.Parameter(L.ones(2, 2))
        if L is torch:
            p.grad = L.ones(2, 2).to_sparse()
        else:
            p._grad = _CooGrad(np.array([[0, 1], [0, 1]]), np.ones(2, np.float32))
        L.optim.Adagrad([p], weight_decay=0.1).step()
    same_error(with_weight_decay)


@pytest.mark.parametrize("name", ["adagrad-options", "rprop", "nadam", "asgd", "adafactor", "rmsprop-centered"])
def test_add_param_group_after_steps_matches_torch(name):
    """A group added after some steps gets its state at its first step, with the optimizer's defaults."""
    runs = {}
    for L in LIBS:
        ps = _params(L, "float64")
        opt = OPTIMIZERS[name](L, ps[:2])
        _steps(L, opt, ps[:2], 3)
        opt.add_param_group({"params": ps[2:], "lr": 0.02})
        _steps(L, opt, ps, 4, seed=3)
        runs[L] = ps, opt.state_dict()
    for a, b in zip(runs[tg][0], runs[torch][0]):
        _assert_close(a, b, "float64")
    _assert_states_close(runs[tg][1], runs[torch][1], "float64")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_adafactor_on_reduced_precision_parameters_as_torch(dtype):
    """Adafactor's eps1 default is the parameter dtype's machine epsilon: bfloat16's too (it raised: NumPy's finfo has
    no bfloat16)."""
    seen = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        p = lib.nn.Parameter(lib.randn(4, 3).to(getattr(lib, dtype)))
        opt = lib.optim.Adafactor([p], lr=0.01)
        for _ in range(3):
            opt.zero_grad()
            (p.float() ** 2).sum().backward()
            opt.step()
        seen.append((np.array(p.float().tolist()), str(opt.state[p]["row_var"].dtype)))
    assert seen[1][1] == seen[0][1]
    # (within two of the dtype's ulps: torch's reduced-precision kernels round some steps in another order)
    np.testing.assert_allclose(seen[1][0], seen[0][0], rtol=2 * 2.0 ** (-7 if dtype == "bfloat16" else -10))


def test_optimizer_state_dict_hooks_as_torchs():
    """register_state_dict_pre/post_hook and register_load_state_dict_pre/post_hook: their order (prepend), what
    they see, a returned state_dict used instead, handles that remove them."""
    def program(lib):
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.Adam([p], lr=0.1)
        p.grad = lib.ones(2)
        opt.step()
        log = []
        h = opt.register_state_dict_pre_hook(lambda o: log.append("pre"))
        opt.register_state_dict_post_hook(lambda o, sd: log.append(("post", sorted(sd))) or {**sd, "extra": 1})
        opt.register_state_dict_post_hook(lambda o, sd: log.append(("first", sorted(sd))), prepend=True)
        sd = opt.state_dict()
        opt.register_load_state_dict_pre_hook(
            lambda o, sd: log.append(("load_pre", sorted(sd))) or {k: v for k, v in sd.items() if k != "extra"})
        opt.register_load_state_dict_post_hook(lambda o: log.append(("load_post", o.state[p]["step"].item())))
        opt.load_state_dict(sd)
        h.remove()
        opt.state_dict()
        return sorted(sd), log
    assert program(tg) == program(torch)
