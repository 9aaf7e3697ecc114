"""torch's meta device: tensors with a shape and a dtype and no data.

A meta tensor is an ordinary Tensor whose value is a `MetaArray`: an ndarray subclass whose every element is one
read-only zero (zero strides: no memory, whatever the shape). The op front-ends run unchanged on it; NumPy hands
every computation that involves one to `__array_ufunc__` / `__array_function__` here, which work out the result's
shape and dtype (an elementwise ufunc from 0-d stand-ins, anything else run on the zero-strided values) and return
a fresh MetaArray. So the cost lives only on meta arrays: a plain ndarray never comes here. What cannot be done
without data raises NotImplementedError naming the op: a result whose shape depends on values (nonzero, a boolean
mask), a value read into Python, a compiled kernel (the kernel modules refuse a MetaArray, see `_guard_kernels`).
"""
import sys

import numpy as np

from . import kernels

# torch's words (NotImplementedError) for meta values written into real memory; an op may catch it (a try costs
# nothing while nothing is raised) to make a meta result instead
NO_DATA = "Cannot copy out of meta tensor; no data!"
ITEM = "Tensor.item() cannot be called on meta tensors"  # (RuntimeError)


def make(shape, dtype):
    """A meta array of this shape and dtype: views of one read-only zero."""
    if not _guarded:
        _guard_kernels()
    zero = np.zeros((), dtype)
    zero.flags.writeable = False  # (a view of it is never made writable: ops._common._as_view asks its storage)
    return np.broadcast_to(zero, shape).view(MetaArray)


def strided(a):
    """A stand-in of a's shape with C-contiguous strides over one element, for NumPy to work out the strides of a
    view of it (a view reads nothing; nothing else may be done with it)."""
    strides = np.zeros(a.ndim, np.int64)
    step = a.itemsize
    for d in range(a.ndim - 1, -1, -1):
        strides[d] = step
        step *= max(a.shape[d], 1)
    return np.lib.stride_tricks.as_strided(np.zeros(1, a.dtype), a.shape, tuple(strides), writeable=False)


def like(a):
    return make(a.shape, a.dtype)


def is_meta(a):
    return type(a) is MetaArray


def _plain(x):
    """x with each MetaArray in it seen as a plain ndarray (the same zero-strided view), for NumPy to compute on."""
    if type(x) is MetaArray:
        return x.view(np.ndarray)
    if type(x) in (list, tuple):
        return type(x)(_plain(v) for v in x)
    return x


def _any_meta(x):
    if type(x) is MetaArray:
        return True
    return type(x) in (list, tuple) and any(_any_meta(v) for v in x)


def _wrap(r, name):
    """A result computed on the zero-strided values, as meta: only its shape and dtype are kept."""
    if isinstance(r, (np.ndarray, np.generic)):
        return make(np.shape(r), r.dtype)
    if type(r) in (list, tuple):
        return type(r)(_wrap(v, name) for v in r)
    if r is None:
        return None
    raise NotImplementedError(f"tapegrad cannot compute {name} on the meta device: its result is a value read "
                              f"from the data")


# The op front-ends whose operands are the user's tensors (binary elementwise ops, cat, stack: they register here).
# torch refuses meta and CPU tensors together there; elsewhere a plain array beside a meta one is an op's own
# (a mask, an index, a constant it made), which computes a meta result.
FRONT_ENDS = set()


def _mixed(arrays):
    """torch's error for an elementwise op, cat or stack on meta and CPU tensors (a 0-d CPU tensor is a scalar:
    allowed). Looked for only on the meta path, only when called from a registered front-end."""
    first = None
    for a in arrays:
        if isinstance(a, np.ndarray) and (a.ndim or type(a) is MetaArray):
            meta = type(a) is MetaArray
            if first is None:
                first = meta
            elif meta != first:
                frame = sys._getframe(2)
                for _ in range(3):  # (the front-end, or the forward lambda it calls)
                    if frame is None or frame.f_code in FRONT_ENDS:
                        break
                    frame = frame.f_back
                if frame is not None and frame.f_code in FRONT_ENDS:
                    expected, found = ("meta", "cpu") if first else ("cpu", "meta")
                    raise RuntimeError(f"Tensor on device {found} is not on the expected device {expected}!")
                return


# NumPy functions whose result's shape depends on the values (torch has no meta kernel for them either)
_DATA_DEPENDENT = {np.nonzero, np.flatnonzero, np.argwhere, np.unique, np.extract, np.compress, np.bincount,
                   np.histogram, np.histogram_bin_edges, np.histogramdd, np.histogram2d, np.trim_zeros,
                   np.unique_values, np.unique_counts, np.unique_inverse, np.unique_all}
# Functions that write into their first argument: a meta destination takes nothing
_WRITES = {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis}
# Functions whose result is about the arrays, not their values
_METADATA = {np.shape, np.ndim, np.size, np.result_type, np.may_share_memory, np.shares_memory, np.iscomplexobj,
             np.isrealobj, np.can_cast, np.min_scalar_type}


class MetaArray(np.ndarray):
    """A meta tensor's value (see the module's docstring). Read-only; writes into it are no-ops, as torch's into
    a meta tensor."""

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        name = f"{ufunc.__name__}" if method == "__call__" else f"{ufunc.__name__}.{method}"
        if out is not None or method == "at":
            dest = out if out is not None else (inputs[0],)
            if not any(type(d) is MetaArray for d in dest):
                raise NotImplementedError(NO_DATA)  # meta values written into real memory
            return None if method == "at" else (dest[0] if len(dest) == 1 else dest)
        if method == "__call__" and ufunc.signature is None:
            _mixed(inputs)
            # elementwise: the dtype from 0-d stand-ins, the shape from broadcasting (no work per element)
            shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
            with np.errstate(all="ignore"):
                r = ufunc(*(np.zeros((), x.dtype) if isinstance(x, np.ndarray) else x for x in inputs), **kwargs)
            return tuple(make(shape, v.dtype) for v in r) if ufunc.nout > 1 else make(shape, r.dtype)
        with np.errstate(all="ignore"):
            r = getattr(ufunc, method)(*_plain(inputs), **kwargs)
        return _wrap(r, name)

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if func in _DATA_DEPENDENT or (func is np.where and len(args) + len(kwargs) == 1):
            raise NotImplementedError(f"tapegrad cannot compute {name} on the meta device: the shape of its result "
                                      f"depends on the data")
        if func in _WRITES:
            if type(args[0]) is MetaArray:
                return None
            raise NotImplementedError(NO_DATA)
        out = kwargs.get("out")
        if out is not None:
            if type(out) is MetaArray:
                return out
            raise NotImplementedError(NO_DATA)
        if func is np.concatenate or func is np.stack:
            _mixed(list(args[0]) if args else [])
        with np.errstate(all="ignore"):
            r = func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
        return r if func in _METADATA else _wrap(r, name)

    # -- what NumPy's C methods would compute, copy or read ---------------------------------------------------------
    def __getitem__(self, key):
        keys = key if type(key) is tuple else (key,)
        for k in keys:
            if isinstance(k, (np.ndarray, list)) and np.asarray(k).dtype == np.bool_ and np.ndim(k) > 0:
                raise NotImplementedError("tapegrad cannot index a meta tensor with a boolean mask: the shape of "
                                          "the result depends on the data")
        r = np.ndarray.__getitem__(self.view(np.ndarray), _plain(key))
        return make(np.shape(r), r.dtype)

    def __setitem__(self, key, value):
        return None  # (nothing to write: a meta tensor has no data)

    def astype(self, dtype, *args, **kwargs):
        return make(self.shape, np.dtype(dtype))

    def copy(self, order="C"):
        return make(self.shape, self.dtype)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        return (make, (self.shape, self.dtype))

    def fill(self, value):
        return None

    def sort(self, *args, **kwargs):
        return None

    def nonzero(self):
        raise NotImplementedError("tapegrad cannot compute nonzero on the meta device: the shape of its result "
                                  "depends on the data")

    def argmax(self, *args, **kwargs):
        return _wrap(np.ndarray.argmax(self.view(np.ndarray), *args, **kwargs), "argmax")

    def argmin(self, *args, **kwargs):
        return _wrap(np.ndarray.argmin(self.view(np.ndarray), *args, **kwargs), "argmin")

    def item(self, *args):
        raise _value_read(RuntimeError(ITEM))

    def __float__(self):
        raise _value_read(RuntimeError(ITEM))

    __int__ = __index__ = __bool__ = __complex__ = __float__

    def tolist(self):
        raise _value_read(NotImplementedError(NO_DATA))

    def tobytes(self, order="C"):
        raise _value_read(NotImplementedError(NO_DATA))

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    __str__ = __repr__


def _value_read(user_error):
    """A value read from a meta array: torch's error when a Tensor method reads it for the user (item, bool, float,
    tolist), else the op that needed the value (an index check, a data-dependent branch) is named."""
    if sys._getframe(2).f_globals.get("__name__") in ("tapegrad.tensor", __name__):
        return user_error
    return NotImplementedError(f"tapegrad cannot compute {_op_name()} on the meta device: it reads the tensor's "
                               f"values")


# -- compiled kernels refuse meta arrays ---------------------------------------------------------------------------
_guarded = False


def _guard_kernels():
    """Kernel modules refuse a MetaArray (a kernel would read the zeros as data and write results into real arrays):
    done before the first meta array exists, so no kernel can be given one."""
    global _guarded
    kernels.refuse(MetaArray, lambda kernel: NotImplementedError(
        f"tapegrad cannot run {_op_name()} on the meta device (its compiled kernel needs data)"))
    _guarded = True


def _op_name():
    """The op being run: the outermost frame in tapegrad's op layers (else the innermost of tapegrad's)."""
    name, frame = None, sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith(("tapegrad.ops", "tapegrad.nn.functional", "tapegrad.linalg", "tapegrad.special",
                              "tapegrad.methods", "tapegrad.replay")):
            name = frame.f_code.co_name
        elif name is None and module.startswith("tapegrad.") and not module.startswith(("tapegrad.kernels",
                                                                                         "tapegrad._meta")):
            name = frame.f_code.co_name
        frame = frame.f_back
    return name or "this op"
