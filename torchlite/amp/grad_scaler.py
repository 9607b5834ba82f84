"""GradScaler: dynamic loss scaling for float16 training, PyTorch's API and behaviour.

    scaler = torchlite.amp.GradScaler("cuda")
    scaler.scale(loss).backward()      # gradients of loss * scale
    scaler.unscale_(optimizer)         # optional: grads / scale, e.g. before clipping
    scaler.step(optimizer)             # skipped when any gradient is inf or NaN
    scaler.update()                    # backoff after a skipped step, growth after
                                       # growth_interval clean steps

The scale and the growth tracker are one-element tensors on the device of the first scaled
output (float32 and int32, as PyTorch's); the inf/NaN check stays on the device until step
reads it.  Works on CPU tensors too."""
from __future__ import annotations

import enum
from collections import abc, defaultdict
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._tensor import Tensor
from .._ops import creation as _C
from .._ops import joining as _J
from ..autograd.grad_mode import no_grad

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ..optim.optimizer import Optimizer


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._enabled and self._device == "cuda":
            from .. import cuda
            if not cuda.is_available():
                import warnings
                warnings.warn("torchlite.cuda.amp.GradScaler is enabled, but CUDA is not "
                              "available.  Disabling.")
                self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    # -- scale ---------------------------------------------------------------------------
    def _lazy_init_scale_growth_tracker(self, dev):
        self._scale = _C.full((), self._init_scale, dtype=D.float32, device=dev)
        self._growth_tracker = _C.full((), self._init_growth_tracker, dtype=D.int32, device=dev)

    def _check_scale_growth_tracker(self, funcname):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")
        if self._scale is None:
            raise RuntimeError(f"Attempted {funcname} but _scale is None.  " + fix)
        return self._scale, self._growth_tracker

    def scale(self, outputs: Tensor | Iterable[Any]) -> Tensor | Iterable[Any]:
        """outputs (a tensor, or nested iterables of tensors) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        return self._scale_iterable(outputs)

    def _scale_iterable(self, val):
        if isinstance(val, Tensor):
            return self.scale(val)
        if isinstance(val, abc.Iterable):
            scaled = [self._scale_iterable(v) for v in val]
            return type(val)(scaled) if isinstance(val, (list, tuple)) else iter(scaled)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    # -- unscale -------------------------------------------------------------------------
    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16):
        """Divide every gradient by the scale in place; per device, a float32 0-d tensor that
        is 1.0 when some gradient held an inf or NaN."""
        bad_per_device = defaultdict(list)
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype == D.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    bad_per_device[grad.device].append(grad.isfinite().logical_not().any())
                    grad.mul_(inv_scale.to(device=grad.device))
        return {dev: _J.stack(flags).any().to(D.float32)
                for dev, flags in bad_per_device.items()}

    def unscale_(self, optimizer: Optimizer) -> None:
        """Divide optimizer's gradients by the scale (at most once between updates)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, then rounded, as PyTorch computes it
        inv_scale = self._scale.double().reciprocal().float()
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    # -- step ----------------------------------------------------------------------------
    def step(self, optimizer: Optimizer, *args: Any, **kwargs: Any) -> float | None:
        """optimizer.step(*args, **kwargs) unless a gradient held an inf or NaN (then None)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise RuntimeError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    # -- update --------------------------------------------------------------------------
    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back the scale off after a skipped step, grow it after growth_interval clean steps
        (or set it to new_scale); then a new iteration may unscale and step again."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            self._set_scale(new_scale)
        else:
            found_infs = [f for s in self._per_optimizer_states.values()
                          for f in s["found_inf_per_device"].values()]
            if not found_infs:
                raise RuntimeError("No inf checks were recorded prior to update.")
            found_inf = sum(f.item() for f in found_infs) > 0
            self._update_scale(found_inf)
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _set_scale(self, new_scale):
        if isinstance(new_scale, (int, float)):
            self._scale.fill_(new_scale)
            return
        reason = ("new_scale should be a float or a 1-element torchlite.cuda.FloatTensor or "
                  "torchlite.FloatTensor with requires_grad=False.")
        if not isinstance(new_scale, Tensor) or new_scale.device.type != self._scale.device.type \
                or new_scale.numel() != 1 or new_scale.requires_grad:
            raise ValueError(reason)
        self._scale.copy_(new_scale.reshape(()))

    def _update_scale(self, found_inf):
        """PyTorch's _amp_update_scale_, in float32 like its kernel."""
        if found_inf:
            self._scale.mul_(self._backoff_factor)
            self._growth_tracker.fill_(0)
            return
        successful = self._growth_tracker.item() + 1
        if successful == self._growth_interval:
            grown = self._scale * self._growth_factor
            if grown.isfinite().item():
                self._scale.copy_(grown)
            successful = 0
        self._growth_tracker.fill_(successful)

    # -- queries and settings ------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return self._growth_tracker.item()

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's layout: scale, growth_factor, backoff_factor, growth_interval,
        _growth_tracker ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])
