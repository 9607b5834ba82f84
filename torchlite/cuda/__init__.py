"""torchlite.cuda: device queries, streams, events, seeds and memory statistics, with
PyTorch's names and behaviour.

Importing this module never touches CUDA and never fails for lack of it: cuda-python
(cuda.bindings) is imported on first use.  Without a usable GPU, is_available() is False,
device_count() is 0, the memory statistics are 0 and seeding is remembered, as in a
CPU-only PyTorch; everything that needs a device raises CudaUnavailableError (a
RuntimeError that is also an AssertionError, the type PyTorch raises) saying which piece
is missing: cuda-python, the NVIDIA driver, a device, NVRTC or the CUDA headers
(why_unavailable()).
"""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from .. import _dispatch
from . import _driver, _state
from ._driver import CudaError, CudaUnavailableError, OutOfMemoryError

if TYPE_CHECKING:
    from typing import Any

    from .._tensor import Tensor

# the backend below this module calls up to _dispatch through its registry; connect it before
# any backend module runs
_dispatch.connect_backend()

__all__ = [
    "is_available", "device_count", "is_initialized", "init", "current_device", "set_device",
    "device", "get_device_name", "get_device_capability", "get_device_properties",
    "synchronize", "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
    "get_rng_state", "set_rng_state", "empty_cache", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "reset_peak_memory_stats", "Stream", "Event", "current_stream", "default_stream", "stream",
    "set_stream", "OutOfMemoryError", "CudaError", "CudaUnavailableError", "why_unavailable",
    "is_bf16_supported", "mem_get_info", "get_arch_list", "memory_stats", "memory_summary",
]

# the backend's state lives below this public face (cuda/_state.py): the names below are the
# same objects and functions, kept for this module's own code and for the tests
_tls = _state.tls
_lazy_init = _state.lazy_init
_require_cuda = _state.require_cuda
_unavailable_error = _state.unavailable_error
_device_index = _state.device_index
_current_index = _state.current_index
_checked_index = _state.checked_index
_activate = _state.activate
_set_allocator = _state.set_allocator
_generator = _state.generator
_seed_all_generators = _state.seed_all_generators


# ---- availability ---------------------------------------------------------------------------
def why_unavailable() -> str | None:
    """None when CUDA can be used, else a sentence naming what is missing: cuda-python
    (pip install 'torchlite-dl[cuda]'), the NVIDIA driver (libcuda), a device, NVRTC or the CUDA
    headers."""
    st = _driver.probe()
    return None if st.available else st.reason


def _status():
    """The probe result as a dict (torchlite.show_config prints it)."""
    st = _driver.probe()
    return {"available": st.available, "kind": st.kind, "reason": st.reason,
            "devices": st.devices, "nvrtc": st.nvrtc, "driver": st.driver}


def is_available() -> bool:
    """True when a CUDA device, its driver, cuda-python and NVRTC are all present."""
    return _driver.probe().available


def device_count() -> int:
    """The number of CUDA devices torchlite can use (0 when CUDA is unavailable)."""
    return _state.device_count()


def is_initialized() -> bool:
    """Whether torchlite has initialised CUDA in this process."""
    return _state.initialized


def init() -> None:
    """Initialise CUDA now (it happens lazily otherwise)."""
    _lazy_init()


# ---- devices ----------------------------------------------------------------------------------
def current_device() -> int:
    """The index of this thread's current CUDA device."""
    _lazy_init("query the current CUDA device")
    return _current_index()


def set_device(device: device | str | int) -> None:
    """Make `device` this thread's current CUDA device."""
    idx = _device_index(device, optional=False)
    _lazy_init("set the CUDA device")
    if not 0 <= idx < device_count():
        raise RuntimeError(f"CUDA error: invalid device ordinal (device {idx}; torchlite sees "
                           f"{device_count()} CUDA device(s))")
    _tls.index = idx


class device:
    """Context manager that makes `device` current inside the block (torch.cuda.device)."""

    def __init__(self, device: device | str | int | None) -> None:
        self.idx = -1 if device is None else _device_index(device, optional=False)
        self.prev_idx = -1

    def __enter__(self) -> Any:
        if self.idx >= 0:
            self.prev_idx = current_device()
            if self.prev_idx != self.idx:
                set_device(self.idx)
        return self

    def __exit__(self, *exc: object) -> bool:
        if self.idx >= 0 and self.prev_idx != self.idx:
            set_device(self.prev_idx)
        return False


def get_device_name(device: device | str | int | None = None) -> str:
    """The name of a CUDA device, e.g. 'NVIDIA H100 80GB HBM3'."""
    idx = _checked_index(device, "get the CUDA device name")
    return _state.devices.name(idx)


def get_device_capability(device: device | str | int | None = None) -> tuple[int, int]:
    """(major, minor) compute capability of a CUDA device."""
    idx = _checked_index(device, "get the CUDA device capability")
    return _state.devices.capability(idx)


class _CudaDeviceProperties:
    """What get_device_properties returns (the fields PyTorch users read most)."""

    __slots__ = ("name", "major", "minor", "total_memory", "multi_processor_count",
                 "is_integrated", "is_multi_gpu_board", "max_threads_per_multi_processor",
                 "warp_size", "L2_cache_size", "regs_per_multiprocessor",
                 "shared_memory_per_block", "shared_memory_per_multiprocessor", "uuid")

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"L2_cache_size={self.L2_cache_size // (1024 * 1024)}MB)")


def get_device_properties(device: device | str | int | None = None) -> _CudaDeviceProperties:
    """Name, compute capability, memory and multiprocessor counts of a CUDA device."""
    idx = _checked_index(device, "get the CUDA device properties")
    d, p = _state.devices, _CudaDeviceProperties()
    p.name = d.name(idx)
    p.major, p.minor = d.capability(idx)
    p.total_memory = d.total_memory(idx)
    p.multi_processor_count = d.attribute(idx, "MULTIPROCESSOR_COUNT")
    p.is_integrated = d.attribute(idx, "INTEGRATED")
    p.is_multi_gpu_board = d.attribute(idx, "MULTI_GPU_BOARD")
    p.max_threads_per_multi_processor = d.attribute(idx, "MAX_THREADS_PER_MULTIPROCESSOR")
    p.warp_size = d.attribute(idx, "WARP_SIZE")
    p.L2_cache_size = d.attribute(idx, "L2_CACHE_SIZE")
    p.regs_per_multiprocessor = d.attribute(idx, "MAX_REGISTERS_PER_MULTIPROCESSOR")
    p.shared_memory_per_block = d.attribute(idx, "MAX_SHARED_MEMORY_PER_BLOCK")
    p.shared_memory_per_multiprocessor = d.attribute(idx, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")
    p.uuid = d.uuid(idx)
    return p


def synchronize(device: device | str | int | None = None) -> None:
    """Wait for all work on a CUDA device to finish."""
    idx = _checked_index(device, "synchronize CUDA")
    _activate(idx)
    _driver.call("cuCtxSynchronize")


# ---- random seeds -------------------------------------------------------------------------------
# Each device has a Philox state (seed, offset) with the CPU generator's rules and format;
# seeding before CUDA is initialised (or without CUDA) is remembered, as in PyTorch.
def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's generator (remembered when CUDA is unavailable)."""
    _generator(_current_index()).manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed the generator of every CUDA device."""
    for idx in range(max(device_count(), 1)):
        _generator(idx).manual_seed(seed)


def seed() -> None:
    """Seed the current device's generator from the OS's entropy."""
    _generator(_current_index()).seed()


def seed_all() -> None:
    """Seed every device's generator from the OS's entropy (one seed for all)."""
    s = int.from_bytes(os.urandom(8), "little")
    manual_seed_all(s)


def initial_seed() -> int:
    """The current CUDA device's seed."""
    _lazy_init("get the CUDA seed")
    return _generator(_current_index()).initial_seed()


def get_rng_state(device: device | str | int = "cuda") -> Tensor:
    """The generator state of a CUDA device as a uint8 tensor (seed, offset: 16 bytes)."""
    from .._dtype import uint8
    from .._ops.creation import tensor
    idx = _device_index(device)
    return tensor(list(_generator(idx).state_bytes()), dtype=uint8)


def set_rng_state(new_state: Tensor, device: device | str | int = "cuda") -> None:
    """Restore a state from get_rng_state."""
    idx = _device_index(device)
    _generator(idx).set_state_bytes(bytes(int(v) for v in new_state.tolist()))


# ---- memory statistics ------------------------------------------------------------------------
# The caching allocator registers itself with _set_allocator(obj): obj.stats(index) returns a
# dict with "allocated", "max_allocated", "reserved", "max_reserved" (bytes),
# obj.reset_peak(index) and obj.empty_cache() release what it caches.
def _stat(device, key):
    if not _state.initialized or _state.allocator is None:
        return 0
    return int(_state.allocator.stats(_device_index(device)).get(key, 0))


def empty_cache() -> None:
    """Release the allocator's cached, unused blocks (a no-op without CUDA)."""
    if _state.initialized and _state.allocator is not None:
        _state.allocator.empty_cache()


def _empty_host_cache():
    """Release the pinned host allocator's cached, unused blocks (torchlite.accelerator's
    empty_host_cache; a no-op before any pinned block was made)."""
    from . import _runtime
    if _runtime._host_allocator is not None:
        _runtime._host_allocator.empty_cache()


def memory_allocated(device: device | str | int | None = None) -> int:
    """Bytes of device memory held by tensors (0 without CUDA)."""
    return _stat(device, "allocated")


def max_memory_allocated(device: device | str | int | None = None) -> int:
    """The peak of memory_allocated since the start or reset_peak_memory_stats."""
    return _stat(device, "max_allocated")


def memory_reserved(device: device | str | int | None = None) -> int:
    """Bytes of device memory held by the caching allocator (0 without CUDA)."""
    return _stat(device, "reserved")


def max_memory_reserved(device: device | str | int | None = None) -> int:
    """The peak of memory_reserved."""
    return _stat(device, "max_reserved")


def reset_peak_memory_stats(device: device | str | int | None = None) -> None:
    """Start the peaks over from the current values."""
    if _state.initialized and _state.allocator is not None:
        _state.allocator.reset_peak(_device_index(device))


def memory_stats(device: device | str | int | None = None) -> dict[str, int]:
    """The caching allocator's counters in PyTorch's key names (the subset torchlite keeps):
    allocated_bytes.all.current/peak, reserved_bytes.all.current/peak, num_alloc_retries,
    num_ooms.  Empty without CUDA."""
    if not _state.initialized or _state.allocator is None:
        return {}
    st = _state.allocator.stats(_device_index(device))
    return {"allocated_bytes.all.current": st["allocated"],
            "allocated_bytes.all.peak": st["max_allocated"],
            "reserved_bytes.all.current": st["reserved"],
            "reserved_bytes.all.peak": st["max_reserved"],
            "num_alloc_retries": st.get("num_alloc_retries", 0),
            "num_ooms": st.get("num_ooms", 0)}


def memory_summary(device: device | str | int | None = None, abbreviated: bool = False) -> str:
    """A short text report of memory_stats()."""
    st = memory_stats(device)
    idx = _device_index(device) if _state.initialized else 0
    if not st:
        return f"torchlite CUDA memory summary, device {idx}: CUDA is not initialised\n"
    mib = 1024 * 1024
    return (f"torchlite CUDA memory summary, device {idx}\n"
            f"  allocated: {st['allocated_bytes.all.current'] / mib:.1f} MiB "
            f"(peak {st['allocated_bytes.all.peak'] / mib:.1f} MiB)\n"
            f"  reserved:  {st['reserved_bytes.all.current'] / mib:.1f} MiB "
            f"(peak {st['reserved_bytes.all.peak'] / mib:.1f} MiB)\n"
            f"  allocation retries: {st['num_alloc_retries']}, out-of-memory errors: {st['num_ooms']}\n")


def mem_get_info(device: device | str | int | None = None) -> tuple[int, int]:
    """(free, total) bytes of device memory, as the driver reports them."""
    idx = _checked_index(device, "query CUDA memory")
    _activate(idx)
    free, total = _driver.call("cuMemGetInfo")
    return int(free), int(total)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether bfloat16 tensors can be used on the current device: True on compute capability
    8.0 and newer (torchlite computes bfloat16 in float32 inside its kernels, so older devices
    count too when including_emulation)."""
    if not is_available():
        return False
    return including_emulation or get_device_capability()[0] >= 8


def get_arch_list() -> list[str]:
    """The architectures this NVRTC can compile torchlite's kernels for ('sm_80', ...); empty
    without NVRTC."""
    try:
        from . import _nvrtc
        return [f"sm_{a}" for a in _nvrtc.supported_archs()]
    except Exception:
        return []


# ---- streams and events ------------------------------------------------------------------------
class Stream:
    """A CUDA stream (torch.cuda.Stream): work queued on it runs in order."""

    def __init__(self, device: device | str | int | None = None, priority: int = 0, **kwargs: Any) -> None:
        self.device_index = _checked_index(device, "create a CUDA stream")
        _activate(self.device_index)
        d = _driver.driver_module()
        flags = int(d.CUstream_flags.CU_STREAM_NON_BLOCKING)
        self._handle = _driver.call_on(d, "cuStreamCreateWithPriority", flags, int(priority))
        self._made_by = d                # destroyed by the driver that made it
        self.priority = int(priority)
        self._owned = True

    @classmethod
    def _wrap(cls, handle, device_index):
        """A Stream object for an existing handle (the default stream), not destroyed by us."""
        s = cls.__new__(cls)
        s.device_index, s._handle, s.priority, s._owned = device_index, handle, 0, False
        return s

    @property
    def cuda_stream(self) -> int:
        """The raw CUstream handle as an int (0 for the legacy default stream)."""
        return int(self._handle)

    @property
    def device(self) -> device:
        from .._device import device as _device_cls
        return _device_cls("cuda", self.device_index)

    def query(self) -> bool:
        """True when all work queued on the stream has finished."""
        _activate(self.device_index)
        err = _driver.driver_module().cuStreamQuery(self._handle)[0]
        if int(err) == 600:          # CUDA_ERROR_NOT_READY
            return False
        if int(err) != 0:
            raise _driver._error(_driver.driver_module(), err, "cuStreamQuery")
        return True

    def synchronize(self) -> None:
        """Wait until all work queued on the stream has finished."""
        _activate(self.device_index)
        _driver.call("cuStreamSynchronize", self._handle)

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for `event`."""
        event._ensure()
        _driver.call("cuStreamWaitEvent", self._handle, event._handle, 0)

    def wait_stream(self, stream: Stream) -> None:
        """Make later work on this stream wait for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record `event` (a new one if None) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream \
            and self.device_index == other.device_index

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self) -> str:
        return f"<torchlite.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"

    def __del__(self) -> None:
        if getattr(self, "_owned", False) and _driver is not None:
            try:
                self._made_by.cuStreamDestroy(self._handle)
            except Exception:
                pass


def default_stream(device: device | str | int | None = None) -> Stream:
    """The default (legacy NULL) stream of a device."""
    idx = _checked_index(device, "get the default CUDA stream")
    return Stream._wrap(0, idx)


def current_stream(device: device | str | int | None = None) -> Stream:
    """This thread's current stream on a device (the default stream unless set)."""
    idx = _checked_index(device, "get the current CUDA stream")
    streams = getattr(_tls, "streams", None) or {}
    return streams.get(idx) or Stream._wrap(0, idx)


def set_stream(stream: Stream | None) -> None:
    """Make `stream` this thread's current stream on its device."""
    if stream is None:
        return
    if not hasattr(_tls, "streams"):
        _tls.streams = {}
    _tls.streams[stream.device_index] = stream


class stream:
    """Context manager: `stream` is the current stream inside the block."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self.prev = None

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            self.prev = current_stream(self.stream.device_index)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> bool:
        if self.stream is not None:
            set_stream(self.prev)
        return False


class Event:
    """A CUDA event (torch.cuda.Event): a marker in a stream, for waiting and timing.
    Created on the device at its first record()."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.interprocess = bool(interprocess)
        self._handle = None
        self._recorded = False

    def _ensure(self, device_index=None):
        if self._handle is not None:
            return
        idx = _checked_index(device_index, "create a CUDA event")
        _activate(idx)
        d = _driver.driver_module()
        flags = 0
        if not self.enable_timing:
            flags |= int(d.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        if self.blocking:
            flags |= int(d.CUevent_flags.CU_EVENT_BLOCKING_SYNC)
        if self.interprocess:
            flags |= int(d.CUevent_flags.CU_EVENT_INTERPROCESS)
        self._handle = _driver.call_on(d, "cuEventCreate", flags)
        self._made_by = d                # destroyed by the driver that made it

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on `stream` (the current stream if None)."""
        stream = current_stream() if stream is None else stream
        self._ensure(stream.device_index)
        _driver.call("cuEventRecord", self._handle, stream._handle)
        self._recorded = True

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on `stream` (current if None) wait for this event."""
        stream = current_stream() if stream is None else stream
        stream.wait_event(self)

    def query(self) -> bool:
        """True when the work before the event has finished (or it was never recorded)."""
        if self._handle is None:
            return True
        err = _driver.driver_module().cuEventQuery(self._handle)[0]
        if int(err) == 600:
            return False
        if int(err) != 0:
            raise _driver._error(_driver.driver_module(), err, "cuEventQuery")
        return True

    def synchronize(self) -> None:
        """Wait for the work before the event to finish."""
        if self._handle is not None:
            _driver.call("cuEventSynchronize", self._handle)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and `end_event` (both recorded, with timing)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return float(_driver.call("cuEventElapsedTime", self._handle, end_event._handle))

    def __repr__(self) -> str:
        return f"<torchlite.cuda.Event {'recorded' if self._recorded else 'uninitialized'}>"

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None and _driver is not None:
            try:
                self._made_by.cuEventDestroy(self._handle)
            except Exception:
                pass


def __getattr__(name):
    # torchlite.cuda.amp (autocast, GradScaler) is imported on first use, as torchlite.amp is
    if name == "amp":
        import importlib
        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module 'torchlite.cuda' has no attribute '{name}'")
