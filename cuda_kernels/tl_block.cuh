/* Block-level combining for the reduction-shaped kernels (reduction.cu, softmax.cu): a thread
 * block reduces several independent sequences ("outputs") at once, in one of two layouts:
 *   x_is_reduce: threadIdx.x walks a sequence, the blockDim.y rows of threads are outputs;
 *   otherwise:   threadIdx.x picks the output (coalesced across outputs), threadIdx.y walks.
 * blockDim.x and blockDim.y are powers of two and blockDim.x * blockDim.y is a multiple of 32
 * (at most 1024): the warp shuffles below name every lane of a warp.  The combine order
 * depends only on the launch shape, so results are deterministic. */
#ifndef TL_BLOCK_CUH
#define TL_BLOCK_CUH
#include "tl_common.cuh"

namespace tl {
/* __shfl_down_sync for any trivially copyable accumulator, one 32-bit word at a time. */
template <class A> TL_DEV A shfl_down(A v, u32 delta, int width) {
    const int words = (int)((sizeof(A) + 3) / 4);
    u32 w[(sizeof(A) + 3) / 4];
    memcpy(w, &v, sizeof(A));
    for (int k = 0; k < words; k++) w[k] = __shfl_down_sync(0xffffffffu, w[k], delta, width);
    memcpy(&v, w, sizeof(A));
    return v;
}

/* Combine the accumulators of the threads that share an output; the result is in the
 * thread whose position along the reduction is 0.  Every thread of the block calls this. */
template <class Op, class A> TL_DEV A block_combine(const Op& op, A v, A* buf, bool x_is_reduce) {
    const u32 tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
    if (x_is_reduce) {
        const int width = bx < 32 ? (int)bx : 32;
        for (u32 d = (u32)width / 2; d > 0; d >>= 1) v = op.combine(v, shfl_down(v, d, width));
        if (bx > 32) {                       /* warp results of each row, combined in order */
            const u32 nw = bx / 32;
            if (tx % 32 == 0) buf[ty * nw + tx / 32] = v;
            __syncthreads();
            if (tx == 0)
                for (u32 w = 1; w < nw; w++) v = op.combine(v, buf[ty * nw + w]);
        }
    } else {
        buf[ty * bx + tx] = v;
        __syncthreads();
        for (u32 s = by / 2; s > 0; s >>= 1) {
            if (ty < s) buf[ty * bx + tx] = op.combine(buf[ty * bx + tx], buf[(ty + s) * bx + tx]);
            __syncthreads();
        }
        v = buf[tx];
    }
    __syncthreads();                         /* buf may be reused */
    return v;
}

/* block_combine, then the result handed to every thread that shares the output. */
template <class Op, class A> TL_DEV A block_allcombine(const Op& op, A v, A* buf, bool x_is_reduce) {
    v = block_combine(op, v, buf, x_is_reduce);
    const u32 slot = x_is_reduce ? threadIdx.y : threadIdx.x;
    const u32 lane = x_is_reduce ? threadIdx.x : threadIdx.y;
    if (lane == 0) buf[slot] = v;
    __syncthreads();
    v = buf[slot];
    __syncthreads();
    return v;
}

}  // namespace tl
#endif
