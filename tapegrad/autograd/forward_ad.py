"""torch.autograd.forward_ad: dual tensors (`make_dual`, `unpack_dual`) inside a `dual_level`, with torch's
signatures and errors, computed through the tape.

tapegrad has no forward-mode engine: `make_dual(x, t)` returns an alias of x that the tape tracks (a fresh
leaf when x does not require grad, `x.view_as(x)` when it does, so that x's own graph stays connected), and
remembers t. `unpack_dual(y)` computes y's tangent J·t by the double-vjp trick: u = 0 shaped like y,
g = J^T u recorded (create_graph), then the tangent is the gradient of <g, t> with respect to u. It sums
over every dual of the level that y depends on, and is None where y depends on none. Each `unpack_dual`
is two backward passes; the values are forward-mode's.

Differences from torch, from the design: a dual tensor requires grad (torch's does only where its primal
does), so that `.numpy()` on it needs `.detach()`, and code run under `torch.no_grad()` between
`make_dual` and `unpack_dual` carries no tangent (torch's forward AD ignores grad mode). The helpers at
the end (marking a transform's inputs, detaching its results from its own leaves) are shared with
torch.func's transforms (tapegrad/func/).
"""
import functools
from typing import NamedTuple, Optional

import numpy as np

from ..grad_mode import enable_grad
from ..tensor import Tensor, _new
from .function import FORWARD_MODE
from .functional import _autograd_grad
from .graph import AccumulateGrad

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "dual_level"]

_current_level = -1
_duals = []  # per level: the (dual, tangent) pairs make_dual created at that level


def enter_dual_level():
    """Enter a new forward AD level (torch supports one at a time)."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level += 1
    _duals.append([])
    return _current_level


def exit_dual_level(*, level=None):
    """Exit the level: its dual tensors carry no tangent afterwards."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This "
                           "is not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _duals.pop()
    _current_level = level - 1


def _level(level):
    return _current_level if level is None else level


def make_dual(tensor, tangent, *, level=None):
    """A tensor whose tangent at `level` is `tangent` (an alias of `tensor` the tape tracks)."""
    level = _level(level)
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not tensor.is_floating_point():
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.is_floating_point():
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if level > _current_level:
        raise RuntimeError(f"Invalid dual level {level}: the current level is {_current_level}.")
    check_tangent_size(tensor, tangent)
    dual = differentiable(tensor)
    _duals[level].append((dual, tangent))
    return dual


def check_tangent_size(tensor, tangent):
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           "Tensor, this is not supported. Tensor is of size "
                           f"{list(tensor.shape)} while the given forward gradient is of size "
                           f"{list(tangent.shape)}.")


class UnpackedDualTensor(NamedTuple):
    """(primal, tangent): what unpack_dual returns; tangent is None for a tensor with no tangent."""
    primal: Tensor
    tangent: Optional[Tensor]


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of `tensor` at `level`: tangent is the sum over the level's duals d (with tangent
    t_d) that `tensor` depends on of J_d·t_d, or None where it depends on none."""
    level = _level(level)
    if level < 0 or level > _current_level or not isinstance(tensor, Tensor) or not tensor.requires_grad:
        return UnpackedDualTensor(tensor, None)
    pairs = _duals[level]
    own = own_leaves(d for d, _ in pairs)
    if not pairs:
        return UnpackedDualTensor(_detached_unless_outer(tensor, own), None)
    for d, t in pairs:
        if d is tensor:  # a dual itself: its own tangent, the same object (as torch's)
            return UnpackedDualTensor(_detached_unless_outer(tensor, own), t)
    duals = tuple(d for d, _ in pairs)
    tangents = tuple(t for _, t in pairs)
    u_ids, push = forward_grads((tensor,), duals)
    tangent, = push(tangents)
    primal = _detached_unless_outer(tensor, own)
    if tangent is None:
        return UnpackedDualTensor(primal, None)
    return UnpackedDualTensor(primal, undo((tangent,), own | u_ids)[0])


class dual_level:
    """Context manager (and decorator) for a forward AD level: `with dual_level(): ...`."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)
        return wrapper


# -- shared with torch.func's transforms -------------------------------------------------------------------
def differentiable(t):
    """t at a new level of differentiation: `t.view_as(t)` where t requires grad (its graph stays connected
    to the outer level's), else a fresh leaf holding a copy of its values (a leaf row sharing the caller's
    array would stay on the tape after the call, one per call)."""
    if t.requires_grad:
        return t.view_as(t)
    return _new(np.array(t._data, copy=True), requires_grad=False).requires_grad_()


def own_leaves(tensors):
    """The fresh leaves among `tensors` (those differentiable() made for inputs that did not require grad), by
    id: what a transform's results may depend on without requiring grad afterwards. (A dict that holds them:
    a leaf that died would leave its id to another object and its grad_fn edge without a variable.)"""
    return {id(t): t for t in tensors if isinstance(t, Tensor) and t.is_leaf and t.requires_grad}


def _reaches_other_leaf(t, own, closed):
    """Whether a gradient from t reaches a leaf that requires grad other than those in `own` (ids): one of
    the caller's tensors, or a parameter the function read. `closed`: grad_fn nodes known not to."""
    if t.is_leaf:
        return id(t) not in own and not t._transform_done
    seen, stack = set(), [t.grad_fn]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None or nxt in closed or nxt in seen:
                continue
            if isinstance(nxt, AccumulateGrad):
                v = nxt.variable  # (None: a leaf that died, an inner transform's own; no caller can hold it)
                if v is not None and id(v) not in own and not v._transform_done:
                    return True
                continue
            seen.add(nxt)
            stack.append(nxt)
    closed |= seen
    return False


def _detached_unless_outer(t, own, closed=None):
    if not t.requires_grad:
        return t
    return t if _reaches_other_leaf(t, own, set() if closed is None else closed) else t.detach()


def undo(tensors, own):
    """The transform's results as its caller sees them: each detached unless its graph reaches a tensor that
    requires grad outside the transform (then it keeps its graph, as torch's result at the outer level). The
    transform's own leaves are done: to an enclosing transform they are inside its call, not outside tensors
    (grad(lambda w: grad(f)(x, w).sum())(w) requires no grad, as torch's)."""
    for leaf in own.values():
        leaf._transform_done = True
    closed = set()
    return tuple(_detached_unless_outer(t, own, closed) if isinstance(t, Tensor) else t for t in tensors)


def zeros_like_leaf(t):
    return _new(np.zeros(t.shape, t._data.dtype), requires_grad=False).requires_grad_()


def forward_grads(outputs, inputs):
    """The double-vjp trick, its first backward recorded once: returns (the ids of its leaves u, push), where
    push(tangents, create_graph=True) gives, per output, its tangent J·v for the inputs' tangents v (one
    backward per call; a None tangent is zero), or None for an output that depends on no input with a
    tangent (or is not floating point)."""
    with enable_grad():
        us = tuple(zeros_like_leaf(o) if o.is_floating_point() and o.requires_grad else None for o in outputs)
        pairs = [(o, u) for o, u in zip(outputs, us) if u is not None]
        if pairs:
            FORWARD_MODE.depth += 1  # (a custom Function's vjp here is its jvp's transpose: function._jvp_as_vjp)
            try:
                g = _autograd_grad(tuple(o for o, _ in pairs), inputs, tuple(u for _, u in pairs), create_graph=True,
                                   retain_graph=True)
            finally:
                FORWARD_MODE.depth -= 1
        else:
            g = (None,) * len(inputs)
    live_us = tuple(u for u in us if u is not None)

    def push(tangents, create_graph=True):
        used = [i for i, gi in enumerate(g) if gi is not None and gi.requires_grad and tangents[i] is not None]
        res = (None,) * len(live_us)
        if used:
            with enable_grad():
                res = _autograd_grad(tuple(g[i] for i in used), live_us, tuple(tangents[i] for i in used),
                                     create_graph=create_graph, retain_graph=True)
        it = iter(res)
        return tuple(next(it) if u is not None else None for u in us)
    return own_leaves(live_us), push
