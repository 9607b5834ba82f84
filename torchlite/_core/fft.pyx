# Discrete Fourier transforms along one dim: complex-to-complex, real-to-complex (r2c) and
# complex-to-real (c2r), for float32 and float64.
#
# Complex data is a real array whose last dim has size 2 and stride 1 (real, imaginary):
# what view_as_real gives.  The transforms are torchlite's own (kernels/fft.h and the
# fft_*.h it includes): mixed radix (8, 4, 2, 3, 5 and odd primes up to 101) for smooth
# lengths, Bluestein's algorithm for lengths with a larger prime factor, real transforms of
# even length through a complex one of half the length.  This module checks the arguments
# (before any nogil code), keeps the plans in a bounded cache, allocates the output and the
# scratch, and runs the work over OpenMP threads: tiles of rows for batches of short rows,
# the blocks of each four-step stage for long rows.  How the work is cut depends only on the
# shapes, so the results do not depend on the number of threads.
from collections import OrderedDict

from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t
from torchlite._core.array cimport (Array, Storage, MAX_DIMS, new_array, new_storage,
                                    TL_FLOAT32, TL_FLOAT64)
from torchlite._core.parallel cimport num_chunks
from torchlite._core import isa_switch

cdef extern from "kernels/fft.h" nogil:
    enum:
        TL_FFT_C2C, TL_FFT_R2C, TL_FFT_C2R
    int64_t TL_FFT_MAX_N
    ctypedef struct tl_fft_plan_info:
        int64_t n
        int64_t bytes
        int stockham
        int64_t n1, n2, bm
    ctypedef struct tl_fft_job:
        int op, inverse, prec, half, big, nbd
        int64_t n, len_in, len_out, rows
        double scale
        const void* plan
        int64_t bshape[16]
        int64_t bsin[16]
        int64_t bsout[16]
        int64_t sin, sout
        const char* in_ "in"
        char* out
    int tl_fft_install(int level)
    void* tl_fft_plan_create(int64_t n, int prec)
    void tl_fft_plan_free(void* plan, int prec)
    const tl_fft_plan_info* tl_fft_plan_info_of(const void* plan)
    const tl_fft_plan_info* tl_fft_sub_info(const tl_fft_plan_info* info)
    int tl_fft_use_big(const void* plan, int prec, int64_t rows)
    int tl_fft_lanes_of(int prec)
    int tl_fft_big_nstages(const tl_fft_job* J)
    int64_t tl_fft_big_blocks(const tl_fft_job* J, int s)
    void tl_fft_scratch_reals(const tl_fft_job* J, int64_t* per_thread, int64_t* shared,
                              int64_t* aoff, int64_t* zoff)
    void tl_fft_run_tile(const tl_fft_job* J, int64_t tile, void* scratch)
    void tl_fft_run_stage(const tl_fft_job* J, int64_t row, int stage, int64_t blk, void* tscr,
                          void* shared)
    void tl_fft_run_row(const tl_fft_job* J, int64_t row, void* tscr, void* shared)

cdef double GRAIN = 1 << 16         # butterfly work (entries x passes) per thread, at least


# ---------------------------------------------------------------------------------------
# ISA selection (tests force each level)
# ---------------------------------------------------------------------------------------
def _install(int level):
    return tl_fft_install(level)


set_isa_level, isa_level = isa_switch(_install)


# ---------------------------------------------------------------------------------------
# Plans and their cache
# ---------------------------------------------------------------------------------------
cdef class Plan:
    """One FFT plan (read-only once made, so any number of threads may run it at once)."""
    cdef void* ptr
    cdef readonly int prec
    cdef readonly int64_t n
    cdef readonly int64_t nbytes

    def __dealloc__(self):
        if self.ptr != NULL:
            tl_fft_plan_free(self.ptr, self.prec)
            self.ptr = NULL

    @property
    def kind(self):
        """'bluestein' or 'direct' (mixed radix)."""
        return "bluestein" if tl_fft_plan_info_of(self.ptr).bm else "direct"

    @property
    def split(self):
        """The four-step split (n1, n2) of the plan that does the transform proper, or None."""
        cdef const tl_fft_plan_info* i = tl_fft_plan_info_of(self.ptr)
        if i.bm:
            i = tl_fft_sub_info(i)
        return None if i.n1 == 0 else (i.n1, i.n2)

    @property
    def bluestein_length(self):
        return tl_fft_plan_info_of(self.ptr).bm


_PRECISION_NAMES = ("float32", "float64")
_cache = OrderedDict()              # (n, precision name) -> Plan, least recently used first
_cache_max_size = 64
_cache_max_bytes = 512 << 20        # plans of long transforms hold a few times n entries
_cache_bytes = 0
_hits = 0
_misses = 0


def plan_cache_info():
    """The plan cache: a dict with size, max_size, bytes (held by the cached plans),
    max_bytes, hits, misses and keys ((n, precision) pairs, least recently used first)."""
    return dict(size=len(_cache), max_size=_cache_max_size, bytes=_cache_bytes,
                max_bytes=_cache_max_bytes, hits=_hits, misses=_misses, keys=list(_cache))


def clear_plan_cache():
    """Drop every cached plan (plans a transform is running keep living until it ends)."""
    global _cache_bytes
    _cache.clear()
    _cache_bytes = 0


def set_plan_cache_max_size(int max_size):
    """Keep at most max_size plans (0 caches nothing); returns the previous limit."""
    global _cache_max_size
    if max_size < 0:
        raise ValueError(f"set_plan_cache_max_size: expected a size >= 0, got {max_size}")
    previous = _cache_max_size
    _cache_max_size = max_size
    _evict()
    return previous


cdef _evict():
    """Drop the least recently used plans beyond the count and byte limits (the newest plan
    stays, whatever its size)."""
    global _cache_bytes
    while _cache and (len(_cache) > _cache_max_size or
                      (_cache_bytes > _cache_max_bytes and len(_cache) > 1)):
        _, old = _cache.popitem(last=False)
        _cache_bytes -= (<Plan>old).nbytes


cdef Plan get_plan(int64_t n, int prec, str op):
    """The plan of length n (made with the GIL held, then cached)."""
    global _hits, _misses, _cache_bytes
    key = (n, _PRECISION_NAMES[prec])
    cdef Plan p = _cache.get(key)
    if p is not None:
        _hits += 1
        _cache.move_to_end(key)
        return p
    _misses += 1
    if n < 1 or n > TL_FFT_MAX_N:
        raise ValueError(f"{op}: cannot plan a transform of length {n} (1 to 2**40)")
    p = Plan.__new__(Plan)
    p.ptr = tl_fft_plan_create(n, prec)
    if p.ptr == NULL:
        raise MemoryError(f"{op}: out of memory planning a transform of length {n}")
    p.prec = prec
    p.n = n
    p.nbytes = tl_fft_plan_info_of(p.ptr).bytes
    if _cache_max_size > 0:
        _cache[key] = p
        _cache_bytes += p.nbytes
        _evict()
    return p


def plan(int64_t n, dtype_code):
    """The cached plan of length n for a float32 or float64 dtype code (for inspection)."""
    return get_plan(n, _precision(dtype_code, "plan"), "plan")


# ---------------------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------------------
cdef int _precision(int dtype, str op) except -1:
    if dtype == TL_FLOAT32:
        return 0
    if dtype == TL_FLOAT64:
        return 1
    raise TypeError(f"{op}: expected a float32 or float64 array, got dtype code {dtype}")


cdef int _check_complex(Array x, str op) except -1:
    if x.nd < 2 or x.shp[x.nd - 1] != 2 or x.strd[x.nd - 1] != 1:
        raise ValueError(f"{op}: expected complex data as an array whose last dim has size 2 "
                         f"and stride 1 (view_as_real), got shape {x.shape} and strides "
                         f"{x.strides}")
    return 0


cdef int _norm_dim(int dim, int ndim, str op) except -1:
    """dim in [-ndim, ndim) wrapped into [0, ndim) (ndim counts the dims a transform may run
    along: not the trailing (real, imag) dim of complex data)."""
    if ndim < 1 or dim < -ndim or dim >= ndim:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-ndim}, {ndim - 1}], but got {dim})")
    return dim + ndim if dim < 0 else dim


cdef int _check_n(int64_t n, str op) except -1:
    if n < 1:
        raise ValueError(f"{op}: Invalid number of data points ({n}) specified")
    if n > TL_FFT_MAX_N:
        raise ValueError(f"{op}: Invalid number of data points ({n}) specified: the longest "
                         f"transform is 2**40")
    return 0


cdef void _batch(tl_fft_job* J, Array x, Array out, int dim, int ndim) noexcept:
    """The batch dims of J: dims 0..ndim-1 of x and out other than dim."""
    cdef int d
    J.nbd = 0
    J.rows = 1
    for d in range(ndim):
        if d != dim:
            J.bshape[J.nbd] = out.shp[d]
            J.bsin[J.nbd] = x.strd[d]
            J.bsout[J.nbd] = out.strd[d]
            J.rows *= out.shp[d]
            J.nbd += 1
    J.sin = x.strd[dim]
    J.sout = out.strd[dim]
    J.in_ = x.ptr()
    J.out = out.ptr()


# ---------------------------------------------------------------------------------------
# Running a job
# ---------------------------------------------------------------------------------------
cdef int _run(tl_fft_job* J, Plan p) except -1:
    cdef int64_t per_thread, shared, aoff, zoff, passes = 1, m = 1
    cdef double work
    cdef int64_t isz = 8 if J.prec else 4
    cdef int64_t ntiles, t, r, b, nb, lanes = tl_fft_lanes_of(J.prec)
    cdef int nt, s, nst
    cdef Storage scratch
    cdef char* base
    cdef char* sh
    J.plan = p.ptr
    J.big = tl_fft_use_big(p.ptr, J.prec, J.rows)
    tl_fft_scratch_reals(J, &per_thread, &shared, &aoff, &zoff)
    while m < J.n:
        m *= 2
        passes += 1
    work = <double>J.rows * J.n * passes       # a double: no overflow whatever the shape
    nt = num_chunks(<long long>min(work / GRAIN, 1e15), 1)      # a chunk per GRAIN of work
    if not J.big:
        ntiles = (J.rows + lanes - 1) // lanes
        if nt > ntiles:
            nt = <int>ntiles
        scratch = new_storage(per_thread * isz * nt)
        base = scratch.data
        with nogil:
            if nt <= 1:
                for t in range(ntiles):
                    tl_fft_run_tile(J, t, base)
            else:
                for t in prange(ntiles, num_threads=nt, schedule="static"):
                    tl_fft_run_tile(J, t, base + threadid() * per_thread * isz)
        return 0
    if nt > 1 and J.rows >= 4 * nt:
        # many long rows: a row per thread at a time, each thread with a row's scratch
        scratch = new_storage((per_thread + shared) * isz * nt)
        base = scratch.data
        with nogil:
            for r in prange(J.rows, num_threads=nt, schedule="static"):
                tl_fft_run_row(J, r, base + threadid() * (per_thread + shared) * isz,
                               base + (threadid() * (per_thread + shared) + per_thread) * isz)
        return 0
    # few long rows: the threads share each stage's blocks
    scratch = new_storage((per_thread * nt + shared) * isz)
    base = scratch.data
    sh = base + per_thread * nt * isz
    nst = tl_fft_big_nstages(J)
    with nogil:
        for r in range(J.rows):
            for s in range(nst):
                nb = tl_fft_big_blocks(J, s)
                if nt <= 1 or nb < 2:
                    for b in range(nb):
                        tl_fft_run_stage(J, r, s, b, base, sh)
                else:
                    for b in prange(nb, num_threads=nt, schedule="static"):
                        tl_fft_run_stage(J, r, s, b, base + threadid() * per_thread * isz, sh)
    return 0


# ---------------------------------------------------------------------------------------
# The transforms
# ---------------------------------------------------------------------------------------
def c2c(Array x, int dim, int64_t n, bint inverse, double scale):
    """Complex-to-complex DFT of x along dim, as a new contiguous array.

    x: float32/float64 complex data (last dim of size 2 and stride 1, view_as_real's form),
    at least 2 dims; dim: any other dim (negative counts from the last non-complex dim).
    The input along dim is truncated or zero-padded to n entries (torch.fft's n).
    out[k] = scale * sum_j x[j] exp(-+2 pi i j k / n), the sign + when inverse; no
    normalisation besides scale (1, 1/n or 1/sqrt(n) for the norm modes).  The output has
    x's shape with shape[dim] = n.
    """
    cdef int prec = _precision(x.dtype, "c2c")
    cdef tl_fft_job J
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    cdef Array out
    _check_complex(x, "c2c")
    dim = _norm_dim(dim, x.nd - 1, "c2c")
    _check_n(n, "c2c")
    for i in range(x.nd):
        shp[i] = x.shp[i]
    shp[dim] = n
    out = new_array(x.nd, shp, x.dtype)
    if out.n == 0:
        return out
    J.op = TL_FFT_C2C
    J.inverse = inverse
    J.prec = prec
    J.half = 0
    J.n = n
    J.len_in = x.shp[dim] if x.shp[dim] < n else n
    J.len_out = n
    J.scale = scale
    _batch(&J, x, out, dim, x.nd - 1)
    _run(&J, get_plan(n, prec, "c2c"))
    return out


def r2c(Array x, int dim, int64_t n, bint onesided, double scale):
    """Real-to-complex (forward) DFT of real x along dim, as new contiguous complex data.

    x: float32/float64, at least 1 dim.  The input along dim is truncated or zero-padded to
    n entries.  out[k] = scale * sum_j x[j] exp(-2 pi i j k / n) for k < n // 2 + 1
    (onesided) or k < n.  Output shape: x's with shape[dim] = n // 2 + 1 (onesided) or n,
    plus a trailing dim of 2 (real, imag).
    """
    cdef int prec = _precision(x.dtype, "r2c")
    cdef tl_fft_job J
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    cdef Array out
    dim = _norm_dim(dim, x.nd, "r2c")
    _check_n(n, "r2c")
    if x.nd + 1 > MAX_DIMS:
        raise ValueError(f"r2c: the output would have {x.nd + 1} dims, more than {MAX_DIMS}")
    for i in range(x.nd):
        shp[i] = x.shp[i]
    shp[dim] = n // 2 + 1 if onesided else n
    shp[x.nd] = 2
    out = new_array(x.nd + 1, shp, x.dtype)
    if out.n == 0:
        return out
    J.op = TL_FFT_R2C
    J.inverse = 0
    J.prec = prec
    J.half = n % 2 == 0
    J.n = n
    J.len_in = x.shp[dim] if x.shp[dim] < n else n
    J.len_out = shp[dim]
    J.scale = scale
    _batch(&J, x, out, dim, x.nd)
    _run(&J, get_plan(n // 2 if J.half else n, prec, "r2c"))
    return out


def c2r(Array x, int dim, int64_t n, double scale):
    """Complex-to-real DFT (the inverse direction) of Hermitian data along dim, as a new
    contiguous real array.

    x: complex data as for c2c.  Its first n // 2 + 1 entries along dim (zero-padded when it
    has fewer) are the non-redundant half of a Hermitian signal of length n; the imaginary
    parts of entry 0, and of entry n / 2 when n is even, are ignored, as numpy.fft.irfft
    does.  out[j] = scale * sum_k X[k] exp(+2 pi i j k / n) over the whole signal, so
    numpy.fft.irfft(a, n) is c2r(a, dim, n, 1 / n).  Output shape: x.shape[:-1] with
    shape[dim] = n.
    """
    cdef int prec = _precision(x.dtype, "c2r")
    cdef tl_fft_job J
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    cdef Array out
    _check_complex(x, "c2r")
    dim = _norm_dim(dim, x.nd - 1, "c2r")
    _check_n(n, "c2r")
    for i in range(x.nd - 1):
        shp[i] = x.shp[i]
    shp[dim] = n
    out = new_array(x.nd - 1, shp, x.dtype)
    if out.n == 0:
        return out
    J.op = TL_FFT_C2R
    J.inverse = 1
    J.prec = prec
    J.half = n % 2 == 0
    J.n = n
    J.len_in = x.shp[dim] if x.shp[dim] < n // 2 + 1 else n // 2 + 1
    J.len_out = n
    J.scale = scale
    _batch(&J, x, out, dim, x.nd - 1)
    _run(&J, get_plan(n // 2 if J.half else n, prec, "c2r"))
    return out
