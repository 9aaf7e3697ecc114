"""torch.optim.Rprop: per-coordinate step sizes grown or shrunk by the sign agreement of successive gradients."""
import numpy as np

from ..tensor import _new
from .optimizer import (Optimizer, _bump, _check_capturable, _check_differentiable, _check_hyperparameters,
                        _compiled_batch, _compiled_update, _grads_of, _group_defaults, _scalar, _step_tensor,
                        _steps_to_tensors)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_hyperparameters(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, capturable=False)
        _steps_to_tensors(self)

    def step(self, closure=None):
        """step_size *= etaplus / etaminus / 1 as sign(g * prev) is +/-/0, clamped; p -= sign(g) * step_size."""
        loss = self._closure(closure)
        for group in self.param_groups:
            _check_differentiable(group)
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            maximize = group["maximize"]
            items = _grads_of("Rprop", group)
            for p, grad in items:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["prev"] = _new(np.zeros_like(p._data))
                    state["step_size"] = _new(np.full_like(grad, _scalar(group["lr"])))
            if items:
                _check_capturable(group)
            batch = _compiled_batch(group)
            if batch is not None and _compiled_update(self.state, batch, "rprop", ("prev", "step_size"), ("step",),
                                                      float(etaminus), float(etaplus), float(step_size_min),
                                                      float(step_size_max), bool(maximize)):
                continue
            for p, grad in items:
                d = p._data
                state = self.state[p]
                if maximize:
                    grad = -grad
                prev, step_size = state["prev"]._data, state["step_size"]._data
                state["step"]._data += 1
                sign = np.sign(grad * prev)
                factor = np.where(sign > 0, sign.dtype.type(etaplus), sign)
                factor = np.where(factor < 0, factor.dtype.type(etaminus), factor)
                factor[factor == 0] = 1
                step_size *= factor
                np.clip(step_size, step_size_min, step_size_max, out=step_size)
                grad = np.where(factor == factor.dtype.type(etaminus), grad.dtype.type(0), grad)
                d -= np.sign(grad) * step_size
                prev[...] = grad
                _bump(p)
        return loss
