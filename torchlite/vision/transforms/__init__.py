"""torchlite.vision.transforms: torchvision.transforms (the v1 API) on torchlite -- image
transforms for PIL images and torchlite tensor images (..., C, H, W), float in [0, 1] or uint8.
The classes are here, their stateless forms in .functional, the same classes under v2 names in
.v2.  Random parameters come from torchlite's global generator (torchlite.manual_seed)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .transforms import *
from .autoaugment import *
from . import functional
from .functional import InterpolationMode
from .transforms import __all__ as _t_all
from .autoaugment import __all__ as _a_all

if TYPE_CHECKING:
    from typing import Any

__all__ = sorted(set(_t_all) | set(_a_all) | {"functional", "InterpolationMode", "v2"})


def __getattr__(name: str) -> Any:
    if name == "v2":
        import importlib
        return importlib.import_module(f"{__name__}.v2")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
