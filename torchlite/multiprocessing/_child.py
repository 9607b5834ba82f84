"""What each process of spawn runs: take its rank from mpiexec, load fn (importing the caller's
script as __mp_main__ when fn lives there), call fn(rank, *args); an exception is written for
the parent (error_<rank>.txt) and raised on."""
from __future__ import annotations

import os
import pickle
import runpy
import sys
import traceback
import types


def main(workdir: str) -> None:
    from ..distributed._entry import _set_environment
    _set_environment("127.0.0.1", 29500)
    rank = int(os.environ.get("RANK", "0"))
    # MPI starts before fn, so that a process that raises can abort the whole job: the others
    # may be waiting for it in a collective (a process that exits without MPI may leave them
    # waiting forever)
    from mpi4py import MPI
    try:
        main_file = os.path.join(workdir, "main_path.txt")
        if os.path.exists(main_file):
            # the caller's script, so that pickle finds __main__.fn: imported as __mp_main__
            # (its `if __name__ == "__main__":` block does not run), standing in for __main__
            with open(main_file) as f:
                path = f.read()
            sys.path.insert(0, os.path.dirname(path))
            module = types.ModuleType("__mp_main__")
            module.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
            sys.modules["__mp_main__"] = sys.modules["__main__"] = module
        with open(os.path.join(workdir, "payload.pkl"), "rb") as f:
            fn, args = pickle.load(f)
        fn(rank, *args)
    except BaseException:
        with open(os.path.join(workdir, f"error_{rank}.txt"), "w") as f:
            f.write(traceback.format_exc())
        traceback.print_exc()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)


if __name__ == "__main__":
    main(sys.argv[1])
