"""One-parameter-family distributions with closed forms (PyTorch's Exponential, Laplace,
LogNormal, Poisson)."""
import torchlite as tl

from . import constraints
from .distribution import Distribution
from .normal import Normal
from .utils import broadcast_all

__all__ = ["Exponential", "Laplace", "LogNormal", "Poisson"]


class Exponential(Distribution):
    """Exponential(rate): density rate * exp(-rate x) on x >= 0."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return tl.zeros_like(self.rate)

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        u = tl.rand(self._extended_shape(sample_shape), dtype=self.rate.dtype)
        return -(1 - u).log() / self.rate          # 1 - u in (0, 1]: never log(0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        return -(1 - value).log() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()


class Laplace(Distribution):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    def rsample(self, sample_shape=()):
        eps = tl.finfo(self.loc.dtype).eps
        u = tl.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype) * 2 - 1
        u = u.clamp(-1 + eps, 1 - eps)
        return self.loc - self.scale * u.sign() * (1 - u.abs()).log()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        z = (value - self.loc) / self.scale
        return 0.5 - 0.5 * z.sign() * (1 - (-z.abs()).exp())

    def entropy(self):
        return 1 + (2 * self.scale).log()


class LogNormal(Distribution):
    """LogNormal(loc, scale): exp of a Normal(loc, scale) (its base_dist, whose formulas it
    uses: log_prob(y) = base.log_prob(log y) - log y, entropy = base.entropy() + loc)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        self.loc, self.scale = self.base_dist.loc, self.base_dist.scale
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = value.log()
        return self.base_dist.log_prob(y) - y

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class Poisson(Distribution):
    """Poisson(rate): P(k) = rate^k exp(-rate) / k!."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        with tl.no_grad():
            return tl.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = tl.broadcast_tensors(self.rate, value.to(self.rate.dtype))
        return tl.xlogy(value, rate) - rate - (value + 1).lgamma()
