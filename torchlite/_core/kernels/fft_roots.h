/* Roots of unity for the FFT planner, in double precision for any order.
 *
 * A plan needs up to n roots of order n (twiddles, Bluestein's chirp, the real-transform
 * split).  One sin/cos per root costs 20-40 ns, which for n = 2^21 is longer than the
 * transform itself; a recurrence (w *= w1) is fast but loses about one digit every factor of
 * ten in n.  Here w^t is split as w^(hi*K) * w^lo with K ~ sqrt(n): two tables of about
 * sqrt(n) entries, each filled with sin/cos, and one complex product in double per root,
 * which is accurate to a few units in the last place of a double whatever n is (then
 * rounded to float for float32 plans). */
#ifndef TL_FFT_ROOTS_H
#define TL_FFT_ROOTS_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define TL_FFT_TWO_PI 6.283185307179586476925286766559

typedef struct {
    int64_t n;          /* order: the roots are exp(-2*pi*i*t/n) */
    int64_t k;          /* split: t = hi * k + lo */
    double *fine;       /* k complex: exp(-2*pi*i*lo/n) */
    double *coarse;     /* n / k + 1 complex: exp(-2*pi*i*hi*k/n) */
} tl_fft_roots;

static inline void tl_fft_sincos_frac(int64_t t, int64_t n, double *re, double *im) {
    /* exp(-2*pi*i*t/n) for 0 <= t < n, reduced to the first half turn so the angle stays
     * small (sin/cos of angles near 2*pi lose bits to the argument). */
    double a;
    if (2 * t > n) {
        a = TL_FFT_TWO_PI * (double)(n - t) / (double)n;
        *re = cos(a);
        *im = sin(a);
    } else {
        a = TL_FFT_TWO_PI * (double)t / (double)n;
        *re = cos(a);
        *im = -sin(a);
    }
}

/* Returns 0, or -1 when out of memory (r is then empty and safe to free). */
static int tl_fft_roots_init(tl_fft_roots *r, int64_t n) {
    int64_t k = 1, i, nc;
    while (k * k < n) k++;
    nc = n / k + 1;
    r->n = n;
    r->k = k;
    r->fine = (double *)malloc((size_t)(2 * k) * sizeof(double));
    r->coarse = (double *)malloc((size_t)(2 * nc) * sizeof(double));
    if (r->fine == NULL || r->coarse == NULL) {
        free(r->fine);
        free(r->coarse);
        r->fine = r->coarse = NULL;
        return -1;
    }
    for (i = 0; i < k; i++) tl_fft_sincos_frac(i, n, r->fine + 2 * i, r->fine + 2 * i + 1);
    for (i = 0; i < nc; i++) {
        int64_t t = i * k;
        tl_fft_sincos_frac(t < n ? t : t - n, n, r->coarse + 2 * i, r->coarse + 2 * i + 1);
    }
    return 0;
}

/* exp(-2*pi*i*t/n) for any t >= 0 (taken mod n). */
static inline void tl_fft_root(const tl_fft_roots *r, int64_t t, double *re, double *im) {
    const double *c, *f;
    t %= r->n;
    c = r->coarse + 2 * (t / r->k);
    f = r->fine + 2 * (t % r->k);
    *re = c[0] * f[0] - c[1] * f[1];
    *im = c[0] * f[1] + c[1] * f[0];
}

static void tl_fft_roots_free(tl_fft_roots *r) {
    free(r->fine);
    free(r->coarse);
    r->fine = r->coarse = NULL;
}
#endif
