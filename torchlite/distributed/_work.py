"""Work: the handle an `async_op=True` collective returns, over non-blocking MPI requests."""
from __future__ import annotations

import datetime
import time
from typing import TYPE_CHECKING

from . import _backend

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from .._tensor import Tensor

__all__ = ["Work"]

# Works dropped before completion: MPI may still read or write their buffers, so those stay
# alive here until their requests complete (tested, never waited for, when new Works start).
_orphans = []


def _reap_orphans():
    if not _orphans:
        return
    MPI = _backend._mpi()
    _orphans[:] = [(reqs, keep) for reqs, keep in _orphans if not MPI.Request.Testall(reqs)]


class Work:
    """A collective in flight.  `wait()` blocks until it is done (and its results are in the
    output tensors); `is_completed()` asks without blocking.  Both drive MPI's progress.

    Behind it are MPI requests (MPI_Iallreduce and the like) and, where the tensors could not
    be handed to MPI as they are (non-contiguous, float16/bfloat16 reductions), a step that
    copies the result back when the requests complete."""

    def __init__(self, requests: Iterable[Any], on_complete: Callable[[], None] | None = None,
                 result: list[Tensor] | None = None, timeout: datetime.timedelta | None = None,
                 keep: Any = None) -> None:
        self._requests = list(requests)
        self._on_complete = on_complete
        self._result = result if result is not None else []
        self._timeout = timeout
        self._keep = keep             # the buffers MPI reads/writes must outlive the requests
        self._done = False
        self._error = None
        self._status = None
        _reap_orphans()

    def __del__(self) -> None:
        try:
            if not self._done and self._requests:
                _orphans.append((self._requests, self._keep))
        except Exception:
            pass

    def _finish(self):
        self._done = True
        self._requests = []
        self._keep = None
        if self._on_complete is not None:
            fn, self._on_complete = self._on_complete, None
            try:
                fn()
            except BaseException as err:
                self._error = err
                raise

    def is_completed(self) -> bool:
        """Whether the operation has finished (tests its MPI requests once, which also makes
        progress on them)."""
        if self._done:
            return True
        MPI = _backend._mpi()
        if self._status is not None:
            done = MPI.Request.Testall(self._requests, self._status)
        else:
            done = MPI.Request.Testall(self._requests)
        if done:
            self._finish()
        return self._done

    def wait(self, timeout: datetime.timedelta | float | None = None) -> bool:
        """Block until the operation is done and its outputs are written; returns True.

        timeout (a datetime.timedelta; the process group's timeout by default): a
        RuntimeError is raised when it passes first (the operation is then still pending, and
        the process group should be considered broken)."""
        if self._done:
            if self._error is not None:
                raise self._error
            return True
        limit = timeout if timeout is not None else self._timeout
        if isinstance(limit, datetime.timedelta):
            limit = limit.total_seconds()
        MPI = _backend._mpi()
        reqs = self._requests
        if limit is None or limit <= 0:
            MPI.Request.Waitall(reqs, self._status)
        else:
            deadline = time.monotonic() + limit
            spins = 0
            while not (MPI.Request.Testall(reqs, self._status) if self._status is not None
                       else MPI.Request.Testall(reqs)):
                spins += 1
                if spins % 64 == 0:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"torchlite.distributed: Work.wait() timed out after "
                                           f"{limit:g} s (another rank may have stopped or be in a "
                                           f"different collective)")
                    if spins > 4096:
                        time.sleep(1e-5)       # long waits: leave the core to the other ranks
        self._finish()
        return True

    def synchronize(self) -> None:
        """The same as wait() (CPU tensors have no streams)."""
        self.wait()

    def is_success(self) -> bool:
        """True once the operation completed without an error."""
        return self._done and self._error is None

    def exception(self) -> BaseException | None:
        """The error the operation ended with, or None."""
        return self._error

    def result(self) -> list[Tensor]:
        """The output tensors of the operation (wait() first)."""
        return list(self._result)

    def get_future(self) -> Any:
        """A torchlite.futures.Future of the operation's output tensors (a list, as PyTorch's):
        waiting on it waits for the operation, which is how it makes progress."""
        from ..futures import Future

        def drive(fut):
            self.wait()
            fut.set_result(self.result())
        if self._done and self._error is None:
            fut = Future()
            fut.set_result(self.result())
            return fut
        return Future(_drive=drive)

    def __repr__(self) -> str:
        return f"Work(completed={self._done})"


class _DoneWork(Work):
    """The Work of an operation that had nothing left to do when it was issued."""

    def __init__(self, result: list[Tensor] | None = None) -> None:
        super().__init__([], None, result)
        self._done = True
