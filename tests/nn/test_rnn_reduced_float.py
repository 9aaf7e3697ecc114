"""nn.LSTM / GRU / RNN and their cells in bfloat16 and float16, and in float32 under CPU autocast, against torch
2.13: output dtypes, grad_fns, values and gradients.

torch runs a bfloat16 LSTM layer (and autocast's, whose lower-precision list has mkldnn_rnn_layer) in oneDNN:
float32 gates, the states rounded each step; tapegrad computes it the same way, so one layer matches it bit for bit,
gradients too. Everything else is torch's composite cell, op by op, each result rounded: single ops match exactly,
but a recurrence carries the rare one-step difference of a transcendental or a matmul's summation order on, so
sequences are compared normwise, within one or two steps of the dtype, most elements equal. Where a tensor takes
gradient from two float32 casts (a bidirectional layer's input), tapegrad sums them before rounding and torch
after, one step apart at most."""
import numpy as np
import pytest
import torch

import tapegrad

STEP = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}


def values(t):
    return np.asarray(t.detach().float().tolist(), np.float64)


def same_params(tm, gm):
    gm.load_state_dict({k: tapegrad.tensor(v.detach().float().tolist()) for k, v in tm.state_dict().items()})


def run(lib, m, dtype, autocast, x, states, out_grads):
    """(outputs, gradients of the input, states and parameters) of module m on x (float32 values) in dtype, or in
    float32 under autocast to `autocast`; backward from the given adjoints (values), in each output's dtype."""
    if dtype is not None:
        m = m.to(getattr(lib, dtype))
    cast = (lambda v: lib.tensor(v).to(getattr(lib, dtype))) if dtype else lib.tensor
    xx = cast(x).requires_grad_()
    ss = [cast(s).requires_grad_() for s in states]
    args = (xx,) if not ss else (xx, ss[0]) if len(ss) == 1 else (xx, tuple(ss))
    if autocast:
        with lib.autocast("cpu", dtype=getattr(lib, autocast)):
            res = m(*args)
    else:
        res = m(*args)
    outs = []
    for r in (res if isinstance(res, tuple) else (res,)):
        outs += list(r) if isinstance(r, tuple) else [r]
    if out_grads is not None:
        lib.autograd.backward(outs, [lib.tensor(g).to(o.dtype) for o, g in zip(outs, out_grads)])
    return outs, [xx.grad] + [s.grad for s in ss] + [p.grad for p in m.parameters()]


def compare(kind, dtype=None, autocast=None, T=5, B=3, I=4, H=6, states=False, seed=0, **kw):
    """torch's and tapegrad's (outputs, gradients) of one module call, as float64 arrays, and torch's outputs."""
    torch.manual_seed(seed)
    tm = getattr(torch.nn, kind)(I, H, **kw)
    gm = getattr(tapegrad.nn, kind)(I, H, **kw)
    same_params(tm, gm)
    r = np.random.default_rng(seed)
    cell = kind.endswith("Cell")
    x = r.standard_normal((B, I) if cell else (B, T, I) if kw.get("batch_first") else (T, B, I)).tolist()
    layers = 1 if cell else kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    n_states = (2 if "LSTM" in kind else 1) if states else 0
    st = [(0.5 * r.standard_normal((B, H) if cell else (layers, B, H))).tolist() for _ in range(n_states)]
    with torch.no_grad():  # (the outputs' shapes first)
        outs = run(torch, tm, dtype, autocast, x, st, None)[0]
    out_grads = [r.standard_normal(tuple(o.shape)).tolist() for o in outs]
    t_outs, t_grads = run(torch, tm, dtype, autocast, x, st, out_grads)
    g_outs, g_grads = run(tapegrad, gm, dtype, autocast, x, st, out_grads)
    assert [str(o.dtype) for o in g_outs] == [str(o.dtype) for o in t_outs]
    assert [type(o.grad_fn).__name__ for o in g_outs] == [type(o.grad_fn).__name__ for o in t_outs]
    assert [g is None for g in g_grads] == [g is None for g in t_grads]
    assert [str(g.dtype) for g in g_grads] == [str(g.dtype) for g in t_grads]
    return ([values(o) for o in g_outs], [values(o) for o in t_outs],
            [values(g) for g in g_grads], [values(g) for g in t_grads])


def assert_equal(got, want):
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def assert_close(got, want, steps, step, equal_fraction=0.0):
    """Normwise within `steps` steps of the dtype (relative to the tensor's largest value), and at least
    equal_fraction of the elements bit-identical."""
    for g, w in zip(got, want):
        scale = np.abs(w).max() if w.size else 0.0
        assert np.abs(g - w).max(initial=0.0) <= steps * step * scale, np.abs(g - w).max() / (step * scale)
        assert not w.size or (g == w).mean() >= equal_fraction


# -- torch's oneDNN LSTM layer: bfloat16, and float32 under autocast ----------------------------------------
@pytest.mark.parametrize("autocast", [None, "bfloat16"])
@pytest.mark.parametrize("kw", [{}, {"batch_first": True}, {"bias": False}, {"num_layers": 2}])
def test_lstm_layer_as_torch_onednn_bit_for_bit(kw, autocast):
    """out, h_n, c_n and every gradient equal: the gates in float32 from x W_ih^T + h W_hh^T + (b_ih + b_hh
    rounded), h' and the carried c' rounded each step; the backward from the rounded gate activations and
    tanh(rounded c'), each step's gate adjoint rounded, h_n's adjoint entering unrounded."""
    go, to, gg, tg = compare("LSTM", None if autocast else "bfloat16", autocast, states=True, **kw)
    assert_equal(go, to)
    assert_equal(gg, tg)


@pytest.mark.parametrize("autocast", [None, "bfloat16"])
def test_lstm_bidirectional_layers_as_torch_onednn(autocast):
    """Outputs equal; gradients equal but where a layer's input takes both directions' (one step at most)."""
    kw = dict(num_layers=2, bidirectional=True, batch_first=True)
    go, to, gg, tg = compare("LSTM", None if autocast else "bfloat16", autocast, states=True, **kw)
    assert_equal(go, to)
    assert_close(gg, tg, 1, STEP["bfloat16"])
    assert_equal(gg[-8:], tg[-8:])  # (the last layer's parameters: its input is used once per direction)


def test_lstm_under_autocast_casts_as_torch():
    """autocast casts the layer's input, states and weights to bfloat16 (mkldnn_rnn_layer's list): bfloat16
    outputs; a packed or proj_size LSTM runs torch's composite cell, its matmuls autocast (float32 c)."""
    for lib in (torch, tapegrad):
        lib.manual_seed(0)
        x = lib.randn(4, 2, 3)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out, (h, c) = lib.nn.LSTM(3, 5)(x)
            assert (out.dtype, h.dtype, c.dtype) == (lib.bfloat16,) * 3
            assert type(out.grad_fn).__name__ == "MkldnnRnnLayerBackward0"
            out, (h, c) = lib.nn.LSTM(3, 5)(x.bfloat16())  # (no input dtype check under autocast, as torch's)
            assert out.dtype == lib.bfloat16
            out, (h, c) = lib.nn.LSTM(3, 5, proj_size=2)(x)
            assert (out.dtype, h.dtype, c.dtype) == (lib.bfloat16, lib.bfloat16, lib.float32)
            packed = lib.nn.utils.rnn.pack_padded_sequence(x, [4, 3])
            out, (h, c) = lib.nn.LSTM(3, 5)(packed)
            assert (out.data.dtype, h.dtype, c.dtype) == (lib.float32,) * 3
            out.data.sum().backward()
        with pytest.raises(ValueError, match=r"RNN input dtype \(torch.bfloat16\) does not match weight dtype"):
            lib.nn.LSTM(3, 5)(x.bfloat16())


# -- torch's composite cells: float16 and bfloat16 layers, cells, autocast ------------------------------------
# Outputs: equal but for a rare flip carried on; except batch_first, whose projection torch computes from the
# transposed (non-contiguous) input as a bmm and a bias add, rounding twice, where tapegrad's F.linear rounds once.
# Gradients: torch rounds each contribution to a tensor used three times (an h: the next step, the cell, the
# output) before summing, tapegrad after (and float16's sigmoid backward rounds more often): within two steps.
LAYERS = [({}, 1), ({"num_layers": 2, "bidirectional": True}, 1), ({"batch_first": True}, 2)]


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("kw,out_steps", LAYERS)
@pytest.mark.parametrize("seed", [0, 1])
def test_layers_as_torch_composite(dtype, kw, out_steps, seed):
    """GRU, RNN and a float16 LSTM (which torch does not run in oneDNN with gradients on) or a bfloat16 one with
    proj_size step by step as torch's composite cells, each op's result rounded."""
    for kind in ("GRU", "RNN", "LSTM"):
        kkw = dict(kw, proj_size=2) if kind == "LSTM" and dtype == "bfloat16" else kw
        go, to, gg, tg = compare(kind, dtype, states="proj_size" not in kkw, seed=seed, **kkw)
        assert_close(go, to, out_steps, STEP[dtype], equal_fraction=0.95 if out_steps == 1 else 0.4)
        assert_close(gg, tg, 2, STEP[dtype])


@pytest.mark.parametrize("kw,out_steps", LAYERS)
@pytest.mark.parametrize("seed", [0, 1])
def test_layers_under_autocast_as_torch(kw, out_steps, seed):
    """Under autocast the matmuls are bfloat16; a GRU's h' = (h - n) z + n is float32 (its h is), an RNN's
    tanh(gx + gh) bfloat16: outputs of those dtypes (compare checks them)."""
    for kind in ("GRU", "RNN"):
        go, to, gg, tg = compare(kind, None, "bfloat16", states=True, seed=seed, **kw)
        assert_close(go, to, out_steps, STEP["bfloat16"], equal_fraction=0.95 if out_steps == 1 else 0.2)
        assert_close(gg, tg, 2, STEP["bfloat16"])


@pytest.mark.parametrize("dtype,autocast", [("bfloat16", None), ("float16", None), (None, "bfloat16")])
@pytest.mark.parametrize("states", [False, True])
def test_cells_as_torch(dtype, autocast, states):
    """One step, op by op as torch's: outputs equal (under autocast LSTMCell's and GRUCell's are float32, from
    bfloat16 gates and float32 states: within float32's rounding, RNNCell's bfloat16); gradients equal in
    bfloat16 but for a state used twice, within one step in float16 (tapegrad's float16 sigmoid backward rounds
    between its products, torch's once) and within two under autocast (float32 contributions summed before
    rounding)."""
    for kind in ("LSTMCell", "GRUCell", "RNNCell"):
        go, to, gg, tg = compare(kind, dtype, autocast, B=4, states=states)
        if autocast:
            for g, w in zip(go, to):
                np.testing.assert_allclose(g, w, rtol=2.0 ** -22, atol=2.0 ** -30)
        else:
            assert_equal(go, to)
        if dtype == "bfloat16" and not states:
            assert_equal(gg, tg)
        else:
            assert_close(gg, tg, 2 if autocast else 1, STEP[dtype or autocast])


def test_reduced_float_lstm_double_backward_and_compile():
    """create_graph through a bfloat16 LSTM layer (its rule in tapegrad ops) gives the first-order gradient of
    the array rule within a step, and a second order; tapegrad.compile replays it bit for bit."""
    tapegrad.manual_seed(0)
    m = tapegrad.nn.LSTM(3, 4).bfloat16()
    x = tapegrad.randn(3, 2, 3).bfloat16().requires_grad_()

    def loss():
        out, (h, c) = m(x)
        return out.float().pow(2).sum() + c.float().pow(2).sum() + h.float().sum()
    g1 = values(tapegrad.autograd.grad(loss(), x)[0])
    g2 = tapegrad.autograd.grad(loss(), x, create_graph=True)[0]
    assert g2.dtype == tapegrad.bfloat16 and g2.requires_grad
    np.testing.assert_allclose(values(g2), g1, atol=2 * STEP["bfloat16"] * np.abs(g1).max())
    g2.float().pow(2).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    fn = tapegrad.compile(loss)
    for _ in range(3):
        x.data = tapegrad.randn(3, 2, 3).bfloat16()
        want = values(tapegrad.autograd.grad(loss(), x)[0])
        np.testing.assert_array_equal(values(tapegrad.autograd.grad(fn(), x)[0]), want)
