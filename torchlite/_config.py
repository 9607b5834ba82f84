"""Build and runtime configuration: threads, SIMD level, OpenMP, CUDA availability."""
import os
import platform
import sys

from ._dispatch import elementwise as _ew
from ._core import parallel as _par
from .version import __version__


def get_num_threads():
    """Threads used by torchlite's CPU kernels (default: all cores, or OMP_NUM_THREADS)."""
    return _par.get_num_threads()


def set_num_threads(n):
    """Set the threads used by torchlite's CPU kernels."""
    _par.set_num_threads(n)


def _one_thread_after_fork():
    # GNU OpenMP's thread pool does not survive fork(): a child entering a parallel region
    # the parent had used waits forever for threads that exist only in the parent.  Like
    # PyTorch, a forked child runs its kernels on one thread.
    _par.set_num_threads(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_one_thread_after_fork)


def is_tensor(obj):
    from ._tensor import Tensor
    return isinstance(obj, Tensor)


def numel(input):
    return input.numel()


def is_distributed(input):
    """False: torchlite has no distributed tensor type (torch.is_distributed)."""
    from ._tensor import Tensor
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False


def is_floating_point(input):
    return input.is_floating_point()


def is_nonzero(input):
    """bool(input) for a one-element tensor (RuntimeError otherwise)."""
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous"
                           if input.numel() > 1 else "Boolean value of Tensor with no values is ambiguous")
    return bool(input.item())


def result_type(tensor1, tensor2):
    """The dtype an op over these operands (tensors or numbers) produces."""
    from . import _dtype as D
    from ._tensor import Tensor
    args = [t._data if isinstance(t, Tensor) else t for t in (tensor1, tensor2)]
    return D.DTYPES[_ew.result_type(*args)]


_ISA_NAMES = {0: "baseline (SSE2 on x86-64)", 3: "AVX2 + FMA (x86-64-v3)", 4: "AVX-512 (x86-64-v4)"}


def config():
    """A dict describing this build and machine (what show_config prints)."""
    from . import _core
    import numpy
    cuda = "not checked"
    try:
        from .cuda import _status
        st = _status()
        cuda = "available" if st.get("available") else f"not available: {st.get('reason')}"
    except ImportError:
        cuda = "not available: the CUDA backend is not part of this build yet"
    so = [os.path.basename(p) for p in os.listdir(os.path.dirname(_core.__file__)) if p.endswith((".so", ".pyd"))]
    try:
        from ._build_info import BUILD
    except ImportError:          # a source tree that was never built through setup.py
        BUILD = {}
    return {
        "torchlite": __version__,
        "compiler": BUILD.get("compiler", "unknown"),
        "cflags": BUILD.get("cflags", "unknown"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "openmp": _par.openmp_enabled(),
        "num_threads": _par.get_num_threads(),
        "usable_threads": _par.usable_threads(),     # less cores busy elsewhere (README)
        "cpu_cores": os.cpu_count(),
        "simd_cpu": _ISA_NAMES.get(_ew.cpu_isa_level()),
        "simd_in_use": _ISA_NAMES.get(_ew.isa_level()),
        "simd_compiled": [_ISA_NAMES[lv] for lv in _ew.compiled_isa_levels()],
        "native_build": os.environ.get("TORCHLITE_NATIVE", "0") == "1",
        "extensions": sorted(so),
        "cuda": cuda,
    }


def show_config():
    """Print versions, build flags, threads, SIMD level and CUDA status (attach to bug reports)."""
    for k, v in config().items():
        print(f"{k:>14}: {v}")


# ---- PyTorch's other process-wide settings --------------------------------------------------------
_interop_threads = [None]
_warn_always = [False]


def get_num_interop_threads():
    """The inter-op thread count (PyTorch's pool for running independent ops at once).
    torchlite runs ops one after another, each parallel inside (get_num_threads), so this is
    only the value set_num_interop_threads recorded (default: the intra-op count)."""
    return _interop_threads[0] if _interop_threads[0] is not None else get_num_threads()


def set_num_interop_threads(n):
    """Record the inter-op thread count (see get_num_interop_threads); like PyTorch, only once
    and with a positive number."""
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise RuntimeError(f"Expected positive number of threads, got {n}")
    if _interop_threads[0] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started "
                           "or set_num_interop_threads called")
    _interop_threads[0] = n


def init_num_threads():
    """Set up the intra-op threads for the calling thread (torchlite's OpenMP regions need
    nothing: a no-op, as on PyTorch builds without a per-thread setup)."""


def set_warn_always(b):
    """Whether warnings PyTorch gives once per process are given every time (torchlite's
    warnings go through Python's `warnings` module, whose filters decide; this flag is
    what is_warn_always_enabled reports)."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled():
    return _warn_always[0]


def set_flush_denormal(mode):
    """Flushing denormal floats to zero: torchlite does not change the CPU's floating-point
    mode, so it answers False, as PyTorch does where the CPU lacks the mode (its result says
    whether the setting took effect)."""
    return False


def typename(obj):
    """The type's name as PyTorch prints it: 'torch.FloatTensor' for a float32 CPU tensor, else
    the object's module-qualified class name."""
    from ._tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    if module in ("builtins", "__builtin__"):
        return name
    return f"{module}.{name}"


def is_storage(obj):
    """Whether obj is a storage (an UntypedStorage or a TypedStorage)."""
    from ._ops.storage import is_storage as _is_storage
    return _is_storage(obj)


# ---- what this build has, as torch.has_* reports it --------------------------------------------
def _built_with_openmp():
    try:
        from ._build_info import BUILD
        return bool(BUILD.get("openmp"))
    except ImportError:
        return False


has_openmp = _built_with_openmp()
has_lapack = True          # the decompositions (LU, QR, Cholesky, eigh, SVD, ...) are here
has_mkl = False            # torchlite's GEMM and FFT are its own
has_spectral = True        # torchlite.fft


def is_vulkan_available():
    """False: torchlite has no Vulkan backend."""
    return False


def cudnn_is_acceptable(tensor):
    """False: torchlite has no cuDNN (its CUDA backend runs kernels of its own)."""
    from ._ops._kit import tensor_arg
    tensor_arg(tensor, "cudnn_is_acceptable", "self")
    return False


def compiled_with_cxx11_abi():
    """True: the C++ modules are built with the platform's default (new) C++ ABI."""
    return True


def get_device_module(device=None):
    """The module of a device type: torchlite.cuda for 'cuda', torchlite.cpu for 'cpu'
    (None: the default device's)."""
    import importlib
    from ._device import device as _device_cls, get_default_device
    if device is None:
        device = get_default_device()
    kind = device.type if isinstance(device, _device_cls) else str(device).split(":")[0]
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as "
                           f"'torchlite.{kind}'.")
    return importlib.import_module(f"torchlite.{kind}")
