"""torch.distributions.Kumaraswamy."""
import math

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import _tg, broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """The nth moment of Kumaraswamy(a, b): b * B(1 + n / a, b)."""
    tg = _tg()
    arg1 = 1 + n / a
    log_value = tg.lgamma(arg1) + tg.lgamma(b) - tg.lgamma(arg1 + b)
    return b * tg.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(concentration1, concentration0): (1 - U ** (1 / c0)) ** (1 / c1) for U ~ Uniform(0, 1)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        tg = _tg()
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(tg.full_like(self.concentration0, 0), tg.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # in log space, for numerical stability
        log_mode = (self.concentration0.reciprocal() * (-self.concentration0).log1p()
                    - (-self.concentration0 * self.concentration1).log1p())
        log_mode[(self.concentration0 < 1) | (self.concentration1 < 1)] = math.nan
        return log_mode.exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - _tg().pow(self.mean, 2)

    def entropy(self):
        tg = _tg()
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = tg.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - tg.log(self.concentration1) - tg.log(self.concentration0)
