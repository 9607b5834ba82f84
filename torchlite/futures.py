"""torchlite.futures: PyTorch's Future, the result of an asynchronous operation that is not
there yet (a collective's Work.get_future(), a DDP communication hook's return value).

A Future completes when set_result/set_exception is called on it, or, for one made from a
pending operation, when something waits on it: wait() drives the operation to the end (MPI
makes progress only inside its calls, so nothing completes behind the caller's back).
then(callback) chains a Future that completes with callback(this future) once this one has."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """A value that will be there: done(), wait() (the value, or the error raised), value(),
    then(callback), add_done_callback(callback), set_result(value), set_exception(error)."""

    def __init__(self, *, devices: Any = None, _drive: Callable[[Future], Any] | None = None) -> None:
        self._lock = threading.Condition()
        self._done = False
        self._value = None
        self._error = None
        self._drive = _drive          # completes the future when called (a pending operation)
        self._callbacks = []

    def done(self) -> bool:
        """Whether the value (or an error) is set."""
        return self._done

    def _run_drive(self) -> None:
        drive, self._drive = self._drive, None
        if drive is not None:
            try:
                drive(self)
            except BaseException as e:        # the operation failed: so does the future
                if not self._done:
                    self.set_exception(e)

    def wait(self) -> Any:
        """Block until done; the value, or the error the future was completed with, raised."""
        self._run_drive()
        with self._lock:
            while not self._done:
                self._lock.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self) -> Any:
        """The value of a done future (its error raised); a pending one raises RuntimeError."""
        if not self._done:
            raise RuntimeError("Future.value(): the future is not completed yet (call wait())")
        if self._error is not None:
            raise self._error
        return self._value

    def _complete(self, value: Any, error: BaseException | None) -> None:
        with self._lock:
            if self._done:
                raise RuntimeError("Future can only be marked completed once")
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._lock.notify_all()
        for cb in callbacks:
            cb(self)

    def set_result(self, result: Any) -> None:
        """Complete the future with `result`; its callbacks run now."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the future with an error, which wait()/value() raise."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    def add_done_callback(self, callback: Callable[[Future], Any]) -> None:
        """callback(future) once done (at once if it is); its return value is ignored."""
        with self._lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[[Future], Any]) -> Future:
        """A new Future completed with callback(self) once this one is done (with the error
        when the callback raises); waiting on it waits on this one first."""
        child = Future(_drive=lambda _: self.wait())

        def run(parent):
            try:
                result = callback(parent)
            except BaseException as e:
                child.set_exception(e)
            else:
                child.set_result(result)
        self.add_done_callback(run)
        return child

    def __repr__(self) -> str:
        state = "done" if self._done else "pending"
        return f"Future({state})"


def collect_all(futures: Iterable[Future]) -> Future:
    """A Future completed with the list of `futures` once every one of them is done."""
    futures = list(futures)

    def drive(out):
        for f in futures:
            try:
                f.wait()
            except BaseException:
                pass                # each future keeps its own error; the list is the result
        out.set_result(futures)
    return Future(_drive=drive)


def wait_all(futures: Iterable[Future]) -> list[Any]:
    """Wait for every future and return their values (the first error raised)."""
    return [f.wait() for f in futures]
