"""The array layer as the layers above see it: one namespace per kernel module of
torchlite/_core, the same names, and a function per name that runs on the arrays' device.

``from .._dispatch import elementwise as _ew`` gives an object with every attribute of
torchlite/_core/elementwise.pyx.  Until the first CUDA array exists its functions *are* the
CPU module's (no cost at all on the CPU path); from then on each is a wrapper that looks at
its arguments: CPU arrays run the CPU kernel, CUDA arrays run the CUDA backend
(torchlite/cuda/_ops.py: a kernel, or the CPU kernel on host copies where there is none
yet), and arrays on two devices raise PyTorch's RuntimeError.  A CPU array with no
dimensions may join CUDA arrays, as a CPU scalar tensor may in PyTorch.

Array creation takes a device: ``array.empty(shape, dtype, device=...)`` (also ``full``,
``empty_strided``), where device is None or 'cpu', 'cuda:N', a torchlite.device, or an
array whose device to use; ``array.empty_like(a, dtype)`` gives PyTorch's empty_like strides.
"""
import importlib
import sys

from . import _memory_format as MF

_MODULES = ("array", "elementwise", "reduction", "matmul", "indexing", "sorting", "joining", "random",
            "conv", "pool", "norm", "loss", "linalg_decomp", "dlpack", "optim", "rnn", "fused",
            "fft", "special")

# functions whose CUDA versions take operands on another device themselves (the transfers)
CROSS_DEVICE = {("elementwise", "copy_")}

_enabled = False
_cuda_array_type = None
_meta_array_type = None      # torchlite/_meta.py's MetaArray, once a meta array exists


class _Namespace:
    """The attributes of one torchlite/_core module, its functions swappable for
    dispatching wrappers."""

    def __init__(self, name):
        self.__name__ = f"torchlite._dispatch.{name}"
        self._name = name
        self._cpu = importlib.import_module(f"torchlite._core.{name}")
        for key, value in vars(self._cpu).items():
            if not key.startswith("__"):
                setattr(self, key, value)

    def __repr__(self):
        return f"<array-layer namespace {self._name}>"

    def _enable(self):
        for key, value in vars(self._cpu).items():
            if not key.startswith("_") and _is_kernel_function(value) \
                    and getattr(self, key) is value:
                setattr(self, key, _dispatcher(self._name, key, value))

    def _disable(self):
        for key, value in vars(self._cpu).items():
            if getattr(getattr(self, key, None), "__wrapped__", None) is value:
                setattr(self, key, value)


def _is_kernel_function(value):
    return callable(value) and not isinstance(value, type) and type(value).__name__ in (
        "cython_function_or_method", "builtin_function_or_method", "function")


def device_index_of(args, kwargs, op):
    """The CUDA device index the arguments' arrays are on, or None when all are CPU arrays;
    RuntimeError when they are on different devices."""
    cuda_t = _cuda_array_type
    found = None          # device index of the first CUDA array
    cpu_array = None      # a CPU array with dimensions, if any
    for x in (args if not kwargs else args + tuple(kwargs.values())):
        t = type(x)
        if t is cuda_t:
            idx = x.device_index
            if found is None:
                found = idx
            elif idx != found:
                _raise_mixed(f"cuda:{found}", f"cuda:{idx}", op)
        elif t is list or t is tuple:
            for e in x:
                te = type(e)
                if te is cuda_t:
                    idx = e.device_index
                    if found is None:
                        found = idx
                    elif idx != found:
                        _raise_mixed(f"cuda:{found}", f"cuda:{idx}", op)
                elif te is _CpuArray and e.ndim:
                    cpu_array = e
        elif t is _CpuArray and x.ndim:
            cpu_array = x
    if found is not None and cpu_array is not None and op not in CROSS_DEVICE:
        _raise_mixed(f"cuda:{found}", "cpu", op)
    return found


def _raise_mixed(a, b, op):
    raise mixed_device_error(a, b, f"in {op[0]}.{op[1]}")


def mixed_device_error(a, b, where):
    """PyTorch's RuntimeError for operands on devices a and b (strings such as 'cuda:0',
    'cpu'; the CUDA one is named first, as PyTorch does); `where` names the op."""
    if a == "cpu":
        a, b = b, a
    return RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                        f"devices, {a} and {b}! ({where})")


def check_same_device(op, *arrays):
    """mixed_device_error unless the arrays are on one device; a CPU array with no dims
    may join arrays on any device (a CPU scalar tensor, as PyTorch allows)."""
    first = None
    for a in arrays:
        d = a.device
        if d == "cpu" and a.ndim == 0:
            continue
        if first is None:
            first = d
        elif d != first:
            raise mixed_device_error(first, d, f"when checking arguments for {op}")


def _dispatcher(ns, name, cpu_fn):
    op = (ns, name)
    scan = _cpu_array_module.scan_devices

    def dispatch(*args, **kwargs):
        idx = scan(args, kwargs, _cuda_array_type, _meta_array_type)   # the fast check, in Cython
        if idx == -1:
            return cpu_fn(*args, **kwargs)
        if idx == -3:
            return _call_meta(op, cpu_fn, args, kwargs)
        if idx < 0:                                      # mixed: an error, or a transfer
            idx = device_index_of(args, kwargs, op)
        return sys.modules["torchlite.cuda._ops"].call(op, cpu_fn, idx, args, kwargs)
    dispatch.__name__ = name
    dispatch.__qualname__ = f"{ns}.{name}"
    dispatch.__doc__ = cpu_fn.__doc__
    dispatch.__wrapped__ = cpu_fn
    return dispatch


def enable_devices(cuda_array_type):
    """Swap every namespace's functions for dispatching wrappers (called by the CUDA backend
    when it creates its first array)."""
    global _cuda_array_type
    if _cuda_array_type is not None:
        return
    importlib.import_module("torchlite.cuda._ops")
    _cuda_array_type = cuda_array_type
    _install_dispatchers()


def enable_meta(meta_array_type):
    """The same for the meta device (torchlite/_meta.py, at its first array)."""
    global _meta_array_type
    if _meta_array_type is None:
        _meta_array_type = meta_array_type
        _install_dispatchers()


def _install_dispatchers():
    global _enabled
    if _enabled:
        return
    observer = _observer
    set_kernel_observer(None)          # the observed wrappers go around the dispatching ones
    for ns in _NAMESPACES.values():
        ns._enable()
    _enabled = True
    set_kernel_observer(observer)


def _call_meta(op, cpu_fn, args, kwargs):
    """An array-layer call with a meta array among its arguments: on the meta device when
    every other array is a meta one or a CPU array with no dims (a CPU scalar tensor), else
    PyTorch's RuntimeError."""
    for x in (args if not kwargs else args + tuple(kwargs.values())):
        for e in (x if type(x) in (list, tuple) else (x,)):
            te = type(e)
            if (te is _CpuArray and e.ndim) or te is _cuda_array_type:
                raise RuntimeError(f"Tensor on device {e.device} is not on the expected device "
                                   f"meta! (in {op[0]}.{op[1]})")
    return sys.modules["torchlite._meta"].call(op, cpu_fn, args, kwargs)


# ---- observing kernel calls (the profiler) -----------------------------------------------------
_observer = None


def set_kernel_observer(observer):
    """Call observer(qualname, fn, args, kwargs), which must return fn(*args, **kwargs), for
    every array-layer function called through this module ('elementwise.binary',
    'matmul.bmm', ...); None removes it.  The profiler (torchlite.profiler) uses it: while
    none is set the functions are the plain ones, so observing costs nothing when off."""
    global _observer
    if _observer is not None:
        for ns in _NAMESPACES.values():
            for key in list(vars(ns)):
                inner = getattr(getattr(ns, key), "__observed__", None)
                if inner is not None:
                    setattr(ns, key, inner)
    _observer = observer
    if observer is None:
        return
    for ns in _NAMESPACES.values():
        for key, value in list(vars(ns).items()):
            if not key.startswith("_") and _is_kernel_function(value):
                setattr(ns, key, _observed(f"{ns._name}.{key}", value, observer))


def _observed(qualname, fn, observer):
    def observed(*args, **kwargs):
        return observer(qualname, fn, args, kwargs)
    observed.__name__ = fn.__name__
    observed.__qualname__ = qualname
    observed.__doc__ = fn.__doc__
    observed.__observed__ = fn
    return observed


def disable_devices():
    """Put the CPU functions back (the tests, after a stand-in driver's CUDA arrays are gone);
    the wrappers stay while the meta device is in use."""
    global _cuda_array_type
    _cuda_array_type = None
    if _meta_array_type is None:
        _remove_dispatchers()


def disable_meta():
    """The same for the meta device (the tests, once their meta arrays are gone)."""
    global _meta_array_type
    _meta_array_type = None
    if _cuda_array_type is None:
        _remove_dispatchers()


def _remove_dispatchers():
    global _enabled
    observer = _observer
    set_kernel_observer(None)
    for ns in _NAMESPACES.values():
        ns._disable()
    _enabled = False
    set_kernel_observer(observer)


# ---- the backend's device services ------------------------------------------------------------
class _DeviceServices:
    """The CUDA backend's services other than kernels, by name: ``devices.to_device(arr,
    index)``, ``devices.to_host(arr)``, ``devices.pin(arr)``, ``devices.is_pinned(arr)``,
    ``devices.checked_index(dev, what)``, ``devices.current_index()``,
    ``devices.generator(dev)``, ``devices.is_available()``, the DLPack stream protocol
    (torchlite/cuda/_services.py lists them).  The backend is imported on the first use of
    one; without it (a build or an environment without cuda-python) each raises RuntimeError
    saying tensors stay on the CPU."""

    def __getattr__(self, name):
        try:
            importlib.import_module("torchlite.cuda._services")
        except ImportError as e:
            raise RuntimeError(f"torchlite: CUDA is not available in this build ({e}); tensors "
                               f"can only live on the cpu") from None
        from torchlite.cuda._registry import SERVICES
        try:
            fn = SERVICES[name]
        except KeyError:
            raise AttributeError(f"the CUDA backend has no device service {name!r}") from None
        setattr(self, name, fn)
        return fn


devices = _DeviceServices()
_seed_for_devices = None


def backend_loaded():
    """Whether the CUDA backend's services are loaded (no device array, pinned block or
    generator of it can exist before)."""
    return "torchlite.cuda._services" in sys.modules


def seed_devices(seed):
    """torchlite.manual_seed's part for the devices: every device generator, those the
    backend makes later too, starts from `seed` (the backend is not loaded for it)."""
    global _seed_for_devices
    _seed_for_devices = seed
    if "torchlite.cuda._state" in sys.modules:    # where the device generators live
        devices.seed_all(seed)


def seed_for_new_generators():
    """The last seed_devices seed (None before any), for generators made after it."""
    return _seed_for_devices


def connect_backend():
    """Called by torchlite.cuda as it is imported (before any backend module runs): the
    backend's calls up to this layer, which it never imports, go through its registry."""
    from .cuda._registry import UPCALLS

    def device_memory_exists():
        from .cuda._array import CudaArray
        enable_devices(CudaArray)
    UPCALLS.device_memory_exists = device_memory_exists
    UPCALLS.seed_for_new_generators = seed_for_new_generators


def cuda_fallback_names():
    """The array-layer functions without a CUDA version of their own: they run their CPU
    kernel on host copies of a CUDA array (torchlite/cuda/_fallback.py)."""
    from .cuda._registry import KERNEL, NATIVE
    names = []
    for ns_name in _MODULES:
        for key, value in vars(_NAMESPACES[ns_name]._cpu).items():
            if not key.startswith("_") and _is_kernel_function(value) \
                    and (ns_name, key) not in NATIVE and (ns_name, key) not in KERNEL:
                names.append(f"{ns_name}.{key}")
    return sorted(names)


def cuda_available():
    """Whether CUDA tensors can be made here (False, not an error, without a backend)."""
    try:
        return bool(devices.is_available())
    except RuntimeError:
        return False


# ---- creation on a device ------------------------------------------------------------------
def _device_index(device):
    """None for the CPU, else the CUDA device index of `device` (see the module docstring)."""
    if device is None:
        return None
    if isinstance(device, str):
        if device == "cpu":
            return None
    elif type(device) is _CpuArray:
        return None
    elif type(device) is _cuda_array_type and device is not None:
        return device.device_index
    from ._device import to_device
    d = to_device(device)
    if d.type == "cpu":
        return None
    return devices.device_index(d)


def is_meta(device):
    """Whether a creation's `device` (see _device_index) is the meta device."""
    if device is None or type(device) is _CpuArray:
        return False
    if isinstance(device, str):
        return device == "meta" or device.startswith("meta:")
    if _meta_array_type is not None and type(device) is _meta_array_type:
        return True
    return getattr(device, "type", None) == "meta"


def _creation(name):
    cpu_fn = getattr(importlib.import_module("torchlite._core.array"), name)

    def create(*args, device=None):
        if is_meta(device):
            return _meta_create(name, args)
        idx = _device_index(device)
        if idx is None:
            return cpu_fn(*args)
        from .cuda import _ops
        return _ops.create(name, idx, args)
    create.__name__ = name
    create.__doc__ = f"{cpu_fn.__doc__ or name}\n\nOn `device` (None: the CPU)."
    return create


def _meta_backend():
    """torchlite/_meta.py, with the dispatching wrappers installed (a meta array is about to
    exist)."""
    from . import _meta
    _meta.on_first_alive = _enable_meta_arrays
    _meta.on_last_gone = disable_meta
    enable_meta(_meta.MetaArray)
    return _meta


def _enable_meta_arrays():
    enable_meta(sys.modules["torchlite._meta"].MetaArray)


def meta_like(a):
    """A new meta array with the shape, dtype and memory order of array `a` (a tensor moved
    to 'meta'; see _empty_like)."""
    _meta_backend()
    return _empty_like(a, a.dtype, device="meta")


def _meta_create(name, args):
    """array.empty / full / empty_strided on the meta device (a fill has nothing to write)."""
    _meta = _meta_backend()
    if name == "empty":
        return _meta.empty(args[0], args[1])
    if name == "full":
        return _meta.empty(args[0], args[2])
    shape, order, dtype = args
    return _meta.empty(shape, dtype, order)


def _empty_like(a, dtype, device=None, memory_format=None, op="empty_like"):
    """An uninitialised array shaped like array `a`, of dtype code `dtype`, on `device` (None:
    a's device), with the strides PyTorch's empty_like gives (torchlite/_memory_format.py's
    like_strides, the one home of that rule): for preserve_format (memory_format None), a's
    own strides when a is dense, else dense strides in a's dim order; else the format's."""
    on = a if device is None else device
    if memory_format is None or memory_format is MF.preserve_format:
        # the common cases without the stride arithmetic (autograd makes one per backward):
        # a row-major input keeps its strides, a size-1 dim's odd one included, and so does
        # any dense input (the array layer's check, which no non-dense array passes)
        if a.is_contiguous():
            arr = _NAMESPACES["array"].empty(a.shape, dtype, device=on)
            return arr if arr.strides == a.strides else arr.as_strided(a.shape, a.strides, 0)
        if a.is_non_overlapping_and_dense():
            return _empty_with_strides(a.shape, a.strides, dtype, on)
    strides = MF.like_strides(a.shape, a.strides, memory_format, op)
    return _empty_with_strides(a.shape, strides, dtype, on)


def _empty_with_strides(shape, strides, dtype, device):
    """An uninitialised array of `shape` with the given dense strides (any dim order; size-1
    and size-0 dims may carry any stride, as PyTorch's empty_strided allows)."""
    ns = _NAMESPACES["array"]
    strides, nd = tuple(strides), len(shape)
    if strides == MF.strides_for(shape, range(nd - 1, -1, -1)):    # row-major: the common case
        return ns.empty(shape, dtype, device=device)
    arr = ns.empty_strided(shape, sorted(range(nd), key=lambda d: strides[d]), dtype, device=device)
    # the dim order fixes the strides of every dim of size 2 or more; the others (size 1,
    # or any dim of an empty tensor) take the requested values through a view of the
    # same dense storage
    return arr if arr.strides == strides else arr.as_strided(shape, strides, 0)


_NAMESPACES = {name: _Namespace(name) for name in _MODULES}
_cpu_array_module = _NAMESPACES["array"]._cpu
_CpuArray = _NAMESPACES["array"].Array
for _name in ("empty", "full", "empty_strided"):
    setattr(_NAMESPACES["array"], _name, _creation(_name))
_NAMESPACES["array"].empty_like = _empty_like
_NAMESPACES["array"].empty_with_strides = _empty_with_strides

array = _NAMESPACES["array"]
elementwise = _NAMESPACES["elementwise"]
reduction = _NAMESPACES["reduction"]
matmul = _NAMESPACES["matmul"]
indexing = _NAMESPACES["indexing"]
sorting = _NAMESPACES["sorting"]
joining = _NAMESPACES["joining"]
random = _NAMESPACES["random"]
conv = _NAMESPACES["conv"]
pool = _NAMESPACES["pool"]
norm = _NAMESPACES["norm"]
loss = _NAMESPACES["loss"]
linalg_decomp = _NAMESPACES["linalg_decomp"]
dlpack = _NAMESPACES["dlpack"]
optim = _NAMESPACES["optim"]
rnn = _NAMESPACES["rnn"]
fused = _NAMESPACES["fused"]
fft = _NAMESPACES["fft"]
