"""torch.utils.dlpack: DLPack exchange with other array libraries (torchlite/_dlpack.py)."""
from .._dlpack import DLDeviceType, from_dlpack, to_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]
