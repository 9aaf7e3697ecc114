"""grad_fn objects, made on demand from a tape row (the tape itself has no per-op Python objects)."""
import weakref

from .. import registry, saved_tensors
from ..replay import FREED_MESSAGE
from ..tape import _local

_classes = {}
# torch lists an edge per operand of these, (None, 0) for a Python number (`x * 2`), which tapegrad records
# as a scalar attribute of a one-input row
_SCALAR_OPERAND = frozenset(("MulBackward0", "AddBackward0", "SubBackward0", "DivBackward0"))
# the condition of torch.where is not an operand of WhereBackward0 (it has no edge); tapegrad's row reads it
_NO_EDGE_FIRST = frozenset(("WhereBackward0",))


FUNCTION_MODULE = "torch.autograd.function."


_NODE_HOOKS = ("tapegrad: {what} (a hook on an autograd node) is not implemented: a node is made on demand from its "
               "tape row. Register the hook on the tensor (tensor.register_hook: the node's output gradient, as a "
               "pre-hook) or on the module (register_full_backward_hook / register_full_backward_pre_hook).")


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
        raise NotImplementedError(_NODE_HOOKS.format(what="grad_fn.register_hook"))

    def register_prehook(self, fn):
        raise NotImplementedError(_NODE_HOOKS.format(what="grad_fn.register_prehook"))

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

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"


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
