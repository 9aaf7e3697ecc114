"""torch.nn.utils.prune against torch 2.13: masks and pruned weights for one seed (the random methods draw
torch's stream), iterative pruning, global_unstructured, remove, the reparametrization's names and state_dict
keys, forward/backward through a pruned module, errors."""
import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401  (torch does not import it with nn.utils)

import tapegrad as tg
import tapegrad.nn.utils.prune as tg_prune

LIBS = (torch, tg)


def _np(t):
    return np.asarray(t.detach().numpy())


def _same(a, b, atol=1e-6):
    np.testing.assert_allclose(_np(b), _np(a), atol=atol, rtol=1e-6)


def _build(lib, kind, dtype, seed=0):
    lib.manual_seed(seed)
    m = lib.nn.Linear(6, 5) if kind == "linear" else lib.nn.Conv2d(3, 4, 3)
    return m.to(getattr(lib, dtype))


def _both(kind, dtype, prune_fn, seed=0):
    """Build the module with each library from one seed, prune it (prune_fn(lib, module)), return both."""
    out = []
    for lib in LIBS:
        m = _build(lib, kind, dtype, seed)
        lib.manual_seed(seed + 1)
        prune_fn(lib, m)
        out.append(m)
    return out


def _check(a, b, name="weight"):
    _same(getattr(a, name + "_mask"), getattr(b, name + "_mask"), atol=0)
    _same(getattr(a, name), getattr(b, name))
    _same(getattr(a, name + "_orig"), getattr(b, name + "_orig"))
    assert getattr(b, name + "_mask").dtype == getattr(tg, str(getattr(a, name + "_mask").dtype)[6:])


METHODS = {
    "identity": lambda lib, m: lib.nn.utils.prune.identity(m, "weight"),
    "random_unstructured": lambda lib, m: lib.nn.utils.prune.random_unstructured(m, "weight", amount=0.3),
    "random_unstructured_int": lambda lib, m: lib.nn.utils.prune.random_unstructured(m, "weight", amount=7),
    "l1_unstructured": lambda lib, m: lib.nn.utils.prune.l1_unstructured(m, "weight", amount=0.4),
    "random_structured": lambda lib, m: lib.nn.utils.prune.random_structured(m, "weight", amount=0.5, dim=0),
    "random_structured_last": lambda lib, m: lib.nn.utils.prune.random_structured(m, "weight", amount=2, dim=-1),
    "ln_structured": lambda lib, m: lib.nn.utils.prune.ln_structured(m, "weight", amount=0.5, n=2, dim=0),
    "ln_structured_l1": lambda lib, m: lib.nn.utils.prune.ln_structured(m, "weight", amount=1, n=1, dim=1),
    "ln_structured_inf": lambda lib, m: lib.nn.utils.prune.ln_structured(m, "weight", amount=2, n=float("inf"),
                                                                           dim=0),
    "custom_from_mask": lambda lib, m: lib.nn.utils.prune.custom_from_mask(
        m, "weight", mask=(lib.arange(m.weight.numel()).reshape(m.weight.shape) % 3 != 0).to(lib.float32)),
    "bias_random": lambda lib, m: lib.nn.utils.prune.random_unstructured(m, "bias", amount=0.5),
    "class_apply": lambda lib, m: lib.nn.utils.prune.RandomUnstructured.apply(m, "weight", 0.25),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["linear", "conv"])
@pytest.mark.parametrize("method", sorted(METHODS))
def test_masks_match_torch(method, kind, dtype):
    a, b = _both(kind, dtype, METHODS[method])
    _check(a, b, "bias" if method.startswith("bias") else "weight")


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_iterative_pruning(kind):
    def fn(lib, m):
        P = lib.nn.utils.prune
        P.random_structured(m, "weight", amount=1, dim=0)
        P.l1_unstructured(m, "weight", amount=0.3)
        P.random_unstructured(m, "weight", amount=4)
        P.ln_structured(m, "weight", amount=1, n=2, dim=1)

    a, b = _both(kind, "float32", fn)
    _check(a, b)
    hook_a = [h for h in a._forward_pre_hooks.values()]
    hook_b = [h for h in b._forward_pre_hooks.values()]
    assert len(hook_a) == len(hook_b) == 1
    assert isinstance(hook_b[0], tg.nn.utils.prune.PruningContainer)
    assert [type(h).__name__ for h in hook_a[0]] == [type(h).__name__ for h in hook_b[0]]
    assert len(hook_b[0]) == 4 and isinstance(hook_b[0][1], tg.nn.utils.prune.L1Unstructured)


def test_global_unstructured():
    def fn(lib, root):
        P = lib.nn.utils.prune
        P.l1_unstructured(root[0], "weight", amount=2)  # one already pruned
        P.global_unstructured([(root[0], "weight"), (root[2], "weight"), (root[2], "bias")],
                              pruning_method=P.L1Unstructured, amount=0.4)
        P.global_unstructured(((root[0], "weight"), (root[2], "weight")), pruning_method=P.RandomUnstructured,
                              amount=5)

    out = []
    for lib in LIBS:
        lib.manual_seed(3)
        root = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.ReLU(), lib.nn.Linear(6, 3))
        fn(lib, root)
        out.append(root)
    a, b = out
    _check(a[0], b[0])
    _check(a[2], b[2])
    _check(a[2], b[2], "bias")
    assert tg_prune.is_pruned(b) and not tg_prune.is_pruned(tg.nn.Linear(2, 2))


def test_global_importance_scores_and_errors():
    for lib in LIBS:
        P = lib.nn.utils.prune
        lib.manual_seed(0)
        m = lib.nn.Linear(3, 4)
        scores = {(m, "weight"): lib.arange(12.).reshape(4, 3)}
        P.global_unstructured([(m, "weight")], P.L1Unstructured, importance_scores=scores, amount=5)
        assert _np(m.weight_mask).ravel().tolist() == [0.] * 5 + [1.] * 7
        with pytest.raises(TypeError, match="parameters is not an Iterable"):
            P.global_unstructured(3, P.L1Unstructured, amount=1)
        with pytest.raises(TypeError, match="importance_scores must be of type dict"):
            P.global_unstructured([(m, "bias")], P.L1Unstructured, importance_scores=[1], amount=1)
        with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE supported'):
            P.global_unstructured([(m, "bias")], P.RandomStructured, amount=1)


def test_importance_scores_l1_ln():
    def fn(lib, m):
        P = lib.nn.utils.prune
        w = m.weight.detach()
        P.l1_unstructured(m, "weight", amount=0.5, importance_scores=w.flip(0))
        P.ln_structured(m, "weight", amount=1, n=1, dim=0, importance_scores=w * w)

    a, b = _both("linear", "float64", fn)
    _check(a, b)


def test_names_state_dict_and_remove():
    a, b = _both("conv", "float32", METHODS["l1_unstructured"])
    assert [n for n, _ in b.named_parameters()] == [n for n, _ in a.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in b.named_buffers()] == [n for n, _ in a.named_buffers()] == ["weight_mask"]
    assert list(b.state_dict()) == list(a.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert not isinstance(b.weight, tg.nn.Parameter) and isinstance(b.weight_orig, tg.nn.Parameter)
    orig = b.weight_orig
    pruned = _np(b.weight).copy()
    for lib, m in zip(LIBS, (a, b)):
        assert lib.nn.utils.prune.remove(m, "weight") is m
        assert not lib.nn.utils.prune.is_pruned(m)
    assert b.weight is orig and isinstance(b.weight, tg.nn.Parameter) and b.weight.requires_grad
    np.testing.assert_array_equal(_np(b.weight), pruned)
    _same(a.weight, b.weight)
    assert list(b.state_dict()) == list(a.state_dict()) == ["bias", "weight"]
    assert not b._forward_pre_hooks
    # loading a pruned state_dict into a pruned module, across libraries
    a2, b2 = _both("conv", "float32", METHODS["random_unstructured"], seed=5)
    b2.load_state_dict({k: tg.tensor(v.numpy()) for k, v in a2.state_dict().items()})
    b2(tg.zeros(1, 3, 5, 5))
    _same(a2.weight, b2.weight)


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_forward_backward(kind):
    a, b = _both(kind, "float64", METHODS["random_unstructured"])
    shape = (3, 6) if kind == "linear" else (2, 3, 6, 6)
    x = np.random.default_rng(0).standard_normal(shape)
    for lib, m in zip(LIBS, (a, b)):
        with lib.no_grad():  # the hook recomputes `weight` from the new original on the next call
            m.weight_orig.mul_(2.0)
    ya, yb = a(torch.tensor(x)), b(tg.tensor(x))
    _same(ya, yb, atol=1e-10)
    _same(a.weight, b.weight, atol=1e-12)
    (ya ** 2).sum().backward()
    (yb ** 2).sum().backward()
    _same(a.weight_orig.grad, b.weight_orig.grad, atol=1e-10)
    g = _np(b.weight_orig.grad)
    assert np.all(g[_np(b.weight_mask) == 0] == 0) and np.any(g != 0)
    assert b.weight_mask.grad is None and not b.weight_mask.requires_grad


def test_prune_method_and_container():
    for lib in LIBS:
        P = lib.nn.utils.prune
        t = lib.tensor([[1., -5., 2.], [0.5, 3., -4.]])
        out = P.L1Unstructured(amount=2).prune(t)
        assert _np(out).tolist() == [[0., -5., 2.], [0., 3., -4.]]
        out = P.L1Unstructured(amount=1).prune(t, default_mask=lib.ones_like(t), importance_scores=-t.flip(1))
        assert _np(out).tolist() == [[1., -5., 2.], [0.5, 3., 0.]]
        m = P.LnStructured(amount=1, n=2, dim=0).compute_mask(t, lib.ones_like(t))
        assert _np(m).tolist() == [[1., 1., 1.], [0., 0., 0.]]
        with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
            c = P.PruningContainer()
            c._tensor_name = "w"
            c.add_pruning_method(3)
        a = P.Identity()
        a._tensor_name = "w"
        b = P.Identity()
        b._tensor_name = "v"
        with pytest.raises(ValueError, match="Can only add pruning methods acting on the parameter named 'w'"):
            P.PruningContainer(a).add_pruning_method(b)


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", [
    lambda P, m: P.random_unstructured(m, "weight", amount=-1),
    lambda P, m: P.random_unstructured(m, "weight", amount=1.5),
    lambda P, m: P.l1_unstructured(m, "weight", amount=-0.1),
    lambda P, m: P.l1_unstructured(m, "weight", amount="a"),
    lambda P, m: P.l1_unstructured(m, "weight", amount=None),
    lambda P, m: P.l1_unstructured(m, "weight", amount=31),
    lambda P, m: P.random_structured(m, "weight", amount=6, dim=0),
    lambda P, m: P.random_structured(m, "weight", amount=1, dim=2),
    lambda P, m: P.random_structured(m, "bias", amount=1, dim=0),
    lambda P, m: P.ln_structured(m, "bias", amount=1, n=2, dim=0),
    lambda P, m: P.ln_structured(m, "weight", amount=7, n=2, dim=-1),
    lambda P, m: P.l1_unstructured(m, "nope", amount=1),
    lambda P, m: P.remove(m, "weight"),
    lambda P, m: P.l1_unstructured(m, "weight", amount=1, importance_scores=m.bias),
    lambda P, m: P.custom_from_mask(m, "weight", mask=m.bias),
])
def test_errors(case):
    errs, mods = [], []
    for lib in LIBS:
        lib.manual_seed(0)
        m = lib.nn.Linear(6, 5)
        errs.append(_err(lambda: case(lib.nn.utils.prune, m)))
        mods.append(m)
    ta, tb = errs
    assert ta is not None and tb is not None
    assert ta[0] == tb[0]
    # messages name the module; tapegrad's Linear repr is torch's
    assert ta[1] == tb[1]
    # a failed prune leaves the parameter as it was
    for m in mods:
        assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight"]
        assert not m._buffers
