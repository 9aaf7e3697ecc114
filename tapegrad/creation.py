"""Tensor constructors, with torch's dtype inference and the default dtype float32."""
import functools
import math
import warnings

import numpy as np

from . import _dtype, _meta, _strides, random
from .device import default_type as _default_device_type, is_meta as _is_meta
from .tape import _local as _tape_local, made_in_trace
from .tensor import Tensor, _flat, _new, as_array, as_index, refuse_negative_strides
from .tensor import _format_strides, _memory_format_arg, channels_last, channels_last_3d, preserve_format
from ._warnings import user_stacklevel


def _finish(data, dtype=None, requires_grad=False, made=True, meta=False):
    """The factory's tensor of data; meta: a meta tensor of data's shape and dtype."""
    if meta:
        data = _meta.make(data.shape, data.dtype if dtype is None else _dtype.to_numpy_dtype(dtype))
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
    if len(size) == 1:
        first = size[0]
        if type(first) is int and 0 <= first < 2 ** 31:
            return (first,)
        if isinstance(first, (tuple, list)):
            size = tuple(first)
    if len(size) < 3 and all(type(s) is int and 0 <= s < 2 ** 31 for s in size):  # (their product fits int64)
        return tuple(size)
    size = tuple(map(as_index, size))
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
    return _dtype.default_float.np if dtype is None else _dtype.to_numpy_dtype(dtype)


_COPY_CONSTRUCT = ("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                   "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).")


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    if isinstance(data, Tensor):
        warnings.warn(_COPY_CONSTRUCT, UserWarning, stacklevel=user_stacklevel())
    elif isinstance(data, np.ndarray):
        refuse_negative_strides(data)
    meta = _is_meta(device)
    # (a copy of a tensor's value is no constant of a trace: it depends on what the tensor holds)
    made = _tape_local.tracing is not None and not isinstance(data, Tensor) and not (
        isinstance(data, (list, tuple)) and any(isinstance(d, Tensor) for d in _flat(data)))
    return _finish(as_array(data, dtype), None, requires_grad, made, meta)


def as_tensor(data, dtype=None, device=None):
    if _is_meta(device) or isinstance(data, Tensor) and data.is_meta:
        return tensor(data, dtype=dtype, device="meta")
    if isinstance(data, Tensor):  # (torch: data.to(dtype), which keeps its history and does not warn)
        return data if dtype is None or data.dtype is dtype else data.to(dtype)
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
    refuse_negative_strides(ndarray)
    global _from_numpy_warned
    if not ndarray.flags.writeable and not _from_numpy_warned:
        _from_numpy_warned = True  # (torch warns once a process; tapegrad refuses the writes: _check_writable)
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. This "
                      "means writing to this tensor will result in undefined behavior. You may want to copy the array "
                      "to protect its data or make it writable before converting it to a tensor. This type of warning "
                      "will be suppressed for the rest of this program.", UserWarning, stacklevel=user_stacklevel())
    return _new(ndarray if ndarray.flags.c_contiguous else np.ascontiguousarray(ndarray))


_from_numpy_warned = False


class _TensorType(type):
    """torch's legacy tensor types (torch.FloatTensor, ...): classes whose instances are the tensors of their dtype
    (isinstance), whose call makes one as torch.Tensor(...) does, and which Tensor.type() converts to."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args):
        return Tensor(*args, dtype=cls.dtype)

    def __repr__(cls):
        return f"<class 'torch.{cls.__name__}'>"


def _tensor_type(name, dtype):
    return _TensorType(name, (), {"dtype": dtype, "is_cuda": False, "is_sparse": False, "__module__": "torch"})


FloatTensor = _tensor_type("FloatTensor", _dtype.float32)
DoubleTensor = _tensor_type("DoubleTensor", _dtype.float64)
HalfTensor = _tensor_type("HalfTensor", _dtype.float16)
BFloat16Tensor = _tensor_type("BFloat16Tensor", _dtype.bfloat16)
LongTensor = _tensor_type("LongTensor", _dtype.int64)
IntTensor = _tensor_type("IntTensor", _dtype.int32)
ShortTensor = _tensor_type("ShortTensor", _dtype.int16)
CharTensor = _tensor_type("CharTensor", _dtype.int8)
ByteTensor = _tensor_type("ByteTensor", _dtype.uint8)
BoolTensor = _tensor_type("BoolTensor", _dtype.bool)


def zeros(*size_args, size=None, dtype=None, device=None, requires_grad=False, out=None):
    meta = _is_meta(device)
    try:
        shape = _shape(size_args if size is None else (size,))
    except RuntimeError as e:
        if "negative dimension" in str(e):  # torch's zeros has its own words for it
            raise RuntimeError("zeros: Dimension size must be non-negative.") from None
        raise
    return _finish(_zeros(shape, _float(dtype), meta), None, requires_grad)


def _zeros(shape, np_dtype, meta, fill=np.zeros):
    """The values of a factory of this shape: a meta array (no memory) on the meta device."""
    return _meta.make(shape, np_dtype) if meta else fill(shape, np_dtype)


def ones(*size_args, size=None, dtype=None, device=None, requires_grad=False, out=None):
    meta = _is_meta(device)
    return _finish(_zeros(_shape(size_args if size is None else (size,)), _float(dtype), meta, np.ones), None,
                   requires_grad)


def empty(*size_args, size=None, dtype=None, device=None, requires_grad=False, out=None, memory_format=None):
    meta = _is_meta(device)
    t = _finish(_zeros(_shape(size_args if size is None else (size,)), _float(dtype), meta), None,
                requires_grad)  # zeroed: never leak memory
    fmt = _memory_format_arg("empty", memory_format)
    if fmt is preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    if fmt is channels_last or fmt is channels_last_3d:  # (the strides torch reports; values stay in C order)
        t._strides = _strides.normal(t._data.shape, _format_strides(t._data.shape, fmt))
    return t


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """torch.empty_permuted: a dense tensor of `size` whose dimensions lie in memory in the order physical_layout
    lists them, outermost first (only stride() sees it: values stay in C order; zeroed, as empty's)."""
    size, order = tuple(size), tuple(int(d) for d in physical_layout)
    if len(size) != len(order):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    seen = set()
    for i, d in enumerate(order):
        if not 0 <= d < len(order):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {len(order) - 1}, but got {d} "
                               f"at index {i}).  NB: negative dims not currently supported; file an issue if you "
                               f"want it.")
        if d in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(d)
    _shape(tuple(size[d] for d in order))  # (torch's errors name the sizes in memory order)
    size = _shape(size)
    t = empty(size, dtype=dtype, device=device, requires_grad=requires_grad)
    inner = _strides.contiguous(tuple(size[d] for d in order))
    strides = [0] * len(order)
    for i, d in enumerate(order):
        strides[d] = inner[i]
    t._strides = _strides.normal(size, strides)
    return t


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    meta = _is_meta(device)
    if dtype is None:
        dtype = (_dtype.bool if isinstance(fill_value, bool) else
                 _dtype.int64 if isinstance(fill_value, (int, np.integer)) else _dtype.default_float)
    np_dtype = _dtype.to_numpy_dtype(dtype)
    value = _dtype.scalar_to_dtype(fill_value, np_dtype)  # (torch's conversion: wrapped, truncated or refused)
    data = np.full(_shape((size,)) if not meta else (), value, np_dtype)  # (meta: the value's checks)
    if meta:
        data = _meta.make(_shape((size,)), np_dtype)
    return _finish(data, None, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:  # NumPy's ValueError otherwise
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    meta = _is_meta(device)
    return _finish(np.eye(n, n if m is None else m, dtype=_float(dtype)), None, requires_grad, meta=meta)


def _range(start, end, step=1, dtype=None, device=None, requires_grad=False):
    """torch.range (deprecated in torch, with its warning): start to end inclusive, in the default float dtype."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=user_stacklevel())
    meta = _is_meta(device)
    if step == 0 or (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(np.floor((end - start) / step)) + 1
    np_dtype = _float(dtype)
    data = _meta.make((n,), np_dtype) if meta else (start + np.arange(n, dtype=np.float64) * step).astype(np_dtype)
    return _finish(data, None, requires_grad)


def _number(v):
    """A factory's bound: a 0-d tensor's value (torch takes one as a Number), else v."""
    return v.item() if isinstance(v, Tensor) and v.ndim == 0 else v


def _range_format(v):
    return str(v) if isinstance(v, (int, np.integer)) else format(float(v), "g")  # (C++'s ostream of a double)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    meta = _is_meta(device)
    start, end, step = _number(start), _number(end), _number(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_range_format(start)} -> {_range_format(end)}")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    vals = (start, end, step)
    if dtype is None:
        dtype = _dtype.default_float if any(isinstance(v, (float, np.floating)) for v in vals) else _dtype.int64
    np_dtype = _dtype.to_numpy_dtype(dtype)
    integral = np_dtype.kind in "iu"
    if integral and np_dtype == np.int64:
        # torch's int64 kernel takes the bounds and the step as int64 (truncated) and sizes the range in them
        start, end, step = int(start), int(end), int(step)
        if step == 0:
            raise ValueError("step must be nonzero")
        n = abs(end - start + step - (1 if step > 0 else -1)) // abs(step)
    else:
        n = max(0, math.ceil((end - start) / step))
    if n > 2 ** 63 - 1:  # NumPy's ValueError otherwise
        raise RuntimeError("invalid size, possible overflow?")
    if meta:
        return _finish(_meta.make((n,), np_dtype), None, requires_grad)
    if integral:  # (other integer dtypes: the values from the truncated start and step, wrapped into the dtype)
        data = (int(start) + np.arange(n, dtype=np.int64) * int(step)).astype(np_dtype)  # exact past 2**53
    else:
        data = (start + np.arange(n, dtype=np.float64) * step).astype(np_dtype)
    return _finish(data, None, requires_grad)


_SPACE_SIGNATURES = ("(Tensor start, Tensor end, int steps{b}, *, Tensor out = None, torch.dtype dtype = None, "
                     "torch.layout layout = None, torch.device device = None, bool pin_memory = False, bool "
                     "requires_grad = False)")


def _space_bounds(name, start, end, steps):
    """linspace's and logspace's arguments as torch's parser takes them: start and end numbers or 0-d tensors, steps
    an int (or an integer 0-d tensor); torch's errors otherwise."""
    steps = _number(steps)
    if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, (int, np.integer)):
        base = ", float base = 10.0" if name == "logspace" else ""
        kinds = [("Tensor" if isinstance(v, Tensor) else type(v).__name__) for v in (start, end, steps)]
        lines = [" * " + _SPACE_SIGNATURES.format(b=base).replace("Tensor start", f"{a} start").replace(
            "Tensor end", f"{b} end") for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"),
                                                   ("Number", "Number"))]
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({', '.join(kinds)}), but "
                        f"expected one of:\n" + "\n".join(lines) + "\n")
    dims = [v.ndim if isinstance(v, Tensor) else 0 for v in (start, end)]
    if any(dims):
        raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got start with {dims[0]} "
                           f"dimension(s) and end with {dims[1]} dimension(s).")
    return _number(start), _number(end), int(steps)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    start, end, steps = _space_bounds("linspace", start, end, steps)
    if steps < 0:  # NumPy's ValueError otherwise
        raise RuntimeError("number of steps must be non-negative")
    dt = _float(dtype)
    if _is_meta(device):
        return _finish(_meta.make((steps,), dt), None, requires_grad)
    if dt in (np.float32, np.float64) and steps > 1:
        return _finish(_linspace(start, end, steps, dt.type), None, requires_grad)
    return _finish(np.linspace(start, end, steps, dtype=np.float64).astype(dt), None, requires_grad)


def _linspace(start, end, steps, dt):
    """torch's values: step = (end - start) / (steps - 1) in the dtype, then start + k * step for the first half and
    end - (steps - 1 - k) * step for the rest, each rounded once (its CPU kernel's fused multiply-adds; twice where
    torch runs its baseline x86 build, which has none: random._FUSED). float32's
    in float64, where the product is exact; float64's with the product's and the sum's rounding errors added back
    (Dekker's and Knuth's error-free transformations)."""
    s, e = dt(start), dt(end)
    step = (e - s) / dt(steps - 1)
    k = np.arange(steps, dtype=np.float64)
    first = k < steps // 2
    factor = np.where(first, k, k - (steps - 1))  # k, or minus the distance from the end
    base = np.where(first, np.float64(s), np.float64(e))
    with np.errstate(all="ignore"):  # (an infinite or NaN step: the plain sum is its value, as torch's)
        if not random._FUSED:  # (torch's baseline x86 build has no FMA: the product and the sum each rounded)
            return (base.astype(dt) + factor.astype(dt) * step).astype(dt)
        if dt is np.float32:
            return (factor * np.float64(step) + base).astype(np.float32)
        p = factor * step
        split = 134217729.0  # 2**27 + 1: Veltkamp's split of a double into two 26-bit halves
        fh = factor * split - (factor * split - factor)
        sh = step * split - (step * split - step)
        product_error = ((fh * sh - p) + fh * (step - sh) + (factor - fh) * sh) + (factor - fh) * (step - sh)
        total = p + base
        v = total - p
        sum_error = (p - (total - v)) + (base - v)
        exact = total + (product_error + sum_error)
        return np.where(np.isfinite(exact), exact, total)


def _like(fn, input, dtype, requires_grad, *args, memory_format=None, device=None):
    dt = input._data.dtype if dtype is None else _dtype.to_numpy_dtype(dtype)
    if _like_meta(input, device):
        data = _meta.make(input._data.shape, dt)
    else:
        data = fn(input._data.shape, *args).astype(dt)
    return _with_format(_finish(data, None, requires_grad), input, memory_format)


def _like_meta(input, device):
    """Whether a *_like result is meta: device None is the input's device (not the default one)."""
    return _is_meta(device) if device is not None else type(input._data) is _meta.MetaArray


def _like_strides(input, memory_format):
    """The strides torch gives a *_like result (its values are in C order whatever they are): those of the format
    asked for; for preserve_format (the default), the input's own when they are dense, else contiguous ones."""
    fmt = _memory_format_arg("empty_like", memory_format)
    shape = input._data.shape
    if fmt is channels_last or fmt is channels_last_3d:
        return _strides.normal(shape, _format_strides(shape, fmt))
    if (fmt is None or fmt is preserve_format) and input._strides is not None and \
            _strides.is_dense(shape, input._strides):  # (non-overlapping and dense: torch keeps the input's strides)
        return _strides.normal(shape, input._strides)
    return None


def zeros_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(np.zeros, input, dtype, requires_grad, memory_format=memory_format, device=device)


def ones_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(np.ones, input, dtype, requires_grad, memory_format=memory_format, device=device)


def empty_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(np.zeros, input, dtype, requires_grad, memory_format=memory_format, device=device)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    value = _dtype.scalar_to_dtype(fill_value, input._data.dtype if dtype is None else _dtype.to_numpy_dtype(dtype))
    return _like(np.full, input, dtype, requires_grad, value, memory_format=memory_format, device=device)


def rand(*size_args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    if size is None and device is None and (dtype is None or dtype is _F32) and _fast_draw_ok(dtype):
        data = random.rand_f32(size_args, generator)
        if data is not None:
            return _drawn_fast(data, requires_grad)
    return _drawn(random.uniform, (_shape(size_args if size is None else (size,)), generator,
                                   _floating(dtype, "check_uniform_bounds")), requires_grad, device)


def randn(*size_args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    if size is None and device is None and (dtype is None or dtype is _F32) and _fast_draw_ok(dtype):
        data = random.randn_f32(size_args, generator)
        if data is not None:
            return _drawn_fast(data, requires_grad)
    return _drawn(random.normal, (_shape(size_args if size is None else (size,)), generator,
                                  _floating(dtype, "normal_kernel_cpu")), requires_grad, device)


# rand / randn / rand_like / randn_like's fast path (the common call: one or two int sizes, float32, the default
# generator or one given, no trace): random.rand_f32 / randn_f32 draw what random.uniform / normal draw, without
# _shape, _floating, _drawn and _finish's general handling (randn(32): 2.9 us, now 2.1, of which 1.3 the draws and the
# compiled transform; torch's 0.9).
_F32 = _dtype.float32
_F32_NP = np.dtype(np.float32)


def _fast_draw_ok(dtype):
    """Whether a draw of this dtype (None or float32) may take the fast path: float32 it is (dtype=None: the
    default dtype is float32), the default device is the CPU (not meta), and no trace is running."""
    return ((dtype is not None or _dtype.default_float is _F32) and _default_device_type() == "cpu"
            and _tape_local.tracing is None)


def _drawn_fast(data, requires_grad):
    t = _new(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _floating(dtype, kernel):
    """A floating dtype for a draw (the default one for None); another raises torch's error naming its kernel."""
    dt = _float(dtype)
    if not _dtype.is_float(dt):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype.scalar_type_name(dt)}'")
    return dt


def randint(low, high=None, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing 1 required positional argument: 'size'")
    return _drawn(_integers, (low, high, _shape((size,)), generator, _dtype.to_numpy_dtype(dtype or _dtype.int64)),
                  requires_grad, device)


def _integers(low, high, shape, generator, dtype):
    return random.integers(low, high, shape, generator, dtype).astype(dtype)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    return _drawn(_permutation, (n, generator, _dtype.to_numpy_dtype(dtype or _dtype.int64)), requires_grad, device)


def _permutation(n, generator, dtype):
    return random.permutation(n, generator).astype(dtype)


def _drawn(draw, args, requires_grad, device=None):
    """A factory's random draw; while tapegrad.compile traces, a row that each replay draws again. On the meta
    device nothing is drawn (the generator's state is left as it is, as torch's)."""
    if _is_meta(device):
        shape, dtype = (args[2], args[4]) if draw is _integers else (args[0], args[2])
        return _finish(_meta.make((shape,) if draw is _permutation else shape, dtype), None, requires_grad)
    if _tape_local.tracing is not None:
        return _tape_local.tape.record_draw(draw, args, requires_grad)
    return _finish(draw(*args), None, requires_grad)


def rand_like(input, dtype=None, requires_grad=False, *, layout=None, device=None, memory_format=None):
    if dtype is None and device is None and memory_format is None and _like_fast_ok(input):
        data = random.rand_f32(input._data.shape)
        if data is not None:
            return _drawn_fast(data, requires_grad)
    return _drawn_like(rand, random.uniform, input, dtype, requires_grad, device, memory_format)


def randn_like(input, dtype=None, requires_grad=False, *, layout=None, device=None, memory_format=None):
    if dtype is None and device is None and memory_format is None and _like_fast_ok(input):
        data = random.randn_f32(input._data.shape)
        if data is not None:
            return _drawn_fast(data, requires_grad)
    return _drawn_like(randn, _normal_serial, input, dtype, requires_grad, device, memory_format)


def _like_fast_ok(input):
    """Whether rand_like / randn_like(input) is rand / randn of input's shape in float32 on the fast path: a
    contiguous float32 CPU tensor (its strides None: the result's are C's too), no trace running."""
    data = getattr(input, "_data", None)
    return (type(data) is np.ndarray and data.dtype == _F32_NP and getattr(input, "_strides", 0) is None
            and _tape_local.tracing is None)


def _normal_serial(shape, generator, dtype):
    return random.normal(shape, generator, dtype, serial=True)  # (torch's normal_ of a tensor not contiguous)


def _drawn_like(factory, draw, input, dtype, requires_grad, device, memory_format):
    """empty_like(input).uniform_() / normal_(): the result takes the input's strides where they are dense (and
    not contiguous), and torch's fill walks its memory, so the draws land in memory order (random.in_memory_order)."""
    strides = _like_strides(input, memory_format)
    dtype, device = dtype or input.dtype, device or input.device
    if strides is None or _is_meta(device):
        return _with_format(factory(*input.shape, dtype=dtype, requires_grad=requires_grad, device=device), input,
                            memory_format)
    t = _drawn(functools.partial(_in_memory_order, strides, draw), (tuple(input.shape), None, _float(dtype)),
               requires_grad, device)
    t._strides = strides
    return t


def _in_memory_order(strides, draw, shape, *args):
    return random.in_memory_order(shape, strides, lambda s: draw(s, *args))


def _with_format(t, input, memory_format):
    if memory_format is not None or input._strides is not None:
        t._strides = _like_strides(input, memory_format)
    return t


# -- more of torch's factories ------------------------------------------------------------------------------------
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """torch.scalar_tensor: a 0-d tensor of the number s, in the default float dtype unless dtype is given."""
    meta = _is_meta(device)
    if isinstance(s, Tensor):
        s = s.item()
    if not isinstance(s, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type(s).__name__}")
    return _finish(np.array(s, _float(dtype)), None, requires_grad, meta=meta)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """torch.asarray: obj as a tensor, sharing memory where it can (a tensor of that dtype is returned itself, a
    C-contiguous NumPy array or buffer is aliased); copy=True always copies, copy=False refuses to. A tensor keeps
    its history unless requires_grad=False (torch 2.13's default, with its warning once)."""
    if _is_meta(device) and not (isinstance(obj, Tensor) and obj.is_meta):
        return tensor(obj, dtype=dtype, device=device, requires_grad=bool(requires_grad))
    if isinstance(obj, np.ndarray):
        refuse_negative_strides(obj)
    if isinstance(obj, Tensor):
        global _asarray_warned
        if requires_grad is None and obj._requires_grad and not _asarray_warned:
            _asarray_warned = True
            warnings.warn("torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
                          "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
                          "warning.", UserWarning, stacklevel=user_stacklevel())
        if requires_grad is False and obj._requires_grad:
            obj = obj.detach()
        if dtype is not None and _dtype.to_numpy_dtype(dtype) != obj._data.dtype:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{_dtype.scalar_type_name(obj._data.dtype)}' into "
                                 f"dtype '{_dtype.scalar_type_name(_dtype.to_numpy_dtype(dtype))}'.")
            t = obj.to(dtype)
        elif copy:
            t = obj.clone()
        else:
            t = obj
        if requires_grad and not t._requires_grad:
            t = (t.detach() if t is obj else t).requires_grad_(True)
        return t
    arr = None
    if isinstance(obj, np.ndarray):
        arr = obj
    elif not isinstance(obj, (list, tuple, bool, int, float, np.generic)):
        try:
            arr = np.asarray(memoryview(obj))  # (the buffer protocol: aliased, as torch does)
        except TypeError:
            arr = None
    if arr is not None:
        want = arr.dtype if dtype is None else _dtype.to_numpy_dtype(dtype)
        alias = arr.dtype == want and arr.flags.c_contiguous and arr.dtype.isnative
        if not alias and copy is False:
            raise ValueError(f"can't alias tensor with dtype '{_dtype.scalar_type_name(arr.dtype)}' into dtype "
                             f"'{_dtype.scalar_type_name(want)}'." if arr.dtype != want else
                             "can't alias NumPy array that is not contiguous.")
        _dtype.from_numpy_dtype(want)
        data = arr if alias and not copy else np.ascontiguousarray(arr, dtype=want).copy()
        return _finish(data, None, bool(requires_grad))
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    return tensor(obj, dtype=dtype, requires_grad=bool(requires_grad))


_asarray_warned = False


_frombuffer_warned = False


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """torch.frombuffer: a 1-d tensor over an object's buffer (sharing its memory), count elements of dtype from
    offset bytes on (count=-1: to the end)."""
    global _frombuffer_warned
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    np_dtype = _dtype.to_numpy_dtype(dtype)
    size, item = view.nbytes, np_dtype.itemsize
    if size == 0 or count == 0:
        raise ValueError(f"both buffer length ({size}) and count ({count}) must not be 0")
    if offset < 0 or offset >= size:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({size} "
                         f"bytes) minus 1")
    if count < 0:
        if (size - offset) % item:
            raise ValueError(f"buffer length ({size - offset} bytes) after offset ({offset} bytes) must be a multiple "
                             f"of element size ({item})")
        count = (size - offset) // item
    elif offset + count * item > size:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({size} bytes)")
    if view.readonly and not _frombuffer_warned:
        _frombuffer_warned = True  # (torch warns once per process)
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to a "
                      "tensor. This type of warning will be suppressed for the rest of this program.", UserWarning,
                      stacklevel=user_stacklevel())
    data = np.frombuffer(view.cast("B") if view.format != "B" or view.ndim != 1 else view, dtype=np_dtype,
                         count=count, offset=offset)
    return _finish(data, None, requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """torch.empty_strided: a tensor of this size whose stride() answers `stride` (its values are zeroed and
    stored in C order, as every tapegrad value)."""
    meta = _is_meta(device)
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    t = _finish(_zeros(_shape((size,)), _float(dtype), meta), None, requires_grad)
    t._strides = _strides.normal(t._data.shape, stride)
    return t
