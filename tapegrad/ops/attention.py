"""scaled_dot_product_attention: softmax(q k^T * scale + bias) v, as torch's math path computes it.

Composed from existing rows (batched matmul, scale, mask add, one fused softmax row, matmul), so its
backward and create_graph come from theirs; a boolean mask (True: take part) becomes an additive -inf bias
made once as a constant, never a row of its own. 4-d float32/float64 query, key and value of one batch shape
with no attn_mask and no dropout (a transformer's self-attention, causal or not) are one row instead (torch's
flash-attention row name): the forward on arrays keeps the attention weights, the backward is four batched
matmuls and one softmax pass on arrays, and create_graph composes the same rule of tapegrad ops.
"""
import builtins
import math
import warnings

import numpy as np

from .. import _dtype, _strides, registry
from ._common import OPS, _record, _tensor
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
    if not _dtype.is_float(m._data.dtype):
        raise RuntimeError(f"Expected {name} dtype to be bool or float or to match query dtype, but got "
                           f"{name}.dtype: {m.dtype}")
    return m


# torch's scaled_dot_product_attention backends (torch.nn.attention.sdpa_kernel, torch.backends.cuda.enable_*_sdp):
# all enabled by default; on the CPU only math and flash exist. Whether flash may run and whether math may run
# decide which path runs (their outputs' layouts differ) or torch's error when neither can.
SDP_BACKENDS = {"cudnn": True, "flash": True, "mem_efficient": True, "math": True, "overrideable": True}


class CausalBias:
    """torch.nn.attention.bias.CausalBias: a causal mask of (seq_len_q, seq_len_kv), aligned at the upper left
    (query i sees keys 0..i) or lower right (the last query sees every key), made when attention uses it."""

    def __init__(self, variant, seq_len_q, seq_len_kv):
        self.variant, self.seq_len_q, self.seq_len_kv = variant, seq_len_q, seq_len_kv

    def _upper_left(self):
        return _new(np.tril(np.ones((self.seq_len_q, self.seq_len_kv), np.bool_)))

    def _lower_right(self):
        diagonal = self.seq_len_kv - self.seq_len_q
        return _new(np.tril(np.ones((self.seq_len_q, self.seq_len_kv), np.bool_), diagonal))

    def _materialize(self, device=None):
        return self._upper_left() if self.variant.name == "UPPER_LEFT" else self._lower_right()

    def __repr__(self):
        return repr(self._materialize())


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    if isinstance(attn_mask, CausalBias):
        attn_mask = attn_mask._materialize()
    if not (SDP_BACKENDS["math"] or SDP_BACKENDS["flash"]):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and v.ndim >= 3:  # grouped-query attention: key/value heads shared
        heads = q._data.shape[-3]
        if heads % k._data.shape[-3] or heads % v._data.shape[-3]:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
        k = k.repeat_interleave(heads // k._data.shape[-3], -3)
        v = v.repeat_interleave(heads // v._data.shape[-3], -3)
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
    flash = dropout_p == 0.0 and q.ndim == k.ndim == v.ndim == 4 and all(_strides.of(t)[3] == 1 for t in (q, k, v))
    if not SDP_BACKENDS["math"] and not flash:
        warnings.warn("Flash attention kernel not used because:")
        raise RuntimeError("No available kernel.  Aborting execution.")
    flash = flash and SDP_BACKENDS["flash"]
    if (flash and attn_mask is None and (dt in _ROW_DTYPES or _dtype.is_bfloat16(dt))
            and q.shape[:2] == k.shape[:2] == v.shape[:2] and q.shape[3] == k.shape[3] == v.shape[3] > 0 and L > 0
            and S > 0):
        ctx = registry.Ctx(scale=factor, causal=bool(is_causal))
        out = _record(OPS["sdpa"], _sdpa_forward(ctx, q._data, k._data, v._data), (q, k, v), aux=ctx)
    else:
        scores = mul(matmul(q, k.transpose(-2, -1)), factor)
        if bias is not None:
            scores = add(scores, bias)
        weights = _safe_softmax(scores)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p, True)
        out = matmul(weights, v)
    if flash and q._strides is not None:
        out._strides = _laid_out_as(q, out.shape)
    return out


def _safe_softmax(scores):
    """torch's _safe_softmax (its math and flash kernels): softmax over the keys, and zeros for a query whose scores
    are all -inf (every key masked: a fully padded sequence), where softmax gives NaN; its gradients there are zeros."""
    tracing = _tape_local.tracing is not None
    if not tracing and not np.isneginf(scores._data).all(-1).any():
        return softmax(scores, -1)
    # (every score -inf: its largest is; amax and the comparison are rows a tapegrad.compile replay recomputes)
    masked = scores.amax(-1, keepdim=True) == -math.inf
    zero = made_in_trace(_new(np.zeros((), scores._data.dtype)))
    return where(masked, zero, softmax(where(masked, zero, scores), -1))


def _laid_out_as(q, shape):
    """The strides torch's flash kernel gives its output: laid out in the query's order of (batch, head, sequence),
    the embedding innermost. A query cut from (B, L, 3*H*E) projections, viewed (B, L, H, E) and transposed, gives
    an output whose `transpose(1, 2).view(B, L, H*E)` works without `.contiguous()` (nanoGPT's idiom)."""
    qs = _strides.of(q)
    order = sorted(range(3), key=lambda d: -qs[d]) + [3]  # (stable: ties keep their order)
    strides, step = [0] * 4, 1
    for d in reversed(order):
        strides[d] = step
        step *= builtins.max(shape[d], 1)
    return _strides.normal(shape, strides)


_ROW_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16))  # (bfloat16: _row_dtype)
_CAUSAL = {}


def _causal_bias(L, S, dtype):
    """0 on and below the diagonal, -inf above (torch's is_causal: tril of ones (L, S)), remembered per shape."""
    key = (L, S, dtype)
    bias = _CAUSAL.get(key)
    if bias is None:
        if len(_CAUSAL) > 32:
            _CAUSAL.clear()
        bias = _CAUSAL[key] = np.where(np.tril(np.ones((L, S), np.bool_)), 0.0, -np.inf).astype(dtype)
    return bias


def _sdpa_forward(ctx, q, k, v):
    """softmax(q k^T scale + causal bias) v on arrays; the weights stay in ctx for the backward. float16 and
    bfloat16 inputs in float32, rounded once at the end, as torch's CPU flash kernel accumulates (under CPU autocast
    a GPT's attention is bfloat16)."""
    if q.dtype.itemsize == 2:
        return _sdpa_forward(ctx, *(a.astype(np.float32) for a in (q, k, v))).astype(q.dtype)
    w = np.matmul(q, np.swapaxes(k, -1, -2))
    w *= w.dtype.type(ctx.scale)
    if ctx.causal:
        w += _causal_bias(w.shape[-2], w.shape[-1], w.dtype)
    w -= w.max(axis=-1, keepdims=True)
    np.exp(w, out=w)
    w /= w.sum(axis=-1, keepdims=True)
    ctx.weights = w
    return np.matmul(w, v)


def _sdpa_arrays(ctx, g, inputs, out, wanted):
    """dv = w^T g; ds = w (g v^T - rowsum(w g v^T)) scale; dq = ds k; dk = ds^T q."""
    q, k, v = inputs
    w = ctx.weights
    if g.dtype != w.dtype or g.shape != out.shape:
        return None
    gv = np.matmul(np.swapaxes(w, -1, -2), g) if wanted[2] else None
    gq = gk = None
    if wanted[0] or wanted[1]:
        ds = np.matmul(g, np.swapaxes(v, -1, -2))
        ds -= np.einsum("...j,...j->...", ds, w)[..., None]
        ds *= w
        ds *= ds.dtype.type(ctx.scale)
        gq = np.matmul(ds, k) if wanted[0] else None
        gk = np.matmul(np.swapaxes(ds, -1, -2), q) if wanted[1] else None
    return gq, gk, gv


def _vjp_sdpa(ctx, g, inputs, out):
    """The same rule in tapegrad ops, the weights recomputed from q and k (create_graph: differentiable again)."""
    q, k, v = inputs
    scores = mul(matmul(q, k.transpose(-2, -1)), ctx.scale)
    if ctx.causal:
        scores = add(scores, _new(_causal_bias(q.shape[-2], k.shape[-2], q._data.dtype)))
    w = softmax(scores, -1)
    dw = matmul(g, v.transpose(-2, -1))
    ds = mul(w * (dw - (dw * w).sum(-1, keepdim=True)), ctx.scale)
    return matmul(ds, k), matmul(ds.transpose(-2, -1), q), matmul(w.transpose(-2, -1), g)


registry.python("sdpa", "ScaledDotProductFlashAttentionForCpuBackward0", _sdpa_forward, _vjp_sdpa,
                array_vjp=_sdpa_arrays)

__all__ = []  # torch.nn.functional only (nn/functional.py)
