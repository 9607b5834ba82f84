"""torchlite.utils.data.DataLoader: arguments and validation, len(), collation, shuffling and
seeding, worker processes (ordering, iterable datasets, persistence, errors, crashes,
timeouts, shutdown without leftover processes) and the shared-memory transport of tensors.

Datasets used by workers are module-level classes so the spawn start method can import
them.  Worker tests keep datasets tiny and timeouts short."""
import collections
import gc
import math
import multiprocessing
import os
import random
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import torchlite as tl
import torchlite.utils.data as D
from torchlite.utils.data import _transport, _worker

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")

# tests that look at processes through /proc, or rely on fork (lambdas as collate_fn)
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="uses /proc or the fork start method")


@pytest.fixture(autouse=True)
def _no_worker_left_behind():
    """After every test, once garbage is collected (iterators kept alive by a traceback
    cycle included), no worker process may remain, running or zombie."""
    yield
    if multiprocessing.active_children():
        gc.collect()
        assert not multiprocessing.active_children()

Point = collections.namedtuple("Point", ["x", "y"])


# ---- datasets (module level: picklable for spawn) ----------------------------------------------
class Range(D.Dataset):
    """Sample i is tensor([i])."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return tl.tensor([i])


class Pid(D.Dataset):
    """Sample i is (i, the pid of the process that fetched it)."""

    def __init__(self, n, delay=0.0):
        self.n, self.delay = n, delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        return i, os.getpid()


class Failing(D.Dataset):
    """Sample `bad` misbehaves in the way `mode` says."""

    def __init__(self, mode, bad=3, n=8):
        self.mode, self.bad, self.n = mode, bad, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            if self.mode == "value":
                raise ValueError(f"bad sample {i}")
            if self.mode == "key":
                raise KeyError("missing-key")
            if self.mode == "multiarg":
                raise MultiArgError(1, 2)
            if self.mode == "exit":
                os._exit(7)
            if self.mode == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.mode == "segfault":
                import ctypes
                ctypes.string_at(0)
            if self.mode == "sleep":
                time.sleep(3)
        return i


class MultiArgError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


class Seeds(D.Dataset):
    """Reports the worker's info and a draw from each seeded generator."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = D.get_worker_info()
        return {"id": info.id, "seed": info.seed, "num_workers": info.num_workers,
                "tl": tl.rand(1).item(), "py": random.random(), "np": int(np.random.randint(2**31)),
                "tag": getattr(info.dataset, "tag", None), "same_type": type(info.dataset) is Seeds}


def tag_worker(worker_id):
    D.get_worker_info().dataset.tag = (worker_id, random.random())


def failing_init(worker_id):
    raise ValueError(f"init failed in {worker_id}")


class Augmented(D.Dataset):
    """Random augmentation: sample i is i + noise from torchlite's default generator."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return tl.full((3,), float(i)) + tl.rand(3)


class Split(D.IterableDataset):
    """range(start, end), split evenly across workers (PyTorch's documented example)."""

    def __init__(self, start, end, split=True):
        self.start, self.end, self.split = start, end, split

    def __len__(self):
        return self.end - self.start

    def __iter__(self):
        info = D.get_worker_info()
        if info is None or not self.split:
            return iter(range(self.start, self.end))
        per = int(math.ceil((self.end - self.start) / info.num_workers))
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))


class AllDtypes(D.Dataset):
    """Every dtype, large (shared memory) and small (pickled), and non-contiguous samples;
    values are exact in every dtype and depend on the index."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return expected_sample(i)


def expected_sample(i):
    big = (tl.arange(64 * 80) + i) % 50      # 5120 elements: a batch of 4 is >= 16 KiB
    small = (tl.arange(6) * (i + 1)) % 50
    sample = {}
    for dt in (tl.bool, tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64, tl.float16,
               tl.bfloat16, tl.float32, tl.float64):
        convert = (lambda t: (t % 3) == 0) if dt is tl.bool else (lambda t, dt=dt: t.to(dt))
        sample[dt.name] = (convert(big).reshape(64, 80).t(), convert(small))
    sample["strided"] = (tl.arange(40 * 200, dtype=tl.float32) * (i + 1)).reshape(40, 200)[::2, 1::3]
    sample["expanded"] = tl.tensor([float(i)]).expand(5000)
    sample["scalar"] = tl.tensor(float(i))
    sample["empty"] = tl.zeros(0, 3)
    return sample


# ---- helpers -----------------------------------------------------------------------------------
def _is_child(pid):
    """Whether pid is still a child of this process (running or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid()


def _running(pid):
    """Whether pid is a live process (not gone, not a zombie awaiting its new parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _assert_gone(pids):
    pids = set(pids)
    assert pids, "no worker pids were recorded"
    assert not [p for p in multiprocessing.active_children() if p.pid in pids]
    if sys.platform.startswith("linux"):
        assert not [pid for pid in pids if _is_child(pid)]


def _plain(x):
    """A library-neutral description of a (nested) batch: containers by type name, tensors as
    (dtype name, shape, values)."""
    if isinstance(x, tl.Tensor) or type(x).__name__ == "Tensor":
        return ("tensor", str(x.dtype).split(".")[-1], tuple(x.shape), x.tolist())
    if isinstance(x, dict):
        return (type(x).__name__, {k: _plain(v) for k, v in x.items()})
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, tuple(_plain(v) for v in x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_plain(v) for v in x])
    return x


def _equal_nested(a, b):
    if isinstance(a, tl.Tensor):
        assert isinstance(b, tl.Tensor) and a.dtype is b.dtype and a.shape == b.shape
        assert tl.equal(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _equal_nested(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _equal_nested(u, v)
    else:
        assert a == b


# ---- argument validation -----------------------------------------------------------------------
BAD_ARGS = [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
    dict(num_workers=1, prefetch_factor=-1), dict(persistent_workers=True),
    dict(shuffle=True, sampler=[0]), dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True), dict(batch_sampler=[[0]], sampler=[0]),
    dict(batch_sampler=[[0]], drop_last=True), dict(batch_size=None, drop_last=True),
    dict(multiprocessing_context="spawn"), dict(num_workers=1, multiprocessing_context="bogus"),
    dict(num_workers=1, multiprocessing_context=3),
]


@pytest.mark.parametrize("kwargs", BAD_ARGS, ids=[str(k) for k in BAD_ARGS])
def test_argument_errors_match_torch(kwargs):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        torch.utils.data.DataLoader(list(range(4)), **kwargs)
    with pytest.raises(theirs.type) as ours:
        D.DataLoader(list(range(4)), **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_argument_errors_without_torch():
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        D.DataLoader(Range(2), num_workers=-1)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        D.DataLoader(Range(2), shuffle=True, sampler=[0])
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context"):
        D.DataLoader(Range(2), num_workers=1, multiprocessing_context=object())


def test_iterable_dataset_argument_errors():
    ds = Split(0, 4)
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        D.DataLoader(ds, shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        D.DataLoader(ds, sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        D.DataLoader(ds, batch_sampler=[[0]])
    assert list(D.DataLoader(ds, shuffle=False, batch_size=None)) == [0, 1, 2, 3]


def test_attributes_frozen_after_init():
    loader = D.DataLoader(Range(4))
    for attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                 "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after DataLoader is initialized"):
            setattr(loader, attr, None)
    loader.num_workers = 0            # others may change
    loader.collate_fn = D.default_convert


@linux_only
def test_multiprocessing_context_accepts_context_objects():
    ctx = multiprocessing.get_context("spawn")
    assert D.DataLoader(Range(2), num_workers=1, multiprocessing_context=ctx).multiprocessing_context is ctx
    named = D.DataLoader(Range(2), num_workers=1, multiprocessing_context="fork")
    assert named.multiprocessing_context.get_start_method() == "fork"


def test_default_samplers_and_attributes():
    loader = D.DataLoader(Range(10), batch_size=3)
    assert isinstance(loader.sampler, D.SequentialSampler)
    assert isinstance(loader.batch_sampler, D.BatchSampler)
    assert loader.prefetch_factor is None and loader.collate_fn is D.default_collate
    shuffled = D.DataLoader(Range(10), shuffle=True, num_workers=2)
    assert isinstance(shuffled.sampler, D.RandomSampler) and shuffled.prefetch_factor == 2
    unbatched = D.DataLoader(Range(10), batch_size=None)
    assert unbatched.batch_sampler is None and unbatched.collate_fn is D.default_convert
    by_batch = D.DataLoader(Range(10), batch_sampler=[[0, 1], [2]])
    assert by_batch.batch_size is None and by_batch.drop_last is False


def test_too_many_workers_warns():
    with pytest.warns(UserWarning, match="This DataLoader will create 1000 worker processes in total"):
        D.DataLoader(Range(2), num_workers=1000)


# ---- len() -------------------------------------------------------------------------------------
LEN_CASES = [dict(batch_size=1), dict(batch_size=3), dict(batch_size=3, drop_last=True),
             dict(batch_size=None), dict(batch_size=4, shuffle=True),
             dict(batch_sampler=[[0, 1], [2], [3, 4, 5]]),
             dict(sampler=[0, 1, 2], batch_size=2)]


@pytest.mark.parametrize("kwargs", LEN_CASES, ids=[str(k) for k in LEN_CASES])
def test_len_map_style(kwargs):
    loader = D.DataLoader(Range(10), **kwargs)
    assert len(loader) == len(list(loader))
    torch = pytest.importorskip("torch")
    assert len(loader) == len(torch.utils.data.DataLoader(list(range(10)), **kwargs))


@pytest.mark.parametrize("batch_size,drop_last", [(None, False), (1, False), (3, False), (3, True)])
def test_len_iterable(batch_size, drop_last):
    loader = D.DataLoader(Split(0, 10), batch_size=batch_size, drop_last=drop_last)
    assert len(loader) == len(list(loader))
    torch = pytest.importorskip("torch")

    class TorchRange(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(10))

        def __len__(self):
            return 10
    assert len(loader) == len(torch.utils.data.DataLoader(TorchRange(), batch_size=batch_size,
                                                          drop_last=drop_last))


def test_iterable_length_warning():
    loader = D.DataLoader(Split(0, 10), batch_size=None)
    loader.dataset.end = 12                      # yields more than len() said
    assert len(loader) == 12
    loader.dataset.end = 14
    with pytest.warns(UserWarning, match="was reported to be 12"):
        assert len(list(loader)) == 14


# ---- collation ---------------------------------------------------------------------------------
def _samples(lib):
    """Samples of every structure default_collate knows, built with `lib` (torchlite or torch)."""
    return [
        [1.5, 2.25, -3.0],
        [1, 2, 3],
        [True, False, True],
        [np.float32(1.5), np.float32(2.0)],
        [np.int16(3), np.int16(-4)],
        [np.float64(0.5), np.float64(1.5)],
        [np.bool_(True), np.bool_(False)],
        [np.arange(6, dtype=np.int32).reshape(2, 3), np.ones((2, 3), dtype=np.int32)],
        [np.zeros(3, dtype=np.float16), np.ones(3, dtype=np.float16)],
        [lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])],
        [lib.tensor(5), lib.tensor(6)],
        [lib.tensor([[True, False]]), lib.tensor([[False, False]])],
        ["a", "bc"],
        [b"x", b"yz"],
        [{"a": 1, "b": lib.tensor([1])}, {"a": 2, "b": lib.tensor([2])}],
        [collections.OrderedDict(z=1.0, a=2), collections.OrderedDict(z=3.0, a=4)],
        [Point(1, 2.0), Point(3, 4.0)],
        [(1, "s", lib.tensor([0.5])), (2, "t", lib.tensor([1.5]))],
        [[1, 2], [3, 4]],
        [{"nested": [(1, {"deep": 2.0})]}, {"nested": [(3, {"deep": 4.0})]}],
    ]


def test_default_collate_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    for ours, theirs in zip(_samples(tl), _samples(torch)):
        assert _plain(D.default_collate(ours)) == _plain(torch_collate(theirs)), ours


def test_default_convert_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_convert as torch_convert
    for ours, theirs in zip(_samples(tl), _samples(torch)):
        for a, b in zip(ours, theirs):
            assert _plain(D.default_convert(a)) == _plain(torch_convert(b)), a
    strings = np.array(["a", "b"])
    assert D.default_convert(strings) is strings


def test_default_collate_types():
    batch = D.default_collate([(1, 2.0, True, "s", np.int8(1)), (3, 4.0, False, "t", np.int8(2))])
    assert type(batch) is list
    ints, floats, bools, strs, np_ints = batch
    assert ints.dtype is tl.int64 and ints.tolist() == [1, 3]
    assert floats.dtype is tl.float64 and floats.tolist() == [2.0, 4.0]
    assert bools.dtype is tl.bool and strs == ("s", "t") and np_ints.dtype is tl.int8   # zip gives tuples
    point = D.default_collate([Point(1, 2), Point(3, 4)])
    assert type(point) is Point and point.x.tolist() == [1, 3]
    x = tl.randn(4, 5)
    stacked = D.default_collate([x[:, 1], x[:, 3]])     # non-contiguous samples
    assert tl.equal(stacked, tl.stack([x[:, 1], x[:, 3]]))


class _Frozen(collections.abc.Mapping):
    """An immutable mapping built from a dict."""

    def __init__(self, d):
        self.d = dict(d)

    def __getitem__(self, k):
        return self.d[k]

    def __iter__(self):
        return iter(self.d)

    def __len__(self):
        return len(self.d)


class _KeywordsOnly(_Frozen):
    """A mapping that cannot be rebuilt from one dict argument."""

    def __init__(self, **kwargs):
        super().__init__(kwargs)


class _Pair(collections.abc.Sequence):
    """An immutable sequence built from two arguments (not from one iterable)."""

    def __init__(self, a, b):
        self.items = (a, b)

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return 2


def test_default_collate_custom_mapping_and_sequence():
    out = D.default_collate([_Frozen({"a": 1}), _Frozen({"a": 2})])
    assert type(out) is _Frozen and out["a"].tolist() == [1, 2]
    fallback = D.default_collate([_KeywordsOnly(a=1), _KeywordsOnly(a=2)])
    assert type(fallback) is dict and fallback["a"].tolist() == [1, 2]
    pairs = D.default_collate([_Pair(1, 2.0), _Pair(3, 4.0)])
    assert type(pairs) is list and pairs[0].tolist() == [1, 3] and pairs[1].dtype is tl.float64
    pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    for batch in ([_Frozen({"a": 1}), _Frozen({"a": 2})], [_KeywordsOnly(a=1), _KeywordsOnly(a=2)],
                  [_Pair(1, 2.0), _Pair(3, 4.0)]):
        assert type(D.default_collate(batch)) is type(torch_collate(batch))


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        D.default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, "
                                        "numbers, dicts or lists; found <class 'object'>"):
        D.default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        D.default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        D.default_collate([tl.zeros(3), tl.zeros(4)])


def test_collate_with_custom_fn_map():
    # PyTorch's documented recipe, from PyTorch's module path
    from torchlite.utils.data._utils.collate import collate, default_collate_fn_map

    def collate_float(batch, *, collate_fn_map):
        return sum(batch)
    fn_map = dict(default_collate_fn_map)
    fn_map[float] = collate_float
    summed, ints = collate([(1.0, 2), (3.0, 4)], collate_fn_map=fn_map)
    assert summed == 4.0 and ints.tolist() == [2, 4]
    fn_map[(int, float)] = collate_float           # tuple keys match by isinstance
    del fn_map[int], fn_map[float]
    assert collate([(1, 2.5)], collate_fn_map=fn_map) == [1, 2.5]


class Structured(D.Dataset):
    """Samples mixing every leaf type, built with `lib` (torchlite or torch)."""

    def __init__(self, lib, n=7):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        lib = self.lib
        return {"x": lib.arange(6, dtype=lib.float32).reshape(2, 3) * i, "label": i,
                "weight": i / 2, "name": f"s{i}", "np": np.full(2, i, dtype=np.int16),
                "pair": (lib.tensor([i, -i]), np.float32(i)), "point": Point(i, [i, i + 1])}


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("kwargs", [dict(batch_size=3), dict(batch_size=3, drop_last=True),
                                    dict(batch_size=None)])
def test_loader_output_matches_torch(num_workers, kwargs):
    torch = pytest.importorskip("torch")
    ours = D.DataLoader(Structured(tl), num_workers=num_workers, **kwargs)
    theirs = torch.utils.data.DataLoader(Structured(torch), num_workers=0, **kwargs)
    assert [_plain(b) for b in ours] == [_plain(b) for b in theirs]


# ---- single-process loading --------------------------------------------------------------------
def test_batches_sequential():
    x = tl.randn(10, 3)
    y = tl.arange(10)
    batches = list(D.DataLoader(D.TensorDataset(x, y), batch_size=4))
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert tl.equal(tl.cat([b[0] for b in batches]), x) and tl.equal(tl.cat([b[1] for b in batches]), y)
    assert all(type(b) is list for b in batches)
    assert len(list(D.DataLoader(D.TensorDataset(x, y), batch_size=4, drop_last=True))) == 2


def test_shuffle_reproducible_from_generator():
    def order(seed):
        loader = D.DataLoader(Range(20), batch_size=5, shuffle=True,
                              generator=tl.Generator().manual_seed(seed))
        return [tl.cat(list(loader)).flatten().tolist() for _ in range(2)]
    first, second = order(0)
    assert sorted(first) == list(range(20)) and first != second     # reshuffled per epoch
    assert order(0) == [first, second] and order(1) != [first, second]


def test_shuffle_uses_default_generator():
    tl.manual_seed(4)
    a = [b.item() for b in D.DataLoader(Range(12), shuffle=True)]
    tl.manual_seed(4)
    b = [b.item() for b in D.DataLoader(Range(12), shuffle=True)]
    assert a == b and sorted(a) == list(range(12))


def test_getitems_is_used_for_batches():
    class Batched(D.Dataset):
        def __init__(self):
            self.calls = 0

        def __len__(self):
            return 6

        def __getitem__(self, i):
            raise AssertionError("__getitem__ should not be called")

        def __getitems__(self, indices):
            self.calls += 1
            return [i * 10 for i in indices]
    ds = Batched()
    assert [b.tolist() for b in D.DataLoader(ds, batch_size=4)] == [[0, 10, 20, 30], [40, 50]]
    assert ds.calls == 2


def test_batch_size_none_converts_samples():
    out = list(D.DataLoader([np.arange(2), np.arange(3)], batch_size=None))
    assert all(isinstance(t, tl.Tensor) for t in out) and out[1].tolist() == [0, 1, 2]


def test_custom_sampler_and_batch_sampler():
    assert [b.item() for b in D.DataLoader(Range(5), sampler=[4, 0, 2])] == [4, 0, 2]
    got = [b.flatten().tolist() for b in D.DataLoader(Range(5), batch_sampler=[[3, 1], [0]])]
    assert got == [[3, 1], [0]]


def test_pin_memory_accepted():
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
        batches = list(D.DataLoader(Range(4), batch_size=2, pin_memory=True))
    assert [b.flatten().tolist() for b in batches] == [[0, 1], [2, 3]]


def test_iterator_len_and_not_picklable():
    import pickle
    it = iter(D.DataLoader(Range(7), batch_size=2))
    assert len(it) == 4
    with pytest.raises(NotImplementedError, match="cannot be pickled"):
        pickle.dumps(it)


# ---- worker processes: results -----------------------------------------------------------------
def test_workers_deliver_in_sampler_order():
    x = tl.randn(50, 7)
    loader = D.DataLoader(D.TensorDataset(x, tl.arange(50)), batch_size=4, shuffle=True,
                          num_workers=2, generator=tl.Generator().manual_seed(0))
    batches = list(loader)
    order = tl.cat([b[1] for b in batches])
    assert sorted(order.tolist()) == list(range(50))
    assert tl.equal(tl.cat([b[0] for b in batches]), x[order])
    # the same generator state gives the same order as in the main process
    single = D.DataLoader(D.TensorDataset(x, tl.arange(50)), batch_size=4, shuffle=True,
                          generator=tl.Generator().manual_seed(0))
    assert tl.equal(tl.cat([b[1] for b in single]), order)


@linux_only
def test_in_order_despite_slow_worker():
    class SlowFirst(Pid):
        def __getitem__(self, i):
            if i == 0:
                time.sleep(0.5)
            return super().__getitem__(i)
    got = [int(i) for i, _ in D.DataLoader(SlowFirst(8), batch_size=None, num_workers=2)]
    assert got == list(range(8))
    unordered = [int(i) for i, _ in D.DataLoader(SlowFirst(8), batch_size=None, num_workers=2,
                                                 in_order=False)]
    assert sorted(unordered) == list(range(8)) and unordered[0] != 0


def test_every_dtype_arrives_intact():
    expected = D.default_collate([expected_sample(i) for i in range(4)])
    for batch in D.DataLoader(AllDtypes(), batch_size=4, num_workers=2):
        got = batch
        break
    _equal_nested(expected, got)
    assert got["float32"][0].shape == (4, 80, 64)
    # the worker stacked the big columns in shared memory: the received storage is exactly it
    assert got["float32"][0]._data.storage.nbytes == 4 * 80 * 64 * 4


@linux_only
def test_uncollated_tensors_from_workers():
    """collate_fn that keeps the samples: tensors (views, non-contiguous) are moved as they
    are and must still arrive intact."""
    loader = D.DataLoader(AllDtypes(), batch_size=2, num_workers=2, collate_fn=lambda b: b)
    for k, batch in enumerate(loader):
        for j, sample in enumerate(batch):
            _equal_nested(expected_sample(2 * k + j), sample)


def test_batch_size_none_with_workers():
    got = list(D.DataLoader(Pid(5), batch_size=None, num_workers=2))
    assert [int(i) for i, _ in got] == list(range(5)) and type(got[0]) is list


@linux_only
def test_many_tensors_in_one_batch():
    """More shared buffers than one sendmsg can carry."""
    class Many(D.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return [tl.full((4096,), float(i * 1000 + k)) for k in range(230)]
    for batch in D.DataLoader(Many(), batch_size=2, num_workers=1):
        assert len(batch) == 230
        for k, column in enumerate(batch):
            assert tl.equal(column, tl.stack([tl.full((4096,), float(k)),
                                              tl.full((4096,), float(1000 + k))]))


def test_prefetch_factor_zero_fails_when_iterating():
    loader = D.DataLoader(Range(4), num_workers=1, prefetch_factor=0)
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
        iter(loader)


def test_prefetch_factor_bounds_tasks_in_flight():
    for workers, prefetch, batches in ((2, 2, 10), (2, 1, 10), (1, 3, 2)):
        it = iter(D.DataLoader(Range(batches), num_workers=workers, prefetch_factor=prefetch))
        assert it._tasks_outstanding == min(workers * prefetch, batches)
        assert [b.item() for b in it] == list(range(batches))


class MatmulInWorker(D.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        a = tl.ones(256, 256)
        return (a @ a).sum().item(), tl.get_num_threads()


def test_workers_run_kernels_single_threaded_after_fork(threads):
    warm = tl.randn(512, 512)
    (warm @ warm).sum()                             # the main process's OpenMP pool exists
    rows = list(D.DataLoader(MatmulInWorker(), batch_size=None, num_workers=2, timeout=20))
    assert all(value == 256.0 ** 3 and n == 1 for value, n in rows)
    assert tl.get_num_threads() == threads


# ---- worker processes: info, seeds, init -------------------------------------------------------
def test_get_worker_info():
    assert D.get_worker_info() is None
    rows = list(D.DataLoader(Seeds(), batch_size=None, num_workers=2,
                             generator=tl.Generator().manual_seed(3)))
    assert {r["id"] for r in rows} == {0, 1}
    assert all(r["num_workers"] == 2 and r["same_type"] for r in rows)
    base = rows[0]["seed"] - rows[0]["id"]
    assert all(r["seed"] == base + r["id"] for r in rows)
    # the base seed is the loader generator's first int64 draw
    expected = tl.empty((), dtype=tl.int64).random_(generator=tl.Generator().manual_seed(3)).item()
    assert base == expected


def test_worker_seeding_matches_its_recipe():
    rows = list(D.DataLoader(Seeds(), batch_size=None, num_workers=2))
    first_per_worker = {}
    for r in rows:
        first_per_worker.setdefault(r["id"], r)
    for worker_id, r in first_per_worker.items():
        random.seed(r["seed"])
        tl.manual_seed(r["seed"])
        np.random.seed(np.random.SeedSequence([worker_id, r["seed"] - worker_id]).generate_state(4))
        assert (r["py"], r["tl"], r["np"]) == (random.random(), tl.rand(1).item(),
                                               int(np.random.randint(2**31)))
    assert first_per_worker[0]["tl"] != first_per_worker[1]["tl"]


def test_numpy_seed_state_matches_torch():
    pytest.importorskip("torch")
    from torch.utils.data._utils.worker import _generate_state
    for base_seed in (0, 1, 2**32 - 1, 2**32 + 5, 2**63 - 7):
        for worker_id in (0, 1, 5):
            ours = np.random.SeedSequence([worker_id, base_seed]).generate_state(4).tolist()
            assert ours == _generate_state(base_seed, worker_id)


def test_random_augmentation_reproducible_and_distinct_per_worker():
    def run(seed):
        loader = D.DataLoader(Augmented(), batch_size=2, num_workers=2,
                              generator=tl.Generator().manual_seed(seed))
        return tl.cat(list(loader))
    a, b, c = run(7), run(7), run(8)
    assert tl.equal(a, b) and not tl.equal(a, c)
    noise = a - tl.arange(16, dtype=tl.float32).reshape(16, 1)
    assert not tl.equal(noise[0:2], noise[2:4])        # batches 0 and 1: different workers


def test_worker_init_fn_runs_after_seeding():
    rows = list(D.DataLoader(Seeds(), batch_size=None, num_workers=2, worker_init_fn=tag_worker))
    for r in rows:
        worker_id, first_random = r["tag"]
        assert worker_id == r["id"]
        random.seed(r["seed"])
        assert first_random == random.random()


def test_worker_init_fn_error_is_raised():
    loader = D.DataLoader(Range(4), num_workers=1, worker_init_fn=failing_init)
    with pytest.raises(ValueError, match="init failed in 0") as info:
        list(loader)
    assert "Caught ValueError in DataLoader worker process 0" in str(info.value)


# ---- worker processes: iterable datasets -------------------------------------------------------
def test_iterable_dataset_split_across_workers():
    got = [t.item() for t in D.DataLoader(Split(3, 7), num_workers=2)]
    assert got == [3, 5, 4, 6]                       # round robin over the two workers' halves
    batched = list(D.DataLoader(Split(0, 10), batch_size=2, num_workers=2))
    assert sorted(tl.cat(batched).tolist()) == list(range(10))
    dropped = list(D.DataLoader(Split(0, 10), batch_size=2, num_workers=2, drop_last=True))
    assert all(len(b) == 2 for b in dropped) and len(dropped) == 4   # each worker drops its 5th


def test_iterable_dataset_without_split_duplicates():
    got = sorted(t.item() for t in D.DataLoader(Split(3, 7, split=False), num_workers=2))
    assert got == [3, 3, 4, 4, 5, 5, 6, 6]


def test_iterable_dataset_uneven_workers():
    got = [t.item() for t in D.DataLoader(Split(0, 5), num_workers=2, prefetch_factor=1)]
    assert sorted(got) == list(range(5))


# ---- worker processes: persistence -------------------------------------------------------------
def test_persistent_workers_survive_epochs():
    loader = D.DataLoader(Pid(6), batch_size=2, num_workers=2, persistent_workers=True)
    epochs = [list(loader) for _ in range(3)]
    pids = [{int(p) for _, pid in e for p in pid} for e in epochs]
    assert pids[0] == pids[1] == pids[2] and len(pids[0]) == 2
    for e in epochs:
        assert tl.cat([i for i, _ in e]).tolist() == list(range(6))
    it = iter(loader)
    next(it)                                        # leave an epoch half-way
    again = list(loader)
    assert tl.cat([i for i, _ in again]).tolist() == list(range(6))
    workers = loader._iterator._pool.pids
    del loader, it
    gc.collect()
    _assert_gone(workers)


def test_persistent_workers_with_iterable_dataset():
    loader = D.DataLoader(Split(0, 9), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(3):
        assert sorted(tl.cat(list(loader)).tolist()) == list(range(9))


def test_persistent_loader_recovers_after_worker_death():
    loader = D.DataLoader(Failing("exit", bad=0, n=2), num_workers=1, persistent_workers=True)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(loader)
    loader.dataset.bad = -1                  # the next pool's workers get a healthy copy
    assert [b.item() for b in loader] == [0, 1]


def test_workers_are_new_each_epoch_without_persistence():
    loader = D.DataLoader(Pid(4), batch_size=2, num_workers=1)
    first = {int(p) for _, pid in loader for p in pid}
    second = {int(p) for _, pid in loader for p in pid}
    assert first != second
    _assert_gone(first | second)


# ---- worker processes: errors ------------------------------------------------------------------
def test_worker_exception_reraised_with_traceback():
    with pytest.raises(ValueError) as info:
        list(D.DataLoader(Failing("value"), batch_size=2, num_workers=2))
    message = str(info.value)
    assert "Caught ValueError in DataLoader worker process 1" in message   # batch 1 -> worker 1
    assert "Original Traceback (most recent call last)" in message
    assert "bad sample 3" in message and "__getitem__" in message


def test_worker_key_error_message_readable():
    with pytest.raises(KeyError) as info:
        list(D.DataLoader(Failing("key"), batch_size=2, num_workers=1))
    assert "Caught KeyError in DataLoader worker process 0.\nOriginal Traceback" in str(info.value)


def test_worker_exception_unbuildable_type_becomes_runtime_error():
    with pytest.raises(RuntimeError, match="Caught MultiArgError in DataLoader worker process 0"):
        list(D.DataLoader(Failing("multiarg"), batch_size=2, num_workers=1))


def test_loading_continues_after_a_worker_exception():
    it = iter(D.DataLoader(Failing("value"), batch_size=2, num_workers=2))
    got = [next(it).tolist()]
    with pytest.raises(ValueError):
        next(it)
    got += [b.tolist() for b in it]
    assert got == [[0, 1], [4, 5], [6, 7]]


@linux_only
def test_unpicklable_result_reported():
    loader = D.DataLoader(Range(2), num_workers=1, collate_fn=lambda b: (lambda: None))
    with pytest.raises(Exception, match="Caught .* in DataLoader worker process 0"):
        list(loader)


@linux_only
@pytest.mark.parametrize("mode,how", [("exit", "exit code 7"), ("sigkill", "SIGKILL"),
                                      ("segfault", "SIGSEGV")])
def test_worker_death_raises_promptly(mode, how):
    loader = D.DataLoader(Failing(mode), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) exited unexpectedly") as info:
        for _ in loader:
            pass
    assert how in str(info.value)
    assert time.monotonic() - start < 10
    assert not multiprocessing.active_children()


def test_timeout():
    loader = D.DataLoader(Failing("sleep", bad=0), num_workers=1, timeout=0.3)
    it = iter(loader)
    pids = list(it._pool.pids)
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(it)
    del it
    gc.collect()
    _assert_gone(pids)


@linux_only
def test_non_leaf_tensor_from_worker():
    class NonLeaf(D.Dataset):
        def __len__(self):
            return 1

        def __getitem__(self, i):
            return tl.ones(5000, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        list(D.DataLoader(NonLeaf(), batch_size=None, num_workers=1))


# ---- worker processes: shutdown ----------------------------------------------------------------
def test_break_shuts_workers_down():
    loader = D.DataLoader(Pid(40), batch_size=2, num_workers=2)
    pids = set()
    for _, pid in loader:
        pids.update(int(p) for p in pid)
        if len(pids) == 2:
            break
    _assert_gone(pids)


def test_exception_in_training_loop_shuts_workers_down():
    pids = set()
    with pytest.raises(ZeroDivisionError):
        for _, pid in D.DataLoader(Pid(40), batch_size=2, num_workers=2):
            pids.update(int(p) for p in pid)
            if len(pids) == 2:
                1 / 0
    gc.collect()
    _assert_gone(pids)


def test_garbage_collected_iterator_shuts_workers_down():
    it = iter(D.DataLoader(Pid(40, delay=0.01), batch_size=1, num_workers=2))
    pids = list(it._pool.pids)
    next(it)
    del it
    _assert_gone(pids)


@linux_only
def test_ctrl_c_leaves_no_processes(tmp_path):
    script = tmp_path / "interrupt.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, sys, time
        # Ctrl-C as in a terminal, also where the test runner was started with SIGINT ignored
        # (a background job of a shell without job control): that disposition is inherited
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.path.insert(0, {os.path.dirname(os.path.dirname(os.path.abspath(tl.__file__)))!r})
        import torchlite as tl
        import torchlite.utils.data as D

        class Slow(D.Dataset):
            def __len__(self):
                return 10000
            def __getitem__(self, i):
                time.sleep(0.01)
                return os.getpid()

        if __name__ == "__main__":
            pids = set()
            interrupted = False
            try:
                for pid in D.DataLoader(Slow(), batch_size=None, num_workers=2):
                    pids.add(int(pid))
                    if len(pids) == 2:
                        print(" ".join(map(str, sorted(pids))), flush=True)
                        pids.add(-1)
            except KeyboardInterrupt:
                interrupted = True
            # the exception (whose traceback holds the iterator) is gone: so are the workers
            import multiprocessing
            print("interrupted" if interrupted else "finished",
                  len(multiprocessing.active_children()), flush=True)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        workers = [int(p) for p in proc.stdout.readline().split()]
        assert len(workers) == 2
        os.killpg(proc.pid, signal.SIGINT)          # the whole group, as a terminal's Ctrl-C
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "interrupted 0" in out, err
    assert not [pid for pid in workers if _running(pid)]


@linux_only
def test_workers_exit_when_main_process_dies(tmp_path):
    script = tmp_path / "orphan.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {os.path.dirname(os.path.dirname(os.path.abspath(tl.__file__)))!r})
        import torchlite.utils.data as D

        class Pids(D.Dataset):
            def __len__(self):
                return 100
            def __getitem__(self, i):
                return os.getpid()

        if __name__ == "__main__":
            it = iter(D.DataLoader(Pids(), batch_size=None, num_workers=2))
            print(" ".join(str(p) for p in it._pool.pids), flush=True)
            next(it)
            os._exit(0)                                 # no cleanup at all
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=60).stdout
    workers = [int(p) for p in out.split()]
    assert len(workers) == 2
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_running(p) for p in workers):
        time.sleep(0.05)
    assert not any(_running(p) for p in workers)


def test_spawn_context():
    loader = D.DataLoader(AllDtypes(), batch_size=3, num_workers=2, multiprocessing_context="spawn")
    batches = list(loader)
    expected = [D.default_collate([expected_sample(i) for i in range(k, k + 3)]) for k in (0, 3)]
    for e, g in zip(expected, batches):
        _equal_nested(e, g)


def test_unpicklable_dataset_with_spawn_cleans_up():
    local = type("LocalRange", (Range,), {})          # not importable: cannot be pickled
    loader = D.DataLoader(local(3), num_workers=2, multiprocessing_context="spawn")
    before = set(multiprocessing.active_children())
    with pytest.raises(Exception):
        iter(loader)
    assert set(multiprocessing.active_children()) <= before


# ---- the transport -----------------------------------------------------------------------------
@pytest.fixture
def socket_pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_transport_preserves_views_and_values(socket_pair):
    send, recv = socket_pair
    base = _transport.shared_empty((64, 64), tl.float32)
    base.copy_(tl.randn(64, 64))
    message = {"row_view": base[::3, 1:], "transposed": base.t(), "small": tl.arange(5),
               "big_private": tl.randn(100, 50).t(), "leaf": tl.randn(5000).requires_grad_(),
               "zero_d": tl.tensor(2.5), "empty": tl.zeros(0, 7), "text": "hello"}
    _transport.send_message(send, message)
    got = _transport.recv_message(recv)
    for key in ("row_view", "transposed", "small", "big_private", "zero_d", "empty"):
        assert got[key].dtype is message[key].dtype and got[key].shape == message[key].shape
        assert tl.equal(got[key], message[key])
    assert got["transposed"].stride() == message["transposed"].stride()
    assert got["leaf"].requires_grad and got["leaf"].is_leaf
    assert got["text"] == "hello"
    # both views came in the same buffer: they still share memory
    got["transposed"][1, 0] = 1234.5
    assert got["row_view"][0, 0].item() == 1234.5


def test_transport_every_dtype(socket_pair):
    send, recv = socket_pair
    values = (tl.arange(9000) % 7) - 3
    for dt in (tl.bool, tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64, tl.float16,
               tl.bfloat16, tl.float32, tl.float64):
        t = values.abs().to(dt) if dt in (tl.uint8,) else values.to(dt)
        _transport.send_message(send, [t, t[::2]])
        big, strided = _transport.recv_message(recv)
        assert big.dtype is dt and tl.equal(big, t) and tl.equal(strided, t[::2])


def test_collate_in_worker_uses_shared_memory(monkeypatch):
    monkeypatch.setattr(_worker, "_worker_info", _worker.WorkerInfo(0, 1, 0, None))
    big = D.default_collate([tl.ones(4096), tl.zeros(4096)])
    small = D.default_collate([tl.ones(4), tl.zeros(4)])
    assert big._data.storage.data_ptr() in _transport._live_buffers
    assert small._data.storage.data_ptr() not in _transport._live_buffers
    assert big[:, 0].tolist() == [1.0, 0.0]
    mixed = D.default_collate([tl.ones(4096), tl.zeros(4096, dtype=tl.float64)])
    assert mixed.dtype is tl.float64               # promotion still works


def test_worker_info_is_frozen():
    info = _worker.WorkerInfo(id=1, num_workers=2, seed=3, dataset=None)
    with pytest.raises(AttributeError):
        info.id = 5


def test_transport_without_memfd(monkeypatch, socket_pair):
    """The fallback for systems without memfd_create: an unlinked temporary file."""
    monkeypatch.delattr(os, "memfd_create", raising=False)
    send, recv = socket_pair
    t = tl.randn(100, 80)
    _transport.send_message(send, {"t": t, "v": t[:, ::3]})
    got = _transport.recv_message(recv)
    assert tl.equal(got["t"], t) and tl.equal(got["v"], t[:, ::3])


def test_transport_without_descriptor_passing(monkeypatch, socket_pair):
    """Where descriptors cannot be sent (Windows), tensors travel inside the pickle."""
    monkeypatch.setattr(_transport, "CAN_SEND_FDS", False)
    send, recv = socket_pair
    t = tl.randn(100, 80)
    assert _transport.shared_empty((100, 80), tl.float32) is None
    _transport.send_message(send, [t, t.t(), "x"])
    got = _transport.recv_message(recv)
    assert tl.equal(got[0], t) and tl.equal(got[1], t.t()) and got[2] == "x"


def test_transport_property_random_layouts(socket_pair):
    """Tensors of random shapes, dtypes and strided views (slices with steps, transposes,
    offsets, expanded dims) arrive with the same values, shapes and dtypes."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    send, recv = socket_pair
    dtypes = [tl.bool, tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64, tl.float16,
              tl.bfloat16, tl.float32, tl.float64]

    @hypothesis.settings(max_examples=40, deadline=None)
    @hypothesis.given(shape=st.lists(st.integers(0, 40), min_size=0, max_size=3),
                      dtype=st.sampled_from(dtypes), step=st.integers(1, 3),
                      start=st.integers(0, 2), transpose=st.booleans(), expand=st.booleans(),
                      big=st.booleans())
    def check(shape, dtype, step, start, transpose, expand, big):
        if big:
            shape = [64, 80] + shape[:1]               # >= 16 KiB for most dtypes
        base = (tl.arange(math.prod(shape)) % 97).reshape(shape).to(dtype)
        view = base
        if view.dim() >= 1:
            view = view[start::step]
        if transpose and view.dim() >= 2:
            view = view.transpose(0, 1)
        if expand:
            view = view.unsqueeze(0).expand(3, *view.shape)
        _transport.send_message(send, {"v": view, "b": base})
        got = _transport.recv_message(recv)
        for key, sent in (("v", view), ("b", base)):
            assert got[key].dtype is sent.dtype and got[key].shape == sent.shape
            assert tl.equal(got[key], sent)
    check()
