"""Linear algebra (ops/decompositions.py): det, slogdet, inv, solve, solve_triangular, cholesky, qr, svd, eigh, pinv,
lstsq, cross, matrix_exp."""
import warnings



def _spd(T, x):
    """A well-conditioned symmetric positive-definite matrix from x (distinct eigenvalues for the grid's x)."""
    return x @ x.mT + 3 * T.eye(x.shape[-2], dtype=T.float64)


def _shift(T, x):
    """x + 3 I: a well-conditioned (non-symmetric) square matrix."""
    return x + 3 * T.eye(x.shape[-1], dtype=T.float64)


def _qr(T, x):
    """Q and R with R's diagonal made positive (gauge-invariant), flattened and concatenated."""
    Q, R = T.linalg.qr(x)
    s = R.diagonal().sign()
    return T.cat([(Q * s).reshape(-1), (R * s.unsqueeze(-1)).reshape(-1)])


def _svd(T, x):
    """U diag(S^2) V^H and the polar factor U V^H (gauge-invariant), stacked by rows."""
    U, S, Vh = T.linalg.svd(x, full_matrices=False)
    return T.cat([(U * S ** 2) @ Vh, U @ Vh], 0)


def _eigh(T, x):
    """V diag(exp(w)) V^T and the eigenvalues themselves (gauge-invariant)."""
    w, V = T.linalg.eigh(x + x.mT)
    return T.cat([(V * w.exp()) @ V.mT, w.unsqueeze(0)], 0)


def _cholesky(T, x):
    """torch.cholesky, without its deprecation warning (tapegrad repeats it, as torch)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return T.cholesky(_spd(T, x))


def _lu(T, x):
    """L and U of x + 3 I (its pivots fixed near x), stacked by rows."""
    _, L, U = T.linalg.lu(_shift(T, x) if x.shape[-2] == x.shape[-1] else x)
    return T.cat([L.reshape(-1), U.reshape(-1)])


def _slogdet(T, x):
    sign, logabs = T.linalg.slogdet(x)
    return sign * logabs


CASES = [  # (args, kwargs) of test_higher_order._case
    (("linalg_det", lambda T, x: T.linalg.det(_shift(T, x)), [(3, 3)]), {"eps": 1e-4}),
    (("linalg_slogdet", lambda T, x: _slogdet(T, _shift(T, x)), [(3, 3)]),
     {"covers": ("linalg_slogdet", "linalg_slogdet_sign"), "eps": 1e-4}),
    (("linalg_slogdet_negative", lambda T, x: _slogdet(T, x - 4 * T.eye(3, dtype=T.float64)), [(3, 3)]),
     {"covers": ("linalg_slogdet", "linalg_slogdet_sign"), "eps": 1e-4}),
    (("linalg_inv", lambda T, x: 4 * T.linalg.inv(_spd(T, x)), [(3, 3)]), {"eps": 1e-4}),
    (("linalg_solve", lambda T, x, b: T.linalg.solve(_shift(T, x), b), [(3, 3), (3, 2)]), {"eps": 1e-4}),
    (("linalg_solve_vector_right", lambda T, x, b, c: 3 * T.linalg.solve(_shift(T, x), b)
      * T.linalg.solve(_shift(T, x), c, left=False).sum(), [(3, 3), (3,), (2, 3)]),
     {"covers": ("linalg_solve",), "eps": 1e-4}),
    (("linalg_solve_triangular", lambda T, x, b: T.linalg.solve_triangular(_shift(T, x.triu()), b, upper=True),
      [(3, 3), (3, 2)]), {"eps": 1e-4}),
    (("linalg_solve_triangular_lower_right", lambda T, x, b: T.linalg.solve_triangular(
        _shift(T, x.tril()), b, upper=False, left=False), [(3, 3), (2, 3)]),
     {"covers": ("linalg_solve_triangular",), "eps": 1e-4}),
    (("linalg_solve_triangular_unit", lambda T, x, b: T.linalg.solve_triangular(
        x, b, upper=True, unitriangular=True), [(3, 3), (3, 2)]),
     {"covers": ("linalg_solve_triangular",), "eps": 1e-4}),
    (("linalg_cholesky", lambda T, x: T.linalg.cholesky(_spd(T, x)), [(3, 3)]), {"eps": 1e-4}),
    (("linalg_cholesky_upper", lambda T, x: T.linalg.cholesky(_spd(T, x), upper=True), [(3, 3)]),
     {"covers": ("linalg_cholesky",), "eps": 1e-4}),
    (("cholesky", lambda T, x: _cholesky(T, x), [(3, 3)]), {"eps": 1e-4}),
    (("cholesky_solve", lambda T, b, x: T.cholesky_solve(b, _shift(T, x.tril())), [(3, 2), (3, 3)]), {"eps": 1e-4}),
    (("cholesky_solve_upper", lambda T, b, x: T.cholesky_solve(b, _shift(T, x.triu()), upper=True),
      [(2, 3, 2), (3, 3)]), {"covers": ("cholesky_solve",), "eps": 1e-4}),
    (("linalg_qr", lambda T, x: _qr(T, x), [(3, 3)]), {"covers": ("linalg_qr_Q", "linalg_qr_R"), "eps": 1e-4}),
    (("linalg_qr_tall", lambda T, x: _qr(T, x), [(4, 3)]), {"covers": ("linalg_qr_Q", "linalg_qr_R"), "eps": 1e-4}),
    (("linalg_qr_wide", lambda T, x: _qr(T, x), [(3, 4)]),
     {"covers": ("linalg_qr_Q", "linalg_qr_R"), "eps": 1e-4}),
    (("linalg_svd", lambda T, x: _svd(T, x), [(3, 3)]),
     {"covers": ("linalg_svd_U", "linalg_svd_S", "linalg_svd_Vh"), "eps": 1e-4}),
    (("linalg_svd_tall", lambda T, x: _svd(T, x), [(4, 3)]),
     {"covers": ("linalg_svd_U", "linalg_svd_S", "linalg_svd_Vh"), "eps": 1e-4}),
    (("linalg_svd_wide", lambda T, x: _svd(T, x), [(3, 4)]),
     {"covers": ("linalg_svd_U", "linalg_svd_S", "linalg_svd_Vh"), "eps": 1e-4}),
    (("linalg_eigh", lambda T, x: _eigh(T, x), [(3, 3)]),
     {"covers": ("linalg_eigh_values", "linalg_eigh_vectors"), "eps": 1e-4, "low": -0.5, "high": 0.5}),
    (("linalg_pinv", lambda T, x: T.linalg.pinv(x), [(4, 3)]), {"eps": 1e-4}),
    (("linalg_pinv_wide", lambda T, x: T.linalg.pinv(x), [(3, 4)]), {"covers": ("linalg_pinv",), "eps": 1e-4}),
    (("linalg_lstsq", lambda T, x, b: T.linalg.lstsq(x, b).solution, [(4, 3), (4, 2)]),
     {"covers": ("linalg_lstsq", "linalg_lstsq_residuals"), "eps": 1e-4}),
    (("linalg_lstsq_residuals", lambda T, x, b: T.linalg.lstsq(x, b, driver="gelsd").residuals, [(4, 3), (4, 2)]),
     {"covers": ("linalg_lstsq_residuals",), "eps": 1e-4}),
    (("linalg_cross", lambda T, a, b: T.linalg.cross(a, b), [(4, 3), (4, 3)]), {"eps": 1e-3}),
    (("linalg_cross_dim", lambda T, a, b: T.linalg.cross(a, b, dim=0), [(3, 2), (3, 1)]),
     {"covers": ("linalg_cross",), "eps": 1e-3}),
    (("linalg_matrix_exp", lambda T, x: T.linalg.matrix_exp(x), [(3, 3)]), {"eps": 1e-4, "low": -0.8, "high": 0.8}),
    (("linalg_lu_factor", lambda T, x: T.linalg.lu_factor(_shift(T, x)).LU, [(3, 3)]), {"eps": 1e-4}),
    (("linalg_lu_factor_wide", lambda T, x: T.linalg.lu_factor(_shift(T, x[..., :3]).repeat(1, 2)[:, :4]).LU,
      [(3, 3)]), {"covers": ("linalg_lu_factor",), "eps": 1e-4}),
    (("linalg_lu", lambda T, x: _lu(T, x), [(3, 3)]), {"covers": ("linalg_lu_L", "linalg_lu_U"), "eps": 1e-4}),
    (("linalg_lu_tall", lambda T, x: _lu(T, T.cat([_shift(T, x), x[:1]], 0)), [(3, 3)]),
     {"covers": ("linalg_lu_L", "linalg_lu_U"), "eps": 1e-4}),
]

EXEMPT = {}  # registry op name -> why no higher-order case can exist, naming the test that covers it instead
