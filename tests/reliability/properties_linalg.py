"""Property-test cases for linear algebra (tapegrad/ops/decompositions.py): well-conditioned matrices from any x."""
import warnings

import numpy as np


def _unit(L, x):
    """x mapped into [-0.9, 0.9], whatever it holds (a NaN a chained case made: 0, an infinity: +-0.9)."""
    return L.nan_to_num(x, nan=0.0).tanh() * 0.9


def _const(L, a):
    return L.tensor(np.asarray(a, dtype=np.float64), dtype=L.float64)


def _entries(L, x, k):
    """k smooth, bounded entries read from x of any shape (cycled when x has fewer), with fixed varied weights."""
    t = _unit(L, x).reshape(-1)
    t = t.repeat(-(-k // t.shape[0]))[:k]
    return t * _const(L, np.linspace(-1.0, 1.0, k) * 0.05 + 0.1)


def _square(L, x, n=3):
    """D + E: D = diag(1, 2, .., n), |E| small, so singular values near 1..n (distinct, condition ~n)."""
    return _const(L, np.diag(np.arange(1.0, n + 1))) + _entries(L, x, n * n).reshape(n, n)


def _tall(L, x):
    """A 4 x 3 matrix of full rank, its singular values near 1, 2, 3."""
    base = np.zeros((4, 3))
    base[:3] = np.diag([1.0, 2.0, 3.0])
    base[3] = [0.3, -0.2, 0.1]
    return _const(L, base) + _entries(L, x, 12).reshape(4, 3)


def _spd(L, x):
    """B B^T + I: symmetric positive definite, eigenvalues near 2, 5, 10."""
    B = _square(L, x)
    return B @ B.mT + _const(L, np.eye(3))


def _sym(L, x):
    """Symmetric, eigenvalues near 1, 2, 3."""
    B = _square(L, x)
    return (B + B.mT) * 0.5


def _W(L, n=3):
    return _const(L, np.arange(1.0, n + 1))


def _svd(L, x, R):
    U, S, Vh = L.linalg.svd(_tall(L, x), full_matrices=False)
    return (U * S.sqrt()) @ Vh + S  # gauge-invariant (a sign flip of a pair of vectors cancels)


def _eigh(L, x, R):
    w, V = L.linalg.eigh(_sym(L, x))
    return (V * (w * 0.5).exp()) @ V.mT + w  # V f(w) V^T: gauge-invariant


def _qr(L, x, R):
    Q, Rm = L.linalg.qr(_tall(L, x))
    return (Q * _W(L)) @ Rm  # Q diag(w) R: a sign flip S (Q S, S R) cancels


def _cholesky(L, x, R):
    """torch.cholesky (deprecated in torch: its warning silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return L.cholesky(_spd(L, x)) + _spd(L, x).cholesky(upper=True)


def _slogdet(L, x, R):
    sign, logabs = L.linalg.slogdet(_square(L, x))
    return logabs * sign


CASES = {
    "cholesky": _cholesky,
    "linalg_cholesky": lambda L, x, R: L.linalg.cholesky(_spd(L, x)) + L.linalg.cholesky(_spd(L, x), upper=True),
    "cholesky_solve": lambda L, x, R: L.cholesky_solve(R.leaf((3, 2)), L.linalg.cholesky(_spd(L, x))),
    "linalg_cross": lambda L, x, R: L.linalg.cross(L.cat([x, x, x], 1)[:, :3], R.leaf((1, 3))),
    "linalg_det": lambda L, x, R: L.linalg.det(_square(L, x)),
    "linalg_slogdet": _slogdet,  # also records linalg_slogdet_sign
    "linalg_inv": lambda L, x, R: L.linalg.inv(_square(L, x)),
    "linalg_solve": lambda L, x, R: L.linalg.solve(_square(L, x), R.leaf((3, 2))),
    "linalg_solve_triangular": lambda L, x, R: L.linalg.solve_triangular(_square(L, x).triu(), R.leaf((3, 2)),
                                                                         upper=True),
    # also records linalg_lstsq_residuals (empty, as torch's default gelsy driver's)
    "linalg_lstsq": lambda L, x, R: L.linalg.lstsq(_tall(L, x), R.leaf((4, 2))).solution,
    "linalg_matrix_exp": lambda L, x, R: L.linalg.matrix_exp(_square(L, x) * 0.3),
    "linalg_pinv": lambda L, x, R: L.linalg.pinv(_tall(L, x)),
    "linalg_qr": _qr,  # linalg_qr_Q and linalg_qr_R
    "linalg_svd": _svd,  # linalg_svd_U, linalg_svd_S and linalg_svd_Vh
    "linalg_eigh": _eigh,  # linalg_eigh_values and linalg_eigh_vectors
    "linalg_lu_factor": lambda L, x, R: L.linalg.lu_factor(_square(L, x)).LU,
    "linalg_lu": lambda L, x, R: (lambda P, Lo, U: P @ Lo + Lo @ U)(*L.linalg.lu(_tall(L, x))),  # linalg_lu_L, _U
}

# torch's LAPACK results are often column-major; a chained case may refuse a non-contiguous input (nll_loss2d's
# backward: "grad_input must be contiguous"), so every case hands on a contiguous tensor
CASES = {name: (lambda L, x, R, case=case: case(L, x, R).contiguous()) for name, case in CASES.items()}

NOT_RECORDED = {}
