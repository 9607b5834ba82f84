"""torchlite.cpu.amp: PyTorch's deprecated CPU spelling of torchlite.amp.autocast."""
import warnings

from .. import _dtype as D
from .. import amp as _amp

__all__ = ["autocast"]


class autocast(_amp.autocast):
    """torchlite.cpu.amp.autocast(args...) is torchlite.amp.autocast('cpu', args...)."""

    def __init__(self, enabled=True, dtype=D.bfloat16, cache_enabled=True):
        warnings.warn("`torchlite.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torchlite.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
