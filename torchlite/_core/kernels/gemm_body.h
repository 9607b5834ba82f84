/* The floating GEMM kernels of one ISA level.  gemm.h includes this file once per level
 * with TL_SFX(name) naming the copy and TL_GEMM_LEVEL set to 0 (portable C), 3 (AVX2+FMA)
 * or 4 (AVX-512), inside the matching target pragmas.  The file then includes itself once
 * per dtype (TL_GEMM_DTYPE 32, then 64); each of those passes sets the vector type, the
 * vector ops and the micro-tile and instantiates gemm_kernel.h (which undefines these
 * parameters again). */

#ifndef TL_GEMM_DTYPE
/* ---- the level's pass: transposes, then one pass per dtype ------------------------ */
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

#define TL_GEMM_DTYPE 32
#include "gemm_body.h"
#undef TL_GEMM_DTYPE
#define TL_GEMM_DTYPE 64
#include "gemm_body.h"
#undef TL_GEMM_DTYPE

#else
/* ---- one dtype's pass -------------------------------------------------------------- */
#if TL_GEMM_DTYPE == 32
#define T float
#define TL_GK(name) TL_SFX(name##_f32)
#define TL_VS ps               /* intrinsic suffix */
#else
#define T double
#define TL_GK(name) TL_SFX(name##_f64)
#define TL_VS pd
#endif

/* Vector type VT of VL lanes, micro-tile MR x (NV * VL), TB x TB transposes (TB = 0:
 * none) and cache blocks KC x MC x NC, per level and dtype. */
#define KC 256
#if TL_GEMM_LEVEL == 4
#define TL_VP _mm512           /* intrinsic prefix */
#define MR 8
#define NV 3
#if TL_GEMM_DTYPE == 32
#define VT __m512
#define VL 16
#define VMASK_T __mmask16
#define TB 8
#define TRANS TL_SFX(tr8_ps)
#define MC 1024
#define NC 480
#else
#define VT __m512d
#define VL 8
#define VMASK_T __mmask8
#define TB 4
#define TRANS TL_SFX(tr4_pd)
#define MC 512
#define NC 240
#endif
#elif TL_GEMM_LEVEL == 3
#define TL_VP _mm256
#define MR 6
#define NV 2
#define VMASK_T __m256i
#if TL_GEMM_DTYPE == 32
#define VT __m256
#define VL 8
#define VMASK(rem) _mm256_cmpgt_epi32(_mm256_set1_epi32(rem), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define TB 8
#define TRANS TL_SFX(tr8_ps)
#define MC 768
#define NC 512
#else
#define VT __m256d
#define VL 4
#define VMASK(rem) _mm256_cmpgt_epi64(_mm256_set1_epi64x(rem), _mm256_setr_epi64x(0, 1, 2, 3))
#define TB 4
#define TRANS TL_SFX(tr4_pd)
#define MC 384
#define NC 256
#endif
#else
#define VT T
#define VL 1
#define MR 4
#define TB 0
#define NC 512
#if TL_GEMM_DTYPE == 32
#define NV 8
#define MC 512
#else
#define NV 4
#define MC 256
#endif
#endif

/* The vector ops: TL_VOP(_fmadd_) is _mm512_fmadd_ps, _mm256_fmadd_pd, ... */
#if TL_GEMM_LEVEL >= 3
#define TL_VCAT_(a, b, c) a##b##c
#define TL_VCAT(a, b, c) TL_VCAT_(a, b, c)
#define TL_VOP(op) TL_VCAT(TL_VP, op, TL_VS)
#define VZERO() TL_VOP(_setzero_)()
#define VLOAD(p) TL_VOP(_load_)(p)
#define VLOADU(p) TL_VOP(_loadu_)(p)
#define VSTOREU(p, v) TL_VOP(_storeu_)(p, v)
#define VSET1(x) TL_VOP(_set1_)(x)
#define VFMA(a, b, c) TL_VOP(_fmadd_)(a, b, c)
#define VMUL(a, b) TL_VOP(_mul_)(a, b)
#if TL_GEMM_LEVEL == 4
#define VMASK(rem) ((VMASK_T)((1u << (rem)) - 1u))
#define VLOADM(p, m) TL_VOP(_maskz_loadu_)(m, p)
#define VSTOREM(p, m, v) TL_VOP(_mask_storeu_)(p, m, v)
#else
#define VLOADM(p, m) TL_VOP(_maskload_)(p, m)
#define VSTOREM(p, m, v) TL_VOP(_maskstore_)(p, m, v)
#endif
#else
#define VZERO() ((T)0)
#define VLOAD(p) (*(p))
#define VLOADU(p) (*(p))
#define VSTOREU(p, v) (*(p) = (v))
#define VSET1(x) ((T)(x))
#define VFMA(a, b, c) ((a) * (b) + (c))
#define VMUL(a, b) ((a) * (b))
#endif

#include "gemm_kernel.h"
#undef TL_VS
#undef TL_VP
#undef TL_VOP
#undef TL_VCAT
#undef TL_VCAT_
#endif
