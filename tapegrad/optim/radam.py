"""torch.optim.RAdam: Adam with the variance rectification of Liu et al. (2019)."""
import numpy as np

from ..tensor import _new
from .optimizer import (Optimizer, _addcmul_, _bump, _check_capturable, _check_differentiable, _check_hyperparameters,
                        _compiled_batch, _compiled_update, _grads_of, _group_defaults, _lerp_, _scalar, _step_tensor,
                        _steps_to_tensors, _with_weight_decay)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, decoupled_weight_decay=False,
                        capturable=False)
        _steps_to_tensors(self)

    def step(self, closure=None):
        """Adam's moments; the adaptive step, rectified, once the variance estimate is tractable (rho_t > 5)."""
        loss = self._closure(closure)
        for group in self.param_groups:
            _check_differentiable(group)
            beta1, beta2 = (_scalar(b) for b in group["betas"])
            lr, eps = _scalar(group["lr"]), group["eps"]
            weight_decay, decoupled = group["weight_decay"], group["decoupled_weight_decay"]
            maximize = group["maximize"]
            items = _grads_of("RAdam", group)
            for p, _ in items:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _new(np.zeros_like(p._data))
                    state["exp_avg_sq"] = _new(np.zeros_like(p._data))
            if items:
                _check_capturable(group)
            batch = _compiled_batch(group)
            if batch is not None and _compiled_update(self.state, batch, "radam", ("exp_avg", "exp_avg_sq"), ("step",),
                                                      float(lr), float(beta1), float(beta2), float(eps),
                                                      float(weight_decay), bool(maximize), bool(decoupled)):
                continue
            for p, grad in items:
                d = p._data
                state = self.state[p]
                if maximize:
                    grad = -grad
                step_t = state["step"]._data
                step_t += 1
                step = float(step_t)
                if weight_decay != 0:
                    if decoupled:
                        d *= 1 - lr * weight_decay
                    else:
                        grad = _with_weight_decay(grad, d, weight_decay)
                exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
                _lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq *= beta2
                _addcmul_(exp_avg_sq, grad, grad, 1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                update = exp_avg / bias_correction1
                update *= lr
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    adaptive = np.sqrt(exp_avg_sq)
                    adaptive += eps
                    # torch's scalar / tensor is reciprocal() * scalar (a NumPy scalar for a 0-d parameter: no out=)
                    adaptive = np.reciprocal(adaptive)
                    adaptive *= bias_correction2 ** 0.5
                    update *= adaptive
                    update *= ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                d -= update
                _bump(p, 2 if decoupled and weight_decay != 0 else 1)
        return loss
