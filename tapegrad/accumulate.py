"""Where a row's gradient goes at the end of a backward: a tensor's hooks, `retain_grad`, a leaf's `.grad`
(torch's AccumulateGrad). Shared by the compiled driver (replay.py) and the create_graph path (create_graph.py)."""
import threading

import numpy as np

from . import registry
from .grad_mode import enable_grad, no_grad
from .ops import clone
from .ops.sparse import SparseTensor, accumulate_, add_into_dense
from .tape import F_DEAD
from .tensor import Tensor, _new, tensor_type_name


passes = threading.local()  # this thread's backward (replay.run sets its token: a nested backward has its own)


def current_pass():
    """A token for the backward running in this thread (a nested backward has its own)."""
    return getattr(passes, "token", None)


def run_hooks(t, g, graph):
    """t's hooks on its gradient g, in torch's grad mode: recording under create_graph, under no_grad else."""
    if not t._hooks:
        return g
    with enable_grad() if graph else no_grad():
        for hook in t._hooks:
            out = hook(g)
            if out is not None:
                _check_hook_result(hook, g, out)
                g = out
    return g


def run_post_accumulate_hooks(t, graph):
    """t's post-accumulate-grad hooks, once its .grad holds this backward's gradient."""
    with enable_grad() if graph else no_grad():
        for hook in list(t._post_accumulate_grad_hooks):
            out = hook(t)
            if out is None or out is t:  # (torch lets a hook return its tensor: `lambda p: p.add_(...)`)
                continue
            if isinstance(out, Tensor):
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")
            raise TypeError(f"expected Variable, but hook returned '{type(out).__name__}'")


def _check_hook_result(hook, g, out):
    """torch's checks of what a tensor hook returned: a tensor of the gradient's dtype and shape."""
    if not isinstance(out, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(out).__name__}'")
    name = getattr(hook, "__name__", type(hook).__name__)
    if out._data.dtype != g._data.dtype:
        def type_name(a):
            return "CPUBoolType" if a.dtype == np.bool_ else tensor_type_name(a)
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {type_name(g._data)} got "
                           f"{type_name(out._data)})")
    if out.shape != g.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")


def watched(tape, row, adjoint, graph):
    """A non-leaf tensor's hooks and retain_grad, at its row. Returns the (possibly replaced) gradient."""
    ref = tape.watch.get(row)
    t = ref() if ref is not None else None
    if t is None:
        return adjoint
    g = adjoint if graph else _new(adjoint.copy())
    g = run_hooks(t, g, graph)
    if not graph and g._data is not adjoint:
        adjoint[...] = g._data
    if t._retains_grad:
        add_grad(t, g if graph else _new(g._data.copy()), graph)
    return g


def into_leaf(tape, row, g, targets, graph):
    """Leaf row's gradient g (a Tensor of its own) through the leaf's hooks into its .grad."""
    ref = tape.aux.get(row)
    t = ref() if ref is not None else None
    if t is None:
        return
    g = run_hooks(t, g, graph)
    if targets is None and t._requires_grad:  # (torch's AccumulateGrad: a leaf set not to require grad since)
        if leaf_hooked[0]:
            hooks = leaf_node_hooks(t)
            if hooks is not None:
                return accumulate_node(t, hooks, g, graph)
        add_grad(t, g, graph)
        if t._post_accumulate_grad_hooks:
            run_post_accumulate_hooks(t, graph)


def add_grad(t, g, graph):
    """Accumulate into .grad as torch's AccumulateGrad: out of place under create_graph (the sum is
    recorded), in place otherwise (even into a .grad that has a history: its version is bumped)."""
    if type(g) is SparseTensor or type(t._grad) is SparseTensor:
        return _add_sparse_grad(t, g, graph)
    if t._grad is None:
        if graph:  # never alias a seed, another row's value or the user's grad_outputs
            g = clone(g) if g._requires_grad else _new(g._data.copy())
        t._grad = g
    elif graph:
        t._grad = t._grad + g
    else:
        t._grad._data += g._data
        if t._grad._requires_grad or t._grad._vc is not None:
            t._grad._bump_version()


def _add_sparse_grad(t, g, graph):
    """AccumulateGrad with a sparse COO gradient (embedding(sparse=True)) on either side: sparse into sparse is
    torch's in-place merge (the .grad object kept), sparse into dense adds into it in place, dense into sparse
    replaces .grad by the dense sum; under create_graph each is the recorded sum (dense + sparse first)."""
    old = t._grad
    if old is None:
        t._grad = g.clone() if graph and type(g) is SparseTensor else g
    elif graph:
        t._grad = g + old if type(old) is SparseTensor and type(g) is not SparseTensor else old + g
    elif type(old) is SparseTensor:
        if type(g) is SparseTensor:
            accumulate_(old, g)
        else:
            t._grad = _new(g._data.copy())
            add_into_dense(t._grad._data, old)
    else:
        add_into_dense(old._data, g)
        if old._requires_grad or old._vc is not None:
            old._bump_version()


# -- hooks on autograd nodes (grad_fn.register_prehook / register_hook, and a leaf's AccumulateGrad's) --------
# A row with node hooks is flagged STOP (every row of a multi-output node: unbind's, split's), and the replay's
# Python side runs it (replay._node_row, create_graph._graph_node): its rule gives each input's gradient
# separately, which the hooks see and may replace before they are added on. A leaf's AccumulateGrad keeps its
# hooks on the leaf (`_node_hooks` in its __dict__); `leaf_hooked[0]` counts the leaves that have had some, so a
# backward looks for them only when one exists.
leaf_hooked = [0]

# torch lists an edge per operand of these, (None, 0) for a Python number (`x * 2`), which tapegrad records
# as a scalar attribute of a one-input row
SCALAR_OPERAND = frozenset(("MulBackward0", "AddBackward0", "SubBackward0", "DivBackward0"))
# the condition of torch.where is not an operand of WhereBackward0 (it has no edge); tapegrad's row reads it
NO_EDGE_FIRST = frozenset(("WhereBackward0",))
# torch lists this many edges for these whatever their operands (a convolution's absent bias: (None, 0))
EDGE_COUNT = {"ConvolutionBackward0": 3}

# ops whose outputs are one node in torch (UnbindBackward0 is the grad_fn of each piece), recorded as one row per
# output: the rows of one call are consecutive, read the same input, and their pieces partition it
MULTI_OUTPUT = frozenset(("unbind", "split", "split_with_sizes"))


class NodeHooks:
    """One node's pre-hooks and hooks (id -> fn, in registration order) and its metadata dict."""
    __slots__ = ("pre", "post", "metadata", "ran")

    def __init__(self):
        self.pre, self.post, self.metadata, self.ran = {}, {}, None, None

    def active(self):
        return bool(self.pre or self.post)


def node_rows(tape, row):
    """The rows of the node row `row` belongs to, ascending: itself, or every output of a multi-output call."""
    op = int(tape.op[row])
    if registry.OPS[op].name not in MULTI_OUTPUT:
        return [row]
    args, values, flags, n = tape.row_args(row), tape.values, tape.flags, tape.n

    def sibling(r):
        return 0 <= r < n and tape.op[r] == op and not flags[r] & F_DEAD and tape.row_args(r) == args
    low = high = row
    while sibling(low - 1):
        low -= 1
    while sibling(high + 1):
        high += 1
    total = values[args[0]].size
    start, size = low, 0
    for r in range(low, high + 1):
        size += values[r].size
        if size >= total:
            if r >= row:
                return list(range(start, r + 1))
            start, size = r + 1, 0
    return list(range(start, high + 1))


def _name(hook):
    return getattr(hook, "__name__", type(hook).__name__)


def _check_node_hook_result(hook, old, out):
    """torch's checks of what a node hook returned: a tuple with an entry per gradient, each None, or a tensor of
    the dtype and shape of the one it replaces (never where there was None)."""
    if not isinstance(out, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(out).__name__}'")
    if len(out) != len(old):
        raise RuntimeError(f"hook '{_name(hook)}' has returned an incorrect number of values (got {len(out)}, but "
                           f"expected {len(old)})")
    for g, new in zip(old, out):
        if new is None:
            continue
        if not isinstance(new, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
        if g is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        _check_hook_result(hook, g, new)


def run_node_prehooks(hooks, grad_outputs, graph):
    """A node's pre-hooks on its output gradients (a tuple: Tensors, None where none flows): the gradients the node
    then runs on."""
    with enable_grad() if graph else no_grad():
        for hook in list(hooks.pre.values()):
            out = hook(grad_outputs)
            if out is not None:
                _check_node_hook_result(hook, grad_outputs, out)
                grad_outputs = out
    return grad_outputs


def run_node_posthooks(hooks, grad_inputs, grad_outputs, graph):
    """A node's hooks on its input gradients (one per next_functions edge) and output gradients: the input
    gradients then accumulated."""
    with enable_grad() if graph else no_grad():
        for hook in list(hooks.post.values()):
            out = hook(grad_inputs, grad_outputs)
            if out is not None:
                _check_node_hook_result(hook, grad_inputs, out)
                grad_inputs = out
    return grad_inputs


def leaf_node_hooks(t):
    """The hooks of leaf t's AccumulateGrad that has some, else None."""
    hooks = t.__dict__.get("_node_hooks")
    return hooks if hooks is not None and hooks.active() else None


def accumulate_node(t, hooks, g, graph):
    """A leaf's AccumulateGrad with hooks: its pre-hooks, the accumulation into .grad (and the post-accumulate-grad
    hooks), then its hooks (no input gradients; the gradient as its output gradient), in torch's order."""
    old = g
    g, = run_node_prehooks(hooks, (g,), graph)
    if g is not None:
        if g is not old and not graph:  # (a hook's tensor: .grad gets its own array, as torch's clone)
            g = _new(g._data.copy())
        add_grad(t, g, graph)
        if t._post_accumulate_grad_hooks:
            run_post_accumulate_hooks(t, graph)
    run_node_posthooks(hooks, (), (g,), graph)


def edges(tape, row, nargs):
    """For each of the node's next_functions edges, the index of its input among the row's `nargs` inputs (None:
    torch's edge of a Python number, which the row records as an attribute)."""
    name = registry.OPS[tape.op[row]].grad_fn
    if name in NO_EDGE_FIRST:
        return list(range(1, nargs))
    if nargs == 1 and name in SCALAR_OPERAND:
        return [0, None]
    return list(range(nargs)) + [None] * (EDGE_COUNT.get(name, nargs) - nargs)
