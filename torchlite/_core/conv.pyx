# Convolution kernels: im2col / col2im over strided 2-d planes (stride, padding, dilation,
# groups; kernels/conv_im2col.h) and the three products of a convolution around the project's
# GEMM (kernels/gemm.h, included here so the GEMM runs inside this module's parallel loops):
#   forward        y[n] = W @ im2col(x[n])                     (+ bias)
#   input grad     dx[n] = col2im(W^T @ g[n])                  (= the transposed convolution)
#   weight grad    dW = sum_n g[n] @ im2col(x[n])^T
# One-dimensional convolutions are two-dimensional ones of height 1 (the caller reshapes).
# The forward's im2col matrix is never materialised: the GEMM packs it block by block
# straight from the images (its pack_b_fn callback, tl_im2col_pack); the input gradient of a
# stride-1 layer that does not widen is the forward of the output gradient with the flipped,
# transposed weight (_input_grad_as_forward).  For small images the forward and input-grad
# GEMMs take a few images side by side (one wider GEMM instead of several narrow ones); a
# 1x1 stride-1 convolution needs no im2col.  A 3x3 stride-1 layer with 16 or more channels on
# both sides runs by Winograd's F(2x2, 3x3) instead (kernels/conv_winograd.h: 2.25x fewer
# multiplies), its input gradient too (as the forward above) and its weight gradient.
#
# Threads: chunks of images are split over threads when there are enough of them (each
# chunk's GEMM runs serially on its thread, with its own buffers; a static split:
# schedule(dynamic) measured several times slower here), otherwise chunks run one after
# the other with a threaded GEMM.  Each output element is computed by the same sequence of
# operations either way (the GEMM's sums do not depend on its tiling, and the chunk size
# depends on the shapes only), and the weight gradient sums fixed blocks of images in a
# fixed order, so results do not depend on the thread count.  float16 and bfloat16 are
# computed in float32.
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from torchlite._core.array cimport (Array, new_array, TL_FLOAT16, TL_BFLOAT16, TL_FLOAT32,
                                    TL_FLOAT64)
from torchlite._core.elementwise cimport cast_array, contiguous_array, copy_into
from torchlite._core.parallel cimport max_threads
from torchlite._core import isa_switch as _isa_switch

from torchlite._core.gemm cimport (tl_gemm_problem, tl_gemm_problem_clear, tl_gemm_kernel, tl_gemm_f32,
                                   tl_gemm_f64, tl_gemm_oom, tl_gemm_one, tl_gemm_install)

cdef extern from "kernels/conv_im2col.h" nogil:
    ctypedef struct tl_conv_geom:
        int64_t N, C, H, W
        int64_t O, KH, KW
        int64_t OH, OW
        int64_t sh, sw, ph, pw, dh, dw
        int64_t G, Cg, Og
        int64_t CKK, L
        int64_t xs[4]
    void tl_im2col_f32(const tl_conv_geom* g, const float* x, float* col, int64_t ldc,
                       int64_t slack)
    void tl_im2col_f64(const tl_conv_geom* g, const double* x, double* col, int64_t ldc,
                       int64_t slack)
    void tl_col2im_f32(const tl_conv_geom* g, const float* col, int64_t ldc, float* dx)
    void tl_col2im_f64(const tl_conv_geom* g, const double* col, int64_t ldc, double* dx)
    ctypedef struct tl_conv_pack_ctx:
        const tl_conv_geom* g
        const void* x
    ctypedef void (*tl_im2col_pack_fn)(const void* ctx, void* dst, int nr, int64_t r0,
                                       int64_t kc, int64_t j0, int64_t nc)
    tl_im2col_pack_fn tl_im2col_pack_f32
    tl_im2col_pack_fn tl_im2col_pack_f64
    int TL_CONV_PACK_MAX_NR
    void tl_conv_transpose_f32(float* dst, int64_t ldd, const float* src, int64_t rs,
                               int64_t cs, int64_t rows, int64_t cols)
    void tl_conv_transpose_f64(double* dst, int64_t ldd, const double* src, int64_t rs,
                               int64_t cs, int64_t rows, int64_t cols)
    bint tl_conv_small(const tl_conv_geom* g)
    int tl_conv_install(int level)

ctypedef tl_conv_geom Geom      # see kernels/conv_im2col.h for the fields

cdef extern from "kernels/conv_winograd.h" nogil:
    bint tl_wino_applies(const tl_conv_geom* g)
    bint tl_wino_fits(const tl_conv_geom* g, int itemsize)
    int tl_wino_forward_f32(const tl_conv_geom* g, const float* x, const float* w,
                            const float* bias, int64_t bstride, float* y, const int64_t* ys,
                            int nthreads)
    int tl_wino_forward_f64(const tl_conv_geom* g, const double* x, const double* w,
                            const double* bias, int64_t bstride, double* y, const int64_t* ys,
                            int nthreads)
    int tl_wino_weight_grad_f32(const tl_conv_geom* g, const float* x, const float* gy,
                                const int64_t* gys, float* dw, int nthreads)
    int tl_wino_weight_grad_f64(const tl_conv_geom* g, const double* x, const double* gy,
                                const int64_t* gys, double* dw, int nthreads)
    int tl_wino_install(int level)


def _install(int level):
    """Install the GEMM, im2col and Winograd kernels of ISA `level`; returns the level
    installed."""
    cdef int a = tl_gemm_install(level), b = tl_conv_install(level), c = tl_wino_install(level)
    return min(a, b, c)

# this module's copy of the GEMM kernels has its own ISA level (tests force each one);
# torchlite._core.set_isa_level does not reach it (conv is not in its _KERNEL_MODULES)
set_isa_level, isa_level = _isa_switch(_install)

ctypedef fused real:
    float
    double

# Multiply-adds below which a whole convolution stays on one thread.
cdef double PAR_MACS = 1 << 18
# Elements of the per-block partial weight gradients the weight-grad pass may allocate.
cdef int64_t WGRAD_PARTIAL_ELEMS = 1 << 22
cdef int64_t WGRAD_MAX_BLOCKS = 16
cdef int64_t WGRAD_MIN_K = 256      # products a weight-grad block sums at least
cdef int64_t SUM_CHUNK = 4096       # elements per parallel chunk of the partial sums
cdef int64_t SLACK = 16             # spare elements after each im2col scratch buffer
cdef int64_t CHUNK_COLS = 768       # columns one GEMM of the forward / input grad aims at
cdef int64_t CHUNK_MIN_COLS = 256   # ... when one image has fewer than this many
cdef int64_t CHUNK_ELEMS = 1 << 21  # elements of one such GEMM's im2col buffer at most
cdef int64_t WGRAD_COLS = 256      # products the weight grad's GEMMs aim to sum at once
                                    # (one k-block of the GEMM; one image from 16x16 on, so
                                    # its output gradient is read in place, not copied)
cdef int64_t WGRAD_COL_ELEMS = 1 << 21   # at most this many elements of its im2col buffer


# ---------------------------------------------------------------------------------------
# Geometry
# ---------------------------------------------------------------------------------------
cdef inline int64_t _col_stride(const Geom* g) noexcept nogil:
    """Elements between the per-thread im2col buffers."""
    return g.CKK * g.L + SLACK


cdef inline int64_t _out_size(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d) noexcept:
    """floor((size + 2p - d(k-1) - 1) / s) + 1, or 0 or less when the kernel does not fit."""
    cdef int64_t span = size + 2 * p - d * (k - 1) - 1
    if span < 0:
        return 0
    return span // s + 1


cdef int _set_geom(Geom* g, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O,
                   int64_t KH, int64_t KW, tuple stride, tuple padding, tuple dilation,
                   int64_t groups, str op) except -1:
    g.N = N; g.C = C; g.H = H; g.W = W; g.O = O; g.KH = KH; g.KW = KW
    g.sh = stride[0]; g.sw = stride[1]
    g.ph = padding[0]; g.pw = padding[1]
    g.dh = dilation[0]; g.dw = dilation[1]
    g.G = groups
    if g.sh < 1 or g.sw < 1:
        raise RuntimeError(f"{op}: non-positive stride is not supported")
    if g.ph < 0 or g.pw < 0:
        raise RuntimeError(f"{op}: negative padding is not supported")
    if g.dh < 1 or g.dw < 1:
        raise RuntimeError(f"{op}: dilation should be greater than zero")
    if KH < 1 or KW < 1:
        raise RuntimeError(f"{op}: kernel size should be greater than zero, got ({KH}, {KW})")
    if groups < 1 or C % groups or O % groups:
        raise RuntimeError(f"{op}: {C} input and {O} output channels do not split into "
                           f"{groups} groups")
    if N < 0 or C < 0 or H < 0 or W < 0 or O < 0:
        raise RuntimeError(f"{op}: negative size")
    g.Cg = C // groups
    g.Og = O // groups
    g.OH = _out_size(H, KH, g.sh, g.ph, g.dh)
    g.OW = _out_size(W, KW, g.sw, g.pw, g.dw)
    if g.OH < 1 or g.OW < 1:
        raise RuntimeError(f"{op}: calculated padded input size per channel: "
                           f"({H + 2 * g.ph} x {W + 2 * g.pw}). Kernel size: "
                           f"({g.dh * (KH - 1) + 1} x {g.dw * (KW - 1) + 1}). Kernel size "
                           f"can't be greater than actual input size")
    g.CKK = g.Cg * KH * KW
    g.L = g.OH * g.OW
    return 0


cdef tuple _pair(object v, str name, str op):
    t = tuple(int(a) for a in v)
    if len(t) != 2:
        raise RuntimeError(f"{op}: expected {name} of 2 values, got {v}")
    return t


cdef int _check_float(Array a, str what, str op) except -1:
    if a.dtype != TL_FLOAT32 and a.dtype != TL_FLOAT64 and a.dtype != TL_FLOAT16 and a.dtype != TL_BFLOAT16:
        raise RuntimeError(f"{op}: {what} must be a floating tensor")
    return 0


cdef Array _compute_copy(Array a, int cdt, bint contiguous):
    """a in the compute dtype cdt (float32 or float64), C-contiguous when asked (a cast keeps
    the input's memory order: a channels_last half-precision weight stays channels_last)."""
    if a.dtype != cdt:
        a = cast_array(a, cdt)
    if contiguous and not a.contiguous():
        return contiguous_array(a)
    return a


cdef inline int _compute_dtype(int dt) noexcept:
    return TL_FLOAT64 if dt == TL_FLOAT64 else TL_FLOAT32


cdef Array _finish(Array r, int dt):
    """The result in the caller's dtype (float16/bfloat16 were computed in float32)."""
    cdef Array out
    if r.dtype == dt:
        return r
    out = new_array(r.nd, r.shp, dt)
    copy_into(out, r)
    return out


# ---------------------------------------------------------------------------------------
# im2col / col2im of one image and one group
# ---------------------------------------------------------------------------------------
cdef inline void _im2col(const real* x, const Geom* g, real* col, int64_t ldc,
                         int64_t slack) noexcept nogil:
    """col's rows are ldc apart; with ldc == L it may be written up to `slack` elements past
    its end (the kernel's fast path)."""
    if real is float:
        tl_im2col_f32(g, x, col, ldc, slack)
    else:
        tl_im2col_f64(g, x, col, ldc, slack)


cdef inline void _col2im(const real* col, const Geom* g, int64_t ldc, real* dx) noexcept nogil:
    if real is float:
        tl_col2im_f32(g, col, ldc, dx)
    else:
        tl_col2im_f64(g, col, ldc, dx)


cdef inline bint _is_pointwise(const Geom* g) noexcept nogil:
    """A 1x1 kernel with stride 1 and no padding: the im2col matrix is the input plane
    itself (when each plane is one run of memory)."""
    return (g.KH == 1 and g.KW == 1 and g.sh == 1 and g.sw == 1 and g.ph == 0 and g.pw == 0
            and g.xs[3] == 1 and (g.H == 1 or g.xs[2] == g.W))


cdef inline void _gemm(const tl_gemm_kernel* kern, int64_t m, int64_t n, int64_t k,
                       const void* a, int64_t rsa, int64_t csa,
                       const void* b, int64_t rsb, int64_t csb,
                       void* c, int64_t rsc, double beta, int nthreads) noexcept nogil:
    """C (m x n, row stride rsc) = A B + beta C."""
    _gemm_bias(kern, m, n, k, a, rsa, csa, b, rsb, csb, c, rsc, beta, NULL, 0, nthreads)


cdef inline void _gemm_bias(const tl_gemm_kernel* kern, int64_t m, int64_t n, int64_t k,
                            const void* a, int64_t rsa, int64_t csa,
                            const void* b, int64_t rsb, int64_t csb,
                            void* c, int64_t rsc, double beta, const void* bias,
                            int64_t bstride, int nthreads) noexcept nogil:
    """C = A B + beta C, or with a bias (one value per row of C, bstride apart; not NULL)
    C = A B + bias, the bias added by the GEMM's store (kernels/gemm.h's addend) rather than
    by a pass over C afterwards."""
    cdef tl_gemm_problem p
    tl_gemm_problem_clear(&p)       # no packed B, no epilogue unless set below
    p.m = m; p.n = n; p.k = k
    p.a = <const char*>a; p.rsa = rsa; p.csa = csa
    p.b = <const char*>b; p.rsb = rsb; p.csb = csb
    p.c = <char*>c; p.rsc = rsc; p.csc = 1
    p.alpha = 1.0; p.beta = beta; p.ialpha = 0; p.ibeta = 0
    if bias != NULL:
        p.addend = <const char*>bias; p.ars = bstride; p.acs = 0; p.beta = 1.0
    tl_gemm_one(kern, &p, nthreads)


cdef inline void _gemm_packing(const tl_gemm_kernel* kern, int64_t m, int64_t n, int64_t k,
                               const void* a, int64_t rsa, const tl_conv_pack_ctx* ctx,
                               tl_im2col_pack_fn pack, void* c, int64_t rsc, const void* bias,
                               int64_t bstride, int nthreads) noexcept nogil:
    """C (m x n, row stride rsc) = A B (+ bias: one value per row, bstride apart; NULL: none),
    with B the im2col matrices of ctx's images, packed block by block straight from them (see
    _packs_im2col)."""
    cdef tl_gemm_problem p
    tl_gemm_problem_clear(&p)       # no packed B, no epilogue unless set below
    p.m = m; p.n = n; p.k = k
    p.a = <const char*>a; p.rsa = rsa; p.csa = 1
    p.b = NULL; p.rsb = 0; p.csb = 0
    p.c = <char*>c; p.rsc = rsc; p.csc = 1
    p.pack_b_fn = pack; p.pack_b_ctx = ctx
    p.alpha = 1.0; p.beta = 0.0; p.ialpha = 0; p.ibeta = 0
    if bias != NULL:
        p.addend = <const char*>bias; p.ars = bstride; p.acs = 0; p.beta = 1.0
    tl_gemm_one(kern, &p, nthreads)


cdef inline bint _packs_im2col(const Geom* g, int64_t ncols, real* dummy) noexcept nogil:
    """Whether the forward GEMM packs its im2col operand straight from the images rather
    than from an im2col buffer: not for pointwise convolutions (no im2col), tiny outputs
    (their im2col has its own table-driven path), or a one-row / one-column product (the
    GEMM's matrix-vector path reads B itself).  Same sums either way."""
    return (not _is_pointwise(g) and not tl_conv_small(g) and g.Og >= 2 and ncols >= 2
            and _kernel(dummy).nr <= TL_CONV_PACK_MAX_NR)


cdef inline tl_im2col_pack_fn _packer(real* dummy) noexcept nogil:
    if real is float:
        return tl_im2col_pack_f32
    else:
        return tl_im2col_pack_f64


cdef inline const tl_gemm_kernel* _kernel(real* dummy) noexcept nogil:
    if real is float:
        return tl_gemm_f32
    else:
        return tl_gemm_f64


# ---------------------------------------------------------------------------------------
# Per-image work
# ---------------------------------------------------------------------------------------
cdef void _forward_image(const Geom* g, int64_t n, const real* x, const real* w,
                         const real* bias, int64_t bstride, real* y, real* col,
                         int nthreads) noexcept nogil:
    """y[n] = W @ im2col(x[n]) (+ bias, added by the GEMM's store) for every group; w is
    C-contiguous (O, CKK)."""
    cdef const tl_gemm_kernel* kern = _kernel(y)
    cdef const real* xg
    cdef const real* bg = NULL
    cdef real* yn = y + n * g.O * g.L
    cdef int64_t grp
    cdef bint direct = _is_pointwise(g), packs = _packs_im2col(g, g.L, y)
    cdef tl_conv_pack_ctx ctx
    ctx.g = g
    for grp in range(g.G):
        xg = x + n * g.xs[0] + grp * g.Cg * g.xs[1]
        if bias != NULL:
            bg = bias + grp * g.Og * bstride
        if packs:
            ctx.x = xg
            _gemm_packing(kern, g.Og, g.L, g.CKK, w + grp * g.Og * g.CKK, g.CKK, &ctx,
                          _packer(y), yn + grp * g.Og * g.L, g.L, bg, bstride, nthreads)
        elif direct:
            _gemm_bias(kern, g.Og, g.L, g.CKK, w + grp * g.Og * g.CKK, g.CKK, 1,
                       xg, g.xs[1], 1, yn + grp * g.Og * g.L, g.L, 0.0, bg, bstride, nthreads)
        else:
            _im2col(xg, g, col, g.L, SLACK)
            _gemm_bias(kern, g.Og, g.L, g.CKK, w + grp * g.Og * g.CKK, g.CKK, 1,
                       col, g.L, 1, yn + grp * g.Og * g.L, g.L, 0.0, bg, bstride, nthreads)


cdef void _input_grad_image(const Geom* g, int64_t n, const real* gy, const int64_t* ys,
                            const real* w, real* dx, real* col, int nthreads) noexcept nogil:
    """dx[n] = col2im(W^T @ gy[n]) for every group; gy is (N, O, L) with element strides
    ys (see _out_strides), dx C-contiguous (N, C, H, W), w C-contiguous (O, CKK)."""
    cdef const tl_gemm_kernel* kern = _kernel(dx)
    cdef int64_t grp, HW = g.H * g.W
    cdef real* dxn = dx + n * g.C * HW
    cdef const real* gyg
    cdef const real* wg
    if _is_pointwise(g):
        for grp in range(g.G):
            _gemm(kern, g.Cg, g.L, g.Og, w + grp * g.Og * g.CKK, 1, g.CKK,
                  gy + n * ys[0] + grp * g.Og * ys[1], ys[1], ys[2], dxn + grp * g.Cg * HW, HW,
                  0.0, nthreads)
        return
    memset(dxn, 0, g.C * HW * sizeof(real))
    for grp in range(g.G):
        gyg = gy + n * ys[0] + grp * g.Og * ys[1]
        wg = w + grp * g.Og * g.CKK
        _gemm(kern, g.CKK, g.L, g.Og, wg, 1, g.CKK, gyg, ys[1], ys[2], col, g.L, 0.0, nthreads)
        _col2im(col, g, g.L, dxn + grp * g.Cg * HW)


cdef void _forward_chunk(const Geom* g, int64_t n0, int64_t nb, const real* x, const real* w,
                         const real* bias, int64_t bstride, real* y, real* col, real* tmp,
                         int nthreads) noexcept nogil:
    """Images n0..n0+nb-1 with one GEMM per group: their im2col matrices side by side in
    col (CKK x nb*L), the product in tmp (Og x nb*L), then copied to y (+ bias).  Each
    output element is the same sum as with one image per GEMM."""
    cdef const tl_gemm_kernel* kern = _kernel(y)
    cdef int64_t ldc = nb * g.L, grp, i, o, l
    cdef real* yo
    cdef const real* t
    cdef real bv
    cdef bint packs = _packs_im2col(g, ldc, y)
    cdef tl_conv_pack_ctx ctx
    ctx.g = g
    if nb == 1:
        _forward_image(g, n0, x, w, bias, bstride, y, col, nthreads)
        return
    for grp in range(g.G):
        if packs:
            ctx.x = x + n0 * g.xs[0] + grp * g.Cg * g.xs[1]
            _gemm_packing(kern, g.Og, ldc, g.CKK, w + grp * g.Og * g.CKK, g.CKK, &ctx,
                          _packer(y), tmp, ldc, NULL, 0, nthreads)
        else:
            for i in range(nb):
                _im2col(x + (n0 + i) * g.xs[0] + grp * g.Cg * g.xs[1], g, col + i * g.L, ldc, 0)
            _gemm(kern, g.Og, ldc, g.CKK, w + grp * g.Og * g.CKK, g.CKK, 1, col, ldc, 1, tmp,
                  ldc, 0.0, nthreads)
        for i in range(nb):
            for o in range(g.Og):
                yo = y + ((n0 + i) * g.O + grp * g.Og + o) * g.L
                t = tmp + o * ldc + i * g.L
                if bias == NULL:
                    for l in range(g.L):
                        yo[l] = t[l]
                else:
                    bv = bias[(grp * g.Og + o) * bstride]
                    for l in range(g.L):
                        yo[l] = t[l] + bv


cdef void _input_grad_chunk(const Geom* g, int64_t n0, int64_t nb, const real* gy,
                            const int64_t* ys, const real* w, real* dx, real* col, real* tmp,
                            int nthreads) noexcept nogil:
    """dx for images n0..n0+nb-1 with one GEMM per group: their output gradients side by
    side in tmp (Og x nb*L), W^T times that in col (CKK x nb*L), then col2im per image."""
    cdef const tl_gemm_kernel* kern = _kernel(dx)
    cdef int64_t ldc = nb * g.L, grp, i, o, l, HW = g.H * g.W
    cdef const real* src
    cdef real* d
    if nb == 1:
        _input_grad_image(g, n0, gy, ys, w, dx, col, nthreads)
        return
    memset(dx + n0 * g.C * HW, 0, nb * g.C * HW * sizeof(real))
    for grp in range(g.G):
        for i in range(nb):
            for o in range(g.Og):
                src = gy + (n0 + i) * ys[0] + (grp * g.Og + o) * ys[1]
                d = tmp + o * ldc + i * g.L
                for l in range(g.L):
                    d[l] = src[l * ys[2]]
        _gemm(kern, g.CKK, ldc, g.Og, w + grp * g.Og * g.CKK, 1, g.CKK, tmp, ldc, 1, col, ldc,
              0.0, nthreads)
        for i in range(nb):
            _col2im(col + i * g.L, g, ldc, dx + (n0 + i) * g.C * HW + grp * g.Cg * HW)


cdef void _weight_grad_images(const Geom* g, int64_t n0, int64_t n1, const real* x,
                              const real* gy, const int64_t* ys, real* dw, int64_t ldw,
                              real* col, int64_t nb, int nthreads) noexcept nogil:
    """dw (O, ldw >= CKK; the first CKK columns) = sum over images n0..n1-1 of
    gy[n] @ im2col(x[n])^T.  Images go nb at a time into one GEMM: their im2col matrices side
    by side in col (ldw x nb*L; the rows past CKK zero, so the GEMM sees whole micro-tiles,
    see conv2d_weight_grad), their output gradients side by side after it (Og x nb*L), so
    the GEMM sums over nb*L products instead of L (small images make tiny per-image GEMMs).
    The chunks depend on the shapes only, so the sums never depend on the threads."""
    cdef const tl_gemm_kernel* kern = _kernel(dw)
    cdef int64_t n, grp, i, m, ldc, o, l
    cdef const real* xg
    cdef const real* gyg
    cdef const real* src
    cdef real* tmp
    cdef real* d
    cdef double beta
    if _is_pointwise(g) and g.L == 1 and n1 > n0:
        # one-pixel planes: all the images' products in one GEMM, k = images
        for grp in range(g.G):
            xg = x + n0 * g.xs[0] + grp * g.Cg * g.xs[1]
            gyg = gy + n0 * ys[0] + grp * g.Og * ys[1]
            _gemm(kern, g.Og, g.CKK, n1 - n0, gyg, ys[1], ys[0], xg, g.xs[0], g.xs[1],
                  dw + grp * g.Og * ldw, ldw, 0.0, nthreads)
        return
    if _is_pointwise(g):
        for n in range(n0, n1):
            beta = 0.0 if n == n0 else 1.0
            for grp in range(g.G):
                xg = x + n * g.xs[0] + grp * g.Cg * g.xs[1]
                gyg = gy + n * ys[0] + grp * g.Og * ys[1]
                _gemm(kern, g.Og, g.CKK, g.L, gyg, ys[1], ys[2], xg, 1, g.xs[1],
                      dw + grp * g.Og * ldw, ldw, beta, nthreads)
        return
    n = n0
    while n < n1:
        m = nb if n + nb <= n1 else n1 - n
        ldc = m * g.L
        tmp = col + ldw * ldc
        beta = 0.0 if n == n0 else 1.0
        for grp in range(g.G):
            if ldw > g.CKK:
                memset(col + g.CKK * ldc, 0, (ldw - g.CKK) * ldc * sizeof(real))
            if m == 1 and ys[2] == 1:
                # one image: its output gradient is already one strided matrix
                _im2col(x + n * g.xs[0] + grp * g.Cg * g.xs[1], g, col, ldc, 0)
                _gemm(kern, g.Og, ldw, ldc, gy + n * ys[0] + grp * g.Og * ys[1], ys[1], 1,
                      col, 1, ldc, dw + grp * g.Og * ldw, ldw, beta, nthreads)
                continue
            for i in range(m):
                _im2col(x + (n + i) * g.xs[0] + grp * g.Cg * g.xs[1], g, col + i * g.L, ldc, 0)
                for o in range(g.Og):
                    src = gy + (n + i) * ys[0] + (grp * g.Og + o) * ys[1]
                    d = tmp + o * ldc + i * g.L
                    for l in range(g.L):
                        d[l] = src[l * ys[2]]
            _gemm(kern, g.Og, ldw, ldc, tmp, ldc, 1, col, 1, ldc, dw + grp * g.Og * ldw, ldw,
                  beta, nthreads)
        n += m


cdef int64_t _wgrad_images(const Geom* g, int64_t ldw) noexcept nogil:
    """Images per weight-grad GEMM: enough for WGRAD_COLS summed products, within N and
    within WGRAD_COL_ELEMS elements of im2col buffer (shapes only, never the threads)."""
    cdef int64_t nb = (WGRAD_COLS + g.L - 1) // g.L
    if nb > g.N:
        nb = g.N
    while nb > 1 and ldw * nb * g.L > WGRAD_COL_ELEMS:
        nb -= 1
    return nb if nb > 0 else 1


# ---------------------------------------------------------------------------------------
# Drivers
# ---------------------------------------------------------------------------------------
cdef int _threads(const Geom* g) noexcept:
    """Threads for a convolution pass: 1 when the whole convolution is too small to share."""
    cdef int nt = max_threads()
    cdef double macs = <double>g.N * g.O * g.CKK * g.L
    if nt < 2 or macs < PAR_MACS * 2:
        return 1
    return nt


cdef inline bint _by_image(int64_t units, int nt) noexcept nogil:
    """Whether to split whole images (blocks) over the threads, rather than each GEMM."""
    return nt > 1 and units >= nt and (units % nt == 0 or units >= 3 * nt)


cdef int64_t _images_per_gemm(const Geom* g) noexcept nogil:
    """Images whose im2col matrices one GEMM takes side by side: enough for about
    CHUNK_COLS columns (small images make narrow GEMMs, which waste their edge micro-tiles
    and repack the weight for little work: a 1x1 feature map of ResNet's last stage would
    repack its 512 x 4608 weight for every image), within CHUNK_ELEMS elements of im2col
    buffer, and a divisor of N, so the chunks split evenly over threads.  Depends on the
    shapes only, never the threads."""
    cdef int64_t nb
    # (a pointwise convolution reads its planes directly, one image per GEMM, unless they
    # are small: 1x1 planes would make each image's product a matrix-vector one; from
    # CHUNK_MIN_COLS columns on a GEMM is wide enough, and one image's product is written
    # and its output gradient read in place, where several images' pass through a copy)
    if g.L >= CHUNK_MIN_COLS or (_is_pointwise(g) and g.L >= 64):
        return 1
    nb = (CHUNK_COLS + g.L - 1) // g.L
    if nb > g.N:
        nb = g.N
    while nb > 1 and (g.N % nb or g.CKK * nb * g.L > CHUNK_ELEMS):
        nb -= 1
    return nb


cdef inline int64_t _chunk_col(const Geom* g, int64_t nb) noexcept nogil:
    """Elements of a chunk's im2col buffer (with slack)."""
    return g.CKK * nb * g.L + SLACK


cdef void* _chunk_scratch(const Geom* g, int64_t nb, int nt, int isz, int64_t* sstride) except NULL:
    """Per thread: an im2col buffer for nb images, then (nb > 1) an Og x nb*L product
    buffer; sstride receives the elements between threads' blocks."""
    cdef int64_t per = _chunk_col(g, nb) + (g.Og * nb * g.L if nb > 1 else 0)
    cdef size_t nbytes = <size_t>per * nt * isz
    cdef void* p = malloc(nbytes)
    if p == NULL:
        raise MemoryError(f"convolution: cannot allocate {nbytes} bytes of im2col buffers")
    sstride[0] = per
    return p


cdef void _reset_oom() noexcept:
    global tl_gemm_oom
    tl_gemm_oom = 0


cdef int _check_oom(str op) except -1:
    if tl_gemm_oom:
        raise MemoryError(f"{op}: out of memory for the GEMM packing buffers")
    return 0


cdef void _run_forward(const Geom* g, int64_t nb, const real* x, const real* w,
                       const real* bias, int64_t bstride, real* y, real* scratch,
                       int64_t sstride, int nt) noexcept nogil:
    """Chunks of nb images; thread t works in scratch + t * sstride (col, then tmp)."""
    cdef int64_t c, nch = (g.N + nb - 1) // nb, cbuf = _chunk_col(g, nb)
    cdef real* s
    cdef int tid
    if _by_image(nch, nt):
        for c in prange(nch, num_threads=nt, schedule="static"):
            tid = threadid()
            s = scratch + tid * sstride
            _forward_chunk(g, c * nb, nb if (c + 1) * nb <= g.N else g.N - c * nb, x, w, bias,
                           bstride, y, s, s + cbuf, 1)
    else:
        for c in range(nch):
            _forward_chunk(g, c * nb, nb if (c + 1) * nb <= g.N else g.N - c * nb, x, w, bias,
                           bstride, y, scratch, scratch + cbuf, nt)


cdef void _run_input_grad(const Geom* g, int64_t nb, const real* gy, const int64_t* ys,
                          const real* w, real* dx, real* scratch, int64_t sstride,
                          int nt) noexcept nogil:
    cdef int64_t c, nch = (g.N + nb - 1) // nb, cbuf = _chunk_col(g, nb)
    cdef real* s
    cdef int tid
    if _by_image(nch, nt):
        for c in prange(nch, num_threads=nt, schedule="static"):
            tid = threadid()
            s = scratch + tid * sstride
            _input_grad_chunk(g, c * nb, nb if (c + 1) * nb <= g.N else g.N - c * nb, gy, ys,
                              w, dx, s, s + cbuf, 1)
    else:
        for c in range(nch):
            _input_grad_chunk(g, c * nb, nb if (c + 1) * nb <= g.N else g.N - c * nb, gy, ys,
                              w, dx, scratch, scratch + cbuf, nt)


cdef void _run_weight_grad(const Geom* g, const real* x, const real* gy, const int64_t* ys,
                           real* dw, real* parts, int64_t nblk, int64_t ldw, real* col, int64_t cstride,
                           int64_t nb, int nt) noexcept nogil:
    """Block b sums images [b*N/nblk, (b+1)*N/nblk) into its partial (O, ldw) (dw itself
    when there is one block and no padding); the partials are then added in block order.
    Thread t's im2col buffer is col + t * cstride."""
    cdef int64_t b, i, nch, rows_per
    cdef int tid
    if nblk == 1 and parts == NULL:
        _weight_grad_images(g, 0, g.N, x, gy, ys, dw, ldw, col, nb, nt)
        return
    if _by_image(nblk, nt):
        for b in prange(nblk, num_threads=nt, schedule="static"):
            tid = threadid()
            _weight_grad_images(g, b * g.N // nblk, (b + 1) * g.N // nblk, x, gy, ys,
                                parts + b * g.O * ldw, ldw, col + tid * cstride, nb, 1)
    else:
        for b in range(nblk):
            _weight_grad_images(g, b * g.N // nblk, (b + 1) * g.N // nblk, x, gy, ys,
                                parts + b * g.O * ldw, ldw, col, nb, nt)
    rows_per = SUM_CHUNK // ldw + 1
    nch = (g.O + rows_per - 1) // rows_per
    for i in prange(nch, num_threads=nt if g.O * ldw >= 65536 else 1, schedule="static"):
        _sum_parts(g, parts, nblk, ldw, dw, i * rows_per,
                   g.O if (i + 1) * rows_per > g.O else (i + 1) * rows_per)


cdef void _sum_parts(const Geom* g, const real* parts, int64_t nblk, int64_t ldw, real* out,
                     int64_t o0, int64_t o1) noexcept nogil:
    """out[o, r] = parts[0][o, r] + parts[1][o, r] + ... (block order) for rows o0..o1-1,
    r < CKK (the partials have ldw columns, out CKK)."""
    cdef int64_t b, o, r
    cdef const real* p
    cdef real* d
    for o in range(o0, o1):
        d = out + o * g.CKK
        p = parts + o * ldw
        for r in range(g.CKK):
            d[r] = p[r]
        for b in range(1, nblk):
            p = parts + (b * g.O + o) * ldw
            for r in range(g.CKK):
                d[r] = d[r] + p[r]


# ---------------------------------------------------------------------------------------
# Python entry points (4-d arrays; the caller reshapes 3-d ones and checks the arguments
# with PyTorch's messages; the checks here keep the kernels in bounds whatever they get)
# ---------------------------------------------------------------------------------------
cdef int _check4(Array a, str what, str op) except -1:
    if a.nd != 4:
        raise RuntimeError(f"{op}: expected a 4-d {what}, got shape {a.shape}")
    _check_float(a, what, op)
    return 0


cdef Array _out_operand(Array gy, int cdt, const Geom* g, int64_t* ys):
    """gy (N, O, OH, OW) in the compute dtype, read as (N, O, L) with element strides ys:
    used as it is when its spatial dims flatten into one unit stride (whatever the batch and
    channel strides), else copied (the GEMM packs other layouts, stride 0 included, more
    slowly than the copy costs)."""
    cdef Array a = gy if gy.dtype == cdt else cast_array(gy, cdt)
    if (g.OW == 1 or a.strd[2] == g.OW * a.strd[3]) and (a.strd[3] if g.OW > 1 else a.strd[2]) == 1:
        ys[0] = a.strd[0]; ys[1] = a.strd[1]; ys[2] = 1
        return a
    a = contiguous_array(a)
    ys[0] = g.O * g.L; ys[1] = g.L; ys[2] = 1
    return a


cdef int _set_strides(Geom* g, Array x) except -1:
    cdef int i
    for i in range(4):
        g.xs[i] = x.strd[i]
    return 0


# ---------------------------------------------------------------------------------------
# Kernel taps that never touch the input
# ---------------------------------------------------------------------------------------
# On small images a padded kernel has taps that fall in the padding for every output
# position: a 3x3 kernel with padding 1 on a 1x1 image only ever uses its centre (ResNet's
# last stage on 32x32 inputs), on a 2x2 image with stride 2 only 2x2 of its 9 taps.  The
# im2col rows of such taps are all zero, and the GEMMs would spend 9x (2.25x) the work on
# them.  The convolution is the same as one with the kernel cut down to the taps in use and
# the padding moved with it, so the three entry points below run that one instead (the
# weight gradient of a tap never used is zero).

cdef object _used_taps(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d):
    """(first, stop, padding) of the taps along one dim that touch the input for some output
    position, with the padding that keeps every window in place; None when all do, or when
    cutting would change the output size (or the arguments are not a valid convolution:
    the full path raises)."""
    cdef int64_t out, t, lo, o, first = -1, last = -1, newp
    if s < 1 or d < 1 or p < 0 or k < 1 or size < 1:
        return None
    out = _out_size(size, k, s, p, d)
    if out < 1:
        return None
    for t in range(k):
        lo = t * d - p                      # the input row of tap t at output 0
        o = 0 if lo >= 0 else (-lo + s - 1) // s
        if o < out and lo + o * s < size:
            if first < 0:
                first = t
            last = t
    if first < 0 or (first == 0 and last == k - 1):
        return None
    newp = p - first * d
    if newp < 0 or _out_size(size, last - first + 1, s, newp, d) != out:
        return None
    return (first, last + 1, newp)


cdef object _cut(int64_t H, int64_t W, int64_t KH, int64_t KW, stride, padding, dilation):
    """((kh0, kh1), (kw0, kw1), new padding) when taps can be cut, else None."""
    try:
        st, pd, dl = _pair(stride, "stride", ""), _pair(padding, "padding", ""), \
            _pair(dilation, "dilation", "")
    except (TypeError, ValueError, RuntimeError):
        return None
    rows = _used_taps(H, KH, st[0], pd[0], dl[0])
    cols = _used_taps(W, KW, st[1], pd[1], dl[1])
    if rows is None and cols is None:
        return None
    rows = rows or (0, KH, pd[0])
    cols = cols or (0, KW, pd[1])
    return (rows[0], rows[1]), (cols[0], cols[1]), (rows[2], cols[2])


cdef Array _cut_weight(Array w, tuple r, tuple c):
    return w.slice(2, r[0], r[1], 1).slice(3, c[0], c[1], 1)


def conv2d_forward(Array x, Array w, Array bias, stride, padding, dilation, int64_t groups,
                   bint channels_last=False):
    """y = conv2d(x, w) + bias: x (N, C, H, W) of any strides, w (O, C/groups, KH, KW),
    bias (O,) or None.  Returns a new (N, O, OH, OW) array of x's dtype, C-contiguous, or
    channels_last (NHWC) when asked (float32 and float64: the Winograd kernels write that
    layout themselves, the others' results are transposed; the caller converts half
    precision's)."""
    if x.nd == 4 and w.nd == 4:
        cut = _cut(x.shp[2], x.shp[3], w.shp[2], w.shp[3], stride, padding, dilation)
        if cut is not None:
            w, padding = _cut_weight(w, cut[0], cut[1]), cut[2]
    return _conv2d_forward(x, w, bias, stride, padding, dilation, groups, channels_last)


def conv2d_input_grad(Array gy, Array w, int64_t H, int64_t W, stride, padding, dilation,
                      int64_t groups, bint channels_last=False):
    """The gradient of conv2d with respect to its (N, C, H, W) input, given the output's
    gradient gy (N, O, OH, OW) and the weight w (O, C/groups, KH, KW): the transposed
    convolution of gy.  H and W pick the input size among those with this output size.
    channels_last: as conv2d_forward's."""
    if w.nd == 4:
        cut = _cut(H, W, w.shp[2], w.shp[3], stride, padding, dilation)
        if cut is not None:
            w, padding = _cut_weight(w, cut[0], cut[1]), cut[2]
    return _conv2d_input_grad(gy, w, H, W, stride, padding, dilation, groups, channels_last)


def conv2d_weight_grad(Array x, Array gy, int64_t KH, int64_t KW, stride, padding, dilation,
                       int64_t groups):
    """The gradient of conv2d with respect to its weight (O, C/groups, KH, KW), given the
    input x (N, C, H, W) and the output's gradient gy (N, O, OH, OW)."""
    cdef Array part, dw
    if x.nd == 4:
        cut = _cut(x.shp[2], x.shp[3], KH, KW, stride, padding, dilation)
        if cut is not None:
            r, c = cut[0], cut[1]
            part = _conv2d_weight_grad(x, gy, r[1] - r[0], c[1] - c[0], stride, cut[2],
                                       dilation, groups)
            from torchlite._core import array as _A
            dw = _A.full((part.shp[0], part.shp[1], KH, KW), 0, part.dtype)
            copy_into(_cut_weight(dw, r, c), part)
            return dw
    return _conv2d_weight_grad(x, gy, KH, KW, stride, padding, dilation, groups)


def _conv2d_forward(Array x, Array w, Array bias, stride, padding, dilation, int64_t groups,
                    bint channels_last=False):
    cdef str op = "conv2d"
    cdef Geom g
    cdef Array xc, wc, bc = None, y
    cdef int dt = x.dtype, cdt = _compute_dtype(x.dtype), nt, err
    cdef void* col = NULL
    cdef int64_t shp[4]
    cdef const char* bp = NULL
    cdef int64_t bst = 0, nb, sstride
    _check4(x, "input", op)
    _check4(w, "weight", op)
    if w.dtype != dt:
        raise RuntimeError(f"{op}: input and weight must have the same dtype")
    _set_geom(&g, x.shp[0], x.shp[1], x.shp[2], x.shp[3], w.shp[0], w.shp[2], w.shp[3],
              _pair(stride, "stride", op), _pair(padding, "padding", op),
              _pair(dilation, "dilation", op), groups, op)
    if w.shp[1] != g.Cg:
        raise RuntimeError(f"{op}: weight of shape {w.shape} does not fit {g.C} input channels "
                           f"in {groups} groups")
    if bias is not None:
        if bias.nd != 1 or bias.shp[0] != g.O or bias.dtype != dt:
            raise RuntimeError(f"{op}: expected a bias of shape ({g.O},) and the input's dtype")
        bc = _compute_copy(bias, cdt, False)
        bp = bc.ptr()
        bst = bc.strd[0]
    shp[0] = g.N; shp[1] = g.O; shp[2] = g.OH; shp[3] = g.OW
    y = new_array(4, shp, cdt)
    if y.n == 0:
        return _finish(y, dt)
    if g.CKK == 0:
        _fill_bias(y, bc)
        return _finish(y, dt)
    xc = _compute_copy(x, cdt, False)
    wc = _compute_copy(w, cdt, True)
    _set_strides(&g, xc)
    nt = _threads(&g)
    if _use_winograd(&g, cdt):
        if channels_last:       # (N, OH, OW, O) memory seen as (N, O, OH, OW)
            shp[1] = g.OH; shp[2] = g.OW; shp[3] = g.O
            y = new_array(4, shp, cdt).permute((0, 3, 1, 2))
        with nogil:
            if cdt == TL_FLOAT32:
                err = tl_wino_forward_f32(&g, <const float*>xc.ptr(), <const float*>wc.ptr(),
                                          <const float*>bp, bst, <float*>y.ptr(), y.strd, nt)
            else:
                err = tl_wino_forward_f64(&g, <const double*>xc.ptr(), <const double*>wc.ptr(),
                                          <const double*>bp, bst, <double*>y.ptr(), y.strd, nt)
        if err:
            raise MemoryError(f"{op}: out of memory for the Winograd scratch buffers")
        return _finish(y, dt)
    nb = _images_per_gemm(&g)
    col = _chunk_scratch(&g, nb, nt, 8 if cdt == TL_FLOAT64 else 4, &sstride)
    _reset_oom()
    with nogil:
        if cdt == TL_FLOAT32:
            _run_forward(&g, nb, <const float*>xc.ptr(), <const float*>wc.ptr(),
                         <const float*>bp, bst, <float*>y.ptr(), <float*>col, sstride, nt)
        else:
            _run_forward(&g, nb, <const double*>xc.ptr(), <const double*>wc.ptr(),
                         <const double*>bp, bst, <double*>y.ptr(), <double*>col, sstride, nt)
    free(col)
    _check_oom(op)
    if channels_last and dt == cdt:
        return _to_nhwc(y, nt)
    return _finish(y, dt)


cdef Array _to_nhwc(Array y, int nt):
    """A channels_last copy of the C-contiguous (N, C, H, W) y: per image, the C x HW plane
    block transposed by the per-ISA register transposes (about 4x faster here than the
    general strided copy, which reads one element per plane)."""
    cdef int64_t shp[4]
    cdef int64_t n, N = y.shp[0], C = y.shp[1], L = y.shp[2] * y.shp[3]
    cdef Array out
    shp[0] = N; shp[1] = y.shp[2]; shp[2] = y.shp[3]; shp[3] = C
    out = new_array(4, shp, y.dtype)
    if nt > N:
        nt = <int>N if N > 0 else 1
    with nogil:
        if y.dtype == TL_FLOAT32:
            for n in prange(N, num_threads=nt, schedule="static"):
                tl_conv_transpose_f32(<float*>out.ptr() + n * C * L, C,
                                      <const float*>y.ptr() + n * C * L, L, 1, C, L)
        else:
            for n in prange(N, num_threads=nt, schedule="static"):
                tl_conv_transpose_f64(<double*>out.ptr() + n * C * L, C,
                                      <const double*>y.ptr() + n * C * L, L, 1, C, L)
    return out.permute((0, 3, 1, 2))


cdef int _fill_bias(Array y, Array b) except -1:
    """y[:, o] = b[o] (zeros without b): a convolution over no input channels."""
    from torchlite._core import array as _A
    if b is None:
        _A.fill_(y, 0)
    else:
        copy_into(y, b.as_strided(y.shape, (0, b.strd[0], 0, 0), b.off))
    return 0


def _conv2d_input_grad(Array gy, Array w, int64_t H, int64_t W, stride, padding, dilation,
                       int64_t groups, bint channels_last=False):
    cdef str op = "conv2d_input_grad"
    cdef Geom g
    cdef int64_t ys[3]
    cdef int64_t nb, sstride
    cdef Array gc, wc, dx
    cdef int dt = gy.dtype, cdt = _compute_dtype(gy.dtype), nt
    cdef void* col = NULL
    cdef int64_t shp[4]
    _check4(gy, "grad_output", op)
    _check4(w, "weight", op)
    if w.dtype != dt:
        raise RuntimeError(f"{op}: grad_output and weight must have the same dtype")
    _set_geom(&g, gy.shp[0], w.shp[1] * groups, H, W, w.shp[0], w.shp[2], w.shp[3],
              _pair(stride, "stride", op), _pair(padding, "padding", op),
              _pair(dilation, "dilation", op), groups, op)
    if gy.shp[1] != g.O or gy.shp[2] != g.OH or gy.shp[3] != g.OW:
        raise RuntimeError(f"{op}: grad_output of shape {gy.shape} does not match the "
                           f"output size ({g.N}, {g.O}, {g.OH}, {g.OW})")
    if _input_grad_as_forward(&g, cdt) and g.N * g.C * H * W > 0:
        return _conv2d_forward(gy, _flipped_transposed(w, &g, cdt), None, (1, 1),
                               (g.dh * (g.KH - 1) - g.ph, g.dw * (g.KW - 1) - g.pw),
                               (g.dh, g.dw), groups, channels_last)
    shp[0] = g.N; shp[1] = g.C; shp[2] = H; shp[3] = W
    dx = new_array(4, shp, cdt)
    if dx.n == 0:
        return _finish(dx, dt)
    if g.O == 0:
        from torchlite._core import array as _A
        _A.fill_(dx, 0)
        return _finish(dx, dt)
    gc = _out_operand(gy, cdt, &g, ys)
    wc = _compute_copy(w, cdt, True)
    # the pointwise path reads the input strides of the (contiguous) result
    g.xs[0] = g.C * H * W; g.xs[1] = H * W; g.xs[2] = W; g.xs[3] = 1
    nt = _threads(&g)
    nb = _images_per_gemm(&g)
    col = _chunk_scratch(&g, nb, nt, 8 if cdt == TL_FLOAT64 else 4, &sstride)
    _reset_oom()
    with nogil:
        if cdt == TL_FLOAT32:
            _run_input_grad(&g, nb, <const float*>gc.ptr(), ys, <const float*>wc.ptr(),
                            <float*>dx.ptr(), <float*>col, sstride, nt)
        else:
            _run_input_grad(&g, nb, <const double*>gc.ptr(), ys, <const double*>wc.ptr(),
                            <double*>dx.ptr(), <double*>col, sstride, nt)
    free(col)
    _check_oom(op)
    if channels_last and dt == cdt:
        return _to_nhwc(dx, nt)
    return _finish(dx, dt)


# Winograd F(2x2, 3x3) (kernels/conv_winograd.h) for 3x3 stride-1 layers with channels enough
# on both sides for its products to be efficient GEMMs (measured: benchmarks/bench_conv.py).
cdef int64_t WINO_MIN_CHANNELS = 16
# set False to compare with the im2col path (benchmarks/bench_conv.py --no-winograd)
use_winograd = True


cdef bint _use_winograd(const Geom* g, int cdt) noexcept:
    return (use_winograd and tl_wino_applies(g) and g.C >= WINO_MIN_CHANNELS
            and g.O >= WINO_MIN_CHANNELS and tl_wino_fits(g, 8 if cdt == TL_FLOAT64 else 4))


cdef int64_t AS_FORWARD_OW = 16


cdef bint _input_grad_as_forward(const Geom* g, int cdt) noexcept:
    """Whether the input gradient runs as the forward convolution of the output gradient
    with the flipped, transposed weight (possible for stride 1 with padding within the
    dilated kernel: dx = conv2d(gy, flip(W)^T, padding d(K-1) - p, dilation d)).  That path
    packs the output gradient's im2col (Og*KH*KW rows) inside the GEMM, where the col2im
    path writes and re-reads Cg*KH*KW rows and runs its GEMM only Og deep, so it is taken
    when the layer does not widen (Cg >= Og) or its GEMM has rows enough to share each
    packed block (Cg >= 64: 64 -> 128 channels at 8x8 measured 1.54 against 1.79 ms,
    128 -> 256 5.7 against 6.3 ms, 32 -> 64 at 16x16 3.0 against 1.7 ms the other way), and
    the output rows are at most AS_FORWARD_OW wide (the packing copies each row of a run
    with one vector load; on wider rows the col2im path measured faster: 64 channels at
    32x32, 11.4 against 14.7 ms).  Both give the same result for any thread count."""
    if (g.sh == 1 and g.sw == 1 and g.ph <= g.dh * (g.KH - 1) and g.pw <= g.dw * (g.KW - 1)
            and _use_winograd(g, cdt)):
        return True     # (the forward it becomes is a Winograd one too: same geometry class)
    return (g.sh == 1 and g.sw == 1 and g.ph <= g.dh * (g.KH - 1) and g.pw <= g.dw * (g.KW - 1)
            and not _is_pointwise(g) and g.Og >= 1 and (g.Cg >= g.Og or g.Cg >= 64) and g.OW <= AS_FORWARD_OW
            and not tl_conv_small(g))


cdef Array _flipped_transposed(Array w, const Geom* g, int cdt):
    """The weight (O, Cg, KH, KW) of the convolution whose forward is this one's input
    gradient: (C, Og, KH, KW) with wt[grp*Cg + c, o, i, j] = w[grp*Og + o, c, KH-1-i, KW-1-j]."""
    cdef Array wc = _compute_copy(w, cdt, True), wt
    cdef int64_t shp[4]
    shp[0] = g.C; shp[1] = g.Og; shp[2] = g.KH; shp[3] = g.KW
    wt = new_array(4, shp, cdt)
    with nogil:
        if cdt == TL_FLOAT32:
            _flip_transpose(g, <const float*>wc.ptr(), <float*>wt.ptr())
        else:
            _flip_transpose(g, <const double*>wc.ptr(), <double*>wt.ptr())
    return wt


cdef void _flip_transpose(const Geom* g, const real* w, real* wt) noexcept nogil:
    cdef int64_t grp, c, o, i, KK = g.KH * g.KW
    cdef const real* src
    cdef real* d
    for grp in range(g.G):
        for c in range(g.Cg):
            for o in range(g.Og):
                src = w + ((grp * g.Og + o) * g.Cg + c) * KK
                d = wt + ((grp * g.Cg + c) * g.Og + o) * KK
                for i in range(KK):
                    d[i] = src[KK - 1 - i]


cdef int64_t _padded_rows(const Geom* g, int cdt) noexcept:
    """The rows of the weight-grad im2col buffer: CKK, or CKK rounded up to whole GEMM
    micro-tile columns when CKK is small and ends in a narrow tile (e.g. 27 -> 48 at
    AVX-512): the zero rows cost less than the narrow tile and its packing."""
    cdef int64_t nr = (tl_gemm_f64 if cdt == TL_FLOAT64 else tl_gemm_f32).nr
    if _is_pointwise(g) or g.CKK % nr == 0 or g.CKK >= 3 * nr:
        return g.CKK
    return (g.CKK + nr - 1) // nr * nr


def _conv2d_weight_grad(Array x, Array gy, int64_t KH, int64_t KW, stride, padding, dilation,
                        int64_t groups):
    cdef str op = "conv2d_weight_grad"
    cdef Geom g
    cdef int64_t ys[3]
    cdef Array xc, gc, dw
    cdef int dt = x.dtype, cdt = _compute_dtype(x.dtype), nt, isz, t
    cdef char* col = NULL
    cdef void* parts = NULL
    cdef int64_t shp[4]
    cdef int64_t nblk, ldw, cstride, nb
    _check4(x, "input", op)
    _check4(gy, "grad_output", op)
    if gy.dtype != dt:
        raise RuntimeError(f"{op}: input and grad_output must have the same dtype")
    _set_geom(&g, x.shp[0], x.shp[1], x.shp[2], x.shp[3], gy.shp[1], KH, KW,
              _pair(stride, "stride", op), _pair(padding, "padding", op),
              _pair(dilation, "dilation", op), groups, op)
    if gy.shp[0] != g.N or gy.shp[2] != g.OH or gy.shp[3] != g.OW:
        raise RuntimeError(f"{op}: grad_output of shape {gy.shape} does not match the "
                           f"output size ({g.N}, {g.O}, {g.OH}, {g.OW})")
    shp[0] = g.O; shp[1] = g.Cg; shp[2] = KH; shp[3] = KW
    dw = new_array(4, shp, cdt)
    if dw.n == 0:
        return _finish(dw, dt)
    if g.N == 0:
        from torchlite._core import array as _A
        _A.fill_(dw, 0)
        return _finish(dw, dt)
    xc = _compute_copy(x, cdt, False)
    if _use_winograd(&g, cdt):
        gc = gy if gy.dtype == cdt else cast_array(gy, cdt)
        _set_strides(&g, xc)
        nt = _threads(&g)
        with nogil:
            if cdt == TL_FLOAT32:
                t = tl_wino_weight_grad_f32(&g, <const float*>xc.ptr(), <const float*>gc.ptr(),
                                            gc.strd, <float*>dw.ptr(), nt)
            else:
                t = tl_wino_weight_grad_f64(&g, <const double*>xc.ptr(), <const double*>gc.ptr(),
                                            gc.strd, <double*>dw.ptr(), nt)
        if t:
            raise MemoryError(f"{op}: out of memory for the Winograd scratch buffers")
        return _finish(dw, dt)
    gc = _out_operand(gy, cdt, &g, ys)
    _set_strides(&g, xc)
    isz = 8 if cdt == TL_FLOAT64 else 4
    ldw = _padded_rows(&g, cdt)
    # a fixed number of blocks (never the thread count): the sums do not depend on threads
    nblk = WGRAD_PARTIAL_ELEMS // (g.O * ldw)
    # and never so many that a block sums fewer than WGRAD_MIN_K products (64 images of a
    # 1x1 plane in 16 blocks made GEMMs 4 deep, slower than one GEMM 64 deep)
    nblk = min(nblk, WGRAD_MAX_BLOCKS, g.N, g.N * g.L // WGRAD_MIN_K)
    if nblk < 1:
        nblk = 1
    nt = _threads(&g)
    nb = _wgrad_images(&g, ldw)
    # per thread: the im2col matrices (ldw x nb*L), then the output gradients (Og x nb*L)
    cstride = (ldw + g.Og) * nb * g.L + SLACK
    col = <char*>malloc(<size_t>cstride * nt * isz)
    if col == NULL:
        raise MemoryError(f"{op}: cannot allocate the im2col buffers")
    if nblk > 1 or ldw != g.CKK:
        parts = malloc(<size_t>nblk * g.O * ldw * isz)
        if parts == NULL:
            free(col)
            raise MemoryError(f"{op}: cannot allocate the partial weight gradients")
    _reset_oom()
    with nogil:
        if cdt == TL_FLOAT32:
            _run_weight_grad(&g, <const float*>xc.ptr(), <const float*>gc.ptr(), ys,
                             <float*>dw.ptr(), <float*>parts, nblk, ldw, <float*>col, cstride, nb, nt)
        else:
            _run_weight_grad(&g, <const double*>xc.ptr(), <const double*>gc.ptr(), ys,
                             <double*>dw.ptr(), <double*>parts, nblk, ldw, <double*>col, cstride, nb,
                             nt)
    free(col)
    free(parts)
    _check_oom(op)
    return _finish(dw, dt)


# ---------------------------------------------------------------------------------------
# unfold / fold (im2col and col2im of whole batches)
# ---------------------------------------------------------------------------------------
cdef void _im2col_batch(const Geom* g, const real* x, real* cols, int nt) noexcept nogil:
    cdef int64_t n
    if nt > 1:
        for n in prange(g.N, num_threads=nt, schedule="static"):
            _im2col(x + n * g.xs[0], g, cols + n * g.CKK * g.L, g.L, 0)
    else:
        for n in range(g.N):
            _im2col(x + n * g.xs[0], g, cols + n * g.CKK * g.L, g.L, 0)


cdef void _col2im_batch(const Geom* g, const real* cols, real* x, int nt) noexcept nogil:
    cdef int64_t n
    if nt > 1:
        for n in prange(g.N, num_threads=nt, schedule="static"):
            _col2im(cols + n * g.CKK * g.L, g, g.L, x + n * g.C * g.H * g.W)
    else:
        for n in range(g.N):
            _col2im(cols + n * g.CKK * g.L, g, g.L, x + n * g.C * g.H * g.W)


cdef int _batch_threads(int64_t N, int64_t work) noexcept:
    cdef int nt = max_threads()
    if nt < 2 or N < 2 or work < 65536:
        return 1
    return nt if N >= nt else <int>N


def im2col(Array x, kernel_size, dilation, padding, stride):
    """unfold: (N, C, H, W) of any strides -> C-contiguous (N, C*KH*KW, OH*OW)."""
    cdef str op = "im2col"
    cdef Geom g
    cdef Array xc, cols
    cdef int dt = x.dtype, cdt = _compute_dtype(x.dtype), nt
    cdef int64_t shp[3]
    _check4(x, "input", op)
    k = _pair(kernel_size, "kernel_size", op)
    _set_geom(&g, x.shp[0], x.shp[1], x.shp[2], x.shp[3], x.shp[1], k[0], k[1],
              _pair(stride, "stride", op), _pair(padding, "padding", op),
              _pair(dilation, "dilation", op), 1, op)
    shp[0] = g.N; shp[1] = g.CKK; shp[2] = g.L
    cols = new_array(3, shp, cdt)
    if cols.n == 0:
        return _finish(cols, dt)
    xc = _compute_copy(x, cdt, False)
    _set_strides(&g, xc)
    nt = _batch_threads(g.N, cols.n)
    with nogil:
        if cdt == TL_FLOAT32:
            _im2col_batch(&g, <const float*>xc.ptr(), <float*>cols.ptr(), nt)
        else:
            _im2col_batch(&g, <const double*>xc.ptr(), <double*>cols.ptr(), nt)
    return _finish(cols, dt)


def col2im(Array cols, output_size, kernel_size, dilation, padding, stride):
    """fold: (N, C*KH*KW, L) -> C-contiguous (N, C, H, W), summing overlapping blocks."""
    cdef str op = "col2im"
    cdef Geom g
    cdef Array cc, x
    cdef int dt = cols.dtype, cdt = _compute_dtype(cols.dtype), nt
    cdef int64_t shp[4]
    if cols.nd != 3:
        raise RuntimeError(f"{op}: expected a 3-d input, got shape {cols.shape}")
    _check_float(cols, "input", op)
    k = _pair(kernel_size, "kernel_size", op)
    osz = _pair(output_size, "output_size", op)
    if k[0] < 1 or k[1] < 1 or cols.shp[1] % (k[0] * k[1]):
        raise RuntimeError(f"{op}: {cols.shp[1]} rows do not split into blocks of {k}")
    _set_geom(&g, cols.shp[0], cols.shp[1] // (k[0] * k[1]), osz[0], osz[1],
              cols.shp[1] // (k[0] * k[1]), k[0], k[1], _pair(stride, "stride", op),
              _pair(padding, "padding", op), _pair(dilation, "dilation", op), 1, op)
    if cols.shp[2] != g.L:
        raise RuntimeError(f"{op}: expected {g.L} blocks, got {cols.shp[2]}")
    shp[0] = g.N; shp[1] = g.C; shp[2] = g.H; shp[3] = g.W
    x = new_array(4, shp, cdt)
    if x.n == 0:
        return _finish(x, dt)
    from torchlite._core import array as _A
    _A.fill_(x, 0)
    cc = _compute_copy(cols, cdt, True)
    nt = _batch_threads(g.N, cc.n)
    with nogil:
        if cdt == TL_FLOAT32:
            _col2im_batch(&g, <const float*>cc.ptr(), <float*>x.ptr(), nt)
        else:
            _col2im_batch(&g, <const double*>cc.ptr(), <double*>x.ptr(), nt)
    return _finish(x, dt)
