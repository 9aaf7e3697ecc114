"""Shape and data movement: reshape and views, and the gather mechanism (index map forward, scatter-add
adjoint) that transpose, permute, slicing, indexing, repeat, flip, split, gather and index_select share.

A view-like op computes its value with NumPy (a strided view, copied) and, only when it is recorded,
the index map of that view: map[i] = the flat position in the input of output element i.
"""
import builtins
import math
import numbers
import warnings

import numpy as np

from .. import _dtype, _meta, _strides, registry
from ..registry import K_GATHER, K_RESHAPE
from ..grad_mode import _state as _grad_state, is_grad_enabled
from ..tensor import INFERENCE_INPLACE_MESSAGE, Tensor, _new, VIEWS, as_index
from .elementwise import copy as _clone_row, where
from ._common import (broadcast_shape, _array_rule_dtype, _as_view, _dim, _dims, _min_max, OPS, _record, _sizes,
                      _sizes_or_keyword,
                      _tensor, _to_dtype, _cpp_int_name, scalar_to_dtype, storage_of)
from ..tape import _local as _tape_local, guard, made_in_trace
from .reduce import expand
from .._warnings import user_stacklevel


def _recording(*xs):  # (tapegrad.compile records data movement on constants too: a replay recomputes it)
    if not _grad_state.enabled:
        return False
    for x in xs:  # (a loop, not any() of a generator: a view op's hot path)
        if x._requires_grad:
            return True
    return _tape_local.tracing is not None


# -- reshapes ---------------------------------------------------------------------------------------------
def _reshape(x, shape, op):
    """A view: it shares x's storage and version counter, as torch's views do, so a write through
    either one reaches the other, and is caught by the version check of every row that saved the other.
    Where x is a view whose memory cannot take the shape, torch's reshape copies: a tensor of its own."""
    recording = x._requires_grad or _tape_local.tracing is not None
    data = x._data.reshape(shape)
    window = data
    if x._window is not None and x._window is not x._data:  # (x a reshape: its window is its value)
        window = x._window.reshape(shape)
        if not np.may_share_memory(window, x._window):  # (NumPy copied: not a view in torch either)
            data = data.copy()
            return _record(op, data, (x,)) if recording else _new(data)
    t = _record(op, data, (x,)) if recording else _new(data)
    if x._strides is not None:  # (reshape copies where view cannot: contiguous then)
        new = _strides.of_view(x._data.shape, x._strides, shape)
        t._strides = None if new is None else _strides.normal(shape, new)
    return _as_view(x, t, window)


def _infer_shape(x, shape):
    numel = x._data.size
    if -1 in shape:
        known = -math.prod(shape)
        if known > 0 and not numel % known and shape.count(-1) == 1 and builtins.min(shape) == -1:
            i = shape.index(-1)  # (the common case: one -1 among positive sizes that divide the rest)
            return shape[:i] + (numel // known,) + shape[i + 1:]
        if shape.count(-1) > 1:
            raise RuntimeError("only one dimension can be inferred")
        known = -math.prod(shape)  # (the product of the other sizes)
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                               f"unspecified dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if shape and builtins.min(shape) < 0:
        raise RuntimeError(f"invalid shape dimension {builtins.min(shape)}")
    if math.prod(shape) != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def reshape(input, *sizes, shape=None):
    x = _tensor(input)
    return _reshape(x, _infer_shape(x, _sizes(_sizes_or_keyword(sizes, shape, "reshape", "shape"))), OPS["reshape"])


def view(input, *sizes, size=None):
    x = _tensor(input)
    if size is not None:
        sizes = _sizes_or_keyword(sizes, size, "view", "size")
    if len(sizes) == 1 and isinstance(sizes[0], _dtype.dtype):
        raise NotImplementedError("tapegrad: view(dtype) is not supported")
    shape = _infer_shape(x, _sizes(sizes))
    if x._strides is not None and _strides.of_view(x._data.shape, x._strides, shape) is None:
        raise RuntimeError(_strides.VIEW_MESSAGE)
    return _reshape(x, shape, OPS["view"])


def flatten(input, start_dim=0, end_dim=-1):
    x = _tensor(input)
    shape = x._data.shape
    ndim = len(shape)
    if ndim == 0:
        return _reshape(x, (1,), OPS["view"])
    s, e = _dim(start_dim, ndim), _dim(end_dim, ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return x
    return _reshape(x, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:], OPS["view"])


def unflatten(input, dim, sizes):
    x = _tensor(input)
    shape = x._data.shape
    d = _dim(dim, len(shape))
    sizes = _sizes(tuple(sizes))
    inner = _infer_shape(_new(np.empty(shape[d], np.bool_)), sizes)
    return _reshape(x, shape[:d] + inner + shape[d + 1:], OPS["view"])


def squeeze(input, dim=None):
    x = _tensor(input)
    shape = x._data.shape  # (a tuple: x.shape makes a Size)
    if dim is None:
        return _reshape(x, tuple(s for s in shape if s != 1) if 1 in shape else shape, OPS["squeeze"])
    ndim = len(shape)
    if type(dim) is int and -ndim <= dim < ndim:  # (the common case: one dim, in range)
        d = dim % ndim
        return _reshape(x, shape[:d] + shape[d + 1:] if shape[d] == 1 else shape, OPS["squeeze_dim"])
    dims = _dims(dim, ndim)
    op = OPS["squeeze_dims" if isinstance(dim, (tuple, list)) else "squeeze_dim"]
    return _reshape(x, tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1)), op)


def unsqueeze(input, dim):
    x = _tensor(input)
    shape = x._data.shape  # (a tuple: a Size's slices and sums run Python, 1 us of a 2.5 us unsqueeze)
    d = _dim(dim, len(shape) + 1)
    return _reshape(x, shape[:d] + (1,) + shape[d:], OPS["unsqueeze"])


# -- the gather mechanism -----------------------------------------------------------------------------------
def _gather(x, index_map, op=None, out=None):
    """out = x.flat[index_map] with the adjoint scatter-add: the one mechanism for data movement.
    `out` may be given when the caller computed the same values faster (a NumPy view, copied)."""
    index_map = np.asanyarray(index_map, dtype=np.int64, order="C")
    if out is None:
        out = np.asanyarray(x._data.reshape(-1)[index_map])
    if not _recording(x):
        return _new(out)
    return _record(op or OPS["gather_flat"], out, (x,), 0.0, 0.0, id(index_map), index_map)


def _index_map(x):
    return np.arange(x.numel(), dtype=np.int64).reshape(x.shape)


def _view_map(base, v):
    """The index map of a NumPy view v of the C-contiguous array base: its offset and strides, in elements.
    Maps are read-only and remembered by (offset, shape, strides): a training step takes the same views of
    same-shaped values every step, and building a map costs a pass over an int64 array of the view's size."""
    item = base.itemsize
    offset = (v.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    key = (offset, v.shape, tuple(s // item for s in v.strides))
    m = _VIEW_MAPS.get(key)
    if m is not None:
        return m
    m = np.zeros(v.shape, np.int64)
    if v.size:
        m += offset
        for d in range(v.ndim):
            n, s = v.shape[d], v.strides[d] // item
            if n > 1 and s:
                m += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (v.ndim - d - 1))
    return _remember_map(key, m)


def _remember_map(key, m):
    """Keep the index map m (made read-only) under key, within 64 MB of maps, the oldest going first; returns m.
    Keys: a view's (offset, shape, strides); other makers' keys start with their name (a str)."""
    m.setflags(write=False)
    global _view_map_bytes
    if m.nbytes <= _VIEW_MAPS_BYTES // 8:
        while _VIEW_MAPS and _view_map_bytes + m.nbytes > _VIEW_MAPS_BYTES:  # the oldest go first
            _view_map_bytes -= _VIEW_MAPS.pop(next(iter(_VIEW_MAPS))).nbytes
        _VIEW_MAPS[key] = m
        _view_map_bytes += m.nbytes
    return m


_VIEW_MAPS, _VIEW_MAPS_BYTES, _view_map_bytes = {}, 64 << 20, 0


class _StridedView(np.ndarray):
    """A gather row's aux when its gather is a strided view of the input (transpose, permute, slices,
    split, select, diagonal): int64 (offset, ndim, shape..., strides...) in the input's elements, instead of
    an index map of the view's size (8 bytes an element, and a load per element in the adjoint). The row
    says so with c = 1.0; the compiled replay adds its adjoint through the strides (kernels/runtime.py), a
    Python rule or a replayed forward makes the view again (as_strided) or its index map (index_map)."""

    def index_map(self):
        offset, nd = int(self[0]), int(self[1])
        shape, strides = tuple(int(n) for n in self[2:2 + nd]), tuple(int(s) for s in self[2 + nd:2 + 2 * nd])
        m = np.full(shape, offset, np.int64)
        for d in range(nd):
            m += (np.arange(shape[d], dtype=np.int64) * strides[d]).reshape((shape[d],) + (1,) * (nd - d - 1))
        return m

    def view_of(self, x):
        """The same view of x (a C-contiguous array of the gathered input's shape)."""
        nd = int(self[1])
        strides = self[2 + nd:2 + 2 * nd]
        if (strides < 0).any():
            return x.reshape(-1)[self.index_map()]
        flat = x.reshape(-1)
        return np.lib.stride_tricks.as_strided(flat[int(self[0]):], tuple(int(n) for n in self[2:2 + nd]),
                                               tuple(int(s) * flat.itemsize for s in strides))


def _strided_view(base, v, offset=None):
    """The _StridedView of a NumPy view v of the C-contiguous array base, remembered by its values. `offset`: v's
    first element's index in base, where the caller knows it from the key (_key_offset), else read from the two
    arrays' addresses (their __array_interface__: 1 us each)."""
    item = base.itemsize
    if offset is None or not v.size:
        offset = (v.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    key = (offset, item, v.shape, v.strides)  # (strides in bytes: dividing them here cost a generator per call)
    d = _STRIDED.get(key)
    if d is None:
        if len(_STRIDED) > 4096:
            _STRIDED.clear()
        values = (offset, v.ndim) + v.shape + tuple(s // item for s in v.strides)
        d = _STRIDED[key] = np.array(values, np.int64).view(_StridedView)
        d.setflags(write=False)
    return d


_STRIDED = {}  # (offset, itemsize, shape, byte strides) -> its _StridedView


def _key_offset(shape, key):
    """The index in a C-contiguous array of `shape` of the first element of its view a[key], for a key of ints in
    bounds and plain slices over its leading dimensions (what getitem's fast paths take); None for an empty one."""
    offset, inner = 0, math.prod(shape)
    if not inner:
        return None
    for n, k in zip(shape, key):
        inner //= n
        offset += ((k + n if k < 0 else k) if type(k) is int else k.indices(n)[0]) * inner
    return offset


def _view_op(x, view, op, output_nr=None, offset=None, key=None):
    """The op whose value is the NumPy view `view(x's data)`, copied (C-contiguous), and torch's view of x:
    its window is the same view of x's window (all but flip, which copies in torch too). Its row is a
    gather described by the view's strides (_StridedView), not by an index map (`offset`: the view's first
    element's index in x; `key`: the basic key whose offset _key_offset works out, only when the view is recorded)."""
    v = view(x._data)
    t = _strided_copy(x, v, op, offset, key)
    # (a view NumPy laid out as its C-contiguous copy has torch's contiguous strides too, where no size is 0)
    strides = None if x._strides is None and v.strides == t._data.strides and 0 not in v.shape else \
        _strides.of_numpy_view(x, v if type(v) is not _meta.MetaArray else view(_meta.strided(x._data)))
    if strides is not None:
        t._strides = strides
    if op.name == "flip":  # (torch's flip copies)
        return t
    return _as_view(x, t, v if x._window is None else view(x._window), output_nr)


def _strided_copy(x, v, op, offset=None, key=None):
    """The NumPy view v of x's data, copied C-contiguous, as a tensor of its own: a gather row described by v's
    strides (_StridedView) when x is recorded."""
    out = v.copy() if type(v) is np.ndarray else np.array(v, order="C", copy=True, subok=True)  # (copy: C order)
    if not _recording(x):
        return _new(out)
    if key is not None:
        offset = _key_offset(x._data.shape, key)
    d = _strided_view(x._data, v, offset)
    return _record(op, out, (x,), 1.0, 0.0, id(d), d)


def _row_copy(x, i):
    """x[i] along dim 0 as a tensor of its own, not a view: one gather row as x[i]'s, without a view's
    bookkeeping (its window, shared version, registration: about 10 us). For a layer's own outputs (nn.RNN's last
    state of each layer, stacked into h_n, which torch's is no view of the output either)."""
    return _strided_copy(x, x._data[i], OPS["select"], _key_offset(x._data.shape, (i,)))


def _same(a):
    return a


def scatter_flat(g, index_map, shape):
    """The adjoint of a gather: zeros of `shape` with g added at index_map (differentiable)."""
    g = _tensor(g)
    out = np.zeros_like(g._data, shape=math.prod(shape))  # (zeros_like: a meta g gives a meta result)
    np.add.at(out, index_map.reshape(-1), g._data.reshape(-1))
    return _record(OPS["scatter_flat"], out.reshape(shape), (g,), aux=(index_map, tuple(shape)))


def _scatter_forward(ctx, g):
    index_map, shape = ctx
    out = np.zeros_like(g, shape=math.prod(shape))  # (zeros_like: a meta g gives a meta result)
    np.add.at(out, index_map.reshape(-1), g.reshape(-1))
    return out.reshape(shape)


# -- writes through views: torch's shared memory and CopySlices ------------------------------------------------
OVERLAP_MESSAGE = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                   "location. Please clone() the tensor before performing the operation.")


_MULTI = (" This view is the output of a function that returns multiple views. Such functions do not allow the "
          "output views to be modified inplace. You should replace the inplace operation by an out-of-place one.")
_NO_GRAD = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
            "moving both the view and the inplace either both inside the no_grad block (if you don't want the "
            "inplace to be tracked) or both outside (if you want the inplace to be tracked).")


def _check_recordable(t, recorded):
    """torch's refusals of an in-place op on a view under grad mode: a recorded one on one of several views a
    function returned (split, chunk, unbind, and views of them), or any on a view made under no_grad of a
    tensor that requires grad."""
    how = t._creation
    if how is None or not is_grad_enabled() or (not recorded if how == "multi" else not t._base._requires_grad):
        return
    if t._requires_grad:
        name = type(t.grad_fn).__name__
        name = name[:name.rindex("Backward")] if "Backward" in name else name
        message = f"Output {t._output_nr} of {name} is a view and is being modified inplace."
    else:
        message = "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
    raise RuntimeError(message + (_MULTI if how == "multi" else _NO_GRAD))


def _check_writable(t):
    """torch's refusals before a write into t: an inference tensor outside inference_mode, memory that is read-only,
    or a view (an expand) whose elements share memory."""
    if t._inference and not _grad_state.inference:
        raise RuntimeError(INFERENCE_INPLACE_MESSAGE)
    w = t._window
    if w is None:
        return
    if not w.flags.writeable:
        raise RuntimeError("tapegrad: this tensor's memory is read-only (it came from a read-only array)")
    if builtins.any(s == 0 and n > 1 for n, s in zip(w.shape, w.strides)):
        raise RuntimeError(OVERLAP_MESSAGE)


def _written(t, recorded=False):
    """t's value was just written in place (its version already bumped). Carry the write into the storage
    and into every live view of it that overlaps, as torch's shared memory does. When the write was
    recorded (t took the row of the op's result), t's base takes it into its history as torch's CopySlices
    does, and its views that overlap (or did not require grad) read the base's new value: their gradients
    then flow through the write, as the regenerated views of torch (AsStridedBackward0)."""
    window = t._window
    if window is None and not VIEWS:
        return
    data = t._data
    if window is not None and window is not data:
        np.copyto(window, data)
    region = data if window is None else window
    key = id(storage_of(region))
    entry = VIEWS.get(key)
    base = t if t._base is None else t._base
    if recorded and base is not t:
        _copy_slices(t, base)
    if entry is None:
        return
    live = []
    for ref in entry[1]:
        w = ref()
        if w is None:
            continue
        live.append(ref)
        other = w._window
        if w is t or other is None:  # (None: its storage was replaced, `.data = ...`)
            continue
        overlaps = np.may_share_memory(other, region)
        if overlaps and w._data is not other:
            np.copyto(w._data, other)
        if recorded and w._base is base and (overlaps or not w._requires_grad):
            _read_again(w, base)
    if live:
        entry[1][:] = live
    else:
        VIEWS.pop(key, None)


def _take_row(t, new, cell):
    """t's history becomes `new`'s row (whose value is t's own storage), checked against `cell`."""
    tape, row = new._tape, new._slot
    tape.set_cell(row, cell, current=True)
    t._tape, t._slot, t._requires_grad, t._is_leaf, t._op, t._grad_fn = tape, row, True, False, new._op, None


def _copy_slices(view, base):
    """torch's CopySlices: the base's new history is its old one with the written view's new value in the
    view's place. A view as large as its base (view, reshape, squeeze, ...) is the base reshaped."""
    if np.may_share_memory(view._data, base._data):
        new = _record(OPS["copy_slices_view"], base._data, (view,))
    else:
        new = _record(OPS["copy_slices"], base._data, (base, view), aux=_positions(base, view._window))
    _take_row(base, new, base._ensure_vc())


def _read_again(view, base):
    """A view of a base whose history changed reads the base's new value (torch regenerates it)."""
    if np.may_share_memory(view._data, base._data):
        new = _record(OPS["as_strided_view"], view._data, (base,))
    else:
        new = _gather(base, _positions(base, view._window), OPS["as_strided"], view._data)
    _take_row(view, new, view._ensure_vc())


def _positions(base, window):
    """The flat positions in base's value of the elements of `window` (a view into base's storage)."""
    if base._window is None:
        return _view_map(base._data, window)
    # base is itself a copied view (a detached view): look its elements' storage positions up
    storage = storage_of(base._window)
    mine, theirs = _view_map(storage, base._window).reshape(-1), _view_map(storage, window)
    order = np.argsort(mine, kind="stable")
    return order[np.searchsorted(mine, theirs, sorter=order)]


def _vjp_copy_slices(ctx, g, inputs, out):
    """ctx: the index map of the written view in the base."""
    mask = np.zeros(g.shape, np.bool_)
    mask.reshape(-1)[ctx.reshape(-1)] = True
    return where(_new(mask), 0.0, g), _gather(g, ctx)


def _copy_slices_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    flat = g.reshape(-1)
    mask = np.zeros(g.shape, np.bool_)
    mask.reshape(-1)[ctx.reshape(-1)] = True
    return np.where(mask, 0.0, g) if wanted[0] else None, flat[ctx] if wanted[1] else None


# -- permutations ---------------------------------------------------------------------------------------------
def transpose(input, dim0, dim1):
    x = _tensor(input)
    ndim = x._data.ndim
    if ndim == 0:
        _dim(dim0, 0), _dim(dim1, 0)
        return _view_op(x, _same, OPS["transpose"])
    d0, d1 = _dim(dim0, ndim), _dim(dim1, ndim)
    return _view_op(x, lambda a: a.swapaxes(d0, d1), OPS["transpose"], offset=0)


swapaxes = swapdims = transpose


def _transpose_as_in_place(x, dim0, dim1):
    """transpose(x, dim0, dim1) under the name of torch's in-place transpose_ (TransposeBackward1), for a
    result torch makes so from a tensor no one else holds (nn.RNN's and nn.GRU's batch_first output)."""
    return _view_op(x, lambda a: a.swapaxes(dim0, dim1), OPS["transpose_"], offset=0)


def t(input):
    x = _tensor(input)
    if x._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return _view_op(x, _transposed, OPS["t"], offset=0)


def _transposed(a):
    return a.transpose()  # (the method: np.transpose's dispatch costs 0.4 us more)


def permute(input, *order, dims=None):
    x = _tensor(input)
    dims = _sizes(_sizes_or_keyword(order, dims, "permute", "dims"))
    ndim = x._data.ndim
    norm = _PERMUTATIONS.get((dims, ndim))  # (checked once: a program permutes its few ranks the same few ways)
    if norm is None:
        if len(dims) != ndim:
            raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                               f"length of the desired ordering of dimensions i.e. input.dim() = {ndim} is not "
                               f"equal to len(dims) = {len(dims)}")
        norm = tuple(_dim(d, ndim) for d in dims)
        if len(set(norm)) != len(norm):
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        if len(_PERMUTATIONS) >= 1024:
            _PERMUTATIONS.clear()
        _PERMUTATIONS[dims, ndim] = norm
    return _view_op(x, lambda a: a.transpose(norm), OPS["permute"], offset=0)


_PERMUTATIONS = {}  # (permute's dims, as Python ints, and the rank) -> the dims in range [0, rank)


def movedim(input, source, destination):
    x = _tensor(input)
    given = [list(d) if isinstance(d, (tuple, list)) else [d] for d in (source, destination)]
    if len(given[0]) != len(given[1]):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({given[0]} dims) should "
                           f"contain the same number of dims as destination ({given[1]} dims)")
    src = tuple(_dim(d, x.ndim) for d in given[0])
    dst = tuple(_dim(d, x.ndim) for d in given[1])
    for name, dims, g in (("source", src, given[0]), ("destination", dst, given[1])):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({g})")
    return _view_op(x, lambda a: np.moveaxis(a, src, dst), OPS["permute"], offset=0)


def flip(input, *dims, **kw):
    x = _tensor(input)
    if "dims" in kw:
        dims = (kw.pop("dims"),)
    if kw:
        raise TypeError(f"flip() got an unexpected keyword argument '{next(iter(kw))}'")
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    dims = _dims(tuple(dims), x.ndim)
    if x.ndim == 0:
        return _view_op(x, _same, OPS["flip"])
    return _view_op(x, lambda a: np.flip(a, dims), OPS["flip"])


def repeat(input, *sizes, repeats=None):
    x = _tensor(input)
    sizes = _sizes(_sizes_or_keyword(sizes, repeats, "repeat", "repeats"))
    if len(sizes) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    if builtins.any(s < 0 for s in sizes):
        shape = [s * r for s, r in zip((1,) * (len(sizes) - x.ndim) + x.shape, sizes)]
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(shape)}: {shape}")
    data = x._data.reshape((1,) * (len(sizes) - x.ndim) + x.shape)
    out = np.tile(data, sizes)
    if not _recording(x):
        return _new(out)
    return _gather(x, np.tile(np.arange(x.numel(), dtype=np.int64).reshape(data.shape), sizes), OPS["repeat"], out)


def expand_as(input, other):
    return expand(input, _tensor(other).shape)


def diagonal(input, offset=0, dim1=0, dim2=1):
    x = _tensor(input)
    d1, d2 = _dim(dim1, x.ndim), _dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _view_op(x, lambda a: np.diagonal(a, int(offset), d1, d2), OPS["diagonal"])


def tril(input, diagonal=0):
    return _triangle("tril", np.tril, input, diagonal)


def triu(input, diagonal=0):
    return _triangle("triu", np.triu, input, diagonal)


def _triangle(name, np_fn, input, diagonal):
    x = _tensor(input)
    if x.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    out = np.asanyarray(np_fn(x._data, int(diagonal)), order="C")
    return _record(OPS[name], out, (x,), aux=int(diagonal))


# -- pieces: narrow, select, split, chunk, unbind, cat, stack -------------------------------------------------
def narrow(input, dim, start, length):
    x = _tensor(input)
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, x.ndim)
    n = x.shape[d]
    if isinstance(start, Tensor) and (start.ndim or start._data.dtype.kind not in "iu"):
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    start, length = int(start), int(length)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _piece(x, d, start, length, OPS["slice"])


def _piece(x, d, start, length, op, output_nr=None):
    key = (slice(None),) * d + (slice(start, start + length),)
    return _view_op(x, lambda a: a[key], op, output_nr)


def select(input, dim, index):
    x = _tensor(input)
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, x.ndim)
    n = x.shape[d]
    i = int(index)
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(x.shape)} at dimension {d}")
    key = (slice(None),) * d + (i, Ellipsis)
    return _view_op(x, lambda a: a[key], OPS["select"])


def split(tensor, split_size_or_sections, dim=0):
    x = _tensor(tensor)
    d = _dim(dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, Tensor) and split_size_or_sections.ndim == 0:
        split_size_or_sections = as_index(split_size_or_sections)
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
        if size == 0:
            if n:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
            return (_piece(x, d, 0, 0, OPS["split"], 0),)
        starts = range(0, n, size) if n else (0,)
        return tuple(_piece(x, d, s, builtins.min(size, n - s), OPS["split"], i) for i, s in enumerate(starts))
    sizes = [int(s) for s in split_size_or_sections]
    if builtins.sum(sizes) != n or builtins.any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={sizes}")
    starts = np.cumsum([0] + sizes[:-1]).tolist()
    return tuple(_piece(x, d, s, k, OPS["split_with_sizes"], i) for i, (s, k) in enumerate(zip(starts, sizes)))


def chunk(input, chunks, dim=0):
    x = _tensor(input)
    chunks = int(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _dim(dim, x.ndim)
    if x.shape[d] == 0:  # torch: `chunks` empty chunks of an empty dim
        return tuple(narrow(x, d, 0, 0) for _ in range(chunks))
    return split(x, builtins.max(1, -(-x.shape[d] // chunks)), d)


def _iterate(x):
    """`for row in t`: torch's rows are unbind's views; made one at a time here."""
    for i in range(x.shape[0]):
        yield _view_op(x, lambda a, i=i: a[i, ...], OPS["unbind"], i)


def unbind(input, dim=0):
    x = _tensor(input)
    if not x.ndim:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _dim(dim, x.ndim)
    keys = [(slice(None),) * d + (i, Ellipsis) for i in range(x.shape[d])]
    return tuple(_view_op(x, lambda a, key=key: a[key], OPS["unbind"], i) for i, key in enumerate(keys))


def _promote_all(tensors):
    dt = tensors[0]._data.dtype
    if builtins.all(t._data.dtype == dt for t in tensors):  # the common case: nothing to promote
        return tensors, dt
    dt = _dtype.result_type(*[t._data for t in tensors])
    return [_to_dtype(t, dt) for t in tensors], dt


def cat(tensors, dim=0, *, out=None):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError("cat() received an invalid combination of arguments - expected a tuple of Tensors")
    fast = _cat_same(tensors, dim)
    if fast is not None:
        return fast
    tensors = [_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    shapes = [t_._data.shape for t_ in tensors]  # (array shapes: a Tensor's .shape makes a Size at each read)
    for i, sh in enumerate(shapes):
        if not sh:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    legacy_empty = [sh == (0,) for sh in shapes]  # torch skips legacy empty 1-D tensors
    parts = [t_ for t_, e in zip(tensors, legacy_empty) if not e]
    if not parts:
        parts = tensors[:1]
    ref_shape = parts[0]._data.shape
    ndim = len(ref_shape)
    d = _dim(dim, ndim)
    for i, sh in enumerate(shapes):
        if legacy_empty[i] and ndim != 1:
            continue
        if len(sh) != ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ndim} and {len(sh)}")
        for k in range(ndim):
            if k != d and sh[k] != ref_shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref_shape[k]} but got size {sh[k]} for tensor number {i} in the list.")
    skipped = [e and ndim != 1 for e in legacy_empty]
    if parts is tensors[:1] or not builtins.any(skipped):
        skipped = [False] * len(tensors)
    every, dt = _promote_all(tensors)
    parts = [p for p, s in zip(every, skipped) if not s]
    value = np.concatenate([p._data for p in parts], axis=d)
    if not _dtype.is_float(dt) or not _recording(*every):
        return _new(value)
    sizes = [None if s else p._data.shape[d] for p, s in zip(every, skipped)]
    return _record(OPS["cat"], value, tuple(every), aux=(d, sizes))


def _cat_same(tensors, dim):
    """cat's common case in one pass: Tensors of one dtype and rank whose sizes match off `dim`. None for
    anything else (the general path promotes, skips legacy empty tensors, and raises torch's errors)."""
    if not tensors or type(dim) is not int:
        return None
    first = tensors[0]
    if type(first) is not Tensor:
        return None
    shape0, dt = first._data.shape, first._data.dtype
    ndim = len(shape0)
    if not -ndim <= dim < ndim:
        return None
    d = dim % ndim
    datas, requires = [], False
    for t_ in tensors:
        if type(t_) is not Tensor:
            return None
        a = t_._data
        if a.dtype != dt:  # (NumPy would promote: the general path does as torch)
            return None
        datas.append(a)
        requires = requires or t_._requires_grad
    try:  # (NumPy checks the sizes off `dim`, and the ranks)
        value = np.concatenate(datas, axis=d)
    except (ValueError, RuntimeError):  # (sizes that differ, legacy empty tensors, meta beside CPU: the general path)
        return None
    if not _dtype.is_float(dt) or not is_grad_enabled() or not (requires or _tape_local.tracing is not None):
        return _new(value)
    return _record(OPS["cat"], value, tuple(tensors), aux=(d, [a.shape[d] for a in datas]))


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    fast = _stack_same(tensors, dim)
    if fast is not None:
        return fast
    tensors = [_tensor(t) for t in tensors]
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t_ in enumerate(tensors[1:], 1):
        if t_.shape != tensors[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                               f"entry 0 and {list(t_.shape)} at entry {i}")
    d = _dim(dim, tensors[0].ndim + 1)
    parts, dt = _promote_all(tensors)
    value = np.stack([p._data for p in parts], axis=d)
    if not _dtype.is_float(dt) or not _recording(*parts):
        return _new(value)
    return _record(OPS["stack"], value, tuple(parts), aux=d)


def _stack_same(tensors, dim):
    """stack's common case: a list or tuple of Tensors of one dtype and shape, their values NumPy arrays (not
    meta), dim an int in range. None for anything else (the general path promotes and raises torch's errors)."""
    if type(tensors) is not list and type(tensors) is not tuple or not tensors or type(dim) is not int:
        return None
    first = tensors[0]
    if type(first) is not Tensor:
        return None
    shape, dt = first._data.shape, first._data.dtype
    ndim = len(shape) + 1
    if not -ndim <= dim < ndim:
        return None
    d = dim % ndim
    inserted = shape[:d] + (1,) + shape[d:]
    parts, requires = [], False
    for t_ in tensors:
        if type(t_) is not Tensor:
            return None
        a = t_._data
        if type(a) is not np.ndarray or a.dtype != dt or a.shape != shape:
            return None
        parts.append(a.reshape(inserted))
        requires = requires or t_._requires_grad
    value = np.concatenate(parts, axis=d)  # (np.stack's own way, without its checks: 1 us of Python)
    if not _dtype.is_float(dt) or not is_grad_enabled() or not (requires or _tape_local.tracing is not None):
        return _new(value)
    return _record(OPS["stack"], value, tuple(tensors), aux=d)


_meta.FRONT_ENDS.update((cat.__code__, _cat_same.__code__, stack.__code__))  # (torch's error for meta and CPU, _meta)


def hstack(tensors):
    tensors = [_tensor(t) for t in tensors]
    if not tensors:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)


def vstack(tensors):
    tensors = tuple(tensors)
    if not tensors:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return cat([t_ if t_.ndim >= 2 else reshape(t_, 1, -1) for t_ in map(_tensor, tensors)], 0)


# -- gather, scatter_add, index_select, masked_fill -----------------------------------------------------------
def _check_index(name, x, dim, index):
    """gather's checks (torch's gather meta): an empty index is taken with any dtype and shape."""
    index = _tensor(index)
    d = _dim(dim, x.ndim)
    if index._data.size == 0:
        return index, d
    if index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    if max(index.ndim, 1) != max(x.ndim, 1):  # (0-d tensors count as 1-d: ensure_nonempty_dim)
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    return index, d


def _scatter_check(x, d, index, src=None):
    """torch's checks of a scatter's index (scatter_gather_dtype_check and scatter_shape_check, whose messages
    name "scatter" for scatter_add and scatter_reduce too), in its order; d already wrapped. Returns the index as
    an int64 array of at least one dim (0-d tensors count as 1-d there)."""
    if index._data.size and index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if src is not None and src._data.dtype != x._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    idx = index._data.astype(np.int64, copy=False)
    idx = idx.reshape(idx.shape or (1,))
    if not idx.size:  # (any shape: as an empty index of self's dims, so that positions come out empty)
        return np.zeros((0,) * max(x.ndim, 1), np.int64)
    xs, ss = tuple(x.shape) or (1,), (tuple(src.shape) or (1,)) if src is not None else None
    if len(xs) != idx.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    wrong = any(k != d and idx.shape[k] > xs[k] for k in range(idx.ndim)) or \
        ss is not None and len(ss) == idx.ndim and any(idx.shape[k] > ss[k] for k in range(idx.ndim))
    if ss is not None:
        if len(ss) != idx.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        if wrong:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} "
                               f"apart from dimension {d} and to be no larger size than src {list(src.shape)}")
    elif wrong:
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} apart "
                           f"from dimension {d}")
    n = xs[d]
    bad = (idx < 0) | (idx >= n)
    if bad.any():  # (the first, in C order, as torch's kernel meets it)
        raise RuntimeError(f"index {int(idx.reshape(-1)[np.argmax(bad.reshape(-1))])} is out of bounds for "
                           f"dimension {d} with size {n}")
    return idx


def gather(input, dim, index, *, sparse_grad=False):
    x = _tensor(input)
    index, d = _check_index("gather", x, dim, index)
    if index._data.size == 0:  # (torch's output: index's shape, with no checks)
        return _gather(x, np.zeros(index.shape, np.int64), OPS["gather"])
    idx = index._data.astype(np.int64, copy=False)
    if x.ndim:
        xs, ishape = x.shape, idx.shape if idx.ndim else (1,)
        for k in range(x.ndim):
            if k != d and ishape[k] > xs[k]:
                raise RuntimeError(f"Size does not match at dimension {k} expected index {list(ishape)} to be no "
                                   f"larger than self {list(xs)} apart from dimension {d}")
    n = x.shape[d] if x.ndim else 1
    _bounds(idx, n, d)
    flat = _along(x, d, idx)

    def remap(i):  # (tapegrad.compile: the index map from the index a replay binds)
        i = i.astype(np.int64, copy=False)
        _bounds(i, n, d)
        flat[...] = _along(x, d, i)
    remap.writes = (flat,)
    return guard(_gather(x, flat, OPS["gather"]), index, remap=remap)


def _along(x, d, idx):
    """Flat positions in x of x.take_along_dim(idx, d) (a new C-contiguous int64 array), idx no larger than x
    outside d and within its bounds along d: each position of idx with its own index along d replaced by idx's
    value, as x's flat position (np.take_along_axis of an index map builds the same from more arrays)."""
    if x.ndim == 0:
        return np.zeros(idx.shape, np.int64)
    shape = x._data.shape
    corner = tuple(slice(0, idx.shape[k]) if k != d else slice(0, 1) for k in range(len(shape)))
    flat = np.add(np.arange(x._data.size, dtype=np.int64).reshape(shape)[corner],
                  np.multiply(idx, math.prod(shape[d + 1:]), dtype=np.int64))
    return flat if idx.ndim == len(shape) else flat.reshape(idx.shape)  # (a 0-d index of a 1-d x)


def _bounds(idx, n, d, error=RuntimeError):
    if idx.size:
        lo, hi = _min_max(idx)
        bad = hi if hi >= n else lo if lo < 0 else None
        if bad is not None:
            raise error(f"index {bad} is out of bounds for dimension {d} with size {n}")


def scatter_add(input, dim, index, src):
    x, src = _tensor(input), _tensor(src)
    index = _tensor(index)
    d = _dim(dim, x.ndim)
    idx = _scatter_check(x, d, index, src)
    if src.ndim == 0:
        src = src.reshape(1)
    if idx.size:
        flat, src_part = _along(x, d, idx), src._data[tuple(slice(0, s) for s in idx.shape)]
    else:  # (an empty index of any shape: torch checks nothing more)
        flat, src_part = np.zeros(0, np.int64), src._data.reshape(-1)[:0]
    out = x._data.copy()
    np.add.at(out.reshape(-1), flat.reshape(-1), src_part.reshape(-1))
    if not _dtype.is_float(x._data.dtype):
        return _new(out)
    return guard(_record(OPS["scatter_add"], out, (x, src), aux=(d, _new(idx))), index)


def index_select(input, dim, index):
    x = _tensor(input)
    index = _tensor(index)
    d = _dim(dim, x.ndim)
    if index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    idx = index._data.reshape(-1).astype(np.int64, copy=False)
    if x.ndim == 0 and idx.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {idx.size} value(s)")
    n = x.shape[d] if x.ndim else 1
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    positions = _index_map(x)

    def remap(i):  # (tapegrad.compile: the index map from the index a replay binds)
        i = i.reshape(-1).astype(np.int64, copy=False)
        if i.size and (i.min() < 0 or i.max() >= n):
            raise IndexError("index out of range in self")
        if x.ndim:
            flat[...] = np.take(positions, i, axis=d)
    if x.ndim == 0:
        flat = np.zeros((), np.int64)  # (a 0-d input's result is 0-d, as torch's)
        remap.writes = (flat,)
        return guard(_gather(x, flat, OPS["index_select"]), index, remap=remap)
    flat = np.take(positions, idx, axis=d)
    remap.writes = (flat,)
    return guard(_gather(x, flat, OPS["index_select"], np.take(x._data, idx, axis=d)), index, remap=remap)


def take_along_dim(input, indices, dim=None):
    """gather, with torch's extras: no dim takes from the flattened input, and the other dims broadcast."""
    x, idx = _tensor(input), _tensor(indices)
    if dim is None:
        return gather(x.reshape(-1), 0, idx.reshape(-1))
    if x.ndim != idx.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {x.ndim} dimensions for input, and {idx.ndim} dimensions for indices")
    if idx._data.dtype != np.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_dtype.scalar_type_name(idx._data.dtype)}")
    d = _dim(dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    if idx._data.size:  # torch wraps the indices along dim (remainder: any out of range, -n..-1 from the end)
        if n == 0:
            raise RuntimeError("ZeroDivisionError")
        lo, hi = _min_max(idx._data)
        if lo < 0 or hi >= n:
            idx = idx % n
    if idx.ndim == x.ndim and tuple(idx.shape[:d] + idx.shape[d + 1:]) != tuple(x.shape[:d] + x.shape[d + 1:]):
        ones = lambda t: tuple(t.shape[:d]) + (1,) + tuple(t.shape[d + 1:])  # noqa: E731
        common = list(np.broadcast_shapes(ones(x), ones(idx)))
        x = x.expand(*(common[:d] + [x.shape[d]] + common[d + 1:]))
        idx = idx.expand(*(common[:d] + [idx.shape[d]] + common[d + 1:]))
    return gather(x, d, idx)


def masked_fill(input, mask, value):
    x, mask = _tensor(input), _tensor(mask)
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_dtype.cpp_type_name(mask._data.dtype)}")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    broadcast_shape(mask.shape, x.shape)
    v = value._data if isinstance(value, Tensor) else _fill_number(value, x._data.dtype)
    out = np.where(mask._data, np.asanyarray(v).astype(x._data.dtype), x._data)
    tensor_value = isinstance(value, Tensor)
    inputs = (x,) + ((_to_dtype(value, x._data.dtype),) if tensor_value and value._requires_grad else ())
    if not _dtype.is_float(x._data.dtype):
        return _new(out)
    if _tape_local.tracing is not None:  # tapegrad.compile: as where(), whose mask is a row a replay reads
        fill = _to_dtype(value, x._data.dtype) if tensor_value else made_in_trace(_new(np.asanyarray(v, x._data.dtype)))
        return where(mask, fill, x)
    return guard(_record(OPS["masked_fill_tensor" if tensor_value else "masked_fill"], out, inputs, aux=mask), mask)


def _fill_number(c, dt):
    """A Python number to fill dt with, checked as torch's Scalar::to<T> (c10::checked_convert): a complex with an
    imaginary part, an integer dtype's value out of range, a finite float beyond a float dtype's, raise its error."""
    if isinstance(c, numbers.Complex) and not isinstance(c, numbers.Real):
        if c.imag != 0:
            name = _cpp_int_name(dt) if dt.kind in "iu" else _dtype.cpp_type_name(dt)
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
        c = c.real
    if dt.kind in "iu":
        return scalar_to_dtype(c, dt)
    if dt.kind == "f" and isinstance(c, numbers.Real) and not isinstance(c, bool) and math.isfinite(float(c)) \
            and abs(float(c)) > float(np.finfo(dt).max):
        raise RuntimeError(f"value cannot be converted to type {_dtype.cpp_type_name(dt)} without overflow")
    return c


# -- indexing ----------------------------------------------------------------------------------------------------
_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
              "(got {})")


def _index_key(key, x):
    """key as NumPy takes it (tuples of ints, slices, None, Ellipsis, int or bool arrays), checked the way
    torch checks it (its exception types and messages). Returns (key, advanced, op name)."""
    if isinstance(key, (list, range)) and _sequence_as_tuple(key):
        key = tuple(key)
    items = key if isinstance(key, tuple) else (key,)
    out, advanced, last = [], False, None
    dims = _key_dims(items, x._data.ndim) if isinstance(key, tuple) else None
    for j, k in enumerate(items):
        if k is None:
            out.append(None)
            last = "unsqueeze"
        elif k is Ellipsis:
            out.append(k)
        elif isinstance(k, slice):
            k = slice(*(None if v is None else _slice_int(v) for v in (k.start, k.stop, k.step)))
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero" if k.step < 0 else "slice step cannot be zero")
            out.append(k)
            # (in a tuple, torch skips a slice from 0 to the end at least, step 1: the key's op is the last it did not)
            if dims is None or k.start not in (None, 0) or k.step not in (None, 1) or (
                    k.stop is not None and (dims[j] is None or k.stop < x._data.shape[dims[j]])):
                last = "slice"
        elif isinstance(k, (bool, np.bool_)):
            out.append(np.asanyarray(k))
            advanced = True
        elif isinstance(k, (numbers.Integral, np.integer)):
            out.append(int(k))
            last = "select"
        elif isinstance(k, Tensor) and k.ndim == 0 and k._data.dtype.kind in "iu" and _tape_local.tracing is None:
            out.append(int(k._data))
            last = "select"  # (while tapegrad.compile traces, an index array below: a replay reads its value)
        elif isinstance(k, (Tensor, list, np.ndarray, range, tuple)):
            a = k._data if isinstance(k, Tensor) else np.asanyarray(k if type(k) is not range else list(k))
            if type(k) is range and a.size == 0:
                a = a.astype(np.int64)
            if isinstance(k, list) and a.size == 0:
                a = a.astype(np.int64)
            if a.dtype.kind not in "iub":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            out.append(a.astype(np.int64) if a.dtype.kind == "u" and a.dtype != np.uint8 else
                       a.astype(np.bool_) if a.dtype == np.uint8 else a)
            advanced = True
        else:
            raise IndexError(_BAD_INDEX.format(type(k).__name__))
    _check_key(out, x)
    op = "index" if advanced else last or ("alias" if isinstance(key, tuple) or key is Ellipsis else "slice")
    return tuple(out), advanced, op


def _key_dims(items, ndim):
    """The dimension of x each item of an index tuple takes (None for None, Ellipsis, and where it is not known:
    past a boolean array, or a key longer than x's rank, which _check_key refuses)."""
    def width(k):
        if k is None or k is Ellipsis:
            return 0
        a = k._data if isinstance(k, Tensor) else k
        if isinstance(a, np.ndarray) and a.dtype in (np.bool_, np.uint8):  # (a mask: as many dimensions as it has)
            return a.ndim
        return 1
    dims, d = [None] * len(items), 0
    end = next((j for j, k in enumerate(items) if k is Ellipsis), len(items))
    for j in range(end):
        dims[j] = d if width(items[j]) == 1 and d < ndim else None
        d += width(items[j])
    d = ndim
    for j in range(len(items) - 1, end, -1):
        d -= width(items[j])
        dims[j] = d if width(items[j]) == 1 and 0 <= d else None
    return dims


def _sequence_as_tuple(key):
    """torch's treatSequenceAsTuple (NumPy's old rule): a short list holding a tensor, a sequence, a slice,
    Ellipsis or None indexes as a tuple (x[[rows, cols]] is x[rows, cols]); other lists and ranges are index
    arrays."""
    return len(key) < 32 and builtins.any(
        isinstance(k, (Tensor, list, tuple, range, slice, np.ndarray)) or k is Ellipsis or k is None for k in key)


def _plain_slice(k):
    """Whether slice k is one NumPy takes as torch does: int or absent bounds, a positive step or none."""
    start, stop, step = k.start, k.stop, k.step
    return (start is None or type(start) is int) and (stop is None or type(stop) is int) and \
        (step is None or type(step) is int and step > 0)


def _slice_int(v):
    if isinstance(v, Tensor):
        return int(v._data)
    if isinstance(v, (numbers.Integral, np.integer)):
        return int(v)
    raise TypeError("slice indices must be integers or None or have an __index__ method")


def _check_key(key, x):
    shape = x.shape
    used = builtins.sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1
                        for k in key if k is not None and k is not Ellipsis)
    if used > len(shape):
        if not shape:  # (pre-0.4 code's `loss.data[0]`: torch's own words for it)
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                             "C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    if builtins.sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    d = 0
    for k in key:
        if k is None:
            continue
        if k is Ellipsis:
            d += len(shape) - used
            continue
        if isinstance(k, np.ndarray) and k.dtype == np.bool_:
            for j in range(k.ndim):
                if k.shape[j] != shape[d + j]:
                    raise IndexError(f"The shape of the mask {list(k.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(shape)} at index {d + j}")
            d += k.ndim
            continue
        if isinstance(k, int) or isinstance(k, np.ndarray):
            n = shape[d]
            lo, hi = (k, k) if isinstance(k, int) else (int(k.min()), int(k.max())) if k.size else (0, -1)
            bad = hi if hi >= n else lo if lo < -n else None
            if bad is not None:
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")
        d += 1


def _index_remap(key, x, flat):
    """tapegrad.compile: x[key]'s index map rewritten from the index tensors a replay binds (in key's order)."""
    positions = _index_map(x)

    def sub(k, arrays):
        return _new(next(arrays)) if isinstance(k, Tensor) else k

    def remap(*arrays):
        it = iter(arrays)
        k = tuple(sub(v, it) for v in key) if isinstance(key, tuple) else sub(key, it)
        flat[...] = positions[_index_key(k, x)[0]]
    remap.writes = (flat,)
    return remap


def _basic_key(key, shape):
    """x[key] for a tuple of ints in bounds (or 0-d integer tensors: probs[0, action]) and plain slices, no longer
    than x's rank (x[:, :8], x[:, -1]): (the key as NumPy takes it, torch's last indexing step, "select" or
    "slice"); None for any other key (and for only full slices, an alias), which the general path takes."""
    op = None
    if len(key) > len(shape):
        return None
    ints = None
    for d, k in enumerate(key):
        tk = type(k)
        if tk is Tensor and k._data.ndim == 0 and k._data.dtype.kind in "iu" and _tape_local.tracing is None:
            ints = ints or list(key)  # (while tapegrad.compile traces, an index array: a replay reads its value)
            k = ints[d] = int(k._data)
            tk = int
        if tk is int:
            if not -shape[d] <= k < shape[d]:
                return None
            op = "select"
        elif tk is slice and k.start is None and k.stop is None and k.step is None:
            continue  # (x[:, ...]: a full slice, no step of torch's)
        elif tk is slice and _plain_slice(k):
            # (torch skips a slice from 0 to the end at least, step 1: its op is the last one it did not skip)
            if k.start not in (None, 0) or k.stop is not None and k.stop < shape[d] or k.step not in (None, 1):
                op = "slice"
        else:
            return None
    return None if op is None else (key if ints is None else tuple(ints), op)


def getitem(x, key):
    tk = type(key)
    if (tk is int or tk is slice and _plain_slice(key)) and isinstance(x, Tensor) and x._data.ndim:
        shape = x._data.shape
        if tk is slice:  # (the common cases first: x[i], x[a:b], x[:, a:b])
            return _view_op(x, lambda a: a[key, ...], OPS["slice"], key=(key,))
        n = shape[0]
        if -n <= key < n:
            return _view_op(x, lambda a: a[key, ...], OPS["select"], key=(key,))
    elif tk is tuple and isinstance(x, Tensor):
        basic = _basic_key(key, x._data.shape)
        if basic is not None:
            key = basic[0] + (Ellipsis,)
            return _view_op(x, lambda a: a[key], OPS[basic[1]], key=basic[0])
    x = _tensor(x)
    original = key
    index_tensors = [k for k in (key if isinstance(key, tuple) else (key,)) if isinstance(k, Tensor)]
    key, advanced, op = _index_key(key, x)
    if advanced:
        try:
            out = np.asanyarray(x._data[key], order="C")
        except IndexError as e:  # shapes of index arrays that do not broadcast
            raise IndexError(str(e).replace("arrays", "tensors")) from None
        if not _recording(x):
            return _new(out)
        flat = np.ascontiguousarray(_index_map(x)[key], np.int64)
        remap = None
        if _tape_local.tracing is not None and not builtins.any(k._data.dtype == np.bool_ for k in index_tensors) \
                and not (isinstance(original, list) and builtins.any(isinstance(k, Tensor) for k in original)):
            # (a boolean mask's result has a shape that values decide; a list of index tensors is not rebound)
            remap = _index_remap(original, x, flat)
        return guard(_gather(x, flat, OPS[op], out), *index_tensors, remap=remap)
    key = key if Ellipsis in key else key + (Ellipsis,)
    if op in ("unsqueeze", "alias"):
        shape = x._data[key].shape
        if math.prod(shape) == x.numel():  # no data moves: a reshape under torch's name
            return _reshape(x, shape, OPS[op])
        op = "unsqueeze_gather"
    return _view_op(x, lambda a: a[key], OPS[op])


# == Declarations: each op's derivative rule and its forward on arrays (tapegrad.compile) ==================
def _vjp_reshape(ctx, g, inputs, out):
    return (g.reshape(inputs[0].shape),)


def _vjp_gather(ctx, g, inputs, out):
    if isinstance(ctx, _StridedView):
        ctx = ctx.index_map()
    return (scatter_flat(g, ctx, inputs[0].shape),)  # ctx: the index map


def _gather_forward(ctx, x):
    if isinstance(ctx, _StridedView):
        return ctx.view_of(x)
    return x.reshape(-1)[ctx]  # ctx: the index map, which depends on shapes and Python ints only


_INDEXED = "its index map is computed from the values of a tensor (an index, or the input's order)"
_READS_CONSTANT = "it reads a tensor that is not one of its inputs (an index or a mask), which a replay cannot rebind"

registry.structural("reshape", K_RESHAPE, "ViewBackward0", _vjp_reshape)
registry.structural("gather_flat", K_GATHER, "IndexBackward0", _vjp_gather, unreplayable=_INDEXED)
# Data movement: each is a gather (index map forward, compiled scatter-add adjoint) under torch's name.
for _name, _grad_fn in (("transpose", "TransposeBackward0"), ("transpose_", "TransposeBackward1"),
                        ("t", "TBackward0"), ("permute", "PermuteBackward0"),
                        ("select", "SelectBackward0"), ("slice", "SliceBackward0"), ("repeat", "RepeatBackward0"),
                        ("flip", "FlipBackward0"), ("split", "SplitBackward0"),
                        ("split_with_sizes", "SplitWithSizesBackward0"), ("unbind", "UnbindBackward0"),
                        ("diagonal", "DiagonalBackward0"), ("unsqueeze_gather", "UnsqueezeBackward0")):
    registry.structural(_name, K_GATHER, _grad_fn, _vjp_gather, forward=_gather_forward)
# Gathers whose index map comes from values: each front end rewrites the map from the index a replay binds
# (tape.guard's remap, tape.follow_indices), so tapegrad.compile replays them with the gather's forward
for _name, _grad_fn in (("index", "IndexBackward0"), ("gather", "GatherBackward0"),
                        ("index_select", "IndexSelectBackward0"), ("max_dim", "MaxBackward0"),
                        ("min_dim", "MinBackward0"), ("embedding", "EmbeddingBackward0")):
    registry.structural(_name, K_GATHER, _grad_fn, _vjp_gather, forward=_gather_forward)
for _name, _grad_fn in (("view", "ViewBackward0"),
                        ("squeeze", "SqueezeBackward0"), ("squeeze_dim", "SqueezeBackward1"),
                        ("squeeze_dims", "SqueezeBackward2"), ("unsqueeze", "UnsqueezeBackward0"),
                        ("alias", "AliasBackward0")):
    registry.structural(_name, K_RESHAPE, _grad_fn, _vjp_reshape)


def _vjp_scatter(ctx, g, inputs, out):
    return (_gather(g, ctx[0]),)  # ctx: the index map, the output's shape


def _scatter_arrays(ctx, g, inputs, out, wanted):
    return (g.reshape(-1)[ctx[0]],) if _array_rule_dtype(g) else None


# an in-place write through a view (_written): the base's new history, and the views that read it again; a view
# as large as its base is the base reshaped (compiled), any other a gather and its CopySlices (Python)
registry.structural("as_strided", K_GATHER, "AsStridedBackward0", _vjp_gather, forward=_gather_forward)
registry.structural("as_strided_view", K_RESHAPE, "AsStridedBackward0", _vjp_reshape)
registry.structural("copy_slices_view", K_RESHAPE, "CopySlices", _vjp_reshape)
registry.python("copy_slices", "CopySlices", None, _vjp_copy_slices, array_vjp=_copy_slices_arrays,
                unreplayable="an in-place write through a view (tapegrad.compile stops at in-place ops)")
registry.python("scatter_flat", "IndexPutBackward0", _scatter_forward, _vjp_scatter, array_vjp=_scatter_arrays)


def _vjp_cat(ctx, g, inputs, out):
    dim, sizes = ctx
    grads, start = [], 0
    for s in sizes:
        if s is None:  # a legacy empty 1-D input that cat skipped
            grads.append(_new(np.zeros(0, g._data.dtype)))
            continue
        grads.append(narrow(g, dim, start, s))
        start += s
    return tuple(grads)


def _cat_forward(ctx, *xs):
    dim, sizes = ctx
    return np.concatenate([x for x, n in zip(xs, sizes) if n is not None], axis=dim)


def _vjp_stack(ctx, g, inputs, out):
    return tuple(g.select(ctx, i) for i in range(len(inputs)))


def _vjp_scatter_add(ctx, g, inputs, out):
    dim, index = ctx
    return g, gather(g, dim, index)


def _scatter_add_arrays(ctx, g, inputs, out, wanted):
    """_vjp_scatter_add on arrays: g, and g gathered at the index along dim (gather's positions, _along)."""
    dim, index = ctx
    if not _array_rule_dtype(g):
        return None
    src_grad = None
    if wanted[1]:
        idx = index._data.astype(np.int64, copy=False)
        if g.ndim == 0:
            src_grad = g.reshape(-1)[np.zeros(idx.shape, np.int64)]  # (idx at least 1-d: _scatter_check)
        else:
            part = g[tuple(slice(0, idx.shape[k]) if k != dim else slice(None) for k in range(g.ndim))]
            src_grad = np.take_along_axis(part, idx, dim)
    return g, src_grad


def _vjp_masked_fill(ctx, g, inputs, out):
    grads = [where(ctx, 0.0, g)]           # ctx: the mask (a bool Tensor)
    if len(inputs) > 1:
        grads.append(where(ctx, g, 0.0).sum())
    return tuple(grads)


def _vjp_tril(ctx, g, inputs, out):
    return (g.tril(ctx),)


def _vjp_triu(ctx, g, inputs, out):
    return (g.triu(ctx),)


def _cat_arrays(ctx, g, inputs, out, wanted):
    dim, sizes = ctx
    if not _array_rule_dtype(g):
        return None
    grads, start, lead = [], 0, (slice(None),) * dim
    for s, w in zip(sizes, wanted):
        if s is None:  # a legacy empty 1-D input that cat skipped
            grads.append(np.zeros(0, g.dtype) if w else None)
            continue
        grads.append(g[lead + (slice(start, start + s),)] if w else None)
        start += s
    return grads


def _stack_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    return [np.take(g, i, axis=ctx) if w else None for i, w in enumerate(wanted)]


def _masked_fill_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    mask = ctx._data
    grads = [np.where(mask, 0.0, g) if wanted[0] else None]
    if len(inputs) > 1:
        grads.append(np.asanyarray(np.where(mask, g, 0.0).sum(), g.dtype) if wanted[1] else None)
    return grads


def _tril_arrays(ctx, g, inputs, out, wanted):
    return (np.tril(g, ctx),) if _array_rule_dtype(g) else None


def _triu_arrays(ctx, g, inputs, out, wanted):
    return (np.triu(g, ctx),) if _array_rule_dtype(g) else None


registry.python("cat", "CatBackward0", _cat_forward, _vjp_cat, array_vjp=_cat_arrays)
registry.python("stack", "StackBackward0", lambda ctx, *xs: np.stack(xs, axis=ctx), _vjp_stack,
                array_vjp=_stack_arrays)
registry.python("scatter_add", "ScatterAddBackward0", None, _vjp_scatter_add, array_vjp=_scatter_add_arrays,
                unreplayable=_READS_CONSTANT)
_TRACED_AS_WHERE = "it reads its mask, which is not one of its inputs (tapegrad.compile records it as where(mask, ...))"
registry.python("masked_fill", "MaskedFillBackward0", None, _vjp_masked_fill, array_vjp=_masked_fill_arrays,
                unreplayable=_TRACED_AS_WHERE)
registry.python("masked_fill_tensor", "MaskedFillBackward1", None, _vjp_masked_fill, array_vjp=_masked_fill_arrays,
                unreplayable=_TRACED_AS_WHERE)
registry.python("tril", "TrilBackward0", lambda ctx, x: np.tril(x, ctx), _vjp_tril, array_vjp=_tril_arrays)
registry.python("triu", "TriuBackward0", lambda ctx, x: np.triu(x, ctx), _vjp_triu, array_vjp=_triu_arrays)


# -- as_strided: a view of the storage by sizes, strides and an offset; its _scatter and _copy forms -------------------
def _layout_map(shape, strides, offset=0):
    """The storage position of each element of a tensor of `shape` laid out by `strides` from `offset` (int64)."""
    m = np.full(shape, offset, np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        if n > 1 and s:
            m += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    return m


def _as_strided_args(name, size, stride, storage_offset):
    for what, v, pos in (("size", size, 1), ("stride", stride, 2)):
        if isinstance(v, Tensor) or not isinstance(v, (tuple, list)):
            raise TypeError(f"{name}(): argument '{what}' (position {pos}) must be tuple of ints, not "
                            f"{type(v).__name__}")
    size, stride = _sizes(tuple(size)), _sizes(tuple(stride))
    if storage_offset is not None:
        if isinstance(storage_offset, (bool, float)) or not isinstance(storage_offset, (int, np.integer, Tensor)):
            raise TypeError(f"{name}(): argument 'storage_offset' (position 3) must be int, not "
                            f"{type(storage_offset).__name__}")
        storage_offset = int(as_index(storage_offset))
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if builtins.any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    return size, stride, storage_offset


def _check_storage(size, stride, offset, itemsize, storage_size):
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if 0 in size:
        return
    need = offset + builtins.sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if need > storage_size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {need * itemsize} are out of bounds for "
                           f"storage of size {storage_size * itemsize}")


def _torch_storage(x):
    """x's storage as torch lays it out: (flat storage array, x's elements' positions in it, whether the array is the
    memory x's value mirrors, so that a view of it is one of x). A tensor of its own with a permuted layout
    (channels_last, a clone of a transpose) has its elements at its strides' positions."""
    if x._window is None:
        if x._strides is None or _strides.is_contiguous(x._data.shape, x._strides):
            flat = x._data.reshape(-1)
            return flat, np.arange(flat.size, dtype=np.int64).reshape(x._data.shape), True
        pos = _layout_map(x._data.shape, x._strides)
        flat = np.zeros(int(pos.max()) + 1 if pos.size else 0, x._data.dtype)
        flat[pos] = x._data
        return flat, pos, False
    storage = storage_of(x._window)
    flat = storage.reshape(-1)
    return flat, _view_map(storage, x._window), np.may_share_memory(flat, storage)


def as_strided(input, size, stride, storage_offset=None):
    """torch.as_strided: the view of input's storage with these sizes and strides (in elements) from storage_offset
    (input's own by default). Its gradient goes to the elements of input it reads (added where it reads one more than
    once); storage that input does not cover gets none, as torch's AsStridedBackward0."""
    x = _tensor(input)
    size, stride, storage_offset = _as_strided_args("as_strided", size, stride, storage_offset)
    flat, pos, shared = _torch_storage(x)
    offset = _storage_offset_of(x) if storage_offset is None else storage_offset
    _check_storage(size, stride, offset, x._data.itemsize, flat.size)
    where_ = _layout_map(size, stride, offset)
    values = flat[where_]
    inverse = np.full(flat.size, -1, np.int64)
    inverse[pos.reshape(-1)] = np.arange(pos.size, dtype=np.int64)
    m = inverse[where_]
    if not _recording(x):
        t = _new(values)
    elif (m >= 0).all():
        t = _gather(x, m, OPS["as_strided"], values)
    else:  # (storage x does not cover: its value, without a gradient)
        inside = m >= 0
        t = where(_new(inside), _gather(x, np.where(inside, m, 0), OPS["as_strided"]), _new(values))
    t._strides = _strides.normal(size, stride)
    if not shared:
        return t
    empty = 0 in size  # (an ndarray on the storage's buffer: its base chain reaches the storage, as views' do)
    window = np.ndarray(size, flat.dtype, buffer=flat, offset=builtins.min(offset, flat.size) * flat.itemsize,
                        strides=tuple(0 if empty else s * flat.itemsize for s in stride))
    return _as_view(x, t, window)


def _storage_offset_of(x):
    w = x._window
    if w is None:
        return 0
    return int((w.__array_interface__["data"][0] - storage_of(w).__array_interface__["data"][0]) // w.itemsize)


def as_strided_copy(input, size, stride, storage_offset=None):
    """torch.as_strided_copy: as_strided's values in a tensor of their own (contiguous)."""
    return _fresh(as_strided(input, size, stride, storage_offset))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """torch.as_strided_scatter: a copy of input (its layout kept, as torch's clone keeps a dense one) whose elements
    at as_strided(size, stride, storage_offset) of its storage are src's."""
    x, s = _tensor(input), _tensor(src)
    size, stride, storage_offset = _as_strided_args("as_strided_scatter", size, stride, storage_offset)
    shape = x._data.shape
    layout = x._strides if x._strides is not None and _strides.is_dense(shape, x._strides) else \
        _strides.contiguous(shape)
    pos = _layout_map(shape, layout)
    storage = int(pos.max()) + 1 if pos.size else 0
    offset = 0 if storage_offset is None else storage_offset
    _check_storage(size, stride, offset, x._data.itemsize, storage)
    if tuple(s._data.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(s._data.shape)}, "
                           f"slice size = {list(size)}")
    inverse = np.full(storage, -1, np.int64)
    inverse[pos.reshape(-1)] = np.arange(pos.size, dtype=np.int64)
    m = inverse[_layout_map(size, stride, offset)]
    if (m < 0).any():
        raise RuntimeError("tapegrad: as_strided_scatter of storage that input's elements do not cover is not "
                           "supported")
    if s._data.dtype != x._data.dtype:
        s = _to_dtype(s, x._data.dtype)
    mask = np.zeros(shape, np.bool_)
    mask.reshape(-1)[m.reshape(-1)] = True
    if s._data.size and np.unique(m).size != m.size:  # (overlapping writes: the last one wins, as copy_'s)
        last = np.full(x._data.size, -1, np.int64)
        last[m.reshape(-1)] = np.arange(m.size, dtype=np.int64)
        keep = last[last >= 0]
        s, m = s.reshape(-1)[_new(keep)], np.flatnonzero(last >= 0)
    t = where(_new(mask), scatter_flat(s, m, shape), x)
    t._strides = _strides.normal(shape, layout)
    return t


def _fresh(t):
    """A copy of t of its own (contiguous), recorded as a clone: what torch's *_copy functions return."""
    out = _clone_row(t)
    out._strides = None
    return out


def alias_copy(input):
    return _fresh(_tensor(input))


def detach_copy(input):
    return _fresh(_tensor(input).detach())


def view_copy(input, size):
    x = _tensor(input)
    if isinstance(size, _dtype.dtype):
        raise NotImplementedError("tapegrad: view_copy(dtype) is not supported")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"view_copy() received an invalid combination of arguments - got (Tensor, "
                        f"{type(size).__name__}), but expected one of:\n * (Tensor input, torch.dtype dtype, *, Tensor "
                        f"out = None)\n * (Tensor input, tuple of ints size, *, Tensor out = None)\n")
    return _fresh(reshape(x, _sizes(tuple(size))))


def expand_copy(input, size, *, implicit=False):
    return _fresh(expand(_tensor(input), size))


def permute_copy(input, dims):
    return _fresh(permute(input, dims))


def t_copy(input):
    return _fresh(t(input))


def transpose_copy(input, dim0, dim1):
    return _fresh(transpose(input, dim0, dim1))


def unsqueeze_copy(input, dim):
    return _fresh(unsqueeze(input, dim))


def squeeze_copy(input, dim=None):
    return _fresh(squeeze(input, dim))


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return _fresh(diagonal(input, offset, dim1, dim2))


def select_copy(input, dim, index):
    return _fresh(select(input, dim, index))


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """torch.slice_copy: input[start:end:step] along dim, in a tensor of its own (torch clamps start and end)."""
    x = _tensor(input)
    d = _dim(dim, builtins.max(x.ndim, 1))
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _fresh(getitem(x, key))


def unfold_copy(input, dimension, size, step):
    return _fresh(_tensor(input).unfold(dimension, size, step))


def unbind_copy(input, dim=0):
    return tuple(_fresh(v) for v in unbind(input, dim))


def split_copy(input, split_size, dim=0):
    return tuple(_fresh(v) for v in split(input, split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    return tuple(_fresh(v) for v in _tensor(input).split_with_sizes(split_sizes, dim))


def unsafe_split(input, split_size, dim=0):
    """torch.unsafe_split: split (tapegrad's views are checked all the same)."""
    return split(input, split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return _tensor(input).split_with_sizes(split_sizes, dim)


def unsafe_chunk(input, chunks, dim=0):
    return chunk(input, chunks, dim)


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]


def _mT(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D "
                           f"tensor.")
    return transpose(self, -2, -1)


# Tensor's methods for this module's front-ends (grep `Tensor.<name> =`)
def _T(self):
    """x.T: its dimensions reversed (permute, as torch's), with torch's once-a-process deprecation warnings for a
    tensor that is not 2-D."""
    nd = self._data.ndim
    if nd != 2 and (nd == 0) not in _T_WARNED:
        _T_WARNED.add(nd == 0)
        warnings.warn(_T_DEPRECATED[nd == 0], UserWarning, stacklevel=user_stacklevel())
    return _view_op(self, _transposed, OPS["permute"], offset=0)


_T_WARNED = set()  # (True: the 0-d warning given; False: the other)
_T_DEPRECATED = ("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it "
                 "will throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
                 "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
                 "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.")


Tensor.T = property(_T)
Tensor.mT = property(_mT)
Tensor.expand_as = lambda self, other: expand(self, other.shape)
Tensor.view_as = lambda self, other: reshape(self, other.shape)
Tensor.reshape_as = lambda self, other: reshape(self, other.shape)
Tensor.__getitem__ = getitem
Tensor.reshape = reshape
Tensor.view = view
Tensor.flatten = flatten
Tensor.squeeze = squeeze
Tensor.unsqueeze = unsqueeze
Tensor.transpose = transpose
Tensor.permute = permute
Tensor.t = t
Tensor.unflatten = unflatten
Tensor.movedim = movedim
Tensor.swapaxes = transpose
Tensor.swapdims = transpose
Tensor.repeat = repeat
Tensor.flip = flip
Tensor.split = lambda self, split_size, dim=0: split(self, split_size, dim)  # (torch's method names it split_size)
Tensor.chunk = chunk
Tensor.narrow = narrow
Tensor.select = select
Tensor.unbind = unbind
Tensor.gather = gather
Tensor.scatter_add = scatter_add
Tensor.index_select = index_select
Tensor.masked_fill = masked_fill
Tensor.take_along_dim = take_along_dim
Tensor.tril = tril
Tensor.triu = triu
Tensor.diagonal = diagonal
Tensor.as_strided = as_strided
Tensor.as_strided_scatter = as_strided_scatter
Tensor.unsafe_split = lambda self, split_size, dim=0: split(self, split_size, dim)
Tensor.unsafe_split_with_sizes = unsafe_split_with_sizes
Tensor.unsafe_chunk = unsafe_chunk
