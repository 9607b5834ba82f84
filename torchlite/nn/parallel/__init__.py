"""torchlite.nn.parallel: DistributedDataParallel (data-parallel training over
torchlite.distributed, on MPI)."""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
