"""The fast paths of the recurrent cells' forward (a batch and its states, every check passing) and of
Module.__getattr__, against torch 2.13 and against the general path they skip: values, gradients, errors, and
each fall-through edge (unbatched input, no state, a list of states, wrong sizes, hooks)."""
import pickle

import numpy as np
import pytest
import torch

import tapegrad as tg

R = np.random.default_rng(51)
CELLS = ("LSTMCell", "GRUCell", "RNNCell")


def _pair(name, input_size=5, hidden_size=4, dtype=np.float32, **kwargs):
    """The same cell in torch and tapegrad (torch's weights copied across)."""
    theirs = getattr(torch.nn, name)(input_size, hidden_size, **kwargs).to(torch.float64 if dtype == np.float64
                                                                           else torch.float32)
    ours = getattr(tg.nn, name)(input_size, hidden_size, **kwargs).to(tg.float64 if dtype == np.float64
                                                                      else tg.float32)
    ours.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return theirs, ours


def _arrays(*shapes, dtype=np.float32):
    return [R.standard_normal(s).astype(dtype) for s in shapes]


def _run(lib, cell, name, x, states, as_list=False):
    """cell(x, states) and the gradients of the output(s) sum with respect to x, the states and the weights."""
    xt = lib.tensor(x, requires_grad=True)
    st = [lib.tensor(s, requires_grad=True) for s in states]
    hx = None if not st else (st if as_list else tuple(st)) if name == "LSTMCell" else st[0]
    out = cell(xt, hx)
    outs = out if isinstance(out, tuple) else (out,)
    total = sum((o * (i + 1.5)).sum() for i, o in enumerate(outs))
    wanted = [xt] + st + list(cell.parameters())
    grads = lib.autograd.grad(total, wanted)
    return [o.detach().numpy() for o in outs], [g.numpy() for g in grads], [o.grad_fn.name() for o in outs]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", CELLS)
def test_batched_call_matches_torch(name, dtype):
    theirs, ours = _pair(name, dtype=dtype)
    states = [(3, 4)] * (2 if name == "LSTMCell" else 1)
    x, *hs = _arrays((3, 5), *states, dtype=dtype)
    t_out, t_grads, t_fns = _run(torch, theirs, name, x, hs)
    o_out, o_grads, o_fns = _run(tg, ours, name, x, hs)
    for a, b in zip(t_out + t_grads, o_out + o_grads):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("name", CELLS)
def test_fast_path_gives_the_general_paths_bits(name):
    """The batched call (fast path) against the same call made to take the general path (a list of LSTM states;
    for GRU and RNN the states' rows given as a 1-row batch through the unbatched route is a different op, so
    the general path is entered by turning the fast path's test off)."""
    _, ours = _pair(name, dtype=np.float64)
    states = [(3, 4)] * (2 if name == "LSTMCell" else 1)
    x, *hs = _arrays((3, 5), *states, dtype=np.float64)
    fast = _run(tg, ours, name, x, hs)
    if name == "LSTMCell":
        general = _run(tg, ours, name, x, hs, as_list=True)
    else:
        ours._is_batch = lambda input, h: False  # (an instance attribute: only this cell takes the general path)
        general = _run(tg, ours, name, x, hs)
    for a, b in zip(fast[0] + fast[1], general[0] + general[1]):
        assert np.array_equal(a, b)
    assert fast[2] == general[2]


@pytest.mark.parametrize("name", CELLS)
def test_batched_call_takes_the_fast_path(name, monkeypatch):
    """The batched call skips _batched (the general path's checks); an unbatched one still runs them."""
    _, ours = _pair(name)
    calls = []
    general = type(ours)._batched
    monkeypatch.setattr(type(ours), "_batched", lambda self, *a, **k: calls.append(1) or general(self, *a, **k))
    n_states = 2 if name == "LSTMCell" else 1
    x, *hs = _arrays((3, 5), *[(3, 4)] * n_states)
    _run(tg, ours, name, x, hs)
    assert calls == []
    x, *hs = _arrays((5,), *[(4,)] * n_states)
    _run(tg, ours, name, x, hs)
    assert calls == [1]


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("case", ["unbatched", "no_state", "unbatched_no_state"])
def test_fall_through_cases_match_torch(name, case):
    theirs, ours = _pair(name)
    n_states = 2 if name == "LSTMCell" else 1
    x_shape, h_shape = ((5,), (4,)) if case.startswith("unbatched") else ((3, 5), (3, 4))
    x, *hs = _arrays(x_shape, *[h_shape] * n_states)
    if case.endswith("no_state"):
        hs = []
    t_out, t_grads, _ = _run(torch, theirs, name, x, hs)
    o_out, o_grads, _ = _run(tg, ours, name, x, hs)
    for a, b in zip(t_out + t_grads, o_out + o_grads):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def _error(lib, name, x_shape, h_shapes, **kwargs):
    cell = getattr(lib.nn, name)(5, 4, **kwargs)
    x = lib.zeros(x_shape)
    hs = [lib.zeros(s) for s in h_shapes]
    hx = tuple(hs) if name == "LSTMCell" else hs[0]
    with pytest.raises(Exception) as info:
        cell(x, hx)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("x_shape,h_shape,c_shape", [
    ((3, 6), (3, 4), (3, 4)),   # input_size
    ((3, 5), (2, 4), (3, 4)),   # h's batch
    ((3, 5), (3, 3), (3, 4)),   # h's hidden size
    ((3, 5), (3, 4), (2, 4)),   # c's batch (LSTM)
    ((3, 5), (3, 4), (3, 5)),   # c's hidden size (LSTM)
    ((2, 3, 5), (3, 4), (3, 4)),  # 3-d input
    ((3, 5), (1, 3, 4), (3, 4)),  # 3-d state
])
def test_errors_match_torch(name, x_shape, h_shape, c_shape):
    shapes = (h_shape, c_shape) if name == "LSTMCell" else (h_shape,)
    if name != "LSTMCell" and c_shape != (3, 4):
        pytest.skip("a second state: LSTM only")
    assert _error(tg, name, x_shape, shapes) == _error(torch, name, x_shape, shapes)


def test_rnn_cell_unknown_nonlinearity_matches_torch():
    results = []
    for lib in (torch, tg):
        cell = lib.nn.RNNCell(5, 4)
        cell.nonlinearity = "sigmoid"  # (torch checks it at the call)
        with pytest.raises(RuntimeError) as info:
            cell(lib.zeros(3, 5), lib.zeros(3, 4))
        results.append(str(info.value))
    assert results[0] == results[1]


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_cell_nonlinearities(nonlinearity):
    theirs, ours = _pair("RNNCell", nonlinearity=nonlinearity)
    x, h = _arrays((3, 5), (3, 4))
    t_out, t_grads, t_fns = _run(torch, theirs, "RNNCell", x, [h])
    o_out, o_grads, o_fns = _run(tg, ours, "RNNCell", x, [h])
    for a, b in zip(t_out + t_grads, o_out + o_grads):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_lstm_cell_hooks_against_torch():
    theirs, ours = _pair("LSTMCell")
    x, h, c = _arrays((3, 5), (3, 4), (3, 4))
    outs = []
    for lib, cell in ((torch, theirs), (tg, ours)):
        cell.register_forward_pre_hook(lambda m, args: (args[0] * 2, args[1]))
        cell.register_forward_hook(lambda m, args, out: (out[0] + 1, out[1]))
        outs.append([o.detach().numpy() for o in cell(lib.tensor(x), (lib.tensor(h), lib.tensor(c)))])
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_lstm_cell_weight_replaced_by_a_plain_attribute():
    """weight_norm-style code deletes a parameter and sets a plain tensor attribute: the fast path reads it."""
    theirs, ours = _pair("LSTMCell")
    x, h, c = _arrays((3, 5), (3, 4), (3, 4))
    outs = []
    for lib, cell in ((torch, theirs), (tg, ours)):
        w = cell.weight_hh.detach() * 0.5
        del cell._parameters["weight_hh"]
        cell.weight_hh = w
        outs.append([o.detach().numpy() for o in cell(lib.tensor(x), (lib.tensor(h), lib.tensor(c)))])
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


# -- Module.__getattr__ -----------------------------------------------------------------------------------------
def _getattr_results(lib):
    m = lib.nn.Linear(3, 2)
    m.register_buffer("buf", lib.zeros(1))
    m.add_module("child", lib.nn.ReLU())
    m.register_parameter("none_param", None)
    out = [type(m.weight).__name__, tuple(m.buf.shape), type(m.child).__name__, m.none_param,
           getattr(m, "missing", "default"), hasattr(m, "missing")]
    with pytest.raises(AttributeError) as info:
        m.missing
    out.append(str(info.value))
    out.append(info.value.__context__ is None)
    return out


def test_getattr_matches_torch():
    assert _getattr_results(tg) == _getattr_results(torch)


class _Early:
    """A module reading attributes before Module.__init__ (torch's message either way)."""

    @staticmethod
    def make(lib):
        class Early(lib.nn.Module):
            def __init__(self):
                self.seen = hasattr(self, "weight")
                try:
                    self.weight
                except AttributeError as e:
                    self.message = str(e)
                    self.context = e.__context__ is None
                super().__init__()
        return Early()


def test_getattr_before_init_matches_torch():
    ours, theirs = _Early.make(tg), _Early.make(torch)
    assert (ours.seen, ours.message, ours.context) == (theirs.seen, theirs.message, theirs.context)


def test_getattr_of_a_module_missing_member_dicts():
    """A module whose __dict__ lacks _buffers and _modules (an old pickle's, say) still finds its parameters."""
    m = tg.nn.Linear(3, 2)
    del m.__dict__["_buffers"]
    del m.__dict__["_modules"]
    assert m.weight is m.__dict__["_parameters"]["weight"]
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'") as info:
        m.nope
    assert info.value.__context__ is None


def test_module_pickles_and_unpickles():
    m = tg.nn.Sequential(tg.nn.Linear(3, 2), tg.nn.ReLU())
    back = pickle.loads(pickle.dumps(m))
    assert np.array_equal(back[0].weight.detach().numpy(), m[0].weight.detach().numpy())
