/* The floating GEMM kernels of one ISA level.  gemm.h includes this file once per level
 * with TL_SFX(name) naming the copy and TL_GEMM_LEVEL set to 0 (portable C), 3 (AVX2+FMA)
 * or 4 (AVX-512), inside the matching `#pragma GCC target`.  It picks the vector type and
 * micro-tile for each dtype and instantiates gemm_kernel.h (which undefines these parameters again) for float32 and
 * float64. */

#if TL_GEMM_LEVEL >= 3
/* 8x8 float transpose (AVX): dst[p*ds + i] = src[i*ss + p]. */
static inline void TL_SFX(tr8_ps)(float *dst, int64_t ds, const float *src, int64_t ss) {
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ss);
    __m256 r2 = _mm256_loadu_ps(src + 2 * ss), r3 = _mm256_loadu_ps(src + 3 * ss);
    __m256 r4 = _mm256_loadu_ps(src + 4 * ss), r5 = _mm256_loadu_ps(src + 5 * ss);
    __m256 r6 = _mm256_loadu_ps(src + 6 * ss), r7 = _mm256_loadu_ps(src + 7 * ss);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* 4x4 double transpose (AVX). */
static inline void TL_SFX(tr4_pd)(double *dst, int64_t ds, const double *src, int64_t ss) {
    __m256d r0 = _mm256_loadu_pd(src), r1 = _mm256_loadu_pd(src + ss);
    __m256d r2 = _mm256_loadu_pd(src + 2 * ss), r3 = _mm256_loadu_pd(src + 3 * ss);
    __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    _mm256_storeu_pd(dst, _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd(dst + ds, _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd(dst + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd(dst + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));
}
#endif

/* ---- float32 ---------------------------------------------------------------------- */
#define T float
#define TL_GK(name) TL_SFX(name##_f32)
#if TL_GEMM_LEVEL == 4
#define VT __m512
#define VL 16
#define MR 8
#define NV 3
#define VZERO() _mm512_setzero_ps()
#define VLOAD(p) _mm512_load_ps(p)
#define VLOADU(p) _mm512_loadu_ps(p)
#define VSTOREU(p, v) _mm512_storeu_ps(p, v)
#define VSET1(x) _mm512_set1_ps(x)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VMASK_T __mmask16
#define VMASK(rem) ((__mmask16)((1u << (rem)) - 1u))
#define VLOADM(p, m) _mm512_maskz_loadu_ps(m, p)
#define VSTOREM(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define TB 8
#define TRANS TL_SFX(tr8_ps)
#define KC 256
#define MC 1024
#define NC 480
#elif TL_GEMM_LEVEL == 3
#define VT __m256
#define VL 8
#define MR 6
#define NV 2
#define VZERO() _mm256_setzero_ps()
#define VLOAD(p) _mm256_load_ps(p)
#define VLOADU(p) _mm256_loadu_ps(p)
#define VSTOREU(p, v) _mm256_storeu_ps(p, v)
#define VSET1(x) _mm256_set1_ps(x)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VMASK_T __m256i
#define VMASK(rem) _mm256_cmpgt_epi32(_mm256_set1_epi32(rem), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define VLOADM(p, m) _mm256_maskload_ps(p, m)
#define VSTOREM(p, m, v) _mm256_maskstore_ps(p, m, v)
#define TB 8
#define TRANS TL_SFX(tr8_ps)
#define KC 256
#define MC 768
#define NC 512
#else
#define VT float
#define VL 1
#define MR 4
#define NV 8
#define TB 0
#define VZERO() ((T)0)
#define VLOAD(p) (*(p))
#define VLOADU(p) (*(p))
#define VSTOREU(p, v) (*(p) = (v))
#define VSET1(x) ((T)(x))
#define VFMA(a, b, c) ((a) * (b) + (c))
#define VMUL(a, b) ((a) * (b))
#define KC 256
#define MC 512
#define NC 512
#endif
#include "gemm_kernel.h"

/* ---- float64 ---------------------------------------------------------------------- */
#define T double
#define TL_GK(name) TL_SFX(name##_f64)
#if TL_GEMM_LEVEL == 4
#define VT __m512d
#define VL 8
#define MR 8
#define NV 3
#define VZERO() _mm512_setzero_pd()
#define VLOAD(p) _mm512_load_pd(p)
#define VLOADU(p) _mm512_loadu_pd(p)
#define VSTOREU(p, v) _mm512_storeu_pd(p, v)
#define VSET1(x) _mm512_set1_pd(x)
#define VFMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define VMUL(a, b) _mm512_mul_pd(a, b)
#define VMASK_T __mmask8
#define VMASK(rem) ((__mmask8)((1u << (rem)) - 1u))
#define VLOADM(p, m) _mm512_maskz_loadu_pd(m, p)
#define VSTOREM(p, m, v) _mm512_mask_storeu_pd(p, m, v)
#define TB 4
#define TRANS TL_SFX(tr4_pd)
#define KC 256
#define MC 512
#define NC 240
#elif TL_GEMM_LEVEL == 3
#define VT __m256d
#define VL 4
#define MR 6
#define NV 2
#define VZERO() _mm256_setzero_pd()
#define VLOAD(p) _mm256_load_pd(p)
#define VLOADU(p) _mm256_loadu_pd(p)
#define VSTOREU(p, v) _mm256_storeu_pd(p, v)
#define VSET1(x) _mm256_set1_pd(x)
#define VFMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define VMUL(a, b) _mm256_mul_pd(a, b)
#define VMASK_T __m256i
#define VMASK(rem) _mm256_cmpgt_epi64(_mm256_set1_epi64x(rem), _mm256_setr_epi64x(0, 1, 2, 3))
#define VLOADM(p, m) _mm256_maskload_pd(p, m)
#define VSTOREM(p, m, v) _mm256_maskstore_pd(p, m, v)
#define TB 4
#define TRANS TL_SFX(tr4_pd)
#define KC 256
#define MC 384
#define NC 256
#else
#define VT double
#define VL 1
#define MR 4
#define NV 4
#define TB 0
#define VZERO() ((T)0)
#define VLOAD(p) (*(p))
#define VLOADU(p) (*(p))
#define VSTOREU(p, v) (*(p) = (v))
#define VSET1(x) ((T)(x))
#define VFMA(a, b, c) ((a) * (b) + (c))
#define VMUL(a, b) ((a) * (b))
#define KC 256
#define MC 256
#define NC 512
#endif
#include "gemm_kernel.h"
