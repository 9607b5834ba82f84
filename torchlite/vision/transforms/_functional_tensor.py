"""Tensor image kernels behind torchlite.vision.transforms.functional.

An image is a torchlite tensor (..., C, H, W) (or (H, W)): float in [0, 1] or integer in
[0, dtype max].  The pixel arithmetic is torchlite tensor ops.  Two things torchlite has no op
for are built with NumPy and then applied with torchlite ops: the weight matrices of
antialiased and bicubic resizing (nn.functional.vision.resample_matrix: two matmuls), and the
sampling grid of rotate / affine / perspective (the taps are gathered with tensor indexing,
which keeps torchvision's fill blending simple).  The NumPy side only ever sees geometry, never
pixels."""

import numpy as np

import torchlite
from torchlite import Tensor
import torchlite.nn.functional as F
from torchlite.nn.functional.vision import resample_matrix

_GRAY = (0.2989, 0.587, 0.114)


# ---- helpers ----------------------------------------------------------------------------------
def assert_image(img):
    """TypeError unless img is a tensor with at least two dims."""
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    if img.ndim < 2:
        raise TypeError("Tensor is not a torch image.")


def get_dimensions(img):
    """[channels, height, width] of a tensor image."""
    assert_image(img)
    return [1 if img.ndim == 2 else int(img.shape[-3]), int(img.shape[-2]), int(img.shape[-1])]


def max_value(dtype):
    """The value of a white pixel: 1.0 for float dtypes, the dtype's maximum for integers."""
    return 1.0 if dtype.is_floating_point else torchlite.iinfo(dtype).max


def assert_channels(img, permitted):
    """TypeError unless the image has one of the `permitted` channel counts."""
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError(f"Input image tensor permitted channel values are {list(permitted)}, but found {c}")


def _as_float(img):
    """img in a float dtype it can be computed in (float32 for integer images)."""
    return img if img.dtype.is_floating_point else img.to(torchlite.float32)


def _restore(out, dtype):
    """Back from the float computation: integer images are rounded and clipped to their range."""
    if dtype.is_floating_point:
        return out.to(dtype)
    return out.round().clamp(0, max_value(dtype)).to(dtype)


def _as_4d(img):
    """img viewed as (N, C, H, W), and the shape to give back."""
    shape = tuple(img.shape)
    return img.reshape((-1,) + tuple(shape[-3:]) if img.ndim > 2 else (1, 1) + shape), shape


def _blend(img1, img2, ratio):
    """ratio * img1 + (1 - ratio) * img2, clipped to the image range (integers truncate, as
    torchvision's _blend does)."""
    out = (ratio * img1 + (1.0 - ratio) * img2).clamp(0, max_value(img1.dtype))
    return out.to(img1.dtype)


def _index(values, like):
    """An int64 index tensor on `like`'s device."""
    return torchlite.as_tensor(np.ascontiguousarray(values, dtype=np.int64), device=like.device)


def _const(values, like):
    """A float tensor in `like`'s dtype and device."""
    return torchlite.as_tensor(np.asarray(values, dtype=np.float64), dtype=like.dtype, device=like.device)


# ---- geometry ----------------------------------------------------------------------------------
def hflip(img):
    """Mirror left-right."""
    assert_image(img)
    return img.flip(-1)


def vflip(img):
    """Mirror top-bottom."""
    assert_image(img)
    return img.flip(-2)


def crop(img, top, left, height, width):
    """The height x width window at (top, left); what falls outside the image is 0."""
    _, h, w = get_dimensions(img)
    y0, y1, x0, x1 = max(top, 0), min(top + height, h), max(left, 0), min(left + width, w)
    if (y0, y1, x0, x1) == (top, top + height, left, left + width):
        return img[..., top:top + height, left:left + width]
    out = torchlite.zeros(tuple(img.shape[:-2]) + (height, width), dtype=img.dtype, device=img.device)
    if y1 > y0 and x1 > x0:
        out[..., y0 - top:y1 - top, x0 - left:x1 - left] = img[..., y0:y1, x0:x1]
    return out


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad by (left, top, right, bottom); negative amounts crop.  'constant' fills with `fill`
    (a number, or one per channel); 'edge', 'reflect' and 'symmetric' gather rows and columns by
    the index map np.pad makes of arange (the map is geometry only; the gather is torchlite's)."""
    assert_image(img)
    left, top, right, bottom = padding
    h, w = img.shape[-2], img.shape[-1]
    if min(padding) < 0:
        img = img[..., max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
        left, top, right, bottom = (max(p, 0) for p in padding)
        h, w = img.shape[-2], img.shape[-1]
    if padding_mode == "constant":
        if isinstance(fill, (list, tuple)) and len(fill) == 1:
            fill = fill[0]
        if isinstance(fill, (int, float)):
            return F.pad(img, [left, right, top, bottom], value=fill)
        out = torchlite.empty(tuple(img.shape[:-2]) + (h + top + bottom, w + left + right), dtype=img.dtype,
                              device=img.device)
        out[...] = torchlite.as_tensor(list(fill), device=img.device).reshape(-1, 1, 1)
        out[..., top:top + h, left:left + w] = img
        return out
    rows = np.pad(np.arange(h), (top, bottom), mode=padding_mode)
    cols = np.pad(np.arange(w), (left, right), mode=padding_mode)
    return img.index_select(-2, _index(rows, img)).index_select(-1, _index(cols, img))


def resize(img, size, interpolation="bilinear", antialias=True):
    """Resize the last two dims to size [h, w].  Nearest and plain bilinear are
    F.interpolate; antialiased bilinear and bicubic are the matmuls W_h @ (img @ W_w^T)."""
    assert_image(img)
    if interpolation not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError("This interpolation mode is unsupported with Tensor input")
    x, shape = _as_4d(img)
    x = _as_float(x)
    (h, w), (oh, ow) = x.shape[-2:], size
    if interpolation.startswith("nearest"):
        x = F.interpolate(x, size=[oh, ow], mode=interpolation)
    elif interpolation == "bilinear" and not (antialias and (oh < h or ow < w)):
        x = F.interpolate(x, size=[oh, ow], mode="bilinear", align_corners=False)
    else:  # width first, then height; uint8 bilinear is rounded in between, as PyTorch's uint8 kernel does
        x = torchlite.matmul(x, _const(resample_matrix(w, ow, interpolation, antialias).T, x))
        if interpolation == "bilinear" and not img.dtype.is_floating_point:
            x = x.round().clamp(0, max_value(img.dtype))
        x = torchlite.matmul(_const(resample_matrix(h, oh, interpolation, antialias), x), x)
    return _restore(x, img.dtype).reshape(shape[:-2] + (oh, ow))


def _grid_sample(img, sx, sy, mode, fill):
    """Sample img at the source pixel coordinates sx, sy (NumPy (oh, ow) arrays; pixel centres
    at integers) -- grid_sample with align_corners=False and zero padding.  With a fill, the
    part that came from outside the image is blended towards it, as torchvision does."""
    h, w = img.shape[-2], img.shape[-1]
    if fill is not None and len(fill) not in (1, get_dimensions(img)[0]):
        raise ValueError("The number of elements in 'fill' does not match the number of channels of the image "
                         f"({len(fill)} != {get_dimensions(img)[0]})")
    # torchlite has no grid_sample: the taps and weights are found with NumPy (geometry only) and
    # the pixels gathered with torchlite indexing
    x = _as_float(img)
    flat = x.reshape(tuple(x.shape[:-2]) + (h * w,))
    sx, sy = (np.nan_to_num(v, nan=-2.0, posinf=-2.0, neginf=-2.0) for v in (sx, sy))   # outside the image
    if mode == "nearest":
        taps = [(np.rint(sy), np.rint(sx), np.ones_like(sx))]
    else:
        c0, r0 = np.floor(sx), np.floor(sy)
        fx, fy = sx - c0, sy - r0
        taps = [(r0, c0, (1 - fy) * (1 - fx)), (r0, c0 + 1, (1 - fy) * fx),
                (r0 + 1, c0, fy * (1 - fx)), (r0 + 1, c0 + 1, fy * fx)]
    out, mask = None, np.zeros_like(sx)
    for r, c, wt in taps:
        wt = np.where((r >= 0) & (r < h) & (c >= 0) & (c < w), wt, 0.0)
        mask += wt
        idx = np.clip(r, 0, h - 1).astype(np.int64) * w + np.clip(c, 0, w - 1).astype(np.int64)
        term = flat[..., _index(idx, x)] * _const(wt, x)
        out = term if out is None else out + term
    if fill is not None:
        fill_t = _const(fill, x).reshape(-1, 1, 1)
        mask_t = _const(mask, x)
        out = torchlite.where(mask_t < 0.5, fill_t, out) if mode == "nearest" else out * mask_t + (1 - mask_t) * fill_t
    return _restore(out, img.dtype)


def _centred_grid(oh, ow):
    """Output pixel centres in coordinates centred on the output image."""
    return np.meshgrid(np.arange(ow) + 0.5 - ow / 2, np.arange(oh) + 0.5 - oh / 2)


def affine(img, matrix, interpolation="nearest", fill=None, out_size=None):
    """Warp by the inverse affine `matrix` (6 numbers, output -> input, centred coordinates);
    out_size (w, h) defaults to the input's (rotate's expand passes a larger one)."""
    assert_image(img)
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError("This interpolation mode is unsupported with Tensor input")
    _, h, w = get_dimensions(img)
    ow, oh = out_size or (w, h)
    gx, gy = _centred_grid(oh, ow)
    a, b, c, d, e, f = matrix
    return _grid_sample(img, a * gx + b * gy + c + w / 2 - 0.5, d * gx + e * gy + f + h / 2 - 0.5, interpolation, fill)


def rotated_size(matrix, w, h):
    """(w, h) of the box holding the image turned by `matrix` (rotate with expand=True), as PIL
    sizes it; the corners are rounded to 1e-4 first so that rounding noise does not add a pixel."""
    corners = np.array([[-w, -h], [-w, h], [w, h], [w, -h]]) * 0.5
    pts = np.round(corners @ np.array(matrix, dtype=np.float64).reshape(2, 3)[:, :2].T + np.array([w, h]) * 0.5, 4)
    size = np.ceil(pts.max(0)) - np.floor(pts.min(0))
    return int(size[0]), int(size[1])


def perspective(img, coeffs, interpolation="bilinear", fill=None):
    """Warp by the 8 perspective coefficients (output -> input, top-left pixel corner at 0)."""
    assert_image(img)
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError("This interpolation mode is unsupported with Tensor input")
    _, h, w = get_dimensions(img)
    gx, gy = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    a, b, c, d, e, f, g, k = coeffs
    den = g * gx + k * gy + 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        sx, sy = (a * gx + b * gy + c) / den - 0.5, (d * gx + e * gy + f) / den - 0.5
    return _grid_sample(img, sx, sy, interpolation, fill)


def elastic_transform(img, displacement, interpolation="bilinear", fill=None):
    """Each output pixel samples the input where `displacement` ((1, H, W, 2): x then y, in
    grid_sample's normalized units: 2 spans the image) moves it, as torchvision's."""
    assert_image(img)
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError("This interpolation mode is unsupported with Tensor input")
    _, h, w = get_dimensions(img)
    d = displacement.detach().cpu().double().numpy()[0]
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    return _grid_sample(img, gx + d[..., 0] * (w / 2), gy + d[..., 1] * (h / 2), interpolation, fill)


def gaussian_blur(img, kernel_size, sigma):
    """Gaussian blur with reflect padding: the kernel is separable, so it is two depthwise
    convolutions, by a column of ky taps and by a row of kx taps."""
    assert_image(img)
    x, shape = _as_4d(img)
    x = _as_float(x)
    kx, ky = (np.exp(-0.5 * (np.linspace(-(k - 1) / 2, (k - 1) / 2, k) / s) ** 2) for k, s in zip(kernel_size, sigma))
    c = x.shape[1]
    px, py = kernel_size[0] // 2, kernel_size[1] // 2
    x = F.pad(x, [px, px, py, py], mode="reflect")
    x = F.conv2d(x, _const(np.broadcast_to((ky / ky.sum())[:, None], (c, 1, len(ky), 1)), x), groups=c)
    x = F.conv2d(x, _const(np.broadcast_to((kx / kx.sum())[None, :], (c, 1, 1, len(kx))), x), groups=c)
    return _restore(x, img.dtype).reshape(shape)


# ---- colour ----------------------------------------------------------------------------------
def rgb_to_grayscale(img, num_output_channels=1):
    """ITU-R 601-2 luma (0.2989 R + 0.587 G + 0.114 B), repeated to num_output_channels."""
    assert_image(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    assert_channels(img, (1, 3))
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if img.shape[-3] == 3:
        r, g, b = img.unbind(-3)
        gray = (_GRAY[0] * r + _GRAY[1] * g + _GRAY[2] * b).to(img.dtype).unsqueeze(-3)
    else:
        gray = img.clone()
    if num_output_channels == 3:
        gray = gray.expand(tuple(img.shape[:-3]) + (3,) + tuple(img.shape[-2:])).clone()
    return gray


def adjust_brightness(img, factor):
    """img * factor, clipped."""
    assert_channels(img, (1, 3))
    return _blend(img, torchlite.zeros_like(img), factor)


def adjust_contrast(img, factor):
    """Blend with the mean grey level of the image."""
    assert_channels(img, (1, 3))
    dtype = img.dtype if img.dtype.is_floating_point else torchlite.float32
    gray = rgb_to_grayscale(img) if get_dimensions(img)[0] == 3 else img
    return _blend(img, gray.to(dtype).mean(dim=(-3, -2, -1), keepdim=True), factor)


def adjust_saturation(img, factor):
    """Blend with the grayscale image."""
    assert_channels(img, (1, 3))
    if get_dimensions(img)[0] == 1:
        return img
    return _blend(img, rgb_to_grayscale(img), factor)


def adjust_sharpness(img, factor):
    """Blend with the image smoothed by the 3x3 kernel [[1,1,1],[1,5,1],[1,1,1]]/13 (the
    border pixels are left as they are)."""
    assert_channels(img, (1, 3))
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    x, shape = _as_4d(img)
    x = _as_float(x)
    kernel = np.ones((3, 3))
    kernel[1, 1] = 5.0
    c = x.shape[1]
    weight = _const(np.broadcast_to(kernel / kernel.sum(), (c, 1, 3, 3)), x)
    smooth = _restore(F.conv2d(x, weight, groups=c), img.dtype)
    degenerate = img.clone()
    degenerate[..., 1:-1, 1:-1] = smooth.reshape(shape[:-2] + tuple(smooth.shape[-2:]))
    return _blend(img, degenerate, factor)


def _rgb_to_hsv(img):
    """(..., 3, H, W) RGB in [0, 1] -> HSV, each in [0, 1]."""
    r, g, b = img.unbind(-3)
    maxc, minc = img.amax(dim=-3), img.amin(dim=-3)
    delta = maxc - minc
    flat = delta == 0
    safe = torchlite.where(flat, torchlite.ones_like(delta), delta)
    sat = delta / torchlite.where(maxc == 0, torchlite.ones_like(maxc), maxc)
    hue = torchlite.where(maxc == r, ((g - b) / safe) % 6.0,
                          torchlite.where(maxc == g, (b - r) / safe + 2.0, (r - g) / safe + 4.0))
    hue = torchlite.where(flat, torchlite.zeros_like(hue), hue / 6.0)
    return torchlite.stack([hue, sat, maxc], dim=-3)


def _hsv_to_rgb(img):
    """Inverse of _rgb_to_hsv: channel n of RGB is v - v s clip(min(k, 4 - k), 0, 1) with
    k = (n + 6 h) mod 6 for n = 5, 3, 1."""
    h, s, v = img.unbind(-3)
    chans = []
    for n in (5.0, 3.0, 1.0):
        k = (h * 6.0 + n) % 6.0
        chans.append(v - v * s * torchlite.minimum(k, 4.0 - k).clamp(0.0, 1.0))
    return torchlite.stack(chans, dim=-3)


def adjust_hue(img, hue_factor):
    """Rotate the hue by hue_factor turns (in [-0.5, 0.5]) in HSV space."""
    assert_channels(img, (1, 3))
    if get_dimensions(img)[0] == 1:
        return img
    x = convert_image_dtype(img, torchlite.float32) if not img.dtype.is_floating_point else img
    h, s, v = _rgb_to_hsv(x).unbind(-3)
    out = _hsv_to_rgb(torchlite.stack([(h + hue_factor) % 1.0, s, v], dim=-3))
    return convert_image_dtype(out, img.dtype)


def adjust_gamma(img, gamma, gain=1.0):
    """gain * img ** gamma on [0, 1] values, clipped."""
    assert_channels(img, (1, 3))
    x = convert_image_dtype(img, torchlite.float32) if not img.dtype.is_floating_point else img
    return convert_image_dtype((gain * x ** gamma).clamp(0, 1), img.dtype)


def invert(img):
    """max - img."""
    assert_channels(img, (1, 3))
    return max_value(img.dtype) - img


def posterize(img, bits):
    """Keep the `bits` high bits of each uint8 value."""
    assert_channels(img, (1, 3))
    if img.dtype != torchlite.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    return img & -int(2 ** (8 - bits))


def solarize(img, threshold):
    """Invert the pixels at or above threshold."""
    assert_channels(img, (1, 3))
    if threshold > max_value(img.dtype):
        raise TypeError("Threshold should be less than bound of img.")
    return torchlite.where(img >= threshold, invert(img), img)


def autocontrast(img):
    """Stretch each channel so that its darkest pixel is 0 and its brightest is max."""
    assert_image(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    assert_channels(img, (1, 3))
    bound = max_value(img.dtype)
    x = _as_float(img)
    lo, hi = x.amin(dim=(-2, -1), keepdim=True), x.amax(dim=(-2, -1), keepdim=True)
    flat = hi == lo
    one = torchlite.ones_like(hi)
    lo = torchlite.where(flat, torchlite.zeros_like(lo), lo)
    scale = torchlite.where(flat, one, bound / torchlite.where(flat, one, hi - lo))
    return ((x - lo) * scale).clamp(0, bound).to(img.dtype)


def _equalize_channel(chan):
    """PIL's equalize of one uint8 channel: a LUT from the cumulative histogram."""
    hist = torchlite.bincount(chan.reshape(-1).to(torchlite.int64), minlength=256).tolist()
    nonzero = [v for v in hist if v]
    step = sum(nonzero[:-1]) // 255
    if step == 0:
        return chan
    lut, total = [], step // 2
    for count in hist:
        lut.append(min(total // step, 255))
        total += count
    return torchlite.as_tensor(lut, dtype=torchlite.uint8, device=chan.device)[chan.to(torchlite.int64)]


def equalize(img):
    """Histogram equalization of each channel of a uint8 image."""
    assert_image(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    if img.dtype != torchlite.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    assert_channels(img, (1, 3))
    x, shape = _as_4d(img)
    flat = x.reshape(-1, shape[-2], shape[-1])
    return torchlite.stack([_equalize_channel(ch) for ch in flat.unbind(0)]).reshape(shape)


def convert_image_dtype(image, dtype=torchlite.float32):
    """Convert between image dtypes, rescaling the values to the new range (float images are
    [0, 1], integer images [0, max])."""
    if not isinstance(image, Tensor):
        raise TypeError("Input img should be Tensor Image")
    if image.dtype == dtype:
        return image
    if image.dtype.is_floating_point:
        if dtype.is_floating_point:
            return image.to(dtype)
        if (image.dtype == torchlite.float32 and dtype in (torchlite.int32, torchlite.int64)) or \
                (image.dtype == torchlite.float64 and dtype == torchlite.int64):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        # just under max + 1, so that 1.0 maps to max and the bins are equal
        return (image * (max_value(dtype) + 1.0 - 1e-3)).to(dtype)
    in_max = max_value(image.dtype)
    if dtype.is_floating_point:
        return image.to(dtype) / in_max
    out_max = max_value(dtype)
    if in_max > out_max:
        return torchlite.div(image, (in_max + 1) // (out_max + 1), rounding_mode="floor").to(dtype)
    return image.to(dtype) * ((out_max + 1) // (in_max + 1))
