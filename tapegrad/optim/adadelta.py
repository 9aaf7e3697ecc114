"""torch.optim.Adadelta: running averages of squared gradients and squared updates (Zeiler 2012)."""
import numpy as np

from ..tensor import _new
from .optimizer import (Optimizer, _add_scaled_, _addcmul_, _bump, _check_capturable, _check_differentiable,
                        _check_hyperparameters, _compiled_batch, _compiled_update, _grads_of, _group_defaults, _scalar,
                        _step_tensor, _steps_to_tensors, _with_weight_decay)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_hyperparameters(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, capturable=False)
        _steps_to_tensors(self)

    def step(self, closure=None):
        """square_avg <- rho square_avg + (1-rho) g^2; delta = sqrt(acc_delta+eps)/sqrt(square_avg+eps) g."""
        loss = self._closure(closure)
        for group in self.param_groups:
            _check_differentiable(group)
            lr, rho, eps = _scalar(group["lr"]), group["rho"], group["eps"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            items = _grads_of("Adadelta", group)
            for p, _ in items:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _new(np.zeros_like(p._data))
                    state["acc_delta"] = _new(np.zeros_like(p._data))
            if items:
                _check_capturable(group, supports_xla=False)
            batch = _compiled_batch(group)
            if batch is not None and _compiled_update(self.state, batch, "adadelta", ("square_avg", "acc_delta"),
                                                      ("step",), float(lr), float(rho), float(eps),
                                                      float(weight_decay), bool(maximize)):
                continue
            for p, grad in items:
                d = p._data
                state = self.state[p]
                state["step"]._data += 1
                if maximize:
                    grad = -grad
                if weight_decay != 0:
                    grad = _with_weight_decay(grad, d, weight_decay)
                square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
                square_avg *= rho
                _addcmul_(square_avg, grad, grad, 1 - rho)
                std = np.sqrt(square_avg + eps)
                delta = np.sqrt(acc_delta + eps)
                delta /= std
                delta *= grad
                acc_delta *= rho
                _addcmul_(acc_delta, delta, delta, 1 - rho)
                _add_scaled_(d, delta, -lr)
                _bump(p)
        return loss
