/* Reductions over any set of dims: sum, nansum, prod, mean, max/min with their indices
 * (max, amax, argmax, max(dim)), var/std (Welford, with var_mean's mean), any, all.
 *
 * The host describes a reduction as num_outputs outputs, each reducing reduce_size elements:
 *   out_ix  (Indexer<3>) maps an output number to the offsets of (its first input element,
 *           its out0 element, its out1 element);
 *   red_ix  (Indexer<1>) maps a reduced-element number r to its input offset relative to
 *           that first element (r also is the index argmax reports).
 * One kernel serves both layouts, chosen by ReduceArgs::x_is_reduce:
 *   1 ("rows": the reduced elements are contiguous) - threadIdx.x walks the reduction and
 *     the blockDim.y rows of a block are blockDim.y outputs; combined by warp shuffles, then
 *     across warps through shared memory;
 *   0 ("columns": consecutive outputs are contiguous) - threadIdx.x picks the output, so
 *     loads coalesce across outputs, and threadIdx.y walks the reduction; combined by a
 *     shared-memory tree over y.
 * blockDim.x and blockDim.y are powers of two, at most 1024 threads in all.  gridDim.y > 1
 * splits each reduction into chunks of ReduceArgs::chunk elements: every block writes its
 * partial to ws[output * gridDim.y + blockIdx.y] and the last block of a column of blocks
 * (counted in sem[blockIdx.x], which it resets to 0) combines the partials in order.
 * Each thread accumulates its elements sequentially, in a fixed order, and every combine
 * order is fixed by the launch shape, so results are deterministic.  Accumulators: float64
 * for floating inputs, int64 for integers and bool (sum and prod wrap as on the CPU).
 *
 * Name expressions: tl_reduce<tl::red::Sum<float> >, tl_reduce<tl::red::Max<tl::i32> >,
 * tl_reduce<tl::red::VarStd<__half> >, tl_reduce<tl::red::Any<bool> >. */
#include "tl_common.cuh"
#include "tl_block.cuh"
#include "tl_reduce.cuh"


template <class Op>
__global__ void __launch_bounds__(1024)
tl_reduce(const typename Op::In* __restrict__ in, void* out0, void* out1, tl::Indexer<3> out_ix,
          tl::Indexer<1> red_ix, tl::ReduceArgs a, tl::Params p) {
    typedef typename Op::Acc Acc;
    using tl::i64;
    using tl::u32;
    const Op op;
    __shared__ Acc buf[1024];
    __shared__ int is_last;
    const bool xr = a.x_is_reduce != 0;
    const i64 out = xr ? (i64)blockIdx.x * blockDim.y + threadIdx.y : (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const u32 lane = xr ? threadIdx.x : threadIdx.y, lanes = xr ? blockDim.x : blockDim.y;
    const bool valid = out < a.num_outputs;
    i64 base = 0, o0 = 0, o1 = 0;
    if (valid) {
        if (out_ix.ndim == 0) {
            base = out * out_ix.step[0]; o0 = out * out_ix.step[1]; o1 = out * out_ix.step[2];
        } else {
            const tl::Offsets<3> o = tl::offsets(out_ix, (u32)out);
            base = o.o[0]; o0 = o.o[1]; o1 = o.o[2];
        }
    }
    const i64 r0 = (i64)blockIdx.y * a.chunk;
    const i64 r1 = r0 + a.chunk < a.reduce_size ? r0 + a.chunk : a.reduce_size;
    Acc v = op.identity();
    if (valid) {
        if (red_ix.ndim == 0) {
            const i64 st = red_ix.step[0];
            for (i64 r = r0 + lane; r < r1; r += lanes) v = op.step(v, in[base + r * st], r);
        } else {
            for (i64 r = r0 + lane; r < r1; r += lanes)
                v = op.step(v, in[base + tl::offsets(red_ix, (u32)r).o[0]], r);
        }
    }
    /* Phase 0 combines the block's threads; with a split reduction (gridDim.y > 1) the
     * block publishes its partial, and the last block of its column runs phase 1 over the
     * partials, in order (one combine routine for both phases keeps the kernel small). */
    Acc* ws = (Acc*)a.ws;
    for (int phase = 0;; phase++) {
        v = tl::block_combine(op, v, buf, xr);
        if (gridDim.y == 1 || phase == 1) break;
        if (valid && lane == 0) ws[out * gridDim.y + blockIdx.y] = v;
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0 && threadIdx.y == 0)
            is_last = atomicAdd(&a.sem[blockIdx.x], 1u) == gridDim.y - 1;
        __syncthreads();
        if (!is_last) return;
        __threadfence();
        v = op.identity();
        if (valid)
            for (u32 s = lane; s < gridDim.y; s += lanes) v = op.combine(v, ws[out * gridDim.y + s]);
    }
    if (valid && lane == 0) op.store(v, a.reduce_size, p, out0, o0, out1, o1);
    if (gridDim.y > 1 && threadIdx.x == 0 && threadIdx.y == 0) a.sem[blockIdx.x] = 0;
}
