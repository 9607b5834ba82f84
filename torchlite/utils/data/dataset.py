"""Datasets (torch.utils.data.dataset): the map-style `Dataset` (indexable, with a length),
the `IterableDataset` (a stream), and the ways of combining them: `TensorDataset`,
`StackDataset`, `ConcatDataset`, `ChainDataset`, `Subset` and `random_split`."""
from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import TYPE_CHECKING, Generic, TypeVar

from ..._ops.random import default_generator, randperm

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence, Sized
    from typing import Any

    from ..._ops.random import Generator
    from ..._tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]

_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """A map from keys (usually the integers 0 .. len-1) to samples.

    Subclasses implement `__getitem__` and usually `__len__`; they may add
    `__getitems__(indices) -> list of samples`, which the DataLoader then calls once per
    batch instead of `__getitem__` once per sample.  `a + b` is `ConcatDataset([a, b])`."""

    def __getitem__(self, index: Any) -> _T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[_T_co]) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co]):
    """A dataset that is a stream of samples: subclasses implement `__iter__`.

    With `num_workers > 0` every worker process iterates its own copy, so a dataset that
    should not yield duplicates splits its work with `get_worker_info()` (in `__iter__` or in
    the loader's `worker_init_fn`).  `a + b` is `ChainDataset([a, b])`."""

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset[_T_co]) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows (first-dimension slices) of tensors of the same length:
    `ds[i] == (t0[i], t1[i], ...)`."""

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Datasets of the same length zipped together: `StackDataset(a, b)[i] == (a[i], b[i])`,
    `StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}`."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(dataset) for dataset in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def _named_parts(self):
        if isinstance(self.datasets, dict):
            return list(self.datasets.items())
        return list(enumerate(self.datasets))

    def __getitem__(self, index: Any) -> tuple[Any, ...] | dict[str, Any]:
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: list[Any]) -> list[tuple[Any, ...] | dict[str, Any]]:
        columns = []   # one list of len(indices) values per part
        for _, dataset in self._named_parts():
            if callable(getattr(dataset, "__getitems__", None)):
                items = dataset.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch. Expected "
                                     f"{len(indices)}, got {len(items)}")
                columns.append(items)
            else:
                columns.append([dataset[idx] for idx in indices])
        if isinstance(self.datasets, dict):
            keys = list(self.datasets)
            return [dict(zip(keys, row)) for row in zip(*columns)]
        return [tuple(row) for row in zip(*columns)]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after the other; `cumulative_sizes[k]` is the total length of
    the first k+1 of them.  Negative indices count from the end."""

    @staticmethod
    def cumsum(sequence: Iterable[Sized]) -> list[int]:
        """The running totals of the lengths of `sequence`'s datasets."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]

    @property
    def cummulative_sizes(self) -> list[int]:
        warnings.warn("cummulative_sizes attribute is renamed to cumulative_sizes",
                      FutureWarning, stacklevel=2)
        return self.cumulative_sizes


def _check_iterable(dataset):
    if not isinstance(dataset, IterableDataset):
        raise AssertionError("ChainDataset only supports IterableDataset")


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other, chained lazily while iterating."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            _check_iterable(d)
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            _check_iterable(d)
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of `dataset` at `indices`: `Subset(ds, idx)[i] == ds[idx[i]]`."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        # a subclass that changes __getitem__ must change __getitems__ too, or the DataLoader
        # (which prefers __getitems__) would bypass its __getitem__
        if (type(self).__getitem__ is not Subset.__getitem__
                and type(self).__getitems__ is Subset.__getitems__):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. When "
                "subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. A "
                "simple implementation:\n\ndef __getitems__(self, indices):\n    return "
                "[self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx: int | list[int]) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[Any]:
        outer = [self.indices[idx] for idx in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(outer)
        return [self.dataset[idx] for idx in outer]

    def __len__(self) -> int:
        return len(self.indices)


def _lengths_from_fractions(fractions, total):
    """Split `total` items by `fractions` (summing to 1): floor(total * f) each, then the
    remainder handed out one by one, round robin from the first split."""
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(total * frac))
    for i in range(total - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty "
                          f"dataset.", stacklevel=3)
    return lengths


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: Generator | None = default_generator) -> list[Subset]:
    """Randomly split `dataset` into non-overlapping `Subset`s of the given lengths, or of
    the given fractions of its length when `lengths` sums to 1 (see `_lengths_from_fractions`
    for where the rounding remainder goes).  The permutation comes from
    `torchlite.randperm(..., generator=generator)`."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(lengths, len(dataset))
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]

