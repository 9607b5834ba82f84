/* Max pooling forward, one thread per output element: the CPU's rule (torchlite/_core/
 * pool.pyx, _max_row): the window's elements inside the input in row-major order, the first
 * maximum kept, a NaN winning over any number (so the last NaN of a window wins), and the
 * index in the H*W plane of the element chosen (the first element inside the input when the
 * window holds only the type's lowest value).  x contiguous [B, H, W]; y and idx [B, OH, OW].
 *
 * Name expressions: tl_max_pool2d<float>, tl_max_pool2d<tl::i64>. */
#include "tl_common.cuh"

using tl::i64;

namespace tl {
struct PoolArgs {
    i64 B, H, W, OH, OW;
    i64 kh, kw, sh, sw, ph, pw, dh, dw;
};
static_assert(sizeof(PoolArgs) == 104, "PoolArgs layout (torchlite/cuda/_pool.py)");
}  // namespace tl

template <class T>
__global__ void tl_max_pool2d(const T* __restrict__ x, T* __restrict__ y, i64* __restrict__ idx,
                              tl::PoolArgs a) {
    typedef typename tl::compute<T>::type C;
    const i64 n = a.B * a.OH * a.OW;
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads()) {
        const i64 ow = i % a.OW, oh = (i / a.OW) % a.OH, b = i / (a.OH * a.OW);
        const i64 ih0 = oh * a.sh - a.ph, iw0 = ow * a.sw - a.pw;
        i64 ihf = ih0, iwf = iw0;
        while (ihf < 0) ihf += a.dh;
        while (iwf < 0) iwf += a.dw;
        const T* plane = x + b * a.H * a.W;
        C m = (C)tl::limits<C>::lowest();
        i64 best = ihf * a.W + iwf;
        for (i64 ki = 0; ki < a.kh; ki++) {
            const i64 ih = ih0 + ki * a.dh;
            if (ih < 0 || ih >= a.H) continue;
            for (i64 kj = 0; kj < a.kw; kj++) {
                const i64 iw = iw0 + kj * a.dw;
                if (iw < 0 || iw >= a.W) continue;
                const C v = tl::load(plane[ih * a.W + iw]);
                if (v > m || v != v) {
                    m = v;
                    best = ih * a.W + iw;
                }
            }
        }
        y[i] = tl::cvt<T>::from(m);
        idx[i] = best;
    }
}
