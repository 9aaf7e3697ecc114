"""RMSNorm, InstanceNorm, the margin / embedding / likelihood losses, distances, Bilinear, ChannelShuffle,
Softmax2d and EmbeddingBag against torch 2.13: values, gradients (float32 and float64), second order, every
reduction, reprs, state_dicts both ways, init, and errors (type and message)."""
import collections
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tapegrad as tg
import tapegrad.nn.functional as GF

RNG = np.random.default_rng(1919)
SIGNS = RNG.choice([-1.0, 1.0], size=(5, 4))
SIGNS_MIXED = RNG.choice([-1.0, 1.0, 0.0], size=(5, 4))  # (hinge: neither 1 nor -1 counts both terms)
BINARY = (RNG.random((5, 4)) > 0.5).astype(float)
COUNTS = RNG.integers(0, 6, size=(5, 4)).astype(float)
INDICES = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 0])
OFFSETS = np.array([0, 3, 3, 7, 8])  # (an empty bag: 3..3)
BAGS_2D = np.array([[1, 2, 0], [4, 4, 7], [0, 0, 0], [8, 3, 2]])


def _const(lib, a, dtype=None):
    a = np.asarray(a)
    return lib.tensor(a.astype(dtype) if dtype is not None else a)


# name: (function of (F, lib, dtype, *tensors), input shapes); every input gets a gradient
CASES = {
    "rms_norm": (lambda F, L, d, x, w: F.rms_norm(x, (4, 5), w), [(3, 4, 5), (4, 5)]),
    "rms_norm_eps": (lambda F, L, d, x: F.rms_norm(x, [6], eps=1e-3), [(2, 3, 6)]),
    "instance_norm": (lambda F, L, d, x: F.instance_norm(x), [(2, 3, 5, 4)]),
    "instance_norm_affine": (lambda F, L, d, x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-3),
                             [(3, 2, 7), (2,), (2,)]),
    "instance_norm_eval_stats": (lambda F, L, d, x, w, b: F.instance_norm(
        x, _const(L, [0.5, -1.0, 0.2], d), _const(L, [2.0, 0.5, 1.5], d), w, b, use_input_stats=False),
        [(2, 3, 6), (3,), (3,)]),
    "instance_norm_3d": (lambda F, L, d, x, w, b: F.instance_norm(x, weight=w, bias=b), [(2, 2, 3, 2, 2), (2,), (2,)]),
    "cosine_similarity": (lambda F, L, d, a, b: F.cosine_similarity(a, b), [(4, 5, 3), (4, 5, 3)]),
    "cosine_similarity_bcast_dim": (lambda F, L, d, a, b: F.cosine_similarity(a, b, dim=-1, eps=1e-6),
                                    [(4, 1, 6), (3, 6)]),
    "pairwise_distance": (lambda F, L, d, a, b: F.pairwise_distance(a, b), [(5, 4), (5, 4)]),
    "pairwise_distance_p1_keepdim": (lambda F, L, d, a, b: F.pairwise_distance(a, b, p=1.0, keepdim=True),
                                     [(5, 4), (4,)]),
    "pairwise_distance_p3": (lambda F, L, d, a, b: F.pairwise_distance(a, b, p=3, eps=1e-3), [(2, 3, 4), (2, 3, 4)]),
    "bilinear": (lambda F, L, d, a, b, w, c: F.bilinear(a, b, w, c), [(5, 3), (5, 4), (2, 3, 4), (2,)]),
    "bilinear_batch_dims_nobias": (lambda F, L, d, a, b, w: F.bilinear(a, b, w), [(2, 3, 3), (2, 3, 2), (4, 3, 2)]),
    "bilinear_1d": (lambda F, L, d, a, b, w: F.bilinear(a, b, w), [(3,), (2,), (4, 3, 2)]),
    "channel_shuffle": (lambda F, L, d, x: F.channel_shuffle(x, 3), [(2, 6, 2, 3)]),
    "channel_shuffle_3d": (lambda F, L, d, x: F.channel_shuffle(x, 2), [(2, 4, 5)]),
    "embedding_bag_mean": (lambda F, L, d, w: F.embedding_bag(_const(L, INDICES), w, _const(L, OFFSETS)),
                           [(10, 3)]),
    "embedding_bag_sum_psw": (lambda F, L, d, w, p: F.embedding_bag(_const(L, INDICES), w, _const(L, OFFSETS),
                                                                  mode="sum", per_sample_weights=p), [(10, 3), (12,)]),
    "embedding_bag_max": (lambda F, L, d, w: F.embedding_bag(_const(L, INDICES), w, _const(L, OFFSETS), mode="max"),
                          [(10, 3)]),
    "embedding_bag_2d_padding": (lambda F, L, d, w: F.embedding_bag(_const(L, BAGS_2D), w, padding_idx=0),
                                 [(10, 4)]),
    "embedding_bag_2d_sum_padding_psw": (lambda F, L, d, w, p: F.embedding_bag(
        _const(L, BAGS_2D), w, mode="sum", per_sample_weights=p, padding_idx=-6), [(10, 4), (4, 3)]),
    "embedding_bag_max_padding": (lambda F, L, d, w: F.embedding_bag(_const(L, BAGS_2D), w, mode="max", padding_idx=0),
                                  [(10, 2)]),
    "embedding_bag_last_offset": (lambda F, L, d, w: F.embedding_bag(
        _const(L, INDICES), w, _const(L, np.append(OFFSETS, 12)), mode="sum", include_last_offset=True), [(10, 3)]),
    "embedding_bag_int32": (lambda F, L, d, w: F.embedding_bag(_const(L, INDICES.astype(np.int32)), w,
                                                             _const(L, OFFSETS.astype(np.int32)), mode="mean"),
                            [(10, 3)]),
    "softmax2d": (lambda F, L, d, x: L.nn.Softmax2d()(x), [(2, 3, 4, 2)]),
}

LOSSES = {
    "margin_ranking": (lambda F, L, d, r, a, b: F.margin_ranking_loss(a, b, _const(L, SIGNS, d), margin=0.3,
                                                                      reduction=r), [(5, 4), (5, 4)]),
    "hinge_embedding": (lambda F, L, d, r, x: F.hinge_embedding_loss(x, _const(L, SIGNS_MIXED, d), margin=0.5,
                                                                     reduction=r), [(5, 4)]),
    "cosine_embedding": (lambda F, L, d, r, a, b: F.cosine_embedding_loss(a, b, _const(L, SIGNS[:, 0], d),
                                                                          margin=-0.2, reduction=r), [(5, 4), (5, 4)]),
    "cosine_embedding_0d": (lambda F, L, d, r, a, b: F.cosine_embedding_loss(a, b, _const(L, -1.0, d), reduction=r),
                            [(6,), (6,)]),
    "triplet_margin": (lambda F, L, d, r, a, p, n: F.triplet_margin_loss(a, p, n, margin=2.0, reduction=r),
                       [(5, 4), (5, 4), (5, 4)]),
    "triplet_margin_swap_p1": (lambda F, L, d, r, a, p, n: F.triplet_margin_loss(a, p, n, margin=1.5, p=1, swap=True,
                                                                                 reduction=r),
                               [(5, 4), (5, 4), (5, 4)]),
    "triplet_with_distance": (lambda F, L, d, r, a, p, n: F.triplet_margin_with_distance_loss(a, p, n, reduction=r),
                              [(5, 4), (5, 4), (5, 4)]),
    "triplet_with_cosine_distance_swap": (lambda F, L, d, r, a, p, n: F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda x, y: 1 - F.cosine_similarity(x, y), margin=0.5, swap=True, reduction=r),
        [(5, 4), (5, 4), (5, 4)]),
    "poisson_nll": (lambda F, L, d, r, x: F.poisson_nll_loss(x, _const(L, COUNTS, d), reduction=r), [(5, 4)]),
    "poisson_nll_rates_full": (lambda F, L, d, r, x: F.poisson_nll_loss(x * x + 0.1, _const(L, COUNTS, d),
                                                                        log_input=False, full=True, reduction=r),
                               [(5, 4)]),
    "gaussian_nll": (lambda F, L, d, r, x, t, v: F.gaussian_nll_loss(x, t, v * v + 0.05, reduction=r),
                     [(5, 4), (5, 4), (5, 4)]),
    "gaussian_nll_full_homoscedastic": (lambda F, L, d, r, x, t, v: F.gaussian_nll_loss(x, t, v * v, full=True,
                                                                                        eps=0.5, reduction=r),
                                        [(5, 4), (5, 4), (5,)]),
    "gaussian_nll_float_var": (lambda F, L, d, r, x, t: F.gaussian_nll_loss(x, t, 0.7, reduction=r),
                               [(5, 4), (5, 4)]),
    "multilabel_soft_margin": (lambda F, L, d, r, x: F.multilabel_soft_margin_loss(x, _const(L, BINARY, d),
                                                                                   reduction=r), [(5, 4)]),
    "multilabel_soft_margin_weight": (lambda F, L, d, r, x, w: F.multilabel_soft_margin_loss(
        x, _const(L, BINARY, d), weight=w, reduction=r), [(5, 4), (4,)]),
}
for _name, (_fn, _shapes) in LOSSES.items():
    for _r in ("none", "mean", "sum"):
        CASES[f"{_name}-{_r}"] = ((lambda fn, r: lambda F, L, d, *ts: fn(F, L, d, r, *ts))(_fn, _r), _shapes)


def _inputs(shapes, dtype):
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 2e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name, dtype, rtol):
    fn, shapes = CASES[name]
    arrays = _inputs(shapes, dtype)
    results = []
    for lib, F in ((torch, TF), (tg, GF)):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(F, lib, dtype, *ts)
        proj = lib.tensor(np.cos(np.arange(out.numel()) + 0.5).reshape(tuple(out.shape)).astype(dtype))
        (out * proj).sum().backward()
        results.append((out, [t.grad for t in ts]))
    (theirs, their_grads), (ours, our_grads) = results
    atol = rtol * 10
    assert tuple(ours.shape) == tuple(theirs.shape) and repr(ours.dtype) == repr(theirs.dtype)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)
    for i, (a, b) in enumerate(zip(our_grads, their_grads)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=atol, err_msg=f"input {i}")


SECOND_ORDER = ["rms_norm", "instance_norm_affine", "cosine_similarity", "pairwise_distance", "bilinear",
                "margin_ranking-sum", "cosine_embedding-mean", "triplet_margin-mean",
                "poisson_nll_rates_full-mean", "gaussian_nll-sum", "multilabel_soft_margin_weight-none",
                "hinge_embedding-mean", "triplet_with_cosine_distance_swap-sum", "instance_norm_3d", "channel_shuffle",
                "rms_norm_eps", "softmax2d"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_matches_torch(name):
    """grad of (sum of squares of the first gradients) with respect to every input, create_graph=True."""
    fn, shapes = CASES[name]
    arrays = _inputs(shapes, np.float64)
    results = []
    for lib, F in ((torch, TF), (tg, GF)):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(F, lib, np.float64, *ts)
        proj = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        grads = lib.autograd.grad((out * out * proj).sum(), ts, create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), ts, allow_unused=True)
        results.append([None if s is None else s.detach().numpy() for s in second])
    for i, (b, a) in enumerate(zip(*results)):
        if b is None:
            assert a is None or not np.any(a), i
        else:
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-9, err_msg=f"input {i}")


def _bags_in_torch(w, mode, psw):
    """torch's embedding_bag has no second derivative: the same bags from indexing, which has one."""
    outs = []
    for b, (lo, hi) in enumerate(zip(OFFSETS, np.append(OFFSETS[1:], len(INDICES)))):
        rows = w[torch.tensor(INDICES[lo:hi])]
        if psw is not None:
            rows = rows * psw[lo:hi, None]
        outs.append(torch.zeros(w.shape[1], dtype=w.dtype) if hi == lo else
                    rows.sum(0) if mode == "sum" else rows.mean(0) if mode == "mean" else rows.max(0).values)
    return torch.stack(outs)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_second_order_matches_torch_indexing(mode):
    w0, p0 = RNG.standard_normal((10, 3)), RNG.standard_normal(12)
    results = []
    for lib in (torch, tg):
        w = lib.tensor(w0, requires_grad=True)
        p = lib.tensor(p0, requires_grad=True) if mode == "sum" else None
        ts = [w] if p is None else [w, p]
        out = (_bags_in_torch(w, mode, p) if lib is torch else
               GF.embedding_bag(tg.tensor(INDICES), w, tg.tensor(OFFSETS), mode=mode, per_sample_weights=p))
        proj = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        grads = lib.autograd.grad((out * out * proj).sum(), ts, create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), ts)
        results.append([s.detach().numpy() for s in second])
    for a, b in zip(results[1], results[0]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_legacy_size_average_and_reduce_warn_and_reduce_as_torch():
    a, b = RNG.standard_normal((2, 5, 4))
    for kw in (dict(size_average=False), dict(reduce=False), dict(size_average=True, reduce=True)):
        got = []
        for lib, F in ((torch, TF), (tg, GF)):
            with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
                got.append(F.margin_ranking_loss(lib.tensor(a), lib.tensor(b), lib.tensor(SIGNS), **kw).numpy())
        np.testing.assert_allclose(got[1], got[0], rtol=1e-12)


def test_empty_input_means_are_nan_as_torch():
    for lib, F in ((torch, TF), (tg, GF)):
        z = lib.zeros(0, 4, dtype=lib.float64)
        assert np.isnan(F.margin_ranking_loss(z, z, z).item())
        assert F.hinge_embedding_loss(z, z, reduction="sum").item() == 0


# -- modules ---------------------------------------------------------------------------------------------------------
MODULES = [
    ("RMSNorm", (4,), {}),
    ("RMSNorm", ([3, 4],), dict(eps=1e-3, elementwise_affine=False)),
    ("InstanceNorm1d", (3,), {}),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True)),
    ("InstanceNorm2d", (3,), dict(affine=True, bias=False, momentum=None, eps=1e-3)),
    ("InstanceNorm1d", (4,), dict(track_running_stats=True)),
    ("InstanceNorm3d", (2,), dict(affine=True)),
    ("TripletMarginWithDistanceLoss", (), {}),
    ("TripletMarginWithDistanceLoss", (), dict(margin=2.0, swap=True, reduction="sum")),
    ("MarginRankingLoss", (), {}),
    ("MarginRankingLoss", (0.5,), dict(reduction="sum")),
    ("HingeEmbeddingLoss", (), {}),
    ("CosineEmbeddingLoss", (), {}),
    ("TripletMarginLoss", (), dict(margin=2.0, p=1, swap=True)),
    ("PoissonNLLLoss", (), dict(log_input=False, full=True)),
    ("GaussianNLLLoss", (), dict(full=True, eps=1e-3)),
    ("MultiLabelSoftMarginLoss", (), {}),
    ("CosineSimilarity", (), {}),
    ("PairwiseDistance", (), dict(p=1.0, keepdim=True)),
    ("Bilinear", (2, 3, 4), {}),
    ("Bilinear", (2, 3, 4), dict(bias=False)),
    ("ChannelShuffle", (2,), {}),
    ("Softmax2d", (), {}),
    ("EmbeddingBag", (10, 3), {}),
    ("EmbeddingBag", (10, 3), dict(mode="sum", padding_idx=-1, include_last_offset=True)),
    ("EmbeddingBag", (10, 3), dict(mode="max", max_norm=1.0, norm_type=1.0)),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MODULES)])
def test_module_repr_attributes_and_state_dict_keys(name, args, kwargs):
    ours, theirs = getattr(tg.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (ka, a), (kb, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert tuple(a.shape) == tuple(b.shape) and repr(a.dtype) == repr(b.dtype), ka
        np.testing.assert_array_equal(a.numpy(), b.numpy()) if not name.startswith(("Bilinear", "Embedding")) else None
    for attr in ("reduction", "margin", "p", "eps", "swap", "log_input", "full", "dim", "norm", "keepdim", "groups",
                 "mode", "padding_idx", "include_last_offset", "momentum", "affine", "track_running_stats",
                 "normalized_shape", "elementwise_affine"):
        assert getattr(ours, attr, "absent") == getattr(theirs, attr, "absent"), attr


def test_weighted_loss_keeps_its_weight_as_a_buffer():
    w = np.array([1.0, 2.0, 0.5, 3.0])
    ours, theirs = tg.nn.MultiLabelSoftMarginLoss(tg.tensor(w)), torch.nn.MultiLabelSoftMarginLoss(torch.tensor(w))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    x = RNG.standard_normal((5, 4))
    np.testing.assert_allclose(ours(tg.tensor(x), tg.tensor(BINARY)).item(),
                               theirs(torch.tensor(x), torch.tensor(BINARY)).item(), rtol=1e-12)


def _twin(name, *args, **kwargs):
    theirs = getattr(torch.nn, name)(*args, **kwargs).double()
    ours = getattr(tg.nn, name)(*args, **kwargs).double()
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


MODULE_RUNS = [  # (name, args, kwargs, input shapes, extra constant arguments)
    ("RMSNorm", ((3, 4),), {}, [(2, 3, 4)], []),
    ("InstanceNorm1d", (3,), dict(affine=True), [(2, 3, 5)], []),
    ("InstanceNorm1d", (3,), {}, [(3, 5)], []),  # (unbatched)
    ("InstanceNorm2d", (2,), dict(affine=True, bias=False), [(2, 2, 3, 4)], []),
    ("InstanceNorm3d", (2,), dict(affine=True), [(2, 3, 2, 4)], []),  # (unbatched)
    ("TripletMarginWithDistanceLoss", (), dict(swap=True), [(5, 4), (5, 4), (5, 4)], []),
    ("Bilinear", (3, 2, 4), {}, [(5, 3), (5, 2)], []),
    ("CosineSimilarity", (), dict(dim=0), [(4, 3), (4, 3)], []),
    ("PairwiseDistance", (), dict(p=np.inf), [(4, 3), (4, 3)], []),
    ("ChannelShuffle", (2,), {}, [(1, 4, 3)], []),
    ("Softmax2d", (), {}, [(3, 2, 2)], []),
    ("EmbeddingBag", (10, 3), dict(mode="sum"), [], [INDICES, OFFSETS]),
    ("EmbeddingBag", (10, 3), dict(mode="max", padding_idx=0), [], [BAGS_2D]),
    ("MarginRankingLoss", (0.1,), {}, [(5, 4), (5, 4)], [SIGNS]),
    ("HingeEmbeddingLoss", (), dict(reduction="sum"), [(5, 4)], [SIGNS]),
    ("CosineEmbeddingLoss", (0.1,), {}, [(5, 4), (5, 4)], [SIGNS[:, 1]]),
    ("TripletMarginLoss", (), dict(swap=True), [(5, 4), (5, 4), (5, 4)], []),
    ("PoissonNLLLoss", (), dict(reduction="none"), [(5, 4)], [COUNTS]),
    ("GaussianNLLLoss", (), dict(full=True), [(5, 4), (5, 4)], [np.full((5, 1), 0.8)]),
    ("MultiLabelSoftMarginLoss", (), {}, [(5, 4)], [BINARY]),
]


@pytest.mark.parametrize("i", range(len(MODULE_RUNS)), ids=[f"{m[0]}-{i}" for i, m in enumerate(MODULE_RUNS)])
def test_modules_with_torchs_state_match_torch(i):
    name, args, kwargs, shapes, consts = MODULE_RUNS[i]
    ours, theirs = _twin(name, *args, **kwargs)
    arrays = _inputs(shapes, np.float64)
    outs = []
    for lib, m in ((torch, theirs), (tg, ours)):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = m(*ts, *[lib.tensor(c) for c in consts])
        (out * out).sum().backward()
        grads = [t.grad.numpy() for t in ts] + [p.grad.numpy() for p in m.parameters()]
        outs.append((out.detach().numpy(), grads))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-10, atol=1e-12)
    for a, b in zip(outs[1][1], outs[0][1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,shape", [("InstanceNorm2d", (4, 3, 5, 5)), ("InstanceNorm1d", (5, 3, 4)),
                                        ("InstanceNorm1d", (3, 6))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_instance_norm_running_stats_train_and_eval(name, shape, momentum):
    ours, theirs = _twin(name, 3, momentum=momentum, affine=True, track_running_stats=True)
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
    (a * a).sum().backward(), (b * b).sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), xb.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_instance_norm_without_tracking_uses_batch_statistics_in_eval():
    ours, theirs = _twin("InstanceNorm2d", 2)
    ours.eval(), theirs.eval()
    x = RNG.standard_normal((2, 2, 3, 3))
    np.testing.assert_allclose(ours(tg.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), rtol=1e-10, atol=1e-12)


def test_state_dicts_load_both_ways():
    def model(nn):
        return nn.ModuleDict({"bag": nn.EmbeddingBag(12, 6, mode="sum"), "norm": nn.RMSNorm(6),
                              "inorm": nn.InstanceNorm1d(2, affine=True, track_running_stats=True),
                              "bil": nn.Bilinear(6, 3, 4)})

    def run(m, lib):
        h = m["norm"](m["bag"](lib.tensor(INDICES), lib.tensor(OFFSETS)))
        h = m["inorm"](h.reshape(5, 2, 3)).reshape(5, 6)
        return m["bil"](h, lib.tensor(np.linspace(-1, 1, 15).reshape(5, 3).astype(np.float32)))

    theirs, ours = model(torch.nn), model(tg.nn)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_allclose(run(ours, tg).detach().numpy(), run(theirs, torch).detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    back = model(torch.nn)
    back.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    for k, v in back.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), ours.state_dict()[k].numpy(), err_msg=k)


def test_instance_norm_rejects_pre_0_4_running_stats_as_torch():
    sd = {"running_mean": np.zeros(3, np.float32), "running_var": np.ones(3, np.float32)}
    msgs = []
    for lib in (torch, tg):
        m = lib.nn.InstanceNorm1d(3)
        state = {k: lib.tensor(v) for k, v in sd.items()}
        state = collections.OrderedDict(state)
        state._metadata = {"": {}}  # (no version: a checkpoint from before 0.4.0)
        with pytest.raises(RuntimeError) as e:
            m.load_state_dict(state)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("name,args", [("Bilinear", (3, 5, 4)), ("EmbeddingBag", (7, 3)),
                                       ("EmbeddingBag", (7, 3, None, 2.0, False, "sum", False, None, False, 2))])
def test_init_draws_torch_values(name, args):
    torch.manual_seed(3), tg.manual_seed(3)
    a, b = getattr(tg.nn, name)(*args), getattr(torch.nn, name)(*args)
    for (k, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=k)


def test_embedding_bag_from_pretrained():
    w = RNG.standard_normal((6, 2))
    for freeze in (True, False):
        a = tg.nn.EmbeddingBag.from_pretrained(tg.tensor(w), freeze=freeze, mode="max")
        b = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), freeze=freeze, mode="max")
        assert repr(a) == repr(b) and a.weight.requires_grad == b.weight.requires_grad
        np.testing.assert_array_equal(a(tg.tensor([[1, 2], [5, 0]])).detach().numpy(),
                                      b(torch.tensor([[1, 2], [5, 0]])).detach().numpy())


def test_compile_replays_the_layers_and_matches_eager():
    def step(F, x, w, v, t, b):
        return (F.rms_norm(x, [4], w).sum() + F.bilinear(x, v, b).pow(2).sum() + F.poisson_nll_loss(x, t)
                + F.margin_ranking_loss(x, v, t - 1.5)
                + F.channel_shuffle(x.reshape(3, 2, 2), 2).pow(2).sum() + F.instance_norm(x.reshape(1, 3, 4)).sum()
                + F.multilabel_soft_margin_loss(x, t.clamp(0, 1)))
    _compiled_matches_eager(step, fullgraph=True)


def test_detached_clamps_and_norms_run_eagerly_under_compile():
    """cosine_similarity and gaussian_nll_loss clamp a detached copy (torch clamps under no_grad, so the gradient
    passes the clamp), hinge / cosine_embedding_loss select by the target (a where on a computed mask): no replay
    repeats those yet, so compile runs them eagerly, with the same results."""
    def step(F, x, w, v, t, b):
        return (F.cosine_similarity(x, v).sum() * w.sum() + F.gaussian_nll_loss(x, v, t + 0.5)
                + F.pairwise_distance(x, v).sum() + F.triplet_margin_loss(x, v, x * 0.5 + 1)
                + F.hinge_embedding_loss(x, t - 1) + F.cosine_embedding_loss(x, v, t[:, 0] - 1.5))
    with pytest.raises(RuntimeError, match="cannot replay this function"):
        _compiled_matches_eager(step, fullgraph=True)
    _compiled_matches_eager(step, fullgraph=False)


def _compiled_matches_eager(step, fullgraph):
    compiled = tg.compile(lambda *a: step(GF, *a), fullgraph=fullgraph)
    for k in range(3):
        x, v = RNG.standard_normal((2, 3, 4))
        w, b, t = RNG.standard_normal(4), RNG.standard_normal((2, 4, 4)), RNG.integers(0, 4, (3, 4)).astype(float)
        got, grads = [], []
        for fn in (compiled, lambda *a: step(GF, *a)):
            xs = [tg.tensor(a, requires_grad=True) for a in (x, w, v)]
            out = fn(*xs, tg.tensor(t), tg.tensor(b))
            out.backward()
            got.append(out.item()), grads.append([a.grad.numpy() for a in xs])
        np.testing.assert_allclose(got[0], got[1], rtol=1e-12)
        for a, b in zip(*grads):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


# -- errors: torch's type and message --------------------------------------------------------------------------------
ERRORS = [
    lambda F, T: F.rms_norm(T(2, 3, 4), [3]),
    lambda F, T: F.rms_norm(T(2, 3, 4), [2, 4]),
    lambda F, T: F.rms_norm(T(2, 3, 4), [4], T(3)),
    lambda F, T: F.rms_norm(T(2, 3, 4), []),
    lambda F, T: F.rms_norm(T(2, 3).long(), [3]),
    lambda F, T: F.instance_norm(T(2, 3, 1)),
    lambda F, T: F.instance_norm(T(3, 4)),
    lambda F, T: F.instance_norm(T(2, 3, 4), weight=T(4)),
    lambda F, T: F.instance_norm(T(2, 3, 4), bias=T(2)),
    lambda F, T: F.instance_norm(T(2, 3, 4), running_mean=T(4), running_var=T(4)),
    lambda F, T: F.instance_norm(T(2, 3, 4), use_input_stats=False),
    lambda F, T: F.margin_ranking_loss(T(3), T(3), T(3, 1)),
    lambda F, T: F.margin_ranking_loss(T(3), T(4), T(3)),
    lambda F, T: F.margin_ranking_loss(T(3), T(3), T(3), reduction="foo"),
    lambda F, T: F.hinge_embedding_loss(T(3), T(3), reduction="avg"),
    lambda F, T: F.triplet_margin_loss(T(3, 4), T(3, 4), T(4)),
    lambda F, T: F.triplet_margin_loss(T(3, 4), T(3, 4), T(3, 4), margin=0),
    lambda F, T: F.triplet_margin_loss(T(3, 4), T(3, 4), T(3, 4), margin=-1.0),
    lambda F, T: F.triplet_margin_with_distance_loss(T(3, 4), T(3, 4), T(4)),
    lambda F, T: F.triplet_margin_with_distance_loss(T(3, 4), T(3, 4), T(3, 4), margin=0.0),
    lambda F, T: F.triplet_margin_with_distance_loss(T(3, 4), T(3, 4), T(3, 4), reduction="avg"),
    lambda F, T: F.cosine_embedding_loss(T(3, 4), T(3, 4), T(3, 1)),
    lambda F, T: F.cosine_embedding_loss(T(3, 4), T(3), T(3)),
    lambda F, T: F.cosine_embedding_loss(T(3, 4), T(3, 4), T(1).sum()),
    lambda F, T: F.poisson_nll_loss(T(3), T(3), reduction="x"),
    lambda F, T: F.gaussian_nll_loss(T(3, 4), T(3, 4), T(3, 4).abs(), reduction="x"),
    lambda F, T: F.gaussian_nll_loss(T(3, 4), T(3, 4), -T(3, 4).abs() - 1),
    lambda F, T: F.gaussian_nll_loss(T(3, 4), T(3, 4), -1.0),
    lambda F, T: F.gaussian_nll_loss(T(3, 4), T(3, 4), T(2, 4).abs()),
    lambda F, T: F.gaussian_nll_loss(T(3, 4), T(3, 4), T(3, 2).abs()),
    lambda F, T: F.multilabel_soft_margin_loss(T(3, 4), T(3, 4), reduction="x"),
    lambda F, T: F.cosine_similarity(T(3, 4), T(3, 5)),
    lambda F, T: F.cosine_similarity(T(3, 4).long(), T(3, 4).long()),
    lambda F, T: F.cosine_similarity(T(3, 4), T(3, 4), dim=2),
    lambda F, T: F.pairwise_distance(T(3, 4), T(3, 5)),
    lambda F, T: F.bilinear(T(3, 2), T(3, 3, 3), T(4, 2, 3)),
    lambda F, T: F.bilinear(T(3, 2), T(4, 3), T(4, 2, 3)),
    lambda F, T: F.bilinear(T(3, 5), T(3, 3), T(4, 2, 3)),
    lambda F, T: F.bilinear(T(3, 2), T(3, 5), T(4, 2, 3)),
    lambda F, T: F.bilinear(T(3, 2), T(3, 3), T(4, 2, 3), T(5)),
    lambda F, T: F.channel_shuffle(T(2, 6, 3), 0),
    lambda F, T: F.channel_shuffle(T(2, 6, 3), -2),
    lambda F, T: F.channel_shuffle(T(2, 6, 3), 4),
    lambda F, T: F.channel_shuffle(T(2, 6), 2),
    lambda F, T: F.channel_shuffle(T(2, 6), 0),
]


def _I(lib):
    return lambda *v: lib.tensor(list(v))


EMBEDDING_BAG_ERRORS = [
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(1, 2)),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0, 4)),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0, 2), padding_idx=10),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0, 2), padding_idx=-11),
    lambda F, I, W: F.embedding_bag(I(1.0, 2, 3), W(10, 3), I(0)),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0.0)),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3).reshape(1, 3), W(10, 3), I(0)),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3)),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0), mode="foo"),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0), per_sample_weights=W(3), mode="mean"),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0), per_sample_weights=W(2), mode="sum"),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0), per_sample_weights=W(3).double(), mode="sum"),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10), I(0)),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3).reshape(1, 1, 3), W(10, 3)),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0).reshape(1, 1)),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0), mode="max", scale_grad_by_freq=True),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0), mode="max", sparse=True),
    lambda F, I, W: F.embedding_bag(I(1, 2, 13), W(10, 3), I(0, 2)),
    lambda F, I, W: F.embedding_bag(I(1, 2, -1), W(10, 3), I(0, 2)),
    lambda F, I, W: F.embedding_bag(I(1, 2, 3), W(10, 3), I(0, 2, 1)),
]


def _check_same_error(call_torch, call_ours):
    with pytest.raises(Exception) as theirs:
        call_torch()
    with pytest.raises(type(theirs.value)) as ours:
        call_ours()
    assert str(ours.value).replace("tapegrad.tensor.Tensor", "torch.Tensor") == str(theirs.value)


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    _check_same_error(lambda: ERRORS[i](TF, torch.randn),
                      lambda: ERRORS[i](GF, lambda *s: tg.tensor(RNG.standard_normal(s).astype(np.float32))))


@pytest.mark.parametrize("i", range(len(EMBEDDING_BAG_ERRORS)))
def test_embedding_bag_errors_match_torch(i):
    _check_same_error(lambda: EMBEDDING_BAG_ERRORS[i](TF, _I(torch), torch.randn),
                      lambda: EMBEDDING_BAG_ERRORS[i](GF, _I(tg), tg.randn))


def _T(nn):
    lib = torch if nn is torch.nn else tg
    return lambda *s: lib.tensor(RNG.standard_normal(s).astype(np.float32))


MODULE_ERRORS = [
    lambda nn: nn.InstanceNorm1d(3, affine=True)(_T(nn)(2, 4, 5)),
    lambda nn: nn.InstanceNorm1d(3)(_T(nn)(2, 3, 4, 5)),
    lambda nn: nn.InstanceNorm2d(3)(_T(nn)(3, 5)),
    lambda nn: nn.Softmax2d()(_T(nn)(2, 3)),
    lambda nn: nn.ChannelShuffle(2)(_T(nn)(2, 5, 3)),
    lambda nn: nn.TripletMarginLoss(margin=0.0),
    lambda nn: nn.TripletMarginWithDistanceLoss(margin=-1),
    lambda nn: nn.InstanceNorm3d(3)(_T(nn)(2, 3, 4)),
    lambda nn: nn.Bilinear(0, 2, 3),
    lambda nn: nn.EmbeddingBag(10, 3, padding_idx=10),
    lambda nn: nn.EmbeddingBag(10, 3, padding_idx=-11),
    lambda nn: nn.EmbeddingBag(10, 3, _weight=_T(nn)(3, 10)),
    lambda nn: nn.GaussianNLLLoss()(_T(nn)(3, 4), _T(nn)(3, 4), _T(nn)(4, 4).abs()),
]


@pytest.mark.parametrize("i", range(len(MODULE_ERRORS)))
def test_module_errors_match_torch(i):
    _check_same_error(lambda: MODULE_ERRORS[i](torch.nn), lambda: MODULE_ERRORS[i](tg.nn))


def test_instance_norm_warns_when_channels_differ_without_affine():
    for nn in (torch.nn, tg.nn):
        with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
            nn.InstanceNorm1d(3)(_T(nn)(2, 4, 5))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, float("inf")])
def test_embedding_bag_max_norm_matches_torch(mode, norm_type, dtype):
    """max_norm renorms the rows the indices name, in place and unrecorded, before the bags are taken: two calls
    then one backward (the second call's renorm is no error for the first call's backward, as in torch). Its own
    generator: drawn from the file's, the weights depended on which tests ran first, and under a narrow `-k` a
    float32 tie between a bag's renormed rows fell the other way for max mode."""
    w0 = np.random.default_rng(2021).standard_normal((10, 4)).astype(dtype)
    second = INDICES[::-1].copy()
    results = []
    for lib in (tg, torch):
        bag = lib.nn.EmbeddingBag(10, 4, max_norm=1.1, norm_type=norm_type, mode=mode)
        bag = bag.double() if dtype == np.float64 else bag
        with lib.no_grad():
            bag.weight.copy_(lib.tensor(w0))
        start = bag.weight._version
        a = bag(lib.tensor(INDICES), lib.tensor(OFFSETS))
        b = bag(lib.tensor(second), lib.tensor(OFFSETS))
        (a.sum() * 2 + (b * b).sum()).backward()
        results.append([a.detach().numpy(), b.detach().numpy(), bag.weight.detach().numpy().copy(),
                        bag.weight.grad.numpy(), bag.weight._version - start])
    ours, theirs = results
    assert ours[-1] == theirs[-1] == 2  # one in-place renorm per call
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    for a, b in zip(ours[:-1], theirs[:-1]):
        np.testing.assert_allclose(a, b, **tol)
    untouched = np.setdiff1d(np.arange(10), INDICES)
    np.testing.assert_array_equal(ours[2][untouched], w0[untouched])


def test_embedding_bag_max_norm_with_per_sample_weights_needs_the_weight_unchanged():
    """With per_sample_weights the backward reads the weight, so a renorm after the forward is torch's version
    error, in both libraries."""
    for lib in (tg, torch):
        bag = lib.nn.EmbeddingBag(10, 3, max_norm=0.5, mode="sum")
        psw = lib.ones(12, requires_grad=True)
        a = bag(lib.tensor(INDICES), lib.tensor(OFFSETS), per_sample_weights=psw)
        bag(lib.tensor(INDICES), lib.tensor(OFFSETS))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            a.sum().backward()


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 0.5])
def test_embedding_max_norm_and_renorm_match_torch(norm_type):
    """nn.Embedding(max_norm=) and torch.embedding_renorm_ itself."""
    w0 = RNG.standard_normal((8, 5)).astype(np.float32) * 2
    idx = np.array([[1, 5, 1], [7, 0, 5]])
    results = []
    for lib in (tg, torch):
        emb = lib.nn.Embedding(8, 5, max_norm=1.5, norm_type=norm_type)
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(w0))
        out = emb(lib.tensor(idx))
        (out * out).sum().backward()
        w = lib.tensor(w0)
        lib.embedding_renorm_(w, lib.tensor([2, 3, 3]), 0.5, norm_type)
        results.append([out.detach().numpy(), emb.weight.detach().numpy(), emb.weight.grad.numpy(), w.numpy()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("i", range(4))
def test_embedding_renorm_errors_match_torch(i):
    calls = [lambda L: L.embedding_renorm_(L.zeros(4, 3), L.tensor([1.0]), 1.0, 2.0),
             lambda L: L.embedding_renorm_(L.zeros(4), L.tensor([1]), 1.0, 2.0),
             lambda L: L.embedding_renorm_(L.zeros(4, 3), L.tensor([6, 4, 1]), 1.0, 2.0),
             lambda L: L.embedding_renorm_(L.zeros(4, 3), L.tensor([-5, 9]), 1.0, 2.0)]
    with pytest.raises(Exception) as theirs:
        calls[i](torch)
    with pytest.raises(type(theirs.value)) as ours:
        calls[i](tg)
    assert str(ours.value) == str(theirs.value)


def _bags_by_embedding(idx, w, offsets, mode, psw, padding_idx):
    """torch's documented scale_grad_by_freq for bags: F.embedding(scale_grad_by_freq=True), each bag summed (or
    averaged) by index_add. (torch 2.13's CPU embedding_bag divides by a wrong count when indices repeat unevenly,
    pytorch/pytorch#190063, fixed after 2.13; tapegrad follows the documented, fixed behaviour.)"""
    rows = TF.embedding(idx, w, padding_idx=padding_idx, scale_grad_by_freq=True)
    bag = torch.zeros(len(idx), dtype=torch.long)
    for b, start in enumerate(offsets.tolist()):
        bag[start:] = b
    keep = (idx != padding_idx) if padding_idx is not None else torch.ones(len(idx), dtype=torch.bool)
    rows = rows * keep[:, None] * (psw[:, None] if psw is not None else 1)
    out = torch.zeros(len(offsets), w.shape[1], dtype=w.dtype).index_add(0, bag, rows)
    if mode == "mean":
        out = out / torch.zeros(len(offsets), dtype=w.dtype).index_add(0, bag, keep.to(w.dtype)).clamp_min(1)[:, None]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode,psw,padding_idx", [("sum", False, None), ("mean", False, None), ("sum", True, None),
                                                  ("mean", False, 5), ("sum", True, 1)])
def test_embedding_bag_scale_grad_by_freq(mode, psw, padding_idx, dtype):
    """Each entry's gradient over its index's count in the whole input: against torch's embedding_bag where every
    index repeats equally often (where its CPU count is right), and against torch's documented semantics
    (embedding's scale_grad_by_freq, then the bags) where counts differ."""
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    even = np.array([3, 1, 4, 1, 3, 4, 0, 0])  # each index twice
    for idx, offsets, oracle in ((even, np.array([0, 3, 3, 5]), "embedding_bag"), (INDICES, OFFSETS, "composed")):
        w0 = RNG.standard_normal((10, 3)).astype(dtype)
        p0 = RNG.standard_normal(idx.shape).astype(dtype)
        g = RNG.standard_normal((len(offsets), 3)).astype(dtype)
        results = []
        for lib in (tg, torch):
            w, p = lib.tensor(w0, requires_grad=True), lib.tensor(p0, requires_grad=True)
            args = (lib.tensor(idx), w, lib.tensor(offsets))
            if lib is torch and oracle == "composed":
                out = _bags_by_embedding(*args, mode, p if psw else None, padding_idx)
            else:
                out = lib.nn.functional.embedding_bag(*args, mode=mode, scale_grad_by_freq=True,
                                                      per_sample_weights=p if psw else None, padding_idx=padding_idx)
            (out * lib.tensor(g)).sum().backward()
            results.append([out.detach().numpy(), w.grad.numpy()] + ([p.grad.numpy()] if psw else []))
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, err_msg=oracle, **tol)


def test_paths_are_torchs():
    import importlib
    for path, names in {"normalization": ["RMSNorm"],
                        "instancenorm": ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"],
                        "distance": ["CosineSimilarity", "PairwiseDistance"], "linear": ["Bilinear"],
                        "channelshuffle": ["ChannelShuffle"], "activation": ["Softmax2d"],
                        "sparse": ["EmbeddingBag"],
                        "loss": ["MarginRankingLoss", "TripletMarginLoss", "CosineEmbeddingLoss", "PoissonNLLLoss",
                                 "GaussianNLLLoss", "MultiLabelSoftMarginLoss", "HingeEmbeddingLoss",
                                 "TripletMarginWithDistanceLoss"]}.items():
        mine = importlib.import_module("tapegrad.nn.modules." + path)
        for name in names:
            assert getattr(torch.nn, name).__module__ == "torch.nn.modules." + path
            assert getattr(mine, name) is getattr(tg.nn, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert GF.native_channel_shuffle is GF.channel_shuffle


def test_embedding_bag_is_one_row_and_takes_torchs_first_maximum():
    """Equal maxima in a bag: the gradient goes to the first row holding it, as torch's max_indices say."""
    w0 = RNG.standard_normal((6, 3))
    w0[4, 1] = w0[2, 1] = 9.0
    grads = []
    for lib, F in ((torch, TF), (tg, GF)):
        w = lib.tensor(w0, requires_grad=True)
        out = F.embedding_bag(lib.tensor([1, 4, 2, 2, 5]), w, lib.tensor([0, 3]), mode="max")
        assert type(out.grad_fn).__name__ == "EmbeddingBagBackward0"
        (out * lib.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_float16_forward_matches_torch(mode):
    w = RNG.standard_normal((10, 3)).astype(np.float16)
    ours = GF.embedding_bag(tg.tensor(INDICES), tg.tensor(w), tg.tensor(OFFSETS), mode=mode, padding_idx=5)
    theirs = TF.embedding_bag(torch.tensor(INDICES), torch.tensor(w), torch.tensor(OFFSETS), mode=mode, padding_idx=5)
    assert repr(ours.dtype) == repr(theirs.dtype)
    np.testing.assert_allclose(ours.numpy().astype(float), theirs.numpy().astype(float), rtol=1e-3, atol=1e-3)


def test_embedding_bag_kernels_stay_in_bounds():
    """The compiled kernels under NUMBA_BOUNDSCHECK=1 (a fresh interpreter), on empty bags, padding and ties."""
    import os
    import subprocess
    import sys
    code = ("import numpy as np, tapegrad as tg, tapegrad.nn.functional as F\n"
            "w = tg.randn(7, 4, requires_grad=True); p = tg.randn(9, requires_grad=True)\n"
            "i, o = tg.tensor([0, 6, 6, 2, 0, 1, 3, 3, 5]), tg.tensor([0, 0, 4, 9])\n"
            "for m in ('sum', 'mean', 'max'):\n"
            "    F.embedding_bag(i, w, o, mode=m, padding_idx=0, per_sample_weights=p if m == 'sum' else None,\n"
            "                    include_last_offset=True).sum().backward()\n"
            "print('ok', w.grad.shape, p.grad.shape)\n")
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", PYTHONPATH=os.getcwd())
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr[-2000:]


@pytest.mark.parametrize("name,args", [
    ("rms_norm", lambda T: (T(2, 3), [3], T(3))), ("cosine_similarity", lambda T: (T(4, 3), T(4, 3), 0)),
    ("pairwise_distance", lambda T: (T(4, 3), T(4, 3), 1.5)), ("bilinear", lambda T: (T(5, 2), T(5, 3), T(4, 2, 3))),
    ("channel_shuffle", lambda T: (T(1, 6, 2), 3)), ("native_channel_shuffle", lambda T: (T(1, 6, 2), 2))])
def test_torch_level_functions(name, args):
    arrays = args(lambda *s: RNG.standard_normal(s))
    ours = getattr(tg, name)(*[tg.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays])
    theirs = getattr(torch, name)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays])
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)


def test_embedding_bag_entries_past_the_last_csr_offset_are_in_no_bag():
    """include_last_offset with a last offset short of the input (torch's documentation asks for the input's
    length; torch's kernels disagree with each other there and its gradient reads uninitialised memory): the
    CSR meaning, bag b = entries offsets[b]:offsets[b + 1], and no gradient to the entries past the last."""
    w0, p0 = RNG.standard_normal((10, 3)), RNG.standard_normal(12)
    offsets = np.append(OFFSETS, 10)
    w, p = tg.tensor(w0, requires_grad=True), tg.tensor(p0, requires_grad=True)
    ours = GF.embedding_bag(tg.tensor(INDICES), w, tg.tensor(offsets), mode="sum", per_sample_weights=p,
                            include_last_offset=True)
    want = [sum((w0[INDICES[e]] * p0[e] for e in range(lo, hi)), np.zeros(3)) for lo, hi in zip(offsets, offsets[1:])]
    np.testing.assert_allclose(ours.detach().numpy(), np.array(want), rtol=1e-12)
    ours.sum().backward()
    assert not np.any(p.grad.numpy()[10:]) and np.all(p.grad.numpy()[:10] != 0)
