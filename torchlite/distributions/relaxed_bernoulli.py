"""RelaxedBernoulli(temperature, probs or logits) and LogitRelaxedBernoulli (PyTorch's
torch.distributions.RelaxedBernoulli, the binary Concrete / Gumbel-softmax distribution of
Maddison et al. and Jang et al., 2017): a reparameterisable relaxation of Bernoulli on (0, 1),
the sigmoid of a logistic sample (logit + log u - log(1 - u)) / temperature."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import BinaryLogitsProbs, broadcast_all, clamp_probs

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(BinaryLogitsProbs, Distribution):
    """The logit of a RelaxedBernoulli sample: a logistic distribution with location
    logits / temperature and scale 1 / temperature."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        self.temperature = temperature
        super().__init__(self._set_probs_or_logits(probs, logits), validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int],
               _instance: LogitRelaxedBernoulli | None = None) -> LogitRelaxedBernoulli:
        new = self._expand_param(LogitRelaxedBernoulli, batch_shape, _instance)
        new.temperature = self.temperature
        return new

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    def rsample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(tl.rand(shape, dtype=probs.dtype, device=probs.device))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        super().__init__(LogitRelaxedBernoulli(temperature, probs, logits), SigmoidTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: RelaxedBernoulli | None = None) -> RelaxedBernoulli:
        return super().expand(batch_shape,
                              self._get_checked_instance(RelaxedBernoulli, _instance))

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs
