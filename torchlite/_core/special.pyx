# The special functions of torchlite.special as elementwise kernels: gamma family (polygamma,
# Hurwitz zeta, regularized incomplete gamma), Bessel family (J, Y, I, K, Airy Ai),
# error-function family (erfcx, ndtr, log_ndtr, ndtri), entr, xlog1py and the orthogonal
# polynomials.
#
# The math is C in kernels/special_{gamma,bessel,math}.h, one double function per op; the
# loops (kernels/special_loops.h) have elementwise.pyx's loop signature, so this module only
# checks the operands and builds an iteration plan for elementwise's parallel driver.  The
# caller (torchlite/_ops/special.py) has already promoted and broadcast the operands: they
# have the output's shape (broadcast ones as stride-0 views) and its dtype, float32 or float64.
from libc.stdint cimport int64_t
from torchlite._core.array cimport Array, MAX_DIMS, tl_itemsize, TL_FLOAT32, TL_FLOAT64
from torchlite._core.elementwise cimport Plan, run_plan, tl_loop, check_writable

cdef extern from "kernels/special_loops.h" nogil:
    enum:
        TL_SP_NUNARY, TL_SP_NBINARY
    tl_loop tl_sp_unary_loops[TL_SP_NUNARY][2]
    tl_loop tl_sp_binary_loops[TL_SP_NBINARY][2]
    const char* tl_sp_unary_names[]
    const char* tl_sp_binary_names[]

# op name -> code, for unary(code, ...) and binary(code, ...)
UNARY = {tl_sp_unary_names[i].decode(): i for i in range(TL_SP_NUNARY)}
BINARY = {tl_sp_binary_names[i].decode(): i for i in range(TL_SP_NBINARY)}

# Elements per thread below which a loop stays serial.  These functions cost 50 ns to a few
# microseconds an element (series, continued fractions), so threads pay off early.
cdef int64_t GRAIN = 1024


cdef int _check(Array x, Array out, str op) except -1:
    cdef int i
    if x.dtype != out.dtype or (out.dtype != TL_FLOAT32 and out.dtype != TL_FLOAT64):
        raise TypeError(f"special.{op}: operands must be float32 or float64 arrays of the "
                        f"output's dtype")
    if x.nd != out.nd:
        raise RuntimeError(f"special.{op}: operand shape {x.shape} differs from the output's "
                           f"{out.shape}")
    for i in range(x.nd):
        if x.shp[i] != out.shp[i]:
            raise RuntimeError(f"special.{op}: operand shape {x.shape} differs from the "
                               f"output's {out.shape}")
    return 0


cdef void _plan(Plan* p, Array out, Array a, Array b) noexcept:
    """The iteration plan over out = f(a[, b]): the dims innermost first, byte strides, and
    neighbouring dims merged where every operand allows it (a contiguous operand becomes
    one long run)."""
    cdef int nops = 2 if b is None else 3, nd = out.nd, d, o, c
    cdef int64_t st[3][MAX_DIMS]
    cdef int isz = tl_itemsize[out.dtype]
    cdef bint merge
    for d in range(nd):
        st[0][d] = out.strd[d] * isz
        st[1][d] = a.strd[d] * isz if a.shp[d] != 1 else 0
        if b is not None:
            st[2][d] = b.strd[d] * isz if b.shp[d] != 1 else 0
    p.nops = nops
    p.ptr[0] = out.ptr()
    p.ptr[1] = a.ptr()
    if b is not None:
        p.ptr[2] = b.ptr()
    p.nd = 0
    p.numel = 1
    for d in range(nd - 1, -1, -1):         # innermost (last) dim first
        p.numel *= out.shp[d]
        if out.shp[d] == 1:
            continue
        if p.nd > 0:
            c = p.nd - 1
            merge = True
            for o in range(nops):
                if st[o][d] != p.strides[o][c] * p.shape[c]:
                    merge = False
                    break
            if merge:
                p.shape[c] *= out.shp[d]
                continue
        p.shape[p.nd] = out.shp[d]
        for o in range(nops):
            p.strides[o][p.nd] = st[o][d]
        p.nd += 1
    if p.nd == 0:
        p.nd = 1
        p.shape[0] = 1
        for o in range(nops):
            p.strides[o][0] = 0


def unary(int op, Array x, Array out):
    """out = f(x) for the function numbered op in UNARY; x and out of one shape and dtype
    (float32 or float64).  out must not overlap x unless it is x itself."""
    if op < 0 or op >= TL_SP_NUNARY:
        raise ValueError(f"special.unary: no op {op}")
    name = tl_sp_unary_names[op].decode()
    _check(x, out, name)
    check_writable(out, name)
    cdef Plan p
    cdef tl_loop fn = tl_sp_unary_loops[op][1 if out.dtype == TL_FLOAT64 else 0]
    _plan(&p, out, x, None)
    with nogil:
        run_plan(&p, fn, NULL, GRAIN)
    return out


def binary(int op, Array a, Array b, Array out):
    """out = f(a, b) for the function numbered op in BINARY; a, b (broadcast views allowed)
    and out of one shape and dtype (float32 or float64)."""
    if op < 0 or op >= TL_SP_NBINARY:
        raise ValueError(f"special.binary: no op {op}")
    name = tl_sp_binary_names[op].decode()
    _check(a, out, name)
    _check(b, out, name)
    check_writable(out, name)
    cdef Plan p
    cdef tl_loop fn = tl_sp_binary_loops[op][1 if out.dtype == TL_FLOAT64 else 0]
    _plan(&p, out, a, b)
    with nogil:
        run_plan(&p, fn, NULL, GRAIN)
    return out
