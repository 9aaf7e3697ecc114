"""Recurrent layers (and their cells) against torch 2.13: same weights in, same outputs, final states and
gradients of every parameter and input out; state_dicts both ways; reprs; torch's errors."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}


def _twin(name, *args, dtype=np.float32, **kwargs):
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    if dtype == np.float64:
        theirs = theirs.double()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = getattr(tg.nn, name)(*args, **kwargs)
    if dtype == np.float64:
        ours = ours.double()
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _flat(out):
    """The tensors of a module's result, in order: output, h_n (, c_n)."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _compare(ours, theirs, arrays, dtype, grad_inputs=True):
    tol = TOL[dtype]
    rng = np.random.default_rng(7)
    tg_in = [None if a is None else tg.tensor(a, requires_grad=grad_inputs) for a in arrays]
    th_in = [None if a is None else torch.tensor(a, requires_grad=grad_inputs) for a in arrays]

    def call(mod, args):
        if len(args) == 3:  # LSTM-style (input, (h0, c0))
            return mod(args[0], (args[1], args[2])) if args[1] is not None else mod(args[0])
        return mod(*[a for a in args if a is not None])

    outs_a, outs_b = _flat(call(ours, tg_in)), _flat(call(theirs, th_in))
    assert len(outs_a) == len(outs_b)
    loss_a, loss_b = 0, 0
    for a, b in zip(outs_a, outs_b):
        assert tuple(a.shape) == tuple(b.shape) and repr(a.dtype) == repr(b.dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
        proj = rng.standard_normal(tuple(b.shape)).astype(dtype)
        loss_a = loss_a + (a * tg.tensor(proj)).sum()
        loss_b = loss_b + (b * torch.tensor(proj)).sum()
    loss_a.backward()
    loss_b.backward()
    pa, pb = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert list(pa) == list(pb)
    for name in pb:
        np.testing.assert_allclose(pa[name].grad.numpy(), pb[name].grad.numpy(), err_msg=name, **tol)
    for a, b in zip(tg_in, th_in):
        if b is not None and grad_inputs:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


def _data(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


CELLS = [("LSTMCell", {}), ("LSTMCell", {"bias": False}), ("GRUCell", {}), ("GRUCell", {"bias": False}),
         ("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"})]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kwargs", CELLS)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
def test_cells(name, kwargs, dtype, batched, with_state):
    ours, theirs = _twin(name, 5, 7, dtype=dtype, **kwargs)
    lead = (3,) if batched else ()
    x = _data(lead + (5,), dtype)
    h = _data(lead + (7,), dtype, 1) if with_state else None
    if name == "LSTMCell":
        c = _data(lead + (7,), dtype, 2) if with_state else None
        _compare(ours, theirs, [x, h, c], dtype)
    else:
        _compare(ours, theirs, [x, h], dtype)


SEQ = [("LSTM", dict(num_layers=2)), ("LSTM", dict(batch_first=True)), ("LSTM", dict(bidirectional=True,
       num_layers=2)), ("LSTM", dict(bias=False)), ("GRU", dict(num_layers=2, bidirectional=True)),
       ("GRU", dict(batch_first=True)), ("RNN", dict(nonlinearity="relu", num_layers=2)),
       ("RNN", dict(bidirectional=True, batch_first=True))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kwargs", SEQ)
@pytest.mark.parametrize("with_state", [True, False])
def test_sequence_layers(name, kwargs, dtype, with_state):
    ours, theirs = _twin(name, 4, 6, dtype=dtype, **kwargs)
    T, B = 5, 3
    x = _data((B, T, 4) if kwargs.get("batch_first") else (T, B, 4), dtype)
    L = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h = _data((L, B, 6), dtype, 1) if with_state else None
    if name == "LSTM":
        _compare(ours, theirs, [x, h, _data((L, B, 6), dtype, 2) if with_state else None], dtype)
    else:
        _compare(ours, theirs, [x, h], dtype)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_unbatched_sequence(name):
    ours, theirs = _twin(name, 4, 6, num_layers=2)
    x = _data((5, 4), np.float32)
    h = _data((2, 6), np.float32, 1)
    if name == "LSTM":
        _compare(ours, theirs, [x, h, _data((2, 6), np.float32, 2)], np.float32)
    else:
        _compare(ours, theirs, [x, h], np.float32)


def test_dropout_between_layers_in_training_only():
    ours = tg.nn.LSTM(4, 6, num_layers=3, dropout=0.5)
    x = tg.tensor(_data((5, 2, 4), np.float32))
    ours.eval()
    a, b = ours(x)[0], ours(x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    ours.train()
    tg.manual_seed(0)
    c = ours(x)[0]
    tg.manual_seed(1)
    d = ours(x)[0]
    assert not np.allclose(c.detach().numpy(), d.detach().numpy())  # dropout acted between the layers
    one = tg.nn.LSTM(4, 6, num_layers=1)
    one.train()
    np.testing.assert_array_equal(one(x)[0].detach().numpy(), one(x)[0].detach().numpy())


@pytest.mark.parametrize("name,args,kwargs", [
    ("LSTM", (3, 4), dict(num_layers=2, bias=False, batch_first=True, dropout=0.1, bidirectional=True)),
    ("GRU", (3, 4), {}), ("RNN", (3, 4), dict(nonlinearity="relu")), ("LSTMCell", (3, 4), dict(bias=False)),
    ("RNNCell", (3, 4), dict(nonlinearity="relu")), ("GRUCell", (3, 4), {}), ("RNNCell", (3, 4), {})])
def test_repr_state_dict_keys_and_init(name, args, kwargs):
    ours, theirs = getattr(tg.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    ours.eval(), theirs.eval()
    assert repr(ours) == repr(theirs)
    sa, sb = ours.state_dict(), theirs.state_dict()
    assert list(sa) == list(sb)
    bound = 1 / np.sqrt(args[1])
    for k in sb:
        assert tuple(sa[k].shape) == tuple(sb[k].shape)
        v = sa[k].numpy()
        assert np.all(np.abs(v) <= bound) and len(np.unique(v)) == v.size, k  # uniform(-1/sqrt(H), 1/sqrt(H))
    w = sa[next(iter(sa))].numpy()
    assert w.std() > bound / 3  # spread over the interval (the first weight matrix: 16 or more draws)
    # and back: tapegrad's weights into torch give tapegrad's results
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in sa.items()})
    x = _data((2, 3) if "Cell" in name else (2, 1, 3), np.float32)
    a, b = _flat(ours(tg.tensor(x))), _flat(theirs(torch.tensor(x)))
    for u, v in zip(a, b):
        np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), rtol=2e-5, atol=2e-6)


def _raises_like(f_ours, f_theirs):
    with pytest.raises(Exception) as theirs:
        f_theirs()
    with pytest.raises(type(theirs.value)) as ours:
        f_ours()
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("case", range(11))
def test_errors_match_torch(case):
    z = np.zeros
    cases = [
        ("LSTM", (10, 20, 2), lambda m, T: m(T(z((5, 3, 7), np.float32)))),
        ("LSTM", (10, 20, 2), lambda m, T: m(T(z((5, 3, 10), np.float32)), (T(z((1, 3, 20), np.float32)),
                                                                           T(z((2, 3, 20), np.float32))))),
        ("LSTM", (10, 20, 2), lambda m, T: m(T(z((5, 3, 10), np.float32)), (T(z((2, 3, 20), np.float32)),
                                                                           T(z((2, 3, 21), np.float32))))),
        ("LSTM", (10, 20, 2), lambda m, T: m(T(z((5, 3, 10, 1), np.float32)))),
        ("LSTM", (10, 20, 2), lambda m, T: m(T(z((5, 10), np.float32)), (T(z((2, 3, 20), np.float32)),
                                                                        T(z((2, 3, 20), np.float32))))),
        ("GRU", (10, 20), lambda m, T: m(T(z((5, 3, 10), np.float32)), T(z((1, 4, 20), np.float32)))),
        ("LSTMCell", (10, 20), lambda m, T: m(T(z((3, 7), np.float32)))),
        ("LSTMCell", (10, 20), lambda m, T: m(T(z((3, 10), np.float32)), (T(z((4, 20), np.float32)),
                                                                         T(z((3, 20), np.float32))))),
        ("LSTMCell", (10, 20), lambda m, T: m(T(z((3, 10, 1), np.float32)))),
        ("GRUCell", (10, 20), lambda m, T: m(T(z((3, 10), np.float32)), T(z((3, 21), np.float32)))),
        ("RNN", (10, 20), lambda m, T: m(T(z((5, 3, 10), np.float64)))),
    ]
    name, args, call = cases[case]
    _raises_like(lambda: call(getattr(tg.nn, name)(*args), tg.tensor),
                 lambda: call(getattr(torch.nn, name)(*args), torch.tensor))


def test_constructor_errors_and_warning():
    _raises_like(lambda: tg.nn.RNN(3, 4, nonlinearity="x"), lambda: torch.nn.RNN(3, 4, nonlinearity="x"))
    _raises_like(lambda: tg.nn.LSTM(3, 4, dropout=1.5), lambda: torch.nn.LSTM(3, 4, dropout=1.5))
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        tg.nn.LSTM(3, 4, dropout=0.5)
    with pytest.raises(NotImplementedError, match="proj_size"):
        tg.nn.LSTM(3, 4, proj_size=2)


def test_lstm_cell_is_two_fused_rows():
    cell = tg.nn.LSTMCell(3, 4)
    h, c = cell(tg.randn(2, 3), (tg.randn(2, 4), tg.randn(2, 4)))
    assert type(h.grad_fn).__name__ == "ThnnFusedLstmCellBackward0"
    assert type(c.grad_fn).__name__ == "ThnnFusedLstmCellBackward0"


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell"])
def test_second_order(name):
    """d/dx of (sum of the gradient wrt the weights, squared), through create_graph, float64."""
    ours, theirs = _twin(name, 3, 4, dtype=np.float64)
    # fresh Parameters (version 0): on main, a create_graph backward through a weight changed in place
    # before the forward (init, load_state_dict) fails its version check (a bug outside these layers)
    for k, v in theirs.state_dict().items():
        setattr(ours, k, tg.nn.Parameter(tg.tensor(v.numpy())))
    x = _data((2, 3), np.float64)
    h = _data((2, 4), np.float64, 1)
    c = _data((2, 4), np.float64, 2)
    results = []
    for lib, mod in ((tg, ours), (torch, theirs)):
        xs, hs, cs = (lib.tensor(a, requires_grad=True) for a in (x, h, c))
        out = mod(xs, (hs, cs)) if name == "LSTMCell" else mod(xs, hs)
        out = out[0] * out[1] if name == "LSTMCell" else out
        ws = list(mod.parameters())
        grads = lib.autograd.grad((out * out).sum(), ws + [hs], create_graph=True)
        total = sum((g * g).sum() for g in grads)
        second = lib.autograd.grad(total, [xs, hs, cs] + ws, allow_unused=True)
        results.append([None if g is None else g.detach().numpy() for g in second])
    for a, b in zip(*results):
        if b is None:
            continue
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
