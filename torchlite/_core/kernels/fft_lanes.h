/* FFTs on a tile of lanes: FFT_B transforms of one length side by side.
 *
 * Entry j of the tile holds entry j of every lane: FFT_B real parts, then FFT_B imaginary
 * parts (two 64-byte vectors).  Every butterfly below is written as if for one lane and runs
 * on whole vectors of lanes (GCC/clang vector types, or a loop over the lanes that the
 * compiler vectorizes): no shuffles, no transposes, the same code for any radix, and lanes
 * never mix, so a lane's result does not depend on what the other lanes hold (nor on how
 * rows were spread over threads).  A batch of rows fills the lanes with rows (fft_tiles.h); one long transform is
 * cut by the four-step split into short ones that fill the lanes (fft_fourstep.h).
 *
 * The passes are Stockham's autosort form (no bit reversal): pass i with radix r reads entry
 * q + s*(p + j*m) and writes q + s*(r*p + k), times exp(-2 pi i p k / (r m)); the passes
 * alternate between two tiles.  fft.h includes this file once per precision and ISA level,
 * with TL_FFT_R, TL_FFT_B, TL_FP(name) (the precision's names) and TL_FK(name) (this copy's
 * names) defined. */

#define FFT_R TL_FFT_R
#define FFT_B TL_FFT_B
#define FFT_E (2 * TL_FFT_B)      /* reals per tile entry */

/* The radix-2, 3, 4, 5 and 8 butterflies: inputs a_j = x + j*is, outputs y_k = y + k*os, the
 * outputs k >= 1 times tw[k - 1] (interleaved), or no twiddles at all when tw is NULL (group
 * p = 0).  Each body is written once as a macro over TW(re, im, k) and expanded twice, with
 * and without the multiply, so that neither loop has a branch inside (a branch in the loop
 * keeps the compiler from vectorizing it); the twiddles are read into locals first, since
 * the stores to y could otherwise alias them. */
#define FFT_TW_ON(ur, ui, k) { const FFT_V t_ = (ur) * wr_[k] - (ui) * wi_[k];  \
                               (ui) = (ur) * wi_[k] + (ui) * wr_[k]; (ur) = t_; }
#define FFT_TW_OFF(ur, ui, k)
#if defined(__GNUC__) && !defined(TL_FFT_NO_VECTOR_EXT)
/* GCC and clang: one lane vector (FFT_B reals, 64 bytes; 4, 2 or 1 SSE, AVX or AVX-512
 * registers) per value, so the butterflies are vector code whatever the optimizer decides;
 * unaligned, and allowed to alias the reals it is loaded from. */
#define FFT_V TL_FK(tl_fft_v)
typedef FFT_R FFT_V __attribute__((vector_size(FFT_B * sizeof(FFT_R)), aligned(sizeof(FFT_R)),
                                   may_alias));
#define FFT_LANE_LOOP for (b = 0; b < 1; b++)
#define FFT_LD(p) (*(const FFT_V *)(p))
#define FFT_ST(p, v) (*(FFT_V *)(p) = (v))
#else
/* elsewhere (MSVC; or -DTL_FFT_NO_VECTOR_EXT, to test this form with GCC), a loop over the
 * lanes for the compiler to vectorize */
#define FFT_V FFT_R
#define FFT_LANE_LOOP for (b = 0; b < FFT_B; b++)
#define FFT_LD(p) ((p)[b])
#define FFT_ST(p, v) ((p)[b] = (v))
#endif
#define FFT_RE(j) FFT_LD(x##j)
#define FFT_IM(j) FFT_LD(x##j + FFT_B)
#define FFT_OUT(k, re, im) { FFT_ST(y##k, re); FFT_ST(y##k + FFT_B, im); }
#define FFT_AT(j) const FFT_R *const x##j = x + (j) * is; FFT_R *const y##j = y + (j) * os;
#define FFT_AT2 FFT_AT(0) FFT_AT(1)
#define FFT_AT3 FFT_AT2 FFT_AT(2)
#define FFT_AT4 FFT_AT3 FFT_AT(3)
#define FFT_AT5 FFT_AT4 FFT_AT(4)
#define FFT_AT8 FFT_AT5 FFT_AT(5) FFT_AT(6) FFT_AT(7)
#define FFT_BUTTERFLY(NAME, RADIX, BODY)                                                     \
    TL_FFT_INLINE void TL_FK(NAME)(const FFT_R *TL_FFT_RESTRICT x, int64_t is,               \
                                   FFT_R *TL_FFT_RESTRICT y, int64_t os, const FFT_R *tw) {  \
        FFT_AT##RADIX                                                                        \
        FFT_R wr_[RADIX], wi_[RADIX];                                                        \
        int b, k_;                                                                           \
        if (tw == NULL) {                                                                    \
            FFT_LANE_LOOP BODY(FFT_TW_OFF)                                                   \
        } else {                                                                             \
            for (k_ = 0; k_ < (RADIX) - 1; k_++) {                                           \
                wr_[k_] = tw[2 * k_];                                                        \
                wi_[k_] = tw[2 * k_ + 1];                                                    \
            }                                                                                \
            FFT_LANE_LOOP BODY(FFT_TW_ON)                                                    \
        }                                                                                    \
    }

#define FFT_BODY2(TW) {                                                                      \
    FFT_V ur = FFT_RE(0) - FFT_RE(1), ui = FFT_IM(0) - FFT_IM(1);                            \
    FFT_OUT(0, FFT_RE(0) + FFT_RE(1), FFT_IM(0) + FFT_IM(1));                                \
    TW(ur, ui, 0);                                                                           \
    FFT_OUT(1, ur, ui); }
FFT_BUTTERFLY(tl_fft_bf2, 2, FFT_BODY2)

/* y1, y2 = a0 - (a1 + a2)/2 -+ i sin(2 pi/3) (a1 - a2) */
#define FFT_BODY3(TW) {                                                                      \
    const FFT_R s3 = (FFT_R)0.86602540378443864676372317075294;                              \
    const FFT_V tr = FFT_RE(1) + FFT_RE(2), ti = FFT_IM(1) + FFT_IM(2);                      \
    const FFT_V dr = FFT_RE(1) - FFT_RE(2), di = FFT_IM(1) - FFT_IM(2);                      \
    const FFT_V mr = FFT_RE(0) - (FFT_R)0.5 * tr, mi = FFT_IM(0) - (FFT_R)0.5 * ti;          \
    FFT_V y1r = mr + s3 * di, y1i = mi - s3 * dr, y2r = mr - s3 * di, y2i = mi + s3 * dr;     \
    FFT_OUT(0, FFT_RE(0) + tr, FFT_IM(0) + ti);                                              \
    TW(y1r, y1i, 0); TW(y2r, y2i, 1);                                                        \
    FFT_OUT(1, y1r, y1i); FFT_OUT(2, y2r, y2i); }
FFT_BUTTERFLY(tl_fft_bf3, 3, FFT_BODY3)

/* y_k = sum_j a_j (-i)^(jk) */
#define FFT_BODY4(TW) {                                                                      \
    const FFT_V t0r = FFT_RE(0) + FFT_RE(2), t0i = FFT_IM(0) + FFT_IM(2);                    \
    const FFT_V t1r = FFT_RE(0) - FFT_RE(2), t1i = FFT_IM(0) - FFT_IM(2);                    \
    const FFT_V t2r = FFT_RE(1) + FFT_RE(3), t2i = FFT_IM(1) + FFT_IM(3);                    \
    const FFT_V t3r = FFT_IM(1) - FFT_IM(3), t3i = FFT_RE(3) - FFT_RE(1);  /* -i(a1 - a3) */ \
    FFT_V u1r = t1r + t3r, u1i = t1i + t3i, u2r = t0r - t2r, u2i = t0i - t2i;                \
    FFT_V u3r = t1r - t3r, u3i = t1i - t3i;                                                  \
    FFT_OUT(0, t0r + t2r, t0i + t2i);                                                        \
    TW(u1r, u1i, 0); TW(u2r, u2i, 1); TW(u3r, u3i, 2);                                       \
    FFT_OUT(1, u1r, u1i); FFT_OUT(2, u2r, u2i); FFT_OUT(3, u3r, u3i); }
FFT_BUTTERFLY(tl_fft_bf4, 4, FFT_BODY4)

/* With P_j = a_j + a_(5-j), M_j = a_j - a_(5-j): y_k = b_k - i v_k, y_(5-k) = b_k + i v_k,
 * b_k = a0 + sum_j cos(2 pi jk/5) P_j, v_k = sum_j sin(2 pi jk/5) M_j. */
#define FFT_BODY5(TW) {                                                                      \
    const FFT_R c1 = (FFT_R)0.30901699437494742410229341718282;                              \
    const FFT_R c2 = (FFT_R)-0.80901699437494742410229341718282;                             \
    const FFT_R s1 = (FFT_R)0.95105651629515357211643933337938;                              \
    const FFT_R s2 = (FFT_R)0.58778525229247312916870595463907;                              \
    const FFT_V p1r = FFT_RE(1) + FFT_RE(4), p1i = FFT_IM(1) + FFT_IM(4);                    \
    const FFT_V m1r = FFT_RE(1) - FFT_RE(4), m1i = FFT_IM(1) - FFT_IM(4);                    \
    const FFT_V p2r = FFT_RE(2) + FFT_RE(3), p2i = FFT_IM(2) + FFT_IM(3);                    \
    const FFT_V m2r = FFT_RE(2) - FFT_RE(3), m2i = FFT_IM(2) - FFT_IM(3);                    \
    const FFT_V xr = FFT_RE(0), xi = FFT_IM(0);                                              \
    const FFT_V b1r = xr + c1 * p1r + c2 * p2r, b1i = xi + c1 * p1i + c2 * p2i;              \
    const FFT_V b2r = xr + c2 * p1r + c1 * p2r, b2i = xi + c2 * p1i + c1 * p2i;              \
    const FFT_V v1r = s1 * m1r + s2 * m2r, v1i = s1 * m1i + s2 * m2i;                        \
    const FFT_V v2r = s2 * m1r - s1 * m2r, v2i = s2 * m1i - s1 * m2i;                        \
    FFT_V y1r = b1r + v1i, y1i = b1i - v1r, y4r = b1r - v1i, y4i = b1i + v1r;                \
    FFT_V y2r = b2r + v2i, y2i = b2i - v2r, y3r = b2r - v2i, y3i = b2i + v2r;                \
    FFT_OUT(0, xr + p1r + p2r, xi + p1i + p2i);                                              \
    TW(y1r, y1i, 0); TW(y2r, y2i, 1); TW(y3r, y3i, 2); TW(y4r, y4i, 3);                      \
    FFT_OUT(1, y1r, y1i); FFT_OUT(2, y2r, y2i); FFT_OUT(3, y3r, y3i); FFT_OUT(4, y4r, y4i); }
FFT_BUTTERFLY(tl_fft_bf5, 5, FFT_BODY5)

/* Two radix-4 butterflies (even and odd inputs), the odd one times exp(-2 pi i k/8). */
#define FFT_BODY8(TW) {                                                                      \
    const FFT_R h = (FFT_R)0.70710678118654752440084436210485;                               \
    const FFT_V e0r = FFT_RE(0) + FFT_RE(4), e0i = FFT_IM(0) + FFT_IM(4);                    \
    const FFT_V e1r = FFT_RE(0) - FFT_RE(4), e1i = FFT_IM(0) - FFT_IM(4);                    \
    const FFT_V e2r = FFT_RE(2) + FFT_RE(6), e2i = FFT_IM(2) + FFT_IM(6);                    \
    const FFT_V e3r = FFT_IM(2) - FFT_IM(6), e3i = FFT_RE(6) - FFT_RE(2);                    \
    const FFT_V E0r = e0r + e2r, E0i = e0i + e2i, E2r = e0r - e2r, E2i = e0i - e2i;          \
    const FFT_V E1r = e1r + e3r, E1i = e1i + e3i, E3r = e1r - e3r, E3i = e1i - e3i;          \
    const FFT_V o0r = FFT_RE(1) + FFT_RE(5), o0i = FFT_IM(1) + FFT_IM(5);                    \
    const FFT_V o1r = FFT_RE(1) - FFT_RE(5), o1i = FFT_IM(1) - FFT_IM(5);                    \
    const FFT_V o2r = FFT_RE(3) + FFT_RE(7), o2i = FFT_IM(3) + FFT_IM(7);                    \
    const FFT_V o3r = FFT_IM(3) - FFT_IM(7), o3i = FFT_RE(7) - FFT_RE(3);                    \
    const FFT_V O0r = o0r + o2r, O0i = o0i + o2i, O2r = o0r - o2r, O2i = o0i - o2i;          \
    const FFT_V O1r = o1r + o3r, O1i = o1i + o3i, O3r = o1r - o3r, O3i = o1i - o3i;          \
    const FFT_V W1r = h * (O1r + O1i), W1i = h * (O1i - O1r);                                \
    const FFT_V W3r = h * (O3i - O3r), W3i = -h * (O3r + O3i);                               \
    FFT_V u1r = E1r + W1r, u1i = E1i + W1i, u5r = E1r - W1r, u5i = E1i - W1i;                \
    FFT_V u2r = E2r + O2i, u2i = E2i - O2r, u6r = E2r - O2i, u6i = E2i + O2r;                \
    FFT_V u3r = E3r + W3r, u3i = E3i + W3i, u7r = E3r - W3r, u7i = E3i - W3i;                \
    FFT_V u4r = E0r - O0r, u4i = E0i - O0i;                                                  \
    FFT_OUT(0, E0r + O0r, E0i + O0i);                                                        \
    TW(u1r, u1i, 0); TW(u2r, u2i, 1); TW(u3r, u3i, 2); TW(u4r, u4i, 3);                      \
    TW(u5r, u5i, 4); TW(u6r, u6i, 5); TW(u7r, u7i, 6);                                       \
    FFT_OUT(1, u1r, u1i); FFT_OUT(2, u2r, u2i); FFT_OUT(3, u3r, u3i); FFT_OUT(4, u4r, u4i);  \
    FFT_OUT(5, u5r, u5i); FFT_OUT(6, u6r, u6i); FFT_OUT(7, u7r, u7i); }
FFT_BUTTERFLY(tl_fft_bf8, 8, FFT_BODY8)

#undef FFT_BODY2
#undef FFT_BODY3
#undef FFT_BODY4
#undef FFT_BODY5
#undef FFT_BODY8
#undef FFT_BUTTERFLY
#undef FFT_TW_ON
#undef FFT_TW_OFF
#undef FFT_RE
#undef FFT_IM
#undef FFT_OUT
#undef FFT_LD
#undef FFT_ST
#undef FFT_LANE_LOOP
#undef FFT_V
#undef FFT_AT
#undef FFT_AT2
#undef FFT_AT3
#undef FFT_AT4
#undef FFT_AT5
#undef FFT_AT8

#define FFT_CMUL_TW(ur, ui, wr, wi) { const FFT_R t_ = (ur) * (wr) - (ui) * (wi); \
                                      (ui) = (ur) * (wi) + (ui) * (wr); (ur) = t_; }

/* A butterfly of odd prime radix r (7 <= r <= TL_FFT_MAX_GENERIC), O(r^2) per group:
 * with P_j = a_j + a_(r-j), M_j = a_j - a_(r-j),
 * y_k = a_0 + sum_j cos(2 pi jk / r) P_j - i sum_j sin(2 pi jk / r) M_j, and y_(r-k) the
 * same with +i.  rot: exp(-2 pi i t / r), t < r (interleaved). */
static void TL_FK(tl_fft_bfg)(int r, const FFT_R *const *a, FFT_R *const *y, const FFT_R *rot,
                              const FFT_R *tw) {
    FFT_R pr[TL_FFT_MAX_GENERIC / 2][FFT_B], pi[TL_FFT_MAX_GENERIC / 2][FFT_B];
    FFT_R mr[TL_FFT_MAX_GENERIC / 2][FFT_B], mi[TL_FFT_MAX_GENERIC / 2][FFT_B];
    FFT_R s0r[FFT_B], s0i[FFT_B];
    const int h = (r - 1) / 2;
    const FFT_R *TL_FFT_RESTRICT x0 = a[0];
    int b, j, k;
    for (b = 0; b < FFT_B; b++) {
        s0r[b] = x0[b];
        s0i[b] = x0[FFT_B + b];
    }
    for (j = 1; j <= h; j++) {
        const FFT_R *TL_FFT_RESTRICT u = a[j], *TL_FFT_RESTRICT v = a[r - j];
        for (b = 0; b < FFT_B; b++) {
            pr[j - 1][b] = u[b] + v[b]; pi[j - 1][b] = u[FFT_B + b] + v[FFT_B + b];
            mr[j - 1][b] = u[b] - v[b]; mi[j - 1][b] = u[FFT_B + b] - v[FFT_B + b];
            s0r[b] += pr[j - 1][b]; s0i[b] += pi[j - 1][b];
        }
    }
    for (b = 0; b < FFT_B; b++) {
        y[0][b] = s0r[b];
        y[0][FFT_B + b] = s0i[b];
    }
    for (k = 1; k <= h; k++) {
        FFT_R br[FFT_B], bi[FFT_B], vr[FFT_B], vi[FFT_B];
        FFT_R *TL_FFT_RESTRICT ya = y[k], *TL_FFT_RESTRICT yb = y[r - k];
        int t = 0;
        for (b = 0; b < FFT_B; b++) {
            br[b] = x0[b]; bi[b] = x0[FFT_B + b]; vr[b] = 0; vi[b] = 0;
        }
        for (j = 0; j < h; j++) {
            FFT_R c, s;
            t += k;
            if (t >= r) t -= r;
            c = rot[2 * t];
            s = -rot[2 * t + 1];           /* sin(2 pi jk / r) */
            for (b = 0; b < FFT_B; b++) {
                br[b] += c * pr[j][b]; bi[b] += c * pi[j][b];
                vr[b] += s * mr[j][b]; vi[b] += s * mi[j][b];
            }
        }
        if (tw == NULL) {
            for (b = 0; b < FFT_B; b++) {
                ya[b] = br[b] + vi[b]; ya[FFT_B + b] = bi[b] - vr[b];
                yb[b] = br[b] - vi[b]; yb[FFT_B + b] = bi[b] + vr[b];
            }
        } else {
            const FFT_R war = tw[2 * (k - 1)], wai = tw[2 * (k - 1) + 1];
            const FFT_R wbr = tw[2 * (r - k - 1)], wbi = tw[2 * (r - k - 1) + 1];
            for (b = 0; b < FFT_B; b++) {
                FFT_R ur = br[b] + vi[b], ui = bi[b] - vr[b];
                FFT_R zr = br[b] - vi[b], zi = bi[b] + vr[b];
                FFT_CMUL_TW(ur, ui, war, wai);
                FFT_CMUL_TW(zr, zi, wbr, wbi);
                ya[b] = ur; ya[FFT_B + b] = ui;
                yb[b] = zr; yb[FFT_B + b] = zi;
            }
        }
    }
}

/* One Stockham pass: radix r, m groups (p), stride s (q).  Group 0 is a loop of its own
 * with a literal NULL twiddle pointer, so its butterflies compile without the multiplies. */
#define FFT_PASS_LOOPS(CALL)                                                        \
    do {                                                                            \
        for (q = 0; q < s; q++) {                                                   \
            const FFT_R *const w = NULL;                                            \
            const FFT_R *xq = x + q * FFT_E;                                        \
            FFT_R *yq = y + q * FFT_E;                                              \
            CALL;                                                                   \
        }                                                                           \
        for (p = 1; p < m; p++) {                                                   \
            const FFT_R *const w = tw + 2 * (int64_t)(r - 1) * p;                   \
            for (q = 0; q < s; q++) {                                               \
                const FFT_R *xq = x + (s * p + q) * FFT_E;                          \
                FFT_R *yq = y + (s * r * p + q) * FFT_E;                            \
                CALL;                                                               \
            }                                                                       \
        }                                                                           \
    } while (0)

#define FFT_PTRS(R_)                                                                \
    for (j = 0; j < (R_); j++) {                                                    \
        a[j] = xq + j * in_step;                                                    \
        o[j] = yq + j * out_step;                                                   \
    }

static void TL_FK(tl_fft_pass)(int r, int64_t m, int64_t s, const FFT_R *tw, const FFT_R *rot,
                               const FFT_R *x, FFT_R *y) {
    const FFT_R *a[TL_FFT_MAX_GENERIC];
    FFT_R *o[TL_FFT_MAX_GENERIC];
    const int64_t in_step = s * m * FFT_E, out_step = s * FFT_E;
    int64_t p, q;
    int j;
    switch (r) {
    case 2:
        FFT_PASS_LOOPS(TL_FK(tl_fft_bf2)(xq, in_step, yq, out_step, w));
        break;
    case 3:
        FFT_PASS_LOOPS(TL_FK(tl_fft_bf3)(xq, in_step, yq, out_step, w));
        break;
    case 4:
        FFT_PASS_LOOPS(TL_FK(tl_fft_bf4)(xq, in_step, yq, out_step, w));
        break;
    case 5:
        FFT_PASS_LOOPS(TL_FK(tl_fft_bf5)(xq, in_step, yq, out_step, w));
        break;
    case 8:
        FFT_PASS_LOOPS(TL_FK(tl_fft_bf8)(xq, in_step, yq, out_step, w));
        break;
    default:
        FFT_PASS_LOOPS(FFT_PTRS(r) TL_FK(tl_fft_bfg)(r, a, o, rot, w));
    }
}
#undef FFT_PASS_LOOPS
#undef FFT_PTRS

/* Runs the plan's Stockham passes on the tile in a (n entries), using w as the other tile;
 * returns the tile holding the result (a or w).  a's contents are lost. */
static FFT_R *TL_FK(tl_fft_stockham)(const TL_FP(tl_fft_plan) *P, FFT_R *a, FFT_R *w) {
    int i;
    for (i = 0; i < P->npass; i++) {
        FFT_R *t;
        TL_FK(tl_fft_pass)(P->radix[i], P->m[i], P->s[i], P->tw + P->twoff[i],
                           P->rot + P->rotoff[i], a, w);
        t = a; a = w; w = t;
    }
    return a;
}

/* The transform of the plan on a tile (Bluestein or Stockham); a holds n entries and both
 * tiles have room for tl_fft_tile_len(P) entries.  Returns the tile holding the result. */
static FFT_R *TL_FK(tl_fft_lanes)(const TL_FP(tl_fft_plan) *P, FFT_R *a, FFT_R *w) {
    const TL_FP(tl_fft_plan) *S = P->bsub;
    const FFT_R *c = P->chirp, *K = P->bkernel;
    int64_t j, n = P->info.n, M = P->info.bm;
    FFT_R *r, *o;
    int b;
    if (S == NULL) return TL_FK(tl_fft_stockham)(P, a, w);
    /* a_j * chirp_j, zero-padded to M; its DFT times the kernel's is the DFT of the
     * circular convolution, which the second forward DFT of the conjugate brings back
     * (conjugated) */
    for (j = 0; j < n; j++) {
        FFT_R *e = a + j * FFT_E;
        const FFT_R cr = c[2 * j], ci = c[2 * j + 1];
        for (b = 0; b < FFT_B; b++) {
            const FFT_R xr = e[b], xi = e[FFT_B + b];
            e[b] = xr * cr - xi * ci;
            e[FFT_B + b] = xr * ci + xi * cr;
        }
    }
    for (j = n * FFT_E; j < M * FFT_E; j++) a[j] = 0;
    r = TL_FK(tl_fft_stockham)(S, a, w);
    o = r == a ? w : a;
    for (j = 0; j < M; j++) {
        FFT_R *e = r + j * FFT_E;
        const FFT_R kr = K[2 * j], ki = K[2 * j + 1];
        for (b = 0; b < FFT_B; b++) {
            const FFT_R xr = e[b], xi = e[FFT_B + b];
            e[b] = xr * kr - xi * ki;
            e[FFT_B + b] = -(xr * ki + xi * kr);
        }
    }
    r = TL_FK(tl_fft_stockham)(S, r, o);
    for (j = 0; j < n; j++) {      /* X_k = chirp_k * conj(result_k) */
        FFT_R *e = r + j * FFT_E;
        const FFT_R cr = c[2 * j], ci = c[2 * j + 1];
        for (b = 0; b < FFT_B; b++) {
            const FFT_R xr = e[b], xi = -e[FFT_B + b];
            e[b] = xr * cr - xi * ci;
            e[FFT_B + b] = xr * ci + xi * cr;
        }
    }
    return r;
}

#undef FFT_CMUL_TW
#undef FFT_R
#undef FFT_B
#undef FFT_E
