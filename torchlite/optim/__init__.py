"""torchlite.optim: optimizers and learning-rate schedulers (PyTorch's torch.optim)."""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam
from .adamw import AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from .adadelta import Adadelta
from .adamax import Adamax
from .nadam import NAdam
from .radam import RAdam
from .lbfgs import LBFGS
from .asgd import ASGD
from .rprop import Rprop
from .sparse_adam import SparseAdam
from .adafactor import Adafactor
from .muon import Muon
from .swap_in import swap_in_optimizer_params_and_state
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "LBFGS", "ASGD", "Rprop", "SparseAdam", "Adafactor", "Muon",
           "swap_in_optimizer_params_and_state", "lr_scheduler", "swa_utils"]


def __getattr__(name):
    # swa_utils brings torchlite.nn in (AveragedModel is a Module), which a program using only
    # the optimizers does not need: imported on first use
    if name == "swa_utils":
        import importlib
        return importlib.import_module(f"{__name__}.swa_utils")
    raise AttributeError(f"module 'torchlite.optim' has no attribute '{name}'")
