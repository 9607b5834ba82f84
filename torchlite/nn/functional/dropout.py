"""Dropout: dropout (elementwise), dropout1d/2d/3d (whole channels), alpha_dropout and
feature_alpha_dropout (for SELU networks).

As PyTorch computes it on the CPU: a noise tensor (the kept mask drawn with bernoulli_ from
torchlite's default generator, so torchlite.manual_seed makes it reproducible, divided by 1 - p)
and input * noise.  The multiplication's node (MulBackward0) keeps the noise, so the gradient is
grad * mask / (1 - p) with the mask saved, not drawn again.  p = 0, eval mode and empty inputs
return the input itself; p = 1 multiplies by zero."""
from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

from ..._ops.creation import empty as _empty, zeros as _zeros
from ..._ops._kit import tensor_arg
from ..._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]

_SELU_ALPHA_PRIME = 1.7580993408473766      # -scale * alpha of SELU: where dropped units go


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise_shape(input, feature):
    """Elementwise noise, or one draw per (sample, channel) for feature dropout."""
    if not feature:
        return tuple(input.shape)
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return (input.shape[0], input.shape[1]) + (1,) * (input.ndim - 2)


def _dropout_impl(input, p, training, inplace, feature=False, alpha=False):
    """PyTorch's _dropout_impl: input * noise (+ b for alpha dropout), in place if asked."""
    tensor_arg(input, "dropout", "input")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = _zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    noise = _empty(_noise_shape(input, feature), dtype=input.dtype, device=input.device)
    noise.bernoulli_(1 - p)
    if alpha:
        a = 1.0 / math.sqrt((_SELU_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
        shift = (noise - 1) * (_SELU_ALPHA_PRIME * a) + _SELU_ALPHA_PRIME * a * p
        noise.mul_(a)
        return input.mul_(noise).add_(shift) if inplace else input * noise + shift
    noise.div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (training only)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(dropout, locals())
    _check_p(p)
    return _dropout_impl(input, p, training, inplace)


def _batched_feature_dropout(input, p, training, inplace, batched):
    """Feature dropout of an input that may lack its batch dim (added for the draw)."""
    if batched:
        return _dropout_impl(input, p, training, inplace, feature=True)
    out = _dropout_impl(input.unsqueeze(0), p, training, inplace, feature=True)
    # in place, the draw was written through the batched view: the input is the result
    return input if inplace else out.squeeze(0)


def _warn_deprecated_rank(name, nd, spatial_dims):
    """PyTorch's warning for a dropout2d/dropout3d input of a rank it will reject in future
    (stacklevel: the warning points at the caller of dropout2d/dropout3d)."""
    warnings.warn(f"{name}: Received a {nd}-D input to {name}, which is deprecated and will "
                  f"result in an error in a future release. To retain the behavior and silence "
                  f"this warning, please use dropout instead. Note that {name} exists to provide "
                  f"channel-wise dropout on inputs with {spatial_dims} spatial dimensions, a "
                  f"channel dimension, and an optional batch dimension (i.e. "
                  f"{spatial_dims + 1}D or {spatial_dims + 2}D inputs).", stacklevel=3)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) input with probability p."""
    _check_p(p)
    nd = input.dim()
    if nd not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note "
                           f"that dropout1d exists to provide channel-wise dropout on inputs with 1 "
                           f"spatial dimension, a channel dimension, and an optional batch "
                           f"dimension (i.e. 2D or 3D inputs).")
    return _batched_feature_dropout(input, p, training, inplace, nd == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) input with probability p (a 3-D input is taken as
    (N, C, L), PyTorch's legacy rule, with its warning)."""
    _check_p(p)
    nd = input.dim()
    if nd not in (3, 4):
        _warn_deprecated_rank("dropout2d", nd, 2)
    if nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape "
                      "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch "
                      "to using dropout1d instead.", stacklevel=2)
    return _dropout_impl(input, p, training, inplace, feature=True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability p."""
    _check_p(p)
    nd = input.dim()
    if nd not in (4, 5):
        _warn_deprecated_rank("dropout3d", nd, 3)
    return _batched_feature_dropout(input, p, training, inplace, nd == 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance: dropped units are set to
    SELU's negative saturation value, then the result is scaled and shifted back."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, alpha=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=True)
