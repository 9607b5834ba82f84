"""Backward formulas of the fused activations in activation.py.

Each activation that PyTorch computes as one op (elu, softplus, hardtanh, ...) is one op here
too: its forward runs outside the graph and one Node, named as PyTorch names it (`EluBackward0`,
...), holds its input.  (gelu and silu are kernel ops of their own, forward and backward: their
rows are in _ops/elementwise_grad.py's tables.)  The formulas are written with Tensor
ops, so they are differentiable again (create_graph=True gives second derivatives).  The nodes
reuse elementwise_grad.UnaryBackward: `formula(g, x, y, params)` with the saved input x and/or
result y.

Non-differentiable points follow PyTorch: hardtanh/hardsigmoid/threshold/shrink pass no gradient
at their bounds, leaky_relu/prelu take the negative slope at 0, elu-like ops take the x <= 0
branch at 0."""

from ..._ops import elementwise as _P
from ..._ops.elementwise_grad import UnaryBackward, _zero_where, threshold_grad
from ...autograd.graph import Node, pack, record, sum_to


def _node(name, formula, needs="x"):
    """A UnaryBackward subclass called `name` whose gradient is formula(g, x, y, params)."""
    return type(name, (UnaryBackward,), {"formula": staticmethod(formula),
                                         "needs_x": "x" in needs, "needs_y": "y" in needs})


def record_pointwise(cls, x, result, params=()):
    """Make `cls` (a node class from this file) the history of `result` = op(x)."""
    node = cls()
    node.params = params
    saved = {}
    if cls.needs_x:
        saved["self"] = pack(x, False)
    if cls.needs_y:
        saved["result"] = pack(result, True)
    node._saved = saved
    return record(node, (x,), result)


# ---- formulas (g: the output's gradient, x: the input, p: the op's parameters) ------------------
def _hardtanh_grad(g, x, y, p):
    lo, hi = p
    # PyTorch's test is "at or past a bound": a NaN input passes the gradient on
    return _zero_where((x <= lo) | (x >= hi), g)


def _leaky_relu_grad(g, x, y, p):
    return _P.where(x > 0, g, g * p[0])


def _elu_grad(g, x, y, p):
    """p = (alpha, scale, input_scale): x <= 0 gives alpha*scale*input_scale *
    exp(x*input_scale), else (x > 0 or NaN) scale.  The exponent is taken of min(x, 0) so the unused branch stays finite
    (a second derivative through where() would otherwise meet 0 * inf)."""
    alpha, scale, input_scale = p
    # min(x, 0) through where(): its slope at 0 is 0, so the second derivative at 0 is 0 (as
    # PyTorch's elu_double_backward, which masks with x < 0)
    neg = (_P.where(x < 0, x, 0.0) * input_scale).exp() * (alpha * scale * input_scale)
    return _P.where(x <= 0, g * neg, g * scale)       # (a NaN x: scale, as PyTorch)


def _mish_grad(g, x, y, p):
    from .activation import softplus
    t = softplus(x).tanh()
    return g * (t + x * x.sigmoid() * (1 - t * t))


def _softplus_grad(g, x, y, p):
    beta, threshold = p
    bx = x * beta
    return _P.where(bx > threshold, g, g * bx.sigmoid())


def _logsigmoid_grad(g, x, y, p):
    return g * (-x).sigmoid()


def _threshold_grad(g, x, y, p):
    return threshold_grad(g, x, p[0])        # a NaN input passes the gradient on, as PyTorch


def _shrink_grad(g, x, y, p):
    # PyTorch: no gradient inside [-lambd, lambd] (NaN inputs pass the gradient on)
    lambd = p[0]
    return _zero_where((x >= -lambd) & (x <= lambd), g)


def _rrelu_grad(g, x, y, p):
    noise, slope = p
    if noise is None:                   # eval mode: leaky_relu with the mean slope
        return _leaky_relu_grad(g, x, y, (slope,))
    return g * noise


HardtanhBackward0 = _node("HardtanhBackward0", _hardtanh_grad)
LeakyReluBackward0 = _node("LeakyReluBackward0", _leaky_relu_grad)
LeakyReluBackward1 = _node("LeakyReluBackward1", _leaky_relu_grad)
EluBackward0 = _node("EluBackward0", _elu_grad)
EluBackward1 = _node("EluBackward1", _elu_grad)
CeluBackward0 = _node("CeluBackward0", _elu_grad)
CeluBackward1 = _node("CeluBackward1", _elu_grad)
MishBackward0 = _node("MishBackward0", _mish_grad)
SoftplusBackward0 = _node("SoftplusBackward0", _softplus_grad)
LogSigmoidBackward0 = _node("LogSigmoidBackward0", _logsigmoid_grad)
ThresholdBackward0 = _node("ThresholdBackward0", _threshold_grad)
ThresholdBackward1 = _node("ThresholdBackward1", _threshold_grad)
SoftshrinkBackward0 = _node("SoftshrinkBackward0", _shrink_grad)
HardshrinkBackward0 = _node("HardshrinkBackward0", _shrink_grad)
RreluWithNoiseBackward0 = _node("RreluWithNoiseBackward0", _rrelu_grad)
RreluWithNoiseBackward1 = _node("RreluWithNoiseBackward1", _rrelu_grad)


class PreluKernelBackward0(Node):
    """prelu(x, w) = x if x > 0 else w * x, w broadcast along the channel dim (`wshape`: the
    weight viewed for broadcasting)."""

    def backward(self, g):
        x, w = self.saved("input"), self.saved("weight")
        wb = w.reshape(self.wshape)
        pos = x > 0
        gx = gw = None
        if self.next_functions[0][0] is not None:
            gx = _P.where(pos, g, g * wb)
        if self.next_functions[1][0] is not None:
            gw = sum_to(_zero_where(pos, g * x), self.wshape).reshape(w.shape)
        return gx, gw


def record_prelu(x, w, wshape, result):
    node = PreluKernelBackward0()
    node.wshape = wshape
    node.save(input=x, weight=w)
    return record(node, (x, w), result)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
# The activations above are UnaryBackward nodes, whose diagonal formulas forward_ad applies to
# the tangent itself; prelu has two inputs.
def _prelu_jvp(node, inputs, t, meta):
    """prelu(x, w): x's tangent (times w where x <= 0) plus, where x <= 0, x times w's
    tangent broadcast along the channel dim (the backward's slopes)."""
    if any(ti is not None and ti.dtype.is_complex for ti in t):
        return None
    x = node.saved("input")
    pos = x > 0
    total = None
    if t[0] is not None:
        total = _P.where(pos, t[0], t[0] * node.saved("weight").reshape(node.wshape))
    if t[1] is not None:
        term = _zero_where(pos, x * t[1].reshape(node.wshape))
        total = term if total is None else total + term
    return [total.to(meta[0][1])]


JVP = {PreluKernelBackward0: _prelu_jvp}
