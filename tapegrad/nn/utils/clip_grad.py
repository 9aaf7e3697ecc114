"""Gradient clipping, in place on the gradients' NumPy storage (no history is recorded)."""
import math
import warnings

import numpy as np

from ...ops.sparse import _unsupported
from ...tape import _local as _tape_local, untraceable
from ...tensor import Tensor, _new
from ..._warnings import user_stacklevel

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _vector_norm(a, norm_type):
    if norm_type == math.inf:
        return np.max(np.abs(a)) if a.size else a.dtype.type(0)
    if norm_type == -math.inf:
        return np.min(np.abs(a)) if a.size else a.dtype.type(math.inf)
    if norm_type == 2:
        flat = a.reshape(-1)
        return np.sqrt(np.dot(flat, flat))
    if norm_type == 1:
        return np.sum(np.abs(a))
    if norm_type == 0:
        return a.dtype.type(np.count_nonzero(a))
    return np.sum(np.abs(a) ** norm_type) ** (1.0 / norm_type)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (one 0-d tensor, in the first tensor's dtype)."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = [t for t in tensors if t is not None]
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _new(np.asarray(0.0, np.float32))
    if any(t.is_sparse for t in tensors):  # (torch's vector_norm has no sparse kernel: embedding(sparse=True))
        raise _unsupported("linalg_vector_norm")
    dtype = tensors[0]._data.dtype
    norms = np.array([_vector_norm(t._data, norm_type) for t in tensors], dtype=dtype)
    total = np.asarray(_vector_norm(norms, norm_type), dtype=dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return _new(total)


def _clip_grads_with_norm_(grads, max_norm, total_norm):
    if not grads:
        return
    dtype = grads[0]._data.dtype
    clip_coef = np.asarray(float(max_norm), dtype) / (total_norm._data + np.asarray(1e-6, dtype))
    clip_coef = np.minimum(clip_coef, np.asarray(1.0, dtype))
    for g in grads:
        np.multiply(g._data, clip_coef.astype(g._data.dtype), out=g._data)
        g._bump_version()


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients in place so that their total norm is at most max_norm; return the total norm."""
    if _tape_local.tracing is not None:  # tapegrad.compile: run by each replay, after the traced rows
        params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
        return _tape_local.tape.defer("clip", clip_grad_norm_, (params, max_norm, norm_type, error_if_nonfinite,
                                                                foreach), params, norm_type=float(norm_type))
    grads = _grads(parameters)
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    _clip_grads_with_norm_(grads, max_norm, total_norm)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=user_stacklevel())
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    if _tape_local.tracing is not None:  # tapegrad.compile: run by each replay, after the traced rows
        params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
        return _tape_local.tape.defer("clip_value", clip_grad_value_, (params, clip_value, foreach), params)
    clip_value = float(clip_value)
    grads = _grads(parameters)
    if any(g.is_sparse for g in grads):
        raise _unsupported("clamp_min_")
    for g in grads:
        np.clip(g._data, -clip_value, clip_value, out=g._data)
        g._bump_version()


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients in place by min(max_norm / (total_norm + 1e-6), 1), total_norm given (a tensor, as
    get_total_norm returns); torch 2.13's torch.nn.utils.clip_grads_with_norm_."""
    if _tape_local.tracing is not None:
        untraceable("clip_grads_with_norm_ (a total norm the replay would not recompute)")
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    if not isinstance(total_norm, Tensor):
        raise TypeError(f"clamp() received an invalid combination of arguments - got ({type(total_norm).__name__}, "
                        "max=float), but expected one of:\n"
                        " * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
                        " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")
    if any(g.is_sparse for g in grads):
        raise _unsupported("mul_")
    norm = total_norm._data
    clip_coef = np.asarray(max_norm, norm.dtype) / (norm + np.asarray(1e-6, norm.dtype))
    clip_coef = np.minimum(clip_coef, np.asarray(1.0, norm.dtype))
    for g in grads:
        np.multiply(g._data, clip_coef.astype(g._data.dtype), out=g._data)
        g._bump_version()
