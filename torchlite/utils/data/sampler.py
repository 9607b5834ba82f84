"""Samplers (torch.utils.data.sampler): iterables of dataset indices (or, for
`BatchSampler`, of lists of indices) that decide the order in which a DataLoader reads."""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Generic, TypeVar

from ..._dtype import int64, float64
from ..._ops.creation import as_tensor, empty
from ..._ops.random import Generator, multinomial, randint, randperm

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence, Sized

    from ..._tensor import Tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

_T_co = TypeVar("_T_co", covariant=True)

# RandomSampler draws with replacement in chunks of this size, so that a long run of samples
# costs neither a huge tensor up front nor one generator call per sample
_REPLACEMENT_CHUNK = 32


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class Sampler(Generic[_T_co]):
    """Base class of samplers: subclasses implement `__iter__` (the indices, or batches of
    indices) and usually `__len__`."""

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1, in order."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _fresh_generator():
    """A generator seeded from the default generator (one draw from it), as PyTorch's
    samplers do when none is given."""
    seed = int(empty((), dtype=int64).random_().item())
    return Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """Random indices into `data_source`: a fresh permutation per pass without replacement
    (`num_samples` beyond the length takes further permutations), or `num_samples` uniform
    draws with replacement."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got replacement="
                            f"{self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        count = self.num_samples
        if self.replacement:
            for _ in range(count // _REPLACEMENT_CHUNK):
                yield from randint(high=n, size=(_REPLACEMENT_CHUNK,), dtype=int64,
                                   generator=generator).tolist()
            yield from randint(high=n, size=(count % _REPLACEMENT_CHUNK,), dtype=int64,
                               generator=generator).tolist()
        else:
            for _ in range(count // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[:count % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a new one each pass)."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices into `weights`, index i drawn with probability proportional to
    weights[i] (with or without replacement), via `torchlite.multinomial`."""

    def __init__(self, weights: Sequence[float] | Tensor, num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if not _is_int(num_samples) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got replacement="
                             f"{replacement}")
        weights_tensor = as_tensor(weights, dtype=float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        drawn = multinomial(self.weights, self.num_samples, self.replacement,
                            generator=self.generator)
        yield from iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size` (the last one shorter,
    unless `drop_last`)."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not _is_int(batch_size) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        indices = iter(self.sampler)
        if self.drop_last:
            # zip over batch_size references to one iterator: full batches only
            for batch in zip(*([indices] * self.batch_size)):
                yield list(batch)
            return
        batch = list(itertools.islice(indices, self.batch_size))
        while batch:
            yield batch
            batch = list(itertools.islice(indices, self.batch_size))

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
