"""DataLoader (torch.utils.data.dataloader): batches from a dataset, in the main process or
in worker processes, with PyTorch's arguments, defaults, validation and semantics.

Iterating a DataLoader makes an iterator: `_SingleProcessDataLoaderIter` (num_workers=0)
fetches and collates in the calling process; `_MultiProcessingDataLoaderIter` hands tasks
(idx, indices) to workers round robin, keeps at most prefetch_factor * num_workers of them
outstanding, and returns results in task order (a reorder buffer by idx) unless
in_order=False.  Worker processes, messages and shared memory: _pool.py, _worker.py,
_transport.py."""
from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import sys
import warnings
import weakref
from typing import TYPE_CHECKING, Generic, TypeVar

from ..._dtype import int64
from ..._ops.creation import empty
from ._collate import default_collate, default_convert
from ._fetch import _DatasetKind
from ._pool import WorkerPool
from ._worker import DATA, ERROR, RESUMED, STOP, _RESUME, get_worker_info
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from ..._ops.random import Generator
    from .dataset import Dataset

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

_T_co = TypeVar("_T_co", covariant=True)


class _InfiniteConstantSampler(Sampler):
    """None forever: the 'indices' of an iterable dataset, one per sample requested."""

    def __iter__(self):
        while True:
            yield None


def _default_context():
    """The start method chosen with multiprocessing.set_start_method, else fork on Linux
    (fast, and the dataset need not be picklable) and spawn elsewhere."""
    if multiprocessing.get_start_method(allow_none=True) is not None:
        return multiprocessing.get_context()
    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")


def _cpu_count():
    if hasattr(os, "sched_getaffinity"):
        try:
            return len(os.sched_getaffinity(0))
        except OSError:
            pass
    return os.cpu_count()


def _cuda_available():
    """Whether a CUDA backend is loaded and usable (pinning memory only helps there)."""
    from ... import cuda
    return bool(cuda.is_available())


def _pin_memory(data):
    """Copy the tensors in `data` into page-locked memory (only meaningful with CUDA)."""
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, dict):
        return type(data)({k: _pin_memory(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin_memory(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_pin_memory(v) for v in data)
    return data


class DataLoader(Generic[_T_co]):
    """Combines a dataset and a sampler and iterates over batches of the dataset.

    Arguments, defaults and errors are PyTorch's: batch_size=1, shuffle (RandomSampler with
    `generator`), sampler / batch_sampler (mutually exclusive with the batching arguments),
    num_workers (0: load in the main process), collate_fn (default_collate when batching,
    default_convert when batch_size=None), pin_memory (accepted; a no-op without CUDA),
    drop_last, timeout (seconds to wait for a worker's batch; 0: forever), worker_init_fn
    (called with the worker id in each worker, after seeding), multiprocessing_context (a
    start method name or context; default fork on Linux, spawn elsewhere), generator (draws
    the shuffling order and the workers' base_seed), prefetch_factor (tasks in flight per
    worker; 2 by default with workers), persistent_workers (keep workers across epochs) and
    in_order (False: yield batches as workers finish them)."""

    __initialized = False

    def __init__(self, dataset: Dataset[_T_co], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable[Any] | None = None,
                 batch_sampler: Sampler[list[Any]] | Iterable[list[Any]] | None = None,
                 num_workers: int = 0, collate_fn: Callable[[list[Any]], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: str | multiprocessing.context.BaseContext | None = None,
                 generator: Generator | None = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    # -- configuration -------------------------------------------------------------------------
    @property
    def multiprocessing_context(self) -> multiprocessing.context.BaseContext | None:
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(
            self, multiprocessing_context: str | multiprocessing.context.BaseContext | None) -> None:
        if multiprocessing_context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(multiprocessing_context, str):
                valid = multiprocessing.get_all_start_methods()
                if multiprocessing_context not in valid:
                    raise ValueError("multiprocessing_context option should specify a valid start "
                                     f"method in {valid!r}, but got "
                                     f"multiprocessing_context={multiprocessing_context!r}")
                multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
            if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object "
                                "or a string specifying the start method, but got "
                                f"multiprocessing_context={multiprocessing_context}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr: str, val: Any) -> None:
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                           "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the iterator draws from: batches of indices, or single indices."""
        return self.batch_sampler if self._auto_collation else self.sampler

    # -- iteration -----------------------------------------------------------------------------
    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self) -> _BaseDataLoaderIter:
        if self.persistent_workers and self.num_workers > 0:
            # a new pool also after the last one was shut down (a worker died, say)
            if self._iterator is None or self._iterator._shutdown:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            # the only guess there is: the dataset's own length, in batches
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = (length // self.batch_size if self.drop_last
                          else math.ceil(length / self.batch_size))
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn when more workers are requested than this process may use CPUs."""
        if not self.num_workers:
            return
        suggested = _cpu_count()
        if suggested is not None and self.num_workers <= suggested:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        if suggested is None:
            detail = ("DataLoader is not able to compute a suggested max number of worker in "
                      "current system.")
        else:
            detail = (f"Our suggested max number of worker in current system is {suggested}"
                      f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, "
                      "which is smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {detail} Please be aware that excessive worker creation might get "
                      "DataLoader running slow or even freeze, lower the worker number to avoid "
                      "potential slowness/freeze if necessary.", stacklevel=2)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._pin_memory = loader.pin_memory and _cuda_available()
        if loader.pin_memory and not self._pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=3)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # one draw per iterator, even without workers (so seeded runs stay comparable)
        self._base_seed = int(empty((), dtype=int64).random_(generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable
                and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            message = (f"Length of IterableDataset {self._dataset} was reported to be "
                       f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                       f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                message += ("For multiprocessing data-loading, this could be caused by not "
                            "properly configuring the IterableDataset replica at each worker.")
            warnings.warn(message, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last)

    def _next_data(self):
        index = self._next_index()
        data = self._dataset_fetcher.fetch(index)
        return _pin_memory(data) if self._pin_memory else data


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Iterates once over the loader's dataset (or, with persistent workers, once per
    `_reset`) with worker processes.

    Bookkeeping, as in PyTorch: tasks are numbered by `_send_idx`; `_task_info[idx]` is
    (worker_id,) while outstanding and (worker_id, message) once received out of order;
    `_rcvd_idx` is the next task to return.  `_workers_status[w]` turns False when worker w's
    iterable dataset is exhausted (its later tasks are skipped)."""

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:     # 0 passes DataLoader's check; PyTorch fails here
            raise AssertionError("prefetch_factor must be greater than 0 for "
                                 "MultiProcessingDataLoaderIter")
        context = loader.multiprocessing_context or _default_context()
        self._pool = WorkerPool(context, self._num_workers, self._dataset_kind, self._dataset,
                                self._auto_collation, self._collate_fn, self._drop_last,
                                self._base_seed, loader.worker_init_fn)
        # shut the workers down when this iterator is collected, or at interpreter exit
        self._finalizer = weakref.finalize(self, self._pool.shutdown)
        self._shutdown = False
        self._reset(loader, first_iter=True)

    @property
    def _workers(self):
        return self._pool.processes

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            self._resume_workers()
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _resume_workers(self):
        """Start a new epoch on persistent workers: each acknowledges after everything it
        sent in the previous epoch, which is dropped."""
        for worker_id in range(self._num_workers):
            self._pool.put(worker_id, _RESUME)
        waiting = self._num_workers
        while waiting:
            _, (tag, _, _) = self._receive()
            if tag == RESUMED:
                waiting -= 1

    def _receive(self, prefer=None):
        """The next (worker_id, message) from the pool, honouring the loader's timeout."""
        if self._shutdown:
            raise RuntimeError("DataLoader iterator used after its workers were shut down")
        try:
            received = self._pool.receive(self._timeout if self._timeout > 0 else None, prefer)
        except RuntimeError:
            self._shutdown_workers()
            raise
        if received is None:
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        return received

    def _next_data(self):
        while True:
            # skip tasks that will never return (their worker's stream ended)
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                worker_id, message = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(message, worker_id)
            worker_id, message = self._receive(prefer=info[0])
            idx = message[1]
            self._tasks_outstanding -= 1
            if message[0] == STOP:
                self._workers_status[worker_id] = False
                if not self._persistent_workers:
                    self._pool.stop(worker_id)
                self._task_info.pop(idx, None)
                self._workers_num_tasks[worker_id] -= 1
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    self._task_info.pop(idx)
                    return self._process_data(message, worker_id)
                self._task_info[idx] += (message,)
                continue
            self._task_info.pop(idx)
            self._rcvd_idx += 1
            return self._process_data(message, worker_id)

    def _try_put_index(self):
        """Send the next task to the next active worker, if there is a task and a worker."""
        if self._shutdown:
            return
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id] and (
                    self._in_order
                    or self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._pool.put(worker_id, (self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, message, worker_id):
        tag, _, payload = message
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if tag == ERROR:
            payload.reraise()
        if tag != DATA:
            raise RuntimeError(f"DataLoader: unexpected message {tag!r} from worker {worker_id}")
        return _pin_memory(payload) if self._pin_memory else payload

    def _shutdown_workers(self):
        """Stop and reap the worker processes (idempotent)."""
        if not self._shutdown:
            self._shutdown = True
            self._finalizer()

    def __del__(self):
        if hasattr(self, "_finalizer"):       # __init__ may have failed before the pool
            self._shutdown_workers()

