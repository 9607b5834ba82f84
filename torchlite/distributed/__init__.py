"""torchlite.distributed: PyTorch's torch.distributed on MPI (through mpi4py), for CPU tensors.

    import torchlite as torch
    import torchlite.distributed as dist

    dist.init_process_group()            # ranks and world size come from MPI
    t = torch.ones(4) * dist.get_rank()
    dist.all_reduce(t)                   # in place, on every rank

Start the processes with `python -m torchlite.distributed.run --nproc-per-node N script.py`
(or `mpiexec -n N python script.py`).  `import torchlite.distributed` does not start MPI;
init_process_group does.  docs/distributed.md has the design, the launcher, the fault handling
and a cost model; torchlite.nn.parallel.DistributedDataParallel trains a model on it."""
from __future__ import annotations

from ._backend import (Backend, ProcessGroup, GroupMember, group, init_process_group,
                       destroy_process_group, is_initialized, is_available, is_mpi_available,
                       is_gloo_available, is_nccl_available, is_torchelastic_launched,
                       is_backend_available, get_rank, get_world_size, get_backend, new_group,
                       get_process_group_ranks, get_global_rank, get_group_rank, default_pg_timeout)
from ._collectives import (ReduceOp, all_reduce, broadcast, reduce, all_gather, all_gather_into_tensor,
                           reduce_scatter, reduce_scatter_tensor, gather, scatter, all_to_all_single,
                           all_to_all, send, recv, isend, irecv, barrier, broadcast_object_list,
                           all_gather_object, gather_object, scatter_object_list)
from ._work import Work
from ._grad_bucket import GradBucket, BuiltinCommHookType

__all__ = ["Backend", "ProcessGroup", "GroupMember", "group", "init_process_group",
           "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
           "is_gloo_available", "is_nccl_available", "is_torchelastic_launched", "is_backend_available",
           "get_rank", "get_world_size", "get_backend", "new_group", "get_process_group_ranks",
           "get_global_rank", "get_group_rank", "default_pg_timeout", "ReduceOp", "all_reduce",
           "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single", "all_to_all", "send",
           "recv", "isend", "irecv", "barrier", "broadcast_object_list", "all_gather_object",
           "gather_object", "scatter_object_list", "Work", "GradBucket", "BuiltinCommHookType"]


def __getattr__(name):
    # torch.distributed.algorithms (the DDP communication hooks) loads on first use
    if name == "algorithms":
        import importlib
        return importlib.import_module(f"{__name__}.algorithms")
    raise AttributeError(f"module 'torchlite.distributed' has no attribute '{name}'")
