"""torch.autograd.profiler: a CPU profiler of tapegrad's ops (the legacy `profile` and `record_function`, which
`torch.profiler` builds on; the events they make are profiler_util.py's).

How ops are seen. Nothing on tapegrad's hot path changes: while a profiler records, `sys.setprofile` (this
thread's) runs a callback that looks each called Python function's code object up in a table of tapegrad's public
op functions (the `tapegrad.X` ops, `tapegrad.nn.functional`, `linalg`, `special`, the Tensor methods and
operators), built on the first profile; every other call costs one dict miss. A call found there opens an event,
its return (or an exception leaving it) closes it. Names are torch's `aten::` names derived from the op's torch
name (`mul` -> `aten::mul`, `x * y` -> `aten::mul`, `x.float()` -> `aten::to`, `linalg.norm` ->
`aten::linalg_norm`): the top-level op torch dispatches, not the aten ops it decomposes into (torch's
`aten::relu` has a child `aten::clamp_min`; tapegrad's has none). An op called inside another op of a different
name is its child (tapegrad's `add(x, y, alpha=2)` shows `aten::add` > `aten::mul`); one of the same name
(`Tensor.__add__` calling the add front-end) is folded into its caller. A backward is one event per call,
`autograd::backward` (Tensor.backward, autograd.backward) or `autograd::grad`, not torch's per-node
`autograd::engine::evaluate_function: XBackward0`: the replay is one compiled call; ops a backward runs in
Python (a custom Function's backward, create_graph's rules) are its children. A `tapegrad.compile`d function's
call is `Torch-Compiled Region`; its replays run no Python op, so it is one event (its first call, the trace, runs
the ops eagerly: their events are its children). Optimizers' `step` and `zero_grad` are torch's
`Optimizer.step#SGD.step` and `Optimizer.zero_grad#SGD.zero_grad`.

Memory (profile_memory=True): the bytes of the tensors an op returns, counted at its return (frees are not
seen, so no negative entries as in torch). FLOPs (with_flops=True): for mm, matmul, bmm, addmm, linear, from
the input shapes. Only the thread that started the profiler is profiled.
"""
import contextlib
import json
import os
import sys
import threading
import time
import types
import warnings
from collections import defaultdict
from time import perf_counter_ns

from ..tensor import Tensor
from .profiler_util import DeviceType, EventList, FunctionEvent, FunctionEventAvg, Interval  # noqa: F401
from .._warnings import user_stacklevel

__all__ = ["profile", "record_function", "emit_nvtx", "emit_itt", "EventList", "FunctionEvent",
           "FunctionEventAvg", "DeviceType", "kineto_available", "load_nvprof", "KinetoStepTracker"]


def kineto_available():
    """True, as in torch's CPU build: tapegrad's profiler stands in for Kineto (CPU events only)."""
    return True


# ---------------------------------------------------------------------------------------------------------------
# which calls are ops, and their torch names

# Tensor methods that are no op in torch's profiler (metadata, hooks, conversions out of tensors)
_NOT_OPS = frozenset({
    "backward", "data_ptr", "dim", "element_size", "get_device", "is_complex", "is_conj", "is_contiguous",
    "is_floating_point", "is_neg", "is_pinned", "is_shared", "is_signed", "ndimension", "nelement", "numel", "numpy",
    "register_hook", "register_post_accumulate_grad_hook", "requires_grad_", "retain_grad", "share_memory_", "size",
    "storage_offset", "stride", "tolist", "cuda", "pin_memory", "cpu", "new", "untyped_storage", "storage",
    "is_inference", "dim_order", "apply_", "map_", "has_names", "refine_names", "rename", "align_to",
})
# torch's name for a Tensor operator, or a method torch dispatches as another op
_RENAMED = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__rsub__": "rsub",
    "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div",
    "__rtruediv__": "div", "__itruediv__": "div_", "__floordiv__": "floor_divide", "__rfloordiv__": "floor_divide",
    "__ifloordiv__": "floor_divide_", "__mod__": "remainder", "__rmod__": "remainder", "__imod__": "remainder_",
    "__pow__": "pow", "__rpow__": "pow", "__ipow__": "pow_", "__matmul__": "matmul", "__rmatmul__": "matmul",
    "__neg__": "neg", "__abs__": "abs", "__invert__": "bitwise_not", "__and__": "bitwise_and",
    "__rand__": "bitwise_and", "__iand__": "bitwise_and_", "__or__": "bitwise_or", "__ror__": "bitwise_or",
    "__ior__": "bitwise_or_", "__xor__": "bitwise_xor", "__rxor__": "bitwise_xor", "__ixor__": "bitwise_xor_",
    "__lshift__": "__lshift__", "__rshift__": "__rshift__", "__ilshift__": "__ilshift__",
    "__irshift__": "__irshift__", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
    "__ge__": "ge", "__getitem__": "index", "__setitem__": "index_put_", "__bool__": "is_nonzero",
    "__float__": "item", "__int__": "item",
    "float": "to", "double": "to", "half": "to", "bfloat16": "to", "int": "to", "long": "to", "short": "to",
    "char": "to", "byte": "to", "bool": "to", "type": "to", "type_as": "to", "cross_entropy": "cross_entropy_loss",
    "true_divide": "div", "divide": "div", "multiply": "mul", "subtract": "sub", "divide_": "div_",
    "multiply_": "mul_", "subtract_": "sub_", "negative": "neg", "negative_": "neg_", "absolute": "abs",
    "absolute_": "abs_", "clip": "clamp", "clip_": "clamp_", "arccos": "acos", "arcsin": "asin", "arctan": "atan",
    "arctan2": "atan2", "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "arccos_": "acos_",
    "arcsin_": "asin_", "arctan_": "atan_", "arctan2_": "atan2_", "arccosh_": "acosh_", "arcsinh_": "asinh_",
    "arctanh_": "atanh_", "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
    "not_equal": "ne", "fix": "trunc", "fix_": "trunc_", "swapaxes": "transpose", "swapdims": "transpose",
    "moveaxis": "movedim", "concat": "cat", "concatenate": "cat", "getitem": "index",
}
# modules whose public functions are ops (the rest of `tapegrad.X`: seeds, modes, save, compile, ...)
_OP_MODULES = ("tapegrad.ops.", "tapegrad.creation", "tapegrad.nn.functional", "tapegrad.functional",
               "tapegrad.linalg", "tapegrad.special", "tapegrad.fft")
_TABLE = None
_CODES = []  # (the code objects _TABLE's keys are the ids of)


def _torch_name(name, prefix="aten::"):
    return prefix + _RENAMED.get(name, name)


def _functions(namespace):
    for key, value in sorted(vars(namespace).items()):
        if isinstance(value, types.FunctionType) and key != "__init__":
            yield key, value


def _ops_table():
    """{code object: name, or a function of the frame giving the name} for tapegrad's public op functions."""
    global _TABLE
    if _TABLE is not None:
        return _TABLE
    import tapegrad  # noqa: PLC0415  (the package's public ops, collected at the first profile)
    found = {}  # function -> name (the first namespace that lists it names it)

    def take(fn, name):
        if fn not in found:
            found[fn] = name

    top = [(k, f) for k, f in _functions(tapegrad)
           if not k.startswith("_") and (f.__module__ or "").startswith(_OP_MODULES)]
    names_of = defaultdict(list)
    for k, f in top:
        names_of[f].append(k)
    for f, keys in names_of.items():  # the function's own name when it is exported under it
        take(f, _torch_name(f.__name__ if f.__name__ in keys else keys[0]))
    take(Tensor.backward, "autograd::backward")
    names_of = defaultdict(list)  # a method's torch name is its Tensor name (`Tensor.add_`, made by a factory)
    for k, f in _functions(Tensor):
        if not (k.startswith("_") and k not in _RENAMED or k in _NOT_OPS):
            names_of[f].append(k)
    for f, keys in names_of.items():
        take(f, _torch_name(f.__name__ if f.__name__ in keys else keys[-1]))
    for mod, prefix in ((tapegrad.nn.functional, "aten::"), (tapegrad.functional, "aten::"),
                        (tapegrad.linalg, "aten::linalg_"), (tapegrad.special, "aten::special_"),
                        (getattr(tapegrad, "fft", None), "aten::fft_")):
        if mod is None:
            continue
        for k, f in _functions(mod):
            if not k.startswith("_") and (f.__module__ or "").startswith(_OP_MODULES):
                take(f, _torch_name(k, prefix))
    take(tapegrad.autograd.backward, "autograd::backward")
    take(tapegrad.autograd.grad, "autograd::grad")
    # keyed by the code object's id: code objects compare by value, and out='s generated wrappers of different
    # ops are equal (`def wrapper(input, *, out=None)`); _CODES keeps them alive, so no id is reused
    table = {}
    by_code = defaultdict(list)
    for fn, name in found.items():
        by_code[id(fn.__code__)].append((fn, name))
        _CODES.append(fn.__code__)
    for key, fns in by_code.items():
        code = fns[0][0].__code__
        table[key] = _by_closure(code, fns) if code.co_freevars else fns[0][1]
    compiled_call = type(tapegrad.compile(lambda: None)).__call__.__code__
    _CODES.append(compiled_call)
    table[id(compiled_call)] = "Torch-Compiled Region"
    _add_optimizers(tapegrad.optim, table)
    _TABLE = table
    return table


def _by_closure(code, fns):
    """A closure's code is shared by every function its factory made (`_make_binary`'s `fn`, methods.py's
    in-place `method`), public ops or not: told apart by the values of its free variables, read from the frame
    at the call (None: a function of that factory that is no public op)."""
    names = {}
    for fn, name in fns:
        names[_closure_key(fn.__closure__)] = name
    variables = code.co_freevars

    def name_of(frame):
        values = frame.f_locals
        return names.get(tuple(id(values.get(v)) for v in variables))
    return name_of


def _closure_key(closure):
    key = []
    for cell in closure:
        try:
            key.append(id(cell.cell_contents))
        except ValueError:  # (an empty cell)
            key.append(id(None))
    return tuple(key)


def _add_optimizers(optim, table):
    base = optim.Optimizer

    def classes(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from classes(sub)

    def named(kind):
        def name_of(frame):
            me = frame.f_locals.get("self")
            return None if me is None else f"Optimizer.{kind}#{type(me).__name__}.{kind}"
        return name_of

    for cls in [base, *classes(base)]:
        for kind in ("step", "zero_grad"):
            fn = vars(cls).get(kind)
            if isinstance(fn, types.FunctionType):
                _CODES.append(fn.__code__)
                table.setdefault(id(fn.__code__), named(kind))


def _shape_of(value):
    if isinstance(value, Tensor):
        return list(value._data.shape)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Tensor) for v in value):
        return [list(v._data.shape) for v in value]
    return []


def _input_shapes(frame):
    code = frame.f_code
    values = frame.f_locals
    n = code.co_argcount + code.co_kwonlyargcount
    names = code.co_varnames[:n]
    out = [_shape_of(values.get(name)) for name in names]
    if code.co_flags & 0x04:  # *args
        out += [_shape_of(v) for v in values.get(code.co_varnames[n], ())]
    return out


def _nbytes(value):
    if isinstance(value, Tensor):
        return value._data.nbytes
    if isinstance(value, tuple):
        return sum(v._data.nbytes for v in value if isinstance(v, Tensor))
    return 0


def _flops(name, shapes):
    """2 M N K for the matrix products, from the input shapes (torch's with_flops counts these and convolutions)."""
    try:
        if name in ("aten::mm", "aten::matmul", "aten::bmm") and len(shapes[0]) >= 2 and len(shapes[1]) >= 2:
            a, b = shapes[0], shapes[1]
            batch = 1
            for d in a[:-2]:
                batch *= d
            return 2 * batch * a[-2] * a[-1] * b[-1]
        if name == "aten::addmm":
            a, b = shapes[1], shapes[2]
            return 2 * a[0] * a[1] * b[1]
        if name == "aten::linear":
            x, w = shapes[0], shapes[1]
            rows = 1
            for d in x[:-1]:
                rows *= d
            return 2 * rows * w[-1] * w[0]
    except (IndexError, TypeError):
        pass
    return 0


def _user_stack(frame):
    """torch's with_stack entries, `file(line): function`, innermost first, without tapegrad's own frames."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = []
    f = frame.f_back
    while f is not None and len(out) < 64:
        path = f.f_code.co_filename
        if not path.startswith(here):
            out.append(f"{path}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


# ---------------------------------------------------------------------------------------------------------------
# the recorder

_state = threading.local()  # .sessions: the recording sessions of this thread, innermost last


def _sessions():
    sessions = getattr(_state, "sessions", None)
    if sessions is None:
        sessions = _state.sessions = []
    return sessions


class _Session:
    """Records the events of one thread between start() and stop(): op calls through sys.setprofile,
    record_function ranges directly."""

    def __init__(self, record_shapes, profile_memory, with_stack, with_flops):
        self.record_shapes = record_shapes or with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.events = []
        self.stack = []  # (frame or None, event, owns): the open events, innermost last
        self.thread = threading.get_ident()
        self.tid = threading.get_native_id()
        self.previous = None
        self.active = False
        # perf_counter_ns is the clock; this offset makes its times epoch microseconds for the trace
        self.offset_ns = time.time_ns() - perf_counter_ns()

    def _open(self, name, frame, start, category="cpu_op"):
        parent = self.stack[-1][1] if self.stack else None
        shapes = _input_shapes(frame) if (self.record_shapes and frame is not None) else []
        ev = FunctionEvent(len(self.events), name, self.tid, start, start, input_shapes=shapes,
                           stack=_user_stack(frame) if (self.with_stack and frame is not None) else [],
                           is_user_annotation=category == "user_annotation", category=category)
        if self.with_flops:
            ev.flops = _flops(name, shapes)
        if parent is not None:
            ev.cpu_parent = parent
            parent.cpu_children.append(ev)
        self.events.append(ev)
        return ev

    def hook(self, frame, event, arg):
        if not self.active:
            pass
        elif event == "call":
            entry = self.table.get(id(frame.f_code))
            if entry is not None:
                t0 = perf_counter_ns()
                name = entry if type(entry) is str else entry(frame)
                stack = self.stack
                if name is None:
                    pass
                elif stack and stack[-1][1].name == name and stack[-1][1].category == "cpu_op":
                    stack.append((frame, stack[-1][1], False))  # (the same op's inner front-end: folded into it)
                else:
                    ev = self._open(name, frame, t0)
                    stack.append((frame, ev, True))
                    ev._t0 = perf_counter_ns()  # (the time starts after the bookkeeping)
        elif event == "return":
            stack = self.stack
            if stack and stack[-1][0] is frame:
                t1 = perf_counter_ns()
                _, ev, owns = stack.pop()
                if owns:
                    ev._t1 = t1
                    if self.profile_memory:
                        ev.cpu_memory_usage = _nbytes(arg)
        if self.previous is not None:
            self.previous(frame, event, arg)

    def start(self):
        self.table = _ops_table()
        previous = sys.getprofile()
        if previous is not None and not callable(previous):
            raise RuntimeError("tapegrad's profiler records ops through sys.setprofile, and another profiler "
                               f"({type(previous).__name__}, such as cProfile) holds it in this thread")
        self.previous = previous  # (called after this hook: another profiler, or an enclosing tapegrad one)
        _sessions().append(self)
        self.active = True
        sys.setprofile(self.hook)

    def stop(self):
        if not self.active:
            return
        self.active = False
        _sessions().remove(self)
        if sys.getprofile() == self.hook:
            previous = self.previous  # (skipping enclosing profilers stopped while this one ran)
            while isinstance(getattr(previous, "__self__", None), _Session) and not previous.__self__.active:
                previous = previous.__self__.previous
            sys.setprofile(previous)
        # else a profiler started inside this one is still running: this hook stays in its chain, passing through
        t1 = perf_counter_ns()
        while self.stack:  # (ranges still open: closed now)
            _, ev, owns = self.stack.pop()
            if owns and not hasattr(ev, "_t1"):
                ev._t1 = t1
        for ev in self.events:
            ev.time_range = Interval((ev._t0 + self.offset_ns) / 1e3, (ev._t1 + self.offset_ns) / 1e3)

    def enter_range(self, name):
        now = perf_counter_ns()
        ev = self._open(name, None, now, category="user_annotation")
        self.stack.append((None, ev, True))
        ev._t0 = perf_counter_ns()
        return ev

    def exit_range(self, ev):
        t1 = perf_counter_ns()
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][1] is ev and self.stack[i][0] is None:
                del self.stack[i:]  # (op frames opened inside and not closed: closed with it)
                break
        for e in self.events[ev.id:]:
            if not hasattr(e, "_t1"):
                e._t1 = t1


class record_function(contextlib.ContextDecorator):
    """A labelled range in the profile (a context manager or a decorator); costs nothing while none records."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self._ranges = ()

    def __enter__(self):
        sessions = getattr(_state, "sessions", None)
        if sessions:
            self._ranges = [(s, s.enter_range(self.name)) for s in sessions]
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        for session, ev in self._ranges:
            if session.active:
                session.exit_range(ev)
        self._ranges = ()
        return False

    def _call_end_callbacks_on_future(self, fut):
        raise NotImplementedError("tapegrad's record_function has no futures (torch.distributed.rpc): "
                                  "_call_end_callbacks_on_future is not supported")


_DEVICES = ("cuda", "xpu", "mtia", "hpu")


class profile:
    """torch.autograd.profiler.profile: records tapegrad's CPU ops while the context is entered."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None, activity_filters=None):
        self.enabled = enabled
        if not self.enabled:
            return
        self.use_cuda = use_cuda
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` "
                          "instead.", FutureWarning, stacklevel=user_stacklevel())
            self.use_device = "cuda"
        else:
            self.use_device = use_device
        self._function_events = None
        self._old_function_events = None
        self.entered = False
        self.record_shapes = record_shapes or with_flops
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.experimental_config = experimental_config
        self.custom_trace_id_callback = custom_trace_id_callback
        self.post_processing_timeout_s = post_processing_timeout_s
        self.trace_id = ""
        self._session = None
        self.profiling_start_time_ns = self.profiling_end_time_ns = 0
        if not self.use_cpu and not use_kineto:
            raise AssertionError("Device-only events supported only with Kineto (use_kineto=True)")
        if self.use_device is not None:
            if self.use_device not in _DEVICES:
                warnings.warn(f"The {self.use_device} is not a valid device option.", stacklevel=user_stacklevel())
                self.use_device = None
            elif self.use_device in ("cuda", "xpu", "hpu"):  # tapegrad runs on the CPU only
                warnings.warn(f"{self.use_device.upper()} is not available, disabling {self.use_device.upper()} "
                              "profiling", stacklevel=user_stacklevel())
                self.use_cuda = False
                self.use_device = None
            else:
                raise AssertionError("Legacy MTIA profiling is not supported. Requires use_kineto=True on MTIA "
                                     "devices.")
        if not self.use_cpu:
            raise AssertionError("No activities specified for the profiler")
        if post_processing_timeout_s is not None and post_processing_timeout_s < 0:
            raise ValueError("post_processing_timeout_s must be non-negative")

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._prepare_trace()
        self._start_trace()
        return self

    def _prepare_trace(self):
        self.entered = True
        self.trace_id = (self.custom_trace_id_callback() if self.custom_trace_id_callback
                         else os.urandom(16).hex().upper())
        self._session = _Session(self.record_shapes, self.profile_memory, self.with_stack, self.with_flops)

    def _start_trace(self):
        self.entered = True
        self._session.start()
        self.profiling_start_time_ns = time.time_ns()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return None
        if self._function_events and self.acc_events:
            self._old_function_events = self._function_events
        self.profiling_end_time_ns = time.time_ns()
        if self._session is not None:
            self._session.stop()
        self._function_events = None
        if self.acc_events:
            self._ensure_function_events()
        return False

    def __repr__(self):
        if self._session is None or self._session.active:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self):
        if self._session is None or self._session.active:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events)

    def _ensure_function_events(self):
        if self._function_events is not None:
            return
        events = self._session.events if self._session is not None and not self._session.active else []
        self._function_events = EventList(events, use_device=self.use_device, profile_memory=self.profile_memory,
                                          with_flops=self.with_flops)
        if self._old_function_events and self.acc_events:
            self._function_events.extend(self._old_function_events)
            self._old_function_events = None

    @property
    def function_events(self):
        self._ensure_function_events()
        return self._function_events

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        self._ensure_function_events()
        return self._function_events.table(sort_by=sort_by, row_limit=row_limit,
                                           max_src_column_width=max_src_column_width,
                                           max_name_column_width=max_name_column_width,
                                           max_shapes_column_width=max_shapes_column_width, header=header,
                                           top_level_events_only=top_level_events_only)

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path, metadata=None, use_python_export=False):
        """Exports the collected trace in Chrome JSON format (chrome://tracing, Perfetto): Kineto's layout, a
        `traceEvents` list of complete ("X") events with name, cat, ph, ts, dur (microseconds), pid, tid, args."""
        self._ensure_function_events()
        events = []
        pid = os.getpid()
        for evt in self._function_events:
            args = {"External id": evt.id + 1}
            if evt.input_shapes and self.record_shapes:
                args["Input Dims"] = evt.input_shapes
            if evt.stack:
                args["Call stack"] = ";".join(evt.stack)
            events.append({"ph": "X", "cat": evt.category, "name": evt.trace_name, "pid": pid, "tid": evt.thread,
                           "ts": round(evt.time_range.start, 3), "dur": round(evt.time_range.elapsed_us(), 3),
                           "args": args})
        trace = {"schemaVersion": 1, "deviceProperties": [], "traceName": str(path), "displayTimeUnit": "ms",
                 "baseTimeNanoseconds": 0, "traceEvents": events}
        if metadata:
            trace.update(metadata)
        text = json.dumps(trace)
        if str(path).endswith(".gz"):
            import gzip  # noqa: PLC0415  (stdlib, only for .gz traces)
            with gzip.open(path, "wt") as f:
                f.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        self._ensure_function_events()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self._function_events.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._ensure_function_events()
        return self._function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    key_averages.__doc__ = EventList.key_averages.__doc__

    def total_average(self):
        self._ensure_function_events()
        return self._function_events.total_average()

    @property
    def self_cpu_time_total(self):
        """Returns total time spent on CPU: the sum of all self times across all the events."""
        self._ensure_function_events()
        return self._function_events.self_cpu_time_total

    def toggle_collection_dynamic(self, enabled, activities):
        raise NotImplementedError("tapegrad's profiler: toggle_collection_dynamic is not supported (start and "
                                  "stop the profiler instead)")


class _RangeEmitter:
    """A profiler that emits ranges for an external tool tapegrad does not have: entering it enabled raises."""
    message = None

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return None
        raise RuntimeError(self.message)

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False


class emit_nvtx(_RangeEmitter):
    """torch.autograd.profiler.emit_nvtx: NVTX ranges for nvprof, a CUDA feature tapegrad lacks."""
    message = ("torch.autograd.profiler.emit_nvtx: tapegrad has no CUDA, so no NVTX ranges; use "
               "torch.profiler.profile (CPU events)")


class emit_itt(_RangeEmitter):
    """torch.autograd.profiler.emit_itt: Intel ITT ranges for VTune, which tapegrad does not emit."""
    message = ("torch.autograd.profiler.emit_itt: tapegrad emits no Intel ITT ranges (VTune); use "
               "torch.profiler.profile (CPU events)")


def load_nvprof(path):
    raise RuntimeError("torch.autograd.profiler.load_nvprof: tapegrad has no CUDA, so no nvprof traces to load")


class KinetoStepTracker:
    """torch's step counters for Kineto's on-demand tracing (kept as counts; nothing reads them here)."""
    _step_dict = defaultdict(int)
    _current_step = 0

    @classmethod
    def init_step_count(cls, requester):
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester):
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester):
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        new_step = max(cls._step_dict.values())
        if new_step > cls._current_step:
            cls._current_step = new_step
        return cls._current_step

    @classmethod
    def current_step(cls):
        return cls._current_step

