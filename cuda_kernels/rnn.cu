/* One LSTM time step around its matrix product: the CUDA twins of torchlite/_core/rnn.pyx's
 * lstm_step_forward / lstm_step_backward, whose header gives the formulas (PyTorch's gate
 * order i, f, g, o; the forward writes the activated gates back over the pre-activations,
 * which the backward reads).  One thread per (row b, unit j) of the (B, H) state; every
 * operand contiguous.  The nonlinearities are the elementwise family's functors
 * (tl_ops.cuh), so a step computes what the Tensor ops would.
 *
 * Name expressions: tl_lstm_fwd<float>, tl_lstm_bwd<double>. */
#include "tl_common.cuh"
#include "tl_ops.cuh"

using tl::i64;

template <class T>
__global__ void tl_lstm_fwd(T* __restrict__ a, const T* __restrict__ c_prev, T* __restrict__ c,
                            T* __restrict__ h, i64 nb, i64 nh) {
    const tl::Params p = {};
    const tl::op::Sigmoid sig;
    const tl::op::Tanh tanh_;
    for (i64 e = tl::global_thread(); e < nb * nh; e += tl::global_threads()) {
        const i64 b = e / nh, j = e % nh;
        T* ab = a + b * 4 * nh;
        const T i = sig(ab[j], p), f = sig(ab[nh + j], p), g = tanh_(ab[2 * nh + j], p),
                o = sig(ab[3 * nh + j], p);
        ab[j] = i;
        ab[nh + j] = f;
        ab[2 * nh + j] = g;
        ab[3 * nh + j] = o;
        const T ce = f * c_prev[e] + i * g;
        c[e] = ce;
        h[e] = o * tanh_(ce, p);
    }
}

/* dc holds the incoming gradient of c and leaves holding the gradient of c_prev */
template <class T>
__global__ void tl_lstm_bwd(const T* __restrict__ a, const T* __restrict__ c_prev,
                            const T* __restrict__ c, const T* __restrict__ dh, T* __restrict__ dc,
                            T* __restrict__ d_gates, i64 nb, i64 nh) {
    const tl::Params p = {};
    const tl::op::Tanh tanh_;
    for (i64 e = tl::global_thread(); e < nb * nh; e += tl::global_threads()) {
        const i64 b = e / nh, j = e % nh;
        const T* ab = a + b * 4 * nh;
        T* db = d_gates + b * 4 * nh;
        const T i = ab[j], f = ab[nh + j], g = ab[2 * nh + j], o = ab[3 * nh + j];
        const T tc = tanh_(c[e], p);
        const T d = dc[e] + dh[e] * o * (T(1) - tc * tc);
        db[j] = d * g * (i * (T(1) - i));
        db[nh + j] = d * c_prev[e] * (f * (T(1) - f));
        db[2 * nh + j] = d * i * (T(1) - g * g);
        db[3 * nh + j] = dh[e] * tc * (o * (T(1) - o));
        dc[e] = d * f;
    }
}
