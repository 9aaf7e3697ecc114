"""tapegrad.autograd.functional against torch.autograd.functional: the same calls return the same nested
structure (tuples where torch has tuples, a Tensor where torch has one), the same values, the same
errors; create_graph results differentiate again."""
import numpy as np
import pytest
import torch

import tapegrad

RNG = np.random.default_rng(7)
A = RNG.uniform(-1, 1, (3,))
B = RNG.uniform(-1, 1, (2, 3))
V3 = RNG.uniform(-1, 1, (3,))
V23 = RNG.uniform(-1, 1, (2, 3))
V2 = RNG.uniform(-1, 1, (2,))


def T(lib, a):
    return lib.tensor(a, dtype=lib.float64)


def same(ours, theirs, rtol=1e-10):
    """Same structure and values; Tensors compared as float64 arrays."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tapegrad.Tensor), f"expected a Tensor, got {type(ours)}"
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)
        assert ours.requires_grad == theirs.requires_grad
        return
    assert type(ours) is type(theirs), f"{type(ours)} vs {type(theirs)}"
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        same(a, b, rtol)


# functions of the same code on both libraries
def f_single(x):
    return (x.exp() * x.sin()).sum()


def f_vector(x):
    return x.tanh() * x[0]


def f_pair(x, y):
    return (y @ x).sin(), (x * x).sum() * y


def f_scalar_pair(x, y):
    return ((y @ x).sin().sum() + (x * x * x).sum()) * (y * y).sum()


FUNCS = {"single": (f_single, [A]), "vector": (f_vector, [A]), "pair": (f_pair, [A, B]),
         "scalar_pair": (f_scalar_pair, [A, B])}


def call(lib, api, name, tuple_inputs, v=None, **kw):
    fn, inputs = FUNCS[name]
    xs = tuple(T(lib, a) for a in inputs)
    args = xs if tuple_inputs or len(xs) > 1 else xs[0]
    vv = None if v is None else (tuple(T(lib, a) for a in v) if isinstance(v, tuple) else T(lib, v))
    mod = lib.autograd.functional
    if api in ("jacobian", "hessian"):
        return getattr(mod, api)(fn, args, **kw)
    return getattr(mod, api)(fn, args, vv, **kw)


@pytest.mark.parametrize("api, name, tuple_inputs, v", [
    ("vjp", "single", False, None), ("vjp", "single", True, None), ("vjp", "vector", False, V3),
    ("vjp", "pair", True, (V2, V23)),
    ("jvp", "single", False, V3), ("jvp", "vector", True, (V3,)), ("jvp", "pair", True, (V3, V23)),
    ("jacobian", "single", False, None), ("jacobian", "vector", False, None), ("jacobian", "vector", True, None),
    ("jacobian", "pair", True, None),
    ("hessian", "single", False, None), ("hessian", "single", True, None), ("hessian", "scalar_pair", True, None),
    ("hvp", "single", False, V3), ("hvp", "scalar_pair", True, (V3, V23)),
    ("vhp", "single", True, (V3,)), ("vhp", "scalar_pair", True, (V3, V23)),
])
@pytest.mark.parametrize("create_graph", [False, True])
def test_same_structure_and_values_as_torch(api, name, tuple_inputs, v, create_graph):
    ours = call(tapegrad, api, name, tuple_inputs, v, create_graph=create_graph)
    theirs = call(torch, api, name, tuple_inputs, v, create_graph=create_graph)
    same(ours, theirs)


def test_vectorize_and_forward_mode_strategy_give_the_same_jacobian():
    for kw in ({"vectorize": True}, {"vectorize": True, "strategy": "forward-mode"}):
        same(call(tapegrad, "jacobian", "pair", True, **kw), call(torch, "jacobian", "pair", True, **kw))
    same(call(tapegrad, "hessian", "scalar_pair", True, vectorize=True),
         call(torch, "hessian", "scalar_pair", True, vectorize=True))


def test_create_graph_results_differentiate_again():
    def program(lib):
        x = lib.tensor(A, dtype=lib.float64, requires_grad=True)
        y = lib.tensor(B, dtype=lib.float64, requires_grad=True)
        _, hv = lib.autograd.functional.hvp(f_scalar_pair, (x, y), (T(lib, V3), T(lib, V23)), create_graph=True)
        jac = lib.autograd.functional.jacobian(f_vector, x, create_graph=True)
        hes = lib.autograd.functional.hessian(f_single, x, create_graph=True)
        _, jv = lib.autograd.functional.jvp(f_vector, x, T(lib, V3), create_graph=True)
        total = sum((h * h).sum() for h in hv) + (jac ** 2).sum() + hes.sum() + jv.sum()
        return lib.autograd.grad(total, (x, y))
    same(program(tapegrad), program(torch), rtol=1e-9)


def raises_like_torch(program):
    with pytest.raises(Exception) as theirs:
        program(torch)
    with pytest.raises(type(theirs.value)) as ours:
        program(tapegrad)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("case", [
    "vjp_v_none_nonscalar", "vjp_v_size", "vjp_v_length", "jvp_v_none", "hessian_nonscalar", "hessian_tuple",
    "hvp_v_none", "not_tensor_input", "not_tensor_output", "strict_independent_output", "strict_linear_hessian",
    "strict_jacobian_independent", "vectorize_strict", "bad_strategy", "forward_mode_no_vectorize",
    "forward_mode_create_graph", "vhp_strict_linear", "jvp_strict_independent",
])
def test_errors_are_torchs(case):
    def program(lib):
        fn = lib.autograd.functional
        x, y = T(lib, A), T(lib, B)
        if case == "vjp_v_none_nonscalar":
            fn.vjp(f_vector, x)
        elif case == "vjp_v_size":
            fn.vjp(f_vector, x, T(lib, V2))
        elif case == "vjp_v_length":
            fn.vjp(f_pair, (x, y), (T(lib, V2),))
        elif case == "jvp_v_none":
            fn.jvp(f_vector, x)
        elif case == "hessian_nonscalar":
            fn.hessian(f_vector, x)
        elif case == "hessian_tuple":
            fn.hessian(lambda a: (a.sum(), a.sum()), x)
        elif case == "hvp_v_none":
            fn.hvp(f_single, x)
        elif case == "not_tensor_input":
            fn.jacobian(f_vector, [A])
        elif case == "not_tensor_output":
            fn.vjp(lambda a: 3.0, x)
        elif case == "strict_independent_output":
            fn.jacobian(lambda a, b: a * 2, (x, y), strict=True)
        elif case == "strict_linear_hessian":
            fn.hessian(lambda a: a.sum(), x, strict=True)
        elif case == "strict_jacobian_independent":
            fn.vjp(lambda a, b: a.sum(), (x, y), strict=True)
        elif case == "vectorize_strict":
            fn.jacobian(f_vector, x, strict=True, vectorize=True)
        elif case == "bad_strategy":
            fn.jacobian(f_vector, x, strategy="sideways")
        elif case == "forward_mode_no_vectorize":
            fn.jacobian(f_vector, x, strategy="forward-mode")
        elif case == "forward_mode_create_graph":
            fn.jacobian(f_vector, x, strategy="forward-mode", vectorize=True, create_graph=True)
        elif case == "vhp_strict_linear":
            fn.vhp(lambda a: (a * 2).sum(), x, T(lib, V3), strict=True)
        elif case == "jvp_strict_independent":
            fn.jvp(lambda a: lib.ones(3, dtype=lib.float64) * 1, x, T(lib, V3), strict=True)
    raises_like_torch(program)


def test_non_strict_independent_parts_are_zeros():
    def program(lib):
        x, y = T(lib, A), T(lib, B)
        return lib.autograd.functional.jacobian(lambda a, b: a * 2, (x, y))
    same(program(tapegrad), program(torch))


def test_inputs_are_not_modified_and_results_do_not_require_grad():
    x = tapegrad.tensor(A, dtype=tapegrad.float64, requires_grad=True)
    out, g = tapegrad.autograd.functional.vjp(f_single, x)
    assert not out.requires_grad and not g.requires_grad and x.grad is None
    np.testing.assert_array_equal(x.detach().numpy(), A)
