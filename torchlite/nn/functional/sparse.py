"""Lookup tables: embedding (with padding_idx, max_norm, scale_grad_by_freq), embedding_bag and
one_hot.

embedding is one op: the forward selects rows of the weight (index_select), and its node
(EmbeddingBackward0) adds each output row's gradient into the row it came from (index_add, so
the gradient is itself differentiable); the padding row gets none.  Only dense gradients exist
(sparse=True is refused)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _dtype as D
from ..._tensor import _wrap
from ..._dispatch import elementwise as _ew
from ..._ops import elementwise as _P
from ..._ops.creation import zeros as _zeros, ones as _ones, arange as _arange
from ..._ops.reduction import vector_norm as _vector_norm
from ..._ops.sorting import searchsorted as _searchsorted, unique as _unique
from ...autograd.grad_mode import _state as _grad_state, no_grad as _no_grad
from ...autograd.graph import Node, needs_grad, record
from ..._ops._kit import tensor_arg
from ..._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["embedding", "embedding_bag", "one_hot"]


class EmbeddingBackward0(Node):
    """grad_weight[i] = the sum of the output rows that looked up row i (none for padding_idx;
    divided by how often i occurs in the batch with scale_grad_by_freq)."""

    def backward(self, g):
        idx = self.saved("indices").reshape(-1)
        rows = g.reshape(-1, self.dim)
        if self.padding_idx >= 0:
            rows = _P.where((idx != self.padding_idx).unsqueeze(1), rows, 0.0)
        if self.scale_grad_by_freq:
            counts = _zeros(self.num_weights, dtype=g.dtype, device=g.device).index_add(
                0, idx, _ones(idx.shape[0], dtype=g.dtype, device=g.device))
            rows = rows / counts.index_select(0, idx).unsqueeze(1)
        return (_zeros(self.num_weights, self.dim, dtype=g.dtype, device=g.device).index_add(0, idx, rows),)


def _check_indices(input, op):
    tensor_arg(input, op, "input")
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following "
                           f"scalar types: Long, Int; but got "
                           f"torch.{_ew._TORCH_NAMES[input._data.dtype]}Tensor instead (while "
                           f"checking arguments for {op})")


def _padding_index(padding_idx, num_weights):
    """padding_idx as a row number (negative counts from the end), or -1 for none."""
    if padding_idx is None:
        return -1
    if padding_idx >= num_weights or padding_idx < -num_weights:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num_weights if padding_idx < 0 else padding_idx


def _renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place and outside the graph, the looked-up rows whose norm exceeds max_norm
    to norm max_norm (PyTorch's embedding_renorm_, with its 1e-7)."""
    with _no_grad():
        rows_idx = _unique(indices.reshape(-1))
        rows = weight.index_select(0, rows_idx)
        norms = _vector_norm(rows, norm_type, 1, keepdim=True)
        scale = _P.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, rows_idx, rows * scale.to(rows.dtype))


def _lookup(weight, flat):
    """weight's rows at `flat`, with PyTorch's error for an index out of range."""
    try:
        return weight.index_select(0, flat)
    except RuntimeError as e:
        if "out of" in str(e):
            raise IndexError("index out of range in self") from None
        raise


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of weight ([num_embeddings, embedding_dim]) at the indices in input: output
    shape input.shape + (embedding_dim,).  padding_idx's row receives no gradient; max_norm
    renormalises the looked-up rows of weight in place first."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(embedding, locals())
    _check_indices(input, "embedding")
    tensor_arg(weight, "embedding", "weight")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if sparse:
        raise RuntimeError("embedding: sparse gradients are not supported by torchlite; use "
                           "sparse=False")
    num_weights, dim = weight.shape
    pad = _padding_index(padding_idx, num_weights)
    if max_norm is not None:
        _renorm_(weight, input.contiguous(), max_norm, norm_type)
    rows = _lookup(weight.detach(), input.reshape(-1))
    # reshaped at the array level: the result is a tensor of its own, not a view of `rows`
    out = _wrap(rows._data.view(tuple(input.shape) + (dim,)))
    if weight._requires_grad and (_grad_state.enabled or needs_grad(weight)):
        node = EmbeddingBackward0()
        node.save(indices=input)
        node.num_weights, node.dim, node.padding_idx = num_weights, dim, pad
        node.scale_grad_by_freq = bool(scale_grad_by_freq)
        record(node, (weight,), out)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """An int64 tensor of shape tensor.shape + (num_classes,), 1 at each value's position
    (num_classes=-1: max value + 1)."""
    tensor_arg(tensor, "one_hot", "input")
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    shape = tuple(tensor.shape)
    if tensor.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return _zeros(shape + (num_classes,), dtype=D.int64, device=tensor.device)
    if tensor.is_meta and num_classes != -1:    # (-1 reads the values: raises, as PyTorch)
        return _zeros(shape + (num_classes,), dtype=D.int64, device=tensor.device)
    if int(tensor.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    top = int(tensor.max())
    if num_classes == -1:
        num_classes = top + 1
    elif top >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = _zeros(shape + (num_classes,), dtype=D.int64, device=tensor.device)
    return out.scatter_(-1, tensor.unsqueeze(-1), 1)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embeddings without materialising the lookups per bag:
    a 2-d input holds one bag per row; a 1-d input is cut into bags at `offsets`.  Entries equal
    to padding_idx are left out (an empty bag gives zeros); per_sample_weights (mode 'sum')
    scales each looked-up row."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(embedding_bag, locals())
    _check_indices(input, "embedding_bag")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({list(input.shape)})")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is "
                             f"a mini-batch of fixed length sequences. However, found offsets of "
                             f"type {type(offsets).__name__}")
        offsets = _arange(0, input.numel(), input.shape[1], dtype=input.dtype, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on the Pytorch "
                                  f"GitHub.")
    _check_offsets(offsets, input.numel())
    return _bags(input, weight, offsets.to(D.int64), max_norm, norm_type, scale_grad_by_freq,
                 mode, per_sample_weights, include_last_offset, padding_idx)[0]


def _check_offsets(offsets, n):
    """PyTorch's checks of the bag offsets over n indices: they start at 0, never decrease and
    end at most at n (meta tensors have no values to check)."""
    if not offsets.numel() or offsets.is_meta:
        return
    if int(offsets[0]) != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has "
                           f"to start from position 0. However, got {int(offsets[0])}")
    last = int(offsets[-1])
    if last > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {last}")
    if offsets.numel() > 1 and bool((offsets[1:] < offsets[:-1]).any()):
        raise RuntimeError(f"embedding_bag: offsets must not decrease, got "
                           f"{offsets.tolist() if offsets.numel() <= 16 else 'a decrease'}")


def embedding_bag_with_indices(weight, indices, offsets, scale_grad_by_freq, mode, per_sample_weights,
                               include_last_offset, padding_idx):
    """embedding_bag (1-d indices cut at offsets; mode 'sum', 'mean' or 'max') with the index
    tensors ATen's form returns: (output, offset2bag, bag_size, max_indices).  offset2bag: the
    bag of each index; bag_size: the indices counted in each bag (padding left out);
    max_indices: for 'max', the weight row that gave each output element (0 in an empty bag),
    else bag_size."""
    _check_indices(indices, "embedding_bag")
    tensor_arg(offsets, "embedding_bag", "offsets")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding_bag: weight has to be a 2-d tensor, got shape {list(weight.shape)}")
    if offsets.ndim != 1:
        raise RuntimeError(f"embedding_bag: offsets has to be a 1-d tensor, got shape {list(offsets.shape)}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise RuntimeError("embedding_bag: per_sample_weights only supported with mode='sum'")
        if per_sample_weights.numel() != indices.numel():
            raise RuntimeError(f"embedding_bag: per_sample_weights ({list(per_sample_weights.shape)}) "
                               f"must have one element per index ({list(indices.shape)})")
        per_sample_weights = per_sample_weights.reshape(-1)
    _check_offsets(offsets, indices.numel())
    return _bags(indices.reshape(-1), weight, offsets.to(D.int64), None, 2, scale_grad_by_freq,
                 mode, per_sample_weights, include_last_offset, padding_idx, with_indices=True)


def _bags(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, psw,
          include_last_offset, padding_idx, with_indices=False):
    """(output,) of embedding_bag over 1-d input, or with with_indices (output, offset2bag,
    bag_size, max_indices) as embedding_bag_with_indices describes."""
    n_bags = max(offsets.numel() - 1, 0) if include_last_offset else offsets.numel()
    dim = weight.shape[1]
    bag_of = _searchsorted(offsets, _arange(input.numel(), device=input.device), right=True) - 1
    offset2bag = bag_of
    rows = embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)
    if psw is not None:
        rows = rows * psw.unsqueeze(1)
    kept_input = input
    if not input.is_meta:     # on meta (no values) every entry counts: the shapes are the same
        keep = (bag_of >= 0) & (bag_of < n_bags)    # (entries before the first offset -- there
        # are none but with no offsets at all -- and, with include_last_offset, past the last bag)
        if padding_idx is not None:
            keep = keep & (input != _padding_index(padding_idx, weight.shape[0]))
        kept = keep.nonzero().reshape(-1)
        rows, bag_of = rows.index_select(0, kept), bag_of.index_select(0, kept)
        kept_input = input.index_select(0, kept)
    zeros = _zeros(n_bags, dim, dtype=weight.dtype, device=weight.device)
    first = None
    if mode == "max":
        # each bag's maximum is the row of its first maximal entry, per feature, so the gradient
        # goes to that one row (as PyTorch's, through max_indices), ties included
        first, found = _first_max_positions(rows.detach(), bag_of, n_bags, dim)
        out = zeros if rows.shape[0] == 0 else _P.where(found, rows.gather(0, first), 0.0)
    else:
        out = zeros.index_add(0, bag_of, rows)
        if mode == "mean":
            counts = _zeros(n_bags, dtype=weight.dtype, device=weight.device).index_add(
                0, bag_of, _ones(bag_of.numel(), dtype=weight.dtype, device=weight.device))
            out = out / counts.clamp(min=1).unsqueeze(1)
    if not with_indices:
        return (out,)
    with _no_grad():
        bag_size = _zeros(n_bags, dtype=D.int64, device=input.device).index_add(
            0, bag_of, _ones(bag_of.numel(), dtype=D.int64, device=input.device))
        if mode == "max":
            max_indices = (_zeros(n_bags, dim, dtype=D.int64, device=input.device)
                           if rows.shape[0] == 0 or kept_input.is_meta else
                           _P.where(found, kept_input.to(D.int64)[first], 0))
        else:
            max_indices = bag_size.clone()
    return out, offset2bag, bag_size, max_indices


def _first_max_positions(rows, bag_of, n_bags, dim):
    """([n_bags, dim] int64, [n_bags, dim] bool): per bag and feature, the position among
    `rows` of the bag's first entry holding its maximum (0 where the bag is empty), and
    whether the bag has one."""
    k = rows.shape[0]
    if k == 0 or rows.is_meta:
        none = _zeros(n_bags, dim, dtype=D.int64, device=rows.device)
        return none, none.bool() if k == 0 else none == 0
    index = bag_of.unsqueeze(1).expand(-1, dim)
    top = _zeros(n_bags, dim, dtype=rows.dtype, device=rows.device).scatter_reduce(
        0, index, rows, "amax", include_self=False)
    position = _arange(k, device=rows.device).unsqueeze(1).expand(-1, dim)
    hit = rows == top.index_select(0, bag_of)
    first = _zeros(n_bags, dim, dtype=D.int64, device=rows.device).fill_(k).scatter_reduce(
        0, index, _P.where(hit, position, k), "amin")
    found = first < k
    return first.clamp(max=k - 1), found


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
# The lookup is linear in the weight: the tangent's rows at the same indices.
JVP = {
    EmbeddingBackward0: lambda node, inputs, t, meta: [
        t[0].index_select(0, node.saved("indices").reshape(-1)).reshape(meta[0][0])],
}
