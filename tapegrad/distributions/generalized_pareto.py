"""torch.distributions.GeneralizedPareto."""
import math
from numbers import Number, Real

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """A Generalized Pareto distribution parameterized by `loc`, `scale` and `concentration` (TensorFlow
    Probability's formulation). Exponential (loc 0, concentration 0), Pareto (concentration > 0,
    loc = scale / concentration) and Uniform (concentration -1) are special cases."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if isinstance(loc, Number) and isinstance(scale, Number) and isinstance(concentration, Number):
            batch_shape = ()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        from .. import rand
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        from .. import isclose, log1p, ones_like, tensor, where
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero = isclose(self.concentration, tensor(0.0))
        safe_conc = where(eq_zero, ones_like(self.concentration), self.concentration)
        y = 1 / safe_conc + ones_like(z)
        where_nonzero = where(y == 0, y, y * log1p(safe_conc * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        from .. import isclose, log1p, ones_like, tensor, where
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero = isclose(self.concentration, tensor(0.0))
        safe_conc = where(eq_zero, ones_like(self.concentration), self.concentration)
        where_nonzero = -log1p(safe_conc * z) / safe_conc
        return where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        from .. import exp, log1p
        return log1p(-exp(self.log_survival_function(value)))

    def cdf(self, value):
        from .. import exp
        return exp(self.log_cdf(value))

    def icdf(self, value):
        from .. import expm1, isclose, log1p, ones_like, where, zeros_like
        loc = self.loc
        scale = self.scale
        concentration = self.concentration
        eq_zero = isclose(concentration, zeros_like(concentration))
        safe_conc = where(eq_zero, ones_like(concentration), concentration)
        logu = log1p(-value)
        where_nonzero = loc + scale / safe_conc * expm1(-safe_conc * logu)
        where_zero = loc - scale * logu
        return where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        from .. import where
        concentration = self.concentration
        valid = concentration < 1
        safe_conc = where(valid, concentration, 0.5)
        result = self.loc + self.scale / (1 - safe_conc)
        return where(valid, result, math.nan)

    @property
    def variance(self):
        from .. import where
        concentration = self.concentration
        valid = concentration < 0.5
        safe_conc = where(valid, concentration, 0.25)
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return where(valid, result, math.nan)

    def entropy(self):
        from .. import broadcast_to, log
        ans = log(self.scale) + self.concentration + 1
        return broadcast_to(ans, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        from .. import where
        lower = self.loc
        upper = where(self.concentration < 0, lower - self.scale / self.concentration, math.inf)
        return constraints.interval(lower, upper)
