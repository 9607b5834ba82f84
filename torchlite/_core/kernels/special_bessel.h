/* The Bessel family of torchlite.special: J0, J1, Y0, Y1, the modified I0, I1, K0, K1 (and
 * their exponentially scaled forms), the Airy function Ai and the spherical j0.  Scalar double
 * functions; special_loops.h runs them over arrays.
 *
 * Methods (no fitted coefficient tables; every constant below is a closed form):
 *  - small arguments: the power series, summed in double-double where it cancels (J, Y and
 *    Ai: terms of size e^x for a result of size 1), in double where its terms are positive;
 *  - large arguments: the Hankel asymptotic expansions (DLMF 10.17, 10.40, 9.7), summed
 *    until their terms stop shrinking, from where on they are accurate to e^(-2x);
 *  - K0, K1 and Ai for x of order one: the integral e^x K_nu(x) = int_0^inf
 *    exp(-x (cosh t - 1)) cosh(nu t) dt by the trapezoidal rule, which converges
 *    geometrically for an integrand analytic in a strip (the error is below 1e-19 at the
 *    steps used) and sums positive terms only.
 * Special values follow PyTorch: J0, J1, Y0, Y1 and Ai are NaN at +-inf, Y0, Y1 are -inf at 0
 * and NaN below, K0, K1 are +inf at 0 and NaN below. */
#ifndef TL_SPECIAL_BESSEL_H
#define TL_SPECIAL_BESSEL_H
#include <math.h>
#include "special_dd.h"

#define TL_BESSEL_EPS 1.1102230246251565e-16

/* ---- series in double-double -----------------------------------------------------------------
 * sum_k (sign q)^k / (k! (k + nu)!) for nu = 0, 1, with q = x^2/4 as a double-double, and (with
 * want_h) the same weighted by H_k + H_(k+nu) (harmonic numbers), Y's and K's series. */
static void tl_bessel_series_dd(double x, int nu, double sign, tl_dd* sum, tl_dd* hsum) {
    tl_dd q = tl_dd_mul_d(tl_two_prod(x, x), 0.25);
    tl_dd term = tl_dd_make(1.0, 0.0), s = term, hs = tl_dd_make(0.0, 0.0);
    /* H_k + H_(k+nu), in double-double too: its rounding would be multiplied by terms
     * of size e^x that cancel */
    tl_dd h = tl_dd_make(nu ? 1.0 : 0.0, 0.0);
    if (hsum) hs = h;
    for (int k = 1; k < 400; k++) {
        term = tl_dd_div_d(tl_dd_mul(term, q), (double)k * (double)(k + nu));
        if (sign < 0) term = tl_dd_neg(term);
        s = tl_dd_add(s, term);
        if (hsum) {
            h = tl_dd_add(h, tl_dd_add(tl_dd_div_d(tl_dd_make(1.0, 0.0), (double)k),
                                       tl_dd_div_d(tl_dd_make(1.0, 0.0), (double)(k + nu))));
            hs = tl_dd_add(hs, tl_dd_mul(term, h));
        }
        if (fabs(term.hi) * (1.0 + h.hi) <= 1e-34 * fabs(s.hi) + 1e-300 && k > 2) break;
    }
    *sum = s;
    if (hsum) *hsum = hs;
}

/* The Hankel expansions P(x), Q(x) of order nu (DLMF 10.17.3): a_k(nu) = a_(k-1)(nu)
 * (4 nu^2 - (2k-1)^2) / (8k), P = sum (-1)^k a_2k / x^2k, Q = sum (-1)^k a_(2k+1) / x^(2k+1) */
static void tl_hankel_pq(double x, int nu, double* P, double* Q) {
    double mu = 4.0 * nu * nu, a = 1.0, p = 1.0, q = 0.0, xk = 1.0, last = INFINITY;
    for (int k = 1; k < 200; k++) {
        a *= (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k);
        xk /= x;
        double t = a * xk;
        if (fabs(t) > last) break;      /* past the smallest term: the rest only grows */
        last = fabs(t);
        int r = k % 4;                  /* k = 2j: (-1)^j a_2j into P; k = 2j+1 into Q */
        if (r == 0) p += t;
        else if (r == 2) p -= t;
        else if (r == 1) q += t;
        else q -= t;
        if (last <= 1e-18) break;
    }
    *P = p;
    *Q = q;
}

/* ---- J0, J1, Y0, Y1 ------------------------------------------------------------------------- */
#define TL_BESSEL_JY_SWITCH 25.0

static double tl_bessel_j0(double x) {
    if (isnan(x) || isinf(x)) return NAN;
    x = fabs(x);
    if (x < TL_BESSEL_JY_SWITCH) {
        tl_dd s;
        tl_bessel_series_dd(x, 0, -1.0, &s, NULL);
        return tl_dd_to_d(s);
    }
    double P, Q, s = sin(x), c = cos(x);
    tl_hankel_pq(x, 0, &P, &Q);
    /* cos(x - pi/4) = (cos x + sin x)/sqrt 2, sin(x - pi/4) = (sin x - cos x)/sqrt 2 */
    return sqrt(1.0 / (TL_SP_PI * x)) * (P * (c + s) - Q * (s - c));
}

static double tl_bessel_j1(double x) {
    if (isnan(x) || isinf(x)) return NAN;
    double ax = fabs(x), r;
    if (ax < TL_BESSEL_JY_SWITCH) {
        tl_dd s;
        tl_bessel_series_dd(ax, 1, -1.0, &s, NULL);
        r = tl_dd_to_d(tl_dd_mul_d(s, 0.5 * ax));
    } else {
        double P, Q, s = sin(ax), c = cos(ax);
        tl_hankel_pq(ax, 1, &P, &Q);
        /* cos(x - 3pi/4) = (sin x - cos x)/sqrt 2, sin(x - 3pi/4) = -(sin x + cos x)/sqrt 2 */
        r = sqrt(1.0 / (TL_SP_PI * ax)) * (P * (s - c) + Q * (s + c));
    }
    return signbit(x) ? -r : r;         /* odd: J1(-0) = -0 */
}

/* Y0 = (2/pi)(log(x/2) + gamma) J0 + (2/pi) sum_{k>=1} (-1)^(k+1) H_k q^k / (k!)^2 */
static double tl_bessel_y0(double x) {
    if (isnan(x)) return x;
    if (x == 0.0) return -INFINITY;
    if (x < 0.0 || isinf(x)) return NAN;
    if (x < TL_BESSEL_JY_SWITCH) {
        tl_dd j, hs;
        tl_bessel_series_dd(x, 0, -1.0, &j, &hs);   /* hs = sum (-1)^k H_k q^k/(k!)^2 */
        tl_dd lg = tl_dd_add_d(tl_dd_make(TL_SP_EULER, TL_SP_EULER_LO), log(0.5 * x));
        /* hs weights term k by H_k + H_k: half of it is Y0's sum */
        tl_dd r = tl_dd_add(tl_dd_mul(lg, j), tl_dd_mul_d(hs, -0.5));
        return tl_dd_to_d(tl_dd_mul_d(r, 2.0 / TL_SP_PI));
    }
    double P, Q, s = sin(x), c = cos(x);
    tl_hankel_pq(x, 0, &P, &Q);
    return sqrt(1.0 / (TL_SP_PI * x)) * (P * (s - c) + Q * (c + s));
}

/* Y1 = -2/(pi x) + (2/pi)(log(x/2) + gamma) J1
 *      - (1/pi) sum_{k>=0} (-1)^k (H_k + H_(k+1)) (x/2)^(2k+1) / (k! (k+1)!) */
static double tl_bessel_y1(double x) {
    if (isnan(x)) return x;
    if (x == 0.0) return -INFINITY;
    if (x < 0.0 || isinf(x)) return NAN;
    if (x < TL_BESSEL_JY_SWITCH) {
        tl_dd j, hs;
        tl_bessel_series_dd(x, 1, -1.0, &j, &hs);
        double half = 0.5 * x;
        tl_dd lg = tl_dd_add_d(tl_dd_make(TL_SP_EULER, TL_SP_EULER_LO), log(half));
        /* (2/pi) [lg J1 - hs (x/2) / 2] with J1 = j (x/2) */
        tl_dd r = tl_dd_mul_d(tl_dd_add(tl_dd_mul(lg, j), tl_dd_mul_d(hs, -0.5)), half);
        r = tl_dd_mul_d(r, 2.0 / TL_SP_PI);
        return tl_dd_to_d(r) - 2.0 / (TL_SP_PI * x);
    }
    double P, Q, s = sin(x), c = cos(x);
    tl_hankel_pq(x, 1, &P, &Q);
    return sqrt(1.0 / (TL_SP_PI * x)) * (Q * (s - c) - P * (s + c));
}

/* ---- I0, I1 and their scaled forms ----------------------------------------------------------
 * e^-x I_nu(x) for x >= 0: the series (positive terms, in double-double so that x^2/4's
 * rounding does not grow with k) below 25, the asymptotic series
 * e^-x I_nu(x) ~ (2 pi x)^-1/2 sum_k (-1)^k a_k(nu) / x^k above (DLMF 10.40.1). */
#define TL_BESSEL_I_SWITCH 25.0

static double tl_scaled_i(double x, int nu) {
    if (x < TL_BESSEL_I_SWITCH) {
        tl_dd s;
        tl_bessel_series_dd(x, nu, 1.0, &s, NULL);
        if (nu) s = tl_dd_mul_d(s, 0.5 * x);
        return tl_dd_to_d(s) * exp(-x);
    }
    double mu = 4.0 * nu * nu, a = 1.0, sum = 1.0, last = INFINITY, xk = 1.0;
    for (int k = 1; k < 200; k++) {
        a *= -(mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k);
        xk /= x;
        double t = a * xk;
        if (fabs(t) > last) break;
        last = fabs(t);
        sum += t;
        if (last <= 1e-18) break;
    }
    return sum / sqrt(2.0 * TL_SP_PI * x);
}

/* e^|x| I_nu(|x|) without overflowing before the result does (I0 is finite up to 713.98) */
static double tl_unscale_i(double s, double ax) {
    if (ax < 700.0) return s * exp(ax);
    double h = exp(0.5 * ax);
    return (s * h) * h;
}

static double tl_bessel_i0(double x) {
    if (isnan(x)) return x;
    double ax = fabs(x);
    if (isinf(x)) return NAN;                   /* PyTorch's value at +-inf */
    return tl_unscale_i(tl_scaled_i(ax, 0), ax);
}

static double tl_bessel_i0e(double x) {
    if (isnan(x)) return x;
    if (isinf(x)) return 0.0;
    return tl_scaled_i(fabs(x), 0);
}

static double tl_bessel_i1(double x) {
    if (isnan(x) || isinf(x)) return NAN;
    double ax = fabs(x), r = tl_unscale_i(tl_scaled_i(ax, 1), ax);
    return x < 0 ? -r : r;              /* I1(-0) = +0, as PyTorch has it */
}

static double tl_bessel_i1e(double x) {
    if (isnan(x)) return x;
    if (isinf(x)) return copysign(0.0, x);
    double r = tl_scaled_i(fabs(x), 1);
    return x < 0 ? -r : r;
}

/* ---- K0, K1 ----------------------------------------------------------------------------------- */

/* e^x K_nu(x) = int_0^inf exp(-2 x sinh^2(t/2)) cosh(nu t) dt by the trapezoidal rule, for
 * x >= 1 and real nu.  The step shrinks like 1/sqrt(x) with the integrand's width. */
static double tl_scaled_k_integral(double x, double nu) {
    double h = 0.6 / sqrt(x);
    if (h > 0.2) h = 0.2;
    double sum = 0.5, t = 0.0;          /* the t = 0 term: weight 1/2, value 1 */
    for (int k = 1; k < 100000; k++) {
        t += h;
        double sh = sinh(0.5 * t), f = exp(-2.0 * x * sh * sh);
        if (nu != 0.0) f *= cosh(nu * t);
        sum += f;
        if (f <= 1e-19 * sum) break;
    }
    return h * sum;
}

/* K0 for 0 < x <= 1: -(log(x/2) + gamma) I0(x) + sum_{k>=1} H_k q^k / (k!)^2, both positive */
static double tl_k0_series(double x) {
    double q = 0.25 * x * x, term = 1.0, i0 = 1.0, hs = 0.0, h = 0.0;
    for (int k = 1; k < 60; k++) {
        term *= q / ((double)k * k);
        h += 1.0 / k;
        i0 += term;
        hs += h * term;
        if (term <= 1e-18 * i0) break;
    }
    return -(log(0.5 * x) + TL_SP_EULER) * i0 + hs;
}

/* K1 for 0 < x <= 1 (DLMF 10.31.1):
 * 1/x + log(x/2) I1(x) - (x/4) sum_{k>=0} (psi(k+1) + psi(k+2)) q^k / (k! (k+1)!) */
static double tl_k1_series(double x) {
    double q = 0.25 * x * x, term = 1.0, i1 = 1.0, h = 1.0;     /* H_0 + H_1 */
    double ps = 1.0 - 2.0 * TL_SP_EULER;                         /* psi(1) + psi(2) */
    for (int k = 1; k < 60; k++) {
        term *= q / ((double)k * (k + 1));
        h += 1.0 / k + 1.0 / (k + 1);
        i1 += term;
        ps += (h - 2.0 * TL_SP_EULER) * term;
        if (term <= 1e-18 * i1) break;
    }
    return 1.0 / x + log(0.5 * x) * (0.5 * x * i1) - 0.25 * x * ps;
}

static double tl_bessel_k0(double x) {
    if (isnan(x)) return x;
    if (x == 0.0) return INFINITY;
    if (x < 0.0) return NAN;
    if (isinf(x)) return 0.0;
    if (x <= 1.0) return tl_k0_series(x);
    return tl_scaled_k_integral(x, 0.0) * exp(-x);
}

static double tl_bessel_k0e(double x) {
    if (isnan(x)) return x;
    if (x == 0.0) return INFINITY;
    if (x < 0.0) return NAN;
    if (isinf(x)) return 0.0;
    if (x <= 1.0) return tl_k0_series(x) * exp(x);
    return tl_scaled_k_integral(x, 0.0);
}

static double tl_bessel_k1(double x) {
    if (isnan(x)) return x;
    if (x == 0.0) return INFINITY;
    if (x < 0.0) return NAN;
    if (isinf(x)) return 0.0;
    if (x <= 1.0) return tl_k1_series(x);
    return tl_scaled_k_integral(x, 1.0) * exp(-x);
}

static double tl_bessel_k1e(double x) {
    if (isnan(x)) return x;
    if (x == 0.0) return INFINITY;
    if (x < 0.0) return NAN;
    if (isinf(x)) return 0.0;
    if (x <= 1.0) return tl_k1_series(x) * exp(x);
    return tl_scaled_k_integral(x, 1.0);
}

/* ---- the Airy function Ai ----------------------------------------------------------------------
 * Ai(0) and -Ai'(0) as double-doubles: 1 / (3^(2/3) Gamma(2/3)), 1 / (3^(1/3) Gamma(1/3)) */
#define TL_AI0_HI 0.3550280538878172
#define TL_AI0_LO 2.05233632436212e-17
#define TL_AIP0_HI 0.2588194037928068
#define TL_AIP0_LO (-2.522243111610832e-17)
#define TL_AIRY_SERIES_LO (-10.0)
#define TL_AIRY_SERIES_HI 2.0

/* Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f = sum 3^k (1/3)_k x^3k / (3k)!,
 * g = sum 3^k (2/3)_k x^(3k+1) / (3k+1)!  (DLMF 9.4.1), in double-double */
static double tl_airy_series(double x) {
    tl_dd x3 = tl_dd_mul_d(tl_two_prod(x, x), x);
    tl_dd f = tl_dd_make(1.0, 0.0), g = tl_dd_make(x, 0.0), tf = f, tg = g;
    double big = 1.0;
    for (int k = 1; k < 200; k++) {
        tf = tl_dd_div_d(tl_dd_mul(tf, x3), (3.0 * k - 1.0) * (3.0 * k));
        tg = tl_dd_div_d(tl_dd_mul(tg, x3), (3.0 * k) * (3.0 * k + 1.0));
        f = tl_dd_add(f, tf);
        g = tl_dd_add(g, tg);
        double m = fabs(tf.hi) + fabs(tg.hi);
        if (m > big) big = m;
        if (m <= 1e-34 * big) break;
    }
    tl_dd r = tl_dd_add(tl_dd_mul(tl_dd_make(TL_AI0_HI, TL_AI0_LO), f),
                        tl_dd_neg(tl_dd_mul(tl_dd_make(TL_AIP0_HI, TL_AIP0_LO), g)));
    return tl_dd_to_d(r);
}

/* (2/3) |x|^(3/2) as a double-double */
static tl_dd tl_airy_zeta(double ax) {
    tl_dd z = tl_dd_mul_d(tl_dd_sqrt_d(ax), ax);
    return tl_dd_mul(z, tl_dd_make(0.6666666666666666, 3.700743415417188e-17));
}

static double tl_airy_ai(double x) {
    if (isnan(x) || isinf(x)) return NAN;   /* PyTorch's value at +-inf */
    if (x >= TL_AIRY_SERIES_LO && x <= TL_AIRY_SERIES_HI) return tl_airy_series(x);
    if (x > 0.0) {
        /* Ai(x) = sqrt(x/3) K_1/3(zeta) / pi (DLMF 9.6.1) */
        if (x > 105.0) return 0.0;
        tl_dd zeta = tl_airy_zeta(x);   /* exp(-zeta) needs zeta past double precision */
        double e = exp(-zeta.hi) * (1.0 - zeta.lo);
        return sqrt(x / 3.0) / TL_SP_PI * tl_scaled_k_integral(zeta.hi, 1.0 / 3.0) * e;
    }
    /* x < -10: Ai(-z) ~ (pi^-1/2 z^-1/4) [cos(zeta - pi/4) sum_k (-1)^k u_2k zeta^-2k
     *                   + sin(zeta - pi/4) sum_k (-1)^k u_(2k+1) zeta^-(2k+1)]  (DLMF 9.7.9),
     * u_k = u_(k-1) (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k); the phase in double-double */
    double z = -x;
    tl_dd zeta = tl_airy_zeta(z);
    if (isinf(zeta.hi)) return NAN;
    tl_dd th = tl_dd_add(zeta, tl_dd_make(-0.7853981633974483, -3.061616997868383e-17));
    double s = sin(th.hi), c = cos(th.hi);
    double sn = s + th.lo * c, cs = c - th.lo * s;
    double u = 1.0, zinv = 1.0 / zeta.hi, zk = 1.0, P = 1.0, Q = 0.0, last = INFINITY;
    for (int k = 1; k < 200; k++) {
        u *= (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / ((2.0 * k - 1) * 216.0 * k);
        zk *= zinv;
        double t = u * zk;
        if (t > last) break;
        last = t;
        int r = k % 4;
        if (r == 0) P += t;
        else if (r == 2) P -= t;
        else if (r == 1) Q += t;
        else Q -= t;
        if (t <= 1e-18) break;
    }
    return (cs * P + sn * Q) / (sqrt(TL_SP_PI) * sqrt(sqrt(z)));
}

/* ---- spherical j0 ---------------------------------------------------------------------------- */
static double tl_spherical_j0(double x) {
    if (isnan(x)) return x;
    if (isinf(x)) return 0.0;
    if (fabs(x) < 1e-4) {
        double x2 = x * x;
        return 1.0 - x2 / 6.0 * (1.0 - x2 / 20.0);
    }
    return sin(x) / x;
}

#endif
