"""CTCLoss (PyTorch's torch.nn): the Module over nn.functional.ctc_loss."""
from .. import functional as F
from .loss import _Loss

__all__ = ["CTCLoss"]


class CTCLoss(_Loss):
    """The Connectionist Temporal Classification loss of log-probabilities (T, N, C) against
    unaligned targets; blank is the blank class, zero_infinity zeroes infinite losses (inputs
    too short for their targets) and their gradients."""

    __constants__ = ["blank", "reduction"]

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)
