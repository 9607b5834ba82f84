"""Anomaly detection: with it on, each node remembers where its forward op was called, and a
backward formula that produces NaN raises an error naming that op and that place (an error
raised inside a backward formula gets the same note).  Global, as in PyTorch."""
from __future__ import annotations

import functools
import os
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

_enabled = False
_check_nan = True
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on."""
    return _enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """torch.set_anomaly_enabled: switch anomaly detection on or off for the process (the
    function form of set_detect_anomaly)."""
    _set(enabled, check_nan)


def current_trace() -> str:
    """The user's stack at the op being recorded (torchlite's own frames left out)."""
    frames = [f for f in traceback.extract_stack()[:-1]
              if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR + os.sep)]
    return "".join(traceback.format_list(frames))


def _set(mode, check_nan):
    global _enabled, _check_nan
    _enabled, _check_nan = bool(mode), bool(check_nan)


class set_detect_anomaly:
    """set_detect_anomaly(mode, check_nan=True): turn anomaly detection on or off; as a context
    manager the previous setting comes back on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = (_enabled, _check_nan)
        _set(mode, check_nan)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        _set(*self._prev)
        return False


class detect_anomaly:
    """Context manager / decorator: anomaly detection on inside the block."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        self._prev = (_enabled, _check_nan)
        _set(True, self.check_nan)
        return None

    def __exit__(self, *exc) -> bool:
        _set(*self._prev)
        return False

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


def _where(node):
    if not node._trace:
        return ""
    return f"\nThe forward call that created it (the traceback of {node.name()}'s forward op):\n{node._trace}"


def check_nan(node: Any, grads: Sequence[Any]) -> None:
    """Raise if a backward formula returned NaN, naming the node and its forward call."""
    if not _check_nan:
        return
    for i, g in enumerate(grads):
        if g is not None and g.is_floating_point() and bool(g.isnan().any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output."
                               + _where(node))


def annotate(node: Any, err: BaseException) -> None:
    """Add the forward call of the node whose backward raised `err` to its message."""
    where = _where(node)
    if where:
        err.add_note(f"Error detected in {node.name()}." + where)
