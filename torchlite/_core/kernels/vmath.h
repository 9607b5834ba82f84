/* Vectorisable float32 math.  glibc's expf is scalar unless built with -ffast-math, and
 * the compiler cannot vectorise a loop around a library call; these inline versions use
 * only arithmetic, comparisons and bit moves so the loops in ewise_body.h vectorise at
 * every ISA level.  Accuracy: about 1 ulp (Cephes' minimax coefficients). */
#ifndef TL_VMATH_H
#define TL_VMATH_H
#include "types.h"

TL_INLINE float tl_pow2i(int32_t k) { return tl_bits_f32((uint32_t)(k + 127) << 23); }

TL_INLINE float tl_expf(float x) {
    /* clamp, reduce x = k ln2 + r with |r| <= ln2/2, then exp(r) by a degree-6 polynomial */
    float xc = x > 88.72283935546875f ? 88.72283935546875f : x;
    xc = xc < -103.972084045410f ? -103.972084045410f : xc;
    float kf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;   /* round to int */
    float r = xc - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    float z = r * r;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * z + r + 1.0f;
    int32_t k = (int32_t)kf;
    int32_t k1 = k >> 1;                      /* split the scale so subnormal results stay exact */
    float y = p * tl_pow2i(k1) * tl_pow2i(k - k1);
    y = x > 88.72283935546875f ? INFINITY : y;
    return x != x ? x : y;
}

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
    /* |x| < 1: x * P(x^2); 1 <= |x| < 3.95: 1 - e^{-x^2} Q(1/|x|), where Q(u) approximates
     * erfc(x) e^{x^2} (smooth in u = 1/x); beyond, erf rounds to +-1 in float32.  P and Q
     * are least-squares fits at Chebyshev nodes (degree 6 in x^2, 7 in 1/|x|); about 2.4 ulp
     * below 1, 1.1 ulp above.  The rounding of x^2 in the exponent barely matters: where x^2
     * is large, erfc is tiny next to erf. */
    float ax = x < 0.0f ? -x : x;
    float t = x * x;
    float p = 7.882497448e-05f;
    p = p * t - 8.018855006e-04f;
    p = p * t + 5.189312156e-03f;
    p = p * t - 2.685432881e-02f;
    p = p * t + 1.128359735e-01f;
    p = p * t - 3.761262596e-01f;
    p = p * t + 1.128379107e+00f;
    float small = x * p;
    float a = ax < 1.0f ? 1.0f : ax;              /* keeps the unused branch finite */
    float u = 1.0f / a;
    float q = -1.869007945e-02f;
    q = q * u + 1.244353205e-01f;
    q = q * u - 3.611264527e-01f;
    q = q * u + 5.825459361e-01f;
    q = q * u - 5.096923113e-01f;
    q = q * u + 5.221007392e-02f;
    q = q * u + 5.575372577e-01f;
    q = q * u + 3.638529161e-04f;
    float big = 1.0f - tl_expf(-a * a) * q;
    big = ax > 3.95f ? 1.0f : big;
    big = x < 0.0f ? -big : big;
    return ax < 1.0f ? small : big;
}

#endif
