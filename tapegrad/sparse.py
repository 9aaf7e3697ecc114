"""torch.sparse: the sparse COO functions tapegrad has (see tapegrad/ops/sparse.py for what is covered)."""
from .ops.sparse import check_sparse_tensor_invariants, mm, sparse_sum as sum, spmm  # noqa: F401
from .ops.sparse import matmul as _matmul


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2), mat1 sparse."""
    return mat * beta + _matmul(mat1, mat2) * alpha


__all__ = ["mm", "sum", "addmm", "spmm", "check_sparse_tensor_invariants"]
