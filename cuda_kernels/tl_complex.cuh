/* Complex arithmetic and functions, one source for both devices: the CPU's elementwise loops,
 * complex reductions and eigenvalue code (torchlite/_core/kernels/cplx.h includes this file as
 * C99) and the CUDA kernels (tl_common.cuh includes it inside namespace tl), so a complex op
 * computes the same formula on either device.
 *
 * The formulas are the textbook ones, arranged where it matters so that they neither overflow
 * nor lose the small part: Smith's division, hypot for |z|, the half-angle form of sqrt (its
 * argument scaled by a power of 4 near the ends of the range), and tanh through exp(-2|x|)
 * for large |x|.  The inverse functions follow Kahan ("Branch cuts
 * for complex elementary functions", 1987): asin, acos and asinh from products of sqrt(1 - z)
 * and sqrt(1 + z) whose terms never cancel, 1 - z formed as (1 - x, -y) so that a signed zero
 * picks the side of a branch cut (C99's, NumPy's and PyTorch's cuts and values); atanh from
 * log1p and atan2; asymptotic forms past 1/eps and the Taylor term below sqrt(eps), so that
 * nothing overflows or underflows on the way, and C99 Annex G's values at infinities and NaN.
 * log1p and expm1 keep their small results: log|1 + z| = log1p(2x + x^2 + y^2) / 2 with that
 * sum free of cancellation (formed in double for complex64, with fma's exact products for
 * complex128), expm1's real part expm1(x) cos y - 2 sin^2(y / 2).
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
TL_CPLX_FN T tl_##S##_sqrt_(T a) {             /* the half-angle form, exact for reals */      \
    R t = sqrt##F((fabs##F(a.re) + tl_##S##_abs(a)) * (R)0.5);                                  \
    if (a.re >= 0) return tl_##S##_mk(t, a.im / (2 * t));                                       \
    return tl_##S##_mk(fabs##F(a.im) / (2 * t), copysign##F(t, a.im)); }                        \
TL_CPLX_FN T tl_##S##_sqrt(T a) {                                                               \
    if (a.re == 0 && a.im == 0) return tl_##S##_mk(0, a.im);                                    \
    if (fabs##F(a.im) == (R)TL_CPLX_INFINITY) return tl_##S##_mk((R)TL_CPLX_INFINITY, a.im);    \
    R m = fmax##F(fabs##F(a.re), fabs##F(a.im));                                                \
    int big = sizeof(R) == 4 ? 120 : 1000, k = sizeof(R) == 4 ? 24 : 52;                        \
    if (m < ldexp##F((R)1, -big) || m > ldexp##F((R)1, big)) {                                  \
        /* scaled by 4^+-k (exact): |a| + |re| cannot overflow, tiny parts keep their bits */  \
        int e = m < 1 ? 2 * k : -2 * k;                                                         \
        T r = tl_##S##_sqrt_(tl_##S##_mk(ldexp##F(a.re, e), ldexp##F(a.im, e)));                \
        return tl_##S##_mk(ldexp##F(r.re, -e / 2), ldexp##F(r.im, -e / 2)); }                   \
    return tl_##S##_sqrt_(a); }                                                                 \
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
TL_CPLX_FN T tl_##S##_add_calpha(T a, T b, R alpha_re, R alpha_im) {    /* a + alpha b */       \
    if (alpha_im == 0) return tl_##S##_add_alpha(a, b, alpha_re);                               \
    return tl_##S##_add(a, tl_##S##_mul(tl_##S##_mk(alpha_re, alpha_im), b)); }                  \
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
    return fabs##F(a.re) < (R)TL_CPLX_INFINITY && fabs##F(a.im) < (R)TL_CPLX_INFINITY; }         \
TL_CPLX_FN int tl_##S##_iszero(T a) { return a.re == 0 && a.im == 0; }     /* logical_not */   \
/* ---- the functions below: constants by the precision (eps = R's machine epsilon) ------- */ \
TL_CPLX_FN R tl_##S##_eps_(void) {                                                              \
    return sizeof(R) == 4 ? (R)1.1920928955078125e-07 : (R)2.220446049250313e-16; }            \
TL_CPLX_FN R tl_##S##_sqrt_eps_(void) {                                                         \
    return sizeof(R) == 4 ? (R)3.4526698300124393e-04 : (R)1.4901161193847656e-08; }           \
TL_CPLX_FN R tl_##S##_inf_(void) { return (R)TL_CPLX_INFINITY; }                                \
TL_CPLX_FN R tl_##S##_ln2_(void) { return (R)0.6931471805599453; }                               \
TL_CPLX_FN R tl_##S##_pio2_(void) { return (R)1.5707963267948966; }                              \
TL_CPLX_FN R tl_##S##_loghypot(R a, R b) {     /* log sqrt(a^2 + b^2), no overflow on the way */ \
    R h = hypot##F(a, b);                                                                       \
    if (h == tl_##S##_inf_() && fabs##F(a) < h && fabs##F(b) < h)                              \
        return log##F(hypot##F(a * (R)0.5, b * (R)0.5)) + tl_##S##_ln2_();                      \
    return log##F(h); }                                                                         \
TL_CPLX_FN R tl_##S##_x2y2p2x(R x, R y) {      /* 2x + x^2 + y^2 = |1 + z|^2 - 1, |x|, |y| <= 2 */ \
    if (sizeof(R) < sizeof(double)) {          /* float parts: the squares exact in double */  \
        double dx = (double)x, dy = (double)y;                                                  \
        return (R)(2 * dx + (dx * dx + dy * dy)); }                                             \
    R xx = x * x, yy = y * y, tx = 2 * x;      /* the products' rounding errors by fma */      \
    R exx = fma##F(x, x, -xx), eyy = fma##F(y, y, -yy);                                         \
    R s1 = xx + yy, b1 = s1 - xx, e1 = (xx - (s1 - b1)) + (yy - b1);   /* two-sums */          \
    R s2 = tx + s1, b2 = s2 - tx, e2 = (tx - (s2 - b2)) + (s1 - b2);                           \
    return s2 + (e2 + (e1 + (exx + eyy))); }                                                   \
TL_CPLX_FN T tl_##S##_log1p(T a) {             /* log(1 + z), exact to its last bits near 0 */ \
    R x = a.re, y = a.im, u = 1 + x, h = hypot##F(u, y);                                        \
    R theta = atan2##F(y, u);                                                                   \
    if (y == 0 && x >= -1) return tl_##S##_mk(log1p##F(x), theta);   /* real: log1p(-0) = -0 */ \
    if (h >= (R)0.5 && h <= 2)                 /* log|1 + z| near 0: through log1p */          \
        return tl_##S##_mk((R)0.5 * log1p##F(tl_##S##_x2y2p2x(x, y)), theta);                   \
    return tl_##S##_mk(tl_##S##_loghypot(u, y), theta); }   /* u exact where |1 + z| < 1/2 */  \
TL_CPLX_FN T tl_##S##_expm1(T a) {             /* exp(z) - 1, its small real part kept */      \
    R x = a.re, y = a.im;                                                                       \
    if (y == 0) return tl_##S##_mk(expm1##F(x), y);                                             \
    if (!(fabs##F(y) < tl_##S##_inf_()) && fabs##F(x) == tl_##S##_inf_())   /* exp(z)'s C99 */  \
        return x > 0 ? tl_##S##_mk(x, y - y) : tl_##S##_mk(-1, copysign##F((R)0, y));           \
    if (x > (R)(sizeof(R) == 4 ? 80 : 700)) {  /* exp(x) may overflow where exp(z) does not */ \
        R e = exp##F(x * (R)0.5);                                                               \
        return tl_##S##_mk((e * cos##F(y)) * e, (e * sin##F(y)) * e); }                         \
    R s = sin##F(y * (R)0.5);                                                                   \
    return tl_##S##_mk(expm1##F(x) * cos##F(y) - 2 * s * s, exp##F(x) * sin##F(y)); }           \
TL_CPLX_FN T tl_##S##_exp2(T a) {              /* 2^z = 2^x (cos(y ln 2) + i sin(y ln 2)) */    \
    if (a.im == 0) return tl_##S##_mk(exp2##F(a.re), a.im);                                     \
    if (!(fabs##F(a.im) < tl_##S##_inf_()) && fabs##F(a.re) == tl_##S##_inf_())   /* cexp's */ \
        return a.re > 0 ? tl_##S##_mk(a.re, a.im - a.im) : tl_##S##_mk(0, copysign##F((R)0, a.im)); \
    R t, tlo;                                  /* y ln 2 = t + tlo, tlo below t's last bit */  \
    if (sizeof(R) < sizeof(double)) {                                                           \
        double td = (double)a.im * 0.6931471805599453;                                          \
        t = (R)td; tlo = (R)(td - (double)t);                                                   \
    } else {                                   /* ln 2 = hi + lo, y hi exact by fma */         \
        t = a.im * tl_##S##_ln2_();                                                             \
        tlo = fma##F(a.im, tl_##S##_ln2_(), -t) + a.im * (R)2.3190468138462996e-17; }           \
    R c = cos##F(t), s = sin##F(t), cr, sr;    /* cos/sin(t + tlo): t rotated by tlo */       \
    if (fabs##F(tlo) < tl_##S##_sqrt_eps_()) { cr = c - s * tlo; sr = s + c * tlo; }            \
    else {                                     /* |t| past 1/sqrt(eps): tlo^2 counts */        \
        R cl = cos##F(tlo), sl = sin##F(tlo);                                                   \
        cr = c * cl - s * sl; sr = s * cl + c * sl; }                                           \
    if (a.re > (R)(sizeof(R) == 4 ? 120 : 1000)) {   /* 2^x may overflow where 2^z does not */ \
        R e = exp2##F(a.re * (R)0.5);                                                           \
        return tl_##S##_mk((e * cr) * e, (e * sr) * e); }                                       \
    R m = exp2##F(a.re);                                                                        \
    return tl_##S##_mk(m * cr, m * sr); }                                                       \
TL_CPLX_FN R tl_##S##_nan_to_num_part(R v, R nan, R posinf, R neginf) {                         \
    return v != v ? nan : v == tl_##S##_inf_() ? posinf : v == -tl_##S##_inf_() ? neginf : v; }  \
TL_CPLX_FN T tl_##S##_nan_to_num(T a, R nan, R posinf, R neginf) {   /* each part on its own */ \
    return tl_##S##_mk(tl_##S##_nan_to_num_part(a.re, nan, posinf, neginf),                     \
                       tl_##S##_nan_to_num_part(a.im, nan, posinf, neginf)); }                  \
/* asinh on the first quadrant (x, y >= 0, no NaN); the others by its symmetries */            \
TL_CPLX_FN T tl_##S##_asinh_q1(R x, R y) {                                                      \
    if (x < tl_##S##_sqrt_eps_() && y < tl_##S##_sqrt_eps_())                                   \
        return tl_##S##_mk(x, y);              /* z - z^3/6: the cube below eps */             \
    if (x > 1 / tl_##S##_eps_() || y > 1 / tl_##S##_eps_())   /* log 2z + 1/(4 z^2) - ... */   \
        return tl_##S##_mk(tl_##S##_loghypot(x, y) + tl_##S##_ln2_(), atan2##F(y, x));          \
    /* asinh z = -i asin(iz), asin w by Kahan's formula: w = -y + ix, 1 - w and 1 + w */        \
    T s1 = tl_##S##_sqrt(tl_##S##_mk(1 + y, -x)), s2 = tl_##S##_sqrt(tl_##S##_mk(1 - y, x));      \
    return tl_##S##_mk(asinh##F(s1.re * s2.im - s1.im * s2.re),                                 \
                       atan2##F(y, s1.re * s2.re - s1.im * s2.im)); }                           \
TL_CPLX_FN T tl_##S##_asinh(T a) {             /* odd, and asinh(conj z) = conj(asinh z) */    \
    R x = a.re, y = a.im;                                                                       \
    if (x != x || y != y) {                    /* C99 Annex G */                               \
        if (fabs##F(x) == tl_##S##_inf_()) return tl_##S##_mk(x, y);                            \
        if (fabs##F(y) == tl_##S##_inf_()) return tl_##S##_mk(copysign##F(y, x), x);            \
        if (y == 0) return tl_##S##_mk(x, y);                                                   \
        return tl_##S##_mk(x + y, x + y); }                                                     \
    T r = tl_##S##_asinh_q1(fabs##F(x), fabs##F(y));                                            \
    return tl_##S##_mk(copysign##F(r.re, x), copysign##F(r.im, y)); }                           \
TL_CPLX_FN T tl_##S##_asin(T a) {              /* asin z = -i asinh(iz) */                     \
    T r = tl_##S##_asinh(tl_##S##_mk(-a.im, a.re));                                             \
    return tl_##S##_mk(r.im, -r.re); }                                                          \
TL_CPLX_FN T tl_##S##_acos(T a) {                                                               \
    R x = a.re, y = a.im, ax = fabs##F(x), ay = fabs##F(y);                                     \
    if (x != x || y != y) {                    /* C99 Annex G */                               \
        if (ay == tl_##S##_inf_()) return tl_##S##_mk(x, -y);                                   \
        if (ax == tl_##S##_inf_()) return tl_##S##_mk(y, -tl_##S##_inf_());                     \
        if (x == 0) return tl_##S##_mk(tl_##S##_pio2_(), y);                                    \
        return tl_##S##_mk(x + y, x + y); }                                                     \
    if (ax < tl_##S##_sqrt_eps_() && ay < tl_##S##_sqrt_eps_())                                 \
        return tl_##S##_mk(tl_##S##_pio2_() - x, -y);        /* pi/2 - z - z^3/6 */            \
    if (ax > 1 / tl_##S##_eps_() || ay > 1 / tl_##S##_eps_())   /* -i log 2z, conj below */    \
        return tl_##S##_mk(atan2##F(ay, x),                                                     \
                           -copysign##F(tl_##S##_loghypot(x, y) + tl_##S##_ln2_(), y));         \
    /* Kahan: 2 atan(Re sqrt(1 - z) / Re sqrt(1 + z)), asinh Im(conj(sqrt(1 + z)) sqrt(1 - z)) */ \
    T s1 = tl_##S##_sqrt(tl_##S##_mk(1 - x, -y)), s2 = tl_##S##_sqrt(tl_##S##_mk(1 + x, y));      \
    return tl_##S##_mk(2 * atan2##F(s1.re, s2.re), asinh##F(s2.re * s1.im - s2.im * s1.re)); }  \
TL_CPLX_FN T tl_##S##_acosh(T a) {             /* +-i acos z, the real part >= 0 (C99) */      \
    if (a.re != a.re || a.im != a.im) {                                                         \
        if (fabs##F(a.re) == tl_##S##_inf_() || fabs##F(a.im) == tl_##S##_inf_())               \
            return tl_##S##_mk(tl_##S##_inf_(), a.re + a.im);                                   \
        if (a.re == 0) return tl_##S##_mk(a.im, tl_##S##_pio2_());    /* glibc's, PyTorch's */  \
        return tl_##S##_mk(a.re + a.im, a.re + a.im); }                                         \
    T w = tl_##S##_acos(a);                    /* Im acos z has the sign opposite to y's */    \
    return copysign##F((R)1, w.im) < 0 ? tl_##S##_mk(-w.im, w.re) : tl_##S##_mk(w.im, -w.re); } \
/* atanh on the first quadrant (x, y >= 0, no NaN) */                                          \
TL_CPLX_FN T tl_##S##_atanh_q1(R x, R y) {                                                      \
    if (x > 1 / tl_##S##_eps_() || y > 1 / tl_##S##_eps_()) {   /* 1/z + i pi/2 + O(z^-3) */   \
        R re;                                  /* Re 1/z = x / |z|^2, scaled */                \
        if (x == tl_##S##_inf_() || y == tl_##S##_inf_()) re = 0;                              \
        else if (x >= y) { R t = y / x; re = 1 / (x * (1 + t * t)); }                          \
        else { R t = x / y; re = (t / y) / (1 + t * t); }                                      \
        return tl_##S##_mk(re, tl_##S##_pio2_()); }                                             \
    R d = (1 - x) * (1 - x) + y * y, re;       /* |1 - z|^2 */                                 \
    if (d < (R)0.25)                           /* near z = 1: the two logs add, both > 0 */    \
        re = (R)0.5 * (tl_##S##_loghypot(1 + x, y) - tl_##S##_loghypot(1 - x, y));              \
    else                                       /* log(|1 + z|^2 / |1 - z|^2) / 4 */            \
        re = (R)0.25 * log1p##F(4 * x / d);                                                     \
    return tl_##S##_mk(re, (R)0.5 * atan2##F(2 * y, (1 - x) * (1 + x) - y * y)); }              \
TL_CPLX_FN T tl_##S##_atanh(T a) {             /* odd, and atanh(conj z) = conj(atanh z) */    \
    R x = a.re, y = a.im;                                                                       \
    if (x != x || y != y) {                    /* C99 Annex G */                               \
        if (fabs##F(y) == tl_##S##_inf_())                                                      \
            return tl_##S##_mk(copysign##F((R)0, x), copysign##F(tl_##S##_pio2_(), y));         \
        if (fabs##F(x) == tl_##S##_inf_() || x == 0) return tl_##S##_mk(copysign##F((R)0, x), y); \
        return tl_##S##_mk(x + y, x + y); }                                                     \
    T r = tl_##S##_atanh_q1(fabs##F(x), fabs##F(y));                                            \
    return tl_##S##_mk(copysign##F(r.re, x), copysign##F(r.im, y)); }                           \
TL_CPLX_FN T tl_##S##_atan(T a) {              /* atan z = -i atanh(iz) */                     \
    T r = tl_##S##_atanh(tl_##S##_mk(-a.im, a.re));                                             \
    return tl_##S##_mk(r.im, -r.re); }

#endif
