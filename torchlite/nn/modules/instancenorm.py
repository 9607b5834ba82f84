"""torch.nn.modules.instancenorm's names (the classes live in normalization.py and lazy.py)."""
from .lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d", "_InstanceNorm"]
