"""torchlite.Size: the tuple subclass returned by Tensor.shape / Tensor.size()."""


class Size(tuple):
    __slots__ = ()

    def __repr__(self):
        return f"torchlite.Size([{', '.join(str(d) for d in self)}])"

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))


# Element counts, extents and strides past this overflow the int64 byte offsets the array
# layer computes with, so every shape a user passes in is checked against it first.
MAX_NUMEL = 2 ** 62


def ints_from_args(args, op, what="size"):
    """f(2, 3), f((2, 3)), f([2, 3]) and f(Size([2, 3])) all give (2, 3): a tuple of Python
    ints.  Anything with __index__ (NumPy integers, one-element integer tensors) counts."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    out = []
    for s in args:
        if not isinstance(s, int):
            try:
                s = s.__index__()
            except AttributeError:
                raise TypeError(f"{op}(): argument '{what}' must be tuple of ints, but found "
                                f"element of type {type(s).__name__}") from None
        out.append(s)
    return tuple(out)


def check_numel(shape, op):
    """shape itself, or RuntimeError when its element count (or a dim) exceeds MAX_NUMEL;
    -1 entries (inferred dims) and zeros are skipped."""
    n = 1
    for s in shape:
        if s > 0:
            n *= s
    if n > MAX_NUMEL:
        raise RuntimeError(f"{op}: size {tuple(shape)} is too large (more than 2**62 elements)")
    return shape
