/* Scalar helpers for the elementwise loops: the parts of an op's formula that are more than
 * one expression (Python-style integer division, erfinv, ...).  Included once, before the
 * per-ISA bodies; they are always_inline, so each body compiles them for its own ISA. */
#ifndef TL_EWISE_SCALAR_H
#define TL_EWISE_SCALAR_H
#include "types.h"
#include "vmath.h"
#include "cplx.h"

/* The ops' formulas (Python's integer and float division, wrapping, NaN rules, clamps, lerp,
 * ...): one source with the CUDA functors (cuda_kernels/tl_scalar_math.cuh, included here as
 * C99, which names them tl_<op>_<type>; setup.py puts cuda_kernels/ on the include path). */
#define TL_SM_FN TL_INLINE
#define TL_SM_U8 uint8_t
#define TL_SM_I8 int8_t
#define TL_SM_I16 int16_t
#define TL_SM_I32 int32_t
#define TL_SM_I64 int64_t
#define TL_SM_U64 uint64_t
#define TL_SM_INFINITY INFINITY
#include "tl_scalar_math.cuh"

/* erfinv: a first estimate, then three Newton steps for full double accuracy.
 * The estimate is Giles' single-precision approximation, which is built for 1 - |y| down to
 * float32's resolution (w < 16); closer to +-1 the tail asymptote erfc(x) ~ e^{-x^2}/(x
 * sqrt(pi)) is iterated instead.  For |y| > 0.5 the Newton steps solve log(erfc(x)) =
 * log(1 - |y|): 1 - |y| is exact there, while erf(x) - |y| has no digits left near +-1, and
 * log(erfc) is nearly quadratic, so the steps converge from a rough estimate. */
TL_INLINE double tl_erfinv_f64(double y) {
    if (y != y || y < -1 || y > 1) return NAN;
    if (y == 1) return INFINITY;
    if (y == -1) return -INFINITY;
    const double two_over_sqrt_pi = 1.1283791670955126, sqrt_pi = 1.7724538509055160;
    double ay = fabs(y), q = 1.0 - ay;
    double w = -log(q * (1.0 + ay)), p, x;
    if (w >= 16.0) {
        double t = -log(q);
        x = sqrt(t);
        for (int i = 0; i < 3; i++) x = sqrt(t - log(x * sqrt_pi));
    } else {
        if (w < 5.0) {
            w = w - 2.5;
            p = 2.81022636e-08; p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w;
            p = -4.39150654e-06 + p * w; p = 0.00021858087 + p * w; p = -0.00125372503 + p * w;
            p = -0.00417768164 + p * w; p = 0.246640727 + p * w; p = 1.50140941 + p * w;
        } else {
            w = sqrt(w) - 3.0;
            p = -0.000200214257; p = 0.000100950558 + p * w; p = 0.00134934322 + p * w;
            p = -0.00367342844 + p * w; p = 0.00573950773 + p * w; p = -0.0076224613 + p * w;
            p = 0.00943887047 + p * w; p = 1.00167406 + p * w; p = 2.83297682 + p * w;
        }
        x = p * ay;
    }
    for (int i = 0; i < 3; i++) {
        double g = two_over_sqrt_pi * exp(-x * x);          /* d/dx erf(x) */
        if (ay <= 0.5) {
            x -= (erf(x) - ay) / g;
        } else {
            double e = erfc(x);
            x += (log(e) - log(q)) * e / g;
        }
    }
    return copysign(x, y);
}
TL_INLINE float tl_erfinv_f32(float y) { return (float)tl_erfinv_f64((double)y); }

#endif
