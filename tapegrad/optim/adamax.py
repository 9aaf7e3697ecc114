"""torch.optim.Adamax: Adam with the infinity norm of past gradients in place of the second moment."""
import numpy as np

from ..tensor import _new
from .optimizer import (Optimizer, _addcdiv_, _bump, _check_capturable, _check_differentiable, _check_hyperparameters,
                        _compiled_batch, _compiled_update, _grads_of, _group_defaults, _lerp_, _scalar, _step_tensor,
                        _steps_to_tensors, _with_weight_decay)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, capturable=False)
        _steps_to_tensors(self)

    def step(self, closure=None):
        """exp_avg <- lerp(exp_avg, g, 1-beta1); exp_inf <- max(beta2 exp_inf, |g| + eps); p -= clr m / u."""
        loss = self._closure(closure)
        for group in self.param_groups:
            _check_differentiable(group)
            beta1, beta2 = (_scalar(b) for b in group["betas"])
            lr, eps = _scalar(group["lr"]), group["eps"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            items = _grads_of("Adamax", group)
            for p, _ in items:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _new(np.zeros_like(p._data))
                    state["exp_inf"] = _new(np.zeros_like(p._data))
            if items:
                _check_capturable(group)
            batch = _compiled_batch(group)
            if batch is not None and _compiled_update(self.state, batch, "adamax", ("exp_avg", "exp_inf"), ("step",),
                                                      float(lr), float(beta1), float(beta2), float(eps),
                                                      float(weight_decay), bool(maximize)):
                continue
            for p, grad in items:
                d = p._data
                state = self.state[p]
                if maximize:
                    grad = -grad
                step_t = state["step"]._data
                step_t += 1
                if weight_decay != 0:
                    grad = _with_weight_decay(grad, d, weight_decay)
                exp_avg, exp_inf = state["exp_avg"]._data, state["exp_inf"]._data
                _lerp_(exp_avg, grad, 1 - beta1)
                exp_inf *= beta2
                norm = np.abs(grad)
                norm += eps
                np.maximum(exp_inf, norm, out=exp_inf)
                clr = lr / (1 - beta1 ** float(step_t))
                _addcdiv_(d, exp_avg, exp_inf, -clr)
                _bump(p)
        return loss
