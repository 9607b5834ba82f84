"""Fold and Unfold (PyTorch's torch.nn): sliding blocks to and from images."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .module import Module

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Combine sliding blocks (N, C*kh*kw, L) into (N, C, *output_size), summing overlaps."""

    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size: int | tuple[int, ...], kernel_size: int | tuple[int, ...],
                 dilation: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
                 stride: int | tuple[int, ...] = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return ("output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, "
                "padding={padding}, stride={stride}".format(**self.__dict__))


class Unfold(Module):
    """Extract sliding blocks: (N, C, H, W) -> (N, C*kh*kw, L)."""

    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size: int | tuple[int, ...], dilation: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] = 0, stride: int | tuple[int, ...] = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
                "stride={stride}".format(**self.__dict__))
