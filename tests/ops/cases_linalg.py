"""Table rows of the factorizations and solvers (tapegrad/ops/decompositions.py, tapegrad/linalg.py).

Inputs are shifted by a multiple of the identity (well conditioned: float32 agrees to the table's tolerances) and
symmetrized where the function reads one triangle. The factors with a sign ambiguity (svd's U and Vh, eigh's
eigenvectors) are compared through functions of them that do not depend on the signs (torch's gradcheck docs):
their squares, or products U diag(S) Vh."""
from optable import A, Case

R = 2e-4  # float32: the factorizations lose a few digits to conditioning


def shifted(L, a, k=3.0):
    return a + k * L.eye(a.shape[-1], dtype=a.dtype)


def spd(L, a):
    return a @ a.mT + L.eye(a.shape[-1], dtype=a.dtype)


def sym(L, a):
    return a + a.mT


CASES = [
    Case("det", [A((3, 3))], fn=lambda L, a: L.linalg.det(shifted(L, a)), rtol=R),
    Case("det", [A((2, 3, 3))], fn=lambda L, a: L.det(shifted(L, a)), id="batched", rtol=R),
    Case("det", [A((3, 3))], fn=lambda L, a: shifted(L, a).det(), id="method", rtol=R),
    Case("slogdet", [A((2, 3, 3))], fn=lambda L, a: tuple(L.linalg.slogdet(shifted(L, a, -0.5))), rtol=R),
    Case("slogdet", [A((3, 3))], fn=lambda L, a: tuple(L.slogdet(shifted(L, a))), id="top", rtol=R),
    Case("logdet", [A((2, 3, 3))], fn=lambda L, a: L.logdet(spd(L, a)), rtol=R),
    Case("inv", [A((2, 3, 3))], fn=lambda L, a: L.linalg.inv(shifted(L, a)), rtol=R),
    Case("inverse", [A((3, 3))], fn=lambda L, a: shifted(L, a).inverse(), rtol=R),
    Case("solve", [A((3, 3)), A((3, 2))], fn=lambda L, a, b: L.linalg.solve(shifted(L, a), b), rtol=R),
    Case("solve", [A((2, 3, 3)), A((2, 3))], fn=lambda L, a, b: L.linalg.solve(shifted(L, a), b), id="vector",
         rtol=R),
    Case("solve", [A((3, 3)), A((3,))], fn=lambda L, a, b: L.linalg.solve(shifted(L, a), b), id="vector1d", rtol=R),
    Case("solve", [A((2, 3, 3)), A((3, 4))], fn=lambda L, a, b: L.linalg.solve(shifted(L, a), b), id="broadcast",
         rtol=R),
    Case("solve", [A((3, 3)), A((2, 3))], fn=lambda L, a, b: L.linalg.solve(shifted(L, a), b, left=False),
         id="right", rtol=R),
    Case("solve_triangular", [A((3, 3)), A((3, 2))],
         fn=lambda L, a, b: L.linalg.solve_triangular(shifted(L, a), b, upper=True), id="upper", rtol=R),
    Case("solve_triangular", [A((2, 3, 3)), A((3, 2))],
         fn=lambda L, a, b: L.linalg.solve_triangular(shifted(L, a), b, upper=False), id="lower", rtol=R),
    Case("solve_triangular", [A((3, 3)), A((2, 3))],
         fn=lambda L, a, b: L.linalg.solve_triangular(shifted(L, a), b, upper=False, left=False), id="right",
         rtol=R),
    Case("solve_triangular", [A((3, 3)), A((3, 2))],
         fn=lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True, unitriangular=True), id="unit", rtol=R),
    Case("cholesky", [A((2, 3, 3))], fn=lambda L, a: L.linalg.cholesky(spd(L, a)), rtol=R),
    Case("cholesky", [A((3, 3))], fn=lambda L, a: L.linalg.cholesky(spd(L, a), upper=True), id="upper", rtol=R),
    Case("cholesky", [A((3, 3))], fn=lambda L, a: spd(L, a).cholesky(), id="top", rtol=R),
    Case("cholesky_ex", [A((3, 3))], fn=lambda L, a: L.linalg.cholesky_ex(spd(L, a)).L, rtol=R),
    Case("cholesky_solve", [A((3, 2)), A((3, 3))],
         fn=lambda L, b, a: L.cholesky_solve(b, L.linalg.cholesky(spd(L, a))), rtol=R),
    # (a full factor, of which the forward reads one triangle: torch's gradient is the whole matrix, which no finite
    # difference sees)
    Case("cholesky_solve", [A((2, 3, 2)), A((3, 3))],
         fn=lambda L, b, a: L.cholesky_solve(b, a + 3 * L.eye(3, dtype=a.dtype), upper=True), id="full", rtol=R,
         fd=False),
    Case("cholesky_inverse", [A((3, 3))], fn=lambda L, a: L.cholesky_inverse(L.linalg.cholesky(spd(L, a))),
         rtol=R, grad_fn=False),
    Case("qr", [A((4, 3))], fn=lambda L, a: tuple(L.linalg.qr(a)), rtol=R),
    Case("qr", [A((2, 3, 3))], fn=lambda L, a: tuple(L.linalg.qr(a, mode="complete")), id="complete", rtol=R),
    Case("qr", [A((3, 5))], fn=lambda L, a: tuple(L.linalg.qr(a)), id="wide", rtol=R),
    Case("qr", [A((4, 3))], fn=lambda L, a: L.linalg.qr(a).R, id="R", rtol=R),
    Case("qr", [A((4, 3))], fn=lambda L, a: tuple(L.qr(a)), id="top", rtol=R),
    Case("svd", [A((4, 3))], fn=lambda L, a: (lambda u, s, vh: (u * u, s, vh * vh))(
        *L.linalg.svd(a, full_matrices=False)), id="tall", rtol=R),
    Case("svd", [A((2, 3, 5))], fn=lambda L, a: (lambda u, s, vh: (u * u, s, vh * vh))(
        *L.linalg.svd(a, full_matrices=False)), id="wide", rtol=R),
    Case("svd", [A((3, 3))], fn=lambda L, a: (lambda u, s, vh: (u * u, s, vh * vh))(*L.linalg.svd(a)),
         id="square", rtol=R),
    Case("svd", [A((4, 3))], fn=lambda L, a: (lambda u, s, vh: (u[:, :3] * s) @ vh)(*L.linalg.svd(a)),
         id="full", rtol=R),
    Case("svd", [A((4, 3))], fn=lambda L, a: (lambda u, s, v: (u * s) @ v.mT)(*L.svd(a)), id="top", rtol=R),
    Case("svdvals", [A((2, 4, 3))], fn=lambda L, a: L.linalg.svdvals(a), rtol=R),
    Case("eigh", [A((2, 3, 3))], fn=lambda L, a: (lambda w, v: (w, v * v))(*L.linalg.eigh(sym(L, a))), rtol=R),
    Case("eigh", [A((3, 3))], fn=lambda L, a: (lambda w, v: (w, v * v))(*L.linalg.eigh(sym(L, a), UPLO="U")),
         id="upper", rtol=R),
    Case("eigvalsh", [A((3, 3))], fn=lambda L, a: L.linalg.eigvalsh(sym(L, a)), rtol=R),
    Case("pinv", [A((4, 3))], fn=lambda L, a: L.linalg.pinv(a), rtol=R),
    Case("pinv", [A((2, 3, 5))], fn=lambda L, a: L.linalg.pinv(a), id="wide", rtol=R),
    Case("pinv", [A((3, 3))], fn=lambda L, a: L.linalg.pinv(sym(L, a), hermitian=True), id="hermitian", rtol=R),
    Case("pinverse", [A((4, 3))], fn=lambda L, a: L.pinverse(a), rtol=R),
    Case("lstsq", [A((5, 3)), A((5, 2))], fn=lambda L, a, b: L.linalg.lstsq(a, b).solution, rtol=R),
    Case("lstsq", [A((2, 5, 3)), A((2, 5, 2))], fn=lambda L, a, b: tuple(L.linalg.lstsq(a, b))[:2], id="batched",
         rtol=R),
    Case("matrix_norm", [A((3, 4))], {"ord": "nuc"}, fn=lambda L, a: L.linalg.matrix_norm(a, "nuc"), rtol=R),
    Case("matrix_norm", [A((2, 3, 4))], fn=lambda L, a: L.linalg.matrix_norm(a, 2), id="2", rtol=R),
    Case("matrix_norm", [A((3, 4, 2))], fn=lambda L, a: L.linalg.matrix_norm(a, -2, dim=(0, 2), keepdim=True),
         id="-2", rtol=R,
         grad_fn=False),  # (torch's keepdim ends in a permute)
    Case("norm", [A((3, 4))], fn=lambda L, a: L.linalg.norm(a, "nuc"), id="nuc", rtol=R),
    Case("matrix_power", [A((3, 3), "small")], fn=lambda L, a: L.linalg.matrix_power(a, 5), rtol=R),
    Case("matrix_power", [A((2, 3, 3), "small")], fn=lambda L, a: L.matrix_power(a, 3), id="3", rtol=R),
    Case("matrix_power", [A((3, 3))], fn=lambda L, a: shifted(L, a).matrix_power(-2), id="neg", rtol=R),
    Case("multi_dot", [A((3,)), A((3, 4)), A((4, 2)), A((2,))], fn=lambda L, *x: L.linalg.multi_dot(x), rtol=R,
         grad_fn=False),
    Case("multi_dot", [A((2, 3)), A((3, 4)), A((4, 2))], fn=lambda L, *x: L.linalg.multi_dot(x), id="2d", rtol=R,
         grad_fn=False),  # (torch's ends in a view)
    Case("cross", [A((4, 3)), A((4, 3))], fn=lambda L, a, b: L.linalg.cross(a, b)),
    Case("cross", [A((3, 2)), A((3, 1))], fn=lambda L, a, b: L.cross(a, b, dim=0), id="broadcast"),
    Case("cross", [A((3, 2)), A((3, 2))], fn=lambda L, a, b: a.cross(b, 0), id="method"),
    Case("vecdot", [A((4, 3)), A((3,))], fn=lambda L, a, b: L.linalg.vecdot(a, b)),
    Case("diagonal", [A((2, 3, 4))], fn=lambda L, a: L.linalg.diagonal(a, offset=1)),
    Case("vander", [A((2, 3))], fn=lambda L, a: L.linalg.vander(a, N=4), grad_fn=False),
    Case("cond", [A((2, 4, 3))], fn=lambda L, a: L.linalg.cond(a), rtol=R),
    Case("cond", [A((3, 3))], fn=lambda L, a: L.linalg.cond(a, -2), id="-2", rtol=R),
    # (torch 2.13's backward of cond with p other than 2 fails: the values only)
    Case("cond", [A((3, 3), grad=False)], fn=lambda L, a: L.linalg.cond(shifted(L, a), "fro"), id="fro", rtol=R),
    Case("tensorinv", [A((2, 3, 6))], fn=lambda L, a: L.linalg.tensorinv(a + L.eye(6, dtype=a.dtype).reshape(2, 3, 6),
                                                                         ind=2), rtol=R, grad_fn=False),
    Case("tensorsolve", [A((2, 3, 6)), A((2, 3))],
         fn=lambda L, a, b: L.linalg.tensorsolve(a + L.eye(6, dtype=a.dtype).reshape(2, 3, 6), b), rtol=R,
         grad_fn=False),
    Case("tensorsolve", [A((6, 2, 3)), A((2, 3))],
         fn=lambda L, a, b: L.linalg.tensorsolve(a + L.eye(6, dtype=a.dtype).reshape(6, 2, 3), b, dims=(0,)),
         id="dims", rtol=R, grad_fn=False),
    Case("matrix_exp", [A((3, 3))], fn=lambda L, a: L.linalg.matrix_exp(a), rtol=R),
    Case("matrix_exp", [A((2, 3, 3), "big")], fn=lambda L, a: L.matrix_exp(a * 0.2), id="scaled", rtol=1e-3),
    Case("lu_factor", [A((2, 3, 3))], fn=lambda L, a: L.linalg.lu_factor(shifted(L, a)).LU, rtol=R),
    Case("lu_factor", [A((3, 4))], fn=lambda L, a: L.linalg.lu_factor_ex(a).LU, id="wide", rtol=R),
    Case("lu", [A((4, 3))], fn=lambda L, a: tuple(L.linalg.lu(a))[1:], id="tall", rtol=R),
    Case("lu", [A((3, 3))], fn=lambda L, a: tuple(L.linalg.lu(shifted(L, a)))[1:], rtol=R),
    # (composed of triangular solves and gathers: torch's LuUnpackBackward0, LinalgLuSolveBackward0 and
    # LinalgHouseholderProductBackward0 are other grad_fns over the same gradients)
    Case("lu_unpack", [A((3, 3))], fn=lambda L, a: tuple(L.lu_unpack(*L.linalg.lu_factor(shifted(L, a))))[1:],
         rtol=R, grad_fn=False),
    Case("lu_solve", [A((2, 3, 3)), A((3, 2))],
         fn=lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(shifted(L, a)), b), rtol=R, grad_fn=False),
    Case("lu_solve", [A((3, 3)), A((2, 3))],
         fn=lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(shifted(L, a)), b, left=False, adjoint=True),
         id="right_adjoint", rtol=R, grad_fn=False),
    Case("householder_product", [A((4, 3)), A((2,), "pos")],
         fn=lambda L, a, t: L.linalg.householder_product(a, t), rtol=R, grad_fn=False),
]
