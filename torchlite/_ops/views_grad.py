"""Backward formulas of the view ops (views.py), and the helpers every shape-like formula uses
(zeros_as, embed, scatter_positions; joining_grad, indexing_grad and sorting_grad build on them).

Each op that sees an input requiring grad (grad mode on) calls one `record_*` function below,
which keeps what the formula needs on a Node.  Every formula is written with Tensor methods, so
it is itself recorded when create_graph=True (second derivatives) and this file imports no
op module.  The gradient of a view that picks part of its input (select, slice, diagonal,
basic indexing) is `embed`: a zero tensor with the gradient written into the same view, an op
whose own backward is the view.

Every view remembers its base (`_base`, set by views.py/indexing.py/joining.py whether or not
the view was recorded), so an in-place write through a view gives the base a CopySlices
history (elementwise_grad.rebase_inplace), even when the base required no grad before."""
import builtins

from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .._tensor import _wrap
from ..autograd.graph import Node, needs_grad, new_node, node_type, record, sum_to
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
    if g._requires_grad and (_grad_state.enabled or needs_grad(g)):
        cls = node_type(name.replace("Backward0", "") + "BackwardBackward0", _EmbedBackward)
        record(new_node(cls, view_fn=view_fn), (g,), z)
    return z


def scatter_positions(g, positions, length):
    """A 1-d tensor of `length` zeros with g's elements added at `positions` (an int64 array
    of g's shape; repeated positions add up): the gradient of overlapping strided views."""
    buf = zeros_as((length,), g)
    return buf.index_put((_wrap(positions).reshape(-1),), g.reshape(-1), accumulate=True)


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
            pos_in = span.as_strided(in_geo[0], in_geo[1], in_geo[2] - lo)
            count = scatter_positions(g.new_ones(in_geo[0]), pos_in, length)
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


# ---- forward mode: J t for each node above (autograd/forward_ad.py reads JVP) ------------------
# A view is linear in its input, so the tangent of its output is the same view of the input's
# tangent.  Keys are node classes (a subclass takes its base's rule); each rule maps
# (node, inputs, tangents, meta) to the outputs' tangents, meta[i] = (shape, dtype, device).
def _inverse_permutation(inverse):
    return [inverse.index(i) for i in range(len(inverse))]


def _as_strided_jvp(node, inputs, t, meta):
    """The tangent written in the input's geometry into a buffer over the storage range both
    geometries touch, and read back in the output's (zeros where the output reads storage the
    input does not cover).  An input holding one storage element several times has no single
    tangent there: left to the fallback."""
    if node.in_overlaps:
        return None
    in_geo, out_geo = node.in_geo, node.out_geo
    ranges = [r for r in (_extent(*in_geo), _extent(*out_geo)) if r is not None]
    if not ranges:
        return [zeros_as(out_geo[0], t[0])]
    lo = builtins.min(r[0] for r in ranges)
    buf = zeros_as((builtins.max(r[1] for r in ranges) - lo,), t[0])
    buf.as_strided(in_geo[0], in_geo[1], in_geo[2] - lo).copy_(t[0])
    return [buf.as_strided(out_geo[0], out_geo[1], out_geo[2] - lo)]


def _embed_jvp(node, inputs, t, meta):
    """embed (a view's gradient): zeros with the tangent written through the same view."""
    z = zeros_as(meta[0][0], t[0])
    _ew.copy_(node.view_fn(z)._data, t[0]._data)
    return [z]


JVP = {
    AsStridedBackward0: _as_strided_jvp,
    _EmbedBackward: _embed_jvp,
    _ReshapeBack: lambda node, inputs, t, meta: [t[0].reshape(meta[0][0])],
    PermuteBackward0: lambda node, inputs, t, meta: [t[0].permute(_inverse_permutation(list(node.inverse)))],
    TransposeBackward0: lambda node, inputs, t, meta: [t[0].transpose(node.dim0, node.dim1)],
    TBackward0: lambda node, inputs, t, meta: [t[0].t()],
    ExpandBackward0: lambda node, inputs, t, meta: [t[0].expand(meta[0][0])],
    _ViewEmbedBack: lambda node, inputs, t, meta: [node.view_fn(t[0])],
    UnfoldOverlapBackward: lambda node, inputs, t, meta: [t[0].unfold(node.dim, node.size, node.step)],
    FlipBackward0: lambda node, inputs, t, meta: [t[0].flip(node.dims)],
    CloneBackward0: lambda node, inputs, t, meta: [t[0].clone()],
}
