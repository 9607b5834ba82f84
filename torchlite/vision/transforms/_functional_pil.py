"""PIL image kernels behind torchlite.vision.transforms.functional: each is Pillow's own function
(Image.resize / rotate / transform / crop, ImageOps, ImageEnhance).  NumPy appears only where
Pillow has no such operation: the reflect / symmetric / edge padding modes (np.pad)."""
import sys

import numpy as np

from .._pil import pil_image


def is_pil_image(img):
    """True for a PIL.Image.Image (without importing Pillow when nobody has)."""
    module = sys.modules.get("PIL.Image")
    return module is not None and isinstance(img, module.Image)


def assert_pil(img):
    """TypeError unless img is a PIL image."""
    if not is_pil_image(img):
        raise TypeError(f"img should be PIL Image. Got {type(img)}")


def _ops():
    pil_image()
    from PIL import ImageEnhance, ImageOps
    return ImageEnhance, ImageOps


def get_dimensions(img):
    """[channels, height, width] of a PIL image."""
    assert_pil(img)
    width, height = img.size
    return [len(img.getbands()), height, width]


def parse_fill(fill, img):
    """A fill value in the form Pillow takes for img's mode: one number per band."""
    bands = len(img.getbands())
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)) and bands > 1:
        fill = [fill] * bands
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = list(fill) * bands
        if len(fill) != bands:
            raise ValueError("The number of elements in 'fill' does not match the number of bands of the image "
                             f"({len(fill)} != {bands})")
        fill = tuple(fill) if img.mode == "F" else tuple(int(v) for v in fill)
    elif img.mode != "F":
        fill = int(fill)
    return fill


def hflip(img):
    """Mirror left-right."""
    assert_pil(img)
    return img.transpose(pil_image().Transpose.FLIP_LEFT_RIGHT)


def vflip(img):
    """Mirror top-bottom."""
    assert_pil(img)
    return img.transpose(pil_image().Transpose.FLIP_TOP_BOTTOM)


def crop(img, top, left, height, width):
    """Image.crop; Pillow fills what falls outside the image with 0."""
    assert_pil(img)
    return img.crop((left, top, left + width, top + height))


def resize(img, size, resample):
    """Image.resize to size [h, w]."""
    assert_pil(img)
    return img.resize((size[1], size[0]), resample)


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad by (left, top, right, bottom); negative amounts crop.  'constant' is ImageOps.expand;
    the other modes are np.pad of the pixels (Pillow has none of them)."""
    assert_pil(img)
    left, top, right, bottom = padding
    if min(padding) < 0:
        w, h = img.size
        img = img.crop((max(-left, 0), max(-top, 0), w - max(-right, 0), h - max(-bottom, 0)))
        left, top, right, bottom = (max(p, 0) for p in padding)
    if padding_mode == "constant":
        return _ops()[1].expand(img, border=(left, top, right, bottom), fill=parse_fill(fill, img))
    Image = pil_image()
    palette = img.getpalette() if img.mode == "P" else None
    arr = np.asarray(img)
    widths = [(top, bottom), (left, right)] + [(0, 0)] * (arr.ndim - 2)
    out = Image.fromarray(np.pad(arr, widths, mode=padding_mode))   # the mode follows the array
    if palette is not None:
        out.putpalette(palette)
    return out


def rotate(img, angle, resample, expand, center, fill):
    """Image.rotate, counter-clockwise by angle degrees."""
    assert_pil(img)
    return img.rotate(angle, resample, expand, center, fillcolor=parse_fill(fill, img))


def affine(img, matrix, resample, fill):
    """Image.transform by the inverse affine matrix (output -> input)."""
    assert_pil(img)
    return img.transform(img.size, pil_image().Transform.AFFINE, matrix, resample, fillcolor=parse_fill(fill, img))


def perspective(img, coeffs, resample, fill):
    """Image.transform by the 8 perspective coefficients (output -> input)."""
    assert_pil(img)
    return img.transform(img.size, pil_image().Transform.PERSPECTIVE, coeffs, resample,
                         fillcolor=parse_fill(fill, img))


def to_grayscale(img, num_output_channels=1):
    """Image.convert('L'), merged into RGB for three output channels."""
    assert_pil(img)
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    gray = img.convert("L")
    return pil_image().merge("RGB", (gray, gray, gray)) if num_output_channels == 3 else gray


def _enhance(name):
    def enhance(img, factor):
        assert_pil(img)
        return getattr(_ops()[0], name)(img).enhance(factor)
    enhance.__doc__ = f"ImageEnhance.{name}(img).enhance(factor)."
    return enhance


adjust_brightness = _enhance("Brightness")
adjust_contrast = _enhance("Contrast")
adjust_saturation = _enhance("Color")
adjust_sharpness = _enhance("Sharpness")


def adjust_hue(img, hue_factor):
    """Shift the H band of the HSV image by hue_factor * 255 (mod 256)."""
    assert_pil(img)
    if img.mode in ("L", "1", "I", "F"):
        return img
    shift = int(hue_factor * 255) % 256
    h, s, v = img.convert("HSV").split()
    h = h.point(lambda x: (x + shift) % 256)
    return pil_image().merge("HSV", (h, s, v)).convert(img.mode)


def adjust_gamma(img, gamma, gain=1.0):
    """Image.point with the table 255.999 * gain * (x / 255) ** gamma (truncated)."""
    assert_pil(img)
    mode = img.mode
    table = [min(255, int((256 - 1e-3) * gain * (v / 255.0) ** gamma)) for v in range(256)]
    return img.convert("RGB").point(table * 3).convert(mode)


def _imageops(name, doc):
    def op(img, *args):
        assert_pil(img)
        return getattr(_ops()[1], name)(img, *args)
    op.__doc__ = doc
    return op


invert = _imageops("invert", "ImageOps.invert.")
posterize = _imageops("posterize", "ImageOps.posterize(img, bits).")
solarize = _imageops("solarize", "ImageOps.solarize(img, threshold).")
autocontrast = _imageops("autocontrast", "ImageOps.autocontrast.")
equalize = _imageops("equalize", "ImageOps.equalize.")
