"""Anomaly detection: with it on, each node remembers where its forward op was called, and a
backward formula that produces NaN raises an error naming that op and that place."""
import traceback

_enabled = False


def is_anomaly_enabled():
    return _enabled


def current_trace():
    return "".join(traceback.format_stack()[:-3])


class set_detect_anomaly:
    """set_detect_anomaly(mode): turn anomaly detection on or off (also a context manager)."""

    def __init__(self, mode, check_nan=True):
        global _enabled
        self._prev = _enabled
        _enabled = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global _enabled
        _enabled = self._prev
        return False


class detect_anomaly(set_detect_anomaly):
    """Context manager: anomaly detection on inside the block."""

    def __init__(self, check_nan=True):
        global _enabled
        self._prev = _enabled

    def __enter__(self):
        global _enabled
        _enabled = True
        return self


def check_nan(node, grads):
    for i, g in enumerate(grads):
        if g is not None and g.is_floating_point() and bool(g.isnan().any()):
            where = f"\nThe forward call that created it:\n{node._trace}" if node._trace else ""
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output."
                               f"{where}")
