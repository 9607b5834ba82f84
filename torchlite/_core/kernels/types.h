/* Dtype codes and element types shared by every CPU kernel.
 * The codes are torchlite's own (see torchlite/_dtype.py, which mirrors them). */
#ifndef TL_TYPES_H
#define TL_TYPES_H
#include <stdint.h>
#include <string.h>
#include <math.h>

enum {
    TL_BOOL = 0, TL_UINT8 = 1, TL_INT8 = 2, TL_INT16 = 3, TL_INT32 = 4, TL_INT64 = 5,
    TL_FLOAT16 = 6, TL_BFLOAT16 = 7, TL_FLOAT32 = 8, TL_FLOAT64 = 9,
    TL_COMPLEX64 = 10, TL_COMPLEX128 = 11, TL_COMPLEX32 = 12, TL_NDTYPES = 13
};

/* Kernel error codes: a loop returns one and the Cython caller raises the Python error. */
enum { TL_OK = 0, TL_ERR_ZERODIV = 1, TL_ERR_NEGPOW = 2, TL_ERR_INDEX = 3 };

typedef uint8_t tl_bool;
typedef uint16_t tl_half;   /* IEEE binary16, stored as bits */
typedef uint16_t tl_bf16;   /* bfloat16, stored as bits */
/* complex numbers as (real, imag) pairs: NumPy's and PyTorch's layout.  Structs rather than
 * C99 _Complex, which MSVC (the Windows wheels) lacks; their math is in cplx.h. */
typedef struct { float re, im; } tl_c64;
/* complex32 (PyTorch's chalf): two float16 parts; a storage type, computed in complex64 */
typedef struct { tl_half re, im; } tl_c32;
typedef struct { double re, im; } tl_c128;

/* TL_COLD: a rarely taken path kept out of line, so the hot loop around its call stays small */
/* TL_OUTLINE: a path kept out of line so that the code around its call is compiled as it
 * would be without it (a big path inlined can change how the compiler treats the others) */
#if defined(_MSC_VER)
#define TL_INLINE static __forceinline
#define TL_COLD static __declspec(noinline)
#define TL_OUTLINE static __declspec(noinline)
#else
#define TL_INLINE static inline __attribute__((always_inline))
#define TL_COLD static __attribute__((noinline, cold))
#define TL_OUTLINE static __attribute__((noinline))
#endif

TL_INLINE float tl_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
TL_INLINE uint32_t tl_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

TL_INLINE float tl_half_to_float(tl_half h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {                       /* zero or subnormal: m * 2^-24, exact in float */
        float v = (float)m * 5.9604644775390625e-08f;
        return tl_bits_f32(tl_f32_bits(v) | sign);
    }
    if (e == 31) return tl_bits_f32(sign | 0x7f800000u | (m << 13));
    return tl_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

TL_INLINE tl_half tl_float_to_half(float f) {   /* round to nearest even */
    uint32_t x = tl_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (tl_half)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) return (tl_half)(sign | 0x7c00u);       /* >= 65520 rounds to inf */
    if (ax < 0x38800000u) {                                          /* below 2^-14: subnormal */
        float v = tl_bits_f32(ax) * 16777216.0f;                     /* exact: times 2^24 */
        return (tl_half)(sign | (uint32_t)nearbyintf(v));
    }
    ax += 0xfffu + ((ax >> 13) & 1u);
    ax -= 0x38000000u;
    return (tl_half)(sign | (ax >> 13));
}

TL_INLINE float tl_bf16_to_float(tl_bf16 b) { return tl_bits_f32((uint32_t)b << 16); }

TL_INLINE tl_bf16 tl_float_to_bf16(float f) {
    uint32_t x = tl_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (tl_bf16)((x >> 16) | 0x40u);  /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (tl_bf16)(x >> 16);
}

static const int tl_itemsize[TL_NDTYPES] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16, 4};

#endif
