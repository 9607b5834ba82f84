"""torch.distributed.GradBucket (what DistributedDataParallel hands a communication hook) and
BuiltinCommHookType (the hooks DistributedDataParallel.register_builtin_comm_hook names)."""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["GradBucket", "BuiltinCommHookType"]


class BuiltinCommHookType(enum.Enum):
    """PyTorch's built-in DDP communication hooks: ALLREDUCE (the average, as without a hook)
    and FP16_COMPRESS (communicated in float16)."""
    ALLREDUCE = 1
    FP16_COMPRESS = 2


class GradBucket:
    """One bucket of gradients, flattened: buffer() is the flat tensor the hook reduces (the
    gradients are views into it, in gradients()), parameters() the parameters they belong to,
    index() the bucket's number, is_last() whether it is the last one reduced in this backward.
    set_buffer(t) replaces the buffer's values with t's."""

    def __init__(self, index: int, buffer: Tensor, gradients: list[Tensor], parameters: list[Tensor],
                 is_last: bool) -> None:
        self._index = index
        self._buffer = buffer
        self._gradients = gradients
        self._parameters = parameters
        self._is_last = is_last

    def index(self) -> int:
        return self._index

    def buffer(self) -> Tensor:
        return self._buffer

    def gradients(self) -> list[Tensor]:
        return list(self._gradients)

    def parameters(self) -> list[Tensor]:
        return list(self._parameters)

    def is_last(self) -> bool:
        return self._is_last

    def set_buffer(self, buffer: Tensor) -> None:
        if tuple(buffer.shape) != tuple(self._buffer.shape):
            raise RuntimeError(f"GradBucket.set_buffer: expected a buffer of shape "
                               f"{tuple(self._buffer.shape)}, got {tuple(buffer.shape)}")
        self._buffer.copy_(buffer)
