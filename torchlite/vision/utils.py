"""torchvision.utils' image helpers: make_grid, save_image, draw_bounding_boxes."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import Tensor, tensor as _tensor, stack as _stack, no_grad as _no_grad, uint8 as _uint8
from ._pil import pil_image

if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["make_grid", "save_image", "draw_bounding_boxes"]


def make_grid(tensor: Tensor | list[Tensor], nrow: int = 8, padding: int = 2, normalize: bool = False,
              value_range: tuple[float, float] | None = None, scale_each: bool = False,
              pad_value: float = 0.0) -> Tensor:
    """Tile a batch of images (B x C x H x W, or a list of C x H x W) into one C x H' x W'
    image, nrow images per row, `padding` pixels of pad_value between them.  normalize: shift
    and scale each image (scale_each) or the batch into [0, 1], by value_range=(lo, hi) or by
    its min and max.  One-channel images become three-channel, as in torchvision."""
    if isinstance(tensor, (list, tuple)):
        tensor = _stack(list(tensor))
    if not isinstance(tensor, Tensor):
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor).__name__}")
    with _no_grad():
        t = tensor.detach()
        if t.ndim == 2:
            t = t.unsqueeze(0)
        if t.ndim == 3:
            t = t.unsqueeze(0)
        if t.ndim != 4:
            raise ValueError(f"make_grid: expected 2-, 3- or 4-d images, got {tuple(tensor.shape)}")
        if t.shape[1] == 1:
            t = t.expand(t.shape[0], 3, t.shape[2], t.shape[3])
        t = t.clone()
        if normalize:
            if value_range is not None and not (isinstance(value_range, tuple) and len(value_range) == 2):
                raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")

            def norm(img):
                lo, hi = value_range if value_range is not None else (float(img.min()), float(img.max()))
                img.clamp_(min=lo, max=hi)
                img.sub_(lo).div_(max(hi - lo, 1e-5))
            if scale_each:
                for img in t:
                    norm(img)
            else:
                norm(t)
        n = t.shape[0]
        if n == 1:
            return t[0]
        cols = min(nrow, n)
        rows = int(math.ceil(n / cols))
        h, w = t.shape[2] + padding, t.shape[3] + padding
        arr = t.cpu().numpy()
        grid = np.full((t.shape[1], rows * h + padding, cols * w + padding), pad_value, dtype=arr.dtype)
        for k in range(n):
            r, c = divmod(k, cols)
            grid[:, r * h + padding: (r + 1) * h, c * w + padding: (c + 1) * w] = arr[k]
        return _tensor(grid).to(tensor.device)


def save_image(tensor: Tensor | list[Tensor], fp: str | BinaryIO, format: str | None = None, **kwargs) -> None:
    """Write an image (or a batch, through make_grid with **kwargs) with values in [0, 1] to
    fp (a path or a file object) through Pillow; format as Pillow takes it."""
    grid = make_grid(tensor, **kwargs)
    arr = (grid * 255 + 0.5).clamp(0, 255).to(_uint8).permute(1, 2, 0).cpu().numpy()
    pil_image().fromarray(arr).save(fp, format=format)


def draw_bounding_boxes(image: Tensor, boxes: Tensor, labels: list[str] | None = None,
                        colors: list[str | tuple[int, int, int]] | str | tuple[int, int, int] | None = None,
                        fill: bool = False, width: int = 1, font: str | None = None, font_size: int | None = None,
                        label_colors: list[str | tuple[int, int, int]] | str | tuple[int, int, int] | None = None
                        ) -> Tensor:
    """The uint8 C x H x W image (C = 1 or 3) with `boxes` (N x 4, xyxy in pixels) drawn on it,
    as a new tensor; labels: one text per box; colors: one color (a name, '#rrggbb' or an RGB
    tuple) or one per box; fill: boxes filled at 60% opacity; label_colors: the labels' color(s),
    the boxes' colors by default."""
    if not isinstance(image, Tensor) or image.dtype is not _uint8:
        raise ValueError("Tensor uint8 expected")
    if image.ndim != 3 or image.shape[0] not in (1, 3):
        raise ValueError("Pass individual images, not batches; they must have 1 or 3 channels")
    boxes = boxes.detach().cpu()
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"boxes must be N x 4, got {tuple(boxes.shape)}")
    b = boxes.numpy()
    if ((b[:, 0] > b[:, 2]) | (b[:, 1] > b[:, 3])).any():
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. Use "
                         "torchlite.vision.ops.box_convert to convert them")
    n = len(b)
    if labels is not None and len(labels) != n:
        raise ValueError(f"Number of boxes ({n}) and labels ({len(labels)}) mismatch. Please "
                         f"specify labels for each box.")
    Image = pil_image()
    from PIL import ImageColor, ImageDraw, ImageFont
    if colors is None:
        palette = ["red", "green", "blue", "yellow", "magenta", "cyan", "orange", "purple"]
        colors = [palette[i % len(palette)] for i in range(n)]
    elif not isinstance(colors, list):
        colors = [colors] * n
    if len(colors) < n:
        raise ValueError(f"Number of colors ({len(colors)}) is less than number of boxes ({n}).")
    rgb = [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in colors]
    if label_colors is None:
        label_rgb = rgb
    else:
        if not isinstance(label_colors, list):
            label_colors = [label_colors] * n
        if len(label_colors) < n:
            raise ValueError(f"Number of label colors ({len(label_colors)}) is less than number of boxes ({n}).")
        label_rgb = [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in label_colors]
    arr = image.permute(1, 2, 0).cpu().numpy()
    gray = arr.shape[2] == 1
    img = Image.fromarray(np.repeat(arr, 3, axis=2) if gray else arr)
    draw = ImageDraw.Draw(img, "RGBA" if fill else None)
    fnt = ImageFont.truetype(font, size=font_size or 10) if font else ImageFont.load_default()
    for i, box in enumerate(b.tolist()):
        if fill:
            draw.rectangle(box, width=width, outline=rgb[i], fill=rgb[i] + (100,))
        else:
            draw.rectangle(box, width=width, outline=rgb[i])
        if labels is not None:
            draw.text((box[0] + width, box[1] + width), str(labels[i]), fill=label_rgb[i], font=fnt)
    out = np.asarray(img)
    out = out[:, :, :1] if gray else out
    return _tensor(np.ascontiguousarray(out.transpose(2, 0, 1))).to(image.device)
