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

/* ---- float16 / bfloat16 on tensor cores (sm_80 and later) --------------------------------
 * The same product and arguments for float16/bfloat16 operands, multiplied by the warp-level
 * matrix instruction mma.sync.m16n8k16 (float32 accumulation).  A block of 8 warps computes a
 * 128 x 128 tile of C, each warp a 64 x 32 part of it: 4 x 4 instructions per 16 of K.  K
 * advances 16 at a time through two shared-memory buffers (32 kept 255 registers busy and
 * spilled), both tiles stored K-contiguous (A as [m][k], B as [n][k]) with rows padded to 24
 * elements, so that every fragment a lane reads is one aligned 32-bit word and the 32 lanes
 * of a read hit 32 different banks.  Not yet run on a GPU: off unless
 * TORCHLITE_CUDA_TENSOR_CORES=1 (torchlite/cuda/_matmul.py).  The
 * fragment layouts are the PTX ISA's for m16n8k16 (groupID = lane / 4, t = lane % 4):
 *   A: a0a1 (row g, cols 2t, 2t+1), a2a3 (row g+8), a4a5 (row g, cols +8), a6a7 (row g+8, +8)
 *   B: b0b1 (rows 2t, 2t+1, col g), b2b3 (rows +8)
 *   C: c0c1 (row g, cols 2t, 2t+1), c2c3 (row g+8)
 * Global loads are the SIMT kernel's (along whichever dim is contiguous, zero past the edges).
 * Name expressions: tl_gemm_tc<__half>, tl_gemm_tc<__nv_bfloat16>. */
#if defined(__CUDACC__)
namespace tl {
TL_DEV void mma_16816(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], f16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
TL_DEV void mma_16816(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], bf16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
/* two consecutive 16-bit elements of a shared tile as one word (the low half first) */
template <class T> TL_DEV u32 pair_at(const T* p) { return *reinterpret_cast<const u32*>(p); }
}  // namespace tl

template <class T>
__global__ void __launch_bounds__(256)
tl_gemm_tc(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, tl::GemmArgs g) {
    using tl::i64;
    using tl::u32;
    constexpr int BM = 128, BN = 128, BK = 16, LD = BK + 8, NT = 256;
    constexpr int LA = BM * BK / NT, LB = BK * BN / NT;        /* 8 loads of each per thread */
    __shared__ __align__(16) T As[2][BM][LD];
    __shared__ __align__(16) T Bs[2][BN][LD];

    const int tid = (int)threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int gq = lane >> 2, tq = lane & 3;                   /* groupID, thread in group */
    const int wm = (warp / 4) * 64, wn = (warp % 4) * 32;      /* the warp's part of the tile */
    const i64 m0 = (i64)blockIdx.y * BM, n0 = (i64)blockIdx.x * BN;
    const bool a_kfast = g.sa_k == 1 && g.sa_m != 1, b_nfast = g.sb_n == 1 || g.sb_k != 1;
    const float alpha = (float)g.alpha, beta = (float)g.beta;

    /* the (row, col) of a thread's j-th load in the A (BM x BK) and B (BK x BN) tiles, from
     * e = tid + j * NT (written out: index arrays would take 64 registers) */
    const int a_m0 = a_kfast ? tid / BK : tid % BM, a_ms = a_kfast ? NT / BK : 0;
    const int a_k0 = a_kfast ? tid % BK : tid / BM, a_ks = a_kfast ? 0 : NT / BM;
    const int b_k0 = b_nfast ? tid / BN : tid % BK, b_ks = b_nfast ? NT / BN : 0;
    const int b_n0 = b_nfast ? tid % BN : tid / BK, b_ns = b_nfast ? 0 : NT / BK;
#define TL_AM(j) (a_m0 + (j) * a_ms)
#define TL_AK(j) (a_k0 + (j) * a_ks)
#define TL_BK(j) (b_k0 + (j) * b_ks)
#define TL_BN(j) (b_n0 + (j) * b_ns)

    for (i64 b = blockIdx.z; b < g.batch; b += gridDim.z) {
        const T* Ab = A + b * g.sa_b + m0 * g.sa_m;
        const T* Bb = B + b * g.sb_b + n0 * g.sb_n;
        const i64 mlim = g.M - m0, nlim = g.N - n0;
        /* each thread's loads: a base address and one step between consecutive j */
        const T* pa = Ab + a_m0 * g.sa_m + a_k0 * g.sa_k;
        const T* pb = Bb + b_k0 * g.sb_k + b_n0 * g.sb_n;
        const i64 a_step = a_ms * g.sa_m + a_ks * g.sa_k, b_step = b_ks * g.sb_k + b_ns * g.sb_n;
        T ra[LA], rb[LB];
        const T zero = tl::cvt<T>::from(0.0f);
        auto fetch = [&](i64 k0) {
            const int klim = (int)(g.K - k0 < BK ? g.K - k0 : BK);
            const T* qa = pa + k0 * g.sa_k;
            const T* qb = pb + k0 * g.sb_k;
#pragma unroll
            for (int j = 0; j < LA; j++)
                ra[j] = (TL_AM(j) < mlim && TL_AK(j) < klim) ? qa[j * a_step] : zero;
#pragma unroll
            for (int j = 0; j < LB; j++)
                rb[j] = (TL_BK(j) < klim && TL_BN(j) < nlim) ? qb[j * b_step] : zero;
        };
        auto stash = [&](int buf) {
#pragma unroll
            for (int j = 0; j < LA; j++) As[buf][TL_AM(j)][TL_AK(j)] = ra[j];
#pragma unroll
            for (int j = 0; j < LB; j++) Bs[buf][TL_BN(j)][TL_BK(j)] = rb[j];
        };

        float acc[4][4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

        fetch(0);
        stash(0);
        __syncthreads();
        int cur = 0;
        for (i64 k0 = 0; k0 < g.K; k0 += BK) {
            const bool more = k0 + BK < g.K;
            if (more) fetch(k0 + BK);              /* in flight while this tile is multiplied */
#pragma unroll
            for (int kk = 0; kk < BK; kk += 16) {
                u32 af[4][4], bfr[4][2];
#pragma unroll
                for (int mi = 0; mi < 4; mi++) {
                    const T* r = &As[cur][wm + mi * 16 + gq][kk + 2 * tq];
                    af[mi][0] = tl::pair_at(r);
                    af[mi][1] = tl::pair_at(r + 8 * LD);
                    af[mi][2] = tl::pair_at(r + 8);
                    af[mi][3] = tl::pair_at(r + 8 * LD + 8);
                }
#pragma unroll
                for (int ni = 0; ni < 4; ni++) {
                    const T* r = &Bs[cur][wn + ni * 8 + gq][kk + 2 * tq];
                    bfr[ni][0] = tl::pair_at(r);
                    bfr[ni][1] = tl::pair_at(r + 8);
                }
#pragma unroll
                for (int mi = 0; mi < 4; mi++)
#pragma unroll
                    for (int ni = 0; ni < 4; ni++) tl::mma_16816(acc[mi][ni], af[mi], bfr[ni], T());
            }
            if (more) stash(cur ^ 1);
            __syncthreads();
            cur ^= 1;
        }

        T* Cb = C + b * g.sc_b;
#pragma unroll
        for (int mi = 0; mi < 4; mi++)
#pragma unroll
            for (int ni = 0; ni < 4; ni++)
#pragma unroll
                for (int e = 0; e < 4; e++) {      /* unrolled: acc stays in registers */
                    const i64 gm = m0 + wm + mi * 16 + gq + (e >> 1) * 8;
                    const i64 gn = n0 + wn + ni * 8 + 2 * tq + (e & 1);
                    if (gm >= g.M || gn >= g.N) continue;
                    T* c = Cb + gm * g.sc_m + gn * g.sc_n;
                    const float v = alpha * acc[mi][ni][e];
                    *c = tl::cvt<T>::from(beta == 0.0f ? v : v + beta * tl::load(*c));
                }
    }
#undef TL_AM
#undef TL_AK
#undef TL_BK
#undef TL_BN
}
#endif
