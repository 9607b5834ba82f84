"""torchlite.vision: torchvision's API on torchlite tensors -- datasets, transforms, models,
utils, ops and io.  Images go through Pillow (the `[vision]` extra: pip install
"torchlite-dl[vision]"); what does not touch images works without it."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["datasets", "transforms", "models", "utils", "ops", "io", "get_image_backend",
           "set_image_backend"]

_SUBMODULES = ("datasets", "transforms", "models", "utils", "ops", "io")
_backend = "PIL"


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'torchlite.vision' has no attribute '{name}'")


def get_image_backend() -> str:
    """The package used to load images: 'PIL' (torchvision's default)."""
    return _backend


def set_image_backend(backend: str) -> None:
    """torchvision's switch between 'PIL' and 'accimage'; torchlite reads images with Pillow."""
    if backend != "PIL":
        raise ValueError(f"Invalid backend '{backend}'. torchlite.vision reads images with 'PIL'")
