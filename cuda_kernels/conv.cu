/* im2col: a convolution's windows copied out, zero-padded, in one pass (one thread per column
 * element): cols[n, c, kh, kw, oh, ow] (contiguous) = x[n, c, oh sh - ph + kh dh,
 * ow sw - pw + kw dw] (x by strides), 0 where that falls in the padding.
 *
 * col2im: the adjoint of taking a convolution's windows, as a gather (one thread per output
 * element, no atomics, deterministic): out[n, c, h, w] = the sum of cols[n, c, kh, kw, oh, ow]
 * over the window positions (kh, kw) that cover (h, w), in the order kh, then kw (the order
 * of the CPU's and of a loop of strided adds).  cols and out are contiguous.
 *
 * Name expressions: tl_im2col<float>, tl_col2im<double>. */
#include "tl_common.cuh"

using tl::i64;

namespace tl {
struct Col2imArgs {
    i64 NC, H, W;              /* images times channels, output rows and columns */
    i64 KH, KW, OH, OW;        /* window and column-grid sizes */
    i64 sh, sw, ph, pw, dh, dw;  /* stride, padding, dilation */
};
static_assert(sizeof(Col2imArgs) == 104, "Col2imArgs layout (torchlite/cuda/_conv.py)");
struct Im2colArgs {
    i64 N, C, H, W;            /* the input's sizes */
    i64 KH, KW, OH, OW;        /* window and column-grid sizes */
    i64 sh, sw, ph, pw, dh, dw;  /* stride, padding, dilation */
    i64 xn, xc, xh, xw;        /* the input's element strides */
};
static_assert(sizeof(Im2colArgs) == 144, "Im2colArgs layout (torchlite/cuda/_conv.py)");
}  // namespace tl

template <class T>
__global__ void tl_im2col(const T* __restrict__ x, T* __restrict__ cols, tl::Im2colArgs a) {
    const i64 n = a.N * a.C * a.KH * a.KW * a.OH * a.OW;
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads()) {
        i64 r = i;
        const i64 ow = r % a.OW; r /= a.OW;
        const i64 oh = r % a.OH; r /= a.OH;
        const i64 kw = r % a.KW; r /= a.KW;
        const i64 kh = r % a.KH; r /= a.KH;
        const i64 c = r % a.C, img = r / a.C;
        const i64 h = oh * a.sh - a.ph + kh * a.dh, w = ow * a.sw - a.pw + kw * a.dw;
        cols[i] = (h >= 0 && h < a.H && w >= 0 && w < a.W)
                  ? x[img * a.xn + c * a.xc + h * a.xh + w * a.xw] : T(0);
    }
}

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
