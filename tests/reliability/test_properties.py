"""Property tests: random programs over the registry's ops agree with PyTorch (float64 values and gradients),
and the algebra of backward holds (VJP linear in the cotangent, k retained backwards = k times one,
backward after zero_() = the first, truncation returns the tape to its length).

A program is a chain of cases applied to a 2-D float64 tensor; each case is one op (or a front-end that
records one) written once for both libraries. Elementwise cases are made from registry.OPS itself, so a
new elementwise op is covered as soon as it is declared; `test_every_registry_op_is_covered` fails for an
op that no case records, naming it.
"""
import importlib
import io
import pathlib

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import tapegrad
from tapegrad import registry
from tapegrad import tape as tape_mod
from tapegrad.create_graph import DERIVED_NAMES
from tapegrad.ops.shape import _transpose_as_in_place


class Draw:
    """Inputs for one case, the same for both libraries: arrays come from a seeded generator, in call order."""

    def __init__(self, lib, seed, leaves):
        self.lib, self.g, self.leaves = lib, np.random.default_rng(seed), leaves

    def array(self, shape, lo=-1.0, hi=1.0):
        return self.g.uniform(lo, hi, shape)

    def leaf(self, shape, lo=-1.0, hi=1.0):
        t = self.lib.tensor(self.array(shape, lo, hi), dtype=self.lib.float64, requires_grad=True)
        self.leaves.append(t)
        return t

    def const(self, shape, lo=-1.0, hi=1.0):
        return self.lib.tensor(self.array(shape, lo, hi), dtype=self.lib.float64)

    def ints(self, shape, lo, hi):
        return self.lib.tensor(self.g.integers(lo, hi, shape), dtype=self.lib.int64)

    def mask(self, shape):
        return self.lib.tensor(self.g.random(shape) < 0.5)

    def int(self, lo, hi):
        return int(self.g.integers(lo, hi))


def F(L):
    return L.nn.functional


def pos(x):
    """x mapped into (0.5, inf): the domain of log, sqrt..."""
    return x.abs() + 0.5


def unit(x):
    """x mapped into (-0.9, 0.9): the domain of asin, acos..."""
    return x.tanh() * 0.9


# Elementwise ops: each registry K_UNARY / K_BINARY op, called by name; a domain where it needs one.
DOMAIN = {"log": pos, "log2": pos, "log1p": pos, "sqrt": pos, "rsqrt": pos, "reciprocal": pos, "asin": unit,
          "acos": unit, "tan": unit, "div": None, "pow": None}
SCALAR_OPS = {"add": 1.7, "sub": 1.7, "mul": 1.7, "div": 1.7, "pow": 1.7, "maximum": 0.1, "minimum": 0.1,
              "atan2": 1.7}
UNARY_CALLS = {  # registry name -> how both libraries call it (when not `lib.<name>(x)`)
    "clamp": lambda L, x: L.clamp(x, -0.5, 0.6),
    "clamp_min": lambda L, x: L.clamp(x, min=-0.2),
    "clamp_max": lambda L, x: L.clamp_max(x, 0.3),
    "hardtanh": lambda L, x: F(L).hardtanh(x, -0.5, 0.7),
    "leaky_relu": lambda L, x: F(L).leaky_relu(x, 0.1),
    "elu": lambda L, x: F(L).elu(x, 0.8),
    "softplus": lambda L, x: F(L).softplus(x, 2.0, 1.0),
    "gelu": lambda L, x: F(L).gelu(x),
    "gelu_tanh": lambda L, x: F(L).gelu(x, approximate="tanh"),
    "silu": lambda L, x: F(L).silu(x),
    "log_sigmoid": lambda L, x: F(L).logsigmoid(x),
    "copy": lambda L, x: x.clone(),
    "round_decimals": lambda L, x: L.round(x * 10, decimals=1),
    "_div_scalar": lambda L, x: F(L).cross_entropy(x, x.detach().softmax(-1)),
    "_mul_scalar": lambda L, x: F(L).cross_entropy(x, L.tensor(np.arange(x.shape[0]) % x.shape[1]),
                                                   label_smoothing=0.1),
    "exp2": lambda L, x: L.exp2(x),
    "square": lambda L, x: L.square(x),
}


def _elementwise_cases():
    cases = {}
    for op in registry.OPS:
        name = op.name
        if op.kind == registry.K_UNARY and not name.endswith(("_ts", "_st")):
            call = UNARY_CALLS.get(name) or (lambda L, x, name=name: getattr(L, name)(x))
            dom = DOMAIN.get(name)
            cases[name] = (lambda L, x, R, call=call, dom=dom: call(L, dom(x) if dom else x))
        elif op.kind == registry.K_BINARY and name not in DERIVED_NAMES:  # (create_graph's: no front-end)
            def binary(L, x, R, name=name):
                a, b = x, R.leaf((1, x.shape[1]))  # size-1 broadcasting
                if name == "pow":
                    a = pos(a)
                if name == "div":
                    b = pos(b)
                return getattr(L, name)(a, b)

            def with_scalar(L, x, R, name=name):
                """x op c and c op x with a Python number c (torch.maximum, atan2 take a 0-dim tensor, as tapegrad's)."""
                c = SCALAR_OPS[name]
                a = pos(x) if name in ("pow", "div") else x
                k = L.tensor(c, dtype=L.float64) if name in ("maximum", "minimum", "atan2") else c
                fn = getattr(L, name)
                return fn(a, k) + fn(k, a)
            cases[name] = binary
            cases[name + "_scalar"] = with_scalar
    return cases


def _custom_function(L):
    class SinCos(L.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.sin(), a.cos()

        @staticmethod
        def backward(ctx, gs, gc):
            (a,) = ctx.saved_tensors
            return gs * a.cos() - gc * a.sin()
    return SinCos


def _double_backward(L, x, R):
    """create_graph: the gradient of an indexed, broadcast expression, itself differentiated later."""
    w = R.leaf((1, x.shape[1]))
    y = ((x[:, 1:] * w[:, 1:]) ** 3).sum() + x.flip(1).sum()
    (g,) = L.autograd.grad(y, x, create_graph=True)
    return g * g  # its backward differentiates the backward of slice and flip (scatter_flat, gather_flat)


def _lstm_cell(L, gx, gh, c):
    """One LSTM step (gates i, f, g, o) returning h' * c', which reads both fused rows (ops/rnn.py)."""
    if L is torch:
        i, f, g, o = (gx + gh).chunk(4, 1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c2.tanh() * c2
    from tapegrad.ops.rnn import lstm_cell_step
    h2, c2 = lstm_cell_step(gx, gh, c)
    return h2 * c2


def _lstm_layer(L, gx, h, c, w_hh):
    """A whole LSTM layer's recurrence (the lstm_layer rows) against torch's gate formulas step by step; the output
    summed over time times c_T reads both rows."""
    if L is torch:
        outs = []
        for t in range(gx.shape[0]):
            i, f, g, o = (gx[t] + h @ w_hh.T).chunk(4, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            outs.append(h)
        return torch.stack(outs).sum(0) * c
    from tapegrad.ops.rnn import lstm_layer
    out, c_last = lstm_layer(gx, h, c, w_hh)
    return out.sum(0) * c_last


def _gru_layer(L, gi, h, w_hh, b_hh):
    """A whole GRU layer's recurrence (the gru_layer row) against torch's gate formulas step by step; the output
    summed over time times h_T."""
    if L is torch:
        outs = []
        for t in range(gi.shape[0]):
            ir, iz, i_n = gi[t].chunk(3, 1)
            hr, hz, hn = (h @ w_hh.T + b_hh).chunk(3, 1)
            r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
            n = (i_n + r * hn).tanh()
            h = (1 - z) * n + z * h
            outs.append(h)
        return torch.stack(outs).sum(0) * h
    from tapegrad.ops.rnn import gru_layer
    out = gru_layer(gi, h, w_hh, b_hh)
    return out.sum(0) * out[-1]


def _rnn_layer(L, gx, h, w_hh, b_hh):
    """A whole nn.RNN layer's recurrence (the rnn_layer row, tanh) against torch's step formula; the output summed
    over time times h_T."""
    if L is torch:
        outs = []
        for t in range(gx.shape[0]):
            h = (gx[t] + (h @ w_hh.T + b_hh)).tanh()
            outs.append(h)
        return torch.stack(outs).sum(0) * h
    from tapegrad.ops.rnn import rnn_layer
    out = rnn_layer(gx, h, w_hh, b_hh)
    return out.sum(0) * out[-1]


def _gru_cell(L, gi, gh, h):
    """One GRU step (gates r, z, n as torch's)."""
    if L is torch:
        ir, iz, i_n = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        return (1 - z) * (i_n + r * hn).tanh() + z * h
    from tapegrad.ops.rnn import gru_cell_step
    return gru_cell_step(gi, gh, h)


CASES = {
    **_elementwise_cases(),
    # reductions
    "sum": lambda L, x, R: L.sum(x, dim=1, keepdim=True) + x,
    "sum_all": lambda L, x, R: L.sum(x),
    "mean": lambda L, x, R: x.mean(dim=0),
    "mean_all": lambda L, x, R: x.mean(),
    "prod": lambda L, x, R: x.prod(dim=1),
    "prod_all": lambda L, x, R: (x + 1.5).prod(),
    "var": lambda L, x, R: L.cat([x, R.leaf((2, x.shape[1]))]).var(dim=0),
    "std": lambda L, x, R: L.cat([x, R.leaf((2, x.shape[1]))]).std(dim=0, keepdim=True),
    "amax": lambda L, x, R: x.amax(dim=1),
    "amin": lambda L, x, R: x.amin(dim=(0, 1)),
    "max_all": lambda L, x, R: x.max(),
    "min_all": lambda L, x, R: x.min(),
    "max_dim": lambda L, x, R: x.max(dim=1).values,
    "min_dim": lambda L, x, R: x.min(dim=0, keepdim=True)[0],
    "softmax": lambda L, x, R: x.softmax(dim=-1),
    "log_softmax": lambda L, x, R: F(L).log_softmax(x, dim=0),
    "logsumexp": lambda L, x, R: L.logsumexp(x, dim=1),
    "cumsum": lambda L, x, R: L.cumsum(x, dim=1),
    "vector_norm": lambda L, x, R: (L.linalg.vector_norm if L is torch else L.vector_norm)(pos(x), 3, dim=1),
    "norm": lambda L, x, R: pos(x).norm(),
    # shape and data movement
    "reshape": lambda L, x, R: x.reshape(-1),
    # (contiguous(): a chained step's input may be a strided view, which torch's view refuses too)
    "view": lambda L, x, R: x.contiguous().view(x.shape[1], x.shape[0]),
    "squeeze": lambda L, x, R: x.unsqueeze(1).squeeze(),
    "squeeze_dim": lambda L, x, R: x.unsqueeze(0).squeeze(0),
    "squeeze_dims": lambda L, x, R: x.unsqueeze(0).unsqueeze(2).squeeze((0, 2)),
    "unsqueeze": lambda L, x, R: x.unsqueeze(-1),
    "expand": lambda L, x, R: x[:1].expand(3, x.shape[1]),
    "transpose": lambda L, x, R: x.transpose(0, 1),
    "t": lambda L, x, R: x.t(),
    "permute": lambda L, x, R: x.unsqueeze(1).permute(2, 0, 1),
    "movedim": lambda L, x, R: L.movedim(x.unsqueeze(0), 0, 2),
    "select": lambda L, x, R: x.select(1, -1),
    "slice": lambda L, x, R: x[1:],
    "slice_step": lambda L, x, R: x[:, ::2],
    "index": lambda L, x, R: x[R.ints((5,), 0, x.shape[0])],
    "index_mask": lambda L, x, R: x[x > 0],
    "index_2d": lambda L, x, R: x[R.ints((3,), 0, x.shape[0]), R.ints((3,), -x.shape[1], x.shape[1])],
    "alias": lambda L, x, R: x[...],
    "unsqueeze_gather": lambda L, x, R: x[1:, None],
    "slice_unsqueeze": lambda L, x, R: x[None, 1:],
    "narrow": lambda L, x, R: x.narrow(1, 0, max(1, x.shape[1] - 1)),
    "repeat": lambda L, x, R: x.repeat(2, 1, 2),
    "flip": lambda L, x, R: x.flip(0, 1),
    "split": lambda L, x, R: L.cat(L.split(x, 2, dim=1)[::-1], dim=1),
    "split_with_sizes": lambda L, x, R: L.split(L.cat([x, x]), [1, 2 * x.shape[0] - 1])[1],
    "chunk": lambda L, x, R: x.chunk(2, dim=0)[0],
    "unbind": lambda L, x, R: L.stack(x.unbind(1)[::-1]),
    "gather": lambda L, x, R: x.gather(1, R.ints((x.shape[0], 3), 0, x.shape[1])),
    "take_along_dim": lambda L, x, R: L.take_along_dim(x, R.ints((1, x.shape[1]), 0, x.shape[0]), dim=0),
    "index_select": lambda L, x, R: x.index_select(0, R.ints((4,), 0, x.shape[0])),
    "embedding": lambda L, x, R: F(L).embedding(R.ints((2, 3), 0, x.shape[0]), x),
    "embedding_padded": lambda L, x, R: F(L).embedding(R.ints((2, 3), 0, x.shape[0]), x, padding_idx=0),
    "diagonal": lambda L, x, R: x.diagonal(offset=0),
    "cat": lambda L, x, R: L.cat([x, R.leaf((2, x.shape[1])), x], dim=0),
    "stack": lambda L, x, R: L.stack([x, x * 2], dim=1),
    "tril": lambda L, x, R: x.tril(),
    "triu": lambda L, x, R: x.triu(1),
    "masked_fill": lambda L, x, R: x.masked_fill(R.mask(x.shape), 0.5),
    "masked_fill_tensor": lambda L, x, R: x.masked_fill(R.mask(x.shape), R.leaf(()) * 2),
    "where": lambda L, x, R: L.where(x > 0, x, R.leaf((1, x.shape[1]))),
    "scatter_add": lambda L, x, R: L.zeros(3, x.shape[1], dtype=L.float64).scatter_add(
        0, R.ints(x.shape, 0, 3), x),
    "lerp": lambda L, x, R: L.lerp(x, R.leaf(x.shape), 0.3),
    "lerp_tensor": lambda L, x, R: L.lerp(x, R.leaf(x.shape), R.leaf((1, x.shape[1]), 0, 1)),
    "clamp_tensor": lambda L, x, R: L.clamp(x, R.leaf(x.shape, -1, -0.2), R.leaf((1, x.shape[1]), 0.2, 1)),
    "clamp_min_tensor": lambda L, x, R: L.clamp_min(x, R.leaf(x.shape)),
    "clamp_max_tensor": lambda L, x, R: L.clamp_max(x, R.leaf((1, x.shape[1]))),
    "clamp_tensor_min_only": lambda L, x, R: L.clamp(x, min=R.leaf(x.shape)),
    "cast": lambda L, x, R: (x.float() * 2).double() + x,
    # linear algebra
    "matmul": lambda L, x, R: x @ R.leaf((x.shape[1], 3)),
    "mv": lambda L, x, R: L.mv(x, R.leaf((x.shape[1],))),
    "dot": lambda L, x, R: L.dot(x[0], R.leaf((x.shape[1],))),
    "vecmat": lambda L, x, R: x[0] @ R.leaf((x.shape[1], 2)),
    "bmm": lambda L, x, R: L.bmm(x.unsqueeze(0).expand(2, *x.shape), R.leaf((2, x.shape[1], 3))),
    "matmul_fold": lambda L, x, R: R.leaf((2, 3, x.shape[0])) @ x,
    "matmul_bcast": lambda L, x, R: x.unsqueeze(0) @ R.leaf((2, x.shape[1], 2)),
    "outer": lambda L, x, R: L.outer(x[0], R.leaf((3,))),
    "linear": lambda L, x, R: F(L).linear(x, R.leaf((3, x.shape[1]))),
    "addmm": lambda L, x, R: F(L).linear(x, R.leaf((3, x.shape[1])), R.leaf((3,))),
    "einsum": lambda L, x, R: L.einsum("ij,kj->ik", x, R.leaf((2, x.shape[1]))),
    # losses
    "nll_loss": lambda L, x, R: F(L).nll_loss(x.log_softmax(1), R.ints((x.shape[0],), 0, x.shape[1])),
    "nll_loss2d": lambda L, x, R: F(L).nll_loss(x.reshape(1, 1, *x.shape).expand(2, 3, *x.shape),
                                                R.ints((2, *x.shape), 0, 3)),
    "cross_entropy": lambda L, x, R: F(L).cross_entropy(x, R.ints((x.shape[0],), 0, x.shape[1]),
                                                        reduction="sum"),
    "cross_entropy2d": lambda L, x, R: F(L).cross_entropy(x.reshape(1, 1, *x.shape).expand(2, 3, *x.shape),
                                                          R.ints((2, *x.shape), 0, 3)),
    "mse_loss": lambda L, x, R: F(L).mse_loss(x, R.leaf(x.shape)),
    "smooth_l1_loss": lambda L, x, R: F(L).smooth_l1_loss(x, R.const(x.shape), beta=0.5),
    "huber_loss": lambda L, x, R: F(L).huber_loss(x, R.const(x.shape), reduction="none", delta=0.7),
    "binary_cross_entropy": lambda L, x, R: F(L).binary_cross_entropy(x.sigmoid(), R.const(x.shape, 0, 1)),
    "bce_with_logits": lambda L, x, R: F(L).binary_cross_entropy_with_logits(x, R.const(x.shape, 0, 1)),
    "bce_with_logits_full": lambda L, x, R: F(L).binary_cross_entropy_with_logits(
        x, R.const(x.shape, 0, 1), pos_weight=R.const((x.shape[1],), 0.5, 2), reduction="sum"),
    "kl_div": lambda L, x, R: F(L).kl_div(x.log_softmax(1), R.const(x.shape, 0.1, 1), reduction="batchmean"),
    # ordering, layout and sparse ops scripts use (issue 18); ties broken first: their order is torch's choice
    "sort": lambda L, x, R: L.sort(_distinct(L, x), dim=1).values,
    "sort_stable": lambda L, x, R: _distinct(L, x).sort(dim=0, descending=True, stable=True)[0],
    "topk": lambda L, x, R: L.topk(_distinct(L, x), min(2, x.shape[1]), dim=1).values,
    "roll": lambda L, x, R: L.roll(x, (1, -1), (0, 1)),
    "diag_embed": lambda L, x, R: L.diag(x[0], 1),
    "sparse_mm": lambda L, x, R: L.spmm(L.sparse_coo_tensor(
        L.stack([R.ints((5,), 0, 3), R.ints((5,), 0, x.shape[0])]), R.leaf((5,)), (3, x.shape[0])), x),
    # layers (issue 19); the fused cell rows against torch's gate formulas, with x as the input gates
    "lstm_cell": lambda L, x, R: _lstm_cell(L, x.repeat(1, 4), R.leaf((x.shape[0], 4 * x.shape[1])),
                                            R.leaf(tuple(x.shape))),
    "lstm_layer": lambda L, x, R: _lstm_layer(L, L.stack([x.repeat(1, 4), x.repeat(1, 4) * 0.5]),
                                              R.leaf(tuple(x.shape)), R.leaf(tuple(x.shape)),
                                              R.leaf((4 * x.shape[1], x.shape[1]))),
    "gru_layer": lambda L, x, R: _gru_layer(L, L.stack([x.repeat(1, 3), x.repeat(1, 3) * 0.5]),
                                            R.leaf(tuple(x.shape)), R.leaf((3 * x.shape[1], x.shape[1])),
                                            R.leaf((3 * x.shape[1],))),
    "rnn_layer": lambda L, x, R: _rnn_layer(L, L.stack([x, x * 0.5]), R.leaf(tuple(x.shape)),
                                            R.leaf((x.shape[1], x.shape[1])), R.leaf((x.shape[1],))),
    # (nn.RNN's batch_first output: the transpose under torch's in-place name)
    "transpose_": lambda L, x, R: x.transpose(0, 1) if L is torch else _transpose_as_in_place(x, 0, 1),
    "gru_cell": lambda L, x, R: _gru_cell(L, x.repeat(1, 3), R.leaf((x.shape[0], 3 * x.shape[1])),
                                          R.leaf(tuple(x.shape))),
    "conv": lambda L, x, R: F(L).conv1d(x.unsqueeze(0), R.leaf((2, x.shape[0], 2)), R.leaf((2,)), padding=1),
    "max_pool": lambda L, x, R: F(L).max_pool1d(x.unsqueeze(0), 2, 1, 1),
    # gelu of 512+ elements is its own compiled row; sdpa's 4-d unmasked path is one row
    "gelu_compiled": lambda L, x, R: F(L).gelu(x.repeat(512, 1))[::512],
    "sdpa": lambda L, x, R: F(L).scaled_dot_product_attention(x[None, None], R.leaf((1, 1) + tuple(x.shape)),
                                                              R.leaf((1, 1) + tuple(x.shape)), is_causal=True)[0, 0],
    "layer_norm": lambda L, x, R: F(L).layer_norm(x, (x.shape[1],), R.leaf((x.shape[1],)), R.leaf((x.shape[1],))),
    "batch_norm": lambda L, x, R: F(L).batch_norm(L.cat([x, x * 0.5 + 1]), None, None, R.leaf((x.shape[1],)),
                                                  R.leaf((x.shape[1],)), training=True),
    "im2col": lambda L, x, R: F(L).unfold(x[None, None], 2, padding=1),
    "col2im": lambda L, x, R: F(L).fold(F(L).unfold(x[None, None], 2, padding=1), tuple(x.shape), 2, padding=1),
    "upsample_nearest2d": lambda L, x, R: F(L).interpolate(x[None, None], scale_factor=2)[0, 0],
    "upsample_nearest1d": lambda L, x, R: F(L).interpolate(x[None], scale_factor=1.5)[0],
    "_upsample_nearest_exact2d": lambda L, x, R: F(L).interpolate(x[None, None], size=(3, 5), mode="nearest-exact"),
    "_upsample_nearest_exact1d": lambda L, x, R: F(L).interpolate(x[None], size=3, mode="nearest-exact")[0],
    "upsample_bilinear2d": lambda L, x, R: F(L).interpolate(x[None, None], size=(3, 5), mode="bilinear")[0, 0],
    "upsample_linear1d": lambda L, x, R: F(L).interpolate(x[None], size=5, mode="linear", align_corners=True)[0],
    "adaptive_max_pool": lambda L, x, R: F(L).adaptive_max_pool2d(_distinct(L, x)[None], (2, 2))[0],
    "max_unpool": lambda L, x, R: F(L).max_unpool2d(
        *F(L).max_pool2d(_distinct(L, x)[None, None], (1, min(2, x.shape[1])), return_indices=True),
        (1, min(2, x.shape[1])), output_size=tuple(x.shape))[0, 0],
    "pixel_shuffle": lambda L, x, R: L.pixel_shuffle(x.repeat(4, 1).reshape((4,) + tuple(x.shape)), 2)[0],
    "pixel_unshuffle": lambda L, x, R: L.pixel_unshuffle(x.repeat(2, 2)[None], 2).reshape(4 * x.shape[0], -1),
    "embedding_bag": lambda L, x, R: F(L).embedding_bag(R.ints((5,), 0, x.shape[0]), x, L.tensor([0, 2, 2]),
                                                        mode="sum", per_sample_weights=R.leaf((5,))),
    "embedding_bag_max": lambda L, x, R: F(L).embedding_bag(R.ints((2, 3), 0, x.shape[0]), _distinct(L, x),
                                                            mode="max"),
    "conv3d": lambda L, x, R: F(L).conv3d(x[None, None, None], R.leaf((2, 1, 1, 1, 2)), R.leaf((2,)),
                                          padding=(0, 0, 1)),
    "avg_pool2d": lambda L, x, R: F(L).avg_pool2d(x[None], (1, 2), 1, (0, 1)),
    "adaptive_avg_pool2d": lambda L, x, R: F(L).adaptive_avg_pool2d(x[None], (2, 2))[0],
    "adaptive_avg_pool3d": lambda L, x, R: F(L).interpolate(x[None, None, None], size=(1, 2, 2), mode="area"),
    "upsample_nearest3d": lambda L, x, R: F(L).interpolate(x[None, None, None], scale_factor=2),
    "_upsample_nearest_exact3d": lambda L, x, R: F(L).interpolate(x[None, None, None], size=(2, 3, 5),
                                                                  mode="nearest-exact"),
    "upsample_bicubic2d": lambda L, x, R: F(L).interpolate(x[None, None], size=(3, 5), mode="bicubic")[0, 0],
    "upsample_trilinear3d": lambda L, x, R: F(L).interpolate(x[None, None, None], size=(2, 3, 5), mode="trilinear"),
    "_upsample_bilinear2d_aa": lambda L, x, R: F(L).interpolate(x[None, None], size=(2, 3), mode="bilinear",
                                                                antialias=True),
    "_upsample_bicubic2d_aa": lambda L, x, R: F(L).interpolate(x[None, None], size=(2, 3), mode="bicubic",
                                                               antialias=True),
    "_upsample_lanczos2d_aa": lambda L, x, R: F(L).interpolate(x[None, None], size=(2, 3), mode="lanczos",
                                                               antialias=True),
    "channel_shuffle": lambda L, x, R: F(L).channel_shuffle(x.repeat(2, 1)[None], 2)[0],
    "constant_pad_nd": lambda L, x, R: F(L).pad(x, (1, 2), value=0.5),
    "reflection_pad1d": lambda L, x, R: F(L).pad(x[None], (min(1, x.shape[1] - 1), 0), mode="reflect")[0],
    "reflection_pad2d": lambda L, x, R: F(L).pad(x[None], (min(1, x.shape[1] - 1), 0, min(1, x.shape[0] - 1), 0),
                                                 mode="reflect")[0],
    "reflection_pad3d": lambda L, x, R: F(L).pad(x[None, None], (min(1, x.shape[1] - 1), 0, 0, min(1, x.shape[0] - 1),
                                                                 0, 0), mode="reflect")[0, 0],
    "replication_pad1d": lambda L, x, R: F(L).pad(x[None], (1, 2), mode="replicate")[0],
    "replication_pad2d": lambda L, x, R: F(L).pad(x[None], (1, 2, 2, 1), mode="replicate")[0],
    "replication_pad3d": lambda L, x, R: F(L).pad(x[None, None], (1, 2, 2, 1, 1, 0), mode="replicate")[0, 0],
    "prelu": lambda L, x, R: F(L).prelu(x, R.leaf((x.shape[1],))),
    "hardswish": lambda L, x, R: F(L).hardswish(x * 4),
    "mish": lambda L, x, R: F(L).mish(x * 2),
    "glu": lambda L, x, R: F(L).glu(x.repeat(1, 2), 1),
    "group_norm": lambda L, x, R: F(L).group_norm(L.cat([x, x * 0.5 + 1])[None], 1, R.leaf((2 * x.shape[0],)),
                                                  R.leaf((2 * x.shape[0],)))[0],
    "norm_dim": lambda L, x, R: F(L).pairwise_distance(x, R.const(x.shape)),
    # autograd
    "function": lambda L, x, R: _custom_function(L).apply(x)[0],
    "function_output": lambda L, x, R: _custom_function(L).apply(x)[1],
    "double_backward": _double_backward,
}
# the op areas' cases, one module each (tests/reliability/properties_*.py: CASES, as above, and NOT_RECORDED,
# an op no case can record -> the test that covers it)
_AREAS = [importlib.import_module(path.stem)
          for path in sorted(pathlib.Path(__file__).parent.glob("properties_*.py"))]
for _area in _AREAS:
    CASES.update(_area.CASES)
CASE_NAMES = sorted(CASES)


def _distinct(L, x):
    """x with its ties broken (a ramp far below the spacing of distinct values)."""
    return x + L.arange(x.numel(), dtype=x.dtype).reshape(x.shape) * 1e-6
NOT_RECORDED_BY_CASES = {"leaf", "const", "freed",   # tape rows, not ops
                         # a number operand, which torch.maximum, minimum and atan2 refuse (as tapegrad's front-ends
                         # now do: tests/ops/test_number_operands_round9.py); the rows stay declared with their rules
                         "maximum_ts", "maximum_st", "minimum_ts", "minimum_st", "atan2_ts", "atan2_st",
                         "atan2_ts_backward", "atan2_st_backward",
                         "delayed_error",            # once_differentiable: tests/ of autograd.function
                         "compiled", "traced_rule",  # tapegrad.compile's rows: tests/test_trace.py
                         # an in-place write through a view: tests/reliability/test_views_inplace.py
                         "copy_slices", "copy_slices_view", "as_strided", "as_strided_view",
                         "traced_compare", "traced_draw", "traced_value",  # its comparisons, draws: tests/test_compile_guards.py
                         # no second derivative (torch has none): tests/nn/test_ctc_loss.py
                         "ctc_loss", "ctc_loss_backward",
                         # its weight's gradient is a sparse COO tensor: tests/test_embedding_sparse.py
                         "embedding_sparse",
                         # smm, hspmm, spdiags: no derivative, as torch (backward raises): tests/test_sparse_coo_more.py
                         "no_derivative",
                         # the dense operand's gradient is sparse, as torch's: tests/test_sparse_coo_more.py
                         "sparse_mul_dense",
                         # declared for every binary op, but a commutative op's front-end records c op x
                         # as x op c (the _ts row): these are never recorded
                         "add_st", "mul_st", "maximum_st", "minimum_st"}
for _area in _AREAS:
    NOT_RECORDED_BY_CASES |= set(getattr(_area, "NOT_RECORDED", {}))


def to2d(t):
    if t.ndim == 0:
        return t.reshape(1, 1)
    if t.ndim == 1:
        return t.unsqueeze(0)
    return t.reshape(-1, t.shape[-1])


def run_program(lib, x0, steps):
    """Apply the cases; return the final 2-D value, and all leaves (x0's first)."""
    leaves = []
    x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
    leaves.append(x)
    for name, seed in steps:
        out = CASES[name](lib, x, Draw(lib, seed, leaves))
        x = to2d(out)
        if x.numel() == 0 or x.numel() > 4096:
            break
    return x, leaves


def compare(steps, x0, rtol=1e-9, atol=1e-11):
    try:
        th_out, th_leaves = run_program(torch, x0, steps)
    except Exception as e:  # a program torch refuses (a view of an expanded tensor): tapegrad's error must be torch's
        with pytest.raises(type(e)) as refused:
            run_program(tapegrad, x0, steps)
        assert str(refused.value) == str(e), steps
        return
    tg_out, tg_leaves = run_program(tapegrad, x0, steps)
    np.testing.assert_allclose(tg_out.detach().numpy(), th_out.detach().numpy(), rtol=rtol, atol=atol,
                               equal_nan=True, err_msg=f"values of {steps}")
    if not th_out.requires_grad:
        assert not tg_out.requires_grad
        return
    cot = np.random.default_rng(7).uniform(-1, 1, tuple(th_out.shape))
    (tg_out * tapegrad.tensor(cot)).sum().backward()
    (th_out * torch.tensor(cot)).sum().backward()
    assert len(tg_leaves) == len(th_leaves)
    for k, (a, b) in enumerate(zip(tg_leaves, th_leaves)):
        if b.grad is None:
            assert a.grad is None or not np.any(a.grad.numpy()), f"leaf {k} of {steps}"
        else:
            assert a.grad is not None, f"leaf {k} of {steps} has no gradient"
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"gradient of leaf {k} of {steps}")


# float32 on the way (cast) or piecewise ops (ties, kinks) make exact agreement a matter of rounding
LOOSE = {"cast": 1e-6}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_each_case_agrees_with_torch(name):
    for shape in ((3, 4), (1, 1), (4, 1), (2, 5)):
        x0 = np.random.default_rng(sum(map(ord, name)) + shape[1]).uniform(-1, 1, shape)
        compare([(name, 11)], x0, rtol=LOOSE.get(name, 1e-9))


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(CASE_NAMES), st.integers(0, 2 ** 16)), min_size=2, max_size=4),
       m=st.integers(1, 4), n=st.integers(1, 5), seed=st.integers(0, 2 ** 16))
def test_random_programs_agree_with_torch(steps, m, n, seed):
    x0 = np.random.default_rng(seed).uniform(-1, 1, (m, n))
    compare(steps, x0, rtol=max([LOOSE.get(s, 1e-8) for s, _ in steps]), atol=1e-10)


def test_every_registry_op_is_covered():
    """Each op in registry.OPS is recorded by some case (an op added later without one fails here)."""
    seen = set()
    old = getattr(tape_mod._local, "tape", None)
    tape_mod._local.tape = tape = tape_mod.Tape()
    tape.sweep_at = 1 << 60  # no sweep moves rows while ops are collected,
    tape.cut_dead_tail = lambda: None  # and no row whose tensor died (max_dim's indices) is cut before it is seen
    for name in CASE_NAMES:
        n0 = tape.n
        with_shape = np.random.default_rng(0).uniform(-1, 1, (3, 4))
        out, leaves = run_program(tapegrad, with_shape, [(name, 1)])
        seen |= {registry.OPS[o].name for o in tape.op[n0: tape.n].tolist()}
        if out.requires_grad:
            out.sum().backward(create_graph=True)  # create_graph records the backward's ops too
            seen |= {registry.OPS[o].name for o in tape.op[n0: tape.n].tolist()}
    tape_mod._local.tape = old
    missing = sorted(op.name for op in registry.OPS if op.name not in seen | NOT_RECORDED_BY_CASES)
    assert missing == [], f"registry ops with no case in {__file__}: {missing}"


# -- the algebra of backward ------------------------------------------------------------------------------
def _graph(seed):
    g = np.random.default_rng(seed)
    x = tapegrad.tensor(g.uniform(-1, 1, (3, 4)), requires_grad=True)
    w = tapegrad.tensor(g.uniform(-1, 1, (4, 2)), requires_grad=True)
    y = ((x @ w).tanh() * x[:, :2]).softmax(1) + x.sum(1, keepdim=True)
    return x, w, y


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 16), a=st.floats(-3, 3), b=st.floats(-3, 3))
def test_vjp_is_linear_in_the_cotangent(seed, a, b):
    x, w, y = _graph(seed)
    g = np.random.default_rng(seed + 1)
    u, v = g.uniform(-1, 1, (2, 3, 2))
    vjp = lambda c: tapegrad.autograd.grad(y, (x, w), tapegrad.tensor(c), retain_graph=True)  # noqa: E731
    combined = vjp(a * u + b * v)
    for got, gu, gv in zip(combined, vjp(u), vjp(v)):
        np.testing.assert_allclose(got.numpy(), a * gu.numpy() + b * gv.numpy(), rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), k=st.integers(2, 5))
def test_k_retained_backwards_give_k_times_one(seed, k):
    x, w, y = _graph(seed)
    for _ in range(k):
        y.sum().backward(retain_graph=True)
    x1, w1, y1 = _graph(seed)
    y1.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), k * x1.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), k * w1.grad.numpy(), rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
def test_backward_after_zero_grad_equals_the_first(seed):
    x, w, y = _graph(seed)
    y.sum().backward(retain_graph=True)
    first = x.grad.numpy().copy(), w.grad.numpy().copy()
    x.grad.zero_()
    w.grad.zero_()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), first[0])
    np.testing.assert_array_equal(w.grad.numpy(), first[1])


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(CASE_NAMES), st.integers(0, 2 ** 16)), min_size=1, max_size=3))
def test_backward_truncates_the_tape_to_its_length_before_the_graph(steps):
    """backward frees the graph's rows and cuts them off, with the constants registered while it was
    recorded; leaves registered then keep their rows (below them, freed rows stay, without values, until
    a sweep). Once the tensors are gone, a sweep returns the tape to its length before the graph."""
    tape = tape_mod.Tape()
    old = getattr(tape_mod._local, "tape", None)
    tape_mod._local.tape = tape
    try:
        x = tapegrad.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
        c = tapegrad.tensor(np.ones(4))
        before = x * c  # x's and c's rows, and a graph that stays
        n0 = tape.n
        assert n0 == 3
        y = x
        leaves = []
        for name, seed in steps:
            y = to2d(CASES[name](tapegrad, y, Draw(tapegrad, seed, leaves)))
            if y.numel() == 0 or y.numel() > 4096:
                break
        if y.requires_grad:
            y.sum().backward()
            y = None
            dead = [r for r in range(n0, tape.n) if tape.flags[r] & tape_mod.F_DEAD]
            assert all(tape.values[r] is None for r in dead), "a freed row keeps its value"
            left = [r for r in range(n0, tape.n) if r not in dead and tape.op[r] != tape_mod.OP_CONST]
            if not leaves and not left:  # nothing the backward did not need (a split's other piece, a
                assert tape.n == n0, (steps, tape.dump(file=io.StringIO()))  # retained graph) is left
            leaves = None
            tape.sweep()
            assert tape.n == n0, (steps, tape.dump(file=io.StringIO()))
        assert before.requires_grad
    finally:
        tape_mod._local.tape = old
