"""Averaged stochastic gradient descent (PyTorch's torch.optim.ASGD)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._ops.creation import ones_like, tensor as _scalar_tensor, zeros_like
from .._tensor import Tensor
from .optimizer import (Optimizer, _check_impl_flags, _check_lr, _check_nonneg,
                        _new_step_count, _to_scalar, _view_as_real)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    r"""Averaged SGD (Polyak and Juditsky).  With g the gradient (negated if maximize, plus
    weight_decay * p) and t the step number, eta and mu from the previous step (eta starts
    at lr, mu at 1):

        p <- p * (1 - lambd * eta) - eta * g
        ax <- p if mu == 1, else ax + mu * (p - ax)       (the running average of p)
        eta <- lr / (1 + lambd * lr * t)^alpha;  mu <- 1 / max(1, t - t0)

    eta and mu are float32 0-d tensors, as in PyTorch (their float32 rounding is part of the
    rule).  The averaged parameters are state["ax"]; the parameters themselves follow SGD.
    """

    _late_option_defaults = dict(foreach=None, maximize=False, differentiable=False,
                                 capturable=False)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_lr(lr)
        _check_nonneg(weight_decay, "weight_decay value")
        _check_impl_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _fill_group_defaults(self):
        super()._fill_group_defaults()
        # states saved when eta and mu were Python numbers
        for state in self.state.values():
            for key in ("eta", "mu"):
                if isinstance(state, dict) and key in state and not isinstance(state[key], Tensor):
                    state[key] = _scalar_tensor(float(state[key]))

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        state_of = self.state
        axs, mus, etas, steps = [], [], [], []
        for p in params:
            state = state_of[p]
            if len(state) == 0:
                state["step"] = _new_step_count()
                state["eta"] = _scalar_tensor(float(_to_scalar(group["lr"])))
                state["mu"] = ones_like(state["step"])
                state["ax"] = zeros_like(p)
            axs.append(state["ax"])
            mus.append(state["mu"])
            etas.append(state["eta"])
            steps.append(state["step"])
        asgd(params, grads, axs, mus, etas, steps, lambd=group["lambd"], lr=group["lr"],
             t0=group["t0"], alpha=group["alpha"], weight_decay=group["weight_decay"],
             maximize=group["maximize"], differentiable=group["differentiable"])


def asgd(params: list[Tensor], grads: list[Tensor], axs: list[Tensor], mus: list[Tensor],
         etas: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
         maximize: bool = False, differentiable: bool = False, capturable: bool = False,
         has_complex: bool = False, *, lambd: float, lr: float | Tensor, t0: float, alpha: float,
         weight_decay: float) -> None:
    """The ASGD update on lists of tensors (functional form of ASGD.step); mus, etas and
    state_steps are 0-d float32 tensors, updated in place."""
    lr = _to_scalar(lr)
    for param, grad, ax, mu, eta, step_t in zip(params, grads, axs, mus, etas, state_steps):
        if maximize:
            grad = -grad
        step_t += 1
        param, grad, ax = _view_as_real(param, grad, ax)
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        eta_value = eta.item()
        param.mul_(1 - lambd * eta_value)
        param.add_(grad, alpha=-eta_value)
        if mu.item() != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:
            ax.copy_(param)
        step = step_t.item()
        eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
        mu.fill_(1 / max(1, step - t0))
