"""torchlite.multiprocessing: Python's multiprocessing (as torch.multiprocessing re-exports it),
and spawn(fn, args, nprocs), which runs fn(i, *args) in nprocs processes that are the ranks of
one MPI job (started with mpiexec, as torchlite.distributed.run does), so
torchlite.distributed.init_process_group() works inside fn.

fn is sent to the processes by reference (pickled): a function of an importable module, or of
the script that calls spawn (which each process then imports under the name __mp_main__, so
its `if __name__ == "__main__":` block does not run again -- keep the spawn call inside one).
An exception in a process is raised in the caller as ProcessRaisedException with that process's
traceback; a process that dies otherwise gives ProcessExitedException."""
from __future__ import annotations

from multiprocessing import (Array, Barrier, Condition, Event, Lock, Manager, Pipe, Pool,  # noqa: F401
                             Process, Queue, RLock, Semaphore, SimpleQueue, Value, cpu_count,
                             current_process, get_all_start_methods, get_context, get_start_method,
                             set_start_method)

from ._spawn import (ProcessContext, ProcessException, ProcessExitedException,  # noqa: F401
                     ProcessRaisedException, spawn, start_processes)

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException", "Process", "Queue", "SimpleQueue",
           "Pool", "Pipe", "Lock", "RLock", "Event", "Condition", "Semaphore", "Barrier", "Value",
           "Array", "Manager", "cpu_count", "current_process", "get_context", "get_start_method",
           "set_start_method", "get_all_start_methods"]


