"""torch.distributions.poisson's name (Poisson lives in simple.py)."""
from .simple import Poisson

__all__ = ["Poisson"]
