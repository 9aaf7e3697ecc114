"""Optimizer step hooks against torch: hook(optimizer, args, kwargs) with args holding the optimizer first, a
pre hook's (args, kwargs) replacing the call's, and the global hooks of torch.optim.optimizer with their order
around each optimizer's own."""
import importlib

import pytest
import torch

import tapegrad as tg



def _optimizer_module(lib):
    return importlib.import_module(lib.__name__ + ".optim.optimizer")  # (torch.optim deletes the attribute)


def _run(lib, scenario):
    """What the hooks saw and the parameter after the steps, in plain Python values."""
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([p], lr=0.5)
    seen = []

    def show(tag):
        def hook(o, args, kwargs):
            seen.append((tag, o is opt, len(args), args[0] is opt if args else None,
                         [float(a()) if callable(a) else a for a in args[1:]], sorted(kwargs)))
        return hook

    handles = scenario(lib, opt, show)
    p.grad = lib.ones(2)
    out = opt.step(lambda: lib.tensor(3.0)) if scenario is _positional_closure else opt.step()
    for h in handles:
        h.remove()
    p.grad = lib.ones(2)
    opt.step()  # (removed hooks: not called)
    return seen, p.tolist(), None if out is None else float(out)


def _own_hooks(lib, opt, show):
    return [opt.register_step_pre_hook(show("pre")), opt.register_step_post_hook(show("post"))]


def _global_and_own(lib, opt, show):
    O = _optimizer_module(lib)
    return [opt.register_step_post_hook(show("own post")), O.register_optimizer_step_post_hook(show("global post")),
            O.register_optimizer_step_pre_hook(show("global pre")), opt.register_step_pre_hook(show("own pre"))]


def _positional_closure(lib, opt, show):
    return [opt.register_step_pre_hook(show("pre")), opt.register_step_post_hook(show("post"))]


def _replacing_pre_hook(lib, opt, show):
    """A pre hook returning torch's (args, kwargs): a closure added as a keyword, seen by the later hooks."""
    def add_closure(o, args, kwargs):
        return args, dict(kwargs, closure=lambda: lib.tensor(7.0))
    return [opt.register_step_pre_hook(add_closure), opt.register_step_pre_hook(show("pre")),
            opt.register_step_post_hook(show("post"))]


@pytest.mark.parametrize("scenario", [_own_hooks, _global_and_own, _positional_closure, _replacing_pre_hook],
                         ids=lambda f: f.__name__)
def test_hooks_see_what_torch_hooks_see(scenario):
    assert _run(tg, scenario) == _run(torch, scenario)


def test_global_hooks_are_removed_by_their_handles():
    def run(lib):
        calls = []
        O = _optimizer_module(lib)
        h1 = O.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("pre", type(o).__name__)))
        h2 = O.register_optimizer_step_post_hook(lambda o, a, k: calls.append(("post", type(o).__name__)))
        p = lib.nn.Parameter(lib.ones(1))
        p.grad = lib.ones(1)
        lib.optim.SGD([p], lr=1.0).step()
        lib.optim.Adam([p], lr=1.0).step()
        h1.remove()
        h2.remove()
        lib.optim.SGD([p], lr=1.0).step()
        return calls, p.tolist()
    assert run(tg) == run(torch)
    O = _optimizer_module(tg)
    assert not O._global_optimizer_pre_hooks and not O._global_optimizer_post_hooks


def test_pre_hook_returning_other_than_a_pair_raises_as_torch():
    def err(lib):
        p = lib.nn.Parameter(lib.ones(1))
        p.grad = lib.ones(1)
        opt = lib.optim.SGD([p], lr=1.0)
        opt.register_step_pre_hook(lambda o, a, k: "nope")
        try:
            opt.step()
        except RuntimeError as e:
            msg = str(e)
            return msg[msg.index(" must return"):], p.tolist()
    assert err(tg) == err(torch) == (" must return None or a tuple of (new_args, new_kwargs), but got nope.", [1.0])
