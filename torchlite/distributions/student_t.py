"""StudentT(df, loc=0, scale=1) (PyTorch's torch.distributions.StudentT): loc + scale * X /
sqrt(Z / df) with X standard normal and Z ~ Chi2(df), reparameterised through both (the
Chi2 draw's gradient in df is the Gamma sampler's implicit one)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .distribution import Distribution
from .gamma import Chi2
from .utils import broadcast_all

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["StudentT"]


class StudentT(Distribution):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Tensor | float, loc: Tensor | float = 0.0, scale: Tensor | float = 1.0,
                 validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: StudentT | None = None) -> StudentT:
        new = self._expand_tensors(StudentT, batch_shape, _instance, "df", "loc", "scale")
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self) -> Tensor:
        return tl.where(self.df > 1, self.loc, tl.full_like(self.loc, float("nan")))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        # df > 2: scale^2 df / (df - 2); 1 < df <= 2: infinite; df <= 1: undefined
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        return tl.where(self.df > 2, finite,
                        tl.where(self.df > 1, tl.full_like(finite, float("inf")),
                                 tl.full_like(finite, float("nan"))))

    def rsample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = tl.randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        log_norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
                    + (0.5 * self.df).lgamma() - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - log_norm

    def entropy(self) -> Tensor:
        lbeta = (0.5 * self.df).lgamma() + math.lgamma(0.5) - (0.5 * (self.df + 1)).lgamma()
        return (self.scale.log()
                + 0.5 * (self.df + 1) * ((0.5 * (self.df + 1)).digamma()
                                         - (0.5 * self.df).digamma())
                + 0.5 * self.df.log() + lbeta)
