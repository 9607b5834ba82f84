"""A job in which one rank fails: `fault.py MODE TOKEN`.  The last rank raises (MODE 'raise',
after init_process_group, while the others wait in a collective) or sleeps for ever and prints
'ready' (MODE 'sleep', for the launcher's Ctrl-C test).  TOKEN only marks the processes, so the
test can look for leftovers in /proc."""
import sys
import time

import torchlite as torch
import torchlite.distributed as dist

mode, token = sys.argv[1], sys.argv[2]
dist.init_process_group()
rank, n = dist.get_rank(), dist.get_world_size()
if mode == "raise":
    if rank == n - 1:
        time.sleep(0.5)
        raise ValueError(f"boom ({token})")
    t = torch.ones(4)
    dist.all_reduce(t)          # never completes: the last rank does not join
    print("unreachable", flush=True)
elif mode == "sleep":
    dist.barrier()
    print(f"ready rank {rank}", flush=True)
    time.sleep(120)
