/* The elementwise op lists.  Each X-macro list is the one home of an op's code and name:
 * the enum, the name table (read by elementwise.pyx) and the loop tables are made from it. */
#ifndef TL_EWISE_OPS_H
#define TL_EWISE_OPS_H

#define TL_UNARY_OPS(X) \
    X(NEG) X(ABS) X(SIGN) X(SQUARE) X(RECIPROCAL) X(EXP) X(EXP2) X(EXPM1) X(LOG) X(LOG2) \
    X(LOG10) X(LOG1P) X(SQRT) X(RSQRT) X(SIN) X(COS) X(TAN) X(ASIN) X(ACOS) X(ATAN) \
    X(SINH) X(COSH) X(TANH) X(ASINH) X(ACOSH) X(ATANH) X(ERF) X(ERFC) X(ERFINV) \
    X(SIGMOID) X(LOGIT) X(FLOOR) X(CEIL) X(ROUND) X(TRUNC) X(FRAC) X(RELU) X(CLAMP) \
    X(NAN_TO_NUM) X(ISNAN) X(ISINF) X(ISPOSINF) X(ISNEGINF) X(ISFINITE) X(SIGNBIT) \
    X(LOGICAL_NOT) X(BITWISE_NOT) X(LGAMMA) X(ROUND_DECIMALS) X(ANGLE) X(SGN) X(CONJ) \
    X(GELU) X(GELU_TANH) X(SILU) X(HARDSWISH) X(HARDSIGMOID)

#define TL_BINARY_OPS(X) \
    X(ADD) X(SUB) X(MUL) X(DIV) X(DIV_TRUNC) X(DIV_FLOOR) X(REMAINDER) X(FMOD) X(POW) \
    X(ATAN2) X(HYPOT) X(COPYSIGN) X(MAXIMUM) X(MINIMUM) X(FMAX) X(FMIN) \
    X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(LOGICAL_AND) X(LOGICAL_OR) X(LOGICAL_XOR) \
    X(BITWISE_AND) X(BITWISE_OR) X(BITWISE_XOR) X(SHL) X(SHR) X(ADD_ALPHA) X(XLOGY) \
    X(THRESHOLD_BACKWARD) X(GELU_BACKWARD) X(GELU_TANH_BACKWARD) X(SILU_BACKWARD) \
    X(HARDSWISH_BACKWARD) X(HARDSIGMOID_BACKWARD)

/* the ops that have float32/float64 loops (all but the bitwise ones) */
#define TL_UNARY_OPS_FLOAT(X) \
    X(NEG) X(ABS) X(SIGN) X(SQUARE) X(RECIPROCAL) X(EXP) X(EXP2) X(EXPM1) X(LOG) X(LOG2) \
    X(LOG10) X(LOG1P) X(SQRT) X(RSQRT) X(SIN) X(COS) X(TAN) X(ASIN) X(ACOS) X(ATAN) \
    X(SINH) X(COSH) X(TANH) X(ASINH) X(ACOSH) X(ATANH) X(ERF) X(ERFC) X(ERFINV) \
    X(SIGMOID) X(LOGIT) X(FLOOR) X(CEIL) X(ROUND) X(TRUNC) X(FRAC) X(RELU) X(CLAMP) \
    X(NAN_TO_NUM) X(ISNAN) X(ISINF) X(ISPOSINF) X(ISNEGINF) X(ISFINITE) X(SIGNBIT) \
    X(LOGICAL_NOT) X(LGAMMA) X(ROUND_DECIMALS) X(ANGLE) X(SGN) X(GELU) X(GELU_TANH) X(SILU) X(HARDSWISH) X(HARDSIGMOID)
#define TL_BINARY_OPS_FLOAT(X) \
    X(ADD) X(SUB) X(MUL) X(DIV) X(DIV_TRUNC) X(DIV_FLOOR) X(REMAINDER) X(FMOD) X(POW) \
    X(ATAN2) X(HYPOT) X(COPYSIGN) X(MAXIMUM) X(MINIMUM) X(FMAX) X(FMIN) \
    X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(LOGICAL_AND) X(LOGICAL_OR) X(LOGICAL_XOR) \
    X(ADD_ALPHA) X(XLOGY) X(THRESHOLD_BACKWARD) X(GELU_BACKWARD) X(GELU_TANH_BACKWARD) \
    X(SILU_BACKWARD) X(HARDSWISH_BACKWARD) X(HARDSIGMOID_BACKWARD)

/* the ops that have complex64/complex128 loops with a complex result (abs and angle, which
 * return the real type, and the predicates isnan/isinf/isfinite/logical_not are registered
 * apart; conj, angle and sgn exist for the complex types above all) */
#define TL_UNARY_OPS_COMPLEX(X) \
    X(NEG) X(SQUARE) X(RECIPROCAL) X(EXP) X(EXP2) X(EXPM1) X(LOG) X(LOG2) X(LOG10) X(LOG1P) \
    X(SQRT) X(RSQRT) X(SIN) X(COS) X(TAN) X(ASIN) X(ACOS) X(ATAN) X(SINH) X(COSH) X(TANH) \
    X(ASINH) X(ACOSH) X(ATANH) X(SIGMOID) X(NAN_TO_NUM) X(SGN) X(CONJ)
#define TL_BINARY_OPS_COMPLEX(X) X(ADD) X(SUB) X(MUL) X(DIV) X(POW) X(ADD_ALPHA)

#define TL_TERNARY_OPS(X) X(WHERE) X(LERP) X(ADDCMUL) X(ADDCDIV)

#define TL_ENUM_U(n) TL_U_##n,
#define TL_ENUM_B(n) TL_B_##n,
#define TL_ENUM_T(n) TL_T_##n,
enum { TL_UNARY_OPS(TL_ENUM_U) TL_NUNARY };
enum { TL_BINARY_OPS(TL_ENUM_B) TL_NBINARY };
enum { TL_TERNARY_OPS(TL_ENUM_T) TL_NTERNARY };
#define TL_NAME(n) #n,
static const char *tl_unary_names[] = { TL_UNARY_OPS(TL_NAME) 0 };
static const char *tl_binary_names[] = { TL_BINARY_OPS(TL_NAME) 0 };
static const char *tl_ternary_names[] = { TL_TERNARY_OPS(TL_NAME) 0 };

/* A loop runs one op over n elements: d[0] is the output, d[1..] the inputs, s[k] their
 * byte strides, P the op's scalar parameters (alpha, clamp bounds, ...).  It returns a
 * TL_ERR_* code (integer division by zero) instead of trapping. */
typedef int (*tl_loop)(char **d, const int64_t *s, int64_t n, const double *P);

#endif
