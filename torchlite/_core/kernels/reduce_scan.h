/* Scans (cumsum, cumprod, logcumsumexp, cummax, cummin) and the median, compiled once
 * (baseline ISA): they are sequential along the scanned dim, so their speed comes from
 * running many columns or rows side by side, not from wide SIMD.
 *
 * A scan runs down nc columns: element (r, j) is at x[r * rs + j * cs], and y (and iy)
 * have the same layout.  Columns of a [R, B] slab (rs = B, cs = 1) are scanned side by side,
 * which vectorises; contiguous rows of length R (rs = 1, cs = R) one after the other (side
 * by side, rows 4 KiB apart would thrash L1 sets).  Float32 cumsum/cumprod accumulate in
 * float64. */
#ifndef TL_REDUCE_SCAN_H
#define TL_REDUCE_SCAN_H

#define TL_SCB 256   /* columns per accumulator block */

typedef void (*tl_scan_fn)(const char *x, char *y, int64_t R, int64_t rs, int64_t cs,
                           int64_t nc);
typedef void (*tl_scanarg_fn)(const char *x, char *y, int64_t *iy, int64_t R, int64_t rs,
                              int64_t cs, int64_t nc);
/* median of each of nrows contiguous rows of n elements: the lower median, and the first
 * index holding it; NaN propagates unless ignore_nan (nanmedian). */
typedef void (*tl_median_fn)(const char *x, int64_t nrows, int64_t n, int ignore_nan,
                             char *val, int64_t *idx);

enum { TL_SCAN_CUMSUM = 0, TL_SCAN_CUMPROD = 1, TL_SCAN_LOGCUMSUMEXP = 2, TL_SCAN_N = 3 };
static tl_scan_fn tl_scan[TL_SCAN_N][TL_RS_N];
static tl_scanarg_fn tl_scanarg[2][TL_RS_N];   /* [is_min][slot] */
static tl_median_fn tl_median[TL_RS_N];

/* log(exp(a) + exp(b)) without overflow; infinities and NaN pass through */
TL_INLINE double tl_logaddexp(double a, double b) {
    if (a != a || b != b) return a + b;
    const double m = a > b ? a : b, d = a > b ? b - a : a - b;
    if (m == -INFINITY || m == INFINITY) return m;
    return m + log1p(exp(d));
}

#define TL_S_ADD(a, v) ((a) + (v))
#define TL_S_MUL(a, v) ((a) * (v))
#define TL_S_LAE(a, v) tl_logaddexp((a), (v))

#define TL_SCAN_LOOP(T, AT, STEP, CS)                                                      \
        for (int64_t r = 0; r < R; r++) {                                                    \
            const T *x = (const T *)xb + r * rs + c0 * (CS);                                 \
            T *y = (T *)yb + r * rs + c0 * (CS);                                             \
            for (int64_t j = 0; j < nb; j++) {                                               \
                acc[j] = STEP(acc[j], (AT)x[j * (CS)]); y[j * (CS)] = (T)acc[j]; }           \
        }
#define TL_SCAN_DEF(NAME, T, AT, INIT, STEP)                                               \
static void NAME(const char *xb, char *yb, int64_t R, int64_t rs, int64_t cs, int64_t nc) { \
    for (int64_t c0 = 0; c0 < nc; c0 += TL_SCB) {                                            \
        const int64_t nb = nc - c0 < TL_SCB ? nc - c0 : TL_SCB;                              \
        AT acc[TL_SCB];                                                                      \
        for (int64_t j = 0; j < nb; j++) acc[j] = INIT;                                      \
        if (rs == 1) {                                                                       \
            for (int64_t j = 0; j < nb; j++) {                                               \
                const T *x = (const T *)xb + (c0 + j) * cs;                                  \
                T *y = (T *)yb + (c0 + j) * cs;                                              \
                AT a = acc[j];                                                               \
                for (int64_t r = 0; r < R; r++) { a = STEP(a, (AT)x[r]); y[r] = (T)a; }      \
            }                                                                                \
        } else if (cs == 1) { TL_SCAN_LOOP(T, AT, STEP, 1) }                                 \
        else { TL_SCAN_LOOP(T, AT, STEP, cs) }                                               \
    }                                                                                        \
}

/* cummax/cummin: PyTorch's rule, the later index on ties, and NaN sticks once met. */
#define TL_SCAN_TAKE_MAX(b, v) ((v) != (v) || ((b) == (b) && (v) >= (b)))
#define TL_SCAN_TAKE_MIN(b, v) ((v) != (v) || ((b) == (b) && (v) <= (b)))
#define TL_SCANARG_DEF(NAME, T, TAKE)                                                      \
static void NAME(const char *xb, char *yb, int64_t *iyb, int64_t R, int64_t rs, int64_t cs,  \
                 int64_t nc) {                                                               \
    for (int64_t c0 = 0; c0 < nc; c0 += TL_SCB) {                                            \
        const int64_t nb = nc - c0 < TL_SCB ? nc - c0 : TL_SCB;                              \
        T best[TL_SCB]; int64_t bi[TL_SCB];                                                  \
        for (int64_t r = 0; r < R; r++) {                                                    \
            const T *x = (const T *)xb + r * rs + c0 * cs;                                   \
            T *y = (T *)yb + r * rs + c0 * cs;                                               \
            int64_t *iy = iyb + r * rs + c0 * cs;                                            \
            for (int64_t j = 0; j < nb; j++) {                                               \
                const T v = x[j * cs];                                                       \
                if (r == 0 || TAKE(best[j], v)) { best[j] = v; bi[j] = r; }                  \
                y[j * cs] = best[j]; iy[j * cs] = bi[j];                                     \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
}

TL_SCAN_DEF(sc_cumsum_f32, float, double, 0.0, TL_S_ADD)
TL_SCAN_DEF(sc_cumsum_f64, double, double, 0.0, TL_S_ADD)
TL_SCAN_DEF(sc_cumsum_i64, int64_t, uint64_t, 0, TL_S_ADD)
TL_SCAN_DEF(sc_cumprod_f32, float, double, 1.0, TL_S_MUL)
TL_SCAN_DEF(sc_cumprod_f64, double, double, 1.0, TL_S_MUL)
TL_SCAN_DEF(sc_cumprod_i64, int64_t, uint64_t, 1, TL_S_MUL)
TL_SCAN_DEF(sc_lcse_f32, float, double, -INFINITY, TL_S_LAE)
TL_SCAN_DEF(sc_lcse_f64, double, double, -INFINITY, TL_S_LAE)
TL_SCANARG_DEF(sa_cummax_f32, float, TL_SCAN_TAKE_MAX)
TL_SCANARG_DEF(sa_cummax_f64, double, TL_SCAN_TAKE_MAX)
TL_SCANARG_DEF(sa_cummax_i64, int64_t, TL_SCAN_TAKE_MAX)
TL_SCANARG_DEF(sa_cummin_f32, float, TL_SCAN_TAKE_MIN)
TL_SCANARG_DEF(sa_cummin_f64, double, TL_SCAN_TAKE_MIN)
TL_SCANARG_DEF(sa_cummin_i64, int64_t, TL_SCAN_TAKE_MIN)

/* Move the k-th smallest of a[0..n) to a[k] (Hoare partition, median-of-3 pivot, which also
 * puts sentinels at both ends so the inner scans stay in bounds).  No NaN in a. */
#define TL_SELECT_DEF(NAME, T)                                                             \
static void NAME(T *a, int64_t n, int64_t k) {                                              \
    int64_t lo = 0, hi = n - 1;                                                              \
    T t;                                                                                     \
    while (hi > lo) {                                                                        \
        const int64_t mid = lo + (hi - lo) / 2;                                              \
        if (a[mid] < a[lo]) { t = a[mid]; a[mid] = a[lo]; a[lo] = t; }                       \
        if (a[hi] < a[lo]) { t = a[hi]; a[hi] = a[lo]; a[lo] = t; }                          \
        if (a[hi] < a[mid]) { t = a[hi]; a[hi] = a[mid]; a[mid] = t; }                       \
        const T pivot = a[mid];                                                              \
        int64_t i = lo, j = hi;                                                              \
        while (i <= j) {                                                                     \
            while (a[i] < pivot) i++;                                                        \
            while (a[j] > pivot) j--;                                                        \
            if (i <= j) { t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }                       \
        }                                                                                    \
        if (k <= j) hi = j;                                                                  \
        else if (k >= i) lo = i;                                                             \
        else return;                                                                         \
    }                                                                                        \
}

#define TL_MEDIAN_DEF(NAME, SELECT, T, NANV)                                               \
static void NAME(const char *xb, int64_t nrows, int64_t n, int ignore_nan, char *valb,      \
                 int64_t *idx) {                                                             \
    T *val = (T *)valb;                                                                      \
    T *s = (T *)malloc((size_t)(n > 0 ? n : 1) * sizeof(T));                                 \
    if (!s) { for (int64_t r = 0; r < nrows; r++) idx[r] = -1; return; }                     \
    for (int64_t r = 0; r < nrows; r++) {                                                    \
        const T *x = (const T *)xb + r * n;                                                  \
        int64_t m = 0, first_nan = -1;                                                       \
        for (int64_t i = 0; i < n; i++) {                                                    \
            if (x[i] != x[i]) { if (first_nan < 0) first_nan = i; }                          \
            else s[m++] = x[i];                                                              \
        }                                                                                    \
        if (m == 0 || (first_nan >= 0 && !ignore_nan)) {                                     \
            val[r] = NANV; idx[r] = first_nan >= 0 ? first_nan : 0; continue; }              \
        const int64_t k = (m - 1) / 2;                                                       \
        SELECT(s, m, k);                                                                     \
        const T v = s[k];                                                                    \
        int64_t i = 0;                                                                       \
        while (i < n - 1 && x[i] != v) i++;                                                  \
        val[r] = v; idx[r] = i;                                                              \
    }                                                                                        \
    free(s);                                                                                 \
}

TL_SELECT_DEF(tl_select_f32, float)
TL_SELECT_DEF(tl_select_f64, double)
TL_SELECT_DEF(tl_select_i64, int64_t)
TL_MEDIAN_DEF(md_f32, tl_select_f32, float, NAN)
TL_MEDIAN_DEF(md_f64, tl_select_f64, double, NAN)
TL_MEDIAN_DEF(md_i64, tl_select_i64, int64_t, 0)

static void tl_scan_register(void) {
    tl_scan[TL_SCAN_CUMSUM][TL_RS_F32] = sc_cumsum_f32;
    tl_scan[TL_SCAN_CUMSUM][TL_RS_F64] = sc_cumsum_f64;
    tl_scan[TL_SCAN_CUMSUM][TL_RS_I64] = sc_cumsum_i64;
    tl_scan[TL_SCAN_CUMPROD][TL_RS_F32] = sc_cumprod_f32;
    tl_scan[TL_SCAN_CUMPROD][TL_RS_F64] = sc_cumprod_f64;
    tl_scan[TL_SCAN_CUMPROD][TL_RS_I64] = sc_cumprod_i64;
    tl_scan[TL_SCAN_LOGCUMSUMEXP][TL_RS_F32] = sc_lcse_f32;
    tl_scan[TL_SCAN_LOGCUMSUMEXP][TL_RS_F64] = sc_lcse_f64;
    tl_scanarg[0][TL_RS_F32] = sa_cummax_f32;
    tl_scanarg[0][TL_RS_F64] = sa_cummax_f64;
    tl_scanarg[0][TL_RS_I64] = sa_cummax_i64;
    tl_scanarg[1][TL_RS_F32] = sa_cummin_f32;
    tl_scanarg[1][TL_RS_F64] = sa_cummin_f64;
    tl_scanarg[1][TL_RS_I64] = sa_cummin_i64;
    tl_median[TL_RS_F32] = md_f32;
    tl_median[TL_RS_F64] = md_f64;
    tl_median[TL_RS_I64] = md_i64;
}
#endif
