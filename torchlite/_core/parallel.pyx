# Thread control for every OpenMP kernel in torchlite/_core.

import os

cdef extern from "kernels/busy_cpus.h" nogil:
    int tl_free_cpus()

# TORCHLITE_ADAPTIVE_THREADS=0 keeps every region at the full thread count, busy machine or not
cdef int _adaptive = os.environ.get("TORCHLITE_ADAPTIVE_THREADS", "1").strip().lower() not in (
    "0", "false", "no", "off")


cdef int max_threads() noexcept nogil:
    """The threads a parallel region may use now: OpenMP's count (set_num_threads,
    OMP_NUM_THREADS), less the cores other processes keep busy (kernels/busy_cpus.h says why)."""
    cdef int nt = omp_get_max_threads()
    cdef int free
    if nt < 2 or not _adaptive:
        return nt
    free = tl_free_cpus()
    return free if 1 <= free < nt else nt


cdef int num_chunks(long long work, long long grain) noexcept nogil:
    """How many parallel chunks `work` units deserve: none below `grain` per thread, so
    small ops never pay for waking threads."""
    cdef long long c = work // grain
    if c < 2:
        return 1
    cdef int nt = max_threads()
    if nt < 2:
        return 1
    return <int>(c if c < nt else nt)


def usable_threads():
    """The threads a big parallel op would use now (get_num_threads less the cores other
    processes keep busy; see set_adaptive_threads)."""
    return max_threads()


def set_adaptive_threads(bint on):
    """Whether parallel regions leave out the cores other processes keep busy (default on;
    TORCHLITE_ADAPTIVE_THREADS=0 starts with it off).  Returns the previous setting."""
    global _adaptive
    previous = bool(_adaptive)
    _adaptive = on
    return previous


def get_num_threads():
    """The number of threads OpenMP kernels use (default: all cores, or OMP_NUM_THREADS)."""
    return omp_get_max_threads()


def set_num_threads(int n):
    if n < 1:
        raise ValueError(f"set_num_threads: number of threads must be positive, got {n}")
    omp_set_num_threads(n)


def openmp_enabled():
    return bool(TL_HAVE_OPENMP)


def num_procs():
    return omp_get_num_procs()
