"""The factorizations and solvers beyond the table: torch's errors (types and messages), namedtuple fields,
integer and empty inputs, non-contiguous inputs, lstsq's outputs, torch.cross's deprecated default."""
import warnings

import numpy as np
import pytest
import torch
from optable import check_error

import tapegrad


def both(a):
    return torch.tensor(a), tapegrad.tensor(a)


def close(got, want, rtol=1e-6):
    np.testing.assert_allclose(np.asarray(got.detach().numpy() if hasattr(got, "detach") else got),
                               want.detach().numpy(), rtol=rtol, atol=rtol)


RNG = np.random.default_rng(0)
SQ = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
WIDE = RNG.standard_normal((2, 3))


@pytest.mark.parametrize("fn", [
    lambda L: L.linalg.inv(L.zeros(3, 3)),
    lambda L: L.linalg.inv(L.zeros(2, 3, 3)),
    lambda L: L.inverse(L.tensor([[1.0, 2.0], [2.0, 4.0]])),
    lambda L: L.linalg.inv(L.tensor(WIDE)),
    lambda L: L.linalg.inv(L.ones(3)),
    lambda L: L.linalg.det(L.tensor(WIDE)),
    lambda L: L.linalg.det(L.ones(3)),
    lambda L: L.linalg.det(L.ones(3, 3, dtype=L.int64)),
    lambda L: L.linalg.slogdet(L.tensor(WIDE)),
    lambda L: L.linalg.svd(L.ones(3, 3, dtype=L.int64)),
    lambda L: L.linalg.svd(L.ones(3)),
    lambda L: L.linalg.qr(L.ones(3)),
    lambda L: L.linalg.qr(L.ones(3, 2), mode="x"),
    lambda L: L.linalg.solve(L.zeros(3, 3), L.ones(3)),
    lambda L: L.linalg.solve(L.eye(3), L.ones(3, dtype=L.float64)),
    lambda L: L.linalg.solve(L.eye(3), L.ones(4)),
    lambda L: L.linalg.solve(L.eye(3), L.ones(4, 2)),
    lambda L: L.linalg.solve(L.tensor(WIDE), L.ones(2)),
    lambda L: L.linalg.solve_triangular(L.eye(3), L.ones(3), upper=True),
    lambda L: L.linalg.cholesky(-L.eye(3)),
    lambda L: L.linalg.cholesky(L.diag(L.tensor([1.0, -1.0, 1.0])).expand(2, 3, 3)),
    lambda L: L.linalg.cholesky(L.tensor(WIDE)),
    lambda L: L.linalg.eigh(L.tensor(WIDE)),
    lambda L: L.linalg.eigh(L.eye(3), UPLO="X"),
    lambda L: L.linalg.matrix_power(L.tensor(WIDE), 2),
    lambda L: L.linalg.matrix_power(L.zeros(3, 3), -1),
    lambda L: L.linalg.cross(L.ones(4), L.ones(4)),
    lambda L: L.linalg.cross(L.ones(3), L.ones(3, dtype=L.float64)),
    lambda L: L.linalg.multi_dot([L.eye(3)]),
    lambda L: L.linalg.lstsq(L.ones(3, 3), L.ones(4, 2)),
    lambda L: L.linalg.matrix_norm(L.ones(3, 3, dtype=L.float64), "nuc", dtype=L.float32),
    lambda L: L.linalg.vander(L.ones(3), N=1),
    lambda L: L.cholesky(-L.eye(2)),
], ids=lambda f: None)
def test_errors_as_torch(fn):
    check_error(fn)


def test_singular_inv_is_linalg_error():
    with pytest.raises(tapegrad.linalg.LinAlgError, match="singular"):
        tapegrad.linalg.inv(tapegrad.zeros(2, 2))
    assert issubclass(tapegrad.linalg.LinAlgError, RuntimeError)


@pytest.mark.parametrize("mode, message", [("r", "which is not computed when mode='r'"),
                                           ("complete", "not differentiable when mode='complete'")])
def test_qr_gradient_errors(mode, message):
    for L in (torch, tapegrad):
        a = L.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
        with pytest.raises(RuntimeError, match=message):
            L.linalg.qr(a, mode=mode).R.sum().backward()


def test_namedtuples_and_dtypes():
    t, g = both(SQ.astype(np.float32))
    for name, call in [("linalg_slogdet", lambda L, x: L.linalg.slogdet(x)), ("slogdet", lambda L, x: L.slogdet(x)),
                       ("linalg_inv_ex", lambda L, x: L.linalg.inv_ex(x)),
                       ("linalg_cholesky_ex", lambda L, x: L.linalg.cholesky_ex(x @ x.mT)),
                       ("linalg_qr", lambda L, x: L.linalg.qr(x)), ("qr", lambda L, x: L.qr(x)),
                       ("linalg_svd", lambda L, x: L.linalg.svd(x)), ("svd", lambda L, x: L.svd(x)),
                       ("linalg_eigh", lambda L, x: L.linalg.eigh(x)),
                       ("linalg_lstsq", lambda L, x: L.linalg.lstsq(x, x))]:
        want, got = call(torch, t), call(tapegrad, g)
        assert type(got).__name__ == type(want).__name__ == name and len(got) == len(want), name
        for field in got._fields:
            assert str(getattr(got, field).dtype) == str(getattr(want, field).dtype), (name, field)
        for a, b in zip(got, want):
            assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape), (name, a.dtype, b.dtype)


def test_inv_ex_and_cholesky_ex_info():
    for L in (torch, tapegrad):
        a = L.stack([L.eye(3), L.zeros(3, 3)])
        assert L.linalg.inv_ex(a).info.tolist() == [0, 1]
        c = L.stack([L.eye(3), L.diag(L.tensor([1.0, 1.0, -1.0]))])
        assert L.linalg.cholesky_ex(c).info.tolist() == [0, 3]
        with pytest.raises(RuntimeError, match="order 3"):
            L.linalg.cholesky_ex(c, check_errors=True)


def test_lstsq_outputs_as_gelsy():
    a, b = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 5, 2))
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b))
    got = tapegrad.linalg.lstsq(tapegrad.tensor(a), tapegrad.tensor(b))
    close(got.solution, want.solution, 1e-9)
    assert got.rank.tolist() == want.rank.tolist() and got.rank.dtype == tapegrad.int64
    assert tuple(got.residuals.shape) == tuple(want.residuals.shape) == (0,)
    assert tuple(got.singular_values.shape) == tuple(want.singular_values.shape)
    v = tapegrad.linalg.lstsq(tapegrad.tensor(a[0]), tapegrad.tensor(b[0, :, 0])).solution
    close(v, torch.linalg.lstsq(torch.tensor(a[0]), torch.tensor(b[0, :, :1])).solution[:, 0], 1e-9)


def test_matrix_rank_and_svd_compute_uv():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]])
    t, g = both(a)
    for kw in ({}, {"hermitian": True}, {"atol": 1.0}, {"rtol": 0.5}):
        x, y = (t @ t.mT, g @ g.mT) if kw.get("hermitian") else (t, g)
        assert tapegrad.linalg.matrix_rank(y, **kw).tolist() == torch.linalg.matrix_rank(x, **kw).tolist(), kw
    u, s, v = tapegrad.svd(g, compute_uv=False)
    tu, ts, tv = torch.svd(t, compute_uv=False)
    close(s, ts, 1e-9)
    assert not u.numpy().any() and tuple(u.shape) == tuple(tu.shape) and tuple(v.shape) == tuple(tv.shape)


def test_empty_and_batched_shapes():
    for L in (torch, tapegrad):
        assert L.linalg.det(L.zeros(0, 0)).item() == 1.0
        assert tuple(L.linalg.inv(L.zeros(0, 3, 3)).shape) == (0, 3, 3)
        assert [tuple(x.shape) for x in L.linalg.svd(L.zeros(2, 0, 3))] == [(2, 0, 0), (2, 0), (2, 3, 3)]
        assert [tuple(x.shape) for x in L.linalg.qr(L.zeros(0, 4, 2))] == [(0, 4, 2), (0, 2, 2)]


def test_non_contiguous_inputs():
    a = RNG.standard_normal((3, 3, 2)) + 3 * np.eye(3)[:, :, None]
    t, g = both(a)
    for f in (lambda L, x: L.linalg.inv(x[..., 0].mT), lambda L, x: L.linalg.det(x.permute(2, 0, 1)),
              lambda L, x: L.linalg.solve(x[..., 1], x[:, 0, :])):
        close(f(tapegrad, g), f(torch, t), 1e-9)


def test_torch_cross_default_dim_warns():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        got = tapegrad.cross(tapegrad.tensor(a), tapegrad.tensor(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close(got, torch.cross(torch.tensor(a), torch.tensor(b)), 1e-12)


def test_integer_cross_and_vander():
    a, b = np.array([[1, 2, 3]]), np.array([[4, 5, 6]])
    got, want = tapegrad.linalg.cross(tapegrad.tensor(a), tapegrad.tensor(b)), torch.linalg.cross(torch.tensor(a),
                                                                                                    torch.tensor(b))
    assert got.dtype == tapegrad.int64 and got.tolist() == want.tolist()
    x = np.array([1, 2, 3])
    got, want = tapegrad.linalg.vander(tapegrad.tensor(x)), torch.linalg.vander(torch.tensor(x))
    assert got.dtype == tapegrad.int64 and got.tolist() == want.tolist()


def test_det_pinv_tolerances_and_float32():
    a = RNG.standard_normal((4, 3)).astype(np.float32)
    t, g = both(a)
    for kw in ({"atol": 0.5}, {"rtol": 0.3}, {"atol": torch.tensor(0.1)}):
        gkw = {k: tapegrad.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
        got = tapegrad.linalg.pinv(g, **gkw)
        assert got.dtype == tapegrad.float32
        close(got, torch.linalg.pinv(t, **kw), 1e-5)


def test_second_order_through_inv():
    """create_graph: the rule is recorded (d/dA of sum(grad det(A)))."""
    out = {}
    for L in (torch, tapegrad):
        a = L.tensor(SQ, requires_grad=True)
        (g,) = L.autograd.grad(L.linalg.det(a), a, create_graph=True)
        (h,) = L.autograd.grad((g * g).sum(), a)
        out[L.__name__] = h
    close(out["tapegrad"], out["torch"], 1e-8)


def test_compile_replays_the_factorizations():
    """tapegrad.compile reruns each row's forward on new values (no value is baked into the trace)."""
    def f(L, x):
        return (L.linalg.det(x) + L.linalg.svdvals(x).sum() + L.linalg.eigh(x + x.mT).eigenvalues.sum()
                + L.linalg.inv(x).sum() + L.linalg.solve(x, x[0]).sum() + L.linalg.qr(x).R.sum())
    compiled = tapegrad.compile(lambda x: f(tapegrad, x))
    for shift in (3.0, 4.0, 5.0):
        a = RNG.standard_normal((3, 3)) + shift * np.eye(3)
        g, t = tapegrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        y, want = compiled(g), f(torch, t)
        close(y, want, 1e-9)
        close(tapegrad.autograd.grad(y, g)[0], torch.autograd.grad(want, t)[0], 1e-8)


def test_det_gradient_of_singular_matrices():
    """As torch: 0 where det(A) = 0 in a plain backward; under create_graph, the cofactors (through the SVD)."""
    a = np.array([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], [[2.0, 0.0, 0.0], [0.0, 1.0, 0.0],
                                                                         [0.0, 0.0, 3.0]]])
    for create_graph in (False, True):
        out = {}
        for L in (torch, tapegrad):
            x = L.tensor(a, requires_grad=True)
            out[L.__name__] = L.autograd.grad(L.linalg.det(x).sum(), x, create_graph=create_graph)[0]
        close(out["tapegrad"], out["torch"], 1e-9)
