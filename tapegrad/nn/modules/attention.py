"""MultiheadAttention (torch.nn.modules.activation's), with torch's parameters (in_proj_weight, in_proj_bias,
q/k/v_proj_weight when kdim/vdim differ, out_proj), init, masks and errors; F.multi_head_attention_forward's
arithmetic: the weights path (need_weights) as torch's explicit softmax, the other through
scaled_dot_product_attention."""
import math
import warnings

import numpy as np

from ... import _dtype, creation, ops
from .. import functional as F, init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module
from ...tensor import _new
from ..._warnings import user_stacklevel

__all__ = ["MultiheadAttention"]


def _pad_one(mask):
    """A float mask with one more key (not masked)."""
    return None if mask is None else F.pad(mask, (0, 1))


def _canonical_mask(mask, name, dtype, other=None, other_name=""):
    """torch's _canonical_mask: a boolean mask (True: masked out) as a float bias of -inf / 0; with its warning
    where `other`, the mask beside it, is of another type (a bool padding mask beside a float attention mask)."""
    if mask is None:
        return None
    if other is not None and ops._tensor(mask)._data.dtype != ops._tensor(other)._data.dtype:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same type for both "
                      f"instead.", stacklevel=user_stacklevel())
    m = ops._tensor(mask)
    if m._data.dtype == np.bool_:
        return _new(np.where(m._data, -np.inf, 0.0).astype(dtype))
    if not _dtype.is_float(m._data.dtype):
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return m


class MultiheadAttention(Module):
    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(creation.empty((embed_dim, embed_dim), dtype=dtype, device=device))
            self.k_proj_weight = Parameter(creation.empty((embed_dim, self.kdim), dtype=dtype, device=device))
            self.v_proj_weight = Parameter(creation.empty((embed_dim, self.vdim), dtype=dtype, device=device))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(creation.empty((3 * embed_dim, embed_dim), dtype=dtype, device=device))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(creation.empty(3 * embed_dim, dtype=dtype, device=device))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if add_bias_kv:  # (a learned key and value appended to every sequence)
            self.bias_k = Parameter(creation.empty((1, 1, embed_dim), dtype=dtype, device=device))
            self.bias_v = Parameter(creation.empty((1, 1, embed_dim), dtype=dtype, device=device))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        is_batched = query.ndim == 3
        if self.batch_first and is_batched:
            query, key, value = (t.transpose(1, 0) for t in (query, key, value))
        out, weights = self._attend(query, key, value, key_padding_mask, need_weights, attn_mask,
                                    average_attn_weights, is_causal)
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, weights

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask, average, is_causal):
        if query.ndim not in (2, 3):
            raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D "
                                 f"query tensor")
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise AssertionError(f"For {'batched (3-D)' if query.ndim == 3 else 'unbatched (2-D)'} `query`, "
                                 f"expected `key` and `value` to be {query.ndim}-D but found {key.ndim}-D and "
                                 f"{value.ndim}-D tensors respectively")
        batched = query.ndim == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        L, N, E = query.shape
        S = key.shape[0]
        H, hd, dt = self.num_heads, self.head_dim, query._data.dtype
        if E != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {E}")
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", dt, attn_mask, "attn_mask")
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                               "module method `generate_square_subsequent_mask` to create this mask.")
        if is_causal and key_padding_mask is None and not need_weights:
            attn_mask = None
        else:
            attn_mask = _canonical_mask(attn_mask, "attn_mask", dt)
            if key_padding_mask is not None:
                is_causal = False
        q, k, v = self._project(query, key, value)
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                if tuple(attn_mask.shape) != (L, S):
                    raise RuntimeError(f"The shape of the 2D attn_mask is torch.Size({list(attn_mask.shape)}), "
                                       f"but should be {(L, S)}.")
                attn_mask = attn_mask.unsqueeze(0)
            elif attn_mask.ndim == 3:
                if tuple(attn_mask.shape) != (N * H, L, S):
                    raise RuntimeError(f"The shape of the 3D attn_mask is torch.Size({list(attn_mask.shape)}), "
                                       f"but should be {(N * H, L, S)}.")
            else:
                raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
        if self.bias_k is not None:  # (torch's order: after the masks' checks, each mask padded for the new key)
            k = ops.cat([k, self.bias_k.repeat(1, N, 1)])
            v = ops.cat([v, self.bias_v.repeat(1, N, 1)])
            attn_mask, key_padding_mask, S = _pad_one(attn_mask), _pad_one(key_padding_mask), S + 1
        q = q.reshape(L, N * H, hd).transpose(0, 1)
        k = k.reshape(S, N * H, hd).transpose(0, 1)
        v = v.reshape(S, N * H, hd).transpose(0, 1)
        if self.add_zero_attn:  # (a zero key and value appended, per head)
            zeros = creation.zeros((N * H, 1, hd), dtype=k.dtype)
            k, v = ops.cat([k, zeros], 1), ops.cat([v, zeros], 1)
            attn_mask, key_padding_mask, S = _pad_one(attn_mask), _pad_one(key_padding_mask), S + 1
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (N, S):
                raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                     f"torch.Size({list(key_padding_mask.shape)})")
            kpm = key_padding_mask.reshape(N, 1, 1, S).expand(-1, H, -1, -1).reshape(N * H, 1, S)
            attn_mask = kpm if attn_mask is None else attn_mask + kpm
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = ops.matmul(q * math.sqrt(1.0 / float(hd)), k.transpose(-2, -1))
            if attn_mask is not None:
                scores = scores + attn_mask
            weights = F.softmax(scores, dim=-1)
            if p > 0.0:
                weights = F.dropout(weights, p=p)
            out = ops.matmul(weights, v)
            out = out.transpose(0, 1).reshape(L * N, E)
            out = F.linear(out, self.out_proj.weight, self.out_proj.bias).reshape(L, N, E)
            weights = weights.reshape(N, H, L, S)
            if average:
                weights = weights.mean(dim=1)
            if not batched:
                out, weights = out.squeeze(1), weights.squeeze(0)
            return out, weights
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else attn_mask.reshape(N, H, -1, S)
        q, k, v = (t.reshape(N, H, t.shape[1], hd) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask, p, bool(is_causal))
        out = out.permute(2, 0, 1, 3).reshape(N * L, E)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias).reshape(L, N, E)
        return (out if batched else out.squeeze(1)), None

    def _project(self, query, key, value):
        E, w, b = self.embed_dim, self.in_proj_weight, self.in_proj_bias
        if self._qkv_same_embed_dim:
            if key is value:
                if query is key:
                    return F.linear(query, w, b).chunk(3, -1)
                q = F.linear(query, w[:E], None if b is None else b[:E])
                return (q,) + tuple(F.linear(key, w[E:], None if b is None else b[E:]).chunk(2, -1))
            ws = w[:E], w[E:2 * E], w[2 * E:]
        else:
            ws = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        bs = (None, None, None) if b is None else (b[:E], b[E:2 * E], b[2 * E:])
        return tuple(F.linear(x, wi, bi) for x, wi, bi in zip((query, key, value), ws, bs))


class _Weights:
    """What MultiheadAttention._attend reads of a module, given as F.multi_head_attention_forward's arguments."""
    _attend, _project = MultiheadAttention._attend, MultiheadAttention._project

    def __init__(self, **attributes):
        self.__dict__.update(attributes)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch.nn.functional.multi_head_attention_forward: MultiheadAttention's computation on given weights
    (sequence-first inputs)."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("tapegrad: multi_head_attention_forward(static_k=, static_v=) is not implemented")
    if use_separate_proj_weight and (q_proj_weight is None or k_proj_weight is None or v_proj_weight is None):
        raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or v_proj_weight "
                             "is None")
    head_dim = embed_dim_to_check // num_heads
    if head_dim * num_heads != embed_dim_to_check:
        raise AssertionError(f"embed_dim {embed_dim_to_check} not divisible by num_heads {num_heads}")
    weights = _Weights(embed_dim=embed_dim_to_check, num_heads=num_heads, head_dim=head_dim,
                       _qkv_same_embed_dim=not use_separate_proj_weight, in_proj_weight=in_proj_weight,
                       in_proj_bias=in_proj_bias, q_proj_weight=q_proj_weight, k_proj_weight=k_proj_weight,
                       v_proj_weight=v_proj_weight, bias_k=bias_k, bias_v=bias_v, add_zero_attn=add_zero_attn,
                       dropout=dropout_p, training=training,
                       out_proj=_Weights(weight=out_proj_weight, bias=out_proj_bias))
    return weights._attend(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                           is_causal)
