# Kernels of the negative log-likelihood loss (nll_loss, and cross_entropy = log_softmax + nll).
#
# Layout: the log-probabilities `lp` are viewed as [N, C, S] (batch, classes, the flattened
# spatial dims; S = 1 for the usual [N, C] input), with any strides; the targets as [N, S]
# (int64 or uint8), the class weights as [C].  Every target is range-checked as it is read, before
# it is used as an index: the first bad one stops the loop and the caller raises PyTorch's
# "Target 10 is out of bounds." (an ignored target, == ignore_index, is never used as an index).
#
# Forward: the per-element losses -w[t] * lp[n, t, s] (reduction 'none'), or their sum and the
# sum of the weights w[t] of the non-ignored targets (the 'mean' divisor), accumulated in double
# in one serial pass, so the result does not depend on the thread count.
# Backward: the gradient of that loss with respect to lp, or, with `softmax`, with respect to the
# logits when lp = log_softmax(logits):  (softmax * w[t] - onehot(t) * w[t]) * grad / norm.
# Each row [n, :, s] is independent, so rows run in parallel.
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint8_t
from torchlite._core.array cimport Array, new_array, TL_UINT8, TL_INT64, TL_FLOAT32, TL_FLOAT64
from torchlite._core.elementwise cimport tl_loop, loop_of
from torchlite._core.parallel cimport num_chunks

cdef extern from "kernels/ewise_ops.h":
    enum:
        TL_U_EXP

ctypedef fused real:
    float
    double

cdef int64_t GRAIN = 16384      # gradient elements per thread below which the loop stays serial

REDUCTION_NONE = 0
REDUCTION_MEAN = 1
REDUCTION_SUM = 2


cdef struct Geo:
    int64_t N, C, S
    int64_t lpn, lpc, lps        # element strides of lp
    int64_t tn, ts               # element strides of the targets
    int64_t ws                   # element stride of the weights
    bint tbyte                   # uint8 targets (else int64)
    int64_t ignore


cdef int _geometry(Array lp, Array target, Array weight, int64_t ignore, Geo* g) except -1:
    if lp.nd != 3 or target.nd != 2:
        raise RuntimeError("nll kernels: expected lp [N, C, S] and target [N, S]")
    if lp.dtype != TL_FLOAT32 and lp.dtype != TL_FLOAT64:
        raise RuntimeError("nll kernels: lp must be float32 or float64")
    if target.dtype != TL_INT64 and target.dtype != TL_UINT8:
        raise RuntimeError("nll kernels: targets must be int64 or uint8")
    if target.shp[0] != lp.shp[0] or target.shp[1] != lp.shp[2]:
        raise RuntimeError("nll kernels: target shape does not match lp")
    if weight is not None and (weight.nd != 1 or weight.shp[0] != lp.shp[1]
                               or weight.dtype != lp.dtype):
        raise RuntimeError("nll kernels: weight must be [C] of lp's dtype")
    g.N, g.C, g.S = lp.shp[0], lp.shp[1], lp.shp[2]
    g.lpn, g.lpc, g.lps = lp.strd[0], lp.strd[1], lp.strd[2]
    g.tn, g.ts = target.strd[0], target.strd[1]
    g.ws = weight.strd[0] if weight is not None else 0
    g.tbyte = target.dtype == TL_UINT8
    g.ignore = ignore
    return 0


cdef inline int64_t _target(const Geo* g, const char* tp, int64_t n, int64_t s) noexcept nogil:
    cdef int64_t k = n * g.tn + s * g.ts
    if g.tbyte:
        return (<const uint8_t*>tp)[k]
    return (<const int64_t*>tp)[k]


cdef inline bint _bad(const Geo* g, int64_t t) noexcept nogil:
    return t != g.ignore and (t < 0 or t >= g.C)


cdef int64_t _forward(const Geo* g, const real* lp, const char* tp, const real* w, real* out,
                      double* acc) noexcept nogil:
    """Losses into out (when not NULL) and acc = [sum of losses, sum of weights].  Returns the
    flat position of the first bad target, or -1."""
    cdef int64_t n, s, t
    cdef double wt, loss, total = 0.0, wsum = 0.0
    for n in range(g.N):
        for s in range(g.S):
            t = _target(g, tp, n, s)
            if t == g.ignore:
                loss = 0.0
                wt = 0.0
            elif t < 0 or t >= g.C:
                return n * g.S + s
            else:
                wt = 1.0 if w == NULL else w[t * g.ws]
                loss = -wt * lp[n * g.lpn + t * g.lpc + s * g.lps]
            if out != NULL:
                out[n * g.S + s] = <real>loss
            total += loss
            wsum += wt
    acc[0] = total
    acc[1] = wsum
    return -1


cdef void _backward_row(const Geo* g, const real* lp, const char* tp, const real* w,
                        const real* gout, int64_t gstride, double scale, bint softmax,
                        real* dx, int64_t row, tl_loop exp_loop) noexcept nogil:
    """Gradient of row `row` (= n * S + s): dx[n, :, s] (dx is contiguous [N, C, S]).  The
    softmax exp(lp) of the row is the elementwise exp kernel's (vectorised at the CPU's ISA
    level; libm's scalar expf made this the slowest part of a cross-entropy backward)."""
    cdef int64_t n = row // g.S, s = row - (row // g.S) * g.S
    cdef int64_t c, t = _target(g, tp, n, s)
    cdef real* d = dx + n * g.C * g.S + s
    cdef const real* x = lp + n * g.lpn + s * g.lps
    cdef double wt
    cdef real f
    cdef char* ptrs[2]
    cdef int64_t strides[2]
    if t == g.ignore or t < 0 or t >= g.C:
        for c in range(g.C):
            d[c * g.S] = 0
        return
    wt = 1.0 if w == NULL else w[t * g.ws]
    f = <real>(wt * scale * gout[row * gstride])
    if softmax:
        ptrs[0], ptrs[1] = <char*>d, <char*>x
        strides[0], strides[1] = g.S * sizeof(real), g.lpc * sizeof(real)
        exp_loop(ptrs, strides, g.C, NULL)
        for c in range(g.C):
            d[c * g.S] = d[c * g.S] * f
    else:
        for c in range(g.C):
            d[c * g.S] = 0
    d[t * g.S] = d[t * g.S] - f


cdef void _backward(const Geo* g, const real* lp, const char* tp, const real* w,
                    const real* gout, int64_t gstride, double scale, bint softmax,
                    real* dx) noexcept nogil:
    cdef int64_t rows = g.N * g.S, r
    cdef int th = num_chunks(rows * g.C, GRAIN)
    cdef tl_loop exp_loop = loop_of(0, TL_U_EXP, TL_FLOAT32 if real is float else TL_FLOAT64)
    if th > 1:
        for r in prange(rows, num_threads=th, schedule="static"):
            _backward_row(g, lp, tp, w, gout, gstride, scale, softmax, dx, r, exp_loop)
    else:
        for r in range(rows):
            _backward_row(g, lp, tp, w, gout, gstride, scale, softmax, dx, r, exp_loop)


cdef object _bounds_error(Array target, int64_t pos, int64_t S, Geo* g):
    cdef int64_t n = pos // S, s = pos - (pos // S) * S
    return IndexError(f"Target {_target(g, target.ptr(), n, s)} is out of bounds.")


def nll_forward(Array lp, Array target, Array weight, int64_t ignore_index, int reduction):
    """(losses, total_weight): the losses are an [N, S] array for reduction 'none', else a 0-d
    array holding the sum ('sum') or the sum divided by the total weight ('mean': NaN when
    every target is ignored, as in PyTorch).  total_weight: the sum of w[t] over non-ignored
    targets (a Python float)."""
    cdef Geo g
    cdef double acc[2]
    cdef int64_t bad
    cdef Array out
    cdef int64_t shp[2]
    acc[0] = acc[1] = 0.0
    _geometry(lp, target, weight, ignore_index, &g)
    cdef const char* tp = target.ptr()
    cdef char* wp = weight.ptr() if weight is not None else NULL
    cdef char* op = NULL
    if reduction == REDUCTION_NONE:
        shp[0] = g.N
        shp[1] = g.S
        out = new_array(2, shp, lp.dtype)
        op = out.ptr()
    else:
        out = new_array(0, shp, lp.dtype)
    with nogil:
        if lp.dtype == TL_FLOAT32:
            bad = _forward(&g, <const float*>lp.ptr(), tp, <const float*>wp, <float*>op, acc)
        else:
            bad = _forward(&g, <const double*>lp.ptr(), tp, <const double*>wp, <double*>op, acc)
    if bad >= 0:
        raise _bounds_error(target, bad, g.S, &g)
    cdef double value
    if reduction != REDUCTION_NONE:
        value = acc[0]
        if reduction == REDUCTION_MEAN:
            value = _nan_div(acc[0], acc[1])
        if lp.dtype == TL_FLOAT32:
            (<float*>out.ptr())[0] = <float>value
        else:
            (<double*>out.ptr())[0] = value
    return out, acc[1]


cdef double _nan_div(double a, double b) noexcept:
    """a / b with IEEE semantics (0 / 0 = NaN) although the module compiles with cdivision."""
    if b == 0.0:
        if a == 0.0 or a != a:
            return float("nan")
        return float("inf") if a > 0 else float("-inf")
    return a / b


def nll_backward(Array lp, Array target, Array weight, int64_t ignore_index, Array grad,
                 double scale, bint softmax):
    """The gradient, a contiguous [N, C, S] array of lp's dtype: with respect to lp
    (softmax=False: -onehot(t) * w[t] * grad * scale), or to the logits of lp = log_softmax
    (softmax=True: (exp(lp) - onehot(t)) * w[t] * grad * scale).  grad: a 0-d array (a reduced
    loss) or [N, S] ('none'), of lp's dtype."""
    cdef Geo g
    cdef int64_t gstride, bad
    cdef double acc[2]
    _geometry(lp, target, weight, ignore_index, &g)
    if grad.dtype != lp.dtype:
        raise RuntimeError("nll_backward: grad must have lp's dtype")
    if grad.nd == 0:
        gstride = 0
    elif grad.nd == 2 and grad.shp[0] == g.N and grad.shp[1] == g.S and grad.contiguous():
        gstride = 1
    else:
        raise RuntimeError("nll_backward: grad must be 0-d or a contiguous [N, S] array")
    # the targets were checked in the forward, but may have been changed since: check again
    with nogil:
        bad = _first_bad(&g, target.ptr())
    if bad >= 0:
        raise _bounds_error(target, bad, g.S, &g)
    cdef int64_t shp[3]
    shp[0], shp[1], shp[2] = g.N, g.C, g.S
    cdef Array dx = new_array(3, shp, lp.dtype)
    cdef const char* tp = target.ptr()
    cdef char* wp = weight.ptr() if weight is not None else NULL
    with nogil:
        if lp.dtype == TL_FLOAT32:
            _backward(&g, <const float*>lp.ptr(), tp, <const float*>wp, <const float*>grad.ptr(),
                      gstride, scale, softmax, <float*>dx.ptr())
        else:
            _backward(&g, <const double*>lp.ptr(), tp, <const double*>wp,
                      <const double*>grad.ptr(), gstride, scale, softmax, <double*>dx.ptr())
    return dx


cdef int64_t _first_bad(const Geo* g, const char* tp) noexcept nogil:
    cdef int64_t n, s
    for n in range(g.N):
        for s in range(g.S):
            if _bad(g, _target(g, tp, n, s)):
                return n * g.S + s
    return -1


def target_weights(Array target, Array weight, int64_t ignore_index, int64_t num_classes):
    """An [N, S] array of w[t] (1 without weights), 0 where t is ignored: the per-element
    weights the loss used (after the forward checked the targets).  dtype: weight's, or
    float64 without weights."""
    cdef Geo g
    cdef int64_t n, s, t, bad = -1
    cdef int64_t shp[2]
    if target.nd != 2 or (target.dtype != TL_INT64 and target.dtype != TL_UINT8):
        raise RuntimeError("target_weights: expected int64/uint8 targets [N, S]")
    if weight is not None and (weight.nd != 1 or weight.shp[0] != num_classes or
                               (weight.dtype != TL_FLOAT32 and weight.dtype != TL_FLOAT64)):
        raise RuntimeError("target_weights: weight must be float32/float64 [C]")
    g.N, g.C, g.S = target.shp[0], num_classes, target.shp[1]
    g.tn, g.ts = target.strd[0], target.strd[1]
    g.ws = weight.strd[0] if weight is not None else 0
    g.tbyte = target.dtype == TL_UINT8
    g.ignore = ignore_index
    shp[0], shp[1] = g.N, g.S
    cdef Array out = new_array(2, shp, weight.dtype if weight is not None else TL_FLOAT64)
    cdef const char* tp = target.ptr()
    cdef double* o64 = <double*>out.ptr()
    cdef float* o32 = <float*>out.ptr()
    cdef const double* w64 = <const double*>weight.ptr() if weight is not None else NULL
    cdef const float* w32 = <const float*>weight.ptr() if weight is not None else NULL
    cdef bint f32 = out.dtype == TL_FLOAT32
    cdef bint has_w = weight is not None
    cdef double wt
    with nogil:
        for n in range(g.N):
            for s in range(g.S):
                t = _target(&g, tp, n, s)
                if t == g.ignore:
                    wt = 0.0
                elif t < 0 or t >= g.C:
                    bad = n * g.S + s
                    break
                elif not has_w:
                    wt = 1.0
                elif f32:
                    wt = w32[t * g.ws]
                else:
                    wt = w64[t * g.ws]
                if f32:
                    o32[n * g.S + s] = <float>wt
                else:
                    o64[n * g.S + s] = wt
            if bad >= 0:
                break
    if bad >= 0:
        raise _bounds_error(target, bad, g.S, &g)
    return out
