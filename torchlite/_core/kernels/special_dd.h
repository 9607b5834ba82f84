/* Double-double arithmetic and exactly reduced trigonometry for the special functions
 * (special_*.h).
 *
 * A tl_dd is an unevaluated sum hi + lo with |lo| <= ulp(hi) / 2: about 106 bits.  The
 * special functions use it where a series cancels (J0 at x = 20 sums terms of size 1e9 to a
 * result of size 0.1) or where an argument must be known beyond double precision (x*x in
 * exp(x*x), the phase of an oscillating asymptotic form).
 *
 * The exact product needs either a fused multiply-add or Veltkamp's splitting; the split is
 * only exact when the compiler does not contract a*b+c into an FMA, which it can only do
 * when the target has one, so the FMA is used exactly when the target has it. */
#ifndef TL_SPECIAL_DD_H
#define TL_SPECIAL_DD_H
#include <math.h>
#include <stdint.h>

typedef struct { double hi, lo; } tl_dd;

#define TL_SP_PI 3.141592653589793
#define TL_SP_PI_LO 1.2246467991473532e-16
#define TL_SP_SQRT1_2 0.7071067811865476         /* 1/sqrt(2) = hi + lo */
#define TL_SP_SQRT1_2_LO (-4.833646656726457e-17)
#define TL_SP_2_SQRTPI 1.1283791670955126        /* 2/sqrt(pi) */
#define TL_SP_1_SQRTPI 0.5641895835477563        /* 1/sqrt(pi) */
#define TL_SP_SQRT2 1.4142135623730951
#define TL_SP_SQRT2PI 2.5066282746310002         /* sqrt(2 pi) */
#define TL_SP_HALF_LOG_2PI 0.9189385332046728    /* log(2 pi) / 2 */
#define TL_SP_EULER 0.5772156649015329           /* Euler's gamma = hi + lo */
#define TL_SP_EULER_LO (-4.942915152430645e-18)

static inline tl_dd tl_dd_make(double hi, double lo) { tl_dd r; r.hi = hi; r.lo = lo; return r; }

/* s + e = a + b exactly (Knuth) */
static inline tl_dd tl_two_sum(double a, double b) {
    double s = a + b, bb = s - a;
    return tl_dd_make(s, (a - (s - bb)) + (b - bb));
}

/* the same when |a| >= |b| (Dekker) */
static inline tl_dd tl_fast_two_sum(double a, double b) {
    double s = a + b;
    return tl_dd_make(s, b - (s - a));
}

#if defined(__FMA__) || defined(__aarch64__) || defined(_M_ARM64) || defined(__FP_FAST_FMA)
static inline tl_dd tl_two_prod(double a, double b) {
    double p = a * b;
    return tl_dd_make(p, fma(a, b, -p));
}
#else
static inline void tl_split(double a, double* hi, double* lo) {
    double t = 134217729.0 * a;             /* 2^27 + 1 */
    *hi = t - (t - a);
    *lo = a - *hi;
}
/* p + e = a * b exactly, for |a|, |b| below 2^996 (the split's scaling) */
static inline tl_dd tl_two_prod(double a, double b) {
    double p = a * b, ah, al, bh, bl;
    tl_split(a, &ah, &al);
    tl_split(b, &bh, &bl);
    return tl_dd_make(p, ((ah * bh - p) + ah * bl + al * bh) + al * bl);
}
#endif

static inline tl_dd tl_dd_add(tl_dd a, tl_dd b) {
    tl_dd s = tl_two_sum(a.hi, b.hi), t = tl_two_sum(a.lo, b.lo);
    s.lo += t.hi;
    s = tl_fast_two_sum(s.hi, s.lo);
    s.lo += t.lo;
    return tl_fast_two_sum(s.hi, s.lo);
}

static inline tl_dd tl_dd_add_d(tl_dd a, double b) {
    tl_dd s = tl_two_sum(a.hi, b);
    s.lo += a.lo;
    return tl_fast_two_sum(s.hi, s.lo);
}

static inline tl_dd tl_dd_neg(tl_dd a) { return tl_dd_make(-a.hi, -a.lo); }

static inline tl_dd tl_dd_mul(tl_dd a, tl_dd b) {
    tl_dd p = tl_two_prod(a.hi, b.hi);
    p.lo += a.hi * b.lo + a.lo * b.hi;
    return tl_fast_two_sum(p.hi, p.lo);
}

static inline tl_dd tl_dd_mul_d(tl_dd a, double b) {
    tl_dd p = tl_two_prod(a.hi, b);
    p.lo += a.lo * b;
    return tl_fast_two_sum(p.hi, p.lo);
}

static inline tl_dd tl_dd_div_d(tl_dd a, double b) {
    double q = a.hi / b;
    tl_dd p = tl_two_prod(q, b);
    double r = ((a.hi - p.hi) - p.lo + a.lo) / b;
    return tl_fast_two_sum(q, r);
}

static inline double tl_dd_to_d(tl_dd a) { return a.hi + a.lo; }

/* sqrt(a) as a double-double */
static inline tl_dd tl_dd_sqrt_d(double a) {
    double s = sqrt(a);
    tl_dd sq = tl_two_prod(s, s);
    return tl_fast_two_sum(s, ((a - sq.hi) - sq.lo) / (2.0 * s));
}

/* exp(x*x), with the rounding error of the square folded back in: exp(hi + lo) is
 * exp(hi) (1 + lo) to double precision since |lo| <= ulp(hi) / 2 */
static inline double tl_exp_x2(double x) {
    if (fabs(x) > 26.7) return isnan(x) ? x : INFINITY;
    tl_dd s = tl_two_prod(x, x);
    double e = exp(s.hi);
    return isinf(e) ? e : e + e * s.lo;
}

/* exp(-x*x) likewise */
static inline double tl_exp_mx2(double x) {
    if (fabs(x) > 27.3) return isnan(x) ? x : 0.0;
    tl_dd s = tl_two_prod(x, x);
    double e = exp(-s.hi);
    return e - e * s.lo;
}

/* sin(pi x), exact in the argument: the period is removed before multiplying by pi, so
 * sin(pi x) is 0 at every integer and accurate near each (sin(M_PI * x) is not).  The reduced
 * argument r is folded into [0, 1/4] (1/2 - r is exact), where neither sin nor cos of pi r
 * magnifies the rounding of pi r. */
static inline double tl_sinpi(double x) {
    if (fabs(x) >= 4503599627370496.0) return isfinite(x) ? copysign(0.0, x) : NAN;
    double n = nearbyint(x), r = x - n, a = fabs(r);        /* r in [-1/2, 1/2] */
    double s = a <= 0.25 ? sin(TL_SP_PI * a) : cos(TL_SP_PI * (0.5 - a));
    if (r < 0) s = -s;
    return fmod(n, 2.0) != 0.0 ? -s : s;
}

/* cos(pi x) likewise */
static inline double tl_cospi(double x) {
    if (fabs(x) >= 4503599627370496.0) return isfinite(x) ? 1.0 : NAN;
    double n = nearbyint(x), a = fabs(x - n);
    double c = a <= 0.25 ? cos(TL_SP_PI * a) : sin(TL_SP_PI * (0.5 - a));
    return fmod(n, 2.0) != 0.0 ? -c : c;
}

/* cot(pi x) likewise (infinite at the integers) */
static inline double tl_cotpi(double x) {
    double r = x - nearbyint(x), a = fabs(r);
    if (a == 0.0) return copysign(INFINITY, x);
    double c = a <= 0.25 ? 1.0 / tan(TL_SP_PI * a) : tan(TL_SP_PI * (0.5 - a));
    return r < 0 ? -c : c;
}

#endif
