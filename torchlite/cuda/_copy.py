"""The CUDA versions of the array layer's copies and memset that need no kernel of their own
(fill_, copy_, clone, contiguous, reinterpret): the driver's memset and copies, with the
elementwise cast kernel (cuda/_elementwise.py) for the strided and casting cases.  The other
backend modules copy through these."""
from .._core import elementwise as _cpu_ew
from . import _array, _state
from ._array import CudaArray
from ._registry import native


@native("array", "fill_")
def fill_(a, value):
    if _array.fill_(a, value) is None:         # not dense: a kernel's job
        if not _state.kernels_enabled:
            return NotImplemented
        from . import _elementwise
        return _elementwise.fill_strided(a, value)
    return None


@native("array", "reinterpret")
def reinterpret(a, dtype, shape, strides, offset):
    """The same device bytes seen as another dtype (Tensor.view(dtype)): metadata only."""
    return _array.reinterpret(a, dtype, shape, strides, offset)


@native("elementwise", "copy_")
def copy_(dst, src):
    """dst[...] = src, src broadcast to dst's shape and cast to its dtype; either may be on
    the host (the transfers of Tensor.copy_ and .to())."""
    if dst.shape != src.shape or dst.dtype != src.dtype or src.numel == 0 \
            or not (dst.is_non_overlapping_and_dense() and src.is_non_overlapping_and_dense()) \
            or dst.strides != src.strides:
        return _copy_general(dst, src)
    if isinstance(dst, CudaArray) and isinstance(src, CudaArray):
        if dst.device_index == src.device_index:
            if not (dst.same_storage(src) and dst.offset == src.offset):
                _check_overlap(dst, src)
                _array.copy_d2d(dst, src)
            return dst
        src = _array.to_host(src)
    if isinstance(dst, CudaArray):        # host -> device
        _array.copy_d2d(dst, _array.from_host(src, dst.device_index))
        return dst
    return _cpu_ew.copy_(dst, _array.to_host(src))      # device -> host


def _check_overlap(dst, src):
    lo_d, n_d = _array._span(dst)
    lo_s, n_s = _array._span(src)
    if dst.same_storage(src) and lo_d < lo_s + n_s and lo_s < lo_d + n_d:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                           "written-to tensor refer to a single memory location. Please clone() "
                           "the tensor before performing the operation.")


def _copy_general(dst, src):
    """copy_ with broadcasting, casting or layouts that differ: on one device by the cast
    kernel (or the fallback), across devices by staging the source on dst's device."""
    if isinstance(dst, CudaArray) and not (isinstance(src, CudaArray)
                                           and src.device_index == dst.device_index):
        src = _array.move_to_device(src, dst.device_index)
    elif not isinstance(dst, CudaArray):
        return _cpu_ew.copy_(dst, _array.to_host(src))
    return NotImplemented if not _state.kernels_enabled else _kernel_copy(dst, src)


def _kernel_copy(dst, src):
    from . import _elementwise
    return _elementwise.copy_(dst, src)


@native("elementwise", "clone")
def clone(a, preserve=True):
    """A copy with its own memory: a's strides when a is dense (and preserve), else contiguous."""
    if a.numel == 0 or a.is_contiguous() or (preserve and a.is_non_overlapping_and_dense()):
        return _array.clone_dense(a)
    return NotImplemented if not _state.kernels_enabled else _kernel_copy(
        _array.empty(a.shape, a.dtype, a.device_index), a)


@native("elementwise", "contiguous")
def contiguous(a):
    if a.is_contiguous():
        return a
    return clone(a, False)
