"""Second and third derivatives of every differentiable op in the registry.

For each op, F(x) = sum(w * op(x) ** 3) (the cube keeps linear ops' higher derivatives non-zero), and in
float64:
  * the gradient recorded under create_graph equals the compiled one;
  * the Hessian-vector product H v equals central differences of the gradient along v;
  * the third derivative T[v, u] = d/dx ((H v) . u) equals central differences of H v along u;
  * all three equal torch's.
Elementwise ops are called straight from their registry entry (so every new one is covered, on inputs
in its domain); the others through their public front-end, and a coverage test fails when a registry op
is exercised by no case.
"""
import importlib
import math
import pathlib

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tapegrad
from tapegrad import registry
from tapegrad.create_graph import DERIVED_NAMES
from tapegrad import tape as tape_mod
from tapegrad.ops._common import _record
from tapegrad.ops import linalg

GRID = np.array([-1.3, -0.7, -0.3, 0.2, 0.6, 1.15, 1.4])  # clear of 0, +-0.5 and +-1, where ops have kinks
B_GRID = np.array([0.6, -1.3, 1.4, -0.3, 1.15, 0.2, -0.7])  # never equal to GRID elementwise (max, min)
POSITIVE = np.array([0.35, 0.55, 0.8, 1.1, 1.45, 1.7, 1.9])
UNIT = np.array([0.15, 0.3, 0.45, 0.55, 0.65, 0.75, 0.85])
ABOVE_ONE = np.array([1.2, 1.35, 1.5, 1.7, 1.9, 2.2, 2.4])
C = 1.7  # the scalar operand of the _ts / _st variants

DOMAIN = {  # inputs where the op is smooth; ops not listed are probed (see _domain)
    "log": POSITIVE, "sqrt": POSITIVE, "rsqrt": POSITIVE, "log2": POSITIVE, "log10": POSITIVE,
    "asin": UNIT - 0.5, "acos": UNIT - 0.5, "atanh": UNIT - 0.5, "erfinv": UNIT - 0.5, "logit": UNIT,
    "acosh": ABOVE_ONE, "lgamma": POSITIVE, "digamma": POSITIVE, "pow_ts": POSITIVE,
}
B_DOMAIN = {"pow": B_GRID, "div": B_GRID}
A_DOMAIN = {"pow": POSITIVE}
ATTRS = {  # (c, c2) of ops with scalar attributes
    "leaky_relu": (0.1, 0.0), "elu": (1.3, 0.0), "hardtanh": (-1.0, 1.0), "clamp": (-0.5, 0.8),
    "softplus": (1.5, 2.0), "clamp_min": (0.3, 0.0), "clamp_max": (0.3, 0.0), "round_decimals": (0.0, 0.0),
    "celu": (1.3, 0.0), "hardshrink": (0.4, 0.0), "softshrink": (0.4, 0.0), "threshold": (0.4, -2.0),
}
TORCH_UNARY = {  # torch's op for a registry name, called (x, c, c2); others are found by name
    "copy": lambda x, c, c2: torch.clone(x),
    "gelu": lambda x, c, c2: TF.gelu(x),
    "gelu_tanh": lambda x, c, c2: TF.gelu(x, approximate="tanh"),
    "silu": lambda x, c, c2: TF.silu(x),
    "softplus": lambda x, c, c2: TF.softplus(x, c, c2),
    "leaky_relu": lambda x, c, c2: TF.leaky_relu(x, c),
    "elu": lambda x, c, c2: TF.elu(x, c),
    "celu": lambda x, c, c2: TF.celu(x, c),
    "hardtanh": lambda x, c, c2: TF.hardtanh(x, c, c2),
    "hardshrink": lambda x, c, c2: TF.hardshrink(x, c),
    "softshrink": lambda x, c, c2: TF.softshrink(x, c),
    "threshold": lambda x, c, c2: TF.threshold(x, c, c2),
    "clamp": lambda x, c, c2: torch.clamp(x, c, c2),
    "clamp_min": lambda x, c, c2: torch.clamp_min(x, c),
    "clamp_max": lambda x, c, c2: torch.clamp_max(x, c),
    "_div_scalar": lambda x, c, c2: x / c,
    "_mul_scalar": lambda x, c, c2: x * c,
    "log_sigmoid": lambda x, c, c2: TF.logsigmoid(x),
    "round_decimals": lambda x, c, c2: torch.round(x, decimals=int(c)),
}


def _torch_named(name):
    for space in (torch, torch.special, TF):
        fn = getattr(space, name, None)
        if callable(fn):
            return fn
    return None


def _torch_elementwise(op):
    """torch's version of a registry elementwise op, or None when it has no obvious counterpart."""
    name = op.name
    if op.kind == registry.K_BINARY:
        fn = _torch_named(name)
        return None if fn is None else (lambda a, b: fn(a, b))
    if name in TORCH_UNARY:
        return TORCH_UNARY[name]
    for suffix, flip in (("_ts", False), ("_st", True)):
        if name.endswith(suffix) and name[:-3] in registry.BY_NAME and \
                registry.BY_NAME[name[:-3]].kind == registry.K_BINARY:
            fn = _torch_named(name[:-3])
            if fn is None:
                return None
            const = lambda: torch.tensor(C, dtype=torch.float64)  # noqa: E731
            return (lambda x, c, c2: fn(const(), x)) if flip else (lambda x, c, c2: fn(x, const()))
    if any("c" in _names(d) for d in op.derivs):
        return None  # an attribute whose meaning only the table knows
    fn = _torch_named(name)
    return None if fn is None else (lambda x, c, c2: fn(x))


def _names(expr):
    import re
    return set(re.findall(r"\b[a-z_][a-z0-9_]*\b", expr))


def _attrs(op):
    if op.name.endswith(("_ts", "_st")):
        return C, 0.0
    return ATTRS.get(op.name, (0.7, 1.9))  # an unlisted op's attributes: non-zero, clear of the grid points


def _call_unary(op, x, c, c2):
    return _record(op, np.asarray(op.forward(x._data, c, c2)), (x,), c, c2)


def _call_binary(op, a, b):
    return _record(op, np.asarray(op.forward(a._data, b._data)), (a, b))


def _domain(op, table, default):
    """The op's inputs: from the table, else the first candidate where the op is finite (so a new op
    is tested inside its domain without a table entry)."""
    if op.name in table:
        return table[op.name]
    for candidate in (default, UNIT, POSITIVE, ABOVE_ONE):
        with np.errstate(all="ignore"):
            if op.kind == registry.K_BINARY:
                y = op.forward(candidate, B_DOMAIN.get(op.name, B_GRID))
            else:
                y = op.forward(candidate, *_attrs(op))
        if np.all(np.isfinite(y)):
            return candidate
    return default


# -- the derivatives, by either library ------------------------------------------------------------------------------
def _as_np(t, like):
    return np.zeros_like(like) if t is None else t.detach().numpy().astype(np.float64)


def derivatives(lib, fn, xs, w, v, u):
    """Gradient (under create_graph), H v, and d/dx((H v).u) of F = sum(w * fn(xs) ** 3)."""
    ts = [lib.tensor(x, dtype=lib.float64, requires_grad=True) for x in xs]
    out = fn(*ts)
    F = (lib.tensor(w, dtype=lib.float64) * out ** 3).sum()
    g = lib.autograd.grad(F, ts, create_graph=True, allow_unused=True)
    gv = sum((gi * lib.tensor(vi, dtype=lib.float64)).sum() for gi, vi in zip(g, v) if gi is not None)
    h = (None,) * len(ts)
    if isinstance(gv, lib.Tensor) and gv.requires_grad:
        h = lib.autograd.grad(gv, ts, create_graph=True, allow_unused=True)
    hu = sum((hi * lib.tensor(ui, dtype=lib.float64)).sum() for hi, ui in zip(h, u) if hi is not None)
    t = (None,) * len(ts)
    if isinstance(hu, lib.Tensor) and hu.requires_grad:
        t = lib.autograd.grad(hu, ts, allow_unused=True)
    return [[_as_np(a, x) for a, x in zip(r, xs)] for r in (g, h, t)]


def gradient(fn, xs, w):
    """The plain (compiled) gradient of F, in tapegrad."""
    ts = [tapegrad.tensor(x, dtype=tapegrad.float64, requires_grad=True) for x in xs]
    F = (tapegrad.tensor(w, dtype=tapegrad.float64) * fn(*ts) ** 3).sum()
    return [_as_np(a, x) for a, x in zip(tapegrad.autograd.grad(F, ts, allow_unused=True), xs)]


def hvp(fn, xs, w, v):
    return derivatives(tapegrad, fn, xs, w, v, [np.zeros_like(x) for x in xs])[1]


def check_op(tg_fn, torch_fn, xs, eps=1e-5, rtol=1e-5, seed=0):
    rng = np.random.default_rng(seed)
    xs = [np.asarray(x, np.float64) for x in xs]
    with tapegrad.no_grad():
        out_shape = tg_fn(*[tapegrad.tensor(x, dtype=tapegrad.float64) for x in xs]).shape
    w = rng.uniform(0.5, 1.5, out_shape)
    v = [rng.uniform(-1, 1, x.shape) for x in xs]
    u = [rng.uniform(-1, 1, x.shape) for x in xs]
    g, h, t = derivatives(tapegrad, tg_fn, xs, w, v, u)

    def close(actual, expected, what, tol=rtol):
        for a, e in zip(actual, expected):
            scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
            np.testing.assert_allclose(a, e, rtol=tol, atol=tol * scale, err_msg=what)

    close(g, gradient(tg_fn, xs, w), "create_graph gradient vs compiled gradient", 1e-12)
    shift = lambda d, s: [x + s * eps * di for x, di in zip(xs, d)]  # noqa: E731
    fd_h = [(p - m) / (2 * eps) for p, m in zip(gradient(tg_fn, shift(v, 1), w), gradient(tg_fn, shift(v, -1), w))]
    close(h, fd_h, "H v vs finite differences of the gradient")
    fd_t = [(p - m) / (2 * eps) for p, m in zip(hvp(tg_fn, shift(u, 1), w, v), hvp(tg_fn, shift(u, -1), w, v))]
    close(t, fd_t, "third derivative vs finite differences of H v")
    if torch_fn is not None:
        tg, th, tt = derivatives(torch, torch_fn, xs, w, v, u)
        close(g, tg, "gradient vs torch", 1e-9)
        close(h, th, "H v vs torch", 1e-9)
        close(t, tt, "third derivative vs torch", 1e-9)


# -- every elementwise op, from the registry -------------------------------------------------------------------------
# (create_graph's derived ops are differentiated through their base ops: tests/autograd/test_fused_derivatives.py,
# and the op table's second-order cases)
ELEMENTWISE = [op for op in registry.OPS if op.kind in (registry.K_UNARY, registry.K_BINARY)
               and op.name not in DERIVED_NAMES]


@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda op: op.name)
def test_elementwise_second_and_third_derivatives(op):
    oracle = _torch_elementwise(op)
    if op.kind == registry.K_UNARY:
        c, c2 = _attrs(op)
        check_op(lambda x: _call_unary(op, x, c, c2), oracle and (lambda x: oracle(x, c, c2)),
                 [_domain(op, DOMAIN, GRID)])
    else:
        a = _domain(op, A_DOMAIN, GRID)
        b = B_DOMAIN.get(op.name, B_GRID)
        check_op(lambda x, y: _call_binary(op, x, y), oracle, [a, b])


@pytest.mark.parametrize("op", [op for op in ELEMENTWISE if op.kind == registry.K_BINARY], ids=lambda op: op.name)
def test_binary_second_derivatives_when_broadcasting(op):
    a = _domain(op, A_DOMAIN, GRID)[:3].reshape(3, 1)
    b = (B_DOMAIN.get(op.name, B_GRID)[:4] + 0.05).reshape(1, 4)  # +0.05: no ties between any a and b
    check_op(lambda x, y: _call_binary(op, x, y), _torch_elementwise(op), [a, b])


def test_every_elementwise_op_has_a_torch_oracle_or_is_listed():
    """The torch comparison above runs for every elementwise op torch has under the same name."""
    missing = sorted(op.name for op in ELEMENTWISE if _torch_elementwise(op) is None)
    assert missing == [], f"add these ops to TORCH_UNARY: {missing}"


# -- view and gather ops: called straight from the registry too ----------------------------------------------------
STRUCTURAL = [op for op in registry.OPS if op.kind in (registry.K_RESHAPE, registry.K_GATHER)]
INDEX_MAP = np.array([[5, 0, 11, 5], [2, 3, 3, 7]], np.int64)  # repeats: the adjoint must scatter-add


@pytest.mark.parametrize("op", STRUCTURAL, ids=lambda op: op.name)
def test_view_and_gather_ops_second_and_third_derivatives(op):
    if op.kind == registry.K_RESHAPE:
        tg = lambda x: _record(op, x._data.reshape(2, 6), (x,))  # noqa: E731
        th = lambda x: x.reshape(2, 6)  # noqa: E731
    else:
        index = INDEX_MAP.copy()
        tg = lambda x: _record(op, np.ascontiguousarray(x._data.reshape(-1)[index]), (x,), 0.0, 0.0,  # noqa: E731
                               id(index), index)
        th = lambda x: x.reshape(-1)[torch.tensor(index)]  # noqa: E731
    check_op(tg, th, [_distinct((3, 4), np.random.default_rng(2), -1.5, 1.5)], eps=1e-2)


# -- every other op, through its front-end (the same program runs on tapegrad and on torch) --------------------------
def _cube_pair(lib):
    class CubePair(lib.autograd.Function):
        """Two outputs; a backward written in ops, so it differentiates again."""

        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_backward(x, y)
            ctx.k = k
            return x * y * k, x ** 2 + y

        @staticmethod
        def backward(ctx, g1, g2):
            x, y = ctx.saved_tensors
            return g1 * y * ctx.k + g2 * 2 * x, g1 * x * ctx.k + g2, None

    return CubePair


def _case(name, fn, shapes, covers=None, eps=1e-5, torch_fn=None, low=-1.5, high=1.5):
    """A program run on both libraries; `covers`: the registry ops it must record (forward, or a create_graph
    backward of it), by default the case's name."""
    covers = (name,) if covers is None else tuple(covers)
    return pytest.param(fn, torch_fn or fn, shapes, eps, low, high, covers, id=name)


def _distinct(shape, rng, low, high):
    """Values at least 0.1 apart, in absolute value too (ties make max, min, norms non-smooth)."""
    n = math.prod(shape)
    grid = np.linspace(low, high, max(n, 2)) + 0.05
    return rng.permutation(grid)[:n].reshape(shape)


def _norm(T, x):
    if T is torch:
        return torch.linalg.vector_norm(x)
    return _record(registry.BY_NAME["norm"], np.asarray(linalg._norm_forward(x._data)), (x,))



def _lstm_step(T, gx, gh, c):
    """One fused LSTM step (ops/rnn.py) against torch's gate formulas (i, f, g, o); h' * c' reads both rows."""
    if T is torch:
        i, f, g, o = (gx + gh).chunk(4, 1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c2.tanh() * c2
    from tapegrad.ops.rnn import lstm_cell_step
    h2, c2 = lstm_cell_step(gx, gh, c)
    return h2 * c2


def _lstm_sequence(T, gx, h, c, w_hh):
    """A whole LSTM layer's recurrence (ops/rnn.py's lstm_layer rows) against torch's gate formulas step by step;
    the output summed over time times c_T reads both rows."""
    if T is torch:
        outs = []
        for t in range(gx.shape[0]):
            i, f, g, o = (gx[t] + h @ w_hh.T).chunk(4, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            outs.append(h)
        return torch.stack(outs).sum(0) * c
    from tapegrad.ops.rnn import lstm_layer
    out, c_last = lstm_layer(gx, h, c, w_hh)
    return out.sum(0) * c_last


def _gru_step(T, gi, gh, h):
    if T is torch:
        ir, iz, i_n = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (i_n + r * hn).tanh()
        return (1 - z) * n + z * h
    from tapegrad.ops.rnn import gru_cell_step
    return gru_cell_step(gi, gh, h)


def _gru_sequence(T, gi, h, w_hh, b_hh):
    """A whole GRU layer's recurrence (ops/rnn.py's gru_layer row) against torch's gate formulas step by step."""
    if T is torch:
        outs = []
        for t in range(gi.shape[0]):
            outs.append(_gru_step(T, gi[t], h @ w_hh.T + b_hh, h))
            h = outs[-1]
        return torch.stack(outs).sum(0) * h
    from tapegrad.ops.rnn import gru_layer
    out = gru_layer(gi, h, w_hh, b_hh)
    return out.sum(0) * out[-1]


def _rnn_sequence(T, gx, h, w_hh, b_hh, relu=False):
    """A whole nn.RNN layer's recurrence (ops/rnn.py's rnn_layer row) against torch's step formula, tanh or relu."""
    if T is torch:
        outs = []
        for t in range(gx.shape[0]):
            a = gx[t] + (h @ w_hh.T + b_hh)
            outs.append(a.relu() if relu else a.tanh())
            h = outs[-1]
        return torch.stack(outs).sum(0) * h
    from tapegrad.ops.rnn import rnn_layer
    out = rnn_layer(gx, h, w_hh, b_hh, relu=relu)
    return out.sum(0) * out[-1]


def _bags(T, w, mode, p=None):
    """The bags [0, 2], [], [3, 2, 1] of w's rows (times p), summed, averaged or maximised by indexing."""
    rows = [w[[0, 2]], w[[3, 2, 1]]]
    if p is not None:
        rows = [rows[0] * p[0:2, None], rows[1] * p[2:5, None]]
    pick = {"sum": lambda r: r.sum(0), "mean": lambda r: r.mean(0), "max": lambda r: r.max(0).values}[mode]
    return T.stack([pick(rows[0]), T.zeros(w.shape[1], dtype=w.dtype), pick(rows[1])])


def _norm_composite(x, dims, w, b, eps=1e-5):
    m = x.mean(dims, keepdim=True)
    return (x - m) / ((x - m).square().mean(dims, keepdim=True) + eps).sqrt() * w + b


def _write_through_views(T, x, y):
    """In-place ops through views of an intermediate (CopySlices); r, which the second write overlaps, reads
    the base again (AsStrided)."""
    h = x * 1
    r = h[1]
    r.mul_(y)
    h[:, 2].mul_(x[:, 0])
    return h * r.sum()


IDX = [[0, 3], [1, 1], [2, 0]]
LABELS = [0, 3, 1]
LABELS_2D = [[[0, 1], [2, 1]], [[1, 1], [0, 2]]]
LO, HI = -0.55, 0.55  # clamp bounds clear of the inputs' grid

CASES = [
    _case("sum", lambda T, x: x.sum(1), [(3, 4)], eps=1e-2),
    _case("sum_all", lambda T, x: x.sum(), [(3, 4)], eps=1e-2),
    _case("mean", lambda T, x: x.mean(0), [(3, 4)], eps=1e-2),
    _case("mean_all", lambda T, x: x.mean(), [(3, 4)], eps=1e-2),
    _case("expand", lambda T, x: x.expand(3, 4), [(1, 4)], eps=1e-2),
    _case("sum_to_shape", lambda T, x: T.sum_to_shape(x, (1, 4)), [(3, 4)], eps=1e-2,
          torch_fn=lambda T, x: x.sum_to_size(1, 4)),
    _case("broadcast_mul", lambda T, x, y: x * y, [(3, 1), (4,)], covers=("sum_to_shape",), eps=1e-3),
    _case("cast", lambda T, x: x.to(T.float32).to(T.float64) * 1.0, [(3, 4)], eps=1e-1),
    _case("reshape", lambda T, x: x.reshape(2, 6), [(3, 4)], covers=(), eps=1e-2),
    _case("squeeze_dims", lambda T, x: x.squeeze((1, 3)), [(3, 1, 4, 1)], eps=1e-2),
    _case("getitem", lambda T, x: x[1:, ::2], [(3, 4)], covers=("scatter_flat", "gather_flat"), eps=1e-2),
    _case("write_through_views", _write_through_views, [(3, 4), (4,)], covers=("copy_slices", "as_strided")),
    _case("select", lambda T, x: x[1], [(3, 4)], covers=(), eps=1e-2),
    _case("index", lambda T, x: x[[0, 2, 2]], [(3, 4)], covers=(), eps=1e-2),
    _case("permute", lambda T, x: x.permute(2, 0, 1), [(2, 3, 4)], covers=(), eps=1e-2),
    _case("repeat", lambda T, x: x.repeat(2, 1), [(3, 4)], covers=(), eps=1e-2),
    _case("split", lambda T, x: x.split(2, 1)[1], [(3, 4)], covers=(), eps=1e-2),
    _case("unbind", lambda T, x: x.unbind(0)[2], [(3, 4)], covers=(), eps=1e-2),
    _case("gather", lambda T, x: T.gather(x, 1, T.tensor(IDX)), [(3, 4)], covers=(), eps=1e-2),
    _case("diagonal", lambda T, x: x.diagonal(), [(3, 4)], covers=(), eps=1e-2),
    _case("cat", lambda T, x, y: T.cat([x, y], 0), [(2, 3), (1, 3)], eps=1e-2),
    _case("stack", lambda T, x, y: T.stack([x, y], 1), [(2, 3), (2, 3)], eps=1e-2),
    _case("matmul", lambda T, a, b: a @ b, [(3, 4), (4, 2)], eps=1e-4),
    _case("mv", lambda T, a, b: a @ b, [(3, 4), (4,)], eps=1e-4),
    _case("bmm", lambda T, a, b: T.bmm(a, b), [(2, 3, 4), (2, 4, 2)], eps=1e-4),
    _case("matmul_fold", lambda T, a, b: a @ b, [(2, 3, 4), (2, 4, 2)], eps=1e-4),
    _case("matmul_bcast", lambda T, a, b: a @ b, [(3, 4), (2, 4, 2)], eps=1e-4),
    _case("vecmat", lambda T, a, b: a @ b, [(4,), (4, 3)], eps=1e-4),
    _case("dot", lambda T, a, b: T.dot(a, b), [(4,), (4,)], eps=1e-4),
    _case("einsum", lambda T, a, b: T.einsum("ij,kj->ik", a, b), [(3, 4), (2, 4)], eps=1e-4),
    _case("linear", lambda T, x, w: T.nn.functional.linear(x, w), [(3, 4), (2, 4)], eps=1e-4),
    _case("addmm", lambda T, x, w, b: T.nn.functional.linear(x, w, b), [(3, 4), (2, 4), (2,)], eps=1e-4),
    _case("where", lambda T, a, b: T.where(T.tensor([[True, False, True, False]] * 3), a, b), [(3, 4), (3, 4)],
          eps=1e-2),
    _case("masked_fill", lambda T, x: x.masked_fill(T.tensor([[True, False, False, True]] * 3), 2.0), [(3, 4)],
          eps=1e-2),
    _case("masked_fill_tensor", lambda T, x, v: x.masked_fill(T.tensor([[True, False, False, True]] * 3), v[0]),
          [(3, 4), (2,)], eps=1e-2),
    _case("lerp", lambda T, a, b: T.lerp(a, b, 0.3), [(3, 4), (3, 4)], eps=1e-2),
    _case("lerp_tensor", lambda T, a, b, w: T.lerp(a, b, w), [(3, 4), (3, 4), (3, 4)], eps=1e-3),
    _case("clamp_tensor", lambda T, x: T.clamp(x, T.full((3, 4), LO, dtype=T.float64),
                                               T.full((3, 4), HI, dtype=T.float64)), [(3, 4)]),
    _case("clamp_min_tensor", lambda T, x: T.clamp_min(x, T.full((3, 4), LO, dtype=T.float64)), [(3, 4)]),
    _case("clamp_max_tensor", lambda T, x: T.clamp_max(x, T.full((3, 4), HI, dtype=T.float64)), [(3, 4)]),
    _case("scatter_add", lambda T, x, src: x.scatter_add(1, T.tensor(IDX), src), [(3, 4), (3, 2)], eps=1e-2),
    _case("tril", lambda T, x: x.tril(), [(3, 4)], eps=1e-2),
    _case("triu", lambda T, x: T.triu(x, 1), [(3, 4)], eps=1e-2),
    _case("nll_loss", lambda T, x: T.nn.functional.nll_loss(T.log_softmax(x, 1), T.tensor(LABELS)), [(3, 4)],
          covers=("nll_loss", "log_softmax")),
    _case("nll_loss2d", lambda T, x: T.nn.functional.nll_loss(T.log_softmax(x, 1), T.tensor(LABELS_2D)),
          [(2, 3, 2, 2)]),
    _case("cross_entropy", lambda T, x: T.nn.functional.cross_entropy(x, T.tensor(LABELS)), [(3, 4)]),
    _case("cross_entropy2d", lambda T, x: T.nn.functional.cross_entropy(x, T.tensor(LABELS_2D)), [(2, 3, 2, 2)]),
    _case("mse_loss", lambda T, x, y: T.nn.functional.mse_loss(x, y), [(3, 4), (3, 4)], eps=1e-3),
    _case("smooth_l1_loss", lambda T, x: T.nn.functional.smooth_l1_loss(x, x * -0.2), [(3, 4)]),
    _case("binary_cross_entropy", lambda T, x, y: T.nn.functional.binary_cross_entropy(x.sigmoid(), y.sigmoid()),
          [(3, 4), (3, 4)]),
    _case("bce_with_logits", lambda T, z, y: T.nn.functional.binary_cross_entropy_with_logits(z, y),
          [(3, 4), (3, 4)]),
    _case("bce_with_logits_full", lambda T, z, y: T.nn.functional.binary_cross_entropy_with_logits(
        z, y, pos_weight=T.full((4,), 2.0, dtype=T.float64)), [(3, 4), (3, 4)]),
    _case("embedding_padded", lambda T, w: T.nn.functional.embedding(T.tensor([[0, 2], [1, 0]]), w, padding_idx=0),
          [(3, 4)], eps=1e-2),
    # (torch's embedding_bag has no double backward: its bags by indexing are the oracle)
    _case("embedding_bag", lambda T, w, p: T.nn.functional.embedding_bag(
        T.tensor([0, 2, 3, 2, 1]), w, T.tensor([0, 2, 2]), mode="sum", per_sample_weights=p), [(4, 3), (5,)],
        covers=("embedding_bag_weighted",), torch_fn=lambda T, w, p: _bags(T, w, "sum", p)),
    _case("embedding_bag_mean", lambda T, w: T.nn.functional.embedding_bag(T.tensor([0, 2, 3, 2, 1]), w,
                                                                           T.tensor([0, 2, 2])),
          [(4, 3)], covers=("embedding_bag",), torch_fn=lambda T, w: _bags(T, w, "mean")),
    _case("embedding_bag_max", lambda T, w: T.nn.functional.embedding_bag(T.tensor([0, 2, 3, 2, 1]), w,
                                                                          T.tensor([0, 2, 2]), mode="max"),
          [(4, 3)], covers=("embedding_bag",), torch_fn=lambda T, w: _bags(T, w, "max")),
    _case("norm", _norm, [(3, 4)]),
    _case("vector_norm", lambda T, x: x.norm(3), [(3, 4)]),
    _case("vector_norm_1", lambda T, x: x.norm(1, dim=1), [(3, 4)], covers=("vector_norm",)),
    _case("vector_norm_inf", lambda T, x: x.norm(float("inf"), dim=0), [(3, 4)], covers=("vector_norm",)),
    _case("prod", lambda T, x: x.prod(1), [(3, 4)]),
    _case("prod_all", lambda T, x: x.prod(), [(2, 3)]),
    _case("var", lambda T, x: x.var(1), [(3, 4)]),
    _case("std", lambda T, x: x.std(), [(3, 4)]),
    _case("amax", lambda T, x: x.amax(1), [(3, 4)]),
    _case("amin", lambda T, x: x.amin(0), [(3, 4)]),
    _case("max_all", lambda T, x: x.max(), [(3, 4)]),
    _case("min_all", lambda T, x: x.min(), [(3, 4)]),
    _case("max_dim", lambda T, x: x.max(1)[0], [(3, 4)]),
    _case("min_dim", lambda T, x: x.min(0)[0], [(3, 4)]),
    _case("softmax", lambda T, x: T.softmax(x, 1), [(3, 4)]),
    _case("log_softmax", lambda T, x: T.log_softmax(x, 0), [(3, 4)]),
    _case("logsumexp", lambda T, x: T.logsumexp(x, 1), [(3, 4)]),
    _case("cumsum", lambda T, x: x.cumsum(1), [(3, 4)], eps=1e-2),
    _case("diag_embed", lambda T, x: T.diag(x, 1), [(4,)], eps=1e-2),
    # the dense operand only: torch's gradient for a sparse matrix's values is not differentiable
    _case("sparse_mm", lambda T, d: T.spmm(T.sparse_coo_tensor(T.tensor([[0, 2, 2, 1], [3, 0, 3, 1]]),
                                                               T.tensor([0.5, -1.2, 0.8, 1.5], dtype=T.float64),
                                                               (3, 4)), d), [(4, 2)], eps=1e-3),
    _case("lstm_cell", lambda T, gx, gh, c: _lstm_step(T, gx, gh, c), [(2, 8), (2, 8), (2, 2)],
          covers=("lstm_cell_c", "lstm_cell_h")),
    _case("gru_cell", lambda T, gi, gh, h: _gru_step(T, gi, gh, h), [(2, 6), (2, 6), (2, 2)]),
    _case("lstm_layer", lambda T, gx, h, c, w: _lstm_sequence(T, gx, h, c, w), [(3, 2, 8), (2, 2), (2, 2), (8, 2)],
          covers=("lstm_layer", "lstm_layer_c")),
    _case("gru_layer", lambda T, gi, h, w, b: _gru_sequence(T, gi, h, w, b), [(3, 2, 6), (2, 2), (6, 2), (6,)]),
    _case("rnn_layer", lambda T, gx, h, w, b: _rnn_sequence(T, gx, h, w, b), [(3, 2, 2), (2, 2), (2, 2), (2,)]),
    pytest.param(*_case("rnn_layer", lambda T, gx, h, w, b: _rnn_sequence(T, gx, h, w, b, relu=True),
                        [(3, 2, 2), (2, 2), (2, 2), (2,)]).values, id="rnn_layer-relu"),
    _case("custom_function", lambda T, x, y: sum(o.sum() for o in _cube_pair(T).apply(x, y, 1.5)).reshape(1),
          [(3,), (3,)], covers=("function", "function_output"), eps=1e-4),
    # issue 19's layers (tests/nn/test_conv_pool_norm.py has more)
    _case("conv", lambda T, x, w, b: T.nn.functional.conv2d(x, w, b, stride=2, padding=1, groups=2),
          [(2, 4, 5, 4), (2, 2, 3, 2), (2,)], eps=1e-4),
    _case("max_pool", lambda T, x: T.nn.functional.max_pool2d(x, 2, 1, 1), [(1, 2, 4, 3)]),
    _case("prelu", lambda T, x, w: T.nn.functional.prelu(x, w), [(2, 3, 2), (3,)]),
    _case("hardswish", lambda T, x: T.nn.functional.hardswish(x), [(3, 4)], low=-2.5, high=2.5),
    _case("mish", lambda T, x: T.nn.functional.mish(x), [(3, 4)]),
    _case("glu", lambda T, x: T.nn.functional.glu(x, 0), [(4, 3)]),
    _case("avg_pool2d", lambda T, x: T.nn.functional.avg_pool2d(x, 2, 1, 1, count_include_pad=False),
          [(1, 2, 4, 3)]),
    _case("adaptive_avg_pool2d", lambda T, x: T.nn.functional.adaptive_avg_pool1d(x, 2), [(1, 2, 5)]),
    # (tests/nn/test_conv_transpose_resample.py has more)
    # (no output_padding: torch's own third derivative of it raises "not supported for non-transposed")
    _case("conv_transpose", lambda T, x, w, b: T.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                                                groups=2),
          [(1, 4, 3, 2), (4, 1, 3, 2), (2,)], covers=("conv",), eps=1e-4),
    _case("im2col", lambda T, x: T.nn.functional.unfold(x, 2, padding=1, stride=2), [(1, 2, 3, 4)],
          covers=("im2col", "col2im")),
    _case("col2im", lambda T, x: T.nn.functional.fold(x, (3, 4), 2, padding=1, stride=2), [(1, 8, 6)],
          covers=("col2im", "im2col")),
    _case("conv3d", lambda T, x, w, b: T.nn.functional.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1), groups=2),
          [(1, 4, 3, 4, 2), (2, 2, 2, 2, 2), (2,)], eps=1e-4),
    _case("upsample_bicubic2d", lambda T, x: T.nn.functional.interpolate(x, size=(4, 3), mode="bicubic"),
          [(1, 2, 3, 2)]),
    _case("upsample_trilinear3d", lambda T, x: T.nn.functional.interpolate(x, size=(3, 2, 3), mode="trilinear"),
          [(1, 1, 2, 3, 2)]),
    _case("_upsample_bilinear2d_aa", lambda T, x: T.nn.functional.interpolate(x, size=(2, 3), mode="bilinear",
                                                                              antialias=True), [(1, 2, 4, 5)]),
    _case("_upsample_bicubic2d_aa", lambda T, x: T.nn.functional.interpolate(x, size=(2, 3), mode="bicubic",
                                                                             antialias=True), [(1, 2, 4, 5)]),
    _case("_upsample_lanczos2d_aa", lambda T, x: T.nn.functional.interpolate(x, size=(2, 3), mode="lanczos",
                                                                             antialias=True), [(1, 2, 4, 5)]),
    _case("adaptive_avg_pool3d", lambda T, x: T.nn.functional.interpolate(x, size=(1, 2, 2), mode="area"),
          [(1, 1, 2, 3, 3)]),
    _case("upsample_nearest3d", lambda T, x: T.nn.functional.interpolate(x, size=(3, 2, 3)), [(1, 1, 2, 2, 2)]),
    _case("_upsample_nearest_exact3d", lambda T, x: T.nn.functional.interpolate(x, size=(3, 1, 3),
                                                                                mode="nearest-exact"),
          [(1, 1, 2, 2, 2)]),
    _case("upsample_nearest2d", lambda T, x: T.nn.functional.interpolate(x, size=(5, 3)), [(1, 2, 3, 2)]),
    _case("upsample_nearest1d", lambda T, x: T.nn.functional.interpolate(x, scale_factor=2.5), [(1, 2, 3)]),
    _case("_upsample_nearest_exact2d", lambda T, x: T.nn.functional.interpolate(x, size=(2, 5), mode="nearest-exact"),
          [(1, 2, 3, 2)]),
    _case("_upsample_nearest_exact1d", lambda T, x: T.nn.functional.interpolate(x, size=4, mode="nearest-exact"),
          [(1, 2, 3)]),
    _case("upsample_bilinear2d", lambda T, x: T.nn.functional.interpolate(x, size=(4, 3), mode="bilinear"),
          [(1, 2, 3, 2)]),
    _case("upsample_linear1d", lambda T, x: T.nn.functional.interpolate(x, size=5, mode="linear", align_corners=True),
          [(1, 2, 3)]),
    _case("adaptive_max_pool", lambda T, x: T.nn.functional.adaptive_max_pool2d(x, (2, 3)), [(1, 2, 5, 4)]),
    _case("max_unpool", lambda T, x: T.nn.functional.max_unpool2d(
        *T.nn.functional.max_pool2d(x, 2, return_indices=True), 2), [(1, 2, 4, 4)]),
    # (torch's native norms give wrong third derivatives in x: its composite is the oracle)
    _case("layer_norm", lambda T, x, w, b: T.nn.functional.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)],
          torch_fn=lambda T, x, w, b: _norm_composite(x, (-1,), w, b)),
    _case("batch_norm", lambda T, x, w, b: T.nn.functional.batch_norm(x, None, None, w, b, training=True),
          [(4, 3), (3,), (3,)], torch_fn=lambda T, x, w, b: _norm_composite(x, (0,), w, b)),
    _case("group_norm", lambda T, x, w, b: T.nn.functional.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)],
          torch_fn=lambda T, x, w, b: _norm_composite(x.reshape(2, 2, 6), (-1,), 1.0, 0.0).reshape(2, 4, 3)
          * w.reshape(1, 4, 1) + b.reshape(1, 4, 1)),
    _case("huber_loss", lambda T, x: T.nn.functional.huber_loss(x, x * -0.2, delta=0.5), [(3, 4)]),
    _case("norm_dim", lambda T, x: T.nn.functional.pairwise_distance(x, x * 0.3 + 1.0), [(3, 4)]),
    # gelu of 512+ elements is its own compiled row; 4-d unmasked attention is one row (torch's flash row has no
    # double backward: its math composite is the oracle)
    _case("gelu_compiled", lambda T, x: T.nn.functional.gelu(x), [(8, 64)]),
    _case("sdpa", lambda T, q, k, v: T.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
          [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)], torch_fn=lambda T, q, k, v: _attention_composite(q, k, v)),
]

# the op areas' cases, one module each (tests/autograd/higher_order_*.py: CASES, a list of _case's (args, kwargs),
# and EXEMPT, as below)
_AREAS = [importlib.import_module(path.stem)
          for path in sorted(pathlib.Path(__file__).parent.glob("higher_order_*.py"))]
CASES += [_case(*args, **kwargs) for area in _AREAS for args, kwargs in area.CASES]


def _attention_composite(q, k, v):
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    return torch.softmax(scores.masked_fill(~causal, float("-inf")), -1) @ v
EXEMPT = {"delayed_error": "raises by design: tests/autograd/test_custom_function.py",
          "compiled": "tapegrad.compile's row refuses double backward, as torch.compile: tests/test_trace.py",
          "traced_rule": "only on a trace's private tape, behind a detached gradient: tests/test_trace.py",
          "traced_compare": "a comparison on a trace's private tape, bool: no gradient: tests/test_compile_guards.py",
          "traced_draw": "a random draw on a trace's private tape, no inputs: tests/test_compile_guards.py",
          "traced_value": "an index computed from values on a trace's private tape, no gradient: "
                          "tests/test_compile_values.py",
          "ctc_loss": "torch has no double backward for it; tapegrad's create_graph rule raises torch's error: "
                      "tests/nn/test_ctc_loss.py",
          "ctc_loss_backward": "the row that raises that error: tests/nn/test_ctc_loss.py",
          "sparse_mul_dense": "the dense operand's gradient is sparse, as torch's, which this harness's (g * g).sum() "
                              "does not take: tests/test_sparse_coo_more.py (also under create_graph)",
          "no_derivative": "smm, hspmm, spdiags: no derivative, as torch (backward raises torch's error): "
                                  "tests/test_sparse_coo_more.py",
          "embedding_sparse": "its gradient is a sparse COO tensor, which this harness's (g * g).sum() does not take; "
                              "second order through g.to_dense() against torch: tests/test_embedding_sparse.py"}
for _area in _AREAS:
    EXEMPT.update(getattr(_area, "EXEMPT", {}))


def _inputs(shapes, low, high):
    rng = np.random.default_rng(1)
    return [_distinct(s, rng, low, high) for s in shapes]


def _front_end_exists(fn, shapes):
    try:
        with tapegrad.no_grad():
            fn(tapegrad, *[tapegrad.ones(*s, dtype=tapegrad.float64) for s in shapes])
    except (AttributeError, NotImplementedError) as e:
        pytest.skip(f"tapegrad has no such front-end yet: {e}")


@pytest.mark.parametrize("fn, torch_fn, shapes, eps, low, high, covers", CASES)
def test_front_end_second_and_third_derivatives(fn, torch_fn, shapes, eps, low, high, covers):
    _front_end_exists(fn, shapes)
    check_op(lambda *ts: fn(tapegrad, *ts), lambda *ts: torch_fn(torch, *ts), _inputs(shapes, low, high), eps=eps)


@pytest.mark.parametrize("fn, torch_fn, shapes, eps, low, high, covers", CASES)
def test_each_case_records_the_ops_it_covers(fn, torch_fn, shapes, eps, low, high, covers):
    unknown = [name for name in covers if name not in registry.BY_NAME]
    assert unknown == [], f"not registry ops: {unknown}"
    _front_end_exists(fn, shapes)
    seen = set()
    original = tape_mod.Tape.record

    def spy(self, op, *args, **kwargs):
        seen.add(registry.OPS[int(op)].name)
        return original(self, op, *args, **kwargs)

    tape_mod.Tape.record = spy
    try:
        xs = [tapegrad.tensor(x, dtype=tapegrad.float64, requires_grad=True) for x in _inputs(shapes, low, high)]
        F = (fn(tapegrad, *xs) ** 3).sum()
        for _ in range(2):  # the ops of the forward, of its backward, and of the backward of that
            g = tapegrad.autograd.grad(F, xs, create_graph=True, allow_unused=True)
            F = sum((gi * gi).sum() for gi in g if gi is not None and gi.requires_grad)
            if not isinstance(F, tapegrad.Tensor):
                break
    finally:
        tape_mod.Tape.record = original
    missing = sorted(set(covers) - seen)
    assert missing == [], f"the case records {sorted(seen)}, not {missing}"


def test_every_differentiable_registry_op_is_covered():
    """Elementwise, view and gather ops are covered generically; every other op needs a case."""
    declared = {name for case in CASES for name in case.values[-1]}
    missing = sorted(op.name for op in registry.OPS
                     if op.kind not in (registry.K_LEAF, registry.K_UNARY, registry.K_BINARY, registry.K_RESHAPE,
                                        registry.K_GATHER)
                     and op.name not in declared and op.name not in EXEMPT)
    assert missing == [], f"registry ops no higher-order case covers (add one to CASES): {missing}"


@pytest.mark.parametrize("name", ["elu", "elu_alpha2", "selu", "celu", "celu_half"])
def test_elu_family_derivatives_at_zero_as_torch(name):
    """elu's first derivative at 0 is its slope alpha; its second at 0 is 0 (torch's elu_double_backward masks
    x < 0): a PINN's collocation points from an odd linspace include 0. (At NaN torch's answer depends on the CPU's
    vector width: test_hostile's NaN test holds tapegrad to NaN.)"""
    import torch
    fns = {"elu": lambda F, x: F.elu(x), "elu_alpha2": lambda F, x: F.elu(x, alpha=2.0), "selu": lambda F, x: F.selu(x),
           "celu": lambda F, x: F.celu(x), "celu_half": lambda F, x: F.celu(x, 0.5)}
    seen = []
    for L in (tapegrad, torch):
        x = L.tensor([-0.5, 0.0, 0.5], dtype=L.float64, requires_grad=True)
        g1, = L.autograd.grad(fns[name](L.nn.functional, x).sum(), x, create_graph=True)
        g2, = L.autograd.grad(g1.sum(), x)
        seen.append(g1.tolist() + g2.tolist())
    np.testing.assert_allclose(np.array(seen[0]), np.array(seen[1]), rtol=1e-14)
