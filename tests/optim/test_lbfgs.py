"""LBFGS against torch: the closure protocol, history, max_iter / max_eval, the tolerances, the strong-Wolfe
line search, and state_dicts that cross between the libraries."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

RTOL = {"float32": 1e-6, "float64": 1e-12}
rng0 = np.random.default_rng(5)
A = rng0.standard_normal((30, 10))
B = rng0.standard_normal(30)


def _params(lib, dtype):
    rng = np.random.default_rng(0)
    return [lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(dtype))) for s in [(2, 3), (4,)]]


def _numpy_closure(lib, opt, params, evals):
    """loss = sum log cosh(A x - b) + 0.05 |x|^2 with its gradient computed in NumPy from the parameter values,
    so both libraries see the same numbers and only the optimizer's arithmetic is compared."""
    def closure():
        opt.zero_grad()
        x = np.concatenate([p.detach().numpy().reshape(-1) for p in params]).astype(np.float64)
        r = A @ x - B
        loss = np.sum(np.log(np.cosh(r))) + 0.05 * x @ x
        g = A.T @ np.tanh(r) + 0.1 * x
        offset = 0
        dtype = params[0].detach().numpy().dtype
        for p in params:
            n = p.numel()
            p.grad = lib.tensor(g[offset:offset + n].reshape(tuple(p.shape)).astype(dtype))
            offset += n
        evals.append(loss)
        return lib.tensor(np.asarray(loss, dtype))
    return closure


def _run(lib, dtype, kwargs, steps=3):
    params = _params(lib, dtype)
    opt = lib.optim.LBFGS(params, **kwargs)
    evals = []
    closure = _numpy_closure(lib, opt, params, evals)
    losses = [float(opt.step(closure)) for _ in range(steps)]
    return params, opt, losses, evals


CASES = [
    {},
    {"line_search_fn": "strong_wolfe"},
    {"lr": 0.3, "max_iter": 5, "history_size": 2},
    {"line_search_fn": "strong_wolfe", "history_size": 3, "max_iter": 6, "max_eval": 7},
    {"tolerance_grad": 1e-1},
    {"line_search_fn": "strong_wolfe", "tolerance_change": 1e-3},
    {"max_iter": 1},
    {"lr": 2.0, "max_iter": 4, "line_search_fn": "strong_wolfe"},
]


# LBFGS's state near convergence (the direction d, the history y = g' - g and s, the al products) is made of
# differences of O(1) gradients and iterates, so its rounding is absolute at the scale of the initial
# gradient (about 10 here), not relative to its own small values
STATE_ATOL = {"float32": 1e-5, "float64": 1e-11}
# al = (s . q) / (y . s), ro = 1 / (y . s) and H_diag = (y . s) / (y . y) are ratios of such small dot products:
# in float32 they agree to a few parts in a thousand
RATIO_RTOL = {"float32": 5e-3, "float64": 1e-8}


def _state_close(sa, sb, dtype):
    assert list(sa) == list(sb)
    for key, vb in sb.items():
        va = sa[key]
        if isinstance(vb, list):
            assert len(va) == len(vb), key
            for x, y in zip(va, vb):
                assert (x is None) == (y is None), key
                if y is not None:
                    assert isinstance(x, tg.Tensor) and str(x.dtype) == str(y.dtype), key
                    if key in ("al", "ro"):
                        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=RATIO_RTOL[dtype], atol=STATE_ATOL[dtype],
                                                   err_msg=key)
                    else:
                        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=100 * RTOL[dtype],
                                                   atol=STATE_ATOL[dtype], err_msg=key)
        elif isinstance(vb, torch.Tensor):
            assert isinstance(va, tg.Tensor) and str(va.dtype) == str(vb.dtype), key
            if key == "H_diag":
                np.testing.assert_allclose(va.numpy(), vb.numpy(), rtol=RATIO_RTOL[dtype], err_msg=key)
                continue
            np.testing.assert_allclose(va.numpy(), vb.numpy(), rtol=100 * RTOL[dtype], atol=STATE_ATOL[dtype],
                                       err_msg=key)
        elif isinstance(vb, float):
            assert va == pytest.approx(vb, rel=RTOL[dtype]), key
        else:
            assert va == vb, key


@pytest.mark.parametrize("kwargs", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lbfgs_matches_torch(kwargs, dtype):
    pa, oa, la, ea = _run(tg, dtype, kwargs)
    pb, ob, lb, eb = _run(torch, dtype, kwargs)
    assert len(ea) == len(eb)                           # the same number of closure evaluations
    np.testing.assert_allclose(la, lb, rtol=RTOL[dtype])
    for a, b in zip(pa, pb):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=RTOL[dtype],
                                   atol=RTOL[dtype] * float(b.detach().abs().max()))
    assert min(ea) < ea[0] - 1e-2                        # it optimized
    _state_close(oa.state[pa[0]], ob.state[pb[0]], dtype)
    sa, sb = oa.state_dict(), ob.state_dict()
    assert sa["param_groups"] == sb["param_groups"] and list(sa["state"]) == list(sb["state"]) == [0]


@pytest.mark.parametrize("direction", ["torch-to-tapegrad", "tapegrad-to-torch"])
@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_state_dict_crosses_between_the_libraries(direction, line_search_fn):
    source, target = (torch, tg) if direction == "torch-to-tapegrad" else (tg, torch)
    kwargs = {"history_size": 4, "max_iter": 6, "line_search_fn": line_search_fn}
    ps, os_, _, _ = _run(source, "float64", kwargs, steps=2)
    pt = [target.nn.Parameter(target.tensor(p.detach().numpy().copy())) for p in ps]
    ot = target.optim.LBFGS(pt, **kwargs)

    def carry(v):
        if isinstance(v, dict):
            return {k: carry(x) for k, x in v.items()}
        if isinstance(v, list):
            return [carry(x) for x in v]
        if isinstance(v, (tg.Tensor, torch.Tensor)):
            return target.tensor(np.array(v.detach().numpy(), copy=True))
        return v

    ot.load_state_dict(carry(os_.state_dict()))
    es, et = [], []
    cs, ct = _numpy_closure(source, os_, ps, es), _numpy_closure(target, ot, pt, et)
    for _ in range(2):
        os_.step(cs)
        ot.step(ct)
    assert len(es) == len(et)
    np.testing.assert_allclose(et, es, rtol=1e-12)
    for a, b in zip(ps, pt):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-12, atol=1e-13)


def test_lbfgs_through_autograd_matches_torch():
    """A closure that runs forward and backward (the usual script) on a small regression."""
    def run(lib):
        torch.manual_seed(0)
        ref = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1)).double()
        if lib is torch:
            model = ref
        else:
            model = tg.nn.Sequential(tg.nn.Linear(3, 5), tg.nn.Tanh(), tg.nn.Linear(5, 1)).double()
            model.load_state_dict({k: tg.tensor(v.numpy()) for k, v in ref.state_dict().items()})
        rng = np.random.default_rng(1)
        x = lib.tensor(rng.standard_normal((20, 3)))
        y = lib.tensor(np.sin(rng.standard_normal((20, 1))))
        opt = lib.optim.LBFGS(model.parameters(), lr=0.8, line_search_fn="strong_wolfe")
        losses = []

        def closure():
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss
        for _ in range(3):
            losses.append(opt.step(closure).item())
        return np.array(losses)
    a, b = run(tg), run(torch)
    np.testing.assert_allclose(a, b, rtol=1e-9)
    assert a[-1] < 0.5 * a[0]


def test_lbfgs_errors_match_torch():
    def err(fn):
        out = []
        for lib in (tg, torch):
            try:
                fn(lib)
                out.append(None)
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e)))
        assert out[0] == out[1] and out[1] is not None

    def bad_line_search(lib):
        p = _params(lib, "float64")
        opt = lib.optim.LBFGS(p, line_search_fn="wolfe")
        opt.step(_numpy_closure(lib, opt, p, []))

    def no_closure(lib):
        lib.optim.LBFGS(_params(lib, "float64")).step()

    err(bad_line_search)
    err(no_closure)
    err(lambda lib: lib.optim.LBFGS([{"params": _params(lib, "float64")[:1]},
                                     {"params": _params(lib, "float64")[1:]}]))


def test_lbfgs_stops_at_once_when_already_optimal():
    for lib in (tg, torch):
        p = lib.nn.Parameter(lib.zeros(3))
        opt = lib.optim.LBFGS([p])
        calls = []

        def closure():
            calls.append(1)
            p.grad = lib.zeros(3)
            return lib.tensor(1.0)
        opt.step(closure)
        assert len(calls) == 1 and p.tolist() == [0.0, 0.0, 0.0]
        assert opt.state[p] == {"func_evals": 1, "n_iter": 0}


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_step_warns_nothing(line_search_fn):
    # torch's step runs under no_grad, so reading the closure's loss as a number is not the "requires_grad to a
    # scalar" case it warns about (pytorch/examples' time_sequence_prediction prints no warning)
    w = tg.nn.Parameter(tg.tensor([1.0, 2.0]))
    opt = tg.optim.LBFGS([w], lr=0.8, max_iter=4, line_search_fn=line_search_fn)

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = opt.step(closure)
    assert loss.requires_grad and tg.is_grad_enabled()
