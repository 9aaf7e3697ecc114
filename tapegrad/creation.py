"""Tensor constructors, with torch's dtype inference and the default dtype float32."""
import math

import numpy as np

from . import _dtype, random
from .device import check as _check_device
from .tape import _local as _tape_local, made_in_trace
from .tensor import Tensor, _flat, _new, as_array


def _finish(data, dtype=None, requires_grad=False, made=True):
    t = _new(data if dtype is None else data.astype(_dtype.to_numpy_dtype(dtype), copy=False))
    if made and _tape_local.tracing is not None:  # (tapegrad.compile: a constant of the trace)
        made_in_trace(t)
    if requires_grad:
        if not _dtype.is_float(t._data.dtype):  # (torch's factories capitalise it; the attribute's message does not)
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t


def _shape(size):
    """Sizes as torch takes them: zeros(2, 3), zeros((2, 3)), zeros([2, 3]) or zeros(size=(2, 3))."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if len(size) < 3 and all(type(s) is int and 0 <= s < 2 ** 31 for s in size):  # (their product fits int64)
        return tuple(size)
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"empty(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    if math.prod(size) > 2 ** 63 - 1:  # NumPy's ValueError otherwise
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)}")
    return tuple(int(s) for s in size)


def _float(dtype):
    return _dtype.to_numpy_dtype(dtype if dtype is not None else _dtype.default_float)


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    _check_device(device)
    # (a copy of a tensor's value is no constant of a trace: it depends on what the tensor holds)
    made = _tape_local.tracing is not None and not isinstance(data, Tensor) and not (
        isinstance(data, (list, tuple)) and any(isinstance(d, Tensor) for d in _flat(data)))
    return _finish(as_array(data, dtype), None, requires_grad, made)


def as_tensor(data, dtype=None, device=None):
    _check_device(device)
    if isinstance(data, Tensor) and (dtype is None or data.dtype is dtype):
        return data
    if isinstance(data, np.ndarray) and data.flags.c_contiguous and data.dtype.isnative and (
            dtype is None or _dtype.to_numpy_dtype(dtype) == data.dtype):
        _dtype.from_numpy_dtype(data.dtype)
        return _new(data)
    return tensor(data, dtype=dtype)


def from_numpy(ndarray):
    """Shares memory with the array when it is C-contiguous and native-endian, as torch does."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if not ndarray.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    _dtype.from_numpy_dtype(ndarray.dtype)
    return _new(ndarray if ndarray.flags.c_contiguous else np.ascontiguousarray(ndarray))


def FloatTensor(*args):
    return Tensor(*args, dtype=_dtype.float32)


def DoubleTensor(*args):
    return Tensor(*args, dtype=_dtype.float64)


def LongTensor(*args):
    return Tensor(*args, dtype=_dtype.int64)


def BoolTensor(*args):
    return Tensor(*args, dtype=_dtype.bool)


def zeros(*size_args, size=None, dtype=None, device=None, requires_grad=False, out=None):
    _check_device(device)
    try:
        shape = _shape(size_args if size is None else (size,))
    except RuntimeError as e:
        if "negative dimension" in str(e):  # torch's zeros has its own words for it
            raise RuntimeError("zeros: Dimension size must be non-negative.") from None
        raise
    return _finish(np.zeros(shape, _float(dtype)), None, requires_grad)


def ones(*size_args, size=None, dtype=None, device=None, requires_grad=False, out=None):
    _check_device(device)
    return _finish(np.ones(_shape(size_args if size is None else (size,)), _float(dtype)), None, requires_grad)


def empty(*size_args, size=None, dtype=None, device=None, requires_grad=False, out=None):
    _check_device(device)
    return _finish(np.zeros(_shape(size_args if size is None else (size,)), _float(dtype)), None, requires_grad)  # zeroed: never leak memory


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    _check_device(device)
    if dtype is None:
        dtype = (_dtype.bool if isinstance(fill_value, bool) else
                 _dtype.int64 if isinstance(fill_value, (int, np.integer)) else _dtype.default_float)
    np_dtype = _dtype.to_numpy_dtype(dtype)
    try:
        data = np.full(_shape((size,)), fill_value, np_dtype)
    except OverflowError:  # a Python int outside the dtype (NumPy's OverflowError)
        name = "int" if np_dtype == np.int32 else np_dtype.name + "_t"  # torch names the C++ type
        raise RuntimeError(f"value cannot be converted to type {name} without overflow") from None
    return _finish(data, None, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:  # NumPy's ValueError otherwise
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    _check_device(device)
    return _finish(np.eye(n, n if m is None else m, dtype=_float(dtype)), None, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    _check_device(device)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    vals = (start, end, step)
    if dtype is None:
        dtype = _dtype.default_float if any(isinstance(v, float) for v in vals) else _dtype.int64
    n = max(0, math.ceil((end - start) / step))
    if n > 2 ** 63 - 1:  # NumPy's ValueError otherwise
        raise RuntimeError("invalid size, possible overflow?")
    np_dtype = _dtype.to_numpy_dtype(dtype)
    if np_dtype.kind in "iu" and all(isinstance(v, (int, np.integer)) for v in vals):
        data = (int(start) + np.arange(n, dtype=np.int64) * int(step)).astype(np_dtype)  # exact past 2**53
    else:
        data = (start + np.arange(n, dtype=np.float64) * step).astype(np_dtype)
    return _finish(data, None, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    if steps < 0:  # NumPy's ValueError otherwise
        raise RuntimeError("number of steps must be non-negative")
    _check_device(device)
    return _finish(np.linspace(start, end, steps, dtype=np.float64).astype(_float(dtype)), None, requires_grad)


def _like(fn, input, dtype, requires_grad, *args):
    dt = input._data.dtype if dtype is None else _dtype.to_numpy_dtype(dtype)
    return _finish(fn(input._data.shape, *args).astype(dt), None, requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    _check_device(device or "cpu")  # (None: the input's device, not the default one)
    return _like(np.zeros, input, dtype, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    _check_device(device or "cpu")  # (None: the input's device, not the default one)
    return _like(np.ones, input, dtype, requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    _check_device(device or "cpu")  # (None: the input's device, not the default one)
    return _like(np.zeros, input, dtype, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    _check_device(device or "cpu")  # (None: the input's device, not the default one)
    return _like(np.full, input, dtype, requires_grad, fill_value)


def rand(*size_args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    _check_device(device)
    return _drawn(random.uniform, (_shape(size_args if size is None else (size,)), generator, _float(dtype)),
                  requires_grad)


def randn(*size_args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    _check_device(device)
    return _drawn(random.normal, (_shape(size_args if size is None else (size,)), generator, _float(dtype)),
                  requires_grad)


def randint(low, high=None, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    _check_device(device)
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing 1 required positional argument: 'size'")
    return _drawn(_integers, (low, high, _shape((size,)), generator, _dtype.to_numpy_dtype(dtype or _dtype.int64)),
                  requires_grad)


def _integers(low, high, shape, generator, dtype):
    return random.integers(low, high, shape, generator, dtype).astype(dtype)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    _check_device(device)
    return _drawn(_permutation, (n, generator, _dtype.to_numpy_dtype(dtype or _dtype.int64)), requires_grad)


def _permutation(n, generator, dtype):
    return random.permutation(n, generator).astype(dtype)


def _drawn(draw, args, requires_grad):
    """A factory's random draw; while tapegrad.compile traces, a row that each replay draws again."""
    if _tape_local.tracing is not None:
        return _tape_local.tape.record_draw(draw, args, requires_grad)
    return _finish(draw(*args), None, requires_grad)


def rand_like(input, dtype=None, requires_grad=False):
    return rand(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input, dtype=None, requires_grad=False):
    return randn(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)
