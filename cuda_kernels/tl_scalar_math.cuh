/* The elementwise ops whose formula is more than one expression, one source for both devices:
 * Python's integer floor division and remainder (division by zero reported, INT_MIN / -1
 * wrapping), C's truncating ones, integer powers by squaring, shifts whose count may be out
 * of range, and Python's float floor division and remainder (CPython's algorithm).  The CPU's
 * loops (torchlite/_core/kernels/ewise_scalar.h includes this file as C99) and the CUDA
 * functors (tl_ops.cuh includes it inside namespace tl) call the same functions, so `//`,
 * `%`, `**` and the shifts give the same answers on either device.
 *
 * Written in the common subset of C99 and C++ (no overloads, references or templates); each
 * TL_DEF_* macro defines one type's functions, named tl_<op>_<S>.  The includer defines first:
 *   TL_SM_FN          the qualifiers of a function
 *   TL_SM_U8, TL_SM_I8, TL_SM_I16, TL_SM_I32, TL_SM_I64, TL_SM_U64     the integer types
 * and gets every type's functions (the list at the end): tl_divfloor_i32, tl_shl_u8,
 * tl_rem_f64, ...
 * A division by zero stores TL_SM_ZERODIV (1: the CPU's TL_ERR_ZERODIV, the kernels'
 * tl::ERR_ZERODIV) in *err and gives 0. */
#ifndef TL_SCALAR_MATH_CUH
#define TL_SCALAR_MATH_CUH

#define TL_SM_ZERODIV 1

/* signed integers: Python's floor semantics for // and %, C's for div_trunc and fmod */
#define TL_DEF_SINT_DIV(S, T)                                                               \
TL_SM_FN T tl_divfloor_##S(T x, T y, int *err) {                                            \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; }                                         \
    if (y == -1) return (T)(0 - (TL_SM_U64)x);             /* INT_MIN / -1 wraps */        \
    T q = (T)(x / y); if ((x % y != 0) && ((x < 0) != (y < 0))) q--; return q; }           \
TL_SM_FN T tl_divtrunc_##S(T x, T y, int *err) {                                            \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; }                                         \
    if (y == -1) return (T)(0 - (TL_SM_U64)x);                                              \
    return (T)(x / y); }                                                                    \
TL_SM_FN T tl_rem_##S(T x, T y, int *err) {                                                 \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; }                                         \
    if (y == -1) return 0;                                                                  \
    T r = (T)(x % y); if (r != 0 && ((r < 0) != (y < 0))) r = (T)(r + y); return r; }      \
TL_SM_FN T tl_fmod_##S(T x, T y, int *err) {                                                \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; }                                         \
    if (y == -1) return 0;                                                                  \
    return (T)(x % y); }                                                                    \
TL_SM_FN T tl_ipow_##S(T b, T e) {          /* a negative power of |b| > 1 is 0, as PyTorch */ \
    if (e < 0) { if (b == 1) return 1; if (b == -1) return (T)((e & 1) ? -1 : 1); return 0; }  \
    TL_SM_U64 r = 1, bb = (TL_SM_U64)b, ee = (TL_SM_U64)e;                                  \
    while (ee) { if (ee & 1) r *= bb; bb *= bb; ee >>= 1; } return (T)r; }

/* unsigned integers (uint8): no sign to round by */
#define TL_DEF_UINT_DIV(S, T)                                                               \
TL_SM_FN T tl_divfloor_##S(T x, T y, int *err) {                                            \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; } return (T)(x / y); }                    \
TL_SM_FN T tl_divtrunc_##S(T x, T y, int *err) { return tl_divfloor_##S(x, y, err); }      \
TL_SM_FN T tl_rem_##S(T x, T y, int *err) {                                                 \
    if (y == 0) { *err = TL_SM_ZERODIV; return 0; } return (T)(x % y); }                    \
TL_SM_FN T tl_fmod_##S(T x, T y, int *err) { return tl_rem_##S(x, y, err); }               \
TL_SM_FN T tl_ipow_##S(T b, T e) {                                                          \
    TL_SM_U64 r = 1, bb = (TL_SM_U64)b, ee = (TL_SM_U64)e;                                  \
    while (ee) { if (ee & 1) r *= bb; bb *= bb; ee >>= 1; } return (T)r; }

/* shifts: a count outside [0, bits) gives 0 (left) or the sign fill (right), never UB (the
 * comparisons are made in int64, which also serves the unsigned type without a warning) */
#define TL_DEF_SHIFT(S, T, BITS)                                                            \
TL_SM_FN T tl_shl_##S(T x, T y) {                                                           \
    return ((TL_SM_I64)y < 0 || (TL_SM_I64)y >= BITS) ? (T)0 : (T)((TL_SM_U64)x << y); }    \
TL_SM_FN T tl_shr_##S(T x, T y) {                                                           \
    return ((TL_SM_I64)y < 0 || (TL_SM_I64)y >= BITS) ? (T)((TL_SM_I64)x < 0 ? -1 : 0)      \
                                                     : (T)(x >> y); }

/* Python's float floor division and remainder (the algorithm CPython uses), so results match
 * `//` and `%`; F is the libm suffix ("f" or nothing) */
#define TL_DEF_FLOAT_DIV(S, T, F)                                                           \
TL_SM_FN T tl_divfloor_##S(T a, T b) {                                                      \
    if (b == 0) return a / b;                                                               \
    T mod = fmod##F(a, b); T div = (a - mod) / b;                                           \
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                                       \
    T fl;                                                                                   \
    if (div != 0) { fl = floor##F(div); if (div - fl > (T)0.5) fl += 1; }                   \
    else fl = copysign##F((T)0, a / b);                                                     \
    return fl; }                                                                            \
TL_SM_FN T tl_rem_##S(T a, T b) {                                                           \
    T mod = fmod##F(a, b); if (mod != 0 && ((b < 0) != (mod < 0))) mod += b; return mod; }

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

#endif
