/* Group kernels for every distribution; included once per ISA level by random.h with TL_SFX
 * naming the copy (_base, _v3, _v4) and TL_RND_ISA its level (0, 3, 4).  A group is the
 * output of 16 consecutive Philox blocks (64 words): 64 elements of a one-word distribution
 * or 32 of a two-word one, laid out as described in random.h.  Each kernel writes the whole
 * group to `out`. */

/* ---- 16 Philox blocks with explicit SIMD ------------------------------------------------- */
/* 64-bit lanes whose low halves hold the words (see tl_philox_lanes_generic): one pmuludq
 * per product, no shuffles.  AVX-512: 8 lanes a vector, AVX2: 4, SSE2: 2. */
#if TL_RND_ISA == 4
#define TL_V __m512i
#define TL_VN 8
#define TL_V_SET1(x) _mm512_set1_epi64((long long)(x))
#define TL_V_LOADU(p) _mm512_loadu_si512((const void*)(p))
#define TL_V_MUL(a, b) _mm512_mul_epu32((a), (b))
#define TL_V_SRL32(a) _mm512_srli_epi64((a), 32)
#define TL_V_AND(a, b) _mm512_and_si512((a), (b))
#define TL_V_XOR(a, b) _mm512_xor_si512((a), (b))
#define TL_V_ADD(a, b) _mm512_add_epi64((a), (b))
/* the low halves of the lanes of two vectors, as 2 TL_VN words */
#define TL_V_PACK2(dst, a, b) do { \
        _mm256_storeu_si256((__m256i*)(dst), _mm512_cvtepi64_epi32(a)); \
        _mm256_storeu_si256((__m256i*)((dst) + 8), _mm512_cvtepi64_epi32(b)); } while (0)
#elif TL_RND_ISA == 3
#define TL_V __m256i
#define TL_VN 4
#define TL_V_SET1(x) _mm256_set1_epi64x((long long)(x))
#define TL_V_LOADU(p) _mm256_loadu_si256((const __m256i*)(p))
#define TL_V_MUL(a, b) _mm256_mul_epu32((a), (b))
#define TL_V_SRL32(a) _mm256_srli_epi64((a), 32)
#define TL_V_AND(a, b) _mm256_and_si256((a), (b))
#define TL_V_XOR(a, b) _mm256_xor_si256((a), (b))
#define TL_V_ADD(a, b) _mm256_add_epi64((a), (b))
/* the even words of both vectors (per 128-bit half), then the halves put in order */
#define TL_V_PACK2(dst, a, b) _mm256_storeu_si256((__m256i*)(dst), _mm256_permute4x64_epi64( \
        _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), 0x88)), 0xD8))
#elif defined(__SSE2__)
#define TL_V __m128i
#define TL_VN 2
#define TL_V_SET1(x) _mm_set1_epi64x((long long)(x))
#define TL_V_LOADU(p) _mm_loadu_si128((const __m128i*)(p))
#define TL_V_MUL(a, b) _mm_mul_epu32((a), (b))
#define TL_V_SRL32(a) _mm_srli_epi64((a), 32)
#define TL_V_AND(a, b) _mm_and_si128((a), (b))
#define TL_V_XOR(a, b) _mm_xor_si128((a), (b))
#define TL_V_ADD(a, b) _mm_add_epi64((a), (b))
#define TL_V_PACK2(dst, a, b) _mm_storeu_si128((__m128i*)(dst), \
        _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(a), _mm_castsi128_ps(b), 0x88)))
#endif

#ifdef TL_V
/* Two vectors (2 TL_VN blocks) at a time: eight state registers plus constants fit in the
 * register file at every level, and two independent chains hide the multiply latency. */
TL_INLINE void TL_SFX(tl_philox_lanes)(const uint32_t key[2], uint64_t first, uint32_t draw,
                                       uint32_t w[4][TL_PHILOX_LANES]) {
    static const uint64_t iota[TL_PHILOX_LANES] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const TL_V lo32 = TL_V_SET1(0xffffffffu), m0 = TL_V_SET1(TL_PHILOX_M0), m1 = TL_V_SET1(TL_PHILOX_M1);
    for (int c = 0; c < TL_PHILOX_LANES; c += 2 * TL_VN) {
        TL_V b0 = TL_V_ADD(TL_V_SET1(first + (uint64_t)c), TL_V_LOADU(iota));
        TL_V b1 = TL_V_ADD(TL_V_SET1(first + (uint64_t)c), TL_V_LOADU(iota + TL_VN));
        TL_V a0 = TL_V_AND(b0, lo32), a1 = TL_V_SRL32(b0), a2 = TL_V_SET1(draw), a3 = TL_V_SET1(0);
        TL_V c0 = TL_V_AND(b1, lo32), c1 = TL_V_SRL32(b1), c2 = a2, c3 = a3;
        uint32_t k0 = key[0], k1 = key[1];
        for (int r = 0; r < TL_PHILOX_ROUNDS; r++) {
            TL_V vk0 = TL_V_SET1(k0), vk1 = TL_V_SET1(k1);
            TL_V p0 = TL_V_MUL(a0, m0), p1 = TL_V_MUL(a2, m1);
            TL_V q0 = TL_V_MUL(c0, m0), q1 = TL_V_MUL(c2, m1);
            a0 = TL_V_XOR(TL_V_XOR(TL_V_SRL32(p1), a1), vk0);
            a2 = TL_V_XOR(TL_V_XOR(TL_V_SRL32(p0), a3), vk1);
            a1 = p1;
            a3 = p0;
            c0 = TL_V_XOR(TL_V_XOR(TL_V_SRL32(q1), c1), vk0);
            c2 = TL_V_XOR(TL_V_XOR(TL_V_SRL32(q0), c3), vk1);
            c1 = q1;
            c3 = q0;
            k0 += TL_PHILOX_W0;
            k1 += TL_PHILOX_W1;
        }
        TL_V_PACK2(w[0] + c, a0, c0);
        TL_V_PACK2(w[1] + c, a1, c1);
        TL_V_PACK2(w[2] + c, a2, c2);
        TL_V_PACK2(w[3] + c, a3, c3);
    }
}
#undef TL_V
#undef TL_VN
#undef TL_V_SET1
#undef TL_V_LOADU
#undef TL_V_MUL
#undef TL_V_SRL32
#undef TL_V_AND
#undef TL_V_XOR
#undef TL_V_ADD
#undef TL_V_PACK2
#else
TL_INLINE void TL_SFX(tl_philox_lanes)(const uint32_t key[2], uint64_t first, uint32_t draw,
                                       uint32_t w[4][TL_PHILOX_LANES]) {
    tl_philox_lanes_generic(key, first, draw, w);
}
#endif

#define TL_RND_WORDS(q, g, w) \
    uint32_t w[4][TL_PHILOX_LANES]; \
    TL_SFX(tl_philox_lanes)((q)->key, (q)->base + (uint64_t)(g) * TL_PHILOX_LANES, 0u, w)

/* ---- float32: one word per element ------------------------------------------------------- */
static void TL_SFX(tl_rnd_uniform_f32)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    float* out = (float*)vout;
    const float lo = (float)q->a, span = (float)q->b - (float)q->a, scale = q->scale;
    const int bits = q->bits;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < TL_PHILOX_LANES; i++)
            out[k * TL_PHILOX_LANES + i] = tl_u01f(w[k][i], bits, scale) * span + lo;
}

/* Box-Muller: words (0, 1) of a block give elements i and 16 + i, words (2, 3) give 32 + i
 * and 48 + i: radius from the first word of the pair, angle from the second. */
TL_INLINE void TL_SFX(tl_rnd_std_normal_f32)(const tl_rnd_req* q, int64_t g, float* z) {
    TL_RND_WORDS(q, g, w);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < TL_PHILOX_LANES; i++)
            tl_rnd_normal_pair_f32(w[2 * h][i], w[2 * h + 1][i], &z[(2 * h) * TL_PHILOX_LANES + i],
                                   &z[(2 * h + 1) * TL_PHILOX_LANES + i]);
}

static void TL_SFX(tl_rnd_normal_f32)(const tl_rnd_req* q, int64_t g, void* vout) {
    float* out = (float*)vout;
    const float mean = (float)q->a, std = (float)q->b;
    TL_SFX(tl_rnd_std_normal_f32)(q, g, out);
    for (int j = 0; j < 4 * TL_PHILOX_LANES; j++) out[j] = out[j] * std + mean;
}

static void TL_SFX(tl_rnd_log_normal_f32)(const tl_rnd_req* q, int64_t g, void* vout) {
    float* out = (float*)vout;
    const float mean = (float)q->a, std = (float)q->b;
    TL_SFX(tl_rnd_std_normal_f32)(q, g, out);
    for (int j = 0; j < 4 * TL_PHILOX_LANES; j++) out[j] = tl_rnd_expf(out[j] * std + mean);
}

static void TL_SFX(tl_rnd_exponential_f32)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    float* out = (float*)vout;
    const float lambd = (float)q->a;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < TL_PHILOX_LANES; i++)
            out[k * TL_PHILOX_LANES + i] = tl_rnd_exponential_f32(w[k][i], lambd);
}

static void TL_SFX(tl_rnd_cauchy_f32)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    float* out = (float*)vout;
    const float median = (float)q->a, sigma = (float)q->b;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < TL_PHILOX_LANES; i++)
            out[k * TL_PHILOX_LANES + i] = tl_rnd_cauchy_f32(w[k][i], median, sigma);
}

/* ---- float64: two words per element (words 2h, 2h+1 of block i give element 16h + i) ---- */
#define TL_RND_X64(w, h, i) tl_u64_of(w[2 * (h)][i], w[2 * (h) + 1][i])

static void TL_SFX(tl_rnd_uniform_f64)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    double* out = (double*)vout;
    const double lo = q->a, span = q->b - q->a;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < TL_PHILOX_LANES; i++)
            out[h * TL_PHILOX_LANES + i] = tl_u01d(TL_RND_X64(w, h, i)) * span + lo;
}

/* Box-Muller: element i takes its radius from words 0-1 and its angle from words 2-3;
 * element 16 + i is the sine partner. */
TL_INLINE void TL_SFX(tl_rnd_std_normal_f64)(const tl_rnd_req* q, int64_t g, double* z) {
    TL_RND_WORDS(q, g, w);
    for (int i = 0; i < TL_PHILOX_LANES; i++)
        tl_rnd_normal_pair_f64(TL_RND_X64(w, 0, i), TL_RND_X64(w, 1, i), &z[i], &z[TL_PHILOX_LANES + i]);
}

static void TL_SFX(tl_rnd_normal_f64)(const tl_rnd_req* q, int64_t g, void* vout) {
    double* out = (double*)vout;
    TL_SFX(tl_rnd_std_normal_f64)(q, g, out);
    for (int j = 0; j < 2 * TL_PHILOX_LANES; j++) out[j] = out[j] * q->b + q->a;
}

static void TL_SFX(tl_rnd_log_normal_f64)(const tl_rnd_req* q, int64_t g, void* vout) {
    double* out = (double*)vout;
    TL_SFX(tl_rnd_std_normal_f64)(q, g, out);
    for (int j = 0; j < 2 * TL_PHILOX_LANES; j++) out[j] = exp(out[j] * q->b + q->a);
}

static void TL_SFX(tl_rnd_exponential_f64)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    double* out = (double*)vout;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < TL_PHILOX_LANES; i++)
            out[h * TL_PHILOX_LANES + i] = tl_rnd_exponential_f64(TL_RND_X64(w, h, i), q->a);
}

static void TL_SFX(tl_rnd_cauchy_f64)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    double* out = (double*)vout;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < TL_PHILOX_LANES; i++)
            out[h * TL_PHILOX_LANES + i] = tl_rnd_cauchy_f64(TL_RND_X64(w, h, i), q->a, q->b);
}

/* q->b holds log1p(-p) */
static void TL_SFX(tl_rnd_geometric_f64)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    double* out = (double*)vout;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < TL_PHILOX_LANES; i++)
            out[h * TL_PHILOX_LANES + i] = tl_rnd_geometric_f64(TL_RND_X64(w, h, i), q->b);
}

/* ---- Bernoulli: one word per element, P(word < thresh) = thresh / 2^32 ------------------- */
#define TL_RND_BERNOULLI(T, NAME)                                                          \
    static void TL_SFX(NAME)(const tl_rnd_req* q, int64_t g, void* vout) {                 \
        TL_RND_WORDS(q, g, w);                                                         \
        T* out = (T*)vout;                                                                 \
        const uint64_t thresh = q->thresh;                                                 \
        for (int k = 0; k < 4; k++)                                                        \
            for (int i = 0; i < TL_PHILOX_LANES; i++)                                      \
                out[k * TL_PHILOX_LANES + i] = (T)((uint64_t)w[k][i] < thresh);            \
    }                                                                                      \
    static void TL_SFX(NAME##_p)(const tl_rnd_req* q, int64_t g, void* vout) {             \
        TL_RND_WORDS(q, g, w);                                                         \
        T* out = (T*)vout;                                                                 \
        const int64_t e0 = g * 4 * TL_PHILOX_LANES;                                        \
        for (int k = 0; k < 4; k++)                                                        \
            for (int i = 0; i < TL_PHILOX_LANES; i++) {                                    \
                int64_t e = e0 + k * TL_PHILOX_LANES + i;                                  \
                double p = e < q->n ? q->p[e] : 0.0;                                       \
                out[k * TL_PHILOX_LANES + i] = (T)((double)w[k][i] < p * 4294967296.0);    \
            }                                                                              \
    }
TL_RND_BERNOULLI(float, tl_rnd_bernoulli_f32)
TL_RND_BERNOULLI(double, tl_rnd_bernoulli_f64)
TL_RND_BERNOULLI(int64_t, tl_rnd_bernoulli_i64)
#undef TL_RND_BERNOULLI

/* ---- bounded integers: Lemire's multiply-shift with rejection (tl_rnd_bounded32/64) ------- */
/* low + floor(x * range / 2^32) for a 32-bit word x (range == 2^32 takes the word as it is).
 * A first pass computes every element without its redraws (the loop vectorises); only when an
 * element of the group was rejected does a second pass redraw. */
static void TL_SFX(tl_rnd_randint_i64)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    int64_t* out = (int64_t*)vout;
    const uint64_t range = q->range, low = (uint64_t)q->low;
    const uint32_t reject = (uint32_t)q->reject;
    uint32_t any = 0;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < TL_PHILOX_LANES; i++) {
            uint64_t m = (uint64_t)w[k][i] * range;
            out[k * TL_PHILOX_LANES + i] = (int64_t)(low + (m >> 32));
            any |= (uint32_t)((uint32_t)m < reject);
        }
    if (!any) return;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < TL_PHILOX_LANES; i++)
            out[k * TL_PHILOX_LANES + i] = (int64_t)(low + tl_rnd_bounded32(
                q->key, q->base + (uint64_t)g * TL_PHILOX_LANES + i, k, w[k][i], range, reject));
}

/* 64-bit words for ranges above 2^32; range == 0 stands for 2^64. */
static void TL_SFX(tl_rnd_randint_wide_i64)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    int64_t* out = (int64_t*)vout;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < TL_PHILOX_LANES; i++)
            out[h * TL_PHILOX_LANES + i] = (int64_t)((uint64_t)q->low + tl_rnd_bounded64(
                q->key, q->base + (uint64_t)g * TL_PHILOX_LANES + i, h, TL_RND_X64(w, h, i), q->range, q->reject));
}

/* randperm's draws: element e is uniform on [0, e] (range e + 1 < 2^32 here). */
static void TL_SFX(tl_rnd_below_index_i64)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    int64_t* out = (int64_t*)vout;
    const int64_t e0 = g * 4 * TL_PHILOX_LANES;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < TL_PHILOX_LANES; i++) {
            uint32_t range = (uint32_t)(e0 + k * TL_PHILOX_LANES + i + 1);
            out[k * TL_PHILOX_LANES + i] = (int64_t)tl_rnd_bounded32_lazy(
                q->key, q->base + (uint64_t)g * TL_PHILOX_LANES + i, k, w[k][i], range);
        }
}

static void TL_SFX(tl_rnd_below_index_wide_i64)(const tl_rnd_req* q, int64_t g, void* vout) {
    TL_RND_WORDS(q, g, w);
    int64_t* out = (int64_t*)vout;
    const int64_t e0 = g * 2 * TL_PHILOX_LANES;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < TL_PHILOX_LANES; i++) {
            uint64_t range = (uint64_t)(e0 + h * TL_PHILOX_LANES + i + 1);
            out[h * TL_PHILOX_LANES + i] = (int64_t)tl_rnd_bounded64(
                q->key, q->base + (uint64_t)g * TL_PHILOX_LANES + i, h, TL_RND_X64(w, h, i), range, (0u - range) % range);
        }
}

static void TL_SFX(tl_rnd_register)(tl_rnd_group_fn t[TL_RND_NDISTS][3]) {
    t[TL_RND_UNIFORM][0] = TL_SFX(tl_rnd_uniform_f32);
    t[TL_RND_UNIFORM][1] = TL_SFX(tl_rnd_uniform_f64);
    t[TL_RND_NORMAL][0] = TL_SFX(tl_rnd_normal_f32);
    t[TL_RND_NORMAL][1] = TL_SFX(tl_rnd_normal_f64);
    t[TL_RND_LOG_NORMAL][0] = TL_SFX(tl_rnd_log_normal_f32);
    t[TL_RND_LOG_NORMAL][1] = TL_SFX(tl_rnd_log_normal_f64);
    t[TL_RND_EXPONENTIAL][0] = TL_SFX(tl_rnd_exponential_f32);
    t[TL_RND_EXPONENTIAL][1] = TL_SFX(tl_rnd_exponential_f64);
    t[TL_RND_CAUCHY][0] = TL_SFX(tl_rnd_cauchy_f32);
    t[TL_RND_CAUCHY][1] = TL_SFX(tl_rnd_cauchy_f64);
    t[TL_RND_GEOMETRIC][1] = TL_SFX(tl_rnd_geometric_f64);
    t[TL_RND_BERNOULLI][0] = TL_SFX(tl_rnd_bernoulli_f32);
    t[TL_RND_BERNOULLI][1] = TL_SFX(tl_rnd_bernoulli_f64);
    t[TL_RND_BERNOULLI][2] = TL_SFX(tl_rnd_bernoulli_i64);
    t[TL_RND_BERNOULLI_P][0] = TL_SFX(tl_rnd_bernoulli_f32_p);
    t[TL_RND_BERNOULLI_P][1] = TL_SFX(tl_rnd_bernoulli_f64_p);
    t[TL_RND_BERNOULLI_P][2] = TL_SFX(tl_rnd_bernoulli_i64_p);
    t[TL_RND_RANDINT][2] = TL_SFX(tl_rnd_randint_i64);
    t[TL_RND_RANDINT_WIDE][2] = TL_SFX(tl_rnd_randint_wide_i64);
    t[TL_RND_BELOW_INDEX][2] = TL_SFX(tl_rnd_below_index_i64);
    t[TL_RND_BELOW_INDEX_WIDE][2] = TL_SFX(tl_rnd_below_index_wide_i64);
}
