"""PyTorch's default DDP communication hooks: hook(process_group, bucket) returns a Future of
the bucket's reduced gradients.  A hook replaces DDP's own averaging, so each divides by the
world size itself.  Use: ddp_model.register_comm_hook(state=None, hook=fp16_compress_hook)
(state is the process group; None means the default one)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _collectives as _C
from ... import _backend

if TYPE_CHECKING:
    from typing import Any

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def _world_size(process_group):
    return _backend.get_world_size(process_group)


def allreduce_hook(process_group: _backend.ProcessGroup | None, bucket: Any) -> Any:
    """The bucket all-reduced and averaged, as DDP does without a hook."""
    tensor = bucket.buffer()
    tensor.div_(_world_size(process_group))
    work = _C.all_reduce(tensor, group=process_group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def _compress_hook(dtype, process_group, bucket):
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(_world_size(process_group))
    work = _C.all_reduce(compressed, group=process_group, async_op=True)

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer
    return work.get_future().then(decompress)


def fp16_compress_hook(process_group: _backend.ProcessGroup | None, bucket: Any) -> Any:
    """Communicate the bucket in float16 (half the bytes), averaged, back in its own dtype."""
    from .... import _dtype
    return _compress_hook(_dtype.float16, process_group, bucket)


def bf16_compress_hook(process_group: _backend.ProcessGroup | None, bucket: Any) -> Any:
    """Communicate the bucket in bfloat16 (float32's range at half the bytes), averaged."""
    from .... import _dtype
    return _compress_hook(_dtype.bfloat16, process_group, bucket)
