"""parallel_apply (PyTorch's torch.nn.parallel.parallel_apply): run each replica on its own
inputs and device.

PyTorch starts one thread per replica.  Here the replicas run one after another from the
calling thread, each with its device made current: CUDA kernels are launched asynchronously,
so the devices still work at the same time while Python moves on to the next replica, and
grad mode, autocast and the current stream need no hand-over to other threads.  An error in
a replica is raised with a note naming the replica and its device."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .scatter_gather import _as_device

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..._device import device
    from ..modules.module import Module

__all__ = ["parallel_apply"]


def parallel_apply(modules: Sequence[Module], inputs: Sequence[Any],
                   kwargs_tup: Sequence[dict[str, Any]] | None = None,
                   devices: Sequence[int | str | device] | None = None) -> list[Any]:
    """[modules[i](*inputs[i], **kwargs_tup[i])], each run with devices[i] current (by
    default the device of the replica's first parameter or buffer)."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of inputs {len(inputs)}")
    if kwargs_tup is None:
        kwargs_tup = ({},) * len(modules)
    elif len(modules) != len(kwargs_tup):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of kwargs {len(kwargs_tup)}")
    if devices is None:
        devices = [_first_device(m) for m in modules]
    elif len(modules) != len(devices):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of devices {len(devices)}")
    outputs = []
    for i, (module, args, kwargs, dev) in enumerate(zip(modules, inputs, kwargs_tup, devices)):
        dev = _as_device(dev) if dev is not None else None
        if not isinstance(args, (list, tuple)):
            args = (args,)
        try:
            with _current(dev):
                outputs.append(module(*args, **kwargs))
        except Exception as e:
            e.add_note(f"Caught {type(e).__name__} in replica {i} on device {dev}.")
            raise
    return outputs


def _first_device(module):
    for t in module.parameters():
        return t.device
    for t in module.buffers():
        return t.device
    return None


class _current:
    """The CUDA device `dev` current inside the block (nothing for the CPU or None)."""

    def __init__(self, dev):
        self.ctx = None
        if dev is not None and dev.type == "cuda":
            from ... import cuda
            self.ctx = cuda.device(dev)

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *exc):
        if self.ctx is not None:
            return self.ctx.__exit__(*exc)
        return False
