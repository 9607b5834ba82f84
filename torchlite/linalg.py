"""torchlite.linalg: matrix products and norms, as torch.linalg."""
from ._ops.linalg import matmul, vecdot, multi_dot  # noqa: F401

__all__ = ["matmul", "vecdot", "multi_dot"]
try:
    from ._ops.reduction import vector_norm, matrix_norm, linalg_norm as norm  # noqa: F401
    __all__ += ["vector_norm", "matrix_norm", "norm"]
except ImportError:      # reductions not built yet
    pass
