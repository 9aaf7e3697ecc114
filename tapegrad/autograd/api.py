"""torch.autograd's entry points: backward, grad (and the legacy Variable). Below functional.py and
gradcheck.py, which call grad."""
import warnings

import numpy as np

from .._meta import MetaArray
from ..tensor import as_array, _new, Tensor
from .. import _dtype, ops, replay
from ..accumulate import accumulate_node, add_grad, leaf_hooked, leaf_node_hooks
from .. import tape as tape_mod
from .._warnings import user_stacklevel
from ..grad_mode import enable_grad, no_grad
from .graph import GradientEdge, edge_tensor, tasks


class _VariableMeta(type):
    def __instancecheck__(cls, other):  # (torch's: every tensor is a Variable, `isinstance(h, Variable)`)
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """The legacy wrapper (torch.autograd.Variable): since torch 0.4 a Variable is a Tensor. `Variable(t)` is a new
    leaf sharing t's data, as torch's; `volatile` has no effect (torch's warning)."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=user_stacklevel())
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        return t


def _as_tuple(x):
    if x is None:
        return None
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _seeds(outputs, grad_outputs, create_graph):
    """Check the outputs and their seed gradients, with torch's errors."""
    grads = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    seeds = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not out._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            d = out._data  # (a 0-d output's seed made in C: np.ones is a Python function, slower by 1 us)
            g = np.array(1, d.dtype) if not d.ndim else np.ones(d.shape, d.dtype)
        else:
            if not isinstance(g, Tensor):
                g = Tensor.__new__(Tensor)
                g._data = as_array(grads[i])
            if g.shape != out.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                                   f"output[{i}] has a shape of {out.shape}.")
            if not _dtype.is_float(g._data.dtype) and _dtype.is_float(out._data.dtype):
                raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the "
                                   f"same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of "
                                   f"{g.dtype} and output[{i}] has a dtype of {out.dtype}.")
            if not create_graph:
                if _tracing():  # kept for tapegrad.compile to bind at each call (an argument, a constant)
                    g = g if g._data.dtype == out._data.dtype else g.to(out.dtype)
                else:
                    g = g._data.astype(out._data.dtype, copy=False)
        seeds.append(g)
    return seeds


def _tracing():
    return tape_mod._local.tracing is not None


def _refuse_meta(tensors):
    """Autograd through meta tensors is not built: the replay's compiled rules need values (torch's meta backward
    computes shapes only)."""
    for t in tensors:
        if isinstance(t, Tensor) and type(t._data) is MetaArray:
            raise NotImplementedError("tapegrad has no autograd on the meta device (backward through meta tensors)")


def _rows(tensors):
    if len(tensors) == 1 and tensors[0]._tape is not None:  # (the usual loss.backward())
        tape = tensors[0]._tape
        return tape, [tape.slot(tensors[0])]
    tapes = {id(t._tape): t._tape for t in tensors if t._tape is not None}
    if len(tapes) > 1:
        raise RuntimeError("tapegrad: these tensors were recorded on different threads' tapes")
    tape = next(iter(tapes.values())) if tapes else tape_mod.current()
    return tape, [tape.slot(t) for t in tensors]


def _targets(tape, inputs):
    """The rows of `inputs` on the outputs' tape, flattened, and how many each input has (Tape.target_rows)."""
    groups = [tape.target_rows(t) for t in inputs]
    return [r for g in groups for r in g], [len(g) for g in groups]


def _per_input(result, counts):
    """Sum the results of each input's rows (None where none was reached)."""
    out, k = [], 0
    for c in counts:
        parts = [g for g in result[k: k + c] if g is not None]
        k += c
        total = parts[0] if parts else None
        for g in parts[1:]:
            total = total + g
        out.append(total)
    return out


def _run_task(tape, roots, seeds, retain_graph, create_graph, targets, accumulate=True):
    """replay.run, then the callbacks its hooks queued (register_multi_grad_hook), in its grad mode."""
    outer, tasks.current = tasks.current, None
    try:
        result = replay.run(tape, roots, seeds, retain_graph, create_graph, targets=targets, accumulate=accumulate)
    finally:
        done, tasks.current = tasks.current, outer
    if done:
        with enable_grad() if create_graph else no_grad():
            for callback in done:
                callback()
    return result


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate the gradients of `tensors` into the leaves' .grad (torch.autograd.backward)."""
    tensors = _as_tuple(tensors)
    _refuse_meta(tensors)
    seeds = _seeds(tensors, grad_tensors if grad_tensors is not None else grad_variables, create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    tape, roots = _rows(tensors)
    targets = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        for t in inputs:  # (torch retains the gradient of each input)
            if not t._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        targets, counts = _targets(tape, inputs)
    if create_graph:
        _warn_reference_cycle()
    result = _run_task(tape, roots, seeds, retain_graph, create_graph, targets)
    if inputs is not None:
        for t, g in zip(inputs, _per_input(result, counts)):
            if g is not None and (t._is_leaf or not t._retains_grad):  # (a retained one the replay has added)
                hooks = leaf_node_hooks(t) if leaf_hooked[0] and t._is_leaf else None
                if hooks is not None:  # (its AccumulateGrad's hooks: torch runs that node for backward's inputs)
                    accumulate_node(t, hooks, g, create_graph)
                else:
                    add_grad(t, g, create_graph)


_cycle_warned = False


def _warn_reference_cycle():
    """torch's engine warns once per process when backward() records its gradients (TORCH_WARN_ONCE)."""
    global _cycle_warned
    if not _cycle_warned:
        _cycle_warned = True
        warnings.warn("Using backward() with create_graph=True will create a reference cycle between the parameter "
                      "and its gradient which can cause a memory leak. We recommend using autograd.grad when creating "
                      "the graph to avoid this. If you have to use this function, make sure to reset the .grad fields "
                      "of your parameters to None after use to break the cycle and avoid the leak.", UserWarning,
                      stacklevel=user_stacklevel())


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, returned (not accumulated into .grad)."""
    if type(inputs) is GradientEdge:  # (a tuple itself)
        inputs = (inputs,)
    outputs, inputs = _as_tuple(outputs), _as_tuple(inputs)
    if any(type(t) is GradientEdge for t in inputs):
        inputs = tuple(edge_tensor(t) if type(t) is GradientEdge else t for t in inputs)
    _refuse_meta(outputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.", FutureWarning,
                      stacklevel=user_stacklevel())
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for i, t in enumerate(inputs):
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if is_grads_batched:  # one backward per row of the batched grad_outputs (tapegrad has no vmap)
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    seeds = _seeds(outputs, grad_outputs, create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    tape, roots = _rows(outputs)
    targets, counts = _targets(tape, inputs)
    result = _run_task(tape, roots, seeds, retain_graph, create_graph, targets, accumulate=False)
    result = _per_input(result, counts)
    out = []
    for i, (t, g) in enumerate(zip(inputs, result)):
        if g is None:
            if materialize_grads:
                g = _new(np.zeros_like(t._data))
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   f"graph. Set allow_unused=True if this is the desired behavior.")
        out.append(g)
    return tuple(out)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """autograd.grad(..., is_grads_batched=True): the leading dim of each grad_output is a batch; one
    backward per batch row, results stacked (torch vmaps the same computation)."""
    grads = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    batch = {g.shape[0] for g in grads if g is not None}
    if len(batch) != 1:
        raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
                           "the batch dimension. The sizes of the remaining dimensions are expected to match the "
                           "shape of corresponding output, but a mismatch was detected")
    n = batch.pop()
    rows = []
    for b in range(n):
        keep = True if b < n - 1 else (create_graph if retain_graph is None else retain_graph)
        rows.append(grad(outputs, inputs, tuple(None if g is None else g[b] for g in grads), retain_graph=keep,
                         create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize_grads))
    return tuple(None if any(r[j] is None for r in rows) else _stack([r[j] for r in rows], create_graph)
                 for j in range(len(inputs)))


def _stack(tensors, create_graph):
    """torch.stack(tensors, 0), recorded when create_graph and a row requires grad."""
    if create_graph and any(t.requires_grad for t in tensors):
        return ops.stack(list(tensors), 0)
    return _new(np.stack([t._data for t in tensors]))
