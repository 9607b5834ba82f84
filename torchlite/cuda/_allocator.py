"""The caching device allocator: device memory is reused by size class instead of going back
to the driver (cuMemAlloc and cuMemFree synchronise and cost tens of microseconds).

A freed block goes to the free list of (device, stream, size class) and is handed out again
to the next request of that class on that stream, which is safe without synchronisation
because work on one stream runs in order.  A block also used on other streams
(Tensor.record_stream) is held back until events recorded on those streams have completed.
When the driver runs out of memory, the cached blocks are released and the allocation is
retried once before OutOfMemoryError (with the sizes) is raised.

The allocator sees device memory only through `mem`, an object with `alloc(device, nbytes)
-> address` (raising OutOfMemoryError), `free(device, address)`, `record_event(device,
stream) -> event`, `event_done(event) -> bool` and `total_memory(device)`: the driver in
torchlite/cuda/_memory.py, or a stand-in in the tests.
"""
import threading

from ._driver import OutOfMemoryError

_SMALL = 512          # the smallest size class, and the granularity below 4 KiB


def size_class(nbytes):
    """The bytes a request of `nbytes` takes: a multiple of 512 with four classes per doubling
    above 2 KiB, so at most a quarter of a block is unused."""
    if nbytes <= _SMALL:
        return _SMALL
    step = max(_SMALL, 1 << max(0, (nbytes - 1).bit_length() - 3))
    return (nbytes + step - 1) // step * step


class Block:
    """One device allocation handed to a storage; `release()` gives it back."""

    __slots__ = ("address", "size", "device", "stream", "streams", "_allocator", "__weakref__")

    def __init__(self, allocator, address, size, device, stream):
        self._allocator = allocator
        self.address = address
        self.size = size
        self.device = device
        self.stream = stream          # the stream it was allocated on (an int handle)
        self.streams = None           # {handle: owner} of other streams that used it (record_stream)

    def record_stream(self, stream, owner=None):
        """Mark the block as used by work on `stream` (an int handle), so it is not reused
        before that work is done.  `owner` (the Stream object) is kept until the block is
        freed: the event recorded then needs the stream to exist still."""
        if stream != self.stream:
            if self.streams is None:
                self.streams = {}
            self.streams[stream] = owner

    def release(self):
        if self._allocator is not None:
            allocator, self._allocator = self._allocator, None
            allocator.free(self)

    def __del__(self):
        try:
            self.release()
        except Exception:        # interpreter shutdown: the driver may already be gone
            pass


class _DeviceStats:
    __slots__ = ("allocated", "max_allocated", "reserved", "max_reserved", "num_alloc_retries",
                 "num_ooms")

    def __init__(self):
        self.allocated = self.max_allocated = self.reserved = self.max_reserved = 0
        self.num_alloc_retries = self.num_ooms = 0


class CachingAllocator:
    def __init__(self, mem):
        self.mem = mem
        self._lock = threading.RLock()
        self._free = {}          # (device, stream, size) -> [address, ...]
        self._pending = []       # [(block fields, [events])]: freed, waiting on other streams
        self._stats = {}

    def _st(self, device):
        st = self._stats.get(device)
        if st is None:
            st = self._stats[device] = _DeviceStats()
        return st

    # ---- allocation ----------------------------------------------------------------------
    def malloc(self, device, nbytes, stream=0):
        """A Block of at least `nbytes` on `device` for use on `stream`."""
        size = size_class(nbytes)
        with self._lock:
            if self._pending:
                self._collect_pending()
            st = self._st(device)
            free = self._free.get((device, stream, size))
            if free:
                address = free.pop()
            else:
                address = self._alloc_new(device, size, nbytes, st)
            st.allocated += size
            if st.allocated > st.max_allocated:
                st.max_allocated = st.allocated
            return Block(self, address, size, device, stream)

    def _alloc_new(self, device, size, nbytes, st):
        try:
            address = self.mem.alloc(device, size)
        except OutOfMemoryError:
            st.num_alloc_retries += 1
            self._release_cached(device)
            try:
                address = self.mem.alloc(device, size)
            except OutOfMemoryError:
                st.num_ooms += 1
                raise self._oom_error(device, nbytes, st) from None
        st.reserved += size
        st.max_reserved = max(st.max_reserved, st.reserved)
        return address

    def _oom_error(self, device, nbytes, st):
        try:
            total = f"{_fmt(self.mem.total_memory(device))} total capacity; "
        except Exception:
            total = ""
        return OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {_fmt(nbytes)}. GPU {device} has a {total}"
            f"{_fmt(st.allocated)} is allocated by torchlite tensors and {_fmt(st.reserved)} is "
            f"reserved by torchlite's caching allocator (its unused cached blocks were freed "
            f"and the allocation retried once).")

    # ---- freeing ---------------------------------------------------------------------------
    def free(self, block):
        with self._lock:
            st = self._st(block.device)
            st.allocated -= block.size
            if block.streams:
                events = [self.mem.record_event(block.device, s) for s in block.streams]
                block.streams = None          # the events hold the work; the streams may go
                self._pending.append(((block.device, block.stream, block.size, block.address), events))
            else:
                self._free.setdefault((block.device, block.stream, block.size), []).append(block.address)

    def _collect_pending(self):
        still = []
        for key, events in self._pending:
            if all(self.mem.event_done(e) for e in events):
                device, stream, size, address = key
                self._free.setdefault((device, stream, size), []).append(address)
            else:
                still.append((key, events))
        self._pending = still

    def _release_cached(self, device=None):
        for key in list(self._free):
            if device is not None and key[0] != device:
                continue
            st = self._st(key[0])
            for address in self._free.pop(key):
                self.mem.free(key[0], address)
                st.reserved -= key[2]

    def empty_cache(self):
        """Give every cached, unused block back to the driver."""
        with self._lock:
            if self._pending:
                self._collect_pending()
            self._release_cached()

    # ---- statistics -----------------------------------------------------------------------
    def stats(self, device):
        with self._lock:
            st = self._st(device)
            return {"allocated": st.allocated, "max_allocated": st.max_allocated,
                    "reserved": st.reserved, "max_reserved": st.max_reserved,
                    "num_alloc_retries": st.num_alloc_retries, "num_ooms": st.num_ooms}

    def reset_peak(self, device):
        with self._lock:
            st = self._st(device)
            st.max_allocated, st.max_reserved = st.allocated, st.reserved

    def cached_bytes(self, device):
        with self._lock:
            return sum(k[2] * len(v) for k, v in self._free.items() if k[0] == device)


_plain = {}      # the methods a memory observer's wrappers went around, while one is set


def set_observer(observer):
    """While `observer` is set (the profiler's, with profile_memory), each allocation and free
    of every CachingAllocator calls observer(device, address, nbytes, allocated, reserved)
    after it: the block's size (negative for a free) and the device's totals then.  None
    puts the plain methods back: the class's methods are swapped, so observing costs nothing
    while no profile records memory."""
    if _plain:
        for name, fn in _plain.items():
            setattr(CachingAllocator, name, fn)
        _plain.clear()
    if observer is None:
        return
    malloc, free = CachingAllocator.malloc, CachingAllocator.free
    _plain.update(malloc=malloc, free=free)

    def observed_malloc(self, device, nbytes, stream=0):
        with self._lock:
            block = malloc(self, device, nbytes, stream)
            st = self._st(device)
            observer(device, block.address, block.size, st.allocated, st.reserved)
        return block

    def observed_free(self, block):
        with self._lock:
            free(self, block)
            st = self._st(block.device)
            observer(block.device, block.address, -block.size, st.allocated, st.reserved)
    observed_malloc.__doc__, observed_free.__doc__ = malloc.__doc__, free.__doc__
    CachingAllocator.malloc, CachingAllocator.free = observed_malloc, observed_free


def _fmt(nbytes):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} bytes"
