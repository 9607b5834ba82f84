"""Loading compiled kernels onto a device and launching them.

`kernel(source, name_expression, device)` gives a Kernel: the CUBIN of cuda_kernels/<source>
for the device's architecture (compiled by NVRTC on first use and cached in memory and on
disk, torchlite/cuda/_cache.py), loaded with cuModuleLoadData, its function found by the
lowered name.  Kernels are cached per (device, source, name) so the per-launch cost is a dict
lookup, argument packing and cuLaunchKernel.

Arguments are passed as the driver's array of pointers to each argument's bytes, every one
typed explicitly (`ptr`, `i64`, `i32`, `u32`, `f64`, `f32`, or raw struct bytes), so a
Python int never lands in a parameter of the wrong width; the array is built and the driver's
cuLaunchKernel called in C (torchlite/_core/driver_calls.pyx), so a launch costs a few microseconds
of host time.  Launch failures name the kernel.
With TORCHLITE_CUDA_LAUNCH_BLOCKING=1 every launch is followed by a synchronisation, so an
error inside a kernel (an illegal address) is reported with that kernel's name too.

Every kernel of the backend is launched through `launch` (looked up as `_launch.launch` at
each call), which is how the profiler times kernels on the device: set_launch_timer swaps in
a wrapper that brackets each launch with the timer's CUDA events while a profile records
CUDA, and puts the plain function back after, so timing costs nothing otherwise.
"""
import ctypes
import os
import threading

from .._core import driver_calls as _c
from . import _driver, _runtime, _state

_BLOCKING = os.environ.get("TORCHLITE_CUDA_LAUNCH_BLOCKING", "") not in ("", "0")
_kernels = _state.driver_cache()
_modules = []            # keep loaded modules alive for the process
_lock = threading.Lock()
_arch = _state.driver_cache()


class Kernel:
    __slots__ = ("name", "function", "handle", "device", "max_threads", "shared_limit")

    def __init__(self, name, function, device, max_threads):
        # function: the driver's object; handle: what the C launch passes (an int for the
        # real driver; the tests' stand-in kernels are handed back to the stand-in as they are)
        self.name, self.function, self.device, self.max_threads = name, function, device, max_threads
        self.handle = _driver.function_handle(function)
        self.shared_limit = 48 << 10       # dynamic shared memory a launch may ask for

    def __repr__(self):
        return f"<Kernel {self.name} on cuda:{self.device}>"


_capabilities = _state.driver_cache()


def capability(device):
    """(major, minor) compute capability of `device`."""
    cap = _capabilities.get(device)
    if cap is None:
        _state.lazy_init("query a CUDA device")
        cap = _capabilities[device] = tuple(_state.devices.capability(device))
    return cap


def _target(device):
    t = _arch.get(device)
    if t is None:
        from . import _nvrtc
        _state.lazy_init("compile CUDA kernels")
        t = _arch[device] = _nvrtc.target_for(*_state.devices.capability(device))[1]
    return t


def kernel(source, name, device):
    """The Kernel `name` (a name expression) of cuda_kernels/<source> on `device`."""
    def compile_():
        from . import _cache
        return _cache.program(source, (name,), _target(device))
    return _loaded((device, source, name), compile_, name, device)


def kernel_from_text(source_name, text, name, device, options=()):
    """The Kernel `name` of generated CUDA C `text` (torchlite/cuda/_fused.py) on `device`:
    compiled (with extra NVRTC `options`) through the kernel cache, keyed by the text, and
    loaded once per device."""
    def compile_():
        from . import _cache
        return _cache.program_from_text(source_name, text, (name,), _target(device), options)
    return _loaded((device, "text", source_name, text, name, tuple(options)), compile_, name, device)


def _loaded(key, compile_, name, device):
    """The Kernel cached under `key`, compiled by compile_() and loaded on its first request
    (one thread compiles; the others wait for it)."""
    k = _kernels.get(key)
    if k is not None:
        return k
    with _lock:
        k = _kernels.get(key)
        if k is None:
            k = _kernels[key] = _load(compile_(), name, device)
    return k


def _load(prog, name, device):
    """The Kernel of name expression `name` in compiled Program `prog`, loaded on `device`."""
    _runtime.activate(device)
    module = _driver.call("cuModuleLoadData", prog.image)
    _modules.append(module)
    fn = _driver.call("cuModuleGetFunction", module, prog.lowered[name].encode())
    attr = _driver.driver_module().CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    max_threads = int(_driver.call("cuFuncGetAttribute", attr, fn))
    return Kernel(name, fn, device, max_threads)


# ---- typed arguments ------------------------------------------------------------------------
# Each is a torchlite._core.driver_calls.Arg: the parameter's bytes, packed in C at launch.
ptr, i64, i32, u32, u64, f64, f32 = _c.ptr, _c.i64, _c.i32, _c.u32, _c.u64, _c.f64, _c.f32
struct = _c.struct        # a by-value struct argument from its packed bytes (_kernels.pack_*)


def ptr_of(a):
    """The first element's device address of array `a`, or a null pointer for None."""
    return _c.ptr(a.data_ptr() if a is not None else 0)


def launch(k, grid, block, args, shared=0):
    """Launch Kernel k on its device's current stream.  grid and block are ints or (x, y, z)
    tuples; args are the typed arguments above (ptr, i64, struct, ...).  The arguments are
    packed and the driver called in C (torchlite/_core/driver_calls.pyx)."""
    stream = _runtime.on(k.device)
    err = _c.launch(_driver.c_entry("cuLaunchKernel"), k.handle, grid, block, shared, stream, args)
    if err != 0:
        raise _driver.error(err, f"launching CUDA kernel {k.name} with grid {_dims(grid)} "
                                 f"and block {_dims(block)}")
    if _BLOCKING:
        err = _c.synchronize(_driver.c_entry("cuStreamSynchronize"), stream)
        if err != 0:
            raise _driver.error(err, f"CUDA kernel {k.name} (TORCHLITE_CUDA_LAUNCH_BLOCKING=1)")


_untimed = None         # the launch function a timer's wrapper went around, while one is set


def set_launch_timer(timer):
    """While `timer` is set (_kernel_timing.py's, for the profiler), `launch` is a
    wrapper that calls token = timer.begin(k, stream, grid, block, shared) just before the
    launch (on the kernel's device, made current) and timer.end(token) just after it, or
    timer.abandon(token) when the launch raised; None puts the plain function back."""
    global launch, _untimed
    if _untimed is not None:
        launch, _untimed = _untimed, None
    if timer is None:
        return
    inner = _untimed = launch

    def timed_launch(k, grid, block, args, shared=0):
        _runtime.activate(k.device)
        token = timer.begin(k, _runtime.current_stream(k.device), grid, block, shared)
        try:
            inner(k, grid, block, args, shared)
        except BaseException:
            timer.abandon(token)
            raise
        timer.end(token)
    timed_launch.__wrapped__ = inner
    launch = timed_launch


def allow_shared(k, nbytes):
    """Let kernel k's launches ask for `nbytes` of dynamic shared memory: over 48 KB the
    driver must be told first (the device's opt-in limit is 99 KB or more on compute
    capability 8.0 and later)."""
    if nbytes > k.shared_limit:
        attr = _driver.driver_module().CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        _driver.call("cuFuncSetAttribute", k.function, attr, nbytes)
        k.shared_limit = nbytes


def _dims(d):
    return (d, 1, 1) if isinstance(d, int) else tuple(d) + (1,) * (3 - len(d))


_attributes = _state.driver_cache()


def _attribute(device, name):
    """A device attribute (CU_DEVICE_ATTRIBUTE_<name>), asked of the driver once."""
    v = _attributes.get((device, name))
    if v is None:
        v = _attributes[(device, name)] = _state.devices.attribute(device, name)
    return v


def sm_count(device):
    """The device's number of multiprocessors."""
    return _attribute(device, "MULTIPROCESSOR_COUNT")


def shared_limit(device):
    """The most shared memory a block may ask for on `device` (the opt-in limit)."""
    return _attribute(device, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")


_gemm_facts = _state.driver_cache()


def gemm_facts(device):
    """(compute capability, multiprocessors, shared-memory limit, device): what a GEMM's
    launch plan depends on (torchlite/cuda/_matmul.py), one lookup per product."""
    f = _gemm_facts.get(device)
    if f is None:
        f = _gemm_facts[device] = (capability(device), sm_count(device), shared_limit(device), device)
    return f


_grid_caps = _state.driver_cache()


def grid_for(n, device, threads=256, per_thread=4):
    """Blocks for a grid-stride loop over n elements: enough for `per_thread` elements per
    thread, at most 32 blocks per multiprocessor (the loop covers the rest)."""
    cap = _grid_caps.get(device)
    if cap is None:
        cap = _grid_caps[device] = 32 * sm_count(device)
    blocks = (n + threads * per_thread - 1) // (threads * per_thread)
    return 1 if blocks < 1 else blocks if blocks < cap else cap


# ---- the error word ------------------------------------------------------------------------------
class ErrorWord:
    """A device int the kernels or error flags into (tl::Params::err): `reset()` before the
    launch, `read()` after it (a synchronisation)."""

    _words = {}

    @classmethod
    def of(cls, device):
        w = cls._words.get(device)
        if w is None or w.allocator is not _runtime.allocator():     # a new allocator: tests
            w = cls._words[device] = cls(device)
        return w

    def __init__(self, device):
        self.device = device
        self.allocator = _runtime.allocator()
        self.block = _runtime.malloc(device, 4)

    @property
    def address(self):
        return self.block.address

    def reset(self):
        _runtime.memset(self.device, self.block.address, b"\0\0\0\0", 1)

    def read(self):
        host = ctypes.c_int32(0)
        _runtime.copy_d2h(self.device, ctypes.addressof(host), self.block.address, 4)
        return host.value
