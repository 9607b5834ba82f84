"""torch.distributions.half_normal's name (HalfNormal lives in folded.py)."""
from .folded import HalfNormal

__all__ = ["HalfNormal"]
