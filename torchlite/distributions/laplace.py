"""torch.distributions.laplace's name (Laplace lives in simple.py)."""
from .simple import Laplace

__all__ = ["Laplace"]
