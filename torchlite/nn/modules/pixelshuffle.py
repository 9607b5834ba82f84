"""torch.nn.modules.pixelshuffle's names (the classes live in shuffle.py)."""
from .shuffle import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
