"""rms_norm, instance_norm, cosine_similarity, pairwise_distance, bilinear, channel_shuffle and embedding_bag
(torch.nn.functional's), and embedding_renorm_ (max_norm). All but embedding_bag are built from recorded
tapegrad ops, so they differentiate to any order (instance_norm is batch_norm over (1, N*C, ...), as torch
computes it); embedding_bag is one row with compiled kernels (tapegrad/kernels/bag.py) whose create_graph rule
is in tapegrad ops. What tapegrad.compile replays of them: docs/compatibility.md."""
import math
import numbers
import warnings

import numpy as np

from .. import _dtype, kernels, registry
from ..tensor import _new, tensor_type_name
from ._common import OPS, _dim, _record, _tensor, _to_dtype, broadcast_shape
from . import scatter_flat
from .shape import _gather, _gather_forward, _vjp_gather
from .loss import _huber_arrays, _huber_forward, _vjp_huber
from .linalg import _vector_norm, _vector_norm_arrays, _vector_norm_forward, _vjp_vector_norm
from .conv import batch_norm
from .sparse import mm as sparse_mm, sparse_coo_tensor, sparse_rows
from ..grad_mode import is_grad_enabled
from ..tape import untraceable
from .._warnings import user_stacklevel

__all__ = []  # torch.nn.functional's only (nn/functional.py binds them; tapegrad/__init__ the torch.X ones)

_TORCH_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _size(shape):
    return "torch.Size([" + ", ".join(str(s) for s in shape) + "])"


def _detached_clamp_min(x, eps):
    """x with its value clamped at eps but its gradient x's: torch clamps a clone in place under no_grad."""
    d = x.detach()
    return x + (d.clamp_min(eps) - d)


# -- normalization ---------------------------------------------------------------------------------------------------
def rms_norm(input, normalized_shape, weight=None, eps=None):
    x = _tensor(input)
    ns = (int(normalized_shape),) if isinstance(normalized_shape, numbers.Integral) else tuple(
        int(s) for s in normalized_shape)
    if not _dtype.is_float(x._data.dtype):
        raise NotImplementedError(f"\"rms_norm\" not implemented for '{_TORCH_NAMES.get(x._data.dtype.name)}'")
    if not ns:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    if weight is not None and tuple(_tensor(weight).shape) != ns:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(_tensor(weight).shape)} and normalized_shape = {list(ns)}")
    k = len(ns)
    if x.ndim < k or tuple(x.shape[x.ndim - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*"  # (torch's words)
                           f"{', '.join(str(s) for s in ns)}], but got input of size{list(x.shape)}")
    dt = x._data.dtype
    eps = float(_dtype.finfo(_dtype.from_numpy_dtype(dt)).eps) if eps is None else float(eps)
    dims = tuple(range(x.ndim - k, x.ndim))
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * _to_dtype(_tensor(weight), dt)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """torch's: batch_norm of the input viewed as (1, N*C, ...), with the statistics, weight and bias repeated
    N times; the running statistics become the mean of their N updated copies."""
    x = _tensor(input)
    if use_input_stats and math.prod(x.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {_size(x.shape)}")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    if x.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(x.ndim, 1)}, "
                         f"{max(x.ndim, 1) - 1}], but got 1)")
    b, c = x.shape[0], x.shape[1]
    stats = [None if t is None else _new(np.tile(_tensor(t)._data, b)) for t in (running_mean, running_var)]
    w = None if weight is None else _tensor(weight).repeat(b)
    bb = None if bias is None else _tensor(bias).repeat(b)
    out = batch_norm(x.reshape((1, b * c) + tuple(x.shape[2:])), stats[0], stats[1], w, bb, use_input_stats,
                     momentum, eps)
    for mine, repeated in zip((running_mean, running_var), stats):
        if mine is not None and use_input_stats:
            t = _tensor(mine)
            t._data[...] = repeated._data.reshape(b, c).mean(0).astype(t._data.dtype)
            t._bump_version()
    return out.reshape(x.shape)


# -- distances -------------------------------------------------------------------------------------------------------
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    a, b = _tensor(x1), _tensor(x2)
    dt = _dtype.result_type(a._data, b._data)
    if not _dtype.is_float(dt):
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{_TORCH_NAMES.get(dt.name, dt.name)}")
    shape = broadcast_shape(a.shape, b.shape)
    a, b = _to_dtype(a, dt).expand(shape), _to_dtype(b, dt).expand(shape)
    d = _dim(dim, len(shape))
    na = _detached_clamp_min(a.norm(2, d, keepdim=True), eps)
    nb = _detached_clamp_min(b.norm(2, d, keepdim=True), eps)
    return ((a / na) * (b / nb)).sum(d)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    a, b = _tensor(x1), _tensor(x2)
    innermost = max(a.ndim, b.ndim) - 1
    return _vector_norm(a - b + eps, p, innermost, keepdim, None, "norm_dim")  # (ATen's norm: NormBackward1)


# -- bilinear, channel shuffle ---------------------------------------------------------------------------------------
def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o]: one matmul of x1 with W, then a product with x2
    summed over j."""
    a, c, w = _tensor(input1), _tensor(input2), _tensor(weight)
    if a.ndim != c.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {a.ndim} and {c.ndim}")
    for i in range(a.ndim - 1):
        if a.shape[i] != c.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got {a.shape[i]} and "
                               f"{c.shape[i]}")
    if w.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, but got {w.ndim} dimensions")
    out_f, in1, in2 = w.shape
    if a.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {a.shape[-1]} but expected {in1}")
    if c.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {c.shape[-1]} but expected {in2}")
    if bias is not None and _tensor(bias).shape[0] != out_f:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {_tensor(bias).shape[0]} but "
                           f"expected {out_f}")
    batch = tuple(a.shape[:-1])
    left = a.reshape(-1, in1).matmul(w.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    y = (left * c.reshape(-1, 1, in2)).sum(2).reshape(batch + (out_f,))
    return y if bias is None else y + _tensor(bias)  # (the bias last: torch's AddBackward0)


def channel_shuffle(input, groups):
    x = _tensor(input)
    if x.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(x.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    C = x.shape[1]
    if C % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {C} channels and {groups} groups.")
    n, rest = x.shape[0], tuple(x.shape[2:])
    split = (n, groups, C // groups) + rest
    order = (0, 2, 1) + tuple(range(3, len(split)))
    index = np.arange(x.numel(), dtype=np.int64).reshape(split).transpose(order).reshape(x.shape)
    value = np.asanyarray(x._data.reshape(split).transpose(order), order="C").reshape(x.shape)
    return _gather(x, index, OPS["channel_shuffle"], value)


# one gather row, under torch's name
registry.structural("channel_shuffle", registry.K_GATHER, "ChannelShuffleBackward0", _vjp_gather,
                    forward=_gather_forward)


native_channel_shuffle = channel_shuffle


# -- embedding_bag ---------------------------------------------------------------------------------------------------
def embedding_renorm_(input, indices, max_norm, norm_type):
    """torch.embedding_renorm_: every row of the weight that indices name whose norm_type-norm exceeds max_norm
    is scaled in place by max_norm / (norm + 1e-7), unrecorded (torch's max_norm in embedding and embedding_bag).
    The weight's version moves on as torch's does, changed rows or not."""
    w, idx = _tensor(input), _tensor(indices)
    if idx._data.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"Expected tensor for argument #2 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {tensor_type_name(idx._data)} instead (while checking arguments for "
                           f"embedding_renorm_)")
    if w.ndim != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {w.ndim}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for embedding_renorm_)")
    V = w.shape[0]
    rows = np.unique(idx._data.astype(np.int64).reshape(-1))
    if rows.size and (rows[0] < -V or rows[-1] >= V):
        bad = rows[0] if rows[0] < -V else rows[rows >= V][0]  # (the first one torch's ascending loop meets)
        raise IndexError(f"select(): index {bad} out of range for tensor of size {list(w.shape)} at dimension 0")
    rows = np.unique(rows % V) if V else rows
    sub = w._data[rows]
    p = float(norm_type)
    if p == 0:
        norms = (sub != 0).sum(1).astype(sub.dtype)
    else:
        norms = np.linalg.norm(sub, ord=p, axis=1) if sub.size else np.zeros(0, sub.dtype)
    big = norms > max_norm
    if big.any():
        scale = (max_norm / (norms[big].astype(np.float64) + 1e-7)).astype(sub.dtype)
        w._data[rows[big]] = sub[big] * scale[:, None]
    w._bump_version()
    return w


_INDEX_CHECK = ("Expected i < index_size to be true, but got false.  (Could this error message be improved?  If so, "
                "please report an enhancement request to PyTorch.)")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    x, w = _tensor(input), _tensor(weight)
    if w._data.dtype == np.int64 and _dtype.is_float(x._data.dtype):
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=user_stacklevel())
        x, w = w, x
    psw = None if per_sample_weights is None else _tensor(per_sample_weights)
    if psw is not None and tuple(x.shape) != tuple(psw.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({_size(psw.shape)}) is not None, then it must have "
                         f"the same shape as the input ({_size(x.shape)})")
    if w.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {w.ndim}")
    if x.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        starts = np.arange(0, x.numel(), max(x.shape[1], 1), dtype=np.int64) if x.shape[1] else np.zeros(
            x.shape[0], np.int64)
        include_last_offset = False
        x = x.reshape(-1)
        psw = None if psw is None else psw.reshape(-1)
    elif x.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if _tensor(offsets).ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = None
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {x.ndim}")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        embedding_renorm_(w, x, max_norm, norm_type)
    if psw is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    for t in (x, None if starts is not None else _tensor(offsets)):  # (torch names both 'indices')
        if t is not None and t._data.dtype not in (np.int64, np.int32):
            raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                               f"Long, Int; but got {tensor_type_name(t._data)} instead (while checking arguments "
                               f"for embedding_bag)")
    if psw is not None and psw._data.dtype != w._data.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
                           f"'per_sample_weights'; but type {tensor_type_name(w._data)} does not equal "
                           f"{tensor_type_name(psw._data)} (while checking arguments for embedding_bag)")
    V, D = w.shape
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{V} through {V - 1}, but got "
                               f"{padding_idx}")
        padding_idx %= V
    ix = x._data.astype(np.int64)
    n = ix.shape[0]
    if starts is None:
        starts = _tensor(offsets)._data.astype(np.int64)
        if starts.size and starts[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                               f"position 0. However, got {starts[0]}\n[ torch.LongTensor{{}} ]")
        if starts.size and starts[-1] > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                               f"{starts[-1]}")
    if np.any(np.diff(np.append(starts, n)) < 0) or (n and (ix.min() < 0 or ix.max() >= V)):
        raise RuntimeError(_INDEX_CHECK)
    # bag b holds entries starts[b]:ends[b]; with include_last_offset the offsets are CSR's (B + 1 of them), so
    # entries past the last offset are in no bag (torch's sum mode; its max and mean differ there, and torch's
    # documentation asks for the last offset to be the input's length)
    starts, ends = (starts[:-1], starts[1:]) if include_last_offset else (starts, np.append(starts[1:], n))
    B = starts.shape[0]
    bag = np.repeat(np.arange(B, dtype=np.int64), ends - starts)
    # scale_grad_by_freq: each entry's gradient divided by its index's count among all the indices, as torch's
    freq = np.bincount(ix, minlength=V) if scale_grad_by_freq else None
    ix = ix[:bag.size]
    keep = np.ones(ix.size, bool) if padding_idx is None else ix != padding_idx
    kept, bag = ix[keep], bag[keep]
    sparse = bool(sparse) and w._requires_grad and is_grad_enabled()
    if sparse:  # the weight's gradient: a sparse COO tensor (the rules below), which a compiled function cannot give
        untraceable(_SPARSE_UNTRACEABLE)
    return _embedding_bag_row(w, psw, keep, kept, bag, B, mode, None if freq is None else 1.0 / freq[kept], sparse)


_SPARSE_UNTRACEABLE = ("embedding_bag with sparse=True (its weight's gradient is a sparse COO tensor, which a "
                       "compiled function's backward, dense arrays, cannot hand out)")
_SCALE_SPARSE = "embedding_backward: scale_grad_by_freq not supported with sparse gradients"


# embedding_bag: one row with compiled forward and adjoints (a composition of gather and sparse matmul was ~10x
# slower than torch at 100k entries); its create_graph rule, in tapegrad ops, is that composition.
class _Bags:
    def __init__(self, mode, index, bag, B, V, inv_freq=None, sparse=False):
        self.mode, self.index, self.bag, self.B, self.V = mode, index, bag, B, V
        self.sparse = sparse  # (sparse=True: the weight's gradient is torch's _embedding_bag_sparse_backward's)
        self.counts = np.bincount(bag, minlength=B)
        self.argmax = None
        self.inv_freq = inv_freq  # (scale_grad_by_freq: 1 / each entry's index count)

    def scale(self, dtype, weights=None):
        """Each entry's factor in the weight's gradient: its per-sample weight (the array, or the Tensor of
        create_graph) or the mean's 1/count, over its index's count with scale_grad_by_freq."""
        if weights is None:
            s = (1.0 / np.maximum(self.counts, 1))[self.bag] if self.mode == "mean" else np.ones(self.bag.size)
            return (s if self.inv_freq is None else s * self.inv_freq).astype(dtype)
        if self.inv_freq is None:
            return weights
        return weights * (self.inv_freq.astype(dtype) if isinstance(weights, np.ndarray) else _new(
            self.inv_freq.astype(dtype)))


def _embedding_bag_row(w, psw, keep, kept, bag, B, mode, inv_freq=None, sparse=False):
    kern = _bag_kernels()
    V, D = w.shape
    dt = w._data.dtype
    ctx = _Bags(mode, kept, bag, B, V, inv_freq, sparse)
    if dt not in (np.float32, np.float64):  # (float16, bfloat16: in float32 through recorded casts, rounded once)
        f32 = np.dtype(np.float32)
        wide = _embedding_bag_row(_to_dtype(w, f32), None if psw is None else _to_dtype(psw, f32), keep, kept, bag,
                                  B, mode, inv_freq)
        return _to_dtype(wide, dt)
    wd = np.asanyarray(w._data, order="C")
    out = np.zeros((B, D), dt)
    if mode == "max":
        ctx.argmax = np.empty((B, D), np.int64)
        starts = np.concatenate(([0], np.cumsum(ctx.counts))).astype(np.int64)
        kern.bag_max(wd, kept, starts, out, ctx.argmax)
        return _record(OPS["embedding_bag"], out, (w,), aux=ctx)
    if psw is not None and (keep.size != psw.shape[0] or not keep.all()):
        psw = psw.index_select(0, _new(np.flatnonzero(keep)))
    scale = np.ones(bag.size, dt) if psw is None else np.asanyarray(psw._data, order="C")
    kern.bag_sum(wd, kept, bag, scale, out)
    if mode == "mean":
        out /= np.maximum(ctx.counts, 1).astype(dt)[:, None]
    if psw is None:
        return _record(OPS["embedding_bag"], out, (w,), aux=ctx)
    return _record(OPS["embedding_bag_weighted"], out, (w, psw), aux=ctx)


def _bag_weight_arrays(ctx, g, weights):
    """The weight's gradient on arrays (weights: the per-sample weights, or None)."""
    if ctx.sparse:
        return _bag_sparse(ctx, g, weights)
    kern = _bag_kernels()
    gw = np.zeros((ctx.V, g.shape[1]), g.dtype)
    if ctx.mode == "max":
        kern.bag_max_adjoint(g, ctx.argmax, gw)
    else:
        kern.bag_sum_adjoint(g, ctx.index, ctx.bag, np.ascontiguousarray(ctx.scale(g.dtype, weights)), gw)
    return gw


def _bag_arrays_unweighted(ctx, g, inputs, out, wanted):
    if g.dtype not in (np.float32, np.float64):
        return None
    return (_bag_weight_arrays(ctx, np.ascontiguousarray(g), None) if wanted[0] else None,)


def _bag_arrays(ctx, g, inputs, out, wanted):
    """With per-sample weights: the weight's gradient, and each weight's, its entry's row dotted with its bag's g."""
    if g.dtype not in (np.float32, np.float64):
        return None
    g = np.ascontiguousarray(g)
    w, psw = inputs
    gw = _bag_weight_arrays(ctx, g, np.asanyarray(psw, g.dtype)) if wanted[0] else None
    gs = None
    if wanted[1]:
        gs = np.empty(ctx.bag.size, g.dtype)
        _bag_kernels().bag_scale_adjoint(g, np.ascontiguousarray(w, g.dtype), ctx.index, ctx.bag, gs)
    return gw, gs


def _bag_sparse(ctx, g, weights):
    """sparse=True: torch's _embedding_bag_sparse_backward, a (V, D) hybrid COO tensor whose indices are the bags'
    entries in input order (padding_idx's left out) and whose values are their bags' rows of g (a copy: g may be a
    block of the adjoint buffer; a Tensor under create_graph), times the mean's 1 / count (the reciprocal taken in
    g's dtype, as torch's) or the per-sample weight; torch's embedding_sparse_backward then (uncoalesced, coalesced
    when nnz <= 1; scale_grad_by_freq is its RuntimeError)."""
    if ctx.inv_freq is not None:
        raise RuntimeError(_SCALE_SPARSE)
    arrays = isinstance(g, np.ndarray)
    dt = g.dtype if arrays else g._data.dtype
    vals = g[ctx.bag] if arrays else g.index_select(0, _new(ctx.bag))
    if ctx.mode == "mean":
        inv = (dt.type(1) / np.maximum(ctx.counts, 1).astype(dt))[ctx.bag][:, None]
        vals = vals * (inv if arrays else _new(inv))
    elif weights is not None:
        vals = vals * (np.asanyarray(weights, dt)[:, None] if arrays else weights.reshape(-1, 1))
    return sparse_rows(ctx.index, vals, (ctx.V, g.shape[1]))


def _bag_weight_graph(ctx, g, weights):
    """In tapegrad ops: the weight's gradient, a sparse (num_embeddings x bags) matrix times g (max: g to each
    maximum's row)."""
    if ctx.sparse:
        return _bag_sparse(ctx, g, weights)
    V, D = ctx.V, g.shape[1]
    if ctx.mode == "max":
        flat = np.where(ctx.argmax >= 0, ctx.argmax * D + np.arange(D), V * D)  # (an empty bag: a spare slot)
        return scatter_flat(g, flat, (V * D + 1,))[:V * D].reshape(V, D)
    values = _new(ctx.scale(g._data.dtype)) if weights is None else ctx.scale(g._data.dtype, weights)
    return sparse_mm(sparse_coo_tensor(np.stack([ctx.index, ctx.bag]), values, (V, ctx.B)), g)


def _vjp_bag_unweighted(ctx, g, inputs, out):
    return (_bag_weight_graph(ctx, g, None),)


def _vjp_bag(ctx, g, inputs, out):
    w, psw = inputs
    return _bag_weight_graph(ctx, g, psw), (g.index_select(0, _new(ctx.bag)) * w.index_select(0, _new(ctx.index))).sum(1)


# Without per-sample weights the backward reads no input (the weight's gradient comes from the bags alone, as
# torch's), so a weight changed in place after the forward (max_norm's renorm in a later call) is no error;
# with them, the weights' gradient reads the weight's rows. (Two ops, so that each one's saves say so.)
_BAGS_FROM_VALUES = "its bags are computed from the values of its indices and offsets"
registry.python("embedding_bag", "EmbeddingBagBackward0", None, _vjp_bag_unweighted,
                array_vjp=_bag_arrays_unweighted, unreplayable=_BAGS_FROM_VALUES)
registry.python("embedding_bag_weighted", "EmbeddingBagBackward0", None, _vjp_bag, array_vjp=_bag_arrays,
                unreplayable=_BAGS_FROM_VALUES)
# huber_loss (its front end in loss.py): declared here, after the elementwise ops, whose codes the kernels' file fixes
registry.python("huber_loss", "HuberLossBackward0", _huber_forward, _vjp_huber, array_vjp=_huber_arrays,
                compiled_rule="huber")
# pairwise_distance's norm: vector_norm's row under ATen norm's grad_fn (NormBackward1), as torch's
registry.python("norm_dim", "NormBackward1", _vector_norm_forward, _vjp_vector_norm, array_vjp=_vector_norm_arrays)


def _bag_kernels():
    return kernels.module("bag")
