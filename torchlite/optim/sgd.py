"""Stochastic gradient descent, optionally with momentum (PyTorch's torch.optim.SGD)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._ops import optim as _fused
from .._tensor import Tensor
from .optimizer import Optimizer, _check_impl_flags, _check_lr, _check_nonneg, _to_scalar

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    r"""Stochastic gradient descent.  With g the gradient (negated if maximize):

        g <- g + weight_decay * p
        b <- g on the first step, else momentum * b + (1 - dampening) * g
        g <- g + momentum * b (nesterov) or b (momentum != 0)
        p <- p - lr * g
    """

    _late_option_defaults = dict(nesterov=False, maximize=False, foreach=None,
                                 differentiable=False, fused=False)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        _check_lr(lr)
        _check_nonneg(momentum, "momentum value")
        _check_nonneg(weight_decay, "weight_decay value")
        _check_impl_flags(differentiable, fused, foreach)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        momentum = group["momentum"]
        buffers = None
        if momentum != 0:
            state = self.state
            buffers = [state[p].get("momentum_buffer") for p in params]
        sgd(params, grads, buffers, weight_decay=group["weight_decay"], momentum=momentum,
            lr=group["lr"], dampening=group["dampening"], nesterov=group["nesterov"],
            maximize=group["maximize"])
        if momentum != 0:
            for p, buf in zip(params, buffers):
                state[p]["momentum_buffer"] = buf


def sgd(params: list[Tensor], d_p_list: list[Tensor],
        momentum_buffer_list: list[Tensor | None] | None, has_sparse_grad: bool = False,
        foreach: bool | None = None, fused: bool | None = None, *, weight_decay: float,
        momentum: float, lr: float | Tensor, dampening: float, nesterov: bool,
        maximize: bool) -> None:
    """The SGD update on lists of parameters and gradients (functional form of SGD.step).
    momentum_buffer_list holds each parameter's buffer or None (created here on the first
    step, written back into the list); it may be None when momentum is 0.  A Tensor lr that
    requires grad enters the update as a tensor, so a recorded (differentiable) step
    differentiates with respect to it too."""
    lr_tensor = lr if isinstance(lr, Tensor) and lr.requires_grad else None
    lr = _to_scalar(lr)
    if lr_tensor is None and _fused_sgd_all(
            params, d_p_list, momentum_buffer_list, lr=lr, weight_decay=weight_decay,
            momentum=momentum, dampening=dampening, nesterov=nesterov, maximize=maximize):
        return
    neg_lr = -lr
    keep = 1 - dampening
    for i, param in enumerate(params):
        grad = d_p_list[i]
        if lr_tensor is None and _fused_sgd(
                param, grad, momentum_buffer_list, i, lr=lr, weight_decay=weight_decay,
                momentum=momentum, dampening=dampening, nesterov=nesterov, maximize=maximize):
            continue
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = momentum_buffer_list[i] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=keep)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        if lr_tensor is not None:
            param.addcmul_(grad, lr_tensor, value=-1)
        else:
            param.add_(grad, alpha=neg_lr)


def _fused_sgd_all(params, grads, buffers, momentum, **kw):
    """Every parameter's step by the fused kernel in one call (on CUDA one launch for many
    parameters) when all qualify; False, changing nothing, otherwise.  New momentum buffers
    are made first (the kernel's first step writes them) and kept only if it ran."""
    if not params:
        return True
    bufs, first = [None] * len(params), [False] * len(params)
    if momentum != 0:
        if buffers is None:
            return False
        for i, b in enumerate(buffers):
            if b is None:
                bufs[i], first[i] = params[i].new_empty(params[i].shape), True
            else:
                bufs[i] = b
    if not _fused.sgd_steps(list(params), list(grads), bufs, first, momentum=momentum, **kw):
        return False
    if momentum != 0:
        buffers[:] = bufs
    return True


def _fused_sgd(param, grad, buffers, i, momentum, **kw):
    """The step of parameter i by the fused kernel (torchlite/_ops/optim.py) where it
    applies; a new momentum buffer is made first (the kernel's first step writes it)."""
    buf = None
    first = False
    if momentum != 0:
        buf = buffers[i]
        if buf is None:
            buf = param.new_empty(param.shape)
            first = True
    if not _fused.sgd_step(param, grad, buf, momentum=momentum, first_step=first, **kw):
        return False
    if first:
        buffers[i] = buf
    return True
