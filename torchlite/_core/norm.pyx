# Fused kernels of batch norm and layer norm (float32 / float64, contiguous inputs).
#
# Layer norm: x is [M, K] (K: the normalised trailing dims); each row is normalised by its own
# mean and 1 / sqrt(var + eps) (biased variance), then scaled and shifted per column.  Rows are
# independent and run in parallel.
# Batch norm: x is [N, C, S] (S: the flattened spatial dims); each channel c is normalised over its
# N runs of S elements.  The statistics and the backward's sums run one channel per task, the
# elementwise passes one (n, c) run per task.
#
# Sums accumulate in lanes of the element type for at most TL_NF_FLUSH elements, then in double,
# each over a fixed range in a fixed order; layer norm's per-column parameter gradients are summed
# in fixed blocks of rows, the blocks combined in order.  So no result depends on the thread count.
#
# The inner loops are C (below), compiled once per SIMD level (kernels/isa.h) and chosen at import
# (set_isa_level forces a level, for tests).
#
# Backward of one normalisation slice (n elements, xhat = (x - mean) * rstd, gh = g * weight):
#     dx = rstd * (gh - sum(gh) / n - xhat * sum(gh * xhat) / n)     (batch statistics)
#     dx = rstd * gh                                                 (running statistics)
from cython.parallel cimport prange
from libc.math cimport sqrt
from libc.stdlib cimport malloc, free
from libc.stdint cimport int64_t
from torchlite._core.array cimport Array, new_array, TL_FLOAT32, TL_FLOAT64
from torchlite._core.parallel cimport num_chunks
from torchlite._core import isa_switch

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include "isa.h"

    /* Lanes: a sum runs in TL_NF_LANES independent accumulators of the element type (written as
     * fixed arrays, which the compiler turns into vector registers at every level, as in
     * reduce_body.h), combined by a fixed tree and added into a double every TL_NF_FLUSH
     * elements. */
    #define TL_NF_LANES 64
    #define TL_NF_FLUSH 4096
    #define TL_NF_TREE(acc)                                                                     \\
        for (int j = 0; j < 32; j++) acc[j] += acc[j + 32];                                     \\
        for (int j = 0; j < 16; j++) acc[j] += acc[j + 16];                                     \\
        for (int j = 0; j < 8; j++) acc[j] += acc[j + 8];                                       \\
        for (int j = 0; j < 4; j++) acc[j] += acc[j + 4];                                       \\
        for (int j = 0; j < 2; j++) acc[j] += acc[j + 2];                                       \\
        acc[0] += acc[1];

    /* Two sums at once over n elements: LANE(k) adds into p[j] and q[j] (element k), TAIL(k)
     * into the doubles u1 and u2. */
    #define TL_NF_SUM2(T, LANE, TAIL)                                                           \\
        double t1 = 0.0, t2 = 0.0;                                                              \\
        int64_t i = 0;                                                                          \\
        while (n - i >= TL_NF_LANES) {                                                          \\
            T p[TL_NF_LANES], q[TL_NF_LANES];                                                   \\
            for (int j = 0; j < TL_NF_LANES; j++) { p[j] = 0; q[j] = 0; }                       \\
            const int64_t e = n - i > TL_NF_FLUSH ? i + TL_NF_FLUSH : n;                        \\
            for (; i + TL_NF_LANES <= e; i += TL_NF_LANES)                                      \\
                for (int j = 0; j < TL_NF_LANES; j++) { const int64_t k = i + j; LANE }         \\
            TL_NF_TREE(p) TL_NF_TREE(q)                                                         \\
            t1 += (double)p[0]; t2 += (double)q[0];                                             \\
        }                                                                                       \\
        double u1 = 0.0, u2 = 0.0;                                                              \\
        for (; i < n; i++) { const int64_t k = i; TAIL }                                        \\
        *s1 = t1 + u1; *s2 = t2 + u2;

    #define TL_NF_FUNCS(T, SFX)                                                                 \\
    /* s1 = sum(a), s2 = sum((a - m)^2) */                                                      \\
    static void tl_nf_moments_##SFX(const T *a, T m, int64_t n, double *s1, double *s2) {       \\
        TL_NF_SUM2(T, { const T d = a[k] - m; p[j] += a[k]; q[j] += d * d; },                    \\
                   { const double d = (double)a[k] - m; u1 += a[k]; u2 += d * d; }) }            \\
    /* s1 = sum(g * w), s2 = sum(g * w * (x - m)); w NULL: 1 */                                 \\
    static void tl_nf_dot_##SFX(const T *g, const T *w, const T *x, T m, int64_t n,             \\
                                double *s1, double *s2) {                                       \\
        if (w == NULL) {                                                                        \\
            TL_NF_SUM2(T, { p[j] += g[k]; q[j] += g[k] * (x[k] - m); },                          \\
                       { u1 += g[k]; u2 += (double)g[k] * (x[k] - m); })                         \\
        } else {                                                                                \\
            TL_NF_SUM2(T, { const T h = g[k] * w[k]; p[j] += h; q[j] += h * (x[k] - m); },       \\
                       { const double h = (double)g[k] * w[k]; u1 += h; u2 += h * (x[k] - m); }) \\
        } }                                                                                     \\
    /* y = (x - m) * r * w + b; w / b NULL: 1 / 0 */                                            \\
    static void tl_nf_normalize_##SFX(const T *x, T *y, const T *w, const T *b, T m, T r,       \\
                                      int64_t n) {                                              \\
        if (w && b) for (int64_t k = 0; k < n; k++) y[k] = (x[k] - m) * r * w[k] + b[k];         \\
        else if (w) for (int64_t k = 0; k < n; k++) y[k] = (x[k] - m) * r * w[k];                \\
        else if (b) for (int64_t k = 0; k < n; k++) y[k] = (x[k] - m) * r + b[k];                \\
        else for (int64_t k = 0; k < n; k++) y[k] = (x[k] - m) * r; }                            \\
    /* dx = r * (g * w - ca - (x - m) * r * cb); w NULL: 1 */                                   \\
    static void tl_nf_ln_dx_##SFX(const T *g, const T *x, const T *w, T m, T r, T ca, T cb,     \\
                                  int64_t n, T *dx) {                                           \\
        const T rcb = r * cb;                                                                   \\
        if (w) for (int64_t k = 0; k < n; k++) dx[k] = r * (g[k] * w[k] - ca - (x[k] - m) * rcb); \\
        else for (int64_t k = 0; k < n; k++) dx[k] = r * (g[k] - ca - (x[k] - m) * rcb); }       \\
    /* dw[k] += g * (x - m) * r, db[k] += g (either NULL: skipped) */                           \\
    static void tl_nf_colacc_##SFX(const T *g, const T *x, T m, T r, int64_t n, T *dw, T *db) { \\
        if (dw) for (int64_t k = 0; k < n; k++) dw[k] += g[k] * ((x[k] - m) * r);                \\
        if (db) for (int64_t k = 0; k < n; k++) db[k] += g[k]; }                                 \\
    /* y = x * a + b */                                                                         \\
    static void tl_nf_affine_##SFX(const T *x, T *y, T a, T b, int64_t n) {                     \\
        for (int64_t k = 0; k < n; k++) y[k] = x[k] * a + b; }                                   \\
    /* dx = g * a + (x - m) * b + c */                                                          \\
    static void tl_nf_bn_dx_##SFX(const T *g, const T *x, T *dx, T a, T m, T b, T c, int64_t n) { \\
        for (int64_t k = 0; k < n; k++) dx[k] = g[k] * a + (x[k] - m) * b + c; }

    #define TL_NF_LEVEL(LV) TL_NF_FUNCS(float, f32_##LV) TL_NF_FUNCS(double, f64_##LV)
    TL_NF_LEVEL(base)
    #if TL_X86_MULTIVERSION
    TL_BEGIN_TARGET_V3
    TL_NF_LEVEL(v3)
    TL_END_TARGET
    TL_BEGIN_TARGET_V4
    TL_NF_LEVEL(v4)
    TL_END_TARGET
    #endif

    /* The installed level's loops, one table per element type. */
    #define TL_NF_TABLE(T, NAME)                                                                \\
    typedef struct {                                                                            \\
        void (*moments)(const T *, T, int64_t, double *, double *);                             \\
        void (*dot)(const T *, const T *, const T *, T, int64_t, double *, double *);           \\
        void (*normalize)(const T *, T *, const T *, const T *, T, T, int64_t);                 \\
        void (*ln_dx)(const T *, const T *, const T *, T, T, T, T, int64_t, T *);               \\
        void (*colacc)(const T *, const T *, T, T, int64_t, T *, T *);                          \\
        void (*affine)(const T *, T *, T, T, int64_t);                                          \\
        void (*bn_dx)(const T *, const T *, T *, T, T, T, T, int64_t);                          \\
    } NAME;
    TL_NF_TABLE(float, tl_nf_table_f32)
    TL_NF_TABLE(double, tl_nf_table_f64)
    static tl_nf_table_f32 tl_nf32;
    static tl_nf_table_f64 tl_nf64;
    #define TL_NF_SET(TAB, SFX)                                                                 \\
        TAB.moments = tl_nf_moments_##SFX; TAB.dot = tl_nf_dot_##SFX;                          \\
        TAB.normalize = tl_nf_normalize_##SFX; TAB.ln_dx = tl_nf_ln_dx_##SFX;                  \\
        TAB.colacc = tl_nf_colacc_##SFX; TAB.affine = tl_nf_affine_##SFX;                      \\
        TAB.bn_dx = tl_nf_bn_dx_##SFX;
    static int tl_nf_install(int level) {
    #if TL_X86_MULTIVERSION
        if (level >= 4) { TL_NF_SET(tl_nf32, f32_v4) TL_NF_SET(tl_nf64, f64_v4) return 4; }
        if (level >= 3) { TL_NF_SET(tl_nf32, f32_v3) TL_NF_SET(tl_nf64, f64_v3) return 3; }
    #endif
        TL_NF_SET(tl_nf32, f32_base) TL_NF_SET(tl_nf64, f64_base) return 0;
    }
    """
    ctypedef struct tl_nf_table_f32:
        void (*moments)(const float*, float, int64_t, double*, double*) noexcept nogil
        void (*dot)(const float*, const float*, const float*, float, int64_t, double*,
                    double*) noexcept nogil
        void (*normalize)(const float*, float*, const float*, const float*, float, float,
                          int64_t) noexcept nogil
        void (*ln_dx)(const float*, const float*, const float*, float, float, float, float,
                      int64_t, float*) noexcept nogil
        void (*colacc)(const float*, const float*, float, float, int64_t, float*,
                       float*) noexcept nogil
        void (*affine)(const float*, float*, float, float, int64_t) noexcept nogil
        void (*bn_dx)(const float*, const float*, float*, float, float, float, float,
                      int64_t) noexcept nogil
    ctypedef struct tl_nf_table_f64:
        void (*moments)(const double*, double, int64_t, double*, double*) noexcept nogil
        void (*dot)(const double*, const double*, const double*, double, int64_t, double*,
                    double*) noexcept nogil
        void (*normalize)(const double*, double*, const double*, const double*, double, double,
                          int64_t) noexcept nogil
        void (*ln_dx)(const double*, const double*, const double*, double, double, double,
                      double, int64_t, double*) noexcept nogil
        void (*colacc)(const double*, const double*, double, double, int64_t, double*,
                       double*) noexcept nogil
        void (*affine)(const double*, double*, double, double, int64_t) noexcept nogil
        void (*bn_dx)(const double*, const double*, double*, double, double, double, double,
                      int64_t) noexcept nogil
    tl_nf_table_f32 tl_nf32
    tl_nf_table_f64 tl_nf64
    int tl_nf_install(int level)


def _install(int level):
    """Install the loops of ISA `level` (one the CPU supports); returns it."""
    return tl_nf_install(level)


set_isa_level, isa_level = isa_switch(_install)

ctypedef fused real:
    float
    double

cdef int64_t GRAIN = 32768          # elements per thread below which a loop stays serial
cdef int64_t MAX_BLOCKS = 64        # row blocks of layer norm's parameter-gradient sums
cdef int64_t FLUSH_ROWS = 256       # rows a block sums in the element type before a double flush


# ---- the installed loops, by element type ---------------------------------------------------------
cdef inline void _moments(const real* a, double m, int64_t n, double* s1,
                          double* s2) noexcept nogil:
    if real is float:
        tl_nf32.moments(a, <float>m, n, s1, s2)
    else:
        tl_nf64.moments(a, m, n, s1, s2)


cdef inline void _dot(const real* g, const real* w, const real* x, double m, int64_t n,
                      double* s1, double* s2) noexcept nogil:
    if real is float:
        tl_nf32.dot(g, w, x, <float>m, n, s1, s2)
    else:
        tl_nf64.dot(g, w, x, m, n, s1, s2)


# ---- argument checks -------------------------------------------------------------------------------
cdef int _check(Array a, str name, int nd, int dtype) except -1:
    if a.nd != nd:
        raise RuntimeError(f"norm kernels: {name} must have {nd} dims, got {a.nd}")
    if a.dtype != dtype:
        raise RuntimeError(f"norm kernels: {name} has the wrong dtype")
    if not a.contiguous():
        raise RuntimeError(f"norm kernels: {name} must be contiguous")
    return 0


cdef int _check_vec(Array a, str name, int64_t n, int dtype) except -1:
    if a is None:
        return 0
    _check(a, name, 1, dtype)
    if a.shp[0] != n:
        raise RuntimeError(f"norm kernels: {name} must have {n} elements")
    return 0


cdef int _check_same(Array a, Array b, str name) except -1:
    cdef int i
    for i in range(a.nd):
        if a.shp[i] != b.shp[i]:
            raise RuntimeError(f"norm kernels: {name} must have x's shape")
    return 0


cdef inline void* _ptr(Array a) noexcept:
    return <void*>a.ptr() if a is not None else NULL


cdef int _float_dtype(Array x) except -1:
    if x.dtype != TL_FLOAT32 and x.dtype != TL_FLOAT64:
        raise RuntimeError("norm kernels: x must be float32 or float64")
    return x.dtype


# ---- layer norm ----------------------------------------------------------------------------------
cdef void _ln_row(const real* x, real* y, const real* w, const real* b, int64_t K, double eps,
                  real* mean_out, real* rstd_out) noexcept nogil:
    cdef double s, ss, mean, rstd
    _moments(x, 0.0, K, &s, &ss)
    mean = s / K
    _moments(x, mean, K, &s, &ss)        # two passes: the deviations from the mean
    rstd = 1.0 / sqrt(ss / K + eps)
    if real is float:
        tl_nf32.normalize(x, y, w, b, <float>mean, <float>rstd, K)
    else:
        tl_nf64.normalize(x, y, w, b, mean, rstd, K)
    mean_out[0] = <real>mean
    rstd_out[0] = <real>rstd


cdef void _ln_forward(const real* x, real* y, const real* w, const real* b, int64_t M, int64_t K,
                      double eps, real* mean, real* rstd) noexcept nogil:
    cdef int64_t r
    cdef int th = num_chunks(M * K, GRAIN)
    if th > 1:
        for r in prange(M, num_threads=th, schedule="static"):
            _ln_row(x + r * K, y + r * K, w, b, K, eps, mean + r, rstd + r)
    else:
        for r in range(M):
            _ln_row(x + r * K, y + r * K, w, b, K, eps, mean + r, rstd + r)


def layer_norm_forward(Array x, Array w, Array b, double eps):
    """(y, mean, rstd) of contiguous x [M, K]; w, b: [K] or None.  mean and rstd are [M]."""
    cdef int dt = _float_dtype(x)
    _check(x, "x", 2, dt)
    cdef int64_t M = x.shp[0], K = x.shp[1]
    _check_vec(w, "weight", K, dt)
    _check_vec(b, "bias", K, dt)
    cdef Array y = new_array(2, x.shp, dt)
    cdef Array mean = new_array(1, x.shp, dt)
    cdef Array rstd = new_array(1, x.shp, dt)
    cdef void* wp = _ptr(w)
    cdef void* bp = _ptr(b)
    if M * K > 0:
        with nogil:
            if dt == TL_FLOAT32:
                _ln_forward(<const float*>x.ptr(), <float*>y.ptr(), <const float*>wp,
                            <const float*>bp, M, K, eps, <float*>mean.ptr(), <float*>rstd.ptr())
            else:
                _ln_forward(<const double*>x.ptr(), <double*>y.ptr(), <const double*>wp,
                            <const double*>bp, M, K, eps, <double*>mean.ptr(), <double*>rstd.ptr())
    return y, mean, rstd


cdef void _ln_dx_row(const real* g, const real* x, const real* w, real mean, real rstd,
                     int64_t K, real* dx) noexcept nogil:
    cdef double a, bsum
    _dot(g, w, x, mean, K, &a, &bsum)
    cdef real ca = <real>(a / K), cb = <real>(bsum * rstd / K)
    if real is float:
        tl_nf32.ln_dx(g, x, w, mean, rstd, ca, cb, K, dx)
    else:
        tl_nf64.ln_dx(g, x, w, mean, rstd, ca, cb, K, dx)


cdef void _ln_param_block(const real* g, const real* x, const real* mean, const real* rstd,
                          int64_t r0, int64_t r1, int64_t K, real* acc_w, real* acc_b,
                          double* dw, double* db) noexcept nogil:
    """Column sums of g * xhat (into dw, when not NULL) and g (db) over rows [r0, r1): rows are
    added in the element type (acc_*) and flushed into the doubles every FLUSH_ROWS rows."""
    cdef int64_t r, k, r_flush
    for k in range(K):
        if dw != NULL:
            dw[k] = 0.0
        if db != NULL:
            db[k] = 0.0
    r = r0
    while r < r1:
        r_flush = min(r1, r + FLUSH_ROWS)
        for k in range(K):
            if acc_w != NULL:
                acc_w[k] = 0
            if acc_b != NULL:
                acc_b[k] = 0
        while r < r_flush:
            if real is float:
                tl_nf32.colacc(g + r * K, x + r * K, mean[r], rstd[r], K, acc_w, acc_b)
            else:
                tl_nf64.colacc(g + r * K, x + r * K, mean[r], rstd[r], K, acc_w, acc_b)
            r += 1
        for k in range(K):
            if dw != NULL:
                dw[k] += acc_w[k]
            if db != NULL:
                db[k] += acc_b[k]


cdef void _ln_backward(const real* g, const real* x, const real* w, const real* mean,
                       const real* rstd, int64_t M, int64_t K, real* dx, real* dw, real* db,
                       double* part_w, double* part_b, real* acc,
                       int64_t nblocks) noexcept nogil:
    cdef int64_t r, blk, k, rows = (M + nblocks - 1) // nblocks
    cdef int th = num_chunks(M * K, GRAIN)
    if dx != NULL:
        if th > 1:
            for r in prange(M, num_threads=th, schedule="static"):
                _ln_dx_row(g + r * K, x + r * K, w, mean[r], rstd[r], K, dx + r * K)
        else:
            for r in range(M):
                _ln_dx_row(g + r * K, x + r * K, w, mean[r], rstd[r], K, dx + r * K)
    if dw == NULL and db == NULL:
        return
    if th > 1:
        for blk in prange(nblocks, num_threads=th, schedule="static"):
            _ln_param_block(g, x, mean, rstd, blk * rows, min(M, (blk + 1) * rows), K,
                            acc + 2 * blk * K if dw != NULL else NULL,
                            acc + (2 * blk + 1) * K if db != NULL else NULL,
                            part_w + blk * K if dw != NULL else NULL,
                            part_b + blk * K if db != NULL else NULL)
    else:
        for blk in range(nblocks):
            _ln_param_block(g, x, mean, rstd, blk * rows, min(M, (blk + 1) * rows), K,
                            acc + 2 * blk * K if dw != NULL else NULL,
                            acc + (2 * blk + 1) * K if db != NULL else NULL,
                            part_w + blk * K if dw != NULL else NULL,
                            part_b + blk * K if db != NULL else NULL)
    cdef double sw, sb
    for k in range(K):                   # the blocks combined in order
        sw = 0.0
        sb = 0.0
        for blk in range(nblocks):
            if dw != NULL:
                sw += part_w[blk * K + k]
            if db != NULL:
                sb += part_b[blk * K + k]
        if dw != NULL:
            dw[k] = <real>sw
        if db != NULL:
            db[k] = <real>sb


def layer_norm_backward(Array g, Array x, Array mean, Array rstd, Array w, bint want_dx,
                        bint want_dw, bint want_db):
    """(dx, dw, db) of layer norm (None where not wanted); all arrays contiguous, g and x
    [M, K], mean and rstd [M], w [K] or None."""
    cdef int dt = _float_dtype(x)
    _check(x, "x", 2, dt)
    _check(g, "grad", 2, dt)
    _check_same(g, x, "grad")
    cdef int64_t M = x.shp[0], K = x.shp[1]
    _check_vec(mean, "mean", M, dt)
    _check_vec(rstd, "rstd", M, dt)
    _check_vec(w, "weight", K, dt)
    cdef Array dx = new_array(2, x.shp, dt) if want_dx else None
    cdef Array dw = new_array(1, x.shp + 1, dt) if want_dw else None
    cdef Array db = new_array(1, x.shp + 1, dt) if want_db else None
    cdef int64_t nblocks = max(1, min(MAX_BLOCKS, (M + 7) // 8))
    # per block: double partials of dw and db, and element-type accumulators of both
    cdef size_t nbytes = nblocks * K * (2 * sizeof(double) + 2 * tl_size(dt)) + 64
    cdef char* work = NULL
    if (want_dw or want_db) and M > 0:
        work = <char*>malloc(nbytes)
        if work == NULL:
            raise MemoryError()
    cdef double* part_w = <double*>work
    cdef double* part_b = part_w + nblocks * K if work != NULL else NULL
    cdef void* acc = <void*>(part_b + nblocks * K) if work != NULL else NULL
    cdef void* wp = _ptr(w)
    cdef void* dxp = _ptr(dx)
    cdef void* dwp = _ptr(dw)
    cdef void* dbp = _ptr(db)
    try:
        if M == 0:
            for a in (dw, db):
                if a is not None:
                    _zero(a)
        else:
            with nogil:
                if dt == TL_FLOAT32:
                    _ln_backward(<const float*>g.ptr(), <const float*>x.ptr(), <const float*>wp,
                                 <const float*>mean.ptr(), <const float*>rstd.ptr(), M, K,
                                 <float*>dxp, <float*>dwp, <float*>dbp, part_w, part_b,
                                 <float*>acc, nblocks)
                else:
                    _ln_backward(<const double*>g.ptr(), <const double*>x.ptr(),
                                 <const double*>wp, <const double*>mean.ptr(),
                                 <const double*>rstd.ptr(), M, K, <double*>dxp, <double*>dwp,
                                 <double*>dbp, part_w, part_b, <double*>acc, nblocks)
    finally:
        free(work)
    return dx, dw, db


cdef inline size_t tl_size(int dt) noexcept:
    return 4 if dt == TL_FLOAT32 else 8


cdef void _zero(Array a) noexcept:
    cdef int64_t i
    if a.dtype == TL_FLOAT32:
        for i in range(a.n):
            (<float*>a.ptr())[i] = 0
    else:
        for i in range(a.n):
            (<double*>a.ptr())[i] = 0


# ---- batch norm ----------------------------------------------------------------------------------
cdef void _bn_channel_stats(const real* x, int64_t N, int64_t C, int64_t S, int64_t c,
                            double* mean, double* var) noexcept nogil:
    cdef int64_t n
    cdef double sm = 0.0, ss = 0.0, m, a, b
    for n in range(N):
        _moments(x + (n * C + c) * S, 0.0, S, &a, &b)
        sm += a
    m = sm / (N * S)
    for n in range(N):                   # two passes: the deviations from the mean
        _moments(x + (n * C + c) * S, m, S, &a, &b)
        ss += b
    mean[c] = m
    var[c] = ss / (N * S)


# Planes of fewer than SMALL_PLANE elements (BatchNorm1d on [N, C], a CNN's last 1x1 or 2x2
# stages): a call of the vector kernels per run of S elements costs more than the run, so
# these passes go over whole rows of C*S elements instead, the per-channel sums kept in
# double per position.  One thread: such tensors are small, and the sums over n stay in a
# fixed order.
cdef int64_t SMALL_PLANE = 8


cdef int _bn_small_stats(const real* x, int64_t N, int64_t C, int64_t S, double* mean,
                         double* var) except -1 nogil:
    cdef int64_t M = C * S, n, j, c, t
    cdef double* acc = <double*>malloc(M * sizeof(double))
    cdef double sm, d
    if acc == NULL:
        with gil:
            raise MemoryError()
    for j in range(M):
        acc[j] = 0.0
    for n in range(N):
        for j in range(M):
            acc[j] += x[n * M + j]
    for c in range(C):
        sm = 0.0
        for t in range(S):
            sm += acc[c * S + t]
        mean[c] = sm / (N * S)
    for j in range(M):
        acc[j] = 0.0
    for n in range(N):                   # two passes: the deviations from the mean
        for c in range(C):
            for t in range(S):
                d = x[n * M + c * S + t] - mean[c]
                acc[c * S + t] += d * d
    for c in range(C):
        sm = 0.0
        for t in range(S):
            sm += acc[c * S + t]
        var[c] = sm / (N * S)
    free(acc)
    return 0


cdef int _bn_small_sums(const real* g, const real* x, int64_t N, int64_t C, int64_t S,
                        const double* mean, double* sum_g, double* sum_gxc) except -1 nogil:
    cdef int64_t M = C * S, n, c, t, i
    cdef double* acc = <double*>malloc(2 * M * sizeof(double))
    cdef double a, b
    if acc == NULL:
        with gil:
            raise MemoryError()
    for i in range(2 * M):
        acc[i] = 0.0
    for n in range(N):
        for c in range(C):
            for t in range(S):
                i = c * S + t
                acc[i] += g[n * M + i]
                acc[M + i] += g[n * M + i] * (x[n * M + i] - mean[c])
    for c in range(C):
        a = 0.0
        b = 0.0
        for t in range(S):
            a += acc[c * S + t]
            b += acc[M + c * S + t]
        sum_g[c] = a
        sum_gxc[c] = b
    free(acc)
    return 0


def batch_norm_stats(Array x):
    """(mean, biased var) per channel of contiguous x [N, C, S], as float64 arrays [C]."""
    cdef int dt = _float_dtype(x)
    _check(x, "x", 3, dt)
    cdef int64_t N = x.shp[0], C = x.shp[1], S = x.shp[2], c
    cdef Array mean = new_array(1, x.shp + 1, TL_FLOAT64)
    cdef Array var = new_array(1, x.shp + 1, TL_FLOAT64)
    cdef double* mp = <double*>mean.ptr()
    cdef double* vp = <double*>var.ptr()
    cdef int th = min(num_chunks(N * C * S, GRAIN), C)
    if S < SMALL_PLANE:
        with nogil:
            if dt == TL_FLOAT32:
                _bn_small_stats(<const float*>x.ptr(), N, C, S, mp, vp)
            else:
                _bn_small_stats(<const double*>x.ptr(), N, C, S, mp, vp)
        return mean, var
    with nogil:
        if dt == TL_FLOAT32:
            if th > 1:
                for c in prange(C, num_threads=th, schedule="dynamic"):
                    _bn_channel_stats(<const float*>x.ptr(), N, C, S, c, mp, vp)
            else:
                for c in range(C):
                    _bn_channel_stats(<const float*>x.ptr(), N, C, S, c, mp, vp)
        else:
            if th > 1:
                for c in prange(C, num_threads=th, schedule="dynamic"):
                    _bn_channel_stats(<const double*>x.ptr(), N, C, S, c, mp, vp)
            else:
                for c in range(C):
                    _bn_channel_stats(<const double*>x.ptr(), N, C, S, c, mp, vp)
    return mean, var


cdef void _bn_channel_sums(const real* g, const real* x, int64_t N, int64_t C, int64_t S,
                           int64_t c, const double* mean, double* sum_g,
                           double* sum_gxc) noexcept nogil:
    cdef int64_t n
    cdef double a = 0.0, b = 0.0, u, v
    for n in range(N):
        _dot(g + (n * C + c) * S, <const real*>NULL, x + (n * C + c) * S, mean[c], S, &u, &v)
        a += u
        b += v
    sum_g[c] = a
    sum_gxc[c] = b


def batch_norm_grad_sums(Array g, Array x, Array mean):
    """(sum(g), sum(g * (x - mean))) per channel of contiguous g, x [N, C, S] (mean: float64
    [C]); float64 arrays [C]."""
    cdef int dt = _float_dtype(x)
    _check(x, "x", 3, dt)
    _check(g, "grad", 3, dt)
    _check_same(g, x, "grad")
    cdef int64_t N = x.shp[0], C = x.shp[1], S = x.shp[2], c
    _check_vec(mean, "mean", C, TL_FLOAT64)
    cdef Array sum_g = new_array(1, x.shp + 1, TL_FLOAT64)
    cdef Array sum_gxc = new_array(1, x.shp + 1, TL_FLOAT64)
    cdef double* mp = <double*>mean.ptr()
    cdef double* a = <double*>sum_g.ptr()
    cdef double* b = <double*>sum_gxc.ptr()
    cdef int th = min(num_chunks(N * C * S, GRAIN), C)
    if S < SMALL_PLANE:
        with nogil:
            if dt == TL_FLOAT32:
                _bn_small_sums(<const float*>g.ptr(), <const float*>x.ptr(), N, C, S, mp, a, b)
            else:
                _bn_small_sums(<const double*>g.ptr(), <const double*>x.ptr(), N, C, S, mp, a,
                               b)
        return sum_g, sum_gxc
    with nogil:
        if dt == TL_FLOAT32:
            if th > 1:
                for c in prange(C, num_threads=th, schedule="dynamic"):
                    _bn_channel_sums(<const float*>g.ptr(), <const float*>x.ptr(), N, C, S, c,
                                     mp, a, b)
            else:
                for c in range(C):
                    _bn_channel_sums(<const float*>g.ptr(), <const float*>x.ptr(), N, C, S, c,
                                     mp, a, b)
        else:
            if th > 1:
                for c in prange(C, num_threads=th, schedule="dynamic"):
                    _bn_channel_sums(<const double*>g.ptr(), <const double*>x.ptr(), N, C, S, c,
                                     mp, a, b)
            else:
                for c in range(C):
                    _bn_channel_sums(<const double*>g.ptr(), <const double*>x.ptr(), N, C, S, c,
                                     mp, a, b)
    return sum_g, sum_gxc


cdef void _bn_affine(const real* x, real* y, int64_t N, int64_t C, int64_t S, const real* a,
                     const real* b) noexcept nogil:
    """y = x * a[c] + b[c] over [N, C, S]; runs of S in parallel."""
    cdef int64_t r, c, t, base
    cdef int th = num_chunks(N * C * S, GRAIN)
    if S < SMALL_PLANE:
        for r in range(N):
            base = r * C * S
            for c in range(C):
                for t in range(S):
                    y[base + c * S + t] = x[base + c * S + t] * a[c] + b[c]
        return
    if th > 1:
        for r in prange(N * C, num_threads=th, schedule="static"):
            _affine_run(x + r * S, y + r * S, a[r % C], b[r % C], S)
    else:
        for r in range(N * C):
            _affine_run(x + r * S, y + r * S, a[r % C], b[r % C], S)


cdef inline void _affine_run(const real* x, real* y, real a, real b, int64_t S) noexcept nogil:
    if real is float:
        tl_nf32.affine(x, y, a, b, S)
    else:
        tl_nf64.affine(x, y, a, b, S)


cdef void _bn_dx(const real* g, const real* x, real* dx, int64_t N, int64_t C, int64_t S,
                 const real* ka, const real* km, const real* kb, const real* kc) noexcept nogil:
    """dx = g * ka[c] + (x - km[c]) * kb[c] + kc[c] over [N, C, S]; runs of S in parallel."""
    cdef int64_t r, c, t, i
    cdef int th = num_chunks(N * C * S, GRAIN)
    if S < SMALL_PLANE:
        for r in range(N):
            for c in range(C):
                for t in range(S):
                    i = (r * C + c) * S + t
                    dx[i] = g[i] * ka[c] + (x[i] - km[c]) * kb[c] + kc[c]
        return
    if th > 1:
        for r in prange(N * C, num_threads=th, schedule="static"):
            _bn_dx_run(g + r * S, x + r * S, dx + r * S, ka[r % C], km[r % C], kb[r % C],
                       kc[r % C], S)
    else:
        for r in range(N * C):
            _bn_dx_run(g + r * S, x + r * S, dx + r * S, ka[r % C], km[r % C], kb[r % C],
                       kc[r % C], S)


cdef inline void _bn_dx_run(const real* g, const real* x, real* dx, real a, real m, real b,
                            real c, int64_t S) noexcept nogil:
    if real is float:
        tl_nf32.bn_dx(g, x, dx, a, m, b, c, S)
    else:
        tl_nf64.bn_dx(g, x, dx, a, m, b, c, S)


# ---- batch norm, whole ops: statistics, per-channel coefficients and the elementwise pass ---------
cdef int _coef_arrays(int64_t C, size_t isz, char** buf) except -1:
    buf[0] = <char*>malloc(4 * C * isz + 64)
    if buf[0] == NULL:
        raise MemoryError()
    return 0


cdef inline void _store(void* p, int64_t i, double v, bint f32) noexcept nogil:
    if f32:
        (<float*>p)[i] = <float>v
    else:
        (<double*>p)[i] = v


cdef inline double _load(const void* p, int64_t i, bint f32) noexcept nogil:
    if f32:
        return (<const float*>p)[i]
    return (<const double*>p)[i]


def batch_norm_forward(Array x, Array w, Array b, Array mean, Array var, double eps):
    """Batch norm of contiguous x [N, C, S]: returns (y, mean, var, invstd), the statistics as
    float64 [C] arrays (var biased).  mean/var: float64 [C] statistics to normalise with (eval
    mode), or None for the batch's own.  w, b: [C] of x's dtype, or None."""
    cdef int dt = _float_dtype(x)
    _check(x, "x", 3, dt)
    cdef int64_t N = x.shp[0], C = x.shp[1], S = x.shp[2], c
    _check_vec(w, "weight", C, dt)
    _check_vec(b, "bias", C, dt)
    if (mean is None) != (var is None):
        raise RuntimeError("norm kernels: mean and var go together")
    if mean is None:
        mean, var = batch_norm_stats(x)
    else:
        _check_vec(mean, "mean", C, TL_FLOAT64)
        _check_vec(var, "var", C, TL_FLOAT64)
    cdef Array invstd = new_array(1, x.shp + 1, TL_FLOAT64)
    cdef Array y = new_array(3, x.shp, dt)
    cdef bint f32 = dt == TL_FLOAT32
    cdef size_t isz = 4 if f32 else 8
    cdef char* buf = NULL
    _coef_arrays(C, isz, &buf)
    cdef void* scale = buf
    cdef void* shift = buf + C * isz
    cdef double* mp = <double*>mean.ptr()
    cdef double* vp = <double*>var.ptr()
    cdef double* ip = <double*>invstd.ptr()
    cdef void* wp = _ptr(w)
    cdef void* bp = _ptr(b)
    cdef double r, s
    with nogil:
        for c in range(C):
            r = 1.0 / sqrt(vp[c] + eps)
            ip[c] = r
            s = r * _load(wp, c, f32) if wp != NULL else r
            _store(scale, c, s, f32)
            _store(shift, c, (_load(bp, c, f32) if bp != NULL else 0.0) - mp[c] * s, f32)
        if f32:
            _bn_affine(<const float*>x.ptr(), <float*>y.ptr(), N, C, S, <const float*>scale,
                       <const float*>shift)
        else:
            _bn_affine(<const double*>x.ptr(), <double*>y.ptr(), N, C, S, <const double*>scale,
                       <const double*>shift)
    free(buf)
    return y, mean, var, invstd


def batch_norm_backward(Array g, Array x, Array mean, Array invstd, Array w, bint batch_stats,
                        bint want_dx, bint want_dw, bint want_db):
    """(dx, dw, db) of batch norm (None where not wanted): g, x contiguous [N, C, S]; mean and
    invstd the float64 [C] statistics the forward used; w [C] of x's dtype or None;
    batch_stats: the statistics were the batch's (training), so dx has their terms."""
    cdef int dt = _float_dtype(x)
    _check(x, "x", 3, dt)
    _check(g, "grad", 3, dt)
    _check_same(g, x, "grad")
    cdef int64_t N = x.shp[0], C = x.shp[1], S = x.shp[2], c
    _check_vec(mean, "mean", C, TL_FLOAT64)
    _check_vec(invstd, "invstd", C, TL_FLOAT64)
    _check_vec(w, "weight", C, dt)
    sum_g, sum_gxc = batch_norm_grad_sums(g, x, mean)
    cdef double* sg = <double*>(<Array>sum_g).ptr()
    cdef double* sx = <double*>(<Array>sum_gxc).ptr()
    cdef double* mp = <double*>mean.ptr()
    cdef double* ip = <double*>invstd.ptr()
    cdef bint f32 = dt == TL_FLOAT32
    cdef size_t isz = 4 if f32 else 8
    cdef Array dx = new_array(3, x.shp, dt) if want_dx else None
    cdef Array dw = new_array(1, x.shp + 1, dt) if want_dw else None
    cdef Array db = new_array(1, x.shp + 1, dt) if want_db else None
    cdef void* dwp = _ptr(dw)
    cdef void* dbp = _ptr(db)
    cdef void* wp = _ptr(w)
    cdef double n = <double>(N * S), a, k
    cdef char* buf = NULL
    _coef_arrays(C, isz, &buf)
    cdef void* ka = buf
    cdef void* km = buf + C * isz
    cdef void* kb = buf + 2 * C * isz
    cdef void* kc = buf + 3 * C * isz
    with nogil:
        for c in range(C):
            if dwp != NULL:
                _store(dwp, c, sx[c] * ip[c], f32)
            if dbp != NULL:
                _store(dbp, c, sg[c], f32)
            # dx = g * a + (x - mean) * b + c, a = w * invstd; with the batch's statistics
            # b = -a * invstd^2 * sum(g (x - mean)) / n and c = -a * sum(g) / n
            a = ip[c] * _load(wp, c, f32) if wp != NULL else ip[c]
            k = -a * ip[c] * ip[c] * sx[c] / n if batch_stats and n > 0 else 0.0
            _store(ka, c, a, f32)
            _store(km, c, mp[c], f32)
            _store(kb, c, k, f32)
            _store(kc, c, -a * sg[c] / n if batch_stats and n > 0 else 0.0, f32)
        if want_dx:
            if f32:
                _bn_dx(<const float*>g.ptr(), <const float*>x.ptr(), <float*>dx.ptr(), N, C, S,
                       <const float*>ka, <const float*>km, <const float*>kb, <const float*>kc)
            else:
                _bn_dx(<const double*>g.ptr(), <const double*>x.ptr(), <double*>dx.ptr(), N, C,
                       S, <const double*>ka, <const double*>km, <const double*>kb,
                       <const double*>kc)
    free(buf)
    return dx, dw, db
