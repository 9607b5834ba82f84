# Thread control for every OpenMP kernel in torchlite/_core.

cdef int num_chunks(long long work, long long grain) noexcept nogil:
    """How many parallel chunks `work` units deserve: none below `grain` per thread, so
    small ops never pay for waking threads."""
    cdef int nt = omp_get_max_threads()
    cdef long long c = work // grain
    if c < 2 or nt < 2:
        return 1
    return <int>(c if c < nt else nt)


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
