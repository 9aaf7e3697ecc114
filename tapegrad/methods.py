"""Tensor's methods that are not one op's front-end: in-place forms, `x[k] = v`, `new_*`, flags. An op's own
method is bound beside it, at the end of its module under ops/ (grep `Tensor.<name> =`)."""
import numbers
import warnings

import numpy as np

from . import ops
from .grad_mode import is_grad_enabled
from .device import is_meta as _is_meta
from ._meta import MetaArray, make as _make_meta
from .tape import NOT_A_SLOT, untraceable
from .ops.shape import _check_recordable, _check_writable, _iterate, _written
from .tensor import as_array, _new, Tensor, VIEWS
from .creation import _shape
from .registry import OPS, reads_input
from . import _deprecated, _dtype, _strides, random
from ._warnings import user_stacklevel


Tensor.type_as = lambda self, other: self.to(other.dtype)


# -- in-place ops -----------------------------------------------------------------------------------------
def _inplace(self, result):
    """Write result into self's storage, bump its version, and give self the result's history."""
    untraceable("an in-place op")
    if self._creation is not None:
        _check_recordable(self, result._requires_grad)
    _refuse_leaf_write(self)
    value = result._data
    if value.dtype != self._data.dtype:
        if _dtype.is_float(value.dtype) and not _dtype.is_float(self._data.dtype) or value.dtype.kind in "iu" and \
                self._data.dtype.kind == "b":
            raise RuntimeError(f"result type {_dtype.scalar_type_name(value.dtype)} can't be cast to the desired output type "
                               f"{_dtype.scalar_type_name(self._data.dtype)}")
        if result._requires_grad:  # the row taking self's storage must record self's dtype: a cast row
            result = ops.to_dtype(result, self.dtype)
        value = result._data if result._requires_grad else value.astype(self._data.dtype)
    if value.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                           f"{list(value.shape)}")
    if not self._data.flags.writeable:
        if type(self._data) is MetaArray:
            return self  # (a meta tensor has no data to write; the checks above are torch's meta checks)
        raise RuntimeError("tapegrad: this tensor's memory is read-only (it came from a read-only array)")
    _check_writable(self)
    self._ensure_vc()
    if result._requires_grad:
        _snapshot_if_saved(self, result)
    np.copyto(self._data, value)
    self._vc[0] += 1
    if result._requires_grad:
        tape, row, old = result._tape, result._slot, self._slot
        tape.set_value(row, self._data)   # the row's value is this storage now
        tape.set_cell(row, self._vc, current=True)
        self._tape, self._slot, self._requires_grad, self._is_leaf = tape, row, True, False
        self._op = result._op
        self._grad_fn = None
        if self._retains_grad or self._hooks:
            _watch_new_value(self, tape, old)
    if self._window is not None or VIEWS:
        _written(self, result._requires_grad)  # the base and the other views see it (torch's shared memory)
    return self


def _refuse_leaf_write(self):
    """torch's refusal, in grad mode, of a write into a leaf that requires grad or into a view of one."""
    if is_grad_enabled():
        if self._requires_grad and self._is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        base = self._base
        if base is not None and base._requires_grad and base._is_leaf:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")


def _gone():
    return None


def _watch_new_value(self, tape, old):
    """torch: hooks registered before an in-place op see the gradient of the value before it (they stay with
    the old row); retain_grad keeps the gradient of the value after it (it moves to the new row)."""
    w = tape.watch.get(old)
    if w is not None and w.ref() is self:
        w.ref, w.hooks = _gone, self._hooks
        self._hooks = None
    if self._retains_grad:
        self._watch()


def _snapshot_if_saved(self, result):
    """torch keeps self's old value when the in-place op's own backward needs it (y.mul_(x)): so do we,
    by giving self's old row a copy of the value it is about to lose."""
    tape, row, old = result._tape, result._slot, self._slot
    if not (self._tape is tape and old < tape.n and tape.values[old] is self._data):
        return
    saves = OPS[tape.op[row]].saves
    for j, a in enumerate(tape.row_args(row)):
        if a == old and reads_input(saves, j):
            snapshot = self._data.copy()
            tape.set_value(old, snapshot)
            tape.drop_cell(old)
            return


def _make_inplace(fn, ufunc=None):
    def method(self, *args, **kwargs):
        if ufunc is not None and len(args) == 1 and (not kwargs or len(kwargs) == 1 and "alpha" in kwargs) \
                and _unrecorded_arith(self, args[0], ufunc, kwargs.get("alpha", 1)):
            return self
        return _inplace(self, fn(self, *args, **kwargs))
    return method


def _unrecorded_arith(self, other, ufunc, alpha=1):
    """`p -= lr * g` or `p.add_(g, alpha=-lr)` with nothing to record (no_grad, or no operand requires grad): the
    ufunc writes into self's storage, in one pass (and alpha's product) with no Tensor made. Returns False, having
    done nothing, for anything _inplace must decide (dtype promotion, broadcasting, recording, torch's errors)."""
    data = self._data
    if data.dtype.kind != "f":  # (integers: alpha and numbers convert as torch's, in the op's own front end)
        return False
    tp = type(other)
    if tp is Tensor:
        value = other._data
        if value.dtype != data.dtype or value.shape != data.shape:
            return False
        if alpha != 1 or type(alpha) is not int:
            if type(alpha) is not float and type(alpha) is not int or ufunc is not np.add and ufunc is not np.subtract:
                return False
            value = value * alpha  # (alpha * other rounded in self's dtype first, as add's own front-end does)
    elif (tp is float or tp is int) and alpha == 1 and type(alpha) is int:
        value = other
    else:
        return False
    if data.dtype.kind != "f" or not data.flags.writeable:
        return False
    if is_grad_enabled():
        base = self._base
        if self._requires_grad or tp is Tensor and other._requires_grad or base is not None and base._requires_grad:
            return False
    untraceable("an in-place op")
    window = self._window
    if window is not None or self._inference:
        _check_writable(self)
    ufunc(data, value, out=data)
    self._ensure_vc()[0] += 1
    if window is not None or VIEWS:
        _written(self)
    return True


# in-place forms: the op, then written into self's storage; the ops of ops/'s later modules list theirs in
# their INPLACE (ops.INPLACE)
Tensor.add_ = _make_inplace(Tensor.add, np.add)
Tensor.sub_ = _make_inplace(Tensor.sub, np.subtract)
Tensor.mul_ = _make_inplace(Tensor.mul, np.multiply)
for _name in ("div", "pow", "clamp", "clip", "neg", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu",
              "abs", "reciprocal", "square", "floor", "ceil", "round", "sign", "clamp_min", "clamp_max", "lerp",
              "masked_fill", "scatter_add", "tril", "triu", "rsqrt", "log1p", "expm1", "tan", "atan", "asin",
              "acos", "sinh", "cosh", "erf", "trunc", "atan2", "maximum", "minimum", "addcmul", "addcdiv",
              "addmm") + ops.INPLACE:
    setattr(Tensor, _name + "_", _make_inplace(getattr(Tensor, _name)))
Tensor.multiply_ = Tensor.mul_
Tensor.subtract_ = Tensor.sub_
Tensor.divide_ = Tensor.true_divide_ = Tensor.div_
Tensor.__iadd__ = _make_inplace(Tensor.add, np.add)
Tensor.__isub__ = _make_inplace(Tensor.sub, np.subtract)
Tensor.__imul__ = _make_inplace(Tensor.mul, np.multiply)
Tensor.__itruediv__ = _make_inplace(Tensor.div)
Tensor.__ifloordiv__ = _make_inplace(Tensor.floor_divide)
Tensor.__imod__ = _make_inplace(Tensor.remainder)
Tensor.__ipow__ = _make_inplace(Tensor.pow)
Tensor.__iand__ = _make_inplace(Tensor.bitwise_and)
Tensor.__ior__ = _make_inplace(Tensor.bitwise_or)
Tensor.__ixor__ = _make_inplace(Tensor.bitwise_xor)
Tensor.__ilshift__ = _make_inplace(Tensor.bitwise_left_shift)
Tensor.__irshift__ = _make_inplace(Tensor.bitwise_right_shift)


def _contains(self, element):
    """`x in t`: whether any element equals x (torch's Tensor.__contains__)."""
    if not isinstance(element, (Tensor, numbers.Number)):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element)}.")
    return bool((self == element).any().item())


Tensor.__contains__ = _contains
Tensor.__reversed__ = lambda self: self if self._data.ndim == 0 else self.flip(0)


def _iadd_naming_growth(iadd):
    def __iadd__(self, other):
        tape = self._tape
        if tape is not None and tape.growth_pending is not None and self._data.ndim == 0:
            tape.warn_growth()  # (Tape._check_growth: the warning names this `total_loss += loss` line)
        return iadd(self, other)
    return __iadd__


Tensor.__iadd__ = _iadd_naming_growth(Tensor.__iadd__)


for _name in ("add", "add_", "sub", "sub_", "addcmul", "addcmul_", "addcdiv", "addcdiv_", "addmm", "addmm_"):
    setattr(Tensor, _name, _deprecated.wrap_method(getattr(Tensor, _name), _name))


def _inplace_view(name):
    """x.unsqueeze_(d) and the like: x takes the view's shape (a tensor that requires grad is not covered)."""
    view = getattr(Tensor, name[:-1])

    def method(self, *args, **kwargs):
        if self._requires_grad and is_grad_enabled():
            if self._is_leaf:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            raise NotImplementedError(f"tapegrad: Tensor.{name} on a tensor that requires grad (use "
                                      f"Tensor.{name[:-1]}, which returns the view)")
        if self._base is not None or self._window is not None:
            raise NotImplementedError(f"tapegrad: Tensor.{name} on a view (use Tensor.{name[:-1]})")
        untraceable("an in-place op")
        result = view(self, *args, **kwargs)
        self._data, self._strides, self._slot = result._data, result._strides, NOT_A_SLOT
        return self
    method.__name__ = name
    return method


for _name in ("unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_", "swapaxes_"):
    setattr(Tensor, _name, _inplace_view(_name))


def _broadcast_value(self, value):
    v = value if isinstance(value, Tensor) else _new(np.asarray(value, dtype=self._data.dtype))
    return ops.expand(ops.to_dtype(v, self.dtype), self.shape) if v.shape != self.shape else ops.to_dtype(v, self.dtype)


def zero_(self):
    return fill_(self, 0)


def fill_(self, value):
    if self._requires_grad and not self._is_leaf and is_grad_enabled():
        return _inplace(self, self * 0 + value)
    return _inplace(self, _new(np.full(self._data.shape, _dtype.scalar_to_dtype(value, self._data.dtype),
                                       self._data.dtype)))


def copy_(self, src, non_blocking=False):
    src = src if isinstance(src, Tensor) else _new(np.asarray(src))
    if (self._requires_grad and not self._is_leaf or src._requires_grad) and is_grad_enabled():
        return _inplace(self, self * 0 + _broadcast_value(self, src))
    return _inplace(self, _new(np.broadcast_to(src._data, self._data.shape).astype(self._data.dtype)))


def setitem(self, key, value):
    """x[key] = value, under torch's rules: value broadcasts to the indexed shape; a leaf that requires grad
    cannot be written while grad mode is on; a write into a recorded tensor is itself recorded."""
    target = self._data
    if not target.flags.writeable and type(target) is not MetaArray:  # (a meta target takes nothing, below)
        raise RuntimeError("tapegrad: this tensor's memory is read-only (it came from a read-only array)")
    if self._requires_grad and self._is_leaf and is_grad_enabled():
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    k, advanced, _ = ops._index_key(key, self)
    shape = np.empty(target.shape, np.bool_)[k].shape
    if type(value) is int and not -2 ** 63 <= value < 2 ** 63:  # (torch parses x[k] = n as an int64)
        raise ValueError("Overflow when unpacking long long")
    v = value if isinstance(value, Tensor) else _new(np.asarray(_dtype.scalar_to_dtype(value, target.dtype),
                                                                 dtype=target.dtype))
    if advanced:
        try:
            np.broadcast_shapes(v.shape, shape)
            if len(v.shape) > len(shape) and any(s != 1 for s in v.shape[:len(v.shape) - len(shape)]):
                raise ValueError
        except ValueError:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to "
                               f"indexing result of shape {list(shape)}") from None
    elif v.shape != shape:  # torch's expand error when value does not broadcast
        lead = v.ndim - len(shape)
        probe = _new(v._data.reshape(v.shape[lead:]) if lead > 0 and all(s == 1 for s in v.shape[:lead])
                     else v._data)
        ops.expand(probe, shape)
    if type(target) is MetaArray:
        return
    recorded = is_grad_enabled() and (self._requires_grad or v._requires_grad)
    if self._creation is not None:  # (torch writes into the indexed view: its name is in the message)
        _check_recordable(self if advanced or all(i is Ellipsis for i in k) else ops.getitem(self, key), recorded)
    if not recorded:
        _check_writable(self)
        self._ensure_vc()
        target[k] = v._data
        self._vc[0] += 1
        if self._window is not None or VIEWS:
            _written(self)
        return
    # differentiable: out = masked_fill(self, mask, 0) + scatter(value); neither op saves self's old value
    mask = np.zeros(target.shape, bool)
    mask[k] = True
    index_map = np.arange(target.size).reshape(target.shape)[k]
    v = ops.expand(ops.to_dtype(v, self.dtype), index_map.shape)
    flat = index_map.reshape(-1)
    last = flat.size - 1 - np.unique(flat[::-1], return_index=True)[1]
    if last.size < flat.size:  # duplicate indices: the last write wins, as torch's, never a sum
        last.sort()
        v, index_map = ops.index_select(v.reshape(-1), 0, _new(last)), flat[last]
    placed = ops.scatter_flat(v, index_map, target.shape)
    _inplace(self, ops.masked_fill(self, _new(mask), 0.0) + placed)


def _inplace_any(self, result):
    saved = self._is_leaf
    if self._requires_grad and saved:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    return _inplace(self, result)


def _iter(self):
    if self._data.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return _iterate(self)


def resize_(self, *sizes, memory_format=None):
    """torch's resize_: the same storage reshaped where the element count stays, else a new one keeping the
    elements that fit (those past the old count zero: torch leaves them uninitialized)."""
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = _shape(sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes)
    old = self._data
    n = int(np.prod(shape, dtype=np.int64))
    if n == old.size:
        value = old.reshape(shape)
    else:
        if self._base is not None or self._window is not None:
            raise NotImplementedError("tapegrad: resize_ of a view to another number of elements (its storage "
                                      "would have to grow or shrink under the tensor it views)")
        value = np.zeros(n, old.dtype)
        k = min(n, old.size)
        value[:k] = old.reshape(-1)[:k]
        value = value.reshape(shape)
    self._data = value
    self._bump_version()
    return self


def resize_as_(self, the_template, memory_format=None):
    return resize_(self, the_template.shape)


def apply_(self, callable):
    """torch's apply_: callable on each element, in place (CPU tensors; Python numbers in and out)."""
    if self._requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use var.detach().apply_() instead.")
    kind = float if self._data.dtype.kind == "f" else bool if self._data.dtype.kind == "b" else int
    values = [kind(callable(v)) for v in self._data.reshape(-1).tolist()]
    return _inplace(self, _new(np.array(values, self._data.dtype).reshape(self._data.shape)))


def _volatile(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=user_stacklevel())
    return False


Tensor.resize_ = resize_
Tensor.resize_as_ = resize_as_
Tensor.apply_ = apply_
Tensor.volatile = property(_volatile)
Tensor.__iter__ = _iter
Tensor.zero_ = zero_
Tensor.fill_ = fill_
Tensor.copy_ = copy_
Tensor.__setitem__ = setitem


# -- tensor features scripts use (issue 18): ordering, layout, new_*, storage and device queries ------------------
def _new_like(self, data, dtype, requires_grad, device=None):
    """A new_* tensor: on self's device unless device is given (torch's)."""
    meta = _is_meta(device) if device is not None else type(self._data) is MetaArray
    np_dtype = self._data.dtype if dtype is None else _dtype.to_numpy_dtype(dtype)
    t = _new(_make_meta(np.shape(data), np_dtype) if meta else np.asarray(data, dtype=np_dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _new_shape(size, name):
    return _shape(size)


def new_zeros(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return _new_like(self, np.zeros(_new_shape(ops._sizes_or_keyword(sizes, size, "new_zeros", "size"), "new_zeros")), dtype, requires_grad, device)


def new_ones(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return _new_like(self, np.ones(_new_shape(ops._sizes_or_keyword(sizes, size, "new_ones", "size"), "new_ones")), dtype, requires_grad, device)


def new_empty(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return _new_like(self, np.zeros(_new_shape(ops._sizes_or_keyword(sizes, size, "new_empty", "size"), "new_empty")), dtype, requires_grad, device)  # zeroed


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    np_dtype = self._data.dtype if dtype is None else _np_dtype(dtype)
    return _new_like(self, np.full(_new_shape((size,), "new_full"), _dtype.scalar_to_dtype(fill_value, np_dtype),
                                   np_dtype), dtype, requires_grad, device)


def _np_dtype(dtype):
    return _dtype.to_numpy_dtype(dtype)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A copy of data in self's dtype unless dtype is given (as torch: never the dtype data would infer)."""
    dtype = dtype if dtype is not None else self.dtype
    return _new_like(self, as_array(data, dtype), dtype, requires_grad, device)


def data_ptr(self):
    """The address of the first element: stable while the storage lives; a view that shares memory points into
    its base's block, as torch's; 0 for a meta tensor (no storage), as torch's."""
    if type(self._data) is MetaArray:
        return 0
    return (self._data if self._window is None else self._window).__array_interface__["data"][0]


Tensor.new_zeros, Tensor.new_ones, Tensor.new_empty, Tensor.new_full = new_zeros, new_ones, new_empty, new_full
Tensor.new_tensor, Tensor.data_ptr = new_tensor, data_ptr
Tensor.is_xpu = Tensor.is_mps = Tensor.is_sparse = Tensor.is_quantized = False
Tensor.is_mkldnn = Tensor.is_nested = Tensor.is_sparse_csr = False
Tensor.spmm = lambda self, mat2: ops.sparse.mm(self, mat2)


# -- the random in-place fills: torch's streams (random.py), as nn.init's and dropout's -----------------------------
def _fill_with(self, draw, *arrays):
    """Write draw(shape, *arrays) into self in place, its draws in self's memory order (random.in_memory_order);
    torch's refusals come first, so that a refused fill draws nothing."""
    _refuse_leaf_write(self)
    if type(self._data) is MetaArray:
        return self  # (nothing drawn: the generator's state is left as it is, as torch's meta fills)
    v = _new(random.in_memory_order(self._data.shape, self._strides, draw, *arrays).astype(self._data.dtype,
                                                                                         copy=False))
    if self._requires_grad and is_grad_enabled():  # (a recorded write: no gradient flows to the old value)
        v = self * 0 + v
    return _inplace(self, v)


def uniform_(self, *args, generator=None, **kwargs):
    """Tensor.uniform_(from=0, to=1, *, generator=None)."""
    low, high = (list(args) + [kwargs.pop("from", 0.0), kwargs.pop("to", 1.0)][len(args):])[:2]
    if kwargs:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    random.require_float("check_uniform_bounds", self._data.dtype)
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
    dtype = random.fill_dtype(self._data.dtype)
    return _fill_with(self, lambda shape: random.uniform(shape, generator, dtype, low=low, high=high))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    random.require_float("normal_kernel_cpu", self._data.dtype)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    dtype = random.fill_dtype(self._data.dtype)
    serial = not _strides.is_contiguous(self._data.shape, self._strides)  # (torch's fill is for contiguous ones)
    return _fill_with(self, lambda shape: random.normal(shape, generator, dtype, mean=mean, std=std, serial=serial))


def bernoulli_(self, p=0.5, *, generator=None):
    if isinstance(p, Tensor):
        return _fill_with(self, lambda shape, q: random.bernoulli(q, generator),
                          np.broadcast_to(p._data, self._data.shape))
    return _fill_with(self, lambda shape: random.bernoulli_scalar(shape, float(p), generator, self._data.dtype))


def exponential_(self, lambd=1.0, *, generator=None):
    """Tensor.exponential_(lambd=1, *, generator=None)."""
    return _fill_with(self, lambda shape: random.exponential(shape, float(lambd), generator, self._data.dtype))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Tensor.cauchy_(median=0, sigma=1, *, generator=None)."""
    return _fill_with(self, lambda shape: random.cauchy(shape, float(median), float(sigma), generator,
                                                        self._data.dtype))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Tensor.log_normal_(mean=1, std=2, *, generator=None)."""
    return _fill_with(self, lambda shape: random.log_normal(shape, float(mean), float(std), generator,
                                                            self._data.dtype))


def geometric_(self, p, *, generator=None):
    """Tensor.geometric_(p, *, generator=None)."""
    return _fill_with(self, lambda shape: random.geometric(shape, float(p), generator, self._data.dtype))


_NO_TO = object()


def random_(self, *args, generator=None, **kwargs):
    """Tensor.random_(from, to, *, generator=None), random_(to, *, generator=None), random_(*, generator=None):
    torch's three overloads (to=None with from: up to the dtype's largest integer)."""
    low, high = 0, _NO_TO
    if "from" in kwargs or len(args) == 2 or len(args) == 1 and "to" in kwargs:
        if len(args) == 2:
            low, high = args
        else:
            low = args[0] if args else kwargs.pop("from")
            if "to" not in kwargs:
                raise TypeError("random_() missing required argument 'to' (pos 2)")
            high = kwargs.pop("to")
        kwargs.pop("from", None)
    elif len(args) == 1 or "to" in kwargs:
        high = args[0] if args else kwargs.pop("to")
        if high is None:
            raise TypeError("random_(): argument 'to' (position 1) must be int, not NoneType")
    elif args:
        raise TypeError(f"random_() takes from 0 to 2 positional arguments but {len(args)} were given")
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for name, v in (("from", low), ("to", high)):
        if v is not _NO_TO and v is not None and (isinstance(v, (bool, float)) or not isinstance(v, numbers.Integral)):
            raise TypeError(f"random_(): argument '{name}' must be int, not {type(v).__name__}")
    dtype = self._data.dtype
    if high is _NO_TO:
        return _fill_with(self, lambda shape: random.random_bits(shape, generator, dtype))
    return _fill_with(self, lambda shape: random.random_range(shape, int(low), None if high is None else int(high),
                                                              generator, dtype))


def share_memory_(self):
    from .multiprocessing import shared  # (Python's multiprocessing: loaded by the first use)
    return shared.share_memory_(self)


def is_shared(self):
    from .multiprocessing import shared
    return shared.is_shared(self)


Tensor.share_memory_, Tensor.is_shared = share_memory_, is_shared
Tensor.uniform_ = uniform_
Tensor.normal_ = normal_
Tensor.bernoulli_ = bernoulli_
Tensor.exponential_, Tensor.cauchy_, Tensor.log_normal_ = exponential_, cauchy_, log_normal_
Tensor.geometric_, Tensor.random_ = geometric_, random_


ops.sparse._install()  # (last: sparse tensors refuse every dense method bound above)
