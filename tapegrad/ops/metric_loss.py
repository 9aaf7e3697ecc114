"""The margin and embedding losses (margin_ranking, hinge_embedding, cosine_embedding, triplet_margin,
triplet_margin_with_distance, soft_margin, multi_margin and multilabel_margin) and the
likelihood losses torch keeps beside them (poisson_nll, gaussian_nll, multilabel_soft_margin), as torch's
ATen / functional code computes them, from recorded tapegrad ops (any order of derivative, replayable)."""
import math
import numbers
import warnings

import numpy as np

from .. import _dtype, registry
from ..grad_mode import is_grad_enabled
from ..registry import Ctx
from ..tensor import _new
from .._warnings import user_stacklevel
from ._common import OPS, _array_rule_dtype, _record, _tensor, broadcast_shape
from .layers import _detached_clamp_min, _size, pairwise_distance
from .loss import _kl_div, _reduce, _reduce_np, _reduction, binary_cross_entropy_with_logits, cross_entropy
from .nn import linear
from . import log_sigmoid, minimum, sigmoid, where

__all__ = []  # torch.nn.functional's only (nn/functional.py binds them)


def _legacy(reduction, size_average, reduce):
    return _reduction(reduction, size_average, reduce)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy(reduction, size_average, reduce)
    a, b, t = _tensor(input1), _tensor(input2), _tensor(target)
    if a.ndim != b.ndim or a.ndim != t.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {_size(a.shape)}, input2: {_size(b.shape)}, target: {_size(t.shape)} ")
    return _reduce((-t * (a - b) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy(reduction, size_average, reduce)
    x, t = _tensor(input), _tensor(target)
    output_margin = where(t != 1, (margin - x).clamp_min(0), 0.0)
    output_self = where(t != -1, x, 0.0)
    return _reduce(output_margin + output_self, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy(reduction, size_average, reduce)
    a, b, t = _tensor(input1), _tensor(input2), _tensor(target)
    if t.ndim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if t.ndim == 1 and not (a.ndim == 2 and b.ndim == 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes {list(a.shape)} "
                           f"and {list(b.shape)}.")
    if t.ndim == 0 and not (a.ndim == 1 and b.ndim == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes {list(a.shape)} "
                           f"and {list(b.shape)}.")
    d = t.ndim
    prod_sum = (a * b).sum(d)
    mag_square1 = (a * a).sum(d) + 1e-12
    mag_square2 = (b * b).sum(d) + 1e-12
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    output = where(t == 1, 1 - cos, 0.0) + where(t == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(output, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _legacy(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pos, neg = _tensor(anchor), _tensor(positive), _tensor(negative)
    if not a.ndim == pos.ndim == neg.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a.ndim}D, positive {pos.ndim}D, and negative {neg.ndim}D "
                           f"inputs")
    dist_pos = pairwise_distance(a, pos, p, eps)
    dist_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, pairwise_distance(pos, neg, p, eps))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    reduction = _legacy(reduction, size_average, reduce)
    x, t = _tensor(input), _tensor(target)
    loss = x.exp() - t * x if log_input else x - t * (x + eps).log()
    if full:
        small = t <= 1  # (the term is 0 there; computed at 2 instead, so log(0) neither warns nor makes a NaN)
        ts = t.masked_fill(small, 2.0)
        stirling = ts * ts.log() - ts + 0.5 * (2 * math.pi * ts).log()
        loss = loss + stirling.masked_fill(small, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    x, t = _tensor(input), _tensor(target)
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _new(np.ones_like(x._data))
    else:
        var = _tensor(var)
        if bool((var < 0).any()):
            raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(x.shape):
        if tuple(x.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif x.ndim == var.ndim and sum(v for s, v in zip(x.shape, var.shape) if s != v) == 1:
            pass  # the heteroscedastic case
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = _detached_clamp_min(var, eps)
    loss = 0.5 * (var.log() + (x - t) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction = _legacy(reduction, size_average, reduce)
    x, t = _tensor(input), _tensor(target)
    loss = -(t * log_sigmoid(x) + (1 - t) * log_sigmoid(-x))
    if weight is not None:
        loss = loss * _tensor(weight)
    class_dim = x.ndim - 1
    loss = loss.sum(class_dim) / x.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pos, neg = _tensor(anchor), _tensor(positive), _tensor(negative)
    if not a.ndim == pos.ndim == neg.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a.ndim}D, positive {pos.ndim}D, and negative {neg.ndim}D "
                           f"inputs")
    distance = pairwise_distance if distance_function is None else distance_function
    dist_pos, dist_neg = distance(a, pos), distance(a, neg)
    if swap:
        dist_neg = minimum(dist_neg, distance(pos, neg))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def _long_target(t):
    if t._data.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {_scalar_name(t)}")


def _not_differentiable(fn, arg, t):
    # torch's aten kernel has no derivative for this argument: it refuses it at the call, as torch does
    if t._requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument '{arg}'. This input "
                           f"cannot have requires_grad True.")


def _vector_or_matrix(x):
    if not (x.ndim == 1 and x.shape[0] != 0 or x.ndim == 2 and x.shape[1] != 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"[{', '.join(str(s) for s in x.shape)}]")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """torch.nn.functional.soft_margin_loss: log(1 + exp(-y x)), in the input's dtype as aten's out= kernel; one
    row (SoftMarginLossBackward0), differentiable to any order."""
    reduction = _legacy(reduction, size_average, reduce)
    x, t = _tensor(input), _tensor(target)
    _not_differentiable("soft_margin_loss", "target", t)
    shape = broadcast_shape(x.shape, t.shape)
    if tuple(x.shape) != shape:  # (aten writes the loss into an output of the input's shape)
        raise RuntimeError(f"output with shape [{', '.join(str(s) for s in x.shape)}] doesn't match the broadcast "
                           f"shape [{', '.join(str(s) for s in shape)}]")
    if tuple(t.shape) != shape:
        t = t.expand(shape).contiguous()
    ctx = Ctx(reduction=reduction, n=int(np.prod(shape)))
    return _record(OPS["soft_margin_loss"], _soft_margin_forward(ctx, x._data, t._data), (x, t), aux=ctx)


def _soft_margin_forward(ctx, x, t):
    with np.errstate(over="ignore"):
        loss = np.logaddexp(0, -(x * t)).astype(x.dtype, copy=False)
    return _reduce_np(loss, ctx.reduction)


def _vjp_soft_margin(ctx, g, inputs, out):
    """torch's soft_margin_loss_backward, -y sigmoid(-y x) g (/ n for the mean), as recorded ops."""
    x, t = inputs
    gx = -t * sigmoid(-(x * t)) * g
    if ctx.reduction == "mean":
        gx = gx / ctx.n
    return (gx if gx._data.dtype == x._data.dtype else gx.to(x.dtype)), None


def _soft_margin_arrays(ctx, g, inputs, out, wanted):
    x, t = inputs
    if not _array_rule_dtype(x, g):
        return None
    with np.errstate(over="ignore"):
        gx = -t * (1 / (1 + np.exp(x * t))) * g
    if ctx.reduction == "mean":
        gx = gx / ctx.n
    return gx.astype(x.dtype, copy=False), None


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """torch.nn.functional.multi_margin_loss: sum over j != y of w[y] max(0, margin - x[y] + x[j])^p / C; one row
    (MultiMarginLossBackward0). torch has no derivative of its gradient; tapegrad's gradient is recorded ops, so
    second order works here (0 for p=1, 2 w[y] / C on the active terms for p=2)."""
    reduction = _legacy(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x, t = _tensor(input), _tensor(target)
    if x.ndim:
        _vector_or_matrix(x)
    n, c = (1, x.shape[0]) if x.ndim == 1 else (1, 1) if x.ndim == 0 else x.shape
    if not (t.ndim <= 1 and t.numel() == n):
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got "
                           f"[{', '.join(str(s) for s in t.shape)}]. Input has shape "
                           f"[{', '.join(str(s) for s in x.shape)}].")
    if weight is not None and _tensor(weight).numel() != c:  # (torch checks it before the target's dtype)
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"[{', '.join(str(s) for s in _tensor(weight).shape)}]")
    _long_target(t)
    _check_class_range(t._data, c)
    inputs = (x.reshape(n, c), t.reshape(n))
    if weight is not None:
        w = _tensor(weight)
        _not_differentiable("multi_margin_loss", "weight", w)
        if w._data.dtype != x._data.dtype:
            raise RuntimeError(f"expected scalar type {_scalar_name(x)} but found {_scalar_name(w)}")
        inputs += (w,)
    # (torch: a 1-d input's unreduced loss has its target's shape, [] or [1])
    ctx = Ctx(p=p, margin=float(margin), reduction=reduction, shape=tuple(t.shape) if x.ndim <= 1 else (n,))
    value = _multi_margin_forward(ctx, *[a._data for a in inputs])
    return _record(OPS["multi_margin_loss"], value, inputs, aux=ctx)


def _check_class_range(t, c):
    if t.size and (t.min() < 0 or t.max() >= c):
        raise RuntimeError("target out of range")


def _multi_margin_forward(ctx, x, t, w=None):
    n, c = x.shape
    _check_class_range(t, c)
    rows = np.arange(n)
    z = np.maximum(ctx.margin - x[rows, t][:, None] + x, 0)
    if ctx.p == 2:
        z = z * z
    if w is not None:
        z = z * w[t][:, None]
    z[rows, t] = 0  # (the target's own term, margin^p, is not counted)
    loss = (z.sum(1) / c).astype(x.dtype, copy=False).reshape(ctx.shape)
    return _reduce_np(loss, ctx.reduction)


def _per_sample(ctx, g, n):
    """The output's gradient as an (n, 1) column (none) or a scalar (mean: / n; sum)."""
    if ctx.reduction == "none":
        return g.reshape(n, 1)
    return g / n if ctx.reduction == "mean" else g


def _vjp_multi_margin(ctx, g, inputs, out):
    """d/dx[j] = w[y] (1 or 2 z_j) / C on the active terms (z_j > 0, j != y), and x[y] gets minus their sum."""
    x, t = inputs[0], inputs[1]
    n, c = x.shape
    t2 = t.reshape(n, 1)
    z = ctx.margin - x.gather(1, t2) + x
    at_target = _new(np.arange(c, dtype=np.int64).reshape(1, c)) == t2
    active = where((z > 0) & ~at_target, 1.0, 0.0).to(x.dtype)
    coef = active if ctx.p == 1 else 2 * z * active
    if len(inputs) > 2:
        coef = coef * inputs[2].gather(0, t).reshape(n, 1)
    gx = coef * (_per_sample(ctx, g, n) / c)
    gx = gx - where(at_target, 1.0, 0.0).to(x.dtype) * gx.sum(1, keepdim=True)
    return (gx,) + (None,) * (len(inputs) - 1)


def _multi_margin_arrays(ctx, g, inputs, out, wanted):
    x, t = inputs[0], inputs[1]
    if not _array_rule_dtype(x, g):
        return None
    n, c = x.shape
    rows = np.arange(n)
    z = ctx.margin - x[rows, t][:, None] + x
    coef = np.where(z > 0, 1.0 if ctx.p == 1 else 2 * z, 0.0).astype(x.dtype, copy=False)
    coef[rows, t] = 0
    if len(inputs) > 2:
        coef = coef * inputs[2][t][:, None]
    gs = g.reshape(n, 1) if ctx.reduction == "none" else g / n if ctx.reduction == "mean" else g
    gx = coef * (gs / c)
    gx[rows, t] -= gx.sum(1)
    return (gx.astype(x.dtype, copy=False),) + (None,) * (len(inputs) - 1)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """torch.nn.functional.multilabel_margin_loss: each row's targets are the class indices before the first -1;
    sum over targets j and non-targets k of max(0, 1 - (x[j] - x[k])) / C; one row (MultilabelMarginLossBackward0)."""
    reduction = _legacy(reduction, size_average, reduce)
    x, t = _tensor(input), _tensor(target)
    if x.ndim:
        _vector_or_matrix(x)
    if tuple(t.shape) != tuple(x.shape):
        raise RuntimeError(f"inconsistent target size: [{', '.join(str(s) for s in t.shape)}] for input of size: "
                           f"[{', '.join(str(s) for s in x.shape)}]")
    _long_target(t)
    c = x.shape[-1] if x.ndim else 1
    _check_label_range(t._data, c)
    n = x.numel() // c
    ctx = Ctx(reduction=reduction, shape=() if x.ndim <= 1 else (n,))
    inputs = (x.reshape(n, c), t.reshape(n, c))
    return _record(OPS["multilabel_margin_loss"], _multilabel_forward(ctx, *[a._data for a in inputs]), inputs,
                   aux=ctx)


def _check_label_range(t, c):
    if t.size and (t.min() < -1 or t.max() >= c):
        raise RuntimeError("argument #2 'target' is out of range")


def _label_counts(t, c):
    """counts[i, k]: how often class k is among row i's targets (those before its first -1); torch counts a
    repeated target once per repetition."""
    n = t.shape[0]
    valid = np.cumprod(t >= 0, axis=1).astype(bool)
    counts = np.zeros((n, c + 1))
    np.add.at(counts, (np.repeat(np.arange(n), t.shape[1]), np.where(valid, t, c).reshape(-1)), 1)
    return counts[:, :c]


def _multilabel_pairs(x, t):
    """(z, weight): z[i, j, k] = 1 - x[j] + x[k], and weight the times the pair (target j, non-target k) counts,
    where z > 0."""
    counts = _label_counts(t, x.shape[1])
    z = 1 - x[:, :, None] + x[:, None, :]
    weight = counts[:, :, None] * (counts == 0)[:, None, :] * (z > 0)
    return z, weight


def _multilabel_forward(ctx, x, t):
    _check_label_range(t, x.shape[1])
    z, weight = _multilabel_pairs(x, t)
    loss = ((weight * z).sum((1, 2)) / x.shape[1]).astype(x.dtype, copy=False).reshape(ctx.shape)
    return _reduce_np(loss, ctx.reduction)


def _multilabel_coef(x, t):
    """d loss_i / d x[i, :] (before the output's gradient): -1/C per active pair at its target, +1/C at the other."""
    _, weight = _multilabel_pairs(x, t)
    return ((weight.sum(1) - weight.sum(2)) / x.shape[1]).astype(x.dtype, copy=False)


def _vjp_multilabel(ctx, g, inputs, out):
    """The loss is piecewise linear: its gradient's coefficients are constants (its second derivative is 0)."""
    x, t = inputs
    return _new(_multilabel_coef(x._data, t._data)) * _per_sample(ctx, g, x.shape[0]), None


def _multilabel_arrays(ctx, g, inputs, out, wanted):
    x, t = inputs
    if not _array_rule_dtype(x, g):
        return None
    gs = g.reshape(-1, 1) if ctx.reduction == "none" else g / x.shape[0] if ctx.reduction == "mean" else g
    return (_multilabel_coef(x, t) * gs).astype(x.dtype, copy=False), None


registry.python("soft_margin_loss", "SoftMarginLossBackward0", _soft_margin_forward, _vjp_soft_margin,
                array_vjp=_soft_margin_arrays)
registry.python("multi_margin_loss", "MultiMarginLossBackward0", _multi_margin_forward, _vjp_multi_margin,
                array_vjp=_multi_margin_arrays)
registry.python("multilabel_margin_loss", "MultilabelMarginLossBackward0", _multilabel_forward, _vjp_multilabel,
                array_vjp=_multilabel_arrays)


def _scalar_name(t):
    name = _dtype.from_numpy_dtype(t._data.dtype).name
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(name, name)


# torch's top-level (aten) forms: reduction as aten's enum (0 none, 1 mean, 2 sum); the Python binding's default
# reads as 0, so these return the unreduced loss unless told otherwise, as torch's do.
_ENUM = {0: "none", 1: "mean", 2: "sum"}


def _enum(name, reduction):
    if not isinstance(reduction, numbers.Integral) or isinstance(reduction, bool):
        raise TypeError(f"{name}(): argument 'reduction' must be int, not {type(reduction).__name__}")
    return _ENUM[int(reduction)]


def aten_margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.margin_ranking_loss."""
    return margin_ranking_loss(input1, input2, target, margin, reduction=_enum("margin_ranking_loss", reduction))


def aten_hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """torch.hinge_embedding_loss."""
    return hinge_embedding_loss(input, target, margin, reduction=_enum("hinge_embedding_loss", reduction))


def aten_triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=0):
    """torch.triplet_margin_loss."""
    return triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                               reduction=_enum("triplet_margin_loss", reduction))


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """torch.nn.functional.linear_cross_entropy: cross_entropy(linear(input, linear_weight, linear_bias), target).
    `options` (nn.LinearCrossEntropyOptions) picks torch's chunked path, which never holds the whole logits: here
    the reference path computes the same values and gradients (holding the logits), with torch's warning where
    torch's chunked path would not apply."""
    x, w, t = _tensor(input), _tensor(linear_weight), _tensor(target)
    if x.ndim < 1 or x.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {x.ndim}")
    if w.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {w.ndim}")
    num_batches, in_features = tuple(x.shape[:-1]), x.shape[-1]
    if in_features != w.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), "
                           f"got {x.shape[-1]} and {w.shape[-1]}, respectively")
    num_classes, out_features = w.shape[0], tuple(w.shape[1:-1])
    if linear_bias is not None and tuple(_tensor(linear_bias).shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(_tensor(linear_bias).shape)}")
    if out_features and not num_batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(w.shape)} requires batched "
                           f"input, (N, {in_features}), got unbatched input with shape {tuple(x.shape)}")
    logits_shape = (*num_batches, num_classes, *out_features)
    if tuple(t.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = ignore_index if ignore_index is not None else -100
    if options is not None and (out_features or reduction not in {"mean", "sum", "none"} or label_smoothing != 0.0
                                or t._data.dtype != np.int64):
        bias_shape = tuple(_tensor(linear_bias).shape) if linear_bias is not None else None
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
                      "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, "
                      f"target.dtype={_dtype.from_numpy_dtype(t._data.dtype)}, out_features={out_features}, "
                      f"tracing=False, linear_bias.shape={bias_shape}.", stacklevel=user_stacklevel())
    b = linear_bias
    if out_features:
        w = w.reshape((math.prod(out_features, start=num_classes), in_features))
        b = None if b is None else _tensor(b).reshape(math.prod(out_features, start=num_classes))
    logits = linear(x, w, b).reshape(logits_shape)
    return cross_entropy(logits, t, weight=weight, reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)


def aten_binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """torch.binary_cross_entropy_with_logits (aten's argument order: weight, pos_weight, then the enum)."""
    return binary_cross_entropy_with_logits(input, target, weight, pos_weight=pos_weight,
                                            reduction=_enum("binary_cross_entropy_with_logits", reduction))


def aten_kl_div(input, target, reduction=0, *, log_target=False):
    """torch.kl_div (reduction aten's enum: no "batchmean", and no warning for "mean")."""
    return _kl_div(input, target, _enum("kl_div", reduction), log_target)


def aten_poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """torch.poisson_nll_loss (every argument required, as torch's)."""
    return poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_enum("poisson_nll_loss", reduction))
