/* Batches of rows, FFT_B at a time: the rows of a tile go into its lanes (fft_rows.h), the
 * tile is transformed (fft_lanes.h), and the lanes go back out to the output rows.
 *
 * Real transforms of even n = 2h go through the complex transform of h:
 *   r2c: the reals in pairs, z_j = x_2j + i x_2j+1, and from Z = DFT(z) (merge)
 *        X_k = E_k + exp(-2 pi i k / n) O_k,  E_k = (Z_k + conj Z_(h-k)) / 2,
 *        O_k = (Z_k - conj Z_(h-k)) / 2i,  k = 0..h;
 *   c2r: the reverse (split), Z'_k = E_k + i O_k with E_k = X_k + conj X_(h-k),
 *        O_k = (X_k - conj X_(h-k)) exp(2 pi i k / n), whose inverse DFT is the reals in
 *        pairs (X_0 and X_h taken as real, as a Hermitian signal has them).
 * Odd n go through the complex transform of n (c2r fills the whole Hermitian spectrum).
 * Inverse transforms are forward ones between two conjugations (conj DFT(conj x)), applied
 * on the way in and out.  Included once per precision and ISA level like fft_lanes.h. */

#define FFT_R TL_FFT_R
#define FFT_B TL_FFT_B
#define FFT_E (2 * TL_FFT_B)
#define FFT_PLAN TL_FP(tl_fft_plan)

/* r2c merge: X_0..X_h (times sc) into tile o from the DFT z of the pairs (h entries). */
static void TL_FK(tl_fft_merge)(const FFT_PLAN *P, const FFT_R *TL_FFT_RESTRICT z,
                                FFT_R *TL_FFT_RESTRICT o, FFT_R sc) {
    const int64_t h = P->info.n;
    const FFT_R half = (FFT_R)0.5 * sc;
    int64_t k;
    int b;
    for (k = 0; k <= h; k++) {
        const FFT_R *zk = z + (k == h ? 0 : k) * FFT_E, *zc = z + (k == 0 ? 0 : h - k) * FFT_E;
        const FFT_R wr = P->rtw[2 * k], wi = P->rtw[2 * k + 1];
        FFT_R *x = o + k * FFT_E;
        for (b = 0; b < FFT_B; b++) {
            const FFT_R er = zk[b] + zc[b], ei = zk[FFT_B + b] - zc[FFT_B + b];
            const FFT_R orr = zk[FFT_B + b] + zc[FFT_B + b], oi = zc[b] - zk[b];
            x[b] = (er + orr * wr - oi * wi) * half;
            x[FFT_B + b] = (ei + orr * wi + oi * wr) * half;
        }
    }
}

/* c2r split, in place: tile a holds X_0..X_h; leaves conj(Z'_k), k < h. */
static void TL_FK(tl_fft_split)(const FFT_PLAN *P, FFT_R *a) {
    const int64_t h = P->info.n;
    int64_t k;
    int b;
    for (b = 0; b < FFT_B; b++) {
        a[FFT_B + b] = 0;
        a[h * FFT_E + FFT_B + b] = 0;
    }
    for (k = 0; 2 * k <= h; k++) {           /* k and its partner h - k together */
        const int64_t kc = h - k;
        FFT_R *xk = a + k * FFT_E, *xc = a + kc * FFT_E;
        const FFT_R wr = P->rtw[2 * k], wi = -P->rtw[2 * k + 1];       /* exp(2 pi i k / n) */
        const FFT_R vr = P->rtw[2 * kc], vi = -P->rtw[2 * kc + 1];
        FFT_R zr[FFT_B], zi[FFT_B], yr[FFT_B], yi[FFT_B];
        for (b = 0; b < FFT_B; b++) {
            const FFT_R ar = xk[b], ai = xk[FFT_B + b], cr = xc[b], ci = xc[FFT_B + b];
            /* from (X_k, X_(h-k)) */
            const FFT_R dr = ar - cr, di = ai + ci;
            const FFT_R odr = dr * wr - di * wi, odi = dr * wi + di * wr;
            /* from (X_(h-k), X_k) */
            const FFT_R er = cr - ar, ei = ci + ai;
            const FFT_R pdr = er * vr - ei * vi, pdi = er * vi + ei * vr;
            zr[b] = (ar + cr) - odi;
            zi[b] = -((ai - ci) + odr);
            yr[b] = (cr + ar) - pdi;
            yi[b] = -((ci - ai) + pdr);
        }
        for (b = 0; b < FFT_B; b++) {
            xk[b] = zr[b];
            xk[FFT_B + b] = zi[b];
        }
        if (k > 0 && kc != k)
            for (b = 0; b < FFT_B; b++) {
                xc[b] = yr[b];
                xc[FFT_B + b] = yi[b];
            }
    }
}

/* c2r of odd n, in place: tile a holds X_0..X_(m-1), m = n / 2 + 1; leaves the conjugate of
 * the Hermitian spectrum (X_(n-k) = conj X_k, X_0 real) over all n entries. */
static void TL_FK(tl_fft_hermitian)(FFT_R *a, int64_t n) {
    const int64_t m = n / 2 + 1;
    int64_t k;
    int b;
    for (k = m; k < n; k++)
        for (b = 0; b < FFT_B; b++) {
            a[k * FFT_E + b] = a[(n - k) * FFT_E + b];
            a[k * FFT_E + FFT_B + b] = a[(n - k) * FFT_E + FFT_B + b];
        }
    for (b = 0; b < FFT_B; b++) a[FFT_B + b] = 0;
    for (k = 1; k < m; k++)
        for (b = 0; b < FFT_B; b++) a[k * FFT_E + FFT_B + b] = -a[k * FFT_E + FFT_B + b];
}

/* Rows tile*B .. tile*B + B - 1 of job J; scratch: two tiles of tl_fft_tile_len + 1 entries
 * (tl_fft_scratch_reals). */
static void TL_FK(tl_fft_tile)(const tl_fft_job *J, int64_t tile, void *scratch) {
    const FFT_PLAN *P = (const FFT_PLAN *)J->plan;
    const int64_t n = P->info.n, T = (P->info.bm ? P->info.bm : n) + 1, r0 = tile * FFT_B;
    const int nb = (int)(J->rows - r0 < FFT_B ? J->rows - r0 : FFT_B);
    const int isz = (int)sizeof(FFT_R);
    const FFT_R sc = (FFT_R)J->scale;
    FFT_R *a = (FFT_R *)scratch, *w = a + T * FFT_E, *res;
    const FFT_R *src[FFT_B];
    FFT_R *dst[FFT_B];
    tl_fft_src S;
    tl_fft_dst D;
    int b;
    for (b = 0; b < nb; b++) {
        int64_t ioff, ooff;
        tl_fft_row_offsets(J, r0 + b, &ioff, &ooff);
        src[b] = (const FFT_R *)J->in + ioff;
        dst[b] = (FFT_R *)J->out + ooff;
    }
    if (J->op == TL_FFT_C2C) {
        S = tl_fft_first_src(J, 0, isz, NULL);
        D = tl_fft_output_dst(J, 0, isz);
        TL_FK(tl_fft_gather)(&S, src, nb, n, a);
        res = TL_FK(tl_fft_lanes)(P, a, w);
        TL_FK(tl_fft_scale_tile)(res, n, sc, J->inverse ? -sc : sc);
        TL_FK(tl_fft_scatter)(&D, dst, nb, n, res);
    } else if (J->op == TL_FFT_R2C && J->half) {
        FFT_R *x;
        S = tl_fft_first_src(J, 0, isz, NULL);
        D = tl_fft_output_dst(J, 0, isz);
        TL_FK(tl_fft_gather)(&S, src, nb, n, a);
        res = TL_FK(tl_fft_lanes)(P, a, w);
        x = res == a ? w : a;
        TL_FK(tl_fft_merge)(P, res, x, sc);
        TL_FK(tl_fft_scatter)(&D, dst, nb, n + 1, x);
        if (J->len_out > n + 1) {            /* two-sided: X_(2h-k) = conj X_k */
            int64_t k;
            for (b = 0; b < nb; b++)
                for (k = 1; k < n; k++) {
                    dst[b][(2 * n - k) * D.es] = x[k * FFT_E + b];
                    dst[b][(2 * n - k) * D.es + 1] = -x[k * FFT_E + FFT_B + b];
                }
        }
    } else if (J->op == TL_FFT_R2C) {
        S = tl_fft_first_src(J, 0, isz, NULL);
        D = tl_fft_output_dst(J, 0, isz);
        TL_FK(tl_fft_gather)(&S, src, nb, n, a);
        res = TL_FK(tl_fft_lanes)(P, a, w);
        TL_FK(tl_fft_scale_tile)(res, J->len_out, sc, sc);
        TL_FK(tl_fft_scatter)(&D, dst, nb, J->len_out, res);
    } else {
        S = tl_fft_input_src(J, 0, isz);
        D = tl_fft_final_dst(J, 0, isz, NULL);
        if (J->half) {
            TL_FK(tl_fft_gather)(&S, src, nb, n + 1, a);
            TL_FK(tl_fft_split)(P, a);
        } else {
            TL_FK(tl_fft_gather)(&S, src, nb, n / 2 + 1, a);
            TL_FK(tl_fft_hermitian)(a, n);
        }
        res = TL_FK(tl_fft_lanes)(P, a, w);
        TL_FK(tl_fft_scale_tile)(res, n, sc, -sc);     /* conj back (c2r half), scale */
        TL_FK(tl_fft_scatter)(&D, dst, nb, n, res);
    }
}

#undef FFT_R
#undef FFT_B
#undef FFT_E
#undef FFT_PLAN
