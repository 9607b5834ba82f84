# Kernels for joining and shape ops that copies into views cannot express in one pass:
# zeroing a triangle of each matrix (tril/triu), the index pairs of a triangle
# (tril_indices/triu_indices), and repeating slices a varying number of times
# (repeat_interleave with a tensor of repeats).  They move bytes, so one copy serves every
# dtype (the zero of every dtype is all-zero bits).  Also cat/stack's checks and per-input
# copies, which cost a Python loop per input otherwise.
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memset, memcpy
from torchlite._core.array cimport Array, MAX_DIMS, new_array, make_view, tl_itemsize, TL_INT64
from torchlite._core.elementwise cimport copy_into, promote_types
from torchlite._core.parallel cimport num_chunks

cdef int64_t GRAIN = 32768          # elements per thread below which a loop stays serial


cdef void _zero_run(char* p, int64_t stride, int64_t cnt, int isz) noexcept nogil:
    """Zero cnt elements of isz bytes, stride elements apart."""
    cdef int64_t t
    if stride == 1:
        memset(p, 0, cnt * isz)
    elif isz == 1:
        for t in range(cnt):
            (<uint8_t*>p)[t * stride] = 0
    elif isz == 2:
        for t in range(cnt):
            (<uint16_t*>p)[t * stride] = 0
    elif isz == 4:
        for t in range(cnt):
            (<uint32_t*>p)[t * stride] = 0
    else:
        for t in range(cnt):
            (<uint64_t*>p)[t * stride] = 0


cdef struct Matrices:
    char* data              # first element of the array
    int nd
    int isz
    int64_t shp[MAX_DIMS]
    int64_t strd[MAX_DIMS]


cdef void _zero_row(Matrices* a, int64_t r, int64_t diagonal, bint keep_upper) noexcept nogil:
    """Zero the part of matrix row r (numbered over the batch dims and the row dim) that
    tril (keep_upper False) or triu (keep_upper True) drops."""
    cdef int nd = a.nd, k
    cdef int64_t rows = a.shp[nd - 2], cols = a.shp[nd - 1]
    cdef int64_t i = r % rows, q = r // rows, off = i * a.strd[nd - 2], lo, hi
    for k in range(nd - 3, -1, -1):
        off += (q % a.shp[k]) * a.strd[k]
        q = q // a.shp[k]
    if keep_upper:                      # triu drops columns j < i + diagonal
        lo = 0
        hi = i + diagonal
    else:                               # tril drops columns j > i + diagonal
        lo = i + diagonal + 1
        hi = cols
    lo = 0 if lo < 0 else (cols if lo > cols else lo)
    hi = lo if hi < lo else (cols if hi > cols else hi)
    if hi > lo:
        _zero_run(a.data + (off + lo * a.strd[nd - 1]) * a.isz, a.strd[nd - 1], hi - lo, a.isz)


def zero_triangle(Array a, int64_t diagonal, bint keep_upper):
    """In place: zero the elements of each matrix (the last two dims of a) above diagonal
    `diagonal` (tril) or, with keep_upper, below it (triu)."""
    cdef int64_t nrows, r
    cdef int nc, k
    cdef Matrices m
    if a.nd < 2:
        raise RuntimeError(f"{'triu' if keep_upper else 'tril'}: input tensor must have at least "
                           f"2 dimensions")
    if a.n == 0:
        return a
    m.data = a.ptr()
    m.nd = a.nd
    m.isz = tl_itemsize[a.dtype]
    for k in range(a.nd):
        m.shp[k] = a.shp[k]
        m.strd[k] = a.strd[k]
    nrows = a.n // a.shp[a.nd - 1]
    nc = num_chunks(a.n, GRAIN)
    with nogil:
        if nc <= 1:
            for r in range(nrows):
                _zero_row(&m, r, diagonal, keep_upper)
        else:
            for r in prange(nrows, num_threads=nc, schedule="static"):
                _zero_row(&m, r, diagonal, keep_upper)
    return a


cdef inline int64_t _row_count(int64_t i, int64_t col, int64_t offset, bint upper) noexcept nogil:
    """How many columns of row i a triangle holds."""
    cdef int64_t c = i + offset + (0 if upper else 1)
    c = 0 if c < 0 else (col if c > col else c)
    return col - c if upper else c


def tri_indices(int64_t row, int64_t col, int64_t offset, bint upper):
    """The (2, N) int64 coordinates of the lower (or upper) triangle of a row x col matrix,
    row by row."""
    cdef int64_t i, j, n = 0, c, first, t = 0
    cdef int64_t shp[2]
    cdef Array out
    cdef int64_t* p
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    for i in range(row):
        n += _row_count(i, col, offset, upper)
    shp[0] = 2
    shp[1] = n
    out = new_array(2, shp, TL_INT64)
    p = <int64_t*>out.ptr()
    with nogil:
        for i in range(row):
            c = _row_count(i, col, offset, upper)
            first = col - c if upper else 0
            for j in range(first, first + c):
                p[t] = i
                p[n + t] = j
                t += 1
    return out


def repeat_blocks(Array src, int dim, Array repeats, int64_t total):
    """Slice i of the contiguous array src along dim, repeated repeats[i] times (repeats:
    contiguous int64 of src.shape[dim] non-negative counts summing to total)."""
    cdef int64_t outer = 1, inner = 1, n = src.shp[dim], o, i, r, blk, s = 0
    cdef int64_t shp[MAX_DIMS]
    cdef const int64_t* rep = <const int64_t*>repeats.ptr()
    cdef Array out
    cdef char* base
    cdef char* obase
    cdef char* dst
    cdef int k, nc
    if not src.is_contiguous() or not repeats.is_contiguous() or repeats.dtype != TL_INT64:
        raise ValueError("repeat_blocks: src and repeats must be contiguous, repeats int64")
    if repeats.n != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {repeats.n} and input.size({dim}) = {n}")
    for i in range(n):
        if rep[i] < 0:
            raise RuntimeError("repeats can not be negative")
        s += rep[i]
    if s != total:
        raise RuntimeError("allocated size does not match required size")
    for k in range(src.nd):
        shp[k] = src.shp[k]
        if k < dim:
            outer *= src.shp[k]
        elif k > dim:
            inner *= src.shp[k]
    shp[dim] = total
    out = new_array(src.nd, shp, src.dtype)
    if out.n == 0:
        return out
    blk = inner * tl_itemsize[src.dtype]
    base = src.ptr()
    obase = out.ptr()
    nc = num_chunks(out.n, GRAIN)
    if nc > outer:
        nc = <int>outer
    with nogil:
        for o in prange(outer, num_threads=nc, schedule="static"):
            dst = obase + o * total * blk
            for i in range(n):
                for r in range(rep[i]):
                    memcpy(dst, base + (o * n + i) * blk, blk)
                    dst = dst + blk
    return out


# ---------------------------------------------------------------------------------------
# cat and stack: checks and the copies into slices of the result, without a Python-level
# loop per input (many small inputs are common: lists of batches, of features)
# ---------------------------------------------------------------------------------------
cdef inline bint _legacy_empty(Array a) noexcept:
    return a.nd == 1 and a.shp[0] == 0


cdef int _wrap_dim(int64_t dim, int nd) except -1:
    cdef int lo = -nd if nd > 0 else -1, hi = nd - 1 if nd > 0 else 0
    if dim < lo or dim > hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {dim})")
    return <int>(dim + nd if dim < 0 else dim)


def cat_plan(list arrays, int64_t dim):
    """(shape, dtype, dim) of the concatenation of arrays along dim, with PyTorch's checks and
    messages; 1-d arrays of shape (0,) are skipped, as PyTorch does."""
    cdef int i, k, nd = 0, d = 0, dtype = -1
    cdef Array a, ref = None
    cdef int64_t total = 0
    if not arrays:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i in range(len(arrays)):
        a = <Array?>arrays[i]
        if a.nd == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        dtype = a.dtype if dtype < 0 else promote_types(dtype, a.dtype)
        if _legacy_empty(a):
            continue
        if ref is None:
            ref = a
            nd = a.nd
            d = _wrap_dim(dim, nd)
        elif a.nd != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {a.nd}")
        else:
            for k in range(nd):
                if k != d and a.shp[k] != ref.shp[k]:
                    raise RuntimeError(
                        f"Sizes of tensors must match except in dimension {d}. Expected size "
                        f"{ref.shp[k]} but got size {a.shp[k]} for tensor number {i} in the list.")
        total += a.shp[d]
    if ref is None:
        return (0,), dtype, 0
    shape = list(ref.shape)
    shape[d] = total
    return tuple(shape), dtype, d


cpdef int check_no_alias(Array out, list arrays) except -1:
    """PyTorch's error when an input shares memory with the out= array."""
    cdef Array a
    for a in arrays:
        if a.storage is out.storage:
            raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                               "written-to tensor refer to a single memory location. Please "
                               "clone() the tensor before performing the operation.")
    return 0


def cat_into(Array out, list arrays, int d):
    """Copy each array (cast to out's dtype) into its slice of out along dim d."""
    cdef Array a
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t start = 0
    cdef int k
    check_no_alias(out, arrays)
    for k in range(out.nd):
        shp[k] = out.shp[k]
    for a in arrays:
        if _legacy_empty(a) and out.nd != 1:
            continue
        shp[d] = a.shp[d]
        copy_into(make_view(out, out.nd, shp, out.strd, out.off + start * out.strd[d]), a)
        start += a.shp[d]
    return out


def stack_plan(list arrays, int64_t dim):
    """(shape, dtype, dim) of stacking equal-shaped arrays along a new dim."""
    cdef int i, k, dtype
    cdef bint same
    cdef Array a, a0
    if not arrays:
        raise RuntimeError("stack expects a non-empty TensorList")
    a0 = <Array?>arrays[0]
    dtype = a0.dtype
    for i in range(len(arrays)):
        a = <Array?>arrays[i]
        dtype = promote_types(dtype, a.dtype)
        same = a.nd == a0.nd
        for k in range(a.nd if same else 0):
            same = same and a.shp[k] == a0.shp[k]
        if not same:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(a0.shape)} at entry 0 and {list(a.shape)} at entry {i}")
    d = _wrap_dim(dim, a0.nd + 1)
    shape = list(a0.shape)
    shape.insert(d, len(arrays))
    return tuple(shape), dtype, d


def stack_into(Array out, list arrays, int d):
    """Copy array i into index i of out's dim d."""
    cdef Array a
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int64_t i = 0
    cdef int k, j = 0
    check_no_alias(out, arrays)
    for k in range(out.nd):
        if k != d:
            shp[j] = out.shp[k]
            st[j] = out.strd[k]
            j += 1
    for a in arrays:
        copy_into(make_view(out, out.nd - 1, shp, st, out.off + i * out.strd[d]), a)
        i += 1
    return out
