"""nn.init against torch (the same seed draws the same values) and nn.utils gradient clipping."""
import math

import numpy as np
import pytest
import torch

import tapegrad as tg


def same_error(fn):
    def err(lib):
        try:
            fn(lib)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return None
    want = err(torch)
    assert want is not None
    assert err(tg) == want


INITS = [
    ("uniform_", {}), ("uniform_", {"a": -2.0, "b": 0.5}), ("normal_", {}), ("normal_", {"mean": 1.0, "std": 0.1}),
    ("xavier_uniform_", {}), ("xavier_uniform_", {"gain": 2.0}), ("xavier_normal_", {}),
    ("kaiming_uniform_", {}), ("kaiming_uniform_", {"a": math.sqrt(5)}),
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}), ("kaiming_normal_", {}),
    ("kaiming_normal_", {"nonlinearity": "tanh", "mode": "fan_out"}),
]


@pytest.mark.parametrize("name, kwargs", INITS, ids=[f"{n}{sorted(k.items())}" for n, k in INITS])
@pytest.mark.parametrize("shape", [(8, 5), (30, 20, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_init_draws_torchs_values(name, kwargs, shape, dtype):
    tg.manual_seed(11)
    torch.manual_seed(11)
    a = tg.nn.Parameter(tg.zeros(*shape, dtype=getattr(tg, dtype)))
    b = torch.nn.Parameter(torch.zeros(*shape, dtype=getattr(torch, dtype)))
    version = a._version
    out_a = getattr(tg.nn.init, name)(a, **kwargs)
    out_b = getattr(torch.nn.init, name)(b, **kwargs)
    assert out_a is a and out_b is b and a._version > version and a.grad_fn is None and a.requires_grad
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6 if dtype == "float32" else 1e-14,
                               atol=1e-7 if dtype == "float32" else 1e-15)
    # with an explicit generator too
    ga, gb = tg.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    getattr(tg.nn.init, name)(a, **kwargs, generator=ga)
    getattr(torch.nn.init, name)(b, **kwargs, generator=gb)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6 if dtype == "float32" else 1e-14,
                               atol=1e-7 if dtype == "float32" else 1e-15)


def test_fills_and_structured_inits():
    for name, args in (("constant_", (0.25,)), ("ones_", ()), ("zeros_", ()), ("eye_", ())):
        a, b = tg.empty(3, 4), torch.empty(3, 4)
        getattr(tg.nn.init, name)(a, *args)
        getattr(torch.nn.init, name)(b, *args)
        assert np.array_equal(a.numpy(), b.numpy())
    a, b = tg.empty(4, 2, 3), torch.empty(4, 2, 3)
    tg.nn.init.dirac_(a, groups=2)
    torch.nn.init.dirac_(b, groups=2)
    assert np.array_equal(a.numpy(), b.numpy())
    w = tg.empty(6, 4)
    tg.nn.init.orthogonal_(w, gain=2.0)
    np.testing.assert_allclose(w.numpy().T @ w.numpy(), 4 * np.eye(4), atol=1e-5)
    t = tg.empty(2000)
    tg.nn.init.trunc_normal_(t, mean=0.0, std=1.0, a=-0.5, b=1.0)
    assert t.numpy().min() >= -0.5 and t.numpy().max() <= 1.0 and t.numpy().std() > 0.2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sparse_draws_torchs_values(dtype):
    """normal values from the given generator, each column's zeros by randperm from the default one."""
    for sparsity, generator in ((0.1, False), (0.5, True), (0.0, False)):
        tg.manual_seed(3)
        torch.manual_seed(3)
        a, b = tg.empty(7, 5, dtype=getattr(tg, dtype)), torch.empty(7, 5, dtype=getattr(torch, dtype))
        ga = tg.Generator().manual_seed(9) if generator else None
        gb = torch.Generator().manual_seed(9) if generator else None
        assert tg.nn.init.sparse_(a, sparsity, std=0.5, generator=ga) is a
        torch.nn.init.sparse_(b, sparsity, std=0.5, generator=gb)
        assert np.array_equal(a.numpy(), b.numpy())
        assert (a.numpy() == 0).sum() == 5 * math.ceil(sparsity * 7)
    same_error(lambda lib: lib.nn.init.sparse_(lib.empty(3, 3, 3), 0.1))


@pytest.mark.parametrize("old", ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
                                 "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"])
def test_deprecated_names_warn_and_fill_as_torch(old):
    shape = (4, 2, 3) if old == "dirac" else (6, 4)
    args = (0.3,) if old in ("constant", "sparse") else ()
    filled = []
    for lib in (tg, torch):
        lib.manual_seed(4)
        t = lib.empty(*shape, dtype=lib.float64)
        with pytest.warns(FutureWarning) as record:
            assert getattr(lib.nn.init, old)(t, *args) is t
        filled.append((t.numpy(), str(record[0].message)))
    assert filled[0][1] == filled[1][1] == f"`nn.init.{old}` is now deprecated in favor of `nn.init.{old}_`."
    np.testing.assert_allclose(filled[0][0], filled[1][0], rtol=1e-12, atol=1e-15)


def test_calculate_gain_and_errors():
    for args in (("linear",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",), ("leaky_relu", 0.2),
                 ("leaky_relu", 3), ("selu",), ("conv2d",)):
        assert tg.nn.init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)
    same_error(lambda lib: lib.nn.init.calculate_gain("swish"))
    same_error(lambda lib: lib.nn.init.calculate_gain("leaky_relu", "x"))
    same_error(lambda lib: lib.nn.init.xavier_uniform_(lib.empty(3)))
    same_error(lambda lib: lib.nn.init.kaiming_normal_(lib.empty(3, 3), mode="fan_avg"))
    same_error(lambda lib: lib.nn.init.eye_(lib.empty(3)))
    same_error(lambda lib: lib.nn.init.dirac_(lib.empty(3, 3)))
    same_error(lambda lib: lib.nn.init.uniform_(lib.empty(3), 2.0, 1.0))
    same_error(lambda lib: lib.nn.init.normal_(lib.empty(3), 0.0, -1.0))
    with pytest.warns(UserWarning, match="zero-element"):
        tg.nn.init.kaiming_uniform_(tg.empty(0, 3))


def test_init_records_nothing_and_keeps_leaves():
    w = tg.nn.Parameter(tg.ones(3, 3))
    tg.nn.init.normal_(w)
    assert w.is_leaf and w.grad_fn is None
    (w * 2).sum().backward()
    assert w.grad.tolist() == [[2.0] * 3] * 3


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) * 3 for s in [(4, 3), (3,), (2, 2, 2)]]
    for max_norm in (0.5, 1e6):
        ps_a = [tg.nn.Parameter(tg.zeros(*g.shape)) for g in grads]
        ps_b = [torch.nn.Parameter(torch.zeros(*g.shape)) for g in grads]
        for pa, pb, g in zip(ps_a, ps_b, grads):
            pa.grad, pb.grad = tg.tensor(g), torch.tensor(g)
        ps_a.append(tg.nn.Parameter(tg.zeros(2)))     # no grad: skipped
        ps_b.append(torch.nn.Parameter(torch.zeros(2)))
        na = tg.nn.utils.clip_grad_norm_(ps_a, max_norm, norm_type=norm_type)
        nb = torch.nn.utils.clip_grad_norm_(ps_b, max_norm, norm_type=norm_type)
        assert na.shape == () and na.dtype is tg.float32
        np.testing.assert_allclose(na.item(), nb.item(), rtol=1e-6)
        for pa, pb in zip(ps_a[:-1], ps_b[:-1]):
            np.testing.assert_allclose(pa.grad.numpy(), pb.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_clip_grad_value_and_nonfinite():
    p = tg.nn.Parameter(tg.zeros(4))
    p.grad = tg.tensor([-3.0, 0.5, 2.0, -0.1])
    tg.nn.utils.clip_grad_value_([p], 1.0)
    assert p.grad.tolist() == [-1.0, 0.5, 1.0, -0.10000000149011612]
    p.grad = tg.tensor([float("inf"), 1.0, 0.0, 0.0])

    def clip(lib, ps):
        return lib.nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)

    q = torch.nn.Parameter(torch.zeros(4))
    q.grad = torch.tensor([float("inf"), 1.0, 0.0, 0.0])
    with pytest.raises(RuntimeError) as ea:
        clip(tg, [p])
    with pytest.raises(RuntimeError) as eb:
        clip(torch, [q])
    assert str(ea.value) == str(eb.value)
    assert tg.nn.utils.clip_grad_norm_([tg.nn.Parameter(tg.zeros(1))], 1.0).item() == 0.0


def test_parameters_to_vector_round_trip():
    m = tg.nn.Linear(3, 2)
    vec = tg.nn.utils.parameters_to_vector(m.parameters())
    assert vec.shape == (8,)
    tg.nn.utils.vector_to_parameters(vec * 0 + 1, m.parameters())
    assert m.weight.detach().numpy().min() == 1.0 and m.bias.detach().numpy().max() == 1.0


def test_vector_to_parameters_of_a_short_vector_is_torchs_error():
    messages = []
    for L in (torch, tg):
        with pytest.raises(RuntimeError) as e:
            L.nn.utils.vector_to_parameters(L.ones(3), L.nn.Linear(3, 4).parameters())
        messages.append(str(e.value))
    assert messages[0] == messages[1]
