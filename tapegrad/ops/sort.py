"""Ordering ops: sort, argsort, topk, unique, multinomial (which samples through topk, as torch's does).

The values of sort and topk are gathers (index map forward, compiled scatter-add adjoint); their index maps
depend on the data: while tapegrad.compile traces, the indices are a row that a replay recomputes and the values'
index map follows them (_sorted). sort and argsort order ties as torch's CPU sort: stable=True (and a 1-D integer
tensor of 32,768 or more ascending: ATen's radix sort) in input order, else as libstdc++'s std::sort leaves them
(kernels/sort.py); topk's ties as libstdc++'s partial_sort or nth_element + sort leave them (ATen's topk_impl_loop),
kthvalue's as ATen's quick_select_template. NaN sorts above every number, as torch's.
"""
import math

import numpy as np

from .. import _dtype, _meta, kernels, random, registry
from ..tensor import Tensor, _new
from ._common import OPS, _dim, _tensor
from .reduce import return_types
from .shape import _gather, _gather_forward, _index_map, _vjp_gather
from ..tape import follow_indices, traced_value


def _stable_order(a, axis, descending):
    """Indices sorting a along axis, ties in input order (descending too), NaN largest."""
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    flipped = np.flip(a, axis)
    return (n - 1) - np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis)


_RADIX_SORTED = 32768  # (ATen's GRAIN_SIZE: a 1-D integer tensor of this many elements or more sorts by radix, stably)


def torch_order(a, axis, descending, stable=False):
    """The indices torch.sort gives: stable where ATen's sort is (stable=True; radix sorts), else std::sort's."""
    if stable or a.shape[axis] <= 16 or (a.ndim == 1 and a.size >= _RADIX_SORTED and a.dtype.kind in "iu"
                                          and not descending):
        return _stable_order(a, axis, descending)  # (std::sort of 16 or fewer is an insertion sort: stable)
    rows = np.moveaxis(a, axis, -1)
    keys = rows.reshape(-1, rows.shape[-1])
    order = kernels.module("sort").std_sort_rows(keys.view(np.uint8) if keys.dtype == np.bool_ else keys,
                                                 bool(descending))
    return np.moveaxis(order.reshape(rows.shape), -1, axis)


def _row_keys(a, axis):
    """a's slices along axis as rows (rows, n) a compiled kernel compares as torch's do: bool as uint8, float16
    and bfloat16 as float32 (exact)."""
    rows = np.moveaxis(a, axis, -1)
    keys = np.ascontiguousarray(rows.reshape(-1, rows.shape[-1]))
    if keys.dtype == np.bool_:
        return rows.shape, keys.view(np.uint8)
    if keys.dtype.kind == "f" and keys.dtype.itemsize == 2 or _dtype.is_bfloat16(keys.dtype):
        return rows.shape, keys.astype(np.float32)
    return rows.shape, keys


def torch_topk_order(a, axis, k, largest, ordered=True):
    """The indices torch.topk gives on CPU: libstdc++'s partial_sort, or nth_element and sort, over (value,
    index) pairs comparing values (kernels/sort.py's topk_rows), ties in its order."""
    if _meta.is_meta(a):  # (the meta device: the shape only)
        return _meta.make(a.shape[:axis] + (int(k),) + a.shape[axis + 1:], np.int64)
    shape, keys = _row_keys(a, axis)
    order = kernels.module("sort").topk_rows(keys, int(k), bool(largest), bool(ordered))
    return np.moveaxis(order.reshape(shape[:-1] + (int(k),)), -1, axis)


def torch_kth_position(a, axis, k):
    """The index torch.kthvalue gives on CPU for the k-th smallest (k from 0) of each slice along axis (keepdim
    shape): Sorting.cpp's quick_select_template (kernels/sort.py's kthvalue_rows), ties in its order."""
    if _meta.is_meta(a):  # (the meta device: the shape only)
        return _meta.make(a.shape[:axis] + (1,) + a.shape[axis + 1:], np.int64)
    shape, keys = _row_keys(a, axis)
    position = kernels.module("sort").kthvalue_rows(keys, int(k))
    return np.moveaxis(position.reshape(shape[:-1] + (1,)), -1, axis)


def torch_mode_position(a, axis):
    """The index torch.mode gives on CPU for each slice along axis (keepdim shape): ATen's mode_kernel_impl
    (kernels/sort.py's mode_rows), ties in std::sort's order."""
    if _meta.is_meta(a):  # (the meta device: the shape only)
        return _meta.make(a.shape[:axis] + (1,) + a.shape[axis + 1:], np.int64)
    shape, keys = _row_keys(a, axis)
    position = kernels.module("sort").mode_rows(keys)
    return np.moveaxis(position.reshape(shape[:-1] + (1,)), -1, axis)


def _values_at(x, op, d, idx):
    """x's elements at indices idx along dim d (a gather recorded under op)."""
    if x.ndim == 0:
        return _gather(x, np.zeros((), np.int64), op, x._data.copy())
    flat = np.take_along_axis(_index_map(x), idx, d)
    return _gather(x, flat, op, np.take_along_axis(x._data, idx, d))


def _sorted(x, op, d, indices):
    """(values, indices) of x along d for the order indices(array) gives; while tapegrad.compile traces, the
    indices are a row a replay recomputes from x, and the values' index map follows them."""
    idx = traced_value(_new(indices(x._data)), indices, x)  # (recorded first: the values' replay reads it)
    positions = _index_map(x)

    def flat_of(i):
        return np.take_along_axis(positions, i, d)
    flat = flat_of(idx._data)
    values = _gather(x, flat, op, np.take_along_axis(x._data, idx._data, d))
    return follow_indices(values, idx, flat, flat_of), idx


def sort(input, dim=-1, descending=False, stable=False):
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    op = OPS["sort_stable" if stable else "sort"]  # (torch's two overloads: SortBackward1 and SortBackward0)
    if x.ndim == 0:
        return return_types.sort(_values_at(x, op, 0, None), _new(np.zeros_like(x._data, np.int64)))
    return return_types.sort(*_sorted(x, op, d, lambda a: np.asanyarray(
        torch_order(a, d, bool(descending), stable), dtype=np.int64, order="C")))


def argsort(input, dim=-1, descending=False, stable=False):
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    if x.ndim == 0:
        return _new(np.zeros_like(x._data, np.int64))  # (zeros_like: a meta tensor's index is meta)
    def indices(a):
        return np.ascontiguousarray(torch_order(a, d, bool(descending), stable), dtype=np.int64)
    return traced_value(_new(indices(x._data)), indices, x)


def msort(input):
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    k = int(k)
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if x._data.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if x.ndim == 0:
        return return_types.topk(_values_at(x, OPS["topk"], 0, None), _new(np.zeros_like(x._data, np.int64)))
    return return_types.topk(*_sorted(x, OPS["topk"], d, lambda a: np.asanyarray(
        torch_topk_order(a, d, k, largest, sorted), dtype=np.int64, order="C")))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """torch.unique: always sorted on CPU (as torch's); not differentiable (torch has no derivative for it)."""
    x = _tensor(input)
    a = x._data
    if dim is None:
        values, inverse, counts = np.unique(a.reshape(-1), return_inverse=True, return_counts=True)
        inverse = inverse.reshape(a.shape)
    else:
        d = _dim(dim, x.ndim)
        if a.shape[d] == 0:
            values, inverse, counts = a, np.zeros(0, np.int64), np.zeros(0, np.int64)
        else:
            values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=d)
            inverse = inverse.reshape(-1)
    result = [_new(np.ascontiguousarray(values))]
    if return_inverse:
        result.append(_new(np.array(inverse, dtype=np.int64, order="C")))  # (ascontiguousarray: a 0-d one 1-d)
    if return_counts:
        result.append(_new(np.ascontiguousarray(counts, dtype=np.int64)))
    return result[0] if len(result) == 1 else tuple(result)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    x = _tensor(input)
    if dim is not None:
        raise NotImplementedError("tapegrad: unique_consecutive with dim is not supported")
    a = x._data.reshape(-1)
    start = np.ones(a.size, bool)
    start[1:] = a[1:] != a[:-1]
    result = [_new(np.ascontiguousarray(a[start]))]
    if return_inverse:
        result.append(_new((np.cumsum(start) - 1).reshape(x.shape).astype(np.int64)))
    if return_counts:
        result.append(_new(np.diff(np.append(np.flatnonzero(start), a.size)).astype(np.int64)))
    return result[0] if len(result) == 1 else tuple(result)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """torch's CPU algorithm and random stream: without replacement, or for one sample, the top num_samples of
    p / q with q ~ Exp(1) (one random64 draw per element, -log1p(-u) by libm); with replacement, one random64
    uniform per sample looked up in the row's normalised cumulative sums."""
    x = _tensor(input)
    p = x._data
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if p.dtype.kind != "f" and not _dtype.is_bfloat16(p.dtype):
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{ {'i': 'Long', 'u': 'Byte', 'b': 'Bool'}.get(p.dtype.kind, p.dtype.name)}")
    n = int(num_samples)
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = p.shape[-1]
    if not replacement and n > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if categories > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if categories == 0:  # (torch's check of the rows' range, which has none)
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    rows = p.reshape(-1, categories)
    gen = random._gen(generator)
    if not replacement or n == 1:
        # (the ufuncs' reductions: np.all's and np.any's Python wrappers cost more than a small row's checks)
        if rows.size and not (np.minimum.reduce(rows, None) >= 0 and np.maximum.reduce(rows, None) < math.inf):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")  # (NaN fails both)
        if np.logical_or.reduce(np.add.reduce(rows, -1) == 0, None):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        u = gen._u53(rows.size)
        q = (-1.0 * random._libm_map(math.log1p, -u)).astype(p.dtype)  # exponential_(1): cast to p's dtype
        keys = rows / q.reshape(rows.shape)
        if n == 1:
            result = np.argmax(keys, axis=-1).reshape(-1, 1)
        else:
            result = torch_topk_order(keys, 1, n, True)  # (torch's at::topk: ties, as zeros, in its order)
    else:
        result = np.empty((rows.shape[0], n), np.int64)
        accumulate = np.float32 if p.dtype.itemsize == 2 else p.dtype  # (float16, bfloat16: ATen sums in float)
        for i, row in enumerate(rows):
            if np.any(~(row >= 0)):
                raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
            if not np.all(np.isfinite(row)):
                raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity "
                                   "or NaN)")
            cum = np.cumsum(row, dtype=accumulate)
            total = cum[-1]
            if not total > 0:
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            cum = cum / total
            cum[-1] = 1
            result[i] = np.searchsorted(cum.astype(np.float64), gen._u53(n), side="left")
    return _new(np.ascontiguousarray(result.reshape(p.shape[:-1] + (n,)), dtype=np.int64))


# == Declarations ===========================================================================================
for _name, _grad_fn in (("sort", "SortBackward0"), ("sort_stable", "SortBackward1"), ("topk", "TopkBackward0")):
    registry.structural(_name, registry.K_GATHER, _grad_fn, _vjp_gather, forward=_gather_forward)  # (_sorted)


__all__ = ["sort", "argsort", "msort", "topk", "unique", "unique_consecutive", "multinomial"]


# Tensor's methods for this module's front-ends (grep `Tensor.<name> =`)
Tensor.argsort = lambda self, dim=-1, descending=False, stable=False: argsort(self, dim, descending, stable)
Tensor.sort = sort
Tensor.msort = msort
Tensor.topk = topk
Tensor.unique = unique
Tensor.unique_consecutive = unique_consecutive
Tensor.multinomial = multinomial
