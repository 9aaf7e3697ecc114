"""create_graph=True: the backward run in Python, each row's rule evaluated on Tensors (the declared
derivative expression, or the op's vjp), so that the backward is itself recorded and can be differentiated
again. The compiled driver (replay.py) uses `graph_vjp` too, for a float16 row and to name a NaN's input."""
import ast

import numpy as np

from . import anomaly, ops, registry
from .accumulate import current_pass, edges, into_leaf, node_rows, run_node_posthooks, run_node_prehooks, watched
from .grad_mode import enable_grad
from .ops import sum_to_shape
from .ops._common import _record
from .ops.sparse import SparseTensor
from .tape import F_STOP, OP_LEAF, _local as _tape_local
from .tensor import Tensor, _new, wrap


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
    nodes = tape.__dict__.get("node_hooks")  # (made by the first grad_fn.register_hook / register_prehook)
    with enable_grad():
        for i in np.flatnonzero(need[: max(roots) + 1])[::-1].tolist():
            if i not in grads:
                continue
            if nodes and i in nodes and nodes[i].active():
                _graph_node(tape, i, nodes[i], need, grads, target_set, vjp)
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
                if type(ga) is SparseTensor:  # embedding(sparse=True): sparse into a leaf, dense into any other row
                    if tape.op[a] != OP_LEAF:
                        ga = ga.to_dense()
                else:
                    ga = sum_to_shape(ga, tape.values[a].shape)
                if a not in grads:
                    grads[a] = ga
                else:  # (dense + sparse, never sparse + dense: torch's CPU add refuses that order)
                    grads[a] = ga + grads[a] if type(grads[a]) is SparseTensor and type(ga) is not SparseTensor \
                        else grads[a] + ga
    if targets is not None:
        return [grads.get(r) for r in targets]


def _graph_node(tape, row, hooks, need, grads, target_set, vjp):
    """run_graph's step at the first row it reaches of a node with hooks (replay._node_row's, recorded): its
    output gradients through its tensors' hooks and its pre-hooks, its rule, its hooks, and the input gradients
    added to `grads`. A multi-output node's further rows, whose gradients it takes, are then passed over."""
    rows = node_rows(tape, row)
    outs = []
    for r in rows:
        g = (grads.get(r) if r in target_set else grads.pop(r, None)) if need[r] else None
        if g is not None and tape.flags[r] & F_STOP:
            g = watched(tape, r, g, graph=True)
        outs.append(g)
    op = registry.OPS[tape.op[row]]
    args = tape.row_args(row)
    inputs = [wrap(tape, a) for a in args]
    ctx = tape.aux.get(row)
    function = op.name == "function"
    if function:  # a custom Function: the further outputs' gradients their rows stashed
        pending = ctx._pending if ctx.__dict__.get("_pending_token") is current_pass() else {}
        first = outs[0]
        outs = [pending.get(j) for j in range(len(ctx._output_meta))]
        outs[ctx._primary] = first
    outs = run_node_prehooks(hooks, tuple(outs), True)
    total = [None] * len(args)
    if function:
        ctx._pending_token, ctx._pending = current_pass(), {j: g for j, g in enumerate(outs) if j != ctx._primary
                                                            and g is not None}
        total = list(vjp(op, tape, row, outs[ctx._primary], inputs))
    else:
        for r, g in zip(rows, outs):
            if g is not None:
                for j, ga in enumerate(vjp(registry.OPS[tape.op[r]], tape, r, g, inputs)):
                    if ga is not None and need[args[j]]:
                        total[j] = ga if total[j] is None else total[j] + ga
    total = [None if ga is None or not need[a] else
             ga.to_dense() if type(ga) is SparseTensor else sum_to_shape(ga, tape.values[a].shape)
             for a, ga in zip(args, total)]
    index = edges(tape, row, len(args))
    grad_inputs = run_node_posthooks(hooks, tuple(None if j is None else total[j] for j in index), outs, True)
    for j, ga in zip(index, grad_inputs):
        if j is None or ga is None or not need[args[j]]:
            continue
        a = args[j]
        grads[a] = grads[a] + ga if a in grads else ga


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
    fused = _derived_rows(op, tape, row, g, inputs, out) if _tape_local.tracing is None else None
    # (tapegrad.compile traces op by op: its replay runs those rows as NumPy's own loops)
    if fused is not None and all(t is not None for t in fused):
        return fused
    env = {}
    env.update(g=g, y=out, c=float(tape.fattr[row, 0]), c2=float(tape.fattr[row, 1]))
    if op.kind == registry.K_BINARY:
        env.update(a=inputs[0], b=inputs[1])
    else:
        env.update(x=inputs[0])
    out = []
    for j, d in enumerate(op.derivs):
        if fused is not None and fused[j] is not None:
            out.append(fused[j])
            continue
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
            op = ops.elementwise._logical_and_any if name == "_and_" else ops.elementwise._logical_or_any
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


# -- fused derivative rows ---------------------------------------------------------------------------------
# An elementwise op's derivative expression that reads two tensors (`g * (1 - y * y)`: g and y) is itself an
# op, declared here for each such expression of the table: a binary elementwise op whose forward is the
# expression and whose own derivatives are derived from it (reverse-mode differentiation of its syntax tree in
# derivatives.py, stored in the generated derived_rules.py), so the kernels are generated for it like any
# other's (kernels/elementwise.py). create_graph records one row of it instead of a row per arithmetic op of the
# expression, and a backward through that row runs in the compiled replay; a third order evaluates the derived
# op's own expressions (graph_vjp, below).
def _specialize(node, constants):
    """An expression on arrays for given constants c, c2 (post-order): every part that reads no tensor is
    computed once, by create_graph's scalar rules (a Python number, as op by op: `c - 1`, `c == 0`), a `_select`
    on a constant condition is the branch it picks, `u ** 2.0` (1.0, 3.0) is the product the pow op's forward
    and the kernels' `power` compute, `&` and `|` are the logical functions; what remains calls each function
    on at least one array."""
    for field, old in ast.iter_fields(node):
        if isinstance(old, list):
            setattr(node, field, [_specialize(v, constants) if isinstance(v, ast.AST) else v for v in old])
        elif isinstance(old, ast.AST):
            setattr(node, field, _specialize(old, constants))
    if isinstance(node, ast.Name):
        return ast.Constant(constants[node.id]) if node.id in constants else node
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        name = "_and_" if isinstance(node.op, ast.BitAnd) else "_or_"
        node = ast.Call(ast.Name(name, ast.Load()), [node.left, node.right], [])
    if isinstance(node, ast.expr) and not isinstance(node, ast.Constant) and _constant(node):
        code = compile(ast.fix_missing_locations(ast.Expression(node)), "<constant>", "eval")
        value = eval(code, {n.id: _function(n.id) for n in ast.walk(node) if isinstance(n, ast.Name)})
        return ast.Constant(value.item() if isinstance(value, np.generic) else value)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_select"
            and isinstance(node.args[0], ast.Constant)):
        return node.args[1] if node.args[0].value else node.args[2]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        e = node.right.value if isinstance(node.right, ast.Constant) else None
        if type(e) in (int, float) and e in (1, 2, 3):
            u = node.left
            return u if e == 1 else ast.BinOp(u, ast.Mult(), u) if e == 2 else ast.BinOp(
                ast.BinOp(u, ast.Mult(), u), ast.Mult(), u)
        return ast.Call(ast.Name("_pow_", ast.Load()), [node.left, node.right], [])
    return node


def _constant(node):
    """Whether an expression reads no tensor (only numbers and functions of them: its other names, once c and c2
    are numbers)."""
    return not any(isinstance(n, ast.Name) and n.id in ("a", "b") for n in ast.walk(node))


def _on_arrays(name):
    """A function of the expressions on arrays: the op's own NumPy forward, so that a fused row's value is what
    the rows it stands for computed (each call has an array argument: _Specialize computed the others)."""
    if name == "where":
        return np.where
    if name == "_select":
        return np.where
    if name == "_with_input":
        return lambda v, x: v if np.shape(v) == np.shape(x) else v + 0 * x
    if name in ("_and_", "_or_"):
        return np.logical_and if name == "_and_" else np.logical_or
    if name == "_pow_":
        return registry.BY_NAME["pow"].forward
    op = registry.BY_NAME[name]
    if op.ufunc is not None:
        return op.ufunc
    forward = op.forward
    return lambda u: forward(u, 0.0, 0.0)


_ON_ARRAYS = {"__name__": __name__}  # name -> its function on arrays (a NumPy warning from one is tapegrad's own: filtered)
_SPECIALIZED_MAX = 256  # (expression, c, c2) entries kept; a loop over many exponents starts again past it


def _array_forward(expr):
    """forward(a, b, c=0, c2=0) of a derived op: its expression on arrays, specialized for c and c2 once."""
    codes = {}

    def forward(a, b, c=0.0, c2=0.0):
        code = codes.get((c, c2))
        if code is None:
            if len(codes) >= _SPECIALIZED_MAX:
                codes.clear()
            body = ast.Expression(_specialize(ast.parse(expr, mode="eval").body, {"c": c, "c2": c2}))
            code = codes[c, c2] = compile(ast.fix_missing_locations(body), f"<fused {expr}>", "eval")
            for name in set(code.co_names) - {"a", "b"}:
                if name not in _ON_ARRAYS:
                    _ON_ARRAYS[name] = _on_arrays(name)
        return eval(code, _ON_ARRAYS, {"a": a, "b": b})
    return forward


# (the derived ops are declared in the registry, after the elementwise ops; their forwards are given here)
DERIVED, DERIVED_NAMES = registry.DERIVED, registry.DERIVED_NAMES
registry.declare_derived()  # (an elementwise op declared since ops/elementwise.py: none in tapegrad itself)
for _name, _expr in registry.DERIVED_EXPRESSIONS.items():
    registry.BY_NAME[_name].forward = _array_forward(_expr)


def _derived_rows(op, tape, row, g, inputs, out):
    """The derivatives of an elementwise row that have a derived op, as one row each (None for the others)."""
    by_name = {"a": inputs[0], "b": inputs[1]} if op.kind == registry.K_BINARY else {"x": inputs[0]}
    by_name["g"] = g
    c, c2 = float(tape.fattr[row, 0]), float(tape.fattr[row, 1])
    rows = []
    for j in range(len(op.derivs)):
        entry = DERIVED.get((op.code, j))
        t = None
        if entry is not None:
            derived, (na, nb) = entry
            if (na == "y" or nb == "y") and "y" not in by_name:
                by_name["y"] = out
            ta, tb = by_name[na], by_name[nb]
            dt = ta._data.dtype
            if (dt == np.float32 or dt == np.float64) and tb._data.dtype == dt:  # (else: promoted op by op)
                value = derived.forward(ta._data, tb._data, c, c2)
                if type(value) is not np.ndarray:
                    value = np.asarray(value)
                if value.dtype == dt:
                    t = _record(derived, value, (ta, tb), c, c2)
        rows.append(t)
    return rows
