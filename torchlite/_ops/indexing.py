"""Indexing: tensor[...] and tensor[...] = value.

Basic indexing (ints, slices with steps, None, Ellipsis) gives views computed in the array
layer.  Advanced indexing (bool masks, integer tensors/lists) is in the index kernels."""
import builtins

from .._core import elementwise as _ew
from .._tensor import Tensor, _wrap
from . import _register


def _is_basic(i):
    return i is None or i is Ellipsis or isinstance(i, (builtins.int, slice)) and not isinstance(i, builtins.bool)


def _expand_index(t, idx):
    """Normalise an index to a tuple with Ellipsis expanded; returns (items, consumed dims)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if used > t.ndim:
        raise IndexError(f"too many indices for tensor of dimension {t.ndim}")
    out = []
    for i in idx:
        if i is Ellipsis:
            out.extend([slice(None)] * (t.ndim - used))
        else:
            out.append(i)
    return out


def _basic_view(arr, items):
    """Apply ints, slices and None to the array, left to right."""
    dim = 0
    for i in items:
        if i is None:
            arr = arr.unsqueeze(dim)
            dim += 1
        elif isinstance(i, slice):
            step = 1 if i.step is None else i.step.__index__()
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start = None if i.start is None else i.start.__index__()
            stop = None if i.stop is None else i.stop.__index__()
            arr = arr.slice(dim, start, stop, step)
            dim += 1
        else:
            size = arr.shape[dim]
            if i < -size or i >= size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            arr = arr.select(dim, i)
    return arr


def _as_index(i):
    if isinstance(i, Tensor) and i.ndim == 0 and not i.is_floating_point() and i.dtype.name != "bool":
        return i.item()
    if hasattr(i, "__index__") and not isinstance(i, (Tensor, builtins.bool)) and not isinstance(i, builtins.int):
        return i.__index__()
    return i


def getitem(self, idx):
    items = _expand_index(self, tuple(_as_index(i) for i in idx) if isinstance(idx, tuple) else _as_index(idx))
    if all(_is_basic(i) for i in items):
        return _wrap(_basic_view(self._data, items))
    return _advanced_getitem(self, items)


def setitem(self, idx, value):
    items = _expand_index(self, tuple(_as_index(i) for i in idx) if isinstance(idx, tuple) else _as_index(idx))
    if all(_is_basic(i) for i in items):
        dst = _basic_view(self._data, items)
        if isinstance(value, Tensor):
            if value.device != self.device:
                raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                                   f"two devices, {self.device} and {value.device}!")
            _ew.copy_(dst, value._data)
        else:
            from .._core import array as _A
            from .._tensor import _as_pyscalar
            if isinstance(value, (list, tuple)):
                from .creation import tensor
                _ew.copy_(dst, tensor(value, dtype=self.dtype)._data)
            else:
                _A.fill_(dst, _as_pyscalar(value))
        self._bump_version()
        return
    _advanced_setitem(self, items, value)


def _advanced_getitem(self, items):
    raise IndexError("tensors used as indices (masks, integer arrays) are not supported yet")


def _advanced_setitem(self, items, value):
    raise IndexError("tensors used as indices (masks, integer arrays) are not supported yet")


__all__ = []

Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
