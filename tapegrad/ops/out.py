"""`out=` on the torch functions that offer it: the result is computed, then written into `out` (resized as
torch resizes it, cast as torch casts it) and `out` itself is returned. As torch, out= is refused while grad
mode is on and any argument (out included) requires grad: such a write has no derivative.

The wrapped functions are the `tapegrad.` names only; Tensor methods (which take no out=) and the operators
call the unwrapped ops, so the hot path pays nothing for this.
"""
import functools
import inspect
import warnings

import numpy as np

from .. import _dtype, creation
from ..grad_mode import is_grad_enabled, no_grad
from ..tensor import Tensor, VIEWS
from .shape import _check_writable, _written
from . import sparse as _sparse
from .._warnings import user_stacklevel



def write_out(out, result, name):
    """Write result's value into out (torch's resize and cast rules); returns out."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    value = result._data
    target = out._data
    if value.dtype != target.dtype:
        rank = "bifc".index
        if rank(value.dtype.kind if value.dtype.kind != "u" else "i") > rank(
                target.dtype.kind if target.dtype.kind != "u" else "i"):
            raise RuntimeError(f"result type {_dtype.scalar_type_name(value.dtype)} can't be cast to the desired "
                               f"output type {_dtype.scalar_type_name(target.dtype)}")
    if target.shape != value.shape:
        # (at the caller's line; factories resize silently, arange says so)
        if name == "arange" and target.size != value.size:
            warnings.warn(f"The number of elements in the out tensor of shape {list(target.shape)} is {target.size} "
                          f"which does not match the computed number of elements {value.size}. Note that this may "
                          f"occur as a result of rounding error. The out tensor will be resized to a tensor of shape "
                          f"{tuple(value.shape)}.", UserWarning, stacklevel=user_stacklevel())
        elif target.size and name not in _CREATION:
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(target.shape)}, which does not match the required output shape "
                          f"{list(value.shape)}. This behavior is deprecated, and in a future PyTorch release "
                          f"outputs will not be resized unless they have zero elements. You can explicitly reuse "
                          f"an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
                          UserWarning, stacklevel=user_stacklevel())
        out._data = target = np.empty(value.shape, target.dtype)
        out._window = out._base = None  # (a storage of its own now)
    _check_writable(out)
    np.copyto(target, value, casting="unsafe")
    out._ensure_vc()[0] += 1
    if out._window is not None or VIEWS:
        _written(out)  # (an out= view: its base sees the result)
    return out


def _tensors_in(args):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensors_in(a)


def with_out(fn, name=None):
    """fn with torch's `out=` keyword. The wrapper has fn's own parameters (generated from its signature), so a
    call without out= costs one plain call more; a signature with *args or **kwargs gets a generic wrapper."""
    name = name or fn.__name__
    dtype_at = _positional_index(fn, "dtype")

    def finish(out, args, kwargs):
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if is_grad_enabled() and any(t._requires_grad for t in _tensors_in(args + tuple(kwargs.values()) + outs)):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                               f"differentiation, but one of the arguments requires grad.")
        if name in ("sum", "mean") and len(args) < 2 and kwargs.get("dim") is None:
            raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, out=Tensor)")
        if name in _CREATION and isinstance(out, Tensor):  # (a factory makes out's dtype: rand draws its stream)
            args, kwargs = _with_dtype(args, kwargs, dtype_at, out.dtype)
        autocast, _dtype.autocast_state.dtype = _dtype.autocast_state.dtype, None  # (out= ops are not autocast)
        try:
            with no_grad():
                result = fn(*args, **kwargs)
        finally:
            _dtype.autocast_state.dtype = autocast
        if isinstance(out, Tensor) and isinstance(result, Tensor) and result._data.dtype != out._data.dtype:
            _check_out_dtype(name, result._data.dtype, out._data.dtype)
        if isinstance(result, tuple):
            if not isinstance(out, (tuple, list)) or len(out) != len(result):
                raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors")
            for o, r in zip(out, result):
                if name == "aminmax" and isinstance(o, Tensor) and o._data.dtype != r._data.dtype:
                    raise RuntimeError(f"Expected out tensor to have dtype {_dtype.cpp_type_name(r._data.dtype)}, "
                                       f"but got {_dtype.cpp_type_name(o._data.dtype)} instead")
                write_out(o, r, name)
            return type(result)(*out)
        return write_out(out, result, name)

    wrapper = _generated(fn, finish)
    if wrapper is None:
        def wrapper(*args, out=None, **kwargs):
            if out is None:
                return fn(*args, **kwargs)
            return finish(out, args, kwargs)
    functools.update_wrapper(wrapper, fn)
    return wrapper


def _positional_index(fn, parameter):
    """Where `parameter` is among fn's positional parameters (the generated wrapper passes those by position), or
    None."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                       inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    return positional.index(parameter) if parameter in positional else None


def _with_dtype(args, kwargs, at, dtype):
    """The call's arguments with `dtype` where the caller gave none."""
    if at is not None and at < len(args):
        if args[at] is None:
            args = args[:at] + (dtype,) + args[at + 1:]
    elif kwargs.get("dtype") is None:
        kwargs = dict(kwargs, dtype=dtype)
    return args, kwargs


def _check_out_dtype(name, result, out):
    """torch's refusals of an out= of another dtype where its kernel does not cast: the matrix products, cat."""
    if name in ("matmul", "mm", "bmm", "mv", "gather"):
        raise RuntimeError(f"Expected out tensor to have dtype {_dtype.cpp_type_name(result)}, but got "
                           f"{_dtype.cpp_type_name(out)} instead")
    if name in ("amax", "amin"):
        raise RuntimeError(f"Expected the dtype for input and out to match, but got {_dtype.scalar_type_name(result)} "
                           f"for input's dtype and {_dtype.scalar_type_name(out)} for out's dtype.")
    if name == "index_select":
        raise RuntimeError("index_select(): self and result must have the same scalar type")
    if name == "take":
        raise RuntimeError(f"take(): self and out expected to have the same dtype, but got self.dtype = "
                           f"{_dtype.scalar_type_name(result)} and out.dtype = {_dtype.scalar_type_name(out)}")
    if name == "multinomial":
        raise RuntimeError(f"multinomial expects Long tensor out, got: {_dtype.scalar_type_name(out)}")
    if name == "dot":
        raise RuntimeError(f"result dtype {_dtype.scalar_type_name(out)} does not match input dtype "
                           f"{_dtype.scalar_type_name(result)}")
    if name in ("cat", "concat", "concatenate") and _dtype.is_float(result) and not _dtype.is_float(out):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{_dtype.scalar_type_name(out)}")


def _generated(fn, finish):
    """def wrapper(<fn's parameters>, *, out=None): fn(...) when out is None, else finish(out, args, kwargs)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    kinds = inspect.Parameter
    if any(p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) or p.name == "out" for p in params):
        return None
    env = {"fn": fn, "finish": finish, "__name__": __name__}  # (a frame of tapegrad's: warnings name the caller)
    head, positional, keyword, star = [], [], [], False
    for p in params:
        if p.kind is kinds.KEYWORD_ONLY and not star:
            head.append("*")
            star = True
        default = ""
        if p.default is not kinds.empty:
            env[f"_default_{p.name}"] = p.default
            default = f"=_default_{p.name}"
        head.append(p.name + default)
        (keyword if p.kind is kinds.KEYWORD_ONLY else positional).append(p.name)
    head.append("out=None" if star else "*, out=None")
    call = ", ".join(positional + [f"{k}={k}" for k in keyword])
    args = "".join(f"{p}, " for p in positional)
    kwargs = ", ".join(f"{k!r}: {k}" for k in keyword)
    source = (f"def wrapper({', '.join(head)}):\n"
              f"    if out is None:\n"
              f"        return fn({call})\n"
              f"    return finish(out, ({args}), {{{kwargs}}})\n")
    exec(source, env)  # noqa: S102  (source built from the wrapped function's own parameter names)
    return env["wrapper"]


def _ops():
    from .. import ops
    return ops


# The functions torch gives an out= argument (torch/_torch_docs.py), among those tapegrad has.
_NAMES = ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow", "matmul", "mm",
          "bmm", "mv", "dot", "outer", "cat", "concat", "concatenate", "stack", "sum", "mean", "prod", "cumsum",
          "exp", "log", "sqrt", "rsqrt", "abs", "neg", "negative", "sin", "cos", "tan", "tanh", "sigmoid", "sign",
          "floor", "ceil", "round", "trunc", "clamp", "clip", "maximum", "minimum", "atan2", "log1p", "expm1",
          "reciprocal", "square", "eq", "ne", "lt", "le", "gt", "ge", "where", "gather", "index_select",
          "logsumexp", "amax", "amin", "aminmax", "argmax", "argmin", "tril", "triu", "diag", "lerp", "erf",
          "logical_not", "logical_and", "logical_or", "logical_xor", "sort", "topk", "multinomial", "std", "var",
          "norm", "softmax", "log_softmax", "addmm", "addmv", "addbmm", "baddbmm", "addr", "addcmul", "addcdiv",
          "max", "min", "median", "nanmedian", "mode", "kthvalue", "cummax", "cummin", "masked_select", "nansum",
          "nanmean", "cumprod", "logcumsumexp", "quantile", "nanquantile", "tensordot", "remainder", "fmod",
          "floor_divide", "fmax", "fmin", "hypot", "logaddexp", "logaddexp2", "xlogy", "copysign", "log2", "log10",
          "exp2", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan",
          "erfc", "erfinv", "lgamma", "digamma", "polygamma", "igamma", "igammac", "logit", "i0", "sinc", "frac",
          "fix", "sgn", "nan_to_num", "searchsorted", "bucketize", "kron", "take", "histc", "gcd", "lcm", "bitwise_and",
          "bitwise_or", "bitwise_xor", "bitwise_not", "signbit", "heaviside", "nextafter", "ldexp", "float_power",
          "msort", "mvlgamma", "deg2rad", "rad2deg", "isin", "isneginf", "isposinf", "index_add",
          "index_copy", "scatter", "scatter_add", "scatter_reduce",
          # the *_copy forms of the views (ops/shape.py), and nonzero_static
          "alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy", "permute_copy",
          "select_copy", "slice_copy", "squeeze_copy", "t_copy", "transpose_copy", "unfold_copy", "unsqueeze_copy",
          "view_copy", "nonzero_static")
_CREATION = ("zeros", "ones", "empty", "arange", "eye", "full", "linspace", "randn", "rand", "randint",
             "randperm")

__all__ = []


def bind():
    """Wrap the package's functions in out= (ops/__init__ calls this once every front-end is bound there: this
    module is imported earlier, by sampling's write_out)."""
    ns = globals()
    # (tapegrad.mm and tapegrad.matmul take sparse operands; ops' own, which the other ops call, do not)
    sparse_aware = {"mm": _sparse.mm, "matmul": _sparse.matmul}
    for name in _NAMES + ("spmm",):
        ns[name] = with_out(sparse_aware.get(name) or getattr(_ops(), name), name)
        __all__.append(name)
    for name in _CREATION:
        ns[name] = with_out(getattr(creation, name), name)
        __all__.append(name)
