"""torch.distributions: Bernoulli, Beta, Categorical, Dirichlet, Gamma, MultivariateNormal, Normal, Uniform,
kl_divergence / register_kl and the constraints module, following torch 2.13 (values, errors, and the CPU
generator's random streams; see docs/compatibility.md)."""
from . import constraints, kl  # noqa: F401
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Gamma
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "ExponentialFamily", "Gamma",
           "MultivariateNormal", "Normal", "Uniform", "constraints", "kl_divergence", "register_kl"]
