"""torch's legacy API that older scripts still use, against torch 2.13: the tensor types (torch.FloatTensor, ...)
as classes (isinstance, construction, `x.type(T)`), `torch.Tensor()` and `torch.Tensor(torch.Size)`, and the
pre-1.0 reduction name 'elementwise_mean'."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
         "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", TYPES)
def test_tensor_types_are_classes_as_torchs(name):
    def facts(lib):
        T = getattr(lib, name)
        x = T([1, 0, 2])
        return (repr(T), T.__name__, str(T.dtype), T.is_cuda, T.is_sparse, isinstance(x, T), str(x.dtype),
                x.tolist(), isinstance(lib.ones(2), T), tuple(T(2, 3).shape), tuple(T(lib.Size([4])).shape),
                tuple(T().shape), x.type(), str(lib.arange(3).type(T).dtype),
                str(lib.arange(3).type("torch." + name).dtype))
    assert facts(tg) == facts(torch)


def test_a_parameter_and_a_tensor_that_requires_grad_are_instances_of_their_type():
    for lib in (tg, torch):
        assert isinstance(lib.nn.Parameter(lib.ones(2)), lib.FloatTensor)
        assert isinstance(lib.ones(2, dtype=lib.float64, requires_grad=True), lib.DoubleTensor)
        assert not isinstance(lib.ones(2), lib.DoubleTensor)


@pytest.mark.parametrize("arg, error", [("float", ValueError), ("FloatTensor", ValueError), (3, TypeError)])
def test_type_refuses_what_torch_refuses(arg, error):
    for lib in (tg, torch):
        with pytest.raises(error) as e:
            lib.ones(2).type(arg)
        msgs = str(e.value)
    assert str(e.value) == msgs


def test_the_legacy_constructor_takes_sizes_a_size_or_nothing():
    for args in [(), (tg.Size([2, 3]),), ((2, 3),), ([2.5, 3],), (2, 3)]:
        theirs = torch.Tensor(*[torch.Size(a) if isinstance(a, tg.Size) else a for a in args])
        ours = tg.Tensor(*args)
        assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)


@pytest.mark.parametrize("loss", ["nll_loss", "mse_loss", "l1_loss", "cross_entropy"])
def test_elementwise_mean_is_mean_with_torchs_warning(loss):
    x = np.array([[-1.0, -2.0, -0.5], [-0.3, -1.5, -2.5]])
    results = []
    for lib in (tg, torch):
        a = lib.tensor(x, requires_grad=True)
        b = lib.tensor([0, 1]) if loss in ("nll_loss", "cross_entropy") else lib.tensor(x + 1)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = getattr(lib.nn.functional, loss)(a, b, reduction="elementwise_mean")
        out.backward()
        results.append((out.item(), a.grad.numpy(), [str(m.message) for m in w]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)
    assert results[0][2] == results[1][2] == ["reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead."]
