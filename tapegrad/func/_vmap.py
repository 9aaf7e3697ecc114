"""torch.vmap / torch.func.vmap, computed as a loop: each mapped input is sliced along its in_dim, func runs
once per slice, and the outputs are stacked along their out_dims. The values, shapes, nesting and errors are
torch's; it is not faster than the loop a program would write (torch batches the ops instead)."""
import functools

import numpy as np

from .. import ops
from ..random import get_rng_state, set_rng_state
from ..tensor import Tensor, _new
from ._pytree import broadcast_to_and_flatten, tree_flatten, tree_unflatten

__all__ = ["vmap"]

RANDOMNESS_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' "
                    "or 'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _get_name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def check_randomness_arg(randomness):
    if randomness not in ["error", "different", "same"]:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over a dimension of its inputs: vmap(f)(x)[i] == f(x[i]). in_dims / out_dims: an int, None
    (not mapped / not batched), or a pytree prefix of the inputs / outputs. randomness: 'error' raises if
    func draws from the default generator, 'different' gives each slice its own draws, 'same' replays the
    generator's state for every slice. chunk_size is accepted (the loop is one slice at a time anyway)."""
    check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_impl(func, in_dims, out_dims, randomness, args, kwargs)
    return wrapped


def _check_out_dims(out_dims, func):
    if isinstance(out_dims, int):
        return
    for x in tree_flatten(out_dims)[0]:
        if not (x is None or isinstance(x, int)):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None "
                             f"or a python collection of ints representing where in the outputs the vmapped "
                             f"dimension should appear.")


def _process_batched_inputs(in_dims, args, func):
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         f"trying to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {args_spec}.")
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        if not isinstance(in_dim, int) and in_dim is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input "
                             f"but in_dim must be either an integer dimension or None.")
        if isinstance(in_dim, int) and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input "
                             f"but the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, "
                             f"please use None as the respective in_dim")
        if in_dim is not None and (in_dim < -arg.dim() or in_dim >= arg.dim()):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some "
                             f"input, but that input is a Tensor of dimensionality {arg.dim()} so expected in_dim "
                             f"to satisfy -{arg.dim()} <= in_dim < {arg.dim()}.")
        if in_dim is not None and in_dim < 0:
            flat_in_dims[i] = in_dim % arg.dim()
    sizes = [arg.size(d) for d, arg in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0], flat_in_dims, flat_args, args_spec


def _slice(flat_args, flat_in_dims, args_spec, b):
    return tree_unflatten([a if d is None else a.select(d, b) for a, d in zip(flat_args, flat_in_dims)], args_spec)


def _vmap_impl(func, in_dims, out_dims, randomness, args, kwargs):
    _check_out_dims(out_dims, func)
    batch_size, flat_in_dims, flat_args, args_spec = _process_batched_inputs(in_dims, args, func)
    state = get_rng_state() if randomness in ("error", "same") else None
    if batch_size == 0:
        # no slice to call func on: call it on zeros of a slice's shape, for the outputs' shapes
        empty = [a if d is None else _new(np.zeros(a.shape[:d] + a.shape[d + 1:], a._data.dtype))
                 for a, d in zip(flat_args, flat_in_dims)]
        outs = [func(*tree_unflatten(empty, args_spec), **kwargs)]
    else:
        outs = []
        for b in range(batch_size):
            if randomness == "same" and b:
                set_rng_state(state)
            outs.append(func(*_slice(flat_args, flat_in_dims, args_spec, b), **kwargs))
    if randomness == "error" and not np.array_equal(get_rng_state()._data, state._data):
        set_rng_state(state)
        raise RuntimeError(RANDOMNESS_ERROR)
    return _unwrap_batched(outs, out_dims, batch_size, func)


def _unwrap_batched(outs, out_dims, batch_size, func):
    name = _get_name(func)
    flat_first, output_spec = tree_flatten(outs[0])

    def incompatible_error():
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs "
                         f"has structure {output_spec}.")
    if isinstance(outs[0], Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            flat_out_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_out_dims = list(out_dims)
        else:
            incompatible_error()
    else:
        flat_out_dims = broadcast_to_and_flatten(out_dims, output_spec)
        if flat_out_dims is None:
            incompatible_error()
    flats = [flat_first] + [tree_flatten(o)[0] for o in outs[1:]]
    result = []
    for k, out_dim in enumerate(flat_out_dims):
        slices = [f[k] for f in flats]
        first = slices[0]
        if out_dim is None:
            # torch returns an unbatched output as is; the loop's is one where every slice gave the same
            if isinstance(first, Tensor) and batch_size and any(
                    s is not first and not (isinstance(s, Tensor) and s.shape == first.shape
                                            and np.array_equal(s._data, first._data, equal_nan=True))
                    for s in slices[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            result.append(first)
            continue
        if not isinstance(first, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(first)}. Did you "
                             f"mean to set out_dims= to None for output?")
        if batch_size == 0:
            stacked = ops.stack([first], out_dim)
            result.append(stacked.narrow(out_dim % stacked.dim(), 0, 0))
        else:
            result.append(ops.stack(slices, out_dim))
    return tree_unflatten(result, output_spec)
