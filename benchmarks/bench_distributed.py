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


def _mlp(nn):
    """The benchmark's MLP (512-2048-2048-10: 5.3M parameters, 21 MB of float32 gradients),
    the same layers in either library."""
    return nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                         nn.Linear(2048, 10))


def _ddp_job(lib, dist, DDP, label, steps, batch):
    """One rank's DDP measurements in either library (lib: torchlite or torch, dist: its
    initialised distributed package, DDP: its DistributedDataParallel): a DDP step of the MLP
    on `batch` samples, the same step with no communication (no_sync), and an all-reduce of a
    tensor the size of all the gradients; the slowest rank's median of each, printed by rank 0."""
    world = dist.get_world_size()
    lib.manual_seed(0)
    model = DDP(_mlp(lib.nn))
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x, y = lib.randn(batch, 512), lib.randint(0, 10, (batch,))
    loss_fn = lib.nn.CrossEntropyLoss()
    grads_mb = sum(p.numel() for p in model.parameters()) * 4 / 2 ** 20

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    def local_step():
        with model.no_sync():
            step()
    flat = lib.ones(int(grads_mb * 1024 * 1024) // 4)
    cases = [("DDP step", step), ("same step in no_sync() (no communication)", local_step)]
    if world > 1:
        cases.append((f"all_reduce of {grads_mb:.1f} MB (all the gradients)", lambda: dist.all_reduce(flat)))
    rows = []
    for name, fn in cases:
        times = _time(fn, dist.barrier, steps, warmup=2)
        everyone = [None] * world
        dist.all_gather_object(everyone, times)
        slowest = [max(ts) for ts in zip(*everyone)]
        rows.append({"impl": name, "lib": label, "ranks": world, "median_s": statistics.median(slowest),
                     "threads": os.environ.get("OMP_NUM_THREADS", "")})
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(rows), flush=True)
    dist.destroy_process_group()


def worker_ddp(steps, batch):
    """Under mpiexec: torchlite's DistributedDataParallel (weak scaling: 2 ranks train on twice
    the batch of 1)."""
    import torchlite
    import torchlite.distributed as dist
    from torchlite.nn.parallel import DistributedDataParallel
    dist.init_process_group()
    _ddp_job(torchlite, dist, DistributedDataParallel, "torchlite", steps, batch)


def worker_torch_ddp(steps, batch, rank, world):
    """One of `world` processes of PyTorch's DistributedDataParallel on Gloo."""
    import torch
    import torch.distributed as tdist
    from torch.nn.parallel import DistributedDataParallel
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    tdist.init_process_group("gloo", rank=rank, world_size=world)
    _ddp_job(torch, tdist, DistributedDataParallel, "torch (gloo)", steps, batch)


def _results(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"no result in the output:\n{out}")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def drive(sizes, ranks, libnbc, ddp_steps, ddp_batch=64):
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
        # one process with all the cores, one with a rank's share of them, then the ranks
        for n, threads in sorted({(1, cores), (1, max(1, cores // ranks)), (ranks, max(1, cores // ranks))},
                                 key=lambda c: (c[0], -c[1])):
            denv = dict(env, OMP_NUM_THREADS=str(threads))
            step_args = ["--ddp-steps", str(ddp_steps), "--ddp-batch", str(ddp_batch)]
            out = subprocess.run(cmd[:2] + ["-n", str(n)] + cmd[4:] + [
                sys.executable, me, "--worker", "ddp", *step_args],
                capture_output=True, text=True, env=denv, timeout=600)
            ddp_rows += _results(out.stdout + out.stderr)
            if have_torch:
                genv = dict(denv, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
                procs = [subprocess.Popen([sys.executable, me, "--worker", "torch-ddp", "--rank", str(r),
                                           "--world", str(n), *step_args], stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True, env=genv) for r in range(n)]
                outs = [p.communicate(timeout=600)[0] for p in procs]
                ddp_rows += _results(outs[0])
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
        print(f"\nDDP training step, MLP 512-2048-2048-10 (5.3M parameters), {ddp_batch} samples per rank, "
              f"SGD; median of the slowest rank")
        for r in ddp_rows:
            print(f"  {r['lib']:12s} {r['ranks']} rank(s) x {r['threads']} thread(s)  {r['impl']:46s} "
                  f"{r['median_s'] * 1e3:8.1f}ms")
        share = str(max(1, cores // ranks))
        t = {(r["lib"], r["ranks"], r["threads"], r["impl"].split(" (")[0].split(" of ")[0]): r["median_s"]
             for r in ddp_rows}
        for lib in sorted({r["lib"] for r in ddp_rows}):
            one, many = t.get((lib, 1, str(cores), "DDP step")), t.get((lib, ranks, share, "DDP step"))
            if one and many:
                print(f"  {lib}: scaling efficiency 1 -> {ranks} ranks on these {cores} cores (samples/s, "
                      f"divided by {ranks}x the 1-process rate) {one / many:.2f}")
        many, reduce = t.get(("torchlite", ranks, share, "DDP step")), t.get(("torchlite", ranks, share, "all_reduce"))
        for threads, what in ((str(cores), "with all the cores"), (share, "with one rank's share of the cores")):
            one = t.get(("torchlite", 1, threads, "DDP step"))
            if one and many and reduce:
                bound = 1.3 * (one + reduce)
                print(f"  target: the {ranks}-rank step {many * 1e3:.1f} ms <= 1.3 x (the 1-process step {what} "
                      f"{one * 1e3:.1f} ms + the all-reduce {reduce * 1e3:.1f} ms) = {bound * 1e3:.1f} ms: "
                      f"{'met' if many <= bound else 'NOT met'}")


def main():
    """A worker (--worker) or the driver that starts them."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes-mb", type=float, nargs="+", default=[1, 64])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--worker", choices=["mpi", "gloo", "ddp", "torch-ddp"])
    p.add_argument("--ddp-steps", type=int, default=10, help="DDP training steps to time (0: none)")
    p.add_argument("--ddp-batch", type=int, default=64, help="samples per rank in the DDP steps")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--libnbc", default="1",
                   help="Open MPI's non-blocking all-reduce algorithm (0 = Open MPI's own choice, 1 = ring: "
                        "what torchlite.distributed sets); '' leaves the environment as it is")
    args = p.parse_args()
    if args.worker == "mpi":
        worker_mpi(args.sizes_mb)
    elif args.worker == "ddp":
        worker_ddp(args.ddp_steps, args.ddp_batch)
    elif args.worker == "torch-ddp":
        worker_torch_ddp(args.ddp_steps, args.ddp_batch, args.rank, args.world)
    elif args.worker == "gloo":
        worker_gloo(args.sizes_mb, args.rank, args.world)
    else:
        drive(args.sizes_mb, args.ranks, args.libnbc or None, args.ddp_steps, args.ddp_batch)


if __name__ == "__main__":
    main()
