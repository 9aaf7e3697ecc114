"""torch.optim.Adafactor: second moments kept as row and column factors for matrices (Shazeer & Stern 2018),
in torch's variant (relative step size, update clipping by d, no first moment)."""
import numpy as np

from .. import _dtype
from ..tensor import _new
from .optimizer import (Optimizer, _add_scaled_, _bump, _check_lr_size, _grads_of, _group_defaults, _lerp_, _scalar,
                        _step_tensor, _steps_to_tensors)

__all__ = ["Adafactor"]


def _norm(x, axis=None, keepdims=False):
    return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        _check_lr_size(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None)
        _steps_to_tensors(self)

    def step(self, closure=None):
        """Factored (matrices) or full (vectors) second-moment estimate; the update g / sqrt(v), clipped to RMS d,
        scaled by max(eps2, RMS(p)) * min(lr, 1/sqrt(step))."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, beta2_decay, d = _scalar(group["lr"]), group["beta2_decay"], group["d"]
            eps1, eps2 = group["eps"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            for p in group["params"]:
                if p._grad is not None and p._data.dtype.kind == "c":
                    raise RuntimeError("Adafactor does not support complex parameters")
            items = _grads_of("Adafactor", group)
            for p, grad in items:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    if grad.ndim > 1:
                        state["row_var"] = _new(np.zeros(grad.shape[:-1] + (1,), grad.dtype))
                        state["col_var"] = _new(np.zeros(grad.shape[:-2] + (1,) + grad.shape[-1:], grad.dtype))
                    else:
                        state["variance"] = _new(np.zeros_like(grad))
            for p, grad in items:
                data = p._data
                state = self.state[p]
                if maximize:
                    grad = -grad
                if eps1 is None:  # as torch: the first parameter's dtype decides for the whole group
                    eps1 = float(_dtype.finfo(_dtype.from_numpy_dtype(data.dtype)).eps)  # (bfloat16's too)
                step_t = state["step"]._data
                step_t += 1
                step_float = float(step_t)
                one_minus_beta2_t = step_float ** beta2_decay
                rho_t = min(lr, 1 / (step_float ** 0.5))
                alpha = max(eps2, float(_norm(data)) / (data.size ** 0.5)) * rho_t
                if weight_decay != 0:
                    data *= 1 - lr * weight_decay
                if grad.ndim > 1:
                    row_var, col_var = state["row_var"]._data, state["col_var"]._data
                    row_mean = _norm(grad, axis=-1, keepdims=True)
                    row_mean = row_mean * row_mean
                    row_mean /= grad.shape[-1]
                    _lerp_(row_var, row_mean, one_minus_beta2_t)
                    col_mean = _norm(grad, axis=-2, keepdims=True)
                    col_mean = col_mean * col_mean
                    col_mean /= grad.shape[-2]
                    _lerp_(col_var, col_mean, one_minus_beta2_t)
                    var_estimate = row_var @ col_var
                    var_estimate /= np.maximum(row_var.mean(axis=-2, keepdims=True), eps1)
                else:
                    variance = state["variance"]._data
                    _lerp_(variance, grad * grad, one_minus_beta2_t)
                    var_estimate = variance.copy()
                np.maximum(var_estimate, eps1 * eps1, out=var_estimate)
                update = np.sqrt(var_estimate)
                np.divide(1, update, out=update)
                update *= grad
                denom = max(1.0, float(_norm(update)) / ((update.size ** 0.5) * d))
                _add_scaled_(data, update, -alpha / denom)
                _bump(p)
        return loss
