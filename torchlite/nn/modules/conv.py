"""Convolution layers: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d (PyTorch's torch.nn)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..._ops.creation import empty
from ..parameter import Parameter
from .. import functional as F
from .. import init
from .module import Module
from .utils import ntuple

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..._device import device
    from ..._dtype import dtype
    from ..._tensor import Tensor

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]


def _reverse_repeat(t):
    """(a, b) -> (b, b, a, a): per-dim padding as F.pad lists it (last dim first)."""
    return tuple(v for v in reversed(t) for _ in range(2))


class _ConvNd(Module):
    """What every convolution layer shares: the checks, the parameters, their default
    initialisation (kaiming_uniform_(a=sqrt(5)) for the weight, U(-1/sqrt(fan_in),
    1/sqrt(fan_in)) for the bias) and the repr."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding",
                     "in_channels", "out_channels", "kernel_size"]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple[int, ...],
                 stride: tuple[int, ...], padding: str | tuple[int, ...], dilation: tuple[int, ...],
                 transposed: bool, output_padding: tuple[int, ...], groups: int, bias: bool,
                 padding_mode: str, device: str | device | int | None = None,
                 dtype: dtype | None = None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_modes:
            raise ValueError(f"padding_mode must be one of {valid_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            pads = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    pads[2 * i] = total // 2
                    pads[2 * i + 1] = total - total // 2
            self._reversed_padding_repeated_twice = pads
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat(padding)
        shape = ((in_channels, out_channels // groups) if transposed else
                 (out_channels, in_channels // groups)) + tuple(kernel_size)
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the weight and bias again from their default distributions."""
        init._default_weight_and_bias_(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    _nd = 2
    _fn = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] = 1, padding: str | int | tuple[int, ...] = 0,
                 dilation: int | tuple[int, ...] = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: str | device | int | None = None,
                 dtype: dtype | None = None) -> None:
        n = self._nd
        super().__init__(in_channels, out_channels, ntuple(kernel_size, n), ntuple(stride, n),
                         padding if isinstance(padding, str) else ntuple(padding, n),
                         ntuple(dilation, n), False, ntuple(0, n), groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        fn = F.conv1d if self._nd == 1 else F.conv2d
        if self.padding_mode != "zeros":
            return fn(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                      weight, bias, self.stride, ntuple(0, self._nd), self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L) or (C_in, L); weight (out, in/groups, k)."""

    _nd = 1


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W) or (C_in, H, W); weight (out, in/groups, kh, kw)."""

    _nd = 2


class _ConvTransposeNd(_ConvNd):
    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, ...],
                 stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
                 output_padding: int | tuple[int, ...] = 0, groups: int = 1, bias: bool = True,
                 dilation: int | tuple[int, ...] = 1, padding_mode: str = "zeros",
                 device: str | device | int | None = None, dtype: dtype | None = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        n = self._nd
        super().__init__(in_channels, out_channels, ntuple(kernel_size, n), ntuple(stride, n),
                         ntuple(padding, n), ntuple(dilation, n), True, ntuple(output_padding, n),
                         groups, bias, padding_mode, device=device, dtype=dtype)

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None,
                        stride: Sequence[int], padding: Sequence[int], kernel_size: Sequence[int],
                        num_spatial_dims: int,
                        dilation: Sequence[int] | None = None) -> Sequence[int]:
        """output_padding, or the one giving output_size (checked against the sizes this
        input can give)."""
        if output_size is None:
            return ntuple(self.output_padding, num_spatial_dims)
        has_batch = input.dim() == num_spatial_dims + 2
        non_spatial = 2 if has_batch else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + num_spatial_dims:
            output_size = output_size[non_spatial:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, "
                             f"output_size must have {num_spatial_dims} or "
                             f"{non_spatial + num_spatial_dims} elements (got {len(output_size)})")
        mins, maxs = [], []
        for d in range(num_spatial_dims):
            size = ((input.size(d + non_spatial) - 1) * stride[d] - 2 * padding[d] +
                    (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            mins.append(size)
            maxs.append(size + stride[d] - 1)
        for i, size in enumerate(output_size):
            if size < mins[i] or size > maxs[i]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range "
                                 f"from {mins} to {maxs} (for an input of {input.size()[2:]})")
        return [output_size[d] - mins[d] for d in range(num_spatial_dims)]

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for {type(self).__name__}")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, self._nd, self.dilation)
        fn = F.conv_transpose1d if self._nd == 1 else F.conv_transpose2d
        return fn(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                  self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution; weight (in, out/groups, k)."""

    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution; weight (in, out/groups, kh, kw)."""

    _nd = 2
