"""Every differentiable op, declared once: its torch name, its NumPy forward, and its derivative.

This is tapegrad's derivatives.yaml. An elementwise op's derivative is an expression string, evaluated
in two places, so the two cannot drift:
  * kernels/elementwise.py is generated from it (`python -m tapegrad.kernels.codegen`): the compiled
    replay runs it per element with x (input), y (output), g (output adjoint), c, c2 (scalar attributes);
  * backward(create_graph=True) evaluates it on Tensors, so the backward is itself recorded on the tape.
Binary ops use a, b for the inputs; each also gets a tensor-scalar (`_ts`, b is the constant c) and a
scalar-tensor (`_st`, a is the constant c) variant. Other ops give `vjp(ctx, g, inputs, out)` written
in tapegrad ops: it runs under no_grad in a plain backward and recorded under create_graph.
docs/ops.md is generated from this table too.
"""
import math
import re

import numpy as np

K_LEAF, K_UNARY, K_BINARY, K_SUM, K_EXPAND, K_RESHAPE, K_GATHER, K_CAST, K_PYTHON = range(9)
SAVES_OUT = 128


class OpDef:
    __slots__ = ("code", "name", "kind", "grad_fn", "forward", "derivs", "vjp", "saves", "doc")

    def __init__(self, name, kind, grad_fn, forward=None, derivs=(), vjp=None, saves=0, doc=""):
        self.code = len(OPS)
        self.name, self.kind, self.grad_fn, self.forward = name, kind, grad_fn, forward
        self.derivs, self.vjp, self.saves, self.doc = tuple(derivs), vjp, saves, doc
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
    OpDef(name, K_UNARY, grad_fn or _torch_name(name), forward, (dx,), saves=_saves((dx,), ("x",)), doc=doc)


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


def python(name, grad_fn, forward, vjp, saves=1 | 2 | 4 | 8, doc=""):
    """An op whose adjoint runs in Python between compiled segments (BLAS, fused losses)."""
    OpDef(name, K_PYTHON, grad_fn, forward, (), vjp, saves, doc)


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
    from .kernels.scalar import erf_array
    return erf_array(x)


# -- Unary elementwise -------------------------------------------------------------------------------
# name        forward (x, c, c2)                                      dx
unary("neg",     lambda x, c, c2: np.negative(x),                    "-g")
unary("exp",     lambda x, c, c2: np.exp(x),                         "g * y")
unary("log",     lambda x, c, c2: np.log(x),                         "g / x")
unary("sqrt",    lambda x, c, c2: np.sqrt(x),                        "g / (2 * y)")
unary("sin",     lambda x, c, c2: np.sin(x),                         "g * cos(x)")
unary("cos",     lambda x, c, c2: np.cos(x),                         "-g * sin(x)")
unary("tan",     lambda x, c, c2: np.tan(x),                         "g * (1 + y * y)")
unary("tanh",    lambda x, c, c2: np.tanh(x),                        "g * (1 - y * y)")
unary("sigmoid", lambda x, c, c2: _sigmoid(x),                       "g * y * (1 - y)")
unary("relu",    lambda x, c, c2: np.maximum(x, 0),                  "g * (y > 0)")
unary("abs",     lambda x, c, c2: np.abs(x),                         "g * sign(x)")
unary("reciprocal", lambda x, c, c2: np.reciprocal(x),               "-g * y * y")
unary("square",  lambda x, c, c2: np.square(x),                      "2 * g * x", grad_fn="PowBackward0")
unary("rsqrt",   lambda x, c, c2: 1 / np.sqrt(x),                    "-0.5 * g * y * y * y")
unary("log1p",   lambda x, c, c2: np.log1p(x),                       "g / (1 + x)")
unary("expm1",   lambda x, c, c2: np.expm1(x),                       "g * (y + 1)")
unary("log2",    lambda x, c, c2: np.log2(x),                        f"g / (x * {LN2!r})")
unary("exp2",    lambda x, c, c2: np.exp2(x),                        f"g * y * {LN2!r}")
unary("asin",    lambda x, c, c2: np.arcsin(x),                      "g / sqrt(1 - x * x)")
unary("acos",    lambda x, c, c2: np.arccos(x),                      "-g / sqrt(1 - x * x)")
unary("atan",    lambda x, c, c2: np.arctan(x),                      "g / (1 + x * x)")
unary("sinh",    lambda x, c, c2: np.sinh(x),                        "g * cosh(x)")
unary("cosh",    lambda x, c, c2: np.cosh(x),                        "g * sinh(x)")
unary("erf",     lambda x, c, c2: _erf(x),                           "g * 1.1283791670955126 * exp(-x * x)")
unary("sign",    lambda x, c, c2: np.sign(x),                        "0 * g")
unary("floor",   lambda x, c, c2: np.floor(x),                       "0 * g")
unary("ceil",    lambda x, c, c2: np.ceil(x),                        "0 * g")
unary("round",   lambda x, c, c2: np.round(x),                       "0 * g")
unary("trunc",   lambda x, c, c2: np.trunc(x),                       "0 * g")
unary("gelu",    lambda x, c, c2: 0.5 * x * (1 + _erf(x * 0.7071067811865476)),
      "g * (0.5 * (1 + erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x))")
unary("silu",    lambda x, c, c2: x * _sigmoid(x),                   "g * sigmoid(x) * (1 + x * (1 - sigmoid(x)))")
# c = beta, c2 = threshold: linear above threshold, as torch's softplus
unary("softplus", lambda x, c, c2: np.where(x * c > c2, x, np.logaddexp(0, c * x) / c),
      "where(x * c > c2, g, g * sigmoid(c * x))")
unary("leaky_relu", lambda x, c, c2: np.where(x > 0, x, x * c),      "where(x > 0, g, g * c)")
unary("elu",     lambda x, c, c2: np.where(x > 0, x, c * np.expm1(np.minimum(x, 0))), "where(x > 0, g, g * (y + c))")
unary("hardtanh", lambda x, c, c2: np.clip(x, c, c2),                "where((x > c) & (x < c2), g, 0 * g)")
unary("clamp",   lambda x, c, c2: np.minimum(np.maximum(x, c), c2),  "where((x >= c) & (x <= c2), g, 0 * g)",
      grad_fn="ClampBackward1")
unary("copy",    lambda x, c, c2: x.copy(),                          "g", grad_fn="CloneBackward0")

# -- Binary elementwise (broadcasting) ---------------------------------------------------------------
binary("add", np.add,           "g",     "g")
binary("sub", np.subtract,      "g",     "-g", st="RsubBackward1")
binary("mul", np.multiply,      "g * b", "g * a")
binary("div", np.true_divide,   "g / b", "-g * y / b")
binary("pow", np.power,         "g * b * a ** (b - 1)",
       "where((a == 0) & (b >= 0), 0 * g, g * y * log(a))", grad_fn="PowBackward1", ts="PowBackward0")
binary("maximum", np.maximum,   "where(a > b, g, where(a == b, 0.5 * g, 0 * g))",
       "where(b > a, g, where(a == b, 0.5 * g, 0 * g))")
binary("minimum", np.minimum,   "where(a < b, g, where(a == b, 0.5 * g, 0 * g))",
       "where(b < a, g, where(a == b, 0.5 * g, 0 * g))")
binary("atan2", np.arctan2,     "g * b / (a * a + b * b)", "-g * a / (a * a + b * b)")


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


python("matmul", "MmBackward0", _mm_forward, _vjp_matmul)
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
