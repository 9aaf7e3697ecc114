"""Op behaviour the table cannot express: __setitem__ under torch's rules, in-place variants, dropout's
randomness, return types, and the tape cost of the fused cross_entropy."""
import numpy as np
import pytest
import torch

import tapegrad
from optable import to_np

LIBS = [torch, tapegrad]
RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))
V4 = RNG.standard_normal(4)


def both(fn):
    """fn(lib) in both libraries: results (tensors or tuples of them) as NumPy."""
    out = []
    for L in LIBS:
        r = fn(L)
        out.append([to_np(t) for t in (r if isinstance(r, (tuple, list)) else (r,))])
    return out


def assert_same(fn, rtol=1e-12):
    want, got = both(fn)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


# -- __setitem__ ---------------------------------------------------------------------------------------------------
SETITEM = {
    "int": (1, 5.0), "slice": (slice(0, 2), -1.0), "column": ((slice(None), 2), V4[:3]),
    "mask": ("mask", 0.0), "list": ([0, 2], V4), "tensor_value": ((0, slice(1, 3)), V4[:2]),
    "ellipsis": ((Ellipsis, 0), 2.0), "pair": (([0, 1], [1, 3]), 7.0),
}


@pytest.mark.parametrize("name", list(SETITEM))
def test_setitem_values_and_gradients(name):
    key, value = SETITEM[name]

    def run(L):
        x = L.tensor(X, requires_grad=True)
        v = L.tensor(np.asarray(value, dtype=np.float64), requires_grad=True)
        y = x * 2
        k = (y.detach() > 0) if isinstance(key, str) else key
        y[k] = v if np.ndim(value) else value
        (y * L.tensor(X)).sum().backward()
        return y, x.grad, v.grad if v.grad is not None else L.zeros(v.shape, dtype=L.float64)
    assert_same(run)


def test_setitem_on_a_leaf_is_allowed_under_no_grad_and_bumps_the_version():
    for L in LIBS:
        x = L.tensor(X.copy(), requires_grad=True)
        v0 = x._version
        with L.no_grad():
            x[0] = 1.0
        assert x._version == v0 + 1
        assert to_np(x)[0].tolist() == [1.0] * 4


def test_setitem_value_requiring_grad_into_a_plain_tensor():
    def run(L):
        v = L.tensor(V4, requires_grad=True)
        y = L.zeros(3, 4, dtype=L.float64)
        y[1] = v
        assert y.requires_grad
        (y * L.tensor(X)).sum().backward()
        return y, v.grad
    assert_same(run)


def test_setitem_after_use_is_an_inplace_error_at_backward():
    for L in LIBS:
        x = L.tensor(X, requires_grad=True)
        y = x.exp()
        z = y * 1
        y[0] = 0.0       # exp saved its output: backward must refuse
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            (y.sum() + z.sum()).backward()


# -- in-place variants -----------------------------------------------------------------------------------------------
INPLACE = {
    "clamp_": lambda L, y: y.clamp_(-0.5, 0.5),
    "clamp_min_": lambda L, y: y.clamp_min_(0.1),
    "masked_fill_": lambda L, y: y.masked_fill_(L.tensor(X > 0.5), 0.25),
    "tril_": lambda L, y: y.tril_(1),
    "lerp_": lambda L, y: y.lerp_(L.tensor(X[::-1].copy()), 0.3),
    "scatter_add_": lambda L, y: y.scatter_add_(1, L.tensor([[0, 1], [2, 2], [3, 0]]), L.tensor(X[:, :2].copy())),
    "rsqrt_": lambda L, y: y.abs_().rsqrt_() if hasattr(y, "abs_") else y,
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_variants(name):
    def run(L):
        x = L.tensor(X, requires_grad=True)
        y = x * 1.5
        out = INPLACE[name](L, y)
        assert out is y
        (y * L.tensor(X)).sum().backward()
        return y, x.grad
    assert_same(run)


def test_inplace_on_leaf_raises():
    for L in LIBS:
        x = L.tensor(X, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            x.clamp_(0, 1)


# -- return types ----------------------------------------------------------------------------------------------------
def test_max_with_dim_is_a_values_indices_pair():
    for L in LIBS:
        r = L.tensor(X).max(1)
        values, indices = r
        assert r.values is values and r.indices is indices and r[0] is values
        assert repr(r).startswith("torch.return_types.max(\nvalues=tensor(")
        assert str(indices.dtype) == "torch.int64"
    assert_same(lambda L: L.min(L.tensor(X), dim=0, keepdim=True))
    assert_same(lambda L: L.max(L.tensor(X), L.tensor(V4)))


def test_max_dim_gradient_goes_to_the_returned_index():
    def run(L):
        x = L.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], requires_grad=True)
        v, i = x.max(1)
        v.sum().backward()
        return x.grad, i
    assert_same(run)


# -- dropout ---------------------------------------------------------------------------------------------------------
def test_dropout_zeros_and_scales():
    x = tapegrad.ones(200, 100, requires_grad=True)
    y = tapegrad.nn.functional.dropout(x, 0.3)
    a = to_np(y)
    kept = a != 0
    assert 0.65 < kept.mean() < 0.75
    np.testing.assert_allclose(a[kept], 1 / 0.7, rtol=1e-6)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), a)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_matches_torch_for_the_same_seed(dtype):
    data = RNG.standard_normal((7, 33)).astype(dtype)

    def run(L):
        L.manual_seed(1234)
        x = L.tensor(data, requires_grad=True)
        y = L.nn.functional.dropout(x, 0.25)
        y.backward(L.ones_like(y))
        return y, x.grad
    want, got = both(run)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_dropout_follows_the_seed():
    x = tapegrad.ones(50)
    tapegrad.manual_seed(3)
    a = to_np(tapegrad.nn.functional.dropout(x, 0.5))
    tapegrad.manual_seed(3)
    b = to_np(tapegrad.nn.functional.dropout(x, 0.5))
    np.testing.assert_array_equal(a, b)


def test_dropout_eval_p0_p1_and_inplace():
    F = tapegrad.nn.functional
    x = tapegrad.tensor(X)
    np.testing.assert_array_equal(to_np(F.dropout(x, 0.5, training=False)), X)
    np.testing.assert_array_equal(to_np(F.dropout(x, 0.0)), X)
    np.testing.assert_array_equal(to_np(F.dropout(x, 1.0)), np.zeros_like(X))
    y = tapegrad.tensor(X)
    out = F.dropout(y, 0.5, inplace=True)
    assert out is y
    assert set(np.unique(np.round(to_np(y) / X, 6))) <= {0.0, 2.0}
    assert tapegrad.dropout(x, 0.5, False) is x


# -- the fused loss --------------------------------------------------------------------------------------------------
def test_cross_entropy_with_class_indices_is_one_tape_row(monkeypatch):
    from tapegrad import tape as tape_mod
    monkeypatch.setattr(tape_mod._local, "tape", tape_mod.Tape())  # (a sweep of an earlier test's rows moves rows)
    x = tapegrad.tensor(RNG.standard_normal((64, 10)).astype(np.float32), requires_grad=True)
    logits = x * 1.0
    target = tapegrad.tensor(RNG.integers(0, 10, 64))
    tape = tape_mod.current()
    before = tape.n
    loss = tapegrad.nn.functional.cross_entropy(logits, target)
    assert tape.n - before == 1
    assert type(loss.grad_fn).__name__ == "NllLossBackward0"
    loss.backward()
    tx = torch.tensor(to_np(x), requires_grad=True)
    torch.nn.functional.cross_entropy(tx * 1.0, torch.tensor(to_np(target))).backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_of_wide_logits_takes_numpys_exp_and_agrees_with_the_kernel_and_torch(dtype, reduction,
                                                                                          weighted):
    """From ops/loss.py's _WIDE_LOGITS elements, the exponentials come from NumPy (compiled code calls expf per
    element, ten times slower): the losses and gradients are the narrow path's and float64 torch's, with ignored
    samples, a NaN row, a row with +inf and one with -inf, and 3-D logits (the class dimension moved)."""
    import tapegrad.ops.loss as loss_mod
    g = np.random.default_rng(5)
    x0 = (g.standard_normal((96, 130)) * 4).astype(dtype)
    x0[3, 7], x0[5, 2], x0[6, :] = np.nan, np.inf, -np.inf
    t0 = g.integers(0, 130, 96)
    t0[[1, 8]] = -100
    w0 = g.uniform(0.5, 2, 130).astype(dtype)
    results = []
    for wide in (1 << 62, 4096):
        loss_mod._WIDE_LOGITS, saved = wide, loss_mod._WIDE_LOGITS
        try:
            got = []
            for logits in (x0, np.moveaxis(x0.reshape(12, 8, 130), 2, 1)):  # (N, C) and (N, C, d)
                x = tapegrad.tensor(np.ascontiguousarray(logits), requires_grad=True)
                out = tapegrad.nn.functional.cross_entropy(
                    x, tapegrad.tensor(t0.reshape(logits.shape[0], -1).squeeze()),
                    weight=tapegrad.tensor(w0) if weighted else None, reduction=reduction)
                out.sum().backward()
                got.append((out.detach().numpy(), x.grad.numpy()))
            results.append(got)
        finally:
            loss_mod._WIDE_LOGITS = saved
    want = []
    for logits in (x0, np.moveaxis(x0.reshape(12, 8, 130), 2, 1)):
        x = torch.tensor(np.ascontiguousarray(logits), dtype=torch.float64, requires_grad=True)
        out = torch.nn.functional.cross_entropy(
            x, torch.tensor(t0.reshape(logits.shape[0], -1).squeeze()),
            weight=torch.tensor(w0, dtype=torch.float64) if weighted else None, reduction=reduction)
        out.sum().backward()
        want.append((out.detach().numpy(), x.grad.numpy()))
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-11, atol=1e-13)
    for narrow, wide, oracle in zip(*results, want):
        for a, b, c in zip(narrow, wide, oracle):
            np.testing.assert_allclose(a, c, **tol)
            np.testing.assert_allclose(b, c, **tol)


def test_linear_2d_is_one_tape_row(monkeypatch):
    from tapegrad import tape as tape_mod
    monkeypatch.setattr(tape_mod._local, "tape", tape_mod.Tape())
    x = tapegrad.tensor(RNG.standard_normal((8, 5)), requires_grad=True)
    w = tapegrad.tensor(RNG.standard_normal((3, 5)), requires_grad=True)
    b = tapegrad.tensor(RNG.standard_normal(3), requires_grad=True)
    tape = tape_mod.current()
    tape.slot(x), tape.slot(w), tape.slot(b)
    before = tape.n
    tapegrad.nn.functional.linear(x, w, b)
    assert tape.n - before == 1


# -- views are copies with a history ---------------------------------------------------------------------------------
def test_getitem_result_does_not_alias_but_carries_the_gradient():
    x = tapegrad.tensor(X, requires_grad=True)
    row = x[1]
    assert type(row.grad_fn).__name__ == "SelectBackward0"
    (row * 2).sum().backward()
    expected = np.zeros_like(X)
    expected[1] = 2
    np.testing.assert_array_equal(to_np(x.grad), expected)


@pytest.mark.parametrize("key", [
    (slice(None), slice(None, 2)), (slice(None), -1), (1, slice(1, 3)), (0, slice(None)), (slice(None), slice(None)),
    (2, 1), (slice(1, 100), -4), (slice(None, None, 2), slice(1, None, 2)), (-3,), (slice(None), 1, slice(None)),
    (slice(2, 2), 0), (slice(None), 4), (3, -5), (slice(None), slice(None, 2), 0),
    (0, np.int64(2)), (np.int64(-1), slice(1, 3)), (slice(None), np.int64(7))])
def test_a_tuple_of_ints_and_slices_indexes_as_torch(key):
    """x[:, :2], x[:, -1], probs[0, action] (np.int64 here: a 0-d integer tensor) and the like (the front end's
    first case): value, grad_fn, strides, gradient, and torch's error for an index out of bounds or too many."""
    results = []
    for L in (tapegrad, torch):
        x = L.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        k = tuple(L.tensor(int(v)) if isinstance(v, np.int64) else v for v in key)
        try:
            y = x[k]
        except IndexError as e:
            results.append(("IndexError", str(e)))
            continue
        (y * L.tensor(np.arange(1.0, 1.0 + y.numel()).reshape(tuple(y.shape)))).sum().backward()
        results.append((y.detach().numpy().tolist(), y.grad_fn.name(), y.stride(), y.is_contiguous(),
                        x.grad.numpy().tolist()))
    assert results[0] == results[1]


# -- pow by a Python 3 -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_cube_is_torchs_to_the_bit_for_negative_bases(dtype):
    """torch computes x ** 3 as x * x * x; so does tapegrad (libm's pow rounds differently, and is 16x slower
    for a negative base). Integer powers keep NumPy's integer pow."""
    base = np.tanh(RNG.uniform(-2, 2, 257)) if dtype != "int64" else np.arange(-20, 21)
    got, want = (L.tensor(base.astype(dtype)) ** 3 for L in (tapegrad, torch))
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
