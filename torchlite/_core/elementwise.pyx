# Elementwise ops over strided, broadcast operands: type promotion, the iteration plan and
# its OpenMP driver.  The per-dtype inner loops are C (kernels/ewise_body.h), compiled once
# per ISA level; this module picks the loop, plans the iteration and runs it.
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint64_t, uint16_t
from libc.string cimport memcpy
from torchlite._core.array cimport (Array, Storage, MAX_DIMS, broadcast_into, new_array, new_array_strided,
                                    make_view, parse_shape, shape_tuple, tl_itemsize, write_scalar,
                                    TL_BOOL, TL_UINT8, TL_INT8, TL_INT16, TL_INT32, TL_INT64,
                                    TL_FLOAT16, TL_BFLOAT16, TL_FLOAT32, TL_FLOAT64,
                                    TL_COMPLEX64, TL_COMPLEX128, TL_COMPLEX32, TL_NDTYPES,
                                    TL_ERR_ZERODIV)
from torchlite._core.array import broadcast_shapes
from torchlite._core.parallel cimport num_chunks

cdef extern from "kernels/types.h" nogil:
    uint16_t tl_float_to_half(float f)
    uint16_t tl_float_to_bf16(float f)

cdef extern from "kernels/ewise.h" nogil:
    enum:
        TL_NUNARY, TL_NBINARY, TL_NTERNARY
    tl_loop tl_unary_loops[TL_NUNARY][TL_NDTYPES]
    tl_loop tl_binary_loops[TL_NBINARY][TL_NDTYPES]
    tl_loop tl_ternary_loops[TL_NTERNARY][TL_NDTYPES]
    tl_loop tl_cast_loops[TL_NDTYPES][TL_NDTYPES]
    const char* tl_unary_names[]
    const char* tl_binary_names[]
    const char* tl_ternary_names[]
    int tl_ewise_install(int level)
    int tl_cpu_isa_level()
    int tl_compiled_isa_levels()

from torchlite._core.array import DTYPE_NAMES, TORCH_DTYPE_NAMES as _TORCH_NAMES

cdef int64_t GRAIN = 32768          # elements per thread below which a loop stays serial

# ---------------------------------------------------------------------------------------
# ISA selection
# ---------------------------------------------------------------------------------------
cdef int _isa = 0

def cpu_isa_level():
    """The best SIMD level this CPU supports: 0 (baseline), 3 (AVX2+FMA) or 4 (AVX-512)."""
    return tl_cpu_isa_level()

def isa_level():
    """The SIMD level whose loops are installed."""
    return _isa

def set_isa_level(int level):
    """Install the loops of `level` (clamped to the CPU's); tests use it to run every copy."""
    global _isa
    cdef int cpu = tl_cpu_isa_level()
    _isa = tl_ewise_install(level if level < cpu else cpu)
    _fill_aliases()
    return _isa

def compiled_isa_levels():
    m = tl_compiled_isa_levels()
    return [lv for lv in (0, 3, 4) if m & (1 << lv)]


# ---------------------------------------------------------------------------------------
# Op tables: name -> code, and each op's dtype rule
# ---------------------------------------------------------------------------------------
UNARY = {}
BINARY = {}
TERNARY = {}
cdef int i_
for i_ in range(TL_NUNARY):
    UNARY[tl_unary_names[i_].decode().lower()] = i_
for i_ in range(TL_NBINARY):
    BINARY[tl_binary_names[i_].decode().lower()] = i_
for i_ in range(TL_NTERNARY):
    TERNARY[tl_ternary_names[i_].decode().lower()] = i_

# op names by code, for error messages (decoded once, not per call)
_UNARY_NAMES = sorted(UNARY, key=UNARY.get)
_BINARY_NAMES = sorted(BINARY, key=BINARY.get)
_TERNARY_NAMES = sorted(TERNARY, key=TERNARY.get)

# unary kinds
cdef enum:
    K_FLOAT = 0       # integer and bool inputs are promoted to the default float dtype
    K_SAME = 1        # computed in the input dtype
    K_BOOLOUT = 2     # result is bool
    K_INTONLY = 3     # integers and bool only (bitwise)
    K_ROUND = 4       # identity on integers (floor, ceil, round, trunc)
    K_FLOATONLY = 5   # floating inputs only

cdef int unary_kind[64]
for i_ in range(TL_NUNARY):
    unary_kind[i_] = K_FLOAT
for _n in ("neg", "abs", "sign", "square", "relu", "clamp", "sgn", "conj"):
    unary_kind[UNARY[_n]] = K_SAME
for _n in ("isnan", "isinf", "isposinf", "isneginf", "isfinite", "signbit", "logical_not"):
    unary_kind[UNARY[_n]] = K_BOOLOUT
unary_kind[UNARY["bitwise_not"]] = K_INTONLY
for _n in ("floor", "ceil", "round", "trunc", "nan_to_num"):
    unary_kind[UNARY[_n]] = K_ROUND
for _n in ("frac", "round_decimals"):
    unary_kind[UNARY[_n]] = K_FLOATONLY

# binary kinds
cdef enum:
    B_ARITH = 0       # promoted dtype
    B_FLOAT = 1       # promoted, then integers go to the default float dtype
    B_CMP = 2         # promoted for the comparison, result bool
    B_INT = 3         # integers and bool only

cdef int binary_kind[64]
for i_ in range(TL_NBINARY):
    binary_kind[i_] = B_ARITH
for _n in ("div", "atan2", "hypot", "copysign", "xlogy"):
    binary_kind[BINARY[_n]] = B_FLOAT
for _n in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"):
    binary_kind[BINARY[_n]] = B_CMP
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor", "shl", "shr"):
    binary_kind[BINARY[_n]] = B_INT

# unary ops whose result on a complex input is real (|z|, arg z)
cdef bint unary_real_result[64]
for i_ in range(TL_NUNARY):
    unary_real_result[i_] = False
unary_real_result[UNARY["abs"]] = True
unary_real_result[UNARY["angle"]] = True

cdef int _B_FMAX = BINARY["fmax"], _B_FMIN = BINARY["fmin"]
cdef int _B_MAXIMUM = BINARY["maximum"], _B_MINIMUM = BINARY["minimum"]


cdef void _fill_aliases() noexcept:
    # fmax/fmin differ from maximum/minimum only in NaN handling, which integers lack
    cdef int d
    for d in range(TL_FLOAT16):
        tl_binary_loops[_B_FMAX][d] = tl_binary_loops[_B_MAXIMUM][d]
        tl_binary_loops[_B_FMIN][d] = tl_binary_loops[_B_MINIMUM][d]


cdef tl_loop loop_of(int kind, int op, int dtype) noexcept nogil:
    if dtype < 0 or dtype >= TL_NDTYPES or op < 0:
        return NULL
    if kind == 0:
        return tl_unary_loops[op][dtype] if op < TL_NUNARY else NULL
    if kind == 1:
        return tl_binary_loops[op][dtype] if op < TL_NBINARY else NULL
    if kind == 2:
        return tl_ternary_loops[op][dtype] if op < TL_NTERNARY else NULL
    if kind == 3:
        return tl_cast_loops[op][dtype] if op < TL_NDTYPES else NULL
    return NULL


def has_loop(int kind, int op, int dtype):
    """Whether the op has a loop for this compute dtype (see loop_of)."""
    return loop_of(kind, op, dtype) != NULL


from torchlite._core import env_isa_level
set_isa_level(env_isa_level())


# ---------------------------------------------------------------------------------------
# Type promotion (PyTorch's rules, with Python numbers as "wrapped numbers")
# ---------------------------------------------------------------------------------------
cdef int _default_float = TL_FLOAT32

def set_default_float(int code):
    global _default_float
    _default_float = code

def get_default_float():
    return _default_float

cdef inline bint is_float(int d) noexcept nogil:
    return d >= TL_FLOAT16 and d <= TL_FLOAT64

cdef inline bint is_complex(int d) noexcept nogil:
    return d == TL_COMPLEX64 or d == TL_COMPLEX128 or d == TL_COMPLEX32

cdef inline int to_complex(int d) noexcept nogil:
    """The complex type whose parts have float type d (float16: complex32; a bfloat16 complex
    does not exist, in PyTorch either: it becomes complex64)."""
    if d == TL_FLOAT64:
        return TL_COMPLEX128
    return TL_COMPLEX32 if d == TL_FLOAT16 else TL_COMPLEX64

cdef inline int to_real(int d) noexcept nogil:
    if d == TL_COMPLEX64:
        return TL_FLOAT32
    if d == TL_COMPLEX128:
        return TL_FLOAT64
    if d == TL_COMPLEX32:
        return TL_FLOAT16
    return d

def complex_of(int d):
    return to_complex(d)

def real_of(int d):
    return to_real(d)

cdef inline bint is_int(int d) noexcept nogil:
    return d >= TL_UINT8 and d <= TL_INT64

cdef int promote_types(int a, int b) noexcept nogil:
    if a == b or b < 0:
        return a
    if a < 0:
        return b
    if a == TL_BOOL:
        return b
    if b == TL_BOOL:
        return a
    if is_complex(a) or is_complex(b):
        # complex wins; its part type is the promotion of the two part types (an integer
        # or bool operand leaves the complex type as it is)
        if not is_complex(b) and not is_float(b):
            return a
        if not is_complex(a) and not is_float(a):
            return b
        return to_complex(promote_types(to_real(a), to_real(b)))
    if is_float(a) and is_float(b):
        if (a == TL_FLOAT16 and b == TL_BFLOAT16) or (a == TL_BFLOAT16 and b == TL_FLOAT16):
            return TL_FLOAT32
        return a if a > b else b
    if is_float(a):
        return a
    if is_float(b):
        return b
    if (a == TL_UINT8 and b == TL_INT8) or (a == TL_INT8 and b == TL_UINT8):
        return TL_INT16
    if a == TL_UINT8:
        return b
    if b == TL_UINT8:
        return a
    return a if a > b else b

def promote(int a, int b):
    return promote_types(a, b)

cdef inline int _combine(int higher, int lower) noexcept nogil:
    if higher < 0:
        return lower
    if lower < 0 or is_complex(higher):
        return higher
    if is_complex(lower):
        # a complex number of a lower category keeps a float tensor's precision (PyTorch)
        return to_complex(higher) if is_float(higher) else lower
    if is_float(higher):
        return higher
    if higher == TL_BOOL or is_float(lower):
        return promote_types(higher, lower)
    return higher

cdef inline int _scalar_dtype(object x) except -2:
    if isinstance(x, bool):
        return TL_BOOL
    if isinstance(x, int):
        return TL_INT64
    if isinstance(x, float):
        return _default_float
    if isinstance(x, complex):
        return to_complex(_default_float)
    raise TypeError(f"expected a Tensor or a Python number, got {type(x).__name__}")

cdef int _result_type(tuple xs) except -2:
    cdef int dim_r = -1, zero_r = -1, wrap_r = -1
    cdef Array a
    for x in xs:
        if isinstance(x, Array):
            a = <Array>x
            if a.nd > 0:
                dim_r = promote_types(dim_r, a.dtype)
            else:
                zero_r = promote_types(zero_r, a.dtype)
        else:
            wrap_r = promote_types(wrap_r, _scalar_dtype(x))
    return _combine(dim_r, _combine(zero_r, wrap_r))

def result_type(*xs):
    """The dtype PyTorch's promotion gives to an op over Arrays and Python numbers."""
    return _result_type(xs)

def can_cast(int frm, int to):
    """PyTorch's torch.can_cast: no complex -> real, no float -> integer, no non-bool -> bool."""
    if is_complex(frm) and not is_complex(to):
        return False
    if is_float(frm) and not is_float(to) and not is_complex(to):
        return False
    if frm != TL_BOOL and to == TL_BOOL:
        return False
    return True

cdef inline int _compute_dtype(int d) noexcept nogil:
    """float16/bfloat16 compute in float32 and complex32 in complex64 (PyTorch's opmath), the
    results rounded back."""
    if d == TL_COMPLEX32:
        return TL_COMPLEX64
    return TL_FLOAT32 if d == TL_FLOAT16 or d == TL_BFLOAT16 else d


# ---------------------------------------------------------------------------------------
# The iteration plan and its driver
# ---------------------------------------------------------------------------------------
cdef inline int _cmp_dims(int64_t (*st)[MAX_DIMS], int first, int nops, int d0, int d1) noexcept nogil:
    cdef int o
    cdef int64_t s0, s1
    for o in range(first, nops):
        s0 = st[o][d0]
        s1 = st[o][d1]
        if s0 == 0 or s1 == 0:
            continue
        if s0 < s1:
            return -1
        if s0 > s1:
            return 1
    return 0


cdef void memory_order(int64_t (*st)[MAX_DIMS], int first, int nops, int nd,
                       int* perm) noexcept nogil:
    """perm: the dims, innermost first, in the memory order of operands first..nops-1 (byte
    strides st[o][d]; stride 0, a broadcast, says nothing): the first operand that tells two
    dims apart orders them, ties keep the logical order.  A new output takes this order, so
    an op on channels_last inputs gives a channels_last result, as PyTorch's."""
    cdef int i, j, t
    for i in range(nd):
        perm[i] = nd - 1 - i
    for i in range(1, nd):          # innermost = smallest strides (insertion sort, stable)
        j = i
        while j > 0 and _cmp_dims(st, first, nops, perm[j - 1], perm[j]) > 0:
            t = perm[j]; perm[j] = perm[j - 1]; perm[j - 1] = t
            j -= 1


cdef Array _prepare(Plan* p, tuple ins, char* sbuf, Array out, int out_dtype, int nd,
                    const int64_t* shape):
    """Fill the plan for out = f(ins...) over the broadcast `shape`.  A None input is a scalar
    already written at sbuf + SLOT * position.  A new `out` takes its inputs' memory order."""
    cdef int nops = 1 + len(ins), o, d, k, i, j, t, c
    cdef int64_t st[MAX_OPS][MAX_DIMS]
    cdef int perm[MAX_DIMS]
    cdef int64_t order[MAX_DIMS]
    cdef int isz
    cdef bint merge
    cdef Array a
    p.nops = nops
    for o in range(1, nops):
        x = ins[o - 1]
        if x is None:
            for d in range(nd):
                st[o][d] = 0
            p.ptr[o] = sbuf + SLOT * o
        else:
            a = <Array>x
            k = nd - a.nd
            isz = tl_itemsize[a.dtype]
            for d in range(nd):
                st[o][d] = 0 if (d < k or a.shp[d - k] == 1) else a.strd[d - k] * isz
            p.ptr[o] = a.ptr()
    if out is not None:
        isz = tl_itemsize[out.dtype]
        for d in range(nd):
            st[0][d] = 0 if out.shp[d] == 1 else out.strd[d] * isz
    memory_order(st, 0 if out is not None else 1, nops, nd, perm)
    if out is None:
        for i in range(nd):
            order[i] = perm[i]
        out = new_array_strided(nd, shape, order, out_dtype)
        isz = tl_itemsize[out_dtype]
        for d in range(nd):
            st[0][d] = 0 if shape[d] == 1 else out.strd[d] * isz
    p.ptr[0] = out.ptr()
    p.nd = 0
    p.numel = 1
    for i in range(nd):
        d = perm[i]
        p.numel *= shape[d]
        if shape[d] == 1:
            continue
        if p.nd > 0:
            c = p.nd - 1
            merge = True
            for o in range(nops):
                if st[o][d] != p.strides[o][c] * p.shape[c]:
                    merge = False
                    break
            if merge:
                p.shape[c] *= shape[d]
                continue
        p.shape[p.nd] = shape[d]
        for o in range(nops):
            p.strides[o][p.nd] = st[o][d]
        p.nd += 1
    if p.nd == 0:
        p.nd = 1
        p.shape[0] = 1
        for o in range(nops):
            p.strides[o][0] = 0
    return out


cdef int _run_range(Plan* p, tl_loop fn, const double* prm, int64_t start, int64_t end) noexcept nogil:
    cdef int64_t idx[MAX_DIMS]
    cdef char* ptrs[MAX_OPS]
    cdef int64_t inner[MAX_OPS]
    cdef int64_t rem = start, n, left = end - start
    cdef int d, o, err = 0
    for o in range(p.nops):
        ptrs[o] = p.ptr[o]
        inner[o] = p.strides[o][0]
    for d in range(p.nd):
        idx[d] = rem % p.shape[d]
        rem = rem // p.shape[d]
        for o in range(p.nops):
            ptrs[o] += idx[d] * p.strides[o][d]
    while left > 0:
        n = p.shape[0] - idx[0]
        if n > left:
            n = left
        err |= fn(ptrs, inner, n, prm)
        left -= n
        if left == 0:
            break
        idx[0] += n
        for o in range(p.nops):
            ptrs[o] += n * p.strides[o][0]
        d = 0
        while idx[d] == p.shape[d] and d + 1 < p.nd:
            for o in range(p.nops):
                ptrs[o] += p.strides[o][d + 1] - p.shape[d] * p.strides[o][d]
            idx[d] = 0
            d += 1
            idx[d] += 1
    return err


cdef int run_plan(Plan* p, tl_loop fn, const double* prm, int64_t grain) noexcept nogil:
    """Run fn over the plan, split into equal chunks of the flat index across threads.
    Returns the OR of the loops' error codes."""
    cdef int nc, c, err = 0
    cdef int errs[256]
    cdef int64_t total = p.numel
    if total == 0:
        return 0
    nc = num_chunks(total, grain)
    if nc > 256:
        nc = 256
    if nc <= 1:
        return _run_range(p, fn, prm, 0, total)
    for c in prange(nc, num_threads=nc, schedule="static"):
        errs[c] = _run_range(p, fn, prm, total * c // nc, total * (c + 1) // nc)
    for c in range(nc):
        err |= errs[c]
    return err


cdef int _raise_err(int err, str op) except -1:
    if err & TL_ERR_ZERODIV:
        raise ZeroDivisionError(f"{op}: integer division by zero")
    if err:
        raise RuntimeError(f"{op}: kernel error {err}")
    return 0


cdef object _not_impl(str op, int dtype):
    return RuntimeError(f'"{op}" not implemented for \'{_TORCH_NAMES[dtype]}\'')


# ---------------------------------------------------------------------------------------
# Casting and copying
# ---------------------------------------------------------------------------------------
cdef inline void _byte_range(Array a, char** lo, char** hi) noexcept:
    """The bytes a's elements span: [lo, hi)."""
    cdef char* p = a.ptr()
    cdef int64_t isz = tl_itemsize[a.dtype], span
    cdef int i
    lo[0] = p
    hi[0] = p + isz
    for i in range(a.nd):
        span = (a.shp[i] - 1) * a.strd[i] * isz
        if span < 0:
            lo[0] += span
        else:
            hi[0] += span


cdef bint _overlaps(Array a, Array b) except -1:
    """True if a and b share memory but are not the same view (a partial overlap).  Compared by
    address, not by Storage object: two storages can hold the same memory (Tensor.data, two
    from_numpy of one array)."""
    cdef int i
    cdef char *alo, *ahi, *blo, *bhi
    if a.n == 0 or b.n == 0:
        return False
    _byte_range(a, &alo, &ahi)
    _byte_range(b, &blo, &bhi)
    if ahi <= blo or bhi <= alo:
        return False
    if a.ptr() == b.ptr() and a.nd == b.nd and a.dtype == b.dtype:
        for i in range(a.nd):
            if a.shp[i] != b.shp[i] or (a.shp[i] > 1 and a.strd[i] != b.strd[i]):
                return _partial_overlap(a, b)
        return False
    return _partial_overlap(a, b)


cdef bint _partial_overlap(Array a, Array b) except -1:
    """Two arrays share part of their memory.  When both are dense, the result would depend on
    the order the elements are visited in: PyTorch refuses, and so do we.  Otherwise (an
    expanded operand, strided views that may interleave) the operand is copied first."""
    if a.is_non_overlapping_and_dense() and b.is_non_overlapping_and_dense():
        raise RuntimeError(
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location. Please clone() the tensor before "
                "performing the operation.")
    return True


cdef int check_writable(Array out, str op) except -1:
    """Refuse to write into an array whose elements alias each other (an expanded view)."""
    if out.internal_overlap():
        raise RuntimeError(
                f"{op}: unsupported operation: more than one element of the written-to tensor "
                f"refers to a single memory location. Please clone() the tensor before "
                f"performing the operation.")
    return 0


cdef int copy_into(Array dst, Array src) except -1:
    """dst[...] = src, broadcasting src and casting to dst's dtype."""
    cdef Plan p
    cdef int64_t shp[MAX_DIMS]
    cdef int i, k, err
    cdef tl_loop fn
    if src.nd > dst.nd:
        raise RuntimeError(f"copy_: the source of shape {src.shape} cannot be broadcast to the "
                           f"destination of shape {dst.shape}")
    k = dst.nd - src.nd
    for i in range(src.nd):
        if src.shp[i] != 1 and src.shp[i] != dst.shp[i + k]:
            raise RuntimeError(f"The size of tensor a ({dst.shp[i + k]}) must match the size of "
                               f"tensor b ({src.shp[i]}) at non-singleton dimension {i + k}")
    check_writable(dst, "copy_")
    if _overlaps(dst, src):
        src = _copy_new(src)
    for i in range(dst.nd):
        shp[i] = dst.shp[i]
    fn = tl_cast_loops[src.dtype][dst.dtype]
    _prepare(&p, (src,), NULL, dst, dst.dtype, dst.nd, shp)
    with nogil:
        err = run_plan(&p, fn, NULL, GRAIN)
    return 0


cdef Array _copy_new(Array src):
    cdef Array out = new_array(src.nd, src.shp, src.dtype)
    copy_into(out, src)
    return out


cdef Array contiguous_array(Array a):
    if a.contiguous():
        return a
    return _copy_new(a)


cdef Array cast_array(Array a, int dtype):
    """a as dtype (a itself when it already is), keeping its memory order."""
    cdef Plan p
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    cdef Array out
    if a.dtype == dtype:
        return a
    for i in range(a.nd):
        shp[i] = a.shp[i]
    out = _prepare(&p, (a,), NULL, None, dtype, a.nd, shp)
    with nogil:
        run_plan(&p, tl_cast_loops[a.dtype][dtype], NULL, GRAIN)
    return out


def check_no_partial_overlap(Array dst, src):
    """Raise PyTorch's RuntimeError when src (an Array, or anything else: ignored) partially
    shares dense memory with dst, the tensor an in-place op writes."""
    if isinstance(src, Array):
        _overlaps(dst, src)


def check_no_overlap(Array dst, src):
    """PyTorch's RuntimeError when dst, the out= of an op that cannot write over its inputs
    (gather, index_select, cat, ...), shares dense memory with the input src, fully or in
    part; strided views whose byte ranges meet but might interleave pass (as in PyTorch)."""
    cdef char *alo, *ahi, *blo, *bhi
    if not isinstance(src, Array):
        return
    cdef Array b = <Array>src
    if dst.n == 0 or b.n == 0:
        return
    _byte_range(dst, &alo, &ahi)
    _byte_range(b, &blo, &bhi)
    if ahi <= blo or bhi <= alo:
        return
    if dst.is_non_overlapping_and_dense() and b.is_non_overlapping_and_dense():
        raise RuntimeError(
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location. Please clone() the tensor before "
                "performing the operation.")


def copy_(Array dst, Array src):
    copy_into(dst, src)
    return dst

def cast(Array a, int dtype):
    return cast_array(a, dtype)

def clone(Array a, bint preserve=True):
    """A copy of a with its own storage: same strides when a is dense, else contiguous."""
    cdef Plan p
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    cdef Array out
    if not preserve or not a.is_non_overlapping_and_dense():
        return _copy_new(a)
    for i in range(a.nd):
        shp[i] = a.shp[i]
    out = _prepare(&p, (a,), NULL, None, a.dtype, a.nd, shp)
    with nogil:
        run_plan(&p, tl_cast_loops[a.dtype][a.dtype], NULL, GRAIN)
    return out

def contiguous(Array a):
    return contiguous_array(a)


# ---------------------------------------------------------------------------------------
# Scalars in kernels
# ---------------------------------------------------------------------------------------
cdef enum:
    SLOT = 16       # bytes of one scalar operand's slot: a complex128 fits

cdef int _write_kernel_scalar(char* p, int dtype, object v, str op) except -1:
    """Store a Python number as the compute dtype of a kernel."""
    cdef long long iv
    if isinstance(v, complex) and not is_complex(dtype):
        raise TypeError(f"{op}: a complex number cannot be an operand of type "
                        f"{DTYPE_NAMES[dtype]}")
    if is_complex(dtype):                # complex32 too: where() moves it as it is
        write_scalar(p, dtype, v)
    elif dtype == TL_FLOAT32:
        (<float*>p)[0] = v
    elif dtype == TL_FLOAT64:
        (<double*>p)[0] = v
    elif dtype == TL_BOOL:
        (<unsigned char*>p)[0] = 1 if v else 0
    elif dtype == TL_FLOAT16:
        (<uint16_t*>p)[0] = tl_float_to_half(<float>v)
    elif dtype == TL_BFLOAT16:
        (<uint16_t*>p)[0] = tl_float_to_bf16(<float>v)
    else:
        # an integer operand wraps into the compute type like a C cast, as PyTorch does
        # (uint8 + 300 == uint8 + 44); only numbers beyond 64 bits are refused
        v = int(v)
        if v >= 2**64 or v < -2**63:
            raise OverflowError(f"{op}: int too big to convert")
        iv = <long long>(v - 2**64 if v >= 2**63 else v)
        if dtype == TL_INT64:
            (<long long*>p)[0] = iv
        elif dtype == TL_INT32:
            (<int*>p)[0] = <int>iv
        elif dtype == TL_INT16:
            (<short*>p)[0] = <short>iv
        elif dtype == TL_INT8:
            (<signed char*>p)[0] = <signed char>iv
        else:
            (<unsigned char*>p)[0] = <unsigned char>iv
    return 0


cdef int _bshape(tuple xs, int64_t* shp, str op) except -1:
    """Broadcast the shapes of the Arrays in xs into shp; returns ndim."""
    cdef int nd = 0, i, k
    cdef Array a
    for x in xs:
        if isinstance(x, Array) and (<Array>x).nd > nd:
            nd = (<Array>x).nd
    for i in range(nd):
        shp[i] = 1
    for x in xs:
        if not isinstance(x, Array):
            continue
        a = <Array>x
        k = broadcast_into(shp, nd, a.nd, a.shp)
        if k >= 0:
            raise RuntimeError(
                f"{op}: The size of tensor a ({shp[k]}) must match the size of tensor b "
                f"({a.shp[k - (nd - a.nd)]}) at non-singleton dimension {k}; shapes are "
                + ", ".join(str(y.shape) for y in xs if isinstance(y, Array)))
    return nd


cdef Array _finish(Plan* p, Array res, Array out, int out_dtype, tl_loop fn, double* prm,
                   str op, int64_t grain):
    """Run the plan, then cast/copy into the requested output when the compute differed."""
    cdef int err
    with nogil:
        err = run_plan(p, fn, prm, grain)
    _raise_err(err, op)
    if res.dtype != out_dtype and out is None:
        return cast_array(res, out_dtype)
    if out is not None and res is not out:
        copy_into(out, res)
        return out
    return res


cdef Array _check_out(Array out, int nd, const int64_t* shp, int rdtype, str op):
    cdef int i
    if out is None:
        return None
    if out.nd != nd:
        raise RuntimeError(f"{op}: out= has shape {out.shape} but the result has shape "
                           f"{shape_tuple(nd, shp)}")
    for i in range(nd):
        if out.shp[i] != shp[i]:
            raise RuntimeError(f"{op}: out= has shape {out.shape} but the result has shape "
                               f"{shape_tuple(nd, shp)}")
    if not can_cast(rdtype, out.dtype):
        raise RuntimeError(f"{op}: result type {_TORCH_NAMES[rdtype]} can't be cast to the desired "
                           f"output type {_TORCH_NAMES[out.dtype]}")
    check_writable(out, op)
    return out


# ---------------------------------------------------------------------------------------
# The ops
# ---------------------------------------------------------------------------------------
cdef object _kernel_operand(object x, int cdt, Array out, char* slot, str op, bint cast):
    """An operand ready for a loop: an Array in the compute dtype (when `cast`) that `out`
    does not partially overlap, or None for a Python number, written into `slot`."""
    if isinstance(x, Array):
        if cast and (<Array>x).dtype != cdt:
            return cast_array(x, cdt)
        if out is not None and _overlaps(out, x):
            return _copy_new(x)
        return x
    _write_kernel_scalar(slot, cdt, x, op)
    return None


cdef int _unary_rdt(int op, int dtype) except -1:
    """The dtype unary op computes in for an input of `dtype` (its result's, unless the op
    returns bool); NotImplementedError where the op has no such dtype."""
    cdef int kind = unary_kind[op]
    if kind == K_FLOAT and not is_float(dtype) and not is_complex(dtype):
        return _default_float
    if (kind == K_INTONLY and is_float(dtype)) or (kind == K_FLOATONLY and not is_float(dtype)):
        raise _not_impl(_UNARY_NAMES[op], dtype)
    return dtype


cdef int _binary_rdt(int op, tuple xs) except -1:
    """The dtype binary op computes in for operands xs (Arrays and Python numbers)."""
    cdef int kind = binary_kind[op], rdt = _result_type(xs)
    if kind == B_FLOAT and not is_float(rdt) and not is_complex(rdt):
        return _default_float
    if kind == B_INT and (is_float(rdt) or is_complex(rdt)):
        raise _not_impl(_BINARY_NAMES[op], rdt)
    return rdt


def unary_dtypes(int op, int dtype):
    """(compute dtype, result dtype) of unary op on `dtype`, by the rules unary() applies
    (the CUDA backend picks its kernels by them).  For rounding ops on integers the compute
    dtype is None: the result is a copy."""
    cdef int rdt = _unary_rdt(op, dtype), kind = unary_kind[op]
    if kind == K_ROUND and not is_float(rdt) and not is_complex(rdt):
        return None, rdt
    if unary_real_result[op] and is_complex(rdt):
        return rdt, to_real(rdt)
    return rdt, TL_BOOL if kind == K_BOOLOUT else rdt


def binary_dtypes(int op, a, b):
    """(compute dtype, result dtype) of binary(op, a, b), a and b Arrays or Python numbers."""
    cdef int rdt = _binary_rdt(op, (a, b))
    return rdt, TL_BOOL if binary_kind[op] == B_CMP else rdt


def ternary_dtype(int op, a, b, c):
    """The result dtype of ternary(op, a, b, c) (checks the condition of where)."""
    if op == TERNARY["where"]:
        if not isinstance(a, Array):
            raise TypeError("where: condition must be a Tensor")
        if (<Array>a).dtype != TL_BOOL:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                               f"tensor with dtype {_TORCH_NAMES[(<Array>a).dtype]}")
        return _result_type((b, c))
    rdt = _result_type((a, b, c))
    if not is_float(rdt) and not is_complex(rdt):
        raise _not_impl(_TERNARY_NAMES[op], rdt)
    return rdt


def broadcast_result(tuple xs, str op):
    """The broadcast shape of the Arrays among xs, with the error message the ops raise."""
    cdef int64_t shp[MAX_DIMS]
    cdef int nd = _bshape(xs, shp, op)
    return shape_tuple(nd, shp)


def check_out(Array out, tuple shape, int rdtype, str op):
    """Raise what the ops raise when out= has the wrong shape, a dtype the result cannot be
    cast to, or overlapping elements."""
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    for i in range(len(shape)):
        shp[i] = shape[i]
    _check_out(out, len(shape), shp, rdtype, op)


def unary(int op, Array a, Array out=None, double p0=0.0, double p1=0.0, double p2=0.0):
    """out = op(a).  The op's kind (see unary_kind) decides the result dtype."""
    cdef int kind = unary_kind[op], rdt = a.dtype, cdt, odt
    cdef Plan p
    cdef double prm[3]
    cdef int64_t shp[MAX_DIMS]
    cdef int i
    cdef tl_loop fn
    cdef Array res, dst = None
    name = _UNARY_NAMES[op]
    rdt = _unary_rdt(op, rdt)
    if kind == K_ROUND and not is_float(rdt) and not is_complex(rdt):
        if out is None:
            return clone(a)
        copy_into(_check_out(out, a.nd, a.shp, rdt, name), a)
        return out
    odt = TL_BOOL if kind == K_BOOLOUT else rdt
    cdt = _compute_dtype(rdt)
    fn = tl_unary_loops[op][cdt]
    if fn == NULL:
        raise _not_impl(name, a.dtype)
    if unary_real_result[op] and is_complex(cdt):
        odt = to_real(rdt)
    for i in range(a.nd):
        shp[i] = a.shp[i]
    out = _check_out(out, a.nd, shp, odt, name)
    if a.dtype != cdt:
        a = cast_array(a, cdt)
    elif out is not None and _overlaps(out, a):
        a = _copy_new(a)
    if kind == K_BOOLOUT:
        rdt = odt                     # the loop writes the result type itself
    elif unary_real_result[op] and is_complex(cdt):
        rdt = to_real(cdt)            # |z|, arg z: the compute type's parts
    else:
        rdt = cdt
    if out is not None and out.dtype == rdt:
        dst = out
    prm[0] = p0; prm[1] = p1; prm[2] = p2
    res = _prepare(&p, (a,), NULL, dst, rdt, a.nd, shp)
    return _finish(&p, res, out, odt, fn, prm, name, GRAIN // 8 if kind == K_FLOAT else GRAIN)


def binary(int op, a, b, Array out=None, alpha=1.0):
    """out = op(a, b) with broadcasting; a or b may be a Python number.  alpha (add_alpha's
    and threshold_backward's scalar) is a real number, or a complex one for a complex
    result: the loops read it as P[0] + i P[1]."""
    cdef int kind = binary_kind[op], rdt, cdt, odt, nd
    cdef Plan p
    cdef double prm[2]
    cdef int64_t shp[MAX_DIMS]
    cdef char sbuf[SLOT * MAX_OPS]
    cdef tl_loop fn
    cdef Array res, dst = None
    cdef tuple xs = (a, b)
    name = _BINARY_NAMES[op]
    rdt = _binary_rdt(op, xs)
    odt = TL_BOOL if kind == B_CMP else rdt
    cdt = _compute_dtype(rdt)
    fn = tl_binary_loops[op][cdt]
    if fn == NULL:
        raise _not_impl(name, rdt)
    nd = _bshape(xs, shp, name)
    out = _check_out(out, nd, shp, odt, name)
    a = _kernel_operand(a, cdt, out, sbuf + SLOT, name, True)
    b = _kernel_operand(b, cdt, out, sbuf + 2 * SLOT, name, True)
    if out is not None and out.dtype == (TL_BOOL if kind == B_CMP else cdt):
        dst = out
    if isinstance(alpha, complex):
        if not is_complex(cdt):
            raise RuntimeError("For non-complex input tensors, argument alpha must not be a "
                               "complex number.")
        prm[0] = alpha.real
        prm[1] = alpha.imag
    else:
        prm[0] = alpha
        prm[1] = 0.0
    res = _prepare(&p, (a, b), sbuf, dst, TL_BOOL if kind == B_CMP else cdt, nd, shp)
    return _finish(&p, res, out, odt, fn, prm, name, GRAIN)


def ternary(int op, a, b, c, Array out=None, double p0=1.0):
    """out = op(a, b, c) for where (a is the bool condition), lerp, addcmul, addcdiv."""
    cdef int rdt, cdt, nd
    cdef Plan p
    cdef double prm[1]
    cdef int64_t shp[MAX_DIMS]
    cdef char sbuf[SLOT * MAX_OPS]
    cdef tl_loop fn
    cdef Array res, dst = None
    cdef list xs = [a, b, c]
    cdef int k, first
    name = _TERNARY_NAMES[op]
    rdt = ternary_dtype(op, a, b, c)
    if op == TERNARY["where"]:
        first = 1
        cdt = rdt if rdt in (TL_FLOAT16, TL_BFLOAT16, TL_COMPLEX32) else _compute_dtype(rdt)
    else:
        cdt = _compute_dtype(rdt)
        first = 0
    fn = tl_ternary_loops[op][cdt]
    if fn == NULL:
        raise _not_impl(name, rdt)
    nd = _bshape(tuple(xs), shp, name)
    out = _check_out(out, nd, shp, rdt, name)
    for k in range(3):
        xs[k] = _kernel_operand(xs[k], cdt, out, sbuf + SLOT * (k + 1), name, k >= first)
    if out is not None and out.dtype == cdt:
        dst = out
    prm[0] = p0
    res = _prepare(&p, tuple(xs), sbuf, dst, cdt, nd, shp)
    return _finish(&p, res, out, rdt, fn, prm, name, GRAIN)


def flip(Array a, tuple dims):
    """A new array with a's elements reversed along dims (a negative-stride view, read once)."""
    cdef Array v = make_view(a, a.nd, a.shp, a.strd, a.off)
    cdef Array out = new_array(a.nd, a.shp, a.dtype)
    cdef int d
    for d in dims:
        if a.shp[d] > 1:
            v.off += (a.shp[d] - 1) * a.strd[d]
            v.strd[d] = -a.strd[d]
    copy_into(out, v)
    return out
