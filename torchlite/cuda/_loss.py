"""The negative log-likelihood loss on the GPU, composed of the gather, scatter, reduction and
elementwise kernels: torchlite._core.loss's nll_forward, nll_backward and target_weights.

Layout as on the CPU (torchlite/_core/loss.pyx): log-probabilities lp [N, C, S] of any
strides, targets [N, S] (int64 or uint8), class weights [C] or None.  An ignored target
(== ignore_index) is replaced by class 0 for the gathers and masked out of every result, so
it never reaches an index; any other target out of [0, C) makes the gather or scatter kernel
decline (its range check), and the host fallback then raises the CPU's "Target 7 is out of
bounds.".  The reduced losses are summed in float64 from the float64 products -w[t] * lp,
as the CPU does; the total weight comes back to the host (the CPU function returns it as a
Python float), which is the one synchronisation of the forward.
"""
from .._core import elementwise as _cpu_ew
from .._core import index as _cpu_index
from .._core import loss as _cpu_loss
from . import _array, _kernels as K
from ._conv import composed, is_cuda, need, require, zeros
from ._elementwise import binary, cast, ternary, unary
from ._index import along_dim
from ._reduce import reduce

NE, MUL, DIV = (_cpu_ew.BINARY[k] for k in ("ne", "mul", "div"))
NEG, EXP = _cpu_ew.UNARY["neg"], _cpu_ew.UNARY["exp"]
WHERE = _cpu_ew.TERNARY["where"]
_REAL = (K.FLOAT32, K.FLOAT64)
_TARGETS = (K.INT64, K.UINT8)


def _gather(a, dim, index):
    return need(along_dim(_cpu_index.GATHER, a, dim, index))


def _where(mask, a, b):
    return need(ternary(WHERE, mask, a, b))


class _Targets:
    """The targets as int64 `safe` (ignored ones replaced by class 0) and the bool mask
    `kept` of the others, both [N, S]."""

    def __init__(self, target, ignore_index):
        t = need(cast(target, K.INT64))
        self.kept = need(binary(NE, t, ignore_index))
        self.safe = _where(self.kept, t, 0)
        self.N, self.S = target.shape

    def weights(self, weight, dtype):
        """w[t] (1 without weights) where kept, else 0: an [N, S] array of dtype.  With
        weights the gather checks every target's range."""
        if weight is None:
            return need(cast(self.kept, dtype))
        w = need(cast(weight, dtype))
        picked = _gather(w, 0, self.safe.view((self.N * self.S,))).view((self.N, self.S))
        return _where(self.kept, picked, 0.0)


def _check_lp(lp, target, weight):
    """The CPU's _geometry checks, and non-empty sizes."""
    require(is_cuda(lp, 3, _REAL) and is_cuda(target, 2, _TARGETS) and lp.numel > 0
            and target.shape == (lp.shape[0], lp.shape[2]))
    require(weight is None or (is_cuda(weight, 1, (lp.dtype,)) and weight.shape[0] == lp.shape[1]))


@composed("loss", "nll_forward")
def nll_forward(lp, target, weight, ignore_index, reduction):
    """(losses [N, S] for reduction 'none', else a 0-d sum or mean; the total weight of the
    targets that are not ignored, a Python float)."""
    _check_lp(lp, target, weight)
    require(reduction in (_cpu_loss.REDUCTION_NONE, _cpu_loss.REDUCTION_MEAN,
                          _cpu_loss.REDUCTION_SUM))
    N, C, S = lp.shape
    t = _Targets(target, ignore_index)
    picked = _gather(lp, 1, t.safe.view((N, 1, S))).view((N, S))     # checks the targets
    wt = t.weights(weight, K.FLOAT64)
    # -w[t] * lp[t] in float64 (exact for float32 operands: rounded once, as the CPU's)
    losses = _where(t.kept, need(unary(NEG, need(binary(MUL, wt, picked)))), 0.0)
    total_weight = _array.to_host(need(reduce("sum", wt, None, False))).item()
    if reduction == _cpu_loss.REDUCTION_NONE:
        return need(cast(losses, lp.dtype)), total_weight
    out = need(reduce("sum", losses, None, False))
    if reduction == _cpu_loss.REDUCTION_MEAN:
        out = need(binary(DIV, out, total_weight))      # 0 / 0 = NaN when every target is ignored
    return need(cast(out, lp.dtype)), total_weight


@composed("loss", "nll_backward")
def nll_backward(lp, target, weight, ignore_index, grad, scale, softmax):
    """The gradient, a contiguous [N, C, S] array of lp's dtype, with respect to lp
    (-onehot(t) * w[t] * grad * scale) or, with softmax, to the logits of lp = log_softmax
    ((exp(lp) - onehot(t)) * w[t] * grad * scale); grad: 0-d (CPU or CUDA) or [N, S]."""
    _check_lp(lp, target, weight)
    N, C, S = lp.shape
    require(grad.dtype == lp.dtype and (grad.ndim == 0 or (
        is_cuda(grad, 2) and grad.shape == (N, S) and grad.is_contiguous())))
    t = _Targets(target, ignore_index)
    # f = w[t] * scale * grad in float64, 0 for ignored targets (the CPU zeroes their rows)
    f = need(binary(MUL, need(binary(MUL, t.weights(weight, K.FLOAT64), scale)), grad))
    f = need(cast(_where(t.kept, f, 0.0), lp.dtype)).view((N, 1, S))
    if softmax:
        dx = _array.empty((N, C, S), lp.dtype, lp.device_index)
        need(unary(EXP, lp, out=dx))
        need(binary(MUL, dx, f, out=dx))
        need(ternary(WHERE, t.kept.view((N, 1, S)), dx, 0.0, out=dx))
    else:
        dx = zeros((N, C, S), lp.dtype, lp.device_index)
    # dx[n, t, s] -= f[n, s] (checks the targets' range before writing)
    need(along_dim(_cpu_index.ADD, dx, 1, t.safe.view((N, 1, S)), src=need(unary(NEG, f))))
    return dx


@composed("loss", "target_weights")
def target_weights(target, weight, ignore_index, num_classes):
    """[N, S]: w[t] (1 without weights), 0 where t is ignored; weight's dtype, else float64."""
    require(is_cuda(target, 2, _TARGETS) and target.numel > 0 and num_classes >= 1)
    require(weight is None or (is_cuda(weight, 1, _REAL) and weight.shape[0] == num_classes))
    t = _Targets(target, ignore_index)
    if weight is None:
        require(_in_range(t.safe, num_classes))
        return t.weights(None, K.FLOAT64)
    return t.weights(weight, weight.dtype)


def _in_range(index, size):
    """Whether every entry of int64 `index` lies in [0, size)."""
    lo = _array.to_host(need(reduce("amin", index, None, False))).item()
    hi = _array.to_host(need(reduce("amax", index, None, False))).item()
    return lo >= 0 and hi < size
