"""torchlite.nn.parallel: DataParallel (one process, the CUDA devices of one machine: scatter,
replicate, parallel_apply, gather) and DistributedDataParallel (data-parallel training over
torchlite.distributed, on MPI)."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter

__all__ = ["replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel",
           "DistributedDataParallel"]
