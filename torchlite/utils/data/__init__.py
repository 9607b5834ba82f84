"""torchlite.utils.data (torch.utils.data): datasets, samplers and the DataLoader.

    from torchlite.utils.data import TensorDataset, DataLoader
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, num_workers=2)
    for xb, yb in loader:
        ...
"""
from .dataloader import DataLoader, default_collate, default_convert, get_worker_info
from ._fetch import _DatasetKind
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
           "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
           "WeightedRandomSampler", "_DatasetKind", "default_collate", "default_convert",
           "get_worker_info", "random_split"]
