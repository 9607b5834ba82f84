"""The compiled-kernel cache: in memory for the process, on disk across processes.

Key: sha256 over the source and every cuda_kernels header it includes, the name
expressions, the options (with the machine-specific include path replaced by the version
of the headers it points to), the target architecture and the NVRTC version, so editing a
header, changing an option or upgrading NVRTC compiles afresh.

Disk: one file per key in cache_dir() ($TORCHLITE_KERNEL_CACHE, default
~/.cache/torchlite/kernels): a magic line, the sha256 of the payload, then the payload
(a JSON header with the lowered names, then the image).  Writes go to a temporary file in
the same folder, are fsynced and renamed over the final name (os.replace is atomic), so
a reader sees a whole file or none and two processes compiling at once both succeed.
A file whose checksum does not match (truncated, corrupted) is ignored and rewritten.
"""
import hashlib
import json
import os
import struct
import tempfile
import threading

from . import _nvrtc

FORMAT = 1
MAGIC = b"TLKCACHE%d\n" % FORMAT


def cache_dir():
    """Where compiled kernels are kept: $TORCHLITE_KERNEL_CACHE or ~/.cache/torchlite/kernels."""
    env = os.environ.get("TORCHLITE_KERNEL_CACHE")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    return os.path.join(os.path.expanduser("~"), ".cache", "torchlite", "kernels")


def cache_key(source, name_expressions, options, arch, nvrtc_version, headers_version):
    """The hex key of a compile.  `options` are the full option list; an --include-path
    option counts by the CUDA headers' version, not by where they are installed."""
    portable = [o for o in options if not o.startswith(("--include-path=", "-I"))]
    doc = {
        "format": FORMAT,
        "source": source.name,
        "digest": source.digest(),
        "names": list(name_expressions),
        "options": portable,
        "arch": arch,
        "nvrtc": list(nvrtc_version),
        "cuda_headers": headers_version,
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


# ---- file format ------------------------------------------------------------------------------
def encode(program):
    meta = json.dumps({"kind": program.kind, "arch": program.arch, "lowered": program.lowered,
                       "log": program.log}).encode()
    payload = struct.pack("<I", len(meta)) + meta + program.image
    return MAGIC + hashlib.sha256(payload).digest() + payload


def decode(data):
    """The Program in a cache file's bytes, or None when they are not a whole, intact file."""
    head = len(MAGIC) + 32
    if len(data) < head + 4 or not data.startswith(MAGIC):
        return None
    digest, payload = data[len(MAGIC):head], data[head:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    (n,) = struct.unpack_from("<I", payload, 0)
    try:
        meta = json.loads(payload[4:4 + n])
    except ValueError:
        return None
    return _nvrtc.Program(image=payload[4 + n:], kind=meta["kind"], arch=meta["arch"],
                          lowered=meta["lowered"], log=meta.get("log", ""))


def write_atomic(path, data):
    """Write `data` to `path` so that readers see the old file or the whole new one."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(folder)


def _fsync_dir(folder):
    """Make the rename durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class KernelCache:
    """Compiled programs by key: memory first, then the disk folder, then NVRTC."""

    def __init__(self, directory=None, compile_fn=None, versions=None):
        """directory: the cache folder (cache_dir() when None); compile_fn(source, names,
        arch, options) -> Program and versions() -> (nvrtc version, CUDA headers version)
        default to NVRTC's (tests substitute them)."""
        self._dir = directory
        self._compile = compile_fn or _nvrtc.compile_source
        self._versions = versions or (lambda: (_nvrtc.version(), _nvrtc.cuda_headers_version()))
        self._memory = {}
        self._lock = threading.Lock()
        self._key_locks = {}
        self.stats = {"memory_hits": 0, "disk_hits": 0, "compiles": 0, "corrupt": 0}

    @property
    def directory(self):
        return self._dir or cache_dir()

    def path(self, key):
        return os.path.join(self.directory, key + ".tlk")

    def get(self, source, name_expressions, arch, options=()):
        """The Program of `source` compiled for `arch` with these name expressions and extra
        options (after _nvrtc.base_options)."""
        name_expressions = tuple(name_expressions)
        full = _nvrtc.base_options(arch) + list(options)
        key = cache_key(source, name_expressions, full, arch, *self._versions())
        prog = self._memory.get(key)
        if prog is not None:
            self.stats["memory_hits"] += 1
            return prog
        with self._lock_for(key):          # one compile per key per process
            prog = self._memory.get(key)
            if prog is None:
                prog = self._load(key)
                if prog is None:
                    prog = self._compile(source, name_expressions, arch, tuple(options))
                    self.stats["compiles"] += 1
                    self._store(key, prog)
                else:
                    self.stats["disk_hits"] += 1
                self._memory[key] = prog
        return prog

    def _lock_for(self, key):
        with self._lock:
            return self._key_locks.setdefault(key, threading.Lock())

    def _load(self, key):
        try:
            with open(self.path(key), "rb") as f:
                data = f.read()
        except OSError:
            return None
        prog = decode(data)
        if prog is None:
            self.stats["corrupt"] += 1       # rewritten by the compile that follows
        return prog

    def _store(self, key, prog):
        try:
            write_atomic(self.path(key), encode(prog))
        except OSError:
            pass      # a read-only or full disk costs a recompile next time, nothing more

    def clear_memory(self):
        self._memory.clear()


# ---- the process-wide cache -------------------------------------------------------------------
_default = None
_default_lock = threading.Lock()


def default_cache():
    """The KernelCache the backend uses (folder: cache_dir() at first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = KernelCache()
        return _default


def program(source_name, name_expressions, arch):
    """cuda_kernels/<source_name> compiled for `arch` with these name expressions (a tuple),
    with the source's own options (_kernels.SOURCE_OPTIONS): from memory after the first
    call, else from disk, else NVRTC."""
    key = (source_name, tuple(name_expressions), arch)
    prog = _programs.get(key)
    if prog is None:
        from . import _kernels
        src = _kernels.load_source(source_name)
        prog = default_cache().get(src, key[1], arch, _kernels.SOURCE_OPTIONS.get(source_name, ()))
        _programs[key] = prog
    return prog


_programs = {}


def program_from_text(name, text, name_expressions, arch, options=()):
    """Generated CUDA C `text` (its quoted includes from cuda_kernels/, e.g. "tl_common.cuh")
    compiled for `arch` with these name expressions: through the same cache as the files of
    cuda_kernels/, keyed by the text (and the headers it includes)."""
    key = ("text", hashlib.sha256(text.encode()).hexdigest(), tuple(name_expressions), arch,
           tuple(options))
    prog = _programs.get(key)
    if prog is None:
        from . import _kernels
        src = _kernels.source_from_text(name, text)
        prog = default_cache().get(src, key[2], arch, options)
        _programs[key] = prog
    return prog
