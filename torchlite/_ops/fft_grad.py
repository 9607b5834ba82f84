"""Backward formulas of the FFT primitives in fft.py.

With PyTorch's convention (the gradient of a real loss with respect to z = x + iy is
dL/dx + i dL/dy) the gradient of a complex-linear map A is A^H applied to the output's
gradient, and each primitive's adjoint is another primitive:

  c2c, sign s, scale c:  c * c2c(g, sign -s), then the adjoint of the cut/pad to n (pad/cut)
  r2c (real input):      Re(c * c2c(g padded with zeros to all n outputs, sign +))
  c2r:                   c * r2c(g) with the coefficients 1..ceil(n/2)-1 doubled (each stands
                         for itself and its conjugate twin), then the adjoint of the cut/pad

Each formula is written with the primitives themselves, so it is differentiable again."""
from ..autograd.graph import Node, record


def _fit(g, dim, length):
    """g cut or zero-padded along dim to `length`: the adjoint of the forward pad/cut."""
    have = g.shape[dim]
    if have == length:
        return g
    if have > length:
        return g.narrow(dim, 0, length)
    from .joining import cat
    from .creation import zeros
    shape = list(g.shape)
    shape[dim] = length - have
    return cat([g, zeros(shape, dtype=g.dtype, device=g.device)], dim)


def _fft():
    from . import fft
    return fft


class FftC2CBackward0(Node):
    def backward(self, g):
        gi = _fft().c2c(g, self.dim, self.n, not self.inverse, self.scale)
        return (_fit(gi, self.dim, self.length),)


class FftR2CBackward0(Node):
    def backward(self, g):
        if self.onesided:
            g = _fit(g, self.dim, self.n)           # the outputs left out have no gradient
        gi = _fft().c2c(g, self.dim, self.n, True, self.scale).real
        return (_fit(gi, self.dim, self.length),)


class FftC2RBackward0(Node):
    def backward(self, g):
        gi = _fft().r2c(g, self.dim, self.n, True, self.scale)
        twins = self.n - self.n // 2 - 1          # coefficients 1 .. ceil(n/2) - 1
        if twins > 0:
            from .joining import cat
            m = gi.shape[self.dim]
            gi = cat([gi.narrow(self.dim, 0, 1), gi.narrow(self.dim, 1, twins) * 2,
                      gi.narrow(self.dim, 1 + twins, m - 1 - twins)], self.dim)
        return (_fit(gi, self.dim, self.length),)


def _node(cls, x, dim, n, scale, **extra):
    node = cls()
    node.dim, node.n, node.scale, node.length = dim, n, scale, x.shape[dim]
    node.__dict__.update(extra)
    return node


def record_c2c(x, out, dim, n, inverse, scale):
    record(_node(FftC2CBackward0, x, dim, n, scale, inverse=inverse), (x,), out)


def record_r2c(x, out, dim, n, onesided, scale):
    record(_node(FftR2CBackward0, x, dim, n, scale, onesided=onesided), (x,), out)


def record_c2r(x, out, dim, n, scale):
    record(_node(FftC2RBackward0, x, dim, n, scale), (x,), out)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
# Each primitive is a real-linear map of its input: its JVP is the same primitive applied to
# the tangent, with the same dim, size n, one-sidedness and scale (so the cut/pad to n, and
# whatever parts of the coefficients c2r does not read, are the input's).
JVP = {
    FftC2CBackward0: lambda node, inputs, t, meta: [
        _fft().c2c(t[0], node.dim, node.n, node.inverse, node.scale)],
    FftR2CBackward0: lambda node, inputs, t, meta: [
        _fft().r2c(t[0], node.dim, node.n, node.onesided, node.scale)],
    FftC2RBackward0: lambda node, inputs, t, meta: [
        _fft().c2r(t[0], node.dim, node.n, node.scale)],
}
