"""torch.linalg: the norms (vector_norm; norm and matrix_norm of the orders that need no factorization). The
factorizations, solvers and spectral norms are not implemented: a name torch.linalg has and tapegrad lacks is an
AttributeError naming it, as for a user's misspelling; an order that needs one raises NotImplementedError."""
import math

from .ops import _tensor
from .ops.linalg import vector_norm  # noqa: F401
from .ops._common import _dim

__all__ = ["matrix_norm", "norm", "vector_norm"]


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """'fro' (the square root of the sum of squares), 1 / -1 (the largest / smallest column sum of |A|), inf / -inf
    (rows'); 'nuc', 2 and -2 need a singular value decomposition and raise NotImplementedError."""
    x = _tensor(A)
    if x.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"tapegrad: linalg.matrix_norm of order {ord!r} (it needs a singular value "
                                  f"decomposition)")
    if isinstance(ord, str) and ord != "fro":
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    rows, cols = (_dim(d, x.dim()) for d in dim)
    if ord == "fro":
        return vector_norm(x, 2, (rows, cols), keepdim, dtype=dtype)
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    summed, picked = (rows, cols) if abs(ord) == 1 else (cols, rows)  # 1: columns' sums; inf: rows'
    sums = x.abs().sum(summed, keepdim=True)
    out = sums.amax(picked, keepdim=True) if ord > 0 else sums.amin(picked, keepdim=True)
    return out if keepdim else out.squeeze(max(rows, cols)).squeeze(min(rows, cols))


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
