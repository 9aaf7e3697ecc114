"""tapegrad.func (torch.func, torch.vmap) against torch.func in the same process: each case is one program run
on both libraries; the results have the same nested structure (tuples, lists, dicts, namedtuples), the same
shapes, dtypes and values (float64, tight), and the same requires_grad; the errors have torch's types and
messages."""
import collections
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import tapegrad

RNG = np.random.default_rng(11)
A = RNG.uniform(-1, 1, (3,))
B = RNG.uniform(-1, 1, (2, 3))
C = RNG.uniform(-1, 1, (4, 3))
D = RNG.uniform(-1, 1, (3, 4))
S = np.float64(0.7)
Pair = collections.namedtuple("Pair", "first second")


def T(lib, a, requires_grad=False):
    return lib.tensor(a, dtype=lib.float64, requires_grad=requires_grad)


def same(ours, theirs, rtol=1e-10):
    """Same structure and values; a Tensor's shape, dtype and requires_grad too."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tapegrad.Tensor), f"expected a Tensor, got {type(ours)}"
        assert tuple(ours.shape) == tuple(theirs.shape), (tuple(ours.shape), tuple(theirs.shape))
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)
        assert ours.requires_grad == theirs.requires_grad, (ours.requires_grad, theirs.requires_grad)
        return
    if isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs), (ours, theirs)
        for k in theirs:
            same(ours[k], theirs[k], rtol)
        return
    if isinstance(theirs, (tuple, list)):
        assert type(ours).__name__ == type(theirs).__name__, f"{type(ours)} vs {type(theirs)}"
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b, rtol)
        return
    assert ours == theirs


# functions written once, run on both libraries (only Tensor methods: the same code on each)
def f_scalar(x):
    return (x.exp() * x.sin()).sum()


def f_vec(x):
    return x.tanh() * x[0] + x * x


def f_two(x, y):
    return ((y @ x).sin().sum() + (x * x * x).sum()) * (y * y).sum()


def f_two_out(x, y):
    return (y @ x).sin(), (x * x).sum() * y


def f_dict_out(x, y):
    return {"p": (y @ x).cos(), "q": [x.exp(), y.sum()]}


def f_tree_in(d):
    return (d["a"].sin() * d["b"][0]).sum() + (d["b"][1] ** 2).sum()


def f_aux(x):
    return (x ** 3).sum(), {"sq": x * x, "t": (x.sum(), x.cos())}


def f_named(p):
    return Pair(p.first * p.second, (p.first - p.second).exp())


def f_kw(x, scale=1.0):
    return (x.sin() * scale).sum()


def api(lib):
    return lib.func


PROGRAMS = {
    # grad / grad_and_value
    "grad": lambda lib: api(lib).grad(f_scalar)(T(lib, A)),
    "grad_argnums_tuple": lambda lib: api(lib).grad(f_two, argnums=(0, 1))(T(lib, A), T(lib, B)),
    "grad_argnums_second": lambda lib: api(lib).grad(f_two, argnums=1)(T(lib, A), T(lib, B)),
    "grad_argnums_negative": lambda lib: api(lib).grad(f_two, argnums=-1)(T(lib, A), T(lib, B)),
    "grad_has_aux": lambda lib: api(lib).grad(f_aux, has_aux=True)(T(lib, A)),
    "grad_pytree_input": lambda lib: api(lib).grad(f_tree_in)({"a": T(lib, A), "b": (T(lib, A[::-1].copy()),
                                                                                    T(lib, B))}),
    "grad_kwargs": lambda lib: api(lib).grad(f_kw)(T(lib, A), scale=T(lib, S)),
    "grad_and_value": lambda lib: api(lib).grad_and_value(f_two, argnums=(0, 1))(T(lib, A), T(lib, B)),
    "grad_and_value_aux": lambda lib: api(lib).grad_and_value(f_aux, has_aux=True)(T(lib, A)),
    "grad_independent": lambda lib: api(lib).grad(lambda x, y: (y * y).sum(), argnums=0)(T(lib, A), T(lib, B)),
    "grad_grad": lambda lib: api(lib).grad(api(lib).grad(lambda x: (x.sin() * x ** 3)))(T(lib, S)),
    "grad_grad_grad": lambda lib: api(lib).grad(api(lib).grad(api(lib).grad(lambda x: x.exp() * x.cos())))(
        T(lib, S)),
    # requires_grad of the results: the caller's graph is kept, the transform's own is not
    "grad_of_leaf_nonlinear": lambda lib: api(lib).grad(lambda x: (x ** 3).sum())(T(lib, A, True)),
    "grad_of_leaf_linear": lambda lib: api(lib).grad(lambda x: (2 * x).sum())(T(lib, A, True)),
    "grad_no_grad": lambda lib: _under_no_grad(lib, lambda: api(lib).grad(f_scalar)(T(lib, A, True))),
    "grad_closure_param": lambda lib: _closure(lib),
    # vjp
    "vjp": lambda lib: _vjp(lib, f_vec, (T(lib, A),), T(lib, A[::-1].copy())),
    "vjp_two": lambda lib: _vjp(lib, f_two_out, (T(lib, A), T(lib, B)), (T(lib, B[:, 0].copy()), T(lib, B))),
    "vjp_dict": lambda lib: _vjp(lib, f_dict_out, (T(lib, A), T(lib, B)),
                                 {"p": T(lib, A[:2].copy()), "q": [T(lib, A), T(lib, S)]}),
    "vjp_aux": lambda lib: _vjp_aux(lib),
    "vjp_namedtuple": lambda lib: _vjp(lib, f_named, (Pair(T(lib, A), T(lib, A * 2)),),
                                       Pair(T(lib, A), T(lib, A * 3))),
    "vjp_twice": lambda lib: _vjp_twice(lib),
    # jvp
    "jvp": lambda lib: api(lib).jvp(f_vec, (T(lib, A),), (T(lib, A[::-1].copy()),)),
    "jvp_two": lambda lib: api(lib).jvp(f_two_out, (T(lib, A), T(lib, B)), (T(lib, A), T(lib, B * 2))),
    "jvp_dict": lambda lib: api(lib).jvp(f_dict_out, (T(lib, A), T(lib, B)), (T(lib, A), T(lib, B))),
    "jvp_aux": lambda lib: api(lib).jvp(lambda x: (x.sin(), x.cos()), (T(lib, A),), (T(lib, A),), has_aux=True),
    "jvp_independent": lambda lib: api(lib).jvp(lambda x, y: (x.sin(), y * 2), (T(lib, A), T(lib, B)),
                                                (T(lib, A), T(lib, B) * 0 + 1)),
    "jvp_pytree": lambda lib: api(lib).jvp(f_tree_in, ({"a": T(lib, A), "b": (T(lib, A), T(lib, B))},),
                                           ({"a": T(lib, A), "b": (T(lib, A * 2), T(lib, B))},)),
    "jvp_of_leaf": lambda lib: api(lib).jvp(lambda x: x ** 3, (T(lib, A, True),), (T(lib, A),)),
    "linearize": lambda lib: _linearize(lib),
    # jacrev / jacfwd / hessian
    **{f"{j}_{name}": (lambda j, prog: lambda lib: prog(lib, getattr(api(lib), j)))(j, prog)
       for j in ("jacrev", "jacfwd")
       for name, prog in {
           "vec": lambda lib, jac: jac(f_vec)(T(lib, A)),
           "scalar_out": lambda lib, jac: jac(f_scalar)(T(lib, A)),
           "matrix_in": lambda lib, jac: jac(lambda m: m.sin() @ m.t())(T(lib, B)),
           "argnums_tuple": lambda lib, jac: jac(f_two_out, argnums=(0, 1))(T(lib, A), T(lib, B)),
           "argnums_second": lambda lib, jac: jac(f_two_out, argnums=1)(T(lib, A), T(lib, B)),
           "dict_out": lambda lib, jac: jac(f_dict_out, argnums=(0, 1))(T(lib, A), T(lib, B)),
           "has_aux": lambda lib, jac: jac(lambda x: (x.sin(), x.cos()), has_aux=True)(T(lib, A)),
           "pytree_in": lambda lib, jac: jac(f_tree_in)({"a": T(lib, A), "b": (T(lib, A), T(lib, B))}),
           "independent": lambda lib, jac: jac(lambda x, y: y * 2, argnums=0)(T(lib, A), T(lib, B)),
           "of_leaf": lambda lib, jac: jac(lambda x: x ** 2)(T(lib, A, True)),
       }.items()},
    "jacrev_chunk": lambda lib: api(lib).jacrev(f_vec, chunk_size=1)(T(lib, A)),
    "jacfwd_randomness_same": lambda lib: api(lib).jacfwd(f_vec, randomness="same")(T(lib, A)),
    "hessian": lambda lib: api(lib).hessian(f_scalar)(T(lib, A)),
    "hessian_argnums": lambda lib: api(lib).hessian(f_two, argnums=(0, 1))(T(lib, A), T(lib, B)),
    "jacrev_jacrev": lambda lib: api(lib).jacrev(api(lib).jacrev(f_vec))(T(lib, A)),
    "jacrev_jacfwd": lambda lib: api(lib).jacrev(api(lib).jacfwd(f_vec))(T(lib, A)),
    "jacfwd_jacfwd": lambda lib: api(lib).jacfwd(api(lib).jacfwd(f_vec))(T(lib, A)),
    "grad_of_jacrev": lambda lib: api(lib).grad(lambda x: api(lib).jacrev(f_vec)(x).sum())(T(lib, A)),
    "hessian_of_leaf": lambda lib: api(lib).hessian(lambda x: (x ** 4).sum())(T(lib, A, True)),
    # each Jacobian the cheaper way: jacrev of many more outputs than inputs by forward columns, jacfwd of fewer
    # outputs than inputs by reverse rows (the same values, to rounding); then with a closure that requires grad
    "jacrev_tall": lambda lib: api(lib).jacrev(lambda x: (T(lib, B.reshape(6, 1)) * x).sin())(T(lib, A[:2].copy())),
    "jacfwd_wide": lambda lib: api(lib).jacfwd(lambda x: (x.reshape(2, 3) ** 2).sum(1).tanh())(T(lib, B.ravel())),
    "jacrev_tall_hessian": lambda lib: api(lib).jacrev(api(lib).jacrev(
        lambda x: (T(lib, B.reshape(6, 1)) * x).sin().sum(0)))(T(lib, A[:2].copy())),
    # vmap
    "vmap": lambda lib: lib.vmap(f_vec)(T(lib, B)),
    "vmap_func_module": lambda lib: lib.func.vmap(lambda x, y: x @ y)(T(lib, B), T(lib, B)),
    "vmap_in_dims_none": lambda lib: lib.vmap(lambda x, y: x @ y, in_dims=(0, None))(T(lib, C), T(lib, D)),
    "vmap_in_dims_1": lambda lib: lib.vmap(lambda x: x.sin().sum(), in_dims=1)(T(lib, D)),
    "vmap_in_dims_negative": lambda lib: lib.vmap(lambda x, y: x * y, in_dims=(-1, 0))(T(lib, D), T(lib, C)),
    "vmap_out_dims_1": lambda lib: lib.vmap(lambda x: x.exp(), out_dims=1)(T(lib, C)),
    "vmap_out_dims_negative": lambda lib: lib.vmap(lambda x: x.exp(), out_dims=-1)(T(lib, C)),
    "vmap_out_dims_tuple": lambda lib: lib.vmap(lambda x: (x.sin(), x.sum()), out_dims=(1, 0))(T(lib, C)),
    "vmap_out_dims_none": lambda lib: _vmap_out_none(lib),
    "vmap_tree_in_dims": lambda lib: lib.vmap(lambda d, y: d["a"] * d["b"].sum() + y,
                                              in_dims=({"a": 0, "b": 1}, None))(
        {"a": T(lib, C), "b": T(lib, D)}, T(lib, A)),
    "vmap_dict_out": lambda lib: lib.vmap(lambda x: {"s": x.sum(), "l": [x.cos(), x * 2]})(T(lib, C)),
    "vmap_namedtuple_out": lambda lib: lib.vmap(lambda x: Pair(x.sum(), x.exp()))(T(lib, C)),
    "vmap_kwargs": lambda lib: lib.vmap(f_kw)(T(lib, C), scale=T(lib, A)),
    "vmap_nested": lambda lib: lib.vmap(lib.vmap(lambda a, b: (a * b).sum(), in_dims=(None, 0)),
                                        in_dims=(0, None))(T(lib, C), T(lib, D.T.copy())),
    "vmap_chunk": lambda lib: lib.vmap(f_vec, chunk_size=3)(T(lib, C)),
    "vmap_empty_batch": lambda lib: lib.vmap(lambda x: (x * 2, x.sum()))(T(lib, np.zeros((0, 3)))),
    "vmap_grad": lambda lib: lib.vmap(api(lib).grad(f_scalar))(T(lib, C)),
    "vmap_jacrev": lambda lib: lib.vmap(api(lib).jacrev(f_vec))(T(lib, C)),
    "vmap_hessian": lambda lib: lib.vmap(api(lib).hessian(f_scalar))(T(lib, B)),
    "vmap_of_leaf": lambda lib: lib.vmap(lambda x: x ** 2)(T(lib, C, True)),
    "vmap_jvp": lambda lib: lib.vmap(lambda x, t: api(lib).jvp(f_vec, (x,), (t,)))(T(lib, C), T(lib, C * 2)),
    "vmap_vjp": lambda lib: lib.vmap(lambda x, c: api(lib).vjp(f_vec, x)[1](c))(T(lib, C), T(lib, C * 2)),
    "vmap_randomness_same": lambda lib: _random(lib, "same"),
    "vmap_randomness_different": lambda lib: _random(lib, "different"),
    # functional_call, stack_module_state and the tutorials' recipes
    "functional_call": lambda lib: _functional_call(lib),
    "functional_call_dicts": lambda lib: _functional_call(lib, split=True),
    "per_sample_grads": lambda lib: _per_sample_grads(lib),
    "ensembling": lambda lib: _ensemble(lib),
    "stack_module_state": lambda lib: lib.func.stack_module_state([_mlp(lib, seed) for seed in range(3)]),
    "ntk": lambda lib: _ntk(lib),
}


def _under_no_grad(lib, fn):
    with lib.no_grad():
        return fn()


def _closure(lib):
    w = T(lib, A, True)
    return api(lib).grad(lambda x: ((x * w).sin()).sum())(T(lib, A[::-1].copy()))


def _vjp(lib, f, primals, ct):
    out, fn = api(lib).vjp(f, *primals)
    return out, fn(ct)


def _vjp_aux(lib):
    out, fn, aux = api(lib).vjp(f_aux, T(lib, A), has_aux=True)
    return out, fn(T(lib, S)), aux


def _vjp_twice(lib):
    out, fn = api(lib).vjp(f_vec, T(lib, A))
    return fn(T(lib, A)), fn(T(lib, A * 2))


def _linearize(lib):
    out, fn = api(lib).linearize(f_two_out, T(lib, A), T(lib, B))
    return out, fn(T(lib, A), T(lib, B)), fn(T(lib, A * 2), T(lib, B * 0))


def _vmap_out_none(lib):
    y = T(lib, A)
    return lib.vmap(lambda x: (x * 2, y), out_dims=(0, None))(T(lib, C))


def _random(lib, randomness):
    lib.manual_seed(5)
    out = lib.vmap(lambda x: x + lib.rand(3, dtype=lib.float64), randomness=randomness)(T(lib, C))
    return out, lib.rand(2)  # the generator's state after the call


def _mlp(lib, seed):
    rng = np.random.default_rng(seed)
    model = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2)).double()
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.uniform(-1, 1, tuple(p.shape))))
    return model


def _functional_call(lib, split=False):
    model = _mlp(lib, 0)
    params = {k: v.detach() * 1.5 for k, v in model.named_parameters()}
    if split:
        keys = list(params)
        params = ({k: params[k] for k in keys[:2]}, {k: params[k] for k in keys[2:]})
    return lib.func.functional_call(model, params, (T(lib, C),)), model(T(lib, C))


def _per_sample_grads(lib):
    """The per_sample_grads tutorial: vmap(grad(loss of functional_call)), in_dims=(None, None, 0, 0)."""
    model = _mlp(lib, 1)
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    data, targets = T(lib, C), lib.tensor([0, 1, 1, 0])

    def compute_loss(params, buffers, sample, target):
        batch, targets = sample.unsqueeze(0), target.unsqueeze(0)
        predictions = lib.func.functional_call(model, (params, buffers), (batch,))
        return lib.nn.functional.cross_entropy(predictions, targets)
    ft_compute_grad = lib.func.grad(compute_loss)
    return lib.func.vmap(ft_compute_grad, in_dims=(None, None, 0, 0))(params, buffers, data, targets)


def _ensemble(lib):
    """The ensembling tutorial: stack_module_state, then vmap over functional_call of a 'meta' copy."""
    models = [_mlp(lib, seed) for seed in range(4)]
    params, buffers = lib.func.stack_module_state(models)
    base = models[0]

    def fmodel(params, buffers, x):
        return lib.func.functional_call(base, (params, buffers), (x,))
    minibatch = T(lib, C)
    same_batch = lib.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    per_model = lib.vmap(fmodel)(params, buffers, T(lib, np.stack([C] * 4)))
    return same_batch, per_model


def _ntk(lib):
    """The neural_tangent_kernels tutorial: jacrev of functional_call per sample, contracted."""
    model = _mlp(lib, 2)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def fnet_single(params, x):
        return lib.func.functional_call(model, params, (x.unsqueeze(0),)).squeeze(0)
    x1, x2 = T(lib, C), T(lib, B)
    jac1 = lib.vmap(lib.func.jacrev(fnet_single), (None, 0))(params, x1)
    jac2 = lib.vmap(lib.func.jacrev(fnet_single), (None, 0))(params, x2)
    jac1 = [j.flatten(2) for j in jac1.values()]
    jac2 = [j.flatten(2) for j in jac2.values()]
    return lib.stack([lib.einsum("Naf,Mbf->NMab", j1, j2) for j1, j2 in zip(jac1, jac2)]).sum(0)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_as_torch(name):
    theirs = PROGRAMS[name](torch)
    ours = PROGRAMS[name](tapegrad)
    same(ours, theirs)


def test_results_differentiate_again_into_the_callers_leaves():
    def program(lib):
        x, w = T(lib, A, True), T(lib, B, True)
        g = api(lib).grad(f_two, argnums=(0, 1))(x, w)
        jac = api(lib).jacrev(f_vec)(x)
        jf = api(lib).jacfwd(f_vec)(x)
        _, jv = api(lib).jvp(f_vec, (x,), (T(lib, A),))
        per = lib.vmap(api(lib).grad(f_scalar))(w)
        closure = api(lib).grad(lambda y: ((y * x).sin()).sum())(T(lib, A * 2))
        tall = api(lib).jacrev(lambda y: (w.reshape(6, 1) * y).sin())(T(lib, A[:2].copy()))  # forward columns
        wide = api(lib).jacfwd(lambda y: (y.reshape(2, 3) * w).sum(1).tanh())(T(lib, B.ravel()))  # reverse rows
        total = (g[0] ** 2).sum() + g[1].sum() + (jac ** 2).sum() + jf.sum() + jv.sum() + per.sum() + closure.sum() \
            + (tall ** 2).sum() + (wide ** 3).sum()
        return lib.autograd.grad(total, (x, w))
    same(program(tapegrad), program(torch), rtol=1e-9)


def test_vmap_randomness_error_restores_the_generator():
    for lib in (torch, tapegrad):
        lib.manual_seed(3)
        before = lib.rand(2)
        lib.manual_seed(3)
        with pytest.raises(RuntimeError, match="randomness error mode"):
            lib.vmap(lambda x: x + lib.rand(3))(lib.ones(2, 3))
        np.testing.assert_array_equal(lib.rand(2).numpy(), before.numpy())


def test_vmap_is_torch_vmap():
    assert tapegrad.vmap is tapegrad.func.vmap
    for name in tapegrad.func.__all__:
        assert name in torch.func.__all__


ERRORS = {
    "grad_not_scalar": lambda lib: api(lib).grad(lambda x: x * 2)(T(lib, A)),
    "grad_not_tensor": lambda lib: api(lib).grad(lambda x: 3.0)(T(lib, A)),
    "grad_aux_not_pair": lambda lib: api(lib).grad(lambda x: x.sum(), has_aux=True)(T(lib, A)),
    "grad_aux_not_tensor": lambda lib: api(lib).grad(lambda x: (x.sum(), 3), has_aux=True)(T(lib, A)),
    "grad_and_value_not_scalar": lambda lib: api(lib).grad_and_value(lambda x: x)(T(lib, A)),
    "argnum_out_of_range": lambda lib: api(lib).grad(f_scalar, argnums=2)(T(lib, A)),
    "argnums_repeated": lambda lib: api(lib).grad(f_two, argnums=(0, 0))(T(lib, A), T(lib, B)),
    "argnums_empty": lambda lib: api(lib).grad(f_two, argnums=())(T(lib, A), T(lib, B)),
    "argnums_float": lambda lib: api(lib).grad(f_scalar, argnums=0.5)(T(lib, A)),
    "argnums_tuple_float": lambda lib: api(lib).grad(f_two, argnums=(0, 1.0))(T(lib, A), T(lib, B)),
    "grad_non_tensor_arg": lambda lib: api(lib).grad(lambda x, y: x.sum(), argnums=1)(T(lib, A), 2),
    "vjp_not_tensor_output": lambda lib: api(lib).vjp(lambda x: 3, T(lib, A)),
    "vjp_empty_output": lambda lib: api(lib).vjp(lambda x: (), T(lib, A)),
    "vjp_int_output": lambda lib: api(lib).vjp(lambda x: x.long(), T(lib, A)),
    "vjp_aux_not_pair": lambda lib: api(lib).vjp(lambda x: x, T(lib, A), has_aux=True),
    "vjp_cotangent_structure": lambda lib: api(lib).vjp(f_vec, T(lib, A))[1]((T(lib, A),)),
    "vjp_cotangent_shape": lambda lib: api(lib).vjp(f_vec, T(lib, A))[1](T(lib, B)),
    "jvp_primals_not_tuple": lambda lib: api(lib).jvp(f_vec, T(lib, A), (T(lib, A),)),
    "jvp_structure": lambda lib: api(lib).jvp(f_vec, (T(lib, A),), T(lib, A)),
    "jvp_empty": lambda lib: api(lib).jvp(f_vec, (), ()),
    "jvp_non_tensor_primal": lambda lib: api(lib).jvp(f_vec, (3.0,), (1.0,)),
    "jvp_tangent_size": lambda lib: api(lib).jvp(f_vec, (T(lib, A),), (T(lib, B),)),
    "jvp_int_primal": lambda lib: api(lib).jvp(f_vec, (lib.ones(3, dtype=lib.int64),), (T(lib, A),)),
    "jvp_not_tensor_output": lambda lib: api(lib).jvp(lambda x: 3, (T(lib, A),), (T(lib, A),)),
    "jvp_aux_not_pair": lambda lib: api(lib).jvp(lambda x: x, (T(lib, A),), (T(lib, A),), has_aux=True),
    "jvp_strict": lambda lib: api(lib).jvp(lambda x: (x * 2, T(lib, B)), (T(lib, A),), (T(lib, A),), strict=True),
    "jacrev_chunk_size": lambda lib: api(lib).jacrev(f_vec, chunk_size=0),
    "jacrev_not_tensor_output": lambda lib: api(lib).jacrev(lambda x: 3)(T(lib, A)),
    "jacfwd_randomness": lambda lib: api(lib).jacfwd(lambda x: x + lib.rand(3, dtype=lib.float64))(T(lib, A)),
    "jacfwd_bad_randomness": lambda lib: api(lib).jacfwd(f_vec, randomness="x")(T(lib, A)),
    "linearize_tangent_shape": lambda lib: api(lib).linearize(f_vec, T(lib, A))[1](T(lib, B)),
    "linearize_tangent_structure": lambda lib: api(lib).linearize(f_vec, T(lib, A))[1](T(lib, A), T(lib, A)),
    "vmap_randomness_arg": lambda lib: lib.vmap(f_vec, randomness="x"),
    "vmap_chunk_size": lambda lib: lib.vmap(f_vec, chunk_size=0),
    "vmap_no_inputs": lambda lib: lib.vmap(f_vec)(),
    "vmap_in_dims_list": lambda lib: lib.vmap(f_vec, in_dims=[0])(T(lib, C)),
    "vmap_in_dims_float": lambda lib: lib.vmap(f_vec, in_dims=0.5)(T(lib, C)),
    "vmap_in_dims_structure": lambda lib: lib.vmap(f_vec, in_dims=(0, 0))(T(lib, C)),
    "vmap_in_dims_nested_structure": lambda lib: lib.vmap(f_tree_in, in_dims=({"a": 0},))(
        {"a": T(lib, C), "b": (T(lib, C), T(lib, C))}),
    "vmap_in_dim_out_of_range": lambda lib: lib.vmap(f_vec, in_dims=(2,))(T(lib, C)),
    "vmap_in_dim_string": lambda lib: lib.vmap(f_vec, in_dims=("a",))(T(lib, C)),
    "vmap_non_tensor_mapped": lambda lib: lib.vmap(lambda x, y: x, in_dims=(0, 0))(T(lib, C), 3),
    "vmap_nothing_mapped": lambda lib: lib.vmap(f_vec, in_dims=(None,))(T(lib, C)),
    "vmap_batch_sizes": lambda lib: lib.vmap(lambda x, y: x)(T(lib, C), T(lib, B)),
    "vmap_non_tensor_output": lambda lib: lib.vmap(lambda x: 3)(T(lib, C)),
    "vmap_out_dims_structure": lambda lib: lib.vmap(lambda x: (x, x), out_dims=(0, 0, 0))(T(lib, C)),
    "vmap_out_dims_single_tuple": lambda lib: lib.vmap(lambda x: x, out_dims=(0, 0))(T(lib, C)),
    "vmap_out_dims_string": lambda lib: lib.vmap(f_vec, out_dims="a")(T(lib, C)),
    "vmap_out_dim_range": lambda lib: lib.vmap(f_vec, out_dims=5)(T(lib, C)),
    "vmap_batched_out_dims_none": lambda lib: lib.vmap(lambda x: x * 2, out_dims=None)(T(lib, C)),
    "vmap_randomness_error": lambda lib: lib.vmap(lambda x: x + lib.rand(3, dtype=lib.float64))(T(lib, C)),
    "vmap_dropout": lambda lib: lib.vmap(lib.nn.Dropout(0.5))(T(lib, C)),
    "vmap_partial_name": lambda lib: lib.vmap(__import__("functools").partial(f_kw, scale=2.0), in_dims=[0])(
        T(lib, C)),
    "functional_call_repeated_keys": lambda lib: lib.func.functional_call(
        _mlp(lib, 0), ({"0.weight": T(lib, np.ones((5, 3)))}, {"0.weight": T(lib, np.ones((5, 3)))}), T(lib, C)),
    "functional_call_not_dicts": lambda lib: lib.func.functional_call(_mlp(lib, 0), [{}, 3], T(lib, C)),
    "functional_call_bad_type": lambda lib: lib.func.functional_call(_mlp(lib, 0), 3, T(lib, C)),
    "functional_call_strict": lambda lib: lib.func.functional_call(
        _mlp(lib, 0), {"0.weight": T(lib, np.ones((5, 3)))}, (T(lib, C),), strict=True),
    "stack_module_state_empty": lambda lib: lib.func.stack_module_state([]),
    "stack_module_state_modes": lambda lib: lib.func.stack_module_state([_mlp(lib, 0), _mlp(lib, 1).eval()]),
    "stack_module_state_classes": lambda lib: lib.func.stack_module_state([_mlp(lib, 0), lib.nn.Linear(3, 5)]),
    "stack_module_state_requires_grad": lambda lib: lib.func.stack_module_state(
        [_mlp(lib, 0), _mlp(lib, 1).requires_grad_(False)]),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_torchs(name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(type(theirs.value)) as ours:
        ERRORS[name](tapegrad)
    assert str(ours.value) == str(theirs.value)


# a script with `import torch` and `from torch.func import ...`: run by Python (real torch) and by the launcher
PER_SAMPLE_SCRIPT = """\
# Per-sample gradients, as pytorch/tutorials' per_sample_grads: vmap(grad(loss of functional_call)).
import torch
import torch.func
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap, jacrev, hessian

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


model = Net().double()
data = torch.randn(32, 8, dtype=torch.float64)
targets = torch.randint(4, (32,))
params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
    return F.cross_entropy(predictions, target.unsqueeze(0))


per_sample = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
for name, g in per_sample.items():
    manual = torch.stack([torch.autograd.grad(compute_loss(dict(model.named_parameters()), buffers, x, t),
                                              dict(model.named_parameters())[name])[0]
                          for x, t in zip(data[:3], targets[:3])])
    print(name, tuple(g.shape), f"{g.abs().sum().item():.12f}", torch.allclose(g[:3], manual))
print("vmap is torch.func.vmap:", torch.vmap is torch.func.vmap)
print("hessian", f"{hessian(lambda x: (x.sin() ** 3).sum())(data[0]).sum().item():.12f}")
print("jacrev", f"{jacrev(lambda x: model(x))(data[0]).sum().item():.12f}")
"""


def test_per_sample_grads_script_under_the_launcher(tmp_path):
    path = tmp_path / "per_sample.py"
    path.write_text(PER_SAMPLE_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root, PYTHONWARNINGS="ignore")
    outs = [subprocess.run([sys.executable, *args, str(path)], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=300) for args in ([], ["-m", "tapegrad"])]
    for out in outs:
        assert out.returncode == 0, out.stderr
    assert "fc1.weight (32, 16, 8)" in outs[0].stdout and "False" not in outs[0].stdout
    assert outs[1].stdout == outs[0].stdout


def _nested_on_constants(lib):
    """Transforms nested over tensors that need no grad: the inner transform's own leaves are inside the outer call,
    so no result requires grad (before, each did, and a loop `w = w - lr * grad(grad(f))(w)` chained its graphs)."""
    F = api(lib)
    x, w = T(lib, A), T(lib, S)
    g = F.grad(lambda w: F.grad(lambda x: (w * x * x).sum())(x).sum())(w)
    jac = F.jacrev(lambda v: F.grad(lambda x: (lib.tanh(v * x) * x).sum())(x))(T(lib, A))
    jf = F.jacfwd(F.grad(lambda x: (x ** 3).sum()))(x)
    gj = F.grad(lambda v: F.jacrev(lambda x: (v * x).sin())(x).sum())(T(lib, A))
    hv = lib.vmap(F.hessian(lambda x: (x ** 3).sum()))(T(lib, B))
    for _ in range(3):
        w = w - 0.1 * F.grad(lambda w: F.grad(lambda x: (w * x * x).sum())(x).sum())(w)
    return g, jac, jf, gj, hv, w


def test_nested_transforms_of_constants_require_no_grad():
    same(_nested_on_constants(tapegrad), _nested_on_constants(torch))
