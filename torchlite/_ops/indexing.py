"""Indexing: tensor[...], tensor[...] = value, and the index ops: gather, scatter (and its
reductions), index_select/index_add/index_copy/index_fill, index_put, masked_fill/select/
scatter, nonzero/argwhere, take, take_along_dim, put.

Basic indexing (ints, slices with steps, None, Ellipsis) gives views computed in the array
layer.  Everything else is one of two kernels in torchlite/_core/indexing.pyx: `advanced`
(NumPy/PyTorch advanced indexing by integer arrays and masks, which also serves
index_select, index_add, take, put, masked_select...) and `along_dim` (gather/scatter).
This module turns the Python-level index into the kernels' index groups and checks the
arguments with PyTorch's messages; the kernels bounds-check every index before they run."""
from __future__ import annotations

import builtins
import numbers
import warnings
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._dispatch import array as _A
from .._dispatch import mixed_device_error
from .._dispatch import elementwise as _ew
from .._dispatch import indexing as _I
from .._tensor import Tensor, _wrap, _wrap_dim, _wrap_view, _as_pyscalar
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import inplace_records
from . import _register
from . import indexing_grad as _IG
from . import elementwise_grad as _EG
from . import views_grad as _VG
from .elementwise import where as _where
from ._kit import C_NAMES, needs_grad, no_out_with_grad as _no_out_with_grad, result, tensor_arg
from ._kit import check_out_memory, write_out
from .._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from collections.abc import Sequence

_BOOL, _UINT8, _INT32, _INT64 = 0, 1, 4, 5
_TORCH_NAMES = _ew._TORCH_NAMES          # "Float", "Long", ... as PyTorch's messages name dtypes
_C_NAMES = C_NAMES
_C_INT_NAMES = {1: "uint8_t", 2: "int8_t", 3: "int16_t", 4: "int", 5: "int64_t"}
_INT_LIMITS = {1: (-255, 255), 2: (-128, 127), 3: (-32768, 32767), 4: (-2**31, 2**31 - 1),
               5: (-2**63, 2**63 - 1)}
_WHERE = _ew.TERNARY["where"]
_BOUNDS = "index {index} is out of bounds for dimension {dim} with size {size}"
_TAKE_ERR = (IndexError, "out of range: tried to access index {index} on a tensor of {size} elements.", True)


# ---- values --------------------------------------------------------------------------------
def _checked_scalar(v, code):
    """A Python number as it will be stored in dtype `code`; PyTorch's overflow check for
    integer dtypes (floats truncate toward zero, like a C cast)."""
    if isinstance(v, Tensor):
        if v.ndim != 0:
            raise RuntimeError(f"expected a 0-dimensional value tensor, got {v.ndim} dimension(s)")
        # (a meta value has none: what it fills a meta tensor with is never read)
        v = 0 if v.is_meta else v.item()
    v = _as_pyscalar(v)
    if not isinstance(v, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        raise TypeError(f"value must be a number, not {type(v).__name__}")
    if code >= 10:
        return builtins.complex(v)
    if code == _BOOL:
        return builtins.bool(v)
    if isinstance(v, builtins.complex):          # a real dtype takes a complex value without
        if v.imag != 0:                          # an imaginary part only (PyTorch's check)
            name = _C_INT_NAMES.get(code) or _C_NAMES[code]
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
        v = v.real
    if code >= 6:
        return builtins.float(v)
    lo, hi = _INT_LIMITS[code]
    if code == _UINT8 and isinstance(v, builtins.float):
        lo = 0                    # only integers wrap into uint8
    if not (lo <= v <= hi):       # NaN fails this too
        raise RuntimeError(f"value cannot be converted to type {_C_INT_NAMES[code]} without overflow")
    return builtins.int(v)


def _strip_leading_ones(arr):
    """PyTorch drops a value's leading size-1 dims before broadcasting it in setitem."""
    k = 0
    shape = arr.shape
    while k < len(shape) and shape[k] == 1:
        k += 1
    return arr.squeeze(tuple(range(k))) if k else arr


def _check_same_device(self, other, op="index_put_"):
    if isinstance(other, Tensor) and other._data.device != self._data.device:
        raise mixed_device_error(self._data.device, other._data.device,
                                 f"when checking arguments for {op}")


def _value_array(self, value, any_device=False):
    """The array to write into self: a tensor cast to self's dtype, or a new array from a
    number or nested sequence, on self's device.  A value tensor on another device is
    copied over when it has no dims, or for `any_device` writes (basic indexing, which
    PyTorch does by copy_); otherwise that is the mixed-device RuntimeError."""
    code = self._data.dtype
    if isinstance(value, Tensor):
        arr = value._data
        if arr.device != self._data.device:
            if not (any_device or (arr.ndim == 0 and arr.device == "cpu")):
                _check_same_device(self, value)
            arr = value.to(self.device)._data
        return _strip_leading_ones(_ew.cast(arr, code))
    if isinstance(value, (list, tuple)) or hasattr(value, "__array_interface__"):
        from .creation import tensor
        return _strip_leading_ones(tensor(value, dtype=self.dtype, device=self.device)._data)
    if isinstance(value, numbers.Number):
        return _A.full((), _checked_scalar(value, code), code, device=self._data)
    raise TypeError(f"can't assign a {type(value).__name__} to a torchlite.{_TORCH_NAMES[code]}Tensor")


# ---- parsing an index ----------------------------------------------------------------------
_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
              "are valid indices (got {})")


def _as_tuple(idx):
    """The index as a tuple of items.  A list is one index array, unless (PyTorch's legacy
    rule) it is short and holds a tensor, sequence, slice, None or Ellipsis: then it is a
    tuple of indices."""
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, list) and len(idx) < 32:
        for i in idx:
            if (i is None or i is Ellipsis or isinstance(i, (Tensor, list, tuple, slice, range))
                    or hasattr(i, "__array_interface__") and getattr(i, "ndim", 0) > 0):
                warnings.warn("Using a non-tuple sequence for multidimensional indexing is "
                              "deprecated; use x[tuple(seq)] instead of x[seq].", UserWarning,
                              stacklevel=4)
                return tuple(idx)
    return (idx,)


def _index_tensor(seq):
    """A nested sequence or array used as an index, as a tensor: bool stays a mask, floats
    become int64 (PyTorch truncates them)."""
    from .creation import tensor
    t = tensor(list(seq) if isinstance(seq, range) else seq)
    if t.is_floating_point() or (t.numel() == 0 and isinstance(seq, (list, tuple, range))):
        return _wrap(_ew.cast(t._data, _INT64))
    return t


def _item(i):
    """One index item in canonical form: None, Ellipsis, slice, bool, int or Tensor."""
    if i is None or i is Ellipsis or type(i) is slice or type(i) is builtins.int:
        return i
    if isinstance(i, Tensor):
        if i.ndim == 0 and 1 < i._data.dtype < 6:     # 0-d integer tensor: like an int
            return i.item()
        return i
    if isinstance(i, builtins.bool) or type(i).__name__ == "bool_":
        return builtins.bool(i)
    if isinstance(i, (list, tuple, range)) or hasattr(i, "__array_interface__") and getattr(i, "ndim", 0) > 0:
        return _index_tensor(i)
    if isinstance(i, (str, bytes)):
        raise TypeError(f"an index must not be a {type(i).__name__}")
    if hasattr(i, "__index__"):
        return i.__index__()
    raise IndexError(_BAD_INDEX.format(type(i).__name__))


def _is_mask(t):
    return t._data.dtype == _BOOL or t._data.dtype == _UINT8


def _parse(self, idx):
    """The index items, and how many of self's dims they consume (checked)."""
    items = [_item(i) for i in _as_tuple(idx)]
    used = 0
    for i in items:
        if i is None or i is Ellipsis or type(i) is builtins.bool:
            pass
        elif isinstance(i, Tensor) and _is_mask(i):
            used += i.ndim
        else:
            used += 1
    if used > self.ndim:
        if self.ndim == 0 and builtins.any(type(i) is builtins.int for i in items):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    return items, used


def _slice(arr, dim, s):
    step = 1 if s.step is None else s.step.__index__()
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = None if s.start is None else s.start.__index__()
    stop = None if s.stop is None else s.stop.__index__()
    return arr.slice(dim, start, stop, step)


def _apply(self, items, used):
    """Apply the basic items (views) left to right; return the view and the advanced index
    groups (first dim, dims, array, kind) for the kernel, in the view's dims."""
    arr = self._data
    groups = []
    dim = 0
    for i in items:
        if i is None:
            arr = arr.unsqueeze(dim)
            dim += 1
        elif i is Ellipsis:     # (PyTorch lets every Ellipsis skip the unindexed dims)
            dim += self.ndim - used
        elif type(i) is slice:
            if not (i.start is None and i.stop is None and (i.step is None or i.step == 1)):
                arr = _slice(arr, dim, i)      # a full slice is a no-op (as in PyTorch)
            dim += 1
        elif type(i) is builtins.int:
            arr = arr.select(dim, i)
        elif type(i) is builtins.bool:        # a 0-d mask: a new dim of size 1 (True) or 0
            groups.append((dim, 0, _A.full((), i, _BOOL, device=arr), _I.KIND_MASK))
        else:
            index = i._data
            if index.device != arr.device:
                index = _index_on_device(self, i)
            if _is_mask(i):
                groups.append((dim, i.ndim, index, _I.KIND_MASK))
                dim += i.ndim
            else:
                if i._data.dtype not in (_INT32, _INT64):
                    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
                groups.append((dim, 1, index, _I.KIND_INDEX))
                dim += 1
    return arr, groups


def _index_on_device(self, i):
    """The array of index tensor i on self's device: PyTorch takes CPU indices for a tensor
    on any device, but no device's indices for a CPU tensor."""
    if i.device.type != "cpu":
        raise RuntimeError(f"indices should be either on cpu or on the same device as the indexed "
                           f"tensor ({self.device})")
    return i.to(self.device)._data


_int = builtins.int


def getitem(self, idx):
    """self[idx] with NumPy/PyTorch semantics: basic indexing gives a view, integer arrays
    and masks give a copy."""
    if type(idx) is _int and self._data.ndim > 0:       # the common x[i], kept short
        r = _wrap_view(self._data.select(0, idx), self)
        if self._requires_grad and (_grad_state.enabled or needs_grad(self)):
            _VG.record_select(self, r, 0, idx)
        return r
    items, used = _parse(self, idx)
    arr, groups = _apply(self, items, used)
    r = _wrap(_I.advanced(_I.GATHER, arr, groups)) if groups else _wrap_view(arr, self)
    if self._requires_grad and (_grad_state.enabled or needs_grad(self)):
        _IG.record_getitem(self, r, items, used, builtins.bool(groups))
    return r


def _assign_basic(self, dst, value):
    if isinstance(value, numbers.Number) and not isinstance(value, Tensor):
        _A.fill_(dst, _checked_scalar(value, dst.dtype))
    else:
        _ew.copy_(dst, _value_array(self, value, True))


def _is_full_mask(arr, groups):
    if len(groups) != 1:
        return False
    first, _, m, kind = groups[0]
    return (kind == _I.KIND_MASK and first == 0 and m.dtype == _BOOL and m.shape == arr.shape
            and not arr.has_internal_overlap())


def _write(self, items, used, value, accumulate):
    """self[items] = value (+= value with accumulate: repeated indices all add) in place,
    outside the graph.  Returns whether the index was advanced."""
    arr, groups = _apply(self, items, used)
    if not groups:
        if accumulate:
            _ew.binary(_ew.BINARY["add"], arr, _value_array(self, value, True), arr)
        else:
            _assign_basic(self, arr, value)
    elif not accumulate and _is_full_mask(arr, groups) and isinstance(value, numbers.Number):
        # x[mask] = number: one elementwise pass, no nonzero
        _ew.ternary(_WHERE, groups[0][2], _checked_scalar(value, arr.dtype), arr, arr)
    else:
        _check_writable(self, "index_put_")     # an expanded target would race with itself
        _advanced(_I.ADD if accumulate else _I.PUT, arr, groups, _value_array(self, value))
    self._bump_version()
    return builtins.bool(groups)


def index_put_items(input, items, used, value, accumulate):
    """A copy of input with [items] = value (+= with accumulate), items as _parse gives
    them; recorded when input or value requires grad.  This is setitem's out-of-place form
    and the backward of advanced indexing."""
    r = _plain_clone(input)
    advanced = _write(r, items, used, value, accumulate)
    if needs_grad(input, value):
        _IG.record_index_put(input, value, r, items, used, accumulate, advanced)
    return r


def setitem(self, idx, value):
    """self[idx] = value; value (a number, tensor or nested list) is cast to self's dtype
    and broadcast to the indexed shape.  With repeated indices the last write wins.

    On a tensor in a graph (or with a value requiring grad) the write is recorded: value
    gets the gradient of the written region, the other elements keep theirs.  Writing
    through a view (y = x[0]; y[1:] = v) rewrites the base's history too (CopySlices)."""
    items, used = _parse(self, idx)
    if inplace_records(self, value):
        _EG.rebase(self, "setitem", lambda old: index_put_items(old, items, used, value, False))
    else:
        _write(self, items, used, value, False)


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem


# ---- shared helpers ---------------------------------------------------------------------------
def _plain_clone(t):
    """A copy of t outside the graph: the out-of-place ops write into it, then record."""
    return _wrap(_ew.clone(t._data, True))


# ops whose out= may share no memory with their inputs (PyTorch's assert_no_overlap)
_READS_WHILE_WRITING = {"gather", "index_select", "masked_select", "take"}


def _result(res, out, op, inputs, record, *args):
    """An out-of-place op's result array: copied into out= (which does not support autograd,
    as in PyTorch), or a new tensor, recorded with record(result, *args) when one of
    `inputs` requires grad."""
    if out is not None:
        _no_out_with_grad(op, *inputs)
        if op in _READS_WHILE_WRITING:
            check_out_memory((out,), args, internal=True)
        return write_out(res, out, op)
    r = _wrap(res)
    if needs_grad(*inputs):
        record(r, *args)
    return r


def _check_long_index(index, op):
    """index (a tensor) must be int64, as take, put_ and index_copy_ require."""
    if index._data.dtype != _INT64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got "
                           f"{_TORCH_NAMES[index._data.dtype]}")


def _as_1d(arr):
    """PyTorch treats a 0-d tensor as 1-d of size 1 in gather/scatter and index_* ops."""
    return arr.unsqueeze(0) if arr.ndim == 0 else arr


def _check_writable(self, op):
    if self._data.has_internal_overlap():
        raise RuntimeError(f"{op}: unsupported operation: more than one element of the written-to "
                           f"tensor refers to a single memory location. Please clone() the tensor "
                           f"before performing the operation.")


# ---- gather / scatter ----------------------------------------------------------------------
def _check_index_dtype(index, op, ints=(_INT32, _INT64)):
    tensor_arg(index, op, "index")
    if index._data.dtype not in ints:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")


@_register("gather")
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False,
           out: Tensor | None = None) -> Tensor:
    """out[i][j][k] = input[i][index[i][j][k]][k] (for dim=1): values picked along `dim`."""
    tensor_arg(input, "gather", "input")
    tensor_arg(index, "gather", "index")
    if index.numel() == 0:
        # PyTorch checks neither the dtype nor the dims of an empty index: the result is
        # empty in the index's shape (a view of input's elements, so it stays in the graph)
        return input.reshape(-1)[:0].reshape(tuple(index.shape))
    _check_index_dtype(index, "gather")
    a, idx = _as_1d(input._data), _as_1d(index._data)
    d = _wrap_dim(dim, a.ndim)
    if idx.ndim != a.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k in range(a.ndim):
        if k != d and idx.shape[k] > a.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index.shape)} "
                               f"to be no larger than self {list(input.shape)} apart from dimension {d}")
    res = _I.along_dim(_I.GATHER, a, d, idx)
    if index.ndim == 0:
        res = res.view(())
    return _result(res, out, "gather", (input,), _IG.record_gather, input, dim, index)


_SCATTER_REDUCE_OLD = {None: _I.PUT, "add": _I.ADD, "multiply": _I.MUL}


def _scatter_src(self, index, src, value, op):
    """The source array of a scatter: src (same dtype, same ndim) or value expanded."""
    if src is not None and not isinstance(src, Tensor):
        value, src = src, None
    if src is None:
        if value is None:
            raise TypeError(f"{op}(): expected a src tensor or a value")
        v = _A.full((), _checked_scalar(value, self._data.dtype), self._data.dtype, device=self._data)
        return v.expand(index._data.shape) if index.ndim else v
    _check_same_device(self, src, op)
    if src._data.dtype != self._data.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    if max(src.ndim, 1) != max(index.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    return src._data


def _parts_if_complex(kop, a, value):
    """A complex target of an accumulating index op as its (..., 2) real parts, with the value
    as parts too: the index kernels add real numbers, and adding complex numbers is adding
    their parts (the other reductions, multiply and max/min, have no complex meaning here and
    are refused by the kernel)."""
    if kop != _I.ADD or a.dtype < 10:
        return a, value
    from .complex import parts_array
    if value.dtype != a.dtype:
        value = _ew.cast(value, a.dtype)
    return parts_array(a), parts_array(value)


def _advanced(kop, a, groups, value, err=None):
    """_I.advanced for writes, complex accumulation included (see _parts_if_complex)."""
    a, value = _parts_if_complex(kop, a, value)
    return _I.advanced(kop, a, groups, value, err)


def _scatter_into(self, dim, index, src_arr, kop, op):
    """self[index along dim] op= src, after PyTorch's checks."""
    _check_index_dtype(index, op)
    _check_writable(self, op)
    a, idx, s = _as_1d(self._data), _as_1d(index._data), _as_1d(src_arr)
    d = _wrap_dim(dim, a.ndim)
    if idx.ndim != a.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    for k in range(a.ndim):
        if (k != d and idx.shape[k] > a.shape[k]) or idx.shape[k] > s.shape[k]:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                               f"{list(self.shape)} apart from dimension {d} and to be no larger "
                               f"size than src {list(src_arr.shape)}")
    if kop == _I.ADD and a.dtype >= 10:
        a, s = _parts_if_complex(kop, a, s)
        idx = idx.unsqueeze(idx.ndim).expand(tuple(idx.shape) + (2,))
    _I.along_dim(kop, a, d, idx, s)
    self._bump_version()
    return self


@_register("scatter_")
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """self[i][index[i][j]] = src[i][j] (for dim=1), or = value; reduce='add'/'multiply'
    combines instead of overwriting."""
    if inplace_records(self, src):
        return _EG.rebase(self, "scatter_", lambda old: scatter(old, dim, index, src, value=value,
                                                                  reduce=reduce))
    return _scatter(self, dim, index, src, value, reduce)


def _scatter(self, dim, index, src, value, reduce):
    if reduce not in _SCATTER_REDUCE_OLD:
        raise RuntimeError("reduce argument must be either add or multiply.")
    tensor_arg(index, "scatter", "index")
    s = _scatter_src(self, index, src, value, "scatter")
    return _scatter_into(self, dim, index, s, _SCATTER_REDUCE_OLD[reduce], "scatter")


@_register("scatter")
def scatter(input: Tensor, dim: int, index: Tensor,
            src: Tensor | bool | int | float | complex | None = None, *,
            value: bool | int | float | complex | None = None, reduce: str | None = None,
            out: Tensor | None = None) -> Tensor:
    """Out-of-place scatter_: a copy of input with src (or value) written at index."""
    res = _scatter(_plain_clone(input), dim, index, src, value, reduce)
    return _result(res._data, out, "scatter", (input, src), _IG.record_scatter, input, dim, index,
                   src, reduce)


@_register("scatter_add_")
def scatter_add_(self, dim, index, src):
    """self[i][index[i][j]] += src[i][j] (for dim=1); repeated indices all add."""
    if inplace_records(self, src):
        return _EG.rebase(self, "scatter_add_", lambda old: scatter_add(old, dim, index, src))
    return _scatter_add(self, dim, index, src)


def _scatter_add(self, dim, index, src):
    tensor_arg(index, "scatter_add", "index")
    tensor_arg(src, "scatter_add", "src")
    s = _scatter_src(self, index, src, None, "scatter")
    return _scatter_into(self, dim, index, s, _I.ADD, "scatter_add")


@_register("scatter_add")
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor, *,
                out: Tensor | None = None) -> Tensor:
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(scatter_add, locals())
    res = _scatter_add(_plain_clone(input), dim, index, src)
    return _result(res._data, out, "scatter_add", (input, src), _IG.record_scatter_add, input, dim,
                   index, src)


_REDUCE_OPS = {"sum": _I.ADD, "mean": _I.ADD, "prod": _I.MUL, "amax": _I.MAX, "amin": _I.MIN}


def _reduce_identity(reduce, code):
    """The value a target starts from when include_self=False."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if code >= 6:
        return float("-inf") if reduce == "amax" else float("inf")
    if code == _BOOL:
        return reduce == "amin"
    lo, hi = (0, 255) if code == _UINT8 else _INT_LIMITS[code]
    return lo if reduce == "amax" else hi


@_register("scatter_reduce_")
def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """Reduce src into self at index along dim with 'sum', 'prod', 'mean', 'amax' or 'amin';
    include_self=False leaves self's old values out of the targets' reductions."""
    if inplace_records(self, src):
        return _EG.rebase(self, "scatter_reduce_", lambda old: scatter_reduce(
            old, dim, index, src, reduce, include_self=include_self))
    return _scatter_reduce(self, dim, index, src, reduce, include_self)


def _scatter_reduce(self, dim, index, src, reduce, include_self):
    if reduce not in _REDUCE_OPS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    tensor_arg(index, "scatter_reduce", "index")
    tensor_arg(src, "scatter_reduce", "src")
    code = self._data.dtype
    if reduce == "mean" and code == _BOOL:
        raise RuntimeError("\"scatter_reduce\" with reduce='mean' not implemented for 'Bool'")
    s = _scatter_src(self, index, src, None, "scatter_reduce")
    if not include_self:
        _scatter(self, dim, index, _reduce_identity(reduce, code), None, None)
    _scatter_into(self, dim, index, s, _REDUCE_OPS[reduce], "scatter_reduce")
    if reduce == "mean":
        counts = _A.full(self.shape, 1 if include_self else 0, _INT64, device=self._data)
        one = _A.full((), 1, _INT64, device=self._data)
        _scatter_into(_wrap(counts), dim, index, one.expand(index._data.shape) if index.ndim else one,
                      _I.ADD, "scatter_reduce")
        _ew.binary(_ew.BINARY["maximum"], counts, 1, counts)
        div = _ew.BINARY["div"] if code >= 6 else _ew.BINARY["div_floor"]
        _ew.binary(div, self._data, counts, self._data)
    return self


@_register("scatter_reduce")
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True, out: Tensor | None = None) -> Tensor:
    res = _scatter_reduce(_plain_clone(input), dim, index, src, reduce, include_self)
    return _result(res._data, out, "scatter_reduce", (input, src), _IG.record_scatter_reduce, input,
                   dim, index, src, reduce, include_self)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *,
                   out: Tensor | None = None) -> Tensor:
    """Values of input at indices along dim (broadcast in the other dims); with dim=None,
    indices into the flattened input."""
    tensor_arg(input, "take_along_dim", "input")
    tensor_arg(indices, "take_along_dim", "indices")
    if indices._data.dtype != _INT64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_TORCH_NAMES[indices._data.dtype]}")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1), out=out)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {input.ndim} dimensions for input, and {indices.ndim} "
                           f"dimensions for indices")
    d = _wrap_dim(dim, builtins.max(input.ndim, 1))
    if input.ndim and input.shape[d] and indices.numel() and not indices.is_meta \
            and builtins.bool((indices < 0).any()):
        # as in PyTorch, indices count from the end along dim (-1 is the last); further out
        # of range still raises, in gather
        indices = _where(indices < 0, indices + input.shape[d], indices)
    shape = list(input.shape)
    if input.ndim:
        shape[d] = indices.shape[d]
    bshape = list(_A.broadcast_shapes(tuple(shape), tuple(indices.shape)))
    idx = indices.expand(tuple(bshape))
    if input.ndim:
        bshape[d] = input.shape[d]
    return gather(input.expand(tuple(bshape)), d, idx, out=out)


_register("take_along_dim")(take_along_dim)


# ---- index_* along one dim -----------------------------------------------------------------
def _dim_and_index(self, dim, index, op, max_index_dim_msg):
    """(dim, 1-d index array) for the index_* ops."""
    tensor_arg(index, op, "index")
    if index.ndim > 1:
        raise IndexError(max_index_dim_msg.format(ndim=index.ndim, dtype=_TORCH_NAMES[index._data.dtype],
                                                  shape=list(index.shape)))
    return _wrap_dim(dim, builtins.max(self.ndim, 1)), _as_1d(index._data)


def _source_for(self, d, idx, source, op):
    """source as an array shaped like self with dim d of len(index), PyTorch's checks."""
    a, s = _as_1d(self._data), _as_1d(source._data)
    n_src = s.shape[d] if s.ndim > d else 1
    if n_src != idx.shape[0]:
        raise RuntimeError(f"{op}(): Number of indices ({idx.shape[0]}) should be equal to "
                           f"source.size(dim): ({n_src}), for dim: {d}")
    want = list(a.shape)
    want[d] = idx.shape[0]
    if list(s.shape) != want:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified "
                           f"dimension. Got self.shape = {list(self.shape)} source.shape = "
                           f"{list(source.shape)}")
    return s


@_register("index_select")
def index_select(input: Tensor, dim: int, index: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The slices of input at positions `index` (a 1-d integer tensor) along dim."""
    tensor_arg(input, "index_select", "input")
    tensor_arg(index, "index_select", "index")
    if index._data.dtype not in (_INT32, _INT64):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    d, idx = _dim_and_index(input, dim, index, "index_select",
                            "index_select(): Index is supposed to be a vector")
    a = _as_1d(input._data)
    # PyTorch's two messages: its 1-d path and its n-d (embedding-like) path
    err = ((IndexError, "index out of range in self", False) if a.ndim == 1 else
           (RuntimeError, "index_select(): INDICES element is out of DATA bounds, id={index} "
                          "axis_dim={size}", False))
    res = _I.advanced(_I.GATHER, a, [(d, 1, idx, _I.KIND_INDEX)], None, err)
    if input.ndim == 0:
        res = res.view(())
    return _result(res, out, "index_select", (input,), _IG.record_index_select, input, d, index)


@_register("index_add_")
def index_add_(self, dim, index, source, *, alpha=1):
    """self.select(dim, index[i]) += alpha * source.select(dim, i); repeated indices add."""
    if inplace_records(self, source):
        return _EG.rebase(self, "index_add_", lambda old: index_add(old, dim, index, source,
                                                                    alpha=alpha))
    return _index_add(self, dim, index, source, alpha)


def _index_add(self, dim, index, source, alpha):
    op = "index_add_"
    tensor_arg(source, op, "source")
    tensor_arg(index, op, "index")
    if index._data.dtype not in (_INT32, _INT64):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: "
                           f"{_TORCH_NAMES[index._data.dtype]}")
    d, idx = _dim_and_index(self, dim, index, op, op + "(): Index is supposed to be a vector, but got "
                            "dim: {ndim} with type: {dtype} and size: {shape}")
    if source._data.dtype != self._data.dtype:
        raise RuntimeError(f"{op}(): self ({_TORCH_NAMES[self._data.dtype]}) and source "
                           f"({_TORCH_NAMES[source._data.dtype]}) must have the same scalar type")
    _check_writable(self, op)
    s = _source_for(self, d, idx, source, op)
    if alpha != 1:
        s = _ew.binary(_ew.BINARY["mul"], s, _checked_scalar(alpha, s.dtype))
    _advanced(_I.ADD, _as_1d(self._data), [(d, 1, idx, _I.KIND_INDEX)], s,
              (RuntimeError, _BOUNDS, False))
    self._bump_version()
    return self


@_register("index_add")
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *,
              alpha: bool | int | float | complex = 1, out: Tensor | None = None) -> Tensor:
    res = _index_add(_plain_clone(input), dim, index, source, alpha)
    return _result(res._data, out, "index_add", (input, source), _IG.record_index_add, input, dim,
                   index, source, alpha, False)


@_register("index_reduce_")
def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """Reduce source's slices into self's slices index[i] along dim with 'prod', 'mean',
    'amax' or 'amin' (include_self=False leaves self's old values out of the reduced slices)."""
    return scatter_reduce_(self, dim, _index_for_reduce(self, dim, index, source, reduce, "index_reduce_"),
                           source, reduce, include_self=include_self)


@_register("index_reduce")
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True, out: Tensor | None = None) -> Tensor:
    """index_reduce_ on a copy of input."""
    return scatter_reduce(input, dim, _index_for_reduce(input, dim, index, source, reduce, "index_reduce"),
                          source, reduce, include_self=include_self, out=out)


def _index_for_reduce(self, dim, index, source, reduce, op):
    """index (a vector along dim) as the scatter index of source's shape, after PyTorch's
    checks, which index_reduce makes before scatter_reduce's."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
                           f"{reduce}.")
    tensor_arg(self, op, "self")
    tensor_arg(index, op, "index")
    tensor_arg(source, op, "source")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{_TORCH_NAMES[index._data.dtype]} and size: {list(index.shape)}")
    if index._data.dtype not in (_INT32, _INT64):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: "
                           f"{_TORCH_NAMES[index._data.dtype]}")
    d = _wrap_dim(dim, builtins.max(self.ndim, 1))
    n = index.numel()
    src_size = source.shape[d] if source.ndim else 1
    if n != src_size:
        raise RuntimeError(f"{op}(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({src_size}), for dim: {d}")
    if n and not index.is_meta \
            and builtins.bool(((index < 0) | (index >= (self.shape[d] if self.ndim else 1))).any()):
        raise IndexError("index out of range in self")
    shape = [1] * builtins.max(source.ndim, 1)
    shape[d] = n
    idx = index.long().reshape(shape)
    return idx.expand(tuple(source.shape)) if source.ndim else idx.reshape(())


@_register("index_copy_")
def index_copy_(self, dim, index, source):
    """self.select(dim, index[i]) = source.select(dim, i)."""
    if inplace_records(self, source):
        return _EG.rebase(self, "index_copy_", lambda old: index_copy(old, dim, index, source))
    return _index_copy(self, dim, index, source)


def _index_copy(self, dim, index, source):
    op = "index_copy_"
    tensor_arg(source, op, "source")
    tensor_arg(index, op, "index")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index should have dimension 1 or 0 (got {index.ndim})")
    _check_long_index(index, op)
    if source._data.dtype != self._data.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got (self) "
                           f"{_TORCH_NAMES[self._data.dtype]} and (source) "
                           f"{_TORCH_NAMES[source._data.dtype]}")
    if self.ndim != source.ndim and self.ndim > 0 and source.ndim > 0:
        raise IndexError(f"{op}(): When source and destination are not scalars, their dimensionality "
                         f"must match. Source dimensionality ({source.ndim}), destination "
                         f"dimensionality ({self.ndim})")
    d, idx = _wrap_dim(dim, builtins.max(self.ndim, 1)), _as_1d(index._data)
    a, s = _as_1d(self._data), _as_1d(source._data)
    if s.ndim != a.ndim or s.shape[d] != idx.shape[0]:
        raise IndexError(f"{op}(): Number of indices ({idx.shape[0]}) should be equal to "
                         f"source.size(dim) ({s.shape[d] if s.ndim > d else 1})")
    for k in range(a.ndim):
        if k != d and a.shape[k] != s.shape[k]:
            raise RuntimeError(f"{op}(): Source/destination tensor must have same slice shapes. "
                               f"Destination slice shape: {a.shape[k]} at dimension {k} and source "
                               f"slice shape: {s.shape[k]} at dimension {k}.")
    _check_writable(self, op)
    _I.advanced(_I.PUT, a, [(d, 1, idx, _I.KIND_INDEX)], s,
                (IndexError, op + "(): " + _BOUNDS, False))
    self._bump_version()
    return self


@_register("index_copy")
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor, *,
               out: Tensor | None = None) -> Tensor:
    res = _index_copy(_plain_clone(input), dim, index, source)
    return _result(res._data, out, "index_copy", (input, source), _IG.record_index_add, input, dim,
                   index, source, 1, True)


@_register("index_fill_")
def index_fill_(self, dim, index, value):
    """self.select(dim, i) = value for every i in index."""
    if inplace_records(self, value):
        return _EG.rebase(self, "index_fill_", lambda old: index_fill(old, dim, index, value))
    return _index_fill(self, dim, index, value)


def _index_fill(self, dim, index, value):
    op = "index_fill_"
    tensor_arg(index, op, "index")
    if index._data.dtype != _INT64:
        raise IndexError(f"{op}(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    _check_writable(self, op)
    d, idx = _wrap_dim(dim, builtins.max(self.ndim, 1)), _as_1d(index._data)
    v = _A.full((), _checked_scalar(value, self._data.dtype), self._data.dtype, device=self._data)
    _I.advanced(_I.PUT, _as_1d(self._data), [(d, 1, idx, _I.KIND_INDEX)], v)
    self._bump_version()
    return self


@_register("index_fill")
def index_fill(input: Tensor, dim: int, index: Tensor,
               value: bool | int | float | complex | Tensor) -> Tensor:
    res = _index_fill(_plain_clone(input), dim, index, value)
    return _result(res._data, None, "index_fill", (input, value), _IG.record_index_fill, input, dim,
                   index, value)


# ---- index_put -----------------------------------------------------------------------------
def _index_put_items(self, indices, values):
    """index_put's arguments checked, and the index parsed."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put_(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    for k, i in enumerate(indices):
        if not isinstance(i, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type(i).__name__}")
    tensor_arg(values, "index_put_", "values", pos=2)
    if values._data.dtype != self._data.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_TORCH_NAMES[self._data.dtype]} for the destination and "
                           f"{_TORCH_NAMES[values._data.dtype]} for the source.")
    return _parse(self, tuple(indices))


@_register("index_put_")
def index_put_(self, indices, values, accumulate=False):
    """self[indices] = values (indices: a tuple of tensors, one per leading dim, masks
    covering several); accumulate=True adds instead, every repeated index counting."""
    items, used = _index_put_items(self, indices, values)
    if inplace_records(self, values):
        return _EG.rebase(self, "index_put_", lambda old: index_put_items(old, items, used, values,
                                                                          builtins.bool(accumulate)))
    _write(self, items, used, values, accumulate)
    return self


@_register("index_put")
def index_put(input: Tensor, indices: tuple[Tensor, ...] | list[Tensor], values: Tensor,
              accumulate: bool = False) -> Tensor:
    """index_put_ on a copy of input."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(index_put, locals())
    items, used = _index_put_items(input, indices, values)
    return index_put_items(input, items, used, values, builtins.bool(accumulate))


# ---- masks ---------------------------------------------------------------------------------
def _check_bool_mask(mask, op, what="masks"):
    tensor_arg(mask, op, "mask")
    if mask._data.dtype != _BOOL:
        raise RuntimeError(f"{op} only supports boolean {what}, but got mask with dtype "
                           f"{_C_NAMES[mask._data.dtype]}")


def _mask_for(self, mask, op):
    """mask broadcast to self's shape (in-place ops cannot grow self)."""
    shape = _broadcast_shape(self.shape, mask.shape)
    if shape != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}")
    return mask._data.expand(self.shape)


@_register("masked_fill_")
def masked_fill_(self, mask, value):
    """self = value where mask is True (mask broadcasts to self)."""
    if inplace_records(self, value):
        _check_bool_mask(mask, "masked_fill_")
        _mask_for(self, mask, "masked_fill_")
        return _EG.rebase(self, "masked_fill_", lambda old: masked_fill(old, mask, value))
    return _masked_fill(self, mask, value)


def _masked_fill(self, mask, value):
    _check_bool_mask(mask, "masked_fill_")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                           f"with {value.ndim} dimension(s).")
    if not isinstance(value, (Tensor, numbers.Number)):
        raise TypeError(f"masked_fill(): argument 'value' must be Number or Tensor, not "
                        f"{type(value).__name__}")
    m = _mask_for(self, mask, "masked_fill_")
    v = _checked_scalar(value, self._data.dtype)
    _ew.ternary(_WHERE, m, v, self._data, self._data)
    self._bump_version()
    return self


def _broadcast_shape(a, b):
    """The broadcast of two shapes, or PyTorch's RuntimeError naming the clashing sizes."""
    n = builtins.max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for k in range(n):
        if a[k] != b[k] and a[k] != 1 and b[k] != 1:
            raise RuntimeError(f"The size of tensor a ({a[k]}) must match the size of tensor b "
                               f"({b[k]}) at non-singleton dimension {k}")
    return tuple(builtins.max(x, y) if x and y else 0 for x, y in zip(a, b))


def _expand_both(input, mask):
    shape = _broadcast_shape(input.shape, mask.shape)
    return _wrap(input._data.expand(shape)), _wrap(mask._data.expand(shape))


def _masked_out_of_place(inplace, op, input, mask, arg, record):
    """The out-of-place form of a masked in-place op: `inplace` (its body, outside the graph)
    on a copy of input broadcast with mask; recorded with record(result, input, mask, arg)
    when input or arg requires grad."""
    _check_bool_mask(mask, op)
    x, m = _expand_both(input, mask)
    res = inplace(_plain_clone(x), m, arg)
    if needs_grad(input, arg):
        record(res, input, mask, arg)
    return res


@_register("masked_fill")
def masked_fill(input: Tensor, mask: Tensor,
                value: bool | int | float | complex | Tensor) -> Tensor:
    """A copy of input (broadcast with mask) with value where mask is True."""
    return _masked_out_of_place(_masked_fill, "masked_fill_", input, mask, value,
                                _IG.record_masked_fill)


@_register("masked_select")
def masked_select(input: Tensor, mask: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The elements of input where mask (broadcast with it) is True, as a 1-d tensor."""
    tensor_arg(input, "masked_select", "input")
    tensor_arg(mask, "masked_select", "mask")
    if mask._data.dtype != _BOOL:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    x, m = _expand_both(input, mask)
    res = _I.advanced(_I.GATHER, x._data, [(0, x.ndim, m._data, _I.KIND_MASK)])
    return _result(res, out, "masked_select", (input,), _IG.record_masked_select, input, mask,
                   x._data.shape)


@_register("masked_scatter_")
def masked_scatter_(self, mask, source):
    """Copy source's leading elements, in order, into self where mask is True."""
    if inplace_records(self, source):
        _check_bool_mask(mask, "masked_scatter_")
        _mask_for(self, mask, "masked_scatter_")
        return _EG.rebase(self, "masked_scatter_", lambda old: masked_scatter(old, mask, source))
    return _masked_scatter(self, mask, source)


def _masked_scatter(self, mask, source):
    _check_bool_mask(mask, "masked_scatter_")
    tensor_arg(source, "masked_scatter_", "source")
    if source._data.dtype != self._data.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_TORCH_NAMES[self._data.dtype]} and {_TORCH_NAMES[source._data.dtype]}")
    _check_writable(self, "masked_scatter_")
    m = _mask_for(self, mask, "masked_scatter_")
    if self.is_meta:                # nothing to write, and no mask values to count
        return self
    count = _I.count_nonzero(m)
    if source.numel() < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    src = _ew.contiguous(source._data).view((source.numel(),)).slice(0, 0, count, 1)
    _I.advanced(_I.PUT, self._data, [(0, self.ndim, m, _I.KIND_MASK)], src)
    self._bump_version()
    return self


@_register("masked_scatter")
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of input (broadcast with mask) with source's leading elements where mask is True."""
    return _masked_out_of_place(_masked_scatter, "masked_scatter_", input, mask, source,
                                _IG.record_masked_scatter)


# ---- nonzero, take, put ----------------------------------------------------------------------
@_register("nonzero")
def nonzero(input: Tensor, *, out: Tensor | None = None,
            as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """Indices of the nonzero elements: an (n, ndim) int64 tensor in row-major order, or
    with as_tuple=True one 1-d tensor per dim."""
    tensor_arg(input, "nonzero", "input")
    if as_tuple:
        res = _I.nonzero(_as_1d(input._data))
        return tuple(_wrap(res.select(1, k)) for k in range(res.shape[1]))
    return result(_I.nonzero(input._data), out, "nonzero")


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """nonzero(input) with exactly `size` rows: cut, or padded with fill_value (a shape known
    before the data, as compiled graphs need)."""
    tensor_arg(input, "nonzero_static", "input")
    if isinstance(size, builtins.bool) or not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    if input.is_meta:               # the shape is known without the values
        from .creation import empty
        return empty((size, input.ndim), dtype=D.int64, device=input.device)
    found = nonzero(input)
    n = found.shape[0]
    if n >= size:
        return found[:size].clone()
    out = found.new_full((size, found.shape[1]), fill_value)
    out[:n] = found
    return out


_register("nonzero_static")(nonzero_static)


@_register("argwhere")
def argwhere(input: Tensor) -> Tensor:
    """nonzero(input) as an (n, ndim) tensor."""
    return nonzero(input)


@_register("take")
def take(input: Tensor, index: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input treated as 1-d (row-major), at the positions in index; negative counts back."""
    tensor_arg(input, "take", "input")
    tensor_arg(index, "take", "index")
    _check_long_index(index, "take")
    if input.numel() == 0 and index.numel() != 0:
        raise IndexError("take(): tried to take from an empty tensor")
    res = _I.advanced(_I.GATHER, input._data, [(0, input.ndim, index._data, _I.KIND_INDEX)],
                      None, _TAKE_ERR)
    return _result(res, out, "take", (input,), _IG.record_take, input, index)


@_register("put_")
def put_(self, index, source, accumulate=False):
    """self (seen as 1-d, row-major) at the positions in index = source (or += with
    accumulate); works on non-contiguous self in place."""
    if inplace_records(self, source):
        return _EG.rebase(self, "put_", lambda old: put(old, index, source, accumulate))
    return _put(self, index, source, accumulate)


def _put(self, index, source, accumulate):
    tensor_arg(index, "put_", "index")
    tensor_arg(source, "put_", "source")
    _check_long_index(index, "put_")
    if source._data.dtype != self._data.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_TORCH_NAMES[self._data.dtype]} and source.dtype = "
                           f"{_TORCH_NAMES[source._data.dtype]}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but "
                         f"got source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    if self.numel() == 0 and index.numel() != 0:
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    _check_writable(self, "put_")
    src = source.reshape(index.shape)._data
    _advanced(_I.ADD if accumulate else _I.PUT, self._data,
              [(0, self.ndim, index._data, _I.KIND_INDEX)], src, _TAKE_ERR)
    self._bump_version()
    return self


@_register("put")
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """put_ on a copy of input."""
    res = _put(_plain_clone(input), index, source, accumulate)
    return _result(res._data, None, "put", (input, source), _IG.record_put, input, index, source,
                   builtins.bool(accumulate))



# ---- slice_scatter, select_scatter, diagonal_scatter: a copy of input with one view's region
# replaced by src (clone + copy_ into the view, so autograd sees a clone and a CopySlices) -------
def _embed(input, src, region_of, op):
    tensor_arg(input, op, "input")
    tensor_arg(src, op, "src")
    out = input.clone()
    region = region_of(out)
    if tuple(region.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(region.shape)}")
    region.copy_(src)
    return out


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of input whose slice start:end:step along dim holds src."""
    d = _wrap_dim(dim, builtins.max(input.ndim, 1))
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    index = (slice(None),) * d + (slice(start, end, step),)
    return _embed(input, src, lambda t: t[index], "slice_scatter")


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of input whose slice input.select(dim, index) holds src."""
    return _embed(input, src, lambda t: t.select(dim, index), "select_scatter")


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of input whose diagonal (offset, dim1, dim2) holds src."""
    return _embed(input, src, lambda t: t.diagonal(offset, dim1, dim2), "diagonal_scatter")


for _name in ("slice_scatter", "select_scatter", "diagonal_scatter"):
    _register(_name)(globals()[_name])

__all__ = ["slice_scatter", "select_scatter", "diagonal_scatter", "gather", "scatter",
           "scatter_add", "scatter_reduce", "take_along_dim", "index_select", "index_add",
           "index_reduce", "nonzero_static", "index_copy", "index_fill", "index_put", "masked_fill",
           "masked_select", "masked_scatter", "nonzero", "argwhere", "take", "put"]


def unravel_index(indices: Tensor | int | Sequence[int],
                  shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The coordinates in `shape` of flat indices (a tuple of int64 tensors, one per dim, as
    torch.unravel_index)."""
    from .creation import tensor
    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices.is_floating_point() or indices.dtype is D.bool:
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    shape = (int(shape),) if not isinstance(shape, (tuple, list)) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " f"{shape}")
    total = 1
    for s in shape:
        total *= s
    flat = indices.long()
    if flat.numel() and (builtins.bool((flat < -total).any()) or
                         builtins.bool((flat >= total).any())):
        raise ValueError("index out of bounds in unravel_index")
    flat = _where(flat < 0, flat + total, flat)
    out = []
    for s in reversed(shape):
        out.append(flat.remainder(s) if s else flat * 0)
        flat = flat.div(s, rounding_mode="floor") if s else flat
    return tuple(reversed(out))


__all__ += ["unravel_index"]


# ---- ATen's masked indexing (torch._unsafe_masked_index, _unsafe_masked_index_put_accumulate) --
def _clamped_indices(x, mask, indices, op):
    """indices (None: the whole dim) clamped into x's dims: where mask is False an index may be
    out of range, and is never used for its value."""
    tensor_arg(mask, op, "mask")
    if mask.dtype is not D.bool:
        raise RuntimeError(f"{op}: mask must be a bool tensor, got {mask.dtype}")
    out = []
    for i, index in enumerate(indices):
        if index is None:
            out.append(slice(None))
            continue
        tensor_arg(index, op, f"indices[{i}]")
        if index.dtype not in (D.int64, D.int32):
            raise RuntimeError(f"{op}: indices must be int64 or int32 tensors, got {index.dtype}")
        out.append(index.clamp(0, x.shape[i] - 1))
    return tuple(out)


def _unsafe_masked_index(input: Tensor, mask: Tensor, indices: Sequence[Tensor | None],
                         fill: bool | int | float | complex) -> Tensor:
    """input[indices] where mask is True, fill elsewhere; indices may be out of range where
    mask is False (they are clamped, and their values replaced)."""
    tensor_arg(input, "_unsafe_masked_index", "input")
    idx = _clamped_indices(input, mask, indices, "_unsafe_masked_index")
    if input.numel() == 0:
        # the result's shape, from indexing a stand-in whose indexed dims have one element
        probe = input.new_empty([1 if isinstance(i, Tensor) else n
                                 for i, n in zip(idx + (slice(None),) * input.ndim, input.shape)])
        shape = probe[tuple(i.clamp(0, 0) if isinstance(i, Tensor) else i for i in idx)].shape
        return input.new_full(shape, fill)
    return input[idx].masked_fill(mask.logical_not(), fill)


def _unsafe_masked_index_put_accumulate(input: Tensor, mask: Tensor,
                                        indices: Sequence[Tensor | None],
                                        values: Tensor) -> Tensor:
    """A copy of input with values added at indices where mask is True (index_put with
    accumulate; the masked-off values add nothing, wherever their clamped index lands)."""
    tensor_arg(input, "_unsafe_masked_index_put_accumulate", "input")
    idx = _clamped_indices(input, mask, indices, "_unsafe_masked_index_put_accumulate")
    if input.numel() == 0:
        return input.clone()
    values = values.masked_fill(mask.logical_not(), 0)
    tdims = [k for k, i in enumerate(idx) if isinstance(i, Tensor)]
    if len(tdims) == input.ndim:
        return input.index_put(idx, values, accumulate=True)
    # a whole dim (None) among the indices: index_put takes tensors only, so the tensor-indexed
    # dims go first, the whole dims become broadcast aranges after them, and values are laid
    # out to match (PyTorch puts the indices' broadcast shape B where the first tensor-indexed
    # dim was when those dims are adjacent, else in front)
    from .creation import arange
    from .views import broadcast_shapes
    wdims = [k for k in range(input.ndim) if k not in tdims]
    B = tuple(broadcast_shapes(*[idx[k].shape for k in tdims]))
    adjacent = tdims == list(range(tdims[0], tdims[-1] + 1))
    lead = [k for k in wdims if k < tdims[0]] if adjacent else []
    res_shape = [input.shape[k] for k in lead] + list(B) + [input.shape[k] for k in wdims
                                                            if k not in lead]
    vals = values.expand(res_shape)
    if lead:
        vals = vals.movedim(list(range(len(lead))), list(range(len(B), len(B) + len(lead))))
    order = tdims + wdims
    xp = input.permute(order)
    ones = (1,) * len(wdims)
    full = [idx[k].broadcast_to(B).reshape(B + ones) for k in tdims]
    for j, k in enumerate(wdims):
        shape = (1,) * len(B) + (1,) * j + (input.shape[k],) + (1,) * (len(wdims) - j - 1)
        full.append(arange(input.shape[k], device=input.device).reshape(shape))
    out = xp.index_put(tuple(full), vals, accumulate=True)
    inverse = [order.index(k) for k in range(input.ndim)]
    return out.permute(inverse).contiguous()


__all__ += ["_unsafe_masked_index", "_unsafe_masked_index_put_accumulate"]
