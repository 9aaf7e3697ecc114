"""A whole training step under tapegrad.compile (issue 20): forward, `loss.backward()` into .grad,
clip_grad_norm_, and optimizer.step()/zero_grad() in one compiled call, equal to the eager step and to torch over
several steps (parameters, .grad and the optimizer's state)."""
import numpy as np
import pytest
import torch

import tapegrad as tg

OPTIMIZERS = {
    "SGD": lambda lib, p: lib.optim.SGD(p, lr=0.1, momentum=0.9),
    "Adam": lambda lib, p: lib.optim.Adam(p, lr=0.01),
    "AdamW": lambda lib, p: lib.optim.AdamW(p, lr=0.01, weight_decay=0.1),
}


def _setup(lib, opt_name, order):
    r = np.random.default_rng(0)
    model = lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(r.standard_normal(tuple(p.shape)).astype(np.float32) * 0.4))
    opt = OPTIMIZERS[opt_name](lib, model.parameters())

    def step(x, y):
        if order == "zero_first":
            opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        norm = lib.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        if order == "zero_last":
            model.zero_grad()
        return loss, norm
    return model, opt, step


def _close(a, b, tol=2e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


@pytest.mark.parametrize("order", ["zero_first", "zero_last"])
@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_a_training_step_compiles_as_one_call_and_matches_eager_and_torch(opt_name, order):
    runs = [_setup(tg, opt_name, order), _setup(tg, opt_name, order), _setup(torch, opt_name, order)]
    compiled = tg.compile(runs[0][2], fullgraph=True)
    r = np.random.default_rng(1)
    for _ in range(5):
        x, y = r.standard_normal((4, 6)).astype(np.float32), r.integers(0, 3, 4)
        got = [compiled(tg.tensor(x), tg.tensor(y)), runs[1][2](tg.tensor(x), tg.tensor(y)),
               runs[2][2](torch.tensor(x), torch.tensor(y))]
        for loss, norm in got[1:]:
            _close(got[0][0].item(), loss.item())
            _close(got[0][1].item(), norm.item())
        models = [m for m, _, _ in runs]
        for ps in zip(*(m.parameters() for m in models)):
            for p in ps[1:]:
                _close(ps[0].detach().numpy(), p.detach().numpy())
                if order == "zero_first":
                    _close(ps[0].grad.numpy(), p.grad.numpy())
                else:
                    assert ps[0].grad is None and p.grad is None
    state = [[o.state[p] for p in m.parameters()] for m, o, _ in runs]
    for s0, s1, s2 in zip(*state):
        for k in s2:
            _close(np.asarray(s0[k].numpy() if hasattr(s0[k], "numpy") else s0[k]), s2[k].numpy())
            _close(np.asarray(s1[k].numpy() if hasattr(s1[k], "numpy") else s1[k]), s2[k].numpy())
    assert compiled.traces == 1


def test_backward_accumulates_into_grad_across_calls_and_into_arguments():
    w = tg.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    wt = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)

    def step(lib, w):
        def f(x):
            (x * w).pow(2).sum().backward()
            return None
        return f
    f = tg.compile(step(tg, w), fullgraph=True)
    for k in range(3):
        a = np.arange(3.0) + k
        x, xt = tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        assert f(x) is None
        step(torch, wt)(xt)
        _close(w.grad.numpy(), wt.grad.numpy(), 1e-12)   # accumulated over the calls, as eagerly
        _close(x.grad.numpy(), xt.grad.numpy(), 1e-12)   # into the argument that requires grad
    assert f.traces == 2  # the first call found w.grad None; from the second on it is one tensor (a guard)
    assert "was None when traced" in f.guard_failures[-1]


def test_a_hook_on_a_leaf_the_step_accumulates_into_breaks_the_graph():
    # a replay accumulates .grad without Python, so it cannot run the leaf's hooks: the call runs eagerly
    for register in ("register_hook", "register_post_accumulate_grad_hook"):
        w = tg.tensor(np.ones(3), requires_grad=True)
        calls = []
        getattr(w, register)(lambda g: calls.append(1))

        def step(x):
            (x * w).sum().backward()
        with pytest.raises(RuntimeError, match="a hook on a leaf that backward"):
            tg.compile(step, fullgraph=True)(tg.tensor(np.arange(3.0)))
        f = tg.compile(step)
        for _ in range(3):
            f(tg.tensor(np.arange(3.0)))
        assert len(calls) == 3  # (the fullgraph call raised before accumulating anything)
        np.testing.assert_allclose(w.grad.numpy(), 3 * np.arange(3.0))


def test_what_a_step_cannot_replay_is_named():
    w = tg.tensor(np.ones(3), requires_grad=True)
    opt = tg.optim.SGD([w], lr=0.1)

    def reads_grad(x):
        (x * w).sum().backward()
        return w.grad * 2

    def reads_after_step(x):
        opt.zero_grad()
        (x * w).sum().backward()
        opt.step()
        return (x * w).sum()
    for fn, why in ((reads_grad, "a read of .grad after backward"),
                    (reads_after_step, "it reads a parameter after optimizer.step()")):
        with pytest.raises(RuntimeError, match=why.replace("(", r"\(").replace(")", r"\)")):
            tg.compile(fn, fullgraph=True)(tg.tensor(np.arange(3.0)))
    w.grad = None
    before = w.detach().numpy().copy()
    out = tg.compile(reads_after_step)(tg.tensor(np.arange(3.0)))  # eagerly, once
    np.testing.assert_allclose(w.detach().numpy(), before - 0.1 * np.arange(3.0))
    np.testing.assert_allclose(out.item(), float((np.arange(3.0) * w.detach().numpy()).sum()))


def test_a_scheduler_step_and_clip_grad_value_in_the_step_advance_at_every_call():
    runs = []
    for lib in (tg, torch):
        w = lib.tensor(np.array([1.0, -2.0, 3.0], np.float32), requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.5)
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

        def step(x, w=w, opt=opt, sched=sched, lib=lib):
            opt.zero_grad()
            loss = (x * w).pow(2).sum()
            loss.backward()
            lib.nn.utils.clip_grad_value_([w], 1.5)
            opt.step()
            sched.step()
            return loss
        runs.append((w, opt, tg.compile(step, fullgraph=True) if lib is tg else step))
    for k in range(5):
        a = np.array([0.5, 1.0, -0.25], np.float32) * (k + 1)
        l0, l1 = runs[0][2](tg.tensor(a)), runs[1][2](torch.tensor(a))
        _close(l0.item(), l1.item())
        _close(runs[0][0].detach().numpy(), runs[1][0].detach().numpy())
        assert runs[0][1].param_groups[0]["lr"] == runs[1][1].param_groups[0]["lr"]
    assert runs[0][2].traces == 1


def test_a_branch_on_whether_grad_is_set_is_guarded():
    w = tg.tensor(np.ones(2), requires_grad=True)
    f = tg.compile(lambda x: x * 2.0 if w.grad is None else x * w.grad, fullgraph=True)
    x = tg.tensor(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(f(x).numpy(), [2.0, 4.0])
    w.grad = tg.tensor(np.array([3.0, 5.0]))
    np.testing.assert_array_equal(f(x).numpy(), [3.0, 10.0])   # traced again: .grad is set now
    w.grad.mul_(2.0)
    np.testing.assert_array_equal(f(x).numpy(), [6.0, 20.0])   # the same .grad, read afresh
    assert f.traces == 2 and "was None when traced" in f.guard_failures[-1]
