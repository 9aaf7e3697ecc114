"""torch.distributions: Bernoulli, Beta, Categorical, Dirichlet, Gamma, MultivariateNormal, Normal, Uniform,
kl_divergence / register_kl and the constraints module, following torch 2.13 (values, errors, and the CPU
generator's random streams; see docs/compatibility.md).

The submodules load on first use (`import tapegrad` stays fast): `tapegrad.distributions.Normal` and
`from tapegrad.distributions import Normal` import them then.
"""
import importlib

_WHERE = {"Bernoulli": "bernoulli", "Beta": "beta", "Categorical": "categorical", "Dirichlet": "dirichlet",
          "Distribution": "distribution", "ExponentialFamily": "exp_family", "Gamma": "gamma",
          "MultivariateNormal": "multivariate_normal", "Normal": "normal", "Uniform": "uniform",
          "kl_divergence": "kl", "register_kl": "kl"}
_SUBMODULES = {"constraints", "kl", "utils", "bernoulli", "beta", "categorical", "dirichlet", "distribution",
               "exp_family", "gamma", "multivariate_normal", "normal", "uniform"}

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "ExponentialFamily", "Gamma",
           "MultivariateNormal", "Normal", "Uniform", "constraints", "kl_divergence", "register_kl"]


def __getattr__(name):
    if name in _WHERE:
        importlib.import_module(".kl", __name__)   # registers every KL pair before any distribution is used
        value = getattr(importlib.import_module("." + _WHERE[name], __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module("." + name, __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE) | _SUBMODULES)
