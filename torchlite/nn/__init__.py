"""torchlite.nn: Modules, Parameters, layers, losses, initialisation (PyTorch's torch.nn)."""
from .parameter import *  # noqa: F401,F403
from .modules import *  # noqa: F401,F403
from . import functional, init, utils, parallel, attention, grad, common_types  # noqa: F401
from .parallel import DataParallel  # noqa: F401
