/* Per-element updates of the fused optimizers (optim.cu), host-and-device so that tests
 * run them against torchlite.optim on the CPU.  Formulas: see optim.cu. */
#ifndef TL_OPTIM_CUH
#define TL_OPTIM_CUH
#include "tl_common.cuh"
#include "tl_ops.cuh"

namespace tl {
struct SgdArgs {
    double lr, weight_decay, momentum, dampening;
    i32 nesterov, maximize, first_step, pad_;
};
struct AdamArgs {
    double beta1, beta2, lr, weight_decay, eps, step_size, bias_correction2_sqrt;
    i32 amsgrad, maximize, decoupled, pad_;
};
/* the host packs these (torchlite/cuda/_optim.py) */
static_assert(sizeof(SgdArgs) == 48, "SgdArgs layout");
static_assert(sizeof(AdamArgs) == 72, "AdamArgs layout");

/* one SGD step of element i; buf may be null when momentum == 0 */
template <class T> TL_HD void sgd_update(T* param, const T* grad, T* buf, i64 i, const SgdArgs& a) {
    typedef typename compute<T>::type C;
    const C lr = (C)a.lr, wd = (C)a.weight_decay, mom = (C)a.momentum, keep = (C)(1.0 - a.dampening);
    const C p = load(param[i]);
    C g = load(grad[i]);
    if (a.maximize) g = -g;
    if (a.weight_decay != 0) g = g + wd * p;
    if (a.momentum != 0) {
        const C b = a.first_step ? g : mom * load(buf[i]) + keep * g;
        buf[i] = cvt<T>::from(b);
        g = a.nesterov ? g + mom * b : b;
    }
    param[i] = cvt<T>::from(p - lr * g);
}

/* one Adam step of element i; vmax may be null unless amsgrad */
template <class T> TL_HD void adam_update(T* param, const T* grad, T* m_, T* v_, T* vmax, i64 i,
                                          const AdamArgs& a) {
    typedef typename compute<T>::type C;
    const C b1 = (C)a.beta1, b2 = (C)a.beta2, eps = (C)a.eps, wd = (C)a.weight_decay;
    const C w = (C)(1.0 - a.beta1), step_size = (C)a.step_size, bc2 = (C)a.bias_correction2_sqrt;
    C p = load(param[i]);
    C g = load(grad[i]);
    if (a.maximize) g = -g;
    if (a.weight_decay != 0) {
        if (a.decoupled) p = p * (C)(1.0 - a.lr * a.weight_decay);   /* the factor in float64 */
        else g = g + wd * p;
    }
    const C m = op::Lerp()(load(m_[i]), g, w, Params());             /* lerp(m, g, 1 - beta1) */
    C v = load(v_[i]) * b2 + (C)(1.0 - a.beta2) * g * g;
    m_[i] = cvt<T>::from(m);
    v_[i] = cvt<T>::from(v);
    if (a.amsgrad) {
        const C vm = load(vmax[i]);
        v = vm != vm ? vm : (vm > v ? vm : v);                          /* maximum: NaN propagates */
        vmax[i] = cvt<T>::from(v);
    }
    param[i] = cvt<T>::from(p + (-step_size) * m / (m_sqrt(v) / bc2 + eps));
}
}  // namespace tl
#endif
