"""What the writer is given, made ready for a summary: values as NumPy arrays, images as
H x W x C uint8 arrays (laid out from `dataformats`, batches tiled in a grid) and PNG bytes,
matplotlib figures as images.  Pillow and matplotlib are imported on first use."""
import numpy as np

__all__ = ["to_numpy", "to_hwc", "grid", "to_uint8", "encode_png", "figure_to_chw"]

_LAYOUTS = {4: "NCHW", 3: "CHW", 2: "HW"}


def to_numpy(value):
    """A torchlite tensor (detached, copied to the CPU; bfloat16 read as float32), a NumPy array, or
    a Python number or sequence, as a NumPy array."""
    import torchlite
    if isinstance(value, torchlite.Tensor):
        value = value.detach()
        if value.dtype == torchlite.bfloat16:
            value = value.float()
        return np.asarray(value.cpu().numpy())
    return np.asarray(value)


def grid(images, ncols=8):
    """N x H x W x C images tiled row by row, at most ncols to a row, with no padding, on a
    zero canvas of (ceil(N / ncols) H) x (ncols W) x C (PyTorch's tensorboard grid)."""
    n, h, w, c = images.shape
    if n == 0:
        raise ValueError("add_images: the batch holds no image")
    ncols = max(1, min(n, ncols))
    nrows = -(-n // ncols)
    canvas = np.zeros((nrows * h, ncols * w, c), images.dtype)
    for i in range(n):
        r, k = divmod(i, ncols)
        canvas[r * h:(r + 1) * h, k * w:(k + 1) * w] = images[i]
    return canvas


def to_hwc(array, dataformats):
    """array, laid out as dataformats (a permutation of NCHW, CHW or HW; case ignored), as an
    H x W x C array with C 3 or 4: gray images become RGB, a batch becomes one grid image."""
    fmt = dataformats.upper()
    if len(fmt) != array.ndim or sorted(fmt) != sorted(_LAYOUTS.get(len(fmt), "?")):
        raise ValueError(f"dataformats {dataformats!r} does not describe an image array of shape {array.shape} "
                         f"(use a permutation of NCHW, CHW or HW with as many letters as dimensions)")
    if len(fmt) == 2:
        array = array.transpose([fmt.index(a) for a in "HW"])[:, :, None]
    elif len(fmt) == 3:
        array = array.transpose([fmt.index(a) for a in "HWC"])
    else:
        batch = array.transpose([fmt.index(a) for a in "NHWC"])
        if batch.shape[3] == 1:
            batch = np.repeat(batch, 3, axis=3)
        array = grid(batch)
    if array.shape[2] == 1:
        array = np.repeat(array, 3, axis=2)
    if array.shape[2] not in (3, 4):
        raise ValueError(f"an image has 1, 3 or 4 channels, not {array.shape[2]}")
    return array


def to_uint8(array):
    """Pixel values as uint8: uint8 arrays as they are, any other dtype read as [0, 1],
    scaled by 255, clipped and truncated (PyTorch's rule)."""
    if array.dtype == np.uint8:
        return array
    return (array.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)


def _pil_image():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("torchlite.utils.tensorboard encodes images with Pillow, which is not installed: "
                          "pip install \"torchlite-dl[vision]\"") from None
    return Image


def encode_png(hwc):
    """An H x W x 3 (RGB) or 4 (RGBA) uint8 array as PNG bytes."""
    import io
    buf = io.BytesIO()
    _pil_image().fromarray(np.ascontiguousarray(hwc)).save(buf, format="PNG")
    return buf.getvalue()


def figure_to_chw(figure, close=True):
    """A matplotlib figure rendered (Agg) as a 3 x H x W uint8 RGB array; close: close it then."""
    try:
        import matplotlib.pyplot as plt
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError:
        raise ImportError("add_figure renders figures with matplotlib, which is not installed: "
                          "pip install matplotlib") from None
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    chw = np.asarray(canvas.buffer_rgba())[:, :, :3].transpose(2, 0, 1).copy()
    if close:
        plt.close(figure)
    return chw
