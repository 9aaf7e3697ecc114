"""torch.optim.Adam: bias-corrected moment estimates, amsgrad, L2 or decoupled weight decay, maximize."""
import numpy as np

from ..tensor import Tensor, _new
from .optimizer import (Optimizer, _bump, _check_betas_tensors, _check_capturable, _check_differentiable,
                        _check_fused_options, _check_hyperparameters, _check_lr_tensor, _compiled_batch,
                        _compiled_update, _group_defaults, _scalar)

__all__ = ["Adam"]


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_lr_tensor(lr, foreach, capturable)
        _check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        _check_betas_tensors(betas, foreach, capturable)
        betas = tuple(_scalar(b) for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        _check_fused_options(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False,
                        decoupled_weight_decay=False, fused=None)
        for group in self.param_groups:
            for p in group["params"]:
                p_state = self.state.get(p, {})
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = _new(np.asarray(float(p_state["step"]), np.float32))

    def step(self, closure=None):
        """One Adam update per parameter with a gradient, in torch's operation order."""
        loss = self._closure(closure)
        for group in self.param_groups:
            _check_differentiable(group)
            if group["capturable"] and any(p._grad is not None for p in group["params"]):
                _check_capturable(group)
            beta1, beta2 = group["betas"]
            lr = _scalar(group["lr"])
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            amsgrad = group["amsgrad"]
            maximize = group["maximize"]
            decoupled = group["decoupled_weight_decay"]
            if any(p._grad is not None and p._grad.is_sparse for p in group["params"]):
                raise RuntimeError("Adam does not support sparse gradients, please consider SparseAdam instead")
            batch = _compiled_batch(group)
            if batch is not None and self._compiled_step(batch, lr, beta1, beta2, eps, weight_decay, amsgrad,
                                                         maximize, decoupled):
                continue
            w1 = 1 - beta1
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                d = p._data
                grad = g._data
                state = self._state_of(p, amsgrad)
                if maximize:
                    grad = -grad
                step_t = state["step"]._data
                step_t += 1
                if weight_decay != 0:
                    if decoupled:
                        d *= 1 - lr * weight_decay
                    else:
                        grad = grad + weight_decay * d
                m = state["exp_avg"]._data
                v = state["exp_avg_sq"]._data
                # exp_avg.lerp_(grad, 1 - beta1), with torch's two formulas for small and large weights
                if abs(w1) < 0.5:
                    tmp = grad - m
                    tmp *= w1
                    m += tmp
                else:
                    tmp = grad - m
                    tmp *= 1 - w1
                    np.subtract(grad, tmp, out=m)
                # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                v *= beta2
                tmp = grad * (1 - beta2)
                tmp *= grad
                v += tmp
                step = float(step_t)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2 ** 0.5
                if amsgrad:
                    vmax = state["max_exp_avg_sq"]._data
                    np.maximum(vmax, v, out=vmax)
                    denom = np.sqrt(vmax)
                else:
                    denom = np.sqrt(v)
                denom /= bias_correction2_sqrt
                denom += eps
                # param.addcdiv_(exp_avg, denom, value=-step_size)
                upd = m * -step_size
                upd /= denom
                d += upd
                _bump(p, 2 if decoupled and weight_decay != 0 else 1)  # param.mul_, then addcdiv_
        return loss

    def _state_of(self, p, amsgrad):
        state = self.state[p]
        if len(state) == 0:
            d = p._data
            state["step"] = _new(np.zeros((), np.float32))
            state["exp_avg"] = _new(np.zeros_like(d))
            state["exp_avg_sq"] = _new(np.zeros_like(d))
            if amsgrad:
                state["max_exp_avg_sq"] = _new(np.zeros_like(d))
        return state

    def _compiled_step(self, batch, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled):
        """The group's update in one compiled pass (foreach / fused); False, having changed nothing, where a
        state tensor is not one the kernel can take (a loaded one of another dtype, shape or layout)."""
        for p in batch[0]:
            self._state_of(p, amsgrad)
        vmax = "max_exp_avg_sq" if amsgrad else "exp_avg_sq"  # (unread without amsgrad)
        return _compiled_update(self.state, batch, "adam", ("exp_avg", "exp_avg_sq", vmax), ("step",), float(lr),
                                float(beta1), float(beta2), float(eps), float(weight_decay), bool(amsgrad),
                                bool(maximize), bool(decoupled))
