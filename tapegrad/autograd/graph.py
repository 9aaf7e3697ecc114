"""grad_fn objects, made on demand from a tape row (the tape itself has no per-op Python objects)."""
from .. import registry

_classes = {}
# torch lists an edge per operand of these, (None, 0) for a Python number (`x * 2`), which tapegrad records
# as a scalar attribute of a one-input row
_SCALAR_OPERAND = frozenset(("MulBackward0", "AddBackward0", "SubBackward0", "DivBackward0"))
# the condition of torch.where is not an operand of WhereBackward0 (it has no edge); tapegrad's row reads it
_NO_EDGE_FIRST = frozenset(("WhereBackward0",))


FUNCTION_MODULE = "torch.autograd.function."


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
                out.append((AccumulateGrad(ref() if ref else None), 0))
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
    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable

    def name(self):
        return "torch::autograd::AccumulateGrad"

    next_functions = ()

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"


def node_for(tape, row, op, value):
    ctx = tape.aux.get(row)
    if isinstance(ctx, Node):  # a custom Function's ctx is its grad_fn (MyFnBackward), as in torch
        return ctx
    name = getattr(ctx, "grad_fn_name", None) or registry.OPS[op].grad_fn  # (a fused derivative row: per row)
    cls = _classes.get(name)
    if cls is None:
        attrs = {"__slots__": ()}
        if name == "CompiledFunctionBackward":  # (torch.compile's outputs: an autograd.Function's node)
            attrs["_repr_module"] = FUNCTION_MODULE
        cls = _classes[name] = type(name, (Node,), attrs)
    return cls(tape, row, value)
