"""Round 9 (torch's OpInfo samples): nn.functional's ops and torch's top-level (aten) forms of them, against torch:
values, gradients, and errors' types and messages."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

TORCH_F, TG_F = torch.nn.functional, tg.nn.functional


def _to_tg(v):
    if isinstance(v, torch.Tensor):
        return tg.tensor(v.detach().numpy().copy(), requires_grad=v.requires_grad)
    if isinstance(v, (list, tuple)):
        return type(v)(_to_tg(a) for a in v)
    if isinstance(v, dict):
        return {k: _to_tg(a) for k, a in v.items()}
    return v


def _leaves(v):
    if isinstance(v, (list, tuple)):
        return [x for a in v for x in _leaves(a)]
    if isinstance(v, dict):
        return [x for a in v.values() for x in _leaves(a)]
    return [v] if getattr(v, "requires_grad", False) else []


def _outs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _compare(fn, args, kwargs=None, rtol=1e-6, atol=1e-7, grad=True):
    """fn(lib, *args) under torch and tapegrad (args converted): each output's values, then the gradients of
    sum(out * cotangent) for the outputs that require grad."""
    kwargs = kwargs or {}
    targs, gargs = args, _to_tg(args)
    tout, gout = _outs(fn(torch, *targs, **kwargs)), _outs(fn(tg, *gargs, **_to_tg(kwargs)))
    assert len(tout) == len(gout)
    for a, b in zip(tout, gout):
        assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], (a.dtype, b.dtype)
        an, bn = a.detach().numpy(), b.detach().numpy()
        if an.dtype.kind == "f":
            np.testing.assert_allclose(bn, an, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(bn, an)
    if not grad:
        return
    tin, gin = _leaves(targs), _leaves(gargs)
    pairs = [(a, b) for a, b in zip(tout, gout) if a.requires_grad]
    assert [a.requires_grad for a in tout] == [b.requires_grad for b in gout]
    if not tin or not pairs:
        return
    rng = np.random.default_rng(0)
    cots = [rng.standard_normal(tuple(a.shape)).astype(a.detach().numpy().dtype) for a, _ in pairs]
    tgr = torch.autograd.grad(sum((a * torch.tensor(c)).sum() for (a, _), c in zip(pairs, cots)), tin,
                              allow_unused=True)
    ggr = tg.autograd.grad(sum((b * tg.tensor(c)).sum() for (_, b), c in zip(pairs, cots)), gin, allow_unused=True)
    for a, b in zip(tgr, ggr):
        if a is None:
            assert b is None or not np.any(b.numpy())
            continue
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=rtol * 10, atol=atol * 10)


def _errors_match(fn, args, kwargs=None, message=True):
    kwargs = kwargs or {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as te:
            fn(torch, *args, **kwargs)
        with pytest.raises(Exception) as ge:
            fn(tg, *_to_tg(args), **_to_tg(kwargs))
    assert type(ge.value).__name__ == type(te.value).__name__, (te.value, ge.value)
    if message:
        assert str(ge.value) == str(te.value)


def _r(*shape, dtype=torch.float64, grad=True, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(shape, generator=g, dtype=dtype).requires_grad_(grad)


def _p(*shape, dtype=torch.float64, seed=1):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.rand(shape, generator=g, dtype=dtype)


# -- torch's top-level (aten) forms: their argument order and reduction enums -----------------------------------------
ATEN = {
    "bce_logits_sum": (lambda L, z, y: L.binary_cross_entropy_with_logits(z, y, None, None, 2), (_r(5, 5), _p(5, 5))),
    "bce_logits_default_none": (lambda L, z, y: L.binary_cross_entropy_with_logits(z, y), (_r(5, 5), _p(5, 5))),
    "bce_logits_weights_mean": (lambda L, z, y, w, pw: L.binary_cross_entropy_with_logits(z, y, w, pw, 1),
                                (_r(4, 3), _p(4, 3), _p(3), _p(3) + 0.5)),
    "kl_div_enum_none": (lambda L, x, t: L.kl_div(x, t, 0), (_r(2, 3), _p(2, 3))),
    "kl_div_default": (lambda L, x, t: L.kl_div(x, t), (_r(2, 3), _p(2, 3))),
    "kl_div_log_target_sum": (lambda L, x, t: L.kl_div(x, t, 2, log_target=True), (_r(2, 3), _r(2, 3, grad=False))),
    "layer_norm_cudnn_enable": (lambda L, x, w, b: L.layer_norm(x, (2, 3), w, b, 1e-5, True),
                                (_r(4, 2, 3), _r(2, 3), _r(2, 3))),
    "grid_sampler_bilinear_border": (lambda L, x, g: L.grid_sampler(x, g, 0, 1, False),
                                     (_r(1, 2, 4, 5), _p(1, 3, 2, 2) * 2.4 - 1.2)),
    "grid_sampler_2d_nearest_zeros": (lambda L, x, g: L.grid_sampler_2d(x, g, 1, 0, True),
                                      (_r(2, 1, 3, 3), _p(2, 2, 3, 2, dtype=torch.float64) * 2 - 1)),
}


@pytest.mark.parametrize("name", list(ATEN))
def test_aten_forms_match_torch(name):
    fn, args = ATEN[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (torch.kl_div warns of no "mean"; neither does tapegrad's)
        _compare(fn, args)


def test_ctc_loss_top_level_takes_the_reduction_enum():
    T, N, C = 6, 2, 4
    lp = _r(T, N, C).log_softmax(2).detach().requires_grad_(True)
    t = torch.tensor([[1, 2, 3], [2, 1, 0]])
    for red in (0, 1, 2):
        _compare(lambda L, a: L.ctc_loss(a, L.tensor(t.numpy()) if L is tg else t, [6, 5], [3, 2], 0, red), (lp,))
    _compare(lambda L, a: L.ctc_loss(a, L.tensor(t.numpy()) if L is tg else t, [6, 5], [3, 2]), (lp,))
    _errors_match(lambda L, a: L.ctc_loss(a, L.tensor(t.numpy()) if L is tg else t, [6, 5], [3, 2], 0, "mean"), (lp,),
                  message=False)  # (torch's lists its overloads)


# -- F.pad: circular with negative pads, empty batches ---------------------------------------------------------------
PADS = {
    "circular_negative_2d": ((1, 3, 4, 4), (-1, 1, -2, 1)),
    "circular_negative_both": ((2, 3, 5), (-2, 1)),
    "circular_negative_right": ((2, 3, 5), (2, -1)),
    "circular_narrow_then_wrap_3d": ((1, 2, 3, 4, 5), (1, -2, -1, 2, 0, 1)),
}


@pytest.mark.parametrize("name", list(PADS))
def test_circular_pad_matches_torch(name):
    shape, pad = PADS[name]
    _compare(lambda L, x: L.nn.functional.pad(x, pad, mode="circular"), (_r(*shape),))


EMPTY_PADS = [((0, 3, 3), (1, 2), "reflect"), ((0, 3, 3), (0, 1), "reflect"), ((0, 3, 3, 3), (0, 2, 0, 1), "reflect"),
              ((0, 2, 3, 3, 3), (1,) * 6, "reflect")]


@pytest.mark.parametrize("shape,pad,mode", EMPTY_PADS)
def test_pad_of_an_empty_batch_matches_torch(shape, pad, mode):
    _compare(lambda L, x: L.nn.functional.pad(x, pad, mode=mode), (_r(*shape),))


PAD_ERRORS = [((2, 0, 3), (1, 2), "reflect"), ((0, 3), (1, 1), "replicate"), ((0, 3, 3), (1, 1, 1, 1), "reflect"),
              ((2, 0, 3, 3, 3), (1,) * 6, "replicate"), ((1, 1, 4), (-4, -4), "circular"),
              ((1, 1, 4), (-3, 2), "circular")]


@pytest.mark.parametrize("shape,pad,mode", PAD_ERRORS)
def test_pad_errors_match_torch(shape, pad, mode):
    _errors_match(lambda L, x: L.nn.functional.pad(x, pad, mode=mode), (_r(*shape, grad=False),))


# -- integer pooling: torch's truncated integer averages -------------------------------------------------------------
def _ints(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(-9, 10, shape))


INT_POOLS = {
    "avg_pool3d_negative_divisor": (lambda L, x: L.nn.functional.avg_pool3d(x, (2, 2, 3), stride=(2, 2, 1),
                                                                             divisor_override=-2), (1, 1, 4, 5, 4)),
    "avg_pool3d_negative_divisor_3": (lambda L, x: L.nn.functional.avg_pool3d(x, 2, divisor_override=-3),
                                      (2, 2, 4, 4, 4)),
}


@pytest.mark.parametrize("name", list(INT_POOLS))
def test_integer_average_pools_match_torch(name):
    fn, shape = INT_POOLS[name]
    _compare(fn, (_ints(*shape),))


@pytest.mark.parametrize("shape,size", [((1, 6, 3), 2), ((2, 6, 3), 3), ((1, 5, 7), 4)])
def test_local_response_norm_of_integers_matches_torch(shape, size):
    # (float32 results of an integer input, where the ratio may round either way by one unit in the last place)
    _compare(lambda L, x: L.nn.functional.local_response_norm(x, size, alpha=3e-5, beta=0.5, k=1.25),
             (_ints(*shape),), rtol=1e-6, atol=1e-6)


# -- unfold / fold of booleans (torch's im2col and col2im take them) -------------------------------------------------
@pytest.mark.parametrize("fn,shape", [
    (lambda L, x: L.nn.functional.unfold(x, 2), (2, 2, 4, 5)),
    (lambda L, x: L.nn.functional.unfold(x, (2, 3), 1, 1, 2), (1, 3, 4, 4)),
    (lambda L, x: L.nn.functional.unfold(x, 2, 1, 0, 1), (0, 1, 5, 5)),
    (lambda L, x: L.nn.functional.fold(x, (3, 4), 2), (2, 8, 6)),
])
def test_unfold_and_fold_of_booleans_match_torch(fn, shape):
    _compare(fn, (_p(*shape) > 0.5,))


# -- linear_cross_entropy (torch 2.13) --------------------------------------------------------------------------------
LCE = {
    "unbatched": ((3,), (4, 3), torch.tensor(2), {}),
    "batched_mean": ((8, 3), (4, 3), torch.tensor([0, 1, 2, 3, 0, 1, 2, 3]), {}),
    "bias_weight_sum": ((5, 3), (4, 3), torch.tensor([0, 3, 2, 1, 1]),
                        {"linear_bias": _r(4), "weight": _p(4), "reduction": "sum"}),
    "k_dim_none": ((4, 3), (2, 3, 3), torch.tensor([[0, 1, 1], [1, 0, 0], [0, 0, 1], [1, 1, 1]]),
                   {"reduction": "none", "linear_bias": _r(2, 3)}),
    "probabilities_smoothing": ((6, 3), (4, 3), _p(6, 4).softmax(1), {"label_smoothing": 0.2}),
    "ignore_index": ((5, 3), (4, 3), torch.tensor([0, 3, 2, 1, 1]), {"ignore_index": 1}),
    "chunked_none": ((8, 3), (4, 3), torch.tensor([0, 1, 2, 3, 0, 1, 2, 3]), {"reduction": "none", "options": 2}),
    "chunked_mean": ((8, 3), (4, 3), torch.tensor([0, 1, 2, 3, 0, 1, 2, 3]), {"options": 3}),
    "chunked_unbatched_sum": ((3,), (4, 3), torch.tensor(2), {"reduction": "sum", "options": None}),
}


@pytest.mark.parametrize("name", list(LCE))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_linear_cross_entropy_matches_torch(name, dtype):
    xs, ws, target, kw = LCE[name]
    kw = dict(kw)
    chunk = kw.pop("options", "absent")

    def fn(L, x, w, t, **k):
        if chunk != "absent":
            k["options"] = L.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
        return L.nn.functional.linear_cross_entropy(x, w, t, **k)
    kw = {k: (v.to(dtype) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    target = target.to(dtype) if target.is_floating_point() else target
    tol = 1e-5 if dtype == torch.float32 else 1e-9
    _compare(fn, (_r(*xs, dtype=dtype), _r(*ws, dtype=dtype), target), kw, rtol=tol, atol=tol)


def test_linear_cross_entropy_errors_and_warning_match_torch():
    x, w = _r(4, 3), _r(5, 3)
    _errors_match(lambda L, a, b: L.nn.functional.linear_cross_entropy(a, b, L.tensor([0, 1, 2, 3]) if L is tg else
                                                                       torch.tensor([0, 1, 2, 3])), (x, _r(5, 2)))
    _errors_match(lambda L, a, b: L.nn.functional.linear_cross_entropy(a, b, a), (x[0, :1], w))
    _errors_match(lambda L, a, b, t: L.nn.functional.linear_cross_entropy(a, b, t, ignore_index=0),
                  (x, w, _p(4, 5)))
    for L in (torch, tg):
        with pytest.warns(UserWarning, match="``options`` ignored; chunked path needs"):
            L.nn.functional.linear_cross_entropy(_to_tg(x) if L is tg else x, _to_tg(w) if L is tg else w,
                                                 _to_tg(_p(4, 5)) if L is tg else _p(4, 5),
                                                 options=L.nn.LinearCrossEntropyOptions())


# -- fractional max pooling -------------------------------------------------------------------------------------------
FRACTIONAL = [(2, (2, 3, 7, 8), (2, 2), (3, 4)), (2, (3, 9, 9), (3, 2), (4, 5)), (2, (1, 2, 5, 6), 1, (5, 6)),
              (2, (2, 1, 6, 7), (2, 3), (2, 1)), (3, (2, 2, 5, 6, 7), (2, 2, 2), (2, 3, 4)),
              (3, (2, 4, 5, 6), (1, 2, 3), (3, 2, 2)), (3, (1, 1, 4, 8, 5), 2, (2, 5, 3))]


@pytest.mark.parametrize("nd,shape,k,o", FRACTIONAL)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fractional_max_pool_matches_torch_given_samples(nd, shape, k, o, dtype):
    x = _r(*shape, dtype=dtype)
    with torch.no_grad():
        x[(0,) * x.ndim] = float("nan") if shape[-1] > 6 else x[(0,) * x.ndim]
    x = x.detach().round().requires_grad_(True)  # (ties: the first maximum wins, as torch's kernel)
    n = 1 if x.ndim == nd + 1 else shape[0]
    samples = _p(n, shape[-nd - 1], nd, dtype=dtype)
    name = f"fractional_max_pool{nd}d"
    _compare(lambda L, a, s: getattr(L.nn.functional, name)(a, k, output_size=o, return_indices=True,
                                                           _random_samples=s), (x, samples), rtol=0, atol=0)


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_draws_torch_samples(nd):
    x = _r(2, 3, *(8,) * nd, dtype=torch.float32, grad=False)
    outs = []
    for L in (torch, tg):
        L.manual_seed(7)
        fn = getattr(L.nn.functional, f"fractional_max_pool{nd}d")
        module = getattr(L.nn, f"FractionalMaxPool{nd}d")(2, output_ratio=0.5, return_indices=True)
        xx = _to_tg(x) if L is tg else x
        outs.append([fn(xx, 3, output_size=3).numpy(), *[t.numpy() for t in module(xx)]])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(b, a)


FRACTIONAL_ERRORS = [
    (2, (2, 3, 7, 8), {"kernel_size": 2}),
    (2, (2, 3, 7, 8), {"kernel_size": 2, "output_size": (7, 8)}),
    (2, (2, 3, 7, 8), {"kernel_size": 2, "output_size": (3,)}),
    (2, (2, 3, 7, 8), {"kernel_size": (2, 2, 2), "output_size": 3}),
    (2, (2, 3, 7, 8), {"kernel_size": 2, "output_size": 3, "_random_samples": _p(1, 3, 2, dtype=torch.float32)}),
    (2, (2, 3, 7, 8), {"kernel_size": 2, "output_size": 3, "_random_samples": _p(2, 3, 3, dtype=torch.float32)}),
    (2, (2, 3, 7, 8), {"kernel_size": 2, "output_size": 3, "_random_samples": _p(2, 3, 2)}),
    (2, (2, 3, 7, 8), {"kernel_size": 2, "output_size": 3, "_random_samples": _p(2, 2, 2, dtype=torch.float32)}),
    (2, (2, 3, 7, 8), {"kernel_size": 2, "output_size": 3, "_random_samples": _p(6, 2, dtype=torch.float32)}),
    (2, (2, 0, 4, 4), {"kernel_size": 2, "output_size": 3}),
    (2, (2, 3, 5, 5, 5), {"kernel_size": 2, "output_size": 3}),
    (2, (2, 3, 7, 8), {"kernel_size": 2, "output_size": (-1, 3)}),
    (2, (2, 3, 7, 8), {"kernel_size": 2, "output_ratio": 0.5}),
    (3, (2, 3, 5, 5, 5), {"kernel_size": 2, "output_size": 4}),
    (3, (2, 3, 5, 3, 5), {"kernel_size": 2, "output_size": 3}),
    (3, (2, 3, 5, 5, 5), {"kernel_size": (2, 2), "output_size": 3}),
    (3, (2, 3, 5, 5, 5), {"kernel_size": 2, "output_size": (3, 3)}),
    (3, (2, 0, 5, 5, 5), {"kernel_size": 2, "output_size": 2}),
]


@pytest.mark.parametrize("nd,shape,kw", FRACTIONAL_ERRORS)
def test_fractional_max_pool_errors_match_torch(nd, shape, kw):
    _errors_match(lambda L, x, **k: getattr(L.nn.functional, f"fractional_max_pool{nd}d")(x, **k),
                  (_r(*shape, dtype=torch.float32, grad=False),), kw)


@pytest.mark.parametrize("nd,kw", [(2, {}), (2, {"output_size": 2, "output_ratio": 0.5}), (2, {"output_ratio": 1.5}),
                                   (3, {"output_ratio": (0.5, 0.5, 1.0)}), (3, {"output_size": 2, "kernel_size": 0})])
def test_fractional_max_pool_module_errors_match_torch(nd, kw):
    kw = dict(kw)
    k = kw.pop("kernel_size", 2)
    _errors_match(lambda L: getattr(L.nn, f"FractionalMaxPool{nd}d")(k, **kw), ())


# -- errors: torch's types and messages ------------------------------------------------------------------------------
ERRORS = {
    "adaptive_max_pool1d_negative": (lambda L, x: L.nn.functional.adaptive_max_pool1d(x, (-1,)), (1, 1, 1)),
    "adaptive_max_pool1d_negative_unbatched": (lambda L, x: L.nn.functional.adaptive_max_pool1d(x, -2), (2, 3)),
    "adaptive_max_pool2d_negative": (lambda L, x: L.nn.functional.adaptive_max_pool2d(x, (-1, 0)), (1, 1, 1, 1)),
    "adaptive_max_pool2d_negative_w": (lambda L, x: L.nn.functional.adaptive_max_pool2d(x, (2, -2)), (2, 3, 3)),
    "adaptive_max_pool2d_short_input": (lambda L, x: L.nn.functional.adaptive_max_pool2d(x, (2, 2)), (2, 2)),
    "prelu_zero_dim": (lambda L, x, w: L.nn.functional.prelu(x, w), ((), (2,))),
    "prelu_2d_weight": (lambda L, x, w: L.nn.functional.prelu(x, w), ((8, 3, 3), (1, 3))),
    "prelu_2d_scalar_weight": (lambda L, x, w: L.nn.functional.prelu(x, w), ((8, 3, 3), (1, 1))),
    "softshrink_negative": (lambda L, x: L.nn.functional.softshrink(x, -0.5), (3,)),
    "softshrink_nan": (lambda L, x: L.nn.functional.softshrink(x.float(), float("nan")), (3,)),
    "hardtanh_min_above_max": (lambda L, x: L.nn.functional.hardtanh(x, 0.5, -0.5), (3,)),
    "hardtanh_module": (lambda L, x: L.nn.Hardtanh(0.5, -0.5), (3,)),
    "huber_zero_delta": (lambda L, x: L.nn.functional.huber_loss(x, x * 2, delta=0.0), (3,)),
    "huber_negative_delta_none": (lambda L, x: L.nn.functional.huber_loss(x, x * 2, reduction="none", delta=-1.0),
                                  (3,)),
    "multi_margin_weight_before_target_dtype": (
        lambda L, x, t, w: L.nn.functional.multi_margin_loss(x, t, weight=w), ((5, 4), (5,), (5,))),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    fn, shapes = ERRORS[name]
    shapes = shapes if isinstance(shapes[0], tuple) or shapes == ((),) else (shapes,)
    if name.startswith("prelu") or name.startswith("multi_margin"):
        args = tuple(_r(*s, grad=False, dtype=torch.float32) for s in shapes)
    else:
        args = (_r(*shapes[0], grad=False, dtype=torch.float32),)
    _errors_match(fn, args)


def test_prelu_refuses_mixed_dtypes_as_torch():
    _errors_match(lambda L, x, w: L.nn.functional.prelu(x, w), (_r(8, 3, 3, dtype=torch.float32), _r(3)))


# -- torch's native_* normalizations and _softmax_backward_data --------------------------------------------------------
NATIVE = {
    "native_layer_norm": (lambda L, x, w, b: L.native_layer_norm(x, (3, 4), w, b, 1e-5), ((2, 3, 4), (3, 4), (3, 4))),
    "native_layer_norm_no_affine": (lambda L, x: L.native_layer_norm(x, [4], None, None, 1e-3), ((2, 3, 4),)),
    "native_batch_norm_training": (lambda L, x, w, b: L.native_batch_norm(
        x, w, b, L.zeros(3, dtype=L.float64), L.ones(3, dtype=L.float64), True, 0.1, 1e-5), ((4, 3, 5), (3,), (3,))),
    "native_batch_norm_eval": (lambda L, x, w, b: L.native_batch_norm(
        x, w, b, L.zeros(3, dtype=L.float64) + 0.5, L.ones(3, dtype=L.float64) * 2, False, 0.1, 1e-5),
        ((4, 3, 5), (3,), (3,))),
    "native_batch_norm_legit_no_stats": (lambda L, x: L._native_batch_norm_legit(x, None, None, True, 0.1, 1e-5),
                                         ((4, 3, 2, 2),)),
    "native_group_norm": (lambda L, x, w, b: L.native_group_norm(x, w, b, 2, 6, 5, 3, 1e-5), ((2, 6, 5), (6,), (6,))),
    "softmax_backward_data": (lambda L, g, y: L._softmax_backward_data(g, y.softmax(1), 1, L.float64),
                              ((3, 4), (3, 4))),
}


@pytest.mark.parametrize("name", list(NATIVE))
def test_native_normalizations_match_torch(name):
    fn, shapes = NATIVE[name]
    _compare(fn, tuple(_r(*s, seed=i) for i, s in enumerate(shapes)), rtol=1e-6, atol=1e-8)


def test_native_batch_norm_updates_the_running_statistics_as_torch():
    x = _r(4, 3, 5, grad=False)
    stats = []
    for L in (torch, tg):
        rm, rv = L.zeros(3, dtype=L.float64), L.ones(3, dtype=L.float64)
        L.native_batch_norm(_to_tg(x) if L is tg else x, None, None, rm, rv, True, 0.3, 1e-5)
        stats.append((rm.numpy(), rv.numpy()))
    np.testing.assert_allclose(stats[1][0], stats[0][0], rtol=1e-12)
    np.testing.assert_allclose(stats[1][1], stats[0][1], rtol=1e-12)
