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
is traced, as with torch.jit.trace: what it reads besides its arguments and parameters is fixed then, except
that tensors it reads from closures, globals and modules are read afresh, and the plain Python values there
(numbers, flags, strings) are guarded: a changed one makes a new trace (_sources).
"""
import logging
import math
import operator
import os
import weakref

import numpy as np

from . import _dtype, kernels, random, registry, replay, tape as tape_mod
from .accumulate import add_grad
from .grad_mode import _state as _grad_state
from .ops._common import _record
from .tape import F_DEAD, F_REQ, F_STOP, OP_CONST, OP_LEAF, Tape, made_in_trace
from .tensor import Tensor, _new, wrap
from .create_graph import graph_vjp, run_graph
from .nn.modules.module import Module
from .ops import stack
from .ops.reduce import _mean_values, _sum_values, _whole_float32
from .replay import run_planned

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
    """ctx: (the op's array rule, its context, the input's index, the `wanted` its replay passes to the rule, the
    gradients the rule gave at this replay, whether this row calls it: the first of the op's rows); the arrays: the
    op's inputs, its output, then the gradient (a cross_entropy's rule reads the gradient its forward computed)."""
    rule, rule_ctx, j, wanted, given, first = ctx
    if first:
        given[:] = [rule(rule_ctx, arrays[-1], list(arrays[:-2]), arrays[-2], wanted)]
    return given[0][j]


def _draw_forward(ctx):
    draw, args = ctx
    return draw(*args)


def _vjp_traced_draw(ctx, g, inputs, out):
    """A factory's random draw recorded while tapegrad.compile traces, which each replay draws again; it has no
    inputs, so this never runs."""
    raise RuntimeError("tapegrad.compile: a random draw has no inputs")


def _compare_forward(ctx, *arrays):
    """A comparison recorded while tracing (ctx: the NumPy function, and each side's constant or None for an input)."""
    np_fn, sides = ctx
    it = iter(arrays)
    a, b = (next(it) if v is None else v for v in sides)
    return np.asarray(np_fn(a, b))


# SAVES_ALL: the backward reads the arrays of the call, so the plan checks that none was changed in place since
registry.python("compiled", "CompiledFunctionBackward", None, _vjp_compiled, saves=registry.SAVES_ALL,
                array_vjp=_compiled_arrays, unreplayable="it is a call of another compiled function", holds_grad=True)
registry.python("traced_rule", "TracedRuleBackward", _traced_rule_forward, _vjp_traced_rule, holds_grad=True)


def _vjp_traced_compare(ctx, g, inputs, out):
    """A comparison recorded while tapegrad.compile traces, so that a replay recomputes what a branch reads; a bool
    result, through which no gradient flows, so this never runs."""
    raise RuntimeError("tapegrad.compile: a comparison is not differentiable")


registry.python("traced_compare", "TracedCompareBackward", _compare_forward, _vjp_traced_compare, holds_grad=True)
COMPILED = registry.BY_NAME["compiled"]
COMPARE = registry.BY_NAME["traced_compare"]
registry.python("traced_draw", "TracedDrawBackward", _draw_forward, _vjp_traced_draw, holds_grad=True)


def _vjp_traced_value(ctx, g, inputs, out):
    """A result computed from values with no gradient (argmax, indices), recorded while tapegrad.compile traces so
    that a replay recomputes it; no gradient flows through it, so this never runs."""
    raise RuntimeError("tapegrad.compile: an index computed from values is not differentiable")


registry.python("traced_value", "TracedValueBackward", lambda ctx, *arrays: ctx(*arrays), _vjp_traced_value, holds_grad=True)
VALUE = registry.BY_NAME["traced_value"]
DRAW = registry.BY_NAME["traced_draw"]
TRACED_RULE = registry.BY_NAME["traced_rule"]


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """torch.compile: `model` (a function or a module) traced per signature and replayed (module docstring)."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if not callable(model):  # torch raises AssertionError, in these words
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")  # noqa: TRY004
    if callable(backend):
        raise NotImplementedError(f"torch.compile(backend={getattr(backend, '__name__', backend)!r}): a custom "
                                  "backend receives a torch.fx GraphModule, which tapegrad does not build (it records "
                                  "the function on its tape); give a backend's name, or none")
    if backend not in BACKENDS:
        raise InvalidBackend(f"Invalid backend: {backend!r}, see `torch._dynamo.list_backends()` for available "
                             "backends.")
    if disable:
        return model
    compiled = Compiled(model, fullgraph)
    return OptimizedModule(model, compiled) if isinstance(model, Module) else compiled


class OptimizedModule(Module):
    """What torch.compile returns for a module (torch._dynamo.eval_frame.OptimizedModule): a Module whose forward is
    the compiled call of the original, registered as `_orig_mod` (so its state_dict keys start `_orig_mod.`, as
    torch's); other attributes are read from and written to the original, and `training` is the original's."""
    _own = frozenset(("_orig_mod", "_compiled", "_fullgraph", "forward", "__dict__"))
    _transient = ("_compiled",)  # (tapegrad.save keeps the module, not its traces: a loaded one compiles afresh)

    def __init__(self, mod, compiled):
        object.__setattr__(self, "_orig_mod", mod)  # (first: attribute reads during Module.__init__ go to it)
        super().__init__()
        self._orig_mod = mod
        self._compiled, self._fullgraph = compiled, compiled._fullgraph

    def _call(self):
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = Compiled(self._orig_mod, self._fullgraph)
        return compiled

    def forward(self, *args, **kwargs):
        return self._call()(*args, **kwargs)

    # the compiled call's counters (Compiled): traces, recompiles and the guard failures that caused them
    traces = property(lambda self: self._call().traces)
    recompiles = property(lambda self: self._call().recompiles)
    guard_failures = property(lambda self: self._call().guard_failures)

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, mode):
        self._orig_mod.training = mode

    def __getattr__(self, name):
        orig = self.__dict__.get("_modules", {}).get("_orig_mod")
        if orig is None:  # (being rebuilt by copy or pickle)
            raise AttributeError(f"'OptimizedModule' object has no attribute '{name}'")
        return orig if name == "_orig_mod" else getattr(orig, name)

    def __reduce__(self):  # (a copy compiles the copied module afresh: traces belong to the original's tensors)
        return _optimized_module, (self._orig_mod, self._fullgraph)

    def __setattr__(self, name, value):
        if name in OptimizedModule._own or hasattr(type(self), name):
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if name in OptimizedModule._own or hasattr(type(self), name):
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)

    def __len__(self):
        if hasattr(type(self._orig_mod), "__len__"):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    def __dir__(self):
        own = object.__dir__(self)
        return dir(self._orig_mod) + [a for a in own if a not in dir(self._orig_mod)]


def _optimized_module(mod, fullgraph):
    return OptimizedModule(mod, Compiled(mod, fullgraph))


class config:
    """torch._dynamo.config's switches that tapegrad.compile reads (also as tapegrad._dynamo.config)."""
    recompile_limit = 8  # traces per compiled function; past it, a call whose guards all fail runs eagerly
    error_on_recompile = False  # raise RecompileError instead of tracing again
    # TAPEGRAD_LOGS=recompiles (or TORCH_LOGS=recompiles, or tapegrad._logging.set_logs(recompiles=True)):
    # each retrace says why on the "tapegrad._dynamo" logger
    log_recompiles = any("recompiles" in os.environ.get(v, "").split(",") for v in ("TAPEGRAD_LOGS", "TORCH_LOGS"))


def reset():
    """torch._dynamo.reset: forget every compiled function's traces (each traces again at its next call)."""
    for f in list(_COMPILED):
        f._cache.clear()
        f.traces = f.recompiles = 0
        f.guard_failures = []
        f._last_key = None


_COMPILED = weakref.WeakSet()


class Unsupported(RuntimeError):
    """torch._dynamo.exc.Unsupported: fullgraph=True and the function cannot be replayed (the reason is said)."""


class RecompileError(RuntimeError):
    """torch._dynamo.exc.RecompileError: a compiled function would trace again under error_on_recompile."""


class InvalidBackend(RuntimeError):
    """torch._dynamo.exc.InvalidBackend: a backend name torch does not know."""


# torch's backend names (torch._dynamo.list_backends(exclude_tags=()) of 2.13, less its test-only ones): each
# means the same here, a trace replayed by tapegrad
BACKENDS = frozenset(("inductor", "eager", "aot_eager", "cudagraphs", "aot_eager_decomp_partition",
                      "aot_eager_default_partitioner", "aot_ts", "eager_debug", "eager_noexcept", "openxla",
                      "openxla_eval", "pre_dispatch_eager", "ts", "tvm", "invoke_subgraph"))


_log = logging.getLogger("tapegrad._dynamo")


def _log_recompile(message):
    if not _log.handlers and not logging.getLogger().handlers:  # (as TORCH_LOGS: to stderr, set up on first use)
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        _log.addHandler(handler)
        _log.setLevel(logging.DEBUG)
    _log.debug(message)


class Compiled:
    """The callable torch.compile returns: per signature, the traces (_Programs, most recently used first) whose
    guards a call tries in turn, or the reason it runs eagerly. `recompiles` counts traces after the first,
    `guard_failures` the reasons of the last ones."""

    def __init__(self, fn, fullgraph=False):
        self._orig_mod = fn
        self._fullgraph = fullgraph
        self._cache = {}
        self._modules = None  # the modules it calls: their train/eval modes are part of the signature
        self._values = ()     # the plain Python values it may read (_sources): theirs are too
        self._last_key = None
        self.traces = 0
        self.recompiles = 0
        self.guard_failures = []
        _COMPILED.add(self)

    def __getattr__(self, name):  # a compiled module still has its parameters, train(), ...
        return getattr(self.__dict__["_orig_mod"], name)

    def __call__(self, *args, **kwargs):
        fn = self._orig_mod
        if tape_mod._local.tracing is not None:  # inside another trace: inlined into it
            return fn(*args, **kwargs)
        key = _signature(args, kwargs)
        if key is None:
            if self._fullgraph:
                raise Unsupported("tapegrad.compile(fullgraph=True): cannot replay this function: an argument "
                                   "that is neither a tensor nor hashable, a container of tensors (a tuple (h, c)), "
                                   "or a tensor passed by keyword")
            return fn(*args, **kwargs)
        if self._modules is None:
            self._modules, self._values = _sources(fn)[1:]
            self._value_names = tuple(what for what, _ in self._values)
        if self._modules:
            key = (*key, ("modes", tuple(m.training for m in self._modules)))
        if self._values:  # (each value with its type: 2 and 2.0 make different traces, as int and float tensors)
            key = (*key, ("values", tuple([(type(v), v) for v in [get() for _, get in self._values]]),
                          self._value_names))
        entries = self._cache.get(key)
        if type(entries) is str:
            return fn(*args, **kwargs)  # a graph break: this signature runs eagerly
        failed = []
        if entries:
            for i, program in enumerate(entries):
                out = program.run(args)
                if out is not _FAILED:
                    if i:  # (most recently used first)
                        entries.insert(0, entries.pop(i))
                    return out
                failed.append(program.failure)
        else:
            failed.append(_key_change(self._last_key, key) if self._last_key is not None else None)
        program = self._trace(key, args, kwargs, failed)
        if type(program) is _Program:
            out = program.run(args)
            if out is not _FAILED:
                return out
        return fn(*args, **kwargs)

    def _trace(self, key, args, kwargs, failed):
        """Trace for `key` (its earlier traces' guards `failed`, saying why); the _Program, or why not (a string)."""
        name = getattr(self._orig_mod, "__name__", type(self._orig_mod).__name__)
        why = "; ".join(f for f in failed if f)
        if self.traces:
            self.guard_failures = (self.guard_failures + [why])[-config.recompile_limit:]
            if config.error_on_recompile:
                raise RecompileError(f"Recompiling function {name}, triggered by the following guard failure(s): "
                                     f"{why} (tapegrad._dynamo.config.error_on_recompile is set)")
            if config.log_recompiles:
                _log_recompile(f"Recompiling function {name}: triggered by the following guard failure(s): {why}")
            if self.traces >= config.recompile_limit:
                if config.log_recompiles:
                    _log_recompile(f"{name} hit config.recompile_limit ({config.recompile_limit}): this call "
                                   f"runs eagerly")
                return None
        self._last_key = key
        self.traces += 1
        self.recompiles = self.traces - 1
        self._modules = None  # (found again at the next call: the function may reach others now)
        entry = _trace(self._orig_mod, args, kwargs)
        if type(entry) is str:
            if self._fullgraph:
                raise Unsupported(f"tapegrad.compile(fullgraph=True): cannot replay this function: {entry}")
            self._cache[key] = entry
        else:
            self._cache.setdefault(key, []).insert(0, entry)
        return entry


def _key_change(old, new):
    """Why a new signature: the first part of it that differs from the last one traced."""
    if old[0] != new[0]:
        return f"grad mode changed to {new[0]}"
    for i, (a, b) in enumerate(zip(old[1:], new[1:])):
        if a != b:
            if type(b) is tuple and b and b[0] == "modes":
                return f"a module's train/eval mode changed: {a[1]} -> {b[1]}"
            if type(b) is tuple and b and b[0] == "values" and type(a) is tuple and len(a[1]) == len(b[1]):
                k = next(k for k, (x, y) in enumerate(zip(a[1], b[1])) if x != y)
                if b[2][k].endswith(("submodules", "(the module object)")):  # (object identities: no values to show)
                    return f"a module was replaced: {b[2][k]}"
                return f"a Python value it may read changed: {b[2][k]} {a[1][k][1]!r} -> {b[1][k][1]!r}"
            return f"argument {i} changed: {a} -> {b}"
    return f"the arguments changed: {old[1:]} -> {new[1:]}"


_PLAIN = (bool, int, float, str, type(None))


def _plain(v):
    """A Python value a trace may have baked in as a constant, which a guard compares: a number, a string, None,
    or a tuple of them."""
    return type(v) in _PLAIN or type(v) is tuple and all(type(x) in _PLAIN for x in v)


def _sources(fn):
    """Where fn reads tensors, modules and plain Python values from: (id(tensor) -> (what, a function returning what
    that place holds now), the modules it reaches, [(what, getter) of each plain value]): its closure cells, the
    globals its code names (and those of the functions it names, a few calls deep), and for a module (or a method
    of one) every submodule's attributes and buffers. A plain value a trace reads is a constant of it, as
    torch.compile's guards treat one: a changed one makes a new trace (Compiled.__call__)."""
    getters, modules, values, seen_code, roots = {}, [], [], set(), []

    def add_module(m):
        for sub in m.modules():
            if sub not in modules:
                modules.append(sub)
                for k, v in list(vars(sub).items()) + list(sub._buffers.items()):
                    if isinstance(v, Tensor):
                        getters.setdefault(id(v), (f"attribute {type(sub).__name__}.{k}",
                                                   lambda sub=sub, k=k: getattr(sub, k, None)))
                    elif k != "training" and not k.startswith("_") and _plain(v):
                        values.append((f"attribute {type(sub).__name__}.{k}", lambda sub=sub, k=k: getattr(sub, k, None)))
                add_code(getattr(type(sub).forward, "__code__", None), getattr(type(sub).forward, "__globals__", {}),
                         2)

    def add(v, name, get, depth):
        if isinstance(v, Tensor):
            getters.setdefault(id(v), (name, get))
        elif isinstance(v, Module):
            if v not in roots:
                roots.append(v)
                if name != "the compiled module":  # (a global or closure variable assigned another module)
                    values.append((f"{name} (the module object)", lambda: id(get())))
            add_module(v)
        elif isinstance(v, Compiled):
            add(v._orig_mod, name, lambda: None, depth)
        elif _plain(v):
            values.append((name, get))
        elif depth and type(v).__name__ == "function":  # (a Python function it calls: what that reads, too)
            add_function(v, depth - 1)

    def add_function(func, depth):
        code = getattr(func, "__code__", None)
        if code is None or code in seen_code:
            return
        for name, cell in zip(code.co_freevars, func.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:  # (an empty cell)
                continue
            add(v, f"closure variable '{name}'", lambda cell=cell: cell.cell_contents, depth)
        add_code(code, func.__globals__, depth)

    def add_code(code, g, depth):
        if code is None or code in seen_code:
            return
        seen_code.add(code)
        names, todo = set(), [code]
        while todo:  # (the names of nested functions' code too)
            c = todo.pop()
            names.update(c.co_names)
            todo.extend(k for k in c.co_consts if hasattr(k, "co_names"))
        for name in sorted(names):
            if name in g:
                add(g[name], f"global '{name}'", lambda name=name: g.get(name), depth)

    add(fn, "the compiled module", lambda: None, 0)
    func = getattr(fn, "__func__", fn)
    if isinstance(getattr(fn, "__self__", None), Module):
        add_module(fn.__self__)
    if isinstance(fn, Module):
        func = type(fn).forward
    add_function(func, 2)
    if isinstance(getattr(fn, "__self__", None), Module) and fn.__self__ not in roots:
        roots.append(fn.__self__)
    if roots:  # (a parameter or submodule replaced by another object: the trace bound the old one)
        values.append(("the modules' parameters and submodules", lambda: _structure(roots)))
    return getters, modules, values


def _structure(roots):
    """The identities of the modules' parameters and submodules, depth first: what a trace bound, as a guard."""
    out = []

    def walk(m):
        out.extend(map(id, m._parameters.values()))
        out.append(-1)
        for child in m._modules.values():
            out.append(id(child))
            if child is not None:
                walk(child)
    for m in roots:
        walk(m)
    return tuple(out)


def _signature(args, kwargs):
    """The guard: what a trace depends on besides the values of tensor arguments (None: not hashable)."""
    key = [_grad_state.enabled]
    seen = {}
    for a in args:
        if isinstance(a, Tensor):
            d = a._data
            key.append((d.shape, d.dtype.str, a._requires_grad, seen.setdefault(id(d), len(seen))))
        elif isinstance(a, (tuple, list, dict)) and _holds_tensor(a):
            return None  # (tensors in a container argument, an LSTM's (h, c): not bound by a trace, so eager)
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


def _holds_tensor(container):
    items = container.values() if isinstance(container, dict) else container
    return any(isinstance(v, Tensor) or isinstance(v, (tuple, list, dict)) and _holds_tensor(v) for v in items)


_ZERO, _UNKNOWN = object(), object()  # a .grad zeroed in place; one the trace cannot know
_FAILED = object()  # a replay whose guards failed


def _traced_total_norm(grads, norm_type):
    """clip_grad_norm_'s result while tracing: the total norm of the traced gradients, as recorded ops."""
    if not grads:
        return made_in_trace(_new(np.asarray(0.0, np.float32)))
    dtype = grads[0].dtype
    norms = stack([g.norm(norm_type).to(dtype) for g in grads])
    return norms.norm(norm_type)


def _nested(flat, shape):
    if not shape:
        return flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nested(flat[k * step:(k + 1) * step], shape[1:]) for k in range(shape[0])]


def _same(a, b):
    return a == b or a != a and b != b  # (NaN is NaN)


class TracedScalar:
    """A number read from a tensor while tapegrad.compile traces (`t.item()`, `t.tolist()`), as ADOL-C's adouble
    records comparisons: a comparison (`loss.item() < best`) is recorded as a guard, which each replay checks, and
    a call whose comparison goes the other way is traced again; any other use (arithmetic, float(), formatting)
    guards the value itself. Once the trace ends, it is only its number."""
    __slots__ = ("value", "tape", "row", "index")

    def __init__(self, value, tape, row, index):
        self.value, self.tape, self.row, self.index = value, tape, row, index

    def _tracing(self):
        return tape_mod._local.tracing is not None and tape_mod._local.tape is self.tape

    def _read(self, V):
        return V[self.row].reshape(-1)[self.index].item()

    def _pin(self):
        """The value is used as a number: every replay must read the same one."""
        if self._tracing():
            value = self.value
            self.tape.value_guards.append((self.row, lambda V: _same(self._read(V), value),
                                           f"a value read into Python ({value!r}) and used as a number changed"))
        return self.value

    def _compare(self, other, op, symbol):
        if isinstance(other, TracedScalar):
            if other.tape is not self.tape:
                return op(self._pin(), other._pin())
            result = op(self.value, other.value)
            if self._tracing():
                self.tape.value_guards.append((max(self.row, other.row),
                                               lambda V: op(self._read(V), other._read(V)) == result,
                                               f"a comparison of values read into Python ({self.value!r} "
                                               f"{symbol} {other.value!r}) went the other way"))
            return result
        if not isinstance(other, (int, float, bool, np.number)):
            return op(self._pin(), other)
        result = op(self.value, other)
        if self._tracing():
            self.tape.value_guards.append((self.row, lambda V: op(self._read(V), other) == result,
                                           f"a comparison of a value read into Python ({self.value!r} {symbol} "
                                           f"{other!r}) went the other way"))
        return result

    def __lt__(self, other):
        return self._compare(other, operator.lt, "<")

    def __le__(self, other):
        return self._compare(other, operator.le, "<=")

    def __gt__(self, other):
        return self._compare(other, operator.gt, ">")

    def __ge__(self, other):
        return self._compare(other, operator.ge, ">=")

    def __eq__(self, other):
        return self._compare(other, operator.eq, "==")

    def __ne__(self, other):
        return self._compare(other, operator.ne, "!=")

    def __bool__(self):
        return self._compare(0, operator.ne, "!=")

    def __hash__(self):
        return hash(self._pin())

    def __float__(self):
        return float(self._pin())

    def __int__(self):
        return int(self._pin())

    def __index__(self):
        return operator.index(self._pin())

    def __complex__(self):
        return complex(self._pin())

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._pin(), dtype)

    def __format__(self, spec):
        return format(self._pin(), spec)

    def __repr__(self):
        return repr(self._pin())

    __str__ = __repr__


def _traced_binary(op, reflected=False):
    def method(self, other):
        other = other._pin() if isinstance(other, TracedScalar) else other
        return op(other, self._pin()) if reflected else op(self._pin(), other)
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift"):
    _op = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    setattr(TracedScalar, f"__{_name}__", _traced_binary(_op))
    setattr(TracedScalar, f"__r{_name}__", _traced_binary(_op, True))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(TracedScalar, f"__{_name}__", lambda self, _op=getattr(operator, _name): _op(self._pin()))
for _name, _fn in (("round", round), ("trunc", math.trunc), ("floor", math.floor), ("ceil", math.ceil)):
    setattr(TracedScalar, f"__{_name}__", lambda self, *a, _fn=_fn: _fn(self._pin(), *a))
setattr(TracedScalar, "__divmod__", _traced_binary(divmod))
setattr(TracedScalar, "__rdivmod__", _traced_binary(divmod, True))


class Unreplayable(Exception):
    """Why a trace cannot be replayed."""


class _TraceTape(Tape):
    """A tape that never sweeps and never releases a value: every row's value is recomputed in place. A gradient
    the function takes (autograd.grad) is recorded on it as ops, as AOTAutograd traces a joint graph."""

    def __init__(self):
        super().__init__()
        self.sweep_at = 1 << 62  # record() never reaches it, so never calls check_sweep
        self.held = {}     # leaf row -> the constant tensor it stands for (a seed): bound afresh at each call
        self.aliases = {}  # leaf row -> the row whose value it is (a gradient without create_graph, a detach())
        self.made = {}     # id(array) -> array: values a factory made from Python values (creation.made_in_trace)
        self.consts = {}   # constant row -> weakref of the tensor it was read from (not made in the trace)
        self.value_guards = []  # value guards: (row, check(V) -> bool, what it checks), in the order they were read
        # A training step: what each replay does after its rows, in the traced order (a .grad accumulated from a
        # gradient row, a call of zero_grad, clip_grad_norm_ or optimizer.step), and what it checks first
        self.effects = []
        self.preconditions = []  # (check() -> bool, what it checks)
        self.grad_of = {}        # id(leaf) -> (leaf, its .grad as the trace knows it: a Tensor, None, _ZERO, _UNKNOWN)
        self.arg_leaves = {}     # a traced argument's row -> (its index among the tensor arguments, requires grad)
        self.step_at = None      # rows from here on are recorded after an optimizer.step()
        self.generators = {}     # id -> (a generator a draw used, its state before the trace)
        self.grad_guarded = {}   # id -> a tensor whose .grad, as it was before the trace, a precondition guards
        # rows whose context was derived from tensors' values (tape.guard): row -> [(remap, those tensors' rows)];
        # a row that read values with no remap cannot be replayed
        self.remaps = {}
        self.frozen_values = set()
        self.remapped = set()  # id() of the arrays remaps rewrite (a scatter_flat with one may add into a place twice)
        self.create_graph = False  # while a gradient with create_graph=True is traced
        self.in_function_forward = 0  # while a custom Function's forward is traced (its depth)
        self.arg_ids = set()  # id() of the tensors that stand for the arguments
        self._grad_now = []  # per row: whether it requires grad in the calls the trace stands for (requires_grad_now)

    def note_values_read(self, out, saved, remap):
        """tape.guard while tracing: out's row derived its context from the values of `saved`."""
        if remap is None:
            self.frozen_values.add(out._slot)
            return
        rows = [self.slot(t) for t in saved]
        self.remaps.setdefault(out._slot, []).append((remap, rows))
        self.remapped.update(id(a) for a in getattr(remap, "writes", ()))

    def note_made(self, t):
        self.made[id(t._data)] = t._data

    def slot(self, t):
        """A constant's row remembers its tensor; a detached tensor (detach(), .data) shares a row's array and
        stands for that row's value."""
        n = self.n
        s = super().slot(t)
        if s >= n and self.op[s] == OP_CONST:
            same = np.flatnonzero(self.obj[:n] == id(t._data))
            same = [r for r in same.tolist() if self.values[r] is t._data]
            if same:
                self.aliases[s] = same[-1]
            else:
                self.consts[s] = weakref.ref(t)
        return s

    # -- a custom autograd.Function (autograd/function.py): its forward's rows, its outputs' rows -------------
    def requires_grad_now(self, t):
        """Whether t requires grad in the calls this trace stands for: every float argument is a leaf of the trace,
        whether the caller's tensor requires grad or not (the signature says which do; a parameter must)."""
        if not t._requires_grad:
            return False
        if t._tape is not self or not self.holds(t._slot, t._data):
            return True  # (a parameter that no op has read yet)
        known, flags, op = self._grad_now, self.flags, self.op
        for r in range(len(known), self.n):
            if op[r] == OP_LEAF:
                known.append(self.arg_leaves[r][1] if r in self.arg_leaves else
                             bool(flags[r] & F_REQ) and r not in self.held and r not in self.aliases)
            else:
                args = self.row_args(r)
                known.append(op[r] > OP_CONST and bool(flags[r] & F_REQ) and (not args or any(known[a] for a in args)))
        return known[t._slot]

    def no_gradient(self, first, tensors):
        """A Function's forward has recorded rows first..n: none carries a gradient (an eager forward runs under
        no_grad; the Function's backward gives the gradient), nor do the `tensors` it made (its outputs, what its
        ctx keeps)."""
        rows = np.arange(first, self.n)
        rows = rows[self.op[rows] > OP_CONST]
        self.flags[rows] &= np.uint8(~F_REQ & 0xFF)
        del self._grad_now[first:]
        for t in tensors:
            if t._tape is self and first <= t._slot < self.n and self.op[t._slot] > OP_CONST:
                t._requires_grad, t._is_leaf, t._grad_fn = False, True, None

    def pin_kept(self, values):
        """Numbers read from tensors (TracedScalars, also in lists, tuples and dicts) that a Function's ctx keeps: its
        backward may use them outside the trace (a backward of the call), where no guard would follow: guarded now."""
        for v in values:
            if isinstance(v, TracedScalar):
                v._pin()
            elif isinstance(v, (list, tuple, dict)):
                self.pin_kept(v.values() if isinstance(v, dict) else v)

    def kept_value_replays(self, t):
        """Whether a replay recomputes (or keeps, or reads afresh) the value of t, which a Function's ctx keeps: a row's
        value (an op's, a tensor its forward read, a detached one), or a constant made from Python values."""
        if t._tape is self and self.holds(t._slot, t._data):
            return True
        s = self.slot(t)  # (a detached tensor stands for the row whose array it shares; an argument is bound)
        return s in self.aliases or id(t) in self.arg_ids or self.made.get(id(t._data)) is t._data

    def source_row(self, original, out):
        """The row of a Function's output's value (`out`: `original` as apply returns it): a row of its forward, an
        input's, or a constant's (a tensor its forward made from Python values)."""
        if not (original._tape is self and self.holds(original._slot, original._data)):
            original = _new(original._data)  # (made in the trace: a constant; else a value no row computes)
        s = self.slot(original)
        if self.values[s] is not out._data:  # (made contiguous by apply)
            tape_mod.untraceable("a custom Function's output that is not a contiguous array")
        return s

    def refresh(self, tensors):
        """A traced Function's backward run by a plain backward of a compiled call (not traced): the tensors its ctx
        holds that the trace made (an argument's stand-in, an op's result, a detached one) take that call's values,
        which the replay recomputed. A parameter, or a tensor from outside, is its own."""
        V, n = self.values, self.n
        for t in tensors:
            s = t._slot
            if t._tape is self and 0 <= s < n and (self.op[s] > OP_CONST or id(t) in self.arg_ids or s in self.aliases):
                t._data = V[s]

    # -- a training step: backward into .grad, zero_grad, clip_grad_norm_, optimizer.step ---------------------
    def read_grad(self, t):
        if id(t) in self.grad_of:
            tape_mod.untraceable("a read of .grad after backward(), zero_grad() or step() in the function (a replay "
                                 "runs those after its rows; only clip_grad_norm_ and the optimizers read it there)")
        self._grad_state(t)  # (guarded: whether it is None, and which tensor it is)

    def backward_into_grad(self, roots, seeds, retain_graph, create_graph, targets):
        """`.backward()` while tracing: the gradient is recorded as rows (as autograd.grad), and each replay
        accumulates it into the leaves' .grad (a parameter's, or an argument's whose caller's tensor requires grad)."""
        if create_graph:
            tape_mod.untraceable("backward(create_graph=True) (take autograd.grad(create_graph=True) instead)")
        rows = targets if targets is not None else [
            r for r in range(self.n) if self.op[r] == OP_LEAF and self.flags[r] & F_REQ and r not in self.aliases
            and r not in self.held]
        keep = []  # (row, where its gradient goes: an argument's index or a leaf's weakref, the traced leaf)
        for r in rows:
            if r in self.arg_leaves:
                j, wants = self.arg_leaves[r]
                if wants:
                    keep.append((r, j, None))
                continue
            ref = self.aux.get(r)
            t = ref() if ref is not None else None
            if t is not None:
                if t._hooks or t._post_accumulate_grad_hooks:  # (a replay accumulates without running them)
                    tape_mod.untraceable("a hook on a leaf that backward() accumulates into")
                keep.append((r, ref, t))
        grads = replay.run(self, roots, seeds, retain_graph, False, targets=[r for r, _, _ in keep],
                           accumulate=False)
        for (r, where, t), g in zip(keep, grads):
            if g is None:
                continue
            if t is None:
                self.grad_of[("arg", where)] = (None, _UNKNOWN)
            else:
                state = self._grad_state(t)
                self.grad_of[id(t)] = (t, g if state is None or state is _ZERO else
                                       _UNKNOWN if state is _UNKNOWN else state + g)
            self.effects.append(("grad", where, g._slot))

    def _grad_state(self, p):
        """What p.grad holds as the trace knows it; first asked, its real .grad, guarded (a precondition)."""
        entry = self.grad_of.get(id(p))
        if entry is not None:
            return entry[1]
        ref, g = weakref.ref(p), p._grad
        if id(p) in self.grad_guarded:
            return g
        self.grad_guarded[id(p)] = p
        if g is None:
            self.preconditions.append((lambda: ref() is None or ref()._grad is None,
                                       "a parameter's .grad was None when traced, and is set now"))
            return None
        gref = weakref.ref(g)
        self.preconditions.append((lambda: ref() is None or ref()._grad is gref(),
                                   "a parameter's .grad is another tensor than when traced"))
        return g  # (a tensor from outside: read afresh at each call)

    def defer(self, kind, fn, args, params, kwargs=None, norm_type=None):
        """zero_grad(), optimizer.step(), clip_grad_norm_ or clip_grad_value_ called while tracing: each replay
        calls it, in the traced order, after its rows (eagerly: the optimizers' compiled foreach updates)."""
        kwargs = kwargs or {}
        if kind == "step":
            if kwargs.get("closure") is not None or args and args[0] is not None:
                tape_mod.untraceable("optimizer.step(closure) (the closure runs the forward again)")
            if self.step_at is None:
                self.step_at = self.n
            result = None
        elif kind == "call":  # (an LR scheduler's step: Python state that each call must advance)
            result = None
        elif kind == "zero_grad":
            for p in params:
                self.grad_of[id(p)] = (p, None if args[0] else _ZERO)
            result = None
        else:
            grads = []
            for p in params:
                state = self._grad_state(p)
                if state is _UNKNOWN:
                    tape_mod.untraceable(f"{fn.__name__} of a gradient the function does not compute itself")
                if isinstance(state, Tensor):
                    grads.append(state)
                self.grad_of[id(p)] = (p, _UNKNOWN)
            result = _traced_total_norm(grads, norm_type) if kind == "clip" else None
        self.effects.append(("call", fn, args, kwargs))
        return result

    def read_value(self, t, how):
        """A tensor's value read into Python while tracing (how: item, tolist or bool). bool() becomes a guard that
        the replay checks (the branch it takes); item() and tolist() hand out TracedScalars, whose comparisons are
        guards and whose other uses guard the value itself."""
        r = self.slot(t)
        flat = t._data.reshape(-1)
        if how == "bool":
            value = bool(flat[0])
            self.value_guards.append((r, lambda V: bool(V[r].reshape(-1)[0]) == value,
                                      f"a branch on a tensor's truth value (bool(), `if t:`) went the other way "
                                      f"(traced {value})"))
            return value
        if how == "item":
            return TracedScalar(flat[0].item(), self, r, 0)
        return _nested([TracedScalar(v, self, r, i) for i, v in enumerate(flat.tolist())], t._data.shape)

    def record_constant(self, code, t, inputs, c=0.0, c2=0.0, iattr=0, aux=None):
        """An op on tensors none of which requires grad: recorded all the same (no gradient flows through it), so
        that a replay recomputes it when what it reads changes."""
        s = self.record(code, t._data, inputs, c, c2, iattr, aux)
        self.flags[s] &= np.uint8(~F_REQ & 0xFF)
        t._tape, t._slot, t._op = self, s, code

    def record_draw(self, draw, args, requires_grad):
        """A factory's random draw (randn, rand, randint, randperm): a row that each replay draws again, from the
        generator's state at that call, so a call advances the generator as the eager one does."""
        if requires_grad:
            tape_mod.untraceable("a random draw that requires grad (a parameter made in the function)")
        gen = random._gen(next((a for a in args if isinstance(a, random.Generator)), None))
        if id(gen) not in self.generators:
            self.generators[id(gen)] = (gen, gen.get_state())
        saved, tape_mod._local.tracing = tape_mod._local.tracing, None  # (the draw itself is no break)
        try:
            t = _new(draw(*args))
        finally:
            tape_mod._local.tracing = saved
        self.record_constant(DRAW.code, t, [], aux=(draw, args))
        return t

    def restore_generators(self):
        """Every generator a draw used, back at its state before the trace."""
        for gen, state in self.generators.values():
            gen.set_state(state)

    def record_value(self, fn, t, inputs):
        """tape.traced_value: a result with no gradient computed from values (argmax, sort's indices), as a row."""
        self.record_constant(VALUE.code, t, inputs, aux=fn)

    def record_compare(self, np_fn, input, other, a, b, out):
        """A comparison (`err > tol`): a bool row that a branch on it (bool(), item()) guards."""
        ins = [x for x in (input, other) if isinstance(x, Tensor)]
        sides = (None if isinstance(input, Tensor) else a, None if isinstance(other, Tensor) else b)
        self.record_constant(COMPARE.code, out, ins, aux=(np_fn, sides))

    def _release_inputs(self, row):
        pass

    def chain_starts(self, top):
        pass  # (nor cuts a dead chain or tail: a replay recomputes every row, and its guards read them)

    def cut_dead_tail(self):
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
            saved, self.create_graph = self.create_graph, True
            try:
                return run_graph(self, need, roots, seeds, targets, False)
            finally:
                self.create_graph = saved
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
    as one recorded row per wanted input (its replay calls the rule); otherwise the create_graph rule. A unary
    elementwise op's rule is the compiled loop a plain backward runs (_unary_rule)."""
    rule, ctx = op.array_vjp, tape.aux.get(row)
    if op.kind == registry.K_UNARY:
        rule, ctx = _unary_rule, (op.code, float(tape.fattr[row, 0]), float(tape.fattr[row, 1]))
    if rule is None:
        return graph_vjp(op, tape, row, g, inputs)
    wanted = tuple(bool(need[a]) for a in tape.row_args(row))
    out = wrap(tape, row)
    got = rule(ctx, g._data, [x._data for x in inputs], out._data, wanted)
    if got is None:  # (no array rule for these shapes)
        return graph_vjp(op, tape, row, g, inputs)
    kept = [j for j, (v, w) in enumerate(zip(got, wanted)) if v is not None and w]
    # one call of the rule per replay (an LSTM layer's reverse recurrence gives every input's gradient at once):
    # the first row calls it, the others take their gradient from what it gave
    given = []
    return [None if j not in kept else
            _record(TRACED_RULE, np.asarray(got[j]), (*inputs, out, g), aux=(rule, ctx, j, wanted, given, j == kept[0]))
            for j in range(len(got))]


def _unary_rule(ctx, g, inputs, out, wanted):
    """A unary elementwise row's gradient by the plain backward's own loop (kernels/elementwise.py): one pass, where
    its derivative expression recorded as ops was up to four (relu's compare, multiply and where: 1.7 ms of a
    LeNet step's replay), and the same bits as a plain backward."""
    code, c, c2 = ctx
    x = inputs[0]
    if not (x.dtype == g.dtype == out.dtype and x.dtype.char in "fd" and x.shape == g.shape == out.shape):
        return None
    gx = np.zeros(x.shape, x.dtype)
    kernels.module("elementwise").unary(code, x.reshape(-1), out.reshape(-1), np.ascontiguousarray(g).reshape(-1),
                                        gx.reshape(-1), c, c2)
    return (gx,)


def _trace(fn, args, kwargs):
    """Run fn on a private tape; its _Program, or why it cannot be replayed (a string)."""
    targs = []
    private = _TraceTape()
    for a in args:
        if isinstance(a, Tensor):
            t = _new(a._data)
            private.arg_ids.add(id(t))
            if a._data.dtype.kind == "f" and a._data.dtype.itemsize >= 4:
                t.requires_grad = True
                private.arg_leaves[private.slot(t)] = (sum(isinstance(b, Tensor) for b in targs), a._requires_grad)
            a = t
        targs.append(a)
    local, breaks = tape_mod._local, []  # what would make it unreplayable, as it happens (tape.untraceable)
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
    private.restore_generators()  # the replay that follows (or the eager call) draws what the trace drew
    if breaks:
        random.default_generator.set_state(rng)  # the eager call that follows draws what it would have
        return breaks[0]
    single = isinstance(out, Tensor)
    outs = (out,) if single else out
    if out is None and private.effects:  # (a training step that returns nothing)
        outs = ()
    if not isinstance(outs, (tuple, list)) or not (outs or out is None) or not all(
            isinstance(o, Tensor) and o._tape is private and private.holds(o._slot, o._data) and (
                private.op[o._slot] > OP_CONST or o._slot in private.aliases) for o in outs):
        return "it must return a tensor computed from its inputs, or a tuple or list of them"
    try:
        wants = [a._requires_grad for a in args if isinstance(a, Tensor)]
        return _Program(private, targs, wants, [o._slot for o in outs],
                        None if single else type(None) if out is None else type(outs), _sources(fn)[0])
    except Unreplayable as e:
        return str(e)
    finally:
        private.restore_generators()  # (the check's replay drew them once more)


class _Program:
    """A traced function: its private tape, which rows its arguments and parameters are bound to, and how
    each op row is recomputed: runs of elementwise rows in one compiled call of NumPy's own loops
    (kernels/forward.py), other rows by one NumPy call each. Raises Unreplayable, saying why, when it cannot
    be replayed."""

    def __init__(self, private, targs, wants, out_rows, container, sources):
        self.tape, self.out_rows, self.container = private, out_rows, container
        self.generation = 0
        self._plans = {}  # (roots, targets) -> replay's plan: the private tape never changes shape
        self.tensor_args = [i for i, a in enumerate(targs) if isinstance(a, Tensor)]
        self.B = [targs[i]._data for i in self.tensor_args]  # the bound arrays: tensor arguments, then parameters
        row_arg = {targs[i]._slot: j for j, i in enumerate(self.tensor_args) if targs[i]._tape is private}
        self.bind, self.params, held, external, fixed = [], [], [], [], set()
        for r in range(private.n):
            o = int(private.op[r])
            if private.flags[r] & F_STOP:  # (in-place ops are caught where they run)
                raise Unreplayable("a hook or retain_grad")
            if o > OP_CONST:
                args = private.row_args(r)
                if fixed and args and all(a in fixed for a in args) and r not in private.remaps:
                    fixed.add(r)  # computed from constants made in the trace only: its recorded value, always
                continue
            j = row_arg.get(r)
            if j is None and r in private.aliases:  # (a step gives it its row's value)
                continue
            if j is None and r in private.held:
                held.append((r, private.held[r]))
                continue
            if j is None and o == OP_CONST:  # a detached value registered before the row it detaches
                v = private.values[r]
                same = [k for k in np.flatnonzero(private.obj[: private.n] == id(v)).tolist()
                        if k != r and private.values[k] is v and (private.op[k] != OP_CONST or k in row_arg)]
                if same:
                    private.aliases[r] = same[0]
                    continue
            if j is None:
                ref = private.aux[r] if o == OP_LEAF else private.consts.get(r)
                t = ref() if ref is not None else None
                v = private.values[r]
                if t is None and private.made.get(id(v)) is v:
                    fixed.add(r)  # made by a factory in the function, and dropped: nothing can change it
                    continue
                if t is not None and o == OP_LEAF:  # a parameter: a leaf that requires grad
                    j = len(self.B)
                    self.B.append(t._data)
                    self.params.append((weakref.ref(t), t._data.shape, t._data.dtype))
                elif t is not None:  # a tensor that needs no grad from outside: read afresh at each call
                    external.append((r, t))
                    continue
                else:
                    raise Unreplayable(f"it reads a tensor computed by an op that tapegrad.compile does not "
                                       f"record (one with no gradient, such as argmax or nonzero): "
                                       f"{v.dtype} of shape {tuple(v.shape)}")
            self.bind.append((r, j))
        self.inputs = len(self.B)  # the caller's row's inputs: tensor arguments and parameters; then the seeds
        self.held = [(t, t._data.shape, t._data.dtype) for _, t in held]
        for r, t in held:
            self.bind.append((r, len(self.B)))
            self.B.append(t._data)
        # where each is read from, when known (a closure cell, a global, a module's attribute): a new object
        # there is read as well; otherwise the same object, held by weakref
        self.external = []
        for r, t in external:
            name, get = sources.get(id(t), ("a tensor it reads", weakref.ref(t)))
            self.external.append((get, t._data.shape, t._data.dtype, name))
            self.bind.append((r, len(self.B)))
            self.B.append(t._data)
        self.fixed = fixed
        self.failure = None  # why the last run's guards failed
        self.preconditions = private.preconditions
        if private.step_at is not None:  # the update runs after every row: none after it may read a parameter
            params = {r for r, j in self.bind if len(self.tensor_args) <= j < self.inputs}
            for r in range(private.step_at, private.n):
                if private.op[r] > OP_CONST and not params.isdisjoint(private.row_args(r)):
                    raise Unreplayable("it reads a parameter after optimizer.step() (a replay runs the update "
                                       "after all of its rows)")
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
        recorded = list(private.values)
        # NumPy's loops called directly must give what the ufunc call gave; where they do not (a NumPy whose
        # ufuncs pick another loop), every row falls back to its NumPy call
        for loops in (True, False):
            self.steps = self._steps(recorded, loops)
            private.restore_generators()  # (a draw gives what it gave when traced)
            try:
                self._forward(self.B)
                wrong = _differs(private, recorded)
            except _GuardFailed as failed:  # (the trace's own arguments do not take its branches again)
                wrong = f"its replay on the traced arguments does not repeat the trace: {failed}"
            if wrong is None:
                self.out_copy = _copied(private, self.in_place | self.fixed, out_rows, self.out_grad)
                self.effects = self._effects(private, set(out_rows))
                return
            private.values[:] = recorded
        raise Unreplayable(wrong)

    def _effects(self, tape, out_rows):
        """The training step's effects, each a function of (the call's arguments, the values): a .grad accumulated
        from a gradient row's value (copied when a later call writes into it, or a rule or an output reads it), or
        a call (zero_grad, clip_grad_norm_, optimizer.step)."""
        effects = []
        for e in tape.effects:
            if e[0] == "call":
                _, fn, args, kwargs = e
                effects.append(lambda call_args, V, fn=fn, args=args, kwargs=kwargs: fn(*args, **kwargs))
                continue
            _, where, row = e
            src = tape.aliases.get(row, row)
            copy = _copied(tape, self.in_place | self.fixed, [src], [False])[0] or src in out_rows
            effects.append(lambda call_args, V, where=where, row=row, copy=copy:
                           _accumulate(call_args[where] if type(where) is int else where(), V[row], copy))
        return effects

    def _steps(self, recorded, loops):
        """The forward as a list of calls: one per run of elementwise rows (`loops`), one per other row."""
        tape, V, bound = self.tape, self.tape.values, set(self.bind_rows.tolist()) | self.fixed
        fwd = _loop_kernels() if loops else None
        plan, entries, consts = [], [], {np.float32: [], np.float64: []}
        self.table = None  # the forward table (kernels/forward.py), one row per elementwise row
        self.in_place = set()  # its rows: their values are written in place by every call
        guards = {}
        for row, check, what in tape.value_guards:  # each checked as soon as its rows are computed
            guards.setdefault(row, []).append(_guard_step(V, check, what))
        for r in range(tape.n):
            plan.extend(guards.get(r - 1, ()))
            if r in bound:
                continue
            for remap, rows in tape.remaps.get(r, ()):  # (its index map, from the index's values now)
                plan.append(lambda remap=remap, rows=rows: remap(*[V[k] for k in rows]))
            src = tape.aliases.get(r)
            if src is not None:  # (consecutive ones, a gradient's, are one step)
                if not plan or type(plan[-1]) is not _Aliases:
                    plan.append(_Aliases(V, tape.obj))
                plan[-1].rows.append((r, src))
                continue
            op = OPS[int(tape.op[r])]
            if r in tape.frozen_values and r not in tape.remaps:
                raise Unreplayable(f"{op.name} has no replay rule: " + (
                    op.unreplayable or "its context was computed from the values of a tensor (an index, a mask or "
                    "a target) that its front end does not recompute"))
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
            step = _forward_rule(op, V, r, tape)
            if isinstance(step, str):
                raise Unreplayable(f"{op.name} has no replay rule: {step}")
            plan.append(step)
        plan.extend(guards.get(tape.n - 1, ()))
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
        """Recompute on `args`; the outputs, recorded on the caller's tape, then the step's effects (_FAILED: a guard failed)."""
        inputs = [args[i] for i in self.tensor_args]
        arrays = [t._data for t in inputs]
        for k, (ref, shape, dtype) in enumerate(self.params):
            p = ref()
            if p is None or not p._requires_grad or p._data.shape != shape or p._data.dtype != dtype:
                self.failure = (f"parameter {k} was freed" if p is None else
                                f"parameter {k} changed: {_describe(p)}, traced {tuple(shape)} {dtype}")
                return _FAILED
            inputs.append(p)
            arrays.append(p._data)
        for t, shape, dtype in self.held:
            if t._data.shape != shape or t._data.dtype != dtype:
                self.failure = f"a gradient's seed changed: {_describe(t)}, traced {tuple(shape)} {dtype}"
                return _FAILED
            arrays.append(t._data)
        for check, what in self.preconditions:
            if not check():
                self.failure = what
                return _FAILED
        for get, shape, dtype, name in self.external:
            try:
                t = get()
            except (ValueError, KeyError, AttributeError):  # (an emptied cell, a deleted global)
                t = None
            if type(t) is not Tensor or t._requires_grad or t._data.shape != shape or t._data.dtype != dtype:
                self.failure = (f"{name} changed: {_describe(t)}, traced a tensor of {tuple(shape)} {dtype} that "
                                f"does not require grad")
                return _FAILED
            arrays.append(t._data)
        self.generation += 1  # (before: a run its guards stop has overwritten values an earlier call kept)
        states = self._generator_states()
        try:
            self._forward(arrays)
        except _GuardFailed as e:  # (the draws made before the guard are given back: the call that follows makes them)
            self._set_generator_states(states)
            self.failure = str(e)
            return _FAILED
        V, inputs = self.tape.values, tuple(inputs)
        outs = [_record(COMPILED, V[r].copy(), inputs, aux=_Call(self, k, arrays, states)) if grad else
                _new(V[r].copy() if copy else V[r]) for k, (r, grad, copy) in enumerate(zip(self.out_rows, self.out_grad,
                                                                                         self.out_copy))]
        if self.effects:
            call_args = [args[i] for i in self.tensor_args]
            for effect in self.effects:
                effect(call_args, V)
        return outs[0] if self.container is None else None if self.container is type(None) else self.container(outs)

    def backward(self, call, g, wanted):
        """The gradients of a call's inputs (arrays, or None where not wanted): the private tape replayed. (The
        caller's plan has checked that no input changed in place since the call: the row saves all.)"""
        if call.generation != self.generation:  # a later call has replaced the values: recompute this one's
            now = self._generator_states()  # (its draws again: the generators as they were at that call, then back)
            self._set_generator_states(call.states)
            try:
                self._forward(call.arrays)
            except _GuardFailed as e:
                raise RuntimeError(f"tapegrad.compile: a tensor the compiled function read was changed in place "
                                   f"before this backward, so that a branch it took differs now ({e})") from None
            finally:
                self._set_generator_states(now)
            self.generation = call.generation
        targets = [r for r, w in zip(self.input_rows, wanted) if w and r is not None]
        roots = [self.out_rows[call.index]]
        got = iter(run_planned(self.tape, roots, [np.asarray(g)], targets, self._plans))
        return [next(got) if w and r is not None else None for r, w in zip(self.input_rows, wanted)]


    def _generator_states(self):
        """The state of each generator the trace's draws use (None: it draws nothing), before a call draws."""
        gens = self.tape.generators
        return [(gen, gen._snapshot()) for gen, _ in gens.values()] if gens else None

    @staticmethod
    def _set_generator_states(states):
        for gen, state in states or ():
            gen._restore(state)


class _GuardFailed(Exception):
    """A value guard of a replay does not hold (a comparison a branch read went the other way)."""


def _guard_step(V, check, what):
    def step():
        if not check(V):
            raise _GuardFailed(what)
    return step


def _describe(t):
    if isinstance(t, Tensor):
        return f"now {tuple(t._data.shape)} {t._data.dtype}{' requiring grad' if t._requires_grad else ''}"
    return f"now {type(t).__name__}"


def _accumulate(t, value, copy):
    """A replayed gradient into t.grad, as a backward accumulates it (in place when t has one)."""
    if t is not None:
        add_grad(t, _new(value.copy() if copy else value), False)


class _Call:
    """The context of one output of one call: what its backward needs (the generators' states before it drew: a
    backward after a later call recomputes its rows with its own draws)."""
    __slots__ = ("arrays", "generation", "index", "program", "states")

    def __init__(self, program, index, arrays, states=None):
        self.program, self.index, self.generation, self.arrays = program, index, program.generation, arrays
        self.states = states


def _requiring_grad(tape, bind, wants, out_rows):
    """Whether each output needs a gradient: it depends on a parameter or an argument that requires grad through
    rows other than a detached gradient's (a trace's own leaves require grad, so that all of it is recorded)."""
    grad = np.zeros(tape.n, bool)
    for r, j in bind:
        grad[r] = j < len(wants) and wants[j]
    for r in range(tape.n):
        if tape.op[r] > OP_CONST and tape.flags[r] & F_REQ:  # (an op on constants, a comparison: none flows)
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
def _forward_rule(op, V, r, tape):
    """A function that recomputes row r into V[r] by its op's declared forward (registry.py), or the reason it
    cannot (a row whose context came from values reads them through its remap, run before it: _steps)."""
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
        summed = _mean_values if name.startswith("mean") else _sum_values  # (the eager op's own: the same bits)
        if summed is _sum_values and V[x].dtype == dtype and not _whole_float32(V[x], axes):
            add = np.add.reduce  # (what _sum_values calls for it, without its tests each replay: a bias's gradient)

            def step():
                V[r] = add(V[x], axes, None, None, True).reshape(shape)
        else:
            def step():
                V[r] = summed(V[x], axes, True).reshape(shape).astype(dtype, copy=False)
    elif kind == registry.K_EXPAND:
        def step():
            V[r] = np.array(np.broadcast_to(V[x], shape), order="C")
    elif kind == registry.K_RESHAPE:
        def step():
            V[r] = V[x].reshape(shape)
    elif kind == registry.K_CAST:
        def step():
            V[r] = _dtype.cast(V[x], dtype)
    elif name == "scatter_flat":  # a gather's adjoint: zeros of the output's shape, g added at the index map
        size, zero = out.size, dtype.type(0)
        flat_map = ctx[0].reshape(-1)
        unique = id(ctx[0]) not in tape.remapped and np.unique(flat_map).size == flat_map.size

        def step():
            v = np.zeros(size, dtype)
            if unique:  # (as np.add.at into zeros: 0 + g, which makes -0.0 0.0)
                v[flat_map] = V[x].reshape(-1) + zero
            else:
                np.add.at(v, flat_map, V[x].reshape(-1))
            V[r] = v.reshape(shape)
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
