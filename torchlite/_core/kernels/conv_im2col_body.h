/* im2col / col2im of one ISA level (TL_LEVEL 0, 3 or 4, functions named by TL_SFX);
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
#if TL_LEVEL >= 3
#define CK_TB 8
#define CK_TRANS TL_SFX(tr8_ps)
#endif
#else
#define T double
#define CK(name) TL_SFX(name##_f64)
#if TL_LEVEL >= 3
#define CK_TB 4
#define CK_TRANS TL_SFX(tr4_pd)
#endif
#endif

/* Vector ops on the first lanes [a, b) of VL: MASK(a, b), LOADZ (masked-out lanes read as
 * zero and never fault), STOREM (masked-out lanes untouched), ADD. */
#if TL_LEVEL == 4
#if TL_CONV_DTYPE == 32
#define VL 16
#define VT __m512
#define MASK_T __mmask16
#define MASK(a, b) ((__mmask16)(((1u << (b)) - 1u) & ~((1u << (a)) - 1u)))
#define LOADZ(m, p) _mm512_maskz_loadu_ps(m, p)
#define STOREM(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define LOADU(p) _mm512_loadu_ps(p)
#define STOREU(p, v) _mm512_storeu_ps(p, v)
#define ADD(x, y) _mm512_add_ps(x, y)
#else
#define VL 8
#define VT __m512d
#define MASK_T __mmask8
#define MASK(a, b) ((__mmask8)(((1u << (b)) - 1u) & ~((1u << (a)) - 1u)))
#define LOADZ(m, p) _mm512_maskz_loadu_pd(m, p)
#define STOREM(p, m, v) _mm512_mask_storeu_pd(p, m, v)
#define LOADU(p) _mm512_loadu_pd(p)
#define STOREU(p, v) _mm512_storeu_pd(p, v)
#define ADD(x, y) _mm512_add_pd(x, y)
#endif
#elif TL_LEVEL == 3
#if TL_CONV_DTYPE == 32
#define VL 8
#define VT __m256
#define MASK_T __m256i
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
#define MASK_T __m256i
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
#if TL_LEVEL >= 3
    return v < 0 ? 0 : (v > VL ? VL : v);
#else
    return v;
#endif
}

/* dst[j] = src[j] for j in [lo, hi), 0 for the rest of [0, n).  src may point outside the
 * input for j outside [lo, hi): those lanes are masked off and never read. */
static inline void CK(copy_row)(T *restrict dst, const T *restrict src, int64_t lo, int64_t hi,
                                int64_t n) {
#if TL_LEVEL >= 3
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
#if TL_LEVEL >= 3
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

/* dst[j * ldd + i] = src[i * rs + j * cs] for i < rows, j < cols: the layout changes of the
 * convolutions (an NCHW plane block to channel-last rows and back; conv_winograd_body.h, and
 * conv.pyx for channels_last results), by the GEMM's 8x8 / 4x4 register transposes where
 * the source rows are contiguous, plain copies where the destination columns are. */
static void CK(tl_conv_transpose)(T *restrict dst, int64_t ldd, const T *restrict src, int64_t rs,
                               int64_t cs, int64_t rows, int64_t cols) {
    if (rs == 1) {          /* runs of rows elements on both sides (a channels_last image) */
        for (int64_t j = 0; j < cols; j++)
            memcpy(dst + j * ldd, src + j * cs, (size_t)rows * sizeof(T));
        return;
    }
    int64_t i0 = 0;
#ifdef CK_TB
    if (cs == 1) {
        for (; i0 + CK_TB <= rows; i0 += CK_TB) {
            int64_t j = 0;
            for (; j + CK_TB <= cols; j += CK_TB)
                CK_TRANS(dst + j * ldd + i0, ldd, src + i0 * rs + j, rs);
            for (; j < cols; j++)
                for (int64_t i = i0; i < i0 + CK_TB; i++) dst[j * ldd + i] = src[i * rs + j];
        }
    }
#endif
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = i0; i < rows; i++) dst[j * ldd + i] = src[i * rs + j * cs];
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
#if TL_LEVEL >= 3
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

/* B of the forward's GEMM packed straight from the images, never materialised: the im2col
 * matrices of consecutive images side by side (column j: image j / L, output position
 * j % L), rows [r0, r0+kc) and columns [j0, j0+nc) written as the GEMM's packing would
 * write them (gemm_kernel.h): panels of nr columns, each k-major, dst[(q / nr) * nr * kc +
 * p * nr + q % nr], the columns of the last panel past nc zero.  A panel's columns fall into
 * runs of one output row (segments, worked out once per panel); each row of the panel copies
 * every run from its input row like im2col does, so a run of a stride-1 row is one masked
 * vector load.  A run is stored with a whole vector when that stays inside the block: the
 * excess lands on columns written after it (later in this row, or rows later in order). */
static void CK(tl_im2col_pack)(const void *vctx, void *vdst, int nr, int64_t r0, int64_t kc,
                               int64_t j0, int64_t nc) {
    const tl_conv_pack_ctx *ctx = (const tl_conv_pack_ctx *)vctx;
    const tl_conv_geom *g = ctx->g;
    const T *x = (const T *)ctx->x;
    T *dst = (T *)vdst;
    const int64_t L = g->L, OW = g->OW, KW = g->KW, KK = g->KH * g->KW;
    const int64_t sC = g->xs[1], sH = g->xs[2], sW = g->xs[3], step = g->sw * sW;
    const uint64_t H = (uint64_t)g->H;
    T *const end = dst + (nc + nr - 1) / nr * nr * kc;
    (void)end;   /* (the portable copy never stores past a run) */
    /* per row of the block (a kernel tap of a channel): where it reads relative to a run's
     * start, its input-row offset, and the output columns whose input column is inside */
    int64_t roff[TL_CONV_PACK_ROWS], rdih[TL_CONV_PACK_ROWS], rlo[TL_CONV_PACK_ROWS];
    int64_t rhi[TL_CONV_PACK_ROWS];
    /* per run of the panel: its first column, length, input row (before the tap's offset),
     * first output column, and where it reads from (before the row's offset) */
    int64_t sq[TL_CONV_PACK_MAX_NR], sn[TL_CONV_PACK_MAX_NR], sih[TL_CONV_PACK_MAX_NR];
    int64_t sow[TL_CONV_PACK_MAX_NR];
    const T *ssrc[TL_CONV_PACK_MAX_NR];
    for (int64_t pb = 0; pb < kc; pb += TL_CONV_PACK_ROWS) {
        const int64_t rows = kc - pb < TL_CONV_PACK_ROWS ? kc - pb : TL_CONV_PACK_ROWS;
        int64_t c = (r0 + pb) / KK, t = (r0 + pb) - c * KK;
        int64_t ki = t / KW, kj = t - ki * KW;
        for (int64_t p = 0; p < rows; p++) {
            const int64_t off = kj * g->dw - g->pw;
            rdih[p] = ki * g->dh;
            roff[p] = c * sC + rdih[p] * sH + off * sW;
            tl_conv_valid_cols(g, off, &rlo[p], &rhi[p]);
            if (++kj == KW) {
                kj = 0;
                if (++ki == g->KH) { ki = 0; c++; }
            }
        }
        for (int64_t jp = 0; jp < nc; jp += nr) {
            const int64_t w = nc - jp < nr ? nc - jp : nr;
            int ns = 0;
            for (int64_t j = j0 + jp, q = 0; q < w; ns++) {
                const int64_t i = j / L, l = j - i * L, oh = l / OW, ow = l - oh * OW;
                const int64_t n = OW - ow < w - q ? OW - ow : w - q;
                sq[ns] = q; sn[ns] = n; sih[ns] = oh * g->sh - g->ph; sow[ns] = ow;
                ssrc[ns] = x + i * g->xs[0] + sih[ns] * sH + ow * g->sw * sW;
                j += n; q += n;
            }
            T *row = dst + jp * kc + pb * nr;
#if TL_LEVEL >= 3
            if (step == 1 && OW <= VL && row + rows * nr + VL <= end) {
                /* every run is at most one vector: one masked load (lanes in the padding,
                 * or the whole run when its input row is, read as zero and never fault)
                 * and one store each, without branches */
                if (nr % OW == 0 && (j0 + jp) % OW == 0) {
                    /* every run a whole output row: its lanes are the row's valid columns */
                    for (int64_t p = 0; p < rows; p++, row += nr) {
                        const int64_t dih = rdih[p], off = roff[p];
                        const MASK_T m = MASK(rlo[p], rhi[p] > rlo[p] ? rhi[p] : rlo[p]);
                        const MASK_T none = MASK(0, 0);
                        for (int s = 0; s < ns; s++)
                            STOREU(row + s * OW, LOADZ((uint64_t)(sih[s] + dih) < H ? m : none,
                                                       ssrc[s] + off));
                    }
                    continue;
                }
                for (int64_t p = 0; p < rows; p++, row += nr) {
                    const int64_t lo = rlo[p], hi = rhi[p], dih = rdih[p], off = roff[p];
                    for (int s = 0; s < ns; s++) {
                        int64_t a = lo - sow[s], b = hi - sow[s];
                        a = a < 0 ? 0 : a;
                        b = b > sn[s] ? sn[s] : b;
                        b = b < a || (uint64_t)(sih[s] + dih) >= H ? a : b;
                        STOREU(row + sq[s], LOADZ(MASK(a, b), ssrc[s] + off));
                    }
                    for (int64_t q = w; q < nr; q++) row[q] = 0;
                }
                continue;
            }
#endif
            for (int64_t p = 0; p < rows; p++, row += nr) {
                for (int s = 0; s < ns; s++) {
                    const int64_t n = sn[s];
                    T *d = row + sq[s];
                    if ((uint64_t)(sih[s] + rdih[p]) >= H) {
                        CK(zero)(d, n);
                        continue;
                    }
                    int64_t a = rlo[p] - sow[s], b = rhi[p] - sow[s];
                    a = a < 0 ? 0 : (a > n ? n : a);
                    b = b < a ? a : (b > n ? n : b);
                    const T *src = ssrc[s] + roff[p];
                    if (step != 1) {
                        for (int64_t e = 0; e < a; e++) d[e] = 0;
                        for (int64_t e = a; e < b; e++) d[e] = src[e * step];
                        for (int64_t e = b; e < n; e++) d[e] = 0;
                        continue;
                    }
#if TL_LEVEL >= 3
                    if (n <= VL && d + VL <= end) {
                        STOREU(d, LOADZ(MASK(a, b), src));
                        continue;
                    }
#endif
                    CK(copy_row)(d, src, a, b, n);
                }
                CK(zero)(row + w, nr - w);
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
#if TL_LEVEL >= 3
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
#ifdef CK_TB
#undef CK_TB
#undef CK_TRANS
#endif
#if TL_LEVEL >= 3
#undef VL
#undef VT
#undef MASK_T
#undef MASK
#undef LOADZ
#undef STOREM
#undef LOADU
#undef STOREU
#undef ADD
#endif
#endif
