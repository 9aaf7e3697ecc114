"""Elementwise ops, made from the registry (one function per declared op), comparisons and where."""
import math

import numpy as np

from .. import _dtype, _strides
from ..tensor import Tensor, _new, as_array
from ._common import OPS, _float, _is_scalar, _record, _tensor, _tensor_tensor, _to_dtype, broadcast_shape
from .. import registry


_KEEPS_INT = {"neg", "abs", "sign", "relu", "floor", "ceil", "round", "trunc", "square", "clamp", "clamp_min",
              "clamp_max", "hardtanh", "copy"}


def _make_unary(name):
    op = OPS[name]
    forward = op.forward
    keeps_int = name in _KEEPS_INT

    def fn(input, c=0.0, c2=0.0):
        x = input if type(input) is Tensor else _tensor(input)
        if x._data.dtype.kind != "f":
            if keeps_int:
                out = np.asarray(forward(x._data, c, c2))
                return _new(out.astype(np.float32) if out.dtype.kind == "f" else out)  # float bounds: float32
            x = _float(x)
        return _record(op, forward(x._data, c, c2), (x,), c, c2)
    fn.__name__ = name
    fn.__doc__ = f"{name}: elementwise, gradient {op.derivs[0]} ({op.grad_fn})."
    return fn


def _make_binary(name, commutative=False):
    op, ts, st = OPS[name], OPS[name + "_ts"], OPS[name + "_st"]
    forward = op.forward

    def fn(input, other):
        if isinstance(input, Tensor):  # the hot paths first: tensor op tensor, tensor op Python number
            if isinstance(other, Tensor):
                return _tensor_tensor(op, forward, input, other)
            tp = type(other)
            if (tp is float or tp is int) and input._data.dtype.kind == "f":
                return _record(ts, forward(input._data, other), (input,), float(other))
        elif isinstance(other, Tensor):  # Python number op tensor (`1 - y`: create_graph's tanh rule)
            tp = type(input)
            if (tp is float or tp is int) and other._data.dtype.kind == "f":
                sop, c = (ts if commutative else st), float(input)
                return _record(sop, sop.forward(other._data, c, 0.0), (other,), c)
        if _is_scalar(other):
            x, sop, c = _tensor(input), ts, other
        elif _is_scalar(input):
            x, sop, c = _tensor(other), (ts if commutative else st), input
        else:
            return _tensor_tensor(op, forward, _tensor(input), _tensor(other))
        dt = _dtype.result_type(x._data, c)
        if dt.kind != "f":  # integer or bool arithmetic: nothing to differentiate
            a, b = (x._data, c) if sop is ts else (c, x._data)
            return _new(np.asarray(forward(a, b), dtype=dt))
        x = _to_dtype(x, dt)
        c = float(c)
        return _record(sop, sop.forward(x._data, c, 0.0), (x,), c)
    fn.__name__ = name
    fn.__doc__ = f"{name}: broadcasting; gradients {op.derivs[0]} and {op.derivs[1]} ({op.grad_fn})."
    return fn


for _op in registry.OPS:
    if _op.kind == registry.K_UNARY and not _op.name.endswith(("_ts", "_st")):
        globals()[_op.name] = _make_unary(_op.name)
mul = _make_binary("mul", commutative=True)
maximum = _make_binary("maximum", commutative=True)
minimum = _make_binary("minimum", commutative=True)
_add = _make_binary("add", commutative=True)  # the operators call these two directly: no alpha to check
_sub = _make_binary("sub")


def _times_alpha(input, other, alpha):
    """alpha * other for add and sub, with torch's checks of alpha against the result's dtype."""
    kind = _dtype.result_type(*(x._data if isinstance(x, Tensor) else x for x in (input, other))).kind
    if isinstance(alpha, bool):
        if kind != "b":
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif kind in "biu" and not isinstance(alpha, int):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    return mul(other, alpha)


def add(input, other, *, alpha=1):
    """add: input + alpha * other, broadcasting (AddBackward0)."""
    return _add(input, other if alpha == 1 and alpha is not True else _times_alpha(input, other, alpha))


def sub(input, other, *, alpha=1):
    """sub: input - alpha * other, broadcasting (SubBackward0)."""
    return _sub(input, other if alpha == 1 and alpha is not True else _times_alpha(input, other, alpha))


div = _make_binary("div")
pow = _make_binary("pow")
atan2 = _make_binary("atan2")
_clamp = globals()["clamp"]


def clamp(input, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    return _clamp(input, -math.inf if min is None else _bound(min), math.inf if max is None else _bound(max))


def _bound(v):
    """A Python int bound stays an int, so clamping an integer tensor keeps its dtype (as torch)."""
    return v if type(v) is int else float(v)


clip = clamp


def leaky_relu(input, negative_slope=0.01):
    return globals()["_leaky_relu"](input, float(negative_slope))


def elu(input, alpha=1.0):
    return globals()["_elu"](input, float(alpha))


def hardtanh(input, min_val=-1.0, max_val=1.0):
    if isinstance(input, Tensor) and input._data.dtype.kind in "iu":  # torch keeps the integer type
        return globals()["_hardtanh"](input, int(min_val), int(max_val))
    return globals()["_hardtanh"](input, float(min_val), float(max_val))


def softplus(input, beta=1.0, threshold=20.0):
    return globals()["_softplus"](input, float(beta), float(threshold))


for _name in ("leaky_relu", "elu", "hardtanh", "softplus"):
    globals()["_" + _name] = _make_unary(_name)


def clone(input):
    x = _tensor(input)
    t = globals()["copy"](x)
    if x._strides is not None and _strides.is_dense(x._data.shape, x._strides):
        t._strides = x._strides  # torch's clone keeps a permuted layout (memory_format=preserve_format)
    return t


def true_divide(input, other):
    return div(input, other)


def rsub(input, other):
    return sub(other, input)


# -- comparisons and logic: no gradient, bool results --------------------------------------------------
def _compare(np_fn):
    def fn(input, other):
        a = input._data if isinstance(input, Tensor) else as_array(input)
        b = other._data if isinstance(other, Tensor) else other
        if isinstance(b, Tensor) or isinstance(b, np.ndarray):
            broadcast_shape(np.shape(a), np.shape(b))
        return _new(np.asarray(np_fn(a, b)))
    return fn


eq, ne, lt, le, gt, ge = (_compare(f) for f in (np.equal, np.not_equal, np.less, np.less_equal,
                                                np.greater, np.greater_equal))
logical_and, logical_or, logical_xor = (_compare(f) for f in (np.logical_and, np.logical_or, np.logical_xor))
bitwise_and, bitwise_or, bitwise_xor = (_compare(f) for f in (np.bitwise_and, np.bitwise_or, np.bitwise_xor))
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne


def logical_not(input):
    return _new(np.logical_not(input._data))


def isnan(input):
    return _new(np.isnan(input._data))


def isinf(input):
    return _new(np.isinf(input._data))


def isfinite(input):
    return _new(np.isfinite(input._data))


def equal(input, other):
    return input.shape == other.shape and bool(np.array_equal(input._data, other._data))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def where(condition, input=None, other=None):
    """where(cond, a, b): a where cond holds, else b (broadcasting; scalars allowed for a and b)."""
    if input is None and other is None:
        return tuple(_new(i) for i in np.nonzero(_tensor(condition)._data))
    cond = _tensor(condition)
    if cond._data.dtype != np.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dtype.from_numpy_dtype(cond._data.dtype).name.capitalize()}")
    ref = input if isinstance(input, Tensor) else other if isinstance(other, Tensor) else _tensor(input)
    a, b = _tensor(input, like=ref), _tensor(other, like=ref)
    broadcast_shape(broadcast_shape(cond.shape, a.shape), b.shape)
    dt = _dtype.result_type(a._data, b._data)
    a, b = _to_dtype(a, dt), _to_dtype(b, dt)
    return _record(OPS["where"], np.where(cond._data, a._data, b._data), (cond, a, b))


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]
