"""torch.nn.modules.module's global module hooks (register_module_forward_pre_hook, register_module_forward_hook,
register_module_full_backward_pre_hook, register_module_full_backward_hook, register_module_backward_hook) against
torch 2.13: every module's call runs them, before its own hooks of the same kind, in registration order; their
handles remove them; the values and gradients they change."""
import numpy as np
import pytest
import torch

import tapegrad as tg


def _model(L):
    L.manual_seed(0)
    return L.nn.Sequential(L.nn.Linear(3, 4), L.nn.ReLU(), L.nn.Linear(4, 2))


def _run(L, register):
    model = _model(L)
    log = []
    handles = register(L, log, model)
    x = L.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
    out = model(x)
    out.sum().backward()
    for h in handles:
        h.remove()
    model(x)  # (after removal: nothing logged)
    return log, out.detach().numpy(), x.grad.numpy()


def _forward_hooks(L, log, model):
    mod = L.nn.modules.module

    def pre(m, args):
        log.append(("pre", type(m).__name__))

    def post(m, args, out):
        log.append(("post", type(m).__name__))
        return out * 2 if isinstance(m, L.nn.ReLU) else None

    def own(m, args, out):
        log.append(("own", type(m).__name__))
    return [mod.register_module_forward_pre_hook(pre), mod.register_module_forward_hook(post),
            model[0].register_forward_hook(own)]


def _forward_hooks_with_kwargs(L, log, model):
    def post(m, args, kwargs, out):
        log.append(("kw", type(m).__name__, tuple(sorted(kwargs))))
    return [L.nn.modules.module.register_module_forward_hook(post, with_kwargs=True)]


def _backward_hooks(L, log, model):
    mod = L.nn.modules.module

    def pre(m, grad_output):
        log.append(("bpre", type(m).__name__))

    def full(m, grad_input, grad_output):
        log.append(("bfull", type(m).__name__, tuple(None if g is None else tuple(g.shape) for g in grad_input)))
        return tuple(None if g is None else g * 3 for g in grad_input) if isinstance(m, L.nn.ReLU) else None
    return [mod.register_module_full_backward_pre_hook(pre), mod.register_module_full_backward_hook(full)]


@pytest.mark.parametrize("register", [_forward_hooks, _forward_hooks_with_kwargs, _backward_hooks])
def test_global_module_hooks_as_torchs(register):
    want, got = _run(torch, register), _run(tg, register)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


def test_global_regular_and_full_backward_hooks_do_not_mix():
    for L in (torch, tg):
        mod = L.nn.modules.module
        h = mod.register_module_full_backward_hook(lambda m, gi, go: None)
        try:
            with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks "
                                                   "as a global Module hook"):
                mod.register_module_backward_hook(lambda m, gi, go: None)
        finally:
            h.remove()


def test_global_forward_hook_always_called_runs_when_forward_raises():
    for L in (torch, tg):
        log = []

        class Bad(L.nn.Module):
            def forward(self, x):
                raise ValueError("boom")
        h = L.nn.modules.module.register_module_forward_hook(lambda m, a, o: log.append(o), always_call=True)
        try:
            with pytest.raises(ValueError, match="boom"):
                Bad()(L.ones(1))
        finally:
            h.remove()
        assert log == [None]
