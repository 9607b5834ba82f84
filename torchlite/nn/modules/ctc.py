"""CTCLoss (PyTorch's torch.nn): the Module over nn.functional.ctc_loss."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .loss import _Loss

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._tensor import Tensor

__all__ = ["CTCLoss"]


class CTCLoss(_Loss):
    """The Connectionist Temporal Classification loss of log-probabilities (T, N, C) against
    unaligned targets; blank is the blank class, zero_infinity zeroes infinite losses (inputs
    too short for their targets) and their gradients."""

    __constants__ = ["blank", "reduction"]

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
                target_lengths: Tensor | Sequence[int]) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)
