"""torch's shape functions composed of recorded ops (rot90, tensor_split, the stacks, kron, block_diag, ...),
its fused products (baddbmm, addmv, addr, ...) and distances (cdist, pdist, dist, renorm); and the torch.X
aliases of nn.functional's functions that live in ops/. No rules of their own: a gradient is that of the ops
each calls."""
import builtins
import itertools
import math
import numbers
import warnings

import numpy as np

from .. import _dtype
from ..creation import _space_bounds
from ..device import cpu_only as _cpu_only
from ..tensor import Tensor, _new
from ._common import _autocast_lower, _dim, _sizes, _tensor, _to_dtype, autocast_state
from .conv import _batch_norm
from .elementwise import where
from .layers import instance_norm as _instance_norm
from .layout import diag, triu_indices
from . import sparse as _sparse
from .linalg import bmm, dot, matmul, mv, outer, vector_norm
from .metric_loss import cosine_embedding_loss as _cosine_embedding_loss
from .padding import group_norm as _group_norm, prelu
from .reduce import sum_to_shape
from .shape import cat, flip, index_select, masked_fill, movedim, stack

__all__ = ["addbmm", "addmv", "addr", "atleast_1d", "atleast_2d", "atleast_3d", "baddbmm", "batch_norm",
           "block_diag", "cartesian_prod", "cdist", "chain_matmul", "column_stack", "combinations",
           "cosine_embedding_loss", "diagflat", "dist", "dsplit", "dstack", "fliplr", "flipud", "group_norm", "hsplit",
           "instance_norm", "is_same_size", "kron", "logspace", "moveaxis", "narrow_copy", "pdist", "prelu", "ravel",
           "renorm", "rot90", "row_stack", "split_with_sizes", "tensor_split", "tensordot", "trace", "vander",
           "vdot", "vsplit"]
INPLACE = ("baddbmm", "addbmm", "addmv", "addr", "renorm")

moveaxis = movedim


# -- flips and rotations --------------------------------------------------------------------------------------------
def rot90(input, k=1, dims=(0, 1)):
    """input rotated by k quarter turns in the plane of dims, from dims[0] towards dims[1]."""
    x = _tensor(input)
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.dim()}")
    d0, d1 = _dim(dims[0], x.dim()), _dim(dims[1], x.dim())
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return flip(x, [d1]).transpose(d0, d1)
    if k == 2:
        return flip(x, [d0, d1])
    if k == 3:
        return flip(x, [d0]).transpose(d0, d1)
    return x.clone()


def fliplr(input):
    x = _tensor(input)
    if x.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(x, [1])


def flipud(input):
    x = _tensor(input)
    if x.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(x, [0])


# -- splits ---------------------------------------------------------------------------------------------------------
def tensor_split(input, indices_or_sections, dim=0):
    """Views along dim: `sections` parts (the first size % sections one longer), or the parts between indices
    (clipped to the size, as Python slices)."""
    x = _tensor(input)
    d = _dim(dim, x.dim())
    n = x.shape[d]
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec._data.dtype.kind not in "iu" or spec.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               "one-dimensional tensor, but got a tensor with " f"{spec.dim()} dims")
        spec = int(spec._data) if spec.dim() == 0 else [int(i) for i in spec._data]
    if isinstance(spec, numbers.Integral):
        if spec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
        q, r = divmod(n, spec)
        bounds = list(itertools.accumulate([0] + [q + 1] * r + [q] * (spec - r)))
    else:
        bounds = [0] + [min(max(int(i), 0), n) for i in spec] + [n]
    return tuple(x.narrow(d, a, max(b - a, 0)) for a, b in zip(bounds[:-1], bounds[1:]))


def _split_along(name, x, spec, d, min_dims, method=False):
    if not (isinstance(spec, (numbers.Integral, Tensor)) and not isinstance(spec, bool) or isinstance(spec, (list, tuple))
            and all(isinstance(i, numbers.Integral) for i in spec)):
        got, lead = type(spec).__name__, ("" if method else "Tensor, ")
        signatures = ("" if method else "Tensor input, ", "int sections", "tuple of ints indices")
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({lead}{got}), but expected one "
                        f"of:\n" + "".join(f" * ({signatures[0]}{sig})\n      didn't match because some of the "
                                            f"arguments have invalid types: ({lead}!{got}!)\n"
                                            for sig in signatures[1:]))
    if x.dim() < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {x.dim()} dimensions!")
    if isinstance(spec, numbers.Integral):
        if spec == 0 or x.shape[d] % spec:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the dimension "
                               f"{x.shape[d]} is not divisible by the split_size {spec}!")
    return tensor_split(x, spec, d)


def hsplit(input, indices_or_sections):
    x = _tensor(input)
    return _split_along("hsplit", x, indices_or_sections, 1 if x.dim() >= 2 else 0, 1)


def vsplit(input, indices_or_sections):
    return _split_along("vsplit", _tensor(input), indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    return _split_along("dsplit", _tensor(input), indices_or_sections, 2, 3)


def split_with_sizes(input, split_sizes, dim=0):
    x = _tensor(input)
    d = _dim(dim, x.dim())
    sizes = [int(s) for s in split_sizes]
    if builtins.sum(sizes) != x.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {x.shape[d]} (input tensor's size "
                           f"at dimension {d}), but got split_sizes={sizes}")
    return x.split(sizes, d)


def narrow_copy(input, dim, start, length):
    if getattr(input, "is_sparse", False):  # (a sparse COO tensor: ops/sparse.py's)
        return _sparse.narrow_copy(input, dim, start, length)
    x = _tensor(input)
    if not x.dim():
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if isinstance(dim, int) and dim >= x.dim():  # (torch's narrow_copy checks this one itself)
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an enhancement request "
                           "to PyTorch.)")
    d = _dim(dim, x.dim())
    n, start, length = x.shape[d], int(start), int(length)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    start = start + n if start < 0 else start
    if length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return x.narrow(d, start, length).clone()


# -- stacks and shapes ----------------------------------------------------------------------------------------------
def _atleast(shape_of, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_atleast(shape_of, (t,)) for t in tensors[0])
    if len(tensors) != 1:
        return tuple(_atleast(shape_of, (t,)) for t in tensors)
    x = _tensor(tensors[0])
    shape = shape_of(tuple(x.shape))
    return x if shape == tuple(x.shape) else x.reshape(shape)


def atleast_1d(*tensors):
    return _atleast(lambda s: s or (1,), tensors)


def atleast_2d(*tensors):
    return _atleast(lambda s: (1,) * (2 - len(s)) + s if len(s) < 2 else s, tensors)


def atleast_3d(*tensors):
    """0-d: (1, 1, 1); (n,): (1, n, 1); (m, n): (m, n, 1)."""
    return _atleast(lambda s: {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}.get(len(s), s), tensors)


def _non_empty(name, tensors):
    tensors = tuple(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def dstack(tensors):
    tensors = _non_empty("dstack", tensors)
    return cat(atleast_3d(tuple(tensors)), 2)


def column_stack(tensors):
    """The tensors as columns: 0-d and 1-d ones become (n, 1), then hstack."""
    cols = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in map(_tensor, _non_empty("column_stack", tensors))]
    return cat(cols, 1)


def row_stack(tensors):
    tensors = _non_empty("vstack", tensors)
    return cat(atleast_2d(tuple(tensors)), 0)


def ravel(input):
    return _tensor(input).reshape(-1)


def diagflat(input, offset=0):
    return diag(_tensor(input).reshape(-1), offset)


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def _sum_to_size(self, *size):
    """self summed down to size (which self's shape must broadcast to)."""
    size = _sizes(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    if not size:  # (torch sums whole for (), a 0-d self too: an integer or bool one into int64, as sum)
        return self.sum()
    if shape != size and not _dtype.is_float(self._data.dtype):
        return sum_to_shape(self.long(), size)
    return sum_to_shape(self, size)


def kron(input, other):
    """The Kronecker product: result[i * m + k] = input[i] * other[k] along each dimension (the shorter operand
    padded with leading ones)."""
    a, b = _tensor(input), _tensor(other)
    n = max(a.dim(), b.dim())
    sa, sb = (1,) * (n - a.dim()) + tuple(a.shape), (1,) * (n - b.dim()) + tuple(b.shape)
    ea = a.reshape([v for s in sa for v in (s, 1)])
    eb = b.reshape([v for s in sb for v in (1, s)])
    return (ea * eb).reshape([p * q for p, q in zip(sa, sb)])


def cartesian_prod(*tensors):
    """The rows of every combination of one element from each 1-d tensor (itertools.product's order)."""
    xs = [_tensor(t) for t in tensors]
    for x in xs:
        if x.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    if len(xs) == 1:
        return xs[0]
    shape = [x.shape[0] for x in xs]
    grids = [x.reshape([-1 if k == i else 1 for k in range(len(xs))]).expand(shape) for i, x in enumerate(xs)]
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The rows of input's r-element combinations (itertools.combinations' order)."""
    x = _tensor(input)
    if x.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _new(np.empty(0, x._data.dtype))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(x.shape[0]), r)), np.int64).reshape(-1, r)
    return stack([index_select(x, 0, _new(rows[:, j].copy())) for j in range(r)], 1)


def block_diag(*tensors):
    """The tensors (0-d as 1x1, 1-d as one row) along the diagonal of one matrix, zeros elsewhere."""
    blocks = []
    for i, t in enumerate(map(_tensor, tensors)):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        blocks.append(t.reshape(1, -1) if t.dim() == 1 else t.reshape(1, 1) if t.dim() == 0 else t)
    if not blocks:
        return _new(np.empty((1, 0), _dtype.default_float.np))  # (torch's shape for no blocks)
    dt = _dtype.result_type(*(b._data for b in blocks))
    cols = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        h, w = b.shape
        parts = [_new(np.zeros((h, left), dt)), _to_dtype(b, dt), _new(np.zeros((h, cols - left - w), dt))]
        rows.append(cat(parts, 1))
        left += w
    return cat(rows, 0)


def vander(x, N=None, increasing=False):
    """Columns x ** 0, ..., x ** (N - 1) (decreasing powers unless increasing)."""
    x = _tensor(x)
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x._data.dtype == np.bool_:
        x = _new(x._data.astype(np.int64))
    elif x._data.dtype.kind in "iu":
        x = _new(x._data.astype(np.int64))
    powers = _new(np.arange(n, dtype=x._data.dtype if _dtype.is_float(x._data.dtype) else np.int64))
    out = x.unsqueeze(1) ** powers
    return out if increasing else flip(out, [1])


def logspace(start, end, steps, base=10.0, dtype=None, layout=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps), in dtype (default: the default float dtype)."""
    _cpu_only(device, "logspace")
    start, end, steps = _space_bounds("logspace", start, end, steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    np_dt = _dtype.default_float.np if dtype is None else _dtype.to_numpy_dtype(dtype)
    exps = np.linspace(float(start), float(end), steps, dtype=np.float64)
    out = np.power(float(base), exps)
    t = _new(out.astype(np_dt) if _dtype.is_float(np_dt) else out.astype(np_dt))
    return t.requires_grad_(True) if requires_grad else t


# -- products -------------------------------------------------------------------------------------------------------
def _scaled_sum(input, product, beta, alpha, name=None):
    """beta * input + alpha * product, as torch's addmm family: input is not read when beta is 0. Of integer (or
    bool) tensors, beta and alpha are converted to the dtype first, as torch's Scalars (truncated: 0.6 is 0; addr
    refuses a float), and a bool result is (beta and input) or (alpha and product)."""
    x = _tensor(input)
    if x._data.dtype.kind in "biu" and product._data.dtype.kind in "biu":
        for arg, v in (("beta", beta), ("alpha", alpha)):
            if name == "addr" and isinstance(v, float):
                raise RuntimeError(f"For integral input tensors, argument {arg} must not be a floating point number.")
        if x._data.dtype == np.bool_ and product._data.dtype == np.bool_:
            value = np.logical_or(np.logical_and(x._data, bool(beta)), np.logical_and(product._data, bool(alpha)))
            return _new(np.ascontiguousarray(value))
        beta, alpha = int(beta), int(alpha)
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # (input's gradient is zeros, as torch's; its values, NaN included, are not read)
        return masked_fill(x, _new(np.ones(x._data.shape, np.bool_)), 0) + product
    return (x if beta == 1 else x * beta) + product


def autocast_input(input):
    """addmm, baddbmm and addbmm are CPU autocast "lower precision" ops: their input is cast with the product's
    operands (else it promotes the sum back to float32)."""
    return _autocast_lower(_tensor(input))[0] if autocast_state.dtype is not None else input


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batched."""
    return _scaled_sum(autocast_input(input), bmm(batch1, batch2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * sum_b batch1[b] @ batch2[b]."""
    return _scaled_sum(autocast_input(input), bmm(batch1, batch2).sum(0), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    v1, v2 = _tensor(vec1), _tensor(vec2)
    if v1.dim() != 1 or v2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {v1.dim()}-D" if v1.dim() != 1 else
                           f"addr: Expected 1-D argument vec2, but got {v2.dim()}-D")
    return _scaled_sum(input, outer(v1, v2), beta, alpha, "addr")


_warned_chain_matmul = [False]


def chain_matmul(*matrices):
    """matrices[0] @ matrices[1] @ ... (torch's deprecated alias of linalg.multi_dot; multiplied left to right)."""
    if not _warned_chain_matmul[0]:
        _warned_chain_matmul[0] = True
        warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                      "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                      "multiple parameters.", UserWarning)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    out = _tensor(matrices[0])
    if len(matrices) == 1:
        return out.clone()
    for m in matrices[1:]:
        out = matmul(out, m)
    return out


def vdot(input, other):
    a, b = _tensor(input), _tensor(other)
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    return dot(a, b)


def tensordot(a, b, dims=2):
    """Contract a's dims[0] with b's dims[1] (an int n: a's last n with b's first n)."""
    a, b = _tensor(a), _tensor(b)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, numbers.Integral):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, numbers.Integral) else list(d) for d in dims)
    da, db = [_dim(d, a.dim()) for d in da], [_dim(d, b.dim()) for d in db]
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    for i, j in zip(da, db):  # (a size 1 against another: torch sums the other side's dim first, a broadcast)
        if b.shape[j] == 1 and a.shape[i] != 1:
            a = a.sum(i, keepdim=True, dtype=a.dtype)
        elif a.shape[i] == 1 and b.shape[j] != 1:
            b = b.sum(j, keepdim=True, dtype=b.dtype)
        elif a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} "
                               f"and second has size {b.shape[j]} in dim {j}")
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    ma = a.permute(fa + da).reshape(-1, k) if a.dim() else a.reshape(1, 1)
    mb = b.permute(db + fb).reshape(k, -1) if b.dim() else b.reshape(1, 1)
    return matmul(ma, mb).reshape([a.shape[d] for d in fa] + [b.shape[d] for d in fb])


def trace(input):
    """The sum of a matrix's diagonal (integer matrices give int64, as torch's sum)."""
    x = _tensor(input)
    if x.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.dim()}")
    return x.diagonal().sum()


# -- distances ------------------------------------------------------------------------------------------------------
def _pnorm(diff, p, dim):
    return vector_norm(diff, p, dim)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 and each row of x2 (batched over leading dims)."""
    a, b = _tensor(x1), _tensor(x2)
    if a.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.dim()}D")
    if b.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {b.dim()}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    return _pnorm(a.unsqueeze(-2) - b.unsqueeze(-3), p, -1)


def pdist(input, p=2):
    """The p-norm distances between the rows of a matrix, i < j, in row-major order."""
    x = _tensor(input)
    if x.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = triu_indices(x.shape[0], x.shape[0], 1)
    return _pnorm(index_select(x, 0, i) - index_select(x, 0, j), p, -1)


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), over all elements."""
    return _pnorm(_tensor(input) - other, p, None)


def renorm(input, p, dim, maxnorm):
    """Each slice along dim whose p-norm exceeds maxnorm scaled to norm maxnorm (by maxnorm / (norm + 1e-7),
    as torch)."""
    x = _tensor(input)
    if x.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.dim()} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    d = _dim(dim, x.dim())
    norms = vector_norm(x, p, [k for k in range(x.dim()) if k != d], keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), _new(np.ones((), x._data.dtype)))
    return x * factor


# -- torch.X aliases of nn.functional: torch's own argument order ----------------------------------------------------
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return _group_norm(input, num_groups, weight, bias, eps)


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.cosine_embedding_loss (aten's): reduction as torch's enum, 0 none (its default here), 1 mean, 2 sum."""
    if not isinstance(reduction, numbers.Integral):
        raise TypeError(f"cosine_embedding_loss(): argument 'reduction' must be int, not {type(reduction).__name__}")
    return _cosine_embedding_loss(input1, input2, target, margin, reduction=_REDUCTIONS[reduction])


Tensor.rot90 = rot90
Tensor.fliplr = fliplr
Tensor.flipud = flipud
Tensor.tensor_split = tensor_split
Tensor.hsplit = lambda self, indices_or_sections: _split_along(  # (a method's TypeError names no Tensor argument)
    "hsplit", self, indices_or_sections, 1 if self.dim() >= 2 else 0, 1, method=True)
Tensor.vsplit = lambda self, indices_or_sections: _split_along("vsplit", self, indices_or_sections, 0, 2, method=True)
Tensor.dsplit = lambda self, indices_or_sections: _split_along("dsplit", self, indices_or_sections, 2, 3, method=True)
Tensor.split_with_sizes = split_with_sizes
Tensor.narrow_copy = narrow_copy
Tensor.moveaxis = movedim
Tensor.ravel = ravel
Tensor.diagflat = diagflat
Tensor.is_same_size = is_same_size
Tensor.sum_to_size = _sum_to_size
Tensor.kron = kron
Tensor.baddbmm = baddbmm
Tensor.addbmm = addbmm
Tensor.addmv = addmv
Tensor.addr = addr
Tensor.vdot = vdot
Tensor.trace = trace
Tensor.dist = dist
Tensor.renorm = renorm
Tensor.prelu = prelu
