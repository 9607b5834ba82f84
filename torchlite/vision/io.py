"""torchvision.io's image reading, through Pillow: read_image, decode_image, write_png,
write_jpeg, and ImageReadMode."""
from __future__ import annotations

import enum
import io as _io

import numpy as np

from .. import Tensor, from_numpy, uint8 as _uint8
from ._pil import pil_image

__all__ = ["ImageReadMode", "read_image", "decode_image", "read_file", "write_file", "encode_png",
           "write_png", "encode_jpeg", "write_jpeg"]


class ImageReadMode(enum.Enum):
    """How read_image converts: UNCHANGED keeps the file's channels."""
    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4


_PIL_MODES = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA", ImageReadMode.RGB: "RGB",
              ImageReadMode.RGB_ALPHA: "RGBA"}


def read_file(path: str) -> Tensor:
    """The bytes of a file, as a 1-d uint8 tensor."""
    with open(path, "rb") as f:
        return from_numpy(np.frombuffer(f.read(), dtype=np.uint8).copy())


def write_file(filename: str, data: Tensor) -> None:
    with open(filename, "wb") as f:
        f.write(data.numpy().tobytes())


def decode_image(input: Tensor | str, mode: ImageReadMode | str = ImageReadMode.UNCHANGED,
                 apply_exif_orientation: bool = False) -> Tensor:
    """A uint8 C x H x W tensor of an encoded image (a 1-d uint8 tensor of its bytes, or a
    path); mode converts it (GRAY, RGB, ...).  Pillow decodes; a file that is not an image
    raises RuntimeError."""
    Image = pil_image()
    if isinstance(mode, str):
        mode = ImageReadMode[mode.upper()]
    data = input.numpy().tobytes() if isinstance(input, Tensor) else None
    try:
        img = Image.open(_io.BytesIO(data) if data is not None else input)
        img.load()
    except Exception as e:
        raise RuntimeError(f"decode_image: not an image Pillow can read ({e})") from None
    if apply_exif_orientation:
        from PIL import ImageOps
        img = ImageOps.exif_transpose(img)
    if mode != ImageReadMode.UNCHANGED:
        img = img.convert(_PIL_MODES[mode])
    elif img.mode not in ("L", "LA", "RGB", "RGBA"):
        img = img.convert("RGBA" if "A" in img.mode or "transparency" in img.info else "RGB")
    arr = np.asarray(img, dtype=np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return from_numpy(np.array(arr.transpose(2, 0, 1), order="C"))   # a copy: PIL's memory is read-only


def read_image(path: str, mode: ImageReadMode | str = ImageReadMode.UNCHANGED,
               apply_exif_orientation: bool = False) -> Tensor:
    """decode_image of the file at path."""
    return decode_image(read_file(path), mode, apply_exif_orientation)


def _encode(input, fmt, **params):
    if not isinstance(input, Tensor) or input.dtype is not _uint8 or input.ndim != 3 \
            or input.shape[0] not in (1, 3):
        raise RuntimeError(f"encode_{fmt.lower()}: expected a uint8 C x H x W tensor with 1 or 3 "
                           f"channels")
    arr = input.permute(1, 2, 0).numpy()
    img = pil_image().fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr)
    buf = _io.BytesIO()
    img.save(buf, format=fmt, **params)
    return from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def encode_png(input: Tensor, compression_level: int = 6) -> Tensor:
    return _encode(input, "PNG", compress_level=compression_level)


def write_png(input: Tensor, filename: str, compression_level: int = 6) -> None:
    write_file(filename, encode_png(input, compression_level))


def encode_jpeg(input: Tensor, quality: int = 75) -> Tensor:
    if not 1 <= quality <= 100:
        raise ValueError(f"Image quality should be a positive number between 1 and 100, got {quality}")
    return _encode(input, "JPEG", quality=quality)


def write_jpeg(input: Tensor, filename: str, quality: int = 75) -> None:
    write_file(filename, encode_jpeg(input, quality))
