"""Backward formulas of the special functions in special.py: PyTorch's (tools/autograd/
derivatives.yaml and FunctionsManual.cpp), written with Tensor ops so that they differentiate
again (the derivative of i0 is i1, of polygamma(n, .) polygamma(n + 1, .)).

A table row per function: the node class name PyTorch gives it, what the formula needs (the
input `x`, the result `y`) and the formula.  Two-argument functions list a formula per
argument, None where PyTorch has no derivative (the node then raises PyTorch's "not
implemented" error if that gradient is asked for).  Gradients of broadcast or type-promoted
inputs are summed back to the input's shape and cast to its dtype."""
import math

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.graph import Node, record, sum_to, needs_grad  # noqa: F401 (needs_grad: special.py)

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

_special = None


def _sp():
    """The special module (it imports this one, so it is looked up on first use)."""
    global _special
    if _special is None:
        from . import special
        _special = special
    return _special


def _where(cond, a, b):
    from .elementwise import where
    return where(cond, a, b)


def _tiny_safe(x):
    """(|x| > eps, x with its tiny values replaced by eps): the two-branch formulas of i1 and
    i1e divide by x, and the branch not taken must stay finite for double backward."""
    eps = D.finfo(x.dtype).eps
    big = x.abs() > eps
    return big, _where(big, x, eps)


def _i1_grad(g, x, y):
    big, xs = _tiny_safe(x)
    return g * _where(big, _sp().i0(xs) - _sp().i1(xs) / xs, 0.5)


def _i1e_grad(g, x, y):
    big, xs = _tiny_safe(x)
    return g * _where(big, _sp().i0e(xs) - _sp().i1e(xs) * (xs.sgn() + 1.0 / xs), 0.5)


# name -> (node class name, needs, formula(g, x, y))
UNARY = {
    "erfcx": ("SpecialErfcxBackward0", "xy", lambda g, x, y: (2.0 * x * y - _TWO_OVER_SQRT_PI) * g),
    "ndtr": ("SpecialNdtrBackward0", "x", lambda g, x, y: g * (-0.5 * x * x).exp() / _SQRT_2PI),
    "ndtri": ("SpecialNdtriBackward0", "y", lambda g, x, y: g * _SQRT_2PI * (0.5 * y * y).exp()),
    "log_ndtr": ("SpecialLogNdtrBackward0", "xy",
                 lambda g, x, y: g / _SQRT_2PI * (-(y + 0.5 * x * x)).exp()),
    "entr": ("SpecialEntrBackward0", "x", lambda g, x, y: g * -(1.0 + x.log())),
    "i0": ("I0Backward0", "x", lambda g, x, y: g * _sp().i1(x)),
    "i0e": ("SpecialI0EBackward0", "xy", lambda g, x, y: g * (_sp().i1e(x) - x.sgn() * y)),
    "i1": ("SpecialI1Backward0", "x", _i1_grad),
    "i1e": ("SpecialI1EBackward0", "x", _i1e_grad),
}


def _fit(grad, like):
    """grad in the shape and dtype of the input `like` (summed over broadcast dims)."""
    grad = sum_to(grad, like.shape)
    return grad if grad.dtype is like.dtype else grad.to(like.dtype)


class SpecialUnaryBackward(Node):
    """y = f(x) for a row of UNARY (subclasses set `formula` and `needs`)."""

    def backward(self, g):
        x = self.saved("input") if "x" in self.needs else None
        y = self.saved("result") if "y" in self.needs else None
        return (self.formula(g, x, y),)


_UNARY_CLASSES = {}


def record_unary(name, x, y):
    """Record the backward node of special function `name` on input x, result y."""
    cls = _UNARY_CLASSES.get(name)
    if cls is None:
        node_name, needs, formula = UNARY[name]
        cls = _UNARY_CLASSES[name] = type(node_name, (SpecialUnaryBackward,), {
            "formula": staticmethod(formula), "needs": needs})
    node = cls()
    if "x" in cls.needs:
        node.save(input=x)
    if "y" in cls.needs:
        node.save_output(result=y)
    record(node, (x,), y)


# ---- two-argument functions -------------------------------------------------------------------
def _zeta_grad_q(g, s, q, y):
    return g * -s * _sp().zeta(s + 1.0, q)


def _xlog1py_grad_x(g, x, y, r):
    """log1p(y), with PyTorch's 0 where x is 0 and y <= -1 (log1p(y) infinite or NaN)."""
    if not isinstance(y, Tensor):
        if not y <= -1:                     # NaN too: no mask
            return g * (math.log1p(y) if y == y else y)
        return _where(x == 0, 0.0, g * (-math.inf if y == -1 else math.nan))
    return _sp().xlog1py(g, y).masked_fill((x == 0) & (y <= -1), 0.0)


def _igamma_density(a, x):
    """x^(a-1) e^-x / Gamma(a): the derivative of P(a, x) in x (both are tensors)."""
    return ((a - 1.0) * x.log() - x - a.lgamma()).exp()


# name -> (node class name, formula for input or None, for other or None, what PyTorch's
# "not implemented" error names)
BINARY = {
    "zeta": ("SpecialZetaBackward0", None, _zeta_grad_q, "zeta"),
    "xlog1py": ("SpecialXlog1PyBackward0", _xlog1py_grad_x,
                lambda g, x, y, r: g * x / (y + 1.0), "xlog1py"),
    "gammainc": ("IgammaBackward0", None,
                 lambda g, a, x, r: g * _igamma_density(a, x), "igamma: input"),
    "gammaincc": ("IgammacBackward0", None,
                  lambda g, a, x, r: -g * _igamma_density(a, x), "igammac: input"),
}


class SpecialBinaryBackward(Node):
    """r = f(a, b) for a row of BINARY; a or b may be a Python number (no gradient)."""

    def backward(self, g):
        a = self.saved("input") if self.a_tensor else self.a_number
        b = self.saved("other") if self.b_tensor else self.b_number
        r = None
        grads = []
        for i, (formula, inp) in enumerate(((self.grad_a, a), (self.grad_b, b))):
            if self.next_functions[i][0] is None:
                grads.append(None)
            elif formula is None:
                raise NotImplementedError(f"the derivative for '{self.missing}' is not "
                                          f"implemented.")
            else:
                grads.append(_fit(formula(g, a, b, r), inp))
        return tuple(grads)


_BINARY_CLASSES = {}


def record_binary(name, a, b, r):
    """Record the backward node of two-argument function `name` on inputs a, b, result r."""
    cls = _BINARY_CLASSES.get(name)
    if cls is None:
        node_name, grad_a, grad_b, missing = BINARY[name]
        cls = _BINARY_CLASSES[name] = type(node_name, (SpecialBinaryBackward,), {
            "grad_a": staticmethod(grad_a) if grad_a else None,
            "grad_b": staticmethod(grad_b) if grad_b else None, "missing": missing})
    if not r.is_floating_point():
        return
    node = cls()
    node.a_tensor, node.b_tensor = isinstance(a, Tensor), isinstance(b, Tensor)
    # both operands are kept: each formula reads the other one
    if node.a_tensor:
        node.save(input=a)
    else:
        node.a_number = a
    if node.b_tensor:
        node.save(other=b)
    else:
        node.b_number = b
    record(node, (a if node.a_tensor else None, b if node.b_tensor else None), r)


# ---- polygamma, mvlgamma ------------------------------------------------------------------------
class PolygammaBackward0(Node):
    """d/dx polygamma(n, x) = polygamma(n + 1, x)."""

    def backward(self, g):
        return (g * _sp().polygamma(self.n + 1, self.saved("input")),)


def record_polygamma(n, x, r):
    """Record polygamma(n, x) = r."""
    node = PolygammaBackward0()
    node.n = n
    node.save(input=x)
    record(node, (x,), r)


class MvlgammaBackward0(Node):
    """d/dx sum_{j < p} lgamma(x - j/2) = sum_j digamma(x - j/2)."""

    def backward(self, g):
        x = self.saved("input")
        d = _sp().digamma(x)
        for j in range(1, self.p):
            d = d + _sp().digamma(x - 0.5 * j)
        return (g * d,)


def record_mvlgamma(p, x, r):
    """Record mvlgamma(x, p) = r."""
    node = MvlgammaBackward0()
    node.p = p
    node.save(input=x)
    record(node, (x,), r)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
# Every function here is elementwise: its Jacobian is diagonal, so the backward formula applied
# to the tangent (broadcast to the result, before any sum back to an input's shape) is J t.
# Real tangents only (None: the double backward).
def _diagonal_jvp(node, inputs, t, meta):
    if t[0] is None or t[0].dtype.is_complex:
        return None
    return [node.backward(t[0])[0].to(meta[0][1])]


def _binary_jvp(node, inputs, t, meta):
    """f(a, b): each tangent times its partial derivative, summed; None (the double backward,
    which raises PyTorch's "not implemented") for a tangent on an argument without a
    formula."""
    if any(ti is not None and ti.dtype.is_complex for ti in t):
        return None
    shape, dtype, _ = meta[0]
    a = node.saved("input") if node.a_tensor else node.a_number
    b = node.saved("other") if node.b_tensor else node.b_number
    total = None
    for ti, formula in zip(t, (node.grad_a, node.grad_b)):
        if ti is None:
            continue
        if formula is None:
            return None
        term = formula(ti if tuple(ti.shape) == shape else ti.expand(shape), a, b, None)
        total = term if total is None else total + term
    return [total.to(dtype)]


JVP = {
    SpecialUnaryBackward: _diagonal_jvp,
    SpecialBinaryBackward: _binary_jvp,
    PolygammaBackward0: _diagonal_jvp,
    MvlgammaBackward0: _diagonal_jvp,
}
