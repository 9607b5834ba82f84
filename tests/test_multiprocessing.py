"""torchlite.multiprocessing.spawn: processes that are the ranks of one MPI job, fn taken from
the calling script, exceptions raised in the caller; the job cleans up after itself."""
import os
import shutil
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "distributed_scripts", "spawn_job.py")


def _needs_mpi():
    pytest.importorskip("mpi4py")
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not (os.path.exists(here) or shutil.which("mpiexec")):
        pytest.skip("no mpiexec")


def _run(*args, timeout=120):
    proc = subprocess.Popen([sys.executable, SCRIPT, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"spawn_job.py {args} did not finish in {timeout} s")
    return proc.returncode, out


def test_spawn_runs_ranks_of_one_job(tmp_path):
    _needs_mpi()
    rc, out = _run(str(tmp_path))
    assert rc == 0 and "DONE" in out, out
    for rank in (0, 1):
        r, size, total = (tmp_path / f"rank{rank}.txt").read_text().split()
        assert int(r) == rank and int(size) == 2 and float(total) == 1.0


def test_spawn_raises_the_process_error(tmp_path):
    _needs_mpi()
    rc, out = _run(str(tmp_path), "--fail")
    assert rc == 3, out
    assert "RAISED 1 ValueError: process 1 was told to fail" in out, out


def test_spawn_argument_errors():
    import torchlite.multiprocessing as mp
    with pytest.raises(ValueError, match="nprocs"):
        mp.spawn(print, nprocs=0)
    with pytest.raises(TypeError, match="callable"):
        mp.spawn(3)
    assert mp.Queue is __import__("multiprocessing").Queue
