"""torchlite.functional: the module torch.functional, which scripts import functions from
(`from torch.functional import F`-style code, `torch.functional.split`, ...).  Everything
here is the top-level function of the same name, except `lu` (the old name of
linalg.lu_factor, as in PyTorch)."""
from . import (atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes,
               broadcast_tensors, cartesian_prod, cdist, chain_matmul, einsum, meshgrid, norm,
               split, stft, istft, tensordot, unique, unique_consecutive, unravel_index)
from ._ops.linalg_decomp import lu_legacy as lu

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
           "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "lu",
           "meshgrid", "norm", "split", "stft", "istft", "tensordot", "unique",
           "unique_consecutive", "unravel_index"]
