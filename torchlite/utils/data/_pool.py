"""The worker processes of one multi-process DataLoader iterator, seen from the main process.

Each worker gets an index queue (a multiprocessing.Queue: its feeder thread means sending a
task never blocks the main process) and a Unix socket pair for its results (_transport.py).
The main process waits on all result sockets and all worker sentinels at once
(multiprocessing.connection.wait), so a worker that dies is noticed at once, not after a
polling interval, and a message that is already on its way is still read first."""
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import time

from . import _transport
from ._worker import _worker_loop

# how long shutdown lets workers finish their current batch before terminating them
_SHUTDOWN_GRACE = 1.0
_JOIN_TIMEOUT = 1.0


def _exit_description(exitcode):
    if exitcode is None:
        return "closed its connection while still running"
    if exitcode < 0:
        try:
            sig = signal.Signals(-exitcode)
            return f"killed by signal {sig.name} ({signal.strsignal(sig)})"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


class WorkerPool:
    """Starts `num_workers` processes running _worker_loop; `put` sends a task, `receive`
    returns the next result, `shutdown` stops everything (idempotent, never raises)."""

    def __init__(self, ctx, num_workers, dataset_kind, dataset, auto_collation, collate_fn,
                 drop_last, base_seed, worker_init_fn):
        self.processes, self.pids, self.index_queues, self.socks = [], [], [], []
        self.stopped = []          # True once told to exit (or found dead): not waited on
        self._closed = False
        # a forked child (a worker of another loader) holds a copy of this object; it must
        # never act on it, e.g. when its garbage collector runs the copy's finalizer
        self._owner_pid = os.getpid()
        fork = ctx.get_start_method() == "fork"
        try:
            for worker_id in range(num_workers):
                parent_sock, child_sock = socket.socketpair()
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()   # never block interpreter exit on it
                # with fork the child inherits the main process's ends of every socket made
                # so far; it closes them so they belong to this process alone
                inherited = [s.fileno() for s in self.socks + [parent_sock]] if fork else []
                process = ctx.Process(
                    target=_worker_loop, daemon=True,
                    args=(dataset_kind, dataset, index_queue, child_sock, auto_collation,
                          collate_fn, drop_last, base_seed, worker_init_fn, worker_id,
                          num_workers, inherited))
                self.socks.append(parent_sock)
                self.index_queues.append(index_queue)
                self.stopped.append(False)
                try:
                    process.start()
                finally:
                    child_sock.close()
                self.processes.append(process)
                self.pids.append(process.pid)
        except BaseException:
            self.shutdown()
            raise

    @property
    def num_workers(self):
        return len(self.processes)

    def put(self, worker_id, task):
        """Queue a task for a worker (never blocks)."""
        self.index_queues[worker_id].put(task)

    def stop(self, worker_id):
        """Tell a worker to exit after its current task; it is no longer waited on."""
        if not self.stopped[worker_id]:
            self.stopped[worker_id] = True
            self.index_queues[worker_id].put(None)

    def receive(self, timeout=None, prefer=None):
        """(worker_id, message) from the first worker with a result (`prefer`'s first when
        several have one), or None after `timeout` seconds.  Raises RuntimeError when a
        worker that was not stopped has died."""
        if self._closed:
            raise RuntimeError("DataLoader: the worker processes have been shut down")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            owners = {}
            for worker_id, process in enumerate(self.processes):
                if not self.stopped[worker_id]:
                    owners[self.socks[worker_id]] = worker_id
                    owners[process.sentinel] = worker_id
            if not owners:
                raise RuntimeError("DataLoader: no worker process left to wait for")
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = multiprocessing.connection.wait(list(owners), remaining)
            if not ready:
                return None
            socks = [obj for obj in ready if isinstance(obj, socket.socket)]
            if socks:
                preferred = [s for s in socks if owners[s] == prefer]
                worker_id = owners[(preferred or socks)[0]]
                return worker_id, self._read(worker_id)
            # only sentinels: a worker ended; anything it sent first would have been ready too
            raise self._died(owners[ready[0]])

    def _read(self, worker_id):
        try:
            payload, fds = _transport.recv_raw(self.socks[worker_id])
        except (EOFError, ConnectionError) as error:
            raise self._died(worker_id) from error
        except BaseException:
            self.shutdown()          # e.g. Ctrl-C mid-message: the stream cannot be resumed
            raise
        return _transport.decode(payload, fds)

    def _died(self, worker_id):
        process = self.processes[worker_id]
        process.join(_JOIN_TIMEOUT)          # reap it and learn how it ended
        self.stopped[worker_id] = True
        error = RuntimeError(
            f"DataLoader worker (pid {self.pids[worker_id]}) exited unexpectedly "
            f"({_exit_description(process.exitcode)}). A crash in the dataset or collate code, "
            f"os._exit(), or the system running out of memory can cause this; num_workers=0 "
            f"runs the same code in the main process with a normal traceback.")
        self.shutdown()
        return error

    def shutdown(self):
        """Stop every worker: ask politely, drain their sockets while they finish (so none
        blocks on a full socket), then terminate/kill the stragglers and reap them all."""
        if self._closed or os.getpid() != self._owner_pid:
            return
        self._closed = True
        try:
            for worker_id in range(self.num_workers):
                if not self.stopped[worker_id]:
                    self.stopped[worker_id] = True
                    self.index_queues[worker_id].put(None)
            self._drain_until_exit(time.monotonic() + _SHUTDOWN_GRACE)
        finally:
            self._reap()
            for sock in self.socks:
                sock.close()
            for index_queue in self.index_queues:
                index_queue.close()

    def _drain_until_exit(self, deadline):
        open_socks = {sock: worker_id for worker_id, sock in enumerate(self.socks)}
        while time.monotonic() < deadline:
            alive = [p for p in self.processes if p.exitcode is None]
            if not alive:
                return
            waitables = list(open_socks) + [p.sentinel for p in alive]
            ready = multiprocessing.connection.wait(waitables, deadline - time.monotonic())
            for obj in ready:
                if isinstance(obj, socket.socket):
                    try:
                        _transport.close_fds(_transport.recv_raw(obj)[1])
                    except (EOFError, OSError):
                        del open_socks[obj]

    def _reap(self):
        for process in self.processes:
            if process.exitcode is None:
                process.terminate()
        for process in self.processes:
            process.join(_JOIN_TIMEOUT)
            if process.exitcode is None:
                process.kill()
                process.join()
            process.close()
