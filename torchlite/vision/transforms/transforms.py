"""torchvision.transforms' classes on torchlite.  Each is a torchlite.nn.Module (so it composes
with nn.Sequential) whose forward takes a PIL image or a tensor image (..., C, H, W) and calls
the functional form.  Random parameters are drawn from torchlite's global generator
(torchlite.rand / randint / empty().uniform_), so torchlite.manual_seed makes a pipeline
reproducible -- RandomChoice and RandomOrder included (torchvision draws those two from
Python's random module)."""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from enum import Enum
from typing import TYPE_CHECKING

import torchlite
from torchlite import Tensor, nn
from . import functional as F
from .functional import InterpolationMode, _interpolation, _pair

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..._dtype import dtype

__all__ = ["Compose", "ToTensor", "PILToTensor", "ToPILImage", "ConvertImageDtype", "Normalize", "Resize",
           "CenterCrop", "Pad", "Lambda", "RandomApply", "RandomChoice", "RandomOrder", "RandomCrop",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomPerspective", "RandomResizedCrop", "FiveCrop",
           "TenCrop", "LinearTransformation", "ColorJitter", "RandomRotation", "RandomAffine", "Grayscale",
           "RandomGrayscale", "RandomErasing", "GaussianBlur", "RandomInvert", "RandomPosterize", "RandomSolarize",
           "RandomAdjustSharpness", "RandomAutocontrast", "RandomEqualize", "ElasticTransform",
           "InterpolationMode"]


# ---- draws from torchlite's global generator -------------------------------------------------
def _uniform(lo, hi):
    return float(torchlite.empty(1).uniform_(float(lo), float(hi)).item())


def _randint(lo, hi):
    return int(torchlite.randint(lo, hi, (1,)).item())


def _happens(p):
    return torchlite.rand(1).item() < p


def _fmt(value):
    if isinstance(value, Enum):
        return value.value if isinstance(value, InterpolationMode) else str(value)
    return repr(value)


class _Transform(nn.Module):
    """Base: a Module whose repr lists the attributes named in _fields."""
    _fields = ()

    def extra_repr(self) -> str:
        """The settings in the repr: name=value for each of _fields."""
        return ", ".join(f"{k}={_fmt(getattr(self, k))}" for k in self._fields)


def _check_p(p):
    if not isinstance(p, numbers.Number) or not 0.0 <= p <= 1.0:
        raise ValueError("probability should be between 0 and 1")
    return p


def _sequence(x, name, sizes):
    """x as a list, after checking that it is a sequence of one of the allowed lengths."""
    if not isinstance(x, Sequence) or isinstance(x, str):
        raise TypeError(f"{name} should be a sequence of length {' or '.join(map(str, sizes))}.")
    if len(x) not in sizes:
        raise ValueError(f"{name} should be a sequence of length {' or '.join(map(str, sizes))}.")
    return [float(v) for v in x]


def _angle_range(x, name, sizes=(2,)):
    """A number d as [-d, d]; else a checked sequence."""
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-float(x), float(x)]
    return _sequence(x, name, sizes)


def _check_fill(fill):
    if fill is None:
        return 0
    if not isinstance(fill, (Sequence, numbers.Number)) or isinstance(fill, str):
        raise TypeError("Fill should be either a sequence or a number.")
    return fill


def _fill_for(img, fill):
    """The fill a warp of img takes: for tensors one float per channel."""
    if not isinstance(img, Tensor) or fill is None:
        return fill
    if isinstance(fill, numbers.Number):
        return [float(fill)] * F.get_dimensions(img)[0]
    return [float(f) for f in fill]


# ---- composition ------------------------------------------------------------------------------
class Compose(_Transform):
    """Apply the transforms one after another."""

    def __init__(self, transforms: Sequence[Callable[..., Any]]) -> None:
        super().__init__()
        self.transforms = transforms

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The image after every transform."""
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class Lambda(_Transform):
    """A user function as a transform."""

    def __init__(self, lambd: Callable[[Any], Any]) -> None:
        super().__init__()
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """lambd(img)."""
        return self.lambd(img)


class _RandomTransforms(_Transform):
    def __init__(self, transforms: Sequence[Callable[..., Any]]) -> None:
        super().__init__()
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class RandomApply(_RandomTransforms):
    """Apply the whole list of transforms with probability p."""

    def __init__(self, transforms: Sequence[Callable[..., Any]], p: float = 0.5) -> None:
        super().__init__(transforms)
        self.p = p

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """img through every transform, or untouched."""
        if self.p < torchlite.rand(1).item():
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        return f"{type(self).__name__}(\n    p={self.p}" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class RandomChoice(_RandomTransforms):
    """Apply one transform picked at random (weights p, default uniform)."""

    def __init__(self, transforms: Sequence[Callable[..., Any]], p: Sequence[float] | None = None) -> None:
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def forward(self, *args) -> Any:
        """The picked transform applied to the input(s)."""
        if self.p is None:
            idx = _randint(0, len(self.transforms))
        else:
            idx = int(torchlite.multinomial(torchlite.tensor([float(v) for v in self.p]), 1).item())
        return self.transforms[idx](*args)

    def __repr__(self) -> str:
        return super().__repr__()[:-2] + f"\n    p={self.p}\n)"


class RandomOrder(_RandomTransforms):
    """Apply the transforms in a random order."""

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """img through every transform, shuffled."""
        for i in torchlite.randperm(len(self.transforms)).tolist():
            img = self.transforms[i](img)
        return img


# ---- conversion --------------------------------------------------------------------------------
class ToTensor(_Transform):
    """PIL image or HWC ndarray -> CHW tensor, uint8 scaled to float [0, 1] (F.to_tensor)."""

    def forward(self, pic: Any) -> Tensor:
        """F.to_tensor(pic)."""
        return F.to_tensor(pic)


class PILToTensor(_Transform):
    """PIL image -> CHW tensor of the same values and dtype (F.pil_to_tensor)."""

    def forward(self, pic: Any) -> Tensor:
        """F.pil_to_tensor(pic)."""
        return F.pil_to_tensor(pic)


class ToPILImage(_Transform):
    """CHW tensor or HWC ndarray -> PIL image (F.to_pil_image)."""
    _fields = ("mode",)

    def __init__(self, mode: str | None = None) -> None:
        super().__init__()
        self.mode = mode

    def forward(self, pic: Tensor | Any) -> Any:
        """F.to_pil_image(pic, mode)."""
        return F.to_pil_image(pic, self.mode)


class ConvertImageDtype(_Transform):
    """Convert a tensor image to dtype, rescaling the values (F.convert_image_dtype)."""
    _fields = ("dtype",)

    def __init__(self, dtype: dtype) -> None:
        super().__init__()
        self.dtype = dtype

    def forward(self, image: Tensor) -> Tensor:
        """F.convert_image_dtype(image, dtype)."""
        return F.convert_image_dtype(image, self.dtype)


class Normalize(_Transform):
    """(img - mean) / std channel-wise on a float tensor image."""
    _fields = ("mean", "std")

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace

    def forward(self, tensor: Tensor) -> Tensor:
        """F.normalize(tensor, mean, std, inplace)."""
        return F.normalize(tensor, self.mean, self.std, self.inplace)


class LinearTransformation(_Transform):
    """Flatten a tensor image, subtract mean_vector, multiply by the square
    transformation_matrix (whitening), and give back the original shape."""

    def __init__(self, transformation_matrix: Tensor, mean_vector: Tensor) -> None:
        super().__init__()
        if transformation_matrix.ndim != 2 or transformation_matrix.shape[0] != transformation_matrix.shape[1]:
            raise ValueError("transformation_matrix should be square. Got "
                             f"{tuple(transformation_matrix.shape)} rectangular matrix.")
        if mean_vector.shape[0] != transformation_matrix.shape[0]:
            raise ValueError(f"mean_vector should have the same length {mean_vector.shape[0]} as any one of the "
                             f"dimensions of the transformation_matrix [{tuple(transformation_matrix.shape)}]")
        self.transformation_matrix, self.mean_vector = transformation_matrix, mean_vector

    def forward(self, tensor: Tensor) -> Tensor:
        """The transformed tensor, same shape."""
        shape = tuple(tensor.shape)
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError("Input tensor and transformation matrix have incompatible shape."
                             f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != {self.transformation_matrix.shape[0]}")
        flat = tensor.reshape(-1, n) - self.mean_vector
        return torchlite.matmul(flat, self.transformation_matrix).reshape(shape)


# ---- geometry ----------------------------------------------------------------------------------
class Resize(_Transform):
    """Resize to size: an int sets the shorter edge (aspect ratio kept), (h, w) both; see
    F.resize for max_size and antialias."""
    _fields = ("size", "interpolation", "max_size", "antialias")

    def __init__(self, size: int | Sequence[int] | None,
                 interpolation: InterpolationMode | int = InterpolationMode.BILINEAR, max_size: int | None = None,
                 antialias: bool | None = True) -> None:
        super().__init__()
        if size is not None and not isinstance(size, (int, Sequence)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = _interpolation(interpolation)

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """F.resize with the stored settings."""
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)


class CenterCrop(_Transform):
    """The centred size window (padded with 0 where the image is smaller)."""
    _fields = ("size",)

    def __init__(self, size: int | Sequence[int]) -> None:
        super().__init__()
        self.size = _pair(size)

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """F.center_crop(img, size)."""
        return F.center_crop(img, self.size)


class Pad(_Transform):
    """Pad every border (see F.pad for padding, fill and padding_mode)."""
    _fields = ("padding", "fill", "padding_mode")

    def __init__(self, padding: int | Sequence[int], fill: float | Sequence[float] = 0,
                 padding_mode: str = "constant") -> None:
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, Sequence) and len(padding) not in (1, 2, 4):
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element "
                             "tuple")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """F.pad with the stored settings."""
        return F.pad(img, self.padding, self.fill, self.padding_mode)


class RandomCrop(_Transform):
    """A size window at a random place, after optional padding (and padding up to size with
    pad_if_needed)."""
    _fields = ("size", "padding")

    def __init__(self, size: int | Sequence[int], padding: int | Sequence[int] | None = None,
                 pad_if_needed: bool = False, fill: float | Sequence[float] = 0,
                 padding_mode: str = "constant") -> None:
        super().__init__()
        self.size = _pair(size)
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    @staticmethod
    def get_params(img: Tensor | Any, output_size: tuple[int, int]) -> tuple[int, int, int, int]:
        """(top, left, height, width) of a random output_size window of img."""
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if (h, w) == (th, tw):
            return 0, 0, h, w
        return _randint(0, h - th + 1), _randint(0, w - tw + 1), th, tw

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The padded image's random window."""
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, h, w = F.get_dimensions(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, [self.size[1] - w, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, [0, self.size[0] - h], self.fill, self.padding_mode)
        return F.crop(img, *self.get_params(img, self.size))


class RandomHorizontalFlip(_Transform):
    """Mirror left-right with probability p."""
    _fields = ("p",)

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = p

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """img, mirrored or not."""
        return F.hflip(img) if _happens(self.p) else img


class RandomVerticalFlip(_Transform):
    """Mirror top-bottom with probability p."""
    _fields = ("p",)

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = p

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """img, mirrored or not."""
        return F.vflip(img) if _happens(self.p) else img


def _check_range(value, name):
    if not isinstance(value, Sequence):
        raise TypeError(f"{name} should be a sequence")
    if value[0] > value[1]:
        warnings.warn(f"{name} should be of kind (min, max)")
    return tuple(value)


class RandomResizedCrop(_Transform):
    """A random window covering a `scale` fraction of the area with aspect ratio in `ratio`
    (log-uniform), resized to size -- Inception-style cropping."""
    _fields = ("size", "scale", "ratio", "interpolation", "antialias")

    def __init__(self, size: int | Sequence[int], scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
                 interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        self.size = _pair(size)
        self.scale, self.ratio = _check_range(scale, "Scale"), _check_range(ratio, "Ratio")
        self.interpolation, self.antialias = _interpolation(interpolation), antialias

    @staticmethod
    def get_params(img: Tensor | Any, scale: Sequence[float], ratio: Sequence[float]) -> tuple[int, int, int, int]:
        """(top, left, height, width): ten tries at a random window, else the centre crop of
        the ratio range nearest the image's."""
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
        for _ in range(10):
            target = area * _uniform(scale[0], scale[1])
            aspect = math.exp(_uniform(log_lo, log_hi))
            w, h = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
            if 0 < w <= width and 0 < h <= height:
                return _randint(0, height - h + 1), _randint(0, width - w + 1), h, w
        in_ratio = width / height
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The random window, resized."""
        top, left, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, top, left, h, w, self.size, self.interpolation, antialias=self.antialias)


class FiveCrop(_Transform):
    """The four corner crops and the centre crop (a tuple of five images)."""
    _fields = ("size",)

    def __init__(self, size: int | Sequence[int]) -> None:
        super().__init__()
        self.size = _pair(size)

    def forward(self, img: Tensor | Any) -> tuple[Tensor | Any, Tensor | Any, Tensor | Any, Tensor | Any, Tensor | Any]:
        """F.five_crop(img, size)."""
        return F.five_crop(img, self.size)


class TenCrop(_Transform):
    """FiveCrop of the image and of its mirror (a tuple of ten images)."""
    _fields = ("size", "vertical_flip")

    def __init__(self, size: int | Sequence[int], vertical_flip: bool = False) -> None:
        super().__init__()
        self.size, self.vertical_flip = _pair(size), vertical_flip

    def forward(self, img: Tensor | Any) -> tuple[Tensor | Any, ...]:
        """F.ten_crop(img, size, vertical_flip)."""
        return F.ten_crop(img, self.size, self.vertical_flip)


class RandomPerspective(_Transform):
    """With probability p, move each corner inwards by up to distortion_scale of half the
    image and warp accordingly."""
    _fields = ("p",)

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5,
                 interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
                 fill: float | Sequence[float] | None = 0) -> None:
        super().__init__()
        self.distortion_scale, self.p = distortion_scale, p
        self.interpolation, self.fill = _interpolation(interpolation), _check_fill(fill)

    @staticmethod
    def get_params(width: int, height: int, distortion_scale: float) -> tuple[list[list[int]], list[list[int]]]:
        """(startpoints, endpoints): the image corners and their random new places."""
        dx, dy = int(distortion_scale * (width // 2)), int(distortion_scale * (height // 2))
        top_left = [_randint(0, dx + 1), _randint(0, dy + 1)]
        top_right = [_randint(width - dx - 1, width), _randint(0, dy + 1)]
        bottom_right = [_randint(width - dx - 1, width), _randint(height - dy - 1, height)]
        bottom_left = [_randint(0, dx + 1), _randint(height - dy - 1, height)]
        start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return start, [top_left, top_right, bottom_right, bottom_left]

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """img, warped or not."""
        if not _happens(self.p):
            return img
        _, h, w = F.get_dimensions(img)
        start, end = self.get_params(w, h, self.distortion_scale)
        return F.perspective(img, start, end, self.interpolation, _fill_for(img, self.fill))


class RandomRotation(_Transform):
    """Rotate by an angle drawn uniformly from degrees ((-d, d) for a number d)."""
    _fields = ("degrees", "interpolation", "expand", "fill")

    def __init__(self, degrees: float | Sequence[float],
                 interpolation: InterpolationMode | int = InterpolationMode.NEAREST, expand: bool = False,
                 center: Sequence[float] | None = None, fill: float | Sequence[float] | None = 0) -> None:
        super().__init__()
        self.degrees = _angle_range(degrees, "degrees")
        if center is not None:
            _sequence(center, "center", (2,))
        self.interpolation, self.expand, self.center = _interpolation(interpolation), expand, center
        self.fill = _check_fill(fill)

    @staticmethod
    def get_params(degrees: Sequence[float]) -> float:
        """A random angle in [degrees[0], degrees[1]]."""
        return _uniform(degrees[0], degrees[1])

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The rotated image."""
        return F.rotate(img, self.get_params(self.degrees), self.interpolation, self.expand, self.center,
                        _fill_for(img, self.fill))


class RandomAffine(_Transform):
    """A random affine map: angle from degrees, translation up to translate * size, scale from
    the scale range, shear (degrees) from shear -- each left out when None."""
    _fields = ("degrees", "translate", "scale", "shear", "interpolation", "fill")

    def __init__(self, degrees: float | Sequence[float], translate: Sequence[float] | None = None,
                 scale: Sequence[float] | None = None, shear: float | Sequence[float] | None = None,
                 interpolation: InterpolationMode | int = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] | None = 0, center: Sequence[float] | None = None) -> None:
        super().__init__()
        self.degrees = _angle_range(degrees, "degrees")
        if translate is not None:
            translate = _sequence(translate, "translate", (2,))
            if not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translation values should be between 0 and 1")
        if scale is not None:
            scale = _sequence(scale, "scale", (2,))
            if any(s <= 0 for s in scale):
                raise ValueError("scale values should be positive")
        if shear is not None:
            shear = _angle_range(shear, "shear", (2, 4))
        if center is not None:
            _sequence(center, "center", (2,))
        self.translate, self.scale, self.shear, self.center = translate, scale, shear, center
        self.interpolation, self.fill = _interpolation(interpolation), _check_fill(fill)

    @staticmethod
    def get_params(degrees: Sequence[float], translate: Sequence[float] | None, scale_ranges: Sequence[float] | None,
                   shears: Sequence[float] | None,
                   img_size: Sequence[int]) -> tuple[float, tuple[int, int], float, tuple[float, float]]:
        """(angle, (tx, ty), scale, (shear_x, shear_y)) for an image of img_size [w, h]."""
        angle = _uniform(degrees[0], degrees[1])
        if translate is not None:
            max_dx, max_dy = translate[0] * img_size[0], translate[1] * img_size[1]
            translations = (int(round(_uniform(-max_dx, max_dx))), int(round(_uniform(-max_dy, max_dy))))
        else:
            translations = (0, 0)
        scale = _uniform(scale_ranges[0], scale_ranges[1]) if scale_ranges is not None else 1.0
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The warped image."""
        _, h, w = F.get_dimensions(img)
        angle, translations, scale, shear = self.get_params(self.degrees, self.translate, self.scale, self.shear,
                                                            [w, h])
        return F.affine(img, angle, list(translations), scale, list(shear), self.interpolation,
                        _fill_for(img, self.fill), self.center)


# ---- colour ----------------------------------------------------------------------------------
class ColorJitter(_Transform):
    """Random brightness, contrast, saturation and hue changes in a random order.  A number v
    means factors in [max(0, 1 - v), 1 + v] (hue: [-v, v]); a pair is the range itself."""
    _fields = ("brightness", "contrast", "saturation", "hue")

    def __init__(self, brightness: float | Sequence[float] = 0, contrast: float | Sequence[float] = 0,
                 saturation: float | Sequence[float] = 0, hue: float | Sequence[float] = 0) -> None:
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        return None if value[0] == value[1] == center else tuple(value)

    @staticmethod
    def get_params(brightness: Sequence[float] | None, contrast: Sequence[float] | None,
                   saturation: Sequence[float] | None,
                   hue: Sequence[float] | None
                   ) -> tuple[Tensor, float | None, float | None, float | None, float | None]:
        """(order, brightness, contrast, saturation, hue): a random permutation of the four
        adjustments and a factor for each range (None for a range that is None)."""
        order = torchlite.randperm(4)
        factors = [None if r is None else _uniform(r[0], r[1]) for r in (brightness, contrast, saturation, hue)]
        return (order, *factors)

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The jittered image."""
        order, *factors = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        adjust = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
        for i in order.tolist():
            if factors[i] is not None:
                img = adjust[i](img, factors[i])
        return img


class Grayscale(_Transform):
    """Convert to grayscale with 1 or 3 output channels."""
    _fields = ("num_output_channels",)

    def __init__(self, num_output_channels: int = 1) -> None:
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """F.rgb_to_grayscale(img, num_output_channels)."""
        return F.rgb_to_grayscale(img, self.num_output_channels)


class RandomGrayscale(_Transform):
    """Convert to grayscale with probability p, keeping the number of channels."""
    _fields = ("p",)

    def __init__(self, p: float = 0.1) -> None:
        super().__init__()
        self.p = p

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """img, gray or not."""
        channels = F.get_dimensions(img)[0]
        return F.rgb_to_grayscale(img, channels) if _happens(self.p) else img


class GaussianBlur(_Transform):
    """Gaussian blur with sigma drawn uniformly from the sigma range (or fixed)."""
    _fields = ("kernel_size", "sigma")

    def __init__(self, kernel_size: int | Sequence[int], sigma: float | Sequence[float] = (0.1, 2.0)) -> None:
        super().__init__()
        self.kernel_size = _pair(kernel_size, "kernel size")
        for k in self.kernel_size:
            if k <= 0 or k % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (float(sigma), float(sigma))
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = tuple(sigma)

    @staticmethod
    def get_params(sigma_min: float, sigma_max: float) -> float:
        """A sigma drawn uniformly from [sigma_min, sigma_max]."""
        return _uniform(sigma_min, sigma_max)

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The blurred image."""
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, list(self.kernel_size), [sigma, sigma])


class ElasticTransform(_Transform):
    """Elastic deformation (Simard et al. 2003), as torchvision's: per pixel, uniform noise in
    [-1, 1] for each axis, blurred by a Gaussian of sigma (kernel 8 sigma + 1, made odd) and
    scaled by alpha, moves where the pixel is sampled from.  alpha, sigma: a number or one
    per axis (x, y)."""
    _fields = ("alpha", "sigma", "interpolation", "fill")

    def __init__(self, alpha: float | Sequence[float] = 50.0, sigma: float | Sequence[float] = 5.0,
                 interpolation: InterpolationMode | int | None = None, fill: float | Sequence[float] = 0) -> None:
        super().__init__()
        self.alpha = self._pair_param(alpha, "alpha")
        self.sigma = self._pair_param(sigma, "sigma")
        self.interpolation = F.InterpolationMode.BILINEAR if interpolation is None \
            else F._interpolation(interpolation)
        if isinstance(fill, (int, float)):
            fill = [float(fill)]
        elif isinstance(fill, (list, tuple)):
            fill = [float(f) for f in fill]
        else:
            raise TypeError(f"fill should be int or float or a list or tuple of them. Got {type(fill)}")
        self.fill = fill

    @staticmethod
    def _pair_param(v, name):
        if not isinstance(v, (int, float, list, tuple)):
            raise TypeError(f"{name} should be float or a sequence of floats. Got {type(v)}")
        v = [float(v)] if isinstance(v, (int, float)) else [float(x) for x in v]
        if len(v) not in (1, 2):
            raise ValueError(f"If {name} is a sequence its length should be 1 or 2. Got {len(v)}")
        return v * 2 if len(v) == 1 else v

    @staticmethod
    def get_params(alpha: Sequence[float], sigma: Sequence[float], size: Sequence[int]) -> Tensor:
        """A (1, H, W, 2) displacement for an image of size [H, W]: torchvision's recipe (dx
        scaled by alpha / H and dy by alpha / W, its quirk kept), drawn from torchlite's
        generator."""
        fields = []
        for k in range(2):
            d = torchlite.rand([1, 1] + list(size)) * 2 - 1
            if sigma[k] > 0.0:
                ks = int(8 * sigma[k] + 1)
                ks += ks % 2 == 0
                d = F.gaussian_blur(d, [ks, ks], [sigma[k], sigma[k]])
            fields.append(d * alpha[k] / size[k])
        return torchlite.cat(fields, 1).permute(0, 2, 3, 1)

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """The deformed image."""
        _, height, width = F.get_dimensions(img)
        displacement = self.get_params(self.alpha, self.sigma, [height, width])
        return F.elastic_transform(img, displacement, self.interpolation, self.fill)


class RandomErasing(_Transform):
    """With probability p, erase a random rectangle of a tensor image (area fraction from
    scale, aspect ratio from ratio) to value: a number, one per channel, or 'random' (normal
    noise).  Random Erasing, Zhong et al. 2017."""
    _fields = ("p", "scale", "ratio", "value", "inplace")

    def __init__(self, p: float = 0.5, scale: Sequence[float] = (0.02, 0.33), ratio: Sequence[float] = (0.3, 3.3),
                 value: float | str | Sequence[float] = 0, inplace: bool = False) -> None:
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        self.p = _check_p(p)
        self.scale, self.ratio, self.value, self.inplace = scale, ratio, value, inplace

    @staticmethod
    def get_params(img: Tensor, scale: Sequence[float], ratio: Sequence[float],
                   value: list[float] | None = None) -> tuple[int, int, int, int, Tensor]:
        """(i, j, h, w, v): the rectangle and what goes in it (normal noise for value None);
        after ten misses, the whole image and the image itself (nothing erased)."""
        c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = img_h * img_w
        log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
        for _ in range(10):
            erase_area = area * _uniform(scale[0], scale[1])
            aspect = math.exp(_uniform(log_lo, log_hi))
            h, w = int(round(math.sqrt(erase_area * aspect))), int(round(math.sqrt(erase_area / aspect)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = torchlite.empty([c, h, w], dtype=torchlite.float32).normal_()
            else:
                v = torchlite.tensor(value)[:, None, None]
            return _randint(0, img_h - h + 1), _randint(0, img_w - w + 1), h, w, v
        return 0, 0, img_h, img_w, img

    def forward(self, img: Tensor) -> Tensor:
        """img, erased or not."""
        if not _happens(self.p):
            return img
        if isinstance(self.value, numbers.Number):
            value = [float(self.value)]
        elif isinstance(self.value, str):
            value = None
        else:
            value = [float(v) for v in self.value]
        if value is not None and len(value) not in (1, img.shape[-3]):
            raise ValueError("If value is a sequence, it should have either a single value or "
                             f"{img.shape[-3]} (number of input channels)")
        i, j, h, w, v = self.get_params(img, self.scale, self.ratio, value)
        if v is not img:
            v = v.to(device=img.device, dtype=img.dtype)
        return F.erase(img, i, j, h, w, v, self.inplace)


class _RandomOp(_Transform):
    """Apply self._op with probability p."""
    _fields = ("p",)

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = p

    def forward(self, img: Tensor | Any) -> Tensor | Any:
        """img, changed or not."""
        return self._op(img) if _happens(self.p) else img


class RandomInvert(_RandomOp):
    """Invert the colours with probability p."""

    def _op(self, img):
        return F.invert(img)


class RandomAutocontrast(_RandomOp):
    """Autocontrast with probability p."""

    def _op(self, img):
        return F.autocontrast(img)


class RandomEqualize(_RandomOp):
    """Histogram-equalize with probability p."""

    def _op(self, img):
        return F.equalize(img)


class RandomPosterize(_RandomOp):
    """Posterize to `bits` bits with probability p."""
    _fields = ("bits", "p")

    def __init__(self, bits: int, p: float = 0.5) -> None:
        super().__init__(p)
        self.bits = bits

    def _op(self, img):
        return F.posterize(img, self.bits)


class RandomSolarize(_RandomOp):
    """Solarize above threshold with probability p."""
    _fields = ("threshold", "p")

    def __init__(self, threshold: float, p: float = 0.5) -> None:
        super().__init__(p)
        self.threshold = threshold

    def _op(self, img):
        return F.solarize(img, self.threshold)


class RandomAdjustSharpness(_RandomOp):
    """Adjust the sharpness by sharpness_factor with probability p."""
    _fields = ("sharpness_factor", "p")

    def __init__(self, sharpness_factor: float, p: float = 0.5) -> None:
        super().__init__(p)
        self.sharpness_factor = sharpness_factor

    def _op(self, img):
        return F.adjust_sharpness(img, self.sharpness_factor)
