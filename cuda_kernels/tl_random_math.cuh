/* The arithmetic of torchlite's random numbers, one source for both devices: the Philox4x32-10
 * block, the words-to-uniform conversions, and the float32/float64 log and sin/cos of 2 pi t
 * that Box-Muller and the exponential/Cauchy transforms use.  A seed gives the same numbers on
 * the CPU and the GPU because both compile this file: the CPU kernels as C99
 * (torchlite/_core/kernels/philox.h and random_math.h include it, and vectorise the loops
 * around these functions), the CUDA kernels through NVRTC (tl_philox.cuh includes it inside
 * namespace tl::rnd), and the host tests as plain C++.
 *
 * So it is written in the common subset of C99 and C++: no references, overloads, templates,
 * bool or file-scope tables (a device function cannot read a host array; the polynomials are
 * spelled out in Horner form instead).  The includer defines first:
 *   TL_RND_FN                                  the qualifiers of a function
 *   tl_rnd_u32, tl_rnd_i32, tl_rnd_u64, tl_rnd_i64     the fixed-width integers
 *   tl_rnd_f32_bits(f), tl_rnd_bits_f32(u), tl_rnd_f64_bits(d), tl_rnd_bits_f64(u)   bit casts
 *
 * Exactness: integer arithmetic and IEEE-rounded float operations in one written order; both
 * sides compile without contracting a*b+c into one rounding (the CPU's baseline build, and
 * random.cu's --fmad=false). */
#ifndef TL_RANDOM_MATH_CUH
#define TL_RANDOM_MATH_CUH

/* ---- Philox4x32-10 (Salmon, Moraes, Dror and Shaw, SC 2011) ----------------------------- */
#define TL_PHILOX_M0 0xD2511F53u   /* round multipliers */
#define TL_PHILOX_M1 0xCD9E8D57u
#define TL_PHILOX_W0 0x9E3779B9u   /* key schedule (Weyl sequence): golden ratio, sqrt(3) - 1 */
#define TL_PHILOX_W1 0xBB67AE85u
#define TL_PHILOX_ROUNDS 10

/* The block at counter (c0, c1, c2, c3) under key (k0, k1): ten rounds, each two 32x32->64
 * products whose high halves are xored into the other words with the round key, the key
 * bumped by the Weyl constants between rounds. */
TL_RND_FN void tl_philox4x32_10(tl_rnd_u32 c0, tl_rnd_u32 c1, tl_rnd_u32 c2, tl_rnd_u32 c3,
                                tl_rnd_u32 k0, tl_rnd_u32 k1, tl_rnd_u32 out[4]) {
    for (int r = 0; r < TL_PHILOX_ROUNDS; r++) {
        const tl_rnd_u64 p0 = (tl_rnd_u64)TL_PHILOX_M0 * (tl_rnd_u64)c0;
        const tl_rnd_u64 p1 = (tl_rnd_u64)TL_PHILOX_M1 * (tl_rnd_u64)c2;
        const tl_rnd_u32 y0 = (tl_rnd_u32)(p1 >> 32) ^ c1 ^ k0;
        const tl_rnd_u32 y2 = (tl_rnd_u32)(p0 >> 32) ^ c3 ^ k1;
        c1 = (tl_rnd_u32)p1;
        c3 = (tl_rnd_u32)p0;
        c0 = y0;
        c2 = y2;
        k0 += TL_PHILOX_W0;
        k1 += TL_PHILOX_W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* torchlite's counter layout: block number `block` (64 bits) in words 0-1, the draw number
 * `draw` in word 2 (0 for a request's first draw; 1, 2, ... for the extra draws of rejection
 * sampling and per-element streams), word 3 zero. */
TL_RND_FN void tl_philox_block(const tl_rnd_u32 key[2], tl_rnd_u64 block, tl_rnd_u32 draw,
                               tl_rnd_u32 out[4]) {
    tl_philox4x32_10((tl_rnd_u32)block, (tl_rnd_u32)(block >> 32), draw, 0u, key[0], key[1], out);
}

/* ---- uniforms ----------------------------------------------------------------------------- */
/* [0, 1) with `bits` random bits (24 for float32, 11 for float16, 8 for bfloat16, so that the
 * value is exact in the target type and never rounds up to 1); scale = 2^-bits. */
TL_RND_FN float tl_u01f(tl_rnd_u32 w, int bits, float scale) {
    return (float)(tl_rnd_i32)(w >> (32 - bits)) * scale;
}

/* (0, 1) open at both ends: an odd multiple of 2^-24, exact in float32 (for log and tan). */
TL_RND_FN float tl_u01f_open(tl_rnd_u32 w) {
    return (float)(tl_rnd_i32)((w >> 8) | 1u) * 5.9604644775390625e-08f;
}

TL_RND_FN tl_rnd_u64 tl_u64_of(tl_rnd_u32 lo, tl_rnd_u32 hi) {
    return (tl_rnd_u64)lo | ((tl_rnd_u64)hi << 32);
}

/* [0, 1) with 53 random bits, and (0, 1) open: an odd multiple of 2^-53. */
TL_RND_FN double tl_u01d(tl_rnd_u64 x) { return (double)(tl_rnd_i64)(x >> 11) * 1.1102230246251565e-16; }
TL_RND_FN double tl_u01d_open(tl_rnd_u64 x) {
    return (double)(tl_rnd_i64)((x >> 11) | 1u) * 1.1102230246251565e-16;
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

/* ---- float32 log for x in (0, 1] ---------------------------------------------------------- */
/* Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + f) by a degree-9
 * polynomial, e ln 2 added in two parts.  About 1 ulp; no special cases, since the inputs
 * are normal positive floats. */
TL_RND_FN float tl_rnd_logf(float x) {
    const tl_rnd_u32 u = tl_rnd_f32_bits(x);
    const tl_rnd_i32 e = (tl_rnd_i32)(u >> 23) - 126;          /* x = m 2^e, m in [1/2, 1) */
    const float m = tl_rnd_bits_f32((u & 0x007fffffu) | 0x3f000000u);
    const int small = m < 0.707106781186547524f;
    const float f = small ? m + m - 1.0f : m - 1.0f;
    const float ef = (float)(small ? e - 1 : e);
    const float z = f * f;
    float p = 7.0376836292e-2f;
    p = p * f + -1.1514610310e-1f;
    p = p * f + 1.1676998740e-1f;
    p = p * f + -1.2420140846e-1f;
    p = p * f + 1.4249322787e-1f;
    p = p * f + -1.6668057665e-1f;
    p = p * f + 2.0000714765e-1f;
    p = p * f + -2.4999993993e-1f;
    p = p * f + 3.3333331174e-1f;
    float y = p * f * z;
    y += -2.12194440e-4f * ef;
    y += -0.5f * z;
    return (f + y) + 0.693359375f * ef;
}

/* ---- sin and cos of 2 pi t, t in [0, 1] --------------------------------------------------- */
/* The reduction is exact: 4t is split into the nearest integer q (the quadrant) and a rest
 * in [-1/2, 1/2], so the polynomials (Cephes' sinf/cosf on [-pi/4, pi/4]) only ever see a
 * small angle and no digits of pi are lost. */
TL_RND_FN void tl_rnd_sincos_turns(float t, float* s, float* c) {
    const float y = t * 4.0f;
    const float q = (y + 12582912.0f) - 12582912.0f;           /* round to nearest */
    const float a = (y - q) * 1.57079632679489662f;
    const float z = a * a;
    const float sp = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * a + a;
    const float cp = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z
                     - 0.5f * z + 1.0f;
    TL_ROTATE_QUARTERS(float, (tl_rnd_i32)q & 3, sp, cp, s, c);
}

/* ---- float64 log for x in (0, 1] and sin/cos of 2 pi t ------------------------------------ */
/* log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1),
 * |s| < 0.172, by its Taylor series to s^23 (truncation below 1e-18); about 1 ulp. */
TL_RND_FN double tl_rnd_log(double x) {
    const tl_rnd_u64 u = tl_rnd_f64_bits(x);
    const tl_rnd_i64 e = (tl_rnd_i64)(u >> 52) - 1022;         /* x = m 2^e, m in [1/2, 1) */
    double m = tl_rnd_bits_f64((u & 0x000fffffffffffffull) | 0x3fe0000000000000ull);
    const int small = m < 0.70710678118654752440;
    m = small ? m + m : m;
    const double ef = (double)(small ? e - 1 : e);
    const double s = (m - 1.0) / (m + 1.0), z = s * s;
    double p = 1.0 / 23;
    p = p * z + 1.0 / 21;
    p = p * z + 1.0 / 19;
    p = p * z + 1.0 / 17;
    p = p * z + 1.0 / 15;
    p = p * z + 1.0 / 13;
    p = p * z + 1.0 / 11;
    p = p * z + 1.0 / 9;
    p = p * z + 1.0 / 7;
    p = p * z + 1.0 / 5;
    p = p * z + 1.0 / 3;
    return (2.0 * s + 2.0 * s * z * p) + ef * 0.693147180559945309417232;
}

/* sin and cos of 2 pi t for t in [0, 1]: the exact quadrant split of tl_rnd_sincos_turns,
 * then Taylor series on [-pi/4, pi/4] (to a^17 and a^18: truncation below 1e-17):
 * sin a = a + a z (-1/3! + z (1/5! - ...)), cos a = 1 - z (1/2! - z (1/4! - ...)), z = a^2. */
TL_RND_FN void tl_rnd_sincos_turns_d(double t, double* s, double* c) {
    const double y = t * 4.0;
    const double q = (y + 6755399441055744.0) - 6755399441055744.0;     /* round to nearest */
    const double a = (y - q) * 1.57079632679489661923;
    const double z = a * a;
    double ps = 1.0 / 355687428096000.0;
    ps = ps * z + -1.0 / 1307674368000.0;
    ps = ps * z + 1.0 / 6227020800.0;
    ps = ps * z + -1.0 / 39916800.0;
    ps = ps * z + 1.0 / 362880.0;
    ps = ps * z + -1.0 / 5040.0;
    ps = ps * z + 1.0 / 120.0;
    ps = ps * z + -1.0 / 6.0;
    double pc = 1.0 / 6402373705728000.0;
    pc = pc * z + -1.0 / 20922789888000.0;
    pc = pc * z + 1.0 / 87178291200.0;
    pc = pc * z + -1.0 / 479001600.0;
    pc = pc * z + 1.0 / 3628800.0;
    pc = pc * z + -1.0 / 40320.0;
    pc = pc * z + 1.0 / 720.0;
    pc = pc * z + -1.0 / 24.0;
    pc = pc * z + 0.5;
    const double sp = ps * z * a + a;
    const double cp = 1.0 - pc * z;
    TL_ROTATE_QUARTERS(double, (int)((tl_rnd_i64)q & 3), sp, cp, s, c);
}

#endif
