/* The elementwise loops of torchlite.special: one loop per function and dtype (float32,
 * float64), in the signature of the elementwise kernels (ewise.h's tl_loop), so that
 * elementwise.pyx's plan driver runs them over strided, broadcast operands in parallel.
 *
 * Each function is a double function of special_{gamma,bessel,math}.h; the float32 loops
 * compute in double and round once, which makes them accurate to the last bit of float32 in
 * nearly all cases (PyTorch's float kernels evaluate the same formulas in float).
 *
 * The op lists are X-macros: the codes, the names special.pyx exports and the loop tables
 * come from one list each. */
#ifndef TL_SPECIAL_LOOPS_H
#define TL_SPECIAL_LOOPS_H
#include <stdint.h>
#include "special_dd.h"
#include "special_gamma.h"
#include "special_bessel.h"
#include "special_math.h"

typedef int (*tl_sp_loop)(char** d, const int64_t* s, int64_t n, const double* P);

/* binary functions with the degree as a double, as PyTorch passes it */
static double tl_sp_cheb_t(double x, double n) { return tl_chebyshev(x, tl_poly_degree(n), 0); }
static double tl_sp_cheb_u(double x, double n) { return tl_chebyshev(x, tl_poly_degree(n), 1); }
static double tl_sp_cheb_v(double x, double n) { return tl_chebyshev(x, tl_poly_degree(n), 2); }
static double tl_sp_cheb_w(double x, double n) { return tl_chebyshev(x, tl_poly_degree(n), 3); }
static double tl_sp_scheb_t(double x, double n) { return tl_chebyshev_shifted(x, tl_poly_degree(n), 0); }
static double tl_sp_scheb_u(double x, double n) { return tl_chebyshev_shifted(x, tl_poly_degree(n), 1); }
static double tl_sp_scheb_v(double x, double n) { return tl_chebyshev_shifted(x, tl_poly_degree(n), 2); }
static double tl_sp_scheb_w(double x, double n) { return tl_chebyshev_shifted(x, tl_poly_degree(n), 3); }
static double tl_sp_hermite_h64(double x, double n) { return tl_hermite_h(x, tl_poly_degree(n), 512); }
static double tl_sp_hermite_h32(double x, double n) { return tl_hermite_h(x, tl_poly_degree(n), 128); }
static double tl_sp_hermite_he64(double x, double n) { return tl_hermite_he(x, tl_poly_degree(n), 512); }
static double tl_sp_hermite_he32(double x, double n) { return tl_hermite_he(x, tl_poly_degree(n), 128); }
static double tl_sp_laguerre_l(double x, double n) { return tl_laguerre_l(x, tl_poly_degree(n)); }
static double tl_sp_legendre_p(double x, double n) { return tl_legendre_p(x, tl_poly_degree(n)); }

/* X(name, double function) */
#define TL_SP_UNARY_OPS(X) \
    X(erfcx, tl_erfcx) X(ndtr, tl_ndtr) X(ndtri, tl_ndtri) X(log_ndtr, tl_log_ndtr) \
    X(i0, tl_bessel_i0) X(i0e, tl_bessel_i0e) X(i1, tl_bessel_i1) X(i1e, tl_bessel_i1e) \
    X(k0, tl_bessel_k0) X(k0e, tl_bessel_k0e) X(k1, tl_bessel_k1) X(k1e, tl_bessel_k1e) \
    X(j0, tl_bessel_j0) X(j1, tl_bessel_j1) X(y0, tl_bessel_y0) X(y1, tl_bessel_y1) \
    X(airy_ai, tl_airy_ai) X(spherical_j0, tl_spherical_j0) X(entr, tl_entr)

/* X(name, double function for float64, double function for float32) */
#define TL_SP_BINARY_OPS(X) \
    X(zeta, tl_zeta, tl_zeta) X(polygamma, tl_polygamma, tl_polygamma) \
    X(gammainc, tl_gammainc, tl_gammainc) X(gammaincc, tl_gammaincc, tl_gammaincc) \
    X(xlog1py, tl_xlog1py, tl_xlog1py) \
    X(chebyshev_t, tl_sp_cheb_t, tl_sp_cheb_t) X(chebyshev_u, tl_sp_cheb_u, tl_sp_cheb_u) \
    X(chebyshev_v, tl_sp_cheb_v, tl_sp_cheb_v) X(chebyshev_w, tl_sp_cheb_w, tl_sp_cheb_w) \
    X(shifted_chebyshev_t, tl_sp_scheb_t, tl_sp_scheb_t) \
    X(shifted_chebyshev_u, tl_sp_scheb_u, tl_sp_scheb_u) \
    X(shifted_chebyshev_v, tl_sp_scheb_v, tl_sp_scheb_v) \
    X(shifted_chebyshev_w, tl_sp_scheb_w, tl_sp_scheb_w) \
    X(hermite_h, tl_sp_hermite_h64, tl_sp_hermite_h32) \
    X(hermite_he, tl_sp_hermite_he64, tl_sp_hermite_he32) \
    X(laguerre_l, tl_sp_laguerre_l, tl_sp_laguerre_l) \
    X(legendre_p, tl_sp_legendre_p, tl_sp_legendre_p)

#define TL_SP_CODE(name, ...) TL_SP_##name,
enum { TL_SP_UNARY_OPS(TL_SP_CODE) TL_SP_NUNARY };
enum { TL_SP_BINARY_OPS(TL_SP_CODE) TL_SP_NBINARY };
#undef TL_SP_CODE

#define TL_SP_NAME(name, ...) #name,
static const char* tl_sp_unary_names[] = { TL_SP_UNARY_OPS(TL_SP_NAME) 0 };
static const char* tl_sp_binary_names[] = { TL_SP_BINARY_OPS(TL_SP_NAME) 0 };
#undef TL_SP_NAME

/* d[0] the output, d[1], d[2] the operands; s their strides in bytes */
#define TL_SP_UNARY_LOOPS(name, F) \
static int tl_sp_##name##_f64(char** d, const int64_t* s, int64_t n, const double* P) { \
    char *o = d[0], *a = d[1]; \
    (void)P; \
    for (int64_t i = 0; i < n; i++, o += s[0], a += s[1]) \
        *(double*)o = F(*(const double*)a); \
    return 0; \
} \
static int tl_sp_##name##_f32(char** d, const int64_t* s, int64_t n, const double* P) { \
    char *o = d[0], *a = d[1]; \
    (void)P; \
    for (int64_t i = 0; i < n; i++, o += s[0], a += s[1]) \
        *(float*)o = (float)F((double)*(const float*)a); \
    return 0; \
}
TL_SP_UNARY_OPS(TL_SP_UNARY_LOOPS)
#undef TL_SP_UNARY_LOOPS

#define TL_SP_BINARY_LOOPS(name, F64, F32) \
static int tl_sp_##name##_f64(char** d, const int64_t* s, int64_t n, const double* P) { \
    char *o = d[0], *a = d[1], *b = d[2]; \
    (void)P; \
    for (int64_t i = 0; i < n; i++, o += s[0], a += s[1], b += s[2]) \
        *(double*)o = F64(*(const double*)a, *(const double*)b); \
    return 0; \
} \
static int tl_sp_##name##_f32(char** d, const int64_t* s, int64_t n, const double* P) { \
    char *o = d[0], *a = d[1], *b = d[2]; \
    (void)P; \
    for (int64_t i = 0; i < n; i++, o += s[0], a += s[1], b += s[2]) \
        *(float*)o = (float)F32(*(const float*)a, *(const float*)b); \
    return 0; \
}
TL_SP_BINARY_OPS(TL_SP_BINARY_LOOPS)
#undef TL_SP_BINARY_LOOPS

/* [op][0] float32, [op][1] float64 */
#define TL_SP_ENTRY(name, ...) { tl_sp_##name##_f32, tl_sp_##name##_f64 },
static tl_sp_loop tl_sp_unary_loops[TL_SP_NUNARY][2] = { TL_SP_UNARY_OPS(TL_SP_ENTRY) };
static tl_sp_loop tl_sp_binary_loops[TL_SP_NBINARY][2] = { TL_SP_BINARY_OPS(TL_SP_ENTRY) };
#undef TL_SP_ENTRY

#endif
