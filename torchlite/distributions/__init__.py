"""torchlite.distributions: probability distributions with PyTorch's API
(torch.distributions).

Families: Bernoulli, Beta, Binomial, Categorical, Cauchy, Chi2, ContinuousBernoulli,
Dirichlet, Exponential, FisherSnedecor, Gamma, GeneralizedPareto, Geometric, Gumbel,
HalfCauchy, HalfNormal, InverseGamma, Kumaraswamy, Laplace, LKJCholesky, LogNormal,
LogisticNormal, Multinomial, MultivariateNormal, LowRankMultivariateNormal,
NegativeBinomial, Normal, OneHotCategorical (and its StraightThrough variant), Pareto,
Poisson, RelaxedBernoulli, RelaxedOneHotCategorical, StudentT, Uniform, VonMises, Weibull,
Wishart; the combinators Independent, MixtureSameFamily and TransformedDistribution; the
ExponentialFamily base class.  Every one has PyTorch's constructor arguments, properties
(mean, mode, variance, stddev, support, arg_constraints, batch_shape / event_shape), sample,
log_prob, entropy, cdf / icdf where PyTorch has them, expand, and PyTorch's argument / value
validation (ValueError).

Sampling draws from torchlite's generator (manual_seed makes it reproducible).  rsample is
reparameterised wherever PyTorch's is: gradients flow to the parameters, for Gamma (and so
Chi2, Beta, Dirichlet, StudentT) by implicit differentiation of the CDF through the Gamma
draws.  Gamma.cdf is the regularized incomplete gamma function, differentiable in both
arguments.

Also here: constraints, transforms (Exp, Affine, Sigmoid, Tanh, Softmax, StickBreaking,
Power, Abs, Softplus, Compose, Independent, Reshape, LowerCholesky, PositiveDefinite,
CorrCholesky, Cat, Stack, CumulativeDistribution, identity_transform), biject_to /
transform_to, and kl_divergence / register_kl with PyTorch's closed forms for the pairs of
these families."""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .fishersnedecor import FisherSnedecor
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Chi2, Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .folded import HalfCauchy, HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .pareto import Pareto
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .simple import Exponential, Laplace, Poisson
from .student_t import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .uniform import Uniform
from .von_mises import VonMises
from .wishart import Wishart
from .weibull import Weibull
# PyTorch's module names for distributions kept in shared files here (distributions.laplace)
from . import chi2, exponential, half_cauchy, half_normal, laplace, poisson, studentT  # noqa: F401,E402

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet",
           "Distribution", "Exponential", "Gamma", "Geometric", "Gumbel", "HalfCauchy",
           "HalfNormal", "Independent", "Laplace", "LogNormal", "LowRankMultivariateNormal",
           "MixtureSameFamily", "Multinomial", "MultivariateNormal", "Normal",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution",
           "Uniform", "FisherSnedecor", "InverseGamma", "Kumaraswamy", "NegativeBinomial",
           "Pareto", "Weibull", "GeneralizedPareto", "LogisticNormal", "VonMises",
           "ContinuousBernoulli", "ExponentialFamily", "LKJCholesky", "Wishart",
           "biject_to",
           "constraints", "kl_divergence", "register_kl", "transform_to", "transforms"] + transforms.__all__
