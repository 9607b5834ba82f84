"""Fractional max pooling layers (PyTorch's torch.nn): FractionalMaxPool2d and
FractionalMaxPool3d.  `_random_samples`, when given, is kept as a buffer of that name (as in
PyTorch, so it is in the state dict) and fixes the windows; otherwise every call draws new
ones from torchlite's generator."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .module import Module
from .utils import ntuple

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


class _FractionalMaxPoolNd(Module):
    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]
    _nd = 2

    def __init__(self, kernel_size: int | tuple[int, ...], output_size: int | tuple[int, ...] | None = None,
                 output_ratio: float | tuple[float, ...] | None = None, return_indices: bool = False,
                 _random_samples: Tensor | None = None) -> None:
        super().__init__()
        n = self._nd
        name = type(self).__name__
        if n == 3 and ((isinstance(kernel_size, int) and kernel_size <= 0) or
                       (isinstance(kernel_size, (tuple, list)) and
                        not all(k > 0 for k in kernel_size))):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             f"ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, H, W) or (C, H, W)."""

    _nd = 2

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return F.fractional_max_pool2d(input, self.kernel_size, self.output_size,
                                       self.output_ratio, self.return_indices,
                                       _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W)."""

    _nd = 3

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return F.fractional_max_pool3d(input, self.kernel_size, self.output_size,
                                       self.output_ratio, self.return_indices,
                                       _random_samples=self._random_samples)
