"""Reductions (sum, mean, prod, var, std, amax, max, argmax, logsumexp, softmax, cumsum) and the
adjoints' shapes (expand, sum_to_shape)."""
import builtins
import collections
import math
import warnings

import numpy as np

from .. import _dtype, _meta, _strides, kernels, registry
from ..grad_mode import is_grad_enabled
from ..registry import Ctx, K_EXPAND, K_SUM
from ..tensor import Tensor, _new
from ..tape import follow_indices, traced_value
from . import elementwise
from .elementwise import where
from ._signatures import Signatures
from ._common import (OPS, _array_rule_dtype, _as_view, _autocast_float32, _dim, _dims, _float, _in_float32, _mask,
                      _record, _sizes, _sizes_or_keyword, _tensor, _to_dtype, summed_dims, window_of)
from .._warnings import user_stacklevel


def _reduce(name_all, name_dim, np_fn, input, dim, keepdim, dtype, scale_of):
    if dim is None and dtype is None and type(input) is Tensor and input._data.dtype.char in "fd":
        data = input._data  # (the common case first: a float tensor reduced whole)
        ndim = data.ndim
        return _record(OPS[name_dim if keepdim else name_all], np_fn(data, _AXES[ndim], keepdim), (input,),
                       scale_of(data.size), 0.0, (1 << ndim) - 1)
    x = _tensor(input)
    if dtype is not None:
        np_dtype = _dtype.to_numpy_dtype(dtype)
        if name_all == "mean_all" and np_dtype.kind in "biu":
            raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {_dtype.scalar_type_name(np_dtype)}")
        x = _to_dtype(x, np_dtype)
    elif x._data.dtype.kind in "biu" and name_all == "mean_all":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {_dtype.scalar_type_name(x._data.dtype)}")
    elif x._data.dtype.kind in "biu":  # torch sums bool and every integer type in int64
        x = _int_to_long(x)
    ndim = x._data.ndim
    dims = _rdims(dim, ndim, empty_is_all=True) if ndim else ()  # (dim=[]: every dim, as torch)
    data = x._data.astype(np.float32) if _dtype.is_reduced_float(x._data.dtype) else x._data  # (float32 sums)
    out = np_fn(data, dims, keepdim)
    if out.dtype != x._data.dtype:
        out = out.astype(x._data.dtype)
    n = math.prod(x._data.shape[d] for d in dims)
    op = OPS[name_all if dim is None and not keepdim else name_dim]
    return _record(op, out, (x,), scale_of(n), 0.0, _mask(dims))


_AXES = [tuple(range(ndim)) for ndim in range(65)]  # (every axis, by rank: torch's limit is 64 dimensions)


def _one(n):
    return 1.0


def sum(input, dim=None, keepdim=False, dtype=None):
    return _reduce("sum_all", "sum", _sum_values, input, dim, keepdim, dtype, _one)


def mean(input, dim=None, keepdim=False, dtype=None):
    return _reduce("mean_all", "mean", _mean_values, input, dim, keepdim, dtype, lambda n: 1.0 / n if n else math.nan)


# float32 elements from which a whole-array sum is compiled (kernels/reduce.py): below it the call's Python costs
# more than NumPy's pairwise loop saves (2,000 elements: 1.5 against 1.0 us)
_COMPILED_SUM = 8192


def _whole_float32(data, axes):
    """Whether kernels/reduce.py sums this sum or mean: a float32 array of at least _COMPILED_SUM elements, whole."""
    return data.size >= _COMPILED_SUM and len(axes) == data.ndim and data.dtype == np.float32 and data.flags.c_contiguous


def _compiled_total(data, keepdims, n=1):
    """kernels/reduce.py's float64 sum of a whole float32 array, over n, rounded to float32 once."""
    return np.array(np.float32(kernels.module("reduce").float64_sum(data.reshape(-1)) / n), ndmin=data.ndim * keepdims)


def _sum_values(data, axes, keepdims):
    """sum's value (and tapegrad.compile's replay of it): np.add.reduce (np.sum's own, without its 2 us Python
    wrapper), except a float32 array summed whole, which kernels/reduce.py sums in float64 lanes."""
    if _whole_float32(data, axes):
        return _compiled_total(data, keepdims)
    return np.asanyarray(np.add.reduce(data, axes, None, None, keepdims))


def _mean_values(data, axes, keepdims):
    """mean's value, as _sum_values computes sums (a float32 mean over the whole array: the float64 sum over n)."""
    if _whole_float32(data, axes):
        return _compiled_total(data, keepdims, data.size)
    n = math.prod([data.shape[a] for a in axes])
    if n and data.dtype.char in "fd":  # (np.mean's own sum and division, without its 2 us of Python; np.mean
        # sums float16 in float32)
        return np.asanyarray(np.add.reduce(data, axes, None, None, keepdims) / n)
    return np.asanyarray(np.mean(data, axis=axes, keepdims=keepdims))


def sum_to_shape(x, shape):
    """Sum x down to `shape` (undo broadcasting): the adjoint of expand."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    dims = summed_dims(x.shape, shape)
    out = _sum_values(x._data, dims, True).reshape(shape)
    return _record(OPS["sum_to_shape"], out, (x,), 1.0, 0.0, _mask(dims))


def expand(input, *sizes, size=None):
    x = _tensor(input)
    sizes = _sizes(_sizes_or_keyword(sizes, size, "expand", "size"))
    if len(sizes) < x.ndim:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(x.shape)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({x.ndim})")
    lead = len(sizes) - x.ndim
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    for i in range(x.ndim):
        if x.shape[i] != 1 and x.shape[i] != shape[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({shape[lead + i]}) must match the existing size "
                               f"({x.shape[i]}) at non-singleton dimension {lead + i}.  Target sizes: "
                               f"{list(sizes)}.  Tensor sizes: {list(x.shape)}")
    if shape == x.shape:
        return x
    out = np.empty(shape, x._data.dtype)
    try:
        np.copyto(out, x._data)  # (np.broadcast_to's Python wrapper cost more than the copy of a gradient's expand)
    except NotImplementedError:  # (a meta tensor's: no values to copy, _meta.NO_DATA)
        out = _meta.make(shape, x._data.dtype)
    t = _record(OPS["expand"], out, (x,))
    t._strides = _strides.of_expand(x, shape)  # (broadcast dimensions: stride 0, as torch's expand view)
    return _as_view(x, t, np.broadcast_to(window_of(x), shape))


# -- reductions with a Python adjoint ------------------------------------------------------------------
def _rdims(dim, ndim, empty_is_all=False):
    """Reduction dims as a sorted tuple; None (or () where torch takes it as "all") reduces every dim."""
    if dim is None or empty_is_all and isinstance(dim, (tuple, list)) and len(dim) == 0:
        return tuple(range(ndim))
    dims = _dims(dim, ndim)
    return () if ndim == 0 else tuple(sorted(dims))


def _keep_shape(shape, dims):
    return tuple(1 if d in dims else s for d, s in enumerate(shape))


def _np_reduce(fn, data, dims, keepdim, **kw):
    if data.ndim == 0:
        return np.asanyarray(fn(data, **kw))
    return np.asanyarray(fn(data, axis=dims, keepdims=keepdim, **kw))


def _cast_arg(x, dtype):
    return x if dtype is None else _to_dtype(x, _dtype.to_numpy_dtype(dtype))


def _int_to_long(x):
    return _new(x._data.astype(np.int64)) if x._data.dtype.kind in "biu" and x._data.dtype != np.int64 else x


def prod(input, dim=None, keepdim=False, dtype=None):
    input, = _autocast_float32(input)  # (torch's CPU autocast: in float32)
    x = _cast_arg(_tensor(input), dtype) if dtype is not None else _int_to_long(_tensor(input))
    if dim is not None:
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise TypeError(f"prod() received an invalid combination of arguments - got ({type(dim).__name__}), but "
                            f"expected one of:\n * (*, torch.dtype dtype = None)\n * (int dim, bool keepdim = False, "
                            f"*, torch.dtype dtype = None)")
        _dim(dim, x.ndim)
    dims = _rdims(dim, x.ndim)
    out = _np_reduce(np.prod, x._data, dims, keepdim and dim is not None).astype(x._data.dtype, copy=False)
    if not _dtype.is_float(x._data.dtype):
        return _new(out)
    ctx = Ctx(keep=_keep_shape(x.shape, dims), dims=dims, n=math.prod(x.shape[d] for d in dims))
    return _record(OPS["prod_all" if dim is None else "prod"], out, (x,), aux=ctx)


def _correction(name, x, dim, unbiased, correction):
    if isinstance(dim, bool):   # legacy var(unbiased)
        dim, unbiased = None, dim
    if not _dtype.is_float(x._data.dtype):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both 'unbiased' and "
                        f"'correction'")
    c = float(correction) if correction is not None else (0.0 if unbiased is False else 1.0)
    return dim, c


def _var(name, input, dim, unbiased, keepdim, correction):
    x = _tensor(input)
    dim, c = _correction(name, x, dim, unbiased, correction)
    dims = _rdims(dim, x.ndim, empty_is_all=True)
    n = math.prod(x.shape[d] for d in dims)
    _warn_degrees_of_freedom(name, n, c)
    denom = builtins.max(0.0, n - c)
    ctx = Ctx(keep=_keep_shape(x.shape, dims), dims=dims, denom=denom, std=name == "std")
    return _record(OPS[name], _var_forward(ctx, x._data, keepdim), (x,), aux=ctx)


def _warn_degrees_of_freedom(name, n, correction):
    """torch's warning where var or std divide by n - correction <= 0 (`x.std()` of one element: NaN)."""
    if n - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      f"factor (input numel divided by output numel).", UserWarning, stacklevel=user_stacklevel())


def _var_forward(ctx, data, keepdim=True):
    if _dtype.is_reduced_float(data.dtype):  # (float16, bfloat16: in float32, rounded once, as torch's)
        return _in_float32(lambda a: _var_forward(ctx, a, keepdim), data)
    dims, dtype = ctx.dims, data.dtype
    with np.errstate(all="ignore"):
        if data.size and data.ndim:  # shifted by each group's first element: equal values give exactly 0, never inf
            data = data - data[tuple(slice(0, 1) if i in dims else slice(None) for i in range(data.ndim))]
        d = data - _np_reduce(np.mean, data, dims, True)
        var = _np_reduce(np.sum, d * d, dims, keepdim) / dtype.type(ctx.denom)
        return (np.sqrt(var) if ctx.std else var).astype(dtype, copy=False)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var("var", input, dim, unbiased, keepdim, correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var("std", input, dim, unbiased, keepdim, correction)


def _check_nonempty(name, x, dims, dim_given):
    if x._data.size:
        return
    if not dim_given:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                           f"the reduction dim with the 'dim' argument.")
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _extreme(name, np_fn, input, dim, keepdim):
    x = _tensor(input)
    all_dims = dim is None or isinstance(dim, (tuple, list)) and len(dim) == 0
    dims = _rdims(dim, x.ndim, empty_is_all=True)
    _check_nonempty(name, x, dims, not all_dims)
    out = _np_reduce(np_fn, x._data, dims, keepdim)
    if not _dtype.is_float(x._data.dtype):
        return _new(out)
    return _record(OPS[name], out, (x,), aux=Ctx(keep=_keep_shape(x.shape, dims), dims=dims))


def amax(input, dim=(), keepdim=False):
    return _extreme("amax", np.max, input, dim, keepdim)


def amin(input, dim=(), keepdim=False):
    return _extreme("amin", np.min, input, dim, keepdim)


def _values_indices(name):
    cls = collections.namedtuple(name, ["values", "indices"])
    cls.__repr__ = lambda self: f"torch.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"
    cls.__qualname__ = cls.__name__ = name
    return cls


return_types = Ctx(max=_values_indices("max"), min=_values_indices("min"), sort=_values_indices("sort"),
                   topk=_values_indices("topk"), mode=_values_indices("mode"), median=_values_indices("median"),
                   kthvalue=_values_indices("kthvalue"))


_MAX_MIN = {n: Signatures(n, "(Tensor input, *, Tensor out = None)", "(Tensor input, Tensor other, *, Tensor out = None)",
                          "(Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)")
            for n in ("max", "min")}


def _max_min(name, input, dim, keepdim, other):
    if not isinstance(input, Tensor) or (dim is not None and type(dim) is not int and not isinstance(dim, Tensor)
                                         and other is None and not keepdim):
        _MAX_MIN[name].check(*((input,) if dim is None else (input, dim)))
    if isinstance(dim, Tensor) or other is not None:   # max(a, b): the elementwise form
        pair = elementwise.maximum if name == "max" else elementwise.minimum
        return pair(input, other if other is not None else dim)
    x = _tensor(input)
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments - got (keepdim=bool)")
        _check_nonempty(name, x, (), False)
        out = np.asanyarray(np.max(x._data) if name == "max" else np.min(x._data))
        if not _dtype.is_float(x._data.dtype):
            return _new(out)
        dims = tuple(range(x.ndim))
        return _record(OPS[name + "_all"], out, (x,), aux=Ctx(keep=(1,) * x.ndim, dims=dims))
    d = _dim(dim, x.ndim)
    if x.ndim == 0:
        idx = np.zeros_like(x._data, np.int64)  # (zeros_like: a meta tensor's index is meta)
        values = _index_values(OPS[name + "_dim"], x, np.zeros((), np.int64))
        return getattr(return_types, name)(values, _new(idx))
    _check_nonempty(name, x, (d,), True)
    shape = x._data.shape
    outer, n, inner = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1:])
    # each result's position in x (C order) with its index along d at 0
    base = (np.arange(outer, dtype=np.int64) * (n * inner))[:, None] + np.arange(inner, dtype=np.int64)

    def indices(a):
        idx = a.argmax(axis=d, keepdims=keepdim) if name == "max" else a.argmin(axis=d, keepdims=keepdim)
        return np.asanyarray(idx, np.int64)

    def flat_of(idx):
        return (base + idx.reshape(outer, inner) * inner).reshape(idx.shape)
    idx = traced_value(_new(indices(x._data)), indices, x)  # (recorded first: the values' replay reads it)
    flat = flat_of(idx._data)
    values = _index_values(OPS[name + "_dim"], x, flat)
    return getattr(return_types, name)(follow_indices(values, idx, flat, flat_of), idx)


def _index_values(op, x, flat):
    from .shape import _gather
    return _gather(x, flat, op)


def max(input, dim=None, keepdim=False, *, other=None):
    return _max_min("max", input, dim, keepdim, other)


def min(input, dim=None, keepdim=False, *, other=None):
    return _max_min("min", input, dim, keepdim, other)


def _arg(name, np_fn, input, dim, keepdim):
    x = _tensor(input)
    if x._data.dtype == np.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        if x._data.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")

        def indices(a):
            out = np.asanyarray(np_fn(a.reshape(-1)), dtype=np.int64)
            return out.reshape((1,) * a.ndim) if keepdim else out
        return traced_value(_new(indices(x._data)), indices, x)
    d = _dim(dim, x.ndim)
    if x.ndim == 0:
        return _new(np.zeros_like(x._data, np.int64))  # (zeros_like: a meta tensor's index is meta)
    if x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")

    def indices(a):
        return np.asanyarray(np_fn(a, axis=d, keepdims=keepdim), dtype=np.int64, order="C")
    return traced_value(_new(indices(x._data)), indices, x)


def argmax(input, dim=None, keepdim=False):
    return _arg("argmax", np.argmax, input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    return _arg("argmin", np.argmin, input, dim, keepdim)


def logsumexp(input, dim, keepdim=False):
    x = _float(_tensor(input))
    dims = _rdims(dim, x.ndim)
    ctx = Ctx(keep=_keep_shape(x.shape, dims), dims=dims)
    return _record(OPS["logsumexp"], _logsumexp_forward(ctx, x._data, keepdim), (x,), aux=ctx)


def _logsumexp_forward(ctx, data, keepdim=True):
    dims = ctx.dims
    if data.size == 0:
        out = _np_reduce(np.sum, np.exp(data), dims, keepdim)
        with np.errstate(divide="ignore"):
            out = np.log(out)
    else:
        m = _np_reduce(np.max, data, dims, True)
        m = np.where(np.isinf(m), 0, m).astype(data.dtype)
        with np.errstate(divide="ignore"):
            out = np.log(_np_reduce(np.sum, np.exp(data - m), dims, True)) + m
        if not keepdim and data.ndim:
            out = out.reshape(tuple(s for d, s in enumerate(data.shape) if d not in dims))
    return out.astype(data.dtype, copy=False)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1   # torch's legacy implicit dim


def _softmax_input(name, input, dim, dtype):
    x = _cast_arg(_tensor(input), dtype)
    if not _dtype.is_float(x._data.dtype):
        raise NotImplementedError(f'"{name}_lastdim_kernel_impl" not implemented for \'{_dtype.scalar_type_name(x._data.dtype)}\'')
    if dim is None:
        dim = _softmax_dim(x.ndim)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{name}(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
    return x, _dim(dim, x.ndim)


def _shifted(data, d):
    """data - max along d: the stable softmax's exponent (ufuncs called as such: np.max's and np.sum's Python
    wrappers cost about 1 us each, of a 10 us softmax of 32 x 64)."""
    return np.subtract(data, np.maximum.reduce(data, d, None, None, True))


def softmax(input, dim=None, dtype=None, _stacklevel=3):
    x, d = _softmax_input("softmax", input, dim, dtype)
    # (iattr: the dim + 1, which tells the replay's compiled rule a row over the last dimension: runtime._softmax_here)
    return _record(OPS["softmax"], _softmax_forward(d, x._data), (x,), iattr=d + 1, aux=d)


_SOFTMAX_KERNEL_MAX = 1024  # kernels/softmax.py's MAX_SIZE (tests/test_engine.py), without importing Numba here


def _last_dim_rows(d, *arrays):
    """(rows, n) when the kernels of kernels/softmax.py take these arrays: float32 or float64 alike, C-contiguous,
    not empty and small (their MAX_SIZE), d their last dimension; else None."""
    a = arrays[0]
    if a.ndim == 0 or d != a.ndim - 1 or not 0 < a.size <= _SOFTMAX_KERNEL_MAX or a.dtype.char not in "fd":
        return None
    for b in arrays:
        if b.dtype != a.dtype or b.shape != a.shape or not b.flags.c_contiguous:
            return None
    n = a.shape[-1]
    return a.size // n, n


def _softmax_kernel(d, data, log):
    """softmax (log: log_softmax) of data over d by the compiled pass, or None where it does not apply."""
    rows = _last_dim_rows(d, data)
    if rows is None or type(data) is not np.ndarray:
        return None
    out = np.empty_like(data)
    kernels.module("softmax").forward(data.reshape(-1), out.reshape(-1), rows[0], rows[1], log)
    return out


def _softmax_forward(d, data):
    if _dtype.is_reduced_float(data.dtype):  # (float16, bfloat16: in float32, rounded once, as torch's)
        return _in_float32(lambda a: _softmax_forward(d, a), data)
    if data.ndim == 0 or data.size == 0:
        return np.exp(data - data) if data.ndim == 0 else data.copy()
    out = _softmax_kernel(d, data, False)
    if out is not None:
        return out
    e = _shifted(data, d)
    np.exp(e, out=e)
    e /= np.add.reduce(e, d, None, None, True)
    return e


def log_softmax(input, dim=None, dtype=None, _stacklevel=3):
    x, d = _softmax_input("log_softmax", input, dim, dtype)
    return _record(OPS["log_softmax"], _log_softmax_forward(d, x._data), (x,), iattr=d + 1, aux=d)


def _log_softmax_forward(d, data):
    if _dtype.is_reduced_float(data.dtype):
        if data.size and d == data.ndim - 1:  # torch's last-dim kernel keeps its sum and its log in the input's dtype
            z = _shifted(data.astype(np.float32), d)
            total = np.add.reduce(np.exp(z), d, None, None, True).astype(data.dtype).astype(np.float32)
            return (z - np.log(total).astype(data.dtype).astype(np.float32)).astype(data.dtype)
        return _in_float32(lambda a: _log_softmax_forward(d, a), data)  # (other dims: in float32, rounded once)
    if data.ndim == 0 or data.size == 0:
        return data - data if data.ndim == 0 else data.copy()
    out = _softmax_kernel(d, data, True)
    if out is not None:
        return out
    z = _shifted(data, d)
    total = np.add.reduce(np.exp(z), d, None, None, True)  # (>= 1, its max term being exp(0), or NaN: log never warns)
    z -= np.log(total)
    return z


def cumsum(input, dim, dtype=None):
    x = _cast_arg(_tensor(input), dtype) if dtype is not None else _int_to_long(_tensor(input))
    d = _dim(dim, x.ndim)
    out = _cumsum_forward(d, x._data)
    if not _dtype.is_float(x._data.dtype):
        return _new(out)
    return _record(OPS["cumsum"], out, (x,), aux=d)


def _cumsum_forward(d, data):
    return np.cumsum(data, axis=d, dtype=data.dtype) if data.ndim else data.copy()


def all(input, dim=None, keepdim=False):
    x = _tensor(input)
    out = _np_reduce(np.all, x._data, _rdims(dim, x.ndim), keepdim and dim is not None)
    return _new(out.astype(np.uint8) if x._data.dtype == np.uint8 else out)  # torch keeps uint8 here


def any(input, dim=None, keepdim=False):
    x = _tensor(input)
    out = _np_reduce(np.any, x._data, _rdims(dim, x.ndim), keepdim and dim is not None)
    return _new(out.astype(np.uint8) if x._data.dtype == np.uint8 else out)  # torch keeps uint8 here


# == Declarations: each op's derivative rule and its forward on arrays (tapegrad.compile) ==================
def _keep(g, ctx_shape):
    """g reshaped to the keepdim shape of a reduction (ctx_shape), ready to broadcast against the input."""
    return g if tuple(g.shape) == tuple(ctx_shape) else g.reshape(ctx_shape)


def _vjp_sum(ctx, g, inputs, out):
    x, = inputs
    return (g.reshape(ctx).expand(x.shape),)  # ctx: the keepdim shape


def _vjp_mean(ctx, g, inputs, out):
    x, = inputs
    return (g.reshape(ctx).expand(x.shape) * (math.prod(ctx) / builtins.max(x.numel(), 1)),)


def _vjp_expand(ctx, g, inputs, out):
    return (sum_to_shape(g, inputs[0].shape),)


# sums and expands run in the compiled replay by their kind, and tapegrad.compile reruns them by it too
registry.structural("sum", K_SUM, "SumBackward1", _vjp_sum)
registry.structural("sum_all", K_SUM, "SumBackward0", _vjp_sum)
registry.structural("mean", K_SUM, "MeanBackward1", _vjp_mean)
registry.structural("mean_all", K_SUM, "MeanBackward0", _vjp_mean)
registry.structural("expand", K_EXPAND, "ExpandBackward0", _vjp_expand)
registry.structural("sum_to_shape", K_SUM, "SumBackward1", _vjp_sum)


def _vjp_prod(ctx, g, inputs, out):
    """torch's prod_backward: g * out / x without zeros; with zeros, the product of the other elements."""
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    xd = x._data
    if not np.any(xd == 0):
        return (g * y / x,)
    if is_grad_enabled():  # differentiable: product of the others, one row per element (create_graph)
        dims, n = ctx.dims, ctx.n
        rest = tuple(d for d in range(x.ndim) if d not in dims)
        xp = x.permute(*(rest + dims)).reshape(tuple(x.shape[d] for d in rest) + (1, n))
        others = prod(where(_new(np.eye(n, dtype=bool)), 1.0, xp), -1)   # [..., n]
        perm_back = np.argsort(rest + dims)
        others = others.reshape(tuple(x.shape[d] for d in rest) + tuple(x.shape[d] for d in dims))
        return (g * others.permute(*perm_back.tolist()),)
    return (g * _new(_others_product(xd, ctx.dims)),)


def _prod_arrays(ctx, g, inputs, out, wanted):
    """_vjp_prod on arrays: g * out / x without zeros; with zeros, the product of the other elements."""
    x, = inputs
    if not _array_rule_dtype(x):
        return None
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    if not np.any(x == 0):
        return (g * y / x,)
    return (g * _others_product(x, ctx.dims),)


def _others_product(xd, dims):
    """For each element, the product of the other elements of its reduction group (exclusive cumprods)."""
    rest = tuple(d for d in range(xd.ndim) if d not in dims)
    perm = rest + tuple(dims)
    xp = np.transpose(xd, perm)
    lead = xp.shape[:len(rest)]
    flat = xp.reshape(lead + (-1,))
    ones = np.ones(lead + (1,), xd.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1)[..., ::-1]
    return np.transpose((left * right).reshape(xp.shape), np.argsort(perm))


def _vjp_var(ctx, g, inputs, out):
    x, = inputs
    g = _keep(g, ctx.keep)
    return (g * (np.float64(2.0) / ctx.denom) * (x - x.mean(ctx.dims, keepdim=True)),)  # denom 0: inf, as torch


def _var_arrays(ctx, g, inputs, out, wanted):
    x, = inputs
    if not _array_rule_dtype(x):
        return None
    with np.errstate(divide="ignore"):
        scale = float(np.float64(2.0) / ctx.denom)  # denom 0: inf, as torch
    return ((_keep(g, ctx.keep) * scale) * (x - np.mean(x, axis=ctx.dims, keepdims=True)),)


def _vjp_std(ctx, g, inputs, out):
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    gv = where(y == 0, 0.0, g / (2 * y))   # torch: zero gradient where std is 0
    return (gv * (np.float64(2.0) / ctx.denom) * (x - x.mean(ctx.dims, keepdim=True)),)


def _vjp_amax(ctx, g, inputs, out):
    """Ties share the gradient equally (torch's scale_grad_by_count)."""
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    mask = (x == y).to(x.dtype)  # a NaN extreme matches nothing: NaN gradients, as torch's amax
    return (mask * (g / mask.sum(ctx.dims, keepdim=True)),)


def _vjp_max_all(ctx, g, inputs, out):
    """max() and min() of all elements: torch's evenly_distribute_backward, where a NaN result counts the NaNs."""
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    mask = ((x == y) | (x.isnan() & y.isnan())).to(x.dtype)
    return (mask * (g / mask.sum(ctx.dims, keepdim=True)),)


def _vjp_softmax(ctx, g, inputs, out):
    return (out * (g - (g * out).sum(ctx, keepdim=True)),)      # ctx: the dim


def _vjp_log_softmax(ctx, g, inputs, out):
    return (g - out.exp() * g.sum(ctx, keepdim=True),)


def _vjp_logsumexp(ctx, g, inputs, out):
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    return (g * (x - y).exp(),)


def _vjp_cumsum(ctx, g, inputs, out):
    return (g.flip(ctx).cumsum(ctx).flip(ctx),)   # ctx: the dim


def _cumsum_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    return (np.flip(np.cumsum(np.flip(g, ctx), axis=ctx), ctx) if g.ndim else g,)


def _softmax_kernel_grad(d, g, out, log):
    """The input's gradient by the kernel the replay's compiled rule calls (the same bits), or None."""
    rows = _last_dim_rows(d, out, g)
    if rows is None or type(out) is not np.ndarray or type(g) is not np.ndarray:
        return None
    gx = np.zeros_like(out)
    kernels.module("softmax").backward(g.reshape(-1), out.reshape(-1), gx.reshape(-1), rows[0], rows[1], log)
    return (gx,)


def _softmax_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(out) or out.ndim == 0:
        return None
    return (_softmax_kernel_grad(ctx, g, out, False) or
            (out * (g - np.sum(g * out, axis=ctx, keepdims=True)),))


def _log_softmax_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(out) or out.ndim == 0:
        return None
    return (_softmax_kernel_grad(ctx, g, out, True) or
            (g - np.exp(out) * np.sum(g, axis=ctx, keepdims=True)),)


def _logsumexp_arrays(ctx, g, inputs, out, wanted):
    x, = inputs
    if not _array_rule_dtype(x):
        return None
    return (_keep(g, ctx.keep) * np.exp(x - _keep(out, ctx.keep)),)


def _std_arrays(ctx, g, inputs, out, wanted):
    x, = inputs
    if not _array_rule_dtype(x):
        return None
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    with np.errstate(divide="ignore", invalid="ignore"):
        gv = np.where(y == 0, 0.0, g / (2 * y))   # torch: zero gradient where std is 0
        scale = float(np.float64(2.0) / ctx.denom)
    return ((gv * scale) * (x - np.mean(x, axis=ctx.dims, keepdims=True)),)


def _ties_share(ctx, g, inputs, out, nan_counts):
    x, = inputs
    if not _array_rule_dtype(x):
        return None
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    mask = ((x == y) | (np.isnan(x) & np.isnan(y)) if nan_counts else x == y).astype(x.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (mask * (g / np.sum(mask, axis=ctx.dims, keepdims=True)),)


def _amax_arrays(ctx, g, inputs, out, wanted):
    """Ties share the gradient; a NaN extreme matches nothing (NaN gradients, as torch's amax)."""
    return _ties_share(ctx, g, inputs, out, False)


def _max_all_arrays(ctx, g, inputs, out, wanted):
    """max() and min() of all elements: torch's evenly_distribute_backward, where a NaN result counts the NaNs."""
    return _ties_share(ctx, g, inputs, out, True)


def _reduce_forward(np_fn):
    return lambda ctx, x: _np_reduce(np_fn, x, ctx.dims, True)


registry.python("prod", "ProdBackward1", _reduce_forward(np.prod), _vjp_prod, array_vjp=_prod_arrays)
registry.python("prod_all", "ProdBackward0", _reduce_forward(np.prod), _vjp_prod, array_vjp=_prod_arrays)
registry.python("var", "VarBackward0", _var_forward, _vjp_var, array_vjp=_var_arrays)
registry.python("std", "StdBackward0", _var_forward, _vjp_std, array_vjp=_std_arrays)
registry.python("amax", "AmaxBackward0", _reduce_forward(np.max), _vjp_amax, array_vjp=_amax_arrays)
registry.python("amin", "AminBackward0", _reduce_forward(np.min), _vjp_amax, array_vjp=_amax_arrays)
registry.python("max_all", "MaxBackward1", _reduce_forward(np.max), _vjp_max_all, array_vjp=_max_all_arrays)
registry.python("min_all", "MinBackward1", _reduce_forward(np.min), _vjp_max_all, array_vjp=_max_all_arrays)
registry.python("softmax", "SoftmaxBackward0", _softmax_forward, _vjp_softmax, array_vjp=_softmax_arrays,
                compiled_rule="softmax")
registry.python("log_softmax", "LogSoftmaxBackward0", _log_softmax_forward, _vjp_log_softmax,
                array_vjp=_log_softmax_arrays, compiled_rule="log_softmax")
registry.python("logsumexp", "LogsumexpBackward0", _logsumexp_forward, _vjp_logsumexp, array_vjp=_logsumexp_arrays)
registry.python("cumsum", "CumsumBackward0", _cumsum_forward, _vjp_cumsum, array_vjp=_cumsum_arrays)


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]


# Tensor's methods for this module's front-ends (grep `Tensor.<name> =`)
Tensor.sum = sum
Tensor.mean = mean
Tensor.expand = expand
Tensor.prod = prod
Tensor.var = var
Tensor.std = std
Tensor.amax = amax
Tensor.amin = amin
Tensor.max = max
Tensor.min = min
Tensor.argmax = argmax
Tensor.argmin = argmin
Tensor.logsumexp = logsumexp
Tensor.softmax = softmax
Tensor.log_softmax = log_softmax
Tensor.cumsum = cumsum
Tensor.all = all
Tensor.any = any
