"""Thread control: set_num_threads/get_num_threads, and parallel regions sized to the cores
other processes leave free (torchlite/_core/kernels/busy_cpus.h).  The speed this buys is
measured by benchmarks/bench_contention.py, not here; these tests check the decision and that
results do not depend on it."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import torchlite as tl
from torchlite._core import parallel

LINUX = sys.platform.startswith("linux")


def _owns_every_cpu():
    return LINUX and len(os.sched_getaffinity(0)) == os.cpu_count()


def test_usable_threads_never_exceed_the_thread_count():
    for n in (1, 2):
        previous = tl.get_num_threads()
        tl.set_num_threads(n)
        try:
            assert 1 <= parallel.usable_threads() <= n
        finally:
            tl.set_num_threads(previous)


@pytest.mark.skipif(not _owns_every_cpu() or (os.cpu_count() or 1) < 2,
                    reason="needs Linux, 2+ CPUs and an affinity mask covering all of them")
def test_a_core_kept_busy_elsewhere_is_left_out():
    # the count covers windows in which this process works: keep multiplying meanwhile
    a = tl.randn(256, 256)
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        previous = parallel.set_adaptive_threads(True)
        deadline = time.monotonic() + 10
        while parallel.usable_threads() >= tl.get_num_threads() and time.monotonic() < deadline:
            a @ a
        assert parallel.usable_threads() <= tl.get_num_threads() - 1
        # and the switch turns it off: the full count again, busy core or not
        parallel.set_adaptive_threads(False)
        assert parallel.usable_threads() == tl.get_num_threads()
        parallel.set_adaptive_threads(previous)
    finally:
        spinner.kill()
        spinner.wait()


def test_the_environment_switch_turns_adaptation_off():
    code = ("from torchlite._core import parallel as p\n"
            "print(p.set_adaptive_threads(True))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, TORCHLITE_ADAPTIVE_THREADS="0")).stdout
    assert out.strip() == "False"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items()
                              if k != "TORCHLITE_ADAPTIVE_THREADS"}).stdout
    assert out.strip() == "True"


def test_results_are_the_same_whatever_the_regions_get():
    # a reduction, an elementwise op and a GEMM big enough to be split among threads
    rng = np.random.default_rng(0)
    a = tl.from_numpy(rng.standard_normal((512, 700)).astype(np.float32))
    b = tl.from_numpy(rng.standard_normal((700, 300)).astype(np.float32))
    previous, threads = parallel.set_adaptive_threads(False), tl.get_num_threads()
    try:
        full = [(a @ b).numpy(), a.exp().sum(dim=0).numpy(), a.sum().item()]
        tl.set_num_threads(1)
        one = [(a @ b).numpy(), a.exp().sum(dim=0).numpy(), a.sum().item()]
    finally:
        tl.set_num_threads(threads)
        parallel.set_adaptive_threads(previous)
    np.testing.assert_array_equal(full[1], one[1])
    assert full[2] == one[2]
    np.testing.assert_allclose(full[0], one[0], rtol=1e-5, atol=1e-4)
