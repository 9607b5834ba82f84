"""The CUDA backend's services other than kernels, registered (as the kernels are, in
_registry.py) for torchlite._dispatch.devices, the only door the layers above use: moving
arrays between devices, pinned host memory, the per-device random generators and their
seeding, the device checks that creation and moving need, and the DLPack stream protocol.

Each function works on arrays and device numbers, never on Tensors: the Tensor layer wraps
what comes back."""
from . import _array, _driver, _host, _runtime, _state
from ._registry import UPCALLS, service


@service("is_available")
def is_available():
    return _driver.probe().available


@service("unavailable_reason")
def unavailable_reason():
    return _driver.probe().reason


@service("checked_index")
def checked_index(dev, what):
    """The device number of `dev` (None, an int, 'cuda', 'cuda:N', a torchlite.device) after
    initialising CUDA; CudaUnavailableError naming what is missing, AssertionError for a
    number out of range."""
    return _state.checked_index(dev, what)


@service("device_index")
def device_index(dev):
    """The device number of `dev` (None: the current device), without initialising CUDA."""
    return _state.device_index(dev)


@service("current_index")
def current_index():
    """This thread's current CUDA device (initialising CUDA)."""
    _state.lazy_init("query the current CUDA device")
    return _state.current_index()


@service("to_device")
def to_device(arr, index, non_blocking=False):
    """arr (CPU or CUDA) as an array on CUDA device `index` (arr itself when it is there)."""
    return _array.move_to_device(arr, index, non_blocking)


@service("to_host")
def to_host(arr, non_blocking=False):
    """A CUDA array's elements in a CPU array."""
    return _array.to_host(arr, non_blocking=non_blocking)


@service("pin")
def pin(arr):
    """A copy of CPU array `arr` in page-locked memory (arr when it is pinned already)."""
    return _host.pin(arr)


@service("is_pinned")
def is_pinned(arr):
    return _host.is_pinned(arr)


@service("generator")
def generator(dev):
    """The default random generator of CUDA device `dev`."""
    return _state.generator(_state.device_index(dev))


@service("generator_states")
def generator_states():
    """{device index: state bytes} of the device generators made so far (torchlite.compile
    puts them back after its capture run)."""
    with _state.generators_lock:
        return {idx: g.state_bytes() for idx, g in _state.generators.items()}


@service("set_generator_states")
def set_generator_states(states):
    """Put back states from generator_states; a generator made since is dropped (the next use
    makes it again, from the same seed, as if it had never drawn)."""
    with _state.generators_lock:
        for idx in list(_state.generators):
            if idx in states:
                _state.generators[idx].set_state_bytes(states[idx])
            else:
                del _state.generators[idx]


@service("seed_all")
def seed_all(seed):
    """Seed every device's generator (those made later too), without touching CUDA."""
    _state.seed_all_generators(seed)


@service("view_capsule")
def view_capsule(capsule, index):
    """A CUDA array over a DLPack capsule's memory on device `index` (consumes it)."""
    from .._core import dlpack as _dl
    _state.lazy_init("import a CUDA tensor through DLPack")
    UPCALLS.device_memory_exists()
    return _array.CudaArray(_dl.from_capsule(capsule, None, index), index)


@service("current_stream")
def current_stream(index):
    """The handle of this thread's current stream on device `index` (0: the default)."""
    return _runtime.current_stream(index)


@service("order_after_current")
def order_after_current(index, stream):
    """Make later work on `stream` wait for the work queued so far on device `index`."""
    _runtime.order_after_current(index, stream)


@service("start_kernel_timing")
def start_kernel_timing(on_begin, on_end):
    """Time every kernel launch on the device until stop_kernel_timing (the profiler's device
    timeline; _kernel_timing.py); returns the timer, whose collect() gives the times."""
    from . import _kernel_timing
    return _kernel_timing.start(on_begin, on_end)


@service("stop_kernel_timing")
def stop_kernel_timing():
    from . import _kernel_timing
    _kernel_timing.stop()


@service("observe_allocations")
def observe_allocations(observer):
    """observer(device, address, nbytes, allocated, reserved) after each device allocation
    and free (the profiler's "[memory]" records); None stops it (_allocator.set_observer)."""
    from . import _allocator
    _allocator.set_observer(observer)
