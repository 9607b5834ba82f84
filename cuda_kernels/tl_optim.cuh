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

/* The switches of an update, as the update reads them.  SgdSwitches / AdamSwitches read
 * the args at run time: the CUDA kernels use them (every thread takes the same branch).
 * The CPU loops (torchlite/_core/optim.pyx) pass SgdFixed / AdamFixed, whose answers are
 * compile-time constants, so that each loop has no branch left and the compiler vectorises
 * it; the host picks the constants from the args. */
struct SgdSwitches {
    TL_HD static bool maximize(const SgdArgs& a) { return a.maximize; }
    TL_HD static bool decay(const SgdArgs& a) { return a.weight_decay != 0; }
    TL_HD static bool momentum(const SgdArgs& a) { return a.momentum != 0; }
    TL_HD static bool nesterov(const SgdArgs& a) { return a.nesterov; }
    TL_HD static bool first_step(const SgdArgs& a) { return a.first_step; }
};
template <bool Maximize, bool Decay, bool Momentum, bool Nesterov, bool FirstStep>
struct SgdFixed {
    TL_HD static bool maximize(const SgdArgs&) { return Maximize; }
    TL_HD static bool decay(const SgdArgs&) { return Decay; }
    TL_HD static bool momentum(const SgdArgs&) { return Momentum; }
    TL_HD static bool nesterov(const SgdArgs&) { return Nesterov; }
    TL_HD static bool first_step(const SgdArgs&) { return FirstStep; }
};
struct AdamSwitches {
    TL_HD static bool maximize(const AdamArgs& a) { return a.maximize; }
    TL_HD static bool decay(const AdamArgs& a) { return a.weight_decay != 0; }
    TL_HD static bool decoupled(const AdamArgs& a) { return a.decoupled; }
    TL_HD static bool amsgrad(const AdamArgs& a) { return a.amsgrad; }
};
template <bool Maximize, bool Decay, bool Decoupled, bool Amsgrad> struct AdamFixed {
    TL_HD static bool maximize(const AdamArgs&) { return Maximize; }
    TL_HD static bool decay(const AdamArgs&) { return Decay; }
    TL_HD static bool decoupled(const AdamArgs&) { return Decoupled; }
    TL_HD static bool amsgrad(const AdamArgs&) { return Amsgrad; }
};

/* one SGD step of element i; buf may be null when momentum == 0 */
template <class T, class S = SgdSwitches>
TL_HD void sgd_update(T* param, const T* grad, T* buf, i64 i, const SgdArgs& a) {
    typedef typename compute<T>::type C;
    const C lr = (C)a.lr, wd = (C)a.weight_decay, mom = (C)a.momentum, keep = (C)(1.0 - a.dampening);
    const C p = load(param[i]);
    C g = load(grad[i]);
    if (S::maximize(a)) g = -g;
    if (S::decay(a)) g = g + wd * p;
    if (S::momentum(a)) {
        const C b = S::first_step(a) ? g : mom * load(buf[i]) + keep * g;
        buf[i] = cvt<T>::from(b);
        g = S::nesterov(a) ? g + mom * b : b;
    }
    param[i] = cvt<T>::from(p - lr * g);
}

/* one Adam step of element i; vmax may be null unless amsgrad */
template <class T, class S = AdamSwitches>
TL_HD void adam_update(T* param, const T* grad, T* m_, T* v_, T* vmax, i64 i, const AdamArgs& a) {
    typedef typename compute<T>::type C;
    const C b2 = (C)a.beta2, eps = (C)a.eps, wd = (C)a.weight_decay;
    const C w = (C)(1.0 - a.beta1), step_size = (C)a.step_size, bc2 = (C)a.bias_correction2_sqrt;
    C p = load(param[i]);
    C g = load(grad[i]);
    if (S::maximize(a)) g = -g;
    if (S::decay(a)) {
        if (S::decoupled(a)) p = p * (C)(1.0 - a.lr * a.weight_decay);   /* the factor in float64 */
        else g = g + wd * p;
    }
    const C m = op::Lerp()(load(m_[i]), g, w, Params());             /* lerp(m, g, 1 - beta1) */
    C v = load(v_[i]) * b2 + (C)(1.0 - a.beta2) * g * g;
    m_[i] = cvt<T>::from(m);
    v_[i] = cvt<T>::from(v);
    if (S::amsgrad(a)) {
        const C vm = load(vmax[i]);
        v = vm != vm ? vm : (vm > v ? vm : v);                          /* maximum: NaN propagates */
        vmax[i] = cvt<T>::from(v);
    }
    param[i] = cvt<T>::from(p + (-step_size) * m / (m_sqrt(v) / bc2 + eps));
}
}  // namespace tl
#endif
