/* Matrix multiplication for the CPU: C = alpha * A B + beta * C over strided operands.
 *
 * Floating GEMM (float32, float64) is BLIS-style: operands are packed through their strides
 * into contiguous panels (so transposed and sliced matrices need no copy beforehand) and a
 * register-blocked SIMD micro-kernel does the work.  The kernels are compiled once per ISA
 * level (gemm_body.h, gemm_kernel.h) and the best level is installed at import.  Threads
 * split C into independent blocks, each with its own packing buffers; a batch of small
 * matrices is split over threads by matrix instead.  Integer dtypes use a simple loop that
 * accumulates in 64-bit integers and wraps like a cast.  Strides are in elements. */
#ifndef TL_GEMM_H
#define TL_GEMM_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "types.h"
#include "isa.h"
#include "alloc.h"
#include "omp_shim.h"
#if TL_X86_MULTIVERSION
#include <immintrin.h>
#endif

typedef struct {
    int64_t m, n, k;
    const char *a; int64_t rsa, csa;      /* A is m x k: row and column strides */
    const char *b; int64_t rsb, csb;      /* B is k x n */
    char *c; int64_t rsc, csc;            /* C is m x n */
    double alpha, beta;                   /* floating scalars (beta == 0: C is not read) */
    /* An addend read in place of C's old values (NULL: none): C = alpha * A B + beta * addend
     * with element (i, j) at addend[i * ars + j * acs] (a bias broadcast along the rows,
     * ars = 0, or the columns, acs = 0), so C is not first filled with it and read back.
     * Floating dtypes and one product only (batch 1: tl_gemm_run refuses others); beta == 0
     * reads no addend. */
    const char *addend; int64_t ars, acs;
    int64_t ialpha, ibeta;                /* the same for integer dtypes */
    /* B already packed by tl_gemm_pack_b (NULL: packed block by block as the product runs;
     * b is read either way by the matrix-vector path): its column count rounded up to whole
     * panels, and the first column of this (sub-)problem within it. */
    const char *pb; int64_t pb_n, pb_j0;
    /* Or B packed block by block by a caller's function (NULL: from b): it writes rows
     * [r0, r0+kc) and columns [j0, j0+nc) of the whole B (j0 counts from the problem's first
     * column before any split over threads: pb_j0 + the block's) into dst in the layout
     * described at tl_gemm_pack_b, in panels of nr columns, the columns past nc zero.  For
     * operands that are never materialised: a convolution's im2col matrix, packed straight
     * from the image.  Only for m, n >= 2 (the matrix-vector path reads b). */
    void (*pack_b_fn)(const void *ctx, void *dst, int nr, int64_t r0, int64_t kc, int64_t j0,
                      int64_t nc);
    const void *pack_b_ctx;
    /* Called on each block of C as soon as it holds its final values (NULL: none), while the
     * block is still in the cache: rows [i0, i0+m) and columns [j0, j0+n) of the whole C
     * (counted from its first row and column before any split over threads: ep_i0/ep_j0 +
     * the block's), on the thread that computed it.  torch.compile's "epilogue fusion": the
     * elementwise ops after a matrix product (a bias, an activation, a residual add) run on
     * each tile of the product while it sits in L1, rather than as a pass over all of C. */
    void (*epilogue)(void *ctx, int64_t i0, int64_t m, int64_t j0, int64_t n);
    void *epilogue_ctx;
    int64_t ep_i0, ep_j0;
} tl_gemm_problem;

/* A problem with every optional field off (no packed B, no epilogue): callers set the rest. */
static inline void tl_gemm_problem_clear(tl_gemm_problem *p) { memset(p, 0, sizeof(*p)); }

/* y = alpha * A x + beta * y, A is m x k (the one-column and one-row cases of GEMM). */
typedef struct {
    int64_t m, k;
    const char *a; int64_t rsa, csa;
    const char *x; int64_t sx;
    char *y; int64_t sy;
    double alpha, beta;
} tl_gemv_problem;

typedef void (*tl_gemm_serial_fn)(const tl_gemm_problem *p);
typedef void (*tl_gemv_fn)(const tl_gemv_problem *g, int nthreads);
typedef void (*tl_pack_b_fn)(char *dst, const char *b, int64_t rsb, int64_t csb, int64_t k,
                             int64_t n);

typedef void (*tl_gemm_tile_fn)(int64_t kc, const void *a, int64_t lda, const void *b, void *c,
                                int64_t rsc, double beta, int mr, int nr);
typedef struct {
    int itemsize;
    int mr, nr, mc, kc, nc;               /* micro-tile and cache blocks */
    tl_gemm_serial_fn gemm;               /* the whole product on one thread */
    tl_gemv_fn gemv;
    tl_pack_b_fn pack_b;                  /* B (k x n) into the panels gemm reads, whole */
    tl_gemm_tile_fn tile;                 /* one micro-tile from rows of A and a B panel
                                             (see gemm_kernel.h), for kernels that lay out
                                             their operands themselves */
} tl_gemm_kernel;

enum {
    TL_DOT_CHUNK = 4096,                  /* dot products are summed in chunks of this */
    TL_GEMV_ROWS = 256                    /* rows per parallel block of a matrix-vector product */
};
/* Multiply-adds per thread below which a product stays on fewer threads: waking a thread
 * costs more than it saves on small matrices. */
static const double TL_GEMM_PAR_MACS = 1 << 20;
static const double TL_GEMV_PAR_MACS = 1 << 17;

static int tl_gemm_oom = 0;              /* set when a scratch buffer could not be allocated */

#if defined(__GNUC__)
#define TL_PRAGMA(x) _Pragma(#x)
#define TL_UNROLL(n) TL_PRAGMA(GCC unroll n)
#else
#define TL_UNROLL(n)
#endif

#if defined(_MSC_VER)
#define TL_TLS __declspec(thread)
#else
#define TL_TLS __thread
#endif

/* Per-thread packing buffer, kept between calls (OpenMP threads live as long as the
 * process), so a product never pays for fresh pages. */
static TL_TLS void *tl_gemm_scratch_ptr = NULL;
static TL_TLS size_t tl_gemm_scratch_cap = 0;

static void *tl_gemm_scratch(size_t bytes) {
    if (bytes <= tl_gemm_scratch_cap) return tl_gemm_scratch_ptr;
    const size_t huge = (size_t)2 << 20;
    size_t align = bytes >= huge ? huge : 64;
    size_t cap = (bytes + align - 1) / align * align;
    if (tl_gemm_scratch_ptr) tl_aligned_free(tl_gemm_scratch_ptr);
    tl_gemm_scratch_ptr = tl_aligned_alloc(align, cap);
    tl_gemm_scratch_cap = tl_gemm_scratch_ptr ? cap : 0;
    if (tl_gemm_scratch_ptr && align == huge) tl_advise_huge(tl_gemm_scratch_ptr, cap);
    return tl_gemm_scratch_ptr;
}

/* A matrix-vector product with contiguous columns is done column by column (see
 * gemv_cols); the choice depends only on the layout, never on the thread count. */
static inline int tl_gemv_by_columns(const tl_gemv_problem *g) {
    return g->m > 1 && g->rsa == 1 && g->csa != 1 && g->k > 0;
}

/* ---- the per-ISA floating kernels --------------------------------------------------- */
#define TL_GEMM_LEVEL 0
#define TL_SFX(name) name##_base
#include "gemm_body.h"
#undef TL_SFX
#undef TL_GEMM_LEVEL

#if TL_X86_MULTIVERSION
TL_BEGIN_TARGET_V3
#define TL_GEMM_LEVEL 3
#define TL_SFX(name) name##_v3
#include "gemm_body.h"
#undef TL_SFX
#undef TL_GEMM_LEVEL
TL_END_TARGET
TL_BEGIN_TARGET_V4
#define TL_GEMM_LEVEL 4
#define TL_SFX(name) name##_v4
#include "gemm_body.h"
#undef TL_SFX
#undef TL_GEMM_LEVEL
TL_END_TARGET
#endif

static const tl_gemm_kernel *tl_gemm_f32 = &kernel_f32_base;
static const tl_gemm_kernel *tl_gemm_f64 = &kernel_f64_base;

/* Install the kernels of ISA `level` (0, 3 or 4; clamped to what was compiled). */
static int tl_gemm_install(int level) {
#if TL_X86_MULTIVERSION
    if (level >= 4) { tl_gemm_f32 = &kernel_f32_v4; tl_gemm_f64 = &kernel_f64_v4; return 4; }
    if (level >= 3) { tl_gemm_f32 = &kernel_f32_v3; tl_gemm_f64 = &kernel_f64_v3; return 3; }
#endif
    (void)level;
    tl_gemm_f32 = &kernel_f32_base;
    tl_gemm_f64 = &kernel_f64_base;
    return 0;
}

/* ---- floating driver: one-column/one-row products, threads, batches ----------------- */

static inline int tl_threads_for(double work, double per_thread, int nthreads) {
    double t = work / per_thread;
    if (t < 2 || nthreads < 2) return 1;
    return t < nthreads ? (int)t : nthreads;
}

/* C = the addend (C is m x n; the gemv kernels read the addend from C). */
static void tl_gemm_fill_addend(const tl_gemm_problem *p, int isz) {
    for (int64_t i = 0; i < p->m; i++)
        for (int64_t j = 0; j < p->n; j++)
            memcpy(p->c + (i * p->rsc + j * p->csc) * isz, p->addend + (i * p->ars + j * p->acs) * isz,
                   (size_t)isz);
}

/* The product as a matrix-vector one when C has a single column or row. */
static void tl_gemm_as_gemv(const tl_gemm_kernel *kern, const tl_gemm_problem *p, int nthreads) {
    tl_gemv_problem g;
    if (p->addend && p->beta != 0) tl_gemm_fill_addend(p, kern->itemsize);
    if (p->n == 1) {           /* C[:, 0] = A B[:, 0] */
        g.m = p->m; g.a = p->a; g.rsa = p->rsa; g.csa = p->csa;
        g.x = p->b; g.sx = p->rsb; g.y = p->c; g.sy = p->rsc;
    } else {                   /* C[0, :] = B^T A[0, :] */
        g.m = p->n; g.a = p->b; g.rsa = p->csb; g.csa = p->rsb;
        g.x = p->a; g.sx = p->csa; g.y = p->c; g.sy = p->csc;
    }
    g.k = p->k;
    g.alpha = p->alpha;
    g.beta = p->beta;
    kern->gemv(&g, tl_threads_for((double)g.m * (double)g.k, TL_GEMV_PAR_MACS, nthreads));
    if (p->epilogue) p->epilogue(p->epilogue_ctx, p->ep_i0, p->m, p->ep_j0, p->n);
}

static inline int64_t tl_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Split C into tm x tn blocks (tm * tn == nthreads, whole micro-tiles) with the least work
 * on the busiest thread; each thread also packs its own rows of A and columns of B. */
static void tl_gemm_grid(const tl_gemm_kernel *kern, int64_t m, int64_t n, int nthreads,
                         int *tm_out, int *tn_out) {
    const int64_t mt = tl_ceil_div(m, kern->mr), nt = tl_ceil_div(n, kern->nr);
    double best = -1;
    *tm_out = 1; *tn_out = 1;
    for (int tm = 1; tm <= nthreads; tm++) {
        if (nthreads % tm) continue;
        int tn = nthreads / tm;
        if (tm > mt || tn > nt) continue;
        double mi = (double)(tl_ceil_div(mt, tm) * kern->mr);
        double nj = (double)(tl_ceil_div(nt, tn) * kern->nr);
        double cost = mi * nj + 4.0 * (mi + nj * (double)tl_ceil_div((int64_t)mi, kern->mc));
        if (best < 0 || cost < best) { best = cost; *tm_out = tm; *tn_out = tn; }
    }
}

/* The sub-problem of rows [i0, i0+m) and columns [j0, j0+n) of C. */
static tl_gemm_problem tl_gemm_sub(const tl_gemm_problem *p, int isz, int64_t i0, int64_t m,
                                   int64_t j0, int64_t n) {
    tl_gemm_problem s = *p;
    s.m = m;
    s.n = n;
    s.a = p->a + i0 * p->rsa * isz;
    s.b = p->b + j0 * p->csb * isz;
    s.c = p->c + (i0 * p->rsc + j0 * p->csc) * isz;
    if (p->addend) s.addend = p->addend + (i0 * p->ars + j0 * p->acs) * isz;
    s.pb_j0 = p->pb_j0 + j0;
    s.ep_i0 = p->ep_i0 + i0;
    s.ep_j0 = p->ep_j0 + j0;
    return s;
}

/* One product on up to `nthreads` threads. */
static void tl_gemm_one(const tl_gemm_kernel *kern, const tl_gemm_problem *p, int nthreads) {
    if (p->m == 1 || p->n == 1) {
        tl_gemm_as_gemv(kern, p, nthreads);
        return;
    }
    int nt = tl_threads_for((double)p->m * (double)p->n * (double)p->k, TL_GEMM_PAR_MACS, nthreads);
    int tm = 1, tn = 1;
    if (nt > 1) tl_gemm_grid(kern, p->m, p->n, nt, &tm, &tn);
    if (tm * tn <= 1) {
        kern->gemm(p);
        return;
    }
    const int64_t mi = tl_ceil_div(tl_ceil_div(p->m, kern->mr), tm) * kern->mr;
    const int64_t nj = tl_ceil_div(tl_ceil_div(p->n, kern->nr), tn) * kern->nr;
#pragma omp parallel num_threads(tm * tn)
    {
        const int t = omp_get_thread_num();
        const int64_t i0 = (t / tn) * mi, j0 = (t % tn) * nj;
        if (i0 < p->m && j0 < p->n) {
            tl_gemm_problem s = tl_gemm_sub(p, kern->itemsize, i0, p->m - i0 < mi ? p->m - i0 : mi,
                                            j0, p->n - j0 < nj ? p->n - j0 : nj);
            kern->gemm(&s);
        }
    }
}

/* The problem of batch entry `i`: element offsets added to the three base pointers. */
static inline tl_gemm_problem tl_gemm_at(const tl_gemm_problem *p, int isz, int64_t i,
                                         const int64_t *offa, const int64_t *offb,
                                         const int64_t *offc) {
    tl_gemm_problem s = *p;
    s.a = p->a + offa[i] * isz;
    s.b = p->b + offb[i] * isz;
    s.c = p->c + offc[i] * isz;
    return s;
}

/* A batch of floating products (m, n, k >= 1).  The batch is split over threads by whole
 * matrices when that balances (no fork-join and no duplicated packing per matrix);
 * otherwise each matrix in turn is split over the threads. */
static void tl_gemm_batch_fp(const tl_gemm_kernel *kern, const tl_gemm_problem *p, int64_t batch,
                             const int64_t *offa, const int64_t *offb, const int64_t *offc,
                             int nthreads) {
    const double macs = (double)p->m * (double)p->n * (double)p->k;
    const int isz = kern->itemsize;
    const int nt = tl_threads_for(macs * (double)batch, TL_GEMM_PAR_MACS, nthreads);
    const int by_matrix = batch >= nt &&
        (batch % nt == 0 || batch >= 4 * nt || macs < TL_GEMM_PAR_MACS * nt);
    if (nt <= 1 || !by_matrix) {
        for (int64_t i = 0; i < batch; i++) {
            tl_gemm_problem s = tl_gemm_at(p, isz, i, offa, offb, offc);
            tl_gemm_one(kern, &s, nthreads);
        }
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t i = 0; i < batch; i++) {
        tl_gemm_problem s = tl_gemm_at(p, isz, i, offa, offb, offc);
        tl_gemm_one(kern, &s, 1);
    }
}

/* ---- integer GEMM: a plain loop, 64-bit wrapping accumulation --------------------------- */
#define TL_IGEMM(NAME, TYPE)                                                                \
static void NAME(const tl_gemm_problem *p, int64_t i, const int64_t *offa,                   \
                 const int64_t *offb, const int64_t *offc, uint64_t *acc) {                 \
    /* row i of the flattened (batch, m) rows */                                           \
    const int64_t bi = i / p->m, r = i % p->m;                                              \
    const TYPE *A = (const TYPE *)p->a + offa[bi] + r * p->rsa;                              \
    const TYPE *B = (const TYPE *)p->b + offb[bi];                                          \
    TYPE *C = (TYPE *)p->c + offc[bi] + r * p->rsc;                                         \
    for (int64_t j = 0; j < p->n; j++) acc[j] = 0;                                          \
    for (int64_t q = 0; q < p->k; q++) {                                                    \
        const uint64_t av = (uint64_t)(int64_t)A[q * p->csa];                               \
        const TYPE *Bq = B + q * p->rsb;                                                    \
        if (p->csb == 1)                                                                    \
            for (int64_t j = 0; j < p->n; j++) acc[j] += av * (uint64_t)(int64_t)Bq[j];    \
        else                                                                                \
            for (int64_t j = 0; j < p->n; j++)                                              \
                acc[j] += av * (uint64_t)(int64_t)Bq[j * p->csb];                           \
    }                                                                                       \
    const uint64_t al = (uint64_t)p->ialpha, be = (uint64_t)p->ibeta;                       \
    for (int64_t j = 0; j < p->n; j++) {                                                    \
        uint64_t v = al * acc[j];                                                           \
        if (be) v += be * (uint64_t)(int64_t)C[j * p->csc];                                 \
        C[j * p->csc] = (TYPE)v;                                                            \
    }                                                                                       \
}
TL_IGEMM(tl_igemm_row_u8, uint8_t)
TL_IGEMM(tl_igemm_row_i8, int8_t)
TL_IGEMM(tl_igemm_row_i16, int16_t)
TL_IGEMM(tl_igemm_row_i32, int32_t)
TL_IGEMM(tl_igemm_row_i64, int64_t)
#undef TL_IGEMM

typedef void (*tl_igemm_row_fn)(const tl_gemm_problem *, int64_t, const int64_t *,
                                const int64_t *, const int64_t *, uint64_t *);

static void tl_gemm_batch_int(tl_igemm_row_fn row, const tl_gemm_problem *p, int64_t batch,
                              const int64_t *offa, const int64_t *offb, const int64_t *offc,
                              int nthreads) {
    const int64_t rows = batch * p->m;
    const int nt = tl_threads_for((double)rows * (double)p->n * (double)p->k,
                                  TL_GEMV_PAR_MACS, nthreads);
    (void)nt;   /* unused without OpenMP */
#pragma omp parallel num_threads(nt)
    {
        uint64_t *acc = (uint64_t *)malloc((size_t)p->n * sizeof(uint64_t));
        if (!acc) {
            tl_gemm_oom = 1;
        } else {
#pragma omp for schedule(static)
            for (int64_t i = 0; i < rows; i++) row(p, i, offa, offb, offc, acc);
        }
        free(acc);
    }
}

/* ---- B packed once, for many products with the same right operand ------------------------
 * (a recurrent layer's weights, multiplied at every time step).  The layout is the one the
 * blocked driver packs block by block: for each KC-deep block of rows of B, panels of NR
 * columns, each k-major; pb_n columns (n rounded up to whole panels) per block.  It belongs
 * to the kernel installed now (its NR and KC). */
static const tl_gemm_kernel *tl_gemm_kernel_for(int dtype) {
    return dtype == TL_FLOAT32 ? tl_gemm_f32 : dtype == TL_FLOAT64 ? tl_gemm_f64 : NULL;
}

/* Elements of the packed B of a k x n float32/float64 matrix (0: no packed form). */
static int64_t tl_gemm_packed_b_size(int dtype, int64_t k, int64_t n, int64_t *pb_n) {
    const tl_gemm_kernel *kern = tl_gemm_kernel_for(dtype);
    if (!kern) return 0;
    *pb_n = tl_ceil_div(n, kern->nr) * kern->nr;
    return k * *pb_n;
}

static int tl_gemm_pack_b(int dtype, char *dst, const char *b, int64_t rsb, int64_t csb,
                          int64_t k, int64_t n) {
    const tl_gemm_kernel *kern = tl_gemm_kernel_for(dtype);
    if (!kern) return -2;
    kern->pack_b(dst, b, rsb, csb, k, n);
    return 0;
}

/* ---- entry point ---------------------------------------------------------------------- */

/* C_i = alpha * A_i B_i + beta * C_i for each batch entry i, where X_i starts `offx[i]`
 * elements after p->x.  Requires m, n, k >= 1 and batch >= 1 (the caller handles empty
 * products), a dtype other than bool/float16/bfloat16 (the caller computes those through
 * float32), and C not overlapping A or B.  Returns 0, or -1 when out of memory. */
static int tl_gemm_run(int dtype, const tl_gemm_problem *p, int64_t batch, const int64_t *offa,
                       const int64_t *offb, const int64_t *offc, int nthreads) {
    tl_gemm_oom = 0;
    if (p->addend && (batch != 1 || (dtype != TL_FLOAT32 && dtype != TL_FLOAT64)))
        return -3;                        /* an addend is for one floating product */
    switch (dtype) {
    case TL_FLOAT32: tl_gemm_batch_fp(tl_gemm_f32, p, batch, offa, offb, offc, nthreads); break;
    case TL_FLOAT64: tl_gemm_batch_fp(tl_gemm_f64, p, batch, offa, offb, offc, nthreads); break;
    case TL_UINT8: tl_gemm_batch_int(tl_igemm_row_u8, p, batch, offa, offb, offc, nthreads); break;
    case TL_INT8: tl_gemm_batch_int(tl_igemm_row_i8, p, batch, offa, offb, offc, nthreads); break;
    case TL_INT16: tl_gemm_batch_int(tl_igemm_row_i16, p, batch, offa, offb, offc, nthreads); break;
    case TL_INT32: tl_gemm_batch_int(tl_igemm_row_i32, p, batch, offa, offb, offc, nthreads); break;
    case TL_INT64: tl_gemm_batch_int(tl_igemm_row_i64, p, batch, offa, offb, offc, nthreads); break;
    default: return -2;
    }
    return tl_gemm_oom ? -1 : 0;
}

#endif
