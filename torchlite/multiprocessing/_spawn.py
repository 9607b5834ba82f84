"""spawn: fn(i, *args) in nprocs processes, the ranks of one mpiexec job (see __init__)."""
from __future__ import annotations

import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"]


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int | None, error_pid: int | None) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, error_pid

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process raised: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process exited (or was killed) without a Python exception."""

    def __init__(self, msg: str, error_index: int | None, error_pid: int | None, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


class ProcessContext:
    """The running job: join() waits for it and raises what a process raised."""

    def __init__(self, proc: subprocess.Popen[bytes], workdir: str, nprocs: int) -> None:
        self.proc, self.workdir, self.nprocs = proc, workdir, nprocs
        self.pids = lambda: [proc.pid]

    def join(self, timeout: float | None = None) -> bool:
        """True when every process finished (False on timeout); raises ProcessRaisedException
        or ProcessExitedException for a process that failed."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        try:
            if rc == 0:
                return True
            for i in range(self.nprocs):
                path = os.path.join(self.workdir, f"error_{i}.txt")
                if os.path.exists(path):
                    with open(path) as f:
                        tb = f.read()
                    raise ProcessRaisedException(
                        f"\n\n-- Process {i} terminated with the following error:\n{tb}", i, None)
            name = signal.Signals(-rc).name if rc < 0 else None
            raise ProcessExitedException(
                f"process of the job exited with {'signal ' + name if name else 'exit code ' + str(rc)}",
                None, self.proc.pid, rc, name)
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)


def start_processes(fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """spawn's body (PyTorch's start_processes): start_method is accepted for PyTorch scripts;
    the processes are always fresh interpreters started by mpiexec."""
    from ..distributed.run import job_environment, mpiexec_prefix
    if not callable(fn):
        raise TypeError(f"spawn: fn must be callable, got {type(fn).__name__}")
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"spawn: nprocs must be a positive int, got {nprocs!r}")
    main_path = None
    if getattr(fn, "__module__", None) == "__main__":
        main_path = getattr(sys.modules["__main__"], "__file__", None)
        if main_path is None:
            raise ValueError("spawn: fn is defined in an interactive __main__, which the new "
                             "processes cannot import: define it in a module or a script file")
        main_path = os.path.abspath(main_path)
    workdir = tempfile.mkdtemp(prefix="torchlite-spawn-")
    try:
        with open(os.path.join(workdir, "payload.pkl"), "wb") as f:
            pickle.dump((fn, tuple(args)), f)
        if main_path is not None:
            with open(os.path.join(workdir, "main_path.txt"), "w") as f:
                f.write(main_path)
    except Exception as e:
        shutil.rmtree(workdir, ignore_errors=True)
        raise ValueError(f"spawn: fn and args must be picklable ({type(e).__name__}: {e})") from None
    cmd = mpiexec_prefix(nprocs) + [sys.executable, "-u", "-m", "torchlite.multiprocessing._child",
                                    workdir]
    proc = subprocess.Popen(cmd, env=job_environment(nprocs, announce=False))
    context = ProcessContext(proc, workdir, nprocs)
    if not join:
        return context
    try:
        while not context.join():
            pass
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        proc.wait()
        raise
    return None


def spawn(fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """Run fn(i, *args) for i in range(nprocs), each in its own process, the ranks of one MPI
    job (PyTorch's torch.multiprocessing.spawn); join=False returns a ProcessContext."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
