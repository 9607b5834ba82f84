"""NAdam: Adam with Nesterov momentum (PyTorch's torch.optim.NAdam)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .optimizer import (Optimizer, _apply_weight_decay, _check_adam_options, _check_impl_flags,
                        _check_nonneg, _to_scalar, _update_moments_, _view_as_real)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from .._tensor import Tensor

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    r"""NAdam.  With g the gradient (negated if maximize) and t the step number:

        p <- p * (1 - lr * wd)  (decoupled_weight_decay; else g <- g + wd * p)
        mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay));  P_t = mu_1 * ... * mu_t
        m <- lerp(m, g, 1 - beta1);  v <- beta2 * v + (1 - beta2) * g * g
        d = sqrt(v / (1 - beta2^t)) + eps
        p <- p - lr * (1 - mu_t) / (1 - P_t) * g / d - lr * mu_{t+1} / (1 - P_t mu_{t+1}) * m / d
    """

    _late_option_defaults = dict(maximize=False, foreach=None, capturable=False,
                                 differentiable=False, decoupled_weight_decay=False)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_options(lr, eps, betas, weight_decay)
        _check_nonneg(momentum_decay, "momentum_decay value")
        _check_impl_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        steps, mu_products, exp_avgs, exp_avg_sqs = self._collect_state(
            params, ("exp_avg", "exp_avg_sq"), scalars=(("mu_product", 1.0),))
        beta1, beta2 = group["betas"]
        nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, steps, beta1=beta1,
              beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
              momentum_decay=group["momentum_decay"], eps=group["eps"],
              decoupled_weight_decay=group["decoupled_weight_decay"],
              maximize=group["maximize"], differentiable=group["differentiable"])


def nadam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
          exp_avg_sqs: list[Tensor], mu_products: list[Tensor], state_steps: list[Tensor],
          decoupled_weight_decay: bool = False, foreach: bool | None = None,
          capturable: bool = False, differentiable: bool = False, has_complex: bool = False,
          maximize: bool = False, *, beta1: float, beta2: float, lr: float | Tensor,
          weight_decay: float, momentum_decay: float, eps: float) -> None:
    """The NAdam update on lists of tensors (functional form of NAdam.step).  mu_products
    are float32 0-d tensors, updated in place (their float32 rounding is part of the rule)."""
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, mu_product, step_t = (exp_avgs[i], exp_avg_sqs[i], mu_products[i],
                                                   state_steps[i])
        step_t += 1
        step = step_t.item()
        grad = _apply_weight_decay(param, grad, lr, weight_decay, decoupled_weight_decay)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_product *= mu
        param, grad, exp_avg, exp_avg_sq = _view_as_real(param, grad, exp_avg, exp_avg_sq)
        _update_moments_(exp_avg, exp_avg_sq, grad, beta1, beta2)
        if differentiable:
            # PyTorch's recorded step: sqrt keeps its result for the backward pass, and the
            # factors are 0-d tensors from the float32 momentum product
            denom = exp_avg_sq.div(1 - beta2 ** step).sqrt().add(eps)
            mu_product_next = mu_product * mu_next
            param.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
            param.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_product_next)), denom)
            continue
        product = mu_product.item()
        denom = exp_avg_sq.div(1 - beta2 ** step).sqrt_().add_(eps)
        param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - product))
        param.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - product * mu_next))
