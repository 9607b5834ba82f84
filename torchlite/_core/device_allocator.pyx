# cython: language_level=3
"""The caching allocator's bookkeeping (torchlite/cuda/_allocator.py is its home in the CUDA
layer, and says what it does): free lists by (device, stream, size class), blocks held back
for other streams' events, the statistics.

It is here, in C, because a training step of small layers allocates and frees a few dozen
blocks per step and nothing else costs as much host time per call (issue 15's step target):
the same bookkeeping in Python took 2.7 us a malloc and free, here 0.6.  Nothing here knows
about drivers: the memory comes from `mem` (alloc, free, record_event, event_done,
total_memory) and running out of it is the `oom_error` exception class it is given.
"""
import threading

cimport cython

cdef Py_ssize_t _SMALL = 512     # the smallest size class, and the granularity below 4 KiB


def size_class(nbytes):
    """The bytes a request of `nbytes` takes: a multiple of 512 with four classes per doubling
    above 2 KiB, so at most a quarter of a block is unused."""
    if nbytes <= _SMALL:
        return _SMALL
    step = max(_SMALL, 1 << max(0, (nbytes - 1).bit_length() - 3))
    return (nbytes + step - 1) // step * step


# Never cleared by the cycle collector: a block in garbage a collection frees must still
# give its memory back when it goes (clearing its allocator first would leak the block).
# It is released by __del__, a finalizer, not __dealloc__: the collector runs the finalizers of
# all cyclic garbage before it clears any of it, so the `streams` a block was used on are still
# there to hold it back; and free() (or a memory observer) may keep the block, which a
# finalizer allows (it is not deallocated then) and __dealloc__ does not.
@cython.no_gc_clear
cdef class Block:
    """One device allocation handed to a storage; `release()` gives it back (also when the
    last reference goes)."""

    cdef readonly object address, size, device
    cdef public object stream       # the stream it was allocated on (an int handle)
    cdef public object streams      # {handle: owner} of other streams that used it (record_stream)
    cdef object _allocator
    cdef object __weakref__

    def __cinit__(self, allocator, address, size, device, stream):
        self._allocator = allocator
        self.address = address
        self.size = size
        self.device = device
        self.stream = stream
        self.streams = None

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


cdef class DeviceStats:
    cdef public object allocated, max_allocated, reserved, max_reserved
    cdef public object num_alloc_retries, num_ooms

    def __cinit__(self):
        self.allocated = self.max_allocated = self.reserved = self.max_reserved = 0
        self.num_alloc_retries = self.num_ooms = 0


cdef class AllocatorCore:
    """The allocator of torchlite/cuda/_allocator.py (which subclasses this with its driver's
    OutOfMemoryError); `_lock` is reentrant, as a block's release may run inside an allocation
    (a garbage collection)."""

    cdef public object mem, _lock
    cdef dict _free          # (device, stream, size) -> [address, ...]
    cdef list _pending       # [(block fields, [events])]: freed, waiting on other streams
    cdef dict _stats
    cdef object _oom_class

    def __init__(self, mem, oom_error):
        self.mem = mem
        self._oom_class = oom_error
        self._lock = threading.RLock()
        self._free = {}
        self._pending = []
        self._stats = {}

    def _st(self, device):
        return self._stat(device)

    cdef DeviceStats _stat(self, device):
        st = self._stats.get(device)
        if st is None:
            st = self._stats[device] = DeviceStats()
        return <DeviceStats>st

    # ---- allocation ----------------------------------------------------------------------
    def malloc(self, device, nbytes, stream=0):
        """A Block of at least `nbytes` on `device` for use on `stream`."""
        cdef DeviceStats st
        cdef list free
        size = _SMALL if nbytes <= _SMALL else size_class(nbytes)
        with self._lock:
            if self._pending:
                self._collect_pending()
            st = self._stat(device)
            free = self._free.get((device, stream, size))
            if free:
                address = free.pop()
            else:
                address = self._alloc_new(device, size, nbytes, st)
            st.allocated += size
            if st.allocated > st.max_allocated:
                st.max_allocated = st.allocated
            return Block(self, address, size, device, stream)

    cdef _alloc_new(self, device, size, nbytes, DeviceStats st):
        try:
            address = self.mem.alloc(device, size)
        except self._oom_class:
            st.num_alloc_retries += 1
            self._release_cached(device)
            try:
                address = self.mem.alloc(device, size)
            except self._oom_class:
                st.num_ooms += 1
                raise self._oom_error(device, nbytes, st) from None
        st.reserved += size
        st.max_reserved = max(st.max_reserved, st.reserved)
        return address

    cdef _oom_error(self, device, nbytes, DeviceStats st):
        try:
            total = f"{fmt_bytes(self.mem.total_memory(device))} total capacity; "
        except Exception:
            total = ""
        return self._oom_class(
            f"CUDA out of memory. Tried to allocate {fmt_bytes(nbytes)}. GPU {device} has a {total}"
            f"{fmt_bytes(st.allocated)} is allocated by torchlite tensors and "
            f"{fmt_bytes(st.reserved)} is reserved by torchlite's caching allocator (its unused "
            f"cached blocks were freed and the allocation retried once).")

    # ---- freeing ---------------------------------------------------------------------------
    def free(self, Block block):
        cdef DeviceStats st
        with self._lock:
            st = self._stat(block.device)
            st.allocated -= block.size
            if block.streams:
                events = [self.mem.record_event(block.device, s) for s in block.streams]
                block.streams = None          # the events hold the work; the streams may go
                self._pending.append(((block.device, block.stream, block.size, block.address), events))
            else:
                key = (block.device, block.stream, block.size)
                free = self._free.get(key)
                if free is None:
                    self._free[key] = [block.address]
                else:
                    (<list>free).append(block.address)

    cdef _collect_pending(self):
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
            st = self._stat(key[0])
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
            st = self._stat(device)
            return {"allocated": st.allocated, "max_allocated": st.max_allocated,
                    "reserved": st.reserved, "max_reserved": st.max_reserved,
                    "num_alloc_retries": st.num_alloc_retries, "num_ooms": st.num_ooms}

    def reset_peak(self, device):
        with self._lock:
            st = self._stat(device)
            st.max_allocated, st.max_reserved = st.allocated, st.reserved

    def cached_bytes(self, device):
        with self._lock:
            return sum(k[2] * len(v) for k, v in self._free.items() if k[0] == device)


def fmt_bytes(nbytes):
    """nbytes as PyTorch's memory messages write it: 1.50 GiB, 2.00 KiB, 100 bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} bytes"
