"""torch.nn.modules.batchnorm's names (the classes live in normalization.py, lazy.py and
sync_batchnorm.py): code that tests `isinstance(m, nn.modules.batchnorm._BatchNorm)` to freeze
or exclude batch norms from weight decay imports them from here."""
from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase
from .sync_batchnorm import SyncBatchNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm", "_BatchNorm", "_NormBase"]
