cdef extern from "kernels/omp_shim.h" nogil:
    int omp_get_max_threads()
    void omp_set_num_threads(int n)
    int omp_get_thread_num()
    int omp_get_num_procs()
    int TL_HAVE_OPENMP

cdef int max_threads() noexcept nogil
cdef int num_chunks(long long work, long long grain) noexcept nogil
