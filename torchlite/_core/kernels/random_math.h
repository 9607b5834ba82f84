/* Arithmetic that turns Philox words into numbers.  The Philox block, the uniform floats, the
 * vectorisable float32/float64 log, exp and sin/cos, and each distribution's transform of its
 * words (Box-Muller, exponential, Cauchy, geometric, bounded integers) are one source with the
 * CUDA kernels (cuda_kernels/tl_random_math.cuh, included below as C99); here is the CPU's
 * own log(k!) for the Poisson and binomial samplers. */
#ifndef TL_RANDOM_MATH_H
#define TL_RANDOM_MATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "types.h"

/* ---- shared with the CUDA kernels ----------------------------------------------------- */
#define TL_RND_FN TL_INLINE
#define TL_RND_COLD_FN TL_COLD
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
