"""torch.svd_lowrank and torch.pca_lowrank: torch/_lowrank.py's randomized SVD (Halko et al., 2009, algorithms 4.4
and 5.1) on tapegrad's randn, matmul, linalg.qr and linalg.svd: the same draws from the default generator (torch's
randn stream), so the same results, and differentiable through the factorizations (as torch's). Dense inputs."""
from . import _dtype
from .creation import randn
from .linalg import qr, svd
from .ops.linalg import matmul


def _floating_dtype(A):
    """torch._linalg_utils.get_floating_dtype: A's dtype if floating, else float32."""
    return A.dtype if _dtype.is_float(A._data.dtype) else _dtype.float32


def get_approximate_basis(A, q, niter=2, M=None):
    """Q with q orthonormal columns such that Q Q^H (A - M) approximates A - M (M: None or A's mean)."""
    niter = 2 if niter is None else niter
    R = randn(A.shape[-1], q, dtype=_floating_dtype(A))
    X = matmul(A, R)
    if M is not None:
        X = X - matmul(M, R)
    Q = qr(X).Q
    for _ in range(niter):
        X = matmul(A.mH, Q)
        if M is not None:
            X = X - matmul(M.mH, Q)
        Q = qr(X).Q
        X = matmul(A, Q)
        if M is not None:
            X = X - matmul(M, Q)
        Q = qr(X).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ~ U diag(S) V^H, of rank q (default 6), by niter subspace iterations."""
    return _svd_lowrank(A, q=q, niter=niter, M=M)


def _svd_lowrank(A, q=6, niter=2, M=None):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    if m < n:
        A = A.mH
        if M is not None:
            M = M.mH
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = matmul(Q.mH, A)
    if M is not None:
        B = B - matmul(Q.mH, M)
    U, S, Vh = svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of the (centered, by default) A's low-rank SVD: V's columns are the principal directions;
    q defaults to min(6, m, n)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    C = A.mean(dim=(-2,), keepdim=True)
    return _svd_lowrank(A - C, q, niter=niter, M=None)


__all__ = ["svd_lowrank", "pca_lowrank"]
