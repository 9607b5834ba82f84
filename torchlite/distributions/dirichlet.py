"""Dirichlet(concentration) (PyTorch's torch.distributions.Dirichlet): a point of the
simplex, drawn as independent Gamma(concentration_i, 1) variables divided by their sum, so
rsample's gradient is the Gamma draws' implicit one carried through the normalisation."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from ._standard_gamma import standard_gamma
from .exp_family import ExponentialFamily

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["Dirichlet"]


def _sample_dirichlet(concentration):
    """One simplex point per row of concentration (of any shape), differentiable."""
    z = standard_gamma(concentration)         # never 0: no 0 / 0 rows
    return z / z.sum(-1, keepdim=True)


class Dirichlet(ExponentialFamily):
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor | float, validate_args: bool | None = None) -> None:
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: Dirichlet | None = None) -> Dirichlet:
        return self._expand_tensors(Dirichlet, batch_shape, _instance, "concentration")

    def rsample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        return _sample_dirichlet(self.concentration.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (tl.xlogy(self.concentration - 1.0, value).sum(-1)
                + self.concentration.sum(-1).lgamma() - self.concentration.lgamma().sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, keepdim=True)
        # all concentrations below 1: the density peaks at the vertex of the largest
        all_below = (self.concentration < 1).all(-1, keepdim=True)
        vertex = tl.nn.functional.one_hot(self.concentration.argmax(-1),
                                          self.concentration.shape[-1]).to(mode.dtype)
        return tl.where(all_below, vertex, mode)

    @property
    def variance(self) -> Tensor:
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Tensor:
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (self.concentration.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma()
                - ((self.concentration - 1.0) * self.concentration.digamma()).sum(-1))

    # the exponential-family form: theta = alpha, t(x) = log x, h = 1 / prod(x)
    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()

    @property
    def _mean_carrier_measure(self):
        a = self.concentration
        return -(a.digamma() - a.sum(-1, keepdim=True).digamma()).sum(-1)
