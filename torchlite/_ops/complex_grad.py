"""Backward formulas of the complex views (complex.py).  With PyTorch's convention (the
gradient of a real loss with respect to z = x + iy is dL/dx + i dL/dy), the gradient of a
view of z's parts is the same view run backwards: view_as_real <-> view_as_complex, and the
gradient g of real(z) / imag(z) becomes g / i g."""
from ..autograd.graph import Node, record


class ViewAsRealBackward0(Node):
    def backward(self, g):
        return (g.contiguous().view_as_complex(),)


class ViewAsComplexBackward0(Node):
    def backward(self, g):
        return (g.view_as_real(),)


class RealBackward0(Node):
    def backward(self, g):
        return (g.to(self.dtype),)


class ImagBackward0(Node):
    def backward(self, g):
        return (g * 1j,)


def record_view_as_real(input, out):
    record(ViewAsRealBackward0(), (input,), out)


def record_view_as_complex(input, out):
    record(ViewAsComplexBackward0(), (input,), out)


def record_real(input, out):
    node = RealBackward0()
    node.dtype = input.dtype
    record(node, (input,), out)


def record_imag(input, out):
    record(ImagBackward0(), (input,), out)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
# Linear views: the same view of the tangent (a fresh copy where view_as_complex needs one:
# the tangent may be laid out otherwise than the input).
def _view_as_complex_jvp(node, inputs, t, meta):
    v = t[0].contiguous()
    if v.storage_offset() % 2:
        v = v.clone()
    return [v.view_as_complex()]


JVP = {
    ViewAsRealBackward0: lambda node, inputs, t, meta: [t[0].view_as_real()],
    ViewAsComplexBackward0: _view_as_complex_jvp,
    RealBackward0: lambda node, inputs, t, meta: [t[0].real if t[0].is_complex() else t[0]],
    ImagBackward0: lambda node, inputs, t, meta: [t[0].imag],
}
