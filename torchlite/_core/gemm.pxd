# The packed GEMM of kernels/gemm.h, declared once for every module that calls it (matmul,
# conv, linalg_decomp).  The header holds the code (static functions), so each of those
# extensions compiles its own copy; this file only shares the declarations.
from libc.stdint cimport int64_t

cdef extern from "kernels/gemm.h" nogil:
    ctypedef struct tl_gemm_problem:
        int64_t m, n, k
        const char* a
        int64_t rsa, csa
        const char* b
        int64_t rsb, csb
        char* c
        int64_t rsc, csc
        double alpha, beta
        const char* addend
        int64_t ars, acs
        int64_t ialpha, ibeta
        const char* pb
        int64_t pb_n, pb_j0
        void (*pack_b_fn)(const void* ctx, void* dst, int nr, int64_t r0, int64_t kc,
                          int64_t j0, int64_t nc)
        const void* pack_b_ctx
        void (*epilogue)(void* ctx, int64_t i0, int64_t m, int64_t j0, int64_t n) noexcept nogil
        void* epilogue_ctx
        int64_t ep_i0, ep_j0
    void tl_gemm_problem_clear(tl_gemm_problem* p)
    ctypedef struct tl_gemm_kernel:
        int nr                  # columns of the micro-tile
    const tl_gemm_kernel* tl_gemm_f32
    const tl_gemm_kernel* tl_gemm_f64
    int tl_gemm_oom
    void tl_gemm_one(const tl_gemm_kernel* kern, const tl_gemm_problem* p, int nthreads)
    int tl_gemm_run(int dtype, const tl_gemm_problem* p, int64_t batch, const int64_t* offa,
                    const int64_t* offb, const int64_t* offc, int nthreads)
    int tl_gemm_install(int level)
    int64_t tl_gemm_packed_b_size(int dtype, int64_t k, int64_t n, int64_t* pb_n)
    int tl_gemm_pack_b(int dtype, char* dst, const char* b, int64_t rsb, int64_t csb, int64_t k,
                       int64_t n)
    int tl_cpu_isa_level()
