"""F.embedding / nn.Embedding with sparse=True against torch 2.13: the weight's gradient is a sparse COO tensor
(indices the looked-up rows, padding_idx's left out; values the output gradient's rows), accumulated as torch's
AccumulateGrad does, and taken by SGD, SparseAdam and Adagrad; the other optimizers refuse it with torch's error."""
import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = (torch, tg)
DTYPES = {"float32": (torch.float32, tg.float32, 1e-6), "float64": (torch.float64, tg.float64, 1e-13)}


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def _same_sparse(a, b, tol):
    """Two sparse COO tensors agree: layout, size, nnz, coalesced flag, indices in order, values, and coalesced."""
    assert b.is_sparse and a.is_sparse and b.layout is tg.sparse_coo
    assert tuple(a.shape) == tuple(b.shape) and a._nnz() == b._nnz() and a.is_coalesced() == b.is_coalesced()
    assert a.sparse_dim() == b.sparse_dim() and a.dense_dim() == b.dense_dim()
    np.testing.assert_array_equal(_np(a._indices()), _np(b._indices()))
    np.testing.assert_allclose(_np(a._values()), _np(b._values()), rtol=tol, atol=tol)
    ca, cb = a.coalesce(), b.coalesce()
    np.testing.assert_array_equal(_np(ca.indices()), _np(cb.indices()))
    np.testing.assert_allclose(_np(ca.values()), _np(cb.values()), rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(a.to_dense()), _np(b.to_dense()), rtol=tol, atol=tol)


W0 = np.random.default_rng(0).standard_normal((7, 3))
CASES = [  # (indices, padding_idx)
    ([0, 3, 6], None),
    ([[0, 2, 2], [5, 2, 1]], None),          # 2-D, repeated
    ([[0, 2, 2], [5, 2, 1]], 2),             # padding_idx
    ([[1, 1], [4, 6], [1, 0]], -1),          # negative padding_idx (row 6)
    ([3], None),                             # nnz 1: coalesced
    ([[2, 2], [2, 2]], 2),                   # every lookup padded: nnz 0
]


def _embedding(lib, dtype, indices, padding_idx, w0=W0):
    w = lib.tensor(w0, dtype=dtype, requires_grad=True)
    idx = lib.tensor(indices)
    out = lib.nn.functional.embedding(idx, w, padding_idx=padding_idx, sparse=True)
    c = lib.tensor(np.linspace(-2, 3, out.numel()).reshape(tuple(out.shape)), dtype=dtype)
    return w, out, c


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("indices,padding_idx", CASES)
def test_gradient_is_torchs_sparse_tensor(dtype, indices, padding_idx):
    grads = []
    for lib, dt in zip(LIBS, DTYPES[dtype][:2]):
        w, out, c = _embedding(lib, dt, indices, padding_idx)
        (out * c).sum().backward()
        grads.append(w.grad)
    _same_sparse(*grads, DTYPES[dtype][2])
    assert grads[1].dtype == tg.float32 if dtype == "float32" else tg.float64


def test_repr_and_module():
    reprs = []
    for lib in LIBS:
        torch.manual_seed(0)
        m = lib.nn.Embedding(5, 2, padding_idx=1, sparse=True)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.arange(10.0).reshape(5, 2), dtype=lib.float32))
        (m(lib.tensor([[0, 1], [4, 0]])) * 2).sum().backward()
        reprs.append((repr(m), repr(m.weight.grad), repr(m.weight.grad.coalesce())))
    assert reprs[0] == reprs[1]


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_two_backwards_accumulate_as_torch(dtype):
    """sparse into sparse: torch's add merges the two entry lists (its order), still uncoalesced."""
    grads = []
    for lib, dt in zip(LIBS, DTYPES[dtype][:2]):
        w, out, c = _embedding(lib, dt, [[3, 3, 0], [6, 1, 3]], None)
        (out * c).sum().backward()
        first = w.grad
        out2 = lib.nn.functional.embedding(lib.tensor([3, 1, 5]), w, sparse=True)
        (out2 * lib.tensor(np.ones((3, 3)) * 0.5, dtype=dt)).sum().backward()
        assert w.grad is first  # (in place, as AccumulateGrad's +=)
        grads.append(w.grad)
    _same_sparse(*grads, DTYPES[dtype][2])


@pytest.mark.parametrize("order", ["dense_then_sparse", "sparse_then_dense", "one_backward", "two_uses"])
def test_sparse_and_dense_gradients_add_as_torch(order):
    out = []
    for lib in LIBS:
        w, emb, c = _embedding(lib, lib.float64, [[0, 2], [2, 5]], None)
        F = lib.nn.functional
        sparse_loss = lambda: (F.embedding(lib.tensor([[0, 2], [2, 5]]), w, sparse=True) * c).sum()  # noqa: E731
        dense_loss = lambda: (w * w).sum()  # noqa: E731
        if order == "dense_then_sparse":
            dense_loss().backward()
            sparse_loss().backward()
        elif order == "sparse_then_dense":
            sparse_loss().backward()
            dense_loss().backward()
        elif order == "one_backward":
            (sparse_loss() + dense_loss()).backward()
        else:
            (sparse_loss() + 3 * (F.embedding(lib.tensor([4, 0]), w, sparse=True) * 2).sum()).backward()
        out.append(w.grad)
    assert out[0].is_sparse == out[1].is_sparse
    if out[0].is_sparse:
        _same_sparse(*out, 1e-13)
    else:
        np.testing.assert_allclose(_np(out[0]), _np(out[1]), rtol=1e-13)


def test_autograd_grad_returns_the_sparse_gradient():
    grads = []
    for lib in LIBS:
        w, out, c = _embedding(lib, lib.float64, [[1, 4], [4, 0]], 0)
        grads.append(lib.autograd.grad((out * c).sum(), w)[0])
        assert w.grad is None
    _same_sparse(*grads, 1e-13)


def test_scale_grad_by_freq_is_refused_at_backward_as_torch():
    for lib in LIBS:
        w = lib.ones(4, 2, requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor([0, 1, 1]), w, scale_grad_by_freq=True, sparse=True)
        with pytest.raises(RuntimeError, match="^embedding_backward: scale_grad_by_freq not supported with sparse "
                                               "gradients$"):
            out.sum().backward()


def test_max_norm_renorms_and_the_gradient_is_sparse():
    got = []
    for lib in LIBS:
        w = lib.tensor(W0 * 3, requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor([[0, 2], [2, 5]]), w, max_norm=1.0, sparse=True)
        (out * lib.tensor(np.arange(12.0).reshape(2, 2, 3))).sum().backward()
        got.append((w.grad, _np(w), _np(out)))
    _same_sparse(got[0][0], got[1][0], 1e-13)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-13)
    np.testing.assert_allclose(got[0][2], got[1][2], rtol=1e-13)


def test_second_order_through_to_dense():
    """create_graph: the sparse gradient's values carry the history (torch: a SparseCooTensor node)."""
    got = []
    for lib in LIBS:
        w = lib.tensor(W0, requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor([[0, 2], [2, 5]]), w, sparse=True)
        g, = lib.autograd.grad((out ** 3).sum(), w, create_graph=True)
        assert g.is_sparse and g.requires_grad
        (g.to_dense() * lib.tensor(np.arange(21.0).reshape(7, 3))).sum().backward()
        got.append((g.detach(), w.grad))
    _same_sparse(got[0][0], got[1][0], 1e-13)
    _same_sparse(got[0][1], got[1][1], 1e-13)


def test_a_weight_that_is_not_a_leaf_gets_a_dense_gradient():
    """A documented difference: torch keeps the gradient sparse through the few ops that take one (here the
    product with a number) and raises for the rest; tapegrad adds it densely into the non-leaf's adjoint."""
    dense = []
    for lib in LIBS:
        w = lib.tensor(W0, requires_grad=True)
        (lib.nn.functional.embedding(lib.tensor([[0, 2], [2, 5]]), w * 2, sparse=True) * 1.5).sum().backward()
        dense.append(w.grad.to_dense() if w.grad.is_sparse else w.grad)
    assert not tg.tensor(0.0).is_sparse and torch.is_tensor(dense[0])
    np.testing.assert_allclose(_np(dense[0]), _np(dense[1]), rtol=1e-13)


# -- optimizers ---------------------------------------------------------------------------------------------------
BATCHES = [[[0, 2, 2], [5, 1, 0]], [[6, 6, 1], [2, 3, 4]], [[0, 0, 0], [0, 0, 3]], [[5, 4, 3], [2, 1, 0]],
           [[1, 2, 2], [1, 6, 6]]]
OPTIMIZERS = [
    ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "maximize": True}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}), ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.5, "foreach": False}), ("SparseAdam", {"lr": 0.05}),
    ("SparseAdam", {"lr": 0.05, "betas": (0.8, 0.9), "maximize": True}), ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "initial_accumulator_value": 0.2, "maximize": True}),
    ("Adagrad", {"lr": 0.1, "foreach": True}),
]


def _train(lib, dtype, name, kwargs, steps=5, padding_idx=1):
    emb = lib.nn.Embedding(7, 3, padding_idx=padding_idx, sparse=True)
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(W0, dtype=emb.weight.dtype))
    emb = emb.to(dtype)
    head = lib.tensor(np.linspace(-1, 1, 3), dtype=dtype)
    opt = getattr(lib.optim, name)(emb.parameters(), **kwargs)
    for batch in BATCHES[:steps]:
        opt.zero_grad()
        loss = ((emb(lib.tensor(batch)) * head).sum(-1) ** 2).mean()
        loss.backward()
        opt.step()
    return emb, opt


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("name,kwargs", OPTIMIZERS, ids=lambda v: str(v))
def test_training_steps_match_torch(name, kwargs, dtype):
    (et, ot), (eg, og) = (_train(lib, dt, name, kwargs) for lib, dt in zip(LIBS, DTYPES[dtype][:2]))
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(_np(eg.weight), _np(et.weight), rtol=tol, atol=tol)
    _same_sparse(et.weight.grad, eg.weight.grad, tol)
    buf_t, buf_g = ot.state[et.weight].get("momentum_buffer"), og.state[eg.weight].get("momentum_buffer")
    assert (buf_t is None) == (buf_g is None)
    if buf_t is not None:
        _same_sparse(buf_t, buf_g, tol)


@pytest.mark.parametrize("name,kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9}), ("SparseAdam", {"lr": 0.05}),
                                         ("Adagrad", {"lr": 0.1})])
def test_state_dict_round_trip(name, kwargs):
    """Two steps, the state saved and loaded into a fresh optimizer, three more steps: as an uninterrupted run."""
    results = []
    for lib in LIBS:
        emb, opt = _train(lib, lib.float64, name, kwargs, steps=2)
        saved = opt.state_dict()
        opt2 = getattr(lib.optim, name)(emb.parameters(), **kwargs)
        opt2.load_state_dict(saved)
        head = lib.tensor(np.linspace(-1, 1, 3), dtype=lib.float64)
        for batch in BATCHES[2:]:
            opt2.zero_grad()
            ((emb(lib.tensor(batch)) * head).sum(-1) ** 2).mean().backward()
            opt2.step()
        results.append(_np(emb.weight))
    uninterrupted = _np(_train(tg, tg.float64, name, kwargs)[0].weight)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)
    np.testing.assert_allclose(results[1], uninterrupted, rtol=1e-12)


REFUSED = [("Adam", {}), ("AdamW", {}), ("Adamax", {}), ("Adadelta", {}), ("RMSprop", {}), ("Rprop", {}),
           ("ASGD", {}), ("NAdam", {}), ("RAdam", {}), ("Adafactor", {}), ("SGD", {"weight_decay": 0.1}),
           ("SGD", {"fused": True}), ("Adagrad", {"weight_decay": 0.1}), ("Adagrad", {"fused": True})]


@pytest.mark.parametrize("name,kwargs", REFUSED, ids=lambda v: str(v))
def test_optimizers_that_refuse_sparse_gradients_say_what_torch_says(name, kwargs):
    messages = []
    for lib in LIBS:
        emb = lib.nn.Embedding(7, 3, sparse=True)
        emb(lib.tensor([0, 2])).sum().backward()
        opt = getattr(lib.optim, name)(emb.parameters(), **kwargs)
        with pytest.raises(RuntimeError) as err:
            opt.step()
        messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_clip_grad_norm_refuses_a_sparse_gradient_as_torch():
    for lib in LIBS:
        emb = lib.nn.Embedding(7, 3, sparse=True)
        emb(lib.tensor([0, 2])).sum().backward()
        for clip in (lambda: lib.nn.utils.clip_grad_norm_(emb.parameters(), 1.0),
                     lambda: lib.nn.utils.clip_grad_value_(emb.parameters(), 1.0)):
            with pytest.raises(NotImplementedError, match="^Could not run 'aten::(linalg_vector_norm|clamp_min_)' "
                                                          "with arguments from the 'SparseCPU' backend"):
                clip()


def test_zero_grad_without_set_to_none_leaves_no_entries():
    grads = []
    for lib in LIBS:
        emb, opt = _train(lib, lib.float64, "SGD", {"lr": 0.1}, steps=1)
        opt.zero_grad(set_to_none=False)
        grads.append(emb.weight.grad)
        assert emb.weight.grad._indices().shape == (1, 0) and emb.weight.grad._values().shape == (0, 3)
    _same_sparse(*grads, 0)
    opt = tg.optim.SGD([tg.ones(2, requires_grad=True)])
    opt.zero_grad(set_to_none=True)


def test_lbfgs_reads_a_sparse_gradient_densely():
    weights = []
    for lib in LIBS:
        emb = lib.nn.Embedding(7, 3, sparse=True)
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(W0, dtype=emb.weight.dtype))
        opt = lib.optim.LBFGS(emb.parameters(), lr=0.5, max_iter=3)

        def closure():
            opt.zero_grad()
            loss = (emb(lib.tensor([[0, 2], [2, 5]])) ** 2).sum()
            loss.backward()
            return loss
        opt.step(closure)
        weights.append(_np(emb.weight))
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-5, atol=1e-6)


# -- tapegrad.compile ----------------------------------------------------------------------------------------------
def test_compile_fullgraph_names_the_cause_and_the_fallback_is_eager():
    emb = tg.nn.Embedding(7, 3, sparse=True)

    def step(idx):
        loss = (emb(idx) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(Exception, match="embedding with sparse=True"):
        tg.compile(step, fullgraph=True)(tg.tensor([0, 2, 2]))
    emb.weight.grad = None
    compiled = tg.compile(step)
    for _ in range(2):
        emb.weight.grad = None
        compiled(tg.tensor([0, 2, 2]))
        assert emb.weight.grad.is_sparse
        np.testing.assert_array_equal(emb.weight.grad._indices().numpy(), [[0, 2, 2]])
        np.testing.assert_allclose(emb.weight.grad._values().numpy(), 2 * emb.weight.detach().numpy()[[0, 2, 2]])
