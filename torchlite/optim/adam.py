"""Adam (PyTorch's torch.optim.Adam), with AMSGrad and decoupled weight decay options."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._ops.elementwise import maximum
from .._ops import optim as _fused
from .._tensor import Tensor
from .optimizer import (Optimizer, _apply_weight_decay, _check_adam_options, _check_impl_flags,
                        _refuse_tensor_for_foreach, _squeeze_hyperparameter,
                        _to_scalar, _update_moments_, _view_as_real)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["Adam", "adam"]


class Adam(Optimizer):
    r"""Adam.  With g the gradient (negated if maximize) and t the step number:

        p <- p * (1 - lr * weight_decay)   (decoupled_weight_decay; else g <- g + wd * p)
        m <- lerp(m, g, 1 - beta1);  v <- beta2 * v + (1 - beta2) * g * g
        v_max <- max(v_max, v)  (amsgrad: v_max replaces v below)
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    """

    _late_option_defaults = dict(amsgrad=False, maximize=False, foreach=None, capturable=False,
                                 differentiable=False, decoupled_weight_decay=False, fused=None)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-3,
                 betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        _refuse_tensor_for_foreach(lr, "lr", foreach, capturable)
        _check_adam_options(lr, eps, betas, weight_decay)
        if not (all(isinstance(b, float) for b in betas[:2])
                or all(isinstance(b, Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            _refuse_tensor_for_foreach(betas[i], f"betas[{i}]", foreach, capturable)
            if isinstance(betas[i], Tensor) and betas[i].numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        defaults = dict(lr=lr, betas=tuple(_squeeze_hyperparameter(b) for b in betas), eps=eps,
                        weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_impl_flags(differentiable, fused, foreach)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        amsgrad = group["amsgrad"]
        buffers = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())
        steps, exp_avgs, exp_avg_sqs, *rest = self._collect_state(params, buffers)
        max_exp_avg_sqs = rest[0] if amsgrad else []
        beta1, beta2 = group["betas"]
        adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, amsgrad=amsgrad,
             beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
             eps=group["eps"], maximize=group["maximize"],
             differentiable=group["differentiable"],
             decoupled_weight_decay=group["decoupled_weight_decay"])


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
         exp_avg_sqs: list[Tensor], max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor],
         foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
         fused: bool | None = None, *, amsgrad: bool, beta1: float | Tensor, beta2: float | Tensor,
         lr: float | Tensor, weight_decay: float, eps: float, maximize: bool,
         decoupled_weight_decay: bool = False) -> None:
    """The Adam update on lists of tensors (functional form of Adam.step); state_steps are
    the per-parameter step counters (0-d tensors, incremented here).  A recorded
    (differentiable) step keeps a Tensor lr a tensor, so it differentiates with respect to
    it too."""
    lr_given = lr
    lr, beta1, beta2 = _to_scalar(lr), _to_scalar(beta1), _to_scalar(beta2)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        max_exp_avg_sq = max_exp_avg_sqs[i] if amsgrad else None
        step_t += 1
        step = step_t.item()
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if not param.is_complex() and _fused.adam_step(
                param, grads[i], exp_avg, exp_avg_sq, max_exp_avg_sq, beta1=beta1, beta2=beta2,
                lr=lr, weight_decay=weight_decay, eps=eps, step_size=step_size,
                bias_correction2_sqrt=bias_correction2_sqrt, amsgrad=amsgrad,
                maximize=maximize, decoupled=decoupled_weight_decay):
            continue
        grad = _apply_weight_decay(param, grad, lr_given if differentiable else lr,
                                   weight_decay, decoupled_weight_decay)
        param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq = _view_as_real(
            param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq)
        _update_moments_(exp_avg, exp_avg_sq, grad, beta1, beta2)
        if differentiable:
            _differentiable_adam_update(param, exp_avg, exp_avg_sq, max_exp_avg_sq, step_t,
                                        lr=lr_given, beta1=beta1, beta2=beta2, eps=eps)
            continue
        if amsgrad:
            maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
            second_moment = max_exp_avg_sq
        else:
            second_moment = exp_avg_sq
        denom = second_moment.sqrt().div_(bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)


def _differentiable_adam_update(param, exp_avg, exp_avg_sq, max_exp_avg_sq, step_t, *, lr,
                                beta1, beta2, eps):
    """The parameter update of a recorded (differentiable) step, with PyTorch's operations:
    the bias corrections from the step tensor, and no in-place operation on a value that
    autograd keeps for the backward pass."""
    bias_correction1 = 1 - beta1 ** step_t
    bias_correction2_sqrt = (1 - beta2 ** step_t).sqrt()
    step_size_neg = (lr / bias_correction1).neg()
    if max_exp_avg_sq is not None:
        max_exp_avg_sq.copy_(maximum(max_exp_avg_sq.clone(), exp_avg_sq))
        exp_avg_sq = max_exp_avg_sq
    denom = (exp_avg_sq.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(eps / step_size_neg)
    param.addcdiv_(exp_avg.clone(), denom)
