"""foreach / fused optimizer updates (one compiled pass per parameter group, kernels/optim.py) against torch's
single-tensor updates (foreach=False), float32 and float64; the NumPy loop (foreach=False) against the compiled
pass; the cases the compiled pass hands back to the loop; torch's constructor errors, checked once each."""
import numpy as np
import pytest
import torch

import tapegrad as tg
from tapegrad.optim import optimizer as optimizer_mod
from tapegrad.tensor import _new as tg_new
# (this directory is on sys.path)
from test_more_optimizers import _assert_close, _assert_states_close, _params, _set_grads, _steps, _to_lib, same_error

CONFIGS = {
    "sgd": ("SGD", {"lr": 0.05}),
    "sgd-momentum": ("SGD", {"lr": 0.05, "momentum": 0.9}),
    "sgd-nesterov-wd": ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    "sgd-dampening-maximize": ("SGD", {"lr": 0.05, "momentum": 0.5, "dampening": 0.3, "weight_decay": 0.1,
                                       "maximize": True}),
    "adam": ("Adam", {"lr": 0.05}),
    "adam-amsgrad-maximize-wd": ("Adam", {"lr": 0.05, "betas": (0.3, 0.6), "amsgrad": True, "maximize": True,
                                          "weight_decay": 0.1}),
    "adam-decoupled": ("Adam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    "adamw": ("AdamW", {"lr": 0.05}),
    "adamw-amsgrad-maximize": ("AdamW", {"lr": 0.05, "amsgrad": True, "maximize": True, "weight_decay": 0.3}),
    "rmsprop": ("RMSprop", {"lr": 0.01}),
    "rmsprop-momentum-wd": ("RMSprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.9, "weight_decay": 0.1}),
    "rmsprop-centered-maximize": ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "maximize": True}),
    "rmsprop-centered": ("RMSprop", {"lr": 0.01, "centered": True}),
    "adagrad": ("Adagrad", {"lr": 0.1}),
    "adagrad-options": ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.2,
                                    "eps": 1e-6, "maximize": True}),
    "adamax": ("Adamax", {"lr": 0.05}),
    "adamax-options": ("Adamax", {"lr": 0.05, "betas": (0.3, 0.6), "eps": 1e-3, "weight_decay": 0.1,
                                  "maximize": True}),
    "nadam": ("NAdam", {"lr": 0.05}),
    "nadam-options": ("NAdam", {"lr": 0.05, "betas": (0.7, 0.9), "weight_decay": 0.1, "momentum_decay": 0.05,
                                "maximize": True}),
    "nadam-decoupled": ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    # RAdam's rectified step from step 6 on at beta2=0.999 (rho_t > 5); never at beta2=0.6 (rho_inf = 4)
    "radam": ("RAdam", {"lr": 0.05}),
    "radam-options": ("RAdam", {"lr": 0.05, "betas": (0.5, 0.6), "weight_decay": 0.1, "maximize": True}),
    "radam-decoupled": ("RAdam", {"lr": 0.05, "eps": 1e-4, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    "adadelta": ("Adadelta", {"lr": 1.0}),
    "adadelta-options": ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.1, "maximize": True}),
    "rprop": ("Rprop", {"lr": 0.01}),
    "rprop-options": ("Rprop", {"lr": 0.01, "etas": (0.4, 1.3), "step_sizes": (1e-4, 0.02), "maximize": True}),
    # t0=3: ax averages from step 4 on (mu < 1); the default t0 keeps ax a copy of the parameter
    "asgd": ("ASGD", {"lr": 0.05}),
    "asgd-options": ("ASGD", {"lr": 0.05, "lambd": 1e-2, "alpha": 0.6, "t0": 3, "weight_decay": 0.1,
                              "maximize": True}),
}
# steps as large as the parameters, averaged from the first: (p - ax) * mu is not small beside ax, so its own
# rounding to the parameter's dtype (NumPy's diff *= mu, mu float64 under a float64 default) shows in ax. Checked
# against the loop only: steps this large make the path chaotic, and torch's float32 roundings drift by 1e-4.
BIG_STEPS = {"asgd-averaged": ("ASGD", {"lr": 1.0, "t0": 0})}
FUSED = {"SGD", "Adam", "AdamW", "Adagrad"}  # torch takes fused=True on CPU for these
NEW = ["adagrad-options", "adamax-options", "nadam-options", "nadam-decoupled", "radam", "radam-decoupled",
       "adadelta-options", "rprop-options", "asgd-options"]  # one of each optimizer the issue-20 kernels cover


def _make(lib, name, params, **mode):
    cls, kw = CONFIGS[name] if name in CONFIGS else BIG_STEPS[name]
    return getattr(lib.optim, cls)(params, **kw, **mode)


def _modes(name):
    modes = [{"foreach": True}, {}]
    if CONFIGS[name][0] in FUSED:
        modes.append({"fused": True})
    return modes


@pytest.fixture
def kernel_calls(monkeypatch):
    """Counts the compiled passes: a test that means to exercise them checks that they ran."""
    calls = []
    real = optimizer_mod._optim_kernels

    class Counting:
        def __getattr__(self, name):
            fn = getattr(real(), name)
            return lambda *a: (calls.append(name), fn(*a))[1]

    monkeypatch.setattr(optimizer_mod, "_optim_kernels", lambda: Counting())  # _compiled_update's
    monkeypatch.setattr("tapegrad.optim.sgd._optim_kernels", lambda: Counting())  # SGD's own table (fresh buffers)
    return calls


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_pass_matches_torch_single_tensor(name, dtype, kernel_calls):
    for mode in _modes(name):
        kernel_calls.clear()
        pa, pb = _params(tg, dtype), _params(torch, dtype)
        oa, ob = _make(tg, name, pa, **mode), _make(torch, name, pb, foreach=False)
        _steps(tg, oa, pa, 10)
        _steps(torch, ob, pb, 10)
        assert len(kernel_calls) == 10, (mode, kernel_calls)
        start = _params(torch, dtype)
        assert max(float((b.detach() - s.detach()).abs().max()) for b, s in zip(pb, start)) > 1e-3
        for a, b in zip(pa, pb):
            assert a.dtype == getattr(tg, dtype)
            _assert_close(a, b, dtype, f"{name} {mode}")
        _assert_same_state(oa, ob, dtype)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_zero_dim_parameters(name, kernel_calls):
    """0-d parameters (a curve fit's): the compiled pass, the loop (whose arithmetic on a 0-d array gives NumPy
    scalars, not arrays) and torch agree."""
    def params(lib):
        rng = np.random.default_rng(2)
        return [lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(np.float32))) for s in ((), (), (3,))]
    pa, pb, pc = params(tg), params(tg), params(torch)
    _steps(tg, _make(tg, name, pa, foreach=True), pa, 8)
    assert len(kernel_calls) == 8
    _steps(tg, _make(tg, name, pb, foreach=False), pb, 8)
    _steps(torch, _make(torch, name, pc, foreach=False), pc, 8)
    for a, b, c in zip(pa, pb, pc):
        assert a.shape == c.shape
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=name)
        _assert_close(a, c, "float32", name)

def _assert_same_state(oa, ob, dtype):
    """The same state keys and values (the groups differ in foreach / fused only)."""
    sa, sb = oa.state_dict(), ob.state_dict()
    _assert_states_close({"state": sa["state"], "param_groups": []}, {"state": sb["state"], "param_groups": []}, dtype)
    strip = ("foreach", "fused")
    assert [{k: v for k, v in g.items() if k not in strip} for g in sa["param_groups"]] == \
        [{k: v for k, v in g.items() if k not in strip} for g in sb["param_groups"]]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_compiled_pass_equals_the_numpy_loop_bit_for_bit(name):
    """Both round to the parameter's dtype after each of torch's operations, in the same order."""
    for dtype in ("float32", "float64"):
        pa, pb = _params(tg, dtype), _params(tg, dtype)
        _steps(tg, _make(tg, name, pa, foreach=True), pa, 8)
        _steps(tg, _make(tg, name, pb, foreach=False), pb, 8)
        for a, b in zip(pa, pb):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=name)


@pytest.mark.parametrize("name", [*NEW, *BIG_STEPS])
def test_float32_parameters_with_float64_scalar_state_equal_the_loop_bit_for_bit(name, kernel_calls):
    """Under a float64 default dtype the step, mu_product, eta and mu are float64 (torch's _get_scalar_dtype) while
    the parameters stay float32: the kernels mix the two as the loop's NumPy calls do."""
    old = tg.get_default_dtype()
    tg.set_default_dtype(tg.float64)
    try:
        pa, pb = _params(tg, "float32"), _params(tg, "float32")
        oa, ob = _make(tg, name, pa, foreach=True), _make(tg, name, pb, foreach=False)
        _steps(tg, oa, pa, 8)
        _steps(tg, ob, pb, 8)
    finally:
        tg.set_default_dtype(old)
    assert len(kernel_calls) == 8
    assert oa.state[pa[0]]["step"].dtype == tg.float64 and pa[0].dtype == tg.float32
    for a, b in zip(pa, pb):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=name)
    for a, b in zip(pa, pb):
        for key, value in oa.state[a].items():
            np.testing.assert_array_equal(value.numpy(), ob.state[b][key].numpy(), err_msg=f"{name} {key}")

@pytest.mark.parametrize("name", ["sgd-nesterov-wd", "adam-amsgrad-maximize-wd", "adamw", "rmsprop-centered", *NEW])
@pytest.mark.parametrize("direction", ["torch-to-tapegrad", "tapegrad-to-torch"])
def test_state_dicts_of_compiled_steps_cross_to_torch(name, direction):
    source, target = (torch, tg) if direction == "torch-to-tapegrad" else (tg, torch)
    ps, pt = _params(source, "float32"), _params(target, "float32")
    os_ = _make(source, name, ps, foreach=source is tg or None)
    _steps(source, os_, ps, 5)
    for a, b in zip(pt, ps):
        a.data = target.tensor(b.detach().numpy().copy())
    ot = _make(target, name, pt, foreach=target is tg or None)
    ot.load_state_dict(_to_lib(target, os_.state_dict()))
    _steps(source, os_, ps, 6, seed=7)
    _steps(target, ot, pt, 6, seed=7)
    for a, b in zip(ps, pt):
        _assert_close(b, a, "float32", name)
    _assert_same_state(*((ot, os_) if target is tg else (os_, ot)), "float32")


def test_a_group_the_kernels_do_not_take_runs_the_loop_and_still_matches_torch(kernel_calls):
    """float32 and float64 parameters in one group: the NumPy loop, torch's results."""
    def params(lib):
        rng = np.random.default_rng(3)
        return [lib.nn.Parameter(lib.tensor(rng.standard_normal((4, 3)).astype(np.float32))),
                lib.nn.Parameter(lib.tensor(rng.standard_normal(5)))]
    for name in ("sgd-nesterov-wd", "adam", "rmsprop-centered", *NEW):
        kernel_calls.clear()
        pa, pb = params(tg), params(torch)
        oa, ob = _make(tg, name, pa, foreach=True), _make(torch, name, pb, foreach=False)
        for lib, opt, ps in ((tg, oa, pa), (torch, ob, pb)):
            rng = np.random.default_rng(1)
            for _ in range(4):  # every parameter has a gradient (one dtype alone would be compiled)
                _set_grads(lib, ps, rng)
                opt.step()
        assert kernel_calls == []
        _assert_close(pa[0], pb[0], "float32", name)
        _assert_close(pa[1], pb[1], "float64", name)



# per optimizer: a state array the kernels read, and (where it keeps more than the step) another 0-d state
_STATE_KEYS = {"Adagrad": ("sum", None), "Adamax": ("exp_avg", None), "NAdam": ("exp_avg_sq", "mu_product"),
               "RAdam": ("exp_avg", None), "Adadelta": ("acc_delta", None), "Rprop": ("step_size", None),
               "ASGD": ("ax", "eta")}


@pytest.mark.parametrize("change", ["fortran-order", "float64-state", "other-0d-dtype"])
@pytest.mark.parametrize("name", NEW)
def test_state_the_kernels_do_not_take_runs_the_loop_bit_for_bit(name, change, kernel_calls):
    """A state tensor the kernels cannot read as they read the parameter (another layout or dtype, as a loaded or
    hand-set one may have; a 0-d state of another dtype than the step's): the NumPy loop runs that group, with the
    loop's own results, and the compiled pass takes over again once the state fits."""
    array_key, scalar_key = _STATE_KEYS[CONFIGS[name][0]]
    if change == "other-0d-dtype" and scalar_key is None:
        array_key, scalar_key = None, "step"  # the step itself, against the group's first step
    pa, pb = _params(tg, "float32"), _params(tg, "float32")
    oa, ob = _make(tg, name, pa, foreach=True), _make(tg, name, pb, foreach=False)
    _steps(tg, oa, pa, 3)
    _steps(tg, ob, pb, 3)
    assert len(kernel_calls) == 3
    p = pa[0]  # a (4, 3) parameter: a Fortran-order copy is not C-contiguous
    if change == "fortran-order":
        oa.state[p][array_key] = tg_new(np.asfortranarray(oa.state[p][array_key]._data))
    elif change == "float64-state":
        oa.state[p][array_key] = tg_new(oa.state[p][array_key]._data.astype(np.float64))
        ob.state[pb[0]][array_key] = tg_new(ob.state[pb[0]][array_key]._data.astype(np.float64))
    else:
        index = 1 if scalar_key == "step" else 0  # the first parameter's step sets the group's dtype
        for opt, ps in ((oa, pa), (ob, pb)):
            state = opt.state[ps[index]]
            state[scalar_key] = tg_new(state[scalar_key]._data.astype(np.float64))
    _steps(tg, oa, pa, 2, seed=5, skip_every=100)
    _steps(tg, ob, pb, 2, seed=5, skip_every=100)
    assert len(kernel_calls) == 3
    for a, b in zip(pa, pb):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=f"{name} {change}")
    if change == "fortran-order":
        oa.state[p][array_key] = tg_new(np.ascontiguousarray(oa.state[p][array_key]._data))
        _steps(tg, oa, pa, 1, seed=6)
        assert len(kernel_calls) == 4


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
def test_fused_adagrad_refuses_sparse_gradients_as_torch():
    messages = []
    for lib in (torch, tg):
        p = lib.nn.Parameter(lib.ones(6, 3))
        p.grad = lib.sparse_coo_tensor(lib.tensor([[0, 2], [1, 1]]), lib.tensor([1.0, 2.0]), (6, 3)) \
            if lib is torch else None
        if lib is tg:
            p._grad = tg.sparse_coo_tensor(tg.tensor([[0, 2], [1, 1]]), tg.tensor([1.0, 2.0]), (6, 3))
        with pytest.raises(RuntimeError) as err:
            lib.optim.Adagrad([p], lr=0.1, fused=True).step()
        messages.append(str(err.value))
    assert messages[0] == messages[1] == "`fused` does not support sparse grad or complex param"


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("mode", [{"foreach": True}, {}])
def test_adagrad_sparse_gradients_run_the_loop(mode, kernel_calls):
    """A sparse gradient (tapegrad's COO tensor, whose dense _data refuses to be read) takes the loop's sparse
    update, as torch's single-tensor loop does; a dense one the compiled pass again."""
    rng = np.random.default_rng(4)
    init = rng.standard_normal((6, 3)).astype(np.float32)
    pa, pb = tg.nn.Parameter(tg.tensor(init)), torch.nn.Parameter(torch.tensor(init))
    oa = tg.optim.Adagrad([pa], lr=0.1, lr_decay=0.01, **mode)
    ob = torch.optim.Adagrad([pb], lr=0.1, lr_decay=0.01, foreach=False)
    for _ in range(4):
        cells = np.unique(rng.integers(0, 18, 5))
        index = np.stack([cells // 3, cells % 3])
        values = rng.standard_normal(len(cells)).astype(np.float32)
        pa._grad = tg.sparse_coo_tensor(tg.tensor(index), tg.tensor(values), (6, 3))  # (.grad = refuses sparse)
        pb.grad = torch.sparse_coo_tensor(torch.tensor(index), torch.tensor(values), (6, 3))
        oa.step()
        ob.step()
    assert kernel_calls == []
    _assert_close(pa, pb, "float32")
    pa.grad, pb.grad = tg.ones(6, 3), torch.ones(6, 3)  # a dense gradient: compiled again
    oa.step()
    ob.step()
    assert kernel_calls == ["adagrad"]
    _assert_close(pa, pb, "float32")

@pytest.mark.parametrize("foreach", [True, False])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_step_bumps_each_updated_parameters_version_as_torch_does(name, foreach):
    """Once per in-place operation torch's single-tensor update applies to the parameter (NAdam's two addcdiv_,
    ASGD's mul_ and add_, a decoupled weight decay's mul_), in the compiled pass and the loop alike."""
    pa, pb = _params(tg, "float32"), _params(torch, "float32")
    oa, ob = _make(tg, name, pa, foreach=foreach), _make(torch, name, pb, foreach=False)
    before = [p._version for p in pa], [p._version for p in pb]
    _steps(tg, oa, pa, 3)
    _steps(torch, ob, pb, 3)
    assert [p._version - v for p, v in zip(pa, before[0])] == [p._version - v for p, v in zip(pb, before[1])]


def test_default_is_the_compiled_pass(kernel_calls):
    pa = _params(tg, "float32")
    opt = tg.optim.Adam(pa)
    assert opt.defaults["foreach"] is None and optimizer_mod.COMPILED_WHEN_UNSET
    _steps(tg, opt, pa, 2)
    assert kernel_calls == ["adam", "adam"]
    _steps(tg, tg.optim.Adam(pa, foreach=False), pa, 2)
    assert kernel_calls == ["adam", "adam"]


BAD = [
    lambda L, p: L.optim.SGD(p, lr=-0.1), lambda L, p: L.optim.SGD(p, momentum=-1),
    lambda L, p: L.optim.SGD(p, weight_decay=-1), lambda L, p: L.optim.SGD(p, lr=L.tensor([0.1, 0.2])),
    lambda L, p: L.optim.Adam(p, lr=-1), lambda L, p: L.optim.Adam(p, eps=-1e-8),
    lambda L, p: L.optim.Adam(p, betas=(1.0, 0.9)), lambda L, p: L.optim.Adam(p, betas=(0.9, -0.1)),
    lambda L, p: L.optim.Adam(p, betas=(0.9,)), lambda L, p: L.optim.Adam(p, weight_decay=-1),
    lambda L, p: L.optim.AdamW(p, lr=float("nan")), lambda L, p: L.optim.AdamW(p, betas=(0.9, 1.0)),
    lambda L, p: L.optim.RMSprop(p, alpha=-0.5), lambda L, p: L.optim.RMSprop(p, momentum=-1),
    lambda L, p: L.optim.RMSprop(p, eps=-1), lambda L, p: L.optim.Adadelta(p, rho=1.5),
    lambda L, p: L.optim.Adadelta(p, rho=-0.5), lambda L, p: L.optim.Adagrad(p, lr_decay=-1),
    lambda L, p: L.optim.Adagrad(p, initial_accumulator_value=-1), lambda L, p: L.optim.NAdam(p, momentum_decay=-1),
    lambda L, p: L.optim.RAdam(p, betas=(0.9, 2)), lambda L, p: L.optim.Adamax(p, eps=-1),
    lambda L, p: L.optim.ASGD(p, weight_decay=-1), lambda L, p: L.optim.LBFGS(p, lr=-1),
    lambda L, p: L.optim.Rprop(p, lr=-1), lambda L, p: L.optim.SparseAdam(p, betas=(0.9, 1.5)),
    lambda L, p: L.optim.Adafactor(p, lr=L.tensor([1.0, 2.0])),
]


@pytest.mark.parametrize("make", BAD)
def test_bad_hyper_parameters_raise_torchs_errors(make):
    same_error(lambda L: make(L, [L.nn.Parameter(L.ones(2))]))


def test_sgd_takes_a_nan_learning_rate_as_torch_does():
    """torch's SGD checks `lr < 0.0` where the others check `not 0.0 <= lr`."""
    a = tg.optim.SGD([tg.nn.Parameter(tg.ones(2))], lr=float("nan"), momentum=float("nan"))
    b = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=float("nan"), momentum=float("nan"))
    assert repr(a) == repr(b)


@pytest.mark.parametrize("cls", ["Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "ASGD", "NAdam",
                                 "RAdam", "RMSprop", "Rprop", "SGD"])
def test_state_pickled_without_newer_options_gets_torchs_defaults(cls):
    """__setstate__ of an optimizer pickled by an older torch: the options it lacks take torch's defaults."""
    def restored(lib):
        opt = getattr(lib.optim, cls)([lib.nn.Parameter(lib.ones(2))], lr=0.1)
        state = opt.__getstate__()
        old_keys = {"params", "lr", "betas", "eps", "weight_decay", "momentum", "dampening", "alpha", "rho",
                    "lr_decay", "initial_accumulator_value", "lambd", "t0", "etas", "step_sizes", "beta2_decay", "d",
                    "momentum_decay"}
        state["param_groups"] = [{k: v for k, v in g.items() if k in old_keys} for g in state["param_groups"]]
        fresh = getattr(lib.optim, cls).__new__(getattr(lib.optim, cls))
        fresh.__setstate__(state)
        return {k: v for k, v in fresh.param_groups[0].items() if k != "params"}
    assert restored(tg) == restored(torch)
