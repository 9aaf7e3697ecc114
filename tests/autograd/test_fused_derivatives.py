"""create_graph records an elementwise derivative that reads two tensors (`g * (1 - y * y)`) as one row of an op
derived from the registry's expression (create_graph.py), whose own derivatives are derived from that expression
too: the first, second and third derivatives through such rows against torch's, and the rows recorded."""
import numpy as np
import pytest
import torch

import tapegrad
from tapegrad import registry, tape as tape_mod

# name: (function of (lib, x, y), the derived ops its gradient records)
CASES = {
    "tanh": (lambda t, x, y: x.tanh(), {"tanh_backward"}),
    "sigmoid": (lambda t, x, y: t.sigmoid(x), {"sigmoid_backward"}),
    "exp": (lambda t, x, y: (x * 0.5).exp(), {"exp_backward"}),
    "log": (lambda t, x, y: (x * x + 0.5).log(), {"log_backward"}),
    "sqrt": (lambda t, x, y: (x * x + 1).sqrt(), {"sqrt_backward"}),
    "sin_cos": (lambda t, x, y: x.sin() * x.cos(), {"sin_backward", "cos_backward"}),
    "cube": (lambda t, x, y: x ** 3, {"pow_ts_backward"}),
    "pow": (lambda t, x, y: (x * x + 1) ** 2.5, {"pow_ts_backward"}),
    "mul_broadcast": (lambda t, x, y: x * y, {"mul_backward0", "mul_backward1"}),
    "div": (lambda t, x, y: x / (y * y + 1), {"div_backward0"}),
    "erf": (lambda t, x, y: t.erf(x), {"erf_backward"}),
    "gelu": (lambda t, x, y: t.nn.functional.gelu(x), {"gelu_backward"}),
    "gelu_tanh": (lambda t, x, y: t.nn.functional.gelu(x, approximate="tanh"), {"gelu_tanh_backward"}),
    "softplus": (lambda t, x, y: t.nn.functional.softplus(x, beta=2.0, threshold=1.0), {"softplus_backward"}),
    "silu": (lambda t, x, y: t.nn.functional.silu(x), {"silu_backward"}),
    "relu": (lambda t, x, y: t.relu(x) * x, {"relu_backward"}),
    "atan_reciprocal": (lambda t, x, y: x.atan() + (x * x + 1).reciprocal(), {"atan_backward", "reciprocal_backward"}),
}


def _derivatives(lib, name, xs, ys):
    x = lib.tensor(xs, requires_grad=True)
    y = lib.tensor(ys, requires_grad=True)
    rng = np.random.default_rng(3)
    fn, _ = CASES[name]
    out = fn(lib, x, y)
    seeds = [lib.tensor(rng.standard_normal(out.shape)) for _ in range(3)]
    results = []
    total = (out * seeds[0]).sum()
    for k in range(3):
        got = lib.autograd.grad(total, (x, y), create_graph=k < 2, allow_unused=True)
        results.append([None if g is None else g.detach().numpy().copy() for g in got])
        parts = [(g * lib.tensor(rng.standard_normal(g.shape))).sum() for g in got
                 if g is not None and g.requires_grad]
        if k == 2 or not parts:
            break
        total = sum(parts[1:], parts[0])
    return results


@pytest.mark.parametrize("name", sorted(CASES))
def test_three_orders_through_derived_rows_match_torch(name):
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((3, 4)) * 1.5
    ys = rng.standard_normal(4)
    want = _derivatives(torch, name, xs, ys)
    got = _derivatives(tapegrad, name, xs, ys)
    assert len(got) == len(want)
    for order, (gs, ws) in enumerate(zip(got, want), 1):
        for g, w in zip(gs, ws):
            if w is None or g is None:  # (one side has no path: the other's must then be zero)
                assert not np.any(g if w is None else w), f"order {order}"
                continue
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, err_msg=f"order {order}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_gradient_records_one_derived_row_per_derivative(name):
    saved, tape = tape_mod._local.tape, tape_mod.Tape()
    tape_mod._local.tape = tape
    try:
        x = tapegrad.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
        y = tapegrad.tensor(np.linspace(0.5, 1, 4), requires_grad=True)
        fn, derived = CASES[name]
        g = tapegrad.autograd.grad(fn(tapegrad, x, y).sum(), (x, y), create_graph=True, allow_unused=True)
        names = {registry.OPS[int(o)].name for o in tape.op[:tape.n]}
        assert derived <= names, names
        assert g[0].requires_grad
    finally:
        tape_mod._local.tape = saved


def test_a_derived_rows_node_has_torchs_name():
    for lib in (torch, tapegrad):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        g, = lib.autograd.grad(x.tanh().sum(), x, create_graph=True)
        assert type(g.grad_fn).__name__ == "TanhBackwardBackward0"
