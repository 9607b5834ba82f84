"""torchlite.version (PyTorch's torch.version): __version__; cuda, the CUDA (NVRTC) version the
GPU kernels compile with here -- torchlite compiles them at run time, so this is the loaded
NVRTC's "major.minor", or None without one; git_version, the commit of a source checkout (or
"unknown" for an installed wheel); debug (False) and hip (None) as scripts print them."""
from __future__ import annotations

import os

__version__ = "0.1.0"
debug = False
hip = None

__all__ = ["__version__", "cuda", "git_version", "debug", "hip"]  # noqa: F822 (lazy, below)


def _cuda():
    try:
        from .cuda import _status
        nvrtc = _status().get("nvrtc")
    except Exception:                    # no cuda-python, no libnvrtc: a CPU-only install
        return None
    return None if not nvrtc else f"{nvrtc[0]}.{nvrtc[1]}"


def _git_version():
    """The HEAD commit of the checkout this package sits in, read from .git (no subprocess)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    git = os.path.join(root, ".git")
    try:
        with open(os.path.join(git, "HEAD")) as f:
            head = f.read().strip()
        if head.startswith("ref: "):
            ref = head[5:]
            path = os.path.join(git, ref)
            if os.path.exists(path):
                with open(path) as f:
                    return f.read().strip()
            with open(os.path.join(git, "packed-refs")) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 2 and parts[1] == ref:
                        return parts[0]
            return "unknown"
        return head
    except OSError:
        return "unknown"


def __getattr__(name):
    # computed on first use: `import torchlite` loads this module and must not probe CUDA
    if name == "cuda":
        value = _cuda()
    elif name == "git_version":
        value = _git_version()
    else:
        raise AttributeError(f"module 'torchlite.version' has no attribute '{name}'")
    globals()[name] = value
    return value
