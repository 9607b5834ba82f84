"""Build torchlite's CPU array layer: every torchlite/_core/*.pyx becomes one extension.

Flags by compiler (chosen in build_ext, when the compiler is known):
  gcc/clang on Linux   -O3 -fopenmp                (auditwheel vendors libgomp)
  Apple clang          -Xpreprocessor -fopenmp -lomp, from TORCHLITE_OPENMP_PREFIX (libomp)
  MSVC                 /O2 /openmp                  (delvewheel vendors vcomp140.dll)
Nothing distributed uses -march=native: SIMD kernels are compiled once per ISA level
(see torchlite/_core/kernels/isa.h) and picked at import.  TORCHLITE_NATIVE=1 builds a
copy tuned for this CPU only.  TORCHLITE_OPENMP=0 builds without OpenMP (serial kernels).
"""
import glob
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
CORE = os.path.join("torchlite", "_core")
CUDA_KERNELS = "cuda_kernels"


def _env_flag(name, default):
    return os.environ.get(name, default).strip().lower() not in ("0", "false", "no", "off", "")


class BuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:  # compile the extensions side by side
            self.parallel = os.cpu_count() or 1

    def build_extension(self, ext):
        # one line per extension as it finishes (pip shows them with -v): the build takes a
        # minute or more, and a silent minute looks like a hang
        import shutil
        import time
        t0 = time.perf_counter()
        target = self.get_ext_fullpath(ext.name)
        kept = self._kept_build(ext)
        if kept is not None and os.path.exists(kept):
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            shutil.copyfile(kept, target)
            how = "unchanged, taken from build/ext-cache"
        else:
            if kept is not None:
                # compile for real: setuptools' own check looks only at file times, and would
                # keep an old binary (built with other flags) under this new name
                self.force = True
            super().build_extension(ext)
            how = f"compiled in {time.perf_counter() - t0:.1f} s"
            if kept is not None:
                try:
                    os.makedirs(os.path.dirname(kept), exist_ok=True)
                    shutil.copyfile(target, kept + ".tmp")
                    os.replace(kept + ".tmp", kept)
                except OSError:
                    pass            # an unwritable cache only costs the next build its time
        with self._progress_lock:
            self._done += 1
            print(f"torchlite build: [{self._done}/{len(self.extensions)}] {ext.name} {how} "
                  f"({time.perf_counter() - self._t0:.0f} s so far, "
                  f"{self.parallel or 1} at a time)", flush=True)

    def _kept_build(self, ext):
        """Where a build of `ext` from exactly these inputs is kept: pip builds an editable
        install in a fresh temporary folder each time, so without this every
        `pip install -e .` compiled everything again (a minute).  The name is the hash of all
        that goes into the binary: the generated C, every kernel header, the flags, the
        compiler and the Python it is for.  None where the source tree is not writable."""
        import hashlib
        import sysconfig
        h = hashlib.sha256()
        for path in list(ext.sources) + sorted(ext.depends):
            try:
                with open(path, "rb") as f:
                    h.update(path.encode() + b"\0" + f.read())
            except OSError:
                return None
        h.update(repr((ext.extra_compile_args, ext.extra_link_args, ext.include_dirs,
                       self._compiler_version, sys.version, sysconfig.get_config_var("EXT_SUFFIX"),
                       getattr(self.compiler, "compiler_so", None))).encode())
        folder = os.path.join(HERE, "build", "ext-cache")
        if not os.access(HERE, os.W_OK):
            return None
        suffix = os.path.splitext(self.get_ext_filename(ext.name))[1]
        return os.path.join(folder, f"{ext.name}-{h.hexdigest()[:24]}{suffix}")

    def build_extensions(self):
        import threading
        import time
        self._progress_lock, self._done, self._t0 = threading.Lock(), 0, time.perf_counter()
        ctype = self.compiler.compiler_type
        use_omp = _env_flag("TORCHLITE_OPENMP", "1")
        cflags, ldflags = [], []
        if ctype == "msvc":
            cflags += ["/O2", "/fp:precise"]
            if use_omp:
                cflags.append("/openmp")
        else:
            cflags += ["-O3", "-g0", "-fno-math-errno", "-fno-trapping-math",
                       "-Wno-unused-function", "-Wno-unreachable-code"]
            if _env_flag("TORCHLITE_NATIVE", "0"):
                cflags.append("-march=native")
            if sys.platform == "darwin":
                prefix = os.environ.get("TORCHLITE_OPENMP_PREFIX")
                if use_omp and prefix:
                    cflags += ["-Xpreprocessor", "-fopenmp", f"-I{prefix}/include"]
                    ldflags += [f"-L{prefix}/lib", "-lomp", f"-Wl,-rpath,{prefix}/lib"]
                elif use_omp:
                    print("torchlite: no TORCHLITE_OPENMP_PREFIX on macOS, building without OpenMP")
            else:
                if use_omp:
                    cflags.append("-fopenmp")
                    ldflags.append("-fopenmp")
                if sys.platform.startswith("linux"):
                    ldflags.append("-Wl,--strip-all")
        # the biggest generated C first (elementwise.c takes half the build): the long poles
        # start at once and the small modules fill the other cores around them
        self.extensions.sort(key=lambda e: -sum(os.path.getsize(s) for s in e.sources
                                                if os.path.exists(s)))
        for ext in self.extensions:
            std = []
            if ext.language == "c++":      # modules that include cuda_kernels/ headers
                # no a*b+c contracted into one rounding: the loops' vector body and their
                # scalar ends then round alike, so results do not depend on where a
                # parallel chunk starts (MSVC's /fp:precise does not contract)
                std = ["/std:c++17"] if ctype == "msvc" else ["-std=c++17", "-ffp-contract=off"]
            ext.extra_compile_args = cflags + std + ext.extra_compile_args
            ext.extra_link_args = ldflags + ext.extra_link_args
        self._compiler_version = self._version_of_compiler(ctype)
        super().build_extensions()
        self._write_build_info(ctype, cflags, ldflags, use_omp)

    def _version_of_compiler(self, ctype):
        import subprocess
        cc = getattr(self.compiler, "compiler_so", None) or [ctype]
        try:
            return subprocess.run([cc[0], "--version"], capture_output=True, text=True,
                                  timeout=30).stdout.splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            return ctype

    def _write_build_info(self, ctype, cflags, ldflags, use_omp):
        """Record how the kernels were compiled, for torchlite.show_config()."""
        import platform
        info = dict(compiler=self._compiler_version, cflags=" ".join(cflags), ldflags=" ".join(ldflags),
                    openmp=use_omp, machine=platform.machine())
        d = os.path.join(self.build_lib, "torchlite")     # beside the built package
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "_build_info.py"), "w") as f:
            f.write('"""Written by setup.py at build time."""\n')
            f.write(f"BUILD = {info!r}\n")

    def run(self):
        super().run()
        # setuptools builds in build/lib and then copies the extensions into the source tree
        # for in-place and editable builds: the build record goes with them
        if self.inplace or getattr(self, "editable_mode", False):
            import shutil
            shutil.copyfile(os.path.join(self.build_lib, "torchlite", "_build_info.py"),
                            os.path.join(HERE, "torchlite", "_build_info.py"))


def extensions():
    from Cython.Build import cythonize

    exts = []
    headers = sorted(glob.glob(os.path.join(CORE, "kernels", "*.h")))
    # the CUDA kernels' headers, for the C++ modules that share their math (optim.pyx
    # compiles cuda_kernels/tl_optim.cuh as plain C++)
    cuda_headers = sorted(glob.glob(os.path.join(CUDA_KERNELS, "*.cuh")))
    # the ones the C modules include too: the Philox math (random.pyx), the complex math (the
    # elementwise loops, eig) and the integer/floor-division math of both devices
    shared = [os.path.join(CUDA_KERNELS, h) for h in ("tl_random_math.cuh", "tl_complex.cuh",
                                                       "tl_scalar_math.cuh")]
    for pyx in sorted(glob.glob(os.path.join(CORE, "*.pyx"))):
        name = pyx[:-4].replace(os.sep, ".")
        with open(pyx) as f:
            cpp = f.readline().strip() == "# distutils: language = c++"
        # every kernel header is a dependency, so editing one rebuilds the extensions
        exts.append(Extension(name, [pyx], include_dirs=[CORE, os.path.join(CORE, "kernels"),
                                                          CUDA_KERNELS],
                              depends=headers + (cuda_headers if cpp else shared)))
    if not exts:
        raise SystemExit("torchlite: no torchlite/_core/*.pyx to build (is MANIFEST.in missing them?)")
    return cythonize(
        exts,
        nthreads=os.cpu_count() or 1,
        compiler_directives=dict(language_level=3, boundscheck=False, wraparound=False,
                                 cdivision=True, initializedcheck=False, embedsignature=True),
    )


class BuildPy(build_py):
    """Ship the CUDA C sources (cuda_kernels/ at the top of the checkout) inside the package
    as torchlite/cuda_kernels/, where torchlite.cuda compiles them from with NVRTC."""

    def run(self):
        super().run()
        dst = os.path.join(self.build_lib, "torchlite", "cuda_kernels")
        self.mkpath(dst)
        for f in sorted(glob.glob(os.path.join(HERE, "cuda_kernels", "*"))):
            if f.endswith((".cu", ".cuh")):
                self.copy_file(f, os.path.join(dst, os.path.basename(f)))


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt, "build_py": BuildPy})
