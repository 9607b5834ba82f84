/* Winograd F(2x2, 3x3) of one ISA level (TL_LEVEL 0, 3 or 4, functions named by
 * TL_SFX); conv_winograd.h includes this file once per level and describes the method, and
 * it includes itself once per dtype.  The transforms are plain loops over channels that the
 * compiler vectorises for the level's target; the transposes are conv_im2col_body.h's. */
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
#else
#define T double
#define WK(name) TL_SFX(name##_f64)
#define WGEMM tl_gemm_f64
#endif

/* U_xi = G g G^T for every (c, o), packed as B panels of the GEMM's micro-kernel: for each
 * xi (us elements apart) and each panel of nr output channels, k-major (u[(c * nr) + o % nr]);
 * the channels past O are zero.  G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. */
static void WK(wino_weights)(const tl_conv_geom *g, const T *w, T *u, int64_t npan, int nr,
                             int64_t us, int nthreads) {
    const int64_t C = g->C, O = g->O, panel = C * nr;
    memset(u, 0, (size_t)(16 * us) * sizeof(T));
#pragma omp parallel for num_threads(nthreads) schedule(static)
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

/* Rows row0 ... row0 + nrows - 1 of a (C, nsrc_rows, wsrc) image (strides sc, sr, scol) into
 * dst channel-last, each row wd columns wide with the image's columns from col0 on: dst[(r *
 * wd + col0 + j) * C + c] = src[c, row0 + r, j], zeros outside the image. */
static void WK(wino_channel_last)(T *dst, int64_t wd, int64_t col0, const T *src, int64_t sc,
                                  int64_t sr, int64_t scol, int64_t C, int64_t nsrc_rows,
                                  int64_t wsrc, int64_t row0, int64_t nrows) {
    for (int64_t r = 0; r < nrows; r++) {
        T *d = dst + r * wd * C;
        const int64_t ih = row0 + r;
        if (ih < 0 || ih >= nsrc_rows) {
            memset(d, 0, (size_t)(wd * C) * sizeof(T));
            continue;
        }
        memset(d, 0, (size_t)(col0 * C) * sizeof(T));
        WK(tl_conv_transpose)(d + col0 * C, C, src + ih * sr, sc, scol, C, wsrc);
        memset(d + (col0 + wsrc) * C, 0, (size_t)((wd - col0 - wsrc) * C) * sizeof(T));
    }
}

/* The band's geometry: tile rows [th0, th1) of one image. */
typedef struct {
    int64_t th0, rows, TW, tiles, tpad;
    int64_t Wp;                 /* columns of the channel-last input rows (2 TW + 2) */
} WK(wino_band_t);

/* Steps 1 and 2 for a band: its input rows channel-last in xb, then V_xi[tile, c] = (B^T d
 * B)[xi] in v (16 matrices vs apart, rows C apart), B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0;
 * 0 1 0 -1].  (Wp >= W + pw: the last tile reads column Wp - 1 at most.) */
static void WK(wino_inputs)(const tl_conv_geom *g, const T *x, const WK(wino_band_t) *b, T *xb,
                            T *v, int64_t vs) {
    const int64_t C = g->C, WC = b->Wp * C;
    WK(wino_channel_last)(xb, b->Wp, g->pw, x, g->xs[1], g->xs[2], g->xs[3], C, g->H, g->W,
                          2 * b->th0 - g->ph, 2 * b->rows + 2);
    for (int64_t tr = 0; tr < b->rows; tr++)
        for (int64_t tw = 0; tw < b->TW; tw++) {
            const T *p = xb + 2 * tr * WC + 2 * tw * C;
            T *vt = v + (tr * b->TW + tw) * C;
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
}

/* The forward of one band (x, y at its image; y's element strides ys for (O, OH, OW) at
 * ys[1..3]); bias contiguous (zeros for none).  Scratch: xb (input rows), v (16 x tpad x C),
 * m (16 x tpad x O), yb (output rows, channel-last). */
static void WK(wino_forward_band)(const tl_conv_geom *g, const T *x, const T *u, int64_t us,
                                  int64_t npan, const T *bias, T *y, const int64_t *ys,
                                  const WK(wino_band_t) *b, T *xb, T *v, T *m, T *yb) {
    const tl_gemm_kernel *kern = WGEMM;
    const int64_t C = g->C, O = g->O, OH = g->OH, OW = g->OW, TW = b->TW, tiles = b->tiles;
    const int64_t OWb = 2 * TW;
    const int64_t vs = WK(wino_stride)(b->tpad * C), ms = WK(wino_stride)(b->tpad * O);
    const int mr = kern->mr, nr = kern->nr;
    WK(wino_inputs)(g, x, b, xb, v, vs);
    /* 3. M_xi = V_xi U_xi, one B panel at a time (it stays in L1 over the tiles) */
    for (int xi = 0; xi < 16; xi++)
        for (int64_t jp = 0; jp < npan; jp++) {
            const T *bp = u + xi * us + jp * C * nr;
            const int n = (int)(O - jp * nr < nr ? O - jp * nr : nr);
            for (int64_t i0 = 0; i0 < tiles; i0 += mr)
                kern->tile(C, v + xi * vs + i0 * C, C, bp, m + xi * ms + i0 * O + jp * nr, O, 0.0,
                           (int)(tiles - i0 < mr ? tiles - i0 : mr), n);
        }
    /* 4. the 2x2 outputs A^T M A (+ bias), A^T = [1 1 1 0; 0 1 -1 -1], channel-last */
    for (int64_t tr = 0; tr < b->rows; tr++)
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
    /* 5. into y, the rows and columns past the output dropped: a copy of each row for a
     *    channels_last y, a transpose for a contiguous one */
    for (int64_t a = 0; a < 2 * b->rows && 2 * b->th0 + a < OH; a++) {
        T *row = y + (2 * b->th0 + a) * ys[2];
        const T *src = yb + a * OWb * O;
        if (ys[1] == 1 && ys[3] == O)
            memcpy(row, src, (size_t)(OW * O) * sizeof(T));
        else if (ys[3] == 1)
            WK(tl_conv_transpose)(row, ys[1], src, O, 1, OW, O);
        else
            for (int64_t ow = 0; ow < OW; ow++)
                for (int64_t o = 0; o < O; o++) row[o * ys[1] + ow * ys[3]] = src[ow * O + o];
    }
}

/* How the tiles are split into bands: tile rows per band such that V and M (or V and the
 * output-gradient transforms) stay within TL_WINO_BAND_BYTES, at least one row. */
static int64_t WK(wino_band_rows)(const tl_conv_geom *g, int64_t *nbands) {
    const int64_t TH = (g->OH + 1) / 2, TW = (g->OW + 1) / 2;
    int64_t rows = TL_WINO_BAND_BYTES / (int64_t)(16 * (g->C + g->O) * sizeof(T)) / TW;
    rows = rows < 1 ? 1 : (rows > TH ? TH : rows);
    *nbands = (TH + rows - 1) / rows;
    return rows;
}

static void WK(wino_band_at)(const tl_conv_geom *g, int64_t rows, int64_t band, int mr,
                             WK(wino_band_t) *b) {
    const int64_t TH = (g->OH + 1) / 2;
    b->TW = (g->OW + 1) / 2;
    b->Wp = 2 * b->TW + 2;
    b->th0 = band * rows;
    b->rows = (b->th0 + rows < TH ? b->th0 + rows : TH) - b->th0;
    b->tiles = b->rows * b->TW;
    b->tpad = (rows * b->TW + mr - 1) / mr * mr;      /* the same for every band */
}

static int WK(tl_wino_forward)(const tl_conv_geom *g, const T *x, const T *w, const T *bias,
                               int64_t bstride, T *y, const int64_t *ys, int nthreads) {
    const tl_gemm_kernel *kern = WGEMM;
    const int64_t C = g->C, O = g->O;
    const int mr = kern->mr, nr = kern->nr;
    const int64_t npan = (O + nr - 1) / nr;
    int64_t nbands;
    const int64_t rows = WK(wino_band_rows)(g, &nbands), items = g->N * nbands;
    WK(wino_band_t) b0;
    WK(wino_band_at)(g, rows, 0, mr, &b0);
    const int64_t xb_n = (2 * rows + 2) * b0.Wp * C, v_n = 16 * WK(wino_stride)(b0.tpad * C);
    const int64_t m_n = 16 * WK(wino_stride)(b0.tpad * O), yb_n = 2 * rows * 2 * b0.TW * O;
    const int64_t per_thread = (xb_n + v_n + m_n + yb_n + 4 * 16) / 16 * 16;
    const int64_t us = WK(wino_stride)(npan * C * nr);
    T *u = (T *)tl_aligned_alloc(64, (size_t)(16 * us + O) * sizeof(T));
    if (!u) return -1;
    WK(wino_weights)(g, w, u, npan, nr, us, nthreads);
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
            WK(wino_band_t) b;
            WK(wino_band_at)(g, rows, it % nbands, mr, &b);
            const int64_t n = it / nbands;
            WK(wino_forward_band)(g, x + n * g->xs[0], u, us, npan, bvec, y + n * ys[0], ys,
                                  &b, xb, v, m, yb);
        }
    }
    tl_aligned_free(u);
    return failed ? -1 : 0;
}

/* ---- the weight gradient ----------------------------------------------------------------
 * dL/dg_oc = G^T [ sum over tiles (A dY A^T) . (B^T d_c B) ] G, dY the tile's 2x2 output
 * gradient: per xi one product P_xi[c, o] = sum_t V_xi[t, c] Z_xi[t, o] with Z = A dY A^T,
 * reduced over every tile of every image (the GEMM's k), then G^T P G per (o, c).  The work
 * is split into items of about TL_WINO_WGRAD_K tiles (several whole images, or a band of one)
 * so that the products are deep enough to be efficient.  Per item:
 * the input transform as the forward's, V_xi transposed to rows of channels (VT, tiles
 * contiguous: A of the micro-kernel), the output gradient's rows channel-last (gyb) and
 * transformed straight into B panels (Z, output channels in panels of nr, k-major), and the
 * 16 products accumulated into the item's block's P.  Items are grouped into a fixed number
 * of blocks (it depends on the shapes only); each block's P is summed on one thread, and the
 * blocks' P are added in order: the same bits for any thread count. */
#define TL_WINO_WGRAD_BLOCKS 16
#define TL_WINO_WGRAD_K 256                  /* tiles an item sums (the products' depth) */
#define TL_WINO_WGRAD_P_BYTES (64 << 20)     /* the blocks' P at most */

static void WK(wino_wgrad_item)(const tl_conv_geom *g, const T *x, const T *gy,
                                const int64_t *gys, int64_t nimg, const WK(wino_band_t) *b,
                                int64_t kpad, T *xb, T *v, T *vt, T *gyb, T *z, T *p,
                                int64_t ps, int first) {
    const tl_gemm_kernel *kern = WGEMM;
    const int64_t C = g->C, O = g->O, TW = b->TW, OWb = 2 * TW, k = nimg * b->tiles;
    const int mr = kern->mr, nr = kern->nr;
    const int64_t npan = (O + nr - 1) / nr;
    const int64_t vs = WK(wino_stride)(kpad * C), vts = WK(wino_stride)(C * kpad);
    const int64_t zs = WK(wino_stride)(npan * kpad * nr);
    for (int64_t i = 0; i < nimg; i++) {
        const int64_t t0 = i * b->tiles;        /* this image's first tile in k */
        WK(wino_inputs)(g, x + i * g->xs[0], b, xb, v + t0 * C, vs);
        WK(wino_channel_last)(gyb, OWb, 0, gy + i * gys[0], gys[1], gys[2], gys[3], O, g->OH,
                              g->OW, 2 * b->th0, 2 * b->rows);
        /* Z_xi = (A dY A^T)[xi], A = [1 0; 1 1; 1 -1; 0 -1], into panels
         * z[xi][o / nr][t][o % nr] (the columns past O zero) */
        for (int64_t tr = 0; tr < b->rows; tr++)
            for (int64_t tw = 0; tw < TW; tw++) {
                const int64_t t = t0 + tr * TW + tw;
                const T *q0 = gyb + (2 * tr * OWb + 2 * tw) * O, *q1 = q0 + OWb * O;
                for (int64_t jp = 0; jp < npan; jp++) {
                    T *zt = z + (jp * kpad + t) * nr;
                    const int64_t o0 = jp * nr, n = O - o0 < nr ? O - o0 : nr;
#pragma omp simd
                    for (int64_t j = 0; j < nr; j++) {
                        T y00 = 0, y01 = 0, y10 = 0, y11 = 0;
                        if (j < n) {
                            y00 = q0[o0 + j]; y01 = q0[O + o0 + j];
                            y10 = q1[o0 + j]; y11 = q1[O + o0 + j];
                        }
                        const T r[4][2] = {{y00, y01}, {y00 + y10, y01 + y11},
                                           {y00 - y10, y01 - y11}, {-y10, -y11}};
                        for (int a = 0; a < 4; a++) {
                            zt[(a * 4 + 0) * zs + j] = r[a][0];
                            zt[(a * 4 + 1) * zs + j] = r[a][0] + r[a][1];
                            zt[(a * 4 + 2) * zs + j] = r[a][0] - r[a][1];
                            zt[(a * 4 + 3) * zs + j] = -r[a][1];
                        }
                    }
                }
            }
    }
    for (int xi = 0; xi < 16; xi++)         /* VT_xi[c, t] = V_xi[t, c] */
        WK(tl_conv_transpose)(vt + xi * vts, kpad, v + xi * vs, C, 1, k, C);
    /* P_xi[c, o] (+)= VT_xi Z_xi over this item's tiles */
    for (int xi = 0; xi < 16; xi++)
        for (int64_t jp = 0; jp < npan; jp++) {
            const T *bp = z + xi * zs + jp * kpad * nr;
            const int n = (int)(O - jp * nr < nr ? O - jp * nr : nr);
            for (int64_t i0 = 0; i0 < C; i0 += mr)
                kern->tile(k, vt + xi * vts + i0 * kpad, kpad, bp,
                           p + xi * ps + i0 * O + jp * nr, O, first ? 0.0 : 1.0,
                           (int)(C - i0 < mr ? C - i0 : mr), n);
        }
}

/* dw = the gradient of sum(conv2d(x, w) * gy) with respect to w (O, C, 3, 3), C-contiguous;
 * gy (N, O, OH, OW) with strides gys.  Returns 0, or -1 when out of memory. */
static int WK(tl_wino_weight_grad)(const tl_conv_geom *g, const T *x, const T *gy,
                                   const int64_t *gys, T *dw, int nthreads) {
    const tl_gemm_kernel *kern = WGEMM;
    const int64_t C = g->C, O = g->O;
    const int mr = kern->mr, nr = kern->nr;
    const int64_t npan = (O + nr - 1) / nr, cpad = (C + mr - 1) / mr * mr;
    /* an item: whole images (as many as make about TL_WINO_WGRAD_K tiles) or a band of tile
     * rows of one (about TL_WINO_WGRAD_K tiles) -- the depth of its 16 products */
    const int64_t TH = (g->OH + 1) / 2, TW = (g->OW + 1) / 2;
    int64_t rows = TL_WINO_WGRAD_K / TW, ipi = 1;
    rows = rows < 1 ? 1 : (rows > TH ? TH : rows);
    if (rows == TH) {
        ipi = TL_WINO_WGRAD_K / (TH * TW);
        ipi = ipi < 1 ? 1 : (ipi > g->N ? g->N : ipi);
    }
    const int64_t nbands = (TH + rows - 1) / rows, ngroups = (g->N + ipi - 1) / ipi;
    const int64_t items = ngroups * nbands;
    WK(wino_band_t) b0;
    WK(wino_band_at)(g, rows, 0, mr, &b0);
    const int64_t kpad = (ipi * rows * TW + 15) / 16 * 16;
    const int64_t ps = WK(wino_stride)(C * O);
    int64_t nblk = TL_WINO_WGRAD_P_BYTES / (int64_t)(16 * ps * sizeof(T));
    nblk = nblk > TL_WINO_WGRAD_BLOCKS ? TL_WINO_WGRAD_BLOCKS : (nblk < 1 ? 1 : nblk);
    nblk = nblk > items ? items : nblk;
    const int64_t xb_n = (2 * rows + 2) * b0.Wp * C, v_n = 16 * WK(wino_stride)(kpad * C);
    const int64_t vt_n = 16 * WK(wino_stride)(cpad * kpad);
    const int64_t gyb_n = 2 * rows * 2 * TW * O, z_n = 16 * WK(wino_stride)(npan * kpad * nr);
    const int64_t per_thread = (xb_n + v_n + vt_n + gyb_n + z_n + 5 * 16) / 16 * 16;
    T *p = (T *)tl_aligned_alloc(64, (size_t)(nblk * 16 * ps) * sizeof(T));
    if (!p) return -1;
    int failed = 0;
    if (nthreads > nblk) nthreads = (int)nblk;
#pragma omp parallel num_threads(nthreads)
    {
        T *buf = (T *)tl_gemm_scratch((size_t)per_thread * sizeof(T));
        T *xb = buf, *v = buf + (xb_n + 15) / 16 * 16;
        T *vt = v + (v_n + 15) / 16 * 16, *gyb = vt + (vt_n + 15) / 16 * 16;
        T *z = gyb + (gyb_n + 15) / 16 * 16;
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        } else {
            /* rows of VT past C and the Z columns past a band's tiles are read, not used */
            memset(vt, 0, (size_t)vt_n * sizeof(T));
            memset(z, 0, (size_t)z_n * sizeof(T));
        }
#pragma omp for schedule(static)
        for (int64_t blk = 0; blk < nblk; blk++) {
            if (!buf) continue;
            const int64_t i0 = items * blk / nblk, i1 = items * (blk + 1) / nblk;
            for (int64_t it = i0; it < i1; it++) {
                WK(wino_band_t) b;
                WK(wino_band_at)(g, rows, it % nbands, mr, &b);
                const int64_t n = it / nbands * ipi, nimg = g->N - n < ipi ? g->N - n : ipi;
                WK(wino_wgrad_item)(g, x + n * g->xs[0], gy + n * gys[0], gys, nimg, &b, kpad,
                                    xb, v, vt, gyb, z, p + blk * 16 * ps, ps, it == i0);
            }
        }
    }
    if (failed) {
        tl_aligned_free(p);
        return -1;
    }
    /* the blocks' sums in order, then dw = G^T P G, G^T = [1 1/2 1/2 0; 0 1/2 -1/2 0;
     * 0 1/2 1/2 1] */
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int64_t c = 0; c < C; c++)
        for (int64_t o = 0; o < O; o++) {
            T q[16], t[3][4];
            for (int xi = 0; xi < 16; xi++) {
                T s = p[xi * ps + c * O + o];
                for (int64_t blk = 1; blk < nblk; blk++) s += p[(blk * 16 + xi) * ps + c * O + o];
                q[xi] = s;
            }
            for (int j = 0; j < 4; j++) {
                t[0][j] = q[j] + (T)0.5 * (q[4 + j] + q[8 + j]);
                t[1][j] = (T)0.5 * (q[4 + j] - q[8 + j]);
                t[2][j] = (T)0.5 * (q[4 + j] + q[8 + j]) + q[12 + j];
            }
            T *d = dw + (o * C + c) * 9;
            for (int i = 0; i < 3; i++) {
                d[i * 3 + 0] = t[i][0] + (T)0.5 * (t[i][1] + t[i][2]);
                d[i * 3 + 1] = (T)0.5 * (t[i][1] - t[i][2]);
                d[i * 3 + 2] = (T)0.5 * (t[i][1] + t[i][2]) + t[i][3];
            }
        }
    tl_aligned_free(p);
    return 0;
}

#undef T
#undef WK
#undef WGEMM
#endif
