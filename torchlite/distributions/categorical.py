"""Categorical(probs or logits) (PyTorch's torch.distributions.Categorical): one of K
categories, K the size of the parameter's last dim."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["Categorical"]


def _inverse_cdf_draws(probs, n):
    """n draws from one categorical distribution, by binary search of uniforms in its CDF:
    one pass over the draws, where multinomial's kernel works per draw with the whole row.
    The CDF is normalised so its last entry is exactly 1 > every uniform, and a category of
    probability 0 has an empty interval, so it is never drawn.  Invalid probabilities go to
    multinomial, which raises PyTorch's error."""
    if not bool(((probs >= 0) & probs.isfinite()).all()) or not bool(probs.sum() > 0):
        return tl.multinomial(probs.reshape(1, -1), n, replacement=True).t()
    cdf = probs.double().cumsum(0)
    cdf = cdf / cdf[-1]
    u = tl.rand(n, dtype=tl.float64, device=probs.device)
    return tl.searchsorted(cdf, u, right=True).reshape(n, 1)


class Categorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: Categorical | None = None) -> Categorical:
        new = self._expand_tensors(Categorical, batch_shape, _instance, "probs", "logits")
        new._param = vars(new).get("logits", vars(new).get("probs"))
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return tl.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                       device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return tl.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                       device=self.probs.device)

    def sample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        n = tl.Size(sample_shape).numel()
        probs_2d = self.probs.reshape(-1, self._num_events)
        with tl.no_grad():
            if probs_2d.shape[0] == 1 and n > 1:
                samples_2d = _inverse_cdf_draws(probs_2d[0], n)
            else:
                samples_2d = tl.multinomial(probs_2d, n, replacement=True).t()
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = tl.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=tl.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = tl.arange(self._num_events, dtype=tl.int64, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
