"""Adadelta (PyTorch's torch.optim.Adadelta)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .optimizer import (Optimizer, _check_impl_flags, _check_lr, _check_nonneg, _to_scalar,
                        _view_as_real)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from .._tensor import Tensor

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    r"""Adadelta.  With g the gradient (negated if maximize, plus weight_decay * p):

        v <- rho * v + (1 - rho) * g * g
        dx <- sqrt(u + eps) / sqrt(v + eps) * g
        u <- rho * u + (1 - rho) * dx * dx
        p <- p - lr * dx
    """

    _late_option_defaults = dict(foreach=None, maximize=False, differentiable=False,
                                 capturable=False)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonneg(eps, "epsilon value")
        _check_nonneg(weight_decay, "weight_decay value")
        _check_impl_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        steps, square_avgs, acc_deltas = self._collect_state(params, ("square_avg", "acc_delta"))
        adadelta(params, grads, square_avgs, acc_deltas, steps, lr=group["lr"], rho=group["rho"],
                 eps=group["eps"], weight_decay=group["weight_decay"],
                 maximize=group["maximize"], differentiable=group["differentiable"])


def adadelta(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
             acc_deltas: list[Tensor], state_steps: list[Tensor], capturable: bool = False,
             foreach: bool | None = None, differentiable: bool = False, has_complex: bool = False,
             *, lr: float | Tensor, rho: float, eps: float, weight_decay: float,
             maximize: bool) -> None:
    """The Adadelta update on lists of tensors (functional form of Adadelta.step)."""
    lr = _to_scalar(lr)
    one_minus_rho = 1 - rho
    for param, grad, square_avg, acc_delta, step_t in zip(params, grads, square_avgs,
                                                          acc_deltas, state_steps):
        step_t += 1
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        param, grad, square_avg, acc_delta = _view_as_real(param, grad, square_avg, acc_delta)
        square_avg.mul_(rho).addcmul_(grad, grad, value=one_minus_rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        if differentiable:      # sqrt_ keeps its result for the backward pass
            delta = delta.clone()
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=one_minus_rho)
        param.add_(delta, alpha=-lr)
