/* Vectorisable float32 math.  glibc's expf is scalar unless built with -ffast-math, and
 * the compiler cannot vectorise a loop around a library call; these inline versions use
 * only arithmetic, comparisons and bit moves so the loops in ewise_body.h vectorise at
 * every ISA level.  Accuracy: about 1 ulp (Cephes' minimax coefficients). */
#ifndef TL_VMATH_H
#define TL_VMATH_H
#include <string.h>
#include "types.h"
#include "random_math.h"      /* tl_rnd_expf, tl_rnd_pow2i */

/* exp: Cephes' expf, one source with the GPU's samplers (cuda_kernels/tl_random_math.cuh,
 * through random_math.h) */
#define tl_pow2i tl_rnd_pow2i
TL_INLINE float tl_expf(float x) { return tl_rnd_expf(x); }

TL_INLINE float tl_logf(float x) {
    /* x = m * 2^e with m in [sqrt(1/2), sqrt(2)), then log(m) by a degree-9 polynomial in m-1.
     * Subnormals are scaled by 2^23 first; x < 0 and NaN give NaN, 0 gives -inf, inf gives inf. */
    float xs = x < 1.17549435e-38f ? x * 8388608.0f : x;
    int32_t ebias = x < 1.17549435e-38f ? -23 : 0;
    uint32_t b = tl_f32_bits(xs);
    int32_t e = (int32_t)((b >> 23) & 0xffu) - 126 + ebias;
    float m = tl_bits_f32((b & 0x807fffffu) | 0x3f000000u);          /* [0.5, 1) */
    int32_t lo = m < 0.707106781186547524f;
    e -= lo;
    m = lo ? m + m - 1.0f : m - 1.0f;
    float z = m * m;
    float y = 7.0376836292e-2f;
    y = y * m - 1.1514610310e-1f;
    y = y * m + 1.1676998740e-1f;
    y = y * m - 1.2420140846e-1f;
    y = y * m + 1.4249322787e-1f;
    y = y * m - 1.6668057665e-1f;
    y = y * m + 2.0000714765e-1f;
    y = y * m - 2.4999993993e-1f;
    y = y * m + 3.3333331174e-1f;
    y = y * m * z;
    float fe = (float)e;
    y = y + fe * -2.12194440e-4f;
    y = y - 0.5f * z;
    float r = m + y + fe * 0.693359375f;
    r = x == 0.0f ? -INFINITY : r;
    r = x == INFINITY ? INFINITY : r;
    return (x < 0.0f || x != x) ? NAN : r;
}

TL_INLINE float tl_sigmoidf(float x) { return 1.0f / (1.0f + tl_expf(-x)); }

TL_INLINE float tl_tanhf(float x) {
    /* |x| < 0.625: an odd polynomial (no cancellation near 0); else 1 - 2 / (e^{2|x|} + 1),
     * which saturates to exactly +-1 and keeps NaN.  Both are computed and one is selected,
     * so the loop stays branch-free and vectorises. */
    float ax = x < 0.0f ? -x : x;
    float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = x + x * z * p;
    float big = 1.0f - 2.0f / (tl_expf(2.0f * ax) + 1.0f);
    big = x < 0.0f ? -big : big;
    return ax < 0.625f ? small : big;
}

TL_INLINE float tl_erff(float x) {
    /* |x| < 1: x + x P(x^2), P approximating erf(x)/x - 1 (0.128 down to -0.157, so P's
     * rounding errors are small next to erf, and x + x P is one rounding where FMA contracts
     * it); 1 <= |x| < 3.95: 1 - e^{-x^2} Q(1/|x|), where Q(u) approximates erfc(x) e^{x^2}
     * (smooth in u = 1/x); beyond, erf rounds to +-1 in float32.  P runs in powers of
     * x^2 - 1/2 and Q in powers of 1/|x| - 5/8, so that no Horner step cancels.  Near |x| = 1
     * the rounding of t = x^2 would still cost up to 0.16 ulp through e^{-x^2}: |x| = hi + lo
     * with hi its top 12 bits (hi^2 exact) gives d = x^2 - t, and e^{-x^2} = e^{-t} (1 - d).
     * P and Q are least-squares fits at 3000 Chebyshev nodes (degree 6 in x^2, 7 in 1/|x|) to
     * erf computed with mpmath, weighted to erf's error, their float coefficients rounded one
     * at a time from the constant term up with the rest refitted.  Measured over every float32
     * (both signs) against double-precision erf: at most 0.98 ulp without FMA (0.93 below 1),
     * 0.88 with it (AVX2, AVX-512; 0.80 below 1). */
    float ax = x < 0.0f ? -x : x;
    float s = x * x - 0.5f;                       /* exact for x^2 in [0.25, 1] */
    float p = 7.896958414e-05f;
    p = p * s - 5.655877176e-04f;
    p = p * s + 3.480119165e-03f;
    p = p * s - 1.828329451e-02f;
    p = p * s + 7.941000164e-02f;
    p = p * s - 2.810721993e-01f;
    p = p * s - 3.453126177e-02f;
    float small = x + x * p;
    float a = ax < 1.0f ? 1.0f : ax;              /* keeps the unused branch finite */
    float w = 1.0f / a - 0.625f;                  /* Q in powers of 1/|x| - 0.625: no cancellation */
    float q = -1.817424037e-02f;
    q = q * w + 4.131701589e-02f;
    q = q * w - 4.721099511e-02f;
    q = q * w + 2.344722487e-02f;
    q = q * w + 4.376352206e-02f;
    q = q * w - 1.723962277e-01f;
    q = q * w + 3.822838366e-01f;
    q = q * w + 3.059529960e-01f;
    float hi = tl_bits_f32(tl_f32_bits(a) & 0xfffff000u), lo = a - hi;  /* 12 + 12 bits */
    float t = a * a;
    float d = (hi * hi - t) + lo * (a + hi);                /* a^2 - t: t's rounding error */
    q = q - q * d;                                          /* e^{-a^2} = e^{-t} (1 - d) */
    float big = 1.0f - tl_expf(-t) * q;
    big = ax > 3.95f ? 1.0f : big;
    big = x < 0.0f ? -big : big;
    return ax < 1.0f ? small : big;
}

/* GELU's Phi(x) in float32, from one exponential: Phi = erfc(z)/2 for x < 0 and 1 - erfc(z)/2
 * for x >= 0, z = |x|/sqrt(2), with erfc(z) = t e^{-z^2} Q(t - c), t = 1/(1 + p z): Q a degree-9
 * polynomial fitted by weighted least squares to erfc(z) e^{z^2} / t over z in [0, 9.5]
 * (relative error 1e-8 in double; p, c as in the fit).  *ez gets e^{-z^2} = e^{-x^2/2}, the
 * normal density's exponential, which GELU's gradient reuses.  Against 0.5 x (1 + erf(x/sqrt2))
 * (PyTorch's formula, and float64's here): one exponential instead of erf's exponential and
 * both of its branches, and no cancellation of 1 + erf in the negative tail.  GELU from it is
 * within 7 ulp for |x| < 1, 2 ulp for x > 1, 14 ulp on [-3, -1], 29 on [-5, -3] and 1.3e-5
 * relative below -5 (the rounding of z^2 in the exponent), where 0.5 x (1 + erf) in float32
 * has lost every digit (tests/test_activation_kernels.py). */
TL_INLINE float tl_gelu_cdff(float x, float *ez) {
    float z = (x < 0.0f ? -x : x) * 0.70710678f;
    float t = 1.0f / (1.0f + 0.3275911f * z);
    float s = t - 0.6215919f;
    float q = 0.057077173f;
    q = q * s - 0.00031593148f;
    q = q * s - 0.16145895f;
    q = q * s - 0.117756076f;
    q = q * s + 0.3038282f;
    q = q * s + 0.88411885f;
    q = q * s + 1.2323095f;
    q = q * s + 1.1664006f;
    q = q * s + 0.81816304f;
    q = q * s + 0.43663812f;
    float e = tl_expf(-(z * z));
    *ez = e;
    float h = 0.5f * t * e * q;
    return x >= 0.0f ? 1.0f - h : h;
}

TL_INLINE float tl_geluf(float x) {
    float e;
    return x * tl_gelu_cdff(x, &e);
}

/* g * gelu'(x) = g (Phi(x) + x phi(x)), phi = e^{-x^2/2} / sqrt(2 pi) */
TL_INLINE float tl_gelu_backwardf(float g, float x) {
    float e;
    float c = tl_gelu_cdff(x, &e);
    return g * (c + x * (e * 0.39894228f));
}

/* ---- float32 functions computed in double ---------------------------------------------------
 * sin, cos, tan, atan, log1p, expm1 and pow of float32 values: the argument reduction and a
 * short polynomial run in double (vectorised at half the float width), which leaves far
 * more than float32's 24 bits, so the result is the correctly rounded one nearly always and
 * within 1 ulp always.  Each fast form is valid on a stated domain; the loops that use them
 * (TL_UNARY_FIX/TL_BINARY_FIX in ewise_body.h) send the few elements outside it (huge
 * arguments, NaN, inf, the special cases of pow) to the C library instead. */

/* round to the nearest integer by the 1.5 * 2^52 trick: no conversion instruction, so it
 * vectorises at every ISA level; valid for |x| < 2^51 */
#define TL_RND_MAGIC 6755399441055744.0
#define TL_RND_MAGIC_BITS 0x4338000000000000LL
TL_INLINE double tl_rint_d(double x) { return (x + TL_RND_MAGIC) - TL_RND_MAGIC; }
/* the integer-valued double k as an int64, read from the bits of k + 1.5 * 2^52 (AVX2 has no
 * packed double -> int64 conversion; this is an add and a subtract on every ISA) */
TL_INLINE int64_t tl_int_of_d(double k) {
    double t = k + TL_RND_MAGIC; int64_t b; memcpy(&b, &t, 8); return b - TL_RND_MAGIC_BITS;
}
TL_INLINE double tl_d_of_int(int64_t i) {       /* the reverse, for |i| < 2^51 */
    int64_t b = i + TL_RND_MAGIC_BITS; double t; memcpy(&t, &b, 8); return t - TL_RND_MAGIC;
}

TL_INLINE double tl_pow2_d(double k) {          /* 2^k for integer-valued k in [-1022, 1023] */
    uint64_t b = (uint64_t)(tl_int_of_d(k) + 1023) << 52;
    double r; memcpy(&r, &b, 8); return r;
}

/* e^x for |x| <= 200 (callers clamp): x = k ln2 + r, |r| <= ln2/2, Taylor to r^10
 * (relative error below 2e-13: far below float32's 6e-8, which is all its callers need). */
TL_INLINE double tl_exp_d(double x) {
    double k = tl_rint_d(x * 1.4426950408889634);
    double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
    double p = 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return p * tl_pow2_d(k);
}

/* log x for a positive normal double x: x = m 2^e, m in [sqrt(1/2), sqrt(2)), log m =
 * 2 atanh(s) with s = (m - 1) / (m + 1), |s| <= 0.1716, by its odd series to s^13
 * (relative error below 1e-12, for float32 results). */
TL_INLINE double tl_log_d(double x) {
    uint64_t b; memcpy(&b, &x, 8);
    int64_t e = (int64_t)((b >> 52) & 0x7ff) - 1022;
    uint64_t mb = (b & 0x800fffffffffffffULL) | 0x3fe0000000000000ULL;      /* [0.5, 1) */
    double m; memcpy(&m, &mb, 8);
    int64_t lo = m < 0.70710678118654752440;
    e -= lo;
    m = lo ? m + m : m;
    double sv = (m - 1.0) / (m + 1.0), z = sv * sv;
    double p = 1.0 / 13.0;
    p = p * z + 1.0 / 11.0;
    p = p * z + 1.0 / 9.0;
    p = p * z + 1.0 / 7.0;
    p = p * z + 1.0 / 5.0;
    p = p * z + 1.0 / 3.0;
    p = p * z + 1.0;
    return tl_d_of_int(e) * 0.69314718055994530942 + 2.0 * sv * p;
}

/* sin and cos of r in [-pi/4, pi/4] (Taylor to r^15 / r^16) */
TL_INLINE double tl_sin_kernel(double r) {
    double z = r * r, p = -1.0 / 1307674368000.0;
    p = p * z + 1.0 / 6227020800.0;
    p = p * z - 1.0 / 39916800.0;
    p = p * z + 1.0 / 362880.0;
    p = p * z - 1.0 / 5040.0;
    p = p * z + 1.0 / 120.0;
    p = p * z - 1.0 / 6.0;
    return r + r * z * p;
}
TL_INLINE double tl_cos_kernel(double r) {
    double z = r * r, p = 1.0 / 20922789888000.0;
    p = p * z - 1.0 / 87178291200.0;
    p = p * z + 1.0 / 479001600.0;
    p = p * z - 1.0 / 3628800.0;
    p = p * z + 1.0 / 40320.0;
    p = p * z - 1.0 / 720.0;
    p = p * z + 1.0 / 24.0;
    p = p * z - 0.5;
    return 1.0 + z * p;
}

/* x = k pi/2 + r by Cody-Waite with fdlibm's 33-bit head of pi/2 (k * head is exact for
 * |k| < 2^20); *q gets k mod 4.  Valid for |x| < 2^20 (tl_trig_bad flags the rest). */
TL_INLINE double tl_reduce_pio2(float x, int64_t *q) {
    double xd = (double)x;
    double k = tl_rint_d(xd * 0.63661977236758134308);
    *q = tl_int_of_d(k) & 3;
    return (xd - k * 1.57079632673412561417e+00) - k * 6.07710050650619224932e-11;
}
TL_INLINE int tl_trig_bad(float x) { return !(x > -1048576.0f && x < 1048576.0f); }

TL_INLINE float tl_sinf_fast(float x) {
    int64_t q; double r = tl_reduce_pio2(x, &q);
    double sv = tl_sin_kernel(r), cv = tl_cos_kernel(r);
    double v = (q & 1) ? cv : sv;
    return (float)((q & 2) ? -v : v);
}
TL_INLINE float tl_cosf_fast(float x) {
    int64_t q; double r = tl_reduce_pio2(x, &q);
    double sv = tl_sin_kernel(r), cv = tl_cos_kernel(r);
    double v = (q & 1) ? sv : cv;
    return (float)(((q + 1) & 2) ? -v : v);
}
TL_INLINE float tl_tanf_fast(float x) {
    int64_t q; double r = tl_reduce_pio2(x, &q);
    double sv = tl_sin_kernel(r), cv = tl_cos_kernel(r);
    return (float)((q & 1) ? -cv / sv : sv / cv);
}

/* atan in double: |x| > 1 through pi/2 - atan(1/|x|), then t > tan(pi/8) through
 * pi/4 + atan((t - 1)/(t + 1)), leaving |u| <= 0.4143 for the odd series to u^25.
 * Exact for every float32 (inf gives pi/2, NaN stays NaN). */
TL_INLINE float tl_atanf_fast(float x) {
    double ax = fabs((double)x);
    int big = ax > 1.0;
    double t = big ? 1.0 / ax : ax;
    int mid = t > 0.41421356237309504880;
    double u = mid ? (t - 1.0) / (t + 1.0) : t;
    double z = u * u, p = 1.0 / 25.0;
    p = -p * z + 1.0 / 23.0;
    p = -p * z + 1.0 / 21.0;
    p = -p * z + 1.0 / 19.0;
    p = -p * z + 1.0 / 17.0;
    p = -p * z + 1.0 / 15.0;
    p = -p * z + 1.0 / 13.0;
    p = -p * z + 1.0 / 11.0;
    p = -p * z + 1.0 / 9.0;
    p = -p * z + 1.0 / 7.0;
    p = -p * z + 1.0 / 5.0;
    p = -p * z + 1.0 / 3.0;
    p = -p * z + 1.0;
    double a = u * p + (mid ? 0.78539816339744830962 : 0.0);
    a = big ? 1.57079632679489661923 - a : a;
    return (float)(x < 0.0f ? -a : a);
}

/* log1p in float32 through Goldberg's identity log1p(x) = log(u) x / (u - 1) with u = 1 + x
 * rounded (the factor x / (u - 1) undoes u's rounding), on tl_logf; u == 1 means log1p(x)
 * rounds to x.  With d = u - 1 (exact), x / d = 1 + c, c = (x - d) / d and x - d exact, so
 * the product is log(u) + log(u) c: all in float (a float division is a quarter of the two
 * double divisions the same factor costs in double at the same vector width), c's rounding
 * scaled down by c itself.  Measured within 2 ulp (tests/test_elementwise.py).  Domain:
 * x > -1, finite. */
TL_INLINE int tl_log1pf_bad(float x) { return !(x > -1.0f && x < INFINITY); }
TL_INLINE float tl_log1pf_fast(float x) {
    float u = 1.0f + x;
    float d = u - 1.0f;
    float c = (x - d) / (d == 0.0f ? 1.0f : d);
    float lu = tl_logf(u);
    return d == 0.0f ? x : lu + lu * c;
}

/* expm1 in float, as fdlibm reduces it: x = k ln2 + r with |r| <= ln2/2 (tl_expf's
 * Cody-Waite split), e^r - 1 = r + r^2 (1/2 + r/6 + ...) by Taylor to r^8 (truncation below
 * 2^-30 relative), then expm1(x) = 2^k (e^r - 1) + (2^k - 1), both terms exact scalings or
 * exact differences for the k where they matter, so small |x| (k = 0) keeps its relative
 * accuracy.  The input is clamped to [-30, 88.72...]: float32's expm1 is -1 below -17.4 and
 * overflows above.  Measured within 2 ulp (tests/test_elementwise.py). */
TL_INLINE int tl_expm1f_bad(float x) { return x != x; }
TL_INLINE float tl_expm1f_fast(float x) {
    float xc = x > 88.72283935546875f ? 88.72283935546875f : x;
    xc = xc < -30.0f ? -30.0f : xc;
    float kf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;   /* round to int */
    float r = xc - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    float q = 2.48015873e-5f;                 /* 1/8!, then 1/7! ... 1/2 */
    q = q * r + 1.98412698e-4f;
    q = q * r + 1.38888889e-3f;
    q = q * r + 8.33333333e-3f;
    q = q * r + 4.16666667e-2f;
    q = q * r + 1.66666667e-1f;
    q = q * r + 0.5f;
    float p = r + r * r * q;
    int32_t k = (int32_t)kf;
    int32_t k1 = k >> 1;
    float t = tl_pow2i(k);                    /* 2^k for k <= 24, where the -1 counts */
    float y = t * p + (t - 1.0f);
    /* past 2^24 the -1 is below the result's ulp: e^x = (p + 1) 2^k, scaled in two steps
     * since 2^128 itself is no float */
    float y_big = ((p + 1.0f) * tl_pow2i(k1)) * tl_pow2i(k - k1);
    y = k > 24 ? y_big : y;
    y = x > 88.72283935546875f ? INFINITY : y;
    return x == 0.0f ? x : y;                 /* -0.0 stays -0.0 */
}

/* pow for finite positive x and finite |y| < 2^24: e^(y log x) in double (|y log x| clamped
 * to 200, beyond float32's range either way).  Everything else -- x <= 0 (the sign of an odd
 * integer y, NaN for a y that is no integer), inf, NaN; y inf, NaN or huge -- is the C
 * library's: leaving the negative bases out keeps the vector loop to the log and the exp
 * (the selects for their signs cost a quarter of its time; measured 2.6 -> 1.9 ns per
 * element at 1M floats). */
TL_INLINE int tl_powf_bad(float x, float y) {
    return !(x > 0.0f && x < INFINITY && y > -16777216.0f && y < 16777216.0f);
}
TL_INLINE float tl_powf_fast(float x, float y) {
    /* (no guard on x: the loop recomputes every element tl_powf_bad flags, and a garbage
     * value here is finite arithmetic on bits, never a trap) */
    double l = (double)y * tl_log_d((double)x);
    l = l > 200.0 ? 200.0 : (l < -200.0 ? -200.0 : l);
    return (float)tl_exp_d(l);
}

/* erfinv for |y| < 0.995 in float32: erfinv(y) = y P(t), with w = -log(1 - y^2) - 2.5 in
 * [-2.5, 2.125] mapped to t in [-1, 1] and P of degree 15, evaluated in double.  P is a
 * Chebyshev fit (300 nodes) to erfinv(y)/y computed with 30-digit arithmetic (mpmath), turned
 * into powers of t; its relative error is below 1e-13, so the float32 result is the correctly
 * rounded one but for about one argument in a million (then 0.5000025 ulp away).  |y| >= 0.995,
 * NaN and the ends go to the double-precision routine of ewise_scalar.h. */
TL_INLINE int tl_erfinvf_bad(float y) { return !(y > -0.995f && y < 0.995f); }
TL_INLINE float tl_erfinvf_fast(float y) {
    const double yd = (double)y;
    const double w = -tl_log_d((1.0 - yd) * (1.0 + yd)) - 2.5;
    const double t = w * 0.43243243243243246 + 0.08108108108108109;     /* (2w - lo - hi) / (hi - lo) */
    double p = -5.9280218067486685e-09;
    p = p * t + 6.651402650862264e-08;
    p = p * t - 5.807470090552214e-08;
    p = p * t - 6.948060680562466e-07;
    p = p * t + 1.943387033026901e-06;
    p = p * t + 2.5361177988539533e-06;
    p = p * t - 2.3241800623258374e-05;
    p = p * t + 2.702861438767117e-05;
    p = p * t + 0.00015708975621668285;
    p = p * t - 0.0006156210289014855;
    p = p * t - 5.327878586393199e-05;
    p = p * t + 0.006320700934558409;
    p = p * t - 0.017531689769891362;
    p = p * t - 0.018323041920428332;
    p = p * t + 0.5736592589340114;
    p = p * t + 1.4550259687457494;
    return (float)(p * yd);
}

#endif
