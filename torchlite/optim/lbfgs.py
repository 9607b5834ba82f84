"""L-BFGS (PyTorch's torch.optim.LBFGS), with an optional strong-Wolfe line search.

All parameters are handled as one flat vector (the concatenation of the parameters in group
order).  The curvature scalars kept in the state (ro, al, H_diag) and the slopes g.d are 0-d
tensors of the parameters' dtype, and so are step lengths computed from them, as in PyTorch:
state dicts interchange, and the Wolfe tests round as PyTorch's do (float32 for float32
parameters).  Losses are Python floats."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .._ops.creation import zeros
from .._ops.joining import cat
from .._tensor import Tensor
from .optimizer import (Optimizer, _call_with_grad, _check_lr, _squeeze_hyperparameter,
                        _to_scalar, _view_as_real)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

__all__ = ["LBFGS"]


def _cubic_minimizer(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2,
    clamped to bounds (default: the interval between x1 and x2); the interval's middle when
    the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square.sqrt() if isinstance(d2_square, Tensor) else math.sqrt(d2_square)
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


class _Point:
    """A trial point of the line search: step t, loss f, flat gradient g, slope gtd."""
    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Find a step t along d satisfying the strong Wolfe conditions (sufficient decrease c1,
    curvature c2): first bracket an interval that holds one, then shrink it by cubic
    interpolation.  obj_func(x, t, d) -> (loss, flat gradient) at x + t d.
    Returns (loss, flat gradient, t, function evaluations)."""
    d_norm = d.abs().max()
    start = _Point(0, f, g.clone(), gtd)
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    new = _Point(t, f_new, g_new, g_new.dot(d))
    prev = start
    done = False
    ls_iter = 0
    bracket = None
    # phase 1: grow the step until an interval [prev, new] must contain an acceptable point
    while ls_iter < max_ls:
        if new.f > f + c1 * new.t * gtd or (ls_iter > 1 and new.f >= prev.f):
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket, done = [new], True
            break
        if new.gtd >= 0:
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        t_next = _cubic_minimizer(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd,
                                  bounds=(new.t + 0.01 * (new.t - prev.t), new.t * 10))
        prev = _Point(new.t, new.f, new.g.clone(), new.gtd)
        f_new, g_new = obj_func(x, t_next, d)
        evals += 1
        new = _Point(t_next, f_new, g_new, g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = [start, new]
    if len(bracket) == 1:
        best = bracket[0]
        return best.f, best.g, best.t, evals
    # phase 2 (zoom): shrink the bracket around a point meeting both conditions
    insufficient_progress = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not done and ls_iter < max_ls:
        lo_t, hi_t = min(bracket[0].t, bracket[1].t), max(bracket[0].t, bracket[1].t)
        if abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change:
            break
        t = _cubic_minimizer(bracket[0].t, bracket[0].f, bracket[0].gtd,
                             bracket[1].t, bracket[1].f, bracket[1].gtd)
        t, insufficient_progress = _keep_away_from_ends(t, lo_t, hi_t, insufficient_progress)
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        ls_iter += 1
        trial = _Point(t, f_new, g_new.clone(), g_new.dot(d))
        if trial.f > f + c1 * t * gtd or trial.f >= bracket[low].f:
            bracket[high] = trial
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(trial.gtd) <= -c2 * gtd:
                done = True
            elif trial.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = trial
    best = bracket[low]
    return best.f, best.g, best.t, evals


def _keep_away_from_ends(t, lo, hi, insufficient_progress):
    """Move an interpolated step that lands within 10% of the bracket's ends inward, unless
    the last step made progress (then only note it)."""
    eps = 0.1 * (hi - lo)
    if min(hi - t, t - lo) >= eps:
        return t, False
    if insufficient_progress or t >= hi or t <= lo:
        t = hi - eps if abs(t - hi) < abs(t - lo) else lo + eps
        return t, False
    return t, True


class LBFGS(Optimizer):
    """L-BFGS.  step(closure) needs a closure that re-evaluates the model and returns the
    loss; it runs up to max_iter iterations (max_eval function evaluations).  One parameter
    group only; history_size past updates approximate the inverse Hessian.

    Args: lr (1), max_iter (20), max_eval (max_iter * 1.25), tolerance_grad (1e-7),
    tolerance_change (1e-9), history_size (100), line_search_fn (None or 'strong_wolfe').
    """

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None) -> None:
        _check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # -- the parameters as one flat vector ---------------------------------------------------
    def _flat_grad(self):
        """The gradients as one flat vector; a complex parameter's as (real, imag) pairs."""
        views = []
        for p in self._params:
            g = zeros(p.shape, dtype=p.dtype) if p.grad is None else p.grad
            g, = _view_as_real(g)
            views.append(g.reshape(-1))
        return cat(views, 0)

    def _add_direction(self, step_size, direction):
        """params += step_size * direction (direction flat, complex parameters as pairs)."""
        offset = 0
        for p in self._params:
            p, = _view_as_real(p)
            n = p.numel()
            p.add_(direction[offset:offset + n].view_as(p), alpha=_to_scalar(step_size))
            offset += n

    def _clone_params(self):
        return [p.clone() for p in self._params]

    def _set_params(self, values):
        for p, v in zip(self._params, values):
            p.copy_(v)

    def _directional_evaluate(self, closure, x, t, d):
        """Loss and flat gradient at x + t d; the parameters are put back to x after."""
        self._add_direction(t, d)
        loss = float(_call_with_grad(closure))
        flat_grad = self._flat_grad()
        self._set_params(x)
        return loss, flat_grad

    # -- the step ----------------------------------------------------------------------------
    def step(self, closure: Callable[[], Tensor | float]) -> Tensor | float:
        """Run L-BFGS iterations on the closure's loss; returns the loss before them."""
        from ..autograd.grad_mode import _state as grad_state
        was_enabled = grad_state.enabled
        grad_state.enabled = False
        try:
            return self._step(closure)
        finally:
            grad_state.enabled = was_enabled

    def _step(self, closure):
        group = self.param_groups[0]
        # a Tensor lr stays one (PyTorch keeps it in the state as the step length t)
        lr = _squeeze_hyperparameter(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        if line_search_fn is not None and line_search_fn != "strong_wolfe":
            raise RuntimeError("only 'strong_wolfe' is supported")

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = _call_with_grad(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max().item() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # the search direction: -grad at first, then the two-loop recursion over the
            # stored curvature pairs (y = grad change, s = step)
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys.item() > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                d = self._two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, state,
                                   history_size)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            # the step length: the first ever step is scaled down by the gradient's size
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:     # not a descent direction
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = self._clone_params()
                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    lambda x, step, direction: self._directional_evaluate(closure, x, step,
                                                                          direction),
                    x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_direction(t, d)
                opt_cond = flat_grad.abs().max().item() <= tolerance_grad
            else:
                self._add_direction(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = float(_call_with_grad(closure))
                    flat_grad = self._flat_grad()
                    opt_cond = flat_grad.abs().max().item() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or d.mul(t).abs().max().item() <= tolerance_change
                    or abs(loss - prev_loss) < tolerance_change):
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    @staticmethod
    def _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, state, history_size):
        """-H grad, H the L-BFGS inverse-Hessian estimate from the stored pairs."""
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-_to_scalar(al[i]))
        r = q.mul_(H_diag)
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=_to_scalar(al[i] - be_i))
        return r
