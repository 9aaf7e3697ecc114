"""F.scaled_dot_product_attention's one-row path (ops.attention: 4-d float32/float64 q, k, v of one batch shape
and head size, no attn_mask, no dropout) against torch 2.13: torch's grad_fn name, values and gradients with
and without is_causal (and more keys than queries), inputs that are transposed views (a GPT block's head
split), second order against torch's math backend (its flash row has no double backward), and
tapegrad.compile's replay."""
import numpy as np
import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import tapegrad as tg


def _data(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


SHAPES = {"square": [(2, 3, 5, 4)] * 3, "more_keys": [(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 4)]}


def test_grad_fn_is_torchs_flash_row_and_others_stay_composed():
    q = tg.randn(2, 3, 5, 4, requires_grad=True)
    assert tg.nn.functional.scaled_dot_product_attention(q, q, q).grad_fn.name() == \
        "ScaledDotProductFlashAttentionForCpuBackward0"
    x = tg.randn(2, 3, 4, 5, requires_grad=True).transpose(-1, -2)  # last dim not contiguous: torch's math path
    assert tg.nn.functional.scaled_dot_product_attention(x, x, x).grad_fn.name() == "UnsafeViewBackward0"


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shapes", sorted(SHAPES))
def test_values_and_gradients(dtype, tol, causal, shapes):
    arrays = _data(SHAPES[shapes], dtype, 1)
    seed = _data([(2, 3, 5, 4)], dtype, 2)[0]
    results = []
    for lib in (tg, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = lib.nn.functional.scaled_dot_product_attention(*ts, is_causal=causal, scale=0.3 if causal else None)
        (out * lib.tensor(seed)).sum().backward()
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in ts])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def test_head_split_views():
    """q, k, v as a GPT block makes them: split of one projection, view, transpose(1, 2)."""
    (a,) = _data([(2, 5, 24)], np.float32, 3)
    results = []
    for lib in (tg, torch):
        x = lib.tensor(a, requires_grad=True)
        q, k, v = (t.view(2, 5, 2, 4).transpose(1, 2) for t in x.split(8, dim=2))
        y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        out = y.transpose(1, 2).contiguous().view(2, 5, 8)
        (out * out).sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
def test_second_order(causal):
    arrays = _data(SHAPES["more_keys"], np.float64, 4)
    results = []
    for lib in (tg, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        with sdpa_kernel(SDPBackend.MATH) if lib is torch else _nothing():
            out = lib.nn.functional.scaled_dot_product_attention(*ts, is_causal=causal)
            grads = lib.autograd.grad((out * out).sum(), ts, create_graph=True)
            total = sum((g * g).sum() for g in grads)
            results.append([t.numpy() for t in lib.autograd.grad(total, ts)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-11)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_compile_replays_the_row():
    def loss(q, k, v):
        return (tg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) * q).sum()

    compiled = tg.compile(loss, fullgraph=True)
    for seed in range(3):
        arrays = _data(SHAPES["square"], np.float32, 10 + seed)
        results = []
        for f in (loss, compiled):
            ts = [tg.tensor(a, requires_grad=True) for a in arrays]
            value = f(*ts)
            value.backward()
            results.append([value.detach().numpy()] + [t.grad.numpy() for t in ts])
        for ours, theirs in zip(*results):
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
