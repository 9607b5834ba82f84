"""VonMises(loc, concentration) (torch.distributions.VonMises): the circular normal on
[-pi, pi), density exp(kappa cos(x - loc)) / (2 pi I0(kappa)).

log I0 comes from torchlite.special.i0e (I0(k) = i0e(k) e^k), accurate to float64 rounding,
where PyTorch uses a 7-digit polynomial approximation, so log-densities agree with PyTorch's
to about 1e-7.  Sampling is Best and Fisher's rejection algorithm (1979) in float64, as
PyTorch's: a wrapped-Cauchy proposal accepted by a squeeze or the exact test."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["VonMises"]

_MAX_ROUNDS = 1000          # acceptance is at least 65% per round at every concentration


def _log_i0(k):
    return tl.special.i0e(k).log() + k


def _log_i1(k):
    return tl.special.i1e(k).log() + k


class VonMises(Distribution):
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Tensor | float, concentration: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, tl.Size(()), validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * (value - self.loc).cos() - math.log(2 * math.pi)
                - _log_i0(self.concentration))

    @lazy_property
    def _proposal_r(self):
        k = self.concentration.to(tl.float64)
        tau = 1 + (1 + 4 * k ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        # for tiny kappa the exact form cancels; 1/k + k is its expansion there
        return tl.where(k < 1e-5, 1 / k + k, (1 + rho ** 2) / (2 * rho))

    def sample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        with tl.no_grad():
            shape = self._extended_shape(sample_shape)
            loc = self.loc.to(tl.float64).expand(shape)
            k = self.concentration.to(tl.float64).expand(shape)
            r = self._proposal_r.expand(shape)
            x = tl.zeros(shape, dtype=tl.float64, device=self.loc.device)
            done = tl.zeros(shape, dtype=tl.bool, device=self.loc.device)
            for _ in range(_MAX_ROUNDS):
                if bool(done.all()):
                    break
                u1, u2, u3 = tl.rand((3,) + tuple(shape), dtype=tl.float64,
                                     device=self.loc.device).unbind()
                z = (math.pi * u1).cos()
                f = (1 + r * z) / (r + z)
                c = k * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                accept = accept & ~done
                x = tl.where(accept, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            else:
                raise RuntimeError("VonMises.sample: the rejection sampler did not finish")
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    def expand(self, batch_shape: Size | Sequence[int], _instance: VonMises | None = None) -> VonMises:
        return type(self)(self.loc.expand(batch_shape), self.concentration.expand(batch_shape),
                          validate_args=self.__dict__.get("_validate_args"))

    @property
    def mean(self) -> Tensor:
        """The circular mean, loc."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        """The circular variance 1 - I1(kappa) / I0(kappa)."""
        k = self.concentration
        return 1 - (_log_i1(k) - _log_i0(k)).exp()


