"""Sparse COO tensors, as far as graph networks use them: build (sparse_coo_tensor, Tensor.to_sparse), read
(indices, values, to_dense, coalesce), and multiply with a dense matrix (mm, spmm, matmul, @, torch.sparse.mm)
from either side, with gradients with respect to the dense operand and the values; and the gradient that
embedding(sparse=True) gives its weight (`sparse_rows`), with its accumulation into `.grad` (`accumulate_`:
torch's merge of two entry lists) and `zero_`.

A SparseTensor holds its indices (an int64 array, sparse_dim x nnz), its values (a Tensor, which may carry a
history: the gradient with respect to the values flows through it) and its size. It has no dense storage:
every other op raises torch's NotImplementedError for the SparseCPU backend, never a silent densification.
Hybrid tensors (values with dense dims) are made only by embedding's sparse gradient (read, coalesce, to_dense,
add, scalar mul/div, neg; the rest raises); sparse tensors that require grad themselves are not supported.
"""
import functools
import math
import warnings

import numpy as np

from .. import _dtype, registry
from ..tensor import as_array, _new, Size, Tensor
from ._common import _dim, OPS, _record, _tensor, _to_dtype
from .linalg import matmul as _dense_matmul, mm as _dense_mm
from .shape import cat, _gather, index_select, scatter_add, scatter_flat
from .reduce import sum as dense_sum
from .. import _format
from .._warnings import user_stacklevel


class layout:
    """torch.layout: torch.strided (dense) or torch.sparse_coo."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _unsupported(name):
    return NotImplementedError(
        f"Could not run 'aten::{name}' with arguments from the 'SparseCPU' backend. tapegrad supports on sparse "
        f"COO tensors: mm/spmm/matmul with a dense matrix, to_dense, coalesce, indices/values, add to a dense "
        f"tensor, scalar mul/div, neg, t/transpose, sum; call .to_dense() first for the rest.")


class SparseTensor(Tensor):
    """A 2-or-more-D COO tensor (see the module docstring); made by sparse_coo_tensor and Tensor.to_sparse."""

    is_sparse = True
    layout = sparse_coo

    @property
    def _data(self):
        # every dense op reads _data: that is where a sparse operand is refused
        raise _unsupported("<dense op>")

    @_data.setter
    def _data(self, value):
        raise _unsupported("<dense op>")

    # -- identity --------------------------------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._size)

    def size(self, dim=None):
        return self.shape if dim is None else self._size[_dim(dim, len(self._size))]

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def ndim(self):
        return len(self._size)

    def dim(self):
        return len(self._size)

    def numel(self):
        return math.prod(self._size)

    nelement = numel

    def __len__(self):
        return self._size[0]

    @property
    def requires_grad(self):
        return self._vals._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value:
            raise NotImplementedError("tapegrad: a sparse tensor that requires grad itself is not supported; give "
                                      "its values requires_grad=True instead")

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self):
        return self._vals.is_leaf

    @property
    def grad_fn(self):
        return None

    @property
    def grad(self):
        return None

    def __repr__(self):
        suffixes = ["requires_grad=True"] if self._vals._requires_grad else []
        return _format.format_sparse(self._ind, self._vals._data, self._size, repr(self.dtype),
                                     self.dtype in (_dtype.float32, _dtype.int64, _dtype.bool), suffixes)

    __str__ = __repr__

    def __format__(self, spec):
        return object.__format__(self, spec)

    # -- COO accessors -------------------------------------------------------------------------------------------
    def _indices(self):
        return _new(self._ind)

    def _values(self):
        return self._vals

    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return _new(self._ind)

    def values(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def _nnz(self):
        return self._ind.shape[1]

    def sparse_dim(self):
        return self._ind.shape[0]

    def dense_dim(self):
        return len(self._size) - self._ind.shape[0]

    def is_coalesced(self):
        return self._coalesced

    def zero_(self):
        return zero_sparse_(self)

    def coalesce(self):
        """Duplicates summed, indices sorted in row-major order (differentiable in the values)."""
        if self._coalesced:
            return self
        sparse_size, dense_size = self._size[:self.sparse_dim()], self._size[self.sparse_dim():]
        flat = np.ravel_multi_index(tuple(self._ind), sparse_size) if self._ind.size else np.zeros(0, np.int64)
        unique, inverse = np.unique(flat, return_inverse=True)
        ind = np.stack(np.unravel_index(unique, sparse_size)).astype(np.int64).reshape(len(sparse_size), -1)
        vals = scatter_flat(self._vals, _elements(inverse.reshape(-1).astype(np.int64), dense_size),
                            (unique.size,) + dense_size)
        return _make(ind, vals, self._size, True)

    def to_dense(self, dtype=None, *, masked_grad=None):
        out = self._dense()
        return out if dtype is None else out.to(dtype)

    def _dense(self):
        return scatter_flat(self._vals, self._flat_index(), self._size)

    def _flat_index(self):
        """Each value's position in the row-major dense tensor (of a hybrid tensor: each value's element's)."""
        k = self.sparse_dim()
        if not self._ind.size:
            return np.zeros((0,) + self._size[k:], np.int64)
        return _elements(np.ravel_multi_index(tuple(self._ind), self._size[:k]).astype(np.int64), self._size[k:])

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim argument !=self."
                               f"sparse_dim() is not supported")
        return self

    # -- conversion --------------------------------------------------------------------------------------------
    def to(self, *args, **kwargs):
        vals = self._vals.to(*args, **kwargs)
        return self if vals is self._vals else _make(self._ind, vals, self._size, self._coalesced)

    def float(self):
        return self.to(_dtype.float32)

    def double(self):
        return self.to(_dtype.float64)

    def long(self):
        return self.to(_dtype.int64)

    def int(self):
        return self.to(_dtype.int32)

    def bool(self):
        return self.to(_dtype.bool)

    def cpu(self):
        return self

    def detach(self):
        return _make(self._ind, self._vals.detach(), self._size, self._coalesced)

    def clone(self, *, memory_format=None):
        return _make(self._ind.copy(), self._vals.clone(), self._size, self._coalesced)

    def numpy(self, force=False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def _no_storage(self, *args, **kwargs):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    tolist = data_ptr = __array__ = _no_storage

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.to_dense().item()

    def reshape(self, *shape):
        raise RuntimeError("reshape is not implemented for sparse tensors")

    def is_contiguous(self, memory_format=None):
        raise RuntimeError("Tensors of type SparseTensorImpl do not have is_contiguous")

    def contiguous(self, memory_format=None):
        return self

    def is_floating_point(self):
        return self._vals.is_floating_point()

    def element_size(self):
        return self._vals.element_size()

    # -- arithmetic ------------------------------------------------------------------------------------------------
    def t(self):
        if self.ndim != 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                               f"{self.ndim} sparse and 0 dense dimensions")
        return self.transpose(0, 1)

    def transpose(self, dim0, dim1):
        if self.dense_dim():
            raise _unsupported("transpose (a hybrid tensor)")
        d0, d1 = _dim(dim0, self.ndim), _dim(dim1, self.ndim)
        order = list(range(self.ndim))
        order[d0], order[d1] = d1, d0
        size = tuple(self._size[d] for d in order)
        return _make(np.ascontiguousarray(self._ind[order]), self._vals, size, False)

    @property
    def T(self):
        return self.t()

    def __neg__(self):
        return _make(self._ind, -self._vals, self._size, self._coalesced)

    neg = negative = __neg__

    def mul(self, other):
        if isinstance(other, SparseTensor):
            raise _unsupported("mul.Tensor (sparse * sparse)")
        if isinstance(other, Tensor) and other.ndim:
            raise _unsupported("mul.Tensor (sparse * dense)")
        return _make(self._ind, self._vals * other, self._size, self._coalesced)

    __mul__ = __rmul__ = multiply = mul

    def div(self, other):
        if isinstance(other, Tensor) and other.ndim:
            raise _unsupported("div.Tensor (sparse / dense)")
        return _make(self._ind, self._vals / other, self._size, self._coalesced)

    __truediv__ = true_divide = divide = div

    def add(self, other, *, alpha=1):
        if isinstance(other, SparseTensor):
            if other.shape != self.shape:
                raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                                   f"{list(self.shape)} while other has size {list(other.shape)} (FYI: op2-sparse "
                                   f"addition does not currently support broadcasting)")
            vals = cat([self._vals, other._vals if alpha == 1 else other._vals * alpha])
            return _make(np.concatenate([self._ind, other._ind], 1), vals, self._size, False)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")

    __add__ = add

    def __radd__(self, other):   # dense + sparse: a dense result
        if not isinstance(other, Tensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        return _dense_plus(other, self, False)

    def sub(self, other, *, alpha=1):
        return self.add(-other if isinstance(other, SparseTensor) else other, alpha=alpha)

    __sub__ = sub

    def __rsub__(self, other):
        if not isinstance(other, Tensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        return _dense_plus(other, self, True)

    def sum(self, dim=None, keepdim=False, dtype=None):
        if keepdim:
            raise _unsupported("sum.dim_IntList (keepdim=True)")
        return sparse_sum(self, dim, dtype=dtype)

    @property
    def data(self):
        return self.detach()

    def mm(self, mat2):
        return mm(self, mat2)

    def matmul(self, other):
        return matmul(self, other)

    __matmul__ = matmul

    def __rmatmul__(self, other):
        return matmul(other, self)

    def smm(self, mat2):
        return mm(self, mat2)


def _dense_plus(dense, sparse, negate):
    """dense ± sparse, as torch's add_out_dense_sparse: each value added in turn into a copy of the dense
    tensor, in the promoted dtype (a scatter_add, so duplicates round as torch's do)."""
    if tuple(dense.shape) != sparse._size:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(dense.shape)} while other has size {list(sparse._size)} (FYI: dense-sparse "
                           f"addition does not currently support broadcasting)")
    dt = _dtype.result_type(dense._data, sparse._vals._data)
    vals = _to_dtype(sparse._vals, dt)
    if negate:
        vals = -vals
    flat = _new(sparse._flat_index().reshape(-1))
    return scatter_add(_to_dtype(dense, dt).reshape(-1), 0, flat, vals.reshape(-1)).reshape(sparse._size)


def _make(ind, vals, size, coalesced):
    t = Tensor.__new__(SparseTensor)
    t.__dict__.update(_ind=ind, _vals=vals, _size=tuple(int(s) for s in size), _coalesced=coalesced)
    return t


def _refuse_dense_methods():
    """Every Tensor method SparseTensor does not define raises torch's error naming it (rather than failing
    somewhere inside with an unrelated message)."""
    own = set(SparseTensor.__dict__)
    keep = {"__init__", "__new__", "__class__", "__getattribute__", "__setattr__", "__delattr__", "__dir__",
            "__hash__", "__reduce__", "__reduce_ex__", "__sizeof__", "__subclasshook__",
            "__init_subclass__", "__str__", "__format__", "__getstate__", "__setstate__", "__deepcopy__",
            "__bool__", "__iter__", "__len__", "__index__", "__int__", "__float__", "type", "backward",
            "register_hook", "retain_grad", "__array_priority__", "__doc__", "__module__", "__dict__", "__weakref__"}
    for name, value in list(vars(Tensor).items()):
        if name in own or name in keep or not callable(value) or isinstance(value, (type, property)):
            continue
        setattr(SparseTensor, name, _refusal(name.strip("_")))


def _refusal(name):
    def method(self, *args, **kwargs):
        raise _unsupported(name)
    method.__name__ = name
    return method


def _elements(positions, dense_size):
    """Each value's elements' positions in the dense tensor, from the values' positions among its sparse dims."""
    if not dense_size:
        return positions
    block = math.prod(dense_size)
    return (positions.reshape((-1,) + (1,) * len(dense_size)) * block
            + np.arange(block, dtype=np.int64).reshape(dense_size))


# -- embedding(sparse=True)'s gradient, and its accumulation into .grad (accumulate.py) ---------------------------
def sparse_rows(rows, values, size):
    """torch's embedding_sparse_backward result: a (V, D) hybrid COO tensor, indices `rows` (1 x nnz, as
    looked up: uncoalesced), values (nnz, D) rows of the output gradient; coalesced when nnz <= 1, as torch's."""
    rows = np.ascontiguousarray(rows, dtype=np.int64).reshape(1, -1)
    vals = values if isinstance(values, Tensor) else _new(values)
    return _make(rows, vals, size, rows.shape[1] <= 1)


def _merged(t_ind, t_vals, s_ind, s_vals, alpha=1):
    """torch's add_out_sparse_contiguous on arrays: t + alpha * s by one pass over both entry lists as if each
    were sorted (an equal index adds into one entry, the smaller is taken first), so its order is torch's."""
    t_keys = list(map(tuple, t_ind.T.tolist())) if t_ind.shape[0] != 1 else t_ind[0].tolist()
    s_keys = list(map(tuple, s_ind.T.tolist())) if s_ind.shape[0] != 1 else s_ind[0].tolist()
    nt, ns = len(t_keys), len(s_keys)
    t_at, s_at, r_from_t, r_from_s = [], [], [], []
    i = j = r = 0
    while i < nt or j < ns:
        if i >= nt:
            take_t, take_s = False, True
        elif j >= ns:
            take_t, take_s = True, False
        else:
            a, b = t_keys[i], s_keys[j]
            take_t, take_s = a <= b, b <= a
        if take_t:
            t_at.append(r)
            r_from_t.append(i)
            i += 1
        if take_s:
            s_at.append(r)
            r_from_s.append(j)
            j += 1
        r += 1
    t_at, s_at = np.asanyarray(t_at, np.int64), np.asanyarray(s_at, np.int64)
    r_from_t, r_from_s = np.asanyarray(r_from_t, np.int64), np.asanyarray(r_from_s, np.int64)
    ind = np.empty((t_ind.shape[0], r), np.int64)
    ind[:, s_at] = s_ind[:, r_from_s]
    ind[:, t_at] = t_ind[:, r_from_t]
    vals = np.zeros((r,) + t_vals.shape[1:], np.result_type(t_vals.dtype, s_vals.dtype))
    vals[t_at] += t_vals[r_from_t]  # (positions unique within each: a plain fancy-index add)
    scaled = s_vals[r_from_s]
    vals[s_at] += scaled if alpha == 1 else scaled * alpha
    return ind, vals


def merged_add(t, s, alpha=1):
    """t + alpha * s of two sparse tensors, unrecorded, with torch's entry order (see _merged)."""
    if s._size != t._size:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size {list(t._size)} "
                           f"while other has size {list(s._size)} (FYI: op2-sparse addition does not currently "
                           f"support broadcasting)")
    ind, vals = _merged(t._ind, t._vals._data, s._ind, s._vals._data, alpha)
    return _make(ind, _new(vals), t._size, t._coalesced and s._coalesced)


def accumulate_(t, s, alpha=1):
    """t += alpha * s in place (torch's AccumulateGrad of a sparse gradient into a sparse .grad, a sparse momentum
    buffer's add_): t keeps its identity."""
    out = merged_add(t, s, alpha)
    t.__dict__.update(_ind=out._ind, _vals=out._vals, _coalesced=out._coalesced)
    t.__dict__.pop("_structure", None)


def add_into_dense(dense, s, alpha=1):
    """dense += alpha * s in place on arrays (torch's add_out_dense_sparse: each value added in turn)."""
    vals = s._vals._data
    np.add.at(dense.reshape(-1), s._flat_index().reshape(-1), (vals if alpha == 1 else vals * alpha).reshape(-1))


def zero_sparse_(t):
    """Tensor.zero_ of a sparse tensor: no entries left (torch resizes it to nnz 0, coalesced)."""
    k = t.sparse_dim()
    t.__dict__.update(_ind=np.zeros((k, 0), np.int64), _coalesced=True,
                      _vals=_new(np.zeros((0,) + t._size[k:], t._vals._data.dtype)))
    t.__dict__.pop("_structure", None)
    return t


# -- constructors ---------------------------------------------------------------------------------------------------
class check_sparse_tensor_invariants:
    """torch.sparse.check_sparse_tensor_invariants: whether constructors check their input (a context manager, a
    decorator, and enable()/disable()/is_enabled() for the process). tapegrad always checks what a kernel relies on
    (indices within the size); the setting decides torch's warning, given once a process to a constructor told
    neither way, that "checks are implicitly disabled"."""
    _state = {"enabled": False, "explicit": False}

    def __init__(self, enable=True):
        self.state = bool(enable)

    @staticmethod
    def is_enabled():
        return check_sparse_tensor_invariants._state["enabled"]

    @staticmethod
    def enable():
        check_sparse_tensor_invariants._state.update(enabled=True, explicit=True)

    @staticmethod
    def disable():
        check_sparse_tensor_invariants._state.update(enabled=False, explicit=True)

    def __enter__(self):
        self.saved = self._state["enabled"]
        self._state.update(enabled=self.state, explicit=True)

    def __exit__(self, *exc):
        self._state["enabled"] = self.saved  # (once told, torch stays told: no warning after the block either)

    def __call__(self, fn):
        @functools.wraps(fn)
        def with_setting(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return fn(*args, **kwargs)
        return with_setting


_warned_implicit = [False]


def _warn_implicit_invariants(check_invariants):
    if check_invariants is None and not check_sparse_tensor_invariants._state["explicit"] and not _warned_implicit[0]:
        _warned_implicit[0] = True  # (torch's TORCH_WARN_ONCE, at the caller's line)
        warnings.warn("Sparse invariant checks are implicitly disabled. Memory errors (e.g. SEGFAULT) will occur when "
                      "operating on a sparse tensor which violates the invariants, but checks incur performance "
                      "overhead. To silence this warning, explicitly opt in or out. See "
                      "`torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance. ", UserWarning,
                      stacklevel=user_stacklevel())


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor; the indices are always checked against the size (torch's check_invariants
    messages): an index outside it would write outside the dense result."""
    _warn_implicit_invariants(check_invariants)
    if device is not None and str(device).partition(":")[0] != "cpu":   # (torch's sparse message differs)
        raise RuntimeError(f"PyTorch is not linked with support for {str(device).partition(':')[0]} devices")
    ind = indices._data if isinstance(indices, Tensor) else np.asanyarray(as_array(indices))
    if ind.dtype.kind not in "iu":
        ind = ind.astype(np.int64)   # (torch converts float indices too)
    ind = np.ascontiguousarray(ind, dtype=np.int64)
    if ind.ndim == 1 and size is not None and len(size) != ind.shape[0]:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {ind.shape[0]}, dense_dim = 0")
    if ind.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(ind.shape)}")
    vals = values if isinstance(values, Tensor) else _new(as_array(values))
    if dtype is not None:
        vals = vals.to(dtype)
    if requires_grad:
        raise NotImplementedError("tapegrad: a sparse tensor that requires grad itself is not supported; give its "
                                  "values requires_grad=True instead")
    if vals.ndim != 1:
        raise NotImplementedError("tapegrad: hybrid sparse COO tensors (values with dense dimensions) are not "
                                  "supported")
    nnz = ind.shape[1]
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {vals.shape[0]}")
    sparse_dim = ind.shape[0]
    if size is None:
        size = tuple(int(m) + 1 for m in ind.max(1)) if nnz else (0,) * sparse_dim
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sparse_dim}, dense_dim = 0")
    if nnz:
        for d in range(sparse_dim):
            lo, hi = int(ind[d].min()), int(ind[d].max())
            if lo < 0:
                raise RuntimeError(f"found negative index {lo} for dim {d}")
            if hi >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                                   f"index {hi}")
    return _make(ind, vals, size, bool(is_coalesced) or nnz <= 1)


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """Tensor.to_sparse: the nonzero elements, coalesced; the values are differentiable."""
    if isinstance(self, SparseTensor):
        return self.to_sparse(sparse_dim)
    if layout is not None and layout is not sparse_coo:
        raise NotImplementedError(f"tapegrad: to_sparse(layout={layout!r}) is not supported")
    x = _tensor(self)
    if sparse_dim is not None and sparse_dim != x.ndim:
        raise NotImplementedError("tapegrad: to_sparse(sparse_dim) with dense dimensions (a hybrid tensor) is not "
                                  "supported")
    if x.ndim == 0:
        raise NotImplementedError("tapegrad: to_sparse of a 0-d tensor is not supported")
    a = x._data
    ind = np.stack(np.nonzero(a)).astype(np.int64).reshape(a.ndim, -1)
    flat = np.flatnonzero(a.reshape(-1)).astype(np.int64)
    vals = _gather(x, flat, OPS["gather_flat"], a.reshape(-1)[flat])
    return _make(ind, vals, a.shape, True)


def to_dense(self, dtype=None, *, masked_grad=None):
    return self.to_dense(dtype) if isinstance(self, SparseTensor) else (self if dtype is None else self.to(dtype))


# -- products ---------------------------------------------------------------------------------------------------------
def _rows_product(rows, cols, vals, m, dense):
    """Σ_e vals[e] * dense[cols[e]] into row rows[e] of an m-row result; rows sorted (ascending)."""
    out = np.zeros((m,) + dense.shape[1:], np.result_type(vals.dtype, dense.dtype))
    if rows.size == 0:
        return out
    contrib = dense[cols] * vals.reshape((-1,) + (1,) * (dense.ndim - 1))
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    out[rows[starts]] = np.add.reduceat(contrib, starts, axis=0)
    return out


class _Product:
    """A sparse matrix's structure for sparse @ dense: its indices in the values' order (ind_rows, ind_cols),
    the same sorted by row (rows, cols: values[order]), and the structure of its transpose."""

    def __init__(self, ind_rows, ind_cols, m, k, transpose=None):
        order = np.lexsort((ind_cols, ind_rows))
        self.order = order if not np.array_equal(order, np.arange(order.size)) else None
        self.ind_rows, self.ind_cols = ind_rows, ind_cols
        self.rows, self.cols = ind_rows[order], ind_cols[order]
        self.m, self.k = m, k
        self._t = transpose

    def transposed(self):
        if self._t is None:
            self._t = _Product(self.ind_cols, self.ind_rows, self.k, self.m, self)
        return self._t

    def values(self, vals):
        return vals if self.order is None else vals[self.order]


def _sparse_mm(structure, vals, dense):
    """structure @ dense with these values (Tensors): recorded with inputs (values, dense)."""
    out = _rows_product(structure.rows, structure.cols, structure.values(vals._data), structure.m, dense._data)
    return _record(OPS["sparse_mm"], out, (vals, dense), aux=structure)


def mm(input, mat2):
    """sparse @ dense (a dense result), dense @ sparse, or dense @ dense (torch.mm)."""
    a_sparse, b_sparse = isinstance(input, SparseTensor), isinstance(mat2, SparseTensor)
    if not a_sparse and not b_sparse:
        return _dense_mm(input, mat2)
    if a_sparse and b_sparse:
        raise _unsupported("mm (sparse @ sparse)")
    if b_sparse:   # dense @ sparse = (sparse.T @ dense.T).T
        a = _tensor(input)
        if a.ndim != 2:
            raise RuntimeError("self must be a matrix")
        return mm(mat2.t(), a.t()).t()   # (its checks and messages are torch's, which also transposes)
    if input.dense_dim():
        raise _unsupported("mm (a hybrid sparse tensor)")
    b = _tensor(mat2)
    _check_mm(input.shape, b.shape, input.ndim, b.ndim)
    structure = input.__dict__.get("_structure")
    if structure is None:
        structure = input.__dict__["_structure"] = _Product(input._ind[0], input._ind[1], *input._size)
    vals = input._vals
    if vals.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(vals.dtype)} but found "
                           f"{_dtype.scalar_type_name(b.dtype)}")
    return _sparse_mm(structure, vals, b)


def _check_mm(sa, sb, na, nb):
    if na != 2:
        raise RuntimeError("self must be a matrix")
    if nb < 2:
        _dim(1, nb)   # torch's IndexError: it reads the dense operand's size(1)
    if nb != 2:
        raise RuntimeError("mat2 must be a matrix")
    if sa[1] != sb[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {sa[1]}, got {sb[0]}")


def spmm(input, mat2):
    return mm(input, mat2)


def matmul(input, other):
    """torch.matmul with a sparse operand: a 2-D sparse matrix times a dense matrix or vector, either side."""
    a_sparse, b_sparse = isinstance(input, SparseTensor), isinstance(other, SparseTensor)
    if not a_sparse and not b_sparse:
        return _dense_matmul(input, other)
    if a_sparse and not b_sparse:
        b = _tensor(other)
        if input.ndim == 2 and b.ndim == 1:
            return mm(input, b.unsqueeze(1)).squeeze(1)
    if b_sparse and not a_sparse:
        a = _tensor(input)
        if other.ndim == 2 and a.ndim == 1:
            return mm(a.unsqueeze(0), other).squeeze(0)
    return mm(input, other)


def sparse_sum(input, dim=None, dtype=None):
    """torch.sparse.sum: every element (a 0-d dense tensor), or over dims (sparse, or dense if every dim goes)."""
    if not isinstance(input, SparseTensor):
        return dense_sum(input, dim, dtype=dtype)
    vals = input._vals if dtype is None else input._vals.to(dtype)
    if dim is None:
        return vals.sum()
    if input.dense_dim():
        raise _unsupported("sum.dim_IntList (a hybrid tensor)")
    dims = sorted({_dim(d, input.ndim) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))})
    keep = [d for d in range(input.ndim) if d not in dims]
    if not keep:
        return vals.sum()
    s = _make(np.ascontiguousarray(input._ind[keep]), vals, tuple(input._size[d] for d in keep), False)
    return s.coalesce()


def _install():
    Tensor.to_sparse = to_sparse
    Tensor.to_dense = to_dense
    Tensor.layout = strided
    _refuse_dense_methods()


# == Declarations ===========================================================================================
def _vjp_sparse_mm(ctx, g, inputs, out):
    """ctx: the sparse structure. d/dvalues[e] = <g[row e], dense[col e]>; d/ddense = sparse.T @ g."""
    vals, dense = inputs
    rows, cols = _new(ctx.ind_rows), _new(ctx.ind_cols)
    gv = (index_select(g, 0, rows) * index_select(dense, 0, cols)).sum(1)
    return gv, _sparse_mm(ctx.transposed(), vals, g)


def _sparse_mm_arrays(ctx, g, inputs, out, wanted):
    vals, dense = inputs
    gv = np.einsum("ij,ij->i", g[ctx.ind_rows], dense[ctx.ind_cols]) if wanted[0] else None
    t = ctx.transposed()
    gd = _rows_product(t.rows, t.cols, t.values(vals), t.m, g) if wanted[1] else None
    return gv, gd


registry.python("sparse_mm", "MmBackward0", None, _vjp_sparse_mm, array_vjp=_sparse_mm_arrays,
                unreplayable="its sparsity pattern (the sparse tensor's indices) is saved in its context, which a "
                             "replay cannot rebind")


__all__ = ["sparse_coo_tensor", "spmm"]  # (layout, strided, sparse_coo: exported by tapegrad/__init__.py)
