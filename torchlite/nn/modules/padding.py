"""Padding layers (PyTorch's torch.nn): constant, zero, reflection, replication, circular."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .utils import ntuple
from .module import Module

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._tensor import Tensor

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    _n = 2

    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__()
        self.value = value
        self.padding = ntuple(padding, self._n)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with a constant: padding (left, right) or an int."""

    _n = 2


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with a constant: (left, right, top, bottom) or an int."""

    _n = 4


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with a constant: (left, right, top, bottom, front, back)."""

    _n = 6


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    def __init__(self, padding: int | tuple[int, int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last 2 dims with zeros."""

    def __init__(self, padding: int | tuple[int, int, int, int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last 3 dims with zeros."""

    def __init__(self, padding: int | tuple[int, int, int, int, int, int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ModePadNd(Module):
    __constants__ = ["padding"]
    _n = 2
    _mode = "reflect"

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__()
        self.padding = ntuple(padding, self._n)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pad the last dim with its reflection (the edge value is not repeated)."""

    _n, _mode = 2, "reflect"


class ReflectionPad2d(_ModePadNd):
    """Pad the last 2 dims with their reflection."""

    _n, _mode = 4, "reflect"


class ReflectionPad3d(_ModePadNd):
    """Pad the last 3 dims with their reflection."""

    _n, _mode = 6, "reflect"


class ReplicationPad1d(_ModePadNd):
    """Pad the last dim by repeating its edge values."""

    _n, _mode = 2, "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pad the last 2 dims by repeating their edge values."""

    _n, _mode = 4, "replicate"


class ReplicationPad3d(_ModePadNd):
    """Pad the last 3 dims by repeating their edge values."""

    _n, _mode = 6, "replicate"


class _CircularPadNd(_ModePadNd):
    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        k = self._n // 2
        if input.dim() not in (k + 1, k + 2):
            raise ValueError(f"expected {k + 1}D or {k + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim by wrapping around."""

    _n = 2


class CircularPad2d(_CircularPadNd):
    """Pad the last 2 dims by wrapping around."""

    _n = 4


class CircularPad3d(_CircularPadNd):
    """Pad the last 3 dims by wrapping around."""

    _n = 6
