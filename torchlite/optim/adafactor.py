"""Adafactor (PyTorch's torch.optim.Adafactor, from PyTorch 2.5): Adam-like steps whose second
moment of a matrix is kept factored, as one row and one column of running means."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._ops.creation import tensor as _scalar_tensor, zeros, zeros_like
from .._dtype import finfo
from .._tensor import Tensor
from .optimizer import Optimizer, _to_scalar

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["Adafactor", "adafactor"]


class Adafactor(Optimizer):
    r"""Adafactor.  With G the gradient (negated if maximize) and t the step number:

        beta2_t = 1 - t^beta2_decay;  rho_t = min(lr, 1 / sqrt(t))
        alpha_t = max(eps2, RMS(p)) * rho_t
        p <- p * (1 - lr * weight_decay)
        G with more than one dim (its last two dims factored; leading dims are a batch):
            R <- lerp(R, mean(G^2, last dim), 1 - beta2_t)     (state["row_var"], ... x 1)
            C <- lerp(C, mean(G^2, dim -2), 1 - beta2_t)       (state["col_var"], 1 x ...)
            V = R @ C / max(mean(R over rows), eps1)
        otherwise:  V <- lerp(V, G^2, 1 - beta2_t)             (state["variance"])
        U = G / sqrt(max(V, eps1^2));  p <- p - alpha_t / max(1, RMS(U) / d) * U

    eps = (eps1, eps2); eps1 None means the parameters' dtype's machine epsilon.  As in
    PyTorch (and unlike the paper) lr caps the relative step size and scales the decoupled
    weight decay; complex parameters are refused.
    """

    _late_option_defaults = dict(foreach=None)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads = self._params_with_grad(group)
        state_of = self.state
        row_vars, col_vars, variances, steps = [], [], [], []
        for p, g in zip(params, grads):
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            state = state_of[p]
            if len(state) == 0:
                state["step"] = _scalar_tensor(0.0)
                if g.dim() > 1:
                    shape = list(g.shape)
                    state["row_var"] = zeros(shape[:-1] + [1], dtype=g.dtype, device=g.device)
                    state["col_var"] = zeros(shape[:-2] + [1, shape[-1]], dtype=g.dtype,
                                             device=g.device)
                else:
                    state["variance"] = zeros_like(g)
            row_vars.append(state.get("row_var"))
            col_vars.append(state.get("col_var"))
            variances.append(state.get("variance"))
            steps.append(state["step"])
        eps1, eps2 = group["eps"]
        adafactor(params, grads, row_vars, col_vars, variances, steps, d=group["d"],
                  lr=group["lr"], beta2_decay=group["beta2_decay"],
                  weight_decay=group["weight_decay"], eps1=eps1, eps2=eps2,
                  maximize=group["maximize"])


def adafactor(params: list[Tensor], grads: list[Tensor], row_vars: list[Tensor | None],
              col_vars: list[Tensor | None], variances: list[Tensor | None],
              state_steps: list[Tensor], grad_scale: Tensor | None = None,
              found_inf: Tensor | None = None, foreach: bool | None = None,
              has_complex: bool = False, *, d: float, lr: float | Tensor, beta2_decay: float,
              weight_decay: float, eps1: float | None, eps2: float, maximize: bool) -> None:
    """The Adafactor update on lists of tensors (functional form of Adafactor.step): a
    parameter with more than one dim has row_vars/col_vars entries (variances None), others
    a variances entry."""
    if grad_scale is not None or found_inf is not None:
        raise RuntimeError("Grad scaling should occur outside of optimizer.step()")
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        step_t = state_steps[i]
        eps1_i = finfo(param.dtype).eps if eps1 is None else eps1
        step_t += 1
        step = step_t.item()
        one_minus_beta2_t = step ** beta2_decay
        rho_t = min(lr, 1 / (step ** 0.5))
        alpha = max(eps2, param.norm(2).item() / (param.numel() ** 0.5)) * rho_t
        if weight_decay != 0:
            param.mul_(1 - lr * weight_decay)
        if grad.dim() > 1:
            row_var, col_var = row_vars[i], col_vars[i]
            # mean of squares as a squared norm over n: PyTorch's rounding
            row_mean = grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1))
            row_var.lerp_(row_mean, one_minus_beta2_t)
            col_mean = grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2))
            col_var.lerp_(col_mean, one_minus_beta2_t)
            var_estimate = row_var @ col_var
            var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1_i))
        else:
            variance = variances[i]
            variance.lerp_(grad * grad, one_minus_beta2_t)
            var_estimate = variance.clone()
        update = var_estimate.clamp_(min=eps1_i * eps1_i).rsqrt_()
        update.mul_(grad)
        denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
        param.add_(update, alpha=-alpha / denom)
