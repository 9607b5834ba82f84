"""Bernoulli(probs or logits) (PyTorch's torch.distributions.Bernoulli)."""
import torchlite as tl

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, probs_to_logits

__all__ = ["Bernoulli"]


class Bernoulli(Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self.logits = probs_to_logits(self.probs, is_binary=True)
        else:
            (self.logits,) = broadcast_all(logits)
            self.probs = self.logits.sigmoid()
        super().__init__(self.probs.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return (self.probs >= 0.5).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        with tl.no_grad():
            return tl.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = tl.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        return -tl.nn.functional.binary_cross_entropy_with_logits(logits, value,
                                                                  reduction="none")

    def entropy(self):
        return tl.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                                 reduction="none")
