"""Neural-network ops that torch keeps in torch.nn.functional (and some also as torch.X): linear, dropout,
embedding, one_hot, gelu. nn/functional.py binds them under functional's names and signatures."""
import builtins
import math

import numpy as np

from .. import _dtype, _strides, random, registry
from .._meta import MetaArray as _MetaArray, make as _make_meta
from ..grad_mode import is_grad_enabled
from ..tensor import _new, Tensor, tensor_type_name
from ._common import _array_rule_dtype, _min_max  # (the array rules; bounds)
from ._common import OPS, _autocast_lower, _in_float32, _record, _tensor, _to_dtype, autocast_state, broadcast_shape
from . import elementwise
from .elementwise import mul, where
from ._signatures import Signatures
from .shape import _gather, _reshape, index_select, scatter_flat
from .sparse import sparse_rows
from ..tape import _local as _tape_local, guard, made_in_trace, untraceable
from .linalg import _mm, matmul


# torch's names of the dtypes in its matmul family's errors


def linear(input, weight, bias=None):
    """input @ weight.T + bias, one op for 2-D input (AddmmBackward0 / MmBackward0, as torch)."""
    if isinstance(input, Tensor) and isinstance(weight, Tensor) and autocast_state.dtype is None:
        xd, wd = input._data, weight._data  # the common case first: 2-D input, one floating dtype, no autocast
        if xd.ndim == 2 and wd.ndim == 2 and xd.shape[1] == wd.shape[1] and xd.dtype == wd.dtype \
                and xd.dtype.char in "fd":
            if bias is None:
                return _record(OPS["linear"], _mm(xd, wd.T), (input, weight))
            if isinstance(bias, Tensor):  # (nn.Linear's weight and bias are Parameters)
                bd = bias._data
                if bd.dtype == xd.dtype and (bd.shape == (wd.shape[0],) or bd.shape == (xd.shape[0], wd.shape[0])):
                    value = _mm(xd, wd.T)
                    value += bd
                    return _record(OPS["addmm"], value, (input, weight, bias))
    x, w = _tensor(input), _tensor(weight)
    if autocast_state.dtype is not None:
        x, w, bias = _autocast_lower(x, w, None if bias is None else _tensor(bias))
    if w.ndim != 2 and not (w.ndim == 1 and x.ndim >= 1):
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {w.ndim}D")
    if w.ndim == 1:
        out = matmul(x, w)
        return out + bias if bias is not None else out
    if x.ndim != 2:  # as torch: fold the leading dims into one, and view the result back
        if x.ndim == 0 or x.shape[-1] != w.shape[1]:
            rows = x.numel() // x.shape[-1] if x.ndim and x.shape[-1] else 1
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1] if x.ndim else 1} "
                               f"and {w.shape[1]}x{w.shape[0]})")
        lead = x.shape[:-1]
        out = linear(_reshape(x, (-1, x.shape[-1]) if x.numel() else (0, x.shape[-1]), OPS["view"]), w, bias)
        return _reshape(out, lead + (w.shape[0],), OPS["view"])
    if bias is not None:  # (torch's addmm, whose `self` is the bias, checks dtypes before shapes)
        if isinstance(bias, Tensor) and bias._data.dtype != w._data.dtype:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                               f"{_dtype.scalar_type_name(bias._data.dtype)} and {_dtype.scalar_type_name(w._data.dtype)}")
        if x._data.dtype != w._data.dtype:
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                               f"{_dtype.scalar_type_name(x._data.dtype)} and {_dtype.scalar_type_name(w._data.dtype)}")
    if x.shape[1] != w.shape[1]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({x.shape[0]}x{x.shape[1]} and "
                           f"{w.shape[1]}x{w.shape[0]})")
    if bias is None and x._data.dtype != w._data.dtype:  # (torch's mm)
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_dtype.cpp_type_name(x._data.dtype)} "
                           f"!= {_dtype.cpp_type_name(w._data.dtype)}")
    if bias is None:
        return _record(OPS["linear"], _linear_forward(None, x._data, w._data), (x, w))
    b = _to_dtype(_tensor(bias), x._data.dtype)
    broadcast_shape((x.shape[0], w.shape[0]), b.shape)
    return _record(OPS["addmm"], _linear_forward(None, x._data, w._data, b._data), (x, w, b))


def _linear_forward(ctx, x, w, b=None):
    if _dtype.is_reduced_float(x.dtype):  # (float16, bfloat16: in float32, rounded once, as torch's)
        return _in_float32(lambda *a: _linear_forward(ctx, *a), *(a for a in (x, w, b) if a is not None))
    value = _mm(x, w.T)
    if b is not None:
        value += b
    return value


def dropout(input, p=0.5, train=True, inplace=False):
    """torch.dropout: zero each element with probability p (tapegrad.random), scale the rest by 1/(1-p)."""
    x = _tensor(input)
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0:
        return x
    dt = x._data.dtype if _dtype.is_float(x._data.dtype) else np.dtype(np.float32)
    # (torch's mask is empty_like(input).bernoulli_(1 - p): drawn in the input's memory order where it is dense)
    strides = x._strides if x._strides is not None and _strides.is_dense(x._data.shape, x._strides) else None
    if type(x._data) is _MetaArray:  # (a meta mask: nothing drawn, as torch's)
        mask = _make_meta(x._data.shape, dt)
    elif p == 1:
        mask = np.zeros(x.shape, dt)
    elif _tape_local.tracing is not None and not inplace:  # tapegrad.compile: a mask each replay draws again
        return mul(x, _tape_local.tape.record_draw(_dropout_draw, (tuple(x.shape), p, dt, strides), False))
    else:
        mask = _dropout_draw(tuple(x.shape), p, dt, strides)
    if inplace:
        return x.mul_(_new(mask))
    return mul(x, _new(mask))


def _dropout_draw(shape, p, dt, strides=None):
    """torch: noise = bernoulli_(1 - p) of the input's shape (its draws in memory order for these strides),
    noise / (1 - p) (input * noise is the op)."""
    return random.in_memory_order(shape, strides, lambda s: random.dropout_mask(s, p, None, dt)) / dt.type(1.0 - p)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding (weight first): rows of weight at indices; padding_idx's row gets no gradient."""
    w, idx = _tensor(weight), _tensor(indices)
    if idx._data.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {tensor_type_name(idx._data)} instead (while checking arguments for "
                           f"embedding)")
    if w.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    V, D = w.shape
    ix = idx._data.astype(np.int64, copy=False)
    if ix.size:
        lo, hi = _min_max(ix)
        if lo < 0 or hi >= V:
            raise IndexError("index out of range in self")
    value = w._data[ix]
    if sparse and w._requires_grad and _grad_on():  # the weight's gradient: a sparse COO tensor (embedding_sparse)
        untraceable(_SPARSE_UNTRACEABLE)
        ctx = (ix, padding_idx if padding_idx is not None and padding_idx >= 0 else None, (V, D), scale_grad_by_freq)
        return guard(_record(OPS["embedding_sparse"], value, (w,), aux=ctx), idx)
    index_map = ix[..., None] * D + np.arange(D, dtype=np.int64)
    padded = padding_idx is not None and padding_idx >= 0
    if not (padded or scale_grad_by_freq) or not (w._requires_grad and _grad_on()):
        return guard(_gather(w, index_map, OPS["embedding"], value), idx, remap=_embedding_remap(index_map, V, D))
    keep = (ix != padding_idx) if padded else np.ones(ix.shape, np.bool_)
    mask = made_in_trace(_new(keep[..., None].astype(w._data.dtype)))
    ctx, scales = (index_map, mask, w.shape), None
    if scale_grad_by_freq:  # each lookup's gradient divided by its index's count in the input, as torch's
        scaled = keep / np.bincount(ix.reshape(-1), minlength=V)[ix]
        scales = made_in_trace(_new(scaled[..., None].astype(w._data.dtype)))
        ctx = (index_map, scales, w.shape, mask)
    remap = _embedding_remap(index_map, V, D, mask._data, padding_idx if padded else None,
                             None if scales is None else scales._data)
    return guard(_record(OPS["embedding_padded"], value, (w,), aux=ctx), idx, remap=remap)


_SPARSE_UNTRACEABLE = ("embedding with sparse=True (its weight's gradient is a sparse COO tensor, which a compiled "
                       "function's backward, dense arrays, cannot hand out)")


def _embedding_remap(index_map, V, D, mask=None, padding_idx=None, scales=None):
    """tapegrad.compile: the index map (and padding mask, scale_grad_by_freq's scales) of a traced embedding
    rewritten from new indices."""
    def remap(indices):
        ix = indices.astype(np.int64, copy=False)
        if ix.size and (ix.min() < 0 or ix.max() >= V):
            raise IndexError("index out of range in self")
        np.multiply(ix[..., None], D, out=index_map)
        np.add(index_map, np.arange(D, dtype=np.int64), out=index_map)
        if mask is not None:
            keep = (ix != padding_idx) if padding_idx is not None else np.ones(ix.shape, np.bool_)
            mask[...] = keep[..., None]
            if scales is not None:
                scales[...] = (keep / np.bincount(ix.reshape(-1), minlength=V)[ix])[..., None]
    remap.writes = tuple(a for a in (index_map, mask, scales) if a is not None)
    return remap


def _embedding_forward(ctx, w):
    return w.reshape(-1)[ctx[0] if type(ctx) is tuple else ctx]


def _grad_on():
    return is_grad_enabled()


def one_hot(tensor, num_classes=-1):
    t = _tensor(tensor)
    if t._data.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = t._data
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1
    if a.size and a.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if a.size and a.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(a.shape + (int(num_classes),), np.int64)
    np.put_along_axis(out, a[..., None], 1, -1)
    return _new(out)


def gelu(input, approximate="none"):
    if approximate == "none":
        if isinstance(input, Tensor) and input._data.dtype in _GELU_DTYPES and input._data.size >= _GELU_ROW_MIN:
            return _record(OPS["gelu_compiled"], _gelu_forward(None, input._data), (input,))
        return elementwise.gelu(input)
    if approximate == "tanh":
        return elementwise.gelu_tanh(input)
    raise RuntimeError("approximate argument must be either none or tanh.")


def clamp_min(input, min):
    return _clamp_one("clamp_min", input, min)


def clamp_max(input, max):
    return _clamp_one("clamp_max", input, max)


# torch's signatures (`_signatures.py`): a number bound, never a number input, and both bounds of one kind
_CLAMP_ONE = {n: Signatures(n, f"(Tensor input, Tensor {b}, *, Tensor out = None)",
                            f"(Tensor input, Number {b}, *, Tensor out = None)")
              for n, b in (("clamp_min", "min"), ("clamp_max", "max"))}
_CLAMP = {n: Signatures(n, "(Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)",
                        "(Tensor input, Number min = None, Number max = None, *, Tensor out = None)")
          for n in ("clamp", "clip")}


def _check_clamp(name, input, min, max):
    args = (input, min, max) if max is not None else (input, min) if min is not None else (input,)
    _CLAMP[name].check(*args)


def _clamp_one(name, input, bound):
    if not isinstance(input, Tensor):
        _CLAMP_ONE[name].check(input, bound)
    if isinstance(bound, Tensor):
        x, b = _tensor(input), bound
        return _clamp_tensor(OPS[name + "_tensor"], x, (b,), (name == "clamp_min", name == "clamp_max"))
    return getattr(elementwise, name)(input, elementwise._bound(bound, input))


def _clamp_tensor(op, x, bounds, which):
    shape = x.shape
    for b in bounds:
        shape = broadcast_shape(shape, b.shape)
    dt = _dtype.result_type(x._data, *[b._data for b in bounds])
    x = _to_dtype(x, dt)
    bounds = tuple(_to_dtype(b, dt) for b in bounds)
    out = _clamp_tensor_forward(which, x._data, *[b._data for b in bounds])
    if not _dtype.is_float(dt):
        return _new(out)
    return _record(op, out, (x,) + bounds, aux=which)


def _clamp_tensor_forward(which, x, *bounds):
    out = x
    if which[0]:
        out = np.maximum(out, bounds[0])
    if which[1]:
        out = np.minimum(out, bounds[-1])
    return np.array(np.broadcast_to(out, np.broadcast_shapes(x.shape, *[b.shape for b in bounds])), order="C",
                    subok=True)


def clamp(input, min=None, max=None):
    """clamp with number or Tensor bounds (ClampBackward1 / ClampBackward0, as torch)."""
    if not isinstance(input, Tensor):
        _check_clamp("clamp", input, min, max)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        if min is not None and max is not None:  # (a Tensor and a number: no signature of torch's takes them)
            _check_clamp("clamp", input, min, max)
        x = _tensor(input)
        like = x
        bounds = tuple(b if isinstance(b, Tensor) else _tensor(b, like) for b in (min, max) if b is not None)
        return _clamp_tensor(OPS["clamp_tensor"], x, bounds, (min is not None, max is not None))
    return elementwise.clamp(input, min, max)



def clip(input, min=None, max=None):
    """clamp with number or Tensor bounds (torch's alias, under its own name in torch's messages)."""
    if not isinstance(input, Tensor) or (isinstance(min, Tensor) != isinstance(max, Tensor) and min is not None
                                         and max is not None):
        _check_clamp("clip", input, min, max)
    return clamp(input, min, max)


def round(input, *, decimals=0):
    if decimals == 0:
        return elementwise.round(input)
    return elementwise.round_decimals(input, float(decimals))


def lerp(input, end, weight):
    """start + weight * (end - start) (LerpBackward0 for a number weight, LerpBackward1 for a Tensor)."""
    s, e = _tensor(input), _tensor(end)
    if s._data.dtype != e._data.dtype:
        raise RuntimeError(f"expected dtype {_dtype.cpp_type_name(s._data.dtype)} for `end` but got dtype "
                           f"{_dtype.cpp_type_name(e._data.dtype)}")
    if not _dtype.is_float(s._data.dtype):
        raise RuntimeError('"lerp_kernel_scalar" not implemented for \'Long\'')
    shape = broadcast_shape(s.shape, e.shape)
    if isinstance(weight, Tensor):
        w = weight
        if w._data.ndim == 0 and _dtype.is_float(w._data.dtype):  # (a 0-d weight of any float dtype: torch casts it)
            w = _to_dtype(w, s._data.dtype)
        if w._data.dtype != s._data.dtype:
            raise RuntimeError(f"expected dtype {_dtype.cpp_type_name(s._data.dtype)} for `weight` but got dtype "
                               f"{_dtype.cpp_type_name(w._data.dtype)}")
        shape = broadcast_shape(shape, w.shape)
        return _record(OPS["lerp_tensor"], _lerp_tensor_forward(None, s._data, e._data, w._data), (s, e, w))
    c = float(weight)
    return _record(OPS["lerp"], _lerp_forward(c, s._data, e._data), (s, e), aux=c)


def _lerp_forward(c, s, e):
    d = e - s
    value = s + s.dtype.type(c) * d if builtins.abs(c) < 0.5 else e - d * s.dtype.type(1 - c)
    return np.array(np.broadcast_to(value, np.broadcast_shapes(s.shape, e.shape)), order="C", subok=True)


def _lerp_tensor_forward(ctx, s, e, w):
    d = e - s
    value = np.where(np.abs(w) < 0.5, s + w * d, e - d * (1 - w))
    return np.array(np.broadcast_to(value, np.broadcast_shapes(s.shape, e.shape, w.shape)), order="C", subok=True)


# == Declarations: each op's derivative rule and its forward on arrays (tapegrad.compile) ==================
def _vjp_lerp(ctx, g, inputs, out):
    return g * (1.0 - ctx), g * ctx          # ctx: the scalar weight


def _vjp_lerp_tensor(ctx, g, inputs, out):
    start, end, weight = inputs
    return g * (1.0 - weight), g * weight, g * (end - start)


def _lerp_arrays(ctx, g, inputs, out, wanted):
    return (g * (1.0 - ctx), g * ctx) if _array_rule_dtype(g) else None


def _lerp_tensor_arrays(ctx, g, inputs, out, wanted):
    start, end, weight = inputs
    if not _array_rule_dtype(g, start, end, weight):
        return None
    return (g * (1.0 - weight) if wanted[0] else None, g * weight if wanted[1] else None,
            g * (end - start) if wanted[2] else None)


def _vjp_clamp_tensor(ctx, g, inputs, out):
    """torch's clamp_backward and clamp_backward_min_max (ctx: which of min, max are given)."""
    x = inputs[0]
    lo = inputs[1] if ctx[0] else None
    hi = inputs[1 + ctx[0]] if ctx[1] else None
    if lo is not None and hi is not None:
        return (where((x >= lo) & (x <= hi), g, 0.0), where((x < lo) & (lo < hi), g, 0.0),
                where((x > hi) | (hi < lo), g, 0.0))
    if lo is not None:
        return where(x >= lo, g, 0.0), where(x < lo, g, 0.0)
    return where(x <= hi, g, 0.0), where(x > hi, g, 0.0)


def _clamp_tensor_arrays(ctx, g, inputs, out, wanted):
    """_vjp_clamp_tensor on arrays."""
    if not _array_rule_dtype(g, *inputs):
        return None
    x = inputs[0]
    lo = inputs[1] if ctx[0] else None
    hi = inputs[1 + ctx[0]] if ctx[1] else None
    if lo is not None and hi is not None:
        return (np.where((x >= lo) & (x <= hi), g, 0.0), np.where((x < lo) & (lo < hi), g, 0.0),
                np.where((x > hi) | (hi < lo), g, 0.0))
    if lo is not None:
        return np.where(x >= lo, g, 0.0), np.where(x < lo, g, 0.0)
    return np.where(x <= hi, g, 0.0), np.where(x > hi, g, 0.0)


def _vjp_linear(ctx, g, inputs, out):
    """out = x @ w.T (+ b): inputs (x, w[, b])."""
    x, w = inputs[0], inputs[1]
    gx = g.mm(w) if x._requires_grad else None
    gw = g.t().mm(x) if w._requires_grad else None
    return (gx, gw, g) if len(inputs) > 2 else (gx, gw)


def _linear_arrays(ctx, g, inputs, out, wanted):
    """_vjp_linear on arrays (a plain backward): two BLAS calls, or for a row the compiled replay differentiates by
    its loops (runtime.linear_by_loops), their very sums; no Tensor front-ends (float32/float64 2-d; otherwise
    None, and the Tensor rule runs)."""
    x, w = inputs[0], inputs[1]
    if x.ndim != 2 or g.ndim != 2 or x.dtype.char not in "fd" or w.dtype != x.dtype or g.dtype != x.dtype:
        return None
    from .. import kernels
    rt = kernels.load()
    has_b = len(inputs) > 2
    n, k, m = x.shape[0], x.shape[1], w.shape[0]
    if (n * k * m and rt.linear_by_loops(n, k, m, bool(rt.BLAS[int(x.dtype == np.float64)]))
            and (not has_b or inputs[2].shape == (m,))):
        # the sums the compiled replay adds for this row (runtime._linear_rule), so that every path gives its bits
        want_b = has_b and wanted[2]
        gx, gw, gb = rt.linear_grads(np.ascontiguousarray(g), np.ascontiguousarray(x), np.ascontiguousarray(w),
                                     wanted[0], wanted[1], want_b)
        return (gx if wanted[0] else None, gw if wanted[1] else None, gb if want_b else None)[:len(inputs)]
    gx = g @ w if wanted[0] else None
    gw = g.T @ x if wanted[1] else None
    return (gx, gw, g) if len(inputs) > 2 else (gx, gw)


# GELU of a float32/float64 tensor of at least this many elements is one compiled pass each way
# (kernels/activation.py), as a Python row; smaller ones stay the elementwise row, which the compiled replay
# runs without returning to Python.
_GELU_ROW_MIN = 512
_GELU_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _gelu_forward(ctx, x):
    from .. import kernels
    return kernels.module("activation").gelu_forward(np.asanyarray(x, order="C"))


def _gelu_arrays(ctx, g, inputs, out, wanted):
    x = inputs[0]
    if g.dtype != x.dtype or g.shape != x.shape:
        return None
    from .. import kernels
    return (kernels.module("activation").gelu_backward(np.ascontiguousarray(g), np.ascontiguousarray(x)),)


def _vjp_gelu(ctx, g, inputs, out):
    """g * (Phi(x) + x phi(x)) in tapegrad ops (create_graph: differentiable again)."""
    x = inputs[0]
    cdf = (elementwise.erf(x * 0.7071067811865476) + 1.0) * 0.5
    pdf = elementwise.exp(x * x * -0.5) * 0.3989422804014327
    return (g * (cdf + x * pdf),)


def _vjp_embedding_padded(ctx, g, inputs, out):
    """Rows looked up at padding_idx get no gradient (ctx: index map, keep mask or scale_grad_by_freq's scales,
    weight shape[, the padding mask])."""
    index_map, keep, shape = ctx[:3]
    grad = scatter_flat(g * keep, index_map, shape)
    if len(ctx) == 3 or not is_grad_enabled():
        return (grad,)
    # scale_grad_by_freq: torch's double backward takes the lookups unscaled (embedding_dense_double_backward);
    # the scaled value, plus a term that is zero in value and carries that derivative
    unscaled = scatter_flat(g * ctx[3], index_map, shape)
    return (grad.detach() + (unscaled - unscaled.detach()),)


def _embedding_padded_arrays(ctx, g, inputs, out, wanted):
    """_vjp_embedding_padded on arrays: scatter_flat's sum in index order (np.add.at), padding rows zeroed."""
    index_map, keep, shape = ctx[:3]
    if not _array_rule_dtype(g):
        return None
    kept = g * keep._data
    grad = np.zeros(math.prod(shape), kept.dtype)
    np.add.at(grad, index_map.reshape(-1), kept.reshape(-1))
    return (grad.reshape(shape),)


_SCALE_SPARSE = "embedding_backward: scale_grad_by_freq not supported with sparse gradients"


def _vjp_embedding_sparse(ctx, g, inputs, out):
    """torch's embedding_sparse_backward: the weight's gradient as a (V, D) COO tensor whose indices are the looked-up
    rows (padding_idx's left out) and whose values are g's rows there, recorded under create_graph (differentiable
    in g). replay.py and create_graph.py keep it sparse for a leaf and add it densely into any other input."""
    ix, padding_idx, shape, scale = ctx
    if scale:
        raise RuntimeError(_SCALE_SPARSE)
    rows = ix.reshape(-1)
    vals = g.reshape(-1, shape[1])
    if padding_idx is not None:
        kept = np.flatnonzero(rows != padding_idx)
        rows, vals = rows[kept], index_select(vals, 0, _new(kept))
    return (sparse_rows(rows, vals, shape),)


def _embedding_sparse_arrays(ctx, g, inputs, out, wanted):
    """_vjp_embedding_sparse on arrays (the values a copy: g is a block of the adjoint buffer)."""
    ix, padding_idx, shape, scale = ctx
    if scale:
        raise RuntimeError(_SCALE_SPARSE)
    if not _array_rule_dtype(g):
        return None
    rows = ix.reshape(-1)
    vals = g.reshape(-1, shape[1])
    if padding_idx is not None:
        kept = np.flatnonzero(rows != padding_idx)
        rows, vals = rows[kept], vals[kept]
    else:
        vals = vals.copy()
    return (sparse_rows(rows, vals, shape),)


registry.python("lerp", "LerpBackward0", _lerp_forward, _vjp_lerp, array_vjp=_lerp_arrays)
registry.python("lerp_tensor", "LerpBackward1", _lerp_tensor_forward, _vjp_lerp_tensor, array_vjp=_lerp_tensor_arrays)
registry.python("clamp_tensor", "ClampBackward0", _clamp_tensor_forward, _vjp_clamp_tensor,
                array_vjp=_clamp_tensor_arrays)
registry.python("clamp_min_tensor", "ClampMinBackward1", _clamp_tensor_forward, _vjp_clamp_tensor,
                array_vjp=_clamp_tensor_arrays)
registry.python("clamp_max_tensor", "ClampMaxBackward1", _clamp_tensor_forward, _vjp_clamp_tensor,
                array_vjp=_clamp_tensor_arrays)
registry.python("addmm", "AddmmBackward0", _linear_forward, _vjp_linear, array_vjp=_linear_arrays,
                compiled_rule="linear")
registry.python("linear", "MmBackward0", _linear_forward, _vjp_linear, array_vjp=_linear_arrays,
                compiled_rule="linear")
registry.python("gelu_compiled", "GeluBackward0", _gelu_forward, _vjp_gelu, array_vjp=_gelu_arrays)
registry.python("embedding_padded", "EmbeddingBackward0", _embedding_forward, _vjp_embedding_padded,
                array_vjp=_embedding_padded_arrays)
registry.python("embedding_sparse", "EmbeddingBackward0", None, _vjp_embedding_sparse,
                array_vjp=_embedding_sparse_arrays, unreplayable=_SPARSE_UNTRACEABLE)


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]


# Tensor's methods for this module's front-ends (grep `Tensor.<name> =`)
Tensor.round = round
Tensor.clamp = clamp
Tensor.clip = clamp
Tensor.lerp = lerp
Tensor.clamp_min = clamp_min
Tensor.clamp_max = clamp_max
