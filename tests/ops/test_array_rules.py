"""The array rules (`array_vjp`) that a plain backward runs instead of an op's Tensor rule: each equals torch's
gradient, and equals the Tensor rule (which create_graph still records) bit for bit, in float32 and float64,
on the cases where the two could part: zeros in a product, repeated einsum letters, duplicate scatter indices,
broadcast bounds and ties, padding rows."""
import numpy as np
import pytest
import torch

import tapegrad
from tapegrad import registry


def _clamp_ties(m, x, lo, hi):
    return m.clamp(x, lo, hi)


def _arrays(rng, shapes):
    return [rng.standard_normal(s) for s in shapes]


def _with_zeros(positions, shape=(3, 4)):
    def make(rng):
        x = rng.standard_normal(shape)
        for p in positions:
            x[p] = 0.0
        return [x]
    return make


_TIES_X = np.array([[-1.0, 0.0, 0.5, 1.0], [2.0, -0.5, 0.25, 3.0], [0.0, 1.0, -2.0, 0.5]])


def _bounds_case(rng):
    lo = np.array([0.0, -0.5, 0.25, 1.0])               # broadcast over rows; ties with _TIES_X's values
    hi = np.array([[1.0], [0.25], [-1.0]])              # the last row has hi < lo
    return [_TIES_X.copy(), lo, hi]


# name: (the ops whose array rule must run, a function of (module, *tensors), the inputs' values)
CASES = {
    "prod dim, no zero": ({"prod"}, lambda m, x: m.prod(x, 1), lambda r: _arrays(r, [(3, 4)])),
    "prod dim, one zero": ({"prod"}, lambda m, x: m.prod(x, 1), _with_zeros([(1, 2)])),
    "prod dim, several zeros": ({"prod"}, lambda m, x: m.prod(x, 0, keepdim=True),
                                _with_zeros([(0, 1), (2, 1), (1, 3)])),
    "prod all, one zero": ({"prod_all"}, lambda m, x: m.prod(x), _with_zeros([(2, 0)])),
    "prod all, two zeros": ({"prod_all"}, lambda m, x: m.prod(x), _with_zeros([(2, 0), (0, 3)])),
    "prod all, no zero": ({"prod_all"}, lambda m, x: m.prod(x), lambda r: _arrays(r, [(2, 3)])),
    "einsum matmul": ({"einsum"}, lambda m, a, b: m.einsum("ij,jk->ik", a, b), lambda r: _arrays(r, [(3, 4), (4, 2)])),
    "einsum diagonal": ({"einsum"}, lambda m, a: m.einsum("ii->i", a), lambda r: _arrays(r, [(4, 4)])),
    "einsum trace": ({"einsum"}, lambda m, a: m.einsum("ii", a), lambda r: _arrays(r, [(3, 3)])),
    "einsum repeated with another": ({"einsum"}, lambda m, a, b: m.einsum("iij,jk->ik", a, b),
                                     lambda r: _arrays(r, [(3, 3, 2), (2, 5)])),
    "einsum ellipsis broadcast": ({"einsum"}, lambda m, a, b: m.einsum("...ij,...jk->...ik", a, b),
                                  lambda r: _arrays(r, [(2, 1, 3, 4), (5, 4, 2)])),
    "einsum subscript broadcast": ({"einsum"}, lambda m, a, b: m.einsum("ij,ij->j", a, b),
                                   lambda r: _arrays(r, [(1, 3), (4, 3)])),
    "einsum subscript broadcast, kept": ({"einsum"}, lambda m, a, b: m.einsum("ij,ij->ij", a, b),
                                         lambda r: _arrays(r, [(4, 1), (4, 3)])),
    "einsum summed letter": ({"einsum"}, lambda m, a, b: m.einsum("ij,k->i", a, b), lambda r: _arrays(r, [(3, 2), (4,)])),
    "einsum implicit three": ({"einsum"}, lambda m, a, b, c: m.einsum("ab,bc,cd", a, b, c),
                              lambda r: _arrays(r, [(2, 3), (3, 4), (4, 2)])),
    "scatter_add duplicates": ({"scatter_add"},
                               lambda m, x, s: m.scatter_add(x, 0, m.tensor([[0, 1, 0], [0, 0, 2]]), s),
                               lambda r: _arrays(r, [(3, 4), (2, 3)])),
    "scatter_add dim 1": ({"scatter_add"},
                          lambda m, x, s: x.scatter_add(1, m.tensor([[3, 3], [0, 3], [1, 1]]), s),
                          lambda r: _arrays(r, [(3, 4), (3, 2)])),
    "lerp scalar": ({"lerp"}, lambda m, a, b: m.lerp(a, b, 0.3), lambda r: _arrays(r, [(3, 4), (4,)])),
    "lerp scalar high": ({"lerp"}, lambda m, a, b: m.lerp(a, b, 0.75), lambda r: _arrays(r, [(3, 1), (3, 4)])),
    "lerp tensor broadcast": ({"lerp_tensor"}, lambda m, a, b, w: m.lerp(a, b, w),
                              lambda r: _arrays(r, [(3, 4), (1, 4), (3, 1)])),
    "clamp tensor bounds, ties": ({"clamp_tensor"}, _clamp_ties, _bounds_case),
    "clamp min tensor, ties": ({"clamp_min_tensor"}, lambda m, x, lo: m.clamp_min(x, lo),
                               lambda r: _bounds_case(r)[:2]),
    "clamp max tensor, ties": ({"clamp_max_tensor"}, lambda m, x, hi: m.clamp_max(x, hi),
                               lambda r: [_TIES_X.copy(), np.array([[1.0, 0.0, 0.5, 3.0]])]),
    "clamp both, one tensor": ({"clamp_tensor"}, lambda m, x, lo: m.clamp(x, lo, m.tensor(0.5, dtype=x.dtype)),
                               lambda r: _bounds_case(r)[:2]),
    "embedding padding_idx": ({"embedding_padded"},
                              lambda m, w: m.nn.functional.embedding(m.tensor([[0, 2, 2], [1, 0, 2]]), w,
                                                                      padding_idx=2),
                              lambda r: _arrays(r, [(4, 3)])),
    "embedding scale_grad_by_freq": ({"embedding_padded"},
                                     lambda m, w: m.nn.functional.embedding(m.tensor([[0, 2, 2], [1, 0, 2]]), w,
                                                                             padding_idx=1, scale_grad_by_freq=True),
                                     lambda r: _arrays(r, [(4, 3)])),
    "huber_loss": ({"huber_loss"}, lambda m, a, b: m.nn.functional.huber_loss(a, b, delta=0.7),
                   lambda r: _arrays(r, [(3, 4), (4,)])),
    "diag_embed": ({"diag_embed"}, lambda m, v: m.diag(v, 1), lambda r: _arrays(r, [(4,)])),
    "diag_embed below": ({"diag_embed"}, lambda m, v: m.diag(v, -2), lambda r: _arrays(r, [(3,)])),
    "bce logits weight": ({"bce_with_logits_full"},
                          lambda m, z, t, w: m.nn.functional.binary_cross_entropy_with_logits(z, t, weight=w),
                          lambda r: [r.standard_normal((3, 4)) * 3, r.random((3, 4)), r.random(4)]),
    "bce logits pos_weight sum": ({"bce_with_logits_full"},
                                  lambda m, z, t, pw: m.nn.functional.binary_cross_entropy_with_logits(
                                      z, t, pos_weight=pw, reduction="sum"),
                                  lambda r: [r.standard_normal((3, 4)) * 3, r.random((3, 4)), r.random(4) * 2]),
    "bce logits both none": ({"bce_with_logits_full"},
                             lambda m, z, t, w, pw: m.nn.functional.binary_cross_entropy_with_logits(
                                 z, t, weight=w, pos_weight=pw, reduction="none"),
                             lambda r: [r.standard_normal((2, 3)) * 30, r.random((2, 3)), r.random((2, 1)),
                                        r.random(3)]),
}

# inputs that are targets or weights (no gradient asked)
_NO_GRAD_INPUTS = {"bce logits weight": {1, 2}, "bce logits pos_weight sum": {1, 2}, "bce logits both none": {1, 2, 3}}


def _run(module, fn, values, dtype, needs):
    xs = [module.tensor(v, dtype=dtype, requires_grad=n) for v, n in zip(values, needs)]
    y = fn(module, *xs)
    g = np.linspace(-1.0, 1.5, max(int(np.prod(y.shape)), 1)).reshape(tuple(y.shape))
    y.backward(module.tensor(g, dtype=dtype))
    return [(x.grad.float() if dtype is tapegrad.bfloat16 else x.grad).numpy() if n else None  # (exact)
            for x, n in zip(xs, needs)], y


def _grads_with(ops, use_array_rule, fn, values, dtype, needs):
    """tapegrad's gradients with the ops' array rules (counting that each ran) or with their Tensor rules."""
    defs = [registry.BY_NAME[name] for name in ops]
    saved = [op.array_vjp for op in defs]
    calls = []

    def counted(rule):
        def run(*args):
            got = rule(*args)
            calls.append(got is not None)
            return got
        return run
    try:
        for op, rule in zip(defs, saved):
            op.array_vjp = counted(rule) if use_array_rule else None
        grads, _ = _run(tapegrad, fn, values, getattr(tapegrad, dtype), needs)
    finally:
        for op, rule in zip(defs, saved):
            op.array_vjp = rule
    if use_array_rule:
        assert calls and all(calls), "the array rule did not run (or declined)"
    return grads


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_array_rule_equals_torch_and_the_tensor_rule(name, dtype):
    ops, fn, make = CASES[name]
    assert all(registry.BY_NAME[op].array_vjp is not None for op in ops)
    values = make(np.random.default_rng(len(name)))
    needs = [i not in _NO_GRAD_INPUTS.get(name, ()) for i in range(len(values))]
    on_arrays = _grads_with(ops, True, fn, values, dtype, needs)
    on_tensors = _grads_with(ops, False, fn, values, dtype, needs)
    expected, _ = _run(torch, fn, values, getattr(torch, dtype), needs)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    for a, t, e in zip(on_arrays, on_tensors, expected):
        if e is None:
            continue
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a.view(np.uint8), t.view(np.uint8))  # bit for bit, signs of zeros included
        np.testing.assert_allclose(a, e, **tol)


@pytest.mark.parametrize("name,dtype", [(name, dtype) for name in CASES for dtype in ("float16", "bfloat16")])
def test_array_rule_of_a_reduced_float_row_equals_the_tensor_rule(name, dtype):
    """A float16 or bfloat16 row's rule is given float32 arrays (replay._reduced_float_rule), either kind."""
    ops, fn, make = CASES[name]
    values = make(np.random.default_rng(len(name)))
    needs = [i not in _NO_GRAD_INPUTS.get(name, ()) for i in range(len(values))]
    on_arrays = _grads_with(ops, True, fn, values, dtype, needs)
    on_tensors = _grads_with(ops, False, fn, values, dtype, needs)
    for a, t in zip(on_arrays, on_tensors):
        if a is not None:
            assert a.dtype == t.dtype and str(a.dtype) == ("float32" if dtype == "bfloat16" else dtype)
            np.testing.assert_array_equal(a.view(np.uint8), t.view(np.uint8))


def test_scatter_flat_rule_on_arrays_duplicate_indices():
    """scatter_flat is a gather's adjoint row, recorded by create_graph; its own plain backward gathers."""
    for dtype in ("float32", "float64"):
        results = []
        for module in (tapegrad, torch):
            x = module.tensor(np.arange(1.0, 6.0), dtype=getattr(module, dtype), requires_grad=True)
            y = (x[module.tensor([0, 0, 3, 1, 3])] ** 2).sum()
            gx, = module.autograd.grad(y, x, create_graph=True)
            (gx * module.tensor([1.0, -2.0, 3.0, 0.5, 4.0], dtype=x.dtype)).sum().backward()
            results.append(x.grad.numpy())
        np.testing.assert_array_equal(results[0], results[1])


def test_copy_slices_rule_on_arrays():
    """copy_slices: the base's gradient is zero where the view was written, the written value's is read there."""
    for dtype in ("float32", "float64"):
        results = []
        for module in (tapegrad, torch):
            x = module.tensor(np.linspace(-1, 1, 12).reshape(3, 4), dtype=getattr(module, dtype), requires_grad=True)
            w = module.tensor([[2.0, -1.0], [0.5, 3.0]], dtype=x.dtype, requires_grad=True)
            y = x * 1.5
            y[1:, ::2].copy_(w * 3.0)      # (in place through a view: CopySlices)
            y[:2, 1].mul_(w[0])
            (y * module.tensor(np.arange(12.0).reshape(3, 4), dtype=x.dtype)).sum().backward()
            results.append((x.grad.numpy(), w.grad.numpy()))
        for a, e in zip(*results):
            np.testing.assert_array_equal(a, e)


def test_the_rules_ran_on_arrays_for_scatter_flat_and_copy_slices(monkeypatch):
    ran = []
    for name in ("scatter_flat", "copy_slices"):
        op = registry.BY_NAME[name]
        rule = op.array_vjp

        def counted(*args, rule=rule, name=name):
            ran.append(name)
            return rule(*args)
        monkeypatch.setattr(op, "array_vjp", counted)
    test_scatter_flat_rule_on_arrays_duplicate_indices()
    test_copy_slices_rule_on_arrays()
    assert {"scatter_flat", "copy_slices"} <= set(ran)


@pytest.mark.parametrize("equation,shapes", [("ij,ij->j", [(1, 3), (4, 3)]), ("ij,ij->ij", [(4, 1), (4, 3)]),
                                             ("ij,jk->i", [(3, 1), (4, 2)])])
def test_einsum_letter_broadcast_second_order(equation, shapes):
    """A letter of size 1 in one operand broadcasts against the others (the Tensor rule create_graph records)."""
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(s) for s in shapes]
    results = []
    for module in (tapegrad, torch):
        xs = [module.tensor(v, requires_grad=True) for v in values]
        y = module.einsum(equation, *xs)
        gs = module.autograd.grad((y * y).sum(), xs, create_graph=True)
        sum((g * g).sum() for g in gs).backward()
        results.append([g.detach().numpy() for g in gs] + [x.grad.numpy() for x in xs])
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)
