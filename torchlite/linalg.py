"""torchlite.linalg: matrix products, norms, decompositions and solvers, as torch.linalg."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._ops.linalg import (matmul, vecdot, multi_dot, linalg_cross as cross, matrix_norm, cond,
                          linalg_norm as norm)
from ._ops.reduction import vector_norm
from ._ops.linalg_decomp import (
    LinAlgError, ldl_factor, ldl_factor_ex, ldl_solve, linalg_cholesky as cholesky, cholesky_ex,
    lu_factor, lu_factor_ex, lu, lu_solve,
    solve, solve_ex, solve_triangular, inv, inv_ex, det, linalg_slogdet as slogdet,
    linalg_qr as qr, eigh, eigvalsh, eig, eigvals, linalg_svd as svd, svdvals, pinv, lstsq, matrix_rank,
    matrix_power, matrix_exp, householder_product, tensorinv, tensorsolve)

if TYPE_CHECKING:
    from ._tensor import Tensor


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """torch.linalg.diagonal: torch.diagonal with the last two dims as defaults."""
    return A.diagonal(offset, dim1, dim2)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """torch.linalg.vander: the Vandermonde matrix with increasing powers x^0 ... x^(N-1)
    along a new last dim (N defaults to x's last size), batched over x's leading dims; a 0-d
    x counts as one element."""
    from ._ops.joining import cat
    if x.ndim == 0:
        x = x.reshape(1)
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    # cumulative products (not pow) keep integer inputs exact and the gradient defined at 0
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return cat([x.unsqueeze(-1) ** 0, powers], -1)

__all__ = ["matmul", "vecdot", "multi_dot", "vector_norm", "matrix_norm", "norm",
           "LinAlgError", "cholesky", "cholesky_ex", "lu_factor", "lu_factor_ex", "lu",
           "lu_solve", "solve", "solve_ex", "solve_triangular", "inv", "inv_ex", "det", "slogdet",
           "qr", "eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals", "pinv", "lstsq", "matrix_rank",
           "matrix_power", "matrix_exp", "cond", "cross", "householder_product", "tensorinv",
           "tensorsolve", "diagonal", "vander", "ldl_factor", "ldl_factor_ex", "ldl_solve"]
