"""torchlite.linalg: matrix products, norms, decompositions and solvers, as torch.linalg."""
from ._ops.linalg import matmul, vecdot, multi_dot, linalg_cross as cross
from ._ops.reduction import vector_norm, matrix_norm, linalg_norm as norm
from ._ops.linalg_decomp import (
    LinAlgError, linalg_cholesky as cholesky, cholesky_ex, lu_factor, lu_factor_ex, lu, lu_solve,
    solve, solve_ex, solve_triangular, inv, inv_ex, det, linalg_slogdet as slogdet,
    linalg_qr as qr, eigh, eigvalsh, linalg_svd as svd, svdvals, pinv, lstsq, matrix_rank,
    matrix_power, matrix_exp, cond, householder_product)

__all__ = ["matmul", "vecdot", "multi_dot", "vector_norm", "matrix_norm", "norm",
           "LinAlgError", "cholesky", "cholesky_ex", "lu_factor", "lu_factor_ex", "lu",
           "lu_solve", "solve", "solve_ex", "solve_triangular", "inv", "inv_ex", "det", "slogdet",
           "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "lstsq", "matrix_rank",
           "matrix_power", "matrix_exp", "cond", "cross", "householder_product"]
