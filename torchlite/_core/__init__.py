"""torchlite's CPU array layer (Cython + OpenMP).

The array interface, which the CUDA backend implements too, is what the Tensor layer uses:

* ``array.Array``: a strided view; ``shape``, ``strides`` (elements), ``offset``, ``dtype``
  (an int code, see torchlite/_dtype.py), ``ndim``, ``numel``, ``device``; views
  ``view``, ``as_strided``, ``permute``, ``transpose``, ``expand``, ``slice``, ``select``,
  ``squeeze``, ``unsqueeze``, ``diagonal``, ``unfold``; ``item``, ``tolist``.
* creation: ``array.empty``, ``array.full``, ``array.fill_``, ``array.from_numpy``,
  ``array.from_flat``.
* ``elementwise``: ``unary``, ``binary``, ``ternary`` (op codes in ``UNARY``, ``BINARY``,
  ``TERNARY``), ``cast``, ``copy_``, ``clone``, ``contiguous``, type promotion.
* ``reduce``, ``matmul``, ``index``, ``random``: reductions, GEMM, indexing and RNG kernels.
"""
import importlib
import operator
import os

# ---- where the C and CUDA sources are -----------------------------------------------------
# kernels/*.h ships inside this package; cuda_kernels/ ships as torchlite/cuda_kernels in a
# wheel and sits at the top of a source checkout.  torchlite.cuda compiles the .cu files with
# NVRTC, torchlite.compile's generated C includes headers of both folders.
KERNEL_HEADERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CUDA_CANDIDATES = (os.path.join(_PACKAGE, "cuda_kernels"),                      # installed
                    os.path.join(os.path.dirname(_PACKAGE), "cuda_kernels"))     # source checkout


def cuda_kernel_dir():
    """The folder holding the .cu/.cuh sources: $TORCHLITE_KERNEL_DIR, else the copy shipped
    inside the package (torchlite/cuda_kernels), else the source checkout's cuda_kernels/."""
    env = os.environ.get("TORCHLITE_KERNEL_DIR")
    if env:
        return env
    for d in _CUDA_CANDIDATES:
        if os.path.isfile(os.path.join(d, "tl_common.cuh")):
            return d
    raise RuntimeError("torchlite: the CUDA kernel sources (cuda_kernels/*.cu) were not found; "
                       f"looked in {', '.join(_CUDA_CANDIDATES)} (set TORCHLITE_KERNEL_DIR)")


# The modules with SIMD kernels compiled once per ISA level (kernels/isa.h); each installs one
# level's kernels at import and has its own set_isa_level, the mechanism the functions below use.
_KERNEL_MODULES = ("elementwise", "reduction", "matmul", "random", "norm", "conv", "linalg_decomp",
                   "optim", "rnn", "fft")


def env_isa_level():
    """The SIMD level the environment variable TORCHLITE_ISA asks for (0 = baseline, 3 =
    AVX2+FMA, 4 = AVX-512), or 99, the best the CPU has, when it is unset or empty."""
    value = os.environ.get("TORCHLITE_ISA")
    return int(value) if value else 99


def isa_switch(install):
    """(set_isa_level, isa_level) for a kernel module whose tables `install(level)` fills with
    the kernels of a level the CPU supports, returning the level installed.  Installs the level
    TORCHLITE_ISA asks for at once (the module calls this at import)."""
    installed = [0]

    def set_isa_level(level):
        """Install this module's kernels of SIMD `level` (0, 3 or 4), clamped to what the CPU
        supports; returns the level installed.  Tests use it to run every copy."""
        from torchlite._core.elementwise import cpu_isa_level
        installed[0] = install(min(operator.index(level), cpu_isa_level()))
        return installed[0]

    def isa_level():
        """The SIMD level whose kernels this module has installed."""
        return installed[0]

    set_isa_level(env_isa_level())
    return set_isa_level, isa_level


def _kernel_modules():
    return [importlib.import_module(f"torchlite._core.{name}") for name in _KERNEL_MODULES]


def set_isa_level(level):
    """Install the SIMD kernels of `level` (0, 3 or 4, clamped to what the CPU supports) in
    every kernel module (_KERNEL_MODULES).  Returns the level installed.
    TORCHLITE_ISA sets the level each module starts with."""
    return min(m.set_isa_level(level) for m in _kernel_modules())


def isa_level():
    """The SIMD level installed in the kernel modules (the lowest, should a test have set one
    module alone)."""
    return min(m.isa_level() for m in _kernel_modules())
