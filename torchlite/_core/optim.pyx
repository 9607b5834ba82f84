# distutils: language = c++
# Fused optimizer steps on the CPU: one pass over a parameter updates it and its state in
# place (SGD with momentum, Adam/AdamW with AMSGrad), instead of the chain of elementwise
# ops (each a pass over memory) that the Tensor-op update runs.
#
# The per-element math is not written here: it is cuda_kernels/tl_optim.cuh, the header the
# CUDA kernels (cuda_kernels/optim.cu) include, compiled here as plain C++.  So one formula
# serves both devices, and the formulas are those of torchlite/optim/sgd.py and adam.py
# (PyTorch's), which run when the arrays do not qualify.
#
# Qualifying arrays: float32 or float64, contiguous, all of the parameter's dtype and shape.
# Anything else returns False without touching memory, and the caller takes the Tensor ops.
# Elements are independent: large parameters split into chunks that run in parallel, and the
# result does not depend on the thread count.  The loops are compiled once per SIMD level
# (kernels/isa.h) and chosen at import, as the other kernel modules' are.
from cython.parallel cimport prange
from libc.stdint cimport int64_t
from torchlite._core.array cimport Array, TL_FLOAT32, TL_FLOAT64
from torchlite._core.parallel cimport num_chunks
from torchlite._core import isa_switch

cdef extern from "tl_optim.cuh" namespace "tl" nogil:
    cdef struct SgdArgs:
        double lr, weight_decay, momentum, dampening
        int nesterov, maximize, first_step, pad_
    cdef struct AdamArgs:
        double beta1, beta2, lr, weight_decay, eps, step_size, bias_correction2_sqrt
        int amsgrad, maximize, decoupled, pad_

cdef extern from *:
    """
    #include <utility>
    #include "isa.h"
    #include "tl_optim.cuh"

    /* Body::run<B0, B1, ...>(args...) with the run-time switches flags[0..N) turned into
     * template arguments: one branch-free loop per combination (tl_optim.cuh's *Fixed), which
     * the compiler vectorises; with the switches read in the loop it vectorises none. */
    template <int N, class Body, bool... Bs> struct tl_with_switches {
        template <class... Args> static void call(const bool* flags, Args&&... args) {
            if constexpr (sizeof...(Bs) == N) {
                Body::template run<Bs...>(std::forward<Args>(args)...);
            } else if (flags[sizeof...(Bs)]) {
                tl_with_switches<N, Body, Bs..., true>::call(flags, std::forward<Args>(args)...);
            } else {
                tl_with_switches<N, Body, Bs..., false>::call(flags, std::forward<Args>(args)...);
            }
        }
    };

    /* The loops of one SIMD level (isa.h): elements [lo, hi) of one step.  The per-element
     * functions of tl_optim.cuh are inlined into them and compiled for the level. */
    #define TL_OPTIM_LEVEL(LV)                                                                  \
    namespace tl_optim_##LV {                                                                   \
    template <class T> struct sgd_loop {                                                        \
        template <bool... Bs> static void run(T* p, const T* g, T* b, int64_t lo, int64_t hi,   \
                                              const tl::SgdArgs& a) {                           \
            for (int64_t i = lo; i < hi; ++i)                                                   \
                tl::sgd_update<T, tl::SgdFixed<Bs...>>(p, g, b, (tl::i64)i, a);                \
        }                                                                                       \
    };                                                                                          \
    template <class T> struct adam_loop {                                                       \
        template <bool... Bs> static void run(T* p, const T* g, T* m, T* v, T* vmax,            \
                                              int64_t lo, int64_t hi, const tl::AdamArgs& a) {  \
            for (int64_t i = lo; i < hi; ++i)                                                   \
                tl::adam_update<T, tl::AdamFixed<Bs...>>(p, g, m, v, vmax, (tl::i64)i, a);     \
        }                                                                                       \
    };                                                                                          \
    template <class T> void sgd(T* p, const T* g, T* b, int64_t lo, int64_t hi,                \
                                const tl::SgdArgs* a) {                                         \
        typedef tl::SgdSwitches S;                                                              \
        const bool flags[5] = {S::maximize(*a), S::decay(*a), S::momentum(*a),                  \
                               S::nesterov(*a), S::first_step(*a)};                             \
        tl_with_switches<5, sgd_loop<T>>::call(flags, p, g, b, lo, hi, *a);                     \
    }                                                                                           \
    template <class T> void adam(T* p, const T* g, T* m, T* v, T* vmax, int64_t lo,             \
                                 int64_t hi, const tl::AdamArgs* a) {                           \
        typedef tl::AdamSwitches S;                                                             \
        const bool flags[4] = {S::maximize(*a), S::decay(*a), S::decoupled(*a),                 \
                               S::amsgrad(*a)};                                                 \
        tl_with_switches<4, adam_loop<T>>::call(flags, p, g, m, v, vmax, lo, hi, *a);           \
    }                                                                                           \
    template void sgd<float>(float*, const float*, float*, int64_t, int64_t,                    \
                             const tl::SgdArgs*);                                               \
    template void sgd<double>(double*, const double*, double*, int64_t, int64_t,                \
                              const tl::SgdArgs*);                                              \
    template void adam<float>(float*, const float*, float*, float*, float*, int64_t, int64_t,   \
                              const tl::AdamArgs*);                                             \
    template void adam<double>(double*, const double*, double*, double*, double*, int64_t,     \
                               int64_t, const tl::AdamArgs*);                                   \
    }
    TL_OPTIM_LEVEL(base)
    #if TL_X86_MULTIVERSION
    TL_BEGIN_TARGET_V3
    TL_OPTIM_LEVEL(v3)
    TL_END_TARGET
    TL_BEGIN_TARGET_V4
    TL_OPTIM_LEVEL(v4)
    TL_END_TARGET
    #endif

    /* The installed level's loops, per element type. */
    template <class T> struct tl_optim_table {
        static void (*sgd)(T*, const T*, T*, int64_t, int64_t, const tl::SgdArgs*);
        static void (*adam)(T*, const T*, T*, T*, T*, int64_t, int64_t, const tl::AdamArgs*);
    };
    template <class T> void (*tl_optim_table<T>::sgd)(T*, const T*, T*, int64_t, int64_t,
                                                      const tl::SgdArgs*) = nullptr;
    template <class T> void (*tl_optim_table<T>::adam)(T*, const T*, T*, T*, T*, int64_t,
                                                       int64_t, const tl::AdamArgs*) = nullptr;
    #define TL_OPTIM_SET(LV)                                                                    \
        tl_optim_table<float>::sgd = tl_optim_##LV::sgd<float>;                                 \
        tl_optim_table<double>::sgd = tl_optim_##LV::sgd<double>;                               \
        tl_optim_table<float>::adam = tl_optim_##LV::adam<float>;                               \
        tl_optim_table<double>::adam = tl_optim_##LV::adam<double>;
    static int tl_optim_install(int level) {
    #if TL_X86_MULTIVERSION
        if (level >= 4) { TL_OPTIM_SET(v4) return 4; }
        if (level >= 3) { TL_OPTIM_SET(v3) return 3; }
    #endif
        TL_OPTIM_SET(base) return 0;
    }
    template <class T>
    static inline void tl_sgd_range(T* p, const T* g, T* b, int64_t lo, int64_t hi,
                                    const tl::SgdArgs* a) {
        tl_optim_table<T>::sgd(p, g, b, lo, hi, a);
    }
    template <class T>
    static inline void tl_adam_range(T* p, const T* g, T* m, T* v, T* vmax, int64_t lo,
                                     int64_t hi, const tl::AdamArgs* a) {
        tl_optim_table<T>::adam(p, g, m, v, vmax, lo, hi, a);
    }
    """
    void tl_sgd_range[T](T* p, const T* g, T* b, int64_t lo, int64_t hi, const SgdArgs* a) nogil
    void tl_adam_range[T](T* p, const T* g, T* m, T* v, T* vmax, int64_t lo, int64_t hi,
                          const AdamArgs* a) nogil
    int tl_optim_install(int level)


def _install(int level):
    """Install the loops of ISA `level` (one the CPU supports); returns it."""
    return tl_optim_install(level)


set_isa_level, isa_level = isa_switch(_install)

ctypedef fused real:
    float
    double

cdef int64_t GRAIN = 32768      # elements per thread below which a step stays serial


cdef bint _qualifies(Array param, tuple others):
    if param.dtype != TL_FLOAT32 and param.dtype != TL_FLOAT64:
        return False
    if not param.contiguous():
        return False
    cdef Array o
    for x in others:
        if x is None:
            continue
        if not isinstance(x, Array):
            return False
        o = <Array>x
        if o.dtype != param.dtype or o.shape != param.shape or not o.contiguous():
            return False
    return True


cdef inline char* _ptr(object a):
    if a is None:
        return NULL
    return (<Array>a).ptr()


cdef void _sgd(real* p, const real* g, real* b, int64_t n, const SgdArgs* a) noexcept nogil:
    cdef int chunks = num_chunks(n, GRAIN)
    cdef int64_t c, step = (n + chunks - 1) // chunks
    if chunks == 1:
        tl_sgd_range(p, g, b, 0, n, a)
        return
    for c in prange(chunks, schedule="static", num_threads=chunks):
        tl_sgd_range(p, g, b, c * step, min(n, (c + 1) * step), a)


cdef void _adam(real* p, const real* g, real* m, real* v, real* vmax, int64_t n,
                const AdamArgs* a) noexcept nogil:
    cdef int chunks = num_chunks(n, GRAIN)
    cdef int64_t c, step = (n + chunks - 1) // chunks
    if chunks == 1:
        tl_adam_range(p, g, m, v, vmax, 0, n, a)
        return
    for c in prange(chunks, schedule="static", num_threads=chunks):
        tl_adam_range(p, g, m, v, vmax, c * step, min(n, (c + 1) * step), a)


def sgd_step(Array param, Array grad, buf, *, double lr, double weight_decay, double momentum,
             double dampening, bint nesterov, bint maximize, bint first_step):
    """One SGD step: param (and buf, the momentum buffer; None when momentum is 0) updated in
    place from grad; on the first step buf is written, not read.  False, changing nothing,
    when the arrays do not qualify (see the top of this file)."""
    if not _qualifies(param, (grad, buf)) or (momentum != 0 and buf is None):
        return False
    cdef SgdArgs a
    a.lr, a.weight_decay, a.momentum, a.dampening = lr, weight_decay, momentum, dampening
    a.nesterov, a.maximize, a.first_step, a.pad_ = nesterov, maximize, first_step, 0
    cdef char* pp = param.ptr()
    cdef char* gp = grad.ptr()
    cdef char* bp = _ptr(buf) if momentum != 0 else NULL
    cdef int64_t n = param.n
    with nogil:
        if param.dtype == TL_FLOAT32:
            _sgd(<float*>pp, <const float*>gp, <float*>bp, n, &a)
        else:
            _sgd(<double*>pp, <const double*>gp, <double*>bp, n, &a)
    return True


def sgd_steps(list params, list grads, list bufs, list first_steps, *, double lr,
              double weight_decay, double momentum, double dampening, bint nesterov,
              bint maximize):
    """sgd_step of every parameter i (bufs[i] None when momentum is 0; first_steps[i] whether
    its buffer is new), or of none: False, changing nothing, unless all qualify.  The CUDA
    backend's version updates up to 48 parameters of a dtype in one launch."""
    cdef Py_ssize_t i, n = len(params)
    if len(grads) != n or len(bufs) != n or len(first_steps) != n:
        raise ValueError("sgd_steps: params, grads, bufs and first_steps differ in length")
    for i in range(n):
        if not isinstance(params[i], Array) or not _qualifies(params[i], (grads[i], bufs[i])) \
                or (momentum != 0 and bufs[i] is None):
            return False
    for i in range(n):
        sgd_step(params[i], grads[i], bufs[i], lr=lr, weight_decay=weight_decay,
                 momentum=momentum, dampening=dampening, nesterov=nesterov, maximize=maximize,
                 first_step=first_steps[i])
    return True


def adam_step(Array param, Array grad, Array exp_avg, Array exp_avg_sq, max_exp_avg_sq, *,
              double beta1, double beta2, double lr, double weight_decay, double eps,
              double step_size, double bias_correction2_sqrt, bint amsgrad, bint maximize,
              bint decoupled):
    """One Adam/AdamW step: param and the moments updated in place from grad (max_exp_avg_sq
    None unless amsgrad); step_size = lr / (1 - beta1^t), bias_correction2_sqrt =
    sqrt(1 - beta2^t).  False, changing nothing, when the arrays do not qualify."""
    if not _qualifies(param, (grad, exp_avg, exp_avg_sq, max_exp_avg_sq)) \
            or (amsgrad and max_exp_avg_sq is None):
        return False
    cdef AdamArgs a
    a.beta1, a.beta2, a.lr, a.weight_decay, a.eps = beta1, beta2, lr, weight_decay, eps
    a.step_size, a.bias_correction2_sqrt = step_size, bias_correction2_sqrt
    a.amsgrad, a.maximize, a.decoupled, a.pad_ = amsgrad, maximize, decoupled, 0
    cdef char* pp = param.ptr()
    cdef char* gp = grad.ptr()
    cdef char* mp = exp_avg.ptr()
    cdef char* vp = exp_avg_sq.ptr()
    cdef char* xp = _ptr(max_exp_avg_sq) if amsgrad else NULL
    cdef int64_t n = param.n
    with nogil:
        if param.dtype == TL_FLOAT32:
            _adam(<float*>pp, <const float*>gp, <float*>mp, <float*>vp, <float*>xp, n, &a)
        else:
            _adam(<double*>pp, <const double*>gp, <double*>mp, <double*>vp, <double*>xp, n, &a)
    return True
