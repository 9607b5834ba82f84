from libc.stdint cimport int64_t
from torchlite._core.array cimport Array, MAX_DIMS

cdef enum:
    MAX_OPS = 4

ctypedef int (*tl_loop)(char** d, const int64_t* s, int64_t n, const double* P) noexcept nogil

# An iteration plan over up to MAX_OPS operands of one broadcast shape: dims are stored
# innermost first, already reordered for memory order and coalesced.
cdef struct Plan:
    int nd
    int nops
    int64_t numel
    int64_t shape[MAX_DIMS]
    int64_t strides[MAX_OPS][MAX_DIMS]   # bytes
    char* ptr[MAX_OPS]

cdef int run_plan(Plan* p, tl_loop fn, const double* prm, int64_t grain) noexcept nogil
cdef int promote_types(int a, int b) noexcept nogil
cdef Array cast_array(Array a, int dtype)
cdef Array contiguous_array(Array a)
cdef int copy_into(Array dst, Array src) except -1
cdef int check_writable(Array out, str op) except -1

# The loop of one op for one compute dtype (NULL where there is none): kind 0 unary, 1 binary,
# 2 ternary (op: the op code), 3 cast (op: the source dtype, dtype: the target).  The fused
# program interpreter (fused.pyx) runs these same loops, so an op's math has one home.
cdef tl_loop loop_of(int kind, int op, int dtype) noexcept nogil

# The memory order a new result of an elementwise op takes from its operands' byte strides
# (st[o][d] for o in first..nops-1): perm, the dims innermost first.  Fused programs use it too.
cdef void memory_order(int64_t (*st)[MAX_DIMS], int first, int nops, int nd, int* perm) noexcept nogil
