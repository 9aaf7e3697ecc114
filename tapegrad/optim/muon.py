"""torch.optim.Muon: momentum, then the update orthogonalised by a Newton-Schulz iteration, for 2-D parameters.

torch runs the iteration in bfloat16: every product and every elementwise step is computed in float32 and
rounded to bfloat16. Here the same values are held in float32 arrays and rounded to bfloat16 (round to
nearest even, as c10::BFloat16) after each step, so results agree with torch's to bfloat16 rounding of
float32 sums taken in another order (a few bfloat16 ulps), without a bfloat16 dtype in NumPy.
"""
import math

import numpy as np

from ..tensor import _new
from .optimizer import Optimizer, _check_lr_size, _lerp_, _scalar

__all__ = ["Muon"]

# Keller Jordan's coefficients and torch's defaults (torch/optim/_muon.py)
EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _bfloat16(a):
    """a rounded to bfloat16 (through float32, as torch's .bfloat16() of a double), held in float32."""
    a = np.asarray(a, np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = bits.astype(np.uint32).view(np.float32).reshape(a.shape)
    return np.where(np.isnan(a), np.float32(np.nan), out)


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """torch's quintic Newton-Schulz iteration (the same checks, in its words), in emulated bfloat16."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (np.float32(v) for v in ns_coefficients)
    x = _bfloat16(grad)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _bfloat16(np.sqrt(np.sum(np.square(x, dtype=np.float32), dtype=np.float32)))
    x = _bfloat16(x / _bfloat16(max(norm, np.float32(eps))))  # spectral norm at most 1
    for _ in range(ns_steps):
        gram = _bfloat16(x @ x.T)
        gram_update = _bfloat16(b * gram + c * (gram @ gram))  # addmm(gram, gram, gram, beta=b, alpha=c)
        x = _bfloat16(a * x + gram_update @ x)                 # addmm(x, gram_update, x, beta=a)
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """torch's learning-rate scale for a rectangular matrix: "original" (Keller's) or "match_rms_adamw" (Moonshot's)."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        adjusted_ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        adjusted_ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        adjusted_ratio = 1.0
    return lr * adjusted_ratio


class Muon(Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None):
        _check_lr_size(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                    "ns_coefficients": ns_coefficients, "eps": eps, "ns_steps": ns_steps,
                    "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def step(self, closure=None):
        """buf <- lerp(buf, g, 1 - momentum); O <- NS(lerp(g, buf, momentum) or buf); p <- p (1 - lr wd) - lr' O."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, weight_decay, momentum = _scalar(group["lr"]), group["weight_decay"], group["momentum"]
            items = []
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if p._data.dtype.kind == "c":
                    raise RuntimeError("Muon does not support complex parameters")
                if getattr(g, "is_sparse", False):
                    raise RuntimeError("Muon does not support sparse gradients")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = _new(np.zeros_like(g._data))
                items.append((p, g._data, state["momentum_buffer"]))
            for p, grad, buf in items:
                if grad.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                b = buf._data
                _lerp_(b, grad, 1 - momentum)
                buf._bump_version()
                if group["nesterov"]:
                    update = grad.copy()
                    _lerp_(update, b, momentum)
                else:
                    update = b
                update = _zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"],
                                                     group["eps"])
                adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
                d = p._data
                d *= d.dtype.type(1 - lr * weight_decay)
                # param.add_(update, alpha=-adjusted_lr): the bfloat16 update promoted to the parameter's dtype
                d += d.dtype.type(-adjusted_lr) * update.astype(d.dtype)
                p._bump_version()
        return loss
