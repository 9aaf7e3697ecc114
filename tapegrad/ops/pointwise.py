"""torch's smaller pointwise functions: fmod and remainder, hypot, logaddexp, the inverse hyperbolic functions
(each a Python row with torch's derivative, where no composition gives torch's values), the rest composed of
recorded ops; bitwise and integer functions (no gradient); torch's dtype helpers."""
import collections

import numpy as np

from .. import _dtype, registry
from ..grad_mode import _state as _grad_state
from ..tape import traced_value
from ..tensor import Tensor, _new
from ._common import (OPS, _array_rule_dtype, _is_scalar, _record, _sum_to_np, _tensor, _to_dtype,
                      broadcast_shape, wrap_integer)
from .elementwise import abs, acos, arctan2, asin, atan, ge, isnan, le, mul, neg, pow, sign, trunc, where
from ._signatures import number_either, number_other, tensors_only
from .elementwise import div as _true_div
from .reduce import sum_to_shape

__all__ = ["absolute", "acosh", "div", "divide", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "asinh",
           "atanh", "bitwise_left_shift", "bitwise_not", "bitwise_right_shift", "can_cast", "copysign", "deg2rad",
           "fix", "float_power", "floor_divide", "fmax", "fmin", "fmod", "frac", "frexp", "gcd", "heaviside", "hypot",
           "imag", "isneginf", "isposinf", "isreal", "lcm", "ldexp", "logaddexp", "logaddexp2", "nan_to_num", "negative",
           "nextafter", "positive", "promote_types", "rad2deg", "real", "remainder", "result_type", "sgn", "signbit"]

# in-place forms made by methods.py (comparisons written into self keep self's dtype, as torch's)
INPLACE = ("fmod", "remainder", "floor_divide", "copysign", "frac", "fix", "sgn", "heaviside", "nan_to_num",
           "deg2rad", "rad2deg", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "arcsin", "arccos",
           "arctan", "arctan2", "hypot", "ldexp", "nextafter", "gcd", "lcm", "bitwise_and", "bitwise_or",
           "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "absolute", "negative", "eq",
           "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal",
           "logical_and", "logical_or", "logical_xor", "logical_not")

negative, absolute, fix = neg, abs, trunc
arcsin, arccos, arctan = asin, acos, atan

# torch's signatures of this module's two-operand functions (`_signatures.py`), by the name each gives `_operands`: where
# torch refuses a number operand, they are checked off the hot path (the function form: a number first is refused
# unless a signature has `Number self`)
_SIGNATURES = {
    **{n: tensors_only(n) for n in ("hypot", "logaddexp", "logaddexp2", "nextafter", "gcd", "lcm", "fmax", "fmin",
                                    "ldexp")},
    "heaviside": tensors_only("heaviside", "values"),
    "fmod": number_other("fmod"), "copysign": number_other("copysign"),
    "remainder": number_either("remainder", out_for_number_self=False),
    "lshift": number_either("bitwise_left_shift", out_for_number_self=False),
    "rshift": number_either("bitwise_right_shift", out_for_number_self=False),
    "float_power": number_either("float_power", "exponent"),
}


def _check_numbers(name, input, other):
    """torch's TypeError where its signatures of `name` take no number at a number operand's place."""
    _SIGNATURES[name].check(input, other)


def _method(fn, name):
    """Tensor's method of a function torch's takes Tensors only: torch's words for a number (`t.gcd(2)`: position 1)."""
    signatures = _SIGNATURES[name].as_method()

    def method(self, other):
        if not isinstance(other, Tensor):
            signatures.check(self, other)
        return fn(self, other)
    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


# -- Python rows: NumPy forward, torch's derivative -------------------------------------------------------------------
def _operands(input, other, name):
    """Both operands as Tensors in their result dtype (a Python number as a constant, an int wrapped into an integer
    dtype as torch's: `wrap_integer`), and that dtype."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        if name in _SIGNATURES:
            _SIGNATURES[name].check(input, other)
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"{name}() received an invalid combination of arguments - got ({type(input).__name__}, "
                            f"{type(other).__name__})")
    ia = input._data if isinstance(input, Tensor) else input
    ib = other._data if isinstance(other, Tensor) else other
    dt = _dtype.result_type(ia, ib)
    broadcast_shape(np.shape(ia), np.shape(ib))
    a = _to_dtype(input, dt) if isinstance(input, Tensor) else _new(np.asanyarray(wrap_integer(input, dt), dt))
    b = _to_dtype(other, dt) if isinstance(other, Tensor) else _new(np.asanyarray(wrap_integer(other, dt), dt))
    return a, b, dt


def _binary(name, np_fn, integer_check=None):
    """The front-end of a binary Python row: promotion as torch's; integer results unrecorded (integer_check: the
    op's integer errors), or torch's error where it has no integer kernel (integer_check None)."""
    def fn(input, other):
        a, b, dt = _operands(input, other, name)
        if not _dtype.is_float(dt):
            if integer_check is None or dt == np.bool_:
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype.scalar_type_name(dt)}'")
            integer_check(b._data)
            return _new(np.asanyarray(np_fn(a._data, b._data), dt))
        with np.errstate(all="ignore"):
            out = np.asanyarray(np_fn(a._data, b._data))
        if not isinstance(other, Tensor) and name in _SCALAR_ROWS:
            return _record(OPS[name + "_scalar"], out, (a,), aux=b._data)  # (torch's node for a number operand)
        return _record(OPS[name], out, (a, b))
    fn.__name__ = name
    return fn


def _no_integer_zero(b):
    if b.dtype.kind in "iub" and np.any(b == 0):
        raise RuntimeError("ZeroDivisionError")


def _declare_binary(name, grad_fn, np_fn, da, db):
    """A binary row whose gradients are `g * da(a, b, out)` and `g * db(a, b, out)`; da and db are written once, on
    Tensors and on arrays alike (operators only), and summed down to each input's broadcast shape."""
    def vjp(ctx, g, inputs, out):
        a, b = inputs
        return sum_to_shape(g * da(a, b, out), a.shape), sum_to_shape(g * db(a, b, out), b.shape)

    def array_vjp(ctx, g, inputs, out, wanted):
        a, b = inputs
        if not _array_rule_dtype(g, a, b):
            return None
        with np.errstate(all="ignore"):
            return (_sum_to_np(g * da(a, b, out), a.shape) if wanted[0] else None,
                    _sum_to_np(g * db(a, b, out), b.shape) if wanted[1] else None)
    registry.python(name, grad_fn, lambda ctx, a, b: np_fn(a, b), vjp, array_vjp=array_vjp)


def _trunc_div(a, b):
    return (a / b).trunc() if isinstance(a, Tensor) else np.trunc(a / b)


def _floor_div(a, b):
    """torch's div(a, b, rounding_mode="floor"), which its remainder rule uses: Python's //, computed from fmod, so
    exact where floor(a / b) is not (0.25 // 0.001 is 249); a constant (floor's derivative is 0)."""
    with np.errstate(all="ignore"):
        if isinstance(a, Tensor) or isinstance(b, Tensor):
            return _new(np.floor_divide(a._data if isinstance(a, Tensor) else a, b._data if isinstance(b, Tensor) else b))
        return np.floor_divide(a, b)


def _exp(x):
    return x.exp() if isinstance(x, Tensor) else np.exp(x)


def _exp2(x):
    return x.exp2() if isinstance(x, Tensor) else np.exp2(x)


def _declare_scalar(name, grad_fn, np_fn):
    """The row of `tensor op number` whose gradient is g (the number, a 0-d array, in the row's aux)."""
    def vjp(ctx, g, inputs, out):
        return (g,)

    def array_vjp(ctx, g, inputs, out, wanted):
        return (g,)
    registry.python(name, grad_fn, lambda ctx, a: np_fn(a, ctx), vjp, array_vjp=array_vjp)


def _remainder_values(a, b):
    """torch's remainder: NumPy's, but a zero result keeps fmod's sign (the dividend's), where NumPy gives it the
    divisor's (ATen's kernel: fmod, plus b where b's and the remainder's signs differ)."""
    out = np.remainder(a, b)
    if out.dtype.kind == "f":
        zero = out == 0
        if zero.any():
            out = np.where(zero, np.copysign(out, a).astype(out.dtype, copy=False), out)
    return out


# torch's derivatives.yaml: fmod's other gets -g * trunc(a / b), remainder's -g * floor(a / b)
_SCALAR_ROWS = ("fmod", "remainder")  # (ops with a row of their own for a number operand)
_declare_scalar("fmod_scalar", "FmodBackward0", np.fmod)
_declare_scalar("remainder_scalar", "RemainderBackward0", _remainder_values)
_declare_binary("fmod", "FmodBackward1", np.fmod, lambda a, b, y: 1, lambda a, b, y: -_trunc_div(a, b))
_declare_binary("remainder", "RemainderBackward1", _remainder_values, lambda a, b, y: 1, lambda a, b, y: -_floor_div(a, b))
_declare_binary("hypot", "HypotBackward0", np.hypot, lambda a, b, y: a / y, lambda a, b, y: b / y)
_declare_binary("logaddexp", "LogaddexpBackward0", np.logaddexp, lambda a, b, y: 1 / (1 + _exp(b - a)),
                lambda a, b, y: 1 / (1 + _exp(a - b)))
_declare_binary("logaddexp2", "Logaddexp2Backward0", np.logaddexp2, lambda a, b, y: 1 / (1 + _exp2(b - a)),
                lambda a, b, y: 1 / (1 + _exp2(a - b)))

_fmod = _binary("fmod", np.fmod, integer_check=_no_integer_zero)
_remainder = _binary("remainder", _remainder_values, integer_check=_no_integer_zero)
hypot = _binary("hypot", np.hypot)
logaddexp = _binary("logaddexp", np.logaddexp)
logaddexp2 = _binary("logaddexp2", np.logaddexp2)


def fmod(input, other):
    """C's fmod: the remainder of truncating division (its sign is input's)."""
    return _fmod(input, other)


def _without_derivative(out, inputs, name):
    """out (a Tensor of values) as torch returns an op it has no derivative for: requiring grad where an input does
    (grad_fn NotImplemented), a backward through it raising torch's error (the no_derivative row)."""
    if _grad_state.enabled and _dtype.is_float(out._data.dtype) and any(
            isinstance(t, Tensor) and t._requires_grad for t in inputs):
        return _record(OPS["no_derivative"], out._data, tuple(t for t in inputs if isinstance(t, Tensor)), aux=name)
    return out


def remainder(input, other):
    """Python's modulus: the remainder of flooring division (its sign is other's). torch.remainder(number, tensor)
    has no derivative in torch: its result requires grad, and a backward through it raises torch's error."""
    if not isinstance(input, Tensor):
        _check_numbers("remainder", input, other)
        return _without_derivative(_remainder(input, other.detach() if isinstance(other, Tensor) else other), (other,),
                                   "remainder")
    return _remainder(input, other)


for _name in ("hypot", "logaddexp", "logaddexp2"):
    globals()[_name].__doc__ = f"torch.{_name}: broadcasting, torch's promotion and derivative."


# -- unary Python rows ------------------------------------------------------------------------------------------------
def _declare_unary(name, grad_fn, np_fn, dx):
    """A unary float row whose gradient is `g * dx(x)` (dx written in operators, on Tensors and arrays alike)."""
    def vjp(ctx, g, inputs, out):
        return (g * dx(inputs[0]),)

    def array_vjp(ctx, g, inputs, out, wanted):
        if not _array_rule_dtype(g, inputs[0]):
            return None
        with np.errstate(all="ignore"):
            return (g * dx(inputs[0]),)
    registry.python(name, grad_fn, lambda ctx, x: np_fn(x), vjp, array_vjp=array_vjp)

    def fn(input):
        x = _tensor(input)
        if not _dtype.is_float(x._data.dtype):
            x = _new(x._data.astype(_dtype.default_float.np))
        with np.errstate(all="ignore"):
            return _record(OPS[name], np.asanyarray(np_fn(x._data)), (x,))
    fn.__name__ = name
    fn.__doc__ = f"torch.{name}: elementwise; integer inputs give the default float dtype."
    return fn


def _rsqrt(v):
    return v.rsqrt() if isinstance(v, Tensor) else 1 / np.sqrt(v)


# torch's derivatives.yaml: asinh (x^2 + 1)^-1/2, acosh (x^2 - 1)^-1/2, atanh 1 / (1 - x^2)
asinh = arcsinh = _declare_unary("asinh", "AsinhBackward0", np.arcsinh, lambda x: _rsqrt(x * x + 1))
acosh = arccosh = _declare_unary("acosh", "AcoshBackward0", np.arccosh, lambda x: _rsqrt(x * x - 1))
atanh = arctanh = _declare_unary("atanh", "AtanhBackward0", np.arctanh, lambda x: 1 / (1 - x * x))


# -- compositions ---------------------------------------------------------------------------------------------------
def _floating(x):
    """x (a Tensor) in the default float dtype if it is bool or integer, as torch's float-only functions."""
    return x if _dtype.is_float(x._data.dtype) else _new(x._data.astype(_dtype.default_float.np))


def deg2rad(input):
    """input * (pi / 180), as torch multiplies (integer inputs give the default float dtype)."""
    return _floating(_tensor(input)) * 0.017453292519943295


def rad2deg(input):
    """input * (180 / pi), as torch multiplies (integer inputs give the default float dtype)."""
    return _floating(_tensor(input)) * 57.29577951308232


def frac(input):
    """input - trunc(input) (gradient g, as torch's)."""
    x = _tensor(input)
    if not _dtype.is_float(x._data.dtype):
        raise NotImplementedError(f"\"frac_cpu\" not implemented for '{_dtype.scalar_type_name(x._data.dtype)}'")
    return x - x.trunc()


def sgn(input):
    """sign(input) for real tensors (torch's sgn is x / |x| for complex ones, which tapegrad lacks)."""
    return sign(input)


def copysign(input, other):
    """|input| with other's sign bit (so -0.0 counts as negative); other gets no gradient (torch's is zero)."""
    if not isinstance(input, Tensor):
        _check_numbers("copysign", input, other)
    x = _tensor(input)
    o = other._data if isinstance(other, Tensor) else np.asanyarray(other)
    dt = _dtype.result_type(x._data, other._data if isinstance(other, Tensor) else other)
    if not _dtype.is_float(dt):
        dt = _dtype.default_float.np
    x = _to_dtype(x, dt)
    negative_bit = _new(np.signbit(o))  # (where broadcasts it)
    magnitude = x.abs()
    return where(negative_bit, -magnitude, magnitude)


def signbit(input):
    """Whether the sign bit is set (True for -0.0), bool."""
    return _new(np.signbit(_tensor(input)._data))


def isneginf(input):
    return _new(np.isneginf(_tensor(input)._data))


def isposinf(input):
    return _new(np.isposinf(_tensor(input)._data))


def isreal(input):
    """True everywhere: tapegrad has no complex dtypes."""
    return _new(np.ones(_tensor(input)._data.shape, np.bool_))


def real(input):
    """input itself: tapegrad's tensors are real (torch returns the same tensor for them)."""
    return _tensor(input)


def imag(input):
    """torch's error: a real tensor has no imaginary part (tapegrad has no complex dtypes)."""
    _tensor(input)
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def positive(input):
    """input itself (torch returns the same tensor)."""
    x = _tensor(input)
    if x._data.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced (by default with 0 and the dtype's largest and lowest finite values); the
    gradient passes where input is finite, as torch's."""
    x = _tensor(input)
    a = x._data
    if not _dtype.is_float(a.dtype):
        return _new(a.copy())
    info = _dtype.finfo(_dtype.from_numpy_dtype(a.dtype))  # (ml_dtypes' limits for bfloat16)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    wide = a.astype(np.float32) if _dtype.is_reduced_float(a.dtype) else a  # (NumPy's nan_to_num: float kinds only)
    filled = np.nan_to_num(wide, nan=nan, posinf=posinf, neginf=neginf).astype(a.dtype)
    return where(_new(np.isfinite(a)), x, _new(filled))


def float_power(input, exponent):
    """input ** exponent in float64 (both operands cast first, as torch)."""
    if not isinstance(input, Tensor):
        _check_numbers("float_power", input, exponent)
    else:
        x = _to_dtype(input, np.dtype(np.float64))
        e = _to_dtype(exponent, np.dtype(np.float64)) if isinstance(exponent, Tensor) else float(exponent)
        return pow(x, e)
    return pow(float(input), _to_dtype(exponent, np.dtype(np.float64)))


def floor_divide(input, other):
    """floor(input / other) (Python's //; integer division by zero raises, as torch). torch has no derivative for it:
    a backward through it raises."""
    if _is_scalar(input) and _is_scalar(other):  # (torch's parser takes two numbers here, as tensors)
        input = _tensor(input)
    a, b, dt = _operands(input, other, "floor_divide")
    if not _dtype.is_float(dt):
        _no_integer_zero(b._data)
        if dt == np.bool_:
            raise NotImplementedError('"div_floor_cpu" not implemented for \'Bool\'')
    with np.errstate(all="ignore"):
        out = _new(np.asanyarray(np.floor_divide(a._data, b._data), dt))
    return _without_derivative(out, (a, b), "floor_divide")


def div(input, other, *, rounding_mode=None):
    """input / other, broadcasting (gradients g / b and -g * y / b, DivBackward0); rounding_mode "trunc" or "floor"
    rounds the quotient (integers stay integers, divided exactly; integer division by zero raises as torch's), with a
    zero gradient, as torch's."""
    if rounding_mode is None:
        return _true_div(input, other)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    a, b, dt = _operands(input, other, "div")
    x, y = a._data, b._data
    if not _dtype.is_float(dt):
        if dt == np.bool_:
            raise NotImplementedError(f'"div_{rounding_mode}_cpu" not implemented for \'Bool\'')
        _no_integer_zero(y)
        q = np.floor_divide(x, y)
        if rounding_mode == "trunc":  # (towards zero: one more where the floor went below a negative quotient)
            q = q + ((x - q * y != 0) & ((x < 0) != (y < 0)))
        return _new(np.asanyarray(q, dt))
    with np.errstate(all="ignore"):
        exact = np.asanyarray(np.floor_divide(x, y) if rounding_mode == "floor" else np.trunc(x / y), dt)
    if _grad_state.enabled and (a._requires_grad or b._requires_grad):  # (zero gradients: a rounding row on x / y)
        return _record(OPS["floor" if rounding_mode == "floor" else "trunc"], exact, (_true_div(a, b),))
    return _new(exact)


divide = div


def heaviside(input, values):
    """0 where input < 0 (or NaN), 1 where input > 0, values where input == 0. torch has no derivative for it: a
    backward through it raises."""
    if not isinstance(input, Tensor) or not isinstance(values, Tensor):
        _check_numbers("heaviside", input, values)
    x, v = _tensor(input), _tensor(values)
    if x._data.dtype != v._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    a = x._data
    out = _new(np.asanyarray(np.where(a == 0, v._data, a > 0), a.dtype))  # (NaN: 0, as torch's `a > 0`)
    return _without_derivative(out, (x, v), "heaviside")


def ldexp(input, other):
    """input * 2 ** other, as torch composes it (2 ** an integer tensor in the default float dtype)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        _check_numbers("ldexp", input, other)
    return mul(input, pow(2.0, _floating(_tensor(other))))


def frexp(input):
    """(mantissa, exponent): input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1); exponent int32. The
    mantissa's gradient is g / 2 ** exponent, as torch's."""
    x = _tensor(input)
    if not _dtype.is_float(x._data.dtype):
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(x._data)
    mantissa = x * _new(np.ldexp(np.ones((), x._data.dtype), -e).astype(x._data.dtype))
    return _Frexp(mantissa, _new(e.astype(np.int32)))


_Frexp = collections.namedtuple("frexp", ["mantissa", "exponent"])
_Frexp.__repr__ = lambda self: f"torch.return_types.frexp(\nmantissa={self.mantissa!r},\nexponent={self.exponent!r})"


def nextafter(input, other):
    """The next float after input towards other. input's gradient is g where input != other, else 0 (torch's
    NextafterBackward0), other gets none (torch's is zero): input plus the step to the next float (a value a replay
    recomputes), where input != other."""
    a, b, dt = _operands(input, other, "nextafter")
    if not _dtype.is_float(dt):
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{_dtype.scalar_type_name(dt)}'")
    out = np.nextafter(a._data, b._data)
    if not (_grad_state.enabled and a._requires_grad):
        return traced_value(_new(out), np.nextafter, a, b)

    def step(x, y):  # (exact: two neighbouring floats' difference (NaN towards NaN); 0 from a NaN or infinite x)
        with np.errstate(all="ignore"):
            d = np.nextafter(x, y) - x
        return np.where(np.isfinite(x), d, 0).astype(x.dtype)
    result = a + traced_value(_new(step(a._data, b._data)), step, a, b)
    # (infinite towards a number: its value, with no gradient, where torch's is g)
    moves = (a._data != b._data) & ((result._data == out) | np.isnan(out) & np.isnan(result._data))
    return where(_new(moves), result, _new(out))


def fmax(input, other):
    """maximum that ignores NaN; the gradient goes to input where input >= other or other is NaN, as torch's."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        _check_numbers("fmax", input, other)
    return where(ge(input, other) | isnan(_tensor(other)), input, other)


def fmin(input, other):
    """minimum that ignores NaN; the gradient goes to input where input <= other or other is NaN, as torch's."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        _check_numbers("fmin", input, other)
    return where(le(input, other) | isnan(_tensor(other)), input, other)


def _integer_only(name, a):
    if a.dtype.kind not in "iu":  # (bool too)
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype.scalar_type_name(a.dtype)}'")


def gcd(input, other):
    a, b, dt = _operands(input, other, "gcd")
    _integer_only("gcd", a._data)
    return _new(np.gcd(a._data, b._data).astype(dt))


def lcm(input, other):
    a, b, dt = _operands(input, other, "lcm")
    _integer_only("lcm", a._data)
    return _new(np.lcm(a._data, b._data).astype(dt))


def bitwise_not(input):
    x = _tensor(input)
    if _dtype.is_float(x._data.dtype):
        raise NotImplementedError("\"bitwise_not_cpu\" not implemented for "
                           f"'{_dtype.scalar_type_name(x._data.dtype)}'")
    return _new(np.invert(x._data))


def _invert(input):
    """`~x`: bitwise not of integers and bools; torch refuses floats with a TypeError (bitwise_not's error differs)."""
    if _dtype.is_float(input._data.dtype):
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(input)


def _shift(name, np_fn):
    def fn(input, other):
        a, b, dt = _operands(input, other, name)
        if _dtype.is_float(dt) or dt == np.bool_:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype.scalar_type_name(dt)}'")
        return _new(np.asanyarray(np_fn(a._data, b._data), dt))
    fn.__name__ = name
    return fn


bitwise_left_shift = _shift("lshift", np.left_shift)
bitwise_right_shift = _shift("rshift", np.right_shift)


# -- dtype helpers ----------------------------------------------------------------------------------------------------
def _np_of(d):
    return _dtype.to_numpy_dtype(d)


def result_type(tensor1, tensor2):
    """The dtype torch's promotion gives tensor1 op tensor2 (Tensors or Python numbers)."""
    ops = [t._data if isinstance(t, Tensor) else t for t in (tensor1, tensor2)]
    return _dtype.from_numpy_dtype(_dtype.result_type(*ops))


def promote_types(type1, type2):
    """The smallest dtype both dtypes cast to safely (torch's rules: bool < integers < floats)."""
    return _dtype.from_numpy_dtype(_dtype.result_type(np.empty(1, _np_of(type1)), np.empty(1, _np_of(type2))))


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}


def can_cast(from_, to):
    """Whether torch allows casting from_ to `to` in an in-place op: not to a lower kind (float to integer,
    integer to bool)."""
    return _KIND_RANK[_np_of(from_).kind] <= _KIND_RANK[_np_of(to).kind]


def _to(name, np_type):
    dt = _dtype.from_numpy_dtype(np.dtype(np_type))

    def method(self, memory_format=None):
        return self._convert(dt, memory_format)  # (tensor.py: itself when of the dtype, else `to` in memory_format)
    method.__name__ = name
    return method


Tensor.div = Tensor.divide = div  # (rounding_mode; `/` stays elementwise's div)
Tensor.fmod = fmod
Tensor.remainder = remainder
Tensor.__mod__ = remainder
Tensor.__rmod__ = lambda self, other: remainder(other, self)
Tensor.__floordiv__ = Tensor.floor_divide = floor_divide
Tensor.__rfloordiv__ = lambda self, other: floor_divide(other, self)
Tensor.hypot = _method(hypot, "hypot")
Tensor.logaddexp = _method(logaddexp, "logaddexp")
Tensor.logaddexp2 = _method(logaddexp2, "logaddexp2")
Tensor.asinh = Tensor.arcsinh = asinh
Tensor.acosh = Tensor.arccosh = acosh
Tensor.atanh = Tensor.arctanh = atanh
Tensor.deg2rad = deg2rad
Tensor.rad2deg = rad2deg
Tensor.frac = frac
Tensor.fix = trunc
Tensor.sgn = sgn
Tensor.copysign = copysign
Tensor.signbit = signbit
Tensor.isneginf = isneginf
Tensor.isposinf = isposinf
Tensor.isreal = isreal
Tensor.real = property(real)
Tensor.imag = property(imag)
Tensor.positive = positive
Tensor.absolute = abs
Tensor.nan_to_num = nan_to_num
Tensor.float_power = float_power
Tensor.heaviside = _method(heaviside, "heaviside")
Tensor.ldexp = _method(ldexp, "ldexp")
Tensor.frexp = frexp
Tensor.nextafter = _method(nextafter, "nextafter")
Tensor.fmax = _method(fmax, "fmax")
Tensor.fmin = _method(fmin, "fmin")
Tensor.gcd = _method(gcd, "gcd")
Tensor.lcm = _method(lcm, "lcm")
Tensor.bitwise_and = Tensor.__and__
Tensor.bitwise_or = Tensor.__or__
Tensor.bitwise_xor = Tensor.__xor__
Tensor.bitwise_not = bitwise_not
Tensor.__invert__ = _invert
Tensor.__pos__ = positive
# (`number & x` is `x & number`: the number wrapped into x's dtype as torch's, `wrap_integer`)
Tensor.__rand__ = lambda self, other: Tensor.__and__(self, other) if _is_scalar(other) else \
    Tensor.__and__(_tensor(other), self)
Tensor.__ror__ = lambda self, other: Tensor.__or__(self, other) if _is_scalar(other) else \
    Tensor.__or__(_tensor(other), self)
Tensor.__rxor__ = lambda self, other: Tensor.__xor__(self, other) if _is_scalar(other) else \
    Tensor.__xor__(_tensor(other), self)
Tensor.bitwise_left_shift = Tensor.__lshift__ = bitwise_left_shift
Tensor.bitwise_right_shift = Tensor.__rshift__ = bitwise_right_shift
Tensor.__rlshift__ = lambda self, other: bitwise_left_shift(other, self)
Tensor.__rrshift__ = lambda self, other: bitwise_right_shift(other, self)
Tensor.byte = _to("byte", np.uint8)
Tensor.char = _to("char", np.int8)
Tensor.short = _to("short", np.int16)
Tensor.is_signed = lambda self: self._data.dtype.kind in "if"
Tensor.is_complex = lambda self: False
