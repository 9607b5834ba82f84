/* The elementwise formulas, one source for both devices.  The CPU's loops (torchlite/_core/
 * kernels/ewise_scalar.h includes this file as C99) and the CUDA functors (tl_ops.cuh includes
 * it inside namespace tl) call the same functions, so an op gives the same answer on either
 * device.  Here is every formula that carries a rule of its own:
 *   - more than one expression: Python's integer floor division and remainder (division by
 *     zero reported, INT_MIN / -1 wrapping), C's truncating ones, integer powers by squaring,
 *     shifts whose count may be out of range, Python's float floor division and remainder
 *     (CPython's algorithm);
 *   - one expression, but a choice in it: NaN propagation (maximum, minimum, relu, clamp,
 *     angle, xlogy, threshold_backward), integer wrapping (neg, abs, square, add, sub, mul,
 *     add_alpha), clamping (logit, clamp), the order of the operations (lerp's two-sided
 *     form, addcmul, addcdiv, round_decimals computed in float64);
 *   - the activations PyTorch computes as one kernel and their gradients (gelu exact and
 *     tanh, silu), as functions of the transcendental values each device computes its own
 *     way (erf, exp, tanh, sigmoid), in the order of the operations of torchlite's formulas
 *     written as Tensor ops (nn/functional/activation*.py), which a double backward uses.
 * Plain arithmetic (x + y on floats, x < y) and the transcendental functions are each
 * device's own: the CPU's vectorised tl_expf and the CUDA library's expf compute the same
 * function.  The complex types' formulas are tl_complex.cuh's.
 *
 * Written in the common subset of C99 and C++ (no references or templates); each TL_DEF_*
 * macro defines one type's functions.  TL_SM_NAME(op, S) names them: tl_<op>_<S> in C
 * (tl_divfloor_i32, tl_maximum_f64), one overloaded tl_<op> in C++ (tl_divfloor, tl_maximum),
 * so that a functor templated on the type calls one name.  The includer defines first:
 *   TL_SM_FN          the qualifiers of a function
 *   TL_SM_U8, TL_SM_I8, TL_SM_I16, TL_SM_I32, TL_SM_I64, TL_SM_U64     the integer types
 *   TL_SM_INFINITY    a float expression for +infinity
 * and gets every type's functions (the list at the end).
 * A division by zero stores TL_SM_ZERODIV (1: the CPU's TL_ERR_ZERODIV, the kernels'
 * tl::ERR_ZERODIV) in *err and gives 0. */
#ifndef TL_SCALAR_MATH_CUH
#define TL_SCALAR_MATH_CUH

#define TL_SM_ZERODIV 1
#ifdef __cplusplus
#define TL_SM_NAME(OP, S) tl_##OP
#else
#define TL_SM_NAME(OP, S) tl_##OP##_##S
#endif

/* signed integers: Python's floor semantics for // and %, C's for div_trunc and fmod */
#define TL_DEF_SINT_DIV(S, T)                                                               \
TL_SM_FN T TL_SM_NAME(divfloor, S)(T x, T y, int *err) {                                    \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; }                                         \
    if (y == -1) return (T)(0 - (TL_SM_U64)x);             /* INT_MIN / -1 wraps */         \
    T q = (T)(x / y); if ((x % y != 0) && ((x < 0) != (y < 0))) q--; return q; }            \
TL_SM_FN T TL_SM_NAME(divtrunc, S)(T x, T y, int *err) {                                    \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; }                                         \
    if (y == -1) return (T)(0 - (TL_SM_U64)x);                                              \
    return (T)(x / y); }                                                                    \
TL_SM_FN T TL_SM_NAME(rem, S)(T x, T y, int *err) {                                         \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; }                                         \
    if (y == -1) return 0;                                                                  \
    T r = (T)(x % y); if (r != 0 && ((r < 0) != (y < 0))) r = (T)(r + y); return r; }       \
TL_SM_FN T TL_SM_NAME(fmod, S)(T x, T y, int *err) {                                        \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; }                                         \
    if (y == -1) return 0;                                                                  \
    return (T)(x % y); }                                                                    \
TL_SM_FN T TL_SM_NAME(ipow, S)(T b, T e) {          /* a negative power of |b| > 1 is 0, as PyTorch */ \
    if (e < 0) { if (b == 1) return 1; if (b == -1) return (T)((e & 1) ? -1 : 1); return 0; } \
    TL_SM_U64 r = 1, bb = (TL_SM_U64)b, ee = (TL_SM_U64)e;                                  \
    while (ee) { if (ee & 1) r *= bb; bb *= bb; ee >>= 1; } return (T)r; }

/* unsigned integers (uint8): no sign to round by */
#define TL_DEF_UINT_DIV(S, T)                                                               \
TL_SM_FN T TL_SM_NAME(divfloor, S)(T x, T y, int *err) {                                    \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; } return (T)(x / y); }                    \
TL_SM_FN T TL_SM_NAME(divtrunc, S)(T x, T y, int *err) { return TL_SM_NAME(divfloor, S)(x, y, err); } \
TL_SM_FN T TL_SM_NAME(rem, S)(T x, T y, int *err) {                                         \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; } return (T)(x % y); }                    \
TL_SM_FN T TL_SM_NAME(fmod, S)(T x, T y, int *err) { return TL_SM_NAME(rem, S)(x, y, err); } \
TL_SM_FN T TL_SM_NAME(ipow, S)(T b, T e) {                                                  \
    TL_SM_U64 r = 1, bb = (TL_SM_U64)b, ee = (TL_SM_U64)e;                                  \
    while (ee) { if (ee & 1) r *= bb; bb *= bb; ee >>= 1; } return (T)r; }

/* shifts: a count outside [0, bits) gives 0 (left) or the sign fill (right), never UB (the
 * comparisons are made in int64, which also serves the unsigned type without a warning) */
#define TL_DEF_SHIFT(S, T, BITS)                                                            \
TL_SM_FN T TL_SM_NAME(shl, S)(T x, T y) {                                                   \
    return ((TL_SM_I64)y < 0 || (TL_SM_I64)y >= BITS) ? (T)0 : (T)((TL_SM_U64)x << y); }    \
TL_SM_FN T TL_SM_NAME(shr, S)(T x, T y) {                                                   \
    return ((TL_SM_I64)y < 0 || (TL_SM_I64)y >= BITS) ? (T)((TL_SM_I64)x < 0 ? -1 : 0)      \
                                                     : (T)(x >> y); }

/* Python's float floor division and remainder (the algorithm CPython uses), so results match
 * `//` and `%`; F is the libm suffix ("f" or nothing) */
#define TL_DEF_FLOAT_DIV(S, T, F)                                                           \
TL_SM_FN T TL_SM_NAME(divfloor, S)(T a, T b) {                                              \
    if (b == 0) return a / b;                                                               \
    T mod = fmod##F(a, b); T div = (a - mod) / b;                                           \
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                                       \
    T fl;                                                                                   \
    if (div != 0) { fl = floor##F(div); if (div - fl > (T)0.5) fl += 1; }                   \
    else fl = copysign##F((T)0, a / b);                                                     \
    return fl; }                                                                            \
TL_SM_FN T TL_SM_NAME(rem, S)(T a, T b) {                                                   \
    T mod = fmod##F(a, b); if (mod != 0 && ((b < 0) != (mod < 0))) mod += b; return mod; }

/* every real type: NaN propagates (x != x is false for integers) */
#define TL_DEF_REAL(S, T)                                                                   \
TL_SM_FN T TL_SM_NAME(maximum, S)(T x, T y) { return x != x ? x : (x > y ? x : y); }        \
TL_SM_FN T TL_SM_NAME(minimum, S)(T x, T y) { return x != x ? x : (x < y ? x : y); }

/* integers: arithmetic wraps (computed in uint64: no signed overflow).  abs is branch-free
 * (x xor m) - m with m the sign mask: a branch on random signs mispredicts half the time.
 * clamp's bounds come as float64, +-inf standing for no bound; they are converted once (the
 * loops hoist it) with the infinities as the type's extremes, and the comparisons are made
 * in the type, so the loop has no conversion per element.  A fractional bound truncates
 * toward zero and gives what comparing in float64 would. */
#define TL_DEF_INT(S, T, TMIN, TMAX)                                                        \
TL_SM_FN T TL_SM_NAME(sign, S)(T x) { return (T)((x > 0) - ((TL_SM_I64)x < 0)); }           \
TL_SM_FN T TL_SM_NAME(relu, S)(T x) { return (TL_SM_I64)x < 0 ? (T)0 : x; }                \
TL_SM_FN T TL_SM_NAME(neg, S)(T x) { return (T)(0 - (TL_SM_U64)x); }                       \
TL_SM_FN T TL_SM_NAME(abs, S)(T x) {                                                        \
    const TL_SM_U64 m = (TL_SM_U64)((TL_SM_I64)x >> 63);                                    \
    return (T)(((TL_SM_U64)x ^ m) - m); }                                                   \
TL_SM_FN T TL_SM_NAME(square, S)(T x) { return (T)((TL_SM_U64)x * (TL_SM_U64)x); }         \
TL_SM_FN T TL_SM_NAME(add, S)(T x, T y) { return (T)((TL_SM_U64)x + (TL_SM_U64)y); }       \
TL_SM_FN T TL_SM_NAME(sub, S)(T x, T y) { return (T)((TL_SM_U64)x - (TL_SM_U64)y); }       \
TL_SM_FN T TL_SM_NAME(mul, S)(T x, T y) { return (T)((TL_SM_U64)x * (TL_SM_U64)y); }       \
TL_SM_FN T TL_SM_NAME(add_alpha, S)(T x, T y, TL_SM_I64 alpha) {                            \
    return (T)((TL_SM_U64)x + (TL_SM_U64)alpha * (TL_SM_U64)y); }                           \
TL_SM_FN T TL_SM_NAME(clamp, S)(T x, double lo, double hi) {                                \
    const T l = lo <= (double)(TMIN) ? (T)(TMIN) : (T)lo;                                   \
    const T h = hi >= (double)(TMAX) ? (T)(TMAX) : (T)hi;                                   \
    const T t = x < l ? l : x;                                                              \
    return t > h ? h : t; }

#define TL_SM_SQRT_HALF 0.70710678118654752440          /* GELU: Phi(x) = (1 + erf(x / sqrt 2)) / 2 */
#define TL_SM_INV_SQRT_2PI 0.39894228040143267794      /* the normal density's factor */
#define TL_SM_SQRT_2_OVER_PI 0.79788456080286535588    /* GELU's tanh form */
#define TL_SM_GELU_TANH_C 0.044715

/* floating types (F the libm suffix) */
#define TL_DEF_FLOAT(S, T, F)                                                               \
TL_SM_FN T TL_SM_NAME(sign, S)(T x) { return (T)((x > 0) - (x < 0)); }  /* NaN gives 0 */   \
TL_SM_FN T TL_SM_NAME(relu, S)(T x) { return x < 0 ? (T)0 : x; }  /* NaN, -0.0 pass */      \
TL_SM_FN T TL_SM_NAME(clamp, S)(T x, T lo, T hi) {              /* NaN passes through */    \
    const T t = x < lo ? lo : x; return t > hi ? hi : t; }                                  \
TL_SM_FN T TL_SM_NAME(nan_to_num, S)(T x, T nan, T posinf, T neginf) {                      \
    return x != x ? nan : (x == (T)TL_SM_INFINITY ? posinf : (x == -(T)TL_SM_INFINITY ? neginf : x)); } \
TL_SM_FN T TL_SM_NAME(logit, S)(T x, double eps) {        /* eps < 0: no clamping */        \
    const T e = (T)eps;                                                                     \
    const T z = eps < 0 ? x : (x < e ? e : (x > (T)1 - e ? (T)1 - e : x));                  \
    return log##F(z / ((T)1 - z)); }                                                        \
TL_SM_FN T TL_SM_NAME(sigmoid, S)(T x) { return (T)1 / ((T)1 + exp##F(-x)); }               \
TL_SM_FN T TL_SM_NAME(frac, S)(T x) { return x - trunc##F(x); }                             \
TL_SM_FN T TL_SM_NAME(angle, S)(T x) {          /* pi for negatives, NaN kept, else 0 */    \
    return x < 0 ? (T)3.14159265358979323846 : (x != x ? x : (T)0); }                       \
TL_SM_FN T TL_SM_NAME(round_decimals, S)(T x, double d) {     /* in float64 for any T */    \
    const double s = pow(10.0, d); return (T)(nearbyint((double)x * s) / s); }              \
TL_SM_FN T TL_SM_NAME(divtrunc, S)(T x, T y) { return trunc##F(x / y); }                    \
TL_SM_FN T TL_SM_NAME(add_alpha, S)(T x, T y, T alpha) { return x + alpha * y; }            \
TL_SM_FN T TL_SM_NAME(xlogy, S)(T x, T y) {              /* NaN y wins over x = 0 */        \
    return y != y ? y : (x == 0 ? (T)0 : x * log##F(y)); }                                  \
TL_SM_FN T TL_SM_NAME(threshold_backward, S)(T grad, T x, T threshold) {                    \
    return x <= threshold ? (T)0 : grad; }              /* a NaN x passes grad on */        \
TL_SM_FN T TL_SM_NAME(lerp, S)(T start, T end, T weight) {  /* exact at both ends */        \
    return fabs##F(weight) < (T)0.5 ? start + weight * (end - start)                        \
                                    : end - (end - start) * ((T)1 - weight); }              \
TL_SM_FN T TL_SM_NAME(addcmul, S)(T c, T x, T y, T value) { return c + value * x * y; }     \
TL_SM_FN T TL_SM_NAME(addcdiv, S)(T c, T x, T y, T value) { return c + value * x / y; }     \
/* gelu = x Phi(x) from e = erf(x / sqrt 2); its gradient from e and q = exp(-x^2 / 2) */    \
TL_SM_FN T TL_SM_NAME(gelu_of, S)(T x, T e) { return x * (e + (T)1) * (T)0.5; }            \
TL_SM_FN T TL_SM_NAME(gelu_backward_of, S)(T g, T x, T e, T q) {                            \
    return g * ((e + (T)1) * (T)0.5 + x * (q * (T)TL_SM_INV_SQRT_2PI)); }                    \
/* the tanh form: t = tanh(gelu_tanh_arg(x)) */                                             \
TL_SM_FN T TL_SM_NAME(gelu_tanh_arg, S)(T x) {                                              \
    return (x + x * x * x * (T)TL_SM_GELU_TANH_C) * (T)TL_SM_SQRT_2_OVER_PI; }              \
TL_SM_FN T TL_SM_NAME(gelu_tanh_of, S)(T x, T t) { return x * (t + (T)1) * (T)0.5; }       \
TL_SM_FN T TL_SM_NAME(gelu_tanh_backward_of, S)(T g, T x, T t) {                            \
    const T x2 = x * x;                                                                     \
    const T slope = ((T)1 - t * t) * ((x2 * (T)(3 * TL_SM_GELU_TANH_C) + (T)1)              \
                                      * (x * (T)(0.5 * TL_SM_SQRT_2_OVER_PI)));             \
    return g * ((t + (T)1) * (T)0.5 + slope); }                                             \
/* silu = x sigmoid(x); its gradient from s = sigmoid(x) */                                 \
TL_SM_FN T TL_SM_NAME(silu_backward_of, S)(T g, T x, T s) {                                 \
    return g * s * (x * ((T)1 - s) + (T)1); }                                               \
/* hardswish = x relu6(x + 3) / 6 and hardsigmoid = relu6(x + 3) / 6, PyTorch's order of   \
 * operations (a NaN stays NaN); the gradients as PyTorch's branches: hardswish's 0 for     \
 * x <= -3, g (x / 3 + 1/2) below 3, else g (a NaN x too); hardsigmoid's g (1/6) strictly   \
 * inside (-3, 3), else 0 */                                                                \
TL_SM_FN T TL_SM_NAME(relu6_of_plus3, S)(T x) {                                             \
    T t = x + (T)3; t = t < (T)0 ? (T)0 : t; return t > (T)6 ? (T)6 : t; }                  \
TL_SM_FN T TL_SM_NAME(hardswish, S)(T x) { return x * TL_SM_NAME(relu6_of_plus3, S)(x) / (T)6; } \
TL_SM_FN T TL_SM_NAME(hardsigmoid, S)(T x) { return TL_SM_NAME(relu6_of_plus3, S)(x) / (T)6; } \
TL_SM_FN T TL_SM_NAME(hardswish_backward, S)(T g, T x) {                                    \
    return x <= (T)-3 ? (T)0 : (x < (T)3 ? g * (x / (T)3 + (T)0.5) : g); }                  \
TL_SM_FN T TL_SM_NAME(hardsigmoid_backward, S)(T g, T x) {                                  \
    return (x > (T)-3 && x < (T)3) ? g * ((T)1 / (T)6) : (T)0; }

TL_DEF_UINT_DIV(u8, TL_SM_U8)
TL_DEF_SINT_DIV(i8, TL_SM_I8)
TL_DEF_SINT_DIV(i16, TL_SM_I16)
TL_DEF_SINT_DIV(i32, TL_SM_I32)
TL_DEF_SINT_DIV(i64, TL_SM_I64)
TL_DEF_SHIFT(u8, TL_SM_U8, 8)
TL_DEF_SHIFT(i8, TL_SM_I8, 8)
TL_DEF_SHIFT(i16, TL_SM_I16, 16)
TL_DEF_SHIFT(i32, TL_SM_I32, 32)
TL_DEF_SHIFT(i64, TL_SM_I64, 64)
TL_DEF_FLOAT_DIV(f32, float, f)
TL_DEF_FLOAT_DIV(f64, double, )
TL_DEF_REAL(u8, TL_SM_U8)
TL_DEF_REAL(i8, TL_SM_I8)
TL_DEF_REAL(i16, TL_SM_I16)
TL_DEF_REAL(i32, TL_SM_I32)
TL_DEF_REAL(i64, TL_SM_I64)
TL_DEF_REAL(f32, float)
TL_DEF_REAL(f64, double)
TL_DEF_INT(u8, TL_SM_U8, 0, 255)
TL_DEF_INT(i8, TL_SM_I8, -128, 127)
TL_DEF_INT(i16, TL_SM_I16, -32768, 32767)
TL_DEF_INT(i32, TL_SM_I32, -2147483647 - 1, 2147483647)
TL_DEF_INT(i64, TL_SM_I64, -9223372036854775807LL - 1, 9223372036854775807LL)
TL_DEF_FLOAT(f32, float, f)
TL_DEF_FLOAT(f64, double, )

#endif
