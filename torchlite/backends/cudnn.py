"""torch.backends.cudnn's flags.  torchlite does not use cuDNN: is_available() is False and
the flags (kept, readable) change nothing; its convolutions are deterministic anyway."""
from __future__ import annotations

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: torchlite's convolutions run on its own kernels, not cuDNN."""
    return False


def version() -> int | None:
    """None: no cuDNN."""
    return None
