"""The grad_fn a layer op's output shows (y.grad_fn.name()) against torch 2.13's, op by op: each equal, or listed
in DIFFERENT with the reason, and checked to still differ as written there (a change either way shows here)."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

R = np.random.default_rng(19)


def A(*shape):
    return R.standard_normal(shape).astype(np.float32)


def _labels(L):
    return L.tensor(np.sign(np.arange(4.0) - 1.5).astype(np.float32))


# name: (function of (F, lib, *tensors), arrays); every array becomes a tensor that requires grad
CASES = {
    "conv1d": (lambda F, L, x, w: F.conv1d(x, w), [A(2, 3, 8), A(4, 3, 3)]),
    "conv1d_unbatched": (lambda F, L, x, w: F.conv1d(x, w), [A(3, 8), A(4, 3, 3)]),
    "conv2d": (lambda F, L, x, w, b: F.conv2d(x, w, b, padding=1), [A(2, 3, 6, 6), A(4, 3, 3, 3), A(4)]),
    "conv2d_unbatched": (lambda F, L, x, w: F.conv2d(x, w), [A(3, 6, 6), A(4, 3, 3, 3)]),
    "conv3d": (lambda F, L, x, w: F.conv3d(x, w), [A(1, 2, 4, 4, 4), A(3, 2, 2, 2, 2)]),
    "conv3d_bias": (lambda F, L, x, w, b: F.conv3d(x, w, b, padding=1), [A(1, 2, 3, 3, 3), A(3, 2, 2, 2, 2), A(3)]),
    "conv3d_unbatched": (lambda F, L, x, w: F.conv3d(x, w), [A(2, 3, 3, 3), A(3, 2, 2, 2, 2)]),
    "conv_transpose1d": (lambda F, L, x, w: F.conv_transpose1d(x, w), [A(2, 3, 8), A(3, 4, 3)]),
    "conv_transpose1d_unbatched": (lambda F, L, x, w: F.conv_transpose1d(x, w), [A(3, 8), A(3, 4, 3)]),
    "conv_transpose2d": (lambda F, L, x, w: F.conv_transpose2d(x, w), [A(2, 3, 5, 5), A(3, 4, 3, 3)]),
    "conv_transpose2d_unbatched": (lambda F, L, x, w: F.conv_transpose2d(x, w), [A(3, 5, 5), A(3, 4, 3, 3)]),
    "conv2d_reflect": (lambda F, L, x: L.nn.Conv2d(3, 2, 3, padding=1, padding_mode="reflect")(x), [A(1, 3, 5, 5)]),
    "max_pool1d": (lambda F, L, x: F.max_pool1d(x, 2), [A(2, 3, 8)]),
    "max_pool1d_unbatched": (lambda F, L, x: F.max_pool1d(x, 2), [A(3, 8)]),
    "max_pool2d": (lambda F, L, x: F.max_pool2d(x, 2), [A(2, 3, 8, 8)]),
    "max_pool2d_unbatched": (lambda F, L, x: F.max_pool2d(x, 2), [A(3, 8, 8)]),
    "avg_pool1d": (lambda F, L, x: F.avg_pool1d(x, 2), [A(2, 3, 8)]),
    "avg_pool1d_unbatched": (lambda F, L, x: F.avg_pool1d(x, 3, 2, 1), [A(3, 8)]),
    "avg_pool2d": (lambda F, L, x: F.avg_pool2d(x, 2), [A(2, 3, 8, 8)]),
    "avg_pool2d_unbatched": (lambda F, L, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), [A(3, 8, 8)]),
    "adaptive_avg_pool1d": (lambda F, L, x: F.adaptive_avg_pool1d(x, 3), [A(2, 3, 8)]),
    "adaptive_avg_pool2d": (lambda F, L, x: F.adaptive_avg_pool2d(x, 3), [A(2, 3, 8, 8)]),
    "adaptive_max_pool1d": (lambda F, L, x: F.adaptive_max_pool1d(x, 3), [A(2, 3, 8)]),
    "adaptive_max_pool2d": (lambda F, L, x: F.adaptive_max_pool2d(x, 3), [A(2, 3, 8, 8)]),
    "max_unpool1d": (lambda F, L, x: F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2), [A(2, 3, 8)]),
    "max_unpool2d": (lambda F, L, x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2), [A(2, 3, 8, 8)]),
    "batch_norm": (lambda F, L, x, w, b: F.batch_norm(x, None, None, w, b, training=True), [A(4, 3, 5), A(3), A(3)]),
    "layer_norm": (lambda F, L, x, w, b: F.layer_norm(x, (5,), w, b), [A(4, 3, 5), A(5), A(5)]),
    "group_norm": (lambda F, L, x, w, b: F.group_norm(x, 2, w, b), [A(2, 4, 5), A(4), A(4)]),
    "group_norm_no_affine": (lambda F, L, x: F.group_norm(x, 4), [A(2, 4, 3, 3)]),
    "group_norm_module": (lambda F, L, x: L.nn.GroupNorm(2, 4)(x), [A(2, 4, 5)]),
    "instance_norm": (lambda F, L, x: F.instance_norm(x), [A(2, 4, 5)]),
    "rms_norm": (lambda F, L, x, w: F.rms_norm(x, (5,), w), [A(2, 4, 5), A(5)]),
    "pad_constant": (lambda F, L, x: F.pad(x, (1, 2)), [A(2, 4, 5)]),
    "pad_negative": (lambda F, L, x: F.pad(x, (-1, 2), value=3.0), [A(2, 4, 5)]),
    "pad_reflect1d": (lambda F, L, x: F.pad(x, (1, 2), mode="reflect"), [A(2, 4, 5)]),
    "pad_reflect2d": (lambda F, L, x: F.pad(x, (1, 2, 1, 1), mode="reflect"), [A(2, 4, 5, 5)]),
    "pad_reflect3d": (lambda F, L, x: F.pad(x, (1, 2, 1, 1, 1, 0), mode="reflect"), [A(1, 2, 3, 4, 5)]),
    "pad_replicate1d": (lambda F, L, x: F.pad(x, (1, 2), mode="replicate"), [A(2, 4, 5)]),
    "pad_replicate2d": (lambda F, L, x: F.pad(x, (1, 2, 1, 1), mode="replicate"), [A(2, 4, 5, 5)]),
    "pad_replicate3d": (lambda F, L, x: F.pad(x, (1, 2, 1, 1, 1, 0), mode="replicate"), [A(1, 2, 3, 4, 5)]),
    "pad_circular": (lambda F, L, x: F.pad(x, (1, 2), mode="circular"), [A(2, 4, 5)]),
    "unfold": (lambda F, L, x: F.unfold(x, 2), [A(2, 3, 5, 5)]),
    "fold": (lambda F, L, x: F.fold(x, (5, 5), 2), [A(2, 12, 16)]),
    "pixel_shuffle": (lambda F, L, x: F.pixel_shuffle(x, 2), [A(1, 8, 2, 3)]),
    "pixel_unshuffle": (lambda F, L, x: F.pixel_unshuffle(x, 2), [A(1, 2, 4, 6)]),
    "interpolate_nearest": (lambda F, L, x: F.interpolate(x, scale_factor=2), [A(1, 2, 3, 4)]),
    "interpolate_bilinear": (lambda F, L, x: F.interpolate(x, size=(5, 7), mode="bilinear"), [A(1, 2, 3, 4)]),
    "interpolate_bicubic": (lambda F, L, x: F.interpolate(x, size=(5, 7), mode="bicubic"), [A(1, 2, 3, 4)]),
    "interpolate_trilinear": (lambda F, L, x: F.interpolate(x, size=(3, 5, 7), mode="trilinear"), [A(1, 2, 2, 3, 4)]),
    "interpolate_area": (lambda F, L, x: F.interpolate(x, size=(2, 2), mode="area"), [A(1, 2, 4, 4)]),
    "interpolate_aa": (lambda F, L, x: F.interpolate(x, size=(2, 3), mode="bilinear", antialias=True), [A(1, 2, 5, 7)]),
    "dropout1d": (lambda F, L, x: F.dropout1d(x, 0.5), [A(2, 3, 5)]),
    "dropout2d": (lambda F, L, x: F.dropout2d(x, 0.5), [A(2, 3, 5, 5)]),
    "prelu": (lambda F, L, x, w: F.prelu(x, w), [A(2, 3, 5), A(3)]),
    "hardswish": (lambda F, L, x: F.hardswish(x), [A(2, 3, 5)]),
    "mish": (lambda F, L, x: F.mish(x), [A(2, 3, 5)]),
    "glu": (lambda F, L, x: F.glu(x), [A(2, 4, 6)]),
    "cosine_similarity": (lambda F, L, a, b: F.cosine_similarity(a, b), [A(3, 4), A(3, 4)]),
    "pairwise_distance": (lambda F, L, a, b: F.pairwise_distance(a, b), [A(3, 4), A(3, 4)]),
    "pairwise_distance_p1_module": (lambda F, L, a, b: L.nn.PairwiseDistance(p=1.0, keepdim=True)(a, b),
                                    [A(3, 4), A(3, 4)]),
    "norm_dim": (lambda F, L, a: a.norm(dim=1), [A(3, 4)]),
    "bilinear": (lambda F, L, a, b, w: F.bilinear(a, b, w), [A(3, 4), A(3, 2), A(5, 4, 2)]),
    "bilinear_bias": (lambda F, L, a, b, w, c: F.bilinear(a, b, w, c), [A(3, 4), A(3, 2), A(5, 4, 2), A(5)]),
    "channel_shuffle": (lambda F, L, x: F.channel_shuffle(x, 2), [A(2, 4, 5)]),
    "channel_shuffle_module": (lambda F, L, x: L.nn.ChannelShuffle(3)(x), [A(2, 6, 2, 2)]),
    "softmax2d": (lambda F, L, x: L.nn.Softmax2d()(x), [A(2, 4, 5, 3)]),
    "embedding_bag": (lambda F, L, w: F.embedding_bag(L.tensor([1, 2, 3]), w, L.tensor([0, 1])), [A(5, 3)]),
    "sdpa": (lambda F, L, q, k, v: F.scaled_dot_product_attention(q, k, v), [A(2, 3, 4), A(2, 3, 4), A(2, 3, 4)]),
    "multihead_attention": (lambda F, L, x: L.nn.MultiheadAttention(4, 2)(x, x, x)[0], [A(3, 2, 4)]),
    "lstm_cell": (lambda F, L, x: L.nn.LSTMCell(4, 3)(x)[0], [A(2, 4)]),
    "gru_cell": (lambda F, L, x: L.nn.GRUCell(4, 3)(x), [A(2, 4)]),
    "lstm_cell_c": (lambda F, L, x: L.nn.LSTMCell(4, 3)(x)[1], [A(2, 4)]),
    "lstm_cell_unbatched": (lambda F, L, x: L.nn.LSTMCell(4, 3)(x)[0], [A(4)]),
    "gru_cell_unbatched": (lambda F, L, x: L.nn.GRUCell(4, 3)(x), [A(4)]),
    "rnn_cell": (lambda F, L, x: L.nn.RNNCell(4, 3)(x), [A(2, 4)]),
    "margin_ranking_loss": (lambda F, L, a, b: F.margin_ranking_loss(a, b, _labels(L)), [A(4), A(4)]),
    "triplet_margin_loss": (lambda F, L, a, b, c: F.triplet_margin_loss(a, b, c), [A(3, 4), A(3, 4), A(3, 4)]),
    "poisson_nll_loss": (lambda F, L, a, b: F.poisson_nll_loss(a, b), [A(3, 4), A(3, 4)]),
    "huber_loss": (lambda F, L, a, b: F.huber_loss(a, b, delta=0.5), [A(3, 4), A(3, 4)]),
    "huber_loss_none": (lambda F, L, a, b: F.huber_loss(a, b, reduction="none"), [A(3, 4), A(3, 4)]),
    "huber_loss_module": (lambda F, L, a, b: L.nn.HuberLoss(reduction="sum")(a, b), [A(3, 4), A(3, 4)]),
}

# tapegrad's name where it is not torch's, and why (each still checked against both)
DIFFERENT = {
    "pad_circular": ("IndexBackward0", "CopySlices", "one gather; torch's circular padding is slicing copies"),
}


def _name(lib, fn, arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib.nn.functional, lib, *ts)
    node = out.grad_fn
    return type(node).__name__ if lib is torch else node.name()


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_fn_name_is_torchs(name):
    fn, arrays = CASES[name]
    ours, theirs = _name(tg, fn, arrays), _name(torch, fn, arrays)
    if name in DIFFERENT:
        expect_ours, expect_theirs, why = DIFFERENT[name]
        assert (ours, theirs) == (expect_ours, expect_theirs), why
    else:
        assert ours == theirs
