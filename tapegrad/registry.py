"""Every differentiable op, declared once: its torch name, its NumPy forward, and its derivative.

This is tapegrad's derivatives.yaml. An elementwise op's derivative is an expression string, evaluated
in two places, so the two cannot drift:
  * kernels/elementwise.py is generated from it (`python -m tapegrad.kernels.codegen`): the compiled
    replay runs it per element with x (input), y (output), g (output adjoint), c, c2 (scalar attributes);
  * backward(create_graph=True) evaluates it on Tensors, so the backward is itself recorded on the tape.
Binary ops use a, b for the inputs; each also gets a tensor-scalar (`_ts`, b is the constant c) and a
scalar-tensor (`_st`, a is the constant c) variant. Other ops give `vjp(ctx, g, inputs, out)` written
in tapegrad ops: it runs under no_grad in a plain backward and recorded under create_graph. A Python op
on the hot path may also give `array_vjp(ctx, g, inputs, wanted)` on NumPy arrays, which a plain backward
calls instead (no Tensor is made); it returns None where it does not apply, and then `vjp` runs.
docs/ops.md is generated from this table too.
"""
import math
import re

import numpy as np

K_LEAF, K_UNARY, K_BINARY, K_SUM, K_EXPAND, K_RESHAPE, K_GATHER, K_CAST, K_PYTHON = range(9)
# An op's `saves` byte: bit j < 6, its backward reads input j; SAVES_ALL, every input, however many (a compiled
# call's); SAVES_OUT, its output. `plan` checks the versions of exactly these (kernels/runtime.py).
SAVES_ALL, SAVES_OUT = 64, 128


class OpDef:
    __slots__ = ("code", "name", "kind", "grad_fn", "forward", "derivs", "vjp", "saves", "doc", "array_vjp", "ufunc")

    def __init__(self, name, kind, grad_fn, forward=None, derivs=(), vjp=None, saves=0, doc="", array_vjp=None):
        self.code = len(OPS)
        self.ufunc = None  # a unary op whose forward is one NumPy ufunc of x: that ufunc (tapegrad.compile)
        self.name, self.kind, self.grad_fn, self.forward = name, kind, grad_fn, forward
        self.derivs, self.vjp, self.saves, self.doc = tuple(derivs), vjp, saves, doc
        self.array_vjp = array_vjp
        OPS.append(self)
        BY_NAME[name] = self

    def __repr__(self):
        return f"<op {self.name} #{self.code} {self.grad_fn}>"


OPS: list = []
BY_NAME: dict = {}


def _uses(expr, name):
    return re.search(rf"\b{name}\b", expr) is not None


def _saves(derivs, inputs):
    mask = sum(1 << j for j, v in enumerate(inputs) if any(_uses(d, v) for d in derivs))
    return mask | (SAVES_OUT if any(_uses(d, "y") for d in derivs) else 0)


def _subst(expr, mapping):
    return re.sub(r"\b(" + "|".join(mapping) + r")\b", lambda m: mapping[m.group(1)], expr)


def unary(name, forward, dx, grad_fn=None, doc=""):
    """forward: (x, c, c2) -> value, or a NumPy ufunc of x alone."""
    ufunc = forward if isinstance(forward, np.ufunc) else None
    if ufunc is not None:
        forward = lambda x, c, c2: ufunc(x)  # noqa: E731
    OpDef(name, K_UNARY, grad_fn or _torch_name(name), forward, (dx,), saves=_saves((dx,), ("x",)),
          doc=doc).ufunc = ufunc


def binary(name, forward, da, db, grad_fn=None, ts=None, st=None, doc=""):
    """A broadcasting binary op and its two variants with a Python scalar operand."""
    grad_fn = grad_fn or _torch_name(name)
    OpDef(name, K_BINARY, grad_fn, forward, (da, db), saves=_saves((da, db), ("a", "b")), doc=doc)
    dts = _subst(da, {"a": "x", "b": "c"})
    dst = _subst(db, {"a": "c", "b": "x"})
    OpDef(name + "_ts", K_UNARY, ts or grad_fn, lambda x, c, c2: forward(x, c), (dts,),
          saves=_saves((dts,), ("x",)), doc=doc)
    OpDef(name + "_st", K_UNARY, st or grad_fn, lambda x, c, c2: forward(c, x), (dst,),
          saves=_saves((dst,), ("x",)), doc=doc)


def structural(name, kind, grad_fn, vjp, saves=0, doc=""):
    OpDef(name, kind, grad_fn, None, (), vjp, saves, doc)


def python(name, grad_fn, forward, vjp, saves=1 | 2 | 4 | 8, doc="", array_vjp=None):
    """An op whose adjoint runs in Python between compiled segments (BLAS, fused losses)."""
    OpDef(name, K_PYTHON, grad_fn, forward, (), vjp, saves, doc, array_vjp)


def _torch_name(name):
    return "".join(p.capitalize() for p in name.split("_")) + "Backward0"


# -- Rows that are not ops ---------------------------------------------------------------------------
OpDef("leaf", K_LEAF, "AccumulateGrad")
OpDef("const", K_LEAF, None)
OpDef("freed", K_LEAF, None)
assert BY_NAME["leaf"].code == 0 and BY_NAME["freed"].code == 2  # the tape's OP_LEAF / OP_FREED

LN2 = math.log(2.0)


def _sigmoid(x):
    return 0.5 * (np.tanh(0.5 * x) + 1.0)  # overflow-free, and as accurate as 1 / (1 + exp(-x))


def _erf(x):
    from .kernels.erf import erf_array
    if x.dtype == np.float16:  # compiled for float32 and float64 only; torch returns float16
        return erf_array(x.astype(np.float32)).astype(np.float16)
    return erf_array(x)


# -- Unary elementwise -------------------------------------------------------------------------------
# name        forward (x, c, c2), or a ufunc of x                     dx
unary("neg",     np.negative,                                        "-g")
unary("exp",     np.exp,                                             "g * y")
unary("log",     np.log,                                             "g / x")
unary("sqrt",    np.sqrt,                                            "g / (2 * y)")
unary("sin",     np.sin,                                             "g * cos(x)")
unary("cos",     np.cos,                                             "-g * sin(x)")
unary("tan",     np.tan,                                             "g * (1 + y * y)")
unary("tanh",    np.tanh,                                            "g * (1 - y * y)")
unary("sigmoid", lambda x, c, c2: _sigmoid(x),                       "g * y * (1 - y)")
unary("relu",    lambda x, c, c2: np.maximum(x, 0),                  "_with_input(where(y <= 0, 0 * g, g), y)")  # NaN passes g
unary("abs",     np.abs,                                             "g * sign(x)")
unary("reciprocal", np.reciprocal,                                   "-g * y * y")
unary("square",  lambda x, c, c2: np.square(x.astype(np.int64) if x.dtype == np.bool_ else x),                      "2 * g * x", grad_fn="PowBackward0")
unary("rsqrt",   lambda x, c, c2: 1 / np.sqrt(x),                    "-0.5 * g * y * y * y")
unary("log1p",   np.log1p,                                           "g / (1 + x)", grad_fn="Log1PBackward0")
unary("expm1",   np.expm1,                                           "g * (y + 1)")
unary("log2",    np.log2,                                            f"g / (x * {LN2!r})")
unary("exp2",    np.exp2,                                            f"g * y * {LN2!r}")
unary("asin",    np.arcsin,                                          "g / sqrt(1 - x * x)")
unary("acos",    np.arccos,                                          "-g / sqrt(1 - x * x)")
unary("atan",    np.arctan,                                          "g / (1 + x * x)")
unary("sinh",    np.sinh,                                            "g * cosh(x)")
unary("cosh",    np.cosh,                                            "g * sinh(x)")
unary("erf",     lambda x, c, c2: _erf(x),                           "g * 1.1283791670955126 * exp(-x * x)")
unary("sign",    lambda x, c, c2: np.nan_to_num(np.sign(x)), "0 * g")  # sign(nan) is 0
unary("floor",   np.floor,                                           "0 * g")
unary("ceil",    np.ceil,                                            "0 * g")
unary("round",   lambda x, c, c2: np.round(x),                       "0 * g")
unary("trunc",   np.trunc,                                           "0 * g")
unary("gelu",    lambda x, c, c2: 0.5 * x * (1 + _erf(x * 0.7071067811865476)),
      "g * (0.5 * (1 + erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x))")
unary("silu",    lambda x, c, c2: x * _sigmoid(x),                   "g * sigmoid(x) * (1 + x * (1 - sigmoid(x)))")
# c = beta, c2 = threshold: linear above threshold, as torch's softplus
unary("softplus", lambda x, c, c2: np.where(x * c > c2, x, np.logaddexp(0, c * x) / c),
      "where(x * c > c2, g, g * sigmoid(c * x))")
unary("leaky_relu", lambda x, c, c2: np.where(x > 0, x, x * c),      "_with_input(where(x > 0, g, g * c), x)")
unary("elu",     lambda x, c, c2: np.where(x > 0, x, c * np.expm1(np.minimum(x, 0))), "where(x > 0, g, g * (y + c))")  # NaN in, NaN out
unary("hardtanh", lambda x, c, c2: np.clip(x, c, c2),                "where((x <= c) | (x >= c2), 0 * g, g + 0 * x)")  # NaN in, NaN out
unary("clamp",   lambda x, c, c2: np.minimum(np.maximum(x, c), c2),  "where((x >= c) & (x <= c2), g, 0 * g)",
      grad_fn="ClampBackward1")
unary("copy",    lambda x, c, c2: x.copy(),                          "g", grad_fn="CloneBackward0")

# -- Binary elementwise (broadcasting) ---------------------------------------------------------------
def _power(a, b):
    """x ** 3 as x * x * x, as torch computes it: libm's pow takes 16x longer for a negative base (61 against
    3.7 us for 1,000 float64), and NumPy special-cases only 2, 0.5 and -1."""
    if type(b) in (int, float) and b == 3 and a.dtype.kind == "f":
        return a * a * a
    if type(b) in (int, float) and b == -0.5 and a.dtype.kind == "f":
        return 1 / np.sqrt(a)  # torch's rsqrt: -inf at -0.0 (pow gives +inf), so x ** 0.5's gradient there too
    return np.power(a, b)


binary("add", np.add,           "g",     "g")
binary("sub", np.subtract,      "g",     "-g", st="RsubBackward1")
binary("mul", np.multiply,      "g * b", "g * a")
binary("div", np.true_divide,   "g / b", "-g * y / b")
binary("pow", _power,           "g * _select(b == 0, 0 * b, b * a ** (b - 1))",  # torch: 0 for x ** 0, even at 0, NaN
       "where((a == 0) & (b >= 0), 0 * g, g * y * log(a))", grad_fn="PowBackward1", ts="PowBackward0",
       st="PowBackward2")
# a NaN operand passes g to both sides, as torch's (its rule masks only where the other side is larger)
binary("maximum", np.maximum,   "where(a < b, 0 * g, where(a == b, 0.5 * g, g))",
       "where(b < a, 0 * g, where(a == b, 0.5 * g, g))")
binary("minimum", np.minimum,   "where(a > b, 0 * g, where(a == b, 0.5 * g, g))",
       "where(b > a, 0 * g, where(a == b, 0.5 * g, g))")
binary("atan2", np.arctan2,     "where((a == 0) & (b == 0), 0 * g, g * b / (a * a + b * b))",  # torch: 0 at (0, 0)
       "where((a == 0) & (b == 0), 0 * g, -g * a / (a * a + b * b))")


# -- Structural ops: compiled adjoints written by hand in kernels/runtime.py -------------------------
def _vjp_sum(ctx, g, inputs, out):
    x, = inputs
    return (g.reshape(ctx).expand(x.shape),)  # ctx: the keepdim shape


def _vjp_mean(ctx, g, inputs, out):
    x, = inputs
    return (g.reshape(ctx).expand(x.shape) * (math.prod(ctx) / max(x.numel(), 1)),)


def _vjp_expand(ctx, g, inputs, out):
    from .ops import sum_to_shape
    return (sum_to_shape(g, inputs[0].shape),)


def _vjp_reshape(ctx, g, inputs, out):
    return (g.reshape(inputs[0].shape),)


def _vjp_gather(ctx, g, inputs, out):
    from .ops import scatter_flat
    return (scatter_flat(g, ctx, inputs[0].shape),)  # ctx: the index map


def _vjp_cast(ctx, g, inputs, out):
    return (g.to(inputs[0].dtype),)


structural("sum", K_SUM, "SumBackward1", _vjp_sum)
structural("sum_all", K_SUM, "SumBackward0", _vjp_sum)
structural("mean", K_SUM, "MeanBackward1", _vjp_mean)
structural("mean_all", K_SUM, "MeanBackward0", _vjp_mean)
structural("expand", K_EXPAND, "ExpandBackward0", _vjp_expand)
structural("sum_to_shape", K_SUM, "SumBackward1", _vjp_sum)
structural("reshape", K_RESHAPE, "ViewBackward0", _vjp_reshape)
structural("gather_flat", K_GATHER, "IndexBackward0", _vjp_gather)
structural("cast", K_CAST, "ToCopyBackward0", _vjp_cast)


# -- Python ops: adjoint in tapegrad ops, dispatched between compiled segments -----------------------
def _mm_forward(a, b):
    return np.matmul(a, b)


def _vjp_matmul(ctx, g, inputs, out):
    from .ops import sum_to_shape
    a, b = inputs
    if a.ndim == 1 and b.ndim == 1:
        return g * b, g * a
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = g2.unsqueeze(-2)
    if b.ndim == 1:
        g2 = g2.unsqueeze(-1)
    ga = g2 @ b2.transpose(-1, -2)
    gb = a2.transpose(-1, -2) @ g2
    ga = sum_to_shape(ga, a2.shape).reshape(a.shape)
    gb = sum_to_shape(gb, b2.shape).reshape(b.shape)
    return ga, gb


def _matmul_arrays(ctx, g, inputs, wanted):
    """Plain backward of a matrix product: BLAS on transposed views, and only the wanted side (no gradient
    for the data x of x @ w)."""
    a, b = inputs
    if a.ndim != 2 or b.ndim != 2:
        return None
    return g @ b.T if wanted[0] else None, a.T @ g if wanted[1] else None


def _bce_logits_forward(z, t):
    return np.mean(np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z))))


def _vjp_bce_logits(ctx, g, inputs, out):
    z, t = inputs
    n = max(z.numel(), 1)
    return (z.sigmoid() - t) * (g / n), -z * (g / n)


def _norm_forward(x):
    return np.sqrt(np.sum(np.square(x, dtype=x.dtype)))


def _vjp_norm(ctx, g, inputs, out):
    from .ops import where
    x, = inputs
    return (where(out == 0, 0.0 * x, x * (g / out)),)  # torch: zero gradient at the origin


def _vjp_where(ctx, g, inputs, out):
    from .ops import where
    cond, a, b = inputs
    return None, where(cond, g, 0.0), where(cond, 0.0, g)


def _vjp_scatter(ctx, g, inputs, out):
    from .ops import _gather
    return (_gather(g, ctx),)  # ctx: the index map


python("matmul", "MmBackward0", _mm_forward, _vjp_matmul, array_vjp=_matmul_arrays)
python("mv", "MvBackward0", _mm_forward, _vjp_matmul)
python("bmm", "BmmBackward0", _mm_forward, _vjp_matmul)
python("dot", "DotBackward0", _mm_forward, _vjp_matmul)
python("where", "WhereBackward0", lambda cond, a, b: np.where(cond, a, b), _vjp_where, saves=1)
python("scatter_flat", "IndexPutBackward0", None, _vjp_scatter, saves=0)
python("bce_with_logits", "BinaryCrossEntropyWithLogitsBackward0", _bce_logits_forward, _vjp_bce_logits)
python("norm", "LinalgVectorNormBackward0", _norm_forward, _vjp_norm, saves=1 | SAVES_OUT)


def tables():
    """The kind and saves of every opcode, as arrays for the compiled replay (ops may be added later)."""
    global _tables
    if _tables is None or len(_tables[0]) != len(OPS):
        _tables = (np.array([op.kind for op in OPS], np.int8), np.array([op.saves for op in OPS], np.uint8))
    return _tables


_tables = None


def reads_input(saves, j):
    """Whether an op's rule may read its input j (numbers or NumPy arrays), for the tape's memory savings:
    its bit, SAVES_ALL, or any input past the six bits (kept, to be safe; `plan` checks no version there)."""
    if isinstance(j, np.ndarray):
        return ((saves & SAVES_ALL) != 0) | (j >= 6) | ((saves >> np.minimum(j, 6)) & 1 == 1)
    return bool(saves & SAVES_ALL) or j >= 6 or bool(saves >> j & 1)


# == The training op set ==============================================================================
# Elementwise additions. tanh is not a kernel function: 1 + tanh(u) = 2 * sigmoid(2u).
_GELU_S = "sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))"
unary("gelu_tanh", lambda x, c, c2: 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))),
      f"g * ({_GELU_S} * (1 + x * (1 - {_GELU_S}) * 1.5957691216057308 * (1 + 0.134145 * x * x)))",
      grad_fn="GeluBackward0")
unary("clamp_min", lambda x, c, c2: np.maximum(x, c),  "where(x >= c, g, 0 * g)", grad_fn="ClampMinBackward0")
unary("clamp_max", lambda x, c, c2: np.minimum(x, c),  "where(x <= c, g, 0 * g)", grad_fn="ClampMaxBackward0")
unary("round_decimals", lambda x, c, c2: np.round(x, int(c)),        "0 * g", grad_fn="RoundBackward1")
unary("log_sigmoid", lambda x, c, c2: -np.logaddexp(0, -x),          "g * sigmoid(-x)", grad_fn="LogSigmoidBackward0")
# tensor (op) number, as torch's C++ code computes it (its Python operators give the *Backward0 names)
unary("_div_scalar", lambda x, c, c2: x / c,                          "g / c", grad_fn="DivBackward1")
unary("_mul_scalar", lambda x, c, c2: x * c,                          "g * c", grad_fn="MulBackward1")


def _ops():
    from . import ops
    return ops


def _keep(g, ctx_shape):
    """g reshaped to the keepdim shape of a reduction (ctx_shape), ready to broadcast against the input."""
    return g if tuple(g.shape) == tuple(ctx_shape) else g.reshape(ctx_shape)


# Data movement: each is a gather (index map forward, compiled scatter-add adjoint) under torch's name.
for _name, _grad_fn in (("transpose", "TransposeBackward0"), ("t", "TBackward0"), ("permute", "PermuteBackward0"),
                        ("select", "SelectBackward0"), ("slice", "SliceBackward0"), ("index", "IndexBackward0"),
                        ("repeat", "RepeatBackward0"), ("flip", "FlipBackward0"), ("split", "SplitBackward0"),
                        ("split_with_sizes", "SplitWithSizesBackward0"), ("unbind", "UnbindBackward0"),
                        ("gather", "GatherBackward0"), ("index_select", "IndexSelectBackward0"),
                        ("max_dim", "MaxBackward0"), ("min_dim", "MinBackward0"),
                        ("embedding", "EmbeddingBackward0"), ("diagonal", "DiagonalBackward0"),
                        ("unsqueeze_gather", "UnsqueezeBackward0")):
    structural(_name, K_GATHER, _grad_fn, _vjp_gather)
for _name, _grad_fn in (("view", "ViewBackward0"),
                        ("squeeze", "SqueezeBackward0"), ("squeeze_dim", "SqueezeBackward1"),
                        ("squeeze_dims", "SqueezeBackward2"), ("unsqueeze", "UnsqueezeBackward0"),
                        ("alias", "AliasBackward0")):
    structural(_name, K_RESHAPE, _grad_fn, _vjp_reshape)


# -- Python ops: reductions ------------------------------------------------------------------------------
class Ctx:
    """A Python op's saved context (row aux): plain attributes."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _vjp_prod(ctx, g, inputs, out):
    """torch's prod_backward: g * out / x without zeros; with zeros, the product of the other elements."""
    T = _ops()
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    xd = x._data
    if not np.any(xd == 0):
        return (g * y / x,)
    if _grad_mode():  # differentiable: product of the others, one row per element (create_graph)
        dims, n = ctx.dims, ctx.n
        rest = tuple(d for d in range(x.ndim) if d not in dims)
        xp = T.permute(x, *(rest + dims)).reshape(tuple(x.shape[d] for d in rest) + (1, n))
        others = T.prod(T.where(_const(np.eye(n, dtype=bool)), 1.0, xp), -1)   # [..., n]
        perm_back = np.argsort(rest + dims)
        others = others.reshape(tuple(x.shape[d] for d in rest) + tuple(x.shape[d] for d in dims))
        return (g * T.permute(others, *perm_back.tolist()),)
    return (g * _const(_others_product(xd, ctx.dims)),)


def _others_product(xd, dims):
    """For each element, the product of the other elements of its reduction group (exclusive cumprods)."""
    rest = tuple(d for d in range(xd.ndim) if d not in dims)
    perm = rest + tuple(dims)
    xp = np.transpose(xd, perm)
    lead = xp.shape[:len(rest)]
    flat = xp.reshape(lead + (-1,))
    ones = np.ones(lead + (1,), xd.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1)[..., ::-1]
    return np.transpose((left * right).reshape(xp.shape), np.argsort(perm))


def _vjp_var(ctx, g, inputs, out):
    x, = inputs
    g = _keep(g, ctx.keep)
    return (g * (np.float64(2.0) / ctx.denom) * (x - x.mean(ctx.dims, keepdim=True)),)  # denom 0: inf, as torch


def _vjp_std(ctx, g, inputs, out):
    T = _ops()
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    gv = T.where(y == 0, 0.0, g / (2 * y))   # torch: zero gradient where std is 0
    return (gv * (np.float64(2.0) / ctx.denom) * (x - x.mean(ctx.dims, keepdim=True)),)


def _vjp_amax(ctx, g, inputs, out):
    """Ties share the gradient equally (torch's scale_grad_by_count)."""
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    mask = (x == y).to(x.dtype)  # a NaN extreme matches nothing: NaN gradients, as torch's amax
    return (mask * (g / mask.sum(ctx.dims, keepdim=True)),)


def _vjp_max_all(ctx, g, inputs, out):
    """max() and min() of all elements: torch's evenly_distribute_backward, where a NaN result counts the NaNs."""
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    mask = ((x == y) | (x.isnan() & y.isnan())).to(x.dtype)
    return (mask * (g / mask.sum(ctx.dims, keepdim=True)),)


def _vjp_softmax(ctx, g, inputs, out):
    return (out * (g - (g * out).sum(ctx, keepdim=True)),)      # ctx: the dim


def _vjp_log_softmax(ctx, g, inputs, out):
    return (g - out.exp() * g.sum(ctx, keepdim=True),)


def _vjp_logsumexp(ctx, g, inputs, out):
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    return (g * (x - y).exp(),)


def _vjp_cumsum(ctx, g, inputs, out):
    return (g.flip(ctx).cumsum(ctx).flip(ctx),)   # ctx: the dim


def _vjp_vector_norm(ctx, g, inputs, out):
    """torch's norm_backward, for each p: zero gradient where the norm is 0."""
    T = _ops()
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    p = ctx.p
    if p == 0:
        return (x * 0.0,)
    if p == 1:
        return (x.sign() * g,)
    if p == 2:
        return (T.where(y == 0, 0.0, g / y) * x,)
    if math.isinf(p):
        mask = (x.abs() == y).to(x.dtype)  # a NaN row matches nothing: zeros, as torch (not 0 / 0)
        return (x.sign() * mask * (g / mask.sum(ctx.dims, keepdim=True).clamp_min(1.0)),)
    if p < 1:
        scaled = T.where(x == 0, 0.0, x.sign() * x.abs() ** (p - 1))
        return (scaled * g * y ** (1 - p),)
    scaled = x.sign() * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
    return (scaled * T.where(y == 0, 0.0, g / y ** (p - 1)),)


python("prod", "ProdBackward1", None, _vjp_prod, saves=1 | SAVES_OUT)
python("prod_all", "ProdBackward0", None, _vjp_prod, saves=1 | SAVES_OUT)
python("var", "VarBackward0", None, _vjp_var, saves=1)
python("std", "StdBackward0", None, _vjp_std, saves=1 | SAVES_OUT)
python("amax", "AmaxBackward0", None, _vjp_amax, saves=1 | SAVES_OUT)
python("amin", "AminBackward0", None, _vjp_amax, saves=1 | SAVES_OUT)
python("max_all", "MaxBackward1", None, _vjp_max_all, saves=1 | SAVES_OUT)
python("min_all", "MinBackward1", None, _vjp_max_all, saves=1 | SAVES_OUT)
python("softmax", "SoftmaxBackward0", None, _vjp_softmax, saves=SAVES_OUT)
python("log_softmax", "LogSoftmaxBackward0", None, _vjp_log_softmax, saves=SAVES_OUT)
python("logsumexp", "LogsumexpBackward0", None, _vjp_logsumexp, saves=1 | SAVES_OUT)
python("cumsum", "CumsumBackward0", None, _vjp_cumsum, saves=0)
python("vector_norm", "LinalgVectorNormBackward0", None, _vjp_vector_norm, saves=1 | SAVES_OUT)


# -- Python ops: elementwise with tensor parameters, data movement with several inputs ----------------------
def _vjp_lerp(ctx, g, inputs, out):
    return g * (1.0 - ctx), g * ctx          # ctx: the scalar weight


def _vjp_lerp_tensor(ctx, g, inputs, out):
    start, end, weight = inputs
    return g * (1.0 - weight), g * weight, g * (end - start)


def _vjp_clamp_tensor(ctx, g, inputs, out):
    """torch's clamp_backward and clamp_backward_min_max (ctx: which of min, max are given)."""
    T = _ops()
    x = inputs[0]
    lo = inputs[1] if ctx[0] else None
    hi = inputs[1 + ctx[0]] if ctx[1] else None
    if lo is not None and hi is not None:
        return (T.where((x >= lo) & (x <= hi), g, 0.0), T.where((x < lo) & (lo < hi), g, 0.0),
                T.where((x > hi) | (hi < lo), g, 0.0))
    if lo is not None:
        return T.where(x >= lo, g, 0.0), T.where(x < lo, g, 0.0)
    return T.where(x <= hi, g, 0.0), T.where(x > hi, g, 0.0)


def _vjp_cat(ctx, g, inputs, out):
    T = _ops()
    dim, sizes = ctx
    grads, start = [], 0
    for s in sizes:
        if s is None:  # a legacy empty 1-D input that cat skipped
            grads.append(_const(np.zeros(0, g._data.dtype)))
            continue
        grads.append(T.narrow(g, dim, start, s))
        start += s
    return tuple(grads)


def _vjp_stack(ctx, g, inputs, out):
    return tuple(g.select(ctx, i) for i in range(len(inputs)))


def _vjp_scatter_add(ctx, g, inputs, out):
    T = _ops()
    dim, index = ctx
    return g, T.gather(g, dim, index)


def _vjp_masked_fill(ctx, g, inputs, out):
    T = _ops()
    grads = [T.where(ctx, 0.0, g)]           # ctx: the mask (a bool Tensor)
    if len(inputs) > 1:
        grads.append(T.where(ctx, g, 0.0).sum())
    return tuple(grads)


def _vjp_tril(ctx, g, inputs, out):
    return (g.tril(ctx),)


def _vjp_triu(ctx, g, inputs, out):
    return (g.triu(ctx),)


python("lerp", "LerpBackward0", None, _vjp_lerp, saves=0)
python("lerp_tensor", "LerpBackward1", None, _vjp_lerp_tensor, saves=1 | 2 | 4)
python("clamp_tensor", "ClampBackward0", None, _vjp_clamp_tensor, saves=1 | 2 | 4)
python("clamp_min_tensor", "ClampMinBackward1", None, _vjp_clamp_tensor, saves=1 | 2)
python("clamp_max_tensor", "ClampMaxBackward1", None, _vjp_clamp_tensor, saves=1 | 2)
python("cat", "CatBackward0", None, _vjp_cat, saves=0)
python("stack", "StackBackward0", None, _vjp_stack, saves=0)
python("scatter_add", "ScatterAddBackward0", None, _vjp_scatter_add, saves=0)
python("masked_fill", "MaskedFillBackward0", None, _vjp_masked_fill, saves=0)
python("masked_fill_tensor", "MaskedFillBackward1", None, _vjp_masked_fill, saves=0)
python("tril", "TrilBackward0", None, _vjp_tril, saves=0)
python("triu", "TriuBackward0", None, _vjp_triu, saves=0)


# -- Python ops: linear algebra -----------------------------------------------------------------------------
def _vjp_linear(ctx, g, inputs, out):
    """out = x @ w.T (+ b): inputs (x, w[, b])."""
    x, w = inputs[0], inputs[1]
    gx = g.mm(w) if x._requires_grad else None
    gw = g.t().mm(x) if w._requires_grad else None
    return (gx, gw, g) if len(inputs) > 2 else (gx, gw)


def _vjp_einsum(ctx, g, inputs, out):
    from .ops.linalg import _einsum_grads
    return _einsum_grads(ctx, g, inputs)


python("addmm", "AddmmBackward0", None, _vjp_linear)
python("linear", "MmBackward0", None, _vjp_linear)
python("einsum", "EinsumBackward0", None, _vjp_einsum)
python("matmul_fold", "UnsafeViewBackward0", _mm_forward, _vjp_matmul)
python("matmul_bcast", "CloneBackward0", _mm_forward, _vjp_matmul)
python("vecmat", "SqueezeBackward4", _mm_forward, _vjp_matmul)


# -- Python ops: losses -------------------------------------------------------------------------------------
def _const(a):
    from .tensor import _new
    return _new(a)


def _grad_mode():
    from .autograd.grad_mode import is_grad_enabled
    return is_grad_enabled()


def _vjp_nll(ctx, g, inputs, out):
    """nll_loss: d/dinput = -coef * g, where coef holds w[target] / denominator at the target classes."""
    if ctx.reduction == "none":
        g = g.unsqueeze(ctx.cdim)
    return (_const(ctx.coef) * g,)


def _nll_arrays(ctx, g, inputs, wanted):
    return (ctx.coef * (np.expand_dims(g, ctx.cdim) if ctx.reduction == "none" else g),)


def _vjp_cross_entropy(ctx, g, inputs, out):
    """log_softmax + nll fused: d/dx = (softmax(x) * rowsum(Q) - Q) * g, Q the target weights / denominator."""
    T = _ops()
    if ctx.reduction == "none":
        g = g.unsqueeze(ctx.cdim)
    x = inputs[0]
    p = T.softmax(x, ctx.cdim)
    q, rowq = _target_weights(ctx, x.shape, x._data.dtype)
    return ((p * _const(rowq) - _const(q)) * g,)


def _target_weights(ctx, shape, dtype):
    """Q (each sample's share of the loss at its target class, in x's layout) and its sums along the class
    dim, broadcast back: the create_graph rule's constants, built only when it runs."""
    cdim, tt = ctx.cdim, ctx.tt
    C = shape[cdim]
    q = np.zeros((len(tt), C), dtype)
    q[np.arange(len(tt)), tt] = ctx.scale
    rowq = ctx.scale.reshape(-1, 1) * np.ones((1, C), dtype)
    moved = tuple(s for i, s in enumerate(shape) if i != cdim) + (C,)
    return [np.ascontiguousarray(np.moveaxis(a.reshape(moved), -1, cdim)) for a in (q, rowq)]


def _cross_entropy_arrays(ctx, g, inputs, wanted):
    """The gradient for g = 1 was computed with the loss (ctx.dx)."""
    return (ctx.dx * (np.expand_dims(g, ctx.cdim) if ctx.reduction == "none" else g),)


def _vjp_mse(ctx, g, inputs, out):
    x, t = inputs
    d = (x - t) * (2.0 * g)
    if ctx.reduction == "mean":
        d = d / ctx.n
    return d, -d


def _vjp_smooth_l1(ctx, g, inputs, out):
    T = _ops()
    x, t = inputs
    d = x - t
    gd = T.where(d.abs() < ctx.beta, d / ctx.beta, d.sign()) * g
    if ctx.reduction == "mean":
        gd = gd / ctx.n
    return gd, -gd


def _vjp_bce(ctx, g, inputs, out):
    """torch: g * (x - t) / clamp_min((1 - x) * x, 1e-12) * w; the target's: g * -logit(x) * w."""
    T = _ops()
    x, t = inputs
    if ctx.reduction == "mean":
        g = g / ctx.n
    gx = g * (x - t) / T.clamp_min((1 - x) * x, 1e-12)
    gt = g * (T.log1p(-x) - T.log(x))
    if ctx.w is not None:
        gx, gt = gx * ctx.w, gt * ctx.w
    return gx, gt


def _vjp_bce_logits_full(ctx, g, inputs, out):
    """Inputs (z, t[, weight][, pos_weight]); ctx (reduction, has_weight, has_pos_weight)."""
    T = _ops()
    z, t = inputs[0], inputs[1]
    w = inputs[2] if ctx.has_w else None
    pw = inputs[2 + ctx.has_w] if ctx.has_pw else None
    if ctx.reduction == "mean":
        g = g / ctx.n
    sp_neg = T.softplus(-z)                      # -log(sigmoid(z))
    if pw is None:
        gz, gt = (z.sigmoid() - t) * g, -z * g
    else:
        gz = ((pw - 1) * t + 1) * z.sigmoid() - pw * t
        gz, gt = gz * g, (-z + (pw - 1) * sp_neg) * g
    if w is not None:
        gz, gt = gz * w, gt * w
    return (gz, gt) + (None,) * (len(inputs) - 2)


python("nll_loss", "NllLossBackward0", None, _vjp_nll, saves=0, array_vjp=_nll_arrays)
python("nll_loss2d", "NllLoss2DBackward0", None, _vjp_nll, saves=0, array_vjp=_nll_arrays)
python("cross_entropy", "NllLossBackward0", None, _vjp_cross_entropy, saves=1, array_vjp=_cross_entropy_arrays)
python("cross_entropy2d", "NllLoss2DBackward0", None, _vjp_cross_entropy, saves=1,
       array_vjp=_cross_entropy_arrays)
python("mse_loss", "MseLossBackward0", None, _vjp_mse, saves=1 | 2)
python("smooth_l1_loss", "SmoothL1LossBackward0", None, _vjp_smooth_l1, saves=1 | 2)
python("binary_cross_entropy", "BinaryCrossEntropyBackward0", None, _vjp_bce, saves=1 | 2 | 4)
python("bce_with_logits_full", "BinaryCrossEntropyWithLogitsBackward0", None, _vjp_bce_logits_full,
       saves=1 | 2 | 4 | 8)


def _vjp_embedding_padded(ctx, g, inputs, out):
    """Rows looked up at padding_idx get no gradient (ctx: index map, keep mask, weight shape)."""
    from .ops import scatter_flat
    index_map, keep, shape = ctx
    return (scatter_flat(g * keep, index_map, shape),)


python("embedding_padded", "EmbeddingBackward0", None, _vjp_embedding_padded, saves=0)


# -- tapegrad.compile: one row per output of a traced function (tapegrad/trace.py) ---------------------------
def _vjp_compiled(ctx, g, inputs, out):
    """One output of a tapegrad.compile'd call: a plain backward replays its private tape (ctx.program)."""
    from .trace import DOUBLE_BACKWARD
    raise RuntimeError(DOUBLE_BACKWARD)


def _compiled_arrays(ctx, g, inputs, wanted):
    return ctx.program.backward(ctx, g, wanted)


# SAVES_ALL: the backward reads the arrays of the call, so the plan checks that none was changed in place since
python("compiled", "CompiledFunctionBackward", None, _vjp_compiled, saves=SAVES_ALL, array_vjp=_compiled_arrays)


def _vjp_traced_rule(ctx, g, inputs, out):
    """One input's gradient by an op's array rule (matmul's BLAS, a fused loss's saved gradient), recorded when
    tapegrad.compile traces autograd.grad without create_graph; its result is detached, so this never runs."""
    raise RuntimeError("tapegrad.compile: a gradient taken without create_graph=True is not differentiable")


# ctx: (the op, its context, the input's index, the one-hot `wanted` its replay passes to the rule)
python("traced_rule", "TracedRuleBackward", None, _vjp_traced_rule, saves=0)


# -- Ordering and layout ops scripts use (ops/sort.py, ops/layout.py) ------------------------------------------
for _name, _grad_fn in (("sort", "SortBackward0"), ("sort_stable", "SortBackward1"), ("topk", "TopkBackward0"),
                        ("roll", "RollBackward0")):
    structural(_name, K_GATHER, _grad_fn, _vjp_gather)


def _vjp_diag_embed(ctx, g, inputs, out):
    return (g.diagonal(ctx),)          # ctx: the diagonal's offset


python("diag_embed", "DiagEmbedBackward0", None, _vjp_diag_embed, saves=0)


# -- Sparse COO @ dense (ops/sparse.py): inputs (the sparse matrix's values, the dense matrix) -------------------------
def _vjp_sparse_mm(ctx, g, inputs, out):
    """ctx: the sparse structure. d/dvalues[e] = <g[row e], dense[col e]>; d/ddense = sparse.T @ g."""
    from .ops.sparse import _sparse_mm
    T = _ops()
    vals, dense = inputs
    rows, cols = _const(ctx.ind_rows), _const(ctx.ind_cols)
    gv = (T.index_select(g, 0, rows) * T.index_select(dense, 0, cols)).sum(1)
    return gv, _sparse_mm(ctx.transposed(), vals, g)


def _sparse_mm_arrays(ctx, g, inputs, wanted):
    from .ops.sparse import _rows_product
    vals, dense = inputs
    gv = np.einsum("ij,ij->i", g[ctx.ind_rows], dense[ctx.ind_cols]) if wanted[0] else None
    t = ctx.transposed()
    gd = _rows_product(t.rows, t.cols, t.values(vals), t.m, g) if wanted[1] else None
    return gv, gd


python("sparse_mm", "MmBackward0", None, _vjp_sparse_mm, saves=1 | 2, array_vjp=_sparse_mm_arrays)
