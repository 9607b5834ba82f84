"""torchlite.vision.transforms.v2: torchvision.transforms.v2's names for plain images.  The
classes are the v1 ones (they already take batched tensors (..., C, H, W)), plus v2's ToImage,
ToDtype, ToPureTensor, Identity and RGB.  Bounding boxes, masks and videos (tv_tensors) are not
supported."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..transforms import *
from ..autoaugment import *
from ..transforms import _Transform, __all__ as _t_all
from ..autoaugment import __all__ as _a_all
from . import functional

if TYPE_CHECKING:
    from typing import Any

    from ...._dtype import dtype
    from ...._tensor import Tensor


class ToImage(_Transform):
    """PIL image, ndarray (HWC) or tensor -> CHW tensor image with its own dtype and values."""

    def forward(self, inpt: Any) -> Tensor:
        """functional.to_image(inpt)."""
        return functional.to_image(inpt)


class ToDtype(_Transform):
    """Convert a tensor image to dtype; with scale=True the values are rescaled to the new
    dtype's range (as ConvertImageDtype), else simply cast."""
    _fields = ("dtype", "scale")

    def __init__(self, dtype: dtype, scale: bool = False) -> None:
        super().__init__()
        self.dtype, self.scale = dtype, scale

    def forward(self, inpt: Tensor) -> Tensor:
        """functional.to_dtype(inpt, dtype, scale)."""
        return functional.to_dtype(inpt, self.dtype, self.scale)


class ToPureTensor(_Transform):
    """Identity on plain tensors (v2 uses it to drop tv_tensor subclasses, which torchlite has not)."""

    def forward(self, inpt: Any) -> Any:
        """inpt unchanged."""
        return inpt


class Identity(_Transform):
    """Return the input unchanged."""

    def forward(self, inpt: Any) -> Any:
        """inpt unchanged."""
        return inpt


class RGB(_Transform):
    """Make an image three-channel RGB: grayscale is repeated, RGB kept (PIL: convert('RGB'))."""

    def forward(self, inpt: Tensor | Any) -> Tensor | Any:
        """functional.grayscale_to_rgb(inpt)."""
        return functional.grayscale_to_rgb(inpt)


__all__ = sorted(set(_t_all) | set(_a_all) | {"ToImage", "ToDtype", "ToPureTensor", "Identity", "RGB", "functional"})
