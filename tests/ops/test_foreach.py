"""torch._foreach_*: every name torch 2.13 has, on lists of tensors, against torch (values, in-place writes and
what each returns, list/scalar/scalar-list arguments, errors)."""
import numpy as np
import pytest
import torch

import tapegrad

UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
         "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
         "sinh", "sqrt", "tan", "tanh", "trunc")
RNG = np.random.default_rng(3)
A, B, C = (RNG.uniform(0.1, 0.9, (2, 3)) for _ in range(3))
D = RNG.uniform(0.1, 0.9, (4,))


def lists(L, *arrays):
    return [[L.tensor(a), L.tensor(d)] for a, d in arrays]


CALLS = {f"{u}{s}": (lambda u, s: lambda L, x, y, z: getattr(L, f"_foreach_{u}{s}")(x))(u, s)
         for u in UNARY for s in ("", "_")}
CALLS.update({
    "add_list": lambda L, x, y, z: L._foreach_add(x, y, alpha=0.5), "add_scalar_": lambda L, x, y, z: L._foreach_add_(x, 2),
    "add_scalars": lambda L, x, y, z: L._foreach_add(x, [1.0, 2.0]), "sub_": lambda L, x, y, z: L._foreach_sub_(x, y),
    "mul_scalar_": lambda L, x, y, z: L._foreach_mul_(x, 0.995), "mul_tensor": lambda L, x, y, z: L._foreach_mul(x, L.tensor(3.0)),
    "div": lambda L, x, y, z: L._foreach_div(x, y), "lerp_": lambda L, x, y, z: L._foreach_lerp_(x, y, 0.005),
    "lerp_list": lambda L, x, y, z: L._foreach_lerp(x, y, z), "addcmul_": lambda L, x, y, z: L._foreach_addcmul_(x, y, z, value=0.5),
    "addcdiv_scalars": lambda L, x, y, z: L._foreach_addcdiv(x, y, z, [0.5, 2.0]),
    "maximum": lambda L, x, y, z: L._foreach_maximum(x, y), "minimum_": lambda L, x, y, z: L._foreach_minimum_(x, 0.5),
    "clamp_min_": lambda L, x, y, z: L._foreach_clamp_min_(x, 0.4), "clamp_max": lambda L, x, y, z: L._foreach_clamp_max(x, y),
    "pow": lambda L, x, y, z: L._foreach_pow(x, 2.0), "pow_list_": lambda L, x, y, z: L._foreach_pow_(x, y),
    "pow_scalar_base": lambda L, x, y, z: L._foreach_pow(2.0, x), "norm": lambda L, x, y, z: L._foreach_norm(x),
    "norm_1": lambda L, x, y, z: L._foreach_norm(x, 1), "max": lambda L, x, y, z: L._foreach_max(x),
    "powsum": lambda L, x, y, z: L._foreach_powsum(x, 3), "copy_": lambda L, x, y, z: L._foreach_copy_(x, y),
    "zero_": lambda L, x, y, z: L._foreach_zero_(x), "clone": lambda L, x, y, z: L._foreach_clone(x)})


@pytest.mark.parametrize("name", sorted(CALLS))
def test_foreach_as_torch(name):
    seen = []
    for L in (tapegrad, torch):
        x, y, z = lists(L, (A, D), (B, D[::-1].copy()), (C, D * 0.5))
        out = CALLS[name](L, x, y, z)
        kind = "same list" if out is x else type(out).__name__
        seen.append((kind, [t.tolist() for t in (out if out is not None else [])], [t.tolist() for t in x]))
    assert seen[0][0] == seen[1][0]
    for ours, theirs in zip(seen[0][1:], seen[1][1:]):
        np.testing.assert_allclose(np.concatenate([np.ravel(a) for a in ours]),
                                   np.concatenate([np.ravel(a) for a in theirs]), rtol=1e-6)


def test_every_torch_foreach_name_is_there():
    assert [n for n in dir(torch) if n.startswith("_foreach_") and not hasattr(tapegrad, n)] == []


@pytest.mark.parametrize("call", [lambda L: L._foreach_add_([L.ones(2)], [L.ones(2), L.ones(2)]),
                                  lambda L: L._foreach_add_([], []), lambda L: L._foreach_norm([])])
def test_foreach_errors_as_torch(call):
    errors = []
    for L in (tapegrad, torch):
        with pytest.raises(RuntimeError) as info:
            call(L)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
