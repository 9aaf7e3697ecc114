"""3-d pooling, power-average pooling, local response normalization, BatchNorm3d and SyncBatchNorm against torch
2.13: values, indices, gradients (float32 and float64), second order, reprs, state_dicts and error messages."""
import itertools
import pickle

import numpy as np
import pytest
import torch

import tapegrad
import tapegrad.nn.modules.batchnorm

TOL = {"float64": dict(rtol=1e-9, atol=1e-11), "float32": dict(rtol=2e-5, atol=2e-6)}


def _pair(shape, dtype, seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if positive:
        a = np.abs(a) + 0.1
    return (torch.tensor(a, requires_grad=True), tapegrad.tensor(a, requires_grad=True))


def _check(fn, shape, dtype="float64", seed=0, positive=False, grad_fn=True):
    """fn(lib, x) on both libraries: values (and indices), dtype, grad_fn name and the gradient of a random
    cotangent."""
    xt, xg = _pair(shape, dtype, seed, positive)
    yt, yg = fn(torch, xt), fn(tapegrad, xg)
    if isinstance(yt, tuple):
        assert yg[1].dtype == tapegrad.int64
        np.testing.assert_array_equal(yg[1].numpy(), yt[1].numpy())
        yt, yg = yt[0], yg[0]
    assert tuple(yg.shape) == tuple(yt.shape)
    assert str(yg.dtype) == str(yt.dtype)
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), **TOL[dtype], equal_nan=True)
    if grad_fn:
        assert type(yg.grad_fn).__name__ == yt.grad_fn.name()
    g = np.random.default_rng(seed + 1).standard_normal(tuple(yt.shape)).astype(dtype)
    yt.backward(torch.tensor(g))
    yg.backward(tapegrad.tensor(g))
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), **TOL[dtype])


def _second(fn, shape, seed=0):
    """d/dx <d/dx <fn(x), g>, v>: torch's double backward (float64)."""
    out = []
    for L, x in zip((torch, tapegrad), _pair(shape, "float64", seed)):
        y = fn(L, x)
        g = L.tensor(np.random.default_rng(seed + 1).standard_normal(tuple(y.shape)))
        (gx,) = L.autograd.grad(y, x, g, create_graph=True)
        v = L.tensor(np.random.default_rng(seed + 2).standard_normal(tuple(x.shape)))
        (ggx,) = L.autograd.grad((gx * v * gx).sum(), x)
        out.append(ggx.numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-9, atol=1e-11)


def _same_error(fn):
    with pytest.raises(Exception) as expected:
        fn(torch)
    with pytest.raises(type(expected.value)) as got:
        fn(tapegrad)
    assert str(got.value) == str(expected.value)


# -- max pooling ---------------------------------------------------------------------------------------------------
MAX_GEOMETRIES = [dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1),
                  dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), dilation=(1, 1, 2),
                       ceil_mode=True),
                  dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                  dict(kernel_size=(1, 2, 3), stride=(2, 1, 2)),
                  dict(kernel_size=2, stride=2, dilation=2, padding=1, ceil_mode=True),
                  dict(kernel_size=[2], stride=[])]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 5, 4, 6)])
@pytest.mark.parametrize("kw", MAX_GEOMETRIES, ids=str)
def test_max_pool3d(kw, shape, dtype):
    _check(lambda L, x: L.nn.functional.max_pool3d(x, return_indices=True, **kw), shape, dtype)


def test_max_pool3d_entry_points():
    _check(lambda L, x: L.max_pool3d(x, 2, 1), (1, 2, 3, 4, 5))
    _check(lambda L, x: L.nn.functional.max_pool3d_with_indices(x, 2, 1, 1), (1, 2, 3, 4, 5))
    _check(lambda L, x: L.nn.MaxPool3d(3, 2, 1, return_indices=True, ceil_mode=True)(x), (2, 2, 5, 5, 5))


def test_max_pool3d_selection_order():
    """Ties: the first maximum; NaN wins (the last NaN of a window); an all -inf window: its first element."""
    a = np.zeros((1, 1, 3, 4, 4))
    a[0, 0, 1, 1, 1] = a[0, 0, 1, 2, 2] = np.nan
    a[0, 0, 2, :2, :2] = -np.inf
    a[0, 0, 0, 2:, 2:] = 5.0
    for kw in (dict(kernel_size=2, stride=1), dict(kernel_size=2, padding=1), dict(kernel_size=3, stride=1)):
        vt, it = torch.nn.functional.max_pool3d(torch.tensor(a), return_indices=True, **kw)
        vg, ig = tapegrad.nn.functional.max_pool3d(tapegrad.tensor(a), return_indices=True, **kw)
        np.testing.assert_array_equal(vg.numpy(), vt.numpy())
        np.testing.assert_array_equal(ig.numpy(), it.numpy())
    b = np.full((1, 1, 2, 2, 2), -np.inf)
    vt, it = torch.nn.functional.max_pool3d(torch.tensor(b), 2, padding=1, return_indices=True)
    vg, ig = tapegrad.nn.functional.max_pool3d(tapegrad.tensor(b), 2, padding=1, return_indices=True)
    np.testing.assert_array_equal(ig.numpy(), it.numpy())


def test_max_pool3d_integer_and_empty_batch():
    a = np.arange(-20, 20).reshape(1, 1, 2, 4, 5)
    for kw in (dict(kernel_size=2), dict(kernel_size=2, padding=1, ceil_mode=True)):
        vt, it = torch.nn.functional.max_pool3d(torch.tensor(a), return_indices=True, **kw)
        vg, ig = tapegrad.nn.functional.max_pool3d(tapegrad.tensor(a), return_indices=True, **kw)
        assert str(vg.dtype) == str(vt.dtype)
        np.testing.assert_array_equal(vg.numpy(), vt.numpy())
        np.testing.assert_array_equal(ig.numpy(), it.numpy())
    e = np.zeros((0, 1, 2, 3, 4))
    assert tuple(tapegrad.nn.functional.max_pool3d(tapegrad.tensor(e), 2).shape) == \
        tuple(torch.nn.functional.max_pool3d(torch.tensor(e), 2).shape)


def test_max_pool3d_second_order():
    # (squared: the pools' own gradient does not depend on x, which torch's graph does with a zero derivative)
    _second(lambda L, x: L.nn.functional.max_pool3d(x, 2, 1, 1) ** 2, (1, 2, 3, 4, 3))
    _second(lambda L, x: L.nn.functional.adaptive_max_pool3d(x, (2, 3, 2)) ** 2, (2, 3, 5, 4))


# -- average pooling -----------------------------------------------------------------------------------------------
AVG_GEOMETRIES = [dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1),
                  dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), ceil_mode=True),
                  dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                  dict(kernel_size=3, stride=2, padding=1, divisor_override=5),
                  dict(kernel_size=(1, 2, 3), stride=(2, 1, 2), ceil_mode=True, count_include_pad=False)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 5, 4, 6)])
@pytest.mark.parametrize("kw", AVG_GEOMETRIES, ids=str)
def test_avg_pool3d(kw, shape, dtype):
    _check(lambda L, x: L.nn.functional.avg_pool3d(x, **kw), shape, dtype)
    _check(lambda L, x: L.nn.AvgPool3d(**kw)(x), shape, dtype)


def test_avg_pool3d_integer_and_non_finite():
    a = np.arange(-20, 20).reshape(1, 1, 2, 4, 5)
    for kw in (dict(kernel_size=2, ceil_mode=True),
               dict(kernel_size=2, padding=1, ceil_mode=True, count_include_pad=False),
               dict(kernel_size=2, divisor_override=3)):
        vt = torch.nn.functional.avg_pool3d(torch.tensor(a), **kw)
        vg = tapegrad.nn.functional.avg_pool3d(tapegrad.tensor(a), **kw)
        assert str(vg.dtype) == str(vt.dtype)
        np.testing.assert_array_equal(vg.numpy(), vt.numpy())
    b = np.random.default_rng(0).standard_normal((1, 1, 3, 4, 5))
    b[0, 0, 0, 0, 0], b[0, 0, 2, 3, 4], b[0, 0, 1, 1, 1] = np.nan, np.inf, -np.inf
    for kw in (dict(kernel_size=2, stride=1), dict(kernel_size=2, stride=1, padding=1)):
        np.testing.assert_allclose(tapegrad.nn.functional.avg_pool3d(tapegrad.tensor(b), **kw).numpy(),
                                   torch.nn.functional.avg_pool3d(torch.tensor(b), **kw).numpy(), rtol=1e-12)


def test_avg_pool3d_second_order():
    _second(lambda L, x: L.nn.functional.avg_pool3d(x, 2, 1, 1, count_include_pad=False) ** 3, (1, 2, 3, 4, 3))
    _second(lambda L, x: L.nn.functional.adaptive_avg_pool3d(x, (2, 1, 3)) ** 3, (2, 3, 5, 4))


# -- adaptive pooling ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 5, 4, 6)])
@pytest.mark.parametrize("size", [2, (3, None, 4), (5, 6, 7), 1, (4, 2, 5)], ids=str)
def test_adaptive_pool3d(size, shape, dtype):
    _check(lambda L, x: L.nn.functional.adaptive_avg_pool3d(x, size), shape, dtype)
    _check(lambda L, x: L.nn.functional.adaptive_max_pool3d(x, size, return_indices=True), shape, dtype)
    _check(lambda L, x: L.nn.AdaptiveMaxPool3d(size, True)(x), shape, dtype)
    _check(lambda L, x: L.nn.AdaptiveAvgPool3d(size)(x), shape, dtype)


def test_adaptive_max_pool_with_indices_and_top_level_1d():
    _check(lambda L, x: L.nn.functional.adaptive_max_pool3d_with_indices(x, (2, 3, 2)), (1, 2, 4, 5, 6))
    _check(lambda L, x: L.adaptive_max_pool1d(x, 3), (2, 3, 7))
    _check(lambda L, x: L.adaptive_max_pool1d(x, [2]), (3, 7))


# -- max unpooling -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape,kw,size", [((2, 3, 4, 6, 8), dict(kernel_size=2), None),
                                           ((3, 5, 4, 6), dict(kernel_size=2), (5, 4, 7)),
                                           ((1, 2, 5, 5, 7), dict(kernel_size=3, stride=2, padding=1), None),
                                           ((1, 2, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1),
                                            (1, 2, 5, 6, 7))], ids=str)
def test_max_unpool3d(shape, kw, size, dtype):
    def fn(L, x):
        out, idx = L.nn.functional.max_pool3d(x, return_indices=True, **kw)
        return L.nn.functional.max_unpool3d(out, idx, output_size=size, **kw)
    _check(fn, shape, dtype)

    def module(L, x):
        out, idx = L.nn.MaxPool3d(return_indices=True, **kw)(x)
        return L.nn.MaxUnpool3d(**kw)(out, idx, output_size=size)
    _check(module, shape, dtype)


def test_max_unpool3d_second_order():
    _second(lambda L, x: L.nn.functional.max_unpool3d(*L.nn.functional.max_pool3d(x, 2, return_indices=True), 2) ** 2,
            (1, 2, 4, 4, 2))


# -- power-average pooling -----------------------------------------------------------------------------------------
LP = [(1, "lp_pool1d", (2, 3, 8), [dict(kernel_size=3), dict(kernel_size=2, stride=1, ceil_mode=True)]),
      (2, "lp_pool2d", (2, 3, 6, 7), [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=1, ceil_mode=True),
                                      dict(kernel_size=3, stride=2, ceil_mode=True)]),
      (3, "lp_pool3d", (2, 2, 4, 5, 6), [dict(kernel_size=2), dict(kernel_size=(2, 3, 2), stride=1),
                                         dict(kernel_size=3, stride=2, ceil_mode=True)])]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("p", [1, 2, 3.0, 1.5, float("inf")], ids=str)
@pytest.mark.parametrize("nd,name,shape,kws", LP, ids=[c[1] for c in LP])
def test_lp_pool(nd, name, shape, kws, p, dtype):
    for kw in kws:
        # (a fractional power of a negative number is NaN: there, positive inputs)
        positive = p == 1.5
        _check(lambda L, x: getattr(L.nn.functional, name)(x, p, **kw), shape, dtype, positive=positive)
        mod = {1: "LPPool1d", 2: "LPPool2d", 3: "LPPool3d"}[nd]
        _check(lambda L, x: getattr(L.nn, mod)(p, **kw)(x), shape, dtype, positive=positive)


def test_lp_pool_zero_windows():
    """A window of zeros: torch's sign * relu composition gives gradient zero there (not NaN)."""
    a = np.random.default_rng(0).standard_normal((1, 2, 4, 4, 4))
    a[0, 0, :2, :2, :2] = 0.0
    for p in (2, 3.0):
        xt, xg = torch.tensor(a, requires_grad=True), tapegrad.tensor(a, requires_grad=True)
        yt, yg = torch.nn.functional.lp_pool3d(xt, p, 2), tapegrad.nn.functional.lp_pool3d(xg, p, 2)
        yt.sum().backward()
        yg.sum().backward()
        np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-12, equal_nan=True)


def test_lp_pool_second_order():
    _second(lambda L, x: L.nn.functional.lp_pool3d(x, 2, 2), (1, 2, 4, 4, 2))
    _second(lambda L, x: L.nn.functional.lp_pool2d(x, 3.0, (2, 3), 1), (1, 2, 4, 5))


# -- local response normalization ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 6, 4, 3), (2, 5, 4, 3, 2), (1, 3, 2, 2, 2, 2)], ids=str)
@pytest.mark.parametrize("args", [(3,), (2, 0.1, 0.5, 2.0), (5, 1e-2, 0.75, 1.0), (1,)], ids=str)
def test_local_response_norm(args, shape, dtype):
    _check(lambda L, x: L.nn.functional.local_response_norm(x, *args), shape, dtype)
    _check(lambda L, x: L.nn.LocalResponseNorm(*args)(x), shape, dtype)


def test_local_response_norm_second_order_and_empty():
    _second(lambda L, x: L.nn.functional.local_response_norm(x, 3, 0.5, 0.75, 1.0), (2, 5, 3, 2))
    e = tapegrad.zeros(0, 3, 4)
    assert tapegrad.nn.functional.local_response_norm(e, 2) is e


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("size,channels", [(3, 6), (5, 7), (2, 4), (5, 3), (4, 9)])
def test_cross_map_lrn2d(size, channels, dtype):
    """torch's own Function: its running-window forward and its hand-written backward."""
    _check(lambda L, x: L.nn.CrossMapLRN2d(size, 0.1, 0.75, 2.0)(x), (2, channels, 3, 4), dtype, grad_fn=False)
    names = [repr(L.nn.CrossMapLRN2d(size)(x).grad_fn).split(" object")[0] for L, x in zip((torch, tapegrad),
                                                                                           _pair((1, 3, 2, 2), dtype))]
    assert names[0] == names[1] == "<torch.autograd.function.CrossMapLRN2dBackward"


# -- BatchNorm3d / SyncBatchNorm -----------------------------------------------------------------------------------
def _copy_params(src, dst):
    dst.load_state_dict({k: tapegrad.tensor(v.detach().numpy()) for k, v in src.state_dict().items()})


@pytest.mark.parametrize("cls", ["BatchNorm3d", "SyncBatchNorm"])
@pytest.mark.parametrize("kw", [{}, dict(momentum=None), dict(affine=False), dict(track_running_stats=False),
                                dict(momentum=0.3, eps=1e-3, bias=False)], ids=str)
def test_batch_norm3d_training_and_eval(cls, kw):
    mt = getattr(torch.nn, cls)(3, **kw).double()
    mg = getattr(tapegrad.nn, cls)(3, **kw).double()
    assert repr(mg) == repr(mt)
    assert list(mg.state_dict()) == list(mt.state_dict())
    rng = np.random.default_rng(0)
    if mt.affine:
        with torch.no_grad():
            mt.weight.copy_(torch.tensor(rng.uniform(0.5, 1.5, 3)))
            if mt.bias is not None:
                mt.bias.copy_(torch.tensor(rng.uniform(-1, 1, 3)))
    _copy_params(mt, mg)
    for step in range(3):
        a = rng.standard_normal((2, 3, 3, 2, 4)) * (step + 1)
        xt, xg = torch.tensor(a, requires_grad=True), tapegrad.tensor(a, requires_grad=True)
        yt, yg = mt(xt), mg(xg)
        np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-9, atol=1e-11)
        g = rng.standard_normal(a.shape)
        yt.backward(torch.tensor(g))
        yg.backward(tapegrad.tensor(g))
        np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-11)
        for (k, vt), (k2, vg) in zip(mt.state_dict().items(), mg.state_dict().items()):
            assert k == k2
            np.testing.assert_allclose(vg.detach().numpy(), vt.detach().numpy(), rtol=1e-9, atol=1e-12)
        if mt.affine:
            np.testing.assert_allclose(mg.weight.grad.numpy(), mt.weight.grad.numpy(), rtol=1e-9, atol=1e-11)
    mt.eval(), mg.eval()
    a = rng.standard_normal((2, 3, 2, 2, 2))
    np.testing.assert_allclose(mg(tapegrad.tensor(a)).detach().numpy(), mt(torch.tensor(a)).detach().numpy(),
                               rtol=1e-9, atol=1e-11)


def test_batch_norm3d_float32_and_input_checks():
    mt, mg = torch.nn.BatchNorm3d(2), tapegrad.nn.BatchNorm3d(2)
    a = np.random.default_rng(1).standard_normal((3, 2, 2, 3, 2)).astype(np.float32)
    yt, yg = mt(torch.tensor(a)), mg(tapegrad.tensor(a))
    assert str(yg.dtype) == str(yt.dtype) == "torch.float32"
    np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mg.running_var.numpy(), mt.running_var.numpy(), rtol=1e-6)
    _same_error(lambda L: L.nn.BatchNorm3d(2)(L.zeros(2, 2, 3, 3)))
    _same_error(lambda L: L.nn.BatchNorm3d(2)(L.zeros(1, 2, 1, 1, 1)))
    _same_error(lambda L: L.nn.SyncBatchNorm(2)(L.zeros(3)))
    _same_error(lambda L: L.nn.SyncBatchNorm(0)(L.zeros(3, 0, 2)))


@pytest.mark.parametrize("cls,shape", [("BatchNorm3d", (4, 3, 2, 2, 3)), ("SyncBatchNorm", (4, 3, 5)),
                                       ("SyncBatchNorm", (4, 3, 2, 2, 3))])
def test_state_dicts_both_ways(cls, shape):
    a = np.random.default_rng(2).standard_normal(shape)
    mt, mg = getattr(torch.nn, cls)(3).double(), getattr(tapegrad.nn, cls)(3).double()
    np.testing.assert_allclose(mg(tapegrad.tensor(a)).detach().numpy(), mt(torch.tensor(a)).detach().numpy(),
                               rtol=1e-9, atol=1e-11)
    # torch's trained state_dict into a fresh tapegrad module, and that one's back into a fresh torch module
    mg2 = getattr(tapegrad.nn, cls)(3).double()
    _copy_params(mt, mg2)
    back = getattr(torch.nn, cls)(3).double()
    back.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in mg2.state_dict().items()})
    for k, v in mt.state_dict().items():
        np.testing.assert_array_equal(back.state_dict()[k].numpy(), v.numpy())
        assert str(mg2.state_dict()[k].dtype) == str(v.dtype)
    assert mg2.num_batches_tracked.item() == 1
    # tapegrad's own trained state_dict into torch's module: the same evaluation
    mt.eval(), back.eval()
    back.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in mg.state_dict().items()})
    np.testing.assert_allclose(back(torch.tensor(a)).detach().numpy(), mt(torch.tensor(a)).detach().numpy(),
                               rtol=1e-12, atol=1e-12)


def test_sync_batch_norm_refuses_cpu_training_with_a_process_group(monkeypatch):
    """torch on CPU: with an initialized process group, training mode raises (eval mode does not sync)."""
    m = tapegrad.nn.SyncBatchNorm(2)
    monkeypatch.setattr(tapegrad.distributed, "is_initialized", lambda: True)
    with pytest.raises(ValueError, match="^SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone$"):
        m(tapegrad.ones(3, 2))
    m.eval()
    assert tuple(m(tapegrad.ones(3, 2)).shape) == (3, 2)


def test_compiled_step_replays_the_volumetric_rows():
    def net(L):
        L.manual_seed(0)
        return L.nn.Sequential(L.nn.Conv3d(2, 3, 3, padding=1), L.nn.BatchNorm3d(3), L.nn.ReLU(), L.nn.MaxPool3d(2),
                               L.nn.AvgPool3d(2, 1, 1), L.nn.AdaptiveMaxPool3d((2, 1, 2)),
                               L.nn.AdaptiveAvgPool3d((2, 1, 1)), L.nn.Flatten(), L.nn.Linear(6, 2))
    mt, mg = net(torch).double(), net(tapegrad).double()
    mg.load_state_dict({k: tapegrad.tensor(v.detach().numpy()) for k, v in mt.state_dict().items()})
    step = tapegrad.compile(lambda x: mg(x).pow(2).sum())
    for i in range(3):
        a = np.random.default_rng(i).standard_normal((2, 2, 4, 6, 6))
        lg = step(tapegrad.tensor(a))
        lg.backward()
        lt = mt(torch.tensor(a)).pow(2).sum()
        lt.backward()
        np.testing.assert_allclose(lg.item(), lt.item(), rtol=1e-12)
    for p, q in zip(mt.parameters(), mg.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-12)


def _nets(L):
    return L.nn.Sequential(L.nn.Conv3d(2, 3, 1), L.nn.BatchNorm3d(3, momentum=None),
                           L.nn.Sequential(L.nn.Linear(4, 4), L.nn.BatchNorm1d(4, affine=False)),
                           L.nn.BatchNorm2d(3, track_running_stats=False))


def test_convert_sync_batchnorm():
    torch.manual_seed(0)
    nt = _nets(torch).double()
    ng = _nets(tapegrad).double()
    ng.load_state_dict({k: tapegrad.tensor(v.detach().numpy()) for k, v in nt.state_dict().items()})
    nt[1].train(False), ng[1].train(False)
    ct = torch.nn.SyncBatchNorm.convert_sync_batchnorm(nt)
    cg = tapegrad.nn.SyncBatchNorm.convert_sync_batchnorm(ng)
    assert ct is nt and cg is ng
    assert repr(cg) == repr(ct)
    assert list(cg.state_dict()) == list(ct.state_dict())
    assert cg[1].training is False and cg[0].training is True
    assert cg[1].weight is not None
    for k, v in ct.state_dict().items():
        np.testing.assert_array_equal(cg.state_dict()[k].detach().numpy(), v.detach().numpy())
    a = np.random.default_rng(3).standard_normal((2, 2, 2, 2, 2))
    np.testing.assert_allclose(cg[1](cg[0](tapegrad.tensor(a))).detach().numpy(),
                               ct[1](ct[0](torch.tensor(a))).detach().numpy(), rtol=1e-9, atol=1e-11)
    bn = tapegrad.nn.BatchNorm3d(3)
    converted = tapegrad.nn.SyncBatchNorm.convert_sync_batchnorm(bn, process_group="group")
    assert type(converted) is tapegrad.nn.SyncBatchNorm and converted is not bn
    assert converted.weight is bn.weight and converted.running_mean is bn.running_mean
    assert converted.process_group == "group"
    assert tapegrad.nn.modules.batchnorm.SyncBatchNorm is tapegrad.nn.SyncBatchNorm
    assert pickle.loads(pickle.dumps(converted)).num_features == 3


# -- reprs and errors ----------------------------------------------------------------------------------------------
REPRS = ["nn.MaxPool3d(2)", "nn.MaxPool3d((2, 1, 3), stride=1, padding=(1, 0, 1), dilation=2, ceil_mode=True)",
         "nn.AvgPool3d((2, 1, 2))", "nn.AvgPool3d(3, 2, 1, True, False, 4)", "nn.AdaptiveMaxPool3d(2, True)",
         "nn.AdaptiveAvgPool3d((1, None, 2))", "nn.MaxUnpool3d(2)", "nn.MaxUnpool3d((2, 1, 2), 1, 1)",
         "nn.LPPool1d(2, 3)", "nn.LPPool2d(1.5, (2, 3), 1, True)", "nn.LPPool3d(2, 2)", "nn.LocalResponseNorm(2)",
         "nn.LocalResponseNorm(3, 0.1, 0.5, 2.0)", "nn.CrossMapLRN2d(3)", "nn.BatchNorm3d(4, momentum=None)",
         "nn.BatchNorm3d(4, affine=False, track_running_stats=False)", "nn.SyncBatchNorm(3, bias=False)"]


@pytest.mark.parametrize("expr", REPRS)
def test_reprs(expr):
    assert repr(eval(expr, {"nn": tapegrad.nn})) == repr(eval(expr, {"nn": torch.nn}))


def _x5(L, shape=(1, 2, 4, 5, 6), dtype=None):
    return L.ones(shape, dtype=dtype or L.float32)


ERRORS = {
    "k0": lambda L, F: F.max_pool3d(_x5(L), 0),
    "kneg": lambda L, F: F.max_pool3d(_x5(L), (2, -1, 2), 1),
    "sneg": lambda L, F: F.max_pool3d(_x5(L), 2, (1, -1, 1)),
    "s0": lambda L, F: F.avg_pool3d(_x5(L), 2, (1, 0, 1)),
    "pad_half": lambda L, F: F.max_pool3d(_x5(L), (2, 3, 3), 1, (0, 2, 1)),
    "pad_neg": lambda L, F: F.max_pool3d(_x5(L), 3, 1, (0, -1, 1)),
    "avg_pad_neg": lambda L, F: F.avg_pool3d(_x5(L), 3, 1, -1),
    "dil0": lambda L, F: F.max_pool3d(_x5(L), 2, 1, 0, (1, 0, 1)),
    "too_small": lambda L, F: F.max_pool3d(_x5(L), 2, dilation=(4, 1, 1)),
    "too_small_big_kernel": lambda L, F: F.max_pool3d(_x5(L), 5),
    "avg_kernel_big": lambda L, F: F.avg_pool3d(_x5(L), 5, padding=2),
    "avg_kernel_big_unbatched": lambda L, F: F.avg_pool3d(_x5(L, (2, 4, 5, 6)), (5, 1, 1)),
    "rank3": lambda L, F: F.max_pool3d(_x5(L, (2, 3, 4)), 2),
    "rank6": lambda L, F: F.avg_pool3d(_x5(L, (1, 1, 2, 3, 4, 4)), 2),
    "zero_channels": lambda L, F: F.max_pool3d(_x5(L, (1, 0, 2, 3, 4)), 2),
    "zero_depth": lambda L, F: F.avg_pool3d(_x5(L, (1, 1, 0, 3, 4)), 2),
    "kernel_len2": lambda L, F: F.max_pool3d(_x5(L), (2, 2)),
    "avg_kernel_len4": lambda L, F: F.avg_pool3d(_x5(L), (2, 2, 2, 2)),
    "stride_len2": lambda L, F: F.max_pool3d(_x5(L), 2, (1, 1)),
    "avg_stride_len2": lambda L, F: F.avg_pool3d(_x5(L), 2, (1, 1)),
    "padding_len2": lambda L, F: F.max_pool3d(_x5(L), 2, 1, (0, 0)),
    "avg_padding_len2": lambda L, F: F.avg_pool3d(_x5(L), 2, 1, (0, 0)),
    "dilation_len2": lambda L, F: F.max_pool3d(_x5(L), 2, 1, 0, (1, 1)),
    "divisor0": lambda L, F: F.avg_pool3d(_x5(L), 2, divisor_override=0),
    "avg_half": lambda L, F: F.avg_pool3d(_x5(L, dtype=L.float16), 2),
    "avg_bfloat16": lambda L, F: F.avg_pool3d(_x5(L, dtype=L.bfloat16), 2),
    "avg_int32": lambda L, F: F.avg_pool3d(_x5(L, dtype=L.int32), 2),
    "avg_uint8": lambda L, F: F.avg_pool3d(_x5(L, dtype=L.uint8), 2),
    "max_bool": lambda L, F: F.max_pool3d(_x5(L, dtype=L.bool), 2),
    "amax_bool": lambda L, F: F.adaptive_max_pool3d(_x5(L, dtype=L.bool), 2),
    "aavg_rank": lambda L, F: F.adaptive_avg_pool3d(_x5(L, (2, 3, 4)), 2),
    "aavg_zero": lambda L, F: F.adaptive_avg_pool3d(_x5(L, (1, 0, 2, 3, 4)), 2),
    "aavg_neg": lambda L, F: F.adaptive_avg_pool3d(_x5(L), -1),
    "aavg_len": lambda L, F: F.adaptive_avg_pool3d(_x5(L), (2, 2)),
    "aavg_int": lambda L, F: F.adaptive_avg_pool3d(_x5(L, dtype=L.int64), 2),
    "amax_rank": lambda L, F: F.adaptive_max_pool3d(_x5(L, (2, 3, 4)), 2),
    "amax_zero": lambda L, F: F.adaptive_max_pool3d(_x5(L, (1, 2, 0, 3, 4)), 2),
    "amax_neg": lambda L, F: F.adaptive_max_pool3d(_x5(L), -1),
    "amax_len": lambda L, F: F.adaptive_max_pool3d(_x5(L), (2, 2)),
    "amax_int": lambda L, F: F.adaptive_max_pool3d(_x5(L, dtype=L.int64), 2),
    "unpool_index": lambda L, F: F.max_unpool3d(*F.max_pool3d(L.arange(240.0).reshape(1, 2, 4, 5, 6), 2,
                                                              return_indices=True), 2),
    "unpool_shape": lambda L, F: F.max_unpool3d(_x5(L, (1, 2, 2, 2, 3)), L.zeros(1, 2, 2, 2, 1, dtype=L.int64), 2),
    "unpool_int32": lambda L, F: F.max_unpool3d(_x5(L, (1, 2, 2, 2, 3)), L.zeros(1, 2, 2, 2, 3, dtype=L.int32), 2),
    "unpool_rank": lambda L, F: F.max_unpool3d(_x5(L, (2, 2, 3)), L.zeros(2, 2, 3, dtype=L.int64), 2),
    "unpool_size": lambda L, F: F.max_unpool3d(_x5(L, (1, 2, 2, 2, 3)), L.zeros(1, 2, 2, 2, 3, dtype=L.int64), 2,
                                               output_size=(9, 9, 9)),
    "unpool_size_len": lambda L, F: F.max_unpool3d(_x5(L, (1, 2, 2, 2, 3)), L.zeros(1, 2, 2, 2, 3, dtype=L.int64),
                                                   2, output_size=(2, 2)),
    "lrn_rank": lambda L, F: F.local_response_norm(L.ones(2, 3), 2),
    "lp2_kernel": lambda L, F: F.lp_pool2d(_x5(L, (1, 2, 4, 4)), 2, (2, 2, 2)),
    "lp3_too_small": lambda L, F: F.lp_pool3d(_x5(L), 2, 5),
    "crossmap_rank": lambda L, F: L.nn.CrossMapLRN2d(3)(L.ones(2, 3, 4)),
}


def test_max_unpool3d_check_order():
    for shape, ishape, idt in itertools.product([(2, 2, 3), (1, 2, 2, 2, 3)], [(2, 2, 3), (1, 2, 2, 2, 3)],
                                                ["int32", "int64"]):
        if shape == ishape and idt == "int64" and len(shape) == 5:
            continue
        _same_error(lambda L: L.nn.functional.max_unpool3d(L.ones(shape), L.zeros(ishape, dtype=getattr(L, idt)), 2))


def test_adaptive_pool3d_check_order():
    for shape, size in itertools.product([(2, 2, 3), (1, 0, 2, 2, 3), (1, 2, 2, 2, 3)], [(2, 2), -1, (2, -1, 2)]):
        _same_error(lambda L: L.nn.functional.adaptive_avg_pool3d(L.ones(shape), size))
        _same_error(lambda L: L.nn.functional.adaptive_max_pool3d(L.ones(shape), size))


def test_pool3d_check_order_with_the_input():
    for name, shape, args in itertools.product(["max_pool3d", "avg_pool3d"],
                                               [(2, 2, 3), (1, 0, 2, 2, 3), (1, 1, 1, 1, 1), (1, 1, 3, 3, 3)],
                                               [((2, 2),), (0,), (2, 1, -1), (2, 1, 2), (2, -1), (4,)]):
        _same_error(lambda L: getattr(L.nn.functional, name)(L.ones(shape), *args))


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    _same_error(lambda L: ERRORS[name](L, L.nn.functional))


def test_argument_check_order():
    """Several bad arguments at once: torch's first complaint."""
    for args in itertools.product([0, (2, -1, 2)], [None, 0, -1], [0, -1, 3]):
        _same_error(lambda L: L.nn.functional.max_pool3d(_x5(L), args[0], args[1], args[2]))
        _same_error(lambda L: L.nn.functional.avg_pool3d(_x5(L), args[0], args[1], args[2]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "uint8"])
def test_low_precision_and_integer_max_pools(dtype):
    a = np.random.default_rng(4).uniform(0, 50, (1, 2, 3, 4, 5)).round()
    xt = torch.tensor(a).to(getattr(torch, dtype))
    xg = tapegrad.tensor(a).to(getattr(tapegrad, dtype))
    vt, it = torch.nn.functional.max_pool3d(xt, 2, 1, 1, return_indices=True)
    vg, ig = tapegrad.nn.functional.max_pool3d(xg, 2, 1, 1, return_indices=True)
    assert str(vg.dtype) == str(vt.dtype)
    np.testing.assert_array_equal(vg.float().numpy(), vt.float().numpy())
    np.testing.assert_array_equal(ig.numpy(), it.numpy())
    if dtype in ("float16", "bfloat16"):
        vt, it = torch.nn.functional.adaptive_max_pool3d(xt, (2, 3, 2), return_indices=True)
        vg, ig = tapegrad.nn.functional.adaptive_max_pool3d(xg, (2, 3, 2), return_indices=True)
        assert str(vg.dtype) == str(vt.dtype)
        np.testing.assert_array_equal(vg.float().numpy(), vt.float().numpy())
        np.testing.assert_array_equal(ig.numpy(), it.numpy())


@pytest.mark.parametrize("name,args,shape", [("avg_pool1d", (2,), (2, 3, 9)), ("avg_pool2d", (3, 2, 1), (2, 3, 6, 7)),
                                             ("adaptive_avg_pool2d", ((3, 4),), (2, 3, 6, 7)),
                                             ("avg_pool3d", (2,), (1, 2, 4, 4, 4))])
def test_average_pools_keep_nan_and_inf_in_their_windows(name, args, shape):
    """NaN and +-inf, in the input and in the incoming gradient, reach only the windows that hold them (a matmul with
    the pooling matrices would carry them into every output of their row)."""
    x = np.random.default_rng(0).standard_normal(shape)
    flat = x.reshape(-1)
    flat[[1, 7, 20, 21]] = [np.inf, np.nan, -np.inf, np.inf]
    seen = {}
    for lib in (torch, tapegrad):
        t = lib.tensor(x, requires_grad=True)
        y = getattr(lib.nn.functional, name)(t, *args)
        g = np.ones(tuple(y.shape))
        g.reshape(-1)[[0, 3]] = [np.inf, np.nan]
        y.backward(lib.tensor(g))
        seen[lib] = (y.detach().numpy(), t.grad.numpy())
    for a, b in zip(seen[tapegrad], seen[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kw", [{}, dict(stride=2), dict(stride=(2, 1, 3), padding=1, output_padding=(1, 0, 2)),
                                dict(padding=2, dilation=2), dict(groups=2, stride=2, padding=(0, 1, 2)),
                                dict(padding=(2, 1, 2))], ids=str)
def test_conv_transpose3d_as_torch(kw):
    """nn.ConvTranspose3d / F.conv_transpose3d (composed of conv3d: the input spread into zeros, the weight flipped):
    values and gradients of input, weight and bias as torch's, float64."""
    results = []
    for L in (torch, tapegrad):
        L.manual_seed(0)
        m = L.nn.ConvTranspose3d(4, 6, (3, 2, 3), **kw).double()
        x = L.tensor(np.random.default_rng(1).standard_normal((2, 4, 3, 4, 5)), requires_grad=True)
        y = m(x)
        (y * L.arange(y.numel(), dtype=y.dtype).reshape(y.shape).sin()).sum().backward()
        results.append([t.detach().numpy() for t in (y, x.grad, m.weight.grad, m.bias.grad)] + [repr(m)])
    for got, want in zip(results[1], results[0]):
        if isinstance(want, str):
            assert got == want
        else:
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_conv_transpose3d_output_size_lazy_and_errors_as_torch():
    out = []
    for L in (torch, tapegrad):
        L.manual_seed(0)
        row = [tuple(L.nn.ConvTranspose3d(2, 3, 3, stride=2)(L.randn(1, 2, 4, 4, 4), output_size=(10, 9, 10)).shape)]
        lazy = L.nn.LazyConvTranspose3d(5, 2)
        row += [tuple(lazy(L.randn(1, 3, 2, 2, 2)).shape), repr(lazy)]
        for args, kw in [((L.randn(1, 3, 2, 2, 2), L.randn(2, 2, 1, 1, 1)), {}),
                         ((L.randn(1, 2, 2, 2, 2), L.randn(2, 2, 1, 1, 1)), dict(padding=3))]:
            with pytest.raises(RuntimeError) as e:
                L.nn.functional.conv_transpose3d(*args, **kw)
            row.append(str(e.value))
        out.append(row)
    assert out[0] == out[1]
