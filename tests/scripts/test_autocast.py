"""torch.autocast("cpu") enabled: the ops on torch's CPU autocast lists run in bfloat16 or float16 (matmul, mm, bmm,
linear, conv, einsum, prelu: float32 operands cast, float64 left alone), its float32 list (losses, prod) in
float32, other ops as their inputs say; gradients flow back through the casts to float32 parameters.
Compared with torch 2.13: dtypes exactly, values within bfloat16 rounding."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad


def dtypes_inside(t):
    F = t.nn.functional
    t.manual_seed(0)
    x, w = t.randn(4, 6), t.randn(3, 6)
    img, k = t.randn(1, 2, 5, 5), t.randn(3, 2, 3, 3)
    y = t.tensor([0, 1, 2, 0])
    cases = {
        "linear": lambda: F.linear(x, w, w[:, 0]), "matmul": lambda: x @ w.T, "mm": lambda: t.mm(x, w.T),
        "bmm": lambda: t.bmm(x[None], w.T[None]), "conv2d": lambda: F.conv2d(img, k),
        "einsum": lambda: t.einsum("ij,kj->ik", x, w), "prelu": lambda: F.prelu(x, t.ones(1)),
        "conv_transpose2d": lambda: F.conv_transpose2d(img, k.transpose(0, 1), stride=2),
        "conv3d": lambda: F.conv3d(img[:, :, None], k[:, :, None]),
        "mv (not listed)": lambda: t.mv(x, w[0]), "dot (not listed)": lambda: t.dot(x[0], w[0]),
        "float64 stays": lambda: F.linear(x.double(), w.double()),
        "cross_entropy": lambda: F.cross_entropy(F.linear(x, w), y),
        "nll_loss": lambda: F.nll_loss(F.linear(x, w), y),
        "mse_loss": lambda: F.mse_loss(F.linear(x, w), t.zeros(4, 3)),
        "l1_loss": lambda: F.l1_loss(x @ w.T, t.zeros(4, 3)),
        "bce_logits": lambda: F.binary_cross_entropy_with_logits(x @ w.T, t.zeros(4, 3)),
        "smooth_l1": lambda: F.smooth_l1_loss(x @ w.T, t.zeros(4, 3)),
        "huber": lambda: F.huber_loss(x @ w.T, t.zeros(4, 3)),
        "prod": lambda: (x @ w.T).prod(), "relu after": lambda: F.relu(x @ w.T),
        "softmax after": lambda: t.softmax(x @ w.T, -1),
        "add float32": lambda: x @ w.T + t.ones(3), "sum after": lambda: (x @ w.T).sum(),
        "Linear module": lambda: t.nn.Linear(6, 3)(x), "Conv2d module": lambda: t.nn.Conv2d(2, 3, 3)(img),
        "sdpa": lambda: F.scaled_dot_product_attention(x[None], x[None], x[None]),
        "addmm": lambda: t.addmm(t.zeros(3), x, w.T), "baddbmm": lambda: t.baddbmm(t.zeros(1, 4, 3), x[None], w.T[None]),
        "addbmm": lambda: t.addbmm(t.zeros(4, 3), x[None], w.T[None]),
        "mm out= (not autocast)": lambda: t.mm(x, w.T, out=t.empty(4, 3)),
        "matmul of float32 and float16": lambda: x @ w.T.half(),
    }
    with t.autocast("cpu"):
        assert t.is_autocast_enabled("cpu") and not t.is_autocast_enabled()
        out = {name: str(f().dtype) for name, f in cases.items()}
        with t.autocast("cpu", enabled=False):
            assert not t.is_autocast_enabled("cpu")
            out["nested disabled"] = str(F.linear(x, w).dtype)
        out["after the nested region"] = str(F.linear(x, w).dtype)
    out["after the region"] = str(F.linear(x, w).dtype)
    assert not t.is_autocast_enabled("cpu")
    return out


def test_the_ops_dtypes_inside_a_region_are_torchs():
    got, want = dtypes_inside(tapegrad), dtypes_inside(torch)
    assert got == want
    assert want["linear"] == "torch.bfloat16" and want["cross_entropy"] == "torch.float32"


def train(t, model_kind, steps=3, dtype="bfloat16"):
    F = t.nn.functional
    t.manual_seed(0)
    if model_kind == "mlp":
        model = t.nn.Sequential(t.nn.Linear(8, 16), t.nn.ReLU(), t.nn.Linear(16, 3))
        x = t.linspace(-2, 2, 64).reshape(8, 8)
    else:
        model = t.nn.Sequential(t.nn.Conv2d(1, 4, 3), t.nn.ReLU(), t.nn.Flatten(), t.nn.Linear(4 * 4 * 4, 3))
        x = t.linspace(-2, 2, 8 * 36).reshape(8, 1, 6, 6)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    y = t.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    opt = t.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with t.autocast("cpu", dtype=getattr(t, dtype)):
            out = model(x)
            loss = F.cross_entropy(out, y)
        assert out.dtype == getattr(t, dtype) and loss.dtype == t.float32
        loss.backward()
        opt.step()
        losses.append(loss.item())
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    assert all(p.dtype == t.float32 and p.grad.dtype == t.float32 for p in model.parameters())
    return state, losses, grads


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("model_kind", ["mlp", "cnn"])
def test_training_under_autocast_follows_torch(model_kind, dtype):
    (s1, l1, g1), (s2, l2, g2) = train(tapegrad, model_kind, dtype=dtype), train(torch, model_kind, dtype=dtype)
    for k in s1:
        np.testing.assert_array_equal(s1[k], s2[k])  # the same start (torch's init stream)
    np.testing.assert_allclose(l1, l2, rtol=2e-2)
    for a, b in zip(g1, g2):  # bfloat16 products: a few bfloat16 steps of the largest gradient
        np.testing.assert_allclose(a, b, atol=3e-2 * np.abs(b).max(), rtol=3e-2)


def test_region_values_match_torchs_bfloat16():
    def run(t):
        x = t.tensor([[0.5, -1.25, 2.0, 0.75], [1.5, 0.25, -0.5, 3.0]])
        w = t.tensor([[1.0, 0.5, -0.25, 2.0], [0.125, -1.0, 1.5, 0.5]], requires_grad=True)
        with t.autocast("cpu"):
            y = t.nn.functional.linear(x, w)
        y.float().pow(2).sum().backward()
        return y.float().tolist(), w.grad.tolist()
    got, want = run(tapegrad), run(torch)
    assert got == want  # (values exact in bfloat16: no rounding differs)


def test_unsupported_dtypes_as_torch():
    for t in (tapegrad, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with t.autocast("cpu", dtype=t.float64):
                assert t.nn.functional.linear(t.ones(2, 2), t.ones(2, 2)).dtype == t.float32
        assert "In CPU autocast, but the target dtype is not supported" in str(caught[0].message)


def test_float16_region_values_match_torchs():
    """CPU autocast to float16 (torch's lists, as bfloat16's): linear, conv2d, matmul and bmm within one float16
    step of torch's (equal bits on the machines measured; torch's float16 kernels differ between CPUs, so the
    oracle allows their rounding), the float32 loss and the float32 parameters' gradients likewise."""
    rng = np.random.default_rng(0)
    X, W1 = rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((64, 32)).astype(np.float32) * 0.2
    W2, Y = rng.standard_normal((10, 64)).astype(np.float32) * 0.2, rng.integers(0, 10, 16)
    C, K = rng.standard_normal((2, 3, 8, 8)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    res = []
    for t in (tapegrad, torch):
        x, w1, w2 = t.tensor(X), t.tensor(W1, requires_grad=True), t.tensor(W2, requires_grad=True)
        c, k = t.tensor(C, requires_grad=True), t.tensor(K, requires_grad=True)
        with t.autocast("cpu", dtype=t.float16):
            h = t.nn.functional.linear(x, w1)
            loss = t.nn.functional.cross_entropy(t.nn.functional.linear(t.relu(h), w2), t.tensor(Y))
            cv = t.nn.functional.conv2d(c, k, padding=1)
            bm = t.bmm(x.reshape(2, 8, 32), w1.t().reshape(1, 32, 64).expand(2, 32, 64))
        (loss + cv.float().sum() * 1e-3 + bm.float().sum() * 1e-3).backward()
        res.append(([str(v.dtype) for v in (h, loss, cv, bm)], [v.detach().float().numpy() for v in (h, cv, bm)],
                    loss.item(), [v.grad.numpy() for v in (w1, w2, k, c)]))
    assert res[0][0] == res[1][0] == ["torch.float16", "torch.float32", "torch.float16", "torch.float16"]
    for a, b in zip(res[0][1], res[1][1]):
        np.testing.assert_allclose(a, b, rtol=2 ** -10, atol=2 ** -14)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-6)
    for a, b in zip(res[0][3], res[1][3]):
        np.testing.assert_allclose(a, b, atol=2 ** -10 * np.abs(b).max(), rtol=2 ** -10)


def test_decorator_form():
    for t in (tapegrad, torch):
        @t.autocast("cpu")
        def f(a):
            return a @ a
        assert f(t.ones(2, 2)).dtype == t.bfloat16
        assert (t.ones(2, 2) @ t.ones(2, 2)).dtype == t.float32


def _settings_program(L):
    """torch's autocast settings API: each device type's flag and dtype, regions saving and restoring both, the
    deprecated CPU/GPU forms (with their DeprecationWarnings), the cache switches, torch's errors."""
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mm = lambda: str((L.ones(2, 2) @ L.ones(2, 2)).dtype)  # noqa: E731
        out += [L.amp.is_autocast_available("cpu"), L.amp.is_autocast_available("cuda"),
                L.amp.is_autocast_available("meta"), str(L.get_autocast_dtype("cpu")), str(L.get_autocast_dtype("cuda")),
                L.is_autocast_enabled("cpu"), L.is_autocast_enabled()]
        with L.autocast("cpu", dtype=L.float16):
            out += [str(L.get_autocast_dtype("cpu")), L.is_autocast_enabled("cpu"), L.is_autocast_cpu_enabled(),
                    str(L.get_autocast_cpu_dtype()), mm()]
            with L.autocast("cpu", enabled=False):
                out += [L.is_autocast_enabled("cpu"), mm()]
        out += [str(L.get_autocast_dtype("cpu")), L.is_autocast_enabled("cpu")]
        L.set_autocast_enabled("cpu", True)
        out += [L.is_autocast_enabled("cpu"), mm()]
        L.set_autocast_dtype("cpu", L.float16)
        out.append(mm())
        L.set_autocast_enabled("cpu", False)
        out += [mm(), str(L.get_autocast_dtype("cpu"))]
        L.set_autocast_cpu_dtype(L.bfloat16)
        out += [str(L.get_autocast_dtype("cpu")), L.is_autocast_cache_enabled()]
        L.clear_autocast_cache()
        L.set_autocast_cache_enabled(False)
        out.append(L.is_autocast_cache_enabled())
        L.set_autocast_cache_enabled(True)
        out.append(str(L.get_autocast_gpu_dtype()))
        for bad in ("foo", "meta"):
            with pytest.raises(RuntimeError) as e:
                L.is_autocast_enabled(bad)
            out.append(str(e.value))
    # (torch's warnings end with "(Triggered internally at <its C++ source>)", which tapegrad does not add)
    return out + [sorted(str(w.message).split(" (Triggered internally")[0] for w in caught)]


def test_autocast_settings_are_torchs():
    assert _settings_program(tapegrad) == _settings_program(torch)
