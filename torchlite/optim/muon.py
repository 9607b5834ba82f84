"""Muon (PyTorch's torch.optim.Muon): momentum SGD for matrices whose update is orthogonalised
by a Newton-Schulz iteration."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .._ops.linalg import addmm
from .._tensor import Tensor
from .optimizer import Optimizer, _to_scalar

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["Muon", "muon"]

# Keller Jordan's coefficients and defaults (https://kellerjordan.github.io/posts/muon/), as
# PyTorch has them
EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


class Muon(Optimizer):
    r"""Muon, for 2-d parameters (hidden layers' weights; optimize biases, embeddings and the
    rest with AdamW or another standard method).  With g the gradient:

        B <- lerp(B, g, 1 - momentum)                       (state["momentum_buffer"])
        U = lerp(g, B, momentum) if nesterov else B
        O = NS(U): ns_steps quintic Newton-Schulz iterations X <- a X + (b A + c A^2) X,
            A = X X^T, from X = U / max(||U||_F, eps), in bfloat16 (on U^T when U is tall)
        p <- p * (1 - lr * weight_decay);  p <- p - lr * s * O

    s = sqrt(max(1, rows / cols)) for adjust_lr_fn None or "original" (Keller Jordan's),
    0.2 * sqrt(max(rows, cols)) for "match_rms_adamw" (Moonshot's, to reuse AdamW's lr).
    """

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        bufs = []
        for p, g in zip(params, grads):
            if p.is_complex():
                raise RuntimeError("Muon does not support complex parameters")
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = g.new_zeros(g.shape)
            bufs.append(state["momentum_buffer"])
        muon(params, grads, bufs, lr=group["lr"], weight_decay=group["weight_decay"],
             momentum=group["momentum"], nesterov=group["nesterov"],
             ns_coefficients=group["ns_coefficients"], eps=group["eps"],
             ns_steps=group["ns_steps"], adjust_lr_fn=group["adjust_lr_fn"])


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """An approximate orthogonalisation U S' V^T of grad = U S V^T (S' roughly uniform in
    [0.5, 1.5]: the quintic's coefficients trade convergence to 1 for slope at 0), in
    bfloat16."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    ortho = grad.bfloat16()
    if tall:
        ortho = ortho.T
    ortho.div_(ortho.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = ortho @ ortho.T
        gram_update = addmm(gram, gram, gram, beta=b, alpha=c)
        ortho = addmm(ortho, gram_update, ortho, beta=a)
    return ortho.T if tall else ortho


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """lr scaled so the orthogonalised update has a consistent RMS across shapes."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


def muon(params: list[Tensor], grads: list[Tensor], muon_momentum_bufs: list[Tensor], *,
         foreach: bool | None = None, lr: float | Tensor, weight_decay: float, momentum: float,
         nesterov: bool, ns_coefficients: tuple[float, float, float], ns_steps: int, eps: float,
         adjust_lr_fn: str | None, has_complex: bool = False) -> None:
    """The Muon update on lists of tensors (functional form of Muon.step)."""
    if foreach:
        raise RuntimeError("Foreach is not supported for Muon yet")
    if has_complex:
        raise ValueError("Complex parameters are not supported")
    lr = _to_scalar(lr)
    for param, grad, buf in zip(params, grads, muon_momentum_bufs):
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if nesterov else buf
        update = _zeropower_via_newtonschulz(update, ns_coefficients, ns_steps, eps)
        param.mul_(1 - lr * weight_decay)
        param.add_(update, alpha=-_adjust_lr(lr, adjust_lr_fn, param.shape))
