"""torch.distributed.algorithms: the communication hooks of DistributedDataParallel and the
join context manager for uneven inputs."""
from __future__ import annotations

from . import ddp_comm_hooks  # noqa: F401
from .join import Join, Joinable, JoinHook  # noqa: F401
