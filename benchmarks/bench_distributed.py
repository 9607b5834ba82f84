"""all_reduce on 2 ranks: torchlite.distributed vs mpi4py on NumPy arrays (the same job), and vs
PyTorch's torch.distributed on Gloo (a job of its own) where torch is installed.

    python benchmarks/bench_distributed.py                 # starts the jobs, prints a table
    python benchmarks/bench_distributed.py --sizes-mb 1 64 --ranks 2
    python benchmarks/bench_distributed.py --libnbc 0       # Open MPI's default non-blocking algorithm

Each measurement: a barrier, then one float32 SUM all-reduce, timed on every rank; the number
reported is the median over the iterations of the slowest rank's time.  "bus bandwidth" is
PyTorch/NCCL-tests' convention: bytes * 2(p-1)/p / time, what each rank's link carries in a
ring all-reduce."""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _iters(mb):
    return max(5, min(200, int(200 / mb)))


def _time(fn, barrier, n, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        barrier()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def worker_mpi(sizes):
    """Under mpiexec: mpi4py on NumPy, torchlite blocking, torchlite async_op=True + wait()."""
    import numpy as np
    from mpi4py import MPI
    import torchlite as torch
    import torchlite.distributed as dist
    dist.init_process_group()
    comm = MPI.COMM_WORLD
    rows = []
    for mb in sizes:
        n = int(mb * 1024 * 1024) // 4
        a = np.ones(n, dtype=np.float32)
        t = torch.ones(n)
        cases = {
            "mpi4py Allreduce (NumPy)": lambda: comm.Allreduce(MPI.IN_PLACE, a, MPI.SUM),
            "torchlite all_reduce": lambda: dist.all_reduce(t),
            "torchlite all_reduce async_op + wait": lambda: dist.all_reduce(t, async_op=True).wait(),
            "mpi4py Iallreduce + Wait (NumPy)": lambda: comm.Iallreduce(MPI.IN_PLACE, a, MPI.SUM).Wait(),
        }
        for name, fn in cases.items():
            times = _time(fn, comm.Barrier, _iters(mb))
            slowest = [max(ts) for ts in zip(*comm.allgather(times))]
            rows.append({"impl": name, "mb": mb, "median_s": statistics.median(slowest),
                         "ranks": comm.Get_size()})
    if comm.Get_rank() == 0:
        print("RESULT " + json.dumps(rows), flush=True)
    dist.destroy_process_group()


def worker_gloo(sizes, rank, world):
    """One of `world` processes of a torch.distributed Gloo job."""
    import torch
    import torch.distributed as tdist
    tdist.init_process_group("gloo", rank=rank, world_size=world)
    rows = []
    for mb in sizes:
        t = torch.ones(int(mb * 1024 * 1024) // 4)
        times = _time(lambda: tdist.all_reduce(t), tdist.barrier, _iters(mb))
        everyone = [None] * world
        tdist.all_gather_object(everyone, times)
        slowest = [max(ts) for ts in zip(*everyone)]
        rows.append({"impl": "torch.distributed gloo all_reduce", "mb": mb,
                     "median_s": statistics.median(slowest), "ranks": world})
    if rank == 0:
        print("RESULT " + json.dumps(rows), flush=True)
    tdist.destroy_process_group()


def worker_ddp(steps, global_batch):
    """Under mpiexec: training steps of an MLP (512-2048-2048-10, 5.3M parameters, 21 MB of
    float32 gradients) under DistributedDataParallel, each rank on global_batch / ranks samples;
    the same steps inside no_sync() (no communication) show how much of it is exposed."""
    import torchlite as torch
    import torchlite.distributed as dist
    from torchlite import nn
    from torchlite.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group()
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                              nn.Linear(2048, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(global_batch // world, 512), torch.randint(0, 10, (global_batch // world,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    def local_step():
        with model.no_sync():
            step()
    rows = []
    for name, fn in (("DDP step", step), ("same step in no_sync() (no communication)", local_step)):
        times = _time(fn, dist.barrier, steps, warmup=2)
        everyone = [None] * world
        dist.all_gather_object(everyone, times)
        slowest = [max(ts) for ts in zip(*everyone)]
        rows.append({"impl": name, "ranks": world, "median_s": statistics.median(slowest),
                     "threads": os.environ.get("OMP_NUM_THREADS", "")})
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(rows), flush=True)
    dist.destroy_process_group()


def _results(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"no result in the output:\n{out}")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def drive(sizes, ranks, libnbc, ddp_steps):
    """Start the MPI job, the Gloo job (where torch is installed) and the DDP jobs; print the
    table."""
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    if libnbc is not None:
        env["OMPI_MCA_coll_libnbc_iallreduce_algorithm"] = libnbc
    me = os.path.abspath(__file__)
    size_args = ["--sizes-mb", *map(str, sizes)]
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.access(mpiexec, os.X_OK):
        mpiexec = shutil.which("mpiexec")
    cmd = [mpiexec, "--oversubscribe", "-n", str(ranks)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    out = subprocess.run(cmd + [sys.executable, me, "--worker", "mpi", *size_args], capture_output=True,
                         text=True, env=env, timeout=600)
    rows = _results(out.stdout + out.stderr)
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    if have_torch:
        genv = dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
        procs = [subprocess.Popen([sys.executable, me, "--worker", "gloo", "--rank", str(r), "--world", str(ranks),
                                   *size_args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env=genv) for r in range(ranks)]
        outs = [p.communicate(timeout=600)[0] for p in procs]
        rows += _results(outs[0])
    ddp_rows = []
    if ddp_steps:
        cores = os.cpu_count() or 1
        for n in sorted({1, ranks}):
            denv = dict(env, OMP_NUM_THREADS=str(max(1, cores // n)))
            out = subprocess.run(cmd[:2] + ["-n", str(n)] + cmd[4:] + [
                sys.executable, me, "--worker", "ddp", "--ddp-steps", str(ddp_steps)],
                capture_output=True, text=True, env=denv, timeout=600)
            ddp_rows += _results(out.stdout + out.stderr)
    print(f"all_reduce (float32 SUM), {ranks} ranks on one machine ({os.cpu_count()} cores), OMP_NUM_THREADS="
          f"{env['OMP_NUM_THREADS']}, OMPI_MCA_coll_libnbc_iallreduce_algorithm="
          f"{env.get('OMPI_MCA_coll_libnbc_iallreduce_algorithm', '(unset)')}; median of the slowest rank's "
          f"time per call")
    print(f"{'implementation':40s} {'size':>7s} {'time':>10s} {'algbw':>10s} {'busbw':>10s}")
    for r in sorted(rows, key=lambda r: (r["mb"], r["impl"])):
        nbytes = r["mb"] * 1024 * 1024
        alg = nbytes / r["median_s"] / 1e9
        bus = alg * 2 * (r["ranks"] - 1) / r["ranks"]
        print(f"{r['impl']:40s} {r['mb']:>5g}MB {r['median_s'] * 1e3:>8.3f}ms {alg:>7.2f}GB/s {bus:>7.2f}GB/s")
    if ddp_rows:
        print("\nDDP training step, MLP 512-2048-2048-10 (5.3M parameters), global batch 256, SGD; "
              "median of the slowest rank")
        for r in ddp_rows:
            print(f"  {r['ranks']} rank(s) x {r['threads']} thread(s)  {r['impl']:42s} {r['median_s'] * 1e3:8.1f}ms")


def main():
    """A worker (--worker) or the driver that starts them."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes-mb", type=float, nargs="+", default=[1, 64])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--worker", choices=["mpi", "gloo", "ddp"])
    p.add_argument("--ddp-steps", type=int, default=10, help="DDP training steps to time (0: none)")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--libnbc", default="1",
                   help="Open MPI's non-blocking all-reduce algorithm (0 = Open MPI's own choice, 1 = ring: "
                        "what torchlite.distributed sets); '' leaves the environment as it is")
    args = p.parse_args()
    if args.worker == "mpi":
        worker_mpi(args.sizes_mb)
    elif args.worker == "ddp":
        worker_ddp(args.ddp_steps, 256)
    elif args.worker == "gloo":
        worker_gloo(args.sizes_mb, args.rank, args.world)
    else:
        drive(args.sizes_mb, args.ranks, args.libnbc or None, args.ddp_steps)


if __name__ == "__main__":
    main()
