"""Hooks on autograd nodes: grad_fn.register_prehook / register_hook, a leaf's AccumulateGrad's, grad_fn.metadata.
Each scenario runs on tapegrad and on torch 2.13 in the same test, and what the hooks saw (values of the gradients,
None where torch gives None, call order), the final .grad and the errors are compared."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import tapegrad

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _plain(v):
    """Hook arguments and results as comparable Python data (tensors as float64 arrays)."""
    if v is None or isinstance(v, (str, bool, int, float)):
        return v
    if isinstance(v, (tuple, list)):
        return tuple(_plain(x) for x in v)
    if isinstance(v, (torch.Tensor, tapegrad.Tensor)):
        return np.asarray(v.detach().numpy(), np.float64)
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _same(a, b, path="", rtol=1e-5, atol=1e-6):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), (path, a, b)
        assert a.shape == b.shape, (path, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=path)
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]", rtol, atol)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), (path, a, b)
        for k in a:
            _same(a[k], b[k], f"{path}.{k}", rtol, atol)
    else:
        assert a == b, (path, a, b)


def both(scenario, **kw):
    """Run scenario(lib, log) on tapegrad and torch; compare what it logged and returned."""
    got, want = [], []
    got_out = scenario(tapegrad, got.append)
    want_out = scenario(torch, want.append)
    _same(_plain(got), _plain(want), **kw)
    _same(_plain(got_out), _plain(want_out), **kw)
    return got, got_out


def _data(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _leaf(t, shape, seed=0):
    return t.tensor(_data(shape, seed), requires_grad=True)


# -- op kinds ------------------------------------------------------------------------------------------------
def test_elementwise_pre_and_post_hooks():
    def s(t, log):
        x = _leaf(t, (3, 4))
        y = x.exp()
        y.grad_fn.register_prehook(lambda go: log(("pre", go)))
        y.grad_fn.register_hook(lambda gi, go: log(("post", gi, go)))
        (y * y).sum().backward()
        return x.grad
    both(s)


def test_hooks_replace_gradients_and_run_in_registration_order():
    def s(t, log):
        x = _leaf(t, (5,))
        y = x.tanh()
        node = y.grad_fn
        node.register_prehook(lambda go: log(("pre1", go)) or (go[0] * 2,))
        node.register_prehook(lambda go: log(("pre2", go)))
        node.register_prehook(lambda go: log(("pre3", go)) or (go[0] + 1,))
        node.register_hook(lambda gi, go: log(("post1", gi, go)) or (gi[0] * 10,))
        node.register_hook(lambda gi, go: log(("post2", gi, go)))
        (y * 3).sum().backward()
        return x.grad
    both(s)


def test_matmul_node_two_inputs():
    def s(t, log):
        a, b = _leaf(t, (3, 4), 1), _leaf(t, (4, 2), 2)
        y = a @ b
        y.grad_fn.register_prehook(lambda go: log(("pre", go)))
        y.grad_fn.register_hook(lambda gi, go: log(("post", gi, go)) or (gi[0], gi[1] * -1))
        y.pow(2).sum().backward()
        return a.grad, b.grad
    both(s)


def test_input_that_needs_no_grad_is_none():
    def s(t, log):
        a = _leaf(t, (3,), 1)
        c = t.tensor(_data((3,), 2))
        y = a * c
        y.grad_fn.register_hook(lambda gi, go: log(("post", gi, go)))
        z = a * 2.0
        z.grad_fn.register_hook(lambda gi, go: log(("scalar", gi, go)))
        w = t.where(a > 0, a, c)
        w.grad_fn.register_hook(lambda gi, go: log(("where", gi, go)))
        (y + z + w).sum().backward()
        return a.grad
    both(s)


def test_sum_node():
    def s(t, log):
        x = _leaf(t, (2, 3))
        y = x.sum(1)
        z = x.sum()
        y.grad_fn.register_prehook(lambda go: log(("pre", go)) or (go[0] * t.tensor([1.0, 2.0]),))
        y.grad_fn.register_hook(lambda gi, go: log(("post", gi, go)))
        z.grad_fn.register_hook(lambda gi, go: log(("all", gi, go)))
        (y.square().sum() + z).backward()
        return x.grad
    both(s)


def test_view_node_reached_from_several_tensors():
    def s(t, log):
        x = _leaf(t, (3,))
        b = x * 1
        v = b.view(3, 1)
        v.grad_fn.register_hook(lambda gi, go: log(("view post", gi, go)))
        b.grad_fn.register_prehook(lambda go: log(("mul pre", go)))
        # the same node through next_functions: its hook is the node's
        v.grad_fn.next_functions[0][0].register_hook(lambda gi, go: log(("mul post", gi, go)))
        (v.sum() * 2 + b.sum()).backward()
        return x.grad
    both(s)


def test_node_of_a_view_of_a_slice():
    def s(t, log):
        x = _leaf(t, (4, 3))
        y = x * 2.0
        r = y[1]
        r.grad_fn.register_prehook(lambda go: log(("select pre", go)) or (go[0] * 5,))
        r.grad_fn.register_hook(lambda gi, go: log(("select post", gi, go)))
        (r.sum() + y.sum()).backward()
        return x.grad
    both(s)


class _Scale:
    @staticmethod
    def make(t):
        class Scale(t.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * 2, y * 3

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 * 2, g2 * 3
        return Scale

    @staticmethod
    def single(t):
        class Cube(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 3 * x * x * g
        return Cube


def test_custom_function_node():
    def s(t, log):
        x = _leaf(t, (4,))
        y = _Scale.single(t).apply(x)
        assert y.grad_fn.name() == "CubeBackward"
        y.grad_fn.register_prehook(lambda go: log(("pre", go)) or (go[0] * 2,))
        y.grad_fn.register_hook(lambda gi, go: log(("post", gi, go)))
        y.sum().backward()
        return x.grad
    both(s)


def test_custom_function_with_two_outputs():
    def s(t, log):
        a, b = _leaf(t, (3,), 1), _leaf(t, (2,), 2)
        p, q = _Scale.make(t).apply(a, b)
        assert p.grad_fn is q.grad_fn
        p.grad_fn.register_prehook(lambda go: log(("pre", go)))
        q.grad_fn.register_hook(lambda gi, go: log(("post", gi, go)))
        p.sum().backward(retain_graph=True)          # q gets no gradient: None to the hooks
        (p.sum() + (q * 4).sum()).backward(retain_graph=True)
        q.sum().backward()                           # p gets none
        return a.grad, b.grad
    both(s)


def test_linear_module_output():
    def s(t, log):
        t.manual_seed(0)
        lin = t.nn.Linear(4, 3)
        with t.no_grad():
            lin.weight.copy_(t.tensor(_data((3, 4), 1)))
            lin.bias.copy_(t.tensor(_data((3,), 2)))
        x = t.tensor(_data((5, 4), 3))
        y = lin(x)
        log(y.grad_fn.name())
        y.grad_fn.register_prehook(lambda go: log(("pre", go)) or (go[0] * 2,))
        gi_seen = []
        y.grad_fn.register_hook(lambda gi, go: gi_seen.append(gi))
        y.tanh().sum().backward()
        # torch's AddmmBackward0 lists (bias, input, weight.t()), tapegrad's row (input, weight, bias): the same
        # gradients, in another order and the weight's untransposed
        gi, = gi_seen
        log(sorted(tuple(sorted(g.detach().numpy().ravel().round(4).tolist())) for g in gi if g is not None))
        log(sum(g is None for g in gi))
        return lin.weight.grad, lin.bias.grad
    both(s, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("how", ["unbind", "split", "chunk", "split_with_sizes"])
def test_multi_output_node(how):
    def s(t, log):
        x = _leaf(t, (3, 2))
        if how == "unbind":
            p, q, r = x.unbind()
        elif how == "split":
            p, q, r = x.split(1)
        elif how == "chunk":
            p, q, r = x.chunk(3)
        else:
            p, q, r = x.split([1, 1, 1])
        x.unbind()  # (another call on x: another node)
        p.grad_fn.register_prehook(lambda go: log(("pre", go)))
        q.grad_fn.register_hook(lambda gi, go: log(("post", gi, go)))
        (p * 2).sum().backward(retain_graph=True)
        (p.sum() + r.sum() * 3).backward(retain_graph=True)
        h = r.grad_fn.register_prehook(lambda go: (go[0] * 2, None, None))   # drops r's gradient
        (p.sum() + r.sum()).backward(retain_graph=True)
        h.remove()
        r.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 1,))
        q.sum().backward()
        return x.grad
    both(s)


def test_multi_output_node_with_tensor_hooks():
    def s(t, log):
        x = _leaf(t, (2, 3))
        a, b = x.unbind()
        a.register_hook(lambda g: log(("a hook", g)) or g * 10)
        b.register_hook(lambda g: log(("b hook", g)))
        a.grad_fn.register_prehook(lambda go: log(("pre", go)))
        (a.sum() + 2 * b.sum()).backward()
        return x.grad
    both(s)


def test_max_dim_node():
    def s(t, log):
        x = _leaf(t, (3, 4))
        m, i = x.max(1)
        m.grad_fn.register_prehook(lambda go: log(("pre", go)))
        m.grad_fn.register_hook(lambda gi, go: log(("post", gi, go)))
        (m * m).sum().backward()
        return x.grad
    both(s)


# -- order, removal, persistence -----------------------------------------------------------------------------
def test_order_with_tensor_hooks_retain_grad_and_accumulate_grad():
    def s(t, log):
        x = _leaf(t, (3,))
        x.register_hook(lambda g: log(("x tensor", g)))
        x.register_post_accumulate_grad_hook(lambda p: log(("x post accumulate", p.grad)))
        y = x * 2
        y.register_hook(lambda g: log(("y tensor", g)) or g * 10)
        y.retain_grad()
        y.grad_fn.register_prehook(lambda go: log(("pre", go)) or (go[0] * 3,))
        y.grad_fn.register_hook(lambda gi, go: log(("post", gi, go)) or (gi[0] + 1, None))
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log(("acc pre", go)))
        acc.register_hook(lambda gi, go: log(("acc post", gi, go)))
        y.sum().backward()
        return x.grad, y.grad
    both(s)


def test_remove_and_persistence_across_retain_graph():
    def s(t, log):
        x = _leaf(t, (3,))
        y = x.sigmoid()
        h1 = y.grad_fn.register_prehook(lambda go: log("pre1"))
        h2 = y.grad_fn.register_hook(lambda gi, go: log("post1"))
        y.grad_fn.register_hook(lambda gi, go: log("post2"))
        z = y.sum()
        z.backward(retain_graph=True)
        z.backward(retain_graph=True)
        h1.remove()
        h2.remove()
        h2.remove()  # (twice: nothing more)
        log("removed")
        z.backward(retain_graph=True)
        with y.grad_fn.register_prehook(lambda go: log("ctx")):
            z.backward(retain_graph=True)
        z.backward()
        return x.grad
    both(s)


def test_removing_every_hook_lets_the_replay_run_the_row():
    x = tapegrad.randn(4, requires_grad=True)
    y = x.exp()
    tape, row = y._tape, y._slot
    h = y.grad_fn.register_hook(lambda gi, go: None)
    assert tape.flags[row] & tapegrad.tape.F_STOP
    h.remove()
    assert not tape.flags[row] & tapegrad.tape.F_STOP
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()), rtol=1e-6)


def test_autograd_grad_runs_node_hooks_not_accumulate_grads():
    def s(t, log):
        a, b = _leaf(t, (3,), 1), _leaf(t, (3,), 2)
        y = a * b
        y.grad_fn.register_hook(lambda gi, go: log(("post", gi, go)))
        y.grad_fn.register_prehook(lambda go: log(("pre", go)))
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log("acc pre"))
        acc.register_hook(lambda gi, go: log("acc post"))
        g, = t.autograd.grad(y.sum(), a, retain_graph=True)
        g2 = t.autograd.grad(y.sum(), (a, b))
        return g, g2, a.grad
    both(s)


def test_accumulate_grad_hooks():
    def s(t, log):
        x = _leaf(t, (3,))
        y = x.exp()
        acc = y.grad_fn.next_functions[0][0]
        log(acc.name())
        acc.register_prehook(lambda go: log(("pre", go)) or (go[0] * 0 + 1,))
        acc.register_hook(lambda gi, go: log(("post", gi, go)))
        y.sum().backward(retain_graph=True)
        log(("grad", x.grad.clone()))
        y.sum().backward(inputs=[x])
        h = (x * 2).grad_fn.next_functions[0][0].register_prehook(lambda go: (None,))  # the same node: no .grad
        x.grad = None
        (x * 3).sum().backward()
        log(("dropped", None if x.grad is None else x.grad.clone()))
        h.remove()
        (x * 3).sum().backward()
        return x.grad
    both(s)


def test_accumulate_grad_hooks_kept_by_reference():
    """The usual idiom (DDP's): keep the AccumulateGrad of a parameter, hook it, and every later graph's
    accumulation into that parameter calls the hook."""
    def s(t, log):
        p = _leaf(t, (2,))
        acc = p.view_as(p).grad_fn.next_functions[0][0]
        acc.register_hook(lambda gi, go: log(("post", go)))
        for k in range(2):
            (p * (k + 1)).sum().backward()
        return p.grad
    both(s)


def test_metadata():
    for t in (tapegrad, torch):
        x = _leaf(t, (2,))
        y = x * x
        md = y.grad_fn.metadata
        assert md == {} and y.grad_fn.metadata is md
        md["k"] = 1
        assert y.grad_fn.metadata == {"k": 1}
        z = y + 1
        assert z.grad_fn.next_functions[0][0].metadata is md
        acc = y.grad_fn.next_functions[0][0]
        acc.metadata["a"] = 2
        assert acc.metadata == {"a": 2}


def test_freed_node_takes_hooks():
    def s(t, log):
        x = _leaf(t, (2,))
        y = x.exp()
        y.sum().backward()
        h = y.grad_fn.register_hook(lambda gi, go: log("never"))
        h.remove()
        return y.grad_fn.metadata
    both(s)


# -- errors --------------------------------------------------------------------------------------------------
ERRORS = {
    "post count": lambda t, y: y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0])),
    "pre count": lambda t, y: y.grad_fn.register_prehook(lambda go: (go[0], go[0])),
    "pre tensor": lambda t, y: y.grad_fn.register_prehook(lambda go: go[0]),
    "post tensor": lambda t, y: y.grad_fn.register_hook(lambda gi, go: gi[0]),
    "post list": lambda t, y: y.grad_fn.register_hook(lambda gi, go: list(gi)),
    "post int": lambda t, y: y.grad_fn.register_hook(lambda gi, go: 5),
    "post entry int": lambda t, y: y.grad_fn.register_hook(lambda gi, go: (5,)),
    "post size": lambda t, y: y.grad_fn.register_hook(lambda gi, go: (gi[0][:2],)),
    "pre size": lambda t, y: y.grad_fn.register_prehook(lambda go: (go[0][:2],)),
    "post dtype": lambda t, y: y.grad_fn.register_hook(lambda gi, go: (gi[0].double(),)),
    "pre dtype": lambda t, y: y.grad_fn.register_prehook(lambda go: (go[0].double(),)),
    "not callable": lambda t, y: y.grad_fn.register_prehook(5),
    "replace None": None,  # (a hook on mul's edge to a tensor that needs no grad: below)
    "acc pre count": lambda t, y: y.grad_fn.next_functions[0][0].register_prehook(lambda go: (go[0], go[0])),
}


@pytest.mark.parametrize("what", list(ERRORS))
def test_errors(what):
    def s(t, log):
        z = _leaf(t, (3,))
        y = z.exp()
        if what == "replace None":
            y2 = y * t.ones(3)
            y2.grad_fn.register_hook(lambda gi, go: (gi[0], t.ones(3)))
        else:
            y2 = y
            ERRORS[what](t, y)
        try:
            y2.sum().backward()
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return "no error"
    both(s)


# -- create_graph ----------------------------------------------------------------------------------------------
def test_create_graph():
    def s(t, log):
        x = _leaf(t, (3,))
        y = x ** 3
        y.grad_fn.register_prehook(lambda go: log(("pre", go, go[0].requires_grad, t.is_grad_enabled()))
                                   or (go[0] * 2,))
        y.grad_fn.register_hook(lambda gi, go: log(("post", gi, gi[0].requires_grad, t.is_grad_enabled()))
                                or (gi[0] * x,))
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log(("acc pre", go, go[0].requires_grad, t.is_grad_enabled())))
        g, = t.autograd.grad(y.sum(), x, create_graph=True)
        g2, = t.autograd.grad(g.sum(), x)  # through the hook's `* x` too
        y.sum().backward(create_graph=True)
        return g, g2, x.grad, x.grad.requires_grad
    both(s)


def test_create_graph_multi_output_and_function():
    def s(t, log):
        x = _leaf(t, (2, 3))
        a, b = x.unbind()
        a.grad_fn.register_prehook(lambda go: log(("pre", go)) or (go[0] * a, go[1]))
        c = _Scale.single(t).apply(a)
        c.grad_fn.register_hook(lambda gi, go: log(("cube post", gi)))
        g, = t.autograd.grad((c + b * b).sum(), x, create_graph=True)
        h, = t.autograd.grad(g.sum(), x)
        return g, h
    both(s)


def test_plain_backward_hooks_run_without_grad_mode():
    def s(t, log):
        x = _leaf(t, (3,))
        y = x.exp()
        y.grad_fn.register_hook(lambda gi, go: log((t.is_grad_enabled(), gi[0].requires_grad)))
        y.sum().backward()
        return x.grad
    both(s)


def test_anomaly_mode():
    def s(t, log):
        x = _leaf(t, (3,))
        y = x.exp()
        y.grad_fn.register_prehook(lambda go: log(("pre", go)) or (go[0] * 2,))
        with t.autograd.detect_anomaly():
            (y * 2).sum().backward()
        return x.grad
    both(s)


# -- the tape: compaction, large adjoint blocks (in a subprocess: the compiled replay reads raw addresses) ---------
def test_hooks_survive_compaction():
    x = tapegrad.randn(3, requires_grad=True)
    junk = [tapegrad.randn(3, requires_grad=True).exp() for _ in range(50)]
    y = x.exp()
    seen = []
    y.grad_fn.register_prehook(lambda go: seen.append(go[0].numpy().copy()) or (go[0] * 2,))
    del junk
    tape = y._tape
    tape.sweep()
    y.sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(x.detach().numpy()), rtol=1e-6)


def test_large_blocks_and_linear_rows_in_subprocess():
    code = textwrap.dedent("""
        import numpy as np, torch, tapegrad
        def run(t):
            seen = []
            rng = np.random.default_rng(0)
            x = t.tensor(rng.standard_normal((64, 128)).astype(np.float32), requires_grad=True)
            w = t.tensor(rng.standard_normal((32, 128)).astype(np.float32), requires_grad=True)
            b = t.tensor(rng.standard_normal(32).astype(np.float32), requires_grad=True)
            h = t.nn.functional.linear(x, w, b)        # a row the replay runs by BLAS, its weight's block owned
            u = h.tanh()
            v = (u * 1.5).exp()
            u.grad_fn.register_prehook(lambda go: seen.append(go[0].sum().item()) or (go[0] * 0.5,))
            v.grad_fn.register_hook(lambda gi, go: seen.append(gi[0].sum().item()))
            parts = v.split(8, 1)
            parts[1].grad_fn.register_hook(lambda gi, go: seen.append(gi[0].sum().item()))
            loss = sum((p * (k + 1)).sum() for k, p in enumerate(parts)) + h.sum()
            loss.backward()
            return seen, x.grad.numpy(), w.grad.numpy(), b.grad.numpy()
        got, want = run(tapegrad), run(torch)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-3)
        for a, b in zip(got[1:], want[1:]):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


def test_rows_python_runs_bmm_conv_and_float16():
    def s(t, log):
        x = t.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        y = x.half().exp()
        y.grad_fn.register_prehook(lambda go: log(("half pre", str(go[0].dtype), go)))
        y.grad_fn.register_hook(lambda gi, go: log(("half post", str(gi[0].dtype), gi)))
        w = _leaf(t, (2, 3, 4), 5)
        b = t.bmm(x.unsqueeze(0).expand(2, 2, 3), w)
        b.grad_fn.register_hook(lambda gi, go: log(("bmm", gi)) or (gi[0] * 2, gi[1]))
        k = _leaf(t, (1, 1, 2, 2), 6)
        c = t.nn.functional.conv2d(x.view(1, 1, 2, 3), k)
        c.grad_fn.register_prehook(lambda go: log(("conv pre", go)))
        c.grad_fn.register_hook(lambda gi, go: log(("conv post", gi)))
        (y.float().sum() + b.square().sum() + c.sum()).backward()
        return x.grad, w.grad, k.grad
    both(s, rtol=2e-3, atol=2e-3)
