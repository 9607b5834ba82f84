# Reductions over any set of dims, argmax/argmin, softmax, scans and the median.
#
# A reduction first brings its input to one of two canonical layouts (see kernels/reduce.h):
#   rows  [R1, A, Rin]  the reduced elements of each output are R1 contiguous runs of Rin
#                       (R1 = 1 but for reductions like NCHW over (0, 2, 3));
#   cols  [A, R, B]     the reduced dim is outside a contiguous run of B outputs, which are
#                       accumulated side by side.
# The dims of size > 1 are sorted by stride and merged where memory allows; when the result
# is not one of the two forms (reduced dims interleaved with kept ones, or no unit stride)
# the input is copied with the reduced dims last.  The reduced extent is cut into pieces of
# fixed size (a function of the shape only), each piece reduces to an 8-byte partial, and
# the partials are folded in a fixed order: the result does not depend on the thread count.
# The output is allocated in the input's memory order, so kernels write it densely.
# Tasks are handed out by OpenMP's guided schedule: big contiguous runs first (one long
# memory stream per thread), smaller ones at the end, so a thread the OS preempts or wakes
# late does not hold up half the work.  Each task writes its own partials, so the schedule
# cannot change the result.
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint64_t, uint8_t, INT64_MIN, INT64_MAX
from libc.stdlib cimport malloc, free
from libc.math cimport sqrt, log, pow, INFINITY, NAN
from torchlite._core.array cimport (Array, MAX_DIMS, new_array, new_array_strided, make_view,
                                    tl_itemsize, TL_BOOL, TL_UINT8, TL_INT8, TL_INT64, TL_FLOAT16,
                                    TL_FLOAT32, TL_FLOAT64)
from torchlite._core.elementwise cimport cast_array, contiguous_array, copy_into
from torchlite._core.parallel cimport num_chunks
from torchlite._core import isa_switch

cdef extern from "kernels/reduce.h" nogil:
    enum:
        TL_RCB, TL_SMCB, TL_SCB
        TL_RS_F32, TL_RS_F64, TL_RS_I64
        TL_RK_SUM, TL_RK_NANSUM, TL_RK_SUMABS, TL_RK_SUMSQ, TL_RK_SUMSQDEV, TL_RK_SUMPOW
        TL_RK_SUMEXPDEV, TL_RK_COUNTNZ, TL_RK_COUNTNOTNAN, TL_RK_PROD, TL_RK_MAX, TL_RK_MIN
        TL_RK_MAXABS, TL_RK_MINABS, TL_RK_ANY, TL_RK_ALL, TL_RK_N
        TL_SCAN_CUMSUM, TL_SCAN_CUMPROD, TL_SCAN_LOGCUMSUMEXP
    ctypedef void (*tl_red_fn)(const char* x, int64_t nrows, int64_t rstride, int64_t n,
                               const double* center, double p, void* out)
    ctypedef void (*tl_arg_fn)(const char* x, int64_t nrows, int64_t rstride, int64_t n,
                               void* val, int64_t* idx)
    ctypedef void (*tl_softmax_rows_fn)(const char* x, char* y, int64_t nrows, int64_t n, int logmode)
    ctypedef void (*tl_softmax_cols_fn)(const char* x, char* y, int64_t R, int64_t ld, int64_t nc,
                                        int logmode)
    ctypedef void (*tl_softmax_back_rows_fn)(const char* y, const char* g, char* dx,
                                             int64_t nrows, int64_t n, int logmode)
    ctypedef void (*tl_scan_fn)(const char* x, char* y, int64_t R, int64_t rs, int64_t cs,
                                int64_t nc)
    ctypedef void (*tl_scanarg_fn)(const char* x, char* y, int64_t* iy, int64_t R, int64_t rs,
                                   int64_t cs, int64_t nc)
    ctypedef void (*tl_median_fn)(const char* x, int64_t nrows, int64_t n, int ignore_nan,
                                  char* val, int64_t* idx)
    tl_red_fn tl_red_rows[16][3]
    tl_red_fn tl_red_cols[16][3]
    tl_arg_fn tl_arg_rows[2][3]
    tl_arg_fn tl_arg_cols[2][3]
    tl_softmax_rows_fn tl_sm_rows[2]
    tl_softmax_cols_fn tl_sm_cols[2]
    tl_softmax_back_rows_fn tl_smb_rows[2]
    tl_scan_fn tl_scan[3][3]
    tl_scanarg_fn tl_scanarg[2][3]
    tl_median_fn tl_median[3]
    int tl_reduce_install(int level)
    void tl_scan_register()

from torchlite._core.array import TORCH_DTYPE_NAMES as _TORCH_NAMES

cdef int64_t GRAIN = 32768        # elements per thread below which a reduction stays serial
cdef int64_t CH_ROWS = 32768      # row elements per piece (rows layout)
cdef int64_t CH_COLS = 512        # rows per piece (cols layout)
cdef int64_t SCAN_ROWS = 16       # contiguous rows a scan runs side by side

# ---------------------------------------------------------------------------------------
# ISA selection (tests force each level; torchlite._core.set_isa_level sets every module)
# ---------------------------------------------------------------------------------------
def _install(int level):
    """Install the reduction kernels of ISA `level` (one the CPU supports); returns it."""
    return tl_reduce_install(level)

tl_scan_register()
set_isa_level, isa_level = isa_switch(_install)


# ---------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------
cdef inline bint _is_float(int d) noexcept nogil:
    return d >= TL_FLOAT16 and d <= TL_FLOAT64

cdef inline int _slot(int d) noexcept nogil:
    """The kernel slot a dtype computes in: float16/bfloat16/float32 -> float32, float64,
    and every integer and bool -> int64."""
    if d == TL_FLOAT64:
        return TL_RS_F64
    if d >= TL_FLOAT16 and d <= TL_FLOAT64:
        return TL_RS_F32
    return TL_RS_I64

cdef int _SLOT_DTYPE[3]
_SLOT_DTYPE[TL_RS_F32] = TL_FLOAT32
_SLOT_DTYPE[TL_RS_F64] = TL_FLOAT64
_SLOT_DTYPE[TL_RS_I64] = TL_INT64

cdef Array _to_slot(Array a):
    """a in its compute dtype (a copy for float16/bfloat16 and the narrow integers).  Complex
    arrays have no slot: the complex sums are taken over their real view above this layer."""
    if a.dtype > TL_FLOAT64:
        raise RuntimeError(f"this reduction is not implemented for complex tensors")
    return cast_array(a, _SLOT_DTYPE[_slot(a.dtype)])


# ---------------------------------------------------------------------------------------
# dims
# ---------------------------------------------------------------------------------------
cdef int _wrap_dim(object dim, int nd) except -100:
    cdef int64_t d
    try:
        d = dim.__index__()
    except AttributeError:
        raise TypeError(f"dim must be an int or a tuple of ints, got {type(dim).__name__}") from None
    cdef int lo = -nd if nd > 0 else -1
    cdef int hi = nd - 1 if nd > 0 else 0
    if d < lo or d > hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], "
                         f"but got {d})")
    if d < 0:
        d += nd if nd > 0 else 1
    return <int>d


cdef int _parse_dims(object dims, int nd, bint* red) except -1:
    """Flag the reduced dims in red[0:nd]: None or an empty tuple/list means every dim.
    Returns the number of dims given (0 for all)."""
    cdef int i, d, cnt = 0
    for i in range(nd):
        red[i] = dims is None
    if dims is None:
        return 0
    if isinstance(dims, (tuple, list)):
        if len(dims) == 0:
            for i in range(nd):
                red[i] = True
            return 0
        for x in dims:
            d = _wrap_dim(x, nd)
            if nd == 0:
                if cnt > 0:
                    raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            elif red[d]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            else:
                red[d] = True
            cnt += 1
        return cnt
    d = _wrap_dim(dims, nd)
    if nd > 0:
        red[d] = True
    return 1


def reduced_dims(object dims, int ndim):
    """The dims (sorted) a reduction over `dims` of an ndim-dim array reduces: every dim for
    None or an empty list; the errors the reductions raise for bad or repeated dims.  The
    CUDA backend plans its launches from it."""
    cdef bint red[MAX_DIMS]
    _parse_dims(dims, ndim, red)
    return tuple([i for i in range(ndim) if red[i]])


# ---------------------------------------------------------------------------------------
# The plan: canonical layout, pieces, output
# ---------------------------------------------------------------------------------------
cdef class _Plan:
    cdef Array src            # what the kernels read (the input, or a copy of it)
    cdef char* base
    cdef bint rows            # rows layout [R1, A, Rin]; else cols [A, R, B]
    cdef int isz
    cdef int dtype            # the compute dtype of the input (float32, float64 or int64)
    cdef int slot             # and its kernel slot
    cdef int nd
    cdef int64_t R            # elements reduced into each output
    cdef int64_t A, sA, sR, B, Rin, R1, s1      # sizes; the strides sA, sR, s1 in bytes
    cdef int64_t nout
    cdef int64_t ch, nch      # piece length (elements of a run for rows, rows for cols); pieces
                              # per output
    cdef int64_t nchi         # rows: pieces per run
    cdef int64_t rpt, ngrp    # rows with one piece per run: rows per task, tasks per run
    cdef int64_t ncb          # cols layout: column blocks
    cdef int64_t po, pk       # the partial of output o, piece k is partial[o * po + k * pk]
    cdef int64_t ntasks
    cdef int nthreads
    cdef bint keepdim
    cdef bint red[MAX_DIMS]
    cdef int64_t kshape[MAX_DIMS]     # output shape with the reduced dims kept as 1
    cdef int64_t order[MAX_DIMS]      # output dims innermost first

    cdef Array alloc(self, int dtype):
        """A new output of dtype, dense in the plan's output order (so kernels write it at
        flat offsets): the keepdim shape, or a view of it without the reduced dims."""
        cdef Array full = new_array_strided(self.nd, self.kshape, self.order, dtype)
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t st[MAX_DIMS]
        cdef int i, k = 0
        if self.keepdim:
            return full
        for i in range(self.nd):
            if not self.red[i]:
                shp[k] = full.shp[i]
                st[k] = full.strd[i]
                k += 1
        return make_view(full, k, shp, st, 0)


cdef void _sort_by_stride(int* idx, int n, const int64_t* strd) noexcept:
    """Insertion sort of dims by stride, largest first (stable)."""
    cdef int i, j, t
    for i in range(1, n):
        j = i
        while j > 0 and strd[idx[j - 1]] < strd[idx[j]]:
            t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t
            j -= 1


cdef bint _canon_strided(_Plan p, Array a) noexcept:
    """Try to read `a` in place: fill p's layout and output order, or return False."""
    cdef int idx[MAX_DIMS]
    cdef int64_t ssz[MAX_DIMS]
    cdef int64_t sst[MAX_DIMS]
    cdef bint sred[MAX_DIMS]
    cdef int n = 0, ns = 0, i, d, k
    cdef int isz = p.isz
    for d in range(a.nd):
        if a.shp[d] != 1:
            idx[n] = d
            n += 1
    _sort_by_stride(idx, n, a.strd)
    for i in range(n):
        d = idx[i]
        if ns > 0 and sred[ns - 1] == p.red[d] and sst[ns - 1] == a.strd[d] * a.shp[d]:
            ssz[ns - 1] *= a.shp[d]
            sst[ns - 1] = a.strd[d]
        else:
            ssz[ns] = a.shp[d]
            sst[ns] = a.strd[d]
            sred[ns] = p.red[d]
            ns += 1
    p.A = 1; p.sA = 0; p.R = 1; p.sR = 0; p.B = 1; p.R1 = 1; p.s1 = 0
    if ns == 0:
        p.rows = False
    elif sst[ns - 1] != 1:
        return False
    elif sred[ns - 1]:
        p.rows = True
        p.Rin = ssz[ns - 1]
        p.sR = isz
        if ns == 2 and not sred[0]:
            p.A = ssz[0]; p.sA = sst[0] * isz
        elif ns == 3 and sred[0] and not sred[1]:
            p.R1 = ssz[0]; p.s1 = sst[0] * isz
            p.A = ssz[1]; p.sA = sst[1] * isz
        elif ns != 1:
            return False
        p.R = p.R1 * p.Rin
    else:
        p.rows = False
        p.B = ssz[ns - 1]
        if ns == 2:
            if sred[0]:
                p.R = ssz[0]; p.sR = sst[0] * isz
            else:
                p.A = ssz[0]; p.sA = sst[0] * isz
        elif ns == 3 and not sred[0] and sred[1]:
            p.A = ssz[0]; p.sA = sst[0] * isz
            p.R = ssz[1]; p.sR = sst[1] * isz
        elif ns != 1:
            return False
    p.src = a
    p.base = a.ptr()
    # output order: the kept dims innermost first as they lie in memory, then the rest
    k = 0
    for i in range(n - 1, -1, -1):
        if not p.red[idx[i]]:
            p.order[k] = idx[i]
            k += 1
    for d in range(a.nd):
        if a.shp[d] == 1 or p.red[d]:
            p.order[k] = d
            k += 1
    return True


cdef bint _reduced_trailing(_Plan p, Array a) noexcept:
    """a is C-contiguous and, size-1 dims aside, every reduced dim follows every kept one."""
    cdef int i
    cdef bint seen = False
    if not a.contiguous():
        return False
    for i in range(a.nd):
        if a.shp[i] == 1:
            continue
        if p.red[i]:
            seen = True
        elif seen:
            return False
    return True


cdef void _canon_trailing(_Plan p, Array a):
    """Rows layout over a C-contiguous array with the kept dims first and the reduced dims
    last: `a` itself when it already is one, else a copy of it."""
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int i, k = 0
    cdef int64_t A = 1, R = 1
    cdef Array view, src
    for i in range(a.nd):
        if not p.red[i]:
            shp[k] = a.shp[i]; st[k] = a.strd[i]; k += 1
            A *= a.shp[i]
    for i in range(a.nd):
        if p.red[i]:
            shp[k] = a.shp[i]; st[k] = a.strd[i]; k += 1
            R *= a.shp[i]
    if _reduced_trailing(p, a):
        src = a
    else:
        view = make_view(a, a.nd, shp, st, a.off)
        src = new_array(a.nd, shp, a.dtype)
        copy_into(src, view)
    p.src = src
    p.base = src.ptr()
    p.R1 = 1; p.s1 = 0
    if R == 1:
        p.rows = False
        p.A = 1; p.sA = 0; p.R = 1; p.sR = 0; p.B = A
    else:
        p.rows = True
        p.A = A; p.sA = R * p.isz; p.R = R; p.Rin = R; p.sR = p.isz; p.B = 1
    k = 0
    for i in range(a.nd - 1, -1, -1):
        if not p.red[i]:
            p.order[k] = i; k += 1
    for i in range(a.nd):
        if p.red[i]:
            p.order[k] = i; k += 1


cdef _Plan _make_plan(Array a, object dims, bint keepdim, bint logical):
    """Plan a reduction of `a` over dims, read in its compute dtype (a copy for float16,
    bfloat16 and the narrow integers).  logical: the reduced elements must be visited in C
    order (argmax over several dims)."""
    cdef _Plan p = _Plan.__new__(_Plan)
    cdef int i
    cdef int64_t R = 1
    a = _to_slot(a)
    p.dtype = a.dtype
    p.slot = _slot(a.dtype)
    p.nd = a.nd
    p.isz = tl_itemsize[a.dtype]
    p.keepdim = keepdim
    _parse_dims(dims, a.nd, p.red)
    for i in range(a.nd):
        p.kshape[i] = 1 if p.red[i] else a.shp[i]
        if p.red[i]:
            R *= a.shp[i]
    if a.n == 0:        # nothing to read: every output is the fold of no pieces
        p.src = a
        p.base = NULL
        p.rows = True
        p.R = R; p.Rin = R; p.R1 = 1
        p.nout = 1
        for i in range(a.nd):
            p.order[a.nd - 1 - i] = i
            p.nout *= p.kshape[i]
        p.A = p.nout; p.B = 1
        p.nch = 0
        p.po = 1; p.pk = 1
        p.ntasks = 0
        p.nthreads = 1
        return p
    if logical or not _canon_strided(p, a):
        _canon_trailing(p, a)
    p.nout = p.A * p.B
    if p.rows:
        p.ch = CH_ROWS
        p.nchi = (p.Rin + CH_ROWS - 1) // CH_ROWS
        p.nch = p.R1 * p.nchi
        if p.nchi > 1:          # long runs: one piece of one row per task
            p.rpt = 1
            p.ntasks = p.A * p.nch
            p.po = p.nch; p.pk = 1
        else:                   # short runs: a group of rows of one outer index per task
            p.rpt = CH_ROWS // p.Rin if p.Rin < CH_ROWS else 1
            p.ngrp = (p.A + p.rpt - 1) // p.rpt
            p.ntasks = p.R1 * p.ngrp
            p.po = 1; p.pk = p.nout
    else:
        p.ch = CH_COLS
        p.nch = (p.R + CH_COLS - 1) // CH_COLS
        p.ncb = (p.B + TL_RCB - 1) // TL_RCB
        p.ntasks = p.A * p.ncb * p.nch
        p.po = 1; p.pk = p.nout
    p.nthreads = num_chunks(a.n, GRAIN)
    return p


# ---------------------------------------------------------------------------------------
# Running the pieces
# ---------------------------------------------------------------------------------------
ctypedef void (*task_fn)(const void* job, int64_t t) noexcept nogil


cdef void _run_tasks(task_fn fn, const void* job, int64_t nt, int th) noexcept nogil:
    """Tasks 0 .. nt-1 of a job, serially or handed to th threads by the guided schedule."""
    cdef int64_t t
    if th <= 1 or nt <= 1:
        for t in range(nt):
            fn(job, t)
    else:
        for t in prange(nt, num_threads=th, schedule="guided"):
            fn(job, t)


cdef inline int64_t _span(int64_t total, int64_t start, int64_t size) noexcept nogil:
    """How many of `size` items from `start` lie below `total`."""
    return total - start if total - start < size else size


cdef inline int64_t _col_block(int64_t u, int64_t ncb, int64_t B, int64_t width, int64_t* a,
                               int64_t* b0) noexcept nogil:
    """Column block u of slabs of B columns cut in ncb blocks of `width`: its slab a[0] and
    first column b0[0]; returns its width."""
    a[0] = u // ncb
    b0[0] = (u - a[0] * ncb) * width
    return _span(B, b0[0], width)


cdef struct Job:
    char* base
    bint rows
    int isz
    int64_t A, sA, R, sR, B, Rin, R1, s1, nout, ch, nch, nchi, rpt, ngrp, ncb
    tl_red_fn red               # a reduction's kernel, its centers, exponent and partials
    const double* center
    double pw
    char* part
    tl_arg_fn arg               # or argmax/argmin's, its partial values and indices
    char* pval
    int64_t* pidx


cdef struct Piece:
    int64_t off                 # byte offset of its first element from the job's base
    int64_t nrows, rstride, n   # the kernel's rows, their byte stride and length
    int64_t q                   # its first partial
    int64_t co                  # its first center (the first output it feeds)


cdef void _job_of(_Plan p, Job* j) noexcept:
    j.base = p.base; j.rows = p.rows; j.isz = p.isz
    j.A = p.A; j.sA = p.sA; j.R = p.R; j.sR = p.sR; j.B = p.B; j.nout = p.nout
    j.Rin = p.Rin; j.R1 = p.R1; j.s1 = p.s1
    j.ch = p.ch; j.nch = p.nch; j.nchi = p.nchi; j.rpt = p.rpt; j.ngrp = p.ngrp; j.ncb = p.ncb


cdef void _piece(const Job* j, int64_t t, Piece* pc) noexcept nogil:
    """The piece of task t.  Rows: piece k = n * nchi + c (outer index n, chunk c of the run);
    with long runs one row a per task, partial[a * nch + k]; else a group of rows,
    partial[n * nout + a].  Cols: piece k = chunk of rows, partial[k * nout + o]."""
    cdef int64_t a, k, a0, b0, nc, r0, n, ci
    if j.rows:
        if j.nchi > 1:
            a = t // j.nch
            k = t - a * j.nch
            n = k // j.nchi
            ci = k - n * j.nchi
            pc.off = a * j.sA + n * j.s1 + ci * j.ch * j.isz
            pc.nrows = 1; pc.rstride = 0; pc.n = _span(j.Rin, ci * j.ch, j.ch)
            pc.q = a * j.nch + k
            pc.co = a
        else:
            n = t // j.ngrp
            a0 = (t - n * j.ngrp) * j.rpt
            pc.off = n * j.s1 + a0 * j.sA
            pc.nrows = _span(j.A, a0, j.rpt); pc.rstride = j.sA; pc.n = j.Rin
            pc.q = n * j.nout + a0
            pc.co = a0
    else:
        k = t % j.nch
        nc = _col_block(t // j.nch, j.ncb, j.B, TL_RCB, &a, &b0)
        r0 = k * j.ch
        pc.off = a * j.sA + r0 * j.sR + b0 * j.isz
        pc.nrows = _span(j.R, r0, j.ch); pc.rstride = j.sR; pc.n = nc
        pc.q = k * j.nout + a * j.B + b0
        pc.co = a * j.B + b0


cdef void _red_task(const void* job, int64_t t) noexcept nogil:
    cdef const Job* j = <const Job*>job
    cdef Piece pc
    _piece(j, t, &pc)
    j.red(j.base + pc.off, pc.nrows, pc.rstride, pc.n,
          (j.center + pc.co) if j.center != NULL else NULL, j.pw, j.part + pc.q * 8)


cdef void _arg_task(const void* job, int64_t t) noexcept nogil:
    """(argmax/argmin plans have one run per output: R1 == 1)"""
    cdef const Job* j = <const Job*>job
    cdef Piece pc
    _piece(j, t, &pc)
    j.arg(j.base + pc.off, pc.nrows, pc.rstride, pc.n, j.pval + pc.q * 8, j.pidx + pc.q)


cdef void _run_red(_Plan p, tl_red_fn fn, const double* center, double pw, char* part) noexcept:
    cdef Job j
    _job_of(p, &j)
    j.red = fn; j.center = center; j.pw = pw; j.part = part
    with nogil:
        _run_tasks(_red_task, &j, p.ntasks, p.nthreads)


cdef void _run_arg(_Plan p, tl_arg_fn fn, char* pval, int64_t* pidx) noexcept:
    cdef Job j
    _job_of(p, &j)
    j.arg = fn; j.pval = pval; j.pidx = pidx
    with nogil:
        _run_tasks(_arg_task, &j, p.ntasks, p.nthreads)


# ---------------------------------------------------------------------------------------
# Folding the partials
# ---------------------------------------------------------------------------------------
cdef enum:
    C_ADD = 0
    C_MUL = 1
    C_MAX = 2
    C_MIN = 3

cdef enum:
    POST_NONE = 0
    POST_SQRT = 1
    POST_LOG_CENTER = 2     # log(v) + center (logsumexp)
    POST_POW_INV = 3        # v ** (1 / p) (vector norms)
    POST_DIV_CENTER = 4     # v / center (nanmean)

cdef int _kind_comb[16]
cdef double _kind_ident[16]
for _k, _c, _i in ((TL_RK_SUM, C_ADD, 0.0), (TL_RK_NANSUM, C_ADD, 0.0), (TL_RK_SUMABS, C_ADD, 0.0),
                   (TL_RK_SUMSQ, C_ADD, 0.0), (TL_RK_SUMSQDEV, C_ADD, 0.0),
                   (TL_RK_SUMPOW, C_ADD, 0.0), (TL_RK_SUMEXPDEV, C_ADD, 0.0),
                   (TL_RK_COUNTNZ, C_ADD, 0.0), (TL_RK_COUNTNOTNAN, C_ADD, 0.0),
                   (TL_RK_PROD, C_MUL, 1.0), (TL_RK_MAX, C_MAX, -INFINITY),
                   (TL_RK_MIN, C_MIN, INFINITY), (TL_RK_MAXABS, C_MAX, -INFINITY),
                   (TL_RK_MINABS, C_MIN, INFINITY), (TL_RK_ANY, C_MAX, 0.0),
                   (TL_RK_ALL, C_MIN, 1.0)):
    _kind_comb[_k] = _c
    _kind_ident[_k] = _i


cdef inline double _comb_f(int c, double a, double b) noexcept nogil:
    if c == C_ADD:
        return a + b
    if c == C_MUL:
        return a * b
    if c == C_MAX:
        return b if (b != b or b > a) else a
    return b if (b != b or b < a) else a


cdef inline int64_t _comb_i(int c, int64_t a, int64_t b) noexcept nogil:
    if c == C_ADD:
        return <int64_t>(<uint64_t>a + <uint64_t>b)
    if c == C_MUL:
        return <int64_t>(<uint64_t>a * <uint64_t>b)
    if c == C_MAX:
        return b if b > a else a
    return b if b < a else a


cdef struct Fold:
    int comb
    bint int_part           # partials are int64 (else double)
    int out_kind            # 0 float32, 1 float64, 2 int64
    double ident
    int64_t iident
    double scale
    int post
    double p
    const double* center
    int64_t po, pk, nch     # partial of output o, piece k: part[o * po + k * pk]


cdef void _fold_range(const Fold* f, const char* part, char* out, int64_t o0, int64_t o1) noexcept nogil:
    cdef int64_t o, k
    cdef double v
    cdef int64_t iv
    cdef const double* pd = <const double*>part
    cdef const int64_t* pi = <const int64_t*>part
    for o in range(o0, o1):
        if f.int_part:
            iv = f.iident
            for k in range(f.nch):
                iv = _comb_i(f.comb, iv, pi[o * f.po + k * f.pk])
            if f.out_kind == 2:
                (<int64_t*>out)[o] = iv
                continue
            v = <double>iv
        else:
            v = f.ident
            for k in range(f.nch):
                v = _comb_f(f.comb, v, pd[o * f.po + k * f.pk])
        if f.scale != 1.0:
            v = v * f.scale
        if f.post == POST_SQRT:
            v = sqrt(v)
        elif f.post == POST_LOG_CENTER:
            v = log(v) + f.center[o]
        elif f.post == POST_POW_INV:
            v = pow(v, 1.0 / f.p)
        elif f.post == POST_DIV_CENTER:
            v = v / f.center[o]
        if f.out_kind == 0:
            (<float*>out)[o] = <float>v
        elif f.out_kind == 1:
            (<double*>out)[o] = v
        else:
            (<int64_t*>out)[o] = <int64_t>v


cdef void _fold(_Plan p, Fold* f, const char* part, char* out) noexcept:
    cdef int64_t c, nc, n = p.nout
    f.po = p.po; f.pk = p.pk
    f.nch = p.nch
    nc = num_chunks(n * (p.nch if p.nch > 0 else 1), GRAIN)
    with nogil:
        if nc <= 1:
            _fold_range(f, part, out, 0, n)
        else:
            for c in prange(nc, num_threads=nc, schedule="static"):
                _fold_range(f, part, out, n * c // nc, n * (c + 1) // nc)


cdef class _Buf:
    """A malloc'd scratch buffer freed with the object."""
    cdef char* ptr
    def __dealloc__(self):
        free(self.ptr)


cdef _Buf _buf(int64_t nbytes):
    cdef _Buf b = _Buf.__new__(_Buf)
    b.ptr = <char*>malloc(nbytes if nbytes > 0 else 8)
    if b.ptr == NULL:
        raise MemoryError(f"reduce: cannot allocate {nbytes} bytes of scratch")
    return b


cdef int _reduce_into(_Plan p, int kind, int slot, const double* center, double pw, Fold* f,
                      char* out) except -1:
    """Run one reduction of the plan and fold it into out (f.out_kind gives out's type)."""
    cdef _Buf keep = _buf(p.nout * p.nch * 8)
    cdef char* part = keep.ptr
    cdef tl_red_fn fn
    if p.ntasks > 0:
        fn = tl_red_rows[kind][slot] if p.rows else tl_red_cols[kind][slot]
        if fn == NULL:
            raise RuntimeError(f"reduce: no kernel for kind {kind} in slot {slot}")
        _run_red(p, fn, center, pw, part)
    f.comb = _kind_comb[kind]
    f.int_part = slot == TL_RS_I64
    f.ident = _kind_ident[kind]
    if f.ident == INFINITY:
        f.iident = INT64_MAX
    elif f.ident == -INFINITY:
        f.iident = INT64_MIN
    else:
        f.iident = <int64_t>f.ident
    _fold(p, f, part, out)
    return 0


cdef inline void _fold_init(Fold* f, int out_kind) noexcept:
    f.out_kind = out_kind
    f.scale = 1.0
    f.post = POST_NONE
    f.p = 0.0
    f.center = NULL


cdef inline int _out_kind(int slot) noexcept:
    return 0 if slot == TL_RS_F32 else (1 if slot == TL_RS_F64 else 2)


cdef _Buf _per_output(_Plan p, int kind, int slot, double scale):
    """One float64 per output of the plan: reduction `kind` times `scale` (a first pass whose
    results center, or divide, a second)."""
    cdef Fold f
    cdef _Buf b = _buf(p.nout * 8)
    _fold_init(&f, 1)
    f.scale = scale
    _reduce_into(p, kind, slot, NULL, 0.0, &f, b.ptr)
    return b


# ---------------------------------------------------------------------------------------
# The reductions
# ---------------------------------------------------------------------------------------
cdef int _first_empty_dim(_Plan p, Array a):
    cdef int i
    for i in range(a.nd):
        if p.red[i] and a.shp[i] == 0:
            return i
    return -1


cdef int64_t _count_nonzero_bytes(const uint8_t* p, int64_t n) noexcept nogil:
    cdef int64_t i, c = 0
    for i in range(n):
        c += p[i] != 0
    return c


cdef Array _bytes_reduce(int kind, Array a, bint keepdim):
    """any/all/count_nonzero of every element of a contiguous 1-byte array (bool, uint8,
    int8) read in place: the general path would first widen it to int64 (8x the bytes)."""
    cdef const uint8_t* p = <const uint8_t*>a.ptr()
    cdef int64_t n = a.n, nz, i
    cdef int64_t shp[MAX_DIMS]
    with nogil:
        nz = _count_nonzero_bytes(p, n)
    for i in range(a.nd):
        shp[i] = 1
    cdef int rdt = TL_INT64 if kind == TL_RK_COUNTNZ else (TL_UINT8 if a.dtype == TL_UINT8 else TL_BOOL)
    cdef Array out = new_array(a.nd if keepdim else 0, shp, rdt)
    if kind == TL_RK_COUNTNZ:
        (<int64_t*>out.ptr())[0] = nz
    else:
        (<uint8_t*>out.ptr())[0] = (nz > 0) if kind == TL_RK_ANY else (nz == n)
    return out


cdef inline bint _all_dims(object dims):
    """None or an empty tuple/list: a reduction over every dim."""
    return dims is None or (isinstance(dims, (tuple, list)) and len(dims) == 0)


cdef object _empty_dim_error(_Plan p, Array a, str name):
    """The IndexError of a reduction without identity over an empty dim."""
    return IndexError(f"{name}(): Expected reduction dim {_first_empty_dim(p, a)} to have "
                      f"non-zero size.")


cdef int _check_identity(_Plan p, Array a, object dims, str name) except -1:
    """max/min-like reductions have no identity: an empty reduced extent is an error."""
    if p.R != 0:
        return 0
    if _all_dims(dims):
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           f"== 0. Specify the reduction dim with the 'dim' argument.")
    raise _empty_dim_error(p, a, name)


_KINDS = {"sum": TL_RK_SUM, "nansum": TL_RK_NANSUM, "prod": TL_RK_PROD, "amax": TL_RK_MAX,
          "amin": TL_RK_MIN, "any": TL_RK_ANY, "all": TL_RK_ALL,
          "count_nonzero": TL_RK_COUNTNZ}


def reduce(str op, Array a, object dims, bint keepdim, str name=None):
    """One-pass reduction of `a` over dims.  op: sum, nansum, prod (bool and integers give
    int64), amax, amin (dtype kept), any, all (bool; uint8 for uint8), count_nonzero
    (int64).  The dtype rules and errors are PyTorch's."""
    cdef int kind = _KINDS[op]
    cdef int d = a.dtype, rdt
    cdef Fold f
    name = name or op
    if ((kind == TL_RK_ANY or kind == TL_RK_ALL or kind == TL_RK_COUNTNZ)
            and (d == TL_BOOL or d == TL_UINT8 or d == TL_INT8) and _all_dims(dims)
            and a.contiguous()):
        return _bytes_reduce(kind, a, keepdim)
    if kind == TL_RK_SUM or kind == TL_RK_NANSUM or kind == TL_RK_PROD:
        rdt = d if _is_float(d) else TL_INT64
    elif kind == TL_RK_ANY or kind == TL_RK_ALL:
        rdt = TL_UINT8 if d == TL_UINT8 else TL_BOOL
    elif kind == TL_RK_COUNTNZ:
        rdt = TL_INT64
    else:
        rdt = d
    cdef _Plan p = _make_plan(a, dims, keepdim, False)
    if kind == TL_RK_MAX or kind == TL_RK_MIN:
        _check_identity(p, a, dims, name)
    cdef int okind = 2 if kind == TL_RK_COUNTNZ else _out_kind(p.slot)
    cdef Array res = p.alloc(p.dtype if kind != TL_RK_COUNTNZ else TL_INT64)
    _fold_init(&f, okind)
    _reduce_into(p, kind, p.slot, NULL, 0.0, &f, res.storage.data)
    return cast_array(res, rdt)


def mean(Array a, object dims, bint keepdim, bint ignore_nan=False):
    """mean (or nanmean) of a float tensor over dims, accumulated as the sums are."""
    cdef Fold f
    cdef int rdt = a.dtype
    cdef _Buf kc
    cdef _Plan p = _make_plan(a, dims, keepdim, False)
    cdef Array res = p.alloc(p.dtype)
    _fold_init(&f, _out_kind(p.slot))
    if not ignore_nan:
        f.scale = 1.0 / p.R if p.R > 0 else NAN
        _reduce_into(p, TL_RK_SUM, p.slot, NULL, 0.0, &f, res.storage.data)
    else:
        kc = _per_output(p, TL_RK_COUNTNOTNAN, p.slot, 1.0)
        f.post = POST_DIV_CENTER
        f.center = <double*>kc.ptr
        _reduce_into(p, TL_RK_NANSUM, p.slot, NULL, 0.0, &f, res.storage.data)
    return cast_array(res, rdt)


def var(Array a, object dims, double correction, bint keepdim, bint take_sqrt, bint want_mean):
    """Variance (or standard deviation) with `correction`, two-pass: the mean, then the sum
    of squared deviations from it.  Returns (var_or_std, mean or None)."""
    cdef Fold f
    cdef int rdt = a.dtype
    cdef _Buf kc
    cdef _Plan p = _make_plan(a, dims, keepdim, False)
    kc = _per_output(p, TL_RK_SUM, p.slot, 1.0 / p.R if p.R > 0 else NAN)
    cdef double* mu = <double*>kc.ptr
    cdef double denom = p.R - correction
    cdef Array res = p.alloc(p.dtype)
    _fold_init(&f, _out_kind(p.slot))
    f.scale = 1.0 / denom if denom > 0 else INFINITY
    f.post = POST_SQRT if take_sqrt else POST_NONE
    _reduce_into(p, TL_RK_SUMSQDEV, p.slot, mu, 0.0, &f, res.storage.data)
    res = cast_array(res, rdt)
    if not want_mean:
        return res, None
    cdef Array m = p.alloc(p.dtype)
    _copy_center(p, mu, m, _out_kind(p.slot))
    return res, cast_array(m, rdt)


cdef void _copy_center(_Plan p, const double* c, Array out, int out_kind) noexcept:
    cdef Fold f
    _fold_init(&f, out_kind)
    f.comb = C_ADD
    f.int_part = False
    f.ident = 0.0
    f.po = 1; f.pk = 0; f.nch = 1
    with nogil:
        _fold_range(&f, <const char*>c, out.storage.data, 0, p.nout)


def logsumexp(Array a, object dims, bint keepdim):
    """log(sum(exp(x))) over dims, stable: the max is taken out first (0 where it is
    infinite, so that inf and all -inf come out right)."""
    cdef Fold f
    cdef int rdt = a.dtype
    cdef _Buf kc
    cdef int64_t o
    cdef _Plan p = _make_plan(a, dims, keepdim, False)
    kc = _per_output(p, TL_RK_MAX, p.slot, 1.0)
    cdef double* mx = <double*>kc.ptr
    for o in range(p.nout):
        if mx[o] == INFINITY or mx[o] == -INFINITY:
            mx[o] = 0.0
    cdef Array res = p.alloc(p.dtype)
    _fold_init(&f, _out_kind(p.slot))
    f.post = POST_LOG_CENTER
    f.center = mx
    _reduce_into(p, TL_RK_SUMEXPDEV, p.slot, mx, 0.0, &f, res.storage.data)
    return cast_array(res, rdt)


def vector_norm(Array a, double ord, object dims, bint keepdim, str name="linalg.vector_norm"):
    """The ord-norm of the elements over dims: 2, 1, inf, -inf, 0 or any p."""
    cdef Fold f
    cdef int rdt = a.dtype, kind, post = POST_NONE
    cdef _Plan p = _make_plan(a, dims, keepdim, False)
    if ord == INFINITY or ord == -INFINITY:
        kind = TL_RK_MAXABS if ord > 0 else TL_RK_MINABS
        if p.R == 0 and p.nout > 0:
            if _all_dims(dims):
                raise RuntimeError(f"{name} cannot compute the {'inf' if ord > 0 else '-inf'} "
                                   f"norm on an empty tensor because the operation does not "
                                   f"have an identity")
            raise RuntimeError(f"{name} cannot compute the {'inf' if ord > 0 else '-inf'} norm "
                               f"on the dimension {_first_empty_dim(p, a)}because this dimension "
                               f"is empty and the operation does not have an identity")
    elif ord == 2.0:
        kind = TL_RK_SUMSQ; post = POST_SQRT
    elif ord == 1.0:
        kind = TL_RK_SUMABS
    elif ord == 0.0:
        kind = TL_RK_COUNTNZ
    else:
        kind = TL_RK_SUMPOW; post = POST_POW_INV
    cdef Array res = p.alloc(p.dtype)
    _fold_init(&f, _out_kind(p.slot))
    f.post = post
    f.p = ord
    _reduce_into(p, kind, p.slot, NULL, ord, &f, res.storage.data)
    return cast_array(res, rdt)


# ---------------------------------------------------------------------------------------
# argmax / argmin, and max/min with indices
# ---------------------------------------------------------------------------------------
def argreduce(bint is_min, Array a, object dim, bint keepdim, bint want_values, str name):
    """(values or None, indices) of the max (min) over one dim, or over every element in C
    order when dim is None; the first index on ties, NaN counts as the max (and the min)."""
    cdef int rdt = a.dtype
    cdef _Buf kv, ki
    cdef int64_t o, k, iv, bi
    cdef double v, best
    cdef int64_t lv, lbest
    cdef int64_t po, pk
    if dim is not None and isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    cdef bint all_dims = dim is None
    cdef _Plan p = _make_plan(a, dim, keepdim, all_dims)
    if p.R == 0:
        if all_dims:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             f"input.numel() == 0.")
        raise _empty_dim_error(p, a, name)
    kv = _buf(p.nout * p.nch * 8)
    cdef char* pval = kv.ptr
    ki = _buf(p.nout * p.nch * 8)
    cdef int64_t* pidx = <int64_t*>ki.ptr
    cdef tl_arg_fn fn
    if p.ntasks > 0:
        fn = tl_arg_rows[is_min][p.slot] if p.rows else tl_arg_cols[is_min][p.slot]
        _run_arg(p, fn, pval, pidx)
    cdef Array idx = p.alloc(TL_INT64)
    cdef Array vals = p.alloc(p.dtype) if want_values else None
    cdef int64_t* io = <int64_t*>idx.storage.data
    cdef char* vo = vals.storage.data if want_values else NULL
    po = p.po; pk = p.pk
    with nogil:
        for o in range(p.nout):
            if p.slot == TL_RS_I64:
                lbest = (<int64_t*>pval)[o * po]
                bi = pidx[o * po]
                for k in range(1, p.nch):
                    lv = (<int64_t*>pval)[o * po + k * pk]
                    if (lv < lbest) if is_min else (lv > lbest):
                        lbest = lv
                        bi = pidx[o * po + k * pk] + k * p.ch
                io[o] = bi
                if vo != NULL:
                    (<int64_t*>vo)[o] = lbest
            else:
                best = (<double*>pval)[o * po]
                bi = pidx[o * po]
                for k in range(1, p.nch):
                    v = (<double*>pval)[o * po + k * pk]
                    if ((v < best) if is_min else (v > best)) or (v != v and best == best):
                        best = v
                        bi = pidx[o * po + k * pk] + k * p.ch
                io[o] = bi
                if vo != NULL:
                    if p.slot == TL_RS_F32:
                        (<float*>vo)[o] = <float>best
                    else:
                        (<double*>vo)[o] = best
    if want_values:
        vals = cast_array(vals, rdt)
    return vals, idx


# ---------------------------------------------------------------------------------------
# [A, R, B] ops along one dim: softmax, scans, median
# ---------------------------------------------------------------------------------------
cdef void _split_dim(Array a, int dim, int64_t* A, int64_t* R, int64_t* B) noexcept:
    cdef int i
    A[0] = 1; B[0] = 1
    R[0] = a.shp[dim] if a.nd > 0 else 1
    for i in range(dim):
        A[0] *= a.shp[i]
    for i in range(dim + 1, a.nd):
        B[0] *= a.shp[i]


cdef struct SmJob:
    const char* x
    char* y
    int64_t A, R, B, rpt, ncb
    int isz, logmode, slot


cdef void _sm_task(const void* job, int64_t t) noexcept nogil:
    cdef const SmJob* j = <const SmJob*>job
    cdef int64_t a0, nr, a, b0, nc, off
    if j.B == 1:
        a0 = t * j.rpt
        nr = _span(j.A, a0, j.rpt)
        off = a0 * j.R * j.isz
        tl_sm_rows[j.slot](j.x + off, j.y + off, nr, j.R, j.logmode)
    else:
        nc = _col_block(t, j.ncb, j.B, TL_SMCB, &a, &b0)
        off = (a * j.R * j.B + b0) * j.isz
        tl_sm_cols[j.slot](j.x + off, j.y + off, j.R, j.B, nc, j.logmode)


def softmax(Array a, object dim, bint log):
    """softmax (log_softmax when log) of a float32/float64 array along dim, fused per row;
    float16/bfloat16 are computed in float32.  The result is contiguous."""
    cdef int rdt = a.dtype
    cdef int d = _wrap_dim(dim, a.nd)
    if not _is_float(rdt):
        raise NotImplementedError(
            f'"{"log_softmax" if log else "softmax"}{"_lastdim" if d == a.nd - 1 else ""}'
            f'_kernel_impl" not implemented for \'{_TORCH_NAMES[rdt]}\'')
    a = contiguous_array(_to_slot(a))
    cdef Array y = new_array(a.nd, a.shp, a.dtype)
    cdef SmJob j
    cdef int64_t nt
    cdef int th
    _split_dim(a, d, &j.A, &j.R, &j.B)
    j.x = a.ptr(); j.y = y.ptr()
    j.isz = tl_itemsize[a.dtype]; j.logmode = log; j.slot = _slot(a.dtype)
    if a.n > 0:
        if j.B == 1:
            j.rpt = 16384 // j.R if j.R < 16384 else 1
            nt = (j.A + j.rpt - 1) // j.rpt
        else:
            j.ncb = (j.B + TL_SMCB - 1) // TL_SMCB
            nt = j.A * j.ncb
        th = num_chunks(a.n, GRAIN // 4)
        with nogil:
            _run_tasks(_sm_task, &j, nt, th)
    return cast_array(y, rdt)


cdef struct SmbJob:
    const char* y
    const char* g
    char* dx
    int64_t A, R, rpt
    int isz, logmode, slot


cdef void _smb_task(const void* job, int64_t t) noexcept nogil:
    cdef const SmbJob* j = <const SmbJob*>job
    cdef int64_t a0 = t * j.rpt, nr = _span(j.A, a0, j.rpt), off = a0 * j.R * j.isz
    tl_smb_rows[j.slot](j.y + off, j.g + off, j.dx + off, nr, j.R, j.logmode)


def softmax_backward(Array y, Array g, object dim, bint log):
    """The gradient of softmax (log_softmax when log) along the last dim from its result y and
    the result's gradient g (float32/float64 arrays of one shape and dtype), fused per row;
    None for any other dim (the caller computes it from its formula).  Contiguous result."""
    cdef int d = _wrap_dim(dim, y.nd)
    if (y.dtype != TL_FLOAT32 and y.dtype != TL_FLOAT64) or g.dtype != y.dtype \
            or y.shape != g.shape:
        raise RuntimeError("softmax_backward: y and g must be float32/float64 arrays of one shape")
    if y.nd and d != y.nd - 1:
        return None
    y = contiguous_array(y)
    g = contiguous_array(g)
    cdef Array dx = new_array(y.nd, y.shp, y.dtype)
    cdef SmbJob j
    cdef int64_t nt, B
    _split_dim(y, d, &j.A, &j.R, &B)
    j.y, j.g, j.dx = y.ptr(), g.ptr(), dx.ptr()
    j.isz = tl_itemsize[y.dtype]; j.logmode = log; j.slot = _slot(y.dtype)
    if y.n > 0:
        j.rpt = 16384 // j.R if j.R < 16384 else 1
        nt = (j.A + j.rpt - 1) // j.rpt
        with nogil:
            _run_tasks(_smb_task, &j, nt, num_chunks(y.n, GRAIN // 4))
    return dx


cdef struct ScanJob:
    const char* x
    char* y
    int64_t* iy
    int64_t A, R, B, ncb
    int isz
    tl_scan_fn fn
    tl_scanarg_fn afn


cdef void _scan_task(const void* job, int64_t t) noexcept nogil:
    """B > 1: columns [b0, b0 + TL_SCB) of slab a.  B == 1: rows [a0, a0 + SCAN_ROWS)."""
    cdef const ScanJob* j = <const ScanJob*>job
    cdef int64_t a, b0, nc, off, rs, cs
    if j.B == 1:
        off = t * SCAN_ROWS * j.R
        nc = _span(j.A, t * SCAN_ROWS, SCAN_ROWS)
        rs = 1
        cs = j.R
    else:
        nc = _col_block(t, j.ncb, j.B, TL_SCB, &a, &b0)
        off = a * j.R * j.B + b0
        rs = j.B
        cs = 1
    if j.fn != NULL:
        j.fn(j.x + off * j.isz, j.y + off * j.isz, j.R, rs, cs, nc)
    else:
        j.afn(j.x + off * j.isz, j.y + off * j.isz, j.iy + off, j.R, rs, cs, nc)


cdef tuple _run_scan(Array a, int d, tl_scan_fn fn, tl_scanarg_fn afn):
    """Run a scan along dim d of a (in its compute dtype): (values, indices or None), both
    contiguous."""
    cdef ScanJob j
    cdef int64_t nt
    cdef int th
    a = contiguous_array(a)
    cdef Array y = new_array(a.nd, a.shp, a.dtype)
    cdef Array ix = new_array(a.nd, a.shp, TL_INT64) if afn != NULL else None
    _split_dim(a, d, &j.A, &j.R, &j.B)
    j.x = a.ptr(); j.y = y.ptr(); j.iy = <int64_t*>ix.ptr() if ix is not None else NULL
    j.isz = tl_itemsize[a.dtype]; j.fn = fn; j.afn = afn
    if j.B == 1:
        nt = (j.A + SCAN_ROWS - 1) // SCAN_ROWS
    else:
        j.ncb = (j.B + TL_SCB - 1) // TL_SCB
        nt = j.A * j.ncb
    if a.n > 0:
        th = num_chunks(a.n, GRAIN)
        with nogil:
            _run_tasks(_scan_task, &j, nt, th)
    return y, ix


_SCANS = {"cumsum": TL_SCAN_CUMSUM, "cumprod": TL_SCAN_CUMPROD,
          "logcumsumexp": TL_SCAN_LOGCUMSUMEXP}


def scan(str op, Array a, object dim):
    """cumsum / cumprod (bool and integers give int64) or logcumsumexp (floats) along dim."""
    cdef int code = _SCANS[op], rdt = a.dtype
    cdef int d = _wrap_dim(dim, a.nd)
    if code == TL_SCAN_LOGCUMSUMEXP:
        if not _is_float(rdt):
            raise RuntimeError(f"\"logcumsumexp_out_cpu\" not implemented for '{_TORCH_NAMES[rdt]}'")
    elif not _is_float(rdt):
        rdt = TL_INT64
    a = _to_slot(a)
    cdef Array y = _run_scan(a, d, tl_scan[code][_slot(a.dtype)], NULL)[0]
    return cast_array(y, rdt)


def scan_arg(bint is_min, Array a, object dim):
    """(values, indices) of cummax / cummin along dim."""
    cdef int rdt = a.dtype
    cdef int d = _wrap_dim(dim, a.nd)
    cdef Array y, idx
    a = _to_slot(a)
    y, idx = _run_scan(a, d, NULL, tl_scanarg[1 if is_min else 0][_slot(a.dtype)])
    return cast_array(y, rdt), idx


def median(Array a, object dim, bint keepdim, bint ignore_nan, str name):
    """(values, indices) of the lower median along dim (every element when dim is None);
    NaN propagates unless ignore_nan."""
    cdef int rdt = a.dtype
    if rdt == TL_BOOL:
        raise RuntimeError(f"\"{name}_cpu\" not implemented for 'Bool'")
    if dim is not None and isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    cdef _Plan p = _make_plan(a, dim, keepdim, True)
    if p.R == 0:
        if dim is None:
            return None, None        # the caller returns NaN, as PyTorch does
        raise _empty_dim_error(p, a, name)
    cdef Array vals = p.alloc(p.dtype)
    cdef Array idx = p.alloc(TL_INT64)
    cdef int64_t t, o, nr
    cdef int th = num_chunks(a.n, GRAIN)
    cdef tl_median_fn fn = tl_median[p.slot]
    cdef int64_t n = p.R            # the plan is [nout, R] C-contiguous (logical mode)
    cdef int64_t g = GRAIN // n if n < GRAIN else 1     # rows per task (one scratch each)
    cdef int64_t nt = (p.nout + g - 1) // g
    cdef int isz = p.isz
    cdef const char* x = p.base
    cdef char* vo = vals.storage.data
    cdef int64_t* io = <int64_t*>idx.storage.data
    if p.nout > 0 and a.n > 0:
        with nogil:
            if th <= 1:
                fn(x, p.nout, n, ignore_nan, vo, io)
            else:
                for t in prange(nt, num_threads=th, schedule="guided"):
                    nr = _span(p.nout, t * g, g)
                    fn(x + t * g * n * isz, nr, n, ignore_nan, vo + t * g * isz, io + t * g)
        for o in range(p.nout):
            if io[o] < 0:
                raise MemoryError(f"{name}: out of memory for the selection scratch")
    vals = cast_array(vals, rdt)
    return vals, idx


# ---- the row kernels the fused program interpreter calls (declared in reduction.pxd) ---------
cdef row_reduce_fn row_sum(int dtype) noexcept nogil:
    if dtype != TL_FLOAT32 and dtype != TL_FLOAT64:
        return NULL
    return <row_reduce_fn>tl_red_rows[TL_RK_SUM][_slot(dtype)]


cdef row_softmax_fn row_softmax(int dtype) noexcept nogil:
    if dtype != TL_FLOAT32 and dtype != TL_FLOAT64:
        return NULL
    return <row_softmax_fn>tl_sm_rows[_slot(dtype)]


cdef row_softmax_back_fn row_softmax_back(int dtype) noexcept nogil:
    if dtype != TL_FLOAT32 and dtype != TL_FLOAT64:
        return NULL
    return <row_softmax_back_fn>tl_smb_rows[_slot(dtype)]
