"""torch.optim.ASGD: averaged SGD (Polyak & Juditsky 1992) with torch's eta / mu schedules."""
import numpy as np

from ..tensor import _new
from .optimizer import (Optimizer, _add_scaled_, _bump, _check_capturable, _check_differentiable,
                        _check_hyperparameters, _compiled_batch, _compiled_update, _grads_of, _group_defaults, _scalar,
                        _step_tensor, _steps_to_tensors, _with_weight_decay)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_hyperparameters(lr=lr, weight_decay=weight_decay)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, capturable=False)
        _steps_to_tensors(self, ("step", "eta", "mu"))

    def step(self, closure=None):
        """p <- p (1 - lambd eta) - eta g; ax averages p once step > t0; eta, mu follow torch's schedules."""
        loss = self._closure(closure)
        for group in self.param_groups:
            _check_differentiable(group)
            lr, lambd, alpha, t0 = _scalar(group["lr"]), group["lambd"], group["alpha"], group["t0"]
            weight_decay, maximize = group["weight_decay"], group["maximize"]
            items = _grads_of("ASGD", group)
            for p, _ in items:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["eta"] = _step_tensor(lr)
                    state["mu"] = _step_tensor(1.0)
                    state["ax"] = _new(np.zeros_like(p._data))
            if items and group["capturable"]:
                _check_capturable(group, "params, mus, etas, and state_steps")
            batch = _compiled_batch(group)
            if batch is not None and _compiled_update(self.state, batch, "asgd", ("ax",), ("step", "eta", "mu"),
                                                      float(lr), float(lambd), float(alpha), float(t0),
                                                      float(weight_decay), bool(maximize)):
                continue
            for p, grad in items:
                d = p._data
                state = self.state[p]
                if maximize:
                    grad = -grad
                step_t, eta, mu, ax = (state[k]._data for k in ("step", "eta", "mu", "ax"))
                step_t += 1
                if weight_decay != 0:
                    grad = _with_weight_decay(grad, d, weight_decay)
                eta_value = float(eta)
                d *= 1 - lambd * eta_value
                _add_scaled_(d, grad, -eta_value)
                if float(mu) != 1:
                    diff = d - ax
                    diff *= mu
                    ax += diff
                else:
                    ax[...] = d
                step = float(step_t)
                eta[...] = lr / ((1 + lambd * lr * step) ** alpha)
                mu[...] = 1 / max(1, step - t0)
                _bump(p, 2)  # param.mul_, param.add_
        return loss
