"""Saved tensors against torch: `grad_fn._saved_*`, `torch.autograd.graph.saved_tensors_hooks` (what is packed, in
which order, what the backward reads), `_raw_saved_*.register_hooks`, `save_on_cpu` and
`disable_saved_tensors_hooks`, with torch's errors."""
import gc
import os
import threading

import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = (torch, tg)


def _inputs(lib, dtype="float64"):
    a = lib.tensor(np.array([1.5, 0.5, 2.0, 3.0], dtype), requires_grad=True)
    b = lib.tensor(np.array([2.0, 1.0, 0.5, 4.0], dtype), requires_grad=True)
    return a, b


def _log_hooks(lib, log):
    def pack(t):
        log.append(("pack", np.asarray(t.detach().numpy(), float).round(6).tolist()))
        return t

    def unpack(t):
        log.append(("unpack", np.asarray(t.detach().numpy(), float).round(6).tolist()))
        return t
    return lib.autograd.graph.saved_tensors_hooks(pack, unpack)


# Ops whose saved tensors are torch's, in torch's order (what each node saves, packs and unpacks)
HOOKED = {
    "mul": lambda L, a, b: a * b,
    "mul_b_no_grad": lambda L, a, b: a * b.detach(),
    "square": lambda L, a, b: a * a,
    "exp": lambda L, a, b: L.exp(a),
    "tanh_mul": lambda L, a, b: L.tanh(a) * b,
    "sigmoid": lambda L, a, b: L.sigmoid(a),
    "pow_scalar": lambda L, a, b: a.pow(2),
    "pow_tensor": lambda L, a, b: a.pow(b),
    "relu": lambda L, a, b: L.relu(a),
    "sin_log_sqrt": lambda L, a, b: L.sin(a) + L.log(a) + L.sqrt(b),
    "sub_sum_mean": lambda L, a, b: (a - b).sum() + a.mean(),
    "abs": lambda L, a, b: a.abs(),
    "maximum": lambda L, a, b: L.maximum(a, b),
    "atan2": lambda L, a, b: L.atan2(a, b),
    "softmax": lambda L, a, b: L.softmax(a, 0),
    "log_softmax": lambda L, a, b: L.log_softmax(a, 0),
    "mm": lambda L, a, b: a.reshape(2, 2) @ b.reshape(2, 2),
    "bmm": lambda L, a, b: L.bmm(a.reshape(1, 2, 2), b.reshape(1, 2, 2)),
    "dot": lambda L, a, b: a @ b,
    "where": lambda L, a, b: L.where(a > 1, a, b),
    "clamp": lambda L, a, b: a.clamp(0.5, 2.0),
    "cat_index_expand": lambda L, a, b: L.cat([a[1:3], b]).reshape(6, 1).expand(6, 2),
    "mse_loss": lambda L, a, b: L.nn.functional.mse_loss(a, b),
    "conv1d": lambda L, a, b: L.nn.functional.conv1d(a.reshape(1, 1, 4), b[:2].reshape(1, 1, 2)),
    "gelu": lambda L, a, b: L.nn.functional.gelu(a),
    "chain": lambda L, a, b: L.tanh(L.exp(a * b) / 10) * a,
}


@pytest.mark.parametrize("name", sorted(HOOKED))
def test_hooks_pack_and_unpack_what_torch_saves_in_its_order(name):
    logs, grads = [], []
    for lib in LIBS:
        log = []
        a, b = _inputs(lib)
        with _log_hooks(lib, log):
            y = HOOKED[name](lib, a, b)
        log.append("backward")
        y.sum().backward()
        logs.append(log)
        grads.append([None if t.grad is None else t.grad.numpy() for t in (a, b)])
    assert logs[1] == logs[0]
    for g_tg, g_torch in zip(*reversed(grads)):
        assert (g_tg is None) == (g_torch is None)
        if g_tg is not None:
            np.testing.assert_allclose(g_tg, g_torch, rtol=1e-12)


HOOK_PAIRS = {  # (pack, unpack) given the library
    "scaled": lambda L: (lambda t: t * 4, lambda p: p / 4),
    "zeroed": lambda L: (lambda t: t, lambda p: p * 0),
    "numpy_copy": lambda L: (lambda t: t.detach().numpy().copy(), lambda p: L.from_numpy(p)),
    "shifted": lambda L: (lambda t: t, lambda p: p + 1),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pair", sorted(HOOK_PAIRS))
def test_backward_reads_what_unpack_returns(pair, dtype):
    results = []
    for lib in LIBS:
        a, b = _inputs(lib, dtype)
        with lib.autograd.graph.saved_tensors_hooks(*HOOK_PAIRS[pair](lib)):
            y = (a.pow(2) * b).exp()
        y.sum().backward()
        results.append((a.grad.numpy(), b.grad.numpy(), str(a.grad.dtype).split(".")[-1]))
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=rtol)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=rtol)
    assert results[1][2] == results[0][2]


def test_any_python_object_as_packed_and_a_list_of_them():
    storage = {lib: [] for lib in LIBS}
    grads = []
    for lib in LIBS:
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)

        def pack(t, s=storage[lib]):
            s.append(t)
            return len(s) - 1

        with lib.autograd.graph.saved_tensors_hooks(pack, lambda i, s=storage[lib]: s[i]):
            y = x * x
        y.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert len(storage[tg]) == len(storage[torch]) == 2


def test_hooks_around_a_custom_function_pack_its_saved_tensors():
    logs = []
    for lib in LIBS:
        log = []

        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x ** 3
                ctx.save_for_backward(x, y)
                return y

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                log.append("in backward")
                return g * 3 * y / x

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        with _log_hooks(lib, log):
            z = Cube.apply(a)
        z.sum().backward()
        log.append(a.grad.tolist())
        logs.append(log)
    assert logs[1] == logs[0]


def test_unpack_must_return_a_tensor_and_pack_must_not_write_its_input():
    for lib in LIBS:
        x = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: 5, lambda p: p):
            y = x * x
        with pytest.raises(TypeError, match="^Output of saved tensor unpack_hook expected to be a Tensor but got "
                                            "result of type int$"):
            y.sum().backward()
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1), lambda p: p):
            with pytest.raises(RuntimeError, match="^A saved tensor pack hook is modifying its input in place. "
                                                   "Tensors provided as input to pack hook cannot be modified"):
                x.detach().requires_grad_() * x
        assert x.grad is None


def test_unpack_of_another_size_raises_before_any_kernel_reads_it():
    x = tg.ones(2, requires_grad=True)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: tg.zeros(1000)):
        y = x * x
    with pytest.raises(RuntimeError, match=r"unpack_hook \[1000\] must match the size of the saved tensor \[2\]"):
        y.sum().backward()
    assert x.grad is None
    y2 = x * x  # (the tape, and x, are as before)
    y2.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_unpack_of_another_dtype_is_cast_as_torchs_backward_casts():
    results = []
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p.double() * 3):
            y = x * x
        y.sum().backward()
        results.append((x.grad.numpy(), str(x.grad.dtype).split(".")[-1]))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


def test_grad_mode_inside_the_hooks():
    seen = {lib: [] for lib in LIBS}
    for lib in LIBS:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        pack = lambda t, s=seen[lib], L=lib: s.append(("pack", L.is_grad_enabled(), (t * 2).requires_grad)) or t
        unpack = lambda p, s=seen[lib], L=lib: s.append(("unpack", L.is_grad_enabled())) or p
        for create_graph in (False, True):
            with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
                y = x.pow(3)
            g, = lib.autograd.grad(y.sum(), x, create_graph=create_graph)
            if create_graph:
                g.sum().backward()
                seen[lib].append(x.grad.tolist())
    assert seen[tg] == seen[torch]


def test_innermost_hooks_apply_and_save_on_cpu_stops_outer_ones():
    logs = []
    for lib in LIBS:
        log = []
        G = lib.autograd.graph
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        with G.saved_tensors_hooks(lambda t: log.append("outer") or t, lambda p: p):
            with G.saved_tensors_hooks(lambda t: log.append("inner") or t, lambda p: p):
                y = x.exp()
            with G.save_on_cpu():
                z = x.exp()
            w = x.sin()
        (y + z + w).sum().backward()
        log.append(x.grad.tolist())
        logs.append(log)
    assert logs[1] == logs[0]


def test_hooks_are_per_thread():
    log = []
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    other = {}

    def record_elsewhere():
        y = x * x
        y.sum().backward()
        other["grad"] = x.grad.tolist()

    with tg.autograd.graph.saved_tensors_hooks(lambda t: log.append("pack") or t, lambda p: p):
        thread = threading.Thread(target=record_elsewhere)
        thread.start()
        thread.join()
    assert log == [] and other["grad"] == [2.0, 4.0]


def test_packed_objects_are_freed_with_the_graph():
    freed = []

    class Packed:
        def __init__(self, t):
            self.t = t

        def __del__(self):
            freed.append(1)

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.autograd.graph.saved_tensors_hooks(Packed, lambda p: p.t):
        y = (x * x).exp()
    y.sum().backward(retain_graph=True)
    gc.collect()
    assert freed == []
    y.sum().backward()
    gc.collect()
    assert len(freed) == 3
    np.testing.assert_allclose(x.grad.numpy(), 2 * (2 * x * (x * x).exp()).detach().numpy())


def test_saved_tensors_on_disk_as_in_the_tutorial(tmp_path):
    results = []
    for lib in LIBS:
        def pack(t, lib=lib):
            name = os.path.join(tmp_path, f"{lib.__name__}-{len(os.listdir(tmp_path))}")
            lib.save(t, name)
            return name

        model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 1)).double()
        with lib.no_grad():
            for k, p in enumerate(model.parameters()):
                p.copy_(lib.tensor(np.linspace(-1, 1, p.numel()).reshape(p.shape) * (k + 1)))
        x = lib.tensor(np.linspace(0, 1, 12).reshape(3, 4))
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda name, lib=lib: lib.load(name)):
            loss = model(x).pow(2).sum()
        loss.backward()
        results.append([p.grad.numpy() for p in model.parameters()])
    for g_tg, g_torch in zip(*reversed(results)):
        np.testing.assert_allclose(g_tg, g_torch, rtol=1e-12)


# -- grad_fn._saved_* ---------------------------------------------------------------------------------------
def test_saved_attributes_are_torchs():
    for lib in LIBS:
        a, b = _inputs(lib)
        y = a * b
        assert y.grad_fn._saved_self is a and y.grad_fn._saved_other is b
        e = lib.exp(a)
        assert e.grad_fn._saved_result.equal(e) and e.grad_fn._saved_result is not e
        assert "ExpBackward0" in repr(e.grad_fn._saved_result)
        p = a.pow(2)
        assert p.grad_fn._saved_self is a and p.grad_fn._saved_exponent == 2
        assert type(p.grad_fn._saved_exponent) is int
        m = a.reshape(2, 2) @ b.reshape(2, 2)
        assert m.grad_fn._saved_mat2.equal(b.reshape(2, 2)) and m.grad_fn._saved_self.equal(a.reshape(2, 2))
        t = lib.tanh(a * b)
        assert t.grad_fn._saved_result.equal(t)
        with pytest.raises(AttributeError, match="^'MulBackward0' object has no attribute '_saved_foo'$"):
            y.grad_fn._saved_foo
        with pytest.raises(AttributeError, match="^'ExpBackward0' object has no attribute '_saved_self'$"):
            e.grad_fn._saved_self
        y.sum().backward(retain_graph=True)
        assert y.grad_fn._saved_self is a
        y.sum().backward()
        with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
            y.grad_fn._saved_self


def test_saved_attribute_under_hooks_is_unpacked_at_each_access():
    outputs = []
    for lib in LIBS:
        log = []
        x = lib.ones(3, requires_grad=True)
        with _log_hooks(lib, log):
            y = x.pow(2)
            e = x.exp()
        log.append(y.grad_fn._saved_self.tolist())
        log.append(y.grad_fn._saved_self.tolist())
        log.append(repr(e.grad_fn._saved_result))
        outputs.append(log)
    assert outputs[1] == outputs[0]


def test_raw_saved_tensor_register_hooks():
    outputs = []
    for lib in LIBS:
        log = []
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = x.exp()
        raw = y.grad_fn._raw_saved_result
        raw.register_hooks(lambda t: log.append(("pack", t.tolist())) or t * 2,
                           lambda p: log.append(("unpack", p.tolist())) or p / 2)
        log.append(y.grad_fn._saved_result.tolist())
        with pytest.raises(RuntimeError, match="^Calling register_hooks on a saved tensor whose hooks have already "
                                               "been set. Hint: only one pair of hooks is allowed at a time.$"):
            raw.register_hooks(lambda t: t, lambda p: p)
        with pytest.raises(TypeError, match="^register_hooks\\(\\): incompatible function arguments"):
            y.grad_fn._raw_saved_result.register_hooks(1, lambda p: p)
        y.sum().backward()
        log.append(x.grad.tolist())
        outputs.append(log)
    assert outputs[1] == outputs[0]


def test_a_function_with_hooks_under_compile_runs_them_eagerly():
    log = []

    def f(x):
        with tg.autograd.graph.saved_tensors_hooks(lambda t: log.append("pack") or t, lambda p: p):
            return (x * x).sum()

    compiled = tg.compile(f)
    x = tg.tensor([1.0, 3.0], requires_grad=True)
    for _ in range(2):
        compiled(x).backward()
    assert log == ["pack"] * 4
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 12.0])


@pytest.mark.parametrize("hooks", ["save_on_cpu", "saved_tensors_hooks"])
def test_disable_saved_tensors_hooks_refuses_them_with_its_message(hooks):
    for lib in LIBS:
        G = lib.autograd.graph
        make = (lambda: G.save_on_cpu()) if hooks == "save_on_cpu" else (lambda: G.saved_tensors_hooks(id, id))
        with G.disable_saved_tensors_hooks("no hooks in this block"):
            with pytest.raises(RuntimeError, match="no hooks in this block"):
                with make():
                    pass
        with make() if hooks == "save_on_cpu" else G.save_on_cpu():  # (allowed again after the block)
            pass


def test_save_on_cpu_gives_torchs_gradients():
    results = []
    for lib in LIBS:
        x = lib.tensor(np.arange(1.0, 4.0), requires_grad=True)
        with lib.autograd.graph.save_on_cpu(pin_memory=False):
            y = (x * x).sum() + x.exp().sum()
        y.backward()
        results.append(x.grad.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-15)
