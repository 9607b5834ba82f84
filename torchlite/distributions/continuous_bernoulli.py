"""ContinuousBernoulli(probs or logits) (torch.distributions.ContinuousBernoulli): on [0, 1],
density C(lambda) lambda^x (1 - lambda)^(1 - x) with the normaliser
C(lambda) = 2 atanh(1 - 2 lambda) / (1 - 2 lambda) (2 at lambda = 1/2), from Loaiza-Ganem and
Cunningham, "The continuous Bernoulli: fixing a pervasive error in variational autoencoders"
(2019).  The closed forms divide 0 by 0 at lambda = 1/2: inside lims (default (0.499, 0.501))
they are replaced by their Taylor expansions in (lambda - 1/2), as PyTorch does.  Sampled by
inverting the cdf, so rsample has gradients."""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .exp_family import ExponentialFamily
from .utils import BinaryLogitsProbs, broadcast_all, clamp_probs, lazy_property, logits_to_probs

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(BinaryLogitsProbs, ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 lims: tuple[float, float] = (0.499, 0.501), validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(tl.Size(()) if scalar else self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Size | Sequence[int],
               _instance: ContinuousBernoulli | None = None) -> ContinuousBernoulli:
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = tl.Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        ExponentialFamily.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    # ---- the closed forms, and where they are replaced --------------------------------------------
    def _stable(self):
        """Where lambda is outside lims, so the closed forms are accurate."""
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """lambda, with the values inside lims moved to lims[0] (their closed forms are then
        computed at a safe point and discarded)."""
        return tl.where(self._stable(), self.probs, tl.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self):
        lam = self._cut_probs()
        below = tl.where(lam <= 0.5, lam, tl.zeros_like(lam))
        above = tl.where(lam >= 0.5, lam, tl.ones_like(lam))
        log_norm = ((-lam).log1p() - lam.log()).abs().log() - tl.where(
            lam <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return tl.where(self._stable(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        lam = self._cut_probs()
        closed = lam / (2.0 * lam - 1.0) + 1.0 / ((-lam).log1p() - lam.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return tl.where(self._stable(), closed, taylor)

    @property
    def variance(self) -> Tensor:
        lam = self._cut_probs()
        closed = (lam * (lam - 1.0) / (1.0 - 2.0 * lam).pow(2)
                  + 1.0 / ((-lam).log1p() - lam.log()).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return tl.where(self._stable(), closed, taylor)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    # ---- sampling and densities ------------------------------------------------------------------
    def sample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        u = tl.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype,
                    device=self.probs.device)
        with tl.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        u = tl.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype,
                    device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        from ..nn.functional import binary_cross_entropy_with_logits
        logits, value = broadcast_all(self.logits, value)
        return (-binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        lam = self._cut_probs()
        closed = (lam.pow(value) * (1.0 - lam).pow(1.0 - value) + lam - 1.0) / (2.0 * lam - 1.0)
        inner = tl.where(self._stable(), closed, value)
        return tl.where(value <= 0.0, tl.zeros_like(value),
                        tl.where(value >= 1.0, tl.ones_like(value), inner))

    def icdf(self, value: Tensor) -> Tensor:
        lam = self._cut_probs()
        closed = (((-lam + value * (2.0 * lam - 1.0)).log1p() - (-lam).log1p())
                  / (lam.log() - (-lam).log1p()))
        return tl.where(self._stable(), closed, value)

    def entropy(self) -> Tensor:
        log0, log1 = (-self.probs).log1p(), self.probs.log()
        return self.mean * (log0 - log1) - self._cont_bern_log_norm() - log0

    # ---- the exponential-family form: theta = logits -------------------------------------------------
    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        stable = (x <= lo) | (x > hi)
        cut = tl.where(stable, x, tl.full_like(x, lo))
        log_norm = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return tl.where(stable, log_norm, taylor)
