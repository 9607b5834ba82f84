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
#
# The whole recurrence of a layer also runs here in one call (lstm_forward_steps,
# lstm_backward_steps): every step's product with W_hh (the project's GEMM, kernels/gemm.h,
# compiled into this module, with W_hh packed into its panels once per call) and the step
# kernel, with no Python between the steps -- at batch 32 the per-step Python and dispatch
# cost a fifth of the layer's time.
from libc.stdint cimport int64_t
from torchlite._core.array cimport Array, TL_FLOAT32, TL_FLOAT64, new_array
from torchlite._core.parallel cimport max_threads
from torchlite._core.gemm cimport (tl_gemm_problem, tl_gemm_problem_clear, tl_gemm_kernel, tl_gemm_f32, tl_gemm_f64,
                                   tl_gemm_one, tl_gemm_install, tl_gemm_oom,
                                   tl_gemm_packed_b_size, tl_gemm_pack_b)
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
    """Install the loops and this module's GEMM of ISA `level` (one the CPU supports);
    returns the level installed."""
    cdef int a = tl_rnn_install(level), b = tl_gemm_install(level)
    return a if a < b else b


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


# ---- the whole recurrence in one call -------------------------------------------------------
cdef int _check_seq(str op, Array a, int64_t T, int64_t B, int64_t W, int dt) except -1:
    if a.dtype != dt or a.nd != 3 or a.shp[0] != T or a.shp[1] != B or a.shp[2] != W \
            or not a.contiguous():
        raise RuntimeError(f"{op}: expected a contiguous ({T}, {B}, {W}) array of the gates' "
                           f"dtype, got {a.shape}")
    return 0


cdef int _check_state(str op, Array a, int64_t B, int64_t H, int dt) except -1:
    if a.dtype != dt or a.nd != 2 or a.shp[0] != B or a.shp[1] != H or not a.contiguous():
        raise RuntimeError(f"{op}: expected a contiguous ({B}, {H}) state of the gates' dtype")
    return 0


cdef Array _packed(Array w, int64_t* pb_n):
    """w (k x n) packed into this module's GEMM panels, or None when the allocator's block is
    not 64-byte aligned (the micro-kernels load panels aligned; the GEMM then packs w at
    each step itself)."""
    cdef int64_t size = tl_gemm_packed_b_size(w.dtype, w.shp[0], w.shp[1], pb_n)
    cdef Array buf = new_array(1, &size, w.dtype)
    if (<size_t>buf.ptr()) % 64:
        return None
    with nogil:
        tl_gemm_pack_b(w.dtype, buf.ptr(), w.ptr(), w.strd[0], w.strd[1], w.shp[0], w.shp[1])
    return buf


cdef inline void _product(const tl_gemm_kernel* kern, int64_t m, int64_t n, int64_t k,
                          const char* a, const char* b, int64_t rsb, int64_t csb,
                          const char* pb, int64_t pb_n, char* c, double beta,
                          int nthreads) noexcept nogil:
    """C (m x n, contiguous) = A (m x k, contiguous) B + beta C, B read from its panels."""
    cdef tl_gemm_problem p
    tl_gemm_problem_clear(&p)       # no packed B, no epilogue unless set below
    p.m = m; p.n = n; p.k = k
    p.a = a; p.rsa = k; p.csa = 1
    p.b = b; p.rsb = rsb; p.csb = csb
    p.c = c; p.rsc = n; p.csc = 1
    p.alpha = 1.0; p.beta = beta; p.ialpha = 0; p.ibeta = 0
    p.pb = pb; p.pb_n = pb_n
    tl_gemm_one(kern, &p, nthreads)


def lstm_forward_steps(Array acts, Array h0, Array c0, Array hs, Array cs, Array w_hh_t,
                       bint reverse):
    """Every step of one LSTM layer's direction: acts (T, B, 4H) holds x_t W_ih^T + b on
    entry; step by step (in time order, or reversed) acts[t] += h_prev W_hh^T (w_hh_t = W_hh^T,
    (H, 4H), any strides) and the step kernel activates it and writes cs[t], hs[t]
    (T, B, H); h0, c0 (B, H) start the recurrence.  All contiguous, one float dtype."""
    cdef str op = "lstm_forward_steps"
    cdef int dt = acts.dtype
    if dt != TL_FLOAT32 and dt != TL_FLOAT64:
        raise RuntimeError(f"{op}: float32 or float64 only")
    if acts.nd != 3 or acts.shp[2] % 4:
        raise RuntimeError(f"{op}: acts must be (T, B, 4H)")
    cdef int64_t T = acts.shp[0], B = acts.shp[1], H = acts.shp[2] // 4
    _check_seq(op, hs, T, B, H, dt)
    _check_seq(op, cs, T, B, H, dt)
    _check_state(op, h0, B, H, dt)
    _check_state(op, c0, B, H, dt)
    if w_hh_t.dtype != dt or w_hh_t.nd != 2 or w_hh_t.shp[0] != H or w_hh_t.shp[1] != 4 * H:
        raise RuntimeError(f"{op}: W_hh^T must be ({H}, {4 * H})")
    if T == 0 or B == 0:
        return
    cdef int isz = 4 if dt == TL_FLOAT32 else 8
    cdef const tl_gemm_kernel* kern = tl_gemm_f32 if dt == TL_FLOAT32 else tl_gemm_f64
    cdef int64_t pb_n = 0, s, t, prev = -1
    cdef int nt = max_threads()
    cdef char* pb = NULL
    cdef Array panels = _packed(w_hh_t, &pb_n) if H > 0 else None
    if panels is not None:
        pb = panels.ptr()
    cdef char* A = acts.ptr()
    cdef char* HS = hs.ptr()
    cdef char* CS = cs.ptr()
    cdef const char* hp
    cdef const char* cp
    global tl_gemm_oom
    tl_gemm_oom = 0
    with nogil:
        for s in range(T):
            t = T - 1 - s if reverse else s
            hp = h0.ptr() if prev < 0 else HS + prev * B * H * isz
            cp = c0.ptr() if prev < 0 else CS + prev * B * H * isz
            if H > 0:
                _product(kern, B, 4 * H, H, hp, w_hh_t.ptr(), w_hh_t.strd[0], w_hh_t.strd[1],
                         pb, pb_n, A + t * B * 4 * H * isz, 1.0, nt)
            if dt == TL_FLOAT32:
                tl_lstm_fwd_f32(<float*>(A + t * B * 4 * H * isz), <const float*>cp,
                                <float*>(CS + t * B * H * isz), <float*>(HS + t * B * H * isz),
                                B, H)
            else:
                tl_lstm_fwd_f64(<double*>(A + t * B * 4 * H * isz), <const double*>cp,
                                <double*>(CS + t * B * H * isz),
                                <double*>(HS + t * B * H * isz), B, H)
            prev = t
    if tl_gemm_oom:
        raise MemoryError(f"{op}: out of memory for the GEMM's packing buffers")


def lstm_backward_steps(Array acts, Array c0, Array cs, Array d_out, Array dh, Array dc,
                        Array d_gates, Array w_hh, bint reverse):
    """The forward's steps backwards: from the activated gates acts (T, B, 4H), c0 and cs,
    the output gradient d_out (T, B, H) and the final states' gradients dh, dc (B, H; both
    updated in place to the gradients of h0 and c0), writes d_gates (T, B, 4H); the
    gradient reaching h_prev is d_gates[t] W_hh (w_hh (4H, H), any strides)."""
    cdef str op = "lstm_backward_steps"
    cdef int dt = acts.dtype
    if dt != TL_FLOAT32 and dt != TL_FLOAT64:
        raise RuntimeError(f"{op}: float32 or float64 only")
    if acts.nd != 3 or acts.shp[2] % 4 or not acts.contiguous():
        raise RuntimeError(f"{op}: acts must be a contiguous (T, B, 4H) array")
    cdef int64_t T = acts.shp[0], B = acts.shp[1], H = acts.shp[2] // 4
    _check_seq(op, cs, T, B, H, dt)
    _check_seq(op, d_out, T, B, H, dt)
    _check_seq(op, d_gates, T, B, 4 * H, dt)
    _check_state(op, c0, B, H, dt)
    _check_state(op, dh, B, H, dt)
    _check_state(op, dc, B, H, dt)
    if w_hh.dtype != dt or w_hh.nd != 2 or w_hh.shp[0] != 4 * H or w_hh.shp[1] != H:
        raise RuntimeError(f"{op}: W_hh must be ({4 * H}, {H})")
    if T == 0 or B == 0:
        return
    cdef int isz = 4 if dt == TL_FLOAT32 else 8
    cdef const tl_gemm_kernel* kern = tl_gemm_f32 if dt == TL_FLOAT32 else tl_gemm_f64
    cdef int64_t pb_n = 0, k, t, tp, j, n = B * H
    cdef int nt = max_threads()
    cdef char* pb = NULL
    cdef Array panels = _packed(w_hh, &pb_n) if H > 0 else None
    if panels is not None:
        pb = panels.ptr()
    cdef char* A = acts.ptr()
    cdef char* CS = cs.ptr()
    cdef char* DO = d_out.ptr()
    cdef char* DG = d_gates.ptr()
    cdef char* DH = dh.ptr()
    cdef const char* cp
    global tl_gemm_oom
    tl_gemm_oom = 0
    with nogil:
        for k in range(T - 1, -1, -1):          # the forward's steps, last first
            t = T - 1 - k if reverse else k
            tp = T - k if reverse else k - 1    # the step before t in the forward's order
            cp = c0.ptr() if k == 0 else CS + tp * B * H * isz
            if dt == TL_FLOAT32:
                for j in range(n):
                    (<float*>DH)[j] += (<const float*>(DO + t * n * isz))[j]
                tl_lstm_bwd_f32(<const float*>(A + t * B * 4 * H * isz), <const float*>cp,
                                <const float*>(CS + t * n * isz), <const float*>DH,
                                <float*>dc.ptr(), <float*>(DG + t * B * 4 * H * isz), B, H)
            else:
                for j in range(n):
                    (<double*>DH)[j] += (<const double*>(DO + t * n * isz))[j]
                tl_lstm_bwd_f64(<const double*>(A + t * B * 4 * H * isz), <const double*>cp,
                                <const double*>(CS + t * n * isz), <const double*>DH,
                                <double*>dc.ptr(), <double*>(DG + t * B * 4 * H * isz), B, H)
            if H > 0:
                _product(kern, B, H, 4 * H, DG + t * B * 4 * H * isz, w_hh.ptr(),
                         w_hh.strd[0], w_hh.strd[1], pb, pb_n, DH, 0.0, nt)
    if tl_gemm_oom:
        raise MemoryError(f"{op}: out of memory for the GEMM's packing buffers")
