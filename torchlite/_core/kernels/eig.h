/* Eigenvalues and eigenvectors of a general square matrix (torch.linalg.eig), in complex
 * double precision.
 *
 *   1. Householder reflections reduce A to upper Hessenberg form H = Q^H A Q.
 *   2. Shifted QR iterations drive H to the complex Schur form T = Q^H A Q (upper
 *      triangular): on the bottom unreduced block, one implicit single-shift step at a time,
 *      chasing the bulge down with Givens rotations; the shift is the eigenvalue of the block's
 *      trailing 2 x 2 nearer its last entry (Wilkinson's), an exceptional shift every tenth
 *      step without a deflation; a subdiagonal entry below eps times its two diagonal
 *      neighbours is set to zero, which splits the problem.
 *   3. The eigenvalues are T's diagonal.  The eigenvector of T for T[k][k] comes from back
 *      substitution (a denominator below eps * |T| is replaced by that bound, as LAPACK does);
 *      Q maps it back; each vector is scaled to unit 2-norm with its largest component real
 *      and positive (LAPACK's convention, so a real matrix's real eigenvalue gets a real
 *      vector).
 * Everything is O(n^3).  Real matrices are handled as complex ones, so the eigenvalues of a
 * real matrix's conjugate pairs agree to rounding, not bit for bit.  The arithmetic is
 * cplx.h's (a struct of two doubles: MSVC has no C99 complex arithmetic). */
#ifndef TL_EIG_H
#define TL_EIG_H
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cplx.h"

typedef tl_c128 tl_cd;
#define TL_C(re, im) tl_c128_mk((re), (im))
#define TL_ADD tl_c128_add
#define TL_SUB tl_c128_sub
#define TL_MUL tl_c128_mul
#define TL_DIV tl_c128_div
#define TL_CONJ tl_c128_conj
#define TL_SCALE tl_c128_scale
#define TL_ABS tl_c128_abs

static inline double tl_cabs1(tl_cd z) { return fabs(z.re) + fabs(z.im); }
static inline tl_cd tl_cmulconj(tl_cd a, tl_cd b) { return TL_MUL(TL_CONJ(a), b); }   /* conj(a) b */

/* H = I - 2 u u^H applied to A on the left (rows r0.., columns c0..n-1) */
static void tl_eig_reflect_left(tl_cd* a, int64_t n, const tl_cd* u, int64_t r0, int64_t c0) {
    for (int64_t j = c0; j < n; j++) {
        tl_cd s = TL_C(0, 0);
        for (int64_t i = r0; i < n; i++) s = TL_ADD(s, tl_cmulconj(u[i], a[i * n + j]));
        s = TL_SCALE(s, 2);
        for (int64_t i = r0; i < n; i++) a[i * n + j] = TL_SUB(a[i * n + j], TL_MUL(u[i], s));
    }
}

/* A H on the right (columns c0.., every row) */
static void tl_eig_reflect_right(tl_cd* a, int64_t n, const tl_cd* u, int64_t c0) {
    for (int64_t i = 0; i < n; i++) {
        tl_cd s = TL_C(0, 0);
        for (int64_t j = c0; j < n; j++) s = TL_ADD(s, TL_MUL(a[i * n + j], u[j]));
        s = TL_SCALE(s, 2);
        for (int64_t j = c0; j < n; j++) a[i * n + j] = TL_SUB(a[i * n + j], TL_MUL(s, TL_CONJ(u[j])));
    }
}

/* step 1: a becomes Hessenberg; q (or NULL) accumulates the reflections */
static void tl_eig_hessenberg(tl_cd* a, int64_t n, tl_cd* q, tl_cd* u) {
    for (int64_t k = 0; k + 2 < n; k++) {
        double norm = 0;
        for (int64_t i = k + 1; i < n; i++) norm = hypot(norm, TL_ABS(a[i * n + k]));
        if (norm == 0) continue;
        tl_cd x0 = a[(k + 1) * n + k];
        double ax0 = TL_ABS(x0);
        tl_cd phase = ax0 == 0 ? TL_C(1, 0) : TL_SCALE(x0, 1 / ax0);
        tl_cd alpha = TL_SCALE(phase, -norm);
        memset(u, 0, (size_t)n * sizeof(tl_cd));
        double un = 0;
        for (int64_t i = k + 1; i < n; i++) {
            u[i] = i == k + 1 ? TL_SUB(a[i * n + k], alpha) : a[i * n + k];
            un = hypot(un, TL_ABS(u[i]));
        }
        if (un == 0) continue;
        for (int64_t i = k + 1; i < n; i++) u[i] = TL_SCALE(u[i], 1 / un);
        tl_eig_reflect_left(a, n, u, k + 1, k);
        tl_eig_reflect_right(a, n, u, k + 1);
        if (q) tl_eig_reflect_right(q, n, u, k + 1);
        a[(k + 1) * n + k] = alpha;
        for (int64_t i = k + 2; i < n; i++) a[i * n + k] = TL_C(0, 0);
    }
}

/* the Givens rotation G = [[c, s], [-conj(s), c]] (c real) with G [x; y] = [r; 0] */
static void tl_eig_givens(tl_cd x, tl_cd y, double* c, tl_cd* s) {
    double ax = TL_ABS(x), ay = TL_ABS(y);
    if (ay == 0) { *c = 1; *s = TL_C(0, 0); return; }
    if (ax == 0) { *c = 0; *s = TL_SCALE(TL_CONJ(y), 1 / ay); return; }
    double r = hypot(ax, ay);
    *c = ax / r;
    *s = TL_SCALE(TL_MUL(TL_SCALE(x, 1 / ax), TL_CONJ(y)), 1 / r);
}

/* rows k, k+1 of a (columns j0..n-1) := G [row k; row k+1] */
static void tl_eig_rot_rows(tl_cd* a, int64_t n, int64_t k, int64_t j0, double c, tl_cd s) {
    for (int64_t j = j0; j < n; j++) {
        tl_cd t1 = a[k * n + j], t2 = a[(k + 1) * n + j];
        a[k * n + j] = TL_ADD(TL_SCALE(t1, c), TL_MUL(s, t2));
        a[(k + 1) * n + j] = TL_SUB(TL_SCALE(t2, c), TL_MUL(TL_CONJ(s), t1));
    }
}

/* columns k, k+1 of a (rows 0..last) := [col k, col k+1] G^H */
static void tl_eig_rot_cols(tl_cd* a, int64_t n, int64_t k, int64_t last, double c, tl_cd s) {
    for (int64_t i = 0; i <= last; i++) {
        tl_cd t1 = a[i * n + k], t2 = a[i * n + k + 1];
        a[i * n + k] = TL_ADD(TL_SCALE(t1, c), TL_MUL(TL_CONJ(s), t2));
        a[i * n + k + 1] = TL_SUB(TL_SCALE(t2, c), TL_MUL(s, t1));
    }
}

/* step 2: a Hessenberg -> upper triangular, q accumulating; -1 without convergence */
static int tl_eig_schur(tl_cd* a, int64_t n, tl_cd* q) {
    int64_t hi = n - 1, since_deflation = 0, total = 0;
    while (hi > 0) {
        int64_t l = hi;
        for (; l > 0; l--) {
            double near = tl_cabs1(a[(l - 1) * n + l - 1]) + tl_cabs1(a[l * n + l]);
            if (near == 0)                   /* both zero: compare with the row's scale */
                for (int64_t j = l; j <= hi; j++) near += tl_cabs1(a[l * n + j]);
            if (tl_cabs1(a[l * n + l - 1]) <= DBL_EPSILON * near) {
                a[l * n + l - 1] = TL_C(0, 0);
                break;
            }
        }
        if (l == hi) {                       /* a[hi][hi] is an eigenvalue */
            hi--;
            since_deflation = 0;
            continue;
        }
        if (since_deflation >= 90 || total >= 60 * n + 100) return -1;
        since_deflation++;
        total++;
        tl_cd aa = a[(hi - 1) * n + hi - 1], bb = a[(hi - 1) * n + hi];
        tl_cd cc = a[hi * n + hi - 1], dd = a[hi * n + hi];
        tl_cd mu;
        if (since_deflation % 10 == 0) {     /* exceptional shift: break a cycle */
            double m = TL_ABS(cc);
            mu = TL_ADD(dd, TL_C(0.75 * m, 0.5 * m));
        } else {                             /* the eigenvalue of [[aa, bb], [cc, dd]] nearer dd */
            tl_cd half = TL_SCALE(TL_ADD(aa, dd), 0.5), hd = TL_SCALE(TL_SUB(aa, dd), 0.5);
            tl_cd disc = tl_c128_sqrt(TL_ADD(TL_MUL(hd, hd), TL_MUL(bb, cc)));
            tl_cd m1 = TL_ADD(half, disc), m2 = TL_SUB(half, disc);
            mu = TL_ABS(TL_SUB(m1, dd)) <= TL_ABS(TL_SUB(m2, dd)) ? m1 : m2;
        }
        tl_cd x = TL_SUB(a[l * n + l], mu), y = a[(l + 1) * n + l];
        for (int64_t k = l; k < hi; k++) {
            if (k > l) {                     /* chase the bulge at a[k+1][k-1] */
                x = a[k * n + k - 1];
                y = a[(k + 1) * n + k - 1];
            }
            double c;
            tl_cd s;
            tl_eig_givens(x, y, &c, &s);
            tl_eig_rot_rows(a, n, k, k > l ? k - 1 : l, c, s);
            tl_eig_rot_cols(a, n, k, k + 2 < hi ? k + 2 : hi, c, s);
            if (q) tl_eig_rot_cols(q, n, k, n - 1, c, s);
            if (k > l) a[(k + 1) * n + k - 1] = TL_C(0, 0);
        }
    }
    return 0;
}

/* a (n x n, row-major, overwritten) -> w (n eigenvalues) and, unless v is NULL, v (n x n,
 * the eigenvectors as columns).  0, or -1 when the iterations do not converge, -2 when
 * memory runs out.  (void pointers: the caller passes raw complex128 buffers.) */
static int tl_eig_one(void* a_, int64_t n, void* w_, void* v_) {
    tl_cd *a = (tl_cd*)a_, *w = (tl_cd*)w_, *v = (tl_cd*)v_;
    if (n == 0) return 0;
    tl_cd* u = (tl_cd*)malloc((size_t)n * sizeof(tl_cd));
    tl_cd* q = v ? (tl_cd*)calloc((size_t)(n * n), sizeof(tl_cd)) : NULL;
    tl_cd* y = v ? (tl_cd*)malloc((size_t)n * sizeof(tl_cd)) : NULL;
    if (!u || (v && (!q || !y))) { free(u); free(q); free(y); return -2; }
    if (q) for (int64_t i = 0; i < n; i++) q[i * n + i] = TL_C(1, 0);
    tl_eig_hessenberg(a, n, q, u);
    int rc = tl_eig_schur(a, n, q);
    if (rc == 0) {
        for (int64_t i = 0; i < n; i++) w[i] = a[i * n + i];
        if (v) {
            double tnorm = 0;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = i; j < n; j++) tnorm = fmax(tnorm, tl_cabs1(a[i * n + j]));
            double smin = fmax(DBL_EPSILON * tnorm, DBL_MIN);
            for (int64_t k = 0; k < n; k++) {
                y[k] = TL_C(1, 0);
                for (int64_t j = k - 1; j >= 0; j--) {
                    tl_cd s = TL_C(0, 0);
                    for (int64_t m = j + 1; m <= k; m++) s = TL_ADD(s, TL_MUL(a[j * n + m], y[m]));
                    tl_cd d = TL_SUB(a[j * n + j], w[k]);
                    if (tl_cabs1(d) < smin) d = TL_C(smin, 0);
                    y[j] = TL_DIV(TL_C(-s.re, -s.im), d);
                    double big = tl_cabs1(y[j]);
                    if (big > 1e100)         /* keep the partial vector finite */
                        for (int64_t m = j; m <= k; m++) y[m] = TL_SCALE(y[m], 1 / big);
                }
                double norm = 0, best = -1;
                int64_t at = 0;
                for (int64_t i = 0; i < n; i++) {
                    tl_cd x = TL_C(0, 0);
                    for (int64_t m = 0; m <= k; m++) x = TL_ADD(x, TL_MUL(q[i * n + m], y[m]));
                    v[i * n + k] = x;
                    double ax = TL_ABS(x);
                    norm = hypot(norm, ax);
                    if (ax > best) { best = ax; at = i; }
                }
                /* unit norm, the largest component real and positive */
                tl_cd scale = norm > 0 ? TL_SCALE(TL_CONJ(v[at * n + k]), 1 / (best * norm)) : TL_C(1, 0);
                for (int64_t i = 0; i < n; i++) v[i * n + k] = TL_MUL(v[i * n + k], scale);
                v[at * n + k].im = 0;
            }
        }
    }
    free(u); free(q); free(y);
    return rc;
}

#undef TL_C
#undef TL_ADD
#undef TL_SUB
#undef TL_MUL
#undef TL_DIV
#undef TL_CONJ
#undef TL_SCALE
#undef TL_ABS
#endif
