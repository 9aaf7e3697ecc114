"""Saved tensors: torch's view of the values a row's backward reads, and the hooks that pack and unpack them.

A row's backward reads some of its inputs' values and perhaps its output's (the op's `saves`). torch calls
these the node's saved tensors (`grad_fn._saved_self`, `_saved_other`, `_saved_result`), and under
`torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)` it stores `pack_hook(tensor)` for each of
them and computes the backward with `unpack_hook(packed)`. Here a row recorded under hooks keeps its packed
objects in `tape.packed[row]`; a backward that needs the row calls the unpack hooks first (rows in reverse,
as torch's engine runs nodes), puts each unpacked value in its row's place for the replay, and puts the
originals back afterwards. Freeing the row (backward without retain_graph, a sweep) drops its packed
objects, as torch frees saved variables.

The tape still holds every value it held without hooks: packing to disk or to another device frees no
memory here (all values are on the CPU already).
"""
import re

import numpy as np

from . import registry, tape as tape_mod
from .grad_mode import no_grad, set_grad_enabled
from .tape import OP_LEAF, untraceable
from .tensor import Tensor, _new, wrap

_local = tape_mod._local  # its `pack_hooks`: the (pack_hook, unpack_hook) pairs entered in this thread
# the hook blocks open in any thread: recording tests this list, which costs less than a thread-local attribute
# (about 10 against 90 ns an op, measured), and pack() then reads this thread's
OPEN = []

PACK_MODIFIES = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook cannot be "
    "modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you "
    "need to perform in-place operations on the input to a pack hook.")
HOOKS_SET = ("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of "
             "hooks is allowed at a time.")

# torch's names of the saved inputs, by position, where they are not `self` (one input) or `self, other` (two)
_INPUT_NAMES = {"MmBackward0": ("self", "mat2"), "BmmBackward0": ("self", "mat2"),
                "ConvolutionBackward0": ("input", "weight"), "PowBackward1": ("self", "exponent"),
                "WhereBackward0": ("condition", "self", "other"), "AddcmulBackward0": ("self", "tensor1", "tensor2"),
                "AddcdivBackward0": ("self", "tensor1", "tensor2")}
# torch's nodes that save their second input first (mm's mat2), where tapegrad's rule reads the first first
_SECOND_FIRST = frozenset(("MmBackward0", "BmmBackward0", "AddmmBackward0", "MaximumBackward0", "MinimumBackward0",
                           "Atan2Backward0"))
_EXPRESSION_SYMBOLS = {registry.K_UNARY: ("x",), registry.K_BINARY: ("a", "b")}  # (registry: an input's name)


class Saved:
    """One saved value of a row under hooks: input `j` of the row (-1: its output), packed."""
    __slots__ = ("j", "packed", "unpack_hook")

    def __init__(self, j, packed, unpack_hook):
        self.j, self.packed, self.unpack_hook = j, packed, unpack_hook


def saved_entries(tape, row, requires_grad=None):
    """The row's saved values as (torch's name or None, j), j the input's position or -1 for the output, in the
    order torch saves them: an elementwise op's by their first reads in its derivative formulas (mul saves
    `other`, then `self`), of the formulas of inputs that want a gradient (`requires_grad`; None: all), as torch
    saves only what those read; another op's, its inputs then its output."""
    op = registry.OPS[tape.op[row]]
    if op.kind == registry.K_LEAF or getattr(tape.aux.get(row), "_forward_cls", None) is not None:
        return []  # (a custom Function's saved tensors are its ctx's: autograd/function.py)
    n = int(tape.argptr[row + 1] - tape.argptr[row])
    names = _INPUT_NAMES.get(op.grad_fn) or (("self",) if n == 1 else ("self", "other") if n == 2 else ())
    symbols = _EXPRESSION_SYMBOLS.get(op.kind)
    if symbols and op.derivs and len(symbols) == n:
        formulas = [d for j, d in enumerate(op.derivs) if requires_grad is None or requires_grad[j]]
        first = {}
        for j, symbol in list(enumerate(symbols)) + [(-1, "y")]:
            reads = [(i, m.start()) for i, d in enumerate(formulas) for m in [re.search(rf"\b{symbol}\b", d)] if m]
            if reads:
                first[j] = min(reads)
        order = sorted(first, key=first.get)
    else:
        saves = op.saves
        order = [j for j in range(n) if registry.reads_input(saves, j)] + ([-1] if saves & registry.SAVES_OUT else [])
    if op.grad_fn in _SECOND_FIRST:
        order.sort(key=lambda j: (j != 1, j < 0))
    return [("result" if j < 0 else names[j] if j < len(names) else None, j) for j in order]


def pack(tape, out, op, inputs):
    """Called by the op front-ends' recording while a thread has entered saved_tensors_hooks: pack each value the
    new row `out._slot` saves, with this thread's innermost hooks (None: save_on_cpu's, which keep it as is)."""
    hooks = current_hooks()
    if hooks is None:
        return
    pack_hook, unpack_hook = hooks
    row = out._slot
    entries = []
    for _, j in saved_entries(tape, row, [x._requires_grad for x in inputs]):
        t = out if j < 0 else inputs[j]
        entries.append(Saved(j, call_pack(pack_hook, t), unpack_hook))
    if entries:
        tape.packed[row] = entries


def current_hooks():
    """This thread's innermost (pack_hook, unpack_hook), or None. A replay of tapegrad.compile would not call them:
    a traced function that saves tensors under hooks runs eagerly."""
    hooks = _local.pack_hooks[-1] if _local.pack_hooks else None
    if hooks is not None:
        untraceable("saved_tensors_hooks (a replay would not call the pack and unpack hooks)")
    return hooks


def call_pack(pack_hook, t):
    version = t._version
    with no_grad():  # (torch's: what a hook computes is not recorded)
        packed = pack_hook(t)
    if t._version != version:
        raise RuntimeError(PACK_MODIFIES)
    return packed


def source_row(tape, row, j):
    """The row whose value is the row's saved value j (an input's row, or the row itself for -1)."""
    return row if j < 0 else int(tape.args[tape.argptr[row] + j])


def unpack(saved, expected):
    """unpack_hook(packed), checked to be a tensor that can stand for the saved array `expected`."""
    t = checked_unpack(saved.unpack_hook, saved.packed)
    return t, _as_saved_array(t._data, expected)


def checked_unpack(unpack_hook, packed):
    t = unpack_hook(packed)
    if not isinstance(t, Tensor):
        raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                        f"{type(t).__name__}")
    return t


def _as_saved_array(a, expected):
    if a.shape != expected.shape:  # (the replay's kernels read the row's sizes from the saved array)
        raise RuntimeError(f"The size of the tensor returned by a saved tensor unpack_hook {list(a.shape)} must "
                           f"match the size of the saved tensor {list(expected.shape)}")
    return np.ascontiguousarray(a, expected.dtype)


def unpack_for_backward(tape, need, create_graph):
    """Before a backward: each needed row's packed values unpacked, rows in reverse, into their rows' places (the
    hooks run in the backward's grad mode, as torch's). Returns [(row, original value)] for `restore`."""
    put = {}
    values = tape.values
    with set_grad_enabled(create_graph):
        for row in sorted((r for r in tape.packed if r < len(need) and need[r]), reverse=True):
            for saved in tape.packed[row]:
                source = source_row(tape, row, saved.j)
                original = put.get(source, values[source])
                _, array = unpack(saved, original)
                put.setdefault(source, original)
                tape.set_value(source, array)
    return list(put.items())


def restore(tape, originals):
    for row, value in originals:
        tape.set_value(row, value)


def saved_value(tape, row, j, node):
    """grad_fn._saved_<name>: the unpacked value under hooks (the row's output with `node` as its grad_fn, as
    torch's), else the saved tensor (a leaf's own tensor)."""
    for saved in tape.packed.get(row, ()):
        if saved.j == j:
            with no_grad():
                t = checked_unpack(saved.unpack_hook, saved.packed)
            if j < 0:
                t = _new(t._data)
                t._tape, t._slot, t._requires_grad, t._is_leaf, t._op = tape, row, True, False, int(tape.op[row])
                t._grad_fn = node
            return t
    source = source_row(tape, row, j)
    if tape.op[source] == OP_LEAF:
        ref = tape.aux.get(source)
        leaf = ref() if ref is not None else None
        if leaf is not None:
            return leaf
    return wrap(tape, source)


def position(tape, row, name):
    """The saved value torch calls `name` of the row: its input's position, -1 for the output, None: none."""
    for saved_name, j in saved_entries(tape, row):
        if saved_name == name:
            return j
    return None


class SavedTensor:
    """grad_fn._raw_saved_<name> (torch._C._autograd.SavedTensor): `register_hooks(pack_hook, unpack_hook)` packs
    the saved value now and unpacks it for every later access and for the backward."""
    __slots__ = ("_tape", "_row", "_j")

    def __init__(self, tape, row, j):
        self._tape, self._row, self._j = tape, row, j

    def register_hooks(self, pack_hook, unpack_hook):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): incompatible function arguments: pack_hook and unpack_hook must be "
                            "callables")
        tape, row, j = self._tape, self._row, self._j
        entries = tape.packed.setdefault(row, [])
        if any(s.j == j for s in entries):
            raise RuntimeError(HOOKS_SET)
        value = _new(tape.values[source_row(tape, row, j)])  # (torch packs the saved data, without its history)
        entries.append(Saved(j, call_pack(pack_hook, value), unpack_hook))
