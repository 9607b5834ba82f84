"""torch.distributed.algorithms.ddp_comm_hooks: hooks for DistributedDataParallel's
register_comm_hook -- default_hooks (allreduce_hook, fp16_compress_hook, bf16_compress_hook)
and powerSGD_hook (PowerSGDState, powerSGD_hook, batched_powerSGD_hook)."""
from __future__ import annotations

from . import default_hooks, powerSGD_hook  # noqa: F401
