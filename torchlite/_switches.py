"""Process-wide switches of PyTorch's API: matmul precision and deterministic algorithms.
torchlite computes float32 products in float32 whatever the precision asked for; its kernels
are deterministic except the CUDA atomics of scatter_add/index_add, which the deterministic
mode sends to a deterministic path."""

_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"
_deterministic = False
_deterministic_warn_only = False


def set_float32_matmul_precision(precision):
    """Record the float32 matmul precision ('highest', 'high' or 'medium').  torchlite always
    computes in full float32 (PyTorch's 'highest'); the setting is kept for reading back."""
    global _matmul_precision
    if precision not in _PRECISIONS:
        raise RuntimeError(f"Invalid precision: {precision!r}; expected one of {', '.join(_PRECISIONS)}")
    _matmul_precision = precision


def get_float32_matmul_precision():
    return _matmul_precision


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for deterministic kernels everywhere.  torchlite's CPU kernels always are; on CUDA
    the float scatter_add/index_add (atomic additions, whose order varies) then run on a
    deterministic path instead."""
    global _deterministic, _deterministic_warn_only
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    _deterministic, _deterministic_warn_only = mode, bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic_warn_only


def set_deterministic_debug_mode(debug_mode):
    """0 / "default": off; 1 / "warn": warn on nondeterministic ops; 2 / "error": refuse them
    (use_deterministic_algorithms in PyTorch's other spelling)."""
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """0, 1 or 2 as set_deterministic_debug_mode takes them."""
    if not _deterministic:
        return 0
    return 1 if _deterministic_warn_only else 2
