"""Cauchy(loc, scale) (PyTorch's torch.distributions.Cauchy): density
1 / (pi scale (1 + ((x - loc) / scale)^2)); no mean, infinite variance."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: Cauchy | None = None) -> Cauchy:
        return self._expand_tensors(Cauchy, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self) -> Tensor:
        return tl.full(self._extended_shape(), float("nan"), dtype=self.loc.dtype,
                       device=self.loc.device)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return tl.full(self._extended_shape(), float("inf"), dtype=self.loc.dtype,
                       device=self.loc.device)

    def rsample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = tl.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + self.scale * (math.pi * (u - 0.5)).tan()     # the inverse cdf

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - \
            ((value - self.loc) / self.scale).pow(2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()
