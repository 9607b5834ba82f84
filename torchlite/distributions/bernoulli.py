"""Bernoulli(probs or logits) (PyTorch's torch.distributions.Bernoulli)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .exp_family import ExponentialFamily
from .utils import BinaryLogitsProbs, broadcast_all

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["Bernoulli"]


class Bernoulli(BinaryLogitsProbs, ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        super().__init__(self._set_probs_or_logits(probs, logits), validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: Bernoulli | None = None) -> Bernoulli:
        return self._expand_param(Bernoulli, batch_shape, _instance)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return tl.where(self.probs == 0.5, tl.full_like(mode, float("nan")), mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        with tl.no_grad():
            return tl.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value.to(self.logits.dtype))
        return -tl.nn.functional.binary_cross_entropy_with_logits(logits, value,
                                                                  reduction="none")

    def entropy(self) -> Tensor:
        return tl.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                                 reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = tl.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    # the exponential-family form: theta = logits, A = log(1 + e^theta)
    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        return x.exp().log1p()

    _mean_carrier_measure = 0
