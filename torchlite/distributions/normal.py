"""Normal(loc, scale) (PyTorch's torch.distributions.Normal)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["Normal"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Normal(ExponentialFamily):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: Normal | None = None) -> Normal:
        return self._expand_tensors(Normal, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def rsample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = tl.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def sample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        with tl.no_grad():
            return tl.normal(self.loc.expand(self._extended_shape(sample_shape)),
                             self.scale.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        # -z^2 / 2 - log(scale) - log(2 pi) / 2 with z = (value - loc) / scale: two passes over
        # a value-sized tensor make z, and without autograd the rest works on z in place
        # (PyTorch's formula makes five value-sized temporaries)
        z = (value - self.loc) / self.scale
        bias = self.scale.log() + _HALF_LOG_2PI
        if tl.is_grad_enabled() and (z.requires_grad or bias.requires_grad):
            return -0.5 * (z * z) - bias
        return z.square_().mul_(-0.5).sub_(bias)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    # the exponential-family form: theta = (mu / sigma^2, -1 / (2 sigma^2)), h = 1
    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()

    _mean_carrier_measure = 0
