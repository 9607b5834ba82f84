"""torchlite.utils.data datasets: Dataset, IterableDataset, TensorDataset, StackDataset,
ConcatDataset, ChainDataset, Subset, random_split (PyTorch's semantics; torch as an oracle
for structure and lengths where installed)."""
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.utils.data as D


class Squares(D.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range")
        return i * i


class Stream(D.IterableDataset):
    def __init__(self, values):
        self.values = list(values)

    def __iter__(self):
        return iter(self.values)

    def __len__(self):
        return len(self.values)


class Batched(D.Dataset):
    """A dataset with __getitems__ that records how it was called."""

    def __init__(self, n):
        self.n = n
        self.calls = []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return -i

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        return [-i for i in indices]


# ---- Dataset / IterableDataset -----------------------------------------------------------------
def test_dataset_base_requires_getitem():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__"):
        D.Dataset()[0]


def test_dataset_add_concatenates():
    both = Squares(3) + Squares(2)
    assert isinstance(both, D.ConcatDataset)
    assert [both[i] for i in range(len(both))] == [0, 1, 4, 0, 1]


def test_iterable_dataset_add_chains():
    both = Stream([1, 2]) + Stream([3])
    assert isinstance(both, D.ChainDataset)
    assert list(both) == [1, 2, 3]
    assert len(both) == 3


def test_dataset_generic_subscript():
    class Typed(D.Dataset[int]):
        def __getitem__(self, i):
            return i
    assert Typed()[4] == 4


# ---- TensorDataset -----------------------------------------------------------------------------
def test_tensor_dataset_rows():
    x = tl.randn(5, 3)
    y = tl.arange(5)
    ds = D.TensorDataset(x, y)
    assert len(ds) == 5
    for i in range(5):
        xi, yi = ds[i]
        assert tl.equal(xi, x[i]) and yi.item() == i
    assert isinstance(ds[0], tuple)
    xs, ys = ds[1:4]                       # any index the tensors accept
    assert tl.equal(xs, x[1:4]) and ys.tolist() == [1, 2, 3]
    assert ds.tensors[0] is x


def test_tensor_dataset_non_contiguous():
    x = tl.randn(4, 6).t()                 # 6 rows, strided
    ds = D.TensorDataset(x)
    assert tl.equal(ds[2][0], x[2])


def test_tensor_dataset_size_mismatch():
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        D.TensorDataset(tl.zeros(3), tl.zeros(4))


def test_tensor_dataset_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.randn(6, 2).astype(np.float32)
    ours = D.TensorDataset(tl.from_numpy(x))
    theirs = torch.utils.data.TensorDataset(torch.from_numpy(x))
    assert len(ours) == len(theirs)
    assert type(ours[3]) is type(theirs[3]) and len(ours[3]) == len(theirs[3])
    np.testing.assert_array_equal(ours[3][0].numpy(), theirs[3][0].numpy())


# ---- StackDataset ------------------------------------------------------------------------------
def test_stack_dataset_tuple_and_dict():
    a, b = Squares(4), D.TensorDataset(tl.arange(4))
    tup = D.StackDataset(a, b)
    assert len(tup) == 4
    assert tup[2][0] == 4 and tup[2][1][0].item() == 2
    dic = D.StackDataset(sq=a, t=b)
    assert set(dic[3]) == {"sq", "t"} and dic[3]["sq"] == 9


def test_stack_dataset_getitems_uses_nested_getitems():
    inner = Batched(5)
    stacked = D.StackDataset(inner, Squares(5))
    assert stacked.__getitems__([1, 3]) == [(-1, 1), (-3, 9)]
    assert inner.calls == [[1, 3]]
    dic = D.StackDataset(x=Batched(5), y=Squares(5))
    assert dic.__getitems__([2]) == [{"x": -2, "y": 4}]


def test_stack_dataset_errors():
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        D.StackDataset()
    with pytest.raises(ValueError, match="both types are given"):
        D.StackDataset(Squares(2), b=Squares(2))
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        D.StackDataset(Squares(2), Squares(3))
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        D.StackDataset(a=Squares(2), b=Squares(3))

    class Short(Batched):
        def __getitems__(self, indices):
            return [0]
    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 1"):
        D.StackDataset(Short(3)).__getitems__([0, 1])


# ---- ConcatDataset -----------------------------------------------------------------------------
def test_concat_dataset_indexing():
    parts = [Squares(3), Squares(0), Squares(2), Squares(4)]
    cat = D.ConcatDataset(parts)
    assert cat.cumulative_sizes == [3, 3, 5, 9]
    flat = [p[i] for p in parts for i in range(len(p))]
    assert len(cat) == len(flat)
    assert [cat[i] for i in range(len(cat))] == flat
    assert [cat[-i] for i in range(1, len(cat) + 1)] == [flat[-i] for i in range(1, len(flat) + 1)]


def test_concat_dataset_errors():
    cat = D.ConcatDataset([Squares(2), Squares(2)])
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cat[-5]
    with pytest.raises(IndexError):
        cat[4]                              # past the end: the last dataset's own IndexError
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        D.ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        D.ConcatDataset([Squares(1), Stream([1])])
    with pytest.warns(FutureWarning):
        assert cat.cummulative_sizes == [2, 4]


def test_concat_dataset_matches_torch():
    torch = pytest.importorskip("torch")
    sizes = [3, 0, 5, 1]
    ours = D.ConcatDataset([Squares(n) for n in sizes])
    theirs = torch.utils.data.ConcatDataset([list(range(n)) for n in sizes])
    assert ours.cumulative_sizes == theirs.cumulative_sizes
    assert D.ConcatDataset.cumsum([Squares(n) for n in sizes]) == theirs.cumsum([[0] * n for n in sizes])


# ---- ChainDataset ------------------------------------------------------------------------------
def test_chain_dataset():
    chain = D.ChainDataset([Stream([1, 2]), Stream([]), Stream([3, 4, 5])])
    assert list(chain) == [1, 2, 3, 4, 5]
    assert list(chain) == [1, 2, 3, 4, 5]          # iterable again
    assert len(chain) == 5


def test_chain_dataset_rejects_map_style():
    chain = D.ChainDataset([Stream([1]), Squares(2)])
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(chain)
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        len(chain)


# ---- Subset ------------------------------------------------------------------------------------
def test_subset_indexing():
    base = Squares(10)
    sub = D.Subset(base, [7, 2, 2, 9])
    assert len(sub) == 4
    assert [sub[i] for i in range(4)] == [49, 4, 4, 81]
    assert sub.__getitems__([0, 3]) == [49, 81]


def test_subset_list_index_goes_to_dataset():
    x = tl.arange(10) * 10
    sub = D.Subset(D.TensorDataset(x), [5, 1, 8])
    (picked,) = sub[[2, 0]]
    assert picked.tolist() == [80, 50]


def test_subset_getitems_delegates():
    inner = Batched(10)
    sub = D.Subset(inner, [4, 6, 8])
    assert sub.__getitems__([2, 0]) == [-8, -4]
    assert inner.calls == [[8, 4]]


def test_subset_subclass_must_override_getitems():
    class Bad(D.Subset):
        def __getitem__(self, idx):
            return 0
    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        Bad(Squares(3), [0])

    class Good(Bad):
        def __getitems__(self, indices):
            return [0 for _ in indices]
    assert Good(Squares(3), [0])[0] == 0


# ---- random_split ------------------------------------------------------------------------------
def _check_partition(parts, n):
    seen = sorted(i for p in parts for i in p.indices)
    assert seen == list(range(n))


def test_random_split_lengths():
    parts = D.random_split(Squares(10), [3, 7], generator=tl.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert all(isinstance(p, D.Subset) for p in parts)
    _check_partition(parts, 10)
    assert [parts[0][i] for i in range(3)] == [parts[0].indices[i] ** 2 for i in range(3)]


@pytest.mark.parametrize("n,fractions", [(30, [0.3, 0.3, 0.4]), (10, [0.33, 0.33, 0.34]),
                                         (7, [0.5, 0.5]), (11, [0.1, 0.2, 0.3, 0.4]),
                                         (3, [0.25, 0.25, 0.25, 0.25])])
def test_random_split_fractions_match_torch(n, fractions):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = D.random_split(Squares(n), fractions, generator=tl.Generator().manual_seed(1))
        theirs = torch.utils.data.random_split(range(n), fractions,
                                               generator=torch.Generator().manual_seed(1))
    assert [len(p) for p in ours] == [len(p) for p in theirs]
    _check_partition(ours, n)


def test_random_split_fraction_remainder_round_robin():
    # floor(10 * 0.33) = 3 three times, 1 left over: it goes to the first split
    parts = D.random_split(Squares(10), [0.33, 0.33, 0.34], generator=tl.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [4, 3, 3]


def test_random_split_zero_length_warns():
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        parts = D.random_split(Squares(3), [1.0, 0.0])
    assert [len(p) for p in parts] == [3, 0]


def test_random_split_reproducible_and_uses_default_generator():
    a = D.random_split(Squares(50), [20, 30], generator=tl.Generator().manual_seed(5))
    b = D.random_split(Squares(50), [20, 30], generator=tl.Generator().manual_seed(5))
    c = D.random_split(Squares(50), [20, 30], generator=tl.Generator().manual_seed(6))
    assert a[0].indices == b[0].indices and a[0].indices != c[0].indices
    tl.manual_seed(3)
    d = D.random_split(Squares(50), [20, 30])
    tl.manual_seed(3)
    e = D.random_split(Squares(50), [20, 30])
    assert d[1].indices == e[1].indices


def test_random_split_errors():
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset"):
        D.random_split(Squares(5), [2, 2])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        D.random_split(Squares(5), [0.5, 1.5, -1.0])
