"""Randomized low-rank decompositions (torch.svd_lowrank, torch.pca_lowrank): Halko,
Martinsson and Tropp's randomized range finder with subspace iterations (their Algorithm 4.4),
then an exact SVD of the small projected matrix.  The random test matrix is drawn from the
global generator, so torchlite.manual_seed makes the results repeatable."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .random import randn
from .linalg_decomp import linalg_qr, linalg_svd

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["svd_lowrank", "pca_lowrank"]


def _orth(X):
    return linalg_qr(X).Q


def _approximate_basis(A, q, niter, M):
    """Q (*, m, q) with orthonormal columns such that Q Q^H (A - M) approximates A - M."""
    n = A.shape[-1]
    omega = randn(*A.shape[:-2], n, q, dtype=A.dtype, device=A.device)
    X = A @ omega if M is None else A @ omega - M @ omega
    Q = _orth(X)
    for _ in range(niter):
        Z = A.mH @ Q if M is None else A.mH @ Q - M.mH @ Q
        Z = _orth(Z)
        Y = A @ Z if M is None else A @ Z - M @ Z
        Q = _orth(Y)
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, V) with A - M ≈ U diag(S) V^H from a rank-q randomized SVD: U (*, m, q),
    S (*, q), V (*, n, q); q defaults to 6, niter subspace iterations (2)."""
    q = 6 if q is None else int(q)
    niter = 2 if niter is None else int(niter)
    m, n = A.shape[-2], A.shape[-1]
    if not 0 <= q <= min(m, n):
        raise ValueError(f"svd_lowrank: q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if niter < 0:
        raise ValueError(f"svd_lowrank: niter(={niter}) must be non-negative integer")
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:                               # work on the tall transpose, as PyTorch does
        U, S, V = svd_lowrank(A.mH, q, niter, None if M is None else M.mH)
        return V, S, U
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    Ub, S, Vh = linalg_svd(B, full_matrices=False)
    return Q @ Ub, S, Vh.mH


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, V) of a rank-q randomized SVD of A with its column means removed (center=True):
    the principal directions are V's columns, S**2 / (m - 1) their variances; q defaults to
    min(6, m, n)."""
    m, n = A.shape[-2], A.shape[-1]
    q = min(6, m, n) if q is None else int(q)
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter, None)
    return svd_lowrank(A, q, niter, A.mean(dim=-2, keepdim=True))
