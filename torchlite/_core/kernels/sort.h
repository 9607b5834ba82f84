/* Sort, top-k and k-th value over one row of a strided array, for every dtype.
 *
 * Each element becomes an unsigned key that orders as PyTorch compares: integers by value,
 * floats by value with -0.0 equal to +0.0 and every NaN above +inf (so NaN sorts last, and
 * first when descending).  Descending order flips the key bits.  The key and the element's
 * index form an item (sort_impl.h): keys of up to 32 bits pack with a 32-bit index into one
 * uint64 ("packed" items), 64-bit keys use a 16-byte pair ("wide" items).  Rows are sorted
 * with an LSD radix sort, which is stable and linear in the row length. */
#ifndef TL_SORT_H
#define TL_SORT_H
#include "types.h"
#include <stdlib.h>

#define TL_SORT_SMALL 32           /* rows up to this length use insertion sort */
#define TL_SORT_BLOCK 512          /* keys built per block, kept in L1 */
#define TL_SORT_HIST_LEN (12 * 2048) /* radix histogram slots: passes x buckets, at most */

static const int tl_key_bits[TL_NDTYPES] = {8, 8, 8, 16, 32, 64, 16, 16, 32, 64};

/* The key of a 16-bit float (float16 or bfloat16) whose +inf has the bits `inf`. */
TL_INLINE uint64_t tl_key_half(uint16_t h, uint16_t inf) {
    uint16_t a = h & 0x7fffu;
    if (a > inf) return 0xffffu;                      /* NaN: above +inf */
    if (a == 0) return 0x8000u;                       /* -0.0 == +0.0 */
    return (h & 0x8000u) ? (uint16_t)~h : (uint16_t)(h | 0x8000u);
}

TL_INLINE uint64_t tl_key_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t a = u & 0x7fffffffu;
    uint32_t k = u ^ ((uint32_t)((int32_t)u >> 31) | 0x80000000u);
    k = a > 0x7f800000u ? 0xffffffffu : k;
    return a == 0 ? 0x80000000u : k;
}

TL_INLINE uint64_t tl_key_f64(double f) {
    uint64_t u;
    memcpy(&u, &f, 8);
    uint64_t a = u & 0x7fffffffffffffffull;
    uint64_t k = u ^ ((uint64_t)((int64_t)u >> 63) | 0x8000000000000000ull);
    k = a > 0x7ff0000000000000ull ? ~(uint64_t)0 : k;
    return a == 0 ? 0x8000000000000000ull : k;
}

#define TL_KEY_LOOP(CT, EXPR)                                        \
    do {                                                             \
        const CT *p = (const CT *)src + start * ss;                  \
        for (int64_t j = 0; j < n; j++) {                            \
            CT v = p[j * ss];                                        \
            out[j] = (uint64_t)(EXPR);                               \
        }                                                            \
    } while (0)

/* Keys of row elements [start, start+n) (element stride ss). */
static void tl_row_keys(const char *src, int64_t ss, int64_t start, int64_t n, int dtype,
                        uint64_t *out) {
    switch (dtype) {
    case TL_BOOL: case TL_UINT8: TL_KEY_LOOP(uint8_t, v); break;
    case TL_INT8: TL_KEY_LOOP(uint8_t, v ^ 0x80u); break;
    case TL_INT16: TL_KEY_LOOP(uint16_t, v ^ 0x8000u); break;
    case TL_INT32: TL_KEY_LOOP(uint32_t, v ^ 0x80000000u); break;
    case TL_INT64: TL_KEY_LOOP(uint64_t, v ^ 0x8000000000000000ull); break;
    case TL_FLOAT16: TL_KEY_LOOP(uint16_t, tl_key_half(v, 0x7c00u)); break;
    case TL_BFLOAT16: TL_KEY_LOOP(uint16_t, tl_key_half(v, 0x7f80u)); break;
    case TL_FLOAT32: TL_KEY_LOOP(float, tl_key_f32(v)); break;
    default: TL_KEY_LOOP(double, tl_key_f64(v)); break;
    }
}
#undef TL_KEY_LOOP

/* top-k keeps a heap of k items while k is small against the row; else it selects. */
TL_INLINE int tl_topk_use_heap(int64_t n, int64_t k) { return k <= 1024 && k * 64 <= n; }

/* One row and how its keys become item keys: (key ^ flip) - base, spanning key_bits bits.
 * flip inverts the order (descending, largest); base and key_bits come from the keys' range,
 * so that, e.g., int64 values within a 2^32 range still sort as packed items. */
typedef struct {
    const char *src;
    int64_t ss, n;
    int dtype, key_bits;
    uint64_t flip, base;
} tl_row;

TL_INLINE int tl_bit_length(uint64_t x) {
    int b = 0;
    while (x) { b++; x >>= 1; }
    return b;
}

static void tl_row_init(tl_row *row, const char *src, int64_t ss, int64_t n, int dtype,
                        int flip_order, int want_range) {
    int b = tl_key_bits[dtype];
    row->src = src;
    row->ss = ss;
    row->n = n;
    row->dtype = dtype;
    row->flip = !flip_order ? 0 : (b == 64 ? ~(uint64_t)0 : (((uint64_t)1 << b) - 1));
    row->base = 0;
    row->key_bits = b;
    if (want_range && b >= 32 && n > TL_SORT_SMALL) {
        uint64_t keys[TL_SORT_BLOCK], lo = ~(uint64_t)0, hi = 0;
        for (int64_t s = 0; s < n; s += TL_SORT_BLOCK) {
            int64_t cnt = n - s < TL_SORT_BLOCK ? n - s : TL_SORT_BLOCK;
            tl_row_keys(src, ss, s, cnt, dtype, keys);
            for (int64_t j = 0; j < cnt; j++) {
                uint64_t k = keys[j] ^ row->flip;
                lo = k < lo ? k : lo;
                hi = k > hi ? k : hi;
            }
        }
        row->base = lo;
        row->key_bits = tl_bit_length(hi - lo);
    }
}

/* Rebuilding an element from its key (sort_impl.h, tl_write_out). */
#define TL_UNKEY_INT(key, c) ((key) ^ (c))
#define TL_UNKEY_FLT(key, c) (((key) & (c)) ? ((key) ^ (c)) : ~(key))
#define TL_NEVER(key) 0
#define TL_SPECIAL16(key) ((key) == 0x8000u || (key) == 0xffffu)
#define TL_SPECIAL32(key) ((key) == 0x80000000u || (key) == 0xffffffffu)
#define TL_SPECIAL64(key) ((key) == 0x8000000000000000ull || (key) == ~(uint64_t)0)

/* ---- packed items: key in the high 32 bits, index in the low 32 ---- */
#define TL_ITEM uint64_t
#define TL_LT(a, b) ((a) < (b))
#define TL_KEY(a) ((a) >> 32)
#define TL_DIGIT(a, s) ((a) >> (32 + (s)))
#define TL_IDX_DIGIT(a, s) ((a) >> (s))
#define TL_MAKE(key, i) (((uint64_t)(key) << 32) | (uint64_t)(i))
#define TL_IDX(a) ((a) & 0xffffffffu)
#define TL_S(name) name##_p
#include "sort_impl.h"      /* ends by #undef-ing its parameters */

/* ---- wide items: a 64-bit key and a 64-bit index ---- */
typedef struct { uint64_t key, idx; } tl_wide_item;
#define TL_ITEM tl_wide_item
#define TL_LT(a, b) ((a).key < (b).key || ((a).key == (b).key && (a).idx < (b).idx))
#define TL_KEY(a) ((a).key)
#define TL_DIGIT(a, s) ((a).key >> (s))
#define TL_IDX_DIGIT(a, s) ((a).idx >> (s))
#define TL_MAKE(k, i) ((tl_wide_item){(k), (uint64_t)(i)})
#define TL_IDX(a) ((a).idx)
#define TL_S(name) name##_w
#include "sort_impl.h"      /* ends by #undef-ing its parameters */

/* Packed items need item keys of at most 32 bits and indices that fit in 32 bits. */
TL_INLINE int tl_row_packed(const tl_row *row) {
    return row->key_bits <= 32 && row->n <= (int64_t)0xffffffffll;
}

/* Bytes of scratch one row of n elements needs (any of the row functions below). */
TL_INLINE int64_t tl_sort_scratch_bytes(int64_t n) {
    return (int64_t)sizeof(int64_t) * TL_SORT_HIST_LEN + 2 * n * (int64_t)sizeof(tl_wide_item);
}

/* Sort a row (element stride ss) into values vdst (stride vs) and indices idst (stride is);
 * either output may be NULL.  Equal elements keep their order (the sort is stable). */
static void tl_sort_row(const char *src, int64_t ss, int64_t n, int dtype, int descending,
                        char *vdst, int64_t vs, int64_t *idst, int64_t is, void *scratch) {
    tl_row row;
    tl_row_init(&row, src, ss, n, dtype, descending, 1);
    if (tl_row_packed(&row))
        tl_sort_row_p(&row, vdst, vs, idst, is, scratch);
    else
        tl_sort_row_w(&row, vdst, vs, idst, is, scratch);
}

/* The k largest (or smallest) elements of a row, sorted, ties by lower index first. */
static void tl_topk_row(const char *src, int64_t ss, int64_t n, int64_t k, int dtype, int largest,
                        char *vdst, int64_t vs, int64_t *idst, int64_t is, void *scratch) {
    tl_row row;
    tl_row_init(&row, src, ss, n, dtype, largest, !tl_topk_use_heap(n, k));
    if (tl_row_packed(&row))
        tl_topk_row_p(&row, k, vdst, vs, idst, is, scratch);
    else
        tl_topk_row_w(&row, k, vdst, vs, idst, is, scratch);
}

/* The k-th smallest element of a row (1 <= k <= n). */
static void tl_kth_row(const char *src, int64_t ss, int64_t n, int64_t k, int dtype,
                       char *vdst, int64_t *idst, void *scratch) {
    tl_row row;
    tl_row_init(&row, src, ss, n, dtype, 0, 1);
    if (tl_row_packed(&row))
        tl_kth_row_p(&row, k, vdst, idst, scratch);
    else
        tl_kth_row_w(&row, k, vdst, idst, scratch);
}

/* Start of each run of equal elements in contiguous vals[0..n) (n >= 1), compared as
 * PyTorch does (== : NaN never equal, -0.0 == +0.0).  Returns the number of runs. */
#define TL_RUNS_LOOP(CT, CONV)                                         \
    do {                                                               \
        const CT *v = (const CT *)vals;                                \
        for (int64_t i = 1; i < n; i++)                                \
            if (!(CONV(v[i]) == CONV(v[i - 1]))) starts[u++] = i;      \
    } while (0)
#define TL_SAME(x) (x)
static int64_t tl_runs(const char *vals, int64_t n, int dtype, int64_t *starts) {
    int64_t u = 1;
    starts[0] = 0;
    switch (dtype) {
    case TL_BOOL: case TL_UINT8: TL_RUNS_LOOP(uint8_t, TL_SAME); break;
    case TL_INT8: TL_RUNS_LOOP(int8_t, TL_SAME); break;
    case TL_INT16: TL_RUNS_LOOP(int16_t, TL_SAME); break;
    case TL_INT32: TL_RUNS_LOOP(int32_t, TL_SAME); break;
    case TL_INT64: TL_RUNS_LOOP(int64_t, TL_SAME); break;
    case TL_FLOAT16: TL_RUNS_LOOP(uint16_t, tl_half_to_float); break;
    case TL_BFLOAT16: TL_RUNS_LOOP(uint16_t, tl_bf16_to_float); break;
    case TL_FLOAT32: TL_RUNS_LOOP(float, TL_SAME); break;
    default: TL_RUNS_LOOP(double, TL_SAME); break;
    }
    return u;
}
#undef TL_RUNS_LOOP
#undef TL_SAME

/* ---- rows of a matrix (unique along a dim): keys[n][m] compared lexicographically ---- */
TL_INLINE int tl_row_cmp(const uint64_t *keys, int64_t m, int64_t a, int64_t b) {
    const uint64_t *x = keys + a * m, *y = keys + b * m;
    for (int64_t t = 0; t < m; t++)
        if (x[t] != y[t]) return x[t] < y[t] ? -1 : 1;
    return 0;
}

/* Stable bottom-up merge sort of row numbers perm[0..n) by their key rows (tmp: n slots). */
static void tl_lexsort_rows(const uint64_t *keys, int64_t n, int64_t m, int64_t *perm,
                            int64_t *tmp) {
    int64_t *src = perm, *dst = tmp;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                dst[o++] = tl_row_cmp(keys, m, src[j], src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid) dst[o++] = src[i++];
            while (j < hi) dst[o++] = src[j++];
        }
        int64_t *t = src; src = dst; dst = t;
    }
    if (src != perm) memcpy(perm, src, sizeof(int64_t) * (size_t)n);
}

/* Starts of runs of equal key rows, visiting rows in the order perm (NULL: 0..n-1). */
static int64_t tl_row_runs(const uint64_t *keys, int64_t n, int64_t m, const int64_t *perm,
                           int64_t *starts) {
    int64_t u = 1;
    starts[0] = 0;
    for (int64_t i = 1; i < n; i++) {
        int64_t a = perm ? perm[i - 1] : i - 1, b = perm ? perm[i] : i;
        if (tl_row_cmp(keys, m, a, b) != 0) starts[u++] = i;
    }
    return u;
}

#endif
