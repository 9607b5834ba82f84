"""GeneralizedPareto(loc, scale, concentration) (torch.distributions.GeneralizedPareto): with
z = (x - loc) / scale and xi the concentration, the survival function is (1 + xi z)^(-1/xi)
(e^-z at xi = 0); support [loc, loc - scale/xi] for xi < 0, [loc, inf) otherwise.  Sampled by
inverting the cdf, so rsample has gradients."""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, concentration: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(isinstance(v, numbers.Number) for v in (loc, scale, concentration))
        super().__init__(tl.Size(()) if scalar else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int],
               _instance: GeneralizedPareto | None = None) -> GeneralizedPareto:
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = tl.Size(batch_shape)
        new.loc, new.scale = self.loc.expand(batch_shape), self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _safe(self):
        """(xi == 0 where it is, within isclose, and xi with those replaced by 1)."""
        xi = self.concentration
        zero = tl.isclose(xi, tl.zeros_like(xi))
        return zero, tl.where(zero, tl.ones_like(xi), xi)

    def rsample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        u = tl.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype,
                    device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._safe()
        y = 1 / xi + 1
        nonzero = tl.where(y == 0, y, y * (xi * z).log1p())
        return -self.scale.log() - tl.where(zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._safe()
        return tl.where(zero, -z, -(xi * z).log1p() / xi)

    def log_cdf(self, value: Tensor) -> Tensor:
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        zero, xi = self._safe()
        log_u = (-value).log1p()
        return tl.where(zero, self.loc - self.scale * log_u,
                        self.loc + self.scale / xi * (-xi * log_u).expm1())

    @property
    def mean(self) -> Tensor:
        xi = self.concentration
        valid = xi < 1
        safe = tl.where(valid, xi, 0.5)
        return tl.where(valid, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def variance(self) -> Tensor:
        xi = self.concentration
        valid = xi < 0.5
        safe = tl.where(valid, xi, 0.25)
        return tl.where(valid, self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe)), math.nan)

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).broadcast_to(self._batch_shape)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        upper = tl.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                         math.inf)
        return constraints.interval(self.loc, upper)
