"""torchlite.storage: the storage classes under their module path, as torch.storage has them
(torchlite/_ops/storage.py holds them)."""
from __future__ import annotations

from ._ops.storage import TypedStorage, UntypedStorage  # noqa: F401
