"""Module edge cases torch's own ModuleInfo samples (torch.testing._internal.common_modules) found different:
an empty batch through batch norm, F.batch_norm's eps checks, GroupNorm(bias=False), the recurrent modules'
checks of input_size. Each against torch, values, gradients and errors."""
import numpy as np
import pytest
import torch

import tapegrad as tg


def _outcome(fn):
    try:
        return fn()
    except Exception as e:  # (the exception is the result compared)
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("shape", [(0, 5, 9), (0, 5), (2, 5, 0), (0, 5, 3, 3)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_of_an_empty_batch_is_empty_and_keeps_running_stats(shape, affine):
    cls = {2: "BatchNorm1d", 3: "BatchNorm1d", 4: "BatchNorm2d"}[len(shape)]
    results = []
    for L in (torch, tg):
        m = getattr(L.nn, cls)(5, affine=affine)
        x = L.zeros(shape, requires_grad=True)
        y = m(x)
        y.sum().backward()
        grads = None if not affine else (m.weight.grad.numpy().tolist(), m.bias.grad.numpy().tolist())
        results.append((tuple(y.shape), m.running_mean.numpy().tolist(), m.running_var.numpy().tolist(),
                        int(m.num_batches_tracked), tuple(x.grad.shape), grads))
    assert results[0] == results[1]


@pytest.mark.parametrize("shape,training,eps", [((1, 5), True, 1e-5), ((1, 5, 1), True, 1e-5), ((4, 5), True, 0.0),
                                                ((4, 5), True, -1.0), ((4, 5), False, -1.0), ((4, 5), False, 0.0),
                                                ((2, 0, 3), True, 1e-5)])
def test_functional_batch_norm_checks_as_torch(shape, training, eps):
    def run(L):
        x = L.ones(shape)
        c = shape[1]
        return tuple(L.nn.functional.batch_norm(x, L.zeros(c), L.ones(c), training=training, eps=eps).shape)
    assert _outcome(lambda: run(torch)) == _outcome(lambda: run(tg))


@pytest.mark.parametrize("shape,stats", [((0, 3), 5), ((2, 3, 0), 5), ((0,), 0)])
def test_batch_norm_of_an_empty_input_checks_nothing(shape, stats):
    for L in (torch, tg):
        out = L.nn.functional.batch_norm(L.ones(shape), L.zeros(stats), L.ones(stats), training=True)
        assert tuple(out.shape) == shape


def test_torch_batch_norm_has_no_eps_check():
    for L in (torch, tg):
        assert tuple(L.batch_norm(L.ones(4, 5), None, None, L.zeros(5), L.ones(5), True, 0.1, 0.0, False).shape) == (4, 5)


@pytest.mark.parametrize("affine,bias", [(True, False), (True, True), (False, False)])
def test_group_norm_bias_keyword(affine, bias):
    mods = [L.nn.GroupNorm(2, 4, affine=affine, bias=bias) for L in (torch, tg)]
    assert repr(mods[0]) == repr(mods[1])
    assert list(mods[0].state_dict()) == list(mods[1].state_dict())
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    outs = []
    for L, m in zip((torch, tg), mods):
        t = L.tensor(x, requires_grad=True)
        m.double()
        y = m(t)
        (y * L.tensor(np.arange(60.0).reshape(3, 4, 5))).sum().backward()
        outs.append((y.detach().numpy(), t.grad.numpy(), None if not affine else m.weight.grad.numpy()))
    for a, b in zip(*outs):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("args", [(3.0, 5), ("10", 5), (0, 5), (-1, 5), (3, 0), (3, 5.0)])
def test_recurrent_constructors_check_sizes_as_torch(cls, args):
    assert _outcome(lambda: repr(getattr(torch.nn, cls)(*args))) == _outcome(lambda: repr(getattr(tg.nn, cls)(*args)))


@pytest.mark.parametrize("cls,shape", [("LPPool1d", (1, 3, 6)), ("LPPool2d", (1, 2, 4, 4))])
def test_lp_pool_of_negative_inputs_is_nan_as_torch(cls, shape):
    """A fractional norm of negative values is NaN in torch (its threshold passes NaN); a zero window stays 0."""
    x = np.random.default_rng(0).standard_normal(shape)
    x.reshape(-1)[:2] = 0
    outs = []
    for L in (torch, tg):
        t = L.tensor(x, requires_grad=True)
        y = getattr(L.nn, cls)(1.5, 2)(t)
        y.nansum().backward()
        outs.append((y.detach().numpy(), t.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("ndim", [1, 2, 3, 4, 5, 6])
def test_circular_pad_checks_the_input_rank_as_torch(d, ndim):
    def run(L):
        x = L.ones((2,) * ndim)
        return tuple(getattr(L.nn, f"CircularPad{d}d")(1)(x).shape)
    assert _outcome(lambda: run(torch)) == _outcome(lambda: run(tg))


@pytest.mark.parametrize("shape,normalized", [((1, 2, 3), (1, 2, 3)), ((2, 3), (2, 3)), ((4, 2, 3), (2, 3))])
def test_layer_norm_second_derivative_over_every_dim(shape, normalized):
    """layer_norm over all of its input's dims has no parameter axes to sum its weight's gradient over (a Tensor's
    sum over dim=() reduces everything, as torch's: the create_graph rule must not call it)."""
    rng = np.random.default_rng(0)
    xn, wn, cn = rng.standard_normal(shape), rng.standard_normal(normalized), rng.standard_normal(shape)
    outs = []
    for L in (torch, tg):
        x, w, b = (L.tensor(a, requires_grad=True) for a in (xn, wn, 2 * wn))
        y = L.nn.functional.layer_norm(x, normalized, w, b, 0.5)
        g = L.autograd.grad((y * L.tensor(cn)).sum(), (x, w, b), create_graph=True)
        gg = L.autograd.grad((g[0] * 2).sum() + (g[1] * 3).sum() + (g[2] * g[2]).sum(), (x, w, b), allow_unused=True)
        outs.append([None if a is None else a.detach().numpy() for a in gg])
    for a, b in zip(*outs):
        if a is None or b is None:
            assert (a is None or not a.any()) and (b is None or not b.any())
        else:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=2, stride=1, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                                dict(kernel_size=3, padding=1, count_include_pad=False)])
@pytest.mark.parametrize("nd", [1, 2])
def test_avg_pool_of_integers_truncates_as_torch(kw, nd):
    """An integer input's average is its window's exact sum over the divisor, truncated toward zero (it was 0)."""
    x = np.random.default_rng(0).integers(-50, 50, (2, 3, 7, 6)[:nd + 2])
    a, b = (getattr(L.nn.functional, f"avg_pool{nd}d")(L.tensor(x), **kw).numpy() for L in (torch, tg))
    assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all()


@pytest.mark.parametrize("divisor", [-4, 5])
def test_avg_pool2d_of_integers_with_a_divisor_override(divisor):
    x = np.random.default_rng(1).integers(-50, 50, (1, 2, 5, 5))
    a, b = (L.nn.functional.avg_pool2d(L.tensor(x), (2, 3), divisor_override=divisor).numpy() for L in (torch, tg))
    assert a.dtype == b.dtype and (a == b).all()


@pytest.mark.parametrize("name", ["hardshrink", "softshrink", "threshold"])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_shrink_and_threshold_pass_nan_as_torch(name, dt):
    """torch's kernels test `x <= threshold` (`-lambd <= x <= lambd`), so NaN is passed on with its gradient, where
    tapegrad's gave the replacement value (a NaN hidden) and no gradient."""
    x = np.array([np.nan, np.inf, -np.inf, 0.0, 0.3, -0.7, 2.0, 0.5, -0.5, 0.1], dt)
    outs = []
    for L in (torch, tg):
        t = L.tensor(x, requires_grad=True)
        fn = getattr(L.nn.functional, name)
        y = fn(t, 0.5, 0.1) if name == "threshold" else fn(t)
        g, = L.autograd.grad((y * L.tensor(np.arange(1.0, 11.0).astype(dt))).sum(), t)
        outs.append((y.detach().numpy(), g.numpy()))
    if name != "threshold":  # (torch's shrink gradients at NaN are their vector lanes' 0 or their scalar tail's 1)
        for _, g in outs:
            g[0] = 0
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
        assert (np.signbit(a) == np.signbit(b)).all()
