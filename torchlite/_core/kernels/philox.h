/* Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw,
 * "Parallel random numbers: as easy as 1, 2, 3" (SC 2011).
 *
 * A block is a pure function of a 128-bit counter (four 32-bit words) and a 64-bit key (two
 * words): ten rounds, each of two 32x32->64 multiplications whose high halves are xored into
 * the other counter words with the round key, the key bumped by the Weyl constants between
 * rounds.  Since any block can be computed directly from its counter, threads can produce any
 * part of a stream without stepping through the parts before it.
 *
 * tl_philox_block computes one block (used for rejection retries and per-element streams);
 * tl_philox_lanes_generic computes TL_PHILOX_LANES = 16 consecutive blocks in
 * structure-of-arrays form, portably (random_body.h has the SSE2/AVX2/AVX-512 versions that
 * x86-64 builds use). */
#ifndef TL_PHILOX_H
#define TL_PHILOX_H
#include <stdint.h>
#include "types.h"

#define TL_PHILOX_M0 0xD2511F53u   /* round multipliers */
#define TL_PHILOX_M1 0xCD9E8D57u
#define TL_PHILOX_W0 0x9E3779B9u   /* key schedule (Weyl sequence): golden ratio, sqrt(3) - 1 */
#define TL_PHILOX_W1 0xBB67AE85u
#define TL_PHILOX_ROUNDS 10
#define TL_PHILOX_LANES 16

/* One round on counter words x0..x3 with round key k0, k1 (in place). */
#define TL_PHILOX_ROUND(x0, x1, x2, x3, k0, k1)                          \
    do {                                                                 \
        uint64_t p0_ = (uint64_t)TL_PHILOX_M0 * (uint64_t)(x0);          \
        uint64_t p1_ = (uint64_t)TL_PHILOX_M1 * (uint64_t)(x2);          \
        uint32_t y0_ = (uint32_t)(p1_ >> 32) ^ (x1) ^ (k0);              \
        uint32_t y2_ = (uint32_t)(p0_ >> 32) ^ (x3) ^ (k1);              \
        (x1) = (uint32_t)p1_;                                            \
        (x3) = (uint32_t)p0_;                                            \
        (x0) = y0_;                                                      \
        (x2) = y2_;                                                      \
    } while (0)

/* The block at counter (ctr0, ctr1, ctr2, ctr3) under key (key0, key1). */
TL_INLINE void tl_philox4x32_10(uint32_t ctr0, uint32_t ctr1, uint32_t ctr2, uint32_t ctr3,
                                uint32_t key0, uint32_t key1, uint32_t out[4]) {
    uint32_t x0 = ctr0, x1 = ctr1, x2 = ctr2, x3 = ctr3, k0 = key0, k1 = key1;
    for (int r = 0; r < TL_PHILOX_ROUNDS; r++) {
        TL_PHILOX_ROUND(x0, x1, x2, x3, k0, k1);
        k0 += TL_PHILOX_W0;
        k1 += TL_PHILOX_W1;
    }
    out[0] = x0; out[1] = x1; out[2] = x2; out[3] = x3;
}

/* torchlite's counter layout: block number `block` (64 bits) in words 0-1, the draw number
 * `draw` in word 2 (0 for a request's first draw, 1, 2, ... for extra draws that rejection
 * sampling or per-element streams need), word 3 zero. */
TL_INLINE void tl_philox_block(const uint32_t key[2], uint64_t block, uint32_t draw, uint32_t out[4]) {
    tl_philox4x32_10((uint32_t)block, (uint32_t)(block >> 32), draw, 0u, key[0], key[1], out);
}

/* Blocks first .. first+15 (at draw number `draw`) in structure-of-arrays form: w[k][i] is
 * word k of block first + i.  Portable version; random_body.h has the SIMD ones.  Lanes keep
 * their words in 64-bit variables whose low halves are the Philox words and whose upper
 * halves are never used (products read the low halves, outputs truncate): this is the form
 * of the even-lane 32x32->64 multiply (pmuludq) that the SIMD versions use. */
TL_INLINE void tl_philox_lanes_generic(const uint32_t key[2], uint64_t first, uint32_t draw,
                                       uint32_t w[4][TL_PHILOX_LANES]) {
    for (int i = 0; i < TL_PHILOX_LANES; i++) {
        uint64_t b = first + (uint64_t)i;
        uint64_t x0 = b & 0xffffffffu, x1 = b >> 32, x2 = draw, x3 = 0u;
        uint64_t k0 = key[0], k1 = key[1];
        for (int r = 0; r < TL_PHILOX_ROUNDS; r++) {
            uint64_t p0 = (x0 & 0xffffffffu) * (uint64_t)TL_PHILOX_M0;
            uint64_t p1 = (x2 & 0xffffffffu) * (uint64_t)TL_PHILOX_M1;
            x0 = (p1 >> 32) ^ x1 ^ k0;
            x2 = (p0 >> 32) ^ x3 ^ k1;
            x1 = p1;
            x3 = p0;
            k0 += TL_PHILOX_W0;
            k1 += TL_PHILOX_W1;
        }
        w[0][i] = (uint32_t)x0; w[1][i] = (uint32_t)x1; w[2][i] = (uint32_t)x2; w[3][i] = (uint32_t)x3;
    }
}

#endif
