"""init_process_group and friends under mpiexec (2 ranks or more): the checks against MPI's
ranks, the backends, timeouts on Work.wait, the DEBUG=DETAIL cross-rank checks, and
DistributedSampler fed from get_world_size/get_rank.  Prints `OK <name>` lines."""
import datetime
import os
import sys
import warnings

from mpi4py import MPI

import torchlite as torch
import torchlite.distributed as dist

RANK, N = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
assert N >= 2, "run with 2 ranks or more"


def raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        return str(e)
    raise AssertionError(f"{getattr(fn, '__name__', fn)} did not raise {exc.__name__}")


# ---- before init ------------------------------------------------------------------------------
assert dist.is_available() and dist.is_mpi_available() and not dist.is_nccl_available()
assert not dist.is_initialized() and dist.group.WORLD is None
assert "not been initialized" in raises(ValueError, dist.get_rank)
raises(ValueError, dist.all_reduce, torch.ones(1))
assert dist.Backend("MPI") == "mpi" and dist.Backend.GLOO == "gloo"
raises(ValueError, dist.Backend, "smoke-signals")

# ---- what the environment or the arguments say must agree with MPI ------------------------------
os.environ["RANK"] = str(RANK + 1)
msg = raises(ValueError, dist.init_process_group)
assert f"RANK={RANK + 1}" in msg and f"rank={RANK}" in msg, msg
os.environ["RANK"] = str(RANK)
os.environ["WORLD_SIZE"] = str(N + 3)
msg = raises(ValueError, dist.init_process_group, init_method="env://")
assert f"WORLD_SIZE={N + 3}" in msg and f"world_size={N}" in msg, msg
del os.environ["WORLD_SIZE"], os.environ["RANK"]
msg = raises(ValueError, dist.init_process_group, world_size=N + 1, rank=RANK)
assert str(N + 1) in msg and str(N) in msg, msg
raises(ValueError, dist.init_process_group, init_method=f"tcp://127.0.0.1:29500?rank={RANK + 1}")
raises(ValueError, dist.init_process_group, init_method="carrier-pigeon://coop")
assert "nccl" in raises(RuntimeError, dist.init_process_group, backend="nccl")
assert not dist.is_initialized()
print("OK consistency checks", flush=True)

# ---- gloo is MPI, with one warning -------------------------------------------------------------
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dist.init_process_group(backend="gloo", init_method="tcp://127.0.0.1:29500", world_size=N, rank=RANK,
                            timeout=datetime.timedelta(seconds=60))
assert [w for w in caught if "gloo" in str(w.message)], [str(w.message) for w in caught]
assert dist.get_backend() == "mpi" and dist.get_world_size() == N and dist.get_rank() == RANK
assert sys.excepthook is not sys.__excepthook__          # aborts the job on an uncaught error
raises(ValueError, dist.init_process_group)              # twice
dist.destroy_process_group()
assert sys.excepthook is sys.__excepthook__ and not dist.is_initialized()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dist.init_process_group("gloo")
assert not [w for w in caught if "gloo" in str(w.message)]     # once per process
print("OK gloo backend maps to MPI", flush=True)

# ---- Work: is_completed without blocking, wait with a timeout ----------------------------------
if RANK == 0:
    got = torch.zeros(3)
    work = dist.irecv(got, src=1, tag=99)
    assert not work.is_completed()
    msg = raises(RuntimeError, work.wait, datetime.timedelta(seconds=0.2))
    assert "timed out" in msg, msg
dist.barrier()
if RANK == 1:
    dist.send(torch.arange(3.0), dst=0, tag=99)
if RANK == 0:
    assert work.wait() and work.is_completed() and got.tolist() == [0.0, 1.0, 2.0]
print("OK work timeout", flush=True)
dist.destroy_process_group()

# ---- TORCHLITE_DISTRIBUTED_DEBUG=DETAIL: mismatched collectives raise on every rank -------------
os.environ["TORCHLITE_DISTRIBUTED_DEBUG"] = "DETAIL"
dist.init_process_group()
msg = raises(RuntimeError, dist.all_reduce, torch.ones(2 + RANK))
assert "disagree" in msg and "rank 1" in msg, msg
msg = raises(RuntimeError, dist.all_reduce, torch.ones(2, dtype=torch.float64 if RANK else torch.float32))
assert "float64" in msg, msg
splits = [2] * N
if RANK == 0:
    splits = [1] + [2] * (N - 2) + [3]
msg = raises(RuntimeError, dist.all_to_all_single, torch.zeros(2 * N), torch.zeros(2 * N), splits, splits)
assert "expects" in msg, msg
t = torch.ones(3)
dist.all_reduce(t)                       # matching calls still work
assert t.tolist() == [float(N)] * 3
dist.destroy_process_group()
del os.environ["TORCHLITE_DISTRIBUTED_DEBUG"]
print("OK debug detail checks", flush=True)

# ---- DistributedSampler with the group's size and rank ----------------------------------------
dist.init_process_group()
from torchlite.utils.data import DistributedSampler  # noqa: E402

sampler = DistributedSampler(range(10), num_replicas=dist.get_world_size(), rank=dist.get_rank(), shuffle=False)
mine = list(sampler)
everyone = [None] * N
dist.all_gather_object(everyone, mine)
assert sorted(i for part in everyone for i in part)[:10] == list(range(10)) and len(set(map(len, everyone))) == 1
dist.destroy_process_group()
print(f"OK setup checks (rank {RANK})", flush=True)
