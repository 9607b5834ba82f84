"""The functional forms of the optimizers' update rules in one place, as PyTorch's
torch.optim._functional gathers them: each takes lists of parameters, gradients and state
tensors and updates them in place (the classes' step() calls them)."""
from .adadelta import adadelta
from .adafactor import adafactor
from .adagrad import adagrad
from .adam import adam
from .adamax import adamax
from .adamw import adamw
from .asgd import asgd
from .muon import muon
from .nadam import nadam
from .radam import radam
from .rmsprop import rmsprop
from .rprop import rprop
from .sgd import sgd
from .sparse_adam import sparse_adam

__all__ = ["adadelta", "adafactor", "adagrad", "adam", "adamax", "adamw", "asgd", "muon",
           "nadam", "radam", "rmsprop", "rprop", "sgd", "sparse_adam"]
