"""Sorting and searching: sort, argsort, msort, topk, kthvalue, unique, unique_consecutive,
searchsorted, bucketize, isin.

The kernels are in torchlite/_core/sorting.pyx (rows in parallel; per row a stable radix sort
over order-preserving integer keys, a heap or quickselect for top-k).  Order is PyTorch's:
NaN is larger than every number, -0.0 equals 0.0, and sorting is always stable, so
`stable=False` gives the same (valid) answer as `stable=True`.  topk(sorted=False) also
returns its values sorted, which is one of the orders PyTorch allows."""
from __future__ import annotations

import builtins

from .. import _dtype as D
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .._dispatch import sorting as _S
from .._tensor import Tensor, _wrap, _wrap_dim, _as_pyscalar
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import needs_grad, record_not_differentiable
from . import _register
from . import sorting_grad as _G
from ._kit import check_out_memory, int_arg, tensor_arg, no_out_with_grad, write_out, result

_TORCH_NAMES = _ew._TORCH_NAMES


from .. import return_types  # noqa: E402  (the named result tuples)

_RT_sort, _RT_topk, _RT_kthvalue = return_types.sort, return_types.topk, return_types.kthvalue
_RT_mode = return_types.mode


# ---- helpers -------------------------------------------------------------------------------
def _pair(rt, values, indices, out, op, input, node_cls, dim, keepdim=True):
    """(values, indices) as the op's named tuple, or written into out=.  The values were picked
    from input along dim at indices: recorded as node_cls when input requires grad."""
    if out is None:
        v, i = _wrap(values), _wrap(indices)
        if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
            _G.record_picked(node_cls, input, v, i, dim, keepdim)
        return rt(v, i)
    no_out_with_grad(op, input)
    if op in _OUT_MAY_NOT_ALIAS_INPUT and isinstance(out, (tuple, list)):
        check_out_memory(out, (input,))
    return write_out(rt(values, indices), out, op)


# the (values, indices) ops whose out= tensors may share no memory with the input
_OUT_MAY_NOT_ALIAS_INPUT = {"kthvalue"}


# ---- sort, argsort, msort ------------------------------------------------------------------
@_register("sort")
def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool | None = False, *,
         out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """(values, indices) sorted along dim, ascending unless `descending`.  NaN sorts as the
    largest value; equal elements keep their order (the sort is always stable)."""
    tensor_arg(input, "sort")
    d = _wrap_dim(dim, input.ndim)
    values, indices = _S.sort(input._data, d, builtins.bool(descending))
    return _pair(_RT_sort, values, indices, out, "sort", input, _G.SortBackward0, d)


@_register("argsort")
def argsort(input: Tensor, dim: int = -1, descending: bool = False,
            stable: bool | None = False) -> Tensor:
    """The indices that sort input along dim (see sort)."""
    tensor_arg(input, "argsort")
    d = _wrap_dim(dim, input.ndim)
    return _wrap(_S.sort(input._data, d, builtins.bool(descending), False)[1])


@_register("msort")
def msort(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input sorted along dim 0 (the values only)."""
    tensor_arg(input, "msort")
    values, indices = _S.sort(input._data, 0, False)
    if out is not None:
        no_out_with_grad("msort", input)
        return write_out(values, out, "msort")
    v = _wrap(values)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _G.record_picked(_G.SortBackward0, input, v, _wrap(indices), 0, outputs=v)
    return v


# ---- topk, kthvalue ------------------------------------------------------------------------
@_register("topk")
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *,
         out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """(values, indices) of the k largest (or smallest) elements along dim, largest first
    (smallest first).  NaN counts as the largest value; ties go to the lower index."""
    tensor_arg(input, "topk")
    d = _wrap_dim(dim, input.ndim)
    values, indices = _S.topk(input._data, int_arg(k, "k", "topk"), d, builtins.bool(largest))
    return _pair(_RT_topk, values, indices, out, "topk", input, _G.TopkBackward0, d)


@_register("kthvalue")
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *,
             out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """(values, indices) of the k-th smallest element along dim (k counts from 1)."""
    tensor_arg(input, "kthvalue")
    d = _wrap_dim(dim, input.ndim)
    values, indices = _S.kthvalue(input._data, int_arg(k, "k", "kthvalue"), d)
    if not keepdim and input.ndim > 0:
        values, indices = values.squeeze((d,)), indices.squeeze((d,))
    return _pair(_RT_kthvalue, values, indices, out, "kthvalue", input, _G.KthvalueBackward0, d,
                 keepdim)


@_register("mode")
def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *,
         out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """(values, indices): the most frequent value along dim and where it last occurs; of
    several equally frequent values the smallest, as PyTorch.  NaNs never equal each other, so
    each counts once."""
    tensor_arg(input, "mode")
    d = _wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        return _pair(_RT_mode, input.detach()._data, _A.full((), 0, D.int64.code), out, "mode", input,
                     _G.ModeBackward0, 0, True)
    n = input.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size "
                         f"(input of shape {tuple(input.shape)})")
    from .creation import arange
    # sorted stably, equal values form runs; a run's length is counted at its last position,
    # which also holds that value's last index in the input
    v, ix = input.detach().sort(d, stable=True)
    shape = [1] * input.ndim
    shape[d] = n
    pos = arange(n, device=input.device).reshape(shape)
    first, final = pos == 0, pos == n - 1
    starts = (v != v.roll(1, d)) | first                       # NaN != NaN: a run of its own
    ends = (v != v.roll(-1, d)) | final
    run_start = (starts.long() * pos).cummax(d).values
    counts = (pos - run_start + 1) * ends.long()
    best = counts.argmax(d, keepdim=True)                      # the first maximum: the smallest
    values, indices = v.gather(d, best)._data, ix.gather(d, best)._data
    if not keepdim:
        values, indices = values.squeeze((d,)), indices.squeeze((d,))
    return _pair(_RT_mode, values, indices, out, "mode", input, _G.ModeBackward0, d, keepdim)


# ---- unique --------------------------------------------------------------------------------
def _unique_result(values, inverse, counts, return_inverse, return_counts):
    res = [_wrap(values)]
    if return_inverse:
        res.append(_wrap(inverse))
    if return_counts:
        res.append(_wrap(counts))
    return res[0] if len(res) == 1 else tuple(res)


def _unique_impl(input, dim, consecutive, return_inverse, return_counts, op):
    tensor_arg(input, op)
    a = input._data
    if dim is None:
        values, inverse, counts = _S.unique(a, not consecutive, builtins.bool(return_inverse),
                                            builtins.bool(return_counts))
    else:
        d = _wrap_dim(dim, input.ndim)
        values, inverse, counts = _S.unique_dim(a, d, not consecutive,
                                                builtins.bool(return_inverse),
                                                builtins.bool(return_counts))
        if d != 0:      # the kernel returns the slices stacked along dim 0: move it back
            order = builtins.list(builtins.range(1, a.ndim))
            order.insert(d, 0)
            values = _ew.contiguous(values.permute(tuple(order)))
    res = _unique_result(values, inverse, counts, return_inverse, return_counts)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):     # as in PyTorch: an error in backward
        record_not_differentiable(op, (input,), res, name="NotImplemented")
    return res


@_register("unique")
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
    """The distinct elements of input (flattened), sorted; or with `dim`, the distinct slices
    along dim in lexicographic order.  Optionally also the index of each input element's
    value in the result (inverse) and how often each value occurs (counts).  Elements compare
    with ==: -0.0 equals 0.0 and every NaN is distinct (slices along a dim treat NaN as equal
    to NaN).  sorted=False also returns sorted values, which PyTorch allows."""
    return _unique_impl(input, dim, False, return_inverse, return_counts, "unique")


@_register("unique_consecutive")
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
    """unique over runs of equal neighbours only: each run becomes one value, in order."""
    return _unique_impl(input, dim, True, return_inverse, return_counts, "unique_consecutive")


# ---- searchsorted, bucketize, isin ---------------------------------------------------------
def _scalar_array(x, op, like):
    """A 0-d array holding a Python number (as PyTorch wraps a Scalar argument), on the
    device of array `like`."""
    v = _as_pyscalar(x)
    if isinstance(v, builtins.bool):
        return _A.full((), v, D.bool.code, device=like)
    if isinstance(v, builtins.int):
        return _A.full((), v, D.int64.code, device=like)
    if isinstance(v, builtins.float):
        return _A.full((), v, D.float64.code, device=like)
    raise TypeError(f"{op}(): expected a Tensor or a number, got {type(x).__name__}")


def searchsorted(sorted_sequence: Tensor, input: Tensor | bool | int | float, *,
                 out_int32: bool = False, right: bool = False, side: str | None = None,
                 out: Tensor | None = None, sorter: Tensor | None = None) -> Tensor:
    """For each value of input, the index where it would go in the innermost dim of
    sorted_sequence to keep it sorted: the first position with an element >= value (> value
    when right=True or side='right').  sorted_sequence is 1-d or has input's leading dims.
    With `sorter`, sorted_sequence[sorter] is the sorted order."""
    tensor_arg(sorted_sequence, "searchsorted", "sorted_sequence")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                               f"{side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    values = input._data if isinstance(input, Tensor) else _scalar_array(input, "searchsorted",
                                                                               sorted_sequence._data)
    if sorter is not None:
        tensor_arg(sorter, "searchsorted", "sorter")
    res = _S.searchsorted(sorted_sequence._data, values, builtins.bool(right),
                          sorter._data if sorter is not None else None, builtins.bool(out_int32))
    return result(res, out, "searchsorted")


def bucketize(input: Tensor | bool | int | float, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False, out: Tensor | None = None) -> Tensor:
    """The bucket of each input value among 1-d sorted boundaries: i with
    boundaries[i-1] < x <= boundaries[i] (boundaries[i-1] <= x < boundaries[i] when right)."""
    tensor_arg(boundaries, "bucketize", "boundaries")
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


def isin(elements: Tensor | bool | int | float, test_elements: Tensor | bool | int | float, *,
         assume_unique: bool = False, invert: bool = False) -> Tensor:
    """A bool tensor of elements' shape: whether each element equals (==) some element of
    test_elements (negated with invert).  Either argument may be a number."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    ops = [x._data if isinstance(x, Tensor) else _as_pyscalar(x) for x in (elements, test_elements)]
    code = _ew.result_type(*ops)
    like = elements._data if isinstance(elements, Tensor) else test_elements._data
    e, t = [_A.full((), x, code, device=like) if isinstance(x, (builtins.bool, builtins.int, builtins.float))
            else _ew.cast(x, code) for x in ops]
    return _wrap(_S.isin(e, t, builtins.bool(invert)))


__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "mode", "unique", "unique_consecutive",
           "searchsorted", "bucketize", "isin"]
