"""torch.distributions.exponential's name (Exponential lives in simple.py)."""
from .simple import Exponential

__all__ = ["Exponential"]
