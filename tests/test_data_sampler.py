"""torchlite.utils.data samplers: Sequential, Random, SubsetRandom, WeightedRandom, Batch and
Distributed samplers (PyTorch's semantics; torch as an oracle for everything that does not
depend on the random stream)."""
import collections

import pytest

import torchlite as tl
import torchlite.utils.data as D


def _gen(seed):
    return tl.Generator().manual_seed(seed)


# ---- SequentialSampler -------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 7])
def test_sequential_sampler(n):
    sampler = D.SequentialSampler(range(n))
    assert list(sampler) == list(range(n))
    assert len(sampler) == n


def test_sampler_base():
    with pytest.raises(NotImplementedError):
        iter(D.Sampler())

    class Evens(D.Sampler[int]):
        def __iter__(self):
            return iter([0, 2, 4])
    assert list(Evens()) == [0, 2, 4]


# ---- RandomSampler -----------------------------------------------------------------------------
def test_random_sampler_is_a_permutation():
    sampler = D.RandomSampler(range(20), generator=_gen(0))
    first, second = list(sampler), list(sampler)
    assert sorted(first) == list(range(20)) and sorted(second) == list(range(20))
    assert first != second                      # a new order on each pass
    assert len(sampler) == 20


def test_random_sampler_reproducible():
    assert list(D.RandomSampler(range(30), generator=_gen(4))) == \
        list(D.RandomSampler(range(30), generator=_gen(4)))
    assert list(D.RandomSampler(range(30), generator=_gen(4))) != \
        list(D.RandomSampler(range(30), generator=_gen(5)))


def test_random_sampler_without_generator_draws_from_default_generator():
    tl.manual_seed(11)
    a = list(D.RandomSampler(range(25)))
    tl.manual_seed(11)
    b = list(D.RandomSampler(range(25)))
    assert a == b
    tl.manual_seed(11)
    tl.rand(1)                                   # consumes the default stream first
    assert list(D.RandomSampler(range(25))) != a


@pytest.mark.parametrize("num_samples", [1, 7, 10, 23, 30])
def test_random_sampler_num_samples_without_replacement(num_samples):
    n = 10
    drawn = list(D.RandomSampler(range(n), num_samples=num_samples, generator=_gen(1)))
    assert len(drawn) == num_samples
    # whole permutations, then the start of one more
    for start in range(0, num_samples - num_samples % n, n):
        assert sorted(drawn[start:start + n]) == list(range(n))
    tail = drawn[num_samples - num_samples % n:]
    assert len(set(tail)) == len(tail)


@pytest.mark.parametrize("num_samples", [1, 31, 32, 33, 100])
def test_random_sampler_with_replacement(num_samples):
    sampler = D.RandomSampler(range(5), replacement=True, num_samples=num_samples,
                              generator=_gen(2))
    drawn = list(sampler)
    assert len(drawn) == num_samples == len(sampler)
    assert all(0 <= i < 5 for i in drawn) and all(isinstance(i, int) for i in drawn)
    if num_samples >= 100:
        assert len(set(drawn)) == 5              # repeats, and every index shows up


def test_random_sampler_errors():
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=0"):
        D.RandomSampler(range(3), replacement=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        D.RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        D.RandomSampler([])
    with pytest.raises(ValueError, match="num_samples=2.0"):
        D.RandomSampler(range(3), num_samples=2.0)


# ---- SubsetRandomSampler -----------------------------------------------------------------------
def test_subset_random_sampler():
    indices = [10, 3, 7, 7, 42]
    sampler = D.SubsetRandomSampler(indices, generator=_gen(0))
    drawn = list(sampler)
    assert sorted(drawn) == sorted(indices) and len(sampler) == 5
    assert list(D.SubsetRandomSampler(indices, generator=_gen(9))) == \
        list(D.SubsetRandomSampler(indices, generator=_gen(9)))


# ---- WeightedRandomSampler ---------------------------------------------------------------------
def test_weighted_sampler_with_replacement_follows_weights():
    weights = [0.0, 1.0, 3.0, 0.0]
    drawn = list(D.WeightedRandomSampler(weights, 4000, generator=_gen(0)))
    counts = collections.Counter(drawn)
    assert set(counts) == {1, 2}                 # zero weight: never drawn
    assert abs(counts[2] / 4000 - 0.75) < 0.05


def test_weighted_sampler_without_replacement():
    sampler = D.WeightedRandomSampler([0.9, 0.4, 0.05, 0.2, 0.3, 0.1], 5, replacement=False,
                                      generator=_gen(3))
    drawn = list(sampler)
    assert len(drawn) == 5 == len(sampler) and len(set(drawn)) == 5
    assert sampler.weights.dtype == tl.float64
    assert list(D.WeightedRandomSampler(tl.tensor([1.0, 2.0, 3.0]), 3, generator=_gen(1))) == \
        list(D.WeightedRandomSampler([1.0, 2.0, 3.0], 3, generator=_gen(1)))


def test_weighted_sampler_errors():
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=True"):
        D.WeightedRandomSampler([1.0], True)
    with pytest.raises(ValueError, match="num_samples=0"):
        D.WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean value, but got replacement=1"):
        D.WeightedRandomSampler([1.0], 1, replacement=1)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(2, 1\)"):
        D.WeightedRandomSampler([[1.0], [2.0]], 1)


# ---- BatchSampler ------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 9, 10, 11])
@pytest.mark.parametrize("batch_size", [1, 3, 10])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_matches_torch(n, batch_size, drop_last):
    torch = pytest.importorskip("torch")
    ours = D.BatchSampler(D.SequentialSampler(range(n)), batch_size, drop_last)
    theirs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(n)),
                                           batch_size, drop_last)
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)


def test_batch_sampler_batches():
    batches = list(D.BatchSampler(range(10), 3, drop_last=False))
    assert batches == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert all(type(b) is list for b in batches)
    assert list(D.BatchSampler(range(10), 3, drop_last=True)) == batches[:3]
    random_batches = list(D.BatchSampler(D.RandomSampler(range(10), generator=_gen(0)), 4, False))
    assert [len(b) for b in random_batches] == [4, 4, 2]
    assert sorted(i for b in random_batches for i in b) == list(range(10))


def test_batch_sampler_errors():
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match=f"batch_size should be a positive integer value, "
                                             f"but got batch_size={bad}"):
            D.BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=0"):
        D.BatchSampler(range(3), 1, 0)


# ---- DistributedSampler ------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 7, 10, 12])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_unshuffled_matches_torch(n, replicas, drop_last):
    torch = pytest.importorskip("torch")
    if drop_last and n < replicas:
        return
    for rank in range(replicas):
        ours = D.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                                     drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)
        assert ours.total_size == theirs.total_size


@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_shuffled_shards(drop_last):
    n, replicas = 11, 3
    shards = [list(D.DistributedSampler(range(n), replicas, r, seed=7, drop_last=drop_last))
              for r in range(replicas)]
    lengths = {len(s) for s in shards}
    assert len(lengths) == 1                     # every rank the same amount
    union = [i for s in shards for i in s]
    if drop_last:
        assert len(set(union)) == len(union) == 9
    else:
        assert set(union) == set(range(n)) and len(union) == 12


def test_distributed_sampler_epochs():
    sampler = D.DistributedSampler(range(40), num_replicas=2, rank=0, seed=1)
    first = list(sampler)
    assert list(sampler) == first                # same epoch: same order
    sampler.set_epoch(1)
    assert sampler.epoch == 1
    second = list(sampler)
    assert second != first
    again = D.DistributedSampler(range(40), num_replicas=2, rank=0, seed=1)
    again.set_epoch(1)
    assert list(again) == second
    other_seed = D.DistributedSampler(range(40), num_replicas=2, rank=0, seed=2)
    assert list(other_seed) != first


def test_distributed_sampler_errors():
    with pytest.raises(RuntimeError, match="pass num_replicas and rank"):
        D.DistributedSampler(range(4))
    with pytest.raises(RuntimeError, match="pass num_replicas and rank"):
        D.DistributedSampler(range(4), num_replicas=2)
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        D.DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        D.DistributedSampler(range(4), num_replicas=2, rank=-1)


def test_distributed_sampler_in_a_dataloader():
    ds = D.TensorDataset(tl.arange(10))
    seen = []
    for rank in range(2):
        sampler = D.DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=False)
        seen += [x.item() for (batch,) in D.DataLoader(ds, batch_size=2, sampler=sampler)
                 for x in batch]
    assert sorted(seen) == list(range(10))


# ---- property: batching covers the data exactly once, in len() batches -------------------------
def test_batching_property():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(n=st.integers(0, 40), batch_size=st.integers(1, 12), drop_last=st.booleans(),
                      shuffle=st.booleans(), seed=st.integers(0, 2**32))
    def check(n, batch_size, drop_last, shuffle, seed):
        if shuffle and n == 0:                   # PyTorch: RandomSampler needs samples
            with pytest.raises(ValueError, match="num_samples=0"):
                D.DataLoader(D.TensorDataset(tl.arange(n)), shuffle=True)
            return
        loader = D.DataLoader(D.TensorDataset(tl.arange(n)), batch_size=batch_size,
                              shuffle=shuffle, drop_last=drop_last, generator=_gen(seed))
        batches = [b.tolist() for (b,) in loader]
        assert len(batches) == len(loader)
        assert all(len(b) == batch_size for b in batches[:-1])
        flat = [i for b in batches for i in b]
        assert len(set(flat)) == len(flat)
        if drop_last:
            assert len(flat) == n - n % batch_size
        else:
            assert sorted(flat) == list(range(n))
        if not shuffle:
            assert flat == sorted(flat)
    check()
