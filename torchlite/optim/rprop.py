"""Resilient backpropagation (PyTorch's torch.optim.Rprop)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._ops.creation import full_like, ones_like, zeros_like
from .._ops.elementwise import where
from .optimizer import (Optimizer, _check_impl_flags, _check_lr, _new_step_count, _to_scalar,
                        _view_as_real)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from .._tensor import Tensor

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    r"""Rprop: every element moves by its own step size, in the direction of its gradient's
    sign; the step size grows while the gradient keeps its sign and shrinks when it flips.
    With g the gradient (negated if maximize) and g_prev the one kept from the last step:

        eta <- min(eta * etaplus, step_sizes[1])   where g * g_prev > 0
        eta <- max(eta * etaminus, step_sizes[0]); g <- 0   where g * g_prev < 0
        p <- p - eta * sign(g);  g_prev <- g

    eta (state["step_size"]) starts at lr; the gradient's magnitude never enters the update.
    """

    _late_option_defaults = dict(foreach=None, maximize=False, differentiable=False,
                                 capturable=False)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _check_impl_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        state_of = self.state
        prevs, step_sizes, steps = [], [], []
        for p in params:
            state = state_of[p]
            if len(state) == 0:
                lr = _to_scalar(group["lr"])
                state["step"] = _new_step_count()
                state["prev"] = zeros_like(p)
                state["step_size"] = full_like(p, complex(lr, lr) if p.is_complex() else lr)
            prevs.append(state["prev"])
            step_sizes.append(state["step_size"])
            steps.append(state["step"])
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        rprop(params, grads, prevs, step_sizes, steps, step_size_min=step_size_min,
              step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus,
              maximize=group["maximize"], differentiable=group["differentiable"])


def rprop(params: list[Tensor], grads: list[Tensor], prevs: list[Tensor],
          step_sizes: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
          capturable: bool = False, maximize: bool = False, differentiable: bool = False,
          has_complex: bool = False, *, step_size_min: float, step_size_max: float,
          etaminus: float, etaplus: float) -> None:
    """The Rprop update on lists of tensors (functional form of Rprop.step)."""
    for param, grad, prev, step_size, step_t in zip(params, grads, prevs, step_sizes,
                                                    state_steps):
        if maximize:
            grad = -grad
        step_t += 1
        param, grad, prev, step_size = _view_as_real(param, grad, prev, step_size)
        # a recorded step must not see prev change under it (prev.copy_ below)
        sign = grad.mul(prev.clone() if differentiable else prev).sign()
        factor = where(sign > 0, etaplus, where(sign < 0, etaminus, ones_like(sign)))
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        # where the sign flipped, this step does not move and the next one starts afresh
        flipped = sign < 0
        grad = where(flipped, 0.0, grad)
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)
