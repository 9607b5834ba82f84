"""Automatic augmentation policies: AutoAugment (Cubuk et al. 2019, the learned ImageNet, CIFAR10
and SVHN policies), RandAugment (Cubuk et al. 2020), TrivialAugmentWide (Mueller & Hutter
2021) and AugMix (Hendrycks et al. 2020).  They work on PIL images and on uint8 tensor images
(..., C, H, W) -- posterize and equalize are defined on 8-bit data only -- and draw from
torchlite's global generator."""
from __future__ import annotations

import math
from enum import Enum
from typing import TYPE_CHECKING

import torchlite
from torchlite import Tensor
from . import functional as F
from .functional import InterpolationMode, _interpolation
from .transforms import _Transform

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]


class AutoAugmentPolicy(Enum):
    """The policies learned by AutoAugment on three datasets."""
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# One sub-policy a line: two (operation, probability, magnitude bin) triples; '-' for
# operations without a magnitude.  The tables are the AutoAugment paper's (appendix A).
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: """
        Posterize .4 8, Rotate .6 9 | Solarize .6 5, AutoContrast .6 - | Equalize .8 -, Equalize .6 -
        Posterize .6 7, Posterize .6 6 | Equalize .4 -, Solarize .2 4 | Equalize .4 -, Rotate .8 8
        Solarize .6 3, Equalize .6 - | Posterize .8 5, Equalize 1 - | Rotate .2 3, Solarize .6 8
        Equalize .6 -, Posterize .4 6 | Rotate .8 8, Color .4 0 | Rotate .4 9, Equalize .6 -
        Equalize 0 -, Equalize .8 - | Invert .6 -, Equalize 1 - | Color .6 4, Contrast 1 8
        Rotate .8 8, Color 1 2 | Color .8 8, Solarize .8 7 | Sharpness .4 7, Invert .6 -
        ShearX .6 5, Equalize 1 - | Color .4 0, Equalize .6 - | Equalize .4 -, Solarize .2 4
        Solarize .6 5, AutoContrast .6 - | Invert .6 -, Equalize 1 - | Color .6 4, Contrast 1 8
        Equalize .8 -, Equalize .6 -""",
    AutoAugmentPolicy.CIFAR10: """
        Invert .1 -, Contrast .2 6 | Rotate .7 2, TranslateX .3 9 | Sharpness .8 1, Sharpness .9 3
        ShearY .5 8, TranslateY .7 9 | AutoContrast .5 -, Equalize .9 - | ShearY .2 7, Posterize .3 7
        Color .4 3, Brightness .6 7 | Sharpness .3 9, Brightness .7 9 | Equalize .6 -, Equalize .5 -
        Contrast .6 7, Sharpness .6 5 | Color .7 7, TranslateX .5 8 | Equalize .3 -, AutoContrast .4 -
        TranslateY .4 3, Sharpness .2 6 | Brightness .9 6, Color .2 8 | Solarize .5 2, Invert 0 -
        Equalize .2 -, AutoContrast .6 - | Equalize .2 -, Equalize .6 - | Color .9 9, Equalize .6 -
        AutoContrast .8 -, Solarize .2 8 | Brightness .1 3, Color .7 0 | Solarize .4 5, AutoContrast .9 -
        TranslateY .9 9, TranslateY .7 9 | AutoContrast .9 -, Solarize .8 3 | Equalize .8 -, Invert .1 -
        TranslateY .7 9, AutoContrast .9 -""",
    AutoAugmentPolicy.SVHN: """
        ShearX .9 4, Invert .2 - | ShearY .9 8, Invert .7 - | Equalize .6 -, Solarize .6 6
        Invert .9 -, Equalize .6 - | Equalize .6 -, Rotate .9 3 | ShearX .9 4, AutoContrast .8 -
        ShearY .9 8, Invert .4 - | ShearY .9 5, Solarize .2 6 | Invert .9 -, AutoContrast .8 -
        Equalize .6 -, Rotate .9 3 | ShearX .9 4, Solarize .3 3 | ShearY .8 8, Invert .7 -
        Equalize .9 -, TranslateY .6 6 | Invert .9 -, Equalize .6 - | Contrast .3 3, Rotate .8 4
        Invert .8 -, TranslateY 0 2 | ShearY .7 6, Solarize .4 8 | Invert .6 -, Rotate .8 4
        ShearY .3 7, TranslateX .9 3 | ShearX .1 6, Invert .6 - | Solarize .7 2, TranslateY .6 7
        ShearY .8 4, Invert .8 - | ShearX .7 9, TranslateY .8 3 | ShearY .8 5, AutoContrast .7 -
        ShearX .7 2, Invert .1 -""",
}


def _parse_policy(text):
    """[((op, p, bin or None), (op, p, bin or None)), ...] from a _POLICIES table."""
    def triple(item):
        op, p, b = item.split()
        return op, float(p), None if b == "-" else int(b)
    return [tuple(triple(item) for item in sub.split(",")) for sub in text.replace("\n", "|").split("|")
            if sub.strip()]


def _linspace(lo, hi, n):
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)] if n > 1 else [lo]


def _apply_op(img, op_name, magnitude, interpolation, fill):
    """One augmentation operation at the given (signed) magnitude."""
    if op_name == "ShearX":
        # the magnitude is the shear factor; affine takes the shear angle
        return F.affine(img, 0.0, [0, 0], 1.0, [math.degrees(math.atan(magnitude)), 0.0], interpolation, fill,
                        center=[0, 0])
    if op_name == "ShearY":
        return F.affine(img, 0.0, [0, 0], 1.0, [0.0, math.degrees(math.atan(magnitude))], interpolation, fill,
                        center=[0, 0])
    if op_name == "TranslateX":
        return F.affine(img, 0.0, [int(magnitude), 0], 1.0, [0.0, 0.0], interpolation, fill)
    if op_name == "TranslateY":
        return F.affine(img, 0.0, [0, int(magnitude)], 1.0, [0.0, 0.0], interpolation, fill)
    if op_name == "Rotate":
        return F.rotate(img, magnitude, interpolation, fill=fill)
    enhance = {"Brightness": F.adjust_brightness, "Color": F.adjust_saturation, "Contrast": F.adjust_contrast,
               "Sharpness": F.adjust_sharpness}
    if op_name in enhance:
        return enhance[op_name](img, 1.0 + magnitude)
    if op_name == "Posterize":
        return F.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return F.solarize(img, magnitude)
    plain = {"AutoContrast": F.autocontrast, "Equalize": F.equalize, "Invert": F.invert}
    if op_name in plain:
        return plain[op_name](img)
    if op_name == "Identity":
        return img
    raise ValueError(f"The provided operator {op_name} is not recognized.")


def _space(num_bins, image_size, wide=False):
    """{op: (magnitudes, signed)}: the magnitude of each operation at each of num_bins bins for
    an image of image_size (h, w); `wide` is TrivialAugment's wider ranges."""
    top = 0.99 if wide else 0.9
    shift_x, shift_y = (32.0, 32.0) if wide else (150.0 / 331.0 * image_size[1], 150.0 / 331.0 * image_size[0])
    bits_span = 6 if wide else 4
    return {
        "ShearX": (_linspace(0.0, 0.99 if wide else 0.3, num_bins), True),
        "ShearY": (_linspace(0.0, 0.99 if wide else 0.3, num_bins), True),
        "TranslateX": (_linspace(0.0, shift_x, num_bins), True),
        "TranslateY": (_linspace(0.0, shift_y, num_bins), True),
        "Rotate": (_linspace(0.0, 135.0 if wide else 30.0, num_bins), True),
        "Brightness": (_linspace(0.0, top, num_bins), True),
        "Color": (_linspace(0.0, top, num_bins), True),
        "Contrast": (_linspace(0.0, top, num_bins), True),
        "Sharpness": (_linspace(0.0, top, num_bins), True),
        "Posterize": ([8 - int(round(i / ((num_bins - 1) / bits_span))) for i in range(num_bins)], False),
        "Solarize": (_linspace(255.0, 0.0, num_bins), False),
        "AutoContrast": (None, False),
        "Equalize": (None, False),
    }


class _Augment(_Transform):
    def __init__(self, interpolation: InterpolationMode | int, fill: float | Sequence[float] | None) -> None:
        super().__init__()
        self.interpolation, self.fill = _interpolation(interpolation), fill

    def _fill(self, img):
        channels = F.get_dimensions(img)[0]
        if isinstance(img, Tensor) and isinstance(self.fill, (int, float)):
            return [float(self.fill)] * channels
        if isinstance(img, Tensor) and self.fill is not None:
            return [float(f) for f in self.fill]
        return self.fill

    def _random_op(self, img, space, fill, magnitude_bin=None):
        """Apply one operation picked uniformly from space, at magnitude_bin (None: a random
        bin), negated with probability 1/2 for signed operations."""
        names = list(space)
        name = names[int(torchlite.randint(len(names), (1,)).item())]
        magnitudes, signed = space[name]
        if magnitudes is None:
            magnitude = 0.0
        else:
            if magnitude_bin is None:
                magnitude_bin = int(torchlite.randint(len(magnitudes), (1,)).item())
            magnitude = float(magnitudes[magnitude_bin])
        if signed and torchlite.randint(2, (1,)).item():
            magnitude = -magnitude
        return _apply_op(img, name, magnitude, self.interpolation, fill)


class AutoAugment(_Augment):
    """AutoAugment: apply one of the policy's 25 sub-policies, picked at random; each of its two
    operations happens with its own probability, at its own magnitude (sign at random)."""
    _fields = ("policy", "fill")

    def __init__(self, policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
                 interpolation: InterpolationMode | int = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] | None = None) -> None:
        super().__init__(interpolation, fill)
        if policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policy = policy
        self.policies = _parse_policy(_POLICIES[policy])

    @staticmethod
    def get_params(transform_num: int) -> tuple[int, Tensor, Tensor]:
        """(sub-policy index, two uniform draws for the probabilities, two random signs)."""
        return int(torchlite.randint(transform_num, (1,)).item()), torchlite.rand((2,)), torchlite.randint(2, (2,))

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The augmented image."""
        fill = self._fill(img)
        _, height, width = F.get_dimensions(img)
        index, probs, signs = self.get_params(len(self.policies))
        space = _space(10, (height, width))
        space["Invert"] = (None, False)
        for i, (name, p, magnitude_bin) in enumerate(self.policies[index]):
            if probs[i].item() <= p:
                magnitudes, signed = space[name]
                magnitude = float(magnitudes[magnitude_bin]) if magnitude_bin is not None else 0.0
                if signed and signs[i].item() == 0:
                    magnitude = -magnitude
                img = _apply_op(img, name, magnitude, self.interpolation, fill)
        return img


class RandAugment(_Augment):
    """RandAugment: num_ops operations picked uniformly at random, each at the fixed
    magnitude (a bin of num_magnitude_bins)."""
    _fields = ("num_ops", "magnitude", "num_magnitude_bins", "interpolation", "fill")

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation: InterpolationMode | int = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] | None = None) -> None:
        super().__init__(interpolation, fill)
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, num_magnitude_bins

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The augmented image."""
        fill = self._fill(img)
        _, height, width = F.get_dimensions(img)
        space = {"Identity": (None, False), **_space(self.num_magnitude_bins, (height, width))}
        for _ in range(self.num_ops):
            img = self._random_op(img, space, fill, self.magnitude)
        return img


class TrivialAugmentWide(_Augment):
    """TrivialAugment (wide ranges): one operation, picked uniformly, at a uniformly random
    magnitude bin."""
    _fields = ("num_magnitude_bins", "interpolation", "fill")

    def __init__(self, num_magnitude_bins: int = 31, interpolation: InterpolationMode | int = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] | None = None) -> None:
        super().__init__(interpolation, fill)
        self.num_magnitude_bins = num_magnitude_bins

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The augmented image."""
        fill = self._fill(img)
        _, height, width = F.get_dimensions(img)
        space = {"Identity": (None, False), **_space(self.num_magnitude_bins, (height, width), wide=True)}
        return self._random_op(img, space, fill)


def _augmix_space(num_bins, image_size, all_ops):
    """AugMix's operations and magnitudes: torchvision's ranges (translations up to a third of
    the image; the colour ones only with all_ops)."""
    space = {
        "ShearX": (_linspace(0.0, 0.3, num_bins), True),
        "ShearY": (_linspace(0.0, 0.3, num_bins), True),
        "TranslateX": (_linspace(0.0, image_size[1] / 3.0, num_bins), True),
        "TranslateY": (_linspace(0.0, image_size[0] / 3.0, num_bins), True),
        "Rotate": (_linspace(0.0, 30.0, num_bins), True),
        "Posterize": ([4 - int(round(i / ((num_bins - 1) / 4))) for i in range(num_bins)], False),
        "Solarize": (_linspace(255.0, 0.0, num_bins), False),
        "AutoContrast": (None, False),
        "Equalize": (None, False),
    }
    if all_ops:
        for name in ("Brightness", "Color", "Contrast", "Sharpness"):
            space[name] = (_linspace(0.0, 0.9, num_bins), True)
    return space


class AugMix(_Augment):
    """AugMix: mixture_width chains of chain_depth random operations (1 to 3 when -1) at
    magnitude bins below severity, their results mixed with Dirichlet(alpha) weights and the
    mix blended with the original by a Beta(alpha, alpha) weight.  PIL images and uint8 or
    float tensor images (..., C, H, W), each image of a batch with its own weights."""
    _fields = ("severity", "mixture_width", "chain_depth", "alpha", "all_ops", "interpolation",
               "fill")
    _PARAMETER_MAX = 10

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1, alpha: float = 1.0,
                 all_ops: bool = True, interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
                 fill: float | Sequence[float] | None = None) -> None:
        super().__init__(interpolation, fill)
        if not 1 <= severity <= self._PARAMETER_MAX:
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got "
                             f"{severity} instead.")
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = alpha
        self.all_ops = all_ops

    def _dirichlet(self, concentration, rows):
        from ...distributions import Dirichlet
        return Dirichlet(torchlite.tensor([float(c) for c in concentration])).sample((rows,))

    def forward(self, orig_img: Tensor | Any) -> Tensor | Any:
        """The augmented image (a PIL image stays one)."""
        fill = self._fill(orig_img)
        pil = not isinstance(orig_img, Tensor)
        img = F.pil_to_tensor(orig_img) if pil else orig_img
        _, height, width = F.get_dimensions(img)
        space = _augmix_space(self._PARAMETER_MAX, (height, width), self.all_ops)
        names = list(space)
        dims = list(img.shape)
        batch = img.reshape([1] * max(4 - img.ndim, 0) + dims)
        n = batch.shape[0]
        bshape = [n] + [1] * (batch.ndim - 1)
        m = self._dirichlet([self.alpha, self.alpha], n)
        weights = self._dirichlet([self.alpha] * self.mixture_width, n) * m[:, 1].reshape(n, 1)
        mix = m[:, 0].reshape(bshape) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth if self.chain_depth > 0 \
                else int(torchlite.randint(1, 4, (1,)).item())
            for _ in range(depth):
                name = names[int(torchlite.randint(len(names), (1,)).item())]
                magnitudes, signed = space[name]
                magnitude = 0.0 if magnitudes is None else \
                    float(magnitudes[int(torchlite.randint(self.severity, (1,)).item())])
                if signed and torchlite.randint(2, (1,)).item():
                    magnitude = -magnitude
                aug = _apply_op(aug, name, magnitude, self.interpolation, fill)
            mix = mix + weights[:, i].reshape(bshape) * aug
        out = mix.reshape(dims)
        if img.dtype is torchlite.uint8:
            out = out.round().clamp(0, 255)
        out = out.to(img.dtype)
        return F.to_pil_image(out, mode=orig_img.mode) if pil else out
