"""torch.linalg: the norms, and the factorizations and solvers of ops/decompositions.py (on NumPy's LAPACK) and
ops/lu.py (LU, LDL, Householder: on LAPACK's getrf and sytrf), each with torch's out=. A name torch.linalg has and
tapegrad lacks (eig, eigvals: complex results, no complex dtype here) is an AttributeError naming it."""
import collections
import functools
import math

import numpy as np

from . import _dtype
from .ops import _tensor
from .ops.linalg import _matrix_norm, matmul, vector_norm  # noqa: F401
from .ops._common import _dim
from .ops.decompositions import (LinAlgError, _LinAlgError, cholesky_ex, det, eigh, eigvalsh, inv,  # noqa: F401
                                 inv_ex, lstsq, matrix_exp, matrix_power, matrix_rank, multi_dot, pinv,
                                 slogdet_linalg as slogdet, solve, solve_triangular, svdvals)
from .ops.decompositions import cholesky_linalg as cholesky, linalg_cross as cross, qr_linalg as qr  # noqa: F401
from .ops.decompositions import _batch_prefix, _first_zero_pivot, svd_linalg as svd  # noqa: F401
from .ops.elementwise import where
from .ops.lu import (householder_product, ldl_factor, ldl_factor_ex, ldl_solve, linalg_lu as lu,  # noqa: F401
                     linalg_lu_solve as lu_solve, lu_factor, lu_factor_ex)
from .ops.out import write_out
from .ops.shape import stack
from .grad_mode import is_grad_enabled, no_grad
from .tensor import Tensor, _new

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh",
           "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu",
           "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(result, info): info is LAPACK getrf's for each matrix of A (the first zero pivot, 1-based; 0: solved). A
    singular matrix's result is NaN (torch's holds LAPACK's partial values), or check_errors=True raises torch's
    error."""
    a = _tensor(A)
    try:
        x = solve(A, B, left=left)
    except _LinAlgError:
        info = _first_zero_pivot(a._data).astype(np.int32).reshape(a.shape[:-2])
        if not info.any():  # (LAPACK's float32 pivots hit a zero the float64 search does not: solve's error)
            raise
        if check_errors:
            i = int(np.flatnonzero(info.reshape(-1))[0])
            raise _LinAlgError(f"torch.linalg.solve_ex: {_batch_prefix(a._data, i)}The solver failed because the "
                               f"input matrix is singular.") from None
        bad = (info != 0).reshape(info.shape + (1, 1))
        poison, mask = _new(np.where(bad, np.nan, 0).astype(a._data.dtype)), _new(bad)
        # the singular matrices made NaN times A (their results and gradients NaN, as torch's; the others' gradient
        # through that term 0 * g, not NaN * 0), the others solved
        a = where(mask, _new(np.eye(a.shape[-1], dtype=a._data.dtype)), a) + where(mask, a, 0.0) * poison
        return _solve_ex_type(solve(a, B, left=left), _new(info))
    return _solve_ex_type(x, _new(np.zeros(a.shape[:-2], np.int32)))


def cond(A, p=None, *, out=None):
    """The condition number in the p-norm: S_max / S_min for p None or 2 (S_min / S_max for -2), else
    matrix_norm(A, p) * matrix_norm(inv(A), p) (square A)."""
    x = _tensor(A)
    if x.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p in (None, 2, -2):
        s = svdvals(x)
        big, small = s[..., :1], s[..., -1:]
        return (big / small if p != -2 else small / big).squeeze(-1)
    if x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"linalg.cond: A must be batches of square matrices, but they are {x.shape[-2]} by "
                           f"{x.shape[-1]} matrices")
    return matrix_norm(x, p) * matrix_norm(inv(x), p)


def tensorinv(A, ind=2, *, out=None):
    """The inverse of A read as a matrix of its first ind dimensions by the rest, shaped back (rest + first)."""
    x = _tensor(A)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(x.shape[:ind]), math.prod(x.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(x.reshape(rows, cols)).reshape(*x.shape[ind:], *x.shape[:ind])


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B: A (with `dims` moved last) read as a matrix of B's size."""
    a, b = _tensor(A), _tensor(B)
    if dims is not None:
        dims = [_dim(d, a.ndim) for d in dims]
        a = a.movedim(dims, list(range(a.ndim - len(dims), a.ndim)))
    rest = a.shape[b.ndim:]
    if math.prod(rest) != math.prod(b.shape):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {math.prod(rest)} != {math.prod(b.shape)}")
    x = solve(a.reshape(math.prod(b.shape), math.prod(rest)), b.reshape(-1))
    return x.reshape(*rest)


def vecdot(x, y, *, dim=-1, out=None):
    """sum(x * y) over dim (real inputs: conj is the identity), broadcasting."""
    return (_tensor(x) * _tensor(y)).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return _tensor(A).diagonal(offset, dim1, dim2)


def vander(x, *, N=None):
    """Columns x^0, x^1, ..., x^(N-1) (N defaults to x's last size), as running products (torch's cumprod)."""
    x = _tensor(x)
    if x.ndim == 0:  # (torch reads a 0-d x as one element: a (1, N) result)
        x = x.reshape(1)
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    cols, power = [x * 0 + 1], x
    for _ in range(1, n):
        cols.append(power)
        power = power * x
    return stack(cols[:n], -1)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """'fro' (the square root of the sum of squares), 1 / -1 (the largest / smallest column sum of |A|), inf / -inf
    (rows'); 'nuc', 2 and -2: the sum, largest and smallest of the singular values."""
    return _matrix_norm(A, ord, dim, keepdim, dtype=dtype)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm over one dimension (or all, flattened, when neither ord nor dim is given), a matrix norm over
    two (or of a 2-d A when ord is given), as torch.linalg.norm chooses."""
    x = _tensor(A)
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None and ord is not None and x.dim() not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{x.dim()}D.")
    if dim is not None and len(dim) == 2 or dim is None and ord is not None and x.dim() == 2:
        return matrix_norm(x, "fro" if ord is None else ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(x, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def _solve_ex_type():
    cls = collections.namedtuple("linalg_solve_ex", ["result", "info"])
    cls.__repr__ = lambda self: f"torch.return_types.linalg_solve_ex(\nresult={self.result!r},\ninfo={self.info!r})"
    return cls


_solve_ex_type = _solve_ex_type()


# -- out= ------------------------------------------------------------------------------------------------------
# torch's native linalg kernels: the name their out= refusal (an argument that requires grad) gives
_ATEN = {"cholesky": "linalg_cholesky_ex", "cholesky_ex": "linalg_cholesky_ex", "cross": "linalg_cross",
         "det": "_linalg_det", "eigh": "_linalg_eigh", "eigvalsh": "_linalg_eigh",
         "householder_product": "linalg_householder_product", "inv": "linalg_inv_ex", "inv_ex": "linalg_inv_ex",
         "lu": "linalg_lu", "lu_factor": "linalg_lu_factor_ex", "lu_factor_ex": "linalg_lu_factor_ex",
         "lu_solve": "linalg_lu_solve", "matmul": "matmul", "matrix_power": "matmul", "multi_dot": "mm",
         "pinv": "linalg_pinv", "qr": "linalg_qr", "slogdet": "_linalg_slogdet", "solve": "_linalg_solve_ex",
         "solve_ex": "_linalg_solve_ex", "solve_triangular": "linalg_solve_triangular", "svd": "_linalg_svd",
         "svdvals": "_linalg_svd", "vecdot": "sum", "vector_norm": "linalg_vector_norm"}
# an out of another dtype than the result's: torch's refusal ({w}/{g}: C++ type names, {W}/{G}: scalar type names),
# or (None) a cast; the default is the native kernels' refusal
_DTYPE = {"matrix_norm": "linalg.matrix_norm expected out tensor dtype {W} but got: {G}",
          "norm": "linalg.norm expected out tensor dtype {W} but got: {G}",
          "multi_dot": "multi_dot(): expected out tensor to have dtype {w} but got {g}",
          "solve_triangular": "expected scalar type {W} but found {G}",
          "vecdot": "linalg.vecdot: Expected out of dtype{W} but found {G}",
          "cond": None, "householder_product": None, "matrix_rank": None, "pinv": None, "tensorinv": None,
          "tensorsolve": None}
_DEFAULT_DTYPE = "Expected out tensor to have dtype {w}, but got {g} instead"
_NAMES = sorted(_ATEN.keys() | _DTYPE.keys() | {"ldl_factor", "ldl_factor_ex", "ldl_solve"})


def _tensors(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _tensors(v)
        elif isinstance(v, Tensor):
            yield v


def _with_out(fn, name):
    """fn with torch.linalg's out= (a Tensor, or a tuple for a tuple result): the result computed without grad,
    then written into out (resized as torch resizes it), with torch's refusals."""
    aten, message = _ATEN.get(name), _DTYPE.get(name, _DEFAULT_DTYPE)

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if aten is not None and is_grad_enabled() and any(
                t.requires_grad for t in _tensors((*args, *kwargs.values(), *outs))):
            raise RuntimeError(f"{aten}(): functions with out=... arguments don't support automatic "
                               f"differentiation, but one of the arguments requires grad.")
        with no_grad():
            result = fn(*args, **kwargs)
        results = result if isinstance(result, tuple) else (result,)
        if len(outs) != len(results) or isinstance(result, tuple) != isinstance(out, (tuple, list)):
            raise TypeError(f"linalg_{name}(): argument 'out' must be "
                            f"{'tuple of Tensors' if isinstance(result, tuple) else 'Tensor'}, not "
                            f"{type(out).__name__}")
        for o, r in zip(outs, results):
            if message is not None and isinstance(o, Tensor) and o._data.dtype != r._data.dtype:
                w, g = r._data.dtype, o._data.dtype
                raise RuntimeError(message.format(w=_dtype.cpp_type_name(w), g=_dtype.cpp_type_name(g),
                                                  W=_dtype.scalar_type_name(w), G=_dtype.scalar_type_name(g)))
            write_out(o, r, name)
        return type(result)(*outs) if isinstance(result, tuple) else out
    return wrapper


for _name in _NAMES:
    globals()[_name] = _with_out(globals()[_name], _name)
del _name
