/* Inner loops of the index kernels (torchlite/_core/indexing.pyx).
 *
 * Every index op moves or combines one row of n elements between an "indexed" operand `a`
 * and a "dense" operand `d` (byte stride `ds`):
 *   TL_IDX_GATHER   d[j] = a[j]                 (getitem, gather, index_select, take)
 *   TL_IDX_PUT      a[j] = d[j]                 (setitem, scatter, index_copy, put_)
 *   TL_IDX_ADD      a[j] += d[j]                (index_put_(accumulate), scatter_add, index_add)
 *   TL_IDX_MUL      a[j] *= d[j]                (scatter(reduce='multiply'), 'prod')
 *   TL_IDX_MAX/MIN  a[j] = max/min(a[j], d[j])  ('amax'/'amin'; NaN propagates)
 * Two ways to address a's elements, each a loop macro that runs BODY with pa and pd set:
 *   TL_IDX_LOOP     byte offsets offs[j] (checked by the caller), or a stride `as`;
 *   TL_IDX1_LOOP*   one index array read as it goes: a + v * g + j * as with v = idx[j],
 *                   checked element by element (see tl_idx1_row).
 * Pure moves go by element size, so one copy serves every dtype; arithmetic is per dtype,
 * float16 and bfloat16 through float32. */
#ifndef TL_INDEX_H
#define TL_INDEX_H
#include "types.h"

enum { TL_IDX_GATHER = 0, TL_IDX_PUT = 1, TL_IDX_ADD = 2, TL_IDX_MUL = 3, TL_IDX_MAX = 4,
       TL_IDX_MIN = 5 };

#define TL_IDX_LOOP(T, BODY)                                                                \
    do {                                                                                    \
        int64_t j_;                                                                         \
        if (offs) {                                                                         \
            for (j_ = 0; j_ < n; j_++) {                                                    \
                char* pa = a + offs[j_]; char* pd = d + j_ * ds; BODY;                      \
            }                                                                               \
        } else if (as == (int64_t)sizeof(T) && ds == (int64_t)sizeof(T)) {  /* vectorizes */ \
            for (j_ = 0; j_ < n; j_++) {                                                    \
                char* pa = a + j_ * sizeof(T); char* pd = d + j_ * sizeof(T); BODY;         \
            }                                                                               \
        } else {                                                                            \
            for (j_ = 0; j_ < n; j_++) {                                                    \
                char* pa = a + j_ * as; char* pd = d + j_ * ds; BODY;                       \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* v < 0 gets `wrap` added (the dim's size, or 0 where negative indices are not allowed),
 * then must lie in [0, limit); a bad index stops the row before it is used: return 1. */
#define TL_IDX1_BODY(IT, BODY)                                                              \
    do {                                                                                    \
        if (wrap == 0 && as == 0) {    /* gather/scatter along the inner dim: leaner loop */ \
            for (; n > 0; n--) {                                                            \
                int64_t v = (int64_t)*(const IT*)ip;                                        \
                if ((uint64_t)v >= limit) return 1;                                         \
                { char* pa = a + v * g; char* pd = d; BODY; }                               \
                ip += is; d += ds;                                                          \
            }                                                                               \
        }                                                                                   \
        for (; n > 0; n--) {                                                                \
            int64_t v = (int64_t)*(const IT*)ip;                                            \
            v += v < 0 ? wrap : 0;                                                          \
            if ((uint64_t)v >= limit) return 1;                                             \
            { char* pa = a + v * g; char* pd = d; BODY; }                                   \
            ip += is; a += as; d += ds;                                                     \
        }                                                                                   \
    } while (0)
#define TL_IDX1_LOOP32(T, BODY) TL_IDX1_BODY(int32_t, BODY)
#define TL_IDX1_LOOP64(T, BODY) TL_IDX1_BODY(int64_t, BODY)

/* GATHER/PUT by element size, with the addressing LOOP. */
#define TL_IDX_MOVE_T(LOOP, T)                                                              \
    do {                                                                                    \
        if (op == TL_IDX_GATHER) LOOP(T, *(T*)pd = *(T*)pa);                                \
        else LOOP(T, *(T*)pa = *(T*)pd);                                                    \
    } while (0)
#define TL_IDX_MOVE(LOOP)                                                                   \
    do {                                                                                    \
        switch (isz) {                                                                      \
        case 1: TL_IDX_MOVE_T(LOOP, uint8_t); break;                                        \
        case 2: TL_IDX_MOVE_T(LOOP, uint16_t); break;                                       \
        case 4: TL_IDX_MOVE_T(LOOP, uint32_t); break;                                       \
        case 16: TL_IDX_MOVE_T(LOOP, tl_c128); break;       /* complex128 */                \
        default: TL_IDX_MOVE_T(LOOP, uint64_t); break;                                      \
        }                                                                                   \
    } while (0)

/* Integers wrap like PyTorch's (two's complement), computed unsigned to avoid C overflow UB. */
#define TL_IADD(T, x, y) ((T)((uint64_t)(x) + (uint64_t)(y)))
#define TL_IMUL(T, x, y) ((T)((uint64_t)(x) * (uint64_t)(y)))
#define TL_FADD(T, x, y) ((x) + (y))
#define TL_FMUL(T, x, y) ((x) * (y))
#define TL_NOCONV(x) (x)
#define TL_BOOL_ST(x) ((uint8_t)((x) != 0))
/* max/min that let NaN win (an integer compares equal to itself, so this is exact there) */
#define TL_PMAX(x, y) (((y) != (y)) || (y) > (x) ? (y) : (x))
#define TL_PMIN(x, y) (((y) != (y)) || (y) < (x) ? (y) : (x))

/* T: storage type, C: compute type, LD/ST: storage <-> compute conversions. */
#define TL_IDX_COMBINE1(LOOP, T, C, LD, ST, EXPR)                                           \
    LOOP(T, { C x_ = (C)LD(*(T*)pa); C y_ = (C)LD(*(T*)pd); *(T*)pa = ST(EXPR); })
#define TL_IDX_ARITH(LOOP, T, C, LD, ST, ADD, MUL)                                          \
    do {                                                                                    \
        switch (op) {                                                                       \
        case TL_IDX_ADD: TL_IDX_COMBINE1(LOOP, T, C, LD, ST, ADD(C, x_, y_)); break;        \
        case TL_IDX_MUL: TL_IDX_COMBINE1(LOOP, T, C, LD, ST, MUL(C, x_, y_)); break;        \
        case TL_IDX_MAX: TL_IDX_COMBINE1(LOOP, T, C, LD, ST, TL_PMAX(x_, y_)); break;       \
        case TL_IDX_MIN: TL_IDX_COMBINE1(LOOP, T, C, LD, ST, TL_PMIN(x_, y_)); break;       \
        default: break;                                                                     \
        }                                                                                   \
    } while (0)
#define TL_IDX_INT(LOOP, T) TL_IDX_ARITH(LOOP, T, T, TL_NOCONV, TL_NOCONV, TL_IADD, TL_IMUL)
#define TL_IDX_FLT(LOOP, T) TL_IDX_ARITH(LOOP, T, T, TL_NOCONV, TL_NOCONV, TL_FADD, TL_FMUL)
#define TL_IDX_F16(LOOP, LD, ST) TL_IDX_ARITH(LOOP, uint16_t, float, LD, ST, TL_FADD, TL_FMUL)
/* bool: add is logical or, multiply logical and (PyTorch's bool arithmetic) */
#define TL_IDX_COMBINE(LOOP)                                                                \
    do {                                                                                    \
        switch (dtype) {                                                                    \
        case TL_BOOL:                                                                       \
            TL_IDX_ARITH(LOOP, uint8_t, int, TL_NOCONV, TL_BOOL_ST, TL_FADD, TL_FMUL); break;\
        case TL_UINT8: TL_IDX_INT(LOOP, uint8_t); break;                                    \
        case TL_INT8: TL_IDX_INT(LOOP, int8_t); break;                                      \
        case TL_INT16: TL_IDX_INT(LOOP, int16_t); break;                                    \
        case TL_INT32: TL_IDX_INT(LOOP, int32_t); break;                                    \
        case TL_INT64: TL_IDX_INT(LOOP, int64_t); break;                                    \
        case TL_FLOAT16: TL_IDX_F16(LOOP, tl_half_to_float, tl_float_to_half); break;       \
        case TL_BFLOAT16: TL_IDX_F16(LOOP, tl_bf16_to_float, tl_float_to_bf16); break;      \
        case TL_FLOAT32: TL_IDX_FLT(LOOP, float); break;                                    \
        case TL_FLOAT64: TL_IDX_FLT(LOOP, double); break;                                   \
        default: break;                                                                     \
        }                                                                                   \
    } while (0)

/* One row addressed by offsets (offs != NULL) or by the stride `as`. */
static void tl_idx_row(int op, int dtype, int isz, char* a, const int64_t* offs, int64_t as,
                       char* d, int64_t ds, int64_t n) {
    if (op == TL_IDX_GATHER || op == TL_IDX_PUT) {
        if (!offs && as == isz && ds == isz) {     /* both rows dense: one memcpy */
            if (op == TL_IDX_GATHER) memcpy(d, a, (size_t)(n * isz));
            else memcpy(a, d, (size_t)(n * isz));
            return;
        }
        TL_IDX_MOVE(TL_IDX_LOOP);
    } else {
        TL_IDX_COMBINE(TL_IDX_LOOP);
    }
}

/* One row addressed through one index array (element j at a + idx[j] * g + j * as, idx read
 * with byte stride is); returns 1 at the first out-of-range index, before using it.  Kept
 * out of line so its loops get the registers to themselves. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int tl_idx1_row(int op, int dtype, int isz, char* a, int64_t as, int64_t g,
                       const char* ip, int64_t is, int i32, int64_t wrap, uint64_t limit,
                       char* d, int64_t ds, int64_t n) {
    if (op == TL_IDX_GATHER || op == TL_IDX_PUT) {
        if (i32) TL_IDX_MOVE(TL_IDX1_LOOP32);
        else TL_IDX_MOVE(TL_IDX1_LOOP64);
    } else {
        if (i32) TL_IDX_COMBINE(TL_IDX1_LOOP32);
        else TL_IDX_COMBINE(TL_IDX1_LOOP64);
    }
    return 0;
}

/* Whether all n indices at ip (byte stride is) are valid (same rule as TL_IDX1_BODY); the
 * pre-check of the writing ops.  Branch-free, so it runs at load speed. */
#define TL_IDX_CHECK(IT)                                                                    \
    do {                                                                                    \
        if (wrap == 0) {                                                                    \
            for (j = 0; j < n; j++)                                                         \
                bad |= (uint64_t)(int64_t)*(const IT*)(ip + j * is) >= limit;               \
        } else {                                                                            \
            for (j = 0; j < n; j++) {                                                       \
                int64_t v = (int64_t)*(const IT*)(ip + j * is);                             \
                v += wrap & (v >> 63);                                                      \
                bad |= (uint64_t)v >= limit;                                                \
            }                                                                               \
        }                                                                                   \
    } while (0)
static int tl_idx_all_valid(const char* ip, int64_t is, int64_t n, int i32, int64_t wrap,
                            uint64_t limit) {
    int64_t j;
    int bad = 0;
    if (i32) TL_IDX_CHECK(int32_t);
    else TL_IDX_CHECK(int64_t);
    return !bad;
}

/* ---- nonzero ------------------------------------------------------------------------------
 * An element is nonzero when its bits under `zmask` are not all zero: all bits for integers
 * and bool, all but the sign bit for floats (so -0.0 is zero and NaN is nonzero). */
static inline uint64_t tl_nz_load(const char* p, int isz) {
    switch (isz) {
    case 1: return *(const uint8_t*)p;
    case 2: return *(const uint16_t*)p;
    case 4: return *(const uint32_t*)p;
    default: return *(const uint64_t*)p;
    }
}

#define TL_NZ_COUNT(T)                                                                      \
    for (j = 0; j < n; j++) cnt += (((uint64_t)*(const T*)(p + j * st)) & zmask) != 0;

/* How many of the n elements at p (byte stride st) are nonzero. */
static int64_t tl_nz_count_row(const char* p, int64_t st, int64_t n, int isz, uint64_t zmask) {
    int64_t j, cnt = 0;
    switch (isz) {
    case 1: TL_NZ_COUNT(uint8_t); break;
    case 2: TL_NZ_COUNT(uint16_t); break;
    case 4: TL_NZ_COUNT(uint32_t); break;
    default: TL_NZ_COUNT(uint64_t); break;
    }
    return cnt;
}
#endif
