"""Backward formulas of the indexing ops (indexing.py) and of the value-selecting sorts
(sorting.py: sort, topk, kthvalue, msort).

The formulas pair up: the gradient of a gather-like op is the matching scatter-like op with
accumulation (gather -> scatter_add, index_select -> index_add, take -> put(accumulate),
advanced indexing -> index_put(accumulate), masked_select -> masked_scatter) and the other
way round, so second derivatives come from the same table.  Index tensors are saved with
their version: changing one in place before backward is an error, as in PyTorch."""
from ..autograd.graph import Node, new_node, node_type, record, record_not_differentiable, sum_to
from .views_grad import embed, needs_input_grad, zeros_as


def _needs(node, i):
    return needs_input_grad(node, i)


def _shape(t):
    return t._data.shape


def _leading_part(g, shape):
    """g (computed for the leading `g.shape` part of a tensor of `shape`, as gather gives for
    a src larger than its index) embedded in zeros of `shape`."""
    if tuple(_shape(g)) == tuple(shape):
        return g

    def part(t):
        for d, n in enumerate(_shape(g)):
            t = t.narrow(d, 0, n)
        return t
    return embed(g, shape, part, "SliceBackward0")


# ---- tensor[index] and index_put ---------------------------------------------------------------
class IndexBackward0(Node):
    """Advanced indexing: the gradient is added back at the indexed positions (repeated
    indices add up)."""

    def backward(self, g):
        from .indexing import index_put_items
        return (index_put_items(zeros_as(self.in_shape, g), self.items, self.used, g, True),)


def _basic_index_node(items):
    """PyTorch names the node of a basic index after the last view it applied."""
    name = "AliasBackward0"
    for i in items:
        if type(i) is slice:
            name = "SliceBackward0"
        elif type(i) is int:
            name = "SelectBackward0"
        elif i is None:
            name = "UnsqueezeBackward0"
    from .views_grad import _ViewEmbedBack
    return node_type(name, _ViewEmbedBack)


def record_getitem(self, out, items, used, advanced):
    """Basic indexing is a view (its gradient embeds g in the same view of zeros); advanced
    indexing adds g back with index_put(accumulate=True)."""
    if advanced:
        node = new_node(IndexBackward0, in_shape=_shape(self), items=items, used=used)
    else:
        from .indexing import getitem
        key = tuple(items)
        node = new_node(_basic_index_node(items), in_shape=_shape(self),
                        view_fn=lambda t: getitem(t, key))
    record(node, (self,), out)


class _IndexPutBack(Node):
    """self[items] = value (+= with accumulate): the overwritten region of self gets no
    gradient; value gets the region's gradient, summed over the dims it was broadcast on."""

    def backward(self, g):
        from .indexing import getitem, index_put_items
        gi = gv = None
        if _needs(self, 0):
            gi = g if self.accumulate else index_put_items(g, self.items, self.used, 0, False)
        if _needs(self, 1):
            gv = getitem(g, tuple(self.items))
            gv = sum_to(gv, self.value_stripped).reshape(self.value_shape).to(self.value_dtype)
        return gi, gv


IndexPutBackward0 = node_type("IndexPutBackward0", _IndexPutBack)
CopySlices = node_type("CopySlices", _IndexPutBack)      # x[basic index] = value


def record_index_put(old, value, out, items, used, accumulate, advanced):
    from .._tensor import Tensor
    is_tensor = isinstance(value, Tensor)
    vshape = _shape(value) if is_tensor else None
    stripped = vshape
    while stripped and stripped[0] == 1:     # the value's leading 1s are dropped before broadcasting
        stripped = stripped[1:]
    node = new_node(IndexPutBackward0 if advanced or accumulate else CopySlices, items=items,
                    used=used, accumulate=accumulate, value_shape=vshape, value_stripped=stripped,
                    value_dtype=value.dtype if is_tensor else None)
    record(node, (old, value if is_tensor else None), out)


# ---- gather / scatter ----------------------------------------------------------------------------
class GatherBackward0(Node):
    def backward(self, g):
        from .indexing import scatter_add
        return (scatter_add(zeros_as(self.in_shape, g), self.dim, self.saved("index"), g),)


def record_gather(out, input, dim, index):
    node = new_node(GatherBackward0, in_shape=_shape(input), dim=dim)
    node.save(index=index)
    record(node, (input,), out)


def _src_grad(g, dim, index, src_shape):
    """The gradient of a scatter's src: g at the positions each src element went to (src
    elements beyond the index's shape are unused: zero)."""
    return _leading_part(g.gather(dim, index), src_shape)


class ScatterBackward0(Node):       # scatter(dim, index, src)
    def backward(self, g):
        index = self.saved("index")
        gi = g.scatter(self.dim, index, 0) if _needs(self, 0) else None
        gs = _src_grad(g, self.dim, index, self.src_shape) if _needs(self, 1) else None
        return gi, gs


class ScatterBackward1(Node):       # scatter(dim, index, value)
    def backward(self, g):
        return (g.scatter(self.dim, self.saved("index"), 0), None)


class ScatterAddBackward0(Node):
    def backward(self, g):
        gs = _src_grad(g, self.dim, self.saved("index"), self.src_shape) if _needs(self, 1) else None
        return g, gs


def record_scatter(out, input, dim, index, src, reduce):
    from .._tensor import Tensor
    is_tensor = isinstance(src, Tensor)
    if reduce is not None:
        record_not_differentiable(f"scatter with reduce='{reduce}'", (input, src if is_tensor else None),
                                  out, name="NotImplemented")
        return
    if is_tensor:
        node = new_node(ScatterBackward0, dim=dim, src_shape=_shape(src))
    else:
        node = new_node(ScatterBackward1, dim=dim)
    node.save(index=index)
    record(node, (input, src if is_tensor else None), out)


def record_scatter_add(out, input, dim, index, src):
    node = new_node(ScatterAddBackward0, dim=dim, src_shape=_shape(src))
    node.save(index=index)
    record(node, (input, src), out)


class ScatterReduceBackward0(Node):
    """PyTorch's rules: sum and mean split the gradient over the reduced elements; amax/amin
    share it equally among the elements equal to the result; prod gives each element the
    product of the others (computed without dividing by zero)."""

    def backward(self, g):
        x, src, index = self.saved("x"), self.saved("src"), self.saved("index")
        result = self.saved("result")
        d, reduce = self.dim, self.reduce
        src = _leading_part_view(src, _shape(index))
        if reduce == "sum":
            gx, gs = g, g.gather(d, index)
        elif reduce == "mean":
            from .creation import ones_like
            n = (ones_like(g) if self.include_self else zeros_as(_shape(g), g))
            n = n.scatter_add(d, index, ones_like(src))
            n = n.masked_fill(n == 0, 1)
            gx = g / n
            gs = gx.gather(d, index)
        elif reduce in ("amax", "amin"):
            value = result.gather(d, index)
            x_is = (x == result).to(g.dtype)
            src_is = (src == value).to(g.dtype)
            share = g / x_is.scatter_add(d, index, src_is)
            gx = x_is * share
            gs = src_is * share.gather(d, index)
        else:
            gx, gs = self._prod_grads(g, x, src, index, result)
        if not self.include_self:
            gx = gx.scatter(d, index, 0)
        return gx, _leading_part(gs, self.src_shape)

    def _prod_grads(self, g, x, src, index, result):
        d = self.dim
        x_masked = x.masked_fill(x == 0, 1)
        gx = g * x_masked.scatter_reduce(d, index, src, "prod", include_self=self.include_self) / x_masked
        src_zero = src == 0
        zeros_per_target = zeros_as(_shape(x), g).scatter_add(d, index, src_zero.to(g.dtype))
        single_zero = src_zero & (zeros_per_target.gather(d, index) == 1)
        # a src element that is the only zero of its target: the product of the others
        others = x.scatter_reduce(d, index, src.masked_fill(single_zero, 1), "prod",
                                  include_self=self.include_self)
        from .elementwise import where
        gs = where(single_zero, (g * others).gather(d, index),
                   (g * result).gather(d, index) / src.masked_fill(src_zero, 1))
        return gx, gs


def _leading_part_view(t, shape):
    for k, n in enumerate(shape):
        if t.shape[k] != n:
            t = t.narrow(k, 0, n)
    return t


def record_scatter_reduce(out, input, dim, index, src, reduce, include_self):
    node = new_node(ScatterReduceBackward0, dim=dim, reduce=reduce, include_self=include_self,
                    src_shape=_shape(src))
    node.save(x=input, src=src, index=index)
    node.save_output(result=out)
    record(node, (input, src), out)


# ---- index_select / index_add / index_copy / index_fill -------------------------------------------
class IndexSelectBackward0(Node):
    def backward(self, g):
        return (zeros_as(self.in_shape, g).index_add(self.dim, self.saved("index"), g),)


def record_index_select(out, input, dim, index):
    node = new_node(IndexSelectBackward0, in_shape=_shape(input), dim=dim)
    node.save(index=index)
    record(node, (input,), out)


class IndexAddBackward0(Node):
    def backward(self, g):
        gs = None
        if _needs(self, 1):
            gs = g.index_select(self.dim, self.saved("index")).reshape(self.source_shape)
            if self.alpha != 1:
                gs = gs * self.alpha
        return g, gs


class IndexCopyBackward0(Node):
    def backward(self, g):
        index = self.saved("index")
        gi = g.index_fill(self.dim, index, 0) if _needs(self, 0) else None
        gs = g.index_select(self.dim, index).reshape(self.source_shape) if _needs(self, 1) else None
        return gi, gs


def record_index_add(out, input, dim, index, source, alpha, copy):
    node = new_node(IndexCopyBackward0 if copy else IndexAddBackward0, dim=dim, alpha=alpha,
                    source_shape=_shape(source))
    node.save(index=index)
    record(node, (input, source), out)


class _IndexFillBack(Node):
    def backward(self, g):
        index = self.saved("index")
        gi = g.index_fill(self.dim, index, 0) if _needs(self, 0) else None
        gv = None
        if _needs(self, 1):     # a value tensor: every filled position, once
            gv = g.index_select(self.dim, index.reshape(-1).unique()).sum()
        return gi, gv


IndexFillBackward0 = node_type("IndexFillBackward0", _IndexFillBack)     # a number
IndexFillBackward1 = node_type("IndexFillBackward1", _IndexFillBack)     # a 0-d tensor


def record_index_fill(out, input, dim, index, value):
    from .._tensor import Tensor
    is_tensor = isinstance(value, Tensor)
    node = new_node(IndexFillBackward1 if is_tensor else IndexFillBackward0, dim=dim)
    node.save(index=index)
    record(node, (input, value if is_tensor else None), out)


# ---- masks ----------------------------------------------------------------------------------------
class MaskedFillBackward0(Node):
    def backward(self, g):
        mask = self.saved("mask")
        gi = sum_to(g.masked_fill(mask, 0), self.in_shape) if _needs(self, 0) else None
        gv = g.masked_select(mask).sum() if _needs(self, 1) else None
        return gi, gv


def record_masked_fill(out, input, mask, value):
    from .._tensor import Tensor
    is_tensor = isinstance(value, Tensor)
    node = new_node(MaskedFillBackward0, in_shape=_shape(input))
    node.save(mask=mask)
    record(node, (input, value if is_tensor else None), out)


class MaskedSelectBackward0(Node):
    def backward(self, g):
        mask = self.saved("mask")
        full = zeros_as(self.out_shape, g).masked_scatter(mask, g)
        return (sum_to(full, self.in_shape),)


def record_masked_select(out, input, mask, bshape):
    node = new_node(MaskedSelectBackward0, in_shape=_shape(input), out_shape=bshape)
    node.save(mask=mask)
    record(node, (input,), out)


class MaskedScatterBackward0(Node):
    def backward(self, g):
        mask = self.saved("mask")
        gi = sum_to(g.masked_fill(mask, 0), self.in_shape) if _needs(self, 0) else None
        gs = None
        if _needs(self, 1):     # source's leading elements went to the masked positions, in order
            picked = g.masked_select(mask)
            n = 1
            for s in self.source_shape:
                n *= s
            if picked.numel() < n:
                from .joining import cat
                picked = cat([picked, zeros_as((n - picked.numel(),), g)])
            gs = picked.reshape(self.source_shape)
        return gi, gs


def record_masked_scatter(out, input, mask, source):
    node = new_node(MaskedScatterBackward0, in_shape=_shape(input), source_shape=_shape(source))
    node.save(mask=mask)
    record(node, (input, source), out)


# ---- take / put -------------------------------------------------------------------------------------
class TakeBackward0(Node):
    def backward(self, g):
        return (zeros_as(self.in_shape, g).put(self.saved("index"), g, accumulate=True),)


def record_take(out, input, index):
    node = new_node(TakeBackward0, in_shape=_shape(input))
    node.save(index=index)
    record(node, (input,), out)


class PutBackward0(Node):
    def backward(self, g):
        index = self.saved("index")
        gi = gs = None
        if _needs(self, 0):
            gi = g if self.accumulate else g.put(index, zeros_as(_shape(index), g))
        if _needs(self, 1):
            gs = g.take(index).reshape(self.source_shape)
        return gi, gs


def record_put(out, input, index, source, accumulate):
    node = new_node(PutBackward0, accumulate=accumulate, source_shape=_shape(source))
    node.save(index=index)
    record(node, (input, source), out)


# ---- forward mode: J t for the nodes above (autograd/forward_ad.py reads JVP) ---------------------
# The selecting ops are linear in their input: the tangent goes through the same selection.
# A rule maps (node, inputs, tangents, meta) to the outputs' tangents (see reduction_grad.py).
def _index_jvp(node, inputs, t, meta):
    from .indexing import getitem
    return [getitem(t[0], tuple(node.items))]


def _masked_select_jvp(node, inputs, t, meta):
    return [t[0].expand(node.out_shape).masked_select(node.saved("mask"))]


def _masked_fill_jvp(node, inputs, t, meta):
    """The input's tangent where the mask is off, the value's (a 0-d tensor) where it is on."""
    mask = node.saved("mask")
    shape = meta[0][0]
    out = t[0].expand(shape).masked_fill(mask, 0) if t[0] is not None else None
    if len(t) > 1 and t[1] is not None:
        part = t[1].expand(shape) * mask
        out = part if out is None else out + part
    return [out.to(meta[0][1])]


# The writing ops are linear in (self, src): the tangent is the same write of the tangents, a
# zero tensor standing in for an input without one (the same index, so the same element wins
# where indices repeat).
def _or_zeros(t, shape, dtype, like):
    """t, or zeros of shape and dtype (on like's device) for an input without a tangent."""
    if t is not None:
        return t if t.dtype == dtype else t.to(dtype)
    from .creation import zeros
    return zeros(tuple(shape), dtype=dtype, device=like.device)


def _self_tangent(inputs, t, meta):
    return _or_zeros(t[0], meta[0][0], meta[0][1], inputs[0])


def _src_tangent(node, inputs, t, meta, shape_attr="src_shape"):
    return _or_zeros(t[1], getattr(node, shape_attr), meta[0][1], inputs[1])


def _scatter_jvp(node, inputs, t, meta):
    """scatter(src): self's tangent with src's written at index; scatter(value): zeros there."""
    tx, index = _self_tangent(inputs, t, meta), node.saved("index")
    if isinstance(node, ScatterBackward1):
        return [tx.scatter(node.dim, index, 0)]
    return [tx.scatter(node.dim, index, _src_tangent(node, inputs, t, meta))]


def _scatter_add_jvp(node, inputs, t, meta):
    return [_self_tangent(inputs, t, meta).scatter_add(node.dim, node.saved("index"),
                                                       _src_tangent(node, inputs, t, meta))]


def _scatter_reduce_jvp(node, inputs, t, meta):
    """sum and mean are linear: the same reduction of the tangents.  amax/amin: the mean of
    the tangents of the candidates equal to the result (the backward's even split among ties;
    with include_self=False self is no candidate where src was scattered, as PyTorch's JVP --
    the backward, as PyTorch's, still counts it in the split when it equals the result).
    prod: each factor's tangent times the product of the other factors, the backward's
    factors (exact with zeros)."""
    d, reduce, index = node.dim, node.reduce, node.saved("index")
    tx, ts = _self_tangent(inputs, t, meta), _src_tangent(node, inputs, t, meta)
    if reduce in ("sum", "mean"):
        return [tx.scatter_reduce(d, index, ts, reduce, include_self=node.include_self)]
    if tx.is_complex():         # (this table serves complex tangents: the linear cases only)
        return None
    x, src, result = node.saved("x"), node.saved("src"), node.saved("result")
    src, ts = _leading_part_view(src, _shape(index)), _leading_part_view(ts, _shape(index))
    if reduce in ("amax", "amin"):
        x_is = (x == result).to(tx.dtype)
        if not node.include_self:       # self is no candidate where src was scattered
            x_is = x_is.scatter(d, index, 0)
        src_is = (src == result.gather(d, index)).to(tx.dtype)
        count = x_is.scatter_add(d, index, src_is)
        return [(x_is * tx).scatter_add(d, index, src_is * ts) / count]
    # prod: d(out)/d(x) and d(out)/d(src) as the backward's gradients for g = 1
    gx, gs = node._prod_grads(result.new_ones(result.shape), x, src, index, result)
    if not node.include_self:
        gx = gx.scatter(d, index, 0)
    return [(gx * tx).scatter_add(d, index, gs * ts)]


def _index_add_jvp(node, inputs, t, meta):
    tx, ts = _self_tangent(inputs, t, meta), _src_tangent(node, inputs, t, meta, "source_shape")
    index = node.saved("index")
    if isinstance(node, IndexCopyBackward0):
        return [tx.index_copy(node.dim, index, ts)]
    return [tx.index_add(node.dim, index, ts, alpha=node.alpha)]


def _index_fill_jvp(node, inputs, t, meta):
    """Zeros at the filled slices, or the 0-d value's tangent there."""
    value = t[1] if len(t) > 1 and t[1] is not None else 0
    return [_self_tangent(inputs, t, meta).index_fill(node.dim, node.saved("index"), value)]


def _index_put_jvp(node, inputs, t, meta):
    """self[items] = value (+= with accumulate): the same write of the tangents (a number
    value, or a value without tangent, writes zeros)."""
    from .indexing import index_put_items
    value = t[1] if len(t) > 1 and t[1] is not None else 0
    return [index_put_items(_self_tangent(inputs, t, meta), node.items, node.used, value,
                            node.accumulate)]


def _masked_scatter_jvp(node, inputs, t, meta):
    tx = _self_tangent(inputs, t, meta)
    if tuple(tx.shape) != meta[0][0]:
        tx = tx.expand(meta[0][0])
    return [tx.masked_scatter(node.saved("mask"), _src_tangent(node, inputs, t, meta, "source_shape"))]


def _put_jvp(node, inputs, t, meta):
    return [_self_tangent(inputs, t, meta).put(node.saved("index"),
                                               _src_tangent(node, inputs, t, meta, "source_shape"),
                                               accumulate=node.accumulate)]


JVP = {
    IndexBackward0: _index_jvp,
    GatherBackward0: lambda node, inputs, t, meta: [t[0].gather(node.dim, node.saved("index"))],
    IndexSelectBackward0: lambda node, inputs, t, meta: [t[0].index_select(node.dim, node.saved("index"))],
    TakeBackward0: lambda node, inputs, t, meta: [t[0].take(node.saved("index"))],
    MaskedSelectBackward0: _masked_select_jvp,
    MaskedFillBackward0: _masked_fill_jvp,
    ScatterBackward0: _scatter_jvp,
    ScatterBackward1: _scatter_jvp,
    ScatterAddBackward0: _scatter_add_jvp,
    ScatterReduceBackward0: _scatter_reduce_jvp,
    IndexAddBackward0: _index_add_jvp,
    IndexCopyBackward0: _index_add_jvp,
    _IndexFillBack: _index_fill_jvp,
    _IndexPutBack: _index_put_jvp,
    MaskedScatterBackward0: _masked_scatter_jvp,
    PutBackward0: _put_jvp,
}
