"""The op table: a passive registry that every op module declares its ops into, beside their front-ends.

This is tapegrad's derivatives.yaml, spread as JAX spreads `ad.defjvp` lines: each op module (ops/*.py,
autograd/function.py, tracing.py) declares its ops once with `unary`, `binary`, `structural` or `python`,
and everything else learns from the table: the compiled replay (kernels/elementwise.py is generated from
it: `python -m tapegrad.kernels.codegen`), create_graph, `tapegrad.compile` (each op's `forward` on arrays,
or `unreplayable`, the reason it has none), grad_fn names and docs/ops.md (`python -m tapegrad.docs_ops`).
This module imports no other tapegrad module.

An elementwise op's derivative is an expression string, evaluated in two places, so the two cannot drift:
  * the generated compiled replay runs it per element with x (input), y (output), g (output adjoint),
    c, c2 (scalar attributes);
  * backward(create_graph=True) evaluates it on Tensors, so the backward is itself recorded on the tape.
Binary ops use a, b for the inputs; each also gets a tensor-scalar (`_ts`, b is the constant c) and a
scalar-tensor (`_st`, a is the constant c) variant. What such a rule reads (its `saves`) is derived from
the expression. Other ops give `vjp(ctx, g, inputs, out)` written in tapegrad ops: it runs under no_grad
in a plain backward and recorded under create_graph. A Python op on the hot path may also give
`array_vjp(ctx, g, inputs, out, wanted)` on NumPy arrays, which a plain backward calls instead (no Tensor is
made); it returns None where it does not apply, and then `vjp` runs. What these read (their `saves`) is
derived from their source (rule_reads.py), stored in the generated rule_saves.py
(`python -m tapegrad.rule_reads --write`; an op not yet there is derived when first asked).

An op's `forward` recomputes its value from arrays for `tapegrad.compile`: `(x, c, c2)` for a unary op,
`(a, b)` for a binary one, `(ctx, *inputs)` for a Python op or a gather (ctx: the row's saved context).
Sums, expands, reshapes and casts need none: their kind says how. An op that cannot be replayed says why
in `unreplayable`, which `compile(fullgraph=True)` reports.
"""
import re

import numpy as np

from . import rule_saves
from .derived_rules import RULES as DERIVED_RULES

K_LEAF, K_UNARY, K_BINARY, K_SUM, K_EXPAND, K_RESHAPE, K_GATHER, K_CAST, K_PYTHON = range(9)
# An op's `saves` byte: bit j < 6, its backward reads input j; SAVES_ALL, every input, however many (a compiled
# call's); SAVES_OUT, its output. `plan` checks the versions of exactly these (kernels/runtime.py).
SAVES_ALL, SAVES_OUT = 64, 128
# A bit of tables()'s saves only (past the byte): a Python row whose rule may hold its grad_output past the call
# (a user's backward, a gradient handed on to another row), so the replay never gives its adjoint block to
# another row. The library's own rules use their grad_output within the call.
HOLDS_GRAD = 256
# Kinds of tables()'s kinds only, K_RULE + j for the op whose compiled_rule is COMPILED_RULES[j]: a Python row whose
# rule the compiled replay also has and runs itself when the row's arrays suit it (kernels/runtime.py, _rule_here):
# `x @ w.T (+ b)` rows and 2-d matrix products (by NumPy's BLAS gemm, called from the replay), pointwise losses of
# one shape, softmax and log_softmax over the last dimension, LSTM cell steps. Returning to Python for them cost
# more than their arithmetic (about 10 us a row). Any other row of the op returns to Python, as any PYTHON row.
K_RULE = 9
COMPILED_RULES = ("linear", "mse", "smooth_l1", "huber", "matmul", "softmax", "log_softmax", "lstm_c", "lstm_h")


class OpDef:
    __slots__ = ("code", "name", "kind", "grad_fn", "forward", "derivs", "vjp", "declared_saves", "_saves", "doc",
                 "array_vjp", "ufunc", "unreplayable", "holds_grad", "compiled_rule")

    def __init__(self, name, kind, grad_fn, forward=None, derivs=(), vjp=None, saves=0, doc="", array_vjp=None,
                 unreplayable=None):
        if name in BY_NAME:
            raise ValueError(f"op {name!r} is declared twice")
        self.code = len(OPS)
        self.ufunc = None  # a unary op whose forward is one NumPy ufunc of x: that ufunc (tapegrad.compile)
        self.name, self.kind, self.grad_fn, self.forward = name, kind, grad_fn, forward
        self.derivs, self.vjp, self.doc = tuple(derivs), vjp, doc
        self.declared_saves = self._saves = saves
        self.array_vjp, self.unreplayable = array_vjp, unreplayable
        self.holds_grad, self.compiled_rule = False, None
        OPS.append(self)
        BY_NAME[name] = self

    @property
    def saves(self):
        """The inputs (bits) and output (SAVES_OUT) its backward reads; None given: derived from its rules."""
        if self._saves is None:
            self._saves = rule_saves.SAVES.get(self.name)
            if self._saves is None:
                from . import rule_reads   # (an op declared since rule_saves.py was generated)
                self._saves = rule_reads.saves(self.vjp, self.array_vjp)
        return self._saves

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


def structural(name, kind, grad_fn, vjp, saves=None, doc="", forward=None, unreplayable=None):
    """A row the compiled replay runs by its kind (sums, expands, reshapes, gathers, casts)."""
    OpDef(name, kind, grad_fn, forward, (), vjp, saves, doc, unreplayable=unreplayable)


def python(name, grad_fn, forward, vjp, saves=None, doc="", array_vjp=None, unreplayable=None, holds_grad=False,
           compiled_rule=None):
    """An op whose adjoint runs in Python between compiled segments (BLAS, fused losses, layers).
    forward: `(ctx, *inputs) -> value` on arrays, what `tapegrad.compile` reruns; or None, with the reason
    it cannot be replayed in `unreplayable`. saves: given only where the rule reads its inputs through
    its context, which the derivation cannot see. holds_grad: the rule may keep its grad_output (a view of
    the row's adjoint block) past the call (see HOLDS_GRAD). compiled_rule: the name in COMPILED_RULES of the
    replay's own copy of the rule (see K_RULE), which gives the array rule's results (its bits; by gemm, within
    rounding)."""
    op = OpDef(name, K_PYTHON, grad_fn, forward, (), vjp, saves, doc, array_vjp, unreplayable)
    op.holds_grad, op.compiled_rule = holds_grad, compiled_rule
    if compiled_rule is not None and compiled_rule not in COMPILED_RULES:
        raise ValueError(f"op {name!r}: no compiled rule {compiled_rule!r}")


def _torch_name(name):
    return "".join(p.capitalize() for p in name.split("_")) + "Backward0"


# -- Rows that are not ops ---------------------------------------------------------------------------
OpDef("leaf", K_LEAF, "AccumulateGrad")
OpDef("const", K_LEAF, None)
OpDef("freed", K_LEAF, None)
assert BY_NAME["leaf"].code == 0 and BY_NAME["freed"].code == 2  # the tape's OP_LEAF / OP_FREED


class Ctx:
    """A Python op's saved context (row aux): plain attributes."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def tables():
    """The kind and saves of every opcode, as arrays for the compiled replay (ops may be added later)."""
    global _tables
    if _tables is None or len(_tables[0]) != len(OPS):
        _tables = (np.array([op.kind if op.compiled_rule is None else K_RULE + COMPILED_RULES.index(op.compiled_rule)
                             for op in OPS], np.int8),
                   np.array([op.saves | (HOLDS_GRAD if op.holds_grad else 0) for op in OPS], np.uint16))
    return _tables


_tables = None


def reads_input(saves, j):
    """Whether an op's rule may read its input j (numbers or NumPy arrays), for the tape's memory savings:
    its bit, SAVES_ALL, or any input past the six bits (kept, to be safe; `plan` checks no version there)."""
    if isinstance(j, np.ndarray):
        return ((saves & SAVES_ALL) != 0) | (j >= 6) | ((saves >> np.minimum(j, 6)) & 1 == 1)
    return bool(saves & SAVES_ALL) or j >= 6 or bool(saves >> j & 1)


def reads_every_input(saves, n):
    """Whether reads_input holds for each of an op's n inputs (x * y reads both)."""
    bits = (1 << min(n, 6)) - 1
    return bool(saves & SAVES_ALL) or saves & bits == bits


# -- create_graph's fused derivative rows ----------------------------------------------------------------------
DERIVED = {}  # (opcode, input index) -> (the derived op, the names of its two inputs in the expression)
DERIVED_NAMES = set()  # the derived ops' names
DERIVED_EXPRESSIONS = {}  # a derived op's name -> its expression in a and b (create_graph.py gives its forward)


def _node_name(grad_fn):
    """torch's name for the node of a backward's backward: TanhBackward0 -> TanhBackwardBackward0."""
    return grad_fn[:-1] + "Backward0" if grad_fn.endswith("0") else grad_fn + "Backward0"


def declare_derived():
    """A derived binary op for each derivative expression of two tensors whose own derivatives are known (the
    rules of the generated derived_rules.py; an expression missing there is derived now), which create_graph
    records as one row (create_graph.py). ops/elementwise.py calls this right after declaring the elementwise
    ops, so that these ops' codes, which the generated kernels fix, stay put when an op is declared later."""
    for op in list(OPS):
        if op.kind not in (K_UNARY, K_BINARY) or (op.code, 0) in DERIVED or op.name in DERIVED_NAMES:
            continue
        for j, d in enumerate(op.derivs):
            if d in DERIVED_RULES:
                rule = DERIVED_RULES[d]
            else:  # an op declared since derived_rules.py was generated: the symbolic work, once, here
                from .derivatives import derive  # (not at import: the generated table is what a program reads)
                rule = derive(d)
            if rule is None:
                continue
            names, expr, da, db = rule
            name = op.name + "_backward" + (str(j) if len(op.derivs) > 1 else "")
            OpDef(name, K_BINARY, _node_name(op.grad_fn), None, (da, db), saves=_saves((da, db), ("a", "b")),
                  doc=f"create_graph's row for {op.name}'s derivative {d}")
            DERIVED[(op.code, j)] = (BY_NAME[name], tuple(names))
            DERIVED_NAMES.add(name)
            DERIVED_EXPRESSIONS[name] = expr
