"""The fused optimizer steps as operations on Tensors: one pass updates a parameter and its
state in place, by the array layer's kernels (torchlite/_core/optim.pyx on the CPU,
cuda_kernels/optim.cu on CUDA, both computing cuda_kernels/tl_optim.cuh's per-element
math).  torchlite.optim (sgd.py, adam.py) calls them first and runs the same formulas as
Tensor ops where they return False: a dtype or layout the kernels do not take (see
optim.pyx), or a step that autograd must record (grad mode on and a tensor requiring grad)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _dispatch
from ..autograd.grad_mode import _state as _grad_state

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .._tensor import Tensor

__all__ = ["sgd_step", "sgd_steps", "adam_step"]


def _fused(kernel, param, grad, state, options):
    if _grad_state.enabled and (param.requires_grad or grad.requires_grad):
        return False
    arrays = [None if t is None else t._data for t in state]
    if not getattr(_dispatch.optim, kernel)(param._data, grad._data, *arrays, **options):
        return False
    param._bump_version()
    for t in state:
        if t is not None:
            t._bump_version()
    return True


def sgd_step(param: Tensor, grad: Tensor, momentum_buffer: Tensor | None, *, lr: float,
             weight_decay: float, momentum: float, dampening: float, nesterov: bool,
             maximize: bool, first_step: bool) -> bool:
    """One SGD step of `param` (and of `momentum_buffer`, None when momentum is 0; written,
    not read, on the first step), in place; the formulas are those of optim.SGD.  True when
    it ran, False (nothing changed) where the fused kernel does not apply."""
    return _fused("sgd_step", param, grad, (momentum_buffer,),
                  dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                       dampening=dampening, nesterov=nesterov, maximize=maximize,
                       first_step=first_step))


def sgd_steps(params: list[Tensor], grads: list[Tensor], buffers: list[Tensor | None],
              first_steps: Iterable[bool], *, lr: float, weight_decay: float, momentum: float,
              dampening: float, nesterov: bool, maximize: bool) -> bool:
    """sgd_step of every parameter at once (on CUDA one launch for up to 48 of a dtype), or
    of none: False, changing nothing, unless every one qualifies for the fused kernel."""
    if _grad_state.enabled and any(t.requires_grad for t in params + grads):
        return False
    if not _dispatch.optim.sgd_steps(
            [p._data for p in params], [g._data for g in grads],
            [None if b is None else b._data for b in buffers], list(first_steps), lr=lr,
            weight_decay=weight_decay, momentum=momentum, dampening=dampening,
            nesterov=nesterov, maximize=maximize):
        return False
    for t in params + [b for b in buffers if b is not None]:
        t._bump_version()
    return True


def adam_step(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor,
              max_exp_avg_sq: Tensor | None, *, beta1: float, beta2: float, lr: float,
              weight_decay: float, eps: float, step_size: float, bias_correction2_sqrt: float,
              amsgrad: bool, maximize: bool, decoupled: bool) -> bool:
    """One Adam/AdamW step of `param` and its moments (max_exp_avg_sq None unless amsgrad), in
    place, with step_size = lr / (1 - beta1^t) and bias_correction2_sqrt = sqrt(1 - beta2^t);
    the formulas are those of optim.Adam.  True when it ran, False (nothing changed) where
    the fused kernel does not apply."""
    return _fused("adam_step", param, grad, (exp_avg, exp_avg_sq, max_exp_avg_sq),
                  dict(beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps,
                       step_size=step_size, bias_correction2_sqrt=bias_correction2_sqrt,
                       amsgrad=amsgrad, maximize=maximize, decoupled=decoupled))
