"""The whole-sequence LSTM layer rows (ops.rnn.lstm_layer) against torch 2.13: torch's grad_fn name, each output's
gradient alone (the output sequence, c_n), second order through create_graph, and tapegrad.compile's replay."""
import numpy as np
import pytest
import torch

import tapegrad as tg


def _twin(dtype=np.float64, **kwargs):
    theirs = torch.nn.LSTM(3, 4, **kwargs)
    ours = tg.nn.LSTM(3, 4, **kwargs)
    if dtype == np.float64:
        theirs, ours = theirs.double(), ours.double()
    for k, v in theirs.state_dict().items():  # fresh Parameters (version 0), as test_recurrent_attention's
        setattr(ours, k, tg.nn.Parameter(tg.tensor(v.numpy())))
    return ours, theirs


def _data(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_output_is_one_row_per_layer_named_as_torch():
    out, (h, c) = tg.nn.LSTM(3, 4, num_layers=2)(tg.randn(5, 2, 3))
    assert type(out.grad_fn).__name__ == "MkldnnRnnLayerBackward0"
    assert type(c.grad_fn).__name__ == "StackBackward0"


@pytest.mark.parametrize("which", ["out", "h_n", "c_n"])
@pytest.mark.parametrize("kwargs", [dict(num_layers=2), dict(bidirectional=True), dict(bias=False)])
def test_each_output_alone(which, kwargs):
    ours, theirs = _twin(**kwargs)
    D = 2 if kwargs.get("bidirectional") else 1
    L = kwargs.get("num_layers", 1) * D
    x, h0, c0 = _data((6, 2, 3), np.float64, 0), _data((L, 2, 4), np.float64, 1), _data((L, 2, 4), np.float64, 2)
    grads = []
    for lib, mod in ((tg, ours), (torch, theirs)):
        xs, hs, cs = (lib.tensor(a, requires_grad=True) for a in (x, h0, c0))
        out, (h, c) = mod(xs, (hs, cs))
        pick = {"out": out, "h_n": h, "c_n": c}[which]
        (pick * pick).sum().backward()
        grads.append([t.grad.numpy() for t in (xs, hs, cs)] + [p.grad.numpy() for p in mod.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kwargs", [dict(num_layers=2), dict(bidirectional=True)])
def test_second_order(kwargs):
    """d/d(x, h0, c0, weights) of the squared gradients, through create_graph, float64."""
    ours, theirs = _twin(**kwargs)
    L = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    x, h0, c0 = _data((4, 2, 3), np.float64, 3), _data((L, 2, 4), np.float64, 4), _data((L, 2, 4), np.float64, 5)
    results = []
    for lib, mod in ((tg, ours), (torch, theirs)):
        xs, hs, cs = (lib.tensor(a, requires_grad=True) for a in (x, h0, c0))
        out, (h, c) = mod(xs, (hs, cs))
        ws = list(mod.parameters())
        grads = lib.autograd.grad((out * out).sum() + (h * c).sum(), ws + [xs], create_graph=True)
        total = sum((g * g).sum() for g in grads)
        results.append([g.detach().numpy() for g in lib.autograd.grad(total, [xs, hs, cs] + ws)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-11)


def _compiled_matches_eager(mod, loss, shapes):
    """tapegrad.compile(loss) against loss itself over three seeds: value, inputs' and parameters' gradients."""
    compiled = tg.compile(loss, fullgraph=True)
    for seed in range(3):
        arrays = [_data(shape, np.float32, seed + 10 * k) for k, shape in enumerate(shapes)]
        results = []
        for f in (loss, compiled):
            ins = [tg.tensor(a, requires_grad=True) for a in arrays]
            mod.zero_grad()
            value = f(*ins)
            value.backward()
            results.append([value.detach().numpy()] + [t.grad.numpy() for t in ins]
                           + [p.grad.numpy().copy() for p in mod.parameters()])
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_compile_replays_the_layer_rows():
    mod = tg.nn.LSTM(3, 4, num_layers=2, bidirectional=True)

    def loss(x, h, c):
        out, (hn, cn) = mod(x, (h, c))
        return (out * out).sum() + (hn * cn).sum()

    _compiled_matches_eager(mod, loss, [(5, 2, 3), (4, 2, 4), (4, 2, 4)])


# -- the whole-sequence GRU layer row (ops.rnn.gru_layer) ------------------------------------------------------
def _gru_twin(dtype=np.float64, **kwargs):
    theirs, ours = torch.nn.GRU(3, 4, **kwargs), tg.nn.GRU(3, 4, **kwargs)
    if dtype == np.float64:
        theirs, ours = theirs.double(), ours.double()
    for k, v in theirs.state_dict().items():
        setattr(ours, k, tg.nn.Parameter(tg.tensor(v.numpy())))
    return ours, theirs


def test_gru_output_is_one_row_per_layer_named_as_torch():
    x = tg.randn(5, 2, 3, requires_grad=True)
    out, h = tg.nn.GRU(3, 4)(x)
    assert type(out.grad_fn).__name__ == type(h.grad_fn).__name__ == "StackBackward0"
    # one row over the sequence: its inputs are the input projection, h0, W_hh and b_hh (not the 5 steps)
    assert len(out.grad_fn.next_functions) == 4


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("which", ["out", "h_n"])
@pytest.mark.parametrize("kwargs", [dict(num_layers=2), dict(bidirectional=True), dict(bias=False),
                                    dict(batch_first=True)])
def test_gru_each_output_alone(which, kwargs, dtype):
    ours, theirs = _gru_twin(dtype, **kwargs)
    L = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    x, h0 = _data((6, 2, 3), dtype, 0), _data((L, 6 if kwargs.get("batch_first") else 2, 4), dtype, 1)
    grads = []
    for lib, mod in ((tg, ours), (torch, theirs)):
        xs, hs = lib.tensor(x, requires_grad=True), lib.tensor(h0, requires_grad=True)
        out, h = mod(xs, hs)
        pick = {"out": out, "h_n": h}[which]
        (pick * pick).sum().backward()
        grads.append([pick.detach().numpy(), xs.grad.numpy(), hs.grad.numpy()]
                     + [p.grad.numpy() for p in mod.parameters()])
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    for a, b in zip(*grads):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("kwargs", [dict(num_layers=2), dict(bidirectional=True)])
def test_gru_second_order(kwargs):
    ours, theirs = _gru_twin(**kwargs)
    L = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    x, h0 = _data((4, 2, 3), np.float64, 3), _data((L, 2, 4), np.float64, 4)
    results = []
    for lib, mod in ((tg, ours), (torch, theirs)):
        xs, hs = lib.tensor(x, requires_grad=True), lib.tensor(h0, requires_grad=True)
        out, h = mod(xs, hs)
        ws = list(mod.parameters())
        grads = lib.autograd.grad((out * out).sum() + (h * h * h).sum(), ws + [xs, hs], create_graph=True)
        total = sum((g * g).sum() for g in grads)
        results.append([g.detach().numpy() for g in lib.autograd.grad(total, [xs, hs] + ws)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-11)


def test_compile_replays_the_gru_layer_row():
    mod = tg.nn.GRU(3, 4, num_layers=2, bidirectional=True)

    def loss(x, h):
        out, hn = mod(x, h)
        return (out * out).sum() + (hn * hn).sum()

    _compiled_matches_eager(mod, loss, [(5, 2, 3), (4, 2, 4)])
