"""torch.distributed.algorithms: the communication hooks of DistributedDataParallel."""
from . import ddp_comm_hooks  # noqa: F401
