"""DLPack interop: ``Tensor.__dlpack__``, ``Tensor.__dlpack_device__``, ``from_dlpack``.

Zero-copy exchange with NumPy, PyTorch, JAX, CuPy (host memory) and anything else that speaks
DLPack.  The structs and capsules live in torchlite/_core/dlpack.pyx; this module adds the
Python protocol (argument checks, the producer call with its fallbacks) and registers the
Tensor methods.  Importing it is enough (torchlite/__init__.py does).
"""
import enum

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
        raise BufferError(f"__dlpack__: torchlite exports only CPU tensors through DLPack; "
                          f"this tensor is on {self.device} (copy it with .cpu() first)")
    if stream is not None and stream != -1:
        raise AssertionError("stream should be None on cpu.")
    if dl_device is not None and tuple(dl_device) != (DLDeviceType.kDLCPU, 0):
        raise BufferError(f"__dlpack__: cannot export a {self.device} tensor to device "
                          f"{_device_name(dl_device)}")
    return _dl.to_capsule(self._data, versioned, copy is True)


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
    cannot view in place: read-only, negatively strided or misaligned data.
    ``device`` may only be the CPU.

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
