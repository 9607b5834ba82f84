"""torchlite.signal: PyTorch's torch.signal, whose one part is the window functions of
torchlite.signal.windows.  Loaded on first use of `torchlite.signal`."""
from . import windows  # noqa: F401

__all__ = ["windows"]
