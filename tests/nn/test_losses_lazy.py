"""soft_margin / multi_margin / multilabel_margin losses (functional and modules), NLLLoss2d, torch's top-level
(aten) margin / hinge / triplet / poisson losses, AdaptiveLogSoftmaxWithLoss and the Lazy modules, against torch
2.13: values, gradients (float32 and float64), second order where torch has it, reprs, state_dicts, initial values
after manual_seed, warnings, and errors (type and message)."""
import copy
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tapegrad as tg
import tapegrad.nn.functional as GF
from tapegrad.nn.modules import lazy as glazy
from tapegrad.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from tapegrad.ops import metric_loss

RNG = np.random.default_rng(2013)
X = RNG.standard_normal((5, 4))
Y = np.array([0, 2, 3, 1, 3])
W = RNG.random(4) + 0.5
SIGNS = RNG.choice([-1.0, 1.0], size=(5, 4))
MULTI = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 3], [2, -1, -1, -1], [0, 1, 2, 3]])
REPEATED = np.array([[1, 1, -1, 0], [2, 2, 2, 2], [3, 0, 3, -1], [0, 1, 2, 3], [-1, -1, -1, -1]])  # (repeats count)
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}


def _run(lib, fn, arrays, dtype, grad_first=True):
    ts = [lib.tensor(a.astype(dtype) if a.dtype.kind == "f" else a) for a in arrays]
    if grad_first:
        ts[0].requires_grad_(True)
    out = fn(lib, *ts)
    g = None
    if grad_first:
        g, = lib.autograd.grad((out * lib.arange(1.0, out.numel() + 1, dtype=out.dtype).reshape(out.shape)).sum(),
                               ts[0])
    return out, g


def _compare(fn, arrays, dtype=np.float64):
    ot, gt = _run(torch, fn, arrays, dtype)
    og, gg = _run(tg, fn, arrays, dtype)
    assert type(og.grad_fn).__name__ == type(ot.grad_fn).__name__
    assert tuple(ot.shape) == tuple(og.shape)
    assert str(ot.dtype) == str(og.dtype)
    np.testing.assert_allclose(og.detach().numpy(), ot.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(gg.numpy(), gt.numpy(), **TOL[dtype])


def _F(lib):
    return TF if lib is torch else GF


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss(dtype, reduction, p, weighted):
    if weighted:
        _compare(lambda lib, x, y, w: _F(lib).multi_margin_loss(x, y, p=p, margin=0.7, weight=w, reduction=reduction),
                 [X, Y, W], dtype)
    else:
        _compare(lambda lib, x, y: _F(lib).multi_margin_loss(x, y, p=p, margin=0.7, reduction=reduction), [X, Y], dtype)


@pytest.mark.parametrize("target", [np.array(2), np.array([2])])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_multi_margin_loss_vector_input(target, reduction):
    _compare(lambda lib, x, y: _F(lib).multi_margin_loss(x, y, reduction=reduction), [X[1], target], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss(dtype, reduction):
    _compare(lambda lib, x, y: _F(lib).multilabel_margin_loss(x, y, reduction=reduction), [X, MULTI], dtype)
    _compare(lambda lib, x, y: _F(lib).multilabel_margin_loss(x, y, reduction=reduction), [X[0], MULTI[0]], dtype)
    _compare(lambda lib, x, y: _F(lib).multilabel_margin_loss(x, y, reduction=reduction), [X, REPEATED], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_soft_margin_loss(dtype, reduction):
    _compare(lambda lib, x, y: _F(lib).soft_margin_loss(x, y, reduction=reduction), [X, SIGNS], dtype)


@pytest.mark.parametrize("shapes", [((5, 4), (4,)), ((5, 4), (5, 1)), ((4,), (5, 4)), ((5, 1), (5, 4))])
def test_soft_margin_loss_broadcasts(shapes):
    """The target broadcasts to the input; an input smaller than the broadcast shape is torch's error."""
    x = RNG.standard_normal(shapes[0])
    t = RNG.choice([-1.0, 1.0], size=shapes[1])
    for reduction in ("none", "sum"):
        fn = lambda lib, a, b: _F(lib).soft_margin_loss(a, b, reduction=reduction)  # noqa: E731
        expected = _error(lambda: fn(torch, torch.tensor(x), torch.tensor(t)))
        if expected is None:
            _compare(fn, [x, t])
        else:
            assert _error(lambda: fn(tg, tg.tensor(x), tg.tensor(t))) == expected


def test_margin_losses_replay_under_compile():
    """tapegrad.compile replays the rows on new inputs and targets (the targets are row inputs, not constants)."""
    w = tg.tensor(RNG.standard_normal((4, 5)), requires_grad=True)
    fns = {"multi": lambda x, y: GF.multi_margin_loss(x @ w, y, p=2),
           "multilabel": lambda x, y: GF.multilabel_margin_loss(x @ w, y),
           "soft": lambda x, y: GF.soft_margin_loss(x @ w, y)}
    labels = np.array([[1, 0, -1, 2, 3], [4, -1, 0, 0, 0], [0, 1, 2, 3, 4]])
    targets = {"multi": lambda i: tg.tensor(np.array([i % 5, (i + 2) % 5, 4])),
               "multilabel": lambda i: tg.tensor(np.roll(labels, i, axis=0)),
               "soft": lambda i: tg.tensor(RNG.choice([-1.0, 1.0], size=(3, 5)))}
    for name, fn in fns.items():
        step = tg.compile(fn)
        for i in range(3):
            x, y = tg.tensor(RNG.standard_normal((3, 4))), targets[name](i)
            w.grad = None
            l1 = step(x, y)
            l1.backward()
            g1 = w.grad.numpy().copy()
            w.grad = None
            l2 = fn(x, y)
            l2.backward()
            assert l1.item() == pytest.approx(l2.item(), rel=1e-12)
            np.testing.assert_allclose(g1, w.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_soft_margin_loss_keeps_input_dtype():
    _compare(lambda lib, x, y: _F(lib).soft_margin_loss(x, y.double()), [X, SIGNS], np.float32)
    _compare(lambda lib, x, y: _F(lib).soft_margin_loss(x, y), [X, SIGNS.astype(np.int64)], np.float32)


def test_soft_margin_loss_second_and_third_order():
    outs = []
    for lib in (torch, tg):
        x = lib.tensor(X, requires_grad=True)
        loss = _F(lib).soft_margin_loss(x, lib.tensor(SIGNS))
        g, = lib.autograd.grad(loss, x, create_graph=True)
        h, = lib.autograd.grad((g * g).sum(), x, create_graph=True)
        t, = lib.autograd.grad(h.sum(), x)
        outs.append((g.detach().numpy(), h.detach().numpy(), t.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def _torch_multi_margin(x, y, p, margin, w):
    """multi_margin_loss composed of torch ops: a reference with torch's double backward."""
    z = (margin - x.gather(1, y[:, None]) + x).clamp_min(0) ** p * w[y][:, None]
    return z.masked_fill(torch.arange(x.shape[1])[None, :] == y[:, None], 0).sum(1).mean() / x.shape[1]


def _torch_multilabel_margin(x, t):
    is_t = torch.zeros(x.shape[0], x.shape[1] + 1, dtype=x.dtype)
    valid = (t >= 0).long().cumprod(1).bool()
    is_t = is_t.scatter(1, torch.where(valid, t, x.shape[1]), 1.0)[:, :-1]
    z = (1 - x[:, :, None] + x[:, None, :]).clamp_min(0) * is_t[:, :, None] * (1 - is_t)[:, None, :]
    return z.sum((1, 2)).mean() / x.shape[1]


@pytest.mark.parametrize("p", [1, 2])
def test_margin_losses_second_order(p):
    """torch has no double backward for multi_margin / multilabel_margin ("not implemented"); tapegrad's composition
    has one, checked against the same composition in torch."""
    xt = torch.tensor(X, requires_grad=True)
    gt, = torch.autograd.grad(TF.multi_margin_loss(xt, torch.tensor(Y), p=p), xt, create_graph=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.autograd.grad(gt.sum(), xt)
    refs = [lambda lib, x: _torch_multi_margin(x, torch.tensor(Y), p, 0.8, torch.tensor(W))
            if lib is torch else GF.multi_margin_loss(x, tg.tensor(Y), p=p, margin=0.8, weight=tg.tensor(W)),
            lambda lib, x: _torch_multilabel_margin(x, torch.tensor(MULTI))
            if lib is torch else GF.multilabel_margin_loss(x, tg.tensor(MULTI))]
    for fn in refs:
        outs = []
        for lib in (torch, tg):
            x = lib.tensor(X, requires_grad=True)
            loss = fn(lib, x)
            g, = lib.autograd.grad(loss, x, create_graph=True)
            h = lib.autograd.grad((g * g).sum(), x, allow_unused=True)[0] if g.requires_grad else None
            outs.append((loss.item(), g.detach().numpy(), None if h is None else h.numpy()))
        (lt, gt_, ht), (lg, gg, hg) = outs
        assert lg == pytest.approx(lt, rel=1e-12)
        np.testing.assert_allclose(gg, gt_, rtol=1e-10, atol=1e-13)
        if ht is None or hg is None:  # (p=1: the gradient is constant in x; either library may say so)
            assert p == 1 or fn is refs[1]
            np.testing.assert_allclose(0 if hg is None else hg, 0 if ht is None else ht, atol=1e-13)
        else:
            np.testing.assert_allclose(hg, ht, rtol=1e-10, atol=1e-13)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the type is what is compared)
        return type(e), str(e)
    return None


ERRORS = {
    "mm_target_range": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([0, 4, 1])),
    "mm_target_negative": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([0, -1, 1])),
    "mm_target_size": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([0, 1])),
    "mm_target_2d": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([[0, 1, 2]])),
    "mm_target_float": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([0, 1, 1.0])),
    "mm_target_int": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([0, 1, 1]).int()),
    "mm_input_3d": lambda lib: _F(lib).multi_margin_loss(lib.randn(2, 3, 4), lib.tensor([0, 1, 1])),
    "mm_input_empty": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 0), lib.tensor([0, 1, 1])),
    "mm_p": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([0, 1, 1]), p=3),
    "mm_weight_size": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([0, 1, 1]),
                                                            weight=lib.ones(3)),
    "mm_weight_2d": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([0, 1, 1]),
                                                          weight=lib.ones(2, 2)),
    "mm_weight_dtype": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([0, 1, 1]),
                                                             weight=lib.ones(4).double()),
    "mm_reduction": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4), lib.tensor([0, 1, 1]), reduction="x"),
    "mlm_target_range": lambda lib: _F(lib).multilabel_margin_loss(lib.randn(3, 4), lib.tensor([[0, 1, 1, 5]] * 3)),
    "mlm_target_after_end": lambda lib: _F(lib).multilabel_margin_loss(
        lib.randn(3, 4), lib.tensor([[0, -1, 7, -5], [1, 2, 3, 0], [-1, 1, 2, 3]])),
    "mlm_target_size": lambda lib: _F(lib).multilabel_margin_loss(lib.randn(3, 4), lib.tensor([[0, 1, 1, 2]] * 2)),
    "mlm_target_1d": lambda lib: _F(lib).multilabel_margin_loss(lib.randn(3, 4), lib.tensor([0, 1, 2])),
    "mlm_target_float": lambda lib: _F(lib).multilabel_margin_loss(lib.randn(3, 4),
                                                                    lib.tensor([[0, 1, 1, 2.0]] * 3)),
    "mlm_input_3d": lambda lib: _F(lib).multilabel_margin_loss(lib.randn(3, 4, 2), lib.tensor([[0, 1, 1, 2]] * 3)),
    "mlm_reduction": lambda lib: _F(lib).multilabel_margin_loss(lib.randn(3, 4), lib.tensor([[0, 1, 1, 2]] * 3),
                                                                reduction="bar"),
    "mm_weight_grad": lambda lib: _F(lib).multi_margin_loss(lib.randn(3, 4, requires_grad=True), lib.tensor([0, 1, 1]),
                                                            weight=lib.ones(4, requires_grad=True)),
    "sm_target_grad": lambda lib: _F(lib).soft_margin_loss(lib.randn(3, 4), lib.ones(3, 4, requires_grad=True)),
    "sm_shape": lambda lib: _F(lib).soft_margin_loss(lib.randn(3, 4), lib.ones(3, 5)),
    "sm_reduction": lambda lib: _F(lib).soft_margin_loss(lib.randn(3, 4), lib.ones(3, 4), reduction="q"),
    "MultiMarginLoss_p": lambda lib: lib.nn.MultiMarginLoss(p=3),
    "MultiMarginLoss_weight": lambda lib: lib.nn.MultiMarginLoss(weight=lib.ones(2, 2)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    expected = _error(lambda: ERRORS[name](torch))
    assert expected is not None
    assert _error(lambda: ERRORS[name](tg)) == expected


def test_scalar_inputs():
    for name in ("multi_margin_loss", "multilabel_margin_loss"):
        a = getattr(TF, name)(torch.tensor(1.0), torch.tensor(0))
        b = getattr(GF, name)(tg.tensor(1.0), tg.tensor(0))
        assert tuple(a.shape) == tuple(b.shape) and float(a) == float(b)


def _warnings(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(x.category, str(x.message)) for x in w]


@pytest.mark.parametrize("size_average,reduce", [(False, None), (None, False), (True, True)])
def test_legacy_reduction_arguments(size_average, reduce):
    for name, args in [("multi_margin_loss", (X, Y)), ("multilabel_margin_loss", (X, MULTI)),
                       ("soft_margin_loss", (X, SIGNS))]:
        outs = []
        for lib in (torch, tg):
            res = []
            w = _warnings(lambda: res.append(getattr(_F(lib), name)(*[lib.tensor(a) for a in args],
                                                                    size_average=size_average, reduce=reduce)))
            outs.append((w, res[0].numpy()))
        assert outs[0][0] == outs[1][0]
        np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-12)


MODULES = [("SoftMarginLoss", (), (X, SIGNS)), ("MultiLabelMarginLoss", (), (X, MULTI)),
           ("MultiMarginLoss", (), (X, Y)), ("MultiMarginLoss", ("p=2", "margin=0.5", "weight"), (X, Y)),
           ("MultiMarginLoss", ("reduction=none",), (X, Y)), ("SoftMarginLoss", ("size_average=False",), (X, SIGNS))]


def _kwargs(lib, spec):
    kw = {}
    for s in spec:
        if s == "weight":
            kw["weight"] = lib.tensor(W)
        else:
            k, v = s.split("=")
            kw[k] = {"False": False, "none": "none"}.get(v, v if not v[0].isdigit() else float(v) if "." in v
                                                         else int(v))
    return kw


@pytest.mark.parametrize("name,spec,arrays", MODULES)
def test_loss_modules(name, spec, arrays):
    results = []
    for lib in (torch, tg):
        mods = []
        w = _warnings(lambda: mods.append(getattr(lib.nn, name)(**_kwargs(lib, spec))))
        m = mods[0]
        x = lib.tensor(arrays[0], requires_grad=True)
        out = m(x, lib.tensor(arrays[1]))
        g, = lib.autograd.grad(out.sum(), x)
        results.append((repr(m), list(m.state_dict()), type(m).__constants__, m.reduction, w, out.detach().numpy(),
                        g.numpy()))
    for a, b in zip(*results):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
        else:
            assert a == b


def test_nll_loss_2d():
    results = []
    x = RNG.standard_normal((2, 3, 4, 4))
    y = RNG.integers(0, 3, (2, 4, 4))
    for lib in (torch, tg):
        mods = []
        w = _warnings(lambda: mods.append(lib.nn.NLLLoss2d(size_average=False)))
        m = mods[0]
        xi = lib.tensor(x, requires_grad=True)
        out = m(lib.log_softmax(xi, 1), lib.tensor(y))
        g, = lib.autograd.grad(out, xi)
        results.append((repr(m), m.reduction, m.ignore_index, [c for c, _ in w], [s for _, s in w],
                        isinstance(m, lib.nn.NLLLoss), float(out.detach()), g.numpy()))
    a, b = results
    assert a[:6] == b[:6]
    assert a[6] == pytest.approx(b[6], rel=1e-12)
    np.testing.assert_allclose(b[7], a[7], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_nll_loss_of_a_classifier_is_the_weighted_path_with_unit_weights(dtype, reduction):
    """nll_loss's lean path ((M, C) input, no weight, no ignored target) gives what the general path gives with unit
    weights, bit for bit, and torch's values; ignored targets (every one, too) take the general path, whose ignored
    samples get a zero gradient as torch's (not 0 / 0)."""
    for m, c, ignore in ((1, 59, -100), (64, 10, -100), (1000, 7, -100), (64, 10, "first"), (1, 5, "first")):
        x = RNG.standard_normal((m, c)).astype(dtype)
        y = RNG.integers(0, c, m)
        ignore = int(y[0]) if ignore == "first" else ignore
        grads = []
        for lib, weight in ((tg, None), (tg, np.ones(c, dtype)), (torch, None)):
            xi = lib.tensor(x, requires_grad=True)
            out = lib.nn.functional.nll_loss(xi, lib.tensor(y), None if weight is None else lib.tensor(weight),
                                             reduction=reduction, ignore_index=ignore)
            out.backward()
            grads.append((out.detach().numpy(), xi.grad.numpy(), out.grad_fn.name()))
        (a, ga, na), (b, gb, nb), (t, gt, nt) = grads
        assert np.array_equal(a, b, equal_nan=True) and np.array_equal(ga, gb) and na == nb == nt
        scale = np.abs(x[np.arange(m), y]).sum() / (m if reduction == "mean" else 1)
        np.testing.assert_allclose(a, t, rtol=1e-6, atol=1e-6 * scale)  # (torch sums in another order)
        np.testing.assert_allclose(ga, gt, rtol=1e-6)


# -- torch's top-level (aten) forms: the reduction is aten's enum, and the binding's default reads as 0 (none) --------
A1, A2 = RNG.standard_normal((2, 4, 3))
T3 = RNG.choice([-1.0, 1.0], size=(4, 3))
ATEN = [("margin_ranking_loss", (A1, A2, T3), ()), ("margin_ranking_loss", (A1, A2, T3), (0.5, 1)),
        ("margin_ranking_loss", (A1, A2, T3), (0.5, 2)), ("hinge_embedding_loss", (A1, T3), ()),
        ("hinge_embedding_loss", (A1, T3), (0.3, 1)), ("triplet_margin_loss", (A1, A2, T3), ()),
        ("triplet_margin_loss", (A1, A2, T3), (0.5, 1, 1e-6, True, 2)),
        ("poisson_nll_loss", (A1, np.abs(A2)), (True, False, 1e-8, 1)),
        ("poisson_nll_loss", (np.abs(A1), np.abs(A2)), (False, True, 1e-8, 0))]


@pytest.mark.parametrize("name,arrays,extra", ATEN)
def test_top_level_forms(name, arrays, extra):
    ours = getattr(tg, name, None) or getattr(metric_loss, "aten_" + name)
    xt, xg = torch.tensor(arrays[0], requires_grad=True), tg.tensor(arrays[0], requires_grad=True)
    ot = getattr(torch, name)(xt, *[torch.tensor(a) for a in arrays[1:]], *extra)
    og = ours(xg, *[tg.tensor(a) for a in arrays[1:]], *extra)
    assert tuple(ot.shape) == tuple(og.shape)
    np.testing.assert_allclose(og.detach().numpy(), ot.detach().numpy(), rtol=1e-10, atol=1e-12)
    gt, = torch.autograd.grad(ot.sum(), xt)
    gg, = tg.autograd.grad(og.sum(), xg)
    np.testing.assert_allclose(gg.numpy(), gt.numpy(), rtol=1e-10, atol=1e-12)


def test_top_level_reduction_must_be_int():
    with pytest.raises(TypeError, match="margin_ranking_loss\\(\\): argument 'reduction'"):
        torch.margin_ranking_loss(torch.ones(2), torch.ones(2), torch.ones(2), reduction="mean")
    with pytest.raises(TypeError, match="^margin_ranking_loss\\(\\): argument 'reduction' must be int, not str$"):
        metric_loss.aten_margin_ranking_loss(tg.ones(2), tg.ones(2), tg.ones(2), reduction="mean")
    with pytest.raises(TypeError):
        torch.poisson_nll_loss(torch.ones(2), torch.ones(2))
    with pytest.raises(TypeError):
        metric_loss.aten_poisson_nll_loss(tg.ones(2), tg.ones(2))


# -- AdaptiveLogSoftmaxWithLoss -------------------------------------------------------------------------------------
def _asm_pair(head_bias, dtype="double"):
    torch.manual_seed(7)
    tg.manual_seed(7)
    mt = getattr(torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0, head_bias=head_bias), dtype)()
    mg = getattr(tg.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0, head_bias=head_bias), dtype)()
    return mt, mg


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_init_forward_backward(head_bias):
    mt, mg = _asm_pair(head_bias)
    assert repr(mt) == repr(mg)
    assert list(mt.state_dict()) == list(mg.state_dict())
    for (k, vt), vg in zip(mt.state_dict().items(), mg.state_dict().values()):
        np.testing.assert_array_equal(vg.numpy(), vt.numpy(), err_msg=k)
    x = RNG.standard_normal((7, 16))
    y = np.array([0, 3, 5, 9, 12, 19, 15])
    xt, xg = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    ot, og = mt(xt, torch.tensor(y)), mg(xg, tg.tensor(y))
    assert type(og).__name__ == "_ASMoutput" and og._fields == ("output", "loss")
    np.testing.assert_allclose(og.output.detach().numpy(), ot.output.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(og.loss.detach().numpy(), ot.loss.detach().numpy(), rtol=1e-12)
    ot.loss.backward()
    og.loss.backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-13)
    for (k, pt), pg in zip(mt.named_parameters(), mg.parameters()):
        np.testing.assert_allclose(pg.grad.numpy(), pt.grad.numpy(), rtol=1e-9, atol=1e-13, err_msg=k)
    lt, lg = mt.log_prob(xt), mg.log_prob(xg)
    np.testing.assert_allclose(lg.detach().numpy(), lt.detach().numpy(), rtol=1e-12)
    c = RNG.standard_normal((7, 20))
    gt, = torch.autograd.grad((lt * torch.tensor(c)).sum(), xt)
    gg, = tg.autograd.grad((lg * tg.tensor(c)).sum(), xg)
    np.testing.assert_allclose(gg.numpy(), gt.numpy(), rtol=1e-9, atol=1e-13)
    pt, pg = mt.predict(xt), mg.predict(xg)
    np.testing.assert_array_equal(pg.numpy(), pt.numpy())
    assert str(pg.dtype) == str(pt.dtype)
    o1t, o1g = mt(xt[0].detach(), torch.tensor(12)), mg(xg[0].detach(), tg.tensor(12))
    assert tuple(o1g.output.shape) == tuple(o1t.output.shape) == ()
    assert float(o1g.loss.detach()) == pytest.approx(float(o1t.loss.detach()), rel=1e-12)


def test_adaptive_log_softmax_predict_branches():
    for seed in range(6):  # the all-shortlist, all-cluster and mixed branches of predict
        torch.manual_seed(seed)
        tg.manual_seed(seed)
        mt = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [2, 6], div_value=2.0, head_bias=True)
        mg = tg.nn.AdaptiveLogSoftmaxWithLoss(8, 12, [2, 6], div_value=2.0, head_bias=True)
        with torch.no_grad():
            mt.head.bias.add_(torch.tensor([0.0, 0.0, 5.0 * (seed % 3 - 1), 0.0]))
        mg.load_state_dict({k: tg.tensor(v.numpy()) for k, v in mt.state_dict().items()})
        x = RNG.standard_normal((9, 8)).astype(np.float32)
        np.testing.assert_array_equal(mg.predict(tg.tensor(x)).numpy(), mt.predict(torch.tensor(x)).numpy())
        np.testing.assert_array_equal(mg.log_prob(tg.tensor(x)).argmax(1).numpy(), mg.predict(tg.tensor(x)).numpy())


ASM_ERRORS = {
    "no_cutoffs": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, []),
    "unsorted": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3]),
    "zero": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [0]),
    "too_big": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [10]),
    "repeated": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 3]),
    "fraction": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [2.5]),
    "batch": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(lib.randn(3, 8), lib.tensor([1, 2])),
    "range": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(lib.randn(3, 8), lib.tensor([1, 2, 10])),
    "negative": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(lib.randn(3, 8), lib.tensor([-1, 2, 3])),
    "input_3d": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(lib.randn(3, 8, 1), lib.tensor([1, 2, 3])),
    "scalar_target": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(lib.randn(3, 8), lib.tensor(1)),
    "2d_target": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])(lib.randn(3, 8), lib.tensor([[1]])),
}


@pytest.mark.parametrize("name", sorted(ASM_ERRORS))
def test_adaptive_log_softmax_errors(name):
    expected = _error(lambda: ASM_ERRORS[name](torch))
    assert expected is not None
    assert _error(lambda: ASM_ERRORS[name](tg)) == expected


# -- Lazy modules ---------------------------------------------------------------------------------------------------
LAZY = [("LazyLinear", (3,), (2, 5)), ("LazyLinear", (3, False), (5,)), ("LazyLinear", (2,), (2, 3, 4)),
        ("LazyConv1d", (4, 3), (2, 3, 8)), ("LazyConv2d", (4, 3), (2, 3, 8, 8)),
        ("LazyConv2d", (4, 3, 1, 1, 1, 2), (4, 8, 8)), ("LazyConv3d", (2, 2), (1, 3, 4, 4, 4)),
        ("LazyConvTranspose1d", (4, 3), (2, 3, 8)), ("LazyConvTranspose2d", (4, 3, 2), (2, 3, 5, 5)),
        ("LazyConvTranspose2d", (4, 3, 1, 0, 0, 1, False), (3, 5, 5)),
        ("LazyBatchNorm1d", (), (4, 3)), ("LazyBatchNorm1d", (), (4, 3, 5)), ("LazyBatchNorm2d", (), (4, 3, 2, 2)),
        ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
        ("LazyBatchNorm1d", (1e-5, 0.1, False, False), (4, 3)), ("LazyInstanceNorm1d", (), (4, 3, 5)),
        ("LazyInstanceNorm2d", (), (4, 3, 5, 5)), ("LazyInstanceNorm3d", (), (2, 3, 3, 3, 3)),
        ("LazyInstanceNorm2d", (1e-5, 0.1, True, False), (4, 3, 5, 5))]


@pytest.mark.parametrize("name,args,shape", LAZY)
def test_lazy_module_matches_torch(name, args, shape):
    torch.manual_seed(3)
    tg.manual_seed(3)
    mt, mg = getattr(torch.nn, name)(*args), getattr(tg.nn, name)(*args)
    assert repr(mt) == repr(mg)
    assert repr(mt.state_dict()) == repr(mg.state_dict())
    assert mt.has_uninitialized_params() == mg.has_uninitialized_params()
    x = RNG.standard_normal(shape).astype(np.float32)
    xt, xg = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    yt, yg = mt(xt), mg(xg)
    assert type(mg).__name__ == type(mt).__name__ == name[4:]
    assert type(mg) is getattr(tg.nn, name[4:])
    assert repr(mt) == repr(mg)
    assert not hasattr(mg, "_initialize_hook")
    for (k, vt), (kg, vg) in zip(mt.state_dict().items(), mg.state_dict().items()):
        assert k == kg
        assert type(vg) is tg.Tensor
        np.testing.assert_allclose(vg.numpy(), vt.numpy(), rtol=1e-6, atol=1e-7, err_msg=k)
    for (k, pt), pg in zip(mt.named_parameters(), mg.parameters()):
        assert type(pg) is tg.nn.Parameter and pg.requires_grad
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    c = RNG.standard_normal(tuple(yt.shape)).astype(np.float32)
    gt = torch.autograd.grad((yt * torch.tensor(c)).sum(), [xt] + list(mt.parameters()))
    gg = tg.autograd.grad((yg * tg.tensor(c)).sum(), [xg] + list(mg.parameters()))
    for a, b in zip(gt, gg):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-5)


def test_lazy_dtype_and_training():
    results = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.LazyLinear(4, dtype=lib.float64), lib.nn.ReLU(),
                                lib.nn.LazyLinear(2, dtype=lib.float64))
        assert net[0].weight.dtype == lib.float64
        opt = lib.optim.Adam(net.parameters(), lr=0.1)  # (constructed while the parameters are uninitialized)
        x = lib.ones(3, 5, dtype=lib.float64)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = net(x).pow(2).sum()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        results.append((repr(net), losses))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-10)


def _outcome(fn):
    try:
        return "ok", repr(fn())
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)


LAZY_BEHAVIOUR = {
    "shape": lambda lib: lib.nn.LazyLinear(3).weight.shape,
    "size": lambda lib: lib.nn.LazyLinear(3).weight.size(),
    "numel": lambda lib: lib.nn.LazyLinear(3).weight.numel(),
    "repr_param": lambda lib: lib.nn.LazyLinear(3).weight,
    "repr_buffer": lambda lib: lib.nn.LazyBatchNorm1d().running_mean,
    "requires_grad": lambda lib: (lib.nn.LazyLinear(3).weight.requires_grad,
                                  lib.nn.LazyBatchNorm1d().running_mean.requires_grad),
    "dtype": lambda lib: (lib.nn.LazyConv1d(2, 1, dtype=lib.float64).weight.dtype, lib.nn.LazyLinear(2).bias.dtype),
    "module_double": lambda lib: lib.nn.LazyLinear(3).double().weight.dtype,
    "deepcopy": lambda lib: (lambda m: (m, m.weight, m.has_uninitialized_params()))(
        copy.deepcopy(lib.nn.LazyLinear(3))),
    "optimizer": lambda lib: lib.optim.SGD(lib.nn.LazyLinear(3).parameters(), lr=0.1),
    "conv_bad_dim": lambda lib: lib.nn.LazyConv2d(4, 3)(lib.randn(3, 4)),
    "conv_groups": lambda lib: lib.nn.LazyConv2d(4, 3, groups=2)(lib.randn(1, 3, 5, 5)),
    "load_into_lazy": lambda lib: (lambda m: (m.load_state_dict(lib.nn.Linear(5, 3).state_dict()), type(m).__name__,
                                              m.weight.shape, m.has_uninitialized_params(), m,
                                              m(lib.ones(2, 5)).shape, type(m).__name__))(lib.nn.LazyLinear(3)),
    "load_lazy_into_linear": lambda lib: lib.nn.Linear(5, 3).load_state_dict(lib.nn.LazyLinear(3).state_dict()),
    "load_lazy_into_lazy": lambda lib: (lambda m: (m.load_state_dict(lib.nn.LazyLinear(3).state_dict()),
                                                   m.has_uninitialized_params()))(lib.nn.LazyLinear(3)),
    "load_missing": lambda lib: lib.nn.LazyLinear(3).load_state_dict(lib.nn.Linear(5, 3, bias=False).state_dict()),
    "load_bn": lambda lib: (lambda m: (m.load_state_dict(lib.nn.BatchNorm1d(4).state_dict()), m.running_var,
                                       m.num_features))(lib.nn.LazyBatchNorm1d()),
    "state_dict_keep_vars": lambda lib: lib.nn.LazyLinear(3).state_dict(keep_vars=True),
    "mixin_not_implemented": lambda lib: (type("M", (lib.nn.modules.lazy.LazyModuleMixin, lib.nn.Module), {}))()(1),
    "uninitialized_parameter": lambda lib: (lib.nn.parameter.UninitializedParameter(),
                                            lib.nn.parameter.UninitializedParameter(False, dtype=lib.float64).dtype,
                                            lib.nn.parameter.UninitializedBuffer().requires_grad),
    "is_lazy": lambda lib: (lib.nn.parameter.is_lazy(lib.nn.LazyLinear(3).weight),
                            lib.nn.parameter.is_lazy(lib.nn.Linear(3, 3).weight)),
    "materialize": lambda lib: (lambda p: (p.materialize((2, 3)), type(p).__name__, p.shape, p.requires_grad))(
        lib.nn.parameter.UninitializedParameter()),
    "materialize_buffer": lambda lib: (lambda p: (p.materialize((2,), dtype=lib.float64), type(p).__name__, p.shape,
                                                  p.dtype))(lib.nn.parameter.UninitializedBuffer()),
    "share_memory": lambda lib: lib.nn.LazyLinear(3).share_memory(),
    "input_by_keyword": lambda lib: (lambda m: (m(input=lib.ones(2, 4)).shape, type(m).__name__, m))(
        lib.nn.LazyLinear(3)),
    "transpose_output_size": lambda lib: (lambda m: (m(lib.ones(1, 2, 4, 4), output_size=(5, 5)).shape, m))(
        lib.nn.LazyConvTranspose2d(3, 2)),
    "add": lambda lib: lib.nn.LazyLinear(3).weight + 1,
    "rmul": lambda lib: 2 * lib.nn.LazyLinear(3).weight,
    "sum": lambda lib: lib.nn.LazyLinear(3).bias.sum(),
    "getitem": lambda lib: lib.nn.LazyLinear(3).weight[0],
    "detach": lambda lib: lib.nn.LazyBatchNorm1d().running_mean.detach(),
    "t": lambda lib: lib.nn.LazyLinear(3).weight.t(),
    "requires_grad_": lambda lib: lib.nn.LazyLinear(3).weight.requires_grad_(False),
    "module_requires_grad_": lambda lib: lib.nn.LazyLinear(3).requires_grad_(False),
    "zero_grad": lambda lib: lib.nn.LazyLinear(3).zero_grad(),
    "train_eval": lambda lib: lib.nn.LazyLinear(3).eval().train(),
    "ndim_is_leaf": lambda lib: (lib.nn.LazyLinear(3).weight.ndim, lib.nn.LazyLinear(3).weight.is_leaf),
}


@pytest.mark.parametrize("name", sorted(LAZY_BEHAVIOUR))
def test_lazy_behaviour(name):
    expected = _outcome(lambda: LAZY_BEHAVIOUR[name](torch))
    got = _outcome(lambda: LAZY_BEHAVIOUR[name](tg))
    assert got == expected


def test_lazy_parameter_types():
    assert issubclass(UninitializedParameter, tg.nn.Parameter)
    assert not issubclass(UninitializedBuffer, tg.nn.Parameter) and issubclass(UninitializedBuffer, tg.Tensor)
    assert is_lazy(UninitializedBuffer()) and not is_lazy(tg.ones(1))
    assert sorted(tg.nn.parameter.__all__) == sorted(torch.nn.parameter.__all__)
    m = tg.nn.LazyLinear(3)
    assert isinstance(m, tg.nn.modules.lazy.LazyModuleMixin) and isinstance(m, tg.nn.Linear)
    m(tg.ones(1, 2))
    assert not isinstance(m, tg.nn.modules.lazy.LazyModuleMixin)
    assert glazy.__all__ == ["LazyModuleMixin"]  # (the Lazy modules live beside their classes, as torch's)
