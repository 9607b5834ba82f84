"""Re-exports torchlite.utils.data._collate under PyTorch's module path."""
from .._collate import *  # noqa: F401,F403
from .._collate import __all__  # noqa: F401
