/* Tiled, register-blocked GEMM: C[b] = alpha * A[b] @ B[b] + beta * C[b] for b < batch,
 * with every operand given by strides (elements), so transposed and batched forms (and
 * broadcast batches, stride 0) need no copies.  beta == 0 never reads C (NaN-safe).
 *
 * A block computes a BM x BN tile of C with (BM/TM) x (BN/TN) threads, each holding TM x TN
 * accumulators in registers (TM rows; TN columns in two runs of TN/2, half a tile apart).  K advances BK at a time through two shared-memory
 * buffers: the next A and B tiles are fetched into registers while the current ones are
 * multiplied, then stored to the other buffer (one __syncthreads per step).  A tile is read
 * along whichever of its dims is contiguous (m or k for A, n or k for B), so global loads
 * coalesce for every transpose.  Shared tiles hold the compute type: float32 for float16/
 * bfloat16/float32 (float16 and bfloat16 accumulate in float32), float64 for float64.
 *
 * Grid: x over N tiles, y over M tiles, z over batches (a grid-stride loop, so any batch).
 * Name expressions: tl_gemm<float, 128, 128, 8, 8, 8>, tl_gemm<double, 128, 64, 8, 8, 4>. */
#include "tl_common.cuh"

namespace tl {
struct GemmArgs {
    i64 M, N, K, batch;
    i64 sa_b, sa_m, sa_k;      /* A[b][m][k] at A + b sa_b + m sa_m + k sa_k */
    i64 sb_b, sb_k, sb_n;      /* B[b][k][n] */
    i64 sc_b, sc_m, sc_n;      /* C[b][m][n] */
    double alpha, beta;
};
}  // namespace tl

template <class T, int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
tl_gemm(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, tl::GemmArgs g) {
    typedef typename tl::compute<T>::type Acc;
    using tl::i64;
    constexpr int NT = (BM / TM) * (BN / TN);      /* threads */
    constexpr int LA = BM * BK / NT, LB = BK * BN / NT;   /* tile elements each thread loads */
    static_assert(LA * NT == BM * BK && LB * NT == BK * BN, "tile not divisible among threads");
    static_assert(LA >= 1 && LB >= 1, "tile too small for the thread count");
    /* rows padded by 4: the transposing stores of a k-contiguous operand (consecutive threads,
     * consecutive k) then fall in different banks, and 16-byte reads stay aligned */
    __shared__ Acc As[2][BK][BM + 4];
    __shared__ Acc Bs[2][BK][BN + 4];
    /* a thread's TN columns are two runs of TN/2, BN/2 apart: the 16 threads along a row then
     * read one contiguous span of the B tile per run, not 16 spans a whole TN apart (bank
     * conflicts) */
    constexpr int HN = TN / 2;
    static_assert(HN * 2 == TN, "TN must be even");

    const int tid = (int)threadIdx.x;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
    const i64 m0 = (i64)blockIdx.y * BM, n0 = (i64)blockIdx.x * BN;
    const bool a_mfast = g.sa_m == 1, b_nfast = g.sb_n == 1 || g.sb_k != 1;
    const Acc alpha = (Acc)g.alpha, beta = (Acc)g.beta;

    /* the (row, col) of a thread's j-th load within the A (BM x BK) and B (BK x BN) tiles;
     * they do not change along K */
    int am[LA], ak[LA], bk[LB], bn[LB];
    for (int j = 0; j < LA; j++) {
        const int e = tid + j * NT;
        am[j] = a_mfast ? e % BM : e / BK;
        ak[j] = a_mfast ? e / BM : e % BK;
    }
    for (int j = 0; j < LB; j++) {
        const int e = tid + j * NT;
        bk[j] = b_nfast ? e / BN : e % BK;
        bn[j] = b_nfast ? e % BN : e / BK;
    }

    for (i64 b = blockIdx.z; b < g.batch; b += gridDim.z) {
        const T* Ab = A + b * g.sa_b + m0 * g.sa_m;
        const T* Bb = B + b * g.sb_b + n0 * g.sb_n;
        const i64 mlim = g.M - m0, nlim = g.N - n0;   /* rows and columns of this tile in C */
        i64 aoff[LA], boff[LB];                       /* offsets of the loads at k0 = 0 */
        for (int j = 0; j < LA; j++) aoff[j] = am[j] * g.sa_m + ak[j] * g.sa_k;
        for (int j = 0; j < LB; j++) boff[j] = bk[j] * g.sb_k + bn[j] * g.sb_n;
        Acc ra[LA], rb[LB];
        auto fetch = [&](i64 k0) {
            const T* a = Ab + k0 * g.sa_k;
            const T* bp = Bb + k0 * g.sb_k;
            const i64 klim = g.K - k0;
            for (int j = 0; j < LA; j++)
                ra[j] = (am[j] < mlim && ak[j] < klim) ? tl::load(a[aoff[j]]) : Acc(0);
            for (int j = 0; j < LB; j++)
                rb[j] = (bk[j] < klim && bn[j] < nlim) ? tl::load(bp[boff[j]]) : Acc(0);
        };
        auto stash = [&](int buf) {
            for (int j = 0; j < LA; j++) As[buf][ak[j]][am[j]] = ra[j];
            for (int j = 0; j < LB; j++) Bs[buf][bk[j]][bn[j]] = rb[j];
        };

        Acc acc[TM][TN];
        for (int i = 0; i < TM; i++)
            for (int j = 0; j < TN; j++) acc[i][j] = 0;

        fetch(0);
        stash(0);
        __syncthreads();
        int cur = 0;
        for (i64 k0 = 0; k0 < g.K; k0 += BK) {
            const bool more = k0 + BK < g.K;
            if (more) fetch(k0 + BK);             /* in flight while this tile is multiplied */
#pragma unroll
            for (int k = 0; k < BK; k++) {
                Acc a[TM], bv[TN];
#pragma unroll
                for (int i = 0; i < TM; i++) a[i] = As[cur][k][ty * TM + i];
#pragma unroll
                for (int j = 0; j < TN; j++) bv[j] = Bs[cur][k][(j / HN) * (BN / 2) + tx * HN + j % HN];
#pragma unroll
                for (int i = 0; i < TM; i++)
#pragma unroll
                    for (int j = 0; j < TN; j++) acc[i][j] += a[i] * bv[j];
            }
            if (more) stash(cur ^ 1);
            __syncthreads();
            cur ^= 1;
        }

        T* Cb = C + b * g.sc_b;
        for (int i = 0; i < TM; i++) {
            const i64 gm = m0 + ty * TM + i;
            if (gm >= g.M) break;
            for (int j = 0; j < TN; j++) {
                const i64 gn = n0 + (j / HN) * (BN / 2) + tx * HN + j % HN;
                if (gn >= g.N) continue;
                T* c = Cb + gm * g.sc_m + gn * g.sc_n;
                const Acc v = alpha * acc[i][j];
                *c = tl::cvt<T>::from(beta == Acc(0) ? v : v + beta * tl::load(*c));
            }
        }
    }
}
