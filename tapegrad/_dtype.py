"""torch-style dtype objects over NumPy dtypes, and the promotion rules tapegrad uses."""
import builtins

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
# torch.bfloat16 exists so scripts can name it (`torch.bfloat16 if bf16_supported else torch.float32`);
# making or converting a tensor to it raises (tapegrad has no bfloat16 arithmetic: see to_numpy_dtype)
bfloat16 = dtype("bfloat16", "V2", -1)
bfloat16.is_floating_point = True

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
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
                        "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.") from None


def to_numpy_dtype(d):
    """Accept a tapegrad dtype, a NumPy dtype or a Python type, as torch accepts its own."""
    if isinstance(d, dtype):
        if d.code < 0:
            raise NotImplementedError(f"tapegrad: {d!r} tensors are not implemented (no {d.name} arithmetic); "
                                      f"use torch.float32, or torch.float16 for storage")
        return d.np
    if d is builtins.float:
        return default_float.np
    if d is builtins.int:
        return int64.np
    if d is builtins.bool:
        return bool.np
    return from_numpy_dtype(d).np


def _category(np_dtype):
    return 2 if np_dtype.kind == "f" else (1 if np_dtype.kind in "iu" else 0)


def _scalar_category(s):
    if isinstance(s, (builtins.bool, np.bool_)):
        return 0
    if isinstance(s, (builtins.int, np.integer)):
        return 1
    return 2


def result_type(*operands):
    """torch's promotion: the highest category (bool < int < float) wins; within it, dimensioned tensors
    decide over 0-d tensors, which decide over Python scalars (which give the default dtype)."""
    dims = [a.dtype for a in operands if isinstance(a, np.ndarray) and a.ndim > 0]
    zero = [a.dtype for a in operands if isinstance(a, np.ndarray) and a.ndim == 0]
    scalars = [_scalar_category(s) for s in operands if not isinstance(s, np.ndarray)]
    top = max([_category(d) for d in dims + zero] + scalars)
    for group in (dims, zero):
        in_top = [d for d in group if _category(d) == top]
        if in_top:
            return np.result_type(*in_top)
    return (bool.np, int64.np, default_float.np)[top]
