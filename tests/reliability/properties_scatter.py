"""Property-test cases for the scatters and index writes of tapegrad/ops/scatter.py (and take)."""
import numpy as np


def _idx(L, a):
    """An int64 index tensor from a NumPy array (built from shapes only, so the same for both libraries)."""
    return L.tensor(np.array(a, dtype=np.int64), dtype=L.int64)  # (a copy: no negative strides)


def _rot(rows, cols, size):
    """idx[i][j] = (i + j) % size: for rows <= size, unique down each column (a permutation per column)."""
    return (np.arange(rows)[:, None] + np.arange(cols)[None, :]) % size


def _distinct(L, x):
    """x with its ties broken (a ramp far below the spacing of distinct values)."""
    return x + L.arange(x.numel(), dtype=x.dtype).reshape(x.shape) * 1e-6


def _scatter(L, x, R):
    m, n = x.shape
    k = max(1, m - 1)  # fewer rows than x: some positions keep x's values
    src = R.leaf((k, n))  # (a src larger than the index: torch's ScatterBackward0 returns a mis-shaped gradient)
    return x.scatter(0, _idx(L, _rot(k, n, m)), src)


def _scatter_value(L, x, R):
    m, n = x.shape
    return x.scatter(1, _idx(L, _rot(m, max(1, n - 1), n)), 0.25)


def _scatter_reduce(L, x, R):
    """sum (duplicates allowed: the index below repeats), mean without self, amax (random src: no ties)."""
    m, n = x.shape
    dup = np.arange(m * n).reshape(m, n) % max(1, m // 2 + 1) % m
    a = x.scatter_reduce(0, _idx(L, dup), R.leaf((m, n)), "sum")
    b = x.scatter_reduce(1, _idx(L, _rot(m, n, n)), R.leaf((m, n)), "mean", include_self=False)
    c = _distinct(L, x).scatter_reduce(0, _idx(L, _rot(m, n, m)), R.leaf((m, n), -2.0, 2.0), "amax")
    return a + b + c


def _index_add(L, x, R):
    m, n = x.shape
    return x.index_add(0, _idx(L, np.arange(m)[::-1]), R.leaf((m, n)), alpha=0.5) + \
        x.index_add(1, _idx(L, [n - 1]), R.leaf((m, 1)))


def _index_copy(L, x, R):
    m, n = x.shape
    k = max(1, n - 1)
    return x.index_copy(1, _idx(L, np.arange(n)[::-1][:k]), R.leaf((m, k)))


def _index_fill(L, x, R):
    m, n = x.shape
    return x.index_fill(1, _idx(L, [-1]), -0.3)


def _index_fill_tensor(L, x, R):
    m, n = x.shape
    return x.index_fill(0, _idx(L, np.arange(0, m, 2)), R.leaf(()))


def _index_put(L, x, R):
    m, n = x.shape
    k = min(m, n)
    rows, cols = np.arange(k)[::-1], np.arange(k)
    return x.index_put((_idx(L, rows), _idx(L, cols)), R.leaf((k,)))


def _index_put_accumulate(L, x, R):
    m, n = x.shape
    rows = np.arange(m)[::-1]
    return x.index_put((_idx(L, rows),), R.leaf((1, n)), accumulate=True)  # values broadcast over the rows


def _masked_scatter(L, x, R):
    m, n = x.shape
    mask = L.tensor((np.arange(m * n).reshape(m, n) % 2) == 0)
    return x.masked_scatter(mask, R.leaf((m * n + 1,)))


def _put(L, x, R):
    N = x.numel()
    k = max(1, N // 2)
    pos = np.arange(N)[::-1][:k] - N  # negative: counted from the end
    return x.put(_idx(L, pos), R.leaf((k,)))


def _put_accumulate(L, x, R):
    N = x.numel()
    pos = (np.arange(2 * N) * 3) % N  # repeats: accumulated
    return x.put(_idx(L, pos.reshape(2, N)), R.leaf((2, N)), accumulate=True)


def _take(L, x, R):
    N = x.numel()
    pos = (np.arange(6) * 5) % N - (np.arange(6) % 2) * N  # repeats, some negative
    return x.take(_idx(L, pos.reshape(2, 3)))


def _slice_scatter(L, x, R):
    m, n = x.shape
    return x.slice_scatter(R.leaf((m, (n + 1) // 2)), dim=1, start=0, end=None, step=2)


def _select_scatter(L, x, R):
    m, n = x.shape
    return x.select_scatter(R.leaf((n,)), 0, -1)


def _diagonal_scatter(L, x, R):
    m, n = x.shape
    off = 1 if n > 1 else 0
    return x.diagonal_scatter(R.leaf((min(m, n - off),)), off)


CASES = {
    "scatter": _scatter,
    "scatter_value": _scatter_value,
    "scatter_reduce": _scatter_reduce,
    "index_add": _index_add,
    "index_copy": _index_copy,
    "index_fill": _index_fill,
    "index_fill_tensor": _index_fill_tensor,
    "index_put": _index_put,
    "index_put_accumulate": _index_put_accumulate,
    "masked_scatter": _masked_scatter,
    "put": _put,
    "put_accumulate": _put_accumulate,
    "take": _take,
    "slice_scatter": _slice_scatter,
    "select_scatter": _select_scatter,
    "diagonal_scatter": _diagonal_scatter,
}
NOT_RECORDED = {}
