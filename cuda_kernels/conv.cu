/* col2im: the adjoint of taking a convolution's windows, as a gather (one thread per output
 * element, no atomics, deterministic): out[n, c, h, w] = the sum of cols[n, c, kh, kw, oh, ow]
 * over the window positions (kh, kw) that cover (h, w), in the order kh, then kw (the order
 * of the CPU's and of a loop of strided adds).  cols and out are contiguous.
 *
 * Name expressions: tl_col2im<float>, tl_col2im<double>. */
#include "tl_common.cuh"

using tl::i64;

namespace tl {
struct Col2imArgs {
    i64 NC, H, W;              /* images times channels, output rows and columns */
    i64 KH, KW, OH, OW;        /* window and column-grid sizes */
    i64 sh, sw, ph, pw, dh, dw;  /* stride, padding, dilation */
};
static_assert(sizeof(Col2imArgs) == 104, "Col2imArgs layout (torchlite/cuda/_conv.py)");
}  // namespace tl

template <class T>
__global__ void tl_col2im(const T* __restrict__ cols, T* __restrict__ out, tl::Col2imArgs a) {
    const i64 n = a.NC * a.H * a.W;
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads()) {
        const i64 w = i % a.W, h = (i / a.W) % a.H, nc = i / (a.H * a.W);
        const T* base = cols + nc * a.KH * a.KW * a.OH * a.OW;
        T acc = T(0);
        for (i64 kh = 0; kh < a.KH; kh++) {
            const i64 hp = h + a.ph - kh * a.dh;
            if (hp < 0 || hp % a.sh != 0 || hp / a.sh >= a.OH) continue;
            const i64 oh = hp / a.sh;
            for (i64 kw = 0; kw < a.KW; kw++) {
                const i64 wp = w + a.pw - kw * a.dw;
                if (wp < 0 || wp % a.sw != 0 || wp / a.sw >= a.OW) continue;
                acc += base[((kh * a.KW + kw) * a.OH + oh) * a.OW + wp / a.sw];
            }
        }
        out[i] = acc;
    }
}
