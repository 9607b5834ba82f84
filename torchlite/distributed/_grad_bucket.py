"""torch.distributed.GradBucket (what DistributedDataParallel hands a communication hook) and
BuiltinCommHookType (the hooks DistributedDataParallel.register_builtin_comm_hook names)."""
import enum

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

    def __init__(self, index, buffer, gradients, parameters, is_last):
        self._index = index
        self._buffer = buffer
        self._gradients = gradients
        self._parameters = parameters
        self._is_last = is_last

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def gradients(self):
        return list(self._gradients)

    def parameters(self):
        return list(self._parameters)

    def is_last(self):
        return self._is_last

    def set_buffer(self, buffer):
        if tuple(buffer.shape) != tuple(self._buffer.shape):
            raise RuntimeError(f"GradBucket.set_buffer: expected a buffer of shape "
                               f"{tuple(self._buffer.shape)}, got {tuple(buffer.shape)}")
        self._buffer.copy_(buffer)
