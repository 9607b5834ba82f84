"""LKJCholesky(dim, concentration=1) (torch.distributions.LKJCholesky): the Cholesky factor L
of a correlation matrix C = L L^T whose density is proportional to det(C)^(concentration - 1)
(Lewandowski, Kurowicka and Joe, "Generating random correlation matrices based on vines and
extended onion method", 2009).

Sampled by the onion method, as PyTorch does: row i of L is a uniform direction on the sphere
scaled by the square root of a Beta(i/2, concentration + (dim - 2)/2 - i/2) draw, with the
diagonal completing the row to unit length.  log_prob is taken with respect to the
strictly-lower entries of L: sum_i (2 (eta - 1) + dim - i - 1) log L_ii minus the normaliser of
the paper (its page 1999)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Tensor | float = 1.0, validate_args: bool | None = None) -> None:
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.shape
        event_shape = tl.Size((dim, dim))
        # the Beta of each row's squared off-diagonal length (row 0 has none: a dummy)
        marginal = self.concentration + 0.5 * (dim - 2)
        offset = tl.arange(dim - 1, dtype=self.concentration.dtype,
                           device=self.concentration.device)
        offset = tl.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape: Size | Sequence[int], _instance: LKJCholesky | None = None) -> LKJCholesky:
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tl.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        with tl.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u = tl.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norm = u.norm(dim=-1, keepdim=True)
            direction = u / tl.where(norm > 0, norm, tl.ones_like(norm))   # row 0 is all zeros
            w = y.sqrt() * direction
            tiny = tl.finfo(w.dtype).tiny
            diag = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + tl.diag_embed(diag)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        order = tl.arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalised = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normaliser = (0.5 * dm1 * math.log(math.pi) + tl.mvlgamma(alpha - 0.5, dm1)
                      - alpha.lgamma() * dm1)
        return unnormalised - normaliser


