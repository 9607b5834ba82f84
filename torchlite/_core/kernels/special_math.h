/* The error-function family and the small elementwise functions of torchlite.special:
 * erfcx, ndtr, log_ndtr, ndtri, entr, xlog1py, and the classical orthogonal polynomials
 * (Chebyshev T/U/V/W and their shifted forms, Hermite H/He, Laguerre L, Legendre P).
 * Scalar double functions; special_loops.h runs them over arrays. */
#ifndef TL_SPECIAL_MATH_H
#define TL_SPECIAL_MATH_H
#include <math.h>
#include <stdint.h>
#include "special_dd.h"

/* ---- erfcx(x) = exp(x^2) erfc(x) ------------------------------------------------------------
 * x >= 0: exp(x^2) erfc(x) with the square's rounding folded back (tl_exp_x2) while erfc is a
 * normal number, then Laplace's continued fraction
 *   erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))),
 * evaluated bottom-up with a depth that falls with x; x < 0: 2 exp(x^2) - erfcx(-x). */
static double tl_erfcx_fraction(double x) {
    int depth = x > 1e8 ? 0 : (x > 1e3 ? 4 : (x > 100.0 ? 10 : 40));
    double t = x;
    for (int k = depth; k >= 1; k--) t = x + 0.5 * k / t;
    return TL_SP_1_SQRTPI / t;
}

static double tl_erfcx(double x) {
    if (isnan(x)) return x;
    if (x >= 0.0) {
        if (x < 25.0) return tl_exp_x2(x) * erfc(x);
        return tl_erfcx_fraction(x);
    }
    double e = tl_exp_x2(x);                /* exp(x^2) overflows from |x| = 26.64 */
    if (isinf(e)) return INFINITY;
    return 2.0 * e - (-x < 25.0 ? e * erfc(-x) : tl_erfcx_fraction(-x));
}

/* ---- the standard normal distribution -------------------------------------------------------
 * ndtr(x) = erfc(-x/sqrt 2) / 2.  Where erfc is small (x < -sqrt 2) the rounding of x/sqrt 2
 * would cost x^2 ulps (1e-13 at x = -38): its error z_lo is folded back to first order,
 * erfc(z + z_lo) = erfc(z) - z_lo 2/sqrt(pi) exp(-z^2). */
static double tl_ndtr(double x) {
    if (isnan(x)) return x;
    if (isinf(x)) return x > 0 ? 1.0 : 0.0;
    if (x > -1.4142135623730951) return 0.5 * erfc(-x * TL_SP_SQRT1_2);
    tl_dd z = tl_two_prod(-x, TL_SP_SQRT1_2);
    z.lo += -x * TL_SP_SQRT1_2_LO;
    return 0.5 * (erfc(z.hi) - z.lo * TL_SP_2_SQRTPI * tl_exp_mx2(z.hi));
}

/* log(ndtr(x)): log1p(-ndtr(-x)) above -1, and below, with z = -x/sqrt 2 (in double-double),
 * log(erfcx(z) / 2) - z^2: no underflow, and z^2 exact to double precision */
static double tl_log_ndtr(double x) {
    if (isnan(x)) return x;
    if (x > -1.0) return log1p(-tl_ndtr(-x));
    if (x < -1.8e154) return -INFINITY;     /* -x^2/2 overflows */
    tl_dd z = tl_two_prod(-x, TL_SP_SQRT1_2);
    z.lo += -x * TL_SP_SQRT1_2_LO;
    tl_dd z2 = tl_two_prod(z.hi, z.hi);
    z2.lo += 2.0 * z.hi * z.lo;
    /* d/dz log erfcx(z) ~ 1/z: erfcx at z.hi instead of z costs z_lo / z, below an ulp */
    return (log(0.5 * tl_erfcx(z.hi)) - z2.lo) - z2.hi;
}

/* ndtri: the inverse of ndtr.  A starting value from Abramowitz and Stegun 26.2.23
 * (|error| < 4.5e-4), then Halley steps on an equation solved where it is well conditioned:
 *  - p in [1/4, 3/4]: erf(t) = 2p - 1 (exact) for t = x/sqrt 2, so that x keeps its relative
 *    accuracy as p -> 1/2;
 *  - p < 1/4: log_ndtr(x) = log p, so that the far tail (p down to 5e-324) converges
 *    without underflow;  p > 3/4: -ndtri(1 - p), 1 - p exact. */
static double tl_ndtri_start(double p) {   /* p <= 1/2: x <= 0 */
    double t = sqrt(-2.0 * log(p));
    return -(t - (2.515517 + t * (0.802853 + t * 0.010328))
             / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
}

static double tl_ndtri_tail(double p) {    /* 0 < p < 1/4 */
    double lp = log(p), x = tl_ndtri_start(p);
    for (int i = 0; i < 8; i++) {
        double l = tl_log_ndtr(x), g = l - lp;
        /* r = phi(x) / Phi(x), g' = r, g'' = -r (x + r); Halley: dx = -2 g r / (2 r^2 - g g'') */
        double r = exp(-0.5 * x * x - TL_SP_HALF_LOG_2PI - l);
        double dx = -2.0 * g / (2.0 * r + g * (x + r));
        x += dx;
        if (fabs(dx) <= 1e-17 * fabs(x)) break;
    }
    return x;
}

static double tl_ndtri_central(double p) { /* 1/4 <= p <= 3/4 */
    double q = 2.0 * p - 1.0;              /* exact */
    double t = (p <= 0.5 ? tl_ndtri_start(p) : -tl_ndtri_start(1.0 - p)) * TL_SP_SQRT1_2;
    for (int i = 0; i < 8; i++) {
        /* f = erf(t) - q, f' = 2/sqrt(pi) e^-t^2, f'' = -2 t f' */
        double f = erf(t) - q, d1 = TL_SP_2_SQRTPI * exp(-t * t);
        double dt = -f / (d1 + t * f);     /* Halley: -f / (f' - f f'' / (2 f')) */
        t += dt;
        if (fabs(dt) <= 1e-17 * fabs(t)) break;
    }
    return t * TL_SP_SQRT2;
}

static double tl_ndtri(double p) {
    if (isnan(p) || p < 0.0 || p > 1.0) return NAN;
    if (p == 0.0) return -INFINITY;
    if (p == 1.0) return INFINITY;
    if (p < 0.25) return tl_ndtri_tail(p);
    if (p > 0.75) return -tl_ndtri_tail(1.0 - p);
    return tl_ndtri_central(p);
}

/* ---- entr, xlog1py ---------------------------------------------------------------------------- */
static double tl_entr(double x) {
    if (isnan(x)) return x;
    if (x > 0.0) return -x * log(x);
    if (x == 0.0) return 0.0;
    return -INFINITY;
}

static double tl_xlog1py(double x, double y) {
    if (isnan(y)) return NAN;
    if (x == 0.0) return 0.0;
    return x * log1p(y);
}

/* ---- orthogonal polynomials -------------------------------------------------------------------
 * PyTorch's conventions: the degree n is a float truncated to an integer (NaN and inf count as
 * negative), a negative degree gives 0, and the endpoint values are exact.  The three-term
 * recurrences run for degrees up to TL_POLY_DIRECT_MAX; above, inside (-1, 1), the Chebyshev
 * kinds use their trigonometric forms (cos(n acos x), ...), which cost the same at any degree. */
#define TL_POLY_DIRECT_MAX 4096
/* The recurrences of Laguerre's and Legendre's polynomials take n steps: above this degree
 * they give NaN rather than run for seconds an element (torchlite/_ops/special.py raises
 * before they are reached).  Hermite's stop at PyTorch's 512 (128 in float32). */
#define TL_POLY_RECURRENCE_MAX 16777216

static int64_t tl_poly_degree(double n) {
    if (!(fabs(n) < 9.2e18)) return -1;
    return (int64_t)n;
}

/* the recurrence p_(k+1) = 2 y p_k - p_(k-1) from p_0 = 1, p_1 = first, for y outside
 * (-1, 1) or small degrees; stops at NaN (inf - inf), as PyTorch's loop does */
static double tl_cheb_recurrence(double y, int64_t n, double first) {
    if (n == 0) return 1.0;
    double p = 1.0, q = first, r = first;
    for (int64_t k = 2; k <= n && !isnan(q); k++) {
        r = (y + y) * q - p;
        p = q;
        q = r;
    }
    return r;
}

/* kind: 0 T, 1 U, 2 V, 3 W, of y (already shifted for the shifted kinds) */
static double tl_chebyshev(double y, int64_t n, int kind) {
    if (n < 0) return 0.0;
    if (fabs(y) == 1.0) {
        int odd = (int)(n & 1);
        double np1 = (double)n + 1.0, n2p1 = 2.0 * (double)n + 1.0;
        if (y > 0) return kind == 0 || kind == 2 ? 1.0 : (kind == 1 ? np1 : n2p1);
        switch (kind) {
            case 0: return odd ? -1.0 : 1.0;
            case 1: return odd ? -np1 : np1;
            case 2: return odd ? -n2p1 : n2p1;
            default: return odd ? -1.0 : 1.0;
        }
    }
    if (n == 0) return 1.0;
    if (isnan(y)) return y;
    if (n > TL_POLY_DIRECT_MAX && fabs(y) < 1.0) {
        double th = acos(y), nn = (double)n;
        switch (kind) {
            case 0: return cos(nn * th);
            case 1: return sin((nn + 1.0) * th) / sin(th);
            case 2: return cos((nn + 0.5) * th) / cos(0.5 * th);
            default: return sin((nn + 0.5) * th) / sin(0.5 * th);
        }
    }
    if (n > TL_POLY_DIRECT_MAX) {
        /* |y| > 1: the hyperbolic forms (y = cosh th), for y < -1 from T, U (-y) = (-1)^n T, U (y),
         * V (-y) = (-1)^n W (y), W (-y) = (-1)^n V (y); they overflow to inf where the
         * recurrence would (PyTorch's recurrence then gives inf - inf = NaN) */
        double th = acosh(fabs(y)), nn = (double)n, r;
        int k = kind;
        if (y < 0 && k >= 2) k = 5 - k;
        switch (k) {
            case 0: r = cosh(nn * th); break;
            case 1: r = sinh((nn + 1.0) * th) / sinh(th); break;
            case 2: r = cosh((nn + 0.5) * th) / cosh(0.5 * th); break;
            default: r = sinh((nn + 0.5) * th) / sinh(0.5 * th); break;
        }
        return (y < 0 && (n & 1)) ? -r : r;
    }
    double first = kind == 0 ? y : (kind == 1 ? y + y : (kind == 2 ? y + y - 1.0 : y + y + 1.0));
    if (n == 1) return first;
    return tl_cheb_recurrence(y, n, first);
}

static double tl_chebyshev_shifted(double x, int64_t n, int kind) {
    if (n < 0) return 0.0;
    /* PyTorch pins the endpoints x = 1 and x = 0 (y = 1 and y = -1) */
    if (x == 1.0) return tl_chebyshev(1.0, n, kind);
    if (x == 0.0) return tl_chebyshev(-1.0, n, kind);
    return tl_chebyshev(x + x - 1.0, n, kind);
}

/* physicists' Hermite H_n: H_(k+1) = 2x H_k - 2k H_(k-1); NaN above the degree `limit`
 * (PyTorch's: 512 in double, 128 in single precision) */
static double tl_hermite_h(double x, int64_t n, int64_t limit) {
    if (n < 0) return 0.0;
    if (n == 0) return 1.0;
    if (n == 1) return x + x;
    if (n > limit) return NAN;
    double p = 1.0, q = x + x, r = 0.0;
    for (int64_t k = 1; k < n; k++) {
        r = (x + x) * q - 2.0 * (double)k * p;
        p = q;
        q = r;
    }
    return r;
}

/* probabilists' Hermite He_n: He_(k+1) = x He_k - k He_(k-1) */
static double tl_hermite_he(double x, int64_t n, int64_t limit) {
    if (n < 0) return 0.0;
    if (n == 0) return 1.0;
    if (n == 1) return x;
    if (n > limit) return NAN;
    double p = 1.0, q = x, r = 0.0;
    for (int64_t k = 1; k < n; k++) {
        r = x * q - (double)k * p;
        p = q;
        q = r;
    }
    return r;
}

/* Laguerre L_n: (k+1) L_(k+1) = (2k + 1 - x) L_k - k L_(k-1) */
static double tl_laguerre_l(double x, int64_t n) {
    if (n < 0) return 0.0;
    if (x == 0.0 || n == 0) return 1.0;
    if (n == 1) return 1.0 - x;
    if (n > TL_POLY_RECURRENCE_MAX) return NAN;
    double p = 1.0, q = 1.0 - x, r = q;
    for (int64_t k = 1; k < n && !isnan(q); k++) {
        r = ((2.0 * k + 1.0 - x) * q - (double)k * p) / (k + 1.0);
        p = q;
        q = r;
    }
    return r;
}

/* Legendre P_n: (k+1) P_(k+1) = (2k+1) x P_k - k P_(k-1) */
static double tl_legendre_p(double x, int64_t n) {
    if (n < 0) return 0.0;
    if (fabs(x) == 1.0) return (x > 0 || (n & 1) == 0) ? 1.0 : -1.0;
    if (n == 0) return 1.0;
    if (n == 1) return x;
    if (n > TL_POLY_RECURRENCE_MAX) return NAN;
    double p = 1.0, q = x, r = x;
    for (int64_t k = 1; k < n && !isnan(q); k++) {
        r = ((2.0 * k + 1.0) * x * q - (double)k * p) / (k + 1.0);
        p = q;
        q = r;
    }
    return r;
}

#endif
