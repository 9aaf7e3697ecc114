"""create_graph=True: the backward run in Python, each row's rule evaluated on Tensors (the declared
derivative expression, or the op's vjp), so that the backward is itself recorded and can be differentiated
again. The compiled driver (replay.py) uses `graph_vjp` too, for a float16 row and to name a NaN's input."""
import ast

import numpy as np

from . import anomaly, ops, registry
from .accumulate import into_leaf, watched, wrap
from .grad_mode import enable_grad
from .ops import sum_to_shape
from .tape import F_STOP
from .tensor import Tensor, _new


def run_graph(tape, need, roots, seeds, targets, accumulate, vjp=None):
    """The backward as Tensor ops, recorded: each row's rule is `vjp(op, tape, row, g, inputs)`, graph_vjp's by
    default (tapegrad.compile gives its own for a gradient it traces)."""
    vjp = vjp or graph_vjp
    grads = {}
    for r, s in zip(roots, seeds):
        if need[r]:
            g = s if isinstance(s, Tensor) else _new(np.asarray(s))
            grads[r] = grads[r] + g if r in grads else g
    target_set = set(targets or ())
    traced = anomaly.is_anomaly_enabled()
    check = traced and anomaly.is_anomaly_check_nan_enabled()
    with enable_grad():
        for i in np.flatnonzero(need[: max(roots) + 1])[::-1].tolist():
            if i not in grads:
                continue
            g = grads[i] if i in target_set else grads.pop(i)
            if tape.flags[i] & F_STOP:
                g = watched(tape, i, g, graph=True)
            op = registry.OPS[tape.op[i]]
            if op.kind == registry.K_LEAF:
                if accumulate:
                    into_leaf(tape, i, g, targets, graph=True)
                continue
            args = tape.row_args(i)
            if not any(need[a] for a in args):
                continue
            inputs = [wrap(tape, a) for a in args]
            if traced:
                with anomaly.inducing(tape, i, anomaly.row_name(tape, i)):
                    out = anomaly.run_named(tape, i, _checked_graph_vjp, vjp, op, tape, i, g, inputs, args, need, check)
            else:
                out = vjp(op, tape, i, g, inputs)
            for a, ga in zip(args, out):
                if ga is None or not need[a]:
                    continue
                ga = sum_to_shape(ga, tape.values[a].shape)
                grads[a] = grads[a] + ga if a in grads else ga
    if targets is not None:
        return [grads.get(r) for r in targets]


def _checked_graph_vjp(vjp, op, tape, row, g, inputs, args, need, check):
    out = vjp(op, tape, row, g, inputs)
    if check:
        for j, (a, ga) in enumerate(zip(args, out)):
            if need[a] and anomaly.has_nan(ga):
                raise RuntimeError(anomaly.nan_message(anomaly.row_name(tape, row), j))
    return out


def graph_vjp(op, tape, row, g, inputs, out=None):
    """An op's backward written in tapegrad ops: the registry expression, or its vjp function. out: the
    row's output as the rule should see it (default: the row's value, connected to the tape)."""
    out = wrap(tape, row) if out is None else out
    if op.vjp is not None:
        ctx = tape.aux.get(row)
        if ctx is None and op.kind == registry.K_SUM:
            ctx = _keep_shape(inputs[0].shape, int(tape.iattr[row]))
        return op.vjp(ctx, g, inputs, out)
    env = {}
    env.update(g=g, y=out, c=float(tape.fattr[row, 0]), c2=float(tape.fattr[row, 1]))
    if op.kind == registry.K_BINARY:
        env.update(a=inputs[0], b=inputs[1])
    else:
        env.update(x=inputs[0])
    out = []
    for d in op.derivs:
        code, names = _compiled(d)
        for name in names:
            env[name] = _function(name)
        out.append(eval(code, env))
    return out


def _keep_shape(shape, mask):
    return tuple(1 if (mask >> d) & 1 else s for d, s in enumerate(shape))


# -- derivative expressions, evaluated on Tensors ------------------------------------------------------------
# The registry's strings are written for scalars (the generated kernels); on Tensors two things differ:
# `&` / `|` between a Python bool (from a comparison of constants, `c == 0`) and a Tensor, and a function
# of constants only (`log(c)`), which must stay a float64 Python number. Both are handled here.
_VARIABLES = frozenset(("g", "y", "x", "a", "b", "c", "c2"))
_code_cache = {}
_functions = {}


class _Logical(ast.NodeTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        fn = {ast.BitAnd: "_and_", ast.BitOr: "_or_"}.get(type(node.op))
        if fn is None:
            return node
        return ast.copy_location(ast.Call(ast.Name(fn, ast.Load()), [node.left, node.right], []), node)


def _compiled(expr):
    entry = _code_cache.get(expr)
    if entry is None:
        tree = ast.fix_missing_locations(_Logical().visit(ast.parse(expr, mode="eval")))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - _VARIABLES
        entry = _code_cache[expr] = (compile(tree, f"<derivative {expr}>", "eval"), tuple(sorted(names)))
    return entry


def _function(name):
    fn = _functions.get(name)
    if fn is None:
        if name in ("_and_", "_or_"):
            op = ops.logical_and if name == "_and_" else ops.logical_or
            scalar = (lambda p, q: p & q) if name == "_and_" else (lambda p, q: p | q)
        else:
            op = scalar = getattr(ops, name)

        def fn(*args, _op=op, _scalar=scalar):
            if any(isinstance(v, Tensor) for v in args):
                return _op(*args)
            if _scalar is _op:  # constants only: float64, not the default float32 of a new tensor
                return _op(*(_new(np.asarray(v, None if isinstance(v, (bool, np.bool_)) else np.float64))
                             for v in args)).item()
            return _scalar(*args)
        _functions[name] = fn
    return fn
