"""torchlite.amp: automatic mixed precision, PyTorch's API (torch.amp).

    with torchlite.autocast("cuda"):          # or "cpu" (bfloat16)
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""
from .autocast_mode import (autocast, is_autocast_available, custom_fwd, custom_bwd,
                            is_autocast_enabled, set_autocast_enabled, get_autocast_dtype,
                            set_autocast_dtype, is_autocast_cache_enabled,
                            set_autocast_cache_enabled, clear_autocast_cache)
from .grad_scaler import GradScaler, OptState

__all__ = ["autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd"]
