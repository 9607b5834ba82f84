# The CPU array layer's data structure: Storage (an aligned, reference-counted buffer with
# a caching allocator) and Array (a strided view over one).  View operations only build new
# metadata; compute lives in elementwise.pyx, reduction.pyx, matmul.pyx, indexing.pyx, random.pyx.
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint8_t, int8_t, int16_t, int32_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memset, memcpy
import os

cdef extern from "kernels/alloc.h":
    void* tl_aligned_alloc(size_t align, size_t n) nogil
    void tl_aligned_free(void* p) nogil
    void tl_advise_huge(void* p, size_t n) nogil

cdef extern from "kernels/types.h":
    float tl_half_to_float(uint16_t h) nogil
    uint16_t tl_float_to_half(float f) nogil
    float tl_bf16_to_float(uint16_t h) nogil
    uint16_t tl_float_to_bf16(float f) nogil


# ---------------------------------------------------------------------------------------
# Host caching allocator.  PyTorch's CPU build returns large buffers to the OS and pays a
# page fault per 4 KiB page on every new output; keeping freed blocks (by size class) for
# reuse removes that cost from training loops, where the same shapes recur every step.
# ---------------------------------------------------------------------------------------
cdef Py_ssize_t POOL_MIN = 128 * 1024          # smaller blocks: malloc's own bins are fast
cdef Py_ssize_t HUGE = 2 * 1024 * 1024
cdef dict _pool = {}                           # size class -> list of addresses
cdef Py_ssize_t _pool_bytes = 0                # bytes held in _pool (free, cached)
cdef Py_ssize_t _live_bytes = 0                # bytes in live storages we allocated
cdef Py_ssize_t _pool_limit = int(os.environ.get("TORCHLITE_CPU_CACHE_MB", "1024")) * 1024 * 1024
cdef object _alloc_observer = None             # set_alloc_observer's function, or None


cdef inline Py_ssize_t _size_class(Py_ssize_t nbytes):
    if nbytes < POOL_MIN:
        return (nbytes + 63) & ~<Py_ssize_t>63
    if nbytes < HUGE:
        return (nbytes + 65535) & ~<Py_ssize_t>65535
    return (nbytes + HUGE - 1) & ~(HUGE - 1)


class CpuOutOfMemoryError(RuntimeError, MemoryError):
    """A host allocation failed.  PyTorch raises RuntimeError ("DefaultCPUAllocator: can't
    allocate memory"), which scripts catch; Python code catches MemoryError: this is both."""


cdef char* _alloc(Py_ssize_t cls) except NULL:
    global _pool_bytes
    cdef list free
    cdef void* p
    if cls >= POOL_MIN:
        free = _pool.get(cls)
        if free:
            _pool_bytes -= cls
            return <char*><Py_ssize_t>free.pop()
    p = tl_aligned_alloc(HUGE if cls >= HUGE else 64, cls)
    if p == NULL and _pool_bytes:
        empty_cache()
        p = tl_aligned_alloc(HUGE if cls >= HUGE else 64, cls)
    if p == NULL:
        raise CpuOutOfMemoryError(f"DefaultCPUAllocator: can't allocate memory: you tried to "
                                  f"allocate {cls} bytes (torchlite)")
    if cls >= HUGE:
        tl_advise_huge(p, cls)
    return <char*>p


cdef void _release(char* p, Py_ssize_t cls):
    global _pool_bytes
    if cls >= POOL_MIN and _pool_bytes + cls <= _pool_limit:
        _pool.setdefault(cls, []).append(<Py_ssize_t>p)
        _pool_bytes += cls
    else:
        tl_aligned_free(p)


def empty_cache():
    """Return every cached free host block to the operating system."""
    global _pool_bytes
    for cls, free in _pool.items():
        for addr in free:
            tl_aligned_free(<void*><Py_ssize_t>addr)
    _pool.clear()
    _pool_bytes = 0


def live_bytes():
    """Bytes in live storages allocated by torchlite (their allocation sizes): what the
    profiler's memory columns difference around each event."""
    return _live_bytes


def set_alloc_observer(observer):
    """While `observer` is set (the profiler's, with profile_memory), each storage allocation
    and free calls observer(address, nbytes, allocated, reserved) after it: the block's size
    (negative for a free) and the live and live-plus-cached totals then.  None stops it."""
    global _alloc_observer
    _alloc_observer = observer


def memory_stats():
    """Bytes in live storages allocated by torchlite, and bytes cached for reuse."""
    return {"allocated": _live_bytes, "cached": _pool_bytes, "cache_limit": _pool_limit}


def set_cache_limit(Py_ssize_t nbytes):
    global _pool_limit
    _pool_limit = nbytes
    if _pool_bytes > nbytes:
        empty_cache()


cdef class Storage:
    """A flat, aligned byte buffer shared by every view over it."""

    def __dealloc__(self):
        global _live_bytes
        cdef Py_ssize_t address = <Py_ssize_t>self.data, cls = self.pool_bytes
        if self.data != NULL and cls:
            _live_bytes -= cls
            _release(self.data, cls)
            if _alloc_observer is not None:
                try:                        # (a destructor cannot raise)
                    _alloc_observer(address, -cls, _live_bytes, _live_bytes + _pool_bytes)
                except BaseException:
                    pass
        self.data = NULL

    @property
    def nbytes(self):
        return self.nbytes

    def data_ptr(self):
        return <Py_ssize_t>self.data


cdef Storage new_storage(Py_ssize_t nbytes):
    global _live_bytes
    cdef Storage s = Storage.__new__(Storage)
    cdef Py_ssize_t cls = _size_class(nbytes if nbytes > 0 else 1)
    s.data = _alloc(cls)
    s.nbytes = nbytes
    s.pool_bytes = cls
    _live_bytes += cls
    if _alloc_observer is not None:
        _alloc_observer(<Py_ssize_t>s.data, cls, _live_bytes, _live_bytes + _pool_bytes)
    return s


cdef Storage external_storage(Py_ssize_t address, Py_ssize_t nbytes, object owner):
    cdef Storage s = Storage.__new__(Storage)
    s.data = <char*>address
    s.nbytes = nbytes
    s.pool_bytes = 0
    s.owner = owner
    return s


# ---------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------
cdef int parse_shape(object shape, int64_t* out, str op) except -1:
    """Read a sequence of non-negative ints into out; returns ndim."""
    cdef Py_ssize_t nd, i
    cdef object d
    if not isinstance(shape, (tuple, list)):
        shape = tuple(shape)
    nd = len(shape)
    if nd > MAX_DIMS:
        raise RuntimeError(f"{op}: torchlite supports at most {MAX_DIMS} dimensions, got {nd}")
    for i in range(nd):
        d = shape[i]
        if not isinstance(d, int):
            try:
                d = d.__index__()
            except AttributeError:
                raise TypeError(f"{op}: size must be a sequence of ints, but got {type(shape[i]).__name__} "
                                f"at position {i} of {tuple(shape)}") from None
        if d < 0:
            raise RuntimeError(f"{op}: negative dimension {d} in size {tuple(shape)}")
        out[i] = d
    return <int>nd


cdef tuple shape_tuple(int ndim, const int64_t* shape):
    return tuple([shape[i] for i in range(ndim)])


cdef int64_t NUMEL_LIMIT = (<int64_t>1) << 62   # larger products saturate here


cdef inline int64_t _numel(int ndim, const int64_t* shape) noexcept nogil:
    """The product of shape, saturated at NUMEL_LIMIT (so it never wraps): an array that big
    can be a view (expand) but never be allocated or iterated."""
    cdef int64_t n = 1
    cdef int i
    for i in range(ndim):
        if shape[i] == 0:
            return 0
    for i in range(ndim):
        if n > NUMEL_LIMIT // shape[i]:
            return NUMEL_LIMIT
        n *= shape[i]
    return n


cdef int64_t _i64(object v, str op) except? -1:
    """A Python int as int64, with PyTorch's ValueError (not OverflowError) when it does not fit."""
    try:
        return v
    except OverflowError:
        raise ValueError(f"{op}: Overflow when unpacking long long ({v})") from None


cdef Array new_array(int ndim, const int64_t* shape, int dtype):
    """A new C-contiguous array (uninitialised memory)."""
    cdef Array a = Array.__new__(Array)
    cdef int i
    cdef int64_t st = 1, n = _numel(ndim, shape)
    if n >= NUMEL_LIMIT // 8:
        raise RuntimeError(f"torchlite: size {shape_tuple(ndim, shape)} is too large to allocate")
    a.dtype = dtype
    a.nd = ndim
    a.off = 0
    a.n = n
    for i in range(ndim - 1, -1, -1):
        a.shp[i] = shape[i]
        a.strd[i] = st
        st *= shape[i] if shape[i] > 1 else 1
    a.storage = new_storage(n * tl_itemsize[dtype])
    return a


cdef Array new_array_strided(int ndim, const int64_t* shape, const int64_t* order, int dtype):
    """A new dense array whose dims are laid out innermost-first in `order` (order[0] is the
    dim with stride 1).  Used to give elementwise outputs their inputs' memory layout."""
    cdef Array a = new_array(ndim, shape, dtype)
    cdef int64_t st = 1
    cdef int i, d
    for i in range(ndim):
        d = order[i]
        a.strd[d] = st
        st *= shape[d] if shape[d] > 1 else 1
    return a


cdef Array make_view(Array base, int ndim, const int64_t* shape, const int64_t* strides, int64_t offset):
    cdef Array a = Array.__new__(Array)
    cdef int i
    a.storage = base.storage
    a.dtype = base.dtype
    a.nd = ndim
    a.off = offset
    a.n = _numel(ndim, shape)
    for i in range(ndim):
        a.shp[i] = shape[i]
        a.strd[i] = strides[i]
    return a


cdef inline int _wrap_dim(int64_t d, int ndim, str op) except -1:
    cdef int lo = -ndim if ndim > 0 else -1
    cdef int hi = ndim - 1 if ndim > 0 else 0
    if d < lo or d > hi:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})")
    if d < 0:
        return <int>(d + ndim if ndim > 0 else 0)    # 0-d: dims -1 and 0 both mean "the" dim
    return <int>d


cdef int broadcast_into(int64_t* out, int nd_out, int nd, const int64_t* shape) noexcept nogil:
    """Broadcast `shape` (nd dims, right-aligned) into `out` (nd_out >= nd dims, 1s where not
    yet set).  Returns the out dim where the sizes conflict, or -1: the caller raises its own
    op's error."""
    cdef int j, k
    for j in range(nd):
        k = nd_out - nd + j
        if shape[j] == out[k] or shape[j] == 1:
            continue
        if out[k] != 1:
            return k
        out[k] = shape[j]
    return -1


def broadcast_shapes(*shapes):
    """The broadcast of several shapes (PyTorch's rules), or RuntimeError naming them."""
    cdef int nd = 0, i, j, k
    cdef int64_t out[MAX_DIMS]
    cdef int64_t cur[MAX_DIMS]
    cdef int n
    for s in shapes:
        if len(s) > nd:
            nd = len(s)
    if nd > MAX_DIMS:
        raise RuntimeError(f"broadcast: at most {MAX_DIMS} dimensions are supported")
    for i in range(nd):
        out[i] = 1
    for s in shapes:
        n = parse_shape(s, cur, "broadcast_shapes")
        if broadcast_into(out, nd, n, cur) >= 0:
            raise RuntimeError(
                "shape mismatch: objects cannot be broadcast to a single shape: "
                + " and ".join(str(tuple(x)) for x in shapes))
    return shape_tuple(nd, out)


# ---------------------------------------------------------------------------------------
# The Array
# ---------------------------------------------------------------------------------------
_NP_TYPESTR = ("|b1", "|u1", "|i1", "<i2", "<i4", "<i8", "<f2", None, "<f4", "<f8", "<c8",
               "<c16", None)          # NumPy has no bfloat16 or complex32


cdef class Array:
    """A strided n-d view: shape, strides and offset in elements, over a Storage."""

    cdef bint contiguous(self) noexcept nogil:
        cdef int64_t st = 1
        cdef int i
        if self.n == 0:
            return True
        for i in range(self.nd - 1, -1, -1):
            if self.shp[i] != 1:
                if self.strd[i] != st:
                    return False
                st *= self.shp[i]
        return True

    cdef bint internal_overlap(self) noexcept nogil:
        """True when two elements share memory through a zero stride (what PyTorch refuses
        to write to)."""
        cdef int i
        for i in range(self.nd):
            if self.strd[i] == 0 and self.shp[i] > 1:
                return True
        return False

    def has_internal_overlap(self):
        return self.internal_overlap()

    # -- metadata ---------------------------------------------------------------------
    @property
    def shape(self):
        if self._shape_tuple is None:
            self._shape_tuple = shape_tuple(self.nd, self.shp)
        return self._shape_tuple

    @property
    def strides(self):
        return shape_tuple(self.nd, self.strd)

    @property
    def offset(self):
        return self.off

    @property
    def ndim(self):
        return self.nd

    @property
    def numel(self):
        return self.n

    @property
    def itemsize(self):
        return tl_itemsize[self.dtype]

    @property
    def device(self):
        return "cpu"

    def is_contiguous(self):
        return self.contiguous()

    def data_ptr(self):
        return <Py_ssize_t>self.ptr()

    def storage_nbytes(self):
        return self.storage.nbytes

    def alias_with_own_version(self):
        """The same view over the same memory, with a storage object (so a version counter) of
        its own: what Tensor.data returns, so that in-place changes through it are not seen by
        autograd's checks, as in PyTorch."""
        cdef Array v = make_view(self, self.nd, self.shp, self.strd, self.off)
        v.storage = external_storage(<Py_ssize_t>self.storage.data, self.storage.nbytes, self.storage)
        return v

    def same_storage(self, Array other):
        return self.storage is other.storage

    def is_non_overlapping_and_dense(self):
        """True when the elements fill a block of memory with no gaps and no overlap."""
        cdef int64_t perm[MAX_DIMS]
        cdef int i, j, t
        cdef int64_t st = 1
        for i in range(self.nd):
            perm[i] = i
        for i in range(1, self.nd):      # sort dims by stride (insertion sort, nd is small)
            j = i
            while j > 0 and self.strd[perm[j - 1]] > self.strd[perm[j]]:
                t = perm[j]; perm[j] = perm[j - 1]; perm[j - 1] = t
                j -= 1
        for i in range(self.nd):
            if self.shp[perm[i]] == 1:
                continue
            if self.strd[perm[i]] != st:
                return False
            st *= self.shp[perm[i]]
        return True

    # -- views ------------------------------------------------------------------------
    def as_strided(self, size, stride, storage_offset=None):
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t st[MAX_DIMS]
        cdef int nd = parse_shape(size, shp, "as_strided")
        cdef int i
        cdef int64_t off = self.off if storage_offset is None else storage_offset
        cdef int64_t hi = off
        if len(stride) != nd:
            raise RuntimeError(f"as_strided: mismatch in length of strides and shape: "
                               f"{tuple(size)} and {tuple(stride)}")
        if off < 0:
            raise RuntimeError(f"as_strided: negative storage offset {off}")
        for i in range(nd):
            st[i] = stride[i]
            if st[i] < 0:
                raise RuntimeError(f"as_strided: negative strides are not supported, got {tuple(stride)}")
        for i in range(nd):         # the extent, once every stride is in place
            if shp[i] == 0:
                hi = -1
                break
            if st[i] and (shp[i] - 1) > (NUMEL_LIMIT - hi) // st[i]:
                hi = NUMEL_LIMIT        # past any storage: fails the check below
                break
            hi += (shp[i] - 1) * st[i]
        if hi >= 0 and (hi >= NUMEL_LIMIT // 8 or (hi + 1) * tl_itemsize[self.dtype] > self.storage.nbytes):
            raise RuntimeError(
                f"setStorage: sizes {tuple(size)}, strides {tuple(stride)}, storage offset {off} "
                f"require a storage of {(hi + 1) * tl_itemsize[self.dtype]} bytes, but it has "
                f"{self.storage.nbytes}")
        return make_view(self, nd, shp, st, off)

    def view(self, shape):
        """A view with a new shape (-1 inferred), or None when the strides do not allow one."""
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t st[MAX_DIMS]
        cdef int nd = infer_shape(shape, self.n, shp, "view")
        if compute_view_strides(self, nd, shp, st):
            return make_view(self, nd, shp, st, self.off)
        return None

    def permute(self, dims):
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t st[MAX_DIMS]
        cdef int seen[MAX_DIMS]
        cdef int i, d
        if len(dims) != self.nd:
            raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not "
                               f"match the length of the desired ordering of dimensions i.e. input.dim() "
                               f"= {self.nd} is not equal to len(dims) = {len(dims)}")
        for i in range(self.nd):
            seen[i] = 0
        for i in range(self.nd):
            d = _wrap_dim(dims[i], self.nd, "permute")
            if seen[d]:
                raise RuntimeError(f"permute(): duplicate dims are not allowed, got {tuple(dims)}")
            seen[d] = 1
            shp[i] = self.shp[d]
            st[i] = self.strd[d]
        return make_view(self, self.nd, shp, st, self.off)

    def transpose(self, dim0, dim1):
        cdef int a = _wrap_dim(_i64(dim0, "transpose"), self.nd, "transpose")
        cdef int b = _wrap_dim(_i64(dim1, "transpose"), self.nd, "transpose")
        cdef Array v = make_view(self, self.nd, self.shp, self.strd, self.off)
        v.shp[a], v.shp[b] = self.shp[b], self.shp[a]
        v.strd[a], v.strd[b] = self.strd[b], self.strd[a]
        return v

    def expand(self, shape):
        """Broadcast to `shape` (-1 keeps a dim); new leading dims and size-1 dims get stride 0."""
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t st[MAX_DIMS]
        cdef int nd = len(shape)
        cdef int i, j
        cdef int64_t want
        if nd > MAX_DIMS:
            raise RuntimeError(f"expand: at most {MAX_DIMS} dimensions are supported")
        if nd < self.nd:
            raise RuntimeError(f"expand: the number of sizes provided ({nd}) must be greater or equal "
                               f"to the number of dimensions in the tensor ({self.nd})")
        for i in range(nd - 1, -1, -1):         # from the last dim, so errors name it as torch does
            want = shape[i]
            j = i - (nd - self.nd)
            if j < 0:
                if want < 0:
                    raise RuntimeError(f"expand: the expanded size of the tensor (-1) isn't allowed "
                                       f"in a leading, non-existing dimension {i}")
                shp[i] = want
                st[i] = 0
            elif want == -1 or want == self.shp[j]:
                shp[i] = self.shp[j]
                st[i] = self.strd[j]
            elif self.shp[j] == 1 and want >= 0:
                shp[i] = want
                st[i] = 0
            else:
                raise RuntimeError(
                    f"The expanded size of the tensor ({want}) must match the existing size "
                    f"({self.shp[j]}) at non-singleton dimension {i}.  Target sizes: {list(shape)}.  "
                    f"Tensor sizes: {list(self.shape)}")
        return make_view(self, nd, shp, st, self.off)

    def slice(self, int64_t dim, object start, object stop, int64_t step):
        """Basic slicing along one dim with Python's clamping rules (step > 0)."""
        cdef int d = _wrap_dim(dim, self.nd, "slice")
        cdef int64_t size = self.shp[d], b, e
        cdef Array v
        if step <= 0:
            raise ValueError("step must be greater than zero")
        b = 0 if start is None else start
        e = size if stop is None else stop
        if b < 0:
            b += size
        if e < 0:
            e += size
        b = 0 if b < 0 else (size if b > size else b)
        e = b if e < b else (size if e > size else e)
        v = make_view(self, self.nd, self.shp, self.strd, self.off + b * self.strd[d])
        v.shp[d] = (e - b + step - 1) // step
        v.strd[d] = self.strd[d] * step
        v.n = _numel(v.nd, v.shp)
        return v

    def select(self, dim_, index_):
        cdef int64_t dim = _i64(dim_, "select"), index = _i64(index_, "select")
        cdef int d
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t st[MAX_DIMS]
        cdef int i, k = 0
        if self.nd == 0:
            raise IndexError("select() cannot be applied to a 0-dim tensor.")
        d = _wrap_dim(dim, self.nd, "select")
        if index < -self.shp[d] or index >= self.shp[d]:
            raise IndexError(f"index {index} is out of bounds for dimension {d} with size {self.shp[d]}")
        if index < 0:
            index += self.shp[d]
        for i in range(self.nd):
            if i != d:
                shp[k] = self.shp[i]
                st[k] = self.strd[i]
                k += 1
        return make_view(self, self.nd - 1, shp, st, self.off + index * self.strd[d])

    def squeeze(self, dims=None):
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t st[MAX_DIMS]
        cdef int drop[MAX_DIMS]
        cdef int i, k = 0
        for i in range(self.nd):
            drop[i] = dims is None and self.shp[i] == 1
        if dims is not None:
            for dd in dims:
                i = _wrap_dim(dd, self.nd, "squeeze")
                if self.nd > 0:
                    drop[i] = self.shp[i] == 1
        for i in range(self.nd):
            if not drop[i]:
                shp[k] = self.shp[i]
                st[k] = self.strd[i]
                k += 1
        return make_view(self, k, shp, st, self.off)

    def unsqueeze(self, dim):
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t st[MAX_DIMS]
        cdef int d = _wrap_dim(_i64(dim, "unsqueeze"), self.nd + 1, "unsqueeze")
        cdef int i, k = 0
        if self.nd + 1 > MAX_DIMS:
            raise RuntimeError(f"unsqueeze: at most {MAX_DIMS} dimensions are supported")
        for i in range(self.nd + 1):
            if i == d:
                shp[i] = 1
                st[i] = self.strd[d] * self.shp[d] if d < self.nd else 1
            else:
                shp[i] = self.shp[k]
                st[i] = self.strd[k]
                k += 1
        return make_view(self, self.nd + 1, shp, st, self.off)

    def diagonal(self, offset_=0, dim1=0, dim2=1):
        cdef int64_t offset = _i64(offset_, "diagonal")
        cdef int a = _wrap_dim(_i64(dim1, "diagonal"), self.nd, "diagonal")
        cdef int b = _wrap_dim(_i64(dim2, "diagonal"), self.nd, "diagonal")
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t st[MAX_DIMS]
        cdef int i, k = 0
        cdef int64_t off = self.off, length
        if a == b:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        if offset >= 0:
            length = min(self.shp[a], self.shp[b] - offset)
            off += offset * self.strd[b]
        else:
            length = min(self.shp[a] + offset, self.shp[b])
            off -= offset * self.strd[a]
        if length <= 0:
            length = 0
            off = self.off
        for i in range(self.nd):
            if i != a and i != b:
                shp[k] = self.shp[i]
                st[k] = self.strd[i]
                k += 1
        shp[k] = length
        st[k] = self.strd[a] + self.strd[b]
        return make_view(self, k + 1, shp, st, off)

    def unfold(self, dim_, size_, step_):
        cdef int64_t dim = _i64(dim_, "unfold"), size = _i64(size_, "unfold"), step = _i64(step_, "unfold")
        cdef int d = _wrap_dim(dim, self.nd, "unfold") if self.nd else 0
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t st[MAX_DIMS]
        cdef int i
        cdef int64_t dsize = self.shp[d] if self.nd else 1
        if size > dsize or size < 0:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {dsize} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if self.nd + 1 > MAX_DIMS:
            raise RuntimeError(f"unfold: at most {MAX_DIMS} dimensions are supported")
        for i in range(self.nd):
            shp[i] = self.shp[i]
            st[i] = self.strd[i]
        if self.nd:
            shp[d] = (dsize - size) // step + 1
            st[d] = self.strd[d] * step
        shp[self.nd] = size
        st[self.nd] = self.strd[d] if self.nd else 1
        return make_view(self, self.nd + 1, shp, st, self.off)

    # -- element access ----------------------------------------------------------------
    def item(self):
        if self.n != 1:
            raise RuntimeError(f"a Tensor with {self.n} elements cannot be converted to Scalar")
        return read_scalar(self.ptr(), self.dtype)

    def tolist(self):
        if self.nd == 0:
            return read_scalar(self.ptr(), self.dtype)
        return _tolist(self, 0, self.ptr())

    @property
    def __array_interface__(self):
        cdef Py_ssize_t isz = tl_itemsize[self.dtype]
        ts = _NP_TYPESTR[self.dtype]
        if ts is None:
            raise TypeError("Got unsupported ScalarType "
                            + ("BFloat16" if self.dtype == TL_BFLOAT16 else "ComplexHalf"))
        return {
            "version": 3,
            "shape": self.shape,
            "typestr": ts,
            "data": (<Py_ssize_t>self.ptr(), False),
            "strides": tuple([self.strd[i] * isz for i in range(self.nd)]),
        }


DTYPE_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                "float32", "float64", "complex64", "complex128", "complex32")
# the dtype names by code, torchlite's and PyTorch's ScalarType names as its error messages
# spell them (the one home of these tables: the other array-layer modules import them)
TORCH_DTYPE_NAMES = ("Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float",
                     "Double", "ComplexFloat", "ComplexDouble", "ComplexHalf")
_INT_LIMITS = {TL_UINT8: (0, 255), TL_INT8: (-128, 127), TL_INT16: (-32768, 32767),
               TL_INT32: (-2**31, 2**31 - 1), TL_INT64: (-2**63, 2**63 - 1)}


cdef object read_scalar(char* p, int dtype):
    if dtype == TL_FLOAT32:
        return (<float*>p)[0]
    if dtype == TL_FLOAT64:
        return (<double*>p)[0]
    if dtype == TL_INT64:
        return (<int64_t*>p)[0]
    if dtype == TL_INT32:
        return (<int32_t*>p)[0]
    if dtype == TL_INT16:
        return (<int16_t*>p)[0]
    if dtype == TL_INT8:
        return (<int8_t*>p)[0]
    if dtype == TL_UINT8:
        return (<uint8_t*>p)[0]
    if dtype == TL_BOOL:
        return (<uint8_t*>p)[0] != 0
    if dtype == TL_FLOAT16:
        return tl_half_to_float((<uint16_t*>p)[0])
    if dtype == TL_BFLOAT16:
        return tl_bf16_to_float((<uint16_t*>p)[0])
    if dtype == TL_COMPLEX64:
        return complex((<float*>p)[0], (<float*>p)[1])
    if dtype == TL_COMPLEX128:
        return complex((<double*>p)[0], (<double*>p)[1])
    if dtype == TL_COMPLEX32:
        return complex(tl_half_to_float((<uint16_t*>p)[0]), tl_half_to_float((<uint16_t*>p)[1]))
    raise TypeError(f"unknown dtype code {dtype}")


cdef int write_scalar(char* p, int dtype, object v) except -1:
    """Store a Python number as dtype (float -> int truncates, as a cast does; a complex number
    stored as a real type keeps its real part, as a cast does)."""
    if dtype == TL_COMPLEX64 or dtype == TL_COMPLEX128 or dtype == TL_COMPLEX32:
        c = complex(v)
        if dtype == TL_COMPLEX32:
            (<uint16_t*>p)[0] = tl_float_to_half(<float>c.real)
            (<uint16_t*>p)[1] = tl_float_to_half(<float>c.imag)
        elif dtype == TL_COMPLEX64:
            (<float*>p)[0] = c.real
            (<float*>p)[1] = c.imag
        else:
            (<double*>p)[0] = c.real
            (<double*>p)[1] = c.imag
        return 0
    if isinstance(v, complex):
        if v.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {DTYPE_NAMES[dtype]} without "
                               f"overflow: {v} has an imaginary part")
        v = v.real
    if dtype == TL_FLOAT32:
        (<float*>p)[0] = v
    elif dtype == TL_FLOAT64:
        (<double*>p)[0] = v
    elif dtype == TL_BOOL:
        (<uint8_t*>p)[0] = 1 if v else 0
    elif dtype == TL_FLOAT16:
        (<uint16_t*>p)[0] = tl_float_to_half(<float>v)
    elif dtype == TL_BFLOAT16:
        (<uint16_t*>p)[0] = tl_float_to_bf16(<float>v)
    else:
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise RuntimeError(f"value cannot be converted to type {DTYPE_NAMES[dtype]}_t without overflow")
        iv = int(v)
        lo, hi = _INT_LIMITS[dtype]
        if dtype == TL_UINT8:
            lo = -hi                  # PyTorch lets -1 etc. wrap into an unsigned type
        if iv < lo or iv > hi:
            raise RuntimeError(f"value cannot be converted to type {DTYPE_NAMES[dtype]}_t without overflow")
        iv = iv & 0xFFFFFFFFFFFFFFFF        # two's complement bits
        if dtype == TL_INT64:
            (<uint64_t*>p)[0] = <uint64_t>iv
        elif dtype == TL_INT32:
            (<uint32_t*>p)[0] = <uint32_t>(iv & 0xFFFFFFFF)
        elif dtype == TL_INT16:
            (<uint16_t*>p)[0] = <uint16_t>(iv & 0xFFFF)
        elif dtype == TL_INT8 or dtype == TL_UINT8:
            (<uint8_t*>p)[0] = <uint8_t>(iv & 0xFF)
    return 0



cdef list _tolist(Array a, int dim, char* p):
    cdef int64_t i, st = a.strd[dim] * tl_itemsize[a.dtype]
    cdef list out = []
    if dim == a.nd - 1:
        for i in range(a.shp[dim]):
            out.append(read_scalar(p + i * st, a.dtype))
    else:
        for i in range(a.shp[dim]):
            out.append(_tolist(a, dim + 1, p + i * st))
    return out


cdef int infer_shape(object shape, int64_t numel, int64_t* out, str op) except -1:
    """Parse a shape that may hold one -1 (inferred from numel)."""
    cdef Py_ssize_t nd = len(shape), i
    cdef int infer = -1
    cdef int64_t prod = 1, d
    if nd > MAX_DIMS:
        raise RuntimeError(f"{op}: at most {MAX_DIMS} dimensions are supported")
    for i in range(nd):
        d = shape[i]
        if d == -1:
            if infer >= 0:
                raise RuntimeError("only one dimension can be inferred")
            infer = <int>i
        elif d < 0:
            raise RuntimeError(f"invalid shape dimension {d}")
        else:
            prod *= d
        out[i] = d
    if infer >= 0:
        if prod == 0 or numel % prod != 0:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        out[infer] = numel // prod
    elif prod != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return <int>nd


cdef bint compute_view_strides(Array a, int nd, const int64_t* shp, int64_t* st):
    """Strides for viewing `a` with shape shp without a copy (PyTorch's rule: each run of new
    dims must fall inside a run of old dims that is contiguous with itself); False if none."""
    cdef int64_t chunk_base_stride, tensor_numel, view_numel
    cdef int tensor_d, view_d
    if a.n == 0 or a.nd == 0:
        # empty: any strides will do; 0-d: every new dim has size 1. Use contiguous ones.
        chunk_base_stride = 1
        for view_d in range(nd - 1, -1, -1):
            st[view_d] = chunk_base_stride
            chunk_base_stride *= shp[view_d] if shp[view_d] > 1 else 1
        return True
    view_d = nd - 1
    chunk_base_stride = a.strd[a.nd - 1] if a.nd > 0 else 1
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(a.nd - 1, -1, -1):
        tensor_numel *= a.shp[tensor_d]
        if tensor_d == 0 or (a.shp[tensor_d - 1] != 1 and
                             a.strd[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or shp[view_d] == 1):
                st[view_d] = view_numel * chunk_base_stride
                view_numel *= shp[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if tensor_d > 0:
                chunk_base_stride = a.strd[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return False
    return True


# ---------------------------------------------------------------------------------------
# Creation
# ---------------------------------------------------------------------------------------
def empty(shape, int dtype):
    cdef int64_t shp[MAX_DIMS]
    cdef int nd = parse_shape(shape, shp, "empty")
    return new_array(nd, shp, dtype)


def empty_strided(shape, order, int dtype):
    """A dense array with dims laid out innermost-first in `order` (used by *_like)."""
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t od[MAX_DIMS]
    cdef int nd = parse_shape(shape, shp, "empty_strided"), i
    for i in range(nd):
        od[i] = order[i]
    return new_array_strided(nd, shp, od, dtype)


def full(shape, value, int dtype):
    cdef Array a = empty(shape, dtype)
    fill_(a, value)
    return a


def fill_(Array a, value):
    """Write `value` (a Python number) into every element of `a`."""
    cdef char buf[16]
    cdef int isz = tl_itemsize[a.dtype], i
    cdef int64_t k, cnt
    cdef char* p
    write_scalar(buf, a.dtype, value)
    if a.contiguous():
        p = a.ptr()
        cnt = a.n
        if isz == 1:
            memset(p, buf[0], cnt)
        elif isz == 2:
            _fill16(<uint16_t*>p, (<uint16_t*>buf)[0], cnt)
        elif isz == 4:
            _fill32(<uint32_t*>p, (<uint32_t*>buf)[0], cnt)
        elif isz == 8:
            _fill64(<uint64_t*>p, (<uint64_t*>buf)[0], cnt)
        else:
            _fill_strided(a, buf, isz)
    else:
        _fill_strided(a, buf, isz)
    return a


cdef void _fill16(uint16_t* p, uint16_t v, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        p[i] = v

cdef void _fill32(uint32_t* p, uint32_t v, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        p[i] = v

cdef void _fill64(uint64_t* p, uint64_t v, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        p[i] = v


cdef void _fill_strided(Array a, char* buf, int isz) noexcept:
    cdef int64_t idx[MAX_DIMS]
    cdef int64_t k, off
    cdef int d
    cdef char* base = a.ptr()
    if a.n == 0:
        return
    for d in range(a.nd):
        idx[d] = 0
    for k in range(a.n):
        off = 0
        for d in range(a.nd):
            off += idx[d] * a.strd[d]
        memcpy(base + off * isz, buf, isz)
        d = a.nd - 1
        while d >= 0:
            idx[d] += 1
            if idx[d] < a.shp[d]:
                break
            idx[d] = 0
            d -= 1


_NP_CODES = {"b1": TL_BOOL, "u1": TL_UINT8, "i1": TL_INT8, "i2": TL_INT16, "i4": TL_INT32,
             "i8": TL_INT64, "f2": TL_FLOAT16, "f4": TL_FLOAT32, "f8": TL_FLOAT64,
             "c8": TL_COMPLEX64, "c16": TL_COMPLEX128}


def numpy_dtype_code(typestr):
    """torchlite dtype code for a NumPy typestr ('<f4'), or -1."""
    return _NP_CODES.get(typestr[1:], -1) if typestr[0] in "<|=" else -1


def from_numpy(obj):
    """Zero-copy Array over a NumPy array's memory (keeps the NumPy array alive)."""
    cdef dict ai = obj.__array_interface__
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t st[MAX_DIMS]
    cdef int nd, i, code, isz
    cdef Array a
    cdef int64_t lo = 0, hi = 0
    typestr = ai["typestr"]
    code = numpy_dtype_code(typestr)
    if code < 0:
        raise TypeError(f"can't convert np.ndarray of type {obj.dtype}. The only supported types are: "
                        f"complex128, complex64, float64, float32, float16, int64, int32, int16, int8, "
                        f"uint8, and bool.")
    isz = tl_itemsize[code]
    nd = parse_shape(ai["shape"], shp, "from_numpy")
    strides = ai.get("strides")
    if strides is None:
        st_elem = 1
        for i in range(nd - 1, -1, -1):
            st[i] = st_elem
            st_elem *= shp[i]
    else:
        for i in range(nd):
            if strides[i] < 0:
                raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                                 "with negative strides are not currently supported. (You can probably "
                                 "work around this by making a copy of your array  with array.copy().) ")
            if strides[i] % isz:
                raise ValueError(f"given numpy array strides not a multiple of the element byte size. "
                                 f"Copy the numpy array to reallocate the memory.")
            st[i] = strides[i] // isz
    for i in range(nd):
        if shp[i] == 0:
            hi = -1
            break
        hi += (shp[i] - 1) * st[i]
    a = Array.__new__(Array)
    a.storage = external_storage(ai["data"][0], (hi + 1) * isz, obj)
    a.dtype = code
    a.nd = nd
    a.off = 0
    a.n = _numel(nd, shp)
    for i in range(nd):
        a.shp[i] = shp[i]
        a.strd[i] = st[i]
    return a


cdef inline int _note_device(object x, object cuda_t, int* found, bint* cpu_dims) except -2:
    cdef object t = type(x)
    cdef int idx
    if t is cuda_t:
        idx = x.device_index
        if found[0] == -1:
            found[0] = idx
        elif found[0] != idx:
            return -2
    elif t is Array and (<Array>x).nd > 0:
        cpu_dims[0] = True
    return 0


def scan_devices(tuple args, dict kwargs, object cuda_t, object meta_t=None):
    """Where the arrays among an array-layer call's arguments live (torchlite/_dispatch.py's
    fast check, lists and tuples of arrays looked into): -3 when one is a `meta_t` array (the
    caller checks the rest); -1 when none is a `cuda_t` array; the device index when they all
    are on that device and no CPU array with dims joins them; -2 when that is not so (the
    caller then sorts out which error or transfer applies)."""
    cdef int found = -1
    cdef bint cpu_dims = False
    cdef object x, e
    for x in args:
        if type(x) is list or type(x) is tuple:
            for e in x:
                if type(e) is meta_t:
                    return -3
                if _note_device(e, cuda_t, &found, &cpu_dims) == -2:
                    return -2
        elif type(x) is meta_t:
            return -3
        elif _note_device(x, cuda_t, &found, &cpu_dims) == -2:
            return -2
    if kwargs:
        for x in kwargs.values():
            if type(x) is meta_t:
                return -3
            if _note_device(x, cuda_t, &found, &cpu_dims) == -2:
                return -2
    if found >= 0 and cpu_dims:
        return -2
    return found


def external(Py_ssize_t address, Py_ssize_t nbytes, object owner, int dtype):
    """A 1-d contiguous `dtype` array over `nbytes` of memory at `address` that `owner` keeps
    alive.  Two users: pinned host memory (torchlite/cuda/_host.py), which CPU kernels may
    use like any other, and the CUDA backend's device arrays, which keep their shape, strides
    and offset in such an array over device memory so the view logic has one home here; those
    never reach a CPU kernel (torchlite/cuda/_array.py wraps them)."""
    if dtype < 0 or dtype >= TL_NDTYPES:
        raise ValueError(f"external: bad dtype code {dtype}")
    if nbytes < 0:
        raise ValueError(f"external: negative size {nbytes}")
    cdef Array a = Array.__new__(Array)
    a.storage = external_storage(address, nbytes, owner)
    a.dtype = dtype
    a.nd = 1
    a.off = 0
    a.shp[0] = nbytes // tl_itemsize[dtype]
    a.strd[0] = 1
    a.n = a.shp[0]
    return a


def from_flat(list values, shape, int dtype):
    """A new contiguous array holding Python numbers `values` (row-major) as dtype."""
    cdef Array a = empty(shape, dtype)
    cdef Py_ssize_t i, n = len(values)
    cdef char* p = a.ptr()
    cdef int isz = tl_itemsize[dtype]
    cdef float* pf
    cdef int64_t* pl
    if n != a.n:
        raise RuntimeError("from_flat: value count does not match the shape")
    if dtype == TL_FLOAT32:
        pf = <float*>p
        for i in range(n):
            pf[i] = values[i]
    elif dtype == TL_INT64:
        pl = <int64_t*>p
        for i in range(n):
            v = values[i]
            if isinstance(v, float):
                # the C conversion of NaN, an infinity or a float outside int64 is undefined
                if not (-9.223372036854775808e18 <= v < 9.223372036854775808e18):
                    raise RuntimeError("value cannot be converted to type int64 without overflow")
                pl[i] = <int64_t>v
            else:
                if v >= (1 << 63) or v < -(1 << 63):
                    raise RuntimeError(f"value cannot be converted to type int64 without overflow")
                pl[i] = v
    else:
        for i in range(n):
            write_scalar(p + i * isz, dtype, values[i])
    return a


def fill_affine(Array a, start, step, bint symmetric_end=False, end=None):
    """a[i] = start + i * step over a contiguous 1-d array (arange, linspace).  With
    symmetric_end, the upper half is computed from `end` backwards (linspace's rule, which
    makes the last element exactly `end`)."""
    cdef int64_t i, n = a.n, half = a.n // 2
    cdef double s, st, e
    cdef int64_t si, sti
    cdef char* p = a.ptr()
    cdef int isz = tl_itemsize[a.dtype]
    if not a.contiguous() or a.nd != 1:
        raise RuntimeError("fill_affine: expected a contiguous 1-d array")
    if a.dtype == TL_INT64 and isinstance(start, int) and isinstance(step, int) and not symmetric_end:
        si = start
        sti = step
        for i in range(n):
            (<int64_t*>p)[i] = si + i * sti
        return a
    s = start
    st = step
    e = end if end is not None else 0.0
    if a.dtype == TL_FLOAT64:
        for i in range(n):
            (<double*>p)[i] = (s + i * st) if (not symmetric_end or i < half) else (e - (n - 1 - i) * st)
    elif a.dtype == TL_FLOAT32:
        for i in range(n):
            (<float*>p)[i] = <float>((s + i * st) if (not symmetric_end or i < half) else (e - (n - 1 - i) * st))
    else:
        for i in range(n):
            v = (s + i * st) if (not symmetric_end or i < half) else (e - (n - 1 - i) * st)
            write_scalar(p + i * isz, a.dtype, v)
    return a


def reinterpret(Array a, int dtype, shape, strides, int64_t offset):
    """The same bytes seen as another dtype (Tensor.view(dtype)); bounds are checked."""
    cdef Array v = Array.__new__(Array)
    cdef int64_t hi = offset
    cdef int i
    v.storage = a.storage
    v.dtype = dtype
    v.nd = parse_shape(shape, v.shp, "view")
    v.off = offset
    for i in range(v.nd):
        v.strd[i] = strides[i]
    for i in range(v.nd):
        if v.shp[i] == 0:
            hi = -1
            break
        hi += (v.shp[i] - 1) * v.strd[i]
    if hi >= 0 and (hi + 1) * tl_itemsize[dtype] > a.storage.nbytes:
        raise RuntimeError("view(dtype): the new view would read past the end of the storage")
    v.n = _numel(v.nd, v.shp)
    return v
