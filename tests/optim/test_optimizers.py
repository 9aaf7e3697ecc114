"""Optimizers and learning-rate schedulers against torch: the same script, the same losses step by step."""
import copy
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = [tg, torch]


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


def _model(lib, dtype):
    """A 6-4-8-3 MLP built from the same initial weights in both libraries."""
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    if lib is torch:
        model = ref
    else:
        model = tg.nn.Sequential(tg.nn.Linear(6, 8), tg.nn.Tanh(), tg.nn.Linear(8, 3))
        model.load_state_dict({k: tg.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    return model.double() if dtype == "float64" else model


def _data(lib, dtype):
    rng = np.random.default_rng(42)
    x = rng.standard_normal((5, 16, 6)).astype(dtype)      # 5 batches
    y = rng.integers(0, 3, (5, 16))
    return [(lib.tensor(x[i]), lib.tensor(y[i])) for i in range(5)]


def _train(lib, dtype, make_opt, make_sched=None, epochs=4, closure=False):
    model = _model(lib, dtype)
    opt = make_opt(lib, model)
    sched = make_sched(lib, opt) if make_sched else None
    loss_fn = lib.nn.CrossEntropyLoss()
    losses, lrs = [], []
    for _ in range(epochs):
        for x, y in _data(lib, dtype):
            if closure:
                def step_closure():
                    opt.zero_grad()
                    loss = loss_fn(model(x), y)
                    loss.backward()
                    return loss
                losses.append(opt.step(step_closure).item())
            else:
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                losses.append(loss.item())
        if sched is not None:
            sched.step()
            lrs.append(sched.get_last_lr())
    params = [p.detach().numpy().copy() for p in model.parameters()]
    return np.array(losses), lrs, params, opt


OPTIMIZERS = {
    "sgd": lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1),
    "sgd-momentum": lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9),
    "sgd-nesterov-wd": lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                                                    weight_decay=1e-2),
    "sgd-dampening-maximize": lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.01, momentum=0.5, dampening=0.3,
                                                           maximize=True),
    "adam": lambda lib, m: lib.optim.Adam(m.parameters(), lr=1e-2),
    "adam-amsgrad-wd": lambda lib, m: lib.optim.Adam(m.parameters(), lr=1e-2, amsgrad=True, weight_decay=0.05),
    "adam-small-beta1": lambda lib, m: lib.optim.Adam(m.parameters(), lr=1e-2, betas=(0.3, 0.9), eps=1e-6),
    "adam-maximize": lambda lib, m: lib.optim.Adam(m.parameters(), lr=1e-3, maximize=True),
    "adamw": lambda lib, m: lib.optim.AdamW(m.parameters(), lr=1e-2),
    "adamw-amsgrad": lambda lib, m: lib.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1, amsgrad=True),
    "param-groups": lambda lib, m: lib.optim.SGD([{"params": m[0].parameters(), "lr": 0.2},
                                                  {"params": m[2].parameters(), "momentum": 0.5}], lr=0.05),
}
SCHEDULERS = {
    "step": lambda lib, opt: lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5),
    "cosine": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3, eta_min=1e-3),
    "multistep": lambda lib, opt: lib.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.3),
    "exponential": lambda lib, opt: lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.8),
    "lambda": lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1 / (1 + epoch)),
    "linear": lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_optimizer_losses_match_torch_step_by_step(name, dtype):
    ours, _, params_a, _ = _train(tg, dtype, OPTIMIZERS[name])
    theirs, _, params_b, _ = _train(torch, dtype, OPTIMIZERS[name])
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ours, theirs, rtol=rtol)
    for a, b in zip(params_a, params_b):
        np.testing.assert_allclose(a, b, rtol=10 * rtol, atol=10 * rtol)
    assert abs(ours[-1] - ours[0]) > 1e-3       # it trained: the comparison is not between two constants


@pytest.mark.parametrize("sched", list(SCHEDULERS))
@pytest.mark.parametrize("opt", ["sgd-nesterov-wd", "adam", "adamw"])
def test_schedulers_match_torch(sched, opt):
    ours, lrs_a, _, _ = _train(tg, "float32", OPTIMIZERS[opt], SCHEDULERS[sched], epochs=6)
    theirs, lrs_b, _, _ = _train(torch, "float32", OPTIMIZERS[opt], SCHEDULERS[sched], epochs=6)
    np.testing.assert_allclose(np.array(lrs_a), np.array(lrs_b), rtol=1e-15)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_long_cosine_schedule_and_warm_restart_branch():
    def lrs(lib):
        p = lib.nn.Parameter(lib.ones(1))
        opt = lib.optim.SGD([p], lr=0.3)
        sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.01)
        out = []
        for _ in range(13):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr()[0])
        return out
    np.testing.assert_allclose(lrs(tg), lrs(torch), rtol=1e-14)


def test_closure_steps_match_torch():
    ours, _, _, _ = _train(tg, "float32", OPTIMIZERS["adam"], closure=True)
    theirs, _, _, _ = _train(torch, "float32", OPTIMIZERS["adam"], closure=True)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_state_dict_layout_and_load_matches_torch():
    _, _, _, opt_a = _train(tg, "float32", OPTIMIZERS["adam-amsgrad-wd"], epochs=1)
    _, _, _, opt_b = _train(torch, "float32", OPTIMIZERS["adam-amsgrad-wd"], epochs=1)
    sa, sb = opt_a.state_dict(), opt_b.state_dict()
    assert sa["param_groups"] == sb["param_groups"]
    assert list(sa["state"]) == list(sb["state"])
    for k in sa["state"]:
        assert list(sa["state"][k]) == list(sb["state"][k])
        assert sa["state"][k]["step"].item() == sb["state"][k]["step"].item() == 5
        for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            np.testing.assert_allclose(sa["state"][k][key].numpy(), sb["state"][k][key].numpy(), rtol=1e-4,
                                       atol=1e-8)
    # a fresh optimizer that loads the state continues exactly like the original
    model = _model(tg, "float32")
    opt = tg.optim.Adam(model.parameters(), lr=0.5)
    opt.load_state_dict(sa)
    assert opt.param_groups[0]["lr"] == 1e-2 and opt.param_groups[0]["amsgrad"]
    assert opt.state[next(iter(model.parameters()))]["exp_avg"] is not sa["state"][0]["exp_avg"]
    same_error(lambda lib: lib.optim.SGD(_model(lib, "float32").parameters()).load_state_dict(
        {"state": {}, "param_groups": []}))
    same_error(lambda lib: lib.optim.SGD(_model(lib, "float32").parameters()).load_state_dict(
        {"state": {}, "param_groups": [{"params": [0]}]}))


def test_sgd_momentum_buffers_live_in_state():
    _, _, _, opt = _train(tg, "float32", OPTIMIZERS["sgd-momentum"], epochs=1)
    state = opt.state_dict()["state"]
    assert sorted(state) == [0, 1, 2, 3] and list(state[0]) == ["momentum_buffer"]
    _, _, _, plain = _train(tg, "float32", OPTIMIZERS["sgd"], epochs=1)
    assert plain.state_dict()["state"] == {}


def test_zero_grad_default_sets_none():
    for lib in LIBS:
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        (p * 2).sum().backward()
        opt.zero_grad(set_to_none=False)
        assert p.grad is not None and p.grad.tolist() == [0.0, 0.0]
        opt.zero_grad()
        assert p.grad is None
        opt.step()                                   # parameters without grads are skipped
        assert p.tolist() == [1.0, 1.0]


def test_step_updates_in_place_and_bumps_the_version():
    p = tg.nn.Parameter(tg.ones(3))
    storage, version = p._data, p._version
    y = p * p                                        # saves p for backward
    y.sum().backward(retain_graph=True)
    tg.optim.SGD([p], lr=0.1).step()
    assert p._data is storage and p._version > version and np.allclose(p.detach().numpy(), 0.8)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()                           # as torch: p changed after it was saved


def test_constructor_errors_match_torch():
    def params(lib):
        return [lib.nn.Parameter(lib.ones(2))]

    same_error(lambda lib: lib.optim.SGD(params(lib), lr=-1))
    same_error(lambda lib: lib.optim.SGD(params(lib), lr=0.1, momentum=-0.5))
    same_error(lambda lib: lib.optim.SGD(params(lib), lr=0.1, weight_decay=-1))
    same_error(lambda lib: lib.optim.SGD(params(lib), lr=0.1, nesterov=True))
    same_error(lambda lib: lib.optim.SGD(params(lib), lr=0.1, momentum=0.9, dampening=0.1, nesterov=True))
    same_error(lambda lib: lib.optim.Adam(params(lib), lr=-1e-3))
    same_error(lambda lib: lib.optim.Adam(params(lib), eps=-1))
    same_error(lambda lib: lib.optim.Adam(params(lib), betas=(1.0, 0.9)))
    same_error(lambda lib: lib.optim.Adam(params(lib), betas=(0.9, -0.1)))
    same_error(lambda lib: lib.optim.AdamW(params(lib), weight_decay=-1))
    same_error(lambda lib: lib.optim.SGD([], lr=0.1))
    same_error(lambda lib: lib.optim.SGD(lib.ones(2, requires_grad=True), lr=0.1))
    same_error(lambda lib: lib.optim.SGD([lib.ones(2, requires_grad=True) * 2], lr=0.1))
    same_error(lambda lib: lib.optim.SGD([1.0], lr=0.1))
    same_error(lambda lib: lib.optim.SGD([{"params": {lib.nn.Parameter(lib.ones(1))}}], lr=0.1))
    same_error(lambda lib: _duplicate_groups(lib))
    same_error(lambda lib: lib.optim.lr_scheduler.StepLR(object(), 2))
    same_error(lambda lib: lib.optim.lr_scheduler.StepLR(lib.optim.SGD(params(lib)), 2, last_epoch=3))


def _duplicate_groups(lib):
    p = lib.nn.Parameter(lib.ones(1))
    return lib.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)


def test_repr_add_param_group_and_defaults_match_torch():
    opts = {}
    for lib in LIBS:
        a, b = lib.nn.Parameter(lib.ones(1)), lib.nn.Parameter(lib.ones(1))
        opt = lib.optim.Adam([a], lr=0.01)
        opt.add_param_group({"params": b, "weight_decay": 0.5})
        opts[lib.__name__] = opt
    assert repr(opts["tapegrad"]) == repr(opts["torch"])
    assert opts["tapegrad"].defaults == opts["torch"].defaults
    sgd = {lib.__name__: lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1) for lib in LIBS}
    assert repr(sgd["tapegrad"]) == repr(sgd["torch"])


def test_scheduler_state_dict_and_warning():
    p = tg.nn.Parameter(tg.ones(1))
    opt = tg.optim.SGD([p], lr=1.0)
    sched = tg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 1 and state["base_lrs"] == [1.0]
    other = tg.optim.lr_scheduler.StepLR(tg.optim.SGD([p], lr=1.0), step_size=5)
    other.load_state_dict(copy.deepcopy(state))
    assert other.step_size == 2 and other.last_epoch == 1
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()
    assert sched.get_last_lr() == [opt.param_groups[0]["lr"]] == [pytest.approx(0.1)]


def test_scheduler_state_dict_saves_and_loads():
    import io
    p = tg.nn.Parameter(tg.ones(1))
    opt = tg.optim.SGD([p], lr=1.0)
    sched = tg.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4])
    buf = io.BytesIO()
    tg.save(sched.state_dict(), buf)
    buf.seek(0)
    state = tg.load(buf)
    fresh = tg.optim.lr_scheduler.MultiStepLR(tg.optim.SGD([p], lr=1.0), milestones=[9])
    fresh.load_state_dict(state)
    assert fresh.milestones == sched.milestones and fresh._get_closed_form_lr() == sched._get_closed_form_lr()


def test_step_hooks():
    p = tg.nn.Parameter(tg.ones(1))
    opt = tg.optim.SGD([p], lr=1.0)
    calls = []
    h = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    p.grad = tg.ones(1)
    opt.step()
    h.remove()
    opt.step()
    assert calls == ["pre", "post", "post"] and p.tolist() == [-1.0]
