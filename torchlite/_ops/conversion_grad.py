"""Backward formulas of the conversions (conversion.py): to (dtype/device), copy_ and fill_."""
from ..autograd.graph import Node, new_node, record, sum_to
from .views_grad import needs_input_grad, zeros_as


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
        return (zeros_as(g._data.shape, g) if needs_input_grad(self, 0) else None,
                g.sum().reshape(self.value_shape) if needs_input_grad(self, 1) else None)


def record_fill(old, value, out):
    from .._tensor import Tensor
    is_tensor = isinstance(value, Tensor)
    node = new_node(FillBackward0, value_shape=value._data.shape if is_tensor else ())
    record(node, (old, value if is_tensor else None), out)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
def _written_jvp(node, inputs, t, meta):
    """copy_(src) and fill_(value): self's old values are gone, so only src's (or the 0-d
    value's) tangent counts, broadcast and cast as the values were; zeros without one."""
    shape, dtype, device = meta[0]
    if t[1] is None:
        from .creation import zeros
        return [zeros(shape, dtype=dtype, device=device)]
    tv = t[1] if isinstance(node, CopyBackwards) else t[1].reshape(())
    return [tv.to(device, dtype).expand(shape).contiguous()]


JVP = {
    ToCopyBackward0: lambda node, inputs, t, meta: [t[0].to(meta[0][2], meta[0][1])],
    CopyBackwards: _written_jvp,
    FillBackward0: _written_jvp,
}
