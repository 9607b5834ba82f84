"""Grad mode: whether ops record the backward graph.  Thread-local, as in PyTorch: each
thread starts with grad enabled, and no_grad in one thread does not affect another.

Every mode is a context manager and a decorator (of functions and generator functions; the
mode holds while the generator runs, not while it is suspended)."""
from __future__ import annotations

import functools
import inspect
import sys
import threading
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class _State(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False
        self.alias_watch = None     # (tensor, saves): see elementwise_grad.rebase_inplace


_state = _State()


def is_grad_enabled() -> bool:
    """True when ops record the backward graph in this thread."""
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    """True inside inference_mode() in this thread."""
    return _state.inference


def _wrap_generator(make_mode, gen_fn):
    """A generator function that runs every step of gen_fn's generator inside a fresh mode."""
    @functools.wraps(gen_fn)
    def wrapper(*args, **kwargs):
        gen = gen_fn(*args, **kwargs)
        try:
            with make_mode():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_mode():
                        gen.close()
                    raise
                except BaseException:
                    with make_mode():
                        response = gen.throw(*sys.exc_info())
                else:
                    with make_mode():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value
    return wrapper


class _Mode:
    """Base of the grad-mode context managers.  Subclasses implement _set() (enter the mode)
    and clone() (a fresh manager with the same setting, one per decorated call)."""

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.isclass(fn):
            warnings.warn("Decorating classes is deprecated and will be disabled in future "
                          "versions. You should only decorate functions or methods.",
                          FutureWarning, stacklevel=2)
            cls = fn
            fn = functools.wraps(cls)(lambda *args, **kwargs: cls(*args, **kwargs))
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(self.clone, fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self) -> _Mode:
        return type(self)()

    def __enter__(self) -> None:
        self._prev = (_state.enabled, _state.inference)
        self._set()
        return None

    def __exit__(self, *exc) -> bool:
        _state.enabled, _state.inference = self._prev
        return False


def _bare_decorator(cls, orig_func):
    """Support @no_grad (without parentheses) as well as @no_grad()."""
    if orig_func is not None:
        return object.__new__(cls)(orig_func)
    return object.__new__(cls)


class no_grad(_Mode):
    """Context manager / decorator: ops inside do not record the graph, so their results do
    not require grad.  Use it for inference and for parameter updates."""

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        return _bare_decorator(cls, orig_func)

    def __init__(self, orig_func: Callable[..., Any] | None = None) -> None:
        pass

    def _set(self):
        _state.enabled = False


class enable_grad(_Mode):
    """Context manager / decorator: turn recording back on (inside no_grad)."""

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        return _bare_decorator(cls, orig_func)

    def __init__(self, orig_func: Callable[..., Any] | None = None) -> None:
        pass

    def _set(self):
        _state.enabled = True


class set_grad_enabled(_Mode):
    """set_grad_enabled(mode): called alone it sets the mode for this thread; as a context
    manager it restores the previous mode on exit; as a decorator it applies per call."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._prev = (_state.enabled, _state.inference)
        _state.enabled = self.mode

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        _state.enabled, _state.inference = self._prev      # decorating must not change the mode
        return super().__call__(fn)

    def clone(self) -> set_grad_enabled:
        return set_grad_enabled(self.mode)

    def __enter__(self) -> None:
        return None                 # __init__ already set the mode and recorded the old one

    def __exit__(self, *exc) -> bool:
        _state.enabled, _state.inference = self._prev
        return False


class inference_mode(_Mode):
    """inference_mode(mode=True): like no_grad for recording (torchlite has no separate
    inference tensors); inference_mode(False) changes nothing."""

    def __new__(cls, mode: bool | Callable[..., Any] = True) -> Any:
        self = object.__new__(cls)
        if isinstance(mode, bool):
            return self
        self.mode = True
        return self(mode)                           # bare @inference_mode

    def __init__(self, mode: bool | Callable[..., Any] = True) -> None:
        self.mode = mode if isinstance(mode, bool) else True

    def clone(self) -> inference_mode:
        return inference_mode(self.mode)

    def _set(self):
        if self.mode:
            _state.enabled = False
            _state.inference = True
