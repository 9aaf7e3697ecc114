"""Elementwise ops: each declared once (its NumPy forward and its derivative expression) beside its front-end;
comparisons and where."""
import math

import numpy as np

from .. import _dtype, _strides, kernels
from ..tensor import (Tensor, _format_strides, _memory_format_arg, _new, as_array, contiguous_format,
                      preserve_format)
from ..tape import _local as _tape_local, made_in_trace
from ._common import (OPS, _array_rule_dtype, _float, _in_float32, _integer, _is_scalar, _record, _tensor,
                      _tensor_tensor, _to_dtype, _two_complement, broadcast_shape, parsed_int, scalar_to_dtype,
                      wrap_integer)
from .. import registry
from ._signatures import number_either, number_other, tensors_only


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
        if _dtype.is_reduced_float(x._data.dtype):
            return _record(op, _in_float32(lambda a: forward(a, c, c2), x._data), (x,), c, c2)
        if not _dtype.is_float(x._data.dtype):
            _refuse_integer(name, x._data.dtype)
            if name == "sign" and x._data.dtype == np.bool_:
                return _new(x._data.copy())
            if keeps_int:
                out = np.asanyarray(forward(x._data, c, c2))
                return _new(out.astype(np.float32) if _dtype.is_float(out.dtype) else out)  # float bounds: float32
            x = _float(x)
        return _record(op, forward(x._data, c, c2), (x,), c, c2)
    fn.__name__ = name
    fn.__doc__ = f"{name}: elementwise, gradient {op.derivs[0]} ({op.grad_fn})."
    return fn


def _make_binary(name, commutative=False, to_float=False, check=None, signatures=None):
    """`to_float`: the result is floating point for integer and bool operands too (true division, atan2);
    `check(input, other)`: torch's dtype errors, run off the hot path (float operands never need it); `signatures`:
    torch's (`_signatures.py`), where it refuses a number operand (None: it takes one anywhere, as `add`)."""
    op, ts, st = OPS[name], OPS[name + "_ts"], OPS[name + "_st"]
    forward = op.forward
    number_other = signatures is None or signatures.takes_number(1)
    number_input = signatures is None or signatures.takes_number(0)

    def fn(input, other):
        if isinstance(input, Tensor):  # the hot paths first: tensor op tensor, tensor op Python number
            if isinstance(other, Tensor):
                return _tensor_tensor(op, forward, input, other, to_float, check)
            tp = type(other)
            if (tp is float or tp is int) and input._data.dtype.char in "fd" and number_other:  # (float16: below)
                return _record(ts, forward(input._data, other), (input,), float(other))
        elif isinstance(other, Tensor):  # Python number op tensor (`1 - y`: create_graph's tanh rule)
            tp = type(input)
            if (tp is float or tp is int) and other._data.dtype.char in "fd" and number_input:
                sop, c = (ts if commutative else st), float(input)
                return _record(sop, sop.forward(other._data, c, 0.0), (other,), c)
        if signatures is not None:  # (torch's argument parser: a number where no signature takes one)
            signatures.check(input, other)
        if check is not None:
            check(input, other)
        for v in (input, other):  # (torch's argument parser: an int outside int64 and uint64 refused)
            if type(v) is int:
                parsed_int(v)
        if _is_scalar(other):
            x, sop, c = _tensor(input), ts, other
        elif _is_scalar(input):
            x, sop, c = _tensor(other), (ts if commutative else st), input
        else:
            return _tensor_tensor(op, forward, _tensor(input), _tensor(other), to_float, check)
        dt = _dtype.result_type(x._data, c)
        if _dtype.is_reduced_float(dt):
            return _bfloat16_scalar(name, sop, ts, _to_dtype(x, dt), float(c))
        if to_float and not _dtype.is_float(dt):
            dt = _dtype.default_float.np
        if not _dtype.is_float(dt):  # integer or bool arithmetic: nothing to differentiate
            if name != "pow":
                c = wrap_integer(c, dt)
            elif sop is ts and type(c) is int:  # torch's pow(Tensor, Scalar): the exponent a Scalar in the dtype
                c = _integer_exponent(c, dt)
            a, b = (x._data, c) if sop is ts else (c, x._data)
            return _new(np.asanyarray(_integer(forward, a, b), dtype=dt))
        x = _to_dtype(x, dt)
        c = float(c)
        return _record(sop, sop.forward(x._data, c, 0.0), (x,), c)
    fn.__name__ = name
    fn.__doc__ = f"{name}: broadcasting; gradients {op.derivs[0]} and {op.derivs[1]} ({op.grad_fn})."
    return fn


def _integer_exponent(c, dt):
    """An int exponent of an integer tensor as torch's pow(Tensor, Scalar) takes it: a negative one refused, another
    converted to the tensor's dtype (`scalar_to_dtype`; from 2 ** 63 up, torch's check names int64_t)."""
    if parsed_int(c) < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if c >= 2 ** 63:
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    return scalar_to_dtype(c, dt)


# torch's CPU kernels round a Python-number operand to float16 / bfloat16 first for these (the number is cast to the
# result's dtype); mul and div keep it in float32
_SCALAR_ROUNDED = {"add", "sub", "pow"}


def _bfloat16_scalar(name, sop, ts, x, c):
    """float16 or bfloat16 tensor op Python number: in float32, rounded once; `c / x` is reciprocal(x) * c, as torch's
    __rtruediv__ computes it."""
    if name == "div" and sop is not ts:
        return mul(globals()["reciprocal"](x), c)
    if name in _SCALAR_ROUNDED:
        c = float(np.float32(c).astype(x._data.dtype))
    return _record(sop, _in_float32(lambda a: sop.forward(a, c, 0.0), x._data), (x,), c)


def _unary(name, forward, dx, grad_fn=None):
    """Declare a unary elementwise op and make its front-end."""
    registry.unary(name, forward, dx, grad_fn)
    return _make_unary(name)


LN2 = math.log(2.0)


def _sigmoid(x):
    """1 / (1 + exp(-x)) as torch's kernel, to full relative precision for negative x too (e / (1 + e) there, with
    e = exp(x)), and without overflow. (0.5 * (tanh(x / 2) + 1) cancelled: float32 sigmoid(-20) was 0, torch's 2e-9,
    and BCELoss after it clamped at 100 with no gradient.)"""
    e = np.exp(-np.abs(x))
    s = 1 / (1 + e)
    return np.where(x >= 0, s, e * s).astype(x.dtype, copy=False)


def _angle(x):
    """torch.angle of real numbers: pi where x < 0, else 0; NaN stays NaN."""
    return np.where(x < 0, x.dtype.type(math.pi), np.where(np.isnan(x), x, x.dtype.type(0)))


def _erf(x):
    erf_array = kernels.module("erf").erf_array  # (Numba: compiled on first use, not at import)
    if x.dtype == np.float16:  # compiled for float32 and float64 only; torch returns float16
        return erf_array(x.astype(np.float32)).astype(np.float16)
    return erf_array(x)


# -- Unary elementwise: one declaration and front-end per op ------------------------------------------
# name = _unary(name, forward (x, c, c2) or a ufunc of x, derivative)
neg = _unary("neg", np.negative, "-g")
exp = _unary("exp", np.exp, "g * y")
log = _unary("log", np.log, "g / x")
sqrt = _unary("sqrt", np.sqrt, "g / (2 * y)")
sin = _unary("sin", np.sin, "g * cos(x)")
cos = _unary("cos", np.cos, "-g * sin(x)")
tan = _unary("tan", np.tan, "g * (1 + y * y)")
tanh = _unary("tanh", np.tanh, "g * (1 - y * y)")
sigmoid = _unary("sigmoid", lambda x, c, c2: _sigmoid(x), "g * y * (1 - y)")
relu = _unary("relu", lambda x, c, c2: np.maximum(x, 0), "_with_input(where(y <= 0, 0 * g, g), y)")  # NaN passes g
abs = _unary("abs", np.abs, "g * sign(x)")
reciprocal = _unary("reciprocal", np.reciprocal, "-g * y * y")
square = _unary("square", lambda x, c, c2: np.square(x.astype(np.int64) if x.dtype == np.bool_ else x), "2 * g * x",
                grad_fn="PowBackward0")
rsqrt = _unary("rsqrt", lambda x, c, c2: 1 / np.sqrt(x), "-0.5 * g * y * y * y")
log1p = _unary("log1p", np.log1p, "g / (1 + x)", grad_fn="Log1PBackward0")
expm1 = _unary("expm1", np.expm1, "g * (y + 1)")
log2 = _unary("log2", np.log2, f"g / (x * {LN2!r})")
exp2 = _unary("exp2", np.exp2, f"g * y * {LN2!r}")
asin = _unary("asin", np.arcsin, "g / sqrt(1 - x * x)")
acos = _unary("acos", np.arccos, "-g / sqrt(1 - x * x)")
atan = _unary("atan", np.arctan, "g / (1 + x * x)")
sinh = _unary("sinh", np.sinh, "g * cosh(x)")
cosh = _unary("cosh", np.cosh, "g * sinh(x)")
erf = _unary("erf", lambda x, c, c2: _erf(x), "g * 1.1283791670955126 * exp(-x * x)")
sign = _unary("sign", lambda x, c, c2: np.nan_to_num(np.sign(x)), "0 * g")  # sign(nan) is 0
floor = _unary("floor", np.floor, "0 * g")
angle = _unary("angle", lambda x, c, c2: _angle(x), "0 * g")  # (of real numbers: 0 or pi, NaN kept)
ceil = _unary("ceil", np.ceil, "0 * g")
round = _unary("round", lambda x, c, c2: np.round(x), "0 * g")
trunc = _unary("trunc", np.trunc, "0 * g")
gelu = _unary("gelu", lambda x, c, c2: 0.5 * x * (1 + _erf(x * 0.7071067811865476)),
              "g * (0.5 * (1 + erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * exp(-0.5 * x * x))")
silu = _unary("silu", lambda x, c, c2: x * _sigmoid(x), "g * sigmoid(x) * (1 + x * (1 - sigmoid(x)))")
# c = beta, c2 = threshold: linear above threshold, as torch's softplus
_softplus = _unary("softplus", lambda x, c, c2: np.where(x * c > c2, x, np.logaddexp(0, c * x) / c),
                   "where(x * c > c2, g, g * sigmoid(c * x))")
_leaky_relu = _unary("leaky_relu", lambda x, c, c2: np.where(x > 0, x, x * c),
                     "_with_input(where(x > 0, g, g * c), x)")
# (at 0 the slope c, a constant there, so the second derivative is 0 where torch's elu_double_backward masks x < 0;
# NaN in, NaN out: torch's gradient at NaN is its vector lanes' NaN or its scalar tail's 1, by the CPU's width)
_elu = _unary("elu", lambda x, c, c2: np.where(x > 0, x, c * np.expm1(np.minimum(x, 0))),
              "where(x > 0, g, where(x < 0, g * (y + c), g * (c + 0 * x)))")
_hardtanh = _unary("hardtanh", lambda x, c, c2: np.clip(x, c, c2),
                   "where((x <= c) | (x >= c2), 0 * g, g + 0 * x)")  # NaN in, NaN out
_clamp = _unary("clamp", lambda x, c, c2: np.minimum(np.maximum(x, c), c2), "where((x >= c) & (x <= c2), g, 0 * g)",
                grad_fn="ClampBackward1")
copy = _unary("copy", lambda x, c, c2: x.copy(), "g", grad_fn="CloneBackward0")


# -- Binary elementwise (broadcasting) ---------------------------------------------------------------
def _power(a, b):
    """x ** 3 as x * x * x, as torch computes it: libm's pow takes 16x longer for a negative base (61 against
    3.7 us for 1,000 float64), and NumPy special-cases only 2, 0.5 and -1."""
    if type(b) in (int, float) and b == 3 and a.dtype.kind == "f":
        return a * a * a
    if type(b) in (int, float) and b == -0.5 and a.dtype.kind == "f":
        return 1 / np.sqrt(a)  # torch's rsqrt: -inf at -0.0 (pow gives +inf), so x ** 0.5's gradient there too
    if type(b) in (int, float) and b != 2 and a.dtype.kind == "f" and -2.0 ** 53 < b < 2.0 ** 53 and b == int(b):
        return _integer_power(a, b)
    return np.power(a, b)


def _integer_power(a, n):
    """a ** n for an integer n, as +-|a| ** n: libm's pow takes a slow path for every negative base (x ** 4 of
    2,000 float32 in [-pi, pi]: 190 us against 2.3 for |x| ** 4). pow(x, n) is that sign times pow(|x|, n);
    float32 and float16 are raised in float64 and rounded once, as accurate as libm's (0.5 ulp), where NumPy's
    vectorised float32 pow of a positive base is off by up to 1 ulp."""
    if n == 1:
        return a.copy()
    out = np.power(np.abs(a) if a.itemsize == 8 else np.abs(a).astype(np.float64), n)
    if out.dtype != a.dtype:
        out = out.astype(a.dtype)
    if n % 2:
        if type(out) is not np.ndarray:  # (a 0-d a: NumPy's scalar, which out= refuses)
            return np.copysign(out, a)
        np.copysign(out, a, out=out)
    return out


registry.binary("add", np.add, "g", "g")
registry.binary("sub", np.subtract, "g", "-g", st="RsubBackward1")
registry.binary("mul", np.multiply, "g * b", "g * a")
# (the divisor's gradient from the operands, torch's -g * ((a / b) / b): not from the result, which an in-place op on
# a view of it may change, as torch lets it)
registry.binary("div", np.true_divide, "g / b", "-g * (a / b / b)")
registry.binary("pow", _power, "g * _select(b == 0, 0 * b, b * a ** (b - 1))",  # torch: 0 for x ** 0, even at 0, NaN
                "where((a == 0) & (b >= 0), 0 * g, g * y * log(a))", grad_fn="PowBackward1", ts="PowBackward0",
                st="PowBackward2")
# a NaN operand passes g to both sides, as torch's (its rule masks only where the other side is larger)
registry.binary("maximum", np.maximum, "where(a < b, 0 * g, where(a == b, 0.5 * g, g))",
                "where(b < a, 0 * g, where(a == b, 0.5 * g, g))")
registry.binary("minimum", np.minimum, "where(a > b, 0 * g, where(a == b, 0.5 * g, g))",
                "where(b > a, 0 * g, where(a == b, 0.5 * g, g))")
registry.binary("atan2", np.arctan2,  # torch: 0 at (0, 0)
                "where((a == 0) & (b == 0), 0 * g, g * b / (a * a + b * b))",
                "where((a == 0) & (b == 0), 0 * g, -g * a / (a * a + b * b))")

# Elementwise additions. tanh is not a kernel function: 1 + tanh(u) = 2 * sigmoid(2u).
_GELU_S = "sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))"
gelu_tanh = _unary("gelu_tanh",
                   lambda x, c, c2: 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))),
                   f"g * ({_GELU_S} * (1 + x * (1 - {_GELU_S}) * 1.5957691216057308 * (1 + 0.134145 * x * x)))",
                   grad_fn="GeluBackward0")
clamp_min = _unary("clamp_min", lambda x, c, c2: np.maximum(x, c), "where(x >= c, g, 0 * g)",
                   grad_fn="ClampMinBackward0")
clamp_max = _unary("clamp_max", lambda x, c, c2: np.minimum(x, c), "where(x <= c, g, 0 * g)",
                   grad_fn="ClampMaxBackward0")
round_decimals = _unary("round_decimals", lambda x, c, c2: np.round(x, int(c)), "0 * g", grad_fn="RoundBackward1")
log_sigmoid = _unary("log_sigmoid", lambda x, c, c2: -np.logaddexp(0, -x), "g * sigmoid(-x)",
                     grad_fn="LogSigmoidBackward0")
# tensor (op) number, as torch's C++ code computes it (its Python operators give the *Backward0 names)
_div_scalar = _unary("_div_scalar", lambda x, c, c2: x / c, "g / c", grad_fn="DivBackward1")
_mul_scalar = _unary("_mul_scalar", lambda x, c, c2: x * c, "g * c", grad_fn="MulBackward1")


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
_MAXIMUM, _MINIMUM = tensors_only("maximum"), tensors_only("minimum")
maximum = _make_binary("maximum", commutative=True, signatures=_MAXIMUM)
minimum = _make_binary("minimum", commutative=True, signatures=_MINIMUM)
# Tensor's methods: the same ops, with the method's words where torch refuses a number (`t.maximum(2)`: position 1)
_maximum_method = _make_binary("maximum", commutative=True, signatures=_MAXIMUM.as_method())
_minimum_method = _make_binary("minimum", commutative=True, signatures=_MINIMUM.as_method())
_add = _make_binary("add", commutative=True)  # the operators call these two directly: no alpha to check
_sub = _make_binary("sub", check=_no_bool_subtraction)


def _times_alpha(input, other, alpha, sign=1):
    """alpha * other for add and sub (sign -1), with torch's checks of alpha against the result's dtype: an integer
    result's alpha is a Scalar in its dtype (sub's negated first, as torch's sub is add of -alpha), an int other
    wrapped into it."""
    dt = _dtype.result_type(*(x._data if isinstance(x, Tensor) else x for x in (input, other)))
    kind = dt.kind
    if isinstance(alpha, bool):
        if kind != "b":
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif kind in "biu" and not isinstance(alpha, int):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if kind in "iu" and type(alpha) is int:
        # (torch's error for one out of range; sub's -alpha is negated in int64, wrapping)
        scalar_to_dtype(int(_two_complement(-parsed_int(alpha), np.dtype(np.int64))) if sign < 0 else alpha, dt)
        alpha = _two_complement(alpha, dt)
        other = wrap_integer(other, dt)
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
    return out if out is not None else _sub(input, _times_alpha(input, other, alpha, -1))


def _bfloat16_alpha(fn, input, other, alpha):
    """Two float16 or bfloat16 tensors: input +- alpha * other in float32 with alpha rounded to their dtype, the result
    rounded once, as torch's kernel (None otherwise)."""
    if not (isinstance(input, Tensor) and isinstance(other, Tensor) and _dtype.is_reduced_float(input._data.dtype)
            and input._data.dtype == other._data.dtype) or isinstance(alpha, bool):
        return None
    f32 = np.dtype(np.float32)
    alpha = float(np.asanyarray(alpha, f32).astype(input._data.dtype))
    a, b = _to_dtype(input, f32), _to_dtype(other, f32)
    return _to_dtype(fn(a, _times_alpha(a, b, alpha)), input._data.dtype)


div = _make_binary("div", to_float=True)
_pow = _make_binary("pow", check=_no_bool_power, signatures=number_either("pow", "exponent"))


def pow(input, exponent):
    """input ** exponent, with torch's argument names (`torch.pow(x, exponent=2)`); `**` calls _pow itself."""
    return _pow(input, exponent)
_ATAN2 = tensors_only("atan2")
atan2 = _make_binary("atan2", to_float=True, signatures=_ATAN2)
_atan2_method = _make_binary("atan2", to_float=True, signatures=_ATAN2.as_method())
_ARCTAN2 = tensors_only("arctan2")  # (torch's alias names itself in its messages)
arctan2 = _make_binary("atan2", to_float=True, signatures=_ARCTAN2)
arctan2.__name__ = "arctan2"
_arctan2_method = _make_binary("atan2", to_float=True, signatures=_ARCTAN2.as_method())


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
    lo, hi = -math.inf, math.inf
    if isinstance(input, Tensor) and input._data.dtype.kind in "iu" and type(min) in (int, bool, type(None)) \
            and type(max) in (int, bool, type(None)):  # an integer tensor clamped to integers stays integer, as torch's
        info = np.iinfo(input._data.dtype)
        lo, hi = info.min, info.max
    return _clamp(input, lo if min is None else _bound(min, input), hi if max is None else _bound(max, input))


def _bound(v, input=None):
    """A Python int (or bool) bound of an integer tensor in its dtype, as torch converts it (so the dtype stays, and
    `clamp(uint8, min=-1)` clamps to 255; out of range, torch's error); another bound a float."""
    if type(v) in (int, bool) and isinstance(input, Tensor) and input._data.dtype.kind in "iu":
        return scalar_to_dtype(v, input._data.dtype)
    return v if type(v) is int else float(v)


clip = clamp


def leaky_relu(input, negative_slope=0.01):
    return _leaky_relu(input, float(negative_slope))


def elu(input, alpha=1.0):
    return _elu(input, float(alpha))


def hardtanh(input, min_val=-1.0, max_val=1.0):
    if isinstance(input, Tensor) and input._data.dtype.kind == "u" and min(min_val, max_val) < 0:
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    if isinstance(input, Tensor) and input._data.dtype == np.bool_:
        _refuse_integer("hardtanh", input._data.dtype)
    if isinstance(input, Tensor) and input._data.dtype.kind in "iu":  # torch keeps the integer type
        return _hardtanh(input, int(min_val), int(max_val))
    return _hardtanh(input, float(min_val), float(max_val))


def softplus(input, beta=1.0, threshold=20.0):
    return _softplus(input, float(beta), float(threshold))


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
    return where(made_in_trace(_new(np.ones(shape, np.bool_))), v, x)  # (a constant of a compiled trace)


def clone(input, *, memory_format=None):
    x = _tensor(input)
    fmt = _memory_format_arg("clone", memory_format)
    t = copy(x)
    if fmt is None or fmt is preserve_format:
        if x._strides is not None and _strides.is_dense(x._data.shape, x._strides):
            t._strides = x._strides  # torch's clone keeps a permuted layout
    elif fmt is not contiguous_format:  # channels_last(_3d): what stride() reports (values stay in C order)
        t._strides = _strides.normal(x._data.shape, _format_strides(x._data.shape, fmt))
    return t


def true_divide(input, other):
    return div(input, other)


def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub() received an invalid combination of arguments - got ({type(input).__name__}, "
                        f"{type(other).__name__}), but expected one of:\n * (Tensor input, Tensor other, *, Number "
                        f"alpha = 1)\n * (Tensor input, Number other, Number alpha = 1)\n")
    return sub(other, input, alpha=alpha)


# -- comparisons and logic: no gradient, bool results --------------------------------------------------
def _compare(np_fn, signatures=None):
    """`signatures`: torch's (`_signatures.py`), checked where an operand is not a Tensor (None: not checked)."""
    number_other = signatures is None or signatures.takes_number(1)

    def fn(input, other):
        if isinstance(input, Tensor):
            a = input._data
            if not number_other and not isinstance(other, Tensor):
                signatures.check(input, other)
        else:
            if signatures is not None:
                signatures.check(input, other)
            a = as_array(input)
        b = other._data if isinstance(other, Tensor) else other
        if isinstance(b, Tensor) or isinstance(b, np.ndarray):
            broadcast_shape(np.shape(a), np.shape(b))
        elif _dtype.is_bfloat16(a.dtype) and _is_scalar(b):  # torch rounds the number to bfloat16 first
            b = np.asanyarray(b, np.float32).astype(a.dtype)
        elif type(b) is int and a.dtype.kind in "iu":
            b = wrap_integer(b, a.dtype)
        out = _new(np.asanyarray(np_fn(a, b)))
        if _tape_local.tracing is not None:  # (tapegrad.compile: a comparison a branch may read)
            _tape_local.tape.record_compare(np_fn, input, other, a, b, out)
        return out
    return fn


_COMPARISONS = (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                ("ge", np.greater_equal))
eq, ne, lt, le, gt, ge = (_compare(f, number_other(n)) for n, f in _COMPARISONS)
# torch's aliases name themselves in its messages (`torch.greater(2, t)`: "greater() received ...")
greater, less, greater_equal, less_equal, not_equal = (
    _compare(dict(_COMPARISONS)[n], number_other(alias)) for alias, n in (
        ("greater", "gt"), ("less", "lt"), ("greater_equal", "ge"), ("less_equal", "le"), ("not_equal", "ne")))
_LOGICAL = (("logical_and", np.logical_and), ("logical_or", np.logical_or), ("logical_xor", np.logical_xor))
logical_and, logical_or, logical_xor = (_compare(f, tensors_only(n)) for n, f in _LOGICAL)
_logical_and_method, _logical_or_method, _logical_xor_method = (_compare(f, tensors_only(n).as_method())
                                                                for n, f in _LOGICAL)
# (a derivative expression's `&` and `|` of a mask and a constant's Python bool: create_graph.py)
_logical_and_any, _logical_or_any = _compare(np.logical_and), _compare(np.logical_or)


def _bitwise(np_fn, name):
    """A bitwise op of integer or bool operands; floating ones raise torch's NotImplementedError for their (promoted)
    dtype."""
    op = _compare(np_fn)
    signatures = number_either(name, out_for_number_self=False)

    def fn(input, other):
        if not isinstance(input, Tensor):  # (a number first: torch's parser takes it before a Tensor only)
            signatures.check(input, other)
        dt = _dtype.result_type(input._data if isinstance(input, Tensor) else as_array(input),
                                other._data if isinstance(other, Tensor) else other)
        if dt.kind not in "biu":
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype.scalar_type_name(dt)}'")
        out = op(input, other)  # (NumPy's promotion: a 0-d int64 with int32 elements gives int64, torch's int32)
        return out if out._data.dtype == dt else _new(out._data.astype(dt))
    fn.__name__ = name
    return fn


bitwise_and, bitwise_or, bitwise_xor = (_bitwise(f, n) for f, n in ((np.bitwise_and, "bitwise_and"),
                                                                    (np.bitwise_or, "bitwise_or"),
                                                                    (np.bitwise_xor, "bitwise_xor")))


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


def _vjp_where(ctx, g, inputs, out):
    cond, a, b = inputs
    return None, where(cond, g, 0.0), where(cond, 0.0, g)


def _where_arrays(ctx, g, inputs, out, wanted):
    cond = inputs[0]
    if not _array_rule_dtype(g):
        return None
    return None, np.where(cond, g, 0.0) if wanted[1] else None, np.where(cond, 0.0, g) if wanted[2] else None


registry.python("where", "WhereBackward0", lambda ctx, cond, a, b: np.where(cond, a, b), _vjp_where,
                array_vjp=_where_arrays)


# Tensor's methods for this module's front-ends (grep `Tensor.<name> =`)
Tensor.__add__ = Tensor.__radd__ = _add
Tensor.__sub__ = _sub
Tensor.__rsub__ = lambda self, other: _sub(other, self)
Tensor.__rtruediv__ = lambda self, other: div(other, self)
Tensor.__rpow__ = lambda self, other: pow(other, self)
Tensor.where = lambda self, condition, other: where(condition, self, other)
Tensor.__mul__ = mul
Tensor.__rmul__ = mul
Tensor.__truediv__ = div
Tensor.__pow__ = _pow
Tensor.__neg__ = neg
Tensor.__abs__ = abs
Tensor.__eq__ = eq
Tensor.__ne__ = ne
Tensor.__lt__ = lt
Tensor.__le__ = le
Tensor.__gt__ = gt
Tensor.__ge__ = ge
Tensor.__and__ = bitwise_and
Tensor.__or__ = bitwise_or
Tensor.__xor__ = bitwise_xor
Tensor.__invert__ = logical_not
Tensor.add = add
Tensor.sub = sub
Tensor.subtract = sub
Tensor.mul = mul
Tensor.multiply = mul
Tensor.div = div
Tensor.divide = div
Tensor.true_divide = div
Tensor.pow = pow
Tensor.neg = neg
Tensor.negative = neg
Tensor.abs = abs
Tensor.exp = exp
Tensor.log = log
Tensor.sqrt = sqrt
Tensor.sin = sin
Tensor.cos = cos
Tensor.tan = tan
Tensor.tanh = tanh
Tensor.sigmoid = sigmoid
Tensor.relu = relu
Tensor.reciprocal = reciprocal
Tensor.square = square
Tensor.rsqrt = rsqrt
Tensor.log1p = log1p
Tensor.expm1 = expm1
Tensor.log2 = log2
Tensor.exp2 = exp2
Tensor.asin = asin
Tensor.acos = acos
Tensor.atan = atan
Tensor.arcsin = asin
Tensor.arccos = acos
Tensor.arctan = atan
Tensor.sinh = sinh
Tensor.cosh = cosh
Tensor.erf = erf
Tensor.sign = sign
Tensor.floor = floor
Tensor.angle = angle
Tensor.ceil = ceil
Tensor.trunc = trunc
Tensor.atan2 = _atan2_method
Tensor.maximum = _maximum_method
Tensor.minimum = _minimum_method
Tensor.clone = clone
Tensor.eq = eq
Tensor.ne = ne
Tensor.lt = lt
Tensor.le = le
Tensor.gt = gt
Tensor.ge = ge
Tensor.logical_not = logical_not
Tensor.logical_and = _logical_and_method
Tensor.logical_or = _logical_or_method
Tensor.isnan = isnan
Tensor.isinf = isinf
Tensor.isfinite = isfinite
Tensor.equal = equal
Tensor.rsub = rsub
Tensor.logical_xor = _logical_xor_method
Tensor.greater = gt
Tensor.less = lt
Tensor.greater_equal = ge
Tensor.less_equal = le
Tensor.not_equal = ne
Tensor.arctan2 = _arctan2_method
Tensor.fmax = _maximum_method
Tensor.fmin = _minimum_method



registry.declare_derived()  # (create_graph's fused derivative rows: their codes next, before any other module's ops)

__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]
