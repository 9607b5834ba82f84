"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril) (PyTorch's
torch.distributions.MultivariateNormal): everything goes through the lower Cholesky factor L
of the covariance (Sigma = L L^T), so sampling is loc + L eps and densities use triangular
solves, never an explicit inverse."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .distribution import Distribution
from .utils import lazy_property

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["MultivariateNormal"]


def _batch_mahalanobis(L, x):
    """x^T (L L^T)^-1 x over the last dim, batched: |L^-1 x|^2 by a triangular solve."""
    y = tl.linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    return (y * y).sum(-1)


class MultivariateNormal(Distribution):
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
                 scale_tril: Tensor | None = None, validate_args: bool | None = None) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                             "specified.")
        matrix = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        if matrix.ndim < 2:
            raise ValueError("scale_tril, covariance_matrix or precision_matrix must be at least "
                             "two-dimensional, with optional leading batch dimensions")
        batch_shape = tuple(tl.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        n = loc.shape[-1]
        if matrix.shape[-1] != n or matrix.shape[-2] != n:
            raise ValueError(f"the matrix of shape {tuple(matrix.shape)} does not match loc's "
                             f"event size {n}")
        self.loc = loc.expand(*batch_shape, n)
        given = "scale_tril" if scale_tril is not None else \
            "covariance_matrix" if covariance_matrix is not None else "precision_matrix"
        self.__dict__[given] = matrix.expand(*batch_shape, n, n)
        super().__init__(batch_shape, (n,), validate_args=validate_args)    # validates first
        if given == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif given == "covariance_matrix":
            self._unbroadcasted_scale_tril = tl.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def expand(self, batch_shape: Size | Sequence[int],
               _instance: MultivariateNormal | None = None) -> MultivariateNormal:
        new = self._expand_tensors(MultivariateNormal, batch_shape, _instance, "loc",
                                   "covariance_matrix", "precision_matrix", "scale_tril")
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    def _L(self):
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, *self._event_shape,
                                                     *self._event_shape)

    # the matrix forms not given are made from the Cholesky factor on first use
    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._L()

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._L()
        return L @ L.mT

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        Id = tl.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        return tl.cholesky_solve(Id.expand(L.shape), L).expand(
            *self._batch_shape, *self._event_shape, *self._event_shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._L().pow(2).sum(-1)

    def rsample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = tl.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._L() @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril
        shape = tl.broadcast_shapes(tuple(diff.shape[:-1]), tuple(L.shape[:-2]))
        M = _batch_mahalanobis(L.expand(*shape, *L.shape[-2:]), diff.expand(*shape, diff.shape[-1]))
        half_log_det = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + half_log_det
        return h.expand(self._batch_shape) if len(self._batch_shape) else h


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of P^-1 without inverting P directly (PyTorch's trick: flip,
    Cholesky, flip back, invert the triangle)."""
    Lf = tl.linalg.cholesky(tl.flip(P, (-2, -1)))
    L_inv = tl.flip(Lf, (-2, -1)).mT
    Id = tl.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return tl.linalg.solve_triangular(L_inv, Id, upper=False)
