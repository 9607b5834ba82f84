"""Joining on the GPU: torchlite._core.shape_ops's cat_into and stack_into, as one copy per
input into its slice of the output (the copy kernel casts and walks any strides)."""
from .._core import shape_ops as _cpu_shape
from ._registry import native


def _copy_all(out, pieces):
    from ._ops import copy_
    for view, a in pieces:
        if copy_(view, a) is NotImplemented:
            return NotImplemented
    return out


@native("shape_ops", "cat_into", kernel=True)
def cat_into(out, arrays, d):
    _cpu_shape.check_no_alias(out._meta, [a._meta for a in arrays])
    pieces, start = [], 0
    for a in arrays:
        if a.ndim == 1 and a.shape[0] == 0 and out.ndim != 1:
            continue                        # PyTorch skips legacy empty (0,) inputs
        pieces.append((out.slice(d, start, start + a.shape[d], 1), a))
        start += a.shape[d]
    return _copy_all(out, pieces)


@native("shape_ops", "stack_into", kernel=True)
def stack_into(out, arrays, d):
    _cpu_shape.check_no_alias(out._meta, [a._meta for a in arrays])
    return _copy_all(out, [(out.select(d, i), a) for i, a in enumerate(arrays)])
