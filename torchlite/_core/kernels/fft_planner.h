/* The FFT planner: from n to a plan (fft_plan.h).  Included once per precision after the
 * transform kernels and their dispatch table (Bluestein's kernel is computed by running the
 * sub-plan), with TL_FFT_R, TL_FFT_B and TL_FP(name) defined.  Every table is computed in
 * double (fft_roots.h) and rounded to the plan's precision. */

#define FFT_R TL_FFT_R
#define FFT_B TL_FFT_B
#define FFT_PLAN TL_FP(tl_fft_plan)

/* malloc of `count` reals, counted into *bytes; NULL when out of memory or too big for
 * size_t (32-bit hosts). */
static FFT_R *TL_FP(tl_fft_alloc)(int64_t count, int64_t *bytes) {
    if (count < 1) count = 1;
    if ((uint64_t)count > (uint64_t)(SIZE_MAX / sizeof(FFT_R))) return NULL;
    *bytes += count * (int64_t)sizeof(FFT_R);
    return (FFT_R *)malloc((size_t)count * sizeof(FFT_R));
}

/* Stockham passes: radix 8 while it leaves a power of two that is not 2 (1024 = 8 8 4 4, not
 * 8 8 8 2: a radix-2 pass costs a full sweep for little arithmetic), then 4 or 2, then 3, 5
 * and the odd primes.  n's prime factors are all <= TL_FFT_MAX_GENERIC here. */
static int TL_FP(tl_fft_setup_stockham)(FFT_PLAN *P, const tl_fft_roots *roots) {
    int64_t n = P->info.n, rest = n, L = n, s = 1, ntw = 0, nrot = 0;
    int radix[TL_FFT_MAX_PASSES], np = 0, k2 = 0, i;
    int64_t p, kk;
    while (rest % 2 == 0) {
        rest /= 2;
        k2++;
    }
    while (k2 > 0) {
        int r = k2 == 1 ? 2 : k2 == 2 || k2 == 4 ? 4 : 8;
        radix[np++] = r;
        k2 -= r == 2 ? 1 : r == 4 ? 2 : 3;
    }
    for (p = 3; p <= TL_FFT_MAX_GENERIC && rest > 1; p += 2)
        while (rest % p == 0) {
            radix[np++] = (int)p;
            rest /= p;
        }
    P->npass = np;
    for (i = 0; i < np; i++) {
        const int r = radix[i];
        P->radix[i] = r;
        P->m[i] = L / r;
        P->s[i] = s;
        P->twoff[i] = 2 * ntw;
        P->rotoff[i] = 2 * nrot;
        ntw += (int64_t)(r - 1) * (L / r);
        if (r > 5 && r != 8) nrot += r;
        L /= r;
        s *= r;
    }
    P->tw = TL_FP(tl_fft_alloc)(2 * ntw, &P->info.bytes);
    P->rot = TL_FP(tl_fft_alloc)(2 * nrot, &P->info.bytes);
    if (P->tw == NULL || P->rot == NULL) return -1;
    L = n;
    for (i = 0; i < np; i++) {
        const int r = radix[i];
        const int64_t m = P->m[i], step = n / L;
        FFT_R *tw = P->tw + P->twoff[i];
        for (p = 0; p < m; p++)
            for (kk = 1; kk < r; kk++) {
                double re, im;
                tl_fft_root(roots, p * kk * step, &re, &im);   /* exp(-2 pi i p k / L) */
                tw[2 * ((r - 1) * p + kk - 1)] = (FFT_R)re;
                tw[2 * ((r - 1) * p + kk - 1) + 1] = (FFT_R)im;
            }
        if (r > 5 && r != 8)
            for (kk = 0; kk < r; kk++) {
                double re, im;
                tl_fft_sincos_frac(kk, r, &re, &im);
                P->rot[P->rotoff[i] + 2 * kk] = (FFT_R)re;
                P->rot[P->rotoff[i] + 2 * kk + 1] = (FFT_R)im;
            }
        L /= r;
    }
    P->info.stockham = 1;
    return 0;
}

/* The cost model, the same for both precisions (defined once). */
#ifndef TL_FFT_PLANNER_COSTS
#define TL_FFT_PLANNER_COSTS
/* Per-element cost of a radix-p pass, in radix-2 passes (a radix-p butterfly does about
 * p + 7 flops per entry, a radix-2 pass about 4). */
static double tl_fft_factor_cost(int64_t p) {
    return p == 2 ? 1.0 : p == 3 ? 1.7 : p == 5 ? 2.4 : (double)(p + 7) / 4.25;
}

/* The direct cost of n per entry, or -1 when n has a prime factor > TL_FFT_MAX_GENERIC. */
static double tl_fft_direct_cost(int64_t n) {
    double c = 0;
    int64_t p;
    for (p = 2; p <= TL_FFT_MAX_GENERIC && n > 1; p += (p == 2 ? 1 : 2))
        while (n % p == 0) {
            c += tl_fft_factor_cost(p);
            n /= p;
        }
    return n > 1 ? -1.0 : c;
}

/* Bluestein's length: the cheapest 2^a 3^b 5^c >= 2n - 1 (at most 4n). */
static int64_t tl_fft_bluestein_length(int64_t n, double *cost) {
    const int64_t lo = 2 * n - 1;
    int64_t best = 0, p5, p35, m;
    double bestc = 0;
    for (p5 = 1; p5 <= 4 * lo; p5 *= 5)
        for (p35 = p5; p35 <= 4 * lo; p35 *= 3) {
            double c;
            m = p35;
            while (m < lo) m *= 2;
            c = (double)m * tl_fft_direct_cost(m);
            if (best == 0 || c < bestc) {
                best = m;
                bestc = c;
            }
        }
    *cost = bestc;
    return best;
}
#endif

static FFT_PLAN *TL_FP(tl_fft_plan_new)(int64_t n, int top, int sub);

/* The four-step split n = n1 * n2 with n1 the largest divisor <= sqrt(n). */
static int TL_FP(tl_fft_setup_fourstep)(FFT_PLAN *P, const tl_fft_roots *roots) {
    const int64_t n = P->info.n;
    int64_t n1 = 1, d, n2, nblk, blk, k1;
    int b;
    for (d = 1; d * d <= n; d++)
        if (n % d == 0) n1 = d;
    n2 = n / n1;
    P->info.n1 = n1;
    P->info.n2 = n2;
    P->p1 = TL_FP(tl_fft_plan_new)(n1, 0, 1);
    P->p2 = TL_FP(tl_fft_plan_new)(n2, 0, 1);
    if (P->p1 == NULL || P->p2 == NULL) return -1;
    P->info.bytes += P->p1->info.bytes + P->p2->info.bytes;
    nblk = (n2 + FFT_B - 1) / FFT_B;
    P->fs_block = TL_FP(tl_fft_alloc)(2 * nblk * n1, &P->info.bytes);
    P->fs_lane = TL_FP(tl_fft_alloc)(2 * FFT_B * n1, &P->info.bytes);
    if (P->fs_block == NULL || P->fs_lane == NULL) return -1;
    for (blk = 0; blk < nblk; blk++)
        for (k1 = 0; k1 < n1; k1++) {
            double re, im;
            tl_fft_root(roots, (blk * FFT_B % n) * k1 % n, &re, &im);
            P->fs_block[2 * (blk * n1 + k1)] = (FFT_R)re;
            P->fs_block[2 * (blk * n1 + k1) + 1] = (FFT_R)im;
        }
    for (k1 = 0; k1 < n1; k1++)
        for (b = 0; b < FFT_B; b++) {
            double re, im;
            tl_fft_root(roots, (int64_t)b * k1 % n, &re, &im);
            P->fs_lane[2 * FFT_B * k1 + b] = (FFT_R)re;
            P->fs_lane[2 * FFT_B * k1 + FFT_B + b] = (FFT_R)im;
        }
    return 0;
}

/* Bluestein: n j k = (j^2 + k^2 - (k - j)^2) / 2, so X_k = c_k sum_j (x_j c_j) conj(c_(k-j))
 * with c_j = exp(-pi i j^2 / n): a convolution, done circularly over bm >= 2n - 1 points. */
static int TL_FP(tl_fft_setup_bluestein)(FFT_PLAN *P, int64_t bm) {
    const int64_t n = P->info.n;
    tl_fft_roots roots;
    tl_fft_job J;
    int64_t j, sq = 0, per_thread, shared, aoff, zoff;
    FFT_R *scratch;
    int rc = 0;
    P->bsub = TL_FP(tl_fft_plan_new)(bm, 0, 0);
    if (P->bsub == NULL) return -1;
    P->info.bm = bm;
    P->info.sub = &P->bsub->info;
    P->info.bytes += P->bsub->info.bytes;
    P->chirp = TL_FP(tl_fft_alloc)(2 * n, &P->info.bytes);
    P->bkernel = TL_FP(tl_fft_alloc)(2 * bm, &P->info.bytes);
    if (P->chirp == NULL || P->bkernel == NULL || tl_fft_roots_init(&roots, 2 * n) != 0) return -1;
    for (j = 0; j < n; j++) {          /* sq = j^2 mod 2n, kept exact */
        double re, im;
        tl_fft_root(&roots, sq, &re, &im);
        P->chirp[2 * j] = (FFT_R)re;
        P->chirp[2 * j + 1] = (FFT_R)im;
        sq += 2 * j + 1;
        while (sq >= 2 * n) sq -= 2 * n;
    }
    tl_fft_roots_free(&roots);
    for (j = 0; j < 2 * bm; j++) P->bkernel[j] = 0;
    for (j = 0; j < n; j++) {
        P->bkernel[2 * j] = P->chirp[2 * j];
        P->bkernel[2 * j + 1] = -P->chirp[2 * j + 1];
        if (j > 0) {
            P->bkernel[2 * (bm - j)] = P->chirp[2 * j];
            P->bkernel[2 * (bm - j) + 1] = -P->chirp[2 * j + 1];
        }
    }
    /* its DFT / bm, in place: a one-row job on the sub-plan */
    memset(&J, 0, sizeof(J));
    J.op = TL_FFT_C2C;
    J.prec = sizeof(FFT_R) == sizeof(double);
    J.n = J.len_in = J.len_out = bm;
    J.rows = 1;
    J.scale = 1.0 / (double)bm;
    J.plan = P->bsub;
    J.big = !P->bsub->info.stockham;
    J.sin = J.sout = 2;
    J.in = (const char *)P->bkernel;
    J.out = (char *)P->bkernel;
    tl_fft_scratch_reals(&J, &per_thread, &shared, &aoff, &zoff);
    scratch = (FFT_R *)malloc((size_t)(per_thread + shared) * sizeof(FFT_R));
    if (scratch == NULL) return -1;
    if (J.big) {
        int s;
        for (s = 0; s < tl_fft_big_nstages(&J); s++)
            for (j = 0; j < tl_fft_big_blocks(&J, s); j++)
                TL_FP(tl_fft_stage_impl)(&J, 0, s, j, scratch, scratch + per_thread);
    } else {
        TL_FP(tl_fft_tile_impl)(&J, 0, scratch);
    }
    free(scratch);
    return rc;
}

/* The plan of length n (1 <= n <= TL_FFT_MAX_N), or NULL when out of memory.  top: a plan
 * the caller runs (gets the real-transform twiddles); sub: a four-step sub-plan (Stockham
 * passes only). */
static FFT_PLAN *TL_FP(tl_fft_plan_new)(int64_t n, int top, int sub) {
    FFT_PLAN *P = (FFT_PLAN *)calloc(1, sizeof(FFT_PLAN));
    double direct, blue_cost = 0;
    int64_t bm = 0, k;
    tl_fft_roots roots;
    int ok = 0;
    if (P == NULL) return NULL;
    P->info.n = n;
    P->info.bytes = (int64_t)sizeof(FFT_PLAN);
    roots.fine = roots.coarse = NULL;
    direct = tl_fft_direct_cost(n);
    if (!sub && n > 2) {
        bm = tl_fft_bluestein_length(n, &blue_cost);
        /* Bluestein runs two transforms of bm and three products per entry */
        if (direct >= 0 && direct * (double)n <= 2.0 * blue_cost + 6.0 * (double)bm) bm = 0;
    }
    if (bm) {
        if (TL_FP(tl_fft_setup_bluestein)(P, bm) != 0) goto done;
    } else {
        if (tl_fft_roots_init(&roots, n) != 0) goto done;
        if ((sub || n <= TL_FFT_LANES_MAX) && TL_FP(tl_fft_setup_stockham)(P, &roots) != 0) goto done;
        if (!sub && n >= TL_FFT_FOURSTEP_MIN && TL_FP(tl_fft_setup_fourstep)(P, &roots) != 0)
            goto done;
    }
    if (top) {
        tl_fft_roots_free(&roots);
        if (tl_fft_roots_init(&roots, 2 * n) != 0) goto done;
        P->rtw = TL_FP(tl_fft_alloc)(2 * (n + 1), &P->info.bytes);
        if (P->rtw == NULL) goto done;
        for (k = 0; k <= n; k++) {
            double re, im;
            tl_fft_root(&roots, k, &re, &im);
            P->rtw[2 * k] = (FFT_R)re;
            P->rtw[2 * k + 1] = (FFT_R)im;
        }
    }
    ok = 1;
done:
    tl_fft_roots_free(&roots);
    if (!ok) {
        TL_FP(tl_fft_plan_destroy)(P);
        return NULL;
    }
    return P;
}

#undef FFT_R
#undef FFT_B
#undef FFT_PLAN
