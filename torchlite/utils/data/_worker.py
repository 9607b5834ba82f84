"""What runs inside a DataLoader worker process (torch.utils.data._utils.worker), plus the
small records that travel between the worker and the main process.

A worker: ignores Ctrl-C (the main process shuts it down), limits torchlite to one thread
(an OpenMP pool inherited through fork() would hang, and workers should not compete for
cores), seeds Python's `random`, torchlite and NumPy from `base_seed + worker_id`, runs
`worker_init_fn`, then answers tasks `(idx, indices)` from its index queue with messages on
its socket (see _transport.py) until it receives None or the main process is gone."""
import multiprocessing
import os
import pickle
import queue
import random
import signal
import sys
import traceback
from dataclasses import dataclass

from ... import _config
from ..._ops.random import manual_seed
from . import _transport
from ._fetch import _DatasetKind

__all__ = ["WorkerInfo", "get_worker_info"]

# how often an idle worker checks that the main process is still alive (seconds)
_PARENT_CHECK_INTERVAL = 1.0

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """Information about the DataLoader worker process this code runs in.

    id: this worker's number (0 .. num_workers - 1); num_workers: how many there are;
    seed: the seed this worker gave torchlite and `random` (base_seed + id);
    dataset: this process's copy of the dataset."""
    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


def get_worker_info():
    """The `WorkerInfo` of the current DataLoader worker process, or None in the main
    process.  Use it in a dataset's `__iter__` or in `worker_init_fn` to split work."""
    return _worker_info


class _KeyErrorMessage(str):
    """A str whose repr is itself: KeyError shows repr(arg), which would print a traceback
    message as one escaped line."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, as its type and formatted traceback, re-raised in
    the main process by `reraise()` as "Caught <Type> in DataLoader worker process N.
    Original Traceback ...": the same type when it can be built from one message, else
    RuntimeError."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_type_name = exc_info[0].__name__
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def __reduce__(self):
        # a class that cannot be pickled by reference (defined in a function, say) becomes
        # RuntimeError on the other side; the message still names it
        exc_type = self.exc_type
        try:
            pickle.dumps(exc_type)
        except Exception:
            exc_type = RuntimeError
        return (_rebuild_wrapper, (exc_type, self.exc_type_name, self.exc_msg, self.where))

    def reraise(self):
        """Raise the wrapped exception in the current process."""
        msg = f"Caught {self.exc_type_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


def _rebuild_wrapper(exc_type, exc_type_name, exc_msg, where):
    wrapper = ExceptionWrapper.__new__(ExceptionWrapper)
    wrapper.exc_type, wrapper.exc_type_name = exc_type, exc_type_name
    wrapper.exc_msg, wrapper.where = exc_msg, where
    return wrapper


# message tags (worker -> main process): ("data", idx, batch), ("error", idx, ExceptionWrapper),
# ("stop", idx, worker_id) when an iterable dataset is exhausted, ("resumed", None, None)
# answering _RESUME; task markers (main -> worker): (idx, indices), _RESUME, None (exit)
DATA, ERROR, STOP, RESUMED = "data", "error", "stop", "resumed"
_RESUME = "resume"


def _seed_everything(base_seed, worker_id):
    """Seed `random`, torchlite's default generator and NumPy's global state for this
    worker, as PyTorch does: base_seed + worker_id, and for NumPy the 4-word state that
    SeedSequence([worker_id, base_seed]) generates (PyTorch's _generate_state)."""
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    try:
        import numpy as np
    except ImportError:
        return seed
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def _parent_alive_check():
    """A function telling whether the process that started this worker is still alive."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        return parent.is_alive
    ppid = os.getppid()
    return lambda: os.getppid() == ppid


def _send_result(sock, worker_id, tag, idx, payload):
    """Send one message; a result that cannot be pickled is replaced by the error."""
    try:
        _transport.send_message(sock, (tag, idx, payload))
    except (BrokenPipeError, ConnectionError):
        raise
    except Exception:
        wrapper = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        _transport.send_message(sock, (ERROR, idx, wrapper))


def _worker_loop(dataset_kind, dataset, index_queue, sock, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers, inherited_fds):
    """The body of a worker process."""
    global _worker_info
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for fd in inherited_fds:         # the main process's ends of the sockets (fork only)
        try:
            os.close(fd)
        except OSError:
            pass
    _config.set_num_threads(1)
    seed = _seed_everything(base_seed, worker_id)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                              collate_fn, drop_last)
    except Exception:
        init_error = ExceptionWrapper(where=where)
    iteration_end = False
    parent_alive = _parent_alive_check()
    try:
        while parent_alive():
            try:
                task = index_queue.get(timeout=_PARENT_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if task is None:
                break
            if isinstance(task, str):         # _RESUME: a new epoch (persistent workers)
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                      collate_fn, drop_last)
                _send_result(sock, worker_id, RESUMED, None, None)
                continue
            if iteration_end:
                continue      # tasks sent before the main process learnt the stream ended
            idx, index = task
            if init_error is not None:
                tag, payload, init_error = ERROR, init_error, None
            else:
                try:
                    tag, payload = DATA, fetcher.fetch(index)
                except StopIteration:
                    if dataset_kind != _DatasetKind.Iterable:
                        tag, payload = ERROR, ExceptionWrapper(where=where)
                    else:
                        tag, payload, iteration_end = STOP, worker_id, True
                except Exception:
                    tag, payload = ERROR, ExceptionWrapper(where=where)
            _send_result(sock, worker_id, tag, idx, payload)
            del payload, index, task          # free the batch's memory before waiting
    except (BrokenPipeError, ConnectionError):
        pass                                  # the main process went away
    finally:
        sock.close()
