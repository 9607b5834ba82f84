"""Joining, splitting and rearranging: cat/stack and their variants, split/chunk/tensor_split,
repeat/tile/repeat_interleave, roll, tril/triu, diag and friends, block_diag, meshgrid,
cartesian_prod, rot90.

Almost everything is the array layer's views plus one copy: cat and stack copy each input
into a slice of the output (one pass, no temporaries), the splits return views, repeat and
tile copy an expanded view, roll copies at most 2^k blocks for k rolled dims.  The kernels
of torchlite/_core/joining.pyx do what a view cannot express: zeroing a triangle, the
coordinates of a triangle, and repeating slices a varying number of times."""
from __future__ import annotations

import builtins
import warnings
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._device import factory_device, to_device
from .._dispatch import array as _A
from .._dispatch import mixed_device_error
from .._dispatch import elementwise as _ew
from .._dispatch import joining as _JK
from .._size import MAX_NUMEL
from .._tensor import Tensor, _wrap, _wrap_dim, _wrap_view
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import inplace_records
from . import _register
from . import elementwise_grad as _EG
from . import joining_grad as _JG
from . import views_grad as _VG
from .views_grad import arange_array
from .views import _shape_arg, clone, flip, reshape, transpose, unsqueeze
from ._kit import int64_arg, int_arg, needs_grad, no_out_with_grad, out_array, tensor_arg
from .. import _layout

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._device import device
    from .._dtype import dtype
    from .._layout import layout

_TORCH_NAMES = _ew._TORCH_NAMES
_MAX_DIMS = 16


# ---- helpers -------------------------------------------------------------------------------
def _tensor_list(tensors, op):
    """The tensors of a list/tuple argument, checked (PyTorch's TypeError otherwise)."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return list(tensors)


def _varargs(tensors):
    """f(a, b) and f([a, b]) both mean the tensors a and b."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


def _common_dtype(tensors):
    code = tensors[0]._data.dtype
    for t in tensors[1:]:
        code = _ew.promote(code, t._data.dtype)
    return code


def _check_same_device(tensors, op):
    dev = tensors[0]._data.device
    for t in tensors:
        if t._data.device != dev:
            raise mixed_device_error(dev, t._data.device, f"when checking argument for argument "
                                                          f"tensors in method {op}")


def _out_array(out, shape, code, op, like):
    """The array to write a result of `shape` and dtype `code` into: out's (see
    _kit.out_array) or a new one on the device of array `like`.  cat and stack cast into out
    (PyTorch's TypeError when they cannot); the others need out in the result's dtype."""
    if out is None:
        return _A.empty(shape, code, device=like)
    if op in ("cat", "stack") and isinstance(out, Tensor) and not _ew.can_cast(code, out._data.dtype):
        raise TypeError(f"torch.{op}(): input types can't be cast to the desired output type "
                        f"{_TORCH_NAMES[out._data.dtype]}")
    return out_array(out, shape, op, dtype=None if op in ("cat", "stack") else code)


def _finish(arr, out, inputs=(), record=None):
    """The result array as a tensor (passed to record(result) when one of inputs requires
    grad), or out= after the array was written into it."""
    if out is None:
        r = _wrap(arr)
        if record is not None and needs_grad(*inputs):
            record(r)
        return r
    return out


def _lead_ones(a, nd):
    """Array a with leading size-1 dims added up to nd dims (a view; unsqueeze also works for
    0-d arrays)."""
    while a.ndim < nd:
        a = a.unsqueeze(0)
    return a


def _flat(t):
    """t flattened to 1-d (a view when possible)."""
    return reshape(t, (-1,))


def _atleast(t, nd):
    """t with leading size-1 dims added up to nd dims (a view)."""
    return t if t.ndim >= nd else reshape(t, (1,) * (nd - t.ndim) + tuple(t._data.shape))


# ---- cat, stack and their variants ---------------------------------------------------------
def cat(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Concatenate tensors along an existing dim.  Dtypes are promoted; 1-d tensors of shape
    (0,) are skipped (PyTorch's legacy rule); other dims must match."""
    ts = _tensor_list(tensors, "cat")
    arrays = [t._data for t in ts]
    if len(ts) > 1:
        _check_same_device(ts, "cat")
    shape, code, d = _JK.cat_plan(arrays, dim)
    if out is not None and isinstance(out, Tensor):     # before out is resized
        no_out_with_grad("cat", *ts)
        _JK.check_no_alias(out._data, arrays)
    return _finish(_JK.cat_into(_out_array(out, shape, code, "cat", arrays[0]), arrays, d), out, ts,
                   lambda r: _JG.record_cat(ts, r, d))


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Join equal-shaped tensors along a new dim."""
    ts = _tensor_list(tensors, "stack")
    arrays = [t._data for t in ts]
    if len(ts) > 1:
        _check_same_device(ts, "stack")
    shape, code, d = _JK.stack_plan(arrays, dim)
    if out is not None and isinstance(out, Tensor):
        no_out_with_grad("stack", *ts)
        _JK.check_no_alias(out._data, arrays)
    return _finish(_JK.stack_into(_out_array(out, shape, code, "stack", arrays[0]), arrays, d), out, ts,
                   lambda r: _JG.record_stack(ts, r, d))


def _nonempty(tensors, op):
    ts = _tensor_list(tensors, op)
    if not ts:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return ts


def hstack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """cat along dim 1 (dim 0 for 1-d tensors); 0-d tensors count as 1-d."""
    ts = [_atleast(t, 1) for t in _nonempty(tensors, "hstack")]
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """cat along dim 0 of the tensors seen as at least 2-d (a 1-d tensor is one row)."""
    ts = [_atleast(t, 2) for t in _nonempty(tensors, "vstack")]
    return cat(ts, 0, out=out)


row_stack = vstack


def dstack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """cat along dim 2 of the tensors seen as at least 3-d."""
    ts = []
    for t in _nonempty(tensors, "dstack"):
        if t.ndim <= 1:
            t = unsqueeze(_atleast(t, 2), 2)
        elif t.ndim == 2:
            t = unsqueeze(t, 2)
        ts.append(t)
    return cat(ts, 2, out=out)


def column_stack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Stack 0-d and 1-d tensors as columns, and cat 2-d+ tensors along dim 1."""
    ts = [unsqueeze(_flat(t), 1) if t.ndim <= 1 else t for t in _nonempty(tensors, "column_stack")]
    return cat(ts, 1, out=out)


# ---- splitting -----------------------------------------------------------------------------
def _slices(input, d, bounds, node_cls):
    """Views of input along dim d between the (start, stop) pairs (slicing rules), recorded
    as one multi-output node_cls when input requires grad."""
    a = input._data
    outs = tuple(_wrap_view(a.slice(d, b, e, 1), input) for b, e in bounds)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        size = a.shape[d]
        clamped = [slice(b, e).indices(size)[:2] for b, e in bounds]
        _JG.record_split(input, outs, d, [(b, builtins.max(b, e)) for b, e in clamped], node_cls)
    return outs


def _sizes_to_bounds(sizes):
    bounds, start = [], 0
    for s in sizes:
        bounds.append((start, start + s))
        start += s
    return bounds


@_register("unbind")
def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along dim, as a tuple of views (one backward node for all of them)."""
    d = _wrap_dim(dim, input.ndim)
    a = input._data
    outs = tuple(_wrap_view(a.select(d, i), input) for i in builtins.range(a.shape[d]))
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _JG.record_unbind(input, outs, d)
    return outs


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int],
          dim: int = 0) -> tuple[Tensor, ...]:
    """Views of `tensor` in pieces along dim: of split_size each (the last may be smaller), or
    of the listed sizes."""
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, tensor.ndim)
    size = tensor._data.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)) or (
            isinstance(split_size_or_sections, Tensor) and split_size_or_sections.ndim == 1):
        return _split_with_sizes(tensor, [int_arg(s, "split_sizes", "split")
                                          for s in split_size_or_sections], d)
    step = int_arg(split_size_or_sections, "split_size", "split")
    if step < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
    if step == 0 and size != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {size}")
    n = builtins.max(-(-size // step) if step else 1, 1)
    bounds = [(i * step, builtins.min((i + 1) * step, size)) for i in builtins.range(n)]
    return _slices(tensor, d, bounds, _JG.SplitBackward0)


def _split_with_sizes(tensor, sizes, d):
    size = tensor._data.shape[d]
    if builtins.any(s < 0 for s in sizes) or builtins.sum(sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={sizes}")
    return _slices(tensor, d, _sizes_to_bounds(sizes), _JG.SplitWithSizesBackward0)


def unsafe_split(tensor: Tensor, split_size_or_sections: int | Sequence[int],
                 dim: int = 0) -> tuple[Tensor, ...]:
    """split (PyTorch's variant without autograd view tracking; the same views here)."""
    return split(tensor, split_size_or_sections, dim)


@_register("split")
def _split_method(self, split_size, dim=0):
    """Tensor.split names its argument split_size (torch.split: split_size_or_sections)."""
    return split(self, split_size, dim)


@_register("unsafe_split")
def _unsafe_split_method(self, split_size, dim=0):
    return split(self, split_size, dim)


@_register("chunk")
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into `chunks` views of equal size (the last may be smaller; fewer chunks when the
    dim is too short to give each one element)."""
    chunks = int_arg(chunks, "chunks", "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, input.ndim)
    size = input._data.shape[d]
    if size == 0:
        return _slices(input, d, [(0, 0)] * chunks, _JG.SplitBackward0)
    return split(input, -(-size // chunks), d)


@_register("tensor_split")
def tensor_split(input: Tensor, indices_or_sections: int | Sequence[int] | Tensor,
                 dim: int = 0) -> tuple[Tensor, ...]:
    """Views split into `sections` nearly equal parts (the first size % sections one longer),
    or at the given indices (slicing rules: clamped, possibly empty)."""
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = _wrap_dim(dim, input.ndim)
    arg = indices_or_sections
    if isinstance(arg, Tensor):
        if arg.dtype is not D.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of "
                               f"long, but got {_TORCH_NAMES[arg._data.dtype]}")
        if arg.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor with "
                               f"{arg.ndim} dims")
        arg = arg.item() if arg.ndim == 0 else arg.tolist()
    if isinstance(arg, (list, tuple)):
        idx = [int_arg(i, "indices", "tensor_split") for i in arg]
        return _slices(input, d, builtins.list(builtins.zip([0] + idx, idx + [None])),
                       _JG.TensorSplitBackward0)
    sections = int_arg(arg, "sections", "tensor_split")
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    size = input._data.shape[d]
    q, r = divmod(size, sections)
    sizes = [q + 1 if i < r else q for i in builtins.range(sections)]
    return _slices(input, d, _sizes_to_bounds(sizes), _JG.TensorSplitBackward0)


def _dir_split(input, indices_or_sections, dim, min_dims, op):
    if input.ndim < min_dims:
        need = "at least 1 dimension" if min_dims == 1 else f"at least {min_dims} dimension"
        raise RuntimeError(f"torch.{op} requires a tensor with {need}, but got a tensor with "
                           f"{input.ndim} dimensions!")
    if not isinstance(indices_or_sections, (list, tuple, Tensor)):
        sections = int_arg(indices_or_sections, "sections", op)
        size = input._data.shape[dim]
        if sections == 0 or size % sections:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size "
                               f"of the dimension {size} is not divisible by the split_size "
                               f"{sections}!")
    return tensor_split(input, indices_or_sections, dim)


@_register("hsplit")
def hsplit(input: Tensor, indices_or_sections: int | Sequence[int] | Tensor) -> tuple[Tensor, ...]:
    """tensor_split along dim 1 (dim 0 for 1-d); an int must divide the dim evenly."""
    return _dir_split(input, indices_or_sections, 1 if input.ndim > 1 else 0, 1, "hsplit")


@_register("vsplit")
def vsplit(input: Tensor, indices_or_sections: int | Sequence[int] | Tensor) -> tuple[Tensor, ...]:
    """tensor_split along dim 0 of a tensor with at least 2 dims."""
    return _dir_split(input, indices_or_sections, 0, 2, "vsplit")


@_register("dsplit")
def dsplit(input: Tensor, indices_or_sections: int | Sequence[int] | Tensor) -> tuple[Tensor, ...]:
    """tensor_split along dim 2 of a tensor with at least 3 dims."""
    return _dir_split(input, indices_or_sections, 2, 3, "dsplit")


# ---- repeating -----------------------------------------------------------------------------
def _copy_expanded(src, shape):
    """A new contiguous array holding src (an array view) broadcast to `shape`."""
    res = _A.empty(shape, src.dtype, device=src)
    _ew.copy_(res, src)
    return res


@_register("repeat")
def repeat(self, *sizes):
    """The tensor tiled sizes[i] times along each dim (extra leading sizes add dims)."""
    if not sizes:           # x.repeat() (x.repeat(()) is an empty repeats tuple)
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    reps = _shape_arg(sizes, "repeat")
    nd = len(reps)
    if nd < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    shape = (1,) * (nd - self.ndim) + tuple(self._data.shape)
    final = tuple(r * s for r, s in zip(reps, shape))
    for r in reps:
        if r < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {r}: "
                               f"{list(final)}")
    # view the input as (r0?, s0, r1?, s1, ...) with a stride-0 dim before each repeated dim,
    # so one copy writes the whole result
    src = _lead_ones(self._data, nd)
    big, k = [], 0
    for r, s in zip(reps, shape):
        if r != 1:
            src = src.unsqueeze(k)
            big.append(r)
            k += 1
        big.append(s)
        k += 1
    if len(big) > _MAX_DIMS:
        raise RuntimeError(f"repeat: at most {_MAX_DIMS} dimensions are supported (counting one "
                           f"more per repeated dim), got repeats {reps} for shape {tuple(shape)}")
    big = tuple(big)
    r = _wrap(_copy_expanded(src.expand(big), big).view(final))
    if self._requires_grad and (_grad_state.enabled or needs_grad(self)):
        _JG.record_repeat(self, r, src.shape, big, _JG.RepeatBackward0)
    return r


@_register("tile")
def tile(input: Tensor, dims: int | Sequence[int]) -> Tensor:
    """repeat, with dims padded with leading 1s to the tensor's number of dims."""
    dims = (dims,) if isinstance(dims, builtins.int) else tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


@_register("repeat_interleave")
def repeat_interleave(input: Tensor, repeats: int | Tensor | None = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Each element (slice along dim) repeated `repeats` times in place; repeats is an int or
    a tensor of one count per slice.  dim=None works on the flattened tensor.
    repeat_interleave(counts) alone gives arange(len(counts)) repeated by counts."""
    if repeats is None:
        if input.ndim != 1 or input.is_floating_point() or input.dtype is D.bool:
            raise RuntimeError("repeat_interleave: repeats must be 1-d integer tensor")
        idx = _wrap(_A.empty((input.shape[0],), input._data.dtype, device=input._data))
        _A.fill_affine(idx._data, 0, 1)
        return repeat_interleave(idx, input, 0, output_size=output_size)
    if dim is None or input.ndim == 0:
        input = _flat(input)
        dim = 0 if dim is None else dim
    d = _wrap_dim(dim, input.ndim)
    if isinstance(repeats, Tensor):
        if repeats.is_floating_point() or repeats.dtype is D.bool:
            raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for '
                                      f"'{_TORCH_NAMES[repeats._data.dtype]}'")
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats.numel() != 1:
            return _repeat_by_counts(input, repeats, d, output_size)
        repeats = repeats.item()        # one count serves every slice
    r = int_arg(repeats, "repeats", "repeat_interleave")
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = tuple(input._data.shape)
    if output_size is not None and output_size != shape[d] * r:
        raise RuntimeError("allocated size does not match required size")
    src = input._data.unsqueeze(d + 1)
    big = shape[:d + 1] + (r,) + shape[d + 1:]
    final = shape[:d] + (shape[d] * r,) + shape[d + 1:]
    res = _wrap(_copy_expanded(src.expand(big), big).view(final))
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _JG.record_repeat(input, res, src.shape, big, _JG.RepeatInterleaveBackward0)
    return res


def _repeat_by_counts(input, repeats, d, output_size):
    counts = _ew.contiguous(_ew.cast(repeats._data, 5))
    total = 0
    for c in counts.tolist():
        if c < 0:
            raise RuntimeError("repeats can not be negative")
        total += c
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        # slice i repeated counts[i] times is index_select at [0]*c0 + [1]*c1 + ...
        idx = _JK.repeat_blocks(arange_array(counts.shape[0], counts), 0, counts, total)
        return input.index_select(d, _wrap(idx))
    return _wrap(_JK.repeat_blocks(_ew.contiguous(input._data), d, counts, total))


# ---- roll ----------------------------------------------------------------------------------
@_register("roll")
def roll(input: Tensor, shifts: int | Sequence[int],
         dims: int | Sequence[int] | None = None) -> Tensor:
    """Elements shifted cyclically along dims (the flattened tensor when dims is None)."""
    shifts = (shifts,) if not isinstance(shifts, (list, tuple)) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        rolled = roll(_flat(input), shifts, (0,))
        return rolled if input.ndim == 1 else reshape(rolled, tuple(input.shape))
    dims = (dims,) if not isinstance(dims, (list, tuple)) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    a = input._data
    total = {}
    for s, dm in zip(shifts, dims):
        d = _wrap_dim(dm, input.ndim)
        total[d] = total.get(d, 0) + int_arg(s, "shifts", "roll")
    res = _A.empty(a.shape, a.dtype, device=a)
    pieces = [(a, res)]                 # (source block, destination block) pairs
    for d, s in total.items():
        n = a.shape[d]
        s = s % n if n else 0
        if s == 0:
            continue
        pieces = [p for src, dst in pieces for p in
                  ((src.slice(d, 0, n - s, 1), dst.slice(d, s, n, 1)),
                   (src.slice(d, n - s, n, 1), dst.slice(d, 0, s, 1)))]
    for src, dst in pieces:
        _ew.copy_(dst, src)
    r = _wrap(res)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _JG.record_roll(input, r, total)
    return r


# ---- triangles and diagonals ---------------------------------------------------------------
def _check_matrix(input, op):
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")


def _check_no_internal_overlap(t, op):
    for size, st in zip(t._data.shape, t._data.strides):
        if st == 0 and size > 1:
            raise RuntimeError(f"{op}: unsupported operation: more than one element of the "
                               f"written-to tensor refers to a single memory location. Please "
                               f"clone() the tensor before performing the operation.")


def _triangle(input, diagonal, keep_upper, out, op):
    _check_matrix(input, op)
    diagonal = int_arg(diagonal, "diagonal", op)
    if out is not None:
        no_out_with_grad(op, input)
    res = _out_array(out, tuple(input.shape), input._data.dtype, op, input._data)
    _ew.copy_(res, input._data)       # a no-op when out is input; copy_ handles overlaps
    _JK.zero_triangle(res, diagonal, keep_upper)
    return _finish(res, out, (input,), lambda r: _JG.record_triangle(input, r, diagonal, keep_upper))


@_register("tril")
def tril(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """The lower triangle of each matrix (last two dims): elements with col - row <= diagonal
    kept, the rest zero."""
    return _triangle(input, diagonal, False, out, "tril")


@_register("triu")
def triu(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """The upper triangle of each matrix: elements with col - row >= diagonal kept."""
    return _triangle(input, diagonal, True, out, "triu")


def _triangle_(self, diagonal, keep_upper, op):
    """In-place tril (op "tril") or triu ("triu")."""
    if inplace_records(self):
        return _EG.rebase(self, op + "_", lambda old: _triangle(old, diagonal, keep_upper, None, op))
    _check_matrix(self, op)
    _check_no_internal_overlap(self, op + "_")
    _JK.zero_triangle(self._data, int_arg(diagonal, "diagonal", op + "_"), keep_upper)
    self._bump_version()
    return self


@_register("tril_")
def tril_(self, diagonal=0):
    """In-place tril."""
    return _triangle_(self, diagonal, False, "tril")


@_register("triu_")
def triu_(self, diagonal=0):
    """In-place triu."""
    return _triangle_(self, diagonal, True, "triu")


def _clamped_sum(start: int, row: int, col: int) -> int:
    """sum(clamp(start + i, 0, col) for i in range(row)), in O(1): zeros while start + i <= 0,
    then an arithmetic series, then col for every row from start + i >= col on."""
    lo = min(row, max(0, -start))
    hi = min(row, max(lo, col - start))
    k = hi - lo
    return k * (2 * (start + lo) + k - 1) // 2 + (row - hi) * col


def _tri_count(row: int, col: int, offset: int, upper: bool) -> int:
    """The number of indices tril_indices / triu_indices list.  Row i holds the columns j
    with j - i <= offset (lower: clamp(i + offset + 1, 0, col) of them) or j - i >= offset
    (upper: col - clamp(i + offset, 0, col))."""
    if upper:
        return row * col - _clamped_sum(offset, row, col)
    return _clamped_sum(offset + 1, row, col)


# results at least this large are allocated once before the kernel runs: PyTorch allocates
# the result before listing anything, so one that cannot fit fails at once, while the kernel
# would first count row by row (seconds for 2**31 rows) and only then fail
_TRI_PROBE_BYTES = 1 << 26


def _tri_indices(row, col, offset, dtype, device, upper, op):
    # PyTorch's order of errors: its argument parser (int64 range), the signs of the sizes,
    # the result's allocation (a size error), and only then the dtype
    row, col = int64_arg(row, "row", op), int64_arg(col, "col", op)
    offset = int64_arg(offset, "offset", op)
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dt = D.to_dtype(dtype, D.int64)
    offset = max(-row - 1, min(col + 1, offset))    # beyond these, the triangle no longer changes
    n = _tri_count(row, col, offset, upper)
    if 2 * n > MAX_NUMEL:
        raise RuntimeError(f"{op}: a {row} x {col} matrix has too many elements to list its indices")
    dev = factory_device(device)
    on_meta = dev is not None and to_device(dev).type == "meta"
    if not on_meta and 2 * n * dt.itemsize >= _TRI_PROBE_BYTES:
        _A.empty((2, n), dt.code)                   # the allocator's RuntimeError, at once
    if dt not in (D.int64, D.int32):                # PyTorch lists them in index types only
        raise NotImplementedError(f'"{op}" not implemented for \'{_TORCH_NAMES[dt.code]}\'')
    from .creation import _place, empty
    if on_meta:                                     # the shape alone: nothing to list
        return empty((2, n), dtype=dt, device=dev)
    # only rows that hold indices go to the kernel, which visits every row it is given:
    # upper rows from col - offset on are empty, lower rows before -offset are
    first = min(row, max(0, -offset)) if not upper else 0
    last = min(row, max(0, col - offset)) if upper else row
    idx = _JK.tri_indices(last - first, col, offset + first, upper)
    if first:           # the kernel numbered the rows from 0
        _wrap(idx).select(0, 0).add_(first)
    return _place(_ew.cast(idx, dt.code), dev)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: dtype | None = None,
                 device: str | device | int | None = None, layout: layout | None = None) -> Tensor:
    """The (2, N) coordinates (rows, then columns) of the lower triangle of a row x col
    matrix, row by row: col - row <= offset."""
    _layout.check(layout, "tril_indices")
    return _tri_indices(row, col, offset, dtype, device, False, "tril_indices")


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: dtype | None = None,
                 device: str | device | int | None = None, layout: layout | None = None) -> Tensor:
    """The (2, N) coordinates of the upper triangle: col - row >= offset."""
    _layout.check(layout, "triu_indices")
    return _tri_indices(row, col, offset, dtype, device, True, "triu_indices")


@_register("diag")
def diag(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """1-d input: a square matrix with input on the given diagonal.  2-d input: a copy of
    the given diagonal."""
    diagonal = int_arg(diagonal, "diagonal", "diag")
    a = input._data
    if input.ndim in (1, 2) and out is not None:
        no_out_with_grad("diag", input)
    if input.ndim == 1:
        n = a.shape[0] + builtins.abs(diagonal)
        res = _out_array(out, (n, n), a.dtype, "diag", a)
        _A.fill_(res, 0)
        _ew.copy_(res.diagonal(diagonal, 0, 1), a)
        return _finish(res, out, (input,), lambda r: _JG.record_diag_embed(input, r, diagonal, 0, 1))
    if input.ndim == 2:
        view = a.diagonal(diagonal, 0, 1)
        res = _out_array(out, view.shape, a.dtype, "diag", a)
        _ew.copy_(res, view)
        return _finish(res, out, (input,), lambda r: _VG.record_diagonal(input, r, diagonal, 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


@_register("diag_embed")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Batched diag: the last dim of input becomes the `offset` diagonal of the matrices in
    dims (dim1, dim2) of a result with one more dim; everything else is zero."""
    nd = input.ndim + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = int_arg(offset, "offset", "diag_embed")
    a = input._data
    shape = builtins.list(a.shape[:-1])
    n = (a.shape[-1] if a.ndim else 1) + builtins.abs(offset)
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    res = _A.full(tuple(shape), 0, a.dtype, device=a)
    _ew.copy_(res.diagonal(offset, d1, d2), a)
    return _finish(res, None, (input,), lambda r: _JG.record_diag_embed(input, r, offset, d1, d2))


@_register("diagflat")
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """diag of the flattened input: a square matrix with it on the offset diagonal."""
    return diag(_flat(input), offset)


def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix of the tensors (0-d and 1-d count as one row)."""
    mats = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"block_diag(): expected Tensor as element {i}, but got "
                            f"{type(t).__name__}")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.ndim} dimensions")
        mats.append(_lead_ones(t._data, 2))
    if not mats:
        return _wrap(_A.empty((1, 0), D.get_default_dtype().code))
    code = _common_dtype(builtins.list(tensors))
    rows = builtins.sum(m.shape[0] for m in mats)
    cols = builtins.sum(m.shape[1] for m in mats)
    res = _A.full((rows, cols), 0, code, device=mats[0])
    r = c = 0
    blocks = []
    for m in mats:
        h, w = m.shape
        _ew.copy_(res.slice(0, r, r + h, 1).slice(1, c, c + w, 1), m)
        blocks.append((r, c, h, w))
        r += h
        c += w
    return _finish(res, None, tensors, lambda r: _JG.record_block_diag(tensors, r, blocks))


# ---- grids ---------------------------------------------------------------------------------
_meshgrid_warned = [False]


def meshgrid(*tensors: Tensor | Sequence[Tensor],
             indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids: for N 0-d/1-d tensors, N views of shape (len0, len1, ...), the i-th
    varying along dim i ('ij'); 'xy' swaps the first two dims (Cartesian indexing)."""
    ts = _varargs(tensors)
    if indexing is None:
        if not _meshgrid_warned[0]:
            warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                          "indexing argument.", UserWarning, stacklevel=2)
            _meshgrid_warned[0] = True
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: '
                           f'{indexing}')
    ts = _tensor_list(ts, "meshgrid")
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got a tensor of shape {list(t.shape)}")
        if t.dtype is not ts[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    _check_same_device(ts, "meshgrid")
    order = builtins.list(builtins.range(len(ts)))
    if indexing == "xy" and len(ts) >= 2:
        order[0], order[1] = 1, 0
    sizes = [0] * len(ts)
    for i, t in enumerate(ts):
        sizes[order[i]] = t.numel()
    grids = []
    for i, t in enumerate(ts):
        view_shape = [1] * len(ts)
        view_shape[order[i]] = t.numel()
        grids.append(reshape(t, tuple(view_shape)).expand(tuple(sizes)))
    return tuple(grids)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """The Cartesian product of 1-d tensors: one row per combination (itertools.product
    order); a single tensor is returned as is."""
    ts = _varargs(tensors)
    for t in ts:
        if not isinstance(t, Tensor) or t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape "
                               f"{list(t.shape) if isinstance(t, Tensor) else type(t).__name__}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    if needs_grad(*ts):      # the same values through recorded ops
        return stack([_flat(g) for g in grids], 1)
    n = 1
    for t in ts:
        n *= t.numel()
    res = _A.empty((n, len(ts)), ts[0]._data.dtype, device=ts[0]._data)
    for i, g in enumerate(grids):
        # column i of the result, seen in the grid's shape, takes the expanded grid in one copy
        col = res.slice(1, i, i + 1, 1).view((n,)).view(tuple(g._data.shape))
        _ew.copy_(col, g._data)
    return _wrap(res)


@_register("rot90")
def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees k times in the plane of dims, from dims[0] towards dims[1]."""
    dims = builtins.list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = _wrap_dim(dims[0], input.ndim), _wrap_dim(dims[1], input.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k = int_arg(k, "k", "rot90") % 4
    if k == 1:
        return transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return transpose(flip(input, (d0,)), d0, d1)
    return clone(input)


# ---- differences, combinations, split_with_sizes, narrow_copy -----------------------------------
def _diff_operand(t, input, d, what):
    if t is None:
        return None
    if not isinstance(t, Tensor) or t.ndim != input.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in builtins.range(input.ndim):
        if i != d and t.shape[i] != input.shape[i]:
            raise RuntimeError(f"diff expects the shape of tensor to prepend or append to match "
                               f"that of input except along the differencing dimension; "
                               f"input.size({i}) = {input.shape[i]}, but got tensor.size({i}) = "
                               f"{t.shape[i]}")
    return t


@_register("diff")
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along dim (input[i + 1] - input[i], logical xor for bool),
    after concatenating prepend and append along dim."""
    from .elementwise import logical_xor, sub
    tensor_arg(input, "diff", "input")
    # PyTorch's argument parser types n and dim as int64: a bool or float is a TypeError and
    # n = 2**63 a ValueError, before any check of the values (a huge n within int64 just
    # empties the dim, as the loop below stops once the dim is empty)
    n = int64_arg(n, "n", "diff")
    dim = int64_arg(dim, "dim", "diff")
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:          # PyTorch: a copy of the input, prepend, append and dim left unchecked
        return input.clone()
    d = _wrap_dim(dim, input.ndim)
    parts = [t for t in (_diff_operand(prepend, input, d, "prepend"), input,
                         _diff_operand(append, input, d, "append")) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    step = logical_xor if x.dtype is D.bool else sub
    for _ in builtins.range(n):
        size = x.shape[d]
        if size == 0:
            break
        x = step(x.narrow(d, 1, size - 1), x.narrow(d, 0, size - 1))
    return x


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The r-element combinations of a 1-D tensor's elements, one per row (itertools'
    order; with_replacement allows repeats)."""
    import itertools
    from .creation import tensor, empty
    if not isinstance(input, Tensor) or input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape "
                           f"{list(input.shape) if isinstance(input, Tensor) else type(input).__name__}")
    r = int_arg(r, "r", "combinations")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    make = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = builtins.list(make(builtins.range(input.shape[0]), r)) if r else []
    # picked by index_select even when there is nothing to pick: the result stays in the
    # graph (requires_grad as PyTorch's), whatever its size
    if not rows:
        none = empty(0, dtype=D.int64, device=input.device)
        picked = input.index_select(0, none)
        return picked if r == 0 else picked.reshape(0, r)
    idx = tensor(rows, dtype=D.int64, device=input.device).reshape(-1)
    return input.index_select(0, idx).reshape(len(rows), r)


@_register("split_with_sizes")
def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Views of input along dim with the listed sizes (which must add up to its size)."""
    if input.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    return _split_with_sizes(input, [int_arg(s, "split_sizes", "split_with_sizes")
                                     for s in split_sizes], _wrap_dim(dim, input.ndim))


@_register("unsafe_chunk")
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """chunk (PyTorch's variant without autograd view tracking; the same views here)."""
    return chunk(input, chunks, dim)


@_register("unsafe_split_with_sizes")
def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int],
                            dim: int = 0) -> tuple[Tensor, ...]:
    """split_with_sizes (PyTorch's variant without view tracking; the same views here)."""
    return split_with_sizes(input, split_sizes, dim)


@_register("narrow_copy")
def narrow_copy(input: Tensor, dim: int, start: int | Tensor, length: int) -> Tensor:
    """A contiguous copy of input.narrow(dim, start, length)."""
    tensor_arg(input, "narrow_copy", "input")
    if isinstance(dim, int) and input.ndim > 0 and dim >= input.ndim:
        # PyTorch's narrow_copy checks a too-large dim before wrapping (a negative one gets
        # the IndexError that narrow gives)
        raise RuntimeError(f"narrow_copy(): Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           f"but got false (dim {dim} of a {input.ndim}-d tensor).")
    view = input.narrow(dim, start, length)
    copy = view.contiguous()
    return view.clone() if copy is view else copy      # a copy either way, never an alias


__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
           "column_stack", "unbind", "split", "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes",
           "chunk", "tensor_split", "hsplit", "vsplit", "dsplit", "tile", "repeat_interleave",
           "roll", "tril", "triu", "tril_indices", "triu_indices", "diag", "diag_embed", "diagflat",
           "block_diag", "meshgrid", "cartesian_prod", "rot90", "diff", "combinations",
           "split_with_sizes", "narrow_copy"]


def _chunk_cat(tensors: Sequence[Tensor], dim: int, num_chunks: int) -> Tensor:
    """torch._chunk_cat: each tensor's dim cut into num_chunks equal chunks (the last ones
    zero-padded), each tensor viewed as (*leading, num_chunks, chunk * trailing), and those
    concatenated along the new last dim: shape (*leading, num_chunks, sum of the pieces).
    The tensors share the dims before dim (FSDP's gradient packing)."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    for i, t in enumerate(tensors):
        tensor_arg(t, "_chunk_cat", f"tensors[{i}]")
    num_chunks = int_arg(num_chunks, "num_chunks", "_chunk_cat")
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    dim = int_arg(dim, "dim", "_chunk_cat")
    if dim < 0 and len({t.ndim for t in tensors}) > 1:
        raise RuntimeError("_chunk_cat expects non-negative dim when input tensors have "
                           "different ndims")
    if any(dim >= t.ndim for t in tensors):
        raise RuntimeError("_chunk_cat expects dim < ndim for all input tensors")
    if any(t.numel() == 0 for t in tensors):
        raise RuntimeError("_chunk_cat expects non-empty tensor")
    d = _wrap_dim(dim, tensors[0].ndim)
    lead = tuple(tensors[0].shape[:d])
    pieces = []
    for t in tensors:
        if tuple(t.shape[:d]) != lead:
            raise RuntimeError(f"_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all "
                               f"tensors, got {tuple(tensors[0].shape)} and {tuple(t.shape)}")
        size = t.shape[d]
        chunk = -(-size // num_chunks)
        if chunk * num_chunks != size:
            pad = list(t.shape)
            pad[d] = chunk * num_chunks - size
            t = cat([t, t.new_zeros(pad)], d)
        pieces.append(t.reshape(lead + (num_chunks, -1)))
    return cat(pieces, d + 1)


__all__ += ["_chunk_cat"]
