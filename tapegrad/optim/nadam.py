"""torch.optim.NAdam: Adam with Nesterov momentum and the momentum-decay schedule of Dozat (2016)."""
import numpy as np

from ..tensor import _new
from .optimizer import (Optimizer, _addcdiv_, _addcmul_, _bump, _check_capturable, _check_differentiable,
                        _check_hyperparameters, _compiled_batch, _compiled_update, _grads_of, _group_defaults, _lerp_,
                        _scalar, _step_tensor, _steps_to_tensors, _with_weight_decay)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay,
                               momentum_decay=momentum_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, maximize=False, foreach=None, capturable=False, differentiable=False,
                        decoupled_weight_decay=False)
        _steps_to_tensors(self, ("step", "mu_product"))

    def step(self, closure=None):
        """Adam's moments; p -= lr (1-mu_t)/(1-prod mu) g/denom + lr mu_{t+1}/(1-prod mu_{t+1}) m/denom."""
        loss = self._closure(closure)
        for group in self.param_groups:
            _check_differentiable(group)
            beta1, beta2 = (_scalar(b) for b in group["betas"])
            lr, eps = _scalar(group["lr"]), group["eps"]
            weight_decay, momentum_decay = group["weight_decay"], group["momentum_decay"]
            decoupled, maximize = group["decoupled_weight_decay"], group["maximize"]
            items = _grads_of("NAdam", group)
            for p, _ in items:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["mu_product"] = _step_tensor(1.0)
                    state["exp_avg"] = _new(np.zeros_like(p._data))
                    state["exp_avg_sq"] = _new(np.zeros_like(p._data))
            if items and group["capturable"]:
                _check_capturable(group, "params, mu_products and state_steps")
            batch = _compiled_batch(group)
            if batch is not None and _compiled_update(self.state, batch, "nadam", ("exp_avg", "exp_avg_sq"),
                                                      ("step", "mu_product"), float(lr), float(beta1), float(beta2),
                                                      float(eps), float(weight_decay), float(momentum_decay),
                                                      bool(maximize), bool(decoupled)):
                continue
            for p, grad in items:
                d = p._data
                state = self.state[p]
                if maximize:
                    grad = -grad
                step_t = state["step"]._data
                step_t += 1
                step = float(step_t)
                bias_correction2 = 1 - beta2 ** step
                if weight_decay != 0:
                    if decoupled:
                        d *= 1 - lr * weight_decay
                    else:
                        grad = _with_weight_decay(grad, d, weight_decay)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product = state["mu_product"]._data
                mu_product *= mu  # a float32 scalar, as torch keeps it
                exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
                _lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq *= beta2
                _addcmul_(exp_avg_sq, grad, grad, 1 - beta2)
                denom = np.sqrt(exp_avg_sq / bias_correction2)  # (a NumPy scalar for a 0-d parameter: no out=)
                mu_product_value = float(mu_product)
                mu_product_next = mu_product_value * mu_next
                denom += eps
                _addcdiv_(d, grad, denom, -lr * (1.0 - mu) / (1.0 - mu_product_value))
                _addcdiv_(d, exp_avg, denom, (-lr * mu_next) / (1.0 - mu_product_next))
                _bump(p, 3 if decoupled and weight_decay != 0 else 2)  # [param.mul_], two addcdiv_
        return loss
