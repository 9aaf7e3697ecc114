"""torch.distributions.Wishart."""
import math
import warnings

import numpy as np

from . import constraints
from ._ops import cholesky, digamma
from ..autograd.function import Function
from .exp_family import ExponentialFamily
from .gamma import Gamma
from .multivariate_normal import _precision_to_scale_tril
from .utils import _eps, lazy_property
from ..tensor import Size
from .._warnings import user_stacklevel

__all__ = ["Wishart"]

_log_2 = math.log(2)


def _mvdigamma(x, p):
    from .. import arange
    if not x.gt((p - 1) / 2).all():
        raise AssertionError("Wrong domain for multivariate digamma function.")
    return digamma(x.unsqueeze(-1) - arange(p, dtype=x.dtype).div(2).expand(tuple(x.shape) + (-1,))).sum(-1)


def _clamp_above_eps(x):
    # We assume positive input for this function
    return x.clamp(min=_eps(x.dtype))


class _CholeskySolve(Function):
    """torch.cholesky_solve(B, L) with torch's backward: the gradient of (L @ L.mT)^-1 B in every entry of L
    (tapegrad's cholesky_solve, two triangular solves, gives the upper triangle of L none)."""

    @staticmethod
    def forward(ctx, B, L):
        from .. import cholesky_solve
        X = cholesky_solve(B, L)
        ctx.save_for_backward(L, X)
        ctx.shapes = (B.shape, L.shape)
        return X

    @staticmethod
    def backward(ctx, grad_x):
        from .. import cholesky_solve
        L, X = ctx.saved_tensors
        grad_b = cholesky_solve(grad_x, L)
        common_term = grad_b @ X.mT
        common_term = common_term + common_term.mT
        grad_l = -(common_term @ L)
        return tuple(g if g.shape == s else g.sum_to_size(s) for g, s in zip((grad_b, grad_l), ctx.shapes))


def _cholesky_solve(B, L):
    return _CholeskySolve.apply(B, L)


def _chi2(df):
    """torch.distributions.Chi2(df), which is Gamma(0.5 * df, 0.5): the draws Bartlett's sampler reads."""
    return Gamma(0.5 * df, 0.5)


class Wishart(ExponentialFamily):
    """A Wishart distribution parameterized by `df` and a symmetric positive definite matrix Sigma (one of
    covariance_matrix, precision_matrix or scale_tril); rsample is Bartlett's decomposition, drawing as torch."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        from .. import tensor
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")

        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)

        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")

        if isinstance(df, (bool, int, float)):   # (torch.types._Number)
            batch_shape = Size(tuple(param.shape[:-2]))
            self.df = tensor(df, dtype=param.dtype)
        else:
            batch_shape = Size(np.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]

        if self.df.le(event_shape[-1] - 1).any():
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")

        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        elif precision_matrix is not None:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))

        if self.df.lt(event_shape[-1]).any():
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df "
                          "< ndim.", stacklevel=user_stacklevel())

        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]

        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:  # precision_matrix is not None
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

        # Chi2 distribution is needed for Bartlett decomposition sampling
        self._dist_chi2 = _chi2(self._chi2_df(self.df, batch_shape))

    def _chi2_df(self, df, batch_shape):
        from .. import arange
        return df.unsqueeze(-1) - arange(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype).expand(
            tuple(batch_shape) + (-1,))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(tuple(batch_shape))
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)

        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]

        if "covariance_matrix" in self.__dict__:
            new.covariance_matrix = self.covariance_matrix.expand(cov_shape)
        if "scale_tril" in self.__dict__:
            new.scale_tril = self.scale_tril.expand(cov_shape)
        if "precision_matrix" in self.__dict__:
            new.precision_matrix = self.precision_matrix.expand(cov_shape)

        # Chi2 distribution is needed for Bartlett decomposition sampling
        new._event_shape = self._event_shape   # (read by _chi2_df before the base __init__ sets it again)
        new._dist_chi2 = _chi2(new._chi2_df(new.df, batch_shape))

        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        return (self._unbroadcasted_scale_tril @ self._unbroadcasted_scale_tril.transpose(-2, -1)).expand(
            self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        from .. import eye
        identity = eye(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return _cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(self._batch_shape + self._event_shape)

    @property
    def mean(self):
        return self.df.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor[factor <= 0] = math.nan
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        from .. import einsum
        V = self.covariance_matrix  # has shape (batch_shape x event_shape)
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.view(self._batch_shape + (1, 1)) * (V.pow(2) + einsum("...i,...j->...ij", diag_V, diag_V))

    def _bartlett_sampling(self, sample_shape=()):
        from .. import randn, tril_indices
        p = self._event_shape[-1]  # has singleton shape

        # Implemented Sampling using Bartlett decomposition
        noise = _clamp_above_eps(self._dist_chi2.rsample(sample_shape).sqrt()).diag_embed(dim1=-2, dim2=-1)

        i, j = tril_indices(p, p, offset=-1)
        noise[..., i, j] = randn(tuple(sample_shape) + tuple(self._batch_shape) + (int(p * (p - 1) / 2),),
                                 dtype=noise.dtype)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett's decomposition may return singular matrix samples: as torch, several tries correct them
        (which may still leave singular samples, whose log_prob is -inf)."""
        if max_try_correction is None:
            max_try_correction = 10   # (torch's 3 applies while tracing, which tapegrad never is)

        sample_shape = Size(tuple(sample_shape))
        sample = self._bartlett_sampling(sample_shape)

        # Below part is to improve numerical stability temporarily and should be removed in the future
        # (torch 2.13 marks the samples that pass the support check, as here: it warns, and redraws them once)
        is_singular = self.support.check(sample)
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)

        if is_singular.any():
            warnings.warn("Singular sample detected.", stacklevel=user_stacklevel())

            for _ in range(max_try_correction):
                sample_new = self._bartlett_sampling(is_singular[is_singular].shape)
                sample[is_singular] = sample_new

                is_singular_new = ~self.support.check(sample_new)
                if self._batch_shape:
                    is_singular_new = is_singular_new.amax(self._batch_dims)
                is_singular[is_singular.clone()] = is_singular_new

                if not is_singular.any():
                    break

        return sample

    def log_prob(self, value):
        from .. import linalg, mvlgamma
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df  # has shape (batch_shape)
        p = self._event_shape[-1]  # has singleton shape
        return (-nu * (p * _log_2 / 2 + self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * linalg.slogdet(value).logabsdet
                - _cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        from .. import mvlgamma
        nu = self.df  # has shape (batch_shape)
        p = self._event_shape[-1]  # has singleton shape
        return ((p + 1) * (p * _log_2 / 2 + self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p)
                + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df  # has shape (batch_shape)
        p = self._event_shape[-1]  # has singleton shape
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        from .. import linalg, mvlgamma
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-linalg.slogdet(-2 * x).logabsdet + _log_2 * p) + mvlgamma(y + (p + 1) / 2, p=p)
