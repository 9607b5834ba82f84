"""Joining on the GPU: torchlite._core.joining's cat_into and stack_into, as one copy per
input into its slice of the output (the copy kernel casts and walks any strides)."""
from .._core import joining as _cpu_joining
from ._registry import native


def _copy_all(out, pieces):
    from ._copy import copy_
    for view, a in pieces:
        if copy_(view, a) is NotImplemented:
            return NotImplemented
    return out


@native("joining", "cat_into", kernel=True)
def cat_into(out, arrays, d):
    _cpu_joining.check_no_alias(out._meta, [a._meta for a in arrays])
    pieces, start = [], 0
    for a in arrays:
        if a.ndim == 1 and a.shape[0] == 0 and out.ndim != 1:
            continue                        # PyTorch skips legacy empty (0,) inputs
        pieces.append((out.slice(d, start, start + a.shape[d], 1), a))
        start += a.shape[d]
    return _copy_all(out, pieces)


@native("joining", "stack_into", kernel=True)
def stack_into(out, arrays, d):
    _cpu_joining.check_no_alias(out._meta, [a._meta for a in arrays])
    return _copy_all(out, [(out.select(d, i), a) for i, a in enumerate(arrays)])


@native("joining", "zero_triangle", kernel=True)
def zero_triangle(a, diagonal, keep_upper):
    """tril_/triu_ in place: a = where(keep, a, 0) with keep = (col - row <= diagonal), or
    >= for the upper triangle, built from two aranges."""
    from .._core import elementwise as _cpu_ew
    from . import _array
    from ._elementwise import binary, fill_affine, ternary
    if a.ndim < 2:
        return NotImplemented                     # the CPU's error
    rows_n, cols_n = a.shape[-2], a.shape[-1]
    rows = fill_affine(_array.empty((rows_n,), 5, a.device_index), 0, 1)
    cols = fill_affine(_array.empty((cols_n,), 5, a.device_index), 0, 1)
    diff = binary(_cpu_ew.BINARY["sub"], cols.view((1, cols_n)), rows.view((rows_n, 1)))
    keep = binary(_cpu_ew.BINARY["ge" if keep_upper else "le"], diff, int(diagonal))
    zero = False if a.dtype == 0 else 0
    return ternary(_cpu_ew.TERNARY["where"], keep, a, zero, out=a)
