"""nn.utils.skip_init: build a module without initialising its parameters (PyTorch's
torch.nn.utils.skip_init)."""
import inspect

from .. import init as _init
from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) with its parameters and buffers left uninitialised, for when
    initialising is slow or a custom initialisation (or a checkpoint) follows.  As in PyTorch,
    module_cls must take a `device` argument (the module is built there; default 'cpu').

    PyTorch builds the module on the meta device and then gives it empty memory; torchlite,
    which has no meta device yet, builds it with every torch.nn.init initialiser made a no-op
    on this thread, which is where torchlite's layers do all of their default initialisation
    (reset_parameters): their parameters keep the uninitialised memory torchlite.empty gave
    them.  Other work a custom __init__ does (a tensor it computes, a random draw it makes
    itself) still runs."""
    if not isinstance(module_cls, type) or not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    with _init._skipped():
        return module_cls(*args, **kwargs)
