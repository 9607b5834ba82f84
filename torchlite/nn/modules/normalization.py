"""Normalisation layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, GroupNorm, RMSNorm
and LocalResponseNorm, with PyTorch's constructors, parameters, buffers (running_mean,
running_var, num_batches_tracked), input checks and reprs."""
from __future__ import annotations

import numbers
import warnings
from typing import TYPE_CHECKING

from ... import _dtype as D
from ..._ops.creation import empty as _empty, zeros as _zeros, ones as _ones, tensor as _tensor
from ...autograd.grad_mode import no_grad as _no_grad
from .. import functional as F
from .. import init as _init
from ..parameter import Parameter
from .module import Module

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._device import device
    from ..._dtype import dtype
    from ..._tensor import Tensor

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"]


def _affine_params(module, shape, affine, bias, device, dtype):
    """weight (and bias) Parameters of `shape`, or None entries when not affine."""
    if affine:
        module.weight = Parameter(_empty(shape, device=device, dtype=dtype))
        if bias:
            module.bias = Parameter(_empty(shape, device=device, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _ones_zeros_(weight, bias):
    """PyTorch's initialisation of a norm's affine parameters: weight 1, bias 0."""
    if weight is not None:
        _init.ones_(weight)
    if bias is not None:
        _init.zeros_(bias)


class _NormBase(Module):
    """What batch and instance norm share: the affine parameters and the running statistics."""

    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 device: str | device | int | None = None, dtype: dtype | None = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_params(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", _zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", _ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", _tensor(0, dtype=D.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # a state dict saved before num_batches_tracked existed (no version, or version 1, as
        # torchvision's older published checkpoints) loads with the counter at 0, as in PyTorch
        version = local_metadata.get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                else _tensor(0, dtype=D.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with _no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            _ones_zeros_(self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims = ()              # the input dims the layer accepts

    def _check_input_dim(self, input):
        nd = input.dim()
        if nd not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {nd}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor, bn_training, running_mean, running_var = self._step()
        return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training,
                            factor, self.eps)

    def _step(self):
        """Count the batch (training with running statistics) and return (the running
        averages' factor, whether to normalise with the batch's statistics, the running mean
        and variance to use or update, or None)."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with _no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:           # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        # eval mode without running statistics normalises with the batch's own
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_buffers = not self.training or self.track_running_stats
        return (factor, bn_training, self.running_mean if use_buffers else None,
                self.running_var if use_buffers else None)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) input."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) input."""
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) input."""
    _dims = (5,)


class _InstanceNorm(_NormBase):
    _no_batch_dim = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False,
                 device: str | device | int | None = None, dtype: dtype | None = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def _check_input_dim(self, input):
        nd = input.dim()
        if nd not in (self._no_batch_dim, self._no_batch_dim + 1):
            raise ValueError(f"expected {self._no_batch_dim}D or {self._no_batch_dim + 1}D input "
                             f"(got {nd}D input)")

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can "
                          f"silence this warning by not passing in num_features, which is not used "
                          f"because affine=False", stacklevel=2)
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or (C, L) input."""
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or (C, H, W) input."""
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or (C, D, H, W) input."""
    _no_batch_dim = 4


def _shape_of(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Layer norm over the trailing dims normalized_shape, with an elementwise affine."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True,
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
        super().__init__()
        self.normalized_shape = _shape_of(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_params(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            _ones_zeros_(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Group norm: num_channels split into num_groups groups normalised per sample."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: str | device | int | None = None, dtype: dtype | None = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_params(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.affine:
            _ones_zeros_(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square norm over the trailing dims normalized_shape, times a weight."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: str | device | int | None = None,
                 dtype: dtype | None = None) -> None:
        super().__init__()
        self.normalized_shape = _shape_of(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            _ones_zeros_(self.weight, None)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Normalisation across neighbouring channels."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """The legacy (Lua Torch) cross-channel LRN over a 4-d input:
    x * (k + alpha / size * sum of x^2 over a window of channels)^-beta.  The window of channel c
    is PyTorch's: channels c - pre + 1 .. c + pre - 1 (pre = int((size - 1) / 2 + 1)), and
    channel 0 never leaves it (PyTorch's running window adds channel 0 and never subtracts it),
    so outputs equal PyTorch's.  The gradient is the true derivative of that forward; PyTorch's
    hand-written backward for this module does not pass its own gradcheck."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def _window(self, channels, like):
        """[C, C] 0/1 matrix: row c marks the channels whose squares channel c's scale sums."""
        pre = int((self.size - 1) / 2 + 1)
        rows = []
        for c in range(channels):
            lo = 0 if c <= pre else c - pre + 1
            hi = min(channels - 1, c + pre - 1)
            rows.append([1.0 if (lo <= j <= hi or j == 0) else 0.0 for j in range(channels)])
        return _tensor(rows, dtype=like.dtype, device=like.device)

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        from ..._ops.linalg import tensordot
        window = self._window(input.size(1), input)
        sums = tensordot(window, input * input, dims=([1], [1])).permute(1, 0, 2, 3)
        return input * (sums * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
