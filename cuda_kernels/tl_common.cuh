/* Shared definitions for torchlite's CUDA kernels: integer types, the element types of the
 * ten dtypes and conversions between them (the CPU's rules, torchlite/_core/kernels/
 * ewise_body.h), kernel parameter structs and the strided indexer.
 *
 * NVRTC has no standard library (no <cstdint>), so the integer types are spelled out.  The
 * parts that do not need CUDA's fp16/bf16 headers also compile as plain C++ (g++), which is
 * how tests/test_cuda_compile.py runs the op functors and the Philox transforms on the host
 * against the CPU kernels, and how tests/cuda_host/ runs whole kernels (TL_HOST_EMULATION:
 * threads, blocks and barriers emulated by CPU threads). */
#ifndef TL_COMMON_CUH
#define TL_COMMON_CUH

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define TL_HD __host__ __device__ __forceinline__
#define TL_DEV __device__ __forceinline__
#define TL_HAS_HALF 1
#else
#include <cmath>
#include <cstring>
#define TL_HD inline
#define TL_DEV inline
#define TL_HAS_HALF 0
#endif

#define TL_MAX_DIMS 25            /* dims of a strided launch (after coalescing on the host) */
#define TL_MAX_SCALARS 4          /* double parameters of an op (alpha, clamp bounds, ...) */

namespace tl {

typedef signed char i8;
typedef unsigned char u8;
typedef short i16;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
/* 16 bytes moved as one (complex128's copies, fills, where, gather and scatter) */
struct alignas(16) u128 { u64 lo, hi; };

/* Kernel error flags, or-ed into an int the host reads back (Params::err and the like). */
enum { ERR_ZERODIV = 1, ERR_INDEX = 4 };

/* ---- bit casts ------------------------------------------------------------------------- */
TL_HD float bits_f32(u32 u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f; memcpy(&f, &u, 4); return f;
#endif
}
TL_HD u32 f32_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    u32 u; memcpy(&u, &f, 4); return u;
#endif
}
TL_HD double bits_f64(u64 u) {
#if defined(__CUDA_ARCH__)
    return __longlong_as_double((long long)u);
#else
    double d; memcpy(&d, &u, 8); return d;
#endif
}
TL_HD u64 f64_bits(double d) {
#if defined(__CUDA_ARCH__)
    return (u64)__double_as_longlong(d);
#else
    u64 u; memcpy(&u, &d, 8); return u;
#endif
}

/* ---- type traits ----------------------------------------------------------------------- */
template <class A, class B> struct same { static const bool value = false; };
template <class A> struct same<A, A> { static const bool value = true; };

template <class T> struct is_float { static const bool value = false; };
template <> struct is_float<float> { static const bool value = true; };
template <> struct is_float<double> { static const bool value = true; };

template <class T> struct is_signed_int { static const bool value = false; };
template <> struct is_signed_int<i8> { static const bool value = true; };
template <> struct is_signed_int<i16> { static const bool value = true; };
template <> struct is_signed_int<i32> { static const bool value = true; };
template <> struct is_signed_int<i64> { static const bool value = true; };

template <class T> struct is_int {
    static const bool value = is_signed_int<T>::value || same<T, u8>::value;
};

/* The type an op computes in: float16/bfloat16 go through float32 (as on the CPU). */
template <class T> struct compute { typedef T type; };
/* The accumulator of sums and products: float64 for floating types, int64 for the rest. */
template <class T> struct acc { typedef i64 type; };
template <> struct acc<float> { typedef double type; };
template <> struct acc<double> { typedef double type; };

template <class T> struct limits;
template <> struct limits<bool> { TL_HD static bool lowest() { return false; } TL_HD static bool highest() { return true; } };
template <> struct limits<u8> { TL_HD static u8 lowest() { return 0; } TL_HD static u8 highest() { return 255; } };
template <> struct limits<i8> { TL_HD static i8 lowest() { return -128; } TL_HD static i8 highest() { return 127; } };
template <> struct limits<i16> { TL_HD static i16 lowest() { return -32768; } TL_HD static i16 highest() { return 32767; } };
template <> struct limits<i32> { TL_HD static i32 lowest() { return -2147483647 - 1; } TL_HD static i32 highest() { return 2147483647; } };
template <> struct limits<i64> { TL_HD static i64 lowest() { return -9223372036854775807LL - 1; } TL_HD static i64 highest() { return 9223372036854775807LL; } };
template <> struct limits<float> { TL_HD static float lowest() { return -bits_f32(0x7f800000u); } TL_HD static float highest() { return bits_f32(0x7f800000u); } };
template <> struct limits<double> { TL_HD static double lowest() { return -bits_f64(0x7ff0000000000000ull); } TL_HD static double highest() { return bits_f64(0x7ff0000000000000ull); } };

#if TL_HAS_HALF
typedef __half f16;
typedef __nv_bfloat16 bf16;
template <> struct is_float<f16> { static const bool value = true; };
template <> struct is_float<bf16> { static const bool value = true; };
template <> struct compute<f16> { typedef float type; };
template <> struct compute<bf16> { typedef float type; };
template <> struct acc<f16> { typedef double type; };
template <> struct acc<bf16> { typedef double type; };
#endif

/* ---- complex64 / complex128 ------------------------------------------------------------- */
/* (re, im) pairs, NumPy's and PyTorch's layout, aligned to their size (one access per
 * element).  Their math is the CPU's own source, tl_complex.cuh (its tl_c64_* / tl_c128_*
 * functions, defined here inside namespace tl); tl_ops.cuh gives them operators. */
template <class R> struct alignas(2 * sizeof(R)) cplx {
    R re, im;
    cplx() = default;
    TL_HD constexpr cplx(R r, R i = R(0)) : re(r), im(i) {}
};
typedef cplx<float> c64;
typedef cplx<double> c128;
template <class T> struct is_complex { static const bool value = false; };
template <> struct is_complex<c64> { static const bool value = true; };
template <> struct is_complex<c128> { static const bool value = true; };
/* the real type of a complex type, or the type itself */
template <class T> struct real_of { typedef T type; };
template <> struct real_of<c64> { typedef float type; };
template <> struct real_of<c128> { typedef double type; };

#define TL_CPLX_FN TL_HD
#define TL_CPLX_INFINITY bits_f32(0x7f800000u)
#define TL_CPLX_NAN bits_f32(0x7fc00000u)
#include "tl_complex.cuh"
TL_DEF_COMPLEX(c64, c64, float, f)
TL_DEF_COMPLEX(c128, c128, double, )

/* ---- conversions (the CPU's cast rules) ------------------------------------------------ */
/* Reading: an element as its compute type. */
template <class T> TL_HD typename compute<T>::type load(T x) { return x; }
#if TL_HAS_HALF
template <> TL_HD float load<f16>(f16 x) { return __half2float(x); }
template <> TL_HD float load<bf16>(bf16 x) { return __bfloat162float(x); }
#endif

/* Converting a value of a compute type (or any element type) to element type To:
 *   to bool: x != 0;  to an integer type: through int64 (the CPU's (T)(int64_t)x);
 *   to float16/bfloat16: through float32, rounding to nearest even;  else a C cast.
 *   A complex value becomes a real one by its real part (to bool: either part nonzero), a
 *   real one a complex one with imaginary part 0 (the CPU's ewise_body.h). */
template <class To> struct cvt {
    template <class From> TL_HD static To from(From x) {
        if constexpr (is_complex<From>::value) {
            if constexpr (same<To, bool>::value) return x.re != 0 || x.im != 0;
            else return cvt<To>::from(x.re);
        } else if constexpr (same<To, bool>::value) {
            return x != From(0);
        } else if constexpr (is_int<To>::value) {
            return (To)(i64)x;
        } else {
            return (To)x;
        }
    }
};
template <class R> struct cvt<cplx<R> > {
    template <class From> TL_HD static cplx<R> from(From x) {
        if constexpr (is_complex<From>::value) return cplx<R>((R)x.re, (R)x.im);
        else return cplx<R>((R)x, R(0));
    }
};
#if TL_HAS_HALF
template <> struct cvt<f16> {
    template <class From> TL_HD static f16 from(From x) {
        if constexpr (is_complex<From>::value) return __float2half_rn((float)x.re);
        else return __float2half_rn((float)x);
    }
};
template <> struct cvt<bf16> {
    template <class From> TL_HD static bf16 from(From x) {
        if constexpr (is_complex<From>::value) return __float2bfloat16_rn((float)x.re);
        else return __float2bfloat16_rn((float)x);
    }
};
#endif

/* x of element type From as element type To (casts and copies). */
template <class To, class From> TL_HD To cast(From x) { return cvt<To>::from(load(x)); }

/* ---- op parameters ---------------------------------------------------------------------- */
/* Scalars of an op (alpha, clamp bounds, nan_to_num's replacements, ...) and where to report
 * an error (integer division by zero); err may be null. */
struct Params {
    double s[TL_MAX_SCALARS];
    int* err;
};

TL_HD void report(const Params& p, int code) {
#if defined(__CUDA_ARCH__)
    if (p.err) atomicOr(p.err, code);
#else
    if (p.err) *p.err |= code;
#endif
}

/* ---- the strided indexer ---------------------------------------------------------------- */
/* Offsets (in elements) of N operands at a linear index over an n-d iteration space.
 * ndim == 0 selects the contiguous fast path: operand k is at i * step[k] (step 1 for a
 * contiguous operand, 0 for a broadcast scalar).  Otherwise dim 0 is the outermost and
 * dim ndim-1 the innermost; the linear index is split by magic-number division:
 * q = (umulhi(i, magic[d]) + i) >> shift[d] equals i / size[d] for every 32-bit i.
 * Strided launches use 32-bit linear indices (the host splits larger ones); offsets are
 * 64-bit.  torchlite/cuda/_kernels.py packs this struct (pack_indexer). */
template <int N> struct Indexer {
    i32 ndim;
    i32 pad_;
    i64 step[N];
    u32 size[TL_MAX_DIMS];
    u32 magic[TL_MAX_DIMS];
    u32 shift[TL_MAX_DIMS];
    i64 stride[TL_MAX_DIMS][N];
};
/* the layout pack_indexer writes: header, steps, three u32 tables, strides (8-aligned) */
#define TL_INDEXER_STRIDE_OFFSET(N) ((8 + 8 * (N) + 12 * TL_MAX_DIMS + 7) / 8 * 8)
static_assert(sizeof(Indexer<1>) == TL_INDEXER_STRIDE_OFFSET(1) + 8 * 1 * TL_MAX_DIMS, "Indexer<1> layout");
static_assert(sizeof(Indexer<2>) == TL_INDEXER_STRIDE_OFFSET(2) + 8 * 2 * TL_MAX_DIMS, "Indexer<2> layout");
static_assert(sizeof(Indexer<3>) == TL_INDEXER_STRIDE_OFFSET(3) + 8 * 3 * TL_MAX_DIMS, "Indexer<3> layout");
static_assert(sizeof(Indexer<4>) == TL_INDEXER_STRIDE_OFFSET(4) + 8 * 4 * TL_MAX_DIMS, "Indexer<4> layout");

TL_HD u32 umulhi(u32 a, u32 b) {
#if defined(__CUDA_ARCH__)
    return __umulhi(a, b);
#else
    return (u32)(((u64)a * b) >> 32);
#endif
}

template <int N> struct Offsets { i64 o[N]; };

template <int N> TL_HD Offsets<N> offsets(const Indexer<N>& ix, u32 i) {
    Offsets<N> r;
    for (int k = 0; k < N; k++) r.o[k] = 0;
    u32 rem = i;
    for (int d = ix.ndim - 1; d >= 0; d--) {
        u32 q = (u32)(((u64)umulhi(rem, ix.magic[d]) + rem) >> ix.shift[d]);
        i64 c = (i64)(rem - q * ix.size[d]);
        for (int k = 0; k < N; k++) r.o[k] += c * ix.stride[d][k];
        rem = q;
    }
    return r;
}

/* Offsets at linear index i: the contiguous fast path (ndim == 0: output at i, input k at
 * i * step[k]) or the strided walk.  The branch is uniform across a launch. */
template <int N> TL_HD Offsets<N> operand_offsets(const Indexer<N>& ix, i64 i) {
    if (ix.ndim == 0) {
        Offsets<N> r;
        r.o[0] = i;
        for (int k = 1; k < N; k++) r.o[k] = i * ix.step[k];
        return r;
    }
    return offsets(ix, (u32)i);
}

/* ---- the vectorised contiguous path ------------------------------------------------------ */
/* Four consecutive elements moved as one aligned access (16 bytes for float32): fewer and
 * wider memory instructions keep more bytes in flight, which a memory-bound loop needs to
 * reach the card's bandwidth.  A fast-path launch takes it when every operand either steps
 * by 1 from an address aligned to four of its elements or is a broadcast scalar (step 0),
 * read once; other steps (a coalesced strided view) keep the element loop. */
template <class T> struct alignas(4 * sizeof(T)) Vec4 { T v[4]; };

template <class T> TL_HD bool vec4_ok(const T* p, i64 step) {
    return step == 0 || (step == 1 && reinterpret_cast<u64>(p) % (4 * sizeof(T)) == 0);
}

/* Elements 4v .. 4v+3 of an operand of the contiguous path, as its compute type. */
template <class T> TL_HD void load4(typename compute<T>::type (&x)[4], const T* p, i64 step, i64 v) {
    if (step == 0) {
        const typename compute<T>::type s = load(p[0]);
        for (int k = 0; k < 4; k++) x[k] = s;
    } else {
        const Vec4<T> w = reinterpret_cast<const Vec4<T>*>(p)[v];
        for (int k = 0; k < 4; k++) x[k] = load(w.v[k]);
    }
}

#if defined(__CUDACC__) || defined(TL_HOST_EMULATION)
/* ---- launch helpers (also in tests/cuda_host/, which runs the kernels on the CPU) -------- */
TL_DEV i64 global_thread() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
TL_DEV i64 global_threads() { return (i64)gridDim.x * blockDim.x; }
#endif

}  // namespace tl
#endif
