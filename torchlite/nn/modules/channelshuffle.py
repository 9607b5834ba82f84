"""torch.nn.modules.channelshuffle's name (the class lives in shuffle.py)."""
from .shuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]
