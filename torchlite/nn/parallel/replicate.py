"""replicate (PyTorch's torch.nn.parallel.replicate): copies of a module tree, one per
device, whose parameters are differentiable copies of the original's.

Each replica module is a shallow copy of its original (same class, settings, hooks) with its
own dicts of children and buffers.  A parameter becomes `param.to(device)` set as a plain
attribute: not a leaf, so backward through a replica accumulates into the original parameter
(on the source device, where `.to` is the parameter itself, directly).  Buffers are copied
detached (unless they require grad); on the source device they are the original buffers, so
in-place updates there (BatchNorm's running statistics) reach the original module, as
PyTorch guarantees for device_ids[0].  With detach=True (no_grad forward), parameters are
copied detached too."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .scatter_gather import _as_device

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._device import device
    from ..modules.module import Module

__all__ = ["replicate"]


def _shallow_copy(module):
    """A new instance of module's class sharing its settings and hooks, with its own
    (empty) parameter dict and copies of its buffer and child dicts."""
    replica = object.__new__(type(module))
    replica.__dict__ = module.__dict__.copy()
    replica.__dict__["_parameters"] = {}
    replica.__dict__["_buffers"] = dict(module._buffers)
    replica.__dict__["_modules"] = dict(module._modules)
    replica.__dict__["_is_replica"] = True
    return replica


def replicate(network: Module, devices: Sequence[int | str | device], detach: bool = False) -> list[Module]:
    """[network's copy on each device] (see the module docstring)."""
    devices = [_as_device(d) for d in devices]
    originals = list(network.modules())
    replicas = []
    for dev in devices:
        copies = {id(m): _shallow_copy(m) for m in originals}
        for m in originals:
            r = copies[id(m)]
            for key, param in m._parameters.items():
                if param is None:
                    r._parameters[key] = None
                    continue
                moved = param.detach().to(dev) if detach else param.to(dev)
                # a plain attribute, not a registered Parameter: a replica's weights are
                # functions of the originals
                object.__setattr__(r, key, moved)
            for key, buf in m._buffers.items():
                if buf is not None:
                    r._buffers[key] = (buf if buf.requires_grad and not detach
                                       else buf.detach()).to(dev)
            for key, child in m._modules.items():
                r._modules[key] = copies[id(child)] if child is not None else None
        replicas.append(copies[id(network)])
    return replicas
