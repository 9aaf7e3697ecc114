"""F.embedding_bag / nn.EmbeddingBag with sparse=True against torch 2.13: the weight's gradient is torch's
_embedding_bag_sparse_backward result, a sparse COO tensor (indices the bags' entries in input order, padding_idx's
left out; values their bags' rows of the output gradient, times the mean's 1 / count or the per-sample weight),
accumulated as torch's AccumulateGrad does and taken by SGD, SparseAdam and Adagrad."""
import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = (torch, tg)
DTYPES = {"float32": (torch.float32, tg.float32, 1e-6), "float64": (torch.float64, tg.float64, 1e-13)}


def _np(t):
    return t.detach().numpy()


def _same_sparse(a, b, tol):
    """Two sparse COO tensors agree: layout, size, nnz, coalesced flag, dtype, indices in order, values, and
    coalesced."""
    assert a.is_sparse and b.is_sparse and b.layout is tg.sparse_coo
    assert tuple(a.shape) == tuple(b.shape) and a._nnz() == b._nnz() and a.is_coalesced() == b.is_coalesced()
    assert a.sparse_dim() == b.sparse_dim() and a.dense_dim() == b.dense_dim()
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    np.testing.assert_array_equal(_np(a._indices()), _np(b._indices()))
    np.testing.assert_allclose(_np(a._values()), _np(b._values()), rtol=tol, atol=tol)
    ca, cb = a.coalesce(), b.coalesce()
    np.testing.assert_array_equal(_np(ca.indices()), _np(cb.indices()))
    np.testing.assert_allclose(_np(ca.values()), _np(cb.values()), rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(a.to_dense()), _np(b.to_dense()), rtol=tol, atol=tol)


W0 = np.random.default_rng(0).standard_normal((7, 3))
CASES = [  # (input, offsets, keyword arguments; "psw": per_sample_weights)
    ([3, 1, 3, 5, 0], [0, 2, 2], {"mode": "sum"}),                             # repeated index, an empty bag
    ([3, 1, 3, 5, 0], [0, 2, 2], {"mode": "mean"}),
    ([3, 1, 3, 5, 0, 1, 2], [0, 3], {"mode": "mean"}),                          # 1/3 and 1/4 in the dtype
    ([3, 1, 3, 5, 0], [0, 2, 2], {"mode": "mean", "padding_idx": 3}),          # padding leaves the mean's count
    ([3, 3, 1, 5, 0], [0, 2, 3], {"mode": "mean", "padding_idx": 3}),          # a bag of padding only
    ([3, 1, 3, 5, 0], [0, 2, 2], {"mode": "sum", "padding_idx": -2}),          # negative padding_idx (row 5)
    ([3, 1, 3, 5, 0], [0, 2, 2, 5], {"mode": "mean", "include_last_offset": True, "padding_idx": 1}),
    ([3, 1, 3, 5, 0], [0, 2, 5], {"mode": "sum", "include_last_offset": True,
                                  "psw": [0.5, -1.0, 2.0, 3.0, 0.25]}),
    ([[3, 1], [3, 5]], None, {"mode": "mean"}),                                # 2-D input
    ([[3, 1, 6], [3, 5, 6]], None, {"mode": "sum", "psw": [[1.0, 2, 3], [4, 5, 6]], "padding_idx": 6}),
    ([3], [0], {"mode": "mean"}),                                              # nnz 1: coalesced
    ([3, 3], [0, 1], {"mode": "sum", "padding_idx": 3}),                       # all padded: nnz 0
    ([], [0, 0], {"mode": "mean"}),                                            # no entries: nnz 0
]


def _bag(lib, dtype, indices, offsets, kwargs, w0=W0):
    kwargs = dict(kwargs)
    psw = kwargs.pop("psw", None)
    w = lib.tensor(w0, dtype=dtype, requires_grad=True)
    psw = None if psw is None else lib.tensor(psw, dtype=dtype, requires_grad=True)
    out = lib.nn.functional.embedding_bag(lib.tensor(indices, dtype=lib.int64), w,
                                          None if offsets is None else lib.tensor(offsets), sparse=True,
                                          per_sample_weights=psw, **kwargs)
    c = lib.tensor(np.linspace(-2, 3, out.numel()).reshape(tuple(out.shape)), dtype=dtype)
    return w, psw, out, c


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("indices,offsets,kwargs", CASES, ids=lambda v: str(v))
def test_gradient_is_torchs_sparse_tensor(dtype, indices, offsets, kwargs):
    got = []
    for lib, dt in zip(LIBS, DTYPES[dtype][:2]):
        w, psw, out, c = _bag(lib, dt, indices, offsets, kwargs)
        (out * c).sum().backward()
        assert type(out.grad_fn).__name__ == "EmbeddingBagBackward0"
        got.append((out, w.grad, psw))
    tol = DTYPES[dtype][2]
    np.testing.assert_allclose(_np(got[1][0]), _np(got[0][0]), rtol=tol, atol=tol)
    _same_sparse(got[0][1], got[1][1], tol)
    if got[0][2] is not None:  # the per-sample weights' gradient stays dense
        assert not got[1][2].grad.is_sparse
        np.testing.assert_allclose(_np(got[1][2].grad), _np(got[0][2].grad), rtol=tol, atol=tol)


def test_module_repr_and_gradient():
    got = []
    for lib in LIBS:
        m = lib.nn.EmbeddingBag(5, 2, mode="sum", sparse=True, padding_idx=1)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.arange(10.0).reshape(5, 2), dtype=lib.float32))
        (m(lib.tensor([[0, 1], [4, 0]])) * 2).sum().backward()
        got.append((repr(m), repr(m.weight.grad), repr(m.weight.grad.coalesce())))
    assert got[0] == got[1]


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_two_backwards_accumulate_as_torch(dtype):
    """sparse into sparse: torch's add merges the two entry lists in place (its order), still uncoalesced."""
    grads = []
    for lib, dt in zip(LIBS, DTYPES[dtype][:2]):
        w, _, out, c = _bag(lib, dt, [3, 3, 0, 6, 1, 3], [0, 2, 4], {"mode": "mean"})
        (out * c).sum().backward()
        first = w.grad
        out2 = lib.nn.functional.embedding_bag(lib.tensor([3, 1, 5]), w, lib.tensor([0, 1]), mode="sum",
                                               sparse=True)
        out2.sum().backward()
        assert w.grad is first
        grads.append(w.grad)
    _same_sparse(*grads, DTYPES[dtype][2])


@pytest.mark.parametrize("order", ["dense_then_sparse", "one_backward", "with_embedding", "autograd_grad"])
def test_with_other_uses_as_torch(order):
    out = []
    for lib in LIBS:
        w, _, bag, c = _bag(lib, lib.float64, [[0, 2], [2, 5]], None, {"mode": "mean"})
        F = lib.nn.functional
        if order == "dense_then_sparse":
            (w * w).sum().backward()
            (bag * c).sum().backward()
        elif order == "one_backward":
            ((bag * c).sum() + (w * w).sum()).backward()
        elif order == "with_embedding":  # two sparse gradients in one backward: summed sparse
            ((bag * c).sum() + 3 * (F.embedding(lib.tensor([4, 0]), w, sparse=True) * 2).sum()).backward()
        else:
            w.grad, = lib.autograd.grad((bag * c).sum(), w)
        out.append(w.grad)
    assert out[0].is_sparse == out[1].is_sparse == (order in ("with_embedding", "autograd_grad"))
    if out[0].is_sparse:
        _same_sparse(*out, 1e-13)
    else:
        np.testing.assert_allclose(_np(out[1]), _np(out[0]), rtol=1e-13)


@pytest.mark.parametrize("kwargs,error,message", [
    ({"mode": "max"}, ValueError, "^max mode does not support sparse weights$"),
    ({"mode": "sum", "scale_grad_by_freq": True}, RuntimeError,
     "^embedding_backward: scale_grad_by_freq not supported with sparse gradients$"),
    ({"mode": "mean", "scale_grad_by_freq": True}, RuntimeError,
     "^embedding_backward: scale_grad_by_freq not supported with sparse gradients$"),
])
def test_errors_as_torch(kwargs, error, message):
    for lib in LIBS:
        w = lib.ones(4, 2, requires_grad=True)
        with pytest.raises(error, match=message):  # max: at the call; scale_grad_by_freq: at backward, as torch's
            lib.nn.functional.embedding_bag(lib.tensor([0, 1, 1]), w, lib.tensor([0, 1]), sparse=True,
                                            **kwargs).sum().backward()


def test_no_grad_and_a_weight_without_grad():
    for lib in LIBS:
        w = lib.tensor(W0)
        psw = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        out = lib.nn.functional.embedding_bag(lib.tensor([0, 1, 1]), w, lib.tensor([0, 1]), mode="sum",
                                              sparse=True, per_sample_weights=psw)
        out.sum().backward()
        assert w.grad is None and not psw.grad.is_sparse
        with lib.no_grad():
            assert not lib.nn.functional.embedding_bag(lib.tensor([0, 1]), lib.tensor(W0, requires_grad=True),
                                                       lib.tensor([0]), sparse=True).requires_grad


def test_create_graph_first_order_is_torchs_and_second_order_is_the_dense_paths():
    """torch's sparse gradient under create_graph has a grad_fn, but differentiating it raises; tapegrad's values
    carry the history (as its dense embedding_bag's create_graph rule does): second order equals the dense path's."""
    kw = {"mode": "sum"}
    firsts = []
    for lib in LIBS:
        w, psw, out, c = _bag(lib, lib.float64, [3, 1, 3, 5], [0, 1], dict(kw, psw=[1.0, 2, -1, 0.5]))
        g, gp = lib.autograd.grad((out ** 2 * c).sum(), (w, psw), create_graph=True)
        assert g.is_sparse and g.requires_grad and not gp.is_sparse
        firsts.append((g, gp))
        if lib is torch:
            with pytest.raises(NotImplementedError, match="the derivative for '_embedding_bag_backward' is not "
                                                          "implemented"):
                torch.autograd.grad(g.to_dense().sum(), w)
    _same_sparse(firsts[0][0].detach(), firsts[1][0].detach(), 1e-13)
    np.testing.assert_allclose(_np(firsts[1][1]), _np(firsts[0][1]), rtol=1e-13)
    seconds = []
    for sparse in (True, False):
        w = tg.tensor(W0, requires_grad=True)
        psw = tg.tensor([1.0, 2, -1, 0.5], dtype=tg.float64, requires_grad=True)
        out = tg.nn.functional.embedding_bag(tg.tensor([3, 1, 3, 5]), w, tg.tensor([0, 1]), sparse=sparse,
                                             per_sample_weights=psw, **kw)
        c = tg.tensor(np.linspace(-2, 3, out.numel()).reshape(tuple(out.shape)))
        g, = tg.autograd.grad((out ** 2 * c).sum(), w, create_graph=True)
        g = g.to_dense() if sparse else g
        seconds.append(tg.autograd.grad((g * tg.tensor(np.arange(21.0).reshape(7, 3))).sum(), (w, psw)))
    assert seconds[0][0].is_sparse  # (through the bag's sparse rule again)
    for a, b in zip(*seconds):
        assert np.abs(_np(b)).max() > 0
        np.testing.assert_allclose(_np(a.to_dense() if a.is_sparse else a), _np(b), rtol=1e-13)


# -- optimizers ---------------------------------------------------------------------------------------------------
BATCHES = [([0, 2, 2, 5, 1, 0], [0, 3, 3]), ([6, 6, 1, 2, 3, 4], [0, 1, 4]), ([0, 0, 0, 0, 0, 3], [0, 2, 5]),
           ([5, 4, 3, 2, 1, 0], [0, 5, 6]), ([1, 2, 2, 1, 6, 6], [0, 2, 4])]
OPTIMIZERS = [
    ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}), ("SparseAdam", {"lr": 0.05}),
    ("SparseAdam", {"lr": 0.05, "betas": (0.8, 0.9), "maximize": True}), ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "initial_accumulator_value": 0.2}),
]


def _train(lib, dtype, name, kwargs, mode):
    bag = lib.nn.EmbeddingBag(7, 3, mode=mode, sparse=True, padding_idx=1)
    with lib.no_grad():
        bag.weight.copy_(lib.tensor(W0, dtype=bag.weight.dtype))
    bag = bag.to(dtype)
    head = lib.tensor(np.linspace(-1, 1, 3), dtype=dtype)
    opt = getattr(lib.optim, name)(bag.parameters(), **kwargs)
    for indices, offsets in BATCHES:
        opt.zero_grad()
        psw = lib.tensor(np.linspace(0.5, 2, len(indices)), dtype=dtype) if mode == "sum" else None
        loss = ((bag(lib.tensor(indices), lib.tensor(offsets), psw) * head).sum(-1) ** 2).mean()
        loss.backward()
        opt.step()
    return bag, opt


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("name,kwargs", OPTIMIZERS, ids=lambda v: str(v))
def test_training_steps_match_torch(name, kwargs, dtype, mode):
    (bt, ot), (bg, og) = (_train(lib, dt, name, kwargs, mode) for lib, dt in zip(LIBS, DTYPES[dtype][:2]))
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert not np.allclose(_np(bg.weight), W0)
    np.testing.assert_allclose(_np(bg.weight), _np(bt.weight), rtol=tol, atol=tol)
    _same_sparse(bt.weight.grad, bg.weight.grad, tol)


def test_adam_refuses_as_torch():
    messages = []
    for lib in LIBS:
        bag = lib.nn.EmbeddingBag(7, 3, sparse=True)
        bag(lib.tensor([0, 2]), lib.tensor([0])).sum().backward()
        with pytest.raises(RuntimeError) as err:
            lib.optim.Adam(bag.parameters()).step()
        messages.append(str(err.value))
    assert messages[0] == messages[1]


# -- tapegrad.compile ----------------------------------------------------------------------------------------------
def test_compile_fullgraph_names_the_cause_and_the_fallback_is_eager():
    bag = tg.nn.EmbeddingBag(7, 3, mode="sum", sparse=True)

    def step(idx, offsets):
        loss = (bag(idx, offsets) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(Exception, match="embedding_bag with sparse=True"):
        tg.compile(step, fullgraph=True)(tg.tensor([0, 2, 2]), tg.tensor([0, 1]))
    compiled = tg.compile(step)
    w = bag.weight.detach().numpy()
    for _ in range(2):
        bag.weight.grad = None
        compiled(tg.tensor([0, 2, 2]), tg.tensor([0, 1]))
        assert bag.weight.grad.is_sparse
        np.testing.assert_array_equal(bag.weight.grad._indices().numpy(), [[0, 2, 2]])
        np.testing.assert_allclose(bag.weight.grad._values().numpy(), 2 * np.stack([w[0], 2 * w[2], 2 * w[2]]),
                                   rtol=1e-6)
