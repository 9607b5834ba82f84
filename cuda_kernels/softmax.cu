/* softmax / log_softmax over one dim, forward and backward.
 *
 * The input is contiguous, seen as [outer, R, inner]: the softmax runs along R for each of
 * the outer * inner columns (element r of column (o, i) sits at (o * R + r) * inner + i).
 * x_is_reduce = 1 (use it when inner == 1): threadIdx.x walks a row, blockDim.y rows per
 * block; 0: threadIdx.x picks the column (coalesced over i), threadIdx.y walks R.  The block
 * rules of tl_block.cuh apply.  Computed in float32 for float16/bfloat16/float32 and float64
 * for float64: the max first (NaN propagates), then the sum of exp(x - max), then the output.
 *
 * Name expressions: tl_softmax<float>, tl_softmax_backward<__half>; log_mode selects
 * log_softmax at run time. */
#include "tl_common.cuh"
#include "tl_block.cuh"
#include "tl_ops.cuh"

namespace tl {
namespace sm {
template <class C> struct MaxNan {     /* max that keeps a NaN from either side */
    TL_HD C combine(C a, C b) const { return (b != b || b > a) ? b : a; }
};
template <class C> struct Plus {
    TL_HD C combine(C a, C b) const { return a + b; }
};

/* Where a thread's column starts, and its place among the threads sharing the column. */
struct Column {
    i64 base;
    u32 lane, lanes;
    bool valid;
};
TL_DEV Column column(i64 outer, i64 R, i64 inner, bool x_is_reduce) {
    Column c;
    const i64 col = x_is_reduce ? (i64)blockIdx.x * blockDim.y + threadIdx.y
                                : (i64)blockIdx.x * blockDim.x + threadIdx.x;
    c.lane = x_is_reduce ? threadIdx.x : threadIdx.y;
    c.lanes = x_is_reduce ? blockDim.x : blockDim.y;
    c.valid = col < outer * inner;
    c.base = c.valid ? (col / inner) * R * inner + col % inner : 0;
    return c;
}
}  // namespace sm
}  // namespace tl

template <class T>
__global__ void __launch_bounds__(1024)
tl_softmax(const T* __restrict__ x, T* __restrict__ y, tl::i64 outer, tl::i64 R, tl::i64 inner,
           int x_is_reduce, int log_mode) {
    typedef typename tl::compute<T>::type C;
    using tl::i64;
    __shared__ C buf[1024];
    const bool xr = x_is_reduce != 0;
    const tl::sm::Column c = tl::sm::column(outer, R, inner, xr);
    const T* xs = x + c.base;
    T* ys = y + c.base;
    C m = tl::limits<C>::lowest();
    if (c.valid)
        for (i64 r = c.lane; r < R; r += c.lanes) m = tl::sm::MaxNan<C>().combine(m, tl::load(xs[r * inner]));
    m = tl::block_allcombine(tl::sm::MaxNan<C>(), m, buf, xr);
    C s = 0;
    if (c.valid)
        for (i64 r = c.lane; r < R; r += c.lanes) s += tl::m_exp(tl::load(xs[r * inner]) - m);
    s = tl::block_allcombine(tl::sm::Plus<C>(), s, buf, xr);
    if (!c.valid) return;
    const C log_s = tl::m_log(s);
    for (i64 r = c.lane; r < R; r += c.lanes) {
        const C v = tl::load(xs[r * inner]) - m;
        ys[r * inner] = tl::cvt<T>::from(log_mode ? v - log_s : tl::m_exp(v) / s);
    }
}

/* gx from the forward output y and its gradient gy:
 *   softmax:     gx = y * (gy - sum(gy * y));   log_softmax: gx = gy - exp(y) * sum(gy). */
template <class T>
__global__ void __launch_bounds__(1024)
tl_softmax_backward(const T* __restrict__ y, const T* __restrict__ gy, T* __restrict__ gx,
                    tl::i64 outer, tl::i64 R, tl::i64 inner, int x_is_reduce, int log_mode) {
    typedef typename tl::compute<T>::type C;
    using tl::i64;
    __shared__ C buf[1024];
    const bool xr = x_is_reduce != 0;
    const tl::sm::Column c = tl::sm::column(outer, R, inner, xr);
    const T* ys = y + c.base;
    const T* gys = gy + c.base;
    T* gxs = gx + c.base;
    C s = 0;
    if (c.valid)
        for (i64 r = c.lane; r < R; r += c.lanes) {
            const C g = tl::load(gys[r * inner]);
            s += log_mode ? g : g * tl::load(ys[r * inner]);
        }
    s = tl::block_allcombine(tl::sm::Plus<C>(), s, buf, xr);
    if (!c.valid) return;
    for (i64 r = c.lane; r < R; r += c.lanes) {
        const C g = tl::load(gys[r * inner]), v = tl::load(ys[r * inner]);
        gxs[r * inner] = tl::cvt<T>::from(log_mode ? g - tl::m_exp(v) * s : v * (g - s));
    }
}
