"""torchlite.accelerator: PyTorch's device-generic accelerator API (torch.accelerator), which
current tutorials use to pick a device:

    device = torchlite.accelerator.current_accelerator().type \
        if torchlite.accelerator.is_available() else "cpu"

torchlite's one accelerator is CUDA, so each function here is torchlite.cuda's counterpart.
Where no GPU is usable, is_available() is False, current_accelerator() is None and the
functions that need a device raise PyTorch's "Cannot access accelerator device when none is
available." (torchlite has no build without its CUDA backend, so current_accelerator() without
check_available reports the accelerator only where one is usable.)"""
from __future__ import annotations

import contextlib
import warnings
from typing import TYPE_CHECKING

from ._device import device as _device

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "set_device_index", "device_index", "current_stream", "set_stream", "synchronize",
           "empty_cache", "empty_host_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "memory_stats", "reset_peak_memory_stats",
           "reset_accumulated_memory_stats", "get_memory_info", "get_device_capability",
           "current_device_idx", "set_device_idx"]


def _cuda():
    from . import cuda
    return cuda


def _usable():
    """torchlite.cuda, or PyTorch's error when no GPU is usable."""
    cuda = _cuda()
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return cuda


def is_available() -> bool:
    """Whether an accelerator (a CUDA GPU) is usable."""
    return _cuda().is_available()


def current_accelerator(check_available: bool = False) -> _device | None:
    """The accelerator's device type as a device (device('cuda')), or None without one."""
    return _device("cuda") if is_available() else None


def device_count() -> int:
    """How many accelerator devices there are (0 without one)."""
    return _cuda().device_count() if is_available() else 0


def current_device_index() -> int:
    """The index of the current accelerator device."""
    return _usable().current_device()


def set_device_index(device: _device | str | int) -> None:
    """Make `device` (an index, 'cuda:N' or a device) the current accelerator device."""
    _usable().set_device(device)


@contextlib.contextmanager
def device_index(device: _device | str | int | None) -> Iterator[None]:
    """Inside the context, `device` (an index, or None for no change) is the current device."""
    if device is None:
        yield
        return
    cuda = _usable()
    previous = cuda.current_device()
    cuda.set_device(device)
    try:
        yield
    finally:
        cuda.set_device(previous)


def current_device_idx() -> int:
    """Deprecated spelling of current_device_index."""
    warnings.warn("torch.accelerator.current_device_idx is deprecated, use "
                  "current_device_index instead", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device: _device | str | int) -> None:
    """Deprecated spelling of set_device_index."""
    warnings.warn("torch.accelerator.set_device_idx is deprecated, use set_device_index instead",
                  FutureWarning, stacklevel=2)
    set_device_index(device)


def current_stream(device: _device | str | int | None = None) -> Any:
    """The current stream of `device` (default: the current device)."""
    return _usable().current_stream(device)


def set_stream(stream: Any) -> None:
    """Make `stream` the current stream of its device."""
    cuda = _usable()
    if not isinstance(stream, cuda.Stream):
        raise TypeError(f"set_stream(): argument 'stream' must be a Stream, not "
                        f"{type(stream).__name__}")
    cuda.set_stream(stream)


def synchronize(device: _device | str | int | None = None) -> None:
    """Wait for every kernel queued on `device` (default: the current device)."""
    _usable().synchronize(device)


def empty_cache() -> None:
    """Release the caching allocator's unused blocks."""
    _usable().empty_cache()


def empty_host_cache() -> None:
    """Release the cached pinned host blocks (nothing to do before the backend has started)."""
    cuda = _cuda()
    if cuda.is_available() and cuda.is_initialized():
        cuda._empty_host_cache()


def memory_allocated(device_index: int | None = None) -> int:
    """Bytes held by tensors on the device."""
    return _usable().memory_allocated(device_index)


def max_memory_allocated(device_index: int | None = None) -> int:
    """The peak of memory_allocated since the start or the last reset."""
    return _usable().max_memory_allocated(device_index)


def memory_reserved(device_index: int | None = None) -> int:
    """Bytes the caching allocator holds from the driver."""
    return _usable().memory_reserved(device_index)


def max_memory_reserved(device_index: int | None = None) -> int:
    """The peak of memory_reserved since the start or the last reset."""
    return _usable().max_memory_reserved(device_index)


def memory_stats(device_index: int | None = None) -> dict[str, Any]:
    """The caching allocator's statistics (a dict)."""
    return _usable().memory_stats(device_index)


def reset_peak_memory_stats(device_index: int | None = None) -> None:
    """Restart the peaks that max_memory_allocated/max_memory_reserved report."""
    _usable().reset_peak_memory_stats(device_index)


def reset_accumulated_memory_stats(device_index: int | None = None) -> None:
    """Restart the accumulated counts of memory_stats; the allocator keeps peaks, not running
    totals, so this restarts the peaks."""
    _usable().reset_peak_memory_stats(device_index)


def get_memory_info(device_index: int | None = None) -> tuple[int, int]:
    """(free, total) bytes of the device."""
    return _usable().mem_get_info(device_index)


def get_device_capability(device: _device | str | int | None = None) -> dict[str, Any]:
    """The device's capabilities: {'supported_dtypes': the dtypes tensors on it can have}."""
    _usable()
    from . import _dtype as D
    return {"supported_dtypes": {dt for dt in D.DTYPES if dt is not None}}
