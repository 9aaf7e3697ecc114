"""Recurrent layers (and their cells) against torch 2.13: same weights in, same outputs, final states and
gradients of every parameter and input out; state_dicts both ways; reprs; torch's errors."""
import importlib
import re
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
    _raises_like(lambda: tg.nn.LSTM(3, 4, proj_size=4), lambda: torch.nn.LSTM(3, 4, proj_size=4))
    _raises_like(lambda: tg.nn.LSTM(3, 4, proj_size=-1), lambda: torch.nn.LSTM(3, 4, proj_size=-1))
    _raises_like(lambda: tg.nn.GRU(3, 4, proj_size=2), lambda: torch.nn.GRU(3, 4, proj_size=2))


def test_lstm_cell_is_two_fused_rows():
    """Two rows, under the names of the last ops of torch's composed CPU cell (h: MulBackward0, c: AddBackward0)."""
    cell = tg.nn.LSTMCell(3, 4)
    h, c = cell(tg.randn(2, 3), (tg.randn(2, 4), tg.randn(2, 4)))
    from tapegrad.registry import OPS
    assert (OPS[h._op].name, type(h.grad_fn).__name__) == ("lstm_cell_h", "MulBackward0")
    assert (OPS[c._op].name, type(c.grad_fn).__name__) == ("lstm_cell_c", "AddBackward0")


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


@pytest.mark.parametrize("kwargs", [dict(num_layers=2), dict(nonlinearity="relu", bidirectional=True),
                                    dict(bias=False, batch_first=True)])
def test_rnn_layer_is_one_row_with_torchs_second_order(kwargs):
    """nn.RNN runs each layer-direction as one row (ops.rnn.rnn_layer, StackBackward0 as torch's output), and
    create_graph differentiates it again as torch does: d/d(x, h0, weights) of the squared gradient, float64."""
    ours, theirs = _twin("RNN", 3, 4, dtype=np.float64, **kwargs)
    for k, v in theirs.state_dict().items():  # (fresh Parameters: see test_second_order)
        setattr(ours, k, tg.nn.Parameter(tg.tensor(v.numpy())))
    L = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    x = _data((2, 5, 3) if kwargs.get("batch_first") else (5, 2, 3), np.float64)
    h = _data((L, 2, 4), np.float64, 1)
    x[0, 0, 0] = 0.0  # (relu's kink: a pre-activation at exactly 0 is unlikely, so this leaves it to chance)
    results, names = [], []
    for lib, mod in ((tg, ours), (torch, theirs)):
        xs, hs = lib.tensor(x, requires_grad=True), lib.tensor(h, requires_grad=True)
        out, h_n = mod(xs, hs)
        names.append((out.grad_fn.name(), h_n.grad_fn.name()))
        if lib is tg:  # (the rows the outputs' graph reaches: other tests may have left rows on the tape)
            from tapegrad.registry import OPS
            tape, rows, todo = out._tape, set(), [out._slot, h_n._slot]
            while todo:
                r = todo.pop()
                if r not in rows:
                    rows.add(r)
                    todo.extend(tape.row_args(r))
            assert sum(OPS[int(tape.op[r])].name == "rnn_layer" for r in rows) == L
        loss = (out * out).sum() + (h_n * h_n).sum()
        ws = list(mod.parameters())
        grads = lib.autograd.grad(loss, ws + [hs], create_graph=True)
        total = sum((g * g).sum() for g in grads)
        second = lib.autograd.grad(total, [xs, hs] + ws, allow_unused=True)
        results.append([None if g is None else g.detach().numpy() for g in second])
    assert names[0] == names[1]
    for a, b in zip(*results):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


# -- attention ---------------------------------------------------------------------------------------------
F_TG, F_TH = tg.nn.functional, torch.nn.functional


def _both(arrays, grad=True):
    return ([tg.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays],
            [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays])


def _check_grads(outs, ins, dtype):
    rng = np.random.default_rng(3)
    (oa, ob), (ia, ib) = outs, ins
    np.testing.assert_allclose(oa.detach().numpy(), ob.detach().numpy(), **TOL[dtype])
    proj = rng.standard_normal(tuple(ob.shape)).astype(dtype)
    (oa * tg.tensor(proj)).sum().backward()
    (ob * torch.tensor(proj)).sum().backward()
    for a, b in zip(ia, ib):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mask", [None, "bool", "float", "causal"])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_scaled_dot_product_attention(dtype, mask, scale):
    q, k, v = _data((2, 3, 4, 5), dtype, 0), _data((2, 3, 6, 5), dtype, 1), _data((2, 3, 6, 7), dtype, 2)
    arrays = [q, k, v]
    if mask == "bool":
        m = np.random.default_rng(4).random((4, 6)) > 0.3
        m[:, 0] = True  # no row fully masked
        arrays.append(m)
    elif mask == "float":
        arrays.append(_data((3, 4, 6), dtype, 5))
    ia, ib = _both(arrays)
    kw = dict(scale=scale, is_causal=mask == "causal")
    if mask in ("bool", "float"):
        kw["attn_mask"] = None
        oa = F_TG.scaled_dot_product_attention(*ia[:3], attn_mask=ia[3], scale=scale)
        ob = F_TH.scaled_dot_product_attention(*ib[:3], attn_mask=ib[3], scale=scale)
    else:
        oa = F_TG.scaled_dot_product_attention(*ia, **kw)
        ob = F_TH.scaled_dot_product_attention(*ib, **kw)
    _check_grads((oa, ob), (ia, ib), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind, compiled", [("bool", False), ("float", False), ("key_padding", False), ("bool", True),
                                            ("float", True)])  # (compiled: replayed under fullgraph=True)
def test_attention_of_a_fully_masked_query_is_zero_as_torchs_safe_softmax(dtype, kind, compiled):
    """torch's scaled_dot_product_attention (math and flash kernels: _safe_softmax) gives zeros, and zero gradients,
    for a query whose every key is masked, where a plain softmax gives NaN; MultiheadAttention without weights too."""
    q, k, v = _data((2, 3, 4, 5), dtype, 0), _data((2, 3, 6, 5), dtype, 1), _data((2, 3, 6, 7), dtype, 2)
    m = np.random.default_rng(4).random((4, 6)) > 0.3
    m[1] = False  # query 1 sees no key
    ia, ib = _both([q, k, v])
    if kind == "key_padding":
        x = _data((2, 6, 8), dtype, 6)
        kpm = np.zeros((2, 6), bool)
        kpm[1] = True  # (the second sequence all padding)
        outs = []
        for lib, xs in ((tg, tg.tensor(x, requires_grad=True)), (torch, torch.tensor(x, requires_grad=True))):
            lib.manual_seed(0)
            mha = lib.nn.MultiheadAttention(8, 2, batch_first=True, dtype=lib.float64 if dtype == np.float64 else None)
            run = lambda xs, kpm: mha(xs, xs, xs, key_padding_mask=kpm, need_weights=False)[0]  # noqa: E731
            outs.append((run(xs, lib.tensor(kpm)), xs))
        (oa, xa), (ob, xb) = outs
        _check_grads((oa, ob), ([xa], [xb]), dtype)
        return
    mask = m if kind == "bool" else np.where(m, 0.0, -np.inf).astype(dtype)
    run = F_TG.scaled_dot_product_attention
    if compiled:
        run = tg.compile(run, fullgraph=True)
    oa = run(*ia, tg.tensor(mask))  # (positional: a tensor passed by keyword is not bound by a trace)
    ob = F_TH.scaled_dot_product_attention(*ib, attn_mask=torch.tensor(mask))
    assert not np.isnan(ob.detach().numpy()).any() and not ob.detach().numpy()[:, :, 1].any()
    _check_grads((oa, ob), (ia, ib), dtype)
    if compiled:  # a replay with another mask: a query masked there and not here, and the other way round
        m2 = np.random.default_rng(5).random((4, 6)) > 0.3
        m2[2] = False
        mask2 = m2 if kind == "bool" else np.where(m2, 0.0, -np.inf).astype(dtype)
        oa = run(*[tg.tensor(a) for a in (q, k, v)], tg.tensor(mask2))
        ob = F_TH.scaled_dot_product_attention(*[torch.tensor(a) for a in (q, k, v)], attn_mask=torch.tensor(mask2))
        np.testing.assert_allclose(oa.numpy(), ob.numpy(), **TOL[dtype])


def test_sdpa_errors():
    q = np.zeros((2, 3, 4), np.float32)
    _raises_like(lambda: F_TG.scaled_dot_product_attention(tg.tensor(q), tg.tensor(q), tg.tensor(q),
                                                           attn_mask=tg.tensor(np.ones((3, 3), bool)), is_causal=True),
                 lambda: F_TH.scaled_dot_product_attention(torch.tensor(q), torch.tensor(q), torch.tensor(q),
                                                           attn_mask=torch.tensor(np.ones((3, 3), bool)),
                                                           is_causal=True))


def _mha_twin(*args, dtype=np.float32, **kwargs):
    return _twin("MultiheadAttention", *args, dtype=dtype, **kwargs)


MHA = [dict(), dict(batch_first=True), dict(kdim=3, vdim=5), dict(bias=False), dict(need_weights=False),
       dict(average_attn_weights=False), dict(key_padding_mask=True), dict(attn_mask="bool"),
       dict(attn_mask="float", need_weights=False), dict(attn_mask="causal", is_causal=True, need_weights=False),
       dict(cross=True), dict(key_padding_mask=True, attn_mask="bool", need_weights=False)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(MHA)))
def test_multihead_attention(case, dtype):
    cfg = dict(MHA[case])
    ctor = {k: cfg.pop(k) for k in ("batch_first", "kdim", "vdim", "bias") if k in cfg}
    ours, theirs = _mha_twin(8, 2, dtype=dtype, **ctor)
    L, S, N = 4, 5, 3
    bf = ctor.get("batch_first", False)
    shape = (lambda n, e: (N, n, e)) if bf else (lambda n, e: (n, N, e))
    cross = cfg.pop("cross", False) or "kdim" in ctor
    q = _data(shape(L, 8), dtype, 0)
    k = _data(shape(S, ctor.get("kdim", 8)), dtype, 1)
    v = _data(shape(S, ctor.get("vdim", 8)), dtype, 2)
    kw = {k2: cfg[k2] for k2 in ("need_weights", "average_attn_weights", "is_causal") if k2 in cfg}
    rng = np.random.default_rng(9)
    masks = {}
    if cfg.get("key_padding_mask"):
        m = rng.random((N, S if cross else L)) > 0.7
        m[:, 0] = False
        masks["key_padding_mask"] = m
    am = cfg.get("attn_mask")
    T = S if cross else L
    if am == "bool":
        m = rng.random((L, T)) > 0.6
        m[:, 0] = False
        masks["attn_mask"] = m
    elif am == "float":
        masks["attn_mask"] = _data((L, T), dtype, 6)
    elif am == "causal":
        masks["attn_mask"] = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64).numpy() \
            .astype(dtype)
    arrays = [q, k, v] if cross else [q]
    ia, ib = _both(arrays)
    args_a = ia if cross else ia * 3
    args_b = ib if cross else ib * 3
    ma = {n: tg.tensor(m) for n, m in masks.items()}
    mb = {n: torch.tensor(m) for n, m in masks.items()}
    oa, wa = ours(*args_a, **ma, **kw)
    ob, wb = theirs(*args_b, **mb, **kw)
    assert (wa is None) == (wb is None)
    if wb is not None:
        np.testing.assert_allclose(wa.detach().numpy(), wb.detach().numpy(), **TOL[dtype])
    _check_grads((oa, ob), (ia, ib), dtype)
    for (n, pa), (_, pb) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(pa.grad.numpy(), pb.grad.numpy(), err_msg=n, **TOL[dtype])


@pytest.mark.parametrize("kwargs", [{}, dict(kdim=3, vdim=5), dict(bias=False), dict(batch_first=True)])
def test_multihead_attention_repr_state_dict(kwargs):
    ours, theirs = tg.nn.MultiheadAttention(8, 2, **kwargs), torch.nn.MultiheadAttention(8, 2, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in ours.state_dict().items():
        assert tuple(v.shape) == tuple(theirs.state_dict()[k].shape)
    if "bias" not in kwargs:
        assert not ours.in_proj_bias.detach().numpy().any() and not ours.out_proj.bias.detach().numpy().any()


def test_multihead_attention_errors():
    ours, theirs = tg.nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2)
    x = np.zeros((4, 3, 8), np.float32)
    _raises_like(lambda: ours(tg.tensor(x), tg.tensor(x), tg.tensor(x), attn_mask=tg.tensor(np.zeros((3, 3), bool))),
                 lambda: theirs(torch.tensor(x), torch.tensor(x), torch.tensor(x),
                                attn_mask=torch.tensor(np.zeros((3, 3), bool))))
    _raises_like(lambda: ours(tg.tensor(x), tg.tensor(x), tg.tensor(x), is_causal=True),
                 lambda: theirs(torch.tensor(x), torch.tensor(x), torch.tensor(x), is_causal=True))
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        tg.nn.MultiheadAttention(8, 3)


def test_generate_square_subsequent_mask():
    a = tg.nn.Transformer.generate_square_subsequent_mask(5).numpy()
    b = torch.nn.Transformer.generate_square_subsequent_mask(5).numpy()
    np.testing.assert_array_equal(a, b)
    assert a.dtype == b.dtype


# -- transformer layers ------------------------------------------------------------------------------------------

LAYERS = [dict(), dict(norm_first=True), dict(activation="gelu", batch_first=True), dict(bias=False)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(LAYERS)))
@pytest.mark.parametrize("masked", [False, True])
def test_transformer_encoder(case, dtype, masked):
    kw = dict(LAYERS[case], dim_feedforward=16, dropout=0.0)
    torch.manual_seed(0)
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, **kw), 2,
                                         norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
    ours = tg.nn.TransformerEncoder(tg.nn.TransformerEncoderLayer(8, 2, **kw), 2, norm=tg.nn.LayerNorm(8),
                                    enable_nested_tensor=False)
    if dtype == np.float64:
        theirs, ours = theirs.double(), ours.double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = _data((3, 5, 8), dtype)
    ia, ib = _both([x])
    if masked:
        mask = torch.nn.Transformer.generate_square_subsequent_mask(5 if kw.get("batch_first") else 3).numpy()
        kpm = np.zeros((5 if not kw.get("batch_first") else 3, 3 if not kw.get("batch_first") else 5), bool)
        kpm[0, -1] = True
        oa = ours(ia[0], mask=tg.tensor(mask.astype(dtype)), src_key_padding_mask=tg.tensor(kpm))
        ob = theirs(ib[0], mask=torch.tensor(mask.astype(dtype)), src_key_padding_mask=torch.tensor(kpm))
    else:
        oa, ob = ours(ia[0]), theirs(ib[0])
    _check_grads((oa, ob), (ia, ib), dtype)
    for (n, pa), (_, pb) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(pa.grad.numpy(), pb.grad.numpy(), err_msg=n, **TOL[dtype])


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_full(norm_first):
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
              norm_first=norm_first)
    theirs, ours = torch.nn.Transformer(**kw), tg.nn.Transformer(**kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    src, tgt = _data((4, 2, 8), np.float32, 0), _data((3, 2, 8), np.float32, 1)
    ia, ib = _both([src, tgt])
    m = torch.nn.Transformer.generate_square_subsequent_mask(3).numpy()
    oa = ours(*ia, tgt_mask=tg.tensor(m))
    ob = theirs(*ib, tgt_mask=torch.tensor(m))
    _check_grads((oa, ob), (ia, ib), np.float32)


# -- nn.utils.rnn ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequence_conversions_and_unpacking(enforce_sorted):
    """PackedSequence's methods (to, double, long, cpu, ...: data converted, the index tensors moved, self when
    nothing changes), unpack_sequence and unpad_sequence (which transposes a time-major batch in place), as torch's."""
    results = []
    for lib in (torch, tg):
        from_lib = importlib.import_module(lib.__name__ + ".nn.utils.rnn")
        seqs = [lib.tensor(_data((n, 2), np.float32, n)) for n in ((3, 2, 1) if enforce_sorted else (2, 3, 1))]
        p = from_lib.pack_sequence(seqs, enforce_sorted=enforce_sorted)
        converted = [p.to(lib.float64), p.double(), p.long(), p.int(), p.byte(), p.half().float()]
        row = [[(c.data.dtype, c.data.tolist(), c.batch_sizes.tolist(), c.sorted_indices is p.sorted_indices,
                 None if c.unsorted_indices is None else c.unsorted_indices.tolist()) for c in converted]]
        row.append([p.to(lib.float32) is p, p.cpu() is p, p.to("cpu") is p, p.float() is p, p.is_cuda,
                    p.is_pinned()])
        row.append([u.tolist() for u in from_lib.unpack_sequence(p)])
        padded = from_lib.pad_sequence(seqs)
        row.append([u.tolist() for u in from_lib.unpad_sequence(padded, lib.tensor([len(s) for s in seqs]))])
        row.append(tuple(padded.shape))  # (transposed in place)
        bf = from_lib.pad_sequence(seqs, batch_first=True)
        row.append([u.tolist() for u in from_lib.unpad_sequence(bf, lib.tensor([len(s) for s in seqs]), True)])
        results.append(row)
    assert str(results[1]) == str(results[0])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence(batch_first, padding_side):
    arrays = [_data((n, 3), np.float32, n) for n in (4, 1, 3)]
    ia, ib = _both(arrays)
    oa = tg.nn.utils.rnn.pad_sequence(ia, batch_first=batch_first, padding_value=-2.0, padding_side=padding_side)
    ob = torch.nn.utils.rnn.pad_sequence(ib, batch_first=batch_first, padding_value=-2.0, padding_side=padding_side)
    _check_grads((oa, ob), (ia, ib), np.float32)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_and_pad_packed(batch_first, enforce_sorted):
    lengths = [5, 3, 2] if enforce_sorted else [3, 5, 2]
    x = _data((3, 5, 2) if batch_first else (5, 3, 2), np.float32)
    ia, ib = _both([x])
    pa = tg.nn.utils.rnn.pack_padded_sequence(ia[0], lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    pb = torch.nn.utils.rnn.pack_padded_sequence(ib[0], lengths, batch_first=batch_first,
                                                 enforce_sorted=enforce_sorted)
    np.testing.assert_array_equal(pa.data.detach().numpy(), pb.data.detach().numpy())
    np.testing.assert_array_equal(pa.batch_sizes.numpy(), pb.batch_sizes.numpy())
    for a, b in ((pa.sorted_indices, pb.sorted_indices), (pa.unsorted_indices, pb.unsorted_indices)):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    (oa, la), (ob, lb) = (tg.nn.utils.rnn.pad_packed_sequence(pa, batch_first=batch_first, padding_value=9.0),
                          torch.nn.utils.rnn.pad_packed_sequence(pb, batch_first=batch_first, padding_value=9.0))
    np.testing.assert_array_equal(la.numpy(), lb.numpy())
    _check_grads((oa, ob), (ia, ib), np.float32)


def test_pack_errors():
    x = np.zeros((5, 3, 2), np.float32)
    _raises_like(lambda: tg.nn.utils.rnn.pack_padded_sequence(tg.tensor(x), [2, 3, 1]),
                 lambda: torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), [2, 3, 1]))


# -- PackedSequence input and LSTM proj_size -------------------------------------------------------------------
PACKED = [("LSTM", {}), ("LSTM", dict(num_layers=2, bidirectional=True)), ("LSTM", dict(proj_size=3)),
          ("LSTM", dict(proj_size=2, bidirectional=True, num_layers=2, bias=False)), ("GRU", {}),
          ("GRU", dict(num_layers=2, bidirectional=True)), ("RNN", dict(batch_first=True)),
          ("RNN", dict(nonlinearity="relu", bidirectional=True))]


def _packed_run(lib, mod, name, x, lengths, h, c, batch_first, enforce_sorted):
    """Packs x, runs mod on it and returns (PackedSequence output, h_n, c_n or None) with x, h, c as leaves."""
    xs, hs = lib.tensor(x, requires_grad=True), None if h is None else lib.tensor(h, requires_grad=True)
    cs = None if c is None else lib.tensor(c, requires_grad=True)
    packed = lib.nn.utils.rnn.pack_padded_sequence(xs, lengths, batch_first=batch_first,
                                                   enforce_sorted=enforce_sorted)
    state = None if hs is None else (hs, cs) if name == "LSTM" else hs
    out, st = mod(packed, state)
    h_n, c_n = st if name == "LSTM" else (st, None)
    return (xs, hs, cs), out, h_n, c_n


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kwargs", PACKED)
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
def test_packed_sequence_input(name, kwargs, dtype, enforce_sorted, with_state):
    """A PackedSequence in gives torch's PackedSequence out (data, batch_sizes, indices) and the final states
    of each sequence at its own length, in the caller's order; gradients of everything match."""
    ours, theirs = _twin(name, 4, 5, dtype=dtype, **kwargs)
    lengths = [6, 4, 4, 1] if enforce_sorted else [4, 6, 1, 4]
    batch_first = kwargs.get("batch_first", False)
    x = _data((4, 6, 4) if batch_first else (6, 4, 4), dtype)
    L = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h = _data((L, 4, kwargs.get("proj_size") or 5), dtype, 1) if with_state else None
    c = _data((L, 4, 5), dtype, 2) if with_state and name == "LSTM" else None
    runs = [_packed_run(lib, mod, name, x, lengths, h, c, batch_first, enforce_sorted)
            for lib, mod in ((tg, ours), (torch, theirs))]
    (ins_a, out_a, h_a, c_a), (ins_b, out_b, h_b, c_b) = runs
    assert type(out_a).__name__ == "PackedSequence" and isinstance(out_a, tg.nn.utils.rnn.PackedSequence)
    np.testing.assert_array_equal(out_a.batch_sizes.numpy(), out_b.batch_sizes.numpy())
    for a, b in ((out_a.sorted_indices, out_b.sorted_indices), (out_a.unsorted_indices, out_b.unsorted_indices)):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    rng, loss_a, loss_b = np.random.default_rng(3), 0, 0
    for a, b in ((out_a.data, out_b.data), (h_a, h_b), (c_a, c_b)):
        if b is None:
            continue
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL[dtype])
        proj = rng.standard_normal(tuple(b.shape)).astype(dtype)
        loss_a, loss_b = loss_a + (a * tg.tensor(proj)).sum(), loss_b + (b * torch.tensor(proj)).sum()
    loss_a.backward()
    loss_b.backward()
    for a, b in zip(ins_a, ins_b):
        if b is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL[dtype])
    pa, pb = dict(ours.named_parameters()), dict(theirs.named_parameters())
    for k in pb:
        np.testing.assert_allclose(pa[k].grad.numpy(), pb[k].grad.numpy(), err_msg=k, **TOL[dtype])
    # and padded back: the padded output agrees too
    pad_a, len_a = tg.nn.utils.rnn.pad_packed_sequence(out_a, batch_first=batch_first)
    pad_b, len_b = torch.nn.utils.rnn.pad_packed_sequence(out_b, batch_first=batch_first)
    np.testing.assert_array_equal(len_a.numpy(), len_b.numpy())
    np.testing.assert_allclose(pad_a.detach().numpy(), pad_b.detach().numpy(), **TOL[dtype])


def test_pack_sequence_into_lstm():
    """pack_sequence of unequal sequences (not sorted) through an LSTM, as a user writes it."""
    ours, theirs = _twin("LSTM", 3, 4, num_layers=2)
    arrays = [_data((n, 3), np.float32, n) for n in (2, 5, 3)]
    out_a, (h_a, c_a) = ours(tg.nn.utils.rnn.pack_sequence([tg.tensor(a) for a in arrays], enforce_sorted=False))
    out_b, (h_b, c_b) = theirs(torch.nn.utils.rnn.pack_sequence([torch.tensor(a) for a in arrays],
                                                                enforce_sorted=False))
    for a, b in ((out_a.data, out_b.data), (h_a, h_b), (c_a, c_b)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL[np.float32])


@pytest.mark.parametrize("case", range(6))
def test_packed_errors_match_torch(case):
    x = np.zeros((5, 3, 4), np.float32)
    cases = [
        ("GRU", lambda m, T, P: m(P(T(x), [5, 3, 2]), T(np.zeros((2, 3, 6), np.float32)))),
        ("GRU", lambda m, T, P: m(P(T(x), [5, 3, 2]), T(np.zeros((1, 3, 5), np.float32)))),
        ("RNN", lambda m, T, P: m(P(T(x), [5, 3, 2]), T(np.zeros((1, 2, 6), np.float32)))),
        ("RNN", lambda m, T, P: m(P(T(x.astype(np.float64)), [5, 3, 2]))),
        ("RNN", lambda m, T, P: m(P(T(np.zeros((5, 3, 4, 1), np.float32)), [5, 3, 2]))),
        ("GRU", lambda m, T, P: m(P(T(np.zeros((5, 3, 5), np.float32)), [5, 3, 2]))),
    ]
    name, call = cases[case]
    _raises_like(lambda: call(getattr(tg.nn, name)(4, 6), tg.tensor, tg.nn.utils.rnn.pack_padded_sequence),
                 lambda: call(getattr(torch.nn, name)(4, 6), torch.tensor, torch.nn.utils.rnn.pack_padded_sequence))


@pytest.mark.parametrize("proj_size,h_shape,c_shape,what", [
    (0, (1, 2, 6), (1, 3, 6), "hidden[0] size (1, 3, 6), got [1, 2, 6]"),
    (0, (1, 3, 6), (2, 3, 6), "hidden[1] size (1, 3, 6), got [2, 3, 6]"),
    (2, (1, 3, 6), (1, 3, 6), "hidden[0] size (1, 3, 2), got [1, 3, 6]"),
    (2, (1, 3, 2), (1, 3, 2), "hidden[1] size (1, 3, 6), got [1, 3, 2]")])
def test_packed_lstm_state_shape_errors(proj_size, h_shape, c_shape, what):
    """torch's packed LSTM path checks no state shape (it fails in its kernel, or crashes the interpreter);
    tapegrad raises the message of torch's unpacked path, whose words the test takes from torch."""
    packed = tg.nn.utils.rnn.pack_padded_sequence(tg.zeros(5, 3, 4), [5, 3, 2], enforce_sorted=False)
    hx = (tg.zeros(*h_shape), tg.zeros(*c_shape))
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.LSTM(4, 6, proj_size=proj_size)(torch.zeros(5, 3, 4), (torch.zeros(*h_shape), torch.zeros(*c_shape)))
    assert str(theirs.value) == "Expected " + what
    with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
        tg.nn.LSTM(4, 6, proj_size=proj_size)(packed, hx)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", [dict(proj_size=3), dict(proj_size=2, num_layers=2, bidirectional=True),
                                    dict(proj_size=3, batch_first=True, bias=False)])
@pytest.mark.parametrize("with_state", [True, False])
def test_lstm_proj_size(kwargs, dtype, with_state):
    ours, theirs = _twin("LSTM", 4, 6, dtype=dtype, **kwargs)
    T, B = 5, 3
    x = _data((B, T, 4) if kwargs.get("batch_first") else (T, B, 4), dtype)
    L = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h = _data((L, B, kwargs["proj_size"]), dtype, 1) if with_state else None
    _compare(ours, theirs, [x, h, _data((L, B, 6), dtype, 2) if with_state else None], dtype)


def test_lstm_proj_size_unbatched_repr_state_dict():
    ours, theirs = tg.nn.LSTM(3, 5, proj_size=2, num_layers=2), torch.nn.LSTM(3, 5, proj_size=2, num_layers=2)
    assert repr(ours) == repr(theirs)
    sa, sb = ours.state_dict(), theirs.state_dict()
    assert list(sa) == list(sb) and "weight_hr_l1" in sa
    assert all(tuple(sa[k].shape) == tuple(sb[k].shape) for k in sb)
    assert np.all(np.abs(sa["weight_hr_l0"].numpy()) <= 1 / np.sqrt(5))
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in sa.items()})  # tapegrad's into torch
    x = _data((4, 3), np.float32)
    _compare(ours, theirs, [x, _data((2, 2), np.float32, 1), _data((2, 5), np.float32, 2)], np.float32)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_compile_replays_fused_cells(name):
    """tapegrad.compile(fullgraph=True) replays the fused cell rows: new inputs give eager's values and grads."""
    mod = getattr(tg.nn, name)(3, 4, num_layers=2)

    def loss(x, h):
        out, state = mod(x, (h, h) if name == "LSTM" else h)
        return (out * out).sum()

    compiled = tg.compile(loss, fullgraph=True)
    for seed in range(3):
        x, h = _data((5, 2, 3), np.float32, seed), _data((2, 2, 4), np.float32, seed + 10)
        results = []
        for f in (loss, compiled):
            xs, hs = tg.tensor(x, requires_grad=True), tg.tensor(h, requires_grad=True)
            mod.zero_grad()
            value = f(xs, hs)
            value.backward()
            results.append([value.detach().numpy(), xs.grad.numpy(), hs.grad.numpy()]
                           + [p.grad.numpy().copy() for p in mod.parameters()])
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_compile_with_packed_input(name):
    """Packing gathers the padded rows by index tensors made from the lengths, whose values are guards, so
    tapegrad.compile replays such a function (fullgraph=True) while the lengths stay, with eager's values and
    gradients; the unpacked LSTM with proj_size replays too."""
    mod = getattr(tg.nn, name)(3, 4, bidirectional=True, **(dict(proj_size=2) if name == "LSTM" else {}))

    def packed_loss(x):
        packed = tg.nn.utils.rnn.pack_padded_sequence(x, [4, 2, 1], enforce_sorted=False)
        out, state = mod(packed)
        h = state[0] if name == "LSTM" else state
        return (out.data * out.data).sum() + (h * h).sum()

    def padded_loss(x):
        h = x[:2, :, :2] if name == "LSTM" else tg.cat([x[:2, :, :2]] * 2, -1)  # (states from the argument)
        out, state = mod(x, (h, tg.cat([h, h], -1)) if name == "LSTM" else h)
        return (out * out).sum()

    for loss, compiled in ((packed_loss, tg.compile(packed_loss, fullgraph=True)),
                           (padded_loss, tg.compile(padded_loss, fullgraph=True))):
        for seed in range(3):
            x = _data((4, 3, 3), np.float32, seed)
            results = []
            for f in (loss, compiled):
                xs = tg.tensor(x, requires_grad=True)
                mod.zero_grad()
                value = f(xs)
                value.backward()
                results.append([value.detach().numpy(), xs.grad.numpy()]
                               + [p.grad.numpy().copy() for p in mod.parameters()])
            for a, b in zip(*results):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        assert compiled.traces == 1  # (the same lengths each call: one trace)


@pytest.mark.parametrize("kwargs", [dict(norm_first=True, batch_first=True), dict(), dict(batch_first=True),
                                    dict(batch_first=True, activation="gelu"), dict(batch_first=True, bias=False),
                                    dict(batch_first=True, activation="tanh")])
def test_transformer_encoder_warns_as_torch_when_its_layer_has_no_nested_tensor_path(kwargs):
    results = []
    for lib in (torch, tg):
        kw = dict(kwargs)
        if kw.get("activation") == "tanh":
            kw["activation"] = lib.tanh
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, **kw)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            enc = lib.nn.TransformerEncoder(layer, 2)
        results.append(([str(w.message) for w in caught], enc.use_nested_tensor, layer.activation_relu_or_gelu))
    assert results[1] == results[0]


LSTM_BACKWARDS = {  # (outputs of one call) -> what is backpropagated, in order; torch's error where it raises
    "out_then_c": lambda out, h, c: [out.sum(), c.sum()],
    "c_then_out": lambda out, h, c: [c.sum(), out.sum()],
    "out_then_h": lambda out, h, c: [out.sum(), h.sum()],
    "c_only": lambda out, h, c: [c.sum()],
    "out_and_c": lambda out, h, c: [out.sum() + c.sum()],
}


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("name", sorted(LSTM_BACKWARDS))
def test_lstm_output_and_last_cell_state_are_one_node_as_torchs(name, layers):
    """An LSTM layer's output and last cell state are one node in torch (MkldnnRnnLayerBackward0): a backward
    through either frees it, and a later backward through the other raises; the gradients otherwise match."""
    results = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(4, 5, layers)
        x = lib.tensor(np.random.default_rng(1).standard_normal((3, 2, 4)))
        lstm.double()
        out, (h, c) = lstm(x)
        got = []
        for loss in LSTM_BACKWARDS[name](out, h, c):
            try:
                loss.backward()
                got.append(lstm.weight_hh_l0.grad.numpy().copy())
            except RuntimeError as e:
                got.append(str(e))
        results.append(got)
    assert len(results[0]) == len(results[1])
    for want, have in zip(*results):
        if isinstance(want, str):
            assert have == want
        else:
            np.testing.assert_allclose(have, want, rtol=1e-10, atol=1e-12)


def test_a_kept_hidden_state_does_not_keep_the_layers_saved_arrays():
    """A language model keeps (h, c) from step to step: the backward that freed the output's row frees what both
    rows' rules read, though c's row lives on with c (9 MB a step of benchmarks.layers' T2 stayed until a sweep)."""
    import weakref
    lstm = tg.nn.LSTM(8, 8, 2)
    x = tg.randn(5, 3, 8)
    out, (h, c) = lstm(x)
    tape = c._tape
    contexts = [tape.aux[r].seq_ctx for r in tape.row_args(c._slot)]  # (c: the stack of each layer's c_T row)
    assert len(contexts) == 2 and all(tape.shared.get(r) is ctx for r, ctx in zip(tape.row_args(c._slot), contexts))
    saved = [weakref.ref(ctx.acts) for ctx in contexts]
    assert all(r() is not None for r in saved)
    out.sum().backward()
    assert c._slot is not None and all(r() is None for r in saved)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_an_unrolled_lstm_cell_backward_by_the_replays_rule_gives_the_array_rules_bits_and_torchs(dtype, batch,
                                                                                                  monkeypatch):
    """The replay runs an LSTM cell's two rows itself (runtime._lstm_cell_rule), or returns to Python for the array
    rule where a row's iattr names no saved arrays (zeroed here): the same bits, and torch's gradients, through 12
    steps, with c's gradient taken too."""
    from tapegrad import registry
    codes = [registry.BY_NAME[name].code for name in ("lstm_cell_c", "lstm_cell_h")]
    python_rows = []
    for name in ("lstm_cell_c", "lstm_cell_h"):
        def counted(*args, rule=registry.BY_NAME[name].array_vjp):
            python_rows.append(1)
            return rule(*args)
        monkeypatch.setattr(registry.BY_NAME[name], "array_vjp", counted)
    rng = np.random.default_rng(8)
    xs = rng.standard_normal((12,) + batch + (3,)).astype(dtype)
    state = [rng.standard_normal(batch + (5,)).astype(dtype) for _ in range(2)]
    weights = None
    results = []
    for lib, by_python in ((torch, False), (tg, False), (tg, True)):
        lib.manual_seed(0)
        cell = lib.nn.LSTMCell(3, 5).to(lib.float64 if dtype == np.float64 else lib.float32)
        if weights is None:
            weights = {k: v.detach().numpy().copy() for k, v in cell.state_dict().items()}
        cell.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
        x = lib.tensor(xs, requires_grad=True)
        h, c = (lib.tensor(s, requires_grad=True) for s in state)
        h0, c0 = h, c
        total = 0
        for t in range(12):
            h, c = cell(x[t], (h, c))
            total = total + (h * h).sum() + 0.5 * c.sum()
        if lib is tg:
            tape = total._tape
            first = tape.slot(x)  # (x's leaf row comes before every row of this graph)
            rows = first + np.flatnonzero(np.isin(tape.op[first:tape.n], codes))
            assert rows.size == 24 and (tape.iattr[rows] != 0).all()
            if by_python:
                tape.iattr[rows] = 0
        python_rows.clear()
        total.backward()
        assert len(python_rows) == (24 if by_python else 0)
        results.append([a.grad.numpy() for a in (x, h0, c0)] + [p.grad.numpy() for p in cell.parameters()])
    for a, b in zip(results[1], results[2]):
        np.testing.assert_array_equal(a, b)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for a, b in zip(results[1], results[0]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_mismatched_mask_types_warn_as_torch():
    """A bool padding mask beside a float attention mask (the translation tutorial's decoder masks): torch's
    deprecation warning from the layer that first sees both, the same values."""
    def program(L):
        out = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            L.manual_seed(0)
            x, pad = L.randn(3, 2, 8), L.tensor([[False, False, True]] * 2)
            mha = L.nn.MultiheadAttention(8, 2)
            out.append(mha(x, x, x, attn_mask=L.zeros(3, 3), key_padding_mask=pad)[0].detach().numpy())
            enc = L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2,
                                          enable_nested_tensor=False)
            out.append(enc(x, mask=L.zeros(3, 3), src_key_padding_mask=pad).detach().numpy())
            layer = L.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
            out.append(layer(x, src_mask=L.zeros(3, 3, dtype=L.bool), src_key_padding_mask=L.zeros(2, 3))
                       .detach().numpy())
            dec = L.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
            out.append(dec(x, x, tgt_mask=L.zeros(3, 3), tgt_key_padding_mask=pad).detach().numpy())
        return out, [str(w.message) for w in caught]
    (ours, ours_warned), (theirs, their_warned) = program(tg), program(torch)
    assert ours_warned == their_warned and len(their_warned) == 4
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


PADDINGS = {  # batch of 3, sequence of 4: True is padding
    "right": [[False, False, True, True], [False, False, False, False], [False, True, True, True]],
    "all_padded_row": [[False, False, False, True], [True, True, True, True], [False, False, True, True]],
    "not_left_aligned": [[True, False, False, True], [False, False, False, False], [False, True, False, True]],
}


@pytest.mark.parametrize("mask_check", [True, False])
@pytest.mark.parametrize("padding", sorted(PADDINGS))
@pytest.mark.parametrize("setting", ["eval_no_grad", "eval_grad", "train_no_grad", "fastpath_off", "float_mask"])
def test_transformer_encoder_inference_fast_path_values(setting, padding, mask_check):
    """torch's TransformerEncoder in eval mode without grad runs its layers on a nested tensor of each sequence's
    unpadded positions (the count the mask keeps, wherever they are when mask_check is off) and returns zeros at
    the padded positions, before its final norm; elsewhere it computes every position. Same values as torch's."""
    outs, warned = [], []
    kpm = np.array(PADDINGS[padding])
    for lib in (torch, tg):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)
        norm = lib.nn.LayerNorm(8)
        with lib.no_grad():
            norm.bias.fill_(0.25)  # (the padded positions' output is the norm's bias)
        enc = lib.nn.TransformerEncoder(layer, 2, norm=norm, mask_check=mask_check)
        enc.train(setting == "train_no_grad")
        x = lib.tensor(_data((3, 4, 8), np.float32))
        mask = lib.tensor(kpm)
        if setting == "float_mask":
            mask = lib.zeros(3, 4).masked_fill(mask, float("-inf"))
        lib.backends.mha.set_fastpath_enabled(setting != "fastpath_off")
        try:
            with warnings.catch_warnings(record=True) as caught, lib.set_grad_enabled(setting == "eval_grad"):
                warnings.simplefilter("always")
                out = enc(x, src_key_padding_mask=mask)
        finally:
            lib.backends.mha.set_fastpath_enabled(True)
        outs.append(out.detach().numpy())
        warned.append(any("nested tensors is in prototype" in str(w.message) for w in caught))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)
    assert np.array_equal(np.isnan(outs[1]), np.isnan(outs[0]))
    if warned[0]:  # (torch warns once a process: tapegrad's once too, so only where torch's is the first)
        assert warned[1] or tg.nn.modules.transformer._nested_warned


def test_lstm_given_one_tensor_as_hx_fails_as_torchs():
    """nn.LSTM indexes hx (hx[0], hx[1]) as torch's does: a lone tensor in place of (h0, c0) gives torch's IndexError
    (one layer) or its rank error (two)."""
    seen = []
    for L in (tg, torch):
        m = L.nn.LSTM(3, 4, batch_first=True)
        row = []
        for hx in (L.zeros(1, 2, 4), L.zeros(2, 2, 4)):
            try:
                m(L.zeros(2, 5, 3), hx)
            except (IndexError, RuntimeError) as e:
                row.append((type(e).__name__, str(e)))
        seen.append(row)
    assert seen[0] == seen[1] and len(seen[0]) == 2


@pytest.mark.parametrize("bias_kv,zero_attn", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_bias_kv_and_zero_attn_as_torch(bias_kv, zero_attn, need_weights, batch_first):
    """add_bias_kv (a learned key and value appended, xavier_normal_ init, state_dict keys bias_k/bias_v) and
    add_zero_attn (a zero key and value per head), with both masks: values, weights and gradients as torch's."""
    results = []
    for L in (torch, tg):
        L.manual_seed(1)
        m = L.nn.MultiheadAttention(8, 2, add_bias_kv=bias_kv, add_zero_attn=zero_attn, batch_first=batch_first).double()
        rng = np.random.default_rng(2)
        q = L.tensor(rng.standard_normal((3, 4, 8)), requires_grad=True)
        k = L.tensor(rng.standard_normal((5, 4, 8) if not batch_first else (3, 5, 8)))
        n, s = (4, 5) if not batch_first else (3, 5)
        kpm = L.zeros(n, s, dtype=L.bool)
        kpm[0, -1] = True
        am = L.zeros(q.shape[0] if not batch_first else q.shape[1], s, dtype=L.float64)
        am[1, 0] = float("-inf")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (mismatched mask types: torch's deprecation warning)
            o, w = m(q, k, k, key_padding_mask=kpm, attn_mask=am, need_weights=need_weights)
        (o.sum() + (w.sum() if w is not None else 0)).backward()
        grads = [q.grad] + [p.grad for p in m.parameters()]
        results.append(([t.detach().numpy() for t in (o,) + ((w,) if w is not None else ()) + tuple(grads)],
                        list(m.state_dict())))
    (want, want_keys), (got, got_keys) = results
    assert got_keys == want_keys
    for g, t in zip(got, want):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-12)


def test_multi_head_attention_forward_functional_as_torch():
    """F.multi_head_attention_forward on a module's weights (packed and separate projections)."""
    results = []
    for L in (torch, tg):
        L.manual_seed(0)
        m = L.nn.MultiheadAttention(8, 2, add_bias_kv=True).double()
        rng = np.random.default_rng(3)
        q = L.tensor(rng.standard_normal((3, 4, 8)), requires_grad=True)
        k = L.tensor(rng.standard_normal((5, 4, 8)))
        o, w = L.nn.functional.multi_head_attention_forward(q, k, k, 8, 2, m.in_proj_weight, m.in_proj_bias, m.bias_k,
                                                            m.bias_v, True, 0.0, m.out_proj.weight, m.out_proj.bias,
                                                            training=False)
        (o.sum() + w.sum()).backward()
        m2 = L.nn.MultiheadAttention(8, 2, kdim=6, vdim=5).double()
        kk, vv = L.tensor(rng.standard_normal((5, 4, 6))), L.tensor(rng.standard_normal((5, 4, 5)))
        o2, w2 = L.nn.functional.multi_head_attention_forward(
            q, kk, vv, 8, 2, None, m2.in_proj_bias, None, None, False, 0.0, m2.out_proj.weight, m2.out_proj.bias,
            use_separate_proj_weight=True, q_proj_weight=m2.q_proj_weight, k_proj_weight=m2.k_proj_weight,
            v_proj_weight=m2.v_proj_weight, need_weights=False)
        assert w2 is None
        results.append([t.detach().numpy() for t in (o, w, q.grad, m.in_proj_weight.grad, m.bias_k.grad, o2)])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
