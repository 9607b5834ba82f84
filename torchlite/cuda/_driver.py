"""Finding out whether CUDA can run here, and the thin layer over cuda.bindings.driver.

Nothing here imports cuda.bindings at import time.  probe() answers, once per process and
without ever raising, which of these holds (TOOLCHAIN.md 2.6 measured each case):
  no-cuda-python  cuda.bindings cannot be imported (the [cuda] extra is not installed);
  no-driver       libcuda cannot be loaded (cuInit raises DynamicLibNotFoundError), or
                  the library found is the toolkit's stub;
  no-device       the driver loads but reports no device (cuInit: CUDA_ERROR_NO_DEVICE, or
                  cuDeviceGetCount says 0);
  no-nvrtc        libnvrtc cannot be loaded (nvidia-cuda-nvrtc is missing);
  no-headers      cuda_fp16.h / cuda_bf16.h are missing (nvidia-cuda-runtime is missing);
  driver-error    any other cuInit / cuDeviceGetCount failure;
  ok              CUDA is usable.
"""
import os
import threading
from dataclasses import dataclass

EXTRA_HINT = "pip install 'torchlite-dl[cuda]'"


class CudaError(RuntimeError):
    """A CUDA driver call failed; the message names the call and the driver's error."""


class OutOfMemoryError(CudaError):
    """CUDA ran out of device memory (torchlite.cuda.OutOfMemoryError)."""


class CudaUnavailableError(RuntimeError, AssertionError):
    """CUDA cannot be used here.  Both a RuntimeError (torchlite's rule) and an
    AssertionError (what PyTorch raises for 'Torch not compiled with CUDA enabled'), so code
    written against either catches it."""


@dataclass(frozen=True)
class Status:
    available: bool
    kind: str                   # see the module docstring
    reason: str                 # a sentence for error messages ("" when available)
    devices: int = 0
    nvrtc: tuple = None         # (major, minor) when libnvrtc loads
    driver: int = None          # cuDriverGetVersion, e.g. 13000


def _import_bindings():
    from cuda.bindings import driver, nvrtc
    return driver, nvrtc


def _include_dir():
    from . import _nvrtc
    return _nvrtc.cuda_include_dir()


def classify(import_bindings=_import_bindings, include_dir=_include_dir):
    """The Status of this machine.  The two callables are parameters so tests can stand in
    for each failure; every exception is caught (this runs inside is_available())."""
    try:
        driver, nvrtc = import_bindings()
    except Exception as e:          # ImportError, or a broken install failing otherwise
        return Status(False, "no-cuda-python",
                      f"cuda-python is not installed (importing cuda.bindings failed: {e}); "
                      f"install torchlite's CUDA extra: {EXTRA_HINT}")
    nv = _nvrtc_version(nvrtc)
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:          # cuda.pathfinder's DynamicLibNotFoundError, old bindings' RuntimeError
        return Status(False, "no-driver",
                      f"no NVIDIA driver was found (libcuda could not be loaded: {e}); "
                      f"install the NVIDIA driver (cuda-python is installed)", nvrtc=nv)
    code = int(err)
    if code == 100:                 # CUDA_ERROR_NO_DEVICE
        return Status(False, "no-device", "the NVIDIA driver reports no CUDA device (cuInit: "
                      f"CUDA_ERROR_NO_DEVICE{_visible_devices_note()})", nvrtc=nv)
    if code == 34:                  # CUDA_ERROR_STUB_LIBRARY
        return Status(False, "no-driver", "the libcuda that was found is the CUDA toolkit's "
                      "stub, not a driver (cuInit: CUDA_ERROR_STUB_LIBRARY); install the NVIDIA "
                      "driver", nvrtc=nv)
    if code != 0:
        return Status(False, "driver-error", f"cuInit failed: {_err_name(err)}", nvrtc=nv)
    version = _driver_version(driver)
    try:
        err, count = driver.cuDeviceGetCount()
    except Exception as e:
        return Status(False, "driver-error", f"cuDeviceGetCount failed: {e}", nvrtc=nv, driver=version)
    if int(err) != 0:
        return Status(False, "driver-error", f"cuDeviceGetCount failed: {_err_name(err)}",
                      nvrtc=nv, driver=version)
    if int(count) == 0:
        return Status(False, "no-device", "the NVIDIA driver reports no CUDA device "
                      f"(cuDeviceGetCount: 0{_visible_devices_note()})", nvrtc=nv, driver=version)
    if nv is None:
        return Status(False, "no-nvrtc", "NVRTC (libnvrtc, which compiles torchlite's kernels) "
                      f"could not be loaded; install torchlite's CUDA extra: {EXTRA_HINT} (it "
                      "adds nvidia-cuda-nvrtc)", devices=int(count), driver=version)
    try:
        inc = include_dir()
    except Exception:
        inc = None
    if not inc:
        return Status(False, "no-headers", "the CUDA headers the kernels include (cuda_fp16.h, "
                      f"cuda_bf16.h) were not found; install torchlite's CUDA extra: {EXTRA_HINT} "
                      "(it adds nvidia-cuda-runtime)", devices=int(count), nvrtc=nv, driver=version)
    return Status(True, "ok", "", devices=int(count), nvrtc=nv, driver=version)


def _nvrtc_version(nvrtc):
    try:
        err, major, minor = nvrtc.nvrtcVersion()
        return (int(major), int(minor)) if int(err) == 0 else None
    except Exception:               # libnvrtc missing
        return None


def _driver_version(driver):
    try:
        err, v = driver.cuDriverGetVersion()
        return int(v) if int(err) == 0 else None
    except Exception:
        return None


def _visible_devices_note():
    v = os.environ.get("CUDA_VISIBLE_DEVICES")
    return "" if v is None else f"; CUDA_VISIBLE_DEVICES={v!r}"


def _err_name(err):
    return getattr(err, "name", None) or f"CUresult {int(err)}"


_status = None
_status_lock = threading.Lock()


def probe():
    """The Status of this process, computed once."""
    global _status
    if _status is None:
        with _status_lock:
            if _status is None:
                _status = classify()
    return _status


# ---- checked driver calls ----------------------------------------------------------------------
_cuda_python_driver = None


def driver_module():
    """cuda-python's driver module (imported once; the tests replace this function)."""
    global _cuda_python_driver
    if _cuda_python_driver is None:
        from cuda.bindings import driver
        _cuda_python_driver = driver
    return _cuda_python_driver


def call(name, *args):
    """driver.<name>(*args) with its CUresult checked: returns the remaining values (one
    value unwrapped, none as None); raises OutOfMemoryError for CUDA_ERROR_OUT_OF_MEMORY
    and CudaError for any other error, naming the call."""
    return call_on(driver_module(), name, *args)


def call_on(d, name, *args):
    """call(), through the driver module `d` rather than the current one: for releasing what
    `d` made (an event, a block of memory) after another driver may have been installed."""
    result = getattr(d, name)(*args)
    err, values = result[0], result[1:]
    if int(err) != 0:
        raise _error(d, err, name)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


_last_checked = (None, False)     # (driver module, whether it is cuda-python's)


def _is_cuda_python(d):
    # remembered for the last module asked about: this runs at every launch, and getattr's
    # default costs an exception for the stand-in driver, which has no __name__
    global _last_checked
    if _last_checked[0] is not d:
        _last_checked = (d, getattr(d, "__name__", None) == "cuda.bindings.driver")
    return _last_checked[1]


_c_entries = {}


def c_entry(name):
    """What torchlite._core.driver_calls calls for driver function `name` (a hot call: a
    launch, an asynchronous copy or memset, a stream synchronisation): for cuda-python's
    driver, the function's C address from cuGetProcAddress (the form of the CUDA 12.0 API,
    so the 64-bit "_v2" copies; cuda-python loaded the same library, so contexts, modules and
    streams are shared); for another driver module (the tests' stand-in), its function of that
    name as a Python callable."""
    d = driver_module()
    address = _c_entries.get(name)
    if address is not None and d is _c_entries_module:
        return address
    if not _is_cuda_python(d):
        return getattr(d, name)
    return _resolve(d, name)


_c_entries_module = None     # the driver module _c_entries holds the addresses of


def _resolve(d, name):
    global _c_entries_module
    if _c_entries_module is not d:
        _c_entries.clear()
        _c_entries_module = d
    version = min(int(call_on(d, "cuDriverGetVersion")), 12000)
    flags = d.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
    err, pfn = d.cuGetProcAddress(name.encode(), version, flags)[:2]
    if int(err) != 0 or not int(pfn):
        raise CudaError(f"the CUDA driver has no {name} for CUDA {version // 1000}."
                        f"{version % 1000 // 10} (cuGetProcAddress: {_err_name(err)})")
    address = _c_entries[name] = int(pfn)
    return address


def function_handle(fn):
    """The kernel handle torchlite._core.driver_calls.launch passes: cuda-python's CUfunction as the int
    C takes; another driver's own object (the stand-in's kernel names) as it is."""
    return int(fn) if _is_cuda_python(driver_module()) else fn


def error(err, what):
    """The exception for driver result code `err` (an int or a CUresult) of `what`."""
    d = driver_module()
    try:
        err = d.CUresult(int(err))
    except Exception:
        pass
    return _error(d, err, what)


def _error(d, err, what):
    try:
        _, text = d.cuGetErrorString(err)
        text = text.decode() if isinstance(text, bytes) else str(text)
    except Exception:
        text = ""
    cls = OutOfMemoryError if int(err) == 2 else CudaError
    return cls(f"CUDA error: {_err_name(err)}: {text} (in {what})")


class Devices:
    """Per-device handles, primary contexts and properties (only used when probe() is ok)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._handles = {}
        self._contexts = {}

    def count(self):
        return int(call("cuDeviceGetCount"))

    def handle(self, index):
        h = self._handles.get(index)
        if h is None:
            h = self._handles[index] = call("cuDeviceGet", index)
        return h

    def attribute(self, index, name):
        d = driver_module()
        attr = getattr(d.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name)
        return int(call("cuDeviceGetAttribute", attr, self.handle(index)))

    def name(self, index):
        raw = call("cuDeviceGetName", 256, self.handle(index))
        raw = raw if isinstance(raw, bytes) else bytes(raw)
        return raw.split(b"\0", 1)[0].decode(errors="replace")

    def capability(self, index):
        return (self.attribute(index, "COMPUTE_CAPABILITY_MAJOR"),
                self.attribute(index, "COMPUTE_CAPABILITY_MINOR"))

    def total_memory(self, index):
        return int(call("cuDeviceTotalMem", self.handle(index)))

    def uuid(self, index):
        u = call("cuDeviceGetUuid", self.handle(index))
        raw = bytes(getattr(u, "bytes", b""))
        if len(raw) != 16:
            return ""
        h = raw.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def activate(self, index):
        """Make device `index`'s primary context current on this thread (retained once)."""
        with self._lock:
            ctx = self._contexts.get(index)
            if ctx is None:
                ctx = self._contexts[index] = call("cuDevicePrimaryCtxRetain", self.handle(index))
        call("cuCtxSetCurrent", ctx)
        return ctx
