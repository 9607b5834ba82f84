"""Adagrad (PyTorch's torch.optim.Adagrad)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._ops.creation import full_like
from .optimizer import (Optimizer, _check_impl_flags, _check_lr, _check_nonneg,
                        _new_step_count, _to_scalar, _view_as_real)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from .._tensor import Tensor

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad.  With g the gradient (negated if maximize, plus weight_decay * p) and t the
    step number:

        clr <- lr / (1 + (t - 1) * lr_decay)
        s <- s + g * g          (s starts at initial_accumulator_value)
        p <- p - clr * g / (sqrt(s) + eps)
    """

    _late_option_defaults = dict(foreach=None, maximize=False, differentiable=False, fused=None)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check_lr(lr)
        _check_nonneg(lr_decay, "lr_decay value")
        _check_nonneg(weight_decay, "weight_decay value")
        _check_nonneg(initial_accumulator_value, "initial_accumulator_value value")
        _check_nonneg(eps, "epsilon value")
        _check_impl_flags(differentiable, fused, foreach)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # unlike the other optimizers, Adagrad creates its state up front (as PyTorch does)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_param_state(p, initial_accumulator_value)

    def _init_param_state(self, p: Tensor, initial_accumulator_value: float) -> None:
        state = self.state[p]
        state["step"] = _new_step_count()
        # a complex parameter is accumulated as its (real, imag) pairs: both parts start there
        value = initial_accumulator_value
        state["sum"] = full_like(p, complex(value, value) if p.is_complex() else value)

    def share_memory(self) -> None:
        """A no-op kept for PyTorch compatibility (state tensors live in this process)."""

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        state_of = self.state
        sums, steps = [], []
        for p in params:
            state = state_of[p]
            if len(state) == 0:     # a parameter added later with add_param_group
                self._init_param_state(p, self.defaults["initial_accumulator_value"])
            sums.append(state["sum"])
            steps.append(state["step"])
        adagrad(params, grads, sums, steps, lr=group["lr"], weight_decay=group["weight_decay"],
                lr_decay=group["lr_decay"], eps=group["eps"], maximize=group["maximize"],
                differentiable=group["differentiable"])


def adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor],
            state_steps: list[Tensor], fused: bool | None = None, *, has_sparse_grad: bool = False,
            foreach: bool | None = None, differentiable: bool = False, has_complex: bool = False,
            lr: float | Tensor, weight_decay: float, lr_decay: float, eps: float,
            maximize: bool) -> None:
    """The Adagrad update on lists of tensors (functional form of Adagrad.step)."""
    lr = _to_scalar(lr)
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step_t += 1
        step = step_t.item()
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        param, grad, state_sum = _view_as_real(param, grad, state_sum)
        state_sum.addcmul_(grad, grad, value=1)
        # a recorded step keeps sqrt's result for the backward pass: no add_ on it
        std = state_sum.sqrt() + eps if differentiable else state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)
