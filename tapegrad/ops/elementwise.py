"""Elementwise ops, made from the registry (one function per declared op), comparisons and where."""
import math

import numpy as np

from .. import _dtype, _strides
from ..tensor import Tensor, _new, as_array
from ._common import (OPS, _float, _in_float32, _integer, _is_scalar, _record, _tensor, _tensor_tensor, _to_dtype,
                      broadcast_shape)
from .. import registry


_KEEPS_INT = {"neg", "abs", "sign", "relu", "floor", "ceil", "round", "trunc", "square", "clamp", "clamp_min",
              "clamp_max", "hardtanh", "copy"}


# torch's errors for ops it does not define on bool or integer tensors (its kernel's name, its dtype's word)
_BOOL_ERRORS = {
    "neg": (RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                          "invert a mask, use the `~` or `logical_not()` operator instead."),
    "relu": (RuntimeError, "Boolean inputs not supported for relu"),
    "hardtanh": (RuntimeError, "Bool inputs not supported for hardtanh"),
    **{n: (NotImplementedError, f'"{n}_vml_cpu" not implemented for \'Bool\'') for n in ("round", "trunc", "floor", "ceil")},
    "abs": (NotImplementedError, '"abs_cpu" not implemented for \'Bool\''),
}
_FLOAT_KERNELS = {"gelu": "GeluKernelImpl", "gelu_tanh": "GeluKernelImpl", "silu": "silu_cpu", "elu": "elu_cpu",
                  "leaky_relu": "leaky_relu_cpu", "softplus": "softplus_cpu"}
_DTYPE_WORDS = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _refuse_integer(name, np_dtype):
    """Raise torch's error where torch has no kernel for an op on this bool or integer dtype."""
    if np_dtype == np.bool_ and name in _BOOL_ERRORS:
        kind, message = _BOOL_ERRORS[name]
        raise kind(message)
    if name in _FLOAT_KERNELS:
        raise NotImplementedError(f'"{_FLOAT_KERNELS[name]}" not implemented for \'{_DTYPE_WORDS[np_dtype.name]}\'')


def _make_unary(name):
    op = OPS[name]
    forward = op.forward
    keeps_int = name in _KEEPS_INT

    def fn(input, c=0.0, c2=0.0):
        x = input if type(input) is Tensor else _tensor(input)
        if _dtype.is_bfloat16(x._data.dtype):
            return _record(op, _in_float32(lambda a: forward(a, c, c2), x._data), (x,), c, c2)
        if x._data.dtype.kind != "f":
            _refuse_integer(name, x._data.dtype)
            if name == "sign" and x._data.dtype == np.bool_:
                return _new(x._data.copy())
            if keeps_int:
                out = np.asarray(forward(x._data, c, c2))
                return _new(out.astype(np.float32) if out.dtype.kind == "f" else out)  # float bounds: float32
            x = _float(x)
        return _record(op, forward(x._data, c, c2), (x,), c, c2)
    fn.__name__ = name
    fn.__doc__ = f"{name}: elementwise, gradient {op.derivs[0]} ({op.grad_fn})."
    return fn


def _make_binary(name, commutative=False, to_float=False, check=None):
    """`to_float`: the result is floating point for integer and bool operands too (true division, atan2);
    `check(input, other)`: torch's dtype errors, run off the hot path (float operands never need it)."""
    op, ts, st = OPS[name], OPS[name + "_ts"], OPS[name + "_st"]
    forward = op.forward

    def fn(input, other):
        if isinstance(input, Tensor):  # the hot paths first: tensor op tensor, tensor op Python number
            if isinstance(other, Tensor):
                return _tensor_tensor(op, forward, input, other, to_float, check)
            tp = type(other)
            if (tp is float or tp is int) and input._data.dtype.kind == "f":
                return _record(ts, forward(input._data, other), (input,), float(other))
        elif isinstance(other, Tensor):  # Python number op tensor (`1 - y`: create_graph's tanh rule)
            tp = type(input)
            if (tp is float or tp is int) and other._data.dtype.kind == "f":
                sop, c = (ts if commutative else st), float(input)
                return _record(sop, sop.forward(other._data, c, 0.0), (other,), c)
        if check is not None:
            check(input, other)
        if _is_scalar(other):
            x, sop, c = _tensor(input), ts, other
        elif _is_scalar(input):
            x, sop, c = _tensor(other), (ts if commutative else st), input
        else:
            return _tensor_tensor(op, forward, _tensor(input), _tensor(other), to_float, check)
        dt = _dtype.result_type(x._data, c)
        if _dtype.is_bfloat16(dt):
            return _bfloat16_scalar(name, sop, ts, _to_dtype(x, dt), float(c))
        if to_float and dt.kind != "f":
            dt = _dtype.default_float.np
        if dt.kind != "f":  # integer or bool arithmetic: nothing to differentiate
            a, b = (x._data, c) if sop is ts else (c, x._data)
            return _new(np.asarray(_integer(forward, a, b), dtype=dt))
        x = _to_dtype(x, dt)
        c = float(c)
        return _record(sop, sop.forward(x._data, c, 0.0), (x,), c)
    fn.__name__ = name
    fn.__doc__ = f"{name}: broadcasting; gradients {op.derivs[0]} and {op.derivs[1]} ({op.grad_fn})."
    return fn


# torch's CPU kernels round a Python-number operand to bfloat16 first for these (the number is cast to the
# result's dtype); mul and div keep it in float32
_SCALAR_ROUNDED = {"add", "sub", "pow"}


def _bfloat16_scalar(name, sop, ts, x, c):
    """bfloat16 tensor op Python number: in float32, rounded once; `c / x` is reciprocal(x) * c, as torch's
    __rtruediv__ computes it."""
    if name == "div" and sop is not ts:
        return mul(globals()["reciprocal"](x), c)
    if name in _SCALAR_ROUNDED:
        c = float(np.float32(c).astype(x._data.dtype))
    return _record(sop, _in_float32(lambda a: sop.forward(a, c, 0.0), x._data), (x,), c)


for _op in registry.OPS:
    if _op.kind == registry.K_UNARY and not _op.name.endswith(("_ts", "_st")):
        globals()[_op.name] = _make_unary(_op.name)
def _is_bool(v):
    return v._data.dtype == np.bool_ if isinstance(v, Tensor) else isinstance(v, (bool, np.bool_))


def _no_bool_subtraction(input, other):
    if _is_bool(input) and _is_bool(other) and isinstance(input, Tensor) and isinstance(other, Tensor):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if _is_bool(input) or _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")


def _no_bool_power(input, other):
    if isinstance(other, Tensor) and _is_bool(other) and _is_bool(input):
        raise NotImplementedError('"pow" not implemented for \'Bool\'')


mul = _make_binary("mul", commutative=True)
maximum = _make_binary("maximum", commutative=True)
minimum = _make_binary("minimum", commutative=True)
_add = _make_binary("add", commutative=True)  # the operators call these two directly: no alpha to check
_sub = _make_binary("sub", check=_no_bool_subtraction)


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
    if alpha == 1 and alpha is not True:
        return _add(input, other)
    out = _bfloat16_alpha(_add, input, other, alpha)
    return out if out is not None else _add(input, _times_alpha(input, other, alpha))


def sub(input, other, *, alpha=1):
    """sub: input - alpha * other, broadcasting (SubBackward0)."""
    if alpha == 1 and alpha is not True:
        return _sub(input, other)
    out = _bfloat16_alpha(_sub, input, other, alpha)
    return out if out is not None else _sub(input, _times_alpha(input, other, alpha))


def _bfloat16_alpha(fn, input, other, alpha):
    """Two bfloat16 tensors: input +- alpha * other in float32 with alpha rounded to bfloat16, the result
    rounded once, as torch's kernel (None otherwise)."""
    if not (isinstance(input, Tensor) and isinstance(other, Tensor) and _dtype.is_bfloat16(input._data.dtype)
            and input._data.dtype == other._data.dtype) or isinstance(alpha, bool):
        return None
    f32 = np.dtype(np.float32)
    alpha = float(np.asarray(alpha, f32).astype(input._data.dtype))
    a, b = _to_dtype(input, f32), _to_dtype(other, f32)
    return _to_dtype(fn(a, _times_alpha(a, b, alpha)), input._data.dtype)


div = _make_binary("div", to_float=True)
pow = _make_binary("pow", check=_no_bool_power)
atan2 = _make_binary("atan2", to_float=True)
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
    if isinstance(input, Tensor) and input._data.dtype.kind == "u" and min(min_val, max_val) < 0:
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    if isinstance(input, Tensor) and input._data.dtype == np.bool_:
        _refuse_integer("hardtanh", input._data.dtype)
    if isinstance(input, Tensor) and input._data.dtype.kind in "iu":  # torch keeps the integer type
        return globals()["_hardtanh"](input, int(min_val), int(max_val))
    return globals()["_hardtanh"](input, float(min_val), float(max_val))


def softplus(input, beta=1.0, threshold=20.0):
    return globals()["_softplus"](input, float(beta), float(threshold))


for _name in ("leaky_relu", "elu", "hardtanh", "softplus"):
    globals()["_" + _name] = _make_unary(_name)


def _select(cond, a, b):
    """where() in a derivative expression whose condition may be a constant's Python bool (`c == 0`)."""
    if isinstance(cond, (bool, np.bool_)):
        return a if cond else b
    return where(cond, a, b)


def _with_input(v, x):
    """v, recorded as a function of x with a zero derivative (the derivative expressions' `_with_input`, as torch's
    threshold_backward depends on its input): where(True, v, x) gives x a gradient of zeros."""
    if not isinstance(x, Tensor) or not x._requires_grad:
        return v
    v = _tensor(v, like=x)
    shape = broadcast_shape(v.shape, x.shape)
    return where(_new(np.ones(shape, np.bool_)), v, x)


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
        elif _dtype.is_bfloat16(a.dtype) and _is_scalar(b):  # torch rounds the number to bfloat16 first
            b = np.asarray(b, np.float32).astype(a.dtype)
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
