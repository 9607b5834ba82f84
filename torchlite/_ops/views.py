"""Shape and view ops: each returns a tensor sharing storage with its input (metadata only,
computed in torchlite/_core/array.pyx), except where PyTorch copies (reshape of an
incompatible layout, flip, contiguous of a non-contiguous tensor)."""
from __future__ import annotations

import builtins
import numbers
from typing import TYPE_CHECKING

from .. import _dtype as D
from .. import _memory_format as MF
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .._size import MAX_NUMEL, check_numel, ints_from_args
from .._tensor import Tensor, _wrap, _wrap_dim, _wrap_view
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import needs_grad
from . import _register
from . import views_grad as _VG
from ._kit import no_out_with_grad, write_out

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .._dtype import dtype
    from .._memory_format import memory_format
    from .._size import Size


def _shape_arg(shape, op):
    """view(2, 3), view((2, 3)) and view([2, 3]) all mean (2, 3); -1 entries are kept."""
    return check_numel(ints_from_args(shape, op), op)


_MAX_DIMS = 16     # MAX_DIMS of torchlite/_core/array.pxd


def _result_of(t, arr, record, *args):
    """The copy (flip, clone, contiguous) made by an op on t, as a tensor; when t requires
    grad (grad mode on), record(t, result, *args) adds its backward node (views_grad.py)."""
    r = _wrap(arr)
    if t._requires_grad and (_grad_state.enabled or needs_grad(t)):
        record(t, r, *args)
    return r


def _view_of(t, arr, record, *args):
    """_result_of for a view: the result remembers t's base (recorded or not, as in PyTorch),
    so an in-place write through it reaches the base's history.  The most used views inline
    these lines: a call costs as much as the view itself."""
    r = _wrap_view(arr, t)
    if t._requires_grad and (_grad_state.enabled or needs_grad(t)):
        record(t, r, *args)
    return r


@_register("view")
def view(input: Tensor, *shape: int | Sequence[int] | dtype) -> Tensor:
    """The same data with a new shape (one dim may be -1).  Raises if the strides do not allow
    it without a copy; reshape() copies instead.  view(dtype) reinterprets the bytes."""
    if len(shape) == 1 and isinstance(shape[0], D.dtype):
        return _view_dtype(input, shape[0])
    shp = _shape_arg(shape, "view")
    arr = input._data.view(shp)
    if arr is None:
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride (at least "
                           f"one dimension spans across two contiguous subspaces); input shape "
                           f"{tuple(input.shape)}, strides {input.stride()}, requested shape {shp}. "
                           f"Use .reshape(...) instead.")
    r = _wrap_view(arr, input)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _VG.record_reshape(input, r, _VG.ViewBackward0)
    return r


def _view_dtype(input, dt):
    a = input._data
    if dt.itemsize != a.itemsize:
        if a.ndim == 0 or a.strides[-1] != 1 or a.shape[-1] * a.itemsize % dt.itemsize:
            raise RuntimeError(f"view(dtype): the last dimension must be contiguous and its size in "
                               f"bytes divisible by {dt.itemsize}, got shape {tuple(a.shape)}")
    ratio_num, ratio_den = a.itemsize, dt.itemsize
    shape = list(a.shape)
    strides = [s * ratio_num // ratio_den for s in a.strides]
    if shape and ratio_num != ratio_den:      # the contiguous last dim is split or merged
        shape[-1] = shape[-1] * ratio_num // ratio_den
        strides[-1] = 1
    off = a.offset * ratio_num
    if off % ratio_den:
        raise RuntimeError("view(dtype): storage offset is not aligned to the new element size")
    if any(s * ratio_num % ratio_den for s in a.strides[:-1]):
        raise RuntimeError("view(dtype): strides are not divisible by the new element size")
    arr = _A.reinterpret(a, dt.code, tuple(shape), tuple(strides), off // ratio_den)
    if dt.code == a.dtype:      # the same dtype is an alias; other dtypes are not differentiable
        return _result_of(input, arr, _VG.record_reshape, _VG.AliasBackward0)
    return _wrap(arr)       # view(dtype) results have no _base in PyTorch


@_register("view_as")
def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, other.shape)


@_register("reshape")
def reshape(input: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """A view when the layout allows one, else a contiguous copy."""
    shp = _shape_arg(shape, "reshape")
    arr = input._data.view(shp)
    copied = arr is None
    r = _wrap(_ew.contiguous(input._data).view(shp)) if copied else _wrap_view(arr, input)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _VG.record_reshape(input, r, _VG.UnsafeViewBackward0 if copied else _VG.ViewBackward0)
    return r


@_register("reshape_as")
def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other.shape)


@_register("permute")
def permute(input: Tensor, *dims: int | Sequence[int]) -> Tensor:
    dims = _shape_arg(dims, "permute")
    r = _wrap_view(input._data.permute(dims), input)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _VG.record_permute(input, r, dims)
    return r


@_register("transpose", "swapaxes", "swapdims")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    if input._data.ndim == 0:
        _wrap_dim(dim0, 0), _wrap_dim(dim1, 0)      # only 0 and -1 name the dim of a 0-d tensor
        return input
    r = _wrap_view(input._data.transpose(dim0, dim1), input)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _VG.record_transpose(input, r, dim0, dim1)
    return r


swapaxes = swapdims = transpose


@_register("t")
def t(input: Tensor) -> Tensor:
    """Transpose of a tensor with at most 2 dims."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    if input.ndim < 2:
        return input
    return _view_of(input, input._data.transpose(0, 1), _VG.record_t)


def _T(self):
    if self.ndim != 2 and self.ndim != 0:
        import warnings
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape "
                      "is deprecated.", UserWarning, stacklevel=2)
    return permute(self, tuple(builtins.range(self.ndim - 1, -1, -1)))


def _mT(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                           f"{self.ndim}-D tensor.")
    return transpose(self, -2, -1)


def _conj_if_complex(t):
    # torchlite conjugates eagerly (no lazy conjugate bit): for a complex tensor the adjoint is
    # a new tensor, not a view
    return t.conj() if t.is_complex() else t


def _H(self):
    if self.ndim != 2 and self.ndim != 0:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
    return _conj_if_complex(permute(self, tuple(builtins.range(self.ndim - 1, -1, -1))))


def _mH(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got "
                           f"{self.ndim}-D tensor.")
    return _conj_if_complex(transpose(self, -2, -1))


Tensor.T = property(_T)
Tensor.mT = property(_mT)
Tensor.H = property(_H)
Tensor.mH = property(_mH)


@_register("adjoint")
def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (a view for real tensors)."""
    return _mH(input)


@_register("movedim", "moveaxis")
def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    nd = input.ndim
    src = [source] if isinstance(source, numbers.Integral) else list(source)      # (NumPy
    dst = [destination] if isinstance(destination, numbers.Integral) else list(destination)  # ints too)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should "
                           f"contain the same number of dims as destination ({dst} dims)")
    src = [_wrap_dim(s, nd) for s in src]
    dst = [_wrap_dim(d, nd) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError("movedim: repeated dim in source or destination")
    order = [-1] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in builtins.range(nd) if i not in src)
    order = [o if o >= 0 else next(rest) for o in order]
    return permute(input, order)


moveaxis = movedim


@_register("expand")
def expand(input: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    r = _wrap_view(input._data.expand(_shape_arg(sizes, "expand")), input)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _VG.record_expand(input, r)
    return r


@_register("expand_as")
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other.shape)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    return expand(input, size)


Tensor.broadcast_to = broadcast_to


def broadcast_shapes(*shapes: int | Sequence[int]) -> Size:
    from .._size import Size
    return Size(_A.broadcast_shapes(*[(s,) if isinstance(s, builtins.int) else tuple(s) for s in shapes]))


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    shape = _A.broadcast_shapes(*[t.shape for t in tensors])
    return tuple(expand(t, shape) for t in tensors)


@_register("squeeze")
def squeeze(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Remove size-1 dims (all, or the given dim / tuple of dims)."""
    if dim is None:
        r = _wrap_view(input._data.squeeze(None), input)
        if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
            _VG.record_reshape(input, r, _VG.SqueezeBackward0)
        return r
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)     # (NumPy ints too)
    # dims are normalised here: array.pyx's _wrap_dim returns -1 for dim -1 of a 0-d array,
    # its error value, which Cython then reports as a SystemError
    nd = input._data.ndim
    arr = input._data.squeeze(tuple(_wrap_dim(d, nd, "squeeze") for d in dims))
    cls = _VG.SqueezeBackward1 if isinstance(dim, numbers.Integral) else _VG.SqueezeBackward2
    return _view_of(input, arr, _VG.record_reshape, cls)


@_register("unsqueeze")
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    r = _wrap_view(input._data.unsqueeze(dim), input)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _VG.record_reshape(input, r, _VG.UnsqueezeBackward0)
    return r


@_register("flatten")
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    nd = input.ndim
    if nd == 0:
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, nd)
    e = _wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = tuple(input.shape)
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return reshape(input, shape[:s] + (n,) + shape[e + 1:])


@_register("ravel")
def ravel(input: Tensor) -> Tensor:
    return reshape(input, (-1,))


@_register("unflatten")
def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = _wrap_dim(dim, input.ndim)
    shape = tuple(input.shape)
    return view(input, shape[:d] + tuple(sizes) + shape[d + 1:]) if input.is_contiguous() else \
        reshape(input, shape[:d] + tuple(sizes) + shape[d + 1:])


@_register("narrow")
def narrow(input: Tensor, dim: int, start: int | Tensor, length: int) -> Tensor:
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input.ndim)
    size = input.shape[d]
    if isinstance(start, Tensor):
        if start.ndim != 0 or start.is_floating_point() or start.dtype is D.bool:
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        start = start.item()
    if isinstance(start, builtins.bool) or not hasattr(start, "__index__") \
            or isinstance(length, builtins.bool) or not hasattr(length, "__index__"):
        raise TypeError(f"narrow(): start and length must be int, not {type(start).__name__} "
                        f"and {type(length).__name__}")
    start, length = start.__index__(), length.__index__()
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    arr = input._data.slice(d, start, start + length, 1)
    return _view_of(input, arr, _VG.record_narrow, d, start, length)


@_register("select")
def select(input: Tensor, dim: int, index: int) -> Tensor:
    index = builtins.int(index)
    r = _wrap_view(input._data.select(dim, index), input)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _VG.record_select(input, r, dim, index)
    return r


@_register("diagonal")
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes as a view, `offset` above (> 0) or below the
    main one; it becomes the last dim."""
    nd = input._data.ndim      # normalised here for 0-d inputs, as in squeeze
    d1, d2 = _wrap_dim(dim1, nd, "diagonal"), _wrap_dim(dim2, nd, "diagonal")
    arr = input._data.diagonal(offset, d1, d2)
    return _view_of(input, arr, _VG.record_diagonal, offset, d1, d2)


@_register("as_strided")
def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Tensor:
    """A view with the given size, strides and storage offset (in elements) over input's
    storage; it must stay inside the storage."""
    size = _shape_arg((size,), "as_strided")
    stride = ints_from_args((stride,), "as_strided", "stride")
    off = input.storage_offset() if storage_offset is None else ints_from_args(
        (storage_offset,), "as_strided", "storage_offset")[0]
    # the array layer checks the bounds in int64: make sure its sums cannot wrap around
    if len(size) == len(stride) and all(st >= 0 for st in stride) and off >= 0 and 0 not in size:
        extent = off + sum((n - 1) * st for n, st in zip(size, stride))
        if extent > MAX_NUMEL:
            raise RuntimeError(f"as_strided: sizes {size}, strides {stride} and storage offset "
                               f"{off} reach element {extent}, past the end of the storage")
    return _view_of(input, input._data.as_strided(size, stride, off), _VG.record_as_strided)


@_register("as_strided_")
def as_strided_(self, size: Sequence[int], stride: Sequence[int],
                storage_offset: int | None = None) -> Tensor:
    """In place: self becomes the as_strided(size, stride, storage_offset) view of its own
    storage (the elements stay where they are; only the geometry changes).  In a graph, self's
    history becomes that view's (AsStridedBackward0), as in PyTorch; a leaf that requires grad
    is refused, as every in-place op on one is."""
    tracked = self._requires_grad and (_grad_state.enabled or needs_grad(self))
    if tracked and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    alias = _wrap(self._data, self._requires_grad)      # self as it is now, with its history
    if tracked:
        alias.grad_fn, alias._output_nr = self.grad_fn, self.output_nr
    view = as_strided(alias, size, stride, storage_offset)   # checked, and recorded if tracked
    self._data = view._data
    if tracked:
        self.grad_fn, self._output_nr = view.grad_fn, 0
    self._bump_version()
    return self


@_register("unfold")
def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """All slices of length `size` along `dimension`, `step` apart, as a new last dim."""
    if input._data.ndim >= _MAX_DIMS:     # array.pyx's unfold does not check this itself
        raise RuntimeError(f"unfold: torchlite supports at most {_MAX_DIMS} dimensions, and the "
                           f"input already has {input._data.ndim}")
    arr = input._data.unfold(dimension, size, step)
    d = _wrap_dim(dimension, builtins.max(input._data.ndim, 1))
    return _view_of(input, arr, _VG.record_unfold, d, size, step)


@_register("flip")
def flip(input: Tensor, *args: int | Sequence[int],
         dims: int | Sequence[int] | None = None) -> Tensor:
    """A copy with the order of elements reversed along dims: flip(x, (0, 1)), flip(x,
    dims=(0, 1)), or as a method also x.flip(0, 1)."""
    if dims is None:
        dims = args[0] if len(args) == 1 and not isinstance(args[0], numbers.Integral) else args
    elif args:
        raise TypeError("flip() got multiple values for argument 'dims'")
    dims = (dims,) if isinstance(dims, numbers.Integral) else tuple(dims)     # (NumPy ints too)
    nd = input.ndim
    ds = sorted(_wrap_dim(d, nd) for d in dims)
    if len(set(ds)) != len(ds):
        raise RuntimeError(f"dims has duplicates, original flip dims size={len(dims)}, but unique "
                           f"flip dims size={len(set(ds))}")
    return _result_of(input, _ew.flip(input._data, tuple(ds)), _VG.record_flip, tuple(ds))


@_register("fliplr")
def fliplr(input: Tensor) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@_register("flipud")
def flipud(input: Tensor) -> Tensor:
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def _copy_in_format(input, fmt, op):
    """A copy of input laid out in memory format fmt (channels_last: NHWC strides;
    preserve_format or None: empty_like's strides for it)."""
    a = input._data
    arr = _A.empty_like(a, a.dtype, memory_format=fmt, op=op)
    if a.numel:         # an empty copy may carry 0 strides, which copy_'s overlap check refuses
        _ew.copy_(arr, a)
    return _result_of(input, arr, _VG.record_clone)


@_register("contiguous")
def contiguous(input: Tensor, memory_format: memory_format | None = None) -> Tensor:
    """input itself when its memory is dense in `memory_format`'s order (row-major by
    default, channels_last: NHWC), else a copy that is."""
    fmt = MF.check(memory_format, "contiguous")
    if fmt is None or fmt is MF.contiguous_format:
        if input._data.is_contiguous():
            return input
        return _result_of(input, _ew.contiguous(input._data), _VG.record_clone)
    if fmt is MF.preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if input.is_contiguous(memory_format=fmt):
        return input
    return _copy_in_format(input, fmt, "contiguous")


@_register("clone")
def clone(input: Tensor, *, memory_format: memory_format | None = None) -> Tensor:
    """A copy with its own memory, laid out in `memory_format`; with preserve_format (the
    default) as PyTorch's empty_like lays it out: a dense input keeps its strides, any other
    gets dense strides in its own dim order (a sliced channels_last input stays
    channels_last)."""
    fmt = MF.check(memory_format, "clone")
    if fmt is MF.contiguous_format:
        return _result_of(input, _ew.clone(input._data, False), _VG.record_clone)
    # preserve_format too, through empty_like's strides: the array layer's own clone makes a
    # non-dense input row-major (PyTorch keeps its dim order: a sliced channels_last tensor
    # stays channels_last) and can reorder a dense one whose size-1 dims tie on strides
    return _copy_in_format(input, fmt, "clone")


def atleast_1d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    r = [t if t.ndim >= 1 else reshape(t, (1,)) for t in _flat_args(tensors)]
    return r[0] if len(r) == 1 else tuple(r)


def atleast_2d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    r = [t if t.ndim >= 2 else reshape(t, (1,) * (2 - t.ndim) + tuple(t.shape)) for t in _flat_args(tensors)]
    return r[0] if len(r) == 1 else tuple(r)


def atleast_3d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    out = []
    for t in _flat_args(tensors):
        if t.ndim == 0:
            t = reshape(t, (1, 1, 1))
        elif t.ndim == 1:
            t = reshape(t, (1, t.shape[0], 1))
        elif t.ndim == 2:
            t = unsqueeze(t, -1)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def _flat_args(ts):
    if len(ts) == 1 and isinstance(ts[0], (tuple, list)):
        return list(ts[0])
    return list(ts)


# ---- in-place view ops: self becomes the view ------------------------------------------------
def _view_inplace(self, view):
    """Make self the given view of itself (its metadata changes; the memory does not, so the
    version stays).  In a graph self takes over the view's history, as PyTorch does; a leaf
    that requires grad is refused like any in-place op."""
    if self._requires_grad and (_grad_state.enabled or needs_grad(self)) and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    self._data = view._data
    if view.grad_fn is not None:
        self.grad_fn, self._output_nr = view.grad_fn, 0
    return self


@_register("unsqueeze_")
def unsqueeze_(self, dim: int) -> Tensor:
    return _view_inplace(self, unsqueeze(self, dim))


@_register("squeeze_")
def squeeze_(self, dim: int | Sequence[int] | None = None) -> Tensor:
    return _view_inplace(self, squeeze(self, dim))


@_register("t_")
def t_(self) -> Tensor:
    return _view_inplace(self, t(self))


@_register("transpose_", "swapaxes_", "swapdims_")
def transpose_(self, dim0: int, dim1: int) -> Tensor:
    return _view_inplace(self, transpose(self, dim0, dim1))


@_register("sum_to_size")
def sum_to_size(self, *size: int | Sequence[int]) -> Tensor:
    """self summed down to `size` (which must expand to self's shape): the reverse of
    expand, as a gradient of a broadcast op is reduced."""
    from ..autograd.graph import expandable_to, sum_to
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    shape = _shape_arg(size, "sum_to_size")
    if not expandable_to(shape, tuple(self.shape)):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(self.shape)}}}.")
    return sum_to(self, shape)


@_register("resize_")
def resize_(self, *sizes: int | Sequence[int],
            memory_format: memory_format | None = None) -> Tensor:
    """Give self a new contiguous shape in place.  When self's memory holds enough elements
    (from its offset on) they are reused as they lie; otherwise self moves to new memory
    holding the old elements first (the rest uninitialised).  Other views of the old memory
    keep it.  A tensor that requires grad cannot be resized."""
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = _shape_arg(sizes, "resize_")
    if builtins.any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{builtins.min(shape)}: {list(shape)}")
    n = 1
    for s in shape:
        n *= s
    a = self._data
    strides, st = [], 1
    for s in reversed(shape):
        strides.append(st)
        st *= builtins.max(s, 1)
    strides = tuple(reversed(strides))
    held = a.storage_nbytes() // a.itemsize - a.offset     # elements from self's offset on
    if n <= held:
        self._data = a.as_strided(shape, strides, a.offset)
    else:
        new = _A.empty(shape, a.dtype, device=a)
        keep = builtins.max(builtins.min(held, n), 0)
        if keep:
            _ew.copy_(new.as_strided((keep,), (1,), 0), a.as_strided((keep,), (1,), a.offset))
        self._data = new
    self._bump_version()
    return self


@_register("resize_as_")
def resize_as_(self, the_template: Tensor, *, memory_format: memory_format | None = None) -> Tensor:
    """resize_(the_template.shape)."""
    return resize_(self, tuple(the_template.shape))


def _resize_shape(self, shape, op):
    n = 1
    for s_ in shape:
        n *= s_
    if n != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({n} elements in "
                           f"total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           f"autograd's {op} can only change the shape of a given tensor, while "
                           f"preserving the number of elements. ")
    return self.reshape(shape)


@_register("resize")
def resize(self, *sizes: int | Sequence[int]) -> Tensor:
    """The deprecated out-of-place resize: a reshape to `sizes`, which must keep the number of
    elements (PyTorch's autograd Resize); warns as PyTorch does."""
    import warnings
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize_shape(self, _shape_arg(sizes, "resize"), "resize")


@_register("resize_as")
def resize_as(self, tensor: Tensor) -> Tensor:
    """The deprecated out-of-place resize_as: resize(tensor.shape); warns as PyTorch does."""
    import warnings
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize_shape(self, tuple(tensor.shape), "resize")


# ---- the *_copy variants: the view's values in a new contiguous tensor (PyTorch's
# functional forms of its views) ----------------------------------------------------------------
def _copy_of(view_name):
    def copy_variant(input: Tensor, *args: Any, out: Tensor | None = None,
                     **kwargs: Any) -> Tensor | tuple[Tensor, ...]:
        r = getattr(input, view_name)(*args, **kwargs)
        if isinstance(r, tuple):
            return tuple(_fresh(t) for t in r)
        r = _fresh(r)
        if out is None:
            return r
        no_out_with_grad(f"{view_name}_copy", input)
        return write_out(r, out, f"{view_name}_copy")
    copy_variant.__name__ = copy_variant.__qualname__ = f"{view_name}_copy"
    copy_variant.__doc__ = (f"input.{view_name}(...) as a new contiguous tensor (PyTorch's "
                            f"torch.{view_name}_copy).")
    return copy_variant


def _fresh(t):
    c = t.contiguous()
    return c.clone() if c is t else c


for _view in ("view", "permute", "t", "transpose", "squeeze", "unsqueeze", "unbind", "unfold",
              "expand", "diagonal", "as_strided", "detach"):
    globals()[f"{_view}_copy"] = _copy_of(_view)


def select_copy(input: Tensor, dim: int, index: int, *, out: Tensor | None = None) -> Tensor:
    """input.select(dim, index) as a new tensor (torch.select_copy)."""
    return _copy_of("select")(input, dim, index, out=out)


def slice_copy(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
               step: int = 1, *, out: Tensor | None = None) -> Tensor:
    """input[..., start:end:step, ...] along dim as a new tensor (torch.slice_copy)."""
    d = _wrap_dim(dim, builtins.max(input.ndim, 1))
    index = (slice(None),) * d + (slice(start, end, step),)
    return _copy_of("__getitem__")(input, index, out=out)


def split_copy(input: Tensor, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """input.split(split_size, dim), each part a new tensor (torch.split_copy)."""
    return _copy_of("split")(input, split_size, dim)


def split_with_sizes_copy(input: Tensor, split_sizes: Sequence[int],
                          dim: int = 0) -> tuple[Tensor, ...]:
    """input.split_with_sizes(split_sizes, dim), each part a new tensor."""
    return _copy_of("split_with_sizes")(input, split_sizes, dim)


def copied_view(view: Tensor, out: Tensor | None, op: str, input: Tensor) -> Tensor:
    """A view op's result as a new contiguous tensor, written into out= when given (the _copy
    spellings of the views: view_copy, view_as_real_copy ...)."""
    r = _fresh(view)
    if out is None:
        return r
    no_out_with_grad(op, input)
    return write_out(r, out, op)


@_register("as_strided_scatter")
def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """A copy of input whose as_strided(size, stride, storage_offset) view holds src
    (torch.as_strided_scatter); differentiable in both."""
    out = input.clone()
    out.as_strided(size, stride, storage_offset).copy_(src)
    return out


def alias_copy(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """A copy of input (PyTorch's torch.alias_copy)."""
    return _copy_of("view_as")(input, input, out=out)


alias_copy.__name__ = "alias_copy"
COPY_VARIANTS = [f"{v}_copy" for v in ("view", "permute", "t", "transpose", "squeeze",
                                       "unsqueeze", "unbind", "unfold", "expand", "diagonal",
                                       "as_strided", "detach", "select", "slice", "split",
                                       "split_with_sizes", "view_as_real", "view_as_complex")] + ["alias_copy"]
