"""Matrix products on the GPU: torchlite._core.matmul.bmm (every matmul, mm, bmm, addmm,
linear and einsum contraction reaches it) launched as a GEMM of cuda_kernels/gemm.cu.

The kernels take each operand by (batch, row, column) strides, so transposed operands and
broadcast batches need no copies.  Several batch dims are merged when their strides allow
(for all three operands), else the outer ones are looped over here.

float16/bfloat16 products whose operands allow 16-byte copies (each operand's contiguous dim
of stride 1 and a multiple of 8 elements long, its other strides multiples of 8, its address
16-byte aligned) run on tensor cores (tl_gemm_tc: mma.sync, cp.async, float32 accumulation;
compute capability 8.0 and later), in a large tile when the product has a wave of them for
the device's multiprocessors, else a small one.  Other products, and every float32/float64
one, run tl_gemm (SIMT, register-blocked; 128 x 128 tiles, 128 x 64 for float64, or 64 x 64
for small products).  TORCHLITE_CUDA_TENSOR_CORES=0 keeps float16/bfloat16 off tensor cores.
Integer products go to the host fallback.

A float32/float64 product of few output tiles over a long K (a convolution's weight gradient)
is split along K into pieces multiplied in parallel into a workspace, then summed in order
(tl_gemm_splitk_sum: deterministic).

What the launches need besides the operands' addresses (kernels, grids, packed arguments)
depends only on shapes, strides, dtype and scalars, so it is planned once per such key
(_plan, cached): a training loop repeats its products, and the host time per product is then
a dict lookup and the launches.
"""
import functools
import itertools
import os
import struct

from .._core import matmul as _cpu_mm
from . import _array, _kernels as K, _launch
from ._elementwise import clone as _clone, coalesce, copy_ as _copy
from ._registry import native

_MAX_GRID_Z = 65535


TENSOR_CORES = os.environ.get("TORCHLITE_CUDA_TENSOR_CORES", "1") not in ("", "0")


def _config(dtype, m, n):
    large, small = K.GEMM_CONFIGS[dtype]
    bm, bn = large[0], large[1]
    return large if m >= bm and n >= bn and ((m + bm - 1) // bm) * ((n + bn - 1) // bn) >= 64 \
        else small


def _tc_config(m, n, batch, sms, shared_limit, layout):
    """tl_gemm_tc's tile for an m x n product over `batch` matrices: the first large tile whose
    shared memory fits `shared_limit` when it gives at least a wave of blocks (`sms`), else the
    small one."""
    for cfg in K.TC_LARGE:
        if K.gemm_tc_shared_bytes(cfg, *layout) <= shared_limit:
            tiles = ((m + cfg[0] - 1) // cfg[0]) * ((n + cfg[1] - 1) // cfg[1]) * batch
            if tiles >= sms:
                return cfg
            break
    return K.TC_SMALL


def _tc_layout(rows, cols, s_rows, s_cols, s_batch):
    """For a rows x cols operand with these strides (size-1 dims' strides already zeroed):
    True when its cols are contiguous, False when its rows are, None when tl_gemm_tc's 16-byte
    copies cannot read it."""
    if any(s % 8 for s in s_batch):
        return None
    if s_cols == 1 and cols % 8 == 0 and s_rows % 8 == 0:
        return True
    if s_rows == 1 and rows % 8 == 0 and s_cols % 8 == 0:
        return False
    return None


def _split_k(dtype, m, n, k, batch, tiles, sms):
    """Pieces of K to run a product as (1: none): for float32/float64 products (whose partial
    products are exact in their own type) of few output tiles over a long K, enough pieces of
    at least 256 for about a wave of blocks."""
    if dtype not in K.SPLIT_K_DTYPES or batch != 1 or tiles * 4 > sms or k < 2048:
        return 1
    pieces = max(1, min(sms // tiles, k // 256))
    chunk = (k + pieces - 1) // pieces
    return (k + chunk - 1) // chunk           # every piece non-empty


def _gemm_args(m, n, k, batch, sa, sb, sc, sd, alpha, beta):
    """tl::GemmArgs, packed: sizes, then (batch, row, column) strides of A, B, C and the
    addend D, then the scalars."""
    return _launch.struct(struct.pack("<16q2d", m, n, k, batch, *sa, *sb, *sc, *sd, alpha, beta))


def _sum_args(m, n, sc, sd, alpha, beta):
    """tl_gemm_splitk_sum's GemmArgs: the m x n output's and addend's strides, the scalars."""
    return _gemm_args(m, n, 0, 1, (0, 0, 0), (0, 0, 0), (0,) + tuple(sc), (0,) + tuple(sd), alpha, beta)


def sum_pieces(work, pieces, out, alpha=1.0, beta=0.0):
    """out (m x n, float32/float64, any strides) = alpha * the sum of the contiguous
    [pieces, m, n] partial products in `work`, in order, + beta * out (tl_gemm_splitk_sum)."""
    m, n = out.shape
    device = out.device_index
    k = _launch.kernel("gemm.cu", K.gemm_splitk_sum_kernel(out.dtype), device)
    _launch.launch(k, _launch.grid_for(m * n, device, 256), 256, [
        _launch.ptr(work.data_ptr()), _launch.ptr(out.data_ptr()), _launch.ptr(out.data_ptr()),
        _sum_args(m, n, out.strides, out.strides, float(alpha), float(beta)), _launch.i64(pieces)])


@functools.lru_cache(maxsize=512)
def _plan(dtype, gpu, m, k, n, bshape, bstrides, sa, sb, sc, sd, alpha, beta, aligned):
    """(workspace elements, launches) of the product: each launch is (kernel name, threads,
    dynamic shared bytes, grid, element offsets of A, B, C and D, whether C is the workspace,
    packed GemmArgs); a launch whose offsets are None sums the workspace into C
    (tl_gemm_splitk_sum, its piece count last).  bshape, bstrides: the batch dims and the
    batch strides of A, B, C, D (coalesced here, so the cache holds that work too);
    gpu: (compute capability, multiprocessors, shared memory a block may have, device), what
    the choices depend on, so a cached plan never outlives the device it was made for."""
    capability, sms, shared_limit, device = gpu
    if bshape:              # the batch dims coalesced (adjacent dims merged where all allow)
        bshape, bstrides = coalesce(list(bshape), [list(st) for st in bstrides])
        bshape, bstrides = tuple(bshape), tuple(tuple(st) for st in bstrides)
    else:
        bstrides = ((), (), (), ())
    sa, sb = tuple(0 if d == 1 else s for d, s in zip((m, k), sa)), \
        tuple(0 if d == 1 else s for d, s in zip((k, n), sb))
    inner = bshape[-1] if bshape else 1
    inner_st = [st[-1] if bshape else 0 for st in bstrides]
    outer_dims = bshape[:-1]
    shared, layout = 0, None
    if TENSOR_CORES and aligned and dtype in K.TENSOR_CORE_DTYPES and capability >= (8, 0):
        outer_st = [tuple(st[:-1]) for st in bstrides]
        a_k = _tc_layout(m, k, sa[0], sa[1], (inner_st[0],) + outer_st[0])
        b_k = _tc_layout(n, k, sb[1], sb[0], (inner_st[1],) + outer_st[1])
        if a_k is not None and b_k is not None:
            layout = (a_k, b_k)
    if layout is not None:
        cfg = _tc_config(m, n, inner, sms, shared_limit, layout)
        name = K.gemm_tc_kernel(dtype, cfg, *layout)
        threads = cfg[3] * cfg[4] * 32
        shared = K.gemm_tc_shared_bytes(cfg, *layout)
    else:
        cfg = _config(dtype, m, n)
        name = K.gemm_kernel(dtype, cfg)
        threads = (cfg[0] // cfg[3]) * (cfg[1] // cfg[4])
    tiles_n, tiles_m = (n + cfg[1] - 1) // cfg[1], (m + cfg[0] - 1) // cfg[0]
    pieces = 1 if layout is not None or outer_dims else \
        _split_k(dtype, m, n, k, inner, tiles_m * tiles_n, sms)
    if pieces > 1:
        # pieces of `chunk` (the last one shorter) into W[s][m][n], then their sum into C
        chunk = (k + pieces - 1) // pieces
        last = k - (pieces - 1) * chunk
        whole = pieces if last == chunk else pieces - 1
        work_st = (m * n, n, 1)
        launches = [(name, threads, 0, (tiles_n, tiles_m, min(whole, _MAX_GRID_Z)), (0, 0, 0, 0), True,
                     _gemm_args(m, n, chunk, whole, (chunk * sa[1],) + sa, (chunk * sb[0],) + sb,
                                work_st, work_st, 1.0, 0.0))]
        if whole < pieces:
            at = whole * m * n
            launches.append((name, threads, 0, (tiles_n, tiles_m, 1),
                             (whole * chunk * sa[1], whole * chunk * sb[0], at, at), True,
                             _gemm_args(m, n, last, 1, (0,) + sa, (0,) + sb, work_st, work_st, 1.0, 0.0)))
        launches.append((K.gemm_splitk_sum_kernel(dtype), 256, 0, _launch.grid_for(m * n, device, 256),
                         None, False, _sum_args(m, n, sc, sd, alpha, beta), pieces))
        return pieces * m * n, tuple(launches)
    args = _gemm_args(m, n, k, inner, (inner_st[0],) + sa, (inner_st[1],) + sb,
                      (inner_st[2],) + tuple(sc), (inner_st[3],) + tuple(sd), alpha, beta)
    grid = (tiles_n, tiles_m, min(inner, _MAX_GRID_Z))
    launches = tuple((name, threads, shared, grid,
                      tuple(sum(i * st[d] for d, i in enumerate(idx)) for st in bstrides), False, args)
                     for idx in itertools.product(*(range(s) for s in outer_dims)))
    return 0, launches


@native("matmul", "bmm", kernel=True)
def bmm(a, b, out=None, alpha=1, beta=0, op="bmm", addend=None):
    _cpu_mm.check_bmm(a._meta, b._meta, None if out is None else out._meta, op)
    if a.dtype not in K.GEMM_CONFIGS:
        return NotImplemented
    nd = a.ndim
    m, k, n = a.shape[nd - 2], a.shape[nd - 1], b.shape[nd - 1]
    if out is None:
        if beta != 0:
            raise ValueError(f"{op}: beta != 0 needs the addend in out")
        out = _array.empty(a.shape[:nd - 1] + (n,), a.dtype, a.device_index)
    if addend is not None:
        _cpu_mm.check_addend(out._meta, addend._meta, op)
    # the addend: out itself (beta * out), unless given; read by the kernel where it lies
    d = out if addend is None or beta == 0 else addend
    target = out
    if out.same_storage(a) or out.same_storage(b):       # out aliases an operand: compute aside
        target = _array.empty(out.shape, out.dtype, out.device_index)
    if d is not out and d.same_storage(target) and not _same_view(d, target):
        d = _clone(d)                    # the addend overlaps C in another layout: read a copy
    batch_shape = a.shape[:nd - 2]
    if 0 in batch_shape or m == 0 or n == 0:
        return out
    if k == 0:
        return NotImplemented            # out = beta * out: the CPU's rule for empty products
    pa, pb, pc, pd = a.data_ptr(), b.data_ptr(), target.data_ptr(), d.data_ptr()
    sa, sb, sc, sd = a.strides, b.strides, target.strides, d.strides
    dev = a.device_index
    work_size, launches = _plan(
        a.dtype, _launch.gemm_facts(dev), m, k, n, batch_shape,
        (sa[:nd - 2], sb[:nd - 2], sc[:nd - 2], sd[:nd - 2]), sa[nd - 2:], sb[nd - 2:],
        sc[nd - 2:], sd[nd - 2:], float(alpha), float(beta), (pa | pb) % 16 == 0)
    work = _array.empty((work_size,), a.dtype, dev) if work_size else None
    isz = a.itemsize
    ptr = _launch.ptr
    for name, threads, shared, grid, offs, into_work, args, *pieces in launches:
        kern = _launch.kernel("gemm.cu", name, dev)
        if shared:
            _launch.allow_shared(kern, shared)
        if offs is None:                     # the split-K sum: workspace into C
            _launch.launch(kern, grid, threads, [ptr(work.data_ptr()), ptr(pc), ptr(pd), args,
                                                 _launch.i64(pieces[0])])
            continue
        if into_work:
            c = dd = work.data_ptr()
        else:
            c, dd = pc, pd
        _launch.launch(kern, grid, threads, [ptr(pa + offs[0] * isz), ptr(pb + offs[1] * isz),
                                             ptr(c + offs[2] * isz), ptr(dd + offs[3] * isz), args], shared)
    if target is not out:
        _copy(out, target)
    return out


def _same_view(x, y):
    return x.offset == y.offset and x.shape == y.shape and x.strides == y.strides
