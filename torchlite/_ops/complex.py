"""Complex tensors: the views between a complex tensor and its parts (view_as_real,
view_as_complex, real, imag), building complex tensors (complex, polar) and isreal.

A complex64/complex128 element is a (real, imag) pair of float32/float64 in memory, so every
view here is a reinterpretation of the same bytes (array.reinterpret), as in PyTorch; writes
through real/imag/view_as_real reach the complex tensor.  The elementwise math (conj, angle,
sgn, abs, exp, ...) is in elementwise.py, on the complex loops of the array layer; backward
formulas of these views are in complex_grad.py."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _dtype as D
from .._dispatch import array as _A
from .._tensor import Tensor, _wrap_view
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import needs_grad
from . import _register
from . import complex_grad as _CG
from ._kit import tensor_arg
from .views import copied_view

if TYPE_CHECKING:
    from typing import Any


def _view(t, arr, record):
    r = _wrap_view(arr, t)
    if t._requires_grad and (_grad_state.enabled or needs_grad(t)):
        record(t, r)
    return r


def parts_array(a: Any) -> Any:
    """The (..., 2) real array over a complex array's memory (view_as_real's array)."""
    part = D.DTYPES[a.dtype].to_real()
    return _A.reinterpret(a, part.code, tuple(a.shape) + (2,),
                          tuple(2 * s for s in a.strides) + (1,), 2 * a.offset)


def complex_array(parts: Any) -> Any:
    """The complex array over a contiguous (..., 2) float16/float32/float64 array (checked by
    the caller: view_as_complex's rules)."""
    return _A.reinterpret(parts, D.DTYPES[parts.dtype].to_complex().code, tuple(parts.shape[:-1]),
                          tuple(s // 2 for s in parts.strides[:-1]), parts.offset // 2)


@_register("view_as_real")
def view_as_real(input: Tensor) -> Tensor:
    """A real view of a complex tensor with a last dim of size 2 holding (real, imag)."""
    tensor_arg(input, "view_as_real")
    if not input.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _view(input, parts_array(input._data), _CG.record_view_as_real)


@_register("view_as_complex")
def view_as_complex(input: Tensor) -> Tensor:
    """A complex view of a float32/float64 (or float16: complex32) tensor whose last dim has
    size 2 and stride 1 (the inverse of view_as_real)."""
    tensor_arg(input, "view_as_complex")
    a = input._data
    if input.dtype not in (D.float32, D.float64, D.float16):
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {input.dtype}")
    if a.ndim == 0 or a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if a.strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in a.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if a.offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return _view(input, complex_array(a), _CG.record_view_as_complex)


def _part(input, index):
    a = parts_array(input._data)
    return _A.reinterpret(a, a.dtype, tuple(a.shape[:-1]), tuple(a.strides[:-1]),
                          a.offset + index)


def real(input: Tensor) -> Tensor:
    """The real parts of a complex tensor as a view (a real tensor is returned as it is)."""
    tensor_arg(input, "real")
    if not input.is_complex():
        return input
    return _view(input, _part(input, 0), _CG.record_real)


def imag(input: Tensor) -> Tensor:
    """The imaginary parts of a complex tensor as a view."""
    tensor_arg(input, "imag")
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _view(input, _part(input, 1), _CG.record_imag)


def _set_part(getter):
    def setter(self, value):
        getter(self).copy_(value)
    return setter


# t.real / t.imag are properties on Tensor (with setters that write into the parts)
Tensor.real = property(real, _set_part(real))
Tensor.imag = property(imag, _set_part(imag))


def complex(real: Tensor, imag: Tensor, *, out: Tensor | None = None) -> Tensor:
    """real + i imag from two float32/float64 (or float16: complex32) tensors of one dtype
    (broadcast together)."""
    from .joining import stack
    from .views import broadcast_tensors
    for x, name in ((real, "real"), (imag, "imag")):
        tensor_arg(x, "complex", name)
    if real.dtype is not imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {real.dtype} but got scalar type "
                           f"{imag.dtype} for second argument")
    if real.dtype not in (D.float32, D.float64, D.float16):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{real.dtype} and {imag.dtype}")
    r = view_as_complex(stack(broadcast_tensors(real, imag), -1))
    if out is None:
        return r
    from ._kit import write_out
    return write_out(r._data, out, "complex")


def polar(abs: Tensor, angle: Tensor, *, out: Tensor | None = None) -> Tensor:
    """abs * (cos(angle) + i sin(angle)) from float32/float64 tensors."""
    for x, name in ((abs, "abs"), (angle, "angle")):
        tensor_arg(x, "polar", name)
    return complex(abs * angle.cos(), abs * angle.sin(), out=out)


@_register("isreal")
def isreal(input: Tensor) -> Tensor:
    """True where the element has no imaginary part (everywhere for a real tensor)."""
    tensor_arg(input, "isreal")
    if not input.is_complex():
        from .creation import ones_like
        return ones_like(input, dtype=D.bool)
    return imag(input) == 0


__all__ = ["view_as_real", "view_as_complex", "real", "imag", "complex", "polar", "isreal"]


# ---- the _copy spellings of the complex views (torch.view_as_real_copy ...) ----------------------
def view_as_real_copy(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """view_as_real(input) as a new tensor (torch.view_as_real_copy)."""
    return copied_view(view_as_real(input), out, "view_as_real_copy", input)


def view_as_complex_copy(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """view_as_complex(input) as a new tensor (torch.view_as_complex_copy)."""
    return copied_view(view_as_complex(input), out, "view_as_complex_copy", input)
