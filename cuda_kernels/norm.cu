/* Batch norm's per-channel coefficients, one thread per channel: the CPU's formulas
 * (torchlite/_core/norm.pyx, batch_norm_forward / batch_norm_backward) in float64, each
 * coefficient rounded once to the tensor's type T.  The passes over the tensor itself are
 * elementwise kernels (addcmul) in torchlite/cuda/_norm.py.
 *
 * tl_bn_forward_coefs: invstd = 1 / sqrt(var + eps); scale = invstd * w (w: 1 when null);
 *   shift = b - mean * scale (b: 0 when null).
 * tl_bn_backward_coefs: dw = sum(g (x - mean)) * invstd, db = sum(g) (when not null);
 *   a = invstd * w; with the batch's statistics (batch_stats, n > 0)
 *   kb = -a * invstd^2 * sum(g (x - mean)) / n and kc = -a * sum(g) / n, else 0;
 *   km = mean: dx = g * a + (x - km) * kb + kc.
 *
 * Name expressions: tl_bn_forward_coefs<float>, tl_bn_backward_coefs<double>. */
#include "tl_common.cuh"

using tl::i64;

template <class T>
__global__ void tl_bn_forward_coefs(const double* __restrict__ mean, const double* __restrict__ var,
                                    const T* __restrict__ w, const T* __restrict__ b, double eps,
                                    i64 C, double* __restrict__ invstd, T* __restrict__ scale,
                                    T* __restrict__ shift) {
    for (i64 c = tl::global_thread(); c < C; c += tl::global_threads()) {
        const double r = 1.0 / sqrt(var[c] + eps);
        const double s = w ? r * (double)w[c] : r;
        invstd[c] = r;
        scale[c] = (T)s;
        shift[c] = (T)((b ? (double)b[c] : 0.0) - mean[c] * s);
    }
}

template <class T>
__global__ void tl_bn_backward_coefs(const double* __restrict__ sum_g, const double* __restrict__ sum_gxc,
                                     const double* __restrict__ mean, const double* __restrict__ invstd,
                                     const T* __restrict__ w, double n, int batch_stats, i64 C,
                                     T* __restrict__ ka, T* __restrict__ km, T* __restrict__ kb,
                                     T* __restrict__ kc, T* __restrict__ dw, T* __restrict__ db) {
    for (i64 c = tl::global_thread(); c < C; c += tl::global_threads()) {
        if (dw) dw[c] = (T)(sum_gxc[c] * invstd[c]);
        if (db) db[c] = (T)sum_g[c];
        const double a = w ? invstd[c] * (double)w[c] : invstd[c];
        const bool with_stats = batch_stats && n > 0;
        ka[c] = (T)a;
        km[c] = (T)mean[c];
        kb[c] = (T)(with_stats ? -a * invstd[c] * invstd[c] * sum_gxc[c] / n : 0.0);
        kc[c] = (T)(with_stats ? -a * sum_g[c] / n : 0.0);
    }
}
