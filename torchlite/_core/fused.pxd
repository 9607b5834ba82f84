# The fused program interpreter's types, shared with matmul.pyx, which runs a program as the
# epilogue of a matrix product (each tile of the product's result goes through the program
# while it is still in L1).  The code is in fused.pyx.
from libc.stdint cimport int64_t
from torchlite._core.elementwise cimport tl_loop
from torchlite._core.reduction cimport row_reduce_fn, row_softmax_fn, row_softmax_back_fn

cdef struct Instr:
    tl_loop fn               # an elementwise instruction's loop (NULL for a row instruction)
    int row_kind             # 0, or K_ROW / K_SOFTMAX / K_RANDOM / K_SOFTMAX_BWD
    int row_op
    bint compact             # an elementwise instruction over compact values
    row_reduce_fn rfn
    row_softmax_fn sfn
    row_softmax_back_fn bfn
    int nops                 # operands, the destination included
    int slot[4]              # destination, then sources
    int isz[4]               # the operands' element sizes (a scratch slot's stride)
    double p[3]


# a program's generated C (torchlite/compiler/_cpp.py): all its instructions over n elements
# (whole rows of L elements for a program with row instructions), d holding the inputs', the
# outputs' and the random instructions' masks' first elements, every operand contiguous, then
# (with row instructions) the scratch registers
ctypedef int (*native_fn)(char** d, int64_t n, int64_t L) noexcept nogil


cdef class Program:
    cdef Instr* ins
    cdef int n_ins, n_in, n_const, n_scratch, n_out
    cdef bint has_rows
    cdef bint has_random
    cdef int* in_dtype
    cdef int* out_dtype
    cdef int* slot_kind
    cdef int* slot_index
    cdef double* const_bits          # one 8-byte cell per constant, holding its dtype's bits
    cdef readonly str name
    cdef native_fn native            # the generated C of the program, or NULL
    cdef readonly object native_owner    # what keeps that code loaded (its library)


# the GEMM's epilogue hook (kernels/gemm.h: tl_gemm_problem.epilogue)
ctypedef void (*epilogue_fn)(void* ctx, int64_t i0, int64_t m, int64_t j0,
                             int64_t n) noexcept nogil


cdef class Epilogue:
    """A program bound to a matrix product's result C (m x n) and its other inputs, with its
    outputs made: `fn(ctx, ...)` runs it on a block of C (see fused.pyx)."""
    cdef void* ctx
    cdef epilogue_fn fn
    cdef readonly Program program
    cdef readonly tuple inputs       # kept alive while the product runs
    cdef readonly list outputs
    cdef int check(self) except -1   # raises what the program's instructions reported
