/* Elementwise loops.  ewise.h includes this file once per ISA level with TL_SFX(name)
 * defined to give each copy its own names; TL_BODY_FULL is 0 in the AVX copies, which then
 * hold only the float32/float64 loops (the ones SIMD speeds up) and leave the rest to the
 * baseline copy.  Each loop has a contiguous fast path, a path for a scalar (stride 0)
 * operand, and a strided path.  The loops assign EXPR without a cast: C converts
 * arithmetic types on assignment exactly as a cast would, and a cast to a struct (the
 * complex types) is not C. */

#define TL_UNARY(NAME, TI, TO, EXPR)                                                        \
static int TL_SFX(NAME)(char **d, const int64_t *s, int64_t n, const double *P) {          \
    int err = 0; (void)P; (void)err;                                                        \
    const int64_t s0 = s[0], s1 = s[1];                                                     \
    if (s0 == (int64_t)sizeof(TO) && s1 == (int64_t)sizeof(TI)) {                           \
        TO *o = (TO *)d[0]; const TI *a = (const TI *)d[1];                                 \
        for (int64_t i = 0; i < n; i++) { const TI x = a[i]; (void)x; o[i] = (EXPR); }  \
    } else {                                                                                \
        char *o = d[0]; const char *a = d[1];                                               \
        for (int64_t i = 0; i < n; i++) {                                                   \
            const TI x = *(const TI *)(a + i * s1); (void)x; *(TO *)(o + i * s0) = (EXPR); } \
    }                                                                                       \
    return err; }

#define TL_BINARY(NAME, TI, TO, EXPR)                                                       \
static int TL_SFX(NAME)(char **d, const int64_t *s, int64_t n, const double *P) {          \
    int err = 0; (void)P; (void)err;                                                        \
    const int64_t s0 = s[0], s1 = s[1], s2 = s[2];                                          \
    const int64_t so = (int64_t)sizeof(TO), si = (int64_t)sizeof(TI);                       \
    if (s0 == so && s1 == si && s2 == si) {                                                 \
        TO *o = (TO *)d[0]; const TI *a = (const TI *)d[1], *b = (const TI *)d[2];          \
        for (int64_t i = 0; i < n; i++) { const TI x = a[i], y = b[i]; o[i] = (EXPR); } \
    } else if (s0 == so && s1 == si && s2 == 0) {                                           \
        TO *o = (TO *)d[0]; const TI *a = (const TI *)d[1]; const TI y = *(const TI *)d[2]; \
        for (int64_t i = 0; i < n; i++) { const TI x = a[i]; o[i] = (EXPR); }           \
    } else if (s0 == so && s1 == 0 && s2 == si) {                                           \
        TO *o = (TO *)d[0]; const TI x = *(const TI *)d[1]; const TI *b = (const TI *)d[2]; \
        for (int64_t i = 0; i < n; i++) { const TI y = b[i]; o[i] = (EXPR); }           \
    } else {                                                                                \
        char *o = d[0]; const char *a = d[1], *b = d[2];                                    \
        for (int64_t i = 0; i < n; i++) {                                                   \
            const TI x = *(const TI *)(a + i * s1), y = *(const TI *)(b + i * s2);          \
            *(TO *)(o + i * s0) = (EXPR); }                                             \
    }                                                                                       \
    return err; }

/* Ternary: d[1] is `c` of type TC, d[2] `x` and d[3] `y` of type TI. */
#define TL_TERNARY(NAME, TC, TI, EXPR)                                                      \
static int TL_SFX(NAME)(char **d, const int64_t *s, int64_t n, const double *P) {          \
    (void)P;                                                                                \
    const int64_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];                               \
    const int64_t si = (int64_t)sizeof(TI), sc = (int64_t)sizeof(TC);                       \
    if (s0 == si && s1 == sc && s2 == si && s3 == si) {                                     \
        TI *o = (TI *)d[0]; const TC *cc = (const TC *)d[1];                                \
        const TI *a = (const TI *)d[2], *b = (const TI *)d[3];                              \
        for (int64_t i = 0; i < n; i++) { const TC c = cc[i]; const TI x = a[i], y = b[i];  \
            o[i] = (EXPR); }                                                            \
    } else if (s0 == si && s1 == sc && s2 == si && s3 == 0) {  /* where(c, x, 0.0), lerp */ \
        TI *o = (TI *)d[0]; const TC *cc = (const TC *)d[1];                                \
        const TI *a = (const TI *)d[2]; const TI y = *(const TI *)d[3];                     \
        for (int64_t i = 0; i < n; i++) { const TC c = cc[i]; const TI x = a[i];            \
            o[i] = (EXPR); }                                                            \
    } else if (s0 == si && s1 == sc && s2 == 0 && s3 == si) {  /* where(c, 0.0, y) */       \
        TI *o = (TI *)d[0]; const TC *cc = (const TC *)d[1];                                \
        const TI x = *(const TI *)d[2]; const TI *b = (const TI *)d[3];                     \
        for (int64_t i = 0; i < n; i++) { const TC c = cc[i]; const TI y = b[i];            \
            o[i] = (EXPR); }                                                            \
    } else {                                                                                \
        char *o = d[0]; const char *cc = d[1], *a = d[2], *b = d[3];                        \
        for (int64_t i = 0; i < n; i++) {                                                   \
            const TC c = *(const TC *)(cc + i * s1);                                        \
            const TI x = *(const TI *)(a + i * s2), y = *(const TI *)(b + i * s3);          \
            *(TI *)(o + i * s0) = (EXPR); }                                             \
    }                                                                                       \
    return 0; }

#define TL_CAST(NAME, TI, TO, EXPR) TL_UNARY(NAME, TI, TO, EXPR)

/* Loops whose fast formula EXPR holds on a domain only: each block of TL_FIX_BLOCK elements
 * is computed into a buffer, flagging the elements where BAD holds (both vectorise); those
 * few are then recomputed by SLOW (the C library) before the block is stored.  Working
 * through the buffer keeps in-place calls right: the input of a block is intact while its
 * flagged elements are redone. */
#define TL_FIX_BLOCK 256
#define TL_UNARY_FIX(NAME, TI, TO, EXPR, BAD, SLOW)                                         \
static int TL_SFX(NAME)(char **d, const int64_t *s, int64_t n, const double *P) {          \
    (void)P;                                                                                \
    const int64_t s0 = s[0], s1 = s[1];                                                     \
    TO buf[TL_FIX_BLOCK];                                                                   \
    for (int64_t b0 = 0; b0 < n; b0 += TL_FIX_BLOCK) {                                      \
        const int64_t m = n - b0 < TL_FIX_BLOCK ? n - b0 : TL_FIX_BLOCK;                    \
        int bad = 0;                                                                        \
        if (s1 == (int64_t)sizeof(TI)) {                                                    \
            const TI *a = (const TI *)d[1] + b0;                                            \
            for (int64_t i = 0; i < m; i++) { const TI x = a[i]; buf[i] = (EXPR); bad |= (BAD); } \
        } else {                                                                            \
            const char *a = d[1] + b0 * s1;                                                 \
            for (int64_t i = 0; i < m; i++) {                                               \
                const TI x = *(const TI *)(a + i * s1); buf[i] = (EXPR); bad |= (BAD); }    \
        }                                                                                   \
        if (bad)                                                                            \
            for (int64_t i = 0; i < m; i++) {                                               \
                const TI x = *(const TI *)(d[1] + (b0 + i) * s1); if (BAD) buf[i] = (SLOW); } \
        if (s0 == (int64_t)sizeof(TO)) memcpy((TO *)d[0] + b0, buf, (size_t)m * sizeof(TO)); \
        else for (int64_t i = 0; i < m; i++) *(TO *)(d[0] + (b0 + i) * s0) = buf[i];        \
    }                                                                                       \
    return 0; }

#define TL_BINARY_FIX(NAME, TI, TO, EXPR, BAD, SLOW)                                        \
static int TL_SFX(NAME)(char **d, const int64_t *s, int64_t n, const double *P) {          \
    (void)P;                                                                                \
    const int64_t s0 = s[0], s1 = s[1], s2 = s[2];                                          \
    TO buf[TL_FIX_BLOCK];                                                                   \
    for (int64_t b0 = 0; b0 < n; b0 += TL_FIX_BLOCK) {                                      \
        const int64_t m = n - b0 < TL_FIX_BLOCK ? n - b0 : TL_FIX_BLOCK;                    \
        int bad = 0;                                                                        \
        if (s1 == (int64_t)sizeof(TI) && s2 == 0) {          /* tensor ** number */         \
            const TI *a = (const TI *)d[1] + b0; const TI y = *(const TI *)d[2];             \
            for (int64_t i = 0; i < m; i++) { const TI x = a[i]; buf[i] = (EXPR); bad |= (BAD); } \
        } else if (s1 == (int64_t)sizeof(TI) && s2 == (int64_t)sizeof(TI)) {                 \
            const TI *a = (const TI *)d[1] + b0, *c = (const TI *)d[2] + b0;                 \
            for (int64_t i = 0; i < m; i++) { const TI x = a[i], y = c[i];                  \
                buf[i] = (EXPR); bad |= (BAD); }                                            \
        } else {                                                                            \
            for (int64_t i = 0; i < m; i++) {                                               \
                const TI x = *(const TI *)(d[1] + (b0 + i) * s1);                           \
                const TI y = *(const TI *)(d[2] + (b0 + i) * s2);                           \
                buf[i] = (EXPR); bad |= (BAD); }                                            \
        }                                                                                   \
        if (bad)                                                                            \
            for (int64_t i = 0; i < m; i++) {                                               \
                const TI x = *(const TI *)(d[1] + (b0 + i) * s1);                           \
                const TI y = *(const TI *)(d[2] + (b0 + i) * s2);                           \
                if (BAD) buf[i] = (SLOW); }                                                 \
        if (s0 == (int64_t)sizeof(TO)) memcpy((TO *)d[0] + b0, buf, (size_t)m * sizeof(TO)); \
        else for (int64_t i = 0; i < m; i++) *(TO *)(d[0] + (b0 + i) * s0) = buf[i];        \
    }                                                                                       \
    return 0; }

/* ---- float loops (every ISA copy) -------------------------------------------------- */
/* FOP(OP, f32-expression, f64-expression) defines u_OP_f32 and u_OP_f64; the expressions are
 * ewise_exprs.h's rows. */
#define FOP(OP, E32, E64) TL_UNARY(u_##OP##_f32, float, float, E32)                        \
                          TL_UNARY(u_##OP##_f64, double, double, E64)
#define FOPB(OP, E32, E64) TL_UNARY(u_##OP##_f32, float, tl_bool, E32)                     \
                           TL_UNARY(u_##OP##_f64, double, tl_bool, E64)
TL_FLOAT_UNARY_EXPRS(FOP)
TL_FLOAT_UNARY_BOOL_EXPRS(FOPB)
TL_UNARY_FIX(u_EXPM1_f32, float, float, tl_expm1f_fast(x), tl_expm1f_bad(x), expm1f(x))
TL_UNARY(u_EXPM1_f64, double, double, expm1(x))
TL_UNARY_FIX(u_LOG1P_f32, float, float, tl_log1pf_fast(x), tl_log1pf_bad(x), log1pf(x))
TL_UNARY(u_LOG1P_f64, double, double, log1p(x))
TL_UNARY_FIX(u_SIN_f32, float, float, tl_sinf_fast(x), tl_trig_bad(x), sinf(x))
TL_UNARY(u_SIN_f64, double, double, sin(x))
TL_UNARY_FIX(u_COS_f32, float, float, tl_cosf_fast(x), tl_trig_bad(x), cosf(x))
TL_UNARY(u_COS_f64, double, double, cos(x))
TL_UNARY_FIX(u_TAN_f32, float, float, tl_tanf_fast(x), tl_trig_bad(x), tanf(x))
TL_UNARY(u_TAN_f64, double, double, tan(x))
TL_UNARY_FIX(u_ERFINV_f32, float, float, tl_erfinvf_fast(x), tl_erfinvf_bad(x), tl_erfinv_f32(x))
TL_UNARY(u_ERFINV_f64, double, double, tl_erfinv_f64(x))

#define FBOP(OP, E32, E64) TL_BINARY(b_##OP##_f32, float, float, E32)                      \
                           TL_BINARY(b_##OP##_f64, double, double, E64)
#define FBOPB(OP, E) TL_BINARY(b_##OP##_f32, float, tl_bool, E)                             \
                     TL_BINARY(b_##OP##_f64, double, tl_bool, E)
TL_FLOAT_BINARY_EXPRS(FBOP)
TL_FLOAT_BINARY_BOOL_EXPRS(FBOPB)
#define FTOP(OP, C32, C64, E32, E64) TL_TERNARY(t_##OP##_f32, C32, float, E32)                \
                                     TL_TERNARY(t_##OP##_f64, C64, double, E64)
TL_FLOAT_TERNARY_EXPRS(FTOP)
TL_BINARY_FIX(b_POW_f32, float, float, tl_powf_fast(x, y), tl_powf_bad(x, y), powf(x, y))
TL_BINARY(b_POW_f64, double, double, pow(x, y))

/* lerp / addcmul / addcdiv: all three operands have the compute type (TC == TI). */

/* ---- complex loops (every ISA copy; the math is cplx.h's) --------------------------- */
#define COP(OP, FN) TL_UNARY(u_##OP##_c64, tl_c64, tl_c64, tl_c64_##FN(x))                  \
                    TL_UNARY(u_##OP##_c128, tl_c128, tl_c128, tl_c128_##FN(x))
#define COPR(OP, FN) TL_UNARY(u_##OP##_c64, tl_c64, float, tl_c64_##FN(x))                  \
                     TL_UNARY(u_##OP##_c128, tl_c128, double, tl_c128_##FN(x))
#define COPB(OP, FN) TL_UNARY(u_##OP##_c64, tl_c64, tl_bool, tl_c64_##FN(x))                \
                     TL_UNARY(u_##OP##_c128, tl_c128, tl_bool, tl_c128_##FN(x))
COP(NEG, neg) COP(SQUARE, square) COP(RECIPROCAL, recip) COP(EXP, exp) COP(EXP2, exp2)
COP(EXPM1, expm1) COP(LOG, log) COP(LOG2, log2) COP(LOG10, log10) COP(LOG1P, log1p)
COP(SQRT, sqrt) COP(RSQRT, rsqrt) COP(SIN, sin) COP(COS, cos) COP(TAN, tan) COP(ASIN, asin)
COP(ACOS, acos) COP(ATAN, atan) COP(SINH, sinh) COP(COSH, cosh) COP(TANH, tanh)
COP(ASINH, asinh) COP(ACOSH, acosh) COP(ATANH, atanh) COP(SIGMOID, sigmoid)
COP(SGN, sgn) COP(CONJ, conj)
/* nan_to_num: P[0..2] = the nan, posinf and neginf replacements of each part */
TL_UNARY(u_NAN_TO_NUM_c64, tl_c64, tl_c64, tl_c64_nan_to_num(x, (float)P[0], (float)P[1], (float)P[2]))
TL_UNARY(u_NAN_TO_NUM_c128, tl_c128, tl_c128, tl_c128_nan_to_num(x, P[0], P[1], P[2]))
COPR(ABS, abs) COPR(ANGLE, arg)
COPB(ISNAN, isnan) COPB(ISINF, isinf) COPB(ISFINITE, isfinite) COPB(LOGICAL_NOT, iszero)
#define CBOP(OP, E64, E128) TL_BINARY(b_##OP##_c64, tl_c64, tl_c64, E64)                    \
                            TL_BINARY(b_##OP##_c128, tl_c128, tl_c128, E128)
CBOP(ADD, tl_c64_add(x, y), tl_c128_add(x, y))
CBOP(SUB, tl_c64_sub(x, y), tl_c128_sub(x, y))
CBOP(MUL, tl_c64_mul(x, y), tl_c128_mul(x, y))
CBOP(DIV, tl_c64_div(x, y), tl_c128_div(x, y))
CBOP(POW, tl_c64_pow(x, y), tl_c128_pow(x, y))
/* add_alpha: alpha = P[0] + i P[1] */
CBOP(ADD_ALPHA, tl_c64_add_calpha(x, y, (float)P[0], (float)P[1]), tl_c128_add_calpha(x, y, P[0], P[1]))
TL_BINARY(b_EQ_c64, tl_c64, tl_bool, tl_c64_eq(x, y))
TL_BINARY(b_EQ_c128, tl_c128, tl_bool, tl_c128_eq(x, y))
TL_BINARY(b_NE_c64, tl_c64, tl_bool, !tl_c64_eq(x, y))
TL_BINARY(b_NE_c128, tl_c128, tl_bool, !tl_c128_eq(x, y))
TL_TERNARY(t_WHERE_c64, tl_bool, tl_c64, c ? x : y)
TL_TERNARY(t_WHERE_c128, tl_bool, tl_c128, c ? x : y)
/* lerp / addcmul / addcdiv on complex operands (the scalar value P[0] is real) */
#define CTOP(OP, S, T, R, E) TL_TERNARY(t_##OP##_##S, T, T, E)
#define CTOPS(S, T, R)                                                                      \
    CTOP(ADDCMUL, S, T, R, tl_##S##_addcmul(c, x, y, (R)P[0]))                               \
    CTOP(ADDCDIV, S, T, R, tl_##S##_addcdiv(c, x, y, (R)P[0]))                               \
    CTOP(LERP, S, T, R, tl_##S##_lerp(c, x, y))
CTOPS(c64, tl_c64, float)
CTOPS(c128, tl_c128, double)
TL_CAST(c_c64_c64, tl_c64, tl_c64, x)
TL_CAST(c_c128_c128, tl_c128, tl_c128, x)

/* casts from and to float32 (the common ones in a float32 model) */
TL_CAST(c_f32_f64, float, double, x)
TL_CAST(c_f64_f32, double, float, x)
TL_CAST(c_f32_f32, float, float, x)
TL_CAST(c_f64_f64, double, double, x)
TL_CAST(c_f32_f16, float, tl_half, tl_float_to_half(x))
TL_CAST(c_f16_f32, tl_half, float, tl_half_to_float(x))
TL_CAST(c_f32_bf16, float, tl_bf16, tl_float_to_bf16(x))
TL_CAST(c_bf16_f32, tl_bf16, float, tl_bf16_to_float(x))

#if TL_BODY_FULL
/* ---- integer and bool loops (baseline copy only) ----------------------------------- */
#define FOR_INT(M, A) M(A, u8, uint8_t) M(A, i8, int8_t) M(A, i16, int16_t) M(A, i32, int32_t) M(A, i64, int64_t)
#define FOR_SINT(M, A) M(A, i8, int8_t) M(A, i16, int16_t) M(A, i32, int32_t) M(A, i64, int64_t)

#define IU(A, S, T) TL_UNARY(u_##A##_##S, T, T, IU_##A(x, S, T))
#define IUB(A, S, T) TL_UNARY(u_##A##_##S, T, tl_bool, IU_##A(x, S, T))
#define IU_NEG(x, S, T) tl_neg_##S(x)
#define IU_ABS(x, S, T) tl_abs_##S(x)
#define IU_SIGN(x, S, T) tl_sign_##S(x)
#define IU_SQUARE(x, S, T) tl_square_##S(x)
#define IU_BITWISE_NOT(x, S, T) (T)(~(x))
#define IU_LOGICAL_NOT(x, S, T) ((x) == 0)
#define IU_RELU(x, S, T) tl_relu_##S(x)
#define IU_CLAMP(x, S, T) tl_clamp_##S(x, P[0], P[1])
#define IU_ISNAN(x, S, T) 0
#define IU_ISINF(x, S, T) 0
#define IU_ISPOSINF(x, S, T) 0
#define IU_ISNEGINF(x, S, T) 0
#define IU_ISFINITE(x, S, T) 1
#define IU_SIGNBIT(x, S, T) ((x) < 0)
FOR_INT(IU, NEG) FOR_INT(IU, ABS) FOR_INT(IU, SIGN) FOR_INT(IU, SQUARE) FOR_INT(IU, BITWISE_NOT)
FOR_INT(IU, RELU) FOR_INT(IU, CLAMP)
FOR_INT(IUB, LOGICAL_NOT) FOR_INT(IUB, ISNAN) FOR_INT(IUB, ISINF) FOR_INT(IUB, ISPOSINF)
FOR_INT(IUB, ISNEGINF) FOR_INT(IUB, ISFINITE) FOR_INT(IUB, SIGNBIT)
TL_UNARY(u_LOGICAL_NOT_b, tl_bool, tl_bool, x == 0)
TL_UNARY(u_BITWISE_NOT_b, tl_bool, tl_bool, x == 0)
TL_UNARY(u_ABS_b, tl_bool, tl_bool, x)
TL_UNARY(u_SIGN_b, tl_bool, tl_bool, x)
TL_UNARY(u_SQUARE_b, tl_bool, tl_bool, x)
TL_UNARY(u_ISNAN_b, tl_bool, tl_bool, 0)
TL_UNARY(u_ISINF_b, tl_bool, tl_bool, 0)
TL_UNARY(u_ISPOSINF_b, tl_bool, tl_bool, 0)
TL_UNARY(u_ISNEGINF_b, tl_bool, tl_bool, 0)
TL_UNARY(u_ISFINITE_b, tl_bool, tl_bool, 1)
TL_UNARY(u_SIGNBIT_b, tl_bool, tl_bool, 0)

#define IB(A, S, T) TL_BINARY(b_##A##_##S, T, T, IB_##A(x, y, S, T))
#define IBB(A, S, T) TL_BINARY(b_##A##_##S, T, tl_bool, IB_##A(x, y, S, T))
#define IB_ADD(x, y, S, T) tl_add_##S(x, y)
#define IB_SUB(x, y, S, T) tl_sub_##S(x, y)
#define IB_MUL(x, y, S, T) tl_mul_##S(x, y)
#define IB_DIV_TRUNC(x, y, S, T) tl_divtrunc_##S(x, y, &err)
#define IB_DIV_FLOOR(x, y, S, T) tl_divfloor_##S(x, y, &err)
#define IB_REMAINDER(x, y, S, T) tl_rem_##S(x, y, &err)
#define IB_FMOD(x, y, S, T) tl_fmod_##S(x, y, &err)
#define IB_POW(x, y, S, T) tl_ipow_##S(x, y)
#define IB_MAXIMUM(x, y, S, T) tl_maximum_##S(x, y)
#define IB_MINIMUM(x, y, S, T) tl_minimum_##S(x, y)
#define IB_BITWISE_AND(x, y, S, T) (T)((x) & (y))
#define IB_BITWISE_OR(x, y, S, T) (T)((x) | (y))
#define IB_BITWISE_XOR(x, y, S, T) (T)((x) ^ (y))
#define IB_SHL(x, y, S, T) tl_shl_##S(x, y)
#define IB_SHR(x, y, S, T) tl_shr_##S(x, y)
#define IB_ADD_ALPHA(x, y, S, T) tl_add_alpha_##S(x, y, (int64_t)P[0])
#define IB_EQ(x, y, S, T) ((x) == (y))
#define IB_NE(x, y, S, T) ((x) != (y))
#define IB_LT(x, y, S, T) ((x) < (y))
#define IB_LE(x, y, S, T) ((x) <= (y))
#define IB_GT(x, y, S, T) ((x) > (y))
#define IB_GE(x, y, S, T) ((x) >= (y))
#define IB_LOGICAL_AND(x, y, S, T) (((x) != 0) && ((y) != 0))
#define IB_LOGICAL_OR(x, y, S, T) (((x) != 0) || ((y) != 0))
#define IB_LOGICAL_XOR(x, y, S, T) (((x) != 0) != ((y) != 0))
FOR_INT(IB, ADD) FOR_INT(IB, SUB) FOR_INT(IB, MUL) FOR_INT(IB, DIV_TRUNC) FOR_INT(IB, DIV_FLOOR)
FOR_INT(IB, REMAINDER) FOR_INT(IB, FMOD) FOR_INT(IB, POW) FOR_INT(IB, MAXIMUM) FOR_INT(IB, MINIMUM)
FOR_INT(IB, BITWISE_AND) FOR_INT(IB, BITWISE_OR) FOR_INT(IB, BITWISE_XOR) FOR_INT(IB, SHL)
FOR_INT(IB, SHR) FOR_INT(IB, ADD_ALPHA)
FOR_INT(IBB, EQ) FOR_INT(IBB, NE) FOR_INT(IBB, LT) FOR_INT(IBB, LE) FOR_INT(IBB, GT) FOR_INT(IBB, GE)
FOR_INT(IBB, LOGICAL_AND) FOR_INT(IBB, LOGICAL_OR) FOR_INT(IBB, LOGICAL_XOR)
TL_BINARY(b_ADD_b, tl_bool, tl_bool, x | y)
TL_BINARY(b_MUL_b, tl_bool, tl_bool, x & y)
TL_BINARY(b_MAXIMUM_b, tl_bool, tl_bool, x | y)
TL_BINARY(b_MINIMUM_b, tl_bool, tl_bool, x & y)
TL_BINARY(b_BITWISE_AND_b, tl_bool, tl_bool, x & y)
TL_BINARY(b_BITWISE_OR_b, tl_bool, tl_bool, x | y)
TL_BINARY(b_BITWISE_XOR_b, tl_bool, tl_bool, x ^ y)
TL_BINARY(b_EQ_b, tl_bool, tl_bool, x == y)
TL_BINARY(b_NE_b, tl_bool, tl_bool, x != y)
TL_BINARY(b_LT_b, tl_bool, tl_bool, x < y)
TL_BINARY(b_LE_b, tl_bool, tl_bool, x <= y)
TL_BINARY(b_GT_b, tl_bool, tl_bool, x > y)
TL_BINARY(b_GE_b, tl_bool, tl_bool, x >= y)
TL_BINARY(b_LOGICAL_AND_b, tl_bool, tl_bool, x && y)
TL_BINARY(b_LOGICAL_OR_b, tl_bool, tl_bool, x || y)
TL_BINARY(b_LOGICAL_XOR_b, tl_bool, tl_bool, x != y)

#define FOR_ALL(M) M(b, tl_bool) M(u8, uint8_t) M(i8, int8_t) M(i16, int16_t) M(i32, int32_t) M(i64, int64_t)
#define IWHERE(S, T) TL_TERNARY(t_WHERE_##S, tl_bool, T, c ? x : y)
FOR_ALL(IWHERE)
TL_TERNARY(t_WHERE_f16, tl_bool, uint16_t, c ? x : y)

/* every other cast, through the widest type of its kind */
#define CAST_FROM(SI, TI, CVT_IN)                                                           \
    TL_CAST(c_##SI##_b, TI, tl_bool, CVT_IN(x) != 0)                                        \
    TL_CAST(c_##SI##_u8, TI, uint8_t, (uint8_t)(int64_t)CVT_IN(x))                          \
    TL_CAST(c_##SI##_i8, TI, int8_t, (int8_t)(int64_t)CVT_IN(x))                            \
    TL_CAST(c_##SI##_i16, TI, int16_t, (int16_t)(int64_t)CVT_IN(x))                         \
    TL_CAST(c_##SI##_i32, TI, int32_t, (int32_t)(int64_t)CVT_IN(x))                         \
    TL_CAST(c_##SI##_i64, TI, int64_t, (int64_t)CVT_IN(x))
#define CVT_ID(x) (x)
#define CVT_H(x) tl_half_to_float(x)
#define CVT_BF(x) tl_bf16_to_float(x)
CAST_FROM(b, tl_bool, CVT_ID) CAST_FROM(u8, uint8_t, CVT_ID) CAST_FROM(i8, int8_t, CVT_ID)
CAST_FROM(i16, int16_t, CVT_ID) CAST_FROM(i32, int32_t, CVT_ID) CAST_FROM(i64, int64_t, CVT_ID)
CAST_FROM(f16, tl_half, CVT_H) CAST_FROM(bf16, tl_bf16, CVT_BF)
CAST_FROM(f32, float, CVT_ID) CAST_FROM(f64, double, CVT_ID)
#define CAST_TO_FLOAT(SI, TI, CVT_IN)                                                       \
    TL_CAST(c_##SI##_f16, TI, tl_half, tl_float_to_half((float)CVT_IN(x)))                  \
    TL_CAST(c_##SI##_bf16, TI, tl_bf16, tl_float_to_bf16((float)CVT_IN(x)))                 \
    TL_CAST(c_##SI##_f32x, TI, float, (float)CVT_IN(x))                                     \
    TL_CAST(c_##SI##_f64x, TI, double, (double)CVT_IN(x))
CAST_TO_FLOAT(b, tl_bool, CVT_ID) CAST_TO_FLOAT(u8, uint8_t, CVT_ID) CAST_TO_FLOAT(i8, int8_t, CVT_ID)
CAST_TO_FLOAT(i16, int16_t, CVT_ID) CAST_TO_FLOAT(i32, int32_t, CVT_ID) CAST_TO_FLOAT(i64, int64_t, CVT_ID)
CAST_TO_FLOAT(f16, tl_half, CVT_H) CAST_TO_FLOAT(bf16, tl_bf16, CVT_BF)
TL_CAST(c_f64_f16, double, tl_half, tl_float_to_half((float)x))
TL_CAST(c_f64_bf16, double, tl_bf16, tl_float_to_bf16((float)x))
TL_CAST(c_f16_f64, tl_half, double, (double)tl_half_to_float(x))
TL_CAST(c_bf16_f64, tl_bf16, double, (double)tl_bf16_to_float(x))
/* complex casts: a real becomes (x, 0); a complex cast to a real type keeps the real part
 * (PyTorch warns about it above this layer); to bool, nonzero means either part nonzero */
#define CAST_TO_COMPLEX(SI, TI, CVT_IN)                                                     \
    TL_CAST(c_##SI##_c64, TI, tl_c64, tl_c64_mk((float)CVT_IN(x), 0.0f))                       \
    TL_CAST(c_##SI##_c128, TI, tl_c128, tl_c128_mk((double)CVT_IN(x), 0.0))
CAST_TO_COMPLEX(b, tl_bool, CVT_ID) CAST_TO_COMPLEX(u8, uint8_t, CVT_ID)
CAST_TO_COMPLEX(i8, int8_t, CVT_ID) CAST_TO_COMPLEX(i16, int16_t, CVT_ID)
CAST_TO_COMPLEX(i32, int32_t, CVT_ID) CAST_TO_COMPLEX(i64, int64_t, CVT_ID)
CAST_TO_COMPLEX(f16, tl_half, CVT_H) CAST_TO_COMPLEX(bf16, tl_bf16, CVT_BF)
CAST_TO_COMPLEX(f32, float, CVT_ID) CAST_TO_COMPLEX(f64, double, CVT_ID)
TL_CAST(c_c64_c128, tl_c64, tl_c128, tl_c128_mk((double)x.re, (double)x.im))
TL_CAST(c_c128_c64, tl_c128, tl_c64, tl_c64_mk((float)x.re, (float)x.im))
#define CVT_RE(x) ((x).re)
#define CAST_FROM_COMPLEX(SI, TI)                                                           \
    TL_CAST(c_##SI##_b, TI, tl_bool, x.re != 0 || x.im != 0)                                \
    TL_CAST(c_##SI##_u8, TI, uint8_t, (uint8_t)(int64_t)x.re)                               \
    TL_CAST(c_##SI##_i8, TI, int8_t, (int8_t)(int64_t)x.re)                                 \
    TL_CAST(c_##SI##_i16, TI, int16_t, (int16_t)(int64_t)x.re)                              \
    TL_CAST(c_##SI##_i32, TI, int32_t, (int32_t)(int64_t)x.re)                              \
    TL_CAST(c_##SI##_i64, TI, int64_t, (int64_t)x.re)                                       \
    CAST_TO_FLOAT(SI, TI, CVT_RE)
CAST_FROM_COMPLEX(c64, tl_c64) CAST_FROM_COMPLEX(c128, tl_c128)
/* complex32 (two float16 parts): to and from every dtype through the float value of its parts;
 * its arithmetic runs in complex64 (elementwise.pyx's compute dtype), so these casts and a
 * where are all the loops it has */
#define CVT_C32RE(x) tl_half_to_float((x).re)
#define TL_C32(re_, im_) tl_c32_mk((float)(re_), (float)(im_))
#define CAST_TO_C32(SI, TI, CVT_IN) TL_CAST(c_##SI##_c32, TI, tl_c32, TL_C32(CVT_IN(x), 0.0f))
CAST_TO_C32(b, tl_bool, CVT_ID) CAST_TO_C32(u8, uint8_t, CVT_ID) CAST_TO_C32(i8, int8_t, CVT_ID)
CAST_TO_C32(i16, int16_t, CVT_ID) CAST_TO_C32(i32, int32_t, CVT_ID) CAST_TO_C32(i64, int64_t, CVT_ID)
CAST_TO_C32(bf16, tl_bf16, CVT_BF) CAST_TO_C32(f32, float, CVT_ID) CAST_TO_C32(f64, double, CVT_ID)
TL_CAST(c_f16_c32, tl_half, tl_c32, tl_c32_of_half(x))
TL_CAST(c_c64_c32, tl_c64, tl_c32, TL_C32(x.re, x.im))
TL_CAST(c_c128_c32, tl_c128, tl_c32, TL_C32(x.re, x.im))
TL_CAST(c_c32_c64, tl_c32, tl_c64, tl_c64_mk(tl_half_to_float(x.re), tl_half_to_float(x.im)))
TL_CAST(c_c32_c128, tl_c32, tl_c128, tl_c128_mk(tl_half_to_float(x.re), tl_half_to_float(x.im)))
TL_CAST(c_c32_c32, tl_c32, tl_c32, x)
TL_CAST(c_c32_b, tl_c32, tl_bool, CVT_C32RE(x) != 0 || tl_half_to_float(x.im) != 0)
TL_CAST(c_c32_u8, tl_c32, uint8_t, (uint8_t)(int64_t)CVT_C32RE(x))
TL_CAST(c_c32_i8, tl_c32, int8_t, (int8_t)(int64_t)CVT_C32RE(x))
TL_CAST(c_c32_i16, tl_c32, int16_t, (int16_t)(int64_t)CVT_C32RE(x))
TL_CAST(c_c32_i32, tl_c32, int32_t, (int32_t)(int64_t)CVT_C32RE(x))
TL_CAST(c_c32_i64, tl_c32, int64_t, (int64_t)CVT_C32RE(x))
TL_CAST(c_c32_f16, tl_c32, tl_half, x.re)
TL_CAST(c_c32_bf16, tl_c32, tl_bf16, tl_float_to_bf16(CVT_C32RE(x)))
TL_CAST(c_c32_f32x, tl_c32, float, CVT_C32RE(x))
TL_CAST(c_c32_f64x, tl_c32, double, (double)CVT_C32RE(x))
TL_TERNARY(t_WHERE_c32, tl_bool, tl_c32, c ? x : y)
#endif /* TL_BODY_FULL */

/* ---- registration: write this copy's loops into the tables ------------------------- */
static void TL_SFX(tl_ewise_register)(tl_loop U[][TL_NDTYPES], tl_loop B[][TL_NDTYPES],
                                      tl_loop T[][TL_NDTYPES], tl_loop C[][TL_NDTYPES]) {
#define u_RF(OP) U[TL_U_##OP][TL_FLOAT32] = TL_SFX(u_##OP##_f32); U[TL_U_##OP][TL_FLOAT64] = TL_SFX(u_##OP##_f64);
#define b_RF(OP) B[TL_B_##OP][TL_FLOAT32] = TL_SFX(b_##OP##_f32); B[TL_B_##OP][TL_FLOAT64] = TL_SFX(b_##OP##_f64);
    TL_UNARY_OPS_FLOAT(u_RF)
    TL_BINARY_OPS_FLOAT(b_RF)
#define u_RC(OP) U[TL_U_##OP][TL_COMPLEX64] = TL_SFX(u_##OP##_c64); U[TL_U_##OP][TL_COMPLEX128] = TL_SFX(u_##OP##_c128);
#define b_RC(OP) B[TL_B_##OP][TL_COMPLEX64] = TL_SFX(b_##OP##_c64); B[TL_B_##OP][TL_COMPLEX128] = TL_SFX(b_##OP##_c128);
    TL_UNARY_OPS_COMPLEX(u_RC)
    TL_BINARY_OPS_COMPLEX(b_RC)
    u_RC(ABS) u_RC(ANGLE) u_RC(ISNAN) u_RC(ISINF) u_RC(ISFINITE) u_RC(LOGICAL_NOT) b_RC(EQ) b_RC(NE)
    T[TL_T_WHERE][TL_COMPLEX64] = TL_SFX(t_WHERE_c64); T[TL_T_WHERE][TL_COMPLEX128] = TL_SFX(t_WHERE_c128);
#define t_RC(OP) T[TL_T_##OP][TL_COMPLEX64] = TL_SFX(t_##OP##_c64); T[TL_T_##OP][TL_COMPLEX128] = TL_SFX(t_##OP##_c128);
    t_RC(ADDCMUL) t_RC(ADDCDIV) t_RC(LERP)
    C[TL_COMPLEX64][TL_COMPLEX64] = TL_SFX(c_c64_c64); C[TL_COMPLEX128][TL_COMPLEX128] = TL_SFX(c_c128_c128);
    T[TL_T_WHERE][TL_FLOAT32] = TL_SFX(t_WHERE_f32); T[TL_T_WHERE][TL_FLOAT64] = TL_SFX(t_WHERE_f64);
    T[TL_T_LERP][TL_FLOAT32] = TL_SFX(t_LERP_f32); T[TL_T_LERP][TL_FLOAT64] = TL_SFX(t_LERP_f64);
    T[TL_T_ADDCMUL][TL_FLOAT32] = TL_SFX(t_ADDCMUL_f32); T[TL_T_ADDCMUL][TL_FLOAT64] = TL_SFX(t_ADDCMUL_f64);
    T[TL_T_ADDCDIV][TL_FLOAT32] = TL_SFX(t_ADDCDIV_f32); T[TL_T_ADDCDIV][TL_FLOAT64] = TL_SFX(t_ADDCDIV_f64);
    C[TL_FLOAT32][TL_FLOAT64] = TL_SFX(c_f32_f64); C[TL_FLOAT64][TL_FLOAT32] = TL_SFX(c_f64_f32);
    C[TL_FLOAT32][TL_FLOAT32] = TL_SFX(c_f32_f32); C[TL_FLOAT64][TL_FLOAT64] = TL_SFX(c_f64_f64);
    C[TL_FLOAT32][TL_FLOAT16] = TL_SFX(c_f32_f16); C[TL_FLOAT16][TL_FLOAT32] = TL_SFX(c_f16_f32);
    C[TL_FLOAT32][TL_BFLOAT16] = TL_SFX(c_f32_bf16); C[TL_BFLOAT16][TL_FLOAT32] = TL_SFX(c_bf16_f32);
#if TL_BODY_FULL
#define REG_INT_U(OP) U[TL_U_##OP][TL_UINT8] = TL_SFX(u_##OP##_u8); U[TL_U_##OP][TL_INT8] = TL_SFX(u_##OP##_i8); \
    U[TL_U_##OP][TL_INT16] = TL_SFX(u_##OP##_i16); U[TL_U_##OP][TL_INT32] = TL_SFX(u_##OP##_i32); \
    U[TL_U_##OP][TL_INT64] = TL_SFX(u_##OP##_i64);
#define REG_INT_B(OP) B[TL_B_##OP][TL_UINT8] = TL_SFX(b_##OP##_u8); B[TL_B_##OP][TL_INT8] = TL_SFX(b_##OP##_i8); \
    B[TL_B_##OP][TL_INT16] = TL_SFX(b_##OP##_i16); B[TL_B_##OP][TL_INT32] = TL_SFX(b_##OP##_i32); \
    B[TL_B_##OP][TL_INT64] = TL_SFX(b_##OP##_i64);
    REG_INT_U(NEG) REG_INT_U(ABS) REG_INT_U(SIGN) REG_INT_U(SQUARE) REG_INT_U(BITWISE_NOT)
    REG_INT_U(RELU) REG_INT_U(CLAMP) REG_INT_U(LOGICAL_NOT) REG_INT_U(ISNAN) REG_INT_U(ISINF)
    REG_INT_U(ISPOSINF) REG_INT_U(ISNEGINF) REG_INT_U(ISFINITE) REG_INT_U(SIGNBIT)
    U[TL_U_LOGICAL_NOT][TL_BOOL] = TL_SFX(u_LOGICAL_NOT_b); U[TL_U_BITWISE_NOT][TL_BOOL] = TL_SFX(u_BITWISE_NOT_b);
    U[TL_U_ABS][TL_BOOL] = TL_SFX(u_ABS_b); U[TL_U_SIGN][TL_BOOL] = TL_SFX(u_SIGN_b);
    U[TL_U_SQUARE][TL_BOOL] = TL_SFX(u_SQUARE_b);
    U[TL_U_ISNAN][TL_BOOL] = TL_SFX(u_ISNAN_b); U[TL_U_ISINF][TL_BOOL] = TL_SFX(u_ISINF_b);
    U[TL_U_ISPOSINF][TL_BOOL] = TL_SFX(u_ISPOSINF_b); U[TL_U_ISNEGINF][TL_BOOL] = TL_SFX(u_ISNEGINF_b);
    U[TL_U_ISFINITE][TL_BOOL] = TL_SFX(u_ISFINITE_b); U[TL_U_SIGNBIT][TL_BOOL] = TL_SFX(u_SIGNBIT_b);
    REG_INT_B(ADD) REG_INT_B(SUB) REG_INT_B(MUL) REG_INT_B(DIV_TRUNC) REG_INT_B(DIV_FLOOR)
    REG_INT_B(REMAINDER) REG_INT_B(FMOD) REG_INT_B(POW) REG_INT_B(MAXIMUM) REG_INT_B(MINIMUM)
    REG_INT_B(BITWISE_AND) REG_INT_B(BITWISE_OR) REG_INT_B(BITWISE_XOR) REG_INT_B(SHL) REG_INT_B(SHR)
    REG_INT_B(ADD_ALPHA) REG_INT_B(EQ) REG_INT_B(NE) REG_INT_B(LT) REG_INT_B(LE) REG_INT_B(GT)
    REG_INT_B(GE) REG_INT_B(LOGICAL_AND) REG_INT_B(LOGICAL_OR) REG_INT_B(LOGICAL_XOR)
#define REG_BOOL_B(OP) B[TL_B_##OP][TL_BOOL] = TL_SFX(b_##OP##_b);
    REG_BOOL_B(ADD) REG_BOOL_B(MUL) REG_BOOL_B(MAXIMUM) REG_BOOL_B(MINIMUM) REG_BOOL_B(BITWISE_AND)
    REG_BOOL_B(BITWISE_OR) REG_BOOL_B(BITWISE_XOR) REG_BOOL_B(EQ) REG_BOOL_B(NE) REG_BOOL_B(LT)
    REG_BOOL_B(LE) REG_BOOL_B(GT) REG_BOOL_B(GE) REG_BOOL_B(LOGICAL_AND) REG_BOOL_B(LOGICAL_OR)
    REG_BOOL_B(LOGICAL_XOR)
    T[TL_T_WHERE][TL_BOOL] = TL_SFX(t_WHERE_b); T[TL_T_WHERE][TL_UINT8] = TL_SFX(t_WHERE_u8);
    T[TL_T_WHERE][TL_INT8] = TL_SFX(t_WHERE_i8); T[TL_T_WHERE][TL_INT16] = TL_SFX(t_WHERE_i16);
    T[TL_T_WHERE][TL_INT32] = TL_SFX(t_WHERE_i32); T[TL_T_WHERE][TL_INT64] = TL_SFX(t_WHERE_i64);
    T[TL_T_WHERE][TL_FLOAT16] = TL_SFX(t_WHERE_f16); T[TL_T_WHERE][TL_BFLOAT16] = TL_SFX(t_WHERE_f16);
#define REG_CAST_FROM(SI, CI) C[CI][TL_BOOL] = TL_SFX(c_##SI##_b); C[CI][TL_UINT8] = TL_SFX(c_##SI##_u8); \
    C[CI][TL_INT8] = TL_SFX(c_##SI##_i8); C[CI][TL_INT16] = TL_SFX(c_##SI##_i16); \
    C[CI][TL_INT32] = TL_SFX(c_##SI##_i32); C[CI][TL_INT64] = TL_SFX(c_##SI##_i64);
#define REG_CAST_TOF(SI, CI) C[CI][TL_FLOAT16] = TL_SFX(c_##SI##_f16); C[CI][TL_BFLOAT16] = TL_SFX(c_##SI##_bf16); \
    C[CI][TL_FLOAT32] = TL_SFX(c_##SI##_f32x); C[CI][TL_FLOAT64] = TL_SFX(c_##SI##_f64x);
    REG_CAST_FROM(b, TL_BOOL) REG_CAST_FROM(u8, TL_UINT8) REG_CAST_FROM(i8, TL_INT8)
    REG_CAST_FROM(i16, TL_INT16) REG_CAST_FROM(i32, TL_INT32) REG_CAST_FROM(i64, TL_INT64)
    REG_CAST_FROM(f16, TL_FLOAT16) REG_CAST_FROM(bf16, TL_BFLOAT16) REG_CAST_FROM(f32, TL_FLOAT32)
    REG_CAST_FROM(f64, TL_FLOAT64)
    REG_CAST_TOF(b, TL_BOOL) REG_CAST_TOF(u8, TL_UINT8) REG_CAST_TOF(i8, TL_INT8)
    REG_CAST_TOF(i16, TL_INT16) REG_CAST_TOF(i32, TL_INT32) REG_CAST_TOF(i64, TL_INT64)
    REG_CAST_TOF(f16, TL_FLOAT16) REG_CAST_TOF(bf16, TL_BFLOAT16)
#define REG_CAST_TOC(SI, CI) C[CI][TL_COMPLEX64] = TL_SFX(c_##SI##_c64); C[CI][TL_COMPLEX128] = TL_SFX(c_##SI##_c128);
    REG_CAST_TOC(b, TL_BOOL) REG_CAST_TOC(u8, TL_UINT8) REG_CAST_TOC(i8, TL_INT8)
    REG_CAST_TOC(i16, TL_INT16) REG_CAST_TOC(i32, TL_INT32) REG_CAST_TOC(i64, TL_INT64)
    REG_CAST_TOC(f16, TL_FLOAT16) REG_CAST_TOC(bf16, TL_BFLOAT16) REG_CAST_TOC(f32, TL_FLOAT32)
    REG_CAST_TOC(f64, TL_FLOAT64)
    REG_CAST_FROM(c64, TL_COMPLEX64) REG_CAST_FROM(c128, TL_COMPLEX128)
    REG_CAST_TOF(c64, TL_COMPLEX64) REG_CAST_TOF(c128, TL_COMPLEX128)
    C[TL_COMPLEX64][TL_COMPLEX128] = TL_SFX(c_c64_c128); C[TL_COMPLEX128][TL_COMPLEX64] = TL_SFX(c_c128_c64);
    C[TL_COMPLEX64][TL_COMPLEX64] = TL_SFX(c_c64_c64); C[TL_COMPLEX128][TL_COMPLEX128] = TL_SFX(c_c128_c128);
#define REG_CAST_TOC32(SI, CI) C[CI][TL_COMPLEX32] = TL_SFX(c_##SI##_c32);
    REG_CAST_TOC32(b, TL_BOOL) REG_CAST_TOC32(u8, TL_UINT8) REG_CAST_TOC32(i8, TL_INT8)
    REG_CAST_TOC32(i16, TL_INT16) REG_CAST_TOC32(i32, TL_INT32) REG_CAST_TOC32(i64, TL_INT64)
    REG_CAST_TOC32(f16, TL_FLOAT16) REG_CAST_TOC32(bf16, TL_BFLOAT16) REG_CAST_TOC32(f32, TL_FLOAT32)
    REG_CAST_TOC32(f64, TL_FLOAT64) REG_CAST_TOC32(c64, TL_COMPLEX64)
    REG_CAST_TOC32(c128, TL_COMPLEX128) REG_CAST_TOC32(c32, TL_COMPLEX32)
    REG_CAST_FROM(c32, TL_COMPLEX32) REG_CAST_TOF(c32, TL_COMPLEX32) REG_CAST_TOC(c32, TL_COMPLEX32)
    T[TL_T_WHERE][TL_COMPLEX32] = TL_SFX(t_WHERE_c32);
    C[TL_FLOAT64][TL_FLOAT16] = TL_SFX(c_f64_f16); C[TL_FLOAT64][TL_BFLOAT16] = TL_SFX(c_f64_bf16);
    C[TL_FLOAT16][TL_FLOAT64] = TL_SFX(c_f16_f64); C[TL_BFLOAT16][TL_FLOAT64] = TL_SFX(c_bf16_f64);
    /* the float32/float64 casts registered above are faster than the generic ones */
    C[TL_FLOAT32][TL_FLOAT64] = TL_SFX(c_f32_f64); C[TL_FLOAT64][TL_FLOAT32] = TL_SFX(c_f64_f32);
    C[TL_FLOAT32][TL_FLOAT32] = TL_SFX(c_f32_f32); C[TL_FLOAT64][TL_FLOAT64] = TL_SFX(c_f64_f64);
    C[TL_FLOAT32][TL_FLOAT16] = TL_SFX(c_f32_f16); C[TL_FLOAT16][TL_FLOAT32] = TL_SFX(c_f16_f32);
    C[TL_FLOAT32][TL_BFLOAT16] = TL_SFX(c_f32_bf16); C[TL_BFLOAT16][TL_FLOAT32] = TL_SFX(c_bf16_f32);
#endif
}
