"""HalfNormal(scale) and HalfCauchy(scale) (PyTorch's torch.distributions.HalfNormal and
HalfCauchy): |x| for x from a Normal(0, scale) or Cauchy(0, scale), through AbsTransform,
with the densities, cdf and entropy written out (twice the base's on x >= 0)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .cauchy import Cauchy
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["HalfNormal", "HalfCauchy"]


class _Folded(TransformedDistribution):
    """What HalfNormal and HalfCauchy share: the base folded at 0."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mode(self) -> Tensor:
        return tl.zeros_like(self.scale)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return tl.where(value >= 0, log_prob, tl.full_like(log_prob, float("-inf")))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: HalfNormal | None = None) -> HalfNormal:
        return super().expand(batch_shape, self._get_checked_instance(HalfNormal, _instance))

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: HalfCauchy | None = None) -> HalfCauchy:
        return super().expand(batch_shape, self._get_checked_instance(HalfCauchy, _instance))

    @property
    def mean(self) -> Tensor:
        return tl.full(self._extended_shape(), math.inf, dtype=self.scale.dtype,
                       device=self.scale.device)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance
