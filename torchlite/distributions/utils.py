"""Helpers of torchlite.distributions (PyTorch's torch.distributions.utils)."""
from __future__ import annotations

import functools
import numbers
from typing import TYPE_CHECKING

import torchlite as tl

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .._tensor import Tensor

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix", "euler_constant", "BinaryLogitsProbs"]

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant


def broadcast_all(*values: Tensor | float) -> tuple[Tensor, ...]:
    """The values as tensors of one broadcast shape (numbers take the default dtype, or the
    dtype and device of the first tensor among them)."""
    if not all(isinstance(v, (tl.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or "
                         "torchlite.Tensor.")
    tensors = [v for v in values if isinstance(v, tl.Tensor)]
    dtype = tensors[0].dtype if tensors else tl.get_default_dtype()
    device = tensors[0].device if tensors else None
    out = [v if isinstance(v, tl.Tensor) else tl.tensor(float(v), dtype=dtype, device=device)
           for v in values]
    return tl.broadcast_tensors(*out)


def _sum_rightmost(value, dim):
    """value summed over its dim rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """probs clamped into [eps, 1 - eps], so their logs and log1p(-p) stay finite."""
    eps = tl.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    p = clamp_probs(probs)
    return p.log() - (-p).log1p() if is_binary else p.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    return logits.sigmoid() if is_binary else logits.softmax(-1)


class lazy_property:
    """A property computed on first access and then stored on the instance, so that a
    distribution made from probs computes logits only when asked (and validation, expand and
    repr see only what was given: the name is absent from vars() until then)."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        with tl.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class BinaryLogitsProbs:
    """The logits and probs of a distribution given by either, for one binary event each
    (Bernoulli, Binomial, Geometric, ...): the one not given is computed on first use.
    _set_probs_or_logits stores the one given (as self._param too), _expand_param expands a
    copy."""

    def _set_probs_or_logits(self, probs, logits, total_count=None):
        """Store probs or logits (exactly one given; broadcast with total_count, which then
        takes their dtype); returns the parameter's shape."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        if total_count is None:
            (param,) = broadcast_all(value)
        else:
            count, param = broadcast_all(total_count, value)
            self.total_count = count.type_as(param)
        setattr(self, name, param)
        self._param = param
        return param.shape

    def _expand_param(self, cls, batch_shape, _instance, *names):
        """expand(): the tensors `names` (and probs/logits) expanded into a new instance."""
        new = self._expand_tensors(cls, batch_shape, _instance, *names, "probs", "logits")
        new._param = vars(new).get("logits", vars(new).get("probs"))
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)


def _tril_mask(n, diag, device):
    arange = tl.arange(n, device=device)
    return arange < arange.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of mat's lower triangle (below diagonal diag), row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of tril_matrix_to_vec: a square matrix with vec in its lower triangle."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1]
                            + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(n) - n) > 1e-6:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         f"expressed as the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat
