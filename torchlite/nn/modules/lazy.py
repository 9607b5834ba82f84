"""Lazy modules: layers whose input size is read off their first input (torch.nn.modules.lazy).

nn.LazyLinear(out_features) and the other Lazy* layers start with UninitializedParameter /
UninitializedBuffer placeholders (torchlite/nn/parameter.py).  A forward pre-hook calls
`initialize_parameters(*inputs)` at the first call: the layer materializes its parameters from
the input's shape, draws them as its eager twin would, and turns into that twin
(`cls_to_become`, e.g. nn.Linear), dropping the hooks.  Loading a state dict into a lazy module
materializes its parameters with the state dict's shapes first.  Conversions such as
module.to(dtype) or .cuda() made before the first forward apply when the parameters get their
shapes."""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from ..parameter import is_lazy
from ...autograd.grad_mode import no_grad

if TYPE_CHECKING:
    from ..._device import device
    from ..._dtype import dtype
    from ..._tensor import Tensor

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """The lazy half of a Lazy* layer: list it before the eager layer's class and implement
    `initialize_parameters(*inputs)`."""

    cls_to_become = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _install_lazy_hooks(self)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module (not its children) has no shape yet."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Materialize the parameters from the first input (each Lazy* layer defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        """Give the placeholders the shapes of the state dict's tensors before they load."""
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if t is not None and is_lazy(t) and key in state_dict and not is_lazy(state_dict[key]):
                with no_grad():
                    t.materialize(state_dict[key].shape)

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. "
                           "Run a dummy forward pass to correctly initialize the modules")


def _install_lazy_hooks(module):
    """A lazy module's two hooks (LazyModuleMixin.__init__; the generated Lazy* classes, whose
    __init__ calls the eager layer's directly, call it themselves)."""
    module._load_hook = module._register_load_state_dict_pre_hook(module._lazy_load_hook)
    module._initialize_hook = module.register_forward_pre_hook(_infer_parameters, with_kwargs=True)


def _infer_parameters(module, args, kwargs=None):
    """The forward pre-hook of a lazy module: materialize, then become the eager layer."""
    module.initialize_parameters(*args, **(kwargs or {}))
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
    module._initialize_hook.remove()
    module._load_hook.remove()
    del module._initialize_hook
    del module._load_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


# ---- the layers ----------------------------------------------------------------------------------
from ..._ops.creation import tensor as _tensor  # noqa: E402
from ... import _dtype as D  # noqa: E402
from ..parameter import UninitializedBuffer, UninitializedParameter  # noqa: E402
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d  # noqa: E402
from .conv3d import Conv3d, ConvTranspose3d  # noqa: E402
from .linear import Linear  # noqa: E402
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d,  # noqa: E402
                            InstanceNorm2d, InstanceNorm3d)

__all__ += ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
            "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
            "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyLinear(LazyModuleMixin, Linear):
    """nn.Linear whose in_features is the last dim of its first input (torch.nn.LazyLinear)."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: device | str | int | None = None,
                 dtype: dtype | None = None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    """The convolutions' in_channels from the input's channel dim (dim 1, or 0 unbatched)."""

    def _lazy_init(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            return
        n = len(self.kernel_size)
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"{type(self).__name__}: expected an unbatched ({n + 1}-d) or batched "
                               f"({n + 2}-d) input, got shape {tuple(input.shape)}")
        self.in_channels = input.shape[1] if input.dim() == n + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        with no_grad():
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(name, base, transposed):
    """A Lazy* convolution class over `base` (its constructor without in_channels)."""
    if transposed:
        def __init__(self, out_channels: int, kernel_size: int | tuple[int, ...],
                     stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
                     output_padding: int | tuple[int, ...] = 0, groups: int = 1, bias: bool = True,
                     dilation: int | tuple[int, ...] = 1, padding_mode: str = "zeros",
                     device: device | str | int | None = None, dtype: dtype | None = None) -> None:
            base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                          dilation, padding_mode)
            self._lazy_init(out_channels, bias, device, dtype)
            _install_lazy_hooks(self)
    else:
        def __init__(self, out_channels: int, kernel_size: int | tuple[int, ...],
                     stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
                     dilation: int | tuple[int, ...] = 1, groups: int = 1, bias: bool = True,
                     padding_mode: str = "zeros", device: device | str | int | None = None,
                     dtype: dtype | None = None) -> None:
            base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
            self._lazy_init(out_channels, bias, device, dtype)
            _install_lazy_hooks(self)
    doc = (f"nn.{base.__name__} whose in_channels is read off its first input "
           f"(torch.nn.{name}); it becomes a {base.__name__} then.")
    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "cls_to_become": base,
                                                 "__doc__": doc, "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, False)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, False)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, False)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, True)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, True)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, True)


class _LazyNormBase(LazyModuleMixin):
    """Batch and instance norm's num_features from the input's channel dim."""

    def _lazy_init(self, affine, track_running_stats, device, dtype):
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _tensor(0, dtype=D.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if not self.has_uninitialized_params():
            return
        # the channel dim: 1 for batch norm; for instance norm 0 on an unbatched input
        channel_dim = input.dim() - self._no_batch_dim if hasattr(self, "_no_batch_dim") else 1
        self.num_features = input.shape[channel_dim]
        with no_grad():
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if t is not None:
                    t.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(name, base, affine, track):
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = affine,
                 track_running_stats: bool = track, device: device | str | int | None = None,
                 dtype: dtype | None = None) -> None:
        base.__init__(self, 0, eps, momentum, False, False)
        self._lazy_init(affine, track_running_stats, device, dtype)
        _install_lazy_hooks(self)
    doc = (f"nn.{base.__name__} whose num_features is read off its first input "
           f"(torch.nn.{name}); it becomes a {base.__name__} then.")
    return type(name, (_LazyNormBase, base), {"__init__": __init__, "cls_to_become": base,
                                              "__doc__": doc, "__module__": __name__})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, True, True)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, True, True)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, True, True)
# PyTorch's lazy instance norms default to affine=True and track_running_stats=True (the eager
# ones to False)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, True, True)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, True, True)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, True, True)
