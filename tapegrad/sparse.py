"""torch.sparse: the sparse COO functions tapegrad has (see tapegrad/ops/sparse.py for what is covered)."""
from .ops.sparse import check_sparse_tensor_invariants, log_softmax, softmax, spdiags, sparse_sum as sum  # noqa: F401
from .ops.sparse import spmm, sparse_coo_tensor as _coo, sparse_grad_mm as mm  # noqa: F401
from .tensor import Tensor


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * mat + alpha * (mat1 @ mat2), mat1 sparse (a sparse leaf's gradient sparse, as torch.sparse.mm's)."""
    return mat * beta + mm(mat1, mat2) * alpha


def as_sparse_gradcheck(gradcheck):
    """torch.sparse.as_sparse_gradcheck: gradcheck (or a partial of it) for functions of sparse COO tensors. Each
    sparse input that requires grad is passed as its values (every element, unless masked=True: its own entries),
    rebuilt with its indices inside the function; each sparse output that requires grad is made dense."""
    def gradcheck_with_sparse_support(func, inputs, **kwargs):
        masked = kwargs.pop("masked", False)
        marker = "__STRIDED_REPRESENTATION__"
        flat = []
        for obj in inputs if isinstance(inputs, (list, tuple)) else (inputs,):
            if isinstance(obj, Tensor) and obj.is_sparse and obj.requires_grad:
                if not masked:   # (every element an entry: the unspecified ones as zeros)
                    dense = obj.to_dense()
                    obj = dense.sparse_mask(dense.detach().new_ones(dense.shape).to_sparse())
                meta = {"shape": obj.shape, "indices": obj._indices(), "is_coalesced": obj.is_coalesced()}
                flat.extend((marker, meta, obj._values().detach().requires_grad_(True)))
            else:
                flat.append(obj)

        def func_wrapper(*args, **kw):
            args, restored = list(args), []
            while args:
                a = args.pop(0)
                if isinstance(a, str) and a == marker:
                    meta, values = args.pop(0), args.pop(0)
                    a = _coo(meta["indices"], values, size=meta["shape"], is_coalesced=meta["is_coalesced"])
                restored.append(a)
            outputs = func(*restored, **kw)
            many = isinstance(outputs, (list, tuple))
            dense = tuple(o.to_dense(masked_grad=masked) if isinstance(o, Tensor) and o.is_sparse and o.requires_grad
                          else o for o in (outputs if many else (outputs,)))
            return dense if many else dense[0]

        return gradcheck(func_wrapper, tuple(flat), **kwargs)

    return gradcheck_with_sparse_support


__all__ = ["mm", "sum", "addmm", "spmm", "softmax", "log_softmax", "spdiags", "as_sparse_gradcheck",
           "check_sparse_tensor_invariants"]
