"""torch._foreach_*: an op over lists of tensors (optimizers' and EMA updates' `torch._foreach_lerp_(targets, params,
0.005)`). Each is the Tensor method of its name applied tensor by tensor; a list argument goes element by element, a
number or a single tensor to every one. In-place ones return their list, the others a tuple (as torch's)."""
from .ops._common import _is_scalar, _tensor
from .ops.linalg import vector_norm
from .tensor import Tensor

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
          "sinh", "sqrt", "tan", "tanh", "trunc")
_BINARY = ("add", "addcdiv", "addcmul", "clamp_max", "clamp_min", "div", "lerp", "maximum", "minimum", "mul", "pow",
           "sub")


def _columns(tensors, args):
    """Each argument as one value per tensor (a list element by element, anything else repeated)."""
    n = len(tensors)
    if n == 0:
        raise RuntimeError("Tensor list must have at least one tensor.")
    columns = []
    for a in args:
        if isinstance(a, (list, tuple)):
            if len(a) != n and a and isinstance(a[0], Tensor):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} and {len(a)}")
            if len(a) != n:
                raise RuntimeError(f"Tensor list must have same number of elements as scalar list, got {n} and "
                                   f"{len(a)}")
            columns.append(list(a))
        else:
            columns.append([a] * n)
    return columns


def _foreach(method, inplace):
    def op(self, *args, **kwargs):
        if not isinstance(self, (list, tuple)) and method == "pow":  # (_foreach_pow(scalar, exponents))
            exponents = list(args[0])
            return tuple(e.__rpow__(self) for e in exponents)
        tensors = list(self)
        columns = _columns(tensors, args)
        if method.rstrip("_") in ("addcmul", "addcdiv") and len(columns) == 3:  # (their scalars: each one's value=)
            values = columns.pop()
            return _done([getattr(t, method)(columns[0][i], columns[1][i], value=values[i], **kwargs)
                          for i, t in enumerate(tensors)], self, inplace)
        if method.rstrip("_") in ("maximum", "minimum"):  # (torch's foreach takes a number; Tensor.maximum does not)
            columns = [[_tensor(v, like=tensors[i]) if _is_scalar(v) else v for i, v in enumerate(c)] for c in columns]
        results = [getattr(t, method)(*(c[i] for c in columns), **kwargs) for i, t in enumerate(tensors)]
        return _done(results, self, inplace)
    op.__name__ = f"_foreach_{method}"
    return op


def _done(results, self, inplace):
    return self if inplace else tuple(results)


def _foreach_norm(self, ord=2, dtype=None):
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _checked(self))


def _foreach_max(self):
    return tuple(t.max() for t in _checked(self))


def _foreach_powsum(self, ord=2, dtype=None):
    return tuple((t.abs() ** ord).sum(dtype=dtype) for t in _checked(self))


def _foreach_copy_(self, src, non_blocking=False):
    for t, s in zip(_checked(self), _columns(list(self), [src])[0]):
        t.copy_(s)
    return self


def _foreach_zero_(self):
    for t in _checked(self):
        t.zero_()
    return self


def _foreach_clone(self, *, memory_format=None):
    return tuple(t.clone() for t in _checked(self))


def _foreach_mm(self, mat2):
    return tuple(t.mm(m) for t, m in zip(_checked(self), _columns(list(self), [mat2])[0]))


def _checked(tensors):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return tensors


__all__ = ["_foreach_norm", "_foreach_max", "_foreach_powsum", "_foreach_copy_", "_foreach_zero_", "_foreach_clone",
           "_foreach_mm"]
for _name in _UNARY + _BINARY:
    for _inplace in (False, True):
        _fn = _foreach(_name + ("_" if _inplace else ""), _inplace)
        globals()[_fn.__name__] = _fn
        __all__.append(_fn.__name__)
del _name, _inplace, _fn
