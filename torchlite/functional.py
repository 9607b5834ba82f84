"""torchlite.functional: the module torch.functional, which scripts import functions from
(`from torch.functional import F`-style code, `torch.functional.split`, ...).  Everything
here is the top-level function of the same name, except `lu` (the old name of
linalg.lu_factor, as in PyTorch)."""
from . import (atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes,
               broadcast_tensors, cartesian_prod, cdist, chain_matmul, einsum, meshgrid, norm,
               split, stft, istft, tensordot, unique, unique_consecutive, unravel_index)
from . import linalg as _linalg

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
           "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "lu",
           "meshgrid", "norm", "split", "stft", "istft", "tensordot", "unique",
           "unique_consecutive", "unravel_index"]


def lu(A, pivot=True, get_infos=False, out=None):
    """(LU, pivots), or (LU, pivots, infos) with get_infos: the LU factorization of A as
    torch.functional.lu (= linalg.lu_factor_ex); singular matrices raise unless get_infos."""
    LU, pivots, infos = _linalg.lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    result = (LU, pivots, infos) if get_infos else (LU, pivots)
    if out is not None:
        for o, r in zip(out, result):
            o.resize_(r.shape).copy_(r)
        return tuple(out)
    return result
