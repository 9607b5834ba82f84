/* The FFT plan of one length and precision: everything a transform needs that depends only
 * on n, computed once (fft_planner.h) and read-only afterwards, so any number of threads may
 * run one plan at the same time.  fft.h includes this file once per precision with
 * TL_FFT_R (float or double) and TL_FP(name) (name##_f32 / name##_f64) defined.
 *
 * A plan has up to three ways to run, chosen by the planner from n's factors:
 *   Stockham passes: n = r1 * r2 * ... (radix 8, 4, 2, 3, 5 and odd primes up to
 *     TL_FFT_MAX_GENERIC); runs on a tile of lanes (fft_lanes.h), n <= TL_FFT_LANES_MAX.
 *   four-step: n = n1 * n2, both Stockham sub-plans; runs one long row in blocks of lanes
 *     (fft_fourstep.h), each block independent, so the blocks of one transform run in
 *     parallel.
 *   Bluestein: n has a prime factor too large for a butterfly; the transform is a
 *     convolution of length bm (a smooth number >= 2n - 1) done by the sub-plan bsub.
 * All twiddles are exp(-2 pi i t / L) (the forward sign); inverse transforms conjugate on
 * the way in and out.  Complex tables are interleaved (re, im). */

typedef struct TL_FP(tl_fft_plan_s) TL_FP(tl_fft_plan);
struct TL_FP(tl_fft_plan_s) {
    tl_fft_plan_info info;
    /* Stockham passes: pass i has radix radix[i], m[i] butterfly groups of stride s[i] */
    int npass;
    int radix[TL_FFT_MAX_PASSES];
    int64_t m[TL_FFT_MAX_PASSES], s[TL_FFT_MAX_PASSES];
    int64_t twoff[TL_FFT_MAX_PASSES];   /* pass i's twiddles: tw + twoff[i], [p][k - 1] */
    int64_t rotoff[TL_FFT_MAX_PASSES];  /* generic radix r: rot + rotoff[i], r roots of order r */
    TL_FFT_R *tw;
    TL_FFT_R *rot;
    /* four-step: twiddle exp(-2 pi i j2 k1 / n) = fs_block[j2 / B][k1] * fs_lane[k1][j2 % B]
     * (the lane table split: B real parts, then B imaginary parts, per k1) */
    TL_FP(tl_fft_plan) *p1, *p2;
    TL_FFT_R *fs_block;
    TL_FFT_R *fs_lane;
    /* Bluestein: chirp[j] = exp(-pi i j^2 / n); bkernel = DFT of the conjugate chirp (laid
     * out circularly over bm) divided by bm */
    TL_FP(tl_fft_plan) *bsub;
    TL_FFT_R *chirp;
    TL_FFT_R *bkernel;
    /* real transforms of length 2n through this plan: exp(-2 pi i k / 2n), k = 0..n */
    TL_FFT_R *rtw;
};

static void TL_FP(tl_fft_plan_destroy)(TL_FP(tl_fft_plan) *p) {
    if (p == NULL) return;
    TL_FP(tl_fft_plan_destroy)(p->p1);
    TL_FP(tl_fft_plan_destroy)(p->p2);
    TL_FP(tl_fft_plan_destroy)(p->bsub);
    free(p->tw);
    free(p->rot);
    free(p->fs_block);
    free(p->fs_lane);
    free(p->chirp);
    free(p->bkernel);
    free(p->rtw);
    free(p);
}

/* The plan that does the transform proper: the Bluestein sub-plan, or the plan itself. */
static inline const TL_FP(tl_fft_plan) *TL_FP(tl_fft_core)(const TL_FP(tl_fft_plan) *p) {
    return p->bsub != NULL ? p->bsub : p;
}
