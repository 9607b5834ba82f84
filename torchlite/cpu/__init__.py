"""torchlite.cpu: PyTorch's torch.cpu namespace (only its amp submodule so far)."""
from . import amp

__all__ = ["amp"]
