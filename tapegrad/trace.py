"""tapegrad.compile: record a function once, then replay its tape on new inputs (DESIGN, "where this goes next").

The first call with a given signature (each tensor argument's shape, dtype and requires_grad, other arguments
by value, grad mode) runs the function on a private tape, with every tensor argument a fresh leaf (floats
require grad), so that every op that depends on an argument is recorded. The recording is kept when each of
its rows can be recomputed from its inputs (`_forward_rule`) and nothing else can make a later call differ:
no value read into Python (`.item()`, `bool`, `.numpy()`), no random draw, no in-place op, no `.backward()`,
no hook, no op left unrecorded (under no_grad, or on constants only), and every tensor it reads is an
argument or a leaf that requires grad and outlives the call (a parameter). Anything else stops the trace
where it happens (tape.GraphBreak) and makes the signature run eagerly from then on, as torch.compile falls
back at a graph break (`fullgraph=True` raises instead). A gradient the function takes (autograd.grad) is
recorded as ops like the rest (_TraceTape.gradient), so a training step's backward is replayed with it.

A later call binds the arguments' and parameters' current arrays to their rows, recomputes the rows in
order, and records one row per output that needs a gradient on the caller's tape (CompiledFunctionBackward).
That row's backward replays the private tape (compiled, and retained so that the next call can use it
again) from the output down to the inputs it is asked for. Python code in the function runs only when it
is traced, as with torch.jit.trace: what it reads besides its arguments and parameters is fixed then.
"""
import weakref

import numpy as np

from . import random, registry, tape as tape_mod
from .grad_mode import _state as _grad_state
from .ops._common import _record
from .tape import F_DEAD, F_STOP, OP_CONST, OP_LEAF, Tape
from .tensor import Tensor, _new
from .accumulate import wrap
from .create_graph import graph_vjp, run_graph
from .replay import run_planned

CACHE_SIZE_LIMIT = 8  # signatures traced per function before it runs eagerly (torch's cache_size_limit)
DOUBLE_BACKWARD = "torch.compile with aot_autograd does not currently support double backward"
OPS = registry.OPS


# -- the two ops of a traced function ------------------------------------------------------------------------
def _vjp_compiled(ctx, g, inputs, out):
    """One output of a tapegrad.compile'd call: a plain backward replays its private tape (ctx.program)."""
    raise RuntimeError(DOUBLE_BACKWARD)


def _compiled_arrays(ctx, g, inputs, out, wanted):
    return ctx.program.backward(ctx, g, wanted)


def _vjp_traced_rule(ctx, g, inputs, out):
    """One input's gradient by an op's array rule (matmul's BLAS, a fused loss's saved gradient), recorded when
    tapegrad.compile traces autograd.grad without create_graph; its result is detached, so this never runs."""
    raise RuntimeError("tapegrad.compile: a gradient taken without create_graph=True is not differentiable")


def _traced_rule_forward(ctx, *arrays):
    """ctx: (the op, its context, the input's index, the one-hot `wanted` its replay passes to the rule); the
    arrays: the op's inputs, its output, then the gradient (a cross_entropy's rule reads the gradient its
    forward computed)."""
    op, rule_ctx, j, wanted = ctx
    return op.array_vjp(rule_ctx, arrays[-1], list(arrays[:-2]), arrays[-2], wanted)[j]


# SAVES_ALL: the backward reads the arrays of the call, so the plan checks that none was changed in place since
registry.python("compiled", "CompiledFunctionBackward", None, _vjp_compiled, saves=registry.SAVES_ALL,
                array_vjp=_compiled_arrays, unreplayable="it is a call of another compiled function")
registry.python("traced_rule", "TracedRuleBackward", _traced_rule_forward, _vjp_traced_rule)
COMPILED = registry.BY_NAME["compiled"]
TRACED_RULE = registry.BY_NAME["traced_rule"]


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """torch.compile: `model` (a function or a module) traced per signature and replayed (module docstring)."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if not callable(model):  # torch raises AssertionError, in these words
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")  # noqa: TRY004
    return model if disable else Compiled(model, fullgraph)


class Compiled:
    """The callable torch.compile returns: one trace (a _Program) or a reason to run eagerly, per signature."""

    def __init__(self, fn, fullgraph=False):
        self._orig_mod = fn
        self._fullgraph = fullgraph
        self._cache = {}

    def __getattr__(self, name):  # a compiled module still has its parameters, train(), ...
        return getattr(self.__dict__["_orig_mod"], name)

    def __call__(self, *args, **kwargs):
        fn = self._orig_mod
        if tape_mod._local.tracing is not None:  # inside another trace: inlined into it
            return fn(*args, **kwargs)
        key = _signature(args, kwargs)
        if key is None:
            if self._fullgraph:
                raise RuntimeError("tapegrad.compile(fullgraph=True): cannot replay this function: an argument "
                                   "that is neither a tensor nor hashable, or a tensor passed by keyword")
            return fn(*args, **kwargs)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._trace(key, args, kwargs)
        if type(entry) is _Program:
            out = entry.run(args)
            if out is not None:
                return out
            entry = self._trace(key, args, kwargs)  # a parameter changed shape, dtype or requires_grad
            if type(entry) is _Program:
                return entry.run(args)
        return fn(*args, **kwargs)

    def _trace(self, key, args, kwargs):
        if len(self._cache) >= CACHE_SIZE_LIMIT and key not in self._cache:
            entry = f"more than {CACHE_SIZE_LIMIT} signatures (cache_size_limit)"
        else:
            entry = _trace(self._orig_mod, args, kwargs)
        if type(entry) is str and self._fullgraph:
            raise RuntimeError(f"tapegrad.compile(fullgraph=True): cannot replay this function: {entry}")
        self._cache[key] = entry
        return entry


def _signature(args, kwargs):
    """The guard: what a trace depends on besides the values of tensor arguments (None: not hashable)."""
    key = [_grad_state.enabled]
    seen = {}
    for a in args:
        if isinstance(a, Tensor):
            d = a._data
            key.append((d.shape, d.dtype.str, a._requires_grad, seen.setdefault(id(d), len(seen))))
        else:
            key.append((type(a), a))
    for k in sorted(kwargs):
        v = kwargs[k]
        if isinstance(v, Tensor):
            return None
        key.append((k, type(v), v))
    key = tuple(key)
    try:
        hash(key)
    except TypeError:
        return None
    return key


class Unreplayable(Exception):
    """Why a trace cannot be replayed."""


class _TraceTape(Tape):
    """A tape that never sweeps and never releases a value: every row's value is recomputed in place. A gradient
    the function takes (autograd.grad) is recorded on it as ops, as AOTAutograd traces a joint graph."""

    def __init__(self):
        super().__init__()
        self.sweep_at = 1 << 62  # record() never reaches it, so never calls check_sweep
        self.held = {}     # leaf row -> the constant tensor it stands for (a seed): bound afresh at each call
        self.aliases = {}  # leaf row -> the row whose value it is (a gradient without create_graph: detached)

    def _release_inputs(self, row):
        pass

    def free_graph(self, need):
        """retain_graph=False: the rows are marked freed, so that a second backward through them raises torch's
        error, and kept (a replay recomputes them; _Program clears the marks)."""
        rows = np.flatnonzero(need[: self.n])
        self.flags[rows[self.op[rows] > OP_CONST]] |= F_DEAD

    def gradient(self, need, roots, seeds, targets, create_graph):
        """autograd.grad while tracing: the backward recorded as ops (`need`: the plan's rows). Without
        create_graph an op with an array rule (matmul, a fused loss) records that rule as a row (_rule_rows), and
        each gradient is handed out detached, as a leaf that stands for its row."""
        seeds = [self._seed(s, self.values[r].dtype) for r, s in zip(roots, seeds)]
        if create_graph:
            return run_graph(self, need, roots, seeds, targets, False)
        got = run_graph(self, need, roots, seeds, targets, False,
                         lambda op, tape, row, g, inputs: _rule_rows(op, tape, row, g, inputs, need, graph_vjp))
        return [None if g is None else self._leaf(g._data, self.aliases, g._slot) for g in got]

    def _seed(self, s, dtype):
        """A seed as a recorded tensor: an argument or a value computed from one is itself; a constant (the
        implicit ones, grad_outputs made in the function) becomes a leaf standing for it."""
        if isinstance(s, Tensor) and s._requires_grad:
            return s
        const = s if isinstance(s, Tensor) else _new(np.asarray(s, dtype))
        return self._leaf(const._data, self.held, const)

    def _leaf(self, data, table, meaning):
        t = _new(data)
        t._requires_grad = True  # (every op on it is recorded; a trace's leaves are bound by _Program)
        table[self.slot(t)] = meaning
        return t


def _rule_rows(op, tape, row, g, inputs, need, graph_vjp):
    """A row's part of a traced gradient that is not differentiated again: an op's array rule, when it has one,
    as one recorded row per wanted input (its replay calls the rule); otherwise the create_graph rule."""
    if op.array_vjp is None:
        return graph_vjp(op, tape, row, g, inputs)
    ctx = tape.aux.get(row)
    wanted = tuple(bool(need[a]) for a in tape.row_args(row))
    out = wrap(tape, row)
    got = op.array_vjp(ctx, g._data, [x._data for x in inputs], out._data, wanted)
    if got is None:  # (no array rule for these shapes)
        return graph_vjp(op, tape, row, g, inputs)
    only = [tuple(k == j for k in range(len(wanted))) for j in range(len(wanted))]  # (each row's replay: its own)
    return [None if v is None or not w else
            _record(TRACED_RULE, np.asarray(v), (*inputs, out, g), aux=(op, ctx, j, only[j]))
            for j, (v, w) in enumerate(zip(got, wanted))]


def _trace(fn, args, kwargs):
    """Run fn on a private tape; its _Program, or why it cannot be replayed (a string)."""
    targs = []
    for a in args:
        if isinstance(a, Tensor):
            t = _new(a._data)
            if a._data.dtype.kind == "f" and a._data.dtype.itemsize >= 4:
                t.requires_grad = True
            a = t
        targs.append(a)
    local, breaks = tape_mod._local, []  # what would make it unreplayable, as it happens (tape.untraceable)
    private = _TraceTape()
    saved, rng = (local.tape, local.tracing), random.default_generator.get_state()
    local.tape, local.tracing = private, breaks
    try:
        out = fn(*targs, **kwargs)
    except tape_mod.GraphBreak:
        pass  # (its reason is breaks[0])
    except Exception as e:  # noqa: BLE001  (the eager call that follows raises it where it belongs)
        breaks.append(f"tracing raised {type(e).__name__}: {e}")
    finally:
        local.tape, local.tracing = saved
    if breaks:
        random.default_generator.set_state(rng)  # the eager call that follows draws what it would have
        return breaks[0]
    single = isinstance(out, Tensor)
    outs = (out,) if single else out
    if not isinstance(outs, (tuple, list)) or not outs or not all(
            isinstance(o, Tensor) and o._tape is private and (not o._is_leaf or o._slot in private.aliases)
            for o in outs):
        return "it must return a tensor computed from its inputs, or a tuple or list of them"
    try:
        wants = [a._requires_grad for a in args if isinstance(a, Tensor)]
        return _Program(private, targs, wants, [o._slot for o in outs], None if single else type(outs))
    except Unreplayable as e:
        return str(e)


class _Program:
    """A traced function: its private tape, which rows its arguments and parameters are bound to, and how
    each op row is recomputed: runs of elementwise rows in one compiled call of NumPy's own loops
    (kernels/forward.py), other rows by one NumPy call each. Raises Unreplayable, saying why, when it cannot
    be replayed."""

    def __init__(self, private, targs, wants, out_rows, container):
        self.tape, self.out_rows, self.container = private, out_rows, container
        self.generation = 0
        self._plans = {}  # (roots, targets) -> replay's plan: the private tape never changes shape
        self.tensor_args = [i for i, a in enumerate(targs) if isinstance(a, Tensor)]
        self.B = [targs[i]._data for i in self.tensor_args]  # the bound arrays: tensor arguments, then parameters
        row_arg = {targs[i]._slot: j for j, i in enumerate(self.tensor_args) if targs[i]._tape is private}
        self.bind, self.params, held = [], [], []
        for r in range(private.n):
            o = int(private.op[r])
            if private.flags[r] & F_STOP:  # (in-place ops are caught where they run)
                raise Unreplayable("a hook or retain_grad")
            if o == OP_LEAF or o == OP_CONST:
                j = row_arg.get(r)
                if j is None and r in private.aliases:  # (a step gives it its row's value)
                    continue
                if j is None and r in private.held:
                    held.append((r, private.held[r]))
                    continue
                p = private.aux[r]() if j is None and o == OP_LEAF else None
                if p is not None:
                    j = len(self.B)
                    self.B.append(p._data)
                    self.params.append((weakref.ref(p), p._data.shape, p._data.dtype))
                if j is None:
                    raise Unreplayable("it reads a tensor that is neither an argument nor a parameter (a leaf "
                                      "that requires grad)")
                self.bind.append((r, j))
        self.inputs = len(self.B)  # the caller's row's inputs: tensor arguments and parameters; then the seeds
        self.held = [(t, t._data.shape, t._data.dtype) for _, t in held]
        for r, t in held:
            self.bind.append((r, len(self.B)))
            self.B.append(t._data)
        self.bind_rows = np.array([r for r, _ in self.bind], np.int64)
        self.bind_cols = np.array([j for _, j in self.bind], np.int64)
        rows = {j: r for r, j in self.bind}
        self.input_rows = [rows.get(j) for j in range(self.inputs)]  # of each input of the caller's row
        self.out_grad = _requiring_grad(private, self.bind, [j >= len(wants) or wants[j] for j in range(self.inputs)],
                                        out_rows)
        private.flags[: private.n] &= np.uint8(~F_DEAD & 0xFF)  # (what a traced retain_graph=False marked)
        # The private plan must not check versions: the caller's row checks them, on the real tensors.
        private.vaddr[: private.n] = 0
        private.cells.clear()
        arg_of = {id(targs[i]): j for j, i in enumerate(self.tensor_args)}  # (cross_entropy's target)
        recorded = list(private.values)
        # NumPy's loops called directly must give what the ufunc call gave; where they do not (a NumPy whose
        # ufuncs pick another loop), every row falls back to its NumPy call
        for loops in (True, False):
            self.steps = self._steps(recorded, arg_of, loops)
            self._forward(self.B)
            wrong = _differs(private, recorded)
            if wrong is None:
                self.out_copy = _copied(private, self.in_place, out_rows, self.out_grad)
                return
            private.values[:] = recorded
        raise Unreplayable(wrong)

    def _steps(self, recorded, arg_of, loops):
        """The forward as a list of calls: one per run of elementwise rows (`loops`), one per other row."""
        tape, V, bound = self.tape, self.tape.values, set(self.bind_rows.tolist())
        fwd = _loop_kernels() if loops else None
        plan, entries, consts = [], [], {np.float32: [], np.float64: []}
        self.table = None  # the forward table (kernels/forward.py), one row per elementwise row
        self.in_place = set()  # its rows: their values are written in place by every call
        for r in range(tape.n):
            if r in bound:
                continue
            src = tape.aliases.get(r)
            if src is not None:  # (consecutive ones, a gradient's, are one step)
                if not plan or type(plan[-1]) is not _Aliases:
                    plan.append(_Aliases(V, tape.obj))
                plan[-1].rows.append((r, src))
                continue
            op = OPS[int(tape.op[r])]
            entry = fwd and _loop_entry(fwd, op, recorded, r, tape, consts)
            if entry is not None:
                V[r] = np.empty_like(recorded[r])  # written in place by every call: its id never changes
                self.in_place.add(r)
                tape.obj[r] = id(V[r])
                if not plan or type(plan[-1]) is not list:
                    plan.append([])
                plan[-1].append(len(entries))
                entries.append(entry)
                continue
            step = _forward_rule(op, V, r, tape, self.B, arg_of)
            if isinstance(step, str):
                raise Unreplayable(f"{op.name} has no replay rule: {step}")
            plan.append(step)
        if not entries:
            return plan
        # the constants' arrays must outlive the table, which holds their addresses
        self._consts = [np.array(c, t) for t, c in consts.items()]
        table = self.table = np.array(entries, np.int64)
        for col, row in ((fwd.CA, fwd.A), (fwd.CB, fwd.B)):
            for k in np.flatnonzero(table[:, row] == -1):
                dtype, i = divmod(int(table[k, col]), 1 << 32)
                c = self._consts[dtype]
                table[k, col] = c.ctypes.data + i * c.itemsize
        steps, obj = [], tape.obj
        for item in plan:
            if type(item) is list:
                start, stop = item[0], item[-1] + 1
                steps.append(lambda start=start, stop=stop: fwd.forward(table, start, stop, obj))
            else:
                steps.append(item)
        return steps

    def _forward(self, arrays):
        """Bind `arrays` (tensor arguments, then parameters) and recompute every op row."""
        B, V, tape = self.B, self.tape.values, self.tape
        B[:] = arrays
        for r, j in self.bind:
            V[r] = B[j]
        tape.obj[self.bind_rows] = np.fromiter(map(id, B), np.int64, len(B))[self.bind_cols]
        for step in self.steps:
            step()

    def run(self, args):
        """Recompute on `args`; the outputs, recorded on the caller's tape (None: a parameter changed)."""
        inputs = [args[i] for i in self.tensor_args]
        arrays = [t._data for t in inputs]
        for ref, shape, dtype in self.params:
            p = ref()
            if p is None or not p._requires_grad or p._data.shape != shape or p._data.dtype != dtype:
                return None
            inputs.append(p)
            arrays.append(p._data)
        for t, shape, dtype in self.held:
            if t._data.shape != shape or t._data.dtype != dtype:
                return None
            arrays.append(t._data)
        self._forward(arrays)
        self.generation += 1
        V, inputs = self.tape.values, tuple(inputs)
        outs = [_record(COMPILED, V[r].copy(), inputs, aux=_Call(self, k, arrays)) if grad else
                _new(V[r].copy() if copy else V[r]) for k, (r, grad, copy) in enumerate(zip(self.out_rows, self.out_grad,
                                                                                         self.out_copy))]
        return outs[0] if self.container is None else self.container(outs)

    def backward(self, call, g, wanted):
        """The gradients of a call's inputs (arrays, or None where not wanted): the private tape replayed. (The
        caller's plan has checked that no input changed in place since the call: the row saves all.)"""
        if call.generation != self.generation:  # a later call has replaced the values: recompute this one's
            self._forward(call.arrays)
            self.generation = call.generation
        targets = [r for r, w in zip(self.input_rows, wanted) if w and r is not None]
        roots = [self.out_rows[call.index]]
        got = iter(run_planned(self.tape, roots, [np.asarray(g)], targets, self._plans))
        return [next(got) if w and r is not None else None for r, w in zip(self.input_rows, wanted)]


class _Call:
    """The context of one output of one call: what its backward needs."""
    __slots__ = ("arrays", "generation", "index", "program")

    def __init__(self, program, index, arrays):
        self.program, self.index, self.generation, self.arrays = program, index, program.generation, arrays


def _requiring_grad(tape, bind, wants, out_rows):
    """Whether each output needs a gradient: it depends on a parameter or an argument that requires grad through
    rows other than a detached gradient's (a trace's own leaves require grad, so that all of it is recorded)."""
    grad = np.zeros(tape.n, bool)
    for r, j in bind:
        grad[r] = j < len(wants) and wants[j]
    for r in range(tape.n):
        if tape.op[r] > OP_CONST:
            grad[r] = grad[tape.row_args(r)].any()
    return [bool(grad[r]) for r in out_rows]


def _copied(tape, in_place, out_rows, out_grad):
    """Whether each output must be handed out as a copy: an array a later call writes into, or one a backward
    reads (the user may change it in place). Another (a weight's gradient) is handed out as computed: the next
    call replaces it."""
    read = set()
    for r in range(tape.n):
        if tape.op[r] > OP_CONST:
            saves = OPS[tape.op[r]].saves
            read.update(a for j, a in enumerate(tape.row_args(r)) if registry.reads_input(saves, j))
            if saves & registry.SAVES_OUT:
                read.add(r)
    out = []
    for r, grad in zip(out_rows, out_grad):
        src = tape.aliases.get(r, r)
        out.append(grad or not read.isdisjoint((r, src)) or not in_place.isdisjoint((r, src)))
    return out


class _Aliases:
    """A step: detached gradients' leaves take their rows' values."""

    def __init__(self, V, obj):
        self.V, self.obj, self.rows, self.dst = V, obj, [], None

    def __call__(self):
        V = self.V
        for r, src in self.rows:
            V[r] = V[src]
        if self.dst is None:  # (the rows are known once _steps has run)
            self.dst, self.src = (np.array(c, np.int64) for c in zip(*self.rows))
        self.obj[self.dst] = self.obj[self.src]


# -- forward rules: each op row recomputed from its inputs' values -------------------------------------------
def _forward_rule(op, V, r, tape, B, arg_of):
    """A function that recomputes row r into V[r] by its op's declared forward (registry.py), or the reason it
    cannot. B holds the bound arrays (arguments, then parameters); arg_of maps a traced argument's id to its
    index in B."""
    ins = tape.row_args(r)
    out = V[r]
    shape, dtype = out.shape, out.dtype
    c, c2 = float(tape.fattr[r, 0]), float(tape.fattr[r, 1])
    kind, name, f = op.kind, op.name, op.forward
    x = ins[0] if ins else None
    ctx = tape.aux.get(r)
    binary_of = registry.BY_NAME.get(name[:-3]) if name.endswith(("_ts", "_st")) else None
    if kind == registry.K_UNARY and binary_of is not None and binary_of.kind == registry.K_BINARY:
        bf = binary_of.forward  # (the variant's own forward wraps this one: a call less per row)
        if name.endswith("_ts"):
            def step():
                V[r] = bf(V[x], c)
        else:
            def step():
                V[r] = bf(c, V[x])
    elif kind == registry.K_UNARY and op.ufunc is not None:
        u = op.ufunc

        def step():
            V[r] = u(V[x])
    elif kind == registry.K_UNARY:
        def step():
            V[r] = f(V[x], c, c2)
    elif kind == registry.K_BINARY:
        y = ins[1]

        def step():
            V[r] = f(V[x], V[y])
    elif kind == registry.K_SUM:
        axes = tuple(d for d in range(V[x].ndim) if int(tape.iattr[r]) >> d & 1)
        if name.startswith("mean"):
            def step():
                V[r] = np.asarray(np.mean(V[x], axis=axes, keepdims=True)).reshape(shape).astype(dtype, copy=False)
        elif V[x].dtype == dtype:
            add = np.add.reduce  # (np.sum's own: a bias's gradient, without its Python wrapper)

            def step():
                V[r] = add(V[x], axes, None, None, True).reshape(shape)
        else:
            def step():
                V[r] = np.sum(V[x], axis=axes, keepdims=True).reshape(shape).astype(dtype, copy=False)
    elif kind == registry.K_EXPAND:
        def step():
            V[r] = np.array(np.broadcast_to(V[x], shape), order="C")
    elif kind == registry.K_RESHAPE:
        def step():
            V[r] = V[x].reshape(shape)
    elif kind == registry.K_CAST:
        def step():
            V[r] = V[x].astype(dtype)
    elif name == "cross_entropy":  # its target is not an input row: bound here when it is an argument
        j = arg_of.get(id(getattr(ctx, "target", None)))
        if j is None or out.ndim:
            return "cross_entropy's target is not an argument of the function"

        def step():
            V[r] = f(ctx, V[x], B[j])
    elif f is None:
        return op.unreplayable or f"{name} declares no forward"
    elif getattr(ctx, "unreplayable", None):
        return ctx.unreplayable
    else:  # a gather or a Python op: its forward on arrays, from its saved context
        def step():
            v = f(ctx, *[V[i] for i in ins])
            if type(v) is not np.ndarray or v.shape != shape or v.dtype != dtype or not v.flags.c_contiguous:
                v = np.asarray(v, dtype, order="C").reshape(shape)  # (a NumPy scalar, a flat result, ...)
            V[r] = v
    rule, obj = step, tape.obj  # a later compiled call (forward or backward) reads the value by its id
    if shape:
        def step():
            rule()
            obj[r] = id(V[r])
    else:  # a ufunc of 0-d arrays gives a NumPy scalar: the compiled replay reads an array's struct
        def step():
            rule()
            v = V[r] = np.asarray(V[r])
            obj[r] = id(v)
    return step


def _loop_kernels():
    """kernels/forward.py, loaded with the compiled runtime (numba is imported on the first trace)."""
    from .kernels import forward, load
    load()
    return forward


_LOOPS = {}  # (ufunc, dtype) -> NumPy's inner loop (function, data), or None


def _loop_entry(fwd, op, V, r, tape, consts):
    """Row r as a row of the forward table (kernels/forward.py), or None. It must be an op whose NumPy forward
    is one ufunc (or a binary one with a Python scalar, `x * 2.0`) on operands of the output's dtype, float32
    or float64, each of the output's size or a single element; `consts` collects the scalars per dtype."""
    out, name, ins = V[r], op.name, tape.row_args(r)
    dtype = out.dtype.type
    if dtype not in consts:
        return None
    binary_of = registry.BY_NAME.get(name[:-3]) if name.endswith(("_ts", "_st")) else None
    if op.kind == registry.K_UNARY and op.ufunc is not None:
        ufunc, operands = op.ufunc, ins
    elif op.kind == registry.K_UNARY and binary_of is not None and binary_of.kind == registry.K_BINARY:
        ufunc, operands = binary_of.forward, (ins[0], None) if name.endswith("_ts") else (None, ins[0])
    elif op.kind == registry.K_BINARY:
        ufunc, operands = op.forward, ins
    else:
        return None
    if not isinstance(ufunc, np.ufunc):
        return None
    key = (ufunc, dtype)
    if key not in _LOOPS:
        _LOOPS[key] = fwd.ufunc_loop(ufunc, dtype)
    if _LOOPS[key] is None:
        return None
    n, item = out.size, out.itemsize
    if any(x is not None and V[x].dtype != out.dtype for x in operands):
        return None
    # an operand of fewer elements must be the output's last dims (a bias): one loop call per repeat of it
    inner = {V[x].size for x in operands if x is not None and V[x].size not in (n, 1)}
    if len(inner) > 1 or inner and not all(_trailing(V[x].shape, out.shape) for x in operands
                                           if x is not None and V[x].size in inner):
        return None
    inner = inner.pop() if inner else n
    entry = [0] * fwd.WIDTH
    entry[fwd.R], (entry[fwd.FN], entry[fwd.DATA]), entry[fwd.N], entry[fwd.SO] = r, _LOOPS[key], inner, item
    entry[fwd.B], entry[fwd.CALLS], entry[fwd.OO] = -2, n // inner if inner else 1, inner * item
    for x, (col, step, outer, const) in zip(operands, ((fwd.A, fwd.SA, fwd.OA, fwd.CA),
                                                       (fwd.B, fwd.SB, fwd.OB, fwd.CB))):
        if x is None:  # the scalar, which NumPy casts to the tensor's dtype (NEP 50), as np.array(c, dtype)
            entry[col], entry[const] = -1, list(consts).index(dtype) << 32 | len(consts[dtype])
            consts[dtype].append(float(tape.fattr[r, 0]))
        else:
            size = V[x].size
            entry[col], entry[step], entry[outer] = x, item if size > 1 else 0, inner * item if size == n else 0
    return entry


def _trailing(shape, out_shape):
    """Whether an array of `shape` broadcast to `out_shape` repeats whole: its dims past leading 1s are the last."""
    while shape and shape[0] == 1:
        shape = shape[1:]
    return out_shape[len(out_shape) - len(shape):] == shape


def _differs(tape, recorded):
    """Why the replayed values differ from those the ops recorded, or None: they must be equal to the bit."""
    V = tape.values
    for r in range(tape.n):
        a, b = recorded[r], V[r]
        if type(b) is not np.ndarray:  # the compiled replay reads every value's array struct
            return f"{OPS[tape.op[r]].name}'s replay gives no array"
        if a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            return f"{OPS[tape.op[r]].name}'s replay differs from its op"
    return None
