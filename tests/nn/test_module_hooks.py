"""nn.Module's state-dict hooks, extra state, backward hooks, set_submodule, to_empty, compile and the device
methods: the same program on tapegrad and on torch (`lib` fixture, or both in one test) must agree."""
import importlib
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg


@pytest.fixture(params=["tapegrad", "torch"])
def lib(request):
    return importlib.import_module(request.param)


def both(fn):
    """fn(lib) on each library; returns (tapegrad's result, torch's)."""
    return fn(tg), fn(torch)


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


def plain(x):
    """Tensors as nested lists, the rest as it is (for comparing what hooks saw)."""
    if isinstance(x, (tg.Tensor, torch.Tensor)):
        return x.detach().numpy().tolist()
    if isinstance(x, (tuple, list)):
        return type(x)(plain(v) for v in x)
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


def net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))


# -- state_dict hooks -------------------------------------------------------------------------------------------
def test_state_dict_hooks_order_arguments_and_metadata():
    def run(lib):
        calls = []
        m = net(lib)
        m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(
            ("pre", type(mod).__name__, prefix, keep_vars)))
        m[1].register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(
            ("pre1", type(mod).__name__, prefix, keep_vars)))
        m[0].register_state_dict_post_hook(lambda mod, sd, prefix, md: calls.append(
            ("post0", list(sd), prefix, dict(md))))
        m.register_state_dict_post_hook(lambda mod, sd, prefix, md: calls.append(("post", list(sd), prefix, dict(md))))
        sd = m.state_dict(keep_vars=True)
        return calls, list(sd), {k: dict(v) for k, v in sd._metadata.items()}
    assert both(run)[0] == both(run)[1]


def test_private_state_dict_hook_may_return_a_new_dict_at_the_root_only():
    def run(lib):
        m = net(lib)
        m._register_state_dict_hook(lambda mod, sd, prefix, md: {"root": 1})
        m[0]._register_state_dict_hook(lambda mod, sd, prefix, md: {"child": 1})  # (dropped: a submodule's)
        return list(m.state_dict()), list(m[0].state_dict())
    assert both(run)[0] == both(run)[1] == (["root"], ["child"])


def test_state_dict_post_hook_errors(lib):
    def run(lib):
        m = lib.nn.Linear(2, 2)

        def hook(mod, sd, prefix, md):
            return {}
        m.register_state_dict_post_hook(hook)
        first = error_of(m.state_dict)
        second = error_of(lambda: m._register_state_dict_hook(hook))
        return first, second
    got, want = both(run)
    assert got == want and want[0][0] == "RuntimeError" and want[1][0] == "RuntimeError"


def test_state_dict_positional_form_warns(lib):
    m = lib.nn.Linear(2, 2)
    with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
        sd = m.state_dict(None, "p.")
    assert list(sd) == ["p.weight", "p.bias"]


def test_hook_handles_remove():
    def run(lib):
        calls = []
        m = lib.nn.Linear(2, 2)
        h1 = m.register_state_dict_pre_hook(lambda *a: calls.append("pre"))
        h2 = m.register_load_state_dict_pre_hook(lambda *a: calls.append("lpre"))
        sd = m.state_dict()
        m.load_state_dict(sd)
        h1.remove(), h2.remove()
        m.load_state_dict(m.state_dict())
        return calls
    assert both(run)[0] == both(run)[1] == ["pre", "lpre"]


# -- load_state_dict pre-hooks and extra state -------------------------------------------------------------
def test_load_state_dict_pre_hooks_see_torchs_arguments():
    def run(lib):
        calls = []
        m = net(lib)

        def public(mod, sd, prefix, md, strict, missing, unexpected, errors):
            calls.append(("public", type(mod).__name__, sorted(sd), prefix, dict(md), strict, list(missing)))

        def private(sd, prefix, md, strict, missing, unexpected, errors):  # (with_module=False: no module)
            calls.append(("private", sorted(sd), prefix, dict(md), strict))
            sd[prefix + "weight"] = sd[prefix + "weight"] * 0 + 7  # may rewrite the entries before they load

        def with_module(mod, sd, prefix, *rest):
            calls.append(("with_module", type(mod).__name__, prefix))
        m.register_load_state_dict_pre_hook(public)
        m[0]._register_load_state_dict_pre_hook(private)
        m[1]._register_load_state_dict_pre_hook(with_module, with_module=True)
        sd = m.state_dict()
        result = m.load_state_dict(sd)
        return calls, repr(result), plain(m[0].weight)
    assert both(run)[0] == both(run)[1]


def test_load_pre_hook_can_fix_keys_and_errors_go_into_the_message():
    def run(lib):
        m = lib.nn.Linear(2, 2)

        def rename(sd, prefix, md, strict, missing, unexpected, errors):
            if prefix + "w" in sd:
                sd[prefix + "weight"] = sd.pop(prefix + "w")
            errors.append("custom complaint")
        m._register_load_state_dict_pre_hook(rename)
        return error_of(lambda: m.load_state_dict({"w": lib.zeros(2, 2), "bias": lib.zeros(2)}))
    got, want = both(run)
    assert got == want and "custom complaint" in want[1]


def test_load_state_dict_post_hook_must_return_none(lib):
    got, want = both(lambda lib: error_of(lambda: _post_returns(lib)))
    assert got == want and want[0] == "AssertionError"


def _post_returns(lib):
    m = lib.nn.Linear(2, 2)
    m.register_load_state_dict_post_hook(lambda mod, keys: keys)
    m.load_state_dict(m.state_dict())


def extra_state_module(lib):
    class WithExtra(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.count = 3

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]
    return WithExtra


def test_extra_state_saved_and_loaded_as_torch():
    def run(lib):
        outer = lib.nn.Sequential(extra_state_module(lib)())
        sd = outer.state_dict()
        keys = list(sd)
        sd["0._extra_state"] = {"count": 9}
        outer.load_state_dict(sd)
        count = outer[0].count
        del sd["0._extra_state"]
        missing = error_of(lambda: outer.load_state_dict(sd))
        lenient = repr(outer.load_state_dict(sd, strict=False))
        plain_lin = lib.nn.Linear(2, 2)
        unexpected = error_of(lambda: plain_lin.load_state_dict(
            {"weight": lib.zeros(2, 2), "bias": lib.zeros(2), "_extra_state": 1}))
        return keys, count, missing, lenient, unexpected
    assert both(run)[0] == both(run)[1]


def test_extra_state_base_methods_raise(lib):
    got, want = both(lambda lib: (error_of(lambda: lib.nn.Module().get_extra_state()),
                                  error_of(lambda: lib.nn.Module().set_extra_state(1))))
    assert got == want


def test_metadata_versions_reach_load_from_state_dict():
    def run(lib):
        seen = []

        class Versioned(lib.nn.Linear):
            _version = 5

            def _load_from_state_dict(self, sd, prefix, md, *rest):
                seen.append(dict(md))
                super()._load_from_state_dict(sd, prefix, md, *rest)
        m = lib.nn.Sequential(Versioned(2, 2))
        sd = m.state_dict()
        m.load_state_dict(sd)
        m.load_state_dict(dict(sd))  # (a plain dict has no _metadata: {})
        m.load_state_dict(sd, assign=True)
        return seen
    assert both(run)[0] == both(run)[1]


# -- backward hooks ---------------------------------------------------------------------------------------------
class TwoOut:
    """forward(x, y, k) -> (2x, 3y): several inputs, one not a tensor, and several outputs."""

    @staticmethod
    def make(lib):
        class Two(lib.nn.Module):
            def forward(self, x, y, k=None):
                return x * 2, y * 3
        return Two()


@pytest.mark.parametrize("x_grad,y_grad,use", [(True, False, "a"), (False, True, "b"), (True, True, "a"),
                                               (True, True, "b"), (True, True, "ab")])
def test_full_backward_hooks_see_torchs_gradients(x_grad, y_grad, use):
    def run(lib):
        calls = []
        m = TwoOut.make(lib)
        m.register_full_backward_pre_hook(lambda mod, go: calls.append(("pre", plain(go))))
        m.register_full_backward_hook(lambda mod, gi, go: calls.append(("full", plain(gi), plain(go))))
        x = lib.tensor([1.0, 2.0], requires_grad=x_grad)
        y = lib.tensor([3.0, 4.0], requires_grad=y_grad)
        a, b = m(x, y, 5)
        loss = sum((t * lib.tensor([1.0, 10.0])).sum() for t, name in ((a, "a"), (b, "b")) if name in use)
        loss.backward()
        return calls, plain(x.grad) if x_grad else None, plain(y.grad) if y_grad else None, \
            type(a.grad_fn).__name__
    assert both(run)[0] == both(run)[1]


def test_backward_hooks_order_prepend_and_replacement():
    def run(lib):
        calls = []
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Tanh())
        lib.manual_seed(0)
        m[0].reset_parameters()
        inner = m[0]
        inner.register_full_backward_hook(lambda mod, gi, go: calls.append(("h1", plain(gi))))
        inner.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 10,))  # replaces grad_input
        inner.register_full_backward_hook(lambda mod, gi, go: calls.append(("h0", plain(gi))), prepend=True)
        inner.register_full_backward_hook(lambda mod, gi, go: calls.append(("h3", plain(gi))))
        inner.register_full_backward_pre_hook(lambda mod, go: calls.append(("p1", plain(go))))
        inner.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,), prepend=True)
        m.register_full_backward_hook(lambda mod, gi, go: calls.append(("outer", plain(gi), plain(go))))
        x = lib.tensor([[0.5, -1.0]], requires_grad=True)
        m(x).sum().backward()
        return calls, plain(x.grad), plain(inner.weight.grad)
    got, want = both(run)
    np.testing.assert_allclose(np.array(got[1]), np.array(want[1]), rtol=1e-6)
    np.testing.assert_allclose(np.array(got[2]), np.array(want[2]), rtol=1e-6)
    assert [c[0] for c in got[0]] == [c[0] for c in want[0]]
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(np.array(g[1], dtype=float), np.array(w[1], dtype=float), rtol=1e-6)


def test_backward_hooks_with_autograd_grad_and_removal():
    def run(lib):
        calls = []
        m = lib.nn.Linear(2, 1)
        h = m.register_full_backward_hook(lambda mod, gi, go: calls.append(len(gi)))
        x = lib.ones(1, 2, requires_grad=True)
        g, = lib.autograd.grad(m(x).sum(), x)
        h.remove()
        m(x).sum().backward()
        return calls, g.shape == (1, 2)
    assert both(run)[0] == both(run)[1] == ([1], True)


def test_hot_path_flag_comes_back_after_hooks_are_removed():
    m = tg.nn.Linear(2, 2)
    assert not m._call_hooked
    h = m.register_full_backward_hook(lambda *a: None)
    f = m.register_forward_hook(lambda *a: None)
    assert m._call_hooked
    h.remove(), f.remove()
    m(tg.ones(1, 2))
    assert not m._call_hooked


@pytest.mark.parametrize("case", ["wrong_count", "wrong_pre_count", "no_input_grad_returns", "mix_full_then_old",
                                  "mix_old_then_full"])
def test_backward_hook_errors(case):
    def run(lib):
        m = lib.nn.Linear(2, 2)
        x = lib.ones(1, 2, requires_grad=case != "no_input_grad_returns")
        if case == "wrong_count":
            m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        elif case == "wrong_pre_count":
            m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
        elif case == "no_input_grad_returns":
            m.register_full_backward_hook(lambda mod, gi, go: (lib.ones(1, 2),))
        elif case == "mix_full_then_old":
            m.register_full_backward_hook(lambda *a: None)
            return error_of(lambda: m.register_backward_hook(lambda *a: None))
        else:
            m.register_backward_hook(lambda *a: None)
            return error_of(lambda: m.register_full_backward_hook(lambda *a: None))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return error_of(lambda: m(x).sum().backward())
    got, want = both(run)
    assert got == want and want is not None


def test_full_hook_without_input_grads_warns_and_fires_at_the_outputs():
    def run(lib):
        calls = []
        m = lib.nn.Linear(2, 1)
        m.register_full_backward_hook(lambda mod, gi, go: calls.append((gi, plain(go))))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(lib.ones(1, 2)).sum().backward()
        return calls, [(x.category.__name__, str(x.message)) for x in w]
    assert both(run)[0] == both(run)[1]


def test_inplace_write_into_a_forward_input_raises(lib):
    class WritesInput(lib.nn.Module):
        def forward(self, x):
            x.mul_(2)
            return x
    m = WritesInput()
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError) as e:
        m(lib.ones(2, requires_grad=True) * 1)
    assert str(e.value).startswith("Output 0 of BackwardHookFunction is a view and is being modified inplace. This "
                                   "view was created inside a custom Function")


def test_inplace_write_into_a_forward_output_raises(lib):
    # (torch raises at the write; tapegrad at the backward that would use the hooks)
    class Scale(lib.nn.Module):
        def forward(self, x):
            return x * 2, x * 3
    m = Scale()
    m.register_full_backward_pre_hook(lambda *a: None)
    with pytest.raises(RuntimeError) as e:
        a, b = m(lib.ones(2, requires_grad=True))
        b.add_(1)
        (a + b).sum().backward()
    assert str(e.value).startswith("Output 1 of BackwardHookFunction is a view and is being modified inplace.")


def test_output_not_a_tensor_or_tuple_warns():
    def run(lib):
        class ListOut(lib.nn.Module):
            def forward(self, x):
                return [x * 2]
        m = ListOut()
        calls = []
        m.register_full_backward_hook(lambda *a: calls.append(1))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(lib.ones(2, requires_grad=True))[0].sum().backward()
        return calls, [(x.category.__name__, str(x.message)) for x in w]
    assert both(run)[0] == both(run)[1]


def test_deprecated_backward_hook_fires_and_warns_as_torch():
    def run(lib):
        calls = []

        class Double(lib.nn.Module):
            def forward(self, x):
                return x * 2
        out = []
        for m, x in ((Double(), lib.ones(2, requires_grad=True) * 1), (lib.nn.Linear(2, 2), lib.ones(3, 2))):
            m.register_backward_hook(lambda mod, gi, go: calls.append(plain(go)))
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                m(x).sum().backward()
            out.append([(x.category.__name__, str(x.message)) for x in w])
        return calls, out
    assert both(run)[0] == both(run)[1]


def test_no_hooks_under_no_grad():
    def run(lib):
        calls = []
        m = lib.nn.Linear(2, 2)
        m.register_full_backward_hook(lambda *a: calls.append(1))
        with lib.no_grad():
            y = m(lib.ones(1, 2, requires_grad=True))
        return calls, y.requires_grad, y.grad_fn is None
    assert both(run)[0] == both(run)[1]


# -- the smaller ones -------------------------------------------------------------------------------------------
def tree(lib):
    outer = lib.nn.Module()
    outer.net_b = lib.nn.Module()
    outer.net_b.net_c = lib.nn.Module()
    outer.net_b.net_c.conv = lib.nn.Conv2d(3, 3, 3)
    outer.net_b.linear = lib.nn.Linear(3, 3)
    outer.net_b.plain = 5
    return outer


@pytest.mark.parametrize("target,strict", [("net_b.net_c.conv", False), ("net_b.net_c.conv", True),
                                           ("net_b.new", False), ("net_b.new", True), ("", False),
                                           ("net_b.plain", False), ("missing.x", False), ("top", False)])
def test_set_submodule(target, strict):
    def run(lib):
        outer = tree(lib)
        err = error_of(lambda: outer.set_submodule(target, lib.nn.Linear(1, 1), strict=strict))
        return err, repr(outer)
    assert both(run)[0] == both(run)[1]


def test_set_submodule_refuses_a_non_module():
    got, want = both(lambda lib: error_of(lambda: tree(lib).set_submodule("net_b.linear", 3)))
    assert got == want


def test_to_empty_keeps_shapes_dtypes_and_parameter_objects(lib):
    m = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
    w = m[0].weight
    assert m.to_empty(device="cpu") is m
    assert m[0].weight is w and isinstance(w, lib.nn.Parameter) and w.shape == (3, 2)
    assert m[1].num_batches_tracked.dtype == lib.int64
    m[0].to_empty(device=None, recurse=False)
    with pytest.raises(TypeError):
        m.to_empty("cpu")  # (device is keyword-only)


@pytest.mark.parametrize("method", ["xpu", "ipu", "mtia", "cuda"])
def test_device_methods_raise_torchs_errors(method):
    got, want = both(lambda lib: error_of(lambda: getattr(lib.nn.Linear(2, 2), method)()))
    assert got == want


def test_to_empty_on_an_unavailable_device():
    got, want = both(lambda lib: error_of(lambda: lib.nn.Linear(2, 2).to_empty(device="cuda")))
    assert got == want


def test_module_compile_routes_calls_through_compile():
    tg.manual_seed(0)
    m = tg.nn.Linear(3, 2)
    calls = []
    m.register_forward_hook(lambda mod, args, out: calls.append(1))
    x = tg.randn(4, 3)
    want = m(x).detach().numpy()
    assert m.compile() is None
    assert m._compiled_call_impl is not None
    for _ in range(3):
        np.testing.assert_allclose(m(x).detach().numpy(), want, rtol=1e-6)
    assert calls  # (the hooks are part of the compiled call)
    m.zero_grad()
    m(x).sum().backward()
    assert m.weight.grad is not None
    assert "_compiled_call_impl" not in m.__getstate__()


def test_torch_module_compile_returns_none():
    # (torch's compile imports torch._dynamo, which turns torch.distributions' argument validation off for the
    # process: the oracle's default then differed from tapegrad's in tests/distributions run after this one)
    validate = torch.distributions.Distribution._validate_args
    try:
        m = torch.nn.Linear(3, 2)
        assert m.compile() is None and m._compiled_call_impl is not None
    finally:
        torch.distributions.Distribution.set_default_validate_args(validate)


def test_forward_hooks_with_kwargs_and_always_call():
    """register_forward_pre_hook(with_kwargs=True) (sees and may replace args and kwargs; torch's error for another
    result), register_forward_hook(with_kwargs=True, always_call=True) (run where forward raises, an exception of
    theirs a warning), prepend, and handles that remove a hook's marks with it."""
    def run(lib):
        seen = []

        class Scale(lib.nn.Module):
            def forward(self, x, scale=1.0, fail=False):
                if fail:
                    raise ValueError("forward failed")
                return x * scale
        m = Scale()
        h1 = m.register_forward_pre_hook(lambda mod, a, kw: seen.append(("pre_kw", plain(a), plain(kw))) or
                                         (a, {**kw, "scale": 2.0}), with_kwargs=True)
        m.register_forward_pre_hook(lambda mod, a: seen.append(("pre", plain(a))), prepend=True)
        m.register_forward_hook(lambda mod, a, kw, out: seen.append(("post_kw", plain(kw), plain(out))) or out + 1,
                                with_kwargs=True)
        h4 = m.register_forward_hook(lambda mod, a, out: seen.append(("always", plain(out))), always_call=True)
        x = lib.tensor([1.0, 2.0])
        seen.append(plain(m(x, scale=3.0)))
        seen.append(error_of(lambda: m(x, fail=True)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m.register_forward_hook(lambda mod, a, out: 1 / 0, always_call=True)
            seen.append(error_of(lambda: m(x, fail=True)))
        seen.append([str(w.message) for w in caught])
        h1.remove()
        h4.remove()
        seen.append([len(m._forward_pre_hooks_with_kwargs), len(m._forward_hooks_always_called),
                     len(m._forward_hooks_with_kwargs)])
        m.register_forward_pre_hook(lambda mod, a, kw: a, with_kwargs=True)
        seen.append(error_of(lambda: m(x)))
        return seen
    ours, theirs = both(run)
    assert ours == theirs


def _load_without_num_batches_tracked(L):
    """A state_dict without `_metadata` (rebuilt key by key, or from before torch 0.4.1) has no version: BatchNorm
    fills in num_batches_tracked (its own); one that carries version 2 must have it."""
    L.manual_seed(0)
    bn = L.nn.BatchNorm2d(3)
    bn(L.randn(2, 3, 4, 4))
    rebuilt = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    seen = [str(bn.load_state_dict(rebuilt, strict=False)), str(bn.load_state_dict(rebuilt)),
            int(bn.num_batches_tracked)]
    model = L.nn.Sequential(L.nn.Conv2d(1, 3, 1), L.nn.BatchNorm2d(3))
    versioned = model.state_dict()
    del versioned["1.num_batches_tracked"]
    try:
        model.load_state_dict(versioned)
    except RuntimeError as e:
        seen.append(str(e))
    seen.append(str(model.load_state_dict(dict(versioned))))
    return seen


def test_batch_norm_loads_a_state_dict_without_num_batches_tracked_as_torch():
    assert _load_without_num_batches_tracked(tg) == _load_without_num_batches_tracked(torch)
