"""AdamW: Adam with decoupled weight decay (PyTorch's torch.optim.AdamW)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .adam import Adam, adam

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from .._tensor import Tensor

__all__ = ["AdamW", "adamw"]


class AdamW(Adam):
    r"""Adam whose weight decay shrinks the parameters directly (p <- p * (1 - lr * wd))
    instead of entering the moment estimates; weight_decay defaults to 1e-2."""

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-3,
                 betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def adamw(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
          exp_avg_sqs: list[Tensor], max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor],
          foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
          fused: bool | None = None, *, amsgrad: bool, beta1: float | Tensor, beta2: float | Tensor,
          lr: float | Tensor, weight_decay: float, eps: float, maximize: bool) -> None:
    """The AdamW update on lists of tensors (functional form of AdamW.step)."""
    adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad=amsgrad,
         beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps,
         maximize=maximize, decoupled_weight_decay=True)
