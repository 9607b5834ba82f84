# Fused kernels of one LSTM time step (float32 / float64, contiguous rows).
#
# The layer (torchlite/nn/modules/rnn.py, _LSTMLayer) computes each step's gate
# pre-activations with one matrix product; these kernels do everything elementwise around it
# in one pass, where the Tensor-op version made about a dozen small ops per step (each a
# call, a dispatch and an allocation: at batch 32 and hidden 256 that overhead was a quarter
# of the layer's time).  The nonlinearities are those of the elementwise family
# (kernels/vmath.h's tl_sigmoidf / tl_tanhf for float32, libm for float64), so the results
# equal the Tensor-op version's.  The loops are compiled once per SIMD level (kernels/isa.h).
#
# Forward, with a = the step's (B, 4H) pre-activations in PyTorch's gate order i, f, g, o:
#     i, f, o = sigmoid(a_i, a_f, a_o);  g = tanh(a_g)       (written back into a)
#     c = f * c_prev + i * g;  h = o * tanh(c)
# Backward, from the activated gates a, c_prev, c and the incoming dh, dc (dc updated in
# place to the gradient for c_prev):
#     tc = tanh(c);  dc += dh * o * (1 - tc^2)
#     da_i = dc g i (1 - i);  da_f = dc c_prev f (1 - f);  da_g = dc i (1 - g^2);
#     da_o = dh tc o (1 - o);  dc <- dc f
from libc.stdint cimport int64_t
from torchlite._core.array cimport Array, TL_FLOAT32, TL_FLOAT64
from torchlite._core import isa_switch

cdef extern from *:
    """
    #include <math.h>
    #include <stdint.h>
    #include "isa.h"
    #include "vmath.h"

    static inline double tl_rnn_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

    /* The loops of one SIMD level: each a plain loop over restrict pointers, which the
     * compiler vectorises (the float32 nonlinearities are vmath.h's branch-free ones). */
    #define TL_RNN_FUNCS(T, SIG, TANH, SFX)                                                     \
    static void tl_lstm_fwd_##SFX(T *restrict a, const T *restrict cp, T *restrict c,         \
                                  T *restrict h, int64_t nb, int64_t nh) {                    \
        for (int64_t b = 0; b < nb; b++) {                                                     \
            T *restrict ab = a + b * 4 * nh;                                                   \
            for (int64_t j = 0; j < 2 * nh; j++) ab[j] = SIG(ab[j]);                           \
            for (int64_t j = 2 * nh; j < 3 * nh; j++) ab[j] = TANH(ab[j]);                     \
            for (int64_t j = 3 * nh; j < 4 * nh; j++) ab[j] = SIG(ab[j]);                      \
            const T *restrict i = ab, *restrict f = ab + nh, *restrict g = ab + 2 * nh,       \
                *restrict o = ab + 3 * nh, *restrict cpb = cp + b * nh;                        \
            T *restrict cb = c + b * nh, *restrict hb = h + b * nh;                            \
            for (int64_t j = 0; j < nh; j++) cb[j] = f[j] * cpb[j] + i[j] * g[j];              \
            for (int64_t j = 0; j < nh; j++) hb[j] = o[j] * TANH(cb[j]);                       \
        }                                                                                      \
    }                                                                                          \
    static void tl_lstm_bwd_##SFX(const T *restrict a, const T *restrict cp,                  \
                                  const T *restrict c, const T *restrict dh, T *restrict dc,  \
                                  T *restrict dg, int64_t nb, int64_t nh) {                   \
        for (int64_t b = 0; b < nb; b++) {                                                     \
            const T *restrict i = a + b * 4 * nh, *restrict f = i + nh, *restrict g = i + 2 * nh, \
                *restrict o = i + 3 * nh, *restrict cpb = cp + b * nh, *restrict cb = c + b * nh, \
                *restrict dhb = dh + b * nh;                                                   \
            T *restrict dcb = dc + b * nh, *restrict di = dg + b * 4 * nh, *restrict df = di + nh, \
                *restrict dgg = di + 2 * nh, *restrict dout = di + 3 * nh;                     \
            for (int64_t j = 0; j < nh; j++) {                                                 \
                T tc = TANH(cb[j]);                                                            \
                T d = dcb[j] + dhb[j] * o[j] * ((T)1 - tc * tc);                               \
                di[j] = d * g[j] * (i[j] * ((T)1 - i[j]));                                     \
                df[j] = d * cpb[j] * (f[j] * ((T)1 - f[j]));                                   \
                dgg[j] = d * i[j] * ((T)1 - g[j] * g[j]);                                      \
                dout[j] = dhb[j] * tc * (o[j] * ((T)1 - o[j]));                                \
                dcb[j] = d * f[j];                                                             \
            }                                                                                  \
        }                                                                                      \
    }
    #define TL_RNN_LEVEL(LV) TL_RNN_FUNCS(float, tl_sigmoidf, tl_tanhf, f32_##LV)             \
                             TL_RNN_FUNCS(double, tl_rnn_sigmoid, tanh, f64_##LV)
    TL_RNN_LEVEL(base)
    #if TL_X86_MULTIVERSION
    TL_BEGIN_TARGET_V3
    TL_RNN_LEVEL(v3)
    TL_END_TARGET
    TL_BEGIN_TARGET_V4
    TL_RNN_LEVEL(v4)
    TL_END_TARGET
    #endif

    typedef void (*tl_lstm_fwd_f32_t)(float *, const float *, float *, float *, int64_t, int64_t);
    typedef void (*tl_lstm_fwd_f64_t)(double *, const double *, double *, double *, int64_t, int64_t);
    typedef void (*tl_lstm_bwd_f32_t)(const float *, const float *, const float *, const float *,
                                      float *, float *, int64_t, int64_t);
    typedef void (*tl_lstm_bwd_f64_t)(const double *, const double *, const double *,
                                      const double *, double *, double *, int64_t, int64_t);
    static tl_lstm_fwd_f32_t tl_lstm_fwd_f32;
    static tl_lstm_fwd_f64_t tl_lstm_fwd_f64;
    static tl_lstm_bwd_f32_t tl_lstm_bwd_f32;
    static tl_lstm_bwd_f64_t tl_lstm_bwd_f64;
    #define TL_RNN_SET(LV) tl_lstm_fwd_f32 = tl_lstm_fwd_f32_##LV;                           \
        tl_lstm_fwd_f64 = tl_lstm_fwd_f64_##LV; tl_lstm_bwd_f32 = tl_lstm_bwd_f32_##LV;        \
        tl_lstm_bwd_f64 = tl_lstm_bwd_f64_##LV;
    static int tl_rnn_install(int level) {
    #if TL_X86_MULTIVERSION
        if (level >= 4) { TL_RNN_SET(v4) return 4; }
        if (level >= 3) { TL_RNN_SET(v3) return 3; }
    #endif
        TL_RNN_SET(base) return 0;
    }
    """
    void tl_lstm_fwd_f32(float*, const float*, float*, float*, int64_t, int64_t) nogil
    void tl_lstm_fwd_f64(double*, const double*, double*, double*, int64_t, int64_t) nogil
    void tl_lstm_bwd_f32(const float*, const float*, const float*, const float*, float*,
                         float*, int64_t, int64_t) nogil
    void tl_lstm_bwd_f64(const double*, const double*, const double*, const double*, double*,
                         double*, int64_t, int64_t) nogil
    int tl_rnn_install(int level)


def _install(int level):
    """Install the loops of ISA `level` (one the CPU supports); returns it."""
    return tl_rnn_install(level)


set_isa_level, isa_level = isa_switch(_install)


cdef int _check(str op, Array gates, list others) except -1:
    if gates.nd != 2 or gates.shp[1] % 4 or not gates.contiguous():
        raise RuntimeError(f"{op}: gates must be a contiguous (B, 4H) array")
    if gates.dtype != TL_FLOAT32 and gates.dtype != TL_FLOAT64:
        raise RuntimeError(f"{op}: float32 or float64 only")
    cdef int64_t b = gates.shp[0], h = gates.shp[1] // 4
    cdef Array x
    for x in others:
        if x.dtype != gates.dtype or x.nd != 2 or x.shp[0] != b or x.shp[1] != h \
                or not x.contiguous():
            raise RuntimeError(f"{op}: every state must be a contiguous (B, H) array of the "
                               f"gates' dtype")
    return 0


def lstm_step_forward(Array gates, Array c_prev, Array c_out, Array h_out):
    """One step after its product: gates (B, 4H) activated in place, c_out and h_out
    written (see the top of this file)."""
    _check("lstm_step_forward", gates, [c_prev, c_out, h_out])
    cdef int64_t nb = gates.shp[0], nh = gates.shp[1] // 4
    with nogil:
        if gates.dtype == TL_FLOAT32:
            tl_lstm_fwd_f32(<float*>gates.ptr(), <const float*>c_prev.ptr(), <float*>c_out.ptr(),
                            <float*>h_out.ptr(), nb, nh)
        else:
            tl_lstm_fwd_f64(<double*>gates.ptr(), <const double*>c_prev.ptr(),
                            <double*>c_out.ptr(), <double*>h_out.ptr(), nb, nh)


def lstm_step_backward(Array gates, Array c_prev, Array c, Array dh, Array dc,
                       Array d_gates):
    """One step back: d_gates (B, 4H) written from the activated gates, c_prev, c and the
    incoming dh; dc (B, H) in, the gradient for c_prev out (see the top of this file)."""
    _check("lstm_step_backward", gates, [c_prev, c, dh, dc])
    if d_gates.dtype != gates.dtype or d_gates.nd != 2 or d_gates.shp[0] != gates.shp[0] \
            or d_gates.shp[1] != gates.shp[1] or not d_gates.contiguous():
        raise RuntimeError("lstm_step_backward: d_gates must be shaped like the gates")
    cdef int64_t nb = gates.shp[0], nh = gates.shp[1] // 4
    with nogil:
        if gates.dtype == TL_FLOAT32:
            tl_lstm_bwd_f32(<const float*>gates.ptr(), <const float*>c_prev.ptr(),
                            <const float*>c.ptr(), <const float*>dh.ptr(), <float*>dc.ptr(),
                            <float*>d_gates.ptr(), nb, nh)
        else:
            tl_lstm_bwd_f64(<const double*>gates.ptr(), <const double*>c_prev.ptr(),
                            <const double*>c.ptr(), <const double*>dh.ptr(), <double*>dc.ptr(),
                            <double*>d_gates.ptr(), nb, nh)
