"""Tensor: a NumPy array, and where its value sits on the tape (a row), if it has a history.

A Tensor holds no graph object: `grad_fn` is made on demand from its tape row. Attribute defaults live
on the class, so making an op's result sets only the attributes that differ (the recording hot path).
"""
import builtins
import functools
import warnings
import weakref

import numpy as np

from . import _dtype, _format, _meta, _runtime, _strides
from ._meta import MetaArray
from .grad_mode import INFERENCE_ON, _state as _grad_state, is_grad_enabled
from .tape import F_REQ, F_STOP, OP_LEAF, _local as _tape_local, NOT_A_SLOT, new_version_cell, untraceable, Watch
from .device import check, CPU, META
from ._warnings import user_stacklevel

_F32, _F64, _I64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)


# -- views: torch's shared memory, over values that are stored contiguously ---------------------------------
# A view's value is a contiguous copy (what every kernel reads); its `_window` is the NumPy view of the storage
# that the copy mirrors. A write into any tensor over a storage is carried into the storage and into every live
# view of it that overlaps (ops.shape._written), so they agree as torch's views do. VIEWS: id(storage) -> [weak
# reference to the storage (its entry goes with it), weak references to the views of it, when to prune them].
VIEWS = {}


def storage_of(a):
    """The array that owns the memory a (a NumPy view, maybe of a view) lies in."""
    b = a.base
    while type(b) is np.ndarray:
        a, b = b, b.base
    return a


def register_view(t, window):
    """t's value mirrors `window`: writes into the storage reach it (ops.shape._written)."""
    t._window = window
    storage = storage_of(window)
    key = id(storage)
    entry = VIEWS.get(key)
    if entry is None:
        entry = VIEWS[key] = [weakref.ref(storage, lambda _, key=key: VIEWS.pop(key, None)), [], 8]
    refs = entry[1]
    refs.append(weakref.ref(t))
    if len(refs) > entry[2]:
        refs[:] = [r for r in refs if r() is not None]
        entry[2] = 2 * len(refs) + 8


def as_index(s):
    """s, or the int of an integer tensor of one element: torch takes such a tensor wherever it takes an int size or
    dim (`torch.zeros(lengths.max(), 2)`, `x.view(n, -1)`), through its __index__."""
    if isinstance(s, Tensor) and s._data.dtype.kind in "iu" and s._data.size == 1:
        return int(s._data.reshape(()))
    return s


def as_array(data, dtype=None):
    """A C-contiguous, native-byte-order ndarray for data (nested lists, scalars, arrays, Tensors)."""
    tensors = False
    if dtype is None and type(data) is float:  # (the common case first: torch.tensor(0.0))
        return np.array(data, _dtype.default_float.np)
    if isinstance(data, Tensor):
        data = data._data
        if type(data) is MetaArray:  # (torch.tensor(meta): a meta tensor, no values to copy)
            return data if dtype is None else _meta.make(data.shape, _dtype.to_numpy_dtype(dtype))
    elif isinstance(data, (list, tuple)) and any(isinstance(d, Tensor) for d in _flat(data)):
        tensors = [d for d in _flat(data) if isinstance(d, Tensor)]
        if any(type(d._data) is MetaArray for d in tensors):
            raise NotImplementedError(_meta.NO_DATA)
        if any(d._data.size != 1 for d in tensors):  # (a sequence's tensors are its numbers, as torch reads them)
            raise ValueError("only one element tensors can be converted to Python scalars")
        data = _tensors_as_scalars(data)
        tensors = True
    np_dtype = None if dtype is None else _dtype.to_numpy_dtype(dtype)
    if np_dtype is None and not isinstance(data, np.ndarray):
        np_dtype = _numpy_elements_dtype(data, warn=not (isinstance(data, list) and tensors))
    if np_dtype is None and not isinstance(data, np.ndarray):
        try:
            a = np.asarray(data)
        except ValueError as e:
            if "inhomogeneous" in str(e) and isinstance(data, (list, tuple)):
                _raise_ragged(data)
            raise
        if a.dtype.kind == "O" and any(isinstance(v, (float, np.floating)) for v in a.flat):
            a = a.astype(np.float64)  # a float beside an int past int64 (NumPy: objects): torch's is floating
        if a.dtype.kind == "f":
            np_dtype = _dtype.default_float.np  # torch.tensor([1.5]): Python floats take the default dtype
            if a.size and not any(isinstance(v, (float, np.floating))  # (a float first: it ends the walk at once)
                                  for v in _flat(data if isinstance(data, (list, tuple)) else [data])) \
                    and not np.all(np.abs(a) < 2.0 ** 63):
                raise ValueError("Overflow when unpacking long long")  # ints only, one past int64 (NumPy: float)
        elif a.dtype.kind in "iu" or (a.dtype.kind == "O" and any(type(v) is int for v in a.flat)):
            if a.dtype == np.uint64 or a.dtype.kind == "O":  # a Python int outside int64: torch's error
                raise ValueError("Overflow when unpacking long long")
            np_dtype = np.int64
        elif a.dtype.kind not in "b":
            raise TypeError(f"Could not infer dtype of {type(data).__name__}")
        data = a
    try:
        a = np.array(data, dtype=np_dtype, order="C", copy=True)
    except OverflowError:  # a Python int outside the dtype's range
        if np.dtype(np_dtype) == np.int64:
            raise ValueError("Overflow when unpacking long long") from None
        values = list(_flat(data)) if isinstance(data, (list, tuple)) else [data]
        if any(isinstance(v, int) and not -2 ** 63 <= v < 2 ** 63 for v in values):  # (torch's parser's error)
            raise ValueError("Overflow when unpacking long long") from None
        a = _wrapped_unsigned(values, data, np.dtype(np_dtype))
        if a is not None:
            return a
        raise RuntimeError(f"value cannot be converted to type {np.dtype(np_dtype).name} without overflow") from None
    if a.dtype.byteorder not in "=|":
        a = a.astype(a.dtype.newbyteorder("="))
    _dtype.from_numpy_dtype(a.dtype)  # torch's error for unsupported dtypes (object, complex, strings)
    return a


def _wrapped_unsigned(values, data, dt):
    """torch.tensor(ints, dtype=uint8): c10's checked conversion lets an int down to -max through, wrapped (two's
    complement: -1 is 255), where NumPy refuses it; None where that does not apply (the caller raises torch's error)."""
    if dt.kind != "u" or any(isinstance(v, (float, np.floating)) and v < 0 for v in values):
        return None  # (a float is checked against the dtype's range as it is: -1.0 is refused)
    try:
        wide = np.array(data, dtype=np.int64)
    except (OverflowError, ValueError, TypeError):
        return None
    limit = int(np.iinfo(dt).max)
    if wide.size and (int(wide.min()) < -limit or int(wide.max()) > limit):
        return None
    return wide.astype(dt)


def refuse_negative_strides(a):
    """torch's refusal of a NumPy array with a negative stride (`arr[::-1]`), which it cannot alias."""
    if a.ndim and min(a.strides) < 0:
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative strides "
                         "are not currently supported. (You can probably work around this by making a copy of your "
                         "array  with array.copy().) ")


def _tensors_as_scalars(seq):
    """A nested sequence with each (one-element) Tensor as a 0-d array of its value, as torch reads them."""
    return [_tensors_as_scalars(d) if isinstance(d, (list, tuple)) else
            d._data.reshape(()) if isinstance(d, Tensor) else d for d in seq]


_warned_array_list = False


def _numpy_elements_dtype(data, warn=True):
    """torch's dtype for data that holds NumPy scalars or arrays: their dtypes promoted with the Python numbers'
    (a float: the default dtype, an int: int64) as torch promotes (`torch.tensor(np.float64(1.5))` and
    `torch.tensor([np.ones(2), np.zeros(2)])` are float64); None for data of Python numbers only."""
    if isinstance(data, np.generic):
        return data.dtype
    if not isinstance(data, (list, tuple)):
        return None
    global _warned_array_list
    if warn and data and isinstance(data[0], np.ndarray) and not _warned_array_list:
        _warned_array_list = True  # (torch's TORCH_WARN_ONCE, at the caller's line)
        warnings.warn("Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider converting "
                      "the list to a single numpy.ndarray with numpy.array() before converting to a tensor.",
                      UserWarning, stacklevel=user_stacklevel())
    types, stack = set(), [data]
    while stack:  # (the leaves' types, a C-speed map per sequence: a list of 100,000 floats costs 2 ms)
        seq = stack.pop()
        kinds = set(map(type, seq))
        if list in kinds or tuple in kinds:
            stack.extend(s for s in seq if type(s) is list or type(s) is tuple)
            kinds -= {list, tuple}
        types |= kinds
    if not any(issubclass(t, (np.generic, np.ndarray)) for t in types):
        return None  # (Python numbers only: the general path)
    python_types = {builtins.float: _dtype.default_float.np, builtins.int: np.dtype(np.int64),
                    builtins.bool: np.dtype(np.bool_)}
    found = set()
    for v in _flat(data):
        python = python_types.get(type(v))
        if python is not None:
            found.add(python)
        elif isinstance(v, (np.generic, np.ndarray)):
            found.add(v.dtype)
        else:
            return None  # (another type: the general path says what torch says of it)
    if any(d.kind not in "biuf" and not _dtype.is_bfloat16(d) for d in found):
        return None
    return _dtype.result_type(*(np.empty(1, d) for d in found))


def _raise_ragged(data):
    """torch's error for nested sequences of unequal lengths: the sizes are the first elements' at each depth, and
    the first sequence (depth first) of another length, or a number where a sequence is due (or the other way
    round), is named."""
    sizes, seq = [], data
    while isinstance(seq, (list, tuple)):
        sizes.append(len(seq))
        if not seq:
            break
        seq = seq[0]
    floating = any(isinstance(v, (float, np.floating)) for v in _flat(data))

    def walk(obj, d):
        if d == len(sizes):
            if isinstance(obj, (list, tuple)):
                raise TypeError(f"must be real number, not {type(obj).__name__}" if floating else
                                f"'{type(obj).__name__}' object cannot be interpreted as an integer")
            return
        if not isinstance(obj, (list, tuple)):
            raise TypeError("not a sequence")
        if len(obj) != sizes[d]:
            raise ValueError(f"expected sequence of length {sizes[d]} at dim {d} (got {len(obj)})")
        for o in obj:
            walk(o, d + 1)
    walk(data, 0)


def _flat(seq):
    for s in seq:
        if isinstance(s, (list, tuple)):
            yield from _flat(s)
        else:
            yield s


def _new(data, requires_grad=False):
    t = Tensor.__new__(Tensor)
    # (a 0-d op on arrays returns a NumPy scalar: a Tensor's value is an array, which compiled code reads by id)
    t._data = data if isinstance(data, np.ndarray) else np.asarray(data)
    if INFERENCE_ON[0] and _grad_state.inference:
        t._inference = True
    if requires_grad:
        t.requires_grad = True
    return t


def wrap(tape, row):
    """A Tensor for the value at a row, connected to the tape (so create_graph can differentiate it): what rules,
    hooks and grad_fn's saved tensors receive."""
    t = _new(tape.values[row])
    t._tape, t._slot = tape, row
    t._vc = tape.cells.get(row)  # the value's version cell: rows recorded from t (create_graph) check its version
    if tape.flags[row] & F_REQ:
        t._requires_grad = True
        if tape.op[row] != OP_LEAF:
            t._is_leaf, t._op = False, int(tape.op[row])
    return t


_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "int64": "LongTensor",
               "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
               "bool": "BoolTensor", "bfloat16": "BFloat16Tensor"}


_TYPES_BY_NAME = {"torch." + name: dt for dt, name in _TYPE_NAMES.items()}


def tensor_type_name(a):
    return "torch." + _TYPE_NAMES[_dtype.from_numpy_dtype(a.dtype).name]


class Size(tuple):
    """torch.Size: a tuple that prints as torch does; its slices, sums and repeats are Sizes, as torch's."""

    def __new__(cls, sizes=()):
        if isinstance(sizes, Tensor):  # (torch.Size(torch.tensor([2, 3])): the tensor's values)
            sizes = sizes.tolist()
        return tuple.__new__(cls, [int(s) if isinstance(s, Tensor) else s for s in sizes])

    def __repr__(self):
        return f"torch.Size({list(self)})"

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return _size_of(item) if type(key) is slice else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _size_of(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _size_of(tuple.__add__(other, self))

    def __mul__(self, n):
        return _size_of(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


_size_of = functools.partial(tuple.__new__, Size)  # (a shape tuple as a Size without Size.__new__'s Python call)


# torch's warnings, without the "(Triggered internally at <torch's C++ source>)" it appends: tapegrad has no
# such source line to name.
NON_LEAF_GRAD_MESSAGE = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.")
INFERENCE_INPLACE_MESSAGE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal "
    "tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.")
SCALAR_MESSAGE = ("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                  "Consider using tensor.detach() first.")
_scalar_warned = False


class Tensor:
    _requires_grad = False
    _is_leaf = True
    _grad = None
    _tape = None
    _slot = NOT_A_SLOT
    _vc = None            # version cell: a one-element int64 array shared by tensors that share storage
    _hooks = None
    _post_accumulate_grad_hooks = None  # a leaf's: run with it once its .grad is accumulated (accumulate.py)
    _retains_grad = False
    _grad_fn = None
    _base = None          # the tensor a view was made from (torch's ._base)
    _strides = None       # the strides torch's view would have, in elements; None: contiguous (_strides.py)
    _window = None        # a view's: the NumPy view of its base's storage that its (copied) value mirrors
    _creation = None      # a view torch refuses recorded in-place ops on: "multi" (split, unbind), "no_grad"
    _views_without_cell = False  # a base's: views of it were made before it had a version cell (_ensure_vc)
    _inference = False    # made under inference_mode (is_inference)
    _transform_done = False  # a torch.func transform's own leaf, after its call (autograd/forward_ad.undo)
    _output_nr = 0
    _op = 0               # opcode of the op that made this tensor (its grad_fn's name)
    __array_priority__ = 1000  # make `ndarray * Tensor` defer to Tensor.__rmul__

    def __init__(self, *args, **kwargs):
        """torch.Tensor(data) or torch.Tensor(*sizes): float32, as torch's legacy constructor."""
        dtype = kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"Tensor() got unexpected keyword arguments {sorted(kwargs)}")
        np_dtype = _dtype.to_numpy_dtype(dtype or _dtype.default_float)
        if len(args) == 1 and isinstance(args[0], Size):  # (a torch.Size is the sizes, as torch's)
            self._data = np.zeros(tuple(args[0]), np_dtype)
        elif len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            if isinstance(args[0], np.ndarray):
                refuse_negative_strides(args[0])
            self._data = as_array(args[0], dtype=np_dtype)
        elif not args:  # (torch.Tensor(): an empty vector)
            self._data = np.zeros(0, np_dtype)
        elif all(isinstance(a, (int, np.integer)) for a in args):
            self._data = np.zeros(tuple(int(a) for a in args), np_dtype)
        else:
            raise TypeError("new(): invalid data type")

    # -- identity ---------------------------------------------------------------------------------
    @property
    def data(self):
        """The same storage with no history; changes through it are not version-tracked (as torch's .data)."""
        t = _new(self._data)
        if self._strides is not None:
            t._strides = self._strides
        if self._window is not None:
            register_view(t, self._window)
        return t

    @data.setter
    def data(self, value):
        self._data = as_array(value) if not isinstance(value, Tensor) else value._data
        self._slot = NOT_A_SLOT
        self._window = None  # (a view no more: its storage is another)

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._set_requires_grad(value, "only Tensors of floating point and complex dtype can require gradients")

    def _set_requires_grad(self, value, not_float_message):
        """The attribute and requires_grad_() differ only in torch's message for a non-float dtype."""
        if bool(value) == self._requires_grad:
            return  # no change (torch allows it on a non-leaf too); the tensor keeps its row and graph
        if not self._is_leaf:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if value and not _dtype.is_float(self._data.dtype):
            raise RuntimeError(not_float_message)
        if value and self._inference and not _grad_state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = bool(value)
        self._slot = NOT_A_SLOT
        if value and self._tape is not None:  # back on: the graphs recorded before reach its leaf row again, as
            self._slot = self._tape.leaf_row(self)  # torch's AccumulateGrad outlives the toggle

    def requires_grad_(self, requires_grad=True):
        self._set_requires_grad(requires_grad, "only Tensors of floating point dtype can require gradients")
        return self

    @property
    def is_leaf(self):
        return self._is_leaf

    @property
    def output_nr(self):
        """Its place among the outputs of the function that made it (chunk's second piece: 1)."""
        return self._output_nr

    def is_inference(self):
        """Whether it was made under inference_mode, or is a view of a tensor that was."""
        return self._inference

    @property
    def grad(self):
        if not self._is_leaf and not self._retains_grad and self._grad is None:
            # torch warns at every such read of an undefined .grad (backward(inputs=[t]) defines one); Python's
            # default filter shows it once per line of code
            warnings.warn(NON_LEAF_GRAD_MESSAGE, UserWarning, stacklevel=user_stacklevel())
        if _tape_local.tracing is not None:  # (tapegrad.compile: a .grad that a deferred backward sets)
            _tape_local.tape.read_grad(self)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                                   f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor are the "
                                   f"same size")
            dt = (value._values() if value.is_sparse else value)._data.dtype  # (a sparse COO gradient, as
            if dt != self._data.dtype:                                        # embedding(sparse=True)'s)
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_dtype.cpp_type_name(dt)}' to a tensor with "
                    f"grad_dtype '{_dtype.scalar_type_name(self._data.dtype)}'. The gradient must match the tensor's "
                    f"grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a "
                    f"specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of "
                    f"a tensor and its gradient may break downstream systems that assume they match.")
        if _tape_local.tracing is not None:  # (untraceable's test, first: zero_grad sets a thousand of these)
            untraceable("an assignment to .grad")
        self._grad = value

    @property
    def grad_fn(self):
        if self._is_leaf or self._tape is None:
            return None
        if self._grad_fn is None:
            from .autograd.graph import node_for
            self._tape.locate(self)  # (its row may have moved: Tape.compact)
            self._grad_fn = node_for(self._tape, self._slot, self._op, self._data)
        return self._grad_fn

    @property
    def _version(self):
        return 0 if self._vc is None else int(self._vc[0])

    def _bump_version(self):
        vc = self._ensure_vc()
        vc[0] += 1

    def _ensure_vc(self):
        """Give this storage a version cell the tape can read, and point this tensor's row at it. A tensor
        for a row that already has a cell (backward's wrapper of a saved input) shares the storage, so it
        takes that cell: a fresh one would repoint the row away from the owner's, whose bumps it then misses.
        A view counts its base's versions: one not recorded, made while the base had no cell, has none either
        (ops._common._share_version) until the base makes one, which every such view of it then takes."""
        if self._vc is None:
            if self._base is not None:
                self._vc = self._base._ensure_vc()
                return self._vc
            tape = self._tape
            row = tape.locate(self) if tape is not None else -1  # (locate: the row may have moved, Tape.compact)
            cell = tape.cells.get(row) if row >= 0 else None
            if cell is None:
                cell = new_version_cell()
                if row >= 0:
                    tape.set_cell(row, cell)
            self._vc = cell
            if self._views_without_cell:
                entry = VIEWS.get(id(storage_of(self._data if self._window is None else self._window)))
                for ref in entry[1] if entry is not None else ():
                    view = ref()
                    if view is not None and view._base is self and view._vc is None:
                        view._vc = cell  # (no row: a row that reads a view gives it a cell first, Tape.slot)
        return self._vc

    # -- shape and conversion -----------------------------------------------------------------------
    @property
    def shape(self):
        return _size_of(self._data.shape)

    def size(self, dim=None):
        shape = self._data.shape
        if dim is None:
            return _size_of(shape)
        if type(dim) is int and -len(shape) <= dim < len(shape):  # (the common case: no import, no checks)
            return shape[dim]
        from .ops import _dim
        return shape[_dim(dim, len(shape))]

    @property
    def dtype(self):
        return _dtype.from_numpy_dtype(self._data.dtype)

    @property
    def device(self):
        return META if type(self._data) is MetaArray else CPU

    @property
    def is_cpu(self):
        return type(self._data) is not MetaArray

    @property
    def is_meta(self):
        return type(self._data) is MetaArray

    def get_device(self):
        return -1  # torch's answer for a CPU tensor

    @property
    def is_cuda(self):
        return False

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self._data.itemsize

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """The type's name ('torch.FloatTensor'), or this tensor converted to a dtype, a legacy tensor type
        (torch.FloatTensor) or a type's name."""
        if dtype is None:
            return tensor_type_name(self._data)
        if isinstance(dtype, str):
            if dtype.startswith("torch.cuda."):
                raise AssertionError("Torch not compiled with CUDA enabled")
            named = _TYPES_BY_NAME.get(dtype)
            if named is None:
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = getattr(_dtype, named)
        elif isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), _dtype.dtype):
            if dtype.is_cuda:  # (torch.cuda.FloatTensor: as its name above)
                raise AssertionError("Torch not compiled with CUDA enabled")
            dtype = dtype.dtype  # (torch.FloatTensor and the other legacy types)
        elif not isinstance(dtype, _dtype.dtype):
            raise TypeError("dtype must be a type, str, or dtype object")
        return self.to(dtype)

    def item(self):
        if _tape_local.tracing is not None and self._data.size == 1:  # (tapegrad.compile: a guarded value)
            return _tape_local.tape.read_value(self, "item")
        data = self._data
        if data.size != 1:
            raise RuntimeError(f"a Tensor with {data.size} elements cannot be converted to Scalar")
        if data.dtype.kind in "fiub":  # (NumPy's own dtypes; bfloat16's item() would keep its scalar type)
            return data.item()
        return data.reshape(-1)[0].item()

    def tolist(self):
        if _tape_local.tracing is not None:  # (tapegrad.compile: guarded values)
            return _tape_local.tape.read_value(self, "tolist")
        return self._data.tolist()

    def numpy(self, force=False):
        # (tapegrad.compile, first: a trace's tensors require grad where the call's may not, every float argument
        # being a leaf of the trace, and a custom Function's grad_output)
        untraceable("a value read into Python (numpy)")
        if type(self._data) is MetaArray:
            raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                            "to host memory first.")
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        if _dtype.is_bfloat16(self._data.dtype):  # (NumPy has no bfloat16 of its own: torch refuses too)
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._data

    def __array__(self, dtype=None, copy=None):
        untraceable("a value read into Python (__array__)")
        if type(self._data) is MetaArray or self._requires_grad:
            self.numpy()  # (torch's error)
        return self._data if dtype is None else self._data.astype(dtype)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy ufunc of a tensor gives a tensor (`np.exp(t)`), bools as uint8, as torch's __array_wrap__."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return _new(array if array.flags.c_contiguous else array.copy(order="C"))

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __float__(self):  # (complex(t) and "%f" % t come here too, as in torch)
        global _scalar_warned
        if self._requires_grad and (not _scalar_warned or _runtime.warn_always) and is_grad_enabled():
            _scalar_warned = True  # torch warns once per process (TORCH_WARN_ONCE)
            warnings.warn(SCALAR_MESSAGE, UserWarning, stacklevel=user_stacklevel())
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self.item())

    def __int__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        if _tape_local.tracing is not None:  # (tapegrad.compile: a guarded branch)
            return _tape_local.tape.read_value(self, "bool")
        return bool(self._data.reshape(-1)[0])

    def __hash__(self):
        return id(self)

    def __repr__(self):
        suffixes = []
        if self.grad_fn is not None:
            suffixes.append(f"grad_fn=<{type(self.grad_fn).__name__}>")
        elif self._requires_grad:
            suffixes.append("requires_grad=True")
        name = _dtype.from_numpy_dtype(self._data.dtype)
        if type(self._data) is MetaArray:  # (torch's form: no values; the suffixes wrap as its do)
            head = ["device='meta'", f"size={tuple(self._data.shape)}"]
            head += [] if name is _dtype.default_float else [f"dtype={name!r}"]
            return _format._add_suffixes("tensor(...", head + suffixes, len("tensor("))
        return _format.format_tensor(self._data, repr(name), name is _dtype.default_float, suffixes)

    def __format__(self, spec):
        # torch: a plain 0-d tensor formats its number (f"{loss}" and f"{loss:.4f}"); anything else is object's
        if type(self._data) is MetaArray:
            return object.__format__(self, spec)
        if self._data.ndim == 0 and type(self) is Tensor:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __reduce__(self):
        return (_rebuild, (self._data, self._requires_grad))

    def __deepcopy__(self, memo):
        if not self._is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                               "because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        t = type(self).__new__(type(self))
        t._data = self._data.copy()
        if self._requires_grad:
            t._requires_grad = True
        if self._grad is not None:
            t._grad = _new(self._grad._data.copy())
        memo[id(self)] = t
        return t

    # -- autograd --------------------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from .autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self):
        t = _new(self._data)
        t._vc = self._ensure_vc()  # shares storage and version counter, as torch's detach()
        if self._strides is not None:
            t._strides = self._strides
        if self._window is not None:
            register_view(t, self._window)
        return t

    def detach_(self):
        if not self._is_leaf and self._tape is not None:
            self._tape = None
            self._slot = NOT_A_SLOT
        self._requires_grad, self._is_leaf, self._grad_fn = False, True, None
        return self

    def retain_grad(self):
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if not self._is_leaf and not self._retains_grad:
            self._retains_grad = True
            self._watch()

    @property
    def retains_grad(self):
        return self._retains_grad

    def register_hook(self, hook):
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        untraceable("a hook or retain_grad")  # (a parameter's hook would stay registered)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        if not self._is_leaf:
            self._watch()
        return _HookHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(tensor) runs after a backward accumulated this leaf's .grad (not for autograd.grad), under no_grad
        unless create_graph; it returns None."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if not self._is_leaf:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        untraceable("a hook or retain_grad")
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = []
        self._post_accumulate_grad_hooks.append(hook)
        return _HookHandle(self._post_accumulate_grad_hooks, hook)

    def _watch(self):
        """Make the replay stop at this tensor's row, so Python can run its hooks and retain its grad."""
        untraceable("a hook or retain_grad")
        tape = self._tape
        s = tape.slot(self)  # its current row (a stale one may now be another tensor's: Tape.compact)
        tape.mark(s, F_STOP)
        tape.watch[s] = Watch(self)  # (its hooks outlive it, as torch's live on the graph node)

    # -- dtype conversion ----------------------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """to(dtype), to(device, dtype=None), to(tensor), each with non_blocking=False, copy=False. A device
        other than the CPU and meta raises torch's error for it (tapegrad computes on the CPU only)."""
        fmt = _memory_format_arg("to", kwargs.get("memory_format"))
        dtype, device, copy = _parse_to(args, kwargs)
        if device is not None and (check(device)._type == "meta") != (type(self._data) is MetaArray):
            return self._to_meta(dtype)
        if dtype is None or _dtype.to_numpy_dtype(dtype) == self._data.dtype:
            out = self.clone() if copy else self
        else:
            from .ops import to_dtype
            out = to_dtype(self, dtype)
            if self._strides is not None and _strides.is_dense(self._data.shape, self._strides):
                out._strides = self._strides  # (preserve_format: a dense layout is kept, as torch's _to_copy)
        if fmt is not None and fmt is not preserve_format:  # (torch: a copy in that format where it differs)
            if out is self:
                if _suggested_format(self) is fmt:
                    return self
                from . import ops  # (ToCopyBackward0, as torch's _to_copy)
                out = ops._common._record(ops._common.OPS["cast"], np.array(self._data, copy=True), (self,))
            out._strides = None if fmt is contiguous_format else \
                _strides.normal(out._data.shape, _format_strides(out._data.shape, fmt))
        return out

    def _to_meta(self, dtype):
        """A CPU tensor's meta copy (recorded, as torch's ToCopyBackward0); a meta tensor has nothing to copy out."""
        if type(self._data) is MetaArray:
            raise NotImplementedError(_meta.NO_DATA)
        value = _meta.make(self._data.shape, self._data.dtype if dtype is None else _dtype.to_numpy_dtype(dtype))
        if self._requires_grad and is_grad_enabled():
            from . import ops
            out = ops._common._record(ops._common.OPS["cast"], value, (self,))  # (torch's ToCopyBackward0)
        else:
            out = _new(value)
        out._strides = self._strides
        return out

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        raise AssertionError("Torch not compiled with CUDA enabled")

    # (a tensor already of the dtype is itself, as `to` returns it: the common `.float()` / `.long()` asks nothing more)
    def float(self, memory_format=None):
        return self if self._data.dtype == _F32 else self._convert(_dtype.float32, memory_format)

    def double(self, memory_format=None):
        return self if self._data.dtype == _F64 else self._convert(_dtype.float64, memory_format)

    def half(self, memory_format=None):
        return self._convert(_dtype.float16, memory_format)

    def bfloat16(self, memory_format=None):
        return self._convert(_dtype.bfloat16, memory_format)

    def long(self, memory_format=None):
        return self if self._data.dtype == _I64 else self._convert(_dtype.int64, memory_format)

    def int(self, memory_format=None):
        return self._convert(_dtype.int32, memory_format)

    def bool(self, memory_format=None):
        return self._convert(_dtype.bool, memory_format)

    def _convert(self, dtype, memory_format):
        """x.float() & co.: x itself when already of the dtype (whatever memory_format asks, as torch's), else
        to(dtype, memory_format=memory_format)."""
        if _dtype.to_numpy_dtype(dtype) == self._data.dtype:
            return self
        if memory_format is preserve_format or memory_format is None:
            return self.to(dtype)
        return self.to(dtype, memory_format=memory_format)

    def cpu(self):
        if type(self._data) is MetaArray:
            raise NotImplementedError(_meta.NO_DATA)
        return self

    def stride(self, dim=None):
        """torch's strides for this tensor's layout: what its views would have (the values themselves are
        always stored contiguously, see _strides.py)."""
        strides = _strides.of(self)
        if dim is None:
            return strides
        from .ops import _dim
        return strides[_dim(dim, self._data.ndim)]

    def is_contiguous(self, memory_format=None):
        fmt = _memory_format_arg("is_contiguous", memory_format)
        if fmt is channels_last or fmt is channels_last_3d:
            return _strides_in_format(self._data.shape, _strides.of(self), fmt)
        return _strides.is_contiguous(self._data.shape, self._strides)

    def contiguous(self, memory_format=None):
        """A tensor with torch's strides for memory_format (the values themselves are stored in C order
        whatever the format: only stride() and is_contiguous() see it)."""
        fmt = _memory_format_arg("contiguous", memory_format)
        if fmt is channels_last or fmt is channels_last_3d:
            target = _format_strides(self._data.shape, fmt)
            if self.is_contiguous(memory_format=fmt):
                return self
            from .ops import clone
            t = clone(self)
            t._strides = _strides.normal(self._data.shape, target)
            return t
        if self.is_contiguous():
            return self
        from .ops import clone
        t = clone(self)  # CloneBackward0, as torch's contiguous() records
        t._strides = None
        return t

    def is_floating_point(self):
        return _dtype.is_float(self._data.dtype)


class memory_format:
    """torch.memory_format: the stride order a tensor's strides report (tapegrad stores every value in C order;
    channels_last and channels_last_3d change only what stride() and is_contiguous() answer)."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
_FORMAT_ORDER = {"channels_last": (4, (1, 3, 2, 0)), "channels_last_3d": (5, (1, 4, 3, 2, 0))}


def _memory_format_arg(fn, fmt):
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not {type(fmt).__name__}")
    return fmt


def _format_strides(shape, fmt):
    """torch's strides of a dense tensor of this shape in channels_last(_3d) order (torch's raw sizes)."""
    rank, order = _FORMAT_ORDER[fmt._name]
    if len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    strides, step = [0] * rank, 1
    for d in order:
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def _suggested_format(t):
    """torch's suggest_memory_format: channels_last(_3d) where a 4-d (5-d) tensor's strides read as that layout by
    torch's rules (is_channels_last_strides_2d/3d: ambiguous cases, such as size-1 dimensions of equal strides, are
    contiguous_format), else contiguous_format."""
    shape = t._data.shape
    if t._strides is None or len(shape) not in (4, 5):
        return contiguous_format
    fmt = channels_last if len(shape) == 4 else channels_last_3d
    strides = t._strides
    if strides[1] == 0:
        return contiguous_format
    low = 0
    for d in _FORMAT_ORDER[fmt._name][1]:
        if shape[d] == 0 or strides[d] < low or (d == 0 and low == strides[1]):
            return contiguous_format
        low = strides[d] * shape[d] if shape[d] > 1 else strides[d]
    return fmt


def _strides_in_format(shape, strides, fmt):
    """torch's channels-last contiguity test: the dimensions longer than 1, in the format's order."""
    rank, order = _FORMAT_ORDER[fmt._name]
    if len(shape) != rank:
        return False
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


class _HookHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _parse_to(args, kwargs):
    """Tensor.to's overloads -> (dtype or None, device or None, copy)."""
    kwargs = dict(kwargs)
    dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    copy = kwargs.pop("copy", False)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments - got unexpected keyword "
                        f"arguments {sorted(kwargs)}")
    rest = list(args)
    if rest and isinstance(rest[0], Tensor):
        other = rest.pop(0)
        dtype, device = other.dtype, other.device
    elif rest and isinstance(rest[0], _dtype.dtype):
        dtype = rest.pop(0)
    elif rest and not isinstance(rest[0], bool):
        device = rest.pop(0)
        if rest and isinstance(rest[0], _dtype.dtype):
            dtype = rest.pop(0)
    if rest:  # the positional non_blocking, copy
        if len(rest) > 2 or not all(isinstance(r, bool) for r in rest):
            raise TypeError(f"to() received an invalid combination of arguments - got {tuple(args)}")
        if len(rest) == 2:
            copy = rest[1]
    return dtype, device, copy


def _rebuild(data, requires_grad):
    return _new(data, requires_grad)
