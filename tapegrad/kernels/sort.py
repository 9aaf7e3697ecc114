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
    """The comparator: descending False / True, NaN above every number; 2: a plain `<` (mode's std::sort)."""
    if descending == 2:
        return a < b
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
def _make_heap(v, ix, first, last, desc):
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(v, ix, first, parent, length, v[first + parent], ix[first + parent], desc)
        if parent == 0:
            return
        parent -= 1


@njit(**JIT)
def _heap_sort(v, ix, first, last, desc):
    _make_heap(v, ix, first, last, desc)
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


# -- torch.topk (ATen's topk_impl_loop) and torch.kthvalue (Sorting.cpp's quick_select_template) ---------------
@njit(**JIT)
def _heap_select(v, ix, first, middle, last, desc):
    """libstdc++'s __heap_select: a heap of [first, middle) holding the smallest (comp) of [first, last)."""
    _make_heap(v, ix, first, middle, desc)
    for i in range(middle, last):
        if _less(v[i], v[first], desc):  # __pop_heap(first, middle, i)
            value, index = v[i], ix[i]
            v[i], ix[i] = v[first], ix[first]
            _adjust_heap(v, ix, first, 0, middle - first, value, index, desc)


@njit(**JIT)
def _sort_heap(v, ix, first, last, desc):
    while last - first > 1:
        last -= 1
        value, index = v[last], ix[last]
        v[last], ix[last] = v[first], ix[first]
        _adjust_heap(v, ix, first, 0, last - first, value, index, desc)


@njit(**JIT)
def _nth_element(v, ix, nth, desc):
    """libstdc++'s std::nth_element (__introselect, depth limit 2 floor(log2 n))."""
    n = v.shape[0]
    if n == 0 or nth == n:
        return
    depth = 0
    while (n >> (depth + 1)) > 0:
        depth += 1
    limit = 2 * depth
    first, last = 0, n
    while last - first > 3:
        if limit == 0:
            _heap_select(v, ix, first, nth + 1, last, desc)
            _swap(v, ix, first, nth)
            return
        limit -= 1
        cut = _partition_pivot(v, ix, first, last, desc)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(v, ix, first, last, desc)


@njit(**JIT)
def topk_rows(values, k, largest, ordered):
    """The indices torch.topk gives on CPU for each row of values (rows, n): the (value, index) pairs through
    std::partial_sort where k * 64 <= n, else std::nth_element at k - 1 then (sorted) std::sort of the first
    k - 1; comparing values only (NaN above every number), so ties come out in libstdc++'s order."""
    rows, n = values.shape
    out = np.empty((rows, k), np.int64)
    if k == 0:
        return out
    for r in range(rows):
        v = values[r].copy()
        ix = np.arange(n)
        if k * 64 <= n:
            _heap_select(v, ix, 0, k, n, largest)
            _sort_heap(v, ix, 0, k, largest)
        else:
            _nth_element(v, ix, k - 1, largest)
            if ordered:
                _introsort(v[:k - 1], ix[:k - 1], largest)
        out[r] = ix[:k]
    return out


@njit(**JIT)
def kthvalue_rows(values, k):
    """The index torch.kthvalue gives on CPU (k from 0) for each row of values (rows, n): Sorting.cpp's
    quick_select_template (Sedgewick's median-of-three partition), NaN above every number."""
    rows, n = values.shape
    out = np.empty(rows, np.int64)
    for r in range(rows):
        v = values[r].copy()
        ix = np.arange(n)
        lo, hi = 0, n - 1
        while True:
            if hi <= lo:
                break
            if hi == lo + 1:
                if _less(v[hi], v[lo], False):
                    _swap(v, ix, lo, hi)
                break
            _swap(v, ix, (lo + hi) >> 1, lo + 1)
            if _less(v[hi], v[lo + 1], False):
                _swap(v, ix, lo + 1, hi)
            if _less(v[hi], v[lo], False):
                _swap(v, ix, lo, hi)
            if _less(v[lo], v[lo + 1], False):
                _swap(v, ix, lo + 1, lo)
            i, j = lo + 1, hi
            pivot = v[lo]
            while True:
                i += 1
                while _less(v[i], pivot, False):
                    i += 1
                j -= 1
                while _less(pivot, v[j], False):
                    j -= 1
                if j < i:
                    break
                _swap(v, ix, i, j)
            _swap(v, ix, lo, j)
            if j <= k:
                lo = i
            if j >= k:
                hi = j - 1
        out[r] = ix[k]
    return out


@njit(**JIT)
def mode_rows(values):
    """The index torch.mode gives on CPU for each row of values (rows, n): std::sort of the (value, index) pairs
    by `value <`, then the last pair of the first longest run of equal values (NaN, unequal to itself, a run of
    one)."""
    rows, n = values.shape
    out = np.empty(rows, np.int64)
    for r in range(rows):
        v = values[r].copy()
        ix = np.arange(n)
        _introsort(v, ix, 2)
        best, count, at = 0, 0, 0
        for i in range(n):
            count += 1
            if i == n - 1 or v[i] != v[i + 1]:
                if count > best:
                    at = ix[i]
                    best = count
                count = 0
        out[r] = at
    return out
