"""What the CUDA array layer asks of the driver: making a device current, the current stream,
device and pinned-host memory through the caching allocator, memset and copies.

Every call goes through `_driver.call`, which checks the result and names the call.  The
driver module is looked up at each call (`_driver.driver_module()`), which is also how the
tests stand in a host-memory driver for the parts above the kernels.
"""
import threading

from .._core import driver_calls as _c
from . import _driver, _state
from ._allocator import CachingAllocator
from ._registry import UPCALLS

_tls = threading.local()
_lock = threading.Lock()
_allocator = None
_host_allocator = None
HOST = -1                # the "device" number of pinned host memory in the allocator


def activate(device):
    """Make `device`'s context current on this thread (a no-op when it already is)."""
    # the thread's __dict__, not getattr with a default: a missing attribute costs an
    # exception inside getattr, and this runs before every launch and allocation
    if _tls.__dict__.get("device") != device:
        _state.lazy_init("use a CUDA device")
        _state.activate(device)
        _tls.device = device


def current_stream(device):
    """The handle (an int) of this thread's current stream on `device`; 0 is the default
    stream."""
    streams = _state.tls.__dict__.get("streams")
    s = streams.get(device) if streams else None
    return 0 if s is None else s.cuda_stream


def on(device):
    """activate(device), then current_stream(device): what every launch, allocation, copy
    and memset does first, in one call."""
    if _tls.__dict__.get("device") != device:
        activate(device)
    return current_stream(device)




class _Event:
    """A driver event recorded on a stream, destroyed with this object."""
    __slots__ = ("handle", "driver")

    def __init__(self, stream, driver=None):
        # made, queried and destroyed by one driver: the memory's (DeviceMemory.driver)
        self.driver = d = driver if driver is not None else _driver.driver_module()
        self.handle = _driver.call_on(d, "cuEventCreate", int(d.CUevent_flags.CU_EVENT_DISABLE_TIMING))
        _driver.call_on(d, "cuEventRecord", self.handle, stream)

    def done(self):
        err = self.driver.cuEventQuery(self.handle)[0]
        if int(err) == 600:             # CUDA_ERROR_NOT_READY
            return False
        if int(err) != 0:
            raise _driver._error(self.driver, err, "cuEventQuery")
        return True

    def __del__(self):
        try:
            self.driver.cuEventDestroy(self.handle)
        except Exception:
            pass


class DeviceMemory:
    """Device memory from the driver (the allocator's `mem`).  It keeps the driver current
    at its creation: memory goes back to the driver it came from."""

    def __init__(self):
        self.driver = _driver.driver_module()

    def alloc(self, device, nbytes):
        activate(device)
        return int(_driver.call_on(self.driver, "cuMemAlloc", nbytes))

    def free(self, device, address):
        activate(device)
        _driver.call_on(self.driver, "cuMemFree", address)

    def record_event(self, device, stream):
        activate(device)
        return _Event(stream, self.driver)

    def event_done(self, event):
        return event.done()

    def total_memory(self, device):
        return _state.devices.total_memory(device)


class PinnedMemory(DeviceMemory):
    """Page-locked host memory (device number HOST), which copies can overlap with kernels."""

    def alloc(self, device, nbytes):
        activate(_current_device())
        return int(_driver.call_on(self.driver, "cuMemHostAlloc", nbytes, 0))

    def free(self, device, address):
        _driver.call_on(self.driver, "cuMemFreeHost", address)

    def record_event(self, device, stream):
        return _Event(stream, self.driver)

    def total_memory(self, device):
        raise RuntimeError("pinned host memory has no fixed capacity")


def _current_device():
    return _state.current_index()


def allocator():
    """The process's device allocator (created on first use)."""
    global _allocator
    if _allocator is None:
        with _lock:
            if _allocator is None:
                _state.lazy_init("allocate CUDA memory")
                _allocator = CachingAllocator(DeviceMemory())
                _state.set_allocator(_allocator)
                # device memory exists from now on: the array layer dispatches by device
                UPCALLS.device_memory_exists()
    return _allocator


def host_allocator():
    global _host_allocator
    if _host_allocator is None:
        with _lock:
            if _host_allocator is None:
                _host_allocator = CachingAllocator(PinnedMemory())
    return _host_allocator


def reset():
    """Forget the allocators and this thread's current context (tests swap drivers)."""
    global _allocator, _host_allocator
    _allocator = _host_allocator = None
    _tls.__dict__.clear()
    _keep_alive.clear()


def malloc(device, nbytes):
    """An allocator Block of `nbytes` on `device` for its current stream."""
    stream = on(device)
    return (_allocator or allocator()).malloc(device, nbytes, stream)


def malloc_host(nbytes):
    return host_allocator().malloc(HOST, nbytes, 0)


# ---- memset and copies (called in C: torchlite/_core/driver_calls.pyx) ----------------------
def _checked(err, name):
    if err != 0:
        raise _driver.error(err, name)


def _memset(width, address, value, count, stream):
    name = f"cuMemsetD{8 * width}Async"
    _checked(_c.memset(_driver.c_entry(name), width, address, value, count, stream), name)


def memset(device, address, pattern, count):
    """Write `count` copies of `pattern` (1, 2, 4, 8 or 16 bytes) from device `address`."""
    stream = on(device)
    size = len(pattern)
    if size in (1, 2, 4):
        _memset(size, address, int.from_bytes(pattern, "little"), count, stream)
    elif size in (8, 16):
        words = [int.from_bytes(pattern[k:k + 4], "little") for k in range(0, size, 4)]
        if len(set(words)) == 1:
            _memset(4, address, words[0], size // 4 * count, stream)
        else:        # one strided 4-byte fill per word: rows of one word, `size` bytes apart
            for k, w in enumerate(words):
                _driver.call("cuMemsetD2D32Async", address + 4 * k, size, w, 1, count, stream)
    else:
        raise ValueError(f"memset: pattern of {size} bytes")


_keep_alive = []          # [(event, object)]: host buffers of asynchronous copies in flight


def _hold(device, stream, obj):
    """Keep `obj` alive until the work queued on `stream` so far has finished."""
    _keep_alive[:] = [(e, o) for e, o in _keep_alive if not e.done()]
    _keep_alive.append((_Event(stream), obj))


def _copy(name, dst, src, nbytes, stream):
    _checked(_c.copy(_driver.c_entry(name), dst, src, nbytes, stream), name)


def _sync(stream):
    _checked(_c.synchronize(_driver.c_entry("cuStreamSynchronize"), stream), "cuStreamSynchronize")


def copy_h2d(device, dst, src, nbytes, keep_alive=None, blocking=True):
    stream = on(device)
    _copy("cuMemcpyHtoDAsync", dst, src, nbytes, stream)
    if blocking:
        _sync(stream)
    elif keep_alive is not None:
        _hold(device, stream, keep_alive)


def copy_d2h(device, dst, src, nbytes, blocking=True):
    stream = on(device)
    _copy("cuMemcpyDtoHAsync", dst, src, nbytes, stream)
    if blocking:
        _sync(stream)


def copy_d2d(device, dst, src, nbytes):
    _copy("cuMemcpyDtoDAsync", dst, src, nbytes, on(device))


def synchronize(device):
    _sync(on(device))


def order_after_current(device, stream):
    """Make later work on `stream` (a handle) wait for the work queued so far on this thread's
    current stream of `device` (the DLPack stream protocol)."""
    current = current_stream(device)
    if stream == current:
        return
    activate(device)
    event = _Event(current)
    _driver.call("cuStreamWaitEvent", stream, event.handle, 0)
