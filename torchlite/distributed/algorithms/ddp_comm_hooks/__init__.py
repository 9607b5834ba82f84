"""torch.distributed.algorithms.ddp_comm_hooks: hooks for DistributedDataParallel's
register_comm_hook (default_hooks: allreduce_hook, fp16_compress_hook, bf16_compress_hook)."""
from . import default_hooks  # noqa: F401
