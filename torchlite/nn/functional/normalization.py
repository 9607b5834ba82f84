"""Normalisation layers as functions: batch_norm, layer_norm, group_norm, instance_norm,
rms_norm, local_response_norm and normalize.

batch_norm, layer_norm and group_norm are single ops with their own backward
(normalization_grad.py: NativeBatchNormBackward0, ...): the forward runs outside the graph (batch
and layer norm in the fused kernels of torchlite/_core/norm.pyx, group norm on Tensor ops), and
the node keeps the input and the statistics.  The normalisation uses the biased variance; batch_norm's running_var
is updated with the unbiased one, as in PyTorch.  float16/bfloat16 inputs are normalised in
float32 (PyTorch's accumulate type) and the result cast back.  instance_norm is batch_norm over
a (1, N*C, ...) view, rms_norm and normalize are compositions, as in PyTorch."""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

from ... import _dtype as D
from ..._tensor import _wrap
from ..._dispatch import elementwise as _ew
from ..._ops import elementwise as _P
from ..._ops import reduction as _R
from ..._ops.joining import cat as _cat
from ..._ops.creation import zeros as _zeros
from ...autograd.grad_mode import no_grad as _no_grad
from ...autograd.graph import needs_grad
from ..._dispatch import norm as _NK
from . import normalization_grad as _G
from ..._ops._kit import tensor_arg
from ..._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._tensor import Tensor

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
           "local_response_norm", "normalize"]


def _float_input(input, kernel):
    tensor_arg(input, kernel, "input")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_ew._TORCH_NAMES[input._data.dtype]}'")


def _is_half(t):
    return t.dtype in (D.float16, D.bfloat16)


def _widen(t):
    """A float16/bfloat16 tensor (or None) in float32, through a differentiable cast."""
    return t.float() if t is not None and _is_half(t) else t


def _check_param_dtype(input, name, t):
    """PyTorch allows float32 parameters with a reduced-precision input, else one dtype."""
    if t is None or t.dtype is input.dtype or (_is_half(input) and t.dtype is D.float32):
        return
    raise RuntimeError(f"mixed dtype (CPU): expect parameter to have scalar type of "
                       f"{_ew._TORCH_NAMES[input._data.dtype]}")


def _affine(xhat, weight, bias, affine_shape):
    """xhat * weight + bias, the parameters viewed as affine_shape (outside the graph)."""
    y = xhat
    if weight is not None:
        y = y * weight.detach().reshape(affine_shape)
    if bias is not None:
        y = y + bias.detach().reshape(affine_shape)
    return y


def _needs_node(*tensors):
    return needs_grad(*tensors)


# ---- batch norm --------------------------------------------------------------------------------
def _check_channel_vector(name, t, channels):
    if t is not None and t.numel() != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")


def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{size}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-05) -> Tensor:
    """Normalise each channel (dim 1) over the batch and spatial dims, then scale by weight and
    shift by bias.  training: use the batch's statistics and update running_mean/running_var
    in place (momentum: the weight of the new value); else use the running statistics."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(batch_norm, locals())
    _float_input(input, "batch_norm")
    if training:
        _verify_batch_size(input.size())
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    if not training and running_mean is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    channels = input.shape[1] if input.ndim > 1 else 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_channel_vector(name, t, channels)
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and not (t.dtype is input.dtype or (_is_half(input) and t.dtype is D.float32)):
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    for name, t in (("weight", weight), ("bias", bias)):
        _check_param_dtype(input, name, t)
    if _is_half(input):
        out = _batch_norm(input.float(), running_mean, running_var, _widen(weight), _widen(bias),
                          training, momentum, eps)
        return out.to(input.dtype)
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    """batch_norm of a float32/float64 input by the fused kernel of torchlite/_core/norm.pyx
    (statistics, per-channel coefficients in float64, one pass to normalise)."""
    if input.ndim < 2 or input.shape[1] == 0:
        # no channels (PyTorch counts none for a 1-d input): nothing to normalise; a copy in
        # the graph
        return input.clone()
    nd, N, C = input.ndim, input.shape[0], input.shape[1]
    dims = (0,) + tuple(range(2, nd))
    bshape = (1, C) + (1,) * (nd - 2)
    n = input.numel() // C
    S = 1
    for s_ in input._data.shape[2:]:
        S *= s_
    x3 = _G.dense(input, (N, C, S))
    w1 = _G.dense(weight, (C,)) if weight is not None else None
    b1 = _G.dense(bias, (C,)) if bias is not None else None
    if training:
        y, mean, var, invstd = _NK.batch_norm_forward(x3, w1, b1, None, None, eps)
        if running_mean is not None and n > 0:
            with _no_grad():
                _update_running(running_mean, running_var, _wrap(mean), _wrap(var), n, momentum)
    else:
        stats = [_ew.cast(_ew.contiguous(t._data), D.float64.code)
                 for t in (running_mean, running_var)]
        y, mean, var, invstd = _NK.batch_norm_forward(x3, w1, b1, *stats, eps)
    out = _wrap(y.view(tuple(input.shape)))
    if _needs_node(input, weight, bias):
        _G.record_norm(_G.NativeBatchNormBackward0, input, weight, bias, out, None, None,
                       view_shape=None, stat_dims=dims, n=n, eps=eps, batch_stats=training,
                       affine_shape=bshape, affine_dims=dims, x3=x3, mean64=mean, invstd64=invstd,
                       w1=w1)
    return out


def _update_running(running_mean, running_var, mean, var, n, momentum):
    """running = (1 - momentum) * running + momentum * batch value, with the unbiased variance
    (mean and var: the batch's, float64 [C]); either running statistic may be None."""
    if running_mean is not None:
        running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
    if running_var is not None:
        var = var * (n / (n - 1) if n > 1 else math.inf)
        running_var.mul_(1 - momentum).add_(var.to(running_var.dtype), alpha=momentum)


# ---- layer norm and group norm -----------------------------------------------------------------
def _shape_tuple(normalized_shape, fn):
    if isinstance(normalized_shape, numbers.Integral) and not isinstance(normalized_shape, bool):
        if fn == "layer_norm":
            raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple "
                            "of ints, not int")
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


def _check_normalized_shape(input, shape, weight, bias, sep=", "):
    k = len(shape)
    ishape = input._data.shape
    if k == 0 or len(ishape) < k or ishape[len(ishape) - k:] != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{sep}{', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._data.shape != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-05) -> Tensor:
    """Normalise over the trailing dims normalized_shape (per sample), then scale by weight and
    shift by bias (both of shape normalized_shape)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(layer_norm, locals())
    _float_input(input, "LayerNormKernelImpl")
    shape = _shape_tuple(normalized_shape, "layer_norm")
    _check_normalized_shape(input, shape, weight, bias)
    _check_param_dtype(input, "weight", weight)
    _check_param_dtype(input, "bias", bias)
    if _is_half(input):
        return layer_norm(input.float(), shape, _widen(weight), _widen(bias), eps).to(input.dtype)
    nd, k = input.ndim, len(shape)
    dims = tuple(range(nd - k, nd))
    n = 1
    for s_ in shape:
        n *= s_
    M = input.numel() // n if n else 0
    x2 = _G.dense(input, (M, n))
    w1 = _G.dense(weight, (n,)) if weight is not None else None
    b1 = _G.dense(bias, (n,)) if bias is not None else None
    y, mean, rstd = _NK.layer_norm_forward(x2, w1, b1, eps)
    out = _wrap(y.view(input._data.shape))
    if _needs_node(input, weight, bias):
        _G.record_norm(_G.NativeLayerNormBackward0, input, weight, bias, out, None, None,
                       view_shape=None, stat_dims=dims, n=n, eps=eps, batch_stats=True,
                       affine_shape=shape, affine_dims=tuple(range(nd - k)), x2=x2, mean2=mean,
                       rstd2=rstd, w1=w1)
    return out


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-05) -> Tensor:
    """Normalise each of num_groups groups of channels (dim 1) per sample, then scale and shift
    per channel."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(group_norm, locals())
    _float_input(input, "group_norm")
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    N, C = input.shape[0], input.shape[1]
    if num_groups <= 0 or C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} and "
                               f"input of shape {list(input.shape)}")
        _check_param_dtype(input, name, t)
    if _is_half(input):
        return group_norm(input.float(), num_groups, _widen(weight), _widen(bias), eps).to(input.dtype)
    nd = input.ndim
    per_group = C // num_groups
    for s_ in input.shape[2:]:
        per_group *= s_
    view_shape = (N, num_groups, per_group)
    bshape = (1, C) + (1,) * (nd - 2)
    n = per_group
    x = input.detach()
    with _no_grad():
        xv = x.reshape(view_shape)
        mean, invstd = _G.stats(xv, (2,), eps)
        # a fresh tensor, not a view of the normalised temporary (the node's output must not
        # carry a _base it does not share history with)
        xhat = _wrap(((xv - mean) * invstd)._data.view(tuple(x.shape)))
        out = _affine(xhat, weight, bias, bshape)
    if _needs_node(input, weight, bias):
        _G.record_norm(_G.NativeGroupNormBackward0, input, weight, bias, out, mean, invstd,
                       view_shape=view_shape, stat_dims=(2,), n=n, eps=eps, batch_stats=True,
                       affine_shape=bshape, affine_dims=(0,) + tuple(range(2, nd)))
    return out


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True, momentum: float = 0.1,
                  eps: float = 1e-05) -> Tensor:
    """Normalise each channel of each sample over its spatial dims: batch_norm of the input
    viewed as one batch of N*C channels (running statistics, if given, are averaged over the
    batch)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(instance_norm, locals())
    _float_input(input, "instance_norm")
    if use_input_stats:
        spatial = 1
        for s in input.shape[2:]:
            spatial *= s
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"{input.size()}")
    N, C = input.shape[0], input.shape[1]
    folded = input.reshape((1, N * C) + tuple(input.shape[2:]))
    rm = running_mean.repeat(N) if running_mean is not None else None
    rv = running_var.repeat(N) if running_var is not None else None
    w = weight.repeat(N) if weight is not None else None
    b = bias.repeat(N) if bias is not None else None
    out = batch_norm(folded, rm, rv, w, b, use_input_stats, momentum, eps)
    if running_mean is not None and use_input_stats:
        with _no_grad():        # the batch average of the per-sample running statistics
            running_mean.copy_(rm.reshape(N, C).mean(0))
            running_var.copy_(rv.reshape(N, C).mean(0))
    return out.reshape(input.shape)


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """input / sqrt(mean(input^2) + eps) over the trailing dims normalized_shape, times weight.
    eps=None uses the dtype's machine epsilon."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(rms_norm, locals())
    _float_input(input, "rms_norm")
    shape = _shape_tuple(normalized_shape, "rms_norm")
    _check_normalized_shape(input, shape, weight, None, sep="")
    if eps is None:
        eps = D.finfo(input.dtype).eps
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    x = _widen(input)
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    if _is_half(input):
        out = out.to(input.dtype)
    return out * weight if weight is not None else out


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """input / max(||input||_p, eps) along dim."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(normalize, locals())
    tensor_arg(input, "normalize", "input")
    norm = _R.vector_norm(input, p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    if out is None:
        return input / norm
    return _P.div(input, norm, out=out)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """input / (k + alpha * mean of input^2 over `size` neighbouring channels) ** beta (the
    window is zero-padded: size // 2 channels before, (size - 1) // 2 after)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(local_response_norm, locals())
    tensor_arg(input, "local_response_norm", "input")
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {input.ndim} dimensions)")
    if size <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {size} kW: 1")
    if input.numel() == 0:
        return input
    sq = input * input
    C = input.shape[1]
    rest = tuple(input.shape[2:])
    before, after = size // 2, (size - 1) // 2
    parts = []
    if before:
        parts.append(_zeros((input.shape[0], before) + rest, dtype=input.dtype, device=input.device))
    parts.append(sq)
    if after:
        parts.append(_zeros((input.shape[0], after) + rest, dtype=input.dtype, device=input.device))
    padded = _cat(parts, 1) if len(parts) > 1 else sq
    window = padded.narrow(1, 0, C)
    for i in range(1, size):
        window = window + padded.narrow(1, i, C)
    div = (window * (alpha / size) + k) ** beta
    return input / div


# ---- for torchlite.compile ---------------------------------------------------------------------
def _norm_shape_is_last_dim(normalized_shape):
    shape = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) \
        else (normalized_shape,)
    return len(shape) == 1


def _rms_norm_rows(input, normalized_shape, weight=None, eps=None):
    if not _norm_shape_is_last_dim(normalized_shape) or eps is None:
        return None
    y = input * ((input * input).mean(-1, keepdim=True) + eps).rsqrt()
    return y * weight if weight is not None else y


# rms_norm over the last dimension as the row op (a keepdim mean) and the elementwise ops
# that torchlite.compile fuses with their neighbours (its eager form is these ops, one pass
# each); None: this call stays whole (several normalized dims, eps=None).  layer_norm is not
# here: its eager kernel (one pass per row for the statistics, one for the output, and a
# backward that sums the weight's and bias's gradients in the same pass) is faster than the
# fused program at the sizes measured (benchmarks/RESULTS.md, issue 12).
COMPILE_DECOMPOSITIONS = {
    rms_norm: _rms_norm_rows,
}
