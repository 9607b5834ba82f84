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


CHANNELS_LAST_ORDER = (1, 3, 2, 0)        # dims innermost first of a channels_last 4-d tensor


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
        return list(CHANNELS_LAST_ORDER)
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


def is_channels_last(arr) -> bool:
    """Whether array arr is a 4-d tensor laid out channels_last and not also contiguous
    (suggest_memory_format's answer, PyTorch's rule for the layout of a convolution's or a
    pooling's result).  A contiguous array answers at once: the convolutions ask on every
    call."""
    return arr.ndim == 4 and not arr.is_contiguous() and suggest(arr.shape, arr.strides) is channels_last


def suggest(shape, strides):
    """The format a tensor is laid out in, for *_like(preserve_format): channels_last(_3d)
    when its strides are those (and not also contiguous), else None."""
    nd = len(shape)
    if nd in (4, 5):
        order = CHANNELS_LAST_ORDER if nd == 4 else (1, 4, 3, 2, 0)
        if follows(shape, strides, order) and not follows(shape, strides, range(nd - 1, -1, -1)):
            return channels_last if nd == 4 else channels_last_3d
    return None


# ---- the strides of a new tensor made "like" another (empty_like, clone, rand_like, ...) ------
# PyTorch's rules, so that results have its exact strides (tests/test_memory_format.py checks
# them against torch on random layouts).
def format_strides(shape: tuple[int, ...], fmt: memory_format, op: str) -> tuple[int, ...]:
    """The strides PyTorch gives a new tensor of `shape` in format `fmt` (not preserve), with
    its rank errors (named after op).  channels_last(_3d) multiply by the raw sizes, so a
    size-0 dim gives 0 strides outside it (c10's get_channels_last_strides); contiguous
    strides skip size-0 dims like size-1 ones."""
    order = dim_order(fmt, len(shape), op)
    if fmt is channels_last or fmt is channels_last_3d:
        strides = [0] * len(shape)
        step = 1
        for d in order:
            strides[d] = step
            step *= shape[d]
        return tuple(strides)
    return strides_for(shape, range(len(shape) - 1, -1, -1))


def non_overlapping_and_dense(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """PyTorch's is_non_overlapping_and_dense: the elements fill a block of memory with no gap
    and no overlap, in some dim order.  Strides of size-1 dims do not matter, and an empty
    tensor counts as dense (PyTorch's is_contiguous is true for it, which implies this)."""
    if 0 in shape:
        return True
    want = 1
    for d in sorted((d for d in range(len(shape)) if shape[d] >= 2), key=lambda d: strides[d]):
        if strides[d] != want:
            return False
        want *= shape[d]
    return True


def infer_dense_strides(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """Dense strides that keep the dim order of a non-dense tensor's strides: ATen's
    infer_dense_strides (the stride propagation TensorIterator uses), ported step for step
    because its tie-breaking decides the result: a 0 stride compares as ambiguous and never
    moves its dim, equal strides put the smaller size inside, and the sort is a stable
    insertion sort starting from the row-major order."""
    nd = len(shape)
    if nd <= 1:
        return (1,) * nd

    def should_swap(d0: int, d1: int) -> int:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    perm = list(range(nd - 1, -1, -1))        # innermost first
    for i in range(1, nd):
        d1 = i
        for j in range(1, i + 1):
            d0 = i - j
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return strides_for(shape, perm)


def like_strides(shape: tuple[int, ...], strides: tuple[int, ...], fmt: memory_format | None,
                 op: str) -> tuple[int, ...]:
    """The strides of an *_like / clone result for an input of `shape` and `strides`.
    preserve_format (or None, the default) is PyTorch's empty_like rule: a non-overlapping and
    dense input keeps its strides exactly; any other input gets dense strides in its own dim
    order (infer_dense_strides: a sliced channels_last input stays channels_last, a transposed
    slice stays transposed).  Other formats lay the result out as asked (rank errors name op)."""
    if fmt is None or fmt is preserve_format:
        if non_overlapping_and_dense(shape, strides):
            return tuple(strides)
        return infer_dense_strides(shape, strides)
    return format_strides(shape, fmt, op)


def is_contiguous_as(shape: tuple[int, ...], strides: tuple[int, ...], fmt: memory_format) -> bool:
    """PyTorch's is_contiguous(memory_format=fmt) for channels_last(_3d): the strides follow
    the format's dim order, size-1 dims skipped and a size-0 dim multiplying the expected
    stride by 0 (c10's is_channels_last_contiguous, which, unlike the row-major test, has no
    shortcut for empty tensors).  False for a tensor of another rank."""
    if len(shape) != (4 if fmt is channels_last else 5):
        return False
    want = 1
    for d in dim_order(fmt, len(shape), "is_contiguous"):
        if shape[d] != 1:
            if strides[d] != want:
                return False
            want *= shape[d]
    return True
