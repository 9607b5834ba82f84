"""Wishart(df, covariance_matrix | precision_matrix | scale_tril) (torch.distributions.Wishart):
the distribution of X = sum of df outer products of N(0, Sigma) vectors, for real df > p - 1.

Sampled by Bartlett's decomposition: X = L A A^T L^T with Sigma = L L^T and A lower-triangular,
A_ii = sqrt(chi2(df - i)) and standard normal below the diagonal (the chi2 draws are
reparameterised, so rsample has gradients).  The density, with Gamma_p the multivariate gamma
function,
  log p(X) = (df - p - 1)/2 log|X| - tr(Sigma^-1 X)/2 - df p/2 log 2 - df/2 log|Sigma|
             - log Gamma_p(df/2)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .distribution import Distribution
from .gamma import Chi2
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["Wishart"]


def _mvdigamma(a, p):
    """The multivariate digamma sum_{i<p} digamma(a - i/2)."""
    offsets = tl.arange(p, dtype=a.dtype, device=a.device) * 0.5
    return tl.digamma(a.unsqueeze(-1) - offsets).sum(-1)


class Wishart(Distribution):
    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky,
                       "df": constraints.greater_than(0)}
    support = constraints.positive_definite
    has_rsample = True

    def __init__(self, df: Tensor | float, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if (covariance_matrix is not None) + (scale_tril is not None) + \
                (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril "
                             "may be specified.")
        matrix = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        if matrix.ndim < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        p = matrix.shape[-1]
        if not isinstance(df, tl.Tensor):
            df = tl.tensor(df, dtype=matrix.dtype, device=matrix.device)
        batch_shape = tuple(tl.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(df.shape)))
        self.df = df.expand(batch_shape)
        given = "scale_tril" if scale_tril is not None else \
            "covariance_matrix" if covariance_matrix is not None else "precision_matrix"
        self.__dict__[given] = matrix.expand(*batch_shape, p, p)
        # df > p - 1 is the real constraint (it depends on the event size)
        self.arg_constraints = dict(self.arg_constraints, df=constraints.greater_than(p - 1))
        super().__init__(batch_shape, (p, p), validate_args=validate_args)
        if given == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif given == "covariance_matrix":
            self._unbroadcasted_scale_tril = tl.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)
        # the chi2 degrees of freedom of A's diagonal: df, df - 1, ..., df - p + 1
        steps = tl.arange(p, dtype=self.df.dtype, device=self.df.device)
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - steps)

    def expand(self, batch_shape: Size | Sequence[int], _instance: Wishart | None = None) -> Wishart:
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tl.Size(batch_shape)
        p = self._event_shape[-1]
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name].expand(*batch_shape, p, p)
        new.arg_constraints = self.arg_constraints
        new._dist_chi2 = self._dist_chi2.expand(batch_shape + (p,))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _L(self):
        p = self._event_shape[-1]
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, p, p)

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
        eye = tl.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        p = self._event_shape[-1]
        return tl.cholesky_solve(eye.expand(L.shape), L).expand(*self._batch_shape, p, p)

    @property
    def mean(self) -> Tensor:
        return self.df.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        p = self._event_shape[-1]
        factor = (self.df - p - 1).reshape(tuple(self._batch_shape) + (1, 1))
        cov = self.covariance_matrix
        return tl.where(factor > 0, factor * cov, math.nan)

    @property
    def variance(self) -> Tensor:
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self.df.reshape(tuple(self._batch_shape) + (1, 1)) * (
            V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett(self, sample_shape):
        p = self._event_shape[-1]
        shape = self._extended_shape(sample_shape)
        noise = tl.randn(shape, dtype=self.df.dtype, device=self.df.device).tril(-1)
        diag = self._dist_chi2.rsample(sample_shape).sqrt()
        A = noise + tl.diag_embed(diag)
        LA = self._L() @ A
        return LA @ LA.mT, p

    def rsample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        X, _ = self._bartlett(tuple(sample_shape))
        return X

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        p = self._event_shape[-1]
        df = self.df
        L = self._unbroadcasted_scale_tril
        half_logdet_sigma = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        # tr(Sigma^-1 X) = sum of (L^-1 X L^-T)'s diagonal, by two triangular solves
        Y = tl.linalg.solve_triangular(L, value, upper=False)
        Z = tl.linalg.solve_triangular(L, Y.mT, upper=False)
        trace = Z.diagonal(dim1=-2, dim2=-1).sum(-1)
        return (0.5 * (df - p - 1) * tl.linalg.slogdet(value).logabsdet - 0.5 * trace
                - 0.5 * df * p * math.log(2) - df * half_logdet_sigma
                - tl.mvlgamma(0.5 * df, p))

    def entropy(self) -> Tensor:
        p = self._event_shape[-1]
        df = self.df
        half_logdet_sigma = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * half_logdet_sigma + 0.5 * p * (p + 1) * math.log(2)
                + tl.mvlgamma(0.5 * df, p) - 0.5 * (df - p - 1) * _mvdigamma(0.5 * df, p)
                + 0.5 * df * p)
