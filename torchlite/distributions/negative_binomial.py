"""NegativeBinomial(total_count, probs or logits) (torch.distributions.NegativeBinomial): the
number of successes (each with probability probs) before total_count failures; sampled as a
Poisson with a Gamma(total_count, e^-logits)-distributed rate, as PyTorch does."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import BinaryLogitsProbs, lazy_property

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["NegativeBinomial"]


class NegativeBinomial(BinaryLogitsProbs, Distribution):
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        super().__init__(self._set_probs_or_logits(probs, logits, total_count),
                         validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: NegativeBinomial | None = None) -> NegativeBinomial:
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = tl.Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / tl.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        # not validated: total_count may be 0
        return Gamma(self.total_count, (-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        with tl.no_grad():
            return tl.poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        from ..nn.functional import logsigmoid
        r, logits = self.total_count, self.logits
        unnormalised = r * logsigmoid(-logits) + value * logsigmoid(logits)
        normaliser = -(r + value).lgamma() + (1.0 + value).lgamma() + r.lgamma()
        # a count of 0 successes with total_count 0 has probability 1 (lgamma(0) is inf there)
        normaliser = tl.where(r + value == 0.0, 0.0, normaliser)
        return unnormalised - normaliser
