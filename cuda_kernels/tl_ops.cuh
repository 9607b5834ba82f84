/* Elementwise op functors, one per op of the CPU's lists (torchlite/_core/kernels/
 * ewise_ops.h).  A formula with a rule of its own is a function of tl_scalar_math.cuh or
 * tl_complex.cuh that the CPU's loops (ewise_body.h) call too, so the semantics are one source:
 *   maximum/minimum propagate NaN (x != x ? x : ...), fmax/fmin drop it;
 *   integer add/sub/mul/neg/abs wrap (computed in uint64);
 *   integer division/remainder follow Python (floor), division by zero reports
 *   ERR_ZERODIV and gives 0, INT_MIN / -1 wraps;
 *   shifts by a count outside [0, bits) give 0 (left) or the sign fill (right);
 *   float floor division and remainder use CPython's algorithm.
 * A functor's operator() takes the operands in their compute type (float32 for float16 and
 * bfloat16) and the op's Params; it returns the compute type, or bool for predicates.
 * Each functor serves every dtype its op exists for (if constexpr on the type). */
#ifndef TL_OPS_CUH
#define TL_OPS_CUH
#include "tl_common.cuh"

namespace tl {

/* ---- math overloads: one name for float and double ------------------------------------- */
#define TL_MATH1(NAME, F32, F64) \
    TL_HD float NAME(float x) { return F32(x); } \
    TL_HD double NAME(double x) { return F64(x); }
#define TL_MATH2(NAME, F32, F64) \
    TL_HD float NAME(float x, float y) { return F32(x, y); } \
    TL_HD double NAME(double x, double y) { return F64(x, y); }
TL_MATH1(m_fabs, fabsf, fabs)
TL_MATH1(m_exp, expf, exp)
TL_MATH1(m_exp2, exp2f, exp2)
TL_MATH1(m_expm1, expm1f, expm1)
TL_MATH1(m_log, logf, log)
TL_MATH1(m_log2, log2f, log2)
TL_MATH1(m_log10, log10f, log10)
TL_MATH1(m_log1p, log1pf, log1p)
TL_MATH1(m_sqrt, sqrtf, sqrt)
TL_MATH1(m_sin, sinf, sin)
TL_MATH1(m_cos, cosf, cos)
TL_MATH1(m_tan, tanf, tan)
TL_MATH1(m_asin, asinf, asin)
TL_MATH1(m_acos, acosf, acos)
TL_MATH1(m_atan, atanf, atan)
TL_MATH1(m_sinh, sinhf, sinh)
TL_MATH1(m_cosh, coshf, cosh)
TL_MATH1(m_tanh, tanhf, tanh)
TL_MATH1(m_asinh, asinhf, asinh)
TL_MATH1(m_acosh, acoshf, acosh)
TL_MATH1(m_atanh, atanhf, atanh)
TL_MATH1(m_erf, erff, erf)
TL_MATH1(m_erfc, erfcf, erfc)
TL_MATH1(m_lgamma, lgammaf, lgamma)
TL_MATH1(m_floor, floorf, floor)
TL_MATH1(m_ceil, ceilf, ceil)
TL_MATH1(m_rint, rintf, rint)
TL_MATH1(m_trunc, truncf, trunc)
TL_MATH2(m_fmod, fmodf, fmod)
TL_MATH2(m_pow, powf, pow)
TL_MATH2(m_atan2, atan2f, atan2)
TL_MATH2(m_hypot, hypotf, hypot)
TL_MATH2(m_copysign, copysignf, copysign)
TL_MATH2(m_fmax, fmaxf, fmax)
TL_MATH2(m_fmin, fminf, fmin)
#if defined(__CUDACC__)
TL_MATH1(m_erfinv, erfinvf, erfinv)      /* CUDA's; the host's libm has none */
#endif
#undef TL_MATH1
#undef TL_MATH2

/* complex64/complex128: operators and the same m_ names, by tl_complex.cuh's functions (the
 * CPU's formulas: ewise_body.h's complex loops call the same ones) */
#define TL_COMPLEX_MATH(S, T, R) \
    TL_HD T operator+(T a, T b) { return tl_##S##_add(a, b); } \
    TL_HD T operator-(T a, T b) { return tl_##S##_sub(a, b); } \
    TL_HD T operator*(T a, T b) { return tl_##S##_mul(a, b); } \
    TL_HD T operator/(T a, T b) { return tl_##S##_div(a, b); } \
    TL_HD T operator-(T a) { return tl_##S##_neg(a); } \
    TL_HD bool operator==(T a, T b) { return tl_##S##_eq(a, b); } \
    TL_HD bool operator!=(T a, T b) { return !tl_##S##_eq(a, b); } \
    TL_HD T m_scale(T a, R s) { return tl_##S##_scale(a, s); } \
    TL_HD R m_fabs(T a) { return tl_##S##_abs(a); } \
    TL_HD R m_arg(T a) { return tl_##S##_arg(a); } \
    TL_HD T m_conj(T a) { return tl_##S##_conj(a); } \
    TL_HD T m_sgn(T a) { return tl_##S##_sgn(a); } \
    TL_HD T m_exp(T a) { return tl_##S##_exp(a); } \
    TL_HD T m_exp2(T a) { return tl_##S##_exp2(a); } \
    TL_HD T m_expm1(T a) { return tl_##S##_expm1(a); } \
    TL_HD T m_log(T a) { return tl_##S##_log(a); } \
    TL_HD T m_log2(T a) { return tl_##S##_log2(a); } \
    TL_HD T m_log10(T a) { return tl_##S##_log10(a); } \
    TL_HD T m_log1p(T a) { return tl_##S##_log1p(a); } \
    TL_HD T m_sqrt(T a) { return tl_##S##_sqrt(a); } \
    TL_HD T m_sin(T a) { return tl_##S##_sin(a); } \
    TL_HD T m_cos(T a) { return tl_##S##_cos(a); } \
    TL_HD T m_tan(T a) { return tl_##S##_tan(a); } \
    TL_HD T m_asin(T a) { return tl_##S##_asin(a); } \
    TL_HD T m_acos(T a) { return tl_##S##_acos(a); } \
    TL_HD T m_atan(T a) { return tl_##S##_atan(a); } \
    TL_HD T m_sinh(T a) { return tl_##S##_sinh(a); } \
    TL_HD T m_cosh(T a) { return tl_##S##_cosh(a); } \
    TL_HD T m_tanh(T a) { return tl_##S##_tanh(a); } \
    TL_HD T m_asinh(T a) { return tl_##S##_asinh(a); } \
    TL_HD T m_acosh(T a) { return tl_##S##_acosh(a); } \
    TL_HD T m_atanh(T a) { return tl_##S##_atanh(a); } \
    TL_HD T tl_nan_to_num(T a, R nan, R posinf, R neginf) { return tl_##S##_nan_to_num(a, nan, posinf, neginf); } \
    TL_HD T m_pow(T a, T b) { return tl_##S##_pow(a, b); } \
    TL_HD bool m_isnan(T a) { return tl_##S##_isnan(a); } \
    TL_HD bool m_isinf(T a) { return tl_##S##_isinf(a); } \
    TL_HD bool m_isfinite(T a) { return tl_##S##_isfinite(a); } \
    TL_HD T tl_add_alpha(T a, T b, R alpha) { return tl_##S##_add_alpha(a, b, alpha); } \
    TL_HD T tl_add_alpha(T a, T b, R alpha_re, R alpha_im) { \
        return tl_##S##_add_calpha(a, b, alpha_re, alpha_im); } \
    TL_HD T tl_lerp(T c, T a, T w) { return tl_##S##_lerp(c, a, w); } \
    TL_HD T tl_addcmul(T c, T a, T b, R value) { return tl_##S##_addcmul(c, a, b, value); } \
    TL_HD T tl_addcdiv(T c, T a, T b, R value) { return tl_##S##_addcdiv(c, a, b, value); }
TL_COMPLEX_MATH(c64, c64, float)
TL_COMPLEX_MATH(c128, c128, double)
#undef TL_COMPLEX_MATH

TL_HD float m_inf(float) { return bits_f32(0x7f800000u); }
TL_HD double m_inf(double) { return bits_f64(0x7ff0000000000000ull); }
TL_HD bool m_signbit(float x) { return (f32_bits(x) >> 31) != 0; }
TL_HD bool m_signbit(double x) { return (f64_bits(x) >> 63) != 0; }

/* The ops' formulas: tl_scalar_math.cuh's functions, the CPU loops' own source
 * (ewise_scalar.h), one overloaded name per op (tl_maximum, tl_divfloor, ...) */
#define TL_SM_FN TL_HD
#define TL_SM_U8 u8
#define TL_SM_I8 i8
#define TL_SM_I16 i16
#define TL_SM_I32 i32
#define TL_SM_I64 i64
#define TL_SM_U64 u64
#define TL_SM_INFINITY bits_f32(0x7f800000u)
#include "tl_scalar_math.cuh"

/* the integer divisions, with a division by zero reported in Params */
#define TL_REPORTING(NAME, FN) \
    template <class T> TL_HD T NAME(T x, T y, const Params& p) { \
        int e = 0; const T r = FN(x, y, &e); if (e) report(p, e); return r; }
TL_REPORTING(int_div_trunc, tl_divtrunc)
TL_REPORTING(int_div_floor, tl_divfloor)
TL_REPORTING(int_rem, tl_rem)
TL_REPORTING(int_fmod, tl_fmod)
#undef TL_REPORTING

namespace op {

#define TL_FLOAT_ONLY static_assert(is_float<C>::value, "op defined for floating types only")
#define TL_FLOAT_OR_COMPLEX static_assert(is_float<C>::value || is_complex<C>::value, \
                                          "op defined for floating and complex types only")
#define TL_INT_ONLY static_assert(!is_float<C>::value, "op defined for integer and bool types only")

/* ---- unary ----------------------------------------------------------------------------- */
/* Identity: casts and copies. */
struct Identity { template <class C> TL_HD C operator()(C x, const Params&) const { return x; } };

struct Neg {
    template <class C> TL_HD C operator()(C x, const Params&) const {
        if constexpr (is_float<C>::value || is_complex<C>::value) return -x; else return tl_neg(x);
    }
};
struct Abs {      /* |z| of a complex z is real */
    template <class C> TL_HD auto operator()(C x, const Params&) const {
        if constexpr (is_float<C>::value || is_complex<C>::value) return m_fabs(x);
        else if constexpr (same<C, bool>::value) return x;
        else return tl_abs(x);
    }
};
struct Sign {
    template <class C> TL_HD C operator()(C x, const Params&) const {
        if constexpr (same<C, bool>::value) return x; else return tl_sign(x);
    }
};
struct Sgn {       /* z / |z| (0 at 0) on complex types, sign on real ones */
    template <class C> TL_HD C operator()(C x, const Params& p) const {
        if constexpr (is_complex<C>::value) return m_sgn(x); else return Sign()(x, p);
    }
};
struct Conj {      /* complex types only (the CPU has no real conj loop either) */
    template <class C> TL_HD C operator()(C x, const Params&) const {
        static_assert(is_complex<C>::value, "conj is defined for complex types");
        return m_conj(x);
    }
};
struct Square {
    template <class C> TL_HD C operator()(C x, const Params&) const {
        if constexpr (is_float<C>::value || is_complex<C>::value) return x * x;
        else if constexpr (same<C, bool>::value) return x;
        else return tl_square(x);
    }
};
struct Relu {
    template <class C> TL_HD C operator()(C x, const Params&) const {
        if constexpr (same<C, bool>::value) return x; else return tl_relu(x);
    }
};
struct Clamp {   /* s[0] = min, s[1] = max */
    template <class C> TL_HD C operator()(C x, const Params& p) const {
        if constexpr (is_float<C>::value) return tl_clamp(x, (C)p.s[0], (C)p.s[1]);
        else return tl_clamp(x, p.s[0], p.s[1]);
    }
};
struct BitwiseNot {
    template <class C> TL_HD C operator()(C x, const Params&) const {
        TL_INT_ONLY;
        if constexpr (same<C, bool>::value) return !x; else return (C)~x;
    }
};
struct LogicalNot { template <class C> TL_HD bool operator()(C x, const Params&) const { return x == C(0); } };
struct Isnan {
    template <class C> TL_HD bool operator()(C x, const Params&) const {
        if constexpr (is_complex<C>::value) return m_isnan(x);
        else if constexpr (is_float<C>::value) return x != x; else return false;
    }
};
struct Isinf {
    template <class C> TL_HD bool operator()(C x, const Params&) const {
        if constexpr (is_complex<C>::value) return m_isinf(x);
        else if constexpr (is_float<C>::value) return m_fabs(x) == m_inf(x); else return false;
    }
};
struct Isposinf {
    template <class C> TL_HD bool operator()(C x, const Params&) const {
        if constexpr (is_float<C>::value) return x == m_inf(x); else return false;
    }
};
struct Isneginf {
    template <class C> TL_HD bool operator()(C x, const Params&) const {
        if constexpr (is_float<C>::value) return x == -m_inf(x); else return false;
    }
};
struct Isfinite {
    template <class C> TL_HD bool operator()(C x, const Params&) const {
        if constexpr (is_complex<C>::value) return m_isfinite(x);
        else if constexpr (is_float<C>::value) return m_fabs(x) < m_inf(x); else return true;
    }
};
struct Signbit {
    template <class C> TL_HD bool operator()(C x, const Params&) const {
        if constexpr (is_float<C>::value) return m_signbit(x);
        else if constexpr (same<C, bool>::value) return false;
        else return x < 0;
    }
};

/* unary ops of the floating types: F(Name, expression in x).  Those in _kernels.py's
 * UNARY_COMPLEX serve complex types too, through the complex m_ functions and operators
 * (an op without them fails to compile for a complex type) */
#define TL_FUNARY(NAME, EXPR) \
    struct NAME { template <class C> TL_HD C operator()(C x, const Params& p) const { \
        TL_FLOAT_OR_COMPLEX; (void)p; return EXPR; } };
TL_FUNARY(Reciprocal, C(1) / x)
/* angle: arg z of a complex z (real) */
struct Angle {
    template <class C> TL_HD auto operator()(C x, const Params&) const {
        TL_FLOAT_OR_COMPLEX;
        if constexpr (is_complex<C>::value) return m_arg(x); else return tl_angle(x);
    }
};
TL_FUNARY(Exp, m_exp(x))
TL_FUNARY(Exp2, m_exp2(x))
TL_FUNARY(Expm1, m_expm1(x))
TL_FUNARY(Log, m_log(x))
TL_FUNARY(Log2, m_log2(x))
TL_FUNARY(Log10, m_log10(x))
TL_FUNARY(Log1p, m_log1p(x))
TL_FUNARY(Sqrt, m_sqrt(x))
TL_FUNARY(Rsqrt, C(1) / m_sqrt(x))
TL_FUNARY(Sin, m_sin(x))
TL_FUNARY(Cos, m_cos(x))
TL_FUNARY(Tan, m_tan(x))
TL_FUNARY(Asin, m_asin(x))
TL_FUNARY(Acos, m_acos(x))
TL_FUNARY(Atan, m_atan(x))
TL_FUNARY(Sinh, m_sinh(x))
TL_FUNARY(Cosh, m_cosh(x))
TL_FUNARY(Tanh, m_tanh(x))
TL_FUNARY(Asinh, m_asinh(x))
TL_FUNARY(Acosh, m_acosh(x))
TL_FUNARY(Atanh, m_atanh(x))
TL_FUNARY(Erf, m_erf(x))
TL_FUNARY(Erfc, m_erfc(x))
#if defined(__CUDACC__)
TL_FUNARY(Erfinv, m_erfinv(x))
#endif
struct Sigmoid {
    template <class C> TL_HD C operator()(C x, const Params&) const {
        TL_FLOAT_OR_COMPLEX;
        if constexpr (is_complex<C>::value) return C(1) / (C(1) + m_exp(-x)); else return tl_sigmoid(x);
    }
};
/* the one-pass activations (formulas: tl_scalar_math.cuh) */
TL_FUNARY(Gelu, tl_gelu_of(x, m_erf(x * C(TL_SM_SQRT_HALF))))
TL_FUNARY(GeluTanh, tl_gelu_tanh_of(x, m_tanh(tl_gelu_tanh_arg(x))))
TL_FUNARY(Silu, x * tl_sigmoid(x))
TL_FUNARY(Hardswish, tl_hardswish(x))
TL_FUNARY(Hardsigmoid, tl_hardsigmoid(x))
TL_FUNARY(Floor, m_floor(x))
TL_FUNARY(Ceil, m_ceil(x))
TL_FUNARY(Round, m_rint(x))                 /* half to even */
TL_FUNARY(Trunc, m_trunc(x))
TL_FUNARY(Frac, tl_frac(x))
TL_FUNARY(Lgamma, m_lgamma(x))
/* s[0] = nan, s[1] = posinf, s[2] = neginf replacements (of each part of a complex value) */
struct NanToNum {
    template <class C> TL_HD C operator()(C x, const Params& p) const {
        TL_FLOAT_OR_COMPLEX;
        typedef typename real_of<C>::type R;
        return tl_nan_to_num(x, (R)p.s[0], (R)p.s[1], (R)p.s[2]);
    }
};
TL_FUNARY(RoundDecimals, tl_round_decimals(x, p.s[0]))
#undef TL_FUNARY

/* logit with s[0] = eps (eps < 0: no clamping) */
struct Logit {
    template <class C> TL_HD C operator()(C x, const Params& p) const { TL_FLOAT_ONLY; return tl_logit(x, p.s[0]); }
};

/* ---- binary ---------------------------------------------------------------------------- */
struct Add {
    template <class C> TL_HD C operator()(C x, C y, const Params&) const {
        if constexpr (is_float<C>::value || is_complex<C>::value) return x + y;
        else if constexpr (same<C, bool>::value) return x || y;
        else return tl_add(x, y);
    }
};
struct Sub {
    template <class C> TL_HD C operator()(C x, C y, const Params&) const {
        static_assert(!same<C, bool>::value, "no bool subtraction");
        if constexpr (is_float<C>::value || is_complex<C>::value) return x - y;
        else return tl_sub(x, y);
    }
};
struct Mul {
    template <class C> TL_HD C operator()(C x, C y, const Params&) const {
        if constexpr (is_float<C>::value || is_complex<C>::value) return x * y;
        else if constexpr (same<C, bool>::value) return x && y;
        else return tl_mul(x, y);
    }
};
struct AddAlpha {   /* x + alpha * y: alpha = s[0] + i s[1] on complex types, s[0] on the others */
    template <class C> TL_HD C operator()(C x, C y, const Params& p) const {
        typedef typename real_of<C>::type R;
        if constexpr (is_complex<C>::value) return tl_add_alpha(x, y, (R)p.s[0], (R)p.s[1]);
        else if constexpr (is_float<C>::value) return tl_add_alpha(x, y, (C)p.s[0]);
        else return tl_add_alpha(x, y, (i64)p.s[0]);
    }
};
struct Div {
    template <class C> TL_HD C operator()(C x, C y, const Params&) const { TL_FLOAT_OR_COMPLEX; return x / y; }
};
struct DivTrunc {
    template <class C> TL_HD C operator()(C x, C y, const Params& p) const {
        if constexpr (is_float<C>::value) return tl_divtrunc(x, y); else return int_div_trunc(x, y, p);
    }
};
struct DivFloor {
    template <class C> TL_HD C operator()(C x, C y, const Params& p) const {
        if constexpr (is_float<C>::value) return tl_divfloor(x, y); else return int_div_floor(x, y, p);
    }
};
struct Remainder {
    template <class C> TL_HD C operator()(C x, C y, const Params& p) const {
        if constexpr (is_float<C>::value) return tl_rem(x, y); else return int_rem(x, y, p);
    }
};
struct Fmod {
    template <class C> TL_HD C operator()(C x, C y, const Params& p) const {
        if constexpr (is_float<C>::value) return m_fmod(x, y); else return int_fmod(x, y, p);
    }
};
struct Pow {
    template <class C> TL_HD C operator()(C x, C y, const Params&) const {
        if constexpr (is_float<C>::value || is_complex<C>::value) return m_pow(x, y);
        else return tl_ipow(x, y);
    }
};
struct Maximum {   /* NaN propagates */
    template <class C> TL_HD C operator()(C x, C y, const Params&) const {
        if constexpr (same<C, bool>::value) return x || y; else return tl_maximum(x, y);
    }
};
struct Minimum {
    template <class C> TL_HD C operator()(C x, C y, const Params&) const {
        if constexpr (same<C, bool>::value) return x && y; else return tl_minimum(x, y);
    }
};
#define TL_FBINARY(NAME, EXPR) \
    struct NAME { template <class C> TL_HD C operator()(C x, C y, const Params& p) const { \
        TL_FLOAT_ONLY; (void)p; return EXPR; } };
TL_FBINARY(Atan2, m_atan2(x, y))
TL_FBINARY(Hypot, m_hypot(x, y))
TL_FBINARY(Copysign, m_copysign(x, y))
TL_FBINARY(Fmax, m_fmax(x, y))
TL_FBINARY(Fmin, m_fmin(x, y))
TL_FBINARY(Xlogy, tl_xlogy(x, y))
TL_FBINARY(ThresholdBackward, tl_threshold_backward(x, y, (C)p.s[0]))   /* relu's gradient x at input y */
/* the one-pass activations' gradients x at input y */
TL_FBINARY(GeluBackward, tl_gelu_backward_of(x, y, m_erf(y * C(TL_SM_SQRT_HALF)), m_exp(y * y * C(-0.5))))
TL_FBINARY(GeluTanhBackward, tl_gelu_tanh_backward_of(x, y, m_tanh(tl_gelu_tanh_arg(y))))
TL_FBINARY(SiluBackward, tl_silu_backward_of(x, y, tl_sigmoid(y)))
TL_FBINARY(HardswishBackward, tl_hardswish_backward(x, y))
TL_FBINARY(HardsigmoidBackward, tl_hardsigmoid_backward(x, y))
#undef TL_FBINARY

#define TL_PREDICATE(NAME, EXPR) \
    struct NAME { template <class C> TL_HD bool operator()(C x, C y, const Params&) const { return EXPR; } };
TL_PREDICATE(Eq, x == y)
TL_PREDICATE(Ne, x != y)
TL_PREDICATE(Lt, x < y)
TL_PREDICATE(Le, x <= y)
TL_PREDICATE(Gt, x > y)
TL_PREDICATE(Ge, x >= y)
TL_PREDICATE(LogicalAnd, (x != C(0)) && (y != C(0)))
TL_PREDICATE(LogicalOr, (x != C(0)) || (y != C(0)))
TL_PREDICATE(LogicalXor, (x != C(0)) != (y != C(0)))
#undef TL_PREDICATE

#define TL_IBINARY(NAME, EXPR) \
    struct NAME { template <class C> TL_HD C operator()(C x, C y, const Params& p) const { \
        TL_INT_ONLY; (void)p; return EXPR; } };
TL_IBINARY(BitwiseAnd, (C)(x & y))
TL_IBINARY(BitwiseOr, (C)(x | y))
TL_IBINARY(BitwiseXor, (C)(x ^ y))
TL_IBINARY(Shl, tl_shl(x, y))
TL_IBINARY(Shr, tl_shr(x, y))
#undef TL_IBINARY

/* ---- ternary: operands (c, x, y) ------------------------------------------------------- */
/* where(c, x, y): moves bits, so one instance per element size serves every dtype */
struct Where {
    template <class C, class T> TL_HD T operator()(C c, T x, T y, const Params&) const { return c ? x : y; }
};
/* lerp(start c, end x, weight y) */
struct Lerp {
    template <class C> TL_HD C operator()(C c, C x, C y, const Params&) const {
        TL_FLOAT_OR_COMPLEX; return tl_lerp(c, x, y);
    }
};
/* c + s[0] * x * y and c + s[0] * x / y (s[0] real) */
struct Addcmul {
    template <class C> TL_HD C operator()(C c, C x, C y, const Params& p) const {
        TL_FLOAT_OR_COMPLEX; return tl_addcmul(c, x, y, (typename real_of<C>::type)p.s[0]);
    }
};
struct Addcdiv {
    template <class C> TL_HD C operator()(C c, C x, C y, const Params& p) const {
        TL_FLOAT_OR_COMPLEX; return tl_addcdiv(c, x, y, (typename real_of<C>::type)p.s[0]);
    }
};

#undef TL_FLOAT_ONLY
#undef TL_FLOAT_OR_COMPLEX
#undef TL_INT_ONLY
}  // namespace op
}  // namespace tl
#endif
