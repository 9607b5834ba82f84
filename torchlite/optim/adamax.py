"""Adamax: Adam with the infinity norm (PyTorch's torch.optim.Adamax)."""
from .._ops.joining import cat
from .._ops.elementwise import maximum
from .._ops.reduction import amax
from .optimizer import (Optimizer, _check_adam_options, _check_impl_flags, _to_scalar,
                        _view_as_real)

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    r"""Adamax.  With g the gradient (negated if maximize, plus weight_decay * p) and t the
    step number:

        m <- lerp(m, g, 1 - beta1)
        u <- max(beta2 * u, |g| + eps)
        p <- p - lr / (1 - beta1^t) * m / u
    """

    _late_option_defaults = dict(foreach=None, maximize=False, differentiable=False,
                                 capturable=False)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_adam_options(lr, eps, betas, weight_decay)
        _check_impl_flags(differentiable, None, foreach)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group):
        params, grads = self._params_with_grad(group)
        steps, exp_avgs, exp_infs = self._collect_state(params, ("exp_avg", "exp_inf"))
        beta1, beta2 = group["betas"]
        adamax(params, grads, exp_avgs, exp_infs, steps, eps=group["eps"], beta1=beta1,
               beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
               maximize=group["maximize"], differentiable=group["differentiable"])


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False,
           differentiable=False, capturable=False, has_complex=False, *, eps, beta1, beta2,
           lr, weight_decay):
    """The Adamax update on lists of tensors (functional form of Adamax.step)."""
    lr = _to_scalar(lr)
    one_minus_beta1 = 1 - beta1
    for param, grad, exp_avg, exp_inf, step_t in zip(params, grads, exp_avgs, exp_infs,
                                                     state_steps):
        step_t += 1
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        param, grad, exp_avg, exp_inf = _view_as_real(param, grad, exp_avg, exp_inf)
        exp_avg.lerp_(grad, one_minus_beta1)
        if differentiable:
            # maximum(out=) is not recorded; amax over the pair is (ties share the gradient)
            pair = cat([exp_inf.mul_(beta2).unsqueeze(0), grad.abs().add_(eps).unsqueeze_(0)])
            exp_inf.copy_(amax(pair, 0))
        else:
            maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
        clr = lr / (1 - beta1 ** step_t.item())
        param.addcdiv_(exp_avg, exp_inf, value=-clr)
