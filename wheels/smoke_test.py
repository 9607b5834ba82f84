"""Smoke test of an INSTALLED torchlite (run from outside the source tree).

Checks that the import comes from site-packages, prints show_config(), compares a few ops
with NumPy, and checks that OpenMP really runs in parallel with the libgomp vendored in the
wheel.  Exits non-zero on the first failed check.  Used by wheels/build_linux.sh; runs
anywhere:  python wheels/smoke_test.py [--expect-threads N]
"""
import argparse
import os
import sys
import time

# keep NumPy's BLAS from starting threads, so that new OS threads can only be OpenMP's
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402


def os_threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


THREADS_BEFORE_TORCHLITE = os_threads()


def check(cond, what):
    print(("  ok    " if cond else "  FAIL  ") + what)
    if not cond:
        sys.exit(1)


def loaded_libraries():
    """Shared objects mapped into this process (Linux only; [] elsewhere)."""
    try:
        with open("/proc/self/maps") as f:
            return sorted({line.split()[-1] for line in f if ".so" in line})
    except OSError:
        return []


def check_install(tl):
    where = os.path.dirname(tl.__file__)
    print(f"torchlite {tl.__version__} from {where}")
    check("site-packages" in where or "dist-packages" in where,
          "imported from an installed copy, not a source tree")
    check(not os.path.exists(os.path.join(where, "..", "setup.py")), "no setup.py next to the package")
    tl.show_config()


def check_ops(tl):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal((200,)).astype(np.float32)
    ta, tb = tl.from_numpy(a), tl.from_numpy(b)
    np.testing.assert_allclose((ta + tb).numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose((ta * 2.5 - tb).numpy(), a * 2.5 - b, rtol=1e-6)
    np.testing.assert_allclose(tl.exp(ta).numpy(), np.exp(a), rtol=1e-5)
    np.testing.assert_allclose(ta.t().contiguous().numpy(), a.T)
    np.testing.assert_array_equal(tl.where(ta > 0, ta, tb).numpy(), np.where(a > 0, a, b))
    np.testing.assert_array_equal(ta[::3, 1::2].to(tl.float64).numpy(), a[::3, 1::2].astype(np.float64))
    check(True, "elementwise ops, broadcasting, views and casts match NumPy")
    # ops other families add: checked when this build has them
    optional = {
        "sum": lambda: np.testing.assert_allclose(ta.sum(1).numpy(), a.sum(1), rtol=1e-4),
        "matmul": lambda: np.testing.assert_allclose((ta @ ta.t()).numpy(), a @ a.T, rtol=1e-3, atol=1e-3),
        "from_dlpack": lambda: np.testing.assert_array_equal(tl.from_dlpack(a).numpy(), a),
    }
    for name, run in optional.items():
        if hasattr(tl, name):
            run()
            check(True, f"{name} matches NumPy")
        else:
            print(f"  skip  {name} (not in this build)")


def check_openmp(tl, expect_threads):
    from torchlite._config import config
    cfg = config()
    check(cfg["openmp"], "built with OpenMP")
    n = tl.get_num_threads()
    check(n >= expect_threads, f"get_num_threads() = {n} >= {expect_threads}")
    big = tl.from_numpy(np.random.default_rng(1).standard_normal(1 << 22).astype(np.float32))
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(20):
        tl.exp(big)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    after = os_threads()
    print(f"  info  20 x exp(4M floats): wall {wall * 1e3:.0f} ms, cpu {cpu * 1e3:.0f} ms, "
          f"cpu/wall {cpu / wall:.2f} (a busy machine lowers this)")
    if expect_threads > 1 and after > 0:
        check(after > THREADS_BEFORE_TORCHLITE,
              f"OpenMP worker threads run a large op (OS threads {THREADS_BEFORE_TORCHLITE} -> {after})")
    gomp = [p for p in loaded_libraries() if "gomp" in os.path.basename(p) or "omp" in os.path.basename(p)]
    if gomp:
        print("  info  OpenMP runtime: " + ", ".join(gomp))
        check(any("torchlite_dl.libs" in p for p in gomp) or "--allow-system-omp" in sys.argv,
              "the OpenMP runtime is the copy vendored in the wheel (torchlite_dl.libs/)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect-threads", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--allow-system-omp", action="store_true",
                    help="accept a system libgomp (a plain pip install, not a repaired wheel)")
    args = ap.parse_args()
    if os.path.exists(os.path.join(os.getcwd(), "torchlite", "__init__.py")):
        sys.exit("run this from outside the source tree")
    import torchlite as tl
    check_install(tl)
    check_ops(tl)
    check_openmp(tl, args.expect_threads)
    print("smoke test passed")


if __name__ == "__main__":
    main()
