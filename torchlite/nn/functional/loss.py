"""Loss functions (torch.nn.functional's), with PyTorch's reductions ('mean', 'sum', 'none'), the
deprecated size_average/reduce arguments, and PyTorch's checks and messages.

cross_entropy with class indices is one fused op (log_softmax, then the nll kernel of
torchlite/_core/loss.pyx; its backward is (softmax - onehot) * weights / normaliser in one pass),
as is nll_loss; binary_cross_entropy(_with_logits) are single ops with their own backward
(loss_grad.py).  The other losses are compositions of differentiable Tensor ops, as PyTorch
composes most of them."""
from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

from ... import _dtype as D
from ..._tensor import Tensor, _wrap
from ..._dispatch import elementwise as _ew
from ..._dispatch import loss as _K
from ..._dispatch import reduction as _Rk
from ..._ops import elementwise as _P
from ..._ops import reduction as _R
from ..._ops.views import broadcast_tensors as _broadcast_tensors
from ..._ops.creation import ones_like as _ones_like, zeros as _zeros, arange as _arange
from ..._core.array import broadcast_shapes as _broadcast_shapes
from ...autograd.grad_mode import _state as _grad_state, no_grad as _no_grad
from ...autograd.graph import needs_grad
from . import loss_grad as _G
from ..._ops._kit import tensor_args
from ..._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
           "soft_margin_loss", "hinge_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss",
           "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "triplet_margin_with_distance_loss"]

_REDUCTIONS = {"none": _K.REDUCTION_NONE, "mean": _K.REDUCTION_MEAN, "sum": _K.REDUCTION_SUM}
_F32, _F64, _I64, _U8 = D.float32.code, D.float64.code, D.int64.code, D.uint8.code


# ---- reductions --------------------------------------------------------------------------------
def legacy_reduction(size_average, reduce, emit_warning=True):
    """The reduction named by the deprecated size_average/reduce pair (PyTorch's rule)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else ("sum" if reduce else "none")
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use "
                      f"reduction='{ret}' instead.", stacklevel=3)
    return ret


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        return legacy_reduction(size_average, reduce)
    return reduction


def _reduction_code(reduction):
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated, please use reduction='mean' "
                      "instead.", stacklevel=3)
        return _K.REDUCTION_MEAN
    try:
        return _REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _reduce(loss, reduction):
    """An elementwise loss reduced as asked."""
    return _apply_reduction(loss, _reduction_code(reduction))


def _apply_reduction(loss, code):
    if code == _K.REDUCTION_MEAN:
        return loss.mean()
    if code == _K.REDUCTION_SUM:
        return loss.sum()
    return loss


def _warn_size_mismatch(input, target, stacklevel=3):
    """PyTorch's broadcasting warning (stacklevel: by default the loss function's caller)."""
    if input.shape != target.shape:
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size "
                      f"({input.size()}). This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.",
                      stacklevel=stacklevel)


def _no_grad_for(name, **tensors):
    """PyTorch refuses a graph through the weight arguments it does not differentiate."""
    if _grad_state.enabled:
        for arg, t in tensors.items():
            if t is not None and t._requires_grad:
                raise RuntimeError(f"The function '{name}' is not differentiable with respect to "
                                   f"argument '{arg}'. This input cannot have requires_grad True.")


# ---- nll_loss and cross_entropy ----------------------------------------------------------------
def _compute_array(a):
    """a in a dtype the nll kernel takes: float16/bfloat16 widen to float32."""
    return a if a.dtype >= _F32 else _ew.cast(a, _F32)


def _check_nll_args(name, input, target, weight):
    """PyTorch's checks of nll_loss_nd; returns the class count."""
    nd = input._data.ndim
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"nll_loss_out_frame\" not implemented for "
                                  f"'{_ew._TORCH_NAMES[input._data.dtype]}'")
    if nd != 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    n_classes = input.shape[1] if nd >= 2 else input.shape[0]
    if nd <= 2:
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if nd == 1 and target.ndim == 1 and target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
    elif nd == 4:
        if target.ndim != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got "
                               f"targets of dimension: {target.ndim}")
        if tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: "
                               f"{list(target.shape)}")
    elif tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        raise RuntimeError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, "
                           f"got {list(target.shape)}")
    tdt = target._data.dtype
    if tdt != _I64 and tdt != _U8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_ew._TORCH_NAMES[tdt]}")
    if weight is not None:
        if weight.ndim != 1 or weight.numel() != n_classes:
            raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes "
                               f"or no classes but got weight tensor of shape: {list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"expected scalar type {_ew._TORCH_NAMES[input._data.dtype]} but "
                               f"found {_ew._TORCH_NAMES[weight._data.dtype]}")
    return n_classes


def _as_ncs(a, nd):
    """Array a (an input of `nd` dims, classes in dim 1, or dim 0 when 1-d) viewed [N, C, S]."""
    if nd == 1:
        return a.unsqueeze(0).unsqueeze(2)
    if nd == 2:
        return a.unsqueeze(2)
    shape = (a.shape[0], a.shape[1], _prod(a.shape[2:]))
    v = a.view(shape)
    return v if v is not None else _ew.contiguous(a).view(shape)


def _as_ns(t, nd):
    """Target array t viewed [N, S] for an input of nd dims."""
    if nd == 1:
        return t.view((1, 1))
    if nd == 2:
        return t.unsqueeze(1)
    shape = (t.shape[0], _prod(t.shape[1:]))
    v = t.view(shape)
    return v if v is not None else _ew.contiguous(t).view(shape)


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _nll(input, target, weight, ignore_index, red, from_logits):
    """The fused nll (from_logits=False: input holds log-probabilities) or cross-entropy
    (from_logits: log_softmax of input along the class dim first) over checked arguments."""
    a = input._data
    nd = a.ndim
    if from_logits:
        # the log-probabilities are computed once, in the kernel dtype, and kept for backward
        lp = _Rk.softmax(_compute_array(a), 1 if nd > 1 else 0, True)
    else:
        lp = _compute_array(a)
    lp3 = _as_ncs(lp, nd)
    t2 = _as_ns(target._data, nd)
    w = None if weight is None else _compute_array(weight._data)
    out, total = _K.nll_forward(lp3, t2, w, ignore_index, red)
    if red == _K.REDUCTION_NONE:
        out = out.view(target._data.shape if nd > 1 else ())
    if out.dtype != a.dtype:
        out = _ew.cast(out, a.dtype)
    out = _wrap(out)
    if weight is not None:
        _no_grad_for("nll_loss_forward", weight=weight)
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _G.record_nll(from_logits, nd > 2, input, target, out, lp3, t2, w, ignore_index, red,
                      total)
    return out


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100, reduce: bool | None = None,
             reduction: str = "mean") -> Tensor:
    """The negative log-likelihood loss of log-probabilities `input` ([N, C], [C] or
    [N, C, d1, ...]) for class indices `target`: -weight[t] * input[n, t], reduced
    ('mean' divides by the total weight of the targets that are not ignore_index)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(nll_loss, locals())
    tensor_args("nll_loss", input=input, target=target)
    red = _reduction_code(_reduction(size_average, reduce, reduction))
    _check_nll_args("nll_loss", input, target, weight)
    return _nll(input, target, weight, ignore_index, red, False)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy between the logits `input` ([N, C], [C] or [N, C, d1, ...]) and the target:
    class indices (int64 or uint8, shape of input without the class dim) or class
    probabilities (input's shape, floating).  weight rescales each class; label_smoothing mixes
    the target with the uniform distribution."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(cross_entropy, locals())
    # the common case first: [N, C] logits, int64 indices, no options (the training hot path)
    if (weight is None and size_average is None and reduce is None and not label_smoothing
            and type(input) is Tensor and type(target) is Tensor):
        a, t = input._data, target._data
        if (a.ndim == 2 and t.ndim == 1 and t.dtype == _I64 and a.shape[0] == t.shape[0]
                and a.dtype >= _F32 and reduction in _REDUCTIONS):
            return _nll(input, target, None, ignore_index, _REDUCTIONS[reduction], True)
    tensor_args("cross_entropy", input=input, target=target)
    red = _reduction_code(_reduction(size_average, reduce, reduction))
    if input.shape == target.shape:
        return _cross_entropy_probs(input, target, weight, ignore_index, red, label_smoothing)
    if label_smoothing:
        _check_label_smoothing(label_smoothing)
    n_classes = _check_nll_args("cross_entropy", input, target, weight)
    if label_smoothing > 0:
        return _cross_entropy_smoothed(input, target, weight, ignore_index, red,
                                       label_smoothing, n_classes)
    return _nll(input, target, weight, ignore_index, red, True)


def _check_label_smoothing(label_smoothing):
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")


def _class_view(t, input):
    """A per-class tensor t ([C]) shaped to broadcast along input's class dim."""
    return t if input.ndim == 1 else t.reshape([1, -1] + [1] * (input.ndim - 2))


def _cross_entropy_probs(input, target, weight, ignore_index, red, label_smoothing):
    """Cross-entropy with class-probability targets (PyTorch's formula, composed)."""
    if not target.is_floating_point():
        raise RuntimeError(f"Expected floating point type for target with class probabilities, "
                           f"got {_ew._TORCH_NAMES[target._data.dtype]}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    if weight is not None and (weight.ndim != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                           f"{n_classes} classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    if label_smoothing > 0:
        _check_label_smoothing(label_smoothing)
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    lsm = _R.log_softmax(input, class_dim)
    prod = lsm * target
    if weight is not None:
        prod = prod * _class_view(weight, input)
    if red == _K.REDUCTION_NONE:
        return -prod.sum(class_dim)
    if red == _K.REDUCTION_SUM:
        return -prod.sum()
    if input.numel() == 0:
        return -prod.sum() * math.nan
    return -prod.sum() / (input.numel() / n_classes)


def _cross_entropy_smoothed(input, target, weight, ignore_index, red, eps, n_classes):
    """(1 - eps) * nll(log_softmax) + eps / C * the loss against the uniform distribution, with
    ignored targets left out of both (PyTorch's formula)."""
    class_dim = 0 if input.ndim == 1 else 1
    lsm = _R.log_softmax(input, class_dim)
    nll = _nll(lsm, target, weight, ignore_index, red, False)
    keep = target != ignore_index
    if weight is not None:
        smooth = -(lsm * _class_view(weight, input)).sum(class_dim)
    else:
        smooth = -lsm.sum(class_dim)
    smooth = _P.where(keep, smooth, 0.0)
    if red == _K.REDUCTION_MEAN:
        if weight is not None:
            denom = _P.where(keep, weight[target.long().clamp(0, n_classes - 1)], 0.0).sum()
        else:
            denom = keep.sum()
        smooth = smooth.sum() / denom
    elif red == _K.REDUCTION_SUM:
        smooth = smooth.sum()
    return nll * (1 - eps) + smooth * (eps / n_classes)


# ---- binary cross-entropy ----------------------------------------------------------------------
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """-weight * (t * log(x) + (1 - t) * log(1 - x)), each log clamped at -100 (PyTorch's rule,
    so x = 0 or 1 gives a finite loss).  input must lie in [0, 1]."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(binary_cross_entropy, locals())
    tensor_args("binary_cross_entropy", input=input, target=target)
    red = _reduction_code(_reduction(size_average, reduce, reduction))
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input "
                         f"size ({input.size()}) is deprecated. Please ensure they have the same "
                         f"size.")
    if weight is not None:
        weight = weight.expand(_broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
    x, t = input.detach(), target.detach()
    if input.numel() and not x.is_meta and bool((~((x >= 0) & (x <= 1))).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    with _no_grad():
        loss = -(t * x.log().clamp(min=-100.0) + (1 - t) * (-x).log1p().clamp(min=-100.0))
        if weight is not None:
            loss = loss * weight
        out = _apply_reduction(loss, red)
    _no_grad_for("binary_cross_entropy", weight=weight)
    if (input._requires_grad or target._requires_grad) and (_grad_state.enabled or needs_grad(input, target)):
        _G.record_binary(_G.BinaryCrossEntropyBackward0, input, target, out, red, weight=weight)
    return out


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """binary_cross_entropy(sigmoid(input), target), computed stably from the logits:
    (1 - t) * x - (1 + (pos_weight - 1) * t) * logsigmoid(x), times weight."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(binary_cross_entropy_with_logits, locals())
    from .activation import logsigmoid
    tensor_args("binary_cross_entropy_with_logits", input=input, target=target)
    red = _reduction_code(_reduction(size_average, reduce, reduction))
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.size()}) must be the same as input size "
                         f"({input.size()})")
    with _no_grad():
        x, t = input.detach(), target.detach()
        log_sig = logsigmoid(x)
        if pos_weight is not None:
            log_sig = log_sig * ((pos_weight - 1) * t + 1)
        loss = (1 - t) * x - log_sig
        if weight is not None:
            loss = loss * weight
        out = _apply_reduction(loss, red)
    _no_grad_for("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    if (input._requires_grad or target._requires_grad) and (_grad_state.enabled or needs_grad(input, target)):
        _G.record_binary(_G.BinaryCrossEntropyWithLogitsBackward0, input, target, out, red,
                         weight=weight, pos_weight=pos_weight)
    return out


# ---- regression losses -------------------------------------------------------------------------
def _weighted(loss, weight, input, reduction):
    """PyTorch's weighted mse/l1: 'mean' divides by the sum of the weights."""
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    code = _reduction_code(reduction)
    if code == _K.REDUCTION_NONE:
        return loss
    if code == _K.REDUCTION_SUM:
        return loss.sum()
    return loss.sum() / weight.sum()


def _difference_loss(name, input, target, size_average, reduce, reduction, weight, pointwise):
    """What mse_loss and l1_loss share: pointwise(input - target) after broadcasting, reduced
    (weighted as _weighted does when weight is given)."""
    tensor_args(name, input=input, target=target)
    _warn_size_mismatch(input, target, stacklevel=4)
    reduction = _reduction(size_average, reduce, reduction)
    x, y = _broadcast_tensors(input, target)
    loss = pointwise(x - y)
    if weight is None:
        return _reduce(loss, reduction)
    return _weighted(loss, weight, input, reduction)


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """(input - target)^2, reduced (weight: per-element weights; 'mean' then divides by their
    sum)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(mse_loss, locals())
    return _difference_loss("mse_loss", input, target, size_average, reduce, reduction, weight,
                            _P.square)


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """|input - target|, reduced (weight as in mse_loss)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(l1_loss, locals())
    return _difference_loss("l1_loss", input, target, size_average, reduce, reduction, weight,
                            _P.abs)


def _smooth_l1(diff, beta):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta."""
    ad = diff.abs()
    return _P.where(ad < beta, diff * diff * (0.5 / beta), ad - 0.5 * beta)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """Quadratic for |d| < beta, linear beyond (beta = 0 is l1_loss)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(smooth_l1_loss, locals())
    tensor_args("smooth_l1_loss", input=input, target=target)
    _warn_size_mismatch(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    x, y = _broadcast_tensors(input, target)
    if beta == 0.0:
        return _reduce((x - y).abs(), reduction)
    return _reduce(_smooth_l1(x - y, beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta): delta * smooth_l1(beta=delta)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(huber_loss, locals())
    tensor_args("huber_loss", input=input, target=target)
    _warn_size_mismatch(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, y = _broadcast_tensors(input, target)
    d = x - y
    ad = d.abs()
    loss = _P.where(ad < delta, d * d * 0.5, (ad - 0.5 * delta) * delta)
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    return _reduce(loss * weight, reduction)


# ---- divergence and likelihood losses ----------------------------------------------------------
def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """target * (log(target) - input) (input holds log-probabilities; log_target: target too).
    'batchmean' divides the sum by the batch size, the mathematical KL divergence."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(kl_div, locals())
    tensor_args("kl_div", input=input, target=target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _P.xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim != 0 else total
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """exp(input) - target * input (log_input), or input - target * log(input + eps); full adds
    Stirling's approximation of log(target!) where target > 1."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(poisson_nll_loss, locals())
    tensor_args("poisson_nll_loss", input=input, target=target)
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + (target * (2 * math.pi)).log() * 0.5
        loss = loss + _P.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """0.5 * (log(var) + (input - target)^2 / var) (+ 0.5 log(2 pi) with full); var is clamped at
    eps without blocking its gradient, as in PyTorch.  var may be one dim short of input
    (homoscedastic) or differ from it in one broadcast dim."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(gaussian_nll_loss, locals())
    tensor_args("gaussian_nll_loss", input=input, target=target)
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _ones_like(input) * var
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and
                  sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # clamped in place of a clone, outside the graph: the gradient passes as if unclamped
    var = var.clone()
    with _no_grad():
        var.clamp_(min=eps)
    loss = (var.log() + (input - target).square() / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ---- margin and embedding losses ---------------------------------------------------------------
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -target * (input1 - input2) + margin)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(margin_ranking_loss, locals())
    tensor_args("margin_ranking_loss", input1=input1, input2=input2, target=target)
    reduction = _reduction(size_average, reduce, reduction)
    _reduction_code(reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but "
                           f"got sizes: input1: {input1.size()}, input2: {input2.size()}, target: "
                           f"{target.size()} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """input where target == 1, max(0, margin - input) where target == -1 (PyTorch's formula:
    the two terms masked by target != -1 and target != 1)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(hinge_embedding_loss, locals())
    tensor_args("hinge_embedding_loss", input=input, target=target)
    reduction = _reduction(size_average, reduce, reduction)
    _reduction_code(reduction)
    margin_term = _P.where(target != 1, (margin - input).clamp(min=0), 0.0)
    self_term = _P.where(target != -1, input, 0.0)
    return _reduce(margin_term + self_term, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target * input)) (computed as softplus, so it does not overflow)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(soft_margin_loss, locals())
    from .activation import softplus
    tensor_args("soft_margin_loss", input=input, target=target)
    reduction = _reduction(size_average, reduce, reduction)
    _reduction_code(reduction)
    return _reduce(softplus(-target * input), reduction)


_COSINE_EPS = 1e-12


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(cosine_embedding_loss, locals())
    tensor_args("cosine_embedding_loss", input1=input1, input2=input2, target=target)
    reduction = _reduction(size_average, reduce, reduction)
    _reduction_code(reduction)
    tdim = target.ndim
    if tdim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if tdim == 1 and (input1.ndim != 2 or input2.ndim != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if tdim == 0 and (input1.ndim != 1 or input2.ndim != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    prod = (input1 * input2).sum(tdim)
    mag1 = (input1 * input1).sum(tdim) + _COSINE_EPS
    mag2 = (input2 * input2).sum(tdim) + _COSINE_EPS
    cos = prod / (mag1 * mag2).sqrt()
    pos = _P.where(target == 1, 1 - cos, 0.0)
    neg = _P.where(target == -1, (cos - margin).clamp(min=0), 0.0)
    return _reduce(pos + neg, reduction)


def _pairwise_distance(x1, x2, p, eps):
    """||x1 - x2 + eps||_p over the last dim (PyTorch's pairwise_distance)."""
    from ..._ops.reduction import vector_norm
    dim = max(x1.ndim, x2.ndim) - 1
    return vector_norm(x1 - x2 + eps, p, dim)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the p-norm distance (swap:
    the negative distance is the smaller of d(a, n) and d(p, n))."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(triplet_margin_loss, locals())
    tensor_args("triplet_margin_loss", anchor=anchor, positive=positive, negative=negative)
    reduction = _reduction(size_average, reduce, reduction)
    _reduction_code(reduction)

    def distance(x1, x2):
        return _pairwise_distance(x1, x2, p, eps)
    return _triplet_loss(anchor, positive, negative, distance, margin, swap, reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """triplet_margin_loss with any distance_function(x1, x2) (default: the 2-norm pairwise
    distance)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(triplet_margin_with_distance_loss, locals())
    tensor_args("triplet_margin_with_distance_loss", anchor=anchor, positive=positive,
                 negative=negative)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if distance_function is None:
        def distance_function(x1, x2):
            return _pairwise_distance(x1, x2, 2.0, 1e-6)
    return _triplet_loss(anchor, positive, negative, distance_function, margin, swap, reduction)


def _triplet_loss(anchor, positive, negative, distance, margin, swap, reduction):
    """What both triplet losses compute once their arguments are checked: the margin and
    the ranks, then max(0, margin + d(a, p) - d(a, n)) reduced, d(a, n) being the smaller
    of d(a, n) and d(p, n) with swap."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pdim, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == pdim == n:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {pdim}D, "
                           f"and negative {n}D inputs")
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = _P.minimum(d_neg, distance(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """-(t * logsigmoid(x) + (1 - t) * logsigmoid(-x)), weighted, averaged over the classes
    (the last dim), then reduced over the samples."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(multilabel_soft_margin_loss, locals())
    from .activation import logsigmoid
    tensor_args("multilabel_soft_margin_loss", input=input, target=target)
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def _class_targets(input, target, name):
    """(x [N, C], t [N] int64) of a multi-class margin loss; input may be [C] with a 0-d or [1]
    target."""
    if input.ndim > 2:
        raise RuntimeError(f"{name}: Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    x = input.reshape(1, -1) if input.ndim <= 1 else input
    t = target.reshape(-1)
    if t.dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {_ew._TORCH_NAMES[t._data.dtype]}")
    if t.numel() != x.shape[0]:
        raise RuntimeError(f"inconsistent target size, expected {x.shape[0]} but got "
                           f"{list(target.shape)}")
    if t.numel() and not t.is_meta and (int(t.min()) < 0 or int(t.max()) >= x.shape[1]):
        raise RuntimeError("target out of range")
    return x, t


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average: bool | None = None,
                      reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: sum over the classes j != y of max(0, margin - x[y] + x[j])^p
    (times weight[y]), divided by the class count."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(multi_margin_loss, locals())
    tensor_args("multi_margin_loss", input=input, target=target)
    reduction = _reduction(size_average, reduce, reduction)
    code = _reduction_code(reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x, t = _class_targets(input, target, "multi_margin_loss")
    C = x.shape[1]
    if weight is not None and weight.numel() != C:
        raise RuntimeError(f"inconsistent weight size, expected {C} but got {list(weight.shape)}")
    picked = x.gather(1, t.unsqueeze(1))
    h = (x - picked + margin).clamp(min=0)
    if p == 2:
        h = h * h
    if weight is not None:
        h = h * weight.index_select(0, t).unsqueeze(1)
    h = _P.where(_one_hot_mask(t, C), 0.0, h)
    loss = h.sum(1) / C
    if input.ndim <= 1:
        loss = loss.reshape(())
    return _apply_reduction(loss, code)


def _one_hot_mask(t, C):
    """[N, C] bool: True at each row's class t[n]."""
    return t.unsqueeze(1) == _arange(C, device=t.device).unsqueeze(0)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: target lists each sample's classes, ended by the first -1; the
    loss sums max(0, 1 - (x[j] - x[k])) over listed classes j and unlisted classes k, divided
    by the class count."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(multilabel_margin_loss, locals())
    tensor_args("multilabel_margin_loss", input=input, target=target)
    reduction = _reduction(size_average, reduce, reduction)
    code = _reduction_code(reduction)
    x = input.reshape(1, -1) if input.ndim <= 1 else input
    t = target.reshape(x.shape) if input.ndim <= 1 else target
    if tuple(t.shape) != tuple(x.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    if t.dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {_ew._TORCH_NAMES[t._data.dtype]}")
    N, C = x.shape
    # the listed classes: entries before the first -1 of each row
    listed = (t != -1).long().cumprod(1).bool()
    if not t.is_meta and bool(((t < -1) | (t >= C)).logical_and(listed).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    safe = _P.where(listed, t, 0)
    is_target = _zeros(tuple(x.shape), dtype=D.int64, device=x.device).scatter_add(1, safe, listed.long()) > 0
    xj = x.gather(1, safe)                                          # [N, L]
    hinge = (1 - xj.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)       # [N, L, C]
    keep = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = _P.where(keep, hinge, 0.0).sum((1, 2)) / C
    if input.ndim <= 1:
        loss = loss.reshape(())
    return _apply_reduction(loss, code)
