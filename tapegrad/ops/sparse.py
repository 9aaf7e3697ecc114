"""Sparse COO tensors: build (sparse_coo_tensor, Tensor.to_sparse / to_sparse_coo), read (indices, values,
to_dense, coalesce), multiply with a dense matrix (mm, spmm, matmul, @, torch.sparse.mm, bmm, smm, hspmm) from
either side, multiply elementwise by a dense tensor, select (index_select, narrow_copy, Tensor.sparse_mask), and
torch.sparse.softmax / log_softmax / spdiags; with gradients with respect to the dense operand and the values; and
the gradient that embedding(sparse=True) gives its weight (`sparse_rows`), with its accumulation into `.grad`
(`accumulate_`: torch's merge of two entry lists) and `zero_`.

A SparseTensor holds its indices (an int64 array, sparse_dim x nnz), its values (a Tensor, which may carry a
history: the gradient with respect to the values flows through it) and its size. It has no dense storage:
every other op raises torch's NotImplementedError for the SparseCPU backend, never a silent densification.
Hybrid tensors (values with dense dims) are made only by embedding's sparse gradient and hspmm (read, coalesce,
to_dense, add, scalar mul/div, neg; the rest raises). A sparse tensor that requires grad itself is a leaf of its
values (`_set_own_grad`): the ops above reach it through them, and its `.grad` shows their gradient as torch's
(sparse at its indices), or dense where torch's derivative reads it as dense (`_dense_stand_in`).
"""
import functools
import math
import warnings

import numpy as np

from .. import _dtype, registry
from ..tensor import as_array, _new, Size, Tensor
from ._common import _dim, broadcast_shape, OPS, _record, _tensor, _to_dtype
from .linalg import bmm as _dense_bmm, matmul as _dense_matmul, mm as _dense_mm
from . import shape as _shape
from .shape import cat, _gather, scatter_add, scatter_flat
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
        f"COO tensors: mm/spmm/matmul/bmm with a dense matrix, to_dense, coalesce, indices/values, add to a dense "
        f"tensor, mul by a number or a dense tensor, div by a number, neg, t/transpose, sum, index_select, "
        f"narrow_copy; call .to_dense() first for the rest.")


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
        self._set_own_grad(value)

    def requires_grad_(self, requires_grad=True):
        self._set_own_grad(requires_grad)
        return self

    def _set_own_grad(self, value, not_float="only Tensors of floating point dtype can require gradients"):
        """A sparse leaf that requires grad: its values become a leaf of their own (an alias of the values' array,
        so the tensor they came from does not start requiring grad), whose gradient `.grad` shows as torch's."""
        vals = self._vals
        if bool(value) == vals._requires_grad:
            return
        if not vals.is_leaf or not value:
            vals.requires_grad_(value)   # (torch's error for a non-leaf)
            return
        if not _dtype.is_float(vals._data.dtype):
            raise RuntimeError(not_float)
        vals = _new(vals._data)
        vals.requires_grad_(True)
        self.__dict__.update(_vals=vals, _own_grad=True)

    def _owns_grad(self):
        """Whether this is a sparse leaf that requires grad (its .grad is its own)."""
        return self.__dict__.get("_own_grad", False) and self._vals._requires_grad and self._vals.is_leaf

    @property
    def is_leaf(self):
        return self._vals.is_leaf

    @property
    def grad_fn(self):
        return None

    @property
    def grad(self):
        """torch's gradient of a sparse leaf: sparse at the coalesced indices (the dense gradient masked there; flagged
        uncoalesced, as torch.sparse.mm's) from
        the ops whose derivative torch writes sparse (torch.sparse.mm, to_dense, mul, sum, softmax, ...), dense once
        an op whose derivative is dense (torch.mm, @, matmul, dense + sparse: `_dense_stand_in`) has added to it."""
        if not self._owns_grad():
            return None
        gv, stand_in = self._vals.grad, self.__dict__.get("_stand_in")
        gd = stand_in[0].grad if stand_in is not None else None
        if gv is None:
            return gd
        cached = self.__dict__.get("_grad_view")
        if self._coalesced:
            if cached is None or cached[0]._vals is not gv:   # (one object while gv accumulates in place)
                cached = self.__dict__["_grad_view"] = (_make(self._ind, gv, self._size, False),)
            sparse = cached[0]
        else:
            first, ind = self._unique_entries()
            sparse = _make(ind, _new(gv._data[first]), self._size, False)
            if cached is None:
                cached = self.__dict__["_grad_view"] = (sparse,)
            else:
                cached[0].__dict__.update(_vals=sparse._vals)   # (the same object, as torch's)
            sparse = cached[0]
        return sparse if gd is None else _dense_plus(gd, sparse, False)

    @grad.setter
    def grad(self, value):
        if value is not None:
            raise NotImplementedError("tapegrad: assigning a gradient to a sparse tensor is not supported")
        if self._owns_grad():
            self._vals.grad = None
            stand_in = self.__dict__.get("_stand_in")
            if stand_in is not None:
                stand_in[0].grad = None
        self.__dict__.pop("_grad_view", None)

    def _unique_entries(self):
        """The first entry at each distinct index, and the distinct indices (in row-major order)."""
        flat = np.ravel_multi_index(tuple(self._ind), self._size) if self._ind.size else np.zeros(0, np.int64)
        unique, first = np.unique(flat, return_index=True)
        return first, np.stack(np.unravel_index(unique, self._size)).astype(np.int64).reshape(self.ndim, -1)

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
            return _mul_dense(self, other)
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
        return smm(self, mat2)

    def hspmm(self, mat2):
        return hspmm(self, mat2)

    def bmm(self, mat2):
        return bmm(self, mat2)

    def index_select(self, dim, index):
        return index_select(self, dim, index)

    def narrow_copy(self, dim, start, length):
        return narrow_copy(self, dim, start, length)

    def to_sparse_coo(self):
        return self


def _dense_plus(dense, sparse, negate):
    """dense ± sparse, as torch's add_out_dense_sparse: each value added in turn into a copy of the dense
    tensor, in the promoted dtype (a scatter_add, so duplicates round as torch's do)."""
    if tuple(dense.shape) != sparse._size:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(dense.shape)} while other has size {list(sparse._size)} (FYI: dense-sparse "
                           f"addition does not currently support broadcasting)")
    if sparse._owns_grad():
        stand_in = _dense_stand_in(sparse)
        return dense - stand_in if negate else dense + stand_in
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
    """torch.sparse_coo_tensor; the indices are checked against the size (torch's messages) only when
    check_invariants (or check_sparse_tensor_invariants) asks, as torch's: an index outside it is NumPy's error
    in the ops that read it, never a write outside an array."""
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
    if nnz and (check_invariants or check_invariants is None and check_sparse_tensor_invariants.is_enabled()):
        for d in range(sparse_dim):
            lo, hi = int(ind[d].min()), int(ind[d].max())
            if lo < 0:
                raise RuntimeError(f"found negative index {lo} for dim {d}")
            if hi >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                                   f"index {hi}")
    out = _make(ind, vals, size, bool(is_coalesced) or nnz <= 1)
    if requires_grad:
        out._set_own_grad(True, "Only Tensors of floating point and complex dtype can require gradients")
    return out


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
        if mat2._owns_grad() and mat2.ndim == 2 and a.shape[1] == mat2._size[0]:
            return _dense_mm(a, _dense_stand_in(mat2))
        return mm(mat2.t(), a.t()).t()   # (its checks and messages are torch's, which also transposes)
    if input.dense_dim():
        raise _unsupported("mm (a hybrid sparse tensor)")
    b = _tensor(mat2)
    _check_mm(input.shape, b.shape, input.ndim, b.ndim)
    if input._owns_grad():
        return _dense_mm(_dense_stand_in(input), b)
    return _grad_in_values_mm(input, b)


def sparse_grad_mm(mat1, mat2):
    """torch.sparse.mm: mm, but a sparse leaf's gradient is sparse (its derivative is masked to its indices)."""
    if isinstance(mat1, SparseTensor) and mat1._owns_grad() and not isinstance(mat2, SparseTensor):
        b = _tensor(mat2)
        _check_mm(mat1.shape, b.shape, mat1.ndim, b.ndim)
        return _grad_in_values_mm(mat1, b)
    return mm(mat1, mat2)


def _grad_in_values_mm(input, b):
    """sparse @ dense recorded on the values and the dense operand (torch.sparse.mm's derivative: sparse)."""
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
            if input._owns_grad() and b.shape[0] == input._size[1]:
                return _dense_matmul(_dense_stand_in(input), b)
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


# -- a sparse leaf's dense stand-in, sparse * dense, selection, products, softmax (torch's COO kernels) ---------------
def _dense_stand_in(sparse):
    """torch.mm, @, matmul and dense ± sparse read a sparse leaf as dense: torch's derivative for it is dense (all of
    g @ mat2.T, not masked to its indices). They read this stand-in instead: a dense leaf holding the sparse tensor's
    value, whose .grad the sparse tensor's .grad adds in; made again (its .grad carried over) once the values change."""
    vals = sparse._vals
    held = sparse.__dict__.get("_stand_in")
    if held is None or held[1] != vals._version:
        dense = np.zeros(sparse._size, vals._data.dtype)
        np.add.at(dense.reshape(-1), sparse._flat_index().reshape(-1), vals._data.reshape(-1))
        leaf = _new(dense).requires_grad_(True)
        if held is not None:
            leaf.grad = held[0].grad
        held = sparse.__dict__["_stand_in"] = (leaf, vals._version)
    return held[0]


def _mul_dense(sparse, dense):
    """sparse * dense (either order, torch's sparse_mask of the product): the values times the dense tensor's
    elements at their indices, with the sparse operand's indices; the dense operand's gradient is sparse, as torch's."""
    if sparse.dense_dim():
        raise _unsupported("mul.Tensor (a hybrid tensor * dense)")
    shape = broadcast_shape(tuple(dense.shape), sparse._size)
    if shape != sparse._size:
        raise RuntimeError("sparse_binary_op_intersection_cpu(): expects sparse inputs with equal dimensionality, "
                           "number of sparse dimensions, and shape of sparse dimensions")
    dt = _dtype.result_type(sparse._vals._data, dense._data)
    vals, d = _to_dtype(sparse._vals, dt), _to_dtype(dense, dt)
    if tuple(d.shape) != shape:
        d = d.expand(shape)
    flat = sparse._flat_index()
    out = vals._data * np.ascontiguousarray(d._data).reshape(-1)[flat]
    ctx = registry.Ctx(flat=flat, ind=sparse._ind, size=sparse._size)
    return _make(sparse._ind, _record(OPS["sparse_mul_dense"], out, (vals, d), aux=ctx), sparse._size,
                 sparse._coalesced)


def index_select(input, dim, index):
    """torch.index_select; of a sparse tensor: for each index in turn, the entries at it along dim (in their order)."""
    if not isinstance(input, SparseTensor):
        return _shape.index_select(input, dim, index)
    if input.dense_dim():
        raise _unsupported("index_select (a hybrid tensor)")
    d = _dim(dim, input.ndim)
    idx = np.asarray(as_array(index._data if isinstance(index, Tensor) else index), np.int64)
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    idx = idx.reshape(-1)
    n = input._size[d]
    bad = idx[(idx < -n) | (idx >= n)]
    if bad.size:
        raise IndexError(f"index_select(): index contains {bad[0]} that is out of range for tensor of size "
                         f"{list(input._size)} at dimension {d}")
    idx = np.where(idx < 0, idx + n, idx)
    order = np.argsort(input._ind[d], kind="stable")
    along = input._ind[d][order]
    lo, counts = np.searchsorted(along, idx, "left"), np.searchsorted(along, idx, "right")
    counts = counts - lo
    total = int(counts.sum())
    ends = np.cumsum(counts)
    take = order[np.repeat(lo - (ends - counts), counts) + np.arange(total)]
    ind = input._ind[:, take]
    ind[d] = np.repeat(np.arange(idx.size, dtype=np.int64), counts)
    size = input._size[:d] + (idx.size,) + input._size[d + 1:]
    return _make(ind, _shape.index_select(input._vals, 0, _new(take)), size, total <= 1)


def narrow_copy(input, dim, start, length):
    """Tensor.narrow_copy of a sparse tensor: the entries in [start, start + length) along dim, shifted."""
    if input.dense_dim():
        raise _unsupported("narrow_copy (a hybrid tensor)")
    if not 0 <= dim < input.ndim:
        raise RuntimeError(f"Dimension {dim} out of range. Expecting 0 <= dim < {input.ndim}.")
    if start < 0 or length < 0 or start + length > input._size[dim]:
        raise RuntimeError(f"Invalid range to narrow. range(start, start+length) must be a subset of range(0, "
                           f"{input._size[dim]}).")
    take = np.flatnonzero((input._ind[dim] >= start) & (input._ind[dim] < start + length))
    ind = input._ind[:, take]
    ind[dim] -= start
    size = input._size[:dim] + (length,) + input._size[dim + 1:]
    return _make(ind, _shape.index_select(input._vals, 0, _new(take)), size, input._coalesced)


def zeros_like(input, dtype=None):
    """torch.zeros_like of a sparse tensor: no entries, coalesced (creation.zeros_like's sparse case)."""
    k = input.sparse_dim()
    dt = input._vals._data.dtype if dtype is None else _dtype.to_numpy_dtype(dtype)
    return _make(np.zeros((k, 0), np.int64), _new(np.zeros((0,) + input._size[k:], dt)), input._size, True)


def sparse_mask(self, mask):
    """Tensor.sparse_mask(mask): self's elements at the mask's indices, with its indices (as they are: torch keeps
    an uncoalesced mask's order and duplicates); the gradient reaches self's elements there."""
    if not isinstance(mask, SparseTensor):
        raise RuntimeError("sparse_mask(): expected mask to be a sparse COO tensor")
    if isinstance(self, SparseTensor):
        raise _unsupported("sparse_mask (of a sparse tensor)")
    x = _tensor(self)
    if tuple(x.shape) != mask._size:
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(x.shape)} but mask "
                           f"has size {list(mask._size)}")
    if mask.dense_dim():
        raise _unsupported("sparse_mask (a hybrid mask)")
    vals = _shape.index_select(x.reshape(-1), 0, _new(mask._flat_index().reshape(-1)))
    return _make(mask._ind, vals, mask._size, mask._coalesced)


def to_sparse_coo(self):
    """Tensor.to_sparse_coo: to_sparse()."""
    return to_sparse(self)


def _no_derivative(values, inputs, name):
    """values (an array) as a Tensor whose backward raises torch's error (torch has no derivative for `name`)."""
    return _record(OPS["no_derivative"], values, inputs, aux=name)


def _product_rows(sparse, mat2, name):
    """The rows of sparse @ mat2 that have entries in sparse (torch's sspaddmm / hspmm), as arrays."""
    b = _tensor(mat2)
    if not isinstance(sparse, SparseTensor):
        raise RuntimeError(f"tensor.{name}(...) can only be called on sparse tensors")
    if sparse.ndim != 2 or sparse.dense_dim():
        raise _unsupported(f"{name} (a matrix of 2 sparse dims)")
    if b.ndim != 2 or b.shape[0] != sparse._size[1]:
        raise RuntimeError(f"{name}: Argument #3: Expected dim 0 size {sparse._size[1]}, got "
                           f"{b.shape[0] if b.ndim else 0}")
    rows = np.unique(sparse._ind[0])
    s = sparse.coalesce().detach()
    full = _rows_product(s._ind[0], s._ind[1], s._vals._data, sparse._size[0], b._data)
    return rows, full[rows], b


def smm(input, mat2):
    """torch.smm: sparse @ dense as a sparse matrix (each row with entries in input, whole); no derivative."""
    rows, prod, b = _product_rows(input, mat2, "sspaddmm")
    n = b.shape[1]
    ind = np.stack([np.repeat(rows, n), np.tile(np.arange(n, dtype=np.int64), rows.size)])
    return _make(ind, _no_derivative(prod.reshape(-1), (input._vals, b), "sspaddmm"), (input._size[0], n), False)


def hspmm(mat1, mat2):
    """torch.hspmm: sparse @ dense as a hybrid COO matrix (a row of values per row with entries); no derivative."""
    rows, prod, b = _product_rows(mat1, mat2, "hspmm")
    return _make(rows.reshape(1, -1), _no_derivative(prod, (mat1._vals, b), "hspmm"),
                 (mat1._size[0], b.shape[1]), False)


def bmm(input, mat2):
    """torch.bmm; a sparse (b, n, m) batch times a dense (b, m, p) one, as one block-diagonal sparse @ dense."""
    if not isinstance(input, SparseTensor):
        return _dense_bmm(input, mat2)
    b = _tensor(mat2)
    if input.sparse_dim() != 3:
        raise RuntimeError(f"bmm_sparse: Tensor 'self' must have 3 sparse dims, but has {input.sparse_dim()}")
    if b.ndim != 3:
        raise RuntimeError(f"bmm_sparse: Tensor 'mat2' must have 3 dims, but has {b.ndim}")
    (nb, n, m), (bb, mb, p) = input._size, tuple(b.shape)
    if nb != bb:
        raise RuntimeError("bmm_sparse: 'self.size(0)' and 'mat2.size(0)' must match")
    if m != mb:
        raise RuntimeError("bmm_sparse: 'self.size(2)' and 'mat2.size(1)' must match")
    ind = np.stack([input._ind[0] * n + input._ind[1], input._ind[0] * m + input._ind[2]])
    flat = _make(ind, input._vals, (nb * n, nb * m), False)
    return mm(flat, b.reshape(nb * m, p)).reshape(nb, n, p)


def _softmax(input, dim, dtype, log):
    """torch.sparse.(log_)softmax: over each line of entries along dim (the unspecified ones are -inf), coalesced."""
    name = "log_softmax" if log else "softmax"
    if not isinstance(input, SparseTensor):
        raise NotImplementedError(f"Could not run 'aten::_sparse_{name}' with arguments from the 'CPU' backend.")
    if input.dense_dim():
        raise _unsupported(f"_sparse_{name} (a hybrid tensor)")
    d = _dim(dim, input.ndim)
    vals = input._vals if dtype is None else input._vals.to(dtype)
    if not _dtype.is_float(vals._data.dtype):
        raise NotImplementedError(f'"softmax" not implemented for \'{_dtype.scalar_type_name(vals._data.dtype)}\'')
    c = _make(input._ind, vals, input._size, input._coalesced).coalesce()
    if not c._nnz():
        return c
    keep = [k for k in range(c.ndim) if k != d]
    line = np.ravel_multi_index(tuple(c._ind[keep]), [c._size[k] for k in keep]) if keep else np.zeros(c._nnz(), int)
    _, group = np.unique(line, return_inverse=True)
    group = group.reshape(-1).astype(np.int64)
    v = c._vals
    top = np.full(int(group.max()) + 1, -np.inf, v._data.dtype)
    np.maximum.at(top, group, v._data)
    shifted = v - _new(top[group])
    e = shifted.exp()
    at = _new(group)
    total = scatter_add(_new(np.zeros(top.shape, v._data.dtype)), 0, at, e)
    out = shifted - _shape.index_select(total.log(), 0, at) if log else e / _shape.index_select(total, 0, at)
    return _make(c._ind, out, c._size, True)


def softmax(input, dim, dtype=None):
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim, dtype=None):
    return _softmax(input, dim, dtype, True)


def spdiags(diagonals, offsets, shape, layout=None):
    """torch.sparse.spdiags: diagonals' row k on the offsets[k]-th diagonal (column j takes diagonals[k, j]), COO
    (torch's CSR/CSC layouts are not supported); no derivative, as torch's."""
    dg, off = _tensor(diagonals), np.asarray(as_array(offsets._data if isinstance(offsets, Tensor) else offsets))
    if layout is strided:
        raise RuntimeError("Only output layouts (Sparse, SparseCsc, SparseCsr) are supported, got Strided")
    if layout is not None and layout is not sparse_coo:
        raise NotImplementedError(f"tapegrad: spdiags(layout={layout!r}) is not supported")
    if dg.ndim == 1:
        dg = dg.unsqueeze(0)
    off = off.reshape(-1).astype(np.int64)
    if dg.ndim != 2:
        raise RuntimeError(f"Diagonals must be vector or matrix, got {dg.ndim}-D")
    if dg.shape[0] != off.size:
        raise RuntimeError(f"Number of diagonals ({dg.shape[0]}) does not match the number of offsets ({off.size})")
    if np.unique(off).size != off.size:
        raise RuntimeError("Offset tensor contains duplicate values")
    rows_n, cols_n = (int(x) for x in shape)
    L = dg.shape[1]
    rows, cols, at = [], [], []
    for k, o in enumerate(off.tolist()):
        j = np.arange(max(0, o), min(cols_n, rows_n + o, L), dtype=np.int64)
        rows.append(j - o)
        cols.append(j)
        at.append(k * L + j)
    ind = np.stack([np.concatenate(rows), np.concatenate(cols)]) if rows else np.zeros((2, 0), np.int64)
    flat = np.concatenate(at) if at else np.zeros(0, np.int64)
    out = _make(ind, _no_derivative(dg._data.reshape(-1)[flat], (dg,), "_spdiags"), (rows_n, cols_n),
                ind.shape[1] <= 1)
    return out


def _install():
    Tensor.to_sparse = to_sparse
    Tensor.to_sparse_coo = to_sparse_coo
    Tensor.sparse_mask = sparse_mask
    Tensor.to_dense = to_dense
    Tensor.layout = strided
    _refuse_dense_methods()


# == Declarations ===========================================================================================
def _vjp_sparse_mm(ctx, g, inputs, out):
    """ctx: the sparse structure. d/dvalues[e] = <g[row e], dense[col e]>; d/ddense = sparse.T @ g."""
    vals, dense = inputs
    rows, cols = _new(ctx.ind_rows), _new(ctx.ind_cols)
    gv = (_shape.index_select(g, 0, rows) * _shape.index_select(dense, 0, cols)).sum(1)
    return gv, _sparse_mm(ctx.transposed(), vals, g)


def _sparse_mm_arrays(ctx, g, inputs, out, wanted):
    vals, dense = inputs
    gv = np.einsum("ij,ij->i", g[ctx.ind_rows], dense[ctx.ind_cols]) if wanted[0] else None
    t = ctx.transposed()
    gd = _rows_product(t.rows, t.cols, t.values(vals), t.m, g) if wanted[1] else None
    return gv, gd


def _vjp_sparse_mul_dense(ctx, g, inputs, out):
    """d/dvalues = g * dense there; d/ddense: sparse, the values times g at the sparse operand's indices."""
    vals, dense = inputs
    gv = g * _shape.index_select(dense.reshape(-1), 0, _new(ctx.flat))
    return gv, _make(ctx.ind, g * vals, ctx.size, False)   # (torch's flag: uncoalesced)


def _sparse_mul_dense_arrays(ctx, g, inputs, out, wanted):
    vals, dense = inputs
    gv = g * np.ascontiguousarray(dense).reshape(-1)[ctx.flat] if wanted[0] else None
    return gv, _make(ctx.ind, _new(g * vals), ctx.size, False) if wanted[1] else None


def _vjp_no_derivative(ctx, g, inputs, out, wanted=None):
    raise RuntimeError(f"derivative for aten::{ctx} is not implemented")


registry.python("sparse_mul_dense", "MulBackward0", None, _vjp_sparse_mul_dense, array_vjp=_sparse_mul_dense_arrays,
                unreplayable="its sparsity pattern (the sparse tensor's indices) is saved in its context, which a "
                             "replay cannot rebind")
registry.python("no_derivative", "NotImplemented", None, _vjp_no_derivative, array_vjp=_vjp_no_derivative,
                unreplayable="torch has no derivative for it (smm, hspmm, spdiags, remainder(number, tensor)): a "
                             "backward through it raises")
registry.python("sparse_mm", "MmBackward0", None, _vjp_sparse_mm, array_vjp=_sparse_mm_arrays,
                unreplayable="its sparsity pattern (the sparse tensor's indices) is saved in its context, which a "
                             "replay cannot rebind")


# (index_select, bmm: the sparse-aware front-ends, which ops/__init__ binds over shape's and linalg's; layout,
# strided, sparse_coo: exported by tapegrad/__init__.py)
__all__ = ["sparse_coo_tensor", "spmm", "smm", "hspmm", "index_select", "bmm"]
