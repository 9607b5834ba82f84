/* Random-number kernels: a request (key, first block, distribution, parameters, output) and
 * the per-ISA group kernels that fill it.
 *
 * Stream layout.  A request for n elements starts at block `base` (the generator's offset)
 * and is cut into groups of 16 blocks (64 words).  Group g uses blocks base + 16 g + i,
 * i = 0..15, and holds G = 64 elements of a one-word distribution (float32 and float16/
 * bfloat16 through float32, Bernoulli, integers with range <= 2^32, randperm's draws) or
 * G = 32 of a two-word one (float64, wide integers).  Element e = G g + j sits in lane
 * i = j mod 16 and takes
 *   one word:   word j / 16 of block base + 16 g + i;
 *   two words:  words 2h, 2h + 1 (low, high) of that block, h = j / 16;
 *   Box-Muller: the pair of words (2h, 2h + 1) gives two normals (radius, angle): float32
 *               elements 16 (2h) + i and 16 (2h + 1) + i; float64 uses all four words for
 *               elements i and 16 + i.
 * The request consumes ceil(n / G) * 16 blocks and the generator's offset advances by that
 * much.  Which thread computes a group never changes what the group holds, so results do not
 * depend on the thread count.  A bounded integer that is rejected redraws from the same
 * word(s) of its block with counter word 2 = 1, 2, ... (the "draw number"; it is 0 for every
 * first draw). */
#ifndef TL_RANDOM_H
#define TL_RANDOM_H
#include <string.h>
#include "types.h"
#include "isa.h"
#include "vmath.h"
#include "philox.h"
#include "random_math.h"
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

enum {
    TL_RND_UNIFORM, TL_RND_NORMAL, TL_RND_LOG_NORMAL, TL_RND_EXPONENTIAL, TL_RND_CAUCHY,
    TL_RND_GEOMETRIC, TL_RND_BERNOULLI, TL_RND_BERNOULLI_P, TL_RND_RANDINT,
    TL_RND_RANDINT_WIDE, TL_RND_BELOW_INDEX, TL_RND_BELOW_INDEX_WIDE, TL_RND_NDISTS
};
/* output types of the kernels: index 0 float32, 1 float64, 2 int64 */
enum { TL_RND_F32 = 0, TL_RND_F64 = 1, TL_RND_I64 = 2 };

typedef struct tl_rnd_req {
    uint32_t key[2];      /* the seed, low word first */
    uint64_t base;        /* first block of the request */
    int64_t n;            /* number of elements */
    double a, b;          /* distribution parameters (from/to, mean/std, lambda, ...) */
    int bits;             /* float32 uniform: random bits (24, 11 for float16, 8 for bfloat16) */
    float scale;          /* 2^-bits */
    int64_t low;          /* integers: low + [0, range) */
    uint64_t range;       /* 0 stands for 2^64 */
    uint64_t reject;      /* Lemire's threshold (2^w - range) mod range, w = 32 or 64 */
    uint64_t thresh;      /* Bernoulli: P(word < thresh) = p */
    const double* p;      /* Bernoulli with one probability per element (n of them) */
    char* out;            /* n contiguous elements of the kernel's output type */
} tl_rnd_req;

typedef void (*tl_rnd_group_fn)(const tl_rnd_req* q, int64_t g, void* out);

static tl_rnd_group_fn tl_rnd_table[TL_RND_NDISTS][3];

#define TL_RND_ISA 0
#define TL_SFX(name) name##_base
#include "random_body.h"
#undef TL_SFX
#undef TL_RND_ISA

#if TL_X86_MULTIVERSION
TL_BEGIN_TARGET_V3
#define TL_RND_ISA 3
#define TL_SFX(name) name##_v3
#include "random_body.h"
#undef TL_SFX
#undef TL_RND_ISA
TL_END_TARGET
TL_BEGIN_TARGET_V4
#define TL_RND_ISA 4
#define TL_SFX(name) name##_v4
#include "random_body.h"
#undef TL_SFX
#undef TL_RND_ISA
TL_END_TARGET
#endif

/* Install the kernels of ISA `level` (0, 3 or 4, clamped to what was compiled). */
static int tl_rnd_install(int level) {
    memset(tl_rnd_table, 0, sizeof(tl_rnd_table));
#if TL_X86_MULTIVERSION
    if (level >= 4) { tl_rnd_register_v4(tl_rnd_table); return 4; }
    if (level >= 3) { tl_rnd_register_v3(tl_rnd_table); return 3; }
#endif
    (void)level;
    tl_rnd_register_base(tl_rnd_table);
    return 0;
}

/* Words each element of (dist, output type) takes, hence G = 64 / words per group. */
static int tl_rnd_words(int dist, int ot) {
    if (dist == TL_RND_RANDINT_WIDE || dist == TL_RND_BELOW_INDEX_WIDE) return 2;
    if (dist == TL_RND_BERNOULLI || dist == TL_RND_BERNOULLI_P || dist == TL_RND_RANDINT ||
        dist == TL_RND_BELOW_INDEX) return 1;
    return ot == TL_RND_F64 ? 2 : 1;
}

/* Groups g0 .. g1-1 of request q: whole groups straight into the output, the last partial
 * one through a buffer. */
static void tl_rnd_run(const tl_rnd_req* q, tl_rnd_group_fn fn, int64_t group_elems, int itemsize,
                       int64_t g0, int64_t g1) {
    int64_t buf[4 * TL_PHILOX_LANES];
    for (int64_t g = g0; g < g1; g++) {
        int64_t e0 = g * group_elems;
        if (e0 + group_elems <= q->n) {
            fn(q, g, q->out + e0 * itemsize);
        } else {
            fn(q, g, buf);
            memcpy(q->out + e0 * itemsize, buf, (size_t)((q->n - e0) * itemsize));
        }
    }
}

#endif
