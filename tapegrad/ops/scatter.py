"""Scatters and index writes (scatter, scatter_reduce, index_add/copy/fill, put, index_put, masked_scatter, the
slice/select/diagonal scatters), take, and the integer-valued searches and counts (argwhere, count_nonzero,
bincount, histc, searchsorted, bucketize).

Every write is one of three kinds over the flat positions `P` of the input it writes (computed once, in NumPy,
after the indices are checked): a *placement* (out = input with P replaced by src: input's gradient is g with P
zeroed, src's is g at P), an *accumulation* (out = input with src added at P: input's gradient is g, src's g at
P) or a *fill* (P set to one value: masked_fill's rule). A src that broadcasts, or is larger than the index, is
first expanded or sliced by recorded ops to P's shape, so its gradient sums or pads back as torch's does.
"""
import numbers
import warnings

import numpy as np

from .. import _dtype, registry
from ..grad_mode import is_grad_enabled, no_grad
from ..tape import guard, traced_value, untraceable
from ..tensor import Tensor, _new
from ._common import (OPS, _array_rule_dtype, _dim, _dims, _record, _tensor, _to_dtype, broadcast_shape,
                      scalar_to_dtype)
from .elementwise import where
from .reduce import expand
from .shape import (_READS_CONSTANT, _along, _gather, _gather_forward, _index_key, _index_map,
                    _masked_fill_arrays, _scatter_check, _vjp_gather, _vjp_masked_fill, gather, getitem, masked_fill,
                    scatter_add)
from .._warnings import user_stacklevel

__all__ = ["argwhere", "bincount", "bucketize", "count_nonzero", "diagonal_scatter", "histc", "index_add",
           "index_copy", "index_fill", "index_put", "index_reduce", "masked_scatter", "put", "scatter",
           "scatter_reduce", "searchsorted", "select_scatter", "slice_scatter", "take"]
INPLACE = ("scatter", "scatter_reduce", "index_add", "index_copy", "index_fill", "index_reduce", "put", "index_put",
           "masked_scatter")


# -- the three kinds of write ---------------------------------------------------------------------------------
def _place(name, x, src, positions, *saved):
    """x with the flat positions P replaced by src (P's shape; later duplicates win, as NumPy's assignment)."""
    out = x._data.copy()
    out.reshape(-1)[positions.reshape(-1)] = src._data.reshape(-1)
    if not _dtype.is_float(out.dtype):
        return _new(out)
    mask = np.zeros(out.shape, np.bool_)
    mask.reshape(-1)[positions.reshape(-1)] = True
    return guard(_record(OPS[name], out, (x, src), aux=(positions, _new(mask))), *saved)


def _accumulate(name, x, src, positions, *saved):
    """x with src (P's shape) added at the flat positions P, duplicates summed."""
    out = x._data.copy()
    np.add.at(out.reshape(-1), positions.reshape(-1), src._data.reshape(-1))
    if not _dtype.is_float(out.dtype):
        return _new(out)
    return guard(_record(OPS[name], out, (x, src), aux=positions), *saved)


def _fill(name, x, positions, value, *saved):
    """x with the flat positions P set to value (a number, or a 0-d tensor: then differentiable, as masked_fill)."""
    mask = np.zeros(x._data.shape, np.bool_)
    mask.reshape(-1)[positions.reshape(-1)] = True
    v = value._data if isinstance(value, Tensor) else scalar_to_dtype(value, x._data.dtype)  # (torch's conversion)
    out = np.where(mask, np.asanyarray(v).astype(x._data.dtype), x._data)
    if not _dtype.is_float(out.dtype):
        return _new(out)
    tensor_value = isinstance(value, Tensor)
    inputs = (x,) + ((_to_dtype(value, x._data.dtype),) if tensor_value and value._requires_grad else ())
    return guard(_record(OPS[name + ("_tensor" if tensor_value else "")], out, inputs, aux=_new(mask)), *saved)


def _first_bad(idx, lo, hi):
    """The first index (in C order, as torch's kernels meet it) outside [lo, hi), or None."""
    bad = (idx < lo) | (idx >= hi)
    return int(idx.reshape(-1)[np.argmax(bad.reshape(-1))]) if bad.any() else None


def _check_bounds(idx, n, d, error=RuntimeError, prefix=""):
    bad = _first_bad(idx, 0, n)
    if bad is not None:
        raise error(f"{prefix}index {bad} is out of bounds for dimension {d} with size {n}")


def _part(src, shape):
    """src's leading block of `shape` (a recorded slice, so its gradient pads back with zeros); a 0-d src is 1-d
    there, and an empty index takes none of a src of any shape."""
    if src.ndim == 0:
        src = src.reshape(1)
    if tuple(src.shape) == tuple(shape):
        return src
    if src.ndim != len(shape):
        return src.reshape(-1)[:0].reshape(shape)
    return getitem(src, tuple(slice(0, s) for s in shape))


def _same_dtype(x, src, message):
    if src._data.dtype != x._data.dtype:
        raise RuntimeError(message)


def _type(a):
    return _dtype.scalar_type_name(a.dtype)


# -- scatter, scatter_reduce ---------------------------------------------------------------------------------------
def _scatter_index(name, x, dim, index, src=None):
    """The checked index (an int64 array of at least one dim, as torch's kernels take a 0-d one) and dim of a
    scatter, with torch's errors (shape._scatter_check)."""
    index = _tensor(index)
    d = _dim(dim, x.ndim)
    return index, _scatter_check(x, d, index, src), d


_warned_reduce = [False]


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """out = input with out[index[i][j]][j] = src[i][j] (dim 0; likewise for others), or = value. reduce ('add',
    'multiply'): torch's deprecated in-place reduction, which has no derivative."""
    x = _tensor(input)
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing 1 required positional argument: 'src' or 'value'")
    is_tensor = isinstance(src, Tensor)
    if not is_tensor and not isinstance(src, (numbers.Number, np.number)):
        raise TypeError(f"scatter(): argument 'src' must be Tensor, not {type(src).__name__}")
    index, idx, d = _scatter_index("scatter", x, dim, index, src if is_tensor else None)
    positions = _along(x, d, idx)
    if reduce is not None:
        return _scatter_legacy_reduce(x, src, positions, idx, reduce, is_tensor)
    if not is_tensor:
        return _fill("scatter_value", x, positions, src, index)
    return _place("scatter", x, _part(src, idx.shape), positions, index)


def _scatter_legacy_reduce(x, src, positions, idx, reduce, is_tensor):
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if is_tensor and not _warned_reduce[0]:  # (once per process, as torch's TORCH_WARN_ONCE)
        _warned_reduce[0] = True
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                      "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
                      UserWarning, stacklevel=user_stacklevel())
    if is_grad_enabled() and (x._requires_grad or is_tensor and src._requires_grad):
        raise NotImplementedError("tapegrad: scatter(reduce=...) on a tensor that requires grad is not implemented "
                                  "(torch records it with no derivative; scatter_reduce has one)")
    values = _part(src, idx.shape)._data if is_tensor else \
        np.full(idx.shape, src, x._data.dtype)
    out = x._data.copy()
    ufunc = np.add if reduce == "add" else np.multiply
    ufunc.at(out.reshape(-1), positions.reshape(-1), values.astype(out.dtype).reshape(-1))
    return _new(out)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_array(x, d, idx, src, reduce, include_self):
    """scatter_reduce on arrays (src already idx's shape)."""
    positions = _along_shape(x.shape, d, idx).reshape(-1)
    out = x.copy()
    flat, values = out.reshape(-1), src.reshape(-1)
    if not include_self:  # the reduction of the scattered positions starts from the identity
        flat[positions] = {"sum": 0, "mean": 0, "prod": 1, "amax": _lowest(out.dtype),
                           "amin": _highest(out.dtype)}[reduce]
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    ufunc.at(flat, positions, values)
    if reduce == "mean":
        count = np.ones(out.size, np.int64) if include_self else np.zeros(out.size, np.int64)
        np.add.at(count, positions, 1)
        count = np.maximum(count, 1).reshape(out.shape).astype(out.dtype)
        out = np.floor_divide(out, count) if out.dtype.kind in "iu" else (out / count).astype(out.dtype)
    return out


def _lowest(dt):
    return -np.inf if _dtype.is_float(dt) else False if dt.kind == "b" else np.iinfo(dt).min


def _highest(dt):
    return np.inf if _dtype.is_float(dt) else True if dt.kind == "b" else np.iinfo(dt).max


def _along_shape(shape, d, idx):
    """Flat positions, in an array of `shape`, of take_along_dim(idx, d) (idx no larger outside d)."""
    if not shape:
        return np.zeros(idx.shape, np.int64)
    base = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    base = base[tuple(slice(0, idx.shape[k]) if k != d else slice(None) for k in range(len(shape)))]
    return np.take_along_axis(base, idx, d)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """out = input with src's elements reduced ('sum', 'prod', 'mean', 'amax', 'amin') into the positions index
    names along dim; include_self=False leaves input's values at those positions out of the reduction."""
    x, src = _tensor(input), _tensor(src)
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    index, idx, d = _scatter_index("scatter", x, dim, index, src)
    src = _part(src, idx.shape)
    out = _scatter_reduce_array(x._data, d, idx, src._data, reduce, include_self)
    if not _dtype.is_float(out.dtype):
        return _new(out)
    ctx = (d, _new(idx), reduce, include_self)
    return guard(_record(OPS["scatter_reduce"], out, (x, src), aux=ctx), index)


def _vjp_scatter_reduce(ctx, g, inputs, out):
    """torch's scatter_reduce_backward (FunctionsManual.cpp), in tapegrad ops (so it records under create_graph)."""
    d, index, reduce, include_self = ctx
    x, src = inputs
    if reduce == "sum":
        grad_self, grad_src = g, gather(g, d, index)
    elif reduce == "mean":
        n = _new((np.ones if include_self else np.zeros)(g.shape, g._data.dtype))
        n = scatter_add(n, d, index, _new(np.ones(index.shape, g._data.dtype)))
        n = masked_fill(n, n == 0, 1)
        grad_self, grad_src = g / n, gather(g, d, index) / gather(n, d, index)
    elif reduce == "prod":
        masked_self = masked_fill(x, x == 0, 1)
        masked_self_result = scatter_reduce(masked_self, d, index, src, reduce, include_self=include_self)
        grad_self = g * masked_self_result / masked_self
        src_zero = src == 0
        zeros = _new(np.zeros(x.shape, x._data.dtype))
        src_num_zeros = gather(scatter_add(zeros, d, index, _new(src_zero._data.astype(x._data.dtype))), d, index)
        single_zero = _new(src_zero._data & (src_num_zeros._data == 1))
        masked_src_result = scatter_reduce(x, d, index, masked_fill(src, single_zero, 1), reduce,
                                           include_self=include_self)
        grad_src = where(single_zero, gather(g * masked_src_result, d, index),
                         gather(g * out, d, index) / masked_fill(src, src_zero, 1))
    else:  # amax, amin: the gradient split evenly among the elements equal to the result
        value = gather(out, d, index)
        self_is = _new((x._data == out._data).astype(x._data.dtype))
        src_is = _new((src._data == value._data).astype(x._data.dtype))
        distributed = g / scatter_add(self_is, d, index, src_is)
        grad_self, grad_src = self_is * distributed, src_is * gather(distributed, d, index)
    if not include_self:
        grad_self = scatter(grad_self, d, index, 0.0)
    return grad_self, grad_src


def _scatter_reduce_arrays(ctx, g, inputs, out, wanted):
    """_vjp_scatter_reduce on arrays: the same rule, on unrecorded tensors."""
    if not _array_rule_dtype(g):
        return None
    with no_grad():
        grads = _vjp_scatter_reduce(ctx, _new(g), tuple(_new(a) for a in inputs), _new(out))
    return tuple(gr._data if w else None for gr, w in zip(grads, wanted))


# -- index_add, index_copy, index_fill ---------------------------------------------------------------------------
def _index_positions(x, d, idx):
    """Flat positions of x's slices idx along d: the shape of x with dim d of size len(idx)."""
    if x.ndim == 0:
        return np.zeros(idx.shape, np.int64)
    return np.take(_index_map(x), idx, axis=d)


def _source_like(x, source, d, n):
    """source (the shape of x with dim d of size n; 0-d where x is at most 1-d) as the positions' shape."""
    shape = list(x.shape) if x.ndim else []
    if shape:
        shape[d] = n
    if source.ndim == 0 and len(shape) <= 1:
        return source.reshape(*shape) if shape else source
    return source


def _index_source(name, x, dim, index, source):
    """index_add's and index_reduce's checks, in torch's words: the index (int64 array) and dim."""
    d = _dim(dim, x.ndim)
    index = _tensor(index)
    if index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index but got: {_type(index._data)}")
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{_type(index._data)} and size: {list(index.shape)}")
    idx = index._data.reshape(-1).astype(np.int64, copy=False)
    n_src = source.shape[d] if source.ndim else 1
    if idx.size != n_src:
        raise RuntimeError(f"{name}(): Number of indices ({idx.size}) should be equal to source.size(dim): "
                           f"({n_src}), for dim: {d}")
    _same_dtype(x, source, f"{name}(): self ({_type(x._data)}) and source ({_type(source._data)}) must have the "
                           f"same scalar type")
    if x.ndim and (source.ndim != x.ndim or any(source.shape[k] != x.shape[k] for k in range(x.ndim) if k != d)):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(x.shape)} source.shape = {list(source.shape)}")
    return index, idx, d


def index_add(input, dim, index, source, *, alpha=1):
    """out = input with alpha * source's slices added at the slices index names along dim (duplicates sum)."""
    x, source = _tensor(input), _tensor(source)
    index, idx, d = _index_source("index_add_", x, dim, index, source)
    _check_bounds(idx, x.shape[d] if x.ndim else 1, d)
    if alpha != 1:  # (an integer input's alpha a Scalar in its dtype, as torch converts it)
        source = _to_dtype(source * scalar_to_dtype(alpha, x._data.dtype), x._data.dtype)
    return _accumulate("index_add", x, source, _index_positions(x, d, idx), index)


_warned_beta = [False]


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """out = input with source's slices reduced ('prod', 'mean', 'amax', 'amin') into the slices index names along
    dim: scatter_reduce with index spread over source's shape, whose rule is index_reduce's (its grad_fn is
    ScatterReduceBackward0 where torch's is IndexReduceBackward0)."""
    x, source = _tensor(input), _tensor(source)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if not _warned_beta[0]:  # (once per process, as torch's TORCH_WARN_ONCE)
        _warned_beta[0] = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning,
                      stacklevel=user_stacklevel())  # (torch's C++ warning names the caller's line)
    index, idx, d = _index_source("index_reduce_", x, dim, index, source)
    if _first_bad(idx, 0, x.shape[d] if x.ndim else 1) is not None:
        raise IndexError("index out of range in self")
    if source.ndim == 0:
        spread = idx.reshape(())
    else:
        spread = np.broadcast_to(idx.reshape([-1 if k == d else 1 for k in range(source.ndim)]), source.shape)
    return guard(scatter_reduce(x, d, _new(np.ascontiguousarray(spread)), source, reduce, include_self=include_self),
                 index)


def index_copy(input, dim, index, source):
    """out = input with the slices index names along dim replaced by source's slices."""
    x, source = _tensor(input), _tensor(source)
    d = _dim(dim, x.ndim)
    index = _tensor(index)
    if index._data.dtype != np.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {_type(index._data)}")
    if index.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    idx = index._data.reshape(-1)
    n_src = source.shape[d] if source.ndim else 1
    if idx.size != n_src:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to source.size(dim) "
                         f"({n_src})")
    _same_dtype(x, source, f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{_type(x._data)} and (source) {_type(source._data)}")
    if x.ndim and source.ndim:
        for k in range(x.ndim):
            if k != d and (source.ndim != x.ndim or source.shape[k] != x.shape[k]):
                got, at = source.shape[k] if k < source.ndim else 1, k - (k > d)  # (at: the dim within the slice)
                raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                                   f"Destination slice shape: {x.shape[k]} at dimension {at} and source slice shape: "
                                   f"{got} at dimension {at}.")
    _check_bounds(idx, x.shape[d] if x.ndim else 1, d, IndexError, "index_copy_(): ")
    return _place("index_copy", x, _source_like(x, source, d, idx.size), _index_positions(x, d, idx), index)


def index_fill(input, dim, index, value):
    """out = input with the slices index names along dim (negative indices count from the end) set to value."""
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    index = _tensor(index)
    if index._data.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    idx = index._data.reshape(-1)
    n = x.shape[d] if x.ndim else 1
    bad = _first_bad(idx, -n, n)
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    return _fill("index_fill", x, _index_positions(x, d, idx % max(n, 1)), value, index)


# -- take, put, index_put, masked_scatter --------------------------------------------------------------------------
def _flat_index(name, x, index):
    """index (int64) as flat positions of x, negative ones from the end, with torch's range error."""
    index = _tensor(index)
    if index._data.dtype != np.int64:
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got {_type(index._data)}")
    idx, n = index._data, x._data.size
    bad = _first_bad(idx, -n, n)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return index, idx % max(n, 1)


def take(input, index):
    """input's elements at flat positions index (negative from the end), in index's shape."""
    x = _tensor(input)
    index, flat = _flat_index("take", x, index)
    flat = np.ascontiguousarray(flat, np.int64).reshape(index.shape)  # (ascontiguousarray makes a 0-d index 1-d)
    n = x._data.size

    def remap(i):  # (tapegrad.compile: the positions from the index a replay binds)
        bad = _first_bad(i, -n, n)
        if bad is not None:
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
        flat[...] = i % max(n, 1)
    remap.writes = (flat,)
    return guard(_gather(x, flat, OPS["take"]), index, remap=remap)


def put(input, index, source, accumulate=False):
    """out = input with source's elements written (accumulate: added) at the flat positions index names."""
    x, source = _tensor(input), _tensor(source)
    index, flat = _flat_index("put_", x, index)
    if source._data.size != flat.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source._data.size}, index.numel() = {flat.size}")
    _same_dtype(x, source, f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_type(x._data)} and source.dtype = {_type(source._data)}")
    source = source.reshape(flat.shape) if source.shape != flat.shape else source
    if accumulate:
        return _accumulate("put_accumulate", x, source, flat, index)
    return _place("put", x, source, flat, index)


def index_put(input, indices, values, accumulate=False):
    """out = input with out[indices] = values (accumulate: +=), indices a tuple of index tensors."""
    return _index_put(input, indices, values, accumulate, 1)


def _index_put(input, indices, values, accumulate, at):
    """index_put; `at`: the position torch's type errors give the indices (0 for the method, 1 for the function)."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' (position 1) must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    for k, i in enumerate(indices):
        if not isinstance(i, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument {at}, but got {type(i).__name__}")
        if i._data.dtype.kind not in "iub":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    x, key = _tensor(input), tuple(indices)
    if values._data.dtype != x._data.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {_type(x._data)} for "
                           f"the destination and {_type(values._data)} for the source.")
    k, _, _ = _index_key(key, x)
    positions = np.ascontiguousarray(_index_map(x)[k])
    try:
        np.broadcast_shapes(values.shape, positions.shape)
        if values.ndim > positions.ndim:
            raise ValueError
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(positions.shape)}") from None
    values = expand(values, positions.shape) if values.shape != positions.shape else values
    if accumulate:
        return _accumulate("index_put_accumulate", x, values, positions, *key)
    return _place("index_put", x, values, positions, *key)


def masked_scatter(input, mask, source):
    """out = input with the positions where mask (broadcast with input) is True taken by source's leading
    elements, in order."""
    x, mask, source = _tensor(input), _tensor(mask), _tensor(source)
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_type(mask._data)}")
    if source._data.dtype != x._data.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_type(x._data)} and {_type(source._data)}")
    shape = broadcast_shape(tuple(x.shape), tuple(mask.shape))
    if tuple(x.shape) != shape:
        x = expand(x, shape)
    m = np.broadcast_to(mask._data, shape)
    positions = np.flatnonzero(m)
    if positions.size > source._data.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    part = source.reshape(-1)
    if positions.size != source._data.size:
        part = getitem(part, slice(0, positions.size))
    return _place("masked_scatter", x, part, positions, mask)


# -- slice_scatter, select_scatter, diagonal_scatter ---------------------------------------------------------------
def _embed(name, x, src, positions):
    if tuple(src.shape) != positions.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(positions.shape)}")
    if src._data.dtype != x._data.dtype:
        src = _to_dtype(src, x._data.dtype)
    return _place(name, x, src, positions)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """input with input[..., start:end:step, ...] (at dim) replaced by src."""
    x, src = _tensor(input), _tensor(src)
    d = _dim(dim, x.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _embed("slice_scatter", x, src, _index_map(x)[key])


def select_scatter(input, src, dim, index):
    """input with input.select(dim, index) replaced by src."""
    x, src = _tensor(input), _tensor(src)
    d = _dim(dim, x.ndim)
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(x.shape)} at dimension {d}")
    return _embed("select_scatter", x, src, np.take(_index_map(x), index % n, axis=d))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with input.diagonal(offset, dim1, dim2) replaced by src."""
    x, src = _tensor(input), _tensor(src)
    d1, d2 = _dim(dim1, x.ndim), _dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _embed("diagonal_scatter", x, src, np.diagonal(_index_map(x), offset, d1, d2))


# -- searches and counts (no gradient) -----------------------------------------------------------------------------
def argwhere(input):
    """The indices of input's nonzero elements, (n, ndim) int64 (n depends on the values: untraceable)."""
    untraceable("argwhere: its output's shape depends on its input's values")
    return _new(np.argwhere(_tensor(input)._data).astype(np.int64))


def count_nonzero(input, dim=None):
    """The number of nonzero elements (over dim: an int or a tuple), int64."""
    x = _tensor(input)
    if isinstance(dim, (tuple, list)) and not dim:  # (dim=[]: every dim, as torch)
        dim = None
    dims = _dims(dim, x.ndim) if x.ndim else ()
    out = np.asanyarray(np.count_nonzero(x._data, axis=dims if dim is not None else None), np.int64)
    return traced_value(_new(out), lambda a: np.asanyarray(np.count_nonzero(a, axis=dims if dim is not None else None),
                                                        np.int64), x)


def bincount(input, weights=None, minlength=0):
    """The count (weights: the sum of weights) of each value of a 1-d non-negative integer input; float64 for
    integer and float64 weights, float32 for float32 weights, as torch."""
    untraceable("bincount: its output's length depends on its input's values")
    x = _tensor(input)
    if x._data.dtype.kind not in "iu":
        raise NotImplementedError(f'"bincount_cpu" not implemented for \'{_type(x._data)}\'')
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    a = x._data
    if a.ndim != 1 or a.size and a.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _new(np.bincount(a, minlength=minlength).astype(np.int64))
    w = _tensor(weights)._data
    if w.ndim != 1 or w.shape[0] != a.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dt = np.float32 if w.dtype == np.float32 else np.float64
    return _new(np.bincount(a, weights=w.astype(np.float64), minlength=minlength).astype(dt))


def histc(input, bins=100, min=0, max=0):
    """A histogram of `bins` equal bins over [min, max] (both 0: the input's range; a single value v: [v-1, v+1]);
    elements outside are ignored, max falls in the last bin."""
    x = _tensor(input)
    if not _dtype.is_float(x._data.dtype):
        raise NotImplementedError(f'"histogram_cpu" not implemented for \'{_type(x._data)}\'')
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")

    def hist(a):
        lo, hi = float(min), float(max)
        if lo == hi and a.size:
            lo, hi = float(a.min()), float(a.max())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
        if lo > hi:
            raise RuntimeError("torch.histc: max must be larger than min")
        # (ATen's linear interpolation, in the input's dtype: (x - lo) * bins / (hi - lo), truncated; in float64 a
        # float32 value on a bin edge fell in the bin below torch's)
        t = a.dtype.type
        lo_t, hi_t = t(lo), t(hi)
        a = a[(a >= lo_t) & (a <= hi_t)]
        with np.errstate(all="ignore"):
            pos = ((a - lo_t) * t(bins) / (hi_t - lo_t)).astype(np.int64)
        return np.bincount(np.minimum(pos, bins - 1), minlength=bins).astype(x._data.dtype)
    return traced_value(_new(hist(x._data)), hist, x)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """For each value, the index in sorted_sequence's (last dim) where it would be inserted to keep it sorted:
    the first such (left) or the last (right=True or side='right'); int64, or int32 with out_int32."""
    seq = _tensor(sorted_sequence)
    scalar = not isinstance(input, Tensor)
    values = _tensor(input)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}")
    if seq.ndim > 1 and (scalar or tuple(seq.shape[:-1]) != tuple(values.shape[:-1])):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}")
    srt = None
    if sorter is not None:
        srt = _tensor(sorter)
        if srt._data.dtype != np.int64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{_type(srt._data)}")
        if tuple(srt.shape) != tuple(seq.shape):
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(seq.shape)} and got sorter tensor {list(srt.shape)}")
    dt = np.int32 if out_int32 else np.int64
    how = "right" if right else "left"

    def search(s, v, *rest):
        if rest:
            s = np.take_along_axis(s, rest[0], -1)
        if s.ndim == 1:
            return np.searchsorted(s, v, side=how).astype(dt)
        s2, v2 = s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1] if v.ndim else 1)
        out = np.stack([np.searchsorted(a, b, side=how) for a, b in zip(s2, v2)]) if s2.shape[0] else \
            np.zeros(v2.shape, np.int64)
        return out.reshape(v.shape).astype(dt)
    operands = (seq, values) + ((srt,) if srt is not None else ())
    return traced_value(_new(search(*(t._data for t in operands))), search, *operands)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each element among 1-d boundaries: searchsorted(boundaries, input) (right: `side='right'`,
    so that boundaries[i-1] <= x < boundaries[i])."""
    b = _tensor(boundaries)
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    return searchsorted(b, input, out_int32=out_int32, right=right)


# == Declarations ===================================================================================================
def _vjp_place(ctx, g, inputs, out):
    positions, mask = ctx
    return masked_fill(g, mask, 0.0), _gather(g, positions)


def _place_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    positions, mask = ctx
    return (np.where(mask._data, 0.0, g).astype(g.dtype) if wanted[0] else None,
            g.reshape(-1)[positions] if wanted[1] else None)


def _place_forward(ctx, x, src):
    out = x.copy()
    out.reshape(-1)[ctx[0].reshape(-1)] = src.reshape(-1)
    return out


def _vjp_accumulate(ctx, g, inputs, out):
    return g, _gather(g, ctx)  # ctx: the positions


def _accumulate_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    return g, (g.reshape(-1)[ctx] if wanted[1] else None)


for _name, _grad_fn in (("scatter", "ScatterBackward0"), ("index_copy", "IndexCopyBackward0"),
                        ("put", "PutBackward0"), ("index_put", "IndexPutBackward0"),
                        ("masked_scatter", "MaskedScatterBackward0")):
    registry.python(_name, _grad_fn, None, _vjp_place, array_vjp=_place_arrays, unreplayable=_READS_CONSTANT)
# positions from shapes and Python ints only: replayable
for _name, _grad_fn in (("slice_scatter", "SliceScatterBackward0"), ("select_scatter", "SelectScatterBackward0"),
                        ("diagonal_scatter", "DiagonalScatterBackward0")):
    registry.python(_name, _grad_fn, _place_forward, _vjp_place, array_vjp=_place_arrays)
for _name, _grad_fn in (("index_add", "IndexAddBackward0"), ("put_accumulate", "PutBackward0"),
                        ("index_put_accumulate", "IndexPutBackward0")):
    registry.python(_name, _grad_fn, None, _vjp_accumulate, array_vjp=_accumulate_arrays,
                    unreplayable=_READS_CONSTANT)
for _name, _grad_fn in (("scatter_value", "ScatterBackward1"), ("index_fill", "IndexFillBackward0"),
                        ("index_fill_tensor", "IndexFillBackward1")):
    registry.python(_name, _grad_fn, None, _vjp_masked_fill, array_vjp=_masked_fill_arrays,
                    unreplayable=_READS_CONSTANT)
registry.python("scatter_reduce", "ScatterReduceBackward0", None, _vjp_scatter_reduce,
                array_vjp=_scatter_reduce_arrays, unreplayable=_READS_CONSTANT)
registry.structural("take", registry.K_GATHER, "TakeBackward0", _vjp_gather, forward=_gather_forward)


Tensor.scatter = scatter
Tensor.scatter_reduce = scatter_reduce
Tensor.index_add = index_add
Tensor.index_reduce = index_reduce
Tensor.index_copy = index_copy
Tensor.index_fill = index_fill
Tensor.take = take
Tensor.put = put
Tensor.index_put = lambda self, indices, values, accumulate=False: _index_put(self, indices, values, accumulate, 0)
Tensor.masked_scatter = masked_scatter
Tensor.slice_scatter = slice_scatter
Tensor.select_scatter = select_scatter
Tensor.diagonal_scatter = diagonal_scatter
Tensor.argwhere = argwhere
Tensor.count_nonzero = count_nonzero
Tensor.bincount = bincount
Tensor.histc = histc
