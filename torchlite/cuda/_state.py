"""The CUDA backend's process state, below the public torchlite.cuda module: whether CUDA is
initialised and its device handles, each thread's current device (and, in `tls.streams`, its
current streams), the caching allocator's registration, and the per-device random generators.
The backend's modules (_runtime, _launch, _services) read it here; torchlite.cuda, the public
face, exposes it through PyTorch's names."""
import threading

from . import _driver
from ._driver import CudaUnavailableError

# False: no kernel is launched, every op runs on host copies (the tests' host-memory driver)
kernels_enabled = True
tls = threading.local()            # .index: this thread's current device; .streams: {index: Stream}
init_lock = threading.RLock()
initialized = False
devices = None                     # _driver.Devices once initialised
# The caching allocator registers itself with set_allocator(obj): obj.stats(index) returns a
# dict with "allocated", "max_allocated", "reserved", "max_reserved" (bytes),
# obj.reset_peak(index) and obj.empty_cache() release what it caches.
allocator = None
# Each device has a Philox state (seed, offset) with the CPU generator's rules and format;
# torchlite.manual_seed also seeds the generators made later (_dispatch remembers its seed
# and hands it over through _registry.UPCALLS).
generators = {}
generators_lock = threading.Lock()
# Caches whose values belong to the driver that made them: device arrays, loaded kernels, a
# device's attributes.  A process has one driver, but the tests stand a host-memory driver in
# for the real one and back; such a swap empties these and restores them on the way back,
# since a stand-in's "device pointer" handed to a real kernel is an illegal address.
_driver_caches = []


def driver_cache():
    """A new dict, registered as holding objects of the current driver."""
    cache = {}
    _driver_caches.append(cache)
    return cache


def driver_caches():
    """Every dict made by driver_cache()."""
    return list(_driver_caches)


def device_count():
    """The number of CUDA devices torchlite can use (0 when CUDA is unavailable)."""
    st = _driver.probe()
    return st.devices if st.available else 0


def unavailable_error(what):
    reason = _driver.probe().reason
    return CudaUnavailableError(f"torchlite: cannot {what}: CUDA is not available because {reason}")


def require_cuda(what="use CUDA"):
    """Raise CudaUnavailableError (a RuntimeError) naming what is missing, unless CUDA is
    usable.  `what` completes "cannot ...", e.g. "create a CUDA tensor"."""
    if not _driver.probe().available:
        raise unavailable_error(what)


def lazy_init(what="initialize CUDA"):
    """Initialise CUDA once (device handles; the primary context is made current per thread
    on first use of a device); raises CudaUnavailableError when CUDA is unavailable."""
    global initialized, devices
    if initialized:
        return
    with init_lock:
        if initialized:
            return
        require_cuda(what)
        devices = _driver.Devices()
        initialized = True


def current_index():
    return getattr(tls, "index", 0)


def device_index(dev, optional=True):
    """The device number of None (the current device), an int, 'cuda', 'cuda:N' or a
    torchlite.device; ValueError for a non-CUDA device."""
    from .._device import device as _device_cls
    if dev is None and optional:
        return current_index()
    if isinstance(dev, bool):
        raise TypeError(f"Invalid device, must be cuda device, not {dev!r}")
    if isinstance(dev, int):
        return dev
    if isinstance(dev, str):
        dev = _device_cls(dev)
    if isinstance(dev, _device_cls):
        if dev.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {dev}")
        return current_index() if dev.index is None else dev.index
    raise TypeError(f"Invalid device, must be cuda device, an int or None, not {type(dev).__name__}")


def checked_index(dev, what):
    """The device number of `dev` after initialising CUDA; AssertionError for a number out
    of range (PyTorch's 'Invalid device id')."""
    idx = device_index(dev)
    lazy_init(what)
    if not 0 <= idx < device_count():
        raise AssertionError(f"Invalid device id: {idx} (torchlite sees {device_count()} CUDA "
                             f"device(s))")
    return idx


def activate(idx):
    """Make device idx's context current on this thread (before any driver call for it)."""
    return devices.activate(idx)


def set_allocator(obj):
    global allocator
    allocator = obj


def generator(idx):
    """Device idx's default generator (the one its random ops draw from)."""
    from .._core import random as _R
    from ._registry import UPCALLS
    with generators_lock:
        g = generators.get(idx)
        if g is None:
            g = generators[idx] = _R.Philox()
            seed = UPCALLS.seed_for_new_generators()
            if seed is not None:
                g.manual_seed(seed)
        return g


def seed_all_generators(seed):
    """torchlite.manual_seed's part for the generators made so far (without touching CUDA);
    those made later take the seed from _dispatch."""
    with generators_lock:
        for g in generators.values():
            g.manual_seed(seed)
