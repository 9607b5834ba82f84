"""torchvision.transforms.functional on torchlite: every function takes a PIL image or a torchlite
tensor image (..., C, H, W) -- float in [0, 1] or integer in [0, max] -- and gives back the same
kind.  PIL images go through Pillow (_functional_pil), tensors through torchlite ops
(_functional_tensor)."""
from __future__ import annotations

import math
import numbers
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

import torchlite
from torchlite import Tensor
from .._pil import pil_image
from . import _functional_pil as _FP, _functional_tensor as _FT

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..._dtype import dtype

__all__ = ["InterpolationMode", "get_dimensions", "get_image_size", "get_image_num_channels", "to_tensor",
           "pil_to_tensor", "to_pil_image", "convert_image_dtype", "normalize", "resize", "crop", "center_crop",
           "resized_crop", "hflip", "vflip", "pad", "five_crop", "ten_crop", "rotate", "affine", "perspective",
           "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_gamma",
           "adjust_sharpness", "rgb_to_grayscale", "to_grayscale", "gaussian_blur", "erase", "invert", "posterize",
           "solarize", "autocontrast", "equalize", "elastic_transform"]


class InterpolationMode(Enum):
    """How resize and the geometric transforms sample: tensors support NEAREST, NEAREST_EXACT,
    BILINEAR and BICUBIC (rotate / affine / perspective: NEAREST and BILINEAR); PIL images
    every mode Pillow has."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# Pillow's resampling constants
_PIL_FILTER = {"nearest": 0, "nearest-exact": 0, "bilinear": 2, "bicubic": 3, "box": 4, "hamming": 5, "lanczos": 1}
_FROM_PIL = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
             4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}


def _interpolation(mode):
    """An InterpolationMode from an InterpolationMode or a Pillow resampling constant."""
    if isinstance(mode, InterpolationMode):
        return mode
    if isinstance(mode, int) and not isinstance(mode, bool) and mode in _FROM_PIL:
        return _FROM_PIL[mode]
    raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow integer "
                    f"constant, got {mode!r}")


def _is_tensor(img):
    return isinstance(img, Tensor)


# ---- sizes and conversions ----------------------------------------------------------------------
def get_dimensions(img: Tensor | Any) -> list[int]:
    """[channels, height, width] of a PIL image or tensor image."""
    return _FT.get_dimensions(img) if _is_tensor(img) else _FP.get_dimensions(img)


def get_image_size(img: Tensor | Any) -> list[int]:
    """[width, height] of the image."""
    _, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img: Tensor | Any) -> int:
    """The number of channels (bands) of the image."""
    return get_dimensions(img)[0]


def _array_to_tensor(arr):
    """A torchlite tensor of an HWC or HW array, as CHW (uint16, which torchlite lacks, as int32)."""
    arr = np.asarray(arr)
    if arr.dtype == np.uint16:
        arr = arr.astype(np.int32)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return torchlite.from_numpy(np.array(arr.transpose(2, 0, 1), order="C"))   # PIL's memory is read-only


def to_tensor(pic: Any) -> Tensor:
    """A PIL image or HWC ndarray as a CHW tensor; uint8 data (and mode '1') become float in
    [0, 1] (the default dtype), other dtypes keep their values."""
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic
    elif _FP.is_pil_image(pic):
        arr = np.array(pic)
        if pic.mode == "1":
            arr = arr.astype(np.uint8) * 255
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    img = _array_to_tensor(arr)
    return img.to(torchlite.get_default_dtype()) / 255 if img.dtype == torchlite.uint8 else img


def pil_to_tensor(pic: Any) -> Tensor:
    """A PIL image as a CHW tensor of its own pixel values (no scaling)."""
    _FP.assert_pil(pic)
    return _array_to_tensor(np.array(pic))


_MODES_BY_CHANNELS = {1: ("L", "I;16", "I", "F"), 2: ("LA",), 3: ("RGB", "YCbCr", "HSV"), 4: ("RGBA", "CMYK", "RGBX")}
_GRAY_MODE = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16", np.dtype(np.uint16): "I;16",
              np.dtype(np.int32): "I", np.dtype(np.float32): "F"}


def to_pil_image(pic: Tensor | np.ndarray, mode: str | None = None) -> Any:
    """A CHW tensor or HWC ndarray as a PIL image.  Float tensors are taken as [0, 1] and scaled
    to uint8 unless mode is 'F'; without a mode, it follows from channels and dtype (L, I;16, I,
    F; LA; RGB; RGBA)."""
    if _is_tensor(pic):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = pic.unsqueeze(0)
        if pic.shape[-3] > 4:
            raise ValueError(f"pic should not have > 4 channels. Got {pic.shape[-3]} channels.")
        if pic.dtype.is_floating_point and mode != "F":
            pic = (pic * 255).to(torchlite.uint8)
        arr = pic.detach().cpu().numpy().transpose(1, 2, 0)
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic[:, :, None] if pic.ndim == 2 else pic
        if np.issubdtype(arr.dtype, np.floating) and mode != "F":   # [0, 1] floats, as tensors
            arr = (arr * 255).astype(np.uint8)
        if arr.shape[-1] > 4:
            raise ValueError(f"pic should not have > 4 channels. Got {arr.shape[-1]} channels.")
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    channels = arr.shape[-1]
    if channels == 1:
        arr = arr[:, :, 0]
        expected = _GRAY_MODE.get(arr.dtype)
        if mode is not None and mode != expected:
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {arr.dtype}. Should be {expected}")
        mode = expected
        if mode == "I;16":
            arr = arr.astype(np.uint16)
    else:
        if mode is not None and mode not in _MODES_BY_CHANNELS[channels]:
            raise ValueError(f"Only modes {list(_MODES_BY_CHANNELS[channels])} are supported for "
                             f"{channels}D inputs")
        if mode is None and arr.dtype == np.uint8:
            mode = _MODES_BY_CHANNELS[channels][0]
    if mode is None:
        raise TypeError(f"Input type {arr.dtype} is not supported")
    arr = np.ascontiguousarray(arr)
    image = pil_image().fromarray(arr)
    return image if image.mode == mode else pil_image().fromarray(arr, mode=mode)


def convert_image_dtype(image: Tensor, dtype: dtype = torchlite.float32) -> Tensor:
    """Convert a tensor image to dtype, rescaling its values (float images are [0, 1], integer
    images [0, dtype max]; float -> int maps [0, 1] onto equal-width bins)."""
    return _FT.convert_image_dtype(image, dtype)


def normalize(tensor: Tensor, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> Tensor:
    """(tensor - mean) / std channel-wise on a float tensor image (..., C, H, W)."""
    if not _is_tensor(tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.dtype.is_floating_point:
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tuple(tensor.shape)}")
    mean, std = _normalize_constants(mean, std, tensor.dtype, tensor.device)
    if not inplace:
        tensor = tensor.clone()
    return tensor.sub_(mean).div_(std)


def _normalize_constants(mean, std, dtype, device):
    """mean and std as tensors of dtype on device, (C,) sequences shaped (C, 1, 1); checked.
    A pipeline normalises every image with the same numbers, so constants given as tuples or
    lists of numbers are converted once (the last few kept; the tensors are never written)."""
    key = None
    if isinstance(mean, (tuple, list)) and isinstance(std, (tuple, list)) \
            and all(type(v) in (int, float) for v in (*mean, *std)):
        key = (tuple((v, math.copysign(1.0, v)) for v in (*mean, *std)), len(mean), dtype,
               str(device))                        # -0.0 is not 0.0 here
        hit = _NORMALIZE_CACHE.get(key)
        if hit is not None:
            return hit
    mean = torchlite.as_tensor(mean, dtype=dtype, device=device)
    std = torchlite.as_tensor(std, dtype=dtype, device=device)
    if bool((std == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {dtype}, leading to division by zero.")
    if mean.ndim == 1:
        mean = mean.reshape(-1, 1, 1)
    if std.ndim == 1:
        std = std.reshape(-1, 1, 1)
    if key is not None:
        if len(_NORMALIZE_CACHE) >= 16:
            _NORMALIZE_CACHE.clear()
        _NORMALIZE_CACHE[key] = (mean, std)
    return mean, std


_NORMALIZE_CACHE = {}


# ---- geometry ----------------------------------------------------------------------------------
def _resized_size(h, w, size, max_size):
    """[new_h, new_w]: size [h, w] as given, or [s] for the shorter edge (the longer one keeps
    the aspect ratio), capped by max_size; size None: the longer edge becomes max_size."""
    if size is not None and len(size) == 2:
        return [int(size[0]), int(size[1])]
    short, long = min(h, w), max(h, w)
    if size is None:
        new_short, new_long = int(max_size * short / long), max_size
    else:
        new_short, new_long = int(size[0]), int(int(size[0]) * long / short)
        if max_size is not None:
            if max_size <= new_short:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the "
                                 f"smaller edge size = {list(size)}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
    return [new_long, new_short] if w <= h else [new_short, new_long]


def resize(img: Tensor | Any, size: int | Sequence[int] | None,
           interpolation: InterpolationMode | int = InterpolationMode.BILINEAR, max_size: int | None = None,
           antialias: bool | None = True) -> Tensor | Any:
    """Resize to size: an int (or [s]) sets the shorter edge and keeps the aspect ratio, (h, w)
    sets both; max_size caps the longer edge.  Tensors: antialias applies to BILINEAR and BICUBIC
    downscaling (PIL always antialiases)."""
    interpolation = _interpolation(interpolation)
    if isinstance(size, int) and not isinstance(size, bool):
        size = [size]
    if size is not None and not isinstance(size, (list, tuple)):
        raise TypeError(f"Size should be int or sequence. Got {type(size)}")
    if size is not None and len(size) not in (1, 2):
        raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a {len(size)} element tuple/list")
    if max_size is not None and size is not None and len(size) != 1:
        raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, i.e. size "
                         "should be an int or a sequence of length 1 in torchscript mode.")
    if size is None and max_size is None:
        raise ValueError("size can only be None if max_size is given")
    _, h, w = get_dimensions(img)
    out = _resized_size(h, w, size, max_size)
    if out == [h, w]:
        return img
    if _is_tensor(img):
        return _FT.resize(img, out, interpolation.value, antialias=bool(antialias))
    return _FP.resize(img, out, _PIL_FILTER[interpolation.value])


def crop(img: Tensor | Any, top: int, left: int, height: int, width: int) -> Tensor | Any:
    """The height x width window whose top-left corner is (top, left); outside the image is 0."""
    return _FT.crop(img, top, left, height, width) if _is_tensor(img) else _FP.crop(img, top, left, height, width)


def _pair(size, what="size"):
    """(h, w) from an int, [s] or (h, w)."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (list, tuple)) and len(size) == 1:
        return int(size[0]), int(size[0])
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise ValueError(f"Please provide only two dimensions (h, w) for {what}.")
    return int(size[0]), int(size[1])


def center_crop(img: Tensor | Any, output_size: int | Sequence[int]) -> Tensor | Any:
    """The centred output_size window; an image smaller than it is padded with 0 around."""
    ch, cw = _pair(output_size, "output_size")
    _, h, w = get_dimensions(img)
    top = -((ch - h) // 2) if ch > h else int(round((h - ch) / 2.0))
    left = -((cw - w) // 2) if cw > w else int(round((w - cw) / 2.0))
    return crop(img, top, left, ch, cw)


def resized_crop(img: Tensor | Any, top: int, left: int, height: int, width: int, size: int | Sequence[int],
                 interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> Tensor | Any:
    """crop, then resize to size."""
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img: Tensor | Any) -> Tensor | Any:
    """Mirror left-right."""
    return _FT.hflip(img) if _is_tensor(img) else _FP.hflip(img)


def vflip(img: Tensor | Any) -> Tensor | Any:
    """Mirror top-bottom."""
    return _FT.vflip(img) if _is_tensor(img) else _FP.vflip(img)


_PADDING_MODES = ("constant", "edge", "reflect", "symmetric")


def _padding_ltrb(padding):
    """[left, top, right, bottom] from an int, [p], [left/right, top/bottom] or 4 values."""
    if not isinstance(padding, (numbers.Number, list, tuple)):
        raise TypeError("Got inappropriate padding arg")
    if isinstance(padding, numbers.Number):
        padding = [padding]
    if len(padding) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    padding = [int(p) for p in padding]
    return padding * 4 if len(padding) == 1 else padding * 2 if len(padding) == 2 else padding


def pad(img: Tensor | Any, padding: int | Sequence[int], fill: float | Sequence[float] = 0,
        padding_mode: str = "constant") -> Tensor | Any:
    """Pad each border: padding is an int, (left/right, top/bottom) or (left, top, right,
    bottom); padding_mode 'constant' (with fill), 'edge', 'reflect' (mirror without the edge
    pixel) or 'symmetric' (mirror with it).  Negative padding crops."""
    ltrb = _padding_ltrb(padding)
    if not isinstance(fill, (numbers.Number, list, tuple)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if padding_mode not in _PADDING_MODES:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    return _FT.pad(img, ltrb, fill, padding_mode) if _is_tensor(img) else _FP.pad(img, ltrb, fill, padding_mode)


def five_crop(img: Tensor | Any,
              size: int | Sequence[int]) -> tuple[Tensor | Any, Tensor | Any, Tensor | Any, Tensor | Any, Tensor | Any]:
    """The four corner crops and the centre crop: (top-left, top-right, bottom-left,
    bottom-right, centre)."""
    ch, cw = _pair(size)
    _, h, w = get_dimensions(img)
    if ch > h or cw > w:
        raise ValueError(f"Requested crop size {(ch, cw)} is bigger than input size {(h, w)}")
    return (crop(img, 0, 0, ch, cw), crop(img, 0, w - cw, ch, cw), crop(img, h - ch, 0, ch, cw),
            crop(img, h - ch, w - cw, ch, cw), center_crop(img, [ch, cw]))


def ten_crop(img: Tensor | Any, size: int | Sequence[int], vertical_flip: bool = False) -> tuple[Tensor | Any, ...]:
    """five_crop of the image, then five_crop of its mirror (left-right, or top-bottom with
    vertical_flip)."""
    flipped = vflip(img) if vertical_flip else hflip(img)
    return five_crop(img, size) + five_crop(flipped, size)


def _inverse_affine_matrix(center, angle, translate, scale, shear):
    """The 6 numbers of the output -> input map of the affine transform T C RSS C^-1: RSS is a
    rotation by angle (clockwise in image coordinates) with scale and shear (degrees), C the
    move of the origin to center, T the translation."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    rss = np.array([[math.cos(rot - sy) / math.cos(sy),
                     -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)],
                    [math.sin(rot - sy) / math.cos(sy),
                     -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)]]) * scale

    def moved(dx, dy):
        return np.array([[1.0, 0.0, dx], [0.0, 1.0, dy], [0.0, 0.0, 1.0]])
    forward = moved(*translate) @ moved(*center) @ np.block([[rss, np.zeros((2, 1))], [np.zeros((1, 2)), 1.0]]) \
        @ moved(-center[0], -center[1])
    return [float(v) for v in np.linalg.inv(forward)[:2].reshape(-1)]


def _tensor_fill(fill, img):
    """Fill for the tensor warps: None (zero padding) or a list of floats."""
    if fill is None:
        return None
    if not isinstance(fill, (numbers.Number, list, tuple)):
        raise TypeError("Argument fill should be either a sequence or a number.")
    return [float(fill)] if isinstance(fill, numbers.Number) else [float(v) for v in fill]


def _warp_mode(interpolation, img):
    mode = _interpolation(interpolation)
    return mode.value if _is_tensor(img) else _PIL_FILTER[mode.value]


def elastic_transform(img: Tensor | Any, displacement: Tensor,
                      interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
                      fill: float | Sequence[float] | None = None) -> Tensor | Any:
    """Move every pixel's sampling point by `displacement`, a (1, H, W, 2) tensor of x and y
    offsets in grid_sample's normalized units (2 spans the image), as torchvision's; a PIL
    image goes through a tensor and comes back in its mode."""
    if not isinstance(displacement, Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    tensor_in = _is_tensor(img)
    t = img if tensor_in else pil_to_tensor(img)
    shape = (1,) + tuple(t.shape[-2:]) + (2,)
    if tuple(displacement.shape) != shape:
        raise ValueError(f"Argument displacement shape should be {list(shape)}, but given "
                         f"{list(displacement.shape)}")
    mode = _interpolation(interpolation).value
    out = _FT.elastic_transform(t, displacement, mode, _tensor_fill(fill, t))
    return out if tensor_in else to_pil_image(out, mode=img.mode)


def rotate(img: Tensor | Any, angle: float, interpolation: InterpolationMode | int = InterpolationMode.NEAREST,
           expand: bool = False, center: Sequence[float] | None = None,
           fill: float | Sequence[float] | None = None) -> Tensor | Any:
    """Rotate counter-clockwise by angle degrees about center (pixel coordinates, default the
    image centre); expand grows the output to hold the whole turned image."""
    if not isinstance(angle, numbers.Number):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    mode = _warp_mode(interpolation, img)
    if not _is_tensor(img):
        return _FP.rotate(img, angle, mode, expand, center, fill)
    _, h, w = get_dimensions(img)
    centre = [0.0, 0.0] if center is None else [center[0] - w * 0.5, center[1] - h * 0.5]
    matrix = _inverse_affine_matrix(centre, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    size = _FT.rotated_size(matrix, w, h) if expand else None
    return _FT.affine(img, matrix, mode, _tensor_fill(fill, img), size)


def affine(img: Tensor | Any, angle: float, translate: Sequence[float], scale: float, shear: float | Sequence[float],
           interpolation: InterpolationMode | int = InterpolationMode.NEAREST,
           fill: float | Sequence[float] | None = None, center: Sequence[float] | None = None) -> Tensor | Any:
    """Rotate by angle degrees (clockwise), scale, shear by shear degrees ((x, y) or x only),
    then translate by (dx, dy) pixels, about center (default the image centre)."""
    if not isinstance(angle, numbers.Number):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    shear = [shear, 0.0] if isinstance(shear, numbers.Number) else list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    mode = _warp_mode(interpolation, img)
    _, h, w = get_dimensions(img)
    if not _is_tensor(img):
        centre = [w * 0.5, h * 0.5] if center is None else list(center)
        return _FP.affine(img, _inverse_affine_matrix(centre, angle, translate, scale, shear), mode, fill)
    centre = [0.0, 0.0] if center is None else [center[0] - w * 0.5, center[1] - h * 0.5]
    matrix = _inverse_affine_matrix(centre, angle, [float(t) for t in translate], scale, shear)
    return _FT.affine(img, matrix, mode, _tensor_fill(fill, img))


def _perspective_coeffs(startpoints, endpoints):
    """The 8 coefficients of the projective map taking each endpoint to its startpoint (solved in
    float64, given in float32 precision as torchvision gives them)."""
    rows, rhs = [], []
    for (x, y), (u, v) in zip(endpoints, startpoints):
        rows += [[x, y, 1, 0, 0, 0, -u * x, -u * y], [0, 0, 0, x, y, 1, -v * x, -v * y]]
        rhs += [u, v]
    solution = np.linalg.lstsq(np.array(rows, float), np.array(rhs, float), rcond=None)[0]
    return [float(c) for c in solution.astype(np.float32)]


def perspective(img: Tensor | Any, startpoints: Sequence[Sequence[float]], endpoints: Sequence[Sequence[float]],
                interpolation: InterpolationMode | int = InterpolationMode.BILINEAR,
                fill: float | Sequence[float] | None = None) -> Tensor | Any:
    """Warp so that the four startpoints [x, y] (top-left, top-right, bottom-right, bottom-left
    of the original) land on the endpoints."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(f"Please provide only four points for startpoints and endpoints. Got {len(startpoints)} "
                         f"startpoints and {len(endpoints)} endpoints.")
    coeffs = _perspective_coeffs(startpoints, endpoints)
    mode = _warp_mode(interpolation, img)
    if not _is_tensor(img):
        return _FP.perspective(img, coeffs, mode, fill)
    return _FT.perspective(img, coeffs, mode, _tensor_fill(fill, img))


# ---- colour ----------------------------------------------------------------------------------
def _nonneg(value, name):
    if value < 0:
        raise ValueError(f"{name} ({value}) is not non-negative.")


def adjust_brightness(img: Tensor | Any, brightness_factor: float) -> Tensor | Any:
    """Scale the brightness: 0 gives black, 1 the original."""
    _nonneg(brightness_factor, "brightness_factor")
    return _FT.adjust_brightness(img, brightness_factor) if _is_tensor(img) \
        else _FP.adjust_brightness(img, brightness_factor)


def adjust_contrast(img: Tensor | Any, contrast_factor: float) -> Tensor | Any:
    """Scale the contrast: 0 gives a solid grey of the mean level, 1 the original."""
    _nonneg(contrast_factor, "contrast_factor")
    return _FT.adjust_contrast(img, contrast_factor) if _is_tensor(img) \
        else _FP.adjust_contrast(img, contrast_factor)


def adjust_saturation(img: Tensor | Any, saturation_factor: float) -> Tensor | Any:
    """Scale the saturation: 0 gives the grayscale image, 1 the original."""
    _nonneg(saturation_factor, "saturation_factor")
    return _FT.adjust_saturation(img, saturation_factor) if _is_tensor(img) \
        else _FP.adjust_saturation(img, saturation_factor)


def adjust_sharpness(img: Tensor | Any, sharpness_factor: float) -> Tensor | Any:
    """Scale the sharpness: 0 gives a smoothed image, 1 the original, 2 sharpened."""
    _nonneg(sharpness_factor, "sharpness_factor")
    return _FT.adjust_sharpness(img, sharpness_factor) if _is_tensor(img) \
        else _FP.adjust_sharpness(img, sharpness_factor)


def adjust_hue(img: Tensor | Any, hue_factor: float) -> Tensor | Any:
    """Turn the hue by hue_factor (in [-0.5, 0.5]) of a full circle."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    return _FT.adjust_hue(img, hue_factor) if _is_tensor(img) else _FP.adjust_hue(img, hue_factor)


def adjust_gamma(img: Tensor | Any, gamma: float, gain: float = 1) -> Tensor | Any:
    """Gamma correction: gain * img ** gamma on [0, 1] values."""
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    return _FT.adjust_gamma(img, gamma, gain) if _is_tensor(img) else _FP.adjust_gamma(img, gamma, gain)


def rgb_to_grayscale(img: Tensor | Any, num_output_channels: int = 1) -> Tensor | Any:
    """Grayscale version of the image, with 1 or 3 (equal) channels."""
    if _is_tensor(img):
        return _FT.rgb_to_grayscale(img, num_output_channels)
    return _FP.to_grayscale(img, num_output_channels)


def to_grayscale(img: Tensor | Any, num_output_channels: int = 1) -> Tensor | Any:
    """Grayscale version of the image (the PIL name; tensors work too)."""
    return rgb_to_grayscale(img, num_output_channels)


def gaussian_blur(img: Tensor | Any, kernel_size: int | Sequence[int],
                  sigma: float | Sequence[float] | None = None) -> Tensor | Any:
    """Blur by a Gaussian kernel: kernel_size an odd int or (kx, ky); sigma a number or (sx, sy),
    by default 0.3 * ((k - 1) * 0.5 - 1) + 0.8.  PIL images are blurred as uint8 tensors."""
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got {type(kernel_size)}")
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    if len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(kernel_size)}")
    for k in kernel_size:
        if k % 2 == 0 or k < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [k * 0.15 + 0.35 for k in kernel_size]
    if not isinstance(sigma, (numbers.Number, list, tuple)):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    if isinstance(sigma, numbers.Number):
        sigma = [float(sigma), float(sigma)]
    if len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    if _is_tensor(img):
        return _FT.gaussian_blur(img, list(kernel_size), [float(s) for s in sigma])
    _FP.assert_pil(img)
    out = _FT.gaussian_blur(pil_to_tensor(img), list(kernel_size), [float(s) for s in sigma])
    return to_pil_image(out, mode=img.mode)


def erase(img: Tensor, i: int, j: int, h: int, w: int, v: Tensor | float, inplace: bool = False) -> Tensor:
    """Set the h x w window at (i, j) of a tensor image to v (a value or a tensor that
    broadcasts to (..., C, h, w))."""
    if not _is_tensor(img):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img


def invert(img: Tensor | Any) -> Tensor | Any:
    """The negative: max - img."""
    return _FT.invert(img) if _is_tensor(img) else _FP.invert(img)


def posterize(img: Tensor | Any, bits: int) -> Tensor | Any:
    """Keep the top `bits` bits (0..8) of each channel (uint8 tensors and PIL images)."""
    if not 0 <= bits <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    return _FT.posterize(img, bits) if _is_tensor(img) else _FP.posterize(img, bits)


def solarize(img: Tensor | Any, threshold: float) -> Tensor | Any:
    """Invert the pixels at or above threshold."""
    return _FT.solarize(img, threshold) if _is_tensor(img) else _FP.solarize(img, threshold)


def autocontrast(img: Tensor | Any) -> Tensor | Any:
    """Stretch each channel to the full range (its darkest pixel black, brightest white)."""
    return _FT.autocontrast(img) if _is_tensor(img) else _FP.autocontrast(img)


def equalize(img: Tensor | Any) -> Tensor | Any:
    """Histogram equalization of each channel (uint8 tensors and PIL images)."""
    return _FT.equalize(img) if _is_tensor(img) else _FP.equalize(img)

