"""Adamax: Adam with the infinity norm (PyTorch's torch.optim.Adamax)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._ops.joining import cat
from .._ops.elementwise import maximum
from .._ops.reduction import amax
from .optimizer import (Optimizer, _check_adam_options, _check_impl_flags, _to_scalar,
                        _view_as_real)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from .._tensor import Tensor

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    r"""Adamax.  With g the gradient (negated if maximize, plus weight_decay * p) and t the
    step number:

        m <- lerp(m, g, 1 - beta1)
        u <- max(beta2 * u, |g| + eps)
        p <- p - lr / (1 - beta1^t) * m / u
    """

    _late_option_defaults = dict(foreach=None, maximize=False, differentiable=False,
                                 capturable=False)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_adam_options(lr, eps, betas, weight_decay)
        _check_impl_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        steps, exp_avgs, exp_infs = self._collect_state(params, ("exp_avg", "exp_inf"))
        beta1, beta2 = group["betas"]
        adamax(params, grads, exp_avgs, exp_infs, steps, eps=group["eps"], beta1=beta1,
               beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
               maximize=group["maximize"], differentiable=group["differentiable"])


def adamax(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
           exp_infs: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
           maximize: bool = False, differentiable: bool = False, capturable: bool = False,
           has_complex: bool = False, *, eps: float, beta1: float, beta2: float,
           lr: float | Tensor, weight_decay: float) -> None:
    """The Adamax update on lists of tensors (functional form of Adamax.step)."""
    lr = _to_scalar(lr)
    one_minus_beta1 = 1 - beta1
    for param, grad, exp_avg, exp_inf, step_t in zip(params, grads, exp_avgs, exp_infs,
                                                     state_steps):
        step_t += 1
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        param, grad, exp_avg, exp_inf = _view_as_real(param, grad, exp_avg, exp_inf)
        exp_avg.lerp_(grad, one_minus_beta1)
        if differentiable:
            # maximum(out=) is not recorded; amax over the pair is (ties share the gradient)
            pair = cat([exp_inf.mul_(beta2).unsqueeze(0), grad.abs().add_(eps).unsqueeze_(0)])
            exp_inf.copy_(amax(pair, 0))
        else:
            maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
        clr = lr / (1 - beta1 ** step_t.item())
        param.addcdiv_(exp_avg, exp_inf, value=-clr)
