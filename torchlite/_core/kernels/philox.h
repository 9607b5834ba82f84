/* Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw,
 * "Parallel random numbers: as easy as 1, 2, 3" (SC 2011).
 *
 * A block is a pure function of a 128-bit counter (four 32-bit words) and a 64-bit key (two
 * words): ten rounds, each of two 32x32->64 multiplications whose high halves are xored into
 * the other counter words with the round key, the key bumped by the Weyl constants between
 * rounds.  Since any block can be computed directly from its counter, threads can produce any
 * part of a stream without stepping through the parts before it.
 *
 * tl_philox_block computes one block (used for rejection retries and per-element streams; its
 * source is shared with the CUDA kernels: cuda_kernels/tl_random_math.cuh);
 * tl_philox_lanes_generic computes TL_PHILOX_LANES = 16 consecutive blocks in
 * structure-of-arrays form, portably (random_body.h has the SSE2/AVX2/AVX-512 versions that
 * x86-64 builds use). */
#ifndef TL_PHILOX_H
#define TL_PHILOX_H
#include <stdint.h>
#include "types.h"
#include "random_math.h"      /* tl_philox4x32_10, tl_philox_block: cuda_kernels/tl_random_math.cuh */

#define TL_PHILOX_LANES 16

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
