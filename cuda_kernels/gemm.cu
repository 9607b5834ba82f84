/* Tiled, register-blocked GEMM: C[b] = alpha * A[b] @ B[b] + beta * D[b] for b < batch,
 * with every operand given by strides (elements), so transposed and batched forms (and
 * broadcast batches, stride 0) need no copies.  D, the addend, is C itself or another array
 * (a bias broadcast by stride 0: Linear's and a convolution's bias with no copy into C);
 * each element of D is read before the same thread writes that element of C, so D may be C.
 * beta == 0 never reads D (NaN-safe).
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
    i64 sd_b, sd_m, sd_n;      /* D[b][m][n], the addend */
    double alpha, beta;
};
}  // namespace tl

template <class T, int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
tl_gemm(const T* __restrict__ A, const T* __restrict__ B, T* C, const T* D, tl::GemmArgs g) {
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
        const T* Db = D + b * g.sd_b;
        for (int i = 0; i < TM; i++) {
            const i64 gm = m0 + ty * TM + i;
            if (gm >= g.M) break;
            for (int j = 0; j < TN; j++) {
                const i64 gn = n0 + (j / HN) * (BN / 2) + tx * HN + j % HN;
                if (gn >= g.N) continue;
                const Acc v = alpha * acc[i][j];
                Cb[gm * g.sc_m + gn * g.sc_n] = tl::cvt<T>::from(
                    beta == Acc(0) ? v : v + beta * tl::load(Db[gm * g.sd_m + gn * g.sd_n]));
            }
        }
    }
}

/* ---- split K -------------------------------------------------------------------------------
 * A product of few output tiles over a long K (a convolution's weight gradient: a 16 x 9
 * matrix summed over every pixel of the batch) would run as a handful of blocks, each
 * walking all of K.  It runs instead as S products over consecutive pieces of K, in parallel
 * (tl_gemm over a batch of pieces, into a float32/float64 workspace W[s][m][n]), and this
 * kernel sums the pieces: C = alpha * sum_s W[s] + beta * D (beta == 0 never reads D), in
 * the order s = 0, 1, ..., so the result does not depend on the launch (deterministic).
 * Name expressions: tl_gemm_splitk_sum<float>, tl_gemm_splitk_sum<double>. */
template <class T>
__global__ void tl_gemm_splitk_sum(const T* __restrict__ W, T* C, const T* D, tl::GemmArgs g,
                                   tl::i64 pieces) {
    using tl::i64;
    const i64 mn = g.M * g.N;
    for (i64 i = tl::global_thread(); i < mn; i += tl::global_threads()) {
        T acc = 0;
        for (i64 s = 0; s < pieces; s++) acc += W[s * mn + i];
        const i64 m = i / g.N, n = i % g.N;
        const T v = (T)g.alpha * acc;
        C[m * g.sc_m + n * g.sc_n] = g.beta == 0.0 ? v : v + (T)g.beta * D[m * g.sd_m + n * g.sd_n];
    }
}

/* ---- float16 / bfloat16 on tensor cores (sm_80 and later) --------------------------------
 * The same product and arguments for float16/bfloat16 operands whose contiguous dims allow
 * 16-byte copies (torchlite/cuda/_matmul.py checks: each operand's contiguous dim has stride 1
 * and an extent that is a multiple of 8, its other strides are multiples of 8, its address
 * 16-byte aligned), multiplied by the warp-level matrix instruction mma.sync.m16n8k16 with
 * float32 accumulation.
 *
 * A block of WARPS_M x WARPS_N warps computes a BM x BN tile of C, each warp a
 * (BM / WARPS_M) x (BN / WARPS_N) part of it.  K advances BK at a time through STAGES
 * shared-memory buffers filled by cp.async (16 bytes a copy, straight from global memory, no
 * registers), so the copies of the next STAGES - 1 tiles are in flight while one is
 * multiplied.  Each operand's tile keeps its global layout: A_K says A is k-contiguous (the
 * tile is [m][k]) rather than m-contiguous ([k][m]); B_K that B is k-contiguous ([n][k])
 * rather than n-contiguous ([k][n]).  ldmatrix reads the fragments, with .trans for the
 * layouts whose rows run along m or n.  Every shared row is padded by 8 elements (16 bytes):
 * the 8 row addresses of an ldmatrix then fall in 8 different 16-byte bank groups.
 * Fragment layouts (PTX ISA, m16n8k16, groupID g = lane / 4, t = lane % 4):
 *   A: a0a1 (row g, cols 2t, 2t+1), a2a3 (row g+8), a4a5 (row g, cols +8), a6a7 (row g+8, +8)
 *   B: b0b1 (rows 2t, 2t+1, col g), b2b3 (rows +8)
 *   C: c0c1 (row g, cols 2t, 2t+1), c2c3 (row g+8)
 * Copies past an edge (rows or columns beyond M, N or K) fill zeros (cp.async's source size
 * 0), so partial tiles need no other care.  Shared memory is dynamic (over 48 KB: the launch
 * raises the kernel's limit, torchlite/cuda/_launch.allow_shared).
 * GROUP_M > 1 orders the tiles for the L2 cache: blocks in launch order walk GROUP_M rows of
 * tiles column by column, so the blocks running at once share their A rows and B columns
 * (1, the rows one after another, is what the library launches; benchmarks/tune_gemm_tc.py
 * tries the others on a GPU).
 * Name expressions: tl_gemm_tc<T, BM, BN, BK, WARPS_M, WARPS_N, STAGES, A_K, B_K[, GROUP_M]>
 * (_kernels.gemm_tc_kernel). */
#if defined(__CUDACC__)
namespace tl {
TL_DEV void mma_16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1, f16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
TL_DEV void mma_16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1, bf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
TL_DEV u32 shared_address(const void* p) { return (u32)__cvta_generic_to_shared(p); }
/* 16 bytes from global to shared memory, asynchronously; zeros where !valid */
TL_DEV void cp_async16(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(shared_address(dst)), "l"(src), "r"(valid ? 16 : 0));
}
TL_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> TL_DEV void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }
/* four 8 x 8 matrices of 16-bit elements; lane l gives the address of row l % 8 of matrix
 * l / 8 and gets, of matrix j in r[j], (row l / 4, cols 2 (l % 4) and +1); .trans gets
 * (rows 2 (l % 4) and +1, col l / 4) */
template <bool TRANS> TL_DEV void ldmatrix_x4(u32 (&r)[4], const void* p) {
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(shared_address(p)));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(shared_address(p)));
}
TL_DEV u32 bits_of(f16 x) { return __half_as_ushort(x); }
TL_DEV u32 bits_of(bf16 x) { return __bfloat16_as_ushort(x); }
}  // namespace tl

template <class T, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, int A_K, int B_K,
          int GROUP_M = 1>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32)
tl_gemm_tc(const T* __restrict__ A, const T* __restrict__ B, T* C, const T* D, tl::GemmArgs g) {
    using tl::i64;
    using tl::u32;
    constexpr int NT = WARPS_M * WARPS_N * 32;
    constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;      /* a warp's part of the tile */
    constexpr int MI = WTM / 16, NI = WTN / 8;                 /* its mma tiles */
    static_assert(MI * 16 == WTM && NI * 8 == WTN && NI % 2 == 0, "warp tile not a multiple of 16 x 16");
    static_assert(BK % 16 == 0, "BK must be a multiple of 16");
    /* the tiles as stored: rows x columns (columns contiguous), rows padded by 8 */
    constexpr int A_ROWS = A_K ? BM : BK, A_COLS = A_K ? BK : BM, A_LD = A_COLS + 8;
    constexpr int B_ROWS = B_K ? BN : BK, B_COLS = B_K ? BK : BN, B_LD = B_COLS + 8;
    constexpr int A_STAGE = A_ROWS * A_LD, B_STAGE = B_ROWS * B_LD;
    /* a thread's 16-byte copies into a tile: one column of 8 elements, rows r0, r0 + RS, ... */
    constexpr int A_CPR = A_COLS / 8, B_CPR = B_COLS / 8;      /* copies per row */
    constexpr int A_RS = NT / A_CPR, B_RS = NT / B_CPR;
    constexpr int A_COPIES = A_ROWS / A_RS, B_COPIES = B_ROWS / B_RS;
    static_assert(A_RS * A_CPR == NT && B_RS * B_CPR == NT && A_COPIES * A_RS == A_ROWS
                  && B_COPIES * B_RS == B_ROWS, "tile copies not divisible among threads");
    extern __shared__ __align__(16) unsigned char tl_gemm_smem[];
    T* As = reinterpret_cast<T*>(tl_gemm_smem);
    T* Bs = As + STAGES * A_STAGE;

    const int tid = (int)threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int gq = lane >> 2, tq = lane & 3;
    const int wm = (warp / WARPS_N) * WTM, wn = (warp % WARPS_N) * WTN;
    i64 tile_m = blockIdx.y, tile_n = blockIdx.x;
    if (GROUP_M > 1) {                /* the launch order's pid walks GROUP_M rows of tiles */
        const i64 tiles_n = gridDim.x, tiles_m = gridDim.y;
        const i64 pid = (i64)blockIdx.y * tiles_n + blockIdx.x, per_group = (i64)GROUP_M * tiles_n;
        const i64 first_m = pid / per_group * GROUP_M, local = pid % per_group;
        const i64 rows = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
        tile_m = first_m + local % rows;
        tile_n = local / rows;
    }
    const i64 m0 = tile_m * BM, n0 = tile_n * BN;
    const float alpha = (float)g.alpha, beta = (float)g.beta;
    const int KT = (int)((g.K + BK - 1) / BK);
    /* C's elements in pairs (one 32-bit store for columns 2t, 2t+1) where its layout allows */
    const bool pairs = g.sc_n == 1 && g.N % 2 == 0 && g.sc_m % 2 == 0 && g.sc_b % 2 == 0
                       && ((unsigned long long)C & 3) == 0;
    /* this thread's copies: row r0 (+ j RS), column c0 of each tile, the same every stage */
    const int a_r0 = tid / A_CPR, a_c0 = (tid % A_CPR) * 8, b_r0 = tid / B_CPR, b_c0 = (tid % B_CPR) * 8;
    T* const a_dst = As + a_r0 * A_LD + a_c0;
    T* const b_dst = Bs + b_r0 * B_LD + b_c0;
    /* rows of A run along m (A_K) or k; of B along n (B_K) or k.  The fixed coordinate (the
     * column's) and the first row's, in the product's terms: */
    const i64 a_m = m0 + (A_K ? a_r0 : a_c0), a_k = A_K ? a_c0 : a_r0;
    const i64 b_n = n0 + (B_K ? b_r0 : b_c0), b_k = B_K ? b_c0 : b_r0;
    const i64 a_row_step = (i64)A_RS * (A_K ? g.sa_m : g.sa_k), b_row_step = (i64)B_RS * (B_K ? g.sb_n : g.sb_k);

    for (i64 b = blockIdx.z; b < g.batch; b += gridDim.z) {
        /* the first copy's source at k0 = 0 (clamped in range: never read when not valid) */
        const T* a_src = A + b * g.sa_b + (a_m < g.M ? a_m : 0) * g.sa_m + a_k * g.sa_k;
        const T* b_src = B + b * g.sb_b + (b_n < g.N ? b_n : 0) * g.sb_n + b_k * g.sb_k;
        auto load_stage = [&](int stage, i64 k0) {
            const T* pa = a_src + k0 * g.sa_k;
            const T* pb = b_src + k0 * g.sb_k;
#pragma unroll
            for (int j = 0; j < A_COPIES; j++) {
                const bool ok = A_K ? (a_m + j * A_RS < g.M && k0 + a_k < g.K)
                                    : (a_m < g.M && k0 + a_k + j * A_RS < g.K);
                tl::cp_async16(a_dst + stage * A_STAGE + j * A_RS * A_LD, ok ? pa + j * a_row_step : A, ok);
            }
#pragma unroll
            for (int j = 0; j < B_COPIES; j++) {
                const bool ok = B_K ? (b_n + j * B_RS < g.N && k0 + b_k < g.K)
                                    : (b_n < g.N && k0 + b_k + j * B_RS < g.K);
                tl::cp_async16(b_dst + stage * B_STAGE + j * B_RS * B_LD, ok ? pb + j * b_row_step : B, ok);
            }
        };

        float acc[MI][NI][4];
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {
            if (s < KT) load_stage(s, (i64)s * BK);
            tl::cp_async_commit();
        }
        for (int kt = 0; kt < KT; kt++) {
            tl::cp_async_wait<STAGES - 2>();        /* tile kt has landed (this thread's part) */
            __syncthreads();                        /* ... everyone's; and tile kt - 1 is done */
            const int next = kt + STAGES - 1;       /* refill the buffer tile kt - 1 used */
            if (next < KT) load_stage(next % STAGES, (i64)next * BK);
            tl::cp_async_commit();
            const T* as = As + (kt % STAGES) * A_STAGE;
            const T* bs = Bs + (kt % STAGES) * B_STAGE;
#pragma unroll
            for (int kk = 0; kk < BK; kk += 16) {
                u32 af[MI][4];
#pragma unroll
                for (int mi = 0; mi < MI; mi++) {
                    const int mrow = wm + mi * 16;
                    if (A_K)      /* [m][k]: matrices (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), ... */
                        tl::ldmatrix_x4<false>(af[mi], as + (mrow + lane % 16) * A_LD + kk + (lane / 16) * 8);
                    else          /* [k][m], transposed: the same four matrices */
                        tl::ldmatrix_x4<true>(af[mi], as + (kk + lane % 8 + (lane / 16) * 8) * A_LD
                                                          + mrow + ((lane / 8) % 2) * 8);
                }
                /* B two n-tiles at a time, each pair's products issued while the next loads */
#pragma unroll
                for (int ni = 0; ni < NI; ni += 2) {
                    const int ncol = wn + ni * 8;
                    u32 r[4];
                    if (B_K)      /* [n][k]: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), ... */
                        tl::ldmatrix_x4<false>(r, bs + (ncol + lane % 8 + (lane / 16) * 8) * B_LD
                                                      + kk + ((lane / 8) % 2) * 8);
                    else          /* [k][n], transposed: the same four matrices */
                        tl::ldmatrix_x4<true>(r, bs + (kk + lane % 8 + ((lane / 8) % 2) * 8) * B_LD
                                                     + ncol + (lane / 16) * 8);
#pragma unroll
                    for (int mi = 0; mi < MI; mi++) {
                        tl::mma_16816(acc[mi][ni], af[mi], r[0], r[1], T());
                        tl::mma_16816(acc[mi][ni + 1], af[mi], r[2], r[3], T());
                    }
                }
            }
        }
        tl::cp_async_wait<0>();
        __syncthreads();                            /* the buffers are free for the next batch */

        T* Cb = C + b * g.sc_b;
        const T* Db = D + b * g.sd_b;
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int ni = 0; ni < NI; ni++)
#pragma unroll
                for (int h = 0; h < 2; h++) {       /* rows g and g + 8 */
                    const i64 gm = m0 + wm + mi * 16 + gq + h * 8;
                    const i64 gn = n0 + wn + ni * 8 + 2 * tq;
                    if (gm >= g.M || gn >= g.N) continue;
                    T* c = Cb + gm * g.sc_m + gn * g.sc_n;
                    const T* d = Db + gm * g.sd_m + gn * g.sd_n;
                    const bool two = gn + 1 < g.N;
                    float v0 = alpha * acc[mi][ni][2 * h], v1 = alpha * acc[mi][ni][2 * h + 1];
                    if (beta != 0.0f) {
                        v0 += beta * tl::load(d[0]);
                        if (two) v1 += beta * tl::load(d[g.sd_n]);
                    }
                    if (pairs) {                    /* gn is even and N too: gn + 1 < N */
                        *reinterpret_cast<u32*>(c) = tl::bits_of(tl::cvt<T>::from(v0))
                                                     | (tl::bits_of(tl::cvt<T>::from(v1)) << 16);
                    } else {
                        c[0] = tl::cvt<T>::from(v0);
                        if (two) c[g.sc_n] = tl::cvt<T>::from(v1);
                    }
                }
    }
}
#endif
