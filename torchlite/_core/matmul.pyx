# Matrix products over strided, batched operands.  The kernels are C (kernels/gemm.h:
# packing, SIMD micro-kernels compiled per ISA level, OpenMP blocking); this module checks
# the operands, computes the dtypes the kernels lack (float16, bfloat16) through float32,
# handles empty products and an output that aliases an input, and lays out the batch.
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free
from torchlite._core.array cimport (Array, MAX_DIMS, new_array, TL_BOOL, TL_FLOAT16,
                                    TL_BFLOAT16, TL_FLOAT32, TL_FLOAT64)
from torchlite._core.elementwise cimport cast_array, copy_into
from torchlite._core.parallel cimport max_threads
from torchlite._core.fused cimport Program, Epilogue
from torchlite._core import array as _A
from torchlite._core import elementwise as _ew

from torchlite._core.gemm cimport (tl_gemm_problem, tl_gemm_problem_clear, tl_gemm_run, tl_gemm_install, tl_cpu_isa_level,
                                   tl_gemm_packed_b_size, tl_gemm_pack_b)

# dtype names as PyTorch's messages spell them: ScalarType names and C++ type names
from torchlite._core.array import TORCH_DTYPE_NAMES as TORCH_NAMES
C_NAMES = ("bool", "unsigned char", "signed char", "short int", "int", "long int", "c10::Half",
           "c10::BFloat16", "float", "double",
           "c10::complex<float>", "c10::complex<double>", "c10::complex<c10::Half>")
cdef int _MUL = _ew.BINARY["mul"]

# ---------------------------------------------------------------------------------------
# ISA selection (the elementwise module has its own; tests force each level of both)
# ---------------------------------------------------------------------------------------
cdef int _isa = 0

def isa_level():
    """The SIMD level whose GEMM kernels are installed: 0, 3 (AVX2+FMA) or 4 (AVX-512)."""
    return _isa

def set_isa_level(int level):
    """Install the GEMM kernels of `level`, clamped to what the CPU supports; returns the
    level installed.  Tests use it to run every copy of the kernels."""
    global _isa
    cdef int cpu = tl_cpu_isa_level()
    _isa = tl_gemm_install(level if level < cpu else cpu)
    return _isa

from torchlite._core import env_isa_level
set_isa_level(env_isa_level())


# ---------------------------------------------------------------------------------------
# Batched product
# ---------------------------------------------------------------------------------------
cdef int _check_operands(Array a, Array b, str op) except -1:
    cdef int nd = a.nd, i
    if nd < 2 or b.nd != nd:
        raise RuntimeError(f"{op}: expected two tensors of the same rank >= 2, got shapes "
                           f"{a.shape} and {b.shape}")
    for i in range(nd - 2):
        if a.shp[i] != b.shp[i]:
            raise RuntimeError(f"{op}: batch dimensions must match, got shapes {a.shape} and "
                               f"{b.shape}")
    if a.shp[nd - 1] != b.shp[nd - 2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({a.shp[nd - 2]}x{a.shp[nd - 1]} and {b.shp[nd - 2]}x{b.shp[nd - 1]})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{C_NAMES[a.dtype]} != {C_NAMES[b.dtype]}")
    if a.dtype == TL_BOOL:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")
    return 0


cdef int _check_out(Array out, Array a, Array b, str op) except -1:
    cdef int nd = a.nd, i
    cdef bint ok = out.nd == nd and out.shp[nd - 2] == a.shp[nd - 2] and out.shp[nd - 1] == b.shp[nd - 1]
    for i in range(nd - 2):
        ok = ok and out.shp[i] == a.shp[i]
    if not ok:
        raise RuntimeError(f"{op}: out has shape {out.shape}, expected "
                           f"{a.shape[:nd - 1] + (b.shp[nd - 1],)}")
    if out.dtype != a.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {C_NAMES[a.dtype]}, but got "
                           f"{C_NAMES[out.dtype]} instead")
    for i in range(nd):
        if out.strd[i] == 0 and out.shp[i] > 1:
            raise RuntimeError(f"{op}: unsupported operation: more than one element of the "
                               f"written-to tensor refers to a single memory location. Please "
                               f"clone() the tensor before performing the operation.")
    return 0


def check_bmm(Array a, Array b, Array out, str op="bmm"):
    """Raise what bmm raises for these operands (shapes, dtypes, out=), computing nothing:
    the CUDA backend checks its operands' metadata with it."""
    _check_operands(a, b, op)
    if out is not None:
        _check_out(out, a, b, op)


def check_addend(Array out, Array addend, str op="bmm"):
    """bmm's addend must have out's shape and dtype (a broadcast view, stride 0, is fine)."""
    if addend.shape != out.shape or addend.dtype != out.dtype:
        raise ValueError(f"{op}: the addend {list(addend.shape)} must have the result's shape "
                         f"{list(out.shape)} and dtype")


cdef inline bint _is_float(int dt) noexcept:
    return dt == TL_FLOAT16 or dt == TL_BFLOAT16 or dt == TL_FLOAT32 or dt == TL_FLOAT64


cdef int _scale(Array out, object beta) except -1:
    """out *= beta, where a zero beta clears out (NaN and garbage included), as in BLAS."""
    if not _is_float(out.dtype):
        beta = int(beta)
    if beta == 0:
        _A.fill_(out, 0)
    elif beta != 1:
        _ew.binary(_MUL, out, float(beta) if _is_float(out.dtype) else beta, out)
    return 0


cdef class PackedB:
    """A right operand b (k x n, float32/float64) packed once into the panels the GEMM reads
    (kernels/gemm.h, tl_gemm_pack_b), for many products a @ b with the same b -- a recurrent
    layer's weights at every time step -- instead of repacking b in each.  Tied to b (its
    address, shape, strides and dtype) and to the kernels installed when it was made;
    bmm(..., packed=) uses it only while all of these still match, and reads b itself
    otherwise.  It is a snapshot: after b's values change in place, pack it again."""
    cdef readonly Array panels
    cdef readonly int64_t k, n, pb_n, rs, cs
    cdef readonly size_t src
    cdef readonly int dtype, isa

    def matches(self, Array b):
        return (b.nd == 2 and b.shp[0] == self.k and b.shp[1] == self.n and
                b.dtype == self.dtype and self.isa == _isa and <size_t>b.ptr() == self.src
                and b.strd[0] == self.rs and b.strd[1] == self.cs)


def pack_b(Array b):
    """b (k x n) packed for repeated products (a PackedB), or None where there is no packed
    form (a dtype other than float32/float64, an empty b, panels the allocator did not align
    to 64 bytes)."""
    cdef int64_t pb_n = 0, size
    cdef PackedB pk
    if b.nd != 2 or (b.dtype != TL_FLOAT32 and b.dtype != TL_FLOAT64) or b.shp[0] == 0 \
            or b.shp[1] == 0:
        return None
    size = tl_gemm_packed_b_size(b.dtype, b.shp[0], b.shp[1], &pb_n)
    pk = PackedB.__new__(PackedB)
    pk.panels = new_array(1, &size, b.dtype)
    if (<size_t>pk.panels.ptr()) % 64:      # the micro-kernels load the panels aligned
        return None
    pk.k = b.shp[0]; pk.n = b.shp[1]; pk.pb_n = pb_n; pk.dtype = b.dtype; pk.isa = _isa
    pk.src = <size_t>b.ptr(); pk.rs = b.strd[0]; pk.cs = b.strd[1]
    with nogil:
        tl_gemm_pack_b(b.dtype, pk.panels.ptr(), b.ptr(), b.strd[0], b.strd[1], b.shp[0],
                       b.shp[1])
    return pk


cdef int _run(Array a, Array b, Array out, object alpha, object beta,
              PackedB packed=None, Array addend=None) except -1:
    """The kernel call: out is m x n per batch entry (m, n, k >= 1), disjoint from a and b;
    packed: b's panels (one 2-D product only); addend: read instead of out's old values
    (float32/float64, one product, disjoint from out: see _reads_addend)."""
    cdef int nd = a.nd, i, err
    cdef int64_t nbatch = 1
    cdef int64_t zero = 0
    cdef int64_t* offs = NULL
    cdef tl_gemm_problem p
    for i in range(nd - 2):
        nbatch *= a.shp[i]
    tl_gemm_problem_clear(&p)       # no packed B, no epilogue unless set below
    p.m = a.shp[nd - 2]; p.k = a.shp[nd - 1]; p.n = b.shp[nd - 1]
    p.a = a.ptr(); p.rsa = a.strd[nd - 2]; p.csa = a.strd[nd - 1]
    p.b = b.ptr(); p.rsb = b.strd[nd - 2]; p.csb = b.strd[nd - 1]
    p.c = out.ptr(); p.rsc = out.strd[nd - 2]; p.csc = out.strd[nd - 1]
    if packed is not None and nd == 2:
        p.pb = packed.panels.ptr(); p.pb_n = packed.pb_n
    if addend is not None:
        p.addend = addend.ptr(); p.ars = addend.strd[nd - 2]; p.acs = addend.strd[nd - 1]
    if _is_float(a.dtype):
        p.alpha = float(alpha); p.beta = float(beta); p.ialpha = 0; p.ibeta = 0
    else:
        p.ialpha = int(alpha); p.ibeta = int(beta); p.alpha = 0; p.beta = 0
    if nbatch > 1:
        offs = <int64_t*>malloc(3 * nbatch * sizeof(int64_t))
        if offs == NULL:
            raise MemoryError("matmul: cannot allocate the batch offsets")
        _batch_offsets(a, b, out, nbatch, offs)
    with nogil:
        if offs == NULL:
            err = tl_gemm_run(a.dtype, &p, 1, &zero, &zero, &zero, max_threads())
        else:
            err = tl_gemm_run(a.dtype, &p, nbatch, offs, offs + nbatch, offs + 2 * nbatch,
                              max_threads())
    free(offs)
    if err == -1:
        raise MemoryError("matmul: out of memory for the packing buffers")
    if err == -3:
        raise ValueError("matmul: an addend read in place takes one float32/float64 product")
    if err:
        raise RuntimeError(f"matmul: no kernel for dtype {_ew.DTYPE_NAMES[a.dtype]}")
    return 0


cdef void _batch_offsets(Array a, Array b, Array out, int64_t nbatch, int64_t* offs) noexcept:
    """Element offsets of each batch entry of a, b and out (batch dims in row-major order)."""
    cdef int nb = a.nd - 2, d
    cdef int64_t idx[MAX_DIMS]
    cdef int64_t i, oa = 0, ob = 0, oc = 0
    for d in range(nb):
        idx[d] = 0
    for i in range(nbatch):
        offs[i] = oa; offs[nbatch + i] = ob; offs[2 * nbatch + i] = oc
        d = nb - 1
        while d >= 0:               # odometer step over the batch dims
            idx[d] += 1
            oa += a.strd[d]; ob += b.strd[d]; oc += out.strd[d]
            if idx[d] < a.shp[d]:
                break
            oa -= a.strd[d] * a.shp[d]; ob -= b.strd[d] * a.shp[d]; oc -= out.strd[d] * a.shp[d]
            idx[d] = 0
            d -= 1


def bmm(Array a, Array b, Array out=None, alpha=1, beta=0, str op="bmm", PackedB packed=None,
        Array addend=None):
    """out = alpha * (a @ b) + beta * out for a of shape (*B, m, k) and b of shape (*B, k, n)
    with the same batch shape B (broadcast by the caller) and the same dtype.  With beta != 0
    out must be given: it holds the addend, unless `addend` (out's shape and dtype, a
    broadcast view or another array; the CUDA kernels read it in place: a bias with no copy)
    gives it: out = alpha * (a @ b) + beta * addend.  Any strides work, stride 0 included;
    out may alias a or b.  float16/bfloat16 are computed in float32 and rounded once; integers
    wrap.  packed: pack_b(b) for a 2-D product, read instead of b while it matches b.
    Returns out, a new C-contiguous array when None was given."""
    cdef int nd = a.nd, i
    cdef int64_t shp[MAX_DIMS]
    cdef int64_t nbatch = 1
    cdef Array tmp
    _check_operands(a, b, op)
    if out is None:
        if beta != 0:
            raise ValueError(f"{op}: beta != 0 needs the addend in out")
        for i in range(nd - 1):
            shp[i] = a.shp[i]
        shp[nd - 1] = b.shp[nd - 1]
        out = new_array(nd, shp, a.dtype)
    else:
        _check_out(out, a, b, op)
    cdef bint direct = False
    if addend is not None and beta != 0:
        check_addend(out, addend, op)
        direct = _reads_addend(a, b, out, addend)
        if not direct and not (addend.storage is out.storage and addend.offset == out.offset
                               and addend.strides == out.strides):
            if out.storage is a.storage or out.storage is b.storage:
                raise ValueError(f"{op}: an addend with out aliasing an operand")
            if addend.storage is out.storage:
                addend = _ew.clone(addend, False)    # it overlaps out in another layout
            copy_into(out, addend)
    for i in range(nd - 2):
        nbatch *= a.shp[i]
    if nbatch == 0 or out.shp[nd - 2] == 0 or out.shp[nd - 1] == 0:
        return out
    if a.shp[nd - 1] == 0:
        if direct:
            copy_into(out, addend)
        _scale(out, beta)
        return out
    if a.dtype == TL_FLOAT16 or a.dtype == TL_BFLOAT16:
        tmp = cast_array(out, TL_FLOAT32) if beta != 0 else new_array(nd, out.shp, TL_FLOAT32)
        _run(cast_array(a, TL_FLOAT32), cast_array(b, TL_FLOAT32), tmp, alpha, beta)
        copy_into(out, tmp)
    elif out.storage is a.storage or out.storage is b.storage:
        tmp = _ew.clone(out, False) if beta != 0 else new_array(nd, out.shp, out.dtype)
        _run(a, b, tmp, alpha, beta)
        copy_into(out, tmp)
    else:
        _run(a, b, out, alpha, beta,
             packed if packed is not None and nd == 2 and packed.matches(b) else None,
             addend if direct else None)
    return out


cdef bint _reads_addend(Array a, Array b, Array out, Array addend):
    """Whether the GEMM reads the addend where it lies (kernels/gemm.h's addend) rather than
    having it copied into out first: one float32/float64 product whose operands and addend
    are all apart from out.  A bias then costs no pass over out."""
    cdef int i
    for i in range(a.nd - 2):
        if a.shp[i] != 1:
            return False
    return (a.dtype == TL_FLOAT32 or a.dtype == TL_FLOAT64) and addend.dtype == a.dtype \
        and out.storage is not a.storage and out.storage is not b.storage \
        and addend.storage is not out.storage


# ---------------------------------------------------------------------------------------
# A product with a fused epilogue (torchlite.compile)
# ---------------------------------------------------------------------------------------
def mm_epilogue(Array a, Array b, Array addend, Program program, tuple inputs, int c_index):
    """(c, outputs) for c = a @ b (+ addend: c's shape, a broadcast view of a bias; or None)
    and `program` run on `inputs` with inputs[c_index] taken to be c: the program goes over
    each tile of c as the GEMM finishes it, while the tile is in L1 (kernels/gemm.h's
    epilogue hook, fused.Epilogue), instead of as a pass over all of c afterwards.  For 2-D
    float32/float64 operands of one dtype with m, n, k >= 1 and a program without row
    instructions; None otherwise (the caller then runs the product and the program apart).
    c and the outputs are new contiguous arrays."""
    cdef int64_t shp[2]
    cdef int64_t zero = 0
    cdef int err
    cdef tl_gemm_problem p
    cdef Epilogue ep
    cdef Array c
    if a.nd != 2 or b.nd != 2 or a.dtype != b.dtype or not (a.dtype == TL_FLOAT32 or a.dtype == TL_FLOAT64) \
            or program.has_row_instructions:
        return None
    _check_operands(a, b, "mm")
    if a.shp[0] == 0 or a.shp[1] == 0 or b.shp[1] == 0:
        return None
    shp[0], shp[1] = a.shp[0], b.shp[1]
    c = new_array(2, shp, a.dtype)
    if addend is not None:
        check_addend(c, addend, "mm")
        if addend.dtype != a.dtype:
            return None
    args = list(inputs)
    args[c_index] = c
    ep = Epilogue(program, tuple(args), c_index)
    tl_gemm_problem_clear(&p)
    p.m = shp[0]; p.k = a.shp[1]; p.n = shp[1]
    p.a = a.ptr(); p.rsa = a.strd[0]; p.csa = a.strd[1]
    p.b = b.ptr(); p.rsb = b.strd[0]; p.csb = b.strd[1]
    p.c = c.ptr(); p.rsc = c.strd[0]; p.csc = c.strd[1]
    p.alpha = 1.0; p.beta = 0.0 if addend is None else 1.0
    if addend is not None:
        p.addend = addend.ptr(); p.ars = addend.strd[0]; p.acs = addend.strd[1]
    p.epilogue = ep.fn; p.epilogue_ctx = ep.ctx
    with nogil:
        err = tl_gemm_run(a.dtype, &p, 1, &zero, &zero, &zero, max_threads())
    if err == -1:
        raise MemoryError("matmul: out of memory for the packing buffers")
    if err:
        raise RuntimeError(f"matmul: the fused product failed ({err})")
    ep.check()
    return c, ep.outputs

