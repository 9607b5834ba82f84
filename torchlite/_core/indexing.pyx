# Index kernels: advanced indexing (getitem, setitem, index_put_, index_select, index_add,
# index_copy, index_fill, take, put_, masks), gather/scatter along a dim, and nonzero.
#
# All of them are one loop (`_run`) over an iteration plan (`IPlan`): loop dims, each with a
# byte stride in the indexed operand `a`, the dense operand `d` and every index array.  An
# index array k selects, through its value v, the byte offset of a "group" of a's dims
# (one dim for ordinary indices, several for take/put's flat indices, unravelled).  The inner
# rows are moved or combined by the C loops in kernels/index.h.
#
# Safety: the loop checks every index value as it reads it and stops before using a bad one
# (the caller then raises with the first bad value).  Ops that write also check all indices
# first (`_check_range`), so they either fail untouched or complete; index arrays and values
# that share memory with the written operand are copied first.
from cython.parallel cimport prange
from libc.stdint cimport int64_t, int32_t, uint64_t
from torchlite._core.array cimport (Array, MAX_DIMS, broadcast_into, new_array, shape_tuple, tl_itemsize,
                                    TL_BOOL, TL_UINT8, TL_INT32, TL_INT64, TL_FLOAT16,
                                    TL_BFLOAT16, TL_FLOAT32, TL_FLOAT64, TL_COMPLEX64,
                                    TL_COMPLEX128)
from torchlite._core.elementwise cimport copy_into
from torchlite._core.elementwise import binary as _ew_binary, BINARY as _EW_BINARY
from torchlite._core.parallel cimport num_chunks

cdef extern from "kernels/index.h" nogil:
    enum:
        TL_IDX_GATHER, TL_IDX_PUT, TL_IDX_ADD, TL_IDX_MUL, TL_IDX_MAX, TL_IDX_MIN
    void tl_idx_row(int op, int dtype, int isz, char* a, const int64_t* offs, int64_t astride,
                    char* d, int64_t ds, int64_t n)
    uint64_t tl_nz_load(const char* p, int isz)
    int tl_idx_all_valid(const char* ip, int64_t istride, int64_t n, int i32, int64_t wrap,
                         uint64_t limit)
    int64_t tl_nz_count_row(const char* p, int64_t st, int64_t n, int isz, uint64_t zmask)
    int tl_idx1_row(int op, int dtype, int isz, char* a, int64_t astride, int64_t g,
                    const char* ip, int64_t istride, int i32, int64_t wrap, uint64_t limit,
                    char* d, int64_t ds, int64_t n)

GATHER = TL_IDX_GATHER
PUT = TL_IDX_PUT
ADD = TL_IDX_ADD
MUL = TL_IDX_MUL
MAX = TL_IDX_MAX
MIN = TL_IDX_MIN

# index kinds in a group (a mask becomes byte offsets computed here, never by a caller)
KIND_INDEX = 0       # integer positions (int64 or int32), range-checked
KIND_MASK = 2        # a bool/uint8 mask over the group's dims

cdef enum:
    ROW_BLOCK = 256           # offsets computed per block of an indexed row
    MAX_CHUNKS = 256
cdef int64_t GRAIN = 16384    # elements per thread below which a loop stays serial

_BOUNDS_MSG = "index {index} is out of bounds for dimension {dim} with size {size}"
_DEFAULT_ERR = (IndexError, _BOUNDS_MSG, True)
_ALONG_DIM_ERR = (RuntimeError, _BOUNDS_MSG, False)


cdef struct IPlan:
    int nd                               # loop dims, outermost first
    int64_t shape[MAX_DIMS]
    int64_t astr[MAX_DIMS]               # byte strides of the indexed operand
    int64_t dstr[MAX_DIMS]               # byte strides of the dense operand
    int nidx                             # index arrays
    char* iptr[MAX_DIMS]
    bint i32[MAX_DIMS]                   # int32 index (else int64)
    int64_t istr[MAX_DIMS][MAX_DIMS]     # [index][loop dim] byte strides
    int gnd[MAX_DIMS]                    # dims in the group an index addresses
    int64_t gsize[MAX_DIMS][MAX_DIMS]
    int64_t gstr[MAX_DIMS][MAX_DIMS]     # byte strides of those dims in a
    int64_t gnumel[MAX_DIMS]             # elements in the group
    int64_t iwrap[MAX_DIMS]              # added to a negative index (gnumel, or 0: not allowed)
    uint64_t ilimit[MAX_DIMS]            # then valid when (uint64)v < ilimit
    char* aptr
    char* dptr
    int op
    int dtype
    int isz
    bint unique                          # no two index positions address the same element


# ---------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------
cdef inline int64_t _read_index(const char* p, bint i32) noexcept nogil:
    if i32:
        return (<const int32_t*>p)[0]
    return (<const int64_t*>p)[0]


cdef inline int64_t _index_offset(const IPlan* p, char** ip) noexcept nogil:
    """Byte offset in a selected by the index values at ip[0..nidx), or -1 when one of
    them is out of range."""
    cdef int64_t off = 0, v, s
    cdef int k, g
    for k in range(p.nidx):
        v = _read_index(ip[k], p.i32[k])
        if v < 0:
            v += p.iwrap[k]
        if <uint64_t>v >= p.ilimit[k]:
            return -1
        if p.gnd[k] == 1:
            off += v * p.gstr[k][0]
        else:
            g = p.gnd[k] - 1
            while g >= 0:
                s = p.gsize[k][g]
                off += (v % s) * p.gstr[k][g]
                v = v // s
                g -= 1
    return off


cdef bint _row_offsets(const IPlan* p, char** ip, int64_t j0, int64_t m, int64_t* offs) noexcept nogil:
    """offs[j] = offset of element j0 + j of a row whose index values change along it;
    False when an index is out of range."""
    cdef int last = p.nd - 1, k
    cdef int64_t j, off, ast = p.astr[last]
    cdef char* jp[MAX_DIMS]
    for j in range(m):
        for k in range(p.nidx):
            jp[k] = ip[k] + (j0 + j) * p.istr[k][last]
        off = _index_offset(p, jp)
        if off < 0:
            return False
        offs[j] = off + (j0 + j) * ast
    return True


cdef bint _indexed_row(const IPlan* p, char** ip, char* a, char* d, int64_t n) noexcept nogil:
    """One row along which the index values change; False on an out-of-range index."""
    cdef int last = p.nd - 1
    cdef int64_t offs[ROW_BLOCK]
    cdef int64_t j0 = 0, m
    if p.nidx == 1 and p.gnd[0] == 1:
        # the common case: offsets computed, checked and used in one loop
        return tl_idx1_row(p.op, p.dtype, p.isz, a, p.astr[last], p.gstr[0][0], ip[0],
                           p.istr[0][last], p.i32[0], p.iwrap[0], p.ilimit[0], d, p.dstr[last],
                           n) == 0
    while j0 < n:
        m = n - j0 if n - j0 < ROW_BLOCK else ROW_BLOCK
        if not _row_offsets(p, ip, j0, m, offs):
            return False
        tl_idx_row(p.op, p.dtype, p.isz, a, offs, 0, d + j0 * p.dstr[last], p.dstr[last], m)
        j0 += m
    return True


cdef bint _run(const IPlan* p, int split, int64_t lo, int64_t hi) noexcept nogil:
    """Run the plan over coordinates [lo, hi) of loop dim `split` (all of the others).
    Stops and returns False at an out-of-range index, before using it."""
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t cnt[MAX_DIMS]
    cdef char* ip[MAX_DIMS]
    cdef char* a = p.aptr + lo * p.astr[split]
    cdef char* d = p.dptr + lo * p.dstr[split]
    cdef int last = p.nd - 1, k, dd
    cdef int64_t n, base
    cdef bint inner_indexed = False
    for dd in range(p.nd):
        shp[dd] = p.shape[dd]
        cnt[dd] = 0
    shp[split] = hi - lo
    for k in range(p.nidx):
        ip[k] = p.iptr[k] + lo * p.istr[k][split]
        if p.istr[k][last] != 0:
            inner_indexed = True
    n = shp[last]
    if n <= 0:
        return True
    while True:
        if inner_indexed:
            if not _indexed_row(p, ip, a, d, n):
                return False
        else:
            base = _index_offset(p, ip)
            if base < 0:
                return False
            tl_idx_row(p.op, p.dtype, p.isz, a + base, NULL, p.astr[last], d, p.dstr[last], n)
        dd = last - 1                      # next row: odometer over the outer dims
        while dd >= 0:
            cnt[dd] += 1
            a += p.astr[dd]
            d += p.dstr[dd]
            for k in range(p.nidx):
                ip[k] += p.istr[k][dd]
            if cnt[dd] < shp[dd]:
                break
            a -= shp[dd] * p.astr[dd]
            d -= shp[dd] * p.dstr[dd]
            for k in range(p.nidx):
                ip[k] -= shp[dd] * p.istr[k][dd]
            cnt[dd] = 0
            dd -= 1
        if dd < 0:
            return True


cdef int _split_dim(const IPlan* p, int nc) noexcept nogil:
    """The loop dim to share among threads, or -1.  Reads may split any dim; writes only a
    dim along which the written elements are distinct (a real stride in a, not a position
    taken from an index), so threads never write the same element."""
    cdef int dd, best = -1
    cdef bint writes = p.op != TL_IDX_GATHER
    for dd in range(p.nd):
        if writes and p.astr[dd] == 0 and not p.unique:
            continue
        if p.shape[dd] >= nc:
            return dd
        if p.shape[dd] >= 2 and (best < 0 or p.shape[dd] > p.shape[best]):
            best = dd
    return best


cdef bint _execute(const IPlan* p) noexcept nogil:
    """Run the plan, split among threads when it pays; False if an index was out of range."""
    cdef int64_t total = 1, size
    cdef int dd, nc, c, split
    cdef bint ok[MAX_CHUNKS]
    for dd in range(p.nd):
        total *= p.shape[dd]
    if total == 0:
        return True
    nc = num_chunks(total, GRAIN)
    if nc > MAX_CHUNKS:
        nc = MAX_CHUNKS
    split = _split_dim(p, nc) if nc > 1 else -1
    if split < 0:
        return _run(p, 0, 0, p.shape[0])
    size = p.shape[split]
    if nc > size:
        nc = <int>size
    for c in prange(nc, num_threads=nc, schedule="static"):
        ok[c] = _run(p, split, size * c // nc, size * (c + 1) // nc)
    for c in range(nc):
        if not ok[c]:
            return False
    return True


# ---------------------------------------------------------------------------------------
# Building plans
# ---------------------------------------------------------------------------------------
cdef bint _before(const int64_t* k1, const int64_t* k2, int x, int y) noexcept nogil:
    """Loop dim x goes outside loop dim y: larger primary key (a zero key, a broadcast,
    defers to the secondary key), then larger secondary key."""
    if k1[x] != 0 and k1[y] != 0 and k1[x] != k1[y]:
        return k1[x] > k1[y]
    return k2[x] > k2[y]


cdef void _order_and_coalesce(IPlan* p, const int64_t* k1, const int64_t* k2) noexcept nogil:
    """Sort loop dims outermost-first by the keys, drop size-1 dims, merge dims that are one
    run in every operand; leaves at least one dim."""
    cdef int perm[MAX_DIMS]
    cdef int i, j, t, k, dd, nd = 0
    cdef IPlan q = p[0]
    cdef bint merge
    for i in range(p.nd):
        perm[i] = i
    for i in range(1, p.nd):            # insertion sort: stable, nd is small
        j = i
        while j > 0 and _before(k1, k2, perm[j], perm[j - 1]):
            t = perm[j]; perm[j] = perm[j - 1]; perm[j - 1] = t
            j -= 1
    for i in range(q.nd):
        dd = perm[i]
        if q.shape[dd] == 1:
            continue
        if nd > 0:
            merge = (p.astr[nd - 1] == q.astr[dd] * q.shape[dd] and
                     p.dstr[nd - 1] == q.dstr[dd] * q.shape[dd])
            for k in range(q.nidx):
                merge = merge and p.istr[k][nd - 1] == q.istr[k][dd] * q.shape[dd]
            if merge:
                p.shape[nd - 1] *= q.shape[dd]
                p.astr[nd - 1] = q.astr[dd]
                p.dstr[nd - 1] = q.dstr[dd]
                for k in range(q.nidx):
                    p.istr[k][nd - 1] = q.istr[k][dd]
                continue
        p.shape[nd] = q.shape[dd]
        p.astr[nd] = q.astr[dd]
        p.dstr[nd] = q.dstr[dd]
        for k in range(q.nidx):
            p.istr[k][nd] = q.istr[k][dd]
        nd += 1
    if nd == 0:
        nd = 1
        p.shape[0] = 1
        p.astr[0] = 0
        p.dstr[0] = 0
        for k in range(q.nidx):
            p.istr[k][0] = 0
    p.nd = nd


cdef bint _launch(IPlan* p, int op, Array a, Array dense, const int64_t* k1,
                  const int64_t* k2):
    """Finish a plan whose loop dims and indices are set (a: the indexed operand, dense: the
    other one), order and merge its dims by the keys, and run it; False if an index was out
    of range."""
    cdef bint ok
    p.aptr = a.ptr()
    p.dptr = dense.ptr()
    if op != TL_IDX_GATHER and op != TL_IDX_PUT and (a.dtype == TL_COMPLEX64 or
                                                     a.dtype == TL_COMPLEX128):
        raise RuntimeError(f"index reductions (add, multiply, amax, amin) are not implemented "
                           f"for complex tensors")
    p.op = op
    p.dtype = a.dtype
    p.isz = tl_itemsize[a.dtype]
    _order_and_coalesce(p, k1, k2)
    with nogil:
        ok = _execute(p)
    return ok


cdef void _set_group(IPlan* p, int k, Array a, int first, int ndims) noexcept:
    """Index k addresses dims [first, first + ndims) of a, merged where they are one run."""
    cdef int isz = tl_itemsize[a.dtype], g, n = 0
    cdef int64_t numel = 1
    for g in range(first, first + ndims):
        numel *= a.shp[g]
        if n > 0 and p.gstr[k][n - 1] == a.strd[g] * isz * a.shp[g]:
            p.gsize[k][n - 1] *= a.shp[g]
            p.gstr[k][n - 1] = a.strd[g] * isz
            continue
        p.gsize[k][n] = a.shp[g]
        p.gstr[k][n] = a.strd[g] * isz
        n += 1
    p.gnd[k] = n
    p.gnumel[k] = numel


cdef int _set_index(IPlan* p, int k, Array idx) except -1:
    if idx.dtype != TL_INT64 and idx.dtype != TL_INT32:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    p.iptr[k] = idx.ptr()
    p.i32[k] = idx.dtype == TL_INT32
    return 0


cdef inline void _valid_range(int64_t size, bint allow_neg, int64_t* wrap, uint64_t* limit) noexcept nogil:
    """Index v is valid when v + (wrap if v < 0) lies in [0, limit)."""
    wrap[0] = size if allow_neg else 0
    limit[0] = <uint64_t>size


cdef bint _find_bad(Array idx, int64_t wrap, uint64_t limit, int64_t* bad) noexcept nogil:
    """The first value of an int32/int64 array (any strides) outside the valid range."""
    cdef int64_t cnt[MAX_DIMS]
    cdef int64_t v, j, n, st
    cdef int nd = idx.nd, last = idx.nd - 1, dd
    cdef bint i32 = idx.dtype == TL_INT32
    cdef int isz = tl_itemsize[idx.dtype]
    cdef char* p = idx.ptr()
    if idx.n == 0:
        return False
    if nd == 0:
        v = _read_index(p, i32)
        bad[0] = v
        return <uint64_t>(v + (wrap if v < 0 else 0)) >= limit
    n = idx.shp[last]
    st = idx.strd[last] * isz
    for dd in range(nd):
        cnt[dd] = 0
    while True:
        if not tl_idx_all_valid(p, st, n, i32, wrap, limit):
            for j in range(n):
                v = _read_index(p + j * st, i32)
                if <uint64_t>(v + (wrap if v < 0 else 0)) >= limit:
                    bad[0] = v
                    return True
        dd = last - 1
        while dd >= 0:
            cnt[dd] += 1
            p += idx.strd[dd] * isz
            if cnt[dd] < idx.shp[dd]:
                break
            p -= idx.shp[dd] * idx.strd[dd] * isz
            cnt[dd] = 0
            dd -= 1
        if dd < 0:
            return False


cdef int _check_range(Array idx, int64_t size, int dim, tuple err) except -1:
    """Raise err's exception for the first value outside [-size, size) ([0, size) when err
    disallows negative indices)."""
    cdef int64_t wrap, bad = 0
    cdef uint64_t limit
    cdef bint found
    exc, fmt, allow_neg = err
    _valid_range(size, allow_neg, &wrap, &limit)
    with nogil:
        found = _find_bad(idx, wrap, limit, &bad)
    if found:
        raise exc(fmt.format(index=bad, dim=dim, size=size))
    return 0


cdef bint _shares(Array x, Array y):
    return x.storage is y.storage


cdef Array _fresh_copy(Array x):
    """A copy of x in new memory (x may be contiguous already)."""
    cdef Array out = new_array(x.nd, x.shp, x.dtype)
    copy_into(out, x)
    return out


cdef str _shape_str(Array x):
    return str(list(x.shape))


# ---- masks and nonzero -----------------------------------------------------------------
cdef uint64_t _zero_mask(int dtype) noexcept nogil:
    if dtype == TL_FLOAT16 or dtype == TL_BFLOAT16:
        return 0x7fff
    if dtype == TL_FLOAT32:
        return 0x7fffffff
    if dtype == TL_FLOAT64:
        return 0x7fffffffffffffff
    return 0xffffffffffffffff


cdef void _row_start(Array m, int64_t r, char** p, int64_t* coord) noexcept nogil:
    """Pointer to row r (a position over all dims but the last) and its coordinates."""
    cdef int dd
    cdef int64_t off = 0, c
    for dd in range(m.nd - 2, -1, -1):
        c = r % m.shp[dd]
        r = r // m.shp[dd]
        coord[dd] = c
        off += c * m.strd[dd]
    p[0] = m.ptr() + off * tl_itemsize[m.dtype]


cdef int64_t _count_rows(Array m, int64_t r0, int64_t r1, int64_t n, uint64_t zmask) noexcept nogil:
    cdef int64_t r, cnt = 0
    cdef int64_t coord[MAX_DIMS]
    cdef char* p
    cdef int isz = tl_itemsize[m.dtype]
    cdef int64_t st = m.strd[m.nd - 1] * isz if m.nd > 0 else 0
    for r in range(r0, r1):
        _row_start(m, r, &p, coord)
        cnt += tl_nz_count_row(p, st, n, isz, zmask)
    return cnt


cdef void _write_rows(Array m, int64_t r0, int64_t r1, int64_t n, uint64_t zmask,
                      int64_t* out, const int64_t* weights) noexcept nogil:
    """Write the nonzero positions of rows [r0, r1): coordinates (m.nd per element) when
    weights is NULL, else one weighted sum of the coordinates per element."""
    cdef int64_t r, j, base
    cdef int64_t coord[MAX_DIMS]
    cdef char* p
    cdef int isz = tl_itemsize[m.dtype], dd, nd = m.nd
    cdef int64_t st = m.strd[nd - 1] * isz if nd > 0 else 0
    for r in range(r0, r1):
        _row_start(m, r, &p, coord)
        if weights != NULL:
            base = 0
            for dd in range(nd - 1):
                base += coord[dd] * weights[dd]
        for j in range(n):
            if (tl_nz_load(p + j * st, isz) & zmask) == 0:
                continue
            if weights != NULL:
                out[0] = base + (j * weights[nd - 1] if nd > 0 else 0)
                out += 1
            else:
                for dd in range(nd - 1):
                    out[dd] = coord[dd]
                if nd > 0:
                    out[nd - 1] = j
                out += nd


cdef Array _nonzero_bits(Array m):
    """m itself, or for complex m (whose zero test needs both parts) the bool array m != 0."""
    if m.dtype == TL_COMPLEX64 or m.dtype == TL_COMPLEX128:
        return _ew_binary(_EW_BINARY["ne"], m, 0)
    return m


cdef Array _nonzero(Array m, const int64_t* weights):
    """Positions of m's nonzero elements in row-major order: an (n, m.nd) int64 array of
    coordinates, or with weights an (n,) array of sum(coord * weight).  Two passes (count,
    then write at the prefix-summed place), both split over rows among threads."""
    m = _nonzero_bits(m)
    cdef int64_t n = m.shp[m.nd - 1] if m.nd > 0 else 1
    cdef int64_t rows = (m.n // n) if n > 0 else 0
    cdef int64_t counts[MAX_CHUNKS + 1]
    cdef int64_t shp[2]
    cdef uint64_t zmask = _zero_mask(m.dtype)
    cdef int nc, c
    cdef int64_t total
    cdef int64_t* out
    cdef Array res
    nc = num_chunks(m.n, GRAIN)
    if nc > MAX_CHUNKS:
        nc = MAX_CHUNKS
    if nc > rows:
        nc = <int>rows if rows > 0 else 1
    counts[0] = 0
    if m.n > 0:
        with nogil:
            for c in prange(nc, num_threads=nc, schedule="static"):
                counts[c + 1] = _count_rows(m, rows * c // nc, rows * (c + 1) // nc, n, zmask)
    else:
        for c in range(nc):
            counts[c + 1] = 0
    for c in range(nc):
        counts[c + 1] += counts[c]
    total = counts[nc]
    shp[0] = total
    shp[1] = m.nd
    res = new_array(1 if weights != NULL else 2, shp, TL_INT64)
    out = <int64_t*>res.ptr()
    if total > 0:
        with nogil:
            for c in prange(nc, num_threads=nc, schedule="static"):
                _write_rows(m, rows * c // nc, rows * (c + 1) // nc, n, zmask,
                            out + counts[c] * (1 if weights != NULL else m.nd), weights)
    return res


def nonzero(Array a):
    """(n, a.ndim) int64 coordinates of a's nonzero elements, in row-major order."""
    return _nonzero(a, NULL)


cdef Array _mask_offsets(Array mask, Array a, int first):
    """Byte offsets in a of the elements a mask over dims [first, first + mask.ndim) selects."""
    cdef int64_t w[MAX_DIMS]
    cdef int j, isz = tl_itemsize[a.dtype]
    for j in range(mask.nd):
        w[j] = a.strd[first + j] * isz
    return _nonzero(mask, w)


cdef int _check_mask(Array mask, Array a, int first) except -1:
    cdef int j
    if mask.dtype != TL_BOOL and mask.dtype != TL_UINT8:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if first + mask.nd > a.nd:
        raise IndexError(f"too many indices for tensor of dimension {a.nd}")
    for j in range(mask.nd):
        if mask.shp[j] != a.shp[first + j]:
            raise IndexError(f"The shape of the mask {_shape_str(mask)} at index {j} does not match "
                             f"the shape of the indexed tensor {_shape_str(a)} at index {first + j}")
    return 0


# ---------------------------------------------------------------------------------------
# Advanced indexing
# ---------------------------------------------------------------------------------------
cdef int _broadcast_indices(list idxs, int64_t* bshape) except -1:
    """Broadcast the index arrays' shapes into bshape; returns its ndim."""
    cdef int nb = 0, i, j, k
    cdef Array x
    for x in idxs:
        if x.nd > nb:
            nb = x.nd
    for i in range(nb):
        bshape[i] = 1
    for x in idxs:
        if broadcast_into(bshape, nb, x.nd, x.shp) >= 0:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                             "with shapes " + ", ".join(_shape_str(y) for y in idxs))
    return nb


def advanced(int op, Array a, list groups, Array value=None, tuple err=None):
    """NumPy/PyTorch advanced indexing of `a` by index arrays.

    groups: (first_dim, ndims, index Array, kind) in increasing, non-overlapping dim order.
    kind KIND_INDEX: int64/int32 positions into dims [first, first+ndims) taken as one flat
    dim (ndims is 1 for ordinary indexing, a.ndim for take/put); KIND_MASK: a bool/uint8
    mask whose shape is a.shape[first:first+ndims].  The index arrays broadcast together to
    B; the result has a's other dims with B in place of the indexed ones when the groups are
    adjacent, else B first.  op GATHER returns the result; PUT/ADD/MUL/MAX/MIN combine
    `value` (a.dtype, broadcast to the result's shape) into a and return None.
    err = (exception class, message format with {index} {dim} {size}, allow negative)."""
    cdef IPlan p
    cdef int64_t bshape[MAX_DIMS]
    cdef int64_t oshape[MAX_DIMS]
    cdef int64_t vstr[MAX_DIMS]
    cdef int64_t k1[2 * MAX_DIMS]
    cdef int64_t k2[2 * MAX_DIMS]
    cdef int rest[MAX_DIMS]
    cdef int covered[MAX_DIMS]
    cdef int ng = len(groups), nb, nr = 0, bpos, ond, i, k, j, first, ndims, prev_end
    cdef int isz = tl_itemsize[a.dtype], vk
    cdef int64_t maxg = 0, total, btotal
    cdef bint adjacent = True, writes = op != TL_IDX_GATHER
    cdef Array idx, out = None
    cdef list idxs = []
    if err is None:
        err = _DEFAULT_ERR
    if ng == 0 or ng > MAX_DIMS:
        raise RuntimeError(f"advanced indexing: expected 1 to {MAX_DIMS} index arrays, got {ng}")
    if op < TL_IDX_GATHER or op > TL_IDX_MIN:
        raise ValueError(f"advanced indexing: unknown op {op}")
    for i in range(a.nd):
        covered[i] = 0
    prev_end = 0
    p.unique = ng == 1
    for k in range(ng):
        first, ndims, idx, kind = groups[k]
        if first < prev_end or ndims < 0 or first + ndims > a.nd:
            raise RuntimeError(f"advanced indexing: bad index group ({first}, {ndims}) for a "
                               f"tensor of dimension {a.nd}")
        if k > 0 and first != prev_end:
            adjacent = False
        prev_end = first + ndims
        for i in range(first, first + ndims):
            covered[i] = 1
        if kind == KIND_MASK:
            if idx.nd != ndims:
                raise RuntimeError(f"advanced indexing: a mask of dimension {idx.nd} given for "
                                   f"{ndims} dims")
            _check_mask(idx, a, first)
            idx = _mask_offsets(idx, a, first)
            p.iptr[k] = idx.ptr()
            p.i32[k] = False
            p.gnd[k] = 1
            p.gsize[k][0] = 1
            p.gstr[k][0] = 1
            p.gnumel[k] = 0
            p.iwrap[k] = 0
            p.ilimit[k] = <uint64_t>-1
        elif kind == KIND_INDEX:
            _set_index(&p, k, idx)
            _set_group(&p, k, a, first, ndims)
            _valid_range(p.gnumel[k], err[2], &p.iwrap[k], &p.ilimit[k])
            p.unique = False
            if writes and _shares(idx, a):
                idx = _fresh_copy(idx)
                p.iptr[k] = idx.ptr()
        else:
            raise ValueError(f"advanced indexing: unknown index kind {kind}")
        if p.gnd[k] > 0 and p.gstr[k][0] > maxg:
            maxg = p.gstr[k][0]
        idxs.append(idx)
    nb = _broadcast_indices(idxs, bshape)
    for i in range(a.nd):
        if not covered[i]:
            rest[nr] = i
            nr += 1
    # where B goes in the result: in place of adjacent groups, else first
    bpos = 0
    if adjacent:
        first = groups[0][0]
        for i in range(nr):
            if rest[i] < first:
                bpos += 1
    ond = nr + nb
    if ond > MAX_DIMS:
        raise RuntimeError(f"advanced indexing: the result would have {ond} dimensions; at most "
                           f"{MAX_DIMS} are supported")
    for i in range(bpos):
        oshape[i] = a.shp[rest[i]]
    for i in range(nb):
        oshape[bpos + i] = bshape[i]
    for i in range(bpos, nr):
        oshape[nb + i] = a.shp[rest[i]]
    # Writes check every index first, so that they fail untouched.  Like PyTorch, nothing is
    # checked when the result is empty, except indices into an empty dim.
    total = 1
    btotal = 1
    for i in range(ond):
        total *= oshape[i]
    for i in range(nb):
        btotal *= bshape[i]
    for k in range(ng):
        if groups[k][3] == KIND_INDEX and ((writes and total > 0) or (p.gnumel[k] == 0 and btotal > 0)):
            _check_range(idxs[k], p.gnumel[k], groups[k][0], err)
    # the dense operand: the new result, or the value broadcast to the result's shape
    if not writes:
        out = new_array(ond, oshape, a.dtype)
        value = out
        for i in range(ond):
            vstr[i] = out.strd[i] * isz
    else:
        if value is None:
            raise RuntimeError("advanced indexing: a value is required to write")
        if value.dtype != a.dtype:
            raise RuntimeError(f"advanced indexing: value dtype code {value.dtype} does not match "
                               f"the tensor's {a.dtype}")
        if _shares(value, a):
            value = _fresh_copy(value)
        if value.nd > ond:
            raise RuntimeError(f"shape mismatch: value tensor of shape {_shape_str(value)} cannot be "
                               f"broadcast to indexing result of shape {list(shape_tuple(ond, oshape))}")
        vk = ond - value.nd
        for i in range(ond):
            j = i - vk
            if j < 0 or value.shp[j] == 1:
                vstr[i] = 0
            elif value.shp[j] == oshape[i]:
                vstr[i] = value.strd[j] * tl_itemsize[value.dtype]
            else:
                raise RuntimeError(f"shape mismatch: value tensor of shape {_shape_str(value)} cannot "
                                   f"be broadcast to indexing result of shape "
                                   f"{list(shape_tuple(ond, oshape))}")
    # loop dims: B first, then the rest
    p.nd = ond
    p.nidx = ng
    for i in range(nb):
        p.shape[i] = bshape[i]
        p.astr[i] = 0
        p.dstr[i] = vstr[bpos + i]
        k1[i] = p.dstr[i]
        k2[i] = maxg
    for i in range(nr):
        j = i if i < bpos else nb + i
        p.shape[nb + i] = a.shp[rest[i]]
        p.astr[nb + i] = a.strd[rest[i]] * isz
        p.dstr[nb + i] = vstr[j]
        k1[nb + i] = p.dstr[nb + i]
        k2[nb + i] = p.astr[nb + i]
    for k in range(ng):
        idx = idxs[k]
        vk = nb - idx.nd
        for i in range(ond):
            p.istr[k][i] = 0
        for i in range(idx.nd):
            if idx.shp[i] != 1:
                p.istr[k][vk + i] = idx.strd[i] * tl_itemsize[idx.dtype]
    if not _launch(&p, op, a, value, k1, k2):
        for k in range(ng):
            if groups[k][3] == KIND_INDEX:
                _check_range(idxs[k], p.gnumel[k], groups[k][0], err)
        raise RuntimeError("advanced indexing: an index changed while it was in use")
    return out


# ---------------------------------------------------------------------------------------
# Along one dim: gather, scatter and their reductions
# ---------------------------------------------------------------------------------------
def along_dim(int op, Array a, int dim, Array index, Array src=None, tuple err=None):
    """gather (op GATHER: out[pos] = a[pos with pos[dim] = index[pos]], a new array of the
    index's shape) or scatter (a[pos with pos[dim] = index[pos]] op= src[pos]).  index has
    a's ndim and is no larger than a outside `dim` (and than src everywhere); src has a's
    dtype.  Indices must lie in [0, a.shape[dim])."""
    cdef IPlan p
    cdef int64_t k1[MAX_DIMS]
    cdef int64_t k2[MAX_DIMS]
    cdef int i, isz = tl_itemsize[a.dtype]
    cdef bint writes = op != TL_IDX_GATHER
    cdef Array out = None
    if err is None:
        err = _ALONG_DIM_ERR
    if op < TL_IDX_GATHER or op > TL_IDX_MIN:
        raise ValueError(f"along_dim: unknown op {op}")
    if index.nd != a.nd or a.nd == 0 or dim < 0 or dim >= a.nd:
        raise RuntimeError(f"along_dim: index of dimension {index.nd} for a tensor of dimension "
                           f"{a.nd} along dim {dim}")
    for i in range(a.nd):
        if i != dim and index.shp[i] > a.shp[i]:
            raise RuntimeError(f"Size does not match at dimension {i} expected index "
                               f"{_shape_str(index)} to be no larger than self {_shape_str(a)} "
                               f"apart from dimension {dim}")
    _set_index(&p, 0, index)
    err = (err[0], err[1], False)
    _valid_range(a.shp[dim], False, &p.iwrap[0], &p.ilimit[0])
    if writes:
        _check_range(index, a.shp[dim], dim, err)
    if not writes:
        out = new_array(index.nd, index.shp, a.dtype)
        src = out
    else:
        if src is None or src.dtype != a.dtype or src.nd != index.nd:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        for i in range(a.nd):
            if index.shp[i] > src.shp[i]:
                raise RuntimeError(f"Expected index {_shape_str(index)} to be no larger than self "
                                   f"{_shape_str(a)} apart from dimension {dim} and to be no larger "
                                   f"size than src {_shape_str(src)}")
        if _shares(src, a):
            src = _fresh_copy(src)
        if _shares(index, a):
            index = _fresh_copy(index)
            p.iptr[0] = index.ptr()
    p.nd = a.nd
    p.nidx = 1
    p.unique = False
    for i in range(a.nd):
        p.shape[i] = index.shp[i]
        p.astr[i] = 0 if i == dim else a.strd[i] * isz
        p.dstr[i] = src.strd[i] * isz
        p.istr[0][i] = index.strd[i] * tl_itemsize[index.dtype]
        k1[i] = p.istr[0][i]
        k2[i] = p.dstr[i]
    p.gnd[0] = 1
    p.gsize[0][0] = a.shp[dim]
    p.gstr[0][0] = a.strd[dim] * isz
    p.gnumel[0] = a.shp[dim]
    if not _launch(&p, op, a, src, k1, k2):
        _check_range(index, a.shp[dim], dim, err)
        raise RuntimeError("gather/scatter: an index changed while it was in use")
    return out


def count_nonzero(Array a):
    """How many elements of a are nonzero."""
    a = _nonzero_bits(a)
    cdef int64_t n = a.shp[a.nd - 1] if a.nd > 0 else 1
    cdef int64_t rows = (a.n // n) if n > 0 else 0, total = 0
    if a.n == 0:
        return 0
    with nogil:
        total = _count_rows(a, 0, rows, n, _zero_mask(a.dtype))
    return total
