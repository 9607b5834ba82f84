"""DistributedSampler (torch.utils.data.distributed): each of `num_replicas` processes reads
its own, equally long share of a dataset."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..._ops.random import Generator, randperm
from .sampler import Sampler

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .dataset import Dataset

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """The indices for process `rank` of `num_replicas`: every num_replicas-th index of the
    (shuffled, with seed + epoch, when `shuffle`) index list, which is first padded by
    repeating its start (or, with `drop_last`, cut) to a multiple of num_replicas.

    torchlite has no process groups, so `num_replicas` and `rank` must be given.  Call
    `set_epoch(epoch)` before each epoch to get a new order."""

    def __init__(self, dataset: Dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed as dist
            if not dist.is_initialized():
                raise RuntimeError("DistributedSampler: the default process group is not "
                                   "initialized (torchlite.distributed.init_process_group()); "
                                   "initialize it, or pass num_replicas and rank explicitly")
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(self.dataset)
        if self.drop_last and n % self.num_replicas != 0:
            # the largest length that every rank can have in full
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def _all_indices(self):
        n = len(self.dataset)
        if not self.shuffle:
            return list(range(n))
        g = Generator().manual_seed(self.seed + self.epoch)
        return randperm(n, generator=g).tolist()

    def __iter__(self) -> Iterator[int]:
        indices = self._all_indices()
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match "
                                 f"total_size ({self.total_size})")
        mine = indices[self.rank:self.total_size:self.num_replicas]
        if len(mine) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(mine)}) does not match "
                                 f"num_samples ({self.num_samples})")
        return iter(mine)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use `epoch` in the shuffling seed, so each epoch gets its own order (the same on
        every rank)."""
        self.epoch = epoch
