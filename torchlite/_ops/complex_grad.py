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
