"""DLPack interop: ``Tensor.__dlpack__``, ``Tensor.__dlpack_device__``, ``from_dlpack``.

Zero-copy exchange with NumPy, PyTorch, JAX, CuPy (host memory) and anything else that speaks
DLPack.  The structs and capsules live in torchlite/_core/dlpack.pyx; this module adds the
Python protocol (argument checks, the producer call with its fallbacks) and registers the
Tensor methods.  Importing it is enough (torchlite/__init__.py does).
"""
import enum

from . import _dispatch
from ._dispatch import dlpack as _dl
from ._core.array import Array as _CpuArray
from ._device import to_device
from ._ops import _register
from ._tensor import Tensor, _wrap

__all__ = ["from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """Device types of the DLPack specification (dlpack.h)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def _device_name(dl_device):
    try:
        return f"{DLDeviceType(int(dl_device[0])).name}:{int(dl_device[1])}"
    except (ValueError, TypeError, IndexError):
        return repr(dl_device)


def _check_max_version(max_version):
    if max_version is None:
        return False
    if (not isinstance(max_version, tuple) or len(max_version) != 2
            or not all(isinstance(v, int) for v in max_version)):
        raise TypeError(f"__dlpack__: max_version must be a tuple of two ints or None, "
                        f"got {max_version!r}")
    return max_version[0] >= 1


@_register("__dlpack__")
def __dlpack__(self, stream=None, *, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule sharing this tensor's memory (the array API's ``__dlpack__``).

    Args:
        stream: must be None (or -1) for CPU tensors, which have no streams.
        max_version: the highest DLPack version the consumer reads; (1, x) or later gives a
            versioned "dltensor_versioned" capsule, None the legacy "dltensor" one.
        dl_device: the device the consumer wants the data on; only this tensor's own.
        copy: True always exports a copy, False and None share memory.
    """
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"__dlpack__: copy must be a bool or None, got {copy!r}")
    versioned = _check_max_version(max_version)
    if not isinstance(self._data, _CpuArray):
        return _export_cuda(self, stream, versioned, dl_device, copy)
    if stream is not None and stream != -1:
        raise AssertionError("stream should be None on cpu.")
    if dl_device is not None and tuple(dl_device) != (DLDeviceType.kDLCPU, 0):
        raise BufferError(f"__dlpack__: cannot export a {self.device} tensor to device "
                          f"{_device_name(dl_device)}")
    return _dl.to_capsule(self._data, versioned, copy is True)


def _export_cuda(self, stream, versioned, dl_device, copy):
    """__dlpack__ of a CUDA tensor: the consumer's `stream` (None or 1: the legacy default
    stream, 2: the per-thread default stream, another int: a stream handle, -1: no ordering)
    is made to wait for the work queued on this tensor's device so far."""
    idx = self._data.device_index
    if dl_device is not None and tuple(int(v) for v in dl_device) != (DLDeviceType.kDLCUDA, idx):
        raise BufferError(f"__dlpack__: cannot export a {self.device} tensor to device "
                          f"{_device_name(dl_device)}")
    if stream == 0:
        raise ValueError("__dlpack__: stream 0 is ambiguous for CUDA; pass 1 for the legacy "
                         "default stream, 2 for the per-thread one, or a stream handle")
    arr = self._data
    if copy is True:
        from ._dispatch import elementwise as _ew
        arr = _ew.clone(arr)
    if stream != -1:
        _dispatch.devices.order_after_current(idx, {None: 0, 1: 0}.get(stream, stream))
    return _dl.to_capsule(arr._meta, versioned, False, DLDeviceType.kDLCUDA, idx, copy is True)


@_register("__dlpack_device__")
def __dlpack_device__(self):
    """(DLDeviceType, device index) of this tensor's memory, e.g. (kDLCPU, 0)."""
    d = self.device
    if d.type == "cuda":
        return (DLDeviceType.kDLCUDA, d.index or 0)
    return (DLDeviceType.kDLCPU, 0)


def to_dlpack(tensor):
    """A legacy "dltensor" capsule sharing ``tensor``'s memory (torch.utils.dlpack.to_dlpack).
    Each capsule can be consumed once."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack: expected a Tensor, got {type(tensor).__name__}")
    return tensor.__dlpack__()


def _call_producer(ext_tensor, kwargs):
    """ext_tensor.__dlpack__(**kwargs), dropping the keywords an older producer rejects (in
    the order of PyTorch's from_dlpack).  Returns (capsule, whether `copy` was passed)."""
    order = ("max_version", "copy", "dl_device")
    for drop in range(len(order)):
        try:
            return ext_tensor.__dlpack__(**kwargs), "copy" in kwargs
        except TypeError:
            kwargs.pop(order[drop], None)
    return ext_tensor.__dlpack__(**kwargs), "copy" in kwargs


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A Tensor sharing memory with ``ext_tensor`` (any object with ``__dlpack__``, such as
    a NumPy array or a PyTorch tensor, or a DLPack capsule from ``to_dlpack``).

    Writes through either side show in the other, and the memory stays valid after the
    producer object is gone.  ``copy=True`` returns a copy, ``copy=False`` refuses to copy
    (BufferError when a view is impossible), and the default copies only memory torchlite
    cannot view in place: read-only, negatively strided or misaligned data.  A CUDA tensor
    (PyTorch's, CuPy's, ...) becomes a torchlite CUDA tensor over the same device memory, its
    producer's pending work ordered before torchlite's current stream; ``device`` may be the
    CPU for host memory, or that CUDA device.

    >>> import numpy as np, torchlite as torch
    >>> a = np.arange(4.0)
    >>> t = torch.from_dlpack(a)
    >>> t[0] = 7.0
    >>> a[0]
    np.float64(7.0)
    """
    if _dl.is_capsule(ext_tensor):
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is "
                                 "already a DLPack capsule.")
        kind, idx = _dl.capsule_device(ext_tensor)
        if kind == DLDeviceType.kDLCUDA:
            _require_cuda(idx)
            return _wrap(_cuda_view(ext_tensor, idx))
        return _wrap(_dl.from_capsule(ext_tensor))
    if not hasattr(ext_tensor, "__dlpack__"):
        return _wrap(_dl.from_capsule(ext_tensor))   # raises the "invalid capsule" RuntimeError
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"from_dlpack: copy must be a bool or None, got {copy!r}")
    if device is not None and to_device(device).type != "cpu":
        raise RuntimeError(f"from_dlpack: torchlite can place DLPack tensors on the CPU only, "
                           f"got device={to_device(device)}")
    if hasattr(ext_tensor, "__dlpack_device__"):
        src = ext_tensor.__dlpack_device__()
        if int(src[0]) == DLDeviceType.kDLCUDA:
            return _import_cuda(ext_tensor, int(src[1]), device, copy)
        if int(src[0]) not in _dl.HOST_DEVICE_TYPES:
            raise BufferError(f"from_dlpack: the tensor is on {_device_name(src)}; torchlite "
                              f"reads CPU-accessible memory only")
    kwargs = {"max_version": _dl.DLPACK_VERSION}
    if copy is not None:
        kwargs["copy"] = copy
    if device is not None:
        kwargs["dl_device"] = (DLDeviceType.kDLCPU, 0)
    capsule, producer_saw_copy = _call_producer(ext_tensor, kwargs)
    # a producer that honoured copy=True already handed over fresh memory
    consumer_copy = None if (copy is True and producer_saw_copy) else copy
    return _wrap(_dl.from_capsule(capsule, consumer_copy))


def _require_cuda(idx):
    """BufferError, before anything is exported or consumed, when CUDA memory cannot be used
    here (the unsupported-device error of the DLPack protocol, naming what is missing)."""
    if not _dispatch.cuda_available():
        try:
            reason = _dispatch.devices.unavailable_reason()
        except RuntimeError as e:           # no backend at all
            reason = str(e)
        raise BufferError(f"from_dlpack: unsupported device (kDLCUDA:{idx}): CUDA is not "
                          f"available here because {reason}")


def _cuda_view(capsule, idx):
    """A CUDA array over a capsule's memory on device idx (consumes the capsule)."""
    return _dispatch.devices.view_capsule(capsule, idx)


def _import_cuda(ext_tensor, idx, device, copy):
    """from_dlpack of a CUDA producer: its data viewed in place on cuda:idx (copied on the
    device with copy=True), ordered after the producer's work by the stream protocol."""
    _require_cuda(idx)
    if device is not None and to_device(device) not in (to_device(f"cuda:{idx}"), to_device("cuda")):
        raise RuntimeError(f"from_dlpack: the tensor is on cuda:{idx}; torchlite cannot place it "
                           f"on {to_device(device)}")
    stream = _dispatch.devices.current_stream(idx) or 1  # 1: the legacy default stream
    kwargs = {"stream": stream, "max_version": _dl.DLPACK_VERSION}
    try:
        capsule = ext_tensor.__dlpack__(**kwargs)
    except TypeError:                                   # a producer without max_version
        capsule = ext_tensor.__dlpack__(stream=stream)
    t = _wrap(_cuda_view(capsule, idx))
    return t.clone() if copy is True else t
