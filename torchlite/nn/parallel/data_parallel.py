"""DataParallel (PyTorch's torch.nn.DataParallel): single-process data parallelism over the
CUDA devices of one machine.

Each forward splits the batch along `dim` into one chunk per device (scatter), copies the
module to every device (replicate: differentiable copies of the parameters, so backward sums
the replicas' gradients into the original parameters on device_ids[0]), runs each replica on
its chunk (parallel_apply) and concatenates the outputs on output_device (gather).

Without CUDA (or with no device) it is a pass-through wrapper: forward calls the module.  With
one device it moves the module there and runs it on the inputs moved there.  Either way the
module is `self.module`, so state dict keys carry PyTorch's 'module.' prefix.

The pieces (scatter, gather, replicate, parallel_apply) are tested on the CPU and on several
devices of the test suite's host-memory CUDA stand-in; running them on a real multi-GPU
machine (device-to-device copies, the devices overlapping in time) waits for one."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ..._device import device as _device
from ...autograd.grad_mode import is_grad_enabled
from ..modules.module import Module
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter_kwargs

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..._device import device

__all__ = ["DataParallel", "data_parallel"]


def _cuda_device_count():
    from ... import cuda
    return cuda.device_count() if cuda.is_available() else 0


def _device_index(d):
    """The CUDA index of a device id (an int, 'cuda:N' or a device; 'cuda' is the current
    device); ValueError for the CPU."""
    if isinstance(d, int):
        return d
    dev = _device(d)
    if dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    if dev.index is None:
        from ... import cuda
        return cuda.current_device()
    return dev.index


def _check_balance(device_ids):
    """Warn when the devices differ much in memory or multiprocessors (the slowest sets the
    pace, PyTorch's warning)."""
    from ... import cuda
    props = [cuda.get_device_properties(i) for i in device_ids]
    for field in ("total_memory", "multi_processor_count"):
        values = [getattr(p, field) for p in props]
        lo, hi = min(range(len(values)), key=values.__getitem__), \
            max(range(len(values)), key=values.__getitem__)
        if values[lo] / values[hi] < 0.75:
            warnings.warn(f"There is an imbalance between your GPUs. You may want to exclude GPU "
                          f"{device_ids[lo]} which has less than 75% of the memory or cores of "
                          f"GPU {device_ids[hi]}. You can do so by setting the device_ids "
                          f"argument to DataParallel, or by setting the CUDA_VISIBLE_DEVICES "
                          f"environment variable.", stacklevel=3)
            return


def _check_module_device(module, src):
    for t in list(module.parameters()) + list(module.buffers()):
        if t.device != src:
            raise RuntimeError(f"module must have its parameters and buffers on device {src} "
                               f"(device_ids[0]) but found one of them on device: {t.device}")


class DataParallel(Module):
    """Wrap `module` to split each batch over CUDA devices (see the module docstring).

    device_ids: the CUDA devices (ints or devices; all by default), module's parameters
    must be on device_ids[0].  output_device: where outputs are gathered (device_ids[0] by
    default).  dim: the batch dim of inputs and outputs."""

    def __init__(self, module: Module, device_ids: Sequence[int | device] | None = None,
                 output_device: int | device | None = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.dim = dim
        count = _cuda_device_count()
        if count == 0:
            self.device_ids = []
            self.output_device = None
            return
        if device_ids is None:
            device_ids = list(range(count))
        if output_device is None:
            output_device = device_ids[0]
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(output_device)
        self.src_device_obj = _device("cuda", self.device_ids[0])
        _check_balance(self.device_ids)
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        _check_module_device(self.module, self.src_device_obj)
        inputs, kwargs = self.scatter(inputs, kwargs, self.device_ids)
        if not inputs and not kwargs:       # no arguments at all: one call on the first device
            inputs, kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **kwargs[0])
        replicas = self.replicate(self.module, self.device_ids[:len(inputs)])
        outputs = self.parallel_apply(replicas, inputs, kwargs)
        return self.gather(outputs, self.output_device)

    def replicate(self, module: Module, device_ids: Sequence[int | device]) -> list[Module]:
        return replicate(module, device_ids, not is_grad_enabled())

    def scatter(self, inputs: tuple[Any, ...], kwargs: dict[str, Any] | None,
                device_ids: Sequence[int | device]) -> tuple[tuple[Any, ...], tuple[dict[str, Any], ...]]:
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def parallel_apply(self, replicas: Sequence[Module], inputs: Sequence[Any],
                       kwargs: Sequence[dict[str, Any]] | None) -> list[Any]:
        return parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])

    def gather(self, outputs: Sequence[Any], output_device: int | device) -> Any:
        return gather(outputs, output_device, dim=self.dim)


def data_parallel(module: Module, inputs: Any, device_ids: Sequence[int | device] | None = None,
                  output_device: int | device | None = None, dim: int = 0,
                  module_kwargs: dict[str, Any] | None = None) -> Any:
    """DataParallel's forward as a function: module(inputs) evaluated over device_ids."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    count = _cuda_device_count()
    if count == 0:
        raise RuntimeError("device type could not be determined")
    if device_ids is None:
        device_ids = list(range(count))
    if output_device is None:
        output_device = device_ids[0]
    device_ids = [_device_index(d) for d in device_ids]
    output_device = _device_index(output_device)
    _check_module_device(module, _device("cuda", device_ids[0]))
    inputs, module_kwargs = scatter_kwargs(inputs, module_kwargs, device_ids, dim)
    if not inputs and not module_kwargs:
        inputs, module_kwargs = ((),), ({},)
    if len(device_ids) == 1:
        return module(*inputs[0], **module_kwargs[0])
    used = device_ids[:len(inputs)]
    outputs = parallel_apply(replicate(module, used), inputs, module_kwargs, used)
    return gather(outputs, output_device, dim)
