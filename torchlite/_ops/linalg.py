"""Matrix products: matmul and its special forms (mm, bmm, mv, dot), the fused add forms
(addmm, addmv, addbmm, baddbmm), outer, inner, tensordot and einsum; and the matrix norms
(matrix_norm, linalg.norm, torch.norm) and linalg.cond, composed of the reductions and the
SVD.

Every product runs on one kernel, the batched GEMM of torchlite/_core/matmul.pyx, over views
of the operands: a vector becomes a one-row or one-column matrix, batch dims broadcast with
stride 0, and a transpose is only strides (the kernel packs any layout).  Each op first
checks its arguments and raises PyTorch's exception with PyTorch's message."""
from __future__ import annotations

import builtins
import functools
import math
import warnings
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._dispatch import array as _A
from .._dispatch import check_same_device as _check_same_device
from .._dispatch import elementwise as _ew
from .._dispatch import matmul as _mm
from .._tensor import Tensor, _wrap, _wrap_dim
from . import _register
from . import linalg_grad as _G
from . import linalg_decomp as _LD
from . import reduction as _RD
from .reduction import vector_norm
from .._dispatch import reduction as _R
from ._kit import needs_grad, no_out_with_grad as _no_out_with_grad, out_array, result, with_out
from ._kit import tensor_arg, tensor_args
from ..autograd.grad_mode import _state as _grad_state
from .._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .._dtype import dtype

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "addmm", "addmv", "addmv_", "addbmm",
           "baddbmm", "outer", "ger", "inner", "tensordot", "einsum", "chain_matmul", "trace"]

_UPPER = _mm.TORCH_NAMES       # "Float", "Double", ... (ScalarType names)
_CNAME = _mm.C_NAMES           # "float", "double", ... (C++ type names)
_MUL = _ew.BINARY["mul"]
_INT64 = 5
_FLOAT_CODES = (6, 7, 8, 9)


# ---- argument helpers -------------------------------------------------------------------
def _arr(x, op, name, pos):
    tensor_arg(x, op, name, pos=pos)
    return x._data


def _mshape(a):
    return "x".join(str(s) for s in a.shape)


def _reshape(a, shape):
    """a viewed as `shape`, or a contiguous copy when the strides do not allow a view."""
    v = a.view(shape)
    return v if v is not None else _ew.contiguous(a).view(shape)


from ..autograd.graph import inplace_records  # noqa: E402


def _gemm(a, b, dst=None, alpha=1, beta=0, op="bmm", addend=None):
    """dst = alpha * a @ b + beta * dst over (*B, m, k) x (*B, k, n) arrays; with `addend`
    (dst's shape: a broadcast view is fine), + beta * addend instead of beta * dst, read
    where it lies (the CUDA kernels take it with no copy into dst)."""
    if a.dtype >= 10:
        if addend is not None and beta != 0 and not _same_view(dst, addend):
            _ew.copy_(dst, addend)
        return _complex_gemm(a, b, dst, alpha, beta, op)
    if addend is None or beta == 0:
        return _mm.bmm(a, b, dst, alpha, beta, op)
    return _mm.bmm(a, b, dst, alpha, beta, op, addend=addend)


def _complex_gemm(a, b, dst, alpha, beta, op):
    """The complex product as four real ones over the operands' parts (strided views, no
    copies): re = ar br - ai bi, im = ar bi + ai br.  The real GEMM is the fast one; a
    complex micro-kernel would save the fourth pass over the data, not the arithmetic."""
    from .complex import parts_array, complex_array
    if b.dtype != a.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_CNAME[a.dtype]} != {_CNAME[b.dtype]}")
    pa, pb = parts_array(a), parts_array(b)
    ar, ai, br, bi = pa.select(-1, 0), pa.select(-1, 1), pb.select(-1, 0), pb.select(-1, 1)
    re = _mm.bmm(ar, br, None, 1, 0, op)
    re = _mm.bmm(ai, bi, re, -1, 1, op)
    im = _mm.bmm(ar, bi, None, 1, 0, op)
    im = _mm.bmm(ai, br, im, 1, 1, op)
    parts = _A.empty(tuple(re.shape) + (2,), re.dtype, device=re)
    _ew.copy_(parts.select(-1, 0), re)
    _ew.copy_(parts.select(-1, 1), im)
    prod = complex_array(parts)
    if alpha != 1:
        prod = _ew.binary(_ew.BINARY["mul"], prod, alpha)
    if dst is None:
        return prod
    if beta == 0:
        _ew.copy_(dst, prod)
    else:
        _ew.binary(_ew.BINARY["add"], _ew.binary(_ew.BINARY["mul"], dst, beta), prod, dst)
    return dst


def _scalars(alpha, beta, op, code):
    """alpha and beta as Python numbers (the kernel truncates them for integer dtypes, as
    PyTorch does); complex ones only for complex operands (dtype code `code`)."""
    vals = []
    for name, v in (("alpha", alpha), ("beta", beta)):
        if isinstance(v, Tensor):
            v = v.item()
        if isinstance(v, builtins.complex):
            if not D.DTYPES[code].is_complex:
                raise RuntimeError(f"{op}(): {name}={v} is complex but the operands are "
                                   f"{D.DTYPES[code]}: a complex scalar needs complex operands")
        elif not isinstance(v, (builtins.bool, builtins.int, builtins.float)):
            raise TypeError(f"{op}(): argument '{name}' must be Number, not {type(v).__name__}")
        vals.append(v)
    return vals


def _expand(a, shape):
    """a broadcast to `shape`, with PyTorch's message (it names the last mismatching dim)."""
    lead = len(shape) - a.ndim
    for i in range(a.ndim - 1, -1, -1):
        if a.shape[i] != 1 and a.shape[i] != shape[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({shape[lead + i]}) must match the "
                               f"existing size ({a.shape[i]}) at non-singleton dimension {lead + i}.  "
                               f"Target sizes: {list(shape)}.  Tensor sizes: {list(a.shape)}")
    return a.expand(shape)


def _broadcast_batch(sa, sb):
    """The broadcast of two batch shapes, with the message PyTorch's matmul gives."""
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    for i in range(n - 1, -1, -1):
        if sa[i] != sb[i] and sa[i] != 1 and sb[i] != 1:
            raise RuntimeError(f"The size of tensor a ({sa[i]}) must match the size of tensor b "
                               f"({sb[i]}) at non-singleton dimension {i}")
    return tuple(max(x, y) if x and y else 0 for x, y in zip(sa, sb))


def _same_view(x, y):
    return (x.same_storage(y) and x.offset == y.offset and tuple(x.shape) == tuple(y.shape)
            and tuple(x.strides) == tuple(y.strides))


def _addmm_into(input_arr, a, b, alpha, beta, dst):
    """beta * input + alpha * a @ b for 2-D or batched a, b, with input broadcast to the result
    shape, written into dst (an array, may alias any operand) or a new array; returns it.
    A zero beta ignores input (NaN included), as PyTorch does."""
    shape = tuple(a.shape[:-1]) + (b.shape[-1],)
    if input_arr.device != a.device or (dst is not None and dst.device != a.device):
        _check_same_device(_OPNAME.get(a.ndim, "addmm"), input_arr, a, b,
                           *(() if dst is None else (dst,)))
    addend = _expand(input_arr, shape)        # PyTorch checks the shape even when beta == 0
    direct = dst is not None and not (dst.same_storage(a) or dst.same_storage(b))
    res = dst if direct else _A.empty(shape, a.dtype, device=a)
    _gemm(a, b, res, alpha, beta, _OPNAME[a.ndim], addend=addend)
    if dst is not None and not direct:
        _ew.copy_(dst, res)
        return dst
    return res


_OPNAME = {2: "addmm_impl_cpu_", 3: "baddbmm"}     # as PyTorch names them for bool


def _rebase(self, out_of_place):
    """An in-place product on a tensor in a graph (see elementwise_grad.rebase_inplace)."""
    from .elementwise_grad import check_inplace, rebase_inplace
    check_inplace(self, "")
    return rebase_inplace(self, out_of_place)


def _inplace_shape(self, shape):
    if tuple(self.shape) != tuple(shape):
        raise RuntimeError(f"Bad in-place call: input tensor size {list(self.shape)} and output "
                           f"tensor size {list(shape)} should match")


# ---- matrix checks with PyTorch's messages ------------------------------------------------
def _check_multipliable(a, b):
    """The matrices a and b can be multiplied: a's columns match b's rows."""
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_mshape(a)} and "
                           f"{_mshape(b)})")


def _check_mm(a, b):
    _check_multipliable(a, b)
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_CNAME[a.dtype]} != {_CNAME[b.dtype]}")


def _check_bmm(a, b):
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_UPPER[a.dtype]} but found {_UPPER[b.dtype]}")
    nb = math.prod(a.shape[:-2])
    if math.prod(b.shape[:-2]) != nb or b.shape[-2] != a.shape[-1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {a.shape[-1]}] but got: [{math.prod(b.shape[:-2])}, "
                           f"{b.shape[-2]}].")


def _check_mv(input_nd, m, v, input_shape=None):
    if m.ndim != 2 or v.ndim != 1 or input_nd > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input_nd}, {m.ndim}, {v.ndim}")
    n = m.shape[0] if input_shape is None else (input_shape[0] if input_shape else 1)
    if m.shape[1] != v.shape[0] or (n != m.shape[0] and n != 1):
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({_mshape(m)}), vec "
                           f"({v.shape[0]})")


def _check_mv_dtypes(input_dtype, m, v):
    if not input_dtype == m.dtype == v.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_UPPER[input_dtype]}, {_UPPER[m.dtype]}, and {_UPPER[v.dtype]}")


def _check_3d(a, b):
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")


# ---- the products -------------------------------------------------------------------------
@_register("mm")
def mm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix product of two 2-D tensors."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(mm, locals())
    a = _arr(input, "mm", "input", 1)
    b = _arr(mat2, "mm", "mat2", 2)
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_mm(a, b)
    if out is None:
        r = _wrap(_gemm(a, b, op="addmm_impl_cpu_"))
        if (input._requires_grad or mat2._requires_grad) and (_grad_state.enabled or needs_grad(input, mat2)):
            _G.record_product("mm", input, mat2, r)
        return r
    _no_out_with_grad("mm", input, mat2)
    _gemm(a, b, out_array(out, (a.shape[0], b.shape[1]), "mm", dtype=a.dtype), op="addmm_impl_cpu_")
    return out


@_register("bmm")
def bmm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Batched matrix product: (b, n, m) @ (b, m, p) -> (b, n, p)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(bmm, locals())
    a = _arr(input, "bmm", "input", 1)
    b = _arr(mat2, "bmm", "mat2", 2)
    _check_3d(a, b)
    _check_bmm(a, b)
    if out is None:
        r = _wrap(_gemm(a, b, op="bmm"))
        if needs_grad(input, mat2):
            _G.record_product("bmm", input, mat2, r)
        return r
    _no_out_with_grad("bmm", input, mat2)
    _gemm(a, b, out_array(out, (a.shape[0], a.shape[1], b.shape[2]), "bmm", dtype=a.dtype), op="bmm")
    return out


@_register("mv")
def mv(input: Tensor, vec: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix-vector product: (n, m) @ (m,) -> (n,)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(mv, locals())
    m = _arr(input, "mv", "input", 1)
    v = _arr(vec, "mv", "vec", 2)
    _check_mv(1, m, v)
    _check_mv_dtypes(v.dtype, m, v)
    if out is not None:
        _no_out_with_grad("mv", input, vec)
    dst = None if out is None else out_array(out, (m.shape[0],), "mv", dtype=m.dtype).unsqueeze(1)
    res = _gemm(m, v.unsqueeze(1), dst, op="addmv_impl_cpu")
    if out is not None:
        return out
    r = _wrap(res.view((m.shape[0],)))
    return _G.record_product("mv", input, vec, r) if needs_grad(input, vec) else r


def _check_dot(a, b, op):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op} : expected both vectors to have same dtype, but found "
                           f"{_UPPER[a.dtype]} and {_UPPER[b.dtype]}")


def _dot(input, other, out, op, argname):
    a = _arr(input, op, "input", 1)
    b = _arr(other, op, argname, 2)
    _check_dot(a, b, "dot")
    if out is not None:
        _no_out_with_grad(op, input, other)
    dst = None if out is None else out_array(out, (), op, dtype=a.dtype).unsqueeze(0).unsqueeze(0)
    res = _gemm(a.unsqueeze(0), b.unsqueeze(1), dst, op="dot")
    if out is not None:
        return out
    r = _wrap(res.view(()))
    return _G.record_product(op, input, other, r) if needs_grad(input, other) else r


@_register("dot")
def dot(input: Tensor, tensor: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Inner product of two 1-D tensors of the same dtype."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(dot, locals())
    return _dot(input, tensor, out, "dot", "tensor")


@_register("vdot")
def vdot(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Inner product of two 1-D tensors, conjugating the first (a no-op for real dtypes)."""
    if isinstance(input, Tensor) and input.is_complex():
        input = input.conj()
    return _dot(input, other, out, "vdot", "other")


@_register("trace")
def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a 2-D tensor (integers sum to int64, as torch)."""
    tensor_arg(input, "trace", "input")
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return input.diagonal().sum()


@_register("matmul")
def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix product with NumPy's rules: 1-D operands are vectors, dims beyond the last two
    are batch dims and broadcast."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(matmul, locals())
    a = _arr(input, "matmul", "input", 1)
    b = _arr(other, "matmul", "other", 2)
    da, db = a.ndim, b.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if out is not None:
        _no_out_with_grad("matmul", input, other)
    if da == 1 and db == 1:
        return dot(input, other, out=out)
    if da == 2 and db == 1:
        return mv(input, other, out=out)
    if da == 2 and db == 2:
        return mm(input, other, out=out)
    if da == 1 and db == 2:
        a2 = a.unsqueeze(0)
        _check_mm(a2, b)
        res = _gemm(a2, b, op="addmm_impl_cpu_").view((b.shape[1],))
    elif db <= 2:
        res = _matmul_folded(a, b)
    else:
        res = _matmul_batched(a, b)
    if out is None and needs_grad(input, other):
        return _G.record_matmul(input, other, _wrap(res))
    return result(res, out, "matmul")


def _matmul_folded(a, b):
    """(*B, n, m) @ (m, p) or (m,) as one (B*n, m) matrix product: a single big GEMM."""
    lead = tuple(a.shape[:-1])
    a2 = _reshape(a, (math.prod(lead), a.shape[-1]))
    if b.ndim == 1:
        _check_mv(1, a2, b)
        _check_mv_dtypes(b.dtype, a2, b)
        return _gemm(a2, b.unsqueeze(1), op="addmv_impl_cpu").view(lead)
    _check_mm(a2, b)
    return _gemm(a2, b, op="addmm_impl_cpu_").view(lead + (b.shape[1],))


def _matmul_batched(a, b):
    """Batched product with broadcast batch dims (stride 0, no copies)."""
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(1) if b.ndim == 1 else b
    batch = _broadcast_batch(a2.shape[:-2], b2.shape[:-2])
    m, k, n = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    a3 = a2.expand(batch + (m, k))
    b3 = b2.expand(batch + (b2.shape[-2], n))
    _check_bmm(a3, b3)
    res = _gemm(a3, b3, op="bmm")
    shape = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    return res.view(shape)


def _addmm_result(c, a, b, shape, beta, alpha, out, op, tensors):
    """beta * c + alpha * (a @ b) of `shape` (the product's), into out when given: the tail of
    addmm, addbmm and baddbmm once their operands are checked.  tensors: the op's (input,
    first, second) Tensors, for autograd."""
    alpha, beta = _scalars(alpha, beta, op, a.dtype)
    if out is not None:
        _no_out_with_grad(op, *tensors)
    dst = None if out is None else out_array(out, shape, op, dtype=a.dtype)
    res = _addmm_into(c, a, b, alpha, beta, dst)
    if out is not None:
        return out
    if needs_grad(*tensors):
        return _G.record_add_product(op, *tensors, alpha, beta, _wrap(res))
    return _wrap(res)


def _addmm_inplace(self, a, b, shape, beta, alpha, op, tensors, out_of_place):
    """self = beta * self + alpha * (a @ b): the tail of addmm_, addbmm_ and baddbmm_ once
    their operands are checked (self must already have the product's shape).  tensors: the
    two operand Tensors; with autograd, out_of_place (addmm, ...) runs on them and self takes
    its history."""
    _inplace_shape(self, shape)
    if inplace_records(self, *tensors):
        return _rebase(self, lambda old: out_of_place(old, *tensors, beta=beta, alpha=alpha))
    alpha, beta = _scalars(alpha, beta, op, a.dtype)
    _addmm_into(self._data, a, b, alpha, beta, self._data)
    self._bump_version()
    return self


@_register("addmm")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float | Tensor = 1,
          alpha: float | Tensor = 1, out: Tensor | None = None) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2), input broadcast to the product's shape."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(addmm, locals())
    c = _arr(input, "addmm", "input", 1)
    a = _arr(mat1, "addmm", "mat1", 2)
    b = _arr(mat2, "addmm", "mat2", 3)
    _check_addmm(c, a, b)
    return _addmm_result(c, a, b, (a.shape[0], b.shape[1]), beta, alpha, out, "addmm",
                         (input, mat1, mat2))


def mm_computed_by(input: Tensor | None, mat1: Tensor, mat2: Tensor, compute) -> Tensor:
    """mat1 @ mat2 (+ input, broadcast to the product's shape; None: no addend) for 2-D
    operands, with the product's array made by compute(a, b, addend) (the operands' arrays and
    the addend broadcast to the product's shape, or None) and recorded for autograd as addmm
    (or mm) records it.  For a kernel that does more work in the same pass (torchlite.compile
    runs the elementwise ops after a product on each of its tiles: _core.matmul.mm_epilogue);
    compute must return exactly addmm's (mm's) values."""
    a = _arr(mat1, "addmm", "mat1", 2)
    b = _arr(mat2, "addmm", "mat2", 3)
    shape = (a.shape[0], b.shape[1]) if a.ndim == 2 and b.ndim == 2 else None
    if input is None:
        if a.ndim != 2 or b.ndim != 2:
            raise RuntimeError("self must be a matrix" if a.ndim != 2 else "mat2 must be a matrix")
        _check_mm(a, b)
        r = _wrap(compute(a, b, None))
        return _G.record_product("mm", mat1, mat2, r) if needs_grad(mat1, mat2) else r
    c = _arr(input, "addmm", "input", 1)
    _check_addmm(c, a, b)
    r = _wrap(compute(a, b, _expand(c, shape)))
    if needs_grad(input, mat1, mat2):
        alpha, beta = _scalars(1, 1, "addmm", a.dtype)
        return _G.record_add_product("addmm", input, mat1, mat2, alpha, beta, r)
    return r


def _check_addmm(c, a, b):
    if a.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {a.ndim}-D tensor")
    if b.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {b.ndim}-D tensor")
    _check_multipliable(a, b)
    if c.dtype != b.dtype:          # PyTorch checks self against mat2 first
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_UPPER[c.dtype]} "
                           f"and {_UPPER[b.dtype]}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_UPPER[a.dtype]} "
                           f"and {_UPPER[b.dtype]}")


@_register("addmm_")
def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
    """In-place addmm: self = beta * self + alpha * (mat1 @ mat2)."""
    a = _arr(mat1, "addmm_", "mat1", 1)
    b = _arr(mat2, "addmm_", "mat2", 2)
    _check_addmm(self._data, a, b)
    return _addmm_inplace(self, a, b, (a.shape[0], b.shape[1]), beta, alpha, "addmm_",
                          (mat1, mat2), addmm)


@_register("addmv")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float | Tensor = 1,
          alpha: float | Tensor = 1, out: Tensor | None = None) -> Tensor:
    """beta * input + alpha * (mat @ vec)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(addmv, locals())
    c = _arr(input, "addmv", "input", 1)
    m = _arr(mat, "addmv", "mat", 2)
    v = _arr(vec, "addmv", "vec", 3)
    _check_mv(c.ndim, m, v, tuple(c.shape))
    _check_mv_dtypes(c.dtype, m, v)
    alpha, beta = _scalars(alpha, beta, "addmv", m.dtype)
    if m.dtype == 0:
        raise NotImplementedError("\"addmv_impl_cpu\" not implemented for 'Bool'")
    if out is not None:
        _no_out_with_grad("addmv", input, mat, vec)
    dst = None if out is None else out_array(out, (m.shape[0],), "addmv", dtype=m.dtype).unsqueeze(1)
    res = _addmm_into(c.unsqueeze(-1) if c.ndim else c, m, v.unsqueeze(1), alpha, beta, dst)
    if out is not None:
        return out
    r = _wrap(res.view((m.shape[0],)))
    if needs_grad(input, mat, vec):
        return _G.record_add_product("addmv", input, mat, vec, alpha, beta, r)
    return r


@_register("addmv_")
def addmv_(self: Tensor, mat: Tensor, vec: Tensor, *, beta: float | Tensor = 1,
           alpha: float | Tensor = 1) -> Tensor:
    """In-place addmv."""
    m = _arr(mat, "addmv_", "mat", 1)
    v = _arr(vec, "addmv_", "vec", 2)
    _check_mv(self.ndim, m, v, tuple(self.shape))
    _check_mv_dtypes(self._data.dtype, m, v)
    _inplace_shape(self, (m.shape[0],))
    if inplace_records(self, mat, vec):
        return _rebase(self, lambda old: addmv(old, mat, vec, beta=beta, alpha=alpha))
    return addmv(self, mat, vec, beta=beta, alpha=alpha, out=self)


@_register("baddbmm")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float | Tensor = 1,
            alpha: float | Tensor = 1, out: Tensor | None = None) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2) for 3-D batches."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(baddbmm, locals())
    c = _arr(input, "baddbmm", "input", 1)
    a = _arr(batch1, "baddbmm", "batch1", 2)
    b = _arr(batch2, "baddbmm", "batch2", 3)
    _check_baddbmm(c, a, b)
    return _addmm_result(c, a, b, (a.shape[0], a.shape[1], b.shape[2]), beta, alpha, out,
                         "baddbmm", (input, batch1, batch2))


def _check_baddbmm(c, a, b):
    _check_3d(a, b)
    if c.dtype != a.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_CNAME[c.dtype]}, batch1: "
                           f"{_CNAME[a.dtype]}, batch2: {_CNAME[b.dtype]}")
    _check_bmm(a, b)


@_register("baddbmm_")
def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    """In-place baddbmm."""
    a = _arr(batch1, "baddbmm_", "batch1", 1)
    b = _arr(batch2, "baddbmm_", "batch2", 2)
    _check_baddbmm(self._data, a, b)
    return _addmm_inplace(self, a, b, (a.shape[0], a.shape[1], b.shape[2]), beta, alpha,
                          "baddbmm_", (batch1, batch2), baddbmm)


def _addbmm_operands(a, b):
    """sum_i a[i] @ b[i] as one product: (n, B*m) @ (B*m, p)."""
    _check_3d(a, b)
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{a.shape[0]} and {b.shape[0]}")
    if a.shape[2] != b.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({a.shape[1]}x{a.shape[2]} and "
                           f"{b.shape[1]}x{b.shape[2]})")
    nb, n, m = a.shape
    return (_reshape(a.permute((1, 0, 2)), (n, nb * m)), _reshape(b, (nb * m, b.shape[2])))


@_register("addbmm")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float | Tensor = 1,
           alpha: float | Tensor = 1, out: Tensor | None = None) -> Tensor:
    """beta * input + alpha * sum_i batch1[i] @ batch2[i]."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(addbmm, locals())
    c = _arr(input, "addbmm", "input", 1)
    a, b = _addbmm_operands(_arr(batch1, "addbmm", "batch1", 2), _arr(batch2, "addbmm", "batch2", 3))
    _check_addmm(c, a, b)
    return _addmm_result(c, a, b, (a.shape[0], b.shape[1]), beta, alpha, out, "addbmm",
                         (input, batch1, batch2))


@_register("addbmm_")
def addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    """In-place addbmm."""
    a, b = _addbmm_operands(_arr(batch1, "addbmm_", "batch1", 1), _arr(batch2, "addbmm_", "batch2", 2))
    _check_addmm(self._data, a, b)
    return _addmm_inplace(self, a, b, (a.shape[0], b.shape[1]), beta, alpha, "addbmm_",
                          (batch1, batch2), addbmm)


@_register("outer", "ger")
def outer(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Outer product of two 1-D tensors (an elementwise product, so dtypes promote)."""
    a = _arr(input, "outer", "input", 1)
    b = _arr(vec2, "outer", "vec2", 2)
    for name, x in (("self", a), ("vec2", b)):
        if x.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {x.ndim}-D")
    a2, b2 = a.unsqueeze(1), b.unsqueeze(0)
    if out is None:
        r = _wrap(_ew.binary(_MUL, a2, b2))
        return _G.record_product("outer", input, vec2, r) if needs_grad(input, vec2) else r
    _no_out_with_grad("outer", input, vec2)
    dst = out_array(out, (a.shape[0], b.shape[0]), "outer", cast_from=_ew.promote(a.dtype, b.dtype))
    _ew.binary(_MUL, a2, b2, dst)
    return out


ger = outer


@_register("inner")
def inner(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Sum of products over the last dims: shape input.shape[:-1] + other.shape[:-1]; a 0-d
    operand multiplies instead."""
    a = _arr(input, "inner", "input", 1)
    b = _arr(other, "inner", "other", 2)
    if out is not None:
        _no_out_with_grad("inner", input, other)
    if a.ndim == 0 or b.ndim == 0:
        if needs_grad(input, other):
            return input * other                 # recorded as the product it is
        return result(_ew.binary(_MUL, a, b), out, "inner")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(a.shape)} and {list(b.shape)}")
    res = _contract(a, b, [a.ndim - 1], [b.ndim - 1])
    if needs_grad(input, other):
        return _G.record_tensordot(input, other, [a.ndim - 1], [b.ndim - 1], _wrap(res),
                                   _G.InnerBackward0)
    return result(res, out, "inner")


def _contract(a, b, da, db):
    """Contract dims da of a with dims db of b (same sizes): free dims of a, then of b."""
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    sa = tuple(a.shape[d] for d in fa)
    sb = tuple(b.shape[d] for d in fb)
    kk = math.prod(a.shape[d] for d in da)
    a2 = _reshape(a.permute(tuple(fa + list(da))), (math.prod(sa), kk))
    b2 = _reshape(b.permute(tuple(list(db) + fb)), (kk, math.prod(sb)))
    return _gemm(a2, b2, op="addmm_impl_cpu_").view(sa + sb)


def _dims_list(dims):
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, builtins.int):
        return dims
    if len(dims) != 2:
        raise RuntimeError("tensordot expects dims to be an int or a pair of dim lists")
    da, db = ([d] if isinstance(d, builtins.int) else list(d) for d in dims)
    return da, db


@_register("tensordot")
def tensordot(a: Tensor, b: Tensor, dims: int | Sequence[int | Sequence[int]] | Tensor = 2,
              out: Tensor | None = None) -> Tensor:
    """Contract the last `dims` dims of a with the first `dims` of b, or the dims listed in
    dims = (dims_a, dims_b)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(tensordot, locals())
    x = _arr(a, "tensordot", "a", 1)
    y = _arr(b, "tensordot", "b", 2)
    dims = _dims_list(dims)
    if isinstance(dims, builtins.int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > x.ndim or dims > y.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(-dims, 0)), list(range(dims))
    else:
        da, db = dims
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    na = [_wrap_dim(d, x.ndim) for d in da]
    nb = [_wrap_dim(d, y.ndim) for d in db]
    # a contracted dim of size 1 broadcasts against the other side's (PyTorch's rule)
    sa, sb = list(x.shape), list(y.shape)
    for i in range(len(na)):
        if sa[na[i]] == 1 and sb[nb[i]] != 1:
            sa[na[i]] = sb[nb[i]]
        elif sb[nb[i]] == 1 and sa[na[i]] != 1:
            sb[nb[i]] = sa[na[i]]
    if sa != list(x.shape):
        a = a.expand(tuple(sa))
        x = a._data
    if sb != list(y.shape):
        b = b.expand(tuple(sb))
        y = b._data
    for i in range(len(na)):
        if x.shape[na[i]] != y.shape[nb[i]]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{x.shape[na[i]]} in dim {da[i]} and second has size "
                               f"{y.shape[nb[i]]} in dim {db[i]}")
    if x.dtype != y.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if out is not None:
        _no_out_with_grad("tensordot", a, b)
    res = _contract(x, y, na, nb)
    if needs_grad(a, b):
        return _G.record_tensordot(a, b, na, nb, _wrap(res))
    return result(res, out, "tensordot")


def chain_matmul(*matrices: Tensor | Sequence[Tensor], out: Tensor | None = None) -> Tensor:
    """Product of 2-D tensors, in the cheapest order (deprecated in PyTorch for
    torch.linalg.multi_dot)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(chain_matmul, locals())
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, t in enumerate(matrices):
        if _arr(t, "chain_matmul", "matrices", 1).ndim != 2:
            raise RuntimeError(f"chain_matmul(): Expected 2D tensors, but got {t.ndim}-D tensor "
                               f"for argument {i}")
    if needs_grad(*matrices):         # the chain of recorded mm's
        if out is not None:
            _no_out_with_grad("chain_matmul", *matrices)
        return _chain(list(matrices), mm)
    return result(_chain([t._data for t in matrices]), out, "chain_matmul")


def multi_dot(tensors, *, out=None):
    """torch.linalg.multi_dot: product of matrices in the cheapest order; the first and last
    may be 1-D (a row and a column vector)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(multi_dot, locals())
    ts = list(tensors)
    if not ts:
        raise RuntimeError("multi_dot(): expected at least 2 tensors but got 0")
    if len(ts) == 1:
        raise RuntimeError("multi_dot(): expected at least 2 tensors but got 1")
    arrs = [_arr(t, "multi_dot", "tensors", 1) for t in ts]
    first_1d, last_1d = arrs[0].ndim == 1, arrs[-1].ndim == 1
    for i, x in enumerate(arrs):
        if i in (0, len(arrs) - 1):
            if x.ndim not in (1, 2):
                raise RuntimeError(f"multi_dot(): the {'first' if i == 0 else 'last'} tensor must "
                                   f"be 1D or 2D but got {x.ndim}D")
        elif x.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {x.ndim}D")
    if first_1d:
        arrs[0] = arrs[0].unsqueeze(0)
    if last_1d:
        arrs[-1] = arrs[-1].unsqueeze(1)
    for i in range(1, len(arrs)):
        if arrs[i].dtype != arrs[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 "
                               f"is {_UPPER[arrs[0].dtype]} and tensor {i} is {_UPPER[arrs[i].dtype]}")
        if arrs[i - 1].shape[1] != arrs[i].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes "
                               f"{list(arrs[i - 1].shape)} and {list(arrs[i].shape)} cannot be "
                               f"multiplied")
    if needs_grad(*ts):               # the chain of recorded mm's
        if out is not None:
            _no_out_with_grad("multi_dot", *ts)
        ts[0] = ts[0].unsqueeze(0) if first_1d else ts[0]
        ts[-1] = ts[-1].unsqueeze(1) if last_1d else ts[-1]
        res = _chain(ts, mm)
    else:
        res = _chain(arrs)
    shape = tuple(res.shape)
    if first_1d:
        shape = shape[1:]
    if last_1d:
        shape = shape[:-1]
    if isinstance(res, Tensor):
        return res.reshape(shape)
    return result(res.view(shape), out, "multi_dot")


def _chain(arrs, mul=None):
    """The product of a chain of matrices (arrays, or Tensors with mul=mm), multiplied in
    the order with the fewest flops (the classic dynamic programme over split points)."""
    if mul is None:
        def mul(x, y):
            return _gemm(x, y, op="addmm_impl_cpu_")
    n = len(arrs)
    if n == 1:
        return arrs[0]
    dims = [arrs[0].shape[0]] + [x.shape[1] for x in arrs]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            cost[i][j] = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def product(i, j):
        if i == j:
            return arrs[i]
        s = split[i][j]
        return mul(product(i, s), product(s + 1, j))
    return product(0, n - 1)


def vecdot(x, y, *, dim=-1, out=None):
    """torch.linalg.vecdot: sum of conj(x) * y over `dim`, with broadcasting (floating and
    complex dtypes)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(vecdot, locals())
    if isinstance(x, Tensor) and x.is_complex():
        x = x.conj()
    a = _arr(x, "linalg.vecdot", "x", 1)
    b = _arr(y, "linalg.vecdot", "y", 2)
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {_UPPER[a.dtype]} and y of type {_UPPER[b.dtype]} instead")
    if a.dtype not in _FLOAT_CODES and a.dtype < 10:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. "
                           f"Got {_UPPER[a.dtype]}")
    shape = tuple(_A.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    if not shape:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    d = _wrap_dim(dim, len(shape))
    order = tuple(i for i in range(len(shape)) if i != d) + (d,)
    a2 = a.expand(shape).permute(order).unsqueeze(-2)     # (..., 1, n)
    b2 = b.expand(shape).permute(order).unsqueeze(-1)     # (..., n, 1)
    if out is not None:
        _no_out_with_grad("linalg.vecdot", x, y)
    res = _gemm(a2, b2, op="vecdot").view(tuple(shape[i] for i in order[:-1]))
    if needs_grad(x, y):
        return _G.record_vecdot(x, y, d, _wrap(res))
    return result(res, out, "linalg.vecdot")


# ---- einsum --------------------------------------------------------------------------------
def einsum(*args: Any) -> Tensor:
    """Einstein summation: einsum('ij,jk->ik', a, b), einsum('ij,jk', [a, b]), or the sublist
    form einsum(a, [0, 1], b, [1, 2], [0, 2]).  Supports '...', implicit output, repeated
    subscripts (diagonals), size-1 broadcasting and any number of operands, contracted
    pairwise from left to right, each pair as one batched matrix product."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(einsum, locals())
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, "
                        "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{type(t).__name__}")
    terms, output = _einsum_parse(equation, tuple(t.ndim for t in operands))
    arrs = [t._data for t in operands]
    sizes = _einsum_sizes(terms, arrs)
    ops = [_einsum_prepare(a, labels, sizes, i) for i, (a, labels) in enumerate(zip(arrs, terms))]
    res = _wrap(_einsum_contract(ops, output))
    if needs_grad(*operands):
        return _G.record_einsum(operands, terms, output, sizes, res)
    return res


def _sublist_equation(args):
    def letters(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, builtins.int) and 0 <= s < 52:
                out.append(chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26))
            else:
                raise ValueError(f"einsum(): subscript in subscript list is not within the valid "
                                 f"range [0, 52), got {s}")
        return "".join(out)
    operands = args[0::2]
    subs = list(args[1::2])
    out = None
    if len(args) % 2 == 1:
        operands, out = operands[:-1], args[-1]
    eq = ",".join(letters(s) for s in subs)
    if out is not None:
        eq += "->" + letters(out)
    return eq, tuple(operands)


@functools.lru_cache(maxsize=256)
def _einsum_parse(eq, ndims):
    """Label tuples per operand and for the output.  Letters stay letters; the dims an
    ellipsis covers get integer labels, numbered so that they line up from the right.
    Cached: a training loop parses the same few equations over and over."""
    raw, cur, out, k, i = [], [], None, 0, 0
    seen_ell = False
    while i < len(eq):
        ch = eq[i]
        if ch == " ":
            pass
        elif ch.isascii() and ch.isalpha():
            cur.append(ch)
        elif ch == ".":
            where = "output" if out is not None else f"operand {k}"
            if eq[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for {where} that is not part of any "
                                   f"ellipsis")
            if seen_ell:
                raise RuntimeError(f"einsum(): found '.' for {where} for which an ellipsis was "
                                   f"already found")
            seen_ell = True
            cur.append(...)
            i += 2
        elif ch == "," and out is None:
            raw.append(cur)
            cur, seen_ell, k = [], False, k + 1
        elif ch == "-" and out is None and eq[i + 1:i + 2] == ">":
            raw.append(cur)
            cur, seen_ell, out = [], False, []
            i += 1
        else:
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               f"string, subscripts must be in [a-zA-Z]")
        i += 1
    if out is None:
        raw.append(cur)
    else:
        out = cur
    if len(raw) > len(ndims):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(raw) < len(ndims):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    n_ell = 0
    for k, (term, nd) in enumerate(zip(raw, ndims)):
        nlet = len(term) - (1 if ... in term else 0)
        if ... not in term and nlet != nd:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nlet}) does "
                               f"not match the number of dimensions ({nd}) for operand {k} and no "
                               f"ellipsis was given")
        if nlet > nd:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nlet}) is "
                               f"more than the number of dimensions ({nd}) for operand {k}")
        n_ell = max(n_ell, nd - nlet if ... in term else 0)
    terms = [_expand_ellipsis(term, nd - (len(term) - 1), n_ell) if ... in term else term
             for term, nd in zip(raw, ndims)]
    counts = {}
    for term in terms:
        for lab in term:
            counts[lab] = counts.get(lab, 0) + 1
    if out is None:   # implicit: broadcast dims, then letters used once, A-Z before a-z
        letters = sorted(l for l, c in counts.items() if isinstance(l, str) and c == 1)
        output = list(range(n_ell)) + letters
    else:
        output = _expand_ellipsis(out, n_ell, n_ell) if ... in out else list(out)
        for lab in out:
            if lab is not ... and out.count(lab) > 1:
                raise RuntimeError(f"einsum(): output subscript {lab} appears more than once in "
                                   f"the output")
            if lab is not ... and lab not in counts:
                raise RuntimeError(f"einsum(): output subscript {lab} does not appear in the "
                                   f"equation for any input operand")
    return tuple(tuple(t) for t in terms), tuple(output)


def _expand_ellipsis(term, n_here, n_ell):
    """Replace '...' (covering n_here dims) by the labels of the last n_here broadcast dims."""
    j = term.index(...)
    return term[:j] + list(range(n_ell - n_here, n_ell)) + term[j + 1:]


def _einsum_sizes(terms, arrs):
    """The size of each label; a size-1 dim broadcasts against a larger one."""
    sizes = {}
    for k, (term, a) in enumerate(zip(terms, arrs)):
        mine = {}
        for lab, s in zip(term, a.shape):
            if lab in mine and mine[lab] != s:
                raise RuntimeError(f"einsum(): subscript {lab} is repeated for operand {k} but the "
                                   f"sizes don't match, {s} != {mine[lab]}")
            mine[lab] = s
        for lab, s in mine.items():
            prev = sizes.get(lab)
            if prev is None or prev == 1:
                sizes[lab] = s
            elif s != 1 and s != prev:
                if isinstance(lab, str):
                    raise RuntimeError(f"einsum(): subscript {lab} has size {s} for operand {k} "
                                       f"which does not broadcast with previously seen size {prev}")
                raise RuntimeError(f"einsum(): dimension {lab} covered by ellipsis in operand {k}"
                                   f"has size {s} which does not broadcast with previously seen "
                                   f"ellipsis with size {prev} for the respective dimension")
    return sizes


class _Operand:
    """An einsum operand during contraction: an array, one label per dim, and whether its
    dtype was promoted to int64 by a sum (as torch.sum promotes integers)."""
    __slots__ = ("arr", "labels", "promoted")

    def __init__(self, arr, labels, promoted=False):
        self.arr, self.labels, self.promoted = arr, labels, promoted


def _einsum_prepare(a, term, sizes, k):
    """Take the diagonal of repeated labels (a strided view) and broadcast size-1 dims."""
    labels, shape, strides = [], [], []
    for lab, s, st in zip(term, a.shape, a.strides):
        if lab in labels:
            strides[labels.index(lab)] += st
        else:
            labels.append(lab)
            shape.append(s)
            strides.append(st)
    if len(labels) != len(term):
        a = a.as_strided(tuple(shape), tuple(strides), a.offset)
    target = tuple(sizes[lab] for lab in labels)
    if target != tuple(a.shape):
        a = a.expand(target)
    return _Operand(a, labels)


def _einsum_sum(op, drop):
    """Sum op over the labels in `drop` as a product with a vector of ones."""
    keep = [l for l in op.labels if l not in drop]
    if not drop:
        return op
    a = op.arr
    if a.dtype not in _FLOAT_CODES:
        a = _ew.cast(a, _INT64)
    perm = tuple(op.labels.index(l) for l in keep + [l for l in op.labels if l in drop])
    kshape = tuple(a.shape[op.labels.index(l)] for l in keep)
    nsum = math.prod(a.shape[op.labels.index(l)] for l in drop)
    a2 = _reshape(a.permute(perm), (math.prod(kshape), nsum))
    ones = _A.full((nsum, 1), 1, a.dtype, device=a)
    res = _gemm(a2, ones, op="sum").view(kshape)
    return _Operand(res, keep, op.promoted or a.dtype != op.arr.dtype)


def _einsum_contract(ops, output):
    n = len(ops)
    # labels still needed after operand i: the output's and those of operands i+1 ..
    later = [set(output) for _ in range(n)]
    for i in range(n - 2, -1, -1):
        later[i] = later[i + 1] | set(ops[i + 1].labels)
    for i, op in enumerate(ops):   # sum out each operand's private labels first
        others = set().union(*(set(o.labels) for j, o in enumerate(ops) if j != i))
        ops[i] = _einsum_sum(op, [l for l in op.labels if l not in others and l not in output])
    acc = ops[0]
    for i in range(1, n):
        acc = _einsum_pair(acc, ops[i], later[i])
    acc = _einsum_sum(acc, [l for l in acc.labels if l not in output])
    return acc.arr.permute(tuple(acc.labels.index(l) for l in output))


def _einsum_pair(x, y, needed):
    """Contract two operands: labels in both and needed later are batch dims, labels in both
    and not needed are summed (the k of a matrix product), the rest are rows / columns."""
    batch = [l for l in x.labels if l in y.labels and l in needed]
    summed = [l for l in x.labels if l in y.labels and l not in needed]
    rows = [l for l in x.labels if l not in y.labels]
    cols = [l for l in y.labels if l not in x.labels]
    a, b = x.arr, y.arr
    if a.dtype != b.dtype and (x.promoted or y.promoted) and \
            a.dtype not in _FLOAT_CODES and b.dtype not in _FLOAT_CODES:
        a, b = _ew.cast(a, _INT64), _ew.cast(b, _INT64)
    promoted = x.promoted or y.promoted
    size = {l: s for l, s in zip(x.labels + y.labels, tuple(a.shape) + tuple(b.shape))}
    bshape = tuple(size[l] for l in batch)
    rshape = tuple(size[l] for l in rows)
    cshape = tuple(size[l] for l in cols)
    if not summed:   # no contraction: an elementwise product, broadcasting rows against cols
        a2 = _unsqueeze_tail(a.permute(tuple(x.labels.index(l) for l in batch + rows)), len(cols))
        b2 = b.permute(tuple(y.labels.index(l) for l in batch + cols))
        b2 = _unsqueeze_at(b2, len(batch), len(rows))
        return _Operand(_ew.binary(_MUL, a2, b2), batch + rows + cols, promoted)
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_UPPER[a.dtype]} but found {_UPPER[b.dtype]}")
    kk = math.prod(size[l] for l in summed)
    a2 = _reshape(a.permute(tuple(x.labels.index(l) for l in batch + rows + summed)),
                  bshape + (math.prod(rshape), kk))
    b2 = _reshape(b.permute(tuple(y.labels.index(l) for l in batch + summed + cols)),
                  bshape + (kk, math.prod(cshape)))
    res = _gemm(a2, b2, op="bmm")
    return _Operand(res.view(bshape + rshape + cshape), batch + rows + cols, promoted)


def _unsqueeze_tail(a, n):
    for _ in range(n):
        a = a.unsqueeze(a.ndim)
    return a


def _unsqueeze_at(a, pos, n):
    for _ in range(n):
        a = a.unsqueeze(pos)
    return a


# ---- operators ------------------------------------------------------------------------------
def _matmul_op(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(self, other)


def _rmatmul_op(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


Tensor.__matmul__ = _matmul_op
Tensor.__rmatmul__ = _rmatmul_op


# ---- kron, cross, cdist, dist, vander (composed of products and elementwise ops, whose
# gradients they inherit) --------------------------------------------------------------------
@_register("kron")
@with_out("kron", casting="unsafe")
def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: block (i, j, ...) of the result is input[i, j, ...] * other (the
    operands are padded with leading size-1 dims to the same number of dims)."""
    tensor_args("kron", input=input, other=other)
    nd = builtins.max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    # interleave: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...); the product's pairs of
    # dims merge into the result's dims
    a = input.reshape([v for s in sa for v in (s, 1)])
    b = other.reshape([v for s in sb for v in (1, s)])
    return (a * b).reshape([x * y for x, y in zip(sa, sb)])


@with_out("linalg.cross", casting="unsafe")
def linalg_cross(input, other, *, dim=-1):
    """torch.linalg.cross: the cross product of 3-vectors along dim (the other dims
    broadcast)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(linalg_cross, locals())
    tensor_args("linalg.cross", input=input, other=other)
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {_UPPER[input._data.dtype]} but found "
                           f"{_UPPER[other._data.dtype]}")
    d = _wrap_dim(dim, input.ndim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    a = [input.narrow(d, i, 1) for i in range(3)]
    b = [other.narrow(d, i, 1) for i in range(3)]
    from .joining import cat
    return cat([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], d)


@_register("cross")
def cross(input: Tensor, other: Tensor, dim: int | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """The cross product of 3-vectors along dim; without dim, along the first dim of size 3
    (deprecated in PyTorch, which warns)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(cross, locals())
    tensor_args("cross", input=input, other=other)
    if dim is None:
        import warnings
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
                      "The default value of dim will change to agree with that of "
                      "linalg.cross in a future release.", UserWarning)
        sizes = list(input.shape)
        if 3 not in sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes.index(3)
    return linalg_cross(input, other, dim=dim, out=out)


_CDIST_MODES = {None: 0, "use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str | None = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M):
    (..., P, R), batch dims broadcast.  p=2 goes through a matrix product when P or R
    exceeds 25 (or always / never, by compute_mode), as PyTorch does; other p are computed
    exactly from the differences (memory P * R * M per batch)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(cdist, locals())
    tensor_args("cdist", x1=x1, x2=x2)
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.ndim < 2 or x2.ndim < 2:
        bad, name = (x1, "X1") if x1.ndim < 2 else (x2, "X2")
        raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {bad.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if t._data.dtype not in _FLOAT_CODES:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_UPPER[t._data.dtype]}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {_UPPER[x1._data.dtype]} but found "
                           f"{_UPPER[x2._data.dtype]}")
    p = float(p)
    if p < 0 or math.isnan(p):
        raise RuntimeError("cdist only supports non-negative p values")
    _A.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))     # raises on a mismatch
    P, R, M = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    mode = _CDIST_MODES[compute_mode]
    if p == 2.0 and M > 0 and (mode == 1 or (mode == 0 and (P > 25 or R > 25))):
        return _euclidean_dist(x1, x2)
    from .reduction import vector_norm
    return vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


def _euclidean_dist(x1, x2):
    """sqrt(|a|^2 - 2 a.b + |b|^2) through one matrix product, clamped at 1e-30 against
    rounding below zero (PyTorch's formula)."""
    n1 = (x1 * x1).sum(-1, keepdim=True)
    n2 = (x2 * x2).sum(-1, keepdim=True)
    d2 = matmul(x1, x2.mT) * -2 + n1 + n2.mT
    return d2.clamp_min(1e-30).sqrt()


@_register("dist")
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of input - other (broadcast), as a 0-d tensor."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(dist, locals())
    tensor_args("dist", input=input, other=other)
    diff = input - other
    if not diff.is_floating_point():
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_UPPER[diff._data.dtype]} instead.")
    from .reduction import vector_norm
    return vector_norm(diff, p)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-D tensor: column j is x ** (N - 1 - j) (x ** j when
    increasing); N defaults to len(x).  Integers and bool give int64 (a cumulative product)."""
    tensor_args("vander", x=x)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0]
    N = n if N is None else N
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    from .creation import ones, empty
    from .joining import cat
    if N == 0:
        return empty((n, 0), dtype=x.dtype if x.is_floating_point() else D.int64, device=x.device)
    powers = x.unsqueeze(1).expand(n, N - 1).cumprod(1)
    r = cat([ones(n, 1, dtype=powers.dtype, device=powers.device), powers], 1)
    return r if increasing else r.flip(1)


__all__ += ["kron", "cross", "cdist", "dist", "vander"]


def _zeros_like(t):
    from .creation import zeros_like
    return zeros_like(t)


@with_out("addr")
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float | complex = 1,
         alpha: float | complex = 1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2) (torch.addr)."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if not isinstance(v, Tensor) or v.ndim != 1:
            raise RuntimeError(f"{name} must be a 1-dimensional vector, but got "
                               f"{v.ndim if isinstance(v, Tensor) else type(v).__name__}D")
    prod = outer(vec1, vec2)
    r = prod * alpha if alpha != 1 else prod
    # beta == 0: input is ignored (a NaN in it does not propagate), only its shape counts
    return r + (input * beta if beta != 1 else input) if beta != 0 else r + _zeros_like(input)


_register("addr")(addr)


@_register("addr_")
def addr_(self, vec1, vec2, *, beta=1, alpha=1):
    """In-place addr: self = beta * self + alpha * outer(vec1, vec2)."""
    return self.copy_(addr(self, vec1, vec2, beta=beta, alpha=alpha))


__all__ += ["addr"]


# ---- matrix norms and the condition number ---------------------------------------------------
# torch.linalg's norms live here, above both of their kernels: the p-norm reduction
# (reduction.p_norm: 'fro', and the column/row sums of ord 1/inf) and the SVD (linalg_decomp:
# ord 2/-2 and 'nuc'), so neither of those families imports the other.
_SVD_ORDS = ("nuc", 2, -2)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """torch.linalg.matrix_norm over the two dims: 'fro', 1/-1 (max/min column sum of |A|) and
    inf/-inf (max/min row sum), 2/-2 (largest/smallest singular value) and 'nuc' (their sum)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(matrix_norm, locals())
    name = "linalg.matrix_norm"
    a = tensor_arg(A, name, "A")._data
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    a = _RD._norm_input(name, A, dtype)
    if isinstance(dim, builtins.int) or len(dim) != 2:
        got = dim if isinstance(dim, builtins.int) else " ".join(str(d) for d in dim)
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {got}")
    d0, d1 = _wrap_dim(dim[0], a.ndim), _wrap_dim(dim[1], a.ndim)
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({d0}, {d1})")
    complex_input = A.is_complex()
    if isinstance(ord, str):
        if ord == "fro":
            if complex_input:                   # sqrt of the sum of |a|^2: the vector 2-norm
                return vector_norm(A, 2.0, (d0, d1), keepdim, dtype=dtype, out=out)
            return _RD.p_norm(A, a, 2.0, (d0, d1), keepdim, out, name)
        if ord != "nuc":
            raise RuntimeError(f"{name}: Order {ord} not supported.")
    if ord in _SVD_ORDS:
        r = _svd_matrix_norm(A, ord, d0, d1, keepdim, dtype)
        return r if out is None else result(r._data, out, name, casting="unsafe")
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"{name}: Order {ord} not supported.")
    # 1/-1: sum |A| down the columns (over d0), then max/min over d1; inf/-inf: the rows
    first, second = (d0, d1) if abs(ord) == 1 else (d1, d0)
    if ord > 0 and a.shape[second] == 0:
        # the max over no sums: PyTorch gives 0 (a norm's least value), which is the sum of
        # |A| over both dims of this empty A (in the graph, in A's reduced shape)
        return vector_norm(A, 1.0, (d0, d1), keepdim, dtype=dtype, out=out)
    if not keepdim and second > first:
        second -= 1
    if complex_input or (A._requires_grad and _RD._tracked(A, out, name)):
        # composed of recorded ops (the array layer's 1-norm takes real arrays only)
        sums = vector_norm(A, 1.0, first, keepdim, dtype=dtype)
        r = sums.amax(second, keepdim) if ord > 0 else sums.amin(second, keepdim)
        return r if out is None else result(r._data, out, name, casting="unsafe")
    s = _R.vector_norm(a, 1.0, first, keepdim, name)
    r = _R.reduce("amax" if ord > 0 else "amin", s, second, keepdim, "amax" if ord > 0 else "amin")
    return result(r, out, name, casting="unsafe")


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """torch.linalg.norm: a vector norm over one dim (or every element when ord and dim are
    None), a matrix norm over two dims (or a 2-D input when only ord is given)."""
    a = tensor_arg(A, "linalg.norm", "A")._data
    if dim is not None:
        dims = (dim,) if isinstance(dim, builtins.int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {list(dims)}")
    elif ord is not None and a.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {a.ndim}D")
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype, out=out)
    if (dim is not None and len(dims) == 2) or (dim is None and a.ndim == 2):
        return matrix_norm(A, ord, dims if dim is not None else (-2, -1), keepdim, dtype=dtype,
                           out=out)
    if isinstance(ord, str):
        return matrix_norm(A, ord, dims if dim is not None else (-2, -1), keepdim, dtype=dtype,
                           out=out)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype, out=out)


@_register("norm")
def norm(input: Tensor, p: float | str | None = "fro", dim: int | Sequence[int] | None = None,
         keepdim: bool = False, out: Tensor | None = None, dtype: dtype | None = None) -> Tensor:
    """torch.norm: p='fro' (the 2-norm of the elements over dim), 'nuc', or a number p for
    the vector p-norm (inf, -inf, 0 included)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(norm, locals())
    if p is None:
        p = 2
    if isinstance(p, str):
        if p == "fro":
            if dim is not None and not isinstance(dim, builtins.int) and len(dim) > 2:
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                                   f"{' '.join(str(d) for d in dim)}")
            return vector_norm(input, 2, dim, keepdim, dtype=dtype, out=out)
        if p == "nuc":
            return matrix_norm(input, p, (-2, -1) if dim is None else dim, keepdim, dtype=dtype,
                               out=out)
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return vector_norm(input, p, dim, keepdim, dtype=dtype, out=out)


def nuclear_norm(input: Tensor, dim: Sequence[int] | bool | None = None, keepdim: bool = False, *,
                 out: Tensor | None = None) -> Tensor:
    """torch.nuclear_norm (deprecated in PyTorch, which warns): matrix_norm(input, 'nuc',
    dim) over dim, or the last two dims; nuclear_norm(input, keepdim) is also accepted."""
    warnings.warn("torch.nuclear_norm is deprecated and it is just left for JIT compatibility. "
                  "Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead", UserWarning,
                  stacklevel=2)
    if isinstance(dim, bool):                  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, out=out)


@with_out("linalg_cond")
def cond(A, p=None):
    """torch.linalg.cond: s_max / s_min for p None or 2 (-2: the reverse), else
    norm(A, p) * norm(inv(A), p)."""
    _LD._matrix(A, "linalg.cond")
    if p is None or p == 2 or p == -2:
        S = _LD.svdvals(A)
        return S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
    _LD._matrix(A, "linalg.cond", square=True)
    return matrix_norm(A, p) * matrix_norm(_LD.inv(A), p)


def _svd_matrix_norm(A, ord, d0, d1, keepdim, dtype):
    """matrix_norm for ord 2 / -2 (largest / smallest singular value) and 'nuc' (their sum)
    over dims (d0, d1), written with recorded ops (the SVD's gradient flows)."""
    t = A if dtype is None else A.to(dtype)
    t = t.movedim((d0, d1), (-2, -1))
    S = _LD.svdvals(t)
    if ord == 2 and S.shape[-1] == 0:       # the largest of no singular values: 0 (PyTorch)
        r = S.sum(-1)
    else:
        r = S.amax(-1) if ord == 2 else S.amin(-1) if ord == -2 else S.sum(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            r = r.unsqueeze(d)
    return r


__all__ += ["norm", "nuclear_norm"]     # the rest are torch.linalg names (torchlite/linalg.py)
