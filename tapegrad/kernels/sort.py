"""torch's CPU sort when stable=False: libstdc++'s std::sort (introsort: median-of-three quicksort down to runs
of 16, heapsort past 2 * log2(n) levels, then one insertion sort) over (value, index) pairs, comparing values only,
so ties come out in its order, not the input's (a `lengths.sort(descending=True)` of a padded batch).
NaN sorts above every number, as ATen's comparators put it.
"""
import numpy as np
from numba import njit

from .memory import JIT

_THRESHOLD = 16


@njit(**JIT)
def _less(a, b, descending):
    if descending:
        return (a != a and b == b) or a > b
    return (a == a and b != b) or a < b


@njit(**JIT)
def _swap(v, ix, i, j):
    v[i], v[j] = v[j], v[i]
    ix[i], ix[j] = ix[j], ix[i]


@njit(**JIT)
def _push_heap(v, ix, first, hole, top, value, index, desc):
    parent = (hole - 1) // 2
    while hole > top and _less(v[first + parent], value, desc):
        v[first + hole], ix[first + hole] = v[first + parent], ix[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    v[first + hole], ix[first + hole] = value, index


@njit(**JIT)
def _adjust_heap(v, ix, first, hole, length, value, index, desc):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _less(v[first + child], v[first + child - 1], desc):
            child -= 1
        v[first + hole], ix[first + hole] = v[first + child], ix[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        v[first + hole], ix[first + hole] = v[first + child - 1], ix[first + child - 1]
        hole = child - 1
    _push_heap(v, ix, first, hole, top, value, index, desc)


@njit(**JIT)
def _heap_sort(v, ix, first, last, desc):
    length = last - first
    if length >= 2:  # make_heap
        parent = (length - 2) // 2
        while True:
            _adjust_heap(v, ix, first, parent, length, v[first + parent], ix[first + parent], desc)
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:  # sort_heap
        last -= 1
        value, index = v[last], ix[last]
        v[last], ix[last] = v[first], ix[first]
        _adjust_heap(v, ix, first, 0, last - first, value, index, desc)


@njit(**JIT)
def _partition_pivot(v, ix, first, last, desc):
    a, b, c = first + 1, first + (last - first) // 2, last - 1  # the median of three to first
    if _less(v[a], v[b], desc):
        if _less(v[b], v[c], desc):
            _swap(v, ix, first, b)
        elif _less(v[a], v[c], desc):
            _swap(v, ix, first, c)
        else:
            _swap(v, ix, first, a)
    elif _less(v[a], v[c], desc):
        _swap(v, ix, first, a)
    elif _less(v[b], v[c], desc):
        _swap(v, ix, first, c)
    else:
        _swap(v, ix, first, b)
    lo, hi = first + 1, last  # the unguarded partition around v[first]
    while True:
        while _less(v[lo], v[first], desc):
            lo += 1
        hi -= 1
        while _less(v[first], v[hi], desc):
            hi -= 1
        if not lo < hi:
            return lo
        _swap(v, ix, lo, hi)
        lo += 1


@njit(**JIT)
def _linear_insert(v, ix, i, desc):
    value, index = v[i], ix[i]
    j = i - 1
    while _less(value, v[j], desc):
        v[j + 1], ix[j + 1] = v[j], ix[j]
        j -= 1
    v[j + 1], ix[j + 1] = value, index


@njit(**JIT)
def _insertion_sort(v, ix, first, last, desc):
    for i in range(first + 1, last):
        if _less(v[i], v[first], desc):
            value, index = v[i], ix[i]
            for j in range(i, first, -1):
                v[j], ix[j] = v[j - 1], ix[j - 1]
            v[first], ix[first] = value, index
        else:
            _linear_insert(v, ix, i, desc)


@njit(**JIT)
def _introsort(v, ix, desc):
    n = v.shape[0]
    if n == 0:
        return
    depth = 0
    while (n >> (depth + 1)) > 0:
        depth += 1  # floor(log2(n))
    stack = np.empty((2 * depth + 2 + 64, 3), np.int64)
    top = 0
    first, last, limit = 0, n, 2 * depth
    while True:
        while last - first > _THRESHOLD:
            if limit == 0:
                _heap_sort(v, ix, first, last, desc)
                break
            limit -= 1
            cut = _partition_pivot(v, ix, first, last, desc)
            stack[top, 0], stack[top, 1], stack[top, 2] = cut, last, limit  # (libstdc++ recurses on [cut, last))
            top += 1
            last = cut
        if top == 0:
            break
        top -= 1
        first, last, limit = stack[top, 0], stack[top, 1], stack[top, 2]
    if n > _THRESHOLD:  # the final insertion sort: guarded over the first 16, unguarded after
        _insertion_sort(v, ix, 0, _THRESHOLD, desc)
        for i in range(_THRESHOLD, n):
            _linear_insert(v, ix, i, desc)
    else:
        _insertion_sort(v, ix, 0, n, desc)


@njit(**JIT)
def std_sort_rows(values, descending):
    """The indices std::sort leaves beside each row of values (rows, n), sorted ascending or descending."""
    rows, n = values.shape
    out = np.empty((rows, n), np.int64)
    for r in range(rows):
        v = values[r].copy()
        ix = np.arange(n)
        _introsort(v, ix, descending)
        out[r] = ix
    return out
