"""The negative log-likelihood loss on the GPU: torchlite._core.loss's nll_forward and
nll_backward as the fused kernels of cuda_kernels/loss.cu (plus float64 sums of the
forward's losses and weights), and target_weights composed of the gather and elementwise
kernels.

Layout as on the CPU (torchlite/_core/loss.pyx): log-probabilities lp [N, C, S] of any
strides, targets [N, S] (int64 or uint8), class weights [C] or None.  A target out of
[0, C) other than ignore_index sets the kernels' range flag; the call then goes to the host
fallback, which raises the CPU's "Target 7 is out of bounds.".
"""
import ctypes
import struct

from .._core import elementwise as _cpu_ew
from .._core import indexing as _cpu_index
from .._core import loss as _cpu_loss
from . import _array, _kernels as K, _launch, _runtime
from ._conv import composed, is_cuda, need, require
from ._elementwise import binary, cast, ternary
from ._indexing import _in_range, along_dim
from ._reduction import reduce

NE, DIV = _cpu_ew.BINARY["ne"], _cpu_ew.BINARY["div"]
WHERE = _cpu_ew.TERNARY["where"]
_REAL = (K.FLOAT32, K.FLOAT64)
_THREADS = 256
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


def _geometry(lp, target, weight, ignore_index):
    N, C, S = lp.shape
    return struct.pack("<10q", N, C, S, *lp.strides, *target.strides,
                       weight.strides[0] if weight is not None else 0, ignore_index)


def _launch_nll(kind, lp, target, n, args, check=True):
    """Launch tl_nll_<kind> over n elements; False when a target was out of range (the host
    fallback then raises the CPU's error).  check=False does not read the kernel's range flag
    back (a synchronisation with the device): for targets a forward already checked."""
    device = lp.device_index
    word = _launch.ErrorWord.of(device)
    if check:
        word.reset()
    k = _launch.kernel("loss.cu", K.nll_kernel(kind, lp.dtype, target.dtype), device)
    _launch.launch(k, _launch.grid_for(n, device, _THREADS), _THREADS,
                   args + [_launch.ptr(word.address)])
    return not check or word.read() == 0


_ONE_BLOCK = 1 << 16       # targets up to which tl_nll_reduce sums a loss in one block


def _nll_reduced(lp, target, weight, ignore_index, mean):
    """(the 0-d loss, the total weight) of reduction 'sum' or 'mean' by tl_nll_reduce: one
    launch, and one copy back of the total weight with the range flag."""
    device = lp.device_index
    out = _array.empty((), lp.dtype, device)
    res = _array.empty((2,), K.FLOAT64, device)          # tl::NllResult: 16 bytes
    k = _launch.kernel("loss.cu", K.nll_kernel("reduce", lp.dtype, target.dtype), device)
    _launch.launch(k, 1, _THREADS, [
        _launch.ptr_of(lp), _launch.ptr_of(target), _launch.ptr_of(weight), _launch.ptr_of(out),
        _launch.ptr_of(res), _launch.struct(_geometry(lp, target, weight, ignore_index)),
        _launch.i32(int(mean))])
    raw = ctypes.create_string_buffer(16)
    _runtime.copy_d2h(device, ctypes.addressof(raw), res.data_ptr(), 16)
    total, err = struct.unpack("<di4x", raw.raw)
    require(err == 0)           # a target out of range: the host fallback raises the CPU's error
    return out, total


@composed("loss", "nll_forward")
def nll_forward(lp, target, weight, ignore_index, reduction):
    """(losses [N, S] for reduction 'none', else a 0-d sum or mean; the total weight of the
    targets that are not ignored, a Python float), by tl_nll_forward and float64 sums, or
    for a reduced loss of up to _ONE_BLOCK targets by tl_nll_reduce alone.  The total weight
    comes back to the host (the CPU function returns it as a Python float): the one
    synchronisation, which also reads the kernel's range flag."""
    _check_lp(lp, target, weight)
    require(reduction in (_cpu_loss.REDUCTION_NONE, _cpu_loss.REDUCTION_MEAN,
                          _cpu_loss.REDUCTION_SUM))
    N, C, S = lp.shape
    if reduction != _cpu_loss.REDUCTION_NONE and N * S <= _ONE_BLOCK:
        return _nll_reduced(lp, target, weight, ignore_index, reduction == _cpu_loss.REDUCTION_MEAN)
    losses = _array.empty((N, S), K.FLOAT64, lp.device_index)
    wsum = _array.empty((N, S), K.FLOAT64, lp.device_index)
    require(_launch_nll("forward", lp, target, N * S, [
        _launch.ptr_of(lp), _launch.ptr_of(target), _launch.ptr_of(weight), _launch.ptr_of(losses),
        _launch.ptr_of(wsum),
        _launch.struct(_geometry(lp, target, weight, ignore_index))]))
    total_weight = _array.to_host(need(reduce("sum", wsum, None, False))).item()
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
    ((exp(lp) - onehot(t)) * w[t] * grad * scale), by tl_nll_backward; grad: 0-d (CPU or
    CUDA) or [N, S].  Its only callers are the loss's autograd node, whose targets the forward
    checked (and the node's version check keeps them unchanged), so the range flag is not read
    back: a backward pass makes no synchronisation here (the kernel still skips a bad target)."""
    _check_lp(lp, target, weight)
    N, C, S = lp.shape
    require(grad.dtype == lp.dtype and (grad.ndim == 0 or (
        is_cuda(grad, 2) and grad.shape == (N, S) and grad.is_contiguous())))
    if not isinstance(grad, _array.CudaArray):                # a CPU scalar tensor's gradient
        grad = _array.from_host(grad, lp.device_index)
    dx = _array.empty((N, C, S), lp.dtype, lp.device_index)
    require(_launch_nll("backward", lp, target, N * C * S, [
        _launch.ptr_of(lp), _launch.ptr_of(target), _launch.ptr_of(weight), _launch.ptr_of(grad),
        _launch.i64(0 if grad.ndim == 0 else 1),
        _launch.ptr_of(dx), _launch.struct(_geometry(lp, target, weight, ignore_index)),
        _launch.f64(scale), _launch.i32(1 if softmax else 0)], check=False))
    return dx


@composed("loss", "target_weights")
def target_weights(target, weight, ignore_index, num_classes):
    """[N, S]: w[t] (1 without weights), 0 where t is ignored; weight's dtype, else float64."""
    require(is_cuda(target, 2, _TARGETS) and target.numel > 0 and num_classes >= 1)
    require(weight is None or (is_cuda(weight, 1, _REAL) and weight.shape[0] == num_classes))
    t = _Targets(target, ignore_index)
    if weight is None:
        require(_in_range(t.safe, num_classes, False))
        return t.weights(None, K.FLOAT64)
    return t.weights(weight, weight.dtype)
