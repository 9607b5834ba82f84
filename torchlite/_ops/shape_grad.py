"""Backward formulas of the view ops (views.py), the conversions (conversion.py) and the
joining/splitting ops (joining.py).

Each op that sees an input requiring grad (grad mode on) calls one `record_*` function below,
which keeps what the formula needs on a Node.  Every formula is written with Tensor ops, so
it is itself recorded when create_graph=True (second derivatives).  The gradient of a view
that picks part of its input (select, slice, diagonal, basic indexing) is `embed`: a zero
tensor with the gradient written into the same view, an op whose own backward is the view.

Every view remembers its base (`_base`, set by views.py/indexing.py/joining.py whether or not
the view was recorded), so an in-place write through a view gives the base a CopySlices
history (elementwise_grad.rebase_inplace), even when the base required no grad before."""
import builtins

from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .._tensor import _wrap
from ..autograd.graph import Node, new_node, node_type, record, sum_to
from ..autograd.grad_mode import _state as _grad_state

_INT64 = 5


# ---- helpers -------------------------------------------------------------------------------
def zeros_as(shape, g):
    """A zero tensor of `shape` with g's dtype (a constant: never requires grad)."""
    return _wrap(_A.full(tuple(shape), 0, g._data.dtype, device=g._data))


def arange_array(n, like):
    """0, 1, ..., n-1 as an int64 array on the device of array `like` (positions for
    scatter-style gradients)."""
    a = _A.empty((n,), _INT64, device=like)
    _A.fill_affine(a, 0, 1)
    return a


def needs_input_grad(node, i):
    """Whether input i of node receives a gradient (skip formulas nobody uses)."""
    return node.next_functions[i][0] is not None


# ---- embedding: the gradient of a view that picks part of its input --------------------------
class _EmbedBackward(Node):
    """The backward of `embed` is the view it wrote through."""

    def backward(self, g):
        return (self.view_fn(g),)


def embed(g, shape, view_fn, name):
    """zeros(shape) with g copied into view_fn(zeros): the gradient of the view op view_fn
    (select, narrow, diagonal, basic indexing...) with respect to its input.  It is
    differentiable again (node `<name>Backward0`, whose backward is the view itself); view_fn
    must give non-overlapping views (each input element at most once)."""
    z = zeros_as(shape, g)
    _ew.copy_(view_fn(z)._data, g._data)
    if g._requires_grad and _grad_state.enabled:
        cls = node_type(name.replace("Backward0", "") + "BackwardBackward0", _EmbedBackward)
        record(new_node(cls, view_fn=view_fn), (g,), z)
    return z


def scatter_positions(g, positions, length):
    """A 1-d tensor of `length` zeros with g's elements added at `positions` (an int64 array
    of g's shape; repeated positions add up): the gradient of overlapping strided views."""
    from .indexing import index_put
    buf = zeros_as((length,), g)
    return index_put(buf, (_wrap(positions).reshape(-1),), g.reshape(-1), accumulate=True)


# ---- views that keep the elements in order: the gradient is reshaped back ----------------------
class _ReshapeBack(Node):
    def backward(self, g):
        return (g.reshape(self.in_shape),)


class ViewBackward0(_ReshapeBack):
    pass


class UnsafeViewBackward0(_ReshapeBack):     # reshape that had to copy
    pass


class SqueezeBackward0(_ReshapeBack):        # squeeze()
    pass


class SqueezeBackward1(_ReshapeBack):        # squeeze(dim)
    pass


class SqueezeBackward2(_ReshapeBack):        # squeeze(dims)
    pass


class UnsqueezeBackward0(_ReshapeBack):
    pass


class AliasBackward0(_ReshapeBack):          # the same view (x[...], view(same dtype))
    pass


def record_reshape(input, out, cls):
    record(new_node(cls, in_shape=input._data.shape), (input,), out)


# ---- permutations ------------------------------------------------------------------------------
class PermuteBackward0(Node):
    def backward(self, g):
        return (g.permute(self.inverse),)


def record_permute(input, out, dims):
    nd = len(dims)
    inverse = [0] * nd
    for i, d in enumerate(dims):
        inverse[d % nd] = i
    record(new_node(PermuteBackward0, inverse=tuple(inverse)), (input,), out)


class TransposeBackward0(Node):
    def backward(self, g):
        return (g.transpose(self.dim0, self.dim1),)


def record_transpose(input, out, dim0, dim1):
    record(new_node(TransposeBackward0, dim0=dim0, dim1=dim1), (input,), out)


class TBackward0(Node):
    def backward(self, g):
        return (g.t(),)


def record_t(input, out):
    record(TBackward0(), (input,), out)


# ---- expand: broadcast dims are summed -----------------------------------------------------------
class ExpandBackward0(Node):
    def backward(self, g):
        return (sum_to(g, self.in_shape),)


def record_expand(input, out):
    record(new_node(ExpandBackward0, in_shape=input._data.shape), (input,), out)


# ---- views that pick part of the input -----------------------------------------------------------
class _ViewEmbedBack(Node):
    """A view op whose gradient is `embed`: view_fn re-applies the op to a tensor."""

    def backward(self, g):
        return (embed(g, self.in_shape, self.view_fn, self.name()),)


class SliceBackward0(_ViewEmbedBack):
    pass


class SelectBackward0(_ViewEmbedBack):
    pass


class DiagonalBackward0(_ViewEmbedBack):
    pass


class UnfoldBackward0(_ViewEmbedBack):
    pass


def record_embed_view(input, out, cls, view_fn):
    record(new_node(cls, in_shape=input._data.shape, view_fn=view_fn), (input,), out)


def record_narrow(input, out, dim, start, length):
    record_embed_view(input, out, SliceBackward0, lambda t: t.narrow(dim, start, length))


def record_select(input, out, dim, index):
    record_embed_view(input, out, SelectBackward0, lambda t: t.select(dim, index))


def record_diagonal(input, out, offset, dim1, dim2):
    record_embed_view(input, out, DiagonalBackward0, lambda t: t.diagonal(offset, dim1, dim2))


class UnfoldOverlapBackward(Node):
    """unfold with step < size: windows share elements, whose gradients add up."""

    def backward(self, g):
        n = 1
        for s in self.in_shape:
            n *= s
        positions = arange_array(n, g._data).view(self.in_shape).unfold(self.dim, self.size, self.step)
        return (scatter_positions(g, positions, n).reshape(self.in_shape),)


def record_unfold(input, out, dim, size, step):
    if step >= size:        # disjoint windows: a plain view of the input
        record_embed_view(input, out, UnfoldBackward0, lambda t: t.unfold(dim, size, step))
        return
    cls = node_type("UnfoldBackward0", UnfoldOverlapBackward)
    record(new_node(cls, in_shape=input._data.shape, dim=dim, size=size, step=step), (input,), out)


# ---- as_strided: through the storage ---------------------------------------------------------------
def _extent(shape, strides, offset):
    """The storage range [lo, hi) a geometry touches (empty geometries touch nothing)."""
    if 0 in shape:
        return None
    return offset, offset + builtins.sum((n - 1) * s for n, s in zip(shape, strides)) + 1


class AsStridedBackward0(Node):
    """Scatter-add g into a zero buffer over the storage range both geometries touch, and read
    the input's geometry back from it.  When the input itself holds one storage element
    several times, that element's gradient is shared equally among them (PyTorch's rule)."""

    def backward(self, g):
        in_geo, out_geo = self.in_geo, self.out_geo
        ranges = [r for r in (_extent(*in_geo), _extent(*out_geo)) if r is not None]
        if not ranges:
            return (zeros_as(in_geo[0], g),)
        lo = builtins.min(r[0] for r in ranges)
        length = builtins.max(r[1] for r in ranges) - lo
        span = arange_array(length, g._data)
        pos_out = span.as_strided(out_geo[0], out_geo[1], out_geo[2] - lo)
        buf = scatter_positions(g, pos_out, length)
        if self.in_overlaps:
            from .creation import ones
            pos_in = _wrap(span.as_strided(in_geo[0], in_geo[1], in_geo[2] - lo))
            count = scatter_positions(ones(in_geo[0], dtype=g.dtype, device=g.device), pos_in._data, length)
            buf = buf / count.clamp(min=1)
        return (buf.as_strided(in_geo[0], in_geo[1], buf.storage_offset() + in_geo[2] - lo),)


def record_as_strided(input, out):
    a, r = input._data, out._data
    node = new_node(AsStridedBackward0, in_geo=(a.shape, a.strides, a.offset),
                    out_geo=(r.shape, r.strides, r.offset), in_overlaps=a.has_internal_overlap())
    record(node, (input,), out)


# ---- copies ------------------------------------------------------------------------------------
class FlipBackward0(Node):
    def backward(self, g):
        return (g.flip(self.dims),)


def record_flip(input, out, dims):
    record(new_node(FlipBackward0, dims=dims), (input,), out)


class CloneBackward0(Node):
    def backward(self, g):
        return (g,)


def record_clone(input, out):
    record(CloneBackward0(), (input,), out)


class ToCopyBackward0(Node):
    """dtype/device conversion: the gradient goes back to the input's dtype and device."""

    def backward(self, g):
        return (g.to(self.device, self.dtype),)


def record_to(input, out):
    record(new_node(ToCopyBackward0, dtype=input.dtype, device=input.device), (input,), out)


class CopyBackwards(Node):
    """self.copy_(src): self's old value is overwritten (no gradient); src was broadcast and
    cast to self."""

    def backward(self, g):
        gs = sum_to(g, self.src_shape).to(self.src_dtype) if needs_input_grad(self, 1) else None
        return (None, gs)


def record_copy(old, src, out):
    record(new_node(CopyBackwards, src_shape=src._data.shape, src_dtype=src.dtype), (old, src), out)


class FillBackward0(Node):
    """fill_: self's old value is overwritten, so its gradient is zeros (PyTorch's rule: zeros,
    not None); a tensor value gets the sum of the gradient."""

    def backward(self, g):
        from .creation import zeros_like
        return (zeros_like(g) if needs_input_grad(self, 0) else None,
                g.sum().reshape(self.value_shape) if needs_input_grad(self, 1) else None)


def record_fill(old, value, out):
    from .._tensor import Tensor
    is_tensor = isinstance(value, Tensor)
    node = new_node(FillBackward0, value_shape=value._data.shape if is_tensor else ())
    record(node, (old, value if is_tensor else None), out)


# ---- multi-output views: unbind and the splits ---------------------------------------------------
class UnbindBackward0(Node):
    def backward(self, *grads):
        from .joining import stack
        return (stack(grads, self.dim),)


def record_unbind(input, outs, dim):
    record(new_node(UnbindBackward0, dim=dim), (input,), outs)


class _SplitBack(Node):
    """Pieces [start, stop) of the input along dim.  When they tile the dim in order the
    gradient is their concatenation; otherwise (tensor_split at unordered indices) each piece
    is embedded and the pieces add up."""

    def backward(self, *grads):
        from .joining import cat
        d = self.dim
        if self.tiles:
            return (cat(grads, d),)
        total = None
        for g, (start, stop) in zip(grads, self.bounds):
            part = embed(g, self.in_shape, lambda t, s=start, e=stop: t.narrow(d, s, e - s),
                         "SliceBackward0")
            total = part if total is None else total + part
        return (total,)


class SplitBackward0(_SplitBack):
    pass


class SplitWithSizesBackward0(_SplitBack):
    pass


class TensorSplitBackward0(_SplitBack):
    pass


def record_split(input, outs, dim, bounds, cls):
    """bounds: the (start, stop) of each piece, already clamped to the dim."""
    size = input._data.shape[dim]
    tiles, pos = True, 0
    for start, stop in bounds:
        tiles = tiles and start == pos
        pos = stop
    tiles = tiles and pos == size
    record(new_node(cls, dim=dim, bounds=bounds, tiles=tiles, in_shape=input._data.shape),
           (input,), outs)


# ---- joining -----------------------------------------------------------------------------------
class CatBackward0(Node):
    def backward(self, g):
        grads, start = [], 0
        for i, (size, shape, dtype) in enumerate(self.pieces):
            if size is None:        # a skipped legacy (0,)-shaped input
                grads.append(zeros_as(shape, g).to(dtype) if needs_input_grad(self, i) else None)
                continue
            grads.append(g.narrow(self.dim, start, size).to(dtype) if needs_input_grad(self, i) else None)
            start += size
        return tuple(grads)


def record_cat(tensors, out, dim):
    nd = out._data.ndim
    pieces = [(None if (t._data.ndim == 1 and t._data.shape[0] == 0 and nd != 1)
               else t._data.shape[dim], t._data.shape, t.dtype) for t in tensors]
    record(new_node(CatBackward0, dim=dim, pieces=pieces), tuple(tensors), out)


class StackBackward0(Node):
    def backward(self, g):
        return tuple(g.select(self.dim, i).to(dt) if needs_input_grad(self, i) else None
                     for i, dt in enumerate(self.dtypes))


def record_stack(tensors, out, dim):
    record(new_node(StackBackward0, dim=dim, dtypes=[t.dtype for t in tensors]), tuple(tensors), out)


class _RepeatBack(Node):
    """The result was `src` (the input viewed with size-1 dims where the copies go) expanded
    to `big` and copied: the copies' gradients add up (sum_to)."""

    def backward(self, g):
        return (sum_to(g.reshape(self.big), self.src_shape).reshape(self.in_shape),)


class RepeatBackward0(_RepeatBack):
    pass


class RepeatInterleaveBackward0(_RepeatBack):
    pass


def record_repeat(input, out, src_shape, big, cls):
    record(new_node(cls, src_shape=src_shape, big=big, in_shape=input._data.shape), (input,), out)


class RollBackward0(Node):
    def backward(self, g):
        return (g.roll(self.back, self.dims),)


def record_roll(input, out, shifts_by_dim):
    dims = tuple(shifts_by_dim)
    back = tuple(-s for s in shifts_by_dim.values())
    record(new_node(RollBackward0, dims=dims, back=back), (input,), out)


class TrilBackward0(Node):
    def backward(self, g):
        return (g.tril(self.k),)


class TriuBackward0(Node):
    def backward(self, g):
        return (g.triu(self.k),)


def record_triangle(input, out, k, upper):
    record(new_node(TriuBackward0 if upper else TrilBackward0, k=k), (input,), out)


class DiagEmbedBackward0(Node):
    def backward(self, g):
        return (g.diagonal(self.offset, self.dim1, self.dim2),)


def record_diag_embed(input, out, offset, dim1, dim2):
    record(new_node(DiagEmbedBackward0, offset=offset, dim1=dim1, dim2=dim2), (input,), out)


class BlockDiagBackward0(Node):
    def backward(self, g):
        grads = []
        for i, ((r, c, h, w), shape, dtype) in enumerate(self.blocks):
            grads.append(g.narrow(0, r, h).narrow(1, c, w).reshape(shape).to(dtype)
                         if needs_input_grad(self, i) else None)
        return tuple(grads)


def record_block_diag(tensors, out, blocks):
    """blocks: (row, col, height, width) of each tensor's block in out."""
    node = new_node(BlockDiagBackward0, blocks=[(b, t._data.shape, t.dtype)
                                                for b, t in zip(blocks, tensors)])
    record(node, tuple(tensors), out)


# ---- in-place ops on tensors in a graph ----------------------------------------------------------
def rebase(self, name, out_of_place, *operands):
    """Run an in-place op on a tensor that is part of a graph (or is written with a value that
    is): out_of_place(old) computes the result, which replaces self's value and history
    (elementwise_grad.rebase_inplace; a leaf requiring grad is refused, as in PyTorch)."""
    from .elementwise_grad import check_inplace, rebase_inplace
    check_inplace(self, name, *operands)
    return rebase_inplace(self, out_of_place)
