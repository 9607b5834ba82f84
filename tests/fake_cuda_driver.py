"""A stand-in for cuda.bindings.driver that keeps "device" memory in host buffers.

With it, the CUDA array layer above the kernels (device arrays and their views, the caching
allocator, copies, memsets, streams and events, the device dispatch, the host fallback,
Tensor.to / module.to / load(map_location), mixed-device errors, out-of-memory handling)
runs and is tested on machines without a GPU.  It launches no kernels: tests using it turn
the backend's kernels off (torchlite.cuda._state.kernels_enabled), so every op takes the
host fallback.  It is test code only; the library never uses it.
"""
import ctypes
import itertools
import time
import types


class _Enum:
    def __init__(self, prefix, **values):
        self._prefix = prefix
        self._values = values

    def __getattr__(self, name):
        return self._values.get(name, name)


ATTRIBUTES = {
    "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0, "MULTIPROCESSOR_COUNT": 132,
    "INTEGRATED": 0, "MULTI_GPU_BOARD": 0, "MAX_THREADS_PER_MULTIPROCESSOR": 2048,
    "WARP_SIZE": 32, "L2_CACHE_SIZE": 50 << 20, "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536,
    "MAX_SHARED_MEMORY_PER_BLOCK": 48 << 10, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 228 << 10,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 227 << 10, "MAX_THREADS_PER_BLOCK": 1024,
}


class FakeDriver(types.SimpleNamespace):
    """The driver functions the backend calls, over host memory; `capacity` bytes of
    "device" memory per device, `devices` devices."""

    def __init__(self, devices=1, capacity=256 << 20):
        super().__init__()
        self.devices = devices
        self.capacity = capacity
        self.buffers = {}          # address -> (device, ctypes buffer)
        self._event_times = {}     # event -> host perf_counter_ns when last recorded
        self.used = [0] * devices
        self.host = {}
        self.calls = []            # names of the memory, copy, stream and event calls made, in order
        self.live_streams = set()  # streams created and not yet destroyed
        self._ids = itertools.count(0x1000)   # clear of the special handles 0, 1 and 2
        self.current = None
        self.CUdevice_attribute = types.SimpleNamespace(
            **{"CU_DEVICE_ATTRIBUTE_" + k: k for k in ATTRIBUTES})
        self.CUevent_flags = types.SimpleNamespace(
            CU_EVENT_DEFAULT=0, CU_EVENT_BLOCKING_SYNC=1, CU_EVENT_DISABLE_TIMING=2,
            CU_EVENT_INTERPROCESS=4)
        self.CUstream_flags = types.SimpleNamespace(CU_STREAM_DEFAULT=0, CU_STREAM_NON_BLOCKING=1)
        self.CUfunction_attribute = types.SimpleNamespace(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK=0,
                                                          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=8)
        self.function_attributes = {}     # (kernel, attribute) -> value set by cuFuncSetAttribute

    def _log(self, name):
        self.calls.append(name)

    def cuFuncSetAttribute(self, function, attribute, value):
        if attribute == 8 and value > ATTRIBUTES["MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"]:
            return (1,)                    # CUDA_ERROR_INVALID_VALUE
        self.function_attributes[(function, attribute)] = value
        return (0,)

    # ---- devices and contexts ------------------------------------------------------------
    def cuInit(self, flags):
        return (0,)

    def cuDriverGetVersion(self):
        return (0, 13000)

    def cuDeviceGetCount(self):
        return (0, self.devices)

    def cuDeviceGet(self, index):
        return (0, index) if 0 <= index < self.devices else (101, None)

    def cuDeviceGetAttribute(self, attr, dev):
        return (0, ATTRIBUTES[attr])

    def cuDeviceGetName(self, n, dev):
        return (0, b"Fake CUDA device (host memory)\0")

    def cuDeviceTotalMem(self, dev):
        return (0, self.capacity)

    def cuDeviceGetUuid(self, dev):
        return (0, types.SimpleNamespace(bytes=bytes(range(16))))

    def cuDevicePrimaryCtxRetain(self, dev):
        return (0, ("ctx", dev))

    def cuCtxSetCurrent(self, ctx):
        self.current = ctx[1]
        return (0,)

    def cuCtxSynchronize(self):
        self._log("cuCtxSynchronize")
        return (0,)

    def cuGetErrorString(self, err):
        return (0, {2: b"out of memory"}.get(int(err), b"fake error"))

    # ---- memory ----------------------------------------------------------------------------
    def _new(self, nbytes):
        buf = ctypes.create_string_buffer(max(int(nbytes), 1))
        return ctypes.addressof(buf), buf

    def cuMemAlloc(self, nbytes):
        self._log("cuMemAlloc")
        dev = self.current
        if self.used[dev] + nbytes > self.capacity:
            return (2, None)          # CUDA_ERROR_OUT_OF_MEMORY
        address, buf = self._new(nbytes)
        self.buffers[address] = (dev, buf, nbytes)
        self.used[dev] += nbytes
        return (0, address)

    def cuMemGetInfo(self):
        dev = self.current
        return (0, self.capacity - self.used[dev], self.capacity)

    def cuMemFree(self, address):
        self._log("cuMemFree")
        dev, _, nbytes = self.buffers.pop(int(address))
        self.used[dev] -= nbytes
        return (0,)

    def cuMemHostAlloc(self, nbytes, flags):
        self._log("cuMemHostAlloc")
        address, buf = self._new(nbytes)
        self.host[address] = buf
        return (0, address)

    def cuMemFreeHost(self, address):
        self._log("cuMemFreeHost")
        self.host.pop(int(address))
        return (0,)

    def _check_device(self, address, nbytes):
        for base, (_, _, size) in self.buffers.items():
            if base <= address and address + nbytes <= base + max(size, 1):
                return
        raise AssertionError(f"fake driver: {nbytes} bytes at {address:#x} are not device memory")

    def cuMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        self._log("cuMemcpyHtoDAsync")
        self._check_device(int(dst), nbytes)
        ctypes.memmove(int(dst), int(src), nbytes)
        return (0,)

    def cuMemcpyDtoHAsync(self, dst, src, nbytes, stream):
        self._log("cuMemcpyDtoHAsync")
        self._check_device(int(src), nbytes)
        ctypes.memmove(int(dst), int(src), nbytes)
        return (0,)

    def cuMemcpyDtoDAsync(self, dst, src, nbytes, stream):
        self._log("cuMemcpyDtoDAsync")
        self._check_device(int(dst), nbytes)
        self._check_device(int(src), nbytes)
        ctypes.memmove(int(dst), int(src), nbytes)
        return (0,)

    def _memset(self, address, value, width, count, pitch=None):
        pitch = pitch or width
        self._check_device(address, (count - 1) * pitch + width if count else 0)
        data = int(value).to_bytes(width, "little")
        for i in range(count):
            ctypes.memmove(address + i * pitch, data, width)
        return (0,)

    def cuMemsetD8Async(self, address, value, count, stream):
        self._log("cuMemsetD8Async")
        ctypes.memset(int(address), value, count)
        return (0,)

    def cuMemsetD16Async(self, address, value, count, stream):
        self._log("cuMemsetD16Async")
        return self._memset(int(address), value, 2, count)

    def cuMemsetD32Async(self, address, value, count, stream):
        self._log("cuMemsetD32Async")
        return self._memset(int(address), value, 4, count)

    def cuMemsetD2D32Async(self, address, pitch, value, width, height, stream):
        self._log("cuMemsetD2D32Async")
        assert width == 1
        return self._memset(int(address), value, 4, height, pitch)

    # ---- streams and events ------------------------------------------------------------------
    def cuStreamCreateWithPriority(self, flags, priority):
        self._log("cuStreamCreateWithPriority")
        handle = next(self._ids)
        self.live_streams.add(handle)
        return (0, handle)

    def _stream_gone(self, stream):
        """A stream made here and destroyed since (0, 1, 2: the driver's own streams).  A real
        driver may crash on such a handle; the stand-in answers CUDA_ERROR_INVALID_HANDLE."""
        s = int(stream)
        return s not in (0, 1, 2) and s not in self.live_streams

    def cuStreamSynchronize(self, stream):
        self._log("cuStreamSynchronize")
        return (0,)

    def cuStreamQuery(self, stream):
        self._log("cuStreamQuery")
        return (0,)

    def cuStreamDestroy(self, stream):
        self._log("cuStreamDestroy")
        if self._stream_gone(stream):
            return (400,)
        self.live_streams.discard(int(stream))
        return (0,)

    def cuStreamWaitEvent(self, stream, event, flags):
        self._log("cuStreamWaitEvent")
        return (0,)

    def cuEventCreate(self, flags):
        self._log("cuEventCreate")
        return (0, next(self._ids))

    def cuEventRecord(self, event, stream):
        self._log("cuEventRecord")
        if self._stream_gone(stream):
            return (400,)
        # work runs on the host as it is launched, so an event's time is the host's then
        self._event_times[event] = time.perf_counter_ns()
        return (0,)

    def cuEventQuery(self, event):
        self._log("cuEventQuery")
        return (0,)

    def cuEventSynchronize(self, event):
        self._log("cuEventSynchronize")
        return (0,)

    def cuEventElapsedTime(self, start, end):
        """Milliseconds between the two events' recordings (a real driver's unit);
        CUDA_ERROR_INVALID_HANDLE for an event never recorded."""
        self._log("cuEventElapsedTime")
        if start not in self._event_times or end not in self._event_times:
            return (400, None)
        return (0, (self._event_times[end] - self._event_times[start]) / 1e6)

    def cuEventDestroy(self, event):
        self._log("cuEventDestroy")
        return (0,)


# ---- installing the stand-in ------------------------------------------------------------------
_retired = []      # drivers whose memory tensors from past tests may still point into


class installed:
    """Context manager: `fake` (a FakeDriver) is the CUDA driver inside the block, with the
    backend's kernels off, and the state of torchlite.cuda, its runtime and the array-layer
    dispatch is what it was before on leaving, so nothing of the stand-in leaks into other
    tests (or into a real GPU's session)."""

    active = False          # whether a stand-in is installed now

    def __init__(self, fake):
        self.fake = fake

    def __enter__(self):
        import torchlite.cuda as cuda
        from torchlite import _dispatch
        from torchlite.cuda import _driver, _runtime, _state
        self.saved = [
            (_driver, "driver_module", _driver.driver_module), (_driver, "_status", _driver._status),
            (_state, "kernels_enabled", _state.kernels_enabled),
            (_state, "initialized", _state.initialized), (_state, "devices", _state.devices),
            (_state, "allocator", _state.allocator), (_state, "generators", _state.generators),
            (_dispatch, "_seed_for_devices", _dispatch._seed_for_devices),
            (_runtime, "_allocator", _runtime._allocator),
            (_runtime, "_host_allocator", _runtime._host_allocator),
            (_runtime, "_keep_alive", _runtime._keep_alive),
            (_dispatch, "_enabled", _dispatch._enabled),
            (_dispatch, "_cuda_array_type", _dispatch._cuda_array_type),
        ]
        self.saved_tls = [(tls, dict(tls.__dict__)) for tls in (cuda._tls, _runtime._tls)]
        self.saved_caches = [(c, dict(c)) for c in _state.driver_caches()]
        for c, _ in self.saved_caches:
            c.clear()
        self.dispatch_was_enabled = _dispatch._enabled
        fake = self.fake
        _driver.driver_module = lambda: fake
        _driver._status = _driver.Status(True, "ok", "", devices=fake.devices, nvrtc=(13, 0),
                                         driver=13000)
        _state.kernels_enabled = False
        _state.initialized, _state.devices, _state.allocator = False, None, None
        _state.generators = {}
        _runtime._allocator = _runtime._host_allocator = None
        _runtime._keep_alive = []
        for tls, _ in self.saved_tls:
            tls.__dict__.clear()
        installed.active = True
        return fake

    def __exit__(self, *exc):
        import gc
        import torchlite.cuda as cuda
        from torchlite import _dispatch
        from torchlite.cuda import _state
        for cache in _state.driver_caches():
            cache.clear()            # (their arrays' blocks too go back, below)
        gc.collect(1)                # blocks of this test's tensors go back to the allocator (the
                                     # young generations hold its cycles; a full pass is slow)
        try:
            cuda.empty_cache()       # ... and from it to the stand-in
        finally:
            if _dispatch._enabled and not self.dispatch_was_enabled:
                _dispatch.disable_devices()
            for mod, name, value in self.saved:
                setattr(mod, name, value)
            for tls, state in self.saved_tls:
                tls.__dict__.clear()
                tls.__dict__.update(state)
            # every driver cache, those made under the stand-in too (by a module first
            # imported then): its entries hold the stand-in's handles and host addresses,
            # which a real driver used later in the process would be given
            saved = {id(cache): state for cache, state in self.saved_caches}
            for cache in _state.driver_caches():
                cache.clear()
                cache.update(saved.get(id(cache), {}))
            if self.fake.buffers or self.fake.host:       # tensors still alive somewhere
                _retired.append(self.fake)
            installed.active = False
        return False
