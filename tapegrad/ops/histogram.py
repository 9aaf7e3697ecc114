"""torch.histogram and torch.histogramdd: counts (or weight sums) of values in bins, with torch's bin edges (a
linspace computed in the input's dtype as torch's) and torch's rule that the last bin holds its right edge."""
import numpy as np

from .. import _dtype
from ..tape import untraceable
from ..tensor import Tensor, _new
from ._common import _tensor
from .decompositions import _return_type

__all__ = ["histogram", "histogramdd"]
INPLACE = ()

_histogram_type = _return_type("histogram", ["hist", "bin_edges"])
_histogramdd_type = _return_type("histogramdd", ["hist", "bin_edges"])


def _linspace(start, end, steps, dt):
    """torch's CPU linspace in dtype dt: the first half stepped from start, the second back from end."""
    start, end = dt.type(start), dt.type(end)
    step = (end - start) / dt.type(steps - 1)
    idx = np.arange(steps)
    half = steps // 2
    out = np.where(idx < half, start + step * idx.astype(dt), end - step * (steps - idx - 1).astype(dt))
    return out.astype(dt)


def _g(v):
    return f"{float(v):g}"


def _core(name, x, bins, range, weight, density):
    """x: (N, D) values; bins: a list of D ints or D 1-d tensors; range: None or 2 D numbers."""
    a = x._data
    n, D = a.shape
    dt = a.dtype
    edges = []
    for d in builtins_range(D):
        b = bins[d]
        if isinstance(b, Tensor):
            if b._data.ndim != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got "
                                   f"{b._data.ndim} dimensions in the bins tensor for dimension {d}")
            if b._data.size - 1 <= 0:
                raise RuntimeError(f"{name}: bins must be > 0, but got {b._data.size - 1} for dimension {d}")
            if b._data.dtype != dt:
                raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                                   f"got input with dtype {_dtype.cpp_type_name(dt)} and bins for dimension {d} with "
                                   f"dtype {_dtype.cpp_type_name(b._data.dtype)}")
            edges.append(b._data.copy())
            continue
        if b <= 0:
            raise RuntimeError(f"{name}: bins must be > 0, but got {b} for dimension {d}")
        if range is not None:
            lo, hi = float(range[2 * d]), float(range[2 * d + 1])
        elif n == 0:
            lo, hi = 0.0, 0.0
        else:
            col = a[:, d]
            lo, hi = float(np.min(col)), float(np.max(col))
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_g(lo)} max {_g(hi)} for "
                               f"dimension {d}")
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_g(lo)}, {_g(hi)}] is not finite")
        if lo == hi:
            if n == 0 and range is None:
                lo, hi = 0.0, 1.0
            else:
                lo, hi = lo - 0.5, hi + 0.5
        edges.append(_linspace(lo, hi, int(b) + 1, dt))
    if weight is not None:
        w = weight._data.reshape(-1)
    keep = np.ones(n, np.bool_)
    pos = []
    for d, e in enumerate(edges):
        col = a[:, d]
        with np.errstate(invalid="ignore"):
            keep &= (col >= e[0]) & (col <= e[-1])
        p = np.searchsorted(e, col, side="right") - 1
        pos.append(np.minimum(p, len(e) - 2))  # the rightmost bin holds its right edge
    shape = tuple(len(e) - 1 for e in edges)
    hist = np.zeros(shape, dt)
    idx = tuple(p[keep] for p in pos)
    np.add.at(hist, idx, w[keep] if weight is not None else dt.type(1))
    if density:
        total = hist.sum()
        widths = [np.diff(e) for e in edges]
        volume = widths[0]
        for wd in widths[1:]:
            volume = np.multiply.outer(volume, wd)
        hist = (hist / total / volume).astype(dt)
    return _new(np.ascontiguousarray(hist)), [_new(e) for e in edges]


builtins_range = range


def _check_input(name, x, weight, inner):
    if not _dtype.is_float(x._data.dtype) or _dtype.is_bfloat16(x._data.dtype) or x._data.dtype == np.float16:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_dtype.scalar_type_name(x._data.dtype)}'")
    if weight is not None:
        weight = _tensor(weight)
        if weight._data.shape != inner:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                               f"input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(inner) + [x._data.shape[-1] if name != 'torch.histogram()' else 1]} and weight "
                               f"with shape {list(weight._data.shape)}")
        if weight._data.dtype != x._data.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                               f"have the same dtype, but got input({_dtype.cpp_type_name(x._data.dtype)}), and "
                               f"weight({_dtype.cpp_type_name(weight._data.dtype)})")
    return weight


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """torch.histogram: (hist, bin_edges) of input's flattened values; bins an int (equal bins over range, or
    over the values' min and max) or a 1-d tensor of increasing edges. No gradient (torch has none either)."""
    if out is not None:
        raise NotImplementedError("tapegrad: histogram(out=...) is not supported")
    untraceable("histogram: its bins follow its input's values")
    x = _tensor(input)
    w = _check_input("torch.histogram()", x, weight, x._data.shape)
    if w is not None:
        w = _new(w._data.reshape(-1))
    flat = _new(x._data.reshape(-1, 1))
    hist, edges = _core("torch.histogram()", flat, [bins], None if range is None else tuple(range), w, density)
    return _histogram_type(hist, edges[0])


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """torch.histogramdd: the D-dimensional histogram of input's (..., D) points; bins an int, D ints or D 1-d
    tensors of edges; range 2 D numbers (min, max per dimension)."""
    untraceable("histogramdd: its bins follow its input's values")
    x = _tensor(input)
    if x._data.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    D = x._data.shape[-1]
    w = _check_input("torch.histogramdd()", x, weight, x._data.shape[:-1])
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        bins = [int(bins)] * D
    elif isinstance(bins, Tensor):
        raise NotImplementedError("tapegrad: histogramdd with one bins tensor: pass a list of D 1-d tensors")
    else:
        bins = list(bins)
        if len(bins) != D:
            raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if range is not None and len(range) != 2 * D:
        raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should have {2 * D} elements, "
                           f"but got {len(range)}")
    flat = _new(x._data.reshape(-1, D))
    if w is not None:
        w = _new(w._data.reshape(-1))
    hist, edges = _core("torch.histogramdd()", flat, bins, range, w, density)
    return _histogramdd_type(hist, tuple(edges))


Tensor.histogram = histogram
