/* Arithmetic that turns Philox words into numbers.  The Philox block, the uniform floats and
 * the vectorisable float32/float64 log and sin/cos for Box-Muller are one source with the
 * CUDA kernels (cuda_kernels/tl_random_math.cuh, included below as C99); here are the CPU's
 * own: a 64x64->128-bit multiply for unbiased bounded integers, and log(k!) for the Poisson sampler.  Everything is branch-free
 * arithmetic on its arguments (no library calls), so loops around it vectorise at every ISA
 * level. */
#ifndef TL_RANDOM_MATH_H
#define TL_RANDOM_MATH_H
#include <math.h>
#include <stdint.h>
#include "types.h"

/* ---- shared with the CUDA kernels ----------------------------------------------------- */
#define TL_RND_FN TL_INLINE
#define tl_rnd_u32 uint32_t
#define tl_rnd_i32 int32_t
#define tl_rnd_u64 uint64_t
#define tl_rnd_i64 int64_t
#define tl_rnd_f32_bits(f) tl_f32_bits(f)
#define tl_rnd_bits_f32(u) tl_bits_f32(u)
TL_INLINE uint64_t tl_rnd_f64_bits_(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
TL_INLINE double tl_rnd_bits_f64_(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
#define tl_rnd_f64_bits(d) tl_rnd_f64_bits_(d)
#define tl_rnd_bits_f64(u) tl_rnd_bits_f64_(u)
#include "tl_random_math.cuh"

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
