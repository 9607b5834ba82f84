"""torchlite.multiprocessing.spawn from a script: each process writes its rank and the
all_reduce of its rank; with --fail, process 1 raises."""
import os
import sys

import torchlite as torch
import torchlite.distributed as dist
import torchlite.multiprocessing as mp


def work(rank, out_dir, fail):
    if fail and rank == 1:
        raise ValueError("process 1 was told to fail")
    dist.init_process_group("mpi")
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    with open(os.path.join(out_dir, f"rank{rank}.txt"), "w") as f:
        f.write(f"{rank} {dist.get_world_size()} {t.item()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    out, fail = sys.argv[1], "--fail" in sys.argv
    try:
        mp.spawn(work, args=(out, fail), nprocs=2)
    except mp.ProcessRaisedException as e:
        print("RAISED", e.error_index, str(e).strip().splitlines()[-1])
        sys.exit(3)
    print("DONE")
