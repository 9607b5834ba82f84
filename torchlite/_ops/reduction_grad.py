"""Backward formulas of the reductions, scans, softmax and norms in reduction.py.

Each node keeps what its formula needs (the input's shape and dtype, the reduced dims,
keepdim, the saved input and/or result) and returns the input's gradient written with Tensor
ops, so that it is differentiable again (create_graph=True gives second derivatives).

Ties follow PyTorch, op by op: amax/amin (and aminmax) share the gradient evenly between the
elements equal to the result of their slice; max()/min()/median()/nanmedian() without a dim
share it evenly between all the elements equal to the result (NaN counting as equal to a NaN
result); max/min/median/nanmedian along a dim give it all to the returned index.  Masks are
multiplied in rather than selected with where(), with every divisor made safe first, so the
formulas need only arithmetic, reductions and views."""
import math

from .. import _dtype as D
from .._tensor import _wrap_dim
from ..autograd.graph import Node, record
from ..autograd.grad_mode import _state as _grad_state


# ---- helpers -------------------------------------------------------------------------------
def reduced_dims(dim, ndim):
    """The dims a reduction over `dim` (an int, a sequence, or None/() for every dim) removes,
    as a sorted tuple of non-negative ints.  The forward op has validated dim already."""
    if ndim == 0:
        return ()
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        return tuple(sorted({_wrap_dim(d, ndim) for d in dim}))
    return (_wrap_dim(dim, ndim),)


def _cast(t, code):
    """t in the dtype whose code is `code` (a gradient goes back in its input's dtype)."""
    return t if t._data.dtype == code else t.to(D.DTYPES[code])


def _safe(t):
    """t with its zeros replaced by ones: a divisor whose zero entries are masked out after."""
    return t + (t == 0)


def _wants(node, i):
    """Whether input i of node gets a gradient (it requires grad)."""
    return node.next_functions[i][0] is not None


class _Reduction(Node):
    """A node over one input x reduced over `dim` (as the forward got it) with `keepdim`."""

    def setup(self, x, dim, keepdim):
        a = x._data
        self.shape, self.in_dtype, self.dim, self.keepdim = a.shape, a.dtype, dim, keepdim
        return self

    @property
    def dims(self):
        return reduced_dims(self.dim, len(self.shape))

    def count(self):
        """How many input elements each output element combines."""
        return math.prod(self.shape[d] for d in self.dims)

    def restore(self, t):
        """t (shaped like the output) with the reduced dims back as size 1, so that it
        broadcasts against the input."""
        if self.keepdim or not self.shape or not t._data.ndim:   # a 0-d t broadcasts as is
            return t
        dims = self.dims
        return t.reshape(tuple(1 if i in dims else s for i, s in enumerate(self.shape)))

    def expand(self, t):
        """t spread over the input's shape."""
        return self.restore(t).expand(self.shape)

    def dim_list(self):
        return list(self.dims)


def _record(node, input, outputs, /, **saved):
    """Save tensors on node (key=tensor; a key ending in '_out' is one of the op's own
    outputs) and link it into the graph with its one input; returns outputs."""
    for k, t in saved.items():
        if k.endswith("_out"):
            node.save_output(**{k: t})
        else:
            node.save(**{k: t})
    return record(node, (input,), outputs)


# ---- sums and means ------------------------------------------------------------------------
class SumBackward0(_Reduction):
    """sum over every dim."""

    def backward(self, g):
        return _cast(self.expand(g), self.in_dtype)


class SumBackward1(SumBackward0):
    """sum over some dims."""


class NansumBackward0(_Reduction):
    def backward(self, g):
        x = self.saved("x")
        return _cast(self.expand(g) * x.isnan().logical_not(), self.in_dtype)


class MeanBackward0(_Reduction):
    """mean over every dim."""

    def backward(self, g):
        return _cast(self.expand(g / self.count()) if self.count() else self.expand(g),
                     self.in_dtype)


class MeanBackward1(MeanBackward0):
    """mean over some dims."""


class NanmeanBackward0(_Reduction):
    def backward(self, g):
        keep = self.saved("x").isnan().logical_not()
        n = keep.sum(self.dim_list(), keepdim=True)
        return _cast(self.restore(g) / n * keep, self.in_dtype)


def record_sum(op, x, result, dim, keepdim):
    """Record sum / nansum / mean / nanmean of x."""
    if op == "sum":
        node = (SumBackward0 if dim is None else SumBackward1)().setup(x, dim, keepdim)
        return record(node, (x,), result)
    if op == "mean":
        node = (MeanBackward0 if dim is None else MeanBackward1)().setup(x, dim, keepdim)
        return record(node, (x,), result)
    cls = NansumBackward0 if op == "nansum" else NanmeanBackward0
    return _record(cls().setup(x, dim, keepdim), x, result, x=x)


# ---- prod ----------------------------------------------------------------------------------
def _exclusive_cumprod(x, d):
    """Along dim d (size > 0): the product of the elements before each one (1 first)."""
    from .creation import ones
    from .joining import cat
    n = x.shape[d]
    first = ones(x.narrow(d, 0, 1).shape, dtype=x.dtype, device=x.device)
    return cat([first, x.narrow(d, 0, n - 1)], d).cumprod(d) if n > 1 else first


def _product_of_others(x, d):
    """Along dim d: for each element, the product of all the others.  No division, so it is
    exact (and differentiable again) with zeros in x."""
    return _exclusive_cumprod(x, d) * _exclusive_cumprod(x.flip(d), d).flip(d)


class ProdBackward0(_Reduction):
    """prod over every element.  The gradient of an element is the product of the others:
    result / x when no element is zero, else computed without division."""

    def backward(self, g):
        x, result = self.saved("x"), self.saved("result_out")
        if not self.shape:                         # the product of one element is itself
            return _cast(g, self.in_dtype)
        gk = self.restore(g)
        if x.is_meta or not bool((x == 0).any()):       # (meta: no zeros to look for)
            return _cast(gk * self.restore(result) / x, self.in_dtype)
        if self.dim is None:
            others = _product_of_others(x.reshape(-1), 0).reshape(self.shape)
        else:
            others = _product_of_others(x, self.dims[0])
        return _cast(gk * others, self.in_dtype)


class ProdBackward1(ProdBackward0):
    """prod over one dim."""


def record_prod(x, result, dim, keepdim):
    node = (ProdBackward0 if dim is None else ProdBackward1)().setup(x, dim, keepdim)
    return _record(node, x, result, x=x, result_out=result)


# ---- max / min / median ----------------------------------------------------------------------
def _spread_evenly(x, value, g):
    """g shared evenly by the elements of x equal to the 0-d value (all NaNs if it is NaN)."""
    mask = (x == value) | (x.isnan() & value.isnan())
    return mask * (g / mask.sum())


class _EvenReduction(_Reduction):
    """max()/min()/median()/nanmedian() over every element."""

    def backward(self, g):
        return _spread_evenly(self.saved("x"), self.saved("result_out"), g)


MaxBackward1 = type("MaxBackward1", (_EvenReduction,), {})
MinBackward1 = type("MinBackward1", (_EvenReduction,), {})
MedianBackward0 = type("MedianBackward0", (_EvenReduction,), {})
NanmedianBackward0 = type("NanmedianBackward0", (_EvenReduction,), {})
_EVEN = {"max": MaxBackward1, "min": MinBackward1, "median": MedianBackward0,
         "nanmedian": NanmedianBackward0}


def record_even(op, x, result):
    return _record(_EVEN[op]().setup(x, None, False), x, result, x=x, result_out=result)


def _count_scaled(node, x, result, g):
    """amax/amin's rule: restore(g) shared evenly by the elements equal to their slice's
    result."""
    mask = x == node.restore(result)
    return node.restore(g) / mask.sum(node.dim_list(), keepdim=True) * mask


class AmaxBackward0(_Reduction):
    def backward(self, g):
        return _count_scaled(self, self.saved("x"), self.saved("result_out"), g)


class AminBackward0(AmaxBackward0):
    pass


def record_amax(is_min, x, result, dim, keepdim):
    node = (AminBackward0 if is_min else AmaxBackward0)().setup(x, dim, keepdim)
    return _record(node, x, result, x=x, result_out=result)


class AminmaxBackward0(_Reduction):
    def backward(self, g_min, g_max):
        x = self.saved("x")
        return (_count_scaled(self, x, self.saved("min_out"), g_min)
                + _count_scaled(self, x, self.saved("max_out"), g_max))


def record_aminmax(x, lo, hi, dim, keepdim):
    return _record(AminmaxBackward0().setup(x, dim, keepdim), x, (lo, hi), x=x, min_out=lo,
                   max_out=hi)


class _IndexReduction(_Reduction):
    """max/min/median/nanmedian along a dim: the gradient goes to the returned index."""

    def backward(self, g, g_indices=None):
        if not self.shape:
            return g
        from .creation import arange
        d = self.dims[0]
        idx = self.restore(self.saved("indices"))
        pos = arange(self.shape[d], device=g.device).reshape(tuple(-1 if i == d else 1
                                                   for i in range(len(self.shape))))
        return self.restore(g) * (pos == idx)


MaxBackward0 = type("MaxBackward0", (_IndexReduction,), {})
MinBackward0 = type("MinBackward0", (_IndexReduction,), {})
MedianBackward1 = type("MedianBackward1", (_IndexReduction,), {})
NanmedianBackward1 = type("NanmedianBackward1", (_IndexReduction,), {})
_BY_INDEX = {"max": MaxBackward0, "min": MinBackward0, "median": MedianBackward1,
             "nanmedian": NanmedianBackward1}


def record_by_index(op, x, values, indices, dim, keepdim, result):
    """Record a (values, indices) reduction along dim; `result` is the tuple returned."""
    node = _BY_INDEX[op]().setup(x, dim, keepdim)
    node.save(indices=indices)
    record(node, (x,), (values, indices))
    return result


# ---- variance --------------------------------------------------------------------------------
class _VarStd(_Reduction):
    def var_grad(self, g_var):
        """The gradient of var = sum((x - mean)^2) / (N - correction) for the output
        gradient g_var (kept dims)."""
        x = self.saved("x")
        dof = self.count() - self.correction
        scale = 2.0 / dof if dof != 0 else math.inf
        return g_var * scale * (x - x.mean(self.dim_list(), keepdim=True))

    def std_to_var(self, g, std):
        """d std = d var / (2 std), taken as 0 where std is 0 (as PyTorch)."""
        std = self.restore(std)
        return self.restore(g) / (_safe(std) * 2) * (std != 0)

    def mean_grad(self, g_mean):
        return self.expand(g_mean / self.count()) if self.count() else self.expand(g_mean)


class VarBackward0(_VarStd):
    def backward(self, g):
        return self.var_grad(self.restore(g))


class StdBackward0(_VarStd):
    def backward(self, g):
        return self.var_grad(self.std_to_var(g, self.saved("result_out")))


class VarMeanBackward0(_VarStd):
    def backward(self, g_var, g_mean):
        return self.var_grad(self.restore(g_var)) + self.mean_grad(g_mean)


class StdMeanBackward0(_VarStd):
    def backward(self, g_std, g_mean):
        return (self.var_grad(self.std_to_var(g_std, self.saved("result_out")))
                + self.mean_grad(g_mean))


_VAR = {(False, False): VarBackward0, (True, False): StdBackward0,
        (False, True): VarMeanBackward0, (True, True): StdMeanBackward0}


def record_var(x, result, dim, keepdim, correction, take_sqrt, want_mean):
    """Record var/std (result a tensor) or var_mean/std_mean (result the pair)."""
    node = _VAR[take_sqrt, want_mean]().setup(x, dim, keepdim)
    node.correction = correction
    first = result[0] if want_mean else result
    return _record(node, x, result, x=x, result_out=first)


# ---- logsumexp and norms ---------------------------------------------------------------------
class LogsumexpBackward0(_Reduction):
    def backward(self, g):
        x, result = self.saved("x"), self.saved("result_out")
        return self.restore(g) * (x - self.restore(result)).exp()


def record_logsumexp(x, result, dim, keepdim):
    return _record(LogsumexpBackward0().setup(x, dim, keepdim), x, result, x=x,
                   result_out=result)


class LinalgVectorNormBackward0(_Reduction):
    """PyTorch's rules: p=0 gives 0; p=1 sign(x); p=2 x / norm; p=inf/-inf shares the
    gradient evenly between the elements whose |x| is the norm; 0 < p < 1 masks x == 0; any
    other p is sign(x) |x|^(p-1) / norm^(p-1); a zero norm gives a zero gradient."""

    def backward(self, g):
        x, norm = self.saved("x"), self.restore(self.saved("result_out"))
        g, p = self.restore(g), self.p
        if p == 0:
            grad = self.expand(g) * 0
        elif p == 1:
            grad = x.sign() * g
        elif math.isinf(p):
            mask = x.abs() == norm
            grad = x.sign() * mask * (g / mask.sum(self.dim_list(), keepdim=True))
        elif p < 1:
            nz = x != 0
            grad = x.sign() * _safe(x.abs()) ** (p - 1) * nz * g * norm ** (1 - p)
        else:
            scale = g / _safe(norm) ** (p - 1) * (norm != 0)
            grad = x * scale if p == 2 else x.sign() * x.abs() ** (p - 1) * scale
        return _cast(grad, self.in_dtype)


def record_norm(x, result, p, dim, keepdim):
    node = LinalgVectorNormBackward0().setup(x, dim, keepdim)
    node.p = p
    return _record(node, x, result, x=x, result_out=result)


# ---- scans -----------------------------------------------------------------------------------
def _reverse_cumsum(t, dim):
    """sum over k >= j of t[k] along dim."""
    return t.flip(dim).cumsum(dim).flip(dim)


class _Scan(_Reduction):
    def setup_scan(self, x, dim):
        self.setup(x, dim, True)
        return self


class CumsumBackward0(_Scan):
    def backward(self, g):
        if not self.shape:
            return _cast(g, self.in_dtype)
        return _cast(_reverse_cumsum(g, self.dim), self.in_dtype)


class CumprodBackward0(_Scan):
    """d out_k / d x_j is the product of x_i over i <= k, i != j: out_k / x_j when x has no
    zero.  With zeros, see _cumprod_grad_with_zeros (first derivatives) and
    _cumprod_grad_exact (when the gradient itself is recorded, create_graph=True)."""

    def backward(self, g):
        x, result = self.saved("x"), self.saved("result_out")
        if not self.shape:
            return _cast(g, self.in_dtype)
        d = self.dims[0]
        zero = x == 0
        if x.is_meta or not bool(zero.any()):           # (meta: no zeros to look for)
            grad = _reverse_cumsum(g * result, d) / x
        elif _grad_state.enabled:
            grad = _cumprod_grad_exact(x, g, d)
        else:
            grad = _cumprod_grad_with_zeros(x, zero, result, g, d)
        return _cast(grad, self.in_dtype)


def _cumprod_grad_with_zeros(x, zero, result, g, d):
    """O(n), for first derivatives.  With z the first zero of a slice: before z the gradient
    is revcumsum(g * out) / x as without zeros (the terms from z on are 0); at z it is the same
    sum over the cumprod of x with x_z replaced by 1; after z it is 0.  Its value is right,
    its derivative is not (the masks hide how it depends on x_z)."""
    seen = zero.cumsum(d)                          # zeros met up to and including here
    before = seen == 0
    first = zero & (seen == 1)
    grad_before = _reverse_cumsum(g * result, d) / (x + zero) * before
    grad_first = _reverse_cumsum(g * (x + first).cumprod(d), d) * first
    return grad_before + grad_first


def _cumprod_grad_exact(x, g, d):
    """O(n^2), differentiable again with zeros: grad_j = (prod of x_i, i < j) * (g_j + sum
    over k > j of g_k * prod of x_i, j < i <= k), one j at a time."""
    from .joining import cat
    n = x.shape[d]
    tails = []
    for j in range(n):
        t = g.narrow(d, j, 1)
        if j + 1 < n:
            rest = g.narrow(d, j + 1, n - j - 1) * x.narrow(d, j + 1, n - j - 1).cumprod(d)
            t = t + rest.sum(d, keepdim=True)
        tails.append(t)
    return _exclusive_cumprod(x, d) * cat(tails, d)


class LogcumsumexpBackward0(_Scan):
    """grad_j = sum over k >= j of g_k exp(x_j - out_k), summed in log space, separately for
    the positive and the negative g, so that nothing overflows."""

    def backward(self, g):
        x, result = self.saved("x"), self.saved("result_out")
        d = self.dim
        if not self.shape:
            return g
        lowest = D.finfo(g.dtype).min             # log(0), kept finite: no inf - inf = nan
        log_abs = (g.abs() + (g == 0)).log()
        parts = []
        for mask in (g > 0, g < 0):
            log_g = log_abs * mask + mask.logical_not().to(g.dtype) * lowest
            rev = (log_g - result).flip(d).logcumsumexp(d).flip(d)
            parts.append((rev + x).exp())
        return parts[0] - parts[1]


class CummaxBackward0(_Scan):
    """Each output's gradient goes to the input index it took its value from."""

    def backward(self, g, g_indices=None):
        if not self.shape:
            return g
        from .creation import zeros
        idx = self.saved("indices")
        return zeros(self.shape, dtype=g.dtype, device=g.device).scatter_add(self.dim, idx, g)


class CumminBackward0(CummaxBackward0):
    pass


_SCANS = {"cumsum": CumsumBackward0, "cumprod": CumprodBackward0,
          "logcumsumexp": LogcumsumexpBackward0}


def record_scan(op, x, result, dim):
    node = _SCANS[op]().setup_scan(x, dim)
    if op == "cumsum":
        return record(node, (x,), result)
    return _record(node, x, result, x=x, result_out=result)


def record_cum_arg(is_min, x, values, indices, dim, result):
    node = (CumminBackward0 if is_min else CummaxBackward0)().setup_scan(x, dim)
    node.save(indices=indices)
    record(node, (x,), (values, indices))
    return result


# ---- softmax ---------------------------------------------------------------------------------
class SoftmaxBackward0(_Scan):
    log = False

    def backward(self, g):
        return _cast(softmax_backward(g, self.saved("result_out"), self.dim, self.log), self.in_dtype)


class LogSoftmaxBackward0(SoftmaxBackward0):
    log = True


def softmax_backward(g, y, dim, log):
    """The gradient of softmax (log_softmax when log) along dim from its result y and the
    result's gradient g: y * (g - sum(g * y)), or g - exp(y) * sum(g), the sums along dim;
    the row kernel where it applies, else these Tensor ops (differentiable again).  Eager
    autograd's and torchlite.compile's Python form (compiler/_lowering.softmax_grad) alike."""
    dx = _softmax_backward_kernel(y, g, dim, log)
    if dx is not None:
        return dx
    if log:
        return g - y.exp() * g.sum(dim, keepdim=True)
    return y * (g - (g * y).sum(dim, keepdim=True))


def _softmax_backward_kernel(y, g, dim, log):
    """The row kernel's gradient (one fused pass per row, PyTorch's _softmax_backward_data)
    for a CPU float result along its last dim, when no graph is recorded (create_graph=True
    needs the formula's ops); None otherwise."""
    if _grad_state.enabled or y._data.device != "cpu" or g._data.device != "cpu" \
            or g.dtype is not y.dtype or y.dtype not in (D.float32, D.float64) \
            or tuple(g.shape) != tuple(y.shape):
        return None
    from .._dispatch import reduction as _RK
    from .._tensor import _wrap
    dx = _RK.softmax_backward(y._data, g._data, dim, log)
    return None if dx is None else _wrap(dx)


def record_softmax(log, x, result, dim):
    node = (LogSoftmaxBackward0 if log else SoftmaxBackward0)().setup_scan(x, dim)
    return _record(node, x, result, result_out=result)


# ---- forward mode: J t for each node above (autograd/forward_ad.py reads JVP) ------------------
# Keys are node classes (a subclass takes its base's rule); a rule maps (node, inputs, tangents,
# meta) to the outputs' tangents, meta[i] = (shape, dtype, device) of output i.
def _reduced(node, t):
    """t summed over the node's reduced dims, kept or dropped as the forward did (dim None
    with keepdim: every dim kept as size 1)."""
    if node.dim is None and not node.keepdim:
        return t.sum()
    return t.sum(node.dim_list(), keepdim=node.keepdim)


def _softmax_jvp(node, inputs, t, meta):
    y = node.saved("result_out")                  # J = diag(y) - y y^T along dim
    return [y * (t[0] - (t[0] * y).sum(node.dim, keepdim=True))]


def _log_softmax_jvp(node, inputs, t, meta):
    p = node.saved("result_out").exp()            # J = I - 1 softmax^T along dim
    return [t[0] - (t[0] * p).sum(node.dim, keepdim=True)]


def _logsumexp_jvp(node, inputs, t, meta):
    x, result = node.saved("x"), node.saved("result_out")
    return [_reduced(node, t[0] * (x - node.restore(result)).exp())]


def _amax_jvp(node, inputs, t, meta):
    # the mean of the tangents at the extreme elements (the backward shares g evenly)
    mask = node.saved("x") == node.restore(node.saved("result_out"))
    return [_reduced(node, t[0] * mask) / _reduced(node, mask)]


def _var_tangent(node, x, t):
    """d var = 2 / (N - correction) * sum((x - mean) t) over the reduced dims."""
    dof = node.count() - node.correction
    scale = 2.0 / dof if dof != 0 else math.inf
    return _reduced(node, (x - x.mean(node.dim_list(), keepdim=True)) * t) * scale


def _mean_tangent(node, t):
    if node.dim is None and not node.keepdim:
        return t.mean()
    return t.mean(node.dim_list(), keepdim=node.keepdim)


def _var_std_jvp(node, inputs, t, meta):
    """var, std, var_mean, std_mean: d std = d var / (2 std), 0 where std is 0 (as the
    backward); the mean's tangent is the mean of the tangent."""
    x = node.saved("x")
    dv = _var_tangent(node, x, t[0])
    if isinstance(node, (StdBackward0, StdMeanBackward0)):
        std = node.saved("result_out")
        dv = dv / (_safe(std) * 2) * (std != 0)
    if isinstance(node, (VarMeanBackward0, StdMeanBackward0)):
        return [dv, _mean_tangent(node, t[0])]
    return [dv]


def _prod_jvp(node, inputs, t, meta):
    """sum of t times the product of the other elements (the backward's factor, computed
    without division, so zeros in x are exact)."""
    x = node.saved("x")
    if not node.shape:
        return [t[0]]
    if x.numel() == 0:              # an empty product is 1 whatever its (no) factors
        return [_reduced(node, t[0]).to(meta[0][1])]
    if node.dim is None:
        others = _product_of_others(x.reshape(-1), 0).reshape(node.shape)
    else:
        others = _product_of_others(x, node.dims[0])
    return [_reduced(node, t[0] * others).to(meta[0][1])]


def _even_jvp(node, inputs, t, meta):
    """max()/min()/median() over every element: the mean of the tangents where x equals the
    result (all NaNs if it is NaN), as the backward shares g."""
    x, value = node.saved("x"), node.saved("result_out")
    mask = (x == value) | (x.isnan() & value.isnan())
    return [(t[0] * mask).sum() / mask.sum()]


def _by_index_jvp(node, inputs, t, meta):
    """max/min/median along a dim: the tangent at the returned index (none for the
    indices)."""
    if not node.shape:
        return [t[0], None]
    idx = node.restore(node.saved("indices"))
    picked = t[0].gather(node.dims[0], idx)
    return [picked if node.keepdim else picked.squeeze(node.dims[0]), None]


def _aminmax_jvp(node, inputs, t, meta):
    """(min, max): each the mean of the tangents at its extreme elements, as amin/amax."""
    x = node.saved("x")
    out = []
    for key in ("min_out", "max_out"):
        mask = x == node.restore(node.saved(key))
        out.append(_reduced(node, t[0] * mask) / _reduced(node, mask))
    return out


def _nansum_jvp(node, inputs, t, meta):
    return [_reduced(node, t[0] * node.saved("x").isnan().logical_not()).to(meta[0][1])]


def _nanmean_jvp(node, inputs, t, meta):
    """The mean of the tangents of the non-NaN elements."""
    keep = node.saved("x").isnan().logical_not()
    return [(_reduced(node, t[0] * keep) / _reduced(node, keep)).to(meta[0][1])]


def _norm_jvp(node, inputs, t, meta):
    """Each input element feeds one output element, so row o of J is the backward of a one
    at o: J t = the reduction of backward(ones) * t (every case of the backward's p rules,
    ties of p=inf shared evenly, 0 for a zero norm, comes with it)."""
    from .creation import ones
    shape, dtype, device = meta[0]
    d_out = node.backward(ones(shape, dtype=dtype, device=device))
    return [_reduced(node, d_out * t[0]).to(dtype)]


def _cumprod_jvp(node, inputs, t, meta):
    """d out_k = sum over j <= k of t_j times the product of the other x_i, i <= k: out_k *
    cumsum(t / x)_k before the first zero of x; from the first zero z on, until a second one,
    only j = z has no zero factor: t_z * cumprod(x with x_z as 1)_k; after two zeros 0."""
    if not node.shape:
        return [t[0].to(meta[0][1])]
    x, result = node.saved("x"), node.saved("result_out")
    d = node.dims[0]
    zero = x == 0
    tx = t[0].to(meta[0][1])
    if x.is_meta or not bool(zero.any()):
        return [result * (tx / x).cumsum(d)]
    seen = zero.cumsum(d)                           # zeros met up to and including here
    first = zero & (seen == 1)
    before = result * (tx / (x + zero)).cumsum(d) * (seen == 0)
    at_first = (tx * first).sum(d, keepdim=True) * (x + first).cumprod(d) * (seen == 1)
    return [before + at_first]


def _logcumsumexp_jvp(node, inputs, t, meta):
    """d out_k = sum over j <= k of exp(x_j - out_k) t_j, summed in log space for the
    positive and the negative t apart (as the backward), so that nothing overflows."""
    if not node.shape:
        return [t[0]]
    x, result = node.saved("x"), node.saved("result_out")
    d, tx = node.dim, t[0]
    lowest = D.finfo(tx.dtype).min              # log(0), kept finite: no inf - inf = nan
    log_abs = (tx.abs() + (tx == 0)).log()
    parts = []
    for mask in (tx > 0, tx < 0):
        log_t = log_abs * mask + mask.logical_not().to(tx.dtype) * lowest
        parts.append(((log_t + x).logcumsumexp(d) - result).exp())
    return [parts[0] - parts[1]]


def _cum_arg_jvp(node, inputs, t, meta):
    """cummax/cummin: the tangent at the index each output took its value from (none for the
    indices)."""
    if not node.shape:
        return [t[0], None]
    return [t[0].gather(node.dim, node.saved("indices")), None]


LINEAR_JVP = {   # the op applied to the tangent: these hold for complex tangents too
    SumBackward0: lambda node, inputs, t, meta: [_reduced(node, t[0]).to(meta[0][1])],
    MeanBackward0: lambda node, inputs, t, meta: [
        (t[0].mean() if node.dim is None else t[0].mean(node.dim, keepdim=node.keepdim)).to(meta[0][1])],
    CumsumBackward0: lambda node, inputs, t, meta: [
        (t[0].cumsum(node.dim) if node.shape else t[0]).to(meta[0][1])],
}
JVP = {   # real tangents only
    SoftmaxBackward0: _softmax_jvp,
    LogSoftmaxBackward0: _log_softmax_jvp,
    LogsumexpBackward0: _logsumexp_jvp,
    AmaxBackward0: _amax_jvp,
    _VarStd: _var_std_jvp,
    ProdBackward0: _prod_jvp,
    _EvenReduction: _even_jvp,
    _IndexReduction: _by_index_jvp,
    AminmaxBackward0: _aminmax_jvp,
    NansumBackward0: _nansum_jvp,
    NanmeanBackward0: _nanmean_jvp,
    LinalgVectorNormBackward0: _norm_jvp,
    CumprodBackward0: _cumprod_jvp,
    LogcumsumexpBackward0: _logcumsumexp_jvp,
    CummaxBackward0: _cum_arg_jvp,
}
