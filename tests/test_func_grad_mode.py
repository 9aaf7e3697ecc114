"""torch.func's transforms under no_grad, set_grad_enabled(False) and inference_mode: torch's compute their
derivatives whatever the caller's grad mode (their results then do not require grad); compared with torch 2.13.
Also torch.func.replace_all_batch_norm_modules_."""
import numpy as np
import pytest
import torch

import tapegrad

X = [0.5, 1.0, 2.0]
MODES = {
    "no_grad": lambda t: t.no_grad(),
    "set_grad_enabled": lambda t: t.set_grad_enabled(False),
    "inference_mode": lambda t: t.inference_mode(),
}


def _g(t, x):
    return x.sin() * x ** 2


def _f(t, x):
    return (x.sin() * x).sum()


# jacrev, and jacfwd of fewer outputs than inputs, build the Jacobian by reverse rows (the others' paths, and
# grad, vjp, jvp, hessian and linearize, already ran under enable_grad)
CASES = {
    "jacrev": lambda t, x: t.func.jacrev(t.sin)(x),
    "jacfwd_fewer_outputs": lambda t, x: t.func.jacfwd(lambda x: (x ** 2).sum(0, keepdim=True))(x),
    "jacrev_elementwise": lambda t, x: t.func.jacrev(lambda x: _g(t, x))(x),
    "jacrev_argnums": lambda t, x: t.func.jacrev(lambda x, y: x * y, argnums=1)(x, x + 1),
    "jacrev_of_jacrev": lambda t, x: t.func.jacrev(t.func.jacrev(lambda x: _f(t, x)))(x),
    "functional_call": lambda t, x: t.func.jacrev(
        lambda p: t.func.functional_call(_linear(t), p, (x,)).sum())(dict(_linear(t).named_parameters()))["weight"],
}


def _linear(t, cache={}):
    if t not in cache:
        m = t.nn.Linear(3, 2)
        with t.no_grad():
            m.weight.copy_(t.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
            m.bias.fill_(0.25)
        cache[t] = m
    return cache[t]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("case", list(CASES))
def test_transform_under_grad_mode_off_as_torch(mode, case):
    results = []
    for t in (torch, tapegrad):
        x = t.tensor(X)
        with MODES[mode](t):
            r = CASES[case](t, x)
            results.append((np.asarray(r.detach().tolist()), r.requires_grad, t.is_grad_enabled()))
    (want, want_req, want_mode), (got, got_req, got_mode) = results
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got.any()  # (the defect: all-zero Jacobians)
    assert (got_req, got_mode) == (want_req, want_mode) == (False, False)


def test_replace_all_batch_norm_modules_as_torch():
    def build(t):
        m = t.nn.Sequential(t.nn.Linear(2, 3), t.nn.BatchNorm1d(3),
                            t.nn.Sequential(t.nn.BatchNorm2d(4, affine=False)))
        r = t.func.replace_all_batch_norm_modules_(m)
        bns = [(type(b).__name__, b.track_running_stats, b.running_mean, b.running_var, b.num_batches_tracked)
               for b in m.modules() if isinstance(b, t.nn.modules.batchnorm._BatchNorm)]
        return r is m, bns, sorted(dict(m.named_buffers())), \
            t.func.replace_all_batch_norm_modules_(t.nn.BatchNorm1d(2)).track_running_stats
    assert build(tapegrad) == build(torch)
    assert "replace_all_batch_norm_modules_" in tapegrad.func.__all__
