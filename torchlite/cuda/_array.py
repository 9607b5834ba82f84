"""The CUDA array: the array layer's interface (torchlite/_core/__init__.py) over device memory.

A CudaArray keeps its shape, strides, offset and dtype in a CPU `Array` over the device
address (`_core.array.external`), so every view op is the CPU's code, run on metadata only
(the base class, `_core/metadata_array.pyx`).
That inner array never reaches a CPU kernel: this class is not a CPU `Array`, so the Cython
kernels reject it, and torchlite/_dispatch.py routes calls with CUDA arrays to the CUDA
backend.  The device memory is a caching-allocator Block, owned by the inner storage, so it is
released when the last view dies.

Also here: creating arrays on a device and moving bytes between host and device.
"""
import ctypes
import math

from .._core import array as _A
from .._core import elementwise as _ew
from .._core.metadata_array import MetadataArray
from . import _runtime
from ._allocator import Block
from ._kernels import ITEMSIZE


class CudaArray(MetadataArray):
    __slots__ = ("__weakref__",)

    def __init__(self, meta, device_index):
        self._meta = meta
        self.device_index = device_index

    @property
    def device(self):
        return f"cuda:{self.device_index}"

    @property
    def block(self):
        """The allocator Block holding the memory."""
        return self._meta.storage.owner

    def allocator_owned(self):
        """Whether the memory is a block of torchlite's caching allocator, which only this
        array's storage holds (not memory imported through DLPack or the CUDA array
        interface): what lets autograd take a gradient as a leaf's .grad without a copy."""
        return isinstance(self._meta.storage.owner, Block)

    def data_ptr(self):
        """The device address of the first element."""
        return self._meta.data_ptr()

    def record_stream(self, stream_handle, owner=None):
        block = self.block
        if block is not None:
            block.record_stream(stream_handle, owner)

    # ---- element access (through the host) -------------------------------------------------
    def item(self):
        if self.numel != 1:
            raise RuntimeError(f"a Tensor with {self.numel} elements cannot be converted to Scalar")
        return to_host(self).item()

    def tolist(self):
        return to_host(self).tolist()

    def __repr__(self):
        return f"<CudaArray shape={self.shape} dtype={self.dtype} device={self.device}>"


def reinterpret(a, dtype, shape, strides, offset):
    """The same bytes seen as another dtype (array.reinterpret for device arrays)."""
    return CudaArray(_A.reinterpret(a._meta, dtype, shape, strides, offset), a.device_index)


# ---- creation ------------------------------------------------------------------------------
_over = CudaArray.over           # CudaArray(meta, device_index) without the Python __init__

def _checked_shape(shape, op="empty"):
    shape = tuple(shape)
    for d in shape:                   # the common case first: Python ints, none negative
        if type(d) is not int or d < 0:
            break
    else:
        return shape
    for i, d in enumerate(shape):
        try:
            d = d.__index__()
        except AttributeError:
            raise TypeError(f"{op}: size must be a sequence of ints, but got {type(d).__name__} "
                            f"at position {i} of {shape}") from None
        if d < 0:
            raise RuntimeError(f"{op}: negative dimension {d} in size {shape}")
    return tuple(int(d) for d in shape)


def checked_size(shape, dtype):
    """(shape as a tuple of ints, bytes of a contiguous array of it), with the CPU's errors."""
    shape = _checked_shape(shape)
    return shape, math.prod(shape) * ITEMSIZE[dtype]


def empty(shape, dtype, device_index):
    """A new contiguous, uninitialised array on a device."""
    shape, nbytes = checked_size(shape, dtype)
    block = _runtime.malloc(device_index, nbytes)
    return _over(_A.external(block.address, nbytes, block, dtype).view(shape), device_index)


def _wrap_block(block, nbytes, dtype, device_index, shape, strides, offset):
    base = _A.external(block.address, max(nbytes, 0), block, dtype)
    return _over(base.as_strided(shape, strides, offset), device_index)


def fill_(a, value):
    """Set every element of device array `a` to `value` (the CPU's conversion rules)."""
    one = _A.full((), value, a.dtype)                      # the value as a's dtype, checked as on the CPU
    pattern = bytes(ctypes.string_at(one.data_ptr(), one.itemsize))
    if a.numel == 0:
        return a
    if a.is_contiguous() or a.is_non_overlapping_and_dense():
        _runtime.memset(a.device_index, _span_start(a), pattern, a.numel)
        return a
    return None       # strided: the caller falls back to a kernel


def _span_start(a):
    """Device address of the lowest element of a dense (permuted) array."""
    lo = a.offset + sum((s - 1) * st for s, st in zip(a.shape, a.strides) if st < 0)
    return a.storage.data_ptr() + lo * a.itemsize


# ---- host <-> device ---------------------------------------------------------------------------
def _span(a):
    """(first, count): the element span of a's storage that a's elements lie in."""
    if a.numel == 0:
        return a.offset, 0
    lo = hi = a.offset
    for s, st in zip(a.shape, a.strides):
        if st >= 0:
            hi += (s - 1) * st
        else:
            lo += (s - 1) * st
    return lo, hi - lo + 1


def from_host(src, device_index, non_blocking=False):
    """Copy CPU array `src` to a new array on a device (contiguous, or with src's strides
    when src is dense)."""
    if src.numel and not src.is_non_overlapping_and_dense():
        src = _ew.contiguous(src)
    first, count = _span(src)
    nbytes = count * src.itemsize
    block = _runtime.malloc(device_index, nbytes)
    if nbytes:
        _runtime.copy_h2d(device_index, block.address, src.storage.data_ptr() + first * src.itemsize,
                          nbytes, keep_alive=src, blocking=not non_blocking)
    return _wrap_block(block, nbytes, src.dtype, device_index, src.shape, src.strides,
                       src.offset - first)


def to_host(a, non_blocking=False, pinned=False):
    """A CPU array with a's elements: a's strides when a is dense, else contiguous.  With
    non_blocking the copy lands in pinned memory and is not waited for (as PyTorch, the
    caller synchronises before reading it), and a non-dense a keeps its span's layout."""
    first, count = _span(a)
    nbytes = count * a.itemsize
    if pinned or non_blocking:
        from . import _host
        host = _host.pinned_empty((count,), a.dtype)
    else:
        host = _A.empty((count,), a.dtype)
    if nbytes:
        _runtime.copy_d2h(a.device_index, host.data_ptr(), a.storage.data_ptr() + first * a.itemsize,
                          nbytes, blocking=not non_blocking)
    view = host.as_strided(a.shape, a.strides, a.offset - first)
    if view.is_non_overlapping_and_dense() or non_blocking:
        return view                       # a dense layout is kept, as PyTorch's .cpu() does
    return _ew.contiguous(view)


def copy_d2d(dst, src):
    """dst[...] = src for arrays on one device with one dtype, shape and dense layout: a
    plain byte copy."""
    nbytes = src.numel * src.itemsize
    if nbytes:
        _runtime.copy_d2d(dst.device_index, _span_start(dst), _span_start(src), nbytes)


def clone_dense(a):
    """A copy of dense array `a` with the same strides, by one byte copy of its span."""
    first, count = _span(a)
    nbytes = count * a.itemsize
    block = _runtime.malloc(a.device_index, nbytes)
    if nbytes:
        _runtime.copy_d2d(a.device_index, block.address,
                          a.storage.data_ptr() + first * a.itemsize, nbytes)
    return _wrap_block(block, nbytes, a.dtype, a.device_index, a.shape, a.strides, a.offset - first)


def move_to_device(arr, device_index, non_blocking=False):
    """arr (CPU or CUDA) as an array on device `device_index` (arr itself when it is there)."""
    if isinstance(arr, CudaArray):
        if arr.device_index == device_index:
            return arr
        return from_host(to_host(arr), device_index, non_blocking)
    return from_host(arr, device_index, non_blocking)


