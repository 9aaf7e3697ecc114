"""torch.optim.SGD: momentum, dampening, Nesterov, weight decay, maximize; torch's update order."""
import numpy as np

from ..tensor import _new
from .optimizer import Optimizer, _bump, _check_differentiable, _check_fused_options, _check_hyperparameters, _scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_hyperparameters(lr=lr, momentum=momentum, weight_decay=weight_decay, allow_nan=True)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
                    "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused_options(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def step(self, closure=None):
        """One update: p -= lr * (grad [+ weight_decay * p], through the momentum buffer when momentum != 0)."""
        loss = self._closure(closure)
        for group in self.param_groups:
            if group["differentiable"]:
                _check_differentiable(group)
            lr = _scalar(group["lr"])
            momentum = group["momentum"]
            dampening = group["dampening"]
            weight_decay = _scalar(group["weight_decay"])
            nesterov = group["nesterov"]
            maximize = group["maximize"]
            if momentum == 0 and weight_decay == 0 and not maximize:
                for p in group["params"]:  # the plain step, kept tight: it runs on every benchmarked step
                    g = p._grad
                    if g is not None:
                        d = p._data
                        d -= lr * g._data
                        vc = p._vc
                        if vc is not None:
                            vc[0] += 1
                continue
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                d = p._data
                grad = g._data
                if maximize:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad + weight_decay * d
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = _new(np.array(grad, copy=True))
                    else:
                        b = buf._data
                        b *= momentum
                        if dampening == 0:
                            b += grad
                        else:
                            b += (1 - dampening) * grad
                        buf._bump_version()
                    grad = grad + momentum * buf._data if nesterov else buf._data
                d -= lr * grad
                _bump(p)
        return loss
