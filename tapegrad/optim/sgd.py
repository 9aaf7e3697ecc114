"""torch.optim.SGD: momentum, dampening, Nesterov, weight decay, maximize; torch's update order."""
import numpy as np

from ..ops.sparse import accumulate_, add_into_dense, merged_add
from ..tensor import _new
from .optimizer import (Optimizer, _bump, _cell, _check_differentiable, _check_fused_options, _check_hyperparameters,
                        _compiled_batch, _dtype_args, _fits, _group_defaults, _optim_kernels, _scalar)

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
        _group_defaults(self, nesterov=False, maximize=False, foreach=None, differentiable=False, fused=False)

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
            batch = _compiled_batch(group)
            if batch is not None and self._compiled_step(batch, lr, momentum, dampening, weight_decay, nesterov,
                                                         maximize):
                continue
            if group["fused"] and any(p._grad is not None and p._grad.is_sparse for p in group["params"]):
                raise RuntimeError("`_fused_sgd` does not support sparse gradients")
            if momentum == 0 and weight_decay == 0 and not maximize:
                for p in group["params"]:  # the plain step, kept tight: it runs on every benchmarked step
                    g = p._grad
                    if g is not None:
                        if g.is_sparse:
                            self._sparse_step(p, g, lr, momentum, dampening, weight_decay, nesterov, maximize)
                            continue
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
                if g.is_sparse:
                    self._sparse_step(p, g, lr, momentum, dampening, weight_decay, nesterov, maximize)
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

    def _sparse_step(self, p, g, lr, momentum, dampening, weight_decay, nesterov, maximize):
        """torch's single-tensor SGD on a sparse COO gradient (embedding(sparse=True)): the momentum buffer is
        sparse too (its entries merged as torch's sparse add_ merges them), the parameter gets each entry added in
        turn (torch's dense add_ of a sparse tensor); weight decay raises torch's error (sparse.add(dense))."""
        if maximize:
            g = -g
        if weight_decay != 0:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = g.clone()
            elif buf.is_sparse:  # buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                buf._vals._data *= momentum
                accumulate_(buf, g, 1 - dampening)
            else:
                b = buf._data
                b *= momentum
                add_into_dense(b, g, 1 - dampening)
                buf._bump_version()
            if nesterov:
                if not buf.is_sparse:
                    raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
                g = merged_add(g, buf, momentum)
            else:
                g = buf
        if g.is_sparse:
            add_into_dense(p._data, g, -lr)
        else:  # (a dense momentum buffer, loaded from a state dict)
            p._data -= lr * g._data
        _bump(p)

    def _compiled_step(self, batch, lr, momentum, dampening, weight_decay, nesterov, maximize):
        """The group's update in one compiled pass (foreach / fused); False, having changed nothing, where a
        momentum buffer is not one the kernel can take (a loaded one of another dtype or layout)."""
        params, grads = batch
        rows, fresh = [], []
        for p, g in zip(params, grads):
            d = p._data
            buf = self.state[p].get("momentum_buffer") if momentum != 0 else None
            if buf is not None and not _fits(buf._data, d):
                return False
            new = buf is None and momentum != 0
            if new:  # torch's buffer is the first (decayed, maximized) gradient, cloned: the kernel writes it
                buf = np.empty_like(d)
                fresh.append((p, buf))
            else:
                buf = d if buf is None else buf._data  # (d: unread without momentum)
            rows.append((id(d), id(g), id(buf), _cell(p), new))
        _optim_kernels().sgd(np.array(rows, np.int64), *_dtype_args(params[0]._data), float(lr), float(momentum),
                             float(dampening), float(weight_decay), bool(nesterov), bool(maximize))
        for p, buf in fresh:
            self.state[p]["momentum_buffer"] = _new(buf)
        return True
