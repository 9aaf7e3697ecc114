"""OneCycleLR, CyclicLR, CosineAnnealingWarmRestarts, ReduceLROnPlateau, PolynomialLR, SequentialLR and
ChainedScheduler against torch: the lr (and cycled momentum) sequence, get_last_lr, state_dict, errors, warnings."""
import copy
import math
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


def _optimizer(lib, kind="sgd", groups=1):
    ps = [lib.nn.Parameter(lib.ones(2)) for _ in range(groups)]
    spec = [{"params": [p]} for p in ps]
    if groups > 1:
        spec[1]["lr"] = 0.05
    if kind == "sgd":
        return lib.optim.SGD(spec, lr=0.1, momentum=0.9)
    if kind == "adam":
        return lib.optim.Adam(spec, lr=0.1)
    return lib.optim.Adagrad(spec, lr=0.1)


SCHEDULERS = {
    "onecycle": lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=20),
    "onecycle-linear-3phase": lambda L, o: L.optim.lr_scheduler.OneCycleLR(
        o, max_lr=[1.0, 0.5][:len(o.param_groups)], epochs=4, steps_per_epoch=5, anneal_strategy="linear",
        three_phase=True, pct_start=0.25, div_factor=10.0, final_div_factor=100.0),
    "onecycle-no-momentum": lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, max_lr=0.3, total_steps=25,
                                                                          cycle_momentum=False),
    "cyclic": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3),
    "cyclic-triangular2": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                                                     step_size_down=5, mode="triangular2"),
    "cyclic-exp-range": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                                                   mode="exp_range", gamma=0.9),
    "cyclic-scale-fn": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                                  scale_fn=lambda x: 1 / (1 + x),
                                                                  scale_mode="iterations"),
    "warm-restarts": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=4),
    "warm-restarts-mult": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2,
                                                                                         eta_min=1e-3),
    "polynomial": lambda L, o: L.optim.lr_scheduler.PolynomialLR(o, total_iters=6, power=2.0),
    "polynomial-default": lambda L, o: L.optim.lr_scheduler.PolynomialLR(o),
    "sequential": lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3),
            L.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
            L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5)], milestones=[4, 9]),
    "chained": lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=4),
         L.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)]),
    "chained-optimizer-arg": lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5), L.optim.lr_scheduler.PolynomialLR(o, 8)], o),
}


def _sequence(lib, name, kind, groups, steps=20):
    opt = _optimizer(lib, kind, groups)
    sched = SCHEDULERS[name](lib, opt)
    out = [(sched.get_last_lr(), [g.get("momentum", g.get("betas")) for g in opt.param_groups])]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append((sched.get_last_lr(), [g.get("momentum", g.get("betas")) for g in opt.param_groups],
                    [g["lr"] for g in opt.param_groups]))
    return out, sched


def _flat(seq):
    flat = []
    for item in seq:
        for part in item:
            for v in part:
                flat.extend(v if isinstance(v, tuple) else [v])
    return np.array(flat, dtype=float)


@pytest.mark.parametrize("name", list(SCHEDULERS))
@pytest.mark.parametrize("kind,groups", [("sgd", 1), ("adam", 2)])
def test_lr_sequence_matches_torch(name, kind, groups):
    ours, sched_a = _sequence(tg, name, kind, groups)
    theirs, sched_b = _sequence(torch, name, kind, groups)
    a, b = _flat(ours), _flat(theirs)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-17)
    assert len(set(np.round(a, 12))) > 2                 # the schedule moves
    assert sorted(sched_a.state_dict()) == sorted(sched_b.state_dict())


def test_momentum_free_optimizer_with_cycle_momentum_errors():
    same_error(lambda L: L.optim.lr_scheduler.OneCycleLR(_optimizer(L, "adagrad"), max_lr=1.0, total_steps=5))
    same_error(lambda L: L.optim.lr_scheduler.CyclicLR(_optimizer(L, "adagrad"), 0.1, 1.0))
    for L in LIBS:  # cycle_momentum=False works
        L.optim.lr_scheduler.CyclicLR(_optimizer(L, "adagrad"), 0.1, 1.0, cycle_momentum=False)


def test_constructor_errors_match_torch():
    def sch(L):
        return L.optim.lr_scheduler

    same_error(lambda L: sch(L).OneCycleLR(_optimizer(L), max_lr=1.0))
    same_error(lambda L: sch(L).OneCycleLR(_optimizer(L), max_lr=1.0, total_steps=0))
    same_error(lambda L: sch(L).OneCycleLR(_optimizer(L), max_lr=1.0, epochs=2, steps_per_epoch=-1))
    same_error(lambda L: sch(L).OneCycleLR(_optimizer(L), max_lr=1.0, total_steps=5, pct_start=1))
    same_error(lambda L: sch(L).OneCycleLR(_optimizer(L), max_lr=1.0, total_steps=5, anneal_strategy="exp"))
    same_error(lambda L: sch(L).OneCycleLR(_optimizer(L), max_lr=[1.0, 2.0], total_steps=5))
    same_error(lambda L: sch(L).OneCycleLR(object(), max_lr=1.0, total_steps=5))
    same_error(lambda L: sch(L).CyclicLR(_optimizer(L), 0.1, 1.0, mode="sawtooth"))
    same_error(lambda L: sch(L).CosineAnnealingWarmRestarts(_optimizer(L), T_0=0))
    same_error(lambda L: sch(L).CosineAnnealingWarmRestarts(_optimizer(L), T_0=2, T_mult=1.5))
    same_error(lambda L: sch(L).CosineAnnealingWarmRestarts(_optimizer(L), T_0=2, eta_min="0"))
    same_error(lambda L: sch(L).CosineAnnealingWarmRestarts(_optimizer(L), T_0=2).step(-1))
    same_error(lambda L: sch(L).ReduceLROnPlateau(_optimizer(L), factor=1.0))
    same_error(lambda L: sch(L).ReduceLROnPlateau(_optimizer(L), mode="mid"))
    same_error(lambda L: sch(L).ReduceLROnPlateau(_optimizer(L), threshold_mode="rat"))
    same_error(lambda L: sch(L).ReduceLROnPlateau(_optimizer(L), min_lr=[0.1, 0.2]))
    same_error(lambda L: sch(L).SequentialLR(_optimizer(L), [], []))
    same_error(lambda L: _sequential_wrong_milestones(L))
    same_error(lambda L: _chained_with_plateau(L))
    same_error(lambda L: sch(L).ChainedScheduler([]))
    same_error(lambda L: _chained_two_optimizers(L))
    same_error(lambda L: _onecycle_past_the_end(L))


def _sequential_wrong_milestones(L):
    o = _optimizer(L)
    return L.optim.lr_scheduler.SequentialLR(o, [L.optim.lr_scheduler.StepLR(o, 2)], milestones=[3])


def _chained_with_plateau(L):
    o = _optimizer(L)
    return L.optim.lr_scheduler.ChainedScheduler([L.optim.lr_scheduler.StepLR(o, 2),
                                                  L.optim.lr_scheduler.ReduceLROnPlateau(o)])


def _chained_two_optimizers(L):
    a, b = _optimizer(L), _optimizer(L)
    return L.optim.lr_scheduler.ChainedScheduler([L.optim.lr_scheduler.StepLR(a, 2),
                                                  L.optim.lr_scheduler.StepLR(b, 2)])


def _onecycle_past_the_end(L):
    o = _optimizer(L)
    s = L.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            s.step()


METRICS = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.89, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95, 0.5, 0.6, 0.7, 0.8, 0.9,
           1.0, 1.1, 1.2, 1.3] + [1.0] * 12


@pytest.mark.parametrize("kwargs", [
    {},
    {"patience": 1},
    {"patience": 2, "factor": 0.5, "cooldown": 2, "min_lr": 0.02},
    {"mode": "max", "patience": 0, "threshold": 0.1, "threshold_mode": "abs"},
    {"mode": "max", "patience": 1, "threshold": 0.01, "min_lr": [0.01, 0.03], "eps": 1e-3},
    {"patience": 0, "threshold_mode": "abs", "threshold": 0.02},
])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    def run(L):
        opt = _optimizer(L, "sgd", 2)
        sched = L.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        out = []
        for m in METRICS:
            opt.step()
            sched.step(L.tensor(m))
            out.append((sched.get_last_lr(), sched.num_bad_epochs, sched.cooldown_counter, sched.best,
                        sched.last_epoch))
        return out, sched
    (a, sa), (b, sb) = run(tg), run(torch)
    assert a == b
    assert any(x[0] != a[0][0] for x in a)
    assert sa.state_dict() == sb.state_dict()


def test_state_dicts_reload_and_continue_like_torch():
    for name in ["onecycle", "cyclic-triangular2", "warm-restarts-mult", "sequential", "chained", "polynomial"]:
        runs = {}
        for L in LIBS:
            opt = _optimizer(L)
            sched = SCHEDULERS[name](L, opt)
            for _ in range(5):
                opt.step()
                sched.step()
            state = copy.deepcopy(sched.state_dict())
            opt2 = _optimizer(L)
            opt2.load_state_dict(opt.state_dict())
            sched2 = SCHEDULERS[name](L, opt2)  # (chainable schedulers move opt2's lr here, in torch too)
            sched2.load_state_dict(state)
            runs[L] = []
            for _ in range(4):
                opt.step()
                sched.step()
                opt2.step()
                sched2.step()
                runs[L].append((sched.get_last_lr(), sched2.get_last_lr(), getattr(sched2, "last_epoch", -1)))
            if name in ("onecycle", "cyclic-triangular2", "warm-restarts-mult", "polynomial"):
                assert all(a == b for a, b, _ in runs[L]), (name, L.__name__)  # closed-form: resumes exactly
        np.testing.assert_allclose(np.array([a + b + [e] for a, b, e in runs[tg]]),
                                   np.array([a + b + [e] for a, b, e in runs[torch]]), rtol=1e-14)
    sa = SCHEDULERS["sequential"](tg, _optimizer(tg)).state_dict()
    sb = SCHEDULERS["sequential"](torch, _optimizer(torch)).state_dict()
    assert sorted(sa) == sorted(sb) and len(sa["_schedulers"]) == 3
    assert [sorted(x) for x in sa["_schedulers"]] == [sorted(x) for x in sb["_schedulers"]]


def test_warm_restarts_with_fractional_epochs_matches_torch():
    def run(L):
        opt = _optimizer(L)
        sched = L.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.01)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in [0.5, 1.25, 2.9, 3.0, 4.5, 9.0, 10.2, 21.7, 1.0]:
                opt.step()
                sched.step(epoch)
                out.append((sched.get_last_lr()[0], sched.T_cur, sched.T_i, sched.last_epoch))
        return out
    a, b = run(tg), run(torch)
    np.testing.assert_allclose(np.array(a, float), np.array(b, float), rtol=1e-14)


def test_warnings_match_torch():
    def warns(L, fn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn(L)
        return [(x.category.__name__, str(x.message)) for x in w]

    def before_optimizer_step(L):
        opt = _optimizer(L)
        sched = L.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5)
        sched.step()

    def get_lr_outside_step(L):
        opt = _optimizer(L)
        L.optim.lr_scheduler.PolynomialLR(opt).get_lr()

    def plateau_epoch(L):
        opt = _optimizer(L)
        L.optim.lr_scheduler.ReduceLROnPlateau(opt).step(1.0, epoch=3)

    for fn in (before_optimizer_step, get_lr_outside_step, plateau_epoch):
        got = warns(tg, fn)
        assert got and got == warns(torch, fn)


def test_tensor_lr_is_filled_in_place():
    for L in LIBS:
        opt = L.optim.SGD([L.nn.Parameter(L.ones(2))], lr=L.tensor(0.1), momentum=0.9)
        lr = opt.param_groups[0]["lr"]
        sched = L.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] is lr
        assert math.isclose(float(lr), float(sched.get_last_lr()[0]), rel_tol=1e-6)


def test_new_names_are_exported_like_torch():
    assert sorted(tg.optim.lr_scheduler.__all__) == sorted(torch.optim.lr_scheduler.__all__)
    for name in torch.optim.lr_scheduler.__all__:
        assert hasattr(tg.optim.lr_scheduler, name)
