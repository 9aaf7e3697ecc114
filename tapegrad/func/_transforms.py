"""torch.func's autodiff transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize) on
tapegrad's reverse mode, with torch's signatures, result structures and errors.

Each call is a level of differentiation: the inputs it differentiates are marked (forward_ad.differentiable:
an alias where an input already requires grad, so an outer transform's graph stays connected, else a fresh
leaf), the function runs under enable_grad, and the gradients are taken with create_graph where a result
reaches a tensor outside the call that requires grad (_graph_needed), so that transforms nest (grad(grad(f)),
jacrev(jacrev(f)), vmap(grad(f))) and a top-level call replays plain backwards. A result is then
detached unless its graph reaches a tensor that requires grad outside the call (an outer transform's input,
the caller's leaf, a parameter the function read), which is what torch's unwrapping to the outer level
gives. jvp, jacfwd and linearize are forward mode by the double-vjp trick (forward_ad.forward_grads): one
forward, one recorded backward, then one backward per tangent. jacrev and jacfwd build a Jacobian whichever way
is cheaper: reverse rows (a backward per output element) or forward columns (one per input element).
"""
import functools

import numpy as np

from ..autograd.api import _stack
from ..autograd.forward_ad import (_reaches_other_leaf, check_tangent_size, differentiable, forward_grads, own_leaves,
                                   undo)
from ..autograd.functional import _autograd_grad
from ..grad_mode import enable_grad, is_grad_enabled
from ..random import get_rng_state, set_rng_state
from ..tensor import Tensor, _new
from ._pytree import tree_flatten, tree_unflatten, treespec_pprint
from ._vmap import RANDOMNESS_ERROR, check_randomness_arg

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]

jvp_str = "jvp(f, primals, tangents)"


# -- argnums, as torch._functorch.eager_transforms -----------------------------------------------------------
def _validate_and_wrap_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _validate_and_wrap_argnums(argnums, num_args):
    if isinstance(argnums, int):
        return _validate_and_wrap_argnum(argnums, num_args)
    return tuple(_validate_and_wrap_argnum(a, num_args) for a in argnums)


def _slice_argnums(args, argnums, as_tuple=True):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    argnums = _validate_and_wrap_argnums(argnums, len(args))
    if isinstance(argnums, tuple):
        if len(argnums) == 0:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return tuple(args[i] for i in argnums)
    return (args[argnums],) if as_tuple else args[argnums]


def _replace_args(args, new, argnums):
    """args with the (validated) argnums' entries replaced by `new` (one value for an int argnums)."""
    argnums = _validate_and_wrap_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return tuple(new if i == argnums else a for i, a in enumerate(args))
    return tuple(new[argnums.index(i)] if i in argnums else a for i, a in enumerate(args))


# -- levels ---------------------------------------------------------------------------------------------------
def _mark(tree):
    """(the tree with each Tensor marked differentiable, its marked leaves, its spec)."""
    flat, spec = tree_flatten(tree)
    marked = []
    for x in flat:
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        marked.append(differentiable(x))
    return tree_unflatten(marked, spec), marked, spec


def _mark_args(args, argnums):
    """(the call's args with the differentiated ones marked, the marked leaves, the differentiated args' spec);
    argnums None: every arg."""
    if argnums is None:
        return _mark(args)
    diff = _slice_argnums(args, argnums, as_tuple=False)
    marked, flat, spec = _mark(diff)
    return _replace_args(args, marked, argnums), flat, spec


def _undo_tree(tree, own):
    """A pytree of Tensors (aux) as the caller sees it; torch requires aux to hold only Tensors."""
    flat, spec = tree_flatten(tree)
    for x in flat:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
    return tree_unflatten(list(undo(flat, own)), spec)


def _graph_needed(outputs, own, grad_enabled):
    """Whether a transform records its gradients (create_graph): where grad mode is on and an output reaches a
    tensor that requires grad outside the call (an outer transform's input, the caller's leaf, a parameter the
    function read). Otherwise its results are detached anyway, and each backward is the plain compiled replay:
    jacrev of R^32 -> R^2048 at the top level took 1.4 s recording its 2,048 backwards, 266 ms plain."""
    if not grad_enabled:  # (the caller's grad mode, read before the transform's enable_grad)
        return False
    closed = set()
    return any(isinstance(o, Tensor) and o.requires_grad and _reaches_other_leaf(o, own, closed) for o in outputs)


def _zeros(shape, like):
    return _new(np.zeros(tuple(shape), like._data.dtype))


def _grads(outputs, inputs, grad_outputs, retain_graph, create_graph):
    """torch.func's _autograd_grad: zeros for an input the outputs do not depend on."""
    res = _autograd_grad(tuple(outputs), tuple(inputs), None if grad_outputs is None else tuple(grad_outputs),
                         create_graph=create_graph, retain_graph=retain_graph)
    return tuple(_zeros(i.shape, i) if r is None else r for r, i in zip(res, inputs))


def _split_aux(output, has_aux, api):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _assert_non_empty_tensor_output(output, api):
    if (len(output) == 1 and output[0] is None) or len(output) < 1:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {output})")
    for o in output:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def _assert_non_empty_list_of_tensors(output, api, argname):
    if len(output) == 0:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for out in output:
        if not isinstance(out, Tensor):
            raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got {type(out)}")


# -- grad, grad_and_value --------------------------------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of func with respect to the argnums, func's value); with has_aux,
    func returns (output, aux) and the function (gradient, (output, aux))."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of func (a scalar Tensor) with respect to the argnums (an int or a
    tuple: the gradient then a tuple); with has_aux, (gradient, aux)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, (_, aux) = _grad_and_value(func, argnums, has_aux, args, kwargs, aux_pair=True)
        return (g, aux) if has_aux else g
    return wrapper


def _grad_and_value(func, argnums, has_aux, args, kwargs, aux_pair=False):
    grad_enabled = is_grad_enabled()
    with enable_grad():
        call_args, flat_diff, spec = _mark_args(args, argnums)
        output = func(*call_args, **kwargs)
        output, aux = _split_aux(output, has_aux, "grad_and_value(f)(*args)")
        if not isinstance(output, Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                               f"with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        own = own_leaves(flat_diff)
        flat_grad = _grads((output,), flat_diff, None, retain_graph=True,
                           create_graph=_graph_needed((output,), own, grad_enabled))
    grad_input = tree_unflatten(list(undo(flat_grad, own)), spec)
    output = undo((output,), own)[0]
    if has_aux:
        return grad_input, (output, _undo_tree(aux, own))
    return grad_input, ((output, None) if aux_pair else output)


# -- vjp, jacrev -----------------------------------------------------------------------------------------------
def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn) (with has_aux, (output, vjp_fn, aux)): vjp_fn(cotangents) gives the
    vector-Jacobian products with respect to each primal, a tuple."""
    return _vjp_with_argnums(func, *primals, has_aux=has_aux)


def _vjp_core(func, primals, argnums, has_aux):
    grad_enabled = is_grad_enabled()
    with enable_grad():
        call_args, flat_diff, diff_spec = _mark_args(primals, argnums)
        out = func(*call_args)
        out, aux = _split_aux(out, has_aux, "vjp(f, *primals)")
        own = own_leaves(flat_diff)
        if has_aux:
            aux = _undo_tree(aux, own)
        flat_out, out_spec = tree_flatten(out)
        _assert_non_empty_tensor_output(flat_out, "vjp(f, *primals)")
        for o in flat_out:
            if not o.is_floating_point():
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                                   f"Tensor with dtype {o.dtype}")
    return flat_out, out_spec, flat_diff, diff_spec, aux, own, _graph_needed(flat_out, own, grad_enabled)


def _vjp_with_argnums(func, *primals, argnums=None, has_aux=False):
    flat_out, out_spec, flat_diff, diff_spec, aux, own, _ = _vjp_core(func, primals, argnums, has_aux)

    def wrapper(cotangents, retain_graph=True, create_graph=None):
        if create_graph is None:
            create_graph = is_grad_enabled()
        flat_cotangents, cotangents_spec = tree_flatten(cotangents)
        if out_spec != cotangents_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {treespec_pprint(cotangents_spec)}, primal "
                               f"output: {treespec_pprint(out_spec)}")
        result = _grads(flat_out, flat_diff, flat_cotangents, retain_graph=retain_graph, create_graph=create_graph)
        return tree_unflatten(list(undo(result, own)), diff_spec)

    results = tree_unflatten(list(undo(flat_out, own)), out_spec)
    if has_aux:
        return results, wrapper, aux
    return results, wrapper


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of func with respect to the argnums, by reverse rows (a backward per output element), or by
    forward columns where there are more than twice as many outputs as inputs: for each output, out.shape +
    input.shape, nested as the outputs and the argnums."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper_fn(*args):
        flat_out, out_spec, flat_diff, _, aux, own, create_graph = _vjp_core(func, args, argnums, has_aux)
        _, primals_spec = tree_flatten(_slice_argnums(args, argnums))
        if sum(o.numel() for o in flat_out) > 2 * sum(p.numel() for p in flat_diff):
            # many more outputs than inputs: the same Jacobian by forward columns (the double-vjp trick: one
            # recorded backward, then a backward per input element), 2,048 outputs of 32 inputs: 266 -> 4-8 ms
            with enable_grad():
                u_ids, push = forward_grads(tuple(flat_out), tuple(flat_diff))
            flat = _forward_columns(flat_out, flat_diff, push, create_graph)
            own = own | u_ids
        else:
            flat = _reverse_rows(flat_out, flat_diff, create_graph)
        flat = list(undo(flat, own))
        m = len(flat_diff)
        flat_output_input = tuple(tree_unflatten(flat[i * m:(i + 1) * m], primals_spec)
                                  for i in range(len(flat_out)))
        if isinstance(argnums, int):
            flat_output_input = tuple(x[0] for x in flat_output_input)
        output_input = tree_unflatten(list(flat_output_input), out_spec)
        return (output_input, aux) if has_aux else output_input
    return wrapper_fn


# -- jvp, jacfwd, hessian, linearize --------------------------------------------------------------------------
def _check_tangents(flat_primals, flat_tangents):
    for p, t in zip(flat_primals, flat_tangents):
        if not p.is_floating_point():
            raise ValueError(f"Expected primal to be floating point or complex, but got: {p.dtype}")
        if not t.is_floating_point():
            raise ValueError(f"Expected tangent to be floating point or complex, but got: {t.dtype}")
        check_tangent_size(p, t)


def _jvp_core(func, args, argnums, has_aux, pushes=True):
    """(flat outputs, their spec, aux, push, own, create_graph) for forward mode at args (forward_ad.forward_grads);
    pushes=False: the marked inputs in push's place, for reverse rows instead (jacfwd of fewer outputs)."""
    grad_enabled = is_grad_enabled()
    with enable_grad():
        call_args, flat_marked, _ = _mark_args(args, argnums)
        out = func(*call_args)
        out, aux = _split_aux(out, has_aux, jvp_str)
        own = own_leaves(flat_marked)
        if has_aux:
            aux = _undo_tree(aux, own)
        flat_out, spec = tree_flatten(out)
        _assert_non_empty_tensor_output(flat_out, jvp_str)
        create_graph = _graph_needed(flat_out, own, grad_enabled)
        if not pushes:
            return flat_out, spec, aux, flat_marked, own, create_graph
        u_ids, push = forward_grads(tuple(flat_out), tuple(flat_marked))
    return flat_out, spec, aux, push, own | u_ids, create_graph


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J·tangents) (with has_aux, and aux): the Jacobian-vector product."""
    return _jvp_with_argnums(func, primals, tangents, argnums=None, strict=strict, has_aux=has_aux)


def _jvp_with_argnums(func, primals, tangents, argnums, *, strict=False, has_aux):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{jvp_str}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    diff_args = primals if argnums is None else _slice_argnums(primals, argnums)
    flat_primals, primals_spec = tree_flatten(diff_args)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{jvp_str}: Expected primals and tangents to have the same python structure. For "
                           f"example, if primals is a tuple of 3 tensors, tangents also must be. Got primals with "
                           f"structure {primals_spec} and tangents with structure {tangents_spec}")
    _assert_non_empty_list_of_tensors(flat_primals, jvp_str, "primals")
    _assert_non_empty_list_of_tensors(flat_tangents, jvp_str, "tangents")
    _check_tangents(flat_primals, flat_tangents)
    flat_out, spec, aux, push, own, create_graph = _jvp_core(func, primals, argnums, has_aux)
    create_graph = create_graph or (is_grad_enabled() and any(t.requires_grad for t in flat_tangents))
    tangents_out = []
    for o, t in zip(flat_out, push(tuple(flat_tangents), create_graph)):
        if t is None:
            if strict:
                raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                                   "inputs. This is not allowed with strict=True.")
            t = _zeros(o.shape, o)
        tangents_out.append(t)
    primals_out = tree_unflatten(list(undo(flat_out, own)), spec)
    tangents_out = tree_unflatten(list(undo(tangents_out, own)), spec)
    if has_aux:
        return primals_out, tangents_out, aux
    return primals_out, tangents_out


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func with respect to the argnums by forward columns (a backward of the double-vjp trick
    per input element), or by reverse rows where there are fewer outputs than inputs: for each output,
    out.shape + input.shape, nested as the outputs and argnums.
    randomness as vmap's ('error' raises if func draws from the default generator; func runs once)."""
    @functools.wraps(func)
    def wrapper_fn(*args):
        check_randomness_arg(randomness)
        primals = args if argnums is None else _slice_argnums(args, argnums)
        flat_primals, primals_spec = tree_flatten(primals)
        state = get_rng_state() if randomness == "error" else None
        flat_out, spec, aux, marked, own, create_graph = _jvp_core(func, args, argnums, has_aux, pushes=False)
        if state is not None and not np.array_equal(get_rng_state()._data, state._data):
            set_rng_state(state)
            raise RuntimeError(RANDOMNESS_ERROR)
        if sum(o.numel() for o in flat_out) < sum(p.numel() for p in flat_primals):
            # fewer outputs than inputs: the same Jacobian by reverse rows, one plain backward each, where each
            # column would cost a backward through the recorded first one (2,048 inputs to 32: 3.8 s a call)
            flat = _reverse_rows(flat_out, marked, create_graph)
        else:
            with enable_grad():
                u_ids, push = forward_grads(tuple(flat_out), tuple(marked))
            own = own | u_ids
            flat = _forward_columns(flat_out, flat_primals, push, create_graph)
        flat = list(undo(flat, own))
        m = len(flat_primals)
        jac_outs_ins = tuple(tree_unflatten(flat[i * m:(i + 1) * m], primals_spec) for i in range(len(flat_out)))
        if isinstance(argnums, int):
            jac_outs_ins = tuple(x[0] for x in jac_outs_ins)
        result = tree_unflatten(list(jac_outs_ins), spec)
        return (result, aux) if has_aux else result
    return wrapper_fn


def _forward_columns(flat_out, flat_primals, push, create_graph):
    """Each output's Jacobian with respect to each primal, output-major, a column per primal element (push)."""
    cols = [[[] for _ in flat_primals] for _ in flat_out]  # cols[i][j]: J_ij's columns, one per element
    for j, p in enumerate(flat_primals):
        n = p.numel()
        for k in range(n):
            seed = np.zeros(n, p._data.dtype)
            seed[k] = 1
            tangents = [None] * len(flat_primals)
            tangents[j] = _new(seed.reshape(p.shape))
            for i, t in enumerate(push(tangents, create_graph)):
                cols[i][j].append(t)
    flat = []
    for o, per_in in zip(flat_out, cols):
        for p, c in zip(flat_primals, per_in):
            shape = tuple(o.shape) + tuple(p.shape)
            if not c or all(t is None for t in c):
                flat.append(_zeros(shape, o))
                continue
            c = [_zeros(o.shape, o) if t is None else t for t in c]
            flat.append(_stack(c, create_graph).movedim(0, -1).reshape(shape))
    return flat


def _reverse_rows(flat_out, marked, create_graph):
    """Each output's Jacobian with respect to each marked input, output-major, a row per output element (one
    backward each): jacrev's, also jacfwd's where there are fewer outputs than inputs. Under enable_grad, as
    torch's transforms differentiate whatever the caller's grad mode (create_graph keeps results detached)."""
    with enable_grad():
        return _reverse_rows_enabled(flat_out, marked, create_graph)


def _reverse_rows_enabled(flat_out, marked, create_graph):
    flat = []
    for o in flat_out:
        n = o.numel()
        rows = [[] for _ in marked]
        if o.requires_grad and n:
            flat_o = o.reshape(-1)
            for k in range(n):
                seed = np.zeros(n, o._data.dtype)
                seed[k] = 1
                for r, gj in zip(rows, _grads((flat_o,), marked, (_new(seed),), retain_graph=True,
                                              create_graph=create_graph)):
                    r.append(gj)
        flat += [_stack(r, create_graph).reshape(tuple(o.shape) + tuple(p.shape)) if r
                 else _zeros(tuple(o.shape) + tuple(p.shape), p) for r, p in zip(rows, marked)]
    return flat


def hessian(func, argnums=0):
    """The Hessian of a scalar func with respect to the argnums: jacfwd(jacrev(func, argnums), argnums)."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) gives J·tangents at primals without running func again."""
    flat_primals, primals_argspec = tree_flatten(primals)
    flat_out, output_spec, _, push, own, _ = _jvp_core(func, primals, None, False)
    output = tree_unflatten(list(undo(flat_out, own)), output_spec)

    def jvp_fn(*tangents):
        flat_tangents, tangent_argspec = tree_flatten(tangents)
        if tangent_argspec != primals_argspec:
            raise RuntimeError(f"Expected the tangents {tangent_argspec} to have the same argspec as the primals "
                               f"{primals_argspec}")
        for idx, (t, p) in enumerate(zip(flat_tangents, flat_primals)):
            if t.shape != p.shape:
                raise RuntimeError(f"tangent:{idx} with shape {t.shape} in flattened pytree doesn't match the shape "
                                   f"{p.shape} of the corresponding primal.")
            if t.dtype != p.dtype:
                raise RuntimeError(f"tangent:{idx} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{p.dtype} of the corresponding primal.")
        res = [_zeros(o.shape, o) if t is None else t
               for o, t in zip(flat_out, push(tuple(flat_tangents), is_grad_enabled()))]
        return tree_unflatten(list(undo(res, own)), output_spec)
    return output, jvp_fn
