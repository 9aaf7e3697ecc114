"""torch.optim.RMSprop: steps scaled by a running root-mean-square of gradients; momentum, centered variant."""
import numpy as np

from ..tensor import _new
from .optimizer import (Optimizer, _add_scaled_, _addcdiv_, _addcmul_, _bump, _check_capturable, _check_differentiable,
                        _check_hyperparameters, _compiled_batch, _compiled_update, _grads_of, _group_defaults, _lerp_,
                        _scalar, _step_tensor, _steps_to_tensors, _with_weight_decay)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_hyperparameters(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, momentum=0, centered=False, foreach=None, maximize=False, differentiable=False,
                        capturable=False)
        _steps_to_tensors(self)

    def step(self, closure=None):
        """square_avg <- alpha square_avg + (1-alpha) g^2; p -= lr g / (sqrt(square_avg [- grad_avg^2]) + eps)."""
        loss = self._closure(closure)
        for group in self.param_groups:
            _check_differentiable(group)
            lr, alpha, eps = _scalar(group["lr"]), group["alpha"], group["eps"]
            weight_decay, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
            maximize = group["maximize"]
            items = _grads_of("RMSprop", group)
            for p, _ in items:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _new(np.zeros_like(p._data))
                    if momentum > 0:
                        state["momentum_buffer"] = _new(np.zeros_like(p._data))
                    if centered:
                        state["grad_avg"] = _new(np.zeros_like(p._data))
            if items:
                _check_capturable(group)
            batch = _compiled_batch(group)
            if batch is not None and self._compiled_step(batch, lr, alpha, eps, weight_decay, momentum, centered,
                                                         maximize):
                continue
            for p, grad in items:
                d = p._data
                state = self.state[p]
                if maximize:
                    grad = -grad
                state["step"]._data += 1
                if weight_decay != 0:
                    grad = _with_weight_decay(grad, d, weight_decay)
                square_avg = state["square_avg"]._data
                square_avg *= alpha
                _addcmul_(square_avg, grad, grad, 1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"]._data
                    _lerp_(grad_avg, grad, 1 - alpha)
                    avg = square_avg.copy()
                    _addcmul_(avg, grad_avg, grad_avg, -1)
                    np.sqrt(avg, out=avg)
                else:
                    avg = np.sqrt(square_avg)
                avg += eps
                if momentum > 0:
                    buf = state["momentum_buffer"]._data
                    buf *= momentum
                    _addcdiv_(buf, grad, avg)
                    _add_scaled_(d, buf, -lr)
                else:
                    _addcdiv_(d, grad, avg, -lr)
                _bump(p)
        return loss

    def _compiled_step(self, batch, lr, alpha, eps, weight_decay, momentum, centered, maximize):
        """The group's update in one compiled pass (foreach); False, having changed nothing, where a state
        tensor is not one the kernel can take (a loaded one of another dtype, shape or layout)."""
        columns = ("square_avg", "grad_avg" if centered else "square_avg",  # (those a flag leaves out: unread)
                   "momentum_buffer" if momentum > 0 else "square_avg")
        return _compiled_update(self.state, batch, "rmsprop", columns, ("step",), float(lr), float(alpha), float(eps),
                                float(weight_decay), float(momentum), bool(centered), bool(maximize))
