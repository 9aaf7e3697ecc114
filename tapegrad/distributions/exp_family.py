"""torch.distributions.ExponentialFamily: the base class of Normal, Bernoulli, Gamma, Beta, Dirichlet."""
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions whose density is p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)).

    A subclass that defines `_natural_params`, `_log_normalizer` and `_mean_carrier_measure` gets entropy and
    the same-family KL divergence from the Bregman divergence of F, as in torch (through autograd.grad).
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
        from ..autograd import grad
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = grad(lg_normal.sum(), nparams, create_graph=True)
        result += lg_normal
        for p, g in zip(nparams, gradients):
            result -= (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
