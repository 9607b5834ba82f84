"""Stochastic Weight Averaging and exponential moving averages of a model's weights
(PyTorch's torch.optim.swa_utils): AveragedModel keeps the running average, SWALR is the
learning-rate schedule SWA trains with, update_bn recomputes BatchNorm statistics for the
averaged weights.

The averaging functions come in PyTorch's two forms: `avg_fn(averaged, current,
num_averaged)` returns the new average of one tensor; `multi_avg_fn(averaged_list,
current_list, num_averaged)` updates a list of tensors (one device and dtype) in place.
AveragedModel without either uses the equal-weight (SWA) average."""
from __future__ import annotations

import copy
import itertools
import math
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._ops.creation import tensor as _tensor
from .._ops.elementwise import div as _div
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from .lr_scheduler import LRScheduler, _per_group

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, Literal

    from .._device import device
    from .._tensor import Tensor
    from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] "
                         f"range.")


def _swa_weight(num_averaged):
    """1 / (num_averaged + 1): how much the new value counts in an equal-weight average."""
    return 1.0 / (float(num_averaged) + 1.0)


def get_ema_multi_avg_fn(
        decay: float = 0.999) -> Callable[[list[Tensor], list[Tensor], Tensor | int], None]:
    """The in-place exponential moving average over lists: ema = decay * ema + (1 - decay) *
    current."""
    _check_decay(decay)

    def ema_update(ema_param_list: list[Tensor], current_param_list: list[Tensor],
                   _: Tensor | int) -> None:
        with no_grad():
            if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.lerp_(p_model, 1 - decay)
            else:       # integer buffers: computed in floating point, truncated back
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable[[list[Tensor], list[Tensor], Tensor | int], None]:
    """The in-place equal-weight average over lists: avg += (current - avg) / (n + 1)."""
    def swa_update(averaged_param_list: list[Tensor], current_param_list: list[Tensor],
                   num_averaged: Tensor | int) -> None:
        with no_grad():
            if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
                weight = _swa_weight(num_averaged)
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.lerp_(p_model, weight)
            else:       # integer buffers: the step truncated toward zero, as PyTorch's addcdiv
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.add_(_div(p_model - p_avg, int(num_averaged) + 1, rounding_mode="trunc"))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Tensor | int], Tensor]:
    """The exponential moving average of one tensor: decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Tensor | int) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Tensor | int], Tensor]:
    """The equal-weight average of one tensor: avg + (current - avg) / (n + 1)."""
    def swa_update(averaged_param: Tensor, current_param: Tensor,
                   num_averaged: Tensor | int) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters are the running average of the parameters `model`
    had at each update_parameters(model) call (the first call copies them).

    avg_fn / multi_avg_fn: the averaging (at most one; equal weights by default, see
    get_ema_multi_avg_fn for an EMA).  use_buffers: average the buffers too (otherwise they
    are copied from model at each update; recompute BatchNorm statistics with update_bn).
    device: where the copy lives.  The number of updates is the buffer n_averaged; state dict
    keys are 'n_averaged' and 'module.<the model's keys>', as in PyTorch."""

    def __init__(self, model: Module, device: device | str | int | None = None,
                 avg_fn: Callable[[Tensor, Tensor, Tensor | int], Tensor] | None = None,
                 multi_avg_fn: (Callable[[list[Tensor], list[Tensor], Tensor | int], None]
                                | None) = None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _tensor(0, dtype=D.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _tensors(self, model):
        if self.use_buffers:
            return itertools.chain(model.parameters(), model.buffers())
        return model.parameters()

    def update_parameters(self, model: Module) -> None:
        """Fold model's current parameters (and buffers, with use_buffers) into the
        average."""
        ours = [p.detach() for p in (self._tensors(self.module) if self.use_buffers
                                     else self.parameters())]
        theirs = []
        first = int(self.n_averaged) == 0
        for p_avg, p_model in zip(ours, self._tensors(model)):
            p_model = p_model.detach().to(p_avg.device)
            theirs.append(p_model)
            if first:
                p_avg.copy_(p_model)
        if not first:
            with no_grad():
                if self.avg_fn is None:
                    multi_avg_fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                    for device, (avg_list, model_list) in _group_by_device_and_dtype(ours,
                                                                                     theirs):
                        multi_avg_fn(avg_list, model_list, self.n_averaged.to(device))
                else:
                    for p_avg, p_model in zip(ours, theirs):
                        n = self.n_averaged.to(p_avg.device)
                        p_avg.copy_(self.avg_fn(p_avg, p_model, n))
        if not self.use_buffers:
            # the buffers follow the model (update_bn recomputes BatchNorm's afterwards)
            with no_grad():
                for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                    b_avg.copy_(b_model.detach().to(b_avg.device))
        with no_grad():
            self.n_averaged.add_(1)


def _group_by_device_and_dtype(ours, theirs):
    """[(device, ([averaged tensors], [model tensors]))], one group per (device, dtype), in
    first-seen order: a multi_avg_fn sees lists of one kind."""
    groups = {}
    for a, b in zip(ours, theirs):
        key = (str(a.device), a.dtype)
        if key not in groups:
            groups[key] = (a.device, ([], []))
        groups[key][1][0].append(a)
        groups[key][1][1].append(b)
    return list(groups.values())


def update_bn(loader: Iterable[Any], model: Module,
              device: device | str | int | None = None) -> None:
    """Recompute the running statistics of every BatchNorm of model with one pass over
    loader (its batches, or the first element of each batch that is a list or tuple), as
    the plain average over the batches (momentum None); model's training flag and the
    layers' momenta are restored afterwards."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """The SWA learning rate: each group's lr goes from its current value to swa_lr over
    anneal_epochs steps ('cos' or 'linear' annealing), then stays at swa_lr.  swa_lr: one
    value, or one per param group."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
                 anneal_strategy: Literal["cos", "linear"] = "cos", last_epoch: int = -1) -> None:
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the annealing started from, given the lr it reached at alpha."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self) -> list[float | Tensor]:
        # recursive, as PyTorch's: the starting lr is recovered from the current one, so the
        # schedule composes with other changes to the lr
        self._warn_if_called_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer and the annealing function (restored from its name)."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
