"""What every op front-end shares: recording, operand conversion, dtype promotion, torch's shape errors."""
import builtins
import numbers

import numpy as np

from .. import _dtype, _meta, registry, saved_tensors, tape as tape_mod
from .._dtype import _cpp_int_name, _two_complement, parsed_int, scalar_to_dtype, wrap_integer  # noqa: F401
from ..saved_tensors import OPEN as _saved_tensors_hooks
from ..grad_mode import INFERENCE_ON, _state as _grad_mode
from ..tensor import Tensor, _new, as_array, as_index, register_view, storage_of

OPS = registry.BY_NAME
_tape_local = tape_mod._local


# -- recording ---------------------------------------------------------------------------------------
def _record(op, out, inputs, c=0.0, c2=0.0, iattr=0, aux=None):
    """Wrap `out` as a Tensor, and record op when grad mode is on and an input requires grad."""
    if type(out) is not np.ndarray:  # (a NumPy scalar; asanyarray: a meta value stays meta, _meta.py)
        out = np.asanyarray(out)
    t = Tensor.__new__(Tensor)
    t._data = out
    if _grad_mode.enabled:
        for x in inputs:
            if x._requires_grad:
                tape = _tape_local.tape or tape_mod.current()
                t._slot = tape.record(op.code, out, inputs, c, c2, iattr, aux)
                t._tape, t._requires_grad, t._is_leaf, t._op = tape, True, False, op.code
                if _saved_tensors_hooks:
                    saved_tensors.pack(tape, t, op, inputs)
                return t
    if INFERENCE_ON[0] and _grad_mode.inference:
        t._inference = True
    if tape_mod._local.tracing is not None:  # tapegrad.compile records ops on constants too (no gradient)
        if not _grad_mode.enabled:
            tape_mod.untraceable(f"{op.name} ran unrecorded (under no_grad)")
        tape_mod._local.tape.record_constant(op.code, t, inputs, c, c2, iattr, aux)
    return t


def _record_undefined_gradient(op, out, inputs, aux):
    """Record op as _record does, but with no input edges: the output requires grad (it has torch's grad_fn),
    while torch's derivative formula returns an undefined gradient (norm with p=0), which reaches no input:
    a leaf reached only this way keeps `.grad` None and autograd.grad calls it unused, as in torch. aux
    must say why tapegrad.compile cannot replay it (`unreplayable`: the row does not name its input)."""
    if _grad_mode.enabled and any(x._requires_grad for x in inputs):
        t = _new(out)
        tape = tape_mod.current()
        t._slot = tape.record(op.code, t._data, (), aux=aux)
        t._tape, t._requires_grad, t._is_leaf, t._op = tape, True, False, op.code
        return t
    return _record(op, out, inputs, aux=aux)


def _as_view(x, t, window, output_nr=None):
    """t is torch's view of x, and its value mirrors `window` (a NumPy view into x's storage). output_nr: t's
    place among the views a function returned (split, chunk, unbind), which torch forbids writing into."""
    base = t._base = x if x._base is None else x._base
    if x._inference:  # (a view of an inference tensor is one, wherever it is made)
        t._inference = True
    if output_nr is not None:
        t._creation, t._output_nr = "multi", output_nr
    elif x._creation is not None:
        t._creation = x._creation  # (a view of such a view; torch's output number is 0 then)
    elif base._requires_grad and not _grad_mode.enabled:
        t._creation = "no_grad"
    if not window.flags.writeable and storage_of(window).flags.writeable:
        window.flags.writeable = True  # (np.diagonal's and broadcast_to's views are read-only by default)
    _share_version(x, t)  # (before t is registered: a cell x makes now need not look for t among its views)
    register_view(t, window)
    return t


def window_of(x):
    """The NumPy view of the storage that x's value mirrors: x's own value unless x is a (copied) view."""
    return x._data if x._window is None else x._window


def _share_version(x, t):
    """t is a view of x in torch (tapegrad's may hold a copy): one version counter for both, so an in-place
    write to either is caught by the version check of every row that saved the other, as torch's is. A view
    that is not recorded, of a base with no cell yet, takes none until the storage's first write or until a
    row reads it (_ensure_vc, Tape.slot): most such views never see either."""
    tape = t._tape
    if tape is None:
        if x._vc is not None:
            t._vc = x._vc
        else:
            t._base._views_without_cell = True
        return t
    cell = x._vc
    if cell is None:
        row = x._slot
        if (x._tape is tape and x._base is None and not x._views_without_cell and tape.values[row] is x._data
                and row not in tape.cells):  # (x's row, just read by t's: _ensure_vc's search and checks pass)
            x._vc = t._vc = tape.new_cell(row, t._slot)
            return t
        cell = x._ensure_vc()
    t._vc = cell
    tape.set_cell(t._slot, cell, current=True)
    return t


def _tensor(x, like=None):
    """A Tensor for an operand: Tensors pass through; arrays, lists and scalars become constants."""
    if isinstance(x, Tensor):
        return x
    if like is not None and isinstance(x, numbers.Number):  # (a number in the result's dtype, as torch converts it)
        dt = _dtype.result_type(like._data, x)
        t = _new(np.asanyarray(scalar_to_dtype(x, dt), dtype=dt))
    else:
        t = _new(as_array(x))
    if tape_mod._local.tracing is not None:  # (tapegrad.compile: made from Python values, a constant)
        tape_mod.made_in_trace(t)
    return t


def _is_scalar(x):
    return isinstance(x, (numbers.Number, np.bool_)) and not isinstance(x, Tensor)


def _to_dtype(x, np_dtype):
    """x in np_dtype: a recorded cast when x requires grad, else a plain conversion."""
    if x._data.dtype == np_dtype:
        return x
    if x._requires_grad and _dtype.is_float(np_dtype):
        return _record(OPS["cast"], _dtype.cast(x._data, np_dtype), (x,))
    t = _new(_dtype.cast(x._data, np_dtype))
    if tape_mod._local.tracing is not None and _grad_mode.enabled:  # (tapegrad.compile: recomputed, no gradient)
        tape_mod._local.tape.record_constant(OPS["cast"].code, t, (x,))
    return t


def _in_float32(forward, *arrays):
    """A bfloat16 op as torch's CPU kernels compute it: on the float32 values, the result rounded to bfloat16
    once (NumPy on ml_dtypes' bfloat16 would round after every step of a composite forward)."""
    bf16 = arrays[0].dtype
    out = np.asanyarray(forward(*(a.astype(np.float32) for a in arrays)))
    return out.astype(bf16) if out.dtype.kind == "f" else out


# -- torch.autocast("cpu") ---------------------------------------------------------------------------
autocast_state = _dtype.autocast_state  # (shared state: tapegrad.amp.autocast sets it)


def _autocast_lower(*tensors):
    """torch's CPU autocast "lower precision" ops (matmul, mm, bmm, linear, conv, einsum, prelu): float32 and
    float16 operands (not float64) cast to the region's dtype, the cast recorded so that gradients flow back."""
    dt = autocast_state.dtype
    return tuple(_to_dtype(t, dt) if t is not None and _dtype.is_float(t._data.dtype) and t._data.dtype != np.float64
                 else t for t in tensors)


def _autocast_float32(*args):
    """torch's CPU autocast "float32" ops (the losses, prod): inside a region, their reduced-precision tensor
    arguments are cast to float32 first (the casts recorded). Returns the arguments."""
    if autocast_state.dtype is None:
        return args
    return tuple(_to_float32(a) for a in args)


def _to_float32(a):
    if isinstance(a, Tensor) and a._data.dtype.itemsize == 2 and _dtype.is_float(a._data.dtype):
        return _to_dtype(a, np.dtype(np.float32))
    return a


def _vjp_cast(ctx, g, inputs, out):
    return (g.to(inputs[0].dtype),)


registry.structural("cast", registry.K_CAST, "ToCopyBackward0", _vjp_cast)


def _float(x):
    """Ops that only make sense in floating point promote integer inputs to the default float dtype, as torch."""
    return x if _dtype.is_float(x._data.dtype) else _new(x._data.astype(_dtype.default_float.np))


# -- shape errors in torch's words -------------------------------------------------------------------
def broadcast_shape(a, b):
    if a == b:  # the common case, without NumPy's broadcast_shapes (about 2 us)
        return tuple(a)
    if len(a) == len(b):
        out = []
        for da, db in zip(a, b):
            if da != db and da != 1 and db != 1:
                break
            out.append(db if da == 1 else da)
        else:
            return tuple(out)
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        pass
    for i in range(1, builtins.max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da != db and da != 1 and db != 1:
            raise RuntimeError(f"The size of tensor a ({da}) must match the size of tensor b ({db}) at "
                               f"non-singleton dimension {builtins.max(len(a), len(b)) - i}")
    raise RuntimeError(f"shapes {a} and {b} cannot be broadcast")


def summed_dims(shape, target):
    """The dims of `shape` to sum (keepdim) to undo broadcasting onto `target`: leading dims, and dims where
    target has 1."""
    lead = len(shape) - len(target)
    return tuple(range(lead)) + tuple(lead + i for i, s in enumerate(target) if s == 1 and shape[lead + i] != 1)


def _dim(d, ndim):
    """Normalise a dim argument; torch's IndexError when it is out of range."""
    if type(d) is int and -ndim <= d < ndim:  # (the common case first)
        return d % ndim
    d = as_index(d)
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
        raise TypeError(f"dim must be an int, got {type(d).__name__}")
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not lo <= d <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})")
    return int(d) % builtins.max(ndim, 1)


def _dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    dims = tuple(_dim(d, ndim) for d in (dim if isinstance(dim, (tuple, list)) else (dim,)))
    if len(set(dims)) != len(dims):
        twice = next(d for d in dims if dims.count(d) > 1)
        raise RuntimeError(f"dim {twice} appears multiple times in the list of dims")
    return dims


def _mask(dims):
    m = 0
    for d in dims:
        m |= 1 << d
    return m


def _sizes_or_keyword(sizes, keyword, name, keyword_name):
    """Sizes given positionally or as torch's keyword (`x.view(size=(3, 2))`, `x.permute(dims=(1, 0))`)."""
    if keyword is None:
        return sizes
    if sizes:
        raise TypeError(f"{name}() got multiple values for argument '{keyword_name}'")
    return (keyword,)


def _sizes(sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    for s in sizes:  # (the common case first: Python ints; a loop, half the cost of all() of a generator)
        if type(s) is not int:
            break
    else:
        return sizes if type(sizes) is tuple else tuple(sizes)
    sizes = tuple(map(as_index, sizes))
    for s in sizes:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"expected a sequence of integers, got {type(s).__name__}")
    return tuple(int(s) for s in sizes)


def _tensor_tensor(op, forward, a, b, to_float=False, check=None):
    """`to_float`: the result is floating point for integer operands too (true division, atan2), in the
    default dtype (float32 unless set) as torch computes it; `check(a, b)`: torch's dtype errors, off the hot path."""
    da, db = a._data, b._data
    if da.dtype == db.dtype and da.dtype.kind == "f":  # the hot path (float32/64: bfloat16 rounds per op below)
        try:
            out = forward(da, db)
        except ValueError:
            broadcast_shape(da.shape, db.shape)  # raises torch's error
            raise
        return _record(op, out, (a, b))
    if check is not None:
        check(a, b)
    shape = broadcast_shape(a._data.shape, b._data.shape)
    dt = _dtype.result_type(a._data, b._data)
    if to_float and not _dtype.is_float(dt):
        dt = _dtype.default_float.np
    if not _dtype.is_float(dt):
        return _new(np.asanyarray(_integer(forward, a._data, b._data)).astype(dt, copy=False))
    a, b = _to_dtype(a, dt), _to_dtype(b, dt)
    out = _in_float32(forward, a._data, b._data) if _dtype.is_reduced_float(dt) else forward(a._data, b._data)
    assert out.shape == shape
    return _record(op, out, (a, b))


_meta.FRONT_ENDS.add(_tensor_tensor.__code__)  # (torch's error for meta and CPU operands, _meta._mixed)


def _integer(forward, a, b):
    """An integer op's NumPy forward, with NumPy's errors in torch's type and words."""
    try:
        return forward(a, b)
    except ValueError as e:
        if "negative integer powers" not in str(e):
            raise
        if not isinstance(b, np.ndarray):  # (torch refuses a negative Python-number exponent only)
            raise RuntimeError("Integers to negative integer powers are not allowed.") from None
        return _integer_power_of_tensors(a, b)


def _integer_power_of_tensors(a, b):
    """Integer a ** b for a tensor exponent with negative entries, as torch's kernel: 1 ** n and (-1) ** n as they
    are, any other base to a negative power 0 (the integer part of its reciprocal)."""
    a = np.asarray(a)
    negative = b < 0
    positive_part = np.power(a, np.where(negative, 0, b))
    odd = np.remainder(b, 2) != 0
    reciprocal = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
    return np.where(negative, reciprocal, positive_part).astype(positive_part.dtype)



def detach(input):
    return _tensor(input).detach()


def to_dtype(x, dtype):
    return _to_dtype(x, _dtype.to_numpy_dtype(dtype))


def _array_rule_dtype(*arrays):
    """An array rule (a plain backward on NumPy arrays) runs on float32 and float64 arrays (a float16 or
    bfloat16 row's rule is given them in float32: replay._reduced_float_rule); other dtypes take the Tensor rule."""
    for a in arrays:
        if a.dtype.char not in "fd":  # (a compare with np.float32 costs a conversion: 0.3 us)
            return False
    return True


def _min_max(a):
    """(min, max) of a non-empty integer array, as Python ints: for a few elements (an index, a decoder's target)
    from a list, which costs a fifth of NumPy's two reductions."""
    if a.size <= 16:
        values = a.ravel().tolist()
        return min(values), max(values)
    return int(np.minimum.reduce(a, None)), int(np.maximum.reduce(a, None))


def _sum_to_np(a, shape):
    """a summed down to `shape` (the adjoint of broadcasting), on arrays."""
    if a.shape == shape:
        return a
    # (np.add.reduce: np.sum's Python wrapper costs about 2 us; the same pairwise sums)
    return np.add.reduce(a, axis=summed_dims(a.shape, shape), keepdims=True).reshape(shape)
