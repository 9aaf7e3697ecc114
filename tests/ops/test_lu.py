"""LU, LDL and the Householder products (tapegrad/ops/lu.py) against torch: LAPACK's factors and pivots (ties
included), the solves in every orientation, batching, gradients and second derivatives in float64, torch's errors;
lstsq's drivers, pinv's rcond and out= on the torch.linalg functions (tapegrad/linalg.py)."""
import warnings

import numpy as np
import pytest
import torch
from optable import check_error

import tapegrad

RNG = np.random.default_rng(3)


def close(got, want, tol=1e-10):
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol, atol=tol)


def grads(fn, *arrays, create_graph=False):
    """fn's value, and the gradients of sum(fn * w) (w fixed) in each library; with create_graph, of the gradients'
    squares too (second order)."""
    out = {}
    for L in (torch, tapegrad):
        xs = [L.tensor(a, requires_grad=True) for a in arrays]
        y = fn(L, *xs)
        ys = y if isinstance(y, tuple) else (y,)
        w = [L.tensor(np.random.default_rng(5).uniform(-1, 1, tuple(t.shape))) for t in ys]
        total = sum((t * wi).sum() for t, wi in zip(ys, w))
        g = L.autograd.grad(total, xs, create_graph=create_graph)
        if create_graph:
            g = L.autograd.grad(sum((gi * gi).sum() for gi in g), xs)
        out[L.__name__] = (ys, g)
    return out


def compare(fn, *arrays, create_graph=False, tol=1e-9):
    out = grads(fn, *arrays, create_graph=create_graph)
    (tv, tg), (gv, gg) = out["torch"], out["tapegrad"]
    for a, b in zip(gv, tv):
        close(a, b, tol)
    for a, b in zip(gg, tg):
        close(a, b, tol)


SHAPES = [(4, 4), (2, 3, 3), (3, 5), (5, 3), (2, 1, 4, 2)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lu_factor_values_and_pivots(shape, dtype):
    a = RNG.standard_normal(shape).astype(dtype)
    want, got = torch.linalg.lu_factor_ex(torch.tensor(a)), tapegrad.linalg.lu_factor_ex(tapegrad.tensor(a))
    assert type(got).__name__ == "linalg_lu_factor_ex"
    assert got.pivots.dtype == tapegrad.int32 and got.info.dtype == tapegrad.int32
    assert str(got.LU.dtype) == str(want.LU.dtype)
    assert got.pivots.tolist() == want.pivots.tolist() and got.info.tolist() == want.info.tolist()
    close(got.LU, want.LU, 1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_pivots_of_tie_heavy_matrices(seed):
    """Small integers: many columns hold several entries of the largest |value|; getrf takes the first."""
    g = np.random.default_rng(seed)
    for shape in ((5, 5), (3, 4, 4), (4, 6), (6, 3)):
        a = g.integers(-2, 3, shape).astype(np.float64)
        a[..., 0, :] = np.abs(a[..., 1, :])  # ties of |value| across signs
        want, got = torch.linalg.lu_factor_ex(torch.tensor(a)), tapegrad.linalg.lu_factor_ex(tapegrad.tensor(a))
        assert got.pivots.tolist() == want.pivots.tolist(), (shape, a)
        assert got.info.tolist() == want.info.tolist()
        close(got.LU, want.LU, 1e-12)
        P, L, U = tapegrad.linalg.lu(tapegrad.tensor(a))
        tP, tL, tU = torch.linalg.lu(torch.tensor(a))
        assert P.tolist() == tP.tolist()
        close(L, tL, 1e-12)
        close(U, tU, 1e-12)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lu_unpack_and_linalg_lu(shape):
    a = RNG.standard_normal(shape)
    for L in (torch, tapegrad):
        LU, piv = L.linalg.lu_factor(L.tensor(a))
        P, Lo, U = L.lu_unpack(LU, piv)
        assert np.allclose((P @ Lo @ U).numpy(), a)
    t, g = torch.lu_unpack(*torch.linalg.lu_factor(torch.tensor(a))), tapegrad.lu_unpack(
        *tapegrad.linalg.lu_factor(tapegrad.tensor(a)))
    assert type(g).__name__ == "lu_unpack"
    for x, y in zip(g, t):
        close(x, y, 1e-12)
    for kw in ({"unpack_data": False}, {"unpack_pivots": False}):
        t = torch.lu_unpack(*torch.linalg.lu_factor(torch.tensor(a)), **kw)
        g = tapegrad.lu_unpack(*tapegrad.linalg.lu_factor(tapegrad.tensor(a)), **kw)
        assert [tuple(x.shape) for x in g] == [tuple(x.shape) for x in t]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lu_gradients_as_torch(shape):
    a = RNG.standard_normal(shape) + 2 * np.eye(*shape[-2:])
    compare(lambda L, x: L.linalg.lu_factor(x).LU, a)
    compare(lambda L, x: L.linalg.lu_factor_ex(x).LU, a)
    compare(lambda L, x: tuple(L.linalg.lu(x))[1:], a)
    compare(lambda L, x: L.linalg.lu(x).L, a)
    compare(lambda L, x: L.linalg.lu(x).U, a)
    compare(lambda L, x: tuple(L.lu_unpack(*L.linalg.lu_factor(x)))[1:], a)


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 4), (4, 3)], ids=str)
def test_lu_second_derivatives_as_torch(shape):
    a = RNG.standard_normal(shape) + 2 * np.eye(*shape[-2:])
    compare(lambda L, x: L.linalg.lu_factor(x).LU, a, create_graph=True, tol=1e-8)
    compare(lambda L, x: tuple(L.linalg.lu(x))[1:], a, create_graph=True, tol=1e-8)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("batch", [((), ()), ((2,), ()), ((), (3,)), ((2, 1), (3,))], ids=str)
def test_lu_solve_as_torch(left, adjoint, batch):
    a = RNG.standard_normal(batch[0] + (3, 3)) + 2 * np.eye(3)
    b = RNG.standard_normal(batch[1] + ((3, 2) if left else (2, 3)))

    def fn(L, x, y):
        LU, piv = L.linalg.lu_factor(x)
        return L.linalg.lu_solve(LU, piv, y, left=left, adjoint=adjoint)
    compare(fn, a, b)
    compare(fn, a, b, create_graph=True, tol=1e-8)

    def packed(L, lu, y):  # the gradient w.r.t. LU itself (its two triangles)
        piv = L.linalg.lu_factor(L.tensor(a)).pivots
        return L.linalg.lu_solve(lu, piv, y, left=left, adjoint=adjoint)
    compare(packed, torch.linalg.lu_factor(torch.tensor(a)).LU.numpy(), b)


def test_deprecated_top_level_forms():
    a, b = RNG.standard_normal((2, 3, 3)) + 2 * np.eye(3), RNG.standard_normal((2, 3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare(lambda L, x, y: L.lu_solve(y, *L.lu(x)), a, b)
        for kw in ({}, {"upper": False}, {"transpose": True}, {"unitriangular": True},
                   {"upper": False, "transpose": True, "unitriangular": True}):
            compare(lambda L, x, y: tuple(L.triangular_solve(y, x, **kw)), a, b)
            compare(lambda L, x, y: L.triangular_solve(y, x, **kw).solution, a, b, create_graph=True, tol=1e-8)
        for L in (torch, tapegrad):
            assert L.lu(L.zeros(3, 3), get_infos=True)[2].tolist() == 1
            assert len(L.lu(L.zeros(3, 3))) == 2 and type(L.triangular_solve(L.eye(2), L.eye(2))).__name__ == \
                "triangular_solve"


def test_deprecation_warnings_once():
    import subprocess
    import sys
    code = ("import warnings, tapegrad as t\nwarnings.simplefilter('always')\nfor _ in range(2):\n"
            "    t.lu(t.eye(2)); t.lu_solve(t.eye(2), *t.linalg.lu_factor(t.eye(2))); t.triangular_solve(t.eye(2), "
            "t.eye(2))\n")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert err.count("torch.lu is deprecated") == 1 and err.count("torch.lu_solve is deprecated") == 1
    assert err.count("torch.triangular_solve is deprecated") == 1


@pytest.mark.parametrize("shape, k", [((4, 3), 3), ((2, 5, 3), 2), ((3, 3), 3)], ids=str)
def test_householder_product_orgqr_ormqr_as_torch(shape, k):
    a, tau = RNG.standard_normal(shape), RNG.uniform(0.5, 1.5, shape[:-2] + (k,))
    compare(lambda L, x, t: L.linalg.householder_product(x, t), a, tau)
    compare(lambda L, x, t: L.orgqr(x, t), a, tau, create_graph=True, tol=1e-8)
    m, n = shape[-2:]
    tau = RNG.uniform(0.5, 1.5, shape[:-2] + (n,))  # (ormqr takes min(m, n) reflectors)
    for left in (True, False):
        for transpose in (False, True):
            c = RNG.standard_normal(shape[:-2] + ((m, 2) if left else (2, m)))
            compare(lambda L, x, t, y: L.ormqr(x, t, y, left=left, transpose=transpose), a, tau, c)


def test_geqrf_round_trip():
    a = RNG.standard_normal((2, 5, 3))
    want, got = torch.geqrf(torch.tensor(a)), tapegrad.geqrf(tapegrad.tensor(a))
    assert type(got).__name__ == "geqrf"
    close(got.a, want.a, 1e-12)
    close(got.tau, want.tau, 1e-12)
    close(tapegrad.linalg.householder_product(*got), torch.linalg.householder_product(*want), 1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ldl_factor_and_solve_as_torch(dtype):
    g = np.random.default_rng(1)
    a = g.standard_normal((3, 4, 4))
    a = (a + np.swapaxes(a, -1, -2)).astype(dtype)  # indefinite: 2 x 2 blocks
    a[1] = [[0, 1, 2, 0], [1, 0, 3, 1], [2, 3, 0, 1], [0, 1, 1, 4]]
    b = g.standard_normal((3, 4, 2)).astype(dtype)
    want, got = torch.linalg.ldl_factor_ex(torch.tensor(a)), tapegrad.linalg.ldl_factor_ex(tapegrad.tensor(a))
    assert got.pivots.tolist() == want.pivots.tolist() and got.info.tolist() == want.info.tolist()
    assert (got.pivots.numpy() < 0).any()
    tol = 1e-4 if dtype == np.float32 else 1e-12
    close(got.LD, want.LD, tol)
    LD, piv = tapegrad.linalg.ldl_factor(tapegrad.tensor(a))
    close(tapegrad.linalg.ldl_solve(LD, piv, tapegrad.tensor(b)),
          torch.linalg.ldl_solve(*torch.linalg.ldl_factor(torch.tensor(a)), torch.tensor(b)), tol)
    assert not tapegrad.linalg.ldl_factor(tapegrad.tensor(a, requires_grad=True)).LD.requires_grad


@pytest.mark.parametrize("fn", [
    lambda L: L.linalg.lu_factor(L.zeros(2, 3, 3)),
    lambda L: L.linalg.lu_factor_ex(L.stack([L.eye(3), L.zeros(3, 3)]), check_errors=True),
    lambda L: L.linalg.lu_factor(L.ones(3)),
    lambda L: L.linalg.lu(L.ones(3)),
    lambda L: L.linalg.lu_factor(L.eye(3), pivot=False),
    lambda L: L.linalg.lu(L.eye(3), pivot=False),
    lambda L: L.linalg.lu_factor(L.eye(3, dtype=L.int64)),
    lambda L: L.linalg.lu_factor(L.eye(3, dtype=L.float16)),
    lambda L: L.linalg.lu_solve(L.eye(3), L.tensor([1, 2, 3], dtype=L.int32), L.ones(3)),
    lambda L: L.linalg.lu_solve(L.eye(3), L.tensor([1, 2, 3], dtype=L.int32), L.ones(4, 2)),
    lambda L: L.linalg.lu_solve(L.eye(3), L.tensor([1, 2, 3], dtype=L.int32), L.ones(2, 4), left=False),
    lambda L: L.linalg.lu_solve(L.eye(3), L.tensor([1, 2, 3], dtype=L.int32), L.ones(3, 2, dtype=L.float64)),
    lambda L: L.linalg.lu_solve(L.eye(3), L.tensor([1, 2, 3]), L.ones(3, 2)),
    lambda L: L.linalg.lu_solve(L.ones(3, 2), L.tensor([1, 2], dtype=L.int32), L.ones(3, 2)),
    lambda L: L.linalg.lu_solve(L.eye(3), L.tensor([1, 2], dtype=L.int32), L.ones(3, 2)),
    lambda L: L.linalg.lu_solve(L.eye(3).expand(2, 3, 3), L.tensor([1, 2, 3], dtype=L.int32), L.ones(3, 2)),
    lambda L: L.lu_unpack(L.eye(3), L.tensor([1, 2, 3])),
    lambda L: L.lu_unpack(L.ones(3), L.tensor([1, 2, 3], dtype=L.int32)),
    lambda L: L.triangular_solve(L.ones(3), L.eye(3)),
    lambda L: L.triangular_solve(L.ones(4, 2), L.eye(3)),
    lambda L: L.triangular_solve(L.ones(3, 2), L.ones(3)),
    lambda L: L.triangular_solve(L.ones(3, 2), L.ones(2, 3, 4)),
    lambda L: L.triangular_solve(L.ones(3, 2, dtype=L.float64), L.eye(3)),
    lambda L: L.triangular_solve(L.ones(2, 3, 2), L.eye(3).expand(4, 3, 3)),
    lambda L: L.linalg.ldl_factor(L.ones(3, 2)),
    lambda L: L.linalg.ldl_factor(L.ones(3, 3, dtype=L.int64)),
    lambda L: L.linalg.ldl_solve(*L.linalg.ldl_factor(L.eye(3)), L.ones(4, 2)),
    lambda L: L.linalg.householder_product(L.ones(2, 3), L.ones(1)),
    lambda L: L.linalg.householder_product(L.ones(3, 2), L.ones(3)),
    lambda L: L.linalg.householder_product(L.ones(2, 3, 2), L.ones(3, 1)),
    lambda L: L.linalg.householder_product(L.ones(3), L.ones(1)),
    lambda L: L.linalg.householder_product(L.ones(3, 2), L.ones(1, dtype=L.float64)),
    lambda L: L.geqrf(L.ones(3)),
    lambda L: L.ormqr(L.ones(3, 2), L.ones(2), L.ones(4, 2)),
    lambda L: L.ormqr(L.ones(3, 2), L.ones(2), L.ones(2, 4), left=False),
    lambda L: L.ormqr(L.ones(3, 2), L.ones(3), L.ones(3, 4)),
], ids=lambda f: None)
def test_errors_as_torch(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_error(fn)


def test_empty_inputs():
    for shape in ((0, 3, 3), (3, 0), (0, 4)):
        want, got = torch.linalg.lu_factor_ex(torch.zeros(shape)), tapegrad.linalg.lu_factor_ex(tapegrad.zeros(shape))
        assert [tuple(x.shape) for x in got] == [tuple(x.shape) for x in want]


# -- lstsq's drivers, pinv's rcond -----------------------------------------------------------------------------
@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
@pytest.mark.parametrize("shapes", [((2, 5, 3), (2, 5, 2)), ((3, 5), (3, 2)), ((5, 3), (5,)), ((1, 5, 3), (2, 5, 2))],
                         ids=str)
def test_lstsq_drivers_as_torch(driver, shapes):
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    got = tapegrad.linalg.lstsq(tapegrad.tensor(a), tapegrad.tensor(b), driver=driver)
    for field in ("solution", "residuals", "rank", "singular_values"):
        x, y = getattr(got, field), getattr(want, field)
        assert tuple(x.shape) == tuple(y.shape) and str(x.dtype) == str(y.dtype), field
        close(x, y, 1e-9)
    compare(lambda L, x, y: L.linalg.lstsq(x, y, driver=driver).solution, a, b)


def test_lstsq_rank_deficient_batch():
    a = RNG.standard_normal((1, 3, 3)).astype(np.float32)
    a[:, 0] = 0
    b = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    for driver in (None, "gelsy", "gelsd", "gelss"):
        want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        got = tapegrad.linalg.lstsq(tapegrad.tensor(a), tapegrad.tensor(b), driver=driver)
        assert got.rank.tolist() == want.rank.tolist() == [2]
        assert tuple(got.singular_values.shape) == tuple(want.singular_values.shape)
        close(got.solution, want.solution, 1e-4)
    check_error(lambda L: L.linalg.lstsq(L.ones(3, 3), L.ones(3, 2), driver="foo"))


def test_pinv_rcond():
    a = RNG.standard_normal((4, 3))
    for call in (lambda L, x: L.linalg.pinv(x, rcond=0.3), lambda L, x: L.linalg.pinv(x, 0.3),
                 lambda L, x: L.linalg.pinv(x @ x.mT, 0.3, True), lambda L, x: L.linalg.pinv(x, rcond=1e-15)):
        compare(call, a)


# -- out= ------------------------------------------------------------------------------------------------------
def _outs(L, like, kinds):
    return tuple(L.empty(0, dtype=getattr(L, k)) for k in kinds) if isinstance(kinds, tuple) else \
        L.empty(0, dtype=getattr(L, kinds))


SPD = RNG.standard_normal((3, 3))
SPD = SPD @ SPD.T + 3 * np.eye(3)
B = RNG.standard_normal((3, 2))
OUT_CASES = {
    "cholesky": (lambda L, a, o: L.linalg.cholesky(a, out=o), "float64"),
    "cholesky_ex": (lambda L, a, o: L.linalg.cholesky_ex(a, out=o), ("float64", "int32")),
    "cond": (lambda L, a, o: L.linalg.cond(a, out=o), "float64"),
    "cross": (lambda L, a, o: L.linalg.cross(a, a, out=o), "float64"),
    "det": (lambda L, a, o: L.linalg.det(a, out=o), "float64"),
    "eigh": (lambda L, a, o: L.linalg.eigh(a, out=o), ("float64", "float64")),
    "eigvalsh": (lambda L, a, o: L.linalg.eigvalsh(a, out=o), "float64"),
    "householder_product": (lambda L, a, o: L.linalg.householder_product(a, a[0, :2], out=o), "float64"),
    "inv": (lambda L, a, o: L.linalg.inv(a, out=o), "float64"),
    "inv_ex": (lambda L, a, o: L.linalg.inv_ex(a, out=o), ("float64", "int32")),
    "ldl_factor": (lambda L, a, o: L.linalg.ldl_factor(a, out=o), ("float64", "int32")),
    "ldl_factor_ex": (lambda L, a, o: L.linalg.ldl_factor_ex(a, out=o), ("float64", "int32", "int32")),
    "lu": (lambda L, a, o: L.linalg.lu(a, out=o), ("float64", "float64", "float64")),
    "lu_factor": (lambda L, a, o: L.linalg.lu_factor(a, out=o), ("float64", "int32")),
    "lu_factor_ex": (lambda L, a, o: L.linalg.lu_factor_ex(a, out=o), ("float64", "int32", "int32")),
    "lu_solve": (lambda L, a, o: L.linalg.lu_solve(*L.linalg.lu_factor(a), a, out=o), "float64"),
    "matmul": (lambda L, a, o: L.linalg.matmul(a, a, out=o), "float64"),
    "matrix_norm": (lambda L, a, o: L.linalg.matrix_norm(a, out=o), "float64"),
    "matrix_power": (lambda L, a, o: L.linalg.matrix_power(a, 3, out=o), "float64"),
    "matrix_rank": (lambda L, a, o: L.linalg.matrix_rank(a, out=o), "int64"),
    "multi_dot": (lambda L, a, o: L.linalg.multi_dot([a, a, a], out=o), "float64"),
    "norm": (lambda L, a, o: L.linalg.norm(a, out=o), "float64"),
    "pinv": (lambda L, a, o: L.linalg.pinv(a, out=o), "float64"),
    "qr": (lambda L, a, o: L.linalg.qr(a, out=o), ("float64", "float64")),
    "slogdet": (lambda L, a, o: L.linalg.slogdet(a, out=o), ("float64", "float64")),
    "solve": (lambda L, a, o: L.linalg.solve(a, a[:, :2], out=o), "float64"),
    "solve_ex": (lambda L, a, o: L.linalg.solve_ex(a, a[:, :2], out=o), ("float64", "int32")),
    "solve_triangular": (lambda L, a, o: L.linalg.solve_triangular(a, a, upper=True, out=o), "float64"),
    "svd": (lambda L, a, o: L.linalg.svd(a, out=o), ("float64", "float64", "float64")),
    "svdvals": (lambda L, a, o: L.linalg.svdvals(a, out=o), "float64"),
    "tensorinv": (lambda L, a, o: L.linalg.tensorinv(a, 1, out=o), "float64"),
    "tensorsolve": (lambda L, a, o: L.linalg.tensorsolve(a, a[0], out=o), "float64"),
    "vecdot": (lambda L, a, o: L.linalg.vecdot(a, a, out=o), "float64"),
    "vector_norm": (lambda L, a, o: L.linalg.vector_norm(a, out=o), "float64"),
}


@pytest.mark.parametrize("name", sorted(OUT_CASES))
def test_linalg_out_as_torch(name):
    fn, kinds = OUT_CASES[name]
    res = {}
    for L in (torch, tapegrad):
        o = _outs(L, None, kinds)
        r = fn(L, L.tensor(SPD), o)
        assert r is o or all(x is y for x, y in zip(r, o)), name
        res[L.__name__] = o if isinstance(o, tuple) else (o,)
    for x, y in zip(res["tapegrad"], res["torch"]):
        assert tuple(x.shape) == tuple(y.shape) and str(x.dtype) == str(y.dtype)
        if name not in ("eigh", "qr", "svd"):  # (the factors' signs are LAPACK's choice)
            close(x, y, 1e-9)


@pytest.mark.parametrize("name", sorted(OUT_CASES))
def test_linalg_out_refusals_as_torch(name):
    """A requires-grad argument (torch's message, with the kernel's name) and an out of another dtype."""
    fn, kinds = OUT_CASES[name]
    wrong = tuple("float32" if k == "float64" else k for k in kinds) if isinstance(kinds, tuple) else "float32"
    for call in (lambda L: fn(L, L.tensor(SPD, requires_grad=True), _outs(L, None, kinds)),
                 lambda L: fn(L, L.tensor(SPD), _outs(L, None, wrong))):
        try:  # (torch's composites and casting kernels accept either)
            call(torch)
        except Exception:
            check_error(call)
        else:
            call(tapegrad)
