"""Bad arguments to conv1d/2d/3d, avg/max pooling (1-d, 2-d) and adaptive average/max pooling (1-d, 2-d) raise
torch 2.13's exception type and message, from torch's checks in torch's order (round 9); and the inputs torch
accepts there (integer convolutions, no input channels) give torch's values and shapes."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg


def t(L, *shape, dtype=None):
    a = np.random.default_rng(0).standard_normal(shape)
    return L.tensor(a, dtype=dtype or L.float32)


def F(L):
    return L.nn.functional


def conv(nd):
    return lambda L: getattr(F(L), f"conv{nd}d")


def pool(name):
    return lambda L: getattr(F(L), name)


CASES = {}


def _conv_cases(nd):
    if True:  # (one call per nd: the lambdas close over its locals)
        cv = conv(nd)
        X, W = (1, 2) + (5,) * nd, (4, 2) + (3,) * nd
        X2 = (2, 2) + (5,) * nd  # (float32, a batch of 2: torch's oneDNN backend and its messages)
        sp = X[2:]
        cases = {
            # dtypes: the bias against the input first; then, the shapes checked, the weight (the CPU kernels')
            "bias_long_double": lambda L: cv(L)(t(L, *X).long(), t(L, *W).long(), t(L, 4, dtype=L.float64)),
            "bias_double_bad_rank": lambda L: cv(L)(t(L, 2, 2), t(L, *W), t(L, 4, dtype=L.float64)),
            "input_long_weight_float": lambda L: cv(L)(t(L, *X).long(), t(L, *W)),
            "input_double_weight_float": lambda L: cv(L)(t(L, *X, dtype=L.float64), t(L, *W)),
            "input_half_weight_float": lambda L: cv(L)(t(L, *X).half(), t(L, *W)),
            "weight_double": lambda L: cv(L)(t(L, *X), t(L, *W, dtype=L.float64)),
            "weight_double_batch2": lambda L: cv(L)(t(L, *X2), t(L, *W, dtype=L.float64)),
            "weight_long_batch2": lambda L: cv(L)(t(L, *X2), t(L, *W).long()),
            "weight_bool_batch2": lambda L: cv(L)(t(L, *X2), t(L, *W).bool()),
            "weight_double_dilated": lambda L: cv(L)(t(L, 1, 2, *(7,) * nd), t(L, *W, dtype=L.float64), dilation=2),
            "bool": lambda L: cv(L)(t(L, *X).bool(), t(L, *W).bool()),
            "bool_dilated": lambda L: cv(L)(t(L, 1, 2, *(7,) * nd).bool(), t(L, *W).bool(), dilation=2),
            "int_dilated": lambda L: cv(L)(t(L, 1, 2, *(7,) * nd).int(), t(L, *W).int(), dilation=2),
            "weight_double_bad_channels": lambda L: cv(L)(t(L, 1, 3, *sp), t(L, *W, dtype=L.float64)),
            # check_shape_forward's order: padding, stride, dilation, ranks, groups, channels, bias, kernel
            "negative_padding_bad_channels": lambda L: cv(L)(t(L, 1, 3, *sp), t(L, *W), padding=-1),
            "negative_padding_stride0": lambda L: cv(L)(t(L, *X), t(L, *W), stride=0, padding=-1),
            "negative_dilation": lambda L: cv(L)(t(L, *X), t(L, *W), dilation=-1),
            "dilation0": lambda L: cv(L)(t(L, *X), t(L, *W), dilation=0),
            "dilation0_batch2": lambda L: cv(L)(t(L, *X2), t(L, *W), dilation=0),
            "groups_above_out_channels": lambda L: cv(L)(t(L, 1, 10, *sp), t(L, *W), groups=5),
            "no_out_channels": lambda L: cv(L)(t(L, *X), t(L, 0, 2, *W[2:])),
            "bad_channels_unbatched": lambda L: cv(L)(t(L, 3, *sp), t(L, *W)),
            "weight_rank_high": lambda L: cv(L)(t(L, *X), t(L, *W, 1)),
            "weight_rank_low": lambda L: cv(L)(t(L, *X), t(L, *W[:-1])),
            "weight_rank_high_negative_padding": lambda L: cv(L)(t(L, *X), t(L, *W, 1), padding=-1),
            "weight_rank2": lambda L: cv(L)(t(L, *X), t(L, 4, 2)),
            "kernel0": lambda L: cv(L)(t(L, *X), t(L, 4, 2, *(2,) * (nd - 1), 0)),
            "kernel0_dilated": lambda L: cv(L)(t(L, *X), t(L, 4, 2, *(2,) * (nd - 1), 0), dilation=2),
            "kernel0_batch2": lambda L: cv(L)(t(L, *X2), t(L, 4, 2, *(2,) * (nd - 1), 0)),
            "empty_spatial_padded": lambda L: cv(L)(t(L, 1, 2, *(0,) * nd), t(L, *W), padding=2),
            # the parameters' lengths, against the weight's rank
            "stride_length": lambda L: cv(L)(t(L, *X), t(L, *W), stride=(1,) * (nd + 1)),
            "padding_length": lambda L: cv(L)(t(L, *X), t(L, *W), padding=(1,) * (nd + 1)),
            "dilation_length": lambda L: cv(L)(t(L, *X), t(L, *W), dilation=(1,) * (nd + 1)),
            "stride_empty": lambda L: cv(L)(t(L, *X), t(L, *W), stride=()),
            # padding='same'
            "same_stride0": lambda L: cv(L)(t(L, *X), t(L, *W), stride=0, padding="same"),
            "same_dilation0": lambda L: cv(L)(t(L, *X), t(L, *W), dilation=0, padding="same"),
            "same_weight_rank": lambda L: cv(L)(t(L, *X), t(L, *W[:-1]), padding="same"),
            "same_stride_length": lambda L: cv(L)(t(L, *X), t(L, *W), padding="same", stride=(1,) * (nd + 1)),
            "same_even_kernel_bad_channels": lambda L: cv(L)(t(L, 1, 3, *sp), t(L, 4, 2, *(4,) * nd),
                                                            padding="same"),
        }
        for name, fn in cases.items():
            CASES[f"conv{nd}d_{name}"] = fn


def _pool_cases(nd, kind):
    if True:
        if True:
            fn = pool(f"{kind}_pool{nd}d")
            X = (1, 2) + (6,) * nd
            cases = {
                "negative_padding": lambda L: fn(L)(t(L, *X), 2, padding=-1),
                "negative_padding_empty_batch": lambda L: fn(L)(t(L, 0, 1, 49), 2, stride=50, padding=-1),
                "big_padding_empty_batch": lambda L: fn(L)(t(L, 0, 1, 49), 2, stride=50, padding=4),
                "big_padding": lambda L: fn(L)(t(L, *X), 2, padding=2),
                "big_padding_rank5": lambda L: fn(L)(t(L, 2, 2, 2, 2, 2), 2, padding=2),
                "rank0": lambda L: fn(L)(L.tensor(1.0), 2),
                "rank1": lambda L: fn(L)(t(L, 6), 2),
                "rank5": lambda L: fn(L)(t(L, 1, 1, 1, 6, 6), 2),
                "empty_spatial": lambda L: fn(L)(t(L, 1, 2, *(0,) * nd), 1),
                "empty_channel": lambda L: fn(L)(t(L, 1, 0, *(6,) * nd), 2),
                "empty_unbatched": lambda L: fn(L)(t(L, 0, *(6,) * nd), 2),
                "kernel0": lambda L: fn(L)(t(L, *X), 0),
                "kernel_too_big": lambda L: fn(L)(t(L, *X), 8),
                "kernel_length": lambda L: fn(L)(t(L, *X), (2,) * (nd + 1)),
                "stride_length": lambda L: fn(L)(t(L, *X), 2, (2,) * (nd + 1)),
                "padding_length": lambda L: fn(L)(t(L, *X), 2, 2, (1,) * (nd + 1)),
                "kernel_empty": lambda L: fn(L)(t(L, *X), ()),
                "bool": lambda L: fn(L)(t(L, *X).bool(), 2),
            }
            if kind == "max":
                cases.update({
                    "negative_padding_dilation0": lambda L: fn(L)(t(L, *X), 2, padding=-1, dilation=0),
                    "dilated_kernel_too_big": lambda L: fn(L)(t(L, *X), 3, dilation=3),
                    "big_padding_dilated": lambda L: fn(L)(t(L, *X), 2, padding=2, dilation=2),
                    "kernel0_empty_spatial": lambda L: fn(L)(t(L, 1, 2, *(0,) * nd), 0),
                    "kernel_too_big_indices": lambda L: fn(L)(t(L, *X), 8, return_indices=True),
                })
                if nd == 1:
                    cases["long"] = lambda L: fn(L)(t(L, *X).long(), 2)
            elif nd == 2:
                cases["divisor0_rank1"] = lambda L: fn(L)(t(L, 6), 2, divisor_override=0)
            for name, f in cases.items():
                CASES[f"{kind}_pool{nd}d_{name}"] = f


def _adaptive_cases(nd, kind):
    if True:
        if True:
            fn = pool(f"adaptive_{kind}_pool{nd}d")
            X = (1, 2) + (6,) * nd
            cases = {
                "empty_tuple": lambda L: fn(L)(t(L, *X), ()),
                "three_sizes": lambda L: fn(L)(t(L, *X), (2, 2, 2)),
                "negative": lambda L: fn(L)(t(L, *X), -1),
                "negative_and_zero": lambda L: fn(L)(t(L, 1, 1, *(1,) * nd), (-1, 0) if nd == 2 else (-1,)),
                "rank2_pair": lambda L: fn(L)(t(L, 2, 2), (2, 2)),
                "rank0": lambda L: fn(L)(L.tensor(1.0), 2),
                "rank5": lambda L: fn(L)(t(L, 1, 1, 1, 4, 4), 2),
                "empty_spatial": lambda L: fn(L)(t(L, 1, 2, *(0,) * nd), 2),
                "long": lambda L: fn(L)(t(L, *X).long(), 2),
                "bool": lambda L: fn(L)(t(L, *X).bool(), 2),
                "negative_rank2": lambda L: fn(L)(t(L, 2, 2), -1),
                "empty_tuple_rank2": lambda L: fn(L)(t(L, 2, 2), ()),
                "negative_empty_spatial": lambda L: fn(L)(t(L, 1, 2, *(0,) * nd), -1),
            }
            if nd == 1:
                cases["two_sizes"] = lambda L: fn(L)(t(L, *X), (2, 2))
                cases["none_size"] = lambda L: fn(L)(t(L, *X), None)
                cases["none"] = lambda L: fn(L)(t(L, *X), (None,))
            if kind == "max":
                cases["empty_channel"] = lambda L: fn(L)(t(L, 1, 0, *(4,) * nd), 2)
            for name, f in cases.items():
                CASES[f"adaptive_{kind}_pool{nd}d_{name}"] = f


for _nd in (1, 2, 3):
    _conv_cases(_nd)
for _nd in (1, 2):
    for _kind in ("avg", "max"):
        _pool_cases(_nd, _kind)
        _adaptive_cases(_nd, _kind)
# the cases both libraries already agreed on before round 9 (kept in the tables, which mirror torch's checks, but
# not run: each case run here failed before it)
SKIP = {
    "adaptive_avg_pool2d_empty_spatial", "adaptive_avg_pool2d_rank0", "adaptive_avg_pool2d_rank5",
    "adaptive_max_pool1d_empty_tuple", "adaptive_max_pool1d_empty_tuple_rank2", "adaptive_max_pool1d_negative",
    "adaptive_max_pool1d_negative_and_zero", "adaptive_max_pool1d_negative_rank2", "adaptive_max_pool1d_rank0",
    "adaptive_max_pool1d_rank2_pair", "adaptive_max_pool1d_rank5", "adaptive_max_pool1d_three_sizes",
    "adaptive_max_pool1d_two_sizes", "adaptive_max_pool2d_empty_channel", "adaptive_max_pool2d_empty_spatial",
    "adaptive_max_pool2d_empty_tuple", "adaptive_max_pool2d_empty_tuple_rank2", "adaptive_max_pool2d_negative",
    "adaptive_max_pool2d_negative_and_zero", "adaptive_max_pool2d_negative_empty_spatial",
    "adaptive_max_pool2d_negative_rank2", "adaptive_max_pool2d_rank0", "adaptive_max_pool2d_rank2_pair",
    "adaptive_max_pool2d_rank5", "adaptive_max_pool2d_three_sizes", "avg_pool1d_big_padding",
    "avg_pool1d_big_padding_empty_batch", "avg_pool2d_big_padding", "avg_pool2d_empty_channel",
    "avg_pool2d_empty_spatial", "avg_pool2d_empty_unbatched", "avg_pool2d_kernel_too_big",
    "conv1d_input_double_weight_float", "conv1d_input_half_weight_float", "conv1d_kernel0",
    "conv1d_negative_dilation", "conv1d_same_weight_rank", "conv1d_weight_double",
    "conv1d_weight_double_bad_channels", "conv1d_weight_double_dilated", "conv1d_weight_rank2",
    "conv1d_weight_rank_low", "conv2d_input_double_weight_float", "conv2d_input_half_weight_float",
    "conv2d_kernel0", "conv2d_negative_dilation", "conv2d_weight_double", "conv2d_weight_double_bad_channels",
    "conv2d_weight_double_dilated", "conv2d_weight_rank2", "conv3d_bad_channels_unbatched",
    "conv3d_dilation0_batch2", "conv3d_weight_double_bad_channels", "conv3d_weight_double_batch2",
    "max_pool1d_kernel0", "max_pool2d_big_padding", "max_pool2d_big_padding_dilated",
    "max_pool2d_big_padding_rank5", "max_pool2d_dilated_kernel_too_big", "max_pool2d_empty_channel",
    "max_pool2d_empty_spatial", "max_pool2d_empty_unbatched", "max_pool2d_kernel0", "max_pool2d_kernel_too_big",
    "max_pool2d_kernel_too_big_indices", "max_pool2d_rank0", "max_pool2d_rank1", "max_pool2d_rank5"}


def _raised(fn, L):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as info:
            fn(L)
    return info.value


@pytest.mark.parametrize("name", sorted(n for n in CASES if n not in SKIP))
def test_error_matches_torch(name):
    want, got = _raised(CASES[name], torch), _raised(CASES[name], tg)
    assert type(got).__name__ == type(want).__name__, f"tapegrad: {got!r}; torch: {want!r}"
    assert str(got).splitlines()[0] == str(want).splitlines()[0]


ACCEPTED = {
    # integer convolutions (torch's CPU kernels take them; only floating outputs carry gradients)
    "conv1d_long": lambda L: F(L).conv1d(t(L, 2, 3, 9).mul(3).long(), t(L, 4, 3, 3).mul(3).long(),
                                         t(L, 4).mul(3).long(), padding=1),
    "conv2d_long_groups": lambda L: F(L).conv2d(t(L, 1, 4, 6, 5).mul(3).long(), t(L, 6, 2, 3, 2).mul(3).long(),
                                                stride=(2, 1), groups=2),
    "conv2d_long_dilated": lambda L: F(L).conv2d(t(L, 1, 2, 7, 7).mul(3).long(), t(L, 3, 2, 3, 3).mul(3).long(),
                                                 dilation=2),
    "conv2d_int": lambda L: F(L).conv2d(t(L, 1, 2, 7, 7).mul(3).int(), t(L, 3, 2, 3, 3).mul(3).int()),
    "conv1d_long_unbatched_same": lambda L: F(L).conv1d(t(L, 2, 8).mul(3).long(), t(L, 2, 2, 4).mul(3).long(),
                                                        padding="same"),
    # no input channels: no output channels (torch's Empty backend)
    "conv2d_no_channels": lambda L: F(L).conv2d(t(L, 1, 0, 5, 5), t(L, 4, 0, 3, 3)),
    "conv1d_no_channels_bias": lambda L: F(L).conv1d(t(L, 2, 0, 5), t(L, 4, 0, 3), t(L, 4)),
    "conv3d_empty_batch_dilation0": lambda L: F(L).conv3d(t(L, 0, 2, 4, 4, 4), t(L, 3, 2, 2, 2, 2), dilation=0),
    # adaptive average pooling of no channels (only the planes must be non-empty)
    "adaptive_avg_pool2d_no_channels": lambda L: F(L).adaptive_avg_pool2d(t(L, 1, 0, 4, 4), 2),
    "adaptive_avg_pool2d_empty_unbatched": lambda L: F(L).adaptive_avg_pool2d(t(L, 0, 4, 4), 2),
    "adaptive_avg_pool1d_no_channels": lambda L: F(L).adaptive_avg_pool1d(t(L, 1, 0, 4), 2),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_like_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = ACCEPTED[name](torch), ACCEPTED[name](tg)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
