"""scaled_dot_product_attention: softmax(q k^T * scale + bias) v, as torch's math path computes it.

Composed from existing rows (batched matmul, scale, mask add, one fused softmax row, matmul), so its
backward and create_graph come from theirs; a boolean mask (True: take part) becomes an additive -inf bias
made once as a constant, never a row of its own.
"""
import math

import numpy as np

from ._common import _tensor
from ..tape import _local as _tape_local, made_in_trace
from ..tensor import Tensor, _new
from .elementwise import add, mul, where
from .linalg import matmul
from .nn import dropout
from .reduce import softmax


def _additive_mask(mask, dtype, name="attn_mask"):
    """A boolean mask (True: attend) as a constant float bias of 0 / -inf; a float mask as it is."""
    m = _tensor(mask)
    if m._data.dtype == np.bool_:
        if _tape_local.tracing is not None and isinstance(mask, Tensor):  # (compile: recomputed from the mask)
            return where(m, made_in_trace(_new(np.zeros((), dtype))), made_in_trace(_new(np.full((), -np.inf, dtype))))
        return made_in_trace(_new(np.where(m._data, 0.0, -np.inf).astype(dtype)))
    if m._data.dtype.kind != "f":
        raise RuntimeError(f"Expected {name} dtype to be bool or float or to match query dtype, but got "
                           f"{name}.dtype: {m.dtype}")
    return m


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    if enable_gqa:
        raise NotImplementedError("tapegrad: scaled_dot_product_attention(enable_gqa=True) is not implemented")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError("scaled_dot_product_attention: expected query, key and value of at least 2 dimensions")
    if not (q._data.dtype == k._data.dtype == v._data.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{q.dtype} key.dtype: {k.dtype} and value.dtype: {v.dtype} instead.")
    if q.shape[-1] != k.shape[-1]:
        raise RuntimeError(f"Expected query and key to have the same embedding dimension, but got "
                           f"{q.shape[-1]} and {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"Expected key and value to have the same sequence length, but got {k.shape[-2]} "
                           f"and {v.shape[-2]}")
    L, S, dt = q.shape[-2], k.shape[-2], q._data.dtype
    factor = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    bias = None
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        bias = _additive_mask(np.tril(np.ones((L, S), np.bool_)), dt)
    elif attn_mask is not None:
        bias = _additive_mask(attn_mask, dt)
        if bias._data.dtype != dt:
            bias = bias.to(q.dtype)
    scores = mul(matmul(q, k.transpose(-2, -1)), factor)
    if bias is not None:
        scores = add(scores, bias)
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return matmul(weights, v)


__all__ = []  # torch.nn.functional only (nn/functional.py)
