/* Samplers built on the Philox stream that are not one-value-per-element transforms:
 * Poisson (a variable number of draws per element), randperm's shuffle, and multinomial
 * sampling by rows.  Plain scalar C, compiled once. */
#ifndef TL_RANDOM_SAMPLE_H
#define TL_RANDOM_SAMPLE_H
#include <math.h>
#include "philox.h"
#include "random_math.h"

/* ---- per-element streams ----------------------------------------------------------------- */
/* Element e of a request owns block base + e: its draw j (a 53-bit uniform) is words
 * 2 (j mod 2), 2 (j mod 2) + 1 of the block at draw number j / 2. */
typedef struct {
    const uint32_t* key;
    uint64_t block;
    uint32_t next;
    uint32_t words[4];
} tl_rnd_stream;

TL_INLINE double tl_stream_u01(tl_rnd_stream* s) {
    uint32_t j = s->next++;
    if ((j & 1u) == 0) tl_philox_block(s->key, s->block, j >> 1, s->words);
    return tl_u01d(tl_u64_of(s->words[2 * (j & 1u)], s->words[2 * (j & 1u) + 1]));
}

/* ---- Poisson ------------------------------------------------------------------------------ */
/* Rates below 10: count uniforms until their product drops to exp(-rate) (Knuth).  From 10
 * on: Hormann's transformed rejection with squeeze, PTRS ("The transformed rejection method
 * for generating Poisson random variables", 1993), about 1.2 pairs of draws per value. */
static double tl_rnd_poisson_one(const uint32_t key[2], uint64_t block, double rate) {
    tl_rnd_stream s = {key, block, 0u, {0u, 0u, 0u, 0u}};
    if (!(rate > 0.0)) return 0.0;
    if (rate < 10.0) {
        double limit = exp(-rate), prod = 1.0, k = 0.0;
        for (;;) {
            prod *= tl_stream_u01(&s);
            if (prod <= limit) return k;
            k += 1.0;
        }
    }
    double slam = sqrt(rate), loglam = log(rate);
    double b = 0.931 + 2.53 * slam;
    double a = -0.059 + 0.02483 * b;
    double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    double vr = 0.9277 - 3.6224 / (b - 2.0);
    for (;;) {
        double u = tl_stream_u01(&s) - 0.5;
        double v = tl_stream_u01(&s);
        double us = 0.5 - fabs(u);
        double k = floor((2.0 * a / us + b) * u + rate + 0.43);
        if (us >= 0.07 && v <= vr) return k;
        if (k < 0.0 || (us < 0.013 && v > us)) continue;
        if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= -rate + k * loglam - tl_log_factorial(k))
            return k;
    }
}

/* (the second parameter array is unused: Poisson has one, and the per-element samplers share
 * one signature, so random.pyx runs them all through one loop) */
static void tl_rnd_poisson(const uint32_t key[2], uint64_t base, const double* rate,
                           const double* unused, double* out, int64_t e0, int64_t e1) {
    (void)unused;
    for (int64_t e = e0; e < e1; e++) out[e] = tl_rnd_poisson_one(key, base + (uint64_t)e, rate[e]);
}

/* ---- binomial ----------------------------------------------------------------------------- */
/* By the smaller of p and 1 - p (q; the count is flipped back for p > 1/2).  n q < 10:
 * inversion, walking up P(k) = P(k - 1) ((n + 1) / k - 1) q / (1 - q) until the uniform is
 * used up (about n q + 1 steps).  n q >= 10: Hormann's BTRS ("The generation of binomial random
 * variates", 1993): transformed rejection with a squeeze, about 1.15 pairs of draws per value,
 * accepted by the log-probability ratio in Hormann's grouping -- Stirling's main terms as logs
 * of ratios of nearby numbers plus the Stirling tails -- which stays accurate for counts of
 * 1e15 and more, where differences of log-factorials of that size lose every digit.
 * Counts beyond 2^53 (no longer whole numbers in a double) take the normal limit.
 * PyTorch's edge rules: a count <= 0 or a probability <= 0 gives 0, a probability >= 1 the
 * count; a NaN probability or a count that is NaN or infinite (with 0 < p < 1) gives NaN.  Both
 * loops are bounded (NaN where the bound is reached: it is not, for finite parameters). */
#define TL_BINOMIAL_INVERSION_BELOW 10.0
#define TL_BINOMIAL_MAX_STEPS 4096

/* log k! - ((k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2): Stirling's series' tail */
static double tl_stirling_tail(double k) {
    if (k < 10.0)
        return tl_log_factorial(k) - ((k + 0.5) * log(k + 1.0) - (k + 1.0) + 0.91893853320467274178);
    double x = k + 1.0, x2 = 1.0 / (x * x);
    return (1.0 / 12.0 - x2 * (1.0 / 360.0 - x2 * (1.0 / 1260.0 - x2 / 1680.0))) / x;
}

static double tl_rnd_binomial_one(const uint32_t key[2], uint64_t block, double n, double p) {
    if (n <= 0.0 || p <= 0.0) return 0.0;
    if (p >= 1.0) return n;
    if (!(n < INFINITY) || p != p) return NAN;                /* NaN or infinite count, NaN p */
    int flip = p > 0.5;
    double q = flip ? 1.0 - p : p;
    tl_rnd_stream s = {key, block, 0u, {0u, 0u, 0u, 0u}};
    double k = NAN;
    if (n > 9007199254740992.0) {
        /* beyond 2^53 counts are no longer whole numbers in a double: the normal limit, whose
         * error (skewness ~ 1 / sqrt(n q)) is far below the spacing of the representable
         * counts there */
        double u1 = tl_stream_u01(&s), u2 = tl_stream_u01(&s);
        double z = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
        k = floor(n * q + 0.5 + sqrt(n * q * (1.0 - q)) * z);
        k = k < 0.0 ? 0.0 : (k > n ? n : k);
    } else if (n * q < TL_BINOMIAL_INVERSION_BELOW) {
        double ratio = q / (1.0 - q), a = (n + 1.0) * ratio;
        double r = exp(n * log1p(-q));                       /* P(0) = (1 - q)^n */
        double u = tl_stream_u01(&s);
        k = 0.0;
        for (int step = 0; u > r && k < n; step++) {
            if (step == TL_BINOMIAL_MAX_STEPS) return NAN;
            u -= r;
            k += 1.0;
            r *= a / k - ratio;                              /* P(k) from P(k - 1) */
        }
    } else {
        double spq = sqrt(n * q * (1.0 - q));
        double b = 1.15 + 2.53 * spq;
        double a = -0.0873 + 0.0248 * b + 0.01 * q;
        double c = n * q + 0.5;
        double v_r = 0.92 - 4.2 / b;
        double alpha = (2.83 + 5.1 / b) * spq;
        double r = q / (1.0 - q);
        double m = floor((n + 1.0) * q);
        /* the parts of the bound that do not depend on k */
        double fixed = (m + 0.5) * log((m + 1.0) / (r * (n - m + 1.0)))
                       + tl_stirling_tail(m) + tl_stirling_tail(n - m);
        int step;
        for (step = 0; step < TL_BINOMIAL_MAX_STEPS; step++) {
            double u = tl_stream_u01(&s) - 0.5;
            double v = tl_stream_u01(&s);
            double us = 0.5 - fabs(u);
            k = floor((2.0 * a / us + b) * u + c);
            if (k < 0.0 || k > n) continue;
            if (us >= 0.07 && v <= v_r) break;
            /* log f(k) / f(m) bounds log(v alpha / (a / us^2 + b)), in Hormann's grouping */
            double bound = fixed + (n + 1.0) * log1p((k - m) / (n - k + 1.0))
                           + (k + 0.5) * log(r * (n - k + 1.0) / (k + 1.0))
                           - tl_stirling_tail(k) - tl_stirling_tail(n - k);
            if (log(v * alpha / (a / (us * us) + b)) <= bound) break;
        }
        if (step == TL_BINOMIAL_MAX_STEPS) return NAN;
    }
    return flip ? n - k : k;
}

static void tl_rnd_binomial(const uint32_t key[2], uint64_t base, const double* count,
                            const double* prob, double* out, int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; e++)
        out[e] = tl_rnd_binomial_one(key, base + (uint64_t)e, count[e], prob[e]);
}

/* ---- randperm ----------------------------------------------------------------------------- */
/* Inside-out Fisher-Yates.  On entry p[i] holds draw i, uniform on [0, i] (computed in
 * parallel beforehand); step i moves the element at the drawn slot to the end and puts i in
 * its place.  Serial: each step reads what earlier steps wrote. */
static void tl_rnd_shuffle(int64_t* p, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int64_t j = p[i];
        p[i] = p[j];
        p[j] = i;
    }
}

/* ---- multinomial, one row at a time ------------------------------------------------------ */
/* 0 if the weights are finite and >= 0 with a positive sum, 1 for a bad value, 2 for a zero
 * sum; *positive counts the categories with weight > 0. */
static int tl_rnd_check_weights(const double* w, int64_t n, int64_t* positive) {
    double sum = 0.0;
    int64_t pos = 0;
    for (int64_t j = 0; j < n; j++) {
        double x = w[j];
        if (!(x >= 0.0) || x == INFINITY) return 1;
        sum += x;
        pos += x > 0.0;
    }
    *positive = pos;
    return sum > 0.0 ? 0 : 2;
}

/* With replacement: inverse CDF.  w becomes the running sums; sample s is the first category
 * whose running sum exceeds u[s] * total (zero-weight categories are never picked). */
static void tl_rnd_multinomial_replace(double* w, int64_t n, const double* u, int64_t k, int64_t* out) {
    double acc = 0.0;
    int64_t last = 0;
    for (int64_t j = 0; j < n; j++) {
        if (w[j] > 0.0) last = j;
        acc += w[j];
        w[j] = acc;
    }
    for (int64_t s = 0; s < k; s++) {
        double x = u[s] * acc;
        int64_t lo = 0, hi = n;                    /* first j with w[j] > x, in [lo, hi] */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (w[mid] > x) hi = mid; else lo = mid + 1;
        }
        out[s] = lo < n ? lo : last;               /* x rounded up to the total: the last one */
    }
}

/* Without replacement: the k largest keys w[j] / E[j] with E exponential (the "exponential
 * race"; equivalent to drawing one at a time, each time in proportion to the weights left).
 * Ties (zero weights) go to the smaller index; out lists the winners largest key first. */
TL_INLINE int tl_rnd_beats(const double* key, int64_t a, int64_t b) {
    return key[a] > key[b] || (key[a] == key[b] && a < b);
}

static void tl_rnd_sift_down(const double* key, int64_t* heap, int64_t size, int64_t i) {
    for (;;) {                                     /* min-heap: the root is the weakest */
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < size && tl_rnd_beats(key, heap[m], heap[l])) m = l;
        if (r < size && tl_rnd_beats(key, heap[m], heap[r])) m = r;
        if (m == i) return;
        int64_t t = heap[i]; heap[i] = heap[m]; heap[m] = t;
        i = m;
    }
}

static void tl_rnd_multinomial_no_replace(double* key, int64_t n, const double* expo, int64_t k,
                                          int64_t* out) {
    for (int64_t j = 0; j < n; j++) key[j] = key[j] / expo[j];
    for (int64_t j = 0; j < k; j++) out[j] = j;
    for (int64_t i = k / 2 - 1; i >= 0; i--) tl_rnd_sift_down(key, out, k, i);
    for (int64_t j = k; j < n; j++) {
        if (tl_rnd_beats(key, j, out[0])) {
            out[0] = j;
            tl_rnd_sift_down(key, out, k, 0);
        }
    }
    for (int64_t size = k; size > 1; size--) {     /* heap sort: weakest to the back */
        int64_t t = out[0]; out[0] = out[size - 1]; out[size - 1] = t;
        tl_rnd_sift_down(key, out, size - 1, 0);
    }
}

#endif
