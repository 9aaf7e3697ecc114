"""format_tensor must print exactly what repr(torch.Tensor) prints."""

import numpy as np
import pytest
import torch

from tapegrad._format import format_tensor

f32, f64, i64, i32, b = np.float32, np.float64, np.int64, np.int32, np.bool_
nan, inf = np.nan, np.inf


def _rng(seed):
    return np.random.default_rng(seed)


# (id, numpy array).  Every case is also checked with autograd suffixes when
# its dtype can require grad.
CASES = [
    # 0-d
    ("0d_int_valued", np.array(3.0, f32)),
    ("0d_frac", np.array(-0.1460, f32)),
    ("0d_large_int_valued", np.array(819200.0, f32)),
    ("0d_zero", np.array(0.0, f32)),
    ("0d_neg_zero", np.array(-0.0, f32)),
    ("0d_nan", np.array(nan, f32)),
    ("0d_neg_inf", np.array(-inf, f32)),
    ("0d_tiny", np.array(1e-5, f32)),
    ("0d_huge", np.array(1e10, f32)),
    ("0d_just_below_1e8", np.array(99999999.0, f64)),
    ("0d_f64", np.array(0.1, f64)),
    ("0d_int64", np.array(-7, i64)),
    ("0d_int32", np.array(12, i32)),
    ("0d_bool", np.array(True)),
    # 1-d, float styles
    ("squares", np.arange(4, dtype=f32) ** 2),
    ("fractions", np.array([1.5, -2.25, 0.125], f32)),
    ("ratio_just_1000", np.array([0.001, 1.0], f64)),
    ("ratio_over_1000", np.array([0.001, 1.5], f32)),
    ("min_below_1e-4", np.array([1e-5, 2e-5], f32)),
    ("min_f32_1e-4", np.array([1e-4, 2e-4], f32)),  # f32(1e-4) < 1e-4
    ("min_f64_1e-4", np.array([1e-4, 2e-4], f64)),
    ("tiny", np.array([1e-8, -2e-8, 3.5e-9], f32)),
    ("large", np.array([1e20, -3e21, 4e19], f64)),
    ("large_int_valued", np.array([1e9, 1.0], f32)),
    ("rounds_up_width", np.array([9.99996, 1.0], f32)),
    ("nan_inf_int_valued", np.array([1.0, nan, inf, -inf], f32)),
    ("nan_inf_frac", np.array([1.5, nan, -inf], f32)),
    ("nan_inf_sci", np.array([1e-7, nan, inf], f32)),
    ("all_nonfinite", np.array([nan, inf, -inf], f32)),
    ("all_zero", np.zeros(3, f32)),
    ("neg_zero_int_valued", np.array([-0.0, 0.0, 2.0], f32)),
    ("neg_zero_frac", np.array([-0.0, 1.5], f32)),
    ("neg_zero_sci", np.array([-0.0, 1e-6], f32)),
    ("f64", np.array([1.0, 2.0], f64)),
    ("f64_frac", np.array([0.1, 0.2, 0.3], f64)),
    ("int64", np.array([-5, 100, 3], i64)),
    ("int64_big", np.array([2**62, -(2**40), 0], i64)),
    ("int32", np.array([1, -2, 30000], i32)),
    ("bool", np.array([True, True])),
    ("bool_mixed", np.array([True, False, True])),
    # 2-d .. 4-d
    ("2d_rand", _rng(1).random((3, 3)).astype(f32)),
    ("2d_f64", _rng(2).standard_normal((4, 5))),
    ("2d_int", _rng(3).integers(-50, 50, (3, 4))),
    ("2d_bool", _rng(4).random((2, 3)) > 0.5),
    ("2d_sci", (_rng(5).standard_normal((2, 3)) * 1e5).astype(f32)),
    ("3d", _rng(6).standard_normal((2, 3, 4)).astype(f32)),
    ("3d_int_valued", np.arange(24, dtype=f32).reshape(2, 3, 4)),
    ("4d", _rng(7).standard_normal((2, 2, 2, 3)).astype(f32)),
    ("4d_int32", np.arange(36, dtype=i32).reshape(3, 2, 2, 3)),
    # empty
    ("empty", np.zeros((0,), f32)),
    ("empty_0x3", np.zeros((0, 3), f32)),
    ("empty_2x0", np.zeros((2, 0), f32)),
    ("empty_2x0x3", np.zeros((2, 0, 3), f32)),
    ("empty_int64", np.zeros((0,), i64)),
    ("empty_bool", np.zeros((0, 3), b)),
    ("empty_f64", np.zeros((0,), f64)),
    # line wrapping
    ("wrap_arange", np.arange(30, dtype=f32)),
    ("wrap_linspace", np.linspace(0, 1, 50).astype(f32)),
    ("wrap_randn", _rng(8).standard_normal(100).astype(f32)),
    ("wrap_sci_f64", _rng(9).standard_normal(40) * 1e6),
    ("wrap_int64", np.arange(200, dtype=i64)),
    ("wrap_bool", _rng(10).random(50) > 0.5),
    ("wrap_2d", _rng(11).standard_normal((3, 25)).astype(f32)),
    # summarized (> 1000 elements)
    ("sum_1001", np.arange(1001, dtype=f32)),
    ("sum_randn", _rng(12).standard_normal(2000).astype(f32)),
    ("sum_2d", _rng(13).standard_normal((40, 40)).astype(f32)),
    ("sum_2d_rows_kept", _rng(14).standard_normal((3, 500)).astype(f32)),
    ("sum_3d", _rng(15).standard_normal((20, 30, 4)).astype(f32)),
    ("sum_3d_all_dims", _rng(16).standard_normal((10, 10, 11))),
    ("sum_4d", _rng(17).standard_normal((8, 7, 5, 6)).astype(f32)),
    ("sum_4d_small_dims", _rng(18).standard_normal((6, 6, 6, 6)).astype(f32)),
    ("sum_int64", np.arange(-500, 1000, dtype=i64)),
    ("sum_bool", _rng(19).random(1001) > 0.5),
    # hidden extremes are outside the printed edges, so they must not count
    ("sum_hidden_outlier", np.concatenate([np.ones(3), [1e12] * 1000, np.ones(3)]).astype(f32)),
    ("sum_inner_outlier", np.where(np.arange(600) == 300, f32(1e-9), f32(0.5)) * np.ones((2, 1), f32)),
    # random from a fixed seed
    *[
        (f"rand_{i}", arr)
        for i, arr in enumerate(
            [
                _rng(100).standard_normal((5,)).astype(f32),
                (_rng(101).standard_normal((4, 4)) * 1e-3).astype(f32),
                _rng(102).uniform(-1e4, 1e4, (3, 3)).astype(f32),
                np.exp(_rng(103).uniform(-12, 12, (6,))).astype(f32),
                np.round(_rng(104).standard_normal((2, 5)) * 100).astype(f32),
                _rng(105).standard_normal((2, 3, 2)),
                _rng(106).integers(-(10**9), 10**9, (4, 3)),
                _rng(107).standard_normal(()).astype(f32),
            ]
        )
    ],
]


def torch_suffixes(t):
    """The caller-side suffixes, derived as torch._tensor_str._str_intern does."""
    if t.grad_fn is not None:
        return [f"grad_fn=<{type(t.grad_fn).__name__}>"]
    if t.requires_grad:
        return ["requires_grad=True"]
    return []


def check(t):
    got = format_tensor(
        t.detach().numpy(),
        str(t.dtype),
        t.dtype == torch.get_default_dtype(),
        torch_suffixes(t),
    )
    assert got == repr(t)


@pytest.mark.parametrize("arr", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_plain(arr):
    check(torch.from_numpy(arr.copy()))


FLOAT_CASES = [c for c in CASES if c[1].dtype.kind == "f"]


@pytest.mark.parametrize("arr", [c[1] for c in FLOAT_CASES], ids=[c[0] for c in FLOAT_CASES])
def test_requires_grad(arr):
    check(torch.from_numpy(arr.copy()).requires_grad_())


@pytest.mark.parametrize("arr", [c[1] for c in FLOAT_CASES], ids=[c[0] for c in FLOAT_CASES])
def test_grad_fn(arr):
    x = torch.from_numpy(arr.copy()).requires_grad_()
    check(x + 1)  # AddBackward0
    check(x * 2)  # MulBackward0


@pytest.mark.parametrize("width", [60, 66, 67, 68, 69, 70, 71, 72, 73, 74, 80])
def test_suffix_wrapping(width):
    # A one-line tensor whose length straddles where torch moves suffixes
    # onto their own line.
    n = (width - len("tensor([])")) // 4
    arr = np.full(n, 7.0, f32)  # each element "7., " is 4 characters
    t = torch.from_numpy(arr).requires_grad_()
    check(t)
    check(t + 1)
    check(torch.from_numpy(arr.astype(f64)).requires_grad_())
    check(torch.from_numpy(arr.astype(f64)).requires_grad_() * 3)


def test_explicit_strings():
    # Literal examples, independent of torch, so regressions read clearly.
    assert format_tensor(np.arange(4, dtype=f32) ** 2, "torch.float32", True,
                         ["grad_fn=<MulBackward0>"]) == "tensor([0., 1., 4., 9.], grad_fn=<MulBackward0>)"
    assert format_tensor(np.array(-0.1460, f32), "torch.float32", True,
                         ["requires_grad=True"]) == "tensor(-0.1460, requires_grad=True)"
    assert format_tensor(np.array(819200.0, f32), "torch.float32", True, []) == "tensor(819200.)"
    assert format_tensor(np.array([1.0, 2.0]), "torch.float64", False, []) == \
        "tensor([1., 2.], dtype=torch.float64)"
    assert format_tensor(np.zeros((0, 3), f32), "torch.float32", True, []) == "tensor([], size=(0, 3))"
    assert format_tensor(np.array([True, True]), "torch.bool", False, []) == "tensor([True, True])"
