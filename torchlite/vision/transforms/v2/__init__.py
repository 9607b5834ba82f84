"""torchlite.vision.transforms.v2: torchvision.transforms.v2's names for plain images.  The
classes are the v1 ones (they already take batched tensors (..., C, H, W)) made to take a whole
sample as v2's do (an image with its label, a tuple or a dict: the image is transformed, the rest
passes through), plus v2's ToImage, ToDtype, ToPureTensor, Identity and RGB.  Bounding boxes,
masks and videos (tv_tensors) are not supported."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..transforms import *
from ..autoaugment import *
from ..transforms import _Transform, __all__ as _t_all
from ..autoaugment import __all__ as _a_all
from . import functional
from ....utils._pytree import tree_flatten, tree_unflatten

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


# ---- samples: an image with its label (or a dict, a tuple, ...) ------------------------------------
# torchvision's v2 transforms take a whole sample -- t(img, label), t({"image": img, "label":
# y}) -- transform the image in it and pass everything else through.  Which leaf is the image
# follows torchvision's rule for plain types: the PIL image, else the first tensor.  Several
# PIL images in one sample would each need the same random parameters, which these classes
# draw per call: that is refused rather than transformed inconsistently.

def _image_index(leaves):
    from ...._tensor import Tensor
    try:
        from PIL import Image
        pil = [i for i, x in enumerate(leaves) if isinstance(x, Image.Image)]
    except ImportError:
        pil = []
    if len(pil) > 1:
        raise ValueError("torchlite.vision.transforms.v2: a sample with several PIL images is not "
                         "supported (each would draw its own random parameters); transform them "
                         "one at a time")
    if pil:
        return pil[0]
    return next((i for i, x in enumerate(leaves) if isinstance(x, Tensor)), None)


def _on_samples(cls):
    """The v2 class of v1 transform `cls`: forward takes one image as before, or a whole
    sample (several arguments, a tuple or a dict), where it transforms the image alone."""
    v1_forward = cls.forward

    def forward(self, *inputs: Any) -> Any:
        sample = inputs if len(inputs) > 1 else inputs[0]
        if len(inputs) == 1 and not isinstance(sample, (tuple, list, dict)):
            return v1_forward(self, sample)
        leaves, spec = tree_flatten(sample)
        i = _image_index(leaves)
        if i is not None:
            leaves[i] = v1_forward(self, leaves[i])
        return tree_unflatten(leaves, spec)
    forward.__doc__ = f"{cls.__name__}'s transform of the image of a sample (v2: other values pass through)."
    return type(cls.__name__, (cls,), {"forward": forward, "__module__": __name__,
                                       "__doc__": cls.__doc__})


def _passing_samples(cls):
    """A container (Compose, RandomApply, ...): it hands the whole sample to its transforms."""
    v1_forward = cls.forward

    def forward(self, *inputs: Any) -> Any:
        return v1_forward(self, inputs if len(inputs) > 1 else inputs[0])
    forward.__doc__ = v1_forward.__doc__
    return type(cls.__name__, (cls,), {"forward": forward, "__module__": __name__,
                                       "__doc__": cls.__doc__})


def _v2_classes():
    from .. import autoaugment as _aa, transforms as _v1
    containers = {"Compose", "RandomApply", "RandomChoice", "RandomOrder"}
    keep = {"Lambda", "InterpolationMode"}          # Lambda gets the whole sample, as given
    made = {}
    for name in list(_t_all) + list(_a_all):
        obj = getattr(_v1, name, None) or getattr(_aa, name, None)
        if name in keep or not (isinstance(obj, type) and issubclass(obj, _Transform)):
            continue
        made[name] = (_passing_samples if name in containers else _on_samples)(obj)
    for cls in (ToImage, ToDtype, RGB):
        made[cls.__name__] = _on_samples(cls)
    return made


globals().update(_v2_classes())

__all__ = sorted(set(_t_all) | set(_a_all) | {"ToImage", "ToDtype", "ToPureTensor", "Identity", "RGB", "functional"})
