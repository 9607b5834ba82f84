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
from .._core.device_allocator import AllocatorCore, Block, size_class
from ._driver import OutOfMemoryError

__all__ = ["Block", "CachingAllocator", "size_class", "set_observer"]


class CachingAllocator(AllocatorCore):
    """The allocator over `mem` (above); its bookkeeping is C (torchlite/_core/
    device_allocator.pyx): malloc(device, nbytes, stream) -> Block, free(block),
    empty_cache(), stats(device), reset_peak(device), cached_bytes(device)."""

    __slots__ = ("__weakref__",)

    def __init__(self, mem):
        super().__init__(mem, OutOfMemoryError)


_plain = {}      # the methods a memory observer's wrappers went around, while one is set


def set_observer(observer):
    """While `observer` is set (the profiler's, with profile_memory), each allocation and free
    of every CachingAllocator calls observer(device, address, nbytes, allocated, reserved)
    after it: the block's size (negative for a free) and the device's totals then.  None
    puts the plain methods back: the class's methods are swapped, so observing costs nothing
    while no profile records memory."""
    if _plain:
        for name in _plain:
            delattr(CachingAllocator, name)      # the core's own methods again
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

