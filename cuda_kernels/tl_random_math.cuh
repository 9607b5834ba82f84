/* The arithmetic of torchlite's random numbers, one source for both devices: the Philox4x32-10
 * block, the words-to-uniform conversions, the float32/float64 log, exp and sin/cos of 2 pi t,
 * and each distribution's transform of its word(s) into a sample (Box-Muller, exponential,
 * Cauchy, geometric, Lemire's bounded integers with their redraws).  A seed gives the same numbers on
 * the CPU and the GPU because both compile this file: the CPU kernels as C99
 * (torchlite/_core/kernels/philox.h and random_math.h include it, and vectorise the loops
 * around these functions), the CUDA kernels through NVRTC (tl_philox.cuh includes it inside
 * namespace tl::rnd), and the host tests as plain C++.
 *
 * The loops around these functions are each device's own (the CPU's run 16 blocks at a time in
 * lanes that vectorise, a CUDA thread computes one block); what a sample is, is here.
 *
 * So it is written in the common subset of C99 and C++: no references, overloads, templates,
 * bool or file-scope tables (a device function cannot read a host array; the polynomials are
 * spelled out in Horner form instead).  The includer defines first:
 *   TL_RND_FN                                  the qualifiers of a function
 *   TL_RND_COLD_FN                             those of a rarely called one (the redraws)
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

/* ---- float32 exp -------------------------------------------------------------------------- */
/* Cephes' expf: x = k ln 2 + r (|r| <= ln2 / 2, ln 2 in two parts), exp(r) by a degree-6
 * minimax polynomial, 2^k applied in two halves so subnormal results stay exact; inf above
 * 88.72, NaN kept.  About 1 ulp; also the CPU's elementwise exp (kernels/vmath.h's tl_expf is
 * this function), so log_normal's samples match the CPU's on the GPU. */
TL_RND_FN float tl_rnd_pow2i(tl_rnd_i32 k) { return tl_rnd_bits_f32((tl_rnd_u32)(k + 127) << 23); }
TL_RND_FN float tl_rnd_expf(float x) {
    float xc = x > 88.72283935546875f ? 88.72283935546875f : x;
    xc = xc < -103.972084045410f ? -103.972084045410f : xc;
    const float kf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;   /* round to int */
    float r = xc - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    const float z = r * r;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * z + r + 1.0f;
    const tl_rnd_i32 k = (tl_rnd_i32)kf;
    const tl_rnd_i32 k1 = k >> 1;
    float y = p * tl_rnd_pow2i(k1) * tl_rnd_pow2i(k - k1);
    y = x > 88.72283935546875f ? tl_rnd_bits_f32(0x7f800000u) : y;
    return x != x ? x : y;
}

/* ---- the distributions' transforms: word(s) to a sample ----------------------------------- */
/* Box-Muller: the radius from word wr, the angle from word wa; *z0 = r cos, *z1 = r sin. */
TL_RND_FN void tl_rnd_normal_pair_f32(tl_rnd_u32 wr, tl_rnd_u32 wa, float* z0, float* z1) {
    const float r = sqrtf(-2.0f * tl_rnd_logf(tl_u01f_open(wr)));
    float s, c;
    tl_rnd_sincos_turns(tl_u01f(wa, 24, 5.9604644775390625e-08f), &s, &c);
    *z0 = r * c;
    *z1 = r * s;
}
TL_RND_FN void tl_rnd_normal_pair_f64(tl_rnd_u64 xr, tl_rnd_u64 xa, double* z0, double* z1) {
    const double r = sqrt(-2.0 * tl_rnd_log(tl_u01d_open(xr)));
    double s, c;
    tl_rnd_sincos_turns_d(tl_u01d(xa), &s, &c);
    *z0 = r * c;
    *z1 = r * s;
}

/* -log(u) / lambda, u in (0, 1) */
TL_RND_FN float tl_rnd_exponential_f32(tl_rnd_u32 w, float lambd) {
    return -tl_rnd_logf(tl_u01f_open(w)) / lambd;
}
TL_RND_FN double tl_rnd_exponential_f64(tl_rnd_u64 x, double lambd) {
    return -tl_rnd_log(tl_u01d_open(x)) / lambd;
}

/* median + sigma tan(pi (u - 1/2)); in float32 as -cos(pi u) / sin(pi u) (sin(pi u) > 0 for u
 * in (0, 1)), in float64 by the math library's tan */
TL_RND_FN float tl_rnd_cauchy_f32(tl_rnd_u32 w, float median, float sigma) {
    float s, c;
    tl_rnd_sincos_turns(tl_u01f_open(w) * 0.5f, &s, &c);
    return median + sigma * (-c / s);
}
TL_RND_FN double tl_rnd_cauchy_f64(tl_rnd_u64 x, double median, double sigma) {
    return median + sigma * tan(3.14159265358979323846 * (tl_u01d_open(x) - 0.5));
}

/* ceil(log(u) / log(1 - p)), given log1m_p = log1p(-p); at least 1 */
TL_RND_FN double tl_rnd_geometric_f64(tl_rnd_u64 x, double log1m_p) {
    const double v = ceil(log(tl_u01d_open(x)) / log1m_p);
    return v < 1.0 ? 1.0 : v;
}

/* ---- bounded integers: Lemire's multiply-shift, rejection exactly unbiased ---------------- */
/* floor(w range / 2^32) for range <= 2^32, rejected while the product's low half is below
 * reject = (2^32 - range) mod range; a rejected element redraws from the same word k of its
 * block `block` at draw numbers 1, 2, ... (out of line: rare, and the loops stay small) */
TL_RND_COLD_FN tl_rnd_u64 tl_rnd_redraw32(const tl_rnd_u32 key[2], tl_rnd_u64 block, int k, tl_rnd_u64 range,
                                          tl_rnd_u32 reject) {
    tl_rnd_u64 m = 0;
    for (tl_rnd_u32 draw = 1; draw == 1 || (tl_rnd_u32)m < reject; draw++) {
        tl_rnd_u32 b[4];
        tl_philox_block(key, block, draw, b);
        m = (tl_rnd_u64)b[k] * range;
    }
    return m;
}
TL_RND_FN tl_rnd_u64 tl_rnd_bounded32(const tl_rnd_u32 key[2], tl_rnd_u64 block, int k, tl_rnd_u32 w,
                                      tl_rnd_u64 range, tl_rnd_u32 reject) {
    tl_rnd_u64 m = (tl_rnd_u64)w * range;
    if ((tl_rnd_u32)m < reject) m = tl_rnd_redraw32(key, block, k, range, reject);
    return m >> 32;
}
/* the same where the range changes from element to element (randperm's draws): the threshold's
 * division is made only when the low half is below range, the one case a redraw can need */
TL_RND_FN tl_rnd_u64 tl_rnd_bounded32_lazy(const tl_rnd_u32 key[2], tl_rnd_u64 block, int k, tl_rnd_u32 w,
                                           tl_rnd_u32 range) {
    tl_rnd_u64 m = (tl_rnd_u64)w * range;
    if ((tl_rnd_u32)m < range) {
        const tl_rnd_u32 reject = (0u - range) % range;
        if ((tl_rnd_u32)m < reject) m = tl_rnd_redraw32(key, block, k, range, reject);
    }
    return m >> 32;
}

/* the high and low halves of a 64 x 64-bit product */
TL_RND_FN tl_rnd_u64 tl_rnd_mul64_hi(tl_rnd_u64 a, tl_rnd_u64 b, tl_rnd_u64* lo) {
#if defined(__CUDA_ARCH__)
    *lo = a * b;
    return __umul64hi(a, b);
#elif defined(__SIZEOF_INT128__)
    const unsigned __int128 m = (unsigned __int128)a * b;
    *lo = (tl_rnd_u64)m;
    return (tl_rnd_u64)(m >> 64);
#else
    const tl_rnd_u64 a0 = (tl_rnd_u32)a, a1 = a >> 32, b0 = (tl_rnd_u32)b, b1 = b >> 32;
    const tl_rnd_u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const tl_rnd_u64 mid = (p00 >> 32) + (tl_rnd_u32)p01 + (tl_rnd_u32)p10;
    *lo = (mid << 32) | (tl_rnd_u32)p00;
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

/* floor(x range / 2^64) for 64-bit ranges (range == 0 stands for 2^64: x itself), the redraws
 * from word pair h (words 2h, 2h + 1) of the element's block */
TL_RND_COLD_FN tl_rnd_u64 tl_rnd_redraw64(const tl_rnd_u32 key[2], tl_rnd_u64 block, int h, tl_rnd_u64 range,
                                          tl_rnd_u64 reject) {
    tl_rnd_u64 lo = 0, hi = 0;
    for (tl_rnd_u32 draw = 1; draw == 1 || lo < reject; draw++) {
        tl_rnd_u32 b[4];
        tl_philox_block(key, block, draw, b);
        hi = tl_rnd_mul64_hi(tl_u64_of(b[2 * h], b[2 * h + 1]), range, &lo);
    }
    return hi;
}
TL_RND_FN tl_rnd_u64 tl_rnd_bounded64(const tl_rnd_u32 key[2], tl_rnd_u64 block, int h, tl_rnd_u64 x,
                                      tl_rnd_u64 range, tl_rnd_u64 reject) {
    if (range == 0) return x;
    tl_rnd_u64 lo, hi = tl_rnd_mul64_hi(x, range, &lo);
    return lo < reject ? tl_rnd_redraw64(key, block, h, range, reject) : hi;
}

#endif
