"""RMSprop (PyTorch's torch.optim.RMSprop), optionally centered and with momentum."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .optimizer import (Optimizer, _check_impl_flags, _check_lr, _check_nonneg,
                        _to_scalar, _view_as_real)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from .._tensor import Tensor

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    r"""RMSprop.  With g the gradient (negated if maximize, plus weight_decay * p):

        v <- alpha * v + (1 - alpha) * g * g
        s <- sqrt(v - gbar^2) with gbar <- lerp(gbar, g, 1 - alpha) (centered), else sqrt(v)
        b <- momentum * b + g / (s + eps);  p <- p - lr * b       (momentum > 0)
        p <- p - lr * g / (s + eps)                               (otherwise)
    """

    _late_option_defaults = dict(momentum=0, centered=False, foreach=None, maximize=False,
                                 differentiable=False, capturable=False)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_nonneg(eps, "epsilon value")
        _check_nonneg(momentum, "momentum value")
        _check_nonneg(weight_decay, "weight_decay value")
        _check_nonneg(alpha, "alpha value")
        _check_impl_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        momentum, centered = group["momentum"], group["centered"]
        buffers = (("square_avg",) + (("momentum_buffer",) if momentum > 0 else ())
                   + (("grad_avg",) if centered else ()))
        steps, square_avgs, *rest = self._collect_state(params, buffers)
        momentum_buffers = rest.pop(0) if momentum > 0 else []
        grad_avgs = rest.pop(0) if centered else []
        rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffers, steps, lr=group["lr"],
                alpha=group["alpha"], eps=group["eps"], weight_decay=group["weight_decay"],
                momentum=momentum, centered=centered, maximize=group["maximize"],
                differentiable=group["differentiable"])


def rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
            grad_avgs: list[Tensor], momentum_buffer_list: list[Tensor], state_steps: list[Tensor],
            foreach: bool | None = None, maximize: bool = False, differentiable: bool = False,
            capturable: bool = False, *, lr: float | Tensor, alpha: float, eps: float,
            weight_decay: float, momentum: float, centered: bool) -> None:
    """The RMSprop update on lists of tensors (functional form of RMSprop.step)."""
    lr = _to_scalar(lr)
    one_minus_alpha = 1 - alpha
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        square_avg = square_avgs[i]
        state_steps[i] += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        grad_avg = grad_avgs[i] if centered else None
        buf = momentum_buffer_list[i] if momentum > 0 else None
        param, grad, square_avg, grad_avg, buf = _view_as_real(param, grad, square_avg,
                                                               grad_avg, buf)
        square_avg.mul_(alpha).addcmul_(grad, grad, value=one_minus_alpha)
        if centered:
            grad_avg.lerp_(grad, one_minus_alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        # a recorded step keeps sqrt's result for the backward pass: no add_ on it
        avg = avg.add(eps) if differentiable else avg.add_(eps)
        if momentum > 0:
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)
