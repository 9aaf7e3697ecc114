"""Transposed convolution, unfold/fold, interpolate/Upsample, pixel (un)shuffle, adaptive max pooling and max
unpooling against torch 2.13: values, gradients (float32 and float64), second order, grad_fn names, state_dicts
both ways, reprs and errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tapegrad as tg
import tapegrad.nn.functional as GF

RNG = np.random.default_rng(1919)


def _unpool(F, x):
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    return F.max_unpool2d(out, idx, 2, output_size=x.shape[-2:])


def _unpool1d(F, x):
    out, idx = F.max_pool1d(x, 3, 2, 1, return_indices=True)
    return F.max_unpool1d(out, idx, 3, 2, 1)


# name: (function of (F, *tensors), input shapes, torch's grad_fn name)
CASES = {
    "conv_transpose2d": (lambda F, x, w, b: F.conv_transpose2d(x, w, b), [(2, 3, 5, 4), (3, 4, 3, 2), (4,)],
                         "ConvolutionBackward0"),
    "conv_transpose2d_stride_pad_outpad": (
        lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
        [(2, 3, 4, 5), (3, 2, 3, 3), (2,)], "ConvolutionBackward0"),
    "conv_transpose2d_groups_dilation": (
        lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 1), padding=(1, 0), output_padding=(1, 0),
                                              groups=2, dilation=(1, 2)),
        [(2, 4, 5, 6), (4, 3, 3, 2), (6,)], "ConvolutionBackward0"),
    "conv_transpose2d_outpad_below_dilation": (
        lambda F, x, w: F.conv_transpose2d(x, w, stride=1, dilation=2, output_padding=1, padding=2),
        [(1, 2, 4, 4), (2, 3, 3, 3)], "ConvolutionBackward0"),
    "conv_transpose2d_unbatched": (lambda F, x, w, b: F.conv_transpose2d(x, w, b, stride=3),
                                   [(3, 4, 4), (3, 2, 2, 2), (2,)], None),
    "conv_transpose1d": (lambda F, x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=2, output_padding=2,
                                                                dilation=2), [(2, 3, 7), (3, 2, 3), (2,)],
                         "ConvolutionBackward0"),
    "conv_transpose2d_double_bias": (lambda F, x, w, b: F.conv_transpose2d(x, w, b.double(), stride=2),
                                     [(1, 2, 3, 3), (2, 3, 2, 2), (3,)], "ConvolutionBackward0"),
    "conv_transpose1d_groups": (lambda F, x, w: F.conv_transpose1d(x, w, groups=3), [(2, 6, 5), (6, 1, 4)],
                                "ConvolutionBackward0"),
    "conv3d": (lambda F, x, w, b: F.conv3d(x, w, b), [(2, 3, 4, 5, 6), (4, 3, 2, 3, 2), (4,)], "ConvolutionBackward0"),
    "conv3d_stride_pad_dil_groups": (
        lambda F, x, w, b: F.conv3d(x, w, b, stride=(2, 1, 2), padding=(1, 2, 0), dilation=(2, 1, 1), groups=2),
        [(2, 4, 7, 5, 6), (6, 2, 2, 3, 3), (6,)], "ConvolutionBackward0"),
    "conv3d_same_even": (lambda F, x, w: F.conv3d(x, w, padding="same", dilation=(1, 2, 1)),
                         [(1, 2, 4, 5, 4), (3, 2, 2, 2, 3)], "ConvolutionBackward0"),
    "conv3d_unbatched": (lambda F, x, w: F.conv3d(x, w, stride=2, padding=1), [(2, 5, 5, 4), (3, 2, 3, 3, 3)],
                         "SqueezeBackward1"),
    "unfold": (lambda F, x: F.unfold(x, 3), [(2, 3, 5, 6)], "Im2ColBackward0"),
    "unfold_all_args": (lambda F, x: F.unfold(x, (2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 3)),
                        [(2, 2, 7, 8)], "Im2ColBackward0"),
    "unfold_unbatched": (lambda F, x: F.unfold(x, 2, stride=2), [(3, 4, 6)], "Im2ColBackward0"),
    "fold": (lambda F, x: F.fold(x, (5, 6), 2), [(2, 12, 20)], "Col2ImBackward0"),
    "fold_all_args": (lambda F, x: F.fold(x, (7, 8), (2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 3)),
                      [(2, 12, 16)], "Col2ImBackward0"),
    "fold_unbatched": (lambda F, x: F.fold(x, 4, 2, stride=2), [(8, 4)], "Col2ImBackward0"),
    "interpolate_nearest_scale2": (lambda F, x: F.interpolate(x, scale_factor=2), [(2, 3, 4, 5)],
                                   "UpsampleNearest2DBackward0"),
    "interpolate_nearest_size": (lambda F, x: F.interpolate(x, size=(7, 9)), [(2, 3, 4, 5)],
                                 "UpsampleNearest2DBackward0"),
    "interpolate_nearest_down": (lambda F, x: F.interpolate(x, size=(3, 2)), [(1, 2, 7, 5)],
                                 "UpsampleNearest2DBackward0"),
    "interpolate_nearest_scale_frac": (lambda F, x: F.interpolate(x, scale_factor=(1.7, 2.3)), [(2, 2, 5, 4)],
                                       "UpsampleNearest2DBackward0"),
    "interpolate_nearest_recompute": (lambda F, x: F.interpolate(x, scale_factor=1.7, recompute_scale_factor=True),
                                      [(2, 2, 5, 4)], "UpsampleNearest2DBackward0"),
    "interpolate_nearest_exact": (lambda F, x: F.interpolate(x, size=(7, 3), mode="nearest-exact"), [(2, 3, 4, 5)],
                                  "UpsampleNearestExact2DBackward0"),
    "interpolate_nearest1d": (lambda F, x: F.interpolate(x, scale_factor=2.5), [(2, 3, 4)],
                              "UpsampleNearest1DBackward0"),
    "interpolate_nearest_exact1d": (lambda F, x: F.interpolate(x, size=9, mode="nearest-exact"), [(2, 3, 4)],
                                    "UpsampleNearestExact1DBackward0"),
    "interpolate_linear": (lambda F, x: F.interpolate(x, size=9, mode="linear"), [(2, 3, 4)],
                           "UpsampleLinear1DBackward0"),
    "interpolate_linear_align": (lambda F, x: F.interpolate(x, scale_factor=2.5, mode="linear", align_corners=True),
                                 [(2, 3, 4)], "UpsampleLinear1DBackward0"),
    "interpolate_linear_down": (lambda F, x: F.interpolate(x, size=3, mode="linear"), [(2, 3, 8)],
                                "UpsampleLinear1DBackward0"),
    "interpolate_bilinear": (lambda F, x: F.interpolate(x, size=(7, 9), mode="bilinear"), [(2, 3, 4, 5)],
                             "UpsampleBilinear2DBackward0"),
    "interpolate_bilinear_scale": (lambda F, x: F.interpolate(x, scale_factor=(1.5, 2.5), mode="bilinear"),
                                   [(2, 3, 4, 5)], "UpsampleBilinear2DBackward0"),
    "interpolate_bilinear_align": (lambda F, x: F.interpolate(x, size=(7, 1), mode="bilinear", align_corners=True),
                                   [(2, 3, 4, 5)], "UpsampleBilinear2DBackward0"),
    "interpolate_bilinear_down": (lambda F, x: F.interpolate(x, scale_factor=0.5, mode="bilinear"), [(1, 2, 9, 7)],
                                  "UpsampleBilinear2DBackward0"),
    "interpolate_bicubic": (lambda F, x: F.interpolate(x, size=(7, 9), mode="bicubic"), [(2, 3, 4, 5)],
                            "UpsampleBicubic2DBackward0"),
    "interpolate_bicubic_align": (lambda F, x: F.interpolate(x, size=(7, 2), mode="bicubic", align_corners=True),
                                  [(2, 3, 4, 5)], "UpsampleBicubic2DBackward0"),
    "interpolate_bicubic_scale": (lambda F, x: F.interpolate(x, scale_factor=(1.7, 0.6), mode="bicubic"),
                                  [(1, 2, 5, 9)], "UpsampleBicubic2DBackward0"),
    "interpolate_bicubic_down_align": (lambda F, x: F.interpolate(x, size=(3, 1), mode="bicubic", align_corners=True),
                                       [(1, 2, 8, 6)], "UpsampleBicubic2DBackward0"),
    "interpolate_trilinear": (lambda F, x: F.interpolate(x, size=(5, 3, 8), mode="trilinear"), [(2, 2, 3, 4, 5)],
                              "UpsampleTrilinear3DBackward0"),
    "interpolate_trilinear_align": (lambda F, x: F.interpolate(x, scale_factor=(1.5, 0.5, 2), mode="trilinear",
                                                               align_corners=True), [(1, 2, 3, 4, 5)],
                                    "UpsampleTrilinear3DBackward0"),
    "interpolate_bilinear_aa": (lambda F, x: F.interpolate(x, size=(4, 5), mode="bilinear", antialias=True),
                                [(2, 2, 9, 11)], "UpsampleBilinear2DAaBackward0"),
    "interpolate_bilinear_aa_mixed": (lambda F, x: F.interpolate(x, scale_factor=(0.4, 1.5), mode="bilinear",
                                                                 antialias=True), [(1, 2, 10, 6)],
                                      "UpsampleBilinear2DAaBackward0"),
    "interpolate_bicubic_aa": (lambda F, x: F.interpolate(x, size=(4, 3), mode="bicubic", antialias=True),
                               [(2, 2, 9, 11)], "UpsampleBicubic2DAaBackward0"),
    "interpolate_bicubic_aa_align_up": (lambda F, x: F.interpolate(x, size=(7, 9), mode="bicubic", antialias=True,
                                                                   align_corners=True), [(1, 2, 4, 5)],
                                        "UpsampleBicubic2DAaBackward0"),
    "interpolate_lanczos_down": (lambda F, x: F.interpolate(x, size=(4, 5), mode="lanczos", antialias=True),
                                 [(2, 2, 13, 11)], "UpsampleLanczos2DAaBackward0"),
    "interpolate_lanczos_up": (lambda F, x: F.interpolate(x, scale_factor=(2.5, 0.5), mode="lanczos", antialias=True),
                               [(1, 2, 4, 10)], "UpsampleLanczos2DAaBackward0"),
    "interpolate_nearest3d": (lambda F, x: F.interpolate(x, scale_factor=(1.5, 0.7, 2.3)), [(2, 3, 3, 4, 5)],
                              "UpsampleNearest3DBackward0"),
    "interpolate_nearest_exact3d": (lambda F, x: F.interpolate(x, size=(2, 5, 4), mode="nearest-exact"),
                                    [(1, 2, 3, 4, 5)], "UpsampleNearestExact3DBackward0"),
    "interpolate_area3d": (lambda F, x: F.interpolate(x, size=(2, 3, 2), mode="area"), [(2, 2, 3, 4, 5)],
                           "AdaptiveAvgPool3DBackward0"),
    "interpolate_area": (lambda F, x: F.interpolate(x, size=(3, 2), mode="area"), [(2, 3, 7, 5)],
                         None),  # (adaptive_avg_pool2d's rows)
    "pixel_shuffle": (lambda F, x: F.pixel_shuffle(x, 2), [(2, 8, 3, 4)], "PixelShuffleBackward0"),
    "pixel_shuffle_batch_dims": (lambda F, x: F.pixel_shuffle(x, 3), [(2, 2, 9, 2, 3)], "PixelShuffleBackward0"),
    "pixel_unshuffle": (lambda F, x: F.pixel_unshuffle(x, 2), [(2, 3, 4, 6)], "PixelUnshuffleBackward0"),
    "pixel_unshuffle_unbatched": (lambda F, x: F.pixel_unshuffle(x, 3), [(2, 3, 6)], "PixelUnshuffleBackward0"),
    "adaptive_max_pool2d": (lambda F, x: F.adaptive_max_pool2d(x, (4, 3)), [(2, 3, 9, 7)],
                            "AdaptiveMaxPool2DBackward0"),
    "adaptive_max_pool2d_none_unbatched": (lambda F, x: F.adaptive_max_pool2d(x, (None, 2)), [(3, 5, 5)],
                                           "AdaptiveMaxPool2DBackward0"),
    "adaptive_max_pool2d_up": (lambda F, x: F.adaptive_max_pool2d(x, 5), [(1, 2, 3, 4)],
                               "AdaptiveMaxPool2DBackward0"),
    "adaptive_max_pool1d": (lambda F, x: F.adaptive_max_pool1d(x, 4), [(2, 3, 10)], None),
    "max_unpool2d": (_unpool, [(2, 3, 5, 5)], "MaxUnpool2DBackward0"),
    "max_unpool1d": (_unpool1d, [(2, 3, 9)], None),
}


def _inputs(shapes, dtype):
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


def _run(lib, F, fn, arrays, proj=None):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(F, *ts)
    if proj is not None:
        (out * lib.tensor(proj)).sum().backward()
    return out, ts


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name, dtype, rtol):
    fn, shapes, grad_fn = CASES[name]
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
    if grad_fn is not None:
        assert type(theirs.grad_fn).__name__ == grad_fn
        assert ours.grad_fn.name() == grad_fn


SECOND_ORDER = ["conv3d_stride_pad_dil_groups", "conv3d_same_even", "conv3d_unbatched", "conv_transpose2d", "conv_transpose2d_groups_dilation", "conv_transpose1d", "unfold_all_args",
                "fold_all_args", "interpolate_nearest_size", "interpolate_bilinear", "interpolate_linear_align",
                "interpolate_bicubic", "interpolate_trilinear", "interpolate_bilinear_aa", "interpolate_bicubic_aa",
                "interpolate_lanczos_down", "interpolate_nearest3d", "interpolate_area3d",
                "pixel_shuffle", "pixel_unshuffle", "adaptive_max_pool2d", "max_unpool2d"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_matches_torch(name):
    """grad of (sum of squares of the first gradients) with respect to every input, create_graph=True."""
    fn, shapes, _ = CASES[name]
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


def test_unfold_and_fold_are_adjoint():
    """<unfold(x), y> == <x, fold(y)>: each is the other's transpose."""
    x, y = RNG.standard_normal((2, 3, 7, 6)), RNG.standard_normal((2, 3 * 6, 12))
    kw = dict(kernel_size=(3, 2), dilation=(1, 2), padding=1, stride=2)
    lhs = (GF.unfold(tg.tensor(x), **kw) * tg.tensor(y)).sum().item()
    rhs = (tg.tensor(x) * GF.fold(tg.tensor(y), (7, 6), **kw)).sum().item()
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_adaptive_max_indices_match_torch():
    x = RNG.standard_normal((2, 3, 9, 7)).astype(np.float32)
    x[0, 0, :3, :3] = 1.0  # ties: the first maximum, as torch
    a, ia = GF.adaptive_max_pool2d(tg.tensor(x), (4, 3), return_indices=True)
    b, ib = TF.adaptive_max_pool2d(torch.tensor(x), (4, 3), return_indices=True)
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    assert repr(ia.dtype) == repr(ib.dtype)
    a, ia = tg.nn.AdaptiveMaxPool1d(3, return_indices=True)(tg.tensor(x[0, 0]))
    b, ib = torch.nn.AdaptiveMaxPool1d(3, return_indices=True)(torch.tensor(x[0, 0]))
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_max_unpool_modules_invert_max_pool_as_torch():
    x, x7 = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32), RNG.standard_normal((2, 3, 7, 7))
    outs = []
    for lib in (torch, tg):
        pool, unpool = lib.nn.MaxPool2d(2, return_indices=True), lib.nn.MaxUnpool2d(2)
        o, i = pool(lib.tensor(x))
        o7, i7 = pool(lib.tensor(x7))
        outs.append((unpool(o, i).numpy(), unpool(o7, i7, output_size=[2, 3, 7, 7]).numpy()))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


# -- modules ---------------------------------------------------------------------------------------------------------
MODULES = [
    ("Conv3d", (2, 4, 3), {}),
    ("Conv3d", (2, 4, (3, 2, 1)), dict(stride=2, padding=(1, 0, 0), padding_mode="circular", bias=False)),
    ("Conv3d", (2, 4, 2), dict(padding="same", groups=2, dilation=(1, 2, 1))),
    ("ConvTranspose2d", (4, 6, 3), {}),
    ("ConvTranspose2d", (4, 6, (3, 2)), dict(stride=2, padding=1, output_padding=1, groups=2, bias=False,
                                             dilation=2)),
    ("ConvTranspose1d", (2, 4, 3), dict(stride=2, output_padding=1)),
    ("ConvTranspose1d", (3, 6, 2), dict(groups=3, dilation=2)),
    ("Unfold", (3,), {}),
    ("Unfold", ((2, 3),), dict(dilation=1, padding=(1, 0), stride=2)),
    ("Fold", ((4, 5), 2), dict(dilation=2, padding=1, stride=1)),
    ("Upsample", (), dict(scale_factor=2)),
    ("Upsample", (), dict(size=(3, 4), mode="bilinear", align_corners=True)),
    ("Upsample", (), dict(scale_factor=(2, 3))),
    ("Upsample", (5,), {}),
    ("UpsamplingNearest2d", (), dict(scale_factor=2)),
    ("UpsamplingBilinear2d", ((4, 6),), {}),
    ("PixelShuffle", (2,), {}),
    ("PixelUnshuffle", (3,), {}),
    ("AdaptiveMaxPool2d", ((3, None),), {}),
    ("AdaptiveMaxPool1d", (3, True), {}),
    ("MaxUnpool2d", (2,), {}),
    ("MaxUnpool1d", (3, 2, 1), {}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MODULES)])
def test_module_repr_parameters_and_state_dict_keys(name, args, kwargs):
    ours, theirs = getattr(tg.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (ka, a), (kb, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert tuple(a.shape) == tuple(b.shape) and repr(a.dtype) == repr(b.dtype), ka
    assert type(ours).__module__.replace("tapegrad", "torch") == type(theirs).__module__


@pytest.mark.parametrize("mode,padding", [("reflect", 1), ("replicate", (2, 1, 0)), ("circular", "same")])
def test_conv3d_padding_modes_match_torch(mode, padding):
    theirs = torch.nn.Conv3d(2, 3, (3, 2, 4), padding=padding, padding_mode=mode).double()
    ours = tg.nn.Conv3d(2, 3, (3, 2, 4), padding=padding, padding_mode=mode).double()
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((2, 2, 5, 4, 6))
    xa, xb = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a, b = ours(xa), theirs(xb)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    (a * a).sum().backward(), (b * b).sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), xb.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10)


def test_conv_init_draws_torch_values():
    for name, args in (("ConvTranspose2d", (3, 8, 3)), ("ConvTranspose2d", (4, 6, (3, 2), 1, 0, 0, 2)),
                       ("ConvTranspose1d", (4, 6, 3)), ("Conv3d", (2, 4, 3))):
        torch.manual_seed(5), tg.manual_seed(5)
        a, b = getattr(tg.nn, name)(*args), getattr(torch.nn, name)(*args)
        np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
        np.testing.assert_array_equal(a.bias.detach().numpy(), b.bias.detach().numpy())


def test_state_dicts_load_both_ways():
    """A small decoder's state_dict from torch runs the same in tapegrad, and tapegrad's loads back into torch."""
    def decoder(nn):
        return nn.Sequential(nn.Unflatten(1, (2, 2)), nn.Conv3d(2, 2, 3, padding=1), nn.Flatten(1, 2),
                             nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
                             nn.Upsample(scale_factor=2, mode="bilinear"), nn.ConvTranspose2d(6, 8, 2, groups=2),
                             nn.PixelShuffle(2), nn.Unfold(2), nn.ConvTranspose1d(8, 2, 3, stride=2))
    theirs, ours = decoder(torch.nn), decoder(tg.nn)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((2, 4, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(ours(tg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    back = decoder(torch.nn)
    back.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    for k, v in back.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), ours.state_dict()[k].numpy(), err_msg=k)


@pytest.mark.parametrize("output_size", [[9, 9], [10, 10], [1, 3, 10, 9], None])
def test_conv_transpose_output_size_matches_torch(output_size):
    theirs = torch.nn.ConvTranspose2d(2, 3, 3, stride=2).double()
    ours = tg.nn.ConvTranspose2d(2, 3, 3, stride=2).double()
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((1, 2, 4, 4))
    a, b = ours(tg.tensor(x), output_size), theirs(torch.tensor(x), output_size)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)


# -- errors: torch's type and message, before any kernel runs ---------------------------------------------------------
def _one_bad(F, T, value):
    """max_pool2d's indices with one out of range (torch reports the first it finds, which is thread-dependent
    when there are more)."""
    idx = F.max_pool2d(T(1, 2, 4, 4), 2, return_indices=True)[1]
    idx[0, 1, 1, 0] = value
    return idx


ERRORS = [
    lambda F, T: F.conv3d(T(2, 3, 4, 5), T(4, 3, 2, 3, 2)),
    lambda F, T: F.conv3d(T(2, 3, 4), T(4, 3, 2, 3, 2)),
    lambda F, T: F.conv3d(T(2, 3, 4, 5, 6), T(4, 2, 2, 3, 2)),
    lambda F, T: F.conv3d(T(2, 3, 1, 5, 6), T(4, 3, 2, 3, 2)),
    lambda F, T: F.conv3d(T(2, 3, 4, 5, 6), T(4, 3, 2, 3, 2), stride=0),
    lambda F, T: F.conv3d(T(2, 3, 4, 5, 6), T(4, 3, 2, 3, 2), padding=-1),
    lambda F, T: F.conv3d(T(2, 3, 4, 5, 6), T(4, 3, 2, 3, 2), dilation=0),
    lambda F, T: F.conv3d(T(2, 3, 4, 5, 6), T(4, 3, 2, 3, 2), T(3)),
    lambda F, T: F.conv3d(T(2, 4, 4, 5, 6), T(4, 2, 2, 3, 2), groups=3),
    lambda F, T: F.conv3d(T(2, 3, 4, 5, 6), T(4, 3, 2, 3, 2), padding="same", stride=2),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), stride=2, output_padding=2),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), output_padding=1),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), padding=3),
    lambda F, T: F.conv_transpose2d(T(1, 2, 1, 1), T(2, 3, 2, 2), padding=1),
    lambda F, T: F.conv_transpose2d(T(2, 3), T(2, 3, 3, 3)),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(3, 3, 3, 3)),
    lambda F, T: F.conv_transpose2d(T(2, 3, 3), T(3, 3, 3, 3), groups=2),
    lambda F, T: F.conv_transpose2d(T(1, 4, 3, 3), T(4, 3, 3, 3), groups=3),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), stride=0),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), padding=-1),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), dilation=0),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), T(2)),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), output_padding=-1),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), groups=0),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3).double()),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), padding="same"),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 0, 3)),
    lambda F, T: F.conv_transpose2d(T(1, 2, 3, 3), T(2, 3, 3, 3), stride=(1, 2, 3)),
    lambda F, T: F.conv_transpose1d(T(1, 2, 3), T(2, 3, 3), stride=2, output_padding=2),
    lambda F, T: F.conv_transpose1d(T(1, 2, 3, 4), T(2, 3, 3)),
    lambda F, T: F.conv_transpose1d(T(1, 2, 3), T(2, 3, 0)),
    lambda F, T: F.conv_transpose1d(T(1, 2, 3), T(2, 3, 3), dilation=0),
    lambda F, T: F.conv_transpose1d(T(1, 2, 1), T(2, 3, 1), padding=1),
    lambda F, T: F.unfold(T(5, 5), 3),
    lambda F, T: F.unfold(T(1, 3, 5, 5, 5), 3),
    lambda F, T: F.unfold(T(1, 3, 2, 2), 3),
    lambda F, T: F.unfold(T(1, 3, 5, 5), 0),
    lambda F, T: F.unfold(T(1, 3, 5, 5), 2, stride=0),
    lambda F, T: F.unfold(T(1, 3, 5, 5), 2, dilation=0),
    lambda F, T: F.unfold(T(1, 3, 5, 5), 2, padding=-1),
    lambda F, T: F.unfold(T(1, 3, 5, 5), (2, 2, 2)),
    lambda F, T: F.unfold(T(1, 3, 5, 5).long(), 2),
    lambda F, T: F.fold(T(2, 12, 16).int(), (5, 5), 2),
    lambda F, T: F.fold(T(2, 12, 15), (5, 5), 2),
    lambda F, T: F.fold(T(2, 13, 16), (5, 5), 2),
    lambda F, T: F.fold(T(2, 12, 16), (1, 1), 2),
    lambda F, T: F.fold(T(2, 3, 12, 16), (5, 5), 2),
    lambda F, T: F.fold(T(2, 12, 16), 5, 0),
    lambda F, T: F.fold(T(2, 12, 16), (5, 5), 2, stride=0),
    lambda F, T: F.pixel_shuffle(T(8, 3), 2),
    lambda F, T: F.pixel_shuffle(T(1, 8, 3, 3), 0),
    lambda F, T: F.pixel_shuffle(T(1, 6, 3, 3), 2),
    lambda F, T: F.pixel_unshuffle(T(1, 2, 3, 4), 2),
    lambda F, T: F.pixel_unshuffle(T(1, 2, 4, 3), 2),
    lambda F, T: F.pixel_unshuffle(T(1, 2, 4, 4), 0),
    lambda F, T: F.pixel_unshuffle(T(2, 4), 2),
    lambda F, T: F.adaptive_max_pool2d(T(3, 4), 2),
    lambda F, T: F.adaptive_max_pool2d(T(1, 3, 0, 4), 2),
    lambda F, T: F.adaptive_max_pool2d(T(1, 3, 4, 4), (2, 2, 2)),
    lambda F, T: F.adaptive_max_pool1d(T(3, 4, 5, 6), 2),
    lambda F, T: F.adaptive_max_pool1d(T(3), 2),
    lambda F, T: F.adaptive_max_pool1d(T(3, 4), (2, 2)),
    lambda F, T: F.max_unpool2d(*F.max_pool2d(T(1, 2, 5, 5), 2, return_indices=True), 2, output_size=(7, 5)),
    lambda F, T: F.max_unpool2d(*F.max_pool2d(T(1, 2, 5, 5), 2, return_indices=True), 2, output_size=(1, 5, 5)),
    lambda F, T: F.max_unpool2d(T(1, 2, 2, 2), F.max_pool2d(T(1, 1, 4, 4), 2, return_indices=True)[1], 2),
    lambda F, T: F.max_unpool2d(T(1, 2, 2, 2), _one_bad(F, T, 100), 2),
    lambda F, T: F.max_unpool2d(T(1, 2, 2, 2), _one_bad(F, T, -100), 2),
    lambda F, T: F.max_unpool2d(T(1, 2, 2, 2), F.max_pool2d(T(1, 2, 4, 4), 2, return_indices=True)[1].int(), 2),
    lambda F, T: F.max_unpool2d(T(2, 2), T(2, 2).long(), 2),
    lambda F, T: F.interpolate(T(2, 3, 4, 5), size=(3, 4), scale_factor=2),
    lambda F, T: F.interpolate(T(2, 3, 4, 5)),
    lambda F, T: F.interpolate(T(2, 3, 4, 5), size=3, align_corners=True),
    lambda F, T: F.interpolate(T(2, 3, 4, 5), size=(3,)),
    lambda F, T: F.interpolate(T(2, 3, 4, 5), scale_factor=(3.0,)),
    lambda F, T: F.interpolate(T(2, 3, 4, 5), size=3, mode="linear"),
    lambda F, T: F.interpolate(T(2, 3, 4), size=3, mode="bilinear"),
    lambda F, T: F.interpolate(T(2, 3, 4, 5), size=3, mode="foo"),
    lambda F, T: F.interpolate(T(3, 4), size=3),
    lambda F, T: F.interpolate(T(2, 3, 4, 5), size=0),
    lambda F, T: F.interpolate(T(2, 3, 4, 5), scale_factor=0.1),
    lambda F, T: F.interpolate(T(2, 3, 4, 5), size=(3, 2.0)),
    lambda F, T: F.interpolate(T(2, 3, 4, 5), size=3, recompute_scale_factor=True),
    lambda F, T: F.interpolate(T(2, 3, 4), size=3, antialias=True, mode="linear"),
    lambda F, T: F.interpolate(T(2, 3, 4), size=3, mode="bicubic"),
    lambda F, T: F.interpolate(T(1, 2, 3, 4, 5), size=3, mode="bicubic"),
    lambda F, T: F.interpolate(T(1, 2, 3, 4), size=3, mode="trilinear"),
    lambda F, T: F.interpolate(T(1, 2, 3, 4, 5), size=(3, 0, 2), mode="trilinear"),
    lambda F, T: F.interpolate(T(1, 2, 3, 4), size=(0, 2), mode="bicubic"),
    lambda F, T: F.interpolate(T(1, 2, 3, 4), size=(0, 2), mode="bicubic", antialias=True),
    lambda F, T: F.interpolate(T(1, 2, 3, 4, 5), size=2, mode="trilinear", antialias=True),
    lambda F, T: F.interpolate(T(1, 2, 3, 4), size=2, mode="lanczos"),
    lambda F, T: F.interpolate(T(1, 2, 3, 4), size=2, mode="lanczos", antialias=True, align_corners=True),
    lambda F, T: F.interpolate(T(1, 2, 3), size=2, mode="lanczos"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    with pytest.raises(Exception) as theirs:
        ERRORS[i](TF, torch.randn)
    with pytest.raises(type(theirs.value)) as ours:
        ERRORS[i](GF, lambda *s: tg.tensor(RNG.standard_normal(s).astype(np.float32)))
    assert str(ours.value) == str(theirs.value)


MODULE_ERRORS = [
    lambda nn, T: nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect"),
    lambda nn, T: nn.ConvTranspose1d(3, 6, 3, groups=2),
    lambda nn, T: nn.ConvTranspose2d(2, 3, 3, stride=2)(T(1, 2, 4, 4), output_size=[11, 11]),
    lambda nn, T: nn.ConvTranspose2d(2, 3, 3, stride=2)(T(1, 2, 4, 4), output_size=[1, 9, 9]),
    lambda nn, T: nn.ConvTranspose1d(2, 3, 3, stride=2)(T(2, 4), output_size=[1, 1, 9]),
]


@pytest.mark.parametrize("i", range(len(MODULE_ERRORS)))
def test_module_errors_match_torch(i):
    def T(lib):
        return lambda *s: lib.tensor(RNG.standard_normal(s).astype(np.float32))
    with pytest.raises(Exception) as theirs:
        MODULE_ERRORS[i](torch.nn, T(torch))
    with pytest.raises(type(theirs.value)) as ours:
        MODULE_ERRORS[i](tg.nn, T(tg))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("call", [
    lambda F, x: F.interpolate(x.to(torch.uint8 if F is TF else tg.uint8), size=(3, 4), mode="bilinear"),
    lambda F, x: F.interpolate(x.to(torch.uint8 if F is TF else tg.uint8), size=(3, 4), mode="bicubic"),
    lambda F, x: F.interpolate(x.to(torch.uint8 if F is TF else tg.uint8), size=(3, 4), mode="bilinear",
                               antialias=True)])
def test_modes_tapegrad_lacks_say_so(call):
    """Integer input to the interpolating modes: torch computes them, tapegrad raises NotImplementedError naming
    them."""
    call(TF, torch.zeros(1, 1, 2, 2))  # (torch has them)
    with pytest.raises(NotImplementedError, match="tapegrad: interpolate"):
        call(GF, tg.zeros(1, 1, 2, 2))


def test_conv_transpose_under_compile_replays_and_matches_eager():
    """The transposed convolution is the conv row (transposed), so tapegrad.compile replays it (fullgraph)."""
    def net():
        tg.manual_seed(0)
        return tg.nn.Sequential(tg.nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1, output_padding=1, groups=2),
                                tg.nn.Tanh())
    traced, eager = net(), net()
    calls = []

    def f(x):
        calls.append(1)
        return traced(x).square().sum()
    compiled = tg.compile(f, fullgraph=True)
    for step in range(3):
        x = tg.tensor(RNG.standard_normal((3, 2, 4, 5)).astype(np.float32))
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
    assert len(calls) == 1


@pytest.mark.parametrize("mode,kwargs,shape", [("bicubic", {}, (2, 3, 5, 6)), ("trilinear", {}, (1, 2, 3, 4, 5)),
                                               ("bicubic", {"antialias": True}, (2, 3, 9, 8)),
                                               ("lanczos", {"antialias": True}, (2, 3, 9, 8))])
def test_separable_resampling_replays_under_compile(mode, kwargs, shape):
    """bicubic, trilinear and antialiased resampling are one row each, replayed by tapegrad.compile
    (fullgraph): new inputs give eager's values and gradients."""
    size = (4, 6, 3)[:len(shape) - 2]

    def f(x):
        return (GF.interpolate(x, size=size, mode=mode, **kwargs) ** 2).sum()
    compiled = tg.compile(f, fullgraph=True)
    for step in range(3):
        x = RNG.standard_normal(shape).astype(np.float32)
        results = []
        for fn in (f, compiled):
            xs = tg.tensor(x, requires_grad=True)
            value = fn(xs)
            value.backward()
            results.append((value.item(), xs.grad.numpy()))
        assert results[0][0] == pytest.approx(results[1][0], rel=1e-6)
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kwargs,shape", [(dict(scale_factor=2, mode="bicubic", align_corners=True), (1, 2, 3, 4)),
                                          (dict(size=(3, 5, 2), mode="trilinear"), (1, 2, 2, 3, 4))])
def test_upsample_module_new_modes(kwargs, shape):
    ours, theirs = tg.nn.Upsample(**kwargs), torch.nn.Upsample(**kwargs)
    assert repr(ours) == repr(theirs)
    x = RNG.standard_normal(shape).astype(np.float64)
    np.testing.assert_allclose(ours(tg.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), rtol=1e-12, atol=1e-12)


def test_conv3d_is_one_row_replayed_under_compile():
    """Conv3d is one ConvolutionBackward0 row (with its bias), replayed by tapegrad.compile (fullgraph)."""
    tg.manual_seed(0)
    conv = tg.nn.Conv3d(2, 4, (2, 3, 3), stride=(1, 2, 1), padding=1, groups=2)

    def f(x):
        return conv(x).square().sum()
    compiled = tg.compile(f, fullgraph=True)
    for step in range(3):
        x = RNG.standard_normal((2, 2, 3, 5, 4)).astype(np.float32)
        results = []
        for fn in (f, compiled):
            conv.zero_grad()
            xs = tg.tensor(x, requires_grad=True)
            value = fn(xs)
            value.backward()
            results.append([value.item(), xs.grad.numpy()] + [p.grad.numpy().copy() for p in conv.parameters()])
        assert results[0][0] == pytest.approx(results[1][0], rel=1e-6)
        for a, b in zip(results[0][1:], results[1][1:]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert conv(tg.randn(1, 2, 3, 5, 4)).grad_fn.name() == "ConvolutionBackward0"


def _transposed_argument_cases():
    """(nd, input shape, weight shape, bias shape, dtypes, kwargs): every check of conv_transpose1d/2d/3d's arguments
    (one helper, `ops.conv._conv_transpose_checks`) and their order, for each of the three."""
    cases = []
    for nd in (1, 2, 3):
        X, W, one = (1, 2) + (3,) * nd, (2, 2) + (2,) * nd, (1,) * (nd + 1)
        k0 = W[:2] + (0,) + W[3:]
        cases += [(nd, *case) for case in [
            (X, W, None, None, dict(padding="same")), ((2,) * nd, W, None, None, {}),
            ((2,), W, None, None, dict(padding="same")),
            (X, (2, 2), None, None, {}), (X, (2,), None, None, dict(groups=0)), (X, W[:-1], None, None, {}),
            (X, W + (2,), None, None, {}), (X, W + (2,), None, None, dict(stride=one)), (X, W[:-1], None, None,
                                                                                          dict(stride=0)),
            (X, W, None, None, dict(stride=0)), (X, W, None, None, dict(stride=one)),
            (X, W, None, None, dict(padding=one)), (X, W, None, None, dict(dilation=one)),
            (X, W, None, None, dict(output_padding=one)), (X, W, None, None, dict(stride=(2,), padding=(1,))),
            (X, W, None, None, dict(padding=-1)), (X, W, None, None, dict(stride=-1, padding=-1)),
            (X, W, None, None, dict(output_padding=-1, stride=0)), (X, W, None, None, dict(dilation=-1, stride=0)),
            (X, W, None, None, dict(dilation=-1)), (X, W, None, None, dict(groups=0, padding=-1)),
            (X, W, None, None, dict(groups=-2)), (X, W, None, None, dict(groups=3)),
            ((1, 3) + X[2:], (3,) + W[1:], None, None, dict(groups=2)),
            ((1, 3) + X[2:], (3,) + W[1:], None, None, dict(groups=2, output_padding=3)),
            ((1, 3) + X[2:], W, None, None, {}), ((3,) + X[2:], W, None, None, {}),
            (X, W, (3,), None, {}), (X, W, (2, 1), None, {}), (X, W, (2,), None, dict(stride=2, output_padding=1)),
            (X, W, None, None, dict(output_padding=1)), (X, W, None, None, dict(output_padding=(0,) * (nd - 1) + (1,))),
            (X, W, None, None, dict(stride=2, output_padding=(2,) + (0,) * (nd - 1))),
            (X, W, None, None, dict(dilation=2, output_padding=1)),
            (X, W, None, None, dict(dilation=0)), (X, (2, 2) + (1,) * nd, None, None,
                                                   dict(dilation=(1,) * (nd - 1) + (0,))),
            (X, k0, None, None, {}), (X, k0, None, None, dict(dilation=0)), (X, k0, None, None, dict(output_padding=3)),
            (X, k0, None, None, dict(padding=9)), (X, W, None, None, dict(output_padding=3, padding=9)),
            (X, W, None, None, dict(padding=5)), (X, W, None, None, dict(padding=5, dilation=0)),
            ((1, 2) + (0,) * nd, W, None, None, {}), ((2,) + (0,) * nd, W, None, None, {}),
            ((1, 2, 0) + X[3:], W, None, None, dict(dilation=0)), ((0, 2) + X[2:], W, (2,), None, {}),
            (X, W, None, ("float32", "float64", None), {}), (X, W, (2,), ("float32", "float32", "float64"), {}),
            (X, W, (2,), ("float64", "float64", "float32"), dict(stride=2)),
            (X, W, (2,), ("float32", "float32", "int64"), {}),
        ]]
    return cases


@pytest.mark.parametrize("nd,xs,ws,bs,dtypes,kw", _transposed_argument_cases())
def test_conv_transpose_argument_checks_match_torch(nd, xs, ws, bs, dtypes, kw):
    """conv_transpose1d/2d/3d share one check of their arguments: torch's exception and message, or its result."""
    dtypes = dtypes or ("float32",) * 3
    results = []
    for lib, F in ((torch, TF), (tg, GF)):
        x, w = (lib.tensor(RNG.standard_normal(s)).to(getattr(lib, t)) for s, t in zip((xs, ws), dtypes))
        b = None if bs is None else lib.tensor(RNG.standard_normal(bs)).to(getattr(lib, dtypes[2]))
        try:
            y = getattr(F, f"conv_transpose{nd}d")(x, w, b, **kw)
            results.append((tuple(y.shape), str(y.dtype).split(".")[-1]))
        except Exception as e:  # noqa: BLE001 (the exception is the result compared)
            results.append((type(e).__name__, str(e)))
    assert results[1] == results[0]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_downsampling_source_index_is_fused_as_torchs(mode):
    """torch's CPU build computes a source index `scale * (i + 0.5) - 0.5` with one rounding where the machine fuses
    (random._madd); rounded twice, indices far from 0 moved by an ulp and the weights by 1.5e-5 (345 -> 270 rows)."""
    x = np.random.default_rng(7).uniform(-9, 9, (1, 2, 345, 456)).astype(np.float32)
    want = torch.nn.functional.interpolate(torch.tensor(x), size=(270, 270), mode=mode, align_corners=False)
    got = tg.nn.functional.interpolate(tg.tensor(x), size=(270, 270), mode=mode, align_corners=False)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-5)
