"""Cumulative ops (cumprod, cummax, cummin, logcumsumexp), order statistics (median, nanmedian, kthvalue, mode,
quantile, nanquantile), NaN-ignoring reductions (nansum, nanmean), paired reductions (aminmax, std_mean,
var_mean), cov, corrcoef and the trapezoid rules.

Ops that select elements (cummax, median(dim), kthvalue, mode, ...) are gathers of their input at indices their
values choose, as max(dim) and sort are: the adjoint scatter-adds to the chosen indices, as torch's
value_selecting_reduction_backward and cummaxmin_backward do. quantile, nanmean, cov, corrcoef and the trapezoid
rules are composed of recorded ops in the order torch's composite implementations run them, so their values,
gradients and second derivatives are torch's.
"""
import collections
import math
import warnings

import numpy as np

from .. import _dtype, registry
from ..registry import Ctx, K_GATHER
from ..tensor import Tensor, _new
from ..tape import follow_indices, traced_value
from . import elementwise, reduce
from ._common import OPS, _array_rule_dtype, _dim, _record, _tensor
from .reduce import (_amax_arrays, _cast_arg, _correction, _int_to_long, _keep, _keep_shape, _np_reduce, _rdims,
                     _std_arrays, _var_arrays, _var_forward, _vjp_amax, _vjp_max_all, _max_all_arrays, _vjp_std,
                     _vjp_var, _values_indices, _warn_degrees_of_freedom)
from .shape import _gather, _gather_forward, _index_map, _vjp_gather
from .sort import torch_kth_position, torch_mode_position

return_types = Ctx(cummax=_values_indices("cummax"), cummin=_values_indices("cummin"),
                   median=reduce.return_types.median, nanmedian=_values_indices("nanmedian"),
                   kthvalue=reduce.return_types.kthvalue, mode=reduce.return_types.mode)


def _aminmax_type():
    cls = collections.namedtuple("aminmax", ["min", "max"])
    cls.__repr__ = lambda self: f"torch.return_types.aminmax(\nmin={self.min!r},\nmax={self.max!r})"
    return cls


return_types.aminmax = _aminmax_type()


# -- selections: a gather at indices the values choose ---------------------------------------------------------
def _select(x, op, d, keepdim, indices):
    """(values, indices) of x along d at the positions indices(array) gives (int64, size 1 along d or x's size
    there, as keepdim says); values are a gather under op, which a tapegrad.compile replay follows."""
    positions = _index_map(x)

    def idx_of(a):
        i = np.asanyarray(indices(a), dtype=np.int64, order="C")
        return i if keepdim else np.squeeze(i, d)

    def flat_of(i):
        return np.take_along_axis(positions, i if keepdim else np.expand_dims(i, d), d).reshape(i.shape)
    idx = traced_value(_new(idx_of(x._data)), idx_of, x)  # (recorded first: the values' replay reads it)
    flat = flat_of(idx._data)
    values = _gather(x, flat, op, x._data.reshape(-1)[flat])
    return follow_indices(values, idx, flat, flat_of), idx


def _scalar_select(cls, x, op):
    """A selection along dim 0 of a 0-d tensor: the element itself, index 0."""
    return cls(_gather(x, np.zeros((), np.int64), op, x._data.copy()), _new(np.zeros_like(x._data, np.int64)))


def _nonempty_dim(name, x, d):
    if x.ndim and x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _sorted_nan_last(a, d):
    """Stable argsort along d with NaN after every number (NumPy's order), ties in input order."""
    return np.argsort(a, axis=d, kind="stable")


def _kth_positions(a, d, k_of):
    """The input positions of the k-th element (0-based) of each slice along d in sorted order, k = k_of(valid
    counts, n) with valid the number of non-NaN elements of each slice (keepdim shape)."""
    order = _sorted_nan_last(a, d)
    valid = (np.sum(~np.isnan(a), axis=d, keepdims=True) if _dtype.is_float(a.dtype)
             else np.full(_keep_shape(a.shape, (d,)), a.shape[d]))
    k = np.asanyarray(k_of(valid, a.shape[d]), dtype=np.int64)
    return np.take_along_axis(order, k, d)


def _cum_select(name, cls, input, dim, better):
    """cummax/cummin: the running extreme along dim and the index it came from: the latest element that is at
    least as good (ties take the later index) or NaN (which then stays), as torch's cummax_cummin_helper."""
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    if x.ndim == 0:
        return _scalar_select(cls, x, OPS[name])
    def indices(a):
        run = better.accumulate(a, axis=d)
        hit = a == run
        if _dtype.is_float(a.dtype):
            hit |= np.isnan(a)
        at = np.arange(a.shape[d]).reshape((-1,) + (1,) * (a.ndim - d - 1))
        return np.maximum.accumulate(np.where(hit, at, 0), axis=d)
    if not _dtype.is_float(x._data.dtype):  # (no gradient: the indices pick the values directly)
        idx = indices(x._data)
        return cls(_new(np.take_along_axis(x._data, idx, d)), _new(np.asanyarray(idx, dtype=np.int64, order="C")))
    return cls(*_select(x, OPS[name], d, True, indices))


def cummax(input, dim):
    return _cum_select("cummax", return_types.cummax, input, dim, np.maximum)


def cummin(input, dim):
    return _cum_select("cummin", return_types.cummin, input, dim, np.minimum)


def _whole_median(name, input, ignore_nan):
    """median()/nanmedian() of all elements: the lower median (of the non-NaN ones for nanmedian; NaN if there
    is a NaN for median). The gradient is torch's evenly_distribute_backward: ties share it."""
    x = _tensor(input)
    out = _median_all_value(x._data, ignore_nan)
    if not _dtype.is_float(x._data.dtype):
        return _new(out)
    return _record(OPS[name + "_all"], out, (x,), aux=Ctx(keep=(1,) * x.ndim, dims=tuple(range(x.ndim))))


def _median_all_value(a, ignore_nan):
    flat = np.sort(a.reshape(-1))
    nan = _dtype.is_float(flat.dtype)
    valid = int(np.sum(~np.isnan(flat))) if nan else flat.size
    if flat.size == 0 or ignore_nan and valid == 0 or not ignore_nan and valid < flat.size:
        return np.asanyarray(np.nan if nan else 0, a.dtype)   # (an empty integer input: torch's value is unspecified)
    return np.asanyarray(flat[((valid if ignore_nan else flat.size) - 1) // 2])


def _dim_median(name, input, dim, keepdim, ignore_nan):
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    cls = getattr(return_types, name)
    if x.ndim == 0:
        return _scalar_select(cls, x, OPS[name])
    _nonempty_dim(name, x, d)
    if ignore_nan:   # the lower median of the non-NaN elements (of all of them, NaN, where every one is NaN)
        def k_of(valid, n):
            return np.maximum(valid - 1, 0) // 2
    else:            # the lower median, or the first NaN where there is one
        def k_of(valid, n):
            return np.where(valid < n, valid, (n - 1) // 2)
    return cls(*_select(x, OPS[name], d, keepdim, lambda a: _kth_positions(a, d, k_of)))


def median(input, dim=None, keepdim=False):
    """The lower median; with dim, (values, indices). Among equal medians the index is the one torch's CPU kernel picks."""
    if dim is None:
        return _whole_median("median", input, False)
    return _dim_median("median", input, dim, keepdim, False)


def nanmedian(input, dim=None, keepdim=False):
    if dim is None:
        return _whole_median("nanmedian", input, True)
    return _dim_median("nanmedian", input, dim, keepdim, True)


def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest element (k from 1) along dim and its index; NaN counts as the largest."""
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    k = int(k)
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if x.ndim == 0:
        return _scalar_select(return_types.kthvalue, x, OPS["kthvalue"])
    if x._data.dtype == np.bool_:
        raise NotImplementedError("\"kthvalue_cpu\" not implemented for 'Bool'")
    return return_types.kthvalue(*_select(x, OPS["kthvalue"], d, keepdim,
                                          lambda a: torch_kth_position(a, d, k - 1)))  # (torch's tie order)


def mode(input, dim=-1, keepdim=False):
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    if x.ndim == 0:
        return _scalar_select(return_types.mode, x, OPS["mode"])
    _nonempty_dim("mode", x, d)
    return return_types.mode(*_select(x, OPS["mode"], d, keepdim, lambda a: torch_mode_position(a, d)))


# -- quantile: torch's composite (Sorting.cpp quantile_compute), op for op ----------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    """quantile and nanquantile (ignore_nan): torch's checks (its messages say quantile() for both), then its
    composite: sort, ranks q * (count - 1), gather below and above, lerp."""
    x = _tensor(input)
    if x._data.size == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if x._data.dtype not in (np.float32, np.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q._data.dtype != x._data.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        qs = q._data
    else:
        qs = np.asanyarray(float(q), x._data.dtype)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    for v in qs.reshape(-1):
        if not 0 <= v <= 1:
            raise RuntimeError("quantile() q values must be in the range [0, 1]" if qs.ndim else
                               f"quantile() q must be in the range [0, 1] but got {float(v):g}")
    if dim is None:
        sorted_ = x.flatten().sort().values
        out_shape = (1,) * x.ndim if keepdim else ()
    else:
        d = _dim(dim, x.ndim)
        sorted_ = x.sort().values if d == x.ndim - 1 or x.ndim == 0 else x.unsqueeze(-1).transpose(d, -1).sort().values
        out_shape = tuple(1 if i == d else s for i, s in enumerate(x.shape)) if keepdim else \
            tuple(s for i, s in enumerate(x.shape) if i != d)
    sorted_ = sorted_.reshape(out_shape + (sorted_.shape[-1] if sorted_.ndim else 1,))
    qt = q.reshape(-1) if isinstance(q, Tensor) else _new(qs.reshape(-1))   # (a q that requires grad gets one)
    n = sorted_.shape[-1]
    nan = sorted_.detach().isnan()
    if ignore_nan:   # ranks among the non-NaN values; all NaN: rank 0, whose value is NaN
        ranks = qt * (nan.logical_not().sum(-1, keepdim=True) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:            # a NaN in the slice: the last rank, whose value is NaN
        ranks = (qt * (n - 1)).expand(out_shape + (len(qt),)) if out_shape else qt * (n - 1)
        ranks = ranks.masked_fill(nan.any(-1, keepdim=True), n - 1)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = _new(ranks._data.astype(np.int64))
    out = sorted_.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = _new(np.full(ranks.shape, 0.5, x._data.dtype)) if interpolation == "midpoint" else ranks - below
        above = _new(np.ceil(ranks._data).astype(np.int64))
        out = out.lerp(sorted_.gather(-1, above), weights)
    if qs.ndim == 0:
        return out.squeeze(-1)
    return out.unsqueeze(0).transpose(0, -1).squeeze(-1)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """torch's quantile: the sorted values at rank q * (n - 1), interpolated as `interpolation` says."""
    return _quantile(input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile(input, q, dim, keepdim, interpolation, True)


# -- cumulative products and log-sum-exp ----------------------------------------------------------------------
def cumprod(input, dim, *, dtype=None):
    x = _cast_arg(_tensor(input), dtype) if dtype is not None else _int_to_long(_tensor(input))
    d = _dim(dim, x.ndim)
    value = _cumprod_forward(d, x._data)
    if not _dtype.is_float(x._data.dtype):
        return _new(value)
    return _record(OPS["cumprod"], value, (x,), aux=d)


def _cumprod_forward(d, data):
    return np.cumprod(data, axis=d, dtype=data.dtype) if data.ndim else data.copy()


def _cumprod_masks(x, d):
    """Per slice along d, where the first zero is (z): `before` (positions < z) and `at` (position z)."""
    zero = x == 0
    first = np.cumsum(zero, axis=d) if x.ndim else zero.astype(np.int64)
    before = first == 0
    at = zero & (first == 1)
    return before, at


def _vjp_cumprod(ctx, g, inputs, out):
    """torch's cumprod_backward as create_graph runs it: without zeros, the reversed cumsum of g * out over x;
    with zeros, grad_k = sum_{j >= k} g_j prod_{i <= j, i != k} x_i for every k (O(n^2), as torch's), whose own
    derivative is cumprod's second derivative at the zeros too."""
    x, = inputs
    if x.ndim == 0:
        return (g,)
    d = ctx
    if not (x._data == 0).any():
        return ((g * out).flip(d).cumsum(d).flip(d) / x,)
    xl, gl = x.transpose(d, -1), g.transpose(d, -1)
    n = xl.shape[-1]
    rows = elementwise.where(_new(np.eye(n, dtype=bool)), 1, xl.unsqueeze(-2).expand(xl.shape[:-1] + (n, n)))
    later = _new(np.tril(np.ones((n, n), bool), -1))   # j < k: not in grad_k's sum
    grad = (gl.unsqueeze(-2) * rows.cumprod(-1)).masked_fill(later, 0).sum(-1)   # rows[..., k, i]: x_i, 1 at k
    return (grad.transpose(d, -1),)


def _cumprod_arrays(ctx, g, inputs, out, wanted):
    x, = inputs
    if not _array_rule_dtype(x) or x.ndim == 0:
        return None
    d = ctx
    before, at = _cumprod_masks(x, d)
    safe = np.where(before, x, 1)
    with np.errstate(all="ignore"):
        grad = np.where(before, np.flip(np.cumsum(np.flip(g * out, d), axis=d), d) / safe, 0).astype(x.dtype)
    if at.any():
        prefix = np.prod(safe, axis=d, keepdims=True)
        tail = np.cumprod(np.where(before | at, 1, x), axis=d)
        zero_term = prefix * np.sum(np.where(before, 0, g * tail), axis=d, keepdims=True)
        grad = grad + np.where(at, zero_term, 0).astype(x.dtype)
    return (grad,)


def logcumsumexp(input, dim):
    x = _tensor(input)
    if not _dtype.is_float(x._data.dtype):
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{_dtype.scalar_type_name(x._data.dtype)}'")
    d = _dim(dim, x.ndim)
    return _record(OPS["logcumsumexp"], _logcumsumexp_forward(d, x._data), (x,), aux=d)


def _logcumsumexp_forward(d, data):
    """log(cumsum(exp(x))) along d by pairwise logaddexp (stable for large values), accumulated in float64 as
    ATen's CPU kernel accumulates (acc_type: double for float32, float16, bfloat16), each result rounded once."""
    if data.ndim == 0:
        return data.copy()
    if data.dtype != np.float64:
        return np.logaddexp.accumulate(data.astype(np.float64), axis=d).astype(data.dtype)
    return np.logaddexp.accumulate(data, axis=d)


def _vjp_logcumsumexp(ctx, g, inputs, out):
    """torch's logcumsumexp_backward: sum_{j >= i} g_j exp(x_i - out_j), the positive and negative parts of g
    each summed in log space."""
    x, = inputs
    d = ctx if x.ndim else 0
    if x.ndim == 0:
        return (g,)
    lowest = float(np.finfo(x._data.dtype).min)
    parts = []
    for sign in (g > 0, g < 0):   # (log of 1 where the sign is not: no 0 / 0 in the derivative, as torch has)
        logs = elementwise.where(sign, elementwise.where(sign, g.abs(), 1).log(), lowest)
        parts.append(((logs - out).flip(d).logcumsumexp(d).flip(d) + x).exp())
    return (parts[0] - parts[1],)


def _logcumsumexp_arrays(ctx, g, inputs, out, wanted):
    x, = inputs
    if not _array_rule_dtype(x) or x.ndim == 0:
        return None
    d = ctx
    lowest = np.finfo(x.dtype).min
    with np.errstate(divide="ignore"):
        log_abs = np.log(np.abs(g))
    parts = []
    for sign in (g > 0, g < 0):
        logs = np.where(sign, log_abs, lowest).astype(x.dtype)
        with np.errstate(over="ignore"):   # (lowest - out + x: -inf, whose exp is the 0 it stands for)
            acc = np.flip(_logcumsumexp_forward(d, np.flip(logs - out, d)), d)
            parts.append(np.exp(acc + x))
    return (parts[0] - parts[1],)


# -- NaN-ignoring and paired reductions --------------------------------------------------------------------------
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    x = _cast_arg(_tensor(input), dtype) if dtype is not None else _int_to_long(_tensor(input))
    dims = _rdims(dim, x.ndim, empty_is_all=True)
    value = _np_reduce(np.nansum, x._data, dims, keepdim).astype(x._data.dtype, copy=False)
    if not _dtype.is_float(x._data.dtype):
        return _new(value)
    return _record(OPS["nansum"], value, (x,), aux=Ctx(keep=_keep_shape(x.shape, dims), dims=dims))


def _nansum_forward(ctx, data):
    return _np_reduce(np.nansum, data, ctx.dims, True).astype(data.dtype, copy=False)


def _vjp_nansum(ctx, g, inputs, out):
    """torch's: g * self.isnan().logical_not() (a NaN element gets 0)."""
    x, = inputs
    return (_keep(g, ctx.keep).expand(x.shape) * x.isnan().logical_not(),)


def _nansum_arrays(ctx, g, inputs, out, wanted):
    x, = inputs
    if not _array_rule_dtype(x):
        return None
    with np.errstate(invalid="ignore"):   # (an inf gradient at a NaN: NaN, as torch's product)
        return (np.broadcast_to(_keep(g, ctx.keep), x.shape) * ~np.isnan(x),)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """torch's composite: nansum over the count of non-NaN elements."""
    x = _tensor(input)
    if not _dtype.is_float(x._data.dtype):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_dtype.scalar_type_name(x._data.dtype)}")
    count = x.isnan().logical_not().sum(dim, keepdim) if dim is not None else \
        x.isnan().logical_not().sum(tuple(range(x.ndim)), keepdim) if keepdim else x.isnan().logical_not().sum()
    return nansum(x, dim, keepdim, dtype=dtype).div(count)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) in one call; ties share each one's gradient, as amin's and amax's."""
    x = _tensor(input)
    if dim is None:
        dims = tuple(range(x.ndim))
        if x._data.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
    else:
        d = _dim(dim, x.ndim)
        dims = (d,) if x.ndim else ()
        if x.ndim and x.shape[d] == 0:
            raise IndexError(f"aminmax(): Expected reduction dim {d} to have non-zero size.")
    ctx = Ctx(keep=_keep_shape(x.shape, dims), dims=dims)
    results = []
    for name, fn in (("aminmax_min", np.min), ("aminmax_max", np.max)):
        value = _np_reduce(fn, x._data, dims, keepdim)
        if x._data.dtype == np.bool_:
            value = value.astype(np.bool_)
        results.append(_new(value) if not _dtype.is_float(x._data.dtype) else _record(OPS[name], value, (x,), aux=ctx))
    return return_types.aminmax(*results)


def _paired(name, input, dim, unbiased, keepdim, correction):
    """(var or std, mean) over dim: two rows under torch's one grad_fn name (VarMeanBackward0, StdMeanBackward0)."""
    x = _tensor(input)
    if not _dtype.is_float(x._data.dtype):
        raise RuntimeError(f"{name} only support floating point and complex dtypes")
    dim, c = _correction(name, x, dim, unbiased, correction)
    dims = _rdims(dim, x.ndim, empty_is_all=True)
    n = math.prod(x.shape[d] for d in dims)
    _warn_degrees_of_freedom(name, n, c)
    ctx = Ctx(keep=_keep_shape(x.shape, dims), dims=dims, denom=max(0.0, n - c), std=name == "std_mean", n=n)
    spread = _record(OPS[name + "_spread"], _var_forward(ctx, x._data, keepdim), (x,), aux=ctx)
    with np.errstate(all="ignore"):
        mean = _mean_forward(ctx, x._data, keepdim)
    return spread, _record(OPS[name + "_mean"], mean, (x,), aux=ctx)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _paired("std_mean", input, dim, unbiased, keepdim, correction)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _paired("var_mean", input, dim, unbiased, keepdim, correction)


def _mean_forward(ctx, data, keepdim=True):
    accumulate = np.float32 if data.dtype.itemsize == 2 else None  # (bfloat16: NumPy would sum in bfloat16)
    with np.errstate(all="ignore"):
        return _np_reduce(np.mean, data, ctx.dims, keepdim, dtype=accumulate).astype(data.dtype, copy=False)


def _vjp_pair_mean(ctx, g, inputs, out):
    x, = inputs
    return (_keep(g, ctx.keep).expand(x.shape) * (1.0 / ctx.n if ctx.n else math.nan),)


def _pair_mean_arrays(ctx, g, inputs, out, wanted):
    x, = inputs
    if not _array_rule_dtype(x):
        return None
    with np.errstate(all="ignore"):
        return (np.broadcast_to(_keep(g, ctx.keep) / x.dtype.type(ctx.n), x.shape).copy(),)


# -- cov, corrcoef: torch's composites (Correlation.cpp) ----------------------------------------------------------
def cov(input, *, correction=1, fweights=None, aweights=None):
    x = _tensor(input)
    if x.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {x.ndim} "
                           f"dimensions")
    if x._data.dtype == np.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    data = x.reshape(1, -1) if x.ndim < 2 else x
    n = data.shape[1]
    w = None
    if fweights is not None:
        w = _tensor(fweights)
        if w.ndim > 1:
            raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but got fweights with "
                               f"{w.ndim} dimensions")
        if w._data.dtype.kind not in "iu":
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{_dtype.scalar_type_name(w._data.dtype)} dtype")
        if w.numel() != n:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there are observations in the "
                               f"input but got {w.numel()} != {n}")
        if n and w._data.min() < 0:
            raise RuntimeError("cov(): fweights cannot be negative")
    if aweights is not None:
        aw = _tensor(aweights)
        if aw.ndim > 1:
            raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but got aweights with "
                               f"{aw.ndim} dimensions")
        if not _dtype.is_float(aw._data.dtype):
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{_dtype.scalar_type_name(aw._data.dtype)} dtype")
        if aw.numel() != n:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there are observations in the "
                               f"input but got {aw.numel()} != {n}")
        if n and aw._data.min() < 0:
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aw if w is None else w * aw
    w_sum = w.sum() if w is not None else _new(np.asanyarray(n, np.int64))
    if w is not None and not w_sum._data.item():
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (data * w if w is not None else data).sum(1) / w_sum
    if w is not None and correction != 0 and aweights is not None:
        norm = w_sum - correction * (w * aw).sum() / w_sum
    else:
        norm = w_sum - correction
    if norm._data.item() <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.")
        norm = norm * 0
    centred = data - avg.unsqueeze(1)
    return elementwise.true_divide(centred.mm((centred * w if w is not None else centred).t()), norm).squeeze()


def corrcoef(input):
    x = _tensor(input)
    if x.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{x.ndim} dimensions")
    c = cov(x)
    if c.ndim == 0:   # a single variable: NaN where its variance is 0, inf or NaN, else 1
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    return c.clip(-1, 1)


# -- the trapezoid rules: torch's composites (Integration.cpp) ------------------------------------------------
def _scalar_op(op, t, c):
    """t times or over a Python number as torch's C++ composites call it (mul/div with a Scalar: MulBackward1,
    DivBackward1); an integer t promotes to the default float dtype first, as torch's."""
    if not _dtype.is_float(t._data.dtype):
        t = _new(t._data.astype(_dtype.default_float.np))
    return op(t, c)


def _zeros_except(y, d):
    return _new(np.zeros(tuple(s for i, s in enumerate(y.shape) if i != d), y._data.dtype))


def _spacing(y, x, d, name):
    """dx along d for sample points x: x viewed against y as torch's trapezoid does (1-d: along d; fewer dims:
    ones in front), then differenced."""
    if x._data.dtype == np.bool_:
        raise RuntimeError(f"{name}: received a bool input for `x`, but bool is not supported")
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        x = x.view(tuple(x.shape[0] if i == d else 1 for i in range(y.ndim)))
    elif x.ndim < y.ndim:
        x = x.view((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    n = x.shape[d]
    return x.narrow(d, 1, n - 1) - x.narrow(d, 0, n - 1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    y = _tensor(y)
    d = _dim(dim, y.ndim)
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: received both `x` and `dx`; specify only one")
    if y.shape[d] == 0:
        return _zeros_except(y, d)
    if y._data.dtype == np.bool_:
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    n = y.shape[d]
    if x is not None and isinstance(x, Tensor):
        spacing = _spacing(y, x, d, "trapezoid")
        return _scalar_op(elementwise._div_scalar, (spacing * (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))).sum(d),
                          2.0)
    step = 1.0 if dx is None and x is None else float(dx if dx is not None else x)
    return _scalar_op(elementwise._mul_scalar, y.sum(d) - _scalar_op(elementwise._mul_scalar,
                                                                     y.select(d, 0) + y.select(d, -1), 0.5), step)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    y = _tensor(y)
    d = _dim(dim, y.ndim)
    if x is not None and dx is not None:
        raise RuntimeError("cumulative_trapezoid: received both `x` and `dx`; specify only one")
    if y._data.dtype == np.bool_:
        raise RuntimeError("cumulative_trapezoid: received a bool input for `y`, but bool is not supported")
    n = y.shape[d]
    left, right = y.narrow(d, 0, max(n - 1, 0)), y.narrow(d, min(1, n), max(n - 1, 0))
    if x is not None and isinstance(x, Tensor):
        spacing = _spacing(y, x, d, "cumulative_trapezoid")
        return _scalar_op(elementwise._div_scalar, ((left + right) * spacing).cumsum(d), 2.0)
    step = 1.0 if dx is None and x is None else float(dx if dx is not None else x)
    return _scalar_op(elementwise._mul_scalar, left + right, step / 2.0).cumsum(d)


# == Declarations ==============================================================================================
def _whole_forward(np_fn):
    return lambda ctx, x: _np_reduce(np_fn, x, ctx.dims, True)


# selections: gathers at the indices the values chose (a replay recomputes the indices and follows them)
for _name, _grad_fn in (("cummax", "CummaxBackward0"), ("cummin", "CumminBackward0"),
                        ("median", "MedianBackward1"), ("nanmedian", "NanmedianBackward1"),
                        ("kthvalue", "KthvalueBackward0"), ("mode", "ModeBackward0")):
    registry.structural(_name, K_GATHER, _grad_fn, _vjp_gather, forward=_gather_forward)
registry.python("median_all", "MedianBackward0", lambda ctx, x: _median_all_value(x, False), _vjp_max_all,
                array_vjp=_max_all_arrays)
registry.python("nanmedian_all", "NanmedianBackward0", lambda ctx, x: _median_all_value(x, True), _vjp_max_all,
                array_vjp=_max_all_arrays)
registry.python("cumprod", "CumprodBackward0", _cumprod_forward, _vjp_cumprod, array_vjp=_cumprod_arrays)
registry.python("logcumsumexp", "LogcumsumexpBackward0", _logcumsumexp_forward, _vjp_logcumsumexp,
                array_vjp=_logcumsumexp_arrays)
registry.python("nansum", "NansumBackward0", _nansum_forward, _vjp_nansum, array_vjp=_nansum_arrays)
registry.python("aminmax_min", "AminmaxBackward0", _whole_forward(np.min), _vjp_amax, array_vjp=_amax_arrays)
registry.python("aminmax_max", "AminmaxBackward0", _whole_forward(np.max), _vjp_amax, array_vjp=_amax_arrays)
registry.python("var_mean_spread", "VarMeanBackward0", _var_forward, _vjp_var, array_vjp=_var_arrays)
registry.python("std_mean_spread", "StdMeanBackward0", _var_forward, _vjp_std, array_vjp=_std_arrays)
registry.python("var_mean_mean", "VarMeanBackward0", _mean_forward, _vjp_pair_mean, array_vjp=_pair_mean_arrays)
registry.python("std_mean_mean", "StdMeanBackward0", _mean_forward, _vjp_pair_mean, array_vjp=_pair_mean_arrays)

__all__ = ["cumprod", "cummax", "cummin", "logcumsumexp", "median", "nanmedian", "kthvalue", "mode", "quantile",
           "nanquantile", "nansum", "nanmean", "aminmax", "std_mean", "var_mean", "cov", "corrcoef", "trapezoid",
           "trapz", "cumulative_trapezoid"]
INPLACE = ("cumprod", "cumsum")

# Tensor's methods for this module's front-ends (grep `Tensor.<name> =`)
Tensor.cumprod = cumprod
Tensor.cummax = cummax
Tensor.cummin = cummin
Tensor.logcumsumexp = logcumsumexp
Tensor.median = median
Tensor.nanmedian = nanmedian
Tensor.kthvalue = kthvalue
Tensor.mode = mode
Tensor.quantile = quantile
Tensor.nanquantile = nanquantile
Tensor.nansum = nansum
Tensor.nanmean = nanmean
Tensor.aminmax = aminmax
Tensor.cov = cov
Tensor.corrcoef = corrcoef
