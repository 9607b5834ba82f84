"""torchlite.memory_format: the dim order a dense tensor's memory follows (torch's
contiguous_format, channels_last, channels_last_3d and preserve_format).

channels_last keeps a 4-d (N, C, H, W) tensor's channels innermost (strides of an NHWC
array); channels_last_3d does the same for 5-d (N, C, D, H, W).  The shape is unchanged: only
the strides differ, and every op takes any strides."""


class memory_format:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torchlite." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
_FORMATS = {f.name: f for f in (contiguous_format, channels_last, channels_last_3d,
                                preserve_format)}


def _by_name(name):
    return _FORMATS[name]


def check(fmt, op):
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be torchlite.memory_format, not "
                        f"{type(fmt).__name__}")
    return fmt


def dim_order(fmt, ndim, op):
    """The dims innermost first for `fmt` (None for preserve_format or no format given), with
    PyTorch's rank errors."""
    if fmt is None or fmt is preserve_format:
        return None
    if fmt is channels_last:
        if ndim != 4:
            raise RuntimeError(f"{op}: required rank 4 tensor to use channels_last format")
        return [1, 3, 2, 0]
    if fmt is channels_last_3d:
        if ndim != 5:
            raise RuntimeError(f"{op}: required rank 5 tensor to use channels_last_3d format")
        return [1, 4, 3, 2, 0]
    return list(range(ndim - 1, -1, -1))


def strides_for(shape, order):
    """The dense strides of `shape` with dims laid out innermost first in `order`."""
    strides = [0] * len(shape)
    step = 1
    for d in order:
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def follows(shape, strides, order):
    """Whether strides are the dense strides of `order` (size-1 dims may have any stride)."""
    want = strides_for(shape, order)
    return all(s == w or n == 1 for s, w, n in zip(strides, want, shape))


def suggest(shape, strides):
    """The format a tensor is laid out in, for *_like(preserve_format): channels_last(_3d)
    when its strides are those (and not also contiguous), else None."""
    nd = len(shape)
    if nd in (4, 5):
        order = [1, 3, 2, 0] if nd == 4 else [1, 4, 3, 2, 0]
        if follows(shape, strides, order) and not follows(shape, strides, range(nd - 1, -1, -1)):
            return channels_last if nd == 4 else channels_last_3d
    return None
