"""Geometric(probs or logits) (PyTorch's torch.distributions.Geometric): the number of
failures before the first success, P(k) = (1 - p)^k p."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .distribution import Distribution
from .utils import BinaryLogitsProbs, broadcast_all

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["Geometric"]


class Geometric(BinaryLogitsProbs, Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        super().__init__(self._set_probs_or_logits(probs, logits), validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to be "
                             f"positive but found invalid values:\n"
                             f"{self.probs[~(self.probs > 0)]}")

    def expand(self, batch_shape: Size | Sequence[int], _instance: Geometric | None = None) -> Geometric:
        return self._expand_tensors(Geometric, batch_shape, _instance, "probs", "logits")

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return tl.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with tl.no_grad():
            # inversion: floor(log u / log(1 - p)), u on (0, 1)
            u = tl.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=tl.finfo(u.dtype).tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # p = 1 scores k = 0 as log 1 = 0 (not 0 * log 0 = nan)
        probs = tl.where((probs == 1) & (value == 0), tl.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return tl.nn.functional.binary_cross_entropy_with_logits(
            self.logits, self.probs, reduction="none") / self.probs
