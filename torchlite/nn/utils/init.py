"""nn.utils.skip_init: build a module without initialising its parameters (PyTorch's
torch.nn.utils.skip_init)."""
from __future__ import annotations

import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type[Module], *args, **kwargs) -> Module:
    """module_cls(*args, **kwargs) with its parameters and buffers left uninitialised, for when
    initialising is slow or a custom initialisation (or a checkpoint) follows.  As in PyTorch,
    module_cls must take a `device` argument: the module is built on the meta device (where
    its initialisation does nothing and allocates nothing) and then given uninitialised
    memory on `device` (default 'cpu') with Module.to_empty."""
    if not isinstance(module_cls, type) or not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
