"""The margin and embedding losses (margin_ranking, hinge_embedding, cosine_embedding, triplet_margin and
triplet_margin_with_distance) and the
likelihood losses torch keeps beside them (poisson_nll, gaussian_nll, multilabel_soft_margin), as torch's
ATen / functional code computes them, from recorded tapegrad ops (any order of derivative, replayable)."""
import math
import warnings

import numpy as np

from ..tensor import _new
from ._common import _tensor
from .layers import _detached_clamp_min, _size, pairwise_distance
from .loss import _reduce, _reduction
from . import log_sigmoid, minimum, where

__all__ = []  # torch.nn.functional's only (nn/functional.py binds them)


def _legacy(reduction, size_average, reduce):
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='mean' instead.",
                      stacklevel=3)
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
