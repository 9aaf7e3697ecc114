"""Convolution, pooling, normalization and channel dropout against torch 2.13: values, gradients (float32 and
float64), second order, state_dicts both ways, reprs and errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tapegrad as tg
import tapegrad.nn.functional as GF

RNG = np.random.default_rng(19)

# name: (function of (F, *tensors), input shapes)
CASES = {
    "conv2d": (lambda F, x, w, b: F.conv2d(x, w, b), [(2, 3, 7, 6), (4, 3, 3, 2), (4,)]),
    "conv2d_nobias": (lambda F, x, w: F.conv2d(x, w), [(2, 3, 5, 5), (2, 3, 3, 3)]),
    "conv2d_stride_pad_dil": (lambda F, x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
                              [(2, 2, 9, 8), (3, 2, 3, 2), (3,)]),
    "conv2d_groups": (lambda F, x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2),
                      [(2, 4, 8, 7), (6, 2, 3, 3), (6,)]),
    "conv2d_depthwise": (lambda F, x, w: F.conv2d(x, w, padding=1, groups=3), [(1, 3, 5, 5), (3, 1, 3, 3)]),
    "conv2d_same_even": (lambda F, x, w, b: F.conv2d(x, w, b, padding="same", dilation=(1, 2)),
                         [(2, 2, 6, 7), (3, 2, 4, 2), (3,)]),
    "conv2d_valid": (lambda F, x, w: F.conv2d(x, w, padding="valid"), [(1, 2, 5, 5), (2, 2, 5, 5)]),
    "conv2d_unbatched": (lambda F, x, w, b: F.conv2d(x, w, b, padding=1), [(3, 6, 5), (2, 3, 3, 3), (2,)]),
    # 16 channels or more: im2col's columns made as rows (ops.conv._ROW_CHANNELS); the last case's samples take
    # two chunks of rows
    "conv2d_rows": (lambda F, x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
                    [(2, 16, 9, 8), (5, 16, 3, 2), (5,)]),
    "conv2d_rows_nobias": (lambda F, x, w: F.conv2d(x, w, padding=1), [(3, 20, 6, 7), (4, 20, 3, 3)]),
    "conv2d_rows_chunks": (lambda F, x, w, b: F.conv2d(x, w, b, padding=1), [(2, 256, 11, 11), (2, 256, 3, 3), (2,)]),
    # fewer output channels than input ones, stride 1, maps of 100 positions or more: tap by tap
    # (ops.conv._by_taps); padding past the kernel's reach crops g in the input's gradient
    "conv2d_taps": (lambda F, x, w, b: F.conv2d(x, w, b, padding=(2, 1), dilation=(1, 2)),
                    [(2, 6, 11, 12), (4, 6, 3, 2), (4,)]),
    "conv2d_taps_wide_pad": (lambda F, x, w: F.conv2d(x, w, padding=(3, 4)), [(2, 5, 10, 9), (2, 5, 3, 3)]),
    "conv2d_taps_same": (lambda F, x, w, b: F.conv2d(x, w, b, padding="same"), [(1, 3, 10, 13), (1, 3, 4, 5), (1,)]),
    "conv2d_taps_rows": (lambda F, x, w, b: F.conv2d(x, w, b, padding=4), [(1, 20, 12, 10), (16, 20, 9, 9), (16,)]),
    "conv2d_taps_1x1_unbatched": (lambda F, x, w: F.conv2d(x, w), [(7, 10, 11), (3, 7, 1, 1)]),
    "conv1d_taps": (lambda F, x, w, b: F.conv1d(x, w, b, padding=3, dilation=3), [(2, 5, 120), (2, 5, 3), (2,)]),
    "conv1d_rows": (lambda F, x, w, b: F.conv1d(x, w, b, padding=2), [(2, 16, 11), (3, 16, 5), (3,)]),
    "conv1d": (lambda F, x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2), [(2, 3, 11), (4, 3, 3), (4,)]),
    "conv1d_same_groups": (lambda F, x, w: F.conv1d(x, w, padding="same", groups=2), [(2, 4, 9), (4, 2, 4)]),
    "conv1d_unbatched": (lambda F, x, w: F.conv1d(x, w), [(3, 9), (2, 3, 3)]),
    "max_pool2d": (lambda F, x: F.max_pool2d(x, 2), [(2, 3, 8, 7)]),
    "max_pool2d_overlap": (lambda F, x: F.max_pool2d(x, 3, stride=1, padding=1), [(2, 2, 6, 5)]),
    "max_pool2d_dil_ceil": (lambda F, x: F.max_pool2d(x, (3, 2), stride=2, padding=1, dilation=(2, 1),
                                                      ceil_mode=True), [(1, 2, 9, 8)]),
    "max_pool2d_unbatched": (lambda F, x: F.max_pool2d(x, 2, 1), [(3, 5, 5)]),
    "max_pool1d": (lambda F, x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True), [(2, 3, 10)]),
    "avg_pool2d": (lambda F, x: F.avg_pool2d(x, 2), [(2, 3, 8, 6)]),
    "avg_pool2d_pad": (lambda F, x: F.avg_pool2d(x, 3, 2, 1), [(2, 2, 7, 8)]),
    "avg_pool2d_nopadcount_ceil": (lambda F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                                   [(2, 2, 8, 7)]),
    "avg_pool2d_divisor": (lambda F, x: F.avg_pool2d(x, 2, 1, divisor_override=3), [(1, 2, 5, 5)]),
    "avg_pool1d": (lambda F, x: F.avg_pool1d(x, 3, 2, 1, count_include_pad=False), [(2, 3, 9)]),
    "adaptive_avg_pool2d": (lambda F, x: F.adaptive_avg_pool2d(x, (3, 4)), [(2, 3, 7, 9)]),
    "adaptive_avg_pool2d_none": (lambda F, x: F.adaptive_avg_pool2d(x, (None, 2)), [(2, 3, 5, 5)]),
    "adaptive_avg_pool1d": (lambda F, x: F.adaptive_avg_pool1d(x, 4), [(2, 3, 10)]),
    "layer_norm": (lambda F, x, w, b: F.layer_norm(x, (4, 5), w, b), [(3, 4, 5), (4, 5), (4, 5)]),
    "layer_norm_plain": (lambda F, x: F.layer_norm(x, (6,), eps=1e-3), [(2, 3, 6)]),
    "batch_norm_train": (lambda F, x, w, b: F.batch_norm(x, None, None, w, b, training=True), [(4, 3, 5, 2), (3,), (3,)]),
    "batch_norm_1d": (lambda F, x: F.batch_norm(x, None, None, training=True, eps=1e-3), [(6, 4)]),
    "pad_constant": (lambda F, x: F.pad(x, (1, 2, -1, 1), value=1.5), [(2, 3, 4, 5)]),
    "pad_reflect": (lambda F, x: F.pad(x, (2, 1, 1, 3), mode="reflect"), [(2, 3, 4, 5)]),
    "pad_replicate": (lambda F, x: F.pad(x, (2, 3), mode="replicate"), [(3, 5)]),
    "pad_circular": (lambda F, x: F.pad(x, (1, 2, 3, 0), mode="circular"), [(1, 2, 4, 5)]),
    "pad_reflect_3d": (lambda F, x: F.pad(x, (1, 2, 0, 3, 2, 1), mode="reflect"), [(1, 2, 3, 4, 5)]),
    "pad_replicate_2d": (lambda F, x: F.pad(x, (3, 0, 1, 2), mode="replicate"), [(2, 3, 4)]),
    "pad_constant_crop": (lambda F, x: F.pad(x, (-1, 2, 0, -2), value=-0.5), [(2, 3, 4, 5)]),
    "group_norm": (lambda F, x, w, b: F.group_norm(x, 2, w, b), [(3, 4, 5, 2), (4,), (4,)]),
    "prelu": (lambda F, x, w: F.prelu(x, w), [(2, 3, 4), (3,)]),
    "hardswish": (lambda F, x: F.hardswish(x * 3), [(4, 5)]),
    "mish": (lambda F, x: F.mish(x), [(4, 5)]),
    "glu": (lambda F, x: F.glu(x, 1), [(3, 6, 2)]),
}


def _inputs(shapes, dtype):
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


def _run(lib, F, fn, arrays, proj=None):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(F, *ts)
    if proj is None:
        return out, ts
    (out * lib.tensor(proj)).sum().backward()
    return out, ts


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name, dtype, rtol):
    fn, shapes = CASES[name]
    arrays = _inputs(shapes, dtype)
    theirs, th_in = _run(torch, TF, fn, arrays)
    proj = RNG.standard_normal(tuple(theirs.shape)).astype(dtype)
    (theirs * torch.tensor(proj)).sum().backward()
    ours, tg_in = _run(tg, GF, fn, arrays, proj)
    atol = rtol * 10
    assert tuple(ours.shape) == tuple(theirs.shape) and repr(ours.dtype) == repr(theirs.dtype)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)
    for i, (a, b) in enumerate(zip(tg_in, th_in)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"input {i}")



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_statistics_of_offset_rows_against_float64(dtype):
    """The forward's statistics are one float64 pass shifted by each row's first element: rows far from zero
    (float64: an offset of 1e4, a spread of 1e-2; float32, whose affine is computed in float32 as torch's is:
    300 and 1), an outlier first, a constant row, against float64 torch on the same values."""
    offset, spread = (1e4, 1e-2) if dtype == np.float64 else (300.0, 1.0)
    x = (offset + spread * RNG.standard_normal((64, 96))).astype(dtype)
    x[1, 0] = offset + 5000 * spread  # an outlier first
    x[2] = x[2, 0]                    # a constant row: variance 0
    x[3, :10] = -3 * offset
    w, b = RNG.standard_normal(96).astype(dtype), RNG.standard_normal(96).astype(dtype)
    tx, tw, tb = (torch.tensor(a.astype(np.float64)) for a in (x, w, b))
    want = TF.layer_norm(tx, (96,), tw, tb).numpy()
    got = GF.layer_norm(tg.tensor(x), (96,), tg.tensor(w), tg.tensor(b)).numpy()
    tol = 1e-4 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("rows, width", [(3001, 96), (6, 60001)])
@pytest.mark.parametrize("wanted", ["x", "w", "b", "xwb"])
def test_layer_norm_gradients_of_many_rows_against_float64(wanted, rows, width):
    """The backward adds its weight and bias terms in blocks of rows in float32 before float64 totals take them,
    sums each row in float32 (as torch does), and skips the input's gradient when it is not wanted: 3,001 rows (a
    partial last block), and rows of 60,001 (long float32 sums), against float64 torch."""
    x, w, b, proj = (RNG.standard_normal(s).astype(np.float32) for s in ((rows, width), (width,), (width,),
                                                                         (rows, width)))
    x += 3.0  # (an offset, as activations have: the centred terms must not lose it)
    exact = [torch.tensor(a.astype(np.float64), requires_grad=True) for a in (x, w, b)]
    (TF.layer_norm(exact[0], (width,), exact[1], exact[2]) * torch.tensor(proj.astype(np.float64))).sum().backward()
    ours = [tg.tensor(a, requires_grad=name in wanted) for a, name in zip((x, w, b), "xwb")]
    (GF.layer_norm(ours[0], (width,), ours[1], ours[2]) * tg.tensor(proj)).sum().backward()
    for t, e, name in zip(ours, exact, "xwb"):
        if name not in wanted:
            assert t.grad is None
            continue
        want = e.grad.numpy()
        assert t.grad.dtype == tg.float32
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=0, atol=2e-6 * np.abs(want).max(), err_msg=name)

SECOND_ORDER = ["conv2d", "conv2d_groups", "conv2d_taps", "conv1d", "max_pool2d_overlap", "avg_pool2d_pad", "layer_norm",
                "batch_norm_train", "pad_reflect", "group_norm", "mish", "glu"]


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if "_taps" in n])
@pytest.mark.parametrize("wanted", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("route", ["blas", "numpy", "unshifted"])
def test_taps_cases_take_the_tap_path_and_any_subset_of_gradients(name, wanted, route, monkeypatch):
    """The cases named *_taps run ops.conv's tap-by-tap path each way (not im2col's columns), also when only
    the input's or only the weight's gradient is wanted; by BLAS's gemm adding into the output, by NumPy's matmul
    where NumPy has no bundled OpenBLAS, and with the weight's gradient tap by tap where g laid at every tap's
    offset would be too large a buffer."""
    from tapegrad import kernels
    from tapegrad.ops import conv as conv_ops
    if route == "numpy":
        monkeypatch.setattr(kernels.module("blas"), "gemm", lambda dtype: None)
    elif route == "unshifted":
        monkeypatch.setattr(conv_ops, "_SHIFTED_BYTES", 0)
    calls = []
    for fname in ("_conv_taps_forward", "_conv_taps_arrays"):
        real = getattr(conv_ops, fname)
        monkeypatch.setattr(conv_ops, fname, lambda *a, _real=real, _n=fname: calls.append(_n) or _real(*a))
    fn, shapes = CASES[name]
    arrays = _inputs(shapes, np.float64)
    flags = list(wanted) + [True] * (len(arrays) - 2)
    th = [torch.tensor(a, requires_grad=f) for a, f in zip(arrays, flags)]
    ours = [tg.tensor(a, requires_grad=f) for a, f in zip(arrays, flags)]
    proj = RNG.standard_normal(tuple(fn(TF, *th).shape))
    (fn(TF, *th) * torch.tensor(proj)).sum().backward()
    (fn(GF, *ours) * tg.tensor(proj)).sum().backward()
    assert calls == ["_conv_taps_forward", "_conv_taps_arrays"]
    for a, b, f in zip(ours, th, flags):
        assert (a.grad is None) == (not f)
        if f:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_matches_torch(name):
    """grad of (sum of squares of the first gradients) with respect to every input, create_graph=True."""
    fn, shapes = CASES[name]
    arrays = _inputs(shapes, np.float64)
    results = []
    for lib, F in ((torch, TF), (tg, GF)):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(F, *ts)
        proj = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        grads = lib.autograd.grad((out * out * proj).sum(), ts, create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), ts, allow_unused=True)
        results.append([None if s is None else s.detach().numpy() for s in second])
    for i, (b, a) in enumerate(zip(*results)):
        if b is None:
            assert a is None or not np.any(a), i
        else:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9, err_msg=f"input {i}")


def test_max_pool_indices_match_torch():
    x = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)
    x[0, 0, :3, :3] = 1.0  # ties: the first maximum, as torch
    kw = dict(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True, return_indices=True)
    a, ia = GF.max_pool2d(tg.tensor(x), **kw)
    b, ib = TF.max_pool2d(torch.tensor(x), **kw)
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    assert repr(ia.dtype) == repr(ib.dtype)
    allneg = np.full((1, 1, 5, 5), -np.inf, np.float32)  # every window's index: its first in-bounds tap
    kw = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(GF.max_pool2d(tg.tensor(allneg), **kw)[1].numpy(),
                                  TF.max_pool2d(torch.tensor(allneg), **kw)[1].numpy())
    m, n = tg.nn.MaxPool1d(2, return_indices=True), torch.nn.MaxPool1d(2, return_indices=True)
    np.testing.assert_array_equal(m(tg.tensor(x[0]))[1].numpy(), n(torch.tensor(x[0]))[1].numpy())


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1),
                                dict(kernel_size=(3, 2), stride=2, dilation=(2, 1), padding=1, ceil_mode=True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_nan_inf_and_ties_match_torch(kw, dtype):
    """Windows inside the plane take a pass without branches that leaves NaN out and runs a window that has one
    again (torch: a NaN wins, the last one when there are several); ties go to the first tap; -inf and inf."""
    x = RNG.standard_normal((2, 3, 10, 9)).astype(dtype)
    flat = x.reshape(-1)
    flat[RNG.integers(0, flat.size, 12)] = np.nan
    flat[RNG.integers(0, flat.size, 12)] = np.inf
    flat[RNG.integers(0, flat.size, 12)] = -np.inf
    x[1, 2, :4, :4] = 0.5  # ties
    x[0, 1, 2:4, 2:4] = np.nan  # windows of several NaN
    a, ia = GF.max_pool2d(tg.tensor(x), return_indices=True, **kw)
    b, ib = TF.max_pool2d(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(a.numpy(), b.numpy())  # (NaN where torch has NaN)
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())


# -- modules ---------------------------------------------------------------------------------------------------------
MODULES = [
    ("Conv2d", (1, 6, 5), {}),
    ("Conv2d", (4, 6, (3, 2)), dict(stride=2, padding=1, dilation=(2, 1), groups=2, bias=False)),
    ("Conv2d", (2, 4, 3), dict(padding="same")),
    ("Conv1d", (2, 4, 3), dict(padding="same")),
    ("Conv1d", (3, 6, 2), dict(stride=2, groups=3)),
    ("MaxPool2d", (2,), {}),
    ("MaxPool2d", (3, 1, 1, 2, False, True), {}),
    ("MaxPool1d", (2,), {}),
    ("AvgPool2d", (2,), {}),
    ("AvgPool2d", (3, 2, 1, True, False, 2), {}),
    ("AvgPool1d", (2,), {}),
    ("AdaptiveAvgPool2d", ((2, 3),), {}),
    ("AdaptiveAvgPool1d", (3,), {}),
    ("BatchNorm2d", (3,), {}),
    ("BatchNorm1d", (3,), dict(affine=False, track_running_stats=False)),
    ("BatchNorm1d", (3,), dict(momentum=None)),
    ("LayerNorm", (4,), {}),
    ("LayerNorm", ((3, 4),), dict(elementwise_affine=False)),
    ("LayerNorm", (4,), dict(bias=False)),
    ("Dropout2d", (), {}),
    ("Conv2d", (2, 4, 3), dict(padding=1, padding_mode="reflect")),
    ("Conv1d", (2, 4, 4), dict(padding="same", padding_mode="circular")),
    ("GroupNorm", (2, 4), {}),
    ("GroupNorm", (2, 4), dict(affine=False)),
    ("PReLU", (3,), {}),
    ("Hardswish", (), {}),
    ("Mish", (), {}),
    ("GLU", (1,), {}),
    ("Dropout1d", (0.2,), {}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MODULES)])
def test_module_repr_parameters_and_state_dict_keys(name, args, kwargs):
    ours, theirs = getattr(tg.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (ka, a), (kb, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert tuple(a.shape) == tuple(b.shape) and repr(a.dtype) == repr(b.dtype), ka


def _twin(name, *args, **kwargs):
    theirs = getattr(torch.nn, name)(*args, **kwargs).double()
    ours = getattr(tg.nn, name)(*args, **kwargs).double()
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("name,args,shape", [("BatchNorm2d", (3,), (4, 3, 5, 5)), ("BatchNorm1d", (3,), (5, 3)),
                                             ("BatchNorm1d", (3,), (5, 3, 4))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_running_stats_train_and_eval(name, args, shape, momentum):
    ours, theirs = _twin(name, *args, momentum=momentum)
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5), theirs.bias.uniform_(-1, 1)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    for step in range(3):
        x = RNG.standard_normal(shape) * 2 + step
        a, b = ours(tg.tensor(x, requires_grad=True)), theirs(torch.tensor(x, requires_grad=True))
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-10)
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-12, err_msg=k)
    ours.eval(), theirs.eval()
    x = RNG.standard_normal(shape)
    xa, xb = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a, b = ours(xa), theirs(xb)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    a.sum().backward(), b.sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), xb.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_state_dicts_load_both_ways():
    """A LeNet's state_dict from torch runs the same in tapegrad, and tapegrad's loads back into torch."""
    def lenet(nn):
        return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(6, 16, 5), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.LayerNorm(400),
                             nn.Linear(400, 10))
    theirs, ours = lenet(torch.nn), lenet(tg.nn)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((3, 1, 28, 28)).astype(np.float32)
    np.testing.assert_allclose(ours(tg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    back = lenet(torch.nn)
    back.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    for k, v in back.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), ours.state_dict()[k].numpy(), err_msg=k)


def test_conv_init_draws_torch_values():
    torch.manual_seed(3), tg.manual_seed(3)
    a, b = tg.nn.Conv2d(3, 8, 3, groups=1), torch.nn.Conv2d(3, 8, 3)
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    np.testing.assert_array_equal(a.bias.detach().numpy(), b.bias.detach().numpy())


def test_dropout2d_masks_whole_channels_with_torch_scaling():
    x = np.ones((4, 8, 3, 3), np.float32)
    out = GF.dropout2d(tg.tensor(x), 0.5).numpy()
    per_channel = out.reshape(4, 8, -1)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))
    assert set(np.unique(out)) <= {0.0, 2.0} and 0 < (out == 0).sum() < out.size
    assert np.array_equal(GF.dropout1d(tg.tensor(x[0, :, :, 0]), 0.5, training=False).numpy(), x[0, :, :, 0])
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        GF.dropout1d(tg.tensor(x), 0.5)


# -- errors: torch's type and message, before any kernel runs ---------------------------------------------------------
ERRORS = [
    lambda F, T: F.conv2d(T(2, 3), T(6, 1, 5, 5)),
    lambda F, T: F.conv2d(T(1, 3, 32, 32), T(6, 1, 5, 5)),
    lambda F, T: F.conv2d(T(1, 1, 4, 4), T(6, 1, 5, 5)),
    lambda F, T: F.conv2d(T(1, 1, 4, 4), T(6, 1, 3, 3), stride=0),
    lambda F, T: F.conv2d(T(1, 1, 8, 8), T(6, 1, 3, 3), padding="same", stride=2),
    lambda F, T: F.conv2d(T(1, 1, 8, 8), T(6, 1, 3, 3), padding="foo"),
    lambda F, T: F.conv2d(T(1, 1, 8, 8), T(6, 1, 3, 3), padding=-1),
    lambda F, T: F.conv2d(T(1, 2, 8, 8), T(3, 1, 3, 3), groups=2),
    lambda F, T: F.conv1d(T(2, 3, 4, 5), T(3, 3, 3)),
    lambda F, T: F.conv1d(T(2, 3, 2), T(3, 3, 3)),
    lambda F, T: F.max_pool2d(T(1, 1, 4, 4), 5),
    lambda F, T: F.max_pool2d(T(1, 1, 4, 4), 2, padding=2),
    lambda F, T: F.max_pool2d(T(4, 4), 2),
    lambda F, T: F.avg_pool2d(T(1, 1, 4, 4), 2, padding=2),
    lambda F, T: F.layer_norm(T(2, 4), (3,)),
    lambda F, T: F.batch_norm(T(2, 4), None, None, training=True, weight=T(3)),
    lambda F, T: F.batch_norm(T(1, 3), None, None, training=True),
    lambda F, T: F.conv2d(T(1, 1, 4, 4), T(6, 1, 0, 3)),
    lambda F, T: F.conv1d(T(1, 1, 4), T(6, 1, 0)),
    lambda F, T: F.conv2d(T(1, 1, 4, 4), T(6, 1, 3, 3).double()),
    lambda F, T: F.conv2d(T(1, 1, 4, 4), T(6, 1, 3, 3), T(6).double()),
    lambda F, T: F.max_pool2d(T(1, 1, 4, 4), 0),
    lambda F, T: F.max_pool2d(T(1, 1, 4, 4), (2, 0), 1),
    lambda F, T: F.max_pool2d(T(1, 1, 4, 4), 2, dilation=0),
    lambda F, T: F.max_pool1d(T(1, 1, 4), 0, 1),
    lambda F, T: F.max_pool1d(T(1, 1, 4), 2, 0),
    lambda F, T: F.max_pool1d(T(1, 1, 4), 2, 1, dilation=0),
    lambda F, T: F.avg_pool2d(T(1, 1, 4, 4), 0, 1),
    lambda F, T: F.avg_pool2d(T(1, 1, 4, 4), 2, 0),
    lambda F, T: F.avg_pool1d(T(1, 1, 4), 0, 1),
    lambda F, T: F.max_pool2d(T(1, 0, 4, 4), 2),
    lambda F, T: F.pad(T(1, 2, 3, 3), (1,)),
    lambda F, T: F.pad(T(1, 2, 3, 3), (1, 1) * 5),
    lambda F, T: F.pad(T(1, 2, 3, 3), (1, 1), mode="reflect"),
    lambda F, T: F.pad(T(1, 2, 3, 3), (3, 3, 0, 0), mode="reflect"),
    lambda F, T: F.pad(T(1, 2, 3, 3), (4, 4, 0, 0), mode="circular"),
    lambda F, T: F.pad(T(1, 2, 3, 3), (1, 1), mode="foo"),
    lambda F, T: F.pad(T(1, 2, 3, 3), (-4, 0)),
    lambda F, T: F.pad(T(1, 2, 3, 3), (0, 0, -4, 2)),  # (torch narrows by each negative pad: 3 - 4 < 0)
    lambda F, T: F.pad(T(1, 2, 3, 4), (0, 4, 0, 3), mode="reflect"),  # (the last dim is checked first)
    lambda F, T: F.pad(T(1, 2, 3, 4), (0, 1, 0, 3), mode="reflect"),  # (Argument #6: the second dim from the end)
    lambda F, T: F.pad(T(1, 2, 3, 3), (1, 1, 1, 1), mode="reflect", value=1.0),
    lambda F, T: F.group_norm(T(2, 4, 3), 3),
    lambda F, T: F.group_norm(T(4), 2),
    lambda F, T: F.group_norm(T(1, 4, 1), 4),
    lambda F, T: F.group_norm(T(1, 3, 1), 2),
    lambda F, T: F.group_norm(T(2, 4, 3), 2, T(3)),
    lambda F, T: F.group_norm(T(2, 4, 3), 2, None, T(5)),
    lambda F, T: F.group_norm(T(2, 4, 3), 2, T(4), T(2, 2)),
    lambda F, T: F.glu(T(2, 3)),
    lambda F, T: F.prelu(T(2, 3), T(2)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    with pytest.raises(Exception) as theirs:
        ERRORS[i](TF, torch.randn)
    with pytest.raises(type(theirs.value)) as ours:
        ERRORS[i](GF, lambda *s: tg.tensor(RNG.standard_normal(s).astype(np.float32)))
    assert str(ours.value) == str(theirs.value)


MODULE_ERRORS = [
    lambda nn: nn.Conv2d(1, 2, 3, padding="same", stride=2),
    lambda nn: nn.Conv2d(3, 2, 3, groups=2),
    lambda nn: nn.BatchNorm2d(3)(nn.Identity()(_T(nn)(2, 3, 4))),
    lambda nn: nn.BatchNorm1d(3)(_T(nn)(2, 3, 4, 5)),
    lambda nn: nn.GroupNorm(3, 4),
]


def _T(nn):
    lib = torch if nn is torch.nn else tg
    return lambda *s: lib.tensor(RNG.standard_normal(s).astype(np.float32))


@pytest.mark.parametrize("i", range(len(MODULE_ERRORS)))
def test_module_errors_match_torch(i):
    with pytest.raises(Exception) as theirs:
        MODULE_ERRORS[i](torch.nn)
    with pytest.raises(type(theirs.value)) as ours:
        MODULE_ERRORS[i](tg.nn)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("mode,padding", [("reflect", 1), ("replicate", (2, 1)), ("circular", "same")])
def test_conv_padding_modes_match_torch(mode, padding):
    theirs = torch.nn.Conv2d(2, 3, (3, 4), padding=padding, padding_mode=mode).double()
    ours = tg.nn.Conv2d(2, 3, (3, 4), padding=padding, padding_mode=mode).double()
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((2, 2, 6, 7))
    xa, xb = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a, b = ours(xa), theirs(xb)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    (a * a).sum().backward(), (b * b).sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), xb.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("fn", [lambda F, T: F.max_pool2d(T(0, 2, 4, 4), 2), lambda F, T: F.avg_pool2d(T(0, 1, 4, 4), 2),
                                lambda F, T: F.conv2d(T(0, 1, 4, 4), T(3, 1, 3, 3))])
def test_an_empty_batch_gives_an_empty_result(fn):
    ours = fn(GF, lambda *s: tg.zeros(s))
    assert tuple(ours.shape) == tuple(fn(TF, lambda *s: torch.zeros(s)).shape)


def test_compile_replays_the_layers_and_matches_eager():
    """conv, max_pool, layer_norm and an eval-mode batch_norm are replayed (fullgraph: no fallback), with their
    backward, over steps that change the weights; a training batch_norm's running statistics are updated by each
    replay as eagerly."""
    def net():
        tg.manual_seed(0)
        bn = tg.nn.BatchNorm2d(4).eval()
        return tg.nn.Sequential(tg.nn.Conv2d(2, 4, 3, padding=1, groups=2), bn, tg.nn.ReLU(), tg.nn.MaxPool2d(2),
                                tg.nn.Flatten(),
                                tg.nn.LayerNorm(36), tg.nn.Linear(36, 3))
    calls = []
    traced, eager = net(), net()

    def f(x):
        calls.append(1)
        return traced(x).square().sum()
    compiled = tg.compile(f, fullgraph=True)
    for step in range(3):
        x = tg.tensor(RNG.standard_normal((5, 2, 6, 6)).astype(np.float32))
        losses = []
        for fn, m in ((compiled, traced), (lambda x: eager(x).square().sum(), eager)):
            loss = fn(x)
            loss.backward()
            with tg.no_grad():
                for p in m.parameters():
                    p -= 0.01 * p.grad
                    p.grad = None
            losses.append(loss.item())
        assert losses[0] == pytest.approx(losses[1], rel=1e-6)
    for a, b in zip(traced.parameters(), eager.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert len(calls) == 1
    stats = [[tg.zeros(2), tg.ones(2)] for _ in range(2)]  # a training batch_norm: each replay updates them
    train_bn = tg.compile(lambda x: tg.nn.functional.batch_norm(x, *stats[0], training=True).sum(), fullgraph=True)
    for _ in range(3):
        x = tg.tensor(RNG.standard_normal((3, 2)).astype(np.float32), requires_grad=True)
        train_bn(x), tg.nn.functional.batch_norm(x, *stats[1], training=True)
        for a, b in zip(*stats):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert train_bn.traces == 1


NN_GRAD = [  # (dims, input shape, weight shape, keyword arguments)
    (1, (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    (2, (2, 3, 7, 6), (4, 3, 3, 2), dict()),
    (2, (1, 2, 9, 8), (3, 2, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2))),
    (3, (1, 2, 5, 6, 5), (2, 2, 2, 3, 2), dict(stride=2, padding=1)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(NN_GRAD)))
def test_nn_grad_conv_input_and_weight(case, dtype):
    """torch.nn.grad.conv{1,2,3}d_input / _weight (the conv-bn fusion tutorial's): torch's values, and their
    gradients with respect to the weight, the input and the output gradient (second order)."""
    dims, xs, ws, kw = NN_GRAD[case]
    results = []
    for lib in (torch, tg):
        x = lib.tensor(_fixed(xs, dtype, 1), requires_grad=True)
        w = lib.tensor(_fixed(ws, dtype, 2), requires_grad=True)
        conv = getattr(lib.nn.functional, f"conv{dims}d")
        g = lib.tensor(_fixed(tuple(conv(x, w, None, **kw).shape), dtype, 3), requires_grad=True)
        gi = getattr(lib.nn.grad, f"conv{dims}d_input")(x.shape, w, g, **kw)
        gw = getattr(lib.nn.functional.grad, f"conv{dims}d_weight")(x, w.shape, g, **kw)
        second = lib.autograd.grad((gi * gi).sum() + (gw * gw).sum(), (w, g, x))
        results.append([t.detach().numpy() for t in (gi, gw, *second)])
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for a, b in zip(results[1], results[0]):
        np.testing.assert_allclose(a, b, **tol)


def _fixed(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)
