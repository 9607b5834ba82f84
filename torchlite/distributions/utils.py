"""Helpers of torchlite.distributions."""
import numbers

import torchlite as tl

__all__ = ["broadcast_all", "probs_to_logits", "logits_to_probs"]


def broadcast_all(*values):
    """The values as tensors of one broadcast shape (numbers take the default dtype, or the
    dtype of the tensors among them)."""
    if not all(isinstance(v, (tl.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or "
                         "torchlite.Tensor.")
    tensors = [v for v in values if isinstance(v, tl.Tensor)]
    dtype = tensors[0].dtype if tensors else tl.get_default_dtype()
    device = tensors[0].device if tensors else None
    out = [v if isinstance(v, tl.Tensor) else tl.tensor(float(v), dtype=dtype, device=device)
           for v in values]
    return tl.broadcast_tensors(*out)


def probs_to_logits(probs, is_binary=False):
    eps = tl.finfo(probs.dtype).eps
    p = probs.clamp(eps, 1 - eps)
    return p.log() - (1 - p).log() if is_binary else p.log()


def logits_to_probs(logits, is_binary=False):
    return logits.sigmoid() if is_binary else logits.softmax(-1)
