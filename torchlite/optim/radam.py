"""RAdam: Adam with a rectified adaptive learning rate (PyTorch's torch.optim.RAdam)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .optimizer import (Optimizer, _apply_weight_decay, _check_adam_options, _check_impl_flags,
                        _to_scalar, _update_moments_, _view_as_real)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from .._tensor import Tensor

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    r"""RAdam.  With g the gradient (negated if maximize) and t the step number:

        p <- p * (1 - lr * wd)  (decoupled_weight_decay; else g <- g + wd * p)
        m <- lerp(m, g, 1 - beta1);  v <- beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        m_hat = m / (1 - beta1^t)
        if rho_t > 5:
            l = sqrt(1 - beta2^t) / (sqrt(v) + eps)
            r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
            p <- p - lr * m_hat * l * r
        else:
            p <- p - lr * m_hat
    """

    _late_option_defaults = dict(foreach=None, maximize=False, differentiable=False,
                                 decoupled_weight_decay=False, capturable=False)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False,
                 *, foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_options(lr, eps, betas, weight_decay)
        _check_impl_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        steps, exp_avgs, exp_avg_sqs = self._collect_state(params, ("exp_avg", "exp_avg_sq"))
        beta1, beta2 = group["betas"]
        radam(params, grads, exp_avgs, exp_avg_sqs, steps, beta1=beta1, beta2=beta2,
              lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
              decoupled_weight_decay=group["decoupled_weight_decay"],
              maximize=group["maximize"], differentiable=group["differentiable"])


def radam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
          exp_avg_sqs: list[Tensor], state_steps: list[Tensor],
          decoupled_weight_decay: bool = False, foreach: bool | None = None,
          capturable: bool = False, differentiable: bool = False, has_complex: bool = False,
          maximize: bool = False, *, beta1: float, beta2: float, lr: float | Tensor,
          weight_decay: float, eps: float) -> None:
    """The RAdam update on lists of tensors (functional form of RAdam.step)."""
    lr = _to_scalar(lr)
    rho_inf = 2 / (1 - beta2) - 1
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t += 1
        step = step_t.item()
        grad = _apply_weight_decay(param, grad, lr, weight_decay, decoupled_weight_decay)
        param, grad, exp_avg, exp_avg_sq = _view_as_real(param, grad, exp_avg, exp_avg_sq)
        _update_moments_(exp_avg, exp_avg_sq, grad, beta1, beta2)
        bias_correction2 = 1 - beta2 ** step
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        rect = None
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        if differentiable:
            # PyTorch's recorded step: no in-place operation on sqrt's result
            update = exp_avg / (1 - beta1 ** step) * lr
            if rect is not None:
                update = update * ((bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add(eps)) * rect
            param.add_(update, alpha=-1.0)
            continue
        update = exp_avg.div(1 - beta1 ** step).mul_(lr)
        if rect is not None:
            # adaptive lr sqrt(1 - beta2^t) / (sqrt(v) + eps) as a reciprocal times a number,
            # the order of operations PyTorch's update rounds with
            adaptive_lr = exp_avg_sq.sqrt().add_(eps).reciprocal_().mul_(bias_correction2 ** 0.5)
            update.mul_(adaptive_lr).mul_(rect)
        param.sub_(update)
