"""Factorizations and solvers: torch.linalg's (det, slogdet, inv, solve, solve_triangular, cholesky, qr, svd,
eigh, pinv, lstsq, matrix_exp, cross) and torch's older top-level names, on NumPy's LAPACK, batched over the
leading dimensions, float32 staying float32.

Each rule is torch's (FunctionsManual.cpp), written once over a small namespace of matrix operations: on NumPy
arrays (`_ARRAYS`, a plain backward) and on Tensors (`_TENSORS`, whose operations are recorded, so that
create_graph differentiates the rule itself). A factorization with several differentiable outputs (qr, svd,
eigh) records one row per output; the rules are linear in the output adjoints, so the rows' gradients add up to
torch's single rule. A rule needing another factor recomputes the factorization from the row's input, with the
same options: LAPACK is deterministic, so the factors (their signs included) are the forward's."""
import collections
import ctypes
import warnings

import numpy as np

from .. import _dtype, _openblas, registry, tape as tape_mod
from ..registry import Ctx
from ..tensor import Tensor, _new
from ._common import OPS, _array_rule_dtype, _dim, _record, _sum_to_np, _tensor
from .elementwise import where
from .linalg import matmul
from .reduce import sum_to_shape
from .shape import cat, stack
from .._warnings import user_stacklevel

__all__ = ["cholesky", "cholesky_inverse", "cholesky_solve", "cross", "det", "inverse", "logdet", "matrix_exp",
           "matrix_power", "pinverse", "qr", "slogdet", "svd"]
INPLACE = ()


class _LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a factorization or inversion that failed on the input's values."""


LinAlgError = _LinAlgError


def _return_type(name, fields):
    cls = collections.namedtuple(name, fields)
    cls.__repr__ = lambda self: f"torch.return_types.{name}(\n" + ",\n".join(
        f"{f}={v!r}" for f, v in zip(fields, self)) + ")"
    return cls


return_types = Ctx(
    slogdet=_return_type("slogdet", ["sign", "logabsdet"]),
    linalg_slogdet=_return_type("linalg_slogdet", ["sign", "logabsdet"]),
    linalg_inv_ex=_return_type("linalg_inv_ex", ["inverse", "info"]),
    linalg_cholesky_ex=_return_type("linalg_cholesky_ex", ["L", "info"]),
    linalg_qr=_return_type("linalg_qr", ["Q", "R"]), qr=_return_type("qr", ["Q", "R"]),
    linalg_svd=_return_type("linalg_svd", ["U", "S", "Vh"]), svd=_return_type("svd", ["U", "S", "V"]),
    linalg_eigh=_return_type("linalg_eigh", ["eigenvalues", "eigenvectors"]),
    linalg_lstsq=_return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"]))


# -- checks, torch's messages ----------------------------------------------------------------------------------
_TYPE_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int", "int16": "Short",
               "int8": "Char", "uint8": "Byte", "bool": "Bool", "float16": "Half", "bfloat16": "BFloat16"}


def _type_name(a):
    return _TYPE_NAMES.get(a.dtype.name, a.dtype.name)


def _matrix(name, A, square=True, what="A"):
    """A as a Tensor, checked as torch checks a linalg input: at least 2-d, floating, (batches of) square."""
    A = _tensor(A)
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {what} must have at least 2 dimensions.")
    if not _dtype.is_float(A._data.dtype):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {_type_name(A._data)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: {what} must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    return A


def _same_dtype(name, A, B):
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"{name}: Expected A and B to have the same dtype, but found A of type "
                           f"{_type_name(A._data)} and B of type {_type_name(B._data)} instead")


def _batch_prefix(a, i):
    return f"(Batch element {i}): " if a.ndim > 2 else ""


def _first_zero_pivot(a):
    """For each matrix, the 1-based column of LU's (partial pivoting) first zero pivot, 0 where there is none:
    LAPACK getrf's info, which torch's messages name."""
    a = np.array(a, dtype=np.float64).reshape((int(np.prod(a.shape[:-2])),) + a.shape[-2:])
    n = a.shape[-1]
    info = np.zeros(len(a), np.int64)
    for b, m in enumerate(a):
        for k in range(n):
            p = k + int(np.argmax(np.abs(m[k:, k])))
            if m[p, k] == 0:
                if not info[b]:
                    info[b] = k + 1
                continue
            m[[k, p]] = m[[p, k]]
            with np.errstate(all="ignore"):  # (an inf or NaN in A: NaN in the elimination, as LAPACK's)
                m[k + 1:, k:] -= np.outer(m[k + 1:, k] / m[k, k], m[k, k:])
    return info


def _inv_array(name, a):
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        info = _first_zero_pivot(a)
        i = int(np.flatnonzero(info)[0]) if info.any() else 0
        raise _LinAlgError(f"{name}: {_batch_prefix(a, i)}The diagonal element {max(int(info[i]), 1)} is zero, the "
                           f"inversion could not be completed because the input matrix is singular.") from None


def _cholesky_info(a):
    """For each matrix, the order of its first leading minor that is not positive-definite (0: none)."""
    flat = a.reshape((int(np.prod(a.shape[:-2])),) + a.shape[-2:])
    info = np.zeros(len(flat), np.int32)
    for b, m in enumerate(flat):
        try:
            np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            info[b] = next(k for k in range(1, len(m) + 1) if _not_pd(m[:k, :k]))
    return info.reshape(a.shape[:-2])


def _not_pd(m):
    try:
        np.linalg.cholesky(m)
        return False
    except np.linalg.LinAlgError:
        return True


# -- LAPACK routines NumPy does not expose ----------------------------------------------------------------------
COL_MAJOR = 102  # LAPACKE's column-major layout: each matrix passed as its transpose's C-ordered copy
_LAPACKE = {}


def _lapacke(name, dtype):
    """LAPACKE_sNAME (float32) or LAPACKE_dNAME (float64) of the ILP64 OpenBLAS bundled with NumPy's wheels (the
    library kernels/blas.py calls gemm in; found by _openblas.py, without Numba) as a ctypes function returning its
    int64 info, or None where NumPy bundles none. Callers pass ctypes values (64-bit integers)."""
    key = ("d" if np.dtype(dtype) == np.float64 else "s") + name
    if key not in _LAPACKE:
        found = _openblas.functions((f"scipy_LAPACKE_{key}64_",), (f"LAPACKE_{key}64_",))
        if found is not None:
            found[0].restype = ctypes.c_int64
        _LAPACKE[key] = None if found is None else found[0]
    return _LAPACKE[key]


# -- the namespaces the rules are written over -----------------------------------------------------------------
def _solve_tri_arrays(A, B, upper, left=True, unit=False):
    """A triangular solve by NumPy's general solver on A's triangle (NumPy has no trsm)."""
    T = np.triu(A) if upper else np.tril(A)
    if unit:
        T = T.copy()
        np.einsum("...ii->...i", T)[...] = 1
    if left:
        return np.linalg.solve(T, B)
    return np.ascontiguousarray(np.swapaxes(np.linalg.solve(np.swapaxes(T, -1, -2), np.swapaxes(B, -1, -2)), -1, -2))


def _solve_arrays(A, B, left=True):
    if left:
        return np.linalg.solve(A, B)
    return np.ascontiguousarray(np.swapaxes(np.linalg.solve(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2)), -1, -2))


class _ARRAYS:
    """The rules' operations on NumPy arrays."""
    mm = staticmethod(np.matmul)
    tril, triu = staticmethod(np.tril), staticmethod(np.triu)
    solve, solve_tri, sum_to = staticmethod(_solve_arrays), staticmethod(_solve_tri_arrays), staticmethod(_sum_to_np)

    @staticmethod
    def mT(x):
        return np.swapaxes(x, -1, -2)

    @staticmethod
    def diag(x):
        return np.diagonal(x, 0, -2, -1)

    @staticmethod
    def embed(v):
        return v[..., None] * np.eye(v.shape[-1], dtype=v.dtype)

    @staticmethod
    def eye(n, like):
        return np.eye(n, dtype=like.dtype)

    @staticmethod
    def usq(x, d):
        return np.expand_dims(x, d)

    @staticmethod
    def eigh(A):
        return np.linalg.eigh(A)

    @staticmethod
    def svd(A, full):
        return np.linalg.svd(A, full_matrices=full)

    @staticmethod
    def qr(A, mode):
        return np.linalg.qr(A, mode)

    @staticmethod
    def inv(A):
        return np.linalg.inv(A)

    @staticmethod
    def pinv(A):
        return _pinv_array(A, None, None, False)

    @staticmethod
    def cross(a, b):
        return np.cross(a, b)

    @staticmethod
    def expm(A):
        return _expm(A)


class _TENSORS:
    """The same operations on Tensors, each recorded (create_graph)."""
    mm = staticmethod(matmul)
    sum_to = staticmethod(sum_to_shape)

    @staticmethod
    def solve(A, B, left=True):
        return _solve(A, B, left)

    @staticmethod
    def solve_tri(A, B, upper, left=True, unit=False):
        return solve_triangular(A, B, upper=upper, left=left, unitriangular=unit)

    @staticmethod
    def tril(x, k=0):
        return x.tril(k)

    @staticmethod
    def triu(x, k=0):
        return x.triu(k)

    @staticmethod
    def mT(x):
        return x.mT

    @staticmethod
    def diag(x):
        return x.diagonal(0, -2, -1)

    @staticmethod
    def embed(v):
        return v.unsqueeze(-1) * _new(np.eye(v.shape[-1], dtype=v._data.dtype))

    @staticmethod
    def eye(n, like):
        return _new(np.eye(n, dtype=like._data.dtype))

    @staticmethod
    def usq(x, d):
        return x.unsqueeze(d)

    @staticmethod
    def eigh(A):
        return eigh(A)

    @staticmethod
    def svd(A, full):
        return svd_linalg(A, full)

    @staticmethod
    def qr(A, mode):
        return qr_linalg(A, mode)

    @staticmethod
    def inv(A):
        return inv(A)

    @staticmethod
    def pinv(A):
        return pinv(A)

    @staticmethod
    def cross(a, b):
        return linalg_cross(a, b)

    @staticmethod
    def expm(A):
        return matrix_exp(A)


def _rule(rule):
    """(vjp, array_vjp) of a rule(L, ctx, g, inputs, out) written over a namespace L."""
    def vjp(ctx, g, inputs, out):
        return rule(_TENSORS, ctx, g, inputs, out)

    def array_vjp(ctx, g, inputs, out, wanted):
        if not _array_rule_dtype(g, *inputs):
            return None
        return rule(_ARRAYS, ctx, g, inputs, out)
    return vjp, array_vjp


# -- det, slogdet, inv -----------------------------------------------------------------------------------------
def det(A):
    A = _matrix("linalg.det", A)
    return _record(OPS["linalg_det"], np.asanyarray(np.linalg.det(A._data)), (A,))


def _det_rule(L, ctx, g, inputs, out):
    """g det(A) A^{-T}, the cofactor matrix times g. Where some det(A) is 0, as torch: a plain backward gives 0
    there (torch perturbs LU's zero pivots and multiplies by det(A) = 0); create_graph gives torch's SVD form of
    the cofactors, det(U) det(V^T) U diag(prod_{j != i} S_j) V^T."""
    A, = inputs
    values = out if L is _ARRAYS else out._data
    if not np.any(values == 0):
        return (L.usq(L.usq(g * out, -1), -1) * L.mT(L.inv(A)),)
    if L is _ARRAYS:
        grad = (g * out)[..., None, None] * np.swapaxes(_inv_nan(A), -1, -2)
        return (np.where((out == 0)[..., None, None], 0, grad).astype(A.dtype),)
    U, S, Vh = L.svd(A, False)
    n = S.shape[-1]
    others = [_product([S[..., j] for j in range(n) if j != i], g) for i in range(n)]
    D = stack(others, -1)
    alpha = g * det(U) * det(Vh)
    return (L.mm(U * L.usq(D * L.usq(alpha, -1), -2), Vh),)


def _product(factors, like):
    out = like * 0 + 1
    for f in factors:
        out = out * f
    return out


def _slogdet_arrays(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.asanyarray(sign), np.asanyarray(logabs)


def slogdet_linalg(A):
    A = _matrix("linalg.slogdet", A)
    sign, logabs = _slogdet_arrays(A._data)
    return return_types.linalg_slogdet(_record(OPS["linalg_slogdet_sign"], sign, (A,)),
                                       _record(OPS["linalg_slogdet"], logabs, (A,)))


def slogdet(input):
    return return_types.slogdet(*slogdet_linalg(input))


def _slogdet_rule(L, ctx, g, inputs, out):
    """g A^{-T}."""
    A, = inputs
    return (L.usq(L.usq(g, -1), -1) * L.mT(L.inv(A)),)


def _no_gradient(ctx, g, inputs, out):
    return (None,) * len(inputs)


def _no_gradient_arrays(ctx, g, inputs, out, wanted):
    return (None,) * len(inputs)


def logdet(input):
    """log det(A): NaN where det(A) < 0, as torch (a where on slogdet's outputs)."""
    sign, logabs = slogdet_linalg(_matrix("logdet", input))
    return where(sign < 0, _new(np.asanyarray(np.nan, logabs._data.dtype)), logabs)


def inv(A, *, out=None):
    _no_out(out)
    A = _matrix("linalg.inv", A)
    return _record(OPS["linalg_inv"], _inv_array("linalg.inv", A._data), (A,))


def inverse(input, *, out=None):
    return inv(input, out=out)


def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info): info is LAPACK getrf's (the first zero pivot, 1-based; 0: invertible)."""
    _no_out(out)
    A = _matrix("linalg.inv_ex", A)
    tape_mod.untraceable("linalg.inv_ex's info is computed from the input's values")
    info = _first_zero_pivot(A._data).astype(np.int32).reshape(A.shape[:-2])
    if check_errors and info.any():
        inv(A)
    with np.errstate(all="ignore"):
        value = np.linalg.inv(A._data) if not info.any() else _inv_nan(A._data)
    return return_types.linalg_inv_ex(_record(OPS["linalg_inv"], value, (A,)), _new(info))


def _inv_nan(a):
    """The inverses of a batch, NaN for the singular matrices (LAPACK leaves those undefined)."""
    out = np.full(a.shape, np.nan, a.dtype)
    flat, res = a.reshape((-1,) + a.shape[-2:]), out.reshape((-1,) + a.shape[-2:])  # (not empty: one is singular)
    for b, m in enumerate(flat):
        try:
            res[b] = np.linalg.inv(m)
        except np.linalg.LinAlgError:
            pass
    return out


def _inv_rule(L, ctx, g, inputs, out):
    """-A^{-T} g A^{-T}."""
    t = L.mT(out)
    return (-L.mm(t, L.mm(g, t)),)


def _no_out(out):
    if out is not None:
        raise NotImplementedError("tapegrad: out= of the linalg functions is not implemented")


# -- solve, solve_triangular -----------------------------------------------------------------------------------
def solve(A, B, *, left=True, out=None):
    _no_out(out)
    A, B = _tensor(A), _tensor(B)
    _same_dtype("linalg.solve", A, B)  # (torch checks the dtypes first)
    return _solve(_matrix("linalg.solve", A), B, left)


def _solve(A, B, left):
    n = A.shape[-1]
    vector = B.ndim == 1 or B.ndim == A.ndim - 1 and B.shape == A.shape[:-1]  # (torch's vector rhs: not for XA = B)
    if B.ndim == 0 or not left and vector or (B.shape[-1] if vector or not left else B.shape[-2]) != n:
        rows, cols = (B.shape[-1], 1) if vector or B.ndim < 2 else B.shape[-2:]
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {rows}x{cols})")
    b = B._data[..., None] if vector else B._data
    try:
        x = _solve_arrays(A._data, b, left)
    except np.linalg.LinAlgError:
        info = _first_zero_pivot(A._data)
        i = int(np.flatnonzero(info)[0]) if info.any() else 0
        raise _LinAlgError(f"torch.linalg.solve: {_batch_prefix(A._data, i)}The solver failed because the input "
                           f"matrix is singular.") from None
    return _record(OPS["linalg_solve"], np.ascontiguousarray(x[..., 0]) if vector else x, (A, B),
                   aux=Ctx(left=left, vector=vector))


def _solve_rule(L, ctx, g, inputs, out):
    """gB = A^{-T} g (left; g A^{-T} right), gA = -gB X^T (left; -X^T gB right), summed to the inputs' shapes."""
    A, B = inputs
    if ctx.vector:
        g, out = L.usq(g, -1), L.usq(out, -1)
    gB = L.solve(L.mT(A), g, ctx.left)
    gA = -L.mm(gB, L.mT(out)) if ctx.left else -L.mm(L.mT(out), gB)
    if ctx.vector:
        gB = gB[..., 0]
    return L.sum_to(gA, A.shape), L.sum_to(gB, B.shape)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    _no_out(out)
    name = "linalg.solve_triangular"
    A, B = _matrix(name, A), _tensor(B)
    if B.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    _same_dtype(name, A, B)
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    with np.errstate(all="ignore"):
        try:
            x = _solve_tri_arrays(A._data, B._data, upper, left, unitriangular)
        except np.linalg.LinAlgError:  # a zero on the diagonal: LAPACK's trsm divides by it
            x = _solve_tri_substitution(A._data, B._data, upper, left, unitriangular)
    return _record(OPS["linalg_solve_triangular"], x, (A, B),
                   aux=Ctx(upper=upper, left=left, unit=unitriangular))


def _solve_tri_substitution(A, B, upper, left, unit):
    """Forward/back substitution (inf and NaN where the diagonal has zeros, as trsm gives)."""
    if not left:
        x = _solve_tri_substitution(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2), not upper, True, unit)
        return np.ascontiguousarray(np.swapaxes(x, -1, -2))
    shape = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    A = np.broadcast_to(A, shape + A.shape[-2:])
    X = np.array(np.broadcast_to(B, shape + B.shape[-2:]), subok=True)
    n = A.shape[-1]
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        rest = slice(i + 1, n) if upper else slice(0, i)
        X[..., i, :] -= np.einsum("...k,...kj->...j", A[..., i, rest], X[..., rest, :])
        if not unit:
            X[..., i, :] /= A[..., i, i, None]
    return X


def _solve_triangular_rule(L, ctx, g, inputs, out):
    """torch's linalg_solve_triangular backward: gB = A^{-T} g (or g A^{-T}), gA = -gB X^T (or -X^T gB) on A's
    triangle (its strict one for a unit diagonal)."""
    A, B = inputs
    gB = L.solve_tri(L.mT(A), g, not ctx.upper, ctx.left, ctx.unit)
    gA = -L.mm(gB, L.mT(out)) if ctx.left else -L.mm(L.mT(out), gB)
    k = int(ctx.unit)
    gA = L.triu(gA, k) if ctx.upper else L.tril(gA, -k)
    return L.sum_to(gA, A.shape), L.sum_to(gB, B.shape)


# -- cholesky --------------------------------------------------------------------------------------------------
def cholesky_linalg(A, *, upper=False, out=None, name="linalg.cholesky", op="linalg_cholesky"):
    _no_out(out)
    A = _matrix(name, A)
    try:
        low = np.linalg.cholesky(A._data)
    except np.linalg.LinAlgError:
        info = _cholesky_info(A._data).reshape(-1)
        i = int(np.flatnonzero(info)[0])
        raise _LinAlgError(f"{name}: {_batch_prefix(A._data, i)}The factorization could not be completed because the "
                           f"input is not positive-definite (the leading minor of order {info[i]} is not "
                           f"positive-definite).") from None
    return _record(OPS[op], np.swapaxes(low, -1, -2).copy() if upper else low, (A,), aux=Ctx(upper=upper))


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): info is the order of the first leading minor that is not positive-definite (0: none); L is NaN
    for those matrices (LAPACK leaves a partial factor there)."""
    _no_out(out)
    A = _matrix("linalg.cholesky_ex", A)
    tape_mod.untraceable("linalg.cholesky_ex's info is computed from the input's values")
    info = _cholesky_info(A._data)
    if check_errors and info.any():
        cholesky_linalg(A, upper=upper)
    flat = A._data.reshape((int(np.prod(A.shape[:-2])),) + A.shape[-2:])
    low = np.full(flat.shape, np.nan, flat.dtype)
    for b, m in enumerate(flat):
        if not info.reshape(-1)[b]:
            low[b] = np.linalg.cholesky(m)
    low = low.reshape(A.shape)
    value = np.swapaxes(low, -1, -2).copy() if upper else low
    return return_types.linalg_cholesky_ex(_record(OPS["linalg_cholesky"], value, (A,), aux=Ctx(upper=upper)),
                                           _new(info))


def cholesky(input, upper=False, *, out=None):
    """torch.cholesky (deprecated in torch, with its warning, for linalg.cholesky: the same factor)."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
                  "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
                  "This transform will produce equivalent results for all valid (symmetric positive definite) inputs.",
                  UserWarning, stacklevel=user_stacklevel())
    return cholesky_linalg(input, upper=upper, out=out, name="cholesky", op="cholesky")


def _cholesky_rule(L, ctx, g, inputs, out):
    """torch's cholesky_backward: with phi(X) = tril(X), its diagonal halved,
    gA = sym(L^{-T} phi(L^T gL) L^{-1})."""
    low, gL = (L.mT(out), L.mT(g)) if ctx.upper else (out, g)
    n = low.shape[-1]
    Linv = L.solve_tri(low, L.eye(n, low), False)
    P = L.tril(L.mm(L.mT(low), gL))
    P = P - 0.5 * L.embed(L.diag(P))
    gA = L.mm(L.mm(L.mT(Linv), P), Linv)
    return (0.5 * (gA + L.mT(gA)),)


def cholesky_solve(input, input2, upper=False, *, out=None):
    """A^{-1} B for A = L L^T (or U^T U), by two triangular solves: one row, torch's CholeskySolveBackward0 (its
    factor's gradient is the whole matrix -(G X^T + X G^T) L, not a triangle: a leaf factor's upper entries get it)."""
    _no_out(out)
    B, low = _tensor(input), _matrix("cholesky_solve", input2)
    if B._data.dtype != low._data.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_type_name(B._data)} and A "
                           f"of type {_type_name(low._data)} instead.")
    if B.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions instead")
    if B.shape[-2] != low.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {low.shape[-1]} by "
                           f"{low.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    ctx = Ctx(upper=bool(upper))
    with np.errstate(all="ignore"):
        x = _cholesky_solve_arrays(ctx, B._data, low._data)
    return _record(OPS["cholesky_solve"], x, (B, low), aux=ctx)


def _cholesky_solve_arrays(ctx, b, factor):
    if ctx.upper:
        return _solve_tri_arrays(factor, _solve_tri_arrays(np.swapaxes(factor, -1, -2), b, False), True)
    return _solve_tri_arrays(np.swapaxes(factor, -1, -2), _solve_tri_arrays(factor, b, False), True)


def _cholesky_solve_rule(L, ctx, g, inputs, out):
    """torch's cholesky_solve_backward: gB = A^{-1} g; gL = -(S L) (lower) or -(L S) (upper), S = gB X^T + X gB^T."""
    B, factor = inputs
    # (gB by this op itself, so that under create_graph its factor's gradient is whole too, as torch's)
    gB = _cholesky_solve_arrays(ctx, g, factor) if L is _ARRAYS else cholesky_solve(g, factor, ctx.upper)
    common = L.mm(gB, L.mT(out))
    common = common + L.mT(common)
    gL = -L.mm(factor, common) if ctx.upper else -L.mm(common, factor)
    return L.sum_to(gB, B.shape), L.sum_to(gL, factor.shape)


def cholesky_inverse(input, upper=False, *, out=None):
    """(L L^T)^{-1} (or (U^T U)^{-1}) from the factor, by triangular solves."""
    _no_out(out)
    low = _matrix("cholesky_inverse", input)
    eye = _new(np.broadcast_to(np.eye(low.shape[-1], dtype=low._data.dtype), low.shape).copy())
    return cholesky_solve(eye, low, upper)


# -- qr ----------------------------------------------------------------------------------------------------------
def qr_linalg(A, mode="reduced", *, out=None):
    _no_out(out)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    A = _matrix("linalg.qr", A, square=False)
    a = A._data
    if a.size == 0:
        m, n = a.shape[-2:]
        k = m if mode == "complete" else min(m, n)
        q = np.broadcast_to(np.eye(m, k, dtype=a.dtype), a.shape[:-2] + (m, k)).copy()
        r = np.zeros(a.shape[:-2] + (k, n), a.dtype)
    else:
        q, r = np.linalg.qr(a, "reduced" if mode == "r" else mode)
    ctx = Ctx(mode=mode)
    Q = _new(np.zeros(0, a.dtype)) if mode == "r" else _record(OPS["linalg_qr_Q"], q, (A,), aux=ctx)
    return return_types.linalg_qr(Q, _record(OPS["linalg_qr_R"], r, (A,), aux=ctx))


def qr(input, some=True, *, out=None):
    return return_types.qr(*qr_linalg(input, "reduced" if some else "complete", out=out))


def _qr_check(ctx, A):
    if ctx.mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                           "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if ctx.mode == "complete" and A.shape[-2] > A.shape[-1]:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")


def _qr_square(L, gQ, gR, Q, R):
    """torch's linalg_qr_backward for m >= n: gA = [gQ + Q syminvadj(triu(gR R^T - Q^T gQ))] R^{-T}."""
    M = 0
    if gR is not None:
        M = L.mm(gR, L.mT(R))
    if gQ is not None:
        M = M - L.mm(L.mT(Q), gQ)
    M = L.triu(M)
    M = M + L.mT(M) - L.embed(L.diag(M))   # X + X^T, its diagonal halved: X's
    gA = L.mm(Q, M)
    if gQ is not None:
        gA = gA + gQ
    return L.solve_tri(L.mT(R), gA, False, False)


def _qr_grad(L, gQ, gR, A, Q, R):
    m, n = A.shape[-2:]
    if m >= n:
        return _qr_square(L, gQ, gR, Q, R)
    # A = [X | Y], R = [U | V]: X = QU is square, V = Q^T Y
    Y, U = A[..., m:], R[..., :m]
    gU = gV = None
    if gR is not None:
        gU, gV = gR[..., :m], gR[..., m:]
        gQ = L.mm(Y, L.mT(gV)) if gQ is None else gQ + L.mm(Y, L.mT(gV))
    gX = _qr_square(L, gQ, gU, Q, U)
    gY = L.mm(Q, gV) if gV is not None else 0 * Y
    return _cat_last(L, gX, gY)


def _cat_last(L, a, b):
    return np.concatenate([a, b], -1) if L is _ARRAYS else cat([a, b], -1)


def _qr_Q_rule(L, ctx, g, inputs, out):
    A, = inputs
    _qr_check(ctx, A)
    Q, R = L.qr(A, ctx.mode)
    return (_qr_grad(L, g, None, A, Q, R),)


def _qr_R_rule(L, ctx, g, inputs, out):
    A, = inputs
    _qr_check(ctx, A)
    Q, R = L.qr(A, ctx.mode)
    return (_qr_grad(L, None, g, A, Q, R),)


# -- svd, eigh -------------------------------------------------------------------------------------------------
def _svd_arrays(a, full):
    m, n = a.shape[-2:]
    if a.size == 0:
        k = min(m, n)
        u = np.broadcast_to(np.eye(m, m if full else k, dtype=a.dtype), a.shape[:-2] + (m, m if full else k)).copy()
        vh = np.broadcast_to(np.eye(n if full else k, n, dtype=a.dtype), a.shape[:-2] + (n if full else k, n)).copy()
        return u, np.zeros(a.shape[:-2] + (k,), a.dtype), vh
    return np.linalg.svd(a, full_matrices=full)


def svd_linalg(A, full_matrices=True, *, driver=None, out=None):
    _no_out(out)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    A = _matrix("linalg.svd", A, square=False)
    u, s, vh = _svd_arrays(A._data, full_matrices)
    ctx = Ctx(full=full_matrices)
    return return_types.linalg_svd(_record(OPS["linalg_svd_U"], u, (A,), aux=ctx),
                                   _record(OPS["linalg_svd_S"], s, (A,), aux=ctx),
                                   _record(OPS["linalg_svd_Vh"], vh, (A,), aux=ctx))


def svdvals(A, *, driver=None, out=None):
    _no_out(out)
    A = _matrix("linalg.svdvals", A, square=False)
    s = (np.linalg.svd(A._data, compute_uv=False) if A._data.size
         else np.zeros(A.shape[:-2] + (min(A.shape[-2:]),), A._data.dtype))
    return _record(OPS["linalg_svd_S"], s, (A,), aux=Ctx(full=False))


def svd(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: U, S, V (not V^H); with compute_uv=False, U and V zero-filled (m x m and n x n)."""
    _no_out(out)
    A = _matrix("linalg.svd", input, square=False)
    if not compute_uv:
        m, n = A.shape[-2:]
        return return_types.svd(_new(np.zeros(A.shape[:-2] + (m, m), A._data.dtype)), svdvals(A),
                                _new(np.zeros(A.shape[:-2] + (n, n), A._data.dtype)))
    U, S, Vh = svd_linalg(A, not some)
    return return_types.svd(U, S, Vh.mT)


def _svd_factors(L, ctx, A):
    """U, S, Vh of the forward, narrowed to the k = min(m, n) singular triplets."""
    U, S, Vh = L.svd(A, ctx.full)
    k = S.shape[-1]
    return U[..., :k], S, Vh[..., :k, :]


def _svd_E(L, S):
    """E[i, j] = S_j^2 - S_i^2, ones on the diagonal (torch's svd_backward)."""
    S2 = S * S
    return L.usq(S2, -2) - L.usq(S2, -1) + L.embed(1 + 0 * S2)


def _svd_S_rule(L, ctx, g, inputs, out):
    """U diag(gS) V^H."""
    A, = inputs
    U, S, Vh = _svd_factors(L, ctx, A)
    return (L.mm(U * L.usq(g, -2), Vh),)


def _svd_U_rule(L, ctx, g, inputs, out):
    """U [(skew(U^T gU) / E) S] V^H + (I - U U^T) gU S^{-1} V^H."""
    A, = inputs
    U, S, Vh = _svd_factors(L, ctx, A)
    k = S.shape[-1]
    gU = g[..., :k]
    UtgU = L.mm(L.mT(U), gU)
    inner = (UtgU - L.mT(UtgU)) * L.usq(S, -2) / _svd_E(L, S)
    gA = L.mm(U, inner)
    if A.shape[-2] > k:
        gUS = gU / L.usq(S, -2)
        gA = gA + gUS - L.mm(U, L.mm(L.mT(U), gUS))
    return (L.mm(gA, Vh),)


def _svd_Vh_rule(L, ctx, g, inputs, out):
    """U [S (skew(V^T gV) / E)] V^H + U S^{-1} gV^T (I - V V^T), gV = gVh^T."""
    A, = inputs
    U, S, Vh = _svd_factors(L, ctx, A)
    k = S.shape[-1]
    gV, V = L.mT(g[..., :k, :]), L.mT(Vh)
    VtgV = L.mm(Vh, gV)
    inner = L.usq(S, -1) * (VtgV - L.mT(VtgV)) / _svd_E(L, S)
    gA = L.mm(inner, Vh)
    if A.shape[-1] > k:
        gVS = L.mT(gV / L.usq(S, -2))
        gA = gA + gVS - L.mm(L.mm(gVS, V), Vh)
    return (L.mm(U, gA),)


def eigh(A, UPLO="L", *, out=None):
    _no_out(out)
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    A = _matrix("linalg.eigh", A)
    w, v = np.linalg.eigh(A._data, UPLO.upper())
    ctx = Ctx(uplo=UPLO.upper())
    return return_types.linalg_eigh(_record(OPS["linalg_eigh_values"], w, (A,), aux=ctx),
                                    _record(OPS["linalg_eigh_vectors"], v, (A,), aux=ctx))


def eigvalsh(A, UPLO="L", *, out=None):
    _no_out(out)
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    A = _matrix("linalg.eigvalsh", A)
    return _record(OPS["linalg_eigh_values"], np.linalg.eigvalsh(A._data, UPLO.upper()), (A,),
                   aux=Ctx(uplo=UPLO.upper()))


def _eigh(L, ctx, A):
    if L is _ARRAYS:
        return np.linalg.eigh(A, ctx.uplo)
    return eigh(A, ctx.uplo)


def _eigh_values_rule(L, ctx, g, inputs, out):
    """V diag(gL) V^T."""
    _, V = _eigh(L, ctx, inputs[0])
    return (L.mm(V * L.usq(g, -2), L.mT(V)),)


def _eigh_vectors_rule(L, ctx, g, inputs, out):
    """V [skew(V^T gV) / 2 / E] V^T, E[i, j] = L_j - L_i (torch's linalg_eig_backward, Hermitian case)."""
    w, V = _eigh(L, ctx, inputs[0])
    VtgV = L.mm(L.mT(V), g)
    E = L.usq(w, -2) - L.usq(w, -1) + L.embed(1 + 0 * w)
    return (L.mm(L.mm(V, 0.5 * (VtgV - L.mT(VtgV)) / E), L.mT(V)),)


# -- pinv, lstsq, matrix_rank ----------------------------------------------------------------------------------
def _tolerance(x, like):
    if x is None:
        return None
    return np.asanyarray(x._data if isinstance(x, Tensor) else x, dtype=like.dtype)


def _cutoff(s, atol, rtol, m, n, dtype):
    """torch's: max(atol, rtol * S_max), rtol defaulting to eps * max(m, n) when atol is not given either."""
    if rtol is None:
        rtol = np.asanyarray(np.finfo(dtype).eps * max(m, n) if atol is None else 0.0, dtype)
    atol = np.asanyarray(0.0, dtype) if atol is None else atol
    smax = s.max(-1) if s.shape[-1] else np.zeros(s.shape[:-1], s.dtype)
    return np.maximum(atol, rtol * smax)[..., None]


def _pinv_array(a, atol, rtol, hermitian):
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    if hermitian:
        w, v = np.linalg.eigh(a)
        keep = np.abs(w) > _cutoff(np.abs(w), atol, rtol, m, n, a.dtype)
        winv = np.where(keep, 1 / np.where(keep, w, 1), 0).astype(a.dtype)
        return np.matmul(v * winv[..., None, :], np.swapaxes(v, -1, -2))
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    keep = s > _cutoff(s, atol, rtol, m, n, a.dtype)
    sinv = np.where(keep, 1 / np.where(keep, s, 1), 0).astype(a.dtype)
    return np.matmul(np.swapaxes(vh, -1, -2) * sinv[..., None, :], np.swapaxes(u, -1, -2))


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """rcond: torch's older overload, the rtol (atol then 0)."""
    _no_out(out)
    if rcond is not None:
        rtol = rcond
    A = _matrix("linalg.pinv", A, square=False)
    value = _pinv_array(A._data, _tolerance(atol, A._data), _tolerance(rtol, A._data), hermitian)
    return _record(OPS["linalg_pinv"], value, (A,))


def pinverse(input, rcond=1e-15):
    return pinv(input, rtol=rcond)


def _pinv_backward(L, g, P, A):
    """torch's pinv_backward (P = pinv(A)), in its smaller-product arrangement."""
    m, n = A.shape[-2:]
    Ph, gh = L.mT(P), L.mT(g)
    if m <= n:
        K = L.mm(gh, P)
        KPh = L.mm(K, Ph)
        return (-L.mT(L.mm(P, K)) + KPh - L.mm(L.mm(A, P), KPh)
                + L.mm(L.mm(Ph, P), gh - L.mm(K, A)))
    K = L.mm(P, gh)
    PhK = L.mm(Ph, K)
    return (-L.mT(L.mm(K, P)) + PhK - L.mm(L.mm(PhK, P), A)
            + L.mm(L.mm(gh - L.mm(A, K), P), Ph))


def _pinv_rule(L, ctx, g, inputs, out):
    return (_pinv_backward(L, g, out, inputs[0]),)


def lstsq(A, B, rcond=None, *, driver=None):
    """By the LAPACK driver torch's CPU uses (gelsy by default; gelsd, gelss, gels), each matrix of the broadcast
    batch: the solution, and what that driver gives: rank (A's batch shape; all but gels), singular_values (gelsd,
    gelss), residuals (not gelsy: the squared norms of B - A X's rows when m > n and every A has full rank)."""
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    driver = driver or "gelsy"
    A, B = _matrix("torch.linalg.lstsq", A, square=False, what="input"), _tensor(B)
    vector = B.ndim == A.ndim - 1
    if (B.shape[-1] if vector else B.shape[-2]) != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    _same_dtype("torch.linalg.lstsq", A, B)
    tape_mod.untraceable("linalg.lstsq's rank is computed from the input's values")
    a, b = A._data, B._data[..., None] if vector else B._data
    m, n = a.shape[-2:]
    cond = np.finfo(a.dtype).eps * max(m, n) if rcond is None else rcond
    x, rank, s = _lstsq_arrays(a, b, driver, cond)
    residuals = np.zeros(0, a.dtype)
    if driver != "gelsy" and m > n and x.size and (driver == "gels" or np.all(rank == n)):
        residuals = (x[..., n:, :] ** 2).sum(-2)
    x = x[..., :n, :]
    ctx = Ctx(vector=vector)
    solution = _record(OPS["linalg_lstsq"], np.ascontiguousarray(x[..., 0] if vector else x), (A, B), aux=ctx)
    residuals = _record(OPS["linalg_lstsq_residuals"], residuals, (A, B), aux=ctx)
    return return_types.linalg_lstsq(solution, residuals, _new(rank), _new(s))


def _lstsq_arrays(a, b, driver, cond):
    """(the driver's B: X in its first n rows, residual terms below when m > n; rank of A's batch shape; singular
    values), by LAPACKE's driver (NumPy's gelsd where NumPy bundles no LAPACK)."""
    m, n = a.shape[-2:]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    nrhs, rows = b.shape[-1], max(m, n)
    out = np.zeros(batch + (nrhs, rows), a.dtype)  # each B column-major: its transpose, C-ordered
    out[..., :m] = np.swapaxes(np.broadcast_to(b, batch + b.shape[-2:]), -1, -2)
    aa = np.array(np.swapaxes(np.broadcast_to(a, batch + a.shape[-2:]), -1, -2), order="C")
    own = a.shape[:-2]
    rank = np.zeros(own if driver != "gels" else (0,), np.int64)
    s = np.zeros(own + (min(m, n),) if driver in ("gelsd", "gelss") else (0,), a.dtype)
    fn = _lapacke(driver, a.dtype)
    real = ctypes.c_double if a.dtype == np.float64 else ctypes.c_float
    i64, ptr, layout = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int(COL_MAJOR)
    for i in np.ndindex(*batch):
        if not (m and n and nrhs):
            continue
        # (a batch A broadcast over B's batch: each copy gives the same rank; A's batch index keeps it)
        j = tuple(0 if d == 1 else k for d, k in zip(own, i[len(batch) - len(own):]))
        ai, bi = aa[i], out[i]
        if fn is None:
            x, _, r, sv = np.linalg.lstsq(ai.T, bi.T[:m], rcond=cond)
            bi[:, :n] = x.T
            if driver != "gels":
                rank[j] = r
            if s.size:
                s[j] = sv
            continue
        r, sv = i64(0), np.zeros(min(m, n), a.dtype)
        if driver == "gels":
            fn(layout, ctypes.c_char(b"N"), i64(m), i64(n), i64(nrhs), ptr(ai.ctypes.data), i64(m),
               ptr(bi.ctypes.data), i64(rows))
        elif driver == "gelsy":
            jpvt = np.zeros(n, np.int64)
            fn(layout, i64(m), i64(n), i64(nrhs), ptr(ai.ctypes.data), i64(m), ptr(bi.ctypes.data), i64(rows),
               ptr(jpvt.ctypes.data), real(cond), ctypes.byref(r))
        else:
            fn(layout, i64(m), i64(n), i64(nrhs), ptr(ai.ctypes.data), i64(m), ptr(bi.ctypes.data), i64(rows),
               ptr(sv.ctypes.data), real(cond), ctypes.byref(r))
        if driver != "gels":
            rank[j] = r.value
        if s.size:
            s[j] = sv
    return np.ascontiguousarray(np.swapaxes(out, -1, -2)), rank, s


def _lstsq_rule(L, ctx, g, inputs, out):
    """torch's linalg_lstsq_backward: X = pinv(A) B, so gA = pinv_backward(g B^T, pinv(A), A), gB = pinv(A)^T g."""
    A, B = inputs
    if ctx.vector:
        g, B = L.usq(g, -1), L.usq(B, -1)
    P = L.pinv(A)
    gA = _pinv_backward(L, L.mm(g, L.mT(B)), P, A)
    gB = L.mm(L.mT(P), g)
    if ctx.vector:
        gB = gB[..., 0]
    return L.sum_to(gA, inputs[0].shape), L.sum_to(gB, inputs[1].shape)


def _lstsq_residuals_rule(L, ctx, g, inputs, out):
    """torch's linalg_lstsq_backward for the residuals L_j = |B_j - A X_j|^2 (X minimizes them: its own variation
    drops out): with R = B - A X, gA = -2 R diag(g) X^T, gB = 2 R diag(g). None where none were computed (empty)."""
    A, B = inputs
    if out.shape[-1] == 0:
        return None, None
    if ctx.vector:
        B = L.usq(B, -1)
    X = L.mm(L.pinv(A), B)
    Rg = (B - L.mm(A, X)) * L.usq(g, -2)
    gA, gB = -2 * L.mm(Rg, L.mT(X)), 2 * Rg
    if ctx.vector:
        gB = gB[..., 0]
    return L.sum_to(gA, inputs[0].shape), L.sum_to(gB, inputs[1].shape)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    _no_out(out)
    A = _matrix("linalg.matrix_rank", A, square=False)
    tape_mod.untraceable("linalg.matrix_rank is computed from the input's values")
    a = A._data
    m, n = a.shape[-2:]
    s = np.abs(np.linalg.eigvalsh(a)) if hermitian else (
        np.linalg.svd(a, compute_uv=False) if a.size else np.zeros(a.shape[:-2] + (0,), a.dtype))
    cut = _cutoff(s, _tolerance(atol, a), _tolerance(rtol, a), m, n, a.dtype)
    return _new(np.asanyarray((s > cut).sum(-1), np.int64))


# -- products, powers, exp -------------------------------------------------------------------------------------
def matrix_power(input, n, *, out=None):
    """By repeated squaring, as torch (the same products, so the same rounding and grad_fn)."""
    _no_out(out)
    A = _tensor(input)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if n == 0:
        eye = _new(np.broadcast_to(np.eye(A.shape[-1], dtype=A._data.dtype), A.shape).copy())
        return eye + 0 * A if A.requires_grad else eye
    if n < 0:
        A, n = inv(A), -n
    if n == 1:
        return A.clone()
    if n == 2:
        return matmul(A, A)
    if n == 3:
        return matmul(matmul(A, A), A)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = A if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def multi_dot(tensors, *, out=None):
    """The chained product, left to right (torch picks the cheapest order; the value is the same up to rounding).
    A 1-d first (last) operand is a row (column) vector, dropped from the result's shape."""
    _no_out(out)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    ts = [_tensor(t) for t in tensors]
    for i, t in enumerate(ts):
        if not (t.ndim == 2 or t.ndim == 1 and i in (0, len(ts) - 1)):
            where_ = "first and last" if i in (0, len(ts) - 1) else ""
            raise RuntimeError(f"multi_dot(): the {where_ + ' ' if where_ else ''}tensor{'s' if not where_ else ''} "
                               f"must be {'1D or 2D' if where_ else '2D'} but got {t.ndim}D")
    out_ = ts[0]
    for t in ts[1:]:
        out_ = matmul(out_, t)
    return out_


def linalg_cross(input, other, *, dim=-1, out=None):
    _no_out(out)
    a, b = _tensor(input), _tensor(other)
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = _dim(dim, a.ndim)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[d]} and "
                           f"{b.shape[d]}")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(a._data)} but found {_type_name(b._data)}")
    # (np.cross along any axis but the last gives a strided view: values are C-contiguous, which kernels assume)
    value = np.asanyarray(np.cross(*np.broadcast_arrays(a._data, b._data), axisa=d, axisb=d, axisc=d), order="C")
    if not _dtype.is_float(a._data.dtype):
        return _new(np.asanyarray(value, a._data.dtype))
    return _record(OPS["linalg_cross"], value, (a, b), aux=Ctx(dim=d))


def cross(input, other, dim=None, *, out=None):
    """torch.cross: dim=None (deprecated, with torch's warning) is the first dimension of size 3."""
    a, b = _tensor(input), _tensor(other)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=user_stacklevel())
        shape = np.broadcast_shapes(a.shape, b.shape)
        dim = next((i for i, s in enumerate(shape) if s == 3), -1)
    return linalg_cross(a, b, dim=dim, out=out)


def _cross_rule(L, ctx, g, inputs, out):
    """ga = b x g, gb = g x a (along the row's dim), summed to the inputs' shapes."""
    a, b = inputs
    d = ctx.dim
    if L is _ARRAYS:
        ga = np.ascontiguousarray(np.cross(*np.broadcast_arrays(b, g), axis=d))
        gb = np.ascontiguousarray(np.cross(*np.broadcast_arrays(g, a), axis=d))
    else:
        ga, gb = linalg_cross(b, g, dim=d), linalg_cross(g, a, dim=d)
    return L.sum_to(ga, a.shape), L.sum_to(gb, b.shape)


# Higham (2005)'s scaling and squaring with a [13/13] Pade approximant (scipy's expm, torch's for float64):
# exact to rounding for every matrix.
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def _expm(a):
    """exp of each matrix, in float64 (then a's dtype)."""
    dtype = a.dtype
    a = np.asanyarray(a, np.float64)
    if a.size == 0:
        return a.astype(dtype)
    n = a.shape[-1]
    norm1 = np.abs(a).sum(-2).max(-1)
    s = np.maximum(0, np.ceil(np.log2(np.maximum(norm1, 1e-300) / _THETA13))).astype(np.int64)
    a = a / (2.0 ** s)[..., None, None]
    b, ident = _PADE13, np.eye(n)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident
    r = np.linalg.solve(v - u, v + u)
    for k in range(int(s.max(initial=0))):  # square each matrix its own number of times
        sq = r @ r
        r = np.where((s > k)[..., None, None], sq, r)
    return r.astype(dtype)


def matrix_exp(A):
    A = _tensor(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: Expected a square matrix or batch of square matrices. Got "
                           f"{A.ndim}-D tensor with shape {list(A.shape)}." if A.ndim >= 2 else
                           "linalg.matrix_exp: The input tensor A must have at least 2 dimensions.")
    if not _dtype.is_float(A._data.dtype):
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as input. Got "
                           f"{_type_name(A._data)}")
    return _record(OPS["linalg_matrix_exp"], _expm(A._data), (A,))


def _matrix_exp_rule(L, ctx, g, inputs, out):
    """torch's: the top-right block of exp([[A^T, g], [0, A^T]]) (the Frechet derivative at A^T applied to g)."""
    A, = inputs
    n = A.shape[-1]
    At = L.mT(A)
    if L is _ARRAYS:
        top, bottom = np.concatenate([At, g], -1), np.concatenate([np.zeros_like(At), At], -1)
        big = np.concatenate([top, bottom], -2)
    else:
        big = cat([cat([At, g], -1), cat([0 * At, At], -1)], -2)
    return (L.expm(big)[..., :n, n:],)


# -- the op table ----------------------------------------------------------------------------------------------
def _declare(name, grad_fn, forward, rule, **kw):
    vjp, array_vjp = _rule(rule)
    registry.python(name, grad_fn, forward, vjp, array_vjp=array_vjp, **kw)


def _inverse_forward(ctx, a):
    return np.linalg.inv(a)


_declare("linalg_det", "LinalgDetBackward0", lambda ctx, a: np.asanyarray(np.linalg.det(a)), _det_rule)
registry.python("linalg_slogdet_sign", "LinalgSlogdetBackward0", lambda ctx, a: _slogdet_arrays(a)[0],
                _no_gradient, array_vjp=_no_gradient_arrays)
_declare("linalg_slogdet", "LinalgSlogdetBackward0", lambda ctx, a: _slogdet_arrays(a)[1], _slogdet_rule)
_declare("linalg_inv", "LinalgInvExBackward0", _inverse_forward, _inv_rule)
_declare("linalg_solve", "LinalgSolveExBackward0",
         lambda ctx, a, b: (lambda x: x[..., 0] if ctx.vector else x)(
             _solve_arrays(a, b[..., None] if ctx.vector else b, ctx.left)), _solve_rule)
_declare("linalg_solve_triangular", "LinalgSolveTriangularBackward0",
         lambda ctx, a, b: _solve_tri_arrays(a, b, ctx.upper, ctx.left, ctx.unit), _solve_triangular_rule)
_declare("cholesky_solve", "CholeskySolveBackward0", _cholesky_solve_arrays, _cholesky_solve_rule)
_declare("linalg_cholesky", "LinalgCholeskyExBackward0",
         lambda ctx, a: np.swapaxes(np.linalg.cholesky(a), -1, -2).copy() if ctx.upper else np.linalg.cholesky(a),
         _cholesky_rule)
_declare("cholesky", "CholeskyBackward0",
         lambda ctx, a: np.swapaxes(np.linalg.cholesky(a), -1, -2).copy() if ctx.upper else np.linalg.cholesky(a),
         _cholesky_rule)
_declare("linalg_qr_Q", "LinalgQrBackward0", lambda ctx, a: np.linalg.qr(a, ctx.mode)[0], _qr_Q_rule)
_declare("linalg_qr_R", "LinalgQrBackward0",
         lambda ctx, a: np.linalg.qr(a, "reduced" if ctx.mode == "r" else ctx.mode)[1], _qr_R_rule)
_declare("linalg_svd_U", "LinalgSvdBackward0", lambda ctx, a: _svd_arrays(a, ctx.full)[0], _svd_U_rule)
_declare("linalg_svd_S", "LinalgSvdBackward0", lambda ctx, a: _svd_arrays(a, ctx.full)[1], _svd_S_rule)
_declare("linalg_svd_Vh", "LinalgSvdBackward0", lambda ctx, a: _svd_arrays(a, ctx.full)[2], _svd_Vh_rule)
_declare("linalg_eigh_values", "LinalgEighBackward0", lambda ctx, a: np.linalg.eigh(a, ctx.uplo)[0],
         _eigh_values_rule)
_declare("linalg_eigh_vectors", "LinalgEighBackward0", lambda ctx, a: np.linalg.eigh(a, ctx.uplo)[1],
         _eigh_vectors_rule)
_declare("linalg_pinv", "LinalgPinvBackward0", None, _pinv_rule,
         unreplayable="its tolerances (atol, rtol, hermitian) are not kept in the row")
_declare("linalg_lstsq", "LinalgLstsqBackward0", None, _lstsq_rule,
         unreplayable="linalg.lstsq's rank is computed from the input's values")
_declare("linalg_lstsq_residuals", "LinalgLstsqBackward0", None, _lstsq_residuals_rule,
         unreplayable="linalg.lstsq's rank is computed from the input's values")
_declare("linalg_cross", "LinalgCrossBackward0",
         lambda ctx, a, b: np.ascontiguousarray(np.cross(*np.broadcast_arrays(a, b), axisa=ctx.dim, axisb=ctx.dim,
                                                          axisc=ctx.dim)),
         _cross_rule)
_declare("linalg_matrix_exp", "LinalgMatrixExpBackward0", lambda ctx, a: _expm(a), _matrix_exp_rule)


# -- Tensor methods --------------------------------------------------------------------------------------------
Tensor.det = det
Tensor.logdet = logdet
Tensor.slogdet = slogdet
Tensor.inverse = inverse
Tensor.pinverse = pinverse
Tensor.cholesky = cholesky
Tensor.cholesky_solve = cholesky_solve
Tensor.cholesky_inverse = cholesky_inverse
Tensor.qr = qr
Tensor.svd = svd
Tensor.matrix_power = matrix_power
Tensor.matrix_exp = matrix_exp
Tensor.cross = cross

