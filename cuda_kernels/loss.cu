/* The negative log-likelihood loss, fused: the CPU's nll kernels (torchlite/_core/loss.pyx)
 * with one thread per element.
 *
 * lp: log-probabilities [N, C, S] by element strides; target: [N, S] (int64 or uint8) by
 * strides; weight: [C] by stride, or null (weight 1).  A target equal to `ignore` counts
 * with weight 0; any other target outside [0, C) sets ERR_INDEX in *err and counts as 0 (the
 * host then raises the CPU's error).
 *
 * tl_nll_forward: loss[i] = -w[t] * lp[n, t, s] and wsum[i] = w[t] in float64, i = n * S + s
 *   (the host sums them, as the CPU accumulates in float64).
 * tl_nll_backward: dx [N, C, S] contiguous, with f = w[t] * scale * grad[n, s] (grad 0-d:
 *   g_step 0): dx = f * exp(lp) rounded to T, then f subtracted at c == t and rounded again
 *   (softmax: the gradient of cross-entropy with respect to the logits), or -f at c == t and
 *   0 elsewhere (with respect to lp); rows of ignored targets are 0.  Both roundings are the
 *   CPU's.
 *
 * tl_nll_reduce: the whole forward of reduction 'sum' or 'mean' in one block, for the common
 *   small case (a training batch): the losses and weights summed in float64 (each thread its
 *   strided share, then a tree in shared memory: a fixed order, so the same result every run),
 *   out[0] = the sum (divided by the total weight for 'mean') rounded to T, and *res = {total
 *   weight, range flags}, which the host reads back in one copy.
 *
 * Name expressions: tl_nll_forward<float, tl::i64>, tl_nll_backward<double, tl::u8>,
 * tl_nll_reduce<float, tl::i64>. */
#include "tl_common.cuh"
#include "tl_ops.cuh"

using tl::i64;

namespace tl {
struct NllGeometry {
    i64 N, C, S;
    i64 lp_n, lp_c, lp_s;      /* element strides of lp */
    i64 t_n, t_s;              /* of the targets */
    i64 w_s;                   /* of the weights */
    i64 ignore;
};
static_assert(sizeof(NllGeometry) == 80, "NllGeometry layout (torchlite/cuda/_loss.py)");

/* the target of (n, s), or -1 for an ignored one and -2 (flagged) for one out of range */
template <class TT> TL_DEV i64 nll_target(const TT* target, const NllGeometry& g, i64 n, i64 s,
                                          int* err) {
    const i64 t = (i64)target[n * g.t_n + s * g.t_s];
    if (t == g.ignore) return -1;
    if (t < 0 || t >= g.C) {
        atomicOr(err, ERR_INDEX);
        return -2;
    }
    return t;
}
}  // namespace tl

template <class T, class TT>
__global__ void tl_nll_forward(const T* __restrict__ lp, const TT* __restrict__ target,
                               const T* __restrict__ weight, double* __restrict__ loss,
                               double* __restrict__ wsum, tl::NllGeometry g, int* err) {
    for (i64 i = tl::global_thread(); i < g.N * g.S; i += tl::global_threads()) {
        const i64 n = i / g.S, s = i - n * g.S;
        const i64 t = tl::nll_target(target, g, n, s, err);
        if (t < 0) {
            loss[i] = 0.0;
            wsum[i] = 0.0;
            continue;
        }
        const double w = weight ? (double)weight[t * g.w_s] : 1.0;
        loss[i] = -w * (double)lp[n * g.lp_n + t * g.lp_c + s * g.lp_s];
        wsum[i] = w;
    }
}

template <class T, class TT>
__global__ void tl_nll_backward(const T* __restrict__ lp, const TT* __restrict__ target,
                                const T* __restrict__ weight, const T* __restrict__ grad,
                                i64 g_step, T* __restrict__ dx, tl::NllGeometry g, double scale,
                                int softmax, int* err) {
    const i64 CS = g.C * g.S;
    for (i64 i = tl::global_thread(); i < g.N * CS; i += tl::global_threads()) {
        const i64 n = i / CS, r = i - n * CS, c = r / g.S, s = r - c * g.S;
        const i64 t = tl::nll_target(target, g, n, s, err);
        if (t < 0) {
            dx[i] = T(0);
            continue;
        }
        const double w = weight ? (double)weight[t * g.w_s] : 1.0;
        const double f = w * scale * (double)grad[(n * g.S + s) * g_step];
        T d = T(0);
        if (softmax) d = (T)(f * (double)tl::m_exp(lp[n * g.lp_n + c * g.lp_c + s * g.lp_s]));
        if (c == t) d = (T)((double)d - f);
        dx[i] = d;
    }
}

namespace tl {
struct NllResult {          /* what tl_nll_reduce hands back to the host (16 bytes) */
    double total;
    int err, pad_;
};
}  // namespace tl

template <class T, class TT>
__global__ void __launch_bounds__(256)
tl_nll_reduce(const T* __restrict__ lp, const TT* __restrict__ target, const T* __restrict__ weight,
              T* __restrict__ out, tl::NllResult* __restrict__ res, tl::NllGeometry g, int mean) {
    __shared__ double ls[256], ws[256];
    __shared__ int err;
    const int tid = (int)threadIdx.x;
    if (tid == 0) err = 0;
    __syncthreads();
    double l = 0.0, w = 0.0;
    for (i64 i = tid; i < g.N * g.S; i += 256) {
        const i64 n = i / g.S, s = i - n * g.S;
        const i64 t = tl::nll_target(target, g, n, s, &err);
        if (t < 0) continue;
        const double wt = weight ? (double)weight[t * g.w_s] : 1.0;
        l += -wt * (double)lp[n * g.lp_n + t * g.lp_c + s * g.lp_s];
        w += wt;
    }
    ls[tid] = l;
    ws[tid] = w;
    __syncthreads();
    for (int half = 128; half > 0; half /= 2) {
        if (tid < half) {
            ls[tid] += ls[tid + half];
            ws[tid] += ws[tid + half];
        }
        __syncthreads();
    }
    if (tid == 0) {
        const double total = ws[0];
        out[0] = tl::cvt<T>::from(mean ? ls[0] / total : ls[0]);   /* 0 / 0: NaN, as the CPU */
        res->total = total;
        res->err = err;
        res->pad_ = 0;
    }
}
