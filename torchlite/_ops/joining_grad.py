"""Backward formulas of the joining and splitting ops (joining.py): cat, stack, the splits
and unbind, repeat and repeat_interleave, roll, tril/triu, diag_embed, block_diag.

The splits' gradients join the pieces' gradients back (cat/stack, imported from joining.py
when a formula runs: the family's two files know each other, nothing else does)."""
from ..autograd.graph import Node, new_node, record, sum_to
from .views_grad import embed, needs_input_grad, zeros_as


# ---- splitting: unbind and the splits ---------------------------------------------------
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


# ---- forward mode: J t for each node above (autograd/forward_ad.py reads JVP) ------------------
# Joining and splitting are linear: the outputs' tangents are the same op on the inputs'
# tangents (zeros for an input without one), cast to the output's dtype as the op promotes.
def _tangent_or_zeros(t, x, dtype):
    return (t if t is not None else zeros_as(x._data.shape, x)).to(dtype)


def _cat_jvp(node, inputs, tangents, meta):
    from .joining import cat
    dtype = meta[0][1]
    parts = [_tangent_or_zeros(t, x, dtype) for (size, _, _), t, x in zip(node.pieces, tangents, inputs)
             if size is not None]
    return [cat(parts, node.dim)]


def _stack_jvp(node, inputs, tangents, meta):
    from .joining import stack
    dtype = meta[0][1]
    return [stack([_tangent_or_zeros(t, x, dtype) for t, x in zip(tangents, inputs)], node.dim)]


def _block_diag_jvp(node, inputs, tangents, meta):
    from .joining import block_diag
    dtype = meta[0][1]
    return [block_diag(*[_tangent_or_zeros(t, x, dtype) for t, x in zip(tangents, inputs)])]


def _repeat_jvp(node, inputs, t, meta):
    """repeat / repeat_interleave: the tangent viewed as src, expanded to big, copied."""
    return [t[0].reshape(node.src_shape).expand(node.big).reshape(meta[0][0])]


JVP = {
    _RepeatBack: _repeat_jvp,
    RollBackward0: lambda node, inputs, t, meta: [t[0].roll(tuple(-s for s in node.back), node.dims)],
    TrilBackward0: lambda node, inputs, t, meta: [t[0].tril(node.k)],
    TriuBackward0: lambda node, inputs, t, meta: [t[0].triu(node.k)],
    DiagEmbedBackward0: lambda node, inputs, t, meta: [t[0].diag_embed(node.offset, node.dim1, node.dim2)],
    BlockDiagBackward0: _block_diag_jvp,
    UnbindBackward0: lambda node, inputs, t, meta: [t[0].select(node.dim, i) for i in range(len(meta))],
    _SplitBack: lambda node, inputs, t, meta: [t[0].narrow(node.dim, start, stop - start)
                                               for start, stop in node.bounds],
    CatBackward0: _cat_jvp,
    StackBackward0: _stack_jvp,
}
