"""Reductions on the GPU: torchlite._core.reduction's sum, nansum, prod, amax, amin, any, all,
mean, var/std (with the mean) and argmax/argmin/max/min with indices, launched as the one
tl_reduce kernel of cuda_kernels/reduction.cu.

The host describes a reduction by two indexers: `out_ix` maps an output number to (the
offset of its first input element, its offset in out0, in out1) and `red_ix` maps a reduced
element number r to its offset from that first element (r is also what argmax reports, so
the reduced dims keep their C order).  The block shape follows the memory: when the reduced
elements are contiguous a warp walks each reduction ("rows"), otherwise consecutive
threads take consecutive outputs ("columns") so their loads coalesce.  Few outputs over many
elements split each reduction over gridDim.y blocks, whose partials the last block combines
in order, so every result is deterministic.  Empty reductions and the rest go to the host
fallback, which raises or fills exactly as the CPU.
"""
import functools
import struct

from .._core import elementwise as _cpu_ew
from .._core import reduction as _cpu_reduce
from . import _array, _kernels as K, _launch, _runtime
from ._elementwise import coalesce, copy_ as _copy, packed_indexer
from ._registry import native

_U32 = 1 << 32
_BIN, _UN = _cpu_ew.BINARY, _cpu_ew.UNARY
_ACC_BYTES = 24                 # the largest accumulator (Welford); partials are laid out by it


def _pow2_at_most(n, cap):
    p = 1
    while p * 2 <= min(n, cap):
        p *= 2
    return p


def _contiguous_strides(shape):
    st, step = [0] * len(shape), 1
    for d in reversed(range(len(shape))):
        st[d], step = step, step * shape[d]
    return st


class _Plan:
    """How to launch one reduction layout: the output shape, the packed indexers and the
    launch shape.  Pure metadata, so cached per layout (a training loop repeats them)."""
    __slots__ = ("out_shape", "n_out", "R", "out_ix", "red_ix", "rows", "grid", "block", "chunk")


@functools.lru_cache(maxsize=512)
def _plan(shape, strides, red, keepdim, outs_present, sms):
    ndim = len(shape)
    kept = [d for d in range(ndim) if d not in red]
    p = _Plan()
    p.R = p.n_out = 1
    for d in red:
        p.R *= shape[d]
    for d in kept:
        p.n_out *= shape[d]
    if p.R == 0 or p.n_out == 0 or p.R >= _U32 and len(red) > 1:
        return None                                 # the CPU's errors and empty results
    p.out_shape = tuple(1 if d in red else shape[d] for d in range(ndim)) if keepdim \
        else tuple(shape[d] for d in kept)
    kshape = [shape[d] for d in kept]
    kstrides = _contiguous_strides(kshape)
    in_kept = [strides[d] for d in kept]
    # tl_reduce reads every operand's step in the fast path, the first one included
    p.out_ix = packed_indexer(kshape, [in_kept] + [kstrides if o else [0] * len(kept)
                                                   for o in outs_present], output_at_i=False)
    p.red_ix = packed_indexer([shape[d] for d in red], [[strides[d] for d in red]],
                              output_at_i=False)
    if p.out_ix is None or p.red_ix is None:
        return None
    # the layout: "rows" when the reduced elements are contiguous, or the outputs are not
    rcs, rcst = coalesce([shape[d] for d in red], [[strides[d] for d in red]])
    kcs, kcst = coalesce(kshape, [in_kept])
    p.rows = (rcst[0] == [1] if len(rcs) == 1 else False) or not (kcst[0] and kcst[0][-1] == 1)
    R, n_out = p.R, p.n_out
    if p.rows:
        bx = _pow2_at_most(R, 512) if R >= 32 else 32
        by = max(1, 256 // bx)
        gx = (n_out + by - 1) // by
    else:
        bx = 32
        by = _pow2_at_most(R, 32)
        gx = (n_out + bx - 1) // bx
    lanes = bx if p.rows else by
    gy = 1
    if gx < 2 * sms and R > 8 * lanes:                    # too few blocks: split the reductions
        gy = min((R + 4 * lanes - 1) // (4 * lanes), max(1, (4 * sms) // gx), 1024)
    p.chunk = (R + gy - 1) // gy
    gy = (R + p.chunk - 1) // p.chunk
    p.grid, p.block = (gx, gy), (bx, by)
    return p


def _run(kernel_name, a, dims, keepdim, out_dtypes, scalars=()):
    """Launch tl_reduce `kernel_name` over a (a CudaArray) reducing `dims`; returns the output
    arrays (one per entry of out_dtypes that is not None), or NotImplemented."""
    device = a.device_index
    red = _cpu_reduce.reduced_dims(dims, a.ndim)
    outs_present = tuple(dt is not None for dt in out_dtypes) + (False,) * (2 - len(out_dtypes))
    p = _plan(a.shape, a.strides, red, bool(keepdim), outs_present, _launch.sm_count(device))
    if p is None:
        return NotImplemented
    outs = [None if dt is None else _array.empty(p.out_shape, dt, device) for dt in out_dtypes]
    gx, gy = p.grid
    ws = sem = None          # freed on return: later work on this stream runs after the kernel
    if gy > 1:
        ws = _runtime.malloc(device, p.n_out * gy * _ACC_BYTES)
        sem = _runtime.malloc(device, 4 * gx)
        _runtime.memset(device, sem.address, b"\0\0\0\0", gx)
    args_struct = struct.pack("<qqqiiQQ", p.n_out, p.R, p.chunk, 1 if p.rows else 0, 0,
                              ws.address if ws else 0, sem.address if sem else 0)
    k = _launch.kernel("reduction.cu", kernel_name, device)
    ptrs = [o.data_ptr() if o is not None else 0 for o in outs] + [0] * (2 - len(outs))
    _launch.launch(k, p.grid, p.block, [
        _launch.ptr(a.data_ptr()), _launch.ptr(ptrs[0]), _launch.ptr(ptrs[1]),
        _launch.struct(p.out_ix), _launch.struct(p.red_ix), _launch.struct(args_struct),
        _launch.struct(K.pack_params(scalars))])
    return [o for o in outs if o is not None]


def _kernel(op, dtype):
    try:
        return K.reduce_kernel(op, dtype)
    except KeyError:
        return None


_REDUCE_OPS = {"sum": "Sum", "nansum": "NanSum", "prod": "Prod", "amax": "Max", "amin": "Min",
               "any": "Any", "all": "All"}


@native("reduction", "reduce", kernel=True)
def reduce(op, a, dims, keepdim, name=None):
    kop = _REDUCE_OPS.get(op)
    name_expr = _kernel(kop, a.dtype) if kop else None
    if name_expr is None:
        return NotImplemented
    if kop in ("Sum", "NanSum", "Prod"):
        out_dtype = a.dtype if a.dtype in K.FLOATS else K.INT64
    elif kop in ("Any", "All"):
        out_dtype = K.BOOL
    else:
        out_dtype = a.dtype
    res = _run(name_expr, a, dims, keepdim, (out_dtype,))
    if res is NotImplemented:
        return res
    out = res[0]
    if kop in ("Any", "All") and a.dtype == K.UINT8:       # PyTorch gives uint8 for uint8
        cast = _array.empty(out.shape, K.UINT8, out.device_index)
        return _copy(cast, out)
    return out


@native("reduction", "mean", kernel=True)
def mean(a, dims, keepdim, ignore_nan=False):
    name_expr = None if ignore_nan else _kernel("Mean", a.dtype)
    if name_expr is None:
        return NotImplemented
    res = _run(name_expr, a, dims, keepdim, (a.dtype,))
    return res if res is NotImplemented else res[0]


@native("reduction", "var", kernel=True)
def var(a, dims, correction, keepdim, take_sqrt, want_mean):
    name_expr = _kernel("VarStd", a.dtype)
    if name_expr is None:
        return NotImplemented
    res = _run(name_expr, a, dims, keepdim, (a.dtype, a.dtype if want_mean else None),
               (correction, 1.0 if take_sqrt else 0.0))
    if res is NotImplemented:
        return res
    return res[0], (res[1] if want_mean else None)


@native("reduction", "argreduce", kernel=True)
def argreduce(is_min, a, dim, keepdim, want_values, name):
    if isinstance(dim, (tuple, list)):
        return NotImplemented
    name_expr = _kernel("Min" if is_min else "Max", a.dtype)
    if name_expr is None:
        return NotImplemented
    if dim is None and keepdim:
        return NotImplemented                          # the CPU's shape rule for this case
    res = _run(name_expr, a, dim, keepdim, (a.dtype if want_values else None, K.INT64))
    if res is NotImplemented:
        return res
    return (res[0], res[1]) if want_values else (None, res[0])


# ---- softmax --------------------------------------------------------------------------------
@native("reduction", "softmax", kernel=True)
def softmax(a, dim, log):
    """softmax / log_softmax along dim by tl_softmax (cuda_kernels/softmax.cu): the input made
    contiguous and seen as [outer, R, inner]; a warp per row when inner == 1, else threads
    across the inner columns so loads coalesce."""
    if a.dtype not in K.FLOATS or a.ndim == 0 or a.numel == 0:
        return NotImplemented                  # the CPU's errors and trivial cases
    (d,) = _cpu_reduce.reduced_dims(dim, a.ndim)
    from ._copy import contiguous
    x = contiguous(a)
    outer = inner = 1
    for s in a.shape[:d]:
        outer *= s
    for s in a.shape[d + 1:]:
        inner *= s
    R = a.shape[d]
    y = _array.empty(a.shape, a.dtype, a.device_index)
    rows = inner == 1
    cols = outer * inner
    if rows:
        bx = _pow2_at_most(R, 1024) if R >= 32 else 32
        by = max(1, 256 // bx)
        gx = (cols + by - 1) // by
    else:
        bx, by = 32, _pow2_at_most(R, 32)
        gx = (cols + bx - 1) // bx
    k = _launch.kernel("softmax.cu", K.softmax_kernel(a.dtype), a.device_index)
    _launch.launch(k, gx, (bx, by), [
        _launch.ptr(x.data_ptr()), _launch.ptr(y.data_ptr()), _launch.i64(outer), _launch.i64(R),
        _launch.i64(inner), _launch.i32(1 if rows else 0), _launch.i32(1 if log else 0)])
    return y


# ---- vector norms ------------------------------------------------------------------------------
@native("reduction", "vector_norm", kernel=True)
def vector_norm(a, ord, dims, keepdim, name="linalg.vector_norm"):
    """The 2-, 1- and inf-norms (clip_grad_norm_, normalize, ...): the elements in float64
    (as the CPU accumulates them), then abs/square, a reduction, sqrt, and the input's dtype.
    Other orders and empty inputs take the host fallback."""
    from ._elementwise import binary, cast, unary
    if a.dtype not in K.FLOATS or a.numel == 0 or ord not in (1.0, 2.0, float("inf")):
        return NotImplemented
    x = cast(a, K.FLOAT64)
    if ord == 2.0:
        r = reduce("sum", binary(_BIN["mul"], x, x), dims, keepdim)
        r = unary(_UN["sqrt"], r)
    else:
        r = reduce("sum" if ord == 1.0 else "amax", unary(_UN["abs"], x), dims, keepdim)
    if r is NotImplemented:
        return r
    return cast(r, a.dtype)


@native("reduction", "logsumexp", kernel=True)
def logsumexp(a, dims, keepdim):
    """log(sum(exp(x))) as the CPU computes it: in float64, the max taken out first (0 where
    it is infinite), then the input's dtype."""
    from ._elementwise import binary, cast, ternary, unary
    if a.dtype not in K.FLOATS or a.numel == 0:
        return NotImplemented
    x = cast(a, K.FLOAT64)
    m = reduce("amax", x, dims, True)
    if m is NotImplemented:
        return m
    m = ternary(_cpu_ew.TERNARY["where"], unary(_UN["isinf"], m), 0.0, m)
    s = reduce("sum", unary(_UN["exp"], binary(_BIN["sub"], x, m)), dims, keepdim)
    if s is NotImplemented:
        return s
    r = binary(_BIN["add"], unary(_UN["log"], s), m if keepdim else m.view(s.shape))
    return cast(r, a.dtype)


# ---- cumulative sums ---------------------------------------------------------------------------
@native("reduction", "scan", kernel=True)
def scan(op, a, dim):
    """cumsum along dim by log2(n) rounds of shifted adds (y[k:] += y[:-k], k = 1, 2, 4, ...),
    in float64 for floating inputs (then the input's dtype) and int64 for the others, as the
    CPU's result dtypes.  cumprod and logcumsumexp take the host fallback."""
    from ._elementwise import binary, cast, copy_
    if op != "cumsum" or a.ndim == 0 or a.numel == 0:
        return NotImplemented
    (d,) = _cpu_reduce.reduced_dims(dim, a.ndim)
    floating = a.dtype in K.FLOATS
    work = K.FLOAT64 if floating else K.INT64
    y = copy_(_array.empty(a.shape, work, a.device_index), a)
    buf = _array.empty(a.shape, work, a.device_index)
    n, k = a.shape[d], 1
    while k < n:
        binary(_BIN["add"], y.slice(d, k, n, 1), y.slice(d, 0, n - k, 1), out=buf.slice(d, k, n, 1))
        copy_(buf.slice(d, 0, k, 1), y.slice(d, 0, k, 1))
        y, buf = buf, y
        k *= 2
    return cast(y, a.dtype) if floating else y
