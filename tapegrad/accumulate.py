"""Where a row's gradient goes at the end of a backward: a tensor's hooks, `retain_grad`, a leaf's `.grad`
(torch's AccumulateGrad). Shared by the compiled driver (replay.py) and the create_graph path (create_graph.py)."""
import numpy as np

from .grad_mode import enable_grad, no_grad
from .ops import clone
from .ops.sparse import SparseTensor, accumulate_, add_into_dense
from .tensor import Tensor, _new, tensor_type_name


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
