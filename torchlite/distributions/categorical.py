"""Categorical(probs or logits) (PyTorch's torch.distributions.Categorical)."""
import torchlite as tl

from . import constraints
from .distribution import Distribution
from .utils import logits_to_probs

__all__ = ["Categorical"]


class Categorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = self.probs.clamp(min=tl.finfo(probs.dtype).tiny).log()
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = logits_to_probs(self.logits)
        self._num_events = self.probs.shape[-1]
        super().__init__(self.probs.shape[:-1], validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self):
        return self.probs.shape

    @property
    def mean(self):
        return tl.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return tl.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        n = 1
        for s in sample_shape:
            n *= s
        probs_2d = self.probs.reshape(-1, self._num_events)
        with tl.no_grad():
            samples = tl.multinomial(probs_2d, n, replacement=True).t()
        return samples.reshape(sample_shape + tuple(self._batch_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = tl.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        min_real = tl.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = tl.arange(self._num_events, dtype=tl.int64)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
