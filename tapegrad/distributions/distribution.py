"""torch.distributions.Distribution: the base class (shapes, argument validation, sample via rsample)."""
import warnings

from . import constraints
from .utils import lazy_property
from ..grad_mode import no_grad
from ..tensor import Size, Tensor
from .._warnings import user_stacklevel

__all__ = ["Distribution"]


_EMPTY_SIZE = Size(())


def _Size(shape=()):
    if type(shape) is Size:  # (immutable, its sizes already ints)
        return shape
    return _EMPTY_SIZE if type(shape) is tuple and not shape else Size(tuple(shape))


def _format_param(t):
    """f"{t}" as torch formats a parameter in a repr: a 0-d tensor as its number, other one-element tensors
    in full, larger ones as their size."""
    if t.numel() != 1:
        return str(t.size())
    return str(t.item()) if t.dim() == 0 else str(t)


class Distribution:
    """Abstract base class for probability distributions."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Set whether validation is enabled or disabled (on by default, as Python's assert)."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _Size(batch_shape)
        self._event_shape = _Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. "
                              "Please set `arg_constraints = {}` or initialize the distribution "
                              "with `validate_args=False` to turn off validation.", stacklevel=user_stacklevel())
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue
                value = getattr(self, param)
                if not constraints.all_valid(constraint, value):
                    raise ValueError(f"Expected parameter {param} "
                                     f"({type(value).__name__} of shape {tuple(value.shape)}) "
                                     f"of distribution {repr(self)} "
                                     f"to satisfy the constraint {repr(constraint)}, "
                                     f"but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=user_stacklevel())
        return self.sample(_Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=()):
        if type(sample_shape) in (tuple, Size) and not sample_shape and not self._event_shape:
            return _Size(self._batch_shape)  # (sample() of a distribution of scalars: its batch shape)
        return _Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        actual_shape = value.size()
        expected_shape = _Size(self._batch_shape + self._event_shape)
        if actual_shape != expected_shape:  # (the shapes' checks below pass when they are equal)
            event_dim_start = len(actual_shape) - len(self._event_shape)
            if actual_shape[event_dim_start:] != self._event_shape:
                raise ValueError(f"The right-most size of value must match event_shape: {actual_shape} vs "
                                 f"{self._event_shape}.")
            for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
                if i != 1 and j != 1 and i != j:
                    raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                     f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=user_stacklevel())
            return
        if not constraints.all_valid(support, value):
            raise ValueError("Expected value argument "
                             f"({type(value).__name__} of shape {tuple(value.shape)}) "
                             f"to be within the support ({repr(support)}) "
                             f"of the distribution {repr(self)}, "
                             f"but found invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        param_names = [k for k in self.arg_constraints if k in self.__dict__]
        args_string = ", ".join(f"{p}: {_format_param(self.__dict__[p])}" for p in param_names)
        return self.__class__.__name__ + "(" + args_string + ")"
