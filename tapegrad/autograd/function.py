"""torch.autograd.Function: an op written by the user, forward and backward, as one tape row.

`MyFn.apply(...)` runs `forward` under no_grad and records ONE row of the registry's "function" op
(K_PYTHON) whose inputs are the tensor arguments; the row's vjp calls the user's `backward`. The row's
context is the ctx object, which is also its grad_fn (a `MyFnBackward` instance, as in torch). The
backward runs with grad mode on under create_graph, so a backward written in tapegrad ops is itself
recorded and differentiable again.

A row holds one value, so a Function with several differentiable outputs records its first one on the
"function" row and each further output on a "function_output" row that reads it: those rows hand their
gradient to the ctx, and the user's backward is called once, at the "function" row, with all of them.

While tapegrad.compile traces (as torch.compile traces through a Function), the forward runs with grad mode on, so
that its ops are recorded on the trace's tape and each replay recomputes them from that call's inputs; those rows
then carry no gradient (as under no_grad), and each output's row is an alias of the row of its value
(tracing.py's `_TraceTape`: requires_grad_now, no_gradient, source_row, refresh). The backward is the user's:
recorded as ops when the traced function takes a gradient, or run in Python on a call's values by a plain
backward of that call.
"""
import inspect
import threading
import warnings
import weakref

import numpy as np

from .. import registry, saved_tensors
from ..tensor import _new, Tensor, tensor_type_name, wrap
from .graph import FUNCTION_MODULE, Node
from ..grad_mode import is_grad_enabled, no_grad, _state as _grad_state
from ..ops._common import _record
from ..replay import current_pass, FREED_MESSAGE
from .. import _dtype
from .. import tape as tape_mod
from .._warnings import user_stacklevel

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable", "InplaceFunction"]

_local = threading.local()


# -- ctx -------------------------------------------------------------------------------------------------------
class FunctionCtx:
    """What `forward` / `setup_context` may call on ctx (torch's FunctionCtx)."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        self.dirty_tensors = args

    def mark_shared_storage(self, *pairs):
        pass  # deprecated in torch: storage sharing is tracked automatically

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """A Function's ctx once applied: its backward node, named `<Function name>Backward` (torch's class).

    It is the grad_fn of the Function's outputs, and the context of its tape rows.
    """
    _forward_cls = None
    _repr_module = FUNCTION_MODULE  # <torch.autograd.function.MyFnBackward object at 0x...>
    grad_fn_name = "BackwardCFunction"
    materialize_grads = True
    needs_input_grad = ()
    to_save = ()
    dirty_tensors = ()
    non_differentiable = ()
    _saved = None
    _traced = False  # recorded by tapegrad.compile's trace: its tape's values are each replay's

    def __init__(self):
        pass  # Node's fields are set when the row is recorded

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def _alive(self):
        tape = getattr(self, "_tape", None)
        return tape is not None and tape.holds(self._row, self._value())

    def name(self):
        return type(self).__name__

    def __getattr__(self, name):  # (not Node's saved-tensor names: a ctx has its own attributes only)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def next_functions(self):
        return Node.next_functions.fget(self) if self._alive() else ()

    @property
    def saved_tensors(self):
        if self.__dict__.get("_in_jvp"):  # (jvp reads what forward gave save_for_forward)
            return tuple(self.__dict__.get("saved_for_forward", ()))
        saved = self._saved
        if saved is None:  # inside forward, before the row exists
            return tuple(self.to_save)
        tape = getattr(self, "_tape", None)
        if tape is not None and not self._traced and not tape.holds(self._row, self._value()):  # (_alive, inlined)
            raise RuntimeError(FREED_MESSAGE)
        tensors = []
        for entry in saved:
            tensors.append(_unpack(self, entry))
        return tuple(tensors)

    saved_variables = saved_tensors

    def apply(self, *grads):
        return _user_backward(self._forward_cls)(self, *grads)

    # -- the rows' vjps ------------------------------------------------------------------------------------
    def _stash(self, row, g):
        """A further output's gradient, kept for the one backward call at the Function's row."""
        token = current_pass()
        if self.__dict__.get("_pending_token") is not token:
            self._pending_token, self._pending = token, {}
        j = self._output_of_row[row]
        self._pending[j] = self._pending[j] + g if j in self._pending else g

    def _backward(self, g):
        output_meta = self._output_meta
        grads = [None] * len(output_meta)
        grads[self._primary] = g
        token = self.__dict__.get("_pending_token")
        if token is not None:  # (a further output's row stashed a gradient, in this backward or an earlier one)
            if token is current_pass():
                for j, gj in self._pending.items():
                    grads[j] = gj
            self._pending_token = self._pending = None
        if (g is None or len(grads) > 1) and self.materialize_grads:  # (else no gradient is None)
            grads = [_zeros(meta) if gj is None and meta is not None else gj for gj, meta in zip(grads, output_meta)]
        if self._traced and self._tape is not tape_mod._local.tape:  # (a plain backward of a compiled call, not
            self._tape.refresh(_ctx_tensors(self))                     # its trace: the values of that call)
        if FORWARD_MODE.depth and self._forward_cls.jvp is not Function.jvp:
            return self._jvp_as_vjp(grads)
        result = _user_backward(self._forward_cls)(self, *grads)
        return self._check_grads(result)

    def _jvp_as_vjp(self, grads):
        """Forward mode (forward_ad's double-vjp trick) through a Function with a jvp: its vjp is recorded as a map
        of the output gradients whose own vjp is the user's jvp, so the tangent the trick gives is jvp's, as torch's
        forward AD calls it (its backward, if any, is not used). The map's values are zeros: the trick's output
        gradients are linear in zeros."""
        grads = [_zeros(meta) if gj is None and meta is not None else gj for gj, meta in zip(grads, self._output_meta)]
        mapped = _JvpAsVjp.apply(self, *grads)
        mapped = mapped if isinstance(mapped, tuple) else (mapped,)
        it = iter(mapped)
        return [next(it) if meta[2] else None for meta in self._input_meta if meta is not None]

    def _check_grads(self, result):
        """torch's checks on what backward returned; one gradient per tensor input (the row's args)."""
        input_meta = self._input_meta
        if type(result) is Tensor and len(input_meta) == 1:  # the common case, which every check below passes
            meta = input_meta[0]
            if meta is not None and meta[2] and result._data.shape == meta[0] and result._data.dtype == meta[1]:
                return [result]
        name = type(self).__name__
        result = result if isinstance(result, tuple) else (result,)
        n = len(input_meta)
        if len(result) != n and not (len(result) > n and all(r is None for r in result[n:])):
            raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected {n}, got "
                               f"{len(result)})")
        out = []
        for i, (r, meta) in enumerate(zip(result, self._input_meta)):
            if meta is None:
                if r is not None:
                    raise RuntimeError(f"function {name} returned a gradient different than None at position "
                                       f"{i + 1}, but the corresponding forward input was not a Variable")
                continue
            shape, dtype, requires_grad = meta
            if r is None or not requires_grad:
                out.append(None)
                continue
            if not isinstance(r, Tensor):
                raise TypeError(f"expected Variable or None (got {type(r).__name__})")
            if r._data.shape != shape:  # (a tuple: r.shape makes a Size)
                try:
                    ok = np.broadcast_shapes(shape, r.shape) == tuple(r.shape)
                except ValueError:
                    ok = False
                if not ok:
                    raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got "
                                       f"{list(r.shape)} but expected shape compatible with {list(shape)}")
            if r._data.dtype != dtype:
                r = r.to(r.dtype if not _dtype.is_float(dtype) else _torch_dtype(dtype))
            out.append(r)
        return out


class FunctionMeta(type):
    """Gives each Function subclass its backward class, `<name>Backward`, as torch's metaclass does."""

    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "grad_fn_name": name + "Backward", "__module__": __name__})


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class for user-defined differentiable operations (torch.autograd.Function)."""

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, "
                      f"so you should invoke them on the class itself. Instantiating an autograd function will "
                      f"raise an error in a future version of PyTorch.", DeprecationWarning,
                      stacklevel=user_stacklevel())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        setup = cls.setup_context is not Function.setup_context
        if setup:
            bound = _signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        ctx = cls._backward_cls()
        tensors, needs = [], []  # (one loop: cheaper than a comprehension for each, for the usual one or two args)
        for a in args:
            if isinstance(a, Tensor):
                tensors.append(a)
                needs.append(a._requires_grad)
            else:
                needs.append(False)
        tape = tape_mod._local.tape if tape_mod._local.tracing is not None and is_grad_enabled() else None
        if tape is not None:  # tapegrad.compile traces through it (_traced_forward)
            output = _traced_forward(cls, ctx, setup, tape, args, kwargs)
            recording = any(ctx.needs_input_grad) and not tape.in_function_forward
        else:
            ctx.needs_input_grad = needs = tuple(needs)
            recording = _grad_state.enabled and any(needs)
            prev, _grad_state.enabled = _grad_state.enabled, False  # no_grad(), without its context manager's calls
            try:
                output = cls.forward(*args, **kwargs) if setup else cls.forward(ctx, *args, **kwargs)
                if setup:
                    cls.setup_context(ctx, args, output)
            finally:
                _grad_state.enabled = prev
        if type(output) is Tensor and tape is None and not ctx.dirty_tensors and not ctx.non_differentiable:
            return _finish_one(ctx, args, tensors, output, recording)
        is_tuple = isinstance(output, tuple)
        outputs = _finish(ctx, args, tensors, output if is_tuple else (output,), recording, tape)
        return outputs if is_tuple else outputs[0]


_signatures = weakref.WeakKeyDictionary()  # forward -> its inspect.Signature (inspect takes ~10 us a call)


def _signature(forward):
    try:
        signature = _signatures.get(forward)
    except TypeError:  # (a forward that is not hashable or weakly referable: not cached)
        return inspect.signature(forward)
    if signature is None:
        signature = inspect.signature(forward)
        try:
            _signatures[forward] = signature
        except TypeError:
            pass
    return signature


def _traced_forward(cls, ctx, setup, tape, args, kwargs):
    """forward while tapegrad.compile traces (as torch.compile traces through a Function): run with grad mode on, so
    that each of its ops is recorded and a replay recomputes it from that call's inputs, then its rows made to carry
    no gradient (as no_grad would): the gradient is the user's backward, at the Function's row (_finish)."""
    # which inputs require grad in the calls this trace stands for (the signature fixes it: every float argument
    # of a trace is a leaf that requires grad, whether the caller's tensor does or not)
    nested = tape.in_function_forward  # (a Function inside a forward: its eager forward runs under no_grad)
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and not nested and tape.requires_grad_now(a) for a in args)
    first = tape.n
    tape.in_function_forward += 1
    try:
        output = cls.forward(*args, **kwargs) if setup else cls.forward(ctx, *args, **kwargs)
        if setup:
            cls.setup_context(ctx, args, output)
    finally:
        tape.in_function_forward -= 1
    if ctx.dirty_tensors:
        tape_mod.untraceable(f"{cls.__name__}'s forward marks an input dirty (mark_dirty: it writes into it)")
    tape.no_gradient(first, _ctx_tensors(ctx, output if isinstance(output, tuple) else (output,)))
    tape.pin_kept(vars(ctx).values())
    for t in _ctx_tensors(ctx):
        if not t._requires_grad and not tape.kept_value_replays(t):
            tape_mod.untraceable(f"{cls.__name__}'s ctx keeps a tensor that no recorded op computed or read (one "
                                 f"computed by an op with no gradient such as unique, or one from outside that its "
                                 f"forward does not read): its value would be frozen")
    return output


def _ctx_tensors(ctx, more=()):
    """The tensors a ctx holds (saved, or as attributes, also in a list, tuple or dict), and `more`."""
    found = [t for t in more if isinstance(t, Tensor)]
    saved = ctx.to_save if ctx._saved is None else [e[1] for e in ctx._saved if e is not None]
    for v in (*saved, *vars(ctx).values()):
        if isinstance(v, Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple, dict)):
            found.extend(x for x in (v.values() if isinstance(v, dict) else v) if isinstance(x, Tensor))
    return found


class _JvpAsVjp(Function):
    """The vjp BackwardCFunction._jvp_as_vjp records: zeros for each input of `fn` that requires grad, from the output
    gradients; differentiated (the trick's second backward), it calls fn's jvp with the inputs' tangents."""

    @staticmethod
    def forward(ctx, fn, *grads):
        ctx.fn = fn
        return tuple(_zeros(meta[:2]) for meta in fn._input_meta if meta is not None and meta[2])

    @staticmethod
    def backward(ctx, *tangents):
        fn = ctx.fn
        it = iter(tangents)
        inputs = [None if meta is None else next(it) if meta[2] else _zeros(meta[:2]) for meta in fn._input_meta]
        fn._in_jvp = True
        try:
            out = fn._forward_cls.jvp(fn, *inputs)
        finally:
            fn._in_jvp = False
        return (None, *(out if isinstance(out, tuple) else (out,)))


class _ForwardMode(threading.local):
    depth = 0  # > 0 while forward_ad's first backward (the double-vjp trick's) runs: Functions use their jvp


FORWARD_MODE = _ForwardMode()


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


def _user_backward(cls):
    backward, vjp = cls.backward, cls.vjp
    if backward is not Function.backward and vjp is not Function.vjp and backward is not vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should "
                           "only implement one of them.")
    return vjp if vjp is not Function.vjp else backward


def _torch_dtype(np_dtype):
    return _dtype.from_numpy_dtype(np_dtype)


def _zeros(meta):
    shape, dtype = meta
    return tape_mod.made_in_trace(_new(np.zeros(shape, dtype)))  # (tapegrad.compile: a constant of the trace)


# -- recording -------------------------------------------------------------------------------------------------
def _finish(ctx, args, tensors, outputs, recording, traced=None):
    """The outputs as returned by apply: dirty inputs rebased, aliases of inputs made new tensors, and the
    differentiable ones recorded (one row, plus one per further differentiable output). traced: the tape of
    tapegrad.compile's trace, where each output's row stands for the row of the value its forward computed."""
    dirty = {id(t) for t in ctx.dirty_tensors} if ctx.dirty_tensors else ()
    non_diff = {id(t) for t in ctx.non_differentiable} if ctx.non_differentiable else ()
    inputs = {id(a) for a in tensors}
    for t in ctx.dirty_tensors:
        if t._requires_grad and t._is_leaf and recording:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        t._bump_version()
    results, meta, recorded = [], [], {}
    for o in outputs:
        if not isinstance(o, Tensor):
            results.append(o)
            meta.append(None)
            continue
        original = o
        if recording and id(o) in inputs and id(o) not in dirty:
            o = _new(o._data)  # an input returned as is: a new tensor (torch returns a view)
        if not o._data.flags.c_contiguous or not o._data.dtype.isnative:
            o._data = np.ascontiguousarray(o._data, o._data.dtype.newbyteorder("="))
        results.append(o)
        meta.append((o._data.shape, o._data.dtype))
        if recording and _dtype.is_float(o._data.dtype) and id(original) not in non_diff:
            recorded[len(results) - 1] = (o, original)
    if not recorded:
        return tuple(results)
    tape = traced or tape_mod.current()
    primary = min(recorded)
    first = recorded[primary][0]
    # (traced: the row of each output's value, which a replay recomputes; the Function's rows take it as theirs)
    sources = {j: tape.source_row(original, o) for j, (o, original) in recorded.items()} if traced else None
    row = tape.record(_FUNCTION.code, first._data, tensors, aux=ctx)
    ctx._tape, ctx._row, ctx._value = tape, row, weakref.ref(first._data)
    ctx._primary, ctx._output_meta, ctx._output_of_row = primary, meta, {}
    rows = {}
    for j, (o, original) in sorted(recorded.items()):
        if j != primary:
            r = tape.record(_OUTPUT.code, o._data, (first,), aux=ctx)
            ctx._output_of_row[r] = j
        else:
            r = row
        if traced:
            tape.aliases[r] = sources[j]
        rows[id(o)] = (r, o._data)
        if original is not o and id(original) not in inputs:
            rows[id(original)] = rows[id(o)]
        _attach(o, tape, r, _FUNCTION.code if j == primary else _OUTPUT.code, ctx)
        if o._vc is not None:
            tape.set_cell(r, o._vc, current=True)
    _keep_inputs(ctx, args, rows, tape, traced)
    return tuple(results)


def _finish_one(ctx, args, tensors, o, recording):
    """_finish for the usual Function (eager, one Tensor output, no mark_dirty or mark_non_differentiable): the same
    steps for that case, without the bookkeeping of several outputs. Returns the output."""
    if recording:
        for a in tensors:
            if a is o:
                o = _new(o._data)  # an input returned as is: a new tensor (torch returns a view)
                break
    data = o._data
    if not data.flags.c_contiguous or not data.dtype.isnative:
        data = o._data = np.ascontiguousarray(data, data.dtype.newbyteorder("="))
    if not (recording and _dtype.is_float(data.dtype)):
        return o
    tape = tape_mod.current()
    row = tape.record(_FUNCTION.code, data, tensors, aux=ctx)
    ctx._tape, ctx._row, ctx._value = tape, row, weakref.ref(data)
    ctx._primary, ctx._output_meta, ctx._output_of_row = 0, [(data.shape, data.dtype)], {}
    _attach(o, tape, row, _FUNCTION.code, ctx)
    if o._vc is not None:
        tape.set_cell(row, o._vc, current=True)
    rows = {id(o): (row, data)}  # (an input returned as is stays the input: saved as one)
    _keep_inputs(ctx, args, rows, tape, None)
    return o


def _keep_inputs(ctx, args, rows, tape, traced):
    """The last of _finish: the inputs' metadata (what backward's results are checked against) and the saved
    tensors packed. rows: each output's id -> (row, value)."""
    input_meta = []  # (loops, not comprehensions: cheaper for a call's few arguments)
    for a, needs in zip(args, ctx.needs_input_grad):
        input_meta.append((a._data.shape, a._data.dtype, needs) if isinstance(a, Tensor) else None)
    ctx._input_meta = tuple(input_meta)
    hooks = saved_tensors.current_hooks() if saved_tensors.OPEN else None
    if traced:  # a replay recomputes every row: what backward reads is the tensor as it is then (_TraceTape.refresh)
        ctx._traced = True
        ctx._saved = tuple(None if t is None else ("traced", t) for t in ctx.to_save)
    elif hooks is not None:  # saved_tensors_hooks
        pack_hook, unpack_hook = hooks
        ctx._saved = tuple(None if t is None else ("hooked", saved_tensors.call_pack(pack_hook, t), unpack_hook)
                           for t in ctx.to_save)
    else:
        saved = []
        for t in ctx.to_save:
            saved.append(_pack(t, rows, tape))
        ctx._saved = tuple(saved)
    ctx.to_save = ()  # the packed form holds outputs by row, so that a forward nobody uses can be swept


def _attach(t, tape, row, op, ctx):
    t._tape, t._slot, t._requires_grad, t._is_leaf, t._op, t._grad_fn = tape, row, True, False, op, ctx


def _pack(t, rows, tape):
    if t is None:
        return None
    where = rows.get(id(t))
    if where is not None:  # an output: kept by row, so the ctx does not hold the row's own value alive
        row, value = where
        return ("row", row, weakref.ref(value), _cell_version(tape, row))
    return ("tensor", t, t._version)


def _cell_version(tape, row):
    import ctypes
    cell = int(tape.vaddr[row])
    return ctypes.c_int64.from_address(cell).value if cell else 0


def _unpack(ctx, entry):
    if entry is None:
        return None
    kind = entry[0]
    if kind == "tensor":  # (the usual entry: an input, or a tensor the forward made and did not return)
        _, t, expected = entry
        current = t._version
        if current != expected:  # (the producer's name only for the message: a grad_fn costs 2 us to make)
            _raise_modified(t, current, expected, None if t.grad_fn is None else type(t.grad_fn).__name__)
        return t
    if kind == "traced":  # (the caller's row checks versions, on the real tensors)
        return entry[1]
    if kind == "hooked":
        return saved_tensors.checked_unpack(entry[2], entry[1])
    _, row, ref, expected = entry  # "row"
    tape = ctx._tape
    if row >= tape.n or tape.values[row] is not ref():
        raise RuntimeError(FREED_MESSAGE)
    t = wrap(tape, row)
    current = _cell_version(tape, row)
    if current != expected:  # (torch names the Function and the output, whatever wrote it since)
        _raise_modified(t, current, expected, type(ctx).__name__, ctx._output_of_row.get(row, ctx._primary))
    return t


def _raise_modified(t, current, expected, producer, output_nr=0):
    import re
    what = f"[{tensor_type_name(t._data)} {list(t._data.shape)}]"
    if producer is not None:
        what += f", which is output {output_nr} of " + re.sub(r"Backward\d*$", "", producer) + ","
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"{what} is at version {current}; expected version {expected} instead. Hint: enable anomaly detection "
        f"to find the operation that failed to compute its gradient, with "
        f"torch.autograd.set_detect_anomaly(True, check_nan=False).")


# -- the registry entries --------------------------------------------------------------------------------------
def _vjp_function(ctx, g, inputs, out):
    """The Function's own backward(ctx, *grads), called once with every output's gradient."""
    return ctx._backward(g)


def _arrays_function(ctx, g, inputs, out, wanted):
    """_vjp_function as a plain backward's array rule: the same call under no_grad, without the Tensors of the row's
    inputs and value that it does not read (about 2 us a call). None (then _vjp_function runs) for a Function
    tapegrad.compile recorded, or while it traces: there the rule must not stand for the backward's ops."""
    if ctx._traced or tape_mod._local.tracing is not None:
        return None
    prev, _grad_state.enabled = _grad_state.enabled, False  # no_grad(), without its context manager's calls
    try:
        return ctx._backward(_new(g))
    finally:
        _grad_state.enabled = prev


def _vjp_output(ctx, g, inputs, out):
    """Hands this output's gradient to the Function's row (zeros flow on, so that row runs)."""
    ctx._stash(out._slot, g)
    first, = inputs
    # the Function's row must run (tapegrad.compile: a constant of the trace)
    return (tape_mod.made_in_trace(_new(np.zeros(first._data.shape, first._data.dtype))),)


def _vjp_delayed_error(ctx, g, inputs, out):
    """Raises: a @once_differentiable backward is not differentiable."""
    raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


if "function" not in registry.BY_NAME:
    # (never reached by a trace: tapegrad.compile records the forward's ops and makes these rows aliases of them)
    _PYTHON = "its forward is the Function's own Python code"
    registry.python("function", "BackwardCFunction", None, _vjp_function,
                    doc="a custom autograd.Function (its grad_fn is named by the Function)", unreplayable=_PYTHON,
                    array_vjp=_arrays_function, holds_grad=True)  # (the user's backward may keep its grad_output)
    registry.python("function_output", "BackwardCFunction", None, _vjp_output,
                    doc="a further output of a custom autograd.Function", unreplayable=_PYTHON,
                    holds_grad=True)  # (its gradient waits, stashed, for the Function's row)
    registry.python("delayed_error", "DelayedError", None, _vjp_delayed_error,
                    doc="the result of a @once_differentiable backward under create_graph",
                    unreplayable="it stands for a gradient that must not be differentiated")
_FUNCTION, _OUTPUT, _DELAYED = (registry.BY_NAME[n] for n in ("function", "function_output", "delayed_error"))


def once_differentiable(fn):
    """A backward that is not itself differentiable: run under no_grad; under create_graph its results
    raise when differentiated (torch's DelayedError)."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        tracing = tape_mod._local.tracing is not None and is_grad_enabled()
        if tracing and tape_mod._local.tape.create_graph:
            tape_mod.untraceable("a @once_differentiable backward under create_graph=True (its results must raise "
                                 "when differentiated)")
        if tracing:  # tapegrad.compile: recorded, so that a replay recomputes it; its results are detached
            return fn(ctx, *args)
        with no_grad():
            outputs = fn(ctx, *args)
        if not (is_grad_enabled() and any(isinstance(a, Tensor) and a._requires_grad for a in args)):
            return outputs
        is_tuple = isinstance(outputs, tuple)
        wrapped = tuple(_delayed_error(o) for o in (outputs if is_tuple else (outputs,)))
        return wrapped if is_tuple else wrapped[0]
    return wrapper


def _delayed_error(o):
    if not isinstance(o, Tensor) or not _dtype.is_float(o._data.dtype):
        return o
    source = _new(o._data, requires_grad=True)  # a stand-in leaf: differentiating further raises at this row
    return _record(_DELAYED, o._data, (source,))
