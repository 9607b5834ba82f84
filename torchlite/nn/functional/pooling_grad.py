"""Pooling as differentiable ops over the kernels of torchlite/_core/pool.pyx, and their nodes.

The kernels see (N, C, H, W) planes; a 1-d pooling is a 2-d one of height 1 and an unbatched
input a batch of one, reshaped on the arrays (the result's grad_fn is the pooling's own
node).  Every backward is a linear op whose own gradient is the forward again (average
pooling), or a gather / scatter by the saved indices (max pooling), so every order of
derivative works:

    max_pool / adaptive_max_pool  --grad-->  scatter(g, indices)  --grad-->  gather(gg, indices)
    avg_pool(x)                   --grad-->  avg_pool_t(g)        --grad-->  avg_pool(gg)
    adaptive_avg_pool(x)          --grad-->  adaptive_avg_t(g)    --grad-->  adaptive_avg_pool(gg)
"""
from ... import _memory_format as MF
from ..._dispatch import pool as _K
from ..._tensor import _wrap
from ...autograd.graph import Node, record, needs_grad


# ---- layout: natural shapes <-> the kernels' (N, C, H, W) -----------------------------------
def to4(arr, nd):
    """The 4-d array of an input with nd spatial dims (1 or 2), batched or not."""
    if nd == 1:
        arr = arr.unsqueeze(arr.ndim - 1)
    if arr.ndim == 3:
        arr = arr.unsqueeze(0)
    return arr


def from4(arr4, batch, nd):
    """A kernel result (N, C, H, W), C-contiguous, as batch dims + nd spatial dims."""
    spatial = (arr4.shape[3],) if nd == 1 else tuple(arr4.shape[2:])
    return arr4.view(tuple(batch) + spatial)


def spatial2(shape, nd):
    """The spatial size of a shape as the kernels' (H, W)."""
    return (1, shape[-1]) if nd == 1 else (shape[-2], shape[-1])


def _batch(shape, nd):
    return tuple(shape[:-nd])


# ---- max pooling ------------------------------------------------------------------------------
def max_pool(x, out_size, kernel, stride, padding, dilation, nd, adaptive=False):
    """(values, indices) of max pooling x over windows (2-d form arguments), or of adaptive
    max pooling to out_size (2-d form) when adaptive."""
    a = to4(x._data, nd)
    if adaptive:
        y4, i4 = _K.adaptive_max_pool2d(a, out_size[0], out_size[1])
    else:
        y4, i4 = _K.max_pool2d(a, out_size[0], out_size[1], kernel, stride, padding, dilation)
    batch = _batch(x._data.shape, nd)
    y, idx = _wrap(from4(y4, batch, nd)), _wrap(from4(i4, batch, nd))
    if needs_grad(x):
        node = (AdaptiveMaxPool2DBackward0 if adaptive else MaxPool2DWithIndicesBackward0)()
        node.nd, node.in_shape = nd, tuple(x._data.shape)
        node.save_output(indices=idx)
        record(node, (x,), y)
    return y, idx


def scatter(g, idx, in_shape, nd):
    """The gradient of max pooling: zeros of in_shape, plus g at the saved indices."""
    h, w = spatial2(in_shape, nd)
    out = _wrap(from4(_K.scatter_planes(to4(g._data, nd), to4(idx._data, nd), h, w, True),
                      _batch(in_shape, nd), nd))
    if needs_grad(g):
        node = MaxPool2DWithIndicesBackwardBackward0()
        node.nd = nd
        node.save(indices=idx)
        record(node, (g,), out)
    return out


def gather(x, idx, nd):
    """x at the indices of each plane (the adjoint of scatter)."""
    arr = _K.gather_planes(to4(x._data, nd), to4(idx._data, nd))
    out = _wrap(arr.view(idx._data.shape))
    if needs_grad(x):
        node = MaxPoolGatherBackward0()
        node.nd, node.in_shape = nd, tuple(x._data.shape)
        node.save(indices=idx)
        record(node, (x,), out)
    return out


def gather_flat(t, idx):
    """t (N, C, *spatial) at idx (N, C, *out): flat indices into each (n, c) plane or
    volume (3-d and fractional max pooling's saved indices), as an (N, C, *out) tensor."""
    n, c = idx.shape[:2]
    return gather(t.reshape(n, c, 1, -1), idx.reshape(n, c, 1, -1), 2).view(idx.shape)


class MaxPool2DWithIndicesBackward0(Node):
    nd = 2
    in_shape = ()

    def backward(self, g):
        return (scatter(g, self.saved("indices"), self.in_shape, self.nd),)


class AdaptiveMaxPool2DBackward0(MaxPool2DWithIndicesBackward0):
    pass


class MaxPool2DWithIndicesBackwardBackward0(Node):
    nd = 2

    def backward(self, gg):
        return (gather(gg, self.saved("indices"), self.nd),)


class MaxPoolGatherBackward0(Node):
    nd = 2
    in_shape = ()

    def backward(self, g):
        return (scatter(g, self.saved("indices"), self.in_shape, self.nd),)


# ---- average pooling --------------------------------------------------------------------------
class AvgParams:
    """kernel, stride, padding (2-d form), count_include_pad, divisor (0: none)."""

    __slots__ = ("kernel", "stride", "padding", "count_include_pad", "divisor")

    def __init__(self, kernel, stride, padding, count_include_pad, divisor):
        self.kernel, self.stride, self.padding = kernel, stride, padding
        self.count_include_pad, self.divisor = count_include_pad, divisor


def avg_pool(x, out_size, p, nd):
    y4 = _K.avg_pool2d(to4(x._data, nd), out_size[0], out_size[1], p.kernel, p.stride,
                       p.padding, p.count_include_pad, p.divisor)
    y = _wrap(from4(y4, _batch(x._data.shape, nd), nd))
    if needs_grad(x):
        node = AvgPool2DBackward0()
        node.nd, node.in_shape, node.params = nd, tuple(x._data.shape), p
        node.channels_last = nd == 2 and MF.is_channels_last(x._data)
        record(node, (x,), y)
    return y


def avg_pool_t(g, in_shape, p, nd, channels_last=False):
    """The adjoint of avg_pool: the gradient of an input of in_shape, laid out channels_last
    when the input was (PyTorch's rule; the gradient g may come in either layout)."""
    h, w = spatial2(in_shape, nd)
    arr = _K.avg_pool2d_backward(to4(g._data, nd), h, w, p.kernel, p.stride, p.padding,
                                 p.count_include_pad, p.divisor, channels_last=channels_last)
    out = _wrap(from4(arr, _batch(in_shape, nd), nd))
    if needs_grad(g):
        node = AvgPool2DBackwardBackward0()
        node.nd, node.out_size, node.params = nd, spatial2(g._data.shape, nd), p
        record(node, (g,), out)
    return out


class AvgPool2DBackward0(Node):
    nd = 2
    in_shape = ()
    params = None
    channels_last = False

    def backward(self, g):
        return (avg_pool_t(g, self.in_shape, self.params, self.nd, self.channels_last),)


class AvgPool2DBackwardBackward0(Node):
    nd = 2
    out_size = ()
    params = None

    def backward(self, gg):
        return (avg_pool(gg, self.out_size, self.params, self.nd),)


# ---- adaptive average pooling -------------------------------------------------------------------
def adaptive_avg_pool(x, out_size, nd):
    y4 = _K.adaptive_avg_pool2d(to4(x._data, nd), out_size[0], out_size[1])
    y = _wrap(from4(y4, _batch(x._data.shape, nd), nd))
    if needs_grad(x):
        node = AdaptiveAvgPool2DBackward0()
        node.nd, node.in_shape = nd, tuple(x._data.shape)
        record(node, (x,), y)
    return y


def adaptive_avg_pool_t(g, in_shape, nd):
    h, w = spatial2(in_shape, nd)
    arr = _K.adaptive_avg_pool2d_backward(to4(g._data, nd), h, w)
    out = _wrap(from4(arr, _batch(in_shape, nd), nd))
    if needs_grad(g):
        node = AdaptiveAvgPool2DBackwardBackward0()
        node.nd, node.out_size = nd, spatial2(g._data.shape, nd)
        record(node, (g,), out)
    return out


class AdaptiveAvgPool2DBackward0(Node):
    nd = 2
    in_shape = ()

    def backward(self, g):
        return (adaptive_avg_pool_t(g, self.in_shape, self.nd),)


class AdaptiveAvgPool2DBackwardBackward0(Node):
    nd = 2
    out_size = ()

    def backward(self, gg):
        return (adaptive_avg_pool(gg, self.out_size, self.nd),)


# ---- max_unpool -----------------------------------------------------------------------------------
def max_unpool(x, idx, out_shape, nd):
    """out of out_shape: zeros, with x written at the indices (the last write wins)."""
    h, w = spatial2(out_shape, nd)
    arr = _K.scatter_planes(to4(x._data, nd), to4(idx._data, nd), h, w, False)
    out = _wrap(from4(arr, _batch(out_shape, nd), nd))
    if needs_grad(x):
        node = MaxUnpool2DBackward0()
        node.nd = nd
        node.save(indices=idx)
        record(node, (x,), out)
    return out


class MaxUnpool2DBackward0(Node):
    nd = 2

    def backward(self, g):
        return (gather(g, self.saved("indices"), self.nd),)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
# Max pooling picks one input per output (the saved indices): the tangent there; average and
# adaptive average pooling are linear: the pooling of the tangent.
JVP = {
    MaxPool2DWithIndicesBackward0: lambda node, inputs, t, meta: [gather(t[0], node.saved("indices"), node.nd)],
    AvgPool2DBackward0: lambda node, inputs, t, meta: [
        avg_pool(t[0], spatial2(meta[0][0], node.nd), node.params, node.nd)],
    AdaptiveAvgPool2DBackward0: lambda node, inputs, t, meta: [
        adaptive_avg_pool(t[0], spatial2(meta[0][0], node.nd), node.nd)],
    # the backwards as ops (double backward) and max_unpool: linear, the op of the tangent
    MaxPool2DWithIndicesBackwardBackward0: lambda node, inputs, t, meta: [
        scatter(t[0], node.saved("indices"), meta[0][0], node.nd)],
    MaxPoolGatherBackward0: lambda node, inputs, t, meta: [gather(t[0], node.saved("indices"), node.nd)],
    MaxUnpool2DBackward0: lambda node, inputs, t, meta: [
        max_unpool(t[0], node.saved("indices"), meta[0][0], node.nd)],
    AvgPool2DBackwardBackward0: lambda node, inputs, t, meta: [
        avg_pool_t(t[0], meta[0][0], node.params, node.nd)],
    AdaptiveAvgPool2DBackwardBackward0: lambda node, inputs, t, meta: [
        adaptive_avg_pool_t(t[0], meta[0][0], node.nd)],
}
