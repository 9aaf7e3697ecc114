"""torch-style dtype objects over NumPy dtypes, and the promotion rules tapegrad uses."""
import builtins
import numbers
import threading

import numpy as np


class dtype:
    __slots__ = ("name", "np", "is_floating_point", "itemsize", "code")

    def __init__(self, name, np_dtype, code):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = self.np.kind == "f"
        self.itemsize = self.np.itemsize
        self.code = code  # the tape's dtype code: 0 float32, 1 float64, 2 not differentiable

    def __repr__(self):
        return "torch." + self.name  # as torch prints it, so `import tapegrad as torch` output matches

    def __reduce__(self):
        return (_by_name, (self.name,))


float32 = dtype("float32", np.float32, 0)
float64 = dtype("float64", np.float64, 1)
float16 = dtype("float16", np.float16, 2)
int64 = dtype("int64", np.int64, 2)
int32 = dtype("int32", np.int32, 2)
int16 = dtype("int16", np.int16, 2)
int8 = dtype("int8", np.int8, 2)
uint8 = dtype("uint8", np.uint8, 2)
bool = dtype("bool", np.bool_, 2)  # noqa: A001 - torch's name
float, double, half, long, int = float32, float64, float16, int64, int32  # noqa: A001


class _BFloat16(dtype):
    """torch.bfloat16: tensors of it hold ml_dtypes' NumPy bfloat16 (the optional `bfloat16` extra), imported
    when a tensor first needs it, so that naming torch.bfloat16 (`torch.bfloat16 if bf16_supported else
    torch.float32`) costs nothing and needs no extra. ml_dtypes computes each elementwise op in float32 and
    rounds the result to bfloat16, as torch's CPU kernels do."""
    __slots__ = ()

    @property
    def np(self):
        return bfloat16_np()


def bfloat16_np():
    try:
        import ml_dtypes
    except ImportError as e:
        raise ImportError("torch.bfloat16 tensors need the optional `ml_dtypes` package: pip install "
                          "\"tapegrad[bfloat16]\" (or pip install ml_dtypes)", name=e.name) from e
    return np.dtype(ml_dtypes.bfloat16)


def is_bfloat16(np_dtype):
    """Whether a NumPy dtype is ml_dtypes' bfloat16 (by name: asking imports nothing)."""
    return np_dtype.kind == "V" and np_dtype.name == "bfloat16"


def is_reduced_float(np_dtype):
    """float16 or bfloat16: torch's CPU kernels compute these in float32 and round each op's result once."""
    return np_dtype.itemsize == 2 and (np_dtype.kind == "f" or is_bfloat16(np_dtype))  # (no dtype comparison: hot)


def cast(a, np_dtype):
    """The array a in np_dtype as torch converts it: float64 to float16 through float32 (c10::Half is made from a
    float, so the value is rounded twice: 1 in 20,000 differs from NumPy's direct cast), anything else as NumPy."""
    if np_dtype == np.float16 and a.dtype == np.float64:
        return a.astype(np.float32).astype(np.float16)
    return a.astype(np_dtype)


def is_float(np_dtype):
    """A floating-point NumPy dtype, bfloat16 included (NumPy files ml_dtypes' bfloat16 under kind "V")."""
    return np_dtype.kind == "f" or is_bfloat16(np_dtype)


bfloat16 = object.__new__(_BFloat16)
bfloat16.name, bfloat16.is_floating_point, bfloat16.itemsize, bfloat16.code = "bfloat16", True, 2, 2



class _AutocastState(threading.local):
    """The NumPy dtype of the CPU autocast region this thread is in (bfloat16's), or None: set by
    tapegrad.amp (autocast, set_autocast_enabled/dtype), read by the ops on torch's CPU autocast lists; and each
    device type's settings (enabled, dtype: tapegrad.amp.get_autocast_dtype). Thread-local, as torch's."""
    dtype = None

    def __init__(self):
        self.enabled, self.dtypes = {}, {}


autocast_state = _AutocastState()

# torch.set_default_dtype: the dtype of Python floats and of float factories called without dtype=
default_float = float32


def set_default(d):
    global default_float
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    if d not in (float32, float64):
        if d.is_floating_point:
            raise NotImplementedError(f"tapegrad: set_default_dtype({d!r}) is not implemented (float32 and "
                                      f"float64 are)")
        raise TypeError("only floating-point types are supported as the default type")
    default_float = d


ALL = (float32, float64, float16, int64, int32, int16, int8, uint8, bool)
_BY_NP = {d.np: d for d in ALL}


def _by_name(name):
    return globals()[name]


def from_numpy_dtype(np_dtype):
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except KeyError:
        if is_bfloat16(np.dtype(np_dtype)):
            return bfloat16
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
                        "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.") from None


def to_numpy_dtype(d):
    """Accept a tapegrad dtype, a NumPy dtype or a Python type, as torch accepts its own."""
    if isinstance(d, dtype):
        return d.np
    if d is builtins.float:
        return default_float.np
    if d is builtins.int:
        return int64.np
    if d is builtins.bool:
        return bool.np
    return from_numpy_dtype(d).np


# A dtype as torch's C++ messages name it: its ScalarType ("Float", "Long") and its C++ type ("float", "long int")
_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
                      "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                      "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_CPP_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                   "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                   "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
                   "complex128": "c10::complex<double>"}


def scalar_type_name(d):
    """torch's ScalarType name of a NumPy or tapegrad dtype: Float, Double, Long, ..."""
    name = (d.np if isinstance(d, dtype) else np.dtype(d)).name
    return _SCALAR_TYPE_NAMES.get(name, name)


def cpp_type_name(d):
    """The C++ type torch's messages name for a NumPy or tapegrad dtype: float, double, long int, c10::Half, ..."""
    name = (d.np if isinstance(d, dtype) else np.dtype(d)).name
    return _CPP_TYPE_NAMES.get(name, name)


def _category(np_dtype):
    return 2 if is_float(np_dtype) else (1 if np_dtype.kind in "iu" else 0)


def _scalar_category(s):
    if isinstance(s, (builtins.bool, np.bool_)):
        return 0
    if isinstance(s, (builtins.int, np.integer)):
        return 1
    return 2


def result_type(*operands):
    """torch's promotion: the highest category (bool < int < float) wins; within it, dimensioned tensors
    decide over 0-d tensors, which decide over Python scalars (which give the default dtype)."""
    if len(operands) == 2:  # the common case: two arrays of one dtype
        a, b = operands
        if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == b.dtype:
            return a.dtype
    dims = [a.dtype for a in operands if isinstance(a, np.ndarray) and a.ndim > 0]
    zero = [a.dtype for a in operands if isinstance(a, np.ndarray) and a.ndim == 0]
    scalars = [_scalar_category(s) for s in operands if not isinstance(s, np.ndarray)]
    top = max([_category(d) for d in dims + zero] + scalars)
    for group in (dims, zero):
        in_top = [d for d in group if _category(d) == top]
        if in_top:
            return _float_result(in_top) if top == 2 else np.result_type(*in_top)
    return (bool.np, int64.np, default_float.np)[top]


def _float_result(dtypes):
    """NumPy's result type, with torch's rules for bfloat16, which NumPy cannot promote with float16: mixed
    with float16 it gives float32, with float32 or float64 the wider type."""
    if not any(is_bfloat16(d) for d in dtypes):
        return np.result_type(*dtypes)
    others = [d for d in dtypes if not is_bfloat16(d)]
    if not others:
        return dtypes[0]
    return np.result_type(np.float32, *others)


# -- torch.finfo / torch.iinfo: a dtype's numeric limits, from NumPy's (ml_dtypes' for bfloat16) -------------------
def _limits_repr(self, names):
    values = ", ".join(f"{n}={getattr(self, n):.6g}" for n in names)
    return f"{type(self).__name__}({values}, dtype={self.dtype})"


class finfo:
    """torch.finfo(dtype=None): a floating-point dtype's limits (the default dtype's without one)."""

    def __init__(self, type=None):
        d = default_float if type is None else type
        if not isinstance(d, dtype) or not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        np_dtype = to_numpy_dtype(d)
        if is_bfloat16(np_dtype):
            import ml_dtypes
            info = ml_dtypes.finfo(np_dtype)
        else:
            info = np.finfo(np_dtype)
        self.bits, self.dtype = builtins.int(info.bits), d.name
        self.eps, self.max, self.min = builtins.float(info.eps), builtins.float(info.max), builtins.float(info.min)
        self.tiny = self.smallest_normal = builtins.float(info.smallest_normal)
        self.resolution = 10.0 ** -builtins.int(info.precision)  # (as torch: 0.001 for float16)

    def __repr__(self):
        return _limits_repr(self, ("resolution", "min", "max", "eps", "smallest_normal", "tiny"))


class iinfo:
    """torch.iinfo(dtype): an integer dtype's limits."""

    def __init__(self, type):
        if type is bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if not isinstance(type, dtype) or type.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(to_numpy_dtype(type))
        self.bits, self.dtype = builtins.int(info.bits), type.name
        self.max, self.min = builtins.int(info.max), builtins.int(info.min)

    def __repr__(self):
        return _limits_repr(self, ("min", "max"))


# -- Python numbers into integer dtypes, as torch converts them ----------------------------------------------------
def parsed_int(c):
    """A Python int operand as torch's argument parser takes it (an int64, or a uint64 from 2 ** 63 up): one outside
    both raises its OverflowError."""
    if c < -2 ** 63:
        raise OverflowError("can't convert negative int to unsigned")
    if c >= 2 ** 64:
        raise OverflowError("int too big to convert")
    return c


def _two_complement(c, dt):
    """The Python int c wrapped into the integer dtype dt (its low bits, two's complement), as a NumPy scalar."""
    bits = 8 * dt.itemsize
    c %= 1 << bits
    if dt.kind == "i" and c >= 1 << (bits - 1):
        c -= 1 << bits
    return dt.type(c)


def wrap_integer(c, dt):
    """A Python int operand of an integer op (an elementwise binary op, a comparison, a shift, a remainder) as torch
    casts it into the integer dtype dt: wrapped, two's complement (`uint8 + (-1)` is 255, `uint8_image < -1`
    compares with 255, `int64 + 2 ** 63` adds -2 ** 63), where NumPy raises OverflowError; one outside int64 and
    uint64 raises torch's OverflowError. (A Scalar argument, a fill value or bound, is `scalar_to_dtype`'s.)"""
    if type(c) is builtins.int and dt.kind in "iu":
        info = np.iinfo(dt)
        if not info.min <= c <= info.max:
            return _two_complement(parsed_int(c), dt)
    return c


def _cpp_int_name(dt):
    return "int" if dt == np.int32 else dt.name + "_t"  # (torch's message names the C++ type)


def scalar_to_dtype(c, dt):
    """A Python number argument (a fill value, a clamp bound, a `where` branch, alpha, a pow exponent) converted to
    the result's dtype dt as torch's Scalar::to<T> converts it (c10::checked_convert), where dt is an integer
    dtype: an int in dt's range, or for an unsigned dtype down to -max (wrapped: `clamp(uint8, min=-1)` clamps to
    255), a float within dt's range truncated, a bool as 0 or 1; any other value raises torch's RuntimeError
    ("value cannot be converted to type uint8_t without overflow"; an int outside int64 and uint64, its
    OverflowError). Returns a NumPy scalar of dt, or c unchanged for another dtype or a non-number."""
    if dt.kind not in "iu" or isinstance(c, np.ndarray):
        return c
    if isinstance(c, (builtins.bool, np.bool_)):
        return dt.type(builtins.bool(c))
    info = np.iinfo(dt)
    if isinstance(c, numbers.Integral):
        c = parsed_int(builtins.int(c))
        if (-builtins.int(info.max) if dt.kind == "u" else builtins.int(info.min)) <= c <= builtins.int(info.max):
            return _two_complement(c, dt)
    elif isinstance(c, numbers.Real):
        f = builtins.float(c)
        if builtins.int(info.min) <= f <= builtins.int(info.max):  # (NaN fails both)
            return dt.type(builtins.int(f))  # (C++'s conversion: toward zero)
    else:
        return c
    raise RuntimeError(f"value cannot be converted to type {_cpp_int_name(dt)} without overflow")
