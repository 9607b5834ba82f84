# Sorting kernels: sort, top-k, k-th value, unique, searchsorted and isin.
#
# Every op works on rows: the elements along one dim, strided.  The per-row work is C in
# kernels/sort.h (a radix sort over order-preserving integer keys, quickselect and a heap for
# top-k); this module checks the arguments, allocates outputs and scratch, and runs the rows
# in parallel with OpenMP, each thread with its own scratch.  Rows are independent, so the
# results do not depend on the number of threads.
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t, int32_t, int16_t, int8_t, uint8_t, uint64_t
from libc.string cimport memcpy
from torchlite._core.array cimport (Array, Storage, MAX_DIMS, new_array, new_storage, make_view,
                                    tl_itemsize, TL_BOOL, TL_UINT8, TL_INT8, TL_INT16, TL_INT32,
                                    TL_INT64, TL_FLOAT16, TL_BFLOAT16, TL_FLOAT32, TL_FLOAT64,
                                    TL_NDTYPES)
from torchlite._core.elementwise cimport cast_array, contiguous_array, promote_types
from torchlite._core.parallel cimport num_chunks

cdef extern from "kernels/sort.h" nogil:
    const int tl_key_bits[TL_NDTYPES]
    void tl_sort_row(const char* src, int64_t ss, int64_t n, int dtype, int descending,
                     char* vdst, int64_t vs, int64_t* idst, int64_t is_, void* scratch)
    void tl_topk_row(const char* src, int64_t ss, int64_t n, int64_t k, int dtype, int largest,
                     char* vdst, int64_t vs, int64_t* idst, int64_t is_, void* scratch)
    void tl_kth_row(const char* src, int64_t ss, int64_t n, int64_t k, int dtype,
                    char* vdst, int64_t* idst, void* scratch)
    int64_t tl_sort_scratch_bytes(int64_t n)
    void tl_row_keys(const char* src, int64_t ss, int64_t start, int64_t n, int dtype,
                     uint64_t* out)
    int64_t tl_runs(const char* vals, int64_t n, int dtype, int64_t* starts)
    void tl_lexsort_rows(const uint64_t* keys, int64_t n, int64_t m, int64_t* perm, int64_t* tmp)
    int64_t tl_row_runs(const uint64_t* keys, int64_t n, int64_t m, const int64_t* perm,
                        int64_t* starts)

cdef int64_t GRAIN = 16384      # elements per thread below which rows run serially
cdef int64_t isz_one = 1        # the stride of a flat contiguous view

cdef enum:
    JOB_SORT = 0
    JOB_TOPK = 1
    JOB_KTH = 2

from torchlite._core.array import TORCH_DTYPE_NAMES as _TORCH_NAMES


cdef int _refuse_complex(Array a, str op) except -1:
    """Complex numbers have no order: PyTorch's sort/topk/... refuse them, and so do these."""
    if a is not None and a.dtype > TL_FLOAT64:
        raise RuntimeError(f'"{op}" not implemented for \'{_TORCH_NAMES[a.dtype]}\'')
    return 0


# ---------------------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------------------
cdef struct RowJob:
    int kind
    int dtype
    int flag                    # descending (sort) or largest (topk)
    int nd
    int dim
    int64_t n                   # row length
    int64_t k
    char* src
    char* vdst                  # NULL: no values wanted
    int64_t* idst               # NULL: no indices wanted
    int64_t shp[MAX_DIMS]       # input shape
    int64_t sstr[MAX_DIMS]      # input strides (elements)
    int64_t ostr[MAX_DIMS]      # output strides (elements; values and indices alike)


cdef void _run_row(RowJob* j, int64_t r, char* scratch) noexcept nogil:
    """Row r (numbered over the dims other than j.dim, last fastest) of the job."""
    cdef int64_t ioff = 0, ooff = 0, q = r, c
    cdef int i, isz = tl_itemsize[j.dtype]
    cdef char* v = NULL
    cdef int64_t* ix = NULL
    for i in range(j.nd - 1, -1, -1):
        if i != j.dim:
            c = q % j.shp[i]
            q = q // j.shp[i]
            ioff += c * j.sstr[i]
            ooff += c * j.ostr[i]
    if j.vdst != NULL:
        v = j.vdst + ooff * isz
    if j.idst != NULL:
        ix = j.idst + ooff
    if j.kind == JOB_SORT:
        tl_sort_row(j.src + ioff * isz, j.sstr[j.dim], j.n, j.dtype, j.flag, v, j.ostr[j.dim],
                    ix, j.ostr[j.dim], scratch)
    elif j.kind == JOB_TOPK:
        tl_topk_row(j.src + ioff * isz, j.sstr[j.dim], j.n, j.k, j.dtype, j.flag, v,
                    j.ostr[j.dim], ix, j.ostr[j.dim], scratch)
    else:
        tl_kth_row(j.src + ioff * isz, j.sstr[j.dim], j.n, j.k, j.dtype, v, ix, scratch)


cdef tuple _run_rows(int kind, int flag, int64_t k, Array a, int dim, int64_t size,
                     bint want_values, bint zero_d):
    """Run job `kind` (flag: descending or largest; k of top-k, k-th value) on every row of a
    along dim, into new outputs of a's shape with dim resized to `size`.  Returns (values or
    None, indices), 0-d again when zero_d."""
    cdef RowJob j
    cdef int i, nc
    cdef int64_t nrows, r, per
    cdef Storage scratch
    cdef Array values = _like_with(a, dim, size, a.dtype) if want_values else None
    cdef Array indices = _like_with(a, dim, size, TL_INT64)
    j.kind = kind
    j.flag = flag
    j.k = k
    j.nd = a.nd
    j.dim = dim
    j.n = a.shp[dim]
    j.src = a.ptr()
    j.dtype = a.dtype
    j.vdst = values.ptr() if values is not None else NULL
    j.idst = <int64_t*>indices.ptr()
    for i in range(a.nd):
        j.shp[i] = a.shp[i]
        j.sstr[i] = a.strd[i]
        j.ostr[i] = indices.strd[i]      # values have the same strides
    if a.n > 0 and indices.n > 0:
        nrows = a.n // j.n
        per = tl_sort_scratch_bytes(j.n)
        nc = num_chunks(a.n, GRAIN)
        if nc > nrows:
            nc = <int>nrows
        scratch = new_storage(per * nc)
        with nogil:
            if nc <= 1:
                for r in range(nrows):
                    _run_row(&j, r, scratch.data)
            else:
                for r in prange(nrows, num_threads=nc, schedule="static"):
                    _run_row(&j, r, scratch.data + threadid() * per)
    return _reshape_0d(values, zero_d), _reshape_0d(indices, zero_d)


cdef inline int _check_dim(int64_t dim, int nd, str op) except -1:
    cdef int lo = -nd if nd > 0 else -1, hi = nd - 1 if nd > 0 else 0
    if dim < lo or dim > hi:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{lo}, {hi}], "
                         f"but got {dim})")
    return <int>(dim + nd if dim < 0 else dim) if nd > 0 else 0


cdef Array _as_1d(Array a):
    """A 0-d array seen as shape (1,): every row op treats a scalar as a row of one."""
    cdef int64_t one = 1
    if a.nd > 0:
        return a
    return make_view(a, 1, &one, &one, a.off)


cdef Array _like_with(Array a, int dim, int64_t size, int dtype):
    """A new contiguous array of a's shape with dim resized to `size`."""
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    for i in range(a.nd):
        shp[i] = a.shp[i]
    shp[dim] = size
    return new_array(a.nd, shp, dtype)


cdef Array _reshape_0d(Array a, bint zero_d):
    """a (None stays None) as a 0-d array when zero_d."""
    return make_view(a, 0, a.shp, a.strd, a.off) if zero_d and a is not None else a


# ---------------------------------------------------------------------------------------
# sort, argsort, topk, kthvalue
# ---------------------------------------------------------------------------------------
def sort(Array a, int64_t dim=-1, bint descending=False, bint want_values=True):
    """(values, indices) of a sorted along dim; NaN sorts last (first when descending) and
    equal elements keep their order.  With want_values=False, values is None (argsort)."""
    _refuse_complex(a, "sort")
    cdef bint zero_d = a.nd == 0
    cdef int d = _check_dim(dim, a.nd, "sort")
    a = _as_1d(a)
    return _run_rows(JOB_SORT, descending, 0, a, d, a.shp[d], want_values, zero_d)


def topk(Array a, int64_t k, int64_t dim=-1, bint largest=True):
    """(values, indices) of the k largest (or smallest) elements along dim, in order; ties go
    to the lower index, NaN counts as the largest value."""
    _refuse_complex(a, "topk")
    cdef bint zero_d = a.nd == 0
    cdef int d = _check_dim(dim, a.nd, "topk")
    if a.dtype == TL_BOOL:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    a = _as_1d(a)
    if k < 0 or k > a.shp[d]:
        raise RuntimeError(f"selected index k out of range (k = {k}, size of dim {d} = {a.shp[d]})")
    if zero_d:
        k = 1           # PyTorch returns the scalar itself for k = 0 too
    return _run_rows(JOB_TOPK, largest, k, a, d, k, True, zero_d)


def kthvalue(Array a, int64_t k, int64_t dim=-1):
    """(values, indices) of the k-th smallest element along dim (k from 1); the dim is kept
    with size 1.  NaN counts as the largest value."""
    _refuse_complex(a, "kthvalue")
    cdef bint zero_d = a.nd == 0
    cdef int d = _check_dim(dim, a.nd, "kthvalue")
    if a.dtype == TL_BOOL:
        raise NotImplementedError('"kthvalue_cpu" not implemented for \'Bool\'')
    a = _as_1d(a)
    if a.shp[d] == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if k < 1 or k > a.shp[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} "
                           f"(k = {k}, size {a.shp[d]})")
    return _run_rows(JOB_KTH, 0, k, a, d, 1, True, zero_d)


# ---------------------------------------------------------------------------------------
# unique
# ---------------------------------------------------------------------------------------
cdef Array _int64_1d(int64_t n):
    return new_array(1, &n, TL_INT64)


cdef tuple _run_outputs(int64_t n, int64_t u, const int64_t* starts, const int64_t* perm,
                        bint want_inverse, bint want_counts, Array inverse):
    """Counts from run starts, and inverse[perm[j]] = run of position j (perm NULL: j)."""
    cdef Array counts = None
    cdef int64_t t, p, e
    cdef int64_t* inv
    cdef int64_t* cnt
    if want_counts:
        counts = _int64_1d(u)
        cnt = <int64_t*>counts.ptr()
        for t in range(u):
            e = starts[t + 1] if t + 1 < u else n
            cnt[t] = e - starts[t]
    if want_inverse:
        inv = <int64_t*>inverse.ptr()
        for t in range(u):
            e = starts[t + 1] if t + 1 < u else n
            for p in range(starts[t], e):
                inv[perm[p] if perm != NULL else p] = t
    return counts, (inverse if want_inverse else None)


def unique(Array a, bint sorted=True, bint return_inverse=False, bint return_counts=False):
    """(values, inverse, counts) of the flattened array: its distinct elements (sorted when
    `sorted`, else runs of equal neighbours are merged, as unique_consecutive); inverse
    (a's shape) and counts are None unless asked for.  Elements compare with ==, so
    -0.0 equals 0.0 and every NaN is distinct."""
    _refuse_complex(a, "unique")
    cdef Array flat = contiguous_array(a), vals, out, idx = None, inverse = None
    cdef int64_t n = a.n, u = 0, t
    cdef int isz = tl_itemsize[a.dtype]
    cdef Array starts
    cdef int64_t* st
    cdef const int64_t* perm = NULL
    flat = make_view(flat, 1, &n, &isz_one, flat.off)
    if return_inverse:
        inverse = new_array(a.nd, a.shp, TL_INT64)
    if n == 0:
        return new_array(1, &n, a.dtype), inverse, (_int64_1d(0) if return_counts else None)
    if sorted:
        vals, idx = sort(flat, 0, False, True)
        perm = <int64_t*>idx.ptr()
    else:
        vals = flat
    starts = _int64_1d(n)
    st = <int64_t*>starts.ptr()
    with nogil:
        u = tl_runs(vals.ptr(), n, a.dtype, st)
    out = new_array(1, &u, a.dtype)
    for t in range(u):
        memcpy(out.ptr() + t * isz, vals.ptr() + st[t] * isz, isz)
    counts, inverse = _run_outputs(n, u, st, perm, return_inverse, return_counts, inverse)
    return out, inverse, counts


def unique_dim(Array a, int64_t dim, bint sorted=True, bint return_inverse=False,
               bint return_counts=False):
    """unique over the slices of a along dim (compared by all their elements; NaN equals
    NaN here).  Returns (values with dim moved first, inverse, counts); the caller moves the
    dim back."""
    _refuse_complex(a, "unique_dim")
    cdef int d = _check_dim(dim, a.nd, "unique_dim")
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t strd[MAX_DIMS]
    cdef int i, k = 1
    cdef int64_t n, m, u, t, nm, first
    cdef Array moved, keys, perm = None, tmp, starts, out, inverse = None
    cdef int64_t* pp = NULL
    cdef int64_t* st
    cdef int isz = tl_itemsize[a.dtype]
    if a.nd == 0:
        raise IndexError("unique_dim: Dimension out of range (expected to be in range of [-1, 0], "
                         f"but got {dim})")
    shp[0] = a.shp[d]
    strd[0] = a.strd[d]
    for i in range(a.nd):
        if i != d:
            shp[k] = a.shp[i]
            strd[k] = a.strd[i]
            k += 1
    n = shp[0]
    m = a.n // n if n > 0 else 0
    if a.n == 0 and n > 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    moved = contiguous_array(make_view(a, a.nd, shp, strd, a.off))
    if return_inverse:
        inverse = _int64_1d(n)
    if n == 0:
        return moved, inverse, (_int64_1d(0) if return_counts else None)
    nm = n * m
    keys = new_array(1, &nm, TL_INT64)
    starts = _int64_1d(n)
    st = <int64_t*>starts.ptr()
    with nogil:
        tl_row_keys(moved.ptr(), 1, 0, nm, a.dtype, <uint64_t*>keys.ptr())
    if sorted:
        perm = _int64_1d(n)
        tmp = _int64_1d(n)
        pp = <int64_t*>perm.ptr()
        with nogil:
            tl_lexsort_rows(<uint64_t*>keys.ptr(), n, m, pp, <int64_t*>tmp.ptr())
    with nogil:
        u = tl_row_runs(<uint64_t*>keys.ptr(), n, m, pp, st)
    shp[0] = u
    out = new_array(a.nd, shp, a.dtype)
    for t in range(u):
        first = pp[st[t]] if pp != NULL else st[t]       # the run's first slice
        memcpy(out.ptr() + t * m * isz, moved.ptr() + first * m * isz, m * isz)
    counts, inverse = _run_outputs(n, u, st, pp, return_inverse, return_counts, inverse)
    return out, inverse, counts


# ---------------------------------------------------------------------------------------
# searchsorted and isin
# ---------------------------------------------------------------------------------------
ctypedef fused num_t:
    uint8_t
    int8_t
    int16_t
    int32_t
    int64_t
    float
    double


cdef inline int64_t _bound(const num_t* b, int64_t n, num_t v, const int64_t* sorter,
                           bint right) noexcept nogil:
    # PyTorch's binary search, comparisons included: with NaN in the boundaries or the value
    # the predicate is not monotone, and this gives the positions PyTorch gives.  The
    # bounds move by arithmetic, not branches: the direction is random for random values.
    cdef int64_t lo = 0, hi = n, mid, go_right
    cdef num_t x
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        x = b[sorter[mid]] if sorter != NULL else b[mid]
        go_right = (not (x > v)) if right else (not (x >= v))
        lo += (mid + 1 - lo) * go_right
        hi -= (hi - mid) * (1 - go_right)
    return lo


cdef inline void _search_one(const num_t* b, int64_t nb, bint per_row, const num_t* v,
                             int64_t i, int64_t m, const int64_t* sorter, bint right,
                             int64_t* out64, int32_t* out32) noexcept nogil:
    """Value i searched in its boundary row (row i // m when per_row, else the only one)."""
    cdef int64_t row = (i // m) * nb if per_row else 0
    cdef int64_t r = _bound(b + row, nb, v[i], (sorter + row) if sorter != NULL else NULL, right)
    if out64 != NULL:
        out64[i] = r
    else:
        out32[i] = <int32_t>r


cdef void _search(const num_t* b, int64_t nb, bint per_row, const num_t* v, int64_t nv,
                  int64_t m, const int64_t* sorter, bint right, int64_t* out64,
                  int32_t* out32) noexcept nogil:
    """Each of the nv values v (rows of m when per_row) searched in its boundary row."""
    cdef int64_t i
    cdef int nc = num_chunks(nv, 4096)
    if nc <= 1:
        for i in range(nv):
            _search_one(b, nb, per_row, v, i, m, sorter, right, out64, out32)
    else:
        for i in prange(nv, num_threads=nc, schedule="static"):
            _search_one(b, nb, per_row, v, i, m, sorter, right, out64, out32)


cdef int _search_dtype(int d) noexcept nogil:
    # comparisons of half floats are exact in float32; bool compares as its bytes
    if d == TL_FLOAT16 or d == TL_BFLOAT16:
        return TL_FLOAT32
    return d


def searchsorted(Array boundaries, Array values, bint right=False, Array sorter=None,
                 bint out_int32=False):
    """For each value, the index in its row of `boundaries` (the last dim; the leading dims
    match values', or boundaries is 1-d) where it would be inserted to keep the row sorted:
    the first position whose element is >= value (> value when `right`).  With `sorter`,
    boundaries[sorter] is the sorted row."""
    _refuse_complex(boundaries, "searchsorted")
    _refuse_complex(values, "searchsorted")
    cdef int cd = _search_dtype(promote_types(boundaries.dtype, values.dtype))
    cdef Array b = contiguous_array(cast_array(boundaries, cd))
    cdef Array v = contiguous_array(cast_array(values, cd))
    cdef Array out
    cdef int64_t nb = boundaries.shp[boundaries.nd - 1] if boundaries.nd else 0
    cdef int64_t m = values.shp[values.nd - 1] if values.nd else 1
    cdef bint per_row = boundaries.nd > 1
    cdef const int64_t* srt = NULL
    cdef int64_t* o64 = NULL
    cdef int32_t* o32 = NULL
    cdef int64_t i, nv = values.n
    if boundaries.nd == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if per_row and (values.nd != boundaries.nd or
                    boundaries.shape[:boundaries.nd - 1] != values.shape[:values.nd - 1]):
        raise RuntimeError(
            f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            f"dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(boundaries.shape)} and input value tensor "
            f"{list(values.shape)}")
    if out_int32 and nb >= 2**31:
        raise RuntimeError(f"torch.searchsorted(): the size of boundaries' last dimension should "
                           f"be less than 2147483648, but we got {nb}")
    if sorter is not None:
        if sorter.dtype != TL_INT64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype "
                               f"but got {_TORCH_NAMES[sorter.dtype]}")
        if sorter.shape != boundaries.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(boundaries.shape)}and got "
                               f"sorter tensor {list(sorter.shape)}")
        sorter = contiguous_array(sorter)
        srt = <const int64_t*>sorter.ptr()
        for i in range(sorter.n):
            if srt[i] < 0 or srt[i] >= nb:
                raise RuntimeError("torch.searchsorted(): sorter index out of range")
    out = new_array(values.nd, values.shp, TL_INT32 if out_int32 else TL_INT64)
    if out_int32:
        o32 = <int32_t*>out.ptr()
    else:
        o64 = <int64_t*>out.ptr()
    if nv == 0:
        return out
    if nb == 0:
        with nogil:
            for i in range(nv):
                if o64 != NULL:
                    o64[i] = 0
                else:
                    o32[i] = 0
        return out
    with nogil:
        if cd == TL_BOOL or cd == TL_UINT8:
            _search(<uint8_t*>b.ptr(), nb, per_row, <uint8_t*>v.ptr(), nv, m, srt, right, o64, o32)
        elif cd == TL_INT8:
            _search(<int8_t*>b.ptr(), nb, per_row, <int8_t*>v.ptr(), nv, m, srt, right, o64, o32)
        elif cd == TL_INT16:
            _search(<int16_t*>b.ptr(), nb, per_row, <int16_t*>v.ptr(), nv, m, srt, right, o64, o32)
        elif cd == TL_INT32:
            _search(<int32_t*>b.ptr(), nb, per_row, <int32_t*>v.ptr(), nv, m, srt, right, o64, o32)
        elif cd == TL_INT64:
            _search(<int64_t*>b.ptr(), nb, per_row, <int64_t*>v.ptr(), nv, m, srt, right, o64, o32)
        elif cd == TL_FLOAT32:
            _search(<float*>b.ptr(), nb, per_row, <float*>v.ptr(), nv, m, srt, right, o64, o32)
        else:
            _search(<double*>b.ptr(), nb, per_row, <double*>v.ptr(), nv, m, srt, right, o64, o32)
    return out


cdef uint64_t _nan_key(int dtype) noexcept nogil:
    """The key every NaN of a float dtype maps to (no other element has it); 0 for integers,
    whose key 0 is no NaN: the caller checks the dtype."""
    if dtype == TL_FLOAT16 or dtype == TL_BFLOAT16:
        return 0xffff
    if dtype == TL_FLOAT32:
        return 0xffffffff
    if dtype == TL_FLOAT64:
        return <uint64_t>0xffffffffffffffff
    return 0


cdef void _member(const uint64_t* tk, int64_t nt, const uint64_t* ek, int64_t ne,
                  bint floating, uint64_t nan_key, bint invert, uint8_t* out) noexcept nogil:
    cdef int64_t i, lo, hi, mid
    cdef uint64_t x
    cdef bint found
    for i in range(ne):
        x = ek[i]
        lo = 0
        hi = nt
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if tk[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        found = lo < nt and tk[lo] == x and not (floating and x == nan_key)
        out[i] = found != invert


def isin(Array elements, Array test_elements, bint invert=False):
    """A bool array of elements' shape: whether each element equals (==) some test element,
    after promoting both to a common dtype.  NaN is in nothing."""
    _refuse_complex(elements, "isin")
    _refuse_complex(test_elements, "isin")
    cdef int cd = promote_types(elements.dtype, test_elements.dtype)
    cdef Array e = contiguous_array(cast_array(elements, cd))
    cdef Array t = cast_array(test_elements, cd)
    cdef Array out = new_array(elements.nd, elements.shp, TL_BOOL)
    cdef Array tsorted, tkeys, ekeys
    cdef int64_t nt = t.n, ne = e.n
    cdef bint floating = cd >= TL_FLOAT16 and cd <= TL_FLOAT64
    if ne == 0:
        return out
    t = contiguous_array(t)
    t = make_view(t, 1, &nt, &isz_one, t.off)
    tsorted = sort(t, 0, False, True)[0] if nt > 0 else t
    tkeys = _int64_1d(nt)
    ekeys = _int64_1d(ne)
    with nogil:
        tl_row_keys(tsorted.ptr(), 1, 0, nt, cd, <uint64_t*>tkeys.ptr())
        tl_row_keys(e.ptr(), 1, 0, ne, cd, <uint64_t*>ekeys.ptr())
        _member(<uint64_t*>tkeys.ptr(), nt, <uint64_t*>ekeys.ptr(), ne, floating, _nan_key(cd),
                invert, <uint8_t*>out.ptr())
    return out
