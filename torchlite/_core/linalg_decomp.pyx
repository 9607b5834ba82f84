# Matrix decompositions and solvers (torchlite.linalg), LAPACK-free.
#
# Every entry point takes batched arrays (..., m, n) of float32 or float64 with any strides,
# checks them, copies them into a C-contiguous float64 work buffer (float32 is computed in
# double and rounded once at the end), and returns arrays in the input's dtype.  A batch is
# spread over OpenMP threads, one matrix per thread; a lone large matrix (2^27 flops and
# more) splits its GEMMs or column blocks instead.  Every split keeps each element's order of
# operations, so no result depends on the thread count.
#
# The kernels (row-major matrices, so inner loops run over contiguous rows):
#   lu            blocked right-looking LU with partial pivoting (LAPACK's getrf convention:
#                 pivots 1-based, info = first zero pivot, elimination goes on past it);
#                 panels of _NB columns on plain loops, the trailing update by GEMM
#   lu_solve      P L U X = B or (P L U)^T X = B; blocked triangular solves (GEMM couples the
#                 blocks; a transpose is only strides)
#   trsm          the same blocked triangular solve, lower/upper, unit or not
#   cholesky      blocked left-looking A = L L^T from the lower triangle
#   qr            blocked Householder QR on the transposed matrix, compact WY (I - V T V^T)
#                 applied by GEMM to the trailing columns and to Q
#   eigh          Householder tridiagonalisation + implicit QL with shifts (rotations
#                 recorded and applied to the eigenvectors in batches)
#   svd           one-sided (Hestenes) Jacobi on the columns (accurate small singular values),
#                 U completed to an orthonormal basis where values are negligible or full
#                 matrices are asked for
# GEMM is the library's (kernels/gemm.h); the dot / axpy / rotation loops are
# kernels/linalg_vec.h; both are compiled per SIMD level and installed by set_isa_level.
from cython.parallel cimport prange
from libc.math cimport sqrt, fabs, hypot, log, copysign, isfinite
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy, memset
from libc.stdint cimport int64_t, int32_t
from torchlite._core.array cimport (Array, MAX_DIMS, new_array, TL_FLOAT32, TL_FLOAT64,
                                    TL_INT32, TL_COMPLEX64, TL_COMPLEX128)
from torchlite._core.elementwise cimport cast_array, copy_into
from torchlite._core.parallel cimport num_chunks, max_threads

from torchlite._core.gemm cimport (tl_gemm_problem, tl_gemm_problem_clear, tl_gemm_run, tl_gemm_install, tl_cpu_isa_level)

cdef double _EPS = 2.220446049250313e-16
# Block size of the blocked factorisations and triangular solves: the panels run on plain
# loops, everything else in GEMM (kernels/gemm.h, compiled into this module as well)
cdef int64_t _NB = 48


cdef extern from "kernels/eig.h" nogil:
    int tl_eig_one(void* a, int64_t n, void* w, void* v)

cdef extern from "kernels/linalg_vec.h" nogil:
    ctypedef struct tl_lv_table:
        double (*dot)(const double*, const double*, int64_t) noexcept nogil
        void (*axpy)(double, const double*, double*, int64_t) noexcept nogil
        void (*rot)(double*, double*, double, double, int64_t) noexcept nogil
    tl_lv_table tl_lv
    int tl_lv_install(int level)


def _install(int level):
    tl_gemm_install(level)
    return tl_lv_install(level)


from torchlite._core import isa_switch
set_isa_level, isa_level = isa_switch(_install)


cdef void _gemm(int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t rsa,
                int64_t csa, const double* b, int64_t rsb, int64_t csb, double* c, int64_t ldc,
                int nt) noexcept nogil:
    """C (m x n, row-major, rows ldc apart) += alpha * A B, A and B given by their strides."""
    _gemm_s(m, n, k, alpha, a, rsa, csa, b, rsb, csb, 1.0, c, ldc, 1, nt)


cdef void _gemm_s(int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t rsa,
                  int64_t csa, const double* b, int64_t rsb, int64_t csb, double beta, double* c,
                  int64_t rsc, int64_t csc, int nt) noexcept nogil:
    """C = alpha * A B + beta * C, every operand given by its strides (beta 0: C not read)."""
    cdef tl_gemm_problem p
    cdef int64_t zero = 0, i, j
    if m <= 0 or n <= 0:
        return
    if k <= 0:
        if beta != 1.0:
            for i in range(m):
                for j in range(n):
                    c[i * rsc + j * csc] = 0.0 if beta == 0 else beta * c[i * rsc + j * csc]
        return
    tl_gemm_problem_clear(&p)       # no packed B, no epilogue unless set below
    p.m = m; p.n = n; p.k = k
    p.a = <const char*>a; p.rsa = rsa; p.csa = csa
    p.b = <const char*>b; p.rsb = rsb; p.csb = csb
    p.c = <char*>c; p.rsc = rsc; p.csc = csc
    p.alpha = alpha; p.beta = beta; p.ialpha = 0; p.ibeta = 0
    tl_gemm_run(TL_FLOAT64, &p, 1, &zero, &zero, &zero, nt)

# ---------------------------------------------------------------------------------------
# Argument handling
# ---------------------------------------------------------------------------------------
from torchlite._core.array import TORCH_DTYPE_NAMES as _NAMES


cdef int _check_float(Array a, str op) except -1:
    if a.dtype == TL_FLOAT32 or a.dtype == TL_FLOAT64:
        return 0
    if a.dtype in (6, 7):
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {_NAMES[a.dtype]}")
    raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                       f"{_NAMES[a.dtype]}")


cdef int _check_matrix(Array a, str op, bint square) except -1:
    if a.nd < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    _check_float(a, op)
    if square and a.shp[a.nd - 1] != a.shp[a.nd - 2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{a.shp[a.nd - 2]} by {a.shp[a.nd - 1]} matrices")
    return 0


cdef Array _work(Array a):
    """A fresh C-contiguous float64 copy of a (the kernels work in place)."""
    cdef Array w = new_array(a.nd, a.shp, TL_FLOAT64)
    if a.n:
        copy_into(w, a)
    return w


cdef Array _empty(tuple shape, int dtype):
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    for i in range(len(shape)):
        shp[i] = shape[i]
    return new_array(len(shape), shp, dtype)


cdef Array _out(Array w, int dtype):
    """The float64 work result in the caller's dtype."""
    return w if dtype == TL_FLOAT64 else cast_array(w, dtype)


cdef tuple _batch(Array a, int core):
    """The batch dims of a (all but the last `core`)."""
    return tuple([a.shp[i] for i in range(a.nd - core)])


cdef int64_t _nbatch(Array a, int core):
    cdef int64_t nb = 1
    cdef int i
    for i in range(a.nd - core):
        nb *= a.shp[i]
    return nb


cdef inline int _threads(int64_t nb, int64_t cost):
    """Threads for a loop over nb matrices of `cost` flops each."""
    return num_chunks(nb * cost, 1 << 15) if nb > 1 else 1


cdef inline int _inner_threads(int64_t nb, int64_t cost):
    """Threads inside the kernel of a lone matrix (its GEMMs, its row / column splits).  A
    factorisation opens one parallel region per block step, and on a busy machine each
    region can wait a scheduler time slice for its second thread: only matrices of 2^27
    flops and more (n > 512) are split."""
    return num_chunks(cost, 1 << 27) if nb == 1 else 1


# ---------------------------------------------------------------------------------------
# Small vector helpers (4 accumulators: a fixed summation order that still pipelines)
# ---------------------------------------------------------------------------------------
cdef inline double _dot(const double* x, const double* y, int64_t n) noexcept nogil:
    return tl_lv.dot(x, y, n)


cdef inline void _axpy(double a, const double* x, double* y, int64_t n) noexcept nogil:
    """y += a * x"""
    tl_lv.axpy(a, x, y, n)


cdef inline void _swap_rows(double* x, double* y, int64_t n) noexcept nogil:
    cdef int64_t i
    cdef double t
    for i in range(n):
        t = x[i]
        x[i] = y[i]
        y[i] = t


cdef inline void _rotate(double* x, double* y, double c, double s, int64_t n) noexcept nogil:
    """(x, y) <- (c x - s y, s x + c y)"""
    tl_lv.rot(x, y, c, s, n)


cdef void _transpose(const double* a, double* t, int64_t m, int64_t n) noexcept nogil:
    """t (n x m) = a (m x n)^T"""
    cdef int64_t i, j
    for i in range(m):
        for j in range(n):
            t[j * m + i] = a[i * n + j]


# ---------------------------------------------------------------------------------------
# LU with partial pivoting
# ---------------------------------------------------------------------------------------
cdef int32_t _lu_panel(double* a, int64_t m, int64_t w, int64_t lda,
                       int32_t* piv) noexcept nogil:
    """Unblocked LU with partial pivoting of the m x w panel a (rows lda apart); pivots and
    info relative to the panel (1-based)."""
    cdef int64_t k, i, p, kmax = m if m < w else w
    cdef int32_t info = 0
    cdef double big, inv, l
    for k in range(kmax):
        p = k
        big = fabs(a[k * lda + k])
        for i in range(k + 1, m):
            if fabs(a[i * lda + k]) > big:
                big = fabs(a[i * lda + k])
                p = i
        piv[k] = <int32_t>(p + 1)
        if a[p * lda + k] == 0:
            if info == 0:
                info = <int32_t>(k + 1)
            continue
        if p != k:
            _swap_rows(a + k * lda, a + p * lda, w)
        inv = 1.0 / a[k * lda + k]
        for i in range(k + 1, m):
            l = a[i * lda + k] * inv
            a[i * lda + k] = l
            if l != 0:
                _axpy(-l, a + k * lda + k + 1, a + i * lda + k + 1, w - k - 1)
    return info


cdef int32_t _lu(double* a, int64_t m, int64_t n, int32_t* piv, int nt) noexcept nogil:
    """Blocked right-looking LU with partial pivoting of a (m x n, row-major): each panel of
    _NB columns is factored by _lu_panel, its row swaps applied to the other columns, the
    block row of U solved, and the trailing matrix updated by one GEMM on nt threads."""
    cdef int64_t kmax = m if m < n else n, j0, jb, i, p
    cdef int32_t info = 0, pinfo
    j0 = 0
    while j0 < kmax:
        jb = _NB if kmax - j0 > _NB else kmax - j0
        pinfo = _lu_panel(a + j0 * n + j0, m - j0, jb, n, piv + j0)
        if info == 0 and pinfo != 0:
            info = pinfo + <int32_t>j0
        for i in range(j0, j0 + jb):
            piv[i] += <int32_t>j0
            p = piv[i] - 1
            if p != i:
                _swap_rows(a + i * n, a + p * n, j0)
                _swap_rows(a + i * n + j0 + jb, a + p * n + j0 + jb, n - j0 - jb)
        if j0 + jb < n:
            _tri_unblocked(a + j0 * n + j0, n, 1, jb, True, True, a + j0 * n + j0 + jb, n,
                           n - j0 - jb)
            _gemm(m - j0 - jb, n - j0 - jb, jb, -1.0, a + (j0 + jb) * n + j0, n, 1,
                  a + j0 * n + j0 + jb, n, 1, a + (j0 + jb) * n + j0 + jb, n, nt)
        j0 += jb
    return info


cdef void _tri_unblocked(const double* t, int64_t rs, int64_t cs, int64_t n, bint lower,
                         bint unit, double* b, int64_t ldb, int64_t r) noexcept nogil:
    """Solve T X = B in place, T triangular (n x n, element (i, k) at t[i*rs + k*cs], so a
    transpose is only strides), B n x r with rows ldb apart."""
    cdef int64_t i, k
    if lower:
        for i in range(n):
            for k in range(i):
                _axpy(-t[i * rs + k * cs], b + k * ldb, b + i * ldb, r)
            if not unit:
                _scale(b + i * ldb, 1.0 / t[i * rs + i * cs], r)
    else:
        for i in range(n - 1, -1, -1):
            for k in range(i + 1, n):
                _axpy(-t[i * rs + k * cs], b + k * ldb, b + i * ldb, r)
            if not unit:
                _scale(b + i * ldb, 1.0 / t[i * rs + i * cs], r)


cdef void _tri_solve(const double* t, int64_t rs, int64_t cs, int64_t n, bint lower, bint unit,
                     double* b, int64_t ldb, int64_t r, int nt) noexcept nogil:
    """Blocked T X = B: diagonal blocks of _NB rows by _tri_unblocked, the coupling to the
    rows already solved by GEMM (nt threads)."""
    cdef int64_t i0, ib
    if lower:
        i0 = 0
        while i0 < n:
            ib = _NB if n - i0 > _NB else n - i0
            _gemm(ib, r, i0, -1.0, t + i0 * rs, rs, cs, b, ldb, 1, b + i0 * ldb, ldb, nt)
            _tri_unblocked(t + i0 * rs + i0 * cs, rs, cs, ib, True, unit, b + i0 * ldb, ldb, r)
            i0 += ib
    else:
        i0 = ((n - 1) // _NB) * _NB if n > 0 else 0
        while n > 0 and i0 >= 0:
            ib = _NB if n - i0 > _NB else n - i0
            _gemm(ib, r, n - i0 - ib, -1.0, t + i0 * rs + (i0 + ib) * cs, rs, cs,
                  b + (i0 + ib) * ldb, ldb, 1, b + i0 * ldb, ldb, nt)
            _tri_unblocked(t + i0 * rs + i0 * cs, rs, cs, ib, False, unit, b + i0 * ldb, ldb, r)
            i0 -= _NB


cdef void _lu_solve(const double* lu, const int32_t* piv, int64_t n, double* b, int64_t ldb,
                    int64_t r, bint trans, int nt) noexcept nogil:
    """Solve (P L U) X = B (trans: (P L U)^T X = B) in place in B (n x r, rows ldb apart)."""
    cdef int64_t k
    if not trans:
        for k in range(n):
            if piv[k] - 1 != k:
                _swap_rows(b + k * ldb, b + (piv[k] - 1) * ldb, r)
        _tri_solve(lu, n, 1, n, True, True, b, ldb, r, nt)        # L y = P^T b
        _tri_solve(lu, n, 1, n, False, False, b, ldb, r, nt)      # U x = y
    else:
        _tri_solve(lu, 1, n, n, True, False, b, ldb, r, nt)       # U^T y = b
        _tri_solve(lu, 1, n, n, False, True, b, ldb, r, nt)       # L^T z = y
        for k in range(n - 1, -1, -1):                            # x = P z
            if piv[k] - 1 != k:
                _swap_rows(b + k * ldb, b + (piv[k] - 1) * ldb, r)


cdef inline void _scale(double* x, double a, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        x[i] *= a


cdef void _trsm(const double* a, int64_t n, double* b, int64_t ldb, int64_t r, bint upper,
                bint unit, int nt) noexcept nogil:
    """Solve A X = B in place (A triangular n x n, B n x r, rows ldb apart)."""
    _tri_solve(a, n, 1, n, not upper, unit, b, ldb, r, nt)


def lu_factor(Array a, str op="linalg.lu_factor"):
    """(LU, pivots int32, info int32) of a batch of m x n matrices."""
    _check_matrix(a, op, False)
    cdef Array w = _work(a)
    cdef int64_t m = a.shp[a.nd - 2], n = a.shp[a.nd - 1], k = m if m < n else n
    cdef int64_t nb = _nbatch(a, 2), b
    cdef Array piv = _empty(_batch(a, 2) + (k,), TL_INT32)
    cdef Array info = _empty(_batch(a, 2), TL_INT32)
    cdef double* W = <double*>w.ptr()
    cdef int32_t* P = <int32_t*>piv.ptr()
    cdef int32_t* I = <int32_t*>info.ptr()
    cdef int nt = _threads(nb, m * n * k)
    cdef int inner = _inner_threads(nb, m * n * k)
    with nogil:
        if nb == 1:
            I[0] = _lu(W, m, n, P, inner)
        else:
            for b in prange(nb, num_threads=nt, schedule="dynamic"):
                I[b] = _lu(W + b * m * n, m, n, P + b * k, 1)
    return _out(w, a.dtype), piv, info


def lu_solve(Array lu, Array piv, Array rhs, bint trans=False):
    """X with (P L U) X = B (or the transpose), lu (..., n, n), piv (..., n) int32 with values
    in [1, n], rhs (..., n, r), all batch shapes already equal (the caller broadcasts)."""
    cdef int64_t n = lu.shp[lu.nd - 2], r = rhs.shp[rhs.nd - 1], nb = _nbatch(lu, 2), b, i
    if (rhs.nd != lu.nd or piv.nd != lu.nd - 1 or _batch(lu, 2) != _batch(rhs, 2)
            or _batch(piv, 1) != _batch(lu, 2) or lu.shp[lu.nd - 1] != n
            or rhs.shp[rhs.nd - 2] != n or piv.shp[piv.nd - 1] != n):
        raise RuntimeError(f"linalg.lu_solve: incompatible shapes {list(lu.shape)}, "
                           f"{list(piv.shape)}, {list(rhs.shape)}")
    if piv.dtype != TL_INT32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type Int")
    cdef Array p = piv if piv.contiguous() else _copy_int(piv)
    cdef int32_t* P = <int32_t*>p.ptr()
    for i in range(nb * n):       # an out-of-range pivot would read outside B
        if P[i] < 1 or P[i] > n:
            raise RuntimeError(f"linalg.lu_solve: pivots must be in [1, {n}], got {P[i]}")
    cdef Array L = _work(lu)
    cdef Array X = _work(rhs)
    cdef double* LP = <double*>L.ptr()
    cdef double* XP = <double*>X.ptr()
    cdef int nt = _threads(nb, n * n * r)
    cdef int inner = _inner_threads(nb, n * n * r)
    with nogil:
        if nb == 1:
            _lu_solve(LP, P, n, XP, r, r, trans, inner)
        else:
            for b in prange(nb, num_threads=nt, schedule="dynamic"):
                _lu_solve(LP + b * n * n, P + b * n, n, XP + b * n * r, r, r, trans, 1)
    return _out(X, rhs.dtype)


cdef Array _copy_int(Array a):
    cdef Array w = new_array(a.nd, a.shp, a.dtype)
    copy_into(w, a)
    return w


def solve_triangular(Array a, Array rhs, bint upper, bint unitriangular):
    """X with A X = B, A (..., n, n) triangular, B (..., n, r), batch shapes equal."""
    cdef int64_t n = a.shp[a.nd - 2], r = rhs.shp[rhs.nd - 1], nb = _nbatch(a, 2), b
    if (rhs.nd != a.nd or _batch(a, 2) != _batch(rhs, 2)
            or a.shp[a.nd - 1] != n or rhs.shp[rhs.nd - 2] != n):
        raise RuntimeError(f"linalg.solve_triangular: incompatible shapes {list(a.shape)}, "
                           f"{list(rhs.shape)}")
    cdef Array A = _work(a)
    cdef Array X = _work(rhs)
    cdef double* AP = <double*>A.ptr()
    cdef double* XP = <double*>X.ptr()
    cdef int nt = _threads(nb, n * n * r)
    cdef int inner = _inner_threads(nb, n * n * r)
    with nogil:
        if nb == 1:
            _trsm(AP, n, XP, r, r, upper, unitriangular, inner)
        else:
            for b in prange(nb, num_threads=nt, schedule="dynamic"):
                _trsm(AP + b * n * n, n, XP + b * n * r, r, r, upper, unitriangular, 1)
    return _out(X, rhs.dtype)


def lu_det(Array a, str op="linalg.det"):
    """(det, sign, logabsdet) of a batch of square matrices, through LU."""
    _check_matrix(a, op, True)
    cdef Array w = _work(a)
    cdef int64_t n = a.shp[a.nd - 1], nb = _nbatch(a, 2), b
    shape = _batch(a, 2)
    cdef Array det = _empty(shape, TL_FLOAT64)
    cdef Array sign = _empty(shape, TL_FLOAT64)
    cdef Array lad = _empty(shape, TL_FLOAT64)
    cdef double* W = <double*>w.ptr()
    cdef double* D = <double*>det.ptr()
    cdef double* S = <double*>sign.ptr()
    cdef double* L = <double*>lad.ptr()
    cdef int nt = _threads(nb, n * n * n)
    cdef int inner = _inner_threads(nb, n * n * n)
    with nogil:
        if nb == 1:
            _det_one(W, n, D, S, L, inner)
        else:
            for b in prange(nb, num_threads=nt, schedule="dynamic"):
                _det_one(W + b * n * n, n, D + b, S + b, L + b, 1)
    return _out(det, a.dtype), _out(sign, a.dtype), _out(lad, a.dtype)


cdef void _det_one(double* a, int64_t n, double* det, double* sign,
                   double* logabs, int nt) noexcept nogil:
    """det = (-1)^swaps prod(diag U); sign and log|det| tracked apart (no overflow)."""
    cdef int32_t* piv = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int64_t k
    cdef double d = 1.0, s = 1.0, la = 0.0, u
    cdef bint zero = False
    _lu(a, n, n, piv, nt)
    for k in range(n):
        u = a[k * n + k]
        d *= u
        la += log(fabs(u))
        if u < 0:
            s = -s
        elif u == 0:
            zero = True
        if piv[k] - 1 != k:
            s = -s
            d = -d
    det[0] = 0.0 if zero else d
    sign[0] = 0.0 if zero else s
    logabs[0] = la
    free(piv)


# ---------------------------------------------------------------------------------------
# Cholesky
# ---------------------------------------------------------------------------------------
cdef int32_t _chol_unblocked(double* a, int64_t n, int64_t lda) noexcept nogil:
    """Cholesky of the n x n block a (rows lda apart) from its lower triangle, in place."""
    cdef int64_t i, j
    cdef double s, d
    for j in range(n):
        s = a[j * lda + j] - _dot(a + j * lda, a + j * lda, j)
        if not (s > 0):                # NaN fails too
            return <int32_t>(j + 1)
        d = sqrt(s)
        a[j * lda + j] = d
        for i in range(j + 1, n):
            a[i * lda + j] = (a[i * lda + j] - _dot(a + i * lda, a + j * lda, j)) / d
    return 0


cdef int32_t _cholesky(double* a, int64_t n, int nt) noexcept nogil:
    """Lower L with A = L L^T from A's lower triangle, in place (blocked, left-looking: each
    block column is updated by GEMM with the columns before it, its diagonal block factored
    by _chol_unblocked, the rows below solved against it); zeros the upper triangle.
    Returns 0, or the order of the first leading minor that is not positive-definite."""
    cdef int64_t i, j, j0, jb, c
    cdef int32_t info
    cdef double* row
    cdef const double* l11
    j0 = 0
    while j0 < n:
        jb = _NB if n - j0 > _NB else n - j0
        # A[j0:, j0:j0+jb] -= L[j0:, :j0] L[j0:j0+jb, :j0]^T
        _gemm(n - j0, jb, j0, -1.0, a + j0 * n, n, 1, a + j0 * n, 1, n, a + j0 * n + j0, n, nt)
        info = _chol_unblocked(a + j0 * n + j0, jb, n)
        if info != 0:
            return info + <int32_t>j0
        l11 = a + j0 * n + j0
        for i in range(j0 + jb, n):        # row i of L21 = row i of A21 L11^-T
            row = a + i * n + j0
            for c in range(jb):
                row[c] = (row[c] - _dot(row, l11 + c * n, c)) / l11[c * n + c]
        j0 += jb
    for i in range(n):
        for j in range(i + 1, n):
            a[i * n + j] = 0
    return 0


def cholesky(Array a, str op="linalg.cholesky"):
    """(L, info int32) from the lower triangle of a batch of square matrices."""
    _check_matrix(a, op, True)
    cdef Array w = _work(a)
    cdef int64_t n = a.shp[a.nd - 1], nb = _nbatch(a, 2), b
    cdef Array info = _empty(_batch(a, 2), TL_INT32)
    cdef double* W = <double*>w.ptr()
    cdef int32_t* I = <int32_t*>info.ptr()
    cdef int nt = _threads(nb, n * n * n)
    cdef int inner = _inner_threads(nb, n * n * n)
    with nogil:
        if nb == 1:
            I[0] = _cholesky(W, n, inner)
        else:
            for b in prange(nb, num_threads=nt, schedule="dynamic"):
                I[b] = _cholesky(W + b * n * n, n, 1)
    return _out(w, a.dtype), info


# ---------------------------------------------------------------------------------------
# Householder QR
# ---------------------------------------------------------------------------------------
cdef double _householder(double* x, int64_t n) noexcept nogil:
    """Turn x (length n) into v with v[0] = 1 (stored in x[1:]) and return tau, so that
    (I - tau v v^T) x = beta e1; x[0] receives beta.  tau = 0 when x[1:] is already zero."""
    cdef double alpha = x[0], sigma, norm, beta, inv
    if n <= 1:
        return 0.0
    sigma = _dot(x + 1, x + 1, n - 1)
    if sigma == 0:
        return 0.0
    norm = sqrt(alpha * alpha + sigma)
    beta = -copysign(norm, alpha)
    inv = 1.0 / (alpha - beta)
    _scale(x + 1, inv, n - 1)
    x[0] = beta
    return (beta - alpha) / beta


cdef void _apply_reflector(const double* v, double tau, double* y, int64_t n) noexcept nogil:
    """y <- (I - tau v v^T) y, v[0] taken as 1 (v[1:] stored)."""
    cdef double w
    if tau == 0:
        return
    w = y[0] + _dot(v + 1, y + 1, n - 1)
    y[0] -= tau * w
    _axpy(-tau * w, v + 1, y + 1, n - 1)


cdef void _qr_one(const double* a, int64_t m, int64_t n, double* q, int64_t qc, double* r,
                  int64_t rr, bint want_q, int nt) noexcept nogil:
    """Q (m x qc, qc = k or m) and R (rr x n, rr = k or m) of a (m x n): blocked Householder
    QR on at = a^T (row c of at is column c of a).  Each panel of _NB columns is factored
    by plain reflections; its reflectors are gathered into I - V T V^T (compact WY) and
    applied to the trailing columns, and later to Q, by GEMM (nt threads)."""
    cdef int64_t k = m if m < n else n, j0, jb, j, c, i, wmax = (n if n > qc else qc) + 1
    cdef double* at = <double*>malloc((m * n + 1) * sizeof(double))
    cdef double* tau = <double*>malloc((k + 1) * sizeof(double))
    cdef double* vb = <double*>malloc((m * _NB + 1) * sizeof(double))
    cdef double* t = <double*>malloc((_NB * _NB + 1) * sizeof(double))
    cdef double* w = <double*>malloc((_NB * wmax + 1) * sizeof(double))
    _transpose(a, at, m, n)
    j0 = 0
    while j0 < k:
        jb = _NB if k - j0 > _NB else k - j0
        for j in range(j0, j0 + jb):                   # the panel, reflection by reflection
            tau[j] = _householder(at + j * m + j, m - j)
            for c in range(j + 1, j0 + jb):
                _apply_reflector(at + j * m + j, tau[j], at + c * m + j, m - j)
        if j0 + jb < n:                                # trailing columns: A2 -= V T^T V^T A2
            _wy_block(at, m, j0, jb, tau, vb, t)
            _wy_apply(vb, t, m - j0, jb, at + (j0 + jb) * m + j0, 1, m, n - j0 - jb, True,
                      w, nt)
        j0 += jb
    memset(r, 0, rr * n * sizeof(double))
    for c in range(n):
        for i in range(min(c + 1, rr)):
            r[i * n + c] = at[c * m + i]
    if want_q:
        memset(q, 0, m * qc * sizeof(double))
        for i in range(min(m, qc)):
            q[i * qc + i] = 1
        j0 = ((k - 1) // _NB) * _NB if k > 0 else 0
        while k > 0 and j0 >= 0:                       # Q = B_0 B_1 ... I, last block first
            jb = _NB if k - j0 > _NB else k - j0
            _wy_block(at, m, j0, jb, tau, vb, t)
            _wy_apply(vb, t, m - j0, jb, q + j0 * qc + j0, qc, 1, qc - j0, False, w, nt)
            j0 -= _NB
    free(at); free(tau); free(vb); free(t); free(w)


cdef void _wy_block(const double* at, int64_t m, int64_t j0, int64_t jb, const double* tau,
                    double* vb, double* t) noexcept nogil:
    """V ((m - j0) x jb, row-major, unit lower trapezoidal) and the upper triangular T
    (jb x jb) with H_j0 ... H_{j0+jb-1} = I - V T V^T (LAPACK's larft, forward)."""
    cdef int64_t rows = m - j0, i, l, rr, c
    cdef double z
    for rr in range(rows):
        for c in range(jb):
            vb[rr * jb + c] = 0.0 if rr < c else (1.0 if rr == c else at[(j0 + c) * m + j0 + rr])
    for i in range(jb):
        t[i * jb + i] = tau[j0 + i]
        for l in range(i):                 # z_l = V[:, l] . v_i, then T[:i, i] = -tau T[:i,:i] z
            z = 0.0
            for rr in range(i, rows):
                z += vb[rr * jb + l] * vb[rr * jb + i]
            t[l * jb + i] = z
        for l in range(i):
            z = 0.0
            for c in range(l, i):
                z += t[l * jb + c] * t[c * jb + i]
            t[l * jb + i] = z                # row l only reads entries c >= l of column i
        for l in range(i):
            t[l * jb + i] *= -tau[j0 + i]
        for l in range(i + 1, jb):
            t[l * jb + i] = 0.0


cdef void _wy_apply(const double* vb, const double* t, int64_t rows, int64_t jb, double* c,
                    int64_t rsc, int64_t csc, int64_t nc, bint transpose_t, double* w,
                    int nt) noexcept nogil:
    """C (rows x nc, strides rsc/csc) <- (I - V T' V^T) C with T' = T^T (transpose_t) or T."""
    cdef int64_t i, l, j
    cdef double tv
    if nc <= 0:
        return
    _gemm_s(jb, nc, rows, 1.0, vb, 1, jb, c, rsc, csc, 0.0, w, nc, 1, nt)     # W = V^T C
    if transpose_t:                        # W <- T^T W, bottom row first (in place)
        for i in range(jb - 1, -1, -1):
            _scale(w + i * nc, t[i * jb + i], nc)
            for l in range(i):
                tv = t[l * jb + i]
                if tv != 0:
                    _axpy(tv, w + l * nc, w + i * nc, nc)
    else:                                  # W <- T W, top row first (in place)
        for i in range(jb):
            _scale(w + i * nc, t[i * jb + i], nc)
            for l in range(i + 1, jb):
                tv = t[i * jb + l]
                if tv != 0:
                    _axpy(tv, w + l * nc, w + i * nc, nc)
    _gemm_s(rows, nc, jb, -1.0, vb, jb, 1, w, nc, 1, 1.0, c, rsc, csc, nt)   # C -= V W


def qr(Array a, str mode="reduced"):
    """(Q, R) of a batch of m x n matrices; mode 'reduced', 'complete' or 'r' (Q empty)."""
    _check_matrix(a, "linalg.qr", False)
    cdef Array w = _work(a)
    cdef int64_t m = a.shp[a.nd - 2], n = a.shp[a.nd - 1], k = m if m < n else n
    cdef int64_t nb = _nbatch(a, 2), b
    cdef bint want_q = mode != "r"
    cdef int64_t qc = m if mode == "complete" else k
    cdef int64_t rr = m if mode == "complete" else k
    batch = _batch(a, 2)
    cdef Array Q = _empty(batch + (((<object>m, <object>qc)) if want_q else (0,)), TL_FLOAT64)
    cdef Array R = _empty(batch + (rr, n), TL_FLOAT64)
    cdef double* W = <double*>w.ptr()
    cdef double* QP = <double*>Q.ptr()
    cdef double* RP = <double*>R.ptr()
    cdef int nt = _threads(nb, m * n * k)
    cdef int inner = _inner_threads(nb, m * n * k)
    with nogil:
        if nb == 1:
            _qr_one(W, m, n, QP, qc, RP, rr, want_q, inner)
        else:
            for b in prange(nb, num_threads=nt, schedule="dynamic"):
                _qr_one(W + b * m * n, m, n, QP + b * m * qc * want_q, qc, RP + b * rr * n, rr,
                        want_q, 1)
    return _out(Q, a.dtype), _out(R, a.dtype)


# ---------------------------------------------------------------------------------------
# Symmetric eigenproblem
# ---------------------------------------------------------------------------------------
cdef int _tridiagonalise(double* a, int64_t n, double* d, double* e, double* zt,
                         bint vectors, int nt) noexcept nogil:
    """Householder reduction of the symmetric a (full, row-major, destroyed) to tridiagonal
    (d diagonal, e[i] = T[i+1, i]), with zt = Q^T where A = Q T Q^T (rows of zt are the
    columns of Q).  nt > 1: column blocks of zt on nt threads."""
    cdef int64_t j, i, len_, blk, nblk, width
    cdef double tau, kk
    cdef double* v
    cdef double* p = <double*>malloc((n + 1) * sizeof(double))
    cdef double* taus = <double*>malloc((n + 1) * sizeof(double))
    cdef double* vs = <double*>calloc(n * n + 1, sizeof(double))
    if p == NULL or taus == NULL or vs == NULL:
        free(p); free(taus); free(vs)
        return -1
    for j in range(n - 2):
        len_ = n - j - 1
        v = vs + j * n
        for i in range(len_):
            v[i] = a[(j + 1 + i) * n + j]
        tau = _householder(v, len_)
        taus[j] = tau
        e[j] = v[0]
        v[0] = 1.0
        if tau == 0:
            continue
        # A22 <- H A22 H: p = tau A22 v, w = p - (tau/2)(p.v) v, A22 -= v w^T + w v^T
        # (serial: a parallel region per column would cost more than it saves)
        for i in range(len_):
            p[i] = tau * _dot(a + (j + 1 + i) * n + j + 1, v, len_)
        kk = 0.5 * tau * _dot(p, v, len_)
        _axpy(-kk, v, p, len_)
        for i in range(len_):
            _rank2_row(a + (j + 1 + i) * n + j + 1, v, p, i, len_)
    for j in range(n):
        d[j] = a[j * n + j]
    if n >= 2:
        e[n - 2] = a[(n - 1) * n + n - 2]
    if n >= 1:
        e[n - 1] = 0
    if vectors:
        memset(zt, 0, n * n * sizeof(double))
        for i in range(n):
            zt[i * n + i] = 1
        nblk = nt if nt > 1 and n >= 16 * nt else 1
        width = (n + nblk - 1) // nblk
        if nblk > 1:
            for blk in prange(nblk, num_threads=nt, schedule="static"):
                _accumulate_q(vs, taus, n, zt, blk * width, min(n, (blk + 1) * width))
        else:
            _accumulate_q(vs, taus, n, zt, 0, n)
    free(p); free(taus); free(vs)
    return 0


cdef inline void _rank2_row(double* row, const double* v, const double* w, int64_t i,
                            int64_t n) noexcept nogil:
    """Row i of A22 -= v w^T + w v^T."""
    _axpy(-v[i], w, row, n)
    _axpy(-w[i], v, row, n)


cdef void _accumulate_q(const double* vs, const double* taus, int64_t n, double* zt, int64_t c0,
                        int64_t c1) noexcept nogil:
    """Columns c0..c1 of zt = Q^T = H_{n-3} ... H_0 (H_j from the left, in order)."""
    cdef int64_t j, i, len_, w_ = c1 - c0
    cdef const double* v
    cdef double* p
    if w_ <= 0:
        return
    p = <double*>malloc((w_ + 1) * sizeof(double))
    for j in range(n - 2):
        if taus[j] == 0:
            continue
        v = vs + j * n
        len_ = n - j - 1
        memset(p, 0, w_ * sizeof(double))
        for i in range(len_):
            _axpy(v[i], zt + (j + 1 + i) * n + c0, p, w_)
        for i in range(len_):
            _axpy(-taus[j] * v[i], p, zt + (j + 1 + i) * n + c0, w_)
    free(p)


cdef void _apply_rotations(double* zt, int64_t n, const int64_t* ri, const double* cs,
                           const double* ss, int64_t count, int nt) noexcept nogil:
    """The recorded rotations 0..count-1, in order, on the rows ri, ri+1 of zt (the columns
    of Z), split into column blocks on nt threads (each block in the same order)."""
    cdef int64_t blk, nblk = nt if nt > 1 and n * count > (1 << 20) and n >= 32 * nt else 1
    cdef int64_t width = (n + nblk - 1) // nblk
    if count == 0:
        return
    if nblk > 1:
        for blk in prange(nblk, num_threads=nt, schedule="static"):
            _rotations_block(zt, n, ri, cs, ss, count, blk * width, min(n, (blk + 1) * width))
    else:
        _rotations_block(zt, n, ri, cs, ss, count, 0, n)


cdef void _rotations_block(double* zt, int64_t n, const int64_t* ri, const double* cs,
                           const double* ss, int64_t count, int64_t c0,
                           int64_t c1) noexcept nogil:
    cdef int64_t r, i
    if c1 <= c0:
        return
    for r in range(count):
        i = ri[r]
        _rotate(zt + (i + 1) * n + c0, zt + i * n + c0, cs[r], -ss[r], c1 - c0)


cdef int _tridiagonal_ql(double* d, double* e, int64_t n, double* zt, bint vectors,
                         int nt) noexcept nogil:
    """Eigenvalues (in d) and, when asked, eigenvectors (rows of zt, rotated in place) of the
    symmetric tridiagonal (d, e): implicit QL with shifts.  The rotations are recorded and
    applied to zt in batches of up to 64 n (few parallel regions).  Returns -1 when it fails
    to converge."""
    cdef int64_t l, m, i, it, count = 0, cap = 64 * n + 16
    cdef double g, r, s, c, p, f, b, dd
    cdef int64_t* ri = <int64_t*>malloc(cap * sizeof(int64_t))
    cdef double* cs = <double*>malloc(cap * sizeof(double))
    cdef double* ss = <double*>malloc(cap * sizeof(double))
    cdef int rc = 0
    if ri == NULL or cs == NULL or ss == NULL:
        free(ri); free(cs); free(ss)
        return -1
    for l in range(n):
        it = 0
        while True:
            m = l
            while m < n - 1:
                dd = fabs(d[m]) + fabs(d[m + 1])
                if fabs(e[m]) <= _EPS * dd:
                    break
                m += 1
            if m == l:
                break
            it += 1
            if it > 60:
                rc = -1
                break
            if vectors and count + n > cap:
                _apply_rotations(zt, n, ri, cs, ss, count, nt)
                count = 0
            g = (d[l + 1] - d[l]) / (2.0 * e[l])
            r = hypot(g, 1.0)
            g = d[m] - d[l] + e[l] / (g + copysign(r, g))
            s = 1.0
            c = 1.0
            p = 0.0
            i = m - 1
            while i >= l:
                f = s * e[i]
                b = c * e[i]
                r = hypot(f, g)
                e[i + 1] = r
                if r == 0:
                    d[i + 1] -= p
                    e[m] = 0
                    break
                s = f / r
                c = g / r
                g = d[i + 1] - p
                r = (d[i] - g) * s + 2.0 * c * b
                p = s * r
                d[i + 1] = g + p
                g = c * r - b
                if vectors:
                    ri[count] = i
                    cs[count] = c
                    ss[count] = s
                    count += 1
                i -= 1
            if r == 0 and i >= l:
                continue
            d[l] -= p
            e[l] = g
            e[m] = 0
        if rc != 0:
            break
    if vectors and rc == 0:
        _apply_rotations(zt, n, ri, cs, ss, count, nt)
    free(ri); free(cs); free(ss)
    return rc


cdef int _eigh_one(double* a, int64_t n, double* w, double* vout, bint vectors,
                   int nt) noexcept nogil:
    """Ascending eigenvalues w and eigenvectors (columns of vout) of the symmetric a."""
    cdef double* e = <double*>malloc((n + 1) * sizeof(double))
    cdef double* zt = <double*>malloc((n * n + 1) * sizeof(double))
    cdef int64_t i, j, k
    cdef double t
    cdef int rc
    if e == NULL or zt == NULL:
        free(e); free(zt)
        return -1
    rc = _tridiagonalise(a, n, w, e, zt, vectors, nt)
    if rc == 0:
        rc = _tridiagonal_ql(w, e, n, zt, vectors, nt)
    if rc == 0:
        for i in range(n):                  # selection sort, ascending (n swaps at most)
            k = i
            for j in range(i + 1, n):
                if w[j] < w[k]:
                    k = j
            if k != i:
                t = w[i]; w[i] = w[k]; w[k] = t
                if vectors:
                    _swap_rows(zt + i * n, zt + k * n, n)
        if vectors:
            _transpose(zt, vout, n, n)
    free(e); free(zt)
    return rc


def eigh(Array a, bint lower=True, bint vectors=True):
    """(eigenvalues ascending, eigenvectors as columns) of a batch of symmetric matrices,
    read from the lower (or upper) triangle."""
    _check_matrix(a, "linalg.eigh", True)
    cdef Array w = _work(a)
    cdef int64_t n = a.shp[a.nd - 1], nb = _nbatch(a, 2), b, i, j
    batch = _batch(a, 2)
    cdef Array vals = _empty(batch + (n,), TL_FLOAT64)
    cdef Array vecs = _empty(batch + (((<object>n, <object>n)) if vectors else (0,)), TL_FLOAT64)
    cdef Array fail = _empty((nb,), TL_INT32)
    cdef double* W = <double*>w.ptr()
    cdef double* VL = <double*>vals.ptr()
    cdef double* VC = <double*>vecs.ptr()
    cdef int32_t* F = <int32_t*>fail.ptr()
    cdef int nt = _threads(nb, n * n * n)
    cdef int inner = _inner_threads(nb, n * n * n)
    with nogil:
        if nb == 1:
            _symmetrise(W, n, lower)
            F[0] = _eigh_one(W, n, VL, VC, vectors, inner)
        else:
            for b in prange(nb, num_threads=nt, schedule="dynamic"):
                _symmetrise(W + b * n * n, n, lower)
                F[b] = _eigh_one(W + b * n * n, n, VL + b * n, VC + b * n * n * vectors, vectors,
                                 1)
    for b in range(nb):
        if F[b] != 0:
            raise _linalg_error(f"linalg.eigh: The algorithm failed to converge because the input "
                                f"matrix is ill-conditioned or has too many repeated eigenvalues "
                                f"(error code: {b}).")
    return _out(vals, a.dtype), _out(vecs, a.dtype)


def eig(Array a, bint vectors=True):
    """(eigenvalues, eigenvectors as columns, or an empty array) of a batch of square real or
    complex matrices, as complex128 arrays (kernels/eig.h: Hessenberg reduction, shifted QR to
    the complex Schur form, back substitution)."""
    if a.nd < 2:
        raise RuntimeError("linalg.eig: The input tensor A must have at least 2 dimensions.")
    if a.dtype not in (TL_FLOAT32, TL_FLOAT64, TL_COMPLEX64, TL_COMPLEX128):
        if a.dtype in (6, 7):
            raise RuntimeError(f"linalg.eig: Low precision dtypes not supported. Got {_NAMES[a.dtype]}")
        raise RuntimeError(f"linalg.eig: Expected a floating point or complex tensor as input. Got "
                           f"{_NAMES[a.dtype]}")
    if a.shp[a.nd - 1] != a.shp[a.nd - 2]:
        raise RuntimeError(f"linalg.eig: A must be batches of square matrices, but they are "
                           f"{a.shp[a.nd - 2]} by {a.shp[a.nd - 1]} matrices")
    cdef Array w = new_array(a.nd, a.shp, TL_COMPLEX128)
    if a.n:
        copy_into(w, a)
    cdef int64_t n = a.shp[a.nd - 1], nb = _nbatch(a, 2), b
    batch = _batch(a, 2)
    cdef Array vals = _empty(batch + (n,), TL_COMPLEX128)
    cdef Array vecs = _empty(batch + (((<object>n, <object>n)) if vectors else (0,)), TL_COMPLEX128)
    cdef Array fail = _empty((nb,), TL_INT32)
    cdef char* W = <char*>w.ptr()
    cdef char* VL = <char*>vals.ptr()
    cdef char* VC = <char*>vecs.ptr()
    cdef int32_t* F = <int32_t*>fail.ptr()
    cdef int64_t item = 16                  # bytes of a complex128
    cdef int nt = _threads(nb, 10 * n * n * n)
    if n == 0:
        return vals, vecs
    with nogil:
        for b in prange(nb, num_threads=nt, schedule="dynamic"):
            F[b] = tl_eig_one(W + b * n * n * item, n, VL + b * n * item,
                              (VC + b * n * n * item) if vectors else NULL)
    for b in range(nb):
        if F[b] == -2:
            raise MemoryError("linalg.eig: out of memory for the work arrays")
        if F[b] != 0:
            raise _linalg_error(f"linalg.eig: The algorithm failed to converge because the input "
                                f"matrix is ill-conditioned or has too many repeated eigenvalues "
                                f"(error code: {b}).")
    return vals, vecs


cdef void _symmetrise(double* a, int64_t n, bint lower) noexcept nogil:
    cdef int64_t i, j
    for i in range(n):
        for j in range(i + 1, n):
            if lower:
                a[i * n + j] = a[j * n + i]
            else:
                a[j * n + i] = a[i * n + j]


_error_class = RuntimeError


def set_error_class(cls):
    """The exception class raised for numerical failures (torchlite.linalg.LinAlgError)."""
    global _error_class
    _error_class = cls


def _linalg_error(msg):
    return _error_class(msg)


# ---------------------------------------------------------------------------------------
# SVD: one-sided Jacobi
# ---------------------------------------------------------------------------------------
cdef int _jacobi_columns(double* at, int64_t nc, int64_t len_, double* vt) noexcept nogil:
    """Orthogonalise the nc rows of at (each of length len_) by plane rotations, applying the
    same rotations to the rows of vt (nc x nc; NULL: singular values only).  Each sweep
    visits every pair once, block by block (_JB rows a block, so the rows a block pair works
    on stay in cache).  Returns -1 when it does not converge."""
    cdef double* nrm = <double*>malloc((nc + 1) * sizeof(double))
    cdef int64_t sweep, i, bi, bj, nblk = (nc + _JB - 1) // _JB
    cdef int64_t rotations
    # converged pairs: |cos(angle)| below a few ulps per element (rounding of the dot product)
    cdef double tol = _EPS * (len_ if len_ > 4 else 4)
    if nrm == NULL:
        return -1
    cdef double negligible, big
    for sweep in range(80):
        big = 0
        for i in range(nc):
            nrm[i] = _dot(at + i * len_, at + i * len_, len_)
            big = nrm[i] if nrm[i] > big else big
        # a column below eps * the largest is rounding noise: rotating it against the others
        # never meets the relative test, so it is left alone (its singular value is noise and
        # its left vector is completed to an orthonormal basis)
        negligible = big * _EPS * _EPS
        rotations = 0
        for bi in range(nblk):
            for bj in range(bi, nblk):
                rotations += _jacobi_block_pair(at, nc, len_, vt, nrm, tol, negligible,
                                                bi * _JB, bj * _JB)
        if rotations == 0:
            free(nrm)
            return 0
    free(nrm)
    return -1


cdef int64_t _JB = 16


cdef int64_t _jacobi_block_pair(double* at, int64_t nc, int64_t len_, double* vt, double* nrm,
                                double tol, double negligible, int64_t p0,
                                int64_t q0) noexcept nogil:
    """The pairs (p, q), p < q, p in rows p0.., q in rows q0.. (_JB each) of one sweep."""
    cdef int64_t p, q, p1 = min(p0 + _JB, nc), q1 = min(q0 + _JB, nc), done = 0
    cdef double alpha, beta, gamma, zeta, t, c, s
    for p in range(p0, p1):
        for q in range(p + 1 if q0 == p0 else q0, q1):
            alpha = nrm[p]
            beta = nrm[q]
            if alpha <= negligible or beta <= negligible:
                continue
            gamma = _dot(at + p * len_, at + q * len_, len_)
            if fabs(gamma) <= tol * sqrt(alpha * beta):
                continue
            done += 1
            zeta = (beta - alpha) / (2.0 * gamma)
            t = copysign(1.0, zeta) / (fabs(zeta) + sqrt(1.0 + zeta * zeta))
            c = 1.0 / sqrt(1.0 + t * t)
            s = c * t
            _rotate(at + p * len_, at + q * len_, c, s, len_)
            if vt != NULL:
                _rotate(vt + p * nc, vt + q * nc, c, s, nc)
            # the squared norms follow the rotation; where the update cancels (a column
            # shrinking to rounding noise) they are recomputed, never left negative
            nrm[p] = alpha - t * gamma
            nrm[q] = beta + t * gamma
            if nrm[p] < 0.25 * alpha:
                nrm[p] = _dot(at + p * len_, at + p * len_, len_)
            if nrm[q] < 0.25 * beta:
                nrm[q] = _dot(at + q * len_, at + q * len_, len_)
    return done


cdef void _complete_basis(double* ut, int64_t have, int64_t want, int64_t len_) noexcept nogil:
    """Fill rows have..want-1 of ut (orthonormal rows of length len_) with unit vectors
    orthogonal to the rows before them: standard basis vectors, orthogonalised twice."""
    cdef int64_t row = have, cand = 0, i, it
    cdef double nr
    cdef double* x
    while row < want and cand < len_:
        x = ut + row * len_
        memset(x, 0, len_ * sizeof(double))
        x[cand] = 1.0
        cand += 1
        for it in range(2):
            for i in range(row):
                _axpy(-_dot(ut + i * len_, x, len_), ut + i * len_, x, len_)
        nr = sqrt(_dot(x, x, len_))
        if nr > 0.5:
            _scale(x, 1.0 / nr, len_)
            row += 1


cdef int _svd_one(const double* a, int64_t m, int64_t n, double* u, double* s, double* vh,
                  int64_t ucols, int64_t vrows, bint want_uv) noexcept nogil:
    """a = U diag(s) Vh with m >= n: U (m x ucols), s (n), Vh (vrows x n)."""
    cdef double* at = <double*>malloc((m * n + 1) * sizeof(double))
    cdef double* vt = <double*>malloc((n * n + 1) * sizeof(double))
    cdef int64_t* order = <int64_t*>malloc((n + 1) * sizeof(int64_t))
    cdef double* ut
    cdef int64_t i, j, k, nz, tmp
    cdef double nr
    cdef int rc
    if at == NULL or vt == NULL or order == NULL:
        free(at); free(vt); free(order)
        return -1
    for i in range(m * n):
        if not isfinite(a[i]):
            free(at); free(vt); free(order)
            return -2
    _transpose(a, at, m, n)
    memset(vt, 0, n * n * sizeof(double))
    for i in range(n):
        vt[i * n + i] = 1
    rc = _jacobi_columns(at, n, m, vt if want_uv else NULL)
    for i in range(n):
        s[i] = sqrt(_dot(at + i * m, at + i * m, m))
        order[i] = i
    for i in range(n):                        # descending, stable
        k = i
        for j in range(i + 1, n):
            if s[order[j]] > s[order[k]]:
                k = j
        tmp = order[k]
        for j in range(k, i, -1):
            order[j] = order[j - 1]
        order[i] = tmp
    if want_uv:
        ut = <double*>malloc((ucols * m + 1) * sizeof(double))
        nz = 0
        for i in range(n):                    # left vectors of the non-negligible values
            k = order[i]
            if s[k] > s[order[0]] * _EPS and i < ucols:
                memcpy(ut + i * m, at + k * m, m * sizeof(double))
                _scale(ut + i * m, 1.0 / s[k], m)
                nz = i + 1
            else:
                break
        _complete_basis(ut, nz, ucols, m)
        _transpose(ut, u, ucols, m)
        free(ut)
        for i in range(n):
            memcpy(vh + i * n, vt + order[i] * n, n * sizeof(double))
        if vrows > n:
            _complete_basis(vh, n, vrows, n)
    memcpy(at, s, n * sizeof(double))
    for i in range(n):
        s[i] = at[order[i]]
    free(at); free(vt); free(order)
    return rc


def svd(Array a, bint full_matrices=True, bint compute_uv=True, str op="linalg.svd"):
    """(U, S, Vh) of a batch of m x n matrices (U, Vh empty when compute_uv is False)."""
    _check_matrix(a, op, False)
    cdef int64_t m = a.shp[a.nd - 2], n = a.shp[a.nd - 1], k = m if m < n else n
    cdef bint tall = m >= n
    cdef Array w = _work(a)
    cdef Array wt
    cdef int64_t nb = _nbatch(a, 2), b
    batch = _batch(a, 2)
    cdef int64_t ucols = m if full_matrices else k
    cdef int64_t vrows = n if full_matrices else k
    ushape = (<object>m, <object>ucols) if compute_uv else (0,)
    vshape = (<object>vrows, <object>n) if compute_uv else (0,)
    cdef Array U = _empty(batch + ushape, TL_FLOAT64)
    cdef Array S = _empty(batch + (k,), TL_FLOAT64)
    cdef Array V = _empty(batch + vshape, TL_FLOAT64)
    cdef Array fail = _empty((nb,), TL_INT32)
    cdef double* W = <double*>w.ptr()
    cdef double* UP = <double*>U.ptr()
    cdef double* SP = <double*>S.ptr()
    cdef double* VP = <double*>V.ptr()
    cdef int32_t* F = <int32_t*>fail.ptr()
    cdef int nt = _threads(nb, m * n * k * 8)
    cdef bint uv = compute_uv
    with nogil:
        for b in prange(nb, num_threads=nt, schedule="dynamic"):
            if tall:
                F[b] = _svd_one(W + b * m * n, m, n, UP + b * m * ucols * uv, SP + b * k,
                                VP + b * vrows * n * uv, ucols, vrows, uv)
            else:
                F[b] = _svd_wide(W + b * m * n, m, n, UP + b * m * ucols * uv, SP + b * k,
                                 VP + b * vrows * n * uv, ucols, vrows, uv)
    for b in range(nb):
        if F[b] == -2:
            raise _linalg_error(f"{op}: The algorithm failed to converge because the input "
                                f"matrix contained non-finite values.")
        if F[b] != 0:
            raise _linalg_error(f"{op}: The algorithm failed to converge because the input "
                                f"matrix is ill-conditioned or has too many repeated singular "
                                f"values (error code: {b}).")
    return _out(U, a.dtype), _out(S, a.dtype), _out(V, a.dtype)


cdef int _svd_wide(const double* a, int64_t m, int64_t n, double* u, double* s, double* vh,
                   int64_t ucols, int64_t vrows, bint want_uv) noexcept nogil:
    """m < n: a^T = U' S V'^T, so a = V' S U'^T: U = V'^T^T, Vh = U'^T."""
    cdef double* at = <double*>malloc((m * n + 1) * sizeof(double))
    cdef double* u2 = <double*>malloc((n * vrows + 1) * sizeof(double))
    cdef double* vh2 = <double*>malloc((m * ucols + 1) * sizeof(double))
    cdef int rc
    if at == NULL or u2 == NULL or vh2 == NULL:
        free(at); free(u2); free(vh2)
        return -1
    _transpose(a, at, m, n)
    rc = _svd_one(at, n, m, u2, s, vh2, vrows, ucols, want_uv)
    if want_uv:
        _transpose(vh2, u, ucols, m)         # U = Vh'^T   (m x ucols)
        _transpose(u2, vh, n, vrows)         # Vh = U'^T  (vrows x n)
    free(at); free(u2); free(vh2)
    return rc
