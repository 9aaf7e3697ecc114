"""F.scaled_dot_product_attention's one-row path (ops.attention: 4-d float q, k, v of one batch shape
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


# (shape of the array made, permutation to (B, H, L, E)) for q; k and v contiguous unless given
LAYOUTS = {"contiguous": ((2, 4, 5, 8), (0, 1, 2, 3)), "blhe": ((2, 5, 4, 8), (0, 2, 1, 3)),
           "lbhe": ((5, 2, 4, 8), (1, 2, 0, 3)), "hble": ((4, 2, 5, 8), (1, 0, 2, 3)),
           "bhel": ((2, 4, 8, 5), (0, 1, 3, 2)), "one_query": ((2, 1, 4, 8), (0, 2, 1, 3))}


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"attn_mask": "float"}, {"dropout_p": 0.5}],
                         ids=["plain", "causal", "mask", "dropout"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_output_strides_follow_the_querys_layout_as_torchs(layout, kw):
    """torch's flash kernel lays its output out in the query's order (dropout takes its math path: contiguous),
    so `y.transpose(1, 2).view(B, L, H * E)` works on a head split of a (B, L, 3*H*E) projection."""
    made, perm = LAYOUTS[layout]
    q0 = np.random.default_rng(3).standard_normal(made).astype(np.float32)
    strides = []
    for lib in (tg, torch):
        q = lib.tensor(q0).permute(*perm)
        L = q.shape[2]
        kv = lib.ones(2, 4, 6, 8) if L == 1 else q
        args = dict(kw)
        if args.get("attn_mask") == "float":
            args["attn_mask"] = lib.zeros(L, kv.shape[2])
        if L == 1 and args.get("is_causal"):
            args["is_causal"] = False
        out = lib.nn.functional.scaled_dot_product_attention(q, kv, kv, **args)
        strides.append((tuple(out.stride()), out.is_contiguous()))
        if layout == "blhe" and not kw:
            assert tuple(out.transpose(1, 2).view(2, 5, 32).shape) == (2, 5, 32)
    assert strides[0] == strides[1]


BACKENDS = {"math": ["MATH"], "flash": ["FLASH_ATTENTION"], "both": ["MATH", "FLASH_ATTENTION"],
            "efficient": ["EFFICIENT_ATTENTION"], "cudnn_flash": ["CUDNN_ATTENTION", "FLASH_ATTENTION"]}


@pytest.mark.parametrize("dropout", [0.0, 0.5])
@pytest.mark.parametrize("backends", sorted(BACKENDS))
def test_sdpa_kernel_choices_give_torchs_layouts_and_errors(backends, dropout):
    """torch.nn.attention.sdpa_kernel: math alone gives the math path's contiguous output, flash alone the query's
    layout or torch's "No available kernel" where flash cannot run (dropout), neither of them its own error; the
    previous choice is back after the block."""
    q0 = np.random.default_rng(5).standard_normal((2, 5, 4, 8))
    seen = []
    for lib in (tg, torch):
        A = lib.nn.attention
        q = lib.tensor(q0).transpose(1, 2)
        before = A._cur_sdpa_kernel_backends()
        try:
            with A.sdpa_kernel([getattr(A.SDPBackend, b) for b in BACKENDS[backends]]):
                out = lib.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=dropout)
            seen.append(("ok", tuple(out.shape), tuple(out.stride()) if not dropout else None))
        except RuntimeError as e:
            seen.append(("error", str(e)))
        assert A._cur_sdpa_kernel_backends() == before
    assert seen[0] == seen[1]


def test_sdp_backend_names_and_sdpa_kernel_checks_as_torchs():
    for lib in (tg, torch):
        A = lib.nn.attention
        assert [(n, int(v), repr(v), str(v)) for n, v in A.SDPBackend.__members__.items()] == \
            [(n, int(v), repr(v), str(v)) for n, v in torch.nn.attention.SDPBackend.__members__.items()]
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a list of SDPBackend "
                                                 "instances, got str"):
            with A.sdpa_kernel("MATH"):
                pass


@pytest.mark.parametrize("variant", ["causal_upper_left", "causal_lower_right"])
def test_causal_bias_masks_attention_as_torchs(variant):
    import tapegrad.nn.attention.bias  # noqa: F401  (a submodule, imported as torch's is)
    import torch.nn.attention.bias  # noqa: F401
    arrays = _data([(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)], np.float64, 6)
    results = []
    for lib in (tg, torch):
        bias = getattr(lib.nn.attention.bias, variant)(3, 5)
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = lib.nn.functional.scaled_dot_product_attention(*ts, attn_mask=bias)
        out.sum().backward()
        results.append([type(bias).__name__, bias._materialize().numpy().tolist(), out.detach().numpy()] +
                       [t.grad.numpy() for t in ts])
    assert results[0][:2] == results[1][:2]
    for ours, theirs in zip(results[0][2:], results[1][2:]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)
    with pytest.raises(AssertionError, match=f"{variant} only supports 2D tensors"):
        getattr(tg.nn.attention.bias, variant)(1, 2, 3)


@pytest.mark.parametrize("causal", [False, True])
def test_bfloat16_attention_in_float32_rounded_once(causal):
    """bfloat16 q, k, v (a GPT under CPU autocast) through the row in float32, rounded once as torch's flash kernel
    accumulates: the float32 attention's values rounded (each step rounded to bfloat16 was 1 step off on a third of
    the outputs); within one bfloat16 step of torch's, gradients too."""
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((2, 2, 16, 8)).astype(np.float32) for _ in range(3)]
    seen = []
    for L in (tg, torch):
        q, k, v = (L.tensor(a).bfloat16().requires_grad_() for a in arrays)
        y = L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        (y.float() * L.linspace(-1.0, 1.0, y.numel()).reshape(y.shape)).sum().backward()
        seen.append([t.detach().float().numpy() for t in (y, q.grad, k.grad, v.grad)])
        if L is tg:
            exact = L.nn.functional.scaled_dot_product_attention(*(t.detach().float() for t in (q, k, v)),
                                                                 is_causal=causal)
            np.testing.assert_array_equal(seen[0][0], exact.bfloat16().float().numpy())
    for ours, theirs in zip(*seen):
        np.testing.assert_allclose(ours, theirs, rtol=2 ** -7, atol=2 ** -7 * np.abs(theirs).max())


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads", [(4, 2, 2), (4, 4, 2), (4, 1, 1)])
def test_grouped_query_attention_as_torch(heads, causal):
    """enable_gqa=True: key and value heads shared by groups of query heads (Llama's attention), values and
    gradients as torch's."""
    hq, hk, hv = heads
    arrays = _data([(2, hq, 3, 8), (2, hk, 5, 8), (2, hv, 5, 6)], np.float64, hq + hk)
    results = []
    for lib in (torch, tg):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays)
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
        results.append([t.detach().numpy() for t in (out, q.grad, k.grad, v.grad)])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_grouped_query_attention_refuses_heads_that_do_not_divide():
    for lib in (torch, tg):
        with pytest.raises(RuntimeError, match="Number of heads in key and value must divide"):
            lib.nn.functional.scaled_dot_product_attention(lib.randn(1, 4, 3, 8), lib.randn(1, 3, 5, 8),
                                                           lib.randn(1, 2, 5, 6), enable_gqa=True)
