"""torch.distributions.LKJCholesky (which follows NumPyro's; Apache-2.0, Contributors to the Pyro project)."""
import math

import numpy as np

from . import constraints
from ._ops import lgamma
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all
from .._dtype import to_numpy_dtype
from ..tensor import Size

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution over lower Cholesky factors L of correlation matrices: L @ L.T has density
    proportional to det(L @ L.T) ** (concentration - 1). sample() is the onion method of Lewandowski, Kurowicka
    and Joe (2009), Section 3, drawing as torch."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        from .. import arange, cat
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = Size((dim, dim))
        # This is used to draw vectorized samples from the beta distribution in Sec. 3.2 of [1].
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = arange(self.dim - 1, dtype=self.concentration.dtype)
        offset = cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        # The onion method, with a few differences from [1] Sec. 3.2: the loop is vectorized (and works for
        # heterogeneous eta), the same algorithm covers n=1, and only `w` is needed since this samples the
        # Cholesky factor of the correlation matrix, not the matrix itself.
        from .. import clamp, diag_embed, randn, sqrt
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype).tril(-1)
        with np.errstate(invalid="ignore"):   # (0 / 0 in the first row, replaced below; torch says nothing)
            u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
        # Replace NaNs in first row
        u_hypersphere[..., 0, :].fill_(0.0)
        w = sqrt(y) * u_hypersphere
        # Fill diagonal elements; clamp for numerical stability
        eps = float(np.finfo(to_numpy_dtype(w.dtype)).tiny)
        diag_elems = clamp(1 - (w ** 2).sum(dim=-1), min=eps).sqrt()
        w += diag_embed(diag_elems)
        return w

    def log_prob(self, value):
        # See: https://mc-stan.org/docs/2_25/functions-reference/cholesky-lkj-correlation-distribution.html
        # The probability of a correlation matrix is proportional to
        #   determinant ** (concentration - 1) = prod(L_ii ^ 2(concentration - 1))
        # Additionally, the Jacobian of the transformation from Cholesky factor to correlation matrix is:
        #   prod(L_ii ^ (D - i))
        # So the probability of a Cholesky factor is proportional to
        #   prod(L_ii ^ (2 * concentration - 2 + D - i)) = prod(L_ii ^ order_i)
        # with order_i = 2 * concentration - 2 + D - i
        from .. import arange, mvlgamma
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = arange(2, self.dim + 1)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(dim=-1)
        # Compute normalization constant (page 1999 of [1])
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = lgamma(alpha) * dm1
        numerator = mvlgamma(alpha - 0.5, dm1)
        # pi_constant in [1] is D * (D - 1) / 4 * log(pi)
        # pi_constant in multigammaln is (D - 1) * (D - 2) / 4 * log(pi)
        # hence, we need to add a pi_constant = (D - 1) * log(pi) / 2
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
