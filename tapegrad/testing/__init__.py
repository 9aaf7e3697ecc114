"""torch.testing: assert_close (torch's default tolerances per dtype and its mismatch messages), make_tensor, and
the deprecated assert_allclose."""
import collections.abc
import math
import warnings

import numpy as np

from .. import _dtype, creation, random as _random
from ..device import cpu_only as _check_device
from ..ops.comparison import isclose
from ..tensor import Tensor, _new
from .._warnings import user_stacklevel

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

# torch's default (rtol, atol) per dtype; any other dtype compares exactly
_DTYPE_PRECISIONS = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
                     "float64": (1e-7, 1e-7)}
_NUMBER_DTYPES = {bool: _dtype.bool, int: _dtype.int64, float: _dtype.float64}


class _Failure(Exception):
    """A comparison that failed: the exception type and message to raise, and where in the inputs (torch's ErrorMeta)."""

    def __init__(self, type, msg, id=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    pass


def _type_repr(obj):
    t = type(obj)
    if isinstance(obj, Tensor):  # (scripts compare torch's names: tapegrad's Tensor stands for torch.Tensor)
        return "<class 'torch.nn.parameter.Parameter'>" if t.__name__ == "Parameter" else "<class 'torch.Tensor'>"
    return repr(t)


def _default_tolerances(*dtypes):
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(d.name if hasattr(d, "name") else str(d), (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _tolerances(dtypes, rtol, atol, id):
    if (rtol is None) != (atol is None):
        raise _Failure(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                                   f"{'rtol' if rtol is None else 'atol'}.", id)
    if rtol is None:
        return _default_tolerances(*dtypes)
    return rtol, atol


def _mismatch_msg(default_identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        msg = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at index {idx}"
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    msg = f"{default_identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None, rtol)


def _isclose(a, b, rtol, atol, equal_nan):
    return isclose(_new(a), _new(b), rtol=rtol, atol=atol, equal_nan=equal_nan)._data


def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype, id):
    if check_dtype and type(actual) is not type(expected):
        raise _Failure(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", id)
    dts = [_NUMBER_DTYPES[bool if isinstance(v, bool) else int if isinstance(v, int) else float]
           for v in (actual, expected)]
    rtol, atol = _tolerances(dts, rtol, atol, id)
    if actual == expected or (equal_nan and math.isnan(actual) and math.isnan(expected)):
        return
    if not (math.isfinite(actual) and math.isfinite(expected)) or abs(actual - expected) > atol + rtol * abs(expected):
        raise _Failure(AssertionError, _scalar_msg(actual, expected, rtol, atol), id)


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, check_stride, id):
    a, b = actual._data, expected._data
    if a.shape != b.shape:
        raise _Failure(AssertionError, f"The values for attribute 'shape' do not match: {actual.shape} != "
                                       f"{expected.shape}.", id)
    if actual.is_sparse != expected.is_sparse:
        raise _Failure(AssertionError, f"The values for attribute 'layout' do not match: {actual.layout} != "
                                       f"{expected.layout}.", id)
    if actual.is_sparse:
        actual, expected = actual.to_dense(), expected.to_dense()
        a, b = actual._data, expected._data
    elif check_stride and actual.stride() != expected.stride():
        raise _Failure(AssertionError, f"The values for attribute 'stride()' do not match: {actual.stride()} != "
                                       f"{expected.stride()}.", id)
    if check_dtype and a.dtype != b.dtype:
        raise _Failure(AssertionError, f"The values for attribute 'dtype' do not match: {actual.dtype} != "
                                       f"{expected.dtype}.", id)
    rtol, atol = _tolerances([actual.dtype, expected.dtype], rtol, atol, id)
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"{'rtol' if rtol < 0 else 'atol'} must be greater than or equal to zero, but got "
                           f"{rtol if rtol < 0 else atol}")
    if a.dtype != b.dtype:  # (check_dtype=False: both in the promoted dtype, as torch compares them)
        common = _dtype.result_type(a, b)
        a, b = a.astype(common), b.astype(common)
    matches = _isclose(a, b, rtol, atol, equal_nan)
    if matches.all():
        return
    if a.ndim == 0:
        raise _Failure(AssertionError, _scalar_msg(a.item(), b.item(), rtol, atol), id)
    raise _Failure(AssertionError, _tensor_msg(a, b, matches, rtol, atol), id)


def _tensor_msg(a, b, matches, rtol, atol):
    n = matches.size
    mismatches = n - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    fa, fb, fm = a.reshape(-1), b.reshape(-1), matches.reshape(-1)
    if not _dtype.is_float(fa.dtype):
        fa, fb = fa.astype(np.int64), fb.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(fa - fb)
        abs_diff[fm] = 0
        rel_diff = abs_diff / np.abs(fb)
    rel_diff[fm] = 0
    ia, ir = _argmax(abs_diff), _argmax(rel_diff)

    def where(k):
        return tuple(int(i) for i in np.unravel_index(k, matches.shape)) if matches.shape else ()

    return _mismatch_msg("Tensor-likes", extra, abs_diff[ia].item(), where(ia), atol, rel_diff[ir].item(), where(ir),
                         rtol)


def _argmax(v):
    """torch.max's index: a NaN wins (the first one), else the first maximum."""
    nan = np.flatnonzero(np.isnan(v)) if _dtype.is_float(v.dtype) else ()
    return int(nan[0]) if len(nan) else int(np.argmax(v))


def _is_number(x):
    return isinstance(x, (bool, int, float)) and not isinstance(x, Tensor)


def _compare(actual, expected, id, allow_subclasses, opts):
    if actual is None or expected is None:
        if actual is None and expected is None:
            return
        raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", id)
    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        actual, expected = _new(np.ascontiguousarray(actual)), _new(np.ascontiguousarray(expected))
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if not allow_subclasses and type(actual) is not type(expected):
            raise _Unsupported((actual, expected))
        return _compare_tensors(actual, expected, opts["rtol"], opts["atol"], opts["equal_nan"], opts["check_dtype"],
                                opts["check_stride"], id)
    if _is_number(actual) and _is_number(expected):
        return _compare_numbers(actual, expected, opts["rtol"], opts["atol"], opts["equal_nan"], opts["check_dtype"], id)
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        a_keys, e_keys = set(actual.keys()), set(expected.keys())
        if a_keys != e_keys:
            missing, extra = e_keys - a_keys, a_keys - e_keys
            msg = "The keys of the mappings do not match:\n"
            if missing:
                msg += f"Missing keys in the actual mapping: {sorted(missing)}\n"
            if extra:
                msg += f"Additional keys in the actual mapping: {sorted(extra)}\n"
            raise _Failure(AssertionError, msg.strip(), id)
        keys = list(actual.keys())
        try:
            keys = sorted(keys)
        except Exception:
            pass
        for k in keys:
            _compare(actual[k], expected[k], id + (k,), allow_subclasses, opts)
        return
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and isinstance(expected, seq) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", id)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, id + (i,), allow_subclasses, opts)
        return
    raise _Unsupported((actual, expected))


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False, check_device=True,
                 check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """torch.testing.assert_close: tensors (and numbers, sequences, mappings of them) equal in shape, dtype and value to
    within atol + rtol * |expected| (defaults per dtype: float32 1.3e-6 and 1e-5, float64 1e-7 and 1e-7, integers
    and bool exactly); AssertionError with torch's message otherwise. tapegrad tensors are all on the CPU, so
    check_device never fails."""
    opts = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, (), allow_subclasses, opts)
    except _Unsupported as e:
        a, b = e.args[0]
        raise TypeError(f"No comparison pair was able to handle inputs of type {_type_repr(a)} and "
                        f"{_type_repr(b)}.") from None
    except _Failure as f:
        raise f.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """torch.testing.assert_allclose (deprecated in torch, with its FutureWarning): assert_close with the older
    tolerances and no dtype check."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future release. "
                  "Please use `torch.testing.assert_close()` instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=user_stacklevel())
    if not isinstance(actual, Tensor):
        actual = creation.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = creation.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        older = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        rtol = max(older.get(t.dtype.name if hasattr(t.dtype, "name") else "", (0.0, 0.0))[0] for t in (actual, expected))
        atol = max(older.get(t.dtype.name if hasattr(t.dtype, "name") else "", (0.0, 0.0))[1] for t in (actual, expected))
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 check_stride=False, msg=msg or None)


# -- make_tensor ------------------------------------------------------------------------------------------------------
def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """torch.testing.make_tensor: a tensor of random values in [low, high) (floats: defaults -9 and 9; integers:
    -9 and 10, clamped to the dtype; bool: True or False), drawn from tapegrad's generator (so not torch's values)."""
    _check_device(device, "make_tensor")
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    np_dtype = _dtype.to_numpy_dtype(dtype)
    if requires_grad and not _dtype.is_float(np_dtype):
        raise ValueError("make_tensor: requires_grad must be False for integral dtype")
    if np_dtype == np.bool_:
        data = _random.uniform(shape, None, np.float64) < 0.5
    elif np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        lo, hi = _modify_low_high(low, high, info.min, info.max, -9, 10, dtype)
        data = np.floor(lo + (hi - lo) * _random.uniform(shape, None, np.float64)).astype(np_dtype)
        if exclude_zero:
            data[data == 0] = 1 if hi > 1 else -1
    else:
        fi = np.finfo(np.float32 if _dtype.is_bfloat16(np_dtype) else np_dtype)
        lo, hi = _modify_low_high(low, high, float(fi.min), float(fi.max), -9, 9, dtype)
        data = (lo + (hi - lo) * _random.uniform(shape, None, np.float64)).astype(np_dtype)
        if exclude_zero:
            data[data == 0] = fi.tiny
    t = creation._finish(np.ascontiguousarray(data), None, False)
    if noncontiguous and t.numel() > 1:
        t = t.repeat_interleave(2, dim=-1)[..., ::2]
    elif memory_format is not None:
        t = t.contiguous(memory_format=memory_format)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _modify_low_high(low, high, lowest, highest, default_low, default_high, dtype):
    """torch's rules: a None bound takes the default (clamped to the dtype), NaN bounds and low > high are errors."""
    def clamp(a, lo, hi):
        return min(max(a, lo), hi)

    low = low if low is not None else clamp(default_low, lowest, highest)
    high = high if high is not None else clamp(default_high, lowest, highest)
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in (_dtype.float16, _dtype.float32, _dtype.float64, _dtype.bfloat16):
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                      "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.", FutureWarning)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low > highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}], but {dtype} only "
                         f"supports [{lowest}, {highest}]")
    low, high = clamp(low, lowest, highest), clamp(high, lowest, highest)
    if dtype not in (_dtype.float16, _dtype.float32, _dtype.float64, _dtype.bfloat16):
        low, high = math.ceil(low), math.ceil(high)  # (torch: integer dtypes' high stays exclusive)
    return low, high
