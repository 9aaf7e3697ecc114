"""torch's deprecated overloads with a leading number (pre-0.4 code: `p.data.add_(-lr, p.grad.data)`,
`exp_avg_sq.addcmul_(1 - beta2, grad, grad)`, `torch.addmm(beta, input, alpha, mat1, mat2)`): each call is turned
into the current signature, with torch's warning for the first such call of the process (torch warns once, from
one place, whichever deprecated overload it is)."""
import functools
import numbers
import warnings

from .tensor import Tensor
from ._warnings import user_stacklevel

_warned = []
_N, _T = numbers.Number, Tensor


def _alpha_other(a):           # (alpha, other) -> (other,), alpha=
    return (a[1],), {"alpha": a[0]}


def _value_t1_t2(a):           # (value, t1, t2) -> (t1, t2), value=
    return (a[1], a[2]), {"value": a[0]}


def _beta_alpha_m1_m2(a):      # (beta, alpha, m1, m2) -> (m1, m2), beta=, alpha=
    return (a[2], a[3]), {"beta": a[0], "alpha": a[1]}


def _beta_m1_m2(a):            # (beta, m1, m2) -> (m1, m2), beta=
    return (a[1], a[2]), {"beta": a[0]}


# name -> [(the argument types that select it, its rearrangement, torch's old signature, torch's suggestion)]
METHODS = {
    "add": [((_N, _T), _alpha_other, "add(Number alpha, Tensor other)", "add(Tensor other, *, Number alpha = 1)")],
    "sub": [((_N, _T), _alpha_other, "sub(Number alpha, Tensor other)", "sub(Tensor other, *, Number alpha = 1)")],
    "addcmul": [((_N, _T, _T), _value_t1_t2, "addcmul(Number value, Tensor tensor1, Tensor tensor2)",
                 "addcmul(Tensor tensor1, Tensor tensor2, *, Number value = 1)")],
    "addcdiv": [((_N, _T, _T), _value_t1_t2, "addcdiv(Number value, Tensor tensor1, Tensor tensor2)",
                 "addcdiv(Tensor tensor1, Tensor tensor2, *, Number value = 1)")],
    "addmm": [((_N, _N, _T, _T), _beta_alpha_m1_m2, "addmm(Number beta, Number alpha, Tensor mat1, Tensor mat2)",
               "addmm(Tensor mat1, Tensor mat2, *, Number beta = 1, Number alpha = 1)"),
              ((_N, _T, _T), _beta_m1_m2, "addmm(Number beta, Tensor mat1, Tensor mat2)",
               "addmm(Tensor mat1, Tensor mat2, *, Number beta = 1, Number alpha = 1)")],
}
_OUT = ", *, Tensor out = None)"
_ADDMM_NEW = ("addmm(Tensor input, Tensor mat1, Tensor mat2, *, Number beta = 1, Number alpha = 1, Tensor out = None)"
              "\n\taddmm(Tensor input, Tensor mat1, Tensor mat2, torch.dtype out_dtype, *, Number beta = 1, Number "
              "alpha = 1, Tensor out = None)")
FUNCTIONS = {
    "add": [((_T, _N, _T), lambda a: ((a[0], a[2]), {"alpha": a[1]}),
             "add(Tensor input, Number alpha, Tensor other" + _OUT, "add(Tensor input, Tensor other, *, Number alpha "
                                                                   "= 1, Tensor out = None)")],
    "sub": [((_T, _N, _T), lambda a: ((a[0], a[2]), {"alpha": a[1]}),
             "sub(Tensor input, Number alpha, Tensor other" + _OUT, "sub(Tensor input, Tensor other, *, Number alpha "
                                                                   "= 1, Tensor out = None)")],
    "addcmul": [((_T, _N, _T, _T), lambda a: ((a[0], a[2], a[3]), {"value": a[1]}),
                 "addcmul(Tensor input, Number value, Tensor tensor1, Tensor tensor2" + _OUT,
                 "addcmul(Tensor input, Tensor tensor1, Tensor tensor2, *, Number value = 1, Tensor out = None)")],
    "addcdiv": [((_T, _N, _T, _T), lambda a: ((a[0], a[2], a[3]), {"value": a[1]}),
                 "addcdiv(Tensor input, Number value, Tensor tensor1, Tensor tensor2" + _OUT,
                 "addcdiv(Tensor input, Tensor tensor1, Tensor tensor2, *, Number value = 1, Tensor out = None)")],
    "addmm": [((_N, _T, _N, _T, _T), lambda a: ((a[1], a[3], a[4]), {"beta": a[0], "alpha": a[2]}),
               "addmm(Number beta, Tensor input, Number alpha, Tensor mat1, Tensor mat2" + _OUT, _ADDMM_NEW),
              ((_N, _T, _T, _T), lambda a: ((a[1], a[2], a[3]), {"beta": a[0]}),
               "addmm(Number beta, Tensor input, Tensor mat1, Tensor mat2" + _OUT, _ADDMM_NEW)],
}


def _matches(args, types):
    return len(args) == len(types) and all(
        isinstance(a, t) and not (t is _N and isinstance(a, (bool, Tensor))) for a, t in zip(args, types))


def _warn(name, old, new):
    if not _warned:
        _warned.append(name)
        warnings.warn(f"This overload of {name} is deprecated:\n\t{old}\nConsider using one of the following "
                      f"signatures instead:\n\t{new}", UserWarning, stacklevel=user_stacklevel())


def _named(overloads, name):
    base = name.rstrip("_")  # (add_ takes add's overloads, under its own name)
    return [(types, rearrange, name + old[len(base):], name + new[len(base):].replace("\n\t" + base, "\n\t" + name))
            for types, rearrange, old, new in overloads]


def wrap_function(fn, name):
    """torch.<name>, also taking its deprecated overloads (matched by their positional arguments' types)."""
    overloads = _named(FUNCTIONS[name], name)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if len(args) > 2 and isinstance(args[1], (_N, _T)) and not kwargs.keys() - {"out"}:
            for types, rearrange, old, new in overloads:
                if _matches(args, types):
                    _warn(name, old, new)
                    args, more = rearrange(args)
                    return fn(*args, **more, **kwargs)
        return fn(*args, **kwargs)
    return call


def wrap_method(fn, name):
    """Tensor.<name>, also taking its deprecated overloads (the arguments after self)."""
    overloads = _named(METHODS[name.rstrip("_")], name)

    @functools.wraps(fn)
    def call(self, *args, **kwargs):
        if args and isinstance(args[0], _N) and not kwargs:
            for types, rearrange, old, new in overloads:
                if _matches(args, types):
                    _warn(name, old, new)
                    args, more = rearrange(args)
                    return fn(self, *args, **more)
        return fn(self, *args, **kwargs)
    return call
