"""torchlite.linalg: matrix products and norms, as torch.linalg."""
from ._ops.linalg import matmul, vecdot, multi_dot
from ._ops.reduction import vector_norm, matrix_norm, linalg_norm as norm

__all__ = ["matmul", "vecdot", "multi_dot", "vector_norm", "matrix_norm", "norm"]
