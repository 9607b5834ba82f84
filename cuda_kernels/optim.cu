/* Fused optimizer updates over contiguous parameters, one pass per tensor, with the
 * formulas of torchlite/optim (sgd.py, adam.py; PyTorch's).  float16/bfloat16 parameters
 * and states compute in float32.
 *
 * SGD, with g the gradient (negated if maximize):
 *     g <- g + weight_decay * p
 *     b <- g on the first step, else momentum * b + (1 - dampening) * g   (momentum != 0)
 *     g <- g + momentum * b (nesterov), or b
 *     p <- p - lr * g
 * Adam / AdamW:
 *     p <- p * (1 - lr * weight_decay) (decoupled), else g <- g + weight_decay * p
 *     m <- lerp(m, g, 1 - beta1);  v <- beta2 * v + (1 - beta2) * g * g
 *     v_max <- max(v_max, v) (amsgrad; it replaces v below)
 *     p <- p - step_size * m / (sqrt(v) / bias_correction2_sqrt + eps)
 * with step_size = lr / (1 - beta1^t) and bias_correction2_sqrt = sqrt(1 - beta2^t) from
 * the host.
 *
 * tl_sgd_multi updates up to TL_MULTI_MAX parameters in one launch (a training step's
 * parameters: one launch instead of one each): blockIdx.y picks the parameter, blockIdx.x
 * strides over its elements, each with its own first-step flag.
 *
 * Name expressions: tl_sgd<float>, tl_adam<__nv_bfloat16>, tl_sgd_multi<float>. */
#include "tl_common.cuh"
#include "tl_optim.cuh"

using tl::i64;

/* momentum_buf may be null when momentum == 0 */
template <class T>
__global__ void tl_sgd(T* __restrict__ param, const T* __restrict__ grad, T* __restrict__ momentum_buf,
                       i64 n, tl::SgdArgs a) {
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads())
        tl::sgd_update(param, grad, momentum_buf, i, a);
}

namespace tl {
constexpr int TL_MULTI_MAX = 48;
/* the parameters of one launch: addresses (momentum buffers 0 when momentum == 0), sizes,
 * first-step flags; 48 * 36 bytes, within the 4 KB of a launch's arguments */
struct SgdTensors {
    u64 param[TL_MULTI_MAX], grad[TL_MULTI_MAX], buf[TL_MULTI_MAX];
    i64 n[TL_MULTI_MAX];
    i32 first_step[TL_MULTI_MAX];
};
}  // namespace tl

template <class T>
__global__ void tl_sgd_multi(tl::SgdTensors t, tl::SgdArgs a) {
    const int j = (int)blockIdx.y;
    T* param = reinterpret_cast<T*>(t.param[j]);
    const T* grad = reinterpret_cast<const T*>(t.grad[j]);
    T* buf = reinterpret_cast<T*>(t.buf[j]);
    a.first_step = t.first_step[j];
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < t.n[j]; i += (i64)gridDim.x * blockDim.x)
        tl::sgd_update(param, grad, buf, i, a);
}

/* max_exp_avg_sq may be null unless amsgrad */
template <class T>
__global__ void tl_adam(T* __restrict__ param, const T* __restrict__ grad, T* __restrict__ exp_avg,
                        T* __restrict__ exp_avg_sq, T* __restrict__ max_exp_avg_sq, i64 n, tl::AdamArgs a) {
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads())
        tl::adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, i, a);
}
