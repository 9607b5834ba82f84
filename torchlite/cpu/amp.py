"""torchlite.cpu.amp: PyTorch's deprecated CPU spelling of torchlite.amp.autocast."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from .. import _dtype as D
from .. import amp as _amp

if TYPE_CHECKING:
    from .._dtype import dtype

__all__ = ["autocast"]


class autocast(_amp.autocast):
    """torchlite.cpu.amp.autocast(args...) is torchlite.amp.autocast('cpu', args...)."""

    def __init__(self, enabled: bool = True, dtype: dtype = D.bfloat16, cache_enabled: bool = True) -> None:
        warnings.warn("`torchlite.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torchlite.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
