"""Backward: replay the tape in reverse.

Plain backward: `plan` (compiled) marks the rows this backward needs, checks saved versions and lays
out one flat adjoint buffer per dtype; `replay` (compiled) runs the rows in reverse, returning to
Python only at rows of kind PYTHON (matmul, fused losses, custom Functions) and at rows with hooks.
create_graph=True: the same rows run in Python through each op's registry rule on Tensors, so the
backward is recorded on the tape like any forward computation.
"""
import ctypes
import re

import numpy as np

from . import kernels, registry
from .autograd.grad_mode import enable_grad, no_grad
from .tape import F_REQ, F_STOP, OP_LEAF
from .tensor import Tensor, _new, tensor_type_name

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward.")


def run(tape, roots, seeds, retain_graph, create_graph, targets=None, accumulate=True):
    """Backpropagate seeds (arrays) from root rows. Returns the adjoints of `targets` rows (as Tensors
    or None) when targets are given; accumulates into leaves' .grad when `accumulate`."""
    with tape.lock:
        rt = kernels.load()
        kinds, saves = registry.tables()
        n = tape.n
        target_rows = np.asarray(targets if targets is not None else [], np.int64)
        need, offsets, n32, n64, bad, arg = rt.plan(
            n, np.asarray(roots, np.int64), target_rows, tape.flags, tape.op, kinds, saves, tape.argptr,
            tape.args, tape.argver, tape.obj, tape.vaddr, tape.outver, tape.dtype)
        if bad >= 0:
            _raise_plan_error(tape, bad, arg)
        if create_graph:
            result = _run_graph(tape, need, roots, seeds, targets, accumulate)
        else:
            result = _run_compiled(rt, tape, need, offsets, n32, n64, kinds, roots, seeds, targets, accumulate)
        if not retain_graph:
            ops = need & (tape.op[:n] != OP_LEAF) & (tape.op[:n] != 1)
            tape.free(np.flatnonzero(ops))
        return result


def _raise_plan_error(tape, row, arg):
    if arg == -2:
        raise RuntimeError(FREED_MESSAGE)
    saved = tape.row_args(row)[arg] if arg >= 0 else row
    value = tape.values[saved]
    cell = int(tape.vaddr[saved])
    current = ctypes.c_int64.from_address(cell).value  # the version cell the row points at
    expected = tape.argver[tape.argptr[row] + arg] if arg >= 0 else tape.outver[row]
    what = f"[{tensor_type_name(value)} {list(value.shape)}]"
    owner = int(np.flatnonzero(tape.vaddr[:tape.n] == cell)[-1])  # the row that last wrote this storage
    producer = registry.OPS[tape.op[owner]]
    if producer.kind != registry.K_LEAF:
        what += ", which is output 0 of " + re.sub(r"Backward\d*$", "", producer.grad_fn) + ","
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"{what} is at version {current}; expected version {expected} instead. Hint: enable anomaly detection "
        f"to find the operation that failed to compute its gradient, with "
        f"torch.autograd.set_detect_anomaly(True, check_nan=False).")


# -- the compiled path --------------------------------------------------------------------------------
def _run_compiled(rt, tape, need, offsets, n32, n64, kinds, roots, seeds, targets, accumulate):
    adj = (np.zeros(n32, np.float32), np.zeros(n64, np.float64))

    def adjoint(row):
        value = tape.values[row]
        o = offsets[row]
        return adj[tape.dtype[row]][o: o + value.size].reshape(value.shape)

    for r, s in zip(roots, seeds):
        if need[r]:
            a = adjoint(r)
            a += s
    i = max(roots)
    resume = False
    while i >= 0:
        i = rt.replay(i, resume, need, tape.flags, tape.op, kinds, tape.argptr, tape.args, tape.obj,
                      tape.dtype, tape.fattr, tape.iattr, offsets, adj[0], adj[1])
        if i < 0:
            break
        if tape.flags[i] & F_STOP and not resume:
            _watched(tape, i, adjoint(i), graph=False)
            resume = kinds[tape.op[i]] != registry.K_PYTHON
            if resume:
                continue
        _python_row(tape, i, need, adjoint)
        resume = False
        i -= 1
    leaves = np.flatnonzero(need & (tape.op[:tape.n] == OP_LEAF))
    if accumulate:
        for r in leaves.tolist():
            _accumulate(tape, r, adjoint(r), targets, graph=False)
    if targets is not None:
        return [_new(adjoint(r).copy()) if need[r] else None for r in targets]


def _python_row(tape, row, need, adjoint):
    op = registry.OPS[tape.op[row]]
    args = tape.row_args(row)
    with no_grad():
        grads = op.vjp(tape.aux.get(row), _new(adjoint(row)), [wrap(tape, a) for a in args], wrap(tape, row))
    for a, g in zip(args, grads):
        if g is not None and need[a]:
            target = adjoint(a)
            g = g._data if isinstance(g, Tensor) else np.asarray(g)
            target += _sum_to(g, target.shape)


def _sum_to(g, shape):
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)
    return np.sum(g, axis=dims, keepdims=True).reshape(shape)


def _run_hooks(t, g):
    for hook in t._hooks or ():
        out = hook(g)
        if out is not None:
            if out.shape != g.shape:
                raise RuntimeError("hook 'hook' has changed the size of value")
            g = out
    return g


def _watched(tape, row, adjoint, graph):
    """A non-leaf tensor's hooks and retain_grad, at its row. Returns the (possibly replaced) gradient."""
    ref = tape.watch.get(row)
    t = ref() if ref is not None else None
    if t is None:
        return adjoint
    g = adjoint if graph else _new(adjoint.copy())
    g = _run_hooks(t, g)
    if not graph and g._data is not adjoint:
        adjoint[...] = g._data
    if t._retains_grad:
        _add_grad(t, g if graph else _new(g._data.copy()), graph)
    return g


def _accumulate(tape, row, adjoint, targets, graph):
    ref = tape.aux.get(row)
    t = ref() if ref is not None else None
    if t is None:
        return
    g = adjoint if graph else _new(adjoint.copy())
    g = _run_hooks(t, g)
    if targets is None:
        _add_grad(t, g, graph)


def _add_grad(t, g, graph):
    if t._grad is None:
        t._grad = g
    elif graph or t._grad._requires_grad:
        t._grad = t._grad + g
    else:
        t._grad._data += g._data


def wrap(tape, row):
    """A Tensor for the value at a row, connected to the tape (so create_graph can differentiate it)."""
    t = _new(tape.values[row])
    t._tape, t._slot = tape, row
    if tape.flags[row] & F_REQ:
        t._requires_grad = True
        if tape.op[row] != OP_LEAF:
            t._is_leaf = False
    return t


# -- create_graph: the backward recorded as ops ---------------------------------------------------------------
def _run_graph(tape, need, roots, seeds, targets, accumulate):
    grads = {}
    for r, s in zip(roots, seeds):
        if need[r]:
            g = s if isinstance(s, Tensor) else _new(np.asarray(s))
            grads[r] = grads[r] + g if r in grads else g
    target_set = set(targets or ())
    with enable_grad():
        for i in range(max(roots), -1, -1):
            if not need[i] or i not in grads:
                continue
            g = grads[i] if i in target_set else grads.pop(i)
            if tape.flags[i] & F_STOP:
                g = _watched(tape, i, g, graph=True)
            op = registry.OPS[tape.op[i]]
            if op.kind == registry.K_LEAF:
                if accumulate:
                    _accumulate(tape, i, g, targets, graph=True)
                continue
            args = tape.row_args(i)
            inputs = [wrap(tape, a) for a in args]
            for a, ga in zip(args, graph_vjp(op, tape, i, g, inputs)):
                if ga is None or not need[a]:
                    continue
                from .ops import sum_to_shape
                ga = sum_to_shape(ga, tape.values[a].shape)
                grads[a] = grads[a] + ga if a in grads else ga
    if targets is not None:
        return [grads.get(r) for r in targets]


def graph_vjp(op, tape, row, g, inputs):
    """An op's backward written in tapegrad ops: the registry expression, or its vjp function."""
    if op.vjp is not None:
        ctx = tape.aux.get(row)
        if ctx is None and op.kind == registry.K_SUM:
            ctx = _keep_shape(inputs[0].shape, int(tape.iattr[row]))
        return op.vjp(ctx, g, inputs, wrap(tape, row))
    env = dict(_expression_functions())
    env.update(g=g, y=wrap(tape, row), c=float(tape.fattr[row, 0]), c2=float(tape.fattr[row, 1]))
    if op.kind == registry.K_BINARY:
        env.update(a=inputs[0], b=inputs[1])
    else:
        env.update(x=inputs[0])
    return [eval(_compiled(d), env) for d in op.derivs]


def _keep_shape(shape, mask):
    return tuple(1 if (mask >> d) & 1 else s for d, s in enumerate(shape))


_code_cache = {}


def _compiled(expr):
    code = _code_cache.get(expr)
    if code is None:
        code = _code_cache[expr] = compile(expr, f"<derivative {expr}>", "eval")
    return code


def _expression_functions():
    from . import ops
    return {name: getattr(ops, name) for name in
            ("cos", "sin", "cosh", "sinh", "exp", "log", "sqrt", "sign", "sigmoid", "erf", "where")}
