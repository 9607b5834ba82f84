/* im2col / col2im of one ISA level (TL_CONV_LEVEL 0, 3 or 4, functions named by TL_SFX);
 * conv_im2col.h includes this file once per level, and it includes itself once per dtype. */
#ifndef TL_CONV_DTYPE
#define TL_CONV_DTYPE 32
#include "conv_im2col_body.h"
#undef TL_CONV_DTYPE
#define TL_CONV_DTYPE 64
#include "conv_im2col_body.h"
#undef TL_CONV_DTYPE
#else

#if TL_CONV_DTYPE == 32
#define T float
#define CK(name) TL_SFX(name##_f32)
#else
#define T double
#define CK(name) TL_SFX(name##_f64)
#endif

/* Vector ops on the first lanes [a, b) of VL: MASK(a, b), LOADZ (masked-out lanes read as
 * zero and never fault), STOREM (masked-out lanes untouched), ADD. */
#if TL_CONV_LEVEL == 4
#if TL_CONV_DTYPE == 32
#define VL 16
#define VT __m512
#define MASK(a, b) ((__mmask16)(((1u << (b)) - 1u) & ~((1u << (a)) - 1u)))
#define LOADZ(m, p) _mm512_maskz_loadu_ps(m, p)
#define STOREM(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define LOADU(p) _mm512_loadu_ps(p)
#define STOREU(p, v) _mm512_storeu_ps(p, v)
#define ADD(x, y) _mm512_add_ps(x, y)
#else
#define VL 8
#define VT __m512d
#define MASK(a, b) ((__mmask8)(((1u << (b)) - 1u) & ~((1u << (a)) - 1u)))
#define LOADZ(m, p) _mm512_maskz_loadu_pd(m, p)
#define STOREM(p, m, v) _mm512_mask_storeu_pd(p, m, v)
#define LOADU(p) _mm512_loadu_pd(p)
#define STOREU(p, v) _mm512_storeu_pd(p, v)
#define ADD(x, y) _mm512_add_pd(x, y)
#endif
#elif TL_CONV_LEVEL == 3
#if TL_CONV_DTYPE == 32
#define VL 8
#define VT __m256
#define MASK(a, b) _mm256_and_si256(                                                        \
    _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(b)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), \
    _mm256_cmpgt_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)(a) - 1)))
#define LOADZ(m, p) _mm256_maskload_ps(p, m)
#define STOREM(p, m, v) _mm256_maskstore_ps(p, m, v)
#define LOADU(p) _mm256_loadu_ps(p)
#define STOREU(p, v) _mm256_storeu_ps(p, v)
#define ADD(x, y) _mm256_add_ps(x, y)
#else
#define VL 4
#define VT __m256d
#define MASK(a, b) _mm256_and_si256(                                                        \
    _mm256_cmpgt_epi64(_mm256_set1_epi64x(b), _mm256_setr_epi64x(0, 1, 2, 3)),              \
    _mm256_cmpgt_epi64(_mm256_setr_epi64x(0, 1, 2, 3), _mm256_set1_epi64x((a) - 1)))
#define LOADZ(m, p) _mm256_maskload_pd(p, m)
#define STOREM(p, m, v) _mm256_maskstore_pd(p, m, v)
#define LOADU(p) _mm256_loadu_pd(p)
#define STOREU(p, v) _mm256_storeu_pd(p, v)
#define ADD(x, y) _mm256_add_pd(x, y)
#endif
#endif

static inline int64_t CK(clamp_lane)(int64_t v) {
#if TL_CONV_LEVEL >= 3
    return v < 0 ? 0 : (v > VL ? VL : v);
#else
    return v;
#endif
}

/* dst[j] = src[j] for j in [lo, hi), 0 for the rest of [0, n).  src may point outside the
 * input for j outside [lo, hi): those lanes are masked off and never read. */
static inline void CK(copy_row)(T *restrict dst, const T *restrict src, int64_t lo, int64_t hi,
                                int64_t n) {
#if TL_CONV_LEVEL >= 3
    for (int64_t j = 0; j < n; j += VL) {
        const int64_t a = CK(clamp_lane)(lo - j), b = CK(clamp_lane)(hi - j);
        const int64_t e = CK(clamp_lane)(n - j);
        VT v = LOADZ(MASK(a, b), src + j);
        if (e == VL)                /* masked stores are slow on some CPUs: only at the end */
            STOREU(dst + j, v);
        else
            STOREM(dst + j, MASK(0, e), v);
    }
#else
    for (int64_t j = 0; j < lo; j++) dst[j] = 0;
    for (int64_t j = lo; j < hi; j++) dst[j] = src[j];
    for (int64_t j = hi; j < n; j++) dst[j] = 0;
#endif
}

/* dst[j] += src[j] for j in [0, n). */
static inline void CK(add_row)(T *restrict dst, const T *restrict src, int64_t n) {
#if TL_CONV_LEVEL >= 3
    int64_t j = 0;
    for (; j + VL <= n; j += VL)
        STOREU(dst + j, ADD(LOADU(dst + j), LOADU(src + j)));
    if (j < n) {
        const int64_t e = n - j;
        VT d = LOADZ(MASK(0, e), dst + j);
        VT s = LOADZ(MASK(0, e), src + j);
        STOREM(dst + j, MASK(0, e), ADD(d, s));
    }
#else
    for (int64_t j = 0; j < n; j++) dst[j] += src[j];
#endif
}

/* The output rows oh in [a, b) whose input row oh*sh + base lies in [0, H). */
static inline void CK(valid_rows)(const tl_conv_geom *g, int64_t base, int64_t *a, int64_t *b) {
    int64_t lo = base >= 0 ? 0 : (-base + g->sh - 1) / g->sh;
    int64_t hi = g->H - 1 - base < 0 ? 0 : (g->H - 1 - base) / g->sh + 1;
    if (hi > g->OH) hi = g->OH;
    if (lo > hi) lo = hi;
    *a = lo;
    *b = hi;
}

static inline void CK(zero)(T *dst, int64_t n) {
    for (int64_t j = 0; j < n; j++) dst[j] = 0;
}

/* The rows of col are ldc >= L elements apart (several images side by side when ldc > L).
 * A short row is stored with one unmasked vector store when the excess lands where it does
 * no harm: for ldc == L in the rows written after it or in the `slack` elements past the
 * matrix (scratch buffers have room; a user-visible result has none), for ldc > L inside
 * this image's L columns of the row only. */
static void CK(im2col_small)(const tl_conv_geom *g, const T *x, T *col, int64_t ldc) {
    int64_t table[TL_CONV_SMALL_TABLE];
    const int64_t KK = g->KH * g->KW, L = g->L;
    tl_conv_tap_table(g, g->xs[2], g->xs[3], table);
    for (int64_t c = 0; c < g->Cg; c++) {
        const T *xc = x + c * g->xs[1];
        for (int64_t t = 0; t < KK; t++) {
            T *dst = col + (c * KK + t) * ldc;
            const int64_t *o = table + t * L;
            for (int64_t l = 0; l < L; l++)
                dst[l] = o[l] >= 0 ? xc[o[l]] : (T)0;
        }
    }
}

static void CK(tl_im2col)(const tl_conv_geom *g, const T *x, T *col, int64_t ldc, int64_t slack) {
    if (tl_conv_small(g)) {
        CK(im2col_small)(g, x, col, ldc);
        return;
    }
    const int64_t sC = g->xs[1], sH = g->xs[2], sW = g->xs[3], OW = g->OW;
    const int64_t step = g->sw * sW;
    const T *const mat_end = col + (g->CKK - 1) * ldc + g->L + slack;
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t ki = 0; ki < g->KH; ki++)
            for (int64_t kj = 0; kj < g->KW; kj++) {
                T *dst = col + ((c * g->KH + ki) * g->KW + kj) * ldc;
                const T *const end = ldc == g->L ? mat_end : dst + g->L;
                const int64_t off = kj * g->dw - g->pw, base = ki * g->dh - g->ph;
                int64_t lo, hi, r0, r1;
                tl_conv_valid_cols(g, off, &lo, &hi);
                CK(valid_rows)(g, base, &r0, &r1);
                CK(zero)(dst, r0 * OW);
                CK(zero)(dst + r1 * OW, (g->OH - r1) * OW);
                const T *src = x + c * sC + (r0 * g->sh + base) * sH + off * sW;
                const int64_t srow = g->sh * sH;
                int64_t oh = r0;
#if TL_CONV_LEVEL >= 3
                if (step == 1 && OW <= VL) {        /* one vector per row */
                    const int64_t a = lo, b = hi;
                    for (; oh < r1 && dst + oh * OW + VL <= end; oh++, src += srow)
                        STOREU(dst + oh * OW, LOADZ(MASK(a, b), src));
                }
#endif
                for (; oh < r1; oh++, src += srow) {
                    T *d = dst + oh * OW;
                    if (step == 1) {
                        CK(copy_row)(d, src, lo, hi, OW);
                    } else {
                        for (int64_t j = 0; j < lo; j++) d[j] = 0;
                        for (int64_t j = lo; j < hi; j++) d[j] = src[j * step];
                        for (int64_t j = hi; j < OW; j++) d[j] = 0;
                    }
                }
            }
}

/* The rows of col are ldc >= L elements apart; dx is the Cg x H x W block this call owns
 * (nothing else writes it meanwhile). */
/* The adjoint of im2col_small, adding in the same order as the general path: channel, tap,
 * output position. */
static void CK(col2im_small)(const tl_conv_geom *g, const T *col, int64_t ldc, T *dx) {
    int64_t table[TL_CONV_SMALL_TABLE];
    const int64_t KK = g->KH * g->KW, L = g->L, HW = g->H * g->W;
    tl_conv_tap_table(g, g->W, 1, table);
    for (int64_t c = 0; c < g->Cg; c++) {
        T *dc = dx + c * HW;
        for (int64_t t = 0; t < KK; t++) {
            const T *src = col + (c * KK + t) * ldc;
            const int64_t *o = table + t * L;
            for (int64_t l = 0; l < L; l++)
                if (o[l] >= 0) dc[o[l]] += src[l];
        }
    }
}

static void CK(tl_col2im)(const tl_conv_geom *g, const T *col, int64_t ldc, T *dx) {
    if (tl_conv_small(g)) {
        CK(col2im_small)(g, col, ldc, dx);
        return;
    }
    const int64_t HW = g->H * g->W, OW = g->OW;
    T *const end = dx + g->Cg * HW;
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t ki = 0; ki < g->KH; ki++)
            for (int64_t kj = 0; kj < g->KW; kj++) {
                const T *src = col + ((c * g->KH + ki) * g->KW + kj) * ldc;
                const int64_t off = kj * g->dw - g->pw, base = ki * g->dh - g->ph;
                int64_t lo, hi, r0, r1;
                tl_conv_valid_cols(g, off, &lo, &hi);
                CK(valid_rows)(g, base, &r0, &r1);
                if (hi <= lo) continue;
                T *dst = dx + c * HW + (r0 * g->sh + base) * g->W + off + lo * g->sw;
                const int64_t drow = g->sh * g->W, n = hi - lo;
                int64_t oh = r0;
                src += lo;
                if (g->sw != 1) {
                    for (; oh < r1; oh++, dst += drow)
                        for (int64_t j = 0; j < n; j++) dst[j * g->sw] += src[oh * OW + j];
                    continue;
                }
#if TL_CONV_LEVEL >= 3
                if (n <= VL) {      /* one vector per row; lanes past n add zero */
                    for (; oh < r1 && dst + VL <= end; oh++, dst += drow)
                        STOREU(dst, ADD(LOADU(dst), LOADZ(MASK(0, n), src + oh * OW)));
                }
#endif
                for (; oh < r1; oh++, dst += drow)
                    CK(add_row)(dst, src + oh * OW, n);
            }
}

#undef T
#undef CK
#if TL_CONV_LEVEL >= 3
#undef VL
#undef VT
#undef MASK
#undef LOADZ
#undef STOREM
#undef LOADU
#undef STOREU
#undef ADD
#endif
#endif
