/* The float32/float64 formulas of the elementwise ops whose loop is one expression, one row
 * per op: X(OP, float32 expression, float64 expression) of x (unary) or x and y (binary), with
 * the op's scalar parameters in P[] (a boolean op's rows give one expression for both types).
 * ewise_body.h makes the loops of every ISA copy from these rows; torchlite.compile's
 * generated C (torchlite/compiler/_cpp.py) inlines the same expressions into one loop per fused
 * program, so a fused op computes what the eager op computes.  The ops whose fast formula
 * holds on a domain only (expm1, log1p, sin, cos, tan, erfinv and pow in float32) keep their
 * loops in ewise_body.h. */
#ifndef TL_EWISE_EXPRS_H
#define TL_EWISE_EXPRS_H

/* unary ops with a float result */
#define TL_FLOAT_UNARY_EXPRS(X) \
    X(NEG, -x, -x) \
    X(ABS, fabsf(x), fabs(x)) \
    X(SIGN, tl_sign_f32(x), tl_sign_f64(x)) \
    X(SQUARE, x * x, x * x) \
    X(RECIPROCAL, 1.0f / x, 1.0 / x) \
    X(EXP, tl_expf(x), exp(x)) \
    X(EXP2, exp2f(x), exp2(x)) \
    X(LOG, tl_logf(x), log(x)) \
    X(LOG2, log2f(x), log2(x)) \
    X(LOG10, log10f(x), log10(x)) \
    X(SQRT, sqrtf(x), sqrt(x)) \
    X(RSQRT, 1.0f / sqrtf(x), 1.0 / sqrt(x)) \
    X(ASIN, asinf(x), asin(x)) \
    X(ACOS, acosf(x), acos(x)) \
    X(ATAN, tl_atanf_fast(x), atan(x)) \
    X(SINH, sinhf(x), sinh(x)) \
    X(COSH, coshf(x), cosh(x)) \
    X(TANH, tl_tanhf(x), tanh(x)) \
    X(ASINH, asinhf(x), asinh(x)) \
    X(ACOSH, acoshf(x), acosh(x)) \
    X(ATANH, atanhf(x), atanh(x)) \
    X(ERF, tl_erff(x), erf(x)) \
    X(ERFC, erfcf(x), erfc(x)) \
    X(SIGMOID, tl_sigmoidf(x), tl_sigmoid_f64(x))       /* tl_sigmoidf: vmath.h's, vectorised */ \
    /* the activations of one pass (formulas: tl_scalar_math.cuh, over libm's erf/tanh/sigmoid \
     * in float64 and vmath.h's vectorised tanh/sigmoid in float32; float32 GELU is vmath.h's \
     * tl_geluf/tl_gelu_backwardf, Phi from one exponential) */ \
    X(GELU, tl_geluf(x), tl_gelu_of_f64(x, erf(x * TL_SM_SQRT_HALF))) \
    X(GELU_TANH, tl_gelu_tanh_of_f32(x, tl_tanhf(tl_gelu_tanh_arg_f32(x))), \
        tl_gelu_tanh_of_f64(x, tanh(tl_gelu_tanh_arg_f64(x)))) \
    X(SILU, x * tl_sigmoidf(x), x * tl_sigmoid_f64(x)) \
    X(HARDSWISH, tl_hardswish_f32(x), tl_hardswish_f64(x)) \
    X(HARDSIGMOID, tl_hardsigmoid_f32(x), tl_hardsigmoid_f64(x)) \
    X(LOGIT, tl_logit_f32(x, P[0]), tl_logit_f64(x, P[0])) \
    X(FLOOR, floorf(x), floor(x)) \
    X(CEIL, ceilf(x), ceil(x)) \
    X(ROUND, nearbyintf(x), nearbyint(x)) \
    X(TRUNC, truncf(x), trunc(x)) \
    X(FRAC, tl_frac_f32(x), tl_frac_f64(x)) \
    X(RELU, tl_relu_f32(x), tl_relu_f64(x)) \
    X(CLAMP, tl_clamp_f32(x, (float)P[0], (float)P[1]), tl_clamp_f64(x, P[0], P[1])) \
    X(NAN_TO_NUM, tl_nan_to_num_f32(x, (float)P[0], (float)P[1], (float)P[2]), \
        tl_nan_to_num_f64(x, P[0], P[1], P[2])) \
    X(LGAMMA, lgammaf(x), lgamma(x)) \
    X(ROUND_DECIMALS, tl_round_decimals_f32(x, P[0]), tl_round_decimals_f64(x, P[0])) \
    X(ANGLE, tl_angle_f32(x), tl_angle_f64(x)) \
    X(SGN, tl_sign_f32(x), tl_sign_f64(x))

/* unary predicates (a bool result) */
#define TL_FLOAT_UNARY_BOOL_EXPRS(X) \
    X(ISNAN, x != x, x != x) \
    X(ISINF, fabsf(x) == INFINITY, fabs(x) == INFINITY) \
    X(ISPOSINF, x == INFINITY, x == INFINITY) \
    X(ISNEGINF, x == -INFINITY, x == -INFINITY) \
    X(ISFINITE, fabsf(x) < INFINITY, fabs(x) < INFINITY) \
    X(SIGNBIT, signbit(x) != 0, signbit(x) != 0) \
    X(LOGICAL_NOT, x == 0, x == 0)

/* binary ops with a float result */
#define TL_FLOAT_BINARY_EXPRS(X) \
    X(ADD, x + y, x + y) \
    X(SUB, x - y, x - y) \
    X(MUL, x * y, x * y) \
    X(DIV, x / y, x / y) \
    X(DIV_TRUNC, tl_divtrunc_f32(x, y), tl_divtrunc_f64(x, y)) \
    X(DIV_FLOOR, tl_divfloor_f32(x, y), tl_divfloor_f64(x, y)) \
    X(REMAINDER, tl_rem_f32(x, y), tl_rem_f64(x, y)) \
    X(FMOD, fmodf(x, y), fmod(x, y)) \
    X(ATAN2, atan2f(x, y), atan2(x, y)) \
    X(HYPOT, hypotf(x, y), hypot(x, y)) \
    X(COPYSIGN, copysignf(x, y), copysign(x, y)) \
    X(MAXIMUM, tl_maximum_f32(x, y), tl_maximum_f64(x, y)) \
    X(MINIMUM, tl_minimum_f32(x, y), tl_minimum_f64(x, y)) \
    X(FMAX, fmaxf(x, y), fmax(x, y)) \
    X(FMIN, fminf(x, y), fmin(x, y)) \
    X(ADD_ALPHA, tl_add_alpha_f32(x, y, (float)P[0]), tl_add_alpha_f64(x, y, P[0])) \
    X(XLOGY, tl_xlogy_f32(x, y), tl_xlogy_f64(x, y)) \
    /* the gradient x of relu / threshold at input y, then of the one-pass activations */ \
    X(THRESHOLD_BACKWARD, tl_threshold_backward_f32(x, y, (float)P[0]), tl_threshold_backward_f64(x, y, P[0])) \
    X(GELU_BACKWARD, tl_gelu_backwardf(x, y), \
        tl_gelu_backward_of_f64(x, y, erf(y * TL_SM_SQRT_HALF), exp(y * y * -0.5))) \
    X(GELU_TANH_BACKWARD, tl_gelu_tanh_backward_of_f32(x, y, tl_tanhf(tl_gelu_tanh_arg_f32(y))), \
        tl_gelu_tanh_backward_of_f64(x, y, tanh(tl_gelu_tanh_arg_f64(y)))) \
    X(SILU_BACKWARD, tl_silu_backward_of_f32(x, y, tl_sigmoidf(y)), \
        tl_silu_backward_of_f64(x, y, tl_sigmoid_f64(y))) \
    X(HARDSWISH_BACKWARD, tl_hardswish_backward_f32(x, y), tl_hardswish_backward_f64(x, y)) \
    X(HARDSIGMOID_BACKWARD, tl_hardsigmoid_backward_f32(x, y), tl_hardsigmoid_backward_f64(x, y))

/* binary comparisons and logical ops (a bool result; one expression for both types) */
#define TL_FLOAT_BINARY_BOOL_EXPRS(X) \
    X(EQ, x == y) \
    X(NE, x != y) \
    X(LT, x < y) \
    X(LE, x <= y) \
    X(GT, x > y) \
    X(GE, x >= y) \
    X(LOGICAL_AND, (x != 0) && (y != 0)) \
    X(LOGICAL_OR, (x != 0) || (y != 0)) \
    X(LOGICAL_XOR, (x != 0) != (y != 0))

/* ternary ops: X(OP, condition type of float32, of float64, float32 expression, float64
 * expression) of c, x and y (where's condition is a bool; the others' are of the value type) */
#define TL_FLOAT_TERNARY_EXPRS(X) \
    X(WHERE, tl_bool, tl_bool, c ? x : y, c ? x : y) \
    X(LERP, float, double, tl_lerp_f32(c, x, y), tl_lerp_f64(c, x, y)) \
    X(ADDCMUL, float, double, tl_addcmul_f32(c, x, y, (float)P[0]), tl_addcmul_f64(c, x, y, P[0])) \
    X(ADDCDIV, float, double, tl_addcdiv_f32(c, x, y, (float)P[0]), tl_addcdiv_f64(c, x, y, P[0]))

#endif
