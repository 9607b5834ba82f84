/* One long row: the four-step stages.  Entry n2*j1 + j2 of the input goes to output
 * k1 + n1*k2 of the transform of n = n1 * n2:
 *   S1  for each j2: the DFT of length n1 over j1, times exp(-2 pi i j2 k1 / n), into Y;
 *   S2  for each k1: the DFT of length n2 over j2, to output k1 + n1*k2.
 * Each stage works in blocks of FFT_B columns (S1: FFT_B values of j2, S2: of k1) that fill
 * the lanes of a tile; blocks are independent, so the threads share one transform.  Y is
 * kept blocked the way S2 reads it, Y[k1 / B][j2][k1 % B], so S2's tile is a slice of Y and
 * S1 ends with B x B transposes (fft_transpose.h).  Real transforms add a split stage
 * before (c2r) or a merge stage after (r2c), and Bluestein runs the core twice (the stages
 * are listed in fft_job.h).  Included once per precision and ISA level like fft_lanes.h. */

#define FFT_R TL_FFT_R
#define FFT_B TL_FFT_B
#define FFT_E (2 * TL_FFT_B)
#define FFT_PLAN TL_FP(tl_fft_plan)

/* S1, block blk: columns j2 = blk*B + b of the n1 x n2 view of source S, into Y. */
static void TL_FK(tl_fft_step1)(const FFT_PLAN *F, const tl_fft_src *S, FFT_R *Y, int64_t blk,
                                FFT_R *tile) {
    const int64_t n1 = F->info.n1, n2 = F->info.n2, j20 = blk * FFT_B;
    const int nb = (int)(n2 - j20 < FFT_B ? n2 - j20 : FFT_B);
    const int fast = S->es == 2 && S->ims == 1 && S->has_im;
    const int64_t len = S->len_re < S->len_im ? S->len_re : S->len_im;
    const FFT_R *src = (const FFT_R *)S->p, *mul = (const FFT_R *)S->mul;
    const FFT_R ci = S->conj ? (FFT_R)-1 : (FFT_R)1;
    FFT_R *a = tile, *w = tile + n1 * FFT_E, *r;
    int64_t j1, k1, kb;
    int b, l;
    for (j1 = 0; j1 < n1; j1++) {
        const int64_t j0 = n2 * j1 + j20;
        FFT_R *e = a + j1 * FFT_E;
        if (fast && nb == FFT_B && j0 + FFT_B <= len) {
            const FFT_R *p = src + 2 * j0;
            if (mul == NULL) {
                for (b = 0; b < FFT_B; b++) {
                    e[b] = p[2 * b];
                    e[FFT_B + b] = ci * p[2 * b + 1];
                }
            } else {
                const FFT_R *m = mul + 2 * j0;
                for (b = 0; b < FFT_B; b++) {
                    const FFT_R xr = p[2 * b], xi = ci * p[2 * b + 1];
                    e[b] = xr * m[2 * b] - xi * m[2 * b + 1];
                    e[FFT_B + b] = xr * m[2 * b + 1] + xi * m[2 * b];
                }
            }
        } else {
            for (b = 0; b < nb; b++) TL_FK(tl_fft_get)(S, j0 + b, e + b, e + FFT_B + b);
            for (; b < FFT_B; b++) e[b] = e[FFT_B + b] = 0;
        }
    }
    r = TL_FK(tl_fft_stockham)(F->p1, a, w);
    for (k1 = 0; k1 < n1; k1++) {       /* times exp(-2 pi i j2 k1 / n) */
        FFT_R *e = r + k1 * FFT_E;
        const FFT_R *lt = F->fs_lane + k1 * FFT_E;
        const FFT_R br = F->fs_block[2 * (blk * n1 + k1)], bi = F->fs_block[2 * (blk * n1 + k1) + 1];
        for (b = 0; b < FFT_B; b++) {
            const FFT_R wr = br * lt[b] - bi * lt[FFT_B + b], wi = br * lt[FFT_B + b] + bi * lt[b];
            const FFT_R xr = e[b], xi = e[FFT_B + b];
            e[b] = xr * wr - xi * wi;
            e[FFT_B + b] = xr * wi + xi * wr;
        }
    }
    for (kb = 0; kb * FFT_B < n1; kb++) {      /* the B x B transposes into Y */
        const int nl = (int)(n1 - kb * FFT_B < FFT_B ? n1 - kb * FFT_B : FFT_B);
        const FFT_R *e = r + kb * FFT_B * FFT_E;
        if (nl == FFT_B) {
            FFT_R sink[FFT_B], *rows[FFT_B];
            for (b = 0; b < FFT_B; b++) rows[b] = b < nb ? Y + (kb * n2 + j20 + b) * FFT_E : sink;
            TL_FK(tl_fft_tr_out)(e, FFT_E, rows);
            for (b = 0; b < FFT_B; b++) rows[b] = b < nb ? rows[b] + FFT_B : sink;
            TL_FK(tl_fft_tr_out)(e + FFT_B, FFT_E, rows);
            continue;
        }
        for (b = 0; b < nb; b++) {
            FFT_R *d = Y + (kb * n2 + j20 + b) * FFT_E;
            for (l = 0; l < nl; l++) {
                d[l] = e[l * FFT_E + b];
                d[FFT_B + l] = e[l * FFT_E + FFT_B + b];
            }
            for (; l < FFT_B; l++) d[l] = d[FFT_B + l] = 0;
        }
    }
}

/* S2, block kb: rows k1 = kb*B + b of Y, transformed over j2, to entries k1 + n1*k2 of D. */
static void TL_FK(tl_fft_step2)(const FFT_PLAN *F, const tl_fft_dst *D, FFT_R *Y, int64_t kb,
                                FFT_R *tile) {
    const int64_t n1 = F->info.n1, n2 = F->info.n2, k10 = kb * FFT_B;
    const int nb = (int)(n1 - k10 < FFT_B ? n1 - k10 : FFT_B);
    const int fast = D->es == 2 && D->ims == 1 && D->has_im;
    FFT_R *dst = (FFT_R *)D->p;
    const FFT_R *mul = (const FFT_R *)D->mul;
    const FFT_R sc = (FFT_R)D->scale;
    const FFT_R s1 = D->conj1 ? (FFT_R)-1 : (FFT_R)1, s2 = D->conj2 ? -sc : sc;
    FFT_R *r = TL_FK(tl_fft_stockham)(F->p2, Y + kb * n2 * FFT_E, tile);
    int64_t k2;
    int b;
    for (k2 = 0; k2 < n2; k2++) {
        const int64_t k0 = k10 + n1 * k2;
        const FFT_R *e = r + k2 * FFT_E;
        if (fast && nb == FFT_B && k0 + FFT_B <= D->count) {
            FFT_R *p = dst + 2 * k0;
            if (mul == NULL) {
                for (b = 0; b < FFT_B; b++) {
                    p[2 * b] = e[b] * sc;
                    p[2 * b + 1] = e[FFT_B + b] * s1 * s2;
                }
            } else {
                const FFT_R *m = mul + 2 * k0;
                for (b = 0; b < FFT_B; b++) {
                    const FFT_R xr = e[b], xi = s1 * e[FFT_B + b];
                    p[2 * b] = (xr * m[2 * b] - xi * m[2 * b + 1]) * sc;
                    p[2 * b + 1] = (xr * m[2 * b + 1] + xi * m[2 * b]) * s2;
                }
            }
        } else {
            for (b = 0; b < nb && k0 + b < D->count; b++)
                TL_FK(tl_fft_put)(D, k0 + b, e[b], e[FFT_B + b]);
        }
    }
}

/* c2r split (see fft_tiles.h) of one entry: conj(Z'_k) from a = X_k, c = X_(h-k). */
TL_FFT_INLINE void TL_FK(tl_fft_split_one)(FFT_R ar, FFT_R ai, FFT_R cr, FFT_R ci, FFT_R wr, FFT_R wi,
                                           FFT_R *z) {
    const FFT_R dr = ar - cr, di = ai + ci;            /* X_k - conj X_(h-k) */
    const FFT_R odr = dr * wr - di * wi, odi = dr * wi + di * wr;
    z[0] = (ar + cr) - odi;                            /* conj(E + i O) */
    z[1] = -((ai - ci) + odr);
}

/* c2r split, entries [k0, k1) of one row from S (the input row) to interleaved Z. */
static void TL_FK(tl_fft_split_row)(const FFT_PLAN *P, const tl_fft_src *S, int64_t k0, int64_t k1,
                                    FFT_R *TL_FFT_RESTRICT z) {
    const int64_t h = P->info.n, len = S->len_re;
    const FFT_R *TL_FFT_RESTRICT w = P->rtw;
    int64_t k, lo = k0, hi = k0;
    /* [lo, hi): k != 0 and both X_k and X_(h-k) data (not padding), the row contiguous: a
     * plain loop the compiler vectorizes; the rest entry by entry */
    if (S->es == 2 && S->ims == 1 && S->has_im && !S->conj && S->mul == NULL) {
        const FFT_R *TL_FFT_RESTRICT x = (const FFT_R *)S->p;
        lo = k0 > h - len + 1 ? k0 : h - len + 1;
        if (lo < 1) lo = 1;
        hi = k1 < len ? k1 : len;
        if (lo > hi) lo = hi = k0;
        for (k = lo; k < hi; k++)
            TL_FK(tl_fft_split_one)(x[2 * k], x[2 * k + 1], x[2 * (h - k)], x[2 * (h - k) + 1],
                                    w[2 * k], -w[2 * k + 1], z + 2 * k);
    }
    for (k = k0; k < k1; k++) {
        FFT_R ar, ai, cr, ci;
        if (k == lo && lo < hi) k = hi;
        if (k >= k1) break;
        TL_FK(tl_fft_get)(S, k, &ar, &ai);
        TL_FK(tl_fft_get)(S, h - k, &cr, &ci);
        if (k == 0) ai = ci = 0;                         /* X_0 and X_h are real */
        TL_FK(tl_fft_split_one)(ar, ai, cr, ci, w[2 * k], -w[2 * k + 1], z + 2 * k);
    }
}

/* c2r of odd n: entries [k0, k1) of the conjugated Hermitian spectrum, to interleaved Z. */
static void TL_FK(tl_fft_herm_row)(const tl_fft_src *S, int64_t n, int64_t k0, int64_t k1, FFT_R *z) {
    int64_t k;
    for (k = k0; k < k1; k++) {
        FFT_R xr, xi;
        if (2 * k <= n) {
            TL_FK(tl_fft_get)(S, k, &xr, &xi);
            xi = k == 0 ? 0 : -xi;
        } else {
            TL_FK(tl_fft_get)(S, n - k, &xr, &xi);
        }
        z[2 * k] = xr;
        z[2 * k + 1] = xi;
    }
}

/* r2c merge (see fft_tiles.h), entries [k0, k1) of 0..h, from interleaved Z to row p
 * (entries es reals apart; the mirrored half too when full). */
static void TL_FK(tl_fft_merge_row)(const FFT_PLAN *P, const FFT_R *TL_FFT_RESTRICT z, int64_t k0,
                                    int64_t k1, FFT_R *TL_FFT_RESTRICT p, int64_t es, int full,
                                    FFT_R sc) {
    const int64_t h = P->info.n;
    const FFT_R *TL_FFT_RESTRICT w = P->rtw;
    const FFT_R half = (FFT_R)0.5 * sc;
    int64_t k, lo = k0 < 1 ? 1 : k0, hi = k1 < h ? k1 : h;
#define FFT_MERGE(ZK, ZC, K, XR, XI) {                                                  \
        const FFT_R er = (ZK)[0] + (ZC)[0], ei = (ZK)[1] - (ZC)[1];                     \
        const FFT_R orr = (ZK)[1] + (ZC)[1], oi = (ZC)[0] - (ZK)[0];                    \
        XR = (er + orr * w[2 * (K)] - oi * w[2 * (K) + 1]) * half;                      \
        XI = (ei + orr * w[2 * (K) + 1] + oi * w[2 * (K)]) * half; }
    if (es == 2 && !full) {                  /* the interior, contiguous: vectorized */
        for (k = lo; k < hi; k++)
            FFT_MERGE(z + 2 * k, z + 2 * (h - k), k, p[2 * k], p[2 * k + 1]);
    } else {
        for (k = lo; k < hi; k++) {
            FFT_R xr, xi;
            FFT_MERGE(z + 2 * k, z + 2 * (h - k), k, xr, xi);
            p[k * es] = xr;
            p[k * es + 1] = xi;
            if (full) {
                p[(2 * h - k) * es] = xr;
                p[(2 * h - k) * es + 1] = -xi;
            }
        }
    }
    if (k0 == 0) FFT_MERGE(z, z, 0, p[0], p[1]);            /* X_0 and X_h from Z_0 */
    if (k1 > h) FFT_MERGE(z, z, h, p[h * es], p[h * es + 1]);
#undef FFT_MERGE
}

/* Stage `stage`, block blk, of row `row` of J (fft_job.h lists the stages); tscr: this
 * thread's scratch, shared: the row's (tl_fft_scratch_reals). */
static void TL_FK(tl_fft_stage)(const tl_fft_job *J, int64_t row, int stage, int64_t blk,
                                void *tscr, void *shared) {
    const FFT_PLAN *C = (const FFT_PLAN *)J->plan;
    const FFT_PLAN *F = TL_FP(tl_fft_core)(C);
    const int isz = (int)sizeof(FFT_R);
    const int64_t n = C->info.n, bm = C->info.bm;
    int64_t per_thread, shared_reals, aoff, zoff, ioff, ooff, k0, k1;
    FFT_R *Y = (FFT_R *)shared, *A, *Z;
    int step;
    const int kind = tl_fft_big_stage_kind(J, stage, &step);
    tl_fft_scratch_reals(J, &per_thread, &shared_reals, &aoff, &zoff);
    (void)per_thread;
    (void)shared_reals;
    A = Y + aoff;
    Z = Y + zoff;
    tl_fft_row_offsets(J, row, &ioff, &ooff);
    switch (kind) {
    case TL_FFT_ST_S1: {
        tl_fft_src s;
        if (step == 2) {                       /* Bluestein's second pass reads A */
            s.p = (const char *)A;
            s.es = 2;
            s.ims = 1;
            s.has_im = 1;
            s.conj = 0;
            s.mul = NULL;
            s.len_re = s.len_im = bm;
        } else {
            s = tl_fft_first_src(J, ioff, isz, (const char *)Z);
            if (bm) {
                s.mul = C->chirp;
                if (s.len_re > n) s.len_re = n;
                if (s.len_im > n) s.len_im = n;
            }
        }
        TL_FK(tl_fft_step1)(F, &s, Y, blk, (FFT_R *)tscr);
        break;
    }
    case TL_FFT_ST_S2: {
        tl_fft_dst d;
        if (bm && step == 1) {                 /* the spectrum times the kernel, conjugated */
            d.p = (char *)A;
            d.es = 2;
            d.ims = 1;
            d.has_im = 1;
            d.count = bm;
            d.conj1 = 0;
            d.conj2 = 1;
            d.mul = C->bkernel;
            d.scale = 1.0;
        } else {
            d = tl_fft_final_dst(J, ooff, isz, (char *)Z);
            if (bm) {                          /* X_k = chirp_k * conj(result_k) */
                d.conj1 = 1;
                d.mul = C->chirp;
                if (d.count > n) d.count = n;
            }
        }
        TL_FK(tl_fft_step2)(F, &d, Y, blk, (FFT_R *)tscr);
        break;
    }
    case TL_FFT_ST_POST: {                   /* r2c merge, entries [k0, k1) of 0..h */
        const tl_fft_dst d = tl_fft_output_dst(J, ooff, isz);
        k0 = blk * TL_FFT_CHUNK;
        k1 = k0 + TL_FFT_CHUNK < n + 1 ? k0 + TL_FFT_CHUNK : n + 1;
        TL_FK(tl_fft_merge_row)(C, Z, k0, k1, (FFT_R *)d.p, d.es, J->len_out > n + 1,
                                (FFT_R)d.scale);
        break;
    }
    default: {                                 /* c2r split (PRE) or Hermitian fill (HERM) into Z */
        const tl_fft_src s = tl_fft_input_src(J, ioff, isz);
        k0 = blk * TL_FFT_CHUNK;
        k1 = k0 + TL_FFT_CHUNK < n ? k0 + TL_FFT_CHUNK : n;
        if (kind == TL_FFT_ST_PRE)
            TL_FK(tl_fft_split_row)(C, &s, k0, k1, Z);
        else
            TL_FK(tl_fft_herm_row)(&s, n, k0, k1, Z);
        break;
    }
    }
}

#undef FFT_R
#undef FFT_B
#undef FFT_E
#undef FFT_PLAN
