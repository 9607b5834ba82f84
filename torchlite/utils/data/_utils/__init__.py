"""PyTorch's torch.utils.data._utils layout, for code that imports from there (PyTorch's
documentation of custom collation does: `from torch.utils.data._utils.collate import
collate, default_collate_fn_map`)."""
from . import collate
