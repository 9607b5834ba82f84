/* The random distributions on the GPU: each thread turns one Philox4x32-10 block into its
 * samples, so that a seed gives the CPU's numbers whatever the launch shape.  The Philox
 * block, the uniforms, the float32/float64 log, exp and sin/cos and each distribution's
 * transform of its words are one source with the CPU (tl_random_math.cuh, included below);
 * here is only the GPU's loop around them (one block per thread), where the CPU's is
 * torchlite/_core/kernels/random_body.h (16 blocks at a time in vector lanes).
 *
 * Stream layout (the CPU's, kernels/random.h): a request for n elements starts at block
 * `base` and is cut into groups of 16 blocks.  Here one thread computes one block:
 * thread t uses block base + t, i.e. lane i = t % 16 of group g = t / 16, and writes
 *   one-word samples:  element 64 g + 16 k + i from word k (k = 0..3);
 *   two-word samples:  element 32 g + 16 h + i from words 2h (low), 2h + 1 (high);
 *   float32 normals:   words (2h, 2h+1) give elements 64 g + 32 h + i (r cos) and
 *                      64 g + 32 h + 16 + i (r sin); float64 normals use all four words for
 *                      elements 32 g + i and 32 g + 16 + i.
 * A rejected bounded integer redraws from the same word(s) of its block with counter word
 * 2 (the draw number) = 1, 2, ...
 *
 * Exactness: everything is integer arithmetic or IEEE-rounded float operations in the CPU's
 * order, so random.cu is compiled with --fmad=false (no contraction into FMA, like the
 * CPU's baseline build).  float64 cauchy (tan), log_normal (exp) and geometric (log) call
 * the math library, whose last bit may differ from glibc's.
 *
 * Plain C++ as well (TL_HD), so tests run the same code on the host. */
#ifndef TL_PHILOX_CUH
#define TL_PHILOX_CUH
#include "tl_common.cuh"

namespace tl {
namespace rnd {

/* A request: the CPU's tl_rnd_req, field for field (torchlite/cuda/_kernels.py packs it). */
struct Req {
    u32 key[2];        /* the seed, low word first */
    u64 base;          /* first block of the request */
    i64 n;             /* elements */
    double a, b;       /* distribution parameters */
    i32 bits;          /* float32 uniform: random bits (24; 11 for float16, 8 for bfloat16) */
    float scale;       /* 2^-bits */
    i64 low;           /* integers: low + [0, range) */
    u64 range;         /* 0 stands for 2^64 */
    u64 reject;        /* Lemire's threshold (2^w - range) mod range */
    u64 thresh;        /* Bernoulli: P(word < thresh) = p */
    const double* p;   /* Bernoulli with one probability per element */
    void* out;         /* n contiguous elements of the kernel's output type */
};
static_assert(sizeof(Req) == 96, "Req layout (pack_random_request)");

/* the arithmetic shared with the CPU, as C99 inside this namespace */
#define TL_RND_FN TL_HD
#define TL_RND_COLD_FN TL_HD
#define tl_rnd_u32 u32
#define tl_rnd_i32 i32
#define tl_rnd_u64 u64
#define tl_rnd_i64 i64
#define tl_rnd_f32_bits(f) f32_bits(f)
#define tl_rnd_bits_f32(u) bits_f32(u)
#define tl_rnd_f64_bits(d) f64_bits(d)
#define tl_rnd_bits_f64(u) bits_f64(u)
#include "tl_random_math.cuh"

struct Words { u32 w[4]; };

/* torchlite's counter layout: block number in words 0-1, draw number in word 2. */
TL_HD Words block(const Req& q, u64 blk, u32 draw) {
    Words o;
    tl_philox_block(q.key, blk, draw, o.w);
    return o;
}

/* ---- distributions: run(q, t) computes thread t's block and writes its elements ---------- */
TL_HD void put(const Req& q, i64 e, float v) { if (e < q.n) ((float*)q.out)[e] = v; }
TL_HD void put(const Req& q, i64 e, double v) { if (e < q.n) ((double*)q.out)[e] = v; }
TL_HD void put(const Req& q, i64 e, i64 v) { if (e < q.n) ((i64*)q.out)[e] = v; }

/* element of word k (one-word samples) and of word pair h (two-word samples) */
TL_HD i64 elem1(u64 t, int k) { return (i64)(t >> 4) * 64 + 16 * k + (i64)(t & 15); }
TL_HD i64 elem2(u64 t, int h) { return (i64)(t >> 4) * 32 + 16 * h + (i64)(t & 15); }

struct UniformF32 {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        const float lo = (float)q.a, span = (float)q.b - (float)q.a;
        for (int k = 0; k < 4; k++) put(q, elem1(t, k), tl_u01f(w.w[k], q.bits, q.scale) * span + lo);
    }
};

/* standard normals of a float32 block: z[k] is element 64 g + 16 k + i */
TL_HD void std_normal_f32(const Req& q, u64 t, float z[4]) {
    const Words w = block(q, q.base + t, 0);
    for (int h = 0; h < 2; h++) tl_rnd_normal_pair_f32(w.w[2 * h], w.w[2 * h + 1], &z[2 * h], &z[2 * h + 1]);
}

struct NormalF32 {
    static TL_HD void run(const Req& q, u64 t) {
        float z[4];
        std_normal_f32(q, t, z);
        const float mean = (float)q.a, sd = (float)q.b;
        for (int k = 0; k < 4; k++) put(q, elem1(t, k), z[k] * sd + mean);
    }
};

struct LogNormalF32 {
    static TL_HD void run(const Req& q, u64 t) {
        float z[4];
        std_normal_f32(q, t, z);
        const float mean = (float)q.a, sd = (float)q.b;
        for (int k = 0; k < 4; k++) put(q, elem1(t, k), tl_rnd_expf(z[k] * sd + mean));
    }
};

struct ExponentialF32 {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        const float lambd = (float)q.a;
        for (int k = 0; k < 4; k++) put(q, elem1(t, k), tl_rnd_exponential_f32(w.w[k], lambd));
    }
};

struct CauchyF32 {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        const float median = (float)q.a, sigma = (float)q.b;
        for (int k = 0; k < 4; k++) put(q, elem1(t, k), tl_rnd_cauchy_f32(w.w[k], median, sigma));
    }
};

TL_HD u64 pair(const Words& w, int h) { return tl_u64_of(w.w[2 * h], w.w[2 * h + 1]); }

struct UniformF64 {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        const double lo = q.a, span = q.b - q.a;
        for (int h = 0; h < 2; h++) put(q, elem2(t, h), tl_u01d(pair(w, h)) * span + lo);
    }
};

TL_HD void std_normal_f64(const Req& q, u64 t, double z[2]) {
    const Words w = block(q, q.base + t, 0);
    tl_rnd_normal_pair_f64(pair(w, 0), pair(w, 1), &z[0], &z[1]);
}

struct NormalF64 {
    static TL_HD void run(const Req& q, u64 t) {
        double z[2];
        std_normal_f64(q, t, z);
        for (int h = 0; h < 2; h++) put(q, elem2(t, h), z[h] * q.b + q.a);
    }
};

struct LogNormalF64 {
    static TL_HD void run(const Req& q, u64 t) {
        double z[2];
        std_normal_f64(q, t, z);
        for (int h = 0; h < 2; h++) put(q, elem2(t, h), exp(z[h] * q.b + q.a));
    }
};

struct ExponentialF64 {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        for (int h = 0; h < 2; h++) put(q, elem2(t, h), tl_rnd_exponential_f64(pair(w, h), q.a));
    }
};

struct CauchyF64 {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        for (int h = 0; h < 2; h++) put(q, elem2(t, h), tl_rnd_cauchy_f64(pair(w, h), q.a, q.b));
    }
};

/* q.b holds log1p(-p) */
struct GeometricF64 {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        for (int h = 0; h < 2; h++) put(q, elem2(t, h), tl_rnd_geometric_f64(pair(w, h), q.b));
    }
};

/* Bernoulli: 1 when word < thresh (P = thresh / 2^32); T = float, double or int64 */
template <class T> struct Bernoulli {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        for (int k = 0; k < 4; k++) put(q, elem1(t, k), (T)((u64)w.w[k] < q.thresh));
    }
};
/* one probability per element, q.p[e] */
template <class T> struct BernoulliP {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        for (int k = 0; k < 4; k++) {
            const i64 e = elem1(t, k);
            const double p = e < q.n ? q.p[e] : 0.0;
            put(q, e, (T)((double)w.w[k] < p * 4294967296.0));
        }
    }
};

/* low + [0, range) for range <= 2^32 (tl_rnd_bounded32: Lemire's, with its redraws) */
struct Randint {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        for (int k = 0; k < 4; k++)
            put(q, elem1(t, k), (i64)((u64)q.low + tl_rnd_bounded32(q.key, q.base + t, k, w.w[k], q.range,
                                                                     (u32)q.reject)));
    }
};

/* ranges above 2^32 (0 stands for 2^64) */
struct RandintWide {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        for (int h = 0; h < 2; h++)
            put(q, elem2(t, h), (i64)((u64)q.low + tl_rnd_bounded64(q.key, q.base + t, h, pair(w, h), q.range,
                                                                     q.reject)));
    }
};

/* randperm's draws: element e uniform on [0, e] */
struct BelowIndex {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        for (int k = 0; k < 4; k++) {
            const i64 e = elem1(t, k);
            put(q, e, (i64)tl_rnd_bounded32_lazy(q.key, q.base + t, k, w.w[k], (u32)(e + 1)));
        }
    }
};

struct BelowIndexWide {
    static TL_HD void run(const Req& q, u64 t) {
        const Words w = block(q, q.base + t, 0);
        for (int h = 0; h < 2; h++) {
            const i64 e = elem2(t, h);
            const u64 range = (u64)(e + 1);
            put(q, e, (i64)tl_rnd_bounded64(q.key, q.base + t, h, pair(w, h), range, (0 - range) % range));
        }
    }
};

}  // namespace rnd
}  // namespace tl
#endif
