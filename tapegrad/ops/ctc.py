"""F.ctc_loss (torch.nn.CTCLoss): the connectionist temporal classification loss as torch's CPU kernel computes
it. One row (CtcLossBackward0) gives each sequence's negative log likelihood: the forward (alpha) recursion over
the targets with blanks between and around them, in log space, all sequences at once; its backward runs the
beta recursion and gives torch's gradient, exp(log_probs) - exp(log(sum of alpha * beta over the positions of
each class) + nll - log_probs). zero_infinity and the reduction are recorded ops after it, as torch's
ctc_loss_impl: where(loss == inf, 0, loss), then (loss / target_lengths.clamp_min(1)).mean() or sum().
torch has no second derivative here; neither has tapegrad (its create_graph rule raises torch's error)."""
import numbers

import numpy as np

from .. import registry
from ..tensor import Tensor, _new
from ._common import OPS, _record, _tensor
from .elementwise import where
from .loss import _reduction
from .reduce import mean, sum

__all__ = []  # torch.nn.functional's only (nn/functional.py binds it)


def _lengths(v, name, batch):
    a = np.asanyarray(v._data if isinstance(v, Tensor) else v, dtype=np.int64).reshape(-1)
    if a.size != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return a


def _logaddexp(*terms):
    out = terms[0]
    for t in terms[1:]:
        out = np.logaddexp(out, t)
    return out


def _extended(targets, target_lengths, flat, blank, S):
    """(N, 2 S + 1): each sequence's targets with a blank before, between and after them (blank past its end)."""
    N = target_lengths.size
    ext = np.full((N, 2 * S + 1), blank, np.int64)
    starts = np.concatenate(([0], np.cumsum(target_lengths)[:-1]))
    for n in range(N):
        labels = targets[starts[n]:starts[n] + target_lengths[n]] if flat else targets[n, :target_lengths[n]]
        ext[n, 1:2 * target_lengths[n]:2] = labels
    return ext


def _alpha(lp, ext, input_lengths, target_lengths):
    """log alpha (T, N, 2 S + 1) and each sequence's nll (N,). lp: (T, N, C) float64."""
    T, N, _ = lp.shape
    L = ext.shape[1]
    emit = np.take_along_axis(lp, np.broadcast_to(ext[None], (T, N, L)), 2)  # (T, N, L)
    skip = np.zeros((N, L), bool)
    skip[:, 2:] = (ext[:, 2:] != ext[:, :-2]) & (np.arange(2, L) % 2 == 1)
    valid = np.arange(L)[None, :] < (2 * target_lengths + 1)[:, None]
    alpha = np.full((T, N, L), -np.inf)
    if T:
        alpha[0, :, 0] = emit[0, :, 0]
        has_label = target_lengths > 0
        alpha[0, has_label, 1] = emit[0, has_label, 1]
    for t in range(1, T):
        prev = alpha[t - 1]
        one = np.concatenate([np.full((N, 1), -np.inf), prev[:, :-1]], 1)
        two = np.where(skip, np.concatenate([np.full((N, 2), -np.inf), prev[:, :-2]], 1), -np.inf)
        alpha[t] = np.where(valid, _logaddexp(prev, one, two) + emit[t], -np.inf)
    n = np.arange(N)
    last = np.maximum(input_lengths - 1, 0)
    end = 2 * target_lengths
    a_end = alpha[last, n, end]
    a_before = np.where(target_lengths > 0, alpha[last, n, np.maximum(end - 1, 0)], -np.inf)
    nll = -np.logaddexp(a_end, a_before)
    nll = np.where(input_lengths > 0, nll, np.where(target_lengths > 0, np.inf, -0.0))
    return alpha, emit, skip, valid, nll


def _beta(emit, ext, skip, valid, input_lengths, target_lengths):
    T, N, L = emit.shape
    beta = np.full((T, N, L), -np.inf)
    n = np.arange(N)
    for t in range(T - 1, -1, -1):
        starts = input_lengths - 1 == t  # each sequence's beta starts at its own last step
        if t < T - 1:
            nxt = beta[t + 1]
            one = np.concatenate([nxt[:, 1:], np.full((N, 1), -np.inf)], 1)
            two = np.concatenate([nxt[:, 2:], np.full((N, 2), -np.inf)], 1)
            two = np.where(np.concatenate([skip[:, 2:], np.zeros((N, 2), bool)], 1), two, -np.inf)
            beta[t] = np.where(valid, _logaddexp(nxt, one, two) + emit[t], -np.inf)
        if starts.any():
            end = 2 * target_lengths[starts]
            rows = n[starts]
            beta[t, rows] = -np.inf
            beta[t, rows, end] = emit[t, rows, end]
            labelled = target_lengths[starts] > 0
            beta[t, rows[labelled], end[labelled] - 1] = emit[t, rows[labelled], end[labelled] - 1]
        beta[t, t >= input_lengths] = -np.inf
    return beta


def _ctc_forward(ctx, log_probs):
    lp = np.asanyarray(log_probs, np.float64).reshape(ctx.shape3)
    ctx.alpha, ctx.emit, ctx.skip, ctx.valid, nll = _alpha(lp, ctx.ext, ctx.input_lengths, ctx.target_lengths)
    ctx.nll = nll
    out = nll.astype(log_probs.dtype)
    return out if ctx.batched else out.reshape(())


def _ctc_arrays(ctx, g, inputs, out, wanted):
    lp = np.asanyarray(inputs[0], np.float64).reshape(ctx.shape3)
    T, N, C = lp.shape
    beta = _beta(ctx.emit, ctx.ext, ctx.skip, ctx.valid, ctx.input_lengths, ctx.target_lengths)
    ab = ctx.alpha + beta  # (T, N, L)
    # log of the sum over each class's positions: logsumexp into C bins
    lcab = np.full((T, N, C), -np.inf)
    for s in range(ab.shape[2]):
        cls = ctx.ext[:, s]
        cur = lcab[:, np.arange(N), cls]
        lcab[:, np.arange(N), cls] = np.logaddexp(cur, ab[:, :, s])
    nll = ctx.nll
    with np.errstate(over="ignore", invalid="ignore"):
        grad = np.exp(lp) - np.exp(lcab + nll[None, :, None] - lp)
    grad[np.arange(T)[:, None] >= ctx.input_lengths[None, :]] = 0
    if ctx.zero_infinity:
        grad[:, np.isinf(nll)] = 0
    gout = np.asanyarray(g, np.float64).reshape(N)
    grad = grad * gout[None, :, None]
    return (grad.reshape(inputs[0].shape).astype(inputs[0].dtype),)


_NO_SECOND = "derivative for aten::_ctc_loss_backward is not implemented"


def _vjp_ctc(ctx, g, inputs, out):
    """Under create_graph: the gradient's values, on a row that raises torch's error when differentiated."""
    grad, = _ctc_arrays(ctx, g._data, [inputs[0]._data], None, (True,))
    return (_record(OPS["ctc_loss_backward"], grad, (inputs[0], g), aux=None),)


def _vjp_ctc_backward(ctx, g, inputs, out):
    raise RuntimeError(_NO_SECOND)


registry.python("ctc_loss", "CtcLossBackward0", None, _vjp_ctc, array_vjp=_ctc_arrays,
                unreplayable="its recursion's lengths and targets are read from values")
registry.python("ctc_loss_backward", "NotImplemented", None, _vjp_ctc_backward,
                doc="ctc_loss's gradient under create_graph: torch has no derivative of it, so it raises",
                unreplayable="it stands for a gradient that must not be differentiated")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    reduction = _reduction(reduction)
    lp, tg = _tensor(log_probs), _tensor(targets)
    batched = lp.ndim == 3
    if lp.ndim not in (2, 3):  # (torch treats it as unbatched, a batch dim inserted, then checks)
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lp.ndim + 1}-dimensional tensor for argument #1 "
                           f"'log_probs' (while checking arguments for ctc_loss_allocate_outputs)")
    T, N, C = (lp.shape if batched else (lp.shape[0], 1, lp.shape[1]))
    il = _lengths(input_lengths, "input_lengths", N)
    tl = _lengths(target_lengths, "target_lengths", N)
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if lp._data.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"tapegrad: ctc_loss of {lp.dtype} log_probs is not supported")
    t = np.asanyarray(tg._data).astype(np.int64)
    flat = batched and tg.ndim == 1  # (the targets concatenated; else padded, one row per sequence)
    if not batched:
        t = t.reshape(1, -1)
    if flat:
        if t.shape[0] != tl.sum():
            raise RuntimeError(f"Expected tensor to have size {tl.sum()} at dimension 0, but got size {t.shape[0]} "
                               f"for argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)")
    else:
        if tl.size and t.shape[1] < tl.max():
            raise RuntimeError(f"Expected tensor to have size at least {tl.max()} at dimension 1, but got size "
                               f"{t.shape[1]} for argument #2 'targets' (while checking arguments for "
                               f"ctc_loss_allocate_outputs)")
    for i in range(N):
        if il[i] > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {il[i]} (while "
                               f"checking arguments for ctc_loss_allocate_outputs)")
    S = int(tl.max()) if tl.size else 0
    ctx = registry.Ctx(shape3=(T, N, C), batched=batched, input_lengths=il, target_lengths=tl,
                       ext=_extended(t, tl, flat, blank, S), zero_infinity=zero_infinity)
    loss = _record(OPS["ctc_loss"], _ctc_forward(ctx, lp._data), (lp,), aux=ctx)
    if zero_infinity:
        loss = where(loss == float("inf"), _new(np.zeros((), lp._data.dtype)), loss)
    if reduction == "mean":
        return mean(loss / _new(np.maximum(tl, 1).astype(lp._data.dtype).reshape(loss.shape)))
    return sum(loss) if reduction == "sum" else loss


def aten_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False):
    """torch.ctc_loss: reduction as aten's enum (0 none, 1 mean, 2 sum; the Python binding's default reads as 0)."""
    if not isinstance(reduction, numbers.Integral) or isinstance(reduction, bool):
        raise TypeError(f"ctc_loss(): argument 'reduction' must be int, not {type(reduction).__name__}")
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, ("none", "mean", "sum")[int(reduction)],
                    zero_infinity)
