"""Shared machinery of the op tests: input specs, the runner that compares tapegrad with torch (values,
dtypes, grad_fn names, gradients, second derivatives) and with central finite differences."""
import numpy as np
import torch

import tapegrad

LIBS = {"torch": torch, "tapegrad": tapegrad}
RTOL = {"float32": 2e-5, "float64": 1e-9}


# -- input specs --------------------------------------------------------------------------------------------
class A:
    """A float input: shape, value domain, whether it requires grad."""

    def __init__(self, shape, domain="any", grad=True):
        self.shape, self.domain, self.grad = tuple(shape), domain, grad

    def array(self, rng, dtype):
        n = self.shape
        lo_hi = {"any": None, "pos": (0.5, 2.0), "unit": (-0.9, 0.9), "prob": (0.05, 0.95), "big": (-30, 30),
                 "gt1": (1.2, 3.0), "small": (-0.5, 0.5)}[self.domain]
        if lo_hi is None:
            a = rng.standard_normal(n)
        else:
            a = rng.uniform(*lo_hi, n)
        return np.asarray(a, dtype=dtype)


class I:
    """An integer input (int64 unless dtype given), values in [low, high)."""

    def __init__(self, shape, high, low=0, dtype=np.int64):
        self.shape, self.high, self.low, self.dtype = tuple(shape), high, low, dtype
        self.grad = False

    def array(self, rng, dtype):
        return rng.integers(self.low, self.high, self.shape).astype(self.dtype)


class B:
    """A bool input."""

    def __init__(self, shape):
        self.shape, self.grad = tuple(shape), False

    def array(self, rng, dtype):
        return rng.random(self.shape) < 0.5


class V:
    """A literal array input (float ones take the case's dtype)."""

    def __init__(self, value, grad=True):
        self.value = np.asarray(value)
        self.grad = grad and self.value.dtype.kind == "f"

    def array(self, rng, dtype):
        return self.value.astype(dtype) if self.value.dtype.kind == "f" else self.value.copy()


class Case:
    """One op call: `fn(lib, *tensors)`, or the op `name` called as lib.name, a Tensor method, and
    nn.functional.name (as `paths` says) with `kwargs`."""

    def __init__(self, name, inputs, kwargs=None, fn=None, paths=("top",), fd=True, gg=True,
                 dtypes=("float32", "float64"), id=None, rtol=None, grad_fn=True, seed=0):
        self.name, self.inputs, self.kwargs, self.fn = name, inputs, kwargs or {}, fn
        self.paths = ("fn",) if fn is not None else paths
        self.fd, self.gg, self.dtypes, self.id, self.rtol = fd, gg, dtypes, id, rtol
        self.grad_fn, self.seed = grad_fn, seed

    def call(self, lib, path, xs):
        if path == "fn":
            return self.fn(lib, *xs)
        if path == "top":
            return getattr(lib, self.name)(*xs, **self.kwargs)
        if path == "method":
            return getattr(xs[0], self.name)(*xs[1:], **self.kwargs)
        if path == "F":
            return getattr(lib.nn.functional, self.name)(*xs, **self.kwargs)
        raise ValueError(path)


def params(cases):
    """pytest params: (case, path, dtype) for each case, path and dtype, with readable ids."""
    import pytest
    out, seen = [], {}
    for c in cases:
        base = f"{c.name}-{c.id}" if c.id else c.name
        k = seen[base] = seen.get(base, -1) + 1
        base = base if k == 0 else f"{base}#{k}"
        for path in c.paths:
            for dt in c.dtypes:
                out.append(pytest.param(c, path, dt, id=f"{base}-{path}-{dt}"))
    return out


# -- running ------------------------------------------------------------------------------------------------
def arrays(case, dtype):
    rng = np.random.default_rng(1234 + case.seed)
    return [s.array(rng, dtype) for s in case.inputs]


def tensors(lib, case, arrs):
    out = []
    for spec, a in zip(case.inputs, arrs):
        t = lib.tensor(a.copy())
        if spec.grad:
            t.requires_grad_(True)
        out.append(t)
    return out


def flat_outputs(out):
    """The tensors of an op's result (a tensor, or a tuple of them), in order."""
    if isinstance(out, (tuple, list)):
        return [o for item in out for o in flat_outputs(item)]
    return [out]


def to_np(t):
    if isinstance(t, (bool, int, float)):
        return np.asarray(t)
    try:
        return np.asarray(t.detach().numpy())
    except RuntimeError:  # torch's ZeroTensor (a gradient known to be zero)
        return np.zeros(tuple(t.shape), str(t.dtype).replace("torch.", ""))


def assert_close(got, want, dtype, rtol=None, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != torch {want.shape}"
    if want.dtype.kind in "biu":
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != torch {want.dtype}"
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    rtol = rtol or RTOL[dtype]
    scale = float(np.max(np.abs(want[np.isfinite(want)]))) if np.isfinite(want).any() else 1.0
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=rtol * max(scale, 1.0), equal_nan=True, err_msg=what)


def seeds_for(outs, rng):
    return [rng.standard_normal(o.shape).astype(to_np(o).dtype) for o in outs]


def run_both(case, path, dtype, intermediate=False):
    """Run the case in both libraries; returns per library (inputs, outputs). intermediate: the op takes
    clones of the leaves, rows that only its own rule can keep (the leaves' values are always kept)."""
    arrs = arrays(case, dtype)
    res = {}
    for name, lib in LIBS.items():
        xs = tensors(lib, case, arrs)
        args = [x.clone() if x.requires_grad else x for x in xs] if intermediate else xs
        res[name] = (xs, case.call(lib, path, args))
    return arrs, res


def differentiable(outs):
    return [o for o in outs if hasattr(o, "requires_grad") and o.requires_grad]


def grads(lib, outs, xs, seeds, create_graph=False):
    wrt = [x for x in xs if x.requires_grad]
    if not outs or not wrt:
        return []
    gs = lib.autograd.grad(outs, wrt, [lib.tensor(s) for s in seeds], allow_unused=True,
                           create_graph=create_graph)
    return list(gs)


def check_case(case, path, dtype, intermediate=False):
    arrs, res = run_both(case, path, dtype, intermediate)
    (txs, tout), (gxs, gout) = res["torch"], res["tapegrad"]
    touts, gouts = flat_outputs(tout), flat_outputs(gout)
    assert len(touts) == len(gouts), f"{len(gouts)} outputs, torch has {len(touts)}"
    for i, (t, g) in enumerate(zip(touts, gouts)):
        assert_close(to_np(g), to_np(t), dtype, case.rtol, what=f"output {i}")
        if isinstance(t, torch.Tensor):
            assert str(g.dtype) == str(t.dtype), f"output {i}: dtype {g.dtype} != torch {t.dtype}"
            assert g.requires_grad == t.requires_grad, f"output {i}: requires_grad {g.requires_grad}"
            if case.grad_fn and t.grad_fn is not None:
                assert type(g.grad_fn).__name__ == type(t.grad_fn).__name__, (
                    f"grad_fn {type(g.grad_fn).__name__} != torch {type(t.grad_fn).__name__}")
    tdiff, gdiff = differentiable(touts), differentiable(gouts)
    if not tdiff:
        return
    rng = np.random.default_rng(99)
    seeds = seeds_for(tdiff, rng)
    tg = grads(torch, tdiff, txs, seeds)
    gg = grads(tapegrad, gdiff, gxs, seeds)
    for i, (a, b) in enumerate(zip(gg, tg)):
        want = np.zeros_like(arrs[0]) if b is None else to_np(b)
        got = None if a is None else to_np(a)
        if b is None:
            assert got is None or not np.any(got), f"grad {i}: torch has none"
            continue
        assert got is not None, f"grad {i} is None, torch's is not"
        assert_close(got, want, dtype, case.rtol and 10 * case.rtol, what=f"grad {i}")


def numeric_grads(case, path, arrs, seeds, h=1e-6):
    """Central differences of sum(out * seed) with respect to each float input (tapegrad, float64)."""
    def f(values):
        with tapegrad.no_grad():
            xs = [tapegrad.tensor(v) for v in values]
            outs = [o for o in flat_outputs(case.call(tapegrad, path, xs)) if to_np(o).dtype.kind == "f"]
            return float(sum(np.sum(to_np(o) * s) for o, s in zip(outs, seeds)))
    out = []
    for k, spec in enumerate(case.inputs):
        if not spec.grad:
            continue
        if arrs[k].size == 0:
            out.append(np.zeros_like(arrs[k]))
            continue
        g = np.zeros_like(arrs[k])
        for i in range(arrs[k].size):
            plus = [a.copy() for a in arrs]
            minus = [a.copy() for a in arrs]
            plus[k].reshape(-1)[i] += h
            minus[k].reshape(-1)[i] -= h
            g.reshape(-1)[i] = (f(plus) - f(minus)) / (2 * h)
        out.append(g)
    return out


def check_finite_differences(case, path):
    arrs = arrays(case, "float64")
    xs = tensors(tapegrad, case, arrs)
    outs = differentiable(flat_outputs(case.call(tapegrad, path, xs)))
    if not outs:
        return
    seeds = seeds_for(outs, np.random.default_rng(7))
    analytic = grads(tapegrad, outs, xs, seeds)
    numeric = numeric_grads(case, path, arrs, seeds)
    for i, (a, n) in enumerate(zip(analytic, numeric)):
        a = np.zeros_like(n) if a is None else to_np(a)
        np.testing.assert_allclose(a, n, rtol=1e-5, atol=1e-6 * max(1.0, float(np.max(np.abs(n), initial=0))),
                                   err_msg=f"grad {i} vs finite differences")


def check_second_order(case, path, intermediate=False):
    """grad(create_graph=True), then the gradient of sum(grad * seed2): tapegrad against torch."""
    arrs, res = run_both(case, path, "float64", intermediate)
    (txs, tout), (gxs, gout) = res["torch"], res["tapegrad"]
    tdiff, gdiff = differentiable(flat_outputs(tout)), differentiable(flat_outputs(gout))
    if not tdiff:
        return
    seeds = seeds_for(tdiff, np.random.default_rng(5))
    tg = grads(torch, tdiff, txs, seeds, create_graph=True)
    gg = grads(tapegrad, gdiff, gxs, seeds, create_graph=True)
    for i, (a, b) in enumerate(zip(gg, tg)):  # the recorded first derivative's value
        if a is not None and b is not None:
            assert_close(to_np(a), to_np(b), "float64", 1e-7, what=f"create_graph grad {i}")
    rng = np.random.default_rng(6)
    s2 = [rng.standard_normal(tuple(x.shape)) for x in txs if x.requires_grad]

    def total(lib, gs):
        terms = [(g * lib.tensor(s)).sum() for g, s in zip(gs, s2) if g is not None and g.requires_grad]
        return sum(terms[1:], terms[0]) if terms else None
    tt, gt = total(torch, tg), total(tapegrad, gg)
    if tt is None:
        if gt is not None:
            for g in grads(tapegrad, [gt], gxs, [np.ones(())]):
                assert g is None or not np.any(to_np(g)), "second derivative should be zero"
        return
    want = grads(torch, [tt], txs, [np.ones(())])
    if gt is None:  # tapegrad's gradient does not depend on the inputs: torch's second derivative must be 0
        for i, b in enumerate(want):
            assert b is None or not np.any(to_np(b)), f"second grad {i}: tapegrad's gradient is constant"
        return
    got = grads(tapegrad, [gt], gxs, [np.ones(())])
    for i, (a, b) in enumerate(zip(got, want)):
        if b is None:
            assert a is None or not np.any(to_np(a)), f"second grad {i}: torch has none"
            continue
        assert a is not None, f"second grad {i} is None"
        assert_close(to_np(a), to_np(b), "float64", 1e-7, what=f"second grad {i}")


def check_error(fn, key=None):
    """fn(lib) raises the same exception type in both libraries, and the messages share the key phrase
    (by default tapegrad's message must equal torch's first line)."""
    import pytest
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(Exception) as got:
        fn(tapegrad)
    assert type(got.value).__name__ == type(want.value).__name__, (
        f"tapegrad raised {type(got.value).__name__}: {got.value}; torch raised {type(want.value).__name__}: "
        f"{want.value}")
    tmsg, gmsg = str(want.value), str(got.value)
    if key is None:
        key = tmsg.splitlines()[0].strip() if tmsg.strip() else ""
    assert key in tmsg, f"key phrase {key!r} not in torch's message {tmsg!r}"
    assert key in gmsg, f"key phrase {key!r} not in tapegrad's message {gmsg!r}"
