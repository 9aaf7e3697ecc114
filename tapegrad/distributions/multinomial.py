"""torch.distributions.Multinomial."""
import math

from . import constraints
from ._ops import lgamma
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all, probs_to_logits
from ..tensor import Size

__all__ = ["Multinomial"]


class _BinomialTerms:
    """What Multinomial.entropy reads of its private torch.distributions.Binomial(total_count, probs):
    enumerate_support(expand=False) and log_prob, with Binomial's formulas (and rounding)."""

    def __init__(self, total_count, probs):
        self.total_count, self.probs = broadcast_all(total_count, probs)
        self.total_count = self.total_count.type_as(self.probs)
        self._batch_shape = tuple(self.probs.shape)

    def enumerate_support(self, expand=False):
        from .. import arange
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = arange(1 + total_count, dtype=self.probs.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values

    def log_prob(self, value):
        from .. import abs as abs_, exp, log1p
        logits = probs_to_logits(self.probs, is_binary=True)
        n = self.total_count
        log_factorial_n = lgamma(n + 1)
        log_factorial_k = lgamma(value + 1)
        log_factorial_nmk = lgamma(n - value + 1)
        clamp_by_zero = (logits.clamp(min=0) + logits - logits.clamp(max=0)) / 2
        normalize_term = n * clamp_by_zero + n * log1p(exp(-abs_(logits))) - log_factorial_n
        return value * logits - log_factorial_k - log_factorial_nmk - normalize_term


class Multinomial(Distribution):
    """A Multinomial distribution parameterized by `total_count` (an int) and `probs` or `logits` (not both);
    the innermost dimension indexes categories. sample() draws total_count categorical indices (torch's
    stream) and counts them."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = _BinomialTerms(total_count, self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = self._binomial   # (torch leaves the expanded instance without one: entropy would fail)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        from .. import ones_like
        sample_shape = Size(tuple(sample_shape))
        samples = self._categorical.sample(Size((self.total_count,)) + sample_shape)
        # samples.shape is (total_count, sample_shape, batch_shape), need to change it to
        # (sample_shape, batch_shape, total_count)
        shifted_idx = list(range(samples.dim()))
        shifted_idx.append(shifted_idx.pop(0))
        samples = samples.permute(*shifted_idx)
        counts = samples.new(self._extended_shape(sample_shape)).zero_()
        counts.scatter_add_(-1, samples, ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        from .. import exp, tensor
        n = tensor(self.total_count)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = exp(self._binomial.log_prob(support))
        weights = lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.clone()
        log_factorial_n = lgamma(value.sum(-1) + 1)
        log_factorial_xs = lgamma(value + 1).sum(-1)
        logits[(value == 0) & (logits == -math.inf)] = 0
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
