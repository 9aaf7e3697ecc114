"""torch.optim.Adagrad: per-coordinate steps scaled by the root of the running sum of squared gradients."""
import numpy as np

from ..tensor import _new
from .optimizer import (Optimizer, _addcdiv_, _addcmul_, _bump, _check_differentiable, _check_fused_options,
                        _check_fused_params, _check_hyperparameters, _compiled_batch, _compiled_update, _group_defaults,
                        _scalar, _step_tensor, _steps_to_tensors, _with_weight_decay)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_hyperparameters(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                               initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        _check_fused_options(fused, foreach, differentiable)
        for group in self.param_groups:  # torch creates the state here, before any step
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _step_tensor(fused=group["fused"])
                state["sum"] = _new(np.full_like(p._data, initial_accumulator_value))

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, fused=None)
        _steps_to_tensors(self)

    def step(self, closure=None):
        """sum += g^2; p -= clr * g / (sqrt(sum) + eps), clr = lr / (1 + (step - 1) * lr_decay)."""
        loss = self._closure(closure)
        for group in self.param_groups:
            _check_differentiable(group)
            _check_fused_params(group)
            lr, lr_decay, eps = _scalar(group["lr"]), group["lr_decay"], group["eps"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            for p in group["params"]:
                state = self.state[p]
                if p._grad is not None and len(state) == 0:  # a parameter of a group added after construction
                    state["step"] = _step_tensor(fused=group["fused"])
                    state["sum"] = _new(np.full_like(p._data, self.defaults["initial_accumulator_value"]))
            if group["fused"] and any(p._grad is not None and p._grad.is_sparse for p in group["params"]):
                raise RuntimeError("`fused` does not support sparse grad or complex param")
            batch = _compiled_batch(group)
            if batch is not None and _compiled_update(self.state, batch, "adagrad", ("sum",), ("step",), float(lr),
                                                      float(lr_decay), float(eps), float(weight_decay),
                                                      bool(maximize)):
                continue
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                d = p._data
                state = self.state[p]
                step_t = state["step"]._data
                step_t += 1
                step = float(step_t)
                if getattr(g, "is_sparse", False):
                    self._sparse_update(p, g, state["sum"]._data, lr / (1 + (step - 1) * lr_decay), eps,
                                        weight_decay, maximize)
                    continue
                grad = g._data
                if maximize:
                    grad = -grad
                if weight_decay != 0:
                    grad = _with_weight_decay(grad, d, weight_decay)
                clr = lr / (1 + (step - 1) * lr_decay)
                state_sum = state["sum"]._data
                _addcmul_(state_sum, grad, grad)
                std = np.sqrt(state_sum)
                std += eps
                _addcdiv_(d, grad, std, -clr)
                _bump(p)
        return loss

    @staticmethod
    def _sparse_update(p, g, state_sum, clr, eps, weight_decay, maximize):
        """A COO gradient (read through coalesce / _indices / _values): sum and parameter change at its indices."""
        if weight_decay != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        g = g.coalesce()  # the update is non-linear, so indices must be unique
        index = tuple(g._indices()._data)
        values = g._values()._data
        if maximize:
            values = -values
        state_sum[index] += values * values
        std_values = np.sqrt(state_sum[index])
        std_values += eps
        p._data[index] += (values / std_values) * -clr
        _bump(p)
