"""Array-layer functions run by kernels of cuda_kernels/ (registered in torchlite/cuda/_ops.py
with kernel=True).  Each takes the CPU function's arguments, applies the CPU's rules through
the CPU module's metadata-only helpers (dtype promotion, broadcasting, out= checks: one home,
in torchlite/_core/elementwise.pyx, run on the device arrays' metadata), and launches.  A
case a kernel does not cover returns NotImplemented, which sends the call to the host fallback.

Elementwise launches: the operands' dims are coalesced (adjacent dims merged where every
operand's strides allow, size-1 dims dropped); a launch whose operands are all contiguous
(or broadcast scalars) takes the kernels' contiguous fast path, the others walk the strided
space (tl::Indexer, packed by _kernels.pack_indexer).
"""
import functools
import math

from .._core import elementwise as _cpu_ew
from . import _array, _kernels as K, _launch, _runtime, _state
from ._array import CudaArray
from ._registry import native

_THREADS = 256
_INT_DIV = {"DIV_FLOOR", "DIV_TRUNC", "REMAINDER", "FMOD"}
_UNARY_NAME = {code: name.upper() for name, code in _cpu_ew.UNARY.items()}
_BINARY_NAME = {code: name.upper() for name, code in _cpu_ew.BINARY.items()}
_TERNARY_NAME = {code: name.upper() for name, code in _cpu_ew.TERNARY.items()}


# ---- launch geometry ---------------------------------------------------------------------------
def coalesce(shape, strides):
    """(shape, strides) with size-1 dims dropped and adjacent dims merged where every
    operand allows it; strides is a list of per-operand stride tuples."""
    dims = [d for d, s in enumerate(shape) if s != 1]
    out_shape, out_strides = [], [[] for _ in strides]
    for d in dims:
        if out_shape and all(st[d] * shape[d] == os[-1] for st, os in zip(strides, out_strides)):
            out_shape[-1] *= shape[d]
            for st, os in zip(strides, out_strides):
                os[-1] = st[d]
            continue
        out_shape.append(shape[d])
        for st, os in zip(strides, out_strides):
            os.append(st[d])
    return out_shape, out_strides


def _broadcast_strides(a, shape):
    """a's element strides viewed at the broadcast `shape` (0 along broadcast dims)."""
    pad = len(shape) - a.ndim
    st = [0] * pad + list(a.strides)
    ash = [1] * pad + list(a.shape)
    return tuple(0 if ash[d] == 1 and shape[d] != 1 else st[d] for d in range(len(shape)))


def _indexer(shape, operands):
    """(packed Indexer, numel) for operands (output first) over the broadcast `shape`."""
    out = operands[0]
    if out.is_contiguous():
        n = out.numel
        steps = [1]
        for x in operands[1:]:
            if x.numel == 1:
                steps.append(0)
            elif x.shape == shape and x.is_contiguous():
                steps.append(1)
            else:
                break
        else:
            return _fast(tuple(steps)), n
    numel = 1
    for s in shape:
        numel *= s
    return packed_indexer(shape, [_broadcast_strides(x, shape) for x in operands]), numel


def packed_indexer(shape, strides, output_at_i=True):
    """The packed tl::Indexer of operands with `strides` (per operand, over `shape`), after
    coalescing: the fast path (steps) when at most one dim remains, the strided walk
    otherwise, or None when that walk would pass 2^32 elements.  output_at_i: the kernel puts
    operand 0 at i in the fast path (operand_offsets), so its step must be 1 there.
    Packed once per layout (a training loop repeats its layouts)."""
    return _packed_indexer(tuple(shape), tuple(map(tuple, strides)), output_at_i)


@functools.lru_cache(maxsize=1024)
def _packed_indexer(shape, strides, output_at_i):
    cshape, cstrides = coalesce(list(shape), [list(s) for s in strides])
    if len(cshape) <= 1:
        steps = tuple(st[0] if st else 0 for st in cstrides)
        if not output_at_i or not cshape or steps[0] == 1:
            return _fast(steps)
    numel = 1
    for s in cshape:
        numel *= s
    if numel >= 1 << 32:
        return None                            # too big for 32-bit strided indexing
    return K.pack_indexer(tuple(cshape), tuple(tuple(st) for st in cstrides))


@functools.lru_cache(maxsize=256)
def _fast(steps):
    return K.pack_indexer(steps=steps)


def _grid(n, device):
    return _launch.grid_for(n, device, _THREADS)



# ---- operands ----------------------------------------------------------------------------------
_scalars = _state.driver_cache()


def _scalar_array(value, dtype, device):
    """A 0-dim device array holding a Python number, for kernels that take arrays only.  The
    recent ones are kept (read only, by the stream that filled them), as a loop reuses its
    constants."""
    key = (type(value), value, _zero_signs(value), dtype, device,
           _runtime.current_stream(device))          # -0.0 is not 0.0 here
    a = _scalars.get(key)
    if a is None:
        if len(_scalars) >= 256:
            _scalars.clear()
        a = _scalars[key] = _array.empty((), dtype, device)
        _array.fill_(a, value)
    return a


def _zero_signs(value):
    """The signs of value's zero parts, which == does not tell apart."""
    if isinstance(value, complex):
        return tuple(v == 0 and math.copysign(1.0, v) for v in (value.real, value.imag))
    return value == 0 and math.copysign(1.0, value)


def _operand(x, dtype, device):
    """x as a device array of dtype, or None where no kernel can make it (complex32)."""
    if isinstance(x, CudaArray):
        if x.dtype == dtype:
            return x
        r = cast(x, dtype)
        return None if r is NotImplemented else r
    if isinstance(x, (bool, int, float, complex)):
        return _scalar_array(x, dtype, device)
    if x.ndim == 0:                            # a CPU scalar tensor joining CUDA operands
        return _operand(x.item(), dtype, device)
    return None


def _meta(x):
    return x._meta if isinstance(x, CudaArray) else x


def _new_output(shape, dtype, device, inputs):
    """A new output with the memory order of the first input that is dense at `shape` (as
    the CPU gives), else contiguous."""
    for x in inputs:
        if isinstance(x, CudaArray) and x.shape == tuple(shape) and not x.is_contiguous() \
                and x.is_non_overlapping_and_dense():
            order = sorted(range(len(shape)), key=lambda d: (x.strides[d], shape[d]))
            strides, step = [0] * len(shape), 1
            for d in order:
                strides[d] = step
                step *= max(shape[d], 1)
            return _array.empty(shape, dtype, device).as_strided(tuple(shape), tuple(strides), 0)
    return _array.empty(shape, dtype, device)


def _safe_input(out, x):
    """x, or a copy of it when it shares memory with `out` in a way an elementwise kernel
    cannot read and write at once; RuntimeError for dense partial overlaps (as the CPU)."""
    if not isinstance(x, CudaArray) or out is None or not out.same_storage(x):
        return x
    lo_o, n_o = _array._span(out)
    lo_x, n_x = _array._span(x)
    if lo_o + n_o <= lo_x or lo_x + n_x <= lo_o:
        return x
    if x.offset == out.offset and x.shape == out.shape and x.strides == out.strides:
        return x                                  # in place: each element read, then written
    _cpu_ew.check_no_partial_overlap(out._meta, x._meta)     # raises for dense operands
    return clone(x)


def _finish(result, out):
    """Copy (and cast) into out= when the kernel wrote elsewhere; NotImplemented (the host
    fallback runs the op) where no kernel casts to out's dtype (complex32)."""
    if out is None or result is out:
        return result if out is None else out
    if copy_(out, result) is NotImplemented:
        return NotImplemented
    return out


def _launch_ew(source_name, name, out, operands, scalars=(), err=False):
    device = out.device_index
    ix, n = _indexer(out.shape, [out] + operands)
    if n == 0:
        return out
    if ix is None:
        return None
    k = _launch.kernel(source_name, name, device)
    word = _launch.ErrorWord.of(device) if err else None
    if word is not None:
        word.reset()
    args = [_launch.ptr(out.data_ptr())] + [_launch.ptr(x.data_ptr()) for x in operands]
    args += [_launch.i64(n), _launch.struct(ix),
             _launch.struct(K.pack_params(scalars, word.address if word else 0))]
    _launch.launch(k, _grid(n, device), _THREADS, args)
    if word is not None and word.read() & 1:        # tl::ERR_ZERODIV
        raise ZeroDivisionError("ZeroDivisionError")
    return out


# ---- elementwise ---------------------------------------------------------------------------------
@native("elementwise", "cast", kernel=True)
def cast(a, dtype):
    if a.dtype == dtype:
        return a
    out = _new_output(a.shape, dtype, a.device_index, (a,))
    return copy_(out, a)


def copy_(dst, src):
    """dst[...] = src on one device, broadcasting src and casting to dst's dtype, any strides
    (torchlite/cuda/_copy.py sends the copies that are not plain byte copies here)."""
    if dst.has_internal_overlap() or src.ndim > dst.ndim or tuple(
            _cpu_ew.broadcast_result((dst._meta, src._meta), "copy_")) != dst.shape:
        return NotImplemented                    # the CPU raises its errors
    try:
        name = K.cast_kernel(src.dtype, dst.dtype)
    except KeyError:                             # complex32: no kernels (host copies)
        return NotImplemented
    src = _safe_input(dst, src)
    if _launch_ew("elementwise.cu", name, dst, [src]) is None:
        return NotImplemented
    return dst


def clone(a):
    """A contiguous copy (torchlite/cuda/_copy.py's clone handles the dense cases by a byte copy)."""
    from . import _copy
    return _copy.clone(a, False)


@native("elementwise", "unary", kernel=True)
def unary(op, a, out=None, p0=0.0, p1=0.0, p2=0.0):
    compute, result = _cpu_ew.unary_dtypes(op, a.dtype)
    if out is not None:
        _cpu_ew.check_out(out._meta, a.shape, result, _UNARY_NAME[op].lower())
    if compute is None:                               # rounding an integer: a copy
        return copy_(out, a) if out is not None else clone(a)
    try:
        name = K.unary_kernel(_UNARY_NAME[op], compute)
    except KeyError:
        return NotImplemented
    x = _operand(a, compute, a.device_index)
    dst = out if out is not None and out.dtype == result else \
        _new_output(a.shape, result, a.device_index, (a,))
    x = _safe_input(dst, x)
    if _launch_ew("elementwise.cu", name, dst, [x], (p0, p1, p2)) is None:
        return NotImplemented
    return _finish(dst, out)


@native("elementwise", "binary", kernel=True)
def binary(op, a, b, out=None, alpha=1.0):
    name_op = _BINARY_NAME[op]
    compute, result = _cpu_ew.binary_dtypes(op, _meta(a), _meta(b))
    shape = _cpu_ew.broadcast_result((_meta(a), _meta(b)), name_op.lower())
    device = (a if isinstance(a, CudaArray) else b).device_index
    if out is not None:
        _cpu_ew.check_out(out._meta, shape, result, name_op.lower())
    if isinstance(alpha, complex):                    # s[0] + i s[1], complex kernels only
        if compute not in K.COMPLEX:
            return NotImplemented                     # (the CPU raises its error)
        scalars = (alpha.real, alpha.imag)
    else:
        scalars = (alpha,)
    try:
        name = K.binary_kernel(name_op, compute)
    except KeyError:
        return NotImplemented
    x, y = _operand(a, compute, device), _operand(b, compute, device)
    if x is None or y is None:
        return NotImplemented
    dst = out if out is not None and out.dtype == result else \
        _new_output(shape, result, device, (a, b))
    x, y = _safe_input(dst, x), _safe_input(dst, y)
    int_div = name_op in _INT_DIV and compute in K.INTS
    if _launch_ew("elementwise.cu", name, dst, [x, y], scalars, err=int_div) is None:
        return NotImplemented
    return _finish(dst, out)


@native("elementwise", "ternary", kernel=True)
def ternary(op, a, b, c, out=None, p0=1.0):
    name_op = _TERNARY_NAME[op]
    result = _cpu_ew.ternary_dtype(op, _meta(a), _meta(b), _meta(c))
    shape = _cpu_ew.broadcast_result((_meta(a), _meta(b), _meta(c)), name_op.lower())
    device = next(x for x in (a, b, c) if isinstance(x, CudaArray)).device_index
    if out is not None:
        _cpu_ew.check_out(out._meta, shape, result, name_op.lower())
    if isinstance(p0, complex):
        return NotImplemented                         # the kernels' value is real
    try:
        name = K.ternary_kernel(name_op, result)
    except KeyError:
        return NotImplemented
    if name_op == "WHERE":
        cond = _operand(a, K.BOOL, device)
        x, y = _operand(b, result, device), _operand(c, result, device)
        ops = [cond, x, y]
    else:
        ops = [_operand(v, result, device) for v in (a, b, c)]
    if any(v is None for v in ops):
        return NotImplemented
    dst = out if out is not None and out.dtype == result else \
        _new_output(shape, result, device, (a, b, c))
    ops = [_safe_input(dst, v) for v in ops]
    if _launch_ew("elementwise.cu", name, dst, ops, (p0,)) is None:
        return NotImplemented
    return _finish(dst, out)


def fill_strided(a, value):
    """fill_ of an array that is not dense (the dense case is a memset)."""
    one = _scalar_array(value, a.dtype, a.device_index)
    return copy_(a, one)


# ---- arange / linspace and flip ----------------------------------------------------------------
@native("array", "fill_affine", kernel=True)
def fill_affine(a, start, step, symmetric_end=False, end=None):
    """a[i] = start + i * step (arange; linspace with symmetric_end) by tl_arange /
    tl_arange_int / tl_linspace, which compute as the CPU does (float64 without a fused
    multiply-add, or int64).  Other dtypes go to the host fallback."""
    if not a.is_contiguous() or a.ndim != 1:
        return NotImplemented                         # the CPU's error
    n = a.numel
    exact_int = a.dtype == K.INT64 and type(start) is int and type(step) is int \
        and not symmetric_end
    if not exact_int and a.dtype not in (K.FLOAT32, K.FLOAT64):
        return NotImplemented
    if n == 0:
        return a
    if exact_int:
        name, args = K.arange_kernel(K.INT64), [_launch.i64(start), _launch.i64(step)]
    elif symmetric_end:
        name = K.linspace_kernel(a.dtype)
        args = [_launch.f64(start), _launch.f64(end if end is not None else 0.0), _launch.f64(step)]
    else:
        name, args = K.arange_kernel(a.dtype), [_launch.f64(start), _launch.f64(step)]
    k = _launch.kernel("elementwise.cu", name, a.device_index)
    _launch.launch(k, _grid(n, a.device_index), _THREADS,
                   [_launch.ptr(a.data_ptr()), _launch.i64(n)] + args)
    return a


@native("elementwise", "flip", kernel=True)
def flip(a, dims):
    """A new array with a's elements reversed along dims: a negative-stride view of a, copied."""
    shape, strides, offset = a.shape, list(a.strides), a.offset
    for d in dims:
        if shape[d] > 1:
            offset += (shape[d] - 1) * strides[d]
            strides[d] = -strides[d]
    view = _array.reinterpret(a, a.dtype, shape, tuple(strides), offset)
    return copy_(_array.empty(shape, a.dtype, a.device_index), view)
