"""torch.optim.SparseAdam: Adam applied only at the entries a sparse (COO) gradient holds.

It needs sparse gradients (what nn.Embedding(sparse=True) produces in torch); with a dense gradient it raises
torch's error. The update reads the gradient through coalesce() / _indices() / _values().
"""
import math

import numpy as np

from ..tensor import _new
from .optimizer import Optimizer, _bump, _check_hyperparameters, _check_lr_size, _scalar

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check_lr_size(lr)
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_hyperparameters(betas=betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        sparse_params, complex_params = [], []
        for index, param_group in enumerate(self.param_groups):
            for d_index, d_param in enumerate(param_group["params"]):
                if getattr(d_param, "is_sparse", False):
                    sparse_params.append([index, d_index])
                if d_param._data.dtype.kind == "c":
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure=None):
        """At the gradient's indices: Adam's moment updates and a bias-corrected step; elsewhere nothing."""
        loss = self._closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = _scalar(group["lr"]), group["eps"]
            maximize = group.get("maximize", False)
            work = []
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if not getattr(g, "is_sparse", False):
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = _new(np.zeros_like(p._data))
                    state["exp_avg_sq"] = _new(np.zeros_like(p._data))
                state["step"] += 1
                work.append((p, g, state))
            for p, g, state in work:
                g = g.coalesce()  # the update is non-linear, so indices must be unique
                values = g._values()._data
                if values.size == 0:
                    continue
                if maximize:
                    values = -values
                index = tuple(g._indices()._data)
                exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
                old_exp_avg = exp_avg[index]
                exp_avg_update = values - old_exp_avg
                exp_avg_update *= 1 - beta1
                exp_avg[index] += exp_avg_update
                old_exp_avg_sq = exp_avg_sq[index]
                exp_avg_sq_update = values * values
                exp_avg_sq_update -= old_exp_avg_sq
                exp_avg_sq_update *= 1 - beta2
                exp_avg_sq[index] += exp_avg_sq_update
                numer = exp_avg_update + old_exp_avg
                exp_avg_sq_update += old_exp_avg_sq
                denom = np.sqrt(exp_avg_sq_update)
                denom += eps
                step = state["step"]
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr * math.sqrt(bias_correction2) / bias_correction1
                numer /= denom
                p._data[index] += numer * -step_size
                _bump(p)
        return loss
