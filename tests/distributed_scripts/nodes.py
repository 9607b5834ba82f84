"""Run by tests/test_distributed.py under two launchers (--nnodes 2): each rank reports
torchrun's variables and the sum of all ranks (a collective over both "nodes"), then exits
with the status given as argv[1] on rank 1 (0 elsewhere)."""
import os
import sys

import torchlite as tl
import torchlite.distributed as dist

dist.init_process_group("gloo")
rank, size = dist.get_rank(), dist.get_world_size()
total = tl.tensor([float(rank)])
dist.all_reduce(total)
env = " ".join(f"{k}={os.environ.get(k)}" for k in ("RANK", "WORLD_SIZE", "GROUP_RANK", "LOCAL_RANK",
                                                     "LOCAL_WORLD_SIZE", "MASTER_PORT"))
print(f"node-check rank {rank}/{size} {env} sum {int(total.item())}", flush=True)
dist.destroy_process_group()
sys.exit(int(sys.argv[1]) if rank == 1 and len(sys.argv) > 1 else 0)
