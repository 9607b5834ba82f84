"""Grad mode: whether ops record the backward graph.  Thread-local, as in PyTorch: each
thread starts with grad enabled, and no_grad in one thread does not affect another."""
import functools
import threading


class _State(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False


_state = _State()


def is_grad_enabled():
    """True when ops record the backward graph in this thread."""
    return _state.enabled


def is_inference_mode_enabled():
    return _state.inference


class _Mode:
    """Base for the grad-mode context managers, usable as decorators too."""

    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._clone():
                return fn(*args, **kwargs)
        return wrapper

    def _clone(self):
        return type(self)()

    def __enter__(self):
        self._prev = (_state.enabled, _state.inference)
        self._set()
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self._prev
        return False


class no_grad(_Mode):
    """Context manager / decorator (with or without parentheses): ops inside do not record
    the graph, so their results do not require grad.  Use it for inference and updates."""

    def __new__(cls, orig_func=None):
        if orig_func is not None:                   # bare @no_grad
            return super().__new__(cls).__call__(orig_func)
        return super().__new__(cls)

    def _set(self):
        _state.enabled = False


class enable_grad(_Mode):
    """Context manager / decorator: turn recording back on inside no_grad."""

    def __new__(cls, orig_func=None):
        if orig_func is not None:
            return super().__new__(cls).__call__(orig_func)
        return super().__new__(cls)

    def _set(self):
        _state.enabled = True


class set_grad_enabled(_Mode):
    """set_grad_enabled(mode): called alone it sets the mode for this thread; as a context
    manager it restores the previous mode on exit; as a decorator it applies per call."""

    def __init__(self, mode):
        self._mode = bool(mode)
        self._prev = (_state.enabled, _state.inference)
        _state.enabled = self._mode

    def __call__(self, fn):
        _state.enabled, _state.inference = self._prev      # decorating must not change the mode
        return super().__call__(fn)

    def _clone(self):
        return set_grad_enabled(self._mode)

    def _set(self):
        _state.enabled = self._mode

    def __enter__(self):
        return self                 # the mode was set by __init__, which recorded the old one


class inference_mode(_Mode):
    """Like no_grad (torchlite has no separate inference tensors): ops do not record."""

    def __init__(self, mode=True):
        self._mode = bool(mode)

    def _clone(self):
        return inference_mode(self._mode)

    def _set(self):
        if self._mode:
            _state.enabled = False
            _state.inference = True
