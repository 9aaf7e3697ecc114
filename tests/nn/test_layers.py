"""Layers, activations and losses against torch: same weights in, same outputs and gradients out."""
import math

import numpy as np
import pytest
import torch

import tapegrad as tg

RNG = np.random.default_rng(1234)


def _twin(name, *args, **kwargs):
    """The same module in both libraries, with torch's initial state copied into tapegrad's."""
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(tg.nn, name)(*args, **{k: _to_tg(v) for k, v in kwargs.items()})
    ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _to_tg(v):
    return tg.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v


def _compare(ours, theirs, inputs, rtol, atol, grad_inputs=True):
    """Forward both, backward a random projection of the output, compare outputs and every gradient."""
    tg_in = [tg.tensor(a, requires_grad=grad_inputs and a.dtype.kind == "f") for a in inputs]
    th_in = [torch.tensor(a, requires_grad=grad_inputs and a.dtype.kind == "f") for a in inputs]
    out_a, out_b = ours(*tg_in), theirs(*th_in)
    np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), rtol=rtol, atol=atol)
    assert out_a.dtype.__repr__() == repr(out_b.dtype) and tuple(out_a.shape) == tuple(out_b.shape)
    proj = RNG.standard_normal(tuple(out_b.shape)).astype(out_b.detach().numpy().dtype)
    (out_a * tg.tensor(proj)).sum().backward()
    (out_b * torch.tensor(proj)).sum().backward()
    for (name, pa), (_, pb) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(pa.grad.numpy(), pb.grad.numpy(), rtol=rtol, atol=atol, err_msg=name)
    for a, b in zip(tg_in, th_in):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype, rtol, atol", [(np.float32, 1e-5, 1e-6), (np.float64, 1e-12, 1e-13)])
def test_linear(dtype, rtol, atol):
    for bias in (True, False):
        ours, theirs = _twin("Linear", 5, 3, bias=bias)
        if dtype == np.float64:
            ours.double()
            theirs.double()
        _compare(ours, theirs, [RNG.standard_normal((4, 5)).astype(dtype)], rtol, atol)
        _compare(ours, theirs, [RNG.standard_normal((2, 4, 5)).astype(dtype)], rtol, atol)
        _compare(ours, theirs, [RNG.standard_normal(5).astype(dtype)], rtol, atol)
        assert repr(ours) == repr(theirs)


def test_default_initialisation_is_torchs_bit_for_bit():
    for seed in (0, 7):
        tg.manual_seed(seed)
        torch.manual_seed(seed)
        modules = [("Linear", (20, 30)), ("Linear", (1, 5)), ("Embedding", (10, 4)), ("Linear", (7, 3)),
                   ("Embedding", (6, 3), {"padding_idx": -2})]
        for spec in modules:
            name, args = spec[0], spec[1]
            kwargs = spec[2] if len(spec) > 2 else {}
            a, b = getattr(tg.nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
            for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
                assert na == nb and pa.dtype.__repr__() == repr(pb.dtype)
                assert np.array_equal(pa.detach().numpy(), pb.detach().numpy()), (name, na)
    a = tg.nn.Linear(3, 2, dtype=tg.float64)
    assert a.weight.dtype is tg.float64 and a.bias.dtype is tg.float64
    assert np.abs(a.weight.detach().numpy()).max() <= 1 / math.sqrt(3)


def test_embedding():
    ours, theirs = _twin("Embedding", 7, 3, padding_idx=1)
    assert not ours.weight.detach().numpy()[1].any()
    idx = np.array([[0, 1, 6], [2, 2, 1]])
    _compare(ours, theirs, [idx], 1e-6, 1e-7)
    assert repr(ours) == repr(theirs)
    pre = tg.nn.Embedding.from_pretrained(tg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert not pre.weight.requires_grad and pre(tg.tensor([1])).tolist() == [[3.0, 4.0]]
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        tg.nn.Embedding(3, 2, padding_idx=3)


ACTIVATIONS = [
    ("ReLU", (), {}), ("Tanh", (), {}), ("Sigmoid", (), {}), ("GELU", (), {}), ("GELU", (), {"approximate": "tanh"}),
    ("SiLU", (), {}), ("LeakyReLU", (), {}), ("LeakyReLU", (0.2,), {}), ("ELU", (), {}), ("ELU", (0.5,), {}),
    ("Softmax", (), {"dim": 1}), ("LogSoftmax", (), {"dim": -1}), ("Identity", (), {}), ("Flatten", (), {}),
    ("Flatten", (0, 1), {}), ("Softplus", (), {"beta": 2.0}), ("Hardtanh", (-0.5, 0.5), {}), ("ReLU6", (), {}),
    ("LogSigmoid", (), {}),
]


@pytest.mark.parametrize("name, args, kwargs", ACTIVATIONS, ids=[f"{a[0]}{a[1]}{a[2]}" for a in ACTIVATIONS])
def test_activation_modules(name, args, kwargs):
    ours, theirs = _twin(name, *args, **kwargs)
    x = (RNG.standard_normal((3, 4, 2)) * 3).astype(np.float64)
    _compare(ours, theirs, [x], 1e-10, 1e-12)
    _compare(ours, theirs, [x.astype(np.float32)], 1e-5, 1e-6)
    assert repr(ours) == repr(theirs)


def test_inplace_activation_reprs_and_results():
    for name, kwargs in (("ReLU", {"inplace": True}), ("LeakyReLU", {"negative_slope": 0.3, "inplace": True}),
                         ("ELU", {"inplace": True}), ("SiLU", {"inplace": True})):
        ours, theirs = _twin(name, **kwargs)
        assert repr(ours) == repr(theirs)
        x = RNG.standard_normal(6).astype(np.float32)
        a, b = tg.tensor(x), torch.tensor(x)
        ours(a)
        theirs(b)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_dropout_module():
    ours, theirs = _twin("Dropout", 0.3)
    assert repr(ours) == repr(theirs)
    x = RNG.standard_normal((50, 40)).astype(np.float32)
    tg.manual_seed(3)
    torch.manual_seed(3)
    a, b = ours(tg.tensor(x)), theirs(torch.tensor(x))
    kept_a, kept_b = a.numpy() != 0, b.numpy() != 0
    assert 0.6 < kept_a.mean() < 0.8
    np.testing.assert_allclose(a.numpy()[kept_a], x[kept_a] / 0.7, rtol=1e-6)
    assert np.array_equal(kept_a, kept_b)   # the same stream on every CPU (tapegrad/random.py)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    ours.eval()
    assert np.array_equal(ours(tg.tensor(x)).numpy(), x)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        tg.nn.Dropout(1.5)


def _class_targets(n, c):
    return RNG.integers(0, c, n)


LOSSES = [
    ("MSELoss", {}, "regression"), ("MSELoss", {"reduction": "sum"}, "regression"),
    ("MSELoss", {"reduction": "none"}, "regression"), ("L1Loss", {}, "regression"),
    ("L1Loss", {"reduction": "none"}, "regression"), ("SmoothL1Loss", {}, "regression"),
    ("SmoothL1Loss", {"beta": 0.5, "reduction": "sum"}, "regression"), ("HuberLoss", {"delta": 0.7}, "regression"),
    ("CrossEntropyLoss", {}, "classes"), ("CrossEntropyLoss", {"reduction": "sum"}, "classes"),
    ("CrossEntropyLoss", {"label_smoothing": 0.1}, "classes"), ("CrossEntropyLoss", {"ignore_index": 2}, "classes"),
    ("CrossEntropyLoss", {"weight": "w"}, "classes"), ("CrossEntropyLoss", {}, "probs"),
    ("NLLLoss", {}, "log_probs"), ("NLLLoss", {"weight": "w", "reduction": "sum"}, "log_probs"),
    ("BCELoss", {}, "binary_probs"), ("BCELoss", {"weight": "wb", "reduction": "none"}, "binary_probs"),
    ("BCEWithLogitsLoss", {}, "binary"), ("BCEWithLogitsLoss", {"pos_weight": "pw"}, "binary"),
    ("BCEWithLogitsLoss", {"weight": "wb", "reduction": "sum"}, "binary"),
]


@pytest.mark.parametrize("name, kwargs, kind", LOSSES, ids=[f"{n}-{sorted(k.items())}-{t}" for n, k, t in LOSSES])
def test_loss_modules(name, kwargs, kind):
    n, c = 6, 4
    weights = {"w": RNG.uniform(0.5, 2.0, c), "wb": RNG.uniform(0.5, 2.0, (n, c)), "pw": RNG.uniform(0.5, 2.0, c)}
    th_kwargs = {k: torch.tensor(weights[v]) if k in ("weight", "pos_weight") else v for k, v in kwargs.items()}
    theirs = getattr(torch.nn, name)(**th_kwargs)
    ours = getattr(tg.nn, name)(**{k: _to_tg(v) for k, v in th_kwargs.items()})
    x = RNG.standard_normal((n, c))
    if kind == "regression":
        inputs = [x, RNG.standard_normal((n, c))]
    elif kind == "classes":
        inputs = [x, _class_targets(n, c)]
    elif kind == "probs":
        inputs = [x, RNG.dirichlet(np.ones(c), n)]
    elif kind == "log_probs":
        inputs = [x - np.log(np.exp(x).sum(1, keepdims=True)), _class_targets(n, c)]
    elif kind == "binary_probs":
        inputs = [1 / (1 + np.exp(-x)), RNG.integers(0, 2, (n, c)).astype(np.float64)]
    else:
        inputs = [x, RNG.integers(0, 2, (n, c)).astype(np.float64)]

    class Wrap:
        def __init__(self, loss, lib):
            self.loss, self.lib = loss, lib

        def __call__(self, a, b):
            return self.loss(a, b)

        def named_parameters(self):
            return []

    _compare(Wrap(ours, tg), Wrap(theirs, torch), inputs, 1e-10, 1e-12)
    assert repr(ours) == repr(theirs)
    assert [k for k, _ in ours.named_buffers()] == [k for k, _ in theirs.named_buffers()]
