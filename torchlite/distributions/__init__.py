"""torchlite.distributions: probability distributions with PyTorch's API
(torch.distributions): Distribution, Normal, Categorical, Bernoulli, Uniform, Exponential,
Laplace, LogNormal, Poisson, MultivariateNormal, constraints,
kl_divergence / register_kl.  Sampling draws from torchlite's generator (manual_seed makes it
reproducible); rsample is reparameterised (gradients flow to the parameters).  The other
families of PyTorch's module are not here yet (README, "Not yet")."""
from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .simple import Exponential, Laplace, LogNormal, Poisson
from .uniform import Uniform

__all__ = ["Distribution", "Normal", "Categorical", "Bernoulli", "Uniform", "Exponential",
           "Laplace", "LogNormal", "Poisson", "MultivariateNormal", "constraints", "kl_divergence",
           "register_kl"]
