"""torchlite.cuda.amp: PyTorch's deprecated CUDA spellings of torchlite.amp (they warn, as
PyTorch's do, and forward to torchlite.amp with device_type 'cuda')."""
import warnings

from .. import _dtype as D
from .. import amp as _amp

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_amp.autocast):
    """torchlite.cuda.amp.autocast(args...) is torchlite.amp.autocast('cuda', args...)."""

    def __init__(self, enabled=True, dtype=D.float16, cache_enabled=True):
        warnings.warn("`torchlite.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torchlite.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """torchlite.cuda.amp.GradScaler(args...) is torchlite.amp.GradScaler('cuda', args...)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torchlite.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torchlite.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    return _amp.custom_bwd(bwd, device_type="cuda")
