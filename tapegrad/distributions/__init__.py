"""torch.distributions, following torch 2.13 (values, errors, and the CPU generator's random streams; see
docs/compatibility.md): every distribution torch ships, the transforms, biject_to / transform_to,
kl_divergence / register_kl and the constraints module.

The submodules load on first use (`import tapegrad` stays fast): `tapegrad.distributions.Normal` and
`from tapegrad.distributions import Normal` import them then.
"""
import importlib

_TRANSFORMS = ("AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
               "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
               "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
               "SoftplusTransform", "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
               "Transform", "identity_transform")
_WHERE = {"Bernoulli": "bernoulli", "Beta": "beta", "Binomial": "binomial", "Categorical": "categorical",
          "Cauchy": "cauchy", "Chi2": "chi2", "ContinuousBernoulli": "continuous_bernoulli", "Dirichlet": "dirichlet",
          "Distribution": "distribution", "Exponential": "exponential", "ExponentialFamily": "exp_family",
          "FisherSnedecor": "fishersnedecor", "Gamma": "gamma", "GeneralizedPareto": "generalized_pareto",
          "Geometric": "geometric", "Gumbel": "gumbel", "HalfCauchy": "half_cauchy", "HalfNormal": "half_normal",
          "Independent": "independent", "InverseGamma": "inverse_gamma", "Kumaraswamy": "kumaraswamy",
          "LKJCholesky": "lkj_cholesky", "Laplace": "laplace", "LogNormal": "log_normal",
          "LogisticNormal": "logistic_normal", "LowRankMultivariateNormal": "lowrank_multivariate_normal",
          "MixtureSameFamily": "mixture_same_family", "Multinomial": "multinomial",
          "MultivariateNormal": "multivariate_normal", "NegativeBinomial": "negative_binomial", "Normal": "normal",
          "OneHotCategorical": "one_hot_categorical", "OneHotCategoricalStraightThrough": "one_hot_categorical",
          "Pareto": "pareto", "Poisson": "poisson", "RelaxedBernoulli": "relaxed_bernoulli",
          "RelaxedOneHotCategorical": "relaxed_categorical", "StudentT": "studentT",
          "TransformedDistribution": "transformed_distribution", "Uniform": "uniform", "VonMises": "von_mises",
          "Weibull": "weibull", "Wishart": "wishart", "biject_to": "constraint_registry",
          "transform_to": "constraint_registry", "kl_divergence": "kl", "register_kl": "kl",
          **{name: "transforms" for name in _TRANSFORMS}}
_SUBMODULES = set(_WHERE.values()) | {"constraints", "utils"}

__all__ = sorted(set(_WHERE) - {"OneHotCategoricalStraightThrough"} - set(_TRANSFORMS)) \
    + ["OneHotCategoricalStraightThrough"] + list(_TRANSFORMS)


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
