"""torch.distributions.chi2's name (Chi2 lives in gamma.py)."""
from .gamma import Chi2

__all__ = ["Chi2"]
