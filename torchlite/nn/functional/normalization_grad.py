"""Backward nodes of batch_norm, layer_norm and group_norm (normalization.py).

Each norm is one op with one node named as PyTorch's (NativeBatchNormBackward0,
NativeLayerNormBackward0, NativeGroupNormBackward0).  All three normalise x over a set of
`stat_dims` of a view of it (xv), with per-slice mean and invstd = 1 / sqrt(var + eps), then apply
a weight and bias broadcast along the channel or trailing dims.  With xhat = (x - mean) * invstd
and gh = g * weight (the gradient reaching xhat), over the n elements of a slice:

    dx = invstd * (gh - mean(gh) - xhat * mean(gh * xhat))       (statistics of the batch)
    dx = invstd * gh                                              (fixed statistics: eval mode)
    dweight = sum(g * xhat), dbias = sum(g)                        (over the non-affine dims)

`_formula` computes these with Tensor ops: under create_graph the statistics are recomputed from
the saved input with differentiable ops, so the gradient is differentiable again in x, weight
and the output gradient (double backward).  A plain backward of batch and layer norm computes
the same gradients with the fused kernels of torchlite/_core/norm.pyx (two passes over x)."""
from ..._tensor import _wrap
from ..._dispatch import elementwise as _ew
from ..._dispatch import norm as _NK
from ..._ops import reduction as _R
from ...autograd.graph import Node, node_type, record
from ...autograd.grad_mode import _state as _grad_state


def stats(xv, stat_dims, eps):
    """(mean, invstd) of xv over stat_dims (biased variance), keepdim."""
    var, mean = _R.var_mean(xv, stat_dims, correction=0, keepdim=True)
    return mean, (var + eps).rsqrt()


def dense(t, shape):
    """The array of tensor t, contiguous, viewed as `shape`."""
    a = t._data if t._data.is_contiguous() else _ew.contiguous(t._data)
    return a.view(shape)


class _NormBackward(Node):
    """Attributes (set by record_norm): view_shape (xv's shape, or None when xv is x),
    stat_dims, n (elements per slice), eps, batch_stats (statistics from the batch, else fixed),
    affine_shape (weight/bias viewed to broadcast with x), affine_dims (the dims of x that
    dweight and dbias sum over)."""

    kernel = None           # the fused backward, when the node has one

    def backward(self, g):
        x = self.saved("input")
        w = self.saved("weight") if "weight" in self._saved else None
        want = tuple(e[0] is not None for e in self.next_functions)
        if _grad_state.enabled or self.kernel is None:
            return self._formula(g, x, w, *want)
        return self.kernel(g, w, *want)

    def _formula(self, g, x, w, want_x, want_w, want_b):
        if _grad_state.enabled and self.batch_stats:       # create_graph: stats as functions of x
            mean, invstd = stats(self._view(x), self.stat_dims, self.eps)
        else:
            mean, invstd = self.stat_tensors()
        wb = w.reshape(self.affine_shape) if w is not None else None
        xhat = (self._view(x) - mean) * invstd
        gx = gw = gb = None
        if want_x:
            gh = self._view(g * wb if wb is not None else g)
            if self.batch_stats:
                dims, n = self.stat_dims, self.n
                k_mean = gh.sum(dims, keepdim=True) / n
                k_xhat = (gh * xhat).sum(dims, keepdim=True) / n
                gx = (gh - k_mean - xhat * k_xhat) * invstd
            else:
                gx = gh * invstd
            gx = gx.reshape(x.shape)
        if want_w:
            gw = (g * xhat.reshape(x.shape)).sum(self.affine_dims).reshape(w.shape)
        if want_b:
            gb = g.sum(self.affine_dims).reshape(self.bias_shape)
        return gx, gw, gb

    def stat_tensors(self):
        """The forward's (mean, invstd), shaped to broadcast with the view of x."""
        return self.mean, self.invstd

    def _view(self, t):
        return t if self.view_shape is None else t.reshape(self.view_shape)


class NativeBatchNormBackward0(_NormBackward):
    """Batch norm's node; mean64/invstd64: the per-channel statistics the forward used (float64
    [C] arrays); x3: the input as a contiguous [N, C, S] array; w1: the weight's array."""

    def stat_tensors(self):
        dt = self.x3.dtype
        return (_wrap(_ew.cast(self.mean64, dt)).reshape(self.affine_shape),
                _wrap(_ew.cast(self.invstd64, dt)).reshape(self.affine_shape))

    def kernel(self, g, w, want_x, want_w, want_b):
        x3 = self.x3
        dx, dw, db = _NK.batch_norm_backward(dense(g, x3.shape), x3, self.mean64, self.invstd64,
                                             self.w1, self.batch_stats, want_x, want_w, want_b)
        return (_wrap(dx.view(tuple(g.shape))) if want_x else None,
                _wrap(dw) if want_w else None,
                _wrap(db) if want_b else None)


class NativeLayerNormBackward0(_NormBackward):
    """Layer norm's node; x2: the input as a contiguous [M, K] array, mean2/rstd2 its row
    statistics ([M] arrays of x's dtype), w1: the weight as a [K] array (or None)."""

    def stat_tensors(self):
        shape = self.saved("input")._data.shape
        k = len(self.stat_dims)
        stat_shape = shape[:len(shape) - k] + (1,) * k
        return _wrap(self.mean2.view(stat_shape)), _wrap(self.rstd2.view(stat_shape))

    def kernel(self, g, w, want_x, want_w, want_b):
        x2 = self.x2
        g2 = dense(g, x2.shape)
        dx, dw, db = _NK.layer_norm_backward(g2, x2, self.mean2, self.rstd2, self.w1, want_x,
                                             want_w, want_b)
        return (_wrap(dx.view(tuple(g.shape))) if want_x else None,
                _wrap(dw.view(tuple(w.shape))) if want_w else None,
                _wrap(db.view(self.bias_shape)) if want_b else None)


NativeGroupNormBackward0 = node_type("NativeGroupNormBackward0", _NormBackward)


def record_norm(cls, x, weight, bias, out, mean, invstd, *, view_shape, stat_dims, n, eps,
                batch_stats, affine_shape, affine_dims, **kernel_state):
    """Make a norm node the history of out (mean/invstd: the statistics the forward used, shaped
    to broadcast with x viewed as view_shape, or None when the node keeps them in
    kernel_state)."""
    node = cls()
    node.save(input=x)
    if weight is not None:
        node.save(weight=weight)
    node.mean, node.invstd = mean, invstd
    node.view_shape, node.stat_dims, node.n, node.eps = view_shape, stat_dims, n, eps
    node.batch_stats, node.affine_shape, node.affine_dims = batch_stats, affine_shape, affine_dims
    node.bias_shape = tuple(bias.shape) if bias is not None else None
    for k, v in kernel_state.items():
        setattr(node, k, v)
    return record(node, (x, weight, bias), out)


# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
def _norm_jvp(node, inputs, tangents, meta):
    """y = xhat w + b with xhat = (x - mean) invstd: with batch statistics the tangent of xhat
    is invstd (t - mean(t) - xhat mean(xhat t)) over the statistics' dims, with fixed ones
    invstd t; then w t_xhat + xhat t_w + t_b.  Outputs past the first (saved statistics) get
    none."""
    tx, tw, tb = (list(tangents) + [None, None, None])[:3]
    x = node.saved("input")
    w = node.saved("weight") if "weight" in node._saved else None
    mean, invstd = node.stat_tensors()
    xhat = (node._view(x) - mean) * invstd
    total = None
    if tx is not None:
        th = node._view(tx)
        if node.batch_stats:
            dims, n = node.stat_dims, node.n
            th = th - th.sum(dims, keepdim=True) / n - xhat * (xhat * th).sum(dims, keepdim=True) / n
        total = (th * invstd).reshape(x.shape)
        if w is not None:
            total = total * w.reshape(node.affine_shape)
    if tw is not None:
        term = xhat.reshape(x.shape) * tw.reshape(node.affine_shape)
        total = term if total is None else total + term
    if tb is not None:
        term = tb.reshape(node.affine_shape).expand(x.shape)
        total = term if total is None else total + term
    return [total] + [None] * (len(meta) - 1)


JVP = {_NormBackward: _norm_jvp}
