"""torch.backends.mps: torchlite has no Metal backend."""
from __future__ import annotations


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
