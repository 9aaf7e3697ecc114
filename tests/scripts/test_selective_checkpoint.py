"""Selective activation checkpointing (torch.utils.checkpoint.create_selective_checkpoint_contexts,
CheckpointPolicy, SelectiveCheckpointContext) against torch: the values and gradients of checkpointed code with a
policy function and with a list of ops, and the API's enum, context pair and errors. tapegrad recomputes every op
whatever the policy (it cannot tell the ops apart), which gives torch's numbers."""
import functools
import re

import numpy as np
import pytest
import torch

import tapegrad


def _save_mm(lib):
    """torch's documented example policy: save the matmuls, recompute the rest."""
    C = lib.utils.checkpoint

    def policy(ctx, op, *args, **kwargs):
        if op in (lib.ops.aten.mm.default, lib.ops.aten.addmm.default):
            return C.CheckpointPolicy.MUST_SAVE
        return C.CheckpointPolicy.PREFER_RECOMPUTE
    return policy


def _save_nothing_but_a_bool(lib):
    return lambda ctx, op, *args, **kwargs: False  # (a bool: torch's older form)


def _op_list(lib):
    aten = getattr(lib.ops, "aten", None)  # (tapegrad has no torch.ops.aten overloads to list: the empty list)
    return [aten.mm.default, aten.addmm.default] if aten is not None else []


POLICIES = [_save_mm, _save_nothing_but_a_bool, _op_list]


def _fn(lib, x, y):
    """torch's docstring example, with a dropout: its mask must be the forward's in the recompute."""
    F = lib.nn.functional
    return F.dropout(lib.sigmoid(lib.matmul(lib.matmul(x, y), y)), 0.3) * y


def _grads(lib, make_policy, module):
    C = lib.utils.checkpoint
    lib.manual_seed(0)
    context_fn = functools.partial(C.create_selective_checkpoint_contexts, make_policy(lib))
    if module:
        net = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.GELU(), lib.nn.Dropout(0.2), lib.nn.Linear(8, 3))
        x = lib.rand(5, 4, requires_grad=True)
        out = C.checkpoint(net, x, use_reentrant=False, context_fn=context_fn)
        leaves = [x, *net.parameters()]
    else:
        x, y = lib.rand(4, 4, requires_grad=True), lib.rand(4, 4, requires_grad=True)
        out = C.checkpoint(_fn, lib, x, y, use_reentrant=False, context_fn=context_fn)
        leaves = [x, y]
    (out * lib.arange(out.numel()).reshape(out.shape)).sum().backward()
    return [out.detach().numpy()] + [t.grad.numpy() for t in leaves], lib.rand(3).numpy()


def _rows_for(make_policy, module):
    return _grads(tapegrad, make_policy, module), _grads(torch, make_policy, module)


@pytest.mark.parametrize("module", [False, True], ids=["function", "module"])
@pytest.mark.parametrize("make_policy", POLICIES, ids=lambda f: f.__name__)
def test_values_and_gradients_are_torchs(make_policy, module):
    (got, got_after), (want, want_after) = _rows_for(make_policy, module)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_after, want_after)  # (the default generator goes on where torch's does)


def test_api_as_torch():
    def api(lib):
        C = lib.utils.checkpoint
        ctx = C.SelectiveCheckpointContext(is_recompute=False)
        pair = C.create_selective_checkpoint_contexts(lambda *a, **k: C.CheckpointPolicy.MUST_SAVE)
        with pair[0], pair[1]:
            pass
        return ([(m.name, m.value) for m in C.CheckpointPolicy], str(C.CheckpointPolicy.PREFER_SAVE),
                (ctx.is_recompute, ctx.op_output), [type(c).__name__ for c in pair],
                [n in C.__all__ for n in ("CheckpointPolicy", "SelectiveCheckpointContext",
                                          "create_selective_checkpoint_contexts")])
    assert api(tapegrad) == api(torch)


def _scrub(text):
    return re.sub(r" at 0x[0-9a-f]+", "", text)


@pytest.mark.parametrize("bad", ["a string", 3, ["mm"], [None]], ids=repr)
def test_bad_policies_raise_as_torch(bad):
    def err(lib):
        try:
            lib.utils.checkpoint.create_selective_checkpoint_contexts(bad)
        except (TypeError, ValueError) as e:
            return type(e).__name__, _scrub(str(e))
    assert err(tapegrad) == err(torch) is not None


def test_a_function_in_the_op_list_is_refused_as_torch():
    """torch wants OpOverloads (torch.ops.aten.mm.default), not the public function torch.mm."""
    def err(lib):
        try:
            lib.utils.checkpoint.create_selective_checkpoint_contexts([lib.mm])
        except ValueError as e:
            return str(e).split(" but got:")[0], str(e).endswith("of type " + repr(type(lib.mm)) + ". ")
    assert err(tapegrad) == err(torch) == ("Expected op in `op_list` to be an OpOverload", True)


def test_reentrant_refuses_the_contexts_as_torch():
    def err(lib):
        C = lib.utils.checkpoint
        try:
            C.checkpoint(lib.sin, lib.ones(2, requires_grad=True), use_reentrant=True,
                         context_fn=functools.partial(C.create_selective_checkpoint_contexts, []))
        except ValueError as e:
            return str(e)
    assert err(tapegrad) == err(torch) is not None
