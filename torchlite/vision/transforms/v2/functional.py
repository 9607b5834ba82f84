"""torchlite.vision.transforms.v2.functional: the v1 functional API under its v1 names and
v2's (horizontal_flip, to_image, to_dtype, ...)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

import torchlite
from torchlite import Tensor
from ..functional import *  # noqa: F403
from ..functional import __all__ as _v1_all
from .. import functional as _F1

if TYPE_CHECKING:
    from typing import Any

    from ...._dtype import dtype

horizontal_flip = _F1.hflip
vertical_flip = _F1.vflip


def to_image(inpt: Any) -> Tensor:
    """PIL image, ndarray (HWC or HW) or tensor -> CHW tensor image, values and dtype kept."""
    if isinstance(inpt, Tensor):
        return inpt
    if isinstance(inpt, np.ndarray):
        return _F1._array_to_tensor(inpt)
    return _F1.pil_to_tensor(inpt)


def to_dtype(inpt: Tensor, dtype: dtype = torchlite.float32, scale: bool = False) -> Tensor:
    """Cast a tensor image to dtype; scale=True rescales the values as convert_image_dtype."""
    return _F1.convert_image_dtype(inpt, dtype) if scale else inpt.to(dtype)


def grayscale_to_rgb(inpt: Tensor | Any) -> Tensor | Any:
    """A one-channel image repeated to three channels (RGB images are returned as they are)."""
    if isinstance(inpt, Tensor):
        channels = _F1.get_dimensions(inpt)[0]
        if channels not in (1, 3):
            raise ValueError(f"grayscale_to_rgb expects 1 or 3 channels, got {channels}")
        return inpt if channels == 3 else _F1.rgb_to_grayscale(inpt, 3)
    return inpt.convert("RGB")


__all__ = sorted(set(_v1_all) | {"horizontal_flip", "vertical_flip", "grayscale_to_rgb", "to_image", "to_dtype"})
