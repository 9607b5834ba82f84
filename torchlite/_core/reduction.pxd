# The row kernels of kernels/reduce.h that the fused program interpreter (fused.pyx) calls, so
# a fused softmax or row sum runs the very loop the eager op runs.  Declared here with types of
# their own (not the header's), so a module that cimports them does not compile reduce.h again.
from libc.stdint cimport int64_t

# nrows rows (row i at x + i*rstride bytes) of n contiguous elements -> out[i], an 8-byte
# partial (double for float32/float64 rows)
ctypedef void (*row_reduce_fn)(const char* x, int64_t nrows, int64_t rstride, int64_t n,
                               const double* center, double p, void* out) noexcept nogil
# softmax (logmode 0) or log_softmax (1) of nrows contiguous rows of n elements, x -> y
# (y may be x)
ctypedef void (*row_softmax_fn)(const char* x, char* y, int64_t nrows, int64_t n,
                                int logmode) noexcept nogil
# their gradients over nrows contiguous rows of n elements from the result y and its gradient
# g: softmax (logmode 0) dx = y (g - sum(g y)), log_softmax (1) dx = g - exp(y) sum(g) (dx may
# be y or g)
ctypedef void (*row_softmax_back_fn)(const char* y, const char* g, char* dx, int64_t nrows,
                                     int64_t n, int logmode) noexcept nogil

# the row sum kernel of float32 (dtype code 8) or float64 (9) rows, the row softmax and its
# gradient; NULL for other dtypes
cdef row_reduce_fn row_sum(int dtype) noexcept nogil
cdef row_softmax_fn row_softmax(int dtype) noexcept nogil
cdef row_softmax_back_fn row_softmax_back(int dtype) noexcept nogil
