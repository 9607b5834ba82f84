"""Kumaraswamy(concentration1, concentration0) (torch.distributions.Kumaraswamy): on (0, 1),
density a b x^(a-1) (1 - x^a)^(b-1) (a = concentration1, b = concentration0), sampled as
(1 - U^(1/b))^(1/a) for U uniform."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["Kumaraswamy"]


def _moment(a, b, n):
    """E[X^n] = b B(1 + n/a, b), through log-gamma."""
    arg1 = 1 + n / a
    log_value = arg1.lgamma() + b.lgamma() - (arg1 + b).lgamma()
    return b * log_value.exp()


class Kumaraswamy(TransformedDistribution):
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(tl.zeros_like(self.concentration0), tl.ones_like(self.concentration0),
                       validate_args=validate_args)
        super().__init__(base, [PowerTransform(exponent=self.concentration0.reciprocal()),
                                AffineTransform(loc=1.0, scale=-1.0),
                                PowerTransform(exponent=self.concentration1.reciprocal())],
                         validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: Kumaraswamy | None = None) -> Kumaraswamy:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """((a - 1) / (a b - 1))^(1/a) where a, b >= 1 (NaN otherwise).  PyTorch's formula
        takes log1p(-b) and returns NaN for every a, b > 1 (torch 2.13); this is the mode."""
        a, b = self.concentration1, self.concentration0
        log_mode = ((a - 1).log() - (a * b - 1).log()) / a
        return tl.where((b < 1) | (a < 1), math.nan, log_mode.exp())

    @property
    def variance(self) -> Tensor:
        return _moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        t1, t0 = 1 - a.reciprocal(), 1 - b.reciprocal()
        harmonic = (b + 1).digamma() + euler_constant
        return t0 + t1 * harmonic - a.log() - b.log()
