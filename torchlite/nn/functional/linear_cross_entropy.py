"""linear_cross_entropy: cross_entropy(linear(input, W, b), target) (PyTorch 2.13's
torch.nn.functional.linear_cross_entropy), with its chunked form.

The reference form computes the (N, C, d1, ...) logits and hands them to cross_entropy.  The
chunked form (options given: a LinearCrossEntropyOptions) is for large class counts (a
language model's vocabulary head): it takes the batch batch_chunk_size rows at a time and
computes each chunk's per-row losses under activation checkpointing, so at most one chunk's
logits exist at a time, in forward and again in backward (which recomputes them).  It covers
2-d input with class-index targets and a (C,) bias; other calls take the reference form, as
PyTorch's do (PyTorch warns there; so does torchlite)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Optional

from ..._ops._kit import tensor_args
from .linear import linear
from .loss import cross_entropy

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["linear_cross_entropy", "LinearCrossEntropyOptions"]

# rows * classes of logits one chunk may hold when batch_chunk_size is not given (4M floats)
_AUTO_CHUNK_ELEMENTS = 1 << 22


@dataclass
class LinearCrossEntropyOptions:
    """The chunked form's settings (torch.nn.LinearCrossEntropyOptions).  batch_chunk_size:
    rows per chunk (None: as many as keep a chunk's logits near 4M elements).  The other
    fields are PyTorch's: allow_retain_graph and chunking_method are accepted; acc_policy and
    acc_dtype choose PyTorch's accumulation dtypes for its fused kernels, and torchlite's
    chunks accumulate in the input's dtype whatever they say."""
    allow_retain_graph: bool = False
    batch_chunk_size: Optional[int] = None
    chunking_method: Optional[str] = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: Optional[object] = None


def _logits(input, linear_weight, linear_bias):
    """linear over a weight (C, d1, ..., dK, in_features): logits (..., C, d1, ..., dK)."""
    out_shape = tuple(linear_weight.shape[:-1])
    w = linear_weight.reshape(-1, linear_weight.shape[-1]) if len(out_shape) > 1 else linear_weight
    b = linear_bias.reshape(-1) if linear_bias is not None and linear_bias.ndim > 1 else linear_bias
    z = linear(input, w, b)
    return z.reshape(tuple(input.shape[:-1]) + out_shape) if len(out_shape) > 1 else z


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *, linear_bias: Tensor | None = None,
                         weight: Tensor | None = None, reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: LinearCrossEntropyOptions | None = None) -> Tensor:
    """cross_entropy(linear(input, linear_weight, linear_bias), target, weight, ...), with
    ignore_index None meaning -100.  linear_weight is (C, in_features), or (C, d1, ..., dK,
    in_features) for a K-dimensional loss.  options (LinearCrossEntropyOptions): compute it
    chunk by chunk of the batch, so the whole (N, C) logits never exist at once."""
    tensor_args("linear_cross_entropy", input=input, linear_weight=linear_weight, target=target)
    _check(input, linear_weight, target, linear_bias, ignore_index)
    if ignore_index is None:
        ignore_index = -100
    if options is not None:
        reason = _why_not_chunked(input, linear_weight, target, linear_bias)
        if reason is None:
            return _chunked(input, linear_weight, target, linear_bias, weight, reduction,
                            ignore_index, label_smoothing, options)
        warnings.warn(f"linear_cross_entropy: {reason}; using the reference implementation",
                      UserWarning, stacklevel=2)
    return cross_entropy(_logits(input, linear_weight, linear_bias), target, weight=weight,
                         ignore_index=ignore_index, reduction=reduction,
                         label_smoothing=label_smoothing)


def _shape(t):
    return "(" + ", ".join(str(d) for d in t.shape) + ("," if t.ndim == 1 else "") + ")"


def _check(input, W, target, b, ignore_index):
    """PyTorch's argument checks, with its messages."""
    op = "linear_cross_entropy"
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{op}: expected input with dimensionality 1 or 2, got {input.ndim}")
    if W.ndim < 2:
        raise RuntimeError(f"{op}: expected linear_weight with dimensionality at least 2, got "
                           f"{W.ndim}")
    if input.shape[-1] != W.shape[-1]:
        raise RuntimeError(f"{op}: expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and {W.shape[-1]}, "
                           f"respectively")
    if W.ndim > 2 and input.ndim == 1:
        raise RuntimeError(f"{op}: K-dimensional loss defined by linear_weight shape "
                           f"{_shape(W)} requires batched input, (N, {W.shape[-1]}), got "
                           f"unbatched input with shape {_shape(input)}")
    if b is not None and tuple(b.shape) != tuple(W.shape[:-1]):
        raise RuntimeError(f"{op}: expected linear_bias shape {_shape(W[..., 0])}, got "
                           f"{_shape(b)}")
    if ignore_index is not None and target.is_floating_point():
        raise RuntimeError(f"{op}: ignore_index cannot be specified when target contains "
                           f"probabilities")


def _why_not_chunked(input, linear_weight, target, linear_bias):
    if input.ndim != 2:
        return "the chunked path takes 2-d input"
    if linear_weight.ndim != 2:
        return "the chunked path takes a (C, in_features) weight"
    if target.ndim != 1 or target.is_floating_point():
        return "the chunked path takes class-index targets"
    if linear_bias is not None and linear_bias.ndim != 1:
        return "the chunked path supports only a (C,)-shaped bias"
    return None


def _chunked(input, W, target, b, weight, reduction, ignore_index, label_smoothing, options):
    from ...utils.checkpoint import checkpoint
    from ..._ops.joining import cat
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    n, c = input.shape[0], W.shape[0]
    if target.shape[0] != n:
        raise ValueError(f"Expected input batch_size ({n}) to match target batch_size "
                         f"({target.shape[0]}).")
    size = getattr(options, "batch_chunk_size", None)
    if size is None:
        size = max(1, _AUTO_CHUNK_ELEMENTS // max(c, 1))
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"batch_chunk_size must be a positive int, got {size!r}")

    def rows(x, t, W, b):
        # per-row losses of one chunk (ignored rows give 0, as cross_entropy's 'none' does)
        return cross_entropy(linear(x, W, b), t, weight=weight, ignore_index=ignore_index,
                             reduction="none", label_smoothing=label_smoothing)

    parts = [checkpoint(rows, input[i:i + size], target[i:i + size], W, b, use_reentrant=False)
             for i in range(0, n, size)] if n else [rows(input, target, W, b)]
    losses = cat(parts) if len(parts) > 1 else parts[0]
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    # mean: over the weights of the rows that count, as cross_entropy's (NaN when none do)
    keep = target != ignore_index
    if weight is None:
        total = keep.sum().to(losses.dtype)
    else:
        safe = target.masked_fill(~keep, 0)
        total = (weight[safe] * keep.to(weight.dtype)).sum().to(losses.dtype)
    return losses.sum() / total
