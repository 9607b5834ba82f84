/* Reduction and softmax kernels.  reduce.h includes this file once per ISA level with
 * TL_RSFX(name) giving each copy its own names; TL_RBODY_FULL is 0 in the AVX copies, which
 * hold only the float32/float64 kernels.  The loops are written over fixed arrays of lanes
 * so that the compiler turns them into vector registers at every level (checked with
 * objdump: 4 zmm accumulators for float32 at AVX-512). */

#ifndef TL_REDUCE_BODY_MACROS
#define TL_REDUCE_BODY_MACROS

/* Combine NL (<= 128) lanes into acc[0] by a fixed tree.  Written as constant-width steps:
 * a loop over the width would not be unrolled, and stays scalar. */
#define TL_TREE(acc, NL, COMB)                                                              \
    if ((NL) >= 128) for (int j = 0; j < 64; j++) acc[j] = COMB(acc[j], acc[j + 64]);        \
    if ((NL) >= 64) for (int j = 0; j < 32; j++) acc[j] = COMB(acc[j], acc[j + 32]);         \
    if ((NL) >= 32) for (int j = 0; j < 16; j++) acc[j] = COMB(acc[j], acc[j + 16]);         \
    if ((NL) >= 16) for (int j = 0; j < 8; j++) acc[j] = COMB(acc[j], acc[j + 8]);           \
    for (int j = 0; j < 4; j++) acc[j] = COMB(acc[j], acc[j + 4]);                           \
    for (int j = 0; j < 2; j++) acc[j] = COMB(acc[j], acc[j + 2]);                           \
    acc[0] = COMB(acc[0], acc[1]);

/* rows, float32 sum family: 64 float32 lanes over at most TL_RFLUSH elements, combined by
 * the tree and added into a float64 sum. */
#define TL_RROWS_F32SUM(NAME, MAP)                                                          \
static void TL_RSFX(NAME)(const char *xb, int64_t nrows, int64_t rstride, int64_t n,        \
                          const double *center, double p, void *outv) {                     \
    double *out = (double *)outv; (void)p;                                                   \
    for (int64_t r = 0; r < nrows; r++) {                                                    \
        const float *x = (const float *)(xb + r * rstride);                                  \
        const float c = center ? (float)center[r] : 0.0f; (void)c;                           \
        double s = 0.0;                                                                      \
        int64_t i = 0;                                                                       \
        while (n - i >= TL_RL) {                                                             \
            float acc[TL_RL];                                                                \
            for (int j = 0; j < TL_RL; j++) acc[j] = 0.0f;                                   \
            const int64_t e = n - i > TL_RFLUSH ? i + TL_RFLUSH : n;                         \
            for (; i + TL_RL <= e; i += TL_RL)                                               \
                for (int j = 0; j < TL_RL; j++) { const float v = x[i + j]; acc[j] += (float)(MAP(v, c)); } \
            TL_TREE(acc, TL_RL, TL_C_ADD)                                                    \
            s += (double)acc[0];                                                             \
        }                                                                                    \
        for (; i < n; i++) { const float v = x[i]; s += (double)(float)(MAP(v, c)); }        \
        out[r] = s;                                                                          \
    }                                                                                        \
}

/* The best of MAP(p[0..m)), m <= W, in W fixed lanes padded with INIT, by FAST (a NaN only
 * sets nan_): whole-vector steps with no loop set-up or remainder, the row read by a loop
 * over all W lanes with a lane test (masked loads at AVX-512). */
#define TL_BEST_LANES(T, W, INIT, MAP, FAST, p, m, out, nan_)                               \
    {                                                                                        \
        T t_[W];                                                                             \
        for (int q = 0; q < W; q++) t_[q] = q < (m) ? MAP((p)[q], 0) : (T)(INIT);            \
        for (int q = 0; q < W; q++) nan_ |= t_[q] != t_[q];                                  \
        TL_TREE(t_, W, FAST)                                                                 \
        out = t_[0];                                                                         \
    }

/* The same for any m <= 64: the narrowest of 16, 32 or 64 lanes. */
#define TL_BEST_SHORT(T, INIT, MAP, FAST, p, m, out, nan_)                                 \
    if ((m) <= 16) TL_BEST_LANES(T, 16, INIT, MAP, FAST, p, m, out, nan_)                    \
    else if ((m) <= 32) TL_BEST_LANES(T, 32, INIT, MAP, FAST, p, m, out, nan_)               \
    else TL_BEST_LANES(T, 64, INIT, MAP, FAST, p, m, out, nan_)

/* Rows of 81 to 128 go through 128 fixed lanes whole (the softmaxes, the row max/min): one
 * tree, where 64 lanes and the rest took two and a loop's set-up.  Measured in a C harness
 * around reduce.h, 8192 float32 rows, us, chunks of 64 -> 128 lanes: amax of 100 277 -> 187,
 * softmax 1050 -> 735, log_softmax 1110 -> 795; at 65 to 80 the chunks are faster (65: 153 vs
 * 187-230 for amax, 640 vs 790 for softmax), hence 81. */
#define TL_LANES128(n) ((n) > 80 && (n) <= 128)

/* best = max (FAST = TL_C_FMAX, COMB = TL_C_MAX) or min of MAP(x[0..n)) with NaN
 * propagating.  The lanes use the plain max (one instruction, exact for infinities too) and
 * count NaNs on the side (a compare and a masked add); only a row holding one is scanned
 * again with the exact NaN-sticky combine.  (Rows with infinities are common: a causal
 * attention mask fills half of every row with -inf.)  A row under 128, and the last n % NL
 * of a longer one, go through TL_BEST_SHORT's fixed lanes, 64 at most at a time, or a row of
 * 81 to 127 whole in 128 lanes (TL_LANES128) (from 128 on, the NL lanes and their one tree
 * beat a tree per chunk: amax of 8192 rows of 128, 282 -> 242 us; of 200, 446 -> 254). */
#define TL_ROW_BEST(T, NL, INIT, MAP, FAST, COMB, x, n, best)                              \
    TL_ROW_BEST_UPTO(T, NL, INIT, MAP, FAST, COMB, x, n, best, 1)

/* LANES128 0: for a caller whose rows are never 81 to 127 (the softmaxes' long rows), so the
 * 128-lane path is not compiled into it */
#define TL_ROW_BEST_UPTO(T, NL, INIT, MAP, FAST, COMB, x, n, best, LANES128)               \
    {                                                                                        \
        int64_t i_ = 0;                                                                      \
        int special_ = 0;                                                                    \
        best = INIT;                                                                         \
        if ((n) >= 128) {       /* (shorter: in chunks of 64 below) */                   \
            T acc_[NL], z_[NL];                                                              \
            for (int j = 0; j < NL; j++) { acc_[j] = INIT; z_[j] = 0; }                      \
            for (; i_ + NL <= (n); i_ += NL)                                                 \
                for (int j = 0; j < NL; j++) {                                               \
                    const T v = MAP((x)[i_ + j], 0); acc_[j] = FAST(acc_[j], v); z_[j] += v != v; } \
            TL_TREE(acc_, NL, FAST)                                                          \
            TL_TREE(z_, NL, TL_C_ADD)                                                        \
            best = acc_[0];                                                                  \
            special_ = z_[0] != 0;                                                           \
        }                                                                                    \
        while (i_ < (n)) {  /* at most 64 at a time, or a whole row of 81 to 127 */         \
            const int64_t m_ = (n) - i_ <= 64 || (LANES128 && TL_LANES128((n) - i_)) ? (n) - i_ : 64; \
            T part_;                                                                         \
            if (LANES128 && m_ > 64) TL_BEST_LANES(T, 128, INIT, MAP, FAST, (x) + i_, m_, part_, special_) \
            else TL_BEST_SHORT(T, INIT, MAP, FAST, (x) + i_, m_, part_, special_)            \
            best = FAST(best, part_);                                                        \
            i_ += m_;                                                                        \
        }                                                                                    \
        if (special_) {                                                                      \
            best = INIT;                                                                     \
            for (i_ = 0; i_ < (n); i_++) best = COMB(best, MAP((x)[i_], 0));                 \
        }                                                                                    \
    }

/* rows, float max/min (and of |x|): TL_ROW_BEST per row */
#define TL_RROWS_BEST(NAME, T, NL, INIT, MAP, FAST, COMB)                                  \
static void TL_RSFX(NAME)(const char *xb, int64_t nrows, int64_t rstride, int64_t n,        \
                          const double *center, double p, void *outv) {                     \
    double *out = (double *)outv; (void)p; (void)center;                                     \
    for (int64_t r = 0; r < nrows; r++) {                                                    \
        const T *x = (const T *)(xb + r * rstride);                                          \
        T best;                                                                              \
        TL_ROW_BEST(T, NL, INIT, MAP, FAST, COMB, x, n, best)                                \
        out[r] = (double)best;                                                               \
    }                                                                                        \
}

/* rows, any other reduction: NL lanes of type LT combined with COMB. */
#define TL_RROWS(NAME, T, LT, NL, INIT, MAP, COMB, OUTT)                                   \
static void TL_RSFX(NAME)(const char *xb, int64_t nrows, int64_t rstride, int64_t n,        \
                          const double *center, double p, void *outv) {                     \
    OUTT *out = (OUTT *)outv; (void)p;                                                       \
    for (int64_t r = 0; r < nrows; r++) {                                                    \
        const T *x = (const T *)(xb + r * rstride);                                          \
        const T c = center ? (T)center[r] : (T)0; (void)c;                                   \
        LT s = INIT;                                                                         \
        int64_t i = 0;                                                                       \
        if (n >= NL) {                                                                       \
            LT acc[NL];                                                                      \
            for (int j = 0; j < NL; j++) acc[j] = INIT;                                      \
            for (; i + NL <= n; i += NL)                                                     \
                for (int j = 0; j < NL; j++) { const T v = x[i + j]; acc[j] = COMB(acc[j], (LT)(MAP(v, c))); } \
            TL_TREE(acc, NL, COMB)                                                           \
            s = acc[0];                                                                      \
        }                                                                                    \
        for (; i < n; i++) { const T v = x[i]; s = COMB(s, (LT)(MAP(v, c))); }               \
        out[r] = (OUTT)s;                                                                    \
    }                                                                                        \
}

/* cols: rows [R0, R1) of the column block [c0, c0 + nc), four rows at a time, then the
 * rest one by one: four memory streams in flight (a 4 KiB row segment alone keeps the
 * prefetcher restarting) and a quarter of the accumulator loads and stores.  STEP4 folds
 * elements v0..v3 of column j (center c) into its accumulator, STEP1 the element v. */
#define TL_COLS_SWEEP(T, R0, R1, STEP4, STEP1)                                               \
    {                                                                                        \
        int64_t r = (R0);                                                                    \
        for (; r + 4 <= (R1); r += 4) {                                                      \
            const T *x0 = (const T *)(xb + r * rstride) + c0;                                \
            const T *x1 = (const T *)(xb + (r + 1) * rstride) + c0;                          \
            const T *x2 = (const T *)(xb + (r + 2) * rstride) + c0;                          \
            const T *x3 = (const T *)(xb + (r + 3) * rstride) + c0;                          \
            for (int64_t j = 0; j < nc; j++) {                                               \
                const T c = cc[j]; (void)c;                                                  \
                const T v0 = x0[j], v1 = x1[j], v2 = x2[j], v3 = x3[j];                      \
                STEP4 }                                                                      \
        }                                                                                    \
        for (; r < (R1); r++) {                                                              \
            const T *x = (const T *)(xb + r * rstride) + c0;                                 \
            for (int64_t j = 0; j < nc; j++) {                                               \
                const T v = x[j], c = cc[j]; (void)c; STEP1 }                                \
        }                                                                                    \
    }

/* cols, float32 sum family: float32 column accumulators flushed into float64 every
 * TL_RCFLUSH rows; four rows go ((r0 + r1) + (r2 + r3)) into the accumulator. */
#define TL_RCOLS_F32SUM(NAME, MAP)                                                          \
static void TL_RSFX(NAME)(const char *xb, int64_t nrows, int64_t rstride, int64_t ncols,    \
                          const double *center, double p, void *outv) {                     \
    double *out = (double *)outv; (void)p;                                                   \
    for (int64_t c0 = 0; c0 < ncols; c0 += TL_RCB) {                                         \
        const int64_t nc = ncols - c0 < TL_RCB ? ncols - c0 : TL_RCB;                        \
        float acc[TL_RCB], cc[TL_RCB];                                                       \
        double dacc[TL_RCB];                                                                 \
        for (int64_t j = 0; j < nc; j++) {                                                   \
            dacc[j] = 0.0; cc[j] = center ? (float)center[c0 + j] : 0.0f; }                  \
        for (int64_t r0 = 0; r0 < nrows; r0 += TL_RCFLUSH) {                                 \
            const int64_t r1 = nrows - r0 > TL_RCFLUSH ? r0 + TL_RCFLUSH : nrows;            \
            for (int64_t j = 0; j < nc; j++) acc[j] = 0.0f;                                  \
            TL_COLS_SWEEP(float, r0, r1,                                                     \
                acc[j] += ((float)(MAP(v0, c)) + (float)(MAP(v1, c))) +                      \
                          ((float)(MAP(v2, c)) + (float)(MAP(v3, c)));,                      \
                acc[j] += (float)(MAP(v, c));)                                               \
            for (int64_t j = 0; j < nc; j++) dacc[j] += (double)acc[j];                      \
        }                                                                                    \
        for (int64_t j = 0; j < nc; j++) out[c0 + j] = dacc[j];                              \
    }                                                                                        \
}

/* cols, any other reduction: one LT accumulator per column, combined in row order. */
#define TL_RCOLS(NAME, T, LT, INIT, MAP, COMB, OUTT)                                       \
static void TL_RSFX(NAME)(const char *xb, int64_t nrows, int64_t rstride, int64_t ncols,    \
                          const double *center, double p, void *outv) {                     \
    OUTT *out = (OUTT *)outv; (void)p;                                                       \
    for (int64_t c0 = 0; c0 < ncols; c0 += TL_RCB) {                                         \
        const int64_t nc = ncols - c0 < TL_RCB ? ncols - c0 : TL_RCB;                        \
        LT acc[TL_RCB]; T cc[TL_RCB];                                                        \
        for (int64_t j = 0; j < nc; j++) {                                                   \
            acc[j] = INIT; cc[j] = center ? (T)center[c0 + j] : (T)0; }                      \
        TL_COLS_SWEEP(T, 0, nrows,                                                           \
            LT a = COMB(acc[j], (LT)(MAP(v0, c)));                                           \
            a = COMB(a, (LT)(MAP(v1, c)));                                                   \
            a = COMB(a, (LT)(MAP(v2, c)));                                                   \
            acc[j] = COMB(a, (LT)(MAP(v3, c)));,                                             \
            acc[j] = COMB(acc[j], (LT)(MAP(v, c)));)                                         \
        for (int64_t j = 0; j < nc; j++) out[c0 + j] = (OUTT)acc[j];                         \
    }                                                                                        \
}

/* A reduction kind's two kernels, rows (NL lanes) and cols, named rr_K_F and rc_K_F. */
#define TL_RKIND(K, F, T, LT, NL, INIT, MAP, COMB, OUTT)                                     \
    TL_RROWS(rr_##K##_##F, T, LT, NL, INIT, MAP, COMB, OUTT)                                 \
    TL_RCOLS(rc_##K##_##F, T, LT, INIT, MAP, COMB, OUTT)

/* k = the first index in [k, n - 1) where PRED(x[k], b) holds, else n - 1.  The search
 * goes block by block (NL elements) so that it vectorises, then element by element. */
#define TL_P_NAN(v, b) ((v) != (v))
#define TL_P_EQ(v, b) ((v) == (b))
#define TL_FIRST_HIT(x, n, NL, PRED, b, k)                                                   \
    {                                                                                        \
        for (; k + NL <= n; k += NL) {                                                       \
            int hit = 0;                                                                     \
            for (int j = 0; j < NL; j++) hit |= PRED((x)[k + j], b);                         \
            if (hit) break;                                                                  \
        }                                                                                    \
        while (k < n - 1 && !PRED((x)[k], b)) k++;                                           \
    }

/* argmax/argmin of rows: the best value by lanes, then the first index holding it (the
 * first NaN when the best is NaN). */
#define TL_RARG_ROWS(NAME, T, NL, INIT, FAST, COMB, OUTT)                                  \
static void TL_RSFX(NAME)(const char *xb, int64_t nrows, int64_t rstride, int64_t n,        \
                          void *valv, int64_t *idx) {                                        \
    OUTT *val = (OUTT *)valv;                                                                \
    for (int64_t r = 0; r < nrows; r++) {                                                    \
        const T *x = (const T *)(xb + r * rstride);                                          \
        T best;                                                                              \
        TL_ROW_BEST(T, NL, INIT, TL_M_ID, FAST, COMB, x, n, best)                            \
        int64_t k = 0;                                                                       \
        if (best != best)                                                                    \
            TL_FIRST_HIT(x, n, NL, TL_P_NAN, best, k)                                        \
        else                                                                                 \
            TL_FIRST_HIT(x, n, NL, TL_P_EQ, best, k)                                         \
        val[r] = (OUTT)best;                                                                 \
        idx[r] = k;                                                                          \
    }                                                                                        \
}

/* argmax/argmin of columns: a best value and index per column, updated row by row. */
#define TL_RARG_COLS(NAME, T, TAKE, OUTT)                                                  \
static void TL_RSFX(NAME)(const char *xb, int64_t nrows, int64_t rstride, int64_t ncols,    \
                          void *valv, int64_t *idx) {                                        \
    OUTT *val = (OUTT *)valv;                                                                \
    for (int64_t c0 = 0; c0 < ncols; c0 += TL_RCB) {                                         \
        const int64_t nc = ncols - c0 < TL_RCB ? ncols - c0 : TL_RCB;                        \
        T best[TL_RCB]; int64_t bi[TL_RCB];                                                  \
        const T *x0 = (const T *)xb + c0;                                                    \
        for (int64_t j = 0; j < nc; j++) { best[j] = x0[j]; bi[j] = 0; }                     \
        for (int64_t r = 1; r < nrows; r++) {                                                \
            const T *x = (const T *)(xb + r * rstride) + c0;                                 \
            for (int64_t j = 0; j < nc; j++) {                                               \
                const T v = x[j], b = best[j];                                               \
                const int take = TAKE(b, v);                                                 \
                best[j] = take ? v : b;                                                      \
                bi[j] = take ? r : bi[j];                                                    \
            }                                                                                \
        }                                                                                    \
        for (int64_t j = 0; j < nc; j++) { val[c0 + j] = (OUTT)best[j]; idx[c0 + j] = bi[j]; } \
    }                                                                                        \
}

/* The softmax of one short row (n <= W) in W fixed lanes, the row padded with -inf (whose
 * exponentials are 0): the max, the exponentials and their sum are whole-vector steps with
 * no loop set-up or remainder, which is most of a short row's cost in the general path.  A
 * NaN makes the row's max NaN (every result NaN), as there.  MASKED: the row is read and
 * written by loops over all W lanes with a lane test (masked moves at AVX-512), else by loops
 * over its n elements; which is faster depends on W (measured: plain loops at 16 lanes,
 * masked ones at 32 and 64, benchmarks/bench_rows.py; TL_BEST_LANES's masked loads are
 * faster at 16 too: the compiler's code for the two differs). */
#define TL_SOFTMAX_SHORT_STATS(T, W, EXPF, MASKED)                                         \
        T b_[W], e_[W], t_[W];                                                               \
        int nan_ = 0;                                                                        \
        if (MASKED) {                                                                        \
            for (int q = 0; q < W; q++) b_[q] = q < n ? x[q] : (T)-INFINITY;                 \
        } else {                                                                             \
            for (int64_t q = 0; q < n; q++) b_[q] = x[q];                                    \
            for (int64_t q = n; q < W; q++) b_[q] = (T)-INFINITY;                            \
        }                                                                                    \
        for (int q = 0; q < W; q++) { t_[q] = b_[q]; nan_ |= b_[q] != b_[q]; }               \
        TL_TREE(t_, W, TL_C_FMAX)                                                            \
        const T m_ = nan_ ? (T)NAN : t_[0];                                                  \
        for (int q = 0; q < W; q++) { e_[q] = EXPF(b_[q] - m_); t_[q] = e_[q]; }             \
        TL_TREE(t_, W, TL_C_ADD)

/* a softmax row: its exponentials scaled by the sum's reciprocal */
#define TL_SOFTMAX_SHORT(T, W, EXPF, MASKED)                                               \
    {                                                                                        \
        TL_SOFTMAX_SHORT_STATS(T, W, EXPF, MASKED)                                           \
        const T inv_ = (T)(1.0 / (double)t_[0]);                                             \
        if (MASKED) { for (int q = 0; q < W; q++) if (q < n) y[q] = e_[q] * inv_; }         \
        else { for (int64_t q = 0; q < n; q++) y[q] = e_[q] * inv_; }                        \
    }

/* a log_softmax row: its max and sum kept, in gmax_[g_] and gsum_[g_], for the group's logs */
#define TL_LOG_SOFTMAX_SHORT(T, W, EXPF, MASKED)                                           \
    {                                                                                        \
        TL_SOFTMAX_SHORT_STATS(T, W, EXPF, MASKED)                                           \
        gmax_[g_] = m_;                                                                      \
        gsum_[g_] = t_[0];                                                                   \
    }

/* softmax over contiguous rows, fused: max, then exp(x - max) written and summed, then a
 * scale (or, for log_softmax, x - max - log(sum)); the row stays in L1 across the passes.
 * Rows of at most 64, and of 81 to 128 (TL_LANES128), take TL_SOFTMAX_SHORT; a log_softmax's,
 * TL_LOG_SOFTMAX_SHORT, in groups
 * of TL_SMG rows whose logs are then one vectorised loop (LOGF: float32's is vmath.h's
 * tl_logf, eager log's own; one scalar log a row was a third of a 16-wide row's time:
 * 8192 x 16 284 -> 188 us, PyTorch 125). */
#define TL_SOFTMAX_ROWS(NAME, T, NL, EXPF, LOGF)                                           \
/* a row of 81 to 128 (TL_LANES128) in 128 lanes: its softmax into y, or (logmode) its max   \
 * and sum into *gmax_, *gsum_; out of line, as inlined it slowed the shorter rows' paths     \
 * (softmax of rows of 40: 456 -> 521 us) */                                                \
TL_OUTLINE void TL_RSFX(NAME##_128)(const T *x, T *y, int64_t n, int logmode, T *gmax_,      \
                                    T *gsum_) {                                              \
    const int g_ = 0;                                                                        \
    if (logmode) TL_LOG_SOFTMAX_SHORT(T, 128, EXPF, 1)                                       \
    else TL_SOFTMAX_SHORT(T, 128, EXPF, 1)                                                   \
}                                                                                            \
static void TL_RSFX(NAME)(const char *xb, char *yb, int64_t nrows, int64_t n, int logmode) { \
    if (logmode && (n <= 64 || TL_LANES128(n))) {  /* in groups of TL_SMG: logs together */ \
        for (int64_t r0 = 0; r0 < nrows; r0 += TL_SMG) {                                     \
            const int64_t gn_ = nrows - r0 < TL_SMG ? nrows - r0 : TL_SMG;                   \
            T gmax_[TL_SMG], gsum_[TL_SMG], glog_[TL_SMG];                                   \
            for (int64_t g_ = 0; g_ < gn_; g_++) {                                           \
                const T *x = (const T *)xb + (r0 + g_) * n;                                  \
                if (n <= 16) TL_LOG_SOFTMAX_SHORT(T, 16, EXPF, 0)                            \
                else if (n <= 32) TL_LOG_SOFTMAX_SHORT(T, 32, EXPF, 1)                       \
                else if (n <= 64) TL_LOG_SOFTMAX_SHORT(T, 64, EXPF, 1)                       \
                else TL_RSFX(NAME##_128)(x, NULL, n, 1, gmax_ + g_, gsum_ + g_);             \
            }                                                                                \
            for (int64_t g_ = gn_; g_ < TL_SMG; g_++) gsum_[g_] = 1;                         \
            for (int g_ = 0; g_ < TL_SMG; g_++) glog_[g_] = LOGF(gsum_[g_]);   /* vectorised */ \
            for (int64_t g_ = 0; g_ < gn_; g_++) {                                           \
                const T *x = (const T *)xb + (r0 + g_) * n;                                  \
                T *y = (T *)yb + (r0 + g_) * n;                                              \
                for (int64_t q = 0; q < n; q++) y[q] = (x[q] - gmax_[g_]) - glog_[g_];       \
            }                                                                                \
        }                                                                                    \
        return;                                                                              \
    }                                                                                        \
    for (int64_t r = 0; r < nrows; r++) {                                                    \
        const T *x = (const T *)xb + r * n;                                                  \
        T *y = (T *)yb + r * n;                                                              \
        if (n <= 16) { TL_SOFTMAX_SHORT(T, 16, EXPF, 0) continue; }                         \
        if (n <= 32) { TL_SOFTMAX_SHORT(T, 32, EXPF, 1) continue; }                         \
        if (n <= 64) { TL_SOFTMAX_SHORT(T, 64, EXPF, 1) continue; }                         \
        if (TL_LANES128(n)) { TL_RSFX(NAME##_128)(x, y, n, 0, NULL, NULL); continue; }      \
        T m;                                                                                 \
        TL_ROW_BEST_UPTO(T, NL, -INFINITY, TL_M_ID, TL_C_FMAX, TL_C_MAX, x, n, m, 0)         \
        int64_t i = 0;                                                                       \
        double s = 0.0;                                                                      \
        if (n >= NL) {      /* (a short row skips setting up and folding the lanes) */       \
            T acc[NL];                                                                       \
            for (int j = 0; j < NL; j++) acc[j] = 0;                                         \
            if (logmode) {                                                                   \
                for (; i + NL <= n; i += NL)                                                 \
                    for (int j = 0; j < NL; j++) acc[j] += EXPF(x[i + j] - m);               \
            } else {                                                                         \
                for (; i + NL <= n; i += NL)                                                 \
                    for (int j = 0; j < NL; j++) { const T e = EXPF(x[i + j] - m); y[i + j] = e; acc[j] += e; } \
            }                                                                                \
            TL_TREE(acc, NL, TL_C_ADD)                                                       \
            s = (double)acc[0];                                                              \
        }                                                                                    \
        /* the last n % NL (all of a short row): the exponentials in a loop of their own,   \
         * which vectorises, then their sum in order (a double sum would keep it scalar) */  \
        const int64_t rem = n - i;                                                           \
        T etb[NL];                                                                           \
        T *et = logmode ? etb : y + i;                                                       \
        for (int64_t q = 0; q < rem; q++) et[q] = EXPF(x[i + q] - m);                        \
        double sd[8] = {0, 0, 0, 0, 0, 0, 0, 0};  /* 8 partial sums: no serial chain */     \
        int64_t q8 = 0;                                                                      \
        for (; q8 + 8 <= rem; q8 += 8)                                                       \
            for (int j = 0; j < 8; j++) sd[j] += (double)et[q8 + j];                         \
        for (; q8 < rem; q8++) sd[0] += (double)et[q8];                                      \
        TL_TREE(sd, 8, TL_C_ADD)                                                             \
        s += sd[0];                                                                          \
        if (logmode) {                                                                       \
            const T ls = (T)log(s);                                                          \
            for (i = 0; i < n; i++) y[i] = (x[i] - m) - ls;                                  \
        } else {                                                                             \
            const T inv = (T)(1.0 / s);                                                      \
            for (i = 0; i < n; i++) y[i] *= inv;                                             \
        }                                                                                    \
    }                                                                                        \
}

/* the softmax's gradient over contiguous rows (PyTorch's _softmax_backward_data), fused: the
 * row's sum of g y (of g for log_softmax) in lanes, then one pass writing dx; the three
 * rows stay in L1 between the passes. */
#define TL_SOFTMAX_BACK_ROWS(NAME, T, NL, EXPF)                                            \
static void TL_RSFX(NAME)(const char *yb, const char *gb, char *db, int64_t nrows,           \
                          int64_t n, int logmode) {                                          \
    for (int64_t r = 0; r < nrows; r++) {                                                    \
        const T *y = (const T *)yb + r * n, *g = (const T *)gb + r * n;                      \
        T *dx = (T *)db + r * n;                                                             \
        int64_t i = 0;                                                                       \
        double s = 0.0;                                                                      \
        if (n >= NL) {      /* (a short row skips setting up and folding the lanes) */       \
            T acc[NL];                                                                       \
            for (int j = 0; j < NL; j++) acc[j] = 0;                                         \
            if (logmode) {                                                                   \
                for (; i + NL <= n; i += NL)                                                 \
                    for (int j = 0; j < NL; j++) acc[j] += g[i + j];                         \
            } else {                                                                         \
                for (; i + NL <= n; i += NL)                                                 \
                    for (int j = 0; j < NL; j++) acc[j] += g[i + j] * y[i + j];              \
            }                                                                                \
            TL_TREE(acc, NL, TL_C_ADD)                                                       \
            s = (double)acc[0];                                                              \
        }                                                                                    \
        for (; i < n; i++) s += logmode ? (double)g[i] : (double)g[i] * (double)y[i];        \
        const T ts = (T)s;                                                                   \
        if (logmode) {                                                                       \
            for (i = 0; i < n; i++) dx[i] = g[i] - EXPF(y[i]) * ts;                          \
        } else {                                                                             \
            for (i = 0; i < n; i++) dx[i] = y[i] * (g[i] - ts);                              \
        }                                                                                    \
    }                                                                                        \
}

/* softmax down columns: nc (<= TL_SMCB) columns of R rows, row stride ld elements. */
#define TL_SOFTMAX_COLS(NAME, T, EXPF)                                                     \
static void TL_RSFX(NAME)(const char *xb, char *yb, int64_t R, int64_t ld, int64_t nc,      \
                          int logmode) {                                                     \
    const T *x = (const T *)xb;                                                              \
    T *y = (T *)yb;                                                                          \
    T m[TL_SMCB], k[TL_SMCB];                                                                \
    double s[TL_SMCB];                                                                       \
    for (int64_t j = 0; j < nc; j++) { m[j] = -INFINITY; s[j] = 0.0; }                       \
    for (int64_t r = 0; r < R; r++)                                                          \
        for (int64_t j = 0; j < nc; j++) m[j] = TL_C_MAX(m[j], x[r * ld + j]);               \
    for (int64_t r = 0; r < R; r++) {                                                        \
        if (logmode) {                                                                       \
            for (int64_t j = 0; j < nc; j++) s[j] += (double)EXPF(x[r * ld + j] - m[j]);     \
        } else {                                                                             \
            for (int64_t j = 0; j < nc; j++) {                                               \
                const T e = EXPF(x[r * ld + j] - m[j]); y[r * ld + j] = e; s[j] += (double)e; } \
        }                                                                                    \
    }                                                                                        \
    for (int64_t j = 0; j < nc; j++) k[j] = logmode ? (T)log(s[j]) : (T)(1.0 / s[j]);        \
    for (int64_t r = 0; r < R; r++) {                                                        \
        if (logmode) {                                                                       \
            for (int64_t j = 0; j < nc; j++) y[r * ld + j] = (x[r * ld + j] - m[j]) - k[j];  \
        } else {                                                                             \
            for (int64_t j = 0; j < nc; j++) y[r * ld + j] *= k[j];                          \
        }                                                                                    \
    }                                                                                        \
}

/* max/min (of x or |x|): rows by TL_RROWS_BEST, cols by TL_RCOLS with the NaN-sticky combine. */
#define TL_RKIND_BEST(K, F, T, NL, INIT, MAP, FAST, COMB)                                    \
    TL_RROWS_BEST(rr_##K##_##F, T, NL, INIT, MAP, FAST, COMB)                                \
    TL_RCOLS(rc_##K##_##F, T, T, INIT, MAP, COMB, double)

/* argmax (K = MAX) or argmin (MIN): rows ra_K_F and cols rac_K_F. */
#define TL_RARG_KIND(K, F, T, NL, INIT, FAST, COMB, TAKE, OUTT)                              \
    TL_RARG_ROWS(ra_##K##_##F, T, NL, INIT, FAST, COMB, OUTT)                                \
    TL_RARG_COLS(rac_##K##_##F, T, TAKE, OUTT)

/* The sum family, one entry per kind: its element map for float32 and for float64.  The
 * float32 kernels flush float32 lanes into float64; float64 sums in float64 lanes. */
#define TL_SUM_KINDS(X)                                                                      \
    X(SUM, TL_M_ID, TL_M_ID) X(NANSUM, TL_M_NANZERO, TL_M_NANZERO)                           \
    X(SUMABS, TL_M_ABS32, TL_M_ABS64) X(SUMSQ, TL_M_SQ, TL_M_SQ)                             \
    X(SUMSQDEV, TL_M_SQDEV, TL_M_SQDEV) X(SUMPOW, TL_M_POW32, TL_M_POW64)                    \
    X(SUMEXPDEV, TL_M_EXP32, TL_M_EXP64) X(COUNTNZ, TL_M_NZ, TL_M_NZ)                        \
    X(COUNTNOTNAN, TL_M_NOTNAN, TL_M_NOTNAN)
#define TL_SUM_F32(K, M32, M64)                                                              \
    TL_RROWS_F32SUM(rr_##K##_f32, M32) TL_RCOLS_F32SUM(rc_##K##_f32, M32)
#define TL_SUM_F64(K, M32, M64)                                                              \
    TL_RKIND(K, f64, double, double, TL_RL64, 0.0, M64, TL_C_ADD, double)

/* The other kernels of one float type T (suffix F, NL lanes, ABS its |x|): product (in
 * float64 lanes for both float types), max/min and their abs forms, any/all, argmax/argmin. */
#define TL_RED_FLOAT_OTHERS(F, T, NL, ABS)                                                 \
    TL_RKIND(PROD, F, T, double, 16, 1.0, TL_M_ID, TL_C_MUL, double)                         \
    TL_RKIND_BEST(MAX, F, T, NL, -INFINITY, TL_M_ID, TL_C_FMAX, TL_C_MAX)                    \
    TL_RKIND_BEST(MIN, F, T, NL, INFINITY, TL_M_ID, TL_C_FMIN, TL_C_MIN)                     \
    TL_RKIND_BEST(MAXABS, F, T, NL, -INFINITY, ABS, TL_C_FMAX, TL_C_MAX)                     \
    TL_RKIND_BEST(MINABS, F, T, NL, INFINITY, ABS, TL_C_FMIN, TL_C_MIN)                      \
    TL_RKIND(ANY, F, T, T, NL, 0, TL_M_NZ, TL_C_MAX, double)                                 \
    TL_RKIND(ALL, F, T, T, NL, 1, TL_M_NZ, TL_C_MIN, double)                                 \
    TL_RARG_KIND(MAX, F, T, NL, -INFINITY, TL_C_FMAX, TL_C_MAX, TL_TAKE_MAX, double)         \
    TL_RARG_KIND(MIN, F, T, NL, INFINITY, TL_C_FMIN, TL_C_MIN, TL_TAKE_MIN, double)

#define TL_REG_KIND(K, F, S)                                                               \
    tl_red_rows[TL_RK_##K][S] = TL_RSFX(rr_##K##_##F);                                       \
    tl_red_cols[TL_RK_##K][S] = TL_RSFX(rc_##K##_##F);
#define TL_REG_ARG(F, S)                                                                     \
    tl_arg_rows[0][S] = TL_RSFX(ra_MAX_##F); tl_arg_rows[1][S] = TL_RSFX(ra_MIN_##F);        \
    tl_arg_cols[0][S] = TL_RSFX(rac_MAX_##F); tl_arg_cols[1][S] = TL_RSFX(rac_MIN_##F);
#define TL_REG_FLOAT(F, S)                                                                 \
    TL_REG_KIND(SUM, F, S) TL_REG_KIND(NANSUM, F, S) TL_REG_KIND(SUMABS, F, S)               \
    TL_REG_KIND(SUMSQ, F, S) TL_REG_KIND(SUMSQDEV, F, S) TL_REG_KIND(SUMPOW, F, S)           \
    TL_REG_KIND(SUMEXPDEV, F, S) TL_REG_KIND(COUNTNZ, F, S) TL_REG_KIND(COUNTNOTNAN, F, S)   \
    TL_REG_KIND(PROD, F, S) TL_REG_KIND(MAX, F, S) TL_REG_KIND(MIN, F, S)                    \
    TL_REG_KIND(MAXABS, F, S) TL_REG_KIND(MINABS, F, S) TL_REG_KIND(ANY, F, S)               \
    TL_REG_KIND(ALL, F, S) TL_REG_ARG(F, S)

#endif /* TL_REDUCE_BODY_MACROS */

/* ---- float kernels (every ISA copy) ---------------------------------------------------- */
TL_SUM_KINDS(TL_SUM_F32)
TL_SUM_KINDS(TL_SUM_F64)
TL_RED_FLOAT_OTHERS(f32, float, TL_RL, TL_M_ABS32)
TL_RED_FLOAT_OTHERS(f64, double, TL_RL64, TL_M_ABS64)
TL_SOFTMAX_ROWS(sm_rows_f32, float, TL_RL, tl_expf, tl_logf)
TL_SOFTMAX_ROWS(sm_rows_f64, double, TL_RL64, exp, log)
TL_SOFTMAX_COLS(sm_cols_f32, float, tl_expf)
TL_SOFTMAX_COLS(sm_cols_f64, double, exp)
TL_SOFTMAX_BACK_ROWS(smb_rows_f32, float, TL_RL, tl_expf)
TL_SOFTMAX_BACK_ROWS(smb_rows_f64, double, TL_RL64, exp)

#if TL_RBODY_FULL
/* ---- int64 kernels (baseline copy only): sums and products wrap like C unsigned -------- */
#define TL_M_I64NZ(v, c) ((v) != 0 ? (uint64_t)1 : (uint64_t)0)
#define TL_M_I64ONE(v, c) ((void)(v), (uint64_t)1)
#define TL_C_IMAX(a, b) ((b) > (a) ? (b) : (a))
#define TL_C_IMIN(a, b) ((b) < (a) ? (b) : (a))
TL_RKIND(SUM, i64, int64_t, uint64_t, TL_RL64, 0, TL_M_ID, TL_C_ADD, int64_t)
TL_RKIND(PROD, i64, int64_t, uint64_t, 16, 1, TL_M_ID, TL_C_MUL, int64_t)
TL_RKIND(MAX, i64, int64_t, int64_t, TL_RL64, INT64_MIN, TL_M_ID, TL_C_IMAX, int64_t)
TL_RKIND(MIN, i64, int64_t, int64_t, TL_RL64, INT64_MAX, TL_M_ID, TL_C_IMIN, int64_t)
TL_RKIND(COUNTNZ, i64, int64_t, uint64_t, TL_RL64, 0, TL_M_I64NZ, TL_C_ADD, int64_t)
TL_RKIND(COUNTNOTNAN, i64, int64_t, uint64_t, TL_RL64, 0, TL_M_I64ONE, TL_C_ADD, int64_t)
TL_RKIND(ANY, i64, int64_t, uint64_t, TL_RL64, 0, TL_M_I64NZ, TL_C_IMAX, int64_t)
TL_RKIND(ALL, i64, int64_t, uint64_t, TL_RL64, 1, TL_M_I64NZ, TL_C_IMIN, int64_t)
TL_RARG_KIND(MAX, i64, int64_t, TL_RL64, INT64_MIN, TL_C_IMAX, TL_C_IMAX, TL_TAKE_MAX, int64_t)
TL_RARG_KIND(MIN, i64, int64_t, TL_RL64, INT64_MAX, TL_C_IMIN, TL_C_IMIN, TL_TAKE_MIN, int64_t)
#endif

static void TL_RSFX(tl_reduce_register)(void) {
    TL_REG_FLOAT(f32, TL_RS_F32)
    TL_REG_FLOAT(f64, TL_RS_F64)
    tl_sm_rows[0] = TL_RSFX(sm_rows_f32); tl_sm_rows[1] = TL_RSFX(sm_rows_f64);
    tl_sm_cols[0] = TL_RSFX(sm_cols_f32); tl_sm_cols[1] = TL_RSFX(sm_cols_f64);
    tl_smb_rows[0] = TL_RSFX(smb_rows_f32); tl_smb_rows[1] = TL_RSFX(smb_rows_f64);
#if TL_RBODY_FULL
    /* NANSUM is SUM on integers; the float-only maps have no int64 kernel */
    TL_REG_KIND(SUM, i64, TL_RS_I64) TL_REG_KIND(PROD, i64, TL_RS_I64)
    TL_REG_KIND(MAX, i64, TL_RS_I64) TL_REG_KIND(MIN, i64, TL_RS_I64)
    TL_REG_KIND(COUNTNZ, i64, TL_RS_I64) TL_REG_KIND(COUNTNOTNAN, i64, TL_RS_I64)
    TL_REG_KIND(ANY, i64, TL_RS_I64) TL_REG_KIND(ALL, i64, TL_RS_I64)
    tl_red_rows[TL_RK_NANSUM][TL_RS_I64] = TL_RSFX(rr_SUM_i64);
    tl_red_cols[TL_RK_NANSUM][TL_RS_I64] = TL_RSFX(rc_SUM_i64);
    TL_REG_ARG(i64, TL_RS_I64)
#endif
}
