/* Complex arithmetic and functions, one source for both devices: the CPU's elementwise loops,
 * complex reductions and eigenvalue code (torchlite/_core/kernels/cplx.h includes this file as
 * C99) and the CUDA kernels (tl_common.cuh includes it inside namespace tl), so a complex op
 * computes the same formula on either device.
 *
 * The formulas are the textbook ones, arranged where it matters so that they neither overflow
 * nor lose the small part: Smith's division, hypot for |z|, the half-angle form of sqrt, and
 * tanh through exp(-2|x|) for large |x|.
 *
 * Written in the common subset of C99 and C++ (no overloads, references or templates; the
 * libm names with their "f" suffix, which CUDA's device library has too).  TL_DEF_COMPLEX(S,
 * T, R, F) defines one precision's functions tl_<S>_add, ...: S the name's suffix, T the
 * struct (members re and im), R its real type, F the libm suffix ("f" or nothing).  The
 * includer defines first:
 *   TL_CPLX_FN            the qualifiers of a function
 *   TL_CPLX_INFINITY      a float expression for +infinity
 *   TL_CPLX_NAN           a float expression for a quiet NaN */
#ifndef TL_COMPLEX_CUH
#define TL_COMPLEX_CUH

#define TL_DEF_COMPLEX(S, T, R, F)                                                              \
TL_CPLX_FN T tl_##S##_mk(R re, R im) { T z; z.re = re; z.im = im; return z; }                   \
TL_CPLX_FN T tl_##S##_neg(T a) { return tl_##S##_mk(-a.re, -a.im); }                            \
TL_CPLX_FN T tl_##S##_conj(T a) { return tl_##S##_mk(a.re, -a.im); }                           \
TL_CPLX_FN T tl_##S##_add(T a, T b) { return tl_##S##_mk(a.re + b.re, a.im + b.im); }           \
TL_CPLX_FN T tl_##S##_sub(T a, T b) { return tl_##S##_mk(a.re - b.re, a.im - b.im); }           \
TL_CPLX_FN T tl_##S##_mul(T a, T b) {                                                           \
    return tl_##S##_mk(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); }                 \
TL_CPLX_FN T tl_##S##_scale(T a, R s) { return tl_##S##_mk(a.re * s, a.im * s); }               \
TL_CPLX_FN T tl_##S##_div(T a, T b) {          /* Smith's algorithm: no overflow in |b|^2 */   \
    if (fabs##F(b.re) >= fabs##F(b.im)) {                                                       \
        if (b.re == 0 && b.im == 0)   /* as C99's Annex G: a finite nonzero / 0 is infinite */ \
            return tl_##S##_mk(a.re / fabs##F(b.re), a.im / fabs##F(b.re));                     \
        R r = b.im / b.re, den = b.re + b.im * r;                                               \
        return tl_##S##_mk((a.re + a.im * r) / den, (a.im - a.re * r) / den);                  \
    }                                                                                           \
    R r = b.re / b.im, den = b.re * r + b.im;                                                   \
    return tl_##S##_mk((a.re * r + a.im) / den, (a.im * r - a.re) / den); }                     \
TL_CPLX_FN R tl_##S##_abs(T a) { return hypot##F(a.re, a.im); }                                 \
TL_CPLX_FN R tl_##S##_arg(T a) { return atan2##F(a.im, a.re); }                                 \
TL_CPLX_FN T tl_##S##_exp(T a) {                                                                \
    R m = exp##F(a.re);                                                                         \
    if (a.im == 0) return tl_##S##_mk(m, a.im);     /* exp of a real stays real (and exact) */ \
    return tl_##S##_mk(m * cos##F(a.im), m * sin##F(a.im)); }                                   \
TL_CPLX_FN T tl_##S##_log(T a) { return tl_##S##_mk(log##F(tl_##S##_abs(a)), tl_##S##_arg(a)); } \
TL_CPLX_FN T tl_##S##_sqrt(T a) {              /* the half-angle form, exact for reals */      \
    if (a.re == 0 && a.im == 0) return tl_##S##_mk(0, a.im);                                    \
    if (fabs##F(a.im) == (R)TL_CPLX_INFINITY) return tl_##S##_mk((R)TL_CPLX_INFINITY, a.im);    \
    R t = sqrt##F((fabs##F(a.re) + tl_##S##_abs(a)) * (R)0.5);                                  \
    if (a.re >= 0) return tl_##S##_mk(t, a.im / (2 * t));                                       \
    return tl_##S##_mk(fabs##F(a.im) / (2 * t), copysign##F(t, a.im)); }                        \
TL_CPLX_FN T tl_##S##_sin(T a) {                                                                \
    return tl_##S##_mk(sin##F(a.re) * cosh##F(a.im), cos##F(a.re) * sinh##F(a.im)); }           \
TL_CPLX_FN T tl_##S##_cos(T a) {                                                                \
    return tl_##S##_mk(cos##F(a.re) * cosh##F(a.im), -sin##F(a.re) * sinh##F(a.im)); }          \
TL_CPLX_FN T tl_##S##_sinh(T a) {                                                               \
    return tl_##S##_mk(sinh##F(a.re) * cos##F(a.im), cosh##F(a.re) * sin##F(a.im)); }           \
TL_CPLX_FN T tl_##S##_cosh(T a) {                                                               \
    return tl_##S##_mk(cosh##F(a.re) * cos##F(a.im), sinh##F(a.re) * sin##F(a.im)); }           \
TL_CPLX_FN T tl_##S##_tanh(T a) {                                                               \
    R x = a.re, y = a.im;                                                                       \
    if (fabs##F(x) > 20) {                        /* cosh(2x) would overflow; tanh -> +-1 */   \
        R e = exp##F(-2 * fabs##F(x));                                                          \
        return tl_##S##_mk(copysign##F((R)1, x), 4 * sin##F(y) * cos##F(y) * e); }                 \
    R den = cosh##F(2 * x) + cos##F(2 * y);                                                     \
    return tl_##S##_mk(sinh##F(2 * x) / den, sin##F(2 * y) / den); }                            \
TL_CPLX_FN T tl_##S##_tan(T a) {               /* tan(z) = -i tanh(iz) */                      \
    T t = tl_##S##_tanh(tl_##S##_mk(-a.im, a.re));                                              \
    return tl_##S##_mk(t.im, -t.re); }                                                          \
TL_CPLX_FN T tl_##S##_recip(T a) { return tl_##S##_div(tl_##S##_mk(1, 0), a); }                 \
TL_CPLX_FN T tl_##S##_rsqrt(T a) { return tl_##S##_recip(tl_##S##_sqrt(a)); }                   \
TL_CPLX_FN T tl_##S##_sigmoid(T a) {                                                            \
    return tl_##S##_recip(tl_##S##_add(tl_##S##_mk(1, 0), tl_##S##_exp(tl_##S##_neg(a)))); }    \
TL_CPLX_FN T tl_##S##_logb(T a, R inv_ln_base) {                                                \
    return tl_##S##_scale(tl_##S##_log(a), inv_ln_base); }                                      \
TL_CPLX_FN T tl_##S##_log2(T a) { return tl_##S##_logb(a, (R)1.4426950408889634); }            \
TL_CPLX_FN T tl_##S##_log10(T a) { return tl_##S##_logb(a, (R)0.43429448190325176); }          \
TL_CPLX_FN T tl_##S##_square(T a) { return tl_##S##_mul(a, a); }                                \
TL_CPLX_FN T tl_##S##_add_alpha(T a, T b, R alpha) {     /* a real alpha scales b part by part */ \
    return tl_##S##_add(a, tl_##S##_scale(b, alpha)); }                                          \
TL_CPLX_FN T tl_##S##_lerp(T start, T end, T weight) {   /* the real lerp's two-sided form */  \
    T d = tl_##S##_sub(end, start);                                                             \
    return tl_##S##_abs(weight) < (R)0.5                                                        \
        ? tl_##S##_add(start, tl_##S##_mul(weight, d))                                          \
        : tl_##S##_sub(end, tl_##S##_mul(d, tl_##S##_sub(tl_##S##_mk(1, 0), weight))); }        \
TL_CPLX_FN T tl_##S##_addcmul(T c, T a, T b, R value) {  /* c + (a b) scaled by the real value */ \
    return tl_##S##_add(c, tl_##S##_scale(tl_##S##_mul(a, b), value)); }                      \
TL_CPLX_FN T tl_##S##_addcdiv(T c, T a, T b, R value) {                                         \
    return tl_##S##_add(c, tl_##S##_scale(tl_##S##_div(a, b), value)); }                      \
TL_CPLX_FN T tl_##S##_sgn(T a) {               /* z / |z|, and 0 at 0 (torch.sgn) */           \
    R m = tl_##S##_abs(a);                                                                      \
    return m == 0 ? tl_##S##_mk(0, 0) : tl_##S##_mk(a.re / m, a.im / m); }                      \
TL_CPLX_FN T tl_##S##_pow(T a, T b) {                                                           \
    if (b.re == 0 && b.im == 0) return tl_##S##_mk(1, 0);                                       \
    if (a.re == 0 && a.im == 0) {                                                               \
        if (b.im == 0 && b.re > 0) return tl_##S##_mk(0, 0);                                    \
        return tl_##S##_mk((R)TL_CPLX_NAN, (R)TL_CPLX_NAN); }                                   \
    if (b.im == 0 && fabs##F(b.re) <= 64 && b.re == (R)(int)b.re) {                             \
        /* small integer powers by repeated squaring, as NumPy: exact for Gaussian integers */ \
        int e = (int)b.re, k = e < 0 ? -e : e; T r = tl_##S##_mk(1, 0), p = a;                  \
        while (k) { if (k & 1) r = tl_##S##_mul(r, p); p = tl_##S##_mul(p, p); k >>= 1; }       \
        return e < 0 ? tl_##S##_recip(r) : r; }                                                 \
    return tl_##S##_exp(tl_##S##_mul(b, tl_##S##_log(a))); }                                    \
TL_CPLX_FN int tl_##S##_eq(T a, T b) { return a.re == b.re && a.im == b.im; }                   \
TL_CPLX_FN int tl_##S##_isnan(T a) { return a.re != a.re || a.im != a.im; }                     \
TL_CPLX_FN int tl_##S##_isinf(T a) {                                                            \
    return fabs##F(a.re) == (R)TL_CPLX_INFINITY || fabs##F(a.im) == (R)TL_CPLX_INFINITY; }      \
TL_CPLX_FN int tl_##S##_isfinite(T a) {          /* false for NaN parts too */                 \
    return fabs##F(a.re) < (R)TL_CPLX_INFINITY && fabs##F(a.im) < (R)TL_CPLX_INFINITY; }

#endif
