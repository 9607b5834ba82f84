"""Backward nodes of the sorting family (sorting.py): sort, topk, kthvalue, mode and msort
return values picked from the input along a dim, so each gradient scatters back to the picked
positions; the nodes carry PyTorch's names."""
from ..autograd.graph import Node, new_node, node_type, record
from .views_grad import zeros_as


def _shape(t):
    return t._data.shape


class _PickedValuesBack(Node):
    def backward(self, g, g_indices=None):
        index = self.saved("indices")
        if not self.keepdim:
            g, index = g.unsqueeze(self.dim), index.unsqueeze(self.dim)
        return (zeros_as(self.in_shape, g).scatter(self.dim, index, g),)


SortBackward0 = node_type("SortBackward0", _PickedValuesBack)
TopkBackward0 = node_type("TopkBackward0", _PickedValuesBack)
KthvalueBackward0 = node_type("KthvalueBackward0", _PickedValuesBack)
ModeBackward0 = node_type("ModeBackward0", _PickedValuesBack)


def record_picked(cls, input, values, indices, dim, keepdim=True, outputs=None):
    """values = input picked at `indices` along dim (keepdim=False: dim was squeezed away).
    outputs: what the op returns (values alone for msort, else the pair)."""
    node = new_node(cls, in_shape=_shape(input), dim=dim, keepdim=keepdim or input.ndim == 0)
    node.save(indices=indices)
    record(node, (input,), outputs if outputs is not None else (values, indices))


# ---- forward mode: J t (autograd/forward_ad.py reads JVP, through indexing_grad's table) -------
def _picked_jvp(node, inputs, t, meta):
    """The values are the input picked at the returned indices along dim: so is their tangent
    (none for the indices; msort returns the values alone)."""
    index = node.saved("indices")
    if not node.keepdim:
        index = index.unsqueeze(node.dim)
    picked = t[0].gather(node.dim, index) if t[0].ndim else t[0]
    if not node.keepdim:
        picked = picked.squeeze(node.dim)
    return [picked] + [None] * (len(meta) - 1)


JVP = {_PickedValuesBack: _picked_jvp}
