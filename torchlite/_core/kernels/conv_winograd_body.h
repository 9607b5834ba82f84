/* Winograd F(2x2, 3x3) of one ISA level (TL_LEVEL 0, 3 or 4, functions named by
 * TL_SFX); conv_winograd.h includes this file once per level and describes the method, and
 * it includes itself once per dtype.  The transforms are plain loops over channels that the
 * compiler vectorises for the level's target. */
#ifndef TL_WINO_DTYPE
#define TL_WINO_DTYPE 32
#include "conv_winograd_body.h"
#undef TL_WINO_DTYPE
#define TL_WINO_DTYPE 64
#include "conv_winograd_body.h"
#undef TL_WINO_DTYPE
#else

#if TL_WINO_DTYPE == 32
#define T float
#define WK(name) TL_SFX(name##_f32)
#define WGEMM tl_gemm_f32
#if TL_LEVEL >= 3
#define TB 8
#define TRANS TL_SFX(tr8_ps)
#endif
#else
#define T double
#define WK(name) TL_SFX(name##_f64)
#define WGEMM tl_gemm_f64
#if TL_LEVEL >= 3
#define TB 4
#define TRANS TL_SFX(tr4_pd)
#endif
#endif

/* dst[j * ldd + i] = src[i * rs + j * cs] for i < rows, j < cols. */
static void WK(wino_transpose)(T *restrict dst, int64_t ldd, const T *restrict src, int64_t rs,
                               int64_t cs, int64_t rows, int64_t cols) {
    int64_t i0 = 0;
#ifdef TB
    if (cs == 1) {
        for (; i0 + TB <= rows; i0 += TB) {
            int64_t j = 0;
            for (; j + TB <= cols; j += TB)
                TRANS(dst + j * ldd + i0, ldd, src + i0 * rs + j, rs);
            for (; j < cols; j++)
                for (int64_t i = i0; i < i0 + TB; i++) dst[j * ldd + i] = src[i * rs + j];
        }
    }
#endif
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = i0; i < rows; i++) dst[j * ldd + i] = src[i * rs + j * cs];
}

/* U_xi = G g G^T for every (c, o), packed as B panels of the GEMM's micro-kernel: for each
 * xi (us elements apart) and each panel of nr output channels, k-major (u[(c * nr) + o % nr]);
 * the channels past O are zero.  G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. */
static void WK(wino_weights)(const tl_conv_geom *g, const T *w, T *u, int64_t npan, int nr,
                             int64_t us) {
    const int64_t C = g->C, O = g->O, panel = C * nr;
    memset(u, 0, (size_t)(16 * us) * sizeof(T));
    for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < C; c++) {
            const T *k = w + (o * C + c) * 9;
            T t[4][3], r[16];
            for (int j = 0; j < 3; j++) {         /* G g: rows */
                t[0][j] = k[j];
                t[1][j] = (T)0.5 * (k[j] + k[3 + j] + k[6 + j]);
                t[2][j] = (T)0.5 * (k[j] - k[3 + j] + k[6 + j]);
                t[3][j] = k[6 + j];
            }
            for (int i = 0; i < 4; i++) {         /* (G g) G^T: columns */
                r[i * 4 + 0] = t[i][0];
                r[i * 4 + 1] = (T)0.5 * (t[i][0] + t[i][1] + t[i][2]);
                r[i * 4 + 2] = (T)0.5 * (t[i][0] - t[i][1] + t[i][2]);
                r[i * 4 + 3] = t[i][2];
            }
            T *d = u + (o / nr) * panel + c * nr + o % nr;
            for (int xi = 0; xi < 16; xi++) d[xi * us] = r[xi];
        }
}

/* Elements between consecutive xi matrices of n elements: a cache line more than a
 * multiple of 4 KiB, so that the 16 streams of a transform (one per matrix) fall into
 * different L1 sets instead of evicting each other (n is often a power of two). */
static inline int64_t WK(wino_stride)(int64_t n) {
    const int64_t line = 64 / (int64_t)sizeof(T), page = 4096 / (int64_t)sizeof(T);
    return (n + page - 1) / page * page + line;
}

/* One band: tile rows [th0, th1) of one image (x, y at that image); bias is contiguous
 * (zeros for none).  Scratch: xb (input rows,
 * channel-last), v (16 x tpad x C), m (16 x tpad x O), yb (output rows, channel-last). */
static void WK(wino_band)(const tl_conv_geom *g, const T *x, const T *u, int64_t us, int64_t npan,
                          const T *bias, T *y, int64_t th0, int64_t th1,
                          int64_t tpad, T *xb, T *v, T *m, T *yb) {
    const tl_gemm_kernel *kern = WGEMM;
    const int64_t C = g->C, O = g->O, H = g->H, W = g->W, OH = g->OH, OW = g->OW;
    const int64_t TW = (OW + 1) / 2, Wp = 2 * TW + 2, rows = th1 - th0, tiles = rows * TW;
    const int64_t WC = Wp * C, OWb = 2 * TW;
    const int64_t vs = WK(wino_stride)(tpad * C), ms = WK(wino_stride)(tpad * O);
    const int mr = kern->mr, nr = kern->nr;
    /* 1. the input rows 2*th0 - ph ... + 2*rows + 1, (row, column + pw, channel), zeros
     *    outside the image (Wp >= W + pw: the last tile reads column Wp - 1 at most) */
    for (int64_t r = 0; r < 2 * rows + 2; r++) {
        T *dst = xb + r * WC;
        const int64_t ih = 2 * th0 - g->ph + r;
        if (ih < 0 || ih >= H) {
            memset(dst, 0, (size_t)WC * sizeof(T));
            continue;
        }
        memset(dst, 0, (size_t)(g->pw * C) * sizeof(T));
        WK(wino_transpose)(dst + g->pw * C, C, x + ih * g->xs[2], g->xs[1], g->xs[3], C, W);
        memset(dst + (g->pw + W) * C, 0, (size_t)((Wp - g->pw - W) * C) * sizeof(T));
    }
    /* 2. V_xi[tile, c] = (B^T d B)[xi], B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] */
    for (int64_t tr = 0; tr < rows; tr++)
        for (int64_t tw = 0; tw < TW; tw++) {
            const T *p = xb + 2 * tr * WC + 2 * tw * C;
            T *vt = v + (tr * TW + tw) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) {
                T d[4][4], t[4][4];
                for (int r = 0; r < 4; r++)
                    for (int s = 0; s < 4; s++) d[r][s] = p[r * WC + s * C + c];
                for (int s = 0; s < 4; s++) {
                    t[0][s] = d[0][s] - d[2][s];
                    t[1][s] = d[1][s] + d[2][s];
                    t[2][s] = d[2][s] - d[1][s];
                    t[3][s] = d[1][s] - d[3][s];
                }
                for (int r = 0; r < 4; r++) {
                    vt[(r * 4 + 0) * vs + c] = t[r][0] - t[r][2];
                    vt[(r * 4 + 1) * vs + c] = t[r][1] + t[r][2];
                    vt[(r * 4 + 2) * vs + c] = t[r][2] - t[r][1];
                    vt[(r * 4 + 3) * vs + c] = t[r][1] - t[r][3];
                }
            }
        }
    /* 3. M_xi = V_xi U_xi, one B panel at a time (it stays in L1 over the tiles) */
    for (int xi = 0; xi < 16; xi++)
        for (int64_t jp = 0; jp < npan; jp++) {
            const T *b = u + xi * us + jp * C * nr;
            const int n = (int)(O - jp * nr < nr ? O - jp * nr : nr);
            for (int64_t i0 = 0; i0 < tiles; i0 += mr)
                kern->tile(C, v + xi * vs + i0 * C, C, b, m + xi * ms + i0 * O + jp * nr, O,
                           (int)(tiles - i0 < mr ? tiles - i0 : mr), n);
        }
    /* 4. the 2x2 outputs A^T M A (+ bias), A^T = [1 1 1 0; 0 1 -1 -1], channel-last */
    for (int64_t tr = 0; tr < rows; tr++)
        for (int64_t tw = 0; tw < TW; tw++) {
            const T *q = m + (tr * TW + tw) * O;
            T *o0 = yb + (2 * tr * OWb + 2 * tw) * O, *o1 = o0 + OWb * O;
#pragma omp simd
            for (int64_t o = 0; o < O; o++) {
                T s[2][4];
                for (int k = 0; k < 4; k++) {
                    const T m0 = q[k * ms + o], m1 = q[(4 + k) * ms + o];
                    const T m2 = q[(8 + k) * ms + o], m3 = q[(12 + k) * ms + o];
                    s[0][k] = m0 + m1 + m2;
                    s[1][k] = m1 - m2 - m3;
                }
                const T bv = bias[o];
                o0[o] = s[0][0] + s[0][1] + s[0][2] + bv;
                o0[O + o] = s[0][1] - s[0][2] - s[0][3] + bv;
                o1[o] = s[1][0] + s[1][1] + s[1][2] + bv;
                o1[O + o] = s[1][1] - s[1][2] - s[1][3] + bv;
            }
        }
    /* 5. into (O, OH, OW), the rows and columns past the output dropped */
    for (int64_t a = 0; a < 2 * rows && 2 * th0 + a < OH; a++)
        WK(wino_transpose)(y + (2 * th0 + a) * OW, OH * OW, yb + a * OWb * O, O, 1, OW, O);
}

static int WK(tl_wino_forward)(const tl_conv_geom *g, const T *x, const T *w, const T *bias,
                               int64_t bstride, T *y, int nthreads) {
    const tl_gemm_kernel *kern = WGEMM;
    const int64_t C = g->C, O = g->O, TH = (g->OH + 1) / 2, TW = (g->OW + 1) / 2;
    const int mr = kern->mr, nr = kern->nr;
    const int64_t npan = (O + nr - 1) / nr;
    /* tile rows per band: V and M within TL_WINO_BAND_BYTES, at least one row */
    int64_t target = TL_WINO_BAND_BYTES / (int64_t)(16 * (C + O) * sizeof(T));
    int64_t rows = target / TW;
    rows = rows < 1 ? 1 : (rows > TH ? TH : rows);
    const int64_t nbands = (TH + rows - 1) / rows, items = g->N * nbands;
    const int64_t tpad = (rows * TW + mr - 1) / mr * mr, Wp = 2 * TW + 2;
    const int64_t xb_n = (2 * rows + 2) * Wp * C, v_n = 16 * WK(wino_stride)(tpad * C);
    const int64_t m_n = 16 * WK(wino_stride)(tpad * O);
    const int64_t yb_n = 2 * rows * 2 * TW * O;
    const int64_t per_thread = (xb_n + v_n + m_n + yb_n + 4 * 16) / 16 * 16;
    const int64_t us = WK(wino_stride)(npan * C * nr);
    T *u = (T *)tl_aligned_alloc(64, (size_t)(16 * us + O) * sizeof(T));
    if (!u) return -1;
    WK(wino_weights)(g, w, u, npan, nr, us);
    T *bvec = u + 16 * us;
    for (int64_t o = 0; o < O; o++) bvec[o] = bias ? bias[o * bstride] : (T)0;
    int failed = 0;
    if (nthreads > items) nthreads = (int)(items > 0 ? items : 1);
#pragma omp parallel num_threads(nthreads)
    {
        /* the thread's GEMM packing buffer (kept between calls; this thread runs no
         * packed GEMM meanwhile) */
        T *buf = (T *)tl_gemm_scratch((size_t)per_thread * sizeof(T));
        T *xb = buf, *v = buf + (xb_n + 15) / 16 * 16;
        T *m = v + (v_n + 15) / 16 * 16, *yb = m + (m_n + 15) / 16 * 16;
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        } else {
            /* the rows of V past a band's tiles are read by the micro-kernel (not used) */
            memset(v, 0, (size_t)v_n * sizeof(T));
        }
#pragma omp for schedule(static)
        for (int64_t it = 0; it < items; it++) {
            if (!buf) continue;
            const int64_t n = it / nbands, th0 = (it % nbands) * rows;
            const int64_t th1 = th0 + rows < TH ? th0 + rows : TH;
            WK(wino_band)(g, x + n * g->xs[0], u, us, npan, bvec, y + n * O * g->OH * g->OW,
                          th0, th1, tpad, xb, v, m, yb);
        }
    }
    tl_aligned_free(u);
    return failed ? -1 : 0;
}

#undef T
#undef WK
#undef WGEMM
#ifdef TB
#undef TB
#undef TRANS
#endif
#endif
