"""F.embedding / nn.Embedding with scale_grad_by_freq, as torch 2.13: each lookup's gradient divided by its index's
count in the input (padding_idx's row still gets none). With sparse=True: tests/test_embedding_sparse.py."""
import numpy as np
import pytest
import torch

import tapegrad as tg

INDICES = [[0, 2, 2, 5], [2, 1, 5, 2]]   # 2 four times, 5 twice, 0 and 1 once


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("padding_idx", [None, 2, 5, -1])
def test_scale_grad_by_freq_equals_torch(dtype, padding_idx):
    rng = np.random.default_rng(5)
    w0, seed = rng.standard_normal((6, 3)), rng.standard_normal((2, 4, 3))
    results = []
    for lib in (torch, tg):
        w = lib.tensor(w0, dtype=getattr(lib, dtype), requires_grad=True)
        y = lib.nn.functional.embedding(lib.tensor(INDICES), w, padding_idx=padding_idx, scale_grad_by_freq=True)
        y.backward(lib.tensor(seed, dtype=getattr(lib, dtype)))
        results.append((y.detach().numpy(), w.grad.numpy(), type(y.grad_fn).__name__ if lib is torch
                        else y.grad_fn.name()))
    (ty, tgrad, tname), (gy, ggrad, gname) = results
    np.testing.assert_array_equal(gy, ty)
    np.testing.assert_allclose(ggrad, tgrad, rtol=1e-6 if dtype == "float32" else 1e-14, atol=1e-7)
    assert gname == tname


def test_module_scale_grad_by_freq_and_second_order():
    """nn.Embedding's first and second derivatives equal torch's, whose double backward of embedding takes the
    lookups unscaled (embedding_dense_double_backward), which the written-out formula below spells out."""
    w0 = np.linspace(-1, 1, 18).reshape(6, 3)
    m = tg.nn.Embedding(6, 3, scale_grad_by_freq=True)
    m.weight.data = tg.tensor(w0)
    g, = tg.autograd.grad((m(tg.tensor(INDICES)) ** 3).sum(), m.weight, create_graph=True)
    (g * g).sum().backward()

    tm = torch.nn.Embedding(6, 3, scale_grad_by_freq=True)
    tm.weight.data = torch.tensor(w0)
    tg1, = torch.autograd.grad((tm(torch.tensor(INDICES)) ** 3).sum(), tm.weight, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), tg1.detach().numpy(), rtol=1e-12, atol=1e-14)
    (tg1 * tg1).sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-12, atol=1e-14)

    w = torch.tensor(w0, requires_grad=True)
    flat = torch.tensor(INDICES).reshape(-1)
    counts = torch.bincount(flat, minlength=6).to(w.dtype)
    scaled = 3 * w[flat] ** 2 / counts[flat][:, None]
    expected = torch.zeros(6, 3, dtype=w.dtype).index_add(0, flat, scaled)
    (expected * expected).sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), w.grad.numpy(), rtol=1e-12, atol=1e-14)
