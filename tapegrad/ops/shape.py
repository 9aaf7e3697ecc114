"""Shape and data movement: reshape and views, and the gather mechanism (index map forward, scatter-add
adjoint) that transpose, permute, slicing, indexing, repeat, flip, split, gather and index_select share.

A view-like op computes its value with NumPy (a strided view, copied) and, only when it is recorded,
the index map of that view: map[i] = the flat position in the input of output element i.
"""
import builtins
import math
import numbers

import numpy as np

from .. import _dtype, _strides, registry
from ..registry import K_GATHER, K_RESHAPE
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor, _new
from .elementwise import where
from ._common import broadcast_shape, _dim, _dims, OPS, _record, _share_version, _sizes, _tensor, _to_dtype
from ..tape import guard
from .reduce import expand


def _recording(*xs):
    return is_grad_enabled() and builtins.any(x._requires_grad for x in xs)


# -- reshapes ---------------------------------------------------------------------------------------------
def _reshape(x, shape, op):
    """A view: it shares x's storage and version counter, as torch's views do, so a write through
    either one is caught by the version check of every row that saved the other."""
    t = _record(op, x._data.reshape(shape), (x,)) if x._requires_grad else _new(x._data.reshape(shape))
    t._base = x if x._base is None else x._base
    if x._strides is not None:  # (reshape copies where view cannot: contiguous then)
        new = _strides.of_view(x._data.shape, x._strides, shape)
        t._strides = None if new is None else _strides.normal(shape, new)
    return _share_version(x, t)


def _infer_shape(x, shape):
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or x.numel() % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {x.numel()}")
        shape = tuple(x.numel() // known if s == -1 else s for s in shape)
    if builtins.any(s < 0 for s in shape):
        raise RuntimeError(f"invalid shape dimension {builtins.min(shape)}")
    if math.prod(shape) != x.numel():
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {x.numel()}")
    return shape


def reshape(input, *shape):
    x = _tensor(input)
    return _reshape(x, _infer_shape(x, _sizes(shape)), OPS["reshape"])


def view(input, *shape):
    x = _tensor(input)
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        raise NotImplementedError("tapegrad: view(dtype) is not supported")
    shape = _infer_shape(x, _sizes(shape))
    if x._strides is not None and _strides.of_view(x._data.shape, x._strides, shape) is None:
        raise RuntimeError(_strides.VIEW_MESSAGE)
    return _reshape(x, shape, OPS["view"])


def flatten(input, start_dim=0, end_dim=-1):
    x = _tensor(input)
    if x.ndim == 0:
        return _reshape(x, (1,), OPS["view"])
    s, e = _dim(start_dim, x.ndim), _dim(end_dim, x.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return x
    return _reshape(x, x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:], OPS["view"])


def unflatten(input, dim, sizes):
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    sizes = _sizes(tuple(sizes))
    inner = _infer_shape(_new(np.empty(x.shape[d], np.bool_)), sizes)
    return _reshape(x, x.shape[:d] + inner + x.shape[d + 1:], OPS["view"])


def squeeze(input, dim=None):
    x = _tensor(input)
    if dim is None:
        return _reshape(x, tuple(s for s in x.shape if s != 1), OPS["squeeze"])
    dims = _dims(dim, x.ndim)
    op = OPS["squeeze_dims" if isinstance(dim, (tuple, list)) else "squeeze_dim"]
    return _reshape(x, tuple(s for i, s in enumerate(x.shape) if not (i in dims and s == 1)), op)


def unsqueeze(input, dim):
    x = _tensor(input)
    d = _dim(dim, x.ndim + 1)
    return _reshape(x, x.shape[:d] + (1,) + x.shape[d:], OPS["unsqueeze"])


# -- the gather mechanism -----------------------------------------------------------------------------------
def _gather(x, index_map, op=None, out=None):
    """out = x.flat[index_map] with the adjoint scatter-add: the one mechanism for data movement.
    `out` may be given when the caller computed the same values faster (a NumPy view, copied)."""
    index_map = np.asarray(index_map, dtype=np.int64, order="C")
    if out is None:
        out = np.asarray(x._data.reshape(-1)[index_map])
    if not (x._requires_grad and is_grad_enabled()):
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
    m.setflags(write=False)
    global _view_map_bytes
    if m.nbytes <= _VIEW_MAPS_BYTES // 8:
        while _VIEW_MAPS and _view_map_bytes + m.nbytes > _VIEW_MAPS_BYTES:  # the oldest go first
            _view_map_bytes -= _VIEW_MAPS.pop(next(iter(_VIEW_MAPS))).nbytes
        _VIEW_MAPS[key] = m
        _view_map_bytes += m.nbytes
    return m


_VIEW_MAPS, _VIEW_MAPS_BYTES, _view_map_bytes = {}, 64 << 20, 0


def _view_op(x, v, op):
    """The op whose value is the NumPy view v of x's data (copied, C-contiguous)."""
    out = np.array(v, order="C", copy=True)
    if not (x._requires_grad and is_grad_enabled()):
        t = _new(out)
    else:
        t = _gather(x, _view_map(x._data, v), op, out)
    strides = _strides.of_numpy_view(x, v)
    if strides is not None:
        t._strides = strides
    return t if op is OPS["flip"] else _share_version(x, t)  # (torch's flip copies)


def scatter_flat(g, index_map, shape):
    """The adjoint of a gather: zeros of `shape` with g added at index_map (differentiable)."""
    g = _tensor(g)
    out = np.zeros(math.prod(shape), g._data.dtype)
    np.add.at(out, index_map.reshape(-1), g._data.reshape(-1))
    return _record(OPS["scatter_flat"], out.reshape(shape), (g,), aux=index_map)


# -- permutations ---------------------------------------------------------------------------------------------
def transpose(input, dim0, dim1):
    x = _tensor(input)
    if x.ndim == 0:
        _dim(dim0, 0), _dim(dim1, 0)
        return _view_op(x, x._data, OPS["transpose"])
    d0, d1 = _dim(dim0, x.ndim), _dim(dim1, x.ndim)
    return _view_op(x, np.swapaxes(x._data, d0, d1), OPS["transpose"])


swapaxes = swapdims = transpose


def t(input):
    x = _tensor(input)
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return _view_op(x, x._data.T, OPS["t"])


def permute(input, *dims):
    x = _tensor(input)
    dims = _sizes(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {x.ndim} is not "
                           f"equal to len(dims) = {len(dims)}")
    norm = tuple(_dim(d, x.ndim) for d in dims)
    if len(set(norm)) != len(norm):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _view_op(x, np.transpose(x._data, norm), OPS["permute"])


def movedim(input, source, destination):
    x = _tensor(input)
    src = _dims(source, x.ndim)
    dst = _dims(destination, x.ndim)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    return _view_op(x, np.moveaxis(x._data, src, dst), OPS["permute"])


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
        return _view_op(x, x._data, OPS["flip"])
    return _view_op(x, np.flip(x._data, dims), OPS["flip"])


def repeat(input, *sizes):
    x = _tensor(input)
    sizes = _sizes(sizes)
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
    return _view_op(x, np.diagonal(x._data, int(offset), d1, d2), OPS["diagonal"])


def tril(input, diagonal=0):
    return _triangle("tril", np.tril, input, diagonal)


def triu(input, diagonal=0):
    return _triangle("triu", np.triu, input, diagonal)


def _triangle(name, np_fn, input, diagonal):
    x = _tensor(input)
    if x.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    out = np.asarray(np_fn(x._data, int(diagonal)), order="C")
    return _record(OPS[name], out, (x,), aux=int(diagonal))


# -- pieces: narrow, select, split, chunk, unbind, cat, stack -------------------------------------------------
def narrow(input, dim, start, length):
    x = _tensor(input)
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, x.ndim)
    n = x.shape[d]
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


def _piece(x, d, start, length, op):
    key = (slice(None),) * d + (slice(start, start + length),)
    return _view_op(x, x._data[key], op)


def select(input, dim, index):
    x = _tensor(input)
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, x.ndim)
    n = x.shape[d]
    i = int(index)
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(x.shape)} at dimension {d}")
    return _view_op(x, x._data[(slice(None),) * d + (i, Ellipsis)], OPS["select"])


def split(tensor, split_size_or_sections, dim=0):
    x = _tensor(tensor)
    d = _dim(dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
        if size == 0:
            if n:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
            return (_piece(x, d, 0, 0, OPS["split"]),)
        starts = range(0, n, size) if n else (0,)
        return tuple(_piece(x, d, s, builtins.min(size, n - s), OPS["split"]) for s in starts)
    sizes = [int(s) for s in split_size_or_sections]
    if builtins.sum(sizes) != n or builtins.any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={sizes}")
    starts = np.cumsum([0] + sizes[:-1]).tolist()
    return tuple(_piece(x, d, s, k, OPS["split_with_sizes"]) for s, k in zip(starts, sizes))


def chunk(input, chunks, dim=0):
    x = _tensor(input)
    chunks = int(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _dim(dim, x.ndim)
    if x.shape[d] == 0:  # torch: `chunks` empty chunks of an empty dim
        return tuple(narrow(x, d, 0, 0) for _ in range(chunks))
    return split(x, builtins.max(1, -(-x.shape[d] // chunks)), d)


def unbind(input, dim=0):
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    return tuple(_view_op(x, x._data[(slice(None),) * d + (i, Ellipsis)], OPS["unbind"]) for i in range(x.shape[d]))


def _promote_all(tensors):
    dt = _dtype.result_type(*[t._data for t in tensors])
    return [_to_dtype(t, dt) for t in tensors], dt


def cat(tensors, dim=0, *, out=None):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError("cat() received an invalid combination of arguments - expected a tuple of Tensors")
    tensors = [_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t_ in enumerate(tensors):
        if t_.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    parts = [t_ for t_ in tensors if not (t_.ndim == 1 and t_.shape[0] == 0)]  # torch skips legacy empty 1-D
    if not parts:
        parts = tensors[:1]
    ref = parts[0]
    d = _dim(dim, ref.ndim)
    for i, t_ in enumerate(tensors):
        if t_.ndim == 1 and t_.shape[0] == 0 and ref.ndim != 1:
            continue
        if t_.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {t_.ndim}")
        for k in range(ref.ndim):
            if k != d and t_.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[k]} but got size {t_.shape[k]} for tensor number {i} in the list.")
    skipped = [t_.ndim == 1 and t_.shape[0] == 0 and ref.ndim != 1 for t_ in tensors]
    if parts is tensors[:1] or not builtins.any(skipped):
        skipped = [False] * len(tensors)
    every, dt = _promote_all(tensors)
    parts = [p for p, s in zip(every, skipped) if not s]
    value = np.concatenate([p._data for p in parts], axis=d)
    if dt.kind != "f" or not _recording(*every):
        return _new(value)
    sizes = [None if s else p.shape[d] for p, s in zip(every, skipped)]
    return _record(OPS["cat"], value, tuple(every), aux=(d, sizes))


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
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
    if dt.kind != "f" or not _recording(*parts):
        return _new(value)
    return _record(OPS["stack"], value, tuple(parts), aux=d)


def hstack(tensors):
    tensors = [_tensor(t) for t in tensors]
    return cat(tensors, 0 if tensors and tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([t_ if t_.ndim >= 2 else reshape(t_, 1, -1) for t_ in map(_tensor, tensors)], 0)


# -- gather, scatter_add, index_select, masked_fill -----------------------------------------------------------
def _check_index(name, x, dim, index):
    index = _tensor(index)
    if index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    d = _dim(dim, x.ndim)
    if index.ndim != x.ndim and not (index.ndim <= 1 and x.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    return index, d


def gather(input, dim, index, *, sparse_grad=False):
    x = _tensor(input)
    index, d = _check_index("gather", x, dim, index)
    idx = index._data.astype(np.int64, copy=False)
    if x.ndim == 0:
        idx = idx.reshape(())
    else:
        xs, ishape = x.shape, idx.shape if idx.ndim else (1,)
        for k in range(x.ndim):
            if k != d and ishape[k] > xs[k]:
                raise RuntimeError(f"Size does not match at dimension {k} expected index {list(ishape)} to be no "
                                   f"larger than self {list(xs)} apart from dimension {d}")
    _bounds(idx, x.shape[d] if x.ndim else 1, d)
    flat = _along(x, d, idx)
    return guard(_gather(x, flat, OPS["gather"]), index)


def _along(x, d, idx):
    """Flat positions in x of x.take_along_dim(idx, d), idx no larger than x outside d."""
    if x.ndim == 0:
        return np.zeros(idx.shape, np.int64)
    base = _index_map(x)[tuple(slice(0, idx.shape[k]) if k != d else slice(None) for k in range(x.ndim))]
    return np.take_along_axis(base, idx, d)


def _bounds(idx, n, d, error=RuntimeError):
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        bad = hi if hi >= n else lo if lo < 0 else None
        if bad is not None:
            raise error(f"index {bad} is out of bounds for dimension {d} with size {n}")


def scatter_add(input, dim, index, src):
    x, src = _tensor(input), _tensor(src)
    index, d = _check_index("scatter_add", x, dim, index)
    idx = index._data.astype(np.int64, copy=False)
    for k in range(x.ndim):
        if idx.shape[k] > src.shape[k] or k != d and idx.shape[k] > x.shape[k]:
            raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self {list(x.shape)} apart "
                               f"from dimension {d} and to be no larger size than src {list(src.shape)}")
    _bounds(idx, x.shape[d], d)
    flat = _along(x, d, idx)
    src = _to_dtype(src, x._data.dtype)
    src_part = src._data[tuple(slice(0, s) for s in idx.shape)]
    out = x._data.copy()
    np.add.at(out.reshape(-1), flat.reshape(-1), src_part.reshape(-1))
    if x._data.dtype.kind != "f":
        return _new(out)
    return guard(_record(OPS["scatter_add"], out, (x, src), aux=(d, index)), index)


def index_select(input, dim, index):
    x = _tensor(input)
    index = _tensor(index)
    d = _dim(dim, x.ndim)
    if index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    idx = index._data.reshape(-1).astype(np.int64, copy=False)
    n = x.shape[d] if x.ndim else 1
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if x.ndim == 0:
        return guard(_gather(x, np.zeros(idx.shape if index.ndim else (), np.int64), OPS["index_select"]), index)
    flat = np.take(_index_map(x), idx, axis=d)
    return guard(_gather(x, flat, OPS["index_select"], np.take(x._data, idx, axis=d)), index)


def take_along_dim(input, indices, dim):
    return gather(input, dim, indices)


def masked_fill(input, mask, value):
    x, mask = _tensor(input), _tensor(mask)
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_C_NAMES.get(mask._data.dtype.name, mask._data.dtype.name)}")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    broadcast_shape(mask.shape, x.shape)
    v = value._data if isinstance(value, Tensor) else value
    out = np.where(mask._data, np.asarray(v).astype(x._data.dtype), x._data)
    tensor_value = isinstance(value, Tensor)
    inputs = (x,) + ((_to_dtype(value, x._data.dtype),) if tensor_value and value._requires_grad else ())
    if x._data.dtype.kind != "f":
        return _new(out)
    return guard(_record(OPS["masked_fill_tensor" if tensor_value else "masked_fill"], out, inputs, aux=mask), mask)


_C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "uint8": "unsigned char"}


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
    for k in items:
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
            if not isinstance(key, tuple) or k != slice(None) and k != slice(None, None, 1):
                last = "slice"
        elif isinstance(k, (bool, np.bool_)):
            out.append(np.asarray(k))
            advanced = True
        elif isinstance(k, (numbers.Integral, np.integer)):
            out.append(int(k))
            last = "select"
        elif isinstance(k, Tensor) and k.ndim == 0 and k._data.dtype.kind in "iu":
            out.append(int(k._data))
            last = "select"
        elif isinstance(k, (Tensor, list, np.ndarray, range, tuple)):
            a = k._data if isinstance(k, Tensor) else np.asarray(k if type(k) is not range else list(k))
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


def _sequence_as_tuple(key):
    """torch's treatSequenceAsTuple (NumPy's old rule): a short list holding a tensor, a sequence, a slice,
    Ellipsis or None indexes as a tuple (x[[rows, cols]] is x[rows, cols]); other lists and ranges are index
    arrays."""
    return len(key) < 32 and builtins.any(
        isinstance(k, (Tensor, list, tuple, range, slice, np.ndarray)) or k is Ellipsis or k is None for k in key)


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


def getitem(x, key):
    x = _tensor(x)
    index_tensors = [k for k in (key if isinstance(key, tuple) else (key,)) if isinstance(k, Tensor)]
    key, advanced, op = _index_key(key, x)
    if advanced:
        try:
            out = np.asarray(x._data[key], order="C")
        except IndexError as e:  # shapes of index arrays that do not broadcast
            raise IndexError(str(e).replace("arrays", "tensors")) from None
        if not _recording(x):
            return _new(out)
        return guard(_gather(x, _index_map(x)[key], OPS[op], out), *index_tensors)
    v = x._data[key if Ellipsis in key else key + (Ellipsis,)]
    if op in ("unsqueeze", "alias"):
        if v.size == x.numel():  # no data moves: a reshape under torch's name
            return _reshape(x, v.shape, OPS[op])
        op = "unsqueeze_gather"
    return _view_op(x, v, OPS[op])


# == Declarations: each op's derivative rule and its forward on arrays (tapegrad.compile) ==================
def _vjp_reshape(ctx, g, inputs, out):
    return (g.reshape(inputs[0].shape),)


def _vjp_gather(ctx, g, inputs, out):
    return (scatter_flat(g, ctx, inputs[0].shape),)  # ctx: the index map


def _gather_forward(ctx, x):
    return x.reshape(-1)[ctx]  # ctx: the index map, which depends on shapes and Python ints only


_INDEXED = "its index map is computed from the values of a tensor (an index, or the input's order)"
_READS_CONSTANT = "it reads a tensor that is not one of its inputs (an index or a mask), which a replay cannot rebind"

registry.structural("reshape", K_RESHAPE, "ViewBackward0", _vjp_reshape)
registry.structural("gather_flat", K_GATHER, "IndexBackward0", _vjp_gather, unreplayable=_INDEXED)
# Data movement: each is a gather (index map forward, compiled scatter-add adjoint) under torch's name.
for _name, _grad_fn in (("transpose", "TransposeBackward0"), ("t", "TBackward0"), ("permute", "PermuteBackward0"),
                        ("select", "SelectBackward0"), ("slice", "SliceBackward0"), ("repeat", "RepeatBackward0"),
                        ("flip", "FlipBackward0"), ("split", "SplitBackward0"),
                        ("split_with_sizes", "SplitWithSizesBackward0"), ("unbind", "UnbindBackward0"),
                        ("diagonal", "DiagonalBackward0"), ("unsqueeze_gather", "UnsqueezeBackward0")):
    registry.structural(_name, K_GATHER, _grad_fn, _vjp_gather, forward=_gather_forward)
for _name, _grad_fn in (("index", "IndexBackward0"), ("gather", "GatherBackward0"),
                        ("index_select", "IndexSelectBackward0"), ("max_dim", "MaxBackward0"),
                        ("min_dim", "MinBackward0"), ("embedding", "EmbeddingBackward0")):
    registry.structural(_name, K_GATHER, _grad_fn, _vjp_gather, unreplayable=_INDEXED)
for _name, _grad_fn in (("view", "ViewBackward0"),
                        ("squeeze", "SqueezeBackward0"), ("squeeze_dim", "SqueezeBackward1"),
                        ("squeeze_dims", "SqueezeBackward2"), ("unsqueeze", "UnsqueezeBackward0"),
                        ("alias", "AliasBackward0")):
    registry.structural(_name, K_RESHAPE, _grad_fn, _vjp_reshape)


def _vjp_scatter(ctx, g, inputs, out):
    return (_gather(g, ctx),)  # ctx: the index map


registry.python("scatter_flat", "IndexPutBackward0", None, _vjp_scatter, saves=0,
                unreplayable="a gather's adjoint: its output's size is not in its saved context")


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


def _vjp_masked_fill(ctx, g, inputs, out):
    grads = [where(ctx, 0.0, g)]           # ctx: the mask (a bool Tensor)
    if len(inputs) > 1:
        grads.append(where(ctx, g, 0.0).sum())
    return tuple(grads)


def _vjp_tril(ctx, g, inputs, out):
    return (g.tril(ctx),)


def _vjp_triu(ctx, g, inputs, out):
    return (g.triu(ctx),)


registry.python("cat", "CatBackward0", _cat_forward, _vjp_cat, saves=0)
registry.python("stack", "StackBackward0", lambda ctx, *xs: np.stack(xs, axis=ctx), _vjp_stack, saves=0)
registry.python("scatter_add", "ScatterAddBackward0", None, _vjp_scatter_add, saves=0, unreplayable=_READS_CONSTANT)
registry.python("masked_fill", "MaskedFillBackward0", None, _vjp_masked_fill, saves=0, unreplayable=_READS_CONSTANT)
registry.python("masked_fill_tensor", "MaskedFillBackward1", None, _vjp_masked_fill, saves=0,
                unreplayable=_READS_CONSTANT)
registry.python("tril", "TrilBackward0", lambda ctx, x: np.tril(x, ctx), _vjp_tril, saves=0)
registry.python("triu", "TriuBackward0", lambda ctx, x: np.triu(x, ctx), _vjp_triu, saves=0)


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]
