"""What each rank runs under the launcher (torchlite.distributed.run): set torchrun's
environment variables from what mpiexec put in the environment, then run the user's script as
__main__ (or a module with -m).  MPI itself is not started here: init_process_group does it."""
from __future__ import annotations

import os
import runpy
import sys


def _first_int(*names):
    for name in names:
        value = os.environ.get(name)
        if value is not None and value.strip().isdigit():
            return int(value)
    return None


def _set_environment(master_addr, master_port, nproc_per_node=None):
    rank = _first_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK")
    size = _first_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")
    local = _first_int("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK",
                       "MV2_COMM_WORLD_LOCAL_RANK")
    local_size = _first_int("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMIX_LOCAL_SIZE",
                            "MV2_COMM_WORLD_LOCAL_SIZE")
    group = 0 if rank is not None else None
    if nproc_per_node and rank is not None:
        # the launcher numbers ranks node by node; LOCAL_RANK stays MPI's count on this machine
        # (they agree unless two "nodes" share a machine, where distinct local ranks matter)
        group = rank // nproc_per_node
    for name, value in (("RANK", rank), ("WORLD_SIZE", size), ("LOCAL_RANK", local),
                        ("LOCAL_WORLD_SIZE", local_size), ("GROUP_RANK", group)):
        if value is not None:
            os.environ[name] = str(value)
    os.environ["MASTER_ADDR"] = master_addr
    os.environ["MASTER_PORT"] = str(master_port)


def main(argv: list[str]) -> None:
    """argv: [--master-addr A] [--master-port P] [--nproc-per-node N] [-m] target [args...]"""
    addr, port, module, nproc = "127.0.0.1", "29500", False, None
    while argv and argv[0] in ("--master-addr", "--master-port", "--nproc-per-node", "-m"):
        flag = argv.pop(0)
        if flag == "-m":
            module = True
        elif flag == "--master-addr":
            addr = argv.pop(0)
        elif flag == "--nproc-per-node":
            nproc = int(argv.pop(0))
        else:
            port = argv.pop(0)
    if not argv:
        raise SystemExit("torchlite.distributed._entry: no script given")
    _set_environment(addr, port, nproc)
    target, rest = argv[0], argv[1:]
    if module:
        sys.argv = [target] + rest
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target] + rest
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
