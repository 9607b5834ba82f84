"""Pinned (page-locked) host memory: CPU arrays that asynchronous copies can read and write
while the host goes on (Tensor.pin_memory, DataLoader(pin_memory=True), non_blocking=True).
The blocks come from a caching allocator of their own (torchlite/cuda/_runtime.py); CPU
kernels use these arrays like any other."""
from .._core import array as _A
from .._core import elementwise as _ew
from . import _runtime
from ._allocator import Block
from ._array import checked_size


def pinned_empty(shape, dtype):
    """A new contiguous CPU array in pinned memory."""
    shape, nbytes = checked_size(shape, dtype)
    block = _runtime.malloc_host(nbytes)
    return _A.external(block.address, nbytes, block, dtype).view(shape)


def pin(arr):
    """A copy of CPU array `arr` in pinned memory (arr itself when it is pinned already)."""
    if is_pinned(arr):
        return arr
    out = pinned_empty(arr.shape, arr.dtype)
    _ew.copy_(out, arr)
    return out


def is_pinned(arr):
    owner = getattr(arr.storage, "owner", None)
    return isinstance(owner, Block) and owner.device == _runtime.HOST
