"""grad_fn objects, made on demand from a tape row (the tape itself has no per-op Python objects), and
torch.autograd.graph's functions: saved-tensor hooks, gradient edges, multi-grad hooks."""
import functools
import threading
import weakref
from typing import NamedTuple

from .. import registry, saved_tensors
from ..accumulate import EDGE_COUNT, NO_EDGE_FIRST, SCALAR_OPERAND, NodeHooks, leaf_hooked, node_rows
from ..replay import FREED_MESSAGE
from ..tape import F_STOP, _local, untraceable
from ..tensor import Tensor, wrap

_classes = {}
_SCALAR_OPERAND, _NO_EDGE_FIRST = SCALAR_OPERAND, NO_EDGE_FIRST


FUNCTION_MODULE = "torch.autograd.function."


class RemovableHandle:
    """What grad_fn.register_hook / register_prehook return: remove() unregisters the hook (torch.utils.hooks'
    interface; tapegrad.utils imports autograd, so that class is not used here)."""
    _next_id = 0

    def __init__(self, hooks_dict, tape=None, hooks=None):
        self.hooks_dict = hooks_dict
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1
        self._tape, self._hooks = tape, hooks

    def remove(self):
        self.hooks_dict.pop(self.id, None)
        tape, hooks = self._tape, self._hooks
        if tape is not None and not hooks.active():  # its rows need not stop the replay any more
            table = tape.__dict__.get("node_hooks") or {}
            rows = [r for r, h in table.items() if h is hooks and r not in tape.watch]
            if rows:
                tape.unmark(rows, F_STOP)

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.remove()


def _add_hook(hooks, pre, fn, tape=None):
    untraceable("a hook on an autograd node")  # (a replay would not call it)
    handle = RemovableHandle(hooks.pre if pre else hooks.post, tape, hooks)
    handle.hooks_dict[handle.id] = fn
    return handle


class Node:
    """The backward function of one tape row, as torch shows it: name(), next_functions."""
    __slots__ = ("_tape", "_row", "_value", "__weakref__")

    def __init__(self, tape, row, value):
        self._tape, self._row, self._value = tape, row, value

    def _alive(self):
        tape = self._tape
        if tape.holds(self._row, self._value):
            return True
        self._row = tape.find(self._value)  # moved by Tape.compact, or -1: freed
        return self._row >= 0

    def name(self):
        return type(self).__name__

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> None or a tuple replacing grad_inputs, called once the node has
        computed the gradients of its inputs (one per next_functions edge, None where none flows), before they
        are accumulated. Returns a handle whose remove() unregisters it."""
        return self._register(False, fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) -> None or a tuple replacing grad_outputs, called before the node runs (after the
        hooks of its output tensors). Returns a handle whose remove() unregisters it."""
        return self._register(True, fn)

    def _register(self, pre, fn):
        found = self._node_hooks()
        if found is None:  # a freed node: torch keeps the hook, which no backward can call
            return _add_hook(NodeHooks(), pre, fn)
        hooks, rows = found
        handle = _add_hook(hooks, pre, fn, self._tape)
        self._tape.mark(rows, F_STOP)  # the replay returns to Python at its rows (replay._node_row)
        return handle

    def _node_hooks(self):
        """The node's NodeHooks, kept on the tape for each of its rows (one for every output of a multi-output
        node), with those rows; None for a freed node."""
        if not self._alive():
            return None
        tape = self._tape
        table = tape.__dict__.get("node_hooks")
        if table is None:
            table = tape.node_hooks = {}  # (a row-keyed table: moved by compaction, dropped with its rows)
        rows = node_rows(tape, self._row)
        hooks = next((table[r] for r in rows if r in table), None) or NodeHooks()
        for r in rows:
            table[r] = hooks
        return hooks, rows

    @property
    def metadata(self):
        """A dict of the node's own (the same dict each time), for user data."""
        found = self._node_hooks()
        if found is None:
            return {}
        hooks = found[0]
        if hooks.metadata is None:
            hooks.metadata = {}
        return hooks.metadata

    def __getattr__(self, name):
        """torch's saved tensors of the node: `_saved_self`, `_saved_other`, `_saved_result`, ... (the values its
        backward reads; under saved_tensors_hooks, unpacked), `_raw_saved_<name>` (a SavedTensor, for
        register_hooks), and pow's `_saved_exponent`."""
        raw = name.startswith("_raw_saved_")
        if not (raw or name.startswith("_saved_")):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        if not self._alive():
            raise RuntimeError(FREED_MESSAGE)
        tape, row, key = self._tape, self._row, name[len("_raw_saved_" if raw else "_saved_"):]
        if key == "exponent" and not raw and registry.OPS[tape.op[row]].name == "pow_ts":
            c = float(tape.fattr[row, 0])
            return int(c) if c.is_integer() else c
        j = saved_tensors.position(tape, row, key)
        if j is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return saved_tensors.SavedTensor(tape, row, j) if raw else saved_tensors.saved_value(tape, row, j, self)

    @property
    def next_functions(self):
        tape = self._tape
        out = []
        if not self._alive():  # freed by backward: torch's freed nodes keep their edges; ours are gone
            return ()
        args = tape.row_args(self._row)
        name = type(self).__name__
        if name in _NO_EDGE_FIRST:
            args = args[1:]
        for a in args:
            op = registry.OPS[tape.op[a]]
            if op.name == "leaf":
                ref = tape.aux.get(a)
                out.append((_accumulator(ref() if ref else None), 0))
            elif op.kind == registry.K_LEAF:
                out.append((None, 0))
            else:
                out.append((node_for(tape, a, tape.op[a], tape.value_at(a)), 0))
        if len(out) == 1 and name in _SCALAR_OPERAND:
            out.append((None, 0))
        out.extend([(None, 0)] * (EDGE_COUNT.get(name, 0) - len(out)))
        return tuple(out)

    # torch's repr is Python's default: the module of the class, then its name. Built-in nodes print no
    # module; the classes made for an autograd.Function (MyFnBackward, CompiledFunctionBackward) are made
    # in torch.autograd.function.
    _repr_module = ""

    def __repr__(self):
        return f"<{self._repr_module}{type(self).__name__} object at {hex(id(self))}>"

    def __eq__(self, other):
        return type(other) is type(self) and other._tape is self._tape and other._row == self._row

    def __hash__(self):
        return hash((id(self._tape), self._row))


class AccumulateGrad:
    __slots__ = ("variable", "__weakref__")

    def __init__(self, variable):
        self.variable = variable

    def name(self):
        return "torch::autograd::AccumulateGrad"

    next_functions = ()

    def register_hook(self, fn):
        """fn((), (grad,)) once the leaf's .grad has accumulated this backward's gradient (not under autograd.grad,
        which accumulates nothing); its result must be None or (). Returns a handle."""
        return _add_hook(self._hooks(), False, fn)

    def register_prehook(self, fn):
        """fn((grad,)) -> None or (new_grad,), before the gradient is accumulated into the leaf's .grad (not under
        autograd.grad). Returns a handle."""
        return _add_hook(self._hooks(), True, fn)

    @property
    def metadata(self):
        hooks = self._hooks()
        if hooks.metadata is None:
            hooks.metadata = {}
        return hooks.metadata

    def _hooks(self):
        """The hooks of the leaf's AccumulateGrad, kept on the leaf while it lives (torch keeps them on the node,
        which lives while the leaf's graphs or a reference do): each AccumulateGrad object of the leaf has them."""
        variable = self.variable
        if variable is None:
            return NodeHooks()
        hooks = variable.__dict__.get("_node_hooks")
        if hooks is None:
            hooks = variable.__dict__["_node_hooks"] = NodeHooks()
            leaf_hooked[0] += 1  # (the backward looks for leaves' node hooks while any leaf has some)
            weakref.finalize(variable, _leaf_gone)
        return hooks

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"


def _leaf_gone():
    leaf_hooked[0] -= 1


# A row's node, and a leaf's AccumulateGrad, are one object while anything holds them (torch's graph has one node
# per operation: `c.grad_fn.next_functions[0][0] is b.grad_fn`). Keyed by ids the cached object itself keeps alive.
_nodes = weakref.WeakValueDictionary()
_accumulators = weakref.WeakValueDictionary()


def _accumulator(variable):
    node = _accumulators.get(id(variable))
    if node is None or node.variable is not variable:
        node = AccumulateGrad(variable)
        if variable is not None:
            _accumulators[id(variable)] = node
    return node


def node_for(tape, row, op, value):
    ctx = tape.aux.get(row)
    if isinstance(ctx, Node):  # a custom Function's ctx is its grad_fn (MyFnBackward), as in torch
        return ctx
    key = (id(tape), row, id(value))
    node = _nodes.get(key)
    if node is not None and node._tape is tape and node._row == row and node._value is value:
        return node
    name = getattr(ctx, "grad_fn_name", None) or registry.OPS[op].grad_fn  # (a fused derivative row: per row)
    cls = _classes.get(name)
    if cls is None:
        attrs = {"__slots__": ()}
        if name == "CompiledFunctionBackward":  # (torch.compile's outputs: an autograd.Function's node)
            attrs["_repr_module"] = FUNCTION_MODULE
        cls = _classes[name] = type(name, (Node,), attrs)
    node = _nodes[key] = cls(tape, row, value)
    return node


# -- saved-tensor hooks ---------------------------------------------------------------------------------------
_hooks_disabled = []  # the messages of the disable_saved_tensors_hooks blocks we are in, innermost last


class saved_tensors_hooks:
    """torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook): within the block, each value a recorded
    op's backward reads is stored as pack_hook(tensor), and a backward reads unpack_hook(packed) (saved_tensors.py).
    Per thread; the innermost block's hooks apply."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        _check_hooks_allowed()
        self._outer = _local.pack_hooks
        _local.pack_hooks = self._outer + (self._hooks(),)
        saved_tensors.OPEN.append(self)
        return self

    def _hooks(self):
        return self.pack_hook, self.unpack_hook

    def __exit__(self, *exc):
        _local.pack_hooks = self._outer
        saved_tensors.OPEN.remove(self)
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keeps the tensors a backward reads on the CPU: where tapegrad's tensors all are, so its hooks keep each
    tensor as it is (no copy; the block's values and gradients are torch's). Inside it, outer hooks do not run."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(None, None)
        self.pin_memory, self.device_type = pin_memory, device_type

    def _hooks(self):
        return None  # (saved_tensors.pack: None packs nothing)


class disable_saved_tensors_hooks:
    """Within the block, saved_tensors_hooks (and save_on_cpu) raise RuntimeError(error_message)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        _hooks_disabled.append(self.error_message)

    def __exit__(self, *exc):
        _hooks_disabled.pop()
        return False


def _check_hooks_allowed():
    if _hooks_disabled:
        raise RuntimeError(_hooks_disabled[-1])


# -- gradient edges, versions, multi-grad hooks ---------------------------------------------------------------
class GradientEdge(NamedTuple):
    """Object representing a given gradient edge within the autograd graph: (node, output_nr), an input of
    autograd.grad as the tensor it was taken from."""
    node: object
    output_nr: int
    ownership_token: object = None


def _get_grad_fn_or_grad_acc(t):
    if isinstance(t, GradientEdge):
        return t.node
    if t.requires_grad and t.grad_fn is None:
        return _accumulator(t)
    return t.grad_fn


def get_gradient_edge(tensor):
    """The gradient edge where the gradient of `tensor` is computed: autograd.grad(loss, edge) is
    autograd.grad(loss, tensor)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    return GradientEdge(_get_grad_fn_or_grad_acc(tensor), tensor._output_nr)


def edge_tensor(edge):
    """The tensor of the row a GradientEdge's node stands for (autograd.grad's input)."""
    node = edge.node
    if isinstance(node, AccumulateGrad):
        return node.variable
    if not node._alive():
        raise RuntimeError(FREED_MESSAGE)
    return wrap(node._tape, node._row)


def increment_version(tensor):
    """Bump the version counter of a tensor (or of each of an iterable of tensors), as an in-place op does: a
    backward that reads its saved value then raises torch's in-place error."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        if not t._inference:  # (an inference tensor has no version counter: torch leaves it alone)
            t._bump_version()


class _Task(list):
    """The running backward's callbacks (torch's graph task, for register_multi_grad_hook): autograd.api runs them
    when it ends."""
    __hash__, __eq__ = object.__hash__, object.__eq__


class _Tasks(threading.local):
    current = None  # the _Task of this thread's running backward, made when a hook first asks for it


tasks = _Tasks()


def current_task():
    """The running backward's _Task (a nested backward has its own); call only from a hook."""
    task = tasks.current
    if task is None:
        task = tasks.current = _Task()
    return task


class _MultiHandle:
    """The handles of a multi-grad hook's per-tensor hooks, removed together (a RemovableHandle's interface:
    tapegrad.utils imports autograd, so the class is not subclassed)."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state):
        self.handles = state


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """mode="all": fn(grads) once the gradients of the tensors this backward reaches are computed, None for the
    others (each backward that reaches one); mode="any": fn(grad) at the first of them. tapegrad calls an "all"
    hook when its backward ends rather than at the last gradient (its replay does not say in advance which
    rows it runs): the same gradients, after the backward's other hooks and .grad updates."""
    supported_modes = ("all", "any")
    lock = threading.Lock()
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    if mode == "all":
        buffers = weakref.WeakKeyDictionary()  # backward (its current_task()) -> the gradients so far
        n = len(tensors)

        def get_inner_hook(idx):
            def inner_hook(grad):
                task = current_task()
                with lock:
                    buffer = buffers.get(task)
                    if buffer is None:
                        buffer = buffers[task] = [None] * n
                        task.append(lambda: fn(buffers.pop(task)))
                buffer[idx] = grad
            return inner_hook

        handles = tuple(t.register_hook(get_inner_hook(i)) for i, t in enumerate(tensors))
    else:
        ran_hook = weakref.WeakKeyDictionary()

        @functools.wraps(fn)
        def wrapped_fn(grad):
            task = current_task()
            with lock:
                prev, ran_hook[task] = ran_hook.get(task, False), True
            if prev:
                return
            fn(grad)

        handles = tuple(t.register_hook(wrapped_fn) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)


def allow_mutation_on_saved_tensors():
    """Not implemented (raises NotImplementedError)."""
    raise NotImplementedError(
        "tapegrad: torch.autograd.graph.allow_mutation_on_saved_tensors is not implemented: torch clones a saved "
        "tensor when an in-place op is about to write it (a dispatch mode over every op), and tapegrad's in-place "
        "ops write the arrays its tape holds. Clone the tensor before modifying it in place (`y = y.clone()`).")
