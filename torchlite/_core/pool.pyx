# Pooling and resampling kernels over 2-d planes: max pooling with indices, average pooling
# (padding, ceil_mode windows, count_include_pad, divisor_override), adaptive average and
# max pooling, the backward (adjoint) of each, and a one-axis resampler (nearest or linear
# interpolation along one dim, and its adjoint) that upsampling and the non-constant paddings
# are built from.  One-dimensional pooling is pooling over planes of height 1 (the caller
# reshapes).
#
# Inputs are C-contiguous (N, C, H, W) arrays (the entry points copy others) -- except that
# max and average pooling and their backward passes take channels_last (NHWC) arrays as they
# are and give channels_last results, as PyTorch does; B = N*C planes are independent.  Forward passes split planes (and rows) over threads; backward passes
# add into the input's gradient, so each plane is summed by one thread in a fixed order:
# results never depend on the thread count.  float16/bfloat16 are computed in float32; max
# pooling also takes integer planes.
from cython.parallel cimport prange
from libc.stdint cimport int64_t, int32_t, int16_t, int8_t, uint8_t
from libc.math cimport floor, floorf
from libc.string cimport memset
from torchlite._core.array cimport (Array, new_array, TL_UINT8, TL_INT8, TL_INT16, TL_INT32,
                                    TL_INT64, TL_FLOAT16, TL_BFLOAT16, TL_FLOAT32, TL_FLOAT64)
from torchlite._core.elementwise cimport cast_array, contiguous_array, copy_into
from torchlite._core.parallel cimport num_chunks

cdef extern from *:
    """
    /* One step of a window's running maximum (PyTorch's rule: take v when v > m or v is
     * NaN), as bit selects: with random data a branch here mispredicts about once per
     * window, which costs more than the rest of the loop. */
    static inline void tl_max_step_f32(float v, int64_t pos, float *m, int64_t *best) {
        union { float f; uint32_t u; } a, b;
        const uint32_t take = (uint32_t)((v > *m) | (v != v));
        a.f = v; b.f = *m;
        b.u = (a.u & -take) | (b.u & (take - 1u));
        *m = b.f;
        *best = (pos & -(int64_t)take) | (*best & ((int64_t)take - 1));
    }
    static inline void tl_max_step_f64(double v, int64_t pos, double *m, int64_t *best) {
        union { double f; uint64_t u; } a, b;
        const uint64_t take = (uint64_t)((v > *m) | (v != v));
        a.f = v; b.f = *m;
        b.u = (a.u & -take) | (b.u & (take - 1u));
        *m = b.f;
        *best = (pos & -(int64_t)take) | (*best & ((int64_t)take - 1));
    }
    #define TL_MAX_STEP_INT(T)                                                          \
    static inline void tl_max_step_##T(T v, int64_t pos, T *m, int64_t *best) {         \
        const int64_t t = -(int64_t)(v > *m);                                           \
        *m = (T)(((int64_t)v & t) | ((int64_t)*m & ~t));                                \
        *best = (pos & t) | (*best & ~t);                                               \
    }
    TL_MAX_STEP_INT(int64_t)
    TL_MAX_STEP_INT(int32_t)
    TL_MAX_STEP_INT(int16_t)
    TL_MAX_STEP_INT(int8_t)
    TL_MAX_STEP_INT(uint8_t)
    /* One tap of NHWC max pooling over a run of n channels: the same rule as the steps
     * above, written as selects the compiler vectorises along the run (the positions in
     * 32 bits: with 64-bit ones next to float lanes the baseline build's loop stayed
     * scalar, 2.7x slower). */
    #define TL_MAX_RUN(T, NAME)                                                         \
    static inline void tl_max_run_##NAME(const T *restrict p, int32_t pos, T *restrict m, \
                                         int32_t *restrict best, int64_t n) {           \
        for (int64_t c = 0; c < n; c++) {                                               \
            const T v = p[c];                                                           \
            const int take = (v > m[c]) | (v != v);                                     \
            m[c] = take ? v : m[c];                                                     \
            best[c] = take ? pos : best[c];                                             \
        }                                                                               \
    }
    TL_MAX_RUN(float, f32)
    TL_MAX_RUN(double, f64)
    TL_MAX_RUN(int64_t, int64_t)
    TL_MAX_RUN(int32_t, int32_t)
    TL_MAX_RUN(int16_t, int16_t)
    TL_MAX_RUN(int8_t, int8_t)
    TL_MAX_RUN(uint8_t, uint8_t)
    #include <math.h>
    #include <float.h>
    #define TL_LOWEST_float (-INFINITY)
    #define TL_LOWEST_double (-INFINITY)
    #define TL_LOWEST_int64_t INT64_MIN
    #define TL_LOWEST_int32_t INT32_MIN
    #define TL_LOWEST_int16_t INT16_MIN
    #define TL_LOWEST_int8_t INT8_MIN
    #define TL_LOWEST_uint8_t 0
    """
    void tl_max_step_f32(float v, int64_t pos, float* m, int64_t* best) nogil
    void tl_max_step_f64(double v, int64_t pos, double* m, int64_t* best) nogil
    void tl_max_step_int64_t(int64_t v, int64_t pos, int64_t* m, int64_t* best) nogil
    void tl_max_step_int32_t(int32_t v, int64_t pos, int32_t* m, int64_t* best) nogil
    void tl_max_step_int16_t(int16_t v, int64_t pos, int16_t* m, int64_t* best) nogil
    void tl_max_step_int8_t(int8_t v, int64_t pos, int8_t* m, int64_t* best) nogil
    void tl_max_step_uint8_t(uint8_t v, int64_t pos, uint8_t* m, int64_t* best) nogil
    void tl_max_run_f32(const float* p, int32_t pos, float* m, int32_t* best, int64_t n) nogil
    void tl_max_run_f64(const double* p, int32_t pos, double* m, int32_t* best, int64_t n) nogil
    void tl_max_run_int64_t(const int64_t* p, int32_t pos, int64_t* m, int32_t* best,
                            int64_t n) nogil
    void tl_max_run_int32_t(const int32_t* p, int32_t pos, int32_t* m, int32_t* best,
                            int64_t n) nogil
    void tl_max_run_int16_t(const int16_t* p, int32_t pos, int16_t* m, int32_t* best,
                            int64_t n) nogil
    void tl_max_run_int8_t(const int8_t* p, int32_t pos, int8_t* m, int32_t* best,
                           int64_t n) nogil
    void tl_max_run_uint8_t(const uint8_t* p, int32_t pos, uint8_t* m, int32_t* best,
                            int64_t n) nogil
    float TL_LOWEST_float
    double TL_LOWEST_double
    int64_t TL_LOWEST_int64_t
    int32_t TL_LOWEST_int32_t
    int16_t TL_LOWEST_int16_t
    int8_t TL_LOWEST_int8_t
    uint8_t TL_LOWEST_uint8_t

ctypedef fused real:
    float
    double

# max pooling also takes integer planes (PyTorch does)
ctypedef fused anyval:
    float
    double
    int64_t
    int32_t
    int16_t
    int8_t
    uint8_t

cdef int64_t GRAIN = 16384          # output elements per thread below which a pass is serial


cdef struct Win:
    int64_t B, H, W, OH, OW
    int64_t kh, kw, sh, sw, ph, pw, dh, dw


cdef inline anyval _lowest(anyval* dummy) noexcept nogil:
    if anyval is float:
        return TL_LOWEST_float
    elif anyval is double:
        return TL_LOWEST_double
    elif anyval is int64_t:
        return TL_LOWEST_int64_t
    elif anyval is int32_t:
        return TL_LOWEST_int32_t
    elif anyval is int16_t:
        return TL_LOWEST_int16_t
    elif anyval is int8_t:
        return TL_LOWEST_int8_t
    else:
        return TL_LOWEST_uint8_t


cdef inline void _max_step(anyval v, int64_t pos, anyval* m, int64_t* best) noexcept nogil:
    """m, best = v, pos when v > m or v is NaN."""
    if anyval is float:
        tl_max_step_f32(v, pos, m, best)
    elif anyval is double:
        tl_max_step_f64(v, pos, m, best)
    elif anyval is int64_t:
        tl_max_step_int64_t(v, pos, m, best)
    elif anyval is int32_t:
        tl_max_step_int32_t(v, pos, m, best)
    elif anyval is int16_t:
        tl_max_step_int16_t(v, pos, m, best)
    elif anyval is int8_t:
        tl_max_step_int8_t(v, pos, m, best)
    else:
        tl_max_step_uint8_t(v, pos, m, best)


cdef inline void _max_run(const anyval* p, int32_t pos, anyval* m, int32_t* best,
                          int64_t n) noexcept nogil:
    """_max_step over a run of n channels."""
    if anyval is float:
        tl_max_run_f32(p, pos, m, best, n)
    elif anyval is double:
        tl_max_run_f64(p, pos, m, best, n)
    elif anyval is int64_t:
        tl_max_run_int64_t(p, pos, m, best, n)
    elif anyval is int32_t:
        tl_max_run_int32_t(p, pos, m, best, n)
    elif anyval is int16_t:
        tl_max_run_int16_t(p, pos, m, best, n)
    elif anyval is int8_t:
        tl_max_run_int8_t(p, pos, m, best, n)
    else:
        tl_max_run_uint8_t(p, pos, m, best, n)


cdef inline int _compute_dtype(int dt) noexcept:
    if dt == TL_FLOAT16 or dt == TL_BFLOAT16:
        return TL_FLOAT32
    return dt


cdef Array _prepared(Array a, int cdt):
    """a in dtype cdt, C-contiguous (a cast keeps the input's memory order, so a
    channels_last or transposed half-precision input is made contiguous after it)."""
    if a.dtype != cdt:
        a = cast_array(a, cdt)
    if not a.contiguous():
        return contiguous_array(a)
    return a



cdef Array _finish(Array r, int dt):
    cdef Array out
    if r.dtype == dt:
        return r
    out = new_array(r.nd, r.shp, dt)
    copy_into(out, r)
    return out


cdef int _check4(Array a, str op) except -1:
    if a.nd != 4:
        raise RuntimeError(f"{op}: expected a 4-d array, got shape {a.shape}")
    return 0


cdef int _check_float(Array a, str op) except -1:
    if a.dtype < TL_FLOAT16 or a.dtype > TL_FLOAT64:
        raise RuntimeError(f"{op}: expected a floating array")
    return 0


cdef tuple _pair(v):
    t = tuple(int(a) for a in v)
    if len(t) != 2:
        raise RuntimeError(f"expected a pair, got {v}")
    return t


cdef int _set_win(Win* w, Array x, int64_t OH, int64_t OW, kernel, stride, padding, dilation,
                  str op) except -1:
    k, s, p, d = _pair(kernel), _pair(stride), _pair(padding), _pair(dilation)
    w.B = x.shp[0] * x.shp[1]; w.H = x.shp[2]; w.W = x.shp[3]; w.OH = OH; w.OW = OW
    w.kh = k[0]; w.kw = k[1]; w.sh = s[0]; w.sw = s[1]
    w.ph = p[0]; w.pw = p[1]; w.dh = d[0]; w.dw = d[1]
    if w.kh < 1 or w.kw < 1 or w.sh < 1 or w.sw < 1 or w.dh < 1 or w.dw < 1:
        raise RuntimeError(f"{op}: kernel size, stride and dilation must be positive")
    if w.ph < 0 or w.pw < 0 or OH < 0 or OW < 0:
        raise RuntimeError(f"{op}: negative padding or output size")
    return 0


cdef Array _new4(Array like, int64_t d2, int64_t d3, int dtype):
    cdef int64_t shp[4]
    shp[0] = like.shp[0]; shp[1] = like.shp[1]; shp[2] = d2; shp[3] = d3
    return new_array(4, shp, dtype)


cdef int _par(int64_t work) noexcept nogil:
    return num_chunks(work, GRAIN)


# ---------------------------------------------------------------------------------------
# Max pooling
# ---------------------------------------------------------------------------------------
cdef enum:
    MAX_COLS = 32       # output columns whose windows one pass scans side by side


cdef void _max_row(const Win* w, const anyval* x, anyval* y, int64_t* idx, int64_t r) noexcept nogil:
    """Output row r (= plane * OH + oh): the first maximum of each window in row-major order
    (a NaN wins over any number, and the last NaN of a window wins, as in PyTorch), and its
    index in the plane.  The windows of up to MAX_COLS outputs are scanned side by side, so
    their running maxima are independent chains the CPU overlaps."""
    cdef int64_t b = r // w.OH, oh = r % w.OH, o0, n, j, ki, kj, ih, iw, ihf, iwf, rowoff
    cdef int64_t off, jlo, jhi
    cdef const anyval* plane = x + b * w.H * w.W
    cdef anyval m[MAX_COLS]
    cdef int64_t best[MAX_COLS]
    cdef int64_t ih0 = oh * w.sh - w.ph
    ihf = ih0                       # the first row of the window inside the input
    while ihf < 0:
        ihf += w.dh
    o0 = 0
    while o0 < w.OW:
        n = w.OW - o0 if w.OW - o0 < MAX_COLS else MAX_COLS
        for j in range(n):
            iwf = (o0 + j) * w.sw - w.pw
            while iwf < 0:
                iwf += w.dw
            m[j] = _lowest(y)
            best[j] = ihf * w.W + iwf
        for ki in range(w.kh):
            ih = ih0 + ki * w.dh
            if ih < 0 or ih >= w.H:
                continue
            rowoff = ih * w.W
            for kj in range(w.kw):
                # the outputs j whose column iw = (o0 + j)*sw + off lies inside the row
                off = o0 * w.sw - w.pw + kj * w.dw
                jlo = 0 if off >= 0 else (-off + w.sw - 1) // w.sw
                jhi = 0 if w.W - 1 - off < 0 else (w.W - 1 - off) // w.sw + 1
                if jhi > n:
                    jhi = n
                iw = rowoff + off + jlo * w.sw
                for j in range(jlo, jhi):
                    _max_step(plane[iw], iw, &m[j], &best[j])
                    iw += w.sw
        for j in range(n):
            y[r * w.OW + o0 + j] = m[j]
            idx[r * w.OW + o0 + j] = best[j]
        o0 += MAX_COLS


cdef void _max_pool(const Win* w, int64_t nhwc_c, const anyval* x, anyval* y,
                    int64_t* idx) noexcept nogil:
    """Every output row: of planes, or with nhwc_c > 0 of NHWC images of nhwc_c channels."""
    cdef int64_t r, rows = (w.B if nhwc_c == 0 else w.B // nhwc_c) * w.OH
    cdef int nt = _par(w.B * w.OH * w.OW * w.kh * w.kw)
    if nt > 1:
        for r in prange(rows, num_threads=nt, schedule="static"):
            if nhwc_c:
                _max_row_nhwc(w, nhwc_c, x, y, idx, r)
            else:
                _max_row(w, x, y, idx, r)
    else:
        for r in range(rows):
            if nhwc_c:
                _max_row_nhwc(w, nhwc_c, x, y, idx, r)
            else:
                _max_row(w, x, y, idx, r)


def max_pool2d(Array x, int64_t OH, int64_t OW, kernel, stride, padding, dilation):
    """(values, int64 indices into each H*W plane) of max pooling x (N, C, H, W) to
    (N, C, OH, OW); the caller computes OH, OW (ceil_mode) and checks the arguments."""
    cdef str op = "max_pool2d"
    cdef Win w
    cdef int dt = x.dtype, cdt = _compute_dtype(x.dtype)
    cdef Array xc, y, idx
    cdef bint nhwc
    _check4(x, op)
    _check_maxable(x.dtype, op)
    _set_win(&w, x, OH, OW, kernel, stride, padding, dilation, op)
    nhwc = _is_nhwc(x) and x.dtype == cdt and x.shp[2] * x.shp[3] < (1 << 31)
    y = _new_nhwc(x, OH, OW, cdt) if nhwc else _new4(x, OH, OW, cdt)
    idx = _new_nhwc(x, OH, OW, TL_INT64) if nhwc else _new4(x, OH, OW, TL_INT64)
    if y.n == 0:
        return _finish(y, dt), idx
    if w.H * w.W == 0:
        raise RuntimeError(f"{op}: empty input planes")
    if nhwc:
        _max_dispatch(&w, x.shp[1], x, y, idx)
        return y, idx
    xc = _prepared(x, cdt)
    _max_dispatch(&w, 0, xc, y, idx)
    return _finish(y, dt), idx


cdef int _check_maxable(int dt, str op) except -1:
    if dt == TL_FLOAT16 or dt == TL_BFLOAT16 or dt == TL_FLOAT32 or dt == TL_FLOAT64:
        return 0
    if dt == TL_INT64 or dt == TL_INT32 or dt == TL_INT16 or dt == TL_INT8 or dt == TL_UINT8:
        return 0
    raise RuntimeError(f"{op}: unsupported dtype")


cdef int _max_dispatch(const Win* w, int64_t nhwc_c, Array xc, Array y, Array idx) except -1:
    cdef int64_t* ip = <int64_t*>idx.ptr()
    with nogil:
        if xc.dtype == TL_FLOAT32:
            _max_pool(w, nhwc_c, <const float*>xc.ptr(), <float*>y.ptr(), ip)
        elif xc.dtype == TL_FLOAT64:
            _max_pool(w, nhwc_c, <const double*>xc.ptr(), <double*>y.ptr(), ip)
        elif xc.dtype == TL_INT64:
            _max_pool(w, nhwc_c, <const int64_t*>xc.ptr(), <int64_t*>y.ptr(), ip)
        elif xc.dtype == TL_INT32:
            _max_pool(w, nhwc_c, <const int32_t*>xc.ptr(), <int32_t*>y.ptr(), ip)
        elif xc.dtype == TL_INT16:
            _max_pool(w, nhwc_c, <const int16_t*>xc.ptr(), <int16_t*>y.ptr(), ip)
        elif xc.dtype == TL_INT8:
            _max_pool(w, nhwc_c, <const int8_t*>xc.ptr(), <int8_t*>y.ptr(), ip)
        else:
            _max_pool(w, nhwc_c, <const uint8_t*>xc.ptr(), <uint8_t*>y.ptr(), ip)
    return 0


# ---------------------------------------------------------------------------------------
# Scatter by indices: the backward of max pooling, and max_unpool
# ---------------------------------------------------------------------------------------
cdef void _scatter_plane(const real* g, const int64_t* idx, real* out, int64_t n, bint add) noexcept nogil:
    cdef int64_t j
    if add:
        for j in range(n):
            out[idx[j]] += g[j]
    else:
        for j in range(n):
            out[idx[j]] = g[j]


cdef void _scatter(const real* g, const int64_t* idx, real* out, int64_t B, int64_t n,
                   int64_t HW, bint add) noexcept nogil:
    cdef int64_t b
    cdef int nt = _par(B * n) if B > 1 else 1
    if nt > 1:
        for b in prange(B, num_threads=nt, schedule="static"):
            _scatter_plane(g + b * n, idx + b * n, out + b * HW, n, add)
    else:
        for b in range(B):
            _scatter_plane(g + b * n, idx + b * n, out + b * HW, n, add)


cdef int64_t _first_bad(const int64_t* idx, int64_t total, int64_t HW) noexcept nogil:
    """The position of the first index outside [0, HW), or -1."""
    cdef int64_t j
    for j in range(total):
        if idx[j] < 0 or idx[j] >= HW:
            return j
    return -1


def scatter_planes(Array g, Array idx, int64_t H, int64_t W, bint add):
    """out (N, C, H, W) zeros, then out[n, c].flat[idx[n, c, j]] += g[n, c, j] (add) or
    = g[n, c, j] (not add; the last write wins) for g, idx of one shape (N, C, ...).  Every
    index is checked first: IndexError names the first one outside the plane."""
    cdef str op = "max_pool2d_backward" if add else "max_unpool2d"
    cdef int dt = g.dtype, cdt = _compute_dtype(g.dtype)
    cdef Array gc, ic, out
    cdef int64_t B, n, bad, C, HW = H * W
    cdef bint nhwc
    _check_float(g, op)
    if g.nd < 2 or tuple(g.shape) != tuple(idx.shape) or idx.dtype != TL_INT64:
        raise RuntimeError(f"{op}: expected int64 indices of the shape of the values, got "
                           f"{idx.shape} and {g.shape}")
    if H < 0 or W < 0:
        raise RuntimeError(f"{op}: negative output size")
    B = g.shp[0] * g.shp[1]
    n = g.n // B if B else 0
    # the layout of the pooling's input, which its indices have (PyTorch's rule)
    nhwc = _is_nhwc(idx) and g.nd == 4
    out = _new_nhwc(g, H, W, cdt) if nhwc else _new4(g, H, W, cdt)
    if out.n == 0:
        if g.n and HW == 0:
            raise IndexError(f"{op}: index out of range for an empty plane")
        return _finish(out, dt)
    memset(out.ptr(), 0, out.n * (8 if cdt == TL_FLOAT64 else 4))
    gc = _as_nhwc(g, cdt) if nhwc else _prepared(g, cdt)
    ic = idx if nhwc else _prepared(idx, TL_INT64)
    with nogil:
        bad = _first_bad(<const int64_t*>ic.ptr(), ic.n, HW)
    if bad >= 0:
        raise IndexError(f"{op}: index {(<const int64_t*>ic.ptr())[bad]} is out of bounds for "
                         f"a plane of {HW} elements ({H} x {W})")
    C = g.shp[1]
    with nogil:
        if nhwc and cdt == TL_FLOAT32:
            _scatter_nhwc(<const float*>gc.ptr(), <const int64_t*>ic.ptr(), <float*>out.ptr(),
                          B // C, n, C, HW, add)
        elif nhwc:
            _scatter_nhwc(<const double*>gc.ptr(), <const int64_t*>ic.ptr(), <double*>out.ptr(),
                          B // C, n, C, HW, add)
        elif cdt == TL_FLOAT32:
            _scatter(<const float*>gc.ptr(), <const int64_t*>ic.ptr(), <float*>out.ptr(), B, n, HW, add)
        else:
            _scatter(<const double*>gc.ptr(), <const int64_t*>ic.ptr(), <double*>out.ptr(), B, n, HW, add)
    return _finish(out, dt)


def gather_planes(Array x, Array idx):
    """y[n, c, j] = x[n, c].flat[idx[n, c, j]]: the adjoint of scatter_planes (add), for
    the double backward of max pooling.  y has idx's shape; indices are checked."""
    cdef str op = "max_pool2d_double_backward"
    cdef int dt = x.dtype, cdt = _compute_dtype(x.dtype)
    cdef Array xc, ic, y
    cdef int64_t B, n, HW, bad
    _check_float(x, op)
    _check4(x, op)
    if idx.nd < 2 or idx.shp[0] != x.shp[0] or idx.shp[1] != x.shp[1] or idx.dtype != TL_INT64:
        raise RuntimeError(f"{op}: indices of shape {idx.shape} do not fit values {x.shape}")
    B = x.shp[0] * x.shp[1]
    HW = x.shp[2] * x.shp[3]
    n = idx.n // B if B else 0
    y = new_array(idx.nd, idx.shp, cdt)
    if y.n == 0:
        return _finish(y, dt)
    xc = _prepared(x, cdt)
    ic = _prepared(idx, TL_INT64)
    with nogil:
        bad = _first_bad(<const int64_t*>ic.ptr(), ic.n, HW)
    if bad >= 0:
        raise IndexError(f"{op}: index {(<const int64_t*>ic.ptr())[bad]} is out of bounds for "
                         f"a plane of {HW} elements")
    with nogil:
        if cdt == TL_FLOAT32:
            _gather(<const float*>xc.ptr(), <const int64_t*>ic.ptr(), <float*>y.ptr(), B, n, HW)
        else:
            _gather(<const double*>xc.ptr(), <const int64_t*>ic.ptr(), <double*>y.ptr(), B, n, HW)
    return _finish(y, dt)


cdef void _gather(const real* x, const int64_t* idx, real* y, int64_t B, int64_t n, int64_t HW) noexcept nogil:
    cdef int64_t b, j
    cdef int nt = _par(B * n)
    for b in prange(B, num_threads=nt, schedule="static"):
        for j in range(n):
            y[b * n + j] = x[b * HW + idx[b * n + j]]


# ---------------------------------------------------------------------------------------
# Average pooling
# ---------------------------------------------------------------------------------------
cdef struct AvgOpt:
    bint count_include_pad
    int64_t divisor             # 0: none


cdef inline bint _avg_window(const Win* w, const AvgOpt* o, int64_t oh, int64_t ow,
                             int64_t* h0, int64_t* h1, int64_t* w0, int64_t* w1,
                             int64_t* div) noexcept nogil:
    """The window of output (oh, ow) clipped to the input, and its divisor (PyTorch's rule:
    the window clipped to the padded input counts with count_include_pad).  False when the
    window holds no input element."""
    cdef int64_t a0 = oh * w.sh - w.ph, b0 = ow * w.sw - w.pw
    cdef int64_t a1 = a0 + w.kh, b1 = b0 + w.kw
    cdef int64_t pool
    if a1 > w.H + w.ph:
        a1 = w.H + w.ph
    if b1 > w.W + w.pw:
        b1 = w.W + w.pw
    pool = (a1 - a0) * (b1 - b0)
    if a0 < 0:
        a0 = 0
    if b0 < 0:
        b0 = 0
    if a1 > w.H:
        a1 = w.H
    if b1 > w.W:
        b1 = w.W
    h0[0] = a0; h1[0] = a1; w0[0] = b0; w1[0] = b1
    if a0 >= a1 or b0 >= b1:
        return False
    if o.divisor:
        div[0] = o.divisor
    elif o.count_include_pad:
        div[0] = pool
    else:
        div[0] = (a1 - a0) * (b1 - b0)
    return True


cdef void _avg_row(const Win* w, const AvgOpt* o, const real* x, real* y, int64_t r) noexcept nogil:
    cdef int64_t b = r // w.OH, oh = r % w.OH, ow, ih, iw
    cdef int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0, div = 1
    cdef const real* plane = x + b * w.H * w.W
    cdef real s
    for ow in range(w.OW):
        if not _avg_window(w, o, oh, ow, &h0, &h1, &w0, &w1, &div):
            y[r * w.OW + ow] = 0
            continue
        s = 0
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                s = s + plane[ih * w.W + iw]
        y[r * w.OW + ow] = s / div


cdef void _avg_back_plane(const Win* w, const AvgOpt* o, const real* g, real* dx, int64_t b) noexcept nogil:
    cdef int64_t oh, ow, ih, iw
    cdef int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0, div = 1
    cdef real* plane = dx + b * w.H * w.W
    cdef real v
    for ih in range(w.H * w.W):
        plane[ih] = 0
    for oh in range(w.OH):
        for ow in range(w.OW):
            if not _avg_window(w, o, oh, ow, &h0, &h1, &w0, &w1, &div):
                continue
            v = g[(b * w.OH + oh) * w.OW + ow] / div
            for ih in range(h0, h1):
                for iw in range(w0, w1):
                    plane[ih * w.W + iw] += v


cdef void _avg_pool(const Win* w, const AvgOpt* o, int64_t nhwc_c, const real* x,
                    real* y) noexcept nogil:
    """Every output row: of planes, or with nhwc_c > 0 of NHWC images of nhwc_c channels."""
    cdef int64_t r, rows = (w.B if nhwc_c == 0 else w.B // nhwc_c) * w.OH
    cdef int nt = _par(w.B * w.OH * w.OW * w.kh * w.kw)
    if nt > 1:
        for r in prange(rows, num_threads=nt, schedule="static"):
            if nhwc_c:
                _avg_row_nhwc(w, o, nhwc_c, x, y, r)
            else:
                _avg_row(w, o, x, y, r)
    else:
        for r in range(rows):
            if nhwc_c:
                _avg_row_nhwc(w, o, nhwc_c, x, y, r)
            else:
                _avg_row(w, o, x, y, r)


cdef void _avg_back(const Win* w, const AvgOpt* o, const real* g, real* dx) noexcept nogil:
    cdef int64_t b
    cdef int nt = _par(w.B * w.OH * w.OW * w.kh * w.kw) if w.B > 1 else 1
    if nt > 1:
        for b in prange(w.B, num_threads=nt, schedule="static"):
            _avg_back_plane(w, o, g, dx, b)
    else:
        for b in range(w.B):
            _avg_back_plane(w, o, g, dx, b)


def avg_pool2d(Array x, int64_t OH, int64_t OW, kernel, stride, padding, bint count_include_pad,
               int64_t divisor):
    """Average pooling of x (N, C, H, W) to (N, C, OH, OW); divisor 0 means none given."""
    cdef str op = "avg_pool2d"
    cdef Win w
    cdef AvgOpt o
    cdef int dt = x.dtype, cdt = _compute_dtype(x.dtype)
    cdef Array xc, y
    cdef bint nhwc
    cdef int64_t C
    _check4(x, op)
    _check_float(x, op)
    _set_win(&w, x, OH, OW, kernel, stride, padding, (1, 1), op)
    o.count_include_pad = count_include_pad
    o.divisor = divisor
    nhwc = _is_nhwc(x) and x.dtype == cdt
    y = _new_nhwc(x, OH, OW, cdt) if nhwc else _new4(x, OH, OW, cdt)
    if y.n == 0:
        return _finish(y, dt)
    xc = x if nhwc else _prepared(x, cdt)
    C = x.shp[1]
    if not nhwc:
        C = 0
    with nogil:
        if cdt == TL_FLOAT32:
            _avg_pool(&w, &o, C, <const float*>xc.ptr(), <float*>y.ptr())
        else:
            _avg_pool(&w, &o, C, <const double*>xc.ptr(), <double*>y.ptr())
    return _finish(y, dt)


def avg_pool2d_backward(Array g, int64_t H, int64_t W, kernel, stride, padding,
                        bint count_include_pad, int64_t divisor, bint channels_last=False):
    """The gradient of avg_pool2d with respect to its (N, C, H, W) input; channels_last (the
    input's layout) gives a channels_last result, whatever g's layout, else a contiguous one."""
    cdef str op = "avg_pool2d_backward"
    cdef Win w
    cdef AvgOpt o
    cdef int dt = g.dtype, cdt = _compute_dtype(g.dtype)
    cdef Array gc, dx
    cdef bint nhwc
    cdef int64_t C
    _check4(g, op)
    _check_float(g, op)
    nhwc = channels_last and g.shp[1] > 1     # the input's layout (PyTorch's rule)
    dx = _new_nhwc(g, H, W, cdt) if nhwc else _new4(g, H, W, cdt)
    _set_win(&w, dx, g.shp[2], g.shp[3], kernel, stride, padding, (1, 1), op)
    o.count_include_pad = count_include_pad
    o.divisor = divisor
    if dx.n == 0:
        return _finish(dx, dt)
    gc = _as_nhwc(g, cdt) if nhwc else _prepared(g, cdt)
    C = g.shp[1]
    with nogil:
        if nhwc and cdt == TL_FLOAT32:
            _avg_back_nhwc(&w, &o, C, <const float*>gc.ptr(), <float*>dx.ptr())
        elif nhwc:
            _avg_back_nhwc(&w, &o, C, <const double*>gc.ptr(), <double*>dx.ptr())
        elif cdt == TL_FLOAT32:
            _avg_back(&w, &o, <const float*>gc.ptr(), <float*>dx.ptr())
        else:
            _avg_back(&w, &o, <const double*>gc.ptr(), <double*>dx.ptr())
    return _finish(dx, dt)


# ---------------------------------------------------------------------------------------
# channels_last (NHWC) planes: max and average pooling and their backward passes read and
# write them as they are, the inner loops running along the channels (contiguous there),
# where the plane-by-plane kernels would need a copy in and a copy out.  Each output element
# takes the same operations in the same order as in the plane kernels: the same bits.
# ---------------------------------------------------------------------------------------
cdef bint _is_nhwc(Array a) noexcept:
    """a (N, C, H, W) laid out channels_last (NHWC strides) and not also contiguous, in dtype
    cdt already: PyTorch's suggest_memory_format."""
    if a.nd != 4 or a.contiguous() or a.shp[1] < 2:
        return False
    return (a.strd[1] == 1 and (a.shp[3] == 1 or a.strd[3] == a.shp[1])
            and (a.shp[2] == 1 or a.strd[2] == a.shp[1] * a.shp[3])
            and (a.shp[0] == 1 or a.strd[0] == a.shp[1] * a.shp[2] * a.shp[3]))


cdef Array _new_nhwc(Array like, int64_t d2, int64_t d3, int dtype):
    """A new (N, C, d2, d3) array laid out channels_last."""
    cdef int64_t shp[4]
    shp[0] = like.shp[0]; shp[1] = d2; shp[2] = d3; shp[3] = like.shp[1]
    return new_array(4, shp, dtype).permute((0, 3, 1, 2))


cdef Array _as_nhwc(Array a, int dtype):
    """a itself when it is channels_last in dtype already, else a channels_last copy (the
    gradient of a pooling whose input was channels_last may come in either layout)."""
    cdef Array out
    if _is_nhwc(a) and a.dtype == dtype:
        return a
    out = _new_nhwc(a, a.shp[2], a.shp[3], dtype)
    copy_into(out, a)
    return out


cdef enum:
    NHWC_RUN = 256      # channels one pass of NHWC max pooling keeps its maxima for


cdef void _max_row_nhwc(const Win* w, int64_t C, const anyval* x, anyval* y, int64_t* idx,
                        int64_t r) noexcept nogil:
    """Output row r (= image * OH + oh) of NHWC max pooling: for each output column the
    window's taps in row-major order, each a run of channels (first maximum kept, NaN wins:
    _max_row's rules).  Planes have fewer than 2^31 elements (the caller checks)."""
    cdef int64_t n = r // w.OH, oh = r % w.OH, ow, ki, kj, ih, iw, c, c0, nc, ihf, iwf
    cdef int64_t ih0 = oh * w.sh - w.ph, iw0
    cdef const anyval* img = x + n * w.H * w.W * C
    cdef anyval m[NHWC_RUN]
    cdef int32_t best[NHWC_RUN]
    cdef anyval low = _lowest(y)
    cdef int32_t first
    ihf = ih0
    while ihf < 0:
        ihf += w.dh
    for ow in range(w.OW):
        iw0 = ow * w.sw - w.pw
        iwf = iw0
        while iwf < 0:
            iwf += w.dw
        first = <int32_t>(ihf * w.W + iwf)
        c0 = 0
        while c0 < C:
            nc = C - c0 if C - c0 < NHWC_RUN else NHWC_RUN
            for c in range(nc):
                m[c] = low
                best[c] = first
            for ki in range(w.kh):
                ih = ih0 + ki * w.dh
                if ih < 0 or ih >= w.H:
                    continue
                for kj in range(w.kw):
                    iw = iw0 + kj * w.dw
                    if iw < 0 or iw >= w.W:
                        continue
                    _max_run(img + (ih * w.W + iw) * C + c0, <int32_t>(ih * w.W + iw), m, best, nc)
            for c in range(nc):
                y[(r * w.OW + ow) * C + c0 + c] = m[c]
                idx[(r * w.OW + ow) * C + c0 + c] = best[c]
            c0 += NHWC_RUN


cdef void _scatter_image_nhwc(const real* g, const int64_t* idx, real* out, int64_t n,
                              int64_t C, bint add) noexcept nogil:
    """One image: out[idx[j, c], c] (+)= g[j, c] over its n output positions."""
    cdef int64_t j, c
    if add:
        for j in range(n):
            for c in range(C):
                out[idx[j * C + c] * C + c] += g[j * C + c]
    else:
        for j in range(n):
            for c in range(C):
                out[idx[j * C + c] * C + c] = g[j * C + c]


cdef void _scatter_nhwc(const real* g, const int64_t* idx, real* out, int64_t N, int64_t n,
                        int64_t C, int64_t HW, bint add) noexcept nogil:
    cdef int64_t b
    cdef int nt = _par(N * n * C) if N > 1 else 1
    if nt > 1:
        for b in prange(N, num_threads=nt, schedule="static"):
            _scatter_image_nhwc(g + b * n * C, idx + b * n * C, out + b * HW * C, n, C, add)
    else:
        for b in range(N):
            _scatter_image_nhwc(g + b * n * C, idx + b * n * C, out + b * HW * C, n, C, add)


cdef void _avg_row_nhwc(const Win* w, const AvgOpt* o, int64_t C, const real* x, real* y,
                        int64_t r) noexcept nogil:
    cdef int64_t n = r // w.OH, oh = r % w.OH, ow, ih, iw, c
    cdef int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0, div = 1
    cdef const real* img = x + n * w.H * w.W * C
    cdef const real* p
    cdef real* yo
    for ow in range(w.OW):
        yo = y + (r * w.OW + ow) * C
        for c in range(C):
            yo[c] = 0
        if not _avg_window(w, o, oh, ow, &h0, &h1, &w0, &w1, &div):
            continue
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                p = img + (ih * w.W + iw) * C
                for c in range(C):
                    yo[c] = yo[c] + p[c]
        for c in range(C):
            yo[c] = yo[c] / div


cdef void _avg_back_image_nhwc(const Win* w, const AvgOpt* o, int64_t C, const real* g,
                               real* dx, int64_t n) noexcept nogil:
    cdef int64_t oh, ow, ih, iw, c
    cdef int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0, div = 1
    cdef real* img = dx + n * w.H * w.W * C
    cdef const real* go
    cdef real* p
    for c in range(w.H * w.W * C):
        img[c] = 0
    for oh in range(w.OH):
        for ow in range(w.OW):
            if not _avg_window(w, o, oh, ow, &h0, &h1, &w0, &w1, &div):
                continue
            go = g + ((n * w.OH + oh) * w.OW + ow) * C
            for ih in range(h0, h1):
                for iw in range(w0, w1):
                    p = img + (ih * w.W + iw) * C
                    for c in range(C):
                        p[c] += go[c] / div


cdef void _avg_back_nhwc(const Win* w, const AvgOpt* o, int64_t C, const real* g,
                         real* dx) noexcept nogil:
    cdef int64_t n, N = w.B // C
    cdef int nt = _par(w.B * w.OH * w.OW * w.kh * w.kw) if N > 1 else 1
    if nt > 1:
        for n in prange(N, num_threads=nt, schedule="static"):
            _avg_back_image_nhwc(w, o, C, g, dx, n)
    else:
        for n in range(N):
            _avg_back_image_nhwc(w, o, C, g, dx, n)


# ---------------------------------------------------------------------------------------
# Adaptive pooling: window i of n over a size s is [floor(i*s/n), ceil((i+1)*s/n))
# ---------------------------------------------------------------------------------------
cdef inline int64_t _start(int64_t i, int64_t n, int64_t s) noexcept nogil:
    return (i * s) // n


cdef inline int64_t _end(int64_t i, int64_t n, int64_t s) noexcept nogil:
    return ((i + 1) * s + n - 1) // n


cdef void _adaptive_avg_row(const Win* w, const real* x, real* y, int64_t r) noexcept nogil:
    cdef int64_t b = r // w.OH, oh = r % w.OH, ow, ih, iw, h0, h1, w0, w1
    cdef const real* plane = x + b * w.H * w.W
    cdef real s
    h0 = _start(oh, w.OH, w.H)
    h1 = _end(oh, w.OH, w.H)
    for ow in range(w.OW):
        w0 = _start(ow, w.OW, w.W)
        w1 = _end(ow, w.OW, w.W)
        s = 0
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                s = s + plane[ih * w.W + iw]
        y[r * w.OW + ow] = s / ((h1 - h0) * (w1 - w0))


cdef void _adaptive_max_row(const Win* w, const anyval* x, anyval* y, int64_t* idx, int64_t r) noexcept nogil:
    cdef int64_t b = r // w.OH, oh = r % w.OH, ow, ih, iw, h0, h1, w0, w1, best, pos
    cdef const anyval* plane = x + b * w.H * w.W
    cdef anyval m
    h0 = _start(oh, w.OH, w.H)
    h1 = _end(oh, w.OH, w.H)
    for ow in range(w.OW):
        w0 = _start(ow, w.OW, w.W)
        w1 = _end(ow, w.OW, w.W)
        best = h0 * w.W + w0
        m = _lowest(y)
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                pos = ih * w.W + iw
                _max_step(plane[pos], pos, &m, &best)
        y[r * w.OW + ow] = m
        idx[r * w.OW + ow] = best


cdef void _adaptive_avg_back_plane(const Win* w, const real* g, real* dx, int64_t b) noexcept nogil:
    cdef int64_t oh, ow, ih, iw, h0, h1, w0, w1
    cdef real* plane = dx + b * w.H * w.W
    cdef real v
    for ih in range(w.H * w.W):
        plane[ih] = 0
    for oh in range(w.OH):
        h0 = _start(oh, w.OH, w.H)
        h1 = _end(oh, w.OH, w.H)
        for ow in range(w.OW):
            w0 = _start(ow, w.OW, w.W)
            w1 = _end(ow, w.OW, w.W)
            v = g[(b * w.OH + oh) * w.OW + ow] / ((h1 - h0) * (w1 - w0))
            for ih in range(h0, h1):
                for iw in range(w0, w1):
                    plane[ih * w.W + iw] += v


cdef void _adaptive_avg(const Win* w, const real* x, real* y) noexcept nogil:
    cdef int64_t r, rows = w.B * w.OH
    cdef int nt = _par(w.B * w.H * w.W + rows * w.OW)
    if nt > 1:
        for r in prange(rows, num_threads=nt, schedule="static"):
            _adaptive_avg_row(w, x, y, r)
    else:
        for r in range(rows):
            _adaptive_avg_row(w, x, y, r)


cdef void _adaptive_max(const Win* w, const anyval* x, anyval* y, int64_t* idx) noexcept nogil:
    cdef int64_t r, rows = w.B * w.OH
    cdef int nt = _par(w.B * w.H * w.W + rows * w.OW)
    if nt > 1:
        for r in prange(rows, num_threads=nt, schedule="static"):
            _adaptive_max_row(w, x, y, idx, r)
    else:
        for r in range(rows):
            _adaptive_max_row(w, x, y, idx, r)


cdef void _adaptive_avg_back(const Win* w, const real* g, real* dx) noexcept nogil:
    cdef int64_t b
    cdef int nt = _par(w.B * w.H * w.W + w.B * w.OH * w.OW) if w.B > 1 else 1
    if nt > 1:
        for b in prange(w.B, num_threads=nt, schedule="static"):
            _adaptive_avg_back_plane(w, g, dx, b)
    else:
        for b in range(w.B):
            _adaptive_avg_back_plane(w, g, dx, b)


cdef int _set_adaptive(Win* w, Array x, int64_t OH, int64_t OW, str op) except -1:
    _set_win(w, x, OH, OW, (1, 1), (1, 1), (0, 0), (1, 1), op)
    if (OH == 0 or OW == 0) and w.B * w.H * w.W:
        return 0
    if w.B and (w.H == 0 or w.W == 0) and OH * OW:
        raise RuntimeError(f"{op}: input planes are empty")
    return 0


def adaptive_avg_pool2d(Array x, int64_t OH, int64_t OW):
    cdef str op = "adaptive_avg_pool2d"
    cdef Win w
    cdef int dt = x.dtype, cdt = _compute_dtype(x.dtype)
    cdef Array xc, y
    _check4(x, op)
    _check_float(x, op)
    _set_adaptive(&w, x, OH, OW, op)
    y = _new4(x, OH, OW, cdt)
    if y.n == 0:
        return _finish(y, dt)
    xc = _prepared(x, cdt)
    with nogil:
        if cdt == TL_FLOAT32:
            _adaptive_avg(&w, <const float*>xc.ptr(), <float*>y.ptr())
        else:
            _adaptive_avg(&w, <const double*>xc.ptr(), <double*>y.ptr())
    return _finish(y, dt)


def adaptive_avg_pool2d_backward(Array g, int64_t H, int64_t W):
    cdef str op = "adaptive_avg_pool2d_backward"
    cdef Win w
    cdef int dt = g.dtype, cdt = _compute_dtype(g.dtype)
    cdef Array gc, dx
    _check4(g, op)
    _check_float(g, op)
    dx = _new4(g, H, W, cdt)
    _set_adaptive(&w, dx, g.shp[2], g.shp[3], op)
    if dx.n == 0:
        return _finish(dx, dt)
    if g.n == 0:
        raise RuntimeError(f"{op}: empty output planes")
    gc = _prepared(g, cdt)
    with nogil:
        if cdt == TL_FLOAT32:
            _adaptive_avg_back(&w, <const float*>gc.ptr(), <float*>dx.ptr())
        else:
            _adaptive_avg_back(&w, <const double*>gc.ptr(), <double*>dx.ptr())
    return _finish(dx, dt)


def adaptive_max_pool2d(Array x, int64_t OH, int64_t OW):
    """(values, int64 indices into each H*W plane) of adaptive max pooling."""
    cdef str op = "adaptive_max_pool2d"
    cdef Win w
    cdef int dt = x.dtype, cdt = _compute_dtype(x.dtype)
    cdef Array xc, y, idx
    cdef int64_t* ip
    _check4(x, op)
    _check_maxable(x.dtype, op)
    _set_adaptive(&w, x, OH, OW, op)
    y = _new4(x, OH, OW, cdt)
    idx = _new4(x, OH, OW, TL_INT64)
    if y.n == 0:
        return _finish(y, dt), idx
    xc = _prepared(x, cdt)
    ip = <int64_t*>idx.ptr()
    with nogil:
        if cdt == TL_FLOAT32:
            _adaptive_max(&w, <const float*>xc.ptr(), <float*>y.ptr(), ip)
        elif cdt == TL_FLOAT64:
            _adaptive_max(&w, <const double*>xc.ptr(), <double*>y.ptr(), ip)
        elif cdt == TL_INT64:
            _adaptive_max(&w, <const int64_t*>xc.ptr(), <int64_t*>y.ptr(), ip)
        elif cdt == TL_INT32:
            _adaptive_max(&w, <const int32_t*>xc.ptr(), <int32_t*>y.ptr(), ip)
        elif cdt == TL_INT16:
            _adaptive_max(&w, <const int16_t*>xc.ptr(), <int16_t*>y.ptr(), ip)
        elif cdt == TL_INT8:
            _adaptive_max(&w, <const int8_t*>xc.ptr(), <int8_t*>y.ptr(), ip)
        else:
            _adaptive_max(&w, <const uint8_t*>xc.ptr(), <uint8_t*>y.ptr(), ip)
    return _finish(y, dt), idx


# ---------------------------------------------------------------------------------------
# One-axis resampling: x seen as (A, n_in, I) -> (A, n_out, I) with
#   nearest:  y[a, j, i] = x[a, i0[j], i]
#   linear:   y[a, j, i] = w0[j] * x[a, i0[j], i] + w1[j] * x[a, i1[j], i]
# and the adjoint (scatter-add) of each.  Upsampling is one pass per spatial dim; the
# reflect / replicate / circular paddings are nearest passes with their index maps.
# ---------------------------------------------------------------------------------------
cdef struct Axis:
    int64_t A, nin, nout, I
    bint linear


cdef void _resample_row(const Axis* ax, const real* x, real* y, const int64_t* i0,
                        const int64_t* i1, const real* w0, const real* w1, int64_t r) noexcept nogil:
    """Output row r = a * nout + j (I elements)."""
    cdef int64_t a = r // ax.nout, j = r % ax.nout, i
    cdef const real* s0 = x + (a * ax.nin + i0[j]) * ax.I
    cdef const real* s1
    cdef real* d = y + r * ax.I
    cdef real c0, c1
    if not ax.linear:
        for i in range(ax.I):
            d[i] = s0[i]
        return
    s1 = x + (a * ax.nin + i1[j]) * ax.I
    c0 = w0[j]
    c1 = w1[j]
    for i in range(ax.I):
        d[i] = s0[i] * c0 + s1[i] * c1


cdef void _resample_back_block(const Axis* ax, const real* g, real* dx, const int64_t* i0,
                               const int64_t* i1, const real* w0, const real* w1, int64_t a,
                               int64_t lo, int64_t hi) noexcept nogil:
    """Columns [lo, hi) of dx[a] accumulate every output row j of g[a], in order of j."""
    cdef int64_t j, i
    cdef const real* s
    cdef real* d0
    cdef real* d1
    cdef real c0, c1
    for j in range(ax.nin):
        d0 = dx + (a * ax.nin + j) * ax.I
        for i in range(lo, hi):
            d0[i] = 0
    for j in range(ax.nout):
        s = g + (a * ax.nout + j) * ax.I
        d0 = dx + (a * ax.nin + i0[j]) * ax.I
        if not ax.linear:
            for i in range(lo, hi):
                d0[i] += s[i]
        else:
            d1 = dx + (a * ax.nin + i1[j]) * ax.I
            c0 = w0[j]
            c1 = w1[j]
            for i in range(lo, hi):
                d0[i] += s[i] * c0
            for i in range(lo, hi):
                d1[i] += s[i] * c1


cdef void _resample(const Axis* ax, const real* x, real* y, const int64_t* i0, const int64_t* i1,
                    const real* w0, const real* w1) noexcept nogil:
    cdef int64_t r, rows = ax.A * ax.nout
    cdef int nt = _par(rows * ax.I)
    if nt > 1:
        for r in prange(rows, num_threads=nt, schedule="static"):
            _resample_row(ax, x, y, i0, i1, w0, w1, r)
    else:
        for r in range(rows):
            _resample_row(ax, x, y, i0, i1, w0, w1, r)


cdef void _resample_back(const Axis* ax, const real* g, real* dx, const int64_t* i0,
                         const int64_t* i1, const real* w0, const real* w1) noexcept nogil:
    """Split over a when there are several, else over blocks of columns: each dx element
    is summed over j in order by one thread either way."""
    cdef int64_t a, blk, nblk, BLK = 256
    cdef int nt = _par(ax.A * (ax.nout + ax.nin) * ax.I)
    if ax.A >= nt:
        if nt > 1:
            for a in prange(ax.A, num_threads=nt, schedule="static"):
                _resample_back_block(ax, g, dx, i0, i1, w0, w1, a, 0, ax.I)
        else:
            for a in range(ax.A):
                _resample_back_block(ax, g, dx, i0, i1, w0, w1, a, 0, ax.I)
        return
    nblk = (ax.I + BLK - 1) // BLK
    for a in range(ax.A):
        for blk in prange(nblk, num_threads=nt, schedule="static"):
            _resample_back_block(ax, g, dx, i0, i1, w0, w1, a, blk * BLK,
                                 ax.I if (blk + 1) * BLK > ax.I else (blk + 1) * BLK)


cdef int _check_map(Array m, int64_t n, int64_t nin, str op) except -1:
    cdef int64_t j
    cdef const int64_t* p
    if m.nd != 1 or m.shp[0] != n or m.dtype != TL_INT64 or not m.contiguous():
        raise RuntimeError(f"{op}: expected a contiguous int64 index map of {n} entries")
    p = <const int64_t*>m.ptr()
    for j in range(n):
        if p[j] < 0 or p[j] >= nin:
            raise IndexError(f"{op}: source index {p[j]} out of range for a dim of size {nin}")
    return 0


cdef Array _weights(Array wts, int64_t n, int cdt, str op):
    if wts.nd != 1 or wts.shp[0] != n or (wts.dtype < TL_FLOAT16 or wts.dtype > TL_FLOAT64):
        raise RuntimeError(f"{op}: expected {n} floating weights")
    return _prepared(wts, cdt)


def resample(Array x, int dim, Array i0, Array i1, Array w0, Array w1, int64_t nout_or_nin,
             bint backward):
    """Resample x along `dim` (nearest when i1 is None: w0, w1 are ignored; else linear).
    Forward: the result has nout_or_nin (= len(i0)) entries along dim.  backward: x is the
    gradient of such a result and the return value the gradient of the source, of size
    nout_or_nin along dim.  Index maps are int64, contiguous, checked against the source."""
    cdef str op = "resample"
    cdef Axis ax
    cdef int dt = x.dtype, cdt = _compute_dtype(x.dtype), d
    cdef Array xc, y, c0 = None, c1 = None
    cdef int64_t shp[16]
    cdef const void* p0 = NULL
    cdef const void* p1 = NULL
    cdef const int64_t* q1
    _check_float(x, op)
    if dim < 0 or dim >= x.nd:
        raise IndexError(f"{op}: dim {dim} out of range for {x.nd} dims")
    ax.A = 1
    ax.I = 1
    for d in range(dim):
        ax.A *= x.shp[d]
    for d in range(dim + 1, x.nd):
        ax.I *= x.shp[d]
    ax.linear = i1 is not None
    if backward:
        ax.nout = x.shp[dim]
        ax.nin = nout_or_nin
    else:
        ax.nin = x.shp[dim]
        ax.nout = nout_or_nin
    if ax.nin < 0 or ax.nout < 0:
        raise RuntimeError(f"{op}: negative size")
    for d in range(x.nd):
        shp[d] = x.shp[d]
    shp[dim] = ax.nin if backward else ax.nout
    y = new_array(x.nd, shp, cdt)
    if y.n == 0:
        return _finish(y, dt)
    if x.n == 0:
        if not backward:
            raise RuntimeError(f"{op}: cannot resample an empty dim to a non-empty one")
        from torchlite._core import array as _A
        _A.fill_(y, 0)
        return _finish(y, dt)
    _check_map(i0, ax.nout, ax.nin, op)
    if ax.linear:
        _check_map(i1, ax.nout, ax.nin, op)
        c0 = _weights(w0, ax.nout, cdt, op)
        c1 = _weights(w1, ax.nout, cdt, op)
        p0 = c0.ptr()
        p1 = c1.ptr()
        q1 = <const int64_t*>i1.ptr()
    else:
        q1 = <const int64_t*>i0.ptr()
    xc = _prepared(x, cdt)
    with nogil:
        if cdt == TL_FLOAT32:
            if backward:
                _resample_back(&ax, <const float*>xc.ptr(), <float*>y.ptr(), <const int64_t*>i0.ptr(),
                               q1, <const float*>p0, <const float*>p1)
            else:
                _resample(&ax, <const float*>xc.ptr(), <float*>y.ptr(), <const int64_t*>i0.ptr(),
                          q1, <const float*>p0, <const float*>p1)
        else:
            if backward:
                _resample_back(&ax, <const double*>xc.ptr(), <double*>y.ptr(), <const int64_t*>i0.ptr(),
                               q1, <const double*>p0, <const double*>p1)
            else:
                _resample(&ax, <const double*>xc.ptr(), <double*>y.ptr(), <const int64_t*>i0.ptr(),
                          q1, <const double*>p0, <const double*>p1)
    return _finish(y, dt)


# ---------------------------------------------------------------------------------------
# Source indices and weights of interpolation (PyTorch's formulas, in the precision PyTorch
# computes them: float for float32 and narrower, double for float64)
# ---------------------------------------------------------------------------------------
def nearest_map(int64_t nin, int64_t nout, double scale, bint exact):
    """int64 source index of each output index, as PyTorch's nearest_idx computes it in
    float: floor(j * s) (exact: floor((j + 0.5) * s)) clamped to nin - 1, with
    s = 1/scale if scale > 0 else nin/nout (plain nearest maps equal sizes and doubling
    directly)."""
    cdef int64_t shp[1]
    cdef Array m
    cdef int64_t* p
    cdef int64_t j, v
    cdef float sf
    shp[0] = nout
    m = new_array(1, shp, TL_INT64)
    p = <int64_t*>m.ptr()
    if scale > 0:
        sf = <float>(1.0 / scale)
    else:
        sf = (<float>nin / <float>nout) if nout else <float>0.0
    for j in range(nout):
        if not exact and nout == nin:
            v = j
        elif not exact and nout == 2 * nin:
            v = j >> 1
        elif exact:
            v = <int64_t>floorf(<float>((j + 0.5) * sf))
        else:
            v = <int64_t>floorf(<float>j * sf)
        p[j] = v if v < nin - 1 else nin - 1
    return m


def linear_map(int64_t nin, int64_t nout, bint align_corners, double scale, bint f64):
    """(i0, i1, w0, w1) of linear interpolation from nin to nout points, as PyTorch's
    compute_source_index_and_lambda: the source coordinate (clamped at 0 without
    align_corners), its floor and the weights, computed in float (double when f64); the
    weights are returned as float64 arrays holding those values."""
    cdef int64_t shp[1]
    cdef Array i0, i1, w0, w1
    cdef int64_t* p0
    cdef int64_t* p1
    cdef double* q0
    cdef double* q1
    cdef int64_t j, k
    cdef double sd, srcd, lamd
    cdef float sf, srcf, lamf
    shp[0] = nout
    i0 = new_array(1, shp, TL_INT64)
    i1 = new_array(1, shp, TL_INT64)
    w0 = new_array(1, shp, TL_FLOAT64)
    w1 = new_array(1, shp, TL_FLOAT64)
    p0 = <int64_t*>i0.ptr(); p1 = <int64_t*>i1.ptr()
    q0 = <double*>w0.ptr(); q1 = <double*>w1.ptr()
    if align_corners:
        sd = (<double>(nin - 1) / (nout - 1)) if nout > 1 else 0.0
        sf = (<float>(nin - 1) / <float>(nout - 1)) if nout > 1 else <float>0.0
    elif scale > 0:
        sd = 1.0 / scale
        sf = <float>(1.0 / scale)
    else:
        sd = (<double>nin / nout) if nout else 0.0
        sf = (<float>nin / <float>nout) if nout else <float>0.0
    for j in range(nout):
        if nin == nout:
            p0[j] = j; p1[j] = j; q0[j] = 1.0; q1[j] = 0.0
            continue
        if f64:
            srcd = sd * j if align_corners else sd * (j + 0.5) - 0.5
            if srcd < 0:
                srcd = 0
            k = <int64_t>floor(srcd)
            if k > nin - 1:
                k = nin - 1
            lamd = srcd - k
            lamd = 0.0 if lamd < 0 else (1.0 if lamd > 1 else lamd)
            q1[j] = lamd
            q0[j] = 1.0 - lamd
        else:
            srcf = sf * <float>j if align_corners else sf * (<float>j + <float>0.5) - <float>0.5
            if srcf < 0:
                srcf = 0
            k = <int64_t>floorf(srcf)
            if k > nin - 1:
                k = nin - 1
            lamf = srcf - <float>k
            lamf = <float>0.0 if lamf < 0 else (<float>1.0 if lamf > 1 else lamf)
            q1[j] = lamf
            q0[j] = <float>(<float>1.0 - lamf)
        p0[j] = k
        p1[j] = k + 1 if k < nin - 1 else k
    return i0, i1, w0, w1
