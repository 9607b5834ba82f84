"""The three products of a convolution as differentiable ops, and their backward nodes.

A convolution y = conv(x, w) is bilinear, and so are the two products its gradient needs:

    conv(x, w)          forward: (N, C, *in) x (O, C/g, *k) -> (N, O, *out)
    conv_t(y, w)        the adjoint in x: the transposed convolution, (N, O, *out) -> (N, C, *in)
    conv_w(x, y)        the adjoint in w: the weight gradient, -> (O, C/g, *k)

The gradient of each of the three is made of the other two (see the nodes), so every order of
derivative works.  All three run on the kernels of torchlite/_core/conv.pyx, which see 2-d
convolutions only: a 1-d one is a 2-d one of height 1, reshaped on the arrays (no Tensor view,
so the result's grad_fn is the convolution's own node).  The arguments arrive checked
(conv.py does PyTorch's checks and messages)."""
from ... import _memory_format as MF
from ..._dispatch import conv as _K
from ..._tensor import _wrap
from ...autograd.graph import Node, record, needs_grad
from ..._dispatch import elementwise as _ew_mod

_ADD = _ew_mod.BINARY["add"]


class ConvSpec:
    """The geometry of a forward convolution in 2-d form (1-d: height 1, stride 1, ...):
    stride, padding, dilation are pairs; nd is the number of spatial dims (1 or 2)."""

    __slots__ = ("stride", "padding", "dilation", "groups", "nd")

    def __init__(self, stride, padding, dilation, groups, nd):
        if nd == 1:
            stride, padding, dilation = (1,) + tuple(stride), (0,) + tuple(padding), (1,) + tuple(dilation)
        self.stride, self.padding, self.dilation = tuple(stride), tuple(padding), tuple(dilation)
        self.groups, self.nd = groups, nd

    def args(self):
        return self.stride, self.padding, self.dilation, self.groups


def _arr4(t, nd):
    """The 4-d array of a 3-d (1-d convolution) or 4-d tensor."""
    a = t._data
    return a.unsqueeze(2) if nd == 1 else a


def _out(arr, nd):
    """A tensor of the right rank from a 4-d kernel result."""
    return _wrap(arr.squeeze((2,)) if nd == 1 else arr)


def _spatial(t, nd):
    """The spatial size of t as the kernels' (height, width)."""
    s = t._data.shape
    return (1, s[-1]) if nd == 1 else (s[-2], s[-1])


def add_channel_bias(arr, b):
    """arr (N, C, ...) += b (C,) broadcast over every other dim, in place; returns arr."""
    from ..._dispatch import elementwise as _ew
    shape = (1, b.shape[0]) + (1,) * (arr.ndim - 2)
    view = b.as_strided(shape, (0, b.strides[0]) + (0,) * (arr.ndim - 2), b.offset)
    return _ew.binary(_ADD, arr, view, arr)


def _bias_grad(g, nd):
    return g.sum(dim=(0, 2) if nd == 1 else (0, 2, 3))


def _out_size(in_size, ksize, spec):
    """The forward convolution's output size (2-d form) for input size in_size."""
    return tuple((i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in
                 zip(in_size, ksize, spec.stride, spec.padding, spec.dilation))


def _fit(t, size, nd):
    """t with its spatial size (2-d form) cut or zero-padded on the far side to `size`.  A
    transposed convolution with output_padding >= stride (allowed below the dilation) has
    an output whose forward convolution is one larger than its input: the missing entries
    of the output side are zeros, and the extra outputs of the forward one are dropped."""
    have = _spatial(t, nd)
    if have == tuple(size):
        return t
    from .vision import pad
    spec = [0, size[1] - have[1]]
    if nd == 2:
        spec += [0, size[0] - have[0]]
    return pad(t, spec)


def _channels_last(x, w, nd):
    """PyTorch's layout rule for a 2-d convolution's result: channels_last when its input or
    its weight is laid out that way (suggest_memory_format: NHWC strides, not also
    contiguous), contiguous otherwise."""
    return nd == 2 and (MF.is_channels_last(x._data) or MF.is_channels_last(w._data))


def _laid_out(arr, cl, nd):
    """The kernel's result as a tensor in the layout PyTorch gives (cl: channels_last; the
    Winograd kernels write that layout themselves, the others are copied into it)."""
    y = _out(arr, nd)
    if cl and not MF.follows(arr.shape, arr.strides, MF.CHANNELS_LAST_ORDER):
        y = y.contiguous(memory_format=MF.channels_last)
    return y


def conv(x, w, b, spec):
    """y = conv(x, w) + b (b may be None)."""
    nd = spec.nd
    cl = _channels_last(x, w, nd)
    y = _laid_out(_K.conv2d_forward(_arr4(x, nd), _arr4(w, nd), None if b is None else b._data,
                                    *spec.args(), channels_last=cl), cl, nd)
    if needs_grad(x, w, b):
        node = ConvolutionBackward0()
        node.spec, node.transposed = spec, False
        node.save(input=x, weight=w)
        record(node, (x, w, b), y)
    return y


def conv_t(y, w, b, spec, in_size):
    """z = conv_t(y, w) + b: the transposed convolution of y, whose result has the forward
    convolution's input size `in_size` (spatial, in 2-d form)."""
    nd = spec.nd
    y = _fit(y, _out_size(in_size, _spatial(w, nd), spec), nd)
    cl = _channels_last(y, w, nd)
    z = _K.conv2d_input_grad(_arr4(y, nd), _arr4(w, nd), in_size[0], in_size[1], *spec.args(),
                             channels_last=cl)
    if b is not None:
        z = add_channel_bias(z, b._data)
    z = _laid_out(z, cl, nd)
    if needs_grad(y, w, b):
        node = ConvolutionBackward0()
        node.spec, node.transposed = spec, True
        node.save(input=y, weight=w)
        record(node, (y, w, b), z)
    return z


def conv_w(x, gy, spec, ksize):
    """dw = the gradient of conv(x, w) with respect to w (of spatial size ksize, 2-d form)
    for the output gradient gy."""
    nd = spec.nd
    gy = _fit(gy, _out_size(_spatial(x, nd), ksize, spec), nd)
    dw = _out(_K.conv2d_weight_grad(_arr4(x, nd), _arr4(gy, nd), ksize[0], ksize[1],
                                    *spec.args()), nd)
    if needs_grad(x, gy):
        node = ConvolutionBackwardBackward0()
        node.spec = spec
        node.save(input=x, grad_output=gy)
        record(node, (x, gy), dw)
    return dw


class ConvolutionBackward0(Node):
    """conv (transposed False) or conv_t (transposed True) with inputs (input, weight,
    bias).  For conv_t the forward convolution's input is the gradient's side, so the roles
    of conv and conv_t swap."""

    spec = None
    transposed = False

    def backward(self, g):
        x, w = self.saved("input"), self.saved("weight")
        spec, nd = self.spec, self.spec.nd
        want_x, want_w, want_b = (e[0] is not None for e in self.next_functions)
        gx = gw = gb = None
        if self.transposed:
            if want_x:
                gx = _fit(conv(g, w, None, spec), _spatial(x, nd), nd)
            if want_w:
                gw = conv_w(g, x, spec, _spatial(w, nd))
        else:
            if want_x:
                gx = conv_t(g, w, None, spec, _spatial(x, nd))
            if want_w:
                gw = conv_w(x, g, spec, _spatial(w, nd))
        if want_b:
            gb = _bias_grad(g, nd)
        return gx, gw, gb


class ConvolutionBackwardBackward0(Node):
    """conv_w(x, gy): <gdw, conv_w(x, gy)> = <conv(x, gdw), gy> = <x, conv_t(gy, gdw)>."""

    spec = None

    def backward(self, gdw):
        x, gy = self.saved("input"), self.saved("grad_output")
        spec, nd = self.spec, self.spec.nd
        want_x, want_gy = (e[0] is not None for e in self.next_functions)
        gx = conv_t(gy, gdw, None, spec, _spatial(x, nd)) if want_x else None
        ggy = _fit(conv(x, gdw, None, spec), _spatial(gy, nd), nd) if want_gy else None
        return gx, ggy


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
def _conv_jvp(node, inputs, tangents, meta):
    """conv(x, w) + b is bilinear in (x, w) and linear in b: conv(t_x, w) + conv(x, t_w) + t_b;
    the transposed convolution likewise, with conv_t at the output's spatial size."""
    tx, tw, tb = tangents
    x, w = node.saved("input"), node.saved("weight")
    if node.transposed:
        shape = meta[0][0]
        size = (1, shape[-1]) if node.spec.nd == 1 else (shape[-2], shape[-1])

        def op(a, k):
            return conv_t(a, k, None, node.spec, size)
    else:
        def op(a, k):
            return conv(a, k, None, node.spec)
    total = op(tx, w) if tx is not None else None
    if tw is not None:
        term = op(x, tw)
        total = term if total is None else total + term
    if tb is not None:
        term = tb.reshape((1, -1) + (1,) * node.spec.nd).expand(meta[0][0])
        total = term if total is None else total + term
    return [total]


def _conv_w_jvp(node, inputs, tangents, meta):
    """The weight gradient conv_w(x, gy) is bilinear too: conv_w(t_x, gy) + conv_w(x, t_gy)
    at the weight's spatial size (forward-over-reverse through a convolution)."""
    tx, tgy = tangents
    x, gy = node.saved("input"), node.saved("grad_output")
    shape = meta[0][0]
    ksize = (1, shape[-1]) if node.spec.nd == 1 else (shape[-2], shape[-1])
    total = conv_w(tx, gy, node.spec, ksize) if tx is not None else None
    if tgy is not None:
        term = conv_w(x, tgy, node.spec, ksize)
        total = term if total is None else total + term
    return [total]


JVP = {ConvolutionBackward0: _conv_jvp, ConvolutionBackwardBackward0: _conv_w_jvp}
