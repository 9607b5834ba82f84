/* Arithmetic that turns Philox words into numbers: uniform floats, a vectorisable float32
 * log and sin/cos for Box-Muller, a 64x64->128-bit multiply for unbiased bounded integers,
 * and log(k!) for the Poisson sampler.  Everything here is branch-free arithmetic on its
 * arguments (no library calls), so loops around it vectorise at every ISA level. */
#ifndef TL_RANDOM_MATH_H
#define TL_RANDOM_MATH_H
#include <math.h>
#include <stdint.h>
#include "types.h"

/* ---- uniforms ---------------------------------------------------------------------------- */
/* [0, 1) with `bits` random bits (24 for float32, 11 for float16, 8 for bfloat16, so that the
 * value is exact in the target type and never rounds up to 1). */
TL_INLINE float tl_u01f(uint32_t w, int bits, float scale) {
    return (float)(int32_t)(w >> (32 - bits)) * scale;
}

/* (0, 1) open at both ends: an odd multiple of 2^-24, exact in float32 (for log and tan). */
TL_INLINE float tl_u01f_open(uint32_t w) {
    return (float)(int32_t)((w >> 8) | 1u) * 0x1p-24f;
}

TL_INLINE uint64_t tl_u64_of(uint32_t lo, uint32_t hi) { return (uint64_t)lo | ((uint64_t)hi << 32); }

/* [0, 1) with 53 random bits. */
TL_INLINE double tl_u01d(uint64_t x) { return (double)(int64_t)(x >> 11) * 0x1p-53; }

/* (0, 1) open: an odd multiple of 2^-53. */
TL_INLINE double tl_u01d_open(uint64_t x) { return (double)(int64_t)((x >> 11) | 1u) * 0x1p-53; }

/* ---- polynomials ------------------------------------------------------------------------- */
/* Horner's rule: c[0] z^(n-1) + c[1] z^(n-2) + ... + c[n-1].  Every caller passes a constant
 * table and length, so the loop unrolls into the plain chain of multiply-adds. */
TL_INLINE float tl_horner_f(const float *c, int n, float z) {
    float p = c[0];
    for (int i = 1; i < n; i++) p = p * z + c[i];
    return p;
}

TL_INLINE double tl_horner_d(const double *c, int n, double z) {
    double p = c[0];
    for (int i = 1; i < n; i++) p = p * z + c[i];
    return p;
}

/* (sin, cos) of 2 pi t from sp, cp = sin and cos of the reduced angle: a rotation by qi
 * quarter turns. */
#define TL_ROTATE_QUARTERS(T, qi, sp, cp, s, c)                                                 \
    do {                                                                                       \
        const T ss_ = ((qi) & 1) ? (cp) : (sp);                                                \
        const T cc_ = ((qi) & 1) ? (sp) : (cp);                                                \
        *(s) = ((qi) & 2) ? -ss_ : ss_;                                                        \
        *(c) = (((qi) + 1) & 2) ? -cc_ : cc_;                                                  \
    } while (0)

/* ---- float32 log for x in (0, 1] --------------------------------------------------------- */
/* Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + f) by a degree-9
 * polynomial, e ln 2 added in two parts.  About 1 ulp; no special cases, since the inputs
 * are normal positive floats. */
static const float TL_LOGF_POLY[9] = {
    7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f,
    -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f};

TL_INLINE float tl_rnd_logf(float x) {
    uint32_t u = tl_f32_bits(x);
    int32_t e = (int32_t)(u >> 23) - 126;                      /* x = m 2^e, m in [1/2, 1) */
    float m = tl_bits_f32((u & 0x007fffffu) | 0x3f000000u);
    int small = m < 0.707106781186547524f;
    float f = small ? m + m - 1.0f : m - 1.0f;
    float ef = (float)(small ? e - 1 : e);
    float z = f * f;
    float y = tl_horner_f(TL_LOGF_POLY, 9, f) * f * z;
    y += -2.12194440e-4f * ef;
    y += -0.5f * z;
    return (f + y) + 0.693359375f * ef;
}

/* ---- sin and cos of 2 pi t, t in [0, 1] ------------------------------------------------- */
/* The reduction is exact: 4t is split into the nearest integer q (the quadrant) and a rest
 * in [-1/2, 1/2], so the polynomials (Cephes' sinf/cosf on [-pi/4, pi/4]) only ever see a
 * small angle and no digits of pi are lost. */
TL_INLINE void tl_rnd_sincos_turns(float t, float* s, float* c) {
    float y = t * 4.0f;
    float q = (y + 12582912.0f) - 12582912.0f;                 /* round to nearest */
    float a = (y - q) * 1.57079632679489662f;
    float z = a * a;
    float sp = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * a + a;
    float cp = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z
               - 0.5f * z + 1.0f;
    TL_ROTATE_QUARTERS(float, (int32_t)q & 3, sp, cp, s, c);
}

/* ---- float64 log for x in (0, 1] and sin/cos of 2 pi t ---------------------------------- */
/* log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1),
 * |s| < 0.172, by its Taylor series to s^23 (truncation below 1e-18); about 1 ulp. */
static const double TL_LOG_ATANH_POLY[11] = {
    1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5,
    1.0 / 3};

TL_INLINE double tl_rnd_log(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    int64_t e = (int64_t)(u >> 52) - 1022;                     /* x = m 2^e, m in [1/2, 1) */
    uint64_t mb = (u & 0x000fffffffffffffull) | 0x3fe0000000000000ull;
    double m;
    memcpy(&m, &mb, 8);
    int small = m < 0.70710678118654752440;
    m = small ? m + m : m;
    double ef = (double)(small ? e - 1 : e);
    double s = (m - 1.0) / (m + 1.0), z = s * s;
    double p = tl_horner_d(TL_LOG_ATANH_POLY, 11, z);
    return (2.0 * s + 2.0 * s * z * p) + ef * 0.693147180559945309417232;
}

/* sin and cos of 2 pi t for t in [0, 1]: the exact quadrant split of tl_rnd_sincos_turns,
 * then Taylor series on [-pi/4, pi/4] (to a^17 and a^18: truncation below 1e-17). */
/* sin a = a + a z (-1/3! + z (1/5! - ...)), cos a = 1 - z (1/2! - z (1/4! - ...)), z = a^2;
 * the coefficients from the highest power down. */
static const double TL_SIN_TAYLOR[8] = {
    1.0 / 355687428096000.0, -1.0 / 1307674368000.0, 1.0 / 6227020800.0, -1.0 / 39916800.0,
    1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0, -1.0 / 6.0};
static const double TL_COS_TAYLOR[9] = {
    1.0 / 6402373705728000.0, -1.0 / 20922789888000.0, 1.0 / 87178291200.0, -1.0 / 479001600.0,
    1.0 / 3628800.0, -1.0 / 40320.0, 1.0 / 720.0, -1.0 / 24.0, 0.5};

TL_INLINE void tl_rnd_sincos_turns_d(double t, double* s, double* c) {
    double y = t * 4.0;
    double q = (y + 6755399441055744.0) - 6755399441055744.0;  /* round to nearest */
    double a = (y - q) * 1.57079632679489661923;
    double z = a * a;
    double sp = tl_horner_d(TL_SIN_TAYLOR, 8, z) * z * a + a;
    double cp = 1.0 - tl_horner_d(TL_COS_TAYLOR, 9, z) * z;
    TL_ROTATE_QUARTERS(double, (int64_t)q & 3, sp, cp, s, c);
}

/* ---- 64 x 64 -> 128-bit multiply, for bounded 64-bit integers ---------------------------- */
TL_INLINE uint64_t tl_mul64_hi(uint64_t a, uint64_t b, uint64_t* lo) {
#if defined(__SIZEOF_INT128__)
    unsigned __int128 m = (unsigned __int128)a * b;
    *lo = (uint64_t)m;
    return (uint64_t)(m >> 64);
#else
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    *lo = (mid << 32) | (uint32_t)p00;
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

/* ---- log(k!) for the Poisson sampler ----------------------------------------------------- */
/* Exact sums of logs below 10, Stirling's series (error below 1e-12) from there on. */
TL_INLINE double tl_log_factorial(double k) {
    if (k < 10.0) {
        double s = 0.0;
        for (double j = 2.0; j <= k; j += 1.0) s += log(j);
        return s;
    }
    double x = k + 1.0, x2 = 1.0 / (x * x);
    return (x - 0.5) * log(x) - x + 0.91893853320467274178
           + (1.0 / 12.0 - x2 * (1.0 / 360.0 - x2 * (1.0 / 1260.0 - x2 / 1680.0))) / x;
}

#endif
