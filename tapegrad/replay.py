"""Backward: replay the tape in reverse (the compiled driver).

`plan` (compiled) marks the rows this backward needs, checks saved versions and lays out one flat adjoint
buffer per dtype; `replay` (compiled) runs the rows in reverse, returning to Python only at rows of kind
PYTHON (matmul, fused losses, custom Functions) and at rows with hooks. create_graph=True runs the same
rows in Python instead (create_graph.py); where gradients end up, hooks and leaves, is accumulate.py.
"""
import ctypes
import re
import sys

import numpy as np

from . import _dtype, anomaly, kernels, registry, saved_tensors, tape as tape_mod
from .accumulate import (accumulate_node, add_grad, current_pass, edges, leaf_hooked, leaf_node_hooks, node_rows,
                         passes, run_hooks, run_node_posthooks, run_node_prehooks, run_post_accumulate_hooks, watched)
from .anomaly import has_nan, row_name, run_named
from .create_graph import graph_vjp, run_graph
from .grad_mode import no_grad
from .tape import F_DEAD, F_STOP, FREED_MESSAGE, OP_FREED, OP_LEAF, Tape, untraceable
from .ops._common import _sum_to_np
from .ops.sparse import SparseTensor, add_into_dense, merged_add
from .tensor import Tensor, _new, tensor_type_name, wrap


# Adjoint blocks of at least this many elements are shared by rows whose adjoints are never alive
# together (kernels.runtime._layout); NO_REUSE turns that off.
REUSE_MIN, NO_REUSE = 4096, 1 << 62

_local = passes  # (this thread's backward: its token, current_pass(), and whether checkpoints are valid)


def is_checkpoint_valid():
    """False while this thread's backward computes the gradients of given inputs only (autograd.grad,
    backward(inputs=...)): a reentrant checkpoint's recompute would accumulate into every leaf's .grad."""
    return getattr(_local, "checkpoint_valid", True)


def run(tape, roots, seeds, retain_graph, create_graph, targets=None, accumulate=True):
    """Backpropagate seeds (arrays, or Tensors under create_graph or while tracing) from root rows. Returns the
    adjoints of `targets` rows (as Tensors or None) when targets are given; accumulates into leaves' .grad when
    `accumulate`."""
    # tapegrad.compile records a gradient taken of what it traces (autograd.grad) as ops on its own tape
    traced = tape_mod._local.tracing is not None and not accumulate and tape is tape_mod._local.tape
    if not traced:
        if tape_mod._local.tracing is not None and tape is tape_mod._local.tape:  # .backward() while compiling
            return tape.backward_into_grad(roots, seeds, retain_graph, create_graph, targets)
        untraceable("a backward")  # (of another tape's graph: a side effect a replay does not repeat)
    outer, _local.token = current_pass(), object()
    outer_valid, _local.checkpoint_valid = is_checkpoint_valid(), targets is None
    try:
        return _run(tape, roots, seeds, retain_graph, create_graph, targets, accumulate, traced)
    finally:
        _local.token, _local.checkpoint_valid = outer, outer_valid


def run_planned(tape, roots, seeds, targets, plans):
    """The adjoints of `targets` (arrays, or None) for a tape that never changes, its rows never freed and its
    versions never checked (tapegrad.compile's private tape): `plans` keeps each (roots, targets) plan."""
    with tape.lock:
        rt = kernels.load()
        kinds, saves = registry.tables()
        key = (tuple(roots), tuple(targets))
        entry = plans.get(key)
        if entry is None or anomaly.is_anomaly_enabled():
            p = _plan(rt, tape, tape.n, roots, np.asarray(targets, np.int64), kinds, saves)
            entry = plans[key] = (p, _handover(tape, targets, p))
        p, handover = entry
        need, own, offsets, recycle, n32, n64, o32, o64, _, _ = p  # (no error: nothing is freed or checked)
        adj = (np.zeros(n32, np.float32), np.zeros(n64, np.float64), np.zeros(o32, np.float32),
               np.zeros(o64, np.float64))
        tape.note_adjoint_bytes(4 * n32 + 8 * n64)
        adjoint = _run_compiled(rt, tape, need, own, offsets, recycle, adj, kinds, roots, seeds, targets, False)
        return _copies(handover, adjoint, adj)


def _run(tape, roots, seeds, retain_graph, create_graph, targets, accumulate, traced):
    with tape.lock:
        rt = kernels.load()
        kinds, saves = registry.tables()
        n = tape.n
        target_rows = np.asarray(targets, np.int64) if targets else _NO_ROWS
        flags = tape.flags
        for r in roots:  # an output whose history was freed (a root's DEAD row is not in any plan path)
            if flags[r] & F_DEAD and r not in target_rows:
                raise RuntimeError(FREED_MESSAGE)
        # a target is only read, never run: one whose history was freed is fine (grad(y.sum(), y) after y's
        # graph was used), so its row is not reported dead to the plan
        revived = None
        if targets:
            revived = target_rows[(tape.op[target_rows] == OP_FREED) & ((flags[target_rows] & F_DEAD) != 0)]
            tape.unmark(revived, F_DEAD)
        # the usual backward (one root of one element, no anomaly mode, the eager tape) plans, seeds and replays
        # in one compiled call (_run_compiled then only takes over at the rows Python runs), and frees with the
        # cut in another. The guards are checked after that call: it ran compiled rows only, into its own
        # buffers (an index map is the row's private copy), so an error then leaves nothing changed, as before it
        seed = seeds[0] if len(roots) == 1 else None
        fast = not (traced or create_graph or seed is None or type(seed) is not np.ndarray
                    or seed.size != 1 or type(tape) is not Tape or anomaly.is_anomaly_enabled() or tape.packed)
        try:
            if fast:
                need, own, offsets, recycle, adj32, adj64, own32, own64, leaves, bad, arg, start, first = rt.run_pass(
                    n, np.asarray(roots, np.int64), target_rows, float(seed.item()), flags, tape.op, kinds,
                    saves, tape.argptr, tape.args, tape.argver, tape.obj, tape.vaddr, tape.outver, tape.dtype,
                    tape.fattr, tape.iattr, REUSE_MIN, rt.BLAS)
            else:
                need, own, offsets, recycle, n32, n64, o32, o64, bad, arg = _plan(rt, tape, n, roots, target_rows,
                                                                                  kinds, saves)
        finally:
            if revived is not None:
                tape.mark(revived, F_DEAD)
        if bad >= 0:
            _raise_plan_error(tape, bad, arg)
        if tape.guards:
            _check_guards(tape, need)
        originals = saved_tensors.unpack_for_backward(tape, need, create_graph) if tape.packed else None
        try:
            if traced:
                result = tape.gradient(need, roots, seeds, targets, create_graph)
            elif create_graph:
                result = run_graph(tape, need, roots, seeds, targets, accumulate)
            else:
                if fast:
                    adj = (adj32, adj64, own32, own64)
                    tape.note_adjoint_bytes(4 * adj32.size + 8 * adj64.size)
                    adjoint = _run_compiled(rt, tape, need, own, offsets, recycle, adj, kinds, roots, None, targets,
                                            accumulate, start, leaves)
                else:
                    adj = (np.zeros(n32, np.float32), np.zeros(n64, np.float64), np.zeros(o32, np.float32),
                           np.zeros(o64, np.float64))
                    tape.note_adjoint_bytes(4 * n32 + 8 * n64)  # tape.stats(): last and peak adjoint buffer sizes
                    adjoint = _run_compiled(rt, tape, need, own, offsets, recycle, adj, kinds, roots, seeds, targets,
                                            accumulate)
                # (a copy in the value's dtype: a float16 / bfloat16 row's float64 adjoint rounded to it)
                sparse = adjoint.own.sparse
                result = None if targets is None else [
                    (_sparse_leaf(tape, r, need, own, adjoint, sparse[r]) if sparse and r in sparse else
                     _new(adjoint(r).astype(tape.values[r].dtype))) if need[r] else None for r in targets]
        finally:
            if originals:  # (the values saved_tensors_hooks' unpack hooks gave the rows for this backward)
                saved_tensors.restore(tape, originals)
        if not retain_graph:
            if fast:
                tape.free_graph(need, first)
            else:
                tape.free_graph(need)
        return result


_NO_ROWS = np.empty(0, np.int64)  # (writeable: a read-only array is another type to Numba, compiled again)


def _plan(rt, tape, n, roots, target_rows, kinds, saves):
    # anomaly mode reads a row's adjoint after the row has run (_raise_nan): no block is reused
    reuse_min = NO_REUSE if anomaly.is_anomaly_enabled() else REUSE_MIN
    return rt.plan(n, np.asarray(roots, np.int64), target_rows, tape.flags, tape.op, kinds, saves, tape.argptr,
                   tape.args, tape.argver, tape.obj, tape.vaddr, tape.outver, tape.dtype, tape.iattr, reuse_min,
                   rt.BLAS)


def _check_guards(tape, need):
    """torch's in-place error for an index, mask or target a needed row depends on (tape.guard), changed
    since the row was recorded."""
    n = len(need)
    for row, entries in tape.guards.items():
        if row < n and need[row]:
            for cell, version, dtype, shape in entries:
                if cell[0] != version:
                    name = "CPUBoolType" if dtype == np.bool_ else tensor_type_name(np.empty(0, dtype))
                    _raise_version_error(tape, row, f"[{name} {list(shape)}]", int(cell[0]), version)


def _raise_version_error(tape, row, what, current, expected):
    """torch's in-place error; in anomaly mode after its "Error detected in ..." warning for the row whose
    backward reads the value (where it was recorded), and with the hint that points at that warning."""
    if anomaly.is_anomaly_enabled():
        anomaly.warn_error(tape, row, row_name(tape, row))
        hint = ("the backtrace further above shows the operation that failed to compute its gradient. The variable "
                "in question was changed in there or anywhere later. Good luck!")
    else:
        hint = ("enable anomaly detection to find the operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")
    raise RuntimeError(f"one of the variables needed for gradient computation has been modified by an inplace "
                       f"operation: {what} is at version {current}; expected version {expected} instead. Hint: {hint}")


def _raise_plan_error(tape, row, arg):
    if arg == -2:
        raise RuntimeError(FREED_MESSAGE)
    if arg == -3:  # an invariant, checked before any kernel reads the value: a bug, never a crash
        raise RuntimeError(f"tapegrad: internal error: row {row} ({row_name(tape, row)}) records dtype code "
                           f"{tape.dtype[row]} but holds a {tape.values[row].dtype} value; please report this")
    saved = tape.row_args(row)[arg] if arg >= 0 else row
    value = tape.values[saved]
    cell = int(tape.vaddr[saved])
    current = ctypes.c_int64.from_address(cell).value  # the version cell the row points at
    expected = tape.argver[tape.argptr[row] + arg] if arg >= 0 else tape.outver[row]
    what = f"[{tensor_type_name(value)} {list(value.shape)}]"
    # torch names the node a saved output belongs to (the failing row itself: ExpBackward0's result), and
    # for a saved input the grad_fn it has now (the in-place op that last wrote its storage)
    owner = row
    if arg >= 0:  # (views share the cell: the newest row holding this value itself, if one does)
        sharing = np.flatnonzero(tape.vaddr[:tape.n] == cell).tolist()
        owner = next((r for r in reversed(sharing) if tape.values[r] is value), sharing[-1])
    producer = registry.OPS[tape.op[owner]]
    if producer.kind != registry.K_LEAF:
        name = re.sub(r"Backward\d*$", "", row_name(tape, owner))
        what += ", which is output 0 of " + ("torch::autograd::" if name == "CopySlices" else "") + name + ","
    _raise_version_error(tape, row, what, current, expected)


# -- the compiled path --------------------------------------------------------------------------------
def _run_compiled(rt, tape, need, owned, offsets, recycle, adj, kinds, roots, seeds, targets, accumulate,
                  start=None, leaves=None):
    """Add the seeds, replay, and hand the leaves their gradients (when `accumulate`); returns `adjoint`, a row's
    adjoint as an array. adj: the adjoint buffers (float32, float64) and the owned ones (plan's OWN_BLOCK leaves).
    From run_pass (seeds None), the replay has run down to `start` (the first row Python runs, or -1) and `leaves`
    are the needed leaf rows."""
    own = _Own()  # the adjoints of OWN_PYTHON rows (plan gave them no slot): arrays of their own, see _python_row
    own.sparse = sparse = {}
    values, dtypes = tape.values, tape.dtype
    own_python, own_block = rt.OWN_PYTHON, rt.OWN_BLOCK

    def adjoint(row):
        a = own.get(row)
        if a is not None:
            return a
        value = values[row]
        if owned[row] == own_python:
            a = own[row] = np.zeros(value.shape, value.dtype)
            return a
        o = int(offsets[row])  # (float16 rows' adjoints are float64 elements of adj[1])
        return adj[(0 if dtypes[row] == 0 else 1) + (2 if owned[row] else 0)][o: o + value.size].reshape(value.shape)

    if seeds is not None:
        for r, s in zip(roots, seeds):
            if need[r]:
                a = adjoint(r)
                a += s
        start = max(roots)
    elif start >= 0:
        _drive(rt, tape, start, need, owned, own, offsets, recycle, adj, kinds, adjoint, True)
    if seeds is not None:
        _drive(rt, tape, start, need, owned, own, offsets, recycle, adj, kinds, adjoint, False)
    if accumulate:
        if leaves is None:
            leaves = np.flatnonzero(need & (tape.op[:len(need)] == OP_LEAF))
        aux = tape.aux
        hooked = leaf_hooked[0]  # (leaves whose AccumulateGrad has hooks: none, in most programs)
        for r in leaves.tolist():
            ref = aux.get(r)
            t = ref() if ref is not None else None
            if t is None:
                continue
            g = Tensor.__new__(Tensor)  # (_new, written out)
            a = own.get(r)
            if sparse and r in sparse:
                g = _sparse_leaf(tape, r, need, owned, adjoint, sparse[r])
            elif a is not None:
                g._data = a
            elif owned[r] == own_block:  # (a view of the owned buffers, which hold only such gradients)
                g._data = adjoint(r)
            else:
                value = values[r]
                d = dtypes[r]
                if value.ndim == 0 and d != 2 and not owned[r]:  # (its element: no slice, reshape and copy)
                    g._data = np.array(adj[d][offsets[r]])
                else:
                    g._data = adjoint(r).copy()
                    if d == 2:  # a float16 / bfloat16 leaf: its grad in its dtype (the buffer is float64)
                        g._data = g._data.astype(value.dtype)
            if t._hooks:
                g = run_hooks(t, g, False)
            if targets is None and t._requires_grad:  # (requires_grad_(False) since recorded: torch skips it)
                if hooked:
                    hooks = leaf_node_hooks(t)
                    if hooks is not None:
                        accumulate_node(t, hooks, g, False)
                        continue
                if t._grad is None:  # (add_grad's first case, written out: a model may have thousands of leaves)
                    t._grad = g
                else:
                    add_grad(t, g, False)
                if t._post_accumulate_grad_hooks:
                    run_post_accumulate_hooks(t, False)
    adjoint.own = own
    return adjoint


class _Own(dict):
    """Row -> its adjoint array, for owned rows; `sparse`: leaf row -> the sparse gradients embedding(sparse=True)
    rows gave it in this backward (replay order), kept out of the dense buffer."""
    __slots__ = ("sparse",)


def _sparse_leaf(tape, row, need, owned, adjoint, parts):
    """A leaf's gradient when embedding(sparse=True) rows gave it sparse ones: their sum (torch's InputBuffer adds
    sparse to sparse), sparse when those rows are all this backward's uses of the leaf, else dense (torch's
    dense + sparse is dense)."""
    g = parts[0]
    for p in parts[1:]:
        g = merged_add(g, p)
    if not owned[row] and len(parts) < _uses(tape, row, need):
        dense = adjoint(row).copy()
        for p in parts:
            add_into_dense(dense, p)
        return _new(dense)
    return g


def _uses(tape, row, need):
    """How many of this backward's rows take `row` as an input."""
    n = len(need)
    end = int(tape.argptr[n])
    at = np.flatnonzero(tape.args[:end] == row)
    users = np.searchsorted(tape.argptr[:n + 1], at, side="right") - 1
    return int(np.count_nonzero(need[users]))


def _drive(rt, tape, i, need, owned, own, offsets, recycle, adj, kinds, adjoint, at_python_row):
    """The replay loop from row i down: the compiled replay, returning to Python at the rows it must run.
    `at_python_row`: the replay already ran down to row i, which Python must handle first."""
    traced = anomaly.is_anomaly_enabled()
    stopped = None
    if traced:  # stop at every row, so that each row's gradients are checked and a failure is named
        n = len(need)
        stopped = np.flatnonzero(need & (kinds[tape.op[:n]] != registry.K_LEAF) & ((tape.flags[:n] & F_STOP) == 0))
        tape.mark(stopped, F_STOP)
    resume = False
    try:
        while True:
            # `replay` runs rows from i down and returns the first row Python must handle (not yet run);
            # with resume, it runs row i itself first (Python has run its hooks).
            if at_python_row:
                at_python_row = False
            elif traced and resume:
                i = _traced_step(rt, tape, i, need, kinds, offsets, recycle, adj, adjoint, owned)
            else:
                i = rt.replay(i, resume, need, tape.flags, tape.op, kinds, tape.argptr, tape.args, tape.obj,
                              tape.dtype, tape.fattr, tape.iattr, offsets, recycle, adj[0], adj[1], rt.BLAS, owned,
                              adj[2], adj[3])
            if i < 0:
                break
            nodes = tape.__dict__.get("node_hooks")  # (made by the first grad_fn.register_hook / register_prehook)
            if nodes and i in nodes and _node_row(tape, i, nodes[i], need, kinds, recycle, adjoint):
                i, resume = i - 1, False
                continue
            if tape.flags[i] & F_STOP and i in tape.watch:
                watched(tape, i, adjoint(i), graph=False)
            if kinds[tape.op[i]] >= registry.K_PYTHON or _half_rule(tape, i, kinds):  # (K_RULE's too)
                if traced:
                    run_named(tape, i, _python_row, tape, i, need, adjoint, owned, own,
                              anomaly.is_anomaly_check_nan_enabled())
                else:
                    _python_row(tape, i, need, adjoint, owned, own)
                if recycle[i]:  # (a float16 row's block, which a later row takes over: as the replay does)
                    adjoint(i)[...] = 0
                i, resume = i - 1, False
            else:
                resume = True
    finally:
        if stopped is not None:
            tape.unmark(stopped, F_STOP)


def _node_row(tape, row, hooks, need, kinds, recycle, adjoint):
    """A row of a node with hooks (grad_fn.register_prehook / register_hook), where the replay stopped: the
    node's output gradients through its tensors' hooks and its pre-hooks, its rule (each input's gradient
    separately), its hooks, then the input gradients added on. A multi-output node (unbind, split) runs once, at
    its first row the replay reaches (every consumer of its outputs has run by then), and its other rows are then
    passed over. Returns False for a row the replay runs as usual (its node's hooks were all removed)."""
    token = current_pass()
    if hooks.ran is token:  # (a further row of a multi-output node that has run)
        return True
    if not hooks.active():
        return False
    hooks.ran = token
    rows = node_rows(tape, row)
    for r in rows:  # (torch runs the tensors' hooks before the node's pre-hooks)
        if need[r] and tape.flags[r] & F_STOP and r in tape.watch:
            watched(tape, r, adjoint(r), graph=False)
    op = registry.OPS[tape.op[row]]
    args = tape.row_args(row)
    wanted = [bool(need[a]) for a in args]
    ctx = tape.aux.get(row)
    function = op.name == "function"
    if function:  # a custom Function: each output's gradient, the further ones stashed by their rows
        outs = _function_outputs(tape, row, ctx, need, adjoint)
    else:
        outs = tuple(_out_grad(tape, r, adjoint) if need[r] else None for r in rows)
    outs = run_node_prehooks(hooks, outs, False)
    total = [None] * len(args)
    with no_grad():
        if function:
            ctx._pending_token, ctx._pending = token, {j: g for j, g in enumerate(outs) if j != ctx._primary
                                                       and g is not None}
            total = _shaped(tape, args, wanted, op.vjp(ctx, outs[ctx._primary], [wrap(tape, a) for a in args],
                                                       wrap(tape, row)))
        else:
            for r, g in zip(rows, outs):
                if g is None:
                    continue
                for j, gj in enumerate(_node_rule(tape, r, kinds, args, wanted, g)):
                    if gj is not None and wanted[j]:
                        total[j] = gj if total[j] is None else _new(total[j]._data + gj._data)
    grad_inputs = tuple(None if j is None or not wanted[j] else total[j] for j in edges(tape, row, len(args)))
    grad_inputs = run_node_posthooks(hooks, grad_inputs, outs, False)
    for j, g in zip(edges(tape, row, len(args)), grad_inputs):
        if j is None or g is None or not wanted[j]:
            continue
        a = args[j]
        value = tape.values[a]
        g = g._data if type(g) is not SparseTensor else g
        if type(g) is SparseTensor:
            add_into_dense(adjoint(a), g)
            continue
        if g.shape != value.shape:
            g = _sum_to_np(g, value.shape)
        target = adjoint(a)
        target += g
    for r in rows:
        if need[r] and recycle[r]:  # (as the replay does once a row has run: another row's adjoint takes the block)
            adjoint(r)[...] = 0
    return True


def _node_rule(tape, row, kinds, args, wanted, g):
    """A hooked row's input gradients (Tensors or None, each of its input's shape) for its output gradient g."""
    op = registry.OPS[tape.op[row]]
    if kinds[tape.op[row]] >= registry.K_PYTHON or _half_rule(tape, row, kinds):
        grads = _row_rule(op, tape, row, args, wanted, g._data.astype(tape.values[row].dtype, copy=False)
                          if tape.dtype[row] != 2 else g._data.astype(np.float64))
    else:  # (a row the compiled replay would run: its rule on tensors, as create_graph evaluates it)
        grads = graph_vjp(op, tape, row, g, [wrap(tape, a) for a in args])
    return _shaped(tape, args, wanted, grads)


def _shaped(tape, args, wanted, grads):
    """Input gradients as torch hands them to a node's hooks: Tensors of their inputs' shapes (summed over
    broadcast dimensions) and float16 / bfloat16 inputs' dtypes, None where the input needs none."""
    out = []
    for a, w, ga in zip(args, wanted, grads):
        if ga is None or not w:
            out.append(None)
            continue
        if type(ga) is SparseTensor:
            ga = ga.to_dense()
        ga = ga._data if isinstance(ga, Tensor) else np.asarray(ga)
        value = tape.values[a]
        if ga.shape != value.shape:
            ga = _sum_to_np(ga, value.shape)
        if ga.dtype != value.dtype and tape.dtype[a] == 2:
            ga = ga.astype(value.dtype)
        out.append(_new(ga))
    return out


def _function_outputs(tape, row, ctx, need, adjoint):
    """A custom Function node's output gradients: its row's adjoint (None when only its further outputs' rows,
    which send zeros, reached it), and those its further outputs' rows stashed in this backward."""
    outs = [None] * len(ctx._output_meta)
    pending = ctx._pending if ctx.__dict__.get("_pending_token") is current_pass() else {}
    for j, g in pending.items():
        outs[j] = g if isinstance(g, Tensor) else _new(np.asarray(g))
    n = len(need)
    at = np.flatnonzero(tape.args[:int(tape.argptr[n])] == row)
    users = np.searchsorted(tape.argptr[:n + 1], at, side="right") - 1
    users = users[need[users]]
    if not users.size or any(registry.OPS[tape.op[u]].name != "function_output" for u in users.tolist()):
        outs[ctx._primary] = _out_grad(tape, row, adjoint)
    return tuple(outs)


def _out_grad(tape, row, adjoint):
    """A row's adjoint as a Tensor of its own, in the row's dtype (a float16 row's adjoint is float64)."""
    a = adjoint(row)
    return _new(a.astype(tape.values[row].dtype) if tape.dtype[row] == 2 else a.copy())


def _handover(tape, targets, plan):
    """How run_planned hands the targets' adjoints out, fixed for its plan: (k, row, owned) of those handed one
    by one (an owned leaf's array is its own already: a weight's BLAS result, not copied), and the 0-d ones not
    owned (1,050 scalar parameters in one benchmark) as one gather per dtype, since a slice, reshape and copy each costs
    three times what a gathered element does."""
    need, owned, offsets = plan[0], plan[1], plan[2]
    one_by_one, scalars = [], ([], [])
    for k, r in enumerate(targets):
        if need[r]:
            if owned[r] or tape.values[r].ndim:
                one_by_one.append((k, r, bool(owned[r])))
            else:
                scalars[int(tape.dtype[r] != 0)].append(k)
    gathers = [(d, ks, offsets[[targets[k] for k in ks]]) for d, ks in enumerate(scalars) if ks]
    return len(targets), one_by_one, gathers


def _copies(handover, adjoint, adj):
    """The targets' adjoints as arrays of their own, None where not needed (see _handover)."""
    n, one_by_one, gathers = handover
    out = [None] * n
    for k, r, owned in one_by_one:
        out[k] = adjoint(r) if owned else adjoint(r).copy()
    for d, ks, index in gathers:
        values = adj[d][index].tolist()  # (float64 is np.array's default: a third faster to make than float32)
        arrays = [np.array(v) for v in values] if d else [np.array(v, np.float32) for v in values]
        if len(ks) == n:
            return arrays
        for k, a in zip(ks, arrays):
            out[k] = a
    return out


def _traced_step(rt, tape, i, need, kinds, offsets, recycle, adj, adjoint, owned):
    """Anomaly mode: run row i alone in the compiled replay, then check what it added for NaN."""
    check = anomaly.is_anomaly_check_nan_enabled()
    args = [a for a in tape.row_args(i) if need[a]] if check else ()
    clean = {a: not np.isnan(adjoint(a)).any() for a in args}
    nxt = rt.replay(i, True, need, tape.flags, tape.op, kinds, tape.argptr, tape.args, tape.obj, tape.dtype,
                    tape.fattr, tape.iattr, offsets, recycle, adj[0], adj[1], rt.BLAS, owned, adj[2], adj[3])
    if any(clean[a] and np.isnan(adjoint(a)).any() for a in args):
        run_named(tape, i, _raise_nan, tape, i, need, adjoint)
    return nxt


def _raise_nan(tape, row, need, adjoint):
    """Which of the row's outputs (its input gradients) is NaN: recomputed by its rule, to say as torch."""
    args = tape.row_args(row)
    index = next(j for j, a in enumerate(args) if need[a] and np.isnan(adjoint(a)).any())
    try:
        with no_grad(), np.errstate(all="ignore"):
            grads = graph_vjp(registry.OPS[tape.op[row]], tape, row, _new(adjoint(row).copy()),
                              [wrap(tape, a) for a in args])
        index = next(j for j, (a, g) in enumerate(zip(args, grads)) if need[a] and has_nan(g))
    except Exception:  # noqa: BLE001  (the compiled result already says which input went NaN)
        pass
    raise RuntimeError(anomaly.nan_message(row_name(tape, row), index))


def _half_rule(tape, row, kinds):
    """Whether a row's rule reads float16 or bfloat16 values (the compiled replay reads float32 and float64
    only), or is a cast to such a dtype, whose gradient is rounded to that dtype there, as torch's."""
    return tape.dtype[row] == 2 and kinds[tape.op[row]] in (registry.K_UNARY, registry.K_BINARY, registry.K_CAST)


def _python_row(tape, row, need, adjoint, owned, own, check_nan=False):
    """Run a row's vjp in Python and add its results into the adjoints of the row's inputs. The result for
    an `owned` leaf (this row is the one source of its adjoint) becomes own[leaf] as it is when nothing
    else holds it: a weight's gradient is then the array BLAS wrote, not a copy (0.3 of a 9.5 ms step, measured)."""
    op = registry.OPS[tape.op[row]]
    argptr = tape.argptr
    args = tape.args[argptr[row]: argptr[row + 1]].tolist()
    wanted = [bool(need[a]) for a in args]  # (a row has a few inputs: cheaper than need[args].tolist())
    if not any(wanted):
        return
    grads = _row_rule(op, tape, row, args, wanted, adjoint(row))
    values = tape.values
    for j, a in enumerate(args):
        g = grads[j]
        if g is None or not wanted[j]:
            continue
        if type(g) is SparseTensor:  # embedding(sparse=True): kept for a leaf, added densely into any other row
            if tape.op[a] == OP_LEAF:
                own.sparse.setdefault(a, []).append(g)
            else:
                add_into_dense(adjoint(a), g)
            continue
        if check_nan and has_nan(g):
            raise RuntimeError(anomaly.nan_message(row_name(tape, row), j))
        value = values[a]
        if g.shape != value.shape:
            g = _sum_to_np(g, value.shape)
        if tape.dtype[a] == 2 and g.dtype != value.dtype:  # (rounded to a float16 / bfloat16 input's dtype)
            g = g.astype(value.dtype)
        # refcount 3 (this list, `g`, the call's argument): the vjp made it, and no tensor, context or
        # other input's result shares it
        if owned[a] and a not in own and g.base is None and sys.getrefcount(g) == 3 and g.dtype == value.dtype \
                and g.flags.carray:  # (C-contiguous, aligned, writeable)
            own[a] = g
        else:
            target = adjoint(a)
            target += g


def _row_rule(op, tape, row, args, wanted, g):
    """The gradients of a Python row's inputs (arrays, SparseTensors or None) given its adjoint g."""
    grads = None
    half = tape.dtype[row] == 2  # (a float16 or bfloat16 row)
    if op.kind == registry.K_CAST:  # (a half or bfloat16 row: the float64 adjoint rounded to its dtype first)
        grads = [g.astype(tape.values[row].dtype).astype(tape.values[args[0]].dtype)]
    elif half and op.name not in _RECORDED_DTYPES:
        # its rule in float32, the results rounded to the inputs' dtypes by the caller
        grads = _reduced_float_rule(op, tape, row, g, args, wanted)
    else:
        if half:  # (a custom backward of float16 / bfloat16 values: its gradient in their dtype)
            g = g.astype(tape.values[row].dtype)
        if op.array_vjp is not None:
            values = tape.values
            grads = op.array_vjp(tape.aux.get(row), g, [values[a] for a in args], values[row], wanted)
    if grads is None:
        with no_grad():
            grads = op.vjp(tape.aux.get(row), _new(g), [wrap(tape, a) for a in args], wrap(tape, row))
    return [g if g is None or type(g) is np.ndarray or type(g) is SparseTensor else g._data if isinstance(g, Tensor)
            else np.asarray(g) for g in grads]


# Rows whose backward is the user's (a custom Function's) or a replayed call's: they see the recorded dtypes
_RECORDED_DTYPES = frozenset(("function", "function_output", "delayed_error", "compiled", "traced_rule"))


def _reduced_float_rule(op, tape, row, adjoint_row, args, wanted):
    """A float16 or bfloat16 row's rule as torch's CPU kernels compute one: its gradient rounded to the row's
    dtype (torch's is a tensor of it), then the rule on float32 values (the registry expression of an
    elementwise op, or the op's vjp), each result rounded once by the caller."""
    f32 = np.float32

    def up(r):  # the row's value in float32, a Tensor that requires grad where its row does (vjps may ask)
        v = tape.values[r]
        t = _new(v.astype(f32) if _dtype.is_reduced_float(v.dtype) else v)  # (not a bool or integer input)
        t._requires_grad = bool(tape.flags[r] & tape_mod.F_REQ)
        return t
    g = adjoint_row.astype(tape.values[row].dtype).astype(f32)
    if op.array_vjp is not None:
        grads = op.array_vjp(tape.aux.get(row), g, [up(a)._data for a in args], up(row)._data, wanted)
        if grads is not None:
            return grads
    with no_grad():
        if op.vjp is None:
            return graph_vjp(op, tape, row, _new(g), [up(a) for a in args], out=up(row))
        return op.vjp(tape.aux.get(row), _new(g), [up(a) for a in args], up(row))


