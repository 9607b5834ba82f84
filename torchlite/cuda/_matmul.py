"""Matrix products on the GPU: torchlite._core.matmul.bmm (every matmul, mm, bmm, addmm,
linear and einsum contraction reaches it) launched as tl_gemm of cuda_kernels/gemm.cu.

The kernel takes each operand by (batch, row, column) strides, so transposed operands and
broadcast batches need no copies.  Several batch dims are merged when their strides allow
(for all three operands), else the outer ones are looped over here.  The tile is 128 x 128
(128 x 64 for float64) for big products and 64 x 64 for small ones, 256 threads either way.
Integer products go to the host fallback.

float16/bfloat16 products can run on tensor cores instead (tl_gemm_tc: mma.sync, float32
accumulation, devices of compute capability 8.0 and later).  That kernel has not yet run on a
GPU, so it is off unless TORCHLITE_CUDA_TENSOR_CORES=1 (benchmarks/RESULTS-gpu.md will say
when it has been checked there and becomes the default).
"""
import itertools
import os
import struct

from .._core import matmul as _cpu_mm
from . import _array, _kernels as K, _launch
from ._elementwise import coalesce, copy_ as _copy
from ._registry import native

_MAX_GRID_Z = 65535


TENSOR_CORES = os.environ.get("TORCHLITE_CUDA_TENSOR_CORES", "") not in ("", "0")


def _tensor_cores(dtype, device):
    return TENSOR_CORES and dtype in K.TENSOR_CORE_DTYPES and _launch.capability(device) >= (8, 0)


def _config(dtype, m, n):
    large, small = K.GEMM_CONFIGS[dtype]
    bm, bn = large[0], large[1]
    return large if m >= bm and n >= bn and ((m + bm - 1) // bm) * ((n + bn - 1) // bn) >= 64 \
        else small


@native("matmul", "bmm", kernel=True)
def bmm(a, b, out=None, alpha=1, beta=0, op="bmm"):
    _cpu_mm.check_bmm(a._meta, b._meta, None if out is None else out._meta, op)
    if a.dtype not in K.GEMM_CONFIGS:
        return NotImplemented
    nd = a.ndim
    m, k, n = a.shape[nd - 2], a.shape[nd - 1], b.shape[nd - 1]
    if out is None:
        if beta != 0:
            raise ValueError(f"{op}: beta != 0 needs the addend in out")
        out = _array.empty(a.shape[:nd - 1] + (n,), a.dtype, a.device_index)
    target = out
    if out.same_storage(a) or out.same_storage(b):       # out aliases an operand: compute aside
        target = _array.empty(out.shape, out.dtype, out.device_index)
        if beta != 0:
            _copy(target, out)
    batch_shape = a.shape[:nd - 2]
    if 0 in batch_shape or m == 0 or n == 0:
        return out
    if k == 0:
        return NotImplemented            # out = beta * out: the CPU's rule for empty products
    bshape, bstrides = coalesce(list(batch_shape),
                                [list(x.strides[:nd - 2]) for x in (a, b, target)])
    if _tensor_cores(a.dtype, a.device_index):
        cfg, name = (128, 128), K.gemm_tc_kernel(a.dtype)
        threads = 256
    else:
        cfg = _config(a.dtype, m, n)
        name = K.gemm_kernel(a.dtype, cfg)
        threads = (cfg[0] // cfg[3]) * (cfg[1] // cfg[4])
    kern = _launch.kernel("gemm.cu", name, a.device_index)
    inner = bshape[-1] if bshape else 1
    sa = [x.strides[nd - 2:] for x in (a, b, target)]
    outer_dims = bshape[:-1]
    isz = a.itemsize
    for idx in itertools.product(*(range(s) for s in outer_dims)):
        offs = [sum(i * st[d] for d, i in enumerate(idx)) for st in bstrides]
        inner_st = [st[-1] if bshape else 0 for st in bstrides]
        args = struct.pack("<13q2d", m, n, k, inner,
                           inner_st[0], sa[0][0], sa[0][1],
                           inner_st[1], sa[1][0], sa[1][1],
                           inner_st[2], sa[2][0], sa[2][1], float(alpha), float(beta))
        grid = ((n + cfg[1] - 1) // cfg[1], (m + cfg[0] - 1) // cfg[0], min(inner, _MAX_GRID_Z))
        _launch.launch(kern, grid, threads, [
            _launch.ptr(a.data_ptr() + offs[0] * isz), _launch.ptr(b.data_ptr() + offs[1] * isz),
            _launch.ptr(target.data_ptr() + offs[2] * isz), _launch.struct(args)])
    if target is not out:
        _copy(out, target)
    return out
