"""torch.distributions.constraints: the objects a distribution checks its parameters and samples against.

`check(value)` returns a bool tensor over the batch dims (torch's semantics); reprs are torch's.
"""
import numpy as np
from ..tape import _local as _tape_local
from ..tensor import Tensor, _new

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than", "greater_than_eq",
           "independent", "integer_interval", "interval", "half_open_interval", "is_dependent", "less_than",
           "lower_cholesky", "lower_triangular", "MixtureSameFamilyConstraint", "multinomial", "nonnegative", "nonnegative_integer", "one_hot", "positive",
           "positive_semidefinite", "positive_definite", "positive_integer", "real", "real_vector", "simplex",
           "square", "stack", "symmetric", "unit_interval"]


def _np(x):
    return getattr(x, "_data", x)


def _bool_tensor(a):
    return _new(np.asarray(a, dtype=bool))


class Constraint:
    """Abstract base class for constraints: a region over which a variable is valid."""
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a variable whose support depends on other variables: it cannot be checked."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is also a dependent constraint (a support that depends on the parameters)."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        super().__init__(fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """Reinterprets the rightmost `reinterpreted_batch_ndims` batch dims as event dims."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        if not isinstance(base_constraint, Constraint):
            raise AssertionError(f"base_constraint must be a Constraint, got {type(base_constraint).__name__}")
        if not isinstance(reinterpreted_batch_ndims, int):
            raise AssertionError("reinterpreted_batch_ndims must be an int, got "
                                 f"{type(reinterpreted_batch_ndims).__name__}")
        if reinterpreted_batch_ndims < 0:
            raise AssertionError(f"reinterpreted_batch_ndims must be >= 0, got {reinterpreted_batch_ndims}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        data = result._data
        n = data.ndim - self.reinterpreted_batch_ndims
        return _bool_tensor(data.reshape(data.shape[:n] + (-1,)).all(-1))

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}({repr(self.base_constraint)}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(Constraint):
    """The component distribution's constraint, checked with the mixture's rightmost batch dim added back."""

    def __init__(self, base_constraint):
        if not isinstance(base_constraint, Constraint):
            raise AssertionError(f"base_constraint must be a Constraint, got {type(base_constraint).__name__}")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim

    def check(self, value):
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        data = result._data
        keep = value.dim() - self.event_dim
        return _bool_tensor(data.reshape(data.shape[:keep] + (-1,)).all(-1))

    def __repr__(self):
        return f"{self.__class__.__name__}({repr(self.base_constraint)})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        v = value._data
        return _bool_tensor(((v == 0) | (v == 1)).all(-1) & (v.sum(-1) == 1))


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        v = _np(value)
        return _bool_tensor((v % 1 == 0) & (_np(self.lower_bound) <= v) & (v <= _np(self.upper_bound)))

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerLessThan(Constraint):
    is_discrete = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        v = _np(value)
        return _bool_tensor((v % 1 == 0) & (v <= _np(self.upper_bound)))

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        v = _np(value)
        return _bool_tensor((v % 1 == 0) & (v >= _np(self.lower_bound)))

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value):
        return value == value   # False for NaNs


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return value > self.lower_bound

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return value >= self.lower_bound

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value >= self.lower_bound) & (value < self.upper_bound)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        v = value._data
        return _bool_tensor((v >= 0).all(-1) & (np.abs(v.sum(-1) - 1) < 1e-6))


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        v = value._data
        return _bool_tensor((np.tril(v) == v).reshape(v.shape[:-2] + (-1,)).min(-1))


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        v = value._data
        lower = (np.tril(v) == v).reshape(v.shape[:-2] + (-1,)).min(-1)
        positive_diagonal = (np.diagonal(v, axis1=-2, axis2=-1) > 0).min(-1)
        return _bool_tensor(lower & positive_diagonal)


class _CorrCholesky(Constraint):
    """Lower-triangular square matrices with positive diagonals and rows of unit length."""
    event_dim = 2

    def check(self, value):
        v = value._data
        tol = np.finfo(v.dtype).eps * v.shape[-1] * 10  # (torch's fudge factor)
        unit_rows = (np.abs(np.linalg.norm(v, axis=-1) - 1.0) <= tol).all(-1)
        return _bool_tensor(_LowerCholesky().check(value)._data & unit_rows)


class _Multinomial(Constraint):
    """Nonnegative integer values summing to at most upper_bound (torch checks this weaker condition)."""
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        v = x._data
        return _bool_tensor((v >= 0).all(-1) & (v.sum(-1) <= _np(self.upper_bound)))


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        return _bool_tensor(np.full(value.shape[:-2], value.shape[-2] == value.shape[-1]))


class _Symmetric(_Square):
    def check(self, value):
        square = super().check(value)
        if not square._data.all():
            return square
        v = value._data
        vt = np.swapaxes(v, -1, -2)
        close = np.abs(v - vt) <= 1e-6 + 1e-5 * np.abs(vt)   # torch.isclose(atol=1e-6), rtol 1e-5
        return _bool_tensor(close.all(-2).all(-1))


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        sym = super().check(value)
        if not sym._data.all():
            return sym
        return _bool_tensor((np.linalg.eigvalsh(value._data) >= 0).all(-1))


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        sym = super().check(value)
        if not sym._data.all():
            return sym
        v = value._data
        flat = v.reshape((-1,) + v.shape[-2:])
        ok = []
        for m in flat:
            try:
                np.linalg.cholesky(m)
                ok.append(True)
            except np.linalg.LinAlgError:
                ok.append(False)
        return _bool_tensor(np.array(ok, bool).reshape(v.shape[:-2]))


class _Cat(Constraint):
    """
    Constraint functor that applies a sequence of constraints
    `cseq` at the submatrices at dimension `dim`,
    each of size `lengths[dim]`, in a way compatible with :func:`torch.cat`.
    """

    def __init__(self, cseq, dim=0, lengths=None):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        if lengths is None:
            lengths = [1] * len(self.cseq)
        self.lengths = list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        from .. import cat   # torch.cat (the package imports distributions: a call up the layering)
        if not (-value.dim() <= self.dim < value.dim()):
            raise AssertionError(f"dim {self.dim} out of range for value with {value.dim()} dimensions")
        checks = []
        start = 0
        for constr, length in zip(self.cseq, self.lengths):
            v = value.narrow(self.dim, start, length)
            checks.append(constr.check(v))
            start = start + length
        return cat(checks, self.dim)


class _Stack(Constraint):
    """
    Constraint functor that applies a sequence of constraints
    `cseq` at the submatrices at dimension `dim`,
    in a way compatible with :func:`torch.stack`.
    """

    def __init__(self, cseq, dim=0):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value):
        from .. import stack   # torch.stack (the package imports distributions: a call up the layering)
        if not (-value.dim() <= self.dim < value.dim()):
            raise AssertionError(f"dim {self.dim} out of range for value with {value.dim()} dimensions")
        vs = [value.select(self.dim, i) for i in range(value.size(self.dim))]
        return stack([constr.check(v) for v, constr in zip(vs, self.cseq)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
multinomial = _Multinomial
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack


# -- all_valid: the validation's `check(value).all()`, on the array for the common constraints ---------------
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # (others, bfloat16's rounded bounds among them: check())
_BOUND_TYPES = (float, int)


def _real_all(c, v):
    return bool((v == v).all())


def _greater_than_all(c, v):
    return bool((v > c.lower_bound).all())


def _greater_than_eq_all(c, v):
    return bool((v >= c.lower_bound).all())


def _less_than_all(c, v):
    return bool((v < c.upper_bound).all())


def _interval_all(c, v):
    return bool(((v >= c.lower_bound) & (v <= c.upper_bound)).all())


def _half_open_interval_all(c, v):
    return bool(((v >= c.lower_bound) & (v < c.upper_bound)).all())


def _boolean_all(c, v):
    return bool(((v == 0) | (v == 1)).all())


def _independent_all(c, v):
    base = c.base_constraint
    if base.event_dim != 0 or v.ndim < c.reinterpreted_batch_ndims:
        return None  # (check() raises torch's error for too few dims)
    return _array_all(base, v)


# The constraints whose check() runs Tensor ops (comparisons, &, |), keyed by the check method, so that a subclass
# overriding check() goes through it. Each computes what `check(value).all()` does, by the NumPy expressions those
# ops run on the array. (The others' check() works on the array already: simplex, integer_interval, ...)
_ARRAY_CHECKS = {_Real.check: _real_all, _GreaterThan.check: _greater_than_all,
                 _GreaterThanEq.check: _greater_than_eq_all, _LessThan.check: _less_than_all,
                 _Interval.check: _interval_all, _HalfOpenInterval.check: _half_open_interval_all,
                 _Boolean.check: _boolean_all, _IndependentConstraint.check: _independent_all}
# Bounds the comparisons take as NumPy takes them only when they are Python numbers (a tensor bound: check())
_BOUNDS = {_GreaterThan.check: ("lower_bound",), _GreaterThanEq.check: ("lower_bound",),
           _LessThan.check: ("upper_bound",), _Interval.check: ("lower_bound", "upper_bound"),
           _HalfOpenInterval.check: ("lower_bound", "upper_bound")}


def _array_all(constraint, v):
    """`constraint.check(value).all()` from value's array v, or None where only check() can say (another
    constraint, a dtype whose comparisons round the bound, a tensor bound)."""
    check = type(constraint).check
    fast = _ARRAY_CHECKS.get(check)
    if fast is None or v.dtype not in _FLOATS:
        return None
    for bound in _BOUNDS.get(check, ()):
        if type(getattr(constraint, bound)) not in _BOUND_TYPES:
            return None
    return fast(constraint, v)


def all_valid(constraint, value):
    """Whether every element of `constraint.check(value)` is true (a distribution's argument and sample
    validation): for a plain Tensor's array outside a compile trace, computed on the array where _array_all
    can (no tensors made); else by check()."""
    if type(value) is Tensor and _tape_local.tracing is None and type(value._data) is np.ndarray:
        result = _array_all(constraint, value._data)
        if result is not None:
            return result
    valid = constraint.check(value)
    return bool(np.all(getattr(valid, "_data", valid)))
