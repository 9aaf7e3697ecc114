"""Loss functions (nn.functional's losses), with torch's reductions, arguments and errors.

cross_entropy with class indices is one fused op (log_softmax + nll_loss, grad_fn NllLossBackward0): its
backward is one multiply by the gradient computed in the forward, softmax(x) - onehot, scaled.
"""
import math
import warnings

import numpy as np

from .. import _dtype, kernels, registry
from ..registry import Ctx
from ..tensor import Tensor, _new
from ._common import (OPS, _array_rule_dtype, _min_max, _autocast_float32, _in_float32, _record, _tensor, _to_dtype,
                      autocast_state, broadcast_shape)
from .elementwise import _div_scalar, _mul_scalar, _sigmoid, abs, clamp_min, exp, log, log1p, softplus, where
from .reduce import log_softmax, mean, softmax, sum
from ..tape import guard
from .shape import _reshape
from .._warnings import user_stacklevel

# A pointwise loss row records its reduction as its place here, from 1 (_code), in its iattr: the compiled replay's
# R_NONE, R_MEAN, R_SUM (kernels/runtime.py), with which it runs the row's rule itself.
_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction, size_average=None, reduce=None):
    """torch's legacy size_average / reduce arguments, mapped to a reduction with torch's warning, and its check."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                      f"instead.", stacklevel=user_stacklevel())
    if reduction == "elementwise_mean":  # (torch's name for "mean" before 1.0, still taken with a warning)
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=user_stacklevel())
        return "mean"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _code(reduction):
    return _REDUCTIONS.index(reduction) + 1


def _reduce(loss, reduction):
    return mean(loss) if reduction == "mean" else sum(loss) if reduction == "sum" else loss


def _reduce_np(a, reduction):
    if reduction == "none":
        return a
    with np.errstate(all="ignore"):
        if a.dtype.char not in "fd":  # (float16: NumPy's mean sums in float32)
            return np.asanyarray((a.mean() if a.size else np.nan) if reduction == "mean" else a.sum(), a.dtype)
        total = np.add.reduce(a, axis=None)  # (ndarray.mean's Python wrapper cost 2 us; the same sum and division)
        return np.asanyarray((total / a.size if a.size else np.nan) if reduction == "mean" else total, a.dtype)


_POINTWISE = ("mse", "smooth_l1", "huber")  # kernels/loss.py pointwise_total32's kinds, in its order


def _pointwise_total(name, ctx, x, t, c=0.0):
    """A reduced pointwise loss of one-shape float32 arrays by one compiled pass (kernels/loss.py), its terms rounded
    as NumPy's and summed in float64; None for any other case (NumPy's path)."""
    if ctx.reduction == "none" or not (x.dtype == t.dtype == np.float32 and x.shape == t.shape and x.size
                                       and x.flags.c_contiguous and t.flags.c_contiguous):
        return None
    total = kernels.module("loss").pointwise_total32(_POINTWISE.index(name), x.reshape(-1), t.reshape(-1), c)
    return np.asanyarray(total / x.size if ctx.reduction == "mean" else total, np.float32)


def _pointwise_fast(name, input, target, reduction, c=0.0):
    """mse_loss / smooth_l1_loss's common call, as training loops make it (two Tensors, reduction "mean" or "sum", no
    legacy arguments, no autocast region) when _pointwise_total computes it: the row the general path records (the
    same op, value, constants and Ctx) without its argument handling (_autocast_float32, _reduction, _pair: 1.3 of
    smooth_l1_loss's 2.7 us without grad). None where it does not apply: the general path takes the call."""
    if type(input) is not Tensor or type(target) is not Tensor or autocast_state.dtype is not None or \
            reduction not in ("mean", "sum"):
        return None
    ctx = Ctx(reduction=reduction, n=input._data.size)
    if name == "smooth_l1":
        ctx.beta = c
    total = _pointwise_total(name, ctx, input._data, target._data, c)
    if total is None:
        return None
    return _record(OPS[name + "_loss"], total, (input, target), c, 0.0, _code(reduction), ctx)


def _pair(input, target):
    if isinstance(input, Tensor) and isinstance(target, Tensor):  # (the common case first: one shape, one dtype)
        xd, td = input._data, target._data
        if xd.shape == td.shape and xd.dtype == td.dtype and xd.dtype.kind == "f":
            return input, target, xd.shape
    x, t = _tensor(input), _tensor(target)
    if t._data.shape != x._data.shape:
        warnings.warn(f"Using a target size ({t.shape}) that is different to the input size ({x.shape}). This will "
                      f"likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=user_stacklevel())
    shape = broadcast_shape(x._data.shape, t._data.shape)
    dt = _dtype.result_type(x._data, t._data)
    if not _dtype.is_float(dt):
        dt = np.dtype(np.float32)
    return _to_dtype(x, dt), _to_dtype(t, dt), shape


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if weight is None and size_average is None and reduce is None:
        fast = _pointwise_fast("mse", input, target, reduction)
        if fast is not None:
            return fast
    input, target = _autocast_float32(input, target)  # (torch's CPU autocast: in float32)
    reduction = _reduction(reduction, size_average, reduce)
    x, t, shape = _pair(input, target)
    if weight is not None:
        return _reduce((x - t) * (x - t) * weight, reduction)
    ctx = Ctx(reduction=reduction, n=math.prod(shape))
    return _record(OPS["mse_loss"], _mse_forward(ctx, x._data, t._data), (x, t), iattr=_code(reduction), aux=ctx)


def _mse_forward(ctx, x, t):
    if _dtype.is_reduced_float(x.dtype):  # (float16, bfloat16: in float32, rounded once, as torch's)
        return _in_float32(lambda a, b: _mse_forward(ctx, a, b), x, t)
    total = _pointwise_total("mse", ctx, x, t)
    if total is not None:
        return total
    d = x - t
    return _reduce_np(d * d, ctx.reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    input, target = _autocast_float32(input, target)  # (torch's CPU autocast: in float32)
    reduction = _reduction(reduction, size_average, reduce)
    x, t, _ = _pair(input, target)
    loss = abs(x - t)
    return _reduce(loss * weight if weight is not None else loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    if size_average is None and reduce is None and type(beta) is float and beta > 0.0:
        fast = _pointwise_fast("smooth_l1", input, target, reduction, beta)
        if fast is not None:
            return fast
    input, target = _autocast_float32(input, target)  # (torch's CPU autocast: in float32)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    x, t, shape = _pair(input, target)
    ctx = Ctx(reduction=reduction, n=math.prod(shape), beta=float(beta))
    return _record(OPS["smooth_l1_loss"], _smooth_l1_forward(ctx, x._data, t._data), (x, t), ctx.beta, 0.0,
                   _code(reduction), ctx)


def _smooth_l1_forward(ctx, x, t):
    total = _pointwise_total("smooth_l1", ctx, x, t, ctx.beta)
    if total is not None:
        return total
    d, beta = np.abs(x - t), ctx.beta
    loss = np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta).astype(d.dtype, copy=False)
    return _reduce_np(loss, ctx.reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    input, target = _autocast_float32(input, target)  # (torch's CPU autocast: in float32)
    reduction = _reduction(reduction)
    x, t, shape = _pair(input, target)
    if not delta > 0:  # (NaN too, as torch's TORCH_CHECK(delta > 0))
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if delta > 0:  # delta * smooth_l1 with beta = delta: its rule gives sign(d) at d = +-inf, as torch (not NaN)
        if weight is None:  # one row, as torch's (HuberLossBackward0; declared in layers.py)
            ctx = Ctx(reduction=reduction, n=int(np.prod(shape)), delta=float(delta))
            return _record(OPS["huber_loss"], _huber_forward(ctx, x._data, t._data), (x, t), ctx.delta, 0.0,
                           _code(reduction), ctx)
        return _reduce(smooth_l1_loss(x, t, reduction="none", beta=delta) * float(delta) * weight, reduction)
    d = abs(x - t)
    loss = where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce(loss * weight if weight is not None else loss, reduction)


# -- nll_loss and cross_entropy ------------------------------------------------------------------------------
def _class_targets(x, t, weight, ignore_index):
    """Check (input, class-index target, weight) as torch does; returns the flat pieces the forward needs:
    x as (M, C) (class dim last), targets (M,) (0 where ignored), each sample's weight (M,), the class dim."""
    xl, tl, weight, cdim = _class_layout(x, t, weight)
    C = xl.shape[1]
    valid = tl != ignore_index
    tt = np.where(valid, tl, 0)
    bad = (tt < 0) | (tt >= C)
    if bad.any():
        raise IndexError(f"Target {int(tl[np.argmax(bad)])} is out of bounds.")
    w = (weight._data.astype(x._data.dtype)[tt] if weight is not None else np.ones(len(tt), x._data.dtype)) * valid
    return xl, tt, w.astype(x._data.dtype, copy=False), cdim


def _class_layout(x, t, weight):
    """The shape, dtype and weight checks of _class_targets; returns x as (M, C), the targets (M,) as given,
    the weight (a Tensor or None) and the class dim."""
    if x.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if x.ndim == 1:
        if t.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif x.shape[0] != (t.shape[0] if t.ndim else 1) or t.ndim == 0:
        raise ValueError(f"Expected input batch_size ({x.shape[0]}) to match target batch_size "
                         f"({t.shape[0] if t.ndim else 1}).")
    elif x.ndim == 2 and t.ndim != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif x.ndim == 4 and t.ndim != 3:  # (torch's nll_loss2d: its own checks for a 4-D input)
        raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                           f"{t.ndim}")
    elif x.ndim == 4 and t.shape != x.shape[:1] + x.shape[2:]:
        raise RuntimeError(f"size mismatch (got input: {list(x.shape)} , target: {list(t.shape)}")
    elif x.ndim > 2 and t.shape != x.shape[:1] + x.shape[2:]:
        raise RuntimeError(f"Expected target size {list(x.shape[:1] + x.shape[2:])}, got {list(t.shape)}")
    if t._data.dtype not in (np.int64, np.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_dtype.scalar_type_name(t._data.dtype)}")
    cdim = 0 if x.ndim == 1 else 1
    C = x.shape[cdim]
    if weight is not None:
        weight = _tensor(weight)
        if weight._requires_grad:
            raise RuntimeError("The function 'nll_loss_forward' is not differentiable with respect to argument "
                               "'weight'. This input cannot have requires_grad True.")
        if weight.shape != (C,):
            raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no classes but got "
                               f"weight tensor of shape: {list(weight.shape)}")
    xl = x._data if x.ndim == 2 else np.moveaxis(x._data, cdim, -1).reshape(-1, C)
    tl = t._data.reshape(-1).astype(np.int64, copy=False)
    return xl, tl, weight, cdim


def _per_sample_scale(w, reduction, dtype):
    """The factor of each sample's -log p[target] in the loss: its weight, over the weight sum for mean."""
    if reduction == "mean":
        with np.errstate(all="ignore"):
            return (w / dtype.type(w.sum())).astype(dtype)
    return w


def _to_layout(a, x, cdim):
    """An (M, C) array back in x's layout (class dim at cdim)."""
    if x.ndim == 2:
        return a
    moved = np.moveaxis(x._data, cdim, -1).shape
    return np.asanyarray(np.moveaxis(a.reshape(moved), -1, cdim), order="C")


def _finish(per, w, reduction, t_shape, dtype):
    with np.errstate(all="ignore"):
        if reduction == "mean":
            return np.asanyarray(per.sum() / w.sum(), dtype)
        if reduction == "sum":
            return np.asanyarray(per.sum(), dtype)
    return per.reshape(t_shape).astype(dtype, copy=False)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    input, target = _autocast_float32(input, target)  # (torch's CPU autocast: in float32)
    reduction = _reduction(reduction, size_average, reduce)
    x, t = _tensor(input), _tensor(target)
    if weight is None and reduction != "none" and x._data.ndim == 2 and t._data.ndim == 1:
        out = _nll_unweighted(x, t, reduction, ignore_index)  # (a classifier's loss: the checks and sums it needs)
        if out is not None:
            return out
    xl, tt, w, cdim = _class_targets(x, t, weight, ignore_index)
    rows = np.arange(len(tt))
    per = -w * xl[rows, tt]
    out = _finish(per, w, reduction, t.shape, x._data.dtype)
    scale = _per_sample_scale(w, reduction, x._data.dtype)
    coef = np.zeros(xl.shape, x._data.dtype)
    valid = t._data.reshape(-1) != ignore_index  # (an ignored sample's gradient is 0, also where 0 / 0 made scale NaN)
    coef[rows[valid], tt[valid]] = -scale[valid]
    op = OPS["nll_loss2d" if x.ndim >= 3 else "nll_loss"]
    ctx = Ctx(coef=_to_layout(coef, x, cdim), reduction=reduction, cdim=cdim, ignore_index=ignore_index,
              weight=None if weight is None else _tensor(weight)._data)
    return _view_nd(x, reduction, guard(_record(op, out, (x,), aux=ctx), t, remap=_target_remap(ctx)))


def _nll_unweighted(x, t, reduction, ignore_index):
    """nll_loss of (M, C) log-probabilities and M in-range class targets, none ignored, no weight: what the general
    path computes with unit weights (the same sums, so the same values), without its per-sample arrays. None for
    any other case (bad targets raise there)."""
    xl, tl = x._data, t._data
    M, C = xl.shape
    if tl.dtype != np.int64 or len(tl) != M or M == 0:
        return None
    lo, hi = _min_max(tl)
    if lo < 0 or hi >= C or (lo <= ignore_index <= hi and (tl == ignore_index).any()):
        return None
    rows = np.arange(M)
    dtype = xl.dtype
    per = -xl[rows, tl]
    total = per.sum()
    out = np.asanyarray(total / dtype.type(M) if reduction == "mean" else total, dtype)
    coef = np.zeros(xl.shape, dtype)
    coef[rows, tl] = -(dtype.type(1) / dtype.type(M)) if reduction == "mean" else -1
    ctx = Ctx(coef=coef, reduction=reduction, cdim=1, ignore_index=ignore_index, weight=None)
    return guard(_record(OPS["nll_loss"], out, (x,), aux=ctx), t, remap=_target_remap(ctx))


def _target_remap(ctx):
    """tapegrad.compile: a traced loss reads the class targets a replay binds (its forward: _nll_replay,
    _cross_entropy_replay)."""
    def remap(target):
        ctx.replay_target = target
    return remap


def _nll_replay(ctx, x):
    """A traced nll_loss recomputed on new log-probabilities and targets (ctx.replay_target), as nll_loss computes
    it; its gradient's coefficients (ctx.coef, which the array rule reads) are rewritten in place."""
    cdim, C = ctx.cdim, x.shape[ctx.cdim]
    moved = x if x.ndim == 2 else np.moveaxis(x, cdim, -1)
    xl = moved.reshape(-1, C)
    tl = ctx.replay_target.reshape(-1).astype(np.int64, copy=False)
    valid = tl != ctx.ignore_index
    tt = np.where(valid, tl, 0)
    bad = (tt < 0) | (tt >= C)
    if bad.any():
        raise IndexError(f"Target {int(tl[np.argmax(bad)])} is out of bounds.")
    w = ((ctx.weight.astype(x.dtype)[tt] if ctx.weight is not None else np.ones(len(tt), x.dtype)) * valid
         ).astype(x.dtype, copy=False)
    rows = np.arange(len(tt))
    per = -w * xl[rows, tt]
    out = _finish(per, w, ctx.reduction, ctx.replay_target.shape, x.dtype)
    coef = np.zeros(xl.shape, x.dtype)
    coef[rows[valid], tt[valid]] = -_per_sample_scale(w, ctx.reduction, x.dtype)[valid]
    ctx.coef[...] = coef if x.ndim == 2 else np.moveaxis(coef.reshape(moved.shape), -1, cdim)
    return out


def _view_nd(x, reduction, out):
    """torch computes the loss of an (N, C, d1, ...) input other than 4-D as 4-D, and views it back."""
    if x.ndim >= 3 and x.ndim != 4 and reduction == "none":
        return _reshape(out, out.shape, OPS["view"])
    return out


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    input, target = _autocast_float32(input, target)  # (torch's CPU autocast: in float32)
    reduction = _reduction(reduction, size_average, reduce)
    x, t = _tensor(input), _tensor(target)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if not _dtype.is_float(x._data.dtype):
        raise RuntimeError(f'"log_softmax_lastdim_kernel_impl" not implemented for '
                           f"'{_dtype.from_numpy_dtype(x._data.dtype).name.capitalize()}'")
    if _dtype.is_float(t._data.dtype) and t.shape == x.shape:
        return _cross_entropy_probs(x, t, weight, ignore_index, reduction, label_smoothing)
    if label_smoothing > 0:
        return _cross_entropy_smoothed(x, t, weight, ignore_index, reduction, label_smoothing)
    xl, tl, weight, cdim = _class_layout(x, t, weight)
    ctx = Ctx(reduction=reduction, cdim=cdim, target=t, ignore_index=int(ignore_index),
              weight=np.empty(0) if weight is None else weight._data.astype(np.float64).reshape(-1))
    per, loss, dx = _cross_entropy_rows(ctx, xl, tl, x._data.dtype)
    out = per.reshape(t.shape) if reduction == "none" else loss
    ctx.dx = _to_layout(dx, x, cdim)
    op = OPS["cross_entropy2d" if x.ndim >= 3 else "cross_entropy"]
    return _view_nd(x, reduction, guard(_record(op, out, (x,), aux=ctx), t, remap=_target_remap(ctx)))


_WIDE_LOGITS = 4096  # logits from this many elements: NumPy's three calls cost less than the compiled expf calls


def _cross_entropy_rows(ctx, xl, tl, dt):
    """The compiled pass over (M, C) logits and (M,) targets: per-sample losses, the reduced loss and the
    gradient for g = 1 (sets ctx.tt, ctx.scale for the create_graph rule)."""
    # (the kernel is compiled for float32 and float64)
    work = np.float32 if dt == np.float16 or _dtype.is_bfloat16(dt) else dt
    m = len(tl)
    per, dx, picked, share = np.empty(m, work), np.empty(xl.shape, work), np.empty(m, np.int64), np.empty(m, work)
    xl, tl = np.asanyarray(xl, work, order="C"), np.asanyarray(tl, order="C")
    top = np.empty(0, work)  # (none: the kernel computes the rows' maxima and exponentials itself)
    if xl.size >= _WIDE_LOGITS and xl.shape[1]:  # NumPy's SIMD exp, then the rest compiled
        top = xl.max(axis=1)
        with np.errstate(invalid="ignore"):  # (inf - inf in a row holding inf: NaN, as torch gives, silently)
            np.exp(np.subtract(xl, top[:, None], out=dx), out=dx)
    bad, loss = kernels.module("loss").cross_entropy_rows(
        xl, top, tl, ctx.weight, ctx.ignore_index, ctx.reduction == "mean", per, dx, picked, share)
    if bad >= 0:
        raise IndexError(f"Target {int(tl[bad])} is out of bounds.")
    ctx.tt, ctx.scale = picked, share.astype(dt, copy=False)
    return per.astype(dt, copy=False), np.asanyarray(loss, dt), dx.astype(dt, copy=False)


def _cross_entropy_replay(ctx, x):
    """A traced cross_entropy (class indices, any layout) recomputed on new logits and the targets its remap read
    (ctx.replay_target: tapegrad.compile keeps both shapes as traced; the kernel checks the targets' values)."""
    target = ctx.replay_target
    last = ctx.cdim == x.ndim - 1  # ((N, C) logits, the usual case: no axis to move, 5 us of NumPy's moveaxis)
    moved = x if last else np.moveaxis(x, ctx.cdim, -1)
    per, loss, dx = _cross_entropy_rows(ctx, moved.reshape(-1, x.shape[ctx.cdim]),
                                        target.reshape(-1).astype(np.int64, copy=False), x.dtype)
    ctx.dx = dx.reshape(x.shape) if last else np.asanyarray(np.moveaxis(dx.reshape(moved.shape), -1, ctx.cdim),
                                                            order="C")
    return per.reshape(target.shape) if ctx.reduction == "none" else loss


def _class_view(weight, x, cdim):
    shape = [1] * x.ndim
    shape[cdim] = x.shape[cdim]
    return _tensor(weight).to(x.dtype).reshape(shape)


def _cross_entropy_probs(x, t, weight, ignore_index, reduction, label_smoothing):
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    cdim = 0 if x.ndim == 1 else 1
    C = x.shape[cdim]
    logp = log_softmax(x, cdim)
    if label_smoothing > 0:
        t = t * (1 - label_smoothing) + label_smoothing / C
    prod = logp * t
    if weight is not None:
        prod = prod * _class_view(weight, x, cdim)
    if reduction == "mean":
        return _div_scalar(-prod.sum(), x.numel() / C if x.numel() else float("nan"))
    if reduction == "sum":
        return -prod.sum()
    return -prod.sum(cdim)


def _cross_entropy_smoothed(x, t, weight, ignore_index, reduction, eps):
    xl, tt, w, cdim = _class_targets(x, t, weight, ignore_index)  # checks
    C = x.shape[cdim]
    logp = log_softmax(x, cdim)
    nll = nll_loss(logp, t, weight, ignore_index=ignore_index, reduction=reduction)
    smooth = -(logp * _class_view(weight, x, cdim)).sum(cdim) if weight is not None else -logp.sum(cdim)
    ignored = _new(t._data == ignore_index)
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        denom = w.sum() if weight is not None else (~ignored._data).sum()
        ret = smooth.sum() / _new(np.asanyarray(denom, dtype=x._data.dtype))
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return _mul_scalar(nll, 1 - eps) + _mul_scalar(ret, eps / C)


# -- binary cross entropy ---------------------------------------------------------------------------------
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    input, target = _autocast_float32(input, target)  # (torch's CPU autocast: in float32)
    reduction = _reduction(reduction, size_average, reduce)
    x, t = _tensor(input), _tensor(target)
    if t._data.shape != x._data.shape:
        raise ValueError(f"Using a target size ({t.shape}) that is different to the input size ({x.shape}) is "
                         f"deprecated. Please ensure they have the same size.")
    if t._data.dtype != x._data.dtype:
        raise RuntimeError(f"Found dtype {_dtype.scalar_type_name(t._data.dtype)} but expected {_dtype.scalar_type_name(x._data.dtype)}")
    xd, td = x._data, t._data
    if np.any((xd < 0) | (xd > 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    w = None
    if weight is not None:
        weight = _tensor(weight)
        if weight._requires_grad:
            raise RuntimeError("The function 'binary_cross_entropy' is not differentiable with respect to argument "
                               "'weight'. This input cannot have requires_grad True.")
        try:
            wd = np.broadcast_to(weight._data, x.shape).astype(xd.dtype)
        except ValueError:
            raise RuntimeError(f"Attempting to broadcast a dimension of length {weight.shape[-1]} at -1! Mismatching "
                               f"argument at index 1 had {weight.shape}; but expected shape should be broadcastable "
                               f"to {list(x.shape)}") from None
        w = _new(np.asanyarray(wd, order="C"))
    ctx = Ctx(reduction=reduction, n=max(x.numel(), 1), w=w)
    return _record(OPS["binary_cross_entropy"], _bce_forward(ctx, xd, td), (x, t), aux=ctx)


def _bce_forward(ctx, xd, td):
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = -(td * np.maximum(np.log(xd), -100) + (1 - td) * np.maximum(np.log1p(-xd), -100))
    if ctx.w is not None:
        loss = loss * ctx.w._data
    return _reduce_np(loss.astype(xd.dtype, copy=False), ctx.reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    input, target = _autocast_float32(input, target)  # (torch's CPU autocast: in float32)
    reduction = _reduction(reduction, size_average, reduce)
    z, y = _tensor(input), _tensor(target)
    if z.shape != y.shape:
        raise ValueError(f"Target size ({y.shape}) must be the same as input size ({z.shape})")
    y = _to_dtype(y, z._data.dtype)
    if weight is None and pos_weight is None and reduction == "mean":
        out = _bce_logits_forward(None, z._data, y._data)
        return _record(OPS["bce_with_logits"], out, (z, y))
    extra = []
    for name, v in (("weight", weight), ("pos_weight", pos_weight)):
        if v is not None:
            v = _tensor(v)
            if v._requires_grad:
                raise RuntimeError(f"The function 'binary_cross_entropy_with_logits' is not differentiable with "
                                   f"respect to argument '{name}'. This input cannot have requires_grad True.")
            broadcast_shape(z.shape, v.shape)
            extra.append(_to_dtype(v, z._data.dtype))
    ctx = Ctx(reduction=reduction, has_w=weight is not None, has_pw=pos_weight is not None, n=max(z.numel(), 1))
    out = _bce_logits_full_forward(ctx, z._data, y._data, *[e._data for e in extra])
    return _record(OPS["bce_with_logits_full"], out, (z, y) + tuple(extra), aux=ctx)


def _bce_logits_full_forward(ctx, zd, yd, *extra):
    sp = np.maximum(-zd, 0) + np.log1p(np.exp(-np.abs(zd)))        # softplus(-z) = -log(sigmoid(z))
    if ctx.has_pw:
        loss = (1 - yd) * zd + ((extra[-1] - 1) * yd + 1) * sp
    else:
        loss = (1 - yd) * zd + sp
    if ctx.has_w:
        loss = loss * extra[0]
    loss = np.broadcast_to(loss, zd.shape).astype(zd.dtype)
    return _reduce_np(np.asanyarray(loss, order="C"), ctx.reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    input, target = _autocast_float32(input, target)  # (torch's CPU autocast: in float32)
    if size_average is None and reduce is None and reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=user_stacklevel())
    reduction = _reduction(reduction, size_average, reduce) if reduction != "batchmean" else reduction
    return _kl_div(input, target, reduction, log_target)


def _kl_div(input, target, reduction, log_target):
    """kl_div's loss, reduced ("batchmean" too), without the arguments' checks and warnings (torch.kl_div's too)."""
    x, t = _tensor(input), _tensor(target)
    loss = exp(t) * (t - x) if log_target else where(t > 0, t * log(where(t > 0, t, 1.0)), 0.0) - t * x
    if reduction == "batchmean":
        return sum(loss) / (x.shape[0] if x.ndim else 1)
    return _reduce(loss, reduction)


# == Declarations: each op's derivative rule and its forward on arrays (tapegrad.compile) ==================
def _bce_logits_forward(ctx, z, t):
    return np.asanyarray(np.mean(np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z)))), z.dtype)


def _vjp_bce_logits(ctx, g, inputs, out):
    z, t = inputs
    n = max(z.numel(), 1)
    return (z.sigmoid() - t) * (g / n), -z * (g / n)


def _vjp_nll(ctx, g, inputs, out):
    """nll_loss: d/dinput = -coef * g, where coef holds w[target] / denominator at the target classes."""
    if ctx.reduction == "none":
        g = g.unsqueeze(ctx.cdim)
    return (_new(ctx.coef) * g,)


def _nll_arrays(ctx, g, inputs, out, wanted):
    return (ctx.coef * (np.expand_dims(g, ctx.cdim) if ctx.reduction == "none" else g),)


def _vjp_cross_entropy(ctx, g, inputs, out):
    """log_softmax + nll fused: d/dx = (softmax(x) * rowsum(Q) - Q) * g, Q the target weights / denominator."""
    if ctx.reduction == "none":
        g = g.unsqueeze(ctx.cdim)
    x = inputs[0]
    p = softmax(x, ctx.cdim)
    q, rowq = _target_weights(ctx, x.shape, x._data.dtype)
    return ((p * _new(rowq) - _new(q)) * g,)


def _target_weights(ctx, shape, dtype):
    """Q (each sample's share of the loss at its target class, in x's layout) and its sums along the class
    dim, broadcast back: the create_graph rule's constants, built only when it runs."""
    cdim, tt = ctx.cdim, ctx.tt
    C = shape[cdim]
    q = np.zeros((len(tt), C), dtype)
    q[np.arange(len(tt)), tt] = ctx.scale
    rowq = ctx.scale.reshape(-1, 1) * np.ones((1, C), dtype)
    moved = tuple(s for i, s in enumerate(shape) if i != cdim) + (C,)
    return [np.ascontiguousarray(np.moveaxis(a.reshape(moved), -1, cdim)) for a in (q, rowq)]


def _cross_entropy_arrays(ctx, g, inputs, out, wanted):
    """The gradient for g = 1 was computed with the loss (ctx.dx)."""
    return (ctx.dx * (np.expand_dims(g, ctx.cdim) if ctx.reduction == "none" else g),)


def _vjp_mse(ctx, g, inputs, out):
    x, t = inputs
    d = (x - t) * (2.0 * g)
    if ctx.reduction == "mean":
        d = d / ctx.n
    return d, -d


def _mse_arrays(ctx, g, inputs, out, wanted):
    x, t = inputs
    if not _array_rule_dtype(x):
        return None
    d = (x - t) * (2.0 * g)
    if ctx.reduction == "mean":
        d = d / ctx.n
    return d, (-d if wanted[1] else None)


def _smooth_l1_arrays(ctx, g, inputs, out, wanted):
    x, t = inputs
    if not _array_rule_dtype(x):
        return None
    d = x - t
    gd = np.where(np.abs(d) < ctx.beta, d / ctx.beta, np.sign(d)) * g
    if ctx.reduction == "mean":
        gd = gd / ctx.n
    return gd, (-gd if wanted[1] else None)


def _huber_forward(ctx, x, t):
    total = _pointwise_total("huber", ctx, x, t, ctx.delta)
    if total is not None:
        return total
    d, delta = np.abs(x - t), ctx.delta
    loss = np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)).astype(d.dtype, copy=False)
    return _reduce_np(loss, ctx.reduction)


def _huber_arrays(ctx, g, inputs, out, wanted):
    """torch's huber_loss_backward: the difference inside [-delta, delta], else +-delta (finite at +-inf)."""
    x, t = inputs
    if not _array_rule_dtype(x):
        return None
    gd = np.clip(x - t, -ctx.delta, ctx.delta) * g
    if ctx.reduction == "mean":
        gd = gd / ctx.n
    return gd, (-gd if wanted[1] else None)


def _vjp_huber(ctx, g, inputs, out):
    x, t = inputs
    gd = (x - t).clamp(-ctx.delta, ctx.delta) * g
    if ctx.reduction == "mean":
        gd = gd / ctx.n
    return gd, -gd


def _vjp_smooth_l1(ctx, g, inputs, out):
    x, t = inputs
    d = x - t
    gd = where(d.abs() < ctx.beta, d / ctx.beta, d.sign()) * g
    if ctx.reduction == "mean":
        gd = gd / ctx.n
    return gd, -gd


def _vjp_bce(ctx, g, inputs, out):
    """torch: g * (x - t) / clamp_min((1 - x) * x, 1e-12) * w; the target's: g * -logit(x) * w."""
    x, t = inputs
    if ctx.reduction == "mean":
        g = g / ctx.n
    gx = g * (x - t) / clamp_min((1 - x) * x, 1e-12)
    gt = g * (log1p(-x) - log(x))
    if ctx.w is not None:
        gx, gt = gx * ctx.w, gt * ctx.w
    return gx, gt


def _bce_arrays(ctx, g, inputs, out, wanted):
    x, t = inputs
    if not _array_rule_dtype(x):
        return None
    if ctx.reduction == "mean":
        g = g / ctx.n
    gx = g * (x - t) / np.maximum((1 - x) * x, x.dtype.type(1e-12)) if wanted[0] else None
    with np.errstate(divide="ignore", invalid="ignore"):
        gt = g * (np.log1p(-x) - np.log(x)) if wanted[1] else None
    if ctx.w is not None:
        w = ctx.w._data
        gx, gt = (None if gx is None else gx * w), (None if gt is None else gt * w)
    return gx, gt


def _bce_logits_arrays(ctx, g, inputs, out, wanted):
    z, t = inputs
    if not _array_rule_dtype(z):
        return None
    g = g / max(z.size, 1)
    return (_sigmoid(z) - t) * g if wanted[0] else None, -z * g if wanted[1] else None


def _vjp_bce_logits_full(ctx, g, inputs, out):
    """Inputs (z, t[, weight][, pos_weight]); ctx (reduction, has_weight, has_pos_weight)."""
    z, t = inputs[0], inputs[1]
    w = inputs[2] if ctx.has_w else None
    pw = inputs[2 + ctx.has_w] if ctx.has_pw else None
    if ctx.reduction == "mean":
        g = g / ctx.n
    sp_neg = softplus(-z)                      # -log(sigmoid(z))
    if pw is None:
        gz, gt = (z.sigmoid() - t) * g, -z * g
    else:
        gz = ((pw - 1) * t + 1) * z.sigmoid() - pw * t
        gz, gt = gz * g, (-z + (pw - 1) * sp_neg) * g
    if w is not None:
        gz, gt = gz * w, gt * w
    return (gz, gt) + (None,) * (len(inputs) - 2)


def _bce_logits_full_arrays(ctx, g, inputs, out, wanted):
    """_vjp_bce_logits_full on arrays, operation for operation."""
    if not _array_rule_dtype(*inputs):
        return None
    z, t = inputs[0], inputs[1]
    w = inputs[2] if ctx.has_w else None
    pw = inputs[2 + ctx.has_w] if ctx.has_pw else None
    if ctx.reduction == "mean":
        g = g / ctx.n
    if pw is None:
        gz, gt = (_sigmoid(z) - t) * g, -z * g
    else:
        sp_neg = OPS["softplus"].forward(-z, 1.0, 20.0)   # -log(sigmoid(z)), as softplus(-z)
        gz = ((pw - 1) * t + 1) * _sigmoid(z) - pw * t
        gz, gt = gz * g, (-z + (pw - 1) * sp_neg) * g
    if w is not None:
        gz, gt = gz * w, gt * w
    return [gz, gt] + [None] * (len(inputs) - 2)


registry.python("bce_with_logits", "BinaryCrossEntropyWithLogitsBackward0", _bce_logits_forward, _vjp_bce_logits,
                array_vjp=_bce_logits_arrays)
# (tapegrad.compile: the target a replay binds reaches the forward through the front end's remap, tape.guard)
registry.python("nll_loss", "NllLossBackward0", _nll_replay, _vjp_nll, array_vjp=_nll_arrays)
registry.python("nll_loss2d", "NllLoss2DBackward0", _nll_replay, _vjp_nll, array_vjp=_nll_arrays)
registry.python("cross_entropy", "NllLossBackward0", _cross_entropy_replay, _vjp_cross_entropy,
                array_vjp=_cross_entropy_arrays)
registry.python("cross_entropy2d", "NllLoss2DBackward0", _cross_entropy_replay, _vjp_cross_entropy,
                array_vjp=_cross_entropy_arrays)
registry.python("mse_loss", "MseLossBackward0", _mse_forward, _vjp_mse, array_vjp=_mse_arrays, compiled_rule="mse")
registry.python("smooth_l1_loss", "SmoothL1LossBackward0", _smooth_l1_forward, _vjp_smooth_l1,
                array_vjp=_smooth_l1_arrays, compiled_rule="smooth_l1")
registry.python("binary_cross_entropy", "BinaryCrossEntropyBackward0", _bce_forward, _vjp_bce, array_vjp=_bce_arrays)
registry.python("bce_with_logits_full", "BinaryCrossEntropyWithLogitsBackward0", _bce_logits_full_forward,
                _vjp_bce_logits_full, array_vjp=_bce_logits_full_arrays)


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]
