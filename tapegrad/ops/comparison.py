"""Element tests that give no gradient: isclose, isin, unravel_index (torch's values, dtypes and errors)."""
import itertools
import numbers
import operator

import numpy as np

from .. import _dtype
from ..tape import traced_value
from ..tensor import Size, Tensor, _new
from ._common import _tensor, broadcast_shape

__all__ = ["allclose", "isclose", "isin", "unravel_index"]
INPLACE = ()


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """torch.isclose: |input - other| <= atol + rtol * |other|, elementwise (broadcast), as a bool tensor."""
    _check_close_operands("isclose", input, other, rtol, atol)

    def values(a, b):
        return _isclose_arrays(a, b, rtol, atol, equal_nan)
    return traced_value(_new(values(input._data, other._data)), values, input, other)  # (recomputed at each replay)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """torch.allclose: isclose's checks and values, all of them."""
    _check_close_operands("allclose", input, other, rtol, atol)
    return bool(_isclose_arrays(input._data, other._data, rtol, atol, equal_nan).all())


def _check_close_operands(name, input, other, rtol, atol):
    for which, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{which}' (position {1 if which == 'input' else 2}) must be Tensor, "
                            f"not {type(v).__name__}")
    a, b = input._data, other._data
    if a.dtype != b.dtype:
        raise RuntimeError(f"{_dtype.scalar_type_name(a.dtype)} did not match {_dtype.scalar_type_name(b.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    broadcast_shape(a.shape, b.shape)  # (torch's message for shapes that do not broadcast)


def _isclose_arrays(a, b, rtol, atol, equal_nan):
    equal = a == b
    if a.dtype == np.bool_ or (a.dtype.kind in "iu" and rtol == 0 and atol == 0):
        return np.asanyarray(equal)
    # integers compare in the default float dtype, floats in their own (as torch computes it)
    work = a.dtype if _dtype.is_float(a.dtype) else _dtype.default_float.np
    if _dtype.is_bfloat16(work) or work == np.float16:
        work = np.dtype(np.float32)
    x, y = a.astype(work), b.astype(work)
    with np.errstate(invalid="ignore", over="ignore"):
        within = np.abs(x - y) <= work.type(atol) + work.type(rtol) * np.abs(y)
        close = equal | (np.isfinite(x) & np.isfinite(y) & within)
    if equal_nan:
        close = close | (np.isnan(x) & np.isnan(y))
    return np.asanyarray(close)


def _isin_operand(v, name):
    if isinstance(v, Tensor):
        return v._data
    if isinstance(v, numbers.Number) and not isinstance(v, complex):
        return v
    raise TypeError(f"isin() received an invalid combination of arguments - got ({name})")


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """torch.isin: whether each of elements is in test_elements (either may be a number), a bool tensor of
    elements' shape."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        got = ", ".join(type(v).__name__ for v in (elements, test_elements))
        raise TypeError(
            f"isin() received an invalid combination of arguments - got ({got}), but expected one of:\n"
            " * (Tensor elements, Tensor test_elements, *, bool assume_unique = False, bool invert = False, "
            "Tensor out = None)\n"
            " * (Number element, Tensor test_elements, *, bool assume_unique = False, bool invert = False, "
            "Tensor out = None)\n"
            " * (Tensor elements, Number test_element, *, bool assume_unique = False, bool invert = False, "
            "Tensor out = None)\n")
    e, t = _isin_operand(elements, type(elements).__name__), _isin_operand(test_elements, type(test_elements).__name__)
    for v in (e, t):
        if isinstance(v, (bool, np.bool_)) or (isinstance(v, np.ndarray) and v.dtype == np.bool_):
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    work = _dtype.result_type(e, t)

    def values(*arrays):
        it = iter(arrays)
        ea = np.asanyarray(next(it) if isinstance(e, np.ndarray) else e, dtype=work)
        ta = np.asanyarray(next(it) if isinstance(t, np.ndarray) else t, dtype=work).reshape(-1)
        return np.asanyarray(np.isin(ea, ta, invert=invert), np.bool_)  # (NaN is never in: NaN != NaN, as in torch)
    tensors = [v for v in (elements, test_elements) if isinstance(v, Tensor)]
    return traced_value(_new(values(*[v._data for v in tensors])), values, *tensors)


def unravel_index(indices, shape):
    """torch.unravel_index: the coordinates in `shape` of flat indices, one int64 tensor per dimension (indices
    outside the shape wrap, as torch's floor division and remainder give them)."""
    if isinstance(indices, (int, np.integer)) and not isinstance(indices, bool):
        raise AttributeError("'int' object has no attribute 'is_complex'")
    idx = _tensor(indices)
    if idx._data.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {idx.dtype}")
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    elif isinstance(shape, (tuple, list, Size)):
        for d in shape:
            if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
        shape = tuple(int(d) for d in shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(shape)}")
    coefs = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)), func=operator.mul))))
    if idx._data.size and (0 in coefs or 0 in shape):
        raise RuntimeError("ZeroDivisionError")

    def coordinate(k):
        def values(a):
            a = a.astype(np.int64)
            with np.errstate(divide="ignore"):
                return np.array(np.floor_divide(a, coefs[k]) % shape[k], np.int64, order="C")
        return values
    return tuple(traced_value(_new(coordinate(k)(idx._data)), coordinate(k), idx) for k in range(len(shape)))


Tensor.isclose = isclose
Tensor.allclose = allclose
