"""Backward nodes of the fused losses in loss.py: nll_loss, cross_entropy (log_softmax + nll as
one op), binary_cross_entropy and binary_cross_entropy_with_logits.

nll / cross-entropy: the gradient is (softmax(x) * w[t] - onehot(t) * w[t]) * grad / norm for
cross-entropy and -onehot(t) * w[t] * grad / norm for nll (norm: the total weight for 'mean', else
1; ignored targets get no gradient).  A plain backward computes it in one pass of the loss
kernel (torchlite/_core/loss.pyx) from the saved log-probabilities; under create_graph it is
built from Tensor ops (softmax of the saved input, times constant one-hot and weight tensors),
so it is differentiable again.

The binary losses keep their reduction inside the node (PyTorch's BinaryCrossEntropyBackward0 is
the output's grad_fn, whatever the reduction); their formulas are Tensor ops."""
from ... import _dtype as D
from ..._tensor import _wrap
from ..._dispatch import elementwise as _ew
from ..._dispatch import loss as _K
from ..._dispatch import array as _A
from ..._ops import reduction as _R
from ...autograd.graph import Node, node_type, pack, unpack, record, _FREED, edge
from ...autograd.grad_mode import _state as _grad_state
from ...autograd import anomaly as _anomaly
from ...autograd import graph as _graph

NONE, MEAN, SUM = _K.REDUCTION_NONE, _K.REDUCTION_MEAN, _K.REDUCTION_SUM
_ONE = {D.float32.code: _A.full((), 1.0, D.float32.code), D.float64.code: _A.full((), 1.0, D.float64.code)}


class _NllNode(Node):
    """The node of nll_loss / cross_entropy.  Attributes set by record_nll:
    lp3: the log-probabilities as an [N, C, S] array (float32/float64); t2: the targets [N, S];
    w: the class weights (array) or None; ignore; red; scale (1 / total weight for 'mean');
    in_shape / in_dtype: the input's; class_dim."""

    softmax = False

    def backward(self, g):
        if self._released:
            raise RuntimeError(_FREED)
        saved = self._saved
        x = unpack(self, "self", saved["self"])
        unpack(self, "target", saved["target"])           # version check only
        if _grad_state.enabled:                             # create_graph: differentiable formula
            return (self._formula(g, x),)
        ga = g._data
        if ga.dtype != self.lp3.dtype:
            ga = _ew.cast(ga, self.lp3.dtype)
        if self.red == NONE:
            ga = _ew.contiguous(ga).view(self.t2.shape)
        dx = _K.nll_backward(self.lp3, self.t2, self.w, self.ignore, ga, self.scale, self.softmax)
        dx = dx.view(self.in_shape)
        if dx.dtype != self.in_dtype:
            dx = _ew.cast(dx, self.in_dtype)
        return (_wrap(dx),)

    def _formula(self, g, x):
        """The same gradient from Tensor ops (g and x may be part of a graph)."""
        N, C, S = self.lp3.shape
        dt = self.lp3.dtype
        onehot_w = _wrap(_K.nll_backward(self.lp3, self.t2, self.w, self.ignore, _ONE[dt], 1.0,
                                         False))           # -onehot(t) * w[t], a constant
        gs = g.to(D.DTYPES[dt]) if g._data.dtype != dt else g
        # every target ignored ('mean' over no weight): the gradient is 0, as the kernel's
        scale = 0.0 if self.scale == float("inf") else self.scale
        gs = (gs.reshape(N, 1, S) if self.red == NONE else gs) * scale
        if self.softmax:
            wt = _wrap(_K.target_weights(self.t2, self.w, self.ignore, C)).reshape(N, 1, S)
            if wt._data.dtype != dt:
                wt = wt.to(D.DTYPES[dt])
            xs = x.to(D.DTYPES[dt]) if x._data.dtype != dt else x
            p = _R.softmax(xs.reshape(N, C, S), 1)
            d = (p * wt + onehot_w) * gs
        else:
            d = onehot_w * gs
        d = d.reshape(self.in_shape)
        return d.to(D.DTYPES[self.in_dtype]) if d._data.dtype != self.in_dtype else d


class _SoftmaxNllNode(_NllNode):
    """cross_entropy: log_softmax and nll_loss in one node."""
    softmax = True


NllLossBackward0 = node_type("NllLossBackward0", _NllNode)
NllLoss2DBackward0 = node_type("NllLoss2DBackward0", _NllNode)
# cross_entropy's node carries the name PyTorch shows for its output (log_softmax + nll_loss)
CrossEntropyBackward = node_type("NllLossBackward0", _SoftmaxNllNode)
CrossEntropy2DBackward = node_type("NllLoss2DBackward0", _SoftmaxNllNode)


def record_nll(softmax, spatial, x, target, out, lp3, t2, w, ignore, red, total):
    """Make the nll (softmax=False) or cross-entropy node the history of out."""
    if softmax:
        node = CrossEntropy2DBackward() if spatial else CrossEntropyBackward()
    else:
        node = NllLoss2DBackward0() if spatial else NllLossBackward0()
    node._saved = {"self": pack(x, False), "target": pack(target, False)}
    node.lp3, node.t2, node.w, node.ignore, node.red = lp3, t2, w, ignore, red
    node.scale = (1.0 / total if total != 0 else float("inf")) if red == MEAN else 1.0
    node.in_shape, node.in_dtype = x._data.shape, x._data.dtype
    node.next_functions = (edge(x),)
    out._requires_grad = True
    out.grad_fn = node
    out._output_nr = 0
    if _anomaly._enabled:
        node._trace = _anomaly.current_trace()
    if _graph.forward_ad is not None:
        _graph.forward_ad.propagate(node, (x,), out)
    return out


# ---- binary cross-entropy -----------------------------------------------------------------------
class _BinaryLossNode(Node):
    """An elementwise binary loss with its reduction: `grads(g, v)` gives the gradients of the
    inputs (input, target) for the elementwise gradient g (already expanded and scaled)."""

    def backward(self, g):
        v = {k: self.saved(k) for k in self._saved}
        if self.red != NONE:
            g = g.expand(self.shape)
            if self.red == MEAN:
                g = g / self.numel
        gi, gt = self.grads(g, v)
        return (gi if self.next_functions[0][0] is not None else None,
                gt if self.next_functions[1][0] is not None else None)


class BinaryCrossEntropyBackward0(_BinaryLossNode):
    def grads(self, g, v):
        x, t, w = v["input"], v["target"], v.get("weight")
        if w is not None:
            g = g * w
        gi = gt = None
        if self.next_functions[0][0] is not None:
            gi = g * (x - t) / (x * (1 - x)).clamp(min=1e-12)
        if self.next_functions[1][0] is not None:
            gt = g * (-x).log1p().sub(x.log())
        return gi, gt


class BinaryCrossEntropyWithLogitsBackward0(_BinaryLossNode):
    def grads(self, g, v):
        x, t, w, pw = v["input"], v["target"], v.get("weight"), v.get("pos_weight")
        if w is not None:
            g = g * w
        gi = gt = None
        if self.next_functions[0][0] is not None:
            sig_neg = (-x).sigmoid()
            if pw is None:
                gi = g * ((1 - t) - sig_neg)
            else:
                gi = g * ((1 - t) - ((pw - 1) * t + 1) * sig_neg)
        if self.next_functions[1][0] is not None:
            if pw is None:
                gt = -g * x
            else:
                from .activation import logsigmoid
                gt = -g * (x + (pw - 1) * logsigmoid(x))
        return gi, gt


def record_binary(cls, x, target, out, red, **extra):
    """Record a binary-loss node over (x, target); extra: the non-differentiable weights."""
    node = cls()
    node.red, node.shape, node.numel = red, x._data.shape, x._data.numel
    node.save(input=x, target=target, **{k: v for k, v in extra.items() if v is not None})
    return record(node, (x, target), out)



# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
def _reduce_jvp(j, red, shape, mean):
    """The per-element tangents j reduced as the loss was (mean: the 'mean' of their sum)."""
    if red == NONE:
        return j.reshape(shape)
    return mean(j.sum()) if red == MEAN else j.sum()


def _nll_jvp(node, inputs, t, meta):
    """nll_loss is linear in its input: per element the loss of the tangent,
    -w[t] tangent[t]; cross_entropy's element loss w[t] (logsumexp(x) - x[t]) has the row
    w[t] (softmax(x) - onehot(t)) as its Jacobian.  Both rows are the gradient kernel's at a
    unit output gradient (ignored targets: zeros).  Then the loss's reduction ('mean' over
    the total weight: NaN when every target is ignored, as the loss itself)."""
    if t[0] is None or t[0].dtype.is_complex:
        return None
    N, C, S = node.lp3.shape
    dt = node.lp3.dtype
    rows = _wrap(_K.nll_backward(node.lp3, node.t2, node.w, node.ignore, _ONE[dt], 1.0, node.softmax))
    ts = t[0] if t[0]._data.dtype == dt else t[0].to(D.DTYPES[dt])
    j = (rows * ts.reshape(N, C, S)).sum(1)
    shape, dtype, _ = meta[0]
    return [_reduce_jvp(j, node.red, shape, lambda s: s * node.scale).to(dtype)]


def _bce_slopes(v):
    """d(element loss)/d input and / d target of binary_cross_entropy (without the weight):
    the backward's formulas."""
    x, t = v["input"], v["target"]
    return (x - t) / (x * (1 - x)).clamp(min=1e-12), (-x).log1p().sub(x.log())


def _bce_logits_slopes(v):
    x, t, pw = v["input"], v["target"], v.get("pos_weight")
    if pw is None:
        return (1 - t) - (-x).sigmoid(), -x
    from .activation import logsigmoid
    return (1 - t) - ((pw - 1) * t + 1) * (-x).sigmoid(), -(x + (pw - 1) * logsigmoid(x))


def _binary_jvp(slopes):
    """The binary losses' elements have diagonal Jacobians in input and target: each slope
    times its tangent, summed, times the weight, then the reduction ('mean': over the
    elements, NaN for none)."""
    def rule(node, inputs, t, meta):
        if any(ti is not None and ti.dtype.is_complex for ti in t):
            return None
        v = {k: node.saved(k) for k in node._saved}
        j = None
        for ti, slope in zip(t, slopes(v)):
            if ti is not None:
                term = ti * slope
                j = term if j is None else j + term
        if "weight" in v:
            j = j * v["weight"]
        shape, dtype, _ = meta[0]
        return [_reduce_jvp(j, node.red, shape, lambda s: s / node.numel).to(dtype)]
    return rule


JVP = {
    _NllNode: _nll_jvp,                 # NllLossBackward0 / NllLoss2DBackward0, cross_entropy's too
    BinaryCrossEntropyBackward0: _binary_jvp(_bce_slopes),
    BinaryCrossEntropyWithLogitsBackward0: _binary_jvp(_bce_logits_slopes),
}
