"""torch.distributions.ExponentialFamily: the base class of Normal, Bernoulli, Gamma, Beta, Dirichlet."""
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions whose density is p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)).

    The subclasses here define entropy and KL in closed form; the Bregman-divergence defaults torch derives
    from `_natural_params` and `_log_normalizer` are not implemented.
    """

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError("tapegrad.distributions: ExponentialFamily's generic (Bregman divergence) "
                                  "entropy is not implemented")
