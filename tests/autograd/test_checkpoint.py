"""torch.utils.checkpoint against torch in one process: both variants' values, gradients, recompute side effects
(the generator's state, a BatchNorm's running statistics, calls of the function), warnings and errors."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = (torch, tg)


def _model(lib):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(6), lib.nn.Tanh(), lib.nn.Dropout(0.3),
                          lib.nn.Linear(6, 3), lib.nn.Sigmoid()).double()
    with lib.no_grad():
        for k, p in enumerate(m.parameters()):
            p.copy_(lib.tensor(np.sin(np.arange(p.numel()) + k).reshape(p.shape)))
    return m


def _run(lib, reentrant, x_requires_grad, how="backward"):
    m = _model(lib)
    x = lib.tensor(np.linspace(-1, 1, 20).reshape(5, 4), requires_grad=x_requires_grad)
    calls = []

    def segment(inp):
        calls.append(1)
        return m[3](m[2](m[1](m[0](inp))))

    lib.manual_seed(7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h = lib.utils.checkpoint.checkpoint(segment, x, use_reentrant=reentrant)
    y = m[5](m[4](h)).pow(2).sum()
    after_forward = len(calls)
    if how == "backward":
        y.backward()
        grads = [None if p.grad is None else p.grad.numpy().copy() for p in m.parameters()]
        grads.append(None if x.grad is None else x.grad.numpy().copy())
    else:
        params = [p for p in m.parameters()] + ([x] if x_requires_grad else [])
        grads = [g.numpy() for g in lib.autograd.grad(y, params)]
    return {"loss": y.item(), "grads": grads, "calls": (after_forward, len(calls)),
            "running": (m[1].running_mean.numpy().copy(), m[1].running_var.numpy().copy()),
            "next_draw": lib.rand(3).numpy(), "warnings": [str(w.message) for w in caught],
            "h_requires_grad": h.requires_grad}


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_checkpoint_gives_torchs_values_gradients_and_side_effects(reentrant, x_requires_grad):
    want, got = (_run(lib, reentrant, x_requires_grad) for lib in LIBS)
    assert got["calls"] == want["calls"]
    assert got["warnings"] == want["warnings"] and got["h_requires_grad"] == want["h_requires_grad"]
    np.testing.assert_allclose(got["loss"], want["loss"], rtol=1e-12)
    for g, w in zip(got["grads"], want["grads"]):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-14)
    for g, w in zip(got["running"], want["running"]):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_array_equal(got["next_draw"], want["next_draw"])


def test_non_reentrant_checkpoint_with_autograd_grad():
    want, got = (_run(lib, False, True, how="grad") for lib in LIBS)
    for g, w in zip(got["grads"], want["grads"]):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-14)


def test_reentrant_checkpoint_refuses_autograd_grad_as_torch():
    for lib in LIBS:
        x = lib.ones(2, 3, requires_grad=True)
        lin = lib.nn.Linear(3, 3)
        y = lib.utils.checkpoint.checkpoint(lin, x, use_reentrant=True).sum()
        with pytest.raises(RuntimeError, match="^When use_reentrant=True, torch.utils.checkpoint is incompatible "
                                               "with .grad\\(\\)"):
            lib.autograd.grad(y, x)


def test_flag_warning_and_argument_errors_are_torchs():
    for lib in LIBS:
        C = lib.utils.checkpoint
        x = lib.ones(2, 3, requires_grad=True)
        with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
            C.checkpoint(lambda t: t * 2, x)
        with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo$"):
            C.checkpoint(lambda t: t * 2, x, use_reentrant=True, foo=1)
        with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
            C.checkpoint(lambda t: t * 2, x, use_reentrant=False, foo=1)
        assert C.checkpoint(lambda t, k: t * k, x, use_reentrant=False, k=3).sum().item() == 18


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_sequential(reentrant):
    results = []
    for lib in LIBS:
        lib.manual_seed(0)
        seq = lib.nn.Sequential(*[lib.nn.Linear(4, 4) if k % 2 == 0 else lib.nn.Tanh() for k in range(8)]).double()
        with lib.no_grad():
            for k, p in enumerate(seq.parameters()):
                p.copy_(lib.tensor(np.cos(np.arange(p.numel()) * 0.3 + k).reshape(p.shape)))
        x = lib.tensor(np.linspace(0, 1, 12).reshape(3, 4), requires_grad=True)
        y = lib.utils.checkpoint.checkpoint_sequential(seq, 3, x, use_reentrant=reentrant)
        y.sum().backward()
        results.append([y.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in seq.parameters()])
    for g, w in zip(*reversed(results)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
