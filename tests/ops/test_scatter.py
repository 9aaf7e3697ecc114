"""tapegrad/ops/scatter.py beyond the table rows: errors in torch's types and words, integer dtypes, in-place forms,
empty and 0-d inputs, non-contiguous inputs, the deprecated scatter(reduce=) and its warning, and the searches and
counts (argwhere, count_nonzero, bincount, histc, searchsorted, bucketize), against torch 2.13."""
import sys
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg
from optable import check_error

LIBS = (torch, tg)
RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
S = RNG.standard_normal((3, 4)).astype(np.float32)
IDX0 = np.array([[0, 1, 2, 0], [1, 2, 0, 1]])


def run(fn):
    """fn(L) in torch and tapegrad: the two results as arrays (a tuple's items in turn)."""
    out = []
    for L in LIBS:
        r = fn(L)
        out.append(r)
    return out


def same(fn, tol=1e-6):
    a, b = run(fn)
    ta, tb = (a if isinstance(a, (tuple, list)) else (a,)), (b if isinstance(b, (tuple, list)) else (b,))
    assert len(ta) == len(tb)
    for u, v in zip(ta, tb):
        assert str(v.dtype) == str(u.dtype), (v.dtype, u.dtype)
        assert tuple(v.shape) == tuple(u.shape), (v.shape, u.shape)
        want, got = np.asarray(u.detach().numpy()), np.asarray(v.detach().numpy())
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(got, want)
    return a, b


def x(L, a=X, **kw):
    return L.tensor(a.copy(), **kw)


# -- errors ---------------------------------------------------------------------------------------------------------
ERRORS = {
    "scatter_oob": lambda L: x(L).scatter(0, L.tensor(IDX0 + 5), x(L, S)),
    "scatter_index_dtype": lambda L: x(L).scatter(0, L.tensor(IDX0).float(), x(L, S)),
    "scatter_index_rank": lambda L: x(L).scatter(0, L.tensor(IDX0[0]), x(L, S)),
    "scatter_src_dtype": lambda L: x(L).scatter(0, L.tensor(IDX0), x(L, S).double()),
    "scatter_src_small": lambda L: x(L).scatter(0, L.tensor(IDX0), x(L, S)[:1]),
    "scatter_index_large": lambda L: x(L).scatter(1, L.tensor([[0, 1, 2, 0, 1]]), x(L, S)),
    "scatter_reduce_name": lambda L: x(L).scatter_reduce(0, L.tensor(IDX0), x(L, S), "foo"),
    "scatter_legacy_reduce_name": lambda L: x(L).scatter(0, L.tensor(IDX0), x(L, S), reduce="mean"),
    "scatter_reduce_oob": lambda L: x(L).scatter_reduce(0, L.tensor(IDX0 - 4), x(L, S), "sum"),
    "index_add_oob": lambda L: x(L).index_add(0, L.tensor([0, 7]), x(L, S)[:2]),
    "index_add_negative": lambda L: x(L).index_add(0, L.tensor([0, -1]), x(L, S)[:2]),
    "index_add_index_dtype": lambda L: x(L).index_add(0, L.tensor([0.0, 1.0]), x(L, S)[:2]),
    "index_add_index_rank": lambda L: x(L).index_add(0, L.tensor([[0, 1]]), x(L, S)[:2]),
    "index_add_count": lambda L: x(L).index_add(0, L.tensor([0, 1]), x(L, S)),
    "index_add_dtype": lambda L: x(L).index_add(0, L.tensor([0, 1]), x(L, S)[:2].double()),
    "index_add_0d_source": lambda L: L.zeros(5).index_add(0, L.tensor([3]), L.tensor(2.0)),
    "index_add_shape": lambda L: x(L).index_add(0, L.tensor([0, 1]), x(L, S)[:2, :3]),
    "index_reduce_name": lambda L: x(L).index_reduce(0, L.tensor([0, 2]), x(L, S)[:2], "sum"),
    "index_reduce_oob": lambda L: x(L).index_reduce(0, L.tensor([0, 7]), x(L, S)[:2], "prod"),
    "index_reduce_negative": lambda L: x(L).index_reduce(0, L.tensor([0, -1]), x(L, S)[:2], "prod"),
    "index_reduce_index_dtype": lambda L: x(L).index_reduce(0, L.tensor([0.0, 1.0]), x(L, S)[:2], "amax"),
    "index_reduce_count": lambda L: x(L).index_reduce(0, L.tensor([0, 1, 2]), x(L, S)[:2], "amin"),
    "index_reduce_dtype": lambda L: x(L).index_reduce(0, L.tensor([0, 1]), x(L, S)[:2].double(), "mean"),
    "index_reduce_shape": lambda L: x(L).index_reduce(0, L.tensor([0, 1]), x(L, S)[:2, :3], "mean"),
    "index_copy_oob": lambda L: x(L).index_copy(0, L.tensor([0, 7]), x(L, S)[:2]),
    "index_copy_index_dtype": lambda L: x(L).index_copy(0, L.tensor([0, 1]).float(), x(L, S)[:2]),
    "index_copy_index_rank": lambda L: x(L).index_copy(0, L.tensor([[0, 1]]), x(L, S)[:2]),
    "index_copy_count": lambda L: x(L).index_copy(0, L.tensor([0, 1]), x(L, S)),
    "index_copy_dtype": lambda L: x(L).index_copy(0, L.tensor([0, 1]), x(L, S)[:2].double()),
    "index_copy_shape": lambda L: x(L).index_copy(0, L.tensor([0, 1]), x(L, S)[:2, :3]),
    "index_fill_oob": lambda L: x(L).index_fill(0, L.tensor([0, 7]), 2.0),
    "index_fill_oob_negative": lambda L: x(L).index_fill(0, L.tensor([-4]), 2.0),
    "index_fill_index_dtype": lambda L: x(L).index_fill(0, L.tensor([0, 1]).int(), 2.0),
    "index_fill_index_rank": lambda L: x(L).index_fill(0, L.tensor([[0, 1]]), 2.0),
    "index_fill_value_rank": lambda L: x(L).index_fill(0, L.tensor([0]), L.tensor([2.0])),
    "take_oob": lambda L: L.take(x(L), L.tensor([0, 12])),
    "take_oob_negative": lambda L: L.take(x(L), L.tensor([0, -13])),
    "take_index_dtype": lambda L: L.take(x(L), L.tensor([0, 1]).float()),
    "put_oob": lambda L: x(L).put(L.tensor([0, 12]), L.ones(2)),
    "put_count": lambda L: x(L).put(L.tensor([0, 1]), L.ones(3)),
    "put_dtype": lambda L: x(L).put(L.tensor([0, 1]), L.ones(2, dtype=L.float64)),
    "put_index_dtype": lambda L: x(L).put(L.tensor([0, 1]).float(), L.ones(2)),
    "index_put_oob": lambda L: x(L).index_put((L.tensor([0, 5]),), x(L, S)[:2]),
    "index_put_dtype": lambda L: x(L).index_put((L.tensor([0, 1]),), x(L, S)[:2].double()),
    "index_put_index_dtype": lambda L: x(L).index_put((L.tensor([0, 1]).float(),), x(L, S)[:2]),
    "index_put_shape": lambda L: x(L).index_put((L.tensor([0, 1]),), x(L, S)),
    "masked_scatter_mask_dtype": lambda L: x(L).masked_scatter(x(L).long(), x(L, S)),
    "masked_scatter_dtype": lambda L: x(L).masked_scatter(x(L) > 0, x(L, S).double()),
    "masked_scatter_short": lambda L: x(L).masked_scatter(x(L) > -10, x(L, S)[:1]),
    "slice_scatter_shape": lambda L: L.slice_scatter(x(L), x(L, S)[:, :3], 1, 0, 2),
    "select_scatter_shape": lambda L: L.select_scatter(x(L), x(L, S)[0, :3], 0, -1),
    "select_scatter_oob": lambda L: L.select_scatter(x(L), x(L, S)[:, 1], 1, 7),
    "diagonal_scatter_shape": lambda L: L.diagonal_scatter(x(L), x(L, S)[0, :2]),
    "bincount_negative": lambda L: L.bincount(L.tensor([0, -3, 1])),
    "bincount_2d": lambda L: L.bincount(L.tensor([[0, 3, 1]])),
    "bincount_float": lambda L: L.bincount(L.tensor([0.0, 3.0])),
    "bincount_minlength": lambda L: L.bincount(L.tensor([0, 3]), minlength=-1),
    "bincount_weights": lambda L: L.bincount(L.tensor([0, 3, 1]), weights=L.ones(2)),
    "histc_int": lambda L: L.histc(L.tensor([1, 2]), bins=4),
    "histc_range": lambda L: L.histc(L.tensor([1.0, 2.0]), bins=4, min=3, max=1),
    "histc_bins": lambda L: L.histc(L.tensor([1.0, 2.0]), bins=0),
    "histc_inf": lambda L: L.histc(L.tensor([1.0, float("inf")]), bins=3),
    "searchsorted_side": lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.5]), side="foo"),
    "searchsorted_shapes": lambda L: L.searchsorted(L.tensor([[1.0, 2, 3], [2, 4, 6]]), L.tensor([[2.0], [5], [3]])),
    "bucketize_2d": lambda L: L.bucketize(L.tensor([2.0]), L.tensor([[1.0, 2.0]])),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_matches_torch(name):
    check_error(ERRORS[name])


def test_leaf_inplace_and_legacy_reduce_grad():
    for name in ("scatter_", "index_add_", "index_copy_", "index_fill_", "put_", "index_put_"):
        check_error(lambda L, n=name: _inplace_call(L, n, L.tensor(X.copy(), requires_grad=True)))
    with pytest.raises(NotImplementedError, match="tapegrad: scatter\\(reduce=...\\)"):
        tg.tensor(X, requires_grad=True).scatter(0, tg.tensor(IDX0), tg.tensor(S[:2]), reduce="add")


def _inplace_call(L, name, t):
    i = L.tensor([0, 2])
    return {"scatter_": lambda: t.scatter_(0, L.tensor(IDX0), 1.0), "index_add_": lambda: t.index_add_(0, i, t[:2]),
            "index_copy_": lambda: t.index_copy_(0, i, t[:2]), "index_fill_": lambda: t.index_fill_(0, i, 1.0),
            "put_": lambda: t.put_(i, L.ones(2)), "index_put_": lambda: t.index_put_((i,), L.ones(4))}[name]()


# -- values: in-place forms, integer dtypes, empty, 0-d, non-contiguous ---------------------------------------------
def test_inplace_forms_write_into_self():
    def each(L):
        i = L.tensor([0, 2])
        out = []
        for call in (lambda t: t.scatter_(0, L.tensor(IDX0), L.tensor(S[:2])),
                     lambda t: t.scatter_(1, L.tensor(IDX0[:, :2].T.copy()), -2.0),
                     lambda t: t.scatter_reduce_(0, L.tensor(IDX0), L.tensor(S), "amax", include_self=False),
                     lambda t: t.index_add_(1, i, L.ones(3, 2), alpha=3),
                     lambda t: t.index_reduce_(0, i, L.tensor(S[:2]), "amin", include_self=False),
                     lambda t: t.index_copy_(0, i, L.zeros(2, 4)),
                     lambda t: t.index_fill_(1, i, L.tensor(7.0)),
                     lambda t: t.put_(i, L.tensor([5.0, 6.0]), accumulate=True),
                     lambda t: t.index_put_((i, i), L.tensor(1.5)),
                     lambda t: t.masked_scatter_(t > 0, L.arange(12.0))):
            t = L.tensor(X.copy())
            r = call(t)
            assert r is t
            out.append(t)
        return tuple(out)
    same(each)


def test_inplace_records_gradient():
    def each(L):
        w = L.tensor(S.copy(), requires_grad=True)
        y = w * 2
        y.index_add_(0, L.tensor([2, 0, 2]), w)
        y.scatter_(0, L.tensor(IDX0), w[:2] * 3)
        y.sum().backward()
        return y, w.grad
    a, b = same(each)
    assert type(b[0].grad_fn).__name__ == type(a[0].grad_fn).__name__ == "ScatterBackward0"


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_and_bool_dtypes(dtype):
    def each(L):
        dt = getattr(L, dtype)
        a = L.tensor((np.abs(X) * 3).astype(np.int64)).to(dt)
        s = L.tensor((np.abs(S) * 3).astype(np.int64)).to(dt)
        i = L.tensor([0, 2])
        out = [a.scatter(0, L.tensor(IDX0), s), a.index_copy(0, i, s[:2]), a.index_fill(1, i, 1),
               a.put(i, s[0, :2]), a.index_put((i,), s[0]), a.masked_scatter(a > 0, s), L.take(a, i),
               L.slice_scatter(a, s[:1], 0, 2), L.select_scatter(a, s[:, 0], 1, 3), L.diagonal_scatter(a, s[0, :3])]
        if dtype != "bool":
            out += [a.index_add(0, i, s[:2], alpha=2), a.put(i, s[0, :2], accumulate=True),
                    a.scatter(0, L.tensor(IDX0), 2.7)]
            if dtype != "uint8":
                out += [a.scatter_reduce(0, L.tensor(IDX0), s, r, include_self=k)
                        for r in ("sum", "prod", "mean", "amax", "amin") for k in (True, False)]
                out += [a.index_reduce(0, L.tensor([2, 0, 2]), s, r, include_self=k)
                        for r in ("prod", "mean", "amax", "amin") for k in (True, False)]
        return tuple(out)
    same(each)


def test_integer_scatter_reduce_mean_rounds_down():
    same(lambda L: L.tensor([[-1, 2], [3, 4]]).scatter_reduce(0, L.tensor([[0, 0], [0, 0]]),
                                                              L.tensor([[-1, -2], [3, -5]]), "mean"))


def test_empty_and_0d():
    def each(L):
        e = L.zeros(0, 3)
        z = L.tensor(1.5)
        return (e.scatter(0, L.zeros(0, 3, dtype=L.long), e), e.index_add(1, L.tensor([0]), L.zeros(0, 1)),
                e.index_fill(0, L.tensor([], dtype=L.long), 1.0), L.take(e, L.tensor([], dtype=L.long)),
                z.scatter(0, L.tensor(0), L.tensor(2.0)), z.index_fill(0, L.tensor(0), 3.0),
                z.index_add(0, L.tensor([0]), L.tensor(2.0)), z.index_copy(0, L.tensor([0]), L.tensor(4.0)),
                L.take(z, L.tensor([0, 0])), z.put(L.tensor([0]), L.tensor([2.0])),
                L.count_nonzero(z), L.argwhere(z), L.argwhere(L.tensor(0.0)), L.argwhere(e))
    same(each)


def test_non_contiguous_inputs():
    base = RNG.standard_normal((4, 6)).astype(np.float32)[:, ::2].copy()

    def each(L):
        a = L.tensor(base).t()  # (3, 4), transposed
        s = L.tensor(S.copy()).t().t()
        i = L.tensor(IDX0).t().contiguous().t()
        return (a.scatter(0, i, s), a.scatter_reduce(0, i, s, "sum"), a.index_add(1, L.tensor([3, 0]), s[:, :2]),
                L.take(a, L.tensor([1, 5])), a.masked_scatter(a > 0, s), L.slice_scatter(a, s[:, 1:3], 1, 1, 3))
    same(each)


def test_scatter_legacy_reduce_and_its_warning():
    sys.modules["tapegrad.ops.scatter"]._warned_reduce[0] = False  # (tapegrad.ops.scatter: the function)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tg.tensor(X).scatter(0, tg.tensor(IDX0), tg.tensor(S), reduce="add")
    assert any("The reduce argument of torch.scatter with Tensor src is deprecated" in str(w.message) for w in caught)
    same(lambda L: (L.tensor(X).scatter(0, L.tensor(IDX0), L.tensor(S), reduce="add"),
                    L.tensor(X).scatter(0, L.tensor(IDX0), L.tensor(S), reduce="multiply"),
                    L.tensor(X).scatter(1, L.tensor(IDX0), 2.0, reduce="multiply")))


def test_index_reduce_beta_warning_and_0d():
    sys.modules["tapegrad.ops.scatter"]._warned_beta[0] = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tg.tensor(X).index_reduce(0, tg.tensor([0]), tg.tensor(S[:1]), "prod")
    beta = [w for w in caught if "index_reduce() is in beta and the API may change at any time." in str(w.message)]
    assert len(beta) == 1 and beta[0].filename == __file__  # the caller's line, as torch's C++ warning names it
    same(lambda L: L.tensor(2.0).index_reduce(0, L.tensor([0]), L.tensor(3.0), "prod"))
    check_error(lambda L: L.tensor([2.0]).index_reduce(0, L.tensor([0]), L.tensor(3.0), "prod"))


def test_index_put_accumulate_duplicates_and_last_write():
    same(lambda L: (L.tensor(X).index_put((L.tensor([0, 0, 2]),), L.tensor(S[:3]), accumulate=True),
                    L.tensor(X).put(L.tensor([1, 1, 3]), L.tensor([1.0, 2.0, 3.0]), accumulate=True),
                    L.tensor(X).index_add(0, L.tensor([1, 1, 1]), L.tensor(S[:3]))))


# -- searches and counts --------------------------------------------------------------------------------------------
def test_count_nonzero_and_argwhere():
    a = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]], np.float32)
    same(lambda L: (L.count_nonzero(L.tensor(a)), L.count_nonzero(L.tensor(a), dim=0),
                    L.tensor(a).count_nonzero(-1), L.count_nonzero(L.tensor(a), dim=(0, 1)),
                    L.argwhere(L.tensor(a)), L.tensor(a > 0).argwhere(), L.argwhere(L.tensor(a.astype(np.int32)))))


def test_bincount():
    v = np.array([0, 3, 1, 1, 7])
    same(lambda L: (L.bincount(L.tensor(v)), L.tensor(v).bincount(minlength=10),
                    L.bincount(L.tensor(v), weights=L.tensor(S[0, :4].tolist() + [1.0])),
                    L.bincount(L.tensor(v), weights=L.ones(5, dtype=L.float64)),
                    L.bincount(L.tensor(v), weights=L.ones(5, dtype=L.int32)),
                    L.bincount(L.tensor(v.astype(np.uint8))), L.bincount(L.tensor([], dtype=L.long))))


def test_histc():
    a = RNG.standard_normal(50).astype(np.float32)
    same(lambda L: (L.histc(L.tensor(a)), L.histc(L.tensor(a), bins=7, min=-1, max=1),
                    L.tensor(a).double().histc(5), L.histc(L.tensor([1.0, 1.0, 1.0]), bins=4),
                    L.histc(L.tensor([0.0, 1.0, 2.0, 3.0]), bins=3, min=0, max=3)))


def test_searchsorted_and_bucketize():
    seq = np.array([1.0, 2.0, 2.0, 3.0, 5.0], np.float32)
    vals = np.array([[2.0, 0.0, 5.0], [6.0, 2.5, 1.0]], np.float32)
    seq2 = np.sort(RNG.standard_normal((2, 6)), axis=1)
    vals2 = RNG.standard_normal((2, 3))

    def each(L):
        s, v = L.tensor(seq), L.tensor(vals)
        return (L.searchsorted(s, v), L.searchsorted(s, v, right=True), L.searchsorted(s, v, side="right"),
                L.searchsorted(s, v, out_int32=True), L.searchsorted(s, 2.0), L.searchsorted(s, 2, right=True),
                L.searchsorted(L.tensor(seq2), L.tensor(vals2)),
                L.searchsorted(L.tensor([3.0, 1.0, 2.0]), L.tensor([2.5]), sorter=L.tensor([1, 2, 0])),
                L.bucketize(v, s), L.bucketize(v, s, right=True), L.bucketize(v, s, out_int32=True),
                L.bucketize(2.0, s), L.searchsorted(L.tensor([1, 2, 3]), L.tensor([[2.0], [5.0]])))
    same(each)


def test_compile_falls_back_on_value_shaped_outputs():
    def f(t):
        return tg.argwhere(t).sum() + tg.bincount((t > 0).long().reshape(-1)).sum()
    compiled = tg.compile(f)
    t = tg.tensor(X)
    np.testing.assert_array_equal(compiled(t).numpy(), f(t).numpy())


def test_compile_recomputes_searches_and_counts():
    seq = tg.tensor([-1.0, 0.0, 0.5, 2.0])

    def f(t):
        return (tg.count_nonzero(t > 0, dim=1) + tg.searchsorted(seq, t).sum(1) + tg.bucketize(t, seq, right=True)[:, 0]
                + tg.histc(t, bins=4, min=-2, max=2)[:3].long())
    compiled = tg.compile(f)
    for k in range(3):
        t = tg.tensor(RNG.standard_normal((3, 4)).astype(np.float32))
        np.testing.assert_array_equal(compiled(t).numpy(), f(t).numpy())


@pytest.mark.parametrize("call", [
    lambda L: L.tensor(X).index_put((None, L.tensor([3, 0])), L.tensor([1.0, 2.0])),
    lambda L: L.index_put(L.tensor(X), (L.tensor([0]), None), L.tensor(1.0)),
    lambda L: L.tensor(X).index_put(([0],), L.tensor(1.0)),
    lambda L: L.tensor(X).index_put(L.tensor([0]), L.tensor(1.0)),
    lambda L: L.tensor(X).index_put((L.tensor([0]),), 1.0)])
def test_index_put_argument_types(call):
    check_error(call)


def test_histc_bins_float32_values_on_edges_as_torch():
    """ATen interpolates a value's bin in the input's dtype: float32 0.7 of [0, 1] in 10 bins is bin 7 (in float64,
    6); a float32 input's counts differ from its float64 copy's, as torch's do."""
    r = np.random.default_rng(0).normal(size=10000).astype(np.float32)
    same(lambda L: (L.histc(L.tensor([0.1 * i for i in range(11)]), bins=10, min=0.0, max=1.0),
                    L.histc(L.tensor([0.7]), bins=10, min=0.0, max=1.0), L.histc(L.tensor(r), bins=37),
                    L.histc(L.tensor(r), bins=7, min=-1, max=1.5), L.histc(L.tensor(r, dtype=L.float64), bins=37)))


def test_take_along_dim_flattened_and_broadcast_and_searchsorted_side_conflict_as_torch():
    X6 = np.arange(6.0).reshape(2, 3)
    same(lambda L: (L.take_along_dim(L.tensor(X6), L.tensor([0, 5])),
                    L.take_along_dim(L.tensor(X6), L.tensor([[2]]), 1),
                    L.take_along_dim(L.tensor(X6), L.tensor([[1, 0, 1]]), 0)))
    check_error(lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.5]), side="left", right=True))
