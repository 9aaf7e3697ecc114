"""foreach / fused optimizer updates (one compiled pass per parameter group, kernels/optim.py) against torch's
single-tensor updates (foreach=False), float32 and float64; the NumPy loop (foreach=False) against the compiled
pass; the cases the compiled pass hands back to the loop; torch's constructor errors, checked once each."""
import numpy as np
import pytest
import torch

import tapegrad as tg
from tapegrad.optim import optimizer as optimizer_mod
# (this directory is on sys.path)
from test_more_optimizers import (_assert_close, _assert_states_close, _params, _set_grads, _steps, _to_lib,
                                  same_error)

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
}
FUSED = {"SGD", "Adam", "AdamW"}  # torch takes fused=True on CPU for these


def _make(lib, name, params, **mode):
    cls, kw = CONFIGS[name]
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

    monkeypatch.setattr(optimizer_mod, "_optim_kernels", lambda: Counting())
    for module in ("sgd", "adam", "rmsprop"):
        monkeypatch.setattr(f"tapegrad.optim.{module}._optim_kernels", lambda: Counting())
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


@pytest.mark.parametrize("name", ["sgd-nesterov-wd", "adam-amsgrad-maximize-wd", "adamw", "rmsprop-centered"])
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
    for name in ("sgd-nesterov-wd", "adam", "rmsprop-centered"):
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


def test_a_step_bumps_each_updated_parameters_version_once():
    for name in ("sgd-momentum", "adam", "rmsprop"):
        pa, pb = _params(tg, "float32"), _params(torch, "float32")
        oa, ob = _make(tg, name, pa, foreach=True), _make(torch, name, pb, foreach=False)
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
