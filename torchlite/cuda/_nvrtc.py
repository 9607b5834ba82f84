"""NVRTC: compile a kernel source and its template instantiations to a CUBIN for one exact
architecture.

What TOOLCHAIN.md (section 2) measured shapes this module:
* libnvrtc comes from the nvidia-cuda-nvrtc wheel, loaded lazily by cuda.bindings through
  cuda-pathfinder; nothing here runs at import.
* NVRTC has no default include path: the fp16/bf16 headers come from the
  nvidia-cuda-runtime wheel, found with cuda.pathfinder and passed with -I.  torchlite's
  own headers (cuda_kernels/*.cuh) are handed to NVRTC in memory.
* A recent NVRTC emits PTX that an older driver cannot load, so the image loaded is always
  the CUBIN for the device's exact sm_XY; PTX (compute_XY) only when this NVRTC does not
  know the device's architecture (target_for).
"""
import re
from dataclasses import dataclass, field
from functools import lru_cache


class CompileError(RuntimeError):
    """NVRTC rejected a kernel source: the message names the file, the name expressions
    and the options, and carries NVRTC's log."""


@dataclass
class Program:
    """A compiled source: the image (CUBIN, or PTX for an unknown architecture), the
    lowered (mangled) symbol of each name expression, and NVRTC's log."""
    image: bytes
    kind: str                                  # "cubin" or "ptx"
    arch: str                                  # "sm_90", "compute_90"
    lowered: dict = field(default_factory=dict)
    log: str = ""


def _nvrtc():
    from cuda.bindings import nvrtc
    return nvrtc


@lru_cache(maxsize=None)
def version():
    """(major, minor) of the loaded NVRTC; RuntimeError when libnvrtc cannot be loaded."""
    nvrtc = _nvrtc()
    err, major, minor = nvrtc.nvrtcVersion()
    _check(nvrtc, err, "nvrtcVersion")
    return (int(major), int(minor))


@lru_cache(maxsize=None)
def supported_archs():
    """The sm numbers this NVRTC compiles for, e.g. (75, 80, 86, ..., 120)."""
    nvrtc = _nvrtc()
    err, archs = nvrtc.nvrtcGetSupportedArchs()
    _check(nvrtc, err, "nvrtcGetSupportedArchs")
    return tuple(int(a) for a in archs)


@lru_cache(maxsize=None)
def cuda_include_dir():
    """The folder with cuda_fp16.h / cuda_bf16.h (the nvidia-cuda-runtime wheel), or None."""
    try:
        import cuda.pathfinder as pf
        d = pf.find_nvidia_header_directory("cudart")
    except Exception:              # an old pathfinder, or no headers at all
        return None
    return str(d) if d else None


@lru_cache(maxsize=None)
def cuda_headers_version():
    """CUDART_VERSION of those headers (part of the cache key), or 'none'."""
    d = cuda_include_dir()
    if d is None:
        return "none"
    try:
        with open(f"{d}/cuda_runtime_api.h", encoding="utf-8", errors="replace") as f:
            m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", f.read())
    except OSError:
        return "unknown"
    return m.group(1) if m else "unknown"


def target_for(major, minor):
    """(kind, arch) to compile for a device of compute capability major.minor: the exact
    CUBIN when NVRTC supports it, else PTX for the newest older architecture it knows (the
    driver JIT-compiles it; this only works when the driver is at least as new as NVRTC)."""
    cc = 10 * major + minor
    archs = supported_archs()
    if cc in archs:
        return "cubin", f"sm_{cc}"
    older = [a for a in archs if a <= cc]
    if not older:
        raise RuntimeError(f"torchlite: this NVRTC {version()} cannot compile for compute "
                           f"capability {major}.{minor} (it supports sm_{min(archs)} and newer)")
    return "ptx", f"compute_{max(older)}"


def base_options(arch):
    """The options every kernel is compiled with (before a source's own)."""
    opts = [f"--gpu-architecture={arch}", "--std=c++17"]
    inc = cuda_include_dir()
    if inc:
        opts.append(f"--include-path={inc}")
    return opts


def compile_source(source, name_expressions, arch, options=()):
    """Compile a KernelSource (_kernels.load_source) for `arch` ('sm_XY' gives a CUBIN,
    'compute_XY' PTX) with the given name expressions; returns a Program.  Raises
    CompileError on any compile failure."""
    nvrtc = _nvrtc()
    all_opts = base_options(arch) + list(options)
    headers = [text.encode() for _, text in source.headers]
    names = [name.encode() for name, _ in source.headers]
    err, prog = nvrtc.nvrtcCreateProgram(source.text.encode(), source.name.encode(),
                                         len(headers), headers, names)
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            (err,) = nvrtc.nvrtcAddNameExpression(prog, expr.encode())
            _check(nvrtc, err, f"nvrtcAddNameExpression({expr})")
        opts = [o.encode() for o in all_opts]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log = _log(nvrtc, prog)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(_failure_message(source.name, name_expressions, all_opts, err, log))
        kind = "cubin" if arch.startswith("sm_") else "ptx"
        image = _image(nvrtc, prog, kind)
        lowered = {}
        for expr in name_expressions:
            err, sym = nvrtc.nvrtcGetLoweredName(prog, expr.encode())
            _check(nvrtc, err, f"nvrtcGetLoweredName({expr})")
            lowered[expr] = sym.decode() if isinstance(sym, bytes) else str(sym)
        return Program(image=image, kind=kind, arch=arch, lowered=lowered, log=log)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _image(nvrtc, prog, kind):
    if kind == "cubin":
        err, n = nvrtc.nvrtcGetCUBINSize(prog)
        _check(nvrtc, err, "nvrtcGetCUBINSize")
        buf = b" " * n
        (err,) = nvrtc.nvrtcGetCUBIN(prog, buf)
        _check(nvrtc, err, "nvrtcGetCUBIN")
        return buf                     # an ELF image: never strip trailing NULs
    err, n = nvrtc.nvrtcGetPTXSize(prog)
    _check(nvrtc, err, "nvrtcGetPTXSize")
    buf = b" " * n
    (err,) = nvrtc.nvrtcGetPTX(prog, buf)
    _check(nvrtc, err, "nvrtcGetPTX")
    return buf                         # NUL-terminated, as cuModuleLoadData wants text


def _log(nvrtc, prog):
    err, n = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or n <= 1:
        return ""
    buf = b" " * n
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0").decode(errors="replace").strip()


def _failure_message(file, name_expressions, options, err, log):
    shown = ", ".join(name_expressions[:8])
    if len(name_expressions) > 8:
        shown += f", ... ({len(name_expressions)} in all)"
    return (f"torchlite: NVRTC failed to compile CUDA kernel {file} [{shown}] "
            f"({getattr(err, 'name', err)}; options: {' '.join(options)}):\n{log}")


def _check(nvrtc, err, what):
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(err)
        text = msg.decode() if isinstance(msg, bytes) else str(msg)
        raise RuntimeError(f"torchlite: {what} failed: {text}")
