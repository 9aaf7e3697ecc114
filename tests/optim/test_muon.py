"""torch.optim.Muon against torch 2.13: its Newton-Schulz iteration in emulated bfloat16, several steps of every
option, state_dicts both ways, and torch's errors.

torch's bfloat16 products sum in float32 in an order that depends on the CPU (AVX512-BF16 dot products or
not), so results are compared to a few bfloat16 ulps, and on average to a fraction of one: the iteration
run in float32 without bfloat16 rounding misses that average by 2-20x (measured: 0.48-2.3 ulps)."""
import math

import numpy as np
import pytest
import torch
from torch.optim._muon import _zeropower_via_newtonschulz as torch_newtonschulz

import tapegrad as tg
from tapegrad.optim.muon import _bfloat16, _zeropower_via_newtonschulz
# (this directory is on sys.path)
from test_more_optimizers import _set_grads, _to_lib, same_error

COEFFICIENTS = (3.4445, -4.7750, 2.0315)
SHAPES = [(8, 4), (4, 8), (6, 6)]


def test_bfloat16_rounding_is_torchs():
    rng = np.random.default_rng(0)
    for x in (rng.standard_normal(20000).astype(np.float32), rng.standard_normal(20000) * 1e3,
              np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-40, 1.00390625, 1.01171875],
                       np.float32)):
        want = torch.tensor(x).bfloat16().float().numpy()
        np.testing.assert_array_equal(_bfloat16(x), want)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (16, 16), (64, 32), (32, 128), (100, 60)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_newton_schulz_matches_torchs_bfloat16_iteration(shape, dtype):
    g = np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)
    got = _zeropower_via_newtonschulz(g, COEFFICIENTS, 5, 1e-7)
    want = torch_newtonschulz(torch.tensor(g), COEFFICIENTS, 5, 1e-7).float().numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(_bfloat16(got), got)  # bfloat16 values
    ulp = 2.0 ** (math.floor(math.log2(float(np.abs(want).max()))) - 7)
    diff = np.abs(got - want)
    assert diff.max() <= 3 * ulp, diff.max() / ulp
    assert diff.mean() <= 0.2 * ulp, diff.mean() / ulp


OPTIONS = {
    "default": {},
    "plain-momentum": {"lr": 0.05, "nesterov": False, "momentum": 0.9},
    "match-rms-adamw": {"lr": 0.02, "adjust_lr_fn": "match_rms_adamw", "weight_decay": 0.01},
    "original-3-steps": {"lr": 0.02, "adjust_lr_fn": "original", "ns_steps": 3, "weight_decay": 0.0},
    "coefficients-eps": {"lr": 0.02, "ns_coefficients": (2.0, -1.5, 0.5), "eps": 1e-3, "momentum": 0.5},
}


def _params(lib, dtype):
    rng = np.random.default_rng(0)
    return [lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(dtype))) for s in SHAPES]


def _steps(lib, opt, params, k, seed=1):
    rng = np.random.default_rng(seed)
    for i in range(k):
        _set_grads(lib, params, rng, skip=1 if i == 2 else None)  # a parameter without a gradient is left alone
        opt.step()


def _tolerance(opt, k):
    """k steps of bfloat16 differences of 2 ulps (of 1: the orthogonalised update is at most about 1)."""
    group = opt.param_groups[0]
    lr = float(group["lr"]) * max(math.sqrt(max(1, r / c)) if group["adjust_lr_fn"] != "match_rms_adamw"
                                  else 0.2 * math.sqrt(max(r, c)) for r, c in SHAPES)
    return k * lr * 2.0 ** -6


@pytest.mark.parametrize("name", list(OPTIONS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_steps_match_torch(name, dtype):
    pa, pb = _params(tg, dtype), _params(torch, dtype)
    oa, ob = tg.optim.Muon(pa, **OPTIONS[name]), torch.optim.Muon(pb, **OPTIONS[name])
    _steps(tg, oa, pa, 6)
    _steps(torch, ob, pb, 6)
    atol = _tolerance(ob, 6)
    start = _params(torch, dtype)
    assert max(float((b.detach() - s.detach()).abs().max()) for b, s in zip(pb, start)) > 20 * atol
    for a, b in zip(pa, pb):
        assert a.dtype == getattr(tg, dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=0, atol=atol, err_msg=name)
    sa, sb = oa.state_dict(), ob.state_dict()
    assert sa["param_groups"] == sb["param_groups"]
    assert list(sa["state"]) == list(sb["state"])
    for k, st in sb["state"].items():
        assert list(sa["state"][k]) == list(st) == ["momentum_buffer"]
        va, vb = sa["state"][k]["momentum_buffer"].numpy(), st["momentum_buffer"].numpy()
        assert va.dtype == vb.dtype
        np.testing.assert_allclose(va, vb, rtol=0, atol=10 * atol)


@pytest.mark.parametrize("direction", ["torch-to-tapegrad", "tapegrad-to-torch"])
def test_state_dict_crosses_between_the_libraries(direction):
    source, target = (torch, tg) if direction == "torch-to-tapegrad" else (tg, torch)
    options = OPTIONS["plain-momentum"]
    ps, pt = _params(source, "float32"), _params(target, "float32")
    os_ = source.optim.Muon(ps, **options)
    _steps(source, os_, ps, 3)
    for a, b in zip(pt, ps):
        a.data = target.tensor(b.detach().numpy().copy())
    ot = target.optim.Muon(pt, **options)
    ot.load_state_dict(_to_lib(target, os_.state_dict()))
    _steps(source, os_, ps, 3, seed=7)
    _steps(target, ot, pt, 3, seed=7)
    for a, b in zip(ps, pt):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=0, atol=_tolerance(os_, 6))


def test_repr_signature_and_defaults_match_torch():
    import inspect
    a, b = tg.optim.Muon(_params(tg, "float32")), torch.optim.Muon(_params(torch, "float32"))
    assert repr(a) == repr(b)
    assert a.defaults == b.defaults
    assert [(p.name, p.default) for p in inspect.signature(tg.optim.Muon).parameters.values()] == \
        [(p.name, p.default) for p in inspect.signature(torch.optim.Muon).parameters.values()]


def _p(L, *shape):
    return [L.nn.Parameter(L.ones(*shape))]


@pytest.mark.parametrize("make", [
    lambda L: L.optim.Muon(_p(L, 2, 2), lr=-1), lambda L: L.optim.Muon(_p(L, 2, 2), momentum=-0.5),
    lambda L: L.optim.Muon(_p(L, 2, 2), weight_decay=-1), lambda L: L.optim.Muon(_p(L, 2, 2), adjust_lr_fn="max"),
    lambda L: L.optim.Muon(_p(L, 2, 2), lr=L.tensor([0.1, 0.2])), lambda L: L.optim.Muon(_p(L, 3)),
    lambda L: L.optim.Muon(_p(L, 2, 2, 2)), lambda L: L.optim.Muon([]),
])
def test_constructor_errors_match_torch(make):
    same_error(make)


@pytest.mark.parametrize("options", [{"ns_steps": 100}, {"ns_coefficients": (1.0, 2.0)}])
def test_step_errors_match_torch(options):
    def run(L):
        ps = _p(L, 3, 2)
        opt = L.optim.Muon(ps, **options)
        ps[0].grad = L.ones(3, 2)
        opt.step()
    same_error(run)
