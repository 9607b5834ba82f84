/* One floating GEMM: packing, the register-blocked micro-kernel, the blocked serial driver
 * and the matrix-vector path.  gemm_body.h includes this file once per (ISA level, dtype)
 * after defining:
 *   T            element type (float or double)
 *   TL_GK(name)  the name of this copy's functions (e.g. name_f32_v4)
 *   MR, NV, VL   micro-tile: MR rows of C by NV vectors of VL elements (NR = NV * VL)
 *   KC, MC, NC   cache blocks (k depth; rows of packed A; columns of packed B)
 *   VT, VZERO(), VLOAD(p) (aligned), VLOADU(p), VSTOREU(p, v), VSET1(x), VFMA(a, b, c) = a*b+c,
 *   VMUL(a, b)   the vector type and its operations (VT = T and VL = 1 for portable C)
 *   TB, TRANS(dst, ds, src, ss)  TB x TB transpose dst[p*ds+i] = src[i*ss+p] (TB = 0: none)
 *   VMASK_T, VMASK(n), VLOADM(p, m), VSTOREM(p, m, v)  the first n lanes only (VL > 1)
 *
 * Layout of the packed operands (BLIS style): A in panels of MR rows, each stored k-major
 * (a[p*MR + i]); B in panels of NR columns, each k-major (b[p*NR + j]); edges zero-padded, so
 * the micro-kernel always computes all MR rows and whole vectors of columns (an edge panel
 * uses a narrower micro-kernel, and the store writes only the valid part).
 *
 * Loop nest (C = alpha * A B + beta * C, blocks of MC rows outermost):
 *   for ic (MC rows of A, packed once per k block; the block sits in L2/L3)
 *     for pc (KC deep)
 *       pack A[ic.., pc..]
 *       for jc (NC columns of B, packed into an L2-sized block)
 *         for ir (MR rows: the A micro-panel stays in L1)
 *           for jr (NR columns: B micro-panels stream from L2)
 *             micro-kernel
 * Every element of C is accumulated in the same order whatever the tiling around it, so
 * the result does not depend on the thread count. */

#define NR (NV * VL)

/* Pack `r` (<= R) rows of a strided operand into one k-major panel of width R:
 * dst[p*R + i] = src[i*rs + p*ks]; rows r..R-1 are zero.  (Rows contiguous in the source,
 * rs == 1, are packed by pack_block.) */
static void TL_GK(pack_panel)(T *restrict dst, const T *restrict src, int R, int r,
                              int64_t kc, int64_t rs, int64_t ks) {
    int rt = 0;                               /* rows [0, rt) x k [0, kt) already transposed */
    int64_t kt = 0;
#if TB
    if (ks == 1) {                            /* k contiguous: transpose TB x TB blocks */
        /* TB rows at a time along all of k: few streams, so a power-of-two row stride does
         * not make them fight over the same cache sets.  An edge panel (a k^T operand whose
         * column count is not a whole number of panels) transposes its whole TB-row blocks
         * too rather than gathering them element by element. */
        rt = r / TB * TB;
        kt = kc / TB * TB;
        for (int i = 0; i < rt; i += TB)
            for (int64_t q = 0; q < kt; q += TB)
                TRANS(dst + q * R + i, R, src + i * rs + q, rs);
    }
#endif
    if (rs < ks) {
        /* the inner loop along the smaller stride: walking down k for each row in turn would
         * touch kc lines per row, and with a power-of-two k stride those share an L1 set */
        for (int64_t q = 0; q < kc; q++)
            for (int i = q < kt ? rt : 0; i < r; i++) dst[q * R + i] = src[i * rs + q * ks];
    } else {
        for (int i = 0; i < r; i++) {
            const T *s = src + i * rs;
            for (int64_t q = i < rt ? kt : 0; q < kc; q++) dst[q * R + i] = s[q * ks];
        }
    }
    if (r < R)
        for (int64_t q = 0; q < kc; q++)
            for (int i = r; i < R; i++) dst[q * R + i] = 0;
}

/* Pack `rows` rows (split into panels of R) of a kc-deep block. */
static void TL_GK(pack_block)(T *restrict dst, const T *restrict src, int R, int64_t rows,
                              int64_t kc, int64_t rs, int64_t ks) {
    if (rs == 1) {
        /* Rows contiguous in the source (a row-major B, or a transposed A): each k step is one
         * run of `rows` elements.  Walk k outermost and copy each run into all the panels of a
         * group at once, edge panel included, so every source line is read once and in full.
         * Panel by panel, an edge panel (r < R) would be gathered a column at a time down the
         * k stride, and a narrow block re-reads each line once per panel: with a power-of-two
         * k stride (a head of a (T, B, E) projection: 16 KB) all those lines fall in one L1
         * set and are evicted between the reads, which made such a bmm twice as slow.  Groups
         * of about 64 elements keep the number of panels written at once small. */
        const int64_t gw = R < 64 ? 64 / R * R : R;
        for (int64_t i = 0; i < rows; i += gw) {
            const int64_t w = rows - i < gw ? rows - i : gw;
            const int64_t whole = w / R * R;
            for (int64_t p = 0; p < kc; p++) {
                const T *s = src + i + p * ks;
                T *d = dst + i * kc + p * R;
                int64_t j = 0;
                for (; j < whole; j += R, d += R * kc)
                    for (int q = 0; q < R; q++) d[q] = s[j + q];
                if (j < w) {
                    const int r = (int)(w - j);
                    for (int q = 0; q < r; q++) d[q] = s[j + q];
                    for (int q = r; q < R; q++) d[q] = 0;
                }
            }
        }
        return;
    }
    for (int64_t i = 0; i < rows; i += R) {
        int r = (int)(rows - i < R ? rows - i : R);
        TL_GK(pack_panel)(dst + i * kc, src + i * rs, R, r, kc, rs, ks);
    }
}

/* All of B (k x n) packed as gemm_serial reads it (see tl_gemm_pack_b in gemm.h): per KC
 * block of k, every column in NR-wide panels. */
static void TL_GK(pack_b)(char *dst_, const char *b_, int64_t rsb, int64_t csb, int64_t k,
                          int64_t n) {
    T *dst = (T *)dst_;
    const T *B = (const T *)b_;
    const int64_t npad = (n + NR - 1) / NR * NR;
    for (int64_t pc = 0; pc < k; pc += KC) {
        const int64_t kc = k - pc < KC ? k - pc : KC;
        TL_GK(pack_block)(dst + pc * npad, B + pc * rsb, NR, n, kc, csb, rsb);
    }
}

/* Write an edge tile (mr < MR rows or nr < NR columns, or C with a column stride):
 * C[0:mr, 0:nr] = tile + beta * C, where tile already holds alpha * A B (row stride NR); with
 * an addend (add != NULL: element (i, j) at add[i * ars + j * acs]) + beta * addend instead. */
static void TL_GK(store_edge)(const T *restrict tile, T *restrict c, int64_t rsc, int64_t csc,
                              T beta, int mr, int nr, const T *add, int64_t ars, int64_t acs) {
#if VL > 1
    if (csc == 1 && (!add || acs <= 1)) {
        const VT vb = VSET1(beta);
        const int full = nr / VL * VL, rem = nr - full;
        for (int i = 0; i < mr; i++) {
            T *cp = c + i * rsc;
            const T *tp = tile + i * NR;
            const T *ap = add ? add + i * ars : NULL;
            for (int j = 0; j < full; j += VL) {
                VT r = VLOADU(tp + j);
                if (ap) r = VFMA(vb, acs ? VLOADU(ap + j) : VSET1(*ap), r);
                else if (beta != 0) r = VFMA(vb, VLOADU(cp + j), r);
                VSTOREU(cp + j, r);
            }
            if (rem) {
                VMASK_T msk = VMASK(rem);
                VT r = VLOADM(tp + full, msk);
                if (ap) r = VFMA(vb, acs ? VLOADM(ap + full, msk) : VSET1(*ap), r);
                else if (beta != 0) r = VFMA(vb, VLOADM(cp + full, msk), r);
                VSTOREM(cp + full, msk, r);
            }
        }
        return;
    }
#endif
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            T *cp = c + i * rsc + j * csc;
            if (add)
                *cp = beta * add[i * ars + j * acs] + tile[i * NR + j];
            else
                *cp = beta != 0 ? beta * *cp + tile[i * NR + j] : tile[i * NR + j];
        }
}

/* The micro-kernel computing the first NVX vectors (NVX * VL columns) of a packed B panel:
 * C[0:mr, 0:nr] = alpha * (a-panel . b-panel) + beta * C  (beta == 0: C is not read).
 * Narrower copies serve edge panels, so a 16-column remainder costs a third of a full tile.
 * The accumulators are indexed by constants only, so they live in registers.
 * A is read as a[AI(i)] at step p, then a += AP: a packed panel (AI(i) = i, AP = MR) for
 * the GEMM, or MR rows `lda` apart with k contiguous (AI(i) = i * lda, AP = 1) for callers
 * whose A is already in that form (the Winograd convolution's transformed tiles); all MR
 * rows are read even when mr < MR. */
#define TL_A_PACKED(i) (i)
#define TL_A_ROWS(i) ((i) * lda)
#define TL_UKR(NAME, NVX, AI, AP)                                                           \
static void TL_GK(NAME)(int64_t kc, const T *restrict a, int64_t lda, const T *restrict b,  \
                        T *restrict c, int64_t rsc, int64_t csc, T alpha, T beta,           \
                        int mr, int nr, const T *add, int64_t ars, int64_t acs) {           \
    (void)lda;                                                                              \
    VT acc[MR][NVX];                                                                        \
    TL_UNROLL(16) for (int i = 0; i < MR; i++)                                   \
        TL_UNROLL(8) for (int j = 0; j < NVX; j++) acc[i][j] = VZERO();          \
    TL_UNROLL(4) for (int64_t p = 0; p < kc; p++) {                              \
        VT bv[NVX];                                                                         \
        TL_UNROLL(8) for (int j = 0; j < NVX; j++) bv[j] = VLOAD(b + j * VL);    \
        TL_UNROLL(16) for (int i = 0; i < MR; i++) {                             \
            const VT av = VSET1(a[AI(i)]);                                                  \
            TL_UNROLL(8) for (int j = 0; j < NVX; j++)                           \
                acc[i][j] = VFMA(av, bv[j], acc[i][j]);                                     \
        }                                                                                   \
        a += AP;                                                                            \
        b += NR;                                                                            \
    }                                                                                       \
    const VT va = VSET1(alpha), vb = VSET1(beta);                                           \
    if (mr == MR && nr == NVX * VL && csc == 1 && (!add || acs <= 1)) {                     \
        TL_UNROLL(16) for (int i = 0; i < MR; i++)                               \
            TL_UNROLL(8) for (int j = 0; j < NVX; j++) {                         \
                T *cp = c + i * rsc + j * VL;                                               \
                VT r = VMUL(va, acc[i][j]);                                                 \
                if (add)                                                                    \
                    r = VFMA(vb, acs ? VLOADU(add + i * ars + j * VL) : VSET1(add[i * ars]), r); \
                else if (beta != 0) r = VFMA(vb, VLOADU(cp), r);                            \
                VSTOREU(cp, r);                                                             \
            }                                                                               \
        return;                                                                             \
    }                                                                                       \
    T tile[MR * NR];                                                                        \
    TL_UNROLL(16) for (int i = 0; i < MR; i++)                                   \
        TL_UNROLL(8) for (int j = 0; j < NVX; j++)                               \
            VSTOREU(tile + i * NR + j * VL, VMUL(va, acc[i][j]));                           \
    TL_GK(store_edge)(tile, c, rsc, csc, beta, mr, nr, add, ars, acs);                      \
}

TL_UKR(ukr_full, NV, TL_A_PACKED, MR)
TL_UKR(rows_full, NV, TL_A_ROWS, 1)
#if NV == 2 || NV == 3
TL_UKR(ukr1, 1, TL_A_PACKED, MR)
TL_UKR(rows1, 1, TL_A_ROWS, 1)
#endif
#if NV == 3
TL_UKR(ukr2, 2, TL_A_PACKED, MR)
TL_UKR(rows2, 2, TL_A_ROWS, 1)
#endif
#undef TL_UKR

/* C tile of mr x nr at c from packed panels: the narrowest micro-kernel that covers nr. */
static inline void TL_GK(ukr)(int64_t kc, const T *a, const T *b, T *c, int64_t rsc,
                              int64_t csc, T alpha, T beta, int mr, int nr, const T *add,
                              int64_t ars, int64_t acs) {
#if NV == 2 || NV == 3
    if (nr <= VL) { TL_GK(ukr1)(kc, a, 0, b, c, rsc, csc, alpha, beta, mr, nr, add, ars, acs); return; }
#endif
#if NV == 3
    if (nr <= 2 * VL) { TL_GK(ukr2)(kc, a, 0, b, c, rsc, csc, alpha, beta, mr, nr, add, ars, acs); return; }
#endif
    TL_GK(ukr_full)(kc, a, 0, b, c, rsc, csc, alpha, beta, mr, nr, add, ars, acs);
}

/* tl_gemm_kernel.tile: C[0:mr, 0:nr] (row stride rsc) = A B + beta C for A's MR rows lda
 * apart (k contiguous; rows past mr are read, not used) and one packed B panel (as
 * tl_gemm_pack_b writes it, kc deep). */
static void TL_GK(tile)(int64_t kc, const void *a_, int64_t lda, const void *b_, void *c_,
                        int64_t rsc, double beta, int mr, int nr) {
    const T *a = (const T *)a_, *b = (const T *)b_;
    T *c = (T *)c_;
#if NV == 2 || NV == 3
    if (nr <= VL) { TL_GK(rows1)(kc, a, lda, b, c, rsc, 1, 1, (T)beta, mr, nr, NULL, 0, 0); return; }
#endif
#if NV == 3
    if (nr <= 2 * VL) { TL_GK(rows2)(kc, a, lda, b, c, rsc, 1, 1, (T)beta, mr, nr, NULL, 0, 0); return; }
#endif
    TL_GK(rows_full)(kc, a, lda, b, c, rsc, 1, 1, (T)beta, mr, nr, NULL, 0, 0);
}
#undef TL_A_PACKED
#undef TL_A_ROWS

/* The whole blocked product on the calling thread. */
static void TL_GK(gemm_serial)(const tl_gemm_problem *pr) {
    const int64_t m = pr->m, n = pr->n, k = pr->k;
    const T *A = (const T *)pr->a, *B = (const T *)pr->b;
    T *C = (T *)pr->c;
    const T alpha = (T)pr->alpha;
    const int64_t mcap = (m < MC ? (m + MR - 1) / MR * MR : MC);
    const int64_t ncap = (n < NC ? (n + NR - 1) / NR * NR : NC);
    const int64_t kcap = k < KC ? k : KC;
    const int64_t asize = (mcap * kcap + 63) / 64 * 64;     /* keeps bufB 64-byte aligned */
    T *bufA = (T *)tl_gemm_scratch((size_t)(asize + ncap * kcap) * sizeof(T));
    if (!bufA) { tl_gemm_oom = 1; return; }
    T *bufB = bufA + asize;
    const T *PB = (const T *)pr->pb;          /* B packed beforehand, or NULL */
    for (int64_t ic = 0; ic < m; ic += MC) {
        const int64_t mc = m - ic < MC ? m - ic : MC;
        for (int64_t pc = 0; pc < k; pc += KC) {
            const int64_t kc = k - pc < KC ? k - pc : KC;
            const T beta = pc == 0 ? (T)pr->beta : (T)1;
            /* the addend at the first K block (then C holds it); beta == 0 reads nothing */
            const T *add = pc == 0 && pr->beta != 0 ? (const T *)pr->addend : NULL;
            TL_GK(pack_block)(bufA, A + ic * pr->rsa + pc * pr->csa, MR, mc, kc, pr->rsa, pr->csa);
            for (int64_t jc = 0; jc < n; jc += NC) {
                const int64_t nc = n - jc < NC ? n - jc : NC;
                const T *bB = bufB;
                if (PB)
                    bB = PB + pc * pr->pb_n + (pr->pb_j0 + jc) * kc;
                else if (pr->pack_b_fn)
                    pr->pack_b_fn(pr->pack_b_ctx, bufB, NR, pc, kc, pr->pb_j0 + jc, nc);
                else
                    TL_GK(pack_block)(bufB, B + pc * pr->rsb + jc * pr->csb, NR, nc, kc, pr->csb, pr->rsb);
                for (int64_t ir = 0; ir < mc; ir += MR) {
                    const int mr = (int)(mc - ir < MR ? mc - ir : MR);
                    for (int64_t jr = 0; jr < nc; jr += NR) {
                        const int nr = (int)(nc - jr < NR ? nc - jr : NR);
                        TL_GK(ukr)(kc, bufA + ir * kc, bB + jr * kc,
                                   C + (ic + ir) * pr->rsc + (jc + jr) * pr->csc,
                                   pr->rsc, pr->csc, alpha, beta, mr, nr,
                                   add ? add + (ic + ir) * pr->ars + (jc + jr) * pr->acs : NULL,
                                   pr->ars, pr->acs);
                    }
                    /* the last k block: these mr x nc values are final and in L1 */
                    if (pr->epilogue && pc + kc >= k)
                        pr->epilogue(pr->epilogue_ctx, pr->ep_i0 + ic + ir, mr, pr->ep_j0 + jc, nc);
                }
            }
        }
    }
}

/* ---- matrix-vector: y[i] = alpha * A[i, :] . x + beta * y[i] (C has one column) -------- */

/* One row's dot product, always summed as fixed chunks of TL_DOT_CHUNK combined in order,
 * so splitting a long dot product over threads gives the same bits as one thread. */
static T TL_GK(dot_chunk)(const T *restrict a, int64_t sa, const T *restrict x, int64_t sx,
                          int64_t len) {
    T s = 0;
    if (sa == 1 && sx == 1) {
#pragma omp simd reduction(+:s)
        for (int64_t q = 0; q < len; q++) s += a[q] * x[q];
    } else {
        for (int64_t q = 0; q < len; q++) s += a[q * sa] * x[q * sx];
    }
    return s;
}

static T TL_GK(dot_row)(const T *a, int64_t sa, const T *x, int64_t sx, int64_t k) {
    T s = 0;
    for (int64_t q = 0; q < k; q += TL_DOT_CHUNK)
        s += TL_GK(dot_chunk)(a + q * sa, sa, x + q * sx, sx,
                              k - q < TL_DOT_CHUNK ? k - q : TL_DOT_CHUNK);
    return s;
}

static inline void TL_GK(gemv_store)(T *y, T acc, T alpha, T beta) {
    *y = beta != 0 ? beta * *y + alpha * acc : alpha * acc;
}

/* Rows [i0, i1) of y = A x, for A with contiguous columns (rsa == 1): accumulate column by
 * column (axpy form, vectorised along the rows) in blocks of rows that stay in L1.  Each
 * y[i] still sums its k terms in order, so this agrees with dot_row up to rounding only. */
static void TL_GK(gemv_cols)(const tl_gemv_problem *g, int64_t i0, int64_t i1) {
    enum { RB = 512 };
    const T *A = (const T *)g->a, *x = (const T *)g->x;
    T *y = (T *)g->y;
    T acc[RB];
    for (int64_t ib = i0; ib < i1; ib += RB) {
        const int64_t rb = i1 - ib < RB ? i1 - ib : RB;
        for (int64_t i = 0; i < rb; i++) acc[i] = 0;
        for (int64_t q = 0; q < g->k; q++) {
            const T xv = x[q * g->sx];
            const T *col = A + ib + q * g->csa;
#pragma omp simd
            for (int64_t i = 0; i < rb; i++) acc[i] += col[i] * xv;
        }
        for (int64_t i = 0; i < rb; i++)
            TL_GK(gemv_store)(y + (ib + i) * g->sy, acc[i], (T)g->alpha, (T)g->beta);
    }
}

static void TL_GK(gemv_rows)(const tl_gemv_problem *g, int64_t i0, int64_t i1) {
    if (tl_gemv_by_columns(g)) {
        TL_GK(gemv_cols)(g, i0, i1);
        return;
    }
    const T *A = (const T *)g->a, *x = (const T *)g->x;
    T *y = (T *)g->y;
    for (int64_t i = i0; i < i1; i++)
        TL_GK(gemv_store)(y + i * g->sy, TL_GK(dot_row)(A + i * g->rsa, g->csa, x, g->sx, g->k),
                          (T)g->alpha, (T)g->beta);
}

/* A single long dot product split over threads by chunks (same sums as dot_row). */
static void TL_GK(gemv_dot)(const tl_gemv_problem *g, int nthreads) {
    const T *a = (const T *)g->a, *x = (const T *)g->x;
    const int64_t nch = (g->k + TL_DOT_CHUNK - 1) / TL_DOT_CHUNK;
    T *part = (T *)malloc((size_t)nch * sizeof(T));
    if (!part) { tl_gemm_oom = 1; return; }
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int64_t c = 0; c < nch; c++) {
        const int64_t q = c * TL_DOT_CHUNK;
        part[c] = TL_GK(dot_chunk)(a + q * g->csa, g->csa, x + q * g->sx, g->sx,
                                   g->k - q < TL_DOT_CHUNK ? g->k - q : TL_DOT_CHUNK);
    }
    T s = 0;
    for (int64_t c = 0; c < nch; c++) s += part[c];
    free(part);
    TL_GK(gemv_store)((T *)g->y, s, (T)g->alpha, (T)g->beta);
}

static void TL_GK(gemv)(const tl_gemv_problem *g, int nthreads) {
    if (g->m == 1 && g->rsa != 1 && nthreads > 1 && g->k >= 4 * TL_DOT_CHUNK) {
        TL_GK(gemv_dot)(g, nthreads);
        return;
    }
    if (nthreads <= 1 || g->m < 2 * TL_GEMV_ROWS) {
        TL_GK(gemv_rows)(g, 0, g->m);
        return;
    }
    const int64_t nblk = (g->m + TL_GEMV_ROWS - 1) / TL_GEMV_ROWS;
#pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int64_t bi = 0; bi < nblk; bi++) {
        const int64_t i0 = bi * TL_GEMV_ROWS;
        TL_GK(gemv_rows)(g, i0, g->m - i0 < TL_GEMV_ROWS ? g->m : i0 + TL_GEMV_ROWS);
    }
}

static const tl_gemm_kernel TL_GK(kernel) = {(int)sizeof(T), MR, NR, MC, KC, NC, TL_GK(gemm_serial),
                                              TL_GK(gemv), TL_GK(pack_b), TL_GK(tile)};

#undef NR
#undef T
#undef TL_GK
#undef MR
#undef NV
#undef VL
#undef KC
#undef MC
#undef NC
#undef VT
#undef VZERO
#undef VLOAD
#undef VLOADU
#undef VSTOREU
#undef VSET1
#undef VFMA
#undef VMUL
#undef TB
#undef TRANS
#undef VMASK_T
#undef VMASK
#undef VLOADM
#undef VSTOREM
