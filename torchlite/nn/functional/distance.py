"""Distances and similarities between vectors (torch.nn.functional's pairwise_distance,
cosine_similarity, pdist), composed of Tensor ops so autograd handles them."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torchlite as _tl
from ..._ops._kit import tensor_arg
from ..._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["pairwise_distance", "cosine_similarity", "pdist"]


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps over the last dim (inputs broadcast)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(pairwise_distance, locals())
    for name, t in (("x1", x1), ("x2", x2)):
        tensor_arg(t, "pairwise_distance", name)
    if x1.dim() == 0 or x2.dim() == 0:
        raise RuntimeError("pairwise_distance: inputs must have at least one dimension")
    return _tl.linalg.vector_norm(x1 - x2 + eps, p, dim=-1, keepdim=keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (|x1| |x2|) along dim, each norm clamped below at eps (inputs
    broadcast): each input is normalised first, as PyTorch does, which keeps precision."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(cosine_similarity, locals())
    for name, t in (("x1", x1), ("x2", x2)):
        tensor_arg(t, "cosine_similarity", name)
    x1, x2 = _tl.broadcast_tensors(x1, x2)
    n1 = _tl.linalg.vector_norm(x1, 2, dim=dim, keepdim=True).clamp_min(eps)
    n2 = _tl.linalg.vector_norm(x2, 2, dim=dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distance between every pair of rows i < j of a 2-D input, in row-major
    order of the pairs (the condensed form, length N(N-1)/2)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(pdist, locals())
    tensor_arg(input, "pdist", "input")
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = _tl.triu_indices(n, n, 1)
    return _tl.linalg.vector_norm(input[i] - input[j], p, dim=1)
