"""torchlite.cuda.amp: PyTorch's deprecated CUDA spellings of torchlite.amp (they warn, as
PyTorch's do, and forward to torchlite.amp with device_type 'cuda')."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from .. import _dtype as D
from .. import amp as _amp

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .._dtype import dtype

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_amp.autocast):
    """torchlite.cuda.amp.autocast(args...) is torchlite.amp.autocast('cuda', args...)."""

    def __init__(self, enabled: bool = True, dtype: dtype = D.float16, cache_enabled: bool = True) -> None:
        warnings.warn("`torchlite.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torchlite.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """torchlite.cuda.amp.GradScaler(args...) is torchlite.amp.GradScaler('cuda', args...)."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`torchlite.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torchlite.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd: Callable[..., Any] | None = None, *, cast_inputs: dtype | None = None) -> Callable[..., Any]:
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable[..., Any] | None = None) -> Callable[..., Any]:
    return _amp.custom_bwd(bwd, device_type="cuda")
