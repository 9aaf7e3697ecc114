"""LU, LDL and Householder products: torch.linalg's lu_factor(_ex), lu, lu_solve, ldl_factor(_ex), ldl_solve and
householder_product, and torch's top-level lu, lu_unpack, lu_solve, triangular_solve, geqrf, orgqr and ormqr.

The factors and pivots are LAPACK's own (getrf, sytrf and sytrs through decompositions._lapacke: NumPy exposes none
of them), so they are torch's, ties included. lu_factor's and lu's rows hold torch's linalg_lu_backward, written over
ops/decompositions.py's rule namespaces (create_graph records it); the solves, lu_unpack and the Householder products
are composed of differentiable ops (triangular solves, products, tril/triu, gathers), whose gradients are torch's
formulas expanded. The LDL functions and geqrf have no derivative, as in torch."""
import ctypes
import math
import warnings

import numpy as np

from .. import tape as tape_mod
from ..registry import Ctx
from ..tensor import Tensor, _new
from ._common import OPS, _record, _record_undefined_gradient, _tensor, broadcast_shape
from .decompositions import (COL_MAJOR, _ARRAYS, _declare, _lapacke, _matrix, _return_type, _type_name, _cat_last,
                             solve_triangular)
from .linalg import matmul
from .shape import cat
from .._warnings import user_stacklevel

__all__ = ["geqrf", "lu", "lu_solve", "lu_unpack", "orgqr", "ormqr", "triangular_solve"]
INPLACE = ()

return_types = Ctx(
    linalg_lu_factor=_return_type("linalg_lu_factor", ["LU", "pivots"]),
    linalg_lu_factor_ex=_return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"]),
    linalg_lu=_return_type("linalg_lu", ["P", "L", "U"]),
    lu_unpack=_return_type("lu_unpack", ["P", "L", "U"]),
    _lu_with_info=_return_type("_lu_with_info", ["LU", "pivots", "info"]),
    triangular_solve=_return_type("triangular_solve", ["solution", "cloned_coefficient"]),
    linalg_ldl_factor=_return_type("linalg_ldl_factor", ["LD", "pivots"]),
    linalg_ldl_factor_ex=_return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"]),
    geqrf=_return_type("geqrf", ["a", "tau"]))


# -- LAPACK ----------------------------------------------------------------------------------------------------
def _i(n):
    return ctypes.c_int64(n)


def _columns(a):
    """Each matrix of a batch copied column-major (its transpose's C order), as LAPACK reads and writes it; the
    batch flattened. Returns (the Fortran blocks, the C-ordered array they live in)."""
    m, n = a.shape[-2:]
    buf = np.array(np.swapaxes(a, -1, -2), order="C")
    return buf.reshape((math.prod(a.shape[:-2]), n, m)), buf


def _getrf(a):
    """(LU, pivots int32 1-based, info int32) of LAPACK getrf (partial pivoting: each column's first largest |value|)
    for each matrix of a (float32 or float64)."""
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    blocks, buf = _columns(a)
    piv = np.zeros((len(blocks), k), np.int64)
    info = np.zeros(len(blocks), np.int64)
    getrf = _lapacke("getrf", a.dtype)
    for b in range(len(blocks) if k else 0):
        if getrf is not None:
            info[b] = getrf(ctypes.c_int(COL_MAJOR), _i(m), _i(n), ctypes.c_void_p(blocks[b].ctypes.data),
                            _i(max(m, 1)), ctypes.c_void_p(piv[b].ctypes.data))
        else:
            info[b] = _getrf_numpy(blocks[b].T, piv[b])
    lu = np.ascontiguousarray(np.swapaxes(buf, -1, -2))
    return lu, piv.astype(np.int32).reshape(batch + (k,)), info.astype(np.int32).reshape(batch)


def _getrf_numpy(m, piv):
    """getrf's elimination in place on m (where NumPy bundles no LAPACK): the first largest |value| of each column
    is its pivot; a zero pivot is skipped and its 1-based column returned (the first such), as getrf's info."""
    rows, cols = m.shape
    info = 0
    for j in range(min(rows, cols)):
        p = j + int(np.argmax(np.abs(m[j:, j])))
        piv[j] = p + 1
        if m[p, j] == 0:
            info = info or j + 1
            continue
        m[[j, p]] = m[[p, j]]
        m[j + 1:, j] /= m[j, j]
        m[j + 1:, j + 1:] -= np.outer(m[j + 1:, j], m[j, j + 1:])
    return info


def _permutation(pivots, m):
    """perm with A[perm] = L U (the rows getrf's swaps bring up, in order), for pivots (..., k) 1-based."""
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    flat = pivots.reshape(math.prod(batch), k).astype(np.int64) - 1
    perm = np.broadcast_to(np.arange(m), (len(flat), m)).copy()
    rows = np.arange(len(flat))
    for i in range(k):
        p = flat[:, i]
        swapped = perm[rows, p]
        perm[rows, p] = perm[:, i]
        perm[:, i] = swapped
    return perm.reshape(batch + (m,))


def _p_matrix(perm, dtype):
    """P with P[perm[i], i] = 1: A = P L U."""
    m = perm.shape[-1]
    P = np.zeros(perm.shape + (m,), dtype)
    np.put_along_axis(P, perm[..., :, None], 1, -1)
    return np.ascontiguousarray(np.swapaxes(P, -1, -2))


def _unpack_arrays(lu):
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
    return low, np.triu(lu[..., :k, :])


_WARNED = set()


def _deprecated(name, message):
    """torch's TORCH_WARN_ONCE: the first call in a process warns."""
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(message, UserWarning, stacklevel=user_stacklevel())


# -- lu_factor, lu ---------------------------------------------------------------------------------------------
def _lu_input(name, A, pivot, dims_name=None):
    A = _tensor(A)
    if A.ndim < 2:
        raise RuntimeError(f"{dims_name or name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    if A._data.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{_type_name(A._data)}'")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    tape_mod.untraceable(f"{name}'s pivots are computed from the input's values")
    return A


def _check_info(name, info):
    bad = np.flatnonzero(info.reshape(-1))
    if len(bad):
        i = int(bad[0])
        j = int(info.reshape(-1)[i])
        prefix = f"(Batch element {i}): " if info.ndim else ""
        raise RuntimeError(f"{name}: {prefix}U[{j},{j}] is zero and using it on lu_solve would result in a division "
                           f"by zero. If you still want to perform the factorization, consider calling "
                           f"linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): LAPACK getrf's packed factors, 1-based int32 pivots and info (the first zero pivot)."""
    A = _lu_input("torch.linalg.lu_factor_ex", A, pivot, "torch.lu_factor")
    lu_, piv, info = _getrf(A._data)
    if check_errors:
        _check_info("torch.linalg.lu_factor_ex", info)
    return return_types.linalg_lu_factor_ex(_record(OPS["linalg_lu_factor"], lu_, (A,)), _new(piv), _new(info))


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots); a zero pivot raises torch's error (lu_factor_ex returns it in info)."""
    A = _lu_input("torch.linalg.lu_factor", A, pivot, "torch.lu_factor")
    lu_, piv, info = _getrf(A._data)
    _check_info("torch.linalg.lu_factor", info)
    return return_types.linalg_lu_factor(_record(OPS["linalg_lu_factor"], lu_, (A,)), _new(piv))


def linalg_lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U: L m x k with a unit diagonal, U k x n (k = min(m, n)); P has no gradient."""
    A = _lu_input("linalg.lu", A, pivot, "linalg.lu")
    lu_, piv, _ = _getrf(A._data)
    low, up = _unpack_arrays(lu_)
    P = _p_matrix(_permutation(piv, A.shape[-2]), A._data.dtype)
    return return_types.linalg_lu(_new(P), _record(OPS["linalg_lu_L"], low, (A,)),
                                  _record(OPS["linalg_lu_U"], up, (A,)))


def lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu (deprecated, with torch's warning, once): (LU, pivots), or (LU, pivots, infos) with get_infos; a
    zero pivot does not raise (torch's check_errors does not reach getrf's info on the CPU)."""
    _deprecated("lu", "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will "
                "be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced "
                "with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, "
                "compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
                "torch.linalg.lu_factor_ex(A, compute_pivots)")
    A = _lu_input("torch.lu", A, pivot, "torch.lu_factor")
    lu_, piv, info = _getrf(A._data)
    LU = _record(OPS["linalg_lu_factor"], lu_, (A,))
    return return_types._lu_with_info(LU, _new(piv), _new(info)) if get_infos else (LU, _new(piv))


# torch's linalg_lu_backward (FunctionsManual.cpp), over a rule namespace L: with A = P L U (L m x k, U k x n),
#   square: gA = P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T,
#   wide:   gA = P L^-T [(tril(L^T gL - triu(gU) U^T, -1) U1^-T + triu(gU1)) | gU2],
#   tall:   gA = P [(L1^-T triu(gU U^T - L^T tril(gL, -1)) + tril(gL1, -1)) ; gL2] U^-T.
def _zeros(L, like, shape):
    if L is _ARRAYS:
        return np.zeros(shape, like.dtype)
    return _new(np.zeros(shape, like._data.dtype))


def _cat_rows(L, a, b):
    return np.concatenate([a, b], -2) if L is _ARRAYS else cat([a, b], -2)


def _lu_backward(L, gL, gU, P, low, up):
    m, n = low.shape[-2], up.shape[-1]
    k = min(m, n)
    if m == n:
        gA = None if gL is None else L.tril(L.mm(L.mT(low), gL), -1)
        if gU is not None:
            t = L.triu(L.mm(gU, L.mT(up)))
            gA = t if gA is None else gA + t
        gA = L.solve_tri(L.mT(up), gA, False, False)
        gA = L.solve_tri(L.mT(low), gA, True, True, True)
    elif m < n:
        gA = None if gL is None else L.mm(L.mT(low), gL)
        if gU is not None:
            t = L.mm(L.triu(gU), L.mT(up))
            gA = -t if gA is None else gA - t
        gA = L.solve_tri(L.mT(up[..., :, :k]), L.tril(gA, -1), False, False)
        if gU is not None:
            gA = _cat_last(L, gA + L.triu(gU[..., :, :k]), gU[..., :, k:])
        gA = L.solve_tri(L.mT(low), gA, True, True, True)
        if gU is None:
            gA = _cat_last(L, gA, _zeros(L, gA, gA.shape[:-1] + (n - k,)))
    else:
        gA = None if gU is None else L.mm(gU, L.mT(up))
        if gL is not None:
            t = L.mm(L.mT(low), L.tril(gL, -1))
            gA = -t if gA is None else gA - t
        gA = L.solve_tri(L.mT(low[..., :k, :]), L.triu(gA), True, True, True)
        if gL is not None:
            gA = _cat_rows(L, gA + L.tril(gL[..., :k, :], -1), gL[..., k:, :])
        gA = L.solve_tri(L.mT(up), gA, False, False)
        if gL is None:
            gA = _cat_rows(L, gA, _zeros(L, gA, gA.shape[:-2] + (m - k, n)))
    return L.mm(P, gA)


def _pivots_matrix(L, A):
    """P of A's LU (the forward's: getrf is deterministic), a constant."""
    a = A if L is _ARRAYS else A._data
    P = _p_matrix(_permutation(_getrf(a)[1], a.shape[-2]), a.dtype)
    return P if L is _ARRAYS else _new(P)


def _lu_factor_rule(L, ctx, g, inputs, out):
    """torch's lu_factor_ex_backward: L and U unpacked from the packed output, gL and gU the gradient's first k
    columns and rows."""
    A, = inputs
    m, n = A.shape[-2:]
    k = min(m, n)
    low = L.tril(out[..., :, :k], -1) + L.eye(m, out)[:, :k]
    up = L.triu(out[..., :k, :])
    return (_lu_backward(L, g[..., :, :k], g[..., :k, :], _pivots_matrix(L, A), low, up),)


def _lu_factors(L, A):
    if L is _ARRAYS:
        lu_, piv, _ = _getrf(A)
        return _unpack_arrays(lu_)
    _, low, up = linalg_lu(A)
    return low, up


def _lu_L_rule(L, ctx, g, inputs, out):
    A, = inputs
    low, up = _lu_factors(L, A)
    return (_lu_backward(L, g, None, _pivots_matrix(L, A), low, up),)


def _lu_U_rule(L, ctx, g, inputs, out):
    A, = inputs
    low, up = _lu_factors(L, A)
    return (_lu_backward(L, None, g, _pivots_matrix(L, A), low, up),)


# -- lu_unpack, lu_solve ---------------------------------------------------------------------------------------
def _check_pivots(name, pivots):
    if pivots._data.dtype != np.int32:
        raise RuntimeError(f"{name}: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\nNote: "
                           f"this function is intended to be used with the output produced by torch.linalg.lu_factor")


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) of lu_factor's packed result: L and U by tril/triu (differentiable), P from the pivots' swaps."""
    LU, pivots = _tensor(LU_data), _tensor(LU_pivots)
    if LU.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: {list(LU.shape)} "
                           f"instead")
    _check_pivots("torch.lu_unpack", pivots)
    m, n = LU.shape[-2:]
    k = min(m, n)
    empty = _new(np.zeros(0, LU._data.dtype))
    if unpack_data:
        L = LU[..., :, :k].tril(-1) + _new(np.eye(m, k, dtype=LU._data.dtype))
        U = LU[..., :k, :].triu()
    else:
        L = U = empty
    P = _new(_p_matrix(_permutation(pivots._data, m), LU._data.dtype)) if unpack_pivots else empty
    return return_types.lu_unpack(P, L, U)


def _gather_rows(X, perm, batch):
    """X[..., perm, :] with perm (batch..., n) broadcast against X's batch."""
    X = X.expand(*batch, *X.shape[-2:])
    index = np.broadcast_to(perm[..., :, None], batch + X.shape[-2:])
    return X.gather(-2, _new(np.ascontiguousarray(index, np.int64)))


def _gather_columns(X, perm, batch):
    X = X.expand(*batch, *X.shape[-2:])
    index = np.broadcast_to(perm[..., None, :], batch + X.shape[-2:])
    return X.gather(-1, _new(np.ascontiguousarray(index, np.int64)))


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (left), X A = B (right), or A^T in place of A (adjoint), A = P L U given by lu_factor: a
    permutation and two triangular solves on LU's triangles, so LU and B get torch's gradients."""
    name = "linalg.lu_solve"
    LU, pivots, B = _tensor(LU), _tensor(pivots), _tensor(B)
    if B.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if LU.ndim >= 2 and LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.{name}: A must be batches of square matrices, but they are {LU.shape[-2]} by "
                           f"{LU.shape[-1]} matrices")
    LU = _matrix(f"torch.{name}", LU)
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'}"
                           f" ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if LU._data.dtype != B._data.dtype:
        raise RuntimeError(f"{name}: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_type_name(LU._data)} and B of type {_type_name(B._data)} instead")
    if pivots._data.dtype != np.int32:
        raise RuntimeError(f"{name}: pivots should be a Tensor of scalar type torch.int32")
    if pivots.shape[-1:] != (n,) and pivots.ndim == LU.ndim - 1 and pivots.shape[:-1] == LU.shape[:-2]:
        raise RuntimeError(f"{name}: Number of pivots per batch should be same as the dimension of the matrix")
    if pivots.shape != LU.shape[:-1]:
        raise RuntimeError(f"{name}: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {list(pivots.shape)} instead")
    batch = tuple(np.broadcast_shapes(LU.shape[:-2], B.shape[:-2]))
    perm = _permutation(pivots._data, n)
    if left and not adjoint:      # X = U^-1 L^-1 P^T B
        X = _gather_rows(B, perm, batch)
        X = solve_triangular(LU, X, upper=False, unitriangular=True)
        return solve_triangular(LU, X, upper=True)
    if left:                      # A^T X = B: X = P L^-T U^-T B
        X = solve_triangular(LU.mT, B, upper=False)
        X = solve_triangular(LU.mT, X, upper=True, unitriangular=True)
        return _gather_rows(X, np.argsort(perm, -1), batch)
    if not adjoint:               # X A = B: X = B U^-1 L^-1 P^T
        X = solve_triangular(LU, B, upper=True, left=False)
        X = solve_triangular(LU, X, upper=False, left=False, unitriangular=True)
        return _gather_columns(X, np.argsort(perm, -1), batch)
    X = _gather_columns(B, perm, batch)   # X A^T = B: X = B P L^-T U^-T
    X = solve_triangular(LU.mT, X, upper=True, left=False, unitriangular=True)
    return solve_triangular(LU.mT, X, upper=False, left=False)


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve (deprecated, with torch's warning, once): linalg.lu_solve with its arguments reversed."""
    _deprecated("lu_solve", "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a "
                "future PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
                "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)")
    return linalg_lu_solve(LU_data, LU_pivots, b)


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve (deprecated, with torch's warning, once): (solve_triangular(op(A), input),
    A.clone()), op the transpose when `transpose`; both outputs differentiable, as torch's."""
    _deprecated("triangular_solve", "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand "
                "will be removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments "
                "reversed and does not return a copy of one of the inputs.\nX = torch.triangular_solve(B, "
                "A).solution\nshould be replaced with\nX = torch.linalg.solve_triangular(A, B).")
    b, A = _tensor(input), _tensor(A)
    for what, t in (("b", b), ("A", A)):
        if t.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {what} to have at least 2 dimensions, but it has "
                               f"{t.ndim} dimensions instead")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           f"matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-1]} by "
                           f"{A.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    if b._data.dtype != A._data.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_type_name(b._data)} and A "
                           f"of type {_type_name(A._data)} instead.")
    broadcast_shape(tuple(b.shape[:-2]), tuple(A.shape[:-2]))  # (torch's broadcasting error first)
    x = solve_triangular(A.mT if transpose else A, b, upper=upper != bool(transpose), unitriangular=unitriangular)
    return return_types.triangular_solve(x, A.clone())


# -- LDL (forward only, as torch) ------------------------------------------------------------------------------
def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info) of LAPACK sytrf (Bunch-Kaufman, lower triangle): LAPACK's compact L and D, its pivots (a
    negative pair marks a 2 x 2 block). No gradient, as torch."""
    A = _matrix("torch.linalg.ldl_factor_ex", A)
    tape_mod.untraceable("linalg.ldl_factor's pivots are computed from the input's values")
    a = A._data
    n = a.shape[-1]
    blocks, buf = _columns(np.asarray(a, np.float64) if a.dtype not in (np.float32, np.float64) else a)
    piv = np.zeros((len(blocks), n), np.int64)
    info = np.zeros(len(blocks), np.int64)
    sytrf = _lapacke("sytrf", buf.dtype)
    if sytrf is None:
        raise NotImplementedError("tapegrad: linalg.ldl_factor needs LAPACK's sytrf (NumPy's bundled OpenBLAS)")
    for b in range(len(blocks) if n else 0):
        info[b] = sytrf(ctypes.c_int(COL_MAJOR), ctypes.c_char(b"L"), _i(n),
                        ctypes.c_void_p(blocks[b].ctypes.data), _i(max(n, 1)), ctypes.c_void_p(piv[b].ctypes.data))
    LD = np.tril(np.swapaxes(buf, -1, -2))
    info = info.astype(np.int32).reshape(a.shape[:-2])
    if check_errors and info.any():
        _ldl_error(info)
    return return_types.linalg_ldl_factor_ex(_new(np.ascontiguousarray(LD)), _new(piv.astype(np.int32).reshape(
        a.shape[:-2] + (n,))), _new(info))


def _ldl_error(info):
    code = int(info.reshape(-1)[np.flatnonzero(info.reshape(-1))[0]])
    raise RuntimeError(f"false INTERNAL ASSERT FAILED at \"/__w/pytorch/pytorch/aten/src/ATen/native/"
                       f"BatchLinearAlgebra.cpp\":1642, please report a bug to PyTorch. torch.linalg.ldl_factor: "
                       f"Unknown error code: {code}.")


def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots): ldl_factor_ex, raising torch's error for an exactly singular D."""
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    if info._data.any():
        _ldl_error(info._data)
    return return_types.linalg_ldl_factor(LD, pivots)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B from ldl_factor's result, by LAPACK sytrs (batched, broadcast). No gradient, as torch."""
    LD, pivots, B = _matrix("torch.linalg.ldl_solve", LD), _tensor(pivots), _tensor(B)
    if B.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(B.ndim, 1)}, "
                         f"{max(B.ndim, 1) - 1}], but got -2)")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {n} by {n} but "
                           f"each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if LD._data.dtype != B._data.dtype:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, but found LD of type "
                           f"{_type_name(LD._data)} and B of type {_type_name(B._data)} instead")
    batch = tuple(np.broadcast_shapes(LD.shape[:-2], B.shape[:-2], pivots.shape[:-1]))
    ld = np.broadcast_to(LD._data, batch + (n, n)).reshape((math.prod(batch), n, n))
    piv = np.broadcast_to(np.asarray(pivots._data, np.int64), batch + (n,)).reshape(math.prod(batch), n).copy()
    xs, buf = _columns(np.broadcast_to(B._data, batch + B.shape[-2:]))
    sytrs = _lapacke("sytrs", ld.dtype)
    if sytrs is None:
        raise NotImplementedError("tapegrad: linalg.ldl_solve needs LAPACK's sytrs (NumPy's bundled OpenBLAS)")
    nrhs = B.shape[-1]
    for b in range(len(xs) if n and nrhs else 0):
        a = np.array(ld[b].T, order="C")  # column-major
        sytrs(ctypes.c_int(COL_MAJOR), ctypes.c_char(b"L"), _i(n), _i(nrhs), ctypes.c_void_p(a.ctypes.data),
              _i(n), ctypes.c_void_p(piv[b].ctypes.data), ctypes.c_void_p(xs[b].ctypes.data), _i(n))
    return _new(np.ascontiguousarray(np.swapaxes(buf, -1, -2)))


# -- Householder products --------------------------------------------------------------------------------------
def _reflectors(name, A, tau):
    A, tau = _tensor(A), _tensor(tau)
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tau._data.dtype != A._data.dtype:
        raise RuntimeError(f"{name}: tau dtype {_type_name(tau._data)} does not match input dtype "
                           f"{_type_name(A._data)}")
    return A, tau


def _vectors(A, k):
    """The reflectors' vectors v_i (columns): below A's diagonal, 1 on it, 0 above."""
    m = A.shape[-2]
    return A[..., :, :k].tril(-1) + _new(np.eye(m, k, dtype=A._data.dtype))


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T (LAPACK orgqr's Q), composed of products,
    so A (below its diagonal) and tau get torch's gradients."""
    name = "torch.linalg.householder_product"
    A, tau = _reflectors(name, A, tau)
    m, n = A.shape[-2:]
    k = tau.shape[-1] if tau.ndim else 1
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < k:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.shape[:-1] != A.shape[:-2]:
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    V = _vectors(A, k)
    Q = _new(np.broadcast_to(np.eye(m, n, dtype=A._data.dtype), A.shape).copy())
    if k == 0:  # (no reflector: torch's result still requires grad, and its backward gives A and tau none)
        return _record_undefined_gradient(OPS["copy"], Q._data, (A, tau), Ctx(
            unreplayable="householder_product without reflectors (its row has no input: no gradient flows)"))
    for i in range(k - 1, -1, -1):
        v = V[..., :, i:i + 1]
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * matmul(v, matmul(v.mT, Q))
    return Q


def orgqr(input, tau, *, out=None):
    return householder_product(input, tau)


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """op(Q) C (left) or C op(Q), Q = H_1 ... H_k the m x m product of geqrf's reflectors, op the transpose when
    `transpose`: the reflectors applied one by one (products: differentiable in input, tau and other)."""
    name = "torch.ormqr"
    A, tau = _reflectors(name, input, tau)
    C = _tensor(other)
    mq = C.shape[-2] if left else C.shape[-1]
    if left and C.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[-2] must be equal to input.shape[-2]")
    if not left and C.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[-1] must be equal to input.shape[-2]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {A.ndim}")
    k = tau.shape[-1]
    if k != min(mq, A.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{-2 if left else -1}], "
                           f"input.shape[-1])")
    V = _vectors(A, k)
    order = range(k) if left == bool(transpose) else range(k - 1, -1, -1)
    for i in order:
        v, t = V[..., :, i:i + 1], tau[..., i:i + 1].unsqueeze(-1)
        C = C - t * matmul(v, matmul(v.mT, C)) if left else C - t * matmul(matmul(C, v), v.mT)
    return C


def geqrf(input, *, out=None):
    """(a, tau): LAPACK geqrf's packed QR (R on and above the diagonal, the reflectors below), by NumPy's
    qr(mode='raw'), which is geqrf. No gradient (torch's backward raises)."""
    A = _tensor(input)
    if A.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    a = A._data
    m, n = a.shape[-2:]
    if a.size == 0:
        return return_types.geqrf(_new(a.copy()), _new(np.zeros(a.shape[:-2] + (min(m, n),), a.dtype)))
    h, tau = np.linalg.qr(a, mode="raw")
    return return_types.geqrf(_new(np.ascontiguousarray(np.swapaxes(h, -1, -2), a.dtype)),
                              _new(np.asarray(tau, a.dtype)))


_declare("linalg_lu_factor", "LinalgLuFactorExBackward0", lambda ctx, a: _getrf(a)[0], _lu_factor_rule)
_declare("linalg_lu_L", "LinalgLuBackward0", lambda ctx, a: _unpack_arrays(_getrf(a)[0])[0], _lu_L_rule)
_declare("linalg_lu_U", "LinalgLuBackward0", lambda ctx, a: _unpack_arrays(_getrf(a)[0])[1], _lu_U_rule)

Tensor.lu = lu
Tensor.lu_solve = lu_solve
Tensor.triangular_solve = triangular_solve
Tensor.geqrf = geqrf
Tensor.orgqr = orgqr
Tensor.ormqr = ormqr
