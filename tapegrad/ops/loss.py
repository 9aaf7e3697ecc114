"""Loss functions (nn.functional's losses live here, next to the ops they compose)."""
import numpy as np

from .. import registry
from ._common import OPS, _record, _tensor, _to_dtype
from .elementwise import softplus
from .reduce import mean, sum


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    z, y = _tensor(input), _tensor(target)
    if z.shape != y.shape:
        raise ValueError(f"Target size ({tuple(y.shape)}) must be the same as input size ({tuple(z.shape)})")
    if weight is None and pos_weight is None and reduction == "mean":
        y = _to_dtype(y, z._data.dtype)
        out = np.asarray(registry._bce_logits_forward(z._data, y._data), dtype=z._data.dtype)
        return _record(OPS["bce_with_logits"], out, (z, y))
    # general form, composed: max(z,0) - z*y*pw' + log1p(exp(-|z|)) scaled by pos_weight
    log_sig = -softplus(-z)
    log_one_minus = -softplus(z)
    pw = 1.0 if pos_weight is None else pos_weight
    loss = -(pw * y * log_sig + (1 - y) * log_one_minus)
    if weight is not None:
        loss = loss * weight
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]
