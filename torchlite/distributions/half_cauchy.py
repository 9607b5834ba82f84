"""torch.distributions.half_cauchy's name (HalfCauchy lives in folded.py)."""
from .folded import HalfCauchy

__all__ = ["HalfCauchy"]
