"""tapegrad/ops/statistics.py beyond the table rows: errors in torch's types and words, namedtuples, dtypes,
in-place forms, empty and 0-d inputs, non-contiguous inputs, cumprod's exact gradient with zeros and
logcumsumexp's stability, against torch 2.13."""

import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = (torch, tg)


def both(fn, *arrays, grad=False):
    """fn(lib, *tensors) in torch and tapegrad, on copies of the arrays."""
    out = []
    for L in LIBS:
        xs = [L.tensor(a.copy(), requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        out.append((fn(L, *xs), xs))
    return out


def np_of(t):
    return np.asarray(t.detach().numpy())


def close(a, b, tol=1e-12):
    np.testing.assert_allclose(np_of(a), np_of(b), rtol=tol, atol=tol, equal_nan=True)


def same_error(fn, *arrays):
    """fn raises the same exception type with the same message in both libraries."""
    caught = []
    for L in LIBS:
        xs = [L.tensor(a.copy()) for a in arrays]
        with pytest.raises(Exception) as info:
            fn(L, *xs)
        caught.append(info.value)
    assert type(caught[1]) is type(caught[0]), (caught[1], caught[0])
    assert str(caught[1]) == str(caught[0])


F = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.37 - 1.1
ERRORS = {
    "quantile_q_range": (lambda L, x: L.quantile(x, 1.5), [F]),
    "quantile_q_range_tensor": (lambda L, x: L.quantile(x, L.tensor([0.2, 1.5])), [F]),
    "quantile_int": (lambda L, x: L.quantile(x, 0.5), [np.arange(3)]),
    "quantile_q_dtype": (lambda L, x: L.quantile(x, L.tensor([0.5], dtype=L.float64)), [F]),
    "quantile_q_2d": (lambda L, x: L.quantile(x, L.zeros(2, 2)), [F]),
    "quantile_empty": (lambda L, x: L.quantile(x, 0.5), [np.zeros(0, np.float32)]),
    "quantile_interpolation": (lambda L, x: L.quantile(x, 0.5, interpolation="foo"), [F]),
    "nanquantile_q_range": (lambda L, x: L.nanquantile(x, -0.1), [F]),
    "cumprod_dim": (lambda L, x: L.cumprod(x, 2), [F]),
    "logcumsumexp_int": (lambda L, x: L.logcumsumexp(x, 0), [np.arange(3)]),
    "median_empty_dim": (lambda L, x: L.median(x, 0), [np.zeros((0, 3), np.float32)]),
    "mode_empty_dim": (lambda L, x: L.mode(x, 0), [np.zeros((0,), np.float32)]),
    "kthvalue_k_big": (lambda L, x: L.kthvalue(x, 5), [F]),
    "kthvalue_k0": (lambda L, x: L.kthvalue(x, 0, 0), [F]),
    "aminmax_empty": (lambda L, x: L.aminmax(x), [np.zeros(0, np.float32)]),
    "nanmean_int": (lambda L, x: L.nanmean(x), [np.arange(3)]),
    "std_mean_int": (lambda L, x: L.std_mean(x), [np.arange(3)]),
    "var_mean_int": (lambda L, x: L.var_mean(x), [np.arange(3)]),
    "cov_3d": (lambda L, x: L.cov(x), [np.zeros((2, 2, 2), np.float32)]),
    "cov_fweights_float": (lambda L, x: L.cov(x, fweights=L.ones(4)), [F]),
    "cov_fweights_negative": (lambda L, x: L.cov(x, fweights=L.tensor([1, -1, 1, 1])), [F]),
    "cov_aweights_int": (lambda L, x: L.cov(x, aweights=L.tensor([1, 1, 1, 1])), [F]),
    "cov_aweights_numel": (lambda L, x: L.cov(x, aweights=L.ones(3)), [F]),
    "corrcoef_3d": (lambda L, x: L.corrcoef(x), [np.zeros((2, 2, 2), np.float32)]),
    "trapezoid_x_size": (lambda L, y: L.trapezoid(y, L.zeros(3)), [F]),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    fn, arrays = ERRORS[name]
    same_error(fn, *arrays)


def test_cumprod_zeros_gradient_float64():
    """torch's cumprod_backward with one, two and leading/trailing zeros per row, and its second derivative."""
    x = np.array([[0.0, 2.0, 3.0, -1.5], [1.5, 0.0, 2.0, 0.0], [2.0, -1.0, 0.5, 0.0], [0.0, 0.0, 1.0, 2.0],
                  [1.0, 2.0, 3.0, 4.0]])
    g = np.array([[0.3, -1.0, 2.0, 0.7]] * 5)
    res = []
    for L in LIBS:
        t = L.tensor(x.copy(), requires_grad=True)
        y = t.cumprod(1)
        gx, = L.autograd.grad(y, t, L.tensor(g), create_graph=True)
        ggx, = L.autograd.grad((gx * gx).sum(), t)
        res.append((y, gx, ggx))
    for a, b in zip(res[1], res[0]):
        close(a, b)


def test_cumprod_inplace_and_int():
    for dt in (np.int32, np.int64, np.bool_):
        (a, _), (b, _) = both(lambda L, x: L.cumprod(x, 0), np.array([1, 2, 3, 0, 2]).astype(dt))
        assert str(a.dtype) == str(b.dtype) == "torch.int64"
        np.testing.assert_array_equal(np_of(b), np_of(a))
    (a, _), (b, _) = both(lambda L, x: x.cumprod_(1), F.astype(np.float64))
    close(b, a)
    (a, _), (b, _) = both(lambda L, x: x.cumsum_(0), F.astype(np.float64))
    close(b, a)
    (a, _), (b, _) = both(lambda L, x: L.cumprod(x, 0, dtype=L.float64), F)
    assert b.dtype == tg.float64


def test_inplace_leaf_error():
    for L in LIBS:
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            L.ones(3, requires_grad=True).cumprod_(0)


def test_logcumsumexp_large_values():
    x = np.array([[1000.0, 1001.0, -1000.0, 999.0, 1000.0], [-1e4, -1e4 + 1, -1e4 - 3, -1e4, -1e4 + 2]])
    g = np.array([[1.0, -2.0, 0.5, 0.0, 3.0], [0.1, 0.2, -0.3, 0.4, -0.5]])
    for dt in (np.float32, np.float64):
        out = []
        for L in LIBS:
            t = L.tensor(x.astype(dt), requires_grad=True)
            y = L.logcumsumexp(t, 1)
            y.backward(L.tensor(g.astype(dt)))
            out.append((y, t.grad))
        tol = 1e-5 if dt == np.float32 else 1e-12
        for a, b in zip(out[1], out[0]):
            assert np.isfinite(np_of(a)).all()
            np.testing.assert_allclose(np_of(a), np_of(b), rtol=tol, atol=tol * 1e3)


def test_namedtuples():
    x = F.astype(np.float64)
    for name, fn in (("cummax", lambda L, t: L.cummax(t, 1)), ("cummin", lambda L, t: t.cummin(0)),
                     ("median", lambda L, t: L.median(t, 1)), ("nanmedian", lambda L, t: t.nanmedian(0)),
                     ("kthvalue", lambda L, t: L.kthvalue(t, 2)), ("mode", lambda L, t: L.mode(t))):
        (a, _), (b, _) = both(fn, x)
        assert type(b).__name__ == type(a).__name__ == name
        assert b._fields == ("values", "indices")
        np.testing.assert_array_equal(np_of(b.indices), np_of(a.indices))
        assert b.indices.dtype == tg.int64
    (a, _), (b, _) = both(lambda L, t: L.aminmax(t, dim=0, keepdim=True), x)
    assert type(b).__name__ == "aminmax" and b._fields == ("min", "max")
    close(b.min, a.min)
    close(b.max, a.max)
    (a, _), (b, _) = both(lambda L, t: L.std_mean(t, 1), x)
    assert type(b) is tuple and len(b) == 2


def test_cummax_ties_and_nan_indices():
    """The latest of tied extremes, and a NaN (the latest NaN) once one is seen, as torch's CPU kernel."""
    x = np.array([[1.0, 3.0, 3.0, np.nan, 5.0, np.nan, 2.0], [2.0, 2.0, 1.0, 1.0, 0.0, 0.0, 4.0]])
    for name in ("cummax", "cummin"):
        (a, _), (b, _) = both(lambda L, t: getattr(L, name)(t, 1), x)
        close(b.values, a.values)
        np.testing.assert_array_equal(np_of(b.indices), np_of(a.indices))


def test_median_nan_and_int():
    x = np.array([[1.0, np.nan, 2.0, np.nan], [3.0, 1.0, 2.0, 0.5]])
    for fn in (lambda L, t: L.median(t, 1), lambda L, t: L.nanmedian(t, 1)):
        (a, _), (b, _) = both(fn, x)
        close(b.values, a.values)
        np.testing.assert_array_equal(np_of(b.indices), np_of(a.indices))
    (a, _), (b, _) = both(lambda L, t: L.nanmedian(t * np.nan, 1), x)   # (all NaN: torch's index is unspecified)
    close(b.values, a.values)
    for fn in (lambda L, t: L.median(t), lambda L, t: L.nanmedian(t), lambda L, t: L.median(t[1])):
        (a, _), (b, _) = both(fn, x)
        close(b, a)
    ints = np.array([[5, 1, 4, 2], [7, 3, 9, 8]])
    for fn in (lambda L, t: L.median(t), lambda L, t: L.median(t, 1).values, lambda L, t: L.kthvalue(t, 3).values,
               lambda L, t: L.mode(t, 0).values):
        (a, _), (b, _) = both(fn, ints)
        assert str(b.dtype) == str(a.dtype)
        np.testing.assert_array_equal(np_of(b), np_of(a))


def test_empty_inputs():
    e = np.zeros((0,), np.float32)
    for fn in (lambda L, t: L.median(t), lambda L, t: L.nanmedian(t), lambda L, t: L.nansum(t),
               lambda L, t: L.nanmean(t), lambda L, t: L.cumprod(t, 0), lambda L, t: L.logcumsumexp(t, 0),
               lambda L, t: L.cummax(t, 0).values, lambda L, t: L.trapezoid(t),
               lambda L, t: L.cumulative_trapezoid(t)):
        (a, _), (b, _) = both(fn, e)
        assert tuple(b.shape) == tuple(a.shape)
        assert str(b.dtype) == str(a.dtype)
        close(b, a)


def test_zero_dim_inputs():
    s = np.array(1.5)
    for fn in (lambda L, t: L.median(t), lambda L, t: L.median(t, 0), lambda L, t: L.kthvalue(t, 1),
               lambda L, t: L.mode(t), lambda L, t: L.quantile(t, 0.3), lambda L, t: L.aminmax(t),
               lambda L, t: L.cumprod(t, 0), lambda L, t: L.cummin(t, 0), lambda L, t: L.nansum(t)):
        (a, _), (b, _) = both(fn, s)
        for p, q in zip(b if isinstance(b, tuple) else (b,), a if isinstance(a, tuple) else (a,)):
            assert tuple(p.shape) == tuple(q.shape)
            close(p, q)


def test_non_contiguous():
    x = np.random.default_rng(3).standard_normal((5, 6))
    for fn in (lambda L, t: L.cumprod(t.t(), 1), lambda L, t: L.cummax(t[:, ::2], 0).values,
               lambda L, t: L.median(t.t(), 1).values, lambda L, t: L.quantile(t.t(), 0.3, dim=0),
               lambda L, t: L.logcumsumexp(t.t(), 0), lambda L, t: L.cov(t.t())):
        (a, xa), (b, xb) = both(fn, x, grad=True)
        close(b, a)
        a.sum().backward()
        b.sum().backward()
        close(xb[0].grad, xa[0].grad)


def test_nan_reductions_dtypes():
    for dt in (np.int32, np.int64, np.bool_, np.float32):
        (a, _), (b, _) = both(lambda L, t: L.nansum(t, 0), np.array([[1, 0], [1, 1]]).astype(dt))
        assert str(b.dtype) == str(a.dtype)
        close(b, a)
    (a, _), (b, _) = both(lambda L, t: L.nansum(t, dtype=L.float64), F)
    assert str(b.dtype) == str(a.dtype)
    x = np.array([[np.nan, 1.0], [np.nan, np.nan]], np.float32)
    (a, xa), (b, xb) = both(lambda L, t: L.nanmean(t, 1), x, grad=True)
    close(b, a)
    a.sum().backward()
    b.sum().backward()
    close(xb[0].grad, xa[0].grad)


def test_quantile_nan_and_ties():
    x = np.array([[1.0, 2.0, 2.0, 2.0, 5.0], [np.nan, 1.0, 0.0, 3.0, 3.0]])
    q = np.array([0.0, 0.3, 0.5, 1.0])
    for interpolation in ("linear", "lower", "higher", "midpoint", "nearest"):
        for name in ("quantile", "nanquantile"):
            (a, xa), (b, xb) = both(lambda L, t, qq: getattr(L, name)(t, qq, dim=1, interpolation=interpolation),
                                    x, q, grad=True)
            close(b, a)
            a.sum().backward()
            b.sum().backward()
            close(xb[0].grad, xa[0].grad)


def test_cov_warns_and_weights():
    x = np.array([[1.0, 2.0, 4.0]])
    for L in LIBS:
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            L.cov(L.tensor(x), correction=3)
    same_error(lambda L, t: L.cov(t, fweights=L.tensor([0, 0, 0])), x)


def test_trapezoid_forms():
    y = np.random.default_rng(4).standard_normal((3, 4, 5))
    x = np.random.default_rng(5).standard_normal((4, 5))
    for fn in (lambda L, t, s: L.trapezoid(t, s), lambda L, t, s: L.trapezoid(t, s[:, 0], dim=1),
               lambda L, t, s: L.trapz(t, dx=0.3, dim=0), lambda L, t, s: L.trapezoid(t, dx=2),
               lambda L, t, s: L.cumulative_trapezoid(t, s[:, 1], dim=1),
               lambda L, t, s: L.cumulative_trapezoid(t, s)):
        (a, xa), (b, xb) = both(fn, y, x, grad=True)
        close(b, a)
        a.sum().backward()
        b.sum().backward()
        close(xb[0].grad, xa[0].grad)
        close(xb[1].grad, xa[1].grad) if xa[1].grad is not None else None


def test_compile_cummax_median():
    """tapegrad.compile replays the selections with the indices recomputed from new values."""
    def f(x):
        return x.cummax(1).values.sum() + x.median(1).values.sum() + x.kthvalue(2, 0).values.sum()
    cf = tg.compile(f)
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = rng.standard_normal((4, 5))
        got = cf(tg.tensor(x))
        want = f(torch.tensor(x))
        np.testing.assert_allclose(float(got), float(want), rtol=1e-12)
