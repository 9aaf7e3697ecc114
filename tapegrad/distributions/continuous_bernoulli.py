"""torch.distributions.ContinuousBernoulli."""
import math
from numbers import Number

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """A continuous Bernoulli distribution on [0, 1] parameterized by `probs` (in (0, 1)) or `logits` (real),
    not both. Unlike the Bernoulli's, `probs` is not a probability and `logits` not log-odds (Loaiza-Ganem and
    Cunningham, NeurIPS 2019)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            # validate 'probs' here if necessary as it is later clamped for numerical stability close to 0 and
            # 1, and otherwise the clamped 'probs' would always pass
            if validate_args is not None:
                if not self.arg_constraints["probs"].check(self.probs).all():
                    raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = () if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    def _outside_unstable_region(self):
        from .. import gt, le, max
        return max(le(self.probs, self._lims[0]), gt(self.probs, self._lims[1]))

    def _cut_probs(self):
        from .. import ones_like, where
        return where(self._outside_unstable_region(), self.probs, self._lims[0] * ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """The log normalizing constant as a function of the 'probs' parameter."""
        from .. import abs, ge, le, log, log1p, ones_like, pow, where, zeros_like
        cut_probs = self._cut_probs()
        cut_probs_below_half = where(le(cut_probs, 0.5), cut_probs, zeros_like(cut_probs))
        cut_probs_above_half = where(ge(cut_probs, 0.5), cut_probs, ones_like(cut_probs))
        log_norm = log(abs(log1p(-cut_probs) - log(cut_probs))) - where(
            le(cut_probs, 0.5), log1p(-2.0 * cut_probs_below_half), log(2.0 * cut_probs_above_half - 1.0))
        x = pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        from .. import log, log1p, pow, where
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (log1p(-cut_probs) - log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * pow(x, 2)) * x
        return where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        from .. import sqrt
        return sqrt(self.variance)

    @property
    def variance(self):
        from .. import log, log1p, pow, where
        cut_probs = self._cut_probs()
        vars = cut_probs * (cut_probs - 1.0) / pow(1.0 - 2.0 * cut_probs, 2) + 1.0 / pow(
            log1p(-cut_probs) - log(cut_probs), 2)
        x = pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return where(self._outside_unstable_region(), vars, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=()):
        from .. import no_grad, rand
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=()):
        from .. import rand
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        from ..nn.functional import binary_cross_entropy_with_logits
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        from .. import ge, le, ones_like, pow, where, zeros_like
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (pow(cut_probs, value) * pow(1.0 - cut_probs, 1.0 - value) + cut_probs - 1.0) / (2.0 * cut_probs - 1.0)
        unbounded_cdfs = where(self._outside_unstable_region(), cdfs, value)
        return where(le(value, 0.0), zeros_like(value), where(ge(value, 1.0), ones_like(value), unbounded_cdfs))

    def icdf(self, value):
        from .. import log, log1p, where
        cut_probs = self._cut_probs()
        return where(self._outside_unstable_region(),
                     (log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - log1p(-cut_probs))
                     / (log(cut_probs) - log1p(-cut_probs)),
                     value)

    def entropy(self):
        from .. import log, log1p
        log_probs0 = log1p(-self.probs)
        log_probs1 = log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalizing constant as a function of the natural parameter."""
        from .. import abs, gt, le, log, max, ones_like, pow, special, where
        out_unst_reg = max(le(x, self._lims[0] - 0.5), gt(x, self._lims[1] - 0.5))
        cut_nat_params = where(out_unst_reg, x, (self._lims[0] - 0.5) * ones_like(x))
        log_norm = log(abs(special.expm1(cut_nat_params))) - log(abs(cut_nat_params))
        taylor = 0.5 * x + pow(x, 2) / 24.0 - pow(x, 4) / 2880.0
        return where(out_unst_reg, log_norm, taylor)
