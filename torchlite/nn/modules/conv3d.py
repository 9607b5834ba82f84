"""3-d convolution layers: Conv3d and ConvTranspose3d (PyTorch's torch.nn), the 3-d forms of
conv.py's layers (the same parameters, initialisation, state_dict keys and repr)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .conv import _Conv, _ConvTransposeNd
from .utils import ntuple

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._tensor import Tensor

__all__ = ["Conv3d", "ConvTranspose3d"]


class Conv3d(_Conv):
    """3-d convolution over (N, C_in, D, H, W) or (C_in, D, H, W); weight
    (out, in/groups, kd, kh, kw)."""

    _nd = 3

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv3d(F.pad(input, self._reversed_padding_repeated_twice,
                                  mode=self.padding_mode),
                            weight, bias, self.stride, ntuple(0, 3), self.dilation, self.groups)
        return F.conv3d(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution; weight (in, out/groups, kd, kh, kw)."""

    _nd = 3

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose3d")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, 3, self.dilation)
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  output_padding, self.groups, self.dilation)
